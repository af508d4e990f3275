//! [`XrTracker`]: the head and both hands from an `OpenXR` runtime, through a
//! headless session (`XR_MND_headless`), as a [`Tracker`].
//!
//! The session has no graphics: the desk renders with its own wgpu device,
//! and the headset front end will have its own session. Each
//! [`Tracker::sample`]:
//!
//! 1. polls the runtime's events and drives the session's state machine
//!    (`READY` → `xrBeginSession`, `STOPPING` → `xrEndSession`;
//!    `LOSS_PENDING`, `EXITING` and instance loss end the tracker: see
//!    [`XrTracker::lost`]);
//! 2. while the session runs, syncs the actions (they only carry input
//!    while the session is `FOCUSED`);
//! 3. asks for the poses at the runtime's *current* time (the monotonic
//!    clock converted with `XR_KHR_convert_timespec_time`: a headless
//!    session has no frame timing to predict from);
//! 4. fills a [`TrackedPose`] in **tracker space**, the `STAGE` reference
//!    space where the runtime has one, else `LOCAL` (see
//!    [`XrTracker::reference_space`]). The head is the `VIEW` space (the
//!    centre eye: x right, y up, looking down −z, as the calibration's head
//!    frame); each hand is its controller's aim pose.
//!
//! A part that is not tracked keeps its last pose, and
//! [`Tracker::tracked`] says which parts were. Nothing here panics or waits
//! without a bound: a failure after opening is kept in [`XrTracker::lost`]
//! and the samples go on with nothing tracked.

use super::actions::{HandActions, HandInputs, Side, TrackingSpaces};
use super::error::{XrError, call};
use super::instance::{RuntimeInfo, XrRuntime};
use crate::input::{HandState, InputFrame};
use crate::input::{TrackedParts, TrackedPose, Tracker};
use glam::{Quat, Vec3};
use openxr as xr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use openxr::SessionState;

/// How to open an [`XrTracker`].
#[derive(Clone, Debug)]
pub struct XrTrackerOptions {
    /// The loader library (default: `$PLASTICINE_OPENXR_LOADER`, else
    /// `libopenxr_loader.so.1`).
    pub loader: Option<PathBuf>,
    /// How long [`XrTracker::open`] waits for the session to start running.
    pub start_timeout: Duration,
}

impl Default for XrTrackerOptions {
    fn default() -> Self {
        Self {
            loader: None,
            start_timeout: Duration::from_secs(5),
        }
    }
}

/// The head and the hands from `OpenXR` (see the module documentation).
pub struct XrTracker {
    // Field order is drop order: spaces and actions before the session,
    // the session before the instance.
    view: xr::Space,
    aim: [xr::Space; 2],
    base: xr::Space,
    base_kind: xr::ReferenceSpaceType,
    /// What `xrBeginSession` is given: stereo where the system has it.
    view_configuration: xr::ViewConfigurationType,
    actions: HandActions,
    session: xr::Session<xr::Headless>,
    runtime: XrRuntime,
    events: xr::EventDataBuffer,
    state: SessionState,
    running: bool,
    lost: Option<XrError>,
    head: (Vec3, Quat),
    hands: [HandState; 2],
    inputs: [HandInputs; 2],
    tracked: TrackedParts,
    /// The interaction profile in use per hand (`None`: no controller).
    profiles: [Option<String>; 2],
    profiles_stale: bool,
    started: Instant,
    sequence: u64,
}

impl std::fmt::Debug for XrTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XrTracker")
            .field("runtime", self.runtime.info())
            .field("state", &self.state)
            .field("reference_space", &self.base_kind)
            .field("tracked", &self.tracked)
            .field("lost", &self.lost)
            .finish_non_exhaustive()
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

