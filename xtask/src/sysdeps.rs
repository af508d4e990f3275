//! System (Debian/apt) packages that the jobs need, and installing the missing ones.
//!
//! The pure parts (parsing `dpkg-query` output, choosing how to install, building
//! the command lines) are separate functions so they can be unit tested; `ensure`
//! does the I/O.

use std::process::{Command, Stdio};

/// Debian packages `cargo xtask test` needs beyond the Rust toolchain:
/// lavapipe (Mesa's software Vulkan) and the Vulkan loader for the wgpu
/// rendering tests; Xvfb, xauth and the X11 keyboard library for the desk
/// window tests, and xdotool to move and click the mouse in one; udev headers and pkg-config for gilrs (gamepads) to build;
/// debootstrap for the Debian trixie chroot the OpenXR tests run Monado in
/// (bookworm has no Monado; see `monado.rs`); Node.js and Python's venv for
/// the export validators (gltf-validator from npm, usd-core from PyPI), and
/// the X11 libraries that Blender's Python module (bpy) links against.
pub const TEST_PACKAGES: &[&str] = &[
    "mesa-vulkan-drivers",
    "libvulkan1",
    "xvfb",
    "xauth",
    "xdotool",
    "libxkbcommon-x11-0",
    "libudev-dev",
    "pkg-config",
    "debootstrap",
    "nodejs",
    "python3-venv",
    "libx11-6",
    "libxrender1",
    "libxfixes3",
    "libxi6",
    "libxkbcommon0",
];

/// Debian packages `cargo xtask demo` needs beyond the Rust toolchain: a
/// Vulkan driver (lavapipe works everywhere; a GPU's own driver is used when
/// present), the Vulkan loader, the X11 keyboard library for the desk window,
/// and what gilrs needs to build. The XR front-end will add the OpenXR
/// loader (`libopenxr-loader1`).
pub const DEMO_PACKAGES: &[&str] = &[
    "mesa-vulkan-drivers",
    "libvulkan1",
    "libxkbcommon-x11-0",
    "libudev-dev",
    "pkg-config",
];

/// The `dpkg-query` status of an installed package.
const INSTALLED: &str = "install ok installed";

/// Whether the output of `dpkg-query -W -f='${Status}\n' NAME` says the package is
/// installed. One line per matching package (several for multi-arch packages); the
/// package counts as installed when any of them is fully installed.
pub fn is_installed_status(output: &str) -> bool {
    output.lines().any(|line| line.trim() == INSTALLED)
}

/// Whether the output of `id -u` is root's uid.
pub fn is_root_uid(output: &str) -> bool {
    output.trim() == "0"
}

/// How missing packages get installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallMethod {
    /// We are root: run apt-get directly.
    Direct,
    /// Not root, but `sudo -n` works without a password.
    Sudo,
    /// Neither: the user has to do it; we fail with the command to run.
    Manual,
}

/// Chooses how to install, given whether we are root and whether passwordless sudo works.
pub fn choose_install_method(is_root: bool, sudo_works: bool) -> InstallMethod {
    if is_root {
        InstallMethod::Direct
    } else if sudo_works {
        InstallMethod::Sudo
    } else {
        InstallMethod::Manual
    }
}

/// The command lines (program first) that install `packages` with `method`:
/// `apt-get update` once, then `apt-get install`. Empty for `Manual`.
pub fn install_commands(method: InstallMethod, packages: &[&str]) -> Vec<Vec<String>> {
    let prefix: &[&str] = match method {
        InstallMethod::Direct => &[],
        InstallMethod::Sudo => &["sudo", "-n"],
        InstallMethod::Manual => return Vec::new(),
    };
    let line = |args: &[&str]| -> Vec<String> {
        prefix.iter().chain(args).map(|s| s.to_string()).collect()
    };
    let mut install = vec!["apt-get", "install", "-y", "--no-install-recommends"];
    install.extend_from_slice(packages);
    vec![line(&["apt-get", "update"]), line(&install)]
}

/// The shell command a user should run by hand to install `packages`.
pub fn manual_command(packages: &[&str]) -> String {
    format!(
        "sudo apt-get update && sudo apt-get install -y --no-install-recommends {}",
        packages.join(" ")
    )
}

