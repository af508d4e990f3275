//! The skeleton responds: the lattice flesh stepped with its skeleton's
//! core as a rigid body (Galoppo 2008: ch. 3's rigid core under a soft
//! layer, the k = 1 case of ch. 4's articulated step), and contact with the
//! ground solved on the coupled system.
//!
//! ## The core
//!
//! The root joint's frame `D = (c, R)` is a rigid body with velocity
//! `(v_c, ω)`; every bone rides it, posed relative to the root by the key
//! postures (`T_b = D · L_b`, `L_b` the bone's transform in the root's
//! frame): the joints keep following the animation (every joint's `follow`
//! is 1), the whole skeleton falls, tips and is pushed. The core's own mass
//! is the flesh's on its bone vertices (they move with it).
//!
//! ## The coupled free step (eq. 4.18, 4.23–4.26)
//!
//! A bone vertex moves rigidly with the core: `Δv_a = G_a Δv_c + k_a`, with
//! `G_a = [I, −[x̂_a − ĉ]×]` at the predicted positions and `k_a` what the
//! current velocities and the key postures give. The regional systems
//! are linear in their known Δv, so one solve with the loads (`Δv_c = 0`)
//! and six responses to unit core velocity changes give the flesh's Δv for
//! any `Δv_c`, and the impulses ρ the flesh leaves on the bone vertices. The
//! core's equation `Gᵀ ρ(Δv_c) = 0` (its own mass is on its vertices) is
//! then the 6×6 system `Ã Δv_c = Gᵀ ρ₀`, `Ã = −Gᵀ ∂ρ/∂Δv_c`: the Schur
//! complement of the flesh onto the core, exact (the thesis' `M̃_cond`
//! approximates it with a block-diagonal inverse of the flesh's system).
//!
//! ## Contact (eq. 4.27–4.32, 3.13–3.22)
//!
//! The proxies ([`crate::contact::proxy`]) and bone points inside an
//! obstacle after the free step, or closing on it within the step, become
//! contacts: the ground, and the hand's moving capsules (`pushers`, eq.
//! 3.19: velocities are taken relative to the obstacle's, so friction
//! drags the flesh along with a moving hand). Each contact's response to a unit impulse along its
//! normal and tangents goes through the same superposition (a flesh solve,
//! then the core's answer through Ã), so `W = J A⁻¹ Jᵀ` is the exact
//! Delassus matrix of the coupled system: an impulse on the belly moves the
//! skeleton as well as the fat. [`crate::contact::solve_contacts`] finds the
//! unilateral, frictional impulses; the position error left is pushed out
//! at a share per step (`CORRECTION`), and whatever is still inside after
//! the step is moved out (eq. 3.21–3.22, `correct`).

use super::coupling::{deformation_at, polar_rotation};
use super::lattice::{Embedding, Lattice};
use super::solver::{FemBody, RigidVelocity, StepReport, VelocitySolve, advance_state};
use crate::character::{Character, Posture};
use crate::contact::{Capsule, Obstacle, Plane, Proxy};
use crate::kinematics::forward_kinematics;
pub use crate::kinematics::posture_with_root;
use glam::{DAffine3, DMat3, DQuat, DVec3};
use nalgebra::{Matrix6, Vector6};
use std::collections::VecDeque;
pub use together::{FLESH_FRICTION, FLESH_RESTITUTION, Member, SceneError, step_together};

/// The bones' own mass, as a share of the flesh's (`M_c` of eq. 4.23; the
/// flesh on the bone vertices moves with the core as well).
pub const BONE_MASS_SHARE: f64 = 0.05;
/// The share of a penetration pushed out per step (Baumgarte-style
/// position correction at velocity level).
pub const CORRECTION: f64 = 0.2;
/// Proxies this close to the ground (m) after the free step are contacts
/// too, so a resting contact does not flicker.
pub const CONTACT_MARGIN: f64 = 1e-3;
/// A contact solve that leaves a contact sinking faster than this (m/s)
/// is reported as unsettled.
pub const UNSETTLED_VIOLATION: f64 = 1e-3;
/// The most unsettled steps kept for the owner to take.
const UNSETTLED_KEPT: usize = 1024;
/// The contact solve's tolerance on velocities, m/s.
pub const CONTACT_TOLERANCE: f64 = 1e-7;

