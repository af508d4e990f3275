//! What can go wrong building or stepping an [`super::AdaptiveBody`]: each
//! variant names the value that is out of range or the two counts that
//! disagree, in the words of the message.

use super::super::element::MaterialError;
use super::super::hierarchy::HierarchyError;
use super::super::quadrature::QuadratureError;
use glam::DVec3;

/// Why an adaptive body cannot be built, stepped or constrained as asked.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum AdaptError {
    /// Each level needs one refine and one coarsen threshold.
    #[error(
        "{levels} levels need {levels} refine and {levels} coarsen thresholds, got {refine} and {coarsen}"
    )]
    Thresholds {
        /// Levels asked for.
        levels: u32,
        /// Refine thresholds given.
        refine: usize,
        /// Coarsen thresholds given.
        coarsen: usize,
    },
    /// A level's thresholds out of order (hysteresis needs coarsen < refine).
    #[error(
        "level {level}: need 0 ≤ coarsen threshold < refine threshold, got {coarsen} and {refine}"
    )]
    ThresholdOrder {
        /// The level.
        level: usize,
        /// Its coarsen threshold.
        coarsen: f64,
        /// Its refine threshold.
        refine: f64,
    },
    /// One material per coarse cell.
    #[error("{materials} materials for {cells} cells")]
    Materials {
        /// Materials given.
        materials: usize,
        /// Coarse cells.
        cells: usize,
    },
    /// A material out of range.
    #[error(transparent)]
    Material(#[from] MaterialError),
    /// One clamp (or none) per coarse vertex.
    #[error("{clamps} clamps for {vertices} vertices")]
    Clamps {
        /// Clamps given.
        clamps: usize,
        /// Coarse vertices.
        vertices: usize,
    },
    /// h ≤ 0 or not finite.
    #[error("time step must be > 0, got {0}")]
    TimeStep(f64),
    /// The blended local linearization's width ≤ 0 or not finite.
    #[error("blend width must be > 0, got {0}")]
    BlendWidth(f64),
    /// The basis cannot be built.
    #[error(transparent)]
    Hierarchy(#[from] HierarchyError),
    /// The cut cells' quadrature cannot be built.
    #[error(transparent)]
    Quadrature(#[from] QuadratureError),
    /// One element per fine cell.
    #[error("{elements} elements for {cells} fine cells")]
    Elements {
        /// Elements made.
        elements: usize,
        /// Fine cells.
        cells: usize,
    },
    /// One transform per bone.
    #[error("{transforms} bone transforms for {bones} bones")]
    BoneTransforms {
        /// Transforms given.
        transforms: usize,
        /// Bones of the lattice.
        bones: usize,
    },
    /// One extra force per fine vertex.
    #[error("{forces} forces for {vertices} fine vertices")]
    Forces {
        /// Forces given.
        forces: usize,
        /// Fine vertices.
        vertices: usize,
    },
    /// Region weights belong to the blended local linearization.
    #[error("region weights need blended local linearization")]
    RegionWeightsNeedBlending,
    /// Region weights are bones × coarse vertices.
    #[error("region weights must be {bones} bones × {vertices} coarse vertices")]
    RegionWeightsShape {
        /// Bones of the lattice.
        bones: usize,
        /// Coarse vertices.
        vertices: usize,
    },
    /// A grab at or towards a non-finite point.
    #[error("grab at {point} towards {target}: not finite")]
    GrabNotFinite {
        /// Where the grab holds the flesh (rest space).
        point: DVec3,
        /// The displacement it holds it at.
        target: DVec3,
    },
    /// A grab outside the lattice.
    #[error("grab at {0}: outside the lattice")]
    GrabOutside(DVec3),
    /// A constraint embedded in another lattice.
    #[error("constraint {index}: cell {cell} of {cells} K_J cells")]
    ConstraintCell {
        /// The constraint.
        index: usize,
        /// Its cell.
        cell: usize,
        /// Cells of `K_J`.
        cells: usize,
    },
    /// A constraint with a non-finite target or weight.
    #[error("constraint {0}: not finite")]
    ConstraintNotFinite(usize),
}
