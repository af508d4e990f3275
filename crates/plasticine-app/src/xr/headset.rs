//! [`Headset`]: an `OpenXR` session that renders, on the Vulkan device the
//! runtime made ([`super::vulkan`]), into an array swapchain
//! ([`super::swapchain`]), with the session's lifecycle, its frame timing
//! and the hands as actions.
//!
//! # Lifecycle
//!
//! [`Headset::pump`] polls the runtime's events and drives the session:
//! `READY` → `xrBeginSession` (the system's stereo view configuration);
//! `SYNCHRONIZED`, `VISIBLE`, `FOCUSED` are recorded (input only reaches the
//! actions while `FOCUSED`); `STOPPING` → `xrEndSession`; `IDLE` waits for
//! the next `READY` or `EXITING`; `EXITING` ends the headset
//! ([`SessionEnd::Requested`] after [`Headset::request_exit`], else
//! [`SessionEnd::ByRuntime`]); `LOSS_PENDING`, the instance's loss and any
//! call failing with `XR_ERROR_SESSION_LOST` or `XR_ERROR_INSTANCE_LOST`
//! end it with [`SessionEnd::Lost`]. While the session runs, `pump` then
//! waits for the next frame (`xrWaitFrame`, which paces the loop) and says
//! whether the runtime wants it rendered. Every other wait is bounded: the
//! start ([`HeadsetOptions::start_timeout`]), the swapchain image
//! ([`HeadsetOptions::image_timeout`]), the exit after a request.
//!
//! # One frame
//!
//! After `pump` returned a frame to render, the [`FrameLoop`](crate::app::FrameLoop)
//! runs with a [`HeadsetTracker`] and a renderer built on
//! [`Headset::acquire`] and [`Headset::submit`]:
//!
//! 1. first tracking sample: `xrSyncActions`, the hands' aim poses and the
//!    head (`VIEW` space), all at the frame's predicted display time;
//! 2. the tools run; `acquire` calls `xrBeginFrame` and acquires and waits
//!    for the swapchain image;
//! 3. late sample: `xrLocateViews` (each eye's pose and field of view) and
//!    the hands again, at the predicted display time, just before
//!    recording;
//! 4. the renderer draws each eye with the views' poses and FOVs, copies
//!    them into the image's layers, and `submit` releases the image and
//!    ends the frame (`xrEndFrame`) with a projection layer carrying those
//!    same poses and FOVs.
//!
//! A frame the runtime does not want rendered (`shouldRender = false`) is
//! begun and ended with no layers ([`Headset::skip_frame`]); a frame that
//! fails halfway is ended the same way ([`Headset::abandon_frame`]).
//!
//! # Spaces and hands
//!
//! Poses are in tracker space: `STAGE` where the runtime has it, else
//! `LOCAL`. The hands are reported by role: the tool hand is the right
//! controller, the vehicle hand the left, or the other way round with
//! [`HeadsetOptions::left_handed`].

mod tracking;

use super::actions::{HandActions, HandInputs, Side, TrackingSpaces};
use super::error::{XrError, call};
use super::instance::{RuntimeInfo, XrPurpose, XrRuntime};
use super::swapchain::{EyeSwapchain, SwapchainError};
use super::vulkan::create_gpu;
use crate::gpu::GpuContext;
use crate::input::HandState;
use crate::input::TrackedParts;
use crate::render::EyeCamera;
use crate::view::frustum;
use glam::{Mat4, Quat, Vec3};
use openxr as xr;
use std::path::PathBuf;
use std::time::{Duration, Instant};
pub use tracking::HeadsetTracker;

pub use openxr::SessionState;

/// How to open a [`Headset`].
#[derive(Clone, Debug)]
pub struct HeadsetOptions {
    /// The loader library (default: `$PLASTICINE_OPENXR_LOADER`, else
    /// `libopenxr_loader.so.1`).
    pub loader: Option<PathBuf>,
    /// How long [`Headset::open`] waits for the session to start running.
    pub start_timeout: Duration,
    /// How long to wait for a swapchain image.
    pub image_timeout: Duration,
    /// The swapchain size relative to the runtime's recommended size.
    pub resolution_scale: f32,
    /// The left controller holds the tools and the right one flies.
    pub left_handed: bool,
}

