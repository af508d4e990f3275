//! What a responding skeleton's core did beyond the key postures (a fall,
//! a landing, a tumble, a push) carries the skin with it as a rigid motion.
//!
//! The skin hangs on connective tissue tuned for sliding (LEMAN §3.3: a few
//! hertz on the samples), not for impacts. Felt with the skin's own inertia,
//! a landing's deceleration (3 m/s stopped within a flesh step or two) left
//! the skin travelling on by about v/ω ≈ 0.1 m against the muscles that hold
//! it out: it piled up and crumpled (measured on the 64×64 FEM penguin
//! dropped 0.5 m: p95 neighbour angle 6–11° before the landing, 50–115°
//! after, a rollback at almost every frame). The body's secondary motion at
//! a landing is the FEM flesh's to give (Capell; Galoppo §3), and the skin
//! rides on that flesh with inertia as before; only the core's rigid motion
//! relative to the keyed one is taken without inertia. Motion the animator
//! keyed is felt in full: squash, stretch and follow-through stay.
//!
//! Over a step from t to t + h the skin's velocities take the change of the
//! frame's velocity field along the carried path, Δv = u(t+h, D x) − u(t, x)
//! with D = C(t+h) C(t)⁻¹: the impulse the extra acceleration of a point
//! riding the frame integrates to, exact whatever the frame's motion did
//! within the step (the core's frames are linear between flesh steps, so
//! their acceleration is a train of impulses no force sample would catch).

use super::driver::SkeletonDriver;
use super::flesh::FleshRun;
use crate::character::Character;
use crate::fem::{FleshSim, root_frame};
use glam::{DAffine3, DVec3, Vec3};

/// Time offset for the frame's velocity by finite differences (s); the
/// core's frames are linear between flesh steps, so this is exact inside one.
const VELOCITY_DT: f64 = 1e-4;

/// The carrying frame of a skin whose character has a responding skeleton.
pub(super) struct Carry<'a> {
    character: &'a Character,
    driver: &'a SkeletonDriver,
    /// The FEM flesh, which has a core.
    flesh: &'a FleshSim,
}

impl<'a> Carry<'a> {
    /// The frame, where the character's skeleton responds (None otherwise:
    /// a keyed skeleton is felt with inertia).
    pub(super) fn of(
        character: &'a Character,
        driver: &'a SkeletonDriver,
        flesh: Option<&'a FleshRun>,
    ) -> Option<Self> {
        let flesh = flesh?.fem().filter(|f| f.core().is_some())?;
        Some(Self {
            character,
            driver,
            flesh,
        })
    }

    /// C(t): the core's root frame over the keyed one, in the world.
    fn frame(&self, t: f64) -> DAffine3 {
        let keyed = root_frame(self.character, &self.driver.posture_at(t));
        let core = self.flesh.core().expect("a carry is made only with a core");
        core.frame_at(t) * keyed.inverse()
    }

    /// Adds to the velocity of every point not kinematic the change of the
    /// frame's velocity field over the step from `t` to `t + h` (see the
    /// module docs).
    pub(super) fn kick(&self, t: f64, h: f64, r: &[Vec3], v: &mut [Vec3], kinematic: &[bool]) {
        kick(|t| self.frame(t), (t, h), r, v, kinematic);
    }
}

/// [`Carry::kick`] for the frame `frame(t)`; the largest change (m/s).
fn kick(
    frame: impl Fn(f64) -> DAffine3,
    (t, h): (f64, f64),
    r: &[Vec3],
    v: &mut [Vec3],
    kinematic: &[bool],
) -> f32 {
    let start = frame(t);
    let end = frame(t + h);
    let carried = end * start.inverse();
    // The frame's motion over (s, s + δ): C(s+δ) C(s)⁻¹.
    let now = frame(t + VELOCITY_DT) * start.inverse();
    let then = frame(t + h + VELOCITY_DT) * end.inverse();
    let velocity = |m: &DAffine3, x: DVec3| (m.transform_point3(x) - x) / VELOCITY_DT;
    let mut largest = 0.0f32;
    for (k, (x, v)) in r.iter().zip(v.iter_mut()).enumerate() {
        if kinematic[k] {
            continue;
        }
        let x = x.as_dvec3();
        let dv = (velocity(&then, carried.transform_point3(x)) - velocity(&now, x)).as_vec3();
        *v += dv;
        largest = largest.max(dv.length());
    }
    largest
}

#[cfg(test)]
mod tests;
