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

/// Starts Xvfb on a display number it picks itself (`-displayfd`: the
/// server takes the first free number with its own lock files, so tests
/// running in parallel cannot collide, and it writes the number only once
/// it listens), or explains why not. A server that dies on start is tried
/// again, and its own error output is kept for the message.
fn start_xvfb() -> Option<Xvfb> {
    use std::io::{BufRead, BufReader};
    let required = std::env::var_os("PLASTICINE_REQUIRE_XVFB").is_some();
    let mut errors = Vec::new();
    for attempt in 1..=3 {
        let log = tempfile::NamedTempFile::new().expect("a temporary file for Xvfb's output");
        let mut child = match Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1280x720x24",
                "-nolisten",
                "tcp",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log.reopen().expect("Xvfb's log"))
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                assert!(!required, "Xvfb is required here but cannot start: {e}");
                eprintln!("note: skipping the window test: Xvfb is not installed ({e})");
                return None;
            }
        };
        // The number arrives on stdout; a thread reads it so the wait can
        // time out rather than block on a server that hangs.
        let stdout = child.stdout.take().expect("piped stdout");
        let (send, recv) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = send.send(line);
        });
        let line = recv
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_default();
        let mut x = Xvfb {
            child,
            display: String::new(),
        };
        if let Ok(n) = line.trim().parse::<u32>() {
            x.display = format!(":{n}");
            return Some(x);
        }
        let _ = x.child.kill();
        let status = x.child.wait().map(|s| s.to_string()).unwrap_or_default();
        let output = std::fs::read_to_string(log.path()).unwrap_or_default();
        errors.push(format!("attempt {attempt}: {status}\n{}", output.trim()));
        std::thread::sleep(Duration::from_millis(200 * attempt));
    }
    assert!(
        !required,
        "no Xvfb display could be started:\n{}",
        errors.join("\n")
    );
    eprintln!("note: skipping the window test: {}", errors.join("\n"));
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
    // Unpainted, so that the skin is the warm skin tone the pixel count
    // looks for (the sample is painted black and white).
    let penguin = dir.path().join("penguin.ron");
    let mut c = plasticine::io::load_character(std::path::Path::new("assets/penguin.ron")).unwrap();
    for skin in &mut c.skins {
        skin.points.color.clear();
    }
    plasticine::io::save_character(&penguin, &c).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_plasticine"))
        .args([
            "desk",
            penguin.to_str().unwrap(),
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

/// `plasticine xr` with no `OpenXR` loader (a path that is not there) says
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

/// Runs `xdotool ARGS` on `display`; panics (naming the command) if it fails.
fn xdotool(display: &str, args: &[&str]) -> String {
    let out = Command::new("xdotool")
        .args(args)
        .env("DISPLAY", display)
        .output()
        .unwrap_or_else(|e| panic!("xdotool {args:?}: {e}"));
    assert!(
        out.status.success(),
        "xdotool {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The window pixel under which the mouse ray (from the calibration's
/// fixed head) meets the point `p` (tracker space) of the desk's panel.
fn pixel_of(cal: &plasticine::view::Calibration, p: glam::Vec3, size: (f32, f32)) -> (i32, i32) {
    let head = cal.fixed_head.pair().0;
    let s = &cal.screen;
    let (dh, dp) = (s.signed_distance(head), s.signed_distance(p));
    let on_glass = head + (p - head) * (dh / (dh - dp));
    let (across, up) = (s.lower_right - s.lower_left, s.upper_left - s.lower_left);
    let u = (on_glass - s.lower_left).dot(across) / across.length_squared();
    let v = (on_glass - s.lower_left).dot(up) / up.length_squared();
    (
        (u * size.0).round() as i32,
        ((1.0 - v) * size.1).round() as i32,
    )
}

/// Kills the desk when the test ends, passed or not.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `plasticine desk` on the penguin, recording to `session`, and
/// waits for its window; or says how it ended first, with what it printed.
fn open_recording_desk(
    display: &str,
    state: &Path,
    session: &Path,
) -> Result<(Kill, String), String> {
    let child = Command::new(env!("CARGO_BIN_EXE_plasticine"))
        .args(["desk", "assets/penguin.ron", "--stereo", "mono"])
        .args(["--size", "1280x720", "--frames", "5000", "--record"])
        .arg(session)
        .env("DISPLAY", display)
        .env_remove("WAYLAND_DISPLAY")
        .env("XDG_STATE_HOME", state)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    let mut child = Kill(child);
    let start = Instant::now();
    loop {
        let out = Command::new("xdotool")
            .args(["search", "--name", "Plasticine"])
            .env("DISPLAY", display)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(id) = text.split_whitespace().next() {
            return Ok((child, id.to_string()));
        }
        if let Ok(Some(status)) = child.0.try_wait() {
            let (stdout, stderr) = drain(&mut child.0);
            return Err(format!("{status}\nstdout: {stdout}\nstderr: {stderr}"));
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no window");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What an ended child printed.
fn drain(child: &mut Child) -> (String, String) {
    use std::io::Read;
    let (mut stdout, mut stderr) = (String::new(), String::new());
    if let Some(mut o) = child.stdout.take() {
        let _ = o.read_to_string(&mut stdout);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    (stdout, stderr)
}

/// The desk's tool panel pointed at with the real mouse in a real window
/// (xdotool under Xvfb): a click on the toolbar's sphere row picks the
/// sphere tool (the click creates nothing), a click in space then creates a
/// joint with a sphere, a click on the right half of the skin stretch row
/// stiffens every skin by one step. Escape ends the session, and the session
/// recorded with `--record` replays, from the start saved beside it, to
/// exactly that character.
#[test]
fn the_desk_panel_is_clicked_and_the_recorded_session_replays() {
    use plasticine::app::{PanelAnchor, desk_panel_anchor};
    use plasticine::io::load_character;
    use plasticine::shape::Primitive;
    use plasticine::tools::ToolKind;
    use plasticine::tools::{ControlPanel, PAD, Param, ROW_HEIGHT, Row, STEP};

    let Some(x) = start_xvfb() else { return };
    if Command::new("xdotool").arg("version").output().is_err() {
        assert!(
            std::env::var_os("PLASTICINE_REQUIRE_XVFB").is_none(),
            "xdotool is required here (apt-get install xdotool)"
        );
        eprintln!("note: skipping the panel test: xdotool is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("session.ron");
    let size = (1280.0, 720.0);
    // The window, then a few frames drawn. A desk that ends before its
    // window appears is started once more (once, in CI, one ended with
    // status 1 within a second and its output was lost); what it printed is
    // kept for the message if the second also ends.
    let mut early = Vec::new();
    let (mut child, window) = loop {
        match open_recording_desk(&x.display, dir.path(), &session) {
            Ok(opened) => break opened,
            Err(e) if early.is_empty() => early.push(e),
            Err(e) => panic!(
                "the desk ended twice before its window appeared:\n{}\n{e}",
                early[0]
            ),
        }
    };
    if let Some(e) = early.first() {
        eprintln!("note: the first desk ended before its window appeared: {e}");
    }
    std::thread::sleep(Duration::from_secs(3));

    let cal = plasticine::view::Calibration::default_monitor();
    let PanelAnchor::Fixed(pose) = desk_panel_anchor(&cal) else {
        panic!("the desk's panel stands still")
    };
    let rows = ControlPanel::rows();
    let row_point = |row: Row, x_rows: f32| {
        let k = rows.iter().position(|&r| r == row).unwrap();
        let y = -PAD - (k as f32 + 0.5) * ROW_HEIGHT;
        pose.transform_point3(glam::Vec3::new(x_rows * ROW_HEIGHT, y, 0.0))
    };
    let click = |(px, py): (i32, i32)| {
        xdotool(
            &x.display,
            &[
                "mousemove",
                "--window",
                &window,
                &px.to_string(),
                &py.to_string(),
            ],
        );
        std::thread::sleep(Duration::from_millis(400));
        xdotool(&x.display, &["mousedown", "1"]);
        std::thread::sleep(Duration::from_millis(500));
        xdotool(&x.display, &["mouseup", "1"]);
        std::thread::sleep(Duration::from_millis(500));
    };
    // The sphere's cell of the tool palette, then empty space up and to the left
    // of the penguin, then the + mark at the right end of the stretch
    // row's slider (the row is 30 characters = 24.4 rows wide).
    click(pixel_of(
        &cal,
        {
            let (k, f) = ControlPanel::tool_cell(ToolKind::Sphere);
            row_point(rows[k], f * plasticine::app::controls_width() / ROW_HEIGHT)
        },
        size,
    ));
    click(((0.3 * size.0) as i32, (0.3 * size.1) as i32));
    click(pixel_of(
        &cal,
        row_point(Row::Param(Param::SkinStretch), 23.7),
        size,
    ));
    // Esc, to the window (no window manager here gives it the focus).
    xdotool(&x.display, &["windowfocus", "--sync", &window]);
    xdotool(&x.display, &["key", "Escape"]);
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the desk did not end on Escape"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let (stdout, stderr) = drain(&mut child.0);
    assert!(status.success(), "stdout: {stdout}\nstderr: {stderr}");
    assert!(stdout.contains("was recorded to"), "{stdout}");

    let replayed = dir.path().join("replayed.ron");
    let out = Command::new(env!("CARGO_BIN_EXE_plasticine"))
        .arg("replay")
        .arg(&session)
        .arg("--out")
        .arg(&replayed)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = load_character(Path::new("assets/penguin.ron")).unwrap();
    let after = load_character(&replayed).unwrap();
    let text = std::fs::read_to_string(&session).unwrap();
    assert_eq!(
        after.skeleton.joints.len(),
        before.skeleton.joints.len() + 1,
        "one joint created after picking the sphere tool on the panel\n{text}\n{stdout}"
    );
    let new_muscle = after.muscles.last().unwrap();
    assert_eq!(new_muscle.joint, before.skeleton.joints.len());
    assert!(matches!(
        new_muscle.shape.primitive,
        Primitive::Sphere { .. }
    ));
    for (a, b) in before.skins.iter().zip(&after.skins) {
        for (ea, eb) in a.points.stretch.iter().zip(&b.points.stretch) {
            assert!(
                (eb[0] - ea[0] * STEP).abs() <= 1e-6 * ea[0],
                "stretch stepped up once: {} -> {}\n{text}",
                ea[0],
                eb[0]
            );
        }
    }
}
