//! Implicit muscle shapes (LEMAN §3.6, §4.1.4): spheres and superellipsoids with
//! Barr global deformations (taper, twist, bend).
//!
//! Every shape lives in its muscle's local frame. The inside-outside function
//! `g(p)` is negative inside, zero on the surface and positive outside, so the
//! non-penetration constraint of eq. (1b) reads `g(p) >= 0`.
//!
//! # The inside-outside function
//!
//! The primitive is Barr's superellipsoid in gauge form `R(q) = F(q)^(e1/2)`
//! (see `superquadric.rs`), homogeneous of degree one, with the surface at
//! `R = 1`. A deformed point `p` is mapped back with the closed-form inverse of
//! the Barr deformations (see `barr.rs`), `q = D⁻¹(p)`, and
//!
//! ```text
//! g(p) = (R(q) − 1) / |∇_p R|,        ∇_p R = J_{D⁻¹}ᵀ ∇_q R
//! ```
//!
//! i.e. Taubin's first-order distance to the zero set. Why this and not the
//! radial estimate `|q|(1 − 1/R)`: the radial one measures along the ray from
//! the centre and overestimates the distance by `1/cos` of the angle between
//! that ray and the normal (5× on the flat side of a 10:1 ellipsoid), which
//! would make metre thresholds (fat thickness, culling) wrong; and it does not
//! account for the stretching of the deformations. The Taubin form is exact
//! for spheres, exact to first order near every surface, sees the deformation
//! through `∇_p R`, and for convex undeformed primitives (e1, e2 ≤ 2) it is a
//! lower bound on the true distance outside (the shape lies in the half-space
//! bounded by the tangent plane of the scaled surface through `q`), which is
//! the safe side for culling. It is linear along rays from the centre, so it
//! is negative everywhere inside, and one pass computes it together with the
//! outward unit normal `∇_p R / |∇_p R|` ([`MuscleShape::value_and_normal`]).
//!
//! The exact gradient, `∇g = ∇_p R / |∇_p R| + (R − 1) ∇(1/|∇_p R|)`, needs
//! second derivatives in its second term; that term vanishes on the surface
//! and we take it by forward differences (in f64, so it is accurate), which
//! costs three more passes ([`MuscleShape::evaluate`]). Undeformed spheres use
//! the exact `|p| − r` throughout.
//!
//! Caveat: for exponents above 1 the superellipsoid's curvature is infinite
//! where a coordinate crosses zero (`|x|^(2/e)` with `2/e < 2`), so off the
//! surface the exact gradient of g grows without bound near those planes of
//! the primitive (it stays finite in floating point). The one-pass normal of
//! [`MuscleShape::value_and_normal`] does not have this problem and is what
//! [`MuscleShape::project_to_surface`] uses.
//!
//! Deformations are applied taper → twist → bend; see [`BarrDeformation`].

mod barr;
mod primitive;
mod superquadric;
mod tessellate;
#[cfg(test)]
mod tests;

pub use barr::BarrDeformation;
pub use primitive::Primitive;

use glam::{DVec3, Vec2, Vec3};
use serde::{Deserialize, Serialize};
use superquadric::Superquadric;

/// A shape parameter out of its range, naming the parameter (`radius`,
/// `deformation.taper.x`, …).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct InvalidShape {
    /// The parameter's path within the shape.
    pub field: String,
    /// What range it breaks.
    pub message: String,
}

impl InvalidShape {
    /// The error for parameter `field`, with the explanation `message`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A muscle's implicit shape in its local frame: a primitive with Barr deformations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MuscleShape {
    /// The undeformed primitive: a sphere or a superellipsoid.
    pub primitive: Primitive,
    /// Taper, twist and bend applied to the primitive (identity by default).
    #[serde(default)]
    pub deformation: BarrDeformation,
}

/// A point on a shape's surface with its outward unit normal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfacePoint {
    /// The point on the surface, in the shape's local frame.
    pub point: Vec3,
    /// The outward unit normal at `point`.
    pub normal: Vec3,
}

