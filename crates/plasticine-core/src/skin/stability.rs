//! The stability limit of the explicit integrators (LEMAN eq. 15 bounds the
//! local error, not stability): a leapfrog step is stable only while
//! `h·ω_max` < 2, with `ω_max` the highest angular frequency of the skin's
//! linearised undamped motion. Stiff material (a large bend, or the short
//! edges round a small ring) puts `ω_max` far above what the error estimate
//! notices, and a step past the limit does not blow up at once: it grows a
//! grid-scale jitter that crumples the skin.
//!
//! `ω_max²` is the largest eigenvalue of M⁻¹K, K = −∂f/∂r. It is estimated by
//! power iteration on directional differences of the position-dependent
//! acceleration, so it covers every force the system has (membrane, bending,
//! connective tissue) without a hand-derived bound for each.

use super::integrate::{IntegratorKind, SecondOrderSystem};
use glam::Vec3;

/// Power iterations (each two force evaluations).
const ITERATIONS: usize = 40;
/// Power iteration approaches `ω_max²` from below; this covers what is left.
/// Measured on the penguin's skins at 16×16 and 64×64: 40 iterations come
/// within 0.3 % of the ω that 2,000 converge to (and the test below holds
/// them within 1 %). Beyond that the margin is [`stable_h_omega`]'s (1.7
/// against the leapfrog's 2), for a skin that stiffens as it moves. At 1.25
/// the flippers of the 64×64 penguin took 10 % more steps than at 1.1.
const UNDERESTIMATE: f64 = 1.1;

/// The largest `h·ω_max` at which `kind` stays stable on an undamped
/// oscillation (2 for the leapfrog, 2√2 for RK4), with a margin, or `None`
/// where stability does not limit the step (the implicit methods). The
/// stepper lowers it further where edges are compressed. Explicit Euler and Heun are unstable on a pure
/// oscillation at any step; damping and their error control carry them, and
/// the Verlet bound keeps them out of the worst.
pub fn stable_h_omega(kind: IntegratorKind) -> Option<f64> {
    match kind {
        IntegratorKind::Verlet | IntegratorKind::Euler | IntegratorKind::Rk2 => Some(1.7),
        IntegratorKind::Rk4 => Some(2.4),
        IntegratorKind::ImplicitEuler | IntegratorKind::Rosenbrock => None,
    }
}

/// Estimated `ω_max` (rad/s) of `sys` linearised at (t, r); 0 for a system
/// with no free point.
pub fn highest_frequency(sys: &mut dyn SecondOrderSystem, t: f64, r: &[Vec3]) -> f64 {
    (power_iteration(sys, t, r, ITERATIONS) * UNDERESTIMATE).sqrt()
}

/// The largest eigenvalue of M⁻¹K that `iterations` power iterations find
/// (from below).
fn power_iteration(sys: &mut dyn SecondOrderSystem, t: f64, r: &[Vec3], iterations: usize) -> f64 {
    let n = r.len();
    let free: Vec<bool> = (0..n).map(|k| !sys.is_kinematic(k)).collect();
    if !free.iter().any(|&f| f) {
        return 0.0;
    }
    let size = r.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), x| {
        (lo.min(*x), hi.max(*x))
    });
    let eps = (1e-5 * (size.1 - size.0).length()).max(1e-7);
    // A deterministic start with energy in every mode: a hash per component.
    let mut v: Vec<Vec3> = (0..n)
        .map(|k| {
            if !free[k] {
                return Vec3::ZERO;
            }
            let h = |s: u32| {
                let x = (k as u32).wrapping_mul(2_654_435_761).wrapping_add(s) ^ 0x9e37_79b9;
                let x = x.wrapping_mul(0x85eb_ca6b) ^ (x >> 13);
                (x % 2001) as f32 / 1000.0 - 1.0
            };
            Vec3::new(h(1), h(2), h(3))
        })
        .collect();
    let (mut rp, mut rn) = (r.to_vec(), r.to_vec());
    let (mut ap, mut an) = (vec![Vec3::ZERO; n], vec![Vec3::ZERO; n]);
    let mut best = 0.0f64;
    for _ in 0..iterations {
        let norm = v
            .iter()
            .map(|x| x.length_squared() as f64)
            .sum::<f64>()
            .sqrt();
        if norm == 0.0 {
            break;
        }
        let s = (1.0 / norm) as f32;
        for k in 0..n {
            v[k] *= s;
            rp[k] = r[k] + eps * v[k];
            rn[k] = r[k] - eps * v[k];
        }
        sys.position_acceleration(t, &rp, &mut ap);
        sys.position_acceleration(t, &rn, &mut an);
        let inv = 0.5 / eps;
        for k in 0..n {
            v[k] = if free[k] {
                (ap[k] - an[k]) * inv
            } else {
                Vec3::ZERO
            };
        }
        let lambda = v
            .iter()
            .map(|x| x.length_squared() as f64)
            .sum::<f64>()
            .sqrt();
        if lambda.is_finite() {
            best = best.max(lambda);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skin::driver::SkeletonDriver;
    use crate::skin::system::SkinSystem;

    /// The estimate's margin covers what the power iteration leaves: on
    /// every skin of the 16×16 penguin, 40 iterations find `ω_max` within 1 %
    /// of what ten times as many converge to, and the margin lifts the
    /// estimate above it.
    #[test]
    fn forty_power_iterations_come_within_the_margin() {
        let c = crate::samples::build("penguin", 16, 16).expect("the sample");
        let driver = SkeletonDriver::Keys(c.key_postures.clone());
        for skin in &c.skins {
            let mut sys = SkinSystem::new(&c, skin, &driver);
            let r = &skin.points.position;
            let converged = power_iteration(&mut sys, 0.0, r, 400).sqrt();
            let found = power_iteration(&mut sys, 0.0, r, ITERATIONS).sqrt();
            assert!(
                found > 0.99 * converged,
                "{}: {found} vs {converged}",
                skin.name
            );
            assert!(found <= converged * (1.0 + 1e-6), "from below");
            let estimate = highest_frequency(&mut sys, 0.0, r);
            assert!(
                estimate >= converged,
                "{}: {estimate} vs {converged}",
                skin.name
            );
        }
    }
}
