//! The `OpenXR` tracker and the headset front end (`plasticine xr`) against a
//! real runtime: Monado (the service, with the null compositor) and its
//! simulated devices, and its remote driver for scripted controllers; and
//! what happens with no runtime at all.
//!
//! `cargo xtask test` runs this binary a second time inside a Debian trixie
//! chroot where it has started two Monado services (see `xtask/src/monado.rs`):
//!
//! - one with `SIMULATED_ENABLE=1 SIMULATED_LEFT=simple SIMULATED_RIGHT=simple`
//!   for the default `XDG_RUNTIME_DIR` (a wobbling simulated headset and two
//!   static "simple" controllers);
//! - one with `P_OVERRIDE_ACTIVE_CONFIG=remote` for the runtime directory in
//!   `PLASTICINE_MONADO_REMOTE_DIR` (its controllers move where a TCP client
//!   on port 4242 says).
//!
//! There it sets `PLASTICINE_REQUIRE_MONADO=1`, so nothing may be skipped.
//! Anywhere else (the first, ordinary run, or a developer's machine) the
//! tests that need Monado skip with a note.

use glam::Vec3;
use plasticine::app::DeskTracker;
use plasticine::app::Tracker;
use plasticine::io::load_character;
use plasticine::kinematics::PosedBody;
use plasticine::view::{Calibration, Screen};
use plasticine::xr::{SessionState, XrError, XrTracker, XrTrackerOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_plasticine");

fn required() -> bool {
    std::env::var_os("PLASTICINE_REQUIRE_MONADO").is_some()
}

fn skip(what: &str, why: &str) {
    assert!(
        !required(),
        "Monado is required here (PLASTICINE_REQUIRE_MONADO is set) but {what}: {why}"
    );
    eprintln!(
        "note: skipping {what}: {why}. `cargo xtask test` runs it in a Debian trixie chroot with Monado."
    );
}

/// The tracker on Monado's simulated devices, or `None` (skipped) where
/// there is no such runtime.
fn open_simulated(test: &str) -> Option<XrTracker> {
    let options = XrTrackerOptions {
        start_timeout: Duration::from_secs(10),
        ..XrTrackerOptions::default()
    };
    match XrTracker::open(&options) {
        Ok(t) if t.runtime().system.contains("Simulated") => Some(t),
        Ok(t) => {
            skip(
                test,
                &format!(
                    "the OpenXR system is not Monado's simulated one ({})",
                    t.runtime()
                ),
            );
            None
        }
        Err(e) => {
            skip(test, &e.to_string());
            None
        }
    }
}

/// Monado's simulated headset: the headless session starts within the
/// bounded wait and reaches FOCUSED (Monado takes a headless session from
/// READY straight through SYNCHRONIZED and VISIBLE to FOCUSED once it is
/// begun: there are no frames to wait for); the tracking space is STAGE; the
/// head is tracked, at standing height, and wobbles (the simulated headset
/// moves by itself), while every pose stays finite and unit.
#[test]
fn the_simulated_headset_gives_a_running_session_and_a_moving_head() {
    let Some(mut t) = open_simulated("the simulated headset test") else {
        return;
    };
    assert!(t.is_running());
    assert!(t.lost().is_none());
    let focused = t
        .wait_for(Duration::from_secs(5), |t| {
            t.session_state() == SessionState::FOCUSED
        })
        .unwrap();
    assert!(focused, "state {:?}", t.session_state());
    assert_eq!(t.reference_space(), openxr::ReferenceSpaceType::STAGE);
    assert!(t.runtime().position_tracking && t.runtime().orientation_tracking);

    let start = Instant::now();
    let mut heads = Vec::new();
    while start.elapsed() < Duration::from_millis(1000) {
        let s = t.sample();
        assert!(t.is_head_tracked(), "{}", t.status_line());
        assert!(t.tracked().head);
        let (p, q) = s.head;
        assert!(p.is_finite() && q.is_finite(), "{p} {q}");
        assert!((q.length() - 1.0).abs() < 1e-4, "{q}");
        assert!((1.4..1.8).contains(&p.y), "standing height: {p}");
        assert!(
            p.x.abs() < 0.3 && p.z.abs() < 0.3,
            "near the stage origin: {p}"
        );
        heads.push(s.head);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(heads.len() >= 20, "{} samples in 1 s", heads.len());
    let moved = heads
        .iter()
        .map(|(p, _)| p.distance(heads[0].0))
        .fold(0.0f32, f32::max);
    let turned = heads
        .iter()
        .map(|(_, q)| q.angle_between(heads[0].1))
        .fold(0.0f32, f32::max);
    assert!(
        moved > 0.005,
        "the simulated head wobbles: it moved {moved} m in 1 s"
    );
    assert!(turned > 0.001, "and turns: {turned} rad");
    assert!(t.lost().is_none(), "{:?}", t.lost());
    // For information (no test asserts on time): one sample's cost, events,
    // action sync, three locates and the action states, over Monado's IPC.
    let n = 200;
    let start = Instant::now();
    for _ in 0..n {
        t.sample();
    }
    eprintln!(
        "one XrTracker sample against Monado: {:.3} ms",
        start.elapsed().as_secs_f64() * 1e3 / n as f64
    );
}

/// Monado's "simple" simulated controllers: the runtime picks the Khronos
/// simple controller profile for both hands; both aim poses are tracked,
/// static, at (∓0.2, 1.3, −0.5), and nothing is pressed.
#[test]
fn the_simple_controllers_are_tracked_still_and_press_nothing() {
    let Some(mut t) = open_simulated("the simple controllers test") else {
        return;
    };
    let chosen = t
        .wait_for(Duration::from_secs(5), |t| {
            t.interaction_profiles().iter().all(Option::is_some)
        })
        .unwrap();
    assert!(chosen, "{:?}", t.interaction_profiles());
    assert_eq!(
        t.interaction_profiles(),
        [Some("/interaction_profiles/khr/simple_controller"); 2]
    );
    let first = t.sample();
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(20));
        let s = t.sample();
        let parts = t.tracked();
        assert!(parts.left && parts.right, "{}", t.status_line());
        for (hand, x) in [(&s.input.left, -0.2), (&s.input.right, 0.2)] {
            assert!(
                hand.position().distance(Vec3::new(x, 1.3, -0.5)) < 1e-4,
                "{:?}",
                hand.pose
            );
            assert_eq!(hand.trigger, 0.0);
            assert_eq!(hand.buttons, 0);
        }
        assert_eq!(s.input.right.pose, first.input.right.pose, "static");
        assert!(s.input.time > first.input.time);
    }
    let inputs = t.hand_inputs();
    assert!(inputs[0].active && inputs[1].active, "{inputs:?}");
}

