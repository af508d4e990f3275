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
//! undoes and left B redoes, and so does a quick roll of the left hand
//! (counter-clockwise = undo, see [`crate::input::gesture`]). Buttons act on
//! the frame they go down.
//!
//! Picking: a tool first looks for what the tip touches (within
//! [`TOUCH_RADIUS`], or [`SKIN_TOUCH_RADIUS`] for the skin); when it touches
//! nothing, the selection, IK, skin and deformation tools pick the first
//! target along the wand ray (the hand's −z, up to [`RAY_LENGTH`]), so
//! distant parts can be picked by pointing. The sphere and superellipse tools
//! do not: a press in empty space creates a joint at the tip.
//!
//! Gestures per tool:
//!
//! * **Sphere / superellipse** (§6.1): a press in space creates a joint (child
//!   of the current one) with a muscle, a press on a joint edits its muscle,
//!   and a press on a bare joint gives it one ([`Command::AddMuscle`]); the
//!   drag then sets the radius (radii and exponents).
//! * **Deform**: press on or point at a muscle (or its joint; with nothing
//!   there, the current joint's first muscle) and drag. With `h` the
//!   muscle's half-length along its local z and the tip's displacement since
//!   the press `d` taken in the muscle's local frame:
//!   - **bend**: `bend += 2·d.x / h²`, the curvature that deflects the ends
//!     by `d.x` (both ends follow the hand sideways along local x; Barr's
//!     bend is in the xz plane, so local y does nothing);
//!   - **taper**: `taper.x = taper.y += d.z / h²`: pulling towards the +z end
//!     widens it (and narrows the −z end) by `d.z / h` of its width;
//!   - **twist**: `twist += θ / h`, θ the hand's twist about the wand since
//!     the press (clockwise positive): the end of the muscle the wand points
//!     at turns by θ with the hand (whichever end that is).
//!
//!   Each is clamped inside the range that keeps the shape valid
//!   ([`DEFORM_LIMIT`] of it: taper factors positive, the bend short of a
//!   full circle and its centre outside the shape), twist to ±π/h. A
//!   displacement within [`DRAG_DEAD_ZONE`] or a twist within
//!   [`DEFORM_TWIST_DEAD_ZONE`] counts as none.
//! * **IK** (§6.1): grab a joint (touch or point) and drag: the joint stays
//!   attached to the wand as if rigidly held, so moving the hand moves it and
//!   turning the hand turns it by the same rotation (when
//!   [`ToolState::ik_follow_rotation`]); the chain up to the branching joint
//!   follows within its joint limits. Released, the drag is one `SetPosture`.
//! * **Skin** (§6.2): touch a bottom joint then a top joint to create a skin;
//!   right A is the global attach. Touching (or pointing at) the skin selects
//!   that point (and the interior points within
//!   [`ToolState::rebind_radius`]); releasing at (or pointing at) a muscle
//!   re-binds them there ([`Command::SetAttachment`], one undo step): each
//!   selected point's anchor is the muscle surface point nearest the release
//!   point plus that point's offset from the touched one, with the rest
//!   length its current distance to the anchor.
//! * **Liposuction** (§6.3): see [`TWIST_DEAD_ZONE`].
//! * **Weights** (FEM flesh, Capell §4.5): with the trigger held and the
//!   wand twisted like the liposuction tool, paints the region weight of the
//!   bone nearest the tip up (twist one way) or down (the other), a
//!   [`Command::PaintWeights`] stroke per frame of the brush radius, at the
//!   tip carried back to the rest pose by that bone; one undo step per drag.
//!   Under symmetry each stroke is painted mirrored too (see [`Symmetry`]);
//!   a stroke on a bone without a counterpart is painted on its side only
//!   and [`ToolState::notice`] says so.
//!
//! * **Paint**: with the trigger held, paints the panel's paint
//!   colour where the tip touches the skin, a [`Command::PaintStroke`] per
//!   frame of the brush radius (a Gaussian, as liposuction's), moving the
//!   centre's colour [`PAINT_RATE`] of the way per second; touching no skin
//!   but a muscle (the penguin's feet), it paints that muscle whole, a
//!   [`Command::PaintMuscle`] per frame; one undo step per drag, mirrored
//!   under symmetry.
//!
//! Locked parts ([`Command::LockPart`], [`Toolbox::toggle_lock_current`]): a
//! press that would reshape or deform a locked joint's muscle, or give it
//! one, is refused at the press with [`EditError::Locked`]; nothing changes.
//!
//! Twist: tools read the hand's rotation since the press as a rotation vector
//! `ω` (world space) and project it on the wand's axis at the press
//! (`twist`, positive = clockwise looking along the wand, the right-hand
//! rule) and on the hand's lateral x axis (`pitch`). For a rotation about one
//! of these axes this is the exact angle; mixed rotations are split
//! approximately, which is all a hand gesture needs.