impl Default for HeadsetOptions {
    fn default() -> Self {
        Self {
            loader: None,
            start_timeout: Duration::from_secs(10),
            image_timeout: Duration::from_secs(2),
            resolution_scale: 1.0,
            left_handed: false,
        }
    }
}

/// How a headset session ended.
#[derive(Clone, Debug, PartialEq)]
pub enum SessionEnd {
    /// We asked to exit ([`Headset::request_exit`]) and the runtime went
    /// through `STOPPING` and `EXITING`.
    Requested,
    /// The runtime ended the session (`EXITING`) without our asking: the
    /// user quit from the runtime's menu, or the runtime is shutting down.
    ByRuntime,
    /// The session or the runtime was lost.
    Lost(XrError),
}

impl std::fmt::Display for SessionEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionEnd::Requested => write!(f, "the session ended as asked"),
            SessionEnd::ByRuntime => write!(
                f,
                "the OpenXR runtime ended the session (XR_SESSION_STATE_EXITING)"
            ),
            SessionEnd::Lost(e) => write!(f, "{e}"),
        }
    }
}

/// What [`Headset::pump`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pump {
    /// The session is not running (before `READY`, or after `STOPPING`):
    /// there is no frame; pump again a little later.
    NotRunning,
    /// `xrWaitFrame` returned: a frame to render, or (`should_render ==
    /// false`) one to skip with [`Headset::skip_frame`].
    Frame {
        /// Whether the runtime wants this frame rendered.
        should_render: bool,
    },
    /// The session is over; [`Headset::ended`] says how.
    Ended,
}

/// One eye as located for a frame: its pose in tracker space and its
/// field of view (the four angles, radians: left and down negative).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LocatedView {
    /// Eye position, tracker space (m).
    pub position: Vec3,
    /// Eye orientation, tracker space.
    pub orientation: Quat,
    /// The four angles of the field of view (rad), left and down negative.
    pub fov: xr::Fovf,
}

impl LocatedView {
    /// The off-axis projection of the view's field of view, in wgpu's clip
    /// conventions (right-handed, looking down −z, NDC y up, depth 0..1
    /// from `near` to `far`).
    pub fn projection(&self, near: f32, far: f32) -> Mat4 {
        let f = self.fov;
        frustum(
            near * f.angle_left.tan(),
            near * f.angle_right.tan(),
            near * f.angle_down.tan(),
            near * f.angle_up.tan(),
            near,
            far,
        )
    }

    /// The renderer's camera for this eye when tracker space is placed in
    /// the world by `world_from_tracker` (a rigid motion with a uniform
    /// scale): `near` and `far` are in tracker metres.
    pub fn camera(&self, world_from_tracker: Mat4, near: f32, far: f32) -> EyeCamera {
        let world_from_eye =
            world_from_tracker * Mat4::from_rotation_translation(self.orientation, self.position);
        EyeCamera {
            view_proj: self.projection(near, far) * world_from_eye.inverse(),
            position: world_from_tracker.transform_point3(self.position),
        }
    }

    fn from_xr(v: &xr::View) -> Self {
        let (position, orientation) = to_glam(v.pose);
        Self {
            position,
            orientation,
            fov: v.fov,
        }
    }

    fn pose(&self) -> xr::Posef {
        let p = self.position;
        let q = self.orientation;
        xr::Posef {
            orientation: xr::Quaternionf {
                x: q.x,
                y: q.y,
                z: q.z,
                w: q.w,
            },
            position: xr::Vector3f {
                x: p.x,
                y: p.y,
                z: p.z,
            },
        }
    }
}

/// Space-location flags that make a pose usable.
fn valid(flags: xr::SpaceLocationFlags) -> bool {
    flags.contains(xr::SpaceLocationFlags::POSITION_VALID)
        && flags.contains(xr::SpaceLocationFlags::ORIENTATION_VALID)
}

fn to_glam(pose: xr::Posef) -> (Vec3, Quat) {
    let p = pose.position;
    let o = pose.orientation;
    (
        Vec3::new(p.x, p.y, p.z),
        Quat::from_xyzw(o.x, o.y, o.z, o.w).normalize(),
    )
}

