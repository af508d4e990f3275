//! The fat-layer constraint for the points of a block row at once (or of
//! two neighbouring blocks' rows, where they share their muscles).
//!
//! A resting skin is pressed onto its fat layer everywhere, so every step
//! projects nearly every point: a gauge, three affine transforms and a
//! normalisation per point and muscle, scalar dependency chains that were a
//! third of a 64×64 skin step (perf). The points of a culling block share
//! their candidate muscles, so where those are ellipsoids (or spheres) the
//! block row's four points (eight, for two blocks with the same muscles) go
//! through the scalar code's arithmetic side by side in f32x8 lanes. Anything else (a superellipsoid's powers, a deformed
//! shape, a point at a muscle's very centre) takes the scalar path.

use crate::kinematics::PosedBody;
use glam::{Affine3A, Vec3};
use wide::{CmpGt, CmpLt, f32x8};

/// Points one call takes at most.
pub(super) const LANES: usize = 8;

/// Eight 3-vectors, one per lane.
#[derive(Clone, Copy)]
struct V8 {
    x: f32x8,
    y: f32x8,
    z: f32x8,
}

impl V8 {
    /// The points of `v` (at most eight); lanes past its end repeat its first.
    fn gather(v: &[Vec3]) -> Self {
        let v: [Vec3; LANES] = std::array::from_fn(|l| v.get(l).copied().unwrap_or(v[0]));
        Self {
            x: f32x8::new(std::array::from_fn(|l| v[l].x)),
            y: f32x8::new(std::array::from_fn(|l| v[l].y)),
            z: f32x8::new(std::array::from_fn(|l| v[l].z)),
        }
    }

    fn scatter(self, out: &mut [Vec3]) {
        let (x, y, z) = (self.x.to_array(), self.y.to_array(), self.z.to_array());
        for (l, o) in out.iter_mut().enumerate() {
            *o = Vec3::new(x[l], y[l], z[l]);
        }
    }

    fn add(self, o: Self) -> Self {
        Self {
            x: self.x + o.x,
            y: self.y + o.y,
            z: self.z + o.z,
        }
    }

    fn sub(self, o: Self) -> Self {
        Self {
            x: self.x - o.x,
            y: self.y - o.y,
            z: self.z - o.z,
        }
    }

    fn scale(self, s: f32x8) -> Self {
        Self {
            x: self.x * s,
            y: self.y * s,
            z: self.z * s,
        }
    }

    /// Per component by a constant vector.
    fn div(self, d: Vec3) -> Self {
        Self {
            x: self.x / f32x8::splat(d.x),
            y: self.y / f32x8::splat(d.y),
            z: self.z / f32x8::splat(d.z),
        }
    }

    fn dot(self, o: Self) -> f32x8 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    fn length(self) -> f32x8 {
        self.dot(self).sqrt()
    }

    /// `mask ? t : self`, per lane.
    fn select(self, mask: f32x8, t: Self) -> Self {
        Self {
            x: mask.blend(t.x, self.x),
            y: mask.blend(t.y, self.y),
            z: mask.blend(t.z, self.z),
        }
    }

    fn transform_vector(self, a: &Affine3A) -> Self {
        let m = &a.matrix3;
        let s = f32x8::splat;
        Self {
            x: s(m.x_axis.x) * self.x + s(m.y_axis.x) * self.y + s(m.z_axis.x) * self.z,
            y: s(m.x_axis.y) * self.x + s(m.y_axis.y) * self.y + s(m.z_axis.y) * self.z,
            z: s(m.x_axis.z) * self.x + s(m.y_axis.z) * self.y + s(m.z_axis.z) * self.z,
        }
    }

    fn transform_point(self, a: &Affine3A) -> Self {
        let v = self.transform_vector(a);
        let t = a.translation;
        Self {
            x: v.x + f32x8::splat(t.x),
            y: v.y + f32x8::splat(t.y),
            z: v.z + f32x8::splat(t.z),
        }
    }
}

fn lanes_set(mask: f32x8) -> usize {
    mask.move_mask().count_ones() as usize
}

/// One block row's four points against the block's candidate muscles, all
/// of them ellipsoids ([`crate::shape::MuscleShape::ellipsoid_radii`]).
pub(super) struct Block<'a> {
    pub(super) body: &'a PosedBody,
    pub(super) later: &'a PosedBody,
    pub(super) cands: &'a [u16],
    /// k∥ and k⊥ of the contact response (eq. 16d).
    pub(super) k_normal: f32,
    pub(super) k_tangent: f32,
    /// Whether to move the points (else only measure).
    pub(super) apply: bool,
    /// Time offset of `later` (s).
    pub(super) velocity_dt: f64,
}

