//! The elastic force as four scalar passes over the whole grid, point by
//! point (the module's "Evaluation"): the plain statement of the force the
//! fused lanes compute, and the oracle they are tested against.

use super::{ElasticMaterial, FADE, Grid, SHEAR_FADE, TINY, counted_stretch2, fade};
use glam::Vec3;

/// Per-point scratch of pass 1: the membrane's ∂E/∂a, ∂E/∂b, and quad k's
/// normal, 1/|d1×d2|, and twist terms.
#[derive(Clone, Copy, Default)]
pub(super) struct QuadTerms {
    pub(super) ca: Vec3,
    pub(super) cb: Vec3,
    pub(super) normal: Vec3,
    pub(super) inv_c: f32,
    /// The quad's fade measure x = |c|/(FADE·|d1||d2|), its fade s(x) and
    /// ds/dx (see [`FADE`]).
    pub(super) fade_x: f32,
    pub(super) fade: f32,
    pub(super) dfade: f32,
    /// ∂`E_twist/∂n`, ∂`E_twist/∂x` (through the fade), and the twist's direct
    /// corner term (∂E/∂w)·n/s.
    pub(super) g_twist: Vec3,
    pub(super) c_twist: f32,
    pub(super) t: Vec3,
    /// The quad's stretch² as the step limit counts it ([`counted_stretch2`]).
    pub(super) stretch2: f32,
}

/// Per-point scratch of pass 2: the hinges' gradients with respect to the
/// two quad normals, and with respect to the hinge edge.
#[derive(Clone, Copy, Default)]
pub(super) struct HingeTerms {
    /// Around hinge: left quad, right quad, edge (k → up).
    pub(super) ga_l: Vec3,
    pub(super) ga_r: Vec3,
    pub(super) ga_e: Vec3,
    /// Up hinge: upper quad, lower quad, edge (k → right).
    pub(super) gu_u: Vec3,
    pub(super) gu_d: Vec3,
    pub(super) gu_e: Vec3,
    /// ∂E/∂x of the left, right, upper and lower quads (through their fade).
    pub(super) ca_l: f32,
    pub(super) ca_r: f32,
    pub(super) cu_u: f32,
    pub(super) cu_d: f32,
}

/// Per-quad scratch of pass 3: ∂E/∂d1 and ∂E/∂d2 through the quad normal.
#[derive(Clone, Copy, Default)]
pub(super) struct DiagonalTerms {
    pub(super) p: Vec3,
    pub(super) q: Vec3,
}

/// Every point's terms of passes 1–3.
#[derive(Default)]
pub(super) struct Terms {
    pub(super) quads: Vec<QuadTerms>,
    pub(super) hinges: Vec<HingeTerms>,
    pub(super) diagonals: Vec<DiagonalTerms>,
}

impl Terms {
    /// Passes 1–3 at every point of `r`, one after the other.
    pub(super) fn of(g: &Grid, mat: &ElasticMaterial, r: &[Vec3]) -> Self {
        let p = g.points();
        let quads: Vec<QuadTerms> = (0..p)
            .map(|k| pass1_point(g, mat, r, k % g.m, k / g.m))
            .collect();
        let hinges: Vec<HingeTerms> = (0..p)
            .map(|k| pass2_point(g, mat, r, &quads, k % g.m, k / g.m))
            .collect();
        let diagonals = (0..p)
            .map(|k| pass3_quad(g, r, &quads, &hinges, k % g.m, k / g.m))
            .collect();
        Self {
            quads,
            hinges,
            diagonals,
        }
    }
}

/// The elastic force −∂E/∂r of the scalar passes (zero on the boundary
/// rows), and the least stretch they measured.
pub(super) fn forces(g: &Grid, mat: &ElasticMaterial, r: &[Vec3]) -> (Vec<Vec3>, f32) {
    let t = Terms::of(g, mat, r);
    let mut f = vec![Vec3::ZERO; g.points()];
    for j in 1..g.n - 1 {
        for i in 0..g.m {
            f[g.idx(i, j)] -= pass4_gradient(g, &t, mat.bending, i, j);
        }
    }
    let worst = t
        .quads
        .iter()
        .map(|q| q.stretch2)
        .fold(f32::INFINITY, f32::min);
    (f, worst.sqrt())
}

pub(super) fn pass1_point(
    g: &Grid,
    mat: &ElasticMaterial,
    r: &[Vec3],
    i: usize,
    j: usize,
) -> QuadTerms {
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

pub(super) fn pass2_point(
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

pub(super) fn pass3_quad(
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
pub(super) fn pass4_gradient(g: &Grid, s: &Terms, bending: bool, i: usize, j: usize) -> Vec3 {
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
