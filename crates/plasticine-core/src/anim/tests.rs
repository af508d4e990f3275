use super::*;
use crate::character::{KeyPosture, Posture};
use glam::Vec3;

fn tcb(tension: f32, continuity: f32, bias: f32) -> Tcb {
    Tcb {
        tension,
        continuity,
        bias,
    }
}

fn scalar_keys(times: &[f32], values: &[f32], params: &[Tcb]) -> Vec<KbKey<f32>> {
    times
        .iter()
        .zip(values)
        .zip(params)
        .map(|((&time, &value), &tcb)| KbKey { time, value, tcb })
        .collect()
}

fn eval(keys: &[KbKey<f32>], t: f32) -> f32 {
    kochanek_bartels(keys, t, Wrap::Clamp).unwrap()
}

/// Finite-difference step: truncation error ~h², f32 rounding ~1/h.
const FD_STEP: f32 = 2e-3;

/// Second-order one-sided finite differences (left, right) of `f` at `t`.
fn one_sided(f: impl Fn(f32) -> f32, t: f32, h: f32) -> (f32, f32) {
    let left = (3.0 * f(t) - 4.0 * f(t - h) + f(t - 2.0 * h)) / (2.0 * h);
    let right = (-3.0 * f(t) + 4.0 * f(t + h) - f(t + 2.0 * h)) / (2.0 * h);
    (left, right)
}

fn close(a: f32, b: f32, tol: f32) -> bool {
    (a - b).abs() <= tol
}

/// Independent reference: KB on keys extended by the linear-extrapolation
/// phantoms, with the time-derivative tangents written out per key, either
/// with the KB step-size adjustment or without it (raw `DS/Δ_i`, `DD/Δ_{i−1}`).
fn reference(times: &[f32], values: &[f32], params: &[Tcb], adjust: bool, t: f32) -> f32 {
    let n = times.len();
    let mut ts = vec![2.0 * times[0] - times[1]];
    ts.extend_from_slice(times);
    ts.push(2.0 * times[n - 1] - times[n - 2]);
    let mut ps = vec![2.0 * values[0] - values[1]];
    ps.extend_from_slice(values);
    ps.push(2.0 * values[n - 1] - values[n - 2]);
    // (arriving, leaving) time derivatives at original key i (= extended i+1).
    let tangents = |i: usize| {
        let e = i + 1;
        let (d_in, d_out) = (ps[e] - ps[e - 1], ps[e + 1] - ps[e]);
        let (dt_in, dt_out) = (ts[e] - ts[e - 1], ts[e + 1] - ts[e]);
        let Tcb {
            tension: tt,
            continuity: c,
            bias: b,
        } = params[i];
        let ds = (1.0 - tt) * (1.0 - c) * (1.0 + b) / 2.0 * d_in
            + (1.0 - tt) * (1.0 + c) * (1.0 - b) / 2.0 * d_out;
        let dd = (1.0 - tt) * (1.0 + c) * (1.0 + b) / 2.0 * d_in
            + (1.0 - tt) * (1.0 - c) * (1.0 - b) / 2.0 * d_out;
        if adjust {
            (
                dd * 2.0 * dt_in / (dt_in + dt_out) / dt_in,
                ds * 2.0 * dt_out / (dt_in + dt_out) / dt_out,
            )
        } else {
            (dd / dt_in, ds / dt_out)
        }
    };
    let k = (0..n - 1).rfind(|&k| times[k] <= t).unwrap_or(0);
    let h = times[k + 1] - times[k];
    let u = (t - times[k]) / h;
    let (m0, m1) = (tangents(k).1 * h, tangents(k + 1).0 * h);
    let (p0, p1) = (values[k], values[k + 1]);
    (2.0 * u.powi(3) - 3.0 * u * u + 1.0) * p0
        + (u.powi(3) - 2.0 * u * u + u) * m0
        + (-2.0 * u.powi(3) + 3.0 * u * u) * p1
        + (u.powi(3) - u * u) * m1
}

// 1. ----------------------------------------------------------------------

