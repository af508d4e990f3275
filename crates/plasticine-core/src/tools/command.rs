//! The edits a tool can make ([`Command`]) and why one is refused
//! ([`EditError`]); `apply.rs` applies them and takes them back.
//!
//! Every command is checked completely before the character is touched, so a
//! refused command leaves it exactly as it was, and `apply` returns the
//! *inverse data* that `revert` needs to restore the previous state bit for
//! bit. Inverses record only what the command touched (an old shape, the old
//! fat of the touched points, the removed joints with their indices): an edit
//! made every frame (a liposuction stroke) then costs memory in proportion to
//! its footprint, and undoing it restores only those values, so it does not
//! rewind the skin's simulated motion the way a whole-character snapshot would.

use crate::character::{Band, BandDefaults, Character, Dof, Flesh, Posture, WeightStroke};
use crate::kinematics::forward_kinematics;
use crate::shape::MuscleShape;
use glam::{Affine3A, Quat, Vec2, Vec3};
use serde::{Deserialize, Serialize};

pub use crate::anim::KEY_TIME_EPSILON;

/// A fat stroke's Gaussian is cut off at this many radii: points farther away
/// are left exactly as they were (the weight there is below 1.1 %).
pub const FAT_STROKE_CUTOFF: f32 = 3.0;

/// The muscle created with a new joint (LEMAN §6.1: each shape tool's click
/// creates a joint and its muscle together), placed in the joint's frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMuscle {
    /// The muscle's implicit solid, with its Barr deformation at rest.
    pub shape: MuscleShape,
    /// Placement of the muscle's frame in the joint's frame, m; zero when omitted.
    #[serde(default)]
    pub offset: Vec3,
    /// Rotation of the muscle's frame in the joint's frame; the identity when omitted.
    #[serde(default)]
    pub rotation: Quat,
}

impl NewMuscle {
    /// The sphere tool's muscle, centred on the joint.
    pub fn sphere(radius: f32) -> Self {
        Self::centred(MuscleShape::sphere(radius))
    }

    /// The superellipse tool's muscle, centred on the joint.
    pub fn superellipsoid(radii: Vec3, exponents: Vec2) -> Self {
        Self::centred(MuscleShape::superellipsoid(radii, exponents))
    }

    /// A muscle of the given shape centred on the joint, not rotated.
    pub fn centred(shape: MuscleShape) -> Self {
        Self {
            shape,
            offset: Vec3::ZERO,
            rotation: Quat::IDENTITY,
        }
    }
}

