//! Key postures and their interpolation by Kochanek–Bartels splines (LEMAN
//! §6.4: the joint angles of key postures are interpolated with the splines
//! of Kochanek & Bartels 1984, reference 55).
//!
//! Every channel — the root translation and each component of every joint
//! angle — is an independent KB spline over the keys' times, sharing the keys'
//! tension/continuity/bias. The spline machinery lives in `spline`.

mod spline;
mod timeline;

pub use spline::{
    KbBlend, KbKey, KbValue, Knot, Tcb, Wrap, kb_blend, kochanek_bartels, kochanek_bartels_velocity,
};

pub use timeline::{Advanced, KEY_TIME_EPSILON, PlaybackMode, Timeline, Transport, key_at};

use crate::character::{KeyPosture, Posture};

impl Knot for KeyPosture {
    fn time(&self) -> f32 {
        self.time
    }
    fn tcb(&self) -> Tcb {
        Tcb {
            tension: self.tension,
            continuity: self.continuity,
            bias: self.bias,
        }
    }
}

/// The skeleton posture at time `t` on the KB spline through the key postures
/// (clamped to the first/last key outside their range, one-sided tangents at
/// the end keys). `None` without keys.
pub fn sample_posture(keys: &[KeyPosture], t: f32) -> Option<Posture> {
    sample(keys, t, Wrap::Clamp, false)
}

/// Like [`sample_posture`] for a looping motion such as a walk cycle: the
/// period is `last.time − first.time` and the last key, which should equal
/// the first, only closes the loop (its posture and parameters are replaced
/// by the first key's). `t` is wrapped into the period and tangents use the
/// wrapped neighbours, so the motion is C1 across the wrap.
pub fn sample_posture_cyclic(keys: &[KeyPosture], t: f32) -> Option<Posture> {
    sample(keys, t, Wrap::Cyclic, false)
}

/// The time derivative of the interpolated posture (rad/s per angle, m/s for
/// the root), in the same layout; zero outside a clamped key range.
pub fn sample_velocity(keys: &[KeyPosture], t: f32, wrap: Wrap) -> Option<Posture> {
    sample(keys, t, wrap, true)
}

fn sample(keys: &[KeyPosture], t: f32, wrap: Wrap, velocity: bool) -> Option<Posture> {
    let blend = kb_blend(keys, t, wrap)?;
    let eval = |f: &dyn Fn(usize) -> glam::Vec3| {
        if velocity {
            blend.velocity(f)
        } else {
            blend.value(f)
        }
    };
    // Joints present in every key that contributes (keys of a validated
    // character all have the skeleton's joint count).
    let joints = blend
        .indices
        .iter()
        .map(|&i| keys[i].posture.angles.len())
        .min()
        .unwrap_or(0);
    // Blendshape weights are channels like the angles (a key without them
    // holds the base: 0), then put back on the simplex, which a spline's
    // overshoot between keys may leave.
    let targets = blend
        .indices
        .iter()
        .map(|&i| keys[i].posture.blend.len())
        .max()
        .unwrap_or(0);
    let weight = |i: usize, k: usize| keys[i].posture.blend.get(k).copied().unwrap_or(0.0);
    let mut weights: Vec<f32> = (0..targets)
        .map(|k| eval(&|i| glam::Vec3::new(weight(i, k), 0.0, 0.0)).x)
        .collect();
    if !velocity {
        crate::character::clamp_to_simplex(&mut weights);
    }
    Some(Posture {
        root_translation: eval(&|i| keys[i].posture.root_translation),
        angles: (0..joints)
            .map(|j| eval(&|i| keys[i].posture.angles[j]))
            .collect(),
        blend: weights,
    })
}

#[cfg(test)]
mod cyclic_tests;
#[cfg(test)]
mod tests;
