//! A full disk and a read-only folder, as a user meets them: the real
//! binary saves a character, exports and bakes onto a small tmpfs that
//! fills up, then onto the same one mounted read-only. Each refuses with
//! one line naming the file and what to do, and the file that was there
//! before is unchanged, with no temporary file left beside it.
//!
//! Mounting needs root (CI runs as root for the Monado chroot); where the
//! mount is refused the test says so and checks nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs of `kib` KiB, unmounted when dropped.
struct Tmpfs {
    dir: PathBuf,
    _root: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(kib: u32) -> Option<Self> {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("small");
        std::fs::create_dir(&dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(&dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("skipped: cannot mount a tmpfs here (needs root and CAP_SYS_ADMIN)");
            return None;
        }
        Some(Self { dir, _root: root })
    }

    fn read_only(&self) {
        let ok = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "remount read-only");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

/// Runs the binary; returns its stderr, asserting that it failed.
fn fails(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_plasticine"))
        .args(args)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{args:?} should fail: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

fn ok(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_plasticine"))
        .args(args)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// No `.NAME.*.tmp` left in `dir` (or below it).
fn no_temporaries(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            no_temporaries(&p);
        } else {
            assert!(!s(&p).ends_with(".tmp"), "left behind: {}", p.display());
        }
    }
}

#[test]
fn a_full_disk_or_a_read_only_folder_is_named_and_loses_nothing() {
    let Some(fs) = Tmpfs::mount(320) else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    // What was there before: a small character, a short bake, its export.
    let character = fs.dir.join("character.ron");
    std::fs::copy("assets/limb_skeleton.ron", &character).unwrap();
    let bake = fs.dir.join("bake");
    let short = [
        "bake",
        "assets/penguin.ron",
        "--out",
        s(&bake),
        "--duration",
        "0.1",
    ];
    ok(&short);
    let cache = bake.join("bake.plcache");
    let glb = fs.dir.join("penguin.glb");
    ok(&[
        "export",
        "assets/penguin.ron",
        "--baked",
        s(&cache),
        "--out",
        s(&glb),
    ]);
    let before: Vec<(PathBuf, Vec<u8>)> = [&character, &cache, &glb]
        .map(|p| (p.clone(), std::fs::read(p).unwrap()))
        .into();
    let unchanged = |what: &str| {
        for (p, bytes) in &before {
            assert!(
                std::fs::read(p).unwrap() == *bytes,
                "{what}: {} changed",
                p.display()
            );
        }
        no_temporaries(&fs.dir);
    };
    // A longer bake, to export from outside the small disk.
    let elsewhere = root.path().join("bake");
    ok(&[
        "bake",
        "assets/penguin.ron",
        "--out",
        s(&elsewhere),
        "--duration",
        "1",
    ]);
    let long_cache = elsewhere.join("bake.plcache");

    // Full: the penguin (534 kB) does not fit, nor a one-second bake, nor
    // its export.
    let e = fails(&["sample", "penguin", "--out", s(&character)]);
    assert!(
        e.contains(s(&character)) && e.contains("is full") && e.contains("free some space"),
        "{e}"
    );
    unchanged("save on a full disk");
    let e = fails(&[
        "bake",
        "assets/penguin.ron",
        "--out",
        s(&bake),
        "--duration",
        "1",
        "--restart",
    ]);
    assert!(e.contains("is full"), "{e}");
    assert!(e.lines().count() <= 3, "one message, not a trace: {e}");
    let _ = std::fs::remove_file(bake.join("bake.plcache.partial"));
    let _ = std::fs::remove_file(bake.join("bake.resume"));
    unchanged("bake on a full disk");
    let e = fails(&[
        "export",
        "assets/penguin.ron",
        "--baked",
        s(&long_cache),
        "--out",
        s(&glb),
    ]);
    assert!(e.contains(s(&glb)) && e.contains("is full"), "{e}");
    unchanged("export on a full disk");

    // Read-only: even what would fit is refused, naming the folder.
    fs.read_only();
    let e = fails(&["sample", "penguin", "--out", s(&character)]);
    assert!(
        e.contains(s(&character)) && e.contains("read-only") && e.contains("write somewhere else"),
        "{e}"
    );
    let e = fails(&short);
    assert!(e.contains("read-only"), "{e}");
    let e = fails(&[
        "export",
        "assets/penguin.ron",
        "--baked",
        s(&cache),
        "--out",
        s(&glb),
    ]);
    assert!(e.contains(s(&glb)) && e.contains("read-only"), "{e}");
    unchanged("writes to a read-only folder");
}
