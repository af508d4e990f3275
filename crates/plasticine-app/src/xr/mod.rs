//! `OpenXR`: the loader and runtime (`instance`), the hands as actions with
//! suggested bindings (`actions`), [`XrTracker`], the head and hands
//! from a headless session (`XR_MND_headless`) as a
//! [`Tracker`](crate::input::Tracker) for the desk, and [`Headset`], a
//! session that renders: the runtime's Vulkan device wrapped into wgpu
//! (`vulkan`), an array swapchain wrapped as wgpu textures
//! (`swapchain`), the session's lifecycle and frame timing
//! (`headset`); `crate::app::headset` is its front end.
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
//! Seen in `tests/xr_monado.rs`, which `cargo xtask test` runs against it:
//!
//! - It offers `XR_MND_headless` and `XR_KHR_convert_timespec_time`, and a
//!   `STAGE` space. A headless session gets READY at once, and once begun
//!   goes straight on to FOCUSED (there are no frames to wait for), so the
//!   actions carry input with no `xrWaitFrame` loop.
//! - `SIMULATED_ENABLE=1`: "Monado: Simulated HMD", head tracked at about
//!   1.6 m, moving and turning slowly by itself.
//!   `SIMULATED_LEFT/RIGHT=simple`: both hands get the
//!   `khr/simple_controller` profile; their aim poses are tracked and static
//!   at (∓0.2, 1.3, −0.5), nothing pressed. Without them, no controllers.
//! - `P_OVERRIDE_ACTIVE_CONFIG=remote`: "Monado: Remote HMD", with Index
//!   controllers (`valve/index_controller`) placed and pressed by a TCP
//!   client on port 4242.
//! - With no service running, `xrCreateInstance` fails
//!   (`XR_ERROR_RUNTIME_FAILURE`); when the service goes away under a
//!   running session, the next call reports `XR_ERROR_INSTANCE_LOST`, which
//!   the tracker turns into [`XrTracker::lost`].
//! - Its client library prints a few `LOG in xrCreateInstance` lines on
//!   stderr whatever `XRT_LOG` says.
//!
//! And with a [`Headset`] (a Vulkan session), seen in the same tests:
//!
//! - It offers `XR_KHR_vulkan_enable2`, with Vulkan 1.0 up to "1023.1023.1023"
//!   (no upper limit); with the null compositor it picks lavapipe (Mesa
//!   25.0.7 in trixie), which offers multiview, and the renderer's
//!   self-test passes there, so both eyes go in one pass.
//! - The simulated HMD recommends 320×240 per eye; `R8G8B8A8_SRGB` is
//!   offered; an array swapchain of 2 layers gets 3 images.
//! - The session is READY as soon as it is created; after `xrBeginSession`
//!   the first frames take it through SYNCHRONIZED and VISIBLE to FOCUSED
//!   (the first `xrWaitFrame` says `shouldRender = false`). The null
//!   compositor paces `xrWaitFrame` at about 20 Hz. The simple controllers'
//!   profile is known once FOCUSED (an interaction-profile-changed event).
//! - After `xrRequestExitSession` it goes FOCUSED → VISIBLE → SYNCHRONIZED
//!   → STOPPING (we call `xrEndSession`) → IDLE → EXITING.
//! - Killing the service under a running session makes the next call fail
//!   with `XR_ERROR_INSTANCE_LOST`; tearing the session down afterwards
//!   fails quietly, without crashing.
//! - On lavapipe, `vkQueueSubmit` runs the rendering before it returns, so
//!   the main thread's *wall* time per frame includes the software GPU's
//!   work; its own CPU time does not.

#![allow(
    unsafe_code,
    reason = "OpenXR and its Vulkan interop are C APIs: every call crosses FFI"
)]

mod actions;
mod error;
mod headset;
mod instance;
mod swapchain;
mod tracker;
mod vulkan;

pub use actions::{HandActions, HandInputs, PROFILES, Side};
pub use error::{LOADER_LIBRARY, XrError};
pub use headset::{Headset, HeadsetOptions, HeadsetTracker, LocatedView, Pump, SessionEnd};
pub use instance::{LOADER_ENV, RuntimeInfo, XrPurpose, XrRuntime, load_entry, loader_path};
pub use swapchain::SwapchainError;
pub use tracker::{SessionState, XrTracker, XrTrackerOptions};
