//! Precision mode: the hand's motion scaled down and smoothed for fine work,
//! as VR modelling tools offer. While it is on, the tool tip moves a fraction
//! of the hand's motion from where it was when precision was switched on
//! (so switching it on never makes the tip jump), its rotation likewise, and
//! an exponential filter takes out tremor.

use super::{HandState, InputFrame};
use glam::{Quat, Vec3};

/// Fraction of the hand's motion the tip follows.
pub const PRECISION_SCALE: f32 = 0.25;
/// Time constant (s) of the smoothing.
pub const PRECISION_SMOOTHING: f32 = 0.06;

#[derive(Clone, Copy, Debug, PartialEq)]
struct Anchor {
    hand: (Vec3, Quat),
    tip: (Vec3, Quat),
}

/// The right hand's precision filter.
#[derive(Clone, Debug, PartialEq)]
pub struct Precision {
    /// Whether precision mode is on.
    pub enabled: bool,
    /// Fraction of the hand's motion the tip follows.
    pub scale: f32,
    /// Time constant of the smoothing, in s (0: none).
    pub smoothing: f32,
    anchor: Option<Anchor>,
    last: Option<((Vec3, Quat), f64)>,
}

impl Default for Precision {
    fn default() -> Self {
        Self {
            enabled: false,
            scale: PRECISION_SCALE,
            smoothing: PRECISION_SMOOTHING,
            anchor: None,
            last: None,
        }
    }
}

impl Precision {
    /// The frame the tools see: `frame` with the right hand filtered while
    /// precision is on, unchanged otherwise.
    pub fn apply(&mut self, frame: &InputFrame) -> InputFrame {
        if !self.enabled {
            self.anchor = None;
            self.last = None;
            return *frame;
        }
        let hand = frame.right.pose;
        let anchor = *self.anchor.get_or_insert(Anchor { hand, tip: hand });
        let delta = hand.1 * anchor.hand.1.inverse();
        let target = (
            anchor.tip.0 + (hand.0 - anchor.hand.0) * self.scale,
            (Quat::IDENTITY.slerp(delta, self.scale) * anchor.tip.1).normalize(),
        );
        let tip = match self.last {
            Some((last, t)) => {
                let dt = (frame.time - t).max(0.0) as f32;
                let a = if self.smoothing > 0.0 {
                    1.0 - (-dt / self.smoothing).exp()
                } else {
                    1.0
                };
                (last.0.lerp(target.0, a), last.1.slerp(target.1, a))
            }
            None => target,
        };
        self.last = Some((tip, frame.time));
        InputFrame {
            right: HandState {
                pose: tip,
                ..frame.right
            },
            ..*frame
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(t: f64, p: Vec3) -> InputFrame {
        InputFrame {
            time: t,
            right: HandState::at(p),
            left: HandState::default(),
        }
    }

    #[test]
    fn switching_on_does_not_move_the_tip_and_motion_is_scaled() {
        let mut f = Precision {
            enabled: true,
            smoothing: 0.0,
            ..Default::default()
        };
        let start = Vec3::new(0.1, 1.0, -0.3);
        assert_eq!(f.apply(&frame(0.0, start)).right.position(), start);
        let moved = f.apply(&frame(0.1, start + Vec3::new(0.04, 0.0, 0.0)));
        assert!((moved.right.position() - (start + Vec3::new(0.01, 0.0, 0.0))).length() < 1e-6);
    }

    #[test]
    fn the_tip_settles_on_the_scaled_target_and_tremor_is_damped() {
        let mut f = Precision {
            enabled: true,
            ..Default::default()
        };
        let start = Vec3::ZERO;
        f.apply(&frame(0.0, start));
        // A 2 mm, 45 Hz tremor on a still hand, sampled at 90 Hz.
        let mut worst: f32 = 0.0;
        for k in 1..=180 {
            let jitter = if k % 2 == 0 { 0.002 } else { -0.002 };
            let out = f.apply(&frame(k as f64 / 90.0, Vec3::new(jitter, 0.0, 0.0)));
            if k > 90 {
                worst = worst.max(out.right.position().x.abs());
            }
        }
        // Scaling alone gives 0.5 mm; the filter takes it well below.
        assert!(worst < 0.2e-3, "tremor left at the tip: {worst} m");
        // A real move is followed to the scaled target.
        let mut last = Vec3::ZERO;
        for k in 181..=300 {
            last = f
                .apply(&frame(k as f64 / 90.0, Vec3::new(0.1, 0.0, 0.0)))
                .right
                .position();
        }
        assert!((last.x - 0.025).abs() < 1e-4, "settled at {last}");
    }

    #[test]
    fn off_passes_the_hand_through_and_forgets_the_anchor() {
        let mut f = Precision::default();
        let p = Vec3::new(0.3, 1.2, 0.0);
        assert_eq!(f.apply(&frame(0.0, p)).right.position(), p);
        f.enabled = true;
        f.apply(&frame(0.1, p));
        f.enabled = false;
        let q = Vec3::new(0.5, 1.0, 0.0);
        assert_eq!(f.apply(&frame(0.2, q)).right.position(), q);
        f.enabled = true;
        assert_eq!(
            f.apply(&frame(0.3, q)).right.position(),
            q,
            "re-anchored where the hand is"
        );
    }
}
