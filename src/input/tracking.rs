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
