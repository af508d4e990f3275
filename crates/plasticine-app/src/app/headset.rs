//! The headset front end (`plasticine xr`): a [`Headset`] session driving
//! the [`FrameLoop`] of §5.2 with the simulation on its own thread, the two
//! hands' actions, saving when the session ends however it ends, and the
//! per-frame timings.
//!
//! # The loop
//!
//! Each turn [`Headset::pump`] polls the runtime's events and, while the
//! session runs, waits for the frame (`xrWaitFrame`, which paces
//! everything). A frame the runtime does not want rendered is skipped
//! (begun and ended with no layers). Otherwise the vehicle hand's controls
//! are applied (from the last sample), then [`FrameLoop::frame`] runs with
//! the [`HeadsetTracker`] and a [`HeadsetRenderer`]: first sample, tools,
//! `xrBeginFrame` and the swapchain image, the newest snapshot, the late
//! sample (`xrLocateViews` at the predicted display time), drawing with
//! those views, the copy into the swapchain, `xrEndFrame`.
//!
//! # The hands
//!
//! The tool hand (right, or left with `--left-handed`): trigger = use the
//! tool (a short pulse on the press); B cycles the tools and A is the skin
//! tool's attach (the toolbox's own buttons); the thumbstick's y sets the
//! tool's parameter (the liposuction radius; flicks change the skin tool's
//! resolution). The vehicle hand: A undoes, B redoes (the toolbox's), the
//! thumbstick flies along the gaze (y) and turns (x), its click recentres.
//! Either hand: menu cycles the tools; squeeze grabs the world: one hand
//! drags it, both hands scale it and turn it about the vertical through
//! their midpoint ([`WorldGrab`]). A pulse when the tool tip touches a
//! joint, and when a grab starts. The tool hand's thumbstick click, held,
//! pushes the character ([`super::flesh_push`]); on a responding skeleton
//! the push's impulse sets a pulse's strength.
//!
//! # Ending
//!
//! The session ends when the frame count asked for is reached or on Ctrl+C
//! (we ask the runtime to exit and follow it through `STOPPING` and
//! `EXITING`), when the
//! runtime ends it, or when it is lost (the runtime died, the headset went
//! away). In every case the character is saved before returning: to
//! `--save-on-exit FILE` when given, else (if it was edited) as an autosave,
//! and the report says where. A lost session is saved the same way at once;
//! then, with [`XrOptions::reconnect`], the runtime is asked again for a
//! while (`reconnect`): when it comes back, a new session goes on with the
//! same frame loop, simulation and undo history.

use super::frame_log::Stats;
use super::frame_loop::{FrameInputs, FrameLoop, FrameRenderer, RenderReport, VehicleInput};
use super::panel_driver::PanelAnchor;
use super::render_failure::RenderFailure;
use super::view_renderer::{apply_view, decorations, draw_posture};
use crate::character::Character;
use crate::io::{AutosaveSettings, Autosaver, IoError, save_character};
use crate::kinematics::PosedBody;
use crate::render::EYE_FORMAT;
use crate::render::{RenderError, RgbaImage, SceneRenderer, StereoMode, StereoPath};
use crate::skin::SolverSettings;
use crate::tools::TOUCH_RADIUS;
use crate::tools::ToolKind;
use crate::tools::{SessionError, SessionRecorder};
use crate::xr::{Headset, HeadsetOptions, HeadsetTracker, Pump, SessionEnd, XrError};
use glam::{Mat4, Quat, Vec3};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};
pub use world_grab::{COMFORTABLE_SIZE, WorldGrab, recentred, snapshot_bounds};

mod reconnect;
mod world_grab;

/// Near and far clipping distances, in tracker (physical) metres.
pub const NEAR: f32 = 0.05;
/// Far clipping distance, in tracker (physical) metres.
pub const FAR: f32 = 100.0;
/// Thumbstick dead zone.
const DEAD_ZONE: f32 = 0.2;
/// Flying speed (tracker metres per second at full stick) and turning
/// speed (radians per second).
const FLY_SPEED: f32 = 0.8;
const TURN_SPEED: f32 = 1.2;

/// How the world is placed in the room at the start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// The character at arm's length in front of the head, at chest height,
    /// scaled to a comfortable size, facing the user (see `recentred`).
    #[default]
    Front,
    /// World space is tracker space (no offset, no scale): scripted tests.
    Tracker,
}

