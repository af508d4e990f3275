//! The simulation under a character's FEM flesh: the control lattice's own
//! FEM ([`FemBody`]), or, with adaptive detail, the adaptive body on the
//! lattice's hierarchy ([`AdaptiveBody`], Capell §4.7).
//!
//! Both are read the same way, as a displacement field on the *field
//! lattice*: the control lattice K for the first, its finest subdivision `K_J`
//! for the second (`P q`, exact for every active function). So the flesh's
//! muscles, embedded mesh, grabs and history ([`super::flesh::FleshSim`])
//! never ask which one runs.

use super::adapt::{AdaptSettings, AdaptiveBody};
use super::element::{CellElements, Material};
use super::lattice::{Bone, Lattice};
use super::quadrature::{SubcellTest, character_inside, hierarchy_object_elements};
use super::regions::{Twist, bone_weights, falloff};
use super::snap::lattice_elements;
use super::solver::{FemBody, FemSettings, Linearization, PositionConstraint, StepReport};
use crate::character::{Character, FemFlesh, WeightStroke};
use glam::{DAffine3, DVec3};

/// The flesh's default time step h (s); a character may set its own
/// ([`FemFlesh::time_step`], [`FleshSim::time_step`](super::FleshSim::time_step)).
pub const FLESH_STEP: f64 = crate::character::FLESH_TIME_STEP;
/// Why the FEM flesh of a character could not be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FleshError {
    /// The character's flesh is kinematic, not FEM.
    #[error("the character's flesh is kinematic, not FEM")]
    NotFem,
    /// No lattice could be built around the embedded (imported) mesh.
    #[error("the embedded mesh '{mesh}' cannot be given a lattice: {message}")]
    ImportedMesh {
        /// Where the mesh came from (its file name).
        mesh: String,
        /// Why the lattice could not be built.
        message: String,
    },
    /// The lattice around the muscles or its cell integrals (§3.3) could not be built.
    #[error("the flesh's cell integrals failed: {0}")]
    Quadrature(#[from] super::quadrature::QuadratureError),
    /// The adaptive body (hierarchical basis, §4.7) could not be built.
    #[error("the flesh's adaptive detail cannot be built: {0}")]
    Adaptive(#[from] super::adapt::AdaptError),
    /// A `part_stiffness` or `part_friction` entry names a joint the
    /// skeleton does not have.
    #[error(
        "the flesh's part_stiffness or part_friction names joint '{joint}', which the skeleton does not have"
    )]
    PartJoint {
        /// The joint name given.
        joint: String,
    },
    /// The skeleton has no bone (fewer than two joints), so nothing drives the lattice.
    #[error("FEM flesh needs a skeleton with at least one bone (two joints)")]
    NoBones,
    /// There is neither an embedded mesh nor a muscle to build the lattice around.
    #[error("FEM flesh needs muscles to build a lattice around; the character has none")]
    NoMuscles,
    /// A painted weight stroke names a bone the lattice does not have.
    #[error("weight stroke {stroke} paints bone {bone}, but the skeleton has {bones} bones")]
    StrokeBone {
        /// Index of the stroke.
        stroke: usize,
        /// The bone it paints.
        bone: usize,
        /// Number of bones of the lattice.
        bones: usize,
    },
    /// The dynamic morph targets cannot be put on the lattice.
    #[error("the flesh's morph targets: {0}")]
    Morph(#[from] super::morph::MorphError),
    /// The posture's number of joint angles differs from the skeleton's joints.
    #[error("the posture has {got} joint angles, the skeleton {joints} joints")]
    Posture {
        /// Joint angles in the posture.
        got: usize,
        /// Joints of the skeleton.
        joints: usize,
    },
}

/// Quadrature levels of the cells the muscles' surface cuts (§3.3): 4 sub-cells
/// per axis, a few per cent on the mass, ~20 ms for a 200-vertex lattice.
pub const OBJECT_QUADRATURE_LEVELS: u32 = 2;