/// Triangle mesh from tessellation, in the shape's local frame.
#[derive(Clone, Debug, Default)]
pub struct TriMesh {
    /// Vertex positions, in the shape's local frame.
    pub positions: Vec<Vec3>,
    /// Outward unit normal at each vertex.
    pub normals: Vec<Vec3>,
    /// Triangles as three indices into `positions`.
    pub indices: Vec<[u32; 3]>,
}

/// Newton iterations allowed in [`MuscleShape::project_to_surface`] before it
/// falls back to bisection.
const PROJECT_NEWTON_ITERATIONS: usize = 32;

impl MuscleShape {
    /// An undeformed sphere of `radius` (m) about the local origin.
    pub fn sphere(radius: f32) -> Self {
        Self {
            primitive: Primitive::Sphere { radius },
            deformation: BarrDeformation::default(),
        }
    }

    /// An undeformed superellipsoid with `radii` (m) along local x, y, z and exponents `(e1, e2)`.
    pub fn superellipsoid(radii: Vec3, exponents: Vec2) -> Self {
        Self {
            primitive: Primitive::Superellipsoid { radii, exponents },
            deformation: BarrDeformation::default(),
        }
    }

    /// The same primitive with a deformation.
    pub fn with_deformation(mut self, deformation: BarrDeformation) -> Self {
        self.deformation = deformation;
        self
    }

    /// Checks parameters; the message names the offending field.
    ///
    /// Besides the primitive's own ranges, the deformation must keep the shape
    /// one-to-one: taper factors `1 + taper·z` positive over the z extent, and
    /// the bend neither wrapping the z extent past a full circle nor putting
    /// its centre of curvature inside the (tapered) shape.
    pub fn validate(&self) -> Result<(), InvalidShape> {
        match &self.primitive {
            Primitive::Sphere { radius } => {
                if !(radius.is_finite() && *radius > 0.0) {
                    return Err(InvalidShape::new(
                        "radius",
                        format!("must be positive, got {radius}"),
                    ));
                }
            }
            Primitive::Superellipsoid { radii, exponents } => {
                if !(radii.is_finite() && radii.min_element() > 0.0) {
                    return Err(InvalidShape::new(
                        "radii",
                        format!("must be positive, got {radii}"),
                    ));
                }
                if !(exponents.is_finite()
                    && exponents.min_element() >= 0.05
                    && exponents.max_element() <= 4.0)
                {
                    return Err(InvalidShape::new(
                        "exponents",
                        format!("must lie in [0.05, 4], got {exponents}"),
                    ));
                }
            }
        }
        let sq = self.superquadric();
        self.deformation.validate(sq.radii.z, sq.xy_radius_bound())
    }

    /// Inside-outside function g(p): < 0 inside, 0 on the surface, > 0 outside.
    /// Scaled to behave like a distance near the surface (see the module docs).
    /// One evaluation of the primitive; no allocation.
    #[inline]
    pub fn inside_outside(&self, p: Vec3) -> f32 {
        self.value_normal64(p.as_dvec3()).0 as f32
    }

    /// Whether `p` is strictly inside, as cheaply as possible: the constraint
    /// solver's hot loop asks this for every skin point near a muscle every
    /// step, and only needs the sign. Undeformed primitives use Barr's F < 1 in
    /// f32 (no powers for spheres and ellipsoids, a box reject first);
    /// deformed ones fall back to `inside_outside`.
    #[inline]
    pub fn is_inside(&self, p: Vec3) -> bool {
        if !self.deformation.is_identity() {
            return self.inside_outside(p) < 0.0;
        }
        match &self.primitive {
            Primitive::Sphere { radius } => p.length_squared() < radius * radius,
            Primitive::Superellipsoid { radii, exponents } => {
                let u = (p / *radii).abs();
                // Each term of F bounds |u_i|^(2/e1) from below: outside the box is outside.
                if u.max_element() >= 1.0 {
                    return false;
                }
                let (e1, e2) = (exponents.x, exponents.y);
                if e1 == 1.0 && e2 == 1.0 {
                    return u.length_squared() < 1.0;
                }
                let xy = powk(u.x, 2.0 / e2) + powk(u.y, 2.0 / e2);
                let f = if xy > 0.0 { powk(xy, e2 / e1) } else { 0.0 } + powk(u.z, 2.0 / e1);
                f < 1.0
            }
        }
    }

