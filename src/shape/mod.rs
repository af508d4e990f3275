//! Implicit muscle shapes (LEMAN §3.6, §4.1.4): spheres and superellipsoids with
//! Barr global deformations (taper, bend, twist).
//!
//! Every shape lives in its muscle's local frame. The inside-outside function
//! `g(p)` is negative inside, zero on the surface and positive outside, so the
//! non-penetration constraint of eq. (1b) reads `g(p) >= 0`.
//!
//! PROVISIONAL: sphere-exact, superellipsoid without deformations. The full
//! version (Barr deformations, tessellation, ray casting) replaces this file.

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

/// Barr (1984) global deformations applied along the local z axis, in this order:
/// taper (x and y scale linearly with z), twist (about z, radians per unit z),
/// bend (about the y axis, curvature in 1/m). All zero is the identity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BarrDeformation {
    pub taper: Vec2,
    pub twist: f32,
    pub bend: f32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MuscleShape {
    pub primitive: Primitive,
    #[serde(default)]
    pub deformation: BarrDeformation,
}

/// A point on a shape's surface with its outward unit normal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfacePoint {
    pub point: Vec3,
    pub normal: Vec3,
}

/// Triangle mesh from tessellation, in the shape's local frame.
#[derive(Clone, Debug, Default)]
pub struct TriMesh {
    pub positions: Vec<Vec3>,
    pub normals: Vec<Vec3>,
    pub indices: Vec<[u32; 3]>,
}

impl MuscleShape {
    pub fn sphere(radius: f32) -> Self {
        Self {
            primitive: Primitive::Sphere { radius },
            deformation: BarrDeformation::default(),
        }
    }

    pub fn superellipsoid(radii: Vec3, exponents: Vec2) -> Self {
        Self {
            primitive: Primitive::Superellipsoid { radii, exponents },
            deformation: BarrDeformation::default(),
        }
    }

    /// Checks parameters; the message names the offending field.
    pub fn validate(&self) -> Result<(), String> {
        match &self.primitive {
            Primitive::Sphere { radius } => {
                if !(radius.is_finite() && *radius > 0.0) {
                    return Err(format!("radius must be positive, got {radius}"));
                }
            }
            Primitive::Superellipsoid { radii, exponents } => {
                if !(radii.is_finite() && radii.min_element() > 0.0) {
                    return Err(format!("radii must be positive, got {radii}"));
                }
                if !(exponents.is_finite()
                    && exponents.min_element() >= 0.05
                    && exponents.max_element() <= 4.0)
                {
                    return Err(format!("exponents must lie in [0.05, 4], got {exponents}"));
                }
            }
        }
        Ok(())
    }

    /// Inside-outside function g(p): < 0 inside, 0 on the surface, > 0 outside.
    /// Scaled to behave like a distance near the surface.
    pub fn inside_outside(&self, p: Vec3) -> f32 {
        self.signed_distance(p)
    }

    /// Estimate of the signed distance to the surface (exact for spheres).
    pub fn signed_distance(&self, p: Vec3) -> f32 {
        match &self.primitive {
            Primitive::Sphere { radius } => p.length() - radius,
            Primitive::Superellipsoid { radii, exponents } => {
                let f = superellipsoid_f(p, *radii, *exponents);
                let len = p.length();
                if f <= 0.0 || len == 0.0 {
                    return -radii.min_element();
                }
                len * (1.0 - f.powf(-exponents.x * 0.5))
            }
        }
    }

    /// Outward gradient of g (not necessarily unit length).
    pub fn gradient(&self, p: Vec3) -> Vec3 {
        let e = 1e-4 * self.bounding_radius();
        let dx = Vec3::X * e;
        let dy = Vec3::Y * e;
        let dz = Vec3::Z * e;
        Vec3::new(
            self.inside_outside(p + dx) - self.inside_outside(p - dx),
            self.inside_outside(p + dy) - self.inside_outside(p - dy),
            self.inside_outside(p + dz) - self.inside_outside(p - dz),
        ) / (2.0 * e)
    }

    /// A nearby surface point and its outward normal, used to push skin points
    /// out of the muscle (eq. 16a).
    pub fn project_to_surface(&self, p: Vec3) -> SurfacePoint {
        let d = self.signed_distance(p);
        let n = self.gradient(p).normalize_or(Vec3::Z);
        let point = p - d * n;
        let normal = self.gradient(point).normalize_or(n);
        SurfacePoint { point, normal }
    }

    /// Radius of a sphere about the local origin that contains the shape.
    pub fn bounding_radius(&self) -> f32 {
        match &self.primitive {
            Primitive::Sphere { radius } => *radius,
            Primitive::Superellipsoid { radii, .. } => radii.length(),
        }
    }

    /// First crossing of the ray `origin + t dir` (dir unit) into the shape, t in [0, max_t].
    pub fn ray_intersect(&self, origin: Vec3, dir: Vec3, max_t: f32) -> Option<f32> {
        let steps = 64;
        let dt = max_t / steps as f32;
        let mut t0 = 0.0;
        let mut g0 = self.inside_outside(origin);
        if g0 <= 0.0 {
            return Some(0.0);
        }
        for k in 1..=steps {
            let t1 = k as f32 * dt;
            let g1 = self.inside_outside(origin + dir * t1);
            if g1 <= 0.0 {
                let (mut lo, mut hi) = (t0, t1);
                for _ in 0..30 {
                    let mid = 0.5 * (lo + hi);
                    if self.inside_outside(origin + dir * mid) > 0.0 {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                return Some(hi);
            }
            t0 = t1;
            g0 = g1;
        }
        let _ = g0;
        None
    }

    pub fn tessellate(&self, _slices: usize, _stacks: usize) -> TriMesh {
        TriMesh::default()
    }
}

/// Barr's inside-outside function F (F < 1 inside, 1 on the surface).
fn superellipsoid_f(p: Vec3, radii: Vec3, e: Vec2) -> f32 {
    let q = (p / radii).abs();
    let xy = q.x.powf(2.0 / e.y) + q.y.powf(2.0 / e.y);
    xy.powf(e.y / e.x) + q.z.powf(2.0 / e.x)
}