#[test]
fn zero_tcb_uniform_equals_catmull_rom_and_hits_keys() {
    let times: Vec<f32> = (0..6).map(|i| 0.5 + 0.7 * i as f32).collect();
    let values = [0.3, 1.7, -0.4, 2.2, 2.0, -1.1];
    let keys = scalar_keys(&times, &values, &[Tcb::default(); 6]);
    // Catmull–Rom in matrix form on the points with linear-extrapolated ends.
    let mut p = vec![2.0 * values[0] - values[1]];
    p.extend_from_slice(&values);
    p.push(2.0 * values[5] - values[4]);
    let catmull_rom = |k: usize, s: f32| {
        let (p0, p1, p2, p3) = (p[k], p[k + 1], p[k + 2], p[k + 3]);
        0.5 * (2.0 * p1
            + (p2 - p0) * s
            + (2.0 * p0 - 5.0 * p1 + 4.0 * p2 - p3) * s * s
            + (-p0 + 3.0 * p1 - 3.0 * p2 + p3) * s * s * s)
    };
    let mut checked = 0;
    for (k, &start) in times[..5].iter().enumerate() {
        for j in 0..=40 {
            let s = j as f32 / 40.0;
            let t = start + s * 0.7;
            let (got, want) = (eval(&keys, t), catmull_rom(k, s));
            assert!(close(got, want, 1e-5), "segment {k} s={s}: {got} vs {want}");
            checked += 1;
        }
    }
    assert_eq!(checked, 205);
    for (i, &t) in times.iter().enumerate() {
        assert_eq!(eval(&keys, t), values[i], "key {i}");
    }
}

// 2. ----------------------------------------------------------------------

#[test]
fn passes_through_keys_with_any_tcb_and_spacing() {
    let times = [-0.2, 0.1, 0.9, 1.0, 2.6, 3.0];
    let values = [1.0, -2.0, 0.5, 0.7, 3.0, -1.0];
    let params = [
        tcb(0.3, -0.7, 0.9),
        tcb(-1.0, 1.0, -1.0),
        tcb(1.0, 0.2, 0.4),
        tcb(0.5, -1.0, 1.0),
        tcb(-0.6, 0.6, -0.3),
        tcb(0.9, 0.9, 0.9),
    ];
    let keys = scalar_keys(&times, &values, &params);
    for (i, &t) in times.iter().enumerate() {
        assert_eq!(eval(&keys, t), values[i], "key {i}");
    }
    // Also as a Vec3 spline: each component is the scalar spline.
    let vkeys: Vec<KbKey<Vec3>> = keys
        .iter()
        .map(|k| KbKey {
            time: k.time,
            value: Vec3::new(k.value, -2.0 * k.value, k.value * k.value),
            tcb: k.tcb,
        })
        .collect();
    let sq = scalar_keys(&times, &values.map(|v| v * v), &params);
    for j in 0..=100 {
        let t = -0.2 + 3.2 * j as f32 / 100.0;
        let v = kochanek_bartels(&vkeys, t, Wrap::Clamp).unwrap();
        assert!(close(v.x, eval(&keys, t), 1e-6));
        assert!(close(v.y, -2.0 * eval(&keys, t), 1e-5));
        assert!(close(v.z, eval(&sq, t), 1e-6));
    }
    for (i, key) in vkeys.iter().enumerate() {
        assert_eq!(
            kochanek_bartels(&vkeys, key.time, Wrap::Clamp),
            Some(key.value),
            "key {i}"
        );
    }
}

#[test]
fn matches_independent_hermite_construction() {
    let times = [0.0, 0.4, 2.0, 2.5, 4.0];
    let values = [0.0, 1.0, -0.5, 2.0, 1.0];
    let params = [
        tcb(0.2, 0.5, -0.3),
        tcb(-0.4, 0.3, 0.6),
        tcb(0.7, -0.8, 0.1),
        tcb(0.0, 0.4, -0.9),
        tcb(-0.5, -0.2, 0.3),
    ];
    let keys = scalar_keys(&times, &values, &params);
    for j in 0..=400 {
        let t = 4.0 * j as f32 / 400.0;
        let (got, want) = (eval(&keys, t), reference(&times, &values, &params, true, t));
        assert!(close(got, want, 1e-5), "t={t}: {got} vs {want}");
    }
}

