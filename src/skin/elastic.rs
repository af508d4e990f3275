//! Elastic forces of the skin: the Terzopoulos et al. (1987) surface, discretised
//! by finite differences on the m×n grid (LEMAN §4.1.1, eq. 5).
//!
//! Material coordinates u = (u1, u2) run over [0,1) around (periodic) and [0,1]
//! from bottom to top, so h1 = 1/m, h2 = 1/(n−1) and each point carries the
//! u-area A = h1·h2. With forward differences a = D1⁺r, b = D2⁺r the metric is
//! G11 = a·a/h1², G12 = a·b/(h1h2), G22 = b·b/h2²; the curvature is
//! Bαβ = n·Dαβ r with second differences and n the unit normal of the central
//! tangents T1×T2. The discrete energy is
//!
//! E = Σ ½A [η11 ΔG11² + 2η12 ΔG12² + η22 ΔG22²] + Σ ½Aξ [ΔB11² + 2ΔB12² + ΔB22²]
//!
//! with ΔG = G − G⁰, ΔB = B − B⁰. The force is its exact negative gradient,
//! including the derivative of the normal: for B = n·D with n = c/|c|,
//! c = T1×T2,  ∂B/∂T1 = T2×w and ∂B/∂T2 = w×T1 with w = (I − nnᵀ)D/|c|.
//! Being an exact gradient, the forces conserve energy and the damped system
//! can only lose it (tested).
//!
//! The gradient is computed in two passes so both parallelise without write
//! conflicts: pass 1 computes per-point coefficient vectors of each stencil,
//! pass 2 gathers them at every point (the D⁻(α D⁺ r) structure of Terzopoulos).

use crate::character::Skin;
use glam::Vec3;
use rayon::prelude::*;

/// Below this many points the passes run serially (rayon's overhead would dominate).
const PARALLEL_POINTS: usize = 2048;

/// Per-point stencil coefficients from pass 1.
#[derive(Clone, Copy, Default)]
pub struct Terms {
    /// ∂E/∂a and ∂E/∂b of the point's forward edges.
    ca: Vec3,
    cb: Vec3,
    /// Curvature terms along n for the D11, D22 and D12 stencils.
    n11: Vec3,
    n22: Vec3,
    n12: Vec3,
    /// Normal-derivative terms for the central tangents T1, T2.
    p: Vec3,
    q: Vec3,
}

/// Grid topology helpers.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    pub m: usize,
    pub n: usize,
    pub h1: f32,
    pub h2: f32,
}

impl Grid {
    pub fn of(skin: &Skin) -> Self {
        Self::new(skin.m, skin.n)
    }

    pub fn new(m: usize, n: usize) -> Self {
        Self {
            m,
            n,
            h1: 1.0 / m as f32,
            h2: 1.0 / (n - 1) as f32,
        }
    }

    #[inline]
    pub fn area(&self) -> f32 {
        self.h1 * self.h2
    }

    #[inline]
    pub fn idx(&self, i: usize, j: usize) -> usize {
        j * self.m + i
    }

    #[inline]
    pub fn left(&self, i: usize) -> usize {
        if i == 0 { self.m - 1 } else { i - 1 }
    }

    #[inline]
    pub fn right(&self, i: usize) -> usize {
        if i + 1 == self.m { 0 } else { i + 1 }
    }

    pub fn points(&self) -> usize {
        self.m * self.n
    }

    /// True for the rows fixed to the joints.
    #[inline]
    pub fn is_boundary_row(&self, j: usize) -> bool {
        j == 0 || j + 1 == self.n
    }

    /// Unit normals (outward for a grid running counter-clockwise about the
    /// bottom→top axis), one-sided at the boundary rows.
    pub fn normals(&self, r: &[Vec3], out: &mut [Vec3]) {
        for j in 0..self.n {
            let (jd, ju) = (j.saturating_sub(1), (j + 1).min(self.n - 1));
            for i in 0..self.m {
                let t1 = r[self.idx(self.right(i), j)] - r[self.idx(self.left(i), j)];
                let t2 = r[self.idx(i, ju)] - r[self.idx(i, jd)];
                out[self.idx(i, j)] = t1.cross(t2).normalize_or_zero();
            }
        }
    }
}

/// Metric G = (G11, G12, G22) at point (i, j) from forward differences (rows < n−1).
#[inline]
pub fn metric_at(g: &Grid, r: &[Vec3], i: usize, j: usize) -> [f32; 3] {
    let k = g.idx(i, j);
    let a = r[g.idx(g.right(i), j)] - r[k];
    let b = r[g.idx(i, (j + 1).min(g.n - 1))] - r[k];
    [
        a.dot(a) / (g.h1 * g.h1),
        a.dot(b) / (g.h1 * g.h2),
        b.dot(b) / (g.h2 * g.h2),
    ]
}