    /// `g(p)` and the outward unit normal of the level set of the primitive's
    /// gauge through `p`, at the cost of one evaluation. On the surface the
    /// normal is exactly `∇g/|∇g|`; off it, it differs by O(g). This is what a
    /// constraint solver wants in its hot loop.
    #[inline]
    pub fn value_and_normal(&self, p: Vec3) -> (f32, Vec3) {
        let (g, n, _) = self.value_normal64(p.as_dvec3());
        (g as f32, n.as_vec3())
    }

    /// `value_and_normal` as cheaply as possible (the f32 path for undeformed
    /// primitives).
    #[inline]
    pub fn fast_value_and_normal(&self, p: Vec3) -> (f32, Vec3) {
        self.value_and_normal_f32(p)
            .unwrap_or_else(|| self.value_and_normal(p))
    }

    /// A distance from `p` to the surface (negative inside) that can be
    /// trusted below `near`, with the outward normal to push along: what the
    /// fat constraint asks for every skin point near a muscle every step.
    /// Undeformed primitives: the Taubin gauge (a lower bound on the distance
    /// outside convex primitives), one f32 evaluation. Deformed ones: the
    /// gauge culls, and below `near` the distance to the projected surface
    /// point decides, with the gauge's sign, because the inverse deformation
    /// stretches the gauge unevenly. Callers cull first by the bounding
    /// sphere: far outside it the inverse deformation (a taper's
    /// 1/(1 + kz)) makes the gauge meaningless (a point 30 cm from a tapered
    /// beak read 5 mm).
    #[inline]
    pub fn distance_and_normal(&self, p: Vec3, near: f32) -> (f32, Vec3) {
        if let Some(g) = self.value_and_normal_f32(p) {
            return g;
        }
        let (g, n) = self.value_and_normal(p);
        // A deformation stretches the gauge: it is no lower bound on the
        // distance (a taper's tip read a centimetre where the surface was a
        // few millimetres away), so it only culls, with room to spare.
        if g >= DEFORMED_GAUGE_SLACK * near.max(0.0) + 1e-3 * self.bounding_radius() {
            return (g, n);
        }
        let q = p.as_dvec3();
        let (x, normal) = self.project64(q);
        let d = (q.distance(x) as f32).copysign(g);
        (d, normal.as_vec3())
    }

    /// The semi-axes of an undeformed sphere or ellipsoid (a superellipsoid
    /// with both exponents 1), whose gauge is the closed form of
    /// `value_and_normal_f32` with no powers: the skin's constraint pass
    /// evaluates such muscles eight points at a time. `None` for other shapes.
    pub fn ellipsoid_radii(&self) -> Option<Vec3> {
        if !self.deformation.is_identity() {
            return None;
        }
        match self.primitive {
            Primitive::Sphere { radius } => Some(Vec3::splat(radius)),
            Primitive::Superellipsoid { radii, exponents } if exponents == Vec2::ONE => Some(radii),
            Primitive::Superellipsoid { .. } => None,
        }
    }