/// Makes sure the Debian packages `packages` (needed by `job`) are installed,
/// installing the missing ones when we can.
pub fn ensure(job: &str, packages: &[&str]) -> Result<(), String> {
    if packages.is_empty() {
        println!("xtask: {job}: no system packages needed beyond the Rust toolchain");
        return Ok(());
    }
    if !has_dpkg_query() {
        println!(
            "xtask: {job}: note: no dpkg-query (not a Debian-based system); not checking for \
             the packages {}; install their equivalents yourself if something fails",
            packages.join(" ")
        );
        return Ok(());
    }
    let missing = missing_packages(packages);
    if missing.is_empty() {
        println!(
            "xtask: {job}: system packages present: {}",
            packages.join(" ")
        );
        return Ok(());
    }

    let is_root = command_stdout("id", &["-u"]).is_some_and(|out| is_root_uid(&out));
    let sudo_works = !is_root && sudo_works();
    let method = choose_install_method(is_root, sudo_works);
    if method == InstallMethod::Manual {
        return Err(format!(
            "{job} needs the system packages {} which are not installed, and xtask cannot \
             install them (not root, and sudo needs a password or is missing). Run:\n    {}",
            missing.join(" "),
            manual_command(&missing)
        ));
    }

    println!(
        "xtask: {job}: installing missing system packages ({method:?}): {}",
        missing.join(" ")
    );
    for line in install_commands(method, &missing) {
        let status = Command::new(&line[0])
            .args(&line[1..])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .status()
            .map_err(|e| format!("could not run `{}`: {e}", line.join(" ")))?;
        if !status.success() {
            return Err(format!(
                "`{}` failed ({status}); install the packages by hand:\n    {}",
                line.join(" "),
                manual_command(&missing)
            ));
        }
    }

    let still_missing = missing_packages(&missing);
    if !still_missing.is_empty() {
        return Err(format!(
            "apt-get reported success but these packages are still not installed: {}",
            still_missing.join(" ")
        ));
    }
    Ok(())
}

fn has_dpkg_query() -> bool {
    Command::new("dpkg-query")
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The packages among `packages` that dpkg does not report as installed
/// (`dpkg-query` exits non-zero for packages it has never heard of).
fn missing_packages<'a>(packages: &[&'a str]) -> Vec<&'a str> {
    packages
        .iter()
        .copied()
        .filter(|name| {
            !command_stdout("dpkg-query", &["-W", "-f=${Status}\\n", name])
                .is_some_and(|out| is_installed_status(&out))
        })
        .collect()
}

fn sudo_works() -> bool {
    Command::new("sudo")
        .args(["-n", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Stdout of a command that succeeded; `None` if it could not run or failed.
fn command_stdout(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installed_status_is_recognised() {
        assert!(is_installed_status("install ok installed"));
        assert!(is_installed_status("install ok installed\n"));
        // Multi-arch package installed for one architecture only.
        assert!(is_installed_status(
            "unknown ok not-installed\ninstall ok installed\n"
        ));
    }

    #[test]
    fn other_statuses_are_not_installed() {
        assert!(!is_installed_status(""));
        assert!(!is_installed_status("unknown ok not-installed"));
        assert!(!is_installed_status("deinstall ok config-files"));
        assert!(!is_installed_status("install ok unpacked"));
        assert!(!is_installed_status("install ok half-configured"));
        assert!(!is_installed_status("hold ok half-installed"));
    }

    #[test]
    fn root_uid_is_recognised() {
        assert!(is_root_uid("0\n"));
        assert!(!is_root_uid("1000\n"));
        assert!(!is_root_uid("10\n"));
        assert!(!is_root_uid(""));
    }

    #[test]
    fn install_method_follows_root_then_sudo() {
        assert_eq!(choose_install_method(true, false), InstallMethod::Direct);
        assert_eq!(choose_install_method(true, true), InstallMethod::Direct);
        assert_eq!(choose_install_method(false, true), InstallMethod::Sudo);
        assert_eq!(choose_install_method(false, false), InstallMethod::Manual);
    }

    #[test]
    fn install_commands_update_once_then_install() {
        let pkgs = ["libvulkan1", "mesa-vulkan-drivers"];
        assert_eq!(
            install_commands(InstallMethod::Direct, &pkgs),
            vec![
                vec!["apt-get", "update"],
                vec![
                    "apt-get",
                    "install",
                    "-y",
                    "--no-install-recommends",
                    "libvulkan1",
                    "mesa-vulkan-drivers"
                ],
            ]
        );
        assert_eq!(
            install_commands(InstallMethod::Sudo, &pkgs),
            vec![
                vec!["sudo", "-n", "apt-get", "update"],
                vec![
                    "sudo",
                    "-n",
                    "apt-get",
                    "install",
                    "-y",
                    "--no-install-recommends",
                    "libvulkan1",
                    "mesa-vulkan-drivers"
                ],
            ]
        );
        assert!(install_commands(InstallMethod::Manual, &pkgs).is_empty());
    }

    #[test]
    fn manual_command_names_every_package() {
        assert_eq!(
            manual_command(&["libvulkan1", "mesa-vulkan-drivers"]),
            "sudo apt-get update && sudo apt-get install -y --no-install-recommends \
             libvulkan1 mesa-vulkan-drivers"
        );
    }
}
