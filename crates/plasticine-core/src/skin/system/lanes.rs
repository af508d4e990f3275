//! The skin system's two per-point passes, eight points at a time: the
//! position pass (connective tissue and gravity added to the elastic force)
//! and the leapfrog's closed-form kick.
//!
//! Scalar, these were a sixth of a 128×128 flipper's step (perf): short
//! dependency chains (a square root and a division per band, the kick's
//! Sherman–Morrison) around branches on the kinematic rows and the bands.
//! Here the branches are lane masks, the per-point coefficients are read a
//! field per array ([`Coefficients`]), and each lane computes the scalar
//! code's arithmetic, operation for operation (`Points` in the sibling
//! module `points`), so both give the same bits; the points past the last group of
//! eight go through the scalar code.

use super::points::Points;
use glam::Vec3;
use wide::{CmpEq, CmpGt, f32x8};

/// Points per lane group.
pub(super) const LANES: usize = 8;

/// The per-point coefficients the passes read, a field per array.
#[derive(Clone, Debug, Default)]
pub(super) struct Coefficients {
    /// 1/inertia (0 on the boundary rows).
    inv_mass: Vec<f32>,
    /// mass/inertia: the share of gravity per unit of inertia.
    weight: Vec<f32>,
    /// The damping coefficient over the inertia, c = damping·(1/inertia).
    damping_rate: Vec<f32>,
    /// 1 where the point has a band, else 0.
    has_band: Vec<f32>,
    /// The band's `k_s·a`, rest length and `k_d·a·(1/inertia)`.
    ks_area: Vec<f32>,
    rest_length: Vec<f32>,
    kd_rate: Vec<f32>,
}

impl Coefficients {
    /// The coefficients of `points` (with their per-point arrays).
    pub(super) fn of(points: &Points) -> Self {
        let n = points.inv_mass.len();
        let mut c = Self {
            inv_mass: points.inv_mass.to_vec(),
            weight: points.weight.to_vec(),
            damping_rate: (0..n)
                .map(|k| points.damping[k] * points.inv_mass[k])
                .collect(),
            has_band: vec![0.0; n],
            ks_area: vec![0.0; n],
            rest_length: vec![0.0; n],
            kd_rate: vec![0.0; n],
        };
        for (k, band) in points.band.iter().enumerate() {
            if let Some(b) = band {
                let area = points.area[k];
                c.has_band[k] = 1.0;
                c.ks_area[k] = b.ks * area;
                c.rest_length[k] = b.rest_length;
                c.kd_rate[k] = b.kd * area * points.inv_mass[k];
            }
        }
        c
    }
}

/// Eight 3-vectors, one per lane.
#[derive(Clone, Copy)]
struct V8 {
    x: f32x8,
    y: f32x8,
    z: f32x8,
}

impl V8 {
    #[inline(always)]
    fn load(v: &[Vec3], k0: usize) -> Self {
        let v = &v[k0..k0 + LANES];
        Self {
            x: f32x8::new(std::array::from_fn(|l| v[l].x)),
            y: f32x8::new(std::array::from_fn(|l| v[l].y)),
            z: f32x8::new(std::array::from_fn(|l| v[l].z)),
        }
    }

    #[inline(always)]
    fn store(self, out: &mut [Vec3], k0: usize) {
        let (x, y, z) = (self.x.to_array(), self.y.to_array(), self.z.to_array());
        for (l, o) in out[k0..k0 + LANES].iter_mut().enumerate() {
            *o = Vec3::new(x[l], y[l], z[l]);
        }
    }

    #[inline(always)]
    fn splat(v: Vec3) -> Self {
        Self {
            x: f32x8::splat(v.x),
            y: f32x8::splat(v.y),
            z: f32x8::splat(v.z),
        }
    }

    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self {
            x: self.x + o.x,
            y: self.y + o.y,
            z: self.z + o.z,
        }
    }

    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Self {
            x: self.x - o.x,
            y: self.y - o.y,
            z: self.z - o.z,
        }
    }

    #[inline(always)]
    fn scale(self, s: f32x8) -> Self {
        Self {
            x: self.x * s,
            y: self.y * s,
            z: self.z * s,
        }
    }

    #[inline(always)]
    fn dot(self, o: Self) -> f32x8 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    /// `mask ? self : other`, per lane.
    #[inline(always)]
    fn or(self, mask: f32x8, other: Self) -> Self {
        Self {
            x: mask.blend(self.x, other.x),
            y: mask.blend(self.y, other.y),
            z: mask.blend(self.z, other.z),
        }
    }
}

#[inline(always)]
fn load(v: &[f32], k0: usize) -> f32x8 {
    let lanes: [f32; LANES] = v[k0..k0 + LANES].try_into().expect("eight lanes");
    f32x8::new(lanes)
}

/// The position pass for the points `k0..k0 + LANES`: `a` holds their
/// elastic forces and gets their accelerations, `axis` their bands'
/// damping axes (`Points::acceleration`, per lane).
#[inline(always)]
pub(super) fn accelerations(
    c: &Coefficients,
    (gravity, anchor_position): (Vec3, &[Vec3]),
    k0: usize,
    r: &[Vec3],
    a: &mut [Vec3],
    axis: &mut [Vec3],
) {
    let zero = f32x8::ZERO;
    let w = load(&c.inv_mass, k0);
    let kinematic = w.cmp_eq(zero);
    let x = V8::load(r, k0);
    let mut f = V8::load(a, k0);
    let d = x.sub(V8::load(anchor_position, k0));
    let len = d.dot(d).sqrt();
    let band = !load(&c.has_band, k0).cmp_eq(zero) & len.cmp_gt(f32x8::splat(1e-9));
    let safe = band.blend(len, f32x8::ONE);
    let pull = load(&c.ks_area, k0) * (len - load(&c.rest_length, k0)) / safe;
    f = f.sub(d.scale(pull)).or(band, f);
    let none = V8::splat(Vec3::ZERO);
    let s = d.scale(load(&c.kd_rate, k0).sqrt() / safe).or(band, none);
    let acc = f
        .scale(w)
        .add(V8::splat(gravity).scale(load(&c.weight, k0)));
    none.or(kinematic, acc).store(a, k0);
    none.or(kinematic, s).store(axis, k0);
}

