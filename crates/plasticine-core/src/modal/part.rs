//! A vibrating part (DyRT §2, §5): the lattice vertices of one joint's
//! flesh, its lowest modes with the seams held, their damping and how the
//! bone's motion excites them.
//!
//! A lattice vertex belongs to the part of its largest bone-region weight
//! (the part is the joint carrying that bone). It is free unless it is bound
//! to a bone; the other parts' vertices are held while a part's modes are
//! computed (DyRT's fixed seam vertices), so a part's modes fade to zero
//! across the cells it shares with its neighbours and the field stays
//! continuous however the parts vibrate.

use super::eigen::{EigenError, SparseModes, lowest_modes};
use super::transfer::Transfer;
use crate::character::{Character, ModalPart};
use crate::fem::Assembled;
use crate::fem::Lattice;
use crate::fem::nested_dissection_dofs;
use glam::DVec3;

/// Free DOFs up to which a part's modes come from the dense solver (the
/// whole spectrum, n³); above, from the sparse shift-and-invert one (the
/// issue's 1,500: on the penguin's 2,769-vertex lattice, whose larger parts
/// fall between, 0.57–0.71 s per part at 2,400 and 0.34–0.49 s at 1,500).
pub const DENSE_BELOW: usize = 1500;

/// Modes whose transfer is below this fraction of the part's strongest are
/// dropped: the skeleton cannot excite them (DyRT §5).
pub const MIN_EXCITATION: f64 = 0.01;

/// Modes the sparse solver first computes beyond those asked for: one in
/// this many more (rounded up), the stand-ins for the unexcitable ones
/// dropped (the figure's parts drop 0 to 3 of their lowest 16).
const CANDIDATE_SHARE: usize = 4;

/// A part's modes, ready to be stepped.
#[derive(Clone, Debug)]
pub struct PartModes {
    /// The joint whose bones carry the part.
    pub joint: usize,
    /// Its name, for messages.
    pub name: String,
    /// Lattice vertices that move in the modes.
    pub free: Vec<usize>,
    /// Angular frequency `ω_i` of each kept mode (rad/s), ascending.
    pub omega: Vec<f64>,
    /// Damping ratio `ξ_i` = `½(α/ω_i` + `βω_i`) (DyRT eq. 10).
    pub damping: Vec<f64>,
    /// Mode shapes per free vertex (mass-normalised: `ΦᵀMΦ` = I).
    pub shapes: Vec<Vec<DVec3>>,
    /// Each mode's transfer from the bone's acceleration.
    pub transfer: Vec<Transfer>,
    /// Largest |`q_i`| the force filter allows (the clamp over the mode's
    /// largest vertex displacement).
    pub limit: Vec<f64>,
    /// Each mode's largest vertex displacement per unit amplitude, m.
    pub peak: Vec<f64>,
    /// The origin of the transfer (the part's rest centroid).
    pub origin: DVec3,
    /// Extent of the part (largest distance of a vertex from its centroid), m.
    pub size: f64,
    /// Modes computed but dropped (overdamped or not excitable).
    pub dropped: usize,
}

impl PartModes {
    /// The part as a cache's header records it: its joint and frequencies.
    pub fn cache_record(&self) -> crate::io::CacheModalPart {
        crate::io::CacheModalPart {
            name: self.name.clone(),
            omega: self.omega.iter().map(|&w| w as f32).collect(),
        }
    }
}

/// Why a part cannot vibrate (it rides rigidly).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PartError {
    /// The joint is not in the skeleton.
    #[error("part '{0}': the skeleton has no such joint")]
    UnknownJoint(String),
    /// The joint carries no flesh.
    #[error("part '{0}': no lattice vertex belongs to it")]
    NoFlesh(String),
    /// The eigenproblem failed.
    #[error("part '{part}': {error}")]
    Eigen {
        /// The part's joint.
        part: String,
        /// What failed.
        error: EigenError,
    },
    /// Every mode is overdamped or cannot be excited.
    #[error("part '{0}': every mode is overdamped (ξ ≥ 1) or cannot be excited by its bone")]
    NoModes(String),
}

