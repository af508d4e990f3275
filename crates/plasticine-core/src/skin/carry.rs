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
//! The field at a time is a function of that time alone (not of which flesh
//! steps are held), so the kicks of successive steps and advances add up to
//! the frame's whole change of velocity: a difference over the held steps
//! did not, losing the frame's velocity at an advance's end (measured: a
//! hand pushing the lying penguin tore a flipper).

use super::driver::SkeletonDriver;
use super::flesh::FleshRun;
use crate::character::Character;
use crate::fem::{FleshSim, root_frame};
use glam::{DAffine3, DMat3, DVec3, Vec3};

/// Time offset for the keyed root's velocity by finite differences (s):
/// the keys are smooth.
const VELOCITY_DT: f64 = 1e-4;

/// The carrying frame of a skin whose character has a responding skeleton.
pub(super) struct Carry<'a> {
    character: &'a Character,
    driver: &'a SkeletonDriver,
    /// The FEM flesh, which has a core.
    flesh: &'a FleshSim,
}

/// The velocity field of a rigid motion at one instant: u(x) = L x + b.
#[derive(Clone, Copy, Debug)]
struct Field {
    linear: DMat3,
    offset: DVec3,
}

impl Field {
    fn at(&self, x: DVec3) -> DVec3 {
        self.linear * x + self.offset
    }

    /// The field of a body at `origin` moving at `velocity`, turning at `spin`.
    fn rigid(origin: DVec3, velocity: DVec3, spin: DVec3) -> Self {
        let linear = cross_matrix(spin);
        Self {
            linear,
            offset: velocity - linear * origin,
        }
    }
}

/// [ω]×: the matrix of x ↦ ω × x.
fn cross_matrix(w: DVec3) -> DMat3 {
    DMat3::from_cols(
        DVec3::new(0.0, w.z, -w.y),
        DVec3::new(-w.z, 0.0, w.x),
        DVec3::new(w.y, -w.x, 0.0),
    )
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

    fn keyed(&self, t: f64) -> DAffine3 {
        root_frame(self.character, &self.driver.posture_at(t))
    }

    /// C(t) = F(t) K(t)⁻¹, the core's frame F over the keyed root's K, and
    /// C's velocity field at t, Ċ C⁻¹ = Ḟ F⁻¹ − F (K⁻¹ K̇) F⁻¹. The core's
    /// part is its step's velocities (`velocity_at`), a function of t alone
    /// whatever steps the flesh holds, so the kicks of successive steps and
    /// advances add up to the frame's whole change of velocity; the keyed
    /// part is smooth and taken by differences.
    fn at(&self, t: f64) -> (DAffine3, Field) {
        let core = self.flesh.core().expect("a carry is made only with a core");
        let f = core.frame_at(t);
        let (velocity, spin) = core.velocity_at(t);
        let core_field = Field::rigid(f.translation, velocity, spin);
        let k = self.keyed(t);
        let keyed_step = k.inverse() * self.keyed(t + VELOCITY_DT);
        // K⁻¹K̇ as the affine map y ↦ (K⁻¹K(t+δ) y − y)/δ, carried to the
        // world by F: x ↦ F_lin (K⁻¹K̇) F⁻¹ x.
        let keyed_linear = (keyed_step.matrix3 - DMat3::IDENTITY) * (1.0 / VELOCITY_DT);
        let keyed_offset = keyed_step.translation / VELOCITY_DT;
        let f_inv = f.inverse();
        let linear = f.matrix3 * keyed_linear * f_inv.matrix3;
        let offset = f.matrix3 * (keyed_linear * f_inv.translation + keyed_offset);
        let field = Field {
            linear: core_field.linear - linear,
            offset: core_field.offset - offset,
        };
        (f * k.inverse(), field)
    }

    /// Adds to the velocity of every point not kinematic the change of the
    /// frame's velocity field over the step from `t` to `t + h` (see the
    /// module docs).
    pub(super) fn kick(&self, t: f64, h: f64, r: &[Vec3], v: &mut [Vec3], kinematic: &[bool]) {
        let (start, now) = self.at(t);
        let (end, then) = self.at(t + h);
        kick(end * start.inverse(), (now, then), r, v, kinematic);
    }
}

/// [`Carry::kick`] for the frame's motion `carried` over the step and its
/// velocity fields at the step's start and end; the largest change (m/s).
fn kick(
    carried: DAffine3,
    (now, then): (Field, Field),
    r: &[Vec3],
    v: &mut [Vec3],
    kinematic: &[bool],
) -> f32 {
    let mut largest = 0.0f32;
    for (k, (x, v)) in r.iter().zip(v.iter_mut()).enumerate() {
        if kinematic[k] {
            continue;
        }
        let x = x.as_dvec3();
        let dv = (then.at(carried.transform_point3(x)) - now.at(x)).as_vec3();
        *v += dv;
        largest = largest.max(dv.length());
    }
    largest
}

#[cfg(test)]
mod tests;