// 3. ----------------------------------------------------------------------

#[test]
fn tension_one_flattens_the_key() {
    let times = [0.0, 1.0, 2.5];
    let values = [0.0, 1.0, 3.0];
    let flat = scalar_keys(
        &times,
        &values,
        &[tcb(0.0, 0.0, 0.0), tcb(1.0, 0.0, 0.0), tcb(0.0, 0.0, 0.0)],
    );
    let (l, r) = one_sided(|t| eval(&flat, t), 1.0, FD_STEP);
    assert!(close(l, 0.0, 1e-3) && close(r, 0.0, 1e-3), "{l} {r}");
    // Control: without tension the slope there is the central difference 3/2.5.
    let round = scalar_keys(&times, &values, &[Tcb::default(); 3]);
    let (l, r) = one_sided(|t| eval(&round, t), 1.0, FD_STEP);
    assert!(close(l, 1.2, 1e-3) && close(r, 1.2, 1e-3), "{l} {r}");
}

#[test]
fn continuity_splits_incoming_and_outgoing_derivatives() {
    // Chords d_in = 1, d_out = 2 at the middle key, continuity 0.5:
    // DD = (1+c)/2·1 + (1−c)/2·2 = 1.25, DS = (1−c)/2·1 + (1+c)/2·2 = 1.75.
    let values = [0.0, 1.0, 3.0];
    let params = [Tcb::default(), tcb(0.0, 0.5, 0.0), Tcb::default()];
    // Uniform spacing 1: time derivatives are DD and DS themselves (ratio 5/7).
    let keys = scalar_keys(&[0.0, 1.0, 2.0], &values, &params);
    let (l, r) = one_sided(|t| eval(&keys, t), 1.0, FD_STEP);
    assert!(close(l, 1.25, 1e-3) && close(r, 1.75, 1e-3), "{l} {r}");
    assert!(close(l / r, 5.0 / 7.0, 1e-3));
    // Intervals 1 and 2: both scaled by 2/(1+2), ratio unchanged.
    let keys = scalar_keys(&[0.0, 1.0, 3.0], &values, &params);
    let (l, r) = one_sided(|t| eval(&keys, t), 1.0, FD_STEP);
    assert!(
        close(l, 1.25 * 2.0 / 3.0, 1e-3) && close(r, 1.75 * 2.0 / 3.0, 1e-3),
        "{l} {r}"
    );
    // The analytic velocity agrees: left limit and (at the key) right one.
    let v_left = kochanek_bartels_velocity(&keys, 1.0 - 1e-6, Wrap::Clamp).unwrap();
    let v_right = kochanek_bartels_velocity(&keys, 1.0, Wrap::Clamp).unwrap();
    assert!(close(v_left, 1.25 * 2.0 / 3.0, 1e-4) && close(v_right, 1.75 * 2.0 / 3.0, 1e-4));
}

#[test]
fn bias_picks_incoming_or_outgoing_chord() {
    // Incoming chord 1, outgoing chord 2 per unit interval.
    let times = [0.0, 1.0, 2.0];
    let values = [0.0, 1.0, 3.0];
    for (bias, want) in [(1.0, 1.0), (-1.0, 2.0), (0.0, 1.5)] {
        let keys = scalar_keys(
            &times,
            &values,
            &[Tcb::default(), tcb(0.0, 0.0, bias), Tcb::default()],
        );
        let (l, r) = one_sided(|t| eval(&keys, t), 1.0, FD_STEP);
        assert!(
            close(l, want, 1e-3) && close(r, want, 1e-3),
            "bias {bias}: {l} {r}"
        );
    }
}

// 4. ----------------------------------------------------------------------

