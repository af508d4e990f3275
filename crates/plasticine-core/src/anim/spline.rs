//! Kochanek–Bartels interpolating splines (Kochanek & Bartels, "Interpolating
//! Splines with Local Tension, Continuity, and Bias Control", SIGGRAPH '84;
//! LEMAN reference 55).
//!
//! Between two keys the curve is a cubic Hermite segment. The tangents at key
//! `i` (value `P_i`, time `t_i`) are built from the incoming chord
//! `d_in = P_i − P_{i−1}` and outgoing chord `d_out = P_{i+1} − P_i` with the
//! key's tension `T`, continuity `C` and bias `B` (KB eq. 8–9):
//!
//! ```text
//! DS_i = (1−T)(1−C)(1+B)/2 · d_in + (1−T)(1+C)(1−B)/2 · d_out   (leaving  P_i)
//! DD_i = (1−T)(1+C)(1+B)/2 · d_in + (1−T)(1−C)(1−B)/2 · d_out   (arriving at P_i)
//! ```
//!
//! These are derivatives per unit *segment parameter* and assume equal key
//! spacing. With intervals `Δ_{i−1} = t_i − t_{i−1}` and `Δ_i = t_{i+1} − t_i`,
//! the time derivative leaving `P_i` is `DS_i / Δ_i` and the one arriving is
//! `DD_i / Δ_{i−1}`: for `C = 0` (so `DS_i = DD_i`) they differ whenever
//! `Δ_{i−1} ≠ Δ_i`, a velocity jump at the key. KB §"Adjustments for parameter
//! step size" therefore rescale
//!
//! ```text
//! DS_i ← DS_i · 2Δ_i     / (Δ_{i−1} + Δ_i)
//! DD_i ← DD_i · 2Δ_{i−1} / (Δ_{i−1} + Δ_i)
//! ```
//!
//! so both time derivatives become `2·DS_i / (Δ_{i−1} + Δ_i)` resp.
//! `2·DD_i / (Δ_{i−1} + Δ_i)` — equal when `C = 0`, i.e. the curve is C1 in
//! time at the key. (For `T = C = B = 0` this is the central difference
//! `(P_{i+1} − P_{i−1}) / (t_{i+1} − t_{i−1})`; with uniform spacing, the
//! Catmull–Rom spline.) This module works with those time derivatives directly.
//!
//! End conditions ([`Wrap::Clamp`]): the first and last key get a phantom
//! neighbour by linear extrapolation, `P_{−1} = 2P_0 − P_1` one interval
//! `Δ_0` earlier (likewise after the last key), so the missing chord equals
//! the existing one. The end tangent is then the one-sided chord slope scaled
//! by the key's parameters, `(1−T)(1−CB)·(P_1 − P_0)/Δ_0`: two keys with
//! default parameters give a straight, constant-speed motion, and tension 1
//! on an end key eases in/out from rest.
//!
//! [`Wrap::Cyclic`] instead treats the keys as one period of a loop (the last
//! key closes it), using the wrapped neighbours for every tangent.

use std::ops::{Add, Mul, Sub};

/// Values a spline can interpolate: anything closed under `+`, `−` and
/// scaling by `f32` (`f32`, `glam::Vec2`, `Vec3`, `Vec4`, …).
pub trait KbValue:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<f32, Output = Self>
{
}

impl<T> KbValue for T where T: Copy + Add<Output = T> + Sub<Output = T> + Mul<f32, Output = T> {}

/// Kochanek–Bartels shape parameters of one key, each meant to lie in [−1, 1];
/// all zero gives Catmull–Rom.
///
/// - tension: 1 flattens the tangent to zero (the curve stops at the key),
///   −1 doubles it (rounder, overshooting);
/// - continuity: ≠ 0 makes the incoming and outgoing tangents differ (a
///   deliberate corner);
/// - bias: 1 takes the tangent from the incoming chord (overshoot after the
///   key), −1 from the outgoing one (anticipation before it).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tcb {
    /// Tension `T`: 1 stops the curve at the key, −1 doubles the tangent.
    pub tension: f32,
    /// Continuity `C`: nonzero makes the incoming and outgoing tangents differ.
    pub continuity: f32,
    /// Bias `B`: 1 favours the incoming chord (overshoot), −1 the outgoing (anticipation).
    pub bias: f32,
}

