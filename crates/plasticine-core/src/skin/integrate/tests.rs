//! Integrator tests against analytic solutions.

use super::test_systems::Oscillators;
use super::*;
use std::f64::consts::TAU;

fn loose() -> Tolerances {
    Tolerances {
        position: 1e9,
        velocity: 1e-6,
        max_step: 1.0,
        ..Tolerances::default()
    }
}

/// Integrates with a fixed step (tolerances that never reject) to time `t_end`.
fn run_fixed(
    kind: IntegratorKind,
    sys: &mut Oscillators,
    h: f64,
    t_end: f64,
    r: &mut [Vec3],
    v: &mut [Vec3],
) {
    let mut integ = kind.create();
    let mut tol = loose();
    if kind != IntegratorKind::Verlet {
        // Verlet needs a tight fixed point; the others must simply never reject.
        tol.velocity = 1e9;
    }
    let steps = (t_end / h).round() as usize;
    let mut t = 0.0;
    for _ in 0..steps {
        let out = integ.step(sys, t, h, r, v, &tol);
        assert!(out.accepted);
        t += h;
    }
}

/// Adaptive run to `t_end`, landing exactly on it. Returns (accepted, rejected).
pub(crate) fn run_adaptive(
    integ: &mut dyn Integrator,
    sys: &mut dyn SecondOrderSystem,
    tol: &Tolerances,
    t_end: f64,
    r: &mut [Vec3],
    v: &mut [Vec3],
    mut each: impl FnMut(f64, &[Vec3], &[Vec3]),
) -> (usize, usize) {
    let (mut t, mut h) = (0.0, tol.max_step.min(1e-3));
    let (mut acc, mut rej) = (0, 0);
    while t < t_end - 1e-12 {
        let step = h.min(t_end - t);
        let out = integ.step(sys, t, step, r, v, tol);
        if out.accepted {
            t += step;
            acc += 1;
            each(t, r, v);
        } else {
            rej += 1;
            assert!(rej < 100_000, "step size collapsed");
        }
        h = out.next_h;
    }
    (acc, rej)
}

fn start(sys: &mut Oscillators) -> (Vec<Vec3>, Vec<Vec3>) {
    let n = sys.centers.len();
    let mut r: Vec<Vec3> = (0..n)
        .map(|k| sys.centers[k] + Vec3::new(0.1, 0.0, -0.05 * k as f32))
        .collect();
    let mut v: Vec<Vec3> = (0..n)
        .map(|k| Vec3::new(0.0, 0.2 * k as f32, 0.0))
        .collect();
    sys.prescribe(0.0, &mut r, &mut v);
    (r, v)
}

/// Error order p from the errors at h and h/2: e(h)/e(h/2) ≈ 2^p.
fn observed_order(kind: IntegratorKind, damping: f32) -> f64 {
    let mut errors = Vec::new();
    for h in [4e-3, 2e-3] {
        let mut sys = Oscillators::new(3, 5.0, damping);
        let (mut r, mut v) = start(&mut sys);
        run_fixed(kind, &mut sys, h, 1.0, &mut r, &mut v);
        // Reference: RK4 with a tiny step.
        let mut sys_ref = Oscillators::new(3, 5.0, damping);
        let (mut rr, mut vr) = start(&mut sys_ref);
        run_fixed(
            IntegratorKind::Rk4,
            &mut sys_ref,
            1e-4,
            1.0,
            &mut rr,
            &mut vr,
        );
        let e = (1..3)
            .map(|k| (r[k] - rr[k]).length() as f64)
            .fold(0.0, f64::max);
        errors.push(e);
    }
    (errors[0] / errors[1]).log2()
}

#[test]
fn verlet_is_second_order_halving_h_quarters_the_error() {
    // With damping the fixed-point iteration on the velocity is exercised too.
    let p = observed_order(IntegratorKind::Verlet, 0.8);
    assert!((p - 2.0).abs() < 0.2, "observed order {p}");
}

#[test]
fn explicit_euler_is_first_order() {
    let p = observed_order(IntegratorKind::Euler, 0.8);
    assert!((p - 1.0).abs() < 0.15, "observed order {p}");
}

#[test]
fn heun_rk2_is_second_order_and_implicit_euler_first() {
    let p = observed_order(IntegratorKind::Rk2, 0.8);
    assert!((p - 2.0).abs() < 0.2, "rk2 observed order {p}");
    let p = observed_order(IntegratorKind::ImplicitEuler, 0.8);
    assert!((p - 1.0).abs() < 0.2, "implicit Euler observed order {p}");
}