fn finite(pose: &(Vec3, Quat)) -> bool {
    pose.0.is_finite() && pose.1.is_finite()
}

/// The frame in progress.
#[derive(Clone, Copy, Debug, Default)]
struct FrameInProgress {
    state: Option<xr::FrameState>,
    begun: bool,
    /// The views located by the late sample (what is rendered and submitted).
    views: Option<[LocatedView; 2]>,
    located_at: Option<Instant>,
}

/// An `OpenXR` session rendering with wgpu (see the module documentation).
pub struct Headset {
    // Field order is drop order (after `Drop::drop`): the swapchain, the
    // spaces and the actions before the session (its frame waiter and
    // stream hold it too), the session before the GPU context (the session
    // uses the Vulkan device, which wgpu destroys with its last handle),
    // everything before the runtime's instance.
    swapchain: Option<EyeSwapchain>,
    view_space: xr::Space,
    aim: [xr::Space; 2],
    base: xr::Space,
    actions: HandActions,
    frame_stream: xr::FrameStream<xr::Vulkan>,
    frame_waiter: xr::FrameWaiter,
    session: xr::Session<xr::Vulkan>,
    gpu: GpuContext,
    runtime: XrRuntime,
    base_kind: xr::ReferenceSpaceType,
    view_configuration: xr::ViewConfigurationType,
    blend_mode: xr::EnvironmentBlendMode,
    options: HeadsetOptions,
    events: xr::EventDataBuffer,
    state: SessionState,
    /// Every state the runtime reported, in order.
    transitions: Vec<SessionState>,
    running: bool,
    exit_requested: Option<Instant>,
    ended: Option<SessionEnd>,
    frame: FrameInProgress,
    // Tracking, by physical hand (0 left, 1 right).
    head: (Vec3, Quat),
    hands: [HandState; 2],
    inputs: [HandInputs; 2],
    tracked: TrackedParts,
    profiles: [Option<String>; 2],
    profiles_stale: bool,
    profile_changes: Vec<String>,
    recentre_requested: bool,
    started: Instant,
    sequence: u64,
}

impl std::fmt::Debug for Headset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Headset")
            .field("runtime", self.runtime.info())
            .field("state", &self.state)
            .field("running", &self.running)
            .field("swapchain", &self.swapchain)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl Drop for Headset {
    fn drop(&mut self) {
        // A frame half made is ended (the runtime expects xrEndFrame after
        // xrBeginFrame), then no GPU work may still use a swapchain image
        // when the swapchain goes, and wgpu's deferred destruction of the
        // textures wrapping them must have run.
        if self.ended.is_none() {
            self.abandon_frame();
        }
        let _ = self.gpu.wait_idle();
        self.swapchain = None;
        let _ = self.gpu.wait_idle();
    }
}