    /// `value_and_normal` in f32 for undeformed primitives (the same
    /// Taubin-normalised gauge, `g = (R − 1)/|∇R|`, with f32 `powf`): the
    /// constraint solver evaluates it for every resting skin point every step.
    /// `None` for deformed shapes and the degenerate centre.
    #[inline]
    fn value_and_normal_f32(&self, p: Vec3) -> Option<(f32, Vec3)> {
        if !self.deformation.is_identity() {
            return None;
        }
        let (r, grad) = match &self.primitive {
            Primitive::Sphere { radius } => {
                let len = p.length();
                return (len > 0.0).then(|| (len - radius, p / len));
            }
            Primitive::Superellipsoid { radii, exponents } => {
                let u = p / *radii;
                let (e1, e2) = (exponents.x, exponents.y);
                if e1 == 1.0 && e2 == 1.0 {
                    let r = u.length();
                    if r <= 0.0 {
                        return None;
                    }
                    (r, u / (r * *radii))
                } else {
                    let au = u.abs();
                    let m = au.max_element();
                    if m.is_nan() || m <= 0.0 {
                        return None;
                    }
                    // R is homogeneous of degree 1: evaluate at t = |u|/max|u|.
                    let t = au / m;
                    let (k1, k2) = (2.0 / e1, 2.0 / e2);
                    let (px, py, pz) = (powk(t.x, k2), powk(t.y, k2), powk(t.z, k1));
                    let s = px + py;
                    let tt = if s > 0.0 { powk(s, e2 / e1) } else { 0.0 };
                    let f = tt + pz;
                    let rt = powk(f, 0.5 * e1);
                    let c = rt / f;
                    let cxy = if s > 0.0 { c * tt / s } else { 0.0 };
                    let gx = if t.x > 0.0 { cxy * px / t.x } else { 0.0 };
                    let gy = if t.y > 0.0 { cxy * py / t.y } else { 0.0 };
                    let gz = if t.z > 0.0 { c * pz / t.z } else { 0.0 };
                    let grad =
                        Vec3::new(gx.copysign(u.x), gy.copysign(u.y), gz.copysign(u.z)) / *radii;
                    (m * rt, grad)
                }
            }
        };
        let len = grad.length();
        (len.is_finite() && len > 0.0).then(|| ((r - 1.0) / len, grad / len))
    }

    /// `g(p)` and its exact gradient `∇g(p)` (four evaluations for deformed
    /// shapes and superellipsoids, one for spheres).
    pub fn evaluate(&self, p: Vec3) -> (f32, Vec3) {
        let (g, grad) = self.value_gradient64(p.as_dvec3());
        (g as f32, grad.as_vec3())
    }

    /// Estimate of the signed distance to the surface, negative inside.
    ///
    /// Exact for undeformed spheres. Otherwise it is the distance to the point
    /// found by [`project_to_surface`](Self::project_to_surface) with the sign
    /// of g: never less than the true distance, and equal to it to second order
    /// near the surface. It costs a few Newton steps; hot loops should use
    /// [`inside_outside`](Self::inside_outside).
    pub fn signed_distance(&self, p: Vec3) -> f32 {
        let p = p.as_dvec3();
        if let Some(r) = self.plain_sphere_radius() {
            return (p.length() - r) as f32;
        }
        let (g, _, _) = self.value_normal64(p);
        if g == 0.0 {
            return 0.0;
        }
        let (x, _) = self.project64(p);
        (p.distance(x).copysign(g)) as f32
    }

    /// Outward gradient of g (not necessarily unit length).
    pub fn gradient(&self, p: Vec3) -> Vec3 {
        self.evaluate(p).1
    }

    /// A nearby surface point and its outward normal, used to push skin points
    /// out of the muscle (eq. 16a).
    ///
    /// Newton steps along the normal (`p ← p − g n`, which converges
    /// quadratically and moves a near-surface point to the foot of its normal,
    /// exactly so for spheres), with a bisection fallback that always lands on
    /// the surface. Finite for any finite `p`, including the centre.
    pub fn project_to_surface(&self, p: Vec3) -> SurfacePoint {
        let (x, n) = self.project64(p.as_dvec3());
        SurfacePoint {
            point: x.as_vec3(),
            normal: n.as_vec3(),
        }
    }

    /// `project_to_surface` for points that are barely inside or outside, as
    /// skin points resting on a muscle are after a step: one first-order step
    /// `p − g·n` along the normal (error O(g²·curvature), far below a
    /// micrometre for millimetre penetrations), falling back to the full
    /// projection when the point is deeper than a few percent of the shape.
    #[inline]
    pub fn project_near_surface(&self, p: Vec3) -> SurfacePoint {
        let (g, n) = self
            .value_and_normal_f32(p)
            .unwrap_or_else(|| self.value_and_normal(p));
        let near = 0.02 * self.superquadric().min_radius() as f32;
        if g.abs() <= near && n.is_finite() {
            SurfacePoint {
                point: p - g * n,
                normal: n,
            }
        } else {
            self.project_to_surface(p)
        }
    }