/// The FEM settings of a character's flesh.
pub fn fem_settings(character: &Character, flesh: &FemFlesh) -> FemSettings {
    FemSettings {
        time_step: flesh.time_step,
        mass_damping: flesh.mass_damping,
        stiffness_damping: flesh.stiffness_damping,
        gravity: character.environment.gravity.as_dvec3(),
        linearization: match flesh.blend_width {
            Some(blend_width) => Linearization::BlendedLocal { blend_width },
            None => Linearization::Global,
        },
        ..FemSettings::default()
    }
}

/// The automatic bone-region weights (§4.5) with the painted strokes applied
/// in order, then renormalised to a partition of unity. A vertex bound to a
/// bone keeps weight one for it (it moves rigidly with the bone); a vertex
/// whose painted weights would all vanish keeps its automatic ones.
pub fn painted_weights(
    lattice: &Lattice,
    width: f64,
    strokes: &[WeightStroke],
) -> Result<Vec<Vec<f64>>, FleshError> {
    let bones = lattice.bones.len();
    for (k, s) in strokes.iter().enumerate() {
        if s.bone >= bones {
            return Err(FleshError::StrokeBone {
                stroke: k,
                bone: s.bone,
                bones,
            });
        }
    }
    let automatic = bone_weights(lattice, width);
    let mut w = automatic.clone();
    let mut touched = vec![false; lattice.vertex_count()];
    for s in strokes {
        let (c, radius) = (s.centre.as_dvec3(), s.radius as f64);
        for (a, &p) in lattice.rest.iter().enumerate() {
            let d = p.distance(c);
            if d >= radius || lattice.bone_of_vertex[a].is_some() {
                continue;
            }
            touched[a] = true;
            let wi = &mut w[s.bone][a];
            *wi = (*wi + s.amount as f64 * falloff(d / radius)).clamp(0.0, 1.0);
        }
    }
    for a in (0..lattice.vertex_count()).filter(|&a| touched[a]) {
        let sum: f64 = w.iter().map(|wi| wi[a]).sum();
        for i in 0..bones {
            w[i][a] = if sum > 0.0 {
                w[i][a] / sum
            } else {
                automatic[i][a]
            };
        }
    }
    Ok(w)
}

/// Bone-region weights `[bone][control vertex]` (§4.5).
pub type RegionWeights = Vec<Vec<f64>>;

/// The simulation of a character's flesh.
#[derive(Clone, Debug)]
pub enum FleshBody {
    /// The control lattice alone.
    Lattice(Box<FemBody>),
    /// The hierarchical basis with detail where the flesh is distorted.
    Adaptive(Box<AdaptiveBody>),
}

impl FleshBody {
    /// The body of `flesh` on `lattice` (its cells' integrals `elements`),
    /// and the coarse vertices' bone-region weights it blends with (None
    /// for the global linear model).
    pub fn build(
        character: &Character,
        flesh: &FemFlesh,
        lattice: Lattice,
        elements: CellElements,
    ) -> Result<(Self, Option<RegionWeights>), FleshError> {
        let materials = cell_materials(character, flesh, &lattice)?;
        let mut settings = fem_settings(character, flesh);
        if flesh.embedded_mesh.is_some() {
            // Bones through an imported mesh's lattice pin thin lines of
            // vertices, which leave the flesh free to turn about them; the
            // twist constraint (§4.6) holds it (as fem-import's check does).
            let h = lattice.cell_size.x;
            settings.twist = Some(Twist {
                stiffness: 10.0 * flesh.young / (h * h),
                radius: h,
            });
        }
        let weights = flesh
            .blend_width
            .map(|width| painted_weights(&lattice, width, &flesh.weight_strokes))
            .transpose()?;
        let Some(detail) = &flesh.detail else {
            let mut body = FemBody::with_elements(lattice, materials, elements, settings);
            if let Some(w) = &weights {
                body.set_region_weights(w);
            }
            return Ok((Self::Lattice(Box::new(body)), weights));
        };
        let j = detail.levels as usize;
        let adapt = AdaptSettings {
            levels: detail.levels,
            refine_threshold: vec![detail.refine_strain; j],
            coarsen_threshold: vec![detail.coarsen_strain; j],
        };
        let fixed = vec![None; lattice.vertex_count()];
        let imported = flesh.embedded_mesh.is_some();
        let mut body =
            AdaptiveBody::with_elements(lattice, materials, fixed, settings, adapt, |h| {
                if imported {
                    // The mesh lattice's cells are whole (§3.3 applies to
                    // the muscles' cut cells only).
                    Ok(lattice_elements(&h.fine))
                } else {
                    hierarchy_object_elements(
                        h,
                        character_inside(character),
                        OBJECT_QUADRATURE_LEVELS,
                        SubcellTest::Centre,
                    )
                }
            })?;
        if let Some(w) = &weights {
            body.set_region_weights(w)?;
        }
        Ok((Self::Adaptive(Box::new(body)), weights))
    }

