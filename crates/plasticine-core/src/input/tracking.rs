//! Where poses come from: one tracking sample ([`TrackedPose`]) of the head
//! and hands, which parts of it were measured, and the [`Tracker`] a front
//! end reads them from (`OpenXR`, the desk's mouse, a script, a test).

use super::InputFrame;
use glam::{Quat, Vec3};
use std::time::Instant;

/// One tracking sample, in tracker space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrackedPose {
    /// Head (centre eye) position and orientation, tracker space.
    pub head: (Vec3, Quat),
    /// Hands and buttons; hand poses in tracker space. `time` is the session
    /// time the tools use for rates (liposuction).
    pub input: InputFrame,
    /// Increases with every sample.
    pub sequence: u64,
    /// When the sample was taken.
    pub sampled_at: Instant,
}

/// Which parts of the newest [`TrackedPose`] a tracker really measured. A
/// part it lost keeps its last pose in the sample (so a hand that leaves the
/// tracking volume stays where it was last seen rather than jumping).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrackedParts {
    /// Whether the head was tracked.
    pub head: bool,
    /// Whether the left hand was tracked.
    pub left: bool,
    /// Whether the right hand was tracked.
    pub right: bool,
}

impl TrackedParts {
    /// Head and both hands tracked.
    pub const ALL: TrackedParts = TrackedParts {
        head: true,
        left: true,
        right: true,
    };
    /// Nothing tracked.
    pub const NONE: TrackedParts = TrackedParts {
        head: false,
        left: false,
        right: false,
    };
}

/// Lets go of what a controller held when it lost tracking.
///
/// A hand the tracker lost keeps its last pose; if its trigger or buttons
/// stayed held, the tools would go on steering a gesture with a frozen pose
/// and then jump when tracking comes back. Instead the hand presses nothing
/// from the moment it is lost, so the gesture ends where the hand was last
/// seen, as one undo step; and it keeps pressing nothing until the user lets
/// go of everything, so coming back into view with the trigger still down is
/// not a new press.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LostHands {
    /// `[left, right]`: lost while holding, not let go since.
    let_go: [bool; 2],
    /// `[left, right]`: held something in the last sample the tools saw.
    held: [bool; 2],
}

impl LostHands {
    /// Applies the rule to one sample's `input`; returns the hands
    /// (`[left, right]`) lost while holding something in this sample, to
    /// tell the user once per loss. A hand counts as holding when the sample
    /// says so or when it held in the last sample: some runtimes (Monado)
    /// read every input of a lost controller as released.
    pub fn apply(&mut self, tracked: TrackedParts, input: &mut InputFrame) -> [bool; 2] {
        let mut newly = [false; 2];
        let hands = [
            (tracked.left, &mut input.left),
            (tracked.right, &mut input.right),
        ];
        for (k, (tracked, hand)) in hands.into_iter().enumerate() {
            let holds = hand.trigger > 0.0 || hand.buttons != 0;
            if !tracked && (holds || self.held[k]) && !self.let_go[k] {
                self.let_go[k] = true;
                newly[k] = true;
            }
            if tracked && !holds {
                self.let_go[k] = false;
            }
            if !tracked || self.let_go[k] {
                hand.trigger = 0.0;
                hand.buttons = 0;
            }
            self.held[k] = hand.trigger > 0.0 || hand.buttons != 0;
        }
        newly
    }
}

/// Where poses come from: `OpenXR`, a desk tracker, a script, a test.
pub trait Tracker {
    /// The newest pose. Called twice per frame: keep it cheap.
    fn sample(&mut self) -> TrackedPose;

    /// Which parts of the last [`Tracker::sample`] were measured; by default
    /// all of them (scripts, tests, the desk's own devices).
    fn tracked(&self) -> TrackedParts {
        TrackedParts::ALL
    }
}

impl<T: Tracker + ?Sized> Tracker for &mut T {
    fn sample(&mut self) -> TrackedPose {
        (**self).sample()
    }
    fn tracked(&self) -> TrackedParts {
        (**self).tracked()
    }
}

impl<T: Tracker + ?Sized> Tracker for Box<T> {
    fn sample(&mut self) -> TrackedPose {
        (**self).sample()
    }
    fn tracked(&self) -> TrackedParts {
        (**self).tracked()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::HandState;

    #[test]
    fn a_hand_lost_mid_gesture_lets_go_until_the_user_does() {
        let hand = |trigger: f32, buttons: u32| InputFrame {
            time: 0.0,
            left: HandState {
                pose: (Vec3::Y, Quat::IDENTITY),
                trigger: 0.5,
                buttons: 0b10,
            },
            right: HandState {
                pose: (Vec3::X, Quat::IDENTITY),
                trigger,
                buttons,
            },
        };
        let right_lost = TrackedParts {
            right: false,
            ..TrackedParts::ALL
        };
        let mut lost = LostHands::default();
        // Tracked and held: nothing changes.
        let mut f = hand(1.0, 0b1);
        assert_eq!(lost.apply(TrackedParts::ALL, &mut f), [false, false]);
        assert_eq!(f, hand(1.0, 0b1));
        // Lost while held: let go (said once), the pose kept, the left hand untouched.
        for newly in [true, false, false] {
            let mut f = hand(1.0, 0b1);
            assert_eq!(lost.apply(right_lost, &mut f), [false, newly]);
            assert_eq!((f.right.trigger, f.right.buttons), (0.0, 0));
            assert_eq!(f.right.pose, hand(1.0, 0b1).right.pose);
            assert_eq!(f.left, hand(1.0, 0b1).left);
        }
        // Back in view with the trigger still down: still no press.
        let mut f = hand(1.0, 0);
        assert_eq!(lost.apply(TrackedParts::ALL, &mut f), [false, false]);
        assert_eq!(f.right.trigger, 0.0);
        // Let go, then pressed again: the hand is the user's again.
        let mut f = hand(0.0, 0);
        lost.apply(TrackedParts::ALL, &mut f);
        let mut f = hand(1.0, 0);
        lost.apply(TrackedParts::ALL, &mut f);
        assert_eq!(f.right.trigger, 1.0);
        // Lost while held, where the runtime reads a lost controller's
        // inputs as released: the same (said once, and no press on return).
        for newly in [true, false] {
            let mut f = hand(0.0, 0);
            assert_eq!(lost.apply(right_lost, &mut f), [false, newly]);
        }
        let mut f = hand(1.0, 0);
        lost.apply(TrackedParts::ALL, &mut f);
        assert_eq!(f.right.trigger, 0.0, "back in view, trigger down: no press");
        let mut f = hand(0.0, 0);
        lost.apply(TrackedParts::ALL, &mut f);
        // Lost with nothing held: nothing to say.
        let mut f = hand(0.0, 0);
        assert_eq!(lost.apply(right_lost, &mut f), [false, false]);
    }
}
