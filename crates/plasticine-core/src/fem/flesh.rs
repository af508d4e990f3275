//! FEM flesh at run time: the lattice of a character's
//! [`FemFlesh`] stepped at a fixed h, driven by
//! the skeleton's postures (Capell §4.3: bones as known DOFs), and the flesh
//! pose at any time of its recent window, interpolated between steps.
//!
//! The muscles ride on the flesh by a best rigid fit of their volume
//! ([`super::coupling`]).
//!
//! Grabbing (§4.4): a picked world point of the deformed flesh is mapped back
//! to the rest lattice (inverse FFD by Newton) and held by a
//! [`PositionConstraint`] at the hand.
//!
//! The simulation underneath is a [`FleshBody`]: the control lattice, or
//! with adaptive detail (§4.7) its hierarchy. Everything here reads its
//! displacement field on the field lattice (K or `K_J`).

use super::coupling::{MuscleCoupling, deformation_at};
use super::dynamic::{
    DynamicCore, DynamicError, Member, SceneError, posture_with_root, step_together,
};
use super::element::CellElements;
use super::flesh_body::FleshBody;
pub use super::flesh_body::{FLESH_STEP, FleshError, OBJECT_QUADRATURE_LEVELS};
use super::lattice::{Embedding, Lattice, bone_transforms, skeleton_bones};
use super::morph::MorphModel;
use super::quadrature::character_lattice_with_vertices;
use super::snap::lattice_elements;
use super::solver::{PositionConstraint, StepReport};
use crate::character::{Character, FemFlesh, Posture};
pub use crate::snapshot::FleshPose;
use glam::{Affine3A, DAffine3, DMat3, DVec3, Vec3};
use std::collections::VecDeque;

/// Vertices within this many cells of a bone ride rigidly on it (§4.3).
pub const BONE_RADIUS_CELLS: f64 = 0.5;

/// A point of the flesh held at the hand (§4.4).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grab {
    /// The grab's identifier, as returned by `FleshSim::grab`.
    pub id: u64,
    /// The grabbed point's cell and trilinear weights in the rest field lattice.
    pub embedding: Embedding,
    /// The grabbed point at rest (world).
    pub rest: DVec3,
    /// Where the hand holds it (world).
    pub hand: DVec3,
}

/// The FEM flesh of a character, stepping in simulation time.
#[derive(Clone, Debug)]
pub struct FleshSim {
    /// The simulation: the control lattice, or its hierarchy with adaptive detail (§4.7).
    pub body: FleshBody,
    /// Time of the newest step.
    time: f64,
    /// (time, field) of the recent steps, oldest first; never empty: the
    /// displacement at every field-lattice vertex.
    history: VecDeque<(f64, Vec<DVec3>)>,
    muscles: MuscleCoupling,
    /// The dynamic morph targets on this lattice (Galoppo ch. 5), blended
    /// at every step's posture.
    morph: Option<MorphModel>,
    mesh: Option<Vec<Option<Embedding>>>,
    edges: std::sync::Arc<Vec<[u32; 2]>>,
    grabs: Vec<Grab>,
    next_grab: u64,
    /// The skeleton's core as a rigid body on the ground, when the
    /// skeleton responds ([`super::dynamic`]).
    pub(crate) core: Option<Box<DynamicCore>>,
    /// The time step h (s): the character's [`FemFlesh::time_step`].
    step: f64,
    /// Steps taken and their CG iterations, for cost reports.
    pub steps: u64,
    /// CG iterations summed over all steps taken (every regional solve).
    pub cg_iterations: u64,
}

/// The lattice of a character's flesh and its cell integrals: around an
/// embedded (imported) mesh, voxelized from its inside; otherwise around the
/// muscles, trimmed to them and integrated only where they are (§3.3).
pub fn flesh_lattice(
    character: &Character,
    flesh: &FemFlesh,
) -> Result<(Lattice, CellElements), FleshError> {
    if let Some(mesh) = &flesh.embedded_mesh {
        let lattice = Lattice::from_mesh(
            &mesh.positions,
            &mesh.triangles,
            skeleton_bones(character),
            flesh.target_vertices,
        )
        .map_err(|e| FleshError::ImportedMesh {
            mesh: mesh.source.clone(),
            message: e.to_string(),
        })?;
        let elements = lattice_elements(&lattice);
        return Ok((lattice, elements));
    }
    if character.muscles.is_empty() {
        return Err(FleshError::NoMuscles);
    }
    character_lattice_with_vertices(
        character,
        flesh.target_vertices,
        BONE_RADIUS_CELLS,
        OBJECT_QUADRATURE_LEVELS,
    )
    .map_err(FleshError::Quadrature)
}

