//! Linearized implicit Euler (one Newton step of backward Euler, as in
//! Baraff & Witkin 1998), fixed step, matrix-free.

use super::krylov::{FD_STEP, bicgstab, max_abs};
use super::{
    EvalCount, Integrator, IntegratorKind, IntegratorState, SecondOrderSystem, StepOutcome,
    Tolerances,
};
use glam::Vec3;

/// Solves (I − h ∂a/∂v − h² ∂a/∂r) Δv = h (a₀ + h ∂a/∂r v₀), then
/// v₁ = v₀ + Δv, r₁ = r₀ + h v₁. Stable for stiff springs at large steps, at
/// the price of artificial damping and a linear solve per step (§4.2.1).
#[derive(Default)]
pub struct LinearizedImplicitEuler {
    evals: EvalCount,
    /// Linear-solver iterations so far (for reports).
    pub solver_iterations: u64,
}

impl Integrator for LinearizedImplicitEuler {
    fn kind(&self) -> IntegratorKind {
        IntegratorKind::ImplicitEuler
    }

    fn state(&self) -> IntegratorState {
        IntegratorState {
            evals: self.evals,
            solver_iterations: self.solver_iterations,
        }
    }

    fn restore(&mut self, state: &IntegratorState) {
        self.evals = state.evals;
        self.solver_iterations = state.solver_iterations;
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
        _tol: &Tolerances,
    ) -> StepOutcome {
        let n = r.len();
        let hf = h as f32;
        let mut a0 = vec![Vec3::ZERO; n];
        sys.acceleration(t, r, v, &mut a0);
        let mut rp = vec![Vec3::ZERO; n];
        let mut vp = vec![Vec3::ZERO; n];
        let mut ap = vec![Vec3::ZERO; n];
        let scale = max_abs(r).max(1.0) * FD_STEP;
        // Right-hand side: h a0 + h² J_r v0, with J_r v0 by a directional difference.
        let vmax = max_abs(v);
        let mut b = vec![Vec3::ZERO; n];
        if vmax > 0.0 {
            let eps = scale / vmax;
            for k in 0..n {
                rp[k] = r[k] + eps * v[k];
            }
            sys.acceleration(t, &rp, v, &mut ap);
            for k in 0..n {
                b[k] = hf * a0[k] + hf * hf * (ap[k] - a0[k]) / eps;
            }
        } else {
            for k in 0..n {
                b[k] = hf * a0[k];
            }
        }
        let kinematic: Vec<bool> = (0..n).map(|k| sys.is_kinematic(k)).collect();
        for k in 0..n {
            if kinematic[k] {
                b[k] = Vec3::ZERO;
            }
        }
        let mut evals = 2u64;
        let mut dv = vec![Vec3::ZERO; n];
        let apply = |x: &[Vec3], y: &mut [Vec3]| {
            let xmax = max_abs(x);
            if xmax == 0.0 {
                y.fill(Vec3::ZERO);
                return;
            }
            // Perturb positions by h² x and velocities by h x together.
            let eps = scale / (xmax * hf * hf).max(1e-30);
            for k in 0..n {
                let xk = if kinematic[k] { Vec3::ZERO } else { x[k] };
                rp[k] = r[k] + eps * hf * hf * xk;
                vp[k] = v[k] + eps * hf * xk;
            }
            sys.acceleration(t, &rp, &vp, &mut ap);
            evals += 1;
            for k in 0..n {
                y[k] = if kinematic[k] {
                    x[k]
                } else {
                    x[k] - (ap[k] - a0[k]) / eps
                };
            }
        };
        let (iters, _res) = bicgstab(apply, &b, &mut dv, 1e-5, 200);
        self.solver_iterations += iters as u64;
        self.evals.full += evals;
        for k in 0..n {
            v[k] += dv[k];
            r[k] += hf * v[k];
        }
        sys.prescribe(t + h, r, v);
        StepOutcome {
            accepted: true,
            error_ratio: 0.0,
            next_h: h,
        }
    }
}
