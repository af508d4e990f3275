//! The undeformed primitive of a muscle: a sphere or Barr's superellipsoid.

use glam::{Vec2, Vec3};
use serde::{Deserialize, Serialize};

/// The undeformed primitive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Primitive {
    Sphere {
        radius: f32,
    },
    /// Barr's superellipsoid: radii along local x, y, z and the two exponents
    /// `(e1, e2)`: e1 shapes the north–south (z) profile, e2 the east–west (xy) one.
    /// 1 is an ellipsoid, → 0 a box, 2 an octahedron.
    Superellipsoid {
        radii: Vec3,
        exponents: Vec2,
    },
}
