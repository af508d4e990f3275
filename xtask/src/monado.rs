//! The OpenXR tests against Monado, which Debian bookworm does not package:
//! a Debian trixie chroot with Monado's service and OpenXR runtime, cached
//! under the target directory, and a session in it that starts two Monado
//! services and runs the `xr_monado` test binary (built on the host; it runs
//! in the chroot's newer glibc).
//!
//! Everything that mounts runs in its own mount namespace (`unshare
//! --mount`), so the bind mounts go away with the processes, even when a
//! step fails or is killed: nothing is ever left mounted inside the chroot
//! (where `cargo clean` would otherwise walk into the host's /dev). The test
//! session also has its own network namespace (`--net`, only loopback), so
//! Monado's remote driver listens on port 4242 there and nowhere else.
//!
//! The pure parts (the mirror from apt's sources, the chroot's stamp, the
//! test binary from cargo's JSON) are functions with unit tests.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use xshell::{Shell, cmd};

/// The Debian release that packages Monado.
pub const SUITE: &str = "trixie";

/// What the chroot gets beyond `debootstrap --variant=minbase`: Monado's
/// service and OpenXR runtime, the OpenXR loader, a Vulkan driver for the
/// null compositor (lavapipe), and `ip` to bring up loopback in the test
/// session's network namespace.
pub const CHROOT_PACKAGES: &[&str] = &[
    "monado-service",
    "libopenxr1-monado",
    "libopenxr-loader1",
    "mesa-vulkan-drivers",
    "libvulkan1",
    "iproute2",
];

/// The mirror used when apt's sources name none.
pub const DEFAULT_MIRROR: &str = "http://deb.debian.org/debian";

/// Environment variables: where to keep the chroot instead of
/// `<target>/xr-chroot`, and a way to skip the Monado tests on purpose.
pub const CHROOT_ENV: &str = "PLASTICINE_XR_CHROOT";
pub const SKIP_ENV: &str = "PLASTICINE_SKIP_MONADO";
/// The Debian mirror to build the chroot from, instead of apt's.
pub const MIRROR_ENV: &str = "PLASTICINE_DEBIAN_MIRROR";

/// The file in the chroot that says it is complete, and for what.
const STAMP: &str = ".plasticine-xr-chroot";

/// The Monado services' runtime directories inside the chroot.
const SIM_DIR: &str = "/tmp/xr-simulated";
const REMOTE_DIR: &str = "/tmp/xr-remote";

/// PATH inside the chroot.
const CHROOT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// How long the test binary may run in the chroot.
const TEST_TIMEOUT: Duration = Duration::from_secs(600);
/// How long a service may take to open its socket.
const SERVICE_TIMEOUT: Duration = Duration::from_secs(60);

/// The stamp's content: a chroot built for other packages is rebuilt.
pub fn stamp_text() -> String {
    format!("suite {SUITE}\npackages {}\n", CHROOT_PACKAGES.join(" "))
}

/// The Debian mirror apt uses, from the text of its sources files (one-line
/// `deb URL SUITE ...` lines and deb822 `URIs:` fields): the first URI that
/// is not a security or ports archive.
pub fn mirror_from_sources(texts: &[String]) -> Option<String> {
    let mut uris = Vec::new();
    for text in texts {
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('#') {
                continue;
            }
            if let Some(rest) = line.strip_prefix("URIs:") {
                uris.extend(rest.split_whitespace().map(str::to_string));
            } else if let Some(rest) = line.strip_prefix("deb ") {
                // deb [options] URL suite components
                let mut words = rest.split_whitespace().peekable();
                if words.peek().is_some_and(|w| w.starts_with('[')) {
                    for w in words.by_ref() {
                        if w.ends_with(']') {
                            break;
                        }
                    }
                }
                if let Some(url) = words.next() {
                    uris.push(url.to_string());
                }
            }
        }
    }
    uris.into_iter()
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
        .find(|u| {
            let u = u.trim_end_matches('/');
            u.ends_with("/debian") && !u.contains("security")
        })
}

