//! Adaptive explicit Runge–Kutta methods on the first-order form y = (r, v),
//! y' = (v, a(r, v, t)): Heun's RK2 with embedded Euler, and the Cash–Karp
//! embedded 4(5) pair (Numerical Recipes, which LEMAN cites as ref. 40).

use super::{
    EvalCount, Integrator, IntegratorKind, IntegratorState, SecondOrderSystem, StepOutcome,
    Tolerances, next_step, scaled_error,
};
use glam::Vec3;

/// Stage derivative: prescribes the kinematic points at the stage time, then
/// dr = v, dv = a.
fn derivative(
    sys: &mut dyn SecondOrderSystem,
    t: f64,
    r: &mut [Vec3],
    v: &mut [Vec3],
    dr: &mut [Vec3],
    dv: &mut [Vec3],
) {
    sys.prescribe(t, r, v);
    dr.copy_from_slice(v);
    sys.acceleration(t, r, v, dv);
}

/// Scaled error ratio of an error vector (er, ev) against both tolerances.
fn error_ratio(
    sys: &dyn SecondOrderSystem,
    er: &[Vec3],
    ev: &[Vec3],
    r: &[Vec3],
    v: &[Vec3],
    zero: &[Vec3],
    tol: &Tolerances,
) -> f64 {
    let dr = scaled_error(sys, er, zero, r, tol.position_threshold) / tol.position as f64;
    let dv = scaled_error(sys, ev, zero, v, tol.velocity_threshold) / tol.velocity as f64;
    dr.max(dv)
}

/// Heun's second-order method; the first stage alone is explicit Euler, whose
/// difference from Heun's result estimates the error (exponent 1/2).
#[derive(Default)]
pub struct AdaptiveRk2 {
    bufs: [Vec<Vec3>; 7],
    evals: EvalCount,
}

impl Integrator for AdaptiveRk2 {
    fn kind(&self) -> IntegratorKind {
        IntegratorKind::Rk2
    }

    fn state(&self) -> IntegratorState {
        IntegratorState {
            evals: self.evals,
            solver_iterations: 0,
        }
    }

    fn restore(&mut self, state: &IntegratorState) {
        self.evals = state.evals;
    }

    fn evals(&self) -> EvalCount {
        self.evals
    }

    fn step(
        &mut self,
        sys: &mut dyn SecondOrderSystem,
        t: f64,
        h: f64,
        r: &mut [Vec3],
        v: &mut [Vec3],
        tol: &Tolerances,
    ) -> StepOutcome {
        let n = r.len();
        for b in &mut self.bufs {
            b.resize(n, Vec3::ZERO);
        }
        let [dr1, dv1, r1, v1, dr2, dv2, zero] = &mut self.bufs;
        zero.fill(Vec3::ZERO);
        let hf = h as f32;
        let (mut r0, mut v0) = (r.to_vec(), v.to_vec());
        derivative(sys, t, &mut r0, &mut v0, dr1, dv1);
        for k in 0..n {
            r1[k] = r0[k] + hf * dr1[k];
            v1[k] = v0[k] + hf * dv1[k];
        }
        derivative(sys, t + h, r1, v1, dr2, dv2);
        self.evals.full += 2;
        // Error = Heun − Euler = h/2 (k2 − k1).
        for k in 0..n {
            dr2[k] = 0.5 * hf * (dr2[k] - dr1[k]);
            dv2[k] = 0.5 * hf * (dv2[k] - dv1[k]);
        }
        let ratio = error_ratio(sys, dr2, dv2, r, v, zero, tol);
        let accepted = ratio <= 1.0 || h <= tol.min_step;
        if accepted {
            for k in 0..n {
                r[k] = r1[k] + dr2[k];
                v[k] = v1[k] + dv2[k];
            }
            sys.prescribe(t + h, r, v);
        }
        StepOutcome {
            accepted,
            error_ratio: ratio,
            next_h: next_step(h, ratio, 2.0, tol),
        }
    }
}

/// Cash–Karp Runge–Kutta 4(5): six stages, fourth-order solution with an
/// embedded fifth-order one for the error.
#[derive(Default)]
pub struct AdaptiveRk4 {
    kr: [Vec<Vec3>; 6],
    kv: [Vec<Vec3>; 6],
    rs: Vec<Vec3>,
    vs: Vec<Vec3>,
    zero: Vec<Vec3>,
    evals: EvalCount,
}