    /// Half-extents of a box about the local origin that contains the shape,
    /// where one is known tighter than the bounding sphere: every superellipsoid
    /// lies in |x| ≤ a1, |y| ≤ a2, |z| ≤ a3 whatever its exponents (each term
    /// of F bounds one |`u_i`|). `None` for deformed shapes.
    pub fn bounding_box(&self) -> Option<Vec3> {
        if !self.deformation.is_identity() {
            return None;
        }
        Some(match &self.primitive {
            Primitive::Sphere { radius } => Vec3::splat(*radius),
            Primitive::Superellipsoid { radii, .. } => *radii,
        })
    }

    /// Radius of a sphere about the local origin that contains the deformed
    /// shape (conservative, never too small).
    pub fn bounding_radius(&self) -> f32 {
        (self.bounding_radius64() * (1.0 + 1e-6)) as f32
    }

    /// First crossing of the ray `origin + t dir` (dir unit) into the shape,
    /// t in [0, `max_t`]; `Some(0)` when the origin is already inside.
    ///
    /// The ray is clipped to the bounding sphere, then marched with steps of
    /// 0.9·g (sphere tracing, safe because g underestimates the distance)
    /// kept between 1/1024 and 1/32 of the clipped chord, and the crossing is
    /// refined by bisection.
    pub fn ray_intersect(&self, origin: Vec3, dir: Vec3, max_t: f32) -> Option<f32> {
        let o = origin.as_dvec3();
        let d = dir.as_dvec3();
        let max_t = max_t as f64;
        if self.value_normal64(o).0 <= 0.0 {
            return (max_t >= 0.0).then_some(0.0);
        }
        let dd = d.length_squared();
        if dd.is_nan() || dd <= 0.0 || max_t.is_nan() || max_t < 0.0 {
            return None;
        }
        let bound = self.bounding_radius64() * (1.0 + 1e-6);
        let b = o.dot(d);
        let disc = b * b - dd * (o.length_squared() - bound * bound);
        if disc.is_nan() || disc < 0.0 {
            return None;
        }
        let sq = disc.sqrt();
        let lo = ((-b - sq) / dd).max(0.0);
        let hi = ((-b + sq) / dd).min(max_t);
        if lo.is_nan() || hi.is_nan() || lo > hi {
            return None;
        }
        let g_at = |t: f64| self.value_normal64(o + d * t).0;
        let speed = dd.sqrt();
        let chord = hi - lo;
        let (min_step, max_step) = (chord / 1024.0, chord / 32.0);
        let mut t = lo;
        let mut g = g_at(t);
        loop {
            if g <= 0.0 {
                // Only possible at t = lo = 0, handled above; keep it safe.
                return Some(t as f32);
            }
            let t_next = (t + (0.9 * g / speed).clamp(min_step, max_step)).min(hi);
            let g_next = g_at(t_next);
            if g_next <= 0.0 {
                let (mut a, mut c) = (t, t_next);
                for _ in 0..64 {
                    let mid = 0.5 * (a + c);
                    if mid <= a || mid >= c {
                        break;
                    }
                    if g_at(mid) > 0.0 {
                        a = mid;
                    } else {
                        c = mid;
                    }
                }
                return Some(c as f32);
            }
            if t_next >= hi {
                return None;
            }
            t = t_next;
            g = g_next;
        }
    }

    // ---- f64 internals -------------------------------------------------

    #[inline]
    fn superquadric(&self) -> Superquadric {
        Superquadric::from_primitive(&self.primitive)
    }

    /// `Some(radius)` for an undeformed sphere, where everything is exact.
    #[inline]
    fn plain_sphere_radius(&self) -> Option<f64> {
        match self.primitive {
            Primitive::Sphere { radius } if self.deformation.is_identity() => Some(radius as f64),
            _ => None,
        }
    }

    /// The primitive's gauge at the undeformed preimage of `p` and its gradient
    /// with respect to `p`.
    #[inline]
    fn gauge(&self, p: DVec3) -> (f64, DVec3) {
        let sq = self.superquadric();
        if self.deformation.is_identity() {
            return sq.gauge(p);
        }
        let inv = self.deformation.inverse(p);
        let (r, grad_q) = sq.gauge(inv.q);
        (r, inv.pull_back(grad_q))
    }