/// What `plasticine xr` was asked to do.
#[derive(Clone, Debug)]
pub struct XrOptions {
    /// The document (named in messages and autosaves).
    pub document: Option<PathBuf>,
    /// How to open the headset: the loader, timeouts, swapchain resolution, handedness.
    pub headset: HeadsetOptions,
    /// Ask the runtime to end the session after this many rendered frames.
    pub frames: Option<u64>,
    /// Write the last rendered frame's swapchain layers as
    /// `left.png` / `right.png` here (read back from the swapchain image).
    pub screenshot_eyes: Option<PathBuf>,
    /// Save the character here when the session ends, however it ends.
    pub save_on_exit: Option<PathBuf>,
    /// The folder for autosaves; `None` turns autosave off.
    pub autosave_dir: Option<PathBuf>,
    /// Bytes of undo data kept (see `History::set_budget`).
    pub undo_budget: usize,
    /// The skin solver's settings for the simulation thread.
    pub settings: SolverSettings,
    /// The tool in hand at the start.
    pub tool: ToolKind,
    /// How the world is placed in the room at the start.
    pub placement: Placement,
    /// Save the frame timings as CSV on exit.
    pub timings_csv: Option<PathBuf>,
    /// Record the editing session here (`plasticine replay` plays it).
    pub record: Option<PathBuf>,
    /// A bake's frame cache for baked playback.
    pub bake: Option<PathBuf>,
    /// Let the skeleton respond on this ground (FEM flesh): it falls,
    /// stands, and the tool hand's thumbstick click pushes it.
    pub ground: Option<crate::contact::GroundDrop>,
    /// Set (by a signal handler: Ctrl+C) to end the session as if the
    /// frame count were reached: asked of the runtime, then saved.
    pub stop: Option<&'static AtomicBool>,
    /// How long to wait for the runtime to come back after it lost the
    /// session (the work saved first), then go on in a new session;
    /// `None` or zero: end with the loss.
    pub reconnect: Option<Duration>,
}

impl Default for XrOptions {
    fn default() -> Self {
        Self {
            document: None,
            headset: HeadsetOptions::default(),
            frames: None,
            screenshot_eyes: None,
            save_on_exit: None,
            autosave_dir: None,
            undo_budget: crate::tools::DEFAULT_UNDO_BUDGET,
            settings: SolverSettings::default(),
            tool: ToolKind::Select,
            placement: Placement::Front,
            timings_csv: None,
            record: None,
            bake: None,
            ground: None,
            stop: None,
            reconnect: None,
        }
    }
}

