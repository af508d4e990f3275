//! The elastic force passes 1 and 2 eight points at a time.
//!
//! The scalar hinge ([`super::pass2_point`]) was the costliest part of a
//! skin step (a fifth of it on the 64×64 penguin, measured with perf), and
//! the membrane-and-normal pass ([`super::pass1_point`]) the next: square
//! roots, divisions and a dozen cross and dot products per point, each a
//! long dependency chain. Here eight neighbouring points of a row are
//! gathered into lanes, computed branch-free (every case the scalar code
//! skips is a lane mask), and scattered back. The arithmetic is the scalar
//! code's, so both give the same terms up to rounding; a test holds them to
//! that. Pass 3 stays scalar: it does little arithmetic on many gathered
//! terms, and in lanes it measured slower.

use super::{ElasticMaterial, Grid, HingeTerms, QuadTerms, TINY};
use glam::Vec3;
use wide::{CmpGt, CmpNe, f32x8};

/// Points per lane group.
pub(super) const LANES: usize = 8;

/// Eight 3-vectors, one per lane.
#[derive(Clone, Copy)]
struct V8 {
    x: f32x8,
    y: f32x8,
    z: f32x8,
}

impl V8 {
    #[inline(always)]
    fn gather(f: impl Fn(usize) -> Vec3) -> Self {
        let v: [Vec3; LANES] = std::array::from_fn(f);
        Self {
            x: f32x8::new(std::array::from_fn(|l| v[l].x)),
            y: f32x8::new(std::array::from_fn(|l| v[l].y)),
            z: f32x8::new(std::array::from_fn(|l| v[l].z)),
        }
    }

