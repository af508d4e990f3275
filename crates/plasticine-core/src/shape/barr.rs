//! Barr (1984) global deformations along the local z axis.
//!
//! The forward map is `D = bend ∘ twist ∘ taper` (taper first, bend last):
//!
//! * **taper**: `x' = (1 + taper.x·z)·x`, `y' = (1 + taper.y·z)·y`, `z' = z`;
//! * **twist**: rotation about z by the angle `twist·z`;
//! * **bend**: a circular bend in the xz plane about the y axis with curvature
//!   `bend` (1/m) over the whole z extent: the z axis maps onto the circle of
//!   radius `1/bend` through the origin whose centre is `(1/bend, 0, 0)`, so a
//!   positive bend curls the shape towards +x, and lines of constant x map to
//!   concentric circles (`z` is arc length along the axis).
//!
//! All three fix the origin. The implicit shape is evaluated through the
//! closed-form inverse (Barr gives one for each), and gradients are carried
//! back with the transposed Jacobian of that inverse. Computations are `f64`.

use super::InvalidShape;
use super::superquadric::Superquadric;
use glam::{DVec3, Vec2, Vec3};
use serde::{Deserialize, Serialize};

/// Barr (1984) global deformations applied along the local z axis, in this order:
/// taper (x and y scale linearly with z), twist (about z, radians per unit z),
/// bend (about the y axis, curvature in 1/m). All zero is the identity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(default)]
pub struct BarrDeformation {
    /// Taper rates of x and y along z (1/m): `x' = (1 + taper.x·z)·x`, likewise y.
    pub taper: Vec2,
    /// Twist rate about z (rad/m): the rotation angle is `twist·z`.
    pub twist: f32,
    /// Bend curvature about the y axis (1/m); positive curls the shape towards +x.
    pub bend: f32,
}

/// Taper factors below this are clamped when inverting. Valid shapes keep the
/// factor positive over their z extent, so this only matters for points far
/// outside the shape (or a driver pushing the taper too far): it keeps the
/// inverse finite without changing the sign of g there.
const MIN_TAPER_FACTOR: f64 = 1e-4;

/// Smallest distance to the bend's centre of curvature, in units of its
/// radius, used when inverting (the centre itself has no preimage direction).
const MIN_BEND_FACTOR: f64 = 1e-12;

/// The result of [`BarrDeformation::inverse`]: the undeformed point and what
/// is needed to pull a gradient back to deformed space (`J^T·∇`, with J the
/// Jacobian of the inverse map).
#[derive(Clone, Copy, Debug)]
pub(crate) struct InverseMap {
    /// The point in the undeformed primitive's frame.
    pub q: DVec3,
    // taper stage: factors and their z-derivatives (0 where clamped)
    fx: f64,
    fy: f64,
    dfx: f64,
    dfy: f64,
    // twist stage: rate, cos/sin of the angle, and the untwisted x, y
    twist: f64,
    tc: f64,
    ts: f64,
    tx: f64,
    ty: f64,
    // bend stage: cos/sin of the bend angle and the bend factor w = 1 − κx
    bc: f64,
    bs: f64,
    bw: f64,
}

impl InverseMap {
    /// Gradient with respect to the deformed point given the gradient with
    /// respect to the undeformed one: `∇_p = Jᵀ ∇_q`, J being the Jacobian of
    /// the inverse map, applied stage by stage from the primitive outwards.
    #[inline]
    pub fn pull_back(&self, g: DVec3) -> DVec3 {
        // taper inverse: x = X/fx(Z), y = Y/fy(Z)
        let g = DVec3::new(
            g.x / self.fx,
            g.y / self.fy,
            g.z - g.x * self.q.x * self.dfx / self.fx - g.y * self.q.y * self.dfy / self.fy,
        );
        // twist inverse: rotation by −twist·Z
        let g = DVec3::new(
            self.tc * g.x - self.ts * g.y,
            self.ts * g.x + self.tc * g.y,
            self.twist * (self.ty * g.x - self.tx * g.y) + g.z,
        );
        // bend inverse: rows (c, 0, −s), (0, 1, 0), (s/w, 0, c/w)
        DVec3::new(
            self.bc * g.x + self.bs * g.z / self.bw,
            g.y,
            -self.bs * g.x + self.bc * g.z / self.bw,
        )
    }
}

impl BarrDeformation {
    /// Whether all three deformations are zero, so the shape is the bare primitive.
    pub fn is_identity(&self) -> bool {
        self.taper == Vec2::ZERO && self.twist == 0.0 && self.bend == 0.0
    }

    /// Maps a point of the undeformed primitive to deformed space.
    pub fn deform(&self, q: Vec3) -> Vec3 {
        self.forward(q.as_dvec3()).as_vec3()
    }

    /// Maps a deformed point back to the undeformed primitive's frame.
    pub fn undeform(&self, p: Vec3) -> Vec3 {
        self.inverse(p.as_dvec3()).q.as_vec3()
    }

    /// Forward map `bend ∘ twist ∘ taper`.
    pub(crate) fn forward(&self, q: DVec3) -> DVec3 {
        let (ax, ay) = (self.taper.x as f64, self.taper.y as f64);
        let mut p = DVec3::new(q.x * (1.0 + ax * q.z), q.y * (1.0 + ay * q.z), q.z);
        let k = self.twist as f64;
        if k != 0.0 {
            let (s, c) = (k * p.z).sin_cos();
            p = DVec3::new(c * p.x - s * p.y, s * p.x + c * p.y, p.z);
        }
        let kb = self.bend as f64;
        if kb != 0.0 {
            let th = kb * p.z;
            let (s, c) = th.sin_cos();
            let sh = (0.5 * th).sin();
            let w = 1.0 - kb * p.x;
            // X = (1 − cos θ)/κ + x cos θ, Z = (1 − κx) sin θ / κ, written so
            // that nothing cancels when κ is small.
            p = DVec3::new(2.0 * sh * sh / kb + p.x * c, p.y, w * s / kb);
        }
        p
    }

