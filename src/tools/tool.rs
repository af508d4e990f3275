//! The interactive tools as state machines over [`InputFrame`]s (LEMAN §5.1,
//! §6.1–6.3).
//!
//! A [`Toolbox`] holds the current tool and the gesture in progress, reads
//! one frame at a time, and changes the character only by handing
//! [`Command`]s to the [`History`]. A gesture (press, drag, release) is one
//! undo step: its first command opens the step with [`History::apply`] and
//! the drag continues it with [`History::apply_continuing`].
//!
//! Hands and buttons: the right hand holds the tool (trigger = press); right
//! B cycles the tools, right A is the skin tool's global "attach"; left A
//! undoes and left B redoes. Buttons act on the frame they go down.
//!
//! Twist: tools read the hand's rotation since the press as a rotation vector
//! `ω` (world space) and project it on the wand's axis at the press
//! (`twist`, positive = clockwise looking along the wand, the right-hand
//! rule) and on the hand's lateral x axis (`pitch`). For a rotation about one
//! of these axes this is the exact angle; mixed rotations are split
//! approximately, which is all a hand gesture needs.

use super::command::{Command, EditError, NewMuscle};
use super::history::History;
use super::pick::{PickFilter, PickTarget, Picker};
use super::symmetry::Symmetry;
use crate::character::{Character, Posture, SkinMaterial};
use crate::input::{InputFrame, Precision, buttons};
use crate::kinematics::ik::{IkSettings, IkSolver, IkTarget, chain_to_branch};
use crate::shape::{MuscleShape, Primitive};
use crate::skin::body::PosedBody;
use glam::{Quat, Vec2, Vec3};
use std::f32::consts::FRAC_PI_2;

/// How close (m) the tip must be to a joint to touch it: a few cm, about the
/// size of the drawn joint ball plus hand tremor.
pub const TOUCH_RADIUS: f32 = 0.03;
/// How close (m) the tip must be to a skin point for the liposuction tool.
pub const SKIN_TOUCH_RADIUS: f32 = 0.05;
/// Radius (m) of the muscle a click without drag creates.
pub const DEFAULT_RADIUS: f32 = 0.03;
/// Tip travel (m) below which a press is a click, not a drag: selecting an
/// existing shape must not resize it.
pub const DRAG_DEAD_ZONE: f32 = 0.005;
/// Smallest radius (m) a drag gives a muscle.
pub const MIN_RADIUS: f32 = 0.005;
/// Superellipse exponents a ±90° hand rotation reaches (§6.1): −90° → 0.2
/// (box-like), 0° → 1 (ellipsoid), +90° → 2 (octahedron), linear on each side.
pub const EXPONENT_RANGE: (f32, f32) = (0.2, 2.0);
/// Twist (rad) below which the liposuction tool neither injects nor removes.
pub const TWIST_DEAD_ZONE: f32 = 0.17;
/// Default skin resolution of the skin tool.
pub const DEFAULT_SKIN_RESOLUTION: (usize, usize) = (16, 16);
/// A new joint this close (m) to the mirror plane or to the current bone's
/// axis is put exactly on it.
pub const SNAP_DISTANCE: f32 = 0.01;

/// The tools, in the order right B cycles through them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolKind {
    Select,
    Sphere,
    Superellipse,
    Ik,
    Skin,
    Liposuction,
}

impl ToolKind {
    pub const ALL: [ToolKind; 6] = [
        ToolKind::Select,
        ToolKind::Sphere,
        ToolKind::Superellipse,
        ToolKind::Ik,
        ToolKind::Skin,
        ToolKind::Liposuction,
    ];

    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|&k| k == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }
}