impl FleshSim {
    /// The flesh of an FEM character, its lattice voxelized from the muscles
    /// with about `target_vertices` vertices, at static equilibrium under
    /// gravity in `posture` at time `t`.
    pub fn new(character: &Character, posture: &Posture, t: f64) -> Result<Self, FleshError> {
        Self::rebuilt(character, posture, t, None)
    }

    /// The flesh of an edited character: where the lattice is still the one
    /// `old` ran on, the same way (a muscle reshaped inside it, a stroke
    /// painted, a material changed), its state goes on from `old`'s, detail
    /// and grabs included; otherwise (another lattice, adaptive detail
    /// switched on or off) it starts at rest as in [`new`](Self::new), with
    /// `old`'s grabs made again where their points are.
    pub fn rebuilt(
        character: &Character,
        posture: &Posture,
        t: f64,
        old: Option<&FleshSim>,
    ) -> Result<Self, FleshError> {
        let flesh = character.flesh.fem().ok_or(FleshError::NotFem)?;
        let (lattice, elements) = flesh_lattice(character, flesh)?;
        Self::build(character, lattice, elements, posture, t, old)
    }

    /// The flesh on a given lattice (bones bound), e.g. one built around an
    /// imported mesh; the character's embedded mesh, if any, is embedded in it.
    pub fn with_lattice(
        character: &Character,
        lattice: Lattice,
        posture: &Posture,
        t: f64,
    ) -> Result<Self, FleshError> {
        let elements = lattice_elements(&lattice);
        Self::build(character, lattice, elements, posture, t, None)
    }

    fn build(
        character: &Character,
        lattice: Lattice,
        elements: CellElements,
        posture: &Posture,
        t: f64,
        old: Option<&FleshSim>,
    ) -> Result<Self, FleshError> {
        let flesh = character.flesh.fem().ok_or(FleshError::NotFem)?;
        if lattice.bones.is_empty() {
            return Err(FleshError::NoBones);
        }
        let joints = character.skeleton.joints.len();
        if posture.angles.len() != joints {
            return Err(FleshError::Posture {
                got: posture.angles.len(),
                joints,
            });
        }
        let (body, weights) = FleshBody::build(character, flesh, lattice, elements)?;
        // Validation refuses targets with adaptive detail.
        let morph = match &body {
            FleshBody::Lattice(b) if !flesh.morph_targets.is_empty() => Some(MorphModel::new(
                &flesh.morph_targets,
                &character.skeleton,
                &b.lattice,
                &b.regions,
            )?),
            _ => None,
        };
        let field = body.lattice();
        let muscles = MuscleCoupling::new(character, field);
        let mesh = flesh.embedded_mesh.as_ref().map(|m| {
            m.positions
                .iter()
                .map(|p| field.embed(p.as_dvec3()))
                .collect()
        });
        let mut sim = Self {
            edges: std::sync::Arc::new(body.wire_edges()),
            history: VecDeque::from([(t, body.field())]),
            body,
            time: t,
            muscles,
            mesh,
            grabs: Vec::new(),
            next_grab: 1,
            step: flesh.time_step,
            steps: 0,
            cg_iterations: 0,
            morph,
            core: None,
        };
        if old.is_some_and(|old| sim.carry_state(old)) {
            return Ok(sim);
        }
        let bones = bone_transforms(character, sim.body.bones(), posture);
        sim.blend_morph(character, posture);
        sim.body.settle(&bones, weights.as_deref());
        sim.history = VecDeque::from([(t, sim.body.field())]);
        if let Some(old) = old {
            sim.take_grabs(old);
        }
        Ok(sim)
    }

    /// The lattice the displacement field lives on (the control lattice, or
    /// its finest subdivision with adaptive detail).
    pub fn lattice(&self) -> &Lattice {
        self.body.lattice()
    }

