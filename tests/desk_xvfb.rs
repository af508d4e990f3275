//! The desk front end in a real X server (Xvfb) on a real (software) GPU:
//! it opens, renders the character, and closes cleanly; with no display it
//! says what to do instead of panicking; `plasticine xr` with no headset
//! opens it instead.
//!
//! `cargo xtask test` installs Xvfb and sets `PLASTICINE_REQUIRE_XVFB=1`, so
//! there the window test cannot be skipped; a developer without Xvfb sees it
//! skipped with a note.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

struct Xvfb {
    child: Child,
    display: String,
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Display numbers handed out to this binary's tests. The tests run in
/// parallel: without this, two could see the same number free, and one's
/// server would be killed under the other when it finished.
static NEXT_DISPLAY: AtomicU32 = AtomicU32::new(90);

/// Starts Xvfb on a free display number, or explains why not.
fn start_xvfb() -> Option<Xvfb> {
    let required = std::env::var_os("PLASTICINE_REQUIRE_XVFB").is_some();
    loop {
        let n = NEXT_DISPLAY.fetch_add(1, Ordering::SeqCst);
        if n >= 200 {
            break;
        }
        if Path::new(&format!("/tmp/.X11-unix/X{n}")).exists()
            || Path::new(&format!("/tmp/.X{n}-lock")).exists()
        {
            continue;
        }
        let display = format!(":{n}");
        let child = match Command::new("Xvfb")
            .args([&display, "-screen", "0", "1280x720x24", "-nolisten", "tcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                assert!(!required, "Xvfb is required here but cannot start: {e}");
                eprintln!("note: skipping the window test: Xvfb is not installed ({e})");
                return None;
            }
        };
        let mut x = Xvfb { child, display };
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(10) {
            if Path::new(&format!("/tmp/.X11-unix/X{n}")).exists() {
                return Some(x);
            }
            if let Ok(Some(_)) = x.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(x);
    }
    assert!(!required, "no Xvfb display could be started");
    None
}

fn lit_halves(path: &Path) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let (w, h) = (info.width, info.height);
    let (mut left, mut right) = (0, 0);
    // Below the overlay panel: skin pixels are bright and warm.
    for y in h / 3..h {
        for x in 0..w {
            let i = ((y * w + x) * 4) as usize;
            let (r, g, b) = (buf[i] as u32, buf[i + 1] as u32, buf[i + 2] as u32);
            if r > 150 && r > b + 20 && g > 90 {
                if x < w / 2 { left += 1 } else { right += 1 }
            }
        }
    }
    (left, right)
}

#[test]
fn a_desk_session_under_xvfb_opens_renders_and_closes_cleanly() {
    let Some(x) = start_xvfb() else { return };
    let dir = tempfile::tempdir().unwrap();
    let shot = dir.path().join("last.png");
    let timings = dir.path().join("timings.csv");
    let out = Command::new(env!("CARGO_BIN_EXE_plasticine"))
        .args([
            "desk",
            "assets/penguin.ron",
            "--stereo",
            "side-by-side",
            "--size",
            "320x180",
            "--frames",
            "12",
            "--screenshot",
            shot.to_str().unwrap(),
            "--timings",
            timings.to_str().unwrap(),
        ])
        .env("DISPLAY", &x.display)
        .env_remove("WAYLAND_DISPLAY")
        .env("XDG_STATE_HOME", dir.path())
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stdout.contains("Desk session: 12 frames"), "{stdout}");
    // The penguin is in both eyes' halves of the presented frame.
    let (left, right) = lit_halves(&shot);
    assert!(
        left > 100 && right > 100,
        "skin pixels: {left} left, {right} right"
    );
    let csv = std::fs::read_to_string(&timings).unwrap();
    assert_eq!(
        csv.lines().count(),
        13,
        "a header and one line per frame:\n{csv}"
    );
}

#[test]
fn with_no_display_the_desk_says_what_to_do() {
    let out = Command::new(env!("CARGO_BIN_EXE_plasticine"))
        .args(["desk", "assets/penguin.ron", "--frames", "1"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("no display"), "{stderr}");
    assert!(stderr.contains("plasticine render"), "{stderr}");
}

/// `plasticine xr` with no OpenXR loader (a path that is not there) says
/// why there is no headset and runs the desk on the display instead, for
/// the frames asked.
#[test]
fn with_no_headset_xr_opens_the_desk() {
    let Some(x) = start_xvfb() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_plasticine"))
        .args(["xr", "assets/penguin.ron", "--frames", "3"])
        .env(
            "PLASTICINE_OPENXR_LOADER",
            "/nonexistent/libopenxr_loader.so.1",
        )
        .env("DISPLAY", &x.display)
        .env_remove("WAYLAND_DISPLAY")
        .env("XDG_STATE_HOME", dir.path())
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(
        stdout.contains(
            "no headset: the OpenXR loader /nonexistent/libopenxr_loader.so.1 is not installed"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("falling back to the desk front end"),
        "{stdout}"
    );
    assert!(stdout.contains("Desk session: 3 frames"), "{stdout}");
}
