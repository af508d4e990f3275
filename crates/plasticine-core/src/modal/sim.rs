//! Modal flesh at run time: every part's modes stepped by their IIR filters
//! at a fixed frame step, sub-stepped so ωh ≤ 0.1, driven by the skeleton's
//! postures; the flesh at any time of its recent window as a displacement
//! field on the lattice, which the muscles ride (as on the FEM flesh).
//!
//! The field superposes the modes *before* the region blending (DyRT §4.2):
//! `x_a` = `Σ_b` `w_ab` `T_b` (`r_a` + `Σ_i` `q_i` `φ_ia`), with `T_b` the bone's placement
//! and `w_ab` the flesh's (painted) region weights, so a part's jiggle turns
//! with its bone.

use super::iir::{ModeFilter, substeps};
use super::mesh::ModalMesh;
use super::part::{PartError, PartModes, PartSource, build_part, part_of_vertices};
use super::transfer::RigidAcceleration;
use crate::character::{Character, ModalFlesh, Posture};
use crate::fem::MuscleCoupling;
use crate::fem::assemble_elements;
use crate::fem::to_daffine;
use crate::fem::{FleshError, Lattice};
use crate::fem::{NARROW_BLEND, cell_materials, lattice_wire_edges, painted_weights, vertex_bones};
use crate::fem::{flesh_lattice, forget_before, sample_window};
use crate::kinematics::forward_kinematics;
use crate::morph::MorphFrame;
use crate::snapshot::FleshPose;
use glam::{Affine3A, DAffine3, DVec3};
use std::collections::VecDeque;
use std::sync::Arc;

/// The modal flesh's frame step h (s): the skeleton is sampled at this rate;
/// each mode's filter sub-steps it.
pub const MODAL_STEP: f64 = 1.0 / 120.0;

/// Why modal flesh could not be built at all.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModalError {
    /// The character's flesh is not modal.
    #[error("the character's flesh is not modal")]
    NotModal,
    /// The lattice or its weights could not be built.
    #[error(transparent)]
    Flesh(#[from] FleshError),
}

/// One part being stepped.
#[derive(Clone, Debug)]
struct PartRun {
    modes: PartModes,
    filter: Vec<ModeFilter>,
    substeps: usize,
    q: Vec<f64>,
    q_prev: Vec<f64>,
    /// Where its q starts in a history entry.
    offset: usize,
}

/// A character's modal flesh, stepping in simulation time.
#[derive(Clone, Debug)]
pub struct ModalSim {
    lattice: Lattice,
    /// Per lattice vertex, its bones and their (non-zero) region weights.
    blend: Vec<Vec<(usize, f64)>>,
    parts: Vec<PartRun>,
    skipped: Vec<PartError>,
    muscles: MuscleCoupling,
    /// The embedded mesh, drawn as DyRT draws it.
    mesh: Option<Arc<ModalMesh>>,
    edges: Arc<Vec<[u32; 2]>>,
    time: f64,
    /// (time, every part's q), oldest first; never empty.
    history: VecDeque<(f64, Vec<f64>)>,
    /// The inverse of every joint's rest frame: placements are asked for
    /// on every skin stage, the rest skeleton's kinematics once.
    rest_inverse: Vec<DAffine3>,
    /// Joint placements (rest → posed) at the last two steps.
    before: Vec<DAffine3>,
    now: Vec<DAffine3>,
    /// Steps taken.
    pub steps: u64,
    /// Times the force filter clamped a force or an amplitude.
    pub clamps: u64,
    /// Times a part's modes were reset by a jump of its bone (seek, loop).
    pub resets: u64,
    /// Steps whose skeleton placed a joint at a non-finite place (a
    /// broken posture): the joint was held where it was instead.
    pub held: u64,
}

/// Every joint's placement, rest → `posture` (Capell eq. 24's T).
pub fn joint_placements(character: &Character, posture: &Posture) -> Vec<DAffine3> {
    placements_from(character, posture, &rest_inverses(character))
}

/// The inverse of every joint's rest frame (world → joint at rest).
fn rest_inverses(character: &Character) -> Vec<DAffine3> {
    forward_kinematics(&character.skeleton, &character.skeleton.rest_posture())
        .iter()
        .map(|r| to_daffine(*r).inverse())
        .collect()
}

