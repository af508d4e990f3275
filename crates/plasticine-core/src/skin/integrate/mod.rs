//! Integrators for the skin's equation of motion M r'' = f(r, r', t) (LEMAN eq. 1a),
//! behind one trait so they can be switched at run time (§4.2.1).
//!
//! Every integrator sees the skin as a [`SecondOrderSystem`]: positions and
//! velocities of P points, an acceleration split into a position-dependent part
//! (elastic, springs, gravity: the expensive part) and a velocity-dependent part
//! (damping: cheap), and kinematic points whose state the system prescribes.

mod euler;
mod implicit;
mod krylov;
mod rosenbrock;
mod runge_kutta;
mod verlet;

pub use euler::ExplicitEuler;
pub use implicit::LinearizedImplicitEuler;
pub use rosenbrock::Rosenbrock4;
pub use runge_kutta::{AdaptiveRk2, AdaptiveRk4};
pub use verlet::AdaptiveVerlet;

use crate::character::InvalidField;
use glam::Vec3;
use serde::{Deserialize, Serialize};

/// The skin as the integrators see it.
pub trait SecondOrderSystem {
    /// Number of points P, each with a position and a velocity.
    fn len(&self) -> usize;

    /// Whether the system has no points.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Position-dependent acceleration M⁻¹ `f_r(r, t)` written into `a`
    /// (kinematic points get zero).
    fn position_acceleration(&mut self, t: f64, r: &[Vec3], a: &mut [Vec3]);

    /// Adds the velocity-dependent acceleration M⁻¹ `f_v(r, v, t)` to `a`.
    /// Contract: called after `position_acceleration` with the same t and r
    /// (Verlet's fixed point calls it repeatedly for one r), so a system may
    /// reuse what the position pass computed.
    fn add_velocity_acceleration(&mut self, t: f64, r: &[Vec3], v: &[Vec3], a: &mut [Vec3]);

    /// The end velocity of a leapfrog kick whose velocity forces act at
    /// the step's mean velocity, `v_new = v + h·(a_pos + M⁻¹f_v(r, ½(v +
    /// v_new), t))`, solved in closed form into `v_new` where `f_v` is
    /// linear in v (then true); false where it is not, and Verlet iterates
    /// for it (eq. 10c–10g). Same contract as `add_velocity_acceleration`.
    fn kick_at_mean_velocity(
        &mut self,
        _t: f64,
        _r: &[Vec3],
        _v: &[Vec3],
        _a_pos: &[Vec3],
        _h: f32,
        _v_new: &mut [Vec3],
    ) -> bool {
        false
    }

    /// Full acceleration.
    fn acceleration(&mut self, t: f64, r: &[Vec3], v: &[Vec3], a: &mut [Vec3]) {
        self.position_acceleration(t, r, a);
        self.add_velocity_acceleration(t, r, v, a);
    }

    /// Overwrites the kinematic points (the skin rows fixed to joints) with their
    /// prescribed positions and velocities at time t.
    fn prescribe(&mut self, t: f64, r: &mut [Vec3], v: &mut [Vec3]);

    /// Whether point k is kinematic (excluded from error norms and solves).
    fn is_kinematic(&self, k: usize) -> bool;

    /// All of `is_kinematic` at once, where the system keeps it (saves the hot
    /// error norm a call per point).
    fn kinematic_mask(&self) -> Option<&[bool]> {
        None
    }
}

/// Error tolerances and step bounds (LEMAN eq. 10g, 11, 14, 15 and §4.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Tolerances {
    /// ε(r): desired accuracy of positions (eq. 15), relative to the scale vector.
    pub position: f32,
    /// r(threshold): below it the position error is absolute, above it relative (m).
    pub position_threshold: f32,
    /// ε(v): convergence of the Verlet velocity fixed point (eq. 10g).
    pub velocity: f32,
    /// v(threshold) (m/s).
    pub velocity_threshold: f32,
    /// ε(c): largest constraint correction accepted without rejecting the step (m).
    pub constraint: f32,
    /// Step size bounds (s).
    pub min_step: f64,
    /// Largest step size (s).
    pub max_step: f64,
    /// The step of the fixed-step integrators (s).
    pub fixed_step: f64,
}