/// Why a character's skeleton cannot be made dynamic.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DynamicError {
    /// Only the plain lattice flesh couples to the core.
    #[error("the skeleton responds only on lattice FEM flesh without adaptive detail; {0}")]
    Flesh(String),
    /// The root must turn freely for the core to tumble.
    #[error(
        "the root joint {joint:?} must turn freely about all three axes for the skeleton to fall and tip: free its limits (its DOFs)"
    )]
    RootLimited {
        /// The root joint's name.
        joint: String,
    },
    /// One root only.
    #[error("the skeleton has {0} roots; a dynamic skeleton needs exactly one")]
    Roots(usize),
    /// No lattice vertex rides a bone: nothing to move the core with.
    #[error("no lattice vertex rides a bone")]
    NoBoneVertices,
    /// The ground given is unusable.
    #[error(transparent)]
    Ground(#[from] crate::character::InvalidField),
    /// Characters that cannot step together.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// The character starts deep in the ground.
    #[error(
        "the character starts {depth:.3} m deep in the ground at {part:?}, over half its flesh; lift it (e.g. --drop 0.1)"
    )]
    Buried {
        /// The muscle deepest in the ground.
        part: String,
        /// How deep, m.
        depth: f64,
    },
}

/// A proxy embedded in the flesh's rest lattice.
#[derive(Clone, Copy, Debug)]
struct EmbeddedProxy {
    embedding: Embedding,
    /// The fat's offset at rest (world).
    fat: DVec3,
    /// Its flesh part's own friction, if any.
    friction: Option<f64>,
    /// The muscle it lies on.
    muscle: usize,
}

/// Where a contact is.
#[derive(Clone, Copy, Debug)]
enum ContactAt {
    /// A proxy on the flesh: its index and embedding.
    Flesh(usize, Embedding),
    /// A point of a bone, at this arm from the predicted core centre ĉ.
    Bone(DVec3),
}

/// A contact of one step.
#[derive(Clone, Copy, Debug)]
struct Contact {
    at: ContactAt,
    /// What it touches.
    obstacle: Obstacle,
    /// Coulomb's μ: the obstacle's, mixed with the flesh part's own.
    friction: f64,
    /// The obstacle's outward normal there.
    normal: DVec3,
    /// Its distance from the obstacle at the start of the step.
    d0: f64,
    /// Its velocity after the free step, relative to the obstacle's.
    free: DVec3,
    /// Its velocity before the step, relative to the obstacle's.
    before: DVec3,
}

/// What the last dynamic step did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContactReport {
    /// Contacts solved.
    pub contacts: usize,
    /// Of those, contacts with another character ([`step_together`]).
    pub between: usize,
    /// Gauss–Seidel sweeps of the contact solve.
    pub sweeps: usize,
    /// Normal-velocity violation left (m/s).
    pub violation: f64,
    /// Lowest proxy over the ground after the step and its position
    /// correction (m; negative: inside).
    pub clearance: f64,
    /// The deepest any proxy was inside an obstacle before the position
    /// correction moved it out (m, ≥ 0; eq. 3.21).
    pub corrected: f64,
    /// Lowest bone end over the ground after the step (m).
    pub bone_clearance: f64,
    /// Wall time of the whole step and of its contact part, seconds.
    pub step_seconds: f64,
    /// Wall time of the contact part (responses, W, solve), seconds.
    pub contact_seconds: f64,
    /// Contacts with the hand's capsules.
    pub push_contacts: usize,
    /// The normal impulse the hand's capsules gave the character (N s).
    pub push_impulse: f64,
    /// The largest `‖λ_t‖ / (μ λ_n)` over the contacts that pushed (at
    /// most 1: friction inside its Coulomb cone, 3.20).
    pub cone_ratio: f64,
}

/// The core's frame at the end of a step, with the velocities that carried
/// it there from the step before (the motion [`DynamicCore::frame_at`]
/// interpolates, exactly).
#[derive(Clone, Copy, Debug)]
struct CoreKnot {
    t: f64,
    frame: DAffine3,
    velocity: DVec3,
    angular_velocity: DVec3,
}