    #[inline(always)]
    fn lane(self, l: usize) -> Vec3 {
        Vec3::new(
            self.x.as_array_ref()[l],
            self.y.as_array_ref()[l],
            self.z.as_array_ref()[l],
        )
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

    #[inline(always)]
    fn cross(self, o: Self) -> Self {
        Self {
            x: self.y * o.z - self.z * o.y,
            y: self.z * o.x - self.x * o.z,
            z: self.x * o.y - self.y * o.x,
        }
    }

    /// Lanes where `mask` is set keep their value; the others become zero.
    #[inline(always)]
    fn keep(self, mask: f32x8) -> Self {
        let zero = f32x8::ZERO;
        Self {
            x: mask.blend(self.x, zero),
            y: mask.blend(self.y, zero),
            z: mask.blend(self.z, zero),
        }
    }
}

#[inline(always)]
fn gather(f: impl Fn(usize) -> f32) -> f32x8 {
    f32x8::new(std::array::from_fn(f))
}

/// What one hinge gives each lane: ∂E/∂a, ∂E/∂b, ∂E/∂e, and ∂E/∂x through
/// the fades of quads a and b.
struct Hinge8 {
    ga: V8,
    gb: V8,
    ge: V8,
    ca: f32x8,
    cb: f32x8,
}

/// Eight hinges between quads `qa` and `qb` (normals a → b) about edges `e`,
/// stiffness `kb`, rest angle (cos, sin) = (`rc`, `rs`): the scalar hinge of
/// [`super::pass2_point`] per lane.
#[inline(always)]
fn hinge8(
    qa: &[&QuadTerms; LANES],
    qb: &[&QuadTerms; LANES],
    e: V8,
    kb: f32x8,
    (rc, rs): (f32x8, f32x8),
) -> Hinge8 {
    let a = V8::gather(|l| qa[l].normal);
    let b = V8::gather(|l| qb[l].normal);
    let (fa, dfa) = (gather(|l| qa[l].fade), gather(|l| qa[l].dfade));
    let (fb, dfb) = (gather(|l| qb[l].fade), gather(|l| qb[l].dfade));
    let zero = f32x8::ZERO;
    let tiny = f32x8::splat(TINY);
    let le = e.dot(e).sqrt();
    let weight = fa * fb;
    // Normals are unit or exactly zero (a degenerate quad).
    let valid = a.dot(a).cmp_gt(zero)
        & b.dot(b).cmp_gt(zero)
        & kb.cmp_ne(zero)
        & le.cmp_gt(tiny)
        & weight.cmp_ne(zero);
    let ue = e.scale(f32x8::ONE / le.max(tiny));
    let axb = a.cross(b);
    let s = axb.dot(ue);
    let c = a.dot(b);
    let q = s * s + c * c;
    let valid = valid & q.cmp_gt(tiny);
    let q = q.max(tiny);
    let inv_root = f32x8::ONE / q.sqrt();
    let sin_dev = (s * rc - c * rs) * inv_root;
    let cos_dev = (c * rc + s * rs) * inv_root;
    let de = kb * weight * sin_dev / q;
    let f = kb * (f32x8::ONE - cos_dev);
    let ga = b.cross(ue).scale(c).sub(b.scale(s)).scale(de);
    let gb = ue.cross(a).scale(c).sub(a.scale(s)).scale(de);
    let ge = axb.sub(ue.scale(ue.dot(axb))).scale(de * c / le.max(tiny));
    Hinge8 {
        ga: ga.keep(valid),
        gb: gb.keep(valid),
        ge: ge.keep(valid),
        ca: valid.blend(f * dfa * fb, zero),
        cb: valid.blend(f * fa * dfb, zero),
    }
}

/// Pass 2 for points `i0..i0 + LANES` of row `j` (which bends), written
/// to `out` (those points' hinge terms).
pub(super) fn pass2_lanes(
    g: &Grid,
    mat: &ElasticMaterial,
    r: &[Vec3],
    quads: &[QuadTerms],
    i0: usize,
    j: usize,
    out: &mut [HingeTerms],
) {
    debug_assert!(g.bends(j) && i0 + LANES <= g.m && out.len() == LANES);
    let k = |l: usize| g.idx(i0 + l, j);
    let pm = |l: usize| &mat.points[k(l)];
    let here: [&QuadTerms; LANES] = std::array::from_fn(|l| &quads[k(l)]);
    let left: [&QuadTerms; LANES] = std::array::from_fn(|l| &quads[g.idx(g.left(i0 + l), j)]);
    let x = V8::gather(|l| r[k(l)]);
    let e_up = V8::gather(|l| r[g.idx(i0 + l, j + 1)]).sub(x);
    let around = hinge8(
        &left,
        &here,
        e_up,
        gather(|l| pm(l).kb_a),
        (gather(|l| pm(l).rest_a.0), gather(|l| pm(l).rest_a.1)),
    );
    let up = g.has_up_hinge(j).then(|| {
        let below: [&QuadTerms; LANES] = std::array::from_fn(|l| &quads[g.idx(i0 + l, j - 1)]);
        let e_right = V8::gather(|l| r[g.idx(g.right(i0 + l), j)]).sub(x);
        hinge8(
            &here,
            &below,
            e_right,
            gather(|l| pm(l).kb_u),
            (gather(|l| pm(l).rest_u.0), gather(|l| pm(l).rest_u.1)),
        )
    });
    for (l, h) in out.iter_mut().enumerate() {
        h.ga_l = around.ga.lane(l);
        h.ga_r = around.gb.lane(l);
        h.ga_e = around.ge.lane(l);
        h.ca_l = around.ca.as_array_ref()[l];
        h.ca_r = around.cb.as_array_ref()[l];
        if let Some(up) = &up {
            h.gu_u = up.ga.lane(l);
            h.gu_d = up.gb.lane(l);
            h.gu_e = up.ge.lane(l);
            h.cu_u = up.ca.as_array_ref()[l];
            h.cu_d = up.cb.as_array_ref()[l];
        } else {
            h.gu_u = Vec3::ZERO;
            h.gu_d = Vec3::ZERO;
            h.gu_e = Vec3::ZERO;
            h.cu_u = 0.0;
            h.cu_d = 0.0;
        }
    }
}

/// Pass 1 for points `i0..i0 + LANES` of row `j` (below the top row),
/// written to `out`: the scalar [`super::pass1_point`] per lane.
pub(super) fn pass1_lanes(
    g: &Grid,
    mat: &ElasticMaterial,
    r: &[Vec3],
    i0: usize,
    j: usize,
    out: &mut [QuadTerms],
) {
    debug_assert!(j + 1 < g.n && i0 + LANES <= g.m && out.len() == LANES);
    let zero = f32x8::ZERO;
    let one = f32x8::ONE;
    let tiny = f32x8::splat(TINY);
    let k = |l: usize| g.idx(i0 + l, j);
    let kr = |l: usize| g.idx(g.right(i0 + l), j);
    let pm = |l: usize| &mat.points[k(l)];
    let x = V8::gather(|l| r[k(l)]);
    let xr = V8::gather(|l| r[kr(l)]);
    let xu = V8::gather(|l| r[g.idx(i0 + l, j + 1)]);
    let a = xr.sub(x);
    let b = xu.sub(x);
    let (la, lb) = (a.dot(a).sqrt(), b.dot(b).sqrt());
    let (has_a, has_b) = (la.cmp_gt(tiny), lb.cmp_gt(tiny));
    let ua = a.scale(one / la.max(tiny)).keep(has_a);
    let ub = b.scale(one / lb.max(tiny)).keep(has_b);
    let (inv_l1, inv_l2) = (gather(|l| pm(l).inv_l1), gather(|l| pm(l).inv_l2));
    let (k11, k22, k12) = (
        gather(|l| pm(l).k11),
        gather(|l| pm(l).k22),
        gather(|l| pm(l).k12),
    );
    let mut ca = ua.scale(k11 * (la * inv_l1 - one) * inv_l1);
    let mut cb = ub.scale(k22 * (lb * inv_l2 - one) * inv_l2);
    // Shear: the cosine of the angle between the grid lines.
    let both = has_a & has_b;
    let c = ua.dot(ub);
    let s12 = f32x8::splat(2.0) * k12 * (c - gather(|l| pm(l).cos0));
    let (sla, slb) = (s12 / la.max(tiny), s12 / lb.max(tiny));
    ca = ca.add(ub.sub(ua.scale(c)).scale(sla).keep(both));
    cb = cb.add(ua.sub(ub.scale(c)).scale(slb).keep(both));
    let mut t = [QuadTerms::default(); LANES];
    if mat.bending {
        let xru = V8::gather(|l| r[g.idx(g.right(i0 + l), j + 1)]);
        let d1 = xru.sub(x);
        let d2 = xu.sub(xr);
        let cv = d1.cross(d2);
        let clen = cv.dot(cv).sqrt();
        let quad = clen.cmp_gt(tiny);
        let safe = clen.max(tiny);
        let normal = cv.scale(one / safe).keep(quad);
        let inv_c = quad.blend(one / safe, zero);
        let fade_x = quad.blend(
            clen / (f32x8::splat(super::FADE) * d1.dot(d1).sqrt() * d2.dot(d2).sqrt()),
            zero,
        );
        // s(x) = 3x² − 2x³ of x clamped to [0, 1], and ds/dx.
        let xc = fade_x.max(zero).min(one);
        let fade = xc * xc * (f32x8::splat(3.0) - f32x8::splat(2.0) * xc);
        let dfade = f32x8::splat(6.0) * xc * (one - xc);
        let none = V8 {
            x: zero,
            y: zero,
            z: zero,
        };
        let (mut g_twist, mut c_twist, mut tt) = (none, zero, none);
        let kb_t = gather(|l| pm(l).kb_t);
        let s = (la * lb).sqrt();
        if g.bends(j) {
            let twists = kb_t.cmp_gt(zero) & s.cmp_gt(tiny) & fade.cmp_gt(zero) & quad;
            if twists.any() {
                let s = s.max(tiny);
                let w = x.sub(xr).add(xru).sub(xu);
                let tau = normal.dot(w) / s;
                let dev = tau - gather(|l| pm(l).tau);
                // E = kb_t·s_fade·(τ − τ⁰)².
                let de = f32x8::splat(2.0) * kb_t * fade * dev;
                g_twist = w.scale(de / s).keep(twists);
                c_twist = twists.blend(kb_t * dev * dev * dfade, zero);
                tt = normal.scale(de / s).keep(twists);
                // τ ∝ (|a||b|)^(−1/2): ∂τ/∂a = −τ/(2|a|)·â.
                let half = f32x8::splat(0.5) * de * tau;
                ca = ca.sub(ua.scale(half / la.max(tiny)).keep(twists));
                cb = cb.sub(ub.scale(half / lb.max(tiny)).keep(twists));
            }
        }
        for (l, q) in t.iter_mut().enumerate() {
            q.normal = normal.lane(l);
            q.inv_c = inv_c.as_array_ref()[l];
            q.fade_x = fade_x.as_array_ref()[l];
            q.fade = quad.blend(fade, zero).as_array_ref()[l];
            q.dfade = quad.blend(dfade, zero).as_array_ref()[l];
            q.g_twist = g_twist.lane(l);
            q.c_twist = c_twist.as_array_ref()[l];
            q.t = tt.lane(l);
        }
    }
    for (l, (q, o)) in t.iter_mut().zip(out.iter_mut()).enumerate() {
        q.ca = ca.lane(l);
        q.cb = cb.lane(l);
        *o = *q;
    }
}