/// One undoable edit of a [`Character`]. Serializable, so a modelling session
/// is a list of commands that can be recorded, replayed and used as a test.
///
/// Joint positions are world positions in the *working posture* (the one the
/// animator sees, kept by [`super::History`]), because that is where the
/// tracked hand is when the tool clicks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Command {
    /// Shape tool click (§6.1): a new joint, child of `parent`, at
    /// `position_world`, with zero angles and no rest rotation (its frame is
    /// parallel to its parent's), and optionally its muscle. Names are unique.
    AddJoint {
        /// Index of the parent joint.
        parent: usize,
        /// Name of the new joint: not blank, and unique in the skeleton.
        name: String,
        /// Where the joint goes, in world space in the working posture, m.
        position_world: Vec3,
        /// The muscle created with the joint, if any.
        #[serde(default)]
        muscle: Option<NewMuscle>,
    },
    /// Shape tool press on a bare joint (§6.1): gives an existing joint a
    /// muscle (appended to the character's muscles), placed in its frame.
    AddMuscle {
        /// Index of the joint that gets the muscle.
        joint: usize,
        /// The muscle, placed in the joint's frame.
        muscle: NewMuscle,
    },
    /// Shape tool drag (§6.1): new size, exponents or Barr deformation.
    EditMuscle {
        /// Index of the muscle to reshape.
        muscle: usize,
        /// Its new shape: size, exponents and Barr deformation.
        shape: MuscleShape,
    },
    /// Moves a joint to `position_world` by changing its rest offset. Its
    /// muscles and skin boundaries move with it; its children move with it
    /// too unless `keep_children`, which leaves them where they are in the
    /// world (their offsets are corrected).
    MoveJoint {
        /// Index of the joint to move.
        joint: usize,
        /// Its new position, in world space in the working posture, m.
        position_world: Vec3,
        /// Leave the children where they are in the world instead of moving them along.
        #[serde(default)]
        keep_children: bool,
    },
    /// Removes a joint with its subtree and their muscles. Refused for the
    /// root, when a skin hangs from or wraps the subtree, and when a muscle
    /// outside it has a deformation driver on a joint inside it.
    DeleteJoint {
        /// Index of the joint whose subtree is removed.
        joint: usize,
    },
    /// Joint limits panel: the three DOFs of a joint.
    SetDofs {
        /// Index of the joint.
        joint: usize,
        /// Its new DOFs about local x, y and z (free or not, with limits in rad).
        dofs: [Dof; 3],
    },
    /// Locks (or frees) all three DOFs of a joint, keeping their limits, so
    /// IK drags leave it alone (§6.1).
    SetLocked {
        /// Index of the joint.
        joint: usize,
        /// `true` locks its three DOFs, `false` frees them.
        locked: bool,
    },
    /// Locks (or unlocks) a part against accidental edits: while locked,
    /// the joint cannot be moved, nor deleted (alone or with an ancestor's
    /// subtree), and its muscles cannot be reshaped, deformed or added to.
    /// Adding a child joint, moving an ancestor (the part goes along
    /// rigidly), posing and the joint limits stay allowed.
    LockPart {
        /// Index of the joint whose part (its placement and muscles) is locked.
        joint: usize,
        /// `true` locks the part, `false` unlocks it.
        locked: bool,
    },
    /// The result of an IK drag (§6.1): the new working posture.
    SetPosture {
        /// The new working posture.
        posture: Posture,
    },
    /// Skin attachment tool (§6.2): a new skin between `bottom` and `top`,
    /// wrapped around the muscles on the path between them in the working
    /// posture ([`wrap_skin`](crate::skin::wrap_skin)).
    AddSkin {
        /// Name of the new skin.
        name: String,
        /// Index of the joint the skin's bottom row is fixed to.
        bottom: usize,
        /// Index of the joint the skin's top row is fixed to.
        top: usize,
        /// Points around the skin (the grid is periodic around).
        m: usize,
        /// Rows of points, from bottom to top.
        n: usize,
        /// The new skin's material and connective tissue defaults; the default when omitted.
        #[serde(default)]
        material: crate::character::SkinMaterial,
    },
    /// Removes a skin; the skins after it move down one index.
    DeleteSkin {
        /// Index of the skin to remove.
        skin: usize,
    },
    /// The global "attach" command (§6.2, [`global_attach`](crate::skin::global_attach)) in the working
    /// posture: replaces every band of the skin.
    GlobalAttach {
        /// Index of the skin to attach.
        skin: usize,
        /// Spring and damping constants of the new bands; the defaults when omitted.
        #[serde(default)]
        band: BandDefaults,
    },
    /// Skin attachment tool adjusting one point's connective tissue (§6.2);
    /// `None` removes it.
    SetAttachment {
        /// Index of the skin.
        skin: usize,
        /// Grid index of the point, which must not be on a boundary row.
        point: usize,
        /// The point's new connective tissue, or `None` to remove it.
        band: Option<Band>,
    },
    /// Liposuction tool (§6.3): adds `amount` metres of fat at the touched
    /// point, falling off as a Gaussian `exp(−d²/(2 radius²))` of the
    /// Euclidean distance `d` (metres, in the skin's current positions) from
    /// it, cut off at [`FAT_STROKE_CUTOFF`] radii. `radius` is in metres, not
    /// grid cells, so a stroke does the same thing at any skin resolution.
    /// Negative amounts remove fat; thickness never goes below 0.
    FatStroke {
        /// Index of the skin.
        skin: usize,
        /// Grid index of the touched point, the centre of the stroke.
        center_point: usize,
        /// Radius of the Gaussian, m (positive).
        radius: f32,
        /// Fat added at the centre point, m; negative removes fat.
        amount: f32,
    },
    /// Paint tool: blends the skin's colour towards `color` at
    /// the touched point by `strength` (0..=1), falling off like
    /// [`Command::FatStroke`] as a Gaussian of `radius` metres (in the
    /// skin's current positions), cut off at [`FAT_STROKE_CUTOFF`] radii.
    /// The first stroke on an unpainted skin paints it in
    /// [`crate::character::DEFAULT_SKIN_COLOR`] first.
    PaintStroke {
        /// Index of the skin.
        skin: usize,
        /// Grid index of the touched point, the centre of the stroke.
        center_point: usize,
        /// Radius of the Gaussian, m (positive).
        radius: f32,
        /// Linear RGB painted, each channel in [0, 1].
        color: [f32; 3],
        /// How far the centre point goes towards `color` (0..=1).
        strength: f32,
    },
    /// Paint tool on a muscle (the tip inside it, touching no skin): blends
    /// the muscle's colour towards `color` by `strength` (0..=1), from
    /// [`crate::character::DEFAULT_MUSCLE_COLOR`] where it is unpainted.
    PaintMuscle {
        /// Index of the muscle.
        muscle: usize,
        /// Linear RGB painted, each channel in [0, 1].
        color: [f32; 3],
        /// How far the muscle's colour goes towards `color` (0..=1).
        strength: f32,
    },
    /// Parameters panel: material of the points in `region` (all when
    /// `None`). Each field left `None` is unchanged. Densities are per unit
    /// u-area as in [`crate::character::SkinPoints`]; `stretch` sets
    /// η = (s, s/2, s) as [`wrap_skin`](crate::skin::wrap_skin) does.
    SetSkinMaterial {
        /// Index of the skin.
        skin: usize,
        /// Grid indices of the points to change; every point of the skin when `None`.
        #[serde(default)]
        region: Option<Vec<usize>>,
        /// Stretching elasticity `s`, N/m.
        #[serde(default)]
        stretch: Option<f32>,
        /// Damping per unit area, N·s/m³.
        #[serde(default)]
        damping: Option<f32>,
        /// Mass per unit area, kg/m² (positive).
        #[serde(default)]
        mass: Option<f32>,
        /// Bending rigidity ξ, J.
        #[serde(default)]
        bend: Option<f32>,
        /// Connective tissue: the spring constant `k_s` (per unit u-area) of
        /// the bands of the region's attached points; unattached points are
        /// left alone.
        #[serde(default)]
        band_stiffness: Option<f32>,
    },
    /// Parameters panel: the character's environment. Each field left
    /// `None` is unchanged.
    SetEnvironment {
        /// Acceleration of gravity, m/s².
        #[serde(default)]
        gravity: Option<Vec3>,
        /// Global damping factor γ, 1/s.
        #[serde(default)]
        global_damping: Option<f32>,
    },
    /// Timeline (LEMAN §6.4): stores `posture` as the key posture at `time`
    /// (seconds, ≥ 0) with the given Kochanek–Bartels parameters (each in
    /// [−1, 1]), replacing the key within [`KEY_TIME_EPSILON`] of it if there
    /// is one; the keys stay sorted by time.
    SetKey {
        /// Time of the key, s.
        time: f32,
        /// The posture stored as the key.
        posture: Posture,
        /// Kochanek–Bartels tension at the key; 0 when omitted.
        #[serde(default)]
        tension: f32,
        /// Kochanek–Bartels continuity at the key; 0 when omitted.
        #[serde(default)]
        continuity: f32,
        /// Kochanek–Bartels bias at the key; 0 when omitted.
        #[serde(default)]
        bias: f32,
    },
    /// Timeline: moves the key at `from` to time `to` (≥ 0), re-sorting the
    /// keys; refused when another key lies within [`KEY_TIME_EPSILON`] of `to`.
    MoveKey {
        /// Time of the key to move, s.
        from: f32,
        /// New time of the key, s.
        to: f32,
    },
    /// Timeline: removes the key at `time`.
    DeleteKey {
        /// Time of the key to remove, s.
        time: f32,
    },
    /// Timeline: the Kochanek–Bartels tension, continuity and bias of the key
    /// at `time` (each in [−1, 1]).
    SetKeyTcb {
        /// Time of the key, s.
        time: f32,
        /// New Kochanek–Bartels tension of the key.
        tension: f32,
        /// New Kochanek–Bartels continuity of the key.
        continuity: f32,
        /// New Kochanek–Bartels bias of the key.
        bias: f32,
    },
    /// The flesh backend: kinematic muscles or FEM flesh with its
    /// settings.
    SetFlesh {
        /// The new flesh backend, with its settings.
        flesh: Flesh,
    },
    /// Paints the FEM flesh's region weights (Capell §4.5): appends a stroke,
    /// applied after the earlier ones. Refused for kinematic flesh.
    PaintWeights {
        /// The stroke to append: its bone, centre at rest, radius and amount.
        stroke: WeightStroke,
    },
    /// Blendshapes (Ma et al.): a new target of the FEM flesh's embedded
    /// mesh, a copy of its base, named `name`; every posture that weights
    /// the targets gets a 0 for it. Refused without an embedded mesh or for
    /// a name in use.
    AddBlendTarget {
        /// The target's name.
        name: String,
    },
    /// Sculpt tool: reshapes blendshape target `target` near `centre`
    /// (rest space) with `brush`, each vertex by a Gaussian falloff of its
    /// distance from `centre` in units of `radius`.
    SculptBlendTarget {
        /// Index of the target.
        target: usize,
        /// The brush's centre at rest, m.
        centre: Vec3,
        /// The brush's radius, m.
        radius: f32,
        /// What the brush does.
        brush: SculptBrush,
    },
}