/// What the tools share: the selection and the tools' settings.
#[derive(Clone, Debug)]
pub struct ToolState {
    /// The selected joint: the parent of the next created joint (§6.1).
    pub current_joint: usize,
    /// The skin the global attach acts on (the last one created).
    pub current_skin: Option<usize>,
    /// Name of the next created joint; a fresh `jointN` when `None`.
    pub next_name: Option<String>,
    /// Skin tool: bottom joint chosen by the first press.
    pub skin_bottom: Option<usize>,
    pub skin_resolution: (usize, usize),
    pub skin_material: SkinMaterial,
    /// Liposuction Gaussian radius (m) and rate (m of fat per second).
    pub lipo_radius: f32,
    pub lipo_rate: f32,
    /// IK drag in progress: the posture to draw (not yet in the history).
    pub preview_posture: Option<Posture>,
    /// New joints snap to the mirror plane and to the current bone's axis.
    pub snapping: bool,
    /// How many new joints were snapped so far (front ends give feedback,
    /// e.g. a haptic pulse, when it grows).
    pub snaps: u64,
}

impl Default for ToolState {
    fn default() -> Self {
        Self {
            current_joint: 0,
            current_skin: None,
            next_name: None,
            skin_bottom: None,
            skin_resolution: DEFAULT_SKIN_RESOLUTION,
            skin_material: SkinMaterial::default(),
            lipo_radius: 0.04,
            lipo_rate: 0.02,
            preview_posture: None,
            snapping: true,
            snaps: 0,
        }
    }
}

/// What a tool frame may touch. Everything goes through `history`.
pub struct ToolContext<'a> {
    pub character: &'a mut Character,
    pub history: &'a mut History,
    /// When set, every edit is mirrored (§6.1 symmetric modelling).
    pub symmetry: Option<&'a Symmetry>,
}

impl ToolContext<'_> {
    /// Applies `cmd` (and its mirror image) as a new step, or as part of the
    /// gesture's step when `continuing`.
    fn apply(&mut self, cmd: Command, continuing: bool) -> Result<(), EditError> {
        let group = match self.symmetry {
            Some(s) => {
                let (a, b) = s.pair(&cmd, self.character, self.history.posture());
                std::iter::once(a).chain(b).collect()
            }
            None => vec![cmd],
        };
        if continuing {
            for c in group {
                self.history.apply_continuing(self.character, c)?;
            }
            Ok(())
        } else {
            self.history.apply_group(self.character, group)
        }
    }
}

/// The gesture in progress.
#[derive(Clone, Debug)]
enum Gesture {
    Idle,
    /// Sphere or superellipse drag on `muscle`.
    Shape {
        muscle: usize,
        /// Centre of the muscle in the world at the press.
        center: Vec3,
        press_tip: Vec3,
        press_orientation: Quat,
        /// Shape at the press (radii/exponents start from it).
        start: MuscleShape,
        /// The gesture's step is open (a command was applied).
        open: bool,
        last: MuscleShape,
    },
    Ik {
        joint: usize,
        chain: Vec<usize>,
        grab_offset: Vec3,
        posture: Posture,
    },
    Lipo {
        press_orientation: Quat,
        open: bool,
    },
}

/// Twist about the wand axis and pitch about the lateral axis (rad) of the
/// hand since the press; see the module docs.
pub fn twist_and_pitch(press: Quat, now: Quat) -> (f32, f32) {
    let mut r = now * press.inverse();
    if r.w < 0.0 {
        r = -r;
    }
    let w = r.to_scaled_axis();
    (w.dot(press * Vec3::NEG_Z), w.dot(press * Vec3::X))
}

/// Hand angle (rad) → superellipse exponent, see [`EXPONENT_RANGE`].
pub fn angle_to_exponent(angle: f32) -> f32 {
    let s = (angle / FRAC_PI_2).clamp(-1.0, 1.0);
    if s < 0.0 {
        1.0 + s * (1.0 - EXPONENT_RANGE.0)
    } else {
        1.0 + s * (EXPONENT_RANGE.1 - 1.0)
    }
}

/// Inverse of [`angle_to_exponent`], so an edit starts from the shape's
/// current exponents.
pub fn exponent_to_angle(e: f32) -> f32 {
    let s = if e < 1.0 {
        (e - 1.0) / (1.0 - EXPONENT_RANGE.0)
    } else {
        (e - 1.0) / (EXPONENT_RANGE.1 - 1.0)
    };
    s.clamp(-1.0, 1.0) * FRAC_PI_2
}

