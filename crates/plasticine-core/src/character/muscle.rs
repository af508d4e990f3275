use super::InvalidField;
use crate::shape::{BarrDeformation, MuscleShape};
use glam::{Quat, Vec3};
use serde::{Deserialize, Serialize};

/// Which Barr deformation parameter a driver animates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeformationParam {
    /// The taper of x along the shape's z axis (`taper.x`).
    TaperX,
    /// The taper of y along the shape's z axis (`taper.y`).
    TaperY,
    /// The twist about the shape's z axis, in rad per m.
    Twist,
    /// The bend about the shape's y axis, a curvature in 1/m.
    Bend,
}

/// Ties a deformation parameter to a joint angle (a flexing biceps):
/// `param += gain · angle(joint, axis)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeformationDriver {
    /// The deformation parameter animated.
    pub param: DeformationParam,
    /// Index of the joint whose angle drives the parameter.
    pub joint: usize,
    /// The joint's local axis whose angle is used: 0 for x, 1 for y, 2 for z.
    pub axis: usize,
    /// Change of the parameter per radian of joint angle.
    pub gain: f32,
}

/// The colour of an unpainted muscle (linear RGB): what it is drawn in, and
/// what a first paint stroke blends from.
pub const DEFAULT_MUSCLE_COLOR: [f32; 3] = [0.78, 0.25, 0.22];

/// A muscle: an implicit solid attached rigidly to a joint, optionally deformed
/// by joint angles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Muscle {
    /// Index of the joint the muscle is rigidly attached to.
    pub joint: usize,
    /// Placement of the shape's frame in the joint's frame.
    #[serde(default)]
    pub offset: Vec3,
    /// Rotation of the shape's frame in the joint's frame.
    #[serde(default)]
    pub rotation: Quat,
    /// The implicit solid, with its Barr deformation at rest.
    pub shape: MuscleShape,
    /// Drivers that deform the shape with joint angles.
    #[serde(default)]
    pub drivers: Vec<DeformationDriver>,
    /// Painted colour, linear RGB in [0, 1]; None draws it in
    /// [`DEFAULT_MUSCLE_COLOR`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color: Option<[f32; 3]>,
}

impl Muscle {
    /// Checks the joint and driver references against `joint_count` joints, the placement
    /// and the shape.
    pub fn validate(&self, joint_count: usize) -> Result<(), InvalidField> {
        if self.joint >= joint_count {
            return Err(InvalidField::new(
                "joint",
                format!(
                    "joint {} does not exist (the skeleton has {joint_count})",
                    self.joint
                ),
            ));
        }
        if !self.offset.is_finite() {
            return Err(InvalidField::new("offset", "must be finite"));
        }
        if !(self.rotation.is_finite() && (self.rotation.length() - 1.0).abs() < 1e-3) {
            return Err(InvalidField::new("rotation", "must be a unit quaternion"));
        }
        self.shape
            .validate()
            .map_err(|e| InvalidField::new(format!("shape.{}", e.field), e.message))?;
        if let Some(c) = self.color
            && !c.iter().all(|x| (0.0..=1.0).contains(x))
        {
            return Err(InvalidField::new(
                "color",
                format!("each channel must be a number from 0 to 1, got {c:?}"),
            ));
        }
        for (k, d) in self.drivers.iter().enumerate() {
            if d.joint >= joint_count || d.axis > 2 || !d.gain.is_finite() {
                return Err(InvalidField::new(
                    format!("drivers[{k}]"),
                    "needs an existing joint, axis 0..=2 and a finite gain",
                ));
            }
        }
        Ok(())
    }

    /// The shape with its drivers applied for the given joint angles.
    pub fn posed_shape(&self, angles: &[Vec3]) -> MuscleShape {
        if self.drivers.is_empty() {
            return self.shape.clone();
        }
        let mut shape = self.shape.clone();
        let d: &mut BarrDeformation = &mut shape.deformation;
        for drv in &self.drivers {
            let a = angles.get(drv.joint).map_or(0.0, |v| v[drv.axis]) * drv.gain;
            match drv.param {
                DeformationParam::TaperX => d.taper.x += a,
                DeformationParam::TaperY => d.taper.y += a,
                DeformationParam::Twist => d.twist += a,
                DeformationParam::Bend => d.bend += a,
            }
        }
        shape
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec2;

    /// A biceps whose taper follows the elbow: flexing changes the shape, and
    /// the rest of the parameters stay as modelled.
    #[test]
    fn drivers_tie_deformations_to_joint_angles() {
        let biceps = Muscle {
            joint: 0,
            offset: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            shape: MuscleShape::superellipsoid(Vec3::new(0.04, 0.04, 0.12), Vec2::ONE),
            drivers: vec![
                DeformationDriver {
                    param: DeformationParam::TaperX,
                    joint: 1,
                    axis: 0,
                    gain: -2.0,
                },
                DeformationDriver {
                    param: DeformationParam::Twist,
                    joint: 1,
                    axis: 2,
                    gain: 0.5,
                },
            ],
            color: None,
        };
        let straight = biceps.posed_shape(&[Vec3::ZERO, Vec3::ZERO]);
        assert_eq!(straight, biceps.shape);
        let flexed = biceps.posed_shape(&[Vec3::ZERO, Vec3::new(-1.2, 0.0, 0.4)]);
        assert!((flexed.deformation.taper.x - 2.4).abs() < 1e-6);
        assert!((flexed.deformation.twist - 0.2).abs() < 1e-6);
        assert_eq!(flexed.deformation.taper.y, 0.0);
        // The flexed muscle is wider toward +z: a point just outside the
        // straight biceps there is inside the flexed one.
        // At z = 0.03 the half-width grows from 0.0387 to 0.0387·(1 + 2.4·0.03) = 0.0415.
        let p = Vec3::new(0.040, 0.0, 0.03);
        assert!(!straight.is_inside(p) && flexed.is_inside(p));
    }

    /// A painted colour must be three channels in [0, 1]; the error names it.
    #[test]
    fn a_muscle_colour_outside_0_to_1_is_refused_by_name() {
        let mut m = Muscle {
            joint: 0,
            offset: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            shape: MuscleShape::sphere(0.05),
            drivers: Vec::new(),
            color: Some([0.9, 0.3, 0.0]),
        };
        assert!(m.validate(1).is_ok());
        for bad in [[1.5, 0.0, 0.0], [0.0, -0.1, 0.0], [0.0, 0.0, f32::NAN]] {
            m.color = Some(bad);
            let err = m.validate(1).unwrap_err();
            assert!(format!("{err}").contains("color"), "{err}");
        }
    }
}