mod drag;
mod press;

use super::command::{Command, EditError};
use super::history::History;
use super::pick::{Pick, PickFilter, PickTarget, Picker};
use super::symmetry::Symmetry;
use crate::character::{Character, Posture, SkinMaterial};
use crate::input::{HandState, HistoryGesture, InputFrame, Precision, RollGesture, buttons};
use crate::kinematics::PosedBody;
use crate::kinematics::{IkSettings, IkSolver};
use crate::shape::{BarrDeformation, MuscleShape, Primitive};
use glam::{Quat, Vec2, Vec3};
use std::f32::consts::{FRAC_PI_2, PI};

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
/// How far (m) the wand ray reaches when the tip touches nothing.
pub const RAY_LENGTH: f32 = 20.0;
/// Fraction of each deformation parameter's valid range the deformation
/// tool may reach (the edge of the range is a degenerate shape).
pub const DEFORM_LIMIT: f32 = 0.9;
/// Hand twist (rad) below which the deformation tool does not twist.
pub const DEFORM_TWIST_DEAD_ZONE: f32 = 0.05;
/// A new joint this close (m) to the mirror plane or to the current bone's
/// axis is put exactly on it.
pub const SNAP_DISTANCE: f32 = 0.01;

/// The tools, in the order right B cycles through them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolKind {
    /// Makes the touched or pointed-at joint (or a muscle's joint) the current joint.
    Select,
    /// Sphere muscles (§6.1): a press creates a joint with one, or edits or gives one
    /// to a touched joint; the drag sets the radius.
    Sphere,
    /// Superellipsoid muscles (§6.1), as `Sphere`, the drag also setting the radii
    /// and exponents.
    Superellipse,
    /// Taper, bend and twist of a muscle by dragging (see the module docs).
    Deform,
    /// Poses the character by dragging a joint; its chain follows within its joint
    /// limits (§6.1).
    Ik,
    /// Creates a skin between two touched joints; right A attaches it, and a drag
    /// from the skin to a muscle re-binds its connective tissue (§6.2).
    Skin,
    /// Adds or removes fat where the tip touches the skin, by twisting the wand (§6.3).
    Liposuction,
    /// Paints the FEM flesh's region weights.
    Weights,
    /// Paints colour on the skin where the tip touches it, with the brush
    /// radius, while the trigger is held.
    Paint,
    /// Sculpts the embedded mesh's blendshape target (a grab brush).
    Sculpt,
}

impl ToolKind {
    /// Every tool, in the order right B cycles through them.
    pub const ALL: [ToolKind; 10] = [
        ToolKind::Select,
        ToolKind::Sphere,
        ToolKind::Superellipse,
        ToolKind::Deform,
        ToolKind::Ik,
        ToolKind::Skin,
        ToolKind::Liposuction,
        ToolKind::Weights,
        ToolKind::Paint,
        ToolKind::Sculpt,
    ];