/// Why the headset front end could not run, or how its session failed.
#[derive(Debug, thiserror::Error)]
pub enum XrFrontError {
    /// There is no headset to use (no loader, no runtime, no Vulkan
    /// interop, no device, a session that would not start): the caller may
    /// fall back to the desk.
    #[error("{0}")]
    Unavailable(XrError),
    /// The session was lost while running; the work was saved as `saved`
    /// says.
    #[error("{end}; {saved}")]
    Lost {
        /// Why the session was lost.
        end: XrError,
        /// Where the work went, for people (as `XrReport::saved`).
        saved: String,
    },
    /// The GPU or the renderer failed.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// Creating the folder for the eye screenshots failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The session recording (`XrOptions::record`) could not be started.
    #[error(transparent)]
    Record(#[from] SessionError),
}

/// What a headset session did.
#[derive(Clone, Debug, Default)]
pub struct XrReport {
    /// The `OpenXR` runtime's name and version.
    pub runtime: String,
    /// The system's (headset's) name.
    pub system: String,
    /// The GPU the headset's frames are rendered on, as `GpuContext::summary` describes it.
    pub adapter: String,
    /// How the two eyes are drawn: multiview in one pass, or one pass per eye and why.
    pub stereo_path: String,
    /// The tracker space: `STAGE` where the runtime has one, else `LOCAL`.
    pub reference_space: String,
    /// Each eye's image size in pixels (width, height).
    pub eye_size: (u32, u32),
    /// Frames rendered into the swapchain, and frames the runtime did not
    /// want rendered (ended with no layers).
    pub frames: u64,
    /// Frames the runtime did not want rendered (ended with no layers).
    pub skipped_frames: u64,
    /// Every session state the runtime reported, in order.
    pub states: Vec<String>,
    /// How it ended, for people.
    pub ended: String,
    /// New sessions opened after the runtime lost one and came back.
    pub reconnects: u32,
    /// Where the work went, for people.
    pub saved: String,
    /// What `--record` wrote, when it was given.
    pub recorded: Option<String>,
    /// The file the character was saved to (`--save-on-exit` or an autosave), if it was saved.
    pub saved_to: Option<PathBuf>,
    /// Main-thread wall time per rendered frame from `xrWaitFrame`'s return
    /// to `xrEndFrame`'s (everything but the wait).
    pub frame_cpu_wall: Stats,
    /// The main thread's own CPU time over the same span (the driver's and
    /// the runtime's threads not included).
    pub frame_cpu_thread: Stats,
    /// From `xrLocateViews` to `xrEndFrame`'s return (how old the poses are
    /// when the frame goes to the compositor).
    pub locate_to_submit: Stats,
    /// The renderer's wall time (geometry, upload, encoding, the copy into
    /// the swapchain, their submission; with a software GPU such as
    /// lavapipe, submission runs the rendering itself).
    pub render_cpu: Stats,
    /// From one frame's start to the next (the runtime's pacing).
    pub frame_interval: Stats,
    /// The eye images written for `XrOptions::screenshot_eyes` (`left.png`, `right.png`).
    pub screenshots: Vec<PathBuf>,
    /// The autosave files written during the session, in order.
    pub autosaves: Vec<PathBuf>,
    /// The interaction profile changes seen.
    pub profile_changes: Vec<String>,
    /// The frame loop's own summary.
    pub summary: String,
}

impl XrReport {
    /// The timing lines `plasticine xr` prints at exit.
    pub fn timing_lines(&self) -> Vec<String> {
        vec![
            format!(
                "main-thread frame time excluding xrWaitFrame: {}",
                self.frame_cpu_wall
            ),
            format!(
                "main-thread CPU time per frame:               {}",
                self.frame_cpu_thread
            ),
            format!(
                "xrLocateViews to xrEndFrame:                  {}",
                self.locate_to_submit
            ),
            format!(
                "renderer wall time (draw, copy, submit):      {}",
                self.render_cpu
            ),
            format!(
                "frame interval (xrWaitFrame's pacing):        {}",
                self.frame_interval
            ),
        ]
    }
}

/// Draws the frame loop's frames into the headset's swapchain.
pub struct HeadsetRenderer<'a> {
    /// The headset whose swapchain the frames go to (shared with the tracker).
    pub headset: &'a RefCell<Headset>,
    /// The scene renderer that draws both eyes.
    pub scene: SceneRenderer,
    /// Read the swapchain image back on the next frame (screenshots, tests).
    pub capture: bool,
    /// The swapchain images read back (left, right), once a capture was asked for.
    pub captured: Option<[RgbaImage; 2]>,
    /// locate → submit of each frame rendered.
    pub locate_to_submit: Vec<Duration>,
    /// Wall time of each frame rendered: drawing and the copy into the swapchain.
    pub render_cpu: Vec<Duration>,
}

impl FrameRenderer for HeadsetRenderer<'_> {
    fn acquire(&mut self) -> Result<(), RenderFailure> {
        Ok(self.headset.borrow_mut().acquire()?)
    }

    fn render(&mut self, inputs: &FrameInputs) -> Result<RenderReport, RenderFailure> {
        let t0 = Instant::now();
        let (views, eye_size, located_at) = {
            let h = self.headset.borrow();
            (
                h.frame_views().ok_or(RenderFailure::NoViews)?,
                h.eye_size(),
                h.views_located_at(),
            )
        };
        let cameras = views.map(|v| v.camera(inputs.vehicle, NEAR, FAR));
        let decorations = decorations(inputs);
        let posture = draw_posture(inputs);
        apply_view(&inputs.view, &mut self.scene.style);
        self.scene.draw_posed(
            inputs.snapshot,
            posture.as_deref(),
            &decorations,
            &cameras,
            StereoMode::SideBySide,
            eye_size,
            None,
            &[],
        );
        let eyes = self
            .scene
            .gpu
            .eye_textures()
            .ok_or(RenderFailure::NoEyeImages)?;
        let h = self.headset.borrow();
        h.copy_eyes(eyes)?;
        let cpu_encode = t0.elapsed();
        if self.capture {
            self.capture = false;
            self.captured = Some(h.read_swapchain()?);
        }
        drop(h);
        let submitted_at = self.headset.borrow_mut().submit()?;
        if let Some(at) = located_at {
            self.locate_to_submit.push(submitted_at - at);
        }
        self.render_cpu.push(cpu_encode);
        Ok(RenderReport {
            cpu_encode,
            submitted_at,
        })
    }
}

