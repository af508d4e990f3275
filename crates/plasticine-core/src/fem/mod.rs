//! Skeleton-driven lattice FEM flesh (Capell, Green, Curless, Duchamp &
//! Popović 2002, "Interactive Skeleton-Driven Dynamic Deformations"), CPU
//! back end.
//!
//! The flesh is embedded in a coarse control lattice of hexahedral cells
//! (`lattice`); the displacement is `d(x, t) = q_a(t) φ^a(x)` over the
//! trilinear basis of the lattice vertices (eq. 4–5). Precomputed cell
//! integrals (`element`, §3.3 and A.2 for the linear strain model) are
//! assembled into a sparse stiffness K and mass M (`sparse`, eq. 8, 14).
//! Each step solves the linearized implicit Euler system (eq. 15–16) with
//! conjugate gradients (`solver`): bones as known DOFs (eq. 17–18),
//! position constraints projected inside CG (§4.4, eq. 19–21), and blended
//! local linearization over bone regions (§4.5, `regions`).
//! Each region's system is constant in the bone's frame, so it is factored
//! once (`factor`, a sparse Cholesky) and precondition CG
//! with the exact inverse.
//!
//! The twist constraint of §4.6 is an option of the regions ([`Twist`]).
//!
//! An imported triangle mesh gets its lattice from `mesh_lattice` (the
//! mesh's inside voxelized, the cell size chosen for a vertex count), and
//! `import` makes a character of it on a skeleton (`plasticine
//! fem-import`). A mesh's inside test and nearest point go through
//! `mesh_tree`, an AABB tree over its triangles (also what a mesh obstacle
//! of a blend is queried by).
//!
//! [`flesh::FleshSim`] runs a character's FEM flesh in the application:
//! the lattice built around its muscles, painted region weights,
//! fixed steps driven by the skeleton, the flesh pose at any time of its
//! recent window, grabs; the muscles (and so the skin's constraints) ride
//! on it.
//!
//! The GPU back end (`fem_gpu::GpuFemBody`, in the application crate, next
//! to the wgpu context) runs the same step with the CG on the GPU (wgpu
//! compute, f32; `tests/it/fem_gpu.rs` measures the agreement).
//!
//! [`nonlinear::NonlinearBody`] is the fully nonlinear model of §3.2–3.3
//! (Green strain, St. Venant–Kirchhoff, Newton–Raphson static solve and
//! implicit-Euler step): the reference the linearizations are measured
//! against (`tests/it/fem_nonlinear.rs`).
//!
//! Cells that the object's surface cuts are integrated over the object only
//! (§3.3, `quadrature`): sub-cells inside the object, moment-fitted to a
//! 125-point rule per cut cell, exact for the linear and the nonlinear
//! integrands; [`quadrature::character_lattice`] builds a character's
//! lattice that way, [`FemBody::with_elements`] takes the elements.
//!
//! Bones lie on lattice edges (§3.1 (ii), §4.3): `snap` conforms a chain
//! of lattice vertices per bone onto it; the cells it moves are integrated
//! isoparametrically and embedded in by inverting their trilinear maps.
//!
//! The hierarchical basis of §3.1 and A.1 (lazy wavelets over the
//! subdivided lattices `K_j`, details that vanish on the skeleton) is
//! `hierarchy`; [`adapt::AdaptiveBody`] simulates on its active functions
//! (Galerkin-restricted `K_J` matrices) and refines and
//! coarsens with hysteresis by the rotation-free strain (§4.7).
//!
//! The adaptive body holds grabbed points (§4.4, rows built from P),
//! blends local linearizations over bone regions (§4.5) and takes the twist
//! constraint (§4.6), on box lattices and on characters' conformed,
//! cut-cell ones; it has no GPU path. A character's flesh runs it when its
//! [`FemFlesh::detail`](crate::character::FemFlesh::detail) asks for
//! adaptive detail ([`flesh_body::FleshBody`]).
//!
//! Dynamic morph targets (Galoppo 2008, ch. 5, `morph`) give the
//! flesh a sculpted rest shape and a stiffness at a few postures,
//! interpolated in pose space (RBF on the joints' log rotations); each
//! region then solves with its blended stiffness and rest offsets.
//! `morph_author` keeps the flesh, pulled by grabs at a posture, as a
//! target (§5.2).
//!
//! `dynamic` makes the skeleton respond (Galoppo 2008, ch. 3–4): its
//! core a rigid body coupled to the flesh in one implicit step, landing on
//! the ground with frictional contact (`crate::contact`).
//!
//! Data flows one way, skeleton → flesh → skin: this module reads
//! `character`, `kinematics` (the posed muscles), `shape` and `snapshot` (the
//! flesh pose it publishes); the skin reads the flesh pose from
//! [`FleshSim`], and nothing here reads the skin.

mod adapt;
mod cg;
mod conform;
mod coupling;
mod dynamic;
mod element;
mod factor;
mod flesh;
mod flesh_body;
mod hierarchy;
mod import;
mod lattice;
mod mesh_lattice;
mod mesh_tree;
mod morph;
mod morph_author;
mod nonlinear;
mod ordering;
mod quadrature;
mod regions;
mod skinning;
mod snap;
mod solver;
mod sparse;

pub use adapt::{AdaptError, AdaptReport, AdaptSettings, AdaptiveBody};
pub use coupling::{MuscleCoupling, polar_rotation};
pub use dynamic::{DynamicError, FLESH_FRICTION, FLESH_RESTITUTION, SceneError, root_frame};
pub use element::{CellElements, HexElement, MIN_JACOBIAN, Material, cell_point, corner_offset};
pub use flesh::{
    FLESH_STEP, FleshError, FleshPose, FleshSim, flesh_changed, flesh_lattice, forget_before,
    sample_window,
};
pub use flesh_body::{FleshBody, cell_materials, lattice_wire_edges, painted_weights};
pub use import::{MeshImport, fem_character_from_mesh};
pub use lattice::{
    Bone, BoneBinding, Embedding, Lattice, LatticeSettings, bone_transforms, muscle_centres,
    skeleton_bones, to_daffine,
};
pub use mesh_lattice::{MeshLatticeError, MeshSolid};
pub use mesh_tree::{TriangleTree, closest_point_on_triangle};
pub use morph_author::{Pull, REST_TARGET, next_name, sculpt_target, with_target, without_target};
pub use ordering::{nested_dissection, nested_dissection_dofs, permutation_pair};
pub use quadrature::{
    SubcellTest, character_inside, character_lattice, character_lattice_with_vertices,
    hierarchy_object_elements, object_elements, trim_to_object,
};
pub use regions::{Region, Twist, bone_weights, falloff};
pub use skinning::{NARROW_BLEND, joint_weights, vertex_bones};
pub use snap::{SnapReport, cell_quality, lattice_elements};
pub use sparse::{Assembled, assemble_elements};

pub use cg::{ConstraintBasis, LocalConstraint};
pub use nonlinear::{NewtonReport, NewtonSettings, NonlinearBody};
pub use solver::{
    CgReport, Energy, FemBody, FemSettings, Linearization, MassKind, PositionConstraint,
    StepReport, advance_state, lowest_frequency,
};
