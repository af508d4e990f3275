//! Physical blendshapes (Ma, Wang, Fyffe, Chen & Debevec, "A Blendshape
//! Model that Incorporates Physical Interaction", 2012).
//!
//! A blend is not the weighted sum of the targets' positions but the
//! equilibrium of a mass-spring system whose rest lengths are the weighted
//! sum of the targets' (`model`): a bend does not shrink through the
//! middle as under linear blending. The springs (`springs`) are the mesh's
//! edges, its 2-rings for bending and internal ones through the solid
//! (`interior`); edges too long are split first, if asked (`refine`); the system is held by an `anchor` inside it (or static
//! or pinned vertices) and solved by Newton–Raphson (`equilibrium`).
//! Obstacles push it (`contact`, §4): surface vertices found inside are
//! held on the obstacle's surface and the blend solved again.
//! Quasi-static: no velocities, equal masses.
//!
//! Reads `fem` (the mesh solid's inside test, the polar rotation) and `io`
//! (files, imported meshes), nothing above them.

mod anchor;
mod contact;
mod equilibrium;
mod export;
mod file;
mod interior;
mod intersect;
mod model;
mod refine;
mod rig;
mod springs;

pub use anchor::{Anchor, RigidMotion};
pub use contact::{Contact, MuscleObstacle, Obstacle};
pub use equilibrium::{Hessian, NewtonSettings, SolveError, SolveReport, SpringSystem};
pub use export::blend_morphs;
pub use file::{ImportError, load_rig, rig_from_meshes, save_rig};
pub use model::{Blend, BlendError, BlendModel, MAX_CONTACT_ROUNDS};
pub use refine::{RefineError, median_edge, split_long_edges};
pub use rig::{BlendRig, BlendTarget, Boundary, RigError, SpringConstants};
pub use springs::{SpringClass, SpringSet};

#[cfg(test)]
mod tests;