/// Curvature B = (B11, B12, B22) at an interior point, or zero at boundary rows.
pub fn curvature_at(g: &Grid, r: &[Vec3], i: usize, j: usize) -> [f32; 3] {
    if g.is_boundary_row(j) {
        return [0.0; 3];
    }
    let s = Stencil::gather(g, r, i, j);
    let Some(n) = s.c.try_normalize() else {
        return [0.0; 3];
    };
    [n.dot(s.d11), n.dot(s.d12), n.dot(s.d22)]
}

/// The finite-difference quantities of one interior point.
struct Stencil {
    t1: Vec3,
    t2: Vec3,
    c: Vec3,
    d11: Vec3,
    d22: Vec3,
    d12: Vec3,
}

impl Stencil {
    #[inline]
    fn gather(g: &Grid, r: &[Vec3], i: usize, j: usize) -> Self {
        let (il, ir) = (g.left(i), g.right(i));
        let x = r[g.idx(i, j)];
        let xl = r[g.idx(il, j)];
        let xr = r[g.idx(ir, j)];
        let xd = r[g.idx(i, j - 1)];
        let xu = r[g.idx(i, j + 1)];
        let xru = r[g.idx(ir, j + 1)];
        let t1 = (xr - xl) / (2.0 * g.h1);
        let t2 = (xu - xd) / (2.0 * g.h2);
        Self {
            t1,
            t2,
            c: t1.cross(t2),
            d11: (xr - 2.0 * x + xl) / (g.h1 * g.h1),
            d22: (xu - 2.0 * x + xd) / (g.h2 * g.h2),
            d12: (xru - xr - xu + x) / (g.h1 * g.h2),
        }
    }
}

/// The per-point material the elastic energy reads.
pub struct ElasticMaterial<'a> {
    pub rest_metric: &'a [[f32; 3]],
    pub rest_curvature: &'a [[f32; 3]],
    pub stretch: &'a [[f32; 3]],
    pub bend: &'a [f32],
}

impl<'a> ElasticMaterial<'a> {
    pub fn of(skin: &'a Skin) -> Self {
        let p = &skin.points;
        Self {
            rest_metric: &p.rest_metric,
            rest_curvature: &p.rest_curvature,
            stretch: &p.stretch,
            bend: &p.bend,
        }
    }
}

fn pass1_point(g: &Grid, mat: &ElasticMaterial, r: &[Vec3], i: usize, j: usize) -> Terms {
    let area = g.area();
    let k = g.idx(i, j);
    let mut t = Terms::default();
    if j + 1 < g.n {
        let a = r[g.idx(g.right(i), j)] - r[k];
        let b = r[g.idx(i, j + 1)] - r[k];
        let (i11, i12, i22) = (
            1.0 / (g.h1 * g.h1),
            1.0 / (g.h1 * g.h2),
            1.0 / (g.h2 * g.h2),
        );
        let g0 = mat.rest_metric[k];
        let eta = mat.stretch[k];
        let d11 = a.dot(a) * i11 - g0[0];
        let d12 = a.dot(b) * i12 - g0[1];
        let d22 = b.dot(b) * i22 - g0[2];
        let s12 = 2.0 * area * eta[1] * d12 * i12;
        t.ca = (2.0 * area * eta[0] * d11 * i11) * a + s12 * b;
        t.cb = (2.0 * area * eta[2] * d22 * i22) * b + s12 * a;
    }
    let xi = mat.bend[k];
    if !g.is_boundary_row(j) && xi > 0.0 {
        let s = Stencil::gather(g, r, i, j);
        let clen = s.c.length();
        if clen > 1e-12 {
            let n = s.c / clen;
            let b0 = mat.rest_curvature[k];
            let s11 = area * xi * (n.dot(s.d11) - b0[0]);
            let s12 = 2.0 * area * xi * (n.dot(s.d12) - b0[1]);
            let s22 = area * xi * (n.dot(s.d22) - b0[2]);
            t.n11 = n * (s11 / (g.h1 * g.h1));
            t.n22 = n * (s22 / (g.h2 * g.h2));
            t.n12 = n * (s12 / (g.h1 * g.h2));
            let dsum = s11 * s.d11 + s22 * s.d22 + s12 * s.d12;
            let w = (dsum - n * n.dot(dsum)) / clen;
            t.p = s.t2.cross(w);
            t.q = w.cross(s.t1);
        }
    }
    t
}

