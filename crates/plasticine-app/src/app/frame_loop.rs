//! The per-frame sequence of LEMAN §5.2, made concurrent: the simulation runs
//! on its own thread ([`SimThread`]) and the frame loop never waits for it.
//!
//! Each [`FrameLoop::frame`]:
//!
//! 1. samples tracking;
//! 2. applies the vehicle motion queued by [`VehicleInput::fly`], converts the
//!    hands to world space, lets the toolbar and parameters panel take a
//!    trigger press aimed at it ([`PanelDriver`]), and runs the active tool
//!    on the hands (edits go through the [`History`]; left A/B undo and redo
//!    inside [`Toolbox::handle`]);
//! 3. sends what changed to the simulation: the model when the history's
//!    revision moved (`SetCharacter`, an `Arc` of a copy), the interactive
//!    posture when it moved (`SetPosture`);
//! 4. takes the newest snapshot, whatever its age;
//! 5. samples tracking *again*;
//! 6. renders the snapshot with the second sample's head and hands.
//!
//! So the head and hand latency is the render cost alone (the time from
//! step 5 to the renderer's submission), whatever the solver costs.
//!
//! Between steps 2 and 3 the timeline ([`Playback`], `crates/plasticine-app/src/app/playback.rs`)
//! runs: while it plays it drives the simulation (pause, resolution, the key
//! postures as the skeleton driver), may lay keys down (performance
//! recording), and may give step 4 its own snapshot (the skeleton at the
//! spline posture, or a frame streamed from a bake). Controls:
//! [`FrameLoop::playback_mut`].
//!
//! # Spaces
//!
//! A [`Tracker`] reports the head and the hands in *tracker space* (the room,
//! or the desk's tracking volume). The loop keeps the *vehicle*
//! (`world_from_tracker`, LEMAN §5.1: the left hand flies it, incrementally),
//! and converts every pose to world space with it before anything else sees
//! it: the tools act on world-space hands, and [`FrameInputs`] carries the
//! world-space head and hands (the renderer builds its view from the head) and
//! the vehicle itself (to draw things that live in tracker space, such as the
//! desk or a floor grid). The vehicle is a rigid motion, possibly with a
//! uniform scale.
//!
//! # Data flow
//!
//! The edit side (this loop, on the main thread) owns the model: the
//! [`Character`], its [`History`] and the [`Toolbox`]. The simulation thread
//! owns the skin's dynamic state. Edits flow one way, as messages; the only
//! thing that comes back is the snapshot. Tools that act on the skin (the skin
//! tool's global attach binds skin points to muscles where they lie; the
//! liposuction tool picks skin points) need to see the skin where the user
//! sees it, so before such a tool runs, the loop copies the newest snapshot's
//! skin positions into the edit-side model ([`FrameLoop::sync_skins`]): a copy
//! of simulation state, not an edit, done only when that tool is active and a
//! new snapshot of the same revision has arrived.

pub use super::frame_log::FrameTimings;
use super::frame_log::{FrameLog, flesh_blend_line, flesh_detail_line, flesh_morph_line};
use super::panel_driver::{PanelAnchor, PanelDriver};
use super::playback::{Playback, PlaybackCtl, PlaybackEnv, PlaybackView};
use super::render_failure::{FrameError, RenderFailure};
use super::sim_thread::{SimMessage, SimStatus, SimThread};
use crate::character::{Character, Posture};
use crate::input::LostHands;
use crate::input::{HandState, InputFrame};
pub use crate::input::{TrackedParts, TrackedPose, Tracker};
use crate::render::UiQuad;
use crate::skin::SolverSettings;
use crate::snapshot::SceneSnapshot;
use crate::tools::SKIN_TOUCH_RADIUS;
use crate::tools::{EditError, History, ToolContext, ToolKind, Toolbox};
use crate::tools::{PanelOutcome, Scope, Side, TimelineAction, TimelineStatus};
use crate::tools::{PickFilter, PickTarget, Picker};
use glam::{Mat4, Quat, Vec3};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How near (a fraction of the scrubber's track) a press must be to a key
/// to take hold of it rather than move the playhead: a cell and a half of
/// the 30 its dots are drawn in.
const KEY_REACH: f64 = 0.05;
/// A pull mirrored under symmetry closer than this (m) to itself is on the
/// mirror plane: kept once.
const MIRROR_APART: f32 = 0.01;

/// Everything a renderer needs for one frame.
#[derive(Clone, Copy, Debug)]
pub struct FrameInputs<'a> {
    /// The frame's index, counted from 0 by the frame loop.
    pub frame_index: u64,
    /// The newest simulation snapshot: draw its skins (and, for consistency
    /// with them, its skeleton posture).
    pub snapshot: &'a SceneSnapshot,
    /// The interactive posture on the edit side (the IK drag in progress, or
    /// the working posture): newer than `snapshot.posture`, for drawing the
    /// joints with no simulation lag.
    pub edit_posture: &'a Posture,
    /// Head pose, world space, from the second tracking sample.
    pub head: (Vec3, Quat),
    /// Hands (cursors and wands), world space, from the second tracking sample.
    pub hands: InputFrame,
    /// `world_from_tracker`.
    pub vehicle: Mat4,
    /// Sequence and time of the tracking sample `head` and `hands` come from.
    pub tracking_sequence: u64,
    /// When that tracking sample was taken.
    pub tracking_sampled_at: Instant,
    /// For highlighting: the active tool and the selected joint.
    pub tool: ToolKind,
    /// The selected joint (an index into the skeleton's joints), highlighted when drawn.
    pub current_joint: usize,
    /// Timing and status lines to draw.
    pub overlay: &'a [String],
    /// The toolbar, parameters and timeline panel, world space, when shown.
    pub ui: Option<&'a UiQuad>,
    /// Skin points selected for re-binding (world space), to highlight.
    pub selected_points: &'a [Vec3],
    /// The layers the panel's view rows (or the desk's F keys) show.
    pub view: crate::tools::ViewLayers,
}