impl XrTracker {
    /// Opens the runtime, creates a headless session with the hand actions
    /// and the spaces, and waits (at most `options.start_timeout`) until the
    /// session runs.
    pub fn open(options: &XrTrackerOptions) -> Result<Self, XrError> {
        let runtime = XrRuntime::open(options.loader.as_deref())?;
        let instance = runtime.instance.clone();
        let configurations = instance
            .enumerate_view_configurations(runtime.system)
            .map_err(call("xrEnumerateViewConfigurations"))?;
        let view_configuration = if configurations.is_empty()
            || configurations.contains(&xr::ViewConfigurationType::PRIMARY_STEREO)
        {
            xr::ViewConfigurationType::PRIMARY_STEREO
        } else {
            configurations[0]
        };
        let actions = HandActions::new(&instance)?;
        // SAFETY: a headless session takes no graphics handles.
        let (session, _waiter, _stream) = unsafe {
            instance
                .create_session::<xr::Headless>(runtime.system, &xr::headless::SessionCreateInfo {})
        }
        .map_err(call("xrCreateSession (headless)"))?;
        let TrackingSpaces {
            base_kind,
            base,
            view,
            aim,
        } = TrackingSpaces::attach(&session, &actions)?;
        let mut tracker = Self {
            view,
            aim,
            base,
            base_kind,
            view_configuration,
            actions,
            session,
            runtime,
            events: xr::EventDataBuffer::new(),
            state: SessionState::IDLE,
            running: false,
            lost: None,
            head: (Vec3::ZERO, Quat::IDENTITY),
            hands: [HandState::default(); 2],
            inputs: [HandInputs::default(); 2],
            tracked: TrackedParts::NONE,
            profiles: [None, None],
            profiles_stale: true,
            started: Instant::now(),
            sequence: 0,
        };
        let started = tracker.wait_for(options.start_timeout, |t| t.running)?;
        if !started {
            return Err(XrError::StartTimeout {
                seconds: options.start_timeout.as_secs_f64(),
                state: format!("{:?}", tracker.state),
            });
        }
        Ok(tracker)
    }

