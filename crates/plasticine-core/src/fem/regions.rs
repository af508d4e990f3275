//! Regions of blended local linearization (Capell §4.5).
//!
//! Each bone i owns a region: a cell complex K^i with its own (rest,
//! unrotated) stiffness K^i and mass, solved in the bone's frame and blended
//! with per-vertex weights W^i that form a partition of unity. The global
//! linear model is the single region "all cells, identity transform, weight
//! one".
//!
//! Weights are computed automatically from the skeleton (Capell lets the user
//! set them by hand; §4.5 asks for automation): with `d_i` the distance from a
//! vertex to bone i and d* the distance to the nearest bone,
//! `w_i = s((d_i − d*) / width)`, `s(t) = (1 − t²)³` for t < 1 and 0 beyond,
//! normalised to sum to one. The nearest bone always has w = 1 before
//! normalisation, a bone more than `width` further away has none, and the
//! weights are continuous (d* is), so regions overlap only near joints.
//!
//! Region cells: every cell with **any** vertex of positive weight (eq. 22
//! asks for all vertices). With that choice every vertex that carries weight
//! in region i has all its cells in K^i, so its row of the regional system is
//! exactly its row of the global one (rotated); eq. 22's rule can leave a
//! weighted vertex outside K^i with no regional Δv to blend.

use super::element::{
    CellElements, HexElement, Material, cell_jacobian, cell_point, corner_offset, trilinear_weights,
};
use super::lattice::Lattice;
use super::sparse::{Assembled, assemble, assemble_elements};
use glam::{DMat3, DVec3};

/// Marks a global vertex outside the region in `Region::local_of`.
pub const NOT_IN_REGION: u32 = u32::MAX;

/// One region of §4.5.
#[derive(Clone, Debug)]
pub struct Region {
    /// The bone whose transform T^i the region follows; None for the global
    /// linear model (identity).
    pub bone: Option<usize>,
    /// Global index of each local vertex (Capell's selection matrix Q^i).
    pub vertices: Vec<usize>,
    /// Local index of each global vertex, or `NOT_IN_REGION`.
    pub local_of: Vec<u32>,
    /// Global indices of the region's cells.
    pub cells: Vec<usize>,
    /// W^i per local vertex.
    pub weights: Vec<f64>,
    /// Rest stiffness, mass and gravity weights of the region's cells.
    pub matrices: Assembled,
}

impl Region {
    /// The region made of `cells` (global indices), following `bone`.
    pub fn new(
        lattice: &Lattice,
        cells: Vec<usize>,
        bone: Option<usize>,
        global_weights: &[f64],
        materials: &[Material],
        element: &HexElement,
        twist: Option<Twist>,
    ) -> Self {
        Self::build(
            lattice,
            cells,
            bone,
            global_weights,
            materials,
            twist,
            |n, lc, m| assemble(n, lc, m, element),
        )
    }

    /// As [`Region::new`], with per-cell elements (`elements` indexed by
    /// the lattice's cells; partial cells carry their own, §3.3).
    pub fn with_elements(
        lattice: &Lattice,
        cells: Vec<usize>,
        bone: Option<usize>,
        global_weights: &[f64],
        materials: &[Material],
        elements: &CellElements,
        twist: Option<Twist>,
    ) -> Self {
        let local = elements.select(&cells);
        Self::build(
            lattice,
            cells,
            bone,
            global_weights,
            materials,
            twist,
            |n, lc, m| assemble_elements(n, lc, m, &local),
        )
    }