impl CoreKnot {
    /// The knot at time t, frame `frame`, reached from `before`.
    fn after(before: &CoreKnot, t: f64, frame: DAffine3) -> Self {
        let dt = t - before.t;
        if dt <= 0.0 {
            return CoreKnot {
                t,
                frame,
                ..*before
            };
        }
        let turn =
            DQuat::from_mat3(&frame.matrix3) * DQuat::from_mat3(&before.frame.matrix3).inverse();
        // The short way round, as the slerp between them turns.
        let turn = if turn.w < 0.0 { -turn } else { turn };
        CoreKnot {
            t,
            frame,
            velocity: (frame.translation - before.frame.translation) / dt,
            angular_velocity: turn.to_scaled_axis() / dt,
        }
    }
}

/// The skeleton's core as a rigid body, and the ground it lands on.
#[derive(Clone, Debug)]
pub struct DynamicCore {
    /// The root joint's origin c (world).
    pub position: DVec3,
    /// The root joint's orientation R.
    pub rotation: DQuat,
    /// `ċ`.
    pub velocity: DVec3,
    /// ω (world).
    pub angular_velocity: DVec3,
    /// The ground.
    pub ground: Plane,
    /// The hand's moving capsules (the push tool), set by the owner.
    pub pushers: Vec<Capsule>,
    proxies: Vec<EmbeddedProxy>,
    /// The fat over each muscle (m): how far past it the surface another
    /// character meets lies.
    muscle_fat: Vec<f64>,
    /// Points along every lattice bone (bone, rest point): contacts on the
    /// core itself.
    bone_points: Vec<(usize, DVec3)>,
    /// The skins' end rings (joint, point in its frame): they ride their
    /// joints rigidly, so they too meet the ground on the core.
    ring_points: Vec<(usize, DVec3)>,
    /// Whether proxies left inside an obstacle after a step are moved out
    /// (eq. 3.21–3.22, `correct`); else only the contact solve's share per
    /// step pushes them out.
    pub position_correction: bool,
    /// Whether the bones (and the skins' end rings on them) meet the ground
    /// themselves (else only the flesh's
    /// surface does: the baseline under which a hard landing pushes the
    /// core through its soft flesh, Galoppo's Fig. 1.7).
    pub bone_contacts: bool,
    /// The bones' own mass (kg) and moment of inertia (kg m², isotropic),
    /// `M_c` of eq. 4.23.
    bone_mass: f64,
    bone_inertia: f64,
    /// The core at the end of each recent step, oldest first.
    history: VecDeque<CoreKnot>,
    /// The last step's contacts and clearances.
    pub last: ContactReport,
    /// (time, violation) of the steps whose contact solve did not settle,
    /// since the owner last took them (at most `UNSETTLED_KEPT`).
    unsettled: Vec<(f64, f64)>,
    /// The regional impulse responses kept across steps.
    responses: kept::ResponseCache,
    /// The regional answers to unit core velocities, kept while the
    /// posture relative to the root holds.
    units: Option<kept::UnitResponses>,
    /// Over every step so far: the most contacts and the lowest clearances.
    pub totals: ContactTotals,
}

/// Over every dynamic step so far.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactTotals {
    /// Steps taken.
    pub steps: u64,
    /// The most contacts of a step.
    pub max_contacts: usize,
    /// The most contacts with other characters of a step.
    pub max_between: usize,
    /// Contacts summed over the steps.
    pub contacts: u64,
    /// The lowest proxy over the ground after correction (m).
    pub min_clearance: f64,
    /// The deepest penetration the position correction moved out (m).
    pub max_corrected: f64,
    /// The lowest bone end over the ground (m).
    pub min_bone_clearance: f64,
    /// The largest friction-to-cone ratio of any contact (see
    /// [`ContactReport::cone_ratio`]).
    pub max_cone_ratio: f64,
}

impl Default for ContactTotals {
    fn default() -> Self {
        Self {
            steps: 0,
            max_contacts: 0,
            max_between: 0,
            contacts: 0,
            min_clearance: f64::INFINITY,
            max_corrected: 0.0,
            min_bone_clearance: f64::INFINITY,
            max_cone_ratio: 0.0,
        }
    }
}

/// The root joint's world frame for a posture.
pub fn root_frame(character: &Character, posture: &Posture) -> DAffine3 {
    super::lattice::to_daffine(forward_kinematics(&character.skeleton, posture)[0])
}