/// What the renderer says about a frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RenderReport {
    /// CPU time spent building and encoding the frame.
    pub cpu_encode: Duration,
    /// When the frame was handed to the GPU / compositor.
    pub submitted_at: Instant,
}

/// A renderer: wgpu (desk or headset), an offscreen capture, a test stand-in.
pub trait FrameRenderer {
    /// Gets the frame's render target (a window's next image), which may
    /// wait for the display. Called before the late tracking sample.
    fn acquire(&mut self) -> Result<(), RenderFailure> {
        Ok(())
    }
    /// Draws the frame described by `frame` and says what it cost and when it was submitted; an
    /// `Err` says why the frame was not drawn.
    fn render(&mut self, frame: &FrameInputs) -> Result<RenderReport, RenderFailure>;
}

impl<R: FrameRenderer + ?Sized> FrameRenderer for &mut R {
    fn acquire(&mut self) -> Result<(), RenderFailure> {
        (**self).acquire()
    }
    fn render(&mut self, frame: &FrameInputs) -> Result<RenderReport, RenderFailure> {
        (**self).render(frame)
    }
}

/// The left hand's incremental vehicle control (LEMAN §5.1: a Spaceball on
/// the desk, a thumbstick or grip-drag in a headset).
pub trait VehicleInput {
    /// Moves the vehicle by `delta`, expressed in the vehicle's own frame
    /// (tracker space): `world_from_tracker ← world_from_tracker · delta`.
    /// Takes effect at the next frame, before the tools run.
    fn fly(&mut self, delta: Mat4);
}

/// `pose` (tracker space) in world space.
fn pose_to_world(vehicle: &Mat4, rotation: Quat, pose: (Vec3, Quat)) -> (Vec3, Quat) {
    (
        vehicle.transform_point3(pose.0),
        (rotation * pose.1).normalize(),
    )
}

fn hand_to_world(vehicle: &Mat4, rotation: Quat, hand: &HandState) -> HandState {
    HandState {
        pose: pose_to_world(vehicle, rotation, hand.pose),
        ..*hand
    }
}

/// The frame loop's state: the edit side, the simulation thread, the vehicle.
pub struct FrameLoop {
    character: Character,
    history: History,
    toolbox: Toolbox,
    sim: SimThread,
    vehicle: Mat4,
    pending_fly: Mat4,
    sent_revision: u64,
    sent_posture: Posture,
    /// Snapshot sequence last copied into the edit-side skins.
    synced_sequence: u64,
    frame_index: u64,
    last_frame_start: Option<Instant>,
    log: FrameLog,
    last_edit_error: Option<String>,
    /// The session's solver settings (the parameters panel changes them).
    settings: SolverSettings,
    /// The toolbar and parameters panel.
    panel: PanelDriver,
    /// What the panel's lines were built from (rebuilt when it changes).
    panel_key: Option<String>,
    /// A press was held on the scrubber before this frame, and this frame's
    /// scrubber press is a new one (it may take hold of a key).
    scrub_held: bool,
    scrub_fresh: bool,
    /// The blend weight slider performed while playing: (target, weight).
    blend_drag: Option<(usize, f32)>,
    /// The timeline and its playback modes (`crates/plasticine-app/src/app/playback.rs`).
    playback: Playback,
    /// The right hand's grip on the FEM flesh.
    grabber: super::flesh_grab::FleshGrabber,
    /// The right hand's push on the character.
    pusher: super::flesh_push::FleshPusher,
    /// What the hands let go of when they lost tracking.
    hands_lost: LostHands,
    /// Messages about tracking (a lost controller), for the panel.
    tracking_messages: Vec<String>,
}

