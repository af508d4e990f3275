//! The undeformed primitive of a muscle: a sphere or Barr's superellipsoid.

use glam::{Vec2, Vec3};
use serde::{Deserialize, Serialize};

/// The undeformed primitive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Primitive {
    /// A sphere about the local origin.
    Sphere {
        /// Radius (m).
        radius: f32,
    },
    /// Barr's superellipsoid: radii along local x, y, z and the two exponents
    /// `(e1, e2)`: e1 shapes the north–south (z) profile, e2 the east–west (xy) one.
    /// 1 is an ellipsoid, → 0 a box, 2 an octahedron.
    Superellipsoid {
        /// Radii along local x, y, z (m).
        radii: Vec3,
        /// Exponents `(e1, e2)`: `e1` for the z profile, `e2` for the xy one.
        exponents: Vec2,
    },
}
