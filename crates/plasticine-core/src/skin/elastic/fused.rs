//! The elastic force's four passes (see the module's "Evaluation") fused
//! into one sweep up the grid, eight points of a row at a time.
//!
//! Each pass reads the terms of the rows next to it only, so a sweep keeps
//! just the last three rows of each pass's terms: at lead row L it poses row
//! L+1, computes the quads of row L (pass 1) and their hinges (pass 2), the
//! diagonal terms of quad row L−1 (pass 3), and the force on point row L−1
//! (pass 4). The rows live in structure-of-arrays buffers, so lanes load
//! and store contiguous floats, and the working set is a few rows (about
//! 600 bytes per point of a row) instead of every term of the grid (196
//! bytes per point, read and written by four passes). Measured on the
//! 128×128 penguin, one core: 70 ns per point before.
//!
//! The arithmetic is the lanes' and the scalar passes' term for term, in
//! the same order, so the forces are the same bits as those of the four
//! passes run one after the other (where the row is a whole number of
//! lane groups; a row's tail ran the scalar passes, which round alike only
//! up to the last bit).
//!
//! Large grids are cut into bands of rows, one per thread; each band
//! computes the two rows below it again (its halo), and every row's terms
//! are computed the same way whichever band computes them, so the forces do
//! not depend on the thread count.

use super::lanes::{self, LANES, Side8, V8};
use super::{ElasticMaterial, FADE, Grid, SHEAR_FADE, TINY};
use glam::Vec3;
use rayon::prelude::*;
use wide::{CmpEq, CmpGt, f32x8};

/// Where point 0 of a row sits in its arrays: the slot before it holds the
/// row's last point (point 0's periodic left neighbour) and the slot after
/// the row its first (the last point's right neighbour), so neighbours load
/// as a shifted group with no wrap in the loop.
const FRONT: usize = LANES;

/// Below this many points the passes run serially (rayon's overhead would dominate).
const PARALLEL_POINTS: usize = 2048;

/// Some fields of one grid row, each an array of `stride` floats with point
/// i at `FRONT + i`; lanes past the row's end hold whatever they computed.
#[derive(Clone, Default)]
struct Row {
    data: Vec<f32>,
    stride: usize,
}

impl Row {
    fn new(fields: usize, m: usize) -> Self {
        let stride = FRONT + m.div_ceil(LANES) * LANES + LANES;
        Self {
            data: vec![0.0; fields * stride],
            stride,
        }
    }

    #[inline(always)]
    fn f(&self, field: usize, at: usize) -> f32x8 {
        let s = field * self.stride + at;
        let lanes: [f32; LANES] = self.data[s..s + LANES].try_into().expect("eight lanes");
        f32x8::new(lanes)
    }

    #[inline(always)]
    fn v(&self, field: usize, at: usize) -> V8 {
        V8 {
            x: self.f(field, at),
            y: self.f(field + 1, at),
            z: self.f(field + 2, at),
        }
    }

    #[inline(always)]
    fn set(&mut self, field: usize, at: usize, x: f32x8) {
        let s = field * self.stride + at;
        self.data[s..s + LANES].copy_from_slice(x.as_array_ref());
    }

    #[inline(always)]
    fn set_v(&mut self, field: usize, at: usize, v: V8) {
        self.set(field, at, v.x);
        self.set(field + 1, at, v.y);
        self.set(field + 2, at, v.z);
    }

    /// Writes the periodic neighbours either side of a row of m points.
    fn wrap(&mut self, m: usize) {
        for field in self.data.chunks_exact_mut(self.stride) {
            field[FRONT - 1] = field[FRONT + m - 1];
            field[FRONT + m] = field[FRONT];
        }
    }

    fn clear(&mut self) {
        self.data.fill(0.0);
    }
}