/// Whether the root joint turns freely about every axis.
fn root_is_free(character: &Character) -> bool {
    character.skeleton.joints[0].dofs.iter().all(|d| {
        d.free && d.min <= -std::f32::consts::PI + 1e-6 && d.max >= std::f32::consts::PI - 1e-6
    })
}

/// `G_a Δv_c`'s column j at arm `x̂_a − ĉ`: unit translation or rotation.
fn g_column(j: usize, arm: DVec3) -> DVec3 {
    if j < 3 {
        DVec3::AXES[j]
    } else {
        DVec3::AXES[j - 3].cross(arm)
    }
}

/// `Gᵀ f` over the bone vertices: the force and torque about ĉ.
fn wrench(f: &[DVec3], arm: &[Option<DVec3>]) -> Vector6<f64> {
    let (mut force, mut torque) = (DVec3::ZERO, DVec3::ZERO);
    for (fa, arm) in f.iter().zip(arm) {
        if let Some(arm) = arm {
            force += *fa;
            torque += arm.cross(*fa);
        }
    }
    Vector6::new(force.x, force.y, force.z, torque.x, torque.y, torque.z)
}

fn split(x: &Vector6<f64>) -> (DVec3, DVec3) {
    (DVec3::new(x[0], x[1], x[2]), DVec3::new(x[3], x[4], x[5]))
}

impl DynamicCore {
    /// The core of `character`'s skeleton at `posture` (the flesh `body`'s
    /// rest lattice), the proxies embedded, on `ground`.
    pub fn new(
        character: &Character,
        body: &FemBody,
        proxies: &[Proxy],
        posture: &Posture,
        ground: Plane,
        t: f64,
    ) -> Result<Self, DynamicError> {
        ground.validate()?;
        let roots = character
            .skeleton
            .joints
            .iter()
            .filter(|j| j.parent.is_none())
            .count();
        if roots != 1 || character.skeleton.joints[0].parent.is_some() {
            return Err(DynamicError::Roots(roots));
        }
        if !root_is_free(character) {
            return Err(DynamicError::RootLimited {
                joint: character.skeleton.joints[0].name.clone(),
            });
        }
        if body.lattice.bone_of_vertex.iter().all(Option::is_none) {
            return Err(DynamicError::NoBoneVertices);
        }
        let lattice = &body.lattice;
        let proxies: Vec<EmbeddedProxy> = proxies
            .iter()
            .filter_map(|p| {
                Some(EmbeddedProxy {
                    embedding: embed_near(lattice, p.surface)?,
                    fat: p.fat,
                    friction: p.friction,
                    muscle: p.muscle,
                })
            })
            .collect();
        // The bones themselves: soft flesh under a hard landing bottoms
        // out, and then the bone meets the ground, rigidly, on the core.
        let spacing = 0.5 * lattice.cell_size.min_element();
        let mut bone_points = Vec::new();
        for (i, b) in lattice.bones.iter().enumerate() {
            let steps = ((b.tail - b.head).length() / spacing).ceil().max(1.0) as usize;
            for k in 0..=steps {
                bone_points.push((i, b.head.lerp(b.tail, k as f64 / steps as f64)));
            }
        }
        let frame = root_frame(character, posture);
        let rotation = DQuat::from_mat3(&frame.matrix3).normalize();
        let bone_mass = BONE_MASS_SHARE * body.global.lumped_mass.iter().sum::<f64>();
        // A ball of the bones' mass, a cell across.
        let bone_inertia = 0.4 * bone_mass * (0.5 * lattice.cell_size.max_element()).powi(2);
        let ring_points = character
            .skins
            .iter()
            .flat_map(|skin| {
                let m = skin.m;
                skin.boundary_local.iter().enumerate().map(move |(k, p)| {
                    let joint = if k < m {
                        skin.bottom_joint
                    } else {
                        skin.top_joint
                    };
                    (joint, p.as_dvec3())
                })
            })
            .collect();
        let mut muscle_fat = vec![0.0; character.muscles.len()];
        for p in &proxies {
            if let Some(f) = muscle_fat.get_mut(p.muscle) {
                *f = p.fat.length().max(*f);
            }
        }
        Ok(Self {
            muscle_fat,
            position_correction: true,
            bone_contacts: true,
            bone_points,
            ring_points,
            bone_mass,
            bone_inertia,
            position: frame.translation,
            rotation,
            velocity: DVec3::ZERO,
            angular_velocity: DVec3::ZERO,
            ground,
            pushers: Vec::new(),
            proxies,
            history: VecDeque::from([CoreKnot {
                t,
                frame,
                velocity: DVec3::ZERO,
                angular_velocity: DVec3::ZERO,
            }]),
            last: ContactReport::default(),
            totals: ContactTotals::default(),
            responses: Default::default(),
            units: None,
            unsettled: Vec::new(),
        })
    }

