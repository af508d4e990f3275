//! What the hands do to the simulation: grab the FEM flesh (Capell §4.4),
//! push the character with a moving capsule (Galoppo eq. 3.19), and the
//! ground a responding skeleton stands on, kept through edits.

use crate::contact::{Capsule, GroundDrop};
use crate::skin::Simulation;
use glam::Vec3;

/// A hand grabbing the flesh (one grab at a time).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FleshGrab {
    /// Takes hold of the flesh at a world point of its current pose.
    Start {
        /// The flesh point taken hold of (world space).
        at: Vec3,
    },
    /// The hand moved: the held point follows it.
    Move {
        /// Where the held point is to go (world space).
        hand: Vec3,
    },
    /// Lets go.
    Release,
}

/// The hand's push: a capsule from `a` to `b` of `radius` (world space),
/// moving at `velocity`, from now until the next push message.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HandPush {
    /// The capsule's back end (towards the wrist).
    pub a: Vec3,
    /// The capsule's front end (the tip).
    pub b: Vec3,
    /// Its radius, m.
    pub radius: f32,
    /// The hand's velocity, m/s.
    pub velocity: Vec3,
}

/// The hands' hold on the simulation, and the ground it stands on.
#[derive(Debug, Default)]
pub(super) struct Hands {
    /// The flesh grab held by the hand, if any.
    grab: Option<u64>,
    /// The ground a responding skeleton stands on, asked for by the front
    /// end: made again when an edit rebuilds the flesh without it.
    ground: Option<GroundDrop>,
    /// The push has been said to leave a kinematic skeleton standing.
    told_kinematic: bool,
}

impl Hands {
    /// Applies a grab message; returns a sentence for the user, if any.
    pub(super) fn grab(&mut self, sim: Option<&mut Simulation>, g: FleshGrab) -> Option<String> {
        let flesh = sim?.flesh_mut()?;
        match g {
            FleshGrab::Start { at } => {
                if let Some(old) = self.grab.take() {
                    flesh.release(old);
                }
                self.grab = flesh.grab(at);
                if self.grab.is_none() {
                    return Some(format!(
                        "nothing to grab at ({:.3}, {:.3}, {:.3}): the point is outside the flesh",
                        at.x, at.y, at.z
                    ));
                }
            }
            FleshGrab::Move { hand } => {
                if let Some(id) = self.grab {
                    flesh.move_grab(id, hand);
                }
            }
            FleshGrab::Release => {
                if let Some(id) = self.grab.take() {
                    flesh.release(id);
                }
            }
        }
        None
    }

    /// Applies a push message (none: the hand stopped pushing); returns a
    /// sentence for the user, if any.
    pub(super) fn push(
        &mut self,
        sim: Option<&mut Simulation>,
        p: Option<HandPush>,
    ) -> Option<String> {
        let sim = sim?;
        let pushers = p
            .map(|p| {
                Capsule::hand(
                    p.a.as_dvec3(),
                    p.b.as_dvec3(),
                    f64::from(p.radius),
                    p.velocity.as_dvec3(),
                    sim.time(),
                )
            })
            .into_iter()
            .collect();
        if let Err(e) = sim.set_pushers(pushers) {
            return Some(format!("the push was refused: {e}"));
        }
        let kinematic = sim.flesh().and_then(|f| f.core()).is_none();
        if p.is_some() && kinematic && !std::mem::replace(&mut self.told_kinematic, true) {
            if sim.character.blendshapes().is_some() {
                return Some(
                    "the push dents the blendshapes' mesh, which recovers when let go; the \
                     skeleton does not respond (start with --drop H to let it fall and be pushed)"
                        .into(),
                );
            }
            return Some(
                "the push moves the skin only, where it is not held on the fat over a muscle: \
                 the skeleton does not respond (start on FEM flesh with --drop H to let it \
                 fall, stand and be pushed)"
                    .into(),
            );
        }
        None
    }

    /// Makes the skeleton respond on `ground` (kept for later rebuilds);
    /// returns a sentence for the user.
    pub(super) fn make_dynamic(
        &mut self,
        sim: Option<&mut Simulation>,
        ground: GroundDrop,
    ) -> String {
        self.ground = Some(ground);
        let Some(sim) = sim else {
            return "the skeleton will respond once the character can be simulated".into();
        };
        match sim.make_dynamic(ground.plane, ground.drop) {
            Ok(()) => match ground.drop {
                Some(h) => format!(
                    "the skeleton responds: dropped from {h:.2} m onto the ground; push it with the hand"
                ),
                None => {
                    "the skeleton responds: it stands on the ground; push it with the hand".into()
                }
            },
            Err(e) => {
                self.ground = None;
                format!("the skeleton cannot respond: {e}")
            }
        }
    }

    /// After an edit rebuilt the simulation or its flesh: the skeleton
    /// responds again where it was asked to and no longer does (from
    /// where it stands, not dropped again). A sentence if that failed.
    pub(super) fn keep_dynamic(&mut self, sim: Option<&mut Simulation>) -> Option<String> {
        let ground = self.ground?;
        let sim = sim?;
        if sim.flesh().and_then(|f| f.core()).is_some() {
            return None;
        }
        match sim.make_dynamic(ground.plane, None) {
            Ok(()) => None,
            Err(e) => {
                self.ground = None;
                Some(format!("the skeleton no longer responds: {e}"))
            }
        }
    }

    /// The hand's push on a responding skeleton in its last flesh step:
    /// the normal impulse (N s), 0 when not touching.
    pub(super) fn push_impulse(sim: Option<&Simulation>) -> f64 {
        sim.and_then(Simulation::push_impulse).map_or(0.0, |p| p.0)
    }
}
