//! What drives the skeleton while the skin is simulated: a held posture, the
//! key postures (played by the spline), or an interactive change blended over a
//! frame so the joints never jump between two integrator stages.

use crate::anim::sample_posture;
use crate::character::{KeyPosture, Posture};
use serde::{Deserialize, Serialize};

/// Where the skeleton's posture comes from at each simulated time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SkeletonDriver {
    /// The same posture at every time.
    Still(Posture),
    /// The KB spline through these key postures (at least one), clamped at the ends.
    Keys(Vec<KeyPosture>),
    /// Linear blend from one posture to another over [t0, t1].
    Blend {
        /// The posture the blend starts from.
        from: Posture,
        /// The posture the blend ends at (held after `t1`).
        to: Posture,
        /// Time the blend starts (s).
        t0: f64,
        /// Time the blend ends (s).
        t1: f64,
    },
}

impl SkeletonDriver {
    /// The skeleton posture at simulated time `t` (s).
    pub fn posture_at(&self, t: f64) -> Posture {
        match self {
            SkeletonDriver::Still(p) => p.clone(),
            SkeletonDriver::Keys(keys) => {
                sample_posture(keys, t as f32).expect("Keys driver is built with at least one key")
            }
            SkeletonDriver::Blend { from, to, t0, t1 } => {
                let s = if t1 > t0 {
                    ((t - t0) / (t1 - t0)).clamp(0.0, 1.0) as f32
                } else {
                    1.0
                };
                Posture {
                    root_translation: from.root_translation.lerp(to.root_translation, s),
                    angles: from
                        .angles
                        .iter()
                        .zip(&to.angles)
                        .map(|(a, b)| a.lerp(*b, s))
                        .collect(),
                    blend: crate::character::lerp_weights(&from.blend, &to.blend, s),
                }
            }
        }
    }
}
