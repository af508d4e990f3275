//! One bone's region of the adaptive body (blended local linearization):
//! what [`super::AdaptiveBody`] holds per bone, and `blend.rs` fills and
//! solves.

use crate::fem::solver::Scratch;
use crate::fem::sparse::Assembled;

/// One bone's region of the adaptive body.
#[derive(Clone, Debug)]
pub(super) struct AdaptRegion {
    pub(super) bone: usize,
    /// W^i at every `K_J` vertex (interpolated from the coarse weights).
    pub(super) node_weights: Vec<f64>,
    /// Whether each `K_J` vertex is a corner of a region `K_J` cell.
    pub(super) in_region: Vec<bool>,
    /// `K_J`'s matrices over the region's `K_J` cells (`K_J` numbering).
    pub(super) fine: Assembled,
    /// Global DOF of each local function; local index of each DOF.
    pub(super) dofs: Vec<usize>,
    pub(super) local_of: Vec<u32>,
    pub(super) weights: Vec<f64>,
    /// Local functions (nearly) redundant on the region's own flesh
    /// (`redundant::redundant_functions` with the region's masses: a rim function
    /// over empty cells, or one the details reproduce there): the region's
    /// system is singular along them, so they are held out of its solve
    /// (which also lets its Cholesky factor exist).
    pub(super) held: Vec<bool>,
    pub(super) system: Assembled,
    pub(super) scratch: Scratch,
}