/// The desk's tracker with `OpenXR` as its source: the head is the tracked
/// one (not the calibration's fixed head) and the right hand is the right
/// controller (not the mouse ray).
#[test]
fn the_desk_takes_the_head_and_the_right_hand_from_openxr() {
    let Some(xr) = open_simulated("the desk source test") else {
        return;
    };
    let cal = Calibration::default_monitor();
    let mut desk = DeskTracker::new(cal, (800, 450)).with_source(Box::new(xr));
    let s = desk.sample();
    assert_ne!(s.head, cal.fixed_head.pair());
    assert!((1.4..1.8).contains(&s.head.0.y), "{:?}", s.head);
    assert!(s.input.right.position().distance(Vec3::new(0.2, 1.3, -0.5)) < 1e-4);
    assert_eq!(
        desk.sources_line(),
        "head tracked, right hand tracked controller"
    );
}

/// Runs `plasticine` with `env`, no display, and a scratch state directory.
fn plasticine(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let state = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("XDG_STATE_HOME", state.path())
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// With no runtime (the loader pointed at a manifest that is not there)
/// or no loader, `plasticine tracker` and `desk --tracker openxr` fail
/// saying what to install, and `desk --tracker auto` falls back to the
/// fixed head and says so (then stops for want of a display, here).
#[test]
fn with_no_runtime_openxr_fails_clearly_and_auto_falls_back() {
    let no_runtime = [("XR_RUNTIME_JSON", "/nonexistent/openxr_runtime.json")];
    // Where the loader is installed (the chroot), the runtime is what is
    // missing; elsewhere it may be the loader itself.
    let loader_here = Path::new("/usr/lib/x86_64-linux-gnu/libopenxr_loader.so.1").exists();
    let expected = if loader_here || required() {
        "no active OpenXR runtime"
    } else {
        "apt-get install libopenxr-loader1"
    };
    let (ok, _, stderr) = plasticine(&["tracker", "--seconds", "0"], &no_runtime);
    assert!(!ok);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains(expected), "{stderr}");

    let (ok, stdout, stderr) = plasticine(&["desk", "--tracker", "openxr"], &no_runtime);
    assert!(!ok);
    assert!(stderr.contains(expected), "{stderr}");
    assert!(!stdout.contains("tracker: none"), "{stdout}");

    let (ok, stdout, stderr) = plasticine(&["desk", "--tracker", "auto"], &no_runtime);
    assert!(!ok, "no display here");
    assert!(
        stdout.contains("tracker: none; the head is fixed at the calibrated position"),
        "{stdout}"
    );
    assert!(stdout.contains(expected), "the reason: {stdout}");
    assert!(stderr.contains("no display"), "{stderr}");

    let (ok, _, stderr) = plasticine(
        &["tracker"],
        &[(
            "PLASTICINE_OPENXR_LOADER",
            "/nonexistent/libopenxr_loader.so.1",
        )],
    );
    assert!(!ok);
    assert!(
        stderr.contains("/nonexistent/libopenxr_loader.so.1 is not installed")
            && stderr.contains("apt-get install libopenxr-loader1"),
        "{stderr}"
    );
}

/// Opening the tracker with a loader that is not there is an error, not a
/// panic, in-process too.
#[test]
fn a_missing_loader_is_an_error_in_process() {
    let e = XrTracker::open(&XrTrackerOptions {
        loader: Some("/nonexistent/libopenxr_loader.so.1".into()),
        ..XrTrackerOptions::default()
    })
    .unwrap_err();
    assert!(matches!(e, XrError::NoLoader { .. }), "{e}");
    assert!(e.is_unavailable());
}

/// Kills its process when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lines of a child's stdout, as they come.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits (bounded) for a line containing `needle`; returns the lines seen.
fn wait_line(rx: &mpsc::Receiver<String>, needle: &str, timeout: Duration) -> Vec<String> {
    let end = Instant::now() + timeout;
    let mut seen = Vec::new();
    while let Some(left) = end.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => {
                let hit = line.contains(needle);
                seen.push(line);
                if hit {
                    return seen;
                }
            }
            Err(_) => break,
        }
    }
    panic!(
        "no line with '{needle}' within {timeout:?}; saw:\n{}",
        seen.join("\n")
    );
}

