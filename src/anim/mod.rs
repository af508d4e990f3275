//! Key postures and their interpolation by Kochanek–Bartels splines.
//!
//! PROVISIONAL: linear interpolation; the spline implementation replaces this file.

use crate::character::{KeyPosture, Posture};

/// The skeleton posture at time `t` interpolated through the key postures
/// (clamped to the first/last key outside their range). `None` without keys.
pub fn sample_posture(keys: &[KeyPosture], t: f32) -> Option<Posture> {
    let first = keys.first()?;
    if keys.len() == 1 || t <= first.time {
        return Some(first.posture.clone());
    }
    let last = keys.last()?;
    if t >= last.time {
        return Some(last.posture.clone());
    }
    let k = keys.windows(2).position(|w| t < w[1].time)?;
    let (a, b) = (&keys[k], &keys[k + 1]);
    let s = (t - a.time) / (b.time - a.time);
    Some(Posture {
        root_translation: a
            .posture
            .root_translation
            .lerp(b.posture.root_translation, s),
        angles: a
            .posture
            .angles
            .iter()
            .zip(&b.posture.angles)
            .map(|(x, y)| x.lerp(*y, s))
            .collect(),
    })
}