    /// What the flesh may touch in a step starting at time t: the ground
    /// and the hand's capsules where they are then.
    fn obstacles(&self, t: f64) -> Vec<Obstacle> {
        std::iter::once(Obstacle::Plane(self.ground))
            .chain(self.pushers.iter().map(|c| Obstacle::Capsule(c.at(t))))
            .collect()
    }

    /// The (time, violation) of the steps since the last call whose
    /// contact solve left a contact sinking faster than
    /// [`UNSETTLED_VIOLATION`].
    pub fn take_unsettled(&mut self) -> Vec<(f64, f64)> {
        std::mem::take(&mut self.unsettled)
    }

    /// The core's frame D now.
    pub fn frame(&self) -> DAffine3 {
        DAffine3::from_rotation_translation(self.rotation, self.position)
    }

    /// Moves the core and the flesh on it by `offset` (a lift before a drop).
    pub fn translate(&mut self, body: &mut FemBody, offset: DVec3) {
        self.position += offset;
        for q in &mut body.q {
            *q += offset;
        }
        for k in &mut self.history {
            k.frame.translation += offset;
        }
    }

    /// The number of proxies embedded.
    pub fn proxy_count(&self) -> usize {
        self.proxies.len()
    }

    /// Every proxy's world position for the displacement `q` (the fat
    /// turned with the flesh around it).
    pub fn proxy_positions(&self, lattice: &Lattice, q: &[DVec3]) -> Vec<DVec3> {
        self.proxies
            .iter()
            .map(|p| self.proxy_position(lattice, q, p))
            .collect()
    }

    /// The muscle proxy `k` (in [`proxy_positions`](Self::proxy_positions)'
    /// order: those the lattice holds) lies on.
    pub fn proxy_muscle(&self, k: usize) -> Option<usize> {
        self.proxies.get(k).map(|p| p.muscle)
    }

    fn proxy_position(&self, lattice: &Lattice, q: &[DVec3], p: &EmbeddedProxy) -> DVec3 {
        let x = lattice.deform(&p.embedding, q);
        if p.fat == DVec3::ZERO {
            return x;
        }
        let turn = polar_rotation(deformation_at(lattice, &p.embedding, q).1)
            .unwrap_or_else(|| DMat3::from_quat(self.rotation));
        x + turn * p.fat
    }

    /// The lowest proxy over the ground, and the deepest one's index, for
    /// the displacement `q`.
    pub fn lowest_proxy(&self, lattice: &Lattice, q: &[DVec3]) -> Option<(usize, f64)> {
        // Every step measures this: the fat's turn (a polar decomposition)
        // only where the embedded point, less the fat's length, could
        // still be the lowest.
        let mut lowest: Option<(usize, f64)> = None;
        for (k, p) in self.proxies.iter().enumerate() {
            let bound = self.ground.distance(lattice.deform(&p.embedding, q)) - p.fat.length();
            if lowest.is_some_and(|(_, d)| bound >= d) {
                continue;
            }
            let d = self.ground.distance(self.proxy_position(lattice, q, p));
            if lowest.is_none_or(|(_, best)| d < best) {
                lowest = Some((k, d));
            }
        }
        lowest
    }

    /// The core's frame at time t, linear (slerped) between steps, clamped
    /// to the window held.
    pub fn frame_at(&self, t: f64) -> DAffine3 {
        let h = &self.history;
        let k = h.partition_point(|knot| knot.t <= t);
        if k == 0 {
            return h[0].frame;
        }
        if k == h.len() {
            return h[k - 1].frame;
        }
        let (a, b) = (&h[k - 1], &h[k]);
        let s = ((t - a.t) / (b.t - a.t)).clamp(0.0, 1.0);
        let ra = DQuat::from_mat3(&a.frame.matrix3);
        let rb = DQuat::from_mat3(&b.frame.matrix3);
        let translation = a.frame.translation.lerp(b.frame.translation, s);
        DAffine3::from_rotation_translation(ra.slerp(rb, s), translation)
    }

