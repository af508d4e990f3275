//! `plasticine calibrate`, `plasticine tracker`.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// The arguments of `plasticine calibrate`.
#[derive(clap::Args)]
pub struct CalibrateArgs {
    /// Input script (.ron) of the tracked right hand: a trigger press at each corner, in order, 4 presses or rounds of 4.
    #[arg(
            long,
            value_name = "INPUT_SCRIPT",
            required_unless_present_any = ["check", "live"],
            requires = "out",
            conflicts_with_all = ["check", "live"]
        )]
    samples: Option<PathBuf>,
    /// Measure the corners now with the right controller of an `OpenXR` tracker.
    #[arg(long, requires = "out", conflicts_with = "check")]
    live: bool,
    /// With --live: rounds of 4 corners to measure (averaged per corner).
    #[arg(long, value_name = "K", default_value_t = 1, requires = "live", value_parser = clap::value_parser!(u32).range(1..=20))]
    rounds: u32,
    /// With --live: give up after this many seconds.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 120.0,
        requires = "live"
    )]
    timeout: f64,
    /// Calibration whose other fields (eyes, fixed head, registration, clipping) are kept [default: the 24" monitor].
    #[arg(long, value_name = "CALIBRATION", requires = "measure")]
    base: Option<PathBuf>,
    /// Interpupillary distance in metres, e.g. 0.063: eyes at -IPD/2 and +IPD/2 along the head's x axis.
    #[arg(long, value_name = "METRES", requires = "measure")]
    ipd: Option<f32>,
    /// Where to write the calibration (.ron).
    #[arg(long, value_name = "FILE", conflicts_with = "check")]
    out: Option<PathBuf>,
    /// Check a calibration file and describe it.
    #[arg(long, value_name = "FILE")]
    check: Option<PathBuf>,
}

impl CalibrateArgs {
    pub fn run(self) -> Result<()> {
        let Self {
            samples,
            live,
            rounds,
            timeout,
            base,
            ipd,
            out,
            check,
        } = self;
        match (check, samples, out) {
            (Some(file), _, _) => check_calibration(&file)?,
            (None, Some(samples), Some(out)) => {
                calibrate(&samples, base.as_deref(), ipd, &out)?;
            }
            (None, None, Some(out)) if live => {
                calibrate_live(base.as_deref(), ipd, &out, rounds as usize, timeout)?;
            }
            _ => {
                bail!("give --samples INPUT_SCRIPT --out FILE, --live --out FILE, or --check FILE")
            }
        };
        Ok(())
    }
}

/// The arguments of `plasticine tracker`.
#[derive(clap::Args)]
pub struct TrackerArgs {
    /// How long to print poses.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Poses printed per second.
    #[arg(long, default_value_t = 4.0)]
    rate: f64,
}

impl TrackerArgs {
    pub fn run(self) -> Result<()> {
        let Self { seconds, rate } = self;
        show_tracker(seconds, rate)?;
        Ok(())
    }
}

/// A corner further than this (metres) from where the other three put it is
/// accepted (while the fitted rectangle misses no corner by more than a tenth
/// of the shorter side) with a warning.
const CORNER_WARNING: f64 = 0.01;

/// `plasticine calibrate --samples`: fit the screen to the corner presses of
/// a recorded input script and write the calibration.
fn calibrate(samples: &Path, base: Option<&Path>, ipd: Option<f32>, out: &Path) -> Result<()> {
    use crate::input::{InputError, InputScript};
    use crate::view::CornerCapture;
    let text = std::fs::read_to_string(samples)
        .with_context(|| format!("reading {}", samples.display()))?;
    let script = InputScript::from_ron(&text).map_err(|e| match e {
        InputError::Parse { .. } => anyhow::anyhow!("{}:{e}", samples.display()),
        _ => anyhow::anyhow!("{}: {e}", samples.display()),
    })?;
    let cal = base_calibration(base, ipd)?;
    // The fixed head tells the screen's front from its back.
    let mut capture = CornerCapture::new(cal.fixed_head.position);
    for frame in &script.frames {
        capture.handle(frame);
    }
    let fit = capture
        .finish()
        .map_err(|e| anyhow::anyhow!("{}: {e}", samples.display()))?;
    write_calibration(cal, fit.screen, &fit, &capture, out)
}

/// The calibration whose other fields a measurement keeps: `--base`, else
/// the 24" monitor; with `--ipd` applied.
fn base_calibration(base: Option<&Path>, ipd: Option<f32>) -> Result<crate::view::Calibration> {
    let mut cal = match base {
        Some(p) => crate::view::Calibration::load(p)?,
        None => crate::view::Calibration::default_monitor(),
    };
    if let Some(ipd) = ipd {
        cal.set_ipd(ipd);
    }
    Ok(cal)
}

