//! `plasticine xr`.

use super::args::{DeskStereo, DeskTracker, FallbackArg, PlacementArg, ToolArg};
use super::desk::desk;
use super::document::open_document;
use super::signals::{XR_STOP, stop_xr_on_signals};
use anyhow::{Result, bail};
use std::path::PathBuf;

/// The arguments of `plasticine xr`.
#[derive(clap::Args)]
pub struct XrArgs {
    /// Character file to open (default: a new character with one joint).
    character: Option<PathBuf>,
    /// Ask the runtime to end the session after this many rendered frames.
    #[arg(long)]
    frames: Option<u64>,
    /// Save the last frame's swapchain image (both eyes) as left.png and right.png here.
    #[arg(long)]
    screenshot_eyes: Option<PathBuf>,
    /// Save the character to this file when the session ends, however it ends.
    #[arg(long)]
    save_on_exit: Option<PathBuf>,
    /// The left controller holds the tools and the right one flies.
    #[arg(long)]
    left_handed: bool,
    /// Swapchain size relative to the headset's recommended size (e.g. 0.5 on a slow GPU).
    #[arg(long, default_value_t = 1.0)]
    resolution_scale: f32,
    /// The tool in hand at the start.
    #[arg(long, value_enum, default_value = "select")]
    tool: ToolArg,
    /// front: the character at arm's length in front of you; tracker: world = tracking space.
    #[arg(long, value_enum, default_value = "front")]
    placement: PlacementArg,
    /// Seconds to wait for the `OpenXR` session to start.
    #[arg(long, default_value_t = 10.0)]
    start_timeout: f64,
    /// Save per-frame timings as CSV on exit.
    #[arg(long)]
    timings: Option<PathBuf>,
    /// Open the newest autosave of this character instead (after a crash or a lost session).
    #[arg(long)]
    recover: bool,
    /// With no headset: desk = open the desk front end (with a display), none = fail.
    #[arg(long, value_enum, default_value = "desk")]
    fallback: FallbackArg,
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
    /// Seconds to wait for the `OpenXR` runtime to come back after it lost the session
    /// (the work is saved first), then go on in a new session; 0 ends with the loss.
    #[arg(long, value_name = "SECONDS", default_value_t = 30.0)]
    reconnect: f64,
    /// The ground (`--drop`): the tool hand's thumbstick click, held,
    /// pushes the character.
    #[command(flatten)]
    ground: super::args::GroundArgs,
}

impl XrArgs {
    pub fn run(self) -> Result<()> {
        xr(self)
    }
}

/// `plasticine xr`: the headset, or (no headset) the reason and the desk.
fn xr(args: XrArgs) -> Result<()> {
    use crate::app::{Placement, XrFrontError, XrOptions, run_xr};
    use crate::tools::ToolKind;
    use crate::xr::HeadsetOptions;
    let (model, autosaves) = open_document(args.character.as_deref(), args.recover)?;
    if !(args.resolution_scale > 0.0 && args.resolution_scale <= 4.0) {
        bail!(
            "--resolution-scale must be above 0 and at most 4 (got {})",
            args.resolution_scale
        );
    }
    if !(args.reconnect.is_finite() && args.reconnect >= 0.0) {
        bail!(
            "--reconnect must be a number of seconds, 0 or more (got {})",
            args.reconnect
        );
    }
    let options = XrOptions {
        document: args.character.clone(),
        headset: HeadsetOptions {
            start_timeout: std::time::Duration::from_secs_f64(args.start_timeout.max(0.1)),
            resolution_scale: args.resolution_scale,
            left_handed: args.left_handed,
            ..HeadsetOptions::default()
        },
        frames: args.frames,
        screenshot_eyes: args.screenshot_eyes,
        save_on_exit: args.save_on_exit,
        autosave_dir: autosaves,
        undo_budget: args.undo_budget.saturating_mul(1 << 20),
        tool: match args.tool {
            ToolArg::Select => ToolKind::Select,
            ToolArg::Sphere => ToolKind::Sphere,
            ToolArg::Superellipse => ToolKind::Superellipse,
            ToolArg::Deform => ToolKind::Deform,
            ToolArg::Ik => ToolKind::Ik,
            ToolArg::Skin => ToolKind::Skin,
            ToolArg::Liposuction => ToolKind::Liposuction,
            ToolArg::Weights => ToolKind::Weights,
            ToolArg::Paint => ToolKind::Paint,
        },
        placement: match args.placement {
            PlacementArg::Front => Placement::Front,
            PlacementArg::Tracker => Placement::Tracker,
        },
        timings_csv: args.timings,
        record: args.record.clone(),
        bake: args.bake.clone(),
        ground: args.ground.ground()?,
        stop: Some(&XR_STOP),
        reconnect: Some(std::time::Duration::from_secs_f64(
            args.reconnect.min(86_400.0),
        )),
        ..XrOptions::default()
    };
    stop_xr_on_signals();
    match run_xr(model, options) {
        Ok(report) => {
            println!(
                "Headset session: {} frames rendered ({} skipped) on {}; {}",
                report.frames, report.skipped_frames, report.adapter, report.ended
            );
            println!("  session states: {}", report.states.join(" → "));
            if report.reconnects > 0 {
                println!(
                    "  the runtime lost the session and came back {} time(s); the work went on",
                    report.reconnects
                );
            }
            println!("  {}", report.saved);
            if let Some(r) = &report.recorded {
                println!("  {r}");
            }
            for line in report.timing_lines() {
                println!("  {line}");
            }
            for p in &report.screenshots {
                println!("  swapchain image saved to {}", p.display());
            }
            Ok(())
        }
        Err(XrFrontError::Unavailable(e)) => {
            println!("no headset: {e}");
            if args.fallback == FallbackArg::None {
                bail!("no headset ({e}) and --fallback none");
            }
            let has_display = ["DISPLAY", "WAYLAND_DISPLAY"]
                .iter()
                .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
            if !has_display {
                bail!(
                    "no headset ({e}), and no display for the desk front end either (neither \
                     DISPLAY nor WAYLAND_DISPLAY is set): start an OpenXR runtime (e.g. \
                     monado-service), run on a display (`plasticine desk`), or render without one \
                     (`plasticine render CHARACTER --out DIR`)"
                );
            }
            println!("falling back to the desk front end (plasticine desk)");
            desk(
                args.character,
                None,
                DeskStereo::Anaglyph,
                (1280, 720),
                args.frames,
                None,
                0,
                None,
                args.recover,
                DeskTracker::Auto,
                args.record,
                args.bake,
                args.undo_budget,
                args.ground,
            )
        }
        Err(e) => Err(e.into()),
    }
}