/// The kick for the points `k0..k0 + LANES` (`Points::kick`, per lane).
#[inline(always)]
pub(super) fn kicks(
    c: &Coefficients,
    anchor_velocity: &[Vec3],
    k0: usize,
    (v, a_pos, axis): (&[Vec3], &[Vec3], &[Vec3]),
    h: f32,
    v_new: &mut [Vec3],
) {
    let w = load(&c.inv_mass, k0);
    let kinematic = w.cmp_eq(f32x8::ZERO);
    let (h8, half) = (f32x8::splat(h), f32x8::splat(0.5 * h));
    let v = V8::load(v, k0);
    let a = V8::load(a_pos, k0);
    let s = V8::load(axis, k0);
    let rate = load(&c.damping_rate, k0);
    let rhs = v
        .add(a.scale(h8))
        .sub(v.scale(rate).add(s.scale(s.dot(v))).scale(half))
        .add(s.scale(h8).scale(s.dot(V8::load(anchor_velocity, k0))));
    // (αI + ½h·s·sᵀ)⁻¹ = (d·I − ½h·s·sᵀ) / (α·d), d = α + ½h|s|².
    let alpha = f32x8::ONE + half * rate;
    let d = alpha + half * s.dot(s);
    let kicked = rhs
        .scale(d)
        .sub(s.scale(half * s.dot(rhs)))
        .scale(f32x8::ONE / (alpha * d));
    let drifted = v.add(a.scale(h8));
    drifted.or(kinematic, kicked).store(v_new, k0);
}

#[cfg(test)]
mod tests {
    use super::super::SkinSystem;
    use super::*;
    use crate::skin::SkeletonDriver;
    use crate::skin::integrate::SecondOrderSystem;

    /// The lanes give the scalar passes' bits, point by point, on a skin
    /// with kinematic rows, points with and without bands, a band at zero
    /// length and a row whose length is not a multiple of eight.
    #[test]
    fn lanes_give_the_scalar_passes_bits() {
        let mut c = crate::samples::build("penguin", 12, 11).expect("the sample");
        let skin = &mut c.skins[0];
        assert!(skin.points.band.iter().any(Option::is_some));
        // Some points without a band.
        for k in (0..skin.points.band.len()).step_by(5) {
            skin.points.band[k] = None;
        }
        let skin = c.skins[0].clone();
        let driver = SkeletonDriver::Keys(c.key_postures.clone());
        let mut sys = SkinSystem::new(&c, &skin, &driver);
        let n = skin.points.position.len();
        assert!(!n.is_multiple_of(LANES), "a tail past the last group");
        let wobble = |k: usize, s: f32| {
            Vec3::new(
                (k as f32 * s).sin(),
                (k as f32 * 1.7 * s).cos(),
                (k as f32 * 0.3).sin(),
            )
        };
        let r: Vec<Vec3> = (0..n)
            .map(|k| skin.points.position[k] + 0.004 * wobble(k, 0.9))
            .collect();
        let v: Vec<Vec3> = (0..n).map(|k| 0.3 * wobble(k, 1.3)).collect();
        let t = 0.4;
        let mut a = vec![Vec3::ZERO; n];
        sys.position_acceleration(t, &r, &mut a);
        let axis = sys.band_damping.clone();
        // One band anchored where its point is: no direction, no pull.
        let at_anchor = (0..n)
            .find(|&k| skin.points.band[k].is_some() && sys.inv_mass[k] > 0.0)
            .expect("a band");
        let anchor = sys.underlayers(t).anchor_position[at_anchor];
        let mut r2 = r.clone();
        r2[at_anchor] = anchor;
        let mut a2 = vec![Vec3::ZERO; n];
        sys.position_acceleration(t, &r2, &mut a2);
        assert_eq!(sys.band_damping[at_anchor], Vec3::ZERO);
        sys.position_acceleration(t, &r, &mut a);
        let mut v_new = vec![Vec3::ZERO; n];
        assert!(sys.kick_at_mean_velocity(t, &r, &v, &a, 2e-3, &mut v_new));
        // The scalar passes, point by point, from the same elastic forces.
        let mut f = vec![Vec3::ZERO; n];
        crate::skin::add_elastic_forces(
            &sys.grid,
            &sys.material,
            &r,
            &mut crate::skin::Scratch::default(),
            &mut f,
        );
        sys.underlayers(t);
        let under = sys.under.as_ref().expect("posed");
        let points = points!(sys, under);
        let bits = |x: Vec3| x.to_array().map(f32::to_bits);
        let mut kinematic = 0;
        for k in 0..n {
            let (acc, s) = points.acceleration(k, r[k], f[k]);
            assert_eq!(bits(acc), bits(a[k]), "acceleration at {k}");
            assert_eq!(bits(s), bits(axis[k]), "band axis at {k}");
            let kicked = points.kick(k, v[k], a[k], axis[k], 2e-3);
            assert_eq!(bits(kicked), bits(v_new[k]), "kick at {k}");
            kinematic += usize::from(sys.inv_mass[k] == 0.0);
        }
        assert!(kinematic > 0 && kinematic < n);
    }
}