/// The status under the left hand's panel: the skin tool's resolution,
/// the simulation's pace, and the latest messages.
fn panel_settings(fl: &FrameLoop, messages: &[String]) -> Vec<String> {
    let t = &fl.toolbox().state;
    let status = fl.sim_status();
    let mut lines = vec![
        String::new(),
        format!("new skins {}x{}", t.skin_resolution.0, t.skin_resolution.1),
        format!(
            "sim at x{:.2} of real time{}",
            status.achieved_ratio,
            if status.paused { " (paused)" } else { "" }
        ),
    ];
    lines.extend(messages.iter().cloned());
    lines
}

/// The main thread's CPU time so far.
#[allow(
    unsafe_code,
    reason = "clock_gettime is the C library's; std has no thread CPU clock"
)]
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if r != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn dead(v: f32) -> f32 {
    if v.abs() < DEAD_ZONE {
        0.0
    } else {
        (v - DEAD_ZONE * v.signum()) / (1.0 - DEAD_ZONE)
    }
}

/// What the hands do besides the tools (see the module documentation).
#[derive(Default)]
struct Controls {
    grab: WorldGrab,
    prev_buttons: [u32; 2],
    prev_trigger: bool,
    prev_squeeze: [bool; 2],
    flicked: bool,
    touching: bool,
    /// The toolbox's count of snapped joints, last seen.
    snaps: u64,
    placed: bool,
    messages: Vec<String>,
    /// The last few messages, shown on the panel.
    recent: Vec<String>,
}