/// What one frame of a sculpt brush does to a blendshape target, at full
/// strength at its centre (less by the falloff away from it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum SculptBrush {
    /// The vertices follow the tip: moved by `offset` (m, rest space).
    Grab {
        /// How far the centre moves, m.
        offset: Vec3,
    },
    /// Each vertex moves toward the mean of its mesh neighbours by
    /// `strength` (in [0, 1]) of the way: bumps and creases relax.
    Smooth {
        /// The share of the way to the neighbours' mean.
        strength: f32,
    },
    /// Each vertex moves along its normal by `distance` (m; negative
    /// deflates).
    Inflate {
        /// How far along the normal, m.
        distance: f32,
    },
}

impl SculptBrush {
    /// The brush mirrored in x = 0 (symmetric modelling).
    pub fn mirrored(self) -> Self {
        match self {
            SculptBrush::Grab { offset } => SculptBrush::Grab {
                offset: offset * Vec3::new(-1.0, 1.0, 1.0),
            },
            other => other,
        }
    }
}

impl Command {
    /// A short name for menus and logs.
    pub fn label(&self) -> &'static str {
        match self {
            Command::AddJoint { .. } => "add joint",
            Command::AddMuscle { .. } => "add muscle",
            Command::EditMuscle { .. } => "edit muscle",
            Command::MoveJoint { .. } => "move joint",
            Command::DeleteJoint { .. } => "delete joint",
            Command::SetDofs { .. } => "set joint limits",
            Command::SetLocked { .. } => "lock joint",
            Command::LockPart { .. } => "lock part",
            Command::SetPosture { .. } => "pose",
            Command::AddSkin { .. } => "add skin",
            Command::DeleteSkin { .. } => "delete skin",
            Command::GlobalAttach { .. } => "attach skin",
            Command::SetAttachment { .. } => "set attachment",
            Command::FatStroke { .. } => "fat stroke",
            Command::PaintStroke { .. } => "paint stroke",
            Command::PaintMuscle { .. } => "paint muscle",
            Command::SetSkinMaterial { .. } => "skin material",
            Command::SetEnvironment { .. } => "environment",
            Command::SetKey { .. } => "set key",
            Command::MoveKey { .. } => "move key",
            Command::DeleteKey { .. } => "delete key",
            Command::SetKeyTcb { .. } => "key tension/continuity/bias",
            Command::SetFlesh { .. } => "flesh",
            Command::PaintWeights { .. } => "paint weights",
            Command::AddBlendTarget { .. } => "add blend target",
            Command::SculptBlendTarget { .. } => "sculpt",
        }
    }
}

