//! The elastic force passes 1 and 2 eight points at a time.
//!
//! The scalar hinge (the elastic module's pass 2) was the costliest part of a
//! skin step (a fifth of it on the 64×64 penguin, measured with perf), and
//! the membrane-and-normal pass (pass 1) the next: square
//! roots, divisions and a dozen cross and dot products per point, each a
//! long dependency chain. Here eight neighbouring points of a row are
//! gathered into lanes, computed branch-free (every case the scalar code
//! skips is a lane mask), and scattered back. The arithmetic is the scalar
//! code's, so both give the same terms up to rounding; a test holds them to
//! that. Pass 3 stays scalar: it does little arithmetic on many gathered
//! terms, and in lanes it measured slower.

use glam::Vec3;
use wide::{CmpGt, CmpNe, f32x8};

/// Points per lane group.
pub(super) const LANES: usize = 8;

/// Eight 3-vectors, one per lane.
#[derive(Clone, Copy)]
pub(super) struct V8 {
    pub(super) x: f32x8,
    pub(super) y: f32x8,
    pub(super) z: f32x8,
}

impl V8 {
    #[inline(always)]
    pub(super) fn lane(self, l: usize) -> Vec3 {
        Vec3::new(
            self.x.as_array_ref()[l],
            self.y.as_array_ref()[l],
            self.z.as_array_ref()[l],
        )
    }

    #[inline(always)]
    pub(super) fn add(self, o: Self) -> Self {
        Self {
            x: self.x + o.x,
            y: self.y + o.y,
            z: self.z + o.z,
        }
    }

    #[inline(always)]
    pub(super) fn sub(self, o: Self) -> Self {
        Self {
            x: self.x - o.x,
            y: self.y - o.y,
            z: self.z - o.z,
        }
    }

    #[inline(always)]
    pub(super) fn scale(self, s: f32x8) -> Self {
        Self {
            x: self.x * s,
            y: self.y * s,
            z: self.z * s,
        }
    }

    #[inline(always)]
    pub(super) fn dot(self, o: Self) -> f32x8 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    #[inline(always)]
    pub(super) fn cross(self, o: Self) -> Self {
        Self {
            x: self.y * o.z - self.z * o.y,
            y: self.z * o.x - self.x * o.z,
            z: self.x * o.y - self.y * o.x,
        }
    }

    /// Lanes where `mask` is set keep their value; the others become zero.
    #[inline(always)]
    pub(super) fn keep(self, mask: f32x8) -> Self {
        let zero = f32x8::ZERO;
        Self {
            x: mask.blend(self.x, zero),
            y: mask.blend(self.y, zero),
            z: mask.blend(self.z, zero),
        }
    }
}

/// What one hinge gives each lane: ∂E/∂a, ∂E/∂b, ∂E/∂e, and ∂E/∂x through
/// the fades of quads a and b.
pub(super) struct Hinge8 {
    pub(super) ga: V8,
    pub(super) gb: V8,
    pub(super) ge: V8,
    pub(super) ca: f32x8,
    pub(super) cb: f32x8,
}

/// One side of eight hinges: the quads' unit normals (zero for a
/// degenerate quad), fades s and ds/dx.
#[derive(Clone, Copy)]
pub(super) struct Side8 {
    pub(super) normal: V8,
    pub(super) fade: f32x8,
    pub(super) dfade: f32x8,
}

