//! Obstacles the flesh collides with: a signed distance (positive outside),
//! the outward normal, the surface's velocity, and its friction and
//! restitution. The ground is a still [`Plane`]; the animator's hand pushes
//! with a moving [`Capsule`] (Galoppo eq. 3.19: the contact's normal
//! velocity is measured against the obstacle's).

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
        check_surface("", self.friction, self.restitution)
    }

    /// Signed distance of `x` from the plane (negative below it).
    pub fn distance(&self, x: DVec3) -> f64 {
        self.normal.dot(x) - self.offset
    }
}

/// Refuses a surface's friction < 0 or restitution outside [0, 1] (or
/// NaN), naming the field under `prefix`.
fn check_surface(prefix: &str, friction: f64, restitution: f64) -> Result<(), InvalidField> {
    if !(friction.is_finite() && friction >= 0.0) {
        return Err(InvalidField::new(
            format!("{prefix}friction"),
            format!("must be a finite number ≥ 0, got {friction}"),
        ));
    }
    if !(0.0..=1.0).contains(&restitution) {
        return Err(InvalidField::new(
            format!("{prefix}restitution"),
            format!("must lie in [0, 1], got {restitution}"),
        ));
    }
    Ok(())
}

/// The ground a responding skeleton lands on, and the height its lowest
/// contact proxy starts at (none: where the posture puts it).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GroundDrop {
    /// The ground plane, its friction and restitution.
    pub plane: Plane,
    /// Start height of the lowest contact proxy over the ground, m.
    pub drop: Option<f64>,
}

/// Friction of the hand's push: a palm on skin.
pub const HAND_FRICTION: f64 = 0.5;
/// Restitution of the hand's push: none (a palm does not bounce flesh).
pub const HAND_RESTITUTION: f64 = 0.0;

/// A moving capsule: the segment from `a` to `b` (at `time`) swept by a
/// ball of `radius`, translating at `velocity` (the hand's push tool).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Capsule {
    /// The segment's ends at `time` (world, m).
    pub a: DVec3,
    /// See `a`.
    pub b: DVec3,
    /// The ball's radius, m.
    pub radius: f64,
    /// The capsule's velocity, m/s: it keeps moving at it after `time`
    /// until told otherwise.
    pub velocity: DVec3,
    /// When the ends were where `a` and `b` say, s (simulated time).
    pub time: f64,
    /// Coulomb friction coefficient μ ≥ 0.
    pub friction: f64,
    /// Restitution ε ∈ [0, 1].
    pub restitution: f64,
}

impl Capsule {
    /// A hand's capsule from `a` to `b` at time `time`, moving at `velocity`.
    pub fn hand(a: DVec3, b: DVec3, radius: f64, velocity: DVec3, time: f64) -> Self {
        Self {
            a,
            b,
            radius,
            velocity,
            time,
            friction: HAND_FRICTION,
            restitution: HAND_RESTITUTION,
        }
    }

    /// Refuses a capsule no contact could be solved against, naming the field.
    pub fn validate(&self) -> Result<(), InvalidField> {
        let finite = [self.a, self.b, self.velocity]
            .iter()
            .all(|v| v.is_finite())
            && self.time.is_finite();
        if !finite {
            return Err(InvalidField::new(
                "push",
                "the hand's capsule is not finite",
            ));
        }
        if !(self.radius.is_finite() && self.radius > 0.0) {
            return Err(InvalidField::new(
                "push.radius",
                format!("must be a finite length > 0, got {}", self.radius),
            ));
        }
        check_surface("push.", self.friction, self.restitution)
    }

    /// The capsule moved on to time t.
    pub fn at(&self, t: f64) -> Self {
        let shift = self.velocity * (t - self.time);
        Self {
            a: self.a + shift,
            b: self.b + shift,
            time: t,
            ..*self
        }
    }

    /// Signed distance of `x` from the capsule's surface (negative inside)
    /// and the outward normal there.
    pub fn distance_normal(&self, x: DVec3) -> (f64, DVec3) {
        let ab = self.b - self.a;
        let len2 = ab.length_squared();
        let s = if len2 > 0.0 {
            ((x - self.a).dot(ab) / len2).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let off = x - (self.a + ab * s);
        let r = off.length();
        // On the axis any direction away from it will do.
        let n = if r > 1e-12 {
            off / r
        } else {
            ab.any_orthonormal_vector()
        };
        (r - self.radius, n)
    }
}

/// Something the flesh collides with in a step: where its surface is
/// against a point, how it moves, and how it answers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Obstacle {
    /// A still plane (the ground).
    Plane(Plane),
    /// A moving capsule (the hand).
    Capsule(Capsule),
}

impl Obstacle {
    /// Signed distance of `x` (negative inside) and the outward normal.
    pub fn distance_normal(&self, x: DVec3) -> (f64, DVec3) {
        match self {
            Self::Plane(p) => (p.distance(x), p.normal),
            Self::Capsule(c) => c.distance_normal(x),
        }
    }

    /// The surface's velocity.
    pub fn velocity(&self) -> DVec3 {
        match self {
            Self::Plane(_) => DVec3::ZERO,
            Self::Capsule(c) => c.velocity,
        }
    }

    /// Coulomb friction coefficient μ.
    pub fn friction(&self) -> f64 {
        match self {
            Self::Plane(p) => p.friction,
            Self::Capsule(c) => c.friction,
        }
    }

    /// Restitution ε.
    pub fn restitution(&self) -> f64 {
        match self {
            Self::Plane(p) => p.restitution,
            Self::Capsule(c) => c.restitution,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capsule_measures_from_its_segment_and_moves_with_its_velocity() {
        let c = Capsule::hand(
            DVec3::ZERO,
            DVec3::new(0.0, 0.0, 0.2),
            0.05,
            DVec3::new(1.0, 0.0, 0.0),
            2.0,
        );
        assert!(c.validate().is_ok());
        // Beside the middle: radial.
        let (d, n) = c.distance_normal(DVec3::new(0.0, 0.15, 0.1));
        assert!((d - 0.10).abs() < 1e-12 && (n - DVec3::Y).length() < 1e-12);
        // Past an end: from the end's ball.
        let (d, n) = c.distance_normal(DVec3::new(0.0, 0.0, 0.5));
        assert!((d - 0.25).abs() < 1e-12 && (n - DVec3::Z).length() < 1e-12);
        // Inside: negative.
        assert!(c.distance_normal(DVec3::new(0.01, 0.0, 0.1)).0 < 0.0);
        // Half a second on, 0.5 m along x.
        let later = c.at(2.5);
        assert!((later.a - DVec3::new(0.5, 0.0, 0.0)).length() < 1e-12);
        let o = Obstacle::Capsule(later);
        assert_eq!(o.velocity(), DVec3::new(1.0, 0.0, 0.0));
        let mut bad = c;
        bad.radius = 0.0;
        assert_eq!(bad.validate().unwrap_err().field, "push.radius");
        bad = c;
        bad.friction = f64::NAN;
        assert_eq!(bad.validate().unwrap_err().field, "push.friction");
    }

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