/// Why an edit was refused. The character is unchanged whenever one is returned.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EditError {
    /// Joint `index` does not exist: the skeleton has `count` joints.
    #[error("joint {index} does not exist (the skeleton has {count})")]
    NoSuchJoint {
        /// The index asked for.
        index: usize,
        /// How many joints the skeleton has.
        count: usize,
    },
    /// Muscle `index` does not exist: the character has `count` muscles.
    #[error("muscle {index} does not exist (the character has {count})")]
    NoSuchMuscle {
        /// The index asked for.
        index: usize,
        /// How many muscles the character has.
        count: usize,
    },
    /// Skin `index` does not exist: the character has `count` skins.
    #[error("skin {index} does not exist (the character has {count})")]
    NoSuchSkin {
        /// The index asked for.
        index: usize,
        /// How many skins the character has.
        count: usize,
    },
    /// A point index past the points of a skin.
    #[error("point {index} does not exist on skin {skin} ({count} points)")]
    NoSuchPoint {
        /// Index of the skin.
        skin: usize,
        /// The point index asked for.
        index: usize,
        /// Number of points on the skin.
        count: usize,
    },
    /// A parameter is out of range; `field` names it.
    #[error("{command}: {field}: {message}")]
    Invalid {
        /// Label of the refused command (`Command::label`).
        command: &'static str,
        /// The parameter at fault: a field of the command, or a path into one.
        field: String,
        /// What is wrong with its value.
        message: String,
    },
    /// The edit is well formed but would break the model.
    #[error("{command}: {message}")]
    Refused {
        /// Label of the refused command (`Command::label`).
        command: &'static str,
        /// Why the edit would break the model.
        message: String,
    },
    /// The edit touches a part locked with [`Command::LockPart`].
    #[error("{command}: joint {joint} ('{name}') is locked against edits; unlock it first")]
    Locked {
        /// Label of the refused edit.
        command: &'static str,
        /// Index of the locked joint.
        joint: usize,
        /// Name of the locked joint.
        name: String,
    },
    /// Undo was asked for with no step left to undo.
    #[error("nothing to undo")]
    NothingToUndo,
    /// Redo was asked for with no undone step to redo.
    #[error("nothing to redo")]
    NothingToRedo,
    /// A key command names a time with no key posture near it.
    #[error("{command}: there is no key at {time} s (keys at {keys:?} s)")]
    NoSuchKey {
        /// Label of the refused command (`Command::label`).
        command: &'static str,
        /// The time asked for, s.
        time: f32,
        /// Times of the character's key postures, s.
        keys: Vec<f32>,
    },
}