    /// The tool after this one in `ALL`, wrapping around: what right B switches to.
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
    /// Skin tool: points around and rows, (m, n), of a new skin.
    pub skin_resolution: (usize, usize),
    /// Skin tool: material of a new skin, and the connective tissue its attach and
    /// re-bind give.
    pub skin_material: SkinMaterial,
    /// Liposuction Gaussian radius (m) and rate (m of fat per second).
    pub lipo_radius: f32,
    /// Liposuction rate, m of fat per second.
    pub lipo_rate: f32,
    /// Paint tool: the colour it paints (linear RGB), one of [`PALETTE`]'s
    /// unless set otherwise.
    pub paint_color: [f32; 3],
    /// IK drag in progress: the posture to draw (not yet in the history).
    pub preview_posture: Option<Posture>,
    /// The IK tool turns the grabbed joint with the hand (a pose target),
    /// not only moves it.
    pub ik_follow_rotation: bool,
    /// Skin tool: interior points within this distance (m) of the touched
    /// skin point are re-bound with it; 0 re-binds the touched point only.
    pub rebind_radius: f32,
    /// Skin tool re-bind in progress: the skin and its selected points (for
    /// front ends to highlight).
    pub skin_selection: Option<(usize, Vec<usize>)>,
    /// New joints snap to the mirror plane and to the current bone's axis.
    pub snapping: bool,
    /// How many new joints were snapped so far (front ends give feedback,
    /// e.g. a haptic pulse, when it grows).
    pub snaps: u64,
    /// What the gesture could not do as asked, for front ends to show (a
    /// weight stroke under symmetry on a bone without a mirror counterpart,
    /// painted on its side only: [`Symmetry::unmirrored`]); cleared at the
    /// next press.
    pub notice: Option<String>,
    /// The blendshape target the sculpt tool and the panel's weight row
    /// act on.
    pub blend_target: usize,
    /// The FEM flesh's morph target the panel's delete row acts on.
    pub morph_target: usize,
    /// What the sculpt tool's brush does.
    pub sculpt_brush: BrushKind,
}

/// The sculpt tool's brushes ([`crate::tools::SculptBrush`] per frame).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BrushKind {
    /// The mesh near the tip follows it.
    #[default]
    Grab,
    /// The mesh near the tip relaxes toward its neighbours while held.
    Smooth,
    /// The mesh near the tip swells along its normals while held (twisted
    /// counter-clockwise: shrinks).
    Inflate,
}

impl BrushKind {
    /// Every brush, in the order the panel steps through them.
    pub const ALL: [BrushKind; 3] = [BrushKind::Grab, BrushKind::Smooth, BrushKind::Inflate];

    /// The panel's name of the brush.
    pub fn name(self) -> &'static str {
        match self {
            BrushKind::Grab => "grab",
            BrushKind::Smooth => "smooth",
            BrushKind::Inflate => "inflate",
        }
    }
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
            paint_color: PALETTE[0].1,
            preview_posture: None,
            ik_follow_rotation: true,
            rebind_radius: 0.0,
            skin_selection: None,
            snapping: true,
            snaps: 0,
            notice: None,
            blend_target: 0,
            morph_target: 0,
            sculpt_brush: BrushKind::Grab,
        }
    }
}

/// What a tool frame may touch. Everything goes through `history`.
pub struct ToolContext<'a> {
    /// The character the tools edit, only ever through `history`.
    pub character: &'a mut Character,
    /// The edit history every command goes through.
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
    /// Deformation drag on `muscle`.
    Deform {
        muscle: usize,
        press_tip: Vec3,
        press_orientation: Quat,
        /// The muscle's world rotation at the press (local → world).
        frame: Quat,
        /// Half-length along local z and the bound on sqrt(x² + y²) of the
        /// primitive (m), for the mapping and the limits.
        half_length: f32,
        xy_extent: f32,
        start: BarrDeformation,
        open: bool,
        last: MuscleShape,
    },
    Ik {
        joint: usize,
        chain: Vec<usize>,
        press_tip: Vec3,
        press_orientation: Quat,
        /// The joint's world position and rotation at the press.
        grab: Vec3,
        grab_rotation: Quat,
        posture: Posture,
    },
    /// Skin re-bind: the selected points of `skin`, the touched one first.
    Rebind {
        skin: usize,
        points: Vec<usize>,
        /// The touched point's position at the press.
        at: Vec3,
        /// The wand at the latest frame (released where it was).
        hand: HandState,
    },
    Lipo {
        press_orientation: Quat,
        open: bool,
    },
    /// Weight painting (FEM flesh).
    Weights {
        press_orientation: Quat,
        open: bool,
    },
    /// Colour painting; `open` once the drag's first stroke is in the history.
    Paint {
        open: bool,
    },
    /// Sculpting blendshape target `target`: where the tip was at rest
    /// last frame, the hand's orientation at the press (its twist picks
    /// inflate or deflate); `open` once the gesture's first edit is in the
    /// history.
    Sculpt {
        target: usize,
        last: Vec3,
        press_orientation: Quat,
        open: bool,
    },
}

