//! The edits a tool can make, and how each one is applied and taken back.
//!
//! Every command is checked completely before the character is touched, so a
//! refused command leaves it exactly as it was, and [`apply`] returns the
//! *inverse data* that [`revert`] needs to restore the previous state bit for
//! bit. Inverses record only what the command touched (an old shape, the old
//! fat of the touched points, the removed joints with their indices): an edit
//! made every frame (a liposuction stroke) then costs memory in proportion to
//! its footprint, and undoing it restores only those values, so it does not
//! rewind the skin's simulated motion the way a whole-character snapshot would.

use crate::character::{
    Band, BandDefaults, Character, Dof, Environment, Flesh, Joint, KeyPosture, Muscle, Posture,
    Skin, WeightStroke,
};
use crate::kinematics::forward_kinematics;
use crate::shape::MuscleShape;
use crate::skin::attach::{global_attach, wrap_skin};
use glam::{Affine3A, Quat, Vec2, Vec3};
use serde::{Deserialize, Serialize};

pub use crate::anim::timeline::KEY_TIME_EPSILON;

/// A fat stroke's Gaussian is cut off at this many radii: points farther away
/// are left exactly as they were (the weight there is below 1.1 %).
pub const FAT_STROKE_CUTOFF: f32 = 3.0;

/// The muscle created with a new joint (LEMAN §6.1: each shape tool's click
/// creates a joint and its muscle together), placed in the joint's frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewMuscle {
    pub shape: MuscleShape,
    #[serde(default)]
    pub offset: Vec3,
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
        parent: usize,
        name: String,
        position_world: Vec3,
        #[serde(default)]
        muscle: Option<NewMuscle>,
    },
    /// Shape tool press on a bare joint (§6.1): gives an existing joint a
    /// muscle (appended to the character's muscles), placed in its frame.
    AddMuscle {
        joint: usize,
        muscle: NewMuscle,
    },
    /// Shape tool drag (§6.1): new size, exponents or Barr deformation.
    EditMuscle {
        muscle: usize,
        shape: MuscleShape,
    },
    /// Moves a joint to `position_world` by changing its rest offset. Its
    /// muscles and skin boundaries move with it; its children move with it
    /// too unless `keep_children`, which leaves them where they are in the
    /// world (their offsets are corrected).
    MoveJoint {
        joint: usize,
        position_world: Vec3,
        #[serde(default)]
        keep_children: bool,
    },
    /// Removes a joint with its subtree and their muscles. Refused for the
    /// root, when a skin hangs from or wraps the subtree, and when a muscle
    /// outside it has a deformation driver on a joint inside it.
    DeleteJoint {
        joint: usize,
    },
    /// Joint limits panel: the three DOFs of a joint.
    SetDofs {
        joint: usize,
        dofs: [Dof; 3],
    },
    /// Locks (or frees) all three DOFs of a joint, keeping their limits, so
    /// IK drags leave it alone (§6.1).
    SetLocked {
        joint: usize,
        locked: bool,
    },
    /// Locks (or unlocks) a part against accidental edits: while locked,
    /// the joint cannot be moved, nor deleted (alone or with an ancestor's
    /// subtree), and its muscles cannot be reshaped, deformed or added to.
    /// Adding a child joint, moving an ancestor (the part goes along
    /// rigidly), posing and the joint limits stay allowed.
    LockPart {
        joint: usize,
        locked: bool,
    },
    /// The result of an IK drag (§6.1): the new working posture.
    SetPosture {
        posture: Posture,
    },
    /// Skin attachment tool (§6.2): a new skin between `bottom` and `top`,
    /// wrapped around the muscles on the path between them in the working
    /// posture ([`wrap_skin`]).
    AddSkin {
        name: String,
        bottom: usize,
        top: usize,
        m: usize,
        n: usize,
        #[serde(default)]
        material: crate::character::SkinMaterial,
    },
    DeleteSkin {
        skin: usize,
    },
    /// The global "attach" command (§6.2, [`global_attach`]) in the working
    /// posture: replaces every band of the skin.
    GlobalAttach {
        skin: usize,
        #[serde(default)]
        band: BandDefaults,
    },
    /// Skin attachment tool adjusting one point's connective tissue (§6.2);
    /// `None` removes it.
    SetAttachment {
        skin: usize,
        point: usize,
        band: Option<Band>,
    },
    /// Liposuction tool (§6.3): adds `amount` metres of fat at the touched
    /// point, falling off as a Gaussian `exp(−d²/(2 radius²))` of the
    /// Euclidean distance `d` (metres, in the skin's current positions) from
    /// it, cut off at [`FAT_STROKE_CUTOFF`] radii. `radius` is in metres, not
    /// grid cells, so a stroke does the same thing at any skin resolution.
    /// Negative amounts remove fat; thickness never goes below 0.
    FatStroke {
        skin: usize,
        center_point: usize,
        radius: f32,
        amount: f32,
    },
    /// Parameters panel: material of the points in `region` (all when
    /// `None`). Each field left `None` is unchanged. Densities are per unit
    /// u-area as in [`crate::character::SkinPoints`]; `stretch` sets
    /// η = (s, s/2, s) as [`wrap_skin`] does.
    SetSkinMaterial {
        skin: usize,
        #[serde(default)]
        region: Option<Vec<usize>>,
        #[serde(default)]
        stretch: Option<f32>,
        #[serde(default)]
        damping: Option<f32>,
        #[serde(default)]
        mass: Option<f32>,
        #[serde(default)]
        bend: Option<f32>,
        /// Connective tissue: the spring constant k_s (per unit u-area) of
        /// the bands of the region's attached points; unattached points are
        /// left alone.
        #[serde(default)]
        band_stiffness: Option<f32>,
    },
    /// Parameters panel: the character's environment. Each field left
    /// `None` is unchanged.
    SetEnvironment {
        #[serde(default)]
        gravity: Option<Vec3>,
        #[serde(default)]
        global_damping: Option<f32>,
    },
    /// Timeline (LEMAN §6.4): stores `posture` as the key posture at `time`
    /// (seconds, ≥ 0) with the given Kochanek–Bartels parameters (each in
    /// [−1, 1]), replacing the key within [`KEY_TIME_EPSILON`] of it if there
    /// is one; the keys stay sorted by time.
    SetKey {
        time: f32,
        posture: Posture,
        #[serde(default)]
        tension: f32,
        #[serde(default)]
        continuity: f32,
        #[serde(default)]
        bias: f32,
    },
    /// Timeline: moves the key at `from` to time `to` (≥ 0), re-sorting the
    /// keys; refused when another key lies within [`KEY_TIME_EPSILON`] of `to`.
    MoveKey {
        from: f32,
        to: f32,
    },
    /// Timeline: removes the key at `time`.
    DeleteKey {
        time: f32,
    },
    /// Timeline: the Kochanek–Bartels tension, continuity and bias of the key
    /// at `time` (each in [−1, 1]).
    SetKeyTcb {
        time: f32,
        tension: f32,
        continuity: f32,
        bias: f32,
    },
    /// The flesh backend: kinematic muscles or FEM flesh with its
    /// settings.
    SetFlesh {
        flesh: Flesh,
    },
    /// Paints the FEM flesh's region weights (Capell §4.5): appends a stroke,
    /// applied after the earlier ones. Refused for kinematic flesh.
    PaintWeights {
        stroke: WeightStroke,
    },
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
            Command::SetSkinMaterial { .. } => "skin material",
            Command::SetEnvironment { .. } => "environment",
            Command::SetKey { .. } => "set key",
            Command::MoveKey { .. } => "move key",
            Command::DeleteKey { .. } => "delete key",
            Command::SetKeyTcb { .. } => "key tension/continuity/bias",
            Command::SetFlesh { .. } => "flesh",
            Command::PaintWeights { .. } => "paint weights",
        }
    }
}

