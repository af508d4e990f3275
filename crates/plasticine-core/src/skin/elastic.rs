//! Elastic forces of the skin (LEMAN §4.1.1): a membrane and a bending term on
//! the m×n grid, whose forces are the exact negative gradient of one discrete
//! energy (tested by finite differences, so the damped system can only lose
//! energy).
//!
//! Material coordinates u = (u1, u2) run over [0,1) around (periodic) and
//! \[0,1\] from bottom to top, so h1 = 1/m, h2 = 1/(n−1). Every point carries
//! its patch's physical rest area a = h1·h2·√det G⁰, and every modulus (like
//! every density of the skin) is per unit of that area: the same skin
//! resampled to any resolution is the same continuum, and a flipper's skin is
//! as stiff and as heavy per square metre as the body's.
//!
//! # Membrane: stretch, not squared length
//!
//! Terzopoulos' metric energy ½η(G − G⁰)², with G ∝ l², is a St Venant–
//! Kirchhoff membrane: along an edge its force ∝ l(l² − l₀²) *falls* as the
//! edge is compressed below l₀/√3 and vanishes at l = 0. Compressed edges
//! therefore collapse one after another (a crumple at the grid spacing) and
//! stay collapsed. Here the same three components of the rest metric G⁰ are
//! measured in stretch (Biot strain) instead:
//!
//! λ1 = |a|/ℓ1, λ2 = |b|/ℓ2, σ = cos φ − cos φ⁰,
//! `E_m` = a [½η11 (λ1 − 1)² + ½η22 (λ2 − 1)² + η12 σ²]
//!
//! with a = D1⁺r, b = D2⁺r the forward edges, ℓα = hα√G⁰αα their rest
//! lengths, φ the angle between the grid lines (cos φ = â·b̂) and
//! cos φ⁰ = G⁰12/√(G⁰11 G⁰22) its rest value. The shear is the angle alone,
//! so a prestretched skin is not stiffer in shear than in stretch. Along an
//! edge the stiffness is η/ℓ² at any length: compression is resisted as much
//! as tension, and a collapsing edge meets a finite, growing restoring force.
//! η is a 2D modulus (N/m): for small strains `E_m` is the old energy per unit
//! u-area with `η_old` = η √det G⁰ / (4 G⁰²).
//!
//! # Bending: angles, which collapsing cannot lower
//!
//! Terzopoulos' curvature B = n·D²r also scales with the square of the edge
//! lengths, so any curvature energy in B is lowered by collapsing the grid:
//! a sharp fold with collapsed spacing costs nothing, and a large bending
//! rigidity *drives* the crumple. Here bending is measured by quantities that
//! do not change when the surface is scaled:
//!
//! - the signed dihedral angle θ between the normals of the two quads on each
//!   side of a grid edge (quad normals from the diagonals' cross product),
//!   about that edge: the "around" hinge on the up edge of each point and the
//!   "up" hinge on its around edge; convex is positive;
//! - the twist of each quad, τ = n·(r₀ − r₁ + r₂ − r₃)/√(|a||b|), its warp
//!   (which a hinge cannot see: a checkerboard of bumps leaves every quad
//!   normal unchanged) per edge length.
//!
//! θ/ℓα and τ/√(ℓ1ℓ2) (ℓ the rest edge lengths) are the turning of the
//! normal per metre, so with rest curvatures κ⁰ = (κ⁰11, κ⁰12, κ⁰22) in 1/m
//!
//! `E_b = ξ (ℓ2/ℓ1) c(θ_a − κ⁰11 ℓ1) + ξ (ℓ1/ℓ2) c(θ_u − κ⁰22 ℓ2) + ξ (τ − κ⁰12 √(ℓ1ℓ2))²`
//!
//! per point, with c(x) = 1 − cos x = x²/2 + O(x⁴): smooth through a fold,
//! where the signed angle wraps from π to −π (a quadratic in the angle would
//! kick the skin there and feed the fold). Under refinement ½ξ ∫ (κ11² + 2κ12² + κ22²) dA over the rest
//! surface with ξ the bending rigidity (J) — a thin plate's energy for a grid
//! whose lines cross at right angles — bounded for any fold, and invariant to
//! scaling and rotation.
//!
//! # Evaluation
//!
//! Four passes, each parallel over rows without write conflicts: (1) per
//! point the membrane edge terms, and per quad its normal, warp and twist
//! terms; (2) per point the two hinges' angles and their derivatives with
//! respect to the quad normals and the hinge edge; (3) per quad the gathered
//! normal gradient turned into gradients of its diagonals; (4) per point the
//! gather of everything that touches it.

use crate::character::Skin;
pub use energy::elastic_energy;
#[cfg(test)]
use energy::elastic_energy_parts;
use glam::{DVec3, Vec3};
use rayon::prelude::*;

/// Below this many points the passes run serially (rayon's overhead would dominate).
const PARALLEL_POINTS: usize = 2048;
/// Edges and quads smaller than this (m, m²) carry no direction or normal.
const TINY: f32 = 1e-12;

/// Grid topology helpers.
#[derive(Clone, Copy, Debug)]
pub struct Grid {
    /// Points around the skin (the periodic direction, u1).
    pub m: usize,
    /// Rows from bottom to top (u2), including the two boundary rows.
    pub n: usize,
    /// Material spacing around, `1/m`.
    pub h1: f32,
    /// Material spacing up, `1/(n−1)`.
    pub h2: f32,
}