/// The runtime going away: a private Monado service is killed under a
/// running `plasticine tracker`, which then stops with the loss (it does not
/// hang, and does not panic).
#[test]
fn losing_the_runtime_ends_the_tracker_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let Some(service) = start_private_monado(dir.path()) else {
        return skip("the runtime loss test", "monado-service is not installed");
    };
    let mut service = Guard(service);
    let mut child = Guard(
        Command::new(BIN)
            .args(["tracker", "--seconds", "60", "--rate", "5"])
            .env("XDG_RUNTIME_DIR", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let rx = lines_of(&mut child.0);
    wait_line(&rx, " s  head (", Duration::from_secs(20));
    service.0.kill().unwrap();
    service.0.wait().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "plasticine tracker did not notice the runtime going away"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success());
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("the OpenXR session was lost"), "{stderr}");
}

/// Monado's remote driver (`P_OVERRIDE_ACTIVE_CONFIG=remote`): a TCP client
/// on port 4242 sends `struct r_remote_data` (Monado 25's
/// `src/xrt/drivers/remote/r_interface.h`) to place the head and the
/// controllers (Valve Index controllers to the application) and press their
/// buttons. On connecting it first receives the driver's reset state and
/// its latest state.
struct Remote {
    stream: TcpStream,
    state: [u8; REMOTE_SIZE],
}

/// `sizeof(struct r_remote_data)`: header 8, head 128, two controllers of 120.
const REMOTE_SIZE: usize = 376;
const HEAD: usize = 8;
/// `r_head_data::center` after two views of 48 bytes: orientation (xyzw), then position.
const HEAD_CENTER: usize = HEAD + 96;
const LEFT: usize = 136;
const RIGHT: usize = 256;
/// Within a controller: `pose` (orientation xyzw at +0, position at +16).
const POSITION: usize = 16;
const TRIGGER_VALUE: usize = 72;
const SQUEEZE_VALUE: usize = 76;
const ACTIVE: usize = 105;
const TRIGGER_CLICK: usize = 112;

