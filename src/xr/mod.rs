//! OpenXR: the loader and runtime ([`instance`]), the hands as actions with
//! suggested bindings ([`actions`]), and [`XrTracker`], the head and hands
//! from a headless session (`XR_MND_headless`) as a
//! [`Tracker`](crate::app::Tracker) for the desk.
//!
//! The loader (`libopenxr_loader.so.1`) is opened at run time, so the
//! program builds and runs without it; [`XrTracker::open`] then fails with
//! an [`XrError`] that says what to install or start.
//!
//! # Tracker space
//!
//! An [`XrTracker`] reports poses in the runtime's `STAGE` space (else
//! `LOCAL`). A desk calibration used with it must have been measured in that
//! same space, which is what `plasticine calibrate --live` does.
//!
//! # What Monado does (25.0, the service with the null compositor)
//!
//! See [`tracker`] for the session states and tracking seen with Monado's
//! simulated devices.

pub mod actions;
pub mod error;
pub mod instance;
pub mod tracker;

pub use actions::{HandActions, HandInputs, PROFILES, Side};
pub use error::{LOADER_LIBRARY, XrError};
pub use instance::{LOADER_ENV, RuntimeInfo, XrRuntime, load_entry, loader_path};
pub use tracker::{SessionState, XrTracker, XrTrackerOptions};