/// The tools and the gesture in progress.
#[derive(Clone, Debug)]
pub struct Toolbox {
    kind: ToolKind,
    pub state: ToolState,
    gesture: Gesture,
    previous: Option<InputFrame>,
    solver: IkSolver,
    pub ik_settings: IkSettings,
    /// Precision mode for the right hand (front ends switch it: a held
    /// button or key).
    pub precision: Precision,
}

impl Default for Toolbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Toolbox {
    pub fn new() -> Self {
        Self {
            kind: ToolKind::Select,
            state: ToolState::default(),
            gesture: Gesture::Idle,
            previous: None,
            solver: IkSolver::new(),
            ik_settings: IkSettings::default(),
            precision: Precision::default(),
        }
    }

    pub fn tool(&self) -> ToolKind {
        self.kind
    }

    /// Switches tool. A gesture in progress ends as if released (an IK drag
    /// is committed, a stroke stays applied).
    pub fn set_tool(&mut self, kind: ToolKind, ctx: &mut ToolContext) -> Result<(), EditError> {
        let r = self.release(ctx);
        self.kind = kind;
        self.state.skin_bottom = None;
        r
    }

    /// Whether a gesture is in progress.
    pub fn busy(&self) -> bool {
        !matches!(self.gesture, Gesture::Idle)
    }

    /// Reads one frame. A refused edit ends the gesture and is returned; the
    /// character is then as the history left it.
    pub fn handle(&mut self, frame: &InputFrame, ctx: &mut ToolContext) -> Result<(), EditError> {
        let filtered = self.precision.apply(frame);
        let frame = &filtered;
        let prev = self.previous.unwrap_or(InputFrame {
            time: frame.time,
            ..InputFrame::default()
        });
        self.previous = Some(*frame);
        let down = |now: u32, before: u32, b: u32| now & b != 0 && before & b == 0;
        let dt = (frame.time - prev.time).max(0.0) as f32;
        // Left hand: undo / redo (a gesture in progress is ended first).
        if down(frame.left.buttons, prev.left.buttons, buttons::A) {
            self.release(ctx)?;
            ctx.history.undo(ctx.character).or_else(ignore_empty)?;
            self.fix_selection(ctx.character);
        }
        if down(frame.left.buttons, prev.left.buttons, buttons::B) {
            self.release(ctx)?;
            ctx.history.redo(ctx.character).or_else(ignore_empty)?;
        }
        if down(frame.right.buttons, prev.right.buttons, buttons::B) {
            self.set_tool(self.kind.next(), ctx)?;
        }
        if down(frame.right.buttons, prev.right.buttons, buttons::A)
            && self.kind == ToolKind::Skin
            && let Some(skin) = self.state.current_skin
        {
            ctx.apply(
                Command::GlobalAttach {
                    skin,
                    band: self.state.skin_material.band,
                },
                false,
            )?;
        }
        let (now, before) = (frame.right.triggered(), prev.right.triggered());
        let result = match (before, now) {
            (false, true) => self.press(frame, ctx),
            (true, true) => self.drag(frame, dt, ctx),
            (true, false) => self.release(ctx),
            (false, false) => Ok(()),
        };
        if result.is_err() {
            self.gesture = Gesture::Idle;
            self.state.preview_posture = None;
        }
        result
    }

    /// Keeps the selection valid after an undo removed joints or skins.
    fn fix_selection(&mut self, c: &Character) {
        if self.state.current_joint >= c.skeleton.joints.len() {
            self.state.current_joint = 0;
        }
        if self.state.current_skin.is_some_and(|s| s >= c.skins.len()) {
            self.state.current_skin = c.skins.len().checked_sub(1);
        }
    }

    fn touched_joint(&self, ctx: &ToolContext, tip: Vec3, filter: PickFilter) -> Option<usize> {
        let body = PosedBody::new(ctx.character, ctx.history.posture());
        let picker = Picker::new(ctx.character, &body);
        match picker.pick_near(tip, TOUCH_RADIUS, filter)?.target {
            PickTarget::Joint(j) => Some(j),
            PickTarget::Muscle(k) => Some(ctx.character.muscles[k].joint),
            PickTarget::SkinPoint { .. } => None,
        }
    }