impl FrameLoop {
    /// Starts editing `character` and simulating it on a new thread.
    pub fn new(character: Character, settings: SolverSettings) -> Self {
        let history = History::new(&character);
        let sim = SimThread::spawn(character.clone(), settings.clone(), history.revision());
        let mut fl = Self {
            sent_revision: history.revision(),
            sent_posture: character.skeleton.rest_posture(),
            character,
            history,
            toolbox: Toolbox::new(),
            sim,
            vehicle: Mat4::IDENTITY,
            pending_fly: Mat4::IDENTITY,
            synced_sequence: 0,
            frame_index: 0,
            last_frame_start: None,
            log: FrameLog::default(),
            last_edit_error: None,
            settings,
            panel: PanelDriver::default(),
            panel_key: None,
            scrub_held: false,
            scrub_fresh: false,
            blend_drag: None,
            playback: Playback::default(),
            grabber: Default::default(),
            pusher: Default::default(),
            hands_lost: LostHands::default(),
            tracking_messages: Vec::new(),
        };
        fl.send_edits();
        fl
    }

    /// One frame; see the module docs for the sequence.
    pub fn frame(
        &mut self,
        tracker: &mut impl Tracker,
        renderer: &mut impl FrameRenderer,
    ) -> Result<FrameTimings, FrameError> {
        let start = Instant::now();
        let frame_interval = self
            .last_frame_start
            .map_or(Duration::ZERO, |prev| start - prev);
        self.last_frame_start = Some(start);
        let frame_index = self.frame_index;
        self.frame_index += 1;

        // 1. Tracking; a hand the tracker lost presses nothing.
        let mut first = tracker.sample();
        self.release_lost_hands(tracker.tracked(), &mut first);
        // 2. Vehicle, then the active tool on the newest hands.
        self.vehicle *= std::mem::replace(&mut self.pending_fly, Mat4::IDENTITY);
        let input = self.input_to_world(&first.input);
        if matches!(
            self.toolbox.tool(),
            ToolKind::Skin | ToolKind::Liposuction | ToolKind::Paint
        ) || self.panel.panel.scope == Scope::TouchedRegion
        {
            self.sync_skins();
        }
        let input = self.panel_frame(&first, input);
        let symmetry = self.panel.panel.symmetry;
        let mut ctx = ToolContext {
            character: &mut self.character,
            history: &mut self.history,
            symmetry: symmetry.as_ref(),
        };
        match self.toolbox.handle(&input, &mut ctx) {
            Err(e) => {
                tracing::warn!("edit refused: {e}");
                self.last_edit_error = Some(format!("edit refused: {e}"));
            }
            // A later edit that went through clears the message.
            Ok(()) if self.history.revision() != self.sent_revision => {
                self.last_edit_error = None;
            }
            Ok(()) => {}
        }
        // Playback: the timeline, its mode's messages, recorded keys.
        let view = self.update_playback(start);
        // 3. Edits to the simulation, and the hand's grip on the flesh.
        self.send_edits();
        if self.toolbox.tool() != ToolKind::Skin && self.grabber.keep_pressed(&input.right) {
            // A while holding the flesh (the skin tool's A attaches).
            match self.keep_morph_target() {
                Ok(said) => self.toolbox.state.notice = Some(said),
                Err(e) => self.last_edit_error = Some(e),
            }
        }
        if let Some(g) = self.grabber.update(&input.right, &self.sim.latest()) {
            let _ = self.sim.send(SimMessage::Grab(g));
        }
        if let Some(p) = self.pusher.update(&input.right, start) {
            let _ = self.sim.send(SimMessage::Push(p));
        }
        let tools = start.elapsed();
        let status = self.sim.status();
        self.panel.record_live(start, &status, self.log.last());
        let mut overlay = self.log.overlay_lines(&status);
        if let Some(e) = &self.last_edit_error {
            overlay.push(e.clone());
        }
        if let Some(n) = &self.toolbox.state.notice {
            overlay.push(n.clone());
        }
        if self.pusher.is_pushing() {
            overlay.push(format!(
                "push: {:.2} N s on the skeleton this step",
                status.push_impulse
            ));
        }
        if let Some(flesh) = self.sim.latest().flesh.as_deref() {
            overlay.extend(flesh_detail_line(flesh));
            overlay.extend(flesh_morph_line(flesh));
            overlay.extend(flesh_blend_line(flesh));
        }
        // The render target, which may wait for the display: before the
        // late tracking sample, so that wait is not head-to-render latency.
        renderer.acquire().map_err(|reason| FrameError {
            frame_index,
            reason,
        })?;
        // 4. The newest snapshot, whatever its age (or playback's frame).
        let snapshot = view.snapshot.unwrap_or_else(|| self.sim.latest());
        // 5. Tracking again, as late as possible.
        let second = tracker.sample();
        let rotation = self.vehicle_rotation();
        let tool_row = Some(crate::tools::ControlPanel::tool_cell(self.toolbox.tool()).0);
        // The headset shows the timings under the panel (the desk, on its picture).
        let extra = if self.panel.anchor.is_headset() {
            &overlay[..]
        } else {
            &[]
        };
        let panel = self
            .panel
            .view(&second, &self.vehicle, (tool_row, start), extra);
        let selected_points = match &self.toolbox.state.skin_selection {
            Some((skin, points)) => snapshot.skin_points(*skin, points),
            None => Vec::new(),
        };
        let inputs = FrameInputs {
            frame_index,
            snapshot: &snapshot,
            edit_posture: view.posture.as_ref().unwrap_or(self.interactive_posture()),
            head: pose_to_world(&self.vehicle, rotation, second.head),
            hands: self.input_to_world(&second.input),
            vehicle: self.vehicle,
            tracking_sequence: second.sequence,
            tracking_sampled_at: second.sampled_at,
            tool: self.toolbox.tool(),
            current_joint: self.toolbox.state.current_joint,
            overlay: &overlay,
            ui: panel.as_ref(),
            selected_points: &selected_points,
            view: self.panel.panel.view,
        };
        // 6. Render.
        let report = renderer.render(&inputs).map_err(|reason| FrameError {
            frame_index,
            reason,
        })?;
        let timings = FrameTimings {
            frame_index,
            first_tracking_sequence: first.sequence,
            tracking_sequence_used: second.sequence,
            snapshot_sequence: snapshot.sequence,
            sim_time: snapshot.sim_time,
            tools,
            render_cpu: report.cpu_encode,
            tracking_age: report
                .submitted_at
                .saturating_duration_since(second.sampled_at),
            snapshot_age: report
                .submitted_at
                .saturating_duration_since(snapshot.published),
            frame_time: start.elapsed(),
            frame_interval,
        };
        tracing::trace!(?timings, "frame");
        self.log.push(timings);
        Ok(timings)
    }