impl Tcb {
    /// Weights of (incoming, outgoing) chord in the tangent leaving the key (KB `DS`).
    fn outgoing(self) -> (f32, f32) {
        let (t, c, b) = (self.tension, self.continuity, self.bias);
        (
            0.5 * (1.0 - t) * (1.0 - c) * (1.0 + b),
            0.5 * (1.0 - t) * (1.0 + c) * (1.0 - b),
        )
    }

    /// Weights of (incoming, outgoing) chord in the tangent arriving at the key (KB `DD`).
    fn incoming(self) -> (f32, f32) {
        let (t, c, b) = (self.tension, self.continuity, self.bias);
        (
            0.5 * (1.0 - t) * (1.0 + c) * (1.0 + b),
            0.5 * (1.0 - t) * (1.0 - c) * (1.0 - b),
        )
    }
}

/// How the spline behaves at and beyond its first and last key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wrap {
    /// Constant (first/last key value, zero velocity) outside the key range;
    /// one-sided end tangents (see the module docs).
    #[default]
    Clamp,
    /// Periodic with period `last.time − first.time`. The last key only marks
    /// where the loop closes: its value and parameters are taken from the
    /// first key, so the motion is exactly periodic and C1 across the wrap
    /// (C0 only if the first key has continuity ≠ 0).
    Cyclic,
}

/// A key's time and shape parameters: what the spline needs besides values.
pub trait Knot {
    /// The key's time; times are strictly increasing along a spline.
    fn time(&self) -> f32;
    /// The key's tension, continuity and bias.
    fn tcb(&self) -> Tcb;
}

/// A key of a spline over values of type `T`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KbKey<T> {
    /// The key's time; times are strictly increasing along a spline.
    pub time: f32,
    /// The value the spline passes through at `time`.
    pub value: T,
    /// The key's tension, continuity and bias.
    pub tcb: Tcb,
}

impl<T> Knot for KbKey<T> {
    fn time(&self) -> f32 {
        self.time
    }
    fn tcb(&self) -> Tcb {
        self.tcb
    }
}

/// The spline at one time as linear combinations of at most four key values:
/// `value = Σ value_weights[j] · P[indices[j]]`, likewise the time derivative.
///
/// The weights depend only on key times and parameters, so one blend serves
/// every channel of a multi-channel key (e.g. all joint angles of a posture).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KbBlend {
    /// Indices of the (up to four) keys whose values are combined.
    pub indices: [usize; 4],
    /// Weight of each key in `indices` for the interpolated value.
    pub value_weights: [f32; 4],
    /// Weight of each key in `indices` for the time derivative.
    pub velocity_weights: [f32; 4],
}

impl KbBlend {
    /// A constant: key `i` with zero velocity.
    fn hold(i: usize) -> Self {
        Self {
            indices: [i; 4],
            value_weights: [0.0, 1.0, 0.0, 0.0],
            velocity_weights: [0.0; 4],
        }
    }

    /// The interpolated value, `value_of(i)` giving key `i`'s value.
    pub fn value<T: KbValue>(&self, value_of: impl Fn(usize) -> T) -> T {
        combine(&self.indices, &self.value_weights, value_of)
    }

    /// The time derivative (per unit of key time).
    pub fn velocity<T: KbValue>(&self, value_of: impl Fn(usize) -> T) -> T {
        combine(&self.indices, &self.velocity_weights, value_of)
    }
}

fn combine<T: KbValue>(indices: &[usize; 4], w: &[f32; 4], value_of: impl Fn(usize) -> T) -> T {
    let mut acc = value_of(indices[1]) * w[1];
    for j in [0, 2, 3] {
        if w[j] != 0.0 {
            acc = acc + value_of(indices[j]) * w[j];
        }
    }
    acc
}