#[test]
fn every_adaptive_integrator_reproduces_the_analytic_period() {
    // ω = 2π·1.5 Hz: period 2/3 s. Count upward zero crossings over 4 s.
    let omega = (TAU * 1.5) as f32;
    for kind in [
        IntegratorKind::Verlet,
        IntegratorKind::Rk2,
        IntegratorKind::Rk4,
        IntegratorKind::Rosenbrock,
    ] {
        let mut sys = Oscillators::new(2, omega, 0.0);
        sys.kinematic_first = false;
        let mut r = vec![Vec3::ZERO, Vec3::new(1.0, 0.0, 0.0)];
        let mut v = vec![Vec3::ZERO, Vec3::new(0.0, 0.0, 0.5)];
        let c = sys.centers[1];
        let mut last = (0.0f64, r[1].z - c.z);
        let mut crossings = Vec::new();
        let tol = Tolerances {
            position: 1e-5,
            velocity: 1e-5,
            ..Tolerances::default()
        };
        let mut integ = kind.create();
        run_adaptive(
            integ.as_mut(),
            &mut sys,
            &tol,
            4.0,
            &mut r,
            &mut v,
            |t, r, _| {
                let z = r[1].z - c.z;
                if last.1 < 0.0 && z >= 0.0 {
                    // Linear interpolation of the crossing time.
                    crossings.push(last.0 + (t - last.0) * (-last.1 / (z - last.1)) as f64);
                }
                last = (t, z);
            },
        );
        assert!(
            crossings.len() >= 4,
            "{kind:?}: {} crossings",
            crossings.len()
        );
        let period = (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f64;
        let expected = TAU / omega as f64;
        assert!(
            (period / expected - 1.0).abs() < 2e-3,
            "{kind:?}: period {period} vs analytic {expected}"
        );
    }
}

#[test]
fn adaptive_verlet_keeps_the_true_local_error_under_tolerance() {
    // For every accepted step, integrate the same start exactly and compare.
    let mut sys = Oscillators::new(4, 12.0, 0.0);
    let (mut r, mut v) = start(&mut sys);
    let tol = Tolerances {
        position: 1e-5,
        position_threshold: 1.0,
        ..Tolerances::default()
    };
    let mut integ = AdaptiveVerlet::default();
    let (mut t, mut h) = (0.0, 1e-3);
    let mut accepted = 0;
    let mut worst: f64 = 0.0;
    while t < 2.0 {
        let (r0, v0) = (r.clone(), v.clone());
        let out = integ.step(&mut sys, t, h, &mut r, &mut v, &tol);
        if out.accepted {
            for k in 1..4 {
                let scale = r0[k].abs().max(Vec3::splat(tol.position_threshold));
                let (xe, _) = sys.exact_undamped(r0[k], v0[k], sys.centers[k], h);
                worst = worst.max(((r[k] - xe).abs() / scale).max_element() as f64);
            }
            t += h;
            accepted += 1;
        }
        h = out.next_h;
    }
    assert!(accepted > 100);
    // Roundoff of f32 positions near 1 m is ~1e-7.
    assert!(
        worst <= tol.position as f64 + 2e-7,
        "worst true local error {worst}"
    );
}

#[test]
fn free_fall_is_exact_under_verlet() {
    // Verlet integrates constant acceleration exactly, whatever the steps.
    let mut sys = Oscillators::new(3, 0.0, 0.0);
    sys.gravity = Vec3::new(0.0, -9.81, 0.0);
    sys.kinematic_first = false;
    let r0: Vec<Vec3> = sys.centers.clone();
    let v0 = vec![Vec3::new(0.3, 2.0, 0.0); 3];
    let (mut r, mut v) = (r0.clone(), v0.clone());
    let tol = Tolerances {
        position: 1e-5,
        ..Tolerances::default()
    };
    let mut integ = AdaptiveVerlet::default();
    let (acc, _) = run_adaptive(
        &mut integ,
        &mut sys,
        &tol,
        1.0,
        &mut r,
        &mut v,
        |_, _, _| {},
    );
    assert!(acc > 10, "several adaptive steps were taken ({acc})");
    for k in 0..3 {
        let exact = r0[k] + v0[k] * 1.0 + 0.5 * sys.gravity * 1.0;
        assert!((r[k] - exact).length() < 2e-5, "{} vs {}", r[k], exact);
        assert!((v[k] - (v0[k] + sys.gravity)).length() < 2e-5);
    }
}

#[test]
fn with_damping_the_energy_never_rises() {
    for kind in IntegratorKind::ALL {
        let mut sys = Oscillators::new(3, 6.0, 1.5);
        sys.kinematic_first = false;
        let (mut r, mut v) = start(&mut sys);
        let energy = |r: &[Vec3], v: &[Vec3], s: &Oscillators| -> f64 {
            (0..r.len())
                .map(|k| {
                    0.5 * (v[k].length_squared()
                        + s.omega * s.omega * (r[k] - s.centers[k]).length_squared())
                        as f64
                })
                .sum()
        };
        let mut last = energy(&r, &v, &sys);
        let tol = Tolerances {
            position: 1e-5,
            velocity: 1e-5,
            fixed_step: 1e-3,
            ..Tolerances::default()
        };
        let mut integ = kind.create();
        let mut t = 0.0;
        let mut h = 1e-3;
        while t < 3.0 {
            let out = integ.step(&mut sys, t, h, &mut r, &mut v, &tol);
            if out.accepted {
                t += h;
                let e = energy(&r, &v, &sys);
                assert!(
                    e <= last * (1.0 + 1e-5),
                    "{kind:?}: energy rose from {last} to {e} at t={t}"
                );
                last = e;
            }
            h = if kind.is_adaptive() {
                out.next_h
            } else {
                tol.fixed_step
            };
        }
        assert!(
            last < 0.2 * energy(&start(&mut sys).0, &start(&mut sys).1, &sys),
            "{kind:?} damped"
        );
    }
}

#[test]
fn kinematic_points_follow_their_prescription() {
    for kind in IntegratorKind::ALL {
        let mut sys = Oscillators::new(3, 4.0, 0.1);
        let (mut r, mut v) = start(&mut sys);
        let tol = Tolerances::default();
        let mut integ = kind.create();
        let mut t = 0.0;
        while t < 0.5 {
            let out = integ.step(&mut sys, t, 1e-3, &mut r, &mut v, &tol);
            if out.accepted {
                t += 1e-3;
            }
        }
        assert!(
            (r[0] - Oscillators::kinematic_position(t)).length() < 1e-5,
            "{kind:?}"
        );
    }
}

/// What a bake checkpoint relies on: an integrator rebuilt from its saved
/// [`IntegratorState`] (fresh buffers) takes exactly the same steps as the one
/// that kept running (buffers full of the previous steps). Fails for any
/// integrator that starts carrying history outside its state.
#[test]
fn restored_state_steps_bit_for_bit() {
    for kind in IntegratorKind::ALL {
        // Strong damping and a loose velocity tolerance: Verlet's fixed point
        // stops after a few iterations, so its result depends on where the
        // iteration starts (history there would show).
        let mut sys = Oscillators::new(6, 7.0, 20.0);
        sys.gravity = Vec3::new(0.0, -9.8, 0.0);
        let (mut r, mut v) = start(&mut sys);
        let tol = Tolerances {
            position: 1e-4,
            velocity: 1e-2,
            max_step: 0.05,
            ..Tolerances::default()
        };
        let mut running = kind.create();
        // Warm up with varied steps (some rejected by the adaptive ones).
        let mut t = 0.0;
        let mut h = 0.03;
        for _ in 0..40 {
            let out = running.step(&mut sys, t, h, &mut r, &mut v, &tol);
            if out.accepted {
                t += h;
            }
            h = if kind.is_adaptive() {
                out.next_h
            } else {
                0.004
            };
        }
        let saved = running.state();
        assert!(saved.evals.full > 0, "{kind:?} counts its evaluations");
        let mut restored = kind.create();
        restored.restore(&saved);
        assert_eq!(restored.state(), saved, "{kind:?}");
        let (mut r2, mut v2) = (r.clone(), v.clone());
        for step in 0..40 {
            let a = running.step(&mut sys, t, h, &mut r, &mut v, &tol);
            let b = restored.step(&mut sys, t, h, &mut r2, &mut v2, &tol);
            assert_eq!(
                (a.accepted, a.next_h.to_bits(), a.error_ratio.to_bits()),
                (b.accepted, b.next_h.to_bits(), b.error_ratio.to_bits()),
                "{kind:?}: step {step} after the restore"
            );
            let bits = |x: &[Vec3]| -> Vec<[u32; 3]> {
                x.iter().map(|p| p.to_array().map(f32::to_bits)).collect()
            };
            assert_eq!(bits(&r), bits(&r2), "{kind:?}: positions, step {step}");
            assert_eq!(bits(&v), bits(&v2), "{kind:?}: velocities, step {step}");
            if a.accepted {
                t += h;
            }
            h = if kind.is_adaptive() { a.next_h } else { 0.004 };
        }
        assert_eq!(running.state(), restored.state(), "{kind:?}");
    }
}