// Pass 1's terms per quad (see `QuadTerms` in the scalar passes).
const CA: usize = 0;
const CB: usize = 3;
const NORMAL: usize = 6;
const INV_C: usize = 9;
const FADE_X: usize = 10;
const Q_FADE: usize = 11;
const DFADE: usize = 12;
const G_TWIST: usize = 13;
const C_TWIST: usize = 16;
const T: usize = 17;
const QUAD_FIELDS: usize = 20;
// Pass 2's terms per hinge point (`HingeTerms`).
const GA_L: usize = 0;
const GA_R: usize = 3;
const GA_E: usize = 6;
const GU_U: usize = 9;
const GU_D: usize = 12;
const GU_E: usize = 15;
const CA_L: usize = 18;
const CA_R: usize = 19;
const CU_U: usize = 20;
const CU_D: usize = 21;
const HINGE_FIELDS: usize = 22;
// Pass 3's terms per quad (`DiagonalTerms`).
const DP: usize = 0;
const DQ: usize = 3;
const DIAGONAL_FIELDS: usize = 6;

/// One sweep's rows: positions, quads and hinges of the last three rows,
/// diagonal terms of the last two, indexed by row modulo their count.
#[derive(Clone, Default)]
struct Ring {
    m: usize,
    positions: [Row; 3],
    quads: [Row; 3],
    hinges: [Row; 3],
    diagonals: [Row; 2],
}

impl Ring {
    fn new(m: usize) -> Self {
        let rows = |fields| std::array::from_fn(|_| Row::new(fields, m));
        Self {
            m,
            positions: rows(3),
            quads: rows(QUAD_FIELDS),
            hinges: rows(HINGE_FIELDS),
            diagonals: std::array::from_fn(|_| Row::new(DIAGONAL_FIELDS, m)),
        }
    }

    /// Bytes this ring holds.
    fn bytes(&self) -> usize {
        let rows = self.positions.iter().chain(&self.quads).chain(&self.hinges);
        rows.chain(&self.diagonals)
            .map(|r| r.data.len() * size_of::<f32>())
            .sum()
    }

    /// A ring for rows of m points, reusing this one's buffers if it fits.
    fn fit(&mut self, m: usize) {
        if self.m != m || self.positions[0].data.is_empty() {
            *self = Self::new(m);
        }
    }
}

/// The material of pass 1 and 2 for the lane group of point k.
#[inline(always)]
fn material8(mat: &ElasticMaterial, k: usize) -> lanes::Material8 {
    let l = &mat.lanes;
    let at = |x: &[f32]| {
        let lanes: [f32; LANES] = x[k..k + LANES].try_into().expect("eight lanes");
        f32x8::new(lanes)
    };
    lanes::Material8 {
        inv_l1: at(&l.inv_l1),
        inv_l2: at(&l.inv_l2),
        cos0: at(&l.cos0),
        k11: at(&l.k11),
        k22: at(&l.k22),
        k12: at(&l.k12),
        kb_t: at(&l.kb_t),
        tau: at(&l.tau),
    }
}

/// Lanes of the group at `i0` that are points of a row of m (the rest run
/// past its end).
#[inline(always)]
fn in_row(i0: usize, m: usize) -> f32x8 {
    let index = f32x8::new(std::array::from_fn(|l| (i0 + l) as f32));
    f32x8::splat(m as f32).cmp_gt(index)
}

/// Copies row j of `r` into `out`.
fn pose(g: &Grid, r: &[Vec3], j: usize, out: &mut Row) {
    let row = &r[g.idx(0, j)..g.idx(0, j) + g.m];
    let stride = out.stride;
    let (x, rest) = out.data.split_at_mut(stride);
    let (y, z) = rest.split_at_mut(stride);
    for (i, p) in row.iter().enumerate() {
        x[FRONT + i] = p.x;
        y[FRONT + i] = p.y;
        z[FRONT + i] = p.z;
    }
    out.wrap(g.m);
}

/// Pass 1 on row j (positions of rows j and j+1): the quads' terms, and
/// the least stretch² of the row's quads as the step limit counts it.
fn quads(g: &Grid, mat: &ElasticMaterial, (pj, pu): (&Row, &Row), j: usize, out: &mut Row) -> f32 {
    if j + 1 >= g.n {
        // The top row has no quads.
        out.clear();
        return f32::INFINITY;
    }
    let twists = g.bends(j);
    let mut worst = f32x8::splat(f32::INFINITY);
    for i0 in (0..g.m).step_by(LANES) {
        let at = FRONT + i0;
        let corners = [pj.v(0, at), pj.v(0, at + 1), pu.v(0, at), pu.v(0, at + 1)];
        let m8 = material8(mat, g.idx(i0, j));
        let q = lanes::quad8(corners, &m8, mat.bending, twists, (TINY, FADE, SHEAR_FADE));
        out.set_v(CA, at, q.ca);
        out.set_v(CB, at, q.cb);
        out.set_v(NORMAL, at, q.normal);
        out.set(INV_C, at, q.inv_c);
        out.set(FADE_X, at, q.fade_x);
        out.set(Q_FADE, at, q.fade);
        out.set(DFADE, at, q.dfade);
        out.set_v(G_TWIST, at, q.g_twist);
        out.set(C_TWIST, at, q.c_twist);
        out.set_v(T, at, q.t);
        let counted = in_row(i0, g.m).blend(q.stretch2, f32x8::splat(f32::INFINITY));
        worst = worst.min(counted);
    }
    out.wrap(g.m);
    worst.to_array().into_iter().fold(f32::INFINITY, f32::min)
}