const CK_A: [[f64; 5]; 6] = [
    [0.0; 5],
    [1.0 / 5.0, 0.0, 0.0, 0.0, 0.0],
    [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0],
    [3.0 / 10.0, -9.0 / 10.0, 6.0 / 5.0, 0.0, 0.0],
    [-11.0 / 54.0, 5.0 / 2.0, -70.0 / 27.0, 35.0 / 27.0, 0.0],
    [
        1631.0 / 55296.0,
        175.0 / 512.0,
        575.0 / 13824.0,
        44275.0 / 110592.0,
        253.0 / 4096.0,
    ],
];
const CK_C: [f64; 6] = [0.0, 1.0 / 5.0, 3.0 / 10.0, 3.0 / 5.0, 1.0, 7.0 / 8.0];
/// Fourth-order weights (the solution we keep).
const CK_B4: [f64; 6] = [
    2825.0 / 27648.0,
    0.0,
    18575.0 / 48384.0,
    13525.0 / 55296.0,
    277.0 / 14336.0,
    1.0 / 4.0,
];
/// Fifth-order weights (for the error estimate).
const CK_B5: [f64; 6] = [
    37.0 / 378.0,
    0.0,
    250.0 / 621.0,
    125.0 / 594.0,
    0.0,
    512.0 / 1771.0,
];

impl Integrator for AdaptiveRk4 {
    fn kind(&self) -> IntegratorKind {
        IntegratorKind::Rk4
    }

    fn state(&self) -> IntegratorState {
        IntegratorState {
            evals: self.evals,
            solver_iterations: 0,
        }
    }

    fn restore(&mut self, state: &IntegratorState) {
        self.evals = state.evals;
    }

    fn evals(&self) -> EvalCount {
        self.evals
    }

    fn step(
        &mut self,
        sys: &mut dyn SecondOrderSystem,
        t: f64,
        h: f64,
        r: &mut [Vec3],
        v: &mut [Vec3],
        tol: &Tolerances,
    ) -> StepOutcome {
        let n = r.len();
        for b in self.kr.iter_mut().chain(self.kv.iter_mut()) {
            b.resize(n, Vec3::ZERO);
        }
        self.rs.resize(n, Vec3::ZERO);
        self.vs.resize(n, Vec3::ZERO);
        self.zero.clear();
        self.zero.resize(n, Vec3::ZERO);
        for s in 0..6 {
            self.rs.copy_from_slice(r);
            self.vs.copy_from_slice(v);
            for (p, &a) in CK_A[s].iter().enumerate().take(s) {
                let c = (h * a) as f32;
                for k in 0..n {
                    self.rs[k] += c * self.kr[p][k];
                    self.vs[k] += c * self.kv[p][k];
                }
            }
            let (kr, kv) = (&mut self.kr[s], &mut self.kv[s]);
            derivative(sys, t + CK_C[s] * h, &mut self.rs, &mut self.vs, kr, kv);
        }
        self.evals.full += 6;
        // Error = y5 − y4; keep it in rs/vs.
        for k in 0..n {
            let (mut er, mut ev) = (Vec3::ZERO, Vec3::ZERO);
            for s in 0..6 {
                let c = (h * (CK_B5[s] - CK_B4[s])) as f32;
                er += c * self.kr[s][k];
                ev += c * self.kv[s][k];
            }
            self.rs[k] = er;
            self.vs[k] = ev;
        }
        let ratio = error_ratio(sys, &self.rs, &self.vs, r, v, &self.zero, tol);
        let accepted = ratio <= 1.0 || h <= tol.min_step;
        if accepted {
            for k in 0..n {
                let (mut dr, mut dv) = (Vec3::ZERO, Vec3::ZERO);
                for s in 0..6 {
                    let c = (h * CK_B4[s]) as f32;
                    dr += c * self.kr[s][k];
                    dv += c * self.kv[s][k];
                }
                r[k] += dr;
                v[k] += dv;
            }
            sys.prescribe(t + h, r, v);
        }
        StepOutcome {
            accepted,
            error_ratio: ratio,
            next_h: next_step(h, ratio, 5.0, tol),
        }
    }
}