    /// The lattice the displacement field lives on: K, or `K_J`.
    pub fn lattice(&self) -> &Lattice {
        match self {
            Self::Lattice(b) => &b.lattice,
            Self::Adaptive(b) => &b.hierarchy.fine,
        }
    }

    /// The control lattice K (its vertices are the field lattice's
    /// [`control_vertices`](Self::control_vertices)).
    pub fn control_lattice(&self) -> &Lattice {
        match self {
            Self::Lattice(b) => &b.lattice,
            Self::Adaptive(b) => &b.hierarchy.coarse,
        }
    }

    /// The field-lattice vertex of each control-lattice vertex.
    pub fn control_vertices(&self) -> Vec<usize> {
        match self {
            Self::Lattice(b) => (0..b.lattice.vertex_count()).collect(),
            Self::Adaptive(b) => b.hierarchy.fine_of_coarse.clone(),
        }
    }

    /// The bones driving the flesh.
    pub fn bones(&self) -> &[Bone] {
        &self.control_lattice().bones
    }

    /// The displacement at every field-lattice vertex.
    pub fn field(&self) -> Vec<DVec3> {
        match self {
            Self::Lattice(b) => b.q.clone(),
            Self::Adaptive(b) => b.field(),
        }
    }

    /// Whether every point of the flesh moves slower than `speed` (m/s).
    pub fn is_still(&self, speed: f64) -> bool {
        let still = |v: &[DVec3]| v.iter().all(|v| v.length_squared() < speed * speed);
        match self {
            Self::Lattice(b) => still(&b.v),
            Self::Adaptive(b) => still(&b.field_velocity()),
        }
    }

    /// The points held at displacement targets (§4.4), embedded in the
    /// field lattice.
    pub fn constraints(&self) -> &[PositionConstraint] {
        match self {
            Self::Lattice(b) => &b.constraints,
            Self::Adaptive(b) => &b.constraints,
        }
    }

    /// One step of h to the bone transforms `bones`, the points
    /// `constraints` held; the adaptive body then refines and coarsens by
    /// the new field (§4.7), and says whether its detail changed.
    pub fn step(
        &mut self,
        bones: &[DAffine3],
        constraints: Vec<PositionConstraint>,
    ) -> (StepReport, bool) {
        match self {
            Self::Lattice(b) => {
                b.constraints = constraints;
                (b.step(bones), false)
            }
            Self::Adaptive(b) => {
                b.constraints = constraints;
                let (q, v) = (b.q.clone(), b.v.clone());
                // The bones come from the flesh's own lattice, so a count
                // mismatch cannot happen; report it as a failed solve.
                let mut report = b.step(bones, None).unwrap_or_default();
                let mut changed = false;
                if !b.q.iter().chain(&b.v).all(|x| x.is_finite()) {
                    // A solve broke down: back to the state before it, drop
                    // the detail (the coarse system is well conditioned)
                    // and step again.
                    b.q = q;
                    b.v = v;
                    changed = b.coarsen_all().changed();
                    report = b.step(bones, None).unwrap_or_default();
                }
                changed |= b.adapt().changed();
                (
                    StepReport {
                        solves: vec![report],
                    },
                    changed,
                )
            }
        }
    }