/// Pass 2 on row j: its hinges, from the quads of rows j and j−1 (`qj`,
/// `qd`) and the positions of rows j and j+1.
fn hinges(
    g: &Grid,
    mat: &ElasticMaterial,
    (pj, pu): (&Row, &Row),
    (qj, qd): (&Row, &Row),
    j: usize,
    out: &mut Row,
) {
    if !g.bends(j) {
        out.clear();
        return;
    }
    let up = g.has_up_hinge(j);
    let l = &mat.lanes;
    let at_k = |x: &[f32], k: usize| {
        let lanes: [f32; LANES] = x[k..k + LANES].try_into().expect("eight lanes");
        f32x8::new(lanes)
    };
    #[inline(always)]
    fn side(q: &Row, at: usize) -> Side8 {
        Side8 {
            normal: q.v(NORMAL, at),
            fade: q.f(Q_FADE, at),
            dfade: q.f(DFADE, at),
        }
    }
    for i0 in (0..g.m).step_by(LANES) {
        let at = FRONT + i0;
        let k = g.idx(i0, j);
        let here = side(qj, at);
        let x = pj.v(0, at);
        let e_up = pu.v(0, at).sub(x);
        let around = lanes::hinge8(
            side(qj, at - 1),
            here,
            e_up,
            at_k(&l.kb_a, k),
            (at_k(&l.rest_a_cos, k), at_k(&l.rest_a_sin, k)),
            TINY,
        );
        out.set_v(GA_L, at, around.ga);
        out.set_v(GA_R, at, around.gb);
        out.set_v(GA_E, at, around.ge);
        out.set(CA_L, at, around.ca);
        out.set(CA_R, at, around.cb);
        if up {
            let e_right = pj.v(0, at + 1).sub(x);
            let u = lanes::hinge8(
                here,
                side(qd, at),
                e_right,
                at_k(&l.kb_u, k),
                (at_k(&l.rest_u_cos, k), at_k(&l.rest_u_sin, k)),
                TINY,
            );
            out.set_v(GU_U, at, u.ga);
            out.set_v(GU_D, at, u.gb);
            out.set_v(GU_E, at, u.ge);
            out.set(CU_U, at, u.ca);
            out.set(CU_D, at, u.cb);
        } else {
            let zero = f32x8::ZERO;
            let none = V8 {
                x: zero,
                y: zero,
                z: zero,
            };
            for field in [GU_U, GU_D, GU_E] {
                out.set_v(field, at, none);
            }
            out.set(CU_U, at, zero);
            out.set(CU_D, at, zero);
        }
    }
    out.wrap(g.m);
}