/// Why an edit was refused. The character is unchanged whenever one is returned.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EditError {
    #[error("joint {index} does not exist (the skeleton has {count})")]
    NoSuchJoint { index: usize, count: usize },
    #[error("muscle {index} does not exist (the character has {count})")]
    NoSuchMuscle { index: usize, count: usize },
    #[error("skin {index} does not exist (the character has {count})")]
    NoSuchSkin { index: usize, count: usize },
    #[error("point {index} does not exist on skin {skin} ({count} points)")]
    NoSuchPoint {
        skin: usize,
        index: usize,
        count: usize,
    },
    /// A parameter is out of range; `field` names it.
    #[error("{command}: {field}: {message}")]
    Invalid {
        command: &'static str,
        field: String,
        message: String,
    },
    /// The edit is well formed but would break the model.
    #[error("{command}: {message}")]
    Refused {
        command: &'static str,
        message: String,
    },
    /// The edit touches a part locked with [`Command::LockPart`].
    #[error("{command}: joint {joint} ('{name}') is locked against edits; unlock it first")]
    Locked {
        command: &'static str,
        joint: usize,
        name: String,
    },
    #[error("nothing to undo")]
    NothingToUndo,
    #[error("nothing to redo")]
    NothingToRedo,
    /// A key command names a time with no key posture near it.
    #[error("{command}: there is no key at {time} s (keys at {keys:?} s)")]
    NoSuchKey {
        command: &'static str,
        time: f32,
        keys: Vec<f32>,
    },
}

fn invalid(command: &Command, field: &str, message: impl Into<String>) -> EditError {
    EditError::Invalid {
        command: command.label(),
        field: field.to_string(),
        message: message.into(),
    }
}

fn refused(command: &Command, message: impl Into<String>) -> EditError {
    EditError::Refused {
        command: command.label(),
        message: message.into(),
    }
}