    /// Puts the flesh at rest under gravity with the bones at `bones`:
    /// starts from the bones' blended rigid motion (linear blend skinning of
    /// the control vertices with `weights`, none for the global model) and
    /// steps with heavy damping. (A static solve is ill-posed here: a region
    /// whose bone vertices lie on a line has a free rotation about it,
    /// which only the dynamics' mass regularises.) Detail stays off.
    pub fn settle(&mut self, bones: &[DAffine3], weights: Option<&[Vec<f64>]>) {
        let control = self.control_lattice();
        let mut q = vec![DVec3::ZERO; control.vertex_count()];
        for (bone, w) in weights.into_iter().flatten().enumerate() {
            for (a, qa) in q.iter_mut().enumerate() {
                let r = control.rest[a];
                *qa += (bones[bone].transform_point3(r) - r) * w[a];
            }
        }
        match self {
            Self::Lattice(b) => {
                b.q = q;
                b.v.iter_mut().for_each(|v| *v = DVec3::ZERO);
                let damping = b.settings.mass_damping;
                b.settings.mass_damping = damping.max(SETTLE_DAMPING);
                for _ in 0..settle_steps(b.settings.time_step) {
                    b.step(bones);
                }
                b.settings.mass_damping = damping;
                b.v.iter_mut().for_each(|v| *v = DVec3::ZERO);
            }
            Self::Adaptive(b) => {
                b.coarsen_all();
                // The coarse functions are the first DOFs, in K's order.
                b.q[..q.len()].copy_from_slice(&q);
                b.v.iter_mut().for_each(|v| *v = DVec3::ZERO);
                let damping = b.settings.mass_damping;
                b.settings.mass_damping = damping.max(SETTLE_DAMPING);
                for _ in 0..settle_steps(b.settings.time_step) {
                    if b.step(bones, None).is_err() {
                        break;
                    }
                }
                b.settings.mass_damping = damping;
                b.v.iter_mut().for_each(|v| *v = DVec3::ZERO);
            }
        }
    }

    /// Takes over `old`'s state (q, q̇, constraints, and the adaptive
    /// body's detail) when it ran on the same control lattice the same way;
    /// returns whether it did.
    pub fn carry_state(&mut self, old: &FleshBody) -> bool {
        match (self, old) {
            (Self::Lattice(new), Self::Lattice(old)) => {
                if !new.lattice.same_shape(&old.lattice) {
                    return false;
                }
                new.q.clone_from(&old.q);
                new.v.clone_from(&old.v);
                new.constraints.clone_from(&old.constraints);
                true
            }
            (Self::Adaptive(new), Self::Adaptive(old)) => new.take_state(old),
            _ => false,
        }
    }

    /// Number of unknowns (3 scalars each): control vertices, plus active
    /// details.
    pub fn dof_count(&self) -> usize {
        match self {
            Self::Lattice(b) => b.vertex_count(),
            Self::Adaptive(b) => b.dof_count(),
        }
    }

    /// Active detail functions per level 1..=J (empty for the control
    /// lattice alone).
    pub fn detail_per_level(&self) -> Vec<usize> {
        match self {
            Self::Lattice(_) => Vec::new(),
            Self::Adaptive(b) => b.active_per_level()[1..].to_vec(),
        }
    }

    /// How many blending regions (§4.5); 0 or 1 for the global model.
    pub fn region_count(&self) -> usize {
        match self {
            Self::Lattice(b) => b.regions.len(),
            Self::Adaptive(b) => b.region_count(),
        }
    }

    /// Largest deviation of the region weights' sum from one.
    pub fn partition_error(&self) -> f64 {
        match self {
            Self::Lattice(b) => b.partition_error(),
            Self::Adaptive(b) => b.partition_error(),
        }
    }