/// Pass 3 on quad row j: the normal's gathered gradient turned into the
/// diagonals' (from the quads of row j, the hinges of rows j and j+1, and
/// the positions of rows j and j+1).
fn diagonals(
    g: &Grid,
    (pj, pu): (&Row, &Row),
    qj: &Row,
    (hj, hu): (&Row, &Row),
    j: usize,
    out: &mut Row,
) {
    if j + 1 >= g.n {
        out.clear();
        return;
    }
    for i0 in (0..g.m).step_by(LANES) {
        let at = FRONT + i0;
        let n = qj.v(NORMAL, at);
        let zero = f32x8::ZERO;
        // A quad with no normal (degenerate) carries nothing.
        let has = !(n.x.cmp_eq(zero) & n.y.cmp_eq(zero) & n.z.cmp_eq(zero));
        // Quad (i, j) is the right quad of the around hinge at (i, j), the
        // left one of the hinge at (i+1, j), the upper one of the up hinge at
        // (i, j) and the lower one of the up hinge at (i, j+1).
        let gn = qj
            .v(G_TWIST, at)
            .add(hj.v(GA_R, at))
            .add(hj.v(GA_L, at + 1))
            .add(hj.v(GU_U, at))
            .add(hu.v(GU_D, at));
        let gx = qj.f(C_TWIST, at)
            + hj.f(CA_R, at)
            + hj.f(CA_L, at + 1)
            + hj.f(CU_U, at)
            + hu.f(CU_D, at);
        let (x, xr, xu, xru) = (pj.v(0, at), pj.v(0, at + 1), pu.v(0, at), pu.v(0, at + 1));
        let (d1, d2) = (xru.sub(x), xu.sub(xr));
        let (inv_c, fade_x) = (qj.f(INV_C, at), qj.f(FADE_X, at));
        let gc = gn
            .sub(n.scale(n.dot(gn)))
            .scale(inv_c)
            .add(n.scale(gx * fade_x * inv_c));
        let shrink = gx * fade_x;
        let p = d2.cross(gc).sub(d1.scale(shrink / d1.dot(d1)));
        let q = gc.cross(d1).sub(d2.scale(shrink / d2.dot(d2)));
        out.set_v(DP, at, p.keep(has));
        out.set_v(DQ, at, q.keep(has));
    }
    out.wrap(g.m);
}

/// The terms pass 4 gathers for point row j: the quads, diagonal terms and
/// hinges of rows j and j−1.
struct Below<'a> {
    quads: (&'a Row, &'a Row),
    diagonals: (&'a Row, &'a Row),
    hinges: (&'a Row, &'a Row),
}

/// Pass 4 on point row j: −∂E/∂r added to `f` (the row's m forces).
fn gradient(g: &Grid, bending: bool, t: &Below, f: &mut [Vec3]) {
    let (qj, qd) = t.quads;
    let (dj, dd) = t.diagonals;
    let (hj, hd) = t.hinges;
    let minus = f32x8::splat(-1.0);
    for i0 in (0..g.m).step_by(LANES) {
        let (at, left) = (FRONT + i0, FRONT + i0 - 1);
        let mut grad = qj
            .v(CA, left)
            .sub(qj.v(CA, at))
            .add(qd.v(CB, at))
            .sub(qj.v(CB, at));
        if bending {
            // Corners 0..3 of quads (i,j), (i−1,j), (i−1,j−1), (i,j−1);
            // −p is a negation (the sign of a zero as the scalar code's).
            let d = dj
                .v(DP, at)
                .scale(minus)
                .sub(dj.v(DQ, left))
                .add(dd.v(DP, left))
                .add(dd.v(DQ, at));
            grad = grad.add(d);
            let tw = qj
                .v(T, at)
                .sub(qj.v(T, left))
                .add(qd.v(T, left))
                .sub(qd.v(T, at));
            grad = grad.add(tw);
            // Hinge edges: out of k (around, up), into k (from below, from the left).
            let e = hd
                .v(GA_E, at)
                .sub(hj.v(GA_E, at))
                .add(hj.v(GU_E, left))
                .sub(hj.v(GU_E, at));
            grad = grad.add(e);
        }
        let end = (i0 + LANES).min(g.m);
        for (l, fi) in f[i0..end].iter_mut().enumerate() {
            *fi -= grad.lane(l);
        }
    }
}