#[test]
fn non_uniform_spacing_is_c1_only_with_the_step_adjustment() {
    let times = [0.0, 0.4, 2.0, 2.5, 4.0];
    let values = [0.0, 1.0, -0.5, 2.0, 1.0];
    // Arbitrary tension and bias, zero continuity.
    let params = [
        tcb(0.2, 0.0, -0.3),
        tcb(-0.4, 0.0, 0.6),
        tcb(0.7, 0.0, 0.1),
        tcb(0.0, 0.0, -0.9),
        tcb(-0.5, 0.0, 0.3),
    ];
    let keys = scalar_keys(&times, &values, &params);
    let h = FD_STEP;
    let mut worst_jump_unadjusted = 0.0f32;
    for &tk in &times[1..4] {
        let (l, r) = one_sided(|t| eval(&keys, t), tk, h);
        assert!(close(l, r, 1e-3), "kink at {tk}: {l} vs {r}");
        let (l, r) = one_sided(|t| reference(&times, &values, &params, false, t), tk, h);
        worst_jump_unadjusted = worst_jump_unadjusted.max((l - r).abs());
    }
    // Raw KB tangents on these intervals jump by a lot at some key.
    assert!(worst_jump_unadjusted > 0.5, "{worst_jump_unadjusted}");
    // Under uniform spacing the two constructions coincide (adjustment = 1).
    let uniform = [0.0, 1.0, 2.0, 3.0, 4.0];
    for j in 0..=80 {
        let t = j as f32 / 20.0;
        let a = reference(&uniform, &values, &params, true, t);
        let b = reference(&uniform, &values, &params, false, t);
        assert!(close(a, b, 1e-5));
    }
}

// 5. ----------------------------------------------------------------------

fn key_posture(time: f32, root: Vec3, angles: &[Vec3], tcb: Tcb) -> KeyPosture {
    KeyPosture {
        time,
        posture: Posture {
            root_translation: root,
            angles: angles.to_vec(),
            blend: Vec::new(),
        },
        tension: tcb.tension,
        continuity: tcb.continuity,
        bias: tcb.bias,
    }
}

fn walk_keys() -> Vec<KeyPosture> {
    vec![
        key_posture(
            0.0,
            Vec3::new(0.0, 1.0, 0.0),
            &[Vec3::new(0.1, 0.0, -0.2), Vec3::new(0.0, 0.5, 0.0)],
            tcb(0.0, 0.0, 0.0),
        ),
        key_posture(
            0.4,
            Vec3::new(0.3, 1.1, 0.0),
            &[Vec3::new(0.6, -0.2, 0.1), Vec3::new(0.3, 0.1, -0.4)],
            tcb(0.3, 0.2, -0.1),
        ),
        key_posture(
            1.0,
            Vec3::new(0.7, 0.9, 0.1),
            &[Vec3::new(-0.3, 0.4, 0.0), Vec3::new(-0.2, 0.8, 0.2)],
            tcb(-0.2, 0.0, 0.5),
        ),
        key_posture(
            1.3,
            Vec3::new(1.0, 1.0, 0.0),
            &[Vec3::new(0.2, 0.1, 0.3), Vec3::new(0.1, 0.2, 0.0)],
            tcb(0.1, 0.0, 0.0),
        ),
    ]
}

#[test]
fn clamps_outside_the_range_and_handles_one_or_no_key() {
    let keys = walk_keys();
    assert_eq!(sample_posture(&[], 0.5), None);
    assert_eq!(sample_posture(&keys, -3.0).unwrap(), keys[0].posture);
    assert_eq!(sample_posture(&keys, 0.0).unwrap(), keys[0].posture);
    assert_eq!(sample_posture(&keys, 1.3).unwrap(), keys[3].posture);
    assert_eq!(sample_posture(&keys, 7.0).unwrap(), keys[3].posture);
    let zero = sample_velocity(&keys, 7.0, Wrap::Clamp).unwrap();
    assert_eq!(zero.root_translation, Vec3::ZERO);
    assert!(zero.angles.iter().all(|a| *a == Vec3::ZERO));
    for t in [-1.0, 0.0, 0.2, 5.0] {
        assert_eq!(sample_posture(&keys[1..2], t).unwrap(), keys[1].posture);
        assert_eq!(
            sample_posture_cyclic(&keys[1..2], t).unwrap(),
            keys[1].posture
        );
    }
    let scalar = scalar_keys(&[1.0, 2.0], &[3.0, 5.0], &[Tcb::default(); 2]);
    assert_eq!(eval(&scalar, 0.0), 3.0);
    assert_eq!(eval(&scalar, 9.0), 5.0);
    // Two default keys: a straight constant-speed line (one-sided end tangents).
    assert!(close(eval(&scalar, 1.25), 3.5, 1e-6));
}

