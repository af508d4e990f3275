//! What drives the skeleton while the skin is simulated: a held posture, the
//! key postures (played by the spline), or an interactive change blended over a
//! frame so the joints never jump between two integrator stages.

use crate::anim::sample_posture;
use crate::character::{KeyPosture, Posture};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum SkeletonDriver {
    Still(Posture),
    Keys(Vec<KeyPosture>),
    /// Linear blend from one posture to another over [t0, t1].
    Blend {
        from: Posture,
        to: Posture,
        t0: f64,
        t1: f64,
    },
}

impl SkeletonDriver {
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
                }
            }
        }
    }
}
