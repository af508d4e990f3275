//! `plasticine desk`.

use super::args::{DeskStereo, DeskTracker, parse_size};
use super::document::open_document;
use super::signals::{XR_STOP, stop_xr_on_signals};
use anyhow::Result;
use std::path::PathBuf;

/// The arguments of `plasticine desk`.
#[derive(clap::Args)]
pub struct DeskArgs {
    /// Character file to open (default: a new character with one joint).
    character: Option<PathBuf>,
    /// Calibration file (see calibration/README.md); default: an ordinary 24" monitor.
    #[arg(long)]
    calibration: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "anaglyph")]
    stereo: DeskStereo,
    /// Window size `WxH` in pixels.
    #[arg(long, value_parser = parse_size, default_value = "1280x720")]
    size: (u32, u32),
    /// Quit after this many frames.
    #[arg(long)]
    frames: Option<u64>,
    /// Save the last frame as a PNG (with --frames).
    #[arg(long)]
    screenshot: Option<PathBuf>,
    /// Slow each simulation step by this many milliseconds (the head and hands stay live).
    #[arg(long, default_value_t = 0)]
    step_delay_ms: u64,
    /// Save per-frame timings (render, tracking age, snapshot age) as CSV on exit.
    #[arg(long)]
    timings: Option<PathBuf>,
    /// Open the newest autosave of this character instead (after a crash).
    #[arg(long)]
    recover: bool,
    /// Where the head and the right hand come from: auto = `OpenXR` when a runtime with
    /// headless sessions is there (e.g. Monado), else the fixed head and the mouse.
    /// With `OpenXR`, use a calibration measured with it (`plasticine calibrate --live`).
    #[arg(long, value_enum, default_value = "auto")]
    tracker: DeskTracker,
    /// Record the editing session to this file (RON), with the starting character beside
    /// it; `plasticine replay FILE --out OUT` rebuilds the character.
    #[arg(long)]
    record: Option<PathBuf>,
    /// A bake (`plasticine bake --out DIR` writes DIR/bake.plcache) to play back in the
    /// timeline's baked mode.
    #[arg(long)]
    bake: Option<PathBuf>,
    /// Memory for undo (MB): past it the oldest edits can no longer be
    /// undone (they stay in a recorded session), so a long session holds steady.
    #[arg(long, value_name = "MB", default_value_t = 512)]
    undo_budget: usize,
    /// The ground (`--drop`): Shift + right mouse button pushes the
    /// character.
    #[command(flatten)]
    ground: super::args::GroundArgs,
}

impl DeskArgs {
    pub fn run(self) -> Result<()> {
        let Self {
            character,
            calibration,
            stereo,
            size,
            frames,
            screenshot,
            step_delay_ms,
            timings,
            recover,
            tracker,
            record,
            bake,
            undo_budget,
            ground,
        } = self;
        desk(
            character,
            calibration,
            stereo,
            size,
            frames,
            screenshot,
            step_delay_ms,
            timings,
            recover,
            tracker,
            record,
            bake,
            undo_budget,
            ground,
        )?;
        Ok(())
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "the desk's command-line options, one by one (xr falls back to it with its own)"
)]
pub(crate) fn desk(
    character: Option<PathBuf>,
    calibration: Option<PathBuf>,
    stereo: DeskStereo,
    size: (u32, u32),
    frames: Option<u64>,
    screenshot: Option<PathBuf>,
    step_delay_ms: u64,
    timings: Option<PathBuf>,
    recover: bool,
    tracker: DeskTracker,
    record: Option<PathBuf>,
    bake: Option<PathBuf>,
    undo_budget_mb: usize,
    ground: super::args::GroundArgs,
) -> Result<()> {
    use crate::app::{DeskOptions, TrackerChoice, run_desk};
    use crate::render::StereoMode;
    let calibration = match &calibration {
        Some(p) => crate::view::Calibration::load(p)?,
        None => crate::view::Calibration::default_monitor(),
    };
    let (model, autosaves) = open_document(character.as_deref(), recover)?;
    let options = DeskOptions {
        document: character,
        calibration,
        stereo: match stereo {
            DeskStereo::Anaglyph => StereoMode::Anaglyph,
            DeskStereo::SideBySide => StereoMode::SideBySide,
            DeskStereo::TopBottom => StereoMode::TopBottom,
            DeskStereo::Mono => StereoMode::Mono,
        },
        size,
        frames,
        screenshot,
        step_delay: std::time::Duration::from_millis(step_delay_ms),
        timings_csv: timings,
        autosave_dir: autosaves,
        tracker: match tracker {
            DeskTracker::Auto => TrackerChoice::Auto,
            DeskTracker::Openxr => TrackerChoice::OpenXr,
            DeskTracker::None => TrackerChoice::None,
        },
        record,
        bake,
        undo_budget: undo_budget_mb.saturating_mul(1 << 20),
        ground: ground.ground()?,
        stop: Some(&XR_STOP),
        ..DeskOptions::default()
    };
    // Ctrl+C closes the window as Esc does: the session is recorded and the
    // timings written (the autosave holds the edits).
    stop_xr_on_signals();
    let report = run_desk(model, options)?;
    println!(
        "Desk session: {} frames on {}",
        report.frames, report.adapter
    );
    for line in &report.summary {
        println!("  {line}");
    }
    if let Some(p) = &report.screenshot {
        println!("  last frame saved to {}", p.display());
    }
    Ok(())
}