#[test]
fn sample_posture_interpolates_every_joint_and_the_root() {
    let keys = walk_keys();
    let channel = |f: &dyn Fn(&Posture) -> f32| -> Vec<KbKey<f32>> {
        keys.iter()
            .map(|k| KbKey {
                time: k.time,
                value: f(&k.posture),
                tcb: k.tcb(),
            })
            .collect()
    };
    let mut off_linear = 0.0f32;
    for j in 0..=65 {
        let t = j as f32 * 0.02;
        let p = sample_posture(&keys, t).unwrap();
        let v = sample_velocity(&keys, t, Wrap::Clamp).unwrap();
        assert_eq!(p.angles.len(), 2);
        for axis in 0..3 {
            let root = channel(&|q: &Posture| q.root_translation[axis]);
            assert!(close(p.root_translation[axis], eval(&root, t), 1e-6));
            for joint in 0..2 {
                let ch = channel(&|q: &Posture| q.angles[joint][axis]);
                assert!(
                    close(p.angles[joint][axis], eval(&ch, t), 1e-6),
                    "t={t} joint {joint}"
                );
                let vel = kochanek_bartels_velocity(&ch, t, Wrap::Clamp).unwrap();
                assert!(close(v.angles[joint][axis], vel, 1e-5));
                // Differs from the old linear interpolation somewhere.
                let k = keys.iter().rposition(|k| k.time <= t).unwrap().min(2);
                let s = (t - keys[k].time) / (keys[k + 1].time - keys[k].time);
                let (a, b) = (
                    keys[k].posture.angles[joint][axis],
                    keys[k + 1].posture.angles[joint][axis],
                );
                off_linear = off_linear.max((p.angles[joint][axis] - (a + (b - a) * s)).abs());
            }
        }
    }
    assert!(off_linear > 0.02, "{off_linear}");
    // The velocity is the derivative of the posture.
    let f = |t: f32| sample_posture(&keys, t).unwrap().angles[1].y;
    let fd = (f(0.71) - f(0.69)) / 0.02;
    let v = sample_velocity(&keys, 0.7, Wrap::Clamp).unwrap().angles[1].y;
    assert!(close(fd, v, 2e-3), "{fd} vs {v}");
}

// 6. ----------------------------------------------------------------------

fn cycle_keys() -> Vec<KeyPosture> {
    let mut keys = walk_keys();
    let mut closing = keys[0].clone();
    closing.time = 1.6;
    keys.push(closing);
    keys
}