    /// The edges to draw: the control lattice's, and for the adaptive body
    /// those of the `K_J` cells with an active detail at a corner, so the
    /// animator sees where detail is (indices into the field lattice).
    pub fn wire_edges(&self) -> Vec<[u32; 2]> {
        let control = self.control_vertices();
        let mut edges: Vec<[u32; 2]> = cell_edges(self.control_lattice())
            .into_iter()
            .map(|[a, b]| [control[a as usize] as u32, control[b as usize] as u32])
            .collect();
        if let Self::Adaptive(b) = self {
            let h = &b.hierarchy;
            let mut detail = vec![false; h.fine.vertex_count()];
            for &a in b.active_functions() {
                detail[a] = h.level_of[a] > 0;
            }
            let cells: Vec<[usize; 8]> = h
                .fine
                .cells
                .iter()
                .filter(|c| c.iter().any(|&a| detail[a]))
                .copied()
                .collect();
            edges.extend(edges_of(&cells));
        }
        edges.sort_unstable();
        edges.dedup();
        edges
    }
}

/// Each cell's material: the flesh's, with the Young's modulus of the part
/// it belongs to scaled ([`FemFlesh::part_stiffness`]): the part of the
/// joint carrying the bone nearest the cell's centre at rest. A part
/// (of stiffness, or of friction) that names no joint is refused.
pub fn cell_materials(
    character: &Character,
    flesh: &FemFlesh,
    lattice: &Lattice,
) -> Result<Vec<Material>, FleshError> {
    if let Some(p) = flesh
        .part_friction
        .iter()
        .find(|p| character.skeleton.find(&p.joint).is_none())
    {
        return Err(FleshError::PartJoint {
            joint: p.joint.clone(),
        });
    }
    let base = Material {
        young: flesh.young,
        poisson: flesh.poisson,
        density: flesh.density,
    };
    if flesh.part_stiffness.is_empty() || lattice.bones.is_empty() {
        return Ok(vec![base; lattice.cell_count()]);
    }
    let joints = &character.skeleton.joints;
    let mut scale_of_joint = vec![1.0; joints.len()];
    for p in &flesh.part_stiffness {
        let j = character
            .skeleton
            .find(&p.joint)
            .ok_or_else(|| FleshError::PartJoint {
                joint: p.joint.clone(),
            })?;
        scale_of_joint[j] = p.scale;
    }
    Ok((0..lattice.cell_count())
        .map(|c| {
            let centre = lattice.cell_corners(c).iter().sum::<DVec3>() / 8.0;
            let bone = lattice.nearest_bone(centre).expect("bones checked above");
            Material {
                young: base.young * scale_of_joint.get(bone.joint).copied().unwrap_or(1.0),
                ..base
            }
        })
        .collect())
}

/// Mass damping of the settling run (1/s): about critical for the flesh's
/// lowest modes.
const SETTLE_DAMPING: f64 = 40.0;
/// Simulated length of the settling run (s).
const SETTLE_TIME: f64 = 1.5;

fn settle_steps(h: f64) -> usize {
    (SETTLE_TIME / h).ceil() as usize
}

/// The edges of a lattice's cells, each once.
fn cell_edges(l: &Lattice) -> Vec<[u32; 2]> {
    edges_of(&l.cells)
}

/// The edges of a lattice's cells, each once (vertex pairs), for a wireframe.
pub fn lattice_wire_edges(l: &Lattice) -> Vec<[u32; 2]> {
    let mut edges = cell_edges(l);
    edges.sort_unstable();
    edges.dedup();
    edges
}

fn edges_of(cells: &[[usize; 8]]) -> Vec<[u32; 2]> {
    const EDGES: [[usize; 2]; 12] = [
        [0, 1],
        [2, 3],
        [4, 5],
        [6, 7],
        [0, 2],
        [1, 3],
        [4, 6],
        [5, 7],
        [0, 4],
        [1, 5],
        [2, 6],
        [3, 7],
    ];
    let mut edges: Vec<[u32; 2]> = cells
        .iter()
        .flat_map(|c| {
            EDGES.map(|[a, b]| {
                let (x, y) = (c[a] as u32, c[b] as u32);
                [x.min(y), x.max(y)]
            })
        })
        .collect();
    edges.sort_unstable();
    edges.dedup();
    edges
}
