//! Obstacles the flesh collides with: a signed distance (positive outside),
//! the outward normal, and the surface's friction and restitution.

use crate::character::InvalidField;
use glam::DVec3;

/// A plane obstacle: the ground (normal +y through y = 0) or a slope.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Plane {
    /// Outward unit normal.
    pub normal: DVec3,
    /// Signed offset: the plane is `normal · x = offset`.
    pub offset: f64,
    /// Coulomb friction coefficient μ ≥ 0 (3.20).
    pub friction: f64,
    /// Restitution ε ∈ [0, 1] (3.13): the share of the approach speed a
    /// contact leaves with.
    pub restitution: f64,
}

/// Friction of the default ground: rubbery flesh on a floor.
pub const GROUND_FRICTION: f64 = 0.8;
/// Restitution of the default ground: flesh barely bounces.
pub const GROUND_RESTITUTION: f64 = 0.1;

impl Plane {
    /// The floor the renderer draws: y = 0, normal +y.
    pub fn ground() -> Self {
        Self {
            normal: DVec3::Y,
            offset: 0.0,
            friction: GROUND_FRICTION,
            restitution: GROUND_RESTITUTION,
        }
    }

    /// A plane through `point` with outward `normal` (normalised).
    pub fn through(point: DVec3, normal: DVec3, friction: f64, restitution: f64) -> Self {
        let normal = normal.normalize();
        Self {
            normal,
            offset: normal.dot(point),
            friction,
            restitution,
        }
    }

    /// Refuses a plane no contact could be solved against, naming the field.
    pub fn validate(&self) -> Result<(), InvalidField> {
        if !(self.normal.is_finite() && (self.normal.length() - 1.0).abs() < 1e-6) {
            return Err(InvalidField::new(
                "ground.normal",
                format!("must be a unit vector, got {}", self.normal),
            ));
        }
        if !self.offset.is_finite() {
            return Err(InvalidField::new("ground.offset", "must be finite"));
        }
        if !(self.friction.is_finite() && self.friction >= 0.0) {
            return Err(InvalidField::new(
                "friction",
                format!("must be a finite number ≥ 0, got {}", self.friction),
            ));
        }
        if !(0.0..=1.0).contains(&self.restitution) {
            return Err(InvalidField::new(
                "restitution",
                format!("must lie in [0, 1], got {}", self.restitution),
            ));
        }
        Ok(())
    }

    /// Signed distance of `x` from the plane (negative below it).
    pub fn distance(&self, x: DVec3) -> f64 {
        self.normal.dot(x) - self.offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_friction_restitution_and_nan_are_refused_naming_the_field() {
        let mut p = Plane::ground();
        assert!(p.validate().is_ok());
        p.friction = -0.1;
        assert_eq!(p.validate().unwrap_err().field, "friction");
        p.friction = 0.5;
        p.restitution = 1.5;
        assert_eq!(p.validate().unwrap_err().field, "restitution");
        p.restitution = f64::NAN;
        assert_eq!(p.validate().unwrap_err().field, "restitution");
        p.restitution = 0.0;
        p.normal = DVec3::new(f64::NAN, 1.0, 0.0);
        assert_eq!(p.validate().unwrap_err().field, "ground.normal");
    }

    #[test]
    fn a_slope_measures_distance_along_its_normal() {
        let n = DVec3::new(-0.5, 3f64.sqrt() / 2.0, 0.0);
        let p = Plane::through(DVec3::new(1.0, 0.0, 0.0), n, 0.3, 0.0);
        assert!(p.distance(DVec3::new(1.0, 0.0, 0.0)).abs() < 1e-12);
        assert!((p.distance(DVec3::new(1.0, 0.0, 0.0) + n * 0.25) - 0.25).abs() < 1e-12);
    }
}