/// `$PLASTICINE_DEBIAN_MIRROR`, else apt's Debian mirror on this machine,
/// else [`DEFAULT_MIRROR`].
pub fn debian_mirror() -> String {
    if let Some(m) = std::env::var_os(MIRROR_ENV).filter(|m| !m.is_empty()) {
        return m.to_string_lossy().into_owned();
    }
    let mut texts = Vec::new();
    if let Ok(t) = fs::read_to_string("/etc/apt/sources.list") {
        texts.push(t);
    }
    if let Ok(dir) = fs::read_dir("/etc/apt/sources.list.d") {
        let mut paths: Vec<_> = dir
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "list" || e == "sources"))
            .collect();
        paths.sort();
        texts.extend(paths.iter().filter_map(|p| fs::read_to_string(p).ok()));
    }
    mirror_from_sources(&texts).unwrap_or_else(|| DEFAULT_MIRROR.to_string())
}

/// The path of the `xr_monado` test executable in cargo's
/// `--message-format=json` output.
pub fn test_executable(json_lines: &str, test_name: &str) -> Option<String> {
    let target = format!("\"name\":\"{test_name}\"");
    json_lines
        .lines()
        .filter(|l| l.contains("\"reason\":\"compiler-artifact\"") && l.contains(&target))
        .find_map(|l| {
            let start = l.find("\"executable\":\"")? + "\"executable\":\"".len();
            let end = start + l[start..].find('"')?;
            Some(l[start..end].replace("\\\\", "\\"))
        })
}