impl Headset {
    /// Opens the runtime with `XR_KHR_vulkan_enable2`, creates the Vulkan
    /// device through it and wraps it into wgpu, creates the session, the
    /// actions, the spaces and the swapchain, and waits (at most
    /// `options.start_timeout`) until the session runs.
    pub fn open(options: &HeadsetOptions) -> Result<Self, XrError> {
        let runtime = XrRuntime::open_for(options.loader.as_deref(), XrPurpose::Vulkan)?;
        let instance = runtime.instance().clone();
        let system = runtime.system();
        let configurations = instance
            .enumerate_view_configurations(system)
            .map_err(call("xrEnumerateViewConfigurations"))?;
        let view_configuration = xr::ViewConfigurationType::PRIMARY_STEREO;
        if !configurations.contains(&view_configuration) {
            return Err(XrError::NoSystem {
                runtime: runtime.info().runtime.clone(),
                detail: format!(
                    "the system '{}' has no stereo view configuration (it offers {configurations:?})",
                    runtime.info().system
                ),
            });
        }
        let views = instance
            .enumerate_view_configuration_views(system, view_configuration)
            .map_err(call("xrEnumerateViewConfigurationViews"))?;
        let first = views.first().ok_or_else(|| XrError::NoSystem {
            runtime: runtime.info().runtime.clone(),
            detail: "the stereo view configuration has no views".into(),
        })?;
        let scale = options.resolution_scale.clamp(0.05, 4.0);
        let size = (
            ((first.recommended_image_rect_width as f32 * scale).round() as u32)
                .clamp(16, first.max_image_rect_width.max(16)),
            ((first.recommended_image_rect_height as f32 * scale).round() as u32)
                .clamp(16, first.max_image_rect_height.max(16)),
        );
        let blend_modes = instance
            .enumerate_environment_blend_modes(system, view_configuration)
            .map_err(call("xrEnumerateEnvironmentBlendModes"))?;
        let blend_mode = if blend_modes.contains(&xr::EnvironmentBlendMode::OPAQUE) {
            xr::EnvironmentBlendMode::OPAQUE
        } else {
            blend_modes
                .first()
                .copied()
                .unwrap_or(xr::EnvironmentBlendMode::OPAQUE)
        };

        let gpu = create_gpu(&instance, system)?;
        let actions = HandActions::new(&instance)?;
        // SAFETY: the Vulkan handles were made for this system through this
        // instance (`create_gpu`), and the device outlives the session (field
        // order of `Headset`).
        let (session, frame_waiter, frame_stream) =
            unsafe { instance.create_session::<xr::Vulkan>(system, &gpu.session_info) }
                .map_err(call("xrCreateSession (Vulkan)"))?;
        let TrackingSpaces {
            base_kind,
            base,
            view: view_space,
            aim,
        } = TrackingSpaces::attach(&session, &actions)?;
        let swapchain = EyeSwapchain::new(&session, &gpu.ctx, size)?;
        let mut headset = Self {
            swapchain: Some(swapchain),
            view_space,
            aim,
            base,
            actions,
            frame_stream,
            frame_waiter,
            session,
            gpu: gpu.ctx,
            runtime,
            base_kind,
            view_configuration,
            blend_mode,
            options: options.clone(),
            events: xr::EventDataBuffer::new(),
            state: SessionState::IDLE,
            transitions: Vec::new(),
            running: false,
            exit_requested: None,
            ended: None,
            frame: FrameInProgress::default(),
            head: (Vec3::new(0.0, 1.6, 0.0), Quat::IDENTITY),
            hands: [HandState::default(); 2],
            inputs: [HandInputs::default(); 2],
            tracked: TrackedParts::NONE,
            profiles: [None, None],
            profiles_stale: true,
            profile_changes: Vec::new(),
            recentre_requested: false,
            started: Instant::now(),
            sequence: 0,
        };
        let start = Instant::now();
        while !headset.running {
            headset.poll_events()?;
            if let Some(end) = &headset.ended {
                return Err(match end {
                    SessionEnd::Lost(e) => e.clone(),
                    other => XrError::SessionLost {
                        reason: format!("before it started: {other}"),
                    },
                });
            }
            if start.elapsed() >= options.start_timeout {
                return Err(XrError::StartTimeout {
                    seconds: options.start_timeout.as_secs_f64(),
                    state: format!("{:?}", headset.state),
                });
            }
            if !headset.running {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        Ok(headset)
    }

    /// The GPU the headset renders with (for the renderer).
    pub fn gpu(&self) -> &GpuContext {
        &self.gpu
    }

    /// What the runtime said about itself and the headset.
    pub fn runtime(&self) -> &RuntimeInfo {
        self.runtime.info()
    }

    /// Each eye's image size.
    pub fn eye_size(&self) -> (u32, u32) {
        self.swapchain.as_ref().map_or((0, 0), |s| s.size())
    }

    /// The swapchain of both eyes' images (there until the headset is dropped).
    pub fn swapchain(&self) -> Option<&EyeSwapchain> {
        self.swapchain.as_ref()
    }

    /// The tracker space: `STAGE` where the runtime has one, else `LOCAL`.
    pub fn reference_space(&self) -> xr::ReferenceSpaceType {
        self.base_kind
    }

    /// The session state as the runtime last reported it.
    pub fn session_state(&self) -> SessionState {
        self.state
    }

    /// Every state the runtime reported, in order.
    pub fn transitions(&self) -> &[SessionState] {
        &self.transitions
    }

    /// Whether the session is running (begun at `READY`, not yet stopped or ended).
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// How the session ended, once it has.
    pub fn ended(&self) -> Option<&SessionEnd> {
        self.ended.as_ref()
    }

    /// The interaction profile the runtime chose per physical hand (0 left, 1 right).
    pub fn interaction_profiles(&self) -> [Option<&str>; 2] {
        [self.profiles[0].as_deref(), self.profiles[1].as_deref()]
    }

    /// Lines about profile changes since the last call (for the user).
    pub fn take_profile_changes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.profile_changes)
    }

