//! The discrete elastic energy itself, in f64: the forces of
//! [`add_elastic_forces`](super::add_elastic_forces) are its exact negative
//! gradient (the finite-difference tests check them against it), and the
//! energy diagnostics report it.

use super::{ElasticMaterial, FADE, Grid, SHEAR_FADE, TINY, bending_at};
use glam::Vec3;

/// The discrete elastic energy E (J) of positions `r`, split into membrane
/// and bending parts.
pub fn elastic_energy_parts(g: &Grid, mat: &ElasticMaterial, r: &[Vec3]) -> (f64, f64) {
    let (mut em, mut eb) = (0.0f64, 0.0f64);
    for j in 0..g.n - 1 {
        for i in 0..g.m {
            let k = g.idx(i, j);
            let pm = &mat.points[k];
            let a = (r[g.idx(g.right(i), j)] - r[k]).as_dvec3();
            let b = (r[g.idx(i, j + 1)] - r[k]).as_dvec3();
            let l1 = a.length() * pm.inv_l1 as f64 - 1.0;
            let l2 = b.length() * pm.inv_l2 as f64 - 1.0;
            let sigma = if a.length() > TINY as f64 && b.length() > TINY as f64 {
                let w = |l: f64, inv: f32| {
                    let x = (l * inv as f64 / SHEAR_FADE as f64).clamp(0.0, 1.0);
                    x * x * (3.0 - 2.0 * x)
                };
                let faded = w(a.length(), pm.inv_l1) * w(b.length(), pm.inv_l2);
                (a.normalize().dot(b.normalize()) - pm.cos0 as f64) * faded.sqrt()
            } else {
                0.0
            };
            em += 0.5 * pm.k11 as f64 * l1 * l1
                + 0.5 * pm.k22 as f64 * l2 * l2
                + pm.k12 as f64 * sigma * sigma;
            if mat.bending {
                let [ta, tau, tu] = bending_at(g, r, i, j);
                let fq = quad_fade(g, r, i, j);
                let da = ta - pm.theta_a as f64;
                let dt = tau - pm.tau as f64;
                if g.bends(j) {
                    let fl = quad_fade(g, r, g.left(i), j);
                    eb +=
                        pm.kb_a as f64 * fl * fq * (1.0 - da.cos()) + pm.kb_t as f64 * fq * dt * dt;
                }
                if g.has_up_hinge(j) {
                    let fd = quad_fade(g, r, i, j - 1);
                    let du = tu - pm.theta_u as f64;
                    eb += pm.kb_u as f64 * fq * fd * (1.0 - du.cos());
                }
            }
        }
    }
    (em, eb)
}

/// The bending fade of quad (i, j) in f64 (see [`FADE`]).
pub(super) fn quad_fade(g: &Grid, r: &[Vec3], i: usize, j: usize) -> f64 {
    let (d1, d2) = g.diagonals(r, i, j);
    let (d1, d2) = (d1.as_dvec3(), d2.as_dvec3());
    let x = (d1.cross(d2).length() / (FADE as f64 * d1.length() * d2.length())).clamp(0.0, 1.0);
    x * x * (3.0 - 2.0 * x)
}

/// The discrete elastic energy E (J) of positions `r`.
pub fn elastic_energy(g: &Grid, mat: &ElasticMaterial, r: &[Vec3]) -> f64 {
    let (em, eb) = elastic_energy_parts(g, mat, r);
    em + eb
}