    /// The velocity and angular velocity (world) of [`frame_at`](Self::frame_at)
    /// at time t: those of the step that ends at or after t (the last held
    /// beyond the window). A step's own end belongs to it, so the answer at
    /// a step's time does not change when later steps are added or earlier
    /// ones forgotten.
    pub fn velocity_at(&self, t: f64) -> (DVec3, DVec3) {
        let h = &self.history;
        let k = h.partition_point(|knot| knot.t < t).min(h.len() - 1);
        (h[k].velocity, h[k].angular_velocity)
    }

    /// Forgets frames no reader before t needs.
    pub fn forget_before(&mut self, t: f64) {
        while self.history.len() > 1 && self.history[1].t <= t {
            self.history.pop_front();
        }
    }

    /// Every joint's frame in the root's, `FK_root⁻¹ FK_j`, for the key
    /// posture `posture`.
    pub fn relative_joints(character: &Character, posture: &Posture) -> Vec<DAffine3> {
        let root = root_frame(character, posture).inverse();
        forward_kinematics(&character.skeleton, posture)
            .into_iter()
            .map(|j| root * super::lattice::to_daffine(j))
            .collect()
    }

    /// The bones' transforms in the root's frame, `L_b = FK_root⁻¹ T_b`,
    /// for the key posture `posture`.
    pub fn relative_bones(
        character: &Character,
        bones: &[super::lattice::Bone],
        posture: &Posture,
    ) -> Vec<DAffine3> {
        let root = root_frame(character, posture).inverse();
        super::lattice::bone_transforms(character, bones, posture)
            .into_iter()
            .map(|t| root * t)
            .collect()
    }

    /// One step of the flesh `body` with the core, to time `t`, the bones
    /// posed relative to the root by `relative` (see
    /// [`relative_bones`](Self::relative_bones)) and the joints by `joints`
    /// ([`relative_joints`](Self::relative_joints)): the coupled free step,
    /// then the contacts (Fig. 4.4's steps), then the core and the flesh
    /// move.
    pub fn step(
        &mut self,
        body: &mut FemBody,
        relative: &[DAffine3],
        joints: &[DAffine3],
        t: f64,
    ) -> StepReport {
        // A scene of one: no other character's muscles to meet.
        let mut alone = [Member {
            body,
            core: self,
            relative: relative.to_vec(),
            joints: joints.to_vec(),
            muscles: Vec::new(),
            stiffness: 1.0,
        }];
        step_together(&mut alone, t)
            .pop()
            .expect("one report per member")
    }

    /// Keeps the step at t if its contact solve did not settle.
    fn note_unsettled(&mut self, t: f64) {
        if self.last.violation > UNSETTLED_VIOLATION && self.unsettled.len() < UNSETTLED_KEPT {
            self.unsettled.push((t, self.last.violation));
        }
    }

    /// Adds the last step to the totals.
    fn tally(&mut self) {
        let (last, tot) = (&self.last, &mut self.totals);
        tot.steps += 1;
        tot.contacts += last.contacts as u64;
        tot.max_contacts = tot.max_contacts.max(last.contacts);
        tot.max_between = tot.max_between.max(last.between);
        tot.min_clearance = tot.min_clearance.min(last.clearance);
        tot.max_corrected = tot.max_corrected.max(last.corrected);
        tot.min_bone_clearance = tot.min_bone_clearance.min(last.bone_clearance);
        tot.max_cone_ratio = tot.max_cone_ratio.max(last.cone_ratio);
    }