impl Controls {
    fn apply(
        &mut self,
        fl: &mut FrameLoop,
        headset: &RefCell<Headset>,
        placement: Placement,
        dt: f32,
    ) {
        use crate::input::buttons;
        let h = headset.borrow();
        let inputs = h.role_inputs();
        let hands = h.role_hands();
        let head = h.head();
        let tracked = h.tracked();
        let recentre_now = placement == Placement::Front && !self.placed && tracked.head;
        drop(h);
        if recentre_now && let Some((lo, hi)) = snapshot_bounds(&fl.sim().latest()) {
            fl.set_vehicle(recentred(head, lo, hi));
            self.placed = true;
            self.messages.push(format!(
                "recentred: the character ({:.2} m across) at arm's length in front of you, \
                 shown {COMFORTABLE_SIZE} m across",
                (hi - lo).max_element()
            ));
        }
        let down = |now: u32, before: u32, b: u32| now & b != 0 && before & b == 0;
        let buttons = [inputs[0].buttons, inputs[1].buttons];
        // Menu on either hand: the next tool.
        if (0..2).any(|r| down(buttons[r], self.prev_buttons[r], buttons::MENU)) {
            let next = fl.toolbox().tool().next();
            if fl.set_tool(next).is_ok() {
                self.messages.push(format!("tool: {next:?}"));
                headset.borrow().pulse(1, 0.3, Duration::from_millis(30));
            }
        }
        // Vehicle hand's thumbstick click: recentre.
        if placement == Placement::Front
            && down(buttons[0], self.prev_buttons[0], buttons::THUMBSTICK)
            && let Some((lo, hi)) = snapshot_bounds(&fl.sim().latest())
        {
            fl.set_vehicle(recentred(head, lo, hi));
            self.messages.push("recentred".into());
        }
        self.prev_buttons = buttons;
        // Trigger press on the tool hand: a short pulse.
        let trigger = hands[1].0.triggered();
        if trigger && !self.prev_trigger {
            headset.borrow().pulse(1, 0.5, Duration::from_millis(20));
        }
        self.prev_trigger = trigger;
        // Squeeze: grab the world (with the hands tracked).
        let squeezed =
            [0, 1].map(|r| hands[r].1 && inputs[r].squeeze >= crate::input::TRIGGER_PRESSED);
        for r in 0..2 {
            if squeezed[r] && !self.prev_squeeze[r] {
                headset.borrow().pulse(r, 0.3, Duration::from_millis(15));
            }
        }
        self.prev_squeeze = squeezed;
        let positions = [hands[0].0.position(), hands[1].0.position()];
        if let Some(v) = self.grab.update(squeezed, positions, fl.vehicle()) {
            fl.set_vehicle(v);
        } else {
            // Vehicle hand's thumbstick: fly along the gaze, turn about the head.
            let [x, y] = inputs[0].thumbstick.map(dead);
            if x != 0.0 || y != 0.0 {
                let mut forward = head.1 * Vec3::NEG_Z;
                forward.y = 0.0;
                let forward = forward.try_normalize().unwrap_or(Vec3::NEG_Z);
                let fly = Mat4::from_translation(forward * (y * FLY_SPEED * dt));
                let turn = Mat4::from_translation(head.0)
                    * Mat4::from_rotation_y(-x * TURN_SPEED * dt)
                    * Mat4::from_translation(-head.0);
                fl.fly(fly * turn);
            }
        }
        // Tool hand's thumbstick: the tool's parameter.
        let y = dead(inputs[1].thumbstick[1]);
        match fl.toolbox().tool() {
            ToolKind::Liposuction | ToolKind::Paint | ToolKind::Sculpt if y != 0.0 => {
                let state = &mut fl.toolbox_mut().state;
                state.lipo_radius = (state.lipo_radius * (1.0 + y * dt)).clamp(0.01, 0.3);
            }
            ToolKind::Skin if y.abs() > 0.7 && !self.flicked => {
                self.flicked = true;
                let state = &mut fl.toolbox_mut().state;
                let (m, n) = state.skin_resolution;
                state.skin_resolution = if y > 0.0 {
                    ((m * 2).min(128), (n * 2).min(128))
                } else {
                    ((m / 2).max(4), (n / 2).max(4))
                };
                let r = state.skin_resolution;
                self.messages
                    .push(format!("skin resolution {}x{}", r.0, r.1));
            }
            _ => {}
        }
        if y.abs() < 0.3 {
            self.flicked = false;
        }
        // A pulse when the tool tip comes to touch a joint.
        let tip = fl.vehicle().transform_point3(hands[1].0.position());
        let body = PosedBody::new(fl.character(), fl.interactive_posture());
        let scale = fl.vehicle().x_axis.truncate().length().max(1e-6);
        let touching = hands[1].1
            && body
                .joints
                .iter()
                .any(|j| Vec3::from(j.translation).distance(tip) < TOUCH_RADIUS * scale.max(1.0));
        if touching && !self.touching {
            headset.borrow().pulse(1, 0.2, Duration::from_millis(10));
        }
        self.touching = touching;
        // A firmer pulse when a new joint snapped to the mirror plane or a bone axis.
        let snaps = fl.toolbox().state.snaps;
        if snaps > self.snaps {
            headset.borrow().pulse(1, 0.6, Duration::from_millis(25));
        }
        self.snaps = snaps;
        // While the hand pushes a responding skeleton: a pulse as strong as
        // the push's impulse.
        let impulse = fl.sim().status().push_impulse;
        if impulse > 0.0 && super::flesh_push::pushing(inputs[1].buttons) {
            let amplitude = (impulse / PUSH_FULL_IMPULSE).clamp(0.1, 1.0) as f32;
            headset
                .borrow()
                .pulse(1, amplitude, Duration::from_millis(10));
        }
    }
}

/// The push impulse per flesh step (N s) felt at full strength.
const PUSH_FULL_IMPULSE: f64 = 2.0;