impl Default for Tolerances {
    fn default() -> Self {
        // ε(r) bounds the embedded Euler estimate h²|a|/2 (eq. 14), which
        // overstates Verlet's own O(h³) error: a millimetre of it per step keeps
        // the skin smooth. ε(c) at the default fat thickness: no step may move a
        // point by more than the fat layer.
        Self {
            position: 1e-3,
            position_threshold: 1.0,
            velocity: 1e-3,
            velocity_threshold: 1.0,
            constraint: 0.01,
            min_step: 1e-6,
            max_step: 1.0 / 60.0,
            fixed_step: 5e-4,
        }
    }
}

impl Tolerances {
    /// Checks that every tolerance is positive and `min_step <= max_step`; the error
    /// names the offending field.
    pub fn validate(&self) -> Result<(), InvalidField> {
        let pos = |x: f32, name: &str| {
            if x.is_finite() && x > 0.0 {
                Ok(())
            } else {
                Err(InvalidField::new(
                    format!("tolerances.{name}"),
                    format!("must be positive, got {x}"),
                ))
            }
        };
        pos(self.position, "position")?;
        pos(self.position_threshold, "position_threshold")?;
        pos(self.velocity, "velocity")?;
        pos(self.velocity_threshold, "velocity_threshold")?;
        pos(self.constraint, "constraint")?;
        if !(self.min_step > 0.0 && self.min_step <= self.max_step && self.max_step.is_finite()) {
            return Err(InvalidField::new(
                "tolerances.min_step",
                format!(
                    "need 0 < min_step <= max_step, got {} and {}",
                    self.min_step, self.max_step
                ),
            ));
        }
        if !(self.fixed_step > 0.0 && self.fixed_step.is_finite()) {
            return Err(InvalidField::new(
                "tolerances.fixed_step",
                format!("must be positive, got {}", self.fixed_step),
            ));
        }
        Ok(())
    }
}

/// Outcome of one attempted step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepOutcome {
    /// Whether the state was advanced by `h`.
    pub accepted: bool,
    /// Scaled error estimate D/ε (≤ 1 means within tolerance); 0 for fixed-step methods.
    pub error_ratio: f64,
    /// The step to try next (or to retry with, if rejected).
    pub next_h: f64,
}

/// Force-evaluation counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvalCount {
    /// Evaluations of the full (position-dependent) forces.
    pub full: u64,
    /// Re-evaluations of the velocity-dependent forces only (Verlet's fixed point).
    pub velocity_only: u64,
}

/// Everything an integrator carries from one step to the next: what a bake
/// checkpoint saves so that a resumed bake continues bit for bit.
///
/// None of the integrators keeps history that feeds later steps (no multistep
/// method, no first-same-as-last stage reuse, no remembered Jacobian): their
/// buffers are scratch, written before they are read within a step, so only
/// the counters remain. The test `restored_state_steps_bit_for_bit` holds every
/// integrator to that; one that starts keeping history must add it here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IntegratorState {
    /// Force evaluations so far.
    pub evals: EvalCount,
    /// Linear-solver iterations so far (implicit Euler, Rosenbrock; 0 for the others).
    pub solver_iterations: u64,
}

/// A time integrator. `step` tries to advance (r, v) from t by h; on rejection
/// the state is left untouched.
pub trait Integrator: Send {
    /// Which of the integrators this is.
    fn kind(&self) -> IntegratorKind;
    /// What it carries between steps (see [`IntegratorState`]).
    fn state(&self) -> IntegratorState;
    /// Continues from a saved [`state`](Self::state).
    fn restore(&mut self, state: &IntegratorState);
    /// Tries one step of size `h` (s) from time `t`; on rejection (r, v) are left untouched.
    fn step(
        &mut self,
        sys: &mut dyn SecondOrderSystem,
        t: f64,
        h: f64,
        r: &mut [Vec3],
        v: &mut [Vec3],
        tol: &Tolerances,
    ) -> StepOutcome;
    /// Force evaluations so far.
    fn evals(&self) -> EvalCount;
}