/// `plasticine calibrate --live`: measure the corners with the right
/// controller of an `OpenXR` tracker, fit, and write the calibration.
fn calibrate_live(
    base: Option<&Path>,
    ipd: Option<f32>,
    out: &Path,
    rounds: usize,
    timeout: f64,
) -> Result<()> {
    use crate::app::Tracker;
    use crate::view::CornerCapture;
    use crate::xr::{XrTracker, XrTrackerOptions};
    use std::time::{Duration, Instant};
    if !(timeout.is_finite() && timeout > 0.0) {
        bail!("--timeout must be a positive number of seconds, not {timeout}");
    }
    let deadline = Instant::now() + Duration::from_secs_f64(timeout.min(1e6));
    let mut cal = base_calibration(base, ipd)?;
    let mut tracker = XrTracker::open(&XrTrackerOptions::default())
        .context("calibrate --live needs an OpenXR tracker")?;
    println!(
        "Measuring with OpenXR: {} ({:?} space).",
        tracker.runtime(),
        tracker.reference_space()
    );
    // The tracked head (if any, within a second) tells the screen's front
    // from its back, and becomes the fixed head.
    tracker.wait_for(Duration::from_secs(1), |t| t.is_head_tracked())?;
    let head = tracker.sample();
    let tracked_head = tracker.tracked().head.then_some(head.head);
    let viewer = match (tracked_head, base) {
        (Some((position, _)), _) => position,
        (None, Some(_)) => {
            println!(
                "The head is not tracked: using the fixed head of --base to tell the screen's \
                 front from its back."
            );
            cal.fixed_head.position
        }
        (None, None) => bail!(
            "the OpenXR tracker does not track the head ({}), and without it the screen's \
             front cannot be told from its back: switch the headset or head tracker on, or give \
             --base with a fixed head in this tracker space",
            tracker.status_line()
        ),
    };
    let mut capture = CornerCapture::new(viewer);
    let wanted = 4 * rounds;
    println!("{}", capture.prompt());
    let mut warned_untracked = false;
    while capture.presses() < wanted {
        if Instant::now() >= deadline {
            bail!(
                "timed out after {timeout} s with {} of {wanted} corners measured; run again \
                 (with a longer --timeout if needed)",
                capture.presses()
            );
        }
        let pose = tracker.sample();
        if let Some(e) = tracker.lost() {
            bail!(
                "the OpenXR tracker stopped after {} of {wanted} corners: {e}",
                capture.presses()
            );
        }
        let mut frame = pose.input;
        if !tracker.tracked().right {
            // A press where the controller is not seen would record a stale position.
            if frame.right.triggered() && !warned_untracked {
                println!("The right controller is not tracked: that press is not recorded.");
                warned_untracked = true;
            }
            frame.right.trigger = 0.0;
        }
        let before = capture.presses();
        if let Some(corner) = capture.handle(&frame) {
            let p = frame.right.position();
            println!("  {corner}: ({:.4}, {:.4}, {:.4}) m", p.x, p.y, p.z);
            warned_untracked = false;
            if capture.presses() < wanted {
                println!("{}", capture.prompt());
            }
        } else if capture.presses() < before {
            println!("Forgot the last corner. {}", capture.prompt());
        }
        std::thread::sleep(Duration::from_millis(4));
    }
    let fit = capture.finish().map_err(|e| anyhow::anyhow!("{e}"))?;
    if base.is_none() {
        // The 24" monitor's head and world, carried over to the measured screen.
        cal = cal.moved_with_screen(fit.screen);
    }
    if let Some((position, _)) = tracked_head {
        cal.fixed_head.position = position;
    }
    write_calibration(cal, fit.screen, &fit, &capture, out)
}

