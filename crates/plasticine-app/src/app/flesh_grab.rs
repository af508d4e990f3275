//! Grabbing the FEM flesh with the right hand (Capell §4.4): while
//! the grip is held (a headset's squeeze, the desk's right mouse button) the
//! flesh point picked along the wand follows the hand, through the
//! simulation thread's [`FleshGrab`] messages; letting go releases it.
//!
//! The pick is against the muscles where the snapshot's flesh has put them:
//! the hand tip if it is inside a muscle, else the nearest muscle hit along
//! the wand's line (from behind the tip, so on the desk, where the tip is a
//! cursor at the wheel's depth, a muscle in front of the cursor is hit too).

use super::sim_thread::FleshGrab;
use crate::fem::Pull;
use crate::input::{HandState, buttons};
use crate::kinematics::PosedBody;
use crate::snapshot::SceneSnapshot;
use glam::Vec3;

/// How far behind the tip the pick ray starts, and its length (m).
const PICK_BACK: f32 = 2.0;
const PICK_LENGTH: f32 = 4.0;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum State {
    #[default]
    Open,
    /// Holding the flesh: the point grabbed at `at` sits at hand + offset,
    /// now `to`.
    Holding { offset: Vec3, at: Vec3, to: Vec3 },
    /// The grip closed on nothing: wait for it to open.
    Missed,
}

/// The right hand's grab gesture.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FleshGrabber {
    state: State,
    /// The A button was down last frame (its press keeps a morph target).
    a_down: bool,
}

impl FleshGrabber {
    /// Whether the grip is holding a flesh point now.
    pub fn is_holding(&self) -> bool {
        matches!(self.state, State::Holding { .. })
    }

    /// The grab as a pull (where the point was grabbed, where it is held
    /// now), while the grip holds the flesh.
    pub fn pull(&self) -> Option<Pull> {
        match self.state {
            State::Holding { at, to, .. } => Some(Pull { at, to }),
            _ => None,
        }
    }

    /// Whether this frame's hand pressed A while holding the flesh: keep
    /// its pulled shape as a morph target (Galoppo §5.2).
    pub fn keep_pressed(&mut self, hand: &HandState) -> bool {
        let down = hand.buttons & buttons::A != 0;
        let pressed = down && !self.a_down;
        self.a_down = down;
        pressed && self.is_holding()
    }

    /// The message this frame's hand (world space) sends, if any. Nothing
    /// happens for a character without FEM flesh.
    pub fn update(&mut self, hand: &HandState, snapshot: &SceneSnapshot) -> Option<FleshGrab> {
        let gripped = hand.buttons & buttons::GRIP != 0;
        let tip = hand.pose.0;
        match (self.state, gripped) {
            (State::Open, true) => {
                let at = pick(hand, snapshot);
                self.state = match at {
                    Some(p) => State::Holding {
                        offset: p - tip,
                        at: p,
                        to: p,
                    },
                    None => State::Missed,
                };
                at.map(|at| FleshGrab::Start { at })
            }
            (State::Holding { offset, at, .. }, true) => {
                let to = tip + offset;
                self.state = State::Holding { offset, at, to };
                Some(FleshGrab::Move { hand: to })
            }
            (State::Holding { .. }, false) => {
                self.state = State::Open;
                Some(FleshGrab::Release)
            }
            (State::Missed, false) => {
                self.state = State::Open;
                None
            }
            (State::Open, false) | (State::Missed, true) => None,
        }
    }
}

/// The flesh point under the hand, on the muscles as the flesh placed them.
pub fn pick(hand: &HandState, snapshot: &SceneSnapshot) -> Option<Vec3> {
    let flesh = snapshot.flesh.as_deref()?;
    let c = &snapshot.character;
    if flesh.muscle_offsets.len() != c.muscles.len()
        || snapshot.posture.angles.len() != c.skeleton.joints.len()
    {
        return None;
    }
    let body = PosedBody::with_muscle_offsets(c, &snapshot.posture, &flesh.muscle_offsets);
    let (tip, orientation) = hand.pose;
    if body.distance_to_muscles(tip).is_some_and(|(d, _)| d <= 0.0) {
        return Some(tip);
    }
    let dir = (orientation * Vec3::NEG_Z).normalize_or_zero();
    if dir == Vec3::ZERO {
        return None;
    }
    body.ray_cast(tip - dir * PICK_BACK, dir, PICK_LENGTH)
        .map(|(_, _, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::character::{FemFlesh, Flesh};
    use crate::fem::FleshSim;
    use glam::Quat;
    use std::sync::Arc;

    fn snapshot() -> SceneSnapshot {
        let mut c = crate::samples::bare("penguin").unwrap();
        c.flesh = Flesh::Fem(FemFlesh::default());
        let rest = c.skeleton.rest_posture();
        let flesh = FleshSim::new(&c, &rest, 0.0).unwrap();
        let pose = flesh.pose(&c, &rest, 0.0);
        let mut s = SceneSnapshot::of(Arc::new(c), rest, 1);
        s.flesh = Some(Arc::new(pose));
        s
    }

    fn hand(at: Vec3, grip: bool) -> HandState {
        HandState {
            // The wand points along −z: towards the penguin from in front.
            pose: (at, Quat::IDENTITY),
            trigger: 0.0,
            buttons: if grip { buttons::GRIP } else { 0 },
        }
    }

    /// Grip on the belly: start at the surface hit, move with the hand
    /// keeping the offset, release on let-go; a grip on air grabs nothing
    /// until it opens again.
    #[test]
    fn the_grip_grabs_moves_and_releases() {
        let s = snapshot();
        let mut g = FleshGrabber::default();
        let front = Vec3::new(0.0, 0.2, 0.5);
        assert_eq!(g.update(&hand(front, false), &s), None);
        let Some(FleshGrab::Start { at }) = g.update(&hand(front, true), &s) else {
            panic!("no grab on the belly");
        };
        // The belly (radius 0.12 about the belly joint) faces +z.
        assert!(
            (at.z - 0.12).abs() < 0.02 && (at.y - 0.2).abs() < 1e-4,
            "{at}"
        );
        let moved = front + Vec3::new(0.0, 0.0, 0.03);
        let Some(FleshGrab::Move { hand: held }) = g.update(&hand(moved, true), &s) else {
            panic!("the grab did not follow the hand");
        };
        assert!(
            held.distance(at + Vec3::new(0.0, 0.0, 0.03)) < 1e-6,
            "{held}"
        );
        assert_eq!(g.update(&hand(moved, false), &s), Some(FleshGrab::Release));
        assert!(!g.is_holding());
        let air = Vec3::new(3.0, 3.0, 3.0);
        assert_eq!(g.update(&hand(air, true), &s), None);
        assert_eq!(
            g.update(&hand(front, true), &s),
            None,
            "a missed grip grabs later"
        );
        assert_eq!(g.update(&hand(front, false), &s), None);
        assert!(matches!(
            g.update(&hand(front, true), &s),
            Some(FleshGrab::Start { .. })
        ));
        // Kinematic flesh: nothing to grab.
        let mut k = SceneSnapshot::of(s.character.clone(), s.posture.clone(), 1);
        k.flesh = None;
        assert_eq!(FleshGrabber::default().update(&hand(front, true), &k), None);
    }
}