/// ∂E/∂r at an interior point from the pass-1 terms.
#[inline]
fn pass2_gradient(g: &Grid, t: &[Terms], i: usize, j: usize) -> Vec3 {
    let (il, ir) = (g.left(i), g.right(i));
    let m = &t[g.idx(i, j)];
    let l = &t[g.idx(il, j)];
    let rr = &t[g.idx(ir, j)];
    let d = &t[g.idx(i, j - 1)];
    let u = &t[g.idx(i, j + 1)];
    let ld = &t[g.idx(il, j - 1)];
    l.ca - m.ca + d.cb - m.cb + l.n11 - 2.0 * m.n11 + rr.n11 + d.n22 - 2.0 * m.n22 + u.n22 + m.n12
        - l.n12
        - d.n12
        + ld.n12
        + (l.p - rr.p) / (2.0 * g.h1)
        + (d.q - u.q) / (2.0 * g.h2)
}

/// Adds the elastic force −∂E/∂r to `f` at the interior rows (boundary rows
/// are kinematic and get nothing). `terms` is scratch of the grid's size.
pub fn add_elastic_forces(
    g: &Grid,
    mat: &ElasticMaterial,
    r: &[Vec3],
    terms: &mut Vec<Terms>,
    f: &mut [Vec3],
) {
    terms.resize(g.points(), Terms::default());
    let parallel = g.points() >= PARALLEL_POINTS;
    let row1 = |(j, row): (usize, &mut [Terms])| {
        for (i, t) in row.iter_mut().enumerate() {
            *t = pass1_point(g, mat, r, i, j);
        }
    };
    if parallel {
        terms.par_chunks_mut(g.m).enumerate().for_each(row1);
    } else {
        terms.chunks_mut(g.m).enumerate().for_each(row1);
    }
    let terms: &[Terms] = terms;
    let row2 = |(j, row): (usize, &mut [Vec3])| {
        if g.is_boundary_row(j) {
            return;
        }
        for (i, fi) in row.iter_mut().enumerate() {
            *fi -= pass2_gradient(g, terms, i, j);
        }
    };
    if parallel {
        f.par_chunks_mut(g.m).enumerate().for_each(row2);
    } else {
        f.chunks_mut(g.m).enumerate().for_each(row2);
    }
}