/// Puts the fitted `screen` into `cal`, validates, writes `out`, and says what was fitted.
fn write_calibration(
    mut cal: crate::view::Calibration,
    screen: crate::view::Screen,
    fit: &crate::view::ScreenFit,
    capture: &crate::view::CornerCapture,
    out: &Path,
) -> Result<()> {
    cal.screen = screen;
    cal.validate()
        .map_err(|e| anyhow::anyhow!("the calibrated set-up is not usable: {e}"))?;
    cal.save(out)?;
    let (w, h) = fit.size;
    println!(
        "Fitted the screen to {} round{} of 4 corners: {:.1} x {:.1} mm ({:.1}\" diagonal).",
        capture.rounds(),
        if capture.rounds() == 1 { "" } else { "s" },
        w * 1e3,
        h * 1e3,
        w.hypot(h) / 0.0254
    );
    println!(
        "  residual: rms {:.2} mm, max {:.2} mm ({} corner); per corner {}",
        fit.rms_residual * 1e3,
        fit.max_residual * 1e3,
        fit.worst_corner,
        crate::view::Corner::ALL
            .iter()
            .map(|c| format!("{} {:.2} mm", c, fit.residuals[c.index()] * 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if fit.suspect_offset > CORNER_WARNING {
        eprintln!(
            "warning: the {} corner is {:.1} mm from where the other three put it: re-measure it if your tracker is more accurate than that",
            fit.suspect,
            fit.suspect_offset * 1e3
        );
    }
    describe_calibration(&cal);
    println!("Wrote {}", out.display());
    Ok(())
}

/// `plasticine tracker`: what the `OpenXR` tracker sees.
fn show_tracker(seconds: f64, rate: f64) -> Result<()> {
    use crate::app::Tracker;
    use crate::xr::{XrTracker, XrTrackerOptions};
    use std::time::{Duration, Instant};
    if !(seconds.is_finite() && seconds >= 0.0 && rate.is_finite() && rate > 0.0) {
        bail!("--seconds must be 0 or more and --rate more than 0");
    }
    let mut tracker = XrTracker::open(&XrTrackerOptions::default())?;
    println!("OpenXR {}", tracker.runtime());
    println!(
        "  session {:?}, tracker space {:?}; bindings suggested for {}",
        tracker.session_state(),
        tracker.reference_space(),
        tracker.suggested_profiles().join(", ")
    );
    tracker.wait_for(Duration::from_millis(500), |t| {
        t.interaction_profiles().iter().all(Option::is_some)
    })?;
    let [left, right] = tracker.interaction_profiles();
    println!(
        "  controllers: left {}, right {}",
        left.unwrap_or("none"),
        right.unwrap_or("none")
    );
    let start = Instant::now();
    let period = Duration::from_secs_f64(1.0 / rate.min(1000.0));
    let end = Duration::from_secs_f64(seconds.min(1e6));
    loop {
        let pose = tracker.sample();
        if let Some(e) = tracker.lost() {
            bail!("{e}");
        }
        let t = tracker.tracked();
        let mark = |tracked: bool| if tracked { "" } else { " (not tracked)" };
        let p = |v: glam::Vec3| format!("({:.3}, {:.3}, {:.3})", v.x, v.y, v.z);
        let hand = |h: &crate::input::HandState| {
            format!(
                "{} trigger {:.2} buttons {:#x}",
                p(h.position()),
                h.trigger,
                h.buttons
            )
        };
        println!(
            "{:6.2} s  head {}{}  left {}{}  right {}{}",
            start.elapsed().as_secs_f64(),
            p(pose.head.0),
            mark(t.head),
            hand(&pose.input.left),
            mark(t.left),
            hand(&pose.input.right),
            mark(t.right)
        );
        if start.elapsed() >= end {
            return Ok(());
        }
        std::thread::sleep(period);
    }
}

/// `plasticine calibrate --check`.
fn check_calibration(file: &Path) -> Result<()> {
    let cal = crate::view::Calibration::load(file)?;
    println!("{}: a valid calibration.", file.display());
    describe_calibration(&cal);
    Ok(())
}

fn describe_calibration(cal: &crate::view::Calibration) {
    let s = &cal.screen;
    let (w, h) = (s.width(), s.height());
    let (c, n) = (s.centre(), s.normal());
    println!(
        "  screen: {:.1} x {:.1} mm ({:.1}\" diagonal), centre ({:.3}, {:.3}, {:.3}) m, facing ({:.3}, {:.3}, {:.3}), tracker space",
        w * 1e3,
        h * 1e3,
        w.hypot(h) / 0.0254,
        c.x,
        c.y,
        c.z,
        n.x,
        n.y,
        n.z
    );
    let head = cal.fixed_head.position;
    let distance = s.signed_distance(head);
    let aside = (head - distance * n - c).length();
    println!(
        "  fixed head: {:.1} mm in front of the screen, {:.1} mm from the axis through its centre",
        distance * 1e3,
        aside * 1e3
    );
    println!("  IPD: {:.1} mm", cal.eyes.ipd() * 1e3);
    let r = &cal.tracker_to_world;
    let (axis, angle) = r.rotation.to_axis_angle();
    println!(
        "  world = {} x tracker, turned {:.1} deg about ({:.2}, {:.2}, {:.2}), moved by ({:.3}, {:.3}, {:.3}); clipping {} to {} m from the eye",
        r.scale,
        angle.to_degrees(),
        axis.x,
        axis.y,
        axis.z,
        r.translation.x,
        r.translation.y,
        r.translation.z,
        cal.near,
        cal.far
    );
}
