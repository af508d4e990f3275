//! The application layer: the frame loop and the simulation thread (LEMAN
//! §5.2, made concurrent), and the front ends. The interactive ones (desk
//! window, headset) drive a [`FrameLoop`] with their own [`Tracker`] and
//! [`FrameRenderer`]; the headless one renders bakes to files.
//!
//! Data flows one way:
//!
//! ```text
//!  Tracker ──► FrameLoop (main thread: Character, History, Toolbox, vehicle)
//!                 │ SetCharacter(Arc<Character>), SetPosture, settings...
//!                 ▼
//!              SimThread (owns the skin state, advances at ratio × real time)
//!                 │ Arc<SceneSnapshot>, SimStatus   (never waited for)
//!                 ▼
//!  FrameLoop takes the newest snapshot, samples tracking again, renders.
//! ```

mod desk;
mod desk_input;
mod flesh_grab;
mod flesh_push;
mod frame_log;
mod frame_loop;
mod headless;
mod headset;
mod latency;
mod panel_driver;
mod panel_ui;
mod playback;
#[cfg(test)]
mod playback_tests;
mod plots;
mod render_failure;
mod resolution;
mod sim_thread;
mod view_renderer;

pub use desk::{DeskOptions, TrackerChoice, run_desk};
pub use desk_input::DeskTracker;
pub use headless::{HeadlessOptions, HeadlessStereo, OrbitRig, render_character};
pub use headset::{Placement, XrFrontError, XrOptions, run_xr};
pub use panel_driver::{
    PanelAnchor, PanelDriver, REPAINT_EVERY, desk_panel_anchor, headset_layout, left_hand_pose,
};
pub use panel_ui::{PanelPainter, PanelPicture, controls_width};
pub use playback::{
    BakedFrames, BakedPlaybackError, Playback, PlaybackCtl, PlaybackEnv, PlaybackView,
};
pub use plots::Plot;
pub use sim_thread::{
    FleshGrab, SimLoad, SimMessage, SimStatus, SimStopped, SimThread, SolverTrace, carry_skin_state,
};
pub use view_renderer::OffscreenFrameRenderer;

pub use frame_log::{FrameLog, FrameSummary, Stats};
pub use frame_loop::{
    FrameInputs, FrameLoop, FrameRenderer, FrameTimings, RenderReport, TrackedParts, TrackedPose,
    Tracker, VehicleInput,
};
pub use latency::{BusyRenderer, LatencyResult, MovingTracker, latency_run, latency_run_with};
pub use render_failure::{FrameError, RenderFailure};
pub use resolution::{GovernorConfig, LoadSample, RESOLUTION_LADDER, ResolutionGovernor};