    /// Updates (events, actions, poses) every few milliseconds until
    /// `done(self)` holds or `timeout` has passed; returns whether it
    /// holds. Fails at once if the session is lost.
    pub fn wait_for(
        &mut self,
        timeout: Duration,
        mut done: impl FnMut(&Self) -> bool,
    ) -> Result<bool, XrError> {
        let start = Instant::now();
        loop {
            self.update()?;
            if done(self) {
                return Ok(true);
            }
            if start.elapsed() >= timeout {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Polls the events, syncs the actions and locates the head and the
    /// hands. After a loss it returns the loss again and changes nothing.
    pub fn update(&mut self) -> Result<(), XrError> {
        if let Some(e) = &self.lost {
            return Err(e.clone());
        }
        let result = self.poll_events().and_then(|()| self.locate());
        if let Err(e) = &result {
            self.lose(e.clone());
        }
        result
    }

    fn lose(&mut self, e: XrError) {
        tracing::warn!("OpenXR tracker stopped: {e}");
        self.tracked = TrackedParts::NONE;
        self.running = false;
        self.lost = Some(e);
    }

    fn poll_events(&mut self) -> Result<(), XrError> {
        loop {
            let event = self
                .runtime
                .instance
                .poll_event(&mut self.events)
                .map_err(call("xrPollEvent"))?;
            let Some(event) = event else { return Ok(()) };
            use xr::Event;
            match event {
                Event::SessionStateChanged(e) => {
                    let state = e.state();
                    tracing::debug!("OpenXR session state {:?} → {state:?}", self.state);
                    self.state = state;
                    match state {
                        SessionState::READY => {
                            self.session
                                .begin(self.view_configuration)
                                .map_err(call("xrBeginSession"))?;
                            self.running = true;
                        }
                        SessionState::STOPPING => {
                            self.session.end().map_err(call("xrEndSession"))?;
                            self.running = false;
                        }
                        SessionState::LOSS_PENDING => {
                            return Err(XrError::SessionLost {
                                reason: "the runtime is losing the session \
                                         (XR_SESSION_STATE_LOSS_PENDING: the headset or \
                                         the runtime went away)"
                                    .into(),
                            });
                        }
                        SessionState::EXITING => {
                            return Err(XrError::SessionLost {
                                reason: "the runtime ended the session \
                                         (XR_SESSION_STATE_EXITING)"
                                    .into(),
                            });
                        }
                        _ => {}
                    }
                }
                Event::InstanceLossPending(_) => {
                    return Err(XrError::SessionLost {
                        reason:
                            "the runtime is going away (XR_TYPE_EVENT_DATA_INSTANCE_LOSS_PENDING)"
                                .into(),
                    });
                }
                Event::InteractionProfileChanged(_) => self.profiles_stale = true,
                Event::EventsLost(e) => {
                    tracing::warn!("OpenXR: {} events lost", e.lost_event_count());
                }
                _ => {}
            }
        }
    }

    fn locate(&mut self) -> Result<(), XrError> {
        if !self.running {
            self.tracked = TrackedParts::NONE;
            return Ok(());
        }
        // Outside FOCUSED this succeeds with XR_SESSION_NOT_FOCUSED and
        // every action reads inactive.
        self.session
            .sync_actions(&[xr::ActiveActionSet::new(&self.actions.set)])
            .map_err(call("xrSyncActions"))?;
        if self.profiles_stale {
            self.refresh_profiles()?;
        }
        let now = self.runtime.now()?;
        let head = self
            .view
            .locate(&self.base, now)
            .map_err(call("xrLocateSpace (VIEW)"))?;
        let mut tracked = TrackedParts::NONE;
        let pose = to_glam(head.pose);
        if valid(head.location_flags) && finite(&pose) {
            self.head = pose;
            tracked.head = true;
        }
        for side in Side::BOTH {
            let i = side as usize;
            let inputs = self.actions.read(&self.session, side)?;
            let aim = self.aim[i]
                .locate(&self.base, now)
                .map_err(call("xrLocateSpace (aim)"))?;
            let pose = to_glam(aim.pose);
            let ok = valid(aim.location_flags) && finite(&pose);
            if ok {
                self.hands[i].pose = pose;
            }
            self.hands[i].trigger = inputs.trigger.clamp(0.0, 1.0);
            self.hands[i].buttons = inputs.buttons;
            self.inputs[i] = inputs;
            match side {
                Side::Left => tracked.left = ok,
                Side::Right => tracked.right = ok,
            }
        }
        self.tracked = tracked;
        Ok(())
    }

    fn refresh_profiles(&mut self) -> Result<(), XrError> {
        for side in Side::BOTH {
            let path = self
                .session
                .current_interaction_profile(self.actions.hands[side as usize])
                .map_err(call("xrGetCurrentInteractionProfile"))?;
            self.profiles[side as usize] = if path == xr::Path::NULL {
                None
            } else {
                self.runtime.instance.path_to_string(path).ok()
            };
        }
        // The runtime may only pick a profile once the session is focused.
        self.profiles_stale = self.state != SessionState::FOCUSED;
        Ok(())
    }

    /// What the runtime said about itself and the headset.
    pub fn runtime(&self) -> &RuntimeInfo {
        self.runtime.info()
    }

    /// Whether the last update located the head.
    pub fn is_head_tracked(&self) -> bool {
        self.tracked.head
    }

    /// The session's state as the runtime last reported it.
    pub fn session_state(&self) -> SessionState {
        self.state
    }

    /// Whether the session is running (between `xrBeginSession` and `xrEndSession`).
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// Why the tracker stopped, if it did (the session or the instance was
    /// lost, or a call failed). A lost tracker reports nothing tracked.
    pub fn lost(&self) -> Option<&XrError> {
        self.lost.as_ref()
    }

    /// The reference space poses are reported in (tracker space): `STAGE`
    /// where the runtime has one, else `LOCAL`.
    pub fn reference_space(&self) -> xr::ReferenceSpaceType {
        self.base_kind
    }

    /// The interaction profile the runtime chose for each hand (index 0
    /// left, 1 right), e.g. `/interaction_profiles/khr/simple_controller`;
    /// `None` while it has chosen none (no controller, or not focused yet).
    pub fn interaction_profiles(&self) -> [Option<&str>; 2] {
        [self.profiles[0].as_deref(), self.profiles[1].as_deref()]
    }

    /// The profiles the runtime accepted our suggested bindings for.
    pub fn suggested_profiles(&self) -> &[&'static str] {
        &self.actions.suggested
    }

    /// Each hand's buttons and axes from the last update (thumbsticks
    /// included, which [`TrackedPose`] has no place for).
    pub fn hand_inputs(&self) -> [HandInputs; 2] {
        self.inputs
    }

    /// One line for people: the runtime, the session and what is tracked.
    pub fn status_line(&self) -> String {
        if let Some(e) = &self.lost {
            return format!("OpenXR lost: {e}");
        }
        let t = self.tracked;
        let yes = |b: bool| if b { "tracked" } else { "not tracked" };
        format!(
            "OpenXR {:?}: head {}, left {}, right {}",
            self.state,
            yes(t.head),
            yes(t.left),
            yes(t.right)
        )
    }
}

impl Tracker for XrTracker {
    fn sample(&mut self) -> TrackedPose {
        // A failure is kept in `lost` (and logged once); the sample then
        // carries the last poses with nothing tracked.
        let _ = self.update();
        self.sequence += 1;
        TrackedPose {
            head: self.head,
            input: InputFrame {
                time: self.started.elapsed().as_secs_f64(),
                left: self.hands[0],
                right: self.hands[1],
            },
            sequence: self.sequence,
            sampled_at: Instant::now(),
        }
    }

    fn tracked(&self) -> TrackedParts {
        self.tracked
    }
}