/// Every joint's placement at `posture`, given the rest frames' inverses.
fn placements_from(
    character: &Character,
    posture: &Posture,
    rest_inverse: &[DAffine3],
) -> Vec<DAffine3> {
    forward_kinematics(&character.skeleton, posture)
        .iter()
        .zip(rest_inverse)
        .map(|(p, r)| to_daffine(*p) * *r)
        .collect()
}

/// Each running part's modes with the index of its first amplitude.
fn part_offsets(parts: &[PartRun]) -> Vec<(usize, &PartModes)> {
    parts.iter().map(|p| (p.offset, &p.modes)).collect()
}

/// `placements` with any non-finite one replaced by the rest placement.
fn finite_or_rest(mut placements: Vec<DAffine3>) -> Vec<DAffine3> {
    for p in &mut placements {
        if !p.is_finite() {
            *p = DAffine3::IDENTITY;
        }
    }
    placements
}

impl ModalSim {
    /// The modal flesh of `character` at time `t`, at rest, the skeleton
    /// following `posture_at`. Each listed part computes its modes; one that
    /// cannot rides rigidly and says why in [`skipped`](Self::skipped).
    pub fn new(
        character: &Character,
        posture_at: &dyn Fn(f64) -> Posture,
        t: f64,
    ) -> Result<Self, ModalError> {
        let modal = character.flesh.modal().ok_or(ModalError::NotModal)?;
        Self::build(character, modal, posture_at, t)
    }

    fn build(
        character: &Character,
        modal: &ModalFlesh,
        posture_at: &dyn Fn(f64) -> Posture,
        t: f64,
    ) -> Result<Self, ModalError> {
        let fem = &modal.fem;
        let (lattice, elements) = flesh_lattice(character, fem)?;
        if lattice.bones.is_empty() {
            return Err(FleshError::NoBones.into());
        }
        let materials = cell_materials(character, fem, &lattice)?;
        let matrices = assemble_elements(
            lattice.vertex_count(),
            &lattice.cells,
            &materials,
            &elements,
        );
        let width = fem.blend_width.unwrap_or(NARROW_BLEND);
        let weights = painted_weights(&lattice, width, &fem.weight_strokes)?;
        let owner = part_of_vertices(&lattice, &weights);
        let blend = vertex_bones(&lattice, &weights);
        let mut parts = Vec::new();
        let mut skipped = Vec::new();
        let mut offset = 0;
        for p in &modal.parts {
            let source = PartSource {
                lattice: &lattice,
                owner: &owner,
                matrices: &matrices,
                alpha: fem.mass_damping,
                beta: fem.stiffness_damping,
            };
            match build_part(character, p, source) {
                Ok(modes) => {
                    let omega_max = modes.omega.iter().copied().fold(0.0, f64::max);
                    let n = substeps(MODAL_STEP, omega_max);
                    let h = MODAL_STEP / n as f64;
                    let filter = modes
                        .omega
                        .iter()
                        .zip(&modes.damping)
                        .map(|(&w, &xi)| ModeFilter::new(w, xi, h))
                        .collect();
                    let count = modes.omega.len();
                    parts.push(PartRun {
                        modes,
                        filter,
                        substeps: n,
                        q: vec![0.0; count],
                        q_prev: vec![0.0; count],
                        offset,
                    });
                    offset += count;
                }
                Err(e) => {
                    tracing::warn!("modal flesh: {e}; the part rides rigidly");
                    skipped.push(e);
                }
            }
        }
        let muscles = MuscleCoupling::new(character, &lattice);
        let mesh = fem.embedded_mesh.as_ref().map(|m| {
            Arc::new(ModalMesh::new(
                &lattice,
                &blend,
                &part_offsets(&parts),
                &m.positions,
                &m.triangles,
            ))
        });
        let rest_inverse = rest_inverses(character);
        Ok(Self {
            edges: Arc::new(lattice_wire_edges(&lattice)),
            lattice,
            blend,
            parts,
            skipped,
            muscles,
            mesh,
            time: t,
            history: VecDeque::from([(t, vec![0.0; offset])]),
            before: finite_or_rest(placements_from(
                character,
                &posture_at(t - MODAL_STEP),
                &rest_inverse,
            )),
            now: finite_or_rest(placements_from(character, &posture_at(t), &rest_inverse)),
            rest_inverse,
            steps: 0,
            clamps: 0,
            resets: 0,
            held: 0,
        })
    }

    /// The lattice the field lives on.
    pub fn lattice(&self) -> &Lattice {
        &self.lattice
    }