    /// Where a new joint at `tip` goes: onto the mirror plane when symmetry
    /// is on and it is within [`SNAP_DISTANCE`] of it, and onto the line
    /// continuing the current bone (parent → current joint, beyond the
    /// current joint) when within that distance of it. Both can hold: a
    /// spine grown along the plane.
    pub fn snap(&self, tip: Vec3, ctx: &ToolContext) -> Vec3 {
        let mut p = tip;
        let skeleton = &ctx.character.skeleton;
        let j = self.state.current_joint;
        if let Some(parent) = skeleton.joints.get(j).and_then(|joint| joint.parent) {
            let world = crate::kinematics::forward_kinematics(skeleton, ctx.history.posture());
            let a: Vec3 = world[parent].translation.into();
            let b: Vec3 = world[j].translation.into();
            if let Some(axis) = (b - a).try_normalize() {
                let along = (p - b).dot(axis);
                let on_axis = b + axis * along;
                if along > 0.0 && p.distance(on_axis) < SNAP_DISTANCE {
                    p = on_axis;
                }
            }
        }
        if let Some(s) = ctx.symmetry {
            let n = s.normal.normalize_or(Vec3::X);
            let d = p.dot(n);
            if d.abs() < SNAP_DISTANCE {
                p -= n * d;
            }
        }
        p
    }

    fn new_name(&mut self, c: &Character) -> String {
        if let Some(n) = self.state.next_name.take() {
            return n;
        }
        (c.skeleton.joints.len()..)
            .map(|i| format!("joint{i}"))
            .find(|n| c.skeleton.find(n).is_none())
            .expect("some name is free")
    }

    fn press(&mut self, frame: &InputFrame, ctx: &mut ToolContext) -> Result<(), EditError> {
        let tip = frame.right.position();
        match self.kind {
            ToolKind::Select => {
                if let Some(j) = self.touched_joint(ctx, tip, PickFilter::JOINTS_AND_MUSCLES) {
                    self.state.current_joint = j;
                }
                Ok(())
            }
            ToolKind::Sphere | ToolKind::Superellipse => self.press_shape(frame, ctx),
            ToolKind::Ik => {
                let Some(joint) = self.touched_joint(ctx, tip, PickFilter::JOINTS) else {
                    return Ok(());
                };
                self.state.current_joint = joint;
                let body = PosedBody::new(ctx.character, ctx.history.posture());
                let at: Vec3 = body.joints[joint].translation.into();
                self.gesture = Gesture::Ik {
                    joint,
                    chain: chain_to_branch(&ctx.character.skeleton, joint),
                    grab_offset: at - tip,
                    posture: ctx.history.posture().clone(),
                };
                Ok(())
            }
            ToolKind::Skin => {
                let Some(j) = self.touched_joint(ctx, tip, PickFilter::JOINTS) else {
                    return Ok(());
                };
                match self.state.skin_bottom.take() {
                    None => self.state.skin_bottom = Some(j),
                    Some(bottom) if bottom == j => {} // same joint twice: cancel
                    Some(bottom) => {
                        let (m, n) = self.state.skin_resolution;
                        let name = (ctx.character.skins.len()..)
                            .map(|i| format!("skin{i}"))
                            .find(|s| ctx.character.skins.iter().all(|k| &k.name != s))
                            .expect("some name is free");
                        ctx.apply(
                            Command::AddSkin {
                                name,
                                bottom,
                                top: j,
                                m,
                                n,
                                material: self.state.skin_material,
                            },
                            false,
                        )?;
                        self.state.current_skin = Some(ctx.character.skins.len() - 1);
                    }
                }
                Ok(())
            }
            ToolKind::Liposuction => {
                self.gesture = Gesture::Lipo {
                    press_orientation: frame.right.orientation(),
                    open: false,
                };
                Ok(())
            }
        }
    }

