//! Killed anywhere: the real binary is killed with SIGKILL (power loss, the
//! out-of-memory killer, a crashed farm machine) at seeded random moments
//! while it saves a character, resamples one, bakes (a checkpoint after
//! every frame), exports and renders. After every kill the file it was
//! writing is the one that was there before or the new one, whole (never a
//! torn file), and a killed bake resumes to a cache byte-identical to one
//! that was never killed.
//!
//! Every write goes through `io::AtomicFile`: a temporary file in the
//! target's directory, written, fsynced, renamed over the target, and the
//! directory fsynced. A kill before the rename leaves the old file; after
//! it, the new one. (fsync matters for power loss, which a kill does not
//! simulate: what the kill checks is that no reader ever sees a torn file.)
//!
//! `PLASTICINE_KILLS` sets the kills per operation (default 25; the figures
//! in the notes are from 200).

use rand::Rng;
use rand_pcg::Pcg64Mcg;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn kills() -> usize {
    std::env::var("PLASTICINE_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(25)
}

fn command(args: &[String]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_plasticine"));
    cmd.args(args)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("WAYLAND_DISPLAY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    cmd
}

/// Runs to the end; panics with its stderr if it fails. Returns the wall time.
fn run(args: &[String]) -> Duration {
    let start = Instant::now();
    let out = command(args).output().expect("runs");
    assert!(
        out.status.success(),
        "plasticine {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    start.elapsed()
}

/// Starts the command and kills it (SIGKILL) after `delay`, unless it ends
/// first. True if it was killed.
fn kill_after(args: &[String], delay: Duration) -> bool {
    let mut child = command(args).stderr(Stdio::null()).spawn().expect("starts");
    let deadline = Instant::now() + delay;
    while Instant::now() < deadline {
        if child.try_wait().expect("waits").is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let killed = child.try_wait().expect("waits").is_none();
    let _ = child.kill();
    let _ = child.wait();
    killed
}

/// Kill moments for an operation that takes `whole` uninterrupted: half
/// spread over all of it, half over its last fifth and a little after,
/// where the writing happens.
fn delays(seed: u64, whole: Duration) -> Vec<Duration> {
    let mut rng = Pcg64Mcg::new(0x5eed_0000 + u128::from(seed));
    let w = whole.as_secs_f64();
    (0..kills())
        .map(|k| {
            let s = if k % 2 == 0 {
                rng.random_range(0.0..w)
            } else {
                rng.random_range(0.8 * w..1.1 * w)
            };
            Duration::from_secs_f64(s)
        })
        .collect()
}

fn s(x: impl AsRef<std::ffi::OsStr>) -> String {
    x.as_ref().to_string_lossy().into_owned()
}

/// What the kills left: the old file kept, the new one whole, a torn file
/// (must never happen), and leftover temporaries.
#[derive(Debug, Default)]
struct Tally {
    killed: usize,
    old: usize,
    new: usize,
    torn: Vec<String>,
    temporaries: usize,
}

/// Kills `args` (which writes `target`, old content `old`, whole new
/// content `new`) at each moment, restoring the old file in between.
fn kill_a_write(
    seed: u64,
    args: &[String],
    target: &Path,
    old: &[u8],
    new: &[u8],
    whole: Duration,
) -> Tally {
    assert_ne!(old, new, "the old and the new file must differ");
    let dir = target.parent().unwrap();
    let mut t = Tally::default();
    for (k, delay) in delays(seed, whole).into_iter().enumerate() {
        std::fs::write(target, old).unwrap();
        t.killed += usize::from(kill_after(args, delay));
        let now = std::fs::read(target).unwrap_or_default();
        if now == old {
            t.old += 1;
        } else if now == new {
            t.new += 1;
        } else {
            t.torn.push(format!(
                "kill {k} at {delay:?}: {} bytes, neither the old ({}) nor the new ({})",
                now.len(),
                old.len(),
                new.len()
            ));
        }
        // A temporary the kill left behind (the autosave cleanup removes
        // them); counted, then cleared so the next kill starts alike.
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.file_name().unwrap().to_string_lossy().ends_with(".tmp") {
                t.temporaries += 1;
                std::fs::remove_file(p).unwrap();
            }
        }
    }
    println!("{}: {t:?}", args[0]);
    assert!(t.torn.is_empty(), "torn files: {:#?}", t.torn);
    t
}

#[test]
fn a_killed_save_leaves_the_old_character_or_the_new_one() {
    let root = tempfile::tempdir().unwrap();
    let target = root.path().join("out").join("character.ron");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let args: Vec<String> = ["sample", "penguin", "--out", &s(&target)]
        .map(String::from)
        .into();
    let whole = run(&args);
    let new = std::fs::read(&target).unwrap();
    run(&["sample", "wombat", "--out", &s(&target)].map(String::from));
    let old = std::fs::read(&target).unwrap();
    let t = kill_a_write(1, &args, &target, &old, &new, whole);
    assert!(t.killed > 0, "{t:?}");
}

#[test]
fn a_killed_resample_leaves_the_old_character_or_the_new_one() {
    let root = tempfile::tempdir().unwrap();
    let target = root.path().join("out").join("penguin32.ron");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let args: Vec<String> = [
        "resample",
        "assets/penguin.ron",
        "--resolution",
        "32x32",
        "--out",
        &s(&target),
    ]
    .map(String::from)
    .into();
    let whole = run(&args);
    let new = std::fs::read(&target).unwrap();
    let old = std::fs::read("assets/penguin.ron").unwrap();
    let t = kill_a_write(2, &args, &target, &old, &new, whole);
    assert!(t.killed > 0, "{t:?}");
}

/// A short bake of the penguin (16 frames), a checkpoint after every frame.
fn bake_args(out: &Path, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "bake",
        "assets/penguin.ron",
        "--out",
        &s(out),
        "--duration",
        "0.5",
        "--checkpoint-every",
        "0",
    ]
    .map(String::from)
    .into();
    a.extend(extra.iter().map(|x| x.to_string()));
    a
}

#[test]
fn a_killed_bake_resumes_to_the_bytes_of_one_never_killed() {
    let root = tempfile::tempdir().unwrap();
    let reference = root.path().join("reference");
    let whole = run(&bake_args(&reference, &[]));
    let want = std::fs::read(reference.join("bake.plcache")).unwrap();
    let dir = root.path().join("killed");
    let (mut killed, mut resumed, mut restarted) = (0, 0, 0);
    for (k, delay) in delays(3, whole).into_iter().enumerate() {
        let _ = std::fs::remove_dir_all(&dir);
        killed += usize::from(kill_after(&bake_args(&dir, &[]), delay));
        let cache = dir.join("bake.plcache");
        if dir.join("bake.resume").exists() {
            // (Killed between the cache's rename and the checkpoint's
            // removal, the bake had finished: --resume says so.)
            let out = command(&bake_args(&dir, &["--resume"])).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() || stderr.contains("had already finished"),
                "kill {k} at {delay:?}: --resume failed: {stderr}"
            );
            resumed += 1;
        } else if !cache.exists() {
            // Killed before its first checkpoint: nothing to continue, and
            // a plain bake starts over (a partial cache without a
            // checkpoint is not a cancelled bake).
            run(&bake_args(&dir, &[]));
            restarted += 1;
        }
        let got = std::fs::read(&cache).unwrap();
        assert!(
            got == want,
            "kill {k} at {delay:?}: the finished cache differs from the one never killed"
        );
        assert!(!dir.join("bake.resume").exists());
    }
    println!("bake: {killed} killed, {resumed} resumed, {restarted} started over");
    assert!(
        killed > 0 && resumed > 0,
        "{killed} killed, {resumed} resumed"
    );
}

#[test]
fn a_killed_export_leaves_the_old_file_or_the_new_one() {
    let root = tempfile::tempdir().unwrap();
    let bake = root.path().join("bake");
    run(&bake_args(&bake, &[]));
    let cache = s(bake.join("bake.plcache"));
    let target = root.path().join("out").join("penguin.glb");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let args: Vec<String> = [
        "export",
        "assets/penguin.ron",
        "--baked",
        &cache,
        "--out",
        &s(&target),
    ]
    .map(String::from)
    .into();
    let whole = run(&args);
    let new = std::fs::read(&target).unwrap();
    let mut every: Vec<String> = args.clone();
    every.extend(["--every".to_string(), "2".to_string()]);
    run(&every);
    let old = std::fs::read(&target).unwrap();
    let t = kill_a_write(4, &args, &target, &old, &new, whole);
    assert!(t.killed > 0, "{t:?}");
}

#[test]
fn a_killed_render_leaves_each_image_old_or_new() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("frames");
    let args = |size: &str| -> Vec<String> {
        [
            "render",
            "assets/penguin.ron",
            "--out",
            &s(&out),
            "--size",
            size,
            "--frames",
            "1",
        ]
        .map(String::from)
        .into()
    };
    let whole = run(&args("64x48"));
    let image = |dir: &Path| -> PathBuf {
        let pngs: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "png"))
            .collect();
        assert_eq!(pngs.len(), 1, "{pngs:?}");
        pngs[0].clone()
    };
    let target = image(&out);
    let new = std::fs::read(&target).unwrap();
    run(&args("48x64"));
    assert_eq!(image(&out), target);
    let old = std::fs::read(&target).unwrap();
    let t = kill_a_write(5, &args("64x48"), &target, &old, &new, whole);
    assert!(t.killed > 0, "{t:?}");
}
