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
//! Four passes, each reading only the rows next to it: (1) per point the
//! membrane edge terms, and per quad its normal, warp and twist terms; (2)
//! per point the two hinges' angles and their derivatives with respect to
//! the quad normals and the hinge edge; (3) per quad the gathered normal
//! gradient turned into gradients of its diagonals; (4) per point the
//! gather of everything that touches it. They run fused, one sweep up the
//! rows eight points at a time (`fused`); `reference` states them point by
//! point, for the tests.

use crate::character::Skin;
pub use energy::elastic_energy;
#[cfg(test)]
use energy::elastic_energy_parts;
pub use fused::{Scratch, add_elastic_forces};
use glam::{DVec3, Vec3};

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
    #[cfg(test)]
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
    /// The same, a field per array for the lanes (see [`MaterialLanes`]).
    lanes: MaterialLanes,
    /// Any point with ξ > 0 (the bending passes are skipped otherwise).
    bending: bool,
}

/// The fields of [`PointMaterial`] the lanes read, each an array over the
/// grid's points with a lane group's worth of zeros after the last (a row's
/// last group may run past its end).
#[derive(Clone, Debug, Default)]
struct MaterialLanes {
    inv_l1: Vec<f32>,
    inv_l2: Vec<f32>,
    cos0: Vec<f32>,
    k11: Vec<f32>,
    k22: Vec<f32>,
    k12: Vec<f32>,
    kb_t: Vec<f32>,
    tau: Vec<f32>,
    kb_a: Vec<f32>,
    kb_u: Vec<f32>,
    rest_a_cos: Vec<f32>,
    rest_a_sin: Vec<f32>,
    rest_u_cos: Vec<f32>,
    rest_u_sin: Vec<f32>,
}

impl MaterialLanes {
    fn of(points: &[PointMaterial]) -> Self {
        let field = |f: fn(&PointMaterial) -> f32| {
            let mut v: Vec<f32> = points.iter().map(f).collect();
            v.resize(points.len() + lanes::LANES, 0.0);
            v
        };
        Self {
            inv_l1: field(|p| p.inv_l1),
            inv_l2: field(|p| p.inv_l2),
            cos0: field(|p| p.cos0),
            k11: field(|p| p.k11),
            k22: field(|p| p.k22),
            k12: field(|p| p.k12),
            kb_t: field(|p| p.kb_t),
            tau: field(|p| p.tau),
            kb_a: field(|p| p.kb_a),
            kb_u: field(|p| p.kb_u),
            rest_a_cos: field(|p| p.rest_a.0),
            rest_a_sin: field(|p| p.rest_a.1),
            rest_u_cos: field(|p| p.rest_u.0),
            rest_u_sin: field(|p| p.rest_u.1),
        }
    }
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
            .collect::<Vec<_>>();
        Self {
            lanes: MaterialLanes::of(&points),
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
mod fused;
mod lanes;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;