    /// The coupled free step (eq. 4.23–4.26): the flesh's Δv and the core's
    /// `Δv_c` without contact, and what superposes onto them.
    fn free_step(
        &mut self,
        body: &mut FemBody,
        relative: &[DAffine3],
    ) -> (Coupled, Vec<DVec3>, Vector6<f64>, StepReport) {
        let h = body.settings.time_step;
        let n = body.vertex_count();
        // The frame the free motion predicts, and the bones on it.
        let c_hat = self.position + self.velocity * h;
        let r_hat =
            (DQuat::from_scaled_axis(self.angular_velocity * h) * self.rotation).normalize();
        let d_hat = DAffine3::from_rotation_translation(r_hat, c_hat);
        let bones_hat: Vec<DAffine3> = relative.iter().map(|l| d_hat * *l).collect();
        let targets = body.pin_targets(&bones_hat);
        let mut base = vec![None; n];
        let mut arm: Vec<Option<DVec3>> = vec![None; n];
        for a in 0..n {
            if let Some(target) = targets[a] {
                base[a] = Some((target - body.q[a]) / h - body.v[a]);
                if body.lattice.bone_of_vertex[a].is_some() {
                    arm[a] = Some(body.lattice.rest[a] + target - c_hat);
                }
            }
        }
        let frame = RigidVelocity {
            centre: self.position,
            linear: self.velocity,
            angular: self.angular_velocity,
        };
        let main = body.solve_velocity(
            &bones_hat,
            &VelocitySolve {
                known: &base,
                loads: true,
                impulses: &[],
                damping_frame: Some(frame),
                reactions: true,
            },
        );
        let mut report = main.report.clone();
        // The flesh's answer to each unit change of the core's velocity:
        // kept in the bones' frames while the posture relative to the root
        // holds still, else solved.
        let mut unit: Vec<Vec<DVec3>> = Vec::with_capacity(6);
        let mut schur = Matrix6::<f64>::zeros();
        let kept = self.unit_responses(body, relative, &bones_hat);
        for (j, (dv, reaction)) in kept.iter().flatten().enumerate() {
            schur.set_column(j, &(-wrench(reaction, &arm)));
            unit.push(dv.clone());
        }
        for j in unit.len()..6 {
            let known: Vec<Option<DVec3>> = (0..n)
                .map(|a| base[a].map(|_| arm[a].map_or(DVec3::ZERO, |r| g_column(j, r))))
                .collect();
            let r = body.solve_velocity(
                &bones_hat,
                &VelocitySolve {
                    known: &known,
                    loads: false,
                    impulses: &[],
                    damping_frame: None,
                    reactions: true,
                },
            );
            schur.set_column(j, &(-wrench(&r.reaction, &arm)));
            report.solves.extend(r.report.solves);
            unit.push(r.dv);
        }
        // Symmetric in exact arithmetic; the blend and CG's tolerance leave
        // it a hair off. The bones' own mass `M_c` on top: it also keeps the
        // core's spin defined where every bone vertex lies on one line
        // (a straight bone spins inside its flesh without moving it).
        let mut schur = (schur + schur.transpose()) * 0.5;
        for k in 0..3 {
            schur[(k, k)] += self.bone_mass;
            schur[(k + 3, k + 3)] += self.bone_inertia;
        }
        let coupled = Coupled {
            d_hat,
            bones_hat,
            c_hat,
            base,
            arm,
            unit,
            lu: schur.lu(),
        };
        let g = body.settings.gravity;
        // The flesh's push on the bones, and the bones' own weight.
        let dc = coupled.core_answer(&main.reaction)
            + coupled.core_wrench(Vector6::new(g.x, g.y, g.z, 0.0, 0.0, 0.0))
                * (self.bone_mass * h);
        let mut dv = main.dv;
        coupled.carry(&mut dv, &dc);
        (coupled, dv, dc, report)
    }

