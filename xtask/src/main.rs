//! `cargo xtask`: project automation (tests/CI, demo). See `cargo xtask help`.

mod frontend;
mod fuzz;
mod layers;
mod monado;
mod sysdeps;

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

const USAGE: &str = "\
Usage: cargo xtask <COMMAND> [ARGS...]

Commands:
  test             Install missing system packages for the tests, check formatting
                   (cargo fmt --all -- --check, skipped without rustfmt), then run
                   the layer check (see layers), cargo clippy (warnings are errors),
                   cargo doc (warnings are errors), cargo test --workspace --all-targets
                   in the test profile, cargo test --workspace --doc, the OpenXR
                   tests against Monado (see xr-test), cargo test again in release,
                   then a short reproducible fuzz run of every loader (see fuzz).
                   This is what CI runs (.ci/run).
  xr-test          Only the OpenXR tests against Monado: build (once, cached in
                   <target>/xr-chroot, or $PLASTICINE_XR_CHROOT) a Debian trixie chroot
                   with Monado, start Monado there with simulated devices and with its
                   remote driver, and run tests/xr_monado.rs in it. Needs root and the
                   Debian mirror (apt's, or $PLASTICINE_DEBIAN_MIRROR);
                   PLASTICINE_SKIP_MONADO=1 skips it.
  demo [ARGS...]   Install missing system packages for the demo, build plasticine in
                   release and run the demo with the best front-end for this machine
                   (OpenXR → xr, display → desk, else headless). ARGS are appended to
                   the plasticine command line.
  layers           Check the library's module graph: no import cycles between files,
                   and each top-level module imports only from the layers below it
                   (the order is in xtask/src/layers.rs).
  fuzz [TARGET] [--seconds N | --runs N] [--no-sanitizer]
                   Fuzz the loaders and the command line (fuzz/: character,
                   cache, checkpoint, mesh, calibration, session,
                   character_arbitrary, input_script, cli; all when none is
                   named) for N seconds each
                   (default 60), or N inputs from a fixed seed (reproducible),
                   installing cargo-fuzz if needed. Findings go to
                   fuzz/artifacts/TARGET. --no-sanitizer builds without
                   AddressSanitizer (about 3x faster, for long runs).
  help             Show this message.
";

fn main() -> ExitCode {
    match dispatch(pico_args::Arguments::from_env()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("xtask: error: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the subcommand `args` names with the rest of `args`.
fn dispatch(mut args: pico_args::Arguments) -> Result<(), String> {
    let command = args.subcommand().map_err(|e| e.to_string())?;
    match command.as_deref() {
        None => {
            let given = rest(args)?;
            if given.iter().all(|a| a == "-h" || a == "--help") {
                print!("{USAGE}");
                Ok(())
            } else {
                Err(format!(
                    "a command comes before {}\n\n{USAGE}",
                    given.join(" ")
                ))
            }
        }
        Some("help") => {
            print!("{USAGE}");
            Ok(())
        }
        Some("test") => no_arguments("test", args).and_then(|()| test()),
        Some("xr-test") => no_arguments("xr-test", args).and_then(|()| xr_test()),
        Some("demo") => demo(&rest(args)?),
        Some("layers") => no_arguments("layers", args).and_then(|()| layers::run()),
        Some("fuzz") => fuzz::parse(args).and_then(|request| fuzz::run(&request)),
        // Internal: the insides of `xr-test`, under unshare.
        Some("monado-session") => monado::session(&rest(args)?),
        Some("chroot-install") => monado::install_in_chroot(&rest(args)?),
        Some(other) => Err(format!("unknown command `{other}`\n\n{USAGE}")),
    }
}

/// What is left of `args`, in order.
fn rest(args: pico_args::Arguments) -> Result<Vec<String>, String> {
    args.finish()
        .into_iter()
        .map(|a| {
            a.into_string()
                .map_err(|a| format!("argument {a:?} is not UTF-8"))
        })
        .collect()
}

/// Refuses arguments to a command that takes none.
fn no_arguments(command: &str, args: pico_args::Arguments) -> Result<(), String> {
    let args = rest(args)?;
    if args.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "`cargo xtask {command}` takes no arguments (got: {})",
            args.join(" ")
        ))
    }
}

/// The workspace root (the parent of this crate's directory).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in a subdirectory of the repository")
        .to_path_buf()
}