    /// The displacement field now (newest step), per field-lattice vertex.
    pub fn q(&self) -> &[DVec3] {
        &self.history.back().expect("history never empty").1
    }

    /// Time of the newest step.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// The time step h, s.
    pub fn time_step(&self) -> f64 {
        self.step
    }

    /// Whether the flesh has come to rest (every vertex slower than
    /// `speed` m/s) with nothing holding it: a still skeleton then leaves
    /// it still, and it needs no stepping.
    pub fn is_at_rest(&self, speed: f64) -> bool {
        self.grabs.is_empty() && self.body.is_still(speed)
    }

    /// Takes over the state (q, q̇, clock, history, grabs) of `old` when it
    /// ran on the same lattice; returns whether it did.
    pub fn carry_state(&mut self, old: &FleshSim) -> bool {
        if !self.body.carry_state(&old.body) {
            return false;
        }
        self.time = old.time;
        self.history.clone_from(&old.history);
        self.grabs.clone_from(&old.grabs);
        self.next_grab = old.next_grab;
        self.core.clone_from(&old.core);
        self.edges = std::sync::Arc::new(self.body.wire_edges());
        true
    }

    /// The grabs of `old` (another lattice) made again on this flesh: each
    /// grabbed point where it is now, held by the same hand under the same
    /// id, so a hand holding the flesh through an edit keeps holding it. A
    /// point the new flesh does not reach is let go.
    fn take_grabs(&mut self, old: &FleshSim) {
        for g in &old.grabs {
            let Some(at) = old.grabbed_position(g.id) else {
                continue;
            };
            let Some(rest) = self.rest_point_of(at.as_dvec3()) else {
                continue;
            };
            if let Some(embedding) = self.body.lattice().embed(rest) {
                self.grabs.push(Grab {
                    id: g.id,
                    embedding,
                    rest,
                    hand: g.hand,
                });
            }
        }
        self.next_grab = self.next_grab.max(old.next_grab);
    }

    /// Steps at h until the flesh reaches `target`, the bones following
    /// `posture_at` (the skeleton driver) at the end of each step.
    pub fn advance_to(
        &mut self,
        character: &Character,
        posture_at: impl Fn(f64) -> Posture,
        target: f64,
    ) -> Vec<StepReport> {
        self.advance_within(character, posture_at, target, None)
    }