    /// Whether the runtime moved the tracking space (a recentre in its own
    /// menu) since the last call.
    pub fn take_recentre_request(&mut self) -> bool {
        std::mem::take(&mut self.recentre_requested)
    }

    /// Asks the runtime to end the session (`xrRequestExitSession`); it then
    /// goes through `STOPPING` (we end it) and `EXITING`. A session that is
    /// not running ends at once.
    pub fn request_exit(&mut self) {
        if self.ended.is_some() || self.exit_requested.is_some() {
            return;
        }
        self.exit_requested = Some(Instant::now());
        if !self.running {
            self.ended = Some(SessionEnd::Requested);
            return;
        }
        if let Err(e) = self
            .session
            .request_exit()
            .map_err(call("xrRequestExitSession"))
        {
            self.end_with(e);
        }
    }

    /// Whether [`request_exit`](Self::request_exit) was called.
    pub fn exit_requested(&self) -> bool {
        self.exit_requested.is_some()
    }

    fn end_with(&mut self, e: XrError) {
        if self.ended.is_none() {
            tracing::warn!("OpenXR headset session ended: {e}");
            self.ended = Some(SessionEnd::Lost(e));
        }
        self.running = false;
        self.tracked = TrackedParts::NONE;
    }

    /// Polls the events and, while the session runs, waits for the next
    /// frame (see the module documentation).
    pub fn pump(&mut self) -> Pump {
        if self.ended.is_some() {
            return Pump::Ended;
        }
        if let Err(e) = self.poll_events() {
            self.end_with(e);
        }
        // An exit we asked for that the runtime does not carry out.
        if let Some(at) = self.exit_requested
            && self.ended.is_none()
            && at.elapsed() > Duration::from_secs(3)
        {
            tracing::warn!("OpenXR: the runtime did not end the session within 3 s of our request");
            if self.running {
                let _ = self.session.end();
                self.running = false;
            }
            self.ended = Some(SessionEnd::Requested);
        }
        if self.ended.is_some() {
            return Pump::Ended;
        }
        if !self.running {
            return Pump::NotRunning;
        }
        match self.frame_waiter.wait() {
            Ok(state) => {
                self.frame = FrameInProgress {
                    state: Some(state),
                    ..FrameInProgress::default()
                };
                Pump::Frame {
                    should_render: state.should_render,
                }
            }
            Err(r) => {
                let e = XrError::call("xrWaitFrame", r);
                match r {
                    // The session stopped between the events and the wait.
                    xr::sys::Result::ERROR_SESSION_NOT_RUNNING => {
                        self.running = false;
                        Pump::NotRunning
                    }
                    _ => {
                        self.end_with(e);
                        Pump::Ended
                    }
                }
            }
        }
    }