/// The cargo that launched us (so the same toolchain is used), else `cargo`.
fn cargo() -> OsString {
    env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

fn cargo_cmd(args: &[&str]) -> Command {
    let mut cmd = Command::new(cargo());
    cmd.args(args).current_dir(repo_root());
    cmd
}

fn describe(cmd: &Command) -> String {
    let mut s = Path::new(cmd.get_program())
        .file_name()
        .unwrap_or(cmd.get_program())
        .to_string_lossy()
        .into_owned();
    for arg in cmd.get_args() {
        s.push(' ');
        s.push_str(&arg.to_string_lossy());
    }
    s
}

/// Runs `cmd` with inherited stdout/stderr (streaming), failing on non-zero exit.
fn run(mut cmd: Command) -> Result<(), String> {
    let text = describe(&cmd);
    println!("xtask: running `{text}`");
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .map_err(|e| format!("could not start `{text}`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{text}` failed ({status})"))
    }
}

/// Named steps, timed; stops at the first failure and prints a timing summary.
struct Steps {
    done: Vec<(String, Duration, &'static str)>,
}

impl Steps {
    fn new() -> Self {
        Steps { done: Vec::new() }
    }

    fn step(&mut self, name: &str, f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
        println!("\nxtask: ==> {name}");
        let start = Instant::now();
        let result = f();
        let elapsed = start.elapsed();
        let outcome = if result.is_ok() { "ok" } else { "FAILED" };
        println!("xtask: <== {name}: {outcome} in {}", fmt_duration(elapsed));
        self.done.push((name.to_string(), elapsed, outcome));
        result.map_err(|e| format!("step `{name}` failed: {e}"))
    }

    fn summary(&self) {
        println!("\nxtask: step times:");
        for (name, elapsed, outcome) in &self.done {
            println!("  {:>9}  {outcome:<6}  {name}", fmt_duration(*elapsed));
        }
        let total: Duration = self.done.iter().map(|(_, d, _)| *d).sum();
        println!("  {:>9}          total", fmt_duration(total));
    }
}

fn fmt_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1}s")
    } else {
        format!("{}m{:04.1}s", (secs / 60.0).floor(), secs % 60.0)
    }
}

fn rustfmt_available() -> bool {
    cargo_succeeds(&["fmt", "--version"])
}