    /// Sphere/superellipse press (§6.1): on a joint with a muscle, edit that
    /// muscle; on a bare joint, select it; in empty space, create a joint
    /// (child of the current one) with a default muscle at the tip.
    fn press_shape(&mut self, frame: &InputFrame, ctx: &mut ToolContext) -> Result<(), EditError> {
        let hand = frame.right.position();
        let tip = if self.state.snapping {
            self.snap(hand, ctx)
        } else {
            hand
        };
        let sphere = self.kind == ToolKind::Sphere;
        let default_shape = if sphere {
            MuscleShape::sphere(DEFAULT_RADIUS)
        } else {
            MuscleShape::superellipsoid(Vec3::splat(DEFAULT_RADIUS), Vec2::ONE)
        };
        let (muscle, open) = match self.touched_joint(ctx, hand, PickFilter::JOINTS) {
            Some(j) => {
                self.state.current_joint = j;
                match ctx.character.muscles.iter().position(|m| m.joint == j) {
                    Some(k) => (k, false),
                    None => return Ok(()),
                }
            }
            None => {
                let name = self.new_name(ctx.character);
                // The primary joint and muscle come first in the step (a
                // mirror image, if any, follows), so they get these indices.
                let (joint, muscle) = (
                    ctx.character.skeleton.joints.len(),
                    ctx.character.muscles.len(),
                );
                ctx.apply(
                    Command::AddJoint {
                        parent: self.state.current_joint,
                        name,
                        position_world: tip,
                        muscle: Some(NewMuscle::centred(default_shape.clone())),
                    },
                    false,
                )?;
                if tip != hand {
                    self.state.snaps += 1;
                }
                self.state.current_joint = joint;
                (muscle, true)
            }
        };
        let body = PosedBody::new(ctx.character, ctx.history.posture());
        let mut start = ctx.character.muscles[muscle].shape.clone();
        if !sphere && let Primitive::Sphere { radius } = start.primitive {
            start.primitive = Primitive::Superellipsoid {
                radii: Vec3::splat(radius),
                exponents: Vec2::ONE,
            };
        }
        self.gesture = Gesture::Shape {
            muscle,
            center: body.muscles[muscle].to_world.translation.into(),
            press_tip: hand,
            press_orientation: frame.right.orientation(),
            last: ctx.character.muscles[muscle].shape.clone(),
            start,
            open,
        };
        Ok(())
    }

    fn drag(
        &mut self,
        frame: &InputFrame,
        dt: f32,
        ctx: &mut ToolContext,
    ) -> Result<(), EditError> {
        let tip = frame.right.position();
        match &mut self.gesture {
            Gesture::Idle => Ok(()),
            Gesture::Shape {
                muscle,
                center,
                press_tip,
                press_orientation,
                start,
                open,
                last,
            } => {
                let moved = tip.distance(*press_tip) > DRAG_DEAD_ZONE;
                let mut shape = start.clone();
                match &mut shape.primitive {
                    Primitive::Sphere { radius } => {
                        if moved {
                            *radius = tip.distance(*center).max(MIN_RADIUS);
                        }
                    }
                    Primitive::Superellipsoid { radii, exponents } => {
                        if moved {
                            // Per-axis radii from the tip's offset in the muscle frame.
                            let body = PosedBody::new(ctx.character, ctx.history.posture());
                            let local = body.muscles[*muscle]
                                .to_local
                                .transform_vector3(tip - *center);
                            *radii = local.abs().max(Vec3::splat(MIN_RADIUS));
                        }
                        let (twist, pitch) =
                            twist_and_pitch(*press_orientation, frame.right.orientation());
                        *exponents = Vec2::new(
                            angle_to_exponent(exponent_to_angle(exponents.x) + pitch),
                            angle_to_exponent(exponent_to_angle(exponents.y) + twist),
                        );
                    }
                }
                if shape == *last {
                    return Ok(());
                }
                let cmd = Command::EditMuscle {
                    muscle: *muscle,
                    shape: shape.clone(),
                };
                ctx.apply(cmd, *open)?;
                *open = true;
                *last = shape;
                Ok(())
            }
            Gesture::Ik {
                joint,
                chain,
                grab_offset,
                posture,
            } => {
                self.solver.solve(
                    &ctx.character.skeleton,
                    posture,
                    *joint,
                    chain,
                    &IkTarget::position(tip + *grab_offset),
                    &self.ik_settings,
                );
                self.state.preview_posture = Some(posture.clone());
                Ok(())
            }
            Gesture::Lipo {
                press_orientation,
                open,
            } => {
                let (twist, _) = twist_and_pitch(*press_orientation, frame.right.orientation());
                if twist.abs() < TWIST_DEAD_ZONE || dt <= 0.0 {
                    return Ok(());
                }
                let body = PosedBody::new(ctx.character, ctx.history.posture());
                let picker = Picker::new(ctx.character, &body);
                let Some(pick) = picker.pick_near(tip, SKIN_TOUCH_RADIUS, PickFilter::SKIN) else {
                    return Ok(());
                };
                let PickTarget::SkinPoint { skin, point } = pick.target else {
                    return Ok(());
                };
                let cmd = Command::FatStroke {
                    skin,
                    center_point: point,
                    radius: self.state.lipo_radius,
                    amount: self.state.lipo_rate * dt * twist.signum(),
                };
                ctx.apply(cmd, *open)?;
                *open = true;
                Ok(())
            }
        }
    }