/// What one block's pass measured: the largest correction (m), the points
/// corrected and the gauge evaluations, as in the scalar report.
#[derive(Clone, Copy, Default)]
pub(super) struct Tally {
    pub(super) max_correction: f32,
    pub(super) corrected: usize,
    pub(super) tests: usize,
}

impl Block<'_> {
    /// The scalar `resolve_point` for the points `r` (at most eight;
    /// velocities `v`, fat `fat`). `None`, with nothing changed, where a
    /// point lies at a muscle's centre (no gauge normal there): the caller
    /// takes the scalar path.
    pub(super) fn resolve(&self, fat: &[f32], r: &mut [Vec3], v: &mut [Vec3]) -> Option<Tally> {
        let zero = f32x8::ZERO;
        let one = f32x8::ONE;
        let count = r.len();
        debug_assert!(count <= LANES && fat.len() == count && v.len() == count);
        let thickness = f32x8::new(std::array::from_fn(|l| fat[l.min(count - 1)]));
        let active =
            f32x8::new(std::array::from_fn(|l| l as f32)).cmp_lt(f32x8::splat(count as f32));
        let inv_dt = f32x8::splat((1.0 / self.velocity_dt) as f32);
        let (kn, kt) = (f32x8::splat(self.k_normal), f32x8::splat(self.k_tangent));
        let mut x = V8::gather(r);
        let mut vel = V8::gather(v);
        let mut rep = Tally::default();
        // A second pass catches a point pushed from one muscle into another.
        for _pass in 0..2 {
            let mut moved = zero;
            for &q in self.cands {
                let mus = &self.body.muscles[q as usize];
                let radii = mus.shape.ellipsoid_radii()?;
                let local = x.transform_point(&mus.to_local);
                // Cheap reject: outside the local box (or bounding sphere)
                // grown by the fat.
                let far = match mus.local_box {
                    Some(half) => {
                        let s = f32x8::splat;
                        (local.x.abs() - s(half.x))
                            .max(local.y.abs() - s(half.y))
                            .max(local.z.abs() - s(half.z))
                            .cmp_gt(thickness)
                    }
                    None => local.length().cmp_gt(f32x8::splat(mus.radius) + thickness),
                };
                let near = !far & active;
                if near.none() {
                    continue;
                }
                rep.tests += lanes_set(near);
                // The gauge g = (R − 1)/|∇R| of R = |u|, u = p/radii.
                let u = local.div(radii);
                let big_r = u.length();
                if (near & !big_r.cmp_gt(zero)).any() {
                    return None;
                }
                let grad = u.div(radii).scale(one / big_r);
                let len = grad.length();
                let g = (big_r - one) / len;
                let n_local = grad.scale(one / len);
                let finite = len.is_finite() & len.cmp_gt(zero);
                let hit = near & finite & g.cmp_lt(thickness);
                if hit.none() {
                    continue;
                }
                // To the fat's depth along the muscle normal (see the scalar code).
                let target_local = local.add(n_local.scale(thickness - g));
                let target = target_local.transform_point(&mus.to_world);
                let delta = target.sub(x).length();
                let worst = hit
                    .blend(delta, zero)
                    .to_array()
                    .into_iter()
                    .fold(0.0, f32::max);
                rep.max_correction = rep.max_correction.max(worst);
                rep.corrected += lanes_set(hit);
                if !self.apply {
                    continue;
                }
                moved |= hit;
                x = x.select(hit, target);
                let w = n_local.transform_vector(&mus.to_world);
                let wl = w.length();
                let normal = w.scale(one / wl).select(
                    !(wl.is_finite() & wl.cmp_gt(zero)),
                    V8::gather(&[Vec3::ZERO]),
                );
                let surface_v = target_local
                    .transform_point(&self.later.muscles[q as usize].to_world)
                    .sub(target)
                    .scale(inv_dt);
                let rel = vel.sub(surface_v);
                let vn = rel.dot(normal);
                let v_par = normal.scale(vn);
                let v_perp = rel.sub(v_par);
                let bounced = surface_v.sub(v_par.scale(kn)).add(v_perp.scale(kt));
                vel = vel.select(hit & vn.cmp_lt(zero), bounced);
            }
            // With a single muscle near, nothing can push it back in.
            if moved.none() || self.cands.len() == 1 {
                break;
            }
        }
        x.scatter(r);
        vel.scatter(v);
        Some(rep)
    }
}