    /// Inverse map `taper⁻¹ ∘ twist⁻¹ ∘ bend⁻¹` (Barr's closed forms), with
    /// what is needed to pull gradients back.
    #[inline]
    pub(crate) fn inverse(&self, p: DVec3) -> InverseMap {
        let mut x = p;
        // bend⁻¹: with u = 1 − κX = w cos θ, v = κZ = w sin θ.
        let kb = self.bend as f64;
        let (mut bc, mut bs, mut bw) = (1.0, 0.0, 1.0);
        if kb != 0.0 {
            let u = 1.0 - kb * x.x;
            let v = kb * x.z;
            let w = u.hypot(v);
            if w > MIN_BEND_FACTOR {
                bc = u / w;
                bs = v / w;
                bw = w;
                // x = (1 − w)/κ = (2X − κ(X² + Z²))/(1 + w), free of cancellation.
                let bx = (2.0 * x.x - kb * (x.x * x.x + x.z * x.z)) / (1.0 + w);
                x = DVec3::new(bx, x.y, v.atan2(u) / kb);
            } else {
                bw = MIN_BEND_FACTOR;
                x = DVec3::new(1.0 / kb, x.y, 0.0);
            }
        }
        // twist⁻¹: rotate by −twist·Z.
        let k = self.twist as f64;
        let (mut tc, mut ts) = (1.0, 0.0);
        if k != 0.0 {
            (ts, tc) = (k * x.z).sin_cos();
            x = DVec3::new(tc * x.x + ts * x.y, -ts * x.x + tc * x.y, x.z);
        }
        let (tx, ty) = (x.x, x.y);
        // taper⁻¹: divide by the (clamped) taper factors.
        let (ax, ay) = (self.taper.x as f64, self.taper.y as f64);
        let taper = |a: f64| {
            let f = 1.0 + a * x.z;
            if f > MIN_TAPER_FACTOR {
                (f, a)
            } else {
                (MIN_TAPER_FACTOR, 0.0)
            }
        };
        let (fx, dfx) = taper(ax);
        let (fy, dfy) = taper(ay);
        InverseMap {
            q: DVec3::new(x.x / fx, x.y / fy, x.z),
            fx,
            fy,
            dfx,
            dfy,
            twist: k,
            tc,
            ts,
            tx,
            ty,
            bc,
            bs,
            bw,
        }
    }

    /// Checks the deformation against a primitive whose |z| is at most
    /// `z_extent` and whose sqrt(x² + y²) is at most `xy_extent`. Messages name
    /// the field (`deformation.taper.x`, …).
    pub(crate) fn validate(&self, z_extent: f64, xy_extent: f64) -> Result<(), InvalidShape> {
        if !self.taper.is_finite() {
            return Err(InvalidShape::new(
                "deformation.taper",
                format!("must be finite, got {}", self.taper),
            ));
        }
        if !self.twist.is_finite() {
            return Err(InvalidShape::new(
                "deformation.twist",
                format!("must be finite, got {}", self.twist),
            ));
        }
        if !self.bend.is_finite() {
            return Err(InvalidShape::new(
                "deformation.bend",
                format!("must be finite, got {}", self.bend),
            ));
        }
        for (name, a) in [("x", self.taper.x), ("y", self.taper.y)] {
            if 1.0 - (a as f64).abs() * z_extent <= 0.0 {
                return Err(InvalidShape::new(
                    format!("deformation.taper.{name}"),
                    format!(
                        "{a} makes the taper factor 1 + taper.{name}·z non-positive within the \
                         shape's z extent ±{z_extent} (needs |taper.{name}| < {})",
                        1.0 / z_extent
                    ),
                ));
            }
        }
        let kb = (self.bend as f64).abs();
        if kb * z_extent >= std::f64::consts::PI {
            return Err(InvalidShape::new(
                "deformation.bend",
                format!(
                    "{} bends the shape's z extent ±{z_extent} onto more than a full circle \
                     (needs |bend| < {})",
                    self.bend,
                    std::f64::consts::PI / z_extent
                ),
            ));
        }
        let x_extent = self.max_taper_factor(z_extent) * xy_extent;
        if kb * x_extent >= 1.0 {
            return Err(InvalidShape::new(
                "deformation.bend",
                format!(
                    "{} puts the centre of curvature inside the shape (needs |bend| < {})",
                    self.bend,
                    1.0 / x_extent
                ),
            ));
        }
        Ok(())
    }

    /// Largest taper factor over `|z| ≤ z_extent` (at least 1).
    pub(crate) fn max_taper_factor(&self, z_extent: f64) -> f64 {
        1.0 + (self.taper.x.abs().max(self.taper.y.abs()) as f64) * z_extent
    }

    /// Bound on |D(q)| over the primitive `sq`.
    ///
    /// Taper scales the cross-sections by at most the largest taper factor,
    /// twist is a rotation, and the circular bend gives
    /// `|D|² = x² + y² + 2(1 − cos θ)(1 − κx)/κ² ≤ (x² + y² + z²)(1 + |κ|·max|x|)`.
    pub(crate) fn radius_bound(&self, sq: &Superquadric) -> f64 {
        let f = self.max_taper_factor(sq.radii.z);
        let r = sq.scaled_radius_bound(f);
        let x_max = f * sq.xy_radius_bound();
        r * (1.0 + (self.bend as f64).abs() * x_max).sqrt()
    }
}