/// The part (joint) of every lattice vertex: the joint of the bone with the
/// largest region weight (`weights[bone][vertex]`).
pub fn part_of_vertices(lattice: &Lattice, weights: &[Vec<f64>]) -> Vec<usize> {
    (0..lattice.vertex_count())
        .map(|a| {
            let bone = (0..lattice.bones.len())
                .max_by(|&i, &j| weights[i][a].total_cmp(&weights[j][a]))
                .unwrap_or(0);
            lattice.bones[bone].joint
        })
        .collect()
}

/// What a part is built from: the lattice, each vertex's part (from
/// [`part_of_vertices`]), the assembled K and lumped M, and the flesh's
/// mass- and stiffness-proportional damping α, β.
#[derive(Clone, Copy)]
pub struct PartSource<'a> {
    /// The flesh's lattice (rest positions, bone-bound vertices, cells).
    pub lattice: &'a Lattice,
    /// The part (joint) of every lattice vertex.
    pub owner: &'a [usize],
    /// K and the lumped mass of the whole lattice.
    pub matrices: &'a Assembled,
    /// Mass-proportional damping α (1/s).
    pub alpha: f64,
    /// Stiffness-proportional damping β (s).
    pub beta: f64,
}

/// The free block of K, as (row, column, value) over the free vertices' DOFs
/// (3 per vertex in the order of `free`, both triangles), and its lumped
/// mass per DOF.
pub fn free_block(matrices: &Assembled, free: &[usize]) -> (Vec<(usize, usize, f64)>, Vec<f64>) {
    let k_csr = &matrices.stiffness;
    let mut local = vec![usize::MAX; k_csr.rows()];
    for (l, &a) in free.iter().enumerate() {
        local[a] = l;
    }
    let mut k = Vec::new();
    for (l, &a) in free.iter().enumerate() {
        for e in k_csr.row_ptr[a]..k_csr.row_ptr[a + 1] {
            let lb = local[k_csr.col[e] as usize];
            if lb == usize::MAX {
                continue;
            }
            let block = k_csr.blocks[e];
            for r in 0..3 {
                for c in 0..3 {
                    k.push((3 * l + r, 3 * lb + c, block.col(c)[r]));
                }
            }
        }
    }
    let mass = free
        .iter()
        .flat_map(|&a| [matrices.lumped_mass[a]; 3])
        .collect();
    (k, mass)
}

/// Builds the modes of the part `part` of `character`.
pub fn build_part(
    character: &Character,
    part: &ModalPart,
    source: PartSource,
) -> Result<PartModes, PartError> {
    let joint = character
        .skeleton
        .find(&part.joint)
        .ok_or_else(|| PartError::UnknownJoint(part.joint.clone()))?;
    part_modes(joint, part, source)
}