/// What [`revert`] needs to take an applied command back exactly.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Inverse {
    /// Pop the last joint (and its muscle when `muscle`), and the last angle
    /// of the working posture and of every key posture. O(1).
    AddJoint { muscle: bool },
    /// Pop the last muscle. O(1).
    AddMuscle,
    /// The old lock flag. O(1).
    Lock { joint: usize, locked: bool },
    /// The replaced shape. O(1).
    EditMuscle { muscle: usize, shape: MuscleShape },
    /// Old offsets of the joint and of the children that were corrected.
    /// O(children).
    Offsets(Vec<(usize, Vec3)>),
    /// The removed joints and muscles at their old indices (ascending), and
    /// the removed angles of the working posture and each key posture.
    /// O(subtree).
    DeleteJoint {
        joints: Vec<(usize, Joint)>,
        muscles: Vec<(usize, Muscle)>,
        angles: Vec<Vec3>,
        key_angles: Vec<Vec<Vec3>>,
    },
    /// The old DOFs. O(1).
    Dofs { joint: usize, dofs: [Dof; 3] },
    /// The old working posture. O(joints).
    Posture(Posture),
    /// Pop the last skin. O(1).
    AddSkin,
    /// The removed skin. O(points).
    DeleteSkin { skin: usize, removed: Box<Skin> },
    /// The old bands of the whole skin. O(points), about 28 bytes each.
    Bands {
        skin: usize,
        bands: Vec<Option<Band>>,
    },
    /// One old band. O(1).
    Band {
        skin: usize,
        point: usize,
        band: Option<Band>,
    },
    /// Old fat of the points the stroke changed. O(footprint), 8 bytes each.
    Fat { skin: usize, old: Vec<(u32, f32)> },
    /// Old values of the changed fields at the region's points, in region
    /// order. O(region × fields).
    Material {
        skin: usize,
        points: Vec<usize>,
        stretch: Option<Vec<[f32; 3]>>,
        damping: Option<Vec<f32>>,
        mass: Option<Vec<f32>>,
        bend: Option<Vec<f32>>,
        /// Old k_s of the region's bands (`None` for unattached points).
        band_stiffness: Option<Vec<Option<f32>>>,
    },
    /// The old environment. O(1).
    Environment(Environment),
    /// The old flesh. O(strokes + embedded mesh).
    Flesh(Box<Flesh>),
    /// Pop the last weight stroke. O(1).
    WeightStroke,
    /// Key postures: remove the key at `remove` (the one the command put
    /// there), then put `insert` back at its old index. O(keys).
    Keys {
        remove: Option<usize>,
        insert: Option<(usize, KeyPosture)>,
    },
}

fn check_joint(c: &Character, j: usize) -> Result<(), EditError> {
    let count = c.skeleton.joints.len();
    if j >= count {
        return Err(EditError::NoSuchJoint { index: j, count });
    }
    Ok(())
}