impl Grid {
    /// The grid of a skin's m×n points.
    pub fn of(skin: &Skin) -> Self {
        Self::new(skin.m, skin.n)
    }

    /// The grid of m points around by n rows, with its material spacings.
    pub fn new(m: usize, n: usize) -> Self {
        Self {
            m,
            n,
            h1: 1.0 / m as f32,
            h2: 1.0 / (n - 1) as f32,
        }
    }

    /// Material (u) area of one grid cell, `h1·h2`.
    #[inline]
    pub fn area(&self) -> f32 {
        self.h1 * self.h2
    }

    /// Flat index of point `i` around in row `j`.
    #[inline]
    pub fn idx(&self, i: usize, j: usize) -> usize {
        j * self.m + i
    }

    /// The index around before `i`, wrapping periodically.
    #[inline]
    pub fn left(&self, i: usize) -> usize {
        if i == 0 { self.m - 1 } else { i - 1 }
    }

    /// The index around after `i`, wrapping periodically.
    #[inline]
    pub fn right(&self, i: usize) -> usize {
        if i + 1 == self.m { 0 } else { i + 1 }
    }

    /// Number of grid points, `m·n`.
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

    /// Whether quad row j (between rows j and j+1) carries bending: every
    /// row but the two touching the boundary rings. The rings are kinematic
    /// and the grid gathers to them; bending there would clamp the skin to
    /// the ring's plane through the smallest, stiffest quads of the grid
    /// (measured: a flipper shredding from its tip ring within 20 ms of
    /// motion). So the skin's edge is simply supported: it turns freely about
    /// the ring, as a membrane.
    #[inline]
    pub fn bends(&self, j: usize) -> bool {
        j >= 1 && j + 3 <= self.n
    }

    /// Whether point (i, j) owns an up hinge (between quad rows j−1 and j).
    #[inline]
    pub fn has_up_hinge(&self, j: usize) -> bool {
        j >= 2 && self.bends(j)
    }

    /// The diagonals d1 = r(i+1,j+1) − r(i,j), d2 = r(i,j+1) − r(i+1,j) of
    /// quad (i, j) (rows j < n−1).
    #[inline]
    fn diagonals(&self, r: &[Vec3], i: usize, j: usize) -> (Vec3, Vec3) {
        let ir = self.right(i);
        (
            r[self.idx(ir, j + 1)] - r[self.idx(i, j)],
            r[self.idx(i, j + 1)] - r[self.idx(ir, j)],
        )
    }