/// Runs the headset front end on `character` until the session ends (see
/// the module documentation). Fails with [`XrFrontError::Unavailable`] when
/// there is no headset to run on (the caller may fall back to the desk).
pub fn run_xr(character: Character, options: XrOptions) -> Result<XrReport, XrFrontError> {
    let mut headset = Headset::open(&options.headset).map_err(XrFrontError::Unavailable)?;
    let mut editing = start_editing(character, &options)?;
    let start_revision = editing.fl.history().revision();
    let mut report = XrReport::default();
    let mut cpu = CpuTimes {
        wall: Vec::new(),
        thread: Vec::new(),
    };
    let (mut locate_to_submit, mut render_cpu) = (Vec::new(), Vec::new());
    let mut captured = None;
    // One turn per session: a new one when the runtime comes back after
    // losing the last (`XrOptions::reconnect`).
    let end = loop {
        let scene = SceneRenderer::new(headset.gpu(), EYE_FORMAT)?;
        describe_session(&headset, &scene, &mut report);
        let cell = RefCell::new(headset);
        let mut renderer = HeadsetRenderer {
            headset: &cell,
            scene,
            capture: false,
            captured: None,
            locate_to_submit: Vec::new(),
            render_cpu: Vec::new(),
        };
        let session = run_frames(&cell, &mut renderer, &mut editing, &options, &mut report);
        cpu.wall.extend(session.wall);
        cpu.thread.extend(session.thread);
        let end = record_end(&cell, &mut report);
        locate_to_submit.append(&mut renderer.locate_to_submit);
        render_cpu.append(&mut renderer.render_cpu);
        captured = renderer.captured.take().or(captured);
        // The renderer (its GPU objects) before the headset's session.
        drop(renderer);
        drop(cell);
        let SessionEnd::Lost(lost) = &end else {
            break end;
        };
        let Some(wait) = options.reconnect.filter(|w| !w.is_zero()) else {
            break end;
        };
        // The work first: the runtime may not come back.
        let (saved, _) = editing.save(&options, start_revision);
        println!(
            "the OpenXR session was lost ({lost}); {saved}; waiting up to {:.0} s for the \
             runtime to come back (Ctrl+C to stop)",
            wait.as_secs_f64()
        );
        match reconnect::reopen(&options.headset, wait, options.stop) {
            Some(back) => {
                headset = back;
                report.reconnects += 1;
                println!("the OpenXR runtime is back: a new session goes on with the work");
            }
            None => break end,
        }
    };

    // Save, however it ended.
    let (saved, saved_to) = editing.save(&options, start_revision);
    report.saved = saved;
    report.saved_to = saved_to;
    if let Some(r) = editing.recorder.as_mut() {
        report.recorded = Some(r.finish(editing.fl.history()));
    }

    if let Some(eyes) = captured
        && let Some(dir) = &options.screenshot_eyes
    {
        save_screenshots(eyes, dir, &mut report)?;
    }
    report.locate_to_submit = Stats::of(locate_to_submit);
    report.render_cpu = Stats::of(render_cpu);
    record_timings(&mut report, cpu, &editing.fl);
    if let Some(path) = &options.timings_csv
        && let Err(e) = editing.fl.log().write_csv(path)
    {
        tracing::warn!("timings not saved: {e}");
    }
    drop(editing.fl);
    match end {
        SessionEnd::Lost(e) => Err(XrFrontError::Lost {
            end: e,
            saved: report.saved.clone(),
        }),
        _ => Ok(report),
    }
}

/// The frame loop and what keeps its edits: the autosaver and the session
/// recorder.
struct Editing {
    fl: FrameLoop,
    autosaver: Option<Autosaver>,
    recorder: Option<SessionRecorder>,
}

impl Editing {
    /// Saves the character as a session's end does ([`save_on_exit`]),
    /// edited when the history moved past `start_revision`.
    fn save(&mut self, options: &XrOptions, start_revision: u64) -> (String, Option<PathBuf>) {
        self.fl.sync_skins();
        let edited = self.fl.history().revision() != start_revision;
        save_on_exit(
            options.save_on_exit.as_ref(),
            &self.fl,
            self.autosaver.as_mut(),
            edited,
        )
    }
}

/// Main-thread time per rendered frame: wall and the thread's own CPU.
struct CpuTimes {
    wall: Vec<Duration>,
    thread: Vec<Duration>,
}

/// Writes the session's description (runtime, system, GPU, space, eye
/// size, stereo path) to `report`, and prints it.
fn describe_session(headset: &Headset, scene: &SceneRenderer, report: &mut XrReport) {
    report.runtime = headset.runtime().runtime.clone();
    report.system = headset.runtime().system.clone();
    report.adapter = headset.gpu().summary().to_string();
    report.reference_space = format!("{:?}", headset.reference_space());
    report.eye_size = headset.eye_size();
    report.stereo_path = match scene.gpu.stereo_path() {
        StereoPath::Multiview => "multiview (both eyes in one pass)".into(),
        StereoPath::PerEyePasses(why) => format!("one pass per eye ({why})"),
    };
    println!(
        "OpenXR headset: {}, system '{}', {} space; GPU {}; {}x{} per eye, {}",
        report.runtime,
        report.system,
        report.reference_space,
        report.adapter,
        report.eye_size.0,
        report.eye_size.1,
        report.stereo_path
    );
}