/// Refuses `cmd` when joint `j` (which exists) is locked.
fn check_unlocked(c: &Character, cmd: &Command, j: usize) -> Result<(), EditError> {
    check_unlocked_for(c, cmd.label(), j)
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

/// Checks a muscle placed in a joint's frame.
fn check_new_muscle(cmd: &Command, m: &NewMuscle, field: &str) -> Result<(), EditError> {
    m.shape
        .validate()
        .map_err(|e| invalid(cmd, &format!("{field}.shape"), e))?;
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

fn check_muscle(c: &Character, q: usize) -> Result<(), EditError> {
    let count = c.muscles.len();
    if q >= count {
        return Err(EditError::NoSuchMuscle { index: q, count });
    }
    Ok(())
}

fn check_skin(c: &Character, s: usize) -> Result<(), EditError> {
    let count = c.skins.len();
    if s >= count {
        return Err(EditError::NoSuchSkin { index: s, count });
    }
    Ok(())
}

fn check_point(c: &Character, s: usize, k: usize) -> Result<(), EditError> {
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

fn check_dofs(cmd: &Command, dofs: &[Dof; 3]) -> Result<(), EditError> {
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

/// Joint `j` and its descendants (parents come before children, so one pass).
pub(crate) fn subtree(c: &Character, j: usize) -> Vec<bool> {
    let mut inside = vec![false; c.skeleton.joints.len()];
    for (k, joint) in c.skeleton.joints.iter().enumerate() {
        inside[k] = k == j || joint.parent.is_some_and(|p| inside[p]);
    }
    inside
}

/// Rewrites every joint and muscle index stored in the character.
fn renumber(c: &mut Character, joint: impl Fn(usize) -> usize, muscle: impl Fn(usize) -> usize) {
    for j in &mut c.skeleton.joints {
        j.parent = j.parent.map(&joint);
    }
    for m in &mut c.muscles {
        m.joint = joint(m.joint);
        for d in &mut m.drivers {
            d.joint = joint(d.joint);
        }
    }
    for s in &mut c.skins {
        s.bottom_joint = joint(s.bottom_joint);
        s.top_joint = joint(s.top_joint);
        for q in &mut s.muscles {
            *q = muscle(*q);
        }
        for b in s.points.band.iter_mut().flatten() {
            b.muscle = muscle(b.muscle);
        }
    }
}

/// The index of the key within [`KEY_TIME_EPSILON`] of `time` (the nearest).
fn find_key(c: &Character, time: f32) -> Option<usize> {
    c.key_postures
        .iter()
        .enumerate()
        .filter(|(_, k)| (k.time - time).abs() < KEY_TIME_EPSILON)
        .min_by(|a, b| (a.1.time - time).abs().total_cmp(&(b.1.time - time).abs()))
        .map(|(i, _)| i)
}

fn no_such_key(c: &Character, cmd: &Command, time: f32) -> EditError {
    EditError::NoSuchKey {
        command: cmd.label(),
        time,
        keys: c.key_postures.iter().map(|k| k.time).collect(),
    }
}

/// A key time must be finite and not negative.
fn check_key_time(cmd: &Command, field: &str, t: f32) -> Result<(), EditError> {
    if !(t.is_finite() && t >= 0.0) {
        return Err(invalid(
            cmd,
            field,
            format!("a key time must be a finite, non-negative number of seconds, got {t}"),
        ));
    }
    Ok(())
}

fn check_tcb(cmd: &Command, values: [(&str, f32); 3]) -> Result<(), EditError> {
    for (field, v) in values {
        if !(v.is_finite() && (-1.0..=1.0).contains(&v)) {
            return Err(invalid(cmd, field, format!("must lie in [-1, 1], got {v}")));
        }
    }
    Ok(())
}

/// Every stroke paints a bone of the skeleton (one per parent→child pair).
fn check_stroke_bones(
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

/// Where a key at `time` goes to keep the keys sorted.
fn key_slot(keys: &[KeyPosture], time: f32) -> usize {
    keys.partition_point(|k| k.time < time)
}

/// Applies `cmd`, returning what undoes it. On error nothing has changed.
pub(crate) fn apply(
    c: &mut Character,
    posture: &mut Posture,
    cmd: &Command,
) -> Result<Inverse, EditError> {
    let nj = c.skeleton.joints.len();
    if posture.angles.len() != nj {
        return Err(refused(
            cmd,
            format!(
                "the working posture has {} angles but the skeleton has {nj} joints \
                 (was the character edited outside its history?)",
                posture.angles.len()
            ),
        ));
    }
    match cmd {
        Command::AddJoint {
            parent,
            name,
            position_world,
            muscle,
        } => {
            check_joint(c, *parent)?;
            if name.trim().is_empty() {
                return Err(invalid(cmd, "name", "a joint needs a name"));
            }
            if let Some(k) = c.skeleton.find(name) {
                return Err(invalid(
                    cmd,
                    "name",
                    format!("a joint named '{name}' already exists (joint {k})"),
                ));
            }
            if !position_world.is_finite() {
                return Err(invalid(cmd, "position_world", "must be finite"));
            }
            if let Some(m) = muscle {
                check_new_muscle(cmd, m, "muscle")?;
            }
            let world = forward_kinematics(&c.skeleton, posture);
            let offset = world[*parent].inverse().transform_point3(*position_world);
            c.skeleton.joints.push(Joint {
                locked: false,
                name: name.clone(),
                parent: Some(*parent),
                offset,
                rest_rotation: Quat::IDENTITY,
                dofs: [Dof::default(); 3],
            });
            posture.angles.push(Vec3::ZERO);
            for key in &mut c.key_postures {
                key.posture.angles.push(Vec3::ZERO);
            }
            if let Some(m) = muscle {
                c.muscles.push(Muscle {
                    joint: nj,
                    offset: m.offset,
                    rotation: m.rotation,
                    shape: m.shape.clone(),
                    drivers: Vec::new(),
                });
            }
            Ok(Inverse::AddJoint {
                muscle: muscle.is_some(),
            })
        }
        Command::AddMuscle { joint, muscle } => {
            check_joint(c, *joint)?;
            check_unlocked(c, cmd, *joint)?;
            check_new_muscle(cmd, muscle, "muscle")?;
            c.muscles.push(Muscle {
                joint: *joint,
                offset: muscle.offset,
                rotation: muscle.rotation,
                shape: muscle.shape.clone(),
                drivers: Vec::new(),
            });
            Ok(Inverse::AddMuscle)
        }
        Command::LockPart { joint, locked } => {
            check_joint(c, *joint)?;
            let old = std::mem::replace(&mut c.skeleton.joints[*joint].locked, *locked);
            Ok(Inverse::Lock {
                joint: *joint,
                locked: old,
            })
        }
        Command::EditMuscle { muscle, shape } => {
            check_muscle(c, *muscle)?;
            check_unlocked(c, cmd, c.muscles[*muscle].joint)?;
            shape.validate().map_err(|e| invalid(cmd, "shape", e))?;
            let old = std::mem::replace(&mut c.muscles[*muscle].shape, shape.clone());
            Ok(Inverse::EditMuscle {
                muscle: *muscle,
                shape: old,
            })
        }
        Command::MoveJoint {
            joint,
            position_world,
            keep_children,
        } => {
            check_joint(c, *joint)?;
            check_unlocked(c, cmd, *joint)?;
            if !position_world.is_finite() {
                return Err(invalid(cmd, "position_world", "must be finite"));
            }
            let world = forward_kinematics(&c.skeleton, posture);
            let j = *joint;
            let new_offset = match c.skeleton.joints[j].parent {
                // The root's frame is T(root_translation)·T(offset)·R.
                None => *position_world - posture.root_translation,
                Some(p) => world[p].inverse().transform_point3(*position_world),
            };
            let mut old = vec![(j, c.skeleton.joints[j].offset)];
            let children: Vec<usize> = if *keep_children {
                c.skeleton.children(j).collect()
            } else {
                Vec::new()
            };
            let mut moved = world[j];
            moved.translation = (*position_world).into();
            let to_moved = moved.inverse();
            let child_offsets: Vec<Vec3> = children
                .iter()
                .map(|&k| to_moved.transform_point3(world[k].translation.into()))
                .collect();
            c.skeleton.joints[j].offset = new_offset;
            for (&k, o) in children.iter().zip(child_offsets) {
                old.push((k, c.skeleton.joints[k].offset));
                c.skeleton.joints[k].offset = o;
            }
            Ok(Inverse::Offsets(old))
        }
        Command::DeleteJoint { joint } => {
            check_joint(c, *joint)?;
            let j = *joint;
            if j == 0 {
                return Err(refused(cmd, "joint 0 is the root and cannot be deleted"));
            }
            let gone = subtree(c, j);
            if let Some(k) = (j..gone.len()).find(|&k| gone[k] && c.skeleton.joints[k].locked) {
                return Err(EditError::Locked {
                    command: cmd.label(),
                    joint: k,
                    name: c.skeleton.joints[k].name.clone(),
                });
            }
            let jname = &c.skeleton.joints[j].name;
            for (s, skin) in c.skins.iter().enumerate() {
                for (end, k) in [("bottom", skin.bottom_joint), ("top", skin.top_joint)] {
                    if gone[k] {
                        return Err(refused(
                            cmd,
                            format!(
                                "joint {j} ('{jname}') cannot be deleted: the {end} of skin {s} \
                                 ('{}') hangs from joint {k} ('{}') in its subtree; \
                                 delete the skin first",
                                skin.name, c.skeleton.joints[k].name
                            ),
                        ));
                    }
                }
                if let Some(&q) = skin.muscles.iter().find(|&&q| gone[c.muscles[q].joint]) {
                    return Err(refused(
                        cmd,
                        format!(
                            "joint {j} ('{jname}') cannot be deleted: skin {s} ('{}') wraps \
                             muscle {q} of its subtree; delete the skin first",
                            skin.name
                        ),
                    ));
                }
            }
            for (q, m) in c.muscles.iter().enumerate() {
                if gone[m.joint] {
                    continue;
                }
                if let Some(d) = m.drivers.iter().find(|d| gone[d.joint]) {
                    return Err(refused(
                        cmd,
                        format!(
                            "joint {j} ('{jname}') cannot be deleted: muscle {q} has a \
                             deformation driver on joint {} in its subtree",
                            d.joint
                        ),
                    ));
                }
            }
            let muscle_gone: Vec<bool> = c.muscles.iter().map(|m| gone[m.joint]).collect();
            let joint_map = new_indices(&gone);
            let muscle_map = new_indices(&muscle_gone);
            let joints = take_where(&mut c.skeleton.joints, &gone);
            let muscles = take_where(&mut c.muscles, &muscle_gone);
            let angles = take_where(&mut posture.angles, &gone)
                .into_iter()
                .map(|(_, a)| a)
                .collect();
            let key_angles = c
                .key_postures
                .iter_mut()
                .map(|key| {
                    take_where(&mut key.posture.angles, &gone)
                        .into_iter()
                        .map(|(_, a)| a)
                        .collect()
                })
                .collect();
            renumber(c, |k| joint_map[k], |q| muscle_map[q]);
            Ok(Inverse::DeleteJoint {
                joints,
                muscles,
                angles,
                key_angles,
            })
        }
        Command::SetDofs { joint, dofs } => {
            check_joint(c, *joint)?;
            check_dofs(cmd, dofs)?;
            let old = std::mem::replace(&mut c.skeleton.joints[*joint].dofs, *dofs);
            Ok(Inverse::Dofs {
                joint: *joint,
                dofs: old,
            })
        }
        Command::SetLocked { joint, locked } => {
            check_joint(c, *joint)?;
            let mut dofs = c.skeleton.joints[*joint].dofs;
            for d in &mut dofs {
                d.free = !locked;
            }
            check_dofs(cmd, &dofs)?;
            let old = std::mem::replace(&mut c.skeleton.joints[*joint].dofs, dofs);
            Ok(Inverse::Dofs {
                joint: *joint,
                dofs: old,
            })
        }
        Command::SetPosture { posture: new } => {
            new.validate(nj)
                .map_err(|e| invalid(cmd, &format!("posture.{}", e.field), e.message))?;
            Ok(Inverse::Posture(std::mem::replace(posture, new.clone())))
        }
        Command::AddSkin {
            name,
            bottom,
            top,
            m,
            n,
            material,
        } => {
            check_joint(c, *bottom)?;
            check_joint(c, *top)?;
            let skin = wrap_skin(c, posture, name, *bottom, *top, *m, *n, material)
                .map_err(|e| invalid(cmd, &e.field, e.message))?;
            skin.validate(nj, c.muscles.len())
                .map_err(|e| invalid(cmd, &format!("material ({})", e.field), e.message))?;
            c.skins.push(skin);
            Ok(Inverse::AddSkin)
        }
        Command::DeleteSkin { skin } => {
            check_skin(c, *skin)?;
            Ok(Inverse::DeleteSkin {
                skin: *skin,
                removed: Box::new(c.skins.remove(*skin)),
            })
        }
        Command::GlobalAttach { skin, band } => {
            check_skin(c, *skin)?;
            if !(band.ks.is_finite() && band.ks >= 0.0 && band.kd.is_finite() && band.kd >= 0.0) {
                return Err(invalid(
                    cmd,
                    "band",
                    format!("ks and kd must be finite and non-negative, got {band:?}"),
                ));
            }
            if c.skins[*skin].muscles.is_empty() {
                return Err(refused(
                    cmd,
                    format!(
                        "skin {skin} ('{}') wraps no muscles: there is nothing to attach it to",
                        c.skins[*skin].name
                    ),
                ));
            }
            let bands = c.skins[*skin].points.band.clone();
            global_attach(c, *skin, posture, *band);
            Ok(Inverse::Bands { skin: *skin, bands })
        }
        Command::SetAttachment { skin, point, band } => {
            check_point(c, *skin, *point)?;
            let s = &c.skins[*skin];
            let row = point / s.m;
            if row == 0 || row + 1 == s.n {
                return Err(refused(
                    cmd,
                    format!(
                        "point {point} of skin {skin} is on a boundary row, which is fixed to \
                         its joint and takes no connective tissue"
                    ),
                ));
            }
            if let Some(b) = band {
                if !s.muscles.contains(&b.muscle) {
                    return Err(invalid(
                        cmd,
                        "band.muscle",
                        format!(
                            "skin {skin} does not wrap muscle {} (it wraps {:?})",
                            b.muscle, s.muscles
                        ),
                    ));
                }
                if !b.is_physical() {
                    return Err(invalid(
                        cmd,
                        "band",
                        "needs a finite anchor and non-negative ks, kd and rest length",
                    ));
                }
            }
            let old = std::mem::replace(&mut c.skins[*skin].points.band[*point], *band);
            Ok(Inverse::Band {
                skin: *skin,
                point: *point,
                band: old,
            })
        }
        Command::FatStroke {
            skin,
            center_point,
            radius,
            amount,
        } => {
            check_point(c, *skin, *center_point)?;
            if !(radius.is_finite() && *radius > 0.0) {
                return Err(invalid(
                    cmd,
                    "radius",
                    format!("must be positive (metres), got {radius}"),
                ));
            }
            if !amount.is_finite() {
                return Err(invalid(
                    cmd,
                    "amount",
                    format!("must be finite, got {amount}"),
                ));
            }
            let pts = &mut c.skins[*skin].points;
            let centre = pts.position[*center_point];
            let reach2 = (FAT_STROKE_CUTOFF * radius).powi(2);
            let inv_two_r2 = 1.0 / (2.0 * radius * radius);
            let mut old = Vec::new();
            for (k, (p, fat)) in pts.position.iter().zip(&mut pts.fat).enumerate() {
                let d2 = p.distance_squared(centre);
                if d2 > reach2 {
                    continue;
                }
                let new = (*fat + amount * (-d2 * inv_two_r2).exp()).max(0.0);
                if new != *fat {
                    old.push((k as u32, *fat));
                    *fat = new;
                }
            }
            Ok(Inverse::Fat { skin: *skin, old })
        }
        Command::SetSkinMaterial {
            skin,
            region,
            stretch,
            damping,
            mass,
            bend,
            band_stiffness,
        } => {
            check_skin(c, *skin)?;
            let count = c.skins[*skin].point_count();
            let points: Vec<usize> = match region {
                Some(r) => {
                    if r.is_empty() {
                        return Err(invalid(cmd, "region", "selects no points"));
                    }
                    if let Some(&k) = r.iter().find(|&&k| k >= count) {
                        return Err(EditError::NoSuchPoint {
                            skin: *skin,
                            index: k,
                            count,
                        });
                    }
                    r.clone()
                }
                None => (0..count).collect(),
            };
            if stretch.is_none()
                && damping.is_none()
                && mass.is_none()
                && bend.is_none()
                && band_stiffness.is_none()
            {
                return Err(invalid(cmd, "material", "names no parameter to change"));
            }
            for (field, v, positive) in [
                ("stretch", stretch, false),
                ("damping", damping, false),
                ("mass", mass, true),
                ("bend", bend, false),
                ("band_stiffness", band_stiffness, false),
            ] {
                if let Some(v) = v
                    && !(v.is_finite() && (*v > 0.0 || (!positive && *v == 0.0)))
                {
                    let want = if positive { "positive" } else { "non-negative" };
                    return Err(invalid(cmd, field, format!("must be {want}, got {v}")));
                }
            }
            let p = &mut c.skins[*skin].points;
            let band_old = band_stiffness.map(|v| {
                points
                    .iter()
                    .map(|&k| p.band[k].as_mut().map(|b| std::mem::replace(&mut b.ks, v)))
                    .collect()
            });
            let stretch_old = stretch.map(|s| {
                points
                    .iter()
                    .map(|&k| std::mem::replace(&mut p.stretch[k], [s, 0.5 * s, s]))
                    .collect()
            });
            let damping_old = damping.map(|v| {
                points
                    .iter()
                    .map(|&k| std::mem::replace(&mut p.damping_density[k], v))
                    .collect()
            });
            let mass_old = mass.map(|v| {
                points
                    .iter()
                    .map(|&k| std::mem::replace(&mut p.mass_density[k], v))
                    .collect()
            });
            let bend_old = bend.map(|v| {
                points
                    .iter()
                    .map(|&k| std::mem::replace(&mut p.bend[k], v))
                    .collect()
            });
            Ok(Inverse::Material {
                skin: *skin,
                points,
                stretch: stretch_old,
                damping: damping_old,
                mass: mass_old,
                bend: bend_old,
                band_stiffness: band_old,
            })
        }
        Command::SetFlesh { flesh } => {
            flesh
                .validate()
                .map_err(|e| invalid(cmd, &e.field, e.message))?;
            if let Some(f) = flesh.fem() {
                check_stroke_bones(cmd, c, &f.weight_strokes)?;
            }
            let old = std::mem::replace(&mut c.flesh, flesh.clone());
            Ok(Inverse::Flesh(Box::new(old)))
        }
        Command::PaintWeights { stroke } => {
            check_stroke_bones(cmd, c, std::slice::from_ref(stroke))?;
            let Flesh::Fem(f) = &mut c.flesh else {
                return Err(refused(
                    cmd,
                    "the flesh is kinematic: switch it to FEM to paint its region weights",
                ));
            };
            let mut painted = f.clone();
            painted.weight_strokes.push(stroke.clone());
            painted
                .validate()
                .map_err(|e| invalid(cmd, &e.field, e.message))?;
            f.weight_strokes.push(stroke.clone());
            Ok(Inverse::WeightStroke)
        }
        Command::SetEnvironment {
            gravity,
            global_damping,
        } => {
            if gravity.is_none() && global_damping.is_none() {
                return Err(invalid(cmd, "environment", "names no parameter to change"));
            }
            if let Some(g) = gravity
                && !g.is_finite()
            {
                return Err(invalid(cmd, "gravity", format!("must be finite, got {g}")));
            }
            if let Some(d) = global_damping
                && !(d.is_finite() && *d >= 0.0)
            {
                return Err(invalid(
                    cmd,
                    "global_damping",
                    format!("must be non-negative, got {d}"),
                ));
            }
            let old = c.environment.clone();
            if let Some(g) = gravity {
                c.environment.gravity = *g;
            }
            if let Some(d) = global_damping {
                c.environment.global_damping = *d;
            }
            Ok(Inverse::Environment(old))
        }
        Command::SetKey {
            time,
            posture: key_posture,
            tension,
            continuity,
            bias,
        } => {
            check_key_time(cmd, "time", *time)?;
            key_posture
                .validate(nj)
                .map_err(|e| invalid(cmd, &format!("posture.{}", e.field), e.message))?;
            check_tcb(
                cmd,
                [
                    ("tension", *tension),
                    ("continuity", *continuity),
                    ("bias", *bias),
                ],
            )?;
            let key = KeyPosture {
                time: *time,
                posture: key_posture.clone(),
                tension: *tension,
                continuity: *continuity,
                bias: *bias,
            };
            let old = find_key(c, *time).map(|i| (i, c.key_postures.remove(i)));
            let at = key_slot(&c.key_postures, *time);
            c.key_postures.insert(at, key);
            Ok(Inverse::Keys {
                remove: Some(at),
                insert: old,
            })
        }
        Command::MoveKey { from, to } => {
            check_key_time(cmd, "to", *to)?;
            let i = find_key(c, *from).ok_or_else(|| no_such_key(c, cmd, *from))?;
            if let Some((k, other)) = c
                .key_postures
                .iter()
                .enumerate()
                .find(|(k, o)| *k != i && (o.time - to).abs() < KEY_TIME_EPSILON)
            {
                return Err(refused(
                    cmd,
                    format!(
                        "key {k} already lies at {} s: a key cannot be moved onto another \
                         (delete that one first)",
                        other.time
                    ),
                ));
            }
            let old = c.key_postures.remove(i);
            let mut moved = old.clone();
            moved.time = *to;
            let at = key_slot(&c.key_postures, *to);
            c.key_postures.insert(at, moved);
            Ok(Inverse::Keys {
                remove: Some(at),
                insert: Some((i, old)),
            })
        }
        Command::DeleteKey { time } => {
            let i = find_key(c, *time).ok_or_else(|| no_such_key(c, cmd, *time))?;
            let old = c.key_postures.remove(i);
            Ok(Inverse::Keys {
                remove: None,
                insert: Some((i, old)),
            })
        }
        Command::SetKeyTcb {
            time,
            tension,
            continuity,
            bias,
        } => {
            let i = find_key(c, *time).ok_or_else(|| no_such_key(c, cmd, *time))?;
            check_tcb(
                cmd,
                [
                    ("tension", *tension),
                    ("continuity", *continuity),
                    ("bias", *bias),
                ],
            )?;
            let key = &mut c.key_postures[i];
            let old = key.clone();
            key.tension = *tension;
            key.continuity = *continuity;
            key.bias = *bias;
            Ok(Inverse::Keys {
                remove: Some(i),
                insert: Some((i, old)),
            })
        }
    }
}

/// New index of every kept entry (`usize::MAX` for removed ones).
fn new_indices(gone: &[bool]) -> Vec<usize> {
    let mut next = 0;
    gone.iter()
        .map(|&g| {
            if g {
                usize::MAX
            } else {
                next += 1;
                next - 1
            }
        })
        .collect()
}

/// Removes the flagged entries, returning them with their old indices.
fn take_where<T>(v: &mut Vec<T>, gone: &[bool]) -> Vec<(usize, T)> {
    let mut kept = Vec::with_capacity(v.len());
    let mut taken = Vec::new();
    for (k, x) in std::mem::take(v).into_iter().enumerate() {
        if gone[k] {
            taken.push((k, x));
        } else {
            kept.push(x);
        }
    }
    *v = kept;
    taken
}

/// Old index of every kept entry, given the removed indices (ascending) and
/// the old length.
fn old_indices(removed: &[usize], old_len: usize) -> Vec<usize> {
    (0..old_len)
        .filter(|k| removed.binary_search(k).is_err())
        .collect()
}

/// Takes back a command applied by [`apply`], given its inverse. The character
/// must be in the state [`apply`] left it in (the history guarantees this).
pub(crate) fn revert(c: &mut Character, posture: &mut Posture, inverse: Inverse) {
    match inverse {
        Inverse::AddJoint { muscle } => {
            c.skeleton.joints.pop();
            posture.angles.pop();
            for key in &mut c.key_postures {
                key.posture.angles.pop();
            }
            if muscle {
                c.muscles.pop();
            }
        }
        Inverse::AddMuscle => {
            c.muscles.pop();
        }
        Inverse::Lock { joint, locked } => c.skeleton.joints[joint].locked = locked,
        Inverse::EditMuscle { muscle, shape } => c.muscles[muscle].shape = shape,
        Inverse::Offsets(old) => {
            for (k, o) in old {
                c.skeleton.joints[k].offset = o;
            }
        }
        Inverse::DeleteJoint {
            joints,
            muscles,
            angles,
            key_angles,
        } => {
            let removed_j: Vec<usize> = joints.iter().map(|(k, _)| *k).collect();
            let removed_m: Vec<usize> = muscles.iter().map(|(k, _)| *k).collect();
            let old_j = old_indices(&removed_j, c.skeleton.joints.len() + joints.len());
            let old_m = old_indices(&removed_m, c.muscles.len() + muscles.len());
            renumber(c, |k| old_j[k], |q| old_m[q]);
            for ((k, joint), a) in joints.into_iter().zip(angles) {
                c.skeleton.joints.insert(k, joint);
                posture.angles.insert(k, a);
            }
            for (key, ka) in c.key_postures.iter_mut().zip(key_angles) {
                for (&k, a) in removed_j.iter().zip(ka) {
                    key.posture.angles.insert(k, a);
                }
            }
            for (q, m) in muscles {
                c.muscles.insert(q, m);
            }
        }
        Inverse::Dofs { joint, dofs } => c.skeleton.joints[joint].dofs = dofs,
        Inverse::Posture(p) => *posture = p,
        Inverse::AddSkin => {
            c.skins.pop();
        }
        Inverse::DeleteSkin { skin, removed } => c.skins.insert(skin, *removed),
        Inverse::Bands { skin, bands } => c.skins[skin].points.band = bands,
        Inverse::Band { skin, point, band } => c.skins[skin].points.band[point] = band,
        Inverse::Fat { skin, old } => {
            let fat = &mut c.skins[skin].points.fat;
            for (k, v) in old {
                fat[k as usize] = v;
            }
        }
        Inverse::Material {
            skin,
            points,
            stretch,
            damping,
            mass,
            bend,
            band_stiffness,
        } => {
            let p = &mut c.skins[skin].points;
            if let Some(v) = band_stiffness {
                for (&k, x) in points.iter().zip(v).rev() {
                    if let (Some(b), Some(x)) = (p.band[k].as_mut(), x) {
                        b.ks = x;
                    }
                }
            }
            // Reverse order, so a point listed twice ends with its first old value.
            if let Some(v) = stretch {
                for (&k, x) in points.iter().zip(v).rev() {
                    p.stretch[k] = x;
                }
            }
            if let Some(v) = damping {
                for (&k, x) in points.iter().zip(v).rev() {
                    p.damping_density[k] = x;
                }
            }
            if let Some(v) = mass {
                for (&k, x) in points.iter().zip(v).rev() {
                    p.mass_density[k] = x;
                }
            }
            if let Some(v) = bend {
                for (&k, x) in points.iter().zip(v).rev() {
                    p.bend[k] = x;
                }
            }
        }
        Inverse::Environment(old) => c.environment = old,
        Inverse::Flesh(old) => c.flesh = *old,
        Inverse::WeightStroke => {
            if let Flesh::Fem(f) = &mut c.flesh {
                f.weight_strokes.pop();
            }
        }
        Inverse::Keys { remove, insert } => {
            if let Some(i) = remove {
                c.key_postures.remove(i);
            }
            if let Some((i, key)) = insert {
                c.key_postures.insert(i, key);
            }
        }
    }
}

/// World frame of every joint in `posture` (re-exported for the symmetry code).
pub(crate) fn joint_frames(c: &Character, posture: &Posture) -> Vec<Affine3A> {
    forward_kinematics(&c.skeleton, posture)
}