/// The discrete elastic energy E (J) of positions `r`.
pub fn elastic_energy(g: &Grid, mat: &ElasticMaterial, r: &[Vec3]) -> f64 {
    let area = g.area() as f64;
    let mut e = 0.0f64;
    for j in 0..g.n {
        for i in 0..g.m {
            let k = g.idx(i, j);
            if j + 1 < g.n {
                let gm = metric_at(g, r, i, j);
                let g0 = mat.rest_metric[k];
                let eta = mat.stretch[k];
                let d: [f64; 3] = std::array::from_fn(|c| (gm[c] - g0[c]) as f64);
                e += 0.5
                    * area
                    * (eta[0] as f64 * d[0] * d[0]
                        + 2.0 * eta[1] as f64 * d[1] * d[1]
                        + eta[2] as f64 * d[2] * d[2]);
            }
            if !g.is_boundary_row(j) && mat.bend[k] > 0.0 {
                let b = curvature_at(g, r, i, j);
                let b0 = mat.rest_curvature[k];
                let d: [f64; 3] = std::array::from_fn(|c| (b[c] - b0[c]) as f64);
                e += 0.5
                    * area
                    * mat.bend[k] as f64
                    * (d[0] * d[0] + 2.0 * d[1] * d[1] + d[2] * d[2]);
            }
        }
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Grid, positions, rest metric, rest curvature, stretch and bend.
    type Setup = (
        Grid,
        Vec<Vec3>,
        Vec<[f32; 3]>,
        Vec<[f32; 3]>,
        Vec<[f32; 3]>,
        Vec<f32>,
    );

    /// A wobbly cylinder with non-trivial rest metric and curvature.
    fn setup(m: usize, n: usize) -> Setup {
        let g = Grid::new(m, n);
        let mut r = Vec::new();
        for j in 0..n {
            for i in 0..m {
                let phi = i as f32 / m as f32 * std::f32::consts::TAU;
                let z = j as f32 / (n - 1) as f32;
                let rad = 0.3 + 0.05 * (3.0 * phi).sin() * z + 0.02 * (7.0 * z).cos();
                r.push(
                    Vec3::new(
                        rad * phi.cos(),
                        z + 0.01 * (2.0 * phi).cos(),
                        rad * phi.sin(),
                    ) * Vec3::new(1.0, 1.0, -1.0),
                );
            }
        }
        let p = g.points();
        let rest_metric: Vec<[f32; 3]> = (0..p)
            .map(|k| [0.5 + 0.01 * (k % 5) as f32, 0.02, 0.6])
            .collect();
        let rest_curv = (0..p)
            .map(|k| [-2.0 + 0.1 * (k % 3) as f32, 0.05, 0.1])
            .collect();
        let stretch = (0..p)
            .map(|k| [1.0 + 0.1 * (k % 4) as f32, 0.5, 0.8])
            .collect();
        let bend = (0..p).map(|k| 0.01 + 0.001 * (k % 7) as f32).collect();
        (g, r, rest_metric, rest_curv, stretch, bend)
    }

    /// The force is the exact negative gradient of the energy, normal derivative included.
    #[test]
    fn elastic_force_is_the_negative_energy_gradient() {
        let (g, r, rm, rc, st, be) = setup(9, 7);
        let mat = ElasticMaterial {
            rest_metric: &rm,
            rest_curvature: &rc,
            stretch: &st,
            bend: &be,
        };
        let mut f = vec![Vec3::ZERO; g.points()];
        let mut terms = Vec::new();
        add_elastic_forces(&g, &mat, &r, &mut terms, &mut f);
        let mut worst = 0.0f64;
        let mut scale = 0.0f64;
        for j in 1..g.n - 1 {
            for i in 0..g.m {
                let k = g.idx(i, j);
                for c in 0..3 {
                    let eps = 2e-3f32;
                    let mut rp = r.clone();
                    rp[k][c] += eps;
                    let mut rn = r.clone();
                    rn[k][c] -= eps;
                    let fd = -(elastic_energy(&g, &mat, &rp) - elastic_energy(&g, &mat, &rn))
                        / (2.0 * eps as f64);
                    worst = worst.max((fd - f[k][c] as f64).abs());
                    scale = scale.max(fd.abs());
                }
            }
        }
        assert!(scale > 1e-3, "test geometry produces forces");
        assert!(
            worst < 2e-3 * scale,
            "max |F + dE/dr| = {worst} vs scale {scale}"
        );
    }

    /// Rigid motions change neither the metric nor the curvature: zero force at rest.
    #[test]
    fn a_rigidly_moved_rest_shape_feels_no_force() {
        let (g, r, _, _, st, be) = setup(12, 8);
        let rm: Vec<[f32; 3]> = (0..g.points())
            .map(|k| metric_at(&g, &r, k % g.m, k / g.m))
            .collect();
        let rc: Vec<[f32; 3]> = (0..g.points())
            .map(|k| curvature_at(&g, &r, k % g.m, k / g.m))
            .collect();
        let q = glam::Quat::from_euler(glam::EulerRot::XYZ, 0.3, -1.1, 0.7);
        let moved: Vec<Vec3> = r
            .iter()
            .map(|p| q * *p + Vec3::new(1.0, -2.0, 0.5))
            .collect();
        let mat = ElasticMaterial {
            rest_metric: &rm,
            rest_curvature: &rc,
            stretch: &st,
            bend: &be,
        };
        let mut f = vec![Vec3::ZERO; g.points()];
        add_elastic_forces(&g, &mat, &moved, &mut Vec::new(), &mut f);
        let fmax = f.iter().map(|v| v.length()).fold(0.0, f32::max);
        assert!(fmax < 1e-3, "max force {fmax}");
        assert!(elastic_energy(&g, &mat, &moved) < 1e-8);
    }

    /// The parallel and serial paths agree.
    #[test]
    fn parallel_pass_matches_serial() {
        let (g, r, rm, rc, st, be) = setup(64, 40);
        assert!(g.points() >= PARALLEL_POINTS);
        let mat = ElasticMaterial {
            rest_metric: &rm,
            rest_curvature: &rc,
            stretch: &st,
            bend: &be,
        };
        let mut fp = vec![Vec3::ZERO; g.points()];
        add_elastic_forces(&g, &mat, &r, &mut Vec::new(), &mut fp);
        let mut terms = vec![Terms::default(); g.points()];
        for j in 0..g.n {
            for i in 0..g.m {
                terms[g.idx(i, j)] = pass1_point(&g, &mat, &r, i, j);
            }
        }
        for j in 1..g.n - 1 {
            for i in 0..g.m {
                let fs = -pass2_gradient(&g, &terms, i, j);
                assert!((fs - fp[g.idx(i, j)]).length() <= 1e-6 * (1.0 + fs.length()));
            }
        }
    }
}