/// Adds the elastic force to point rows `j0..j1` (interior), `f` holding
/// just those rows; returns the least stretch² of the quads it computed.
fn sweep(
    g: &Grid,
    mat: &ElasticMaterial,
    r: &[Vec3],
    ring: &mut Ring,
    (j0, j1): (usize, usize),
    f: &mut [Vec3],
) -> f32 {
    let Ring {
        positions,
        quads: q,
        hinges: h,
        diagonals: d,
        ..
    } = ring;
    let first = j0.saturating_sub(2);
    let mut worst = f32::INFINITY;
    pose(g, r, first, &mut positions[first % 3]);
    for lead in first..=j1 {
        if lead + 1 < g.n {
            pose(g, r, lead + 1, &mut positions[(lead + 1) % 3]);
        }
        let p = (&positions[lead % 3], &positions[(lead + 1) % 3]);
        worst = worst.min(quads(g, mat, p, lead, &mut q[lead % 3]));
        // Rows at and below `lead` by one and two (modulo 3).
        let (now, one, two) = (lead % 3, (lead + 2) % 3, (lead + 1) % 3);
        if mat.bending && lead + 1 >= j0 {
            hinges(g, mat, p, (&q[now], &q[one]), lead, &mut h[now]);
        }
        let Some(below) = lead.checked_sub(1) else {
            continue;
        };
        if mat.bending && below + 1 >= j0 {
            let p = (&positions[one], &positions[now]);
            diagonals(g, p, &q[one], (&h[one], &h[now]), below, &mut d[below % 2]);
        }
        if below >= j0 && below < j1 {
            let rows = Below {
                quads: (&q[one], &q[two]),
                diagonals: (&d[below % 2], &d[(below + 1) % 2]),
                hinges: (&h[one], &h[two]),
            };
            let start = (below - j0) * g.m;
            gradient(g, mat.bending, &rows, &mut f[start..start + g.m]);
        }
    }
    worst
}

/// Reusable buffers of the force evaluation: one sweep's rows per band.
#[derive(Default)]
pub struct Scratch {
    rings: Vec<Ring>,
    /// `min_stretch` at the positions of the last evaluation (`None`
    /// before the first).
    pub min_stretch: Option<f32>,
}

impl Scratch {
    /// Bytes of scratch the last evaluation used.
    pub fn bytes(&self) -> usize {
        self.rings.iter().map(Ring::bytes).sum()
    }

    /// Bytes of scratch per point of an m×n grid evaluated on `threads`
    /// threads: a few rows per band, not the grid.
    pub fn bytes_per_point(m: usize, n: usize, threads: usize) -> usize {
        let mut ring = Ring::default();
        ring.fit(m);
        (ring.bytes() * threads.max(1)).div_ceil(m * n)
    }
}

/// Rows per band below which a grid's sweep is not split further.
const BAND_ROWS: usize = 8;

/// Adds the elastic force −∂E/∂r to `f` at the interior rows (boundary rows
/// are kinematic and get nothing). `scratch` is reused between calls.
pub fn add_elastic_forces(
    g: &Grid,
    mat: &ElasticMaterial,
    r: &[Vec3],
    scratch: &mut Scratch,
    f: &mut [Vec3],
) {
    // One band of rows per thread on a large grid (see the module's docs).
    let bands = if g.points() >= PARALLEL_POINTS {
        rayon::current_num_threads()
    } else {
        1
    };
    add_elastic_forces_in_bands(g, mat, r, scratch, f, bands);
}

/// [`add_elastic_forces`] with the interior rows cut into (at most) `bands`
/// bands of whole rows, swept in parallel: the same forces, bit for bit,
/// for any count.
pub(super) fn add_elastic_forces_in_bands(
    g: &Grid,
    mat: &ElasticMaterial,
    r: &[Vec3],
    scratch: &mut Scratch,
    f: &mut [Vec3],
    bands: usize,
) {
    // Interior point rows 1..n−1.
    let rows = g.n.saturating_sub(2);
    let bands = bands.min(rows / BAND_ROWS).max(1);
    scratch.rings.resize_with(bands, Default::default);
    for ring in &mut scratch.rings {
        ring.fit(g.m);
    }
    let mut spans = Vec::with_capacity(bands);
    let skip = g.m.min(f.len());
    let mut rest = &mut f[skip..];
    let mut j0 = 1;
    for b in 0..bands {
        let j1 = 1 + rows * (b + 1) / bands;
        let (band, tail) = rest.split_at_mut((j1 - j0) * g.m);
        spans.push(((j0, j1), band));
        rest = tail;
        j0 = j1;
    }
    let worst = if bands == 1 {
        let ((j0, j1), band) = spans.pop().expect("one band");
        sweep(g, mat, r, &mut scratch.rings[0], (j0, j1), band)
    } else {
        scratch
            .rings
            .par_iter_mut()
            .zip(spans)
            .map(|(ring, (rows, band))| sweep(g, mat, r, ring, rows, band))
            .reduce(|| f32::INFINITY, f32::min)
    };
    scratch.min_stretch = Some(worst.sqrt());
}