    fn build(
        lattice: &Lattice,
        cells: Vec<usize>,
        bone: Option<usize>,
        global_weights: &[f64],
        materials: &[Material],
        twist: Option<Twist>,
        assemble_cells: impl FnOnce(usize, &[[usize; 8]], &[Material]) -> Assembled,
    ) -> Self {
        let mut local_of = vec![NOT_IN_REGION; lattice.vertex_count()];
        let mut vertices = Vec::new();
        let local_cells: Vec<[usize; 8]> = cells
            .iter()
            .map(|&c| {
                lattice.cells[c].map(|a| {
                    if local_of[a] == NOT_IN_REGION {
                        local_of[a] = vertices.len() as u32;
                        vertices.push(a);
                    }
                    local_of[a] as usize
                })
            })
            .collect();
        let mats: Vec<Material> = cells.iter().map(|&c| materials[c]).collect();
        let mut matrices = assemble_cells(vertices.len(), &local_cells, &mats);
        matrices.grid = Some(vertices.iter().map(|&a| lattice.vertex_coords[a]).collect());
        if let Some(twist) = twist {
            let bones: Vec<usize> = match bone {
                Some(b) => vec![b],
                None => (0..lattice.bones.len()).collect(),
            };
            add_twist(lattice, &cells, &local_cells, &bones, twist, &mut matrices);
        }
        let weights = vertices.iter().map(|&a| global_weights[a]).collect();
        Self {
            bone,
            vertices,
            local_of,
            cells,
            weights,
            matrices,
        }
    }

    /// Number of the region's vertices.
    pub fn len(&self) -> usize {
        self.vertices.len()
    }

    /// Whether the region has no vertex.
    pub fn is_empty(&self) -> bool {
        self.vertices.is_empty()
    }
}

/// The smooth compact falloff s(t) = (1 − t²)³ on [0, 1), 0 beyond.
pub fn falloff(t: f64) -> f64 {
    if t >= 1.0 {
        0.0
    } else {
        let u = 1.0 - t * t;
        u * u * u
    }
}

/// Partition-of-unity weights `W^i_a`, `[bone][vertex]`, from distances to the
/// bones (module docs). `width` is the blending width in metres.
pub fn bone_weights(lattice: &Lattice, width: f64) -> Vec<Vec<f64>> {
    let nb = lattice.bones.len();
    let mut w = vec![vec![0.0; lattice.vertex_count()]; nb];
    for (a, &p) in lattice.rest.iter().enumerate() {
        let d: Vec<f64> = lattice.bones.iter().map(|b| b.distance(p)).collect();
        let dmin = d.iter().copied().fold(f64::INFINITY, f64::min);
        let raw: Vec<f64> = d.iter().map(|&di| falloff((di - dmin) / width)).collect();
        let sum: f64 = raw.iter().sum();
        for i in 0..nb {
            w[i][a] = raw[i] / sum;
        }
        // A vertex bound to a bone belongs to that bone alone: it moves
        // rigidly with it, and its own region sees it as a known DOF.
        if let Some(b) = lattice.bone_of_vertex[a] {
            for (i, wi) in w.iter_mut().enumerate() {
                wi[a] = if i == b { 1.0 } else { 0.0 };
            }
        }
    }
    w
}

/// As [`build_regions`], with per-cell elements (§3.3 partial cells).
pub fn build_regions_with(
    lattice: &Lattice,
    materials: &[Material],
    elements: &CellElements,
    blend_width: Option<f64>,
    twist: Option<Twist>,
) -> Vec<Region> {
    let all: Vec<usize> = (0..lattice.cell_count()).collect();
    let Some(width) = blend_width.filter(|_| !lattice.bones.is_empty()) else {
        let ones = vec![1.0; lattice.vertex_count()];
        return vec![Region::with_elements(
            lattice, all, None, &ones, materials, elements, twist,
        )];
    };
    let weights = bone_weights(lattice, width);
    regions_with_weights(lattice, materials, elements, &weights, twist)
}

/// The regions of a lattice for given partition-of-unity weights
/// `[bone][vertex]` (e.g. [`bone_weights`] corrected by painted strokes):
/// region i holds every cell with a vertex of positive W^i.
pub fn regions_with_weights(
    lattice: &Lattice,
    materials: &[Material],
    elements: &CellElements,
    weights: &[Vec<f64>],
    twist: Option<Twist>,
) -> Vec<Region> {
    let all: Vec<usize> = (0..lattice.cell_count()).collect();
    weights
        .iter()
        .enumerate()
        .filter_map(|(i, w)| {
            let cells: Vec<usize> = all
                .iter()
                .copied()
                .filter(|&c| lattice.cells[c].iter().any(|&a| w[a] > 0.0))
                .collect();
            (!cells.is_empty()).then(|| {
                Region::with_elements(lattice, cells, Some(i), w, materials, elements, twist)
            })
        })
        .collect()
}

