//! The layered character as plain data (serde): skeleton, muscles, skins with
//! their fat and connective tissue, the environment, and key postures.
//! Nothing here knows about threads, the GPU or XR.

mod blend;
mod flesh;
mod morph;
mod muscle;
mod part;
mod resample;
mod skeleton;
mod skin;

pub use blend::{
    BlendTarget, Blendshapes, Boundary, SpringConstants, WEIGHT_SUM_SLACK, clamp_to_simplex,
    lerp_weights, set_weight, validate_weights,
};
pub use resample::{ResampleError, resample};

pub use flesh::{
    DEFAULT_MODAL_CLAMP, DEFAULT_MODES, EmbeddedMesh, FLESH_TIME_STEP, FLESH_TIME_STEP_RANGE,
    FemFlesh, Flesh, FleshDetail, MODAL_YOUNG, MODES_RANGE, ModalFlesh, ModalPart, WeightStroke,
};
pub use morph::{MorphOffset, MorphTarget, SAME_POSE, same_pose, validate_targets};
pub use muscle::{DEFAULT_MUSCLE_COLOR, DeformationDriver, DeformationParam, Muscle};
pub use part::{PART_FRICTION_RANGE, PART_STIFFNESS_RANGE, PartFriction, PartStiffness};
pub use skeleton::{Dof, Joint, Posture, Skeleton};
pub use skin::{Band, BandDefaults, DEFAULT_SKIN_COLOR, Skin, SkinMaterial, SkinPoints};

use glam::Vec3;
use serde::{Deserialize, Serialize};

/// Gravity and global damping (LEMAN eq. 7–8).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(default)]
pub struct Environment {
    /// Acceleration of gravity, m/s².
    pub gravity: Vec3,
    /// Global damping factor γ: force −γ v per unit mass... applied as −γ m v.
    pub global_damping: f32,
}

impl Default for Environment {
    fn default() -> Self {
        Self {
            gravity: Vec3::new(0.0, -9.81, 0.0),
            global_damping: 0.5,
        }
    }
}

/// A key posture: the skeleton's joint angles at a time, with the
/// Kochanek–Bartels parameters of the spline through it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyPosture {
    /// Time of the key posture, in s.
    pub time: f32,
    /// The joint angles at `time`.
    pub posture: Posture,
    /// Kochanek–Bartels tension of the spline at this key, from -1 to 1.
    #[serde(default)]
    pub tension: f32,
    /// Kochanek–Bartels continuity of the spline at this key, from -1 to 1.
    #[serde(default)]
    pub continuity: f32,
    /// Kochanek–Bartels bias of the spline at this key, from -1 to 1.
    #[serde(default)]
    pub bias: f32,
}

/// The whole layered model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Character {
    /// Name of the character.
    pub name: String,
    /// The articulated skeleton of joints.
    pub skeleton: Skeleton,
    /// The muscles attached to the skeleton's joints.
    #[serde(default)]
    pub muscles: Vec<Muscle>,
    /// The skins, each with its fat and connective tissue.
    #[serde(default)]
    pub skins: Vec<Skin>,
    /// Gravity and global damping.
    #[serde(default)]
    pub environment: Environment,
    /// Key postures, in strictly increasing time.
    #[serde(default)]
    pub key_postures: Vec<KeyPosture>,
    /// Kinematic muscles, or FEM flesh.
    #[serde(default)]
    pub flesh: Flesh,
}

/// A violated invariant, naming the field path (e.g. `muscles[3].joint`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InvalidField {
    /// Path of the offending field (e.g. `muscles[3].joint`).
    pub field: String,
    /// What invariant the field breaks.
    pub message: String,
}

impl InvalidField {
    /// Builds the error for the field path `field` with the explanation `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl Character {
    /// The blendshapes of the embedded mesh of FEM flesh, if any.
    pub fn blendshapes(&self) -> Option<&Blendshapes> {
        self.flesh.fem()?.blendshapes.as_deref()
    }

    /// How many blendshape targets a posture's weights address (0 without
    /// blendshapes).
    pub fn blend_targets(&self) -> usize {
        self.blendshapes().map_or(0, |b| b.targets.len())
    }

    /// Checks a posture for this character: one finite angle triple per
    /// joint, and blend weights (none, or one per target) on the simplex.
    pub fn check_posture(&self, posture: &Posture) -> Result<(), InvalidField> {
        posture.validate(self.skeleton.joints.len())?;
        validate_weights(&posture.blend, self.blend_targets())
    }