    /// As [`advance_to`](Self::advance_to), but stops stepping once the
    /// wall clock passes `deadline` (after at least one step, so the flesh
    /// always moves on); [`time`](Self::time) says how far it got.
    pub fn advance_within(
        &mut self,
        character: &Character,
        posture_at: impl Fn(f64) -> Posture,
        target: f64,
        deadline: Option<std::time::Instant>,
    ) -> Vec<StepReport> {
        let h = self.step;
        let mut reports = Vec::new();
        while self.time < target - 1e-12 {
            if !reports.is_empty() && deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                break;
            }
            let t = self.time + h;
            let posture = posture_at(t);
            self.blend_morph(character, &posture);
            if self.core.is_some() {
                reports.push(self.step_dynamic(character, &posture, t));
                continue;
            }
            let bones = bone_transforms(character, self.body.bones(), &posture);
            reports.push(self.step(&bones, t));
        }
        reports
    }

    /// Puts the morph targets' blend at `posture` into the body.
    fn blend_morph(&mut self, character: &Character, posture: &Posture) {
        let (Some(model), FleshBody::Lattice(body)) = (&self.morph, &mut self.body) else {
            return;
        };
        body.morph = Some(model.blend(&character.skeleton, posture, &body.regions));
    }

    /// The grabs as position constraints (§4.4): each grabbed point held at
    /// its hand.
    fn grab_constraints(&self) -> Vec<PositionConstraint> {
        self.grabs
            .iter()
            .map(|g| PositionConstraint {
                embedding: g.embedding,
                target: g.hand - g.rest,
            })
            .collect()
    }

    /// One step to time `t` with the bones at `bones`.
    fn step(&mut self, bones: &[DAffine3], t: f64) -> StepReport {
        let constraints = self.grab_constraints();
        let (report, detail_changed) = self.body.step(bones, constraints);
        if detail_changed {
            self.edges = std::sync::Arc::new(self.body.wire_edges());
        }
        self.record(t, &report);
        report
    }

    /// Keeps a step taken to time `t`: the clock, the cost counters and
    /// the field for readers between steps.
    fn record(&mut self, t: f64, report: &StepReport) {
        self.time = t;
        self.steps += 1;
        self.cg_iterations += report.iterations() as u64;
        self.history.push_back((t, self.body.field()));
    }

    /// Forgets the steps no reader before time `t` needs (keeps the one at or
    /// before t, for interpolation).
    pub fn forget_before(&mut self, t: f64) {
        forget_before(&mut self.history, t);
        if let Some(core) = &mut self.core {
            core.forget_before(t);
        }
    }

    /// Makes the skeleton respond (`super::dynamic`): its core becomes a
    /// rigid body carrying the flesh, on `ground`, from the skeleton at
    /// `posture`. With `drop`, the character is first lifted (or lowered)
    /// so its lowest contact proxy is that high over the ground, at rest.
    /// Fails on flesh or a skeleton the core cannot drive, or a character
    /// starting over half its flesh deep in the ground.
    pub fn make_dynamic(
        &mut self,
        character: &Character,
        posture: &Posture,
        ground: crate::contact::Plane,
        drop: Option<f64>,
    ) -> Result<(), DynamicError> {
        let FleshBody::Lattice(body) = &mut self.body else {
            return Err(DynamicError::Flesh(
                "this flesh has adaptive detail (set its detail to none)".into(),
            ));
        };
        if let Some(d) = drop.filter(|d| !(d.is_finite() && *d >= 0.0)) {
            return Err(DynamicError::Ground(crate::character::InvalidField::new(
                "drop",
                format!("must be a finite height >= 0 m, got {d}"),
            )));
        }
        let proxies =
            crate::contact::contact_proxies(character, &character.skeleton.rest_posture());
        let mut core = DynamicCore::new(character, body, &proxies, posture, ground, self.time)?;
        let positions = core.proxy_positions(&body.lattice, &body.q);
        let heights: Vec<f64> = positions.iter().map(|x| ground.distance(*x)).collect();
        let low = heights.iter().copied().fold(f64::INFINITY, f64::min);
        let high = heights.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if let Some(height) = drop {
            core.translate(body, ground.normal * (height - low));
        } else if low < 0.0 && -low > 0.5 * (high - low) {
            let deepest = heights
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(b.1))
                .map_or(0, |(k, _)| k);
            // Indexed as the core holds them: the proxies outside the
            // lattice were left out.
            let muscle = core.proxy_muscle(deepest).unwrap_or(0);
            return Err(DynamicError::Buried {
                part: format!(
                    "muscle {muscle} on {}",
                    character
                        .muscles
                        .get(muscle)
                        .and_then(|m| character.skeleton.joints.get(m.joint))
                        .map_or("?", |j| j.name.as_str())
                ),
                depth: -low,
            });
        }
        for (_, q) in &mut self.history {
            q.clone_from(&body.q);
        }
        self.core = Some(Box::new(core));
        Ok(())
    }

    /// Moves a character whose skeleton responds, flesh and core, by
    /// `offset` (placing it in a scene). False, and nothing moved, when
    /// the skeleton does not respond.
    pub fn place(&mut self, offset: DVec3) -> bool {
        let (FleshBody::Lattice(body), Some(core)) = (&mut self.body, &mut self.core) else {
            return false;
        };
        core.translate(body, offset);
        for (_, q) in &mut self.history {
            q.clone_from(&body.q);
        }
        true
    }

    /// Sets a character whose skeleton responds moving at `velocity`, all
    /// of it (a throw). False when the skeleton does not respond.
    pub fn throw(&mut self, velocity: DVec3) -> bool {
        let (FleshBody::Lattice(body), Some(core)) = (&mut self.body, &mut self.core) else {
            return false;
        };
        core.velocity = velocity;
        core.angular_velocity = DVec3::ZERO;
        body.v.iter_mut().for_each(|v| *v = velocity);
        true
    }

    /// The skeleton's core, when it responds.
    pub fn core(&self) -> Option<&DynamicCore> {
        self.core.as_deref()
    }

    /// The skeleton's core, to change its settings.
    pub fn core_mut(&mut self) -> Option<&mut DynamicCore> {
        self.core.as_deref_mut()
    }

    /// The posture the skeleton has at time t: `driven` (the key
    /// postures') with the root where the core has carried it, when the
    /// skeleton responds; `driven` itself otherwise.
    pub fn posture(&self, character: &Character, driven: &Posture, t: f64) -> Posture {
        match &self.core {
            Some(core) => posture_with_root(character, driven, core.frame_at(t)),
            None => driven.clone(),
        }
    }

    /// One step of the flesh with the core (see [`super::dynamic`]).
    fn step_dynamic(&mut self, character: &Character, posture: &Posture, t: f64) -> StepReport {
        let constraints = self.grab_constraints();
        let (FleshBody::Lattice(body), Some(core)) = (&mut self.body, &mut self.core) else {
            unreachable!("make_dynamic keeps a core only on lattice flesh");
        };
        body.constraints = constraints;
        let relative = DynamicCore::relative_bones(character, &body.lattice.bones, posture);
        let joints = DynamicCore::relative_joints(character, posture);
        let report = core.step(body, &relative, &joints, t);
        self.record(t, &report);
        report
    }

    /// Steps several characters whose skeletons respond (see
    /// [`make_dynamic`](Self::make_dynamic)) together to `target`, touching
    /// the ground, the hand and each other (`super::dynamic`'s
    /// `step_together`); character i's bones follow `posture_at(i, t)`.
    /// They must share the flesh time step and the time they are at.
    pub fn advance_together(
        scene: &mut [(&mut FleshSim, &Character)],
        posture_at: impl Fn(usize, f64) -> Posture,
        target: f64,
    ) -> Result<Vec<Vec<StepReport>>, SceneError> {
        for (i, (sim, _)) in scene.iter().enumerate() {
            if sim.core.is_none() || !matches!(sim.body, FleshBody::Lattice(_)) {
                return Err(SceneError::NotDynamic(i));
            }
            let (first, _) = &scene[0];
            if sim.step != first.step || (sim.time - first.time).abs() > 1e-9 {
                return Err(SceneError::Clocks {
                    first: 0,
                    other: i,
                    why: format!(
                        "h {} s at t {} s, against h {} s at t {} s",
                        first.step, first.time, sim.step, sim.time
                    ),
                });
            }
        }
        let mut reports = vec![Vec::new(); scene.len()];
        let Some(h) = scene.first().map(|(sim, _)| sim.step) else {
            return Ok(reports);
        };
        while scene[0].0.time < target - 1e-12 {
            let t = scene[0].0.time + h;
            let mut members = Vec::with_capacity(scene.len());
            for (i, (sim, character)) in scene.iter_mut().enumerate() {
                let posture = posture_at(i, t);
                sim.blend_morph(character, &posture);
                let constraints = sim.grab_constraints();
                let (FleshBody::Lattice(body), Some(core)) = (&mut sim.body, &mut sim.core) else {
                    unreachable!("checked above");
                };
                body.constraints = constraints;
                let placed = posture_with_root(character, &posture, core.frame());
                members.push(Member {
                    relative: DynamicCore::relative_bones(character, &body.lattice.bones, &posture),
                    joints: DynamicCore::relative_joints(character, &posture),
                    muscles: crate::kinematics::PosedBody::new(character, &placed).muscles,
                    stiffness: match &character.flesh {
                        crate::character::Flesh::Fem(f) => f.young,
                        _ => 1.0,
                    },
                    body,
                    core,
                });
            }
            let stepped = step_together(&mut members, t);
            drop(members);
            for ((sim, _), (report, all)) in
                scene.iter_mut().zip(stepped.into_iter().zip(&mut reports))
            {
                sim.record(t, &report);
                all.push(report);
            }
        }
        Ok(reports)
    }

    /// The lattice displacement q at time t, linear between steps (clamped
    /// to the window held).
    pub fn q_at(&self, t: f64) -> Vec<DVec3> {
        sample_window(&self.history, t, |a, b, s| a.lerp(*b, s))
    }

    /// Each muscle's correction in its own frame at time t (see
    /// [`FleshPose::muscle_offsets`]), the skeleton at `posture`.
    pub fn muscle_offsets(
        &self,
        character: &Character,
        posture: &Posture,
        t: f64,
    ) -> Vec<Affine3A> {
        let q = self.q_at(t);
        self.muscle_offsets_for(character, posture, &q)
    }

    /// The muscle offsets for a lattice displacement `q`.
    pub fn muscle_offsets_for(
        &self,
        character: &Character,
        posture: &Posture,
        q: &[DVec3],
    ) -> Vec<Affine3A> {
        self.muscles
            .offsets(self.body.lattice(), character, posture, q)
    }

    /// Deformed position and deformation gradient F = `Σ_a` (`r_a` + `q_a`) ⊗ ∇φ^a
    /// at an embedded point.
    pub fn deformation_at(&self, e: &Embedding, q: &[DVec3]) -> (DVec3, DMat3) {
        deformation_at(self.body.lattice(), e, q)
    }

    /// The flesh at time t with the skeleton at `posture`, for drawing.
    pub fn pose(&self, character: &Character, posture: &Posture, t: f64) -> FleshPose {
        let q = self.q_at(t);
        let l = self.body.lattice();
        let lattice = l
            .rest
            .iter()
            .zip(&q)
            .map(|(r, d)| (*r + *d).as_vec3())
            .collect();
        let mesh = match (&self.mesh, character.flesh.fem()) {
            (
                Some(emb),
                Some(FemFlesh {
                    embedded_mesh: Some(m),
                    ..
                }),
            ) => Some(
                emb.iter()
                    .zip(&m.positions)
                    .map(|(e, &p)| e.map_or(p, |e| l.deform(&e, &q).as_vec3()))
                    .collect(),
            ),
            _ => None,
        };
        FleshPose {
            time: t,
            muscle_offsets: self.muscle_offsets_for(character, posture, &q),
            lattice,
            edges: self.edges.clone(),
            mesh,
            morph: None,
            grabs: self
                .grabs
                .iter()
                .map(|g| (l.deform(&g.embedding, &q).as_vec3(), g.hand.as_vec3()))
                .collect(),
            detail: self.body.detail_per_level(),
            root_responds: self.core.is_some(),
            // Set by the simulation, which runs the blendshapes.
            blend_weights: Default::default(),
            morph_weights: match &self.morph {
                Some(model) => {
                    let (beta, clamped, _) = model.weights(&character.skeleton, posture);
                    let named = model
                        .names
                        .iter()
                        .cloned()
                        .zip(beta.iter().map(|b| *b as f32));
                    (named.collect(), clamped)
                }
                None => Default::default(),
            },
        }
    }

    /// Reshapes the embedded mesh `mesh` of the pose with displacement `q`
    /// ([`q_at`](Self::q_at) its time, as [`pose`](Self::pose) gave it) by
    /// `rest_offsets`, one per vertex: the
    /// change of its rest shape (a blendshape). Each vertex moves by F·d,
    /// the flesh's deformation gradient at its rest place times its
    /// offset, so the change turns and stretches with the flesh around
    /// it; a vertex outside the lattice moves by d.
    pub fn reshape_mesh(&self, mesh: &mut [Vec3], q: &[DVec3], rest_offsets: &[DVec3]) {
        let Some(embedding) = &self.mesh else {
            return;
        };
        let l = self.body.lattice();
        for ((x, e), d) in mesh.iter_mut().zip(embedding).zip(rest_offsets) {
            let moved = match e {
                Some(e) => deformation_at(l, e, q).1 * *d,
                None => *d,
            };
            *x += moved.as_vec3();
        }
    }

    /// The flesh's deformation gradient F at embedded-mesh vertex `vertex`
    /// for displacement `q` (None for a vertex outside the lattice, or no
    /// mesh).
    pub fn mesh_gradient(&self, vertex: usize, q: &[DVec3]) -> Option<DMat3> {
        let e = self.mesh.as_ref()?.get(vertex)?.as_ref()?;
        Some(deformation_at(self.body.lattice(), e, q).1)
    }

    /// Grabs the flesh at world point `at` of the current (newest) pose,
    /// held at `at` until moved; None when the point is outside the flesh.
    pub fn grab(&mut self, at: Vec3) -> Option<u64> {
        let rest = self.rest_point_of(at.as_dvec3())?;
        let embedding = self.body.lattice().embed(rest)?;
        let id = self.next_grab;
        self.next_grab += 1;
        self.grabs.push(Grab {
            id,
            embedding,
            rest,
            hand: at.as_dvec3(),
        });
        Some(id)
    }

    /// Moves a grab's hand; false for an unknown grab.
    pub fn move_grab(&mut self, id: u64, hand: Vec3) -> bool {
        match self.grabs.iter_mut().find(|g| g.id == id) {
            Some(g) => {
                g.hand = hand.as_dvec3();
                true
            }
            None => false,
        }
    }

    /// Lets go; false for an unknown grab.
    pub fn release(&mut self, id: u64) -> bool {
        let before = self.grabs.len();
        self.grabs.retain(|g| g.id != id);
        before != self.grabs.len()
    }

    /// The points of the flesh currently held.
    pub fn grabs(&self) -> &[Grab] {
        &self.grabs
    }

    /// The deformed position of a grabbed point now.
    pub fn grabbed_position(&self, id: u64) -> Option<Vec3> {
        let g = self.grabs.iter().find(|g| g.id == id)?;
        Some(self.body.lattice().deform(&g.embedding, self.q()).as_vec3())
    }

    /// Inverse FFD: the rest point whose deformed place is `p` (Newton on
    /// `deform(x) = p`, starting from `p` minus the nearest vertex's
    /// displacement), None outside the lattice.
    pub fn rest_point_of(&self, p: DVec3) -> Option<DVec3> {
        let l = self.body.lattice();
        let q = self.q();
        let nearest = (0..l.vertex_count()).min_by(|&a, &b| {
            (l.rest[a] + q[a])
                .distance_squared(p)
                .total_cmp(&(l.rest[b] + q[b]).distance_squared(p))
        })?;
        let mut x = p - q[nearest];
        for _ in 0..20 {
            let e = l.embed(x)?;
            let (y, f) = self.deformation_at(&e, q);
            let r = p - y;
            if r.length() < 1e-10 {
                return Some(x);
            }
            if f.determinant().abs() < 1e-12 {
                return None;
            }
            x += f.inverse() * r;
        }
        let e = l.embed(x)?;
        ((self.deformation_at(&e, q).0 - p).length() < 1e-6).then_some(x)
    }
}