/// Checks the partition of unity: `Σ_i` `W^i_a` = 1 at every vertex.
pub fn partition_error(lattice: &Lattice, regions: &[Region]) -> f64 {
    let mut sum = vec![0.0; lattice.vertex_count()];
    for r in regions {
        for (l, &a) in r.vertices.iter().enumerate() {
            sum[a] += r.weights[l];
        }
    }
    sum.iter().map(|s| (s - 1.0).abs()).fold(0.0, f64::max)
}

/// The twist constraint of §4.6: a soft penalty `U = ½ k ∫_{Ω_β} d·d` on the
/// displacement, measured in the bone's frame, within `radius` of the bone.
/// A line of bone vertices lets the flesh turn about the bone without
/// deforming; this makes the bone act as if it were three-dimensional.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Twist {
    /// k, N/m⁴ (force per volume per metre of displacement).
    pub stiffness: f64,
    /// β, metres.
    pub radius: f64,
}

/// Samples per cell axis for the `Ω_β` integral: the region boundary (a
/// cylinder) cuts cells, so the integrand is not polynomial; midpoint
/// sampling on 4³ sub-cells resolves it to a few per cent.
const TWIST_SAMPLES: usize = 4;

/// Adds `k ∫_{Ω_β} φ^a φ^b I₃` (eq. 26) to the region's stiffness. The
/// Hessian is a multiple of the identity, so it is unchanged by the bone's
/// rotation: `R (K + k M_β) Rᵀ = R K Rᵀ + k M_β`, and in the local frame it
/// penalizes `u = T⁻¹(p) − r`, the displacement relative to the rigidly
/// moved bone, as §4.6 asks.
pub(crate) fn add_twist(
    lattice: &Lattice,
    cells: &[usize],
    local_cells: &[[usize; 8]],
    bones: &[usize],
    twist: Twist,
    matrices: &mut Assembled,
) {
    let size = lattice.cell_size;
    let w = size.x * size.y * size.z / (TWIST_SAMPLES * TWIST_SAMPLES * TWIST_SAMPLES) as f64;
    for (&c, local) in cells.iter().zip(local_cells) {
        // The cell's own trilinear map (a conformed cell is not its box).
        let corners = lattice.cell_corners(c);
        let volume = size.element_product();
        let mut m = [[0.0; 8]; 8];
        let mut any = false;
        for i in 0..TWIST_SAMPLES {
            for j in 0..TWIST_SAMPLES {
                for k in 0..TWIST_SAMPLES {
                    let s = (DVec3::new(i as f64, j as f64, k as f64) + 0.5) / TWIST_SAMPLES as f64;
                    let p = cell_point(&corners, s);
                    if !bones
                        .iter()
                        .any(|&b| lattice.bones[b].distance(p) <= twist.radius)
                    {
                        continue;
                    }
                    any = true;
                    let phi = trilinear_weights(s);
                    let wj = w * cell_jacobian(&corners, s).determinant() / volume;
                    for a in 0..8 {
                        for b in 0..8 {
                            m[a][b] += wj * phi[a] * phi[b];
                        }
                    }
                }
            }
        }
        if !any {
            continue;
        }
        debug_assert_eq!(corner_offset(0), [0, 0, 0]);
        for a in 0..8 {
            for b in 0..8 {
                let idx = matrices
                    .stiffness
                    .find(local[a], local[b])
                    .expect("cell pair in pattern");
                matrices.stiffness.blocks[idx] +=
                    DMat3::from_diagonal(DVec3::splat(twist.stiffness * m[a][b]));
            }
        }
    }
}