    fn poll_events(&mut self) -> Result<(), XrError> {
        loop {
            let event = self
                .runtime
                .instance()
                .poll_event(&mut self.events)
                .map_err(call("xrPollEvent"))?;
            let Some(event) = event else { return Ok(()) };
            use xr::Event;
            match event {
                Event::SessionStateChanged(e) => {
                    let state = e.state();
                    tracing::info!("OpenXR session state {:?} → {state:?}", self.state);
                    self.state = state;
                    self.transitions.push(state);
                    match state {
                        SessionState::READY => {
                            self.session
                                .begin(self.view_configuration)
                                .map_err(call("xrBeginSession"))?;
                            self.running = true;
                        }
                        SessionState::STOPPING => {
                            self.running = false;
                            self.session.end().map_err(call("xrEndSession"))?;
                        }
                        SessionState::EXITING => {
                            self.running = false;
                            self.ended = Some(if self.exit_requested.is_some() {
                                SessionEnd::Requested
                            } else {
                                SessionEnd::ByRuntime
                            });
                            return Ok(());
                        }
                        SessionState::LOSS_PENDING => {
                            return Err(XrError::SessionLost {
                                reason: "the runtime is losing the session \
                                         (XR_SESSION_STATE_LOSS_PENDING: the headset or the \
                                         runtime went away)"
                                    .into(),
                            });
                        }
                        // IDLE, SYNCHRONIZED, VISIBLE, FOCUSED: recorded;
                        // rendering follows shouldRender, input follows focus.
                        _ => {}
                    }
                }
                Event::InstanceLossPending(_) => {
                    return Err(XrError::SessionLost {
                        reason: "the runtime is going away \
                                 (XR_TYPE_EVENT_DATA_INSTANCE_LOSS_PENDING)"
                            .into(),
                    });
                }
                Event::InteractionProfileChanged(_) => {
                    // The runtime may change the bindings at any time: read
                    // the profiles now, and again once focused if none yet.
                    self.refresh_profiles()?;
                }
                Event::ReferenceSpaceChangePending(e) => {
                    tracing::info!(
                        "OpenXR: the {:?} space is about to move (recentred by the runtime)",
                        e.reference_space_type()
                    );
                    if e.reference_space_type() == self.base_kind {
                        self.recentre_requested = true;
                    }
                }
                Event::EventsLost(e) => {
                    tracing::warn!("OpenXR: {} events lost", e.lost_event_count());
                }
                _ => {}
            }
        }
    }

    fn refresh_profiles(&mut self) -> Result<(), XrError> {
        for side in Side::BOTH {
            let path = self
                .session
                .current_interaction_profile(self.actions.hands[side as usize])
                .map_err(call("xrGetCurrentInteractionProfile"))?;
            let profile = if path == xr::Path::NULL {
                None
            } else {
                self.runtime.instance().path_to_string(path).ok()
            };
            let i = side as usize;
            if profile != self.profiles[i] {
                let line = format!(
                    "OpenXR: the {} hand's controller is now {}",
                    if side == Side::Left { "left" } else { "right" },
                    profile.as_deref().unwrap_or("none")
                );
                tracing::info!("{line}");
                self.profile_changes.push(line);
                self.profiles[i] = profile;
            }
        }
        self.profiles_stale = self.profiles.iter().any(Option::is_none);
        Ok(())
    }

    /// The predicted display time of the frame in progress.
    fn display_time(&self) -> Option<xr::Time> {
        self.frame.state.map(|s| s.predicted_display_time)
    }

    /// Starts the frame `pump` returned (`xrBeginFrame`) and acquires the
    /// swapchain image, waiting at most [`HeadsetOptions::image_timeout`].
    /// Called again in the same frame, does nothing.
    pub fn acquire(&mut self) -> Result<(), XrError> {
        if self.frame.state.is_none() {
            return Err(XrError::Call {
                call: "xrBeginFrame (no frame was waited for)",
                result: xr::sys::Result::ERROR_CALL_ORDER_INVALID,
            });
        }
        if !self.frame.begun {
            self.frame_stream
                .begin()
                .map_err(call("xrBeginFrame"))
                .inspect_err(|e| self.end_with_if_lost(e))?;
            self.frame.begun = true;
        }
        let timeout = self.options.image_timeout;
        let swapchain = self.swapchain.as_mut().expect("swapchain until drop");
        let r = swapchain.acquire(timeout);
        r.map(|_| ()).inspect_err(|e| self.end_with_if_lost(e))
    }

    fn end_with_if_lost(&mut self, e: &XrError) {
        if matches!(e, XrError::SessionLost { .. }) {
            self.end_with(e.clone());
        }
    }

    /// The views the late sample located for this frame (what to render).
    pub fn frame_views(&self) -> Option<[LocatedView; 2]> {
        self.frame.views
    }

    /// When the late sample called `xrLocateViews` for this frame.
    pub fn views_located_at(&self) -> Option<Instant> {
        self.frame.located_at
    }