    /// `(g, n, 1/|∇_p R|)`: the value, the outward unit normal of the gauge's
    /// level set, and the normalisation.
    #[inline]
    fn value_normal64(&self, p: DVec3) -> (f64, DVec3, f64) {
        let (r, grad) = self.gauge(p);
        let len = grad.length();
        if len.is_finite() && len > 0.0 {
            let inv = 1.0 / len;
            ((r - 1.0) * inv, grad * inv, inv)
        } else {
            let l = self.superquadric().min_radius();
            ((r - 1.0) * l, DVec3::Z, l)
        }
    }

    /// `g` and its exact gradient (see the module docs).
    fn value_gradient64(&self, p: DVec3) -> (f64, DVec3) {
        if let Some(r) = self.plain_sphere_radius() {
            let len = p.length();
            let n = if len > 0.0 { p / len } else { DVec3::Z };
            return (len - r, n);
        }
        let (g, n, inv) = self.value_normal64(p);
        let r_minus_1 = g / inv;
        // ∇(1/|∇R|) by forward differences: only multiplies R − 1, so f64
        // forward differences with a tiny step are plenty.
        let h = 1e-7 * self.superquadric().min_radius();
        let d = |e: DVec3| (self.value_normal64(p + e * h).2 - inv) / h;
        let grad_inv = DVec3::new(d(DVec3::X), d(DVec3::Y), d(DVec3::Z));
        (g, n + r_minus_1 * grad_inv)
    }

    fn bounding_radius64(&self) -> f64 {
        let sq = self.superquadric();
        if self.deformation.is_identity() {
            return sq.radius_bound();
        }
        self.deformation.radius_bound(&sq)
    }

    /// Surface point near `p` and the outward unit normal there.
    fn project64(&self, p: DVec3) -> (DVec3, DVec3) {
        if let Some(r) = self.plain_sphere_radius() {
            let len = p.length();
            let n = if len > 0.0 && len.is_finite() {
                p / len
            } else {
                DVec3::Z
            };
            return (n * r, n);
        }
        let bound = self.bounding_radius64();
        let tol = 1e-10 * bound;
        let mut x = p;
        for _ in 0..PROJECT_NEWTON_ITERATIONS {
            let (g, n, _) = self.value_normal64(x);
            if !g.is_finite() {
                break;
            }
            if g.abs() <= tol {
                return (x, n);
            }
            x -= n * g.clamp(-bound, bound);
        }
        self.project_bisect(p, bound, tol)
    }

    /// Bisection between an inside and an outside point: slower than Newton
    /// but always ends on the surface.
    fn project_bisect(&self, p: DVec3, bound: f64, tol: f64) -> (DVec3, DVec3) {
        let p = if p.is_finite() { p } else { DVec3::ZERO };
        let (g, n, _) = self.value_normal64(p);
        let (mut inside, mut outside) = if g > 0.0 {
            // The centre maps to the centre of the primitive: inside.
            (DVec3::ZERO, p)
        } else {
            let dir = if n.is_finite() { n } else { DVec3::Z };
            // Beyond the bounding sphere, hence outside.
            (p, p + dir * (2.0 * bound + p.length()))
        };
        for _ in 0..200 {
            if inside.distance_squared(outside) <= tol * tol {
                break;
            }
            let mid = 0.5 * (inside + outside);
            if self.value_normal64(mid).0 > 0.0 {
                outside = mid;
            } else {
                inside = mid;
            }
        }
        let x = 0.5 * (inside + outside);
        (x, self.value_normal64(x).1)
    }
}

/// How far beyond the asked distance the gauge of a deformed shape is
/// checked by projection (see [`MuscleShape::distance_and_normal`]).
const DEFORMED_GAUGE_SLACK: f32 = 4.0;

/// x^k for x ≥ 0, with the exponents of ellipsoid-like profiles (1, 2, ½)
/// done without `powf`, which dominates the hot loop otherwise.
#[inline]
fn powk(x: f32, k: f32) -> f32 {
    if k == 2.0 {
        x * x
    } else if k == 1.0 {
        x
    } else if k == 0.5 {
        x.sqrt()
    } else {
        x.powf(k)
    }
}