    fn vehicle_rotation(&self) -> Quat {
        let (_, rotation, _) = self.vehicle.to_scale_rotation_translation();
        rotation
    }

    /// `input` (tracker space) in world space.
    pub fn input_to_world(&self, input: &InputFrame) -> InputFrame {
        let rotation = self.vehicle_rotation();
        InputFrame {
            time: input.time,
            right: hand_to_world(&self.vehicle, rotation, &input.right),
            left: hand_to_world(&self.vehicle, rotation, &input.left),
        }
    }

    /// The posture the user is working in: the IK drag in progress, or the
    /// history's working posture.
    pub fn interactive_posture(&self) -> &Posture {
        self.toolbox
            .state
            .preview_posture
            .as_ref()
            .unwrap_or(self.history.posture())
    }

    /// Keeps the flesh's shape under the grip's pull, at the interactive
    /// posture, as a dynamic morph target (Galoppo §5.2): one undo step.
    /// Under symmetry the pull is mirrored in x = 0 within the same target,
    /// unless it is on the mirror plane (a belly pulled at its middle).
    /// Says what it kept, or why not.
    pub fn keep_morph_target(&mut self) -> Result<String, String> {
        let Some(pull) = self.grabber.pull() else {
            return Err(
                "hold the flesh with the grip (the desk's right mouse button) to keep a target"
                    .into(),
            );
        };
        let Some(fem) = self.character.flesh.fem() else {
            return Err("morph targets shape FEM flesh; this character's is not".into());
        };
        let posture = self.interactive_posture().clone();
        let name = crate::fem::next_name(fem);
        let mut pulls = vec![pull];
        if let Some(sym) = self.panel.panel.symmetry {
            let mirror = crate::fem::Pull {
                at: sym.reflect(pull.at),
                to: sym.reflect(pull.to),
            };
            if mirror.at.distance(pull.at) > MIRROR_APART {
                pulls.push(mirror);
            }
        }
        let target =
            crate::fem::sculpt_target(&self.character, &name, &posture, &pulls, 1.0, Vec::new())
                .map_err(|e| format!("cannot keep a target: {e}"))?;
        let (flesh, added) = crate::fem::with_target(fem, &self.character.skeleton, target);
        let replaced = added.replaced.join(", ");
        self.edit(|_, ctx| {
            ctx.history.apply(
                ctx.character,
                crate::tools::Command::SetFlesh {
                    flesh: crate::character::Flesh::Fem(flesh),
                },
            )
        })
        .map_err(|e| format!("cannot keep a target: {e}"))?;
        self.send_edits();
        let mut said = format!("kept morph target '{name}' at this pose");
        if pulls.len() > 1 {
            said += ", mirrored";
        }
        if !replaced.is_empty() {
            said += &format!(" (replacing {replaced})");
        }
        if added.rest {
            said += ", with 'rest' (the plain flesh at rest) beside it";
        }
        Ok(said)
    }