    /// The parts that vibrate, with their modes.
    pub fn parts(&self) -> impl Iterator<Item = &PartModes> {
        self.parts.iter().map(|p| &p.modes)
    }

    /// The listed parts that ride rigidly, and why.
    pub fn skipped(&self) -> &[PartError] {
        &self.skipped
    }

    /// Sub-steps of each part's filters per frame step.
    pub fn substeps(&self) -> Vec<usize> {
        self.parts.iter().map(|p| p.substeps).collect()
    }

    /// Time of the newest step.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Every part's modal amplitudes now, part after part.
    pub fn amplitudes(&self) -> &[f64] {
        &self.history.back().expect("history never empty").1
    }

    /// Steps until `target`, stopping once the wall clock passes `deadline`
    /// (after at least one step).
    pub fn advance_within(
        &mut self,
        character: &Character,
        posture_at: impl Fn(f64) -> Posture,
        target: f64,
        deadline: Option<std::time::Instant>,
    ) {
        let mut stepped = false;
        while self.time < target - 1e-12 {
            if stepped && deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                break;
            }
            let posture = posture_at(self.time + MODAL_STEP);
            let after = placements_from(character, &posture, &self.rest_inverse);
            self.step(after);
            stepped = true;
        }
    }

    /// One frame step, the joints' next placements `after` known: the
    /// acceleration at the current time drives every mode over the step.
    fn step(&mut self, mut after: Vec<DAffine3>) {
        let h = MODAL_STEP;
        // A NaN or infinite placement would poison every amplitude for
        // good: hold that joint where it was (its modes see no motion).
        let mut held = false;
        for (a, now) in after.iter_mut().zip(&self.now) {
            if !a.is_finite() {
                *a = *now;
                held = true;
            }
        }
        self.held += u64::from(held);
        let mut all = vec![0.0; self.history.back().map_or(0, |e| e.1.len())];
        for part in &mut self.parts {
            let j = part.modes.joint;
            let o = part.modes.origin;
            let jump = after[j]
                .transform_point3(o)
                .distance(self.now[j].transform_point3(o));
            if jump > part.modes.size {
                // A seek or a teleport: start again at rest instead of
                // kicking the flesh with an impossible acceleration.
                part.q.fill(0.0);
                part.q_prev.fill(0.0);
                self.resets += 1;
            } else {
                let acc = RigidAcceleration::from_placements(
                    &self.before[j],
                    &self.now[j],
                    &after[j],
                    h,
                    o,
                );
                for i in 0..part.q.len() {
                    let w2 = part.modes.omega[i] * part.modes.omega[i];
                    let limit = part.modes.limit[i];
                    let mut force = part.modes.transfer[i].force(&acc);
                    if force.abs() > w2 * limit {
                        force = force.signum() * w2 * limit;
                        self.clamps += 1;
                    }
                    let f = part.filter[i];
                    let (mut q, mut q_prev) = (part.q[i], part.q_prev[i]);
                    for _ in 0..part.substeps {
                        let next = f.step(q, q_prev, force);
                        (q_prev, q) = (q, next);
                    }
                    if q.abs() > limit {
                        q = q.signum() * limit;
                        q_prev = q_prev.clamp(-limit, limit);
                        self.clamps += 1;
                    }
                    part.q[i] = q;
                    part.q_prev[i] = q_prev;
                }
            }
            all[part.offset..part.offset + part.q.len()].copy_from_slice(&part.q);
        }
        self.before = std::mem::replace(&mut self.now, after);
        self.time += h;
        self.steps += 1;
        self.history.push_back((self.time, all));
    }

    /// Whether every mode moves the flesh slower than `speed` (m/s): a still
    /// skeleton then leaves it still.
    pub fn is_at_rest(&self, speed: f64) -> bool {
        self.parts.iter().all(|p| {
            let h = MODAL_STEP / p.substeps as f64;
            (0..p.q.len()).all(|i| (p.q[i] - p.q_prev[i]).abs() / h * p.modes.peak[i] < speed)
        })
    }

    /// Forgets the steps no reader before time `t` needs.
    pub fn forget_before(&mut self, t: f64) {
        forget_before(&mut self.history, t);
    }

    /// Every part's amplitudes at time t, linear between steps (clamped to
    /// the window held).
    pub fn amplitudes_at(&self, t: f64) -> Vec<f64> {
        sample_window(&self.history, t, |a, b, s| a + (b - a) * s)
    }

    /// The modal displacement (rest frame) of every lattice vertex for the
    /// amplitudes `q` (as [`amplitudes`](Self::amplitudes)).
    pub fn modal_displacement(&self, q: &[f64]) -> Vec<DVec3> {
        let mut u = vec![DVec3::ZERO; self.lattice.vertex_count()];
        for part in &self.parts {
            for (i, shape) in part.modes.shapes.iter().enumerate() {
                let qi = q[part.offset + i];
                for (&a, phi) in part.modes.free.iter().zip(shape) {
                    u[a] += *phi * qi;
                }
            }
        }
        u
    }

    /// The largest modal displacement of any lattice vertex for the
    /// amplitudes `q` (m): how far the flesh jiggles off its skinned place.
    pub fn largest_displacement(&self, q: &[f64]) -> f64 {
        self.modal_displacement(q)
            .iter()
            .map(|u| u.length())
            .fold(0.0, f64::max)
    }

    /// The embedded mesh as the modes and the skeleton move it, if the
    /// flesh has one.
    pub fn mesh(&self) -> Option<&ModalMesh> {
        self.mesh.as_deref()
    }

    /// `mesh` (riding this flesh) as an export's skinned mesh named `name`
    /// with a morph target per mode.
    pub fn mode_morphs(&self, name: &str, mesh: &ModalMesh) -> crate::io::SkinnedMorphs {
        mesh.morphs(name, &part_offsets(&self.parts))
    }

    /// Any mesh (rest positions in the lattice, triangles) riding this
    /// flesh as DyRT draws it: embedded in the lattice, skinned by its
    /// region weights.
    pub fn embed_mesh(&self, positions: &[glam::Vec3], triangles: &[[u32; 3]]) -> ModalMesh {
        ModalMesh::new(
            &self.lattice,
            &self.blend,
            &part_offsets(&self.parts),
            positions,
            triangles,
        )
    }

    /// Every joint's placement (rest → `posture`).
    pub fn placements(&self, character: &Character, posture: &Posture) -> Vec<DAffine3> {
        placements_from(character, posture, &self.rest_inverse)
    }

    /// The world displacement of every lattice vertex from rest (the field
    /// the muscles ride), the skeleton at `posture`, amplitudes `q`.
    pub fn field(&self, character: &Character, posture: &Posture, q: &[f64]) -> Vec<DVec3> {
        self.field_at(&self.placements(character, posture), q)
    }

    /// [`field`](Self::field) with the joints' placements known.
    fn field_at(&self, joints: &[DAffine3], q: &[f64]) -> Vec<DVec3> {
        let u = self.modal_displacement(q);
        let bones = &self.lattice.bones;
        self.lattice
            .rest
            .iter()
            .zip(&u)
            .zip(&self.blend)
            .map(|((r, u), blend)| {
                let p = *r + *u;
                let x: DVec3 = blend
                    .iter()
                    .map(|&(b, w)| joints[bones[b].joint].transform_point3(p) * w)
                    .sum();
                x - *r
            })
            .collect()
    }

    /// Each muscle's correction in its own frame at time t, the skeleton at
    /// `posture` (see [`FleshPose::muscle_offsets`]).
    pub fn muscle_offsets(
        &self,
        character: &Character,
        posture: &Posture,
        t: f64,
    ) -> Vec<Affine3A> {
        let d = self.field(character, posture, &self.amplitudes_at(t));
        self.muscles.offsets(&self.lattice, character, posture, &d)
    }

    /// The flesh at time t with the skeleton at `posture`, for drawing.
    pub fn pose(&self, character: &Character, posture: &Posture, t: f64) -> FleshPose {
        let q = self.amplitudes_at(t);
        let joints = self.placements(character, posture);
        let d = self.field_at(&joints, &q);
        let l = &self.lattice;
        let morph = self.mesh.as_ref().map(|m| MorphFrame {
            mesh: m.clone(),
            joints: joints.clone(),
            weights: q.clone(),
        });
        FleshPose {
            time: t,
            muscle_offsets: self.muscles.offsets(l, character, posture, &d),
            lattice: l
                .rest
                .iter()
                .zip(&d)
                .map(|(r, d)| (*r + *d).as_vec3())
                .collect(),
            edges: self.edges.clone(),
            mesh: None,
            morph,
            grabs: Vec::new(),
            detail: Vec::new(),
            morph_weights: Default::default(),
            blend_weights: Default::default(),
            root_responds: false,
        }
    }
}