pub(super) fn invalid(command: &Command, field: &str, message: impl Into<String>) -> EditError {
    EditError::Invalid {
        command: command.label(),
        field: field.to_string(),
        message: message.into(),
    }
}

pub(super) fn refused(command: &Command, message: impl Into<String>) -> EditError {
    EditError::Refused {
        command: command.label(),
        message: message.into(),
    }
}

/// Refuses the edit named `command` when joint `j` (which exists) is locked:
/// the tools check this at the press, so a gesture on a locked part ends
/// before it starts.
pub(crate) fn check_unlocked_for(
    c: &Character,
    command: &'static str,
    j: usize,
) -> Result<(), EditError> {
    let joint = &c.skeleton.joints[j];
    if joint.locked {
        return Err(EditError::Locked {
            command,
            joint: j,
            name: joint.name.clone(),
        });
    }
    Ok(())
}

/// Joint `j` and its descendants (parents come before children, so one pass).
pub(crate) fn subtree(c: &Character, j: usize) -> Vec<bool> {
    let mut inside = vec![false; c.skeleton.joints.len()];
    for (k, joint) in c.skeleton.joints.iter().enumerate() {
        inside[k] = k == j || joint.parent.is_some_and(|p| inside[p]);
    }
    inside
}

/// World frame of every joint in `posture` (re-exported for the symmetry code).
pub(crate) fn joint_frames(c: &Character, posture: &Posture) -> Vec<Affine3A> {
    forward_kinematics(&c.skeleton, posture)
}