    /// Copies the eye images into the acquired swapchain image (see
    /// `EyeSwapchain::copy_eyes`).
    pub fn copy_eyes(&self, eyes: [&wgpu::Texture; 2]) -> Result<(), SwapchainError> {
        self.swapchain
            .as_ref()
            .ok_or(SwapchainError::NoSwapchain)?
            .copy_eyes(&self.gpu, eyes)
    }

    /// Reads back both layers of the acquired swapchain image (tests).
    pub fn read_swapchain(&self) -> Result<[crate::render::RgbaImage; 2], SwapchainError> {
        let s = self.swapchain.as_ref().ok_or(SwapchainError::NoSwapchain)?;
        let left = s.read_layer(&self.gpu, 0)?;
        let right = s.read_layer(&self.gpu, 1)?;
        Ok([left, right])
    }

    /// Releases the swapchain image and ends the frame (`xrEndFrame`) with a
    /// projection layer of the located views. Returns when `xrEndFrame`
    /// returned.
    pub fn submit(&mut self) -> Result<Instant, XrError> {
        let views = self.frame.views.ok_or(XrError::Call {
            call: "xrEndFrame (no views were located for this frame)",
            result: xr::sys::Result::ERROR_CALL_ORDER_INVALID,
        })?;
        let time = self.display_time().expect("a frame was waited for");
        let swapchain = self.swapchain.as_mut().expect("swapchain until drop");
        let released = swapchain.release();
        if let Err(e) = released {
            self.end_with_if_lost(&e);
            return Err(e);
        }
        let swapchain = self.swapchain.as_ref().expect("swapchain until drop");
        let (w, h) = swapchain.size();
        let rect = xr::Rect2Di {
            offset: xr::Offset2Di { x: 0, y: 0 },
            extent: xr::Extent2Di {
                width: w as i32,
                height: h as i32,
            },
        };
        let projection_views = [0u32, 1].map(|eye| {
            let v = views[eye as usize];
            xr::CompositionLayerProjectionView::new()
                .pose(v.pose())
                .fov(v.fov)
                .sub_image(
                    xr::SwapchainSubImage::new()
                        .swapchain(swapchain.swapchain())
                        .image_array_index(eye)
                        .image_rect(rect),
                )
        });
        let layer = xr::CompositionLayerProjection::new()
            .space(&self.base)
            .views(&projection_views);
        let r = self
            .frame_stream
            .end(time, self.blend_mode, &[&layer])
            .map_err(call("xrEndFrame"));
        let now = Instant::now();
        self.frame.begun = false;
        self.frame.state = None;
        r.inspect_err(|e| self.end_with_if_lost(e))?;
        Ok(now)
    }

    /// Ends a frame the runtime does not want rendered
    /// (`shouldRender = false`): begun and ended with no layers.
    pub fn skip_frame(&mut self) -> Result<(), XrError> {
        let time = self.display_time().ok_or(XrError::Call {
            call: "xrBeginFrame (no frame was waited for)",
            result: xr::sys::Result::ERROR_CALL_ORDER_INVALID,
        })?;
        let r = (|| {
            if !self.frame.begun {
                self.frame_stream.begin().map_err(call("xrBeginFrame"))?;
            }
            self.frame.begun = false;
            self.frame.state = None;
            self.frame_stream
                .end(time, self.blend_mode, &[])
                .map_err(call("xrEndFrame"))
        })();
        r.inspect_err(|e| self.end_with_if_lost(e))
    }

    /// Ends whatever is left of a frame that failed: releases the image if
    /// one is acquired, ends the frame with no layers if it was begun.
    /// Failures are logged (the session's loss is recorded).
    pub fn abandon_frame(&mut self) {
        if let Some(s) = self.swapchain.as_mut()
            && s.is_acquired()
            && let Err(e) = s.release()
        {
            tracing::warn!("releasing the swapchain image: {e}");
        }
        if self.frame.begun
            && let Some(time) = self.display_time()
        {
            self.frame.begun = false;
            if let Err(e) = self
                .frame_stream
                .end(time, self.blend_mode, &[])
                .map_err(call("xrEndFrame"))
            {
                tracing::warn!("ending an abandoned frame: {e}");
                self.end_with_if_lost(&e);
            }
        }
        self.frame = FrameInProgress::default();
    }
}

#[cfg(test)]
mod tests;