/// Starts the autosaver and the recorder, and the frame loop on
/// `character` with the bake, tool and placement asked for.
fn start_editing(character: Character, options: &XrOptions) -> Result<Editing, XrFrontError> {
    let stem = options
        .document
        .as_deref()
        .and_then(Path::file_stem)
        .and_then(|s| s.to_str())
        .unwrap_or("untitled")
        .to_string();
    let mut autosaver = options
        .autosave_dir
        .as_deref()
        .and_then(|dir| Autosaver::new(dir, &stem, AutosaveSettings::default()).ok());
    let recorder = options
        .record
        .as_deref()
        .map(|path| SessionRecorder::new(path, &character))
        .transpose()?;
    let mut fl = FrameLoop::new(character, options.settings.clone());
    fl.set_undo_budget(options.undo_budget);
    fl.keep_undo_record(options.record.is_some());
    fl.set_panel_anchor(PanelAnchor::LeftHand);
    if let Some(bake) = &options.bake {
        let m = fl.playback_mut().load_bake(bake);
        println!("{m}");
    }
    if let Some(ground) = options.ground {
        let _ = fl
            .sim()
            .send(super::sim_thread::SimMessage::MakeDynamic(ground));
    }
    if let Some(a) = autosaver.as_mut() {
        let _ = a.mark_saved(fl.character(), SystemTime::now());
    }
    if options.tool != ToolKind::Select {
        let _ = fl.set_tool(options.tool);
    }
    if options.placement == Placement::Front
        && let Some((lo, hi)) = snapshot_bounds(&fl.sim().latest())
    {
        // Until the head is tracked: a head standing at the stage origin.
        fl.set_vehicle(recentred(
            (Vec3::new(0.0, 1.6, 0.0), Quat::IDENTITY),
            lo,
            hi,
        ));
    }
    Ok(Editing {
        fl,
        autosaver,
        recorder,
    })
}

/// Runs frames until the session ends: pumps the runtime, applies the
/// hands' controls, renders, relays messages, autosaves and records, and
/// asks the runtime to exit after the last frame or on Ctrl+C.
fn run_frames(
    cell: &RefCell<Headset>,
    renderer: &mut HeadsetRenderer,
    editing: &mut Editing,
    options: &XrOptions,
    report: &mut XrReport,
) -> CpuTimes {
    let mut tracker = HeadsetTracker { headset: cell };
    let fl = &mut editing.fl;
    let mut controls = Controls::default();
    let mut cpu = CpuTimes {
        wall: Vec::new(),
        thread: Vec::new(),
    };
    let mut last_frame: Option<Instant> = None;
    loop {
        if options.stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
            cell.borrow_mut().request_exit();
        }
        let pump = cell.borrow_mut().pump();
        let should_render = match pump {
            Pump::Ended => break,
            Pump::NotRunning => {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Pump::Frame { should_render } => should_render,
        };
        if !should_render {
            if let Err(e) = cell.borrow_mut().skip_frame() {
                tracing::warn!("skipping a frame: {e}");
            }
            report.skipped_frames += 1;
            continue;
        }
        let wall0 = Instant::now();
        let cpu0 = thread_cpu_time();
        let dt = last_frame.map_or(0.0, |t| (wall0 - t).as_secs_f32().min(0.1));
        last_frame = Some(wall0);
        if cell.borrow_mut().take_recentre_request() {
            controls.placed = false;
        }
        controls.apply(fl, cell, options.placement, dt);
        fl.set_panel_status(panel_settings(fl, &controls.recent));
        let last = options.frames.is_some_and(|n| report.frames + 1 >= n);
        if last && options.screenshot_eyes.is_some() {
            renderer.capture = true;
        }
        match fl.frame(&mut tracker, renderer) {
            Ok(_) => {
                report.frames += 1;
                cpu.wall.push(wall0.elapsed());
                cpu.thread.push(thread_cpu_time().saturating_sub(cpu0));
            }
            Err(e) => {
                cell.borrow_mut().abandon_frame();
                if cell.borrow().ended().is_none() {
                    tracing::warn!("{e}");
                }
            }
        }
        relay_messages(cell, fl, &mut controls, report);
        if let Some(a) = editing.autosaver.as_mut() {
            match a.maybe_save(fl.character(), SystemTime::now()) {
                Ok(Some(path)) => report.autosaves.push(path),
                Ok(None) => {}
                Err(e) => tracing::warn!("autosave failed: {e}"),
            }
        }
        if let Some(r) = editing.recorder.as_mut()
            && let Err(e) = r.update(fl.history())
        {
            tracing::warn!("{e}");
        }
        let stopped = options.stop.is_some_and(|s| s.load(Ordering::SeqCst));
        if last || stopped {
            cell.borrow_mut().request_exit();
        }
    }
    cpu
}