    /// Ends the gesture; an IK drag becomes one `SetPosture`.
    fn release(&mut self, ctx: &mut ToolContext) -> Result<(), EditError> {
        let gesture = std::mem::replace(&mut self.gesture, Gesture::Idle);
        self.state.preview_posture = None;
        if let Gesture::Ik { posture, .. } = gesture
            && &posture != ctx.history.posture()
        {
            ctx.apply(Command::SetPosture { posture }, false)?;
        }
        Ok(())
    }
}

fn ignore_empty(e: EditError) -> Result<(), EditError> {
    match e {
        EditError::NothingToUndo | EditError::NothingToRedo => Ok(()),
        e => Err(e),
    }
}

/// Why a script stopped.
#[derive(Debug, thiserror::Error)]
#[error("frame {frame} (t = {time} s): {source}")]
pub struct ScriptError {
    pub frame: usize,
    pub time: f64,
    pub source: EditError,
}

/// Feeds every frame to a fresh [`Toolbox`] (starting on the selection tool)
/// and returns the edited character and its history.
pub fn run_script(
    mut character: Character,
    frames: &[InputFrame],
) -> Result<(Character, History), ScriptError> {
    let mut history = History::new(&character);
    let mut tools = Toolbox::new();
    for (i, f) in frames.iter().enumerate() {
        let mut ctx = ToolContext {
            character: &mut character,
            history: &mut history,
            symmetry: None,
        };
        tools.handle(f, &mut ctx).map_err(|source| ScriptError {
            frame: i,
            time: f.time,
            source,
        })?;
    }
    Ok((character, history))
}

#[cfg(test)]
mod tool_tests {
    use super::*;

    #[test]
    fn clockwise_twist_along_the_wand_is_positive() {
        // Wand along −z: clockwise seen from behind the hand is a positive
        // rotation about −z.
        let q = Quat::from_axis_angle(Vec3::NEG_Z, 0.5);
        let (twist, pitch) = twist_and_pitch(Quat::IDENTITY, q);
        assert!((twist - 0.5).abs() < 1e-5 && pitch.abs() < 1e-5);
        // Relative to a turned press orientation, too.
        let press = Quat::from_axis_angle(Vec3::Y, 1.0);
        let (twist, _) = twist_and_pitch(press, press * Quat::from_axis_angle(Vec3::NEG_Z, -0.3));
        assert!((twist + 0.3).abs() < 1e-5);
    }

    #[test]
    fn exponent_mapping_spans_the_range_and_inverts() {
        assert!((angle_to_exponent(-FRAC_PI_2) - 0.2).abs() < 1e-6);
        assert!((angle_to_exponent(0.0) - 1.0).abs() < 1e-6);
        assert!((angle_to_exponent(FRAC_PI_2) - 2.0).abs() < 1e-6);
        assert!((angle_to_exponent(3.0) - 2.0).abs() < 1e-6, "clamped");
        for e in [0.2, 0.5, 1.0, 1.3, 2.0] {
            assert!((angle_to_exponent(exponent_to_angle(e)) - e).abs() < 1e-5);
        }
    }

    #[test]
    fn tool_cycle_visits_every_tool() {
        let mut k = ToolKind::Select;
        for _ in 0..ToolKind::ALL.len() {
            k = k.next();
        }
        assert_eq!(k, ToolKind::Select);
    }
}