    /// Sends the model if the history's revision moved and the interactive
    /// posture if it moved. Called by `frame`; call it after editing through
    /// [`edit`](Self::edit) to send at once rather than at the next frame.
    pub fn send_edits(&mut self) {
        if self.history.revision() != self.sent_revision {
            let character = Arc::new(self.character.clone());
            let revision = self.history.revision();
            if self
                .sim
                .send(SimMessage::SetCharacter {
                    character,
                    revision,
                })
                .is_ok()
            {
                self.sent_revision = revision;
            }
        }
        // During playback, playback drives the skeleton (the keys, or an IK
        // drag layered over them).
        if !self.playback.holds_skeleton() && *self.interactive_posture() != self.sent_posture {
            let posture = self.interactive_posture().clone();
            if self
                .sim
                .send(SimMessage::SetPosture(posture.clone()))
                .is_ok()
            {
                self.sent_posture = posture;
            }
        }
    }

    /// Copies the newest snapshot's skin positions into the edit-side model,
    /// when the snapshot shows the current revision and has not been copied
    /// yet. Returns whether anything was copied. Done automatically before
    /// the skin and liposuction tools run; call it before saving to store the
    /// skin where it hangs now.
    pub fn sync_skins(&mut self) -> bool {
        let snap = self.sim.latest();
        if snap.sequence == self.synced_sequence || snap.revision != self.history.revision() {
            return false;
        }
        self.synced_sequence = snap.sequence;
        let mut copied = false;
        for (skin, surface) in self.character.skins.iter_mut().zip(&snap.skins) {
            // A skin simulated at another resolution (SimMessage::Resample)
            // has no point-for-point counterpart: leave it.
            if (skin.m, skin.n) == (surface.m, surface.n)
                && skin.points.position.len() == surface.positions.len()
            {
                skin.points.position.clone_from(&surface.positions);
                copied = true;
            }
        }
        copied
    }

    /// Runs an edit outside the tools (a menu, the parameters panel, a
    /// script) through the history; it reaches the simulation with the next
    /// frame, or at once with [`send_edits`](Self::send_edits).
    pub fn edit<T>(
        &mut self,
        f: impl FnOnce(&mut Toolbox, &mut ToolContext) -> Result<T, EditError>,
    ) -> Result<T, EditError> {
        let symmetry = self.panel.panel.symmetry;
        let mut ctx = ToolContext {
            character: &mut self.character,
            history: &mut self.history,
            symmetry: symmetry.as_ref(),
        };
        f(&mut self.toolbox, &mut ctx)
    }

    /// Switches tool (a gesture in progress ends as if released).
    pub fn set_tool(&mut self, kind: ToolKind) -> Result<(), EditError> {
        self.edit(|tools, ctx| tools.set_tool(kind, ctx))
    }

    /// Shows the toolbar and parameters panel at `anchor`.
    pub fn set_panel_anchor(&mut self, anchor: PanelAnchor) {
        self.panel.set_anchor(anchor);
    }

    /// The toolbar and parameters panel: where it stands, its state and its lines.
    pub fn panel(&self) -> &PanelDriver {
        &self.panel
    }

    /// The panel, to change what it shows (the live plots).
    pub fn panel_mut(&mut self) -> &mut PanelDriver {
        &mut self.panel
    }