/// Eight hinges between quads `qa` and `qb` (normals a → b) about edges `e`,
/// stiffness `kb`, rest angle (cos, sin) = (`rc`, `rs`), with `tiny` the
/// length below which an edge or quad carries no direction: the scalar
/// hinge of the elastic module's pass 2, per lane.
#[inline(always)]
pub(super) fn hinge8(
    qa: Side8,
    qb: Side8,
    e: V8,
    kb: f32x8,
    (rc, rs): (f32x8, f32x8),
    tiny: f32,
) -> Hinge8 {
    let (a, b) = (qa.normal, qb.normal);
    let (fa, dfa) = (qa.fade, qa.dfade);
    let (fb, dfb) = (qb.fade, qb.dfade);
    let zero = f32x8::ZERO;
    let tiny = f32x8::splat(tiny);
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

/// The material pass 1 reads, per lane (see the elastic module's
/// `PointMaterial`).
pub(super) struct Material8 {
    pub(super) inv_l1: f32x8,
    pub(super) inv_l2: f32x8,
    pub(super) cos0: f32x8,
    pub(super) k11: f32x8,
    pub(super) k22: f32x8,
    pub(super) k12: f32x8,
    pub(super) kb_t: f32x8,
    pub(super) tau: f32x8,
}

/// Pass 1's terms for eight points: the membrane's ∂E/∂a, ∂E/∂b, and,
/// with bending, the quad's normal, 1/|d1×d2|, fade and twist terms.
pub(super) struct Quad8 {
    pub(super) ca: V8,
    pub(super) cb: V8,
    pub(super) normal: V8,
    pub(super) inv_c: f32x8,
    pub(super) fade_x: f32x8,
    pub(super) fade: f32x8,
    pub(super) dfade: f32x8,
    pub(super) g_twist: V8,
    pub(super) c_twist: f32x8,
    pub(super) t: V8,
    /// The quad's stretch² as the step limit counts it (see
    /// `min_stretch`).
    pub(super) stretch2: f32x8,
}

/// Pass 1 for eight points at `x` with right, up and up-right neighbours
/// `xr`, `xu`, `xru`: the scalar pass 1 of the elastic module per lane.
/// `bending`: the skin bends at all; `twists`: this row carries the twist
/// term; `tiny`, `fade_at` and `shear_fade` as the scalar code's `TINY`,
/// `FADE` and `SHEAR_FADE`.
/// The scalar code's `fade` in lanes: s(x) = 3x² − 2x³ of x clamped to
/// [0, 1], and ds/dx.
#[inline(always)]
fn fade8(x: f32x8) -> (f32x8, f32x8) {
    let xc = x.max(f32x8::ZERO).min(f32x8::ONE);
    (
        xc * xc * (f32x8::splat(3.0) - f32x8::splat(2.0) * xc),
        f32x8::splat(6.0) * xc * (f32x8::ONE - xc),
    )
}

#[inline(always)]
pub(super) fn quad8(
    [x, xr, xu, xru]: [V8; 4],
    pm: &Material8,
    bending: bool,
    twists: bool,
    (tiny, fade_at, shear_fade): (f32, f32, f32),
) -> Quad8 {
    let zero = f32x8::ZERO;
    let one = f32x8::ONE;
    let tiny = f32x8::splat(tiny);
    let none = V8 {
        x: zero,
        y: zero,
        z: zero,
    };
    let a = xr.sub(x);
    let b = xu.sub(x);
    let (la, lb) = (a.dot(a).sqrt(), b.dot(b).sqrt());
    let (has_a, has_b) = (la.cmp_gt(tiny), lb.cmp_gt(tiny));
    let ua = a.scale(one / la.max(tiny)).keep(has_a);
    let ub = b.scale(one / lb.max(tiny)).keep(has_b);
    let mut ca = ua.scale(pm.k11 * (la * pm.inv_l1 - one) * pm.inv_l1);
    let mut cb = ub.scale(pm.k22 * (lb * pm.inv_l2 - one) * pm.inv_l2);
    // Shear: the cosine of the angle between the grid lines.
    let both = has_a & has_b;
    let c = ua.dot(ub);
    let sigma = c - pm.cos0;
    let inv_fade = f32x8::splat(1.0 / shear_fade);
    let (wa, dwa) = fade8(la * pm.inv_l1 * inv_fade);
    let (wb, dwb) = fade8(lb * pm.inv_l2 * inv_fade);
    let s12 = f32x8::splat(2.0) * pm.k12 * wa * wb * sigma;
    let e12 = pm.k12 * sigma * sigma * inv_fade;
    let (sla, slb) = (s12 / la.max(tiny), s12 / lb.max(tiny));
    ca = ca.add(
        ub.sub(ua.scale(c))
            .scale(sla)
            .add(ua.scale(e12 * dwa * wb * pm.inv_l1))
            .keep(both),
    );
    cb = cb.add(
        ua.sub(ub.scale(c))
            .scale(slb)
            .add(ub.scale(e12 * wa * dwb * pm.inv_l2))
            .keep(both),
    );
    // The step limit's stretch (the elastic module's `counted_stretch2`).
    let (sa, sb) = (la * pm.inv_l1, lb * pm.inv_l2);
    let (sa2, sb2) = (sa * sa, sb * sb);
    let floor = f32x8::splat(shear_fade * shear_fade);
    let slivers = floor.cmp_gt(sa2) & floor.cmp_gt(sb2);
    let stretch2 = slivers.blend(sa2.max(sb2), sa2.max(floor).min(sb2.max(floor)));
    let mut out = Quad8 {
        stretch2,
        ca,
        cb,
        normal: none,
        inv_c: zero,
        fade_x: zero,
        fade: zero,
        dfade: zero,
        g_twist: none,
        c_twist: zero,
        t: none,
    };
    if !bending {
        return out;
    }
    let d1 = xru.sub(x);
    let d2 = xu.sub(xr);
    let cv = d1.cross(d2);
    let clen = cv.dot(cv).sqrt();
    let quad = clen.cmp_gt(tiny);
    let safe = clen.max(tiny);
    let normal = cv.scale(one / safe).keep(quad);
    out.normal = normal;
    out.inv_c = quad.blend(one / safe, zero);
    out.fade_x = quad.blend(
        clen / (f32x8::splat(fade_at) * d1.dot(d1).sqrt() * d2.dot(d2).sqrt()),
        zero,
    );
    let (fade, dfade) = fade8(out.fade_x);
    let (fade, dfade) = (quad.blend(fade, zero), quad.blend(dfade, zero));
    out.fade = fade;
    out.dfade = dfade;
    let s = (la * lb).sqrt();
    let twisting = pm.kb_t.cmp_gt(zero) & s.cmp_gt(tiny) & fade.cmp_gt(zero) & quad;
    if twists && twisting.any() {
        let s = s.max(tiny);
        let w = x.sub(xr).add(xru).sub(xu);
        let tau = normal.dot(w) / s;
        let dev = tau - pm.tau;
        // E = kb_t·s_fade·(τ − τ⁰)².
        let de = f32x8::splat(2.0) * pm.kb_t * fade * dev;
        out.g_twist = w.scale(de / s).keep(twisting);
        out.c_twist = twisting.blend(pm.kb_t * dev * dev * dfade, zero);
        out.t = normal.scale(de / s).keep(twisting);
        // τ ∝ (|a||b|)^(−1/2): ∂τ/∂a = −τ/(2|a|)·â.
        let half = f32x8::splat(0.5) * de * tau;
        out.ca = out.ca.sub(ua.scale(half / la.max(tiny)).keep(twisting));
        out.cb = out.cb.sub(ub.scale(half / lb.max(tiny)).keep(twisting));
    }
    out
}
