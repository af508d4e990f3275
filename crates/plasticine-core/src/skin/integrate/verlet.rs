//! The adaptive Verlet leapfrog of LEMAN §4.2.1–4.2.2, eq. (10)–(15).

use super::{
    EvalCount, Integrator, IntegratorKind, IntegratorState, SecondOrderSystem, StepOutcome,
    Tolerances, next_step, scaled_error,
};
use glam::Vec3;

/// Second-order Verlet leapfrog, modified for velocity-dependent forces by a
/// fixed-point iteration on the end velocity (eq. 10c–10g), with the embedded
/// explicit-Euler position as error estimate (eq. 12–14) and h₁ = h(D/ε)^(−1/2)
/// (eq. 15).
///
/// Eq. (10f) reads `v(t+h) = v(t) + (h/2) a(t+h/2)` in the published text; a
/// leapfrog kick over the whole step is `h·a(t+h/2)` (with h/2 the scheme would
/// not even be consistent: r(t+h) = r + hv + h²a/4). We use h, and the
/// convergence test shows second order.
#[derive(Default)]
pub struct AdaptiveVerlet {
    r_half: Vec<Vec3>,
    v_half: Vec<Vec3>,
    v_new: Vec<Vec3>,
    v_old: Vec<Vec3>,
    a_pos: Vec<Vec3>,
    a: Vec<Vec3>,
    evals: EvalCount,
    /// Fixed-point iterations allowed before the step is rejected.
    pub max_iterations: usize,
}

impl Integrator for AdaptiveVerlet {
    fn kind(&self) -> IntegratorKind {
        IntegratorKind::Verlet
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
        for buf in [
            &mut self.r_half,
            &mut self.v_half,
            &mut self.v_new,
            &mut self.v_old,
            &mut self.a_pos,
            &mut self.a,
        ] {
            buf.resize(n, Vec3::ZERO);
        }
        let max_iterations = if self.max_iterations == 0 {
            8
        } else {
            self.max_iterations
        };
        let hf = h as f32;
        let t_half = t + 0.5 * h;
        // (10a) drift half a step.
        for k in 0..n {
            self.r_half[k] = r[k] + 0.5 * hf * v[k];
        }
        // The kinematic rows sit where the joints are at t+h/2 (their
        // velocities there are not needed).
        sys.prescribe(t_half, &mut self.r_half, &mut self.v_half);
        // r(t+h/2) is fixed during the iteration: the position forces once.
        sys.position_acceleration(t_half, &self.r_half, &mut self.a_pos);
        self.evals.full += 1;
        // Where the velocity forces are linear, the fixed point in closed
        // form; else the iteration, from (10b) the end velocity's first
        // guess v.
        let mut converged =
            sys.kick_at_mean_velocity(t_half, &self.r_half, v, &self.a_pos, hf, &mut self.v_new);
        if !converged {
            self.v_new.copy_from_slice(v);
        }
        let iterations = if converged { 0 } else { max_iterations };
        for it in 0..iterations {
            // (10c) mid-step velocity estimate.
            for k in 0..n {
                self.v_half[k] = 0.5 * (self.v_new[k] + v[k]);
            }
            // (10d) only the velocity-dependent forces change.
            self.a.copy_from_slice(&self.a_pos);
            sys.add_velocity_acceleration(t_half, &self.r_half, &self.v_half, &mut self.a);
            if it > 0 {
                self.evals.velocity_only += 1;
            }
            // (10e–10f)
            std::mem::swap(&mut self.v_old, &mut self.v_new);
            for k in 0..n {
                self.v_new[k] = v[k] + hf * self.a[k];
            }
            // (10g)
            let e = scaled_error(
                sys,
                &self.v_old,
                &self.v_new,
                &self.v_new,
                tol.velocity_threshold,
            );
            if e <= tol.velocity as f64 {
                converged = true;
                break;
            }
        }
        if !converged {
            return StepOutcome {
                accepted: false,
                error_ratio: f64::INFINITY,
                next_h: (0.5 * h).max(tol.min_step),
            };
        }
        // (10h) the Verlet position; (14) its distance from the embedded
        // explicit-Euler one (12), r(scale) from r(t), with the Euler
        // position computed on the way instead of stored.
        let mut r_new = std::mem::take(&mut self.r_half);
        for k in 0..n {
            r_new[k] += 0.5 * hf * self.v_new[k];
        }
        let d = distance_from_euler(sys, (r, v), hf, &r_new, tol.position_threshold);
        // (15)
        let ratio = d / tol.position as f64;
        let next_h = next_step(h, ratio, 2.0, tol);
        let accepted = ratio <= 1.0 || h <= tol.min_step;
        if accepted {
            r.copy_from_slice(&r_new);
            v.copy_from_slice(&self.v_new);
            sys.prescribe(t + h, r, v);
        }
        self.r_half = r_new;
        StepOutcome {
            accepted,
            error_ratio: ratio,
            next_h,
        }
    }
}

/// [`scaled_error`] of the explicit-Euler position r + h·v (eq. 12) against
/// `r_new`, with r as the scale: the same terms, without storing the Euler
/// position.
fn distance_from_euler(
    sys: &dyn SecondOrderSystem,
    (r, v): (&[Vec3], &[Vec3]),
    h: f32,
    r_new: &[Vec3],
    threshold: f32,
) -> f64 {
    let t = Vec3::splat(threshold);
    let term = |k: usize| (((r[k] + h * v[k]) - r_new[k]).abs() / r[k].abs().max(t)).max_element();
    let e = match sys.kinematic_mask() {
        Some(mask) => (0..r.len())
            .filter(|&k| !mask[k])
            .map(term)
            .fold(0.0f32, f32::max),
        None => (0..r.len())
            .filter(|&k| !sys.is_kinematic(k))
            .map(term)
            .fold(0.0f32, f32::max),
    };
    if e.is_finite() {
        e as f64
    } else {
        f64::INFINITY
    }
}
