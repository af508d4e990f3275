//! Explicit Euler with a fixed step: first order, the baseline of LEMAN Table 1.

use super::{
    EvalCount, Integrator, IntegratorKind, IntegratorState, SecondOrderSystem, StepOutcome,
    Tolerances,
};
use glam::Vec3;

/// The explicit Euler integrator: one acceleration per step, with a fixed step size.
#[derive(Default)]
pub struct ExplicitEuler {
    a: Vec<Vec3>,
    evals: EvalCount,
}

impl Integrator for ExplicitEuler {
    fn kind(&self) -> IntegratorKind {
        IntegratorKind::Euler
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
        _tol: &Tolerances,
    ) -> StepOutcome {
        self.a.resize(r.len(), Vec3::ZERO);
        sys.acceleration(t, r, v, &mut self.a);
        self.evals.full += 1;
        let hf = h as f32;
        for k in 0..r.len() {
            r[k] += hf * v[k];
            v[k] += hf * self.a[k];
        }
        sys.prescribe(t + h, r, v);
        StepOutcome {
            accepted: true,
            error_ratio: 0.0,
            next_h: h,
        }
    }
}
