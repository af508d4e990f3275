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

pub mod desk;
pub mod desk_input;
pub mod flesh_grab;
pub mod flesh_push;
pub mod frame_log;
pub mod frame_loop;
pub mod headless;
pub mod headset;
pub mod latency;
pub mod panel_driver;
pub mod panel_ui;
pub mod playback;
#[cfg(test)]
mod playback_tests;
pub mod plots;
pub mod render_failure;
pub mod resolution;
pub mod sim_thread;
pub mod view_renderer;

pub use frame_log::{FrameLog, FrameSummary, Stats};
pub use frame_loop::{
    FrameInputs, FrameLoop, FrameRenderer, FrameTimings, RenderReport, TrackedParts, TrackedPose,
    Tracker, VehicleInput,
};
pub use latency::{BusyRenderer, LatencyResult, MovingTracker, latency_run, latency_run_with};
pub use playback::{BakedFrames, Playback, PlaybackCtl, PlaybackEnv, PlaybackView};
pub use render_failure::{FrameError, RenderFailure};
pub use resolution::{GovernorConfig, LoadSample, RESOLUTION_LADDER, ResolutionGovernor};
pub use sim_thread::{
    FleshGrab, SimLoad, SimMessage, SimStatus, SimStopped, SimThread, carry_skin_state,
};
