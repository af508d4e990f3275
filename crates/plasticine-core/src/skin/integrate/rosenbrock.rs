//! Fourth-order adaptive Rosenbrock method (Kaps–Rentrop form with Shampine's
//! parameters, Numerical Recipes `stiff`) on y = (r, v), for stiff settings
//! (LEMAN §4.2.1). The Jacobian is applied matrix-free by finite differences
//! and each stage's linear system (I − γhJ) g = γh·rhs is solved by `BiCGSTAB`.

use super::krylov::{FD_STEP, bicgstab, max_abs};
use super::{
    EvalCount, Integrator, IntegratorKind, IntegratorState, SecondOrderSystem, StepOutcome,
    Tolerances, next_step, scaled_error,
};
use glam::Vec3;

const GAM: f64 = 0.5;
const A21: f64 = 2.0;
const A31: f64 = 48.0 / 25.0;
const A32: f64 = 6.0 / 25.0;
const C21: f64 = -8.0;
const C31: f64 = 372.0 / 25.0;
const C32: f64 = 12.0 / 5.0;
const C41: f64 = -112.0 / 125.0;
const C42: f64 = -54.0 / 125.0;
const C43: f64 = -2.0 / 5.0;
const B: [f64; 4] = [19.0 / 9.0, 0.5, 25.0 / 108.0, 125.0 / 108.0];
const E: [f64; 4] = [17.0 / 54.0, 7.0 / 36.0, 0.0, 125.0 / 108.0];
const CX: [f64; 4] = [0.5, -1.5, 121.0 / 50.0, 29.0 / 250.0];
const A2X: f64 = 1.0;
const A3X: f64 = 3.0 / 5.0;

/// Fourth-order adaptive Rosenbrock integrator for stiff skins, solving stages by `BiCGSTAB`.
#[derive(Default)]
pub struct Rosenbrock4 {
    evals: EvalCount,
    /// `BiCGSTAB` iterations spent in all steps so far.
    pub solver_iterations: u64,
}

/// First-order state (positions, velocities).
#[derive(Clone)]
struct Y {
    r: Vec<Vec3>,
    v: Vec<Vec3>,
}

impl Y {
    fn zeros(n: usize) -> Self {
        Self {
            r: vec![Vec3::ZERO; n],
            v: vec![Vec3::ZERO; n],
        }
    }
}

/// Evaluates F(t, y) = (v, a) after prescribing the kinematic points of `y`,
/// counting one evaluation in `evals`.
fn eval_f(sys: &mut dyn SecondOrderSystem, t: f64, y: &mut Y, evals: &mut u64) -> Y {
    let n = y.r.len();
    sys.prescribe(t, &mut y.r, &mut y.v);
    let mut out = Y {
        r: y.v.clone(),
        v: vec![Vec3::ZERO; n],
    };
    sys.acceleration(t, &y.r, &y.v, &mut out.v);
    *evals += 1;
    out
}

/// `base` (or zero) plus the sum of `c · y` over `terms`, on `n` points.
fn combine(n: usize, terms: &[(&Y, f64)], base: Option<&Y>) -> Y {
    let mut out = base.cloned().unwrap_or_else(|| Y::zeros(n));
    for (y, c) in terms {
        let c = *c as f32;
        for k in 0..n {
            out.r[k] += c * y.r[k];
            out.v[k] += c * y.v[k];
        }
    }
    out
}

/// What a step's stage solves share: the state and derivative at the start
/// of the step, the kinematic points, and the `BiCGSTAB` iterations spent.
struct StageSolver<'a> {
    kinematic: &'a [bool],
    y0: &'a Y,
    f0: &'a Y,
    t: f64,
    /// γh.
    gh: f32,
    /// Finite-difference perturbation size.
    scale: f32,
    iterations: u64,
}

impl StageSolver<'_> {
    /// Solves (I − γhJ) g = γh·rhs with J x = (`x_v`, ∂a/∂r `x_r` + ∂a/∂v `x_v`),
    /// the Jacobian applied by finite differences about `y0`.
    fn solve(&mut self, sys: &mut dyn SecondOrderSystem, rhs: &Y, evals: &mut u64) -> Y {
        let Self {
            kinematic,
            y0,
            f0,
            t,
            gh,
            scale,
            ..
        } = *self;
        let n = kinematic.len();
        let mut b: Vec<Vec3> = rhs.r.iter().chain(&rhs.v).map(|x| gh * *x).collect();
        for k in 0..n {
            if kinematic[k] {
                b[k] = Vec3::ZERO;
                b[n + k] = Vec3::ZERO;
            }
        }
        let mut x = b.clone();
        let mut rp = vec![Vec3::ZERO; n];
        let mut vp = vec![Vec3::ZERO; n];
        let mut ap = vec![Vec3::ZERO; n];
        let apply = |x: &[Vec3], out: &mut [Vec3]| {
            let (xr, xv) = x.split_at(n);
            let xmax = max_abs(xr).max(max_abs(xv) * gh);
            if xmax > 0.0 {
                let eps = scale / xmax;
                for k in 0..n {
                    rp[k] = y0.r[k] + eps * xr[k];
                    vp[k] = y0.v[k] + eps * xv[k];
                }
                sys.acceleration(t, &rp, &vp, &mut ap);
                *evals += 1;
                for k in 0..n {
                    ap[k] = (ap[k] - f0.v[k]) / eps;
                }
            } else {
                ap.fill(Vec3::ZERO);
            }
            for k in 0..n {
                if kinematic[k] {
                    out[k] = xr[k];
                    out[n + k] = xv[k];
                } else {
                    out[k] = xr[k] - gh * xv[k];
                    out[n + k] = xv[k] - gh * ap[k];
                }
            }
        };
        let (it, _) = bicgstab(apply, &b, &mut x, 1e-6, 300);
        self.iterations += it as u64;
        let (xr, xv) = x.split_at(n);
        Y {
            r: xr.to_vec(),
            v: xv.to_vec(),
        }
    }
}

