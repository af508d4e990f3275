//! Pushing the character with the right hand (Galoppo eq. 3.19: a moving
//! obstacle): while the push is held (the desk's Shift + right mouse
//! button, a headset's tool-hand thumbstick click) a capsule on the hand,
//! along the wand behind its tip, moves with it, and the simulation
//! thread holds the skins out of it and lets a responding skeleton be
//! pushed by it ([`HandPush`] messages). Letting go ends the push.

use super::sim_thread::HandPush;
use crate::input::{HandState, buttons};
use glam::Vec3;
use std::time::Instant;

/// The push capsule: a fist's radius, a hand's length behind the tip (m).
pub const PUSH_RADIUS: f32 = 0.04;
/// See [`PUSH_RADIUS`].
pub const PUSH_LENGTH: f32 = 0.1;
/// The fastest a hand is taken to move (m/s): a tracking jump is not a
/// blow.
pub const PUSH_MAX_SPEED: f32 = 5.0;
/// Each frame's share of the velocity estimate (the rest is the last one):
/// tracking jitter is smoothed over a few frames.
const VELOCITY_SHARE: f32 = 0.5;

/// Whether a hand's `buttons` ask to push.
pub fn pushing(pressed: u32) -> bool {
    pressed & (buttons::PUSH | buttons::THUMBSTICK) != 0
}

/// The right hand's push gesture.
#[derive(Clone, Copy, Debug, Default)]
pub struct FleshPusher {
    /// While pushing: the tip and the time of the last frame, and the
    /// velocity estimate.
    last: Option<(Vec3, Instant, Vec3)>,
}

impl FleshPusher {
    /// Whether the hand is pushing now.
    pub fn is_pushing(&self) -> bool {
        self.last.is_some()
    }

    /// The message this frame's hand (world space) at `now` sends, if any:
    /// `Some(Some(push))` while pushing, `Some(None)` when it stops.
    pub fn update(&mut self, hand: &HandState, now: Instant) -> Option<Option<HandPush>> {
        if !pushing(hand.buttons) {
            return self.last.take().map(|_| None);
        }
        let (tip, orientation) = hand.pose;
        let velocity = match self.last {
            Some((before, then, v)) => {
                let dt = now.saturating_duration_since(then).as_secs_f32();
                if dt > 1e-4 {
                    let measured = ((tip - before) / dt).clamp_length_max(PUSH_MAX_SPEED);
                    v.lerp(measured, VELOCITY_SHARE)
                } else {
                    v
                }
            }
            None => Vec3::ZERO,
        };
        self.last = Some((tip, now, velocity));
        let dir = (orientation * Vec3::NEG_Z).normalize_or(Vec3::NEG_Z);
        Some(Some(HandPush {
            a: tip - dir * PUSH_LENGTH,
            b: tip,
            radius: PUSH_RADIUS,
            velocity,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;
    use std::time::Duration;

    fn hand(at: Vec3, push: bool) -> HandState {
        HandState {
            pose: (at, Quat::IDENTITY),
            buttons: if push { buttons::PUSH } else { 0 },
            ..HandState::at(at)
        }
    }

    #[test]
    fn a_push_follows_the_hand_with_its_velocity_and_ends_on_release() {
        let mut p = FleshPusher::default();
        let t0 = Instant::now();
        assert_eq!(p.update(&hand(Vec3::ZERO, false), t0), None);
        let Some(Some(first)) = p.update(&hand(Vec3::ZERO, true), t0) else {
            panic!("a push starts");
        };
        // Along the wand (−z), behind the tip, still at first.
        assert_eq!(first.b, Vec3::ZERO);
        assert!((first.a - Vec3::new(0.0, 0.0, PUSH_LENGTH)).length() < 1e-6);
        assert_eq!(first.velocity, Vec3::ZERO);
        // 1 cm in 10 ms: 1 m/s, half of it taken this frame.
        let t1 = t0 + Duration::from_millis(10);
        let Some(Some(moved)) = p.update(&hand(Vec3::new(0.01, 0.0, 0.0), true), t1) else {
            panic!("the push goes on");
        };
        assert!((moved.velocity.x - 0.5).abs() < 1e-3, "{}", moved.velocity);
        // A tracking jump of a metre in 10 ms is taken as at most 5 m/s.
        let t2 = t1 + Duration::from_millis(10);
        let Some(Some(jump)) = p.update(&hand(Vec3::new(1.0, 0.0, 0.0), true), t2) else {
            panic!("the push goes on");
        };
        assert!(jump.velocity.length() <= 0.5 + 0.5 * PUSH_MAX_SPEED + 1e-3);
        assert!(p.is_pushing());
        assert_eq!(p.update(&hand(Vec3::X, false), t2), Some(None));
        assert!(!p.is_pushing());
        assert_eq!(p.update(&hand(Vec3::X, false), t2), None);
    }
}