/// The paint tool's colours (name, linear RGB), in the order the panel
/// steps through them.
pub const PALETTE: [(&str, [f32; 3]); 8] = [
    ("black", [0.018, 0.018, 0.022]),
    ("white", [0.80, 0.80, 0.78]),
    ("orange", [0.90, 0.32, 0.02]),
    ("red", [0.60, 0.04, 0.03]),
    ("brown", [0.17, 0.12, 0.08]),
    ("grey", [0.20, 0.20, 0.21]),
    ("blue", [0.03, 0.10, 0.45]),
    ("skin", crate::character::DEFAULT_SKIN_COLOR),
];

/// How far per second a paint drag moves the colour at the brush's centre
/// towards the paint (per frame at 60 Hz, 8/60 of the way): half a second
/// covers a spot.
pub const PAINT_RATE: f32 = 8.0;

/// Region weight painted per second of a weights drag.
pub const WEIGHT_RATE: f32 = 2.0;

/// Sculpt tool, smooth brush: the share of the way to the neighbours' mean
/// a vertex at the brush's centre moves per second (capped at all of it in
/// one frame).
pub const SMOOTH_RATE: f32 = 4.0;

/// Sculpt tool, inflate brush: brush radii the centre's vertices move along
/// their normals per second.
pub const INFLATE_RATE: f32 = 0.25;

/// The stroke that paints the bone nearest `tip` (world, in `posture`): its
/// centre is the tip carried back to the rest pose by that bone. None
/// without bones.
pub fn weight_stroke(
    c: &crate::character::Character,
    posture: &crate::character::Posture,
    tip: Vec3,
    radius: f32,
    amount: f32,
) -> Option<crate::character::WeightStroke> {
    let (bone, centre) = to_rest(c, posture, tip)?;
    Some(crate::character::WeightStroke {
        bone,
        centre,
        radius,
        amount,
    })
}