/// A window of recent steps, (time, state per vertex or mode), oldest first
/// and never empty: the state at time t, `lerp`ed between the steps around
/// it and clamped to the window's ends.
pub fn sample_window<T: Clone>(
    history: &VecDeque<(f64, Vec<T>)>,
    t: f64,
    lerp: impl Fn(&T, &T, f64) -> T,
) -> Vec<T> {
    let first = history.front().expect("history never empty");
    if t <= first.0 {
        return first.1.clone();
    }
    let k = history.partition_point(|(tk, _)| *tk <= t);
    if k >= history.len() {
        return history.back().expect("never empty").1.clone();
    }
    let (t0, q0) = &history[k - 1];
    let (t1, q1) = &history[k];
    let s = ((t - t0) / (t1 - t0)).clamp(0.0, 1.0);
    q0.iter().zip(q1).map(|(a, b)| lerp(a, b, s)).collect()
}

/// Drops the steps of a window that no reader at or after time `t` needs
/// (keeps the one at or before t, for interpolation).
pub fn forget_before<T>(history: &mut VecDeque<(f64, Vec<T>)>, t: f64) {
    while history.len() > 1 && history[1].0 <= t {
        history.pop_front();
    }
}

/// Whether `a` and `b` need a different flesh simulation (its lattice,
/// material, weights or driving skeleton differ).
pub fn flesh_changed(a: &Character, b: &Character) -> bool {
    // The embedded mesh's blendshapes reshape what the flesh carries, not
    // the flesh: keying or switching them keeps it running.
    let without_blend = |c: &Character| {
        let mut f = c.flesh.clone();
        if let Some(fem) = f.fem_mut() {
            fem.blendshapes = None;
        }
        f
    };
    (a.flesh != b.flesh && without_blend(a) != without_blend(b))
        || a.muscles != b.muscles
        || a.skeleton != b.skeleton
        || a.environment.gravity != b.environment.gravity
}