    /// Status lines shown under the panel's controls.
    pub fn set_panel_status(&mut self, lines: Vec<String>) {
        self.panel.status = lines;
    }

    /// What the panel's presses (and the playback) did since the last
    /// call, oldest first.
    pub fn take_panel_messages(&mut self) -> Vec<String> {
        let mut m = std::mem::take(&mut self.tracking_messages);
        m.append(&mut self.panel.messages);
        m.append(&mut self.playback.messages);
        m
    }

    /// The session's solver settings.
    pub fn settings(&self) -> &SolverSettings {
        &self.settings
    }

    /// Lets go of what a hand the tracker lost was holding (see
    /// [`LostHands`]), saying so once per loss.
    fn release_lost_hands(&mut self, tracked: TrackedParts, sample: &mut TrackedPose) {
        let newly = self.hands_lost.apply(tracked, &mut sample.input);
        for (side, newly) in ["left", "right"].into_iter().zip(newly) {
            if newly {
                let line = format!(
                    "The {side} controller lost tracking: what it held was let go where it was last seen (undo takes it back)."
                );
                tracing::warn!("{line}");
                self.tracking_messages.push(line);
            }
        }
    }

    /// Acts on a panel row as a press of the wand on `side`, at `fraction`
    /// of the row's width, would.
    pub fn press_panel_row(&mut self, row: usize, side: Side, fraction: f32) {
        // The blend weight slider while the timeline plays and records:
        // performed over the keys, not an edit of the working posture.
        let slider = crate::tools::ControlPanel::rows().get(row)
            == Some(&crate::tools::Row::Param(crate::tools::Param::BlendWeight));
        if slider
            && self.playback.recording
            && self.playback.timeline.is_playing()
            && let Some(w) = crate::tools::slider_value(fraction)
        {
            if self.blend_drag.is_none() {
                self.panel
                    .messages
                    .push("performing the blend weight: keys laid while held".into());
            }
            self.blend_drag = Some((self.toolbox.state.blend_target, w));
            return;
        }
        let symmetry = self.panel.panel.symmetry;
        let mut ctx = ToolContext {
            character: &mut self.character,
            history: &mut self.history,
            symmetry: symmetry.as_ref(),
        };
        let outcome = self.panel.panel.press(
            row,
            side,
            fraction,
            &mut self.toolbox,
            &mut ctx,
            &mut self.settings,
        );
        match outcome {
            Ok(PanelOutcome::Nothing) => {}
            Ok(PanelOutcome::Tool(k)) => self
                .panel
                .messages
                .push(format!("tool: {}", crate::tools::tool_label(k))),
            Ok(PanelOutcome::Settings(m)) => {
                let _ = self
                    .sim
                    .send(SimMessage::SetSettings(self.settings.clone()));
                self.panel.messages.push(m);
            }
            Ok(PanelOutcome::Edited(m) | PanelOutcome::ToolSetting(m) | PanelOutcome::View(m)) => {
                self.panel.messages.push(m);
            }
            Ok(PanelOutcome::Timeline(action)) => self.timeline_action(action),
            Err(e) => {
                tracing::warn!("panel: {e}");
                self.last_edit_error = Some(format!("panel: {e}"));
            }
        }
        self.panel_key = None;
    }

    /// What the panel's timeline rows show.
    fn timeline_status(&self) -> TimelineStatus {
        use crate::anim::Transport;
        let tl = &self.playback.timeline;
        let keys = &self.character.key_postures;
        let range = tl.range(keys).unwrap_or((0.0, tl.extent.max(0.0)));
        TimelineStatus {
            time: tl.time,
            range,
            transport: match tl.transport {
                Transport::Stopped => "editing",
                Transport::Playing => "playing",
                Transport::Paused => "paused",
            }
            .into(),
            mode: tl.mode.label().into(),
            looping: tl.looping,
            keys: keys.iter().map(|k| k.time).collect(),
            selected: tl.selected_index(keys),
            selected_tcb: tl
                .selected_index(keys)
                .map(|i| [keys[i].tension, keys[i].continuity, keys[i].bias]),
            auto_resolution: self.playback.auto_resolution,
            performing: self.playback.recording,
            perform_every: self.playback.record_every,
            blend: match tl.transport {
                Transport::Stopped => self.interactive_posture().blend.clone(),
                _ => crate::anim::sample_posture(keys, tl.time as f32)
                    .map(|p| p.blend)
                    .unwrap_or_default(),
            },
            blend_curve: crate::tools::blend_curve(
                &self.character,
                self.toolbox.state.blend_target,
                range,
            ),
        }
    }

