//! Barr's (1981) superellipsoid written as a *gauge* (a norm-like function).
//!
//! Barr's inside-outside function is
//! `F(x,y,z) = ((|x/a1|)^(2/e2) + (|y/a2|)^(2/e2))^(e2/e1) + (|z/a3|)^(2/e1)`,
//! `F < 1` inside. `F` is homogeneous of degree `2/e1`, so `R = F^(e1/2)` is
//! homogeneous of degree 1: `R(λq) = λ R(q)`. The surface is `R = 1`, and
//! `q / R(q)` is where the ray from the centre through `q` meets it. Working
//! with `R` instead of `F` keeps every power bounded: we evaluate at `q / m`
//! where `m` is the largest normalised coordinate, so the bases of all the
//! `powf` lie in `[0, 1]` and `F ∈ [1, 1 + 2^(e2/e1)]` whatever the exponents
//! (validate allows `e ∈ [0.05, 4]`, i.e. powers up to 80) and however far the
//! point is. `∇R` is homogeneous of degree 0 and needs no rescaling.
//!
//! Everything here is `f64`: the shape code converts once at the public API.

use super::primitive::Primitive;
use glam::DVec3;

/// A superellipsoid (a sphere is radii `(r, r, r)`, exponents `(1, 1)`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Superquadric {
    pub radii: DVec3,
    /// North–south exponent (profile in z).
    pub e1: f64,
    /// East–west exponent (xy cross-section).
    pub e2: f64,
}

/// `x^k` for `x ≥ 0`, exact and cheap for the common exponents.
#[inline]
fn pow(x: f64, k: f64) -> f64 {
    if k == 2.0 {
        x * x
    } else if k == 1.0 {
        x
    } else {
        x.powf(k)
    }
}

/// Barr's signed power `sign(v)·|v|^e`, used by the parametric surface.
#[inline]
pub(crate) fn signed_pow(v: f64, e: f64) -> f64 {
    if v == 0.0 {
        0.0
    } else {
        v.signum() * pow(v.abs(), e)
    }
}

/// Largest value of `α·w1² + β·w2²` over `w1^(2/e) + w2^(2/e) ≤ 1`, `w ≥ 0`
/// (bounded by Hölder's inequality; exact at `e = 1` and as `e → 0`).
fn holder_max(alpha: f64, beta: f64, e: f64) -> f64 {
    let m = alpha.max(beta);
    if e >= 1.0 || m <= 0.0 {
        return m;
    }
    let q = 1.0 / (1.0 - e);
    m * ((alpha / m).powf(q) + (beta / m).powf(q)).powf(1.0 / q)
}

impl Superquadric {
    pub fn from_primitive(primitive: &Primitive) -> Self {
        match *primitive {
            Primitive::Sphere { radius } => Self {
                radii: DVec3::splat(radius as f64),
                e1: 1.0,
                e2: 1.0,
            },
            Primitive::Superellipsoid { radii, exponents } => Self {
                radii: radii.as_dvec3(),
                e1: exponents.x as f64,
                e2: exponents.y as f64,
            },
        }
    }

    /// The gauge `R(q)` and its gradient `∇R(q)` (see the module docs).
    ///
    /// At the centre `R = 0` and `∇R` is undefined; we return the gradient
    /// along the axis of the smallest radius, so that callers get the most
    /// conservative (least deep) inside value and a usable outward direction.
    #[inline]
    pub fn gauge(&self, q: DVec3) -> (f64, DVec3) {
        let u = q / self.radii;
        if self.e1 == 1.0 && self.e2 == 1.0 {
            // Ellipsoid (and sphere): R = |u|, no powers at all.
            let r = u.length();
            if r > 0.0 {
                return (r, u / (r * self.radii));
            }
            return (0.0, self.centre_gradient());
        }
        let au = u.abs();
        let m = au.max_element();
        if m.is_nan() || m <= 0.0 {
            return (0.0, self.centre_gradient());
        }
        let t = au / m;
        let k1 = 2.0 / self.e1;
        let k2 = 2.0 / self.e2;
        let px = pow(t.x, k2);
        let py = pow(t.y, k2);
        let pz = pow(t.z, k1);
        let s = px + py;
        let tt = if s > 0.0 {
            pow(s, self.e2 / self.e1)
        } else {
            0.0
        };
        let f = tt + pz; // ≥ 1 because the largest of t is 1
        let rt = pow(f, 0.5 * self.e1);
        // ∂R/∂t_x = (R/F)·T·(Px/S)/t_x, ∂R/∂t_z = (R/F)·Pz/t_z (chain rule on
        // F's powers; zero on a coordinate plane, where the term vanishes).
        let c = rt / f;
        // (px can underflow to 0 for a tiny t.x and a large power: guard s.)
        let cxy = if s > 0.0 { c * tt / s } else { 0.0 };
        let gx = if t.x > 0.0 { cxy * px / t.x } else { 0.0 };
        let gy = if t.y > 0.0 { cxy * py / t.y } else { 0.0 };
        let gz = if t.z > 0.0 { c * pz / t.z } else { 0.0 };
        let grad = DVec3::new(
            gx.copysign(u.x) / self.radii.x,
            gy.copysign(u.y) / self.radii.y,
            gz.copysign(u.z) / self.radii.z,
        );
        (m * rt, grad)
    }

    fn centre_gradient(&self) -> DVec3 {
        let a = self.radii;
        if a.x <= a.y && a.x <= a.z {
            DVec3::new(1.0 / a.x, 0.0, 0.0)
        } else if a.y <= a.z {
            DVec3::new(0.0, 1.0 / a.y, 0.0)
        } else {
            DVec3::new(0.0, 0.0, 1.0 / a.z)
        }
    }

    /// Barr's parametric surface point at latitude `eta ∈ [-π/2, π/2]` and
    /// longitude `omega ∈ [-π, π]`.
    pub fn point(&self, eta: f64, omega: f64) -> DVec3 {
        let (se, ce) = eta.sin_cos();
        let (so, co) = omega.sin_cos();
        let ring = signed_pow(ce, self.e1);
        DVec3::new(
            self.radii.x * ring * signed_pow(co, self.e2),
            self.radii.y * ring * signed_pow(so, self.e2),
            self.radii.z * signed_pow(se, self.e1),
        )
    }

    /// Bound on `sqrt(x² + y²)` over the solid.
    pub fn xy_radius_bound(&self) -> f64 {
        let a = self.radii;
        holder_max(a.x * a.x, a.y * a.y, self.e2).sqrt()
    }

    /// Bound on `|q|` over the solid (a sphere's radius, an ellipsoid's largest
    /// radius, a box's half-diagonal).
    pub fn radius_bound(&self) -> f64 {
        self.scaled_radius_bound(1.0)
    }

    /// Bound on `sqrt(s²(x² + y²) + z²)` over the solid: the radius after the
    /// cross-sections are scaled by at most `s` (a taper).
    pub fn scaled_radius_bound(&self, s: f64) -> f64 {
        let a = self.radii;
        let xy = holder_max(a.x * a.x, a.y * a.y, self.e2);
        holder_max(s * s * xy, a.z * a.z, self.e1).sqrt()
    }

    pub fn min_radius(&self) -> f64 {
        self.radii.min_element()
    }
}