/// The integrators the user can pick (§4.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
pub enum IntegratorKind {
    /// Explicit Euler, fixed step.
    Euler,
    /// Linearized implicit Euler, fixed step (matrix-free `BiCGSTAB`).
    ImplicitEuler,
    /// Adaptive Verlet leapfrog with velocity fixed point (eq. 10–15). The default.
    Verlet,
    /// Adaptive Runge–Kutta 2 (Heun) with embedded Euler error estimate.
    Rk2,
    /// Adaptive Runge–Kutta 4(5), Cash–Karp embedded pair.
    Rk4,
    /// Adaptive 4th-order Rosenbrock (Shampine's parameters), for stiff settings.
    Rosenbrock,
}

impl IntegratorKind {
    /// Every integrator, in the order the tools panel cycles through them.
    pub const ALL: [IntegratorKind; 6] = [
        IntegratorKind::Euler,
        IntegratorKind::ImplicitEuler,
        IntegratorKind::Verlet,
        IntegratorKind::Rk2,
        IntegratorKind::Rk4,
        IntegratorKind::Rosenbrock,
    ];

    /// A new integrator of this kind, with empty scratch buffers and zero counters.
    pub fn create(self) -> Box<dyn Integrator> {
        match self {
            IntegratorKind::Euler => Box::new(ExplicitEuler::default()),
            IntegratorKind::ImplicitEuler => Box::new(LinearizedImplicitEuler::default()),
            IntegratorKind::Verlet => Box::new(AdaptiveVerlet::default()),
            IntegratorKind::Rk2 => Box::new(AdaptiveRk2::default()),
            IntegratorKind::Rk4 => Box::new(AdaptiveRk4::default()),
            IntegratorKind::Rosenbrock => Box::new(Rosenbrock4::default()),
        }
    }

    /// Whether this integrator chooses its own step size from an error estimate.
    pub fn is_adaptive(self) -> bool {
        !matches!(self, IntegratorKind::Euler | IntegratorKind::ImplicitEuler)
    }

    /// A short lowercase name, matching its command-line spelling.
    pub fn name(self) -> &'static str {
        match self {
            IntegratorKind::Euler => "euler",
            IntegratorKind::ImplicitEuler => "implicit-euler",
            IntegratorKind::Verlet => "verlet",
            IntegratorKind::Rk2 => "rk2",
            IntegratorKind::Rk4 => "rk4",
            IntegratorKind::Rosenbrock => "rosenbrock",
        }
    }
}

/// ||(a − b) * scale||∞ with the scale vector of eq. (11):
/// scale = 1 / max(|x|, threshold) per component — absolute error control for
/// small components, relative above the threshold. Kinematic points are skipped.
pub(crate) fn scaled_error(
    sys: &dyn SecondOrderSystem,
    a: &[Vec3],
    b: &[Vec3],
    reference: &[Vec3],
    threshold: f32,
) -> f64 {
    let t = Vec3::splat(threshold);
    let term = |k: usize| ((a[k] - b[k]).abs() / reference[k].abs().max(t)).max_element();
    let e = match sys.kinematic_mask() {
        Some(mask) => (0..a.len())
            .filter(|&k| !mask[k])
            .map(term)
            .fold(0.0f32, f32::max),
        None => (0..a.len())
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

/// Next step from an error ratio D/ε and the method's error order p
/// (error ∝ h^p): h₁ = h (D/ε)^(−1/p), with the usual safety factor and growth
/// limits (Numerical Recipes) so one lucky step cannot blow the step up.
pub(crate) fn next_step(h: f64, ratio: f64, order: f64, tol: &Tolerances) -> f64 {
    let factor = if ratio <= 1e-12 {
        4.0
    } else {
        (0.9 * ratio.powf(-1.0 / order)).clamp(0.2, 4.0)
    };
    (h * factor).clamp(tol.min_step, tol.max_step)
}

#[cfg(test)]
pub(crate) mod test_systems;
#[cfg(test)]
mod tests;