/// The blend of the spline through `keys` (times strictly increasing) at
/// time `t`; `None` without keys. Exactly at an interior key the velocity is
/// the outgoing (right) derivative.
pub fn kb_blend<K: Knot>(keys: &[K], t: f32, wrap: Wrap) -> Option<KbBlend> {
    let n = keys.len();
    let first = keys.first()?.time();
    let last = keys[n - 1].time();
    let period = last - first;
    if n == 1 || period.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return Some(KbBlend::hold(0));
    }
    let t = match wrap {
        Wrap::Clamp if t < first => return Some(KbBlend::hold(0)),
        Wrap::Clamp if t > last => return Some(KbBlend::hold(n - 1)),
        Wrap::Clamp => t,
        Wrap::Cyclic => first + (t - first).rem_euclid(period),
    };
    // Segment k: keys k → k+1, the last segment also owning t == last.
    let k = keys.partition_point(|key| key.time() <= t).clamp(1, n - 1) - 1;

    // Key j ∈ [k−1, k+2] seen through the wrap: (stored index or None for a
    // clamped phantom, unwrapped time).
    let m = n - 1; // distinct keys in a cycle
    let at = |j: isize| -> (Option<usize>, f32) {
        match wrap {
            Wrap::Clamp if j < 0 => (None, 2.0 * first - keys[1].time()),
            Wrap::Clamp if j as usize >= n => (None, 2.0 * last - keys[n - 2].time()),
            Wrap::Clamp => (Some(j as usize), keys[j as usize].time()),
            Wrap::Cyclic if j < 0 => (Some(m - 1), keys[m - 1].time() - period),
            Wrap::Cyclic if j as usize >= n => (Some(1 % m), keys[1].time() + period),
            Wrap::Cyclic => (Some(j as usize % m), keys[j as usize].time()),
        }
    };
    let k = k as isize;
    let slots = [at(k - 1), at(k), at(k + 1), at(k + 2)];
    let idx = |s: usize| slots[s].0.expect("segment keys are stored keys");
    let time = |s: usize| slots[s].1;
    let tcb = |s: usize| keys[idx(s)].tcb();

    // Time derivatives, as coefficients over the four slots.
    // Leaving key k: (a·d_in + b·d_out) · 2/(Δ_{k−1} + Δ_k).
    let (a, b) = tcb(1).outgoing();
    let s = 2.0 / (time(2) - time(0));
    let (a, b) = (a * s, b * s);
    let leave = [-a, a - b, b, 0.0];
    // Arriving at key k+1: (c·d_in + d·d_out) · 2/(Δ_k + Δ_{k+1}).
    let (c, d) = tcb(2).incoming();
    let s = 2.0 / (time(3) - time(1));
    let (c, d) = (c * s, d * s);
    let arrive = [0.0, -c, c - d, d];

    // Cubic Hermite on the segment, parameter u ∈ [0, 1].
    let h = time(2) - time(1);
    let u = ((t - time(1)) / h).clamp(0.0, 1.0);
    let (u2, u3) = (u * u, u * u * u);
    let (h00, h10, h01, h11) = (
        2.0 * u3 - 3.0 * u2 + 1.0,
        u3 - 2.0 * u2 + u,
        3.0 * u2 - 2.0 * u3,
        u3 - u2,
    );
    let (d00, d10, d01, d11) = (
        6.0 * (u2 - u),
        3.0 * u2 - 4.0 * u + 1.0,
        6.0 * (u - u2),
        3.0 * u2 - 2.0 * u,
    );
    let mut value = [0.0, h00, h01, 0.0];
    let mut velocity = [0.0, d00 / h, d01 / h, 0.0];
    for j in 0..4 {
        value[j] += h * (h10 * leave[j] + h11 * arrive[j]);
        velocity[j] += d10 * leave[j] + d11 * arrive[j];
    }

    // Fold clamped phantoms into the stored keys: P_{−1} = 2P_0 − P_1 and
    // P_n = 2P_{n−1} − P_{n−2}.
    let mut indices = [0; 4];
    for (s, slot) in slots.iter().enumerate() {
        indices[s] = slot.0.unwrap_or(idx(if s == 0 { 1 } else { 2 }));
    }
    for w in [&mut value, &mut velocity] {
        if slots[0].0.is_none() {
            w[1] += 2.0 * w[0];
            w[2] -= w[0];
            w[0] = 0.0;
        }
        if slots[3].0.is_none() {
            w[2] += 2.0 * w[3];
            w[1] -= w[3];
            w[3] = 0.0;
        }
    }
    Some(KbBlend {
        indices,
        value_weights: value,
        velocity_weights: velocity,
    })
}

/// The Kochanek–Bartels spline through `keys` (times strictly increasing) at
/// time `t`; `None` without keys.
pub fn kochanek_bartels<T: KbValue>(keys: &[KbKey<T>], t: f32, wrap: Wrap) -> Option<T> {
    kb_blend(keys, t, wrap).map(|b| b.value(|i| keys[i].value))
}

/// The time derivative of [`kochanek_bartels`] (zero outside a clamped range).
pub fn kochanek_bartels_velocity<T: KbValue>(keys: &[KbKey<T>], t: f32, wrap: Wrap) -> Option<T> {
    kb_blend(keys, t, wrap).map(|b| b.velocity(|i| keys[i].value))
}