    /// The core takes its new velocity and moves; the bones land on it
    /// exactly and the flesh advances (eq. 15); the clearances are measured.
    fn advance(
        &mut self,
        body: &mut FemBody,
        relative: &[DAffine3],
        dv: &[DVec3],
        dc: &Vector6<f64>,
        t: f64,
    ) {
        let h = body.settings.time_step;
        let (dlin, dang) = split(dc);
        self.velocity += dlin;
        self.angular_velocity += dang;
        self.position += self.velocity * h;
        self.rotation =
            (DQuat::from_scaled_axis(self.angular_velocity * h) * self.rotation).normalize();
        let d = self.frame();
        let bones: Vec<DAffine3> = relative.iter().map(|l| d * *l).collect();
        let targets = body.pin_targets(&bones);
        // A bone vertex lands exactly on the turned core, so it takes the
        // chord's velocity; the solve gave it `G_a Δv_c`, linear in the
        // turn, which differs by O(hω²). The momentum that difference
        // holds is given back to the whole character as one uniform
        // velocity (a Galilean shift: no strain, and the bones stay on
        // their core), so contacts and the core's equation keep the
        // momentum they conserved.
        let mass = &body.global.lumped_mass;
        let riders: Vec<usize> = (0..body.vertex_count())
            .filter(|&a| body.lattice.bone_of_vertex[a].is_some() && targets[a].is_some())
            .collect();
        let solved: DVec3 = riders.iter().map(|&a| (body.v[a] + dv[a]) * mass[a]).sum();
        advance_state(&mut body.q, &mut body.v, dv, &targets, h);
        let chord: DVec3 = riders.iter().map(|&a| body.v[a] * mass[a]).sum();
        let shift = (solved - chord) / (mass.iter().sum::<f64>() + self.bone_mass);
        body.v.iter_mut().for_each(|v| *v += shift);
        self.velocity += shift;
        self.last.corrected = if self.position_correction {
            let pinned: Vec<bool> = targets.iter().map(Option::is_some).collect();
            self.correct_positions(body, &pinned, &self.obstacles(t))
        } else {
            0.0
        };
        let before = *self.history.back().expect("history never empty");
        self.history.push_back(CoreKnot::after(&before, t, d));
        self.last.clearance = self
            .lowest_proxy(&body.lattice, &body.q)
            .map_or(f64::INFINITY, |(_, c)| c);
        self.last.bone_clearance = body
            .lattice
            .bones
            .iter()
            .zip(&bones)
            .flat_map(|(b, t)| [t.transform_point3(b.head), t.transform_point3(b.tail)])
            .map(|x| self.ground.distance(x))
            .fold(f64::INFINITY, f64::min);
    }
}

/// One step's coupled system after its free solve: what any further
/// impulse superposes onto (the flesh's unit responses to the core, and
/// the core's factored Schur complement).
struct Coupled {
    /// The predicted core frame.
    d_hat: DAffine3,
    /// The bones on the predicted core frame.
    bones_hat: Vec<DAffine3>,
    /// The predicted core centre ĉ.
    c_hat: DVec3,
    /// The free step's known Δv (bone and clamped vertices).
    base: Vec<Option<DVec3>>,
    /// Each bone vertex's arm `x̂_a − ĉ`.
    arm: Vec<Option<DVec3>>,
    /// The flesh's Δv per unit core velocity change (six).
    unit: Vec<Vec<DVec3>>,
    /// The Schur complement `Ã` plus `M_c`, factored.
    lu: nalgebra::LU<f64, nalgebra::U6, nalgebra::U6>,
}

impl Coupled {
    /// The core's `Δv_c` for a wrench on it.
    fn core_wrench(&self, w: Vector6<f64>) -> Vector6<f64> {
        self.lu.solve(&w).unwrap_or_else(Vector6::zeros)
    }

    /// The core's `Δv_c` for impulses `rho` on the bone vertices.
    fn core_answer(&self, rho: &[DVec3]) -> Vector6<f64> {
        self.core_wrench(wrench(rho, &self.arm))
    }

    /// Adds the flesh the core carries for `Δv_c = dc`: `Σ_j Y_j dc_j`.
    fn carry(&self, dv: &mut [DVec3], dc: &Vector6<f64>) {
        for (j, y) in self.unit.iter().enumerate() {
            for (d, yj) in dv.iter_mut().zip(y) {
                *d += *yj * dc[j];
            }
        }
    }
}

/// The embedding of `p`, or of the nearest point towards the lattice where
/// `p` lies just outside it (a muscle's surface point in a trimmed cell).
fn embed_near(lattice: &Lattice, p: DVec3) -> Option<Embedding> {
    if let Some(e) = lattice.embed(p) {
        return Some(e);
    }
    let step = lattice.cell_size.min_element() * 0.25;
    let centre = lattice.rest.iter().sum::<DVec3>() / lattice.rest.len().max(1) as f64;
    let dir = (centre - p).normalize_or_zero();
    (1..=4).find_map(|k| lattice.embed(p + dir * step * k as f64))
}

mod correct;
mod impulse;
mod kept;
#[cfg(test)]
mod tests;
mod together;
mod units;