impl Integrator for Rosenbrock4 {
    fn kind(&self) -> IntegratorKind {
        IntegratorKind::Rosenbrock
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
        tol: &Tolerances,
    ) -> StepOutcome {
        let n = r.len();
        let kinematic: Vec<bool> = (0..n).map(|k| sys.is_kinematic(k)).collect();
        let mut evals = 0u64;
        let mut y0 = Y {
            r: r.to_vec(),
            v: v.to_vec(),
        };
        let f0 = eval_f(sys, t, &mut y0, &mut evals);
        // ∂F/∂t by a forward difference (only the moving joints make F time-dependent).
        let dt = (h * 1e-3).max(1e-7);
        let mut yt = y0.clone();
        let ft = eval_f(sys, t + dt, &mut yt, &mut evals);
        let dfdt: Vec<Vec3> = (0..n).map(|k| (ft.v[k] - f0.v[k]) / dt as f32).collect();
        let mut stages = StageSolver {
            kinematic: &kinematic,
            y0: &y0,
            f0: &f0,
            t,
            gh: (GAM * h) as f32,
            scale: max_abs(r).max(1.0) * FD_STEP,
            iterations: 0,
        };
        let comb = |terms: &[(&Y, f64)], base: Option<&Y>| -> Y { combine(n, terms, base) };
        let dfdt_y = Y {
            r: vec![Vec3::ZERO; n],
            v: dfdt,
        };
        let g1 = stages.solve(
            sys,
            &comb(&[(&f0, 1.0), (&dfdt_y, h * CX[0])], None),
            &mut evals,
        );
        let mut y2 = comb(&[(&g1, A21)], Some(&y0));
        let f2 = eval_f(sys, t + A2X * h, &mut y2, &mut evals);
        let g2 = stages.solve(
            sys,
            &comb(&[(&f2, 1.0), (&g1, C21 / h), (&dfdt_y, h * CX[1])], None),
            &mut evals,
        );
        let mut y3 = comb(&[(&g1, A31), (&g2, A32)], Some(&y0));
        let f3 = eval_f(sys, t + A3X * h, &mut y3, &mut evals);
        let g3 = stages.solve(
            sys,
            &comb(
                &[
                    (&f3, 1.0),
                    (&g1, C31 / h),
                    (&g2, C32 / h),
                    (&dfdt_y, h * CX[2]),
                ],
                None,
            ),
            &mut evals,
        );
        let g4 = stages.solve(
            sys,
            &comb(
                &[
                    (&f3, 1.0),
                    (&g1, C41 / h),
                    (&g2, C42 / h),
                    (&g3, C43 / h),
                    (&dfdt_y, h * CX[3]),
                ],
                None,
            ),
            &mut evals,
        );
        let gs = [&g1, &g2, &g3, &g4];
        let err = comb(
            &[(gs[0], E[0]), (gs[1], E[1]), (gs[2], E[2]), (gs[3], E[3])],
            None,
        );
        let zero = vec![Vec3::ZERO; n];
        let dr = scaled_error(sys, &err.r, &zero, r, tol.position_threshold) / tol.position as f64;
        let dv = scaled_error(sys, &err.v, &zero, v, tol.velocity_threshold) / tol.velocity as f64;
        let ratio = dr.max(dv);
        self.evals.full += evals;
        self.solver_iterations += stages.iterations;
        let accepted = ratio <= 1.0 || h <= tol.min_step;
        if accepted {
            let ynew = comb(
                &[(gs[0], B[0]), (gs[1], B[1]), (gs[2], B[2]), (gs[3], B[3])],
                Some(&y0),
            );
            r.copy_from_slice(&ynew.r);
            v.copy_from_slice(&ynew.v);
            sys.prescribe(t + h, r, v);
        }
        let next = next_step(h, ratio, 4.0, tol)
            .min(1.5 * h)
            .max(0.5 * h.min(tol.max_step));
        StepOutcome {
            accepted,
            error_ratio: ratio,
            next_h: next.clamp(tol.min_step, tol.max_step),
        }
    }
}