    /// Runs a timeline row's action on the playback; its messages reach
    /// the panel's through [`take_panel_messages`](Self::take_panel_messages).
    fn timeline_action(&mut self, action: TimelineAction) {
        let status = self.timeline_status();
        let fresh = self.scrub_fresh;
        let mut p = self.playback_mut();
        match action {
            TimelineAction::Seek(f) => {
                let (a, b) = status.range;
                // The row's fraction to the drawn track's, so the playhead
                // lands under the wand and a press on a dot finds its key.
                let t = a + (b - a) * f64::from(super::panel_ui::track_fraction(f));
                // A press on a key's dot takes hold of it; the held key
                // follows the wand, else the playhead does.
                if p.holding_key() {
                    p.drag_key_to(t);
                } else if !(fresh && p.grab_key(t, KEY_REACH * (b - a))) {
                    p.seek(t);
                }
            }
            TimelineAction::Stop => {
                p.stop();
            }
            TimelineAction::TogglePlay => {
                p.toggle_play();
            }
            TimelineAction::PreviousMode => {
                let all = crate::anim::PlaybackMode::ALL;
                let i = all
                    .iter()
                    .position(|&m| m == p.timeline().mode)
                    .unwrap_or(0);
                p.set_mode(all[(i + all.len() - 1) % all.len()]);
            }
            TimelineAction::NextMode => {
                p.cycle_mode();
            }
            TimelineAction::Lengthen(dt) => {
                let end = (p.timeline().extent.max(status.range.1) + dt).max(0.0);
                p.set_extent(end);
            }
            TimelineAction::ToggleLoop => {
                p.toggle_loop();
            }
            TimelineAction::DeleteKey => {
                p.delete_selected_key();
            }
            TimelineAction::StoreKey => {
                p.store_key();
            }
            TimelineAction::PreviousKey => {
                p.select_previous_key();
            }
            TimelineAction::NextKey => {
                p.select_next_key();
            }
            TimelineAction::MoveKey(dt) => {
                p.move_selected_key(dt);
            }
            TimelineAction::Tcb(d) => match status.selected_tcb {
                Some(v) => {
                    let n = [0, 1, 2].map(|i| (v[i] + d[i]).clamp(-1.0, 1.0));
                    p.set_selected_key_tcb(n[0], n[1], n[2]);
                }
                None => {
                    p.playback.messages.push("no key selected".into());
                }
            },
            TimelineAction::SetTcb {
                index,
                value,
                continuing,
            } => match status.selected_tcb {
                Some(mut v) => {
                    v[index.min(2)] = value.clamp(-1.0, 1.0);
                    p.drag_selected_key_tcb(v, continuing);
                }
                None => {
                    p.playback.messages.push("no key selected".into());
                }
            },
            TimelineAction::ToggleAutoResolution => {
                p.set_auto_resolution(!status.auto_resolution);
            }
            TimelineAction::ScalePerformInterval(k) => {
                let every = (status.perform_every * k).clamp(1.0 / 64.0, 4.0);
                p.set_record_every(every);
            }
            TimelineAction::TogglePerform => {
                p.set_recording(!status.performing);
            }
        }
    }

    /// The panel's part of step 2: rebuild its lines when what they show
    /// changed, note the skin point the tip touches (the region scope), and
    /// take a press aimed at a row. Returns what the tools get.
    fn panel_frame(&mut self, sample: &TrackedPose, input: InputFrame) -> InputFrame {
        if self.panel.anchor == PanelAnchor::Hidden {
            return input;
        }
        if self.panel.panel.scope == Scope::TouchedRegion {
            let body =
                crate::kinematics::PosedBody::new(&self.character, self.interactive_posture());
            let picker = Picker::new(&self.character, &body);
            let tip = input.right.position();
            let radius = SKIN_TOUCH_RADIUS * self.vehicle.x_axis.truncate().length();
            if let Some(pick) = picker.pick_near(tip, radius, PickFilter::SKIN)
                && let PickTarget::SkinPoint { skin, point } = pick.target
                && self.panel.panel.touched != Some((skin, point))
            {
                self.panel.panel.touched = Some((skin, point));
                self.panel_key = None;
            }
        }
        let t = &self.toolbox;
        let timeline = self.timeline_status();
        let key = format!(
            "{} {:?} {:?} {:?} {} {} {} {:?} {} {} {:?} {} {:?}",
            self.history.revision(),
            t.tool(),
            self.panel.panel.scope,
            self.panel.panel.touched,
            t.state.lipo_radius,
            t.state.snapping,
            t.precision.enabled,
            self.settings.integrator,
            self.settings.tolerances.position,
            self.settings.time_ratio,
            // The desk's F keys change the view rows without a press.
            self.panel.panel.view,
            // The blend rows: the chosen target, and the weights shown
            // (they move while playing).
            self.toolbox.state.blend_target,
            timeline.blend,
        );
        if self.panel_key.as_deref() != Some(key.as_str()) {
            self.panel.lines =
                self.panel
                    .panel
                    .lines(&self.toolbox, &self.character, &self.settings, &timeline);
            self.panel_key = Some(key);
        }
        // The timeline rows move while playing: refreshed every frame.
        for (i, line) in crate::tools::ControlPanel::timeline_lines(&timeline) {
            if let Some(l) = self.panel.lines.get_mut(i) {
                *l = line;
            }
        }
        let (press, input) = self.panel.before_tools(sample, input, self.toolbox.busy());
        self.scrub_fresh = !self.scrub_held;
        self.scrub_held = self.panel.scrubbing();
        if let Some(hit) = press {
            self.press_panel_row(hit.row, hit.side, hit.fraction);
        }
        if !self.scrub_held {
            // The trigger let go of a held key or slider: its drag is one
            // undo step.
            self.playback_mut().release_key();
            self.panel.panel.release();
            self.blend_drag = None;
        }
        input
    }