impl Remote {
    fn connect(timeout: Duration) -> Remote {
        let start = Instant::now();
        let mut stream = loop {
            match TcpStream::connect(("127.0.0.1", 4242)) {
                Ok(s) => break s,
                Err(e) => {
                    assert!(
                        start.elapsed() < timeout,
                        "Monado's remote driver is not listening on 127.0.0.1:4242: {e}"
                    );
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut reset = [0u8; REMOTE_SIZE];
        let mut latest = [0u8; REMOTE_SIZE];
        stream.read_exact(&mut reset).unwrap();
        stream.read_exact(&mut latest).unwrap();
        // The layout check: the driver's reset state as r_create_devices sets it.
        let f = |b: &[u8], at: usize| f32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        assert_eq!(f(&reset, HEAD_CENTER + 16 + 4), 1.6, "head centre y");
        for (base, x) in [(LEFT, -0.2), (RIGHT, 0.2)] {
            let p = [0, 4, 8].map(|k| f(&reset, base + POSITION + k));
            assert_eq!(p, [x, 1.3, -0.5], "controller position at {base}");
            assert_eq!(f(&reset, base + 12), 1.0, "orientation w at {base}");
            assert_eq!(reset[base + ACTIVE], 1, "active at {base}");
        }
        stream.set_nodelay(true).unwrap();
        Remote {
            stream,
            state: latest,
        }
    }

    fn put(&mut self, at: usize, values: &[f32]) {
        for (k, v) in values.iter().enumerate() {
            self.state[at + 4 * k..at + 4 * k + 4].copy_from_slice(&v.to_le_bytes());
        }
    }

    fn head(&mut self, p: Vec3) {
        self.put(HEAD_CENTER, &[0.0, 0.0, 0.0, 1.0]);
        self.put(HEAD_CENTER + 16, &p.to_array());
    }

    fn right(&mut self, p: Vec3, trigger: bool) {
        self.put(RIGHT, &[0.0, 0.0, 0.0, 1.0]);
        self.put(RIGHT + POSITION, &p.to_array());
        self.put(RIGHT + TRIGGER_VALUE, &[if trigger { 1.0 } else { 0.0 }]);
        self.state[RIGHT + TRIGGER_CLICK] = trigger as u8;
        self.state[RIGHT + ACTIVE] = 1;
    }

    /// The right controller out of tracking (the driver reports its pose
    /// invalid), wherever it is and whatever it presses.
    fn right_lost(&mut self, p: Vec3, trigger: bool) {
        self.right(p, trigger);
        self.state[RIGHT + ACTIVE] = 0;
    }

    fn left(&mut self, p: Vec3, squeeze: bool) {
        self.put(LEFT, &[0.0, 0.0, 0.0, 1.0]);
        self.put(LEFT + POSITION, &p.to_array());
        self.put(LEFT + SQUEEZE_VALUE, &[if squeeze { 1.0 } else { 0.0 }]);
        self.state[LEFT + ACTIVE] = 1;
    }

    fn send(&mut self) {
        self.stream.write_all(&self.state).unwrap();
    }
}

/// Where the scripted controllers start: the right one's tip, and the left.
const TIP: Vec3 = Vec3::new(0.35, 1.3, -0.45);
const LEFT_REST: Vec3 = Vec3::new(-0.25, 1.2, -0.4);

/// The remote driver's runtime directory and a connection to it, with the
/// head at standing height and the controllers at [`TIP`] and
/// [`LEFT_REST`], nothing pressed; `None` (the test skipped) without one.
fn remote_at_rest(test: &str) -> Option<(std::ffi::OsString, Remote)> {
    let Some(remote_dir) = std::env::var_os("PLASTICINE_MONADO_REMOTE_DIR") else {
        skip(
            test,
            "PLASTICINE_MONADO_REMOTE_DIR (a Monado service with the remote driver) is not set",
        );
        return None;
    };
    let mut remote = Remote::connect(Duration::from_secs(30));
    remote.head(Vec3::new(0.0, 1.6, 0.0));
    remote.right(TIP, false);
    remote.left(LEFT_REST, false);
    remote.send();
    Some((remote_dir, remote))
}

/// `plasticine xr` on the penguin against the remote driver's Monado
/// (`--placement tracker`: world = STAGE space), saving to `saved` when it
/// ends, up to its right controller's profile line.
struct RemoteSession {
    child: Guard,
    rx: mpsc::Receiver<String>,
    transcript: Vec<String>,
    _state: tempfile::TempDir,
}

impl RemoteSession {
    fn start(
        remote_dir: &std::ffi::OsStr,
        args: &[&str],
        saved: &Path,
        recorded: Option<&Path>,
    ) -> Self {
        let state = tempfile::tempdir().unwrap();
        let mut command = Command::new(BIN);
        command
            .args(["xr", "assets/penguin.ron", "--placement", "tracker"])
            .args(args)
            .args([
                "--resolution-scale",
                "0.25",
                "--fallback",
                "none",
                "--save-on-exit",
            ])
            .arg(saved);
        if let Some(recorded) = recorded {
            command.arg("--record").arg(recorded);
        }
        let mut child = Guard(
            command
                .env("XDG_RUNTIME_DIR", remote_dir)
                .env("XDG_STATE_HOME", state.path())
                .env_remove("DISPLAY")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let rx = lines_of(&mut child.0);
        let transcript = wait_line(
            &rx,
            "right hand's controller is now /interaction_profiles/valve/index_controller",
            Duration::from_secs(60),
        );
        settle();
        Self {
            child,
            rx,
            transcript,
            _state: state,
        }
    }

    /// Waits (bounded) for a line containing `needle`.
    fn wait_line(&mut self, needle: &str) {
        let lines = wait_line(&self.rx, needle, Duration::from_secs(20));
        self.transcript.extend(lines);
    }

    /// Ctrl+C, as a user presses it; waits for a clean exit; the whole
    /// transcript.
    fn stop(mut self) -> String {
        // kill(2): the test runs in a minimal chroot that need not have a
        // kill program.
        #[allow(unsafe_code, reason = "libc::kill is the C library's")]
        // SAFETY: sending SIGINT to our own child process.
        let sent = unsafe { libc::kill(self.child.0.id() as libc::pid_t, libc::SIGINT) };
        assert_eq!(sent, 0, "SIGINT sent to the headset session");
        self.wait_line("Headset session:");
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.0.try_wait().unwrap() {
                break s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "plasticine xr did not exit after Ctrl+C"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        while let Ok(line) = self.rx.recv_timeout(Duration::from_millis(200)) {
            self.transcript.push(line);
        }
        let transcript = self.transcript.join("\n");
        assert!(status.success(), "{transcript}");
        assert!(
            transcript.contains("the session ended as asked"),
            "{transcript}"
        );
        transcript
    }
}

/// Time for the runtime and the session to take in what the remote sent.
fn settle() {
    std::thread::sleep(Duration::from_millis(500));
}

/// `plasticine calibrate --live` with the remote driver's right controller
/// touching the four corners of a screen tilted back by 10° in the STAGE
/// space and pulling the trigger at each: it prompts for each corner,
/// records each, fits that screen, puts the fixed head where the tracked
/// head was, and writes a valid calibration.
#[test]
fn calibrate_live_measures_the_corners_with_a_scripted_controller() {
    let Some(remote_dir) = std::env::var_os("PLASTICINE_MONADO_REMOTE_DIR") else {
        return skip(
            "the live calibration test",
            "PLASTICINE_MONADO_REMOTE_DIR (a Monado service with the remote driver) is not set",
        );
    };
    let mut remote = Remote::connect(Duration::from_secs(30));
    let tilt = 10f32.to_radians();
    let truth = Screen::centred(
        Vec3::new(0.05, 1.1, -0.3),
        0.5,
        0.3,
        Vec3::new(0.0, tilt.sin(), tilt.cos()),
        Vec3::Y,
    );
    let head = Vec3::new(0.05, 1.25, 0.35);
    remote.head(head);
    remote.right(Vec3::new(0.3, 1.0, 0.0), false);
    remote.send();

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("live.ron");
    let mut child = Guard(
        Command::new(BIN)
            .args(["calibrate", "--live", "--timeout", "60", "--out"])
            .arg(&out)
            .env("XDG_RUNTIME_DIR", &remote_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let rx = lines_of(&mut child.0);
    let mut transcript = wait_line(&rx, "touch the lower-left corner", Duration::from_secs(30));
    for (corner, name) in
        truth
            .corners()
            .into_iter()
            .zip(["lower-left", "lower-right", "upper-right", "upper-left"])
    {
        remote.right(corner, false);
        remote.send();
        std::thread::sleep(Duration::from_millis(150));
        remote.right(corner, true);
        remote.send();
        transcript.extend(wait_line(
            &rx,
            &format!("  {name}: ("),
            Duration::from_secs(10),
        ));
        remote.right(corner, false);
        remote.send();
        std::thread::sleep(Duration::from_millis(100));
    }
    transcript.extend(wait_line(&rx, "Wrote", Duration::from_secs(20)));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "calibrate did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let transcript = transcript.join("\n");
    assert!(status.success(), "{transcript}");
    assert!(transcript.contains("Measuring with OpenXR"), "{transcript}");
    assert!(
        transcript.contains("Fitted the screen to 1 round of 4 corners: 500.0 x 300.0 mm"),
        "{transcript}"
    );

    let cal = Calibration::load(&out).unwrap();
    for (got, want) in cal.screen.corners().iter().zip(truth.corners()) {
        assert!(got.distance(want) < 1e-4, "{got} vs {want}\n{transcript}");
    }
    assert!(
        cal.fixed_head.position.distance(head) < 1e-4,
        "the fixed head is the tracked one: {}",
        cal.fixed_head.position
    );
    // The 24" monitor's world, carried over: the screen's centre is where
    // the default monitor's centre is in the world.
    let default = Calibration::default_monitor();
    let world =
        |c: &Calibration, p: Vec3| c.tracker_to_world.world_from_tracker().transform_point3(p);
    assert!(world(&cal, truth.centre()).distance(world(&default, default.screen.centre())) < 1e-3);
    assert!((cal.fixed_head.orientation.length() - 1.0).abs() < 1e-4);
}

/// `plasticine` with `env`, no display, a scratch state directory, and a
/// bound on its running time (it is killed past `timeout`).
fn plasticine_within(
    args: &[&str],
    env: &[(&str, &str)],
    timeout: Duration,
) -> (bool, String, String) {
    let state = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("XDG_STATE_HOME", state.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = Guard(cmd.spawn().unwrap());
    let mut stdout = child.0.stdout.take().unwrap();
    let mut stderr = child.0.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > timeout {
            let _ = child.0.kill();
            let _ = child.0.wait();
            panic!(
                "plasticine {} ran past {timeout:?} (a hang)\nstdout:\n{}\nstderr:\n{}",
                args.join(" "),
                out.join().unwrap(),
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status.success(), out.join().unwrap(), err.join().unwrap())
}

/// Decoded RGBA pixels of a PNG.
fn read_png(path: &Path) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgba);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

/// The penguin's lit skin in an eye image: how many pixels have its warm,
/// bright colour (the sky is dark blue-grey, the floor grey), the spread of
/// their brightness (shading: lit on one side, darker on the other), and
/// their mean x.
fn lit_skin(path: &Path) -> (usize, u32, f32, (u32, u32)) {
    let (w, h, px) = read_png(path);
    let (mut n, mut lo, mut hi, mut sx) = (0usize, u32::MAX, 0u32, 0f64);
    for (k, p) in px.chunks_exact(4).enumerate() {
        let (r, g, b) = (p[0] as u32, p[1] as u32, p[2] as u32);
        if r > 150 && r > b + 30 {
            n += 1;
            let lum = r + g + b;
            lo = lo.min(lum);
            hi = hi.max(lum);
            sx += (k as u32 % w) as f64;
        }
    }
    let mean_x = if n > 0 {
        (sx / n as f64) as f32
    } else {
        f32::NAN
    };
    (n, hi.saturating_sub(lo), mean_x, (w, h))
}

/// The headset front end on Monado's simulated headset with the null
/// compositor: `plasticine xr` with the 64×64 penguin creates its Vulkan
/// device through the runtime, reaches FOCUSED, renders 60 frames into the
/// swapchain, reads the last swapchain image back, and ends when it asks
/// to (xrRequestExitSession: STOPPING → IDLE → EXITING), saving the
/// character. Both eyes show the (unpainted) penguin lit (a warm skin with shading),
/// each from its own eye (the penguin, at arm's length, sits further right
/// in the left eye's image). The frame timings are printed.
#[test]
fn the_headset_renders_the_penguin_lit_in_both_eyes_and_ends_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let penguin = dir.path().join("penguin64.ron");
    let (ok, _, stderr) = plasticine(
        &[
            "resample",
            "assets/penguin.ron",
            "--resolution",
            "64x64",
            "--out",
            penguin.to_str().unwrap(),
        ],
        &[],
    );
    assert!(ok, "{stderr}");
    // Unpainted, so that the skin is the warm skin tone the pixel count
    // looks for (the sample is painted black and white).
    let mut c = load_character(&penguin).unwrap();
    for skin in &mut c.skins {
        skin.points.color.clear();
    }
    plasticine::io::save_character(&penguin, &c).unwrap();
    let eyes = dir.path().join("eyes");
    let saved = dir.path().join("saved.ron");
    let (ok, stdout, stderr) = plasticine_within(
        &[
            "xr",
            penguin.to_str().unwrap(),
            "--frames",
            "60",
            "--screenshot-eyes",
            eyes.to_str().unwrap(),
            "--resolution-scale",
            "0.5",
            "--save-on-exit",
            saved.to_str().unwrap(),
            "--fallback",
            "none",
        ],
        &[],
        Duration::from_secs(120),
    );
    if stdout.contains("no headset:") {
        return skip("the headset test", stdout.trim());
    }
    assert!(ok, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stdout.contains("system 'Monado: Simulated HMD'"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Headset session: 60 frames rendered"),
        "{stdout}"
    );
    assert!(stdout.contains("the session ended as asked"), "{stdout}");
    let states = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("session states: "))
        .unwrap_or_else(|| panic!("no session states line:\n{stdout}"));
    assert!(
        states.starts_with("IDLE → READY → SYNCHRONIZED → VISIBLE → FOCUSED"),
        "{states}"
    );
    assert!(states.ends_with("STOPPING → IDLE → EXITING"), "{states}");
    assert!(
        stdout.contains(&format!("the character was saved to {}", saved.display())),
        "{stdout}"
    );
    let c = load_character(&saved).unwrap();
    assert!(c.skins.iter().all(|s| (s.m, s.n) == (64, 64)));

    let (left, right) = (eyes.join("left.png"), eyes.join("right.png"));
    let (nl, spread_l, xl, size) = lit_skin(&left);
    let (nr, spread_r, xr, size_r) = lit_skin(&right);
    assert_eq!(size, size_r);
    let area = (size.0 * size.1) as usize;
    for (eye, n, spread) in [("left", nl, spread_l), ("right", nr, spread_r)] {
        assert!(
            n * 100 > area,
            "the {eye} eye shows the penguin's skin: {n} of {area} pixels"
        );
        assert!(
            spread > 60,
            "the {eye} eye's skin is shaded (lit): brightness spread {spread}"
        );
    }
    assert!(
        xl > xr + 1.0,
        "each eye sees from its own place: the near penguin is further right in the left eye \
         ({xl:.1} vs {xr:.1} px)"
    );
    // For information (no test asserts on time): what the headset loop
    // costs on the main thread, and how old the poses are at submission.
    for line in stdout.lines().filter(|l| {
        l.contains("excluding xrWaitFrame")
            || l.contains("CPU time per frame")
            || l.contains("xrLocateViews to xrEndFrame")
            || l.contains("renderer wall time")
            || l.contains("frame interval")
            || l.contains("per eye")
    }) {
        println!("64x64 penguin on Monado: {}", line.trim());
    }
}

/// The runtime going away under a running headset session, and coming
/// back: a private Monado service is killed while `plasticine xr
/// --reconnect 0` renders; the session ends with the loss said plainly, the character saved as it
/// was, the process exiting on its own (no hang, no panic). Started again,
/// the runtime takes a new session on the saved file, which it leaves as it
/// found it.
#[test]
fn losing_the_runtime_under_the_headset_saves_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let Some(service) = start_private_monado(dir.path()) else {
        return skip("the headset loss test", "monado-service is not installed");
    };
    let mut service = Guard(service);
    let saved = dir.path().join("saved.ron");
    let state = tempfile::tempdir().unwrap();
    // Its stdout is read on to the end, as the receiver lives.
    let (mut child, _rx, _) = penguin_in_headset(
        dir.path(),
        state.path(),
        &saved,
        &["--reconnect", "0"],
        Stdio::piped(),
    );
    service.0.kill().unwrap();
    service.0.wait().unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "plasticine xr did not notice the runtime going away"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success());
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("the OpenXR session was lost"), "{stderr}");
    assert!(
        stderr.contains(&format!("the character was saved to {}", saved.display())),
        "{stderr}"
    );
    let original = load_character(Path::new("assets/penguin.ron")).unwrap();
    let c = load_character(&saved).unwrap();
    assert_eq!(c.name, original.name);
    assert_eq!(c.skeleton, original.skeleton, "the character as it was");
    assert_eq!(c.muscles, original.muscles, "the character as it was");

    // The runtime restarted: the saved work opens in a new session and
    // comes out of it unchanged.
    let _service = Guard(start_private_monado(dir.path()).expect("monado-service starts again"));
    let again = dir.path().join("again.ron");
    let (ok, stdout, stderr) = plasticine_within(
        &[
            "xr",
            saved.to_str().unwrap(),
            "--frames",
            "30",
            "--resolution-scale",
            "0.25",
            "--fallback",
            "none",
            "--save-on-exit",
            again.to_str().unwrap(),
        ],
        &[("XDG_RUNTIME_DIR", dir.path().to_str().unwrap())],
        Duration::from_secs(120),
    );
    assert!(ok, "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stdout.contains("Headset session: 30 frames rendered"),
        "{stdout}"
    );
    let reopened = load_character(&again).unwrap();
    assert_eq!(reopened.skeleton, c.skeleton);
    assert_eq!(reopened.muscles, c.muscles);
}

/// The runtime restarted under a running headset session (`--reconnect`,
/// on by default): `plasticine xr` saves the work at once, waits, opens a
/// new session when the service is back and goes on in the same process:
/// the frames of both sessions count towards `--frames`, both sessions'
/// states are reported, and the character comes out as it went in.
#[test]
fn a_restarted_runtime_gets_a_new_session_in_the_same_process() {
    let dir = tempfile::tempdir().unwrap();
    let Some(service) = start_private_monado(dir.path()) else {
        return skip("the reconnect test", "monado-service is not installed");
    };
    let mut service = Guard(service);
    let saved = dir.path().join("saved.ron");
    let state = tempfile::tempdir().unwrap();
    let (mut child, rx, mut transcript) = penguin_in_headset(
        dir.path(),
        state.path(),
        &saved,
        &["--frames", "60"],
        Stdio::null(),
    );
    service.0.kill().unwrap();
    service.0.wait().unwrap();
    transcript.extend(wait_line(
        &rx,
        "waiting up to 30 s for the runtime to come back",
        Duration::from_secs(20),
    ));
    // Saved before waiting: the runtime might not have come back.
    let waiting = transcript.last().unwrap().clone();
    assert!(
        waiting.contains(&format!("the character was saved to {}", saved.display())),
        "{waiting}"
    );
    let _service = Guard(start_private_monado(dir.path()).expect("monado-service starts again"));
    transcript.extend(wait_line(
        &rx,
        "the OpenXR runtime is back",
        Duration::from_secs(30),
    ));
    transcript.extend(wait_line(&rx, "Headset session:", Duration::from_secs(60)));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no exit");
        std::thread::sleep(Duration::from_millis(50));
    };
    while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
        transcript.push(line);
    }
    let transcript = transcript.join("\n");
    assert!(status.success(), "{transcript}");
    assert!(
        transcript.contains("Headset session: 60 frames rendered"),
        "{transcript}"
    );
    assert_eq!(
        transcript.matches("OpenXR headset: ").count(),
        2,
        "two sessions: {transcript}"
    );
    assert!(transcript.contains("came back 1 time(s)"), "{transcript}");
    let states = transcript
        .lines()
        .find(|l| l.contains("session states:"))
        .unwrap();
    assert_eq!(states.matches("FOCUSED").count(), 2, "{states}");
    let original = load_character(Path::new("assets/penguin.ron")).unwrap();
    let c = load_character(&saved).unwrap();
    assert_eq!(c.skeleton, original.skeleton, "the character as it was");
    assert_eq!(c.muscles, original.muscles, "the character as it was");
}

/// `plasticine xr` on the penguin against the runtime in `runtime_dir`
/// (autosaves in `state_dir`, saved to `saved` at the end, `extra`
/// arguments), once it has placed the world and rendered a little: the
/// process, its stdout's lines and those seen so far.
fn penguin_in_headset(
    runtime_dir: &Path,
    state_dir: &Path,
    saved: &Path,
    extra: &[&str],
    stderr: Stdio,
) -> (Guard, mpsc::Receiver<String>, Vec<String>) {
    let mut child = Guard(
        Command::new(BIN)
            .args(["xr", "assets/penguin.ron", "--resolution-scale", "0.25"])
            .args(["--fallback", "none"])
            .args(extra)
            .arg("--save-on-exit")
            .arg(saved)
            .env("XDG_RUNTIME_DIR", runtime_dir)
            .env("XDG_STATE_HOME", state_dir)
            .env_remove("DISPLAY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap(),
    );
    let rx = lines_of(&mut child.0);
    let seen = wait_line(&rx, "recentred", Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(300));
    (child, rx, seen)
}

/// A Monado service of its own (simulated devices, null compositor) in
/// `runtime_dir`, up when its socket is; `None` where it is not installed.
fn start_private_monado(runtime_dir: &Path) -> Option<Child> {
    // A service that was killed leaves its socket: wait for the new one.
    let socket = runtime_dir.join("monado_comp_ipc");
    let _ = std::fs::remove_file(&socket);
    let service = Command::new("monado-service")
        .env("XDG_RUNTIME_DIR", runtime_dir)
        .env("XRT_COMPOSITOR_NULL", "1")
        .env("SIMULATED_ENABLE", "1")
        .env("XRT_NO_STDIN", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let start = Instant::now();
    while !socket.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "monado-service did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(service)
}

/// With no runtime: `plasticine xr` names what is missing; with
/// `--fallback none` it stops there, by default it turns to the desk
/// (which here has no display either, and says so; with a display it would
/// open).
#[test]
fn with_no_runtime_xr_says_why_and_turns_to_the_desk() {
    let no_runtime = [("XR_RUNTIME_JSON", "/nonexistent/openxr_runtime.json")];
    let loader_here = Path::new("/usr/lib/x86_64-linux-gnu/libopenxr_loader.so.1").exists();
    let expected = if loader_here || required() {
        "no active OpenXR runtime"
    } else {
        "apt-get install libopenxr-loader1"
    };
    let timeout = Duration::from_secs(60);
    let (ok, stdout, stderr) = plasticine_within(
        &["xr", "assets/penguin.ron", "--fallback", "none"],
        &no_runtime,
        timeout,
    );
    assert!(!ok);
    assert!(stdout.contains("no headset: "), "{stdout}");
    assert!(stdout.contains(expected), "{stdout}");
    assert!(stderr.contains("--fallback none"), "{stderr}");
    assert!(!stdout.contains("falling back"), "{stdout}");

    let (ok, stdout, stderr) =
        plasticine_within(&["xr", "assets/penguin.ron"], &no_runtime, timeout);
    assert!(!ok);
    assert!(stdout.contains(expected), "{stdout}");
    assert!(
        stderr.contains("no display for the desk front end either")
            && stderr.contains("plasticine render"),
        "{stderr}"
    );

    // A display that cannot be opened: the desk is chosen, and fails there.
    let mut env = no_runtime.to_vec();
    env.push(("DISPLAY", ":9999"));
    let (ok, stdout, stderr) = plasticine_within(&["xr", "assets/penguin.ron"], &env, timeout);
    assert!(!ok);
    assert!(
        stdout.contains("falling back to the desk front end"),
        "{stdout}"
    );
    assert!(
        stderr.contains("no display to open a window on"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A scripted session through real `OpenXR` actions, with Monado's remote
/// driver (Index controllers): the sphere tool's trigger pressed at a known
/// right-controller pose creates a joint there (after the sphere tool was
/// picked by pointing the wand at the tool panel above the left hand); the left squeeze held
/// while the left controller moves 10 cm drags the world with it, so the
/// same press afterwards creates a joint 10 cm the other way in the world;
/// Ctrl+C ends the session cleanly and the saved character has both joints
/// where they should be. (`--placement tracker`: world = STAGE space.)
#[test]
fn remote_controllers_create_joints_and_drag_the_world() {
    let Some((remote_dir, mut remote)) = remote_at_rest("the scripted headset test") else {
        return;
    };
    let (tip, left0, drag) = (TIP, LEFT_REST, Vec3::new(0.1, 0.0, 0.0));

    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("scripted.ron");
    let recorded = dir.path().join("session.ron");
    let session = RemoteSession::start(&remote_dir, &["--tool", "select"], &saved, Some(&recorded));
    // The tool panel stands above the left hand, facing the head: point
    // the wand (straight ahead, −z) at its sphere row from 5 cm in front
    // and pull the trigger. The session started with the select tool,
    // which creates nothing: the joints below need the panel's click.
    {
        use plasticine::app::{headset_layout, left_hand_pose};
        use plasticine::tools::ToolKind;
        use plasticine::tools::{ControlPanel, PAD, ROW_HEIGHT};
        let (width, height) = headset_layout();
        let pose = left_hand_pose(left0, Vec3::new(0.0, 1.6, 0.0), width, height);
        // The sphere's cell of the tool palette, at its middle.
        let (k, f) = ControlPanel::tool_cell(ToolKind::Sphere);
        let y = -PAD - (k as f32 + 0.5) * ROW_HEIGHT;
        let x = f * plasticine::app::controls_width();
        let target = pose.transform_point3(Vec3::new(x, y, 0.0));
        let aim = target + Vec3::new(0.0, 0.0, 0.05);
        remote.right(aim, false);
        remote.send();
        settle();
        remote.right(aim, true);
        remote.send();
        settle();
        remote.right(aim, false);
        remote.send();
        settle();
        remote.right(tip, false);
        remote.send();
        settle();
    }
    // Press and release the trigger at the tip: a joint there.
    remote.right(tip, true);
    remote.send();
    settle();
    remote.right(tip, false);
    remote.send();
    settle();
    // Squeeze the left hand and move it by `drag`, in steps; release.
    remote.left(left0, true);
    remote.send();
    settle();
    for k in 1..=5 {
        remote.left(left0 + drag * (k as f32 / 5.0), true);
        remote.send();
        std::thread::sleep(Duration::from_millis(150));
    }
    settle();
    remote.left(left0 + drag, false);
    remote.send();
    settle();
    // The same press again: the world has moved by −drag under the hand.
    remote.right(tip, true);
    remote.send();
    settle();
    remote.right(tip, false);
    remote.send();
    settle();
    let transcript = session.stop();
    let start_joints = load_character(Path::new("assets/penguin.ron"))
        .unwrap()
        .skeleton
        .joints
        .len();
    let c = load_character(&saved).unwrap();
    assert_eq!(
        c.skeleton.joints.len(),
        start_joints + 2,
        "two joints created\n{transcript}"
    );
    let body = PosedBody::new(&c, &c.skeleton.rest_posture());
    let at = |j: usize| Vec3::from(body.joints[j].translation);
    let (first, second) = (at(start_joints), at(start_joints + 1));
    assert!(
        first.distance(tip) < 0.01,
        "the first joint is at the controller's tip: {first} vs {tip}"
    );
    assert!(
        second.distance(tip - drag) < 0.01,
        "the world was dragged by the squeezed hand: {second} vs {}",
        tip - drag
    );

    // --record: the session replays, from the start saved beside it, to
    // the same skeleton and muscles.
    assert!(
        transcript.contains("was recorded to"),
        "the report names the recording\n{transcript}"
    );
    let replayed = dir.path().join("replayed.ron");
    let out = Command::new(BIN)
        .arg("replay")
        .arg(&recorded)
        .arg("--out")
        .arg(&replayed)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = load_character(&replayed).unwrap();
    assert_eq!(r.skeleton, c.skeleton, "the replayed skeleton");
    assert_eq!(r.muscles, c.muscles, "the replayed muscles");
}

/// A controller that loses tracking mid-gesture: the sphere tool's trigger
/// pressed at the tip creates a joint and drags its sphere out to 5 cm; the
/// controller then drops out of tracking with the trigger still held, moves
/// 40 cm on, and comes back into view there, trigger still down, before it
/// is let go. The sphere keeps the 5 cm it had where the controller was last
/// seen, no second joint is made, the user is told, and the saved character
/// has that one joint.
#[test]
fn a_controller_lost_mid_drag_lets_go_where_it_was_last_seen() {
    let Some((remote_dir, mut remote)) = remote_at_rest("the lost-controller headset test") else {
        return;
    };
    let tip = TIP;
    let (drawn, away) = (tip + Vec3::X * 0.05, tip + Vec3::X * 0.4);
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("lost.ron");
    let mut session = RemoteSession::start(&remote_dir, &["--tool", "sphere"], &saved, None);
    for (p, trigger, tracked) in [
        (tip, true, true),
        (drawn, true, true),
        (away, true, false),
        (away, true, true),
        (away, false, true),
    ] {
        if tracked {
            remote.right(p, trigger);
        } else {
            remote.right_lost(p, trigger);
        }
        remote.send();
        settle();
        if !tracked {
            session.wait_line("The right controller lost tracking");
        }
    }
    let transcript = session.stop();

    let start = load_character(Path::new("assets/penguin.ron")).unwrap();
    let c = load_character(&saved).unwrap();
    assert_eq!(
        c.skeleton.joints.len(),
        start.skeleton.joints.len() + 1,
        "one joint, not a second on the way back\n{transcript}"
    );
    let joint = start.skeleton.joints.len();
    let body = PosedBody::new(&c, &c.skeleton.rest_posture());
    let at = Vec3::from(body.joints[joint].translation);
    assert!(
        at.distance(tip) < 0.01,
        "the joint is at the tip: {at} vs {tip}"
    );
    let muscle = c
        .muscles
        .iter()
        .find(|m| m.joint == joint)
        .expect("its sphere");
    let radius = match muscle.shape.primitive {
        plasticine::shape::Primitive::Sphere { radius } => radius,
        ref p => panic!("a sphere, not {p:?}"),
    };
    assert!(
        (radius - 0.05).abs() < 0.005,
        "the sphere keeps the radius drawn before tracking was lost: {radius}\n{transcript}"
    );
}
