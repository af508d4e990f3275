use super::InvalidField;
use glam::{Quat, Vec3};
use serde::{Deserialize, Serialize};

/// One rotational degree of freedom about a local axis, with its limits (radians).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dof {
    /// Whether the joint may turn about this axis; if not, `clamp` holds the angle at zero.
    pub free: bool,
    /// Lower angle limit, in rad.
    pub min: f32,
    /// Upper angle limit, in rad.
    pub max: f32,
}

impl Default for Dof {
    fn default() -> Self {
        Self {
            free: true,
            min: -std::f32::consts::PI,
            max: std::f32::consts::PI,
        }
    }
}

impl Dof {
    /// A degree of freedom that cannot turn: its angle is always zero.
    pub const LOCKED: Dof = Dof {
        free: false,
        min: 0.0,
        max: 0.0,
    };

    /// Clamps `angle` (rad) to the limits, or returns zero if the DOF is not free.
    pub fn clamp(&self, angle: f32) -> f32 {
        if self.free {
            angle.clamp(self.min, self.max)
        } else {
            0.0
        }
    }
}

/// A joint of the articulated skeleton. Its local frame is
/// `T(offset) · rest_rotation · Rx(θx) · Ry(θy) · Rz(θz)` relative to the parent
/// (or to the world for the root, plus the posture's root translation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Joint {
    /// Name of the joint, by which `Skeleton::find` looks it up.
    pub name: String,
    /// Index of the parent joint in `Skeleton::joints`; `None` only for the root, joint 0.
    pub parent: Option<usize>,
    /// Rest translation from the parent's frame, metres.
    pub offset: Vec3,
    /// Rest rotation relative to the parent's frame, applied before the DOF rotations.
    #[serde(default)]
    pub rest_rotation: Quat,
    /// Rotational DOFs about local x, y, z.
    #[serde(default = "default_dofs")]
    pub dofs: [Dof; 3],
    /// The part (this joint's placement and its muscles) is locked against
    /// edits: the tools refuse to move, delete or reshape it until it is
    /// unlocked (`Command::LockPart`). Unrelated to the DOFs' `free` flags,
    /// which only keep IK from turning the joint. Absent in files written
    /// before it existed, and left out when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub locked: bool,
}

fn default_dofs() -> [Dof; 3] {
    [Dof::default(); 3]
}

/// Joint hierarchy. Parents come before their children, so one forward pass
/// computes every world transform.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skeleton {
    /// The joints, parents before their children; joint 0 is the root.
    pub joints: Vec<Joint>,
}

impl Skeleton {
    /// Checks the hierarchy order, that offsets are finite, rest rotations are unit
    /// quaternions and DOF limits are ordered.
    pub fn validate(&self) -> Result<(), InvalidField> {
        if self.joints.is_empty() {
            return Err(InvalidField::new(
                "skeleton.joints",
                "a skeleton needs at least one joint",
            ));
        }
        for (k, j) in self.joints.iter().enumerate() {
            let f = |name: &str| format!("skeleton.joints[{k}].{name}");
            match j.parent {
                None if k != 0 => {
                    return Err(InvalidField::new(
                        f("parent"),
                        "only joint 0 may be the root",
                    ));
                }
                Some(_) if k == 0 => {
                    return Err(InvalidField::new(
                        f("parent"),
                        "joint 0 is the root and has no parent",
                    ));
                }
                Some(p) if p >= k => {
                    return Err(InvalidField::new(
                        f("parent"),
                        format!("parent {p} must come before joint {k}"),
                    ));
                }
                _ => {}
            }
            if !j.offset.is_finite() {
                return Err(InvalidField::new(f("offset"), "must be finite"));
            }
            if !(j.rest_rotation.is_finite() && (j.rest_rotation.length() - 1.0).abs() < 1e-3) {
                return Err(InvalidField::new(
                    f("rest_rotation"),
                    "must be a unit quaternion",
                ));
            }
            for (a, d) in j.dofs.iter().enumerate() {
                if d.free && !(d.min.is_finite() && d.max.is_finite() && d.min <= d.max) {
                    return Err(InvalidField::new(
                        f(&format!("dofs[{a}]")),
                        format!(
                            "limits must be finite with min <= max, got [{}, {}]",
                            d.min, d.max
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Index of the first joint named `name`, if any.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.joints.iter().position(|j| j.name == name)
    }

    /// Indices of the children of joint `j`.
    pub fn children(&self, j: usize) -> impl Iterator<Item = usize> + '_ {
        self.joints
            .iter()
            .enumerate()
            .filter(move |(_, c)| c.parent == Some(j))
            .map(|(k, _)| k)
    }

    /// The rest posture: all angles zero.
    pub fn rest_posture(&self) -> Posture {
        Posture {
            root_translation: Vec3::ZERO,
            angles: vec![Vec3::ZERO; self.joints.len()],
            blend: Vec::new(),
        }
    }
}

/// Joint angles (radians about local x, y, z) for every joint, plus a
/// translation of the root.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Posture {
    /// Translation of the root joint, in m.
    #[serde(default)]
    pub root_translation: Vec3,
    /// Angles of every joint about its local x, y, z axes, in rad, one entry per joint.
    pub angles: Vec<Vec3>,
    /// Weights of the embedded mesh's blendshape targets (w₁, w₂, …; the
    /// base takes the rest), keyed and interpolated with the joints; empty
    /// is the base alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blend: Vec<f32>,
}

impl Posture {
    /// Checks that there is one finite angle triple per joint of a skeleton of `joint_count`
    /// joints and that the root translation is finite.
    pub fn validate(&self, joint_count: usize) -> Result<(), InvalidField> {
        if self.angles.len() != joint_count {
            return Err(InvalidField::new(
                "angles",
                format!(
                    "has {} entries but the skeleton has {joint_count} joints",
                    self.angles.len()
                ),
            ));
        }
        if !self.root_translation.is_finite() || self.angles.iter().any(|a| !a.is_finite()) {
            return Err(InvalidField::new("angles", "must be finite"));
        }
        Ok(())
    }
}