#[test]
fn cyclic_is_periodic_and_c1_across_the_wrap() {
    let keys = cycle_keys();
    let period = 1.6;
    for j in 0..=40 {
        let t = j as f32 * 0.04;
        let p = sample_posture_cyclic(&keys, t).unwrap();
        for q in [
            sample_posture_cyclic(&keys, t + period).unwrap(),
            sample_posture_cyclic(&keys, t - 2.0 * period).unwrap(),
        ] {
            assert!(
                (p.root_translation - q.root_translation)
                    .abs()
                    .max_element()
                    < 1e-5
            );
            for (a, b) in p.angles.iter().zip(&q.angles) {
                assert!((*a - *b).abs().max_element() < 1e-5, "t={t}: {a} vs {b}");
            }
        }
    }
    // Every key is hit, the closing one by the first key's posture.
    for (i, k) in keys.iter().enumerate() {
        let want = &keys[i % 4].posture;
        assert_eq!(
            &sample_posture_cyclic(&keys, k.time).unwrap(),
            want,
            "key {i}"
        );
    }
    // Derivative continuity across the wrap, channel by channel.
    let mut seam_speed = 0.0f32;
    for joint in 0..2 {
        for axis in 0..3 {
            let f = |t: f32| sample_posture_cyclic(&keys, t).unwrap().angles[joint][axis];
            let (l, r) = one_sided(f, period, FD_STEP);
            assert!(close(l, r, 1e-3), "joint {joint} axis {axis}: {l} vs {r}");
            seam_speed = seam_speed.max(l.abs());
            // Clamped sampling of the same keys has a one-sided end tangent
            // there, hence a different slope.
            let g = |t: f32| sample_posture(&keys, t).unwrap().angles[joint][axis];
            let (l_clamped, _) = one_sided(g, period, FD_STEP);
            if joint == 0 && axis == 0 {
                assert!((l_clamped - l).abs() > 0.05, "{l_clamped} vs {l}");
            }
        }
    }
    assert!(
        seam_speed > 0.1,
        "the seam is not trivially flat: {seam_speed}"
    );
    let v0 = sample_velocity(&keys, 0.0, Wrap::Cyclic).unwrap();
    let v1 = sample_velocity(&keys, period - 1e-6, Wrap::Cyclic).unwrap();
    for (a, b) in v0.angles.iter().zip(&v1.angles) {
        assert!((*a - *b).abs().max_element() < 1e-3, "{a} vs {b}");
    }
}

#[test]
fn cyclic_closing_key_takes_the_first_keys_posture() {
    let mut keys = cycle_keys();
    keys[4].posture.angles[0].x += 0.3; // a sloppy closing key
    let p = sample_posture_cyclic(&keys, 1.6).unwrap();
    assert_eq!(p, keys[0].posture);
    let just_before = sample_posture_cyclic(&keys, 1.6 - 1e-4).unwrap();
    assert!((just_before.angles[0].x - keys[0].posture.angles[0].x).abs() < 1e-2);
}

#[test]
fn blend_weights_are_keyed_channels_kept_on_the_simplex() {
    // Two targets: the first rises to 1 at the second key, the second to 1
    // at the third; the first key has no weights (keyed before the targets
    // existed: the base alone).
    let mut keys = walk_keys();
    keys.truncate(3);
    keys[1].posture.blend = vec![1.0, 0.0];
    keys[2].posture.blend = vec![0.0, 1.0];
    assert_eq!(sample_posture(&keys, 0.0).unwrap().blend, vec![0.0, 0.0]);
    // Through the keys exactly.
    assert_eq!(sample_posture(&keys, 0.4).unwrap().blend, vec![1.0, 0.0]);
    assert_eq!(sample_posture(&keys, 1.0).unwrap().blend, vec![0.0, 1.0]);
    // Between them the spline (with its overshoot) is put back on the
    // simplex: every weight in [0, 1], the sum at most 1.
    let mut rising = 0.0;
    for k in 0..=100 {
        let t = k as f32 / 100.0;
        let w = sample_posture(&keys, t).unwrap().blend;
        assert!(w.iter().all(|x| (0.0..=1.0).contains(x)), "t = {t}: {w:?}");
        assert!(w.iter().sum::<f32>() <= 1.0 + 1e-6, "t = {t}: {w:?}");
        if t <= 0.4 {
            assert!(w[0] >= rising - 1e-6, "rises to its key: {w:?} at {t}");
            rising = w[0];
        }
    }
    // Half way from nothing to the first target: near half of it, and its
    // velocity positive.
    let w = sample_posture(&keys, 0.2).unwrap().blend[0];
    assert!((0.3..0.7).contains(&w), "{w}");
    let v = sample_velocity(&keys, 0.2, Wrap::Clamp).unwrap().blend[0];
    assert!(v > 0.5 / 0.4, "{v}");
}