pub(super) fn check_joint(c: &Character, j: usize) -> Result<(), EditError> {
    let count = c.skeleton.joints.len();
    if j >= count {
        return Err(EditError::NoSuchJoint { index: j, count });
    }
    Ok(())
}

/// Refuses `cmd` when joint `j` (which exists) is locked.
pub(super) fn check_unlocked(c: &Character, cmd: &Command, j: usize) -> Result<(), EditError> {
    check_unlocked_for(c, cmd.label(), j)
}

/// Checks a muscle placed in a joint's frame.
pub(super) fn check_new_muscle(cmd: &Command, m: &NewMuscle, field: &str) -> Result<(), EditError> {
    m.shape
        .validate()
        .map_err(|e| invalid(cmd, &format!("{field}.shape.{}", e.field), e.message))?;
    if !m.offset.is_finite() {
        return Err(invalid(cmd, &format!("{field}.offset"), "must be finite"));
    }
    if !(m.rotation.is_finite() && (m.rotation.length() - 1.0).abs() < 1e-3) {
        return Err(invalid(
            cmd,
            &format!("{field}.rotation"),
            "must be a unit quaternion",
        ));
    }
    Ok(())
}

pub(super) fn check_muscle(c: &Character, q: usize) -> Result<(), EditError> {
    let count = c.muscles.len();
    if q >= count {
        return Err(EditError::NoSuchMuscle { index: q, count });
    }
    Ok(())
}

pub(super) fn check_skin(c: &Character, s: usize) -> Result<(), EditError> {
    let count = c.skins.len();
    if s >= count {
        return Err(EditError::NoSuchSkin { index: s, count });
    }
    Ok(())
}

pub(super) fn check_point(c: &Character, s: usize, k: usize) -> Result<(), EditError> {
    check_skin(c, s)?;
    let count = c.skins[s].point_count();
    if k >= count {
        return Err(EditError::NoSuchPoint {
            skin: s,
            index: k,
            count,
        });
    }
    Ok(())
}

pub(super) fn check_dofs(cmd: &Command, dofs: &[Dof; 3]) -> Result<(), EditError> {
    for (a, d) in dofs.iter().enumerate() {
        if d.free && !(d.min.is_finite() && d.max.is_finite() && d.min <= d.max) {
            return Err(invalid(
                cmd,
                &format!("dofs[{a}]"),
                format!(
                    "limits must be finite with min <= max, got [{}, {}]",
                    d.min, d.max
                ),
            ));
        }
    }
    Ok(())
}

/// A key time must be finite and not negative.
pub(super) fn check_key_time(cmd: &Command, field: &str, t: f32) -> Result<(), EditError> {
    if !(t.is_finite() && t >= 0.0) {
        return Err(invalid(
            cmd,
            field,
            format!("a key time must be a finite, non-negative number of seconds, got {t}"),
        ));
    }
    Ok(())
}

pub(super) fn check_tcb(cmd: &Command, values: [(&str, f32); 3]) -> Result<(), EditError> {
    for (field, v) in values {
        if !(v.is_finite() && (-1.0..=1.0).contains(&v)) {
            return Err(invalid(cmd, field, format!("must lie in [-1, 1], got {v}")));
        }
    }
    Ok(())
}

/// Every stroke paints a bone of the skeleton (one per parent→child pair).
pub(super) fn check_stroke_bones(
    cmd: &Command,
    c: &Character,
    strokes: &[WeightStroke],
) -> Result<(), EditError> {
    let bones = c
        .skeleton
        .joints
        .iter()
        .filter(|j| j.parent.is_some())
        .count();
    match strokes.iter().find(|s| s.bone >= bones) {
        Some(s) => Err(invalid(
            cmd,
            "bone",
            format!("no bone {} (the skeleton has {bones})", s.bone),
        )),
        None => Ok(()),
    }
}