/// The mount points at or under `dir`, from `/proc/self/mountinfo` text.
pub fn mounts_under(mountinfo: &str, dir: &Path) -> Vec<String> {
    let dir = dir.to_string_lossy();
    let dir = dir.trim_end_matches('/');
    mountinfo
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .filter(|m| *m == dir || m.starts_with(&format!("{dir}/")))
        .map(str::to_string)
        .collect()
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn need_root() -> Result<(), String> {
    if is_root() {
        Ok(())
    } else {
        Err(format!(
            "the Monado tests build a Debian {SUITE} chroot and run in it (debootstrap, chroot, \
             mount namespaces), which needs root: run `cargo xtask test` as root, or set \
             {SKIP_ENV}=1 to skip them"
        ))
    }
}

/// Runs `cmd` to completion, streaming its output; the error names it.
fn run_quiet(mut cmd: Command, what: &str) -> Result<(), String> {
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("could not start {what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Makes sure `dir` holds a complete chroot for [`stamp_text`], building
/// it (a few minutes, about 1 GB) when it does not.
pub fn ensure_chroot(dir: &Path) -> Result<(), String> {
    let stamp = dir.join(STAMP);
    if fs::read_to_string(&stamp).is_ok_and(|s| s == stamp_text()) {
        println!(
            "xtask: reusing the Debian {SUITE} chroot with Monado in {}",
            dir.display()
        );
        return Ok(());
    }
    need_root()?;
    if dir.exists() {
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mounted = mounts_under(&mountinfo, dir);
        if !mounted.is_empty() {
            return Err(format!(
                "{} holds an unfinished chroot with file systems still mounted in it ({}); \
                 unmount them (umount -R) before it can be rebuilt",
                dir.display(),
                mounted.join(", ")
            ));
        }
        println!(
            "xtask: removing the unfinished or outdated chroot {}",
            dir.display()
        );
        fs::remove_dir_all(dir).map_err(|e| format!("removing {}: {e}", dir.display()))?;
    }
    if Command::new("debootstrap")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        return Err("debootstrap is not installed (apt-get install debootstrap)".into());
    }
    let mirror = debian_mirror();
    println!(
        "xtask: building a Debian {SUITE} chroot for Monado in {} from {mirror} (once; a few minutes)",
        dir.display()
    );
    fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let start = Instant::now();
    let mut cmd = Command::new("debootstrap");
    cmd.args(["--variant=minbase", SUITE])
        .arg(dir)
        .arg(&mirror)
        .stdout(Stdio::null());
    run_quiet(cmd, "debootstrap").map_err(|e| {
        format!(
            "could not build the Debian {SUITE} chroot for the Monado tests: {e}. Is the \
             Debian mirror {mirror} reachable from here? (Details are in {}/debootstrap/debootstrap.log \
             if it got that far.) Set {SKIP_ENV}=1 to skip the Monado tests.",
            dir.display()
        )
    })?;
    println!(
        "xtask: debootstrap took {:.0} s; installing {}",
        start.elapsed().as_secs_f64(),
        CHROOT_PACKAGES.join(" ")
    );
    // Name resolution inside, as on the host.
    if let Ok(resolv) = fs::read("/etc/resolv.conf") {
        let _ = fs::remove_file(dir.join("etc/resolv.conf"));
        fs::write(dir.join("etc/resolv.conf"), resolv)
            .map_err(|e| format!("writing the chroot's resolv.conf: {e}"))?;
    }
    // The mounts live in a mount namespace of their own: they go with it.
    let me = std::env::current_exe().map_err(|e| format!("cannot find xtask itself: {e}"))?;
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--propagation", "private", "--"])
        .arg(me)
        .arg("chroot-install")
        .arg(dir)
        .stdout(Stdio::null());
    run_quiet(cmd, "installing Monado in the chroot").map_err(|e| {
        format!(
            "could not install Monado in the {SUITE} chroot: {e}. Is the Debian mirror \
             {mirror} reachable? Set {SKIP_ENV}=1 to skip the Monado tests."
        )
    })?;
    fs::write(&stamp, stamp_text()).map_err(|e| format!("writing {}: {e}", stamp.display()))?;
    println!(
        "xtask: the {SUITE} chroot is ready after {:.0} s",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `xtask chroot-install CHROOT`, in a mount namespace of its own (see
/// [`ensure_chroot`]): mounts /proc, /dev and /sys into the new chroot and
/// installs [`CHROOT_PACKAGES`] in it with apt.
pub fn install_in_chroot(args: &[String]) -> Result<(), String> {
    let [chroot] = args else {
        return Err("usage: xtask chroot-install CHROOT".into());
    };
    let chroot = Path::new(chroot);
    mount_system(chroot)?;
    let sh = Shell::new().map_err(|e| e.to_string())?;
    let path = format!("PATH={CHROOT_PATH}");
    let apt = |what: &str, cmd: xshell::Cmd| {
        cmd.quiet()
            .run()
            .map_err(|e| format!("{what} in the chroot: {e}"))
    };
    let env = "/usr/bin/env";
    apt(
        "apt-get update",
        cmd!(
            sh,
            "chroot {chroot} {env} -i {path} DEBIAN_FRONTEND=noninteractive apt-get -q update"
        ),
    )?;
    apt(
        "apt-get install",
        cmd!(
            sh,
            "chroot {chroot} {env} -i {path} DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends {CHROOT_PACKAGES...}"
        ),
    )?;
    apt("apt-get clean", cmd!(sh, "chroot {chroot} apt-get clean"))
}

/// Mounts the host's /proc, /dev and /sys at the same places in `chroot`.
fn mount_system(chroot: &Path) -> Result<(), String> {
    for (how, what) in [("--bind", "/proc"), ("--rbind", "/dev"), ("--bind", "/sys")] {
        mount(
            &[how, what, &chroot.join(&what[1..]).to_string_lossy()],
            what,
        )?;
    }
    Ok(())
}

/// Runs the test binary in the chroot with the two Monado services, in new
/// mount and network namespaces: re-runs this xtask as `monado-session`
/// under `unshare`.
pub fn run_tests(
    chroot: &Path,
    test_binary: &Path,
    binds: &[PathBuf],
    logs: &Path,
) -> Result<(), String> {
    need_root()?;
    let me = std::env::current_exe().map_err(|e| format!("cannot find xtask itself: {e}"))?;
    let mut cmd = Command::new("unshare");
    cmd.args(["--mount", "--net", "--propagation", "private", "--"])
        .arg(me)
        .arg("monado-session")
        .arg(chroot)
        .arg(test_binary)
        .arg(logs);
    for b in binds {
        cmd.arg(b);
    }
    run_quiet(cmd, "the Monado test session")
}

/// A process killed (and reaped) when dropped.
struct Service {
    name: &'static str,
    child: Child,
    log: PathBuf,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Service {
    fn log_tail(&self) -> String {
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.len().saturating_sub(40);
        format!(
            "--- last lines of {} ({}) ---\n{}",
            self.name,
            self.log.display(),
            lines[from..].join("\n")
        )
    }
}

/// `program` run in `chroot` with only `env` (and PATH, HOME, LANG) set,
/// in the directory `dir` (the chroot's root without one).
fn chroot_command(
    chroot: &Path,
    dir: Option<&str>,
    env: &[(&str, &str)],
    program: &[&str],
) -> Command {
    let mut cmd = Command::new("chroot");
    cmd.arg(chroot).arg("/usr/bin/env").arg("-i");
    if let Some(dir) = dir {
        cmd.arg("-C").arg(dir);
    }
    cmd.arg(format!("PATH={CHROOT_PATH}"));
    cmd.arg("HOME=/root").arg("LANG=C.UTF-8");
    for (k, v) in env {
        cmd.arg(format!("{k}={v}"));
    }
    cmd.args(program);
    cmd
}

fn start_service(
    chroot: &Path,
    name: &'static str,
    runtime_dir: &str,
    config: &[(&str, &str)],
    logs: &Path,
) -> Result<Service, String> {
    let inside = chroot.join(runtime_dir.trim_start_matches('/'));
    fs::create_dir_all(&inside).map_err(|e| format!("creating {}: {e}", inside.display()))?;
    let log = logs.join(format!("{name}.log"));
    let file = fs::File::create(&log).map_err(|e| format!("creating {}: {e}", log.display()))?;
    let mut env = vec![
        ("XDG_RUNTIME_DIR", runtime_dir),
        ("XRT_COMPOSITOR_NULL", "1"),
        ("XRT_NO_STDIN", "1"),
    ];
    env.extend_from_slice(config);
    let child = chroot_command(chroot, None, &env, &["monado-service"])
        .stdin(Stdio::null())
        .stdout(file.try_clone().map_err(|e| e.to_string())?)
        .stderr(file)
        .spawn()
        .map_err(|e| format!("could not start monado-service ({name}): {e}"))?;
    let mut service = Service { name, child, log };
    let socket = inside.join("monado_comp_ipc");
    let start = Instant::now();
    while !socket.exists() {
        if let Ok(Some(status)) = service.child.try_wait() {
            return Err(format!(
                "monado-service ({name}) exited ({status}) before it opened {}\n{}",
                socket.display(),
                service.log_tail()
            ));
        }
        if start.elapsed() > SERVICE_TIMEOUT {
            return Err(format!(
                "monado-service ({name}) did not open {} within {} s\n{}",
                socket.display(),
                SERVICE_TIMEOUT.as_secs(),
                service.log_tail()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "xtask: monado-service ({name}) is up after {:.1} s",
        start.elapsed().as_secs_f64()
    );
    Ok(service)
}

fn mount(args: &[&str], what: &str) -> Result<(), String> {
    let sh = Shell::new().map_err(|e| e.to_string())?;
    cmd!(sh, "mount {args...}")
        .quiet()
        .run()
        .map_err(|e| format!("mounting {what}: {e}"))
}

/// `xtask monado-session CHROOT TEST_BINARY LOGS [BIND...]`: runs inside
/// private mount and network namespaces (see [`run_tests`]). Mounts /proc,
/// /dev, /sys, a fresh /tmp and the BIND directories (at their own paths)
/// into the chroot, brings up loopback, starts Monado with simulated devices
/// and Monado with the remote driver, and runs the test binary with
/// `PLASTICINE_REQUIRE_MONADO=1`.
pub fn session(args: &[String]) -> Result<(), String> {
    let [chroot, test_binary, logs, binds @ ..] = args else {
        return Err("usage: xtask monado-session CHROOT TEST_BINARY LOGS [BIND...]".into());
    };
    let chroot = Path::new(chroot);
    let logs = Path::new(logs);
    fs::create_dir_all(logs).map_err(|e| format!("creating {}: {e}", logs.display()))?;
    let at = |p: &str| chroot.join(p.trim_start_matches('/'));
    let s = |p: &Path| p.to_string_lossy().into_owned();
    mount_system(chroot)?;
    mount(&["-t", "tmpfs", "tmpfs", &s(&at("/tmp"))], "/tmp")?;
    for b in binds {
        let inside = at(b);
        fs::create_dir_all(&inside).map_err(|e| format!("creating {}: {e}", inside.display()))?;
        mount(&["--bind", b, &s(&inside)], b)?;
    }
    let mut lo = chroot_command(chroot, None, &[], &["ip", "link", "set", "lo", "up"]);
    lo.stdout(Stdio::null());
    run_quiet(lo, "bringing up loopback in the test session")?;

    let simulated = start_service(
        chroot,
        "monado-simulated",
        SIM_DIR,
        &[
            ("SIMULATED_ENABLE", "1"),
            ("SIMULATED_LEFT", "simple"),
            ("SIMULATED_RIGHT", "simple"),
        ],
        logs,
    )?;
    let remote = start_service(
        chroot,
        "monado-remote",
        REMOTE_DIR,
        &[("P_OVERRIDE_ACTIVE_CONFIG", "remote")],
        logs,
    )?;

    let test_log = logs.join("xr_monado.log");
    let cwd = binds.first().cloned().unwrap_or_else(|| "/".into());
    println!("xtask: running {test_binary} in the {SUITE} chroot (Monado: simulated + remote)");
    // `env -C` starts the test binary in the repository (its tests read
    // files relative to it) without a shell to quote for.
    let mut test = chroot_command(
        chroot,
        Some(&cwd),
        &[
            ("XDG_RUNTIME_DIR", SIM_DIR),
            ("PLASTICINE_REQUIRE_MONADO", "1"),
            ("PLASTICINE_MONADO_REMOTE_DIR", REMOTE_DIR),
            ("RUST_BACKTRACE", "1"),
            ("TMPDIR", "/tmp"),
        ],
        &[test_binary, "--test-threads=1", "--show-output"],
    )
    .stdin(Stdio::null())
    .spawn()
    .map_err(|e| format!("could not start the test binary in the chroot: {e}"))?;
    let start = Instant::now();
    let status = loop {
        if let Some(status) = test.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if start.elapsed() > TEST_TIMEOUT {
            let _ = test.kill();
            let _ = test.wait();
            return Err(format!(
                "the Monado tests ran past {} s and were stopped\n{}\n{}",
                TEST_TIMEOUT.as_secs(),
                simulated.log_tail(),
                remote.log_tail()
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = writeln!(
        fs::File::create(&test_log).map_err(|e| e.to_string())?,
        "exit: {status}"
    );
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "the Monado tests failed ({status})\n{}\n{}",
            simulated.log_tail(),
            remote.log_tail()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirror_comes_from_deb822_or_one_line_sources() {
        let deb822 = "Types: deb\n# http://snapshot.debian.org/archive/debian/20250520T000000Z\n\
                      URIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\n\n\
                      Types: deb\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\n";
        assert_eq!(
            mirror_from_sources(&[deb822.into()]).as_deref(),
            Some("http://deb.debian.org/debian")
        );
        let one_line = "deb http://security.debian.org/debian-security bookworm-security main\n\
                        deb [arch=amd64 signed-by=/x.gpg] http://mirror.example.org/debian/ bookworm main\n";
        assert_eq!(
            mirror_from_sources(&[one_line.into()]).as_deref(),
            Some("http://mirror.example.org/debian/")
        );
        let other = "deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n";
        assert_eq!(mirror_from_sources(&[other.into()]), None);
    }

    #[test]
    fn the_stamp_names_the_suite_and_every_package() {
        let s = stamp_text();
        assert!(s.contains(SUITE));
        for p in CHROOT_PACKAGES {
            assert!(s.contains(p), "{p}");
        }
    }

    #[test]
    fn the_test_executable_is_found_in_cargo_json() {
        let json = r#"{"reason":"compiler-artifact","package_id":"x","target":{"kind":["lib"],"name":"plasticine"},"executable":null}
{"reason":"compiler-artifact","package_id":"x","target":{"kind":["test"],"name":"xr_monado","src_path":"/r/tests/xr_monado.rs"},"executable":"/t/debug/deps/xr_monado-0123"}
{"reason":"build-finished","success":true}"#;
        assert_eq!(
            test_executable(json, "xr_monado").as_deref(),
            Some("/t/debug/deps/xr_monado-0123")
        );
        assert_eq!(test_executable(json, "cli"), None);
    }

    #[test]
    fn mounts_under_a_directory_are_found() {
        let info = "22 1 0:21 / /proc rw - proc proc rw\n\
                    90 30 0:5 / /work/target/xr-chroot/dev rw - devtmpfs udev rw\n\
                    91 30 0:5 / /work/target/xr-chroot-other rw - devtmpfs udev rw\n";
        assert_eq!(
            mounts_under(info, Path::new("/work/target/xr-chroot")),
            vec!["/work/target/xr-chroot/dev".to_string()]
        );
        assert!(mounts_under(info, Path::new("/work/elsewhere")).is_empty());
    }
}