/// Prints and reports the interaction profile changes and the frame's
/// messages (a pulse for the panel's), keeping the last two for the panel.
fn relay_messages(
    cell: &RefCell<Headset>,
    fl: &mut FrameLoop,
    controls: &mut Controls,
    report: &mut XrReport,
) {
    for line in cell.borrow_mut().take_profile_changes() {
        println!("{line}");
        report.profile_changes.push(line);
    }
    let panel_messages = fl.take_panel_messages();
    if !panel_messages.is_empty() {
        cell.borrow().pulse(1, 0.4, Duration::from_millis(15));
    }
    controls.messages.extend(panel_messages);
    for line in controls.messages.drain(..) {
        println!("{line}");
        controls.recent.push(line);
    }
    let excess = controls.recent.len().saturating_sub(2);
    controls.recent.drain(..excess);
}

/// How the session ended (a request, if the runtime did not say), with the
/// session states seen and the end written to `report`.
fn record_end(cell: &RefCell<Headset>, report: &mut XrReport) -> SessionEnd {
    let end = cell
        .borrow()
        .ended()
        .cloned()
        .unwrap_or(SessionEnd::Requested);
    // Every session's, in order, when the runtime came back.
    report
        .states
        .extend(cell.borrow().transitions().iter().map(|s| format!("{s:?}")));
    report.ended = end.to_string();
    end
}

/// Saves the character at the session's end: to `save_path` when given,
/// else (if `edited`) as an autosave; returns what happened, for people,
/// and the file saved to.
fn save_on_exit(
    save_path: Option<&PathBuf>,
    fl: &FrameLoop,
    autosaver: Option<&mut Autosaver>,
    edited: bool,
) -> (String, Option<PathBuf>) {
    match (save_path, autosaver) {
        (Some(path), _) => match save_character(path, fl.character()) {
            Ok(()) => (
                format!("the character was saved to {}", path.display()),
                Some(path.clone()),
            ),
            Err(e) => (format!("the character could NOT be saved: {e}"), None),
        },
        (None, Some(a)) if edited => match a.save_now(fl.character(), SystemTime::now()) {
            Ok(path) => (
                format!(
                    "your edits were saved to the autosave {} (open it with --recover)",
                    path.display()
                ),
                Some(path),
            ),
            Err(e) => (format!("your edits could NOT be saved: {e}"), None),
        },
        (None, None) if edited => (
            "your edits were NOT saved: no --save-on-exit file and no autosave directory".into(),
            None,
        ),
        _ => ("nothing to save (no edits)".into(), None),
    }
}

/// Writes the captured eye images as `left.png` and `right.png` in `dir`
/// (created if need be), listing them in `report`.
fn save_screenshots(
    [left, right]: [RgbaImage; 2],
    dir: &Path,
    report: &mut XrReport,
) -> Result<(), XrFrontError> {
    std::fs::create_dir_all(dir).map_err(|e| IoError::os(dir, "create the directory", e))?;
    for (img, name) in [(left, "left.png"), (right, "right.png")] {
        let path = dir.join(name);
        img.save_png(&path)?;
        report.screenshots.push(path);
    }
    Ok(())
}

/// Writes the main thread's frame timings' statistics and the frame
/// loop's summary to `report`.
fn record_timings(report: &mut XrReport, cpu: CpuTimes, fl: &FrameLoop) {
    report.frame_cpu_wall = Stats::of(cpu.wall);
    report.frame_cpu_thread = Stats::of(cpu.thread);
    let summary = fl.log().summary();
    report.frame_interval = summary.frame_interval;
    report.summary = summary.to_string();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dead_zone_is_continuous() {
        assert_eq!(dead(0.1), 0.0);
        assert_eq!(dead(-0.19), 0.0);
        assert!(dead(0.21) > 0.0 && dead(0.21) < 0.02);
        assert!((dead(1.0) - 1.0).abs() < 1e-6 && (dead(-1.0) + 1.0).abs() < 1e-6);
    }
}