    /// The character being edited: the edit side's model.
    pub fn character(&self) -> &Character {
        &self.character
    }

    /// The timeline and playback state.
    pub fn playback(&self) -> &Playback {
        &self.playback
    }

    /// The timeline's controls (play, modes, seek, keys): see
    /// [`PlaybackCtl`]. Changes reach the simulation at the next frame.
    pub fn playback_mut(&mut self) -> PlaybackCtl<'_> {
        PlaybackCtl {
            playback: &mut self.playback,
            env: PlaybackEnv {
                character: &mut self.character,
                history: &mut self.history,
                sim: &self.sim,
                settings: &self.settings,
                drag: self.toolbox.state.preview_posture.as_ref(),
                blend_drag: self.blend_drag,
                sent_posture: &mut self.sent_posture,
            },
        }
    }

    /// Runs playback for the frame starting at `now` (called by `frame`).
    fn update_playback(&mut self, now: Instant) -> PlaybackView {
        let PlaybackCtl { playback, mut env } = self.playback_mut();
        playback.update(now, &mut env)
    }

    /// The edit history: undo, redo, revisions and the working posture.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Bounds the undo data to `bytes` (the oldest edits are forgotten
    /// past it; see [`History::set_budget`]).
    pub fn set_undo_budget(&mut self, bytes: usize) {
        self.history.set_budget(bytes);
    }

    /// Whether edits past the undo budget stay in the history's record (a
    /// session being recorded needs them; see [`History::keep_record`]).
    pub fn keep_undo_record(&mut self, keep: bool) {
        self.history.keep_record(keep);
    }

    /// The tools: which one is active and its state.
    pub fn toolbox(&self) -> &Toolbox {
        &self.toolbox
    }

    /// Tool settings (skin resolution, liposuction rate, IK settings...).
    pub fn toolbox_mut(&mut self) -> &mut Toolbox {
        &mut self.toolbox
    }

    /// The simulation thread: send it settings, pause it, read its status.
    pub fn sim(&self) -> &SimThread {
        &self.sim
    }

    /// The simulation thread's current status (simulated time, speed, paused, messages).
    pub fn sim_status(&self) -> SimStatus {
        self.sim.status()
    }

    /// `world_from_tracker`.
    pub fn vehicle(&self) -> Mat4 {
        self.vehicle
    }

    /// Puts the vehicle somewhere (e.g. "reset view").
    pub fn set_vehicle(&mut self, world_from_tracker: Mat4) {
        self.vehicle = world_from_tracker;
        self.pending_fly = Mat4::IDENTITY;
    }

    /// The timings of the recent frames.
    pub fn log(&self) -> &FrameLog {
        &self.log
    }

    /// The last edit the tools had refused, as shown in the overlay.
    pub fn last_edit_error(&self) -> Option<&str> {
        self.last_edit_error.as_deref()
    }

    /// Clears the refused-edit message, so the overlay no longer shows it.
    pub fn clear_edit_error(&mut self) {
        self.last_edit_error = None;
    }
}

impl VehicleInput for FrameLoop {
    fn fly(&mut self, delta: Mat4) {
        self.pending_fly *= delta;
    }
}

#[cfg(test)]
mod tests;