/// Builds the modes of the part of joint index `joint` (`part` gives its
/// name, how many modes and the clamp).
pub fn part_modes(
    joint: usize,
    part: &ModalPart,
    source: PartSource,
) -> Result<PartModes, PartError> {
    let PartSource {
        lattice,
        owner,
        matrices,
        alpha,
        beta,
    } = source;
    let name = part.joint.clone();
    let mine: Vec<usize> = (0..lattice.vertex_count())
        .filter(|&a| owner[a] == joint)
        .collect();
    if mine.is_empty() {
        return Err(PartError::NoFlesh(name));
    }
    let free: Vec<usize> = mine
        .iter()
        .copied()
        .filter(|&a| lattice.bone_of_vertex[a].is_none())
        .collect();
    let eigen = |error| PartError::Eigen {
        part: name.clone(),
        error,
    };
    if free.is_empty() {
        return Err(eigen(EigenError::Empty));
    }
    // Held vertices are Dirichlet conditions of the free block: without one
    // in any of its cells K_ff is singular (the iterative solver would spin
    // on zero frequencies), so say so before solving.
    let mut is_free = vec![false; lattice.vertex_count()];
    for &a in &free {
        is_free[a] = true;
    }
    let held = lattice
        .cells
        .iter()
        .any(|cell| cell.iter().any(|&a| is_free[a]) && cell.iter().any(|&a| !is_free[a]));
    if !held {
        return Err(eigen(EigenError::Floating));
    }
    let n = 3 * free.len();
    let asked = part.modes;
    if asked > n {
        return Err(eigen(EigenError::TooManyModes { asked, dofs: n }));
    }
    let (k, mass) = free_block(matrices, &free);
    // One mass per vertex: the DOFs' come in threes.
    let masses: Vec<f64> = mass.iter().step_by(3).copied().collect();
    // The part keeps the lowest `asked` modes its bone can excite, so more
    // are computed than asked, to stand in for the ones dropped: the dense
    // solver has them all at once, the sparse one computes a quarter more,
    // then twice as many if that fell short.
    let rest: Vec<DVec3> = free.iter().map(|&a| lattice.rest[a]).collect();
    let origin = rest.iter().sum::<DVec3>() / rest.len() as f64;
    let size = mine
        .iter()
        .map(|&a| lattice.rest[a].distance(origin))
        .fold(0.0, f64::max)
        .max(1e-6);
    let most = (2 * asked).min(n);
    let mut candidates = if n <= DENSE_BELOW {
        most
    } else {
        (asked + asked.div_ceil(CANDIDATE_SHARE)).min(n)
    };
    let mut sparse = if n <= DENSE_BELOW {
        None
    } else {
        // Nested dissection of the free vertices by grid planes: a
        // fraction of the fill (and time) of the factor under AMD.
        let coords: Vec<[usize; 3]> = free.iter().map(|&a| lattice.vertex_coords[a]).collect();
        let order = nested_dissection_dofs(&coords);
        Some(SparseModes::new(n, &k, &mass, Some(&order)).map_err(eigen)?)
    };
    let out = loop {
        let modes = match &mut sparse {
            None => {
                let mut dense = vec![0.0; n * n];
                for &(r, c, v) in &k {
                    dense[r * n + c] = v;
                }
                lowest_modes(&dense, &mass, candidates)
            }
            Some(solver) => solver.lowest(candidates),
        }
        .map_err(eigen)?;
        let shapes: Vec<Vec<DVec3>> = modes
            .shapes
            .iter()
            .map(|s| {
                // A mode's sign is arbitrary: fix it (its largest component
                // positive) so a cache's amplitudes mean the same modes when an
                // export computes them again.
                let sign = s
                    .iter()
                    .copied()
                    .fold(0.0f64, |m, v| if v.abs() > m.abs() { v } else { m })
                    .signum();
                s.chunks(3)
                    .map(|c| DVec3::new(c[0], c[1], c[2]) * sign)
                    .collect()
            })
            .collect();
        let transfer: Vec<Transfer> = shapes
            .iter()
            .map(|s| Transfer::new(s, &rest, &masses, origin))
            .collect();
        let strongest = transfer
            .iter()
            .map(|t| t.strength(size))
            .fold(0.0, f64::max);
        let mut out = PartModes {
            joint,
            name: name.clone(),
            free: free.clone(),
            omega: Vec::new(),
            damping: Vec::new(),
            shapes: Vec::new(),
            transfer: Vec::new(),
            limit: Vec::new(),
            peak: Vec::new(),
            origin,
            size,
            dropped: 0,
        };
        for ((omega, shape), t) in modes.omega.into_iter().zip(shapes).zip(transfer) {
            let xi = 0.5 * (alpha / omega + beta * omega);
            if out.omega.len() == asked {
                break;
            }
            if xi >= 1.0 || t.strength(size) < MIN_EXCITATION * strongest {
                out.dropped += 1;
                continue;
            }
            let largest = shape.iter().map(|p| p.length()).fold(0.0, f64::max);
            out.limit.push(part.clamp * size / largest.max(1e-300));
            out.peak.push(largest);
            out.omega.push(omega);
            out.damping.push(xi);
            out.shapes.push(shape);
            out.transfer.push(t);
        }
        if out.omega.len() == asked || candidates >= most {
            break out;
        }
        candidates = most;
    };
    if out.omega.is_empty() {
        return Err(PartError::NoModes(name));
    }
    Ok(out)
}