    /// Checks every cross-reference and physical parameter.
    pub fn validate(&self) -> Result<(), InvalidField> {
        self.skeleton.validate()?;
        let nj = self.skeleton.joints.len();
        for (k, m) in self.muscles.iter().enumerate() {
            m.validate(nj)
                .map_err(|e| InvalidField::new(format!("muscles[{k}].{}", e.field), e.message))?;
        }
        for (k, s) in self.skins.iter().enumerate() {
            s.validate(nj, self.muscles.len())
                .map_err(|e| InvalidField::new(format!("skins[{k}].{}", e.field), e.message))?;
        }
        if !self.environment.gravity.is_finite() {
            return Err(InvalidField::new("environment.gravity", "must be finite"));
        }
        let d = self.environment.global_damping;
        if !(d.is_finite() && d >= 0.0) {
            return Err(InvalidField::new(
                "environment.global_damping",
                format!("must be finite and non-negative, got {d}"),
            ));
        }
        self.flesh.validate()?;
        if let Some(fem) = self.flesh.fem() {
            let bones = self
                .skeleton
                .joints
                .iter()
                .filter(|j| j.parent.is_some())
                .count();
            if let Some(k) = fem.weight_strokes.iter().position(|s| s.bone >= bones) {
                return Err(InvalidField::new(
                    format!("flesh.Fem.weight_strokes[{k}].bone"),
                    format!("no such bone (the skeleton has {bones})"),
                ));
            }
            if let Some((k, p)) = fem
                .part_stiffness
                .iter()
                .enumerate()
                .find(|(_, p)| self.skeleton.find(&p.joint).is_none())
            {
                return Err(InvalidField::new(
                    format!("flesh.Fem.part_stiffness[{k}].joint"),
                    format!("the skeleton has no joint '{}'", p.joint),
                ));
            }
            if let Some((k, p)) = fem
                .part_friction
                .iter()
                .enumerate()
                .find(|(_, p)| self.skeleton.find(&p.joint).is_none())
            {
                return Err(InvalidField::new(
                    format!("flesh.Fem.part_friction[{k}].joint"),
                    format!("the skeleton has no joint '{}'", p.joint),
                ));
            }
            validate_targets(
                &fem.morph_targets,
                &self.skeleton,
                fem.blend_width.is_none(),
            )
            .map_err(|e| InvalidField::new(format!("flesh.Fem.{}", e.field), e.message))?;
            if let Some(b) = &fem.blendshapes {
                let Some(mesh) = &fem.embedded_mesh else {
                    return Err(InvalidField::new(
                        "flesh.Fem.blendshapes",
                        "blendshapes reshape the embedded mesh, and this flesh has none \
                         (give it one with `plasticine fem-import`)",
                    ));
                };
                b.validate(mesh.positions.len()).map_err(|e| {
                    InvalidField::new(format!("flesh.Fem.blendshapes.{}", e.field), e.message)
                })?;
            }
            // The targets blend the control lattice's own system; the
            // adaptive hierarchy is built without them.
            if !fem.morph_targets.is_empty() && fem.detail.is_some() {
                return Err(InvalidField::new(
                    "flesh.Fem.morph_targets",
                    "morph targets run on the lattice FEM flesh, not with adaptive detail",
                ));
            }
        }
        if let Flesh::Modal(m) = &self.flesh
            && !m.fem.morph_targets.is_empty()
        {
            // The modes are computed about one rest shape.
            return Err(InvalidField::new(
                "flesh.Modal.fem.morph_targets",
                "morph targets run on the lattice FEM flesh, not on modal flesh",
            ));
        }
        if let Flesh::Modal(m) = &self.flesh
            && m.fem.blendshapes.is_some()
        {
            return Err(InvalidField::new(
                "flesh.Modal.fem.blendshapes",
                "blendshapes run on the lattice FEM flesh, not on modal flesh",
            ));
        }
        let mut last = f32::NEG_INFINITY;
        for (k, key) in self.key_postures.iter().enumerate() {
            let f = |name: &str| format!("key_postures[{k}].{name}");
            if !key.time.is_finite() || key.time <= last {
                return Err(InvalidField::new(
                    f("time"),
                    format!(
                        "key times must be finite and strictly increasing, got {}",
                        key.time
                    ),
                ));
            }
            last = key.time;
            self.check_posture(&key.posture)
                .map_err(|e| InvalidField::new(f(&format!("posture.{}", e.field)), e.message))?;
            for (name, v) in [
                ("tension", key.tension),
                ("continuity", key.continuity),
                ("bias", key.bias),
            ] {
                if !(v.is_finite() && (-1.0..=1.0).contains(&v)) {
                    return Err(InvalidField::new(
                        f(name),
                        format!("must lie in [-1, 1], got {v}"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Duration of the key-posture motion (0 without keys).
    pub fn motion_duration(&self) -> f32 {
        match (self.key_postures.first(), self.key_postures.last()) {
            (Some(a), Some(b)) => b.time - a.time,
            _ => 0.0,
        }
    }
}
