//! The undo/redo gesture: turning back the clock with the left hand.
//!
//! A quick roll of the left hand about its pointing axis — at least
//! [`ROLL_ANGLE`] within [`ROLL_WINDOW`] — undoes when counter-clockwise
//! (turning the clock back, seen from behind the hand) and redoes when
//! clockwise. Flying the vehicle turns the hand slowly and rarely rolls it,
//! so a slow roll does nothing. After a gesture fires, the hand must roll
//! back most of the way (or be still for [`REARM_AFTER`]) before the next
//! one, so the return swing of a roll is not a second gesture.

use glam::{Quat, Vec3};
use std::collections::VecDeque;

/// The roll (rad) that fires the gesture: 70°.
pub const ROLL_ANGLE: f32 = 70.0 * std::f32::consts::PI / 180.0;
/// Within this time (s).
pub const ROLL_WINDOW: f64 = 0.5;
/// After firing, the hand re-arms when back within this roll (rad) of
/// where the gesture started...
pub const REARM_ROLL: f32 = 25.0 * std::f32::consts::PI / 180.0;
/// ...or after this long (s).
pub const REARM_AFTER: f64 = 1.0;

/// What the gesture asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HistoryGesture {
    /// Undo the last edit (a counter-clockwise roll).
    Undo,
    /// Redo the last undone edit (a clockwise roll).
    Redo,
}

/// The roll (rad) of `now` relative to `from` about `from`'s pointing axis
/// (−z), positive clockwise looking along it (the right-hand rule about −z).
pub fn roll_between(from: Quat, now: Quat) -> f32 {
    let mut r = now * from.inverse();
    if r.w < 0.0 {
        r = -r;
    }
    r.to_scaled_axis().dot(from * Vec3::NEG_Z)
}

/// The gesture recogniser for one hand.
#[derive(Clone, Debug, Default)]
pub struct RollGesture {
    /// Recent (time, orientation) samples, oldest first, within the window.
    recent: VecDeque<(f64, Quat)>,
    /// After a gesture: when it fired and the orientation it started from.
    fired: Option<(f64, Quat)>,
}

impl RollGesture {
    /// Feeds the hand's orientation at time `t` (s); returns a gesture when
    /// one completes on this sample.
    pub fn update(&mut self, t: f64, orientation: Quat) -> Option<HistoryGesture> {
        if let Some((at, start)) = self.fired {
            let back = roll_between(start, orientation).abs() < REARM_ROLL;
            if back || t - at >= REARM_AFTER {
                self.fired = None;
                self.recent.clear();
            } else {
                return None;
            }
        }
        // A time going backwards (a new session, a replayed script) starts over.
        if self.recent.back().is_some_and(|&(last, _)| t < last) {
            self.recent.clear();
        }
        self.recent.push_back((t, orientation));
        while self
            .recent
            .front()
            .is_some_and(|&(t0, _)| t - t0 > ROLL_WINDOW)
        {
            self.recent.pop_front();
        }
        let gesture = self.recent.iter().find_map(|&(_, q)| {
            let roll = roll_between(q, orientation);
            if roll <= -ROLL_ANGLE {
                Some((HistoryGesture::Undo, q))
            } else if roll >= ROLL_ANGLE {
                Some((HistoryGesture::Redo, q))
            } else {
                None
            }
        });
        let (g, start) = gesture?;
        self.fired = Some((t, start));
        Some(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand pointing forward-down, rolled by `roll` about its pointing axis.
    fn hand(roll: f32) -> Quat {
        let base = Quat::from_rotation_x(-0.4) * Quat::from_rotation_y(0.3);
        base * Quat::from_axis_angle(Vec3::NEG_Z, roll)
    }

    /// Rolls from `a` to `b` (rad) over `seconds`, at 90 Hz, from time `t0`;
    /// the gestures seen.
    fn roll(g: &mut RollGesture, t0: f64, a: f32, b: f32, seconds: f64) -> Vec<HistoryGesture> {
        let n = (seconds * 90.0).ceil() as usize;
        (0..=n)
            .filter_map(|k| {
                let s = k as f32 / n as f32;
                g.update(t0 + seconds * k as f64 / n as f64, hand(a + (b - a) * s))
            })
            .collect()
    }

    #[test]
    fn the_roll_is_measured_about_the_pointing_axis() {
        for r in [-1.2, -0.3, 0.0, 0.5, 1.4] {
            assert!((roll_between(hand(0.0), hand(r)) - r).abs() < 1e-5, "{r}");
        }
        // Pitching the hand is not a roll.
        let pitched = Quat::from_rotation_x(0.8) * hand(0.0);
        assert!(roll_between(hand(0.0), pitched).abs() < 0.3);
    }

    #[test]
    fn a_quick_counter_clockwise_roll_undoes_once_and_clockwise_redoes() {
        let mut g = RollGesture::default();
        assert!(roll(&mut g, 0.0, 0.0, 0.0, 0.5).is_empty(), "still");
        // 90° back in 0.3 s, held, then rolled back: one undo.
        let mut seen = roll(&mut g, 0.5, 0.0, -1.57, 0.3);
        seen.extend(roll(&mut g, 0.8, -1.57, -1.57, 0.2));
        seen.extend(roll(&mut g, 1.0, -1.57, 0.0, 0.3));
        assert_eq!(seen, vec![HistoryGesture::Undo]);
        // Then clockwise: one redo.
        let seen = roll(&mut g, 2.5, 0.0, 1.57, 0.3);
        assert_eq!(seen, vec![HistoryGesture::Redo]);
    }

    #[test]
    fn slow_or_small_rolls_do_nothing() {
        let mut g = RollGesture::default();
        assert!(roll(&mut g, 0.0, 0.0, -1.57, 3.0).is_empty(), "a slow roll");
        assert!(
            roll(&mut g, 3.0, -1.57, -0.7, 0.2).is_empty(),
            "50° quickly"
        );
    }

    #[test]
    fn two_quick_rolls_with_a_return_between_are_two_undos() {
        let mut g = RollGesture::default();
        let mut seen = roll(&mut g, 0.0, 0.0, -1.4, 0.25);
        seen.extend(roll(&mut g, 0.25, -1.4, 0.0, 0.25));
        seen.extend(roll(&mut g, 0.5, 0.0, -1.4, 0.25));
        assert_eq!(seen, vec![HistoryGesture::Undo, HistoryGesture::Undo]);
    }
}