/// Whether `cargo ARGS` runs and succeeds (quietly).
fn cargo_succeeds(args: &[&str]) -> bool {
    cargo_cmd(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether clippy is installed, adding it with rustup where it is not (CI's
/// fresh machine has the toolchain's default profile, which may lack it).
fn clippy_available() -> bool {
    if cargo_succeeds(&["clippy", "--version"]) {
        return true;
    }
    let added = Command::new("rustup")
        .args(["component", "add", "clippy"])
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    added && cargo_succeeds(&["clippy", "--version"])
}

fn test() -> Result<(), String> {
    // No incremental-compilation caches (about 1 GB on a clean build): CI
    // builds once, and its machine's disk may be small.
    // SAFETY: xtask is single-threaded here; the variable is read by the
    // cargo processes started below.
    unsafe { env::set_var("CARGO_INCREMENTAL", "0") };
    let mut steps = Steps::new();
    let result = (|| {
        steps.step("system packages", || {
            sysdeps::ensure("test", sysdeps::TEST_PACKAGES)
        })?;
        if rustfmt_available() {
            steps.step("cargo fmt --check", || {
                run(cargo_cmd(&["fmt", "--all", "--", "--check"]))
            })?;
        } else {
            println!("\nxtask: note: rustfmt is not installed; skipping the format check");
        }
        steps.step("cargo xtask layers", layers::run)?;
        if clippy_available() {
            steps.step("cargo clippy -D warnings", || {
                run(cargo_cmd(&[
                    "clippy",
                    "--workspace",
                    "--all-targets",
                    "--",
                    "-D",
                    "warnings",
                ]))
            })?;
        } else {
            println!("\nxtask: note: clippy is not installed; skipping the lint check");
        }
        steps.step("cargo doc -D warnings", || {
            let mut cmd = cargo_cmd(&["doc", "--workspace", "--no-deps"]);
            cmd.env("RUSTDOCFLAGS", "-D warnings");
            run(cmd)
        })?;
        // Both builds: the optimised one rounds differently, so every
        // tolerance must be relative to the magnitudes involved.
        for (name, profile) in [
            ("cargo test --all-targets", &[][..]),
            ("cargo test --release --all-targets", &["--release"][..]),
        ] {
            if !profile.is_empty() {
                // The debug tests, their documentation examples and the
                // OpenXR tests (which run the debug build) are done: the
                // debug build may go where the disk is short, our packages
                // first, then the rest.
                make_room(
                    RELEASE_TEST_ROOM,
                    &[
                        &[
                            "clean",
                            "-p",
                            "plasticine",
                            "-p",
                            "plasticine-app",
                            "-p",
                            "plasticine-core",
                        ],
                        FREE_DEBUG_BUILD,
                    ],
                )?;
            }
            steps.step(name, || {
                let mut args = vec!["test", "--workspace", "--all-targets"];
                args.extend_from_slice(profile);
                let mut cmd = cargo_cmd(&args);
                // The packages above include Xvfb: the window test must run, not skip.
                cmd.env("PLASTICINE_REQUIRE_XVFB", "1");
                // The export tests' validators must run, not skip: the Khronos
                // glTF validator (npm), a USD reader (usd-core) and Blender's
                // glTF importer (bpy), installed under target/ on first use.
                cmd.env("PLASTICINE_REQUIRE_TOOLS", "1");
                cmd.env("PLASTICINE_BLENDER", "1");
                // The GPU back end's tests run on lavapipe: they must not skip.
                cmd.env("PLASTICINE_REQUIRE_GPU_TESTS", "1");
                run(cmd)
            })?;
            if profile.is_empty() {
                steps.step("cargo test --doc", || {
                    run(cargo_cmd(&["test", "--workspace", "--doc"]))
                })?;
                // Right after the debug tests, whose build the OpenXR test
                // binary is part of: run later, after the release step had
                // to free the disk, it rebuilt the three packages first.
                monado_steps(&mut steps)?;
            }
        }
        make_room(FUZZ_ROOM, &[&["clean", "--release"], FREE_DEBUG_BUILD])?;
        // Every loader fuzzed briefly and reproducibly (a fixed seed and
        // number of inputs); the long runs are `cargo xtask fuzz` by hand.
        steps.step(
            "cargo xtask fuzz --runs 20000 (character_arbitrary 800)",
            fuzz::ci,
        )
    })();
    steps.summary();
    if result.is_ok() {
        println!("xtask: all checks passed");
    }
    result
}

fn xr_test() -> Result<(), String> {
    let mut steps = Steps::new();
    let result = (|| {
        steps.step("system packages", || {
            sysdeps::ensure("xr-test", &["debootstrap"])
        })?;
        monado_steps(&mut steps)
    })();
    steps.summary();
    result
}

/// Free space the optimised test build needs (its dependencies and test
/// binaries: about 1.2 GB on a clean build), with a margin.
const RELEASE_TEST_ROOM: u64 = 2 << 30;
/// Free space the fuzz build needs (`fuzz/target`, with the address
/// sanitiser and line tables: about 2.6 GB on a clean build), with a margin.
const FUZZ_ROOM: u64 = 4 << 30;
/// The whole debug build, once every step that runs it is done
/// (`target/tmp`, where the tests install their tools, is kept).
const FREE_DEBUG_BUILD: &[&str] = &["clean", "--profile", "dev"];

/// Where the disk under the target directory has less than `needed` bytes
/// free, runs the `cargo clean` commands `frees` (outputs of steps that are
/// done) one by one until it has. CI's machine may have a small disk; a
/// developer's build outputs are only removed when the next step could not
/// otherwise be built, and then it says so.
fn make_room(needed: u64, frees: &[&[&str]]) -> Result<(), String> {
    let target = target_dir()?;
    for args in frees {
        let Some(free) = free_bytes(&target) else {
            return Ok(());
        };
        println!(
            "\nxtask: {:.1} GB free under {}",
            gb(free),
            target.display()
        );
        if free >= needed {
            return Ok(());
        }
        println!(
            "xtask: the next step needs about {:.1} GB: removing finished build outputs \
             (`cargo {}`)",
            gb(needed),
            args.join(" ")
        );
        run(cargo_cmd(args))?;
    }
    if let Some(free) = free_bytes(&target) {
        println!("xtask: {:.1} GB free under {}", gb(free), target.display());
    }
    Ok(())
}

fn gb(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 30)
}

/// Bytes free to an unprivileged user on the file system holding `path`
/// (POSIX `df -Pk`), or `None` where `df` cannot tell.
fn free_bytes(path: &Path) -> Option<u64> {
    let out = Command::new("df")
        .arg("-Pk")
        .arg(path)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let kib: u64 = text
        .lines()
        .nth(1)?
        .split_whitespace()
        .nth(3)?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The cargo target directory (`cargo metadata`).
fn target_dir() -> Result<PathBuf, String> {
    let out = cargo_cmd(&["metadata", "--format-version", "1", "--no-deps"])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not run cargo metadata: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let key = "\"target_directory\":\"";
    let start = text
        .find(key)
        .ok_or("cargo metadata did not name the target directory")?
        + key.len();
    let end = start + text[start..].find('"').ok_or("bad cargo metadata")?;
    Ok(PathBuf::from(text[start..end].replace("\\\\", "\\")))
}

/// The Monado chroot and the OpenXR tests in it (skipped with a note when
/// `PLASTICINE_SKIP_MONADO` is set).
fn monado_steps(steps: &mut Steps) -> Result<(), String> {
    if env::var_os(monado::SKIP_ENV).is_some() {
        println!(
            "\nxtask: note: {} is set: NOT running the OpenXR tests against Monado",
            monado::SKIP_ENV
        );
        return Ok(());
    }
    let target = target_dir()?;
    let chroot = env::var_os(monado::CHROOT_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("xr-chroot"));
    steps.step("Monado chroot (Debian trixie)", || {
        monado::ensure_chroot(&chroot)
    })?;
    steps.step("OpenXR tests against Monado", || {
        let out = cargo_cmd(&[
            "test",
            "--no-run",
            "--test",
            "xr_monado",
            "--message-format=json",
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not run cargo: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "building the xr_monado tests failed ({})",
                out.status
            ));
        }
        let exe = monado::test_executable(&String::from_utf8_lossy(&out.stdout), "xr_monado")
            .ok_or("cargo did not name the xr_monado test executable")?;
        let root = repo_root();
        let mut binds = vec![root.clone()];
        if !target.starts_with(&root) {
            binds.push(target.clone());
        }
        monado::run_tests(
            &chroot,
            Path::new(&exe),
            &binds,
            &target.join("xr-monado-logs"),
        )
    })
}

fn demo(extra: &[String]) -> Result<(), String> {
    let facts = frontend::detect();
    let (mut choice, why) = frontend::choose_frontend(&facts, frontend::BUILD_FRONTENDS);
    let mut runs = frontend::plasticine_runs(choice, extra);
    println!("xtask: front-end: {choice:?}: {why}");
    for args in &runs {
        println!("xtask: will run `plasticine {}`", args.join(" "));
    }
    let mut steps = Steps::new();
    let result = (|| {
        steps.step("system packages", || {
            sysdeps::ensure("demo", sysdeps::DEMO_PACKAGES)
        })?;
        steps.step("build plasticine (release)", || {
            run(cargo_cmd(&["build", "--release", "--bin", "plasticine"]))
        })?;
        let mut k = 0;
        while k < runs.len() {
            let args = runs[k].clone();
            let outcome = steps.step(&format!("plasticine {}", args[0]), || {
                let mut cmd =
                    cargo_cmd(&["run", "--quiet", "--release", "--bin", "plasticine", "--"]);
                cmd.args(&args);
                run(cmd)
            });
            // A runtime that fails, or a display that cannot be opened: the
            // next front end (the desk, then headless rendering).
            if let Err(e) = outcome {
                let Some(next) = frontend::fallback(choice, &facts, frontend::BUILD_FRONTENDS)
                else {
                    return Err(e);
                };
                println!("\nxtask: the {choice:?} front end failed ({e}); trying {next:?} instead");
                choice = next;
                runs = frontend::plasticine_runs(choice, extra);
                for args in &runs {
                    println!("xtask: will run `plasticine {}`", args.join(" "));
                }
                k = 0;
                continue;
            }
            k += 1;
        }
        if matches!(
            choice,
            frontend::Frontend::HeadlessBake | frontend::Frontend::HeadlessRender
        ) {
            let out = repo_root().join(frontend::DEMO_OUT);
            println!("\nxtask: demo output is in {}", out.display());
            println!(
                "xtask: what it shows: the penguin, its skin wrapped at 64x64, waddles for two \
                 seconds and stops dead at 2 s; its skin keeps swinging after the skeleton stops \
                 (follow-through) and slides over the muscles. {} has every 10th frame as an OBJ mesh (open frame_00060.obj and \
                 later ones in any 3D viewer); bake.plcache has all frames; summary.json what the \
                 solver did.",
                out.join("obj").display()
            );
            if choice == frontend::Frontend::HeadlessRender {
                println!(
                    "xtask: {} has every 2nd frame rendered as side-by-side stereo PNG (left eye \
                     on the left; cross or parallel-view it, or open it on a 3D display), the \
                     viewpoint orbiting the penguin at 30 degrees per second.",
                    repo_root().join(frontend::DEMO_FRAMES).display()
                );
            }
        }
        Ok(())
    })();
    steps.summary();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_is_read_from_df() {
        let free = free_bytes(&repo_root()).expect("df reports the repository's file system");
        assert!(
            free > 0,
            "a disk with a checkout on it has some room: {free}"
        );
        assert!(
            free_bytes(Path::new("/no/such/dir/at/all")).is_none(),
            "a path df cannot stat gives no figure"
        );
    }
}