/// `tip` (world, in `posture`) carried back to the rest pose by the bone
/// nearest it, and that bone; None without bones.
pub fn to_rest(
    c: &crate::character::Character,
    posture: &crate::character::Posture,
    tip: Vec3,
) -> Option<(usize, Vec3)> {
    let bones = crate::fem::skeleton_bones(c);
    let transforms = crate::fem::bone_transforms(c, &bones, posture);
    bones
        .iter()
        .zip(&transforms)
        .enumerate()
        .map(|(b, (bone, t))| {
            let at_rest = t.inverse().transform_point3(tip.as_dvec3());
            (b, at_rest, bone.distance(at_rest))
        })
        .min_by(|x, y| x.2.total_cmp(&y.2))
        .map(|(b, p, _)| (b, p.as_vec3()))
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

/// The primitive's half-length along local z and a bound on sqrt(x² + y²)
/// over it (m).
fn extents(shape: &MuscleShape) -> (f32, f32) {
    match shape.primitive {
        Primitive::Sphere { radius } => (radius, radius),
        Primitive::Superellipsoid { radii, .. } => (radii.z, radii.x.hypot(radii.y)),
    }
}

/// The deformation tool's mapping (module docs): `start` changed by the
/// tip's displacement `d` in the muscle's frame and the hand's twist `twist`
/// (rad), clamped to [`DEFORM_LIMIT`] of the valid range of a primitive of
/// half-length `h` and cross-section bound `xy`.
pub fn deform_drag(
    start: &BarrDeformation,
    d: Vec3,
    twist: f32,
    h: f32,
    xy: f32,
) -> BarrDeformation {
    let h = h.max(1e-4);
    let taper_max = DEFORM_LIMIT / h;
    let dt = d.z / (h * h);
    let taper = Vec2::new(
        (start.taper.x + dt).clamp(-taper_max, taper_max),
        (start.taper.y + dt).clamp(-taper_max, taper_max),
    );
    let twist_max = PI / h;
    let twist = (start.twist + twist / h).clamp(-twist_max, twist_max);
    let widest = 1.0 + taper.x.abs().max(taper.y.abs()) * h;
    let bend_max = DEFORM_LIMIT * (PI / h).min(1.0 / (widest * xy.max(1e-4)));
    let bend = (start.bend + 2.0 * d.x / (h * h)).clamp(-bend_max, bend_max);
    BarrDeformation { taper, twist, bend }
}

/// The tools and the gesture in progress.
#[derive(Clone, Debug)]
pub struct Toolbox {
    kind: ToolKind,
    /// The selection and the tools' settings.
    pub state: ToolState,
    gesture: Gesture,
    previous: Option<InputFrame>,
    solver: IkSolver,
    /// Settings of the IK solver the IK tool drags with.
    pub ik_settings: IkSettings,
    /// Precision mode for the right hand (front ends switch it: a held
    /// button or key).
    pub precision: Precision,
    /// The left hand's undo/redo roll gesture.
    history_gesture: RollGesture,
}

impl Default for Toolbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Toolbox {
    /// A toolbox on the selection tool, with default settings and no gesture in
    /// progress.
    pub fn new() -> Self {
        Self {
            kind: ToolKind::Select,
            state: ToolState::default(),
            gesture: Gesture::Idle,
            previous: None,
            solver: IkSolver::new(),
            ik_settings: IkSettings::default(),
            precision: Precision::default(),
            history_gesture: RollGesture::default(),
        }
    }

    /// The current tool.
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
        // Or the gesture: a quick roll of the left hand (back = undo).
        match self
            .history_gesture
            .update(frame.time, frame.left.orientation())
        {
            Some(HistoryGesture::Undo) => {
                self.release(ctx)?;
                ctx.history.undo(ctx.character).or_else(ignore_empty)?;
                self.fix_selection(ctx.character);
            }
            Some(HistoryGesture::Redo) => {
                self.release(ctx)?;
                ctx.history.redo(ctx.character).or_else(ignore_empty)?;
            }
            None => {}
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
            self.state.skin_selection = None;
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

    /// Locks the current joint's part against edits, or unlocks it (one
    /// undo step, mirrored under symmetry). Returns whether it is now locked.
    /// A gesture in progress ends first.
    pub fn toggle_lock_current(&mut self, ctx: &mut ToolContext) -> Result<bool, EditError> {
        self.release(ctx)?;
        let joint = self.state.current_joint;
        let Some(j) = ctx.character.skeleton.joints.get(joint) else {
            return Err(EditError::NoSuchJoint {
                index: joint,
                count: ctx.character.skeleton.joints.len(),
            });
        };
        let locked = !j.locked;
        ctx.apply(Command::LockPart { joint, locked }, false)?;
        Ok(locked)
    }

    /// What the tip touches (within `radius`), else the first target along
    /// the wand ray.
    fn touch_or_point(
        &self,
        ctx: &ToolContext,
        hand: &HandState,
        radius: f32,
        filter: PickFilter,
    ) -> Option<Pick> {
        let body = PosedBody::new(ctx.character, ctx.history.posture());
        let picker = Picker::new(ctx.character, &body);
        picker
            .pick_near(hand.position(), radius, filter)
            .or_else(|| picker.pick_ray(hand.position(), hand.pointing(), RAY_LENGTH, filter))
    }

    /// The joint the tip touches (with `near`) or, failing that, the wand
    /// points at (with `ray`); a muscle stands for its joint.
    fn touched_or_pointed_joint(
        &self,
        ctx: &ToolContext,
        hand: &HandState,
        near: PickFilter,
        ray: PickFilter,
    ) -> Option<usize> {
        let joint_of = |p: Pick| match p.target {
            PickTarget::Joint(j) => Some(j),
            PickTarget::Muscle(k) => Some(ctx.character.muscles[k].joint),
            PickTarget::SkinPoint { .. } => None,
        };
        self.touched_joint(ctx, hand.position(), near).or_else(|| {
            let body = PosedBody::new(ctx.character, ctx.history.posture());
            let picker = Picker::new(ctx.character, &body);
            picker
                .pick_ray(hand.position(), hand.pointing(), RAY_LENGTH, ray)
                .and_then(joint_of)
        })
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
    /// is on and it is within `SNAP_DISTANCE` of it, and onto the line
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
    /// Index of the frame whose edit was refused.
    pub frame: usize,
    /// That frame's time, s.
    pub time: f64,
    /// The refused edit.
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