    /// The warp r₀ − r₁ + r₂ − r₃ of quad (i, j) (zero for a planar parallelogram).
    #[inline]
    fn warp(&self, r: &[Vec3], i: usize, j: usize) -> Vec3 {
        let ir = self.right(i);
        r[self.idx(i, j)] - r[self.idx(ir, j)] + r[self.idx(ir, j + 1)] - r[self.idx(i, j + 1)]
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

/// The metric of the last row (which has no upward edge) is its lower
/// neighbour's: rest metrics computed from positions use this everywhere.
pub fn rest_metric_of(g: &Grid, r: &[Vec3]) -> Vec<[f32; 3]> {
    (0..g.points())
        .map(|k| {
            let (i, j) = (k % g.m, k / g.m);
            metric_at(g, r, i, j.min(g.n - 2))
        })
        .collect()
}

/// The bending measures at point (i, j), in f64 (for energies and rest
/// states, not the force loop): around-hinge angle `θ_a` and quad twist τ
/// (where [`Grid::bends`]), up-hinge angle `θ_u` (where
/// [`Grid::has_up_hinge`]), zero elsewhere. Convex is positive for a grid running counter-clockwise
/// about its bottom→top axis. Returns [`θ_a`, τ, `θ_u`].
pub fn bending_at(g: &Grid, r: &[Vec3], i: usize, j: usize) -> [f64; 3] {
    let mut out = [0.0; 3];
    if !g.bends(j) {
        return out;
    }
    let x = |i: usize, j: usize| r[g.idx(i, j)].as_dvec3();
    let normal = |i: usize, j: usize| {
        let ir = g.right(i);
        (x(ir, j + 1) - x(i, j))
            .cross(x(i, j + 1) - x(ir, j))
            .normalize_or_zero()
    };
    let angle = |a: DVec3, b: DVec3, e: DVec3| {
        if a == DVec3::ZERO || b == DVec3::ZERO {
            0.0
        } else {
            a.cross(b).dot(e).atan2(a.dot(b))
        }
    };
    let ir = g.right(i);
    let nq = normal(i, j);
    out[0] = angle(
        normal(g.left(i), j),
        nq,
        (x(i, j + 1) - x(i, j)).normalize_or_zero(),
    );
    if g.has_up_hinge(j) {
        out[2] = angle(
            nq,
            normal(i, j - 1),
            (x(ir, j) - x(i, j)).normalize_or_zero(),
        );
    }
    let s = ((x(ir, j) - x(i, j)).length() * (x(i, j + 1) - x(i, j)).length()).sqrt();
    if s > TINY as f64 {
        out[1] = nq.dot(x(i, j) - x(ir, j) + x(ir, j + 1) - x(i, j + 1)) / s;
    }
    out
}

/// The rest lengths (ℓ1, ℓ2) of point k's forward edges from its rest
/// metric, floored at a tiny length (a degenerate rest metric would make
/// every length infinitely stretched).
#[inline]
pub fn rest_lengths(g: &Grid, g0: [f32; 3]) -> (f32, f32) {
    (
        g.h1 * g0[0].max(1e-12).sqrt(),
        g.h2 * g0[2].max(1e-12).sqrt(),
    )
}

/// The physical rest area (m²) of each point's patch: u-area h1·h2 times
/// √det G⁰. Every density of the skin is per unit of this area.
pub fn rest_areas(g: &Grid, rest_metric: &[[f32; 3]]) -> Vec<f32> {
    let area = g.area();
    rest_metric
        .iter()
        .map(|g0| area * (g0[0] * g0[2] - g0[1] * g0[1]).max(1e-24).sqrt())
        .collect()
}

/// Rest curvature (κ⁰11, κ⁰12, κ⁰22) in 1/m (the normal's turning per metre
/// of rest length) that makes positions `r` the bending rest state of a skin
/// with rest metric `rest_metric`.
pub fn rest_curvature_of(g: &Grid, r: &[Vec3], rest_metric: &[[f32; 3]]) -> Vec<[f32; 3]> {
    (0..g.points())
        .map(|k| {
            let b = bending_at(g, r, k % g.m, k / g.m);
            let (l1, l2) = rest_lengths(g, rest_metric[k]);
            let (l1, l2) = (l1 as f64, l2 as f64);
            [
                (b[0] / l1) as f32,
                (b[1] / (l1 * l2).sqrt()) as f32,
                (b[2] / l2) as f32,
            ]
        })
        .collect()
}

/// The per-point material as the force loop reads it, precomputed once per
/// skin: rest lengths, moduli times the point's u-area, rest angles.
#[derive(Clone, Copy, Debug, Default)]
struct PointMaterial {
    /// 1/ℓ1, 1/ℓ2 (rest edge lengths) and the rest cos φ⁰.
    inv_l1: f32,
    inv_l2: f32,
    cos0: f32,
    /// A·η11, A·η22, A·η12.
    k11: f32,
    k22: f32,
    k12: f32,
    /// ξ·h2/h1 (around hinge), ξ·h1/h2 (up hinge), ξ (twist).
    kb_a: f32,
    kb_u: f32,
    kb_t: f32,
    /// Rest `θ_a`, `θ_u`, τ.
    theta_a: f32,
    theta_u: f32,
    /// (cos, sin) of `θ⁰_a` and `θ⁰_u`: the hinge force needs no trigonometry.
    rest_a: (f32, f32),
    rest_u: (f32, f32),
    tau: f32,
}

/// Quads whose diagonals come within asin(FADE) ≈ 14° of parallel lose their
/// bending smoothly (to none when the diagonals are parallel: a sliver, a
/// collapsed or an inverting quad). Such a quad's normal turns by a radian for
/// a sub-millimetre move, and flips when it inverts: any bending energy read
/// from it is discontinuous or nearly so, and each jump feeds energy into the
/// skin (measured: an unsupported prestressed skin with ξ = 3e-6 J gained 3×
/// its energy in 0.1 s, and shredded). Faded, the energy is continuous and
/// the force stays its gradient. The measure, |d1×d2|/(|d1||d2|), does not
/// change with scale, so the fade creates no incentive to collapse.
pub const FADE: f32 = 0.25;

/// Edges compressed below this share of their rest length lose their shear
/// smoothly, as s(λ/`SHEAR_FADE`) of the shorter edge's stretch λ (s as for
/// [`FADE`]), to none when an edge has collapsed. Shear is measured as the
/// angle between the grid lines, and a short edge's direction turns by a
/// radian for a move of its length: its shear force grows as 1/length and
/// its stiffness as 1/length², so a crease that collapses a row of edges
/// (an elbow bent shut) both drives the collapse on and sets the explicit
/// step (measured, a torso elbow bent 92° at 32×32: the up edges of the
/// inner elbow at 3.4 % of their rest length, and 3,554 arm steps in 1.2 s
/// where the straight arm takes 396; with no shear, 38 % and 692 steps).
/// A prestretched skin's edges sit far above it, where nothing changes.
pub const SHEAR_FADE: f32 = 0.5;

/// The fade factor s(x) = 3x² − 2x³ of x clamped to [0, 1], and ds/dx.
#[inline]
fn fade(x: f32) -> (f32, f32) {
    if x >= 1.0 {
        (1.0, 0.0)
    } else if x <= 0.0 {
        (0.0, 0.0)
    } else {
        (x * x * (3.0 - 2.0 * x), 6.0 * x * (1.0 - x))
    }
}

/// Where the grid gathers to its rings, its around edges shrink with the
/// ring's radius and its around hinges stiffen as ℓ2/ℓ1 (and their lever as
/// 1/ℓ1): a band of the stiffest hinges of the skin, pinned to a kinematic
/// ring through a single row of membrane, buckles there when the limb swings
/// (measured: the penguin's flipper tip). Bending therefore tapers out over
/// the rows whose around edge is under [`POLE_TAPER`] of the skin's median,
/// as s(x) = 3x² − 2x³ of x = `ℓ1/(POLE_TAPER·median)`. The pole caps are a
/// small share of the skin and the membrane keeps them taut.
pub const POLE_TAPER: f32 = 0.5;

fn pole_taper(g: &Grid, rest_metric: &[[f32; 3]]) -> Vec<f32> {
    let mut l1: Vec<f32> = rest_metric
        .iter()
        .map(|g0| rest_lengths(g, *g0).0)
        .collect();
    let mut sorted = l1.clone();
    let mid = sorted.len() / 2;
    let median = *sorted.select_nth_unstable_by(mid, f32::total_cmp).1;
    let reference = POLE_TAPER * median;
    for x in &mut l1 {
        *x = if reference > 0.0 {
            fade(*x / reference).0
        } else {
            1.0
        };
    }
    l1
}

/// The skin's elastic material, precomputed for the force loop.
#[derive(Clone, Debug, Default)]
pub struct ElasticMaterial {
    points: Vec<PointMaterial>,
    /// Any point with ξ > 0 (the bending passes are skipped otherwise).
    bending: bool,
}

impl ElasticMaterial {
    /// The material of a skin, from its per-point rest metric and curvature, η and ξ.
    pub fn of(skin: &Skin) -> Self {
        let p = &skin.points;
        Self::new(
            &Grid::of(skin),
            &p.rest_metric,
            &p.rest_curvature,
            &p.stretch,
            &p.bend,
        )
    }

    /// The material from per-point rest metric G⁰, rest curvature, stretching elasticity η
    /// and bending rigidity ξ (bending tapered out near the poles).
    pub fn new(
        g: &Grid,
        rest_metric: &[[f32; 3]],
        rest_curvature: &[[f32; 3]],
        stretch: &[[f32; 3]],
        bend: &[f32],
    ) -> Self {
        let areas = rest_areas(g, rest_metric);
        let taper = pole_taper(g, rest_metric);
        let points = (0..g.points())
            .map(|k| {
                let g0 = rest_metric[k];
                let (l1, l2) = rest_lengths(g, g0);
                let (s11, s22) = (l1 / g.h1, l2 / g.h2);
                let a = areas[k];
                let eta = stretch[k];
                let xi = bend[k] * taper[k];
                let kappa = rest_curvature[k];
                PointMaterial {
                    inv_l1: 1.0 / l1,
                    inv_l2: 1.0 / l2,
                    cos0: (g0[1] / (s11 * s22)).clamp(-1.0, 1.0),
                    k11: a * eta[0],
                    k22: a * eta[2],
                    k12: a * eta[1],
                    kb_a: xi * l2 / l1,
                    kb_u: xi * l1 / l2,
                    kb_t: xi,
                    theta_a: kappa[0] * l1,
                    theta_u: kappa[2] * l2,
                    rest_a: ((kappa[0] * l1).cos(), (kappa[0] * l1).sin()),
                    rest_u: ((kappa[2] * l2).cos(), (kappa[2] * l2).sin()),
                    tau: kappa[1] * (l1 * l2).sqrt(),
                }
            })
            .collect();
        Self {
            points,
            bending: bend.iter().any(|&x| x > 0.0),
        }
    }

    /// A bound on the stiffness (N/m) that holds point k in place: the sum
    /// of its edges' membrane stiffnesses and its hinges' and twists'
    /// stiffnesses over their lever arms. With the point's mass it gives the
    /// local frequency that selective mass scaling caps.
    pub fn local_stiffness(&self, g: &Grid, k: usize) -> f32 {
        let (i, j) = (k % g.m, k / g.m);
        let mut s = 0.0;
        let mut add = |q: usize, own_a: bool, own_b: bool| {
            let pm = &self.points[q];
            let (i1, i2) = (pm.inv_l1 * pm.inv_l1, pm.inv_l2 * pm.inv_l2);
            if own_a {
                s += (pm.k11 + 2.0 * pm.k12) * i1;
            }
            if own_b {
                s += (pm.k22 + 2.0 * pm.k12) * i2;
            }
            s += 4.0 * (pm.kb_a * i1 + pm.kb_u * i2 + 2.0 * pm.kb_t * pm.inv_l1 * pm.inv_l2);
        };
        if j + 1 < g.n {
            add(k, true, true);
        }
        add(g.idx(g.left(i), j), true, false);
        if j >= 1 {
            add(g.idx(i, j - 1), false, true);
        }
        s
    }
}

/// Per-point scratch of pass 1: the membrane's ∂E/∂a, ∂E/∂b, and quad k's
/// normal, 1/|d1×d2|, and twist terms.
#[derive(Clone, Copy, Default)]
struct QuadTerms {
    ca: Vec3,
    cb: Vec3,
    normal: Vec3,
    inv_c: f32,
    /// The quad's fade measure x = |c|/(FADE·|d1||d2|), its fade s(x) and
    /// ds/dx (see [`FADE`]).
    fade_x: f32,
    fade: f32,
    dfade: f32,
    /// ∂`E_twist/∂n`, ∂`E_twist/∂x` (through the fade), and the twist's direct
    /// corner term (∂E/∂w)·n/s.
    g_twist: Vec3,
    c_twist: f32,
    t: Vec3,
    /// The quad's stretch² as the step limit counts it ([`counted_stretch2`]).
    stretch2: f32,
}

/// Per-point scratch of pass 2: the hinges' gradients with respect to the
/// two quad normals, and with respect to the hinge edge.
#[derive(Clone, Copy, Default)]
struct HingeTerms {
    /// Around hinge: left quad, right quad, edge (k → up).
    ga_l: Vec3,
    ga_r: Vec3,
    ga_e: Vec3,
    /// Up hinge: upper quad, lower quad, edge (k → right).
    gu_u: Vec3,
    gu_d: Vec3,
    gu_e: Vec3,
    /// ∂E/∂x of the left, right, upper and lower quads (through their fade).
    ca_l: f32,
    ca_r: f32,
    cu_u: f32,
    cu_d: f32,
}

/// Per-quad scratch of pass 3: ∂E/∂d1 and ∂E/∂d2 through the quad normal.
#[derive(Clone, Copy, Default)]
struct DiagonalTerms {
    p: Vec3,
    q: Vec3,
}

/// Reusable buffers of the force evaluation.
#[derive(Default)]
pub struct Scratch {
    quads: Vec<QuadTerms>,
    hinges: Vec<HingeTerms>,
    diagonals: Vec<DiagonalTerms>,
    /// `min_stretch` at the positions of the last evaluation (`None`
    /// before the first).
    pub min_stretch: Option<f32>,
}

impl Scratch {
    /// Bytes of scratch per skin point.
    pub const BYTES_PER_POINT: usize = std::mem::size_of::<QuadTerms>()
        + std::mem::size_of::<HingeTerms>()
        + std::mem::size_of::<DiagonalTerms>();
}

/// Runs `f(j, row)` over the rows of `buf` (m entries each), in parallel for
/// large grids.
fn rows<T: Send>(g: &Grid, buf: &mut [T], f: impl Fn(usize, &mut [T]) + Sync + Send) {
    if g.points() >= PARALLEL_POINTS {
        buf.par_chunks_mut(g.m)
            .enumerate()
            .for_each(|(j, r)| f(j, r));
    } else {
        buf.chunks_mut(g.m).enumerate().for_each(|(j, r)| f(j, r));
    }
}

fn pass1_point(g: &Grid, mat: &ElasticMaterial, r: &[Vec3], i: usize, j: usize) -> QuadTerms {
    let mut t = QuadTerms {
        stretch2: f32::INFINITY,
        ..QuadTerms::default()
    };
    if j + 1 >= g.n {
        return t;
    }
    let k = g.idx(i, j);
    let pm = &mat.points[k];
    let a = r[g.idx(g.right(i), j)] - r[k];
    let b = r[g.idx(i, j + 1)] - r[k];
    let (la, lb) = (a.length(), b.length());
    t.stretch2 = counted_stretch2(
        la * la * pm.inv_l1 * pm.inv_l1,
        lb * lb * pm.inv_l2 * pm.inv_l2,
    );
    let ua = if la > TINY { a / la } else { Vec3::ZERO };
    let ub = if lb > TINY { b / lb } else { Vec3::ZERO };
    t.ca = (pm.k11 * (la * pm.inv_l1 - 1.0) * pm.inv_l1) * ua;
    t.cb = (pm.k22 * (lb * pm.inv_l2 - 1.0) * pm.inv_l2) * ub;
    if la > TINY && lb > TINY {
        // Shear: the cosine of the angle between the grid lines, faded
        // with either edge's compression (see [`SHEAR_FADE`]):
        // E = k12·w·σ², w = s(λ1/F)·s(λ2/F).
        let c = ua.dot(ub);
        let sigma = c - pm.cos0;
        let (wa, dwa) = fade(la * pm.inv_l1 * (1.0 / SHEAR_FADE));
        let (wb, dwb) = fade(lb * pm.inv_l2 * (1.0 / SHEAR_FADE));
        let s12 = 2.0 * pm.k12 * wa * wb * sigma;
        let e12 = pm.k12 * sigma * sigma * (1.0 / SHEAR_FADE);
        t.ca += (s12 / la) * (ub - c * ua) + (e12 * dwa * wb * pm.inv_l1) * ua;
        t.cb += (s12 / lb) * (ua - c * ub) + (e12 * wa * dwb * pm.inv_l2) * ub;
    }
    if !mat.bending {
        return t;
    }
    let (d1, d2) = g.diagonals(r, i, j);
    let c = d1.cross(d2);
    let clen = c.length();
    if clen <= TINY {
        return t;
    }
    t.normal = c / clen;
    t.inv_c = 1.0 / clen;
    t.fade_x = clen / (FADE * d1.length() * d2.length());
    (t.fade, t.dfade) = fade(t.fade_x);
    let s = (la * lb).sqrt();
    if pm.kb_t > 0.0 && s > TINY && g.bends(j) && t.fade > 0.0 {
        let w_vec = g.warp(r, i, j);
        let tau = t.normal.dot(w_vec) / s;
        let dev = tau - pm.tau;
        // E = kb_t·s_fade·(τ − τ⁰)².
        let de = 2.0 * pm.kb_t * t.fade * dev;
        t.g_twist = w_vec * (de / s);
        t.c_twist = pm.kb_t * dev * dev * t.dfade;
        t.t = t.normal * (de / s);
        // τ ∝ (|a||b|)^(−1/2): ∂τ/∂a = −τ/(2|a|)·â.
        t.ca -= (0.5 * de * tau / la) * ua;
        t.cb -= (0.5 * de * tau / lb) * ub;
    }
    t
}

fn pass2_point(
    g: &Grid,
    mat: &ElasticMaterial,
    r: &[Vec3],
    quads: &[QuadTerms],
    i: usize,
    j: usize,
) -> HingeTerms {
    let mut h = HingeTerms::default();
    if !g.bends(j) {
        return h;
    }
    let k = g.idx(i, j);
    let pm = &mat.points[k];
    // One hinge between quads qa and qb (normals a → b) about the edge `e`
    // (from k), stiffness kb, rest angle θ⁰ = atan2(rs, rc):
    // E = kb·s_a·s_b·(1 − cos(θ − θ⁰)), ½kb(θ − θ⁰)² for small angles,
    // smooth through a fold (where the angle wraps from π to −π) and faded
    // with either quad. cos θ = c/√q, sin θ = s/√q, so no trigonometry.
    // Returns (∂E/∂a, ∂E/∂b, ∂E/∂e, ∂E/∂x_a, ∂E/∂x_b).
    let hinge = |qa: &QuadTerms, qb: &QuadTerms, e: Vec3, kb: f32, (rc, rs): (f32, f32)| {
        let zero = (Vec3::ZERO, Vec3::ZERO, Vec3::ZERO, 0.0, 0.0);
        let (a, b) = (qa.normal, qb.normal);
        let le = e.length();
        let weight = qa.fade * qb.fade;
        if a == Vec3::ZERO || b == Vec3::ZERO || kb == 0.0 || le <= TINY || weight == 0.0 {
            return zero;
        }
        let ue = e / le;
        let axb = a.cross(b);
        let s = axb.dot(ue);
        let c = a.dot(b);
        let q = s * s + c * c;
        if q <= TINY {
            return zero;
        }
        let inv_root = 1.0 / q.sqrt();
        // sin(θ − θ⁰) and cos(θ − θ⁰).
        let sin_dev = (s * rc - c * rs) * inv_root;
        let cos_dev = (c * rc + s * rs) * inv_root;
        let de = kb * weight * sin_dev / q;
        let f = kb * (1.0 - cos_dev);
        (
            de * (c * b.cross(ue) - s * b),
            de * (c * ue.cross(a) - s * a),
            (de * c / le) * (axb - ue * ue.dot(axb)),
            f * qa.dfade * qb.fade,
            f * qa.fade * qb.dfade,
        )
    };
    let e_up = r[g.idx(i, j + 1)] - r[k];
    let ql = &quads[g.idx(g.left(i), j)];
    (h.ga_l, h.ga_r, h.ga_e, h.ca_l, h.ca_r) = hinge(ql, &quads[k], e_up, pm.kb_a, pm.rest_a);
    if g.has_up_hinge(j) {
        let e_right = r[g.idx(g.right(i), j)] - r[k];
        let qd = &quads[g.idx(i, j - 1)];
        (h.gu_u, h.gu_d, h.gu_e, h.cu_u, h.cu_d) =
            hinge(&quads[k], qd, e_right, pm.kb_u, pm.rest_u);
    }
    h
}

/// Pass 1 for points `i0..i0 + LANES` of row `j` (below the top row),
/// written to `out`: [`pass1_point`] eight points at a time.
fn pass1_lanes(
    g: &Grid,
    mat: &ElasticMaterial,
    r: &[Vec3],
    i0: usize,
    j: usize,
    out: &mut [QuadTerms],
) {
    use lanes::{LANES, V8, gather};
    debug_assert!(j + 1 < g.n && i0 + LANES <= g.m && out.len() == LANES);
    let k = |l: usize| g.idx(i0 + l, j);
    let kr = |l: usize| g.idx(g.right(i0 + l), j);
    let pm = |l: usize| &mat.points[k(l)];
    let m8 = lanes::Material8 {
        inv_l1: gather(|l| pm(l).inv_l1),
        inv_l2: gather(|l| pm(l).inv_l2),
        cos0: gather(|l| pm(l).cos0),
        k11: gather(|l| pm(l).k11),
        k22: gather(|l| pm(l).k22),
        k12: gather(|l| pm(l).k12),
        kb_t: gather(|l| pm(l).kb_t),
        tau: gather(|l| pm(l).tau),
    };
    let corners = [
        V8::gather(|l| r[k(l)]),
        V8::gather(|l| r[kr(l)]),
        V8::gather(|l| r[g.idx(i0 + l, j + 1)]),
        V8::gather(|l| r[g.idx(g.right(i0 + l), j + 1)]),
    ];
    let q = lanes::quad8(
        corners,
        &m8,
        mat.bending,
        g.bends(j),
        (TINY, FADE, SHEAR_FADE),
    );
    for (l, o) in out.iter_mut().enumerate() {
        *o = QuadTerms {
            ca: q.ca.lane(l),
            cb: q.cb.lane(l),
            normal: q.normal.lane(l),
            inv_c: q.inv_c.as_array_ref()[l],
            fade_x: q.fade_x.as_array_ref()[l],
            fade: q.fade.as_array_ref()[l],
            dfade: q.dfade.as_array_ref()[l],
            g_twist: q.g_twist.lane(l),
            c_twist: q.c_twist.as_array_ref()[l],
            t: q.t.lane(l),
            stretch2: q.stretch2.as_array_ref()[l],
        };
    }
}

/// Pass 2 for points `i0..i0 + LANES` of row `j` (which bends), written
/// to `out`: [`pass2_point`] eight points at a time.
fn pass2_lanes(
    g: &Grid,
    mat: &ElasticMaterial,
    r: &[Vec3],
    quads: &[QuadTerms],
    i0: usize,
    j: usize,
    out: &mut [HingeTerms],
) {
    use lanes::{LANES, Side8, V8, gather};
    debug_assert!(g.bends(j) && i0 + LANES <= g.m && out.len() == LANES);
    let k = |l: usize| g.idx(i0 + l, j);
    let pm = |l: usize| &mat.points[k(l)];
    #[inline(always)]
    fn side(quads: &[QuadTerms], q: impl Fn(usize) -> usize) -> Side8 {
        Side8 {
            normal: V8::gather(|l| quads[q(l)].normal),
            fade: gather(|l| quads[q(l)].fade),
            dfade: gather(|l| quads[q(l)].dfade),
        }
    }
    let here = side(quads, k);
    let x = V8::gather(|l| r[k(l)]);
    let e_up = V8::gather(|l| r[g.idx(i0 + l, j + 1)]).sub(x);
    let around = lanes::hinge8(
        side(quads, |l| g.idx(g.left(i0 + l), j)),
        here,
        e_up,
        gather(|l| pm(l).kb_a),
        (gather(|l| pm(l).rest_a.0), gather(|l| pm(l).rest_a.1)),
        TINY,
    );
    let up = g.has_up_hinge(j).then(|| {
        let e_right = V8::gather(|l| r[g.idx(g.right(i0 + l), j)]).sub(x);
        lanes::hinge8(
            here,
            side(quads, |l| g.idx(i0 + l, j - 1)),
            e_right,
            gather(|l| pm(l).kb_u),
            (gather(|l| pm(l).rest_u.0), gather(|l| pm(l).rest_u.1)),
            TINY,
        )
    });
    for (l, h) in out.iter_mut().enumerate() {
        let (gu_u, gu_d, gu_e, cu_u, cu_d) = match &up {
            Some(up) => (
                up.ga.lane(l),
                up.gb.lane(l),
                up.ge.lane(l),
                up.ca.as_array_ref()[l],
                up.cb.as_array_ref()[l],
            ),
            None => (Vec3::ZERO, Vec3::ZERO, Vec3::ZERO, 0.0, 0.0),
        };
        *h = HingeTerms {
            ga_l: around.ga.lane(l),
            ga_r: around.gb.lane(l),
            ga_e: around.ge.lane(l),
            gu_u,
            gu_d,
            gu_e,
            ca_l: around.ca.as_array_ref()[l],
            ca_r: around.cb.as_array_ref()[l],
            cu_u,
            cu_d,
        };
    }
}

fn pass3_quad(
    g: &Grid,
    r: &[Vec3],
    quads: &[QuadTerms],
    hinges: &[HingeTerms],
    i: usize,
    j: usize,
) -> DiagonalTerms {
    if j + 1 >= g.n {
        return DiagonalTerms::default();
    }
    let k = g.idx(i, j);
    let qt = &quads[k];
    if qt.normal == Vec3::ZERO {
        return DiagonalTerms::default();
    }
    // Quad (i, j) is the right quad of the around hinge at (i, j), the left
    // one of the hinge at (i+1, j), the upper one of the up hinge at (i, j)
    // and the lower one of the up hinge at (i, j+1).
    // (Hinges that do not exist hold zeros.)
    let (hk, hr, hu) = (
        &hinges[k],
        &hinges[g.idx(g.right(i), j)],
        &hinges[g.idx(i, j + 1)],
    );
    let gn = qt.g_twist + hk.ga_r + hr.ga_l + hk.gu_u + hu.gu_d;
    // ∂E/∂x through the fade: x = |c|/(FADE|d1||d2|) grows along c and
    // falls with the diagonals' lengths.
    let gx = qt.c_twist + hk.ca_r + hr.ca_l + hk.cu_u + hu.cu_d;
    let n = qt.normal;
    let (d1, d2) = g.diagonals(r, i, j);
    let gc = (gn - n * n.dot(gn)) * qt.inv_c + n * (gx * qt.fade_x * qt.inv_c);
    let shrink = gx * qt.fade_x;
    DiagonalTerms {
        p: d2.cross(gc) - d1 * (shrink / d1.length_squared()),
        q: gc.cross(d1) - d2 * (shrink / d2.length_squared()),
    }
}

/// ∂E/∂r at an interior point (rows 1..n−2) from the scratch of passes 1–3.
#[inline]
fn pass4_gradient(g: &Grid, s: &Scratch, bending: bool, i: usize, j: usize) -> Vec3 {
    let il = g.left(i);
    let (k, kl, kd, kld) = (g.idx(i, j), g.idx(il, j), g.idx(i, j - 1), g.idx(il, j - 1));
    let q = &s.quads;
    let mut grad = q[kl].ca - q[k].ca + q[kd].cb - q[k].cb;
    if bending {
        let d = &s.diagonals;
        let h = &s.hinges;
        // Corners 0..3 of quads (i,j), (i−1,j), (i−1,j−1), (i,j−1).
        grad += -d[k].p - d[kl].q + d[kld].p + d[kd].q;
        grad += q[k].t - q[kl].t + q[kld].t - q[kd].t;
        // Hinge edges: out of k (around, up), into k (from below, from the left).
        grad += h[kd].ga_e - h[k].ga_e + h[kl].gu_e - h[k].gu_e;
    }
    grad
}

/// Adds the elastic force −∂E/∂r to `f` at the interior rows (boundary rows
/// are kinematic and get nothing). `scratch` is reused between calls.
pub fn add_elastic_forces(
    g: &Grid,
    mat: &ElasticMaterial,
    r: &[Vec3],
    scratch: &mut Scratch,
    f: &mut [Vec3],
) {
    let p = g.points();
    scratch.quads.resize(p, QuadTerms::default());
    rows(g, &mut scratch.quads, |j, row| {
        // Eight points at a time below the top row (see `lanes`).
        let grouped = if j + 1 < g.n {
            g.m / lanes::LANES * lanes::LANES
        } else {
            0
        };
        for (c, group) in row[..grouped].chunks_exact_mut(lanes::LANES).enumerate() {
            pass1_lanes(g, mat, r, c * lanes::LANES, j, group);
        }
        for (i, t) in row.iter_mut().enumerate().skip(grouped) {
            *t = pass1_point(g, mat, r, i, j);
        }
    });
    scratch.min_stretch = Some(
        scratch
            .quads
            .iter()
            .map(|q| q.stretch2)
            .fold(f32::INFINITY, f32::min)
            .sqrt(),
    );
    if mat.bending {
        scratch.hinges.resize(p, HingeTerms::default());
        let quads = &scratch.quads;
        rows(g, &mut scratch.hinges, |j, row| {
            // Eight points at a time where the row bends (see `lanes`), the
            // rest (and rows without hinges) one by one.
            let grouped = if g.bends(j) {
                g.m / lanes::LANES * lanes::LANES
            } else {
                0
            };
            for (c, group) in row[..grouped].chunks_exact_mut(lanes::LANES).enumerate() {
                pass2_lanes(g, mat, r, quads, c * lanes::LANES, j, group);
            }
            for (i, h) in row.iter_mut().enumerate().skip(grouped) {
                *h = pass2_point(g, mat, r, quads, i, j);
            }
        });
        scratch.diagonals.resize(p, DiagonalTerms::default());
        let hinges = &scratch.hinges;
        rows(g, &mut scratch.diagonals, |j, row| {
            for (i, d) in row.iter_mut().enumerate() {
                *d = pass3_quad(g, r, quads, hinges, i, j);
            }
        });
    }
    let s: &Scratch = scratch;
    rows(g, f, |j, row| {
        if g.is_boundary_row(j) {
            return;
        }
        for (i, fi) in row.iter_mut().enumerate() {
            *fi -= pass4_gradient(g, s, mat.bending, i, j);
        }
    });
}

/// The smallest stretch (current / rest length) of the grid's edges as far
/// as it stiffens the skin, for the explicit step limit. Compressed edges
/// and the quads they bound stiffen the skin (its bending grips a quad as
/// 1/size, its shear an edge as 1/length), so the limit falls with it; but
/// an edge below [`SHEAR_FADE`] carries no shear, and its quad, a sliver,
/// no bending ([`FADE`]), so it counts as `SHEAR_FADE`. A quad with both
/// edges below it is not a sliver and still bends: it counts as the longer
/// of the two (measured, a torso elbow bent 92° at 32×32: the inner elbow's
/// up edges at 5 % of their rest length cut the arm's step to a twentieth,
/// 3,606 steps in 1.2 s; counted so, 887 and the same skin).
pub fn min_stretch(g: &Grid, mat: &ElasticMaterial, r: &[Vec3]) -> f32 {
    let mut worst = f32::INFINITY;
    for j in 0..g.n - 1 {
        for i in 0..g.m {
            let k = g.idx(i, j);
            let pm = &mat.points[k];
            let a = (r[g.idx(g.right(i), j)] - r[k]).length_squared() * pm.inv_l1 * pm.inv_l1;
            let b = (r[g.idx(i, j + 1)] - r[k]).length_squared() * pm.inv_l2 * pm.inv_l2;
            worst = worst.min(counted_stretch2(a, b));
        }
    }
    worst.sqrt()
}

/// A quad's stretch² for [`min_stretch`], from its edges' stretches² `a`
/// (around) and `b` (up).
fn counted_stretch2(a: f32, b: f32) -> f32 {
    let floor = SHEAR_FADE * SHEAR_FADE;
    if a < floor && b < floor {
        a.max(b)
    } else {
        a.max(floor).min(b.max(floor))
    }
}

mod energy;
mod lanes;
#[cfg(test)]
mod tests;
