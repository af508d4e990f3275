//! The hierarchical basis of Capell §3.1 and appendix A.1 on a regular
//! lattice: lazy wavelets over the nested spaces V₀ ⊂ V₁ ⊂ … ⊂ `V_J` of
//! piecewise trilinear functions on the subdivided complexes `K_j`.
//!
//! Every vertex of the finest complex `K_J` hosts exactly one function of the
//! basis B: a vertex of K itself carries its level-0 hat φ^a ∈ V₀, and a
//! vertex that first appears in `K_j` (j ≥ 1) carries the level-j hat, the
//! function of `V_j` that is one there and zero at every other vertex of `K_j`
//! (a detail function). Functions are therefore named by their `K_J` vertex.
//!
//! A detail function joins B only if it vanishes on the skeleton ("include
//! φ^a if ... its restriction to S is zero"). Here S is the bone segments
//! and the pinned set: the closed faces, edges and cells of K all of whose
//! corners are bound to a bone or clamped (the lattice's "three-dimensional
//! bones", §4.3). A detail's support is the open box of half-width `h_j` around
//! its vertex; on the grid it meets a closed grid-aligned face exactly when
//! the vertex lies on that face, so the rule is "not on the pinned set, and
//! no bone segment through the support". Pinned coarse vertices are then the
//! only known DOFs, and every detail vanishes wherever a bone dictates the
//! displacement.
//!
//! A conformed lattice ([`super::snap`]: bones moved onto chains of edges,
//! cells no longer boxes) is subdivided through each cell's trilinear map
//! ([`Lattice::subdivide`]), and its skeleton is the chains themselves:
//! a detail is admissible when no pinned `K_J` vertex lies in its open
//! support (parametric, so it follows the distorted cells). A bone vertex
//! that could not be conformed (bound by distance) still pins its own
//! support, but a bone leaving its chain's edges by more than a `K_J` cell
//! is not seen.
//!
//! The simulation lives on `K_J`: the active functions, evaluated at the `K_J`
//! vertices, form a sparse prolongation P (`K_J` vertex × active function), the
//! fine displacement is `P q`, and the active system is the Galerkin
//! restriction `Pᵀ K_J P` ([`galerkin`]). With every detail active, B spans
//! `V_J` (less the functions pinned by S), the plain FEM space of `K_J`.

use super::lattice::Lattice;
use super::sparse::{Assembled, BlockCsr, ScalarOnPattern};
use glam::{DMat3, DVec3};

const NONE: u32 = u32::MAX;

/// Deepest subdivision supported: 2^4 = 16 fine cells per coarse cell and
/// axis is already 4096 fine cells per coarse one.
pub const MAX_LEVELS: u32 = 4;

/// The basis: the coarse lattice K, its subdivision `K_J`, and which `K_J`
/// vertices host an admissible function.
#[derive(Clone, Debug)]
pub struct Hierarchy {
    /// J, the number of subdivisions.
    pub levels: u32,
    /// The control lattice K (bones bound to its vertices).
    pub coarse: Lattice,
    /// `K_J`, the integration lattice.
    pub fine: Lattice,
    /// The level at which each `K_J` vertex first appears (0: a vertex of K).
    pub level_of: Vec<u8>,
    /// Whether each `K_J` vertex lies on the pinned set (there the field is
    /// the level-0 interpolation of the pinned coarse vertices).
    pub pinned: Vec<bool>,
    /// Whether the function of each `K_J` vertex belongs to B: every level-0
    /// function, and the details that vanish on S.
    pub admissible: Vec<bool>,
    /// The K vertex of each level-0 `K_J` vertex.
    pub coarse_vertex: Vec<Option<usize>>,
    /// The `K_J` vertex of each K vertex.
    pub fine_of_coarse: Vec<usize>,
    /// Dense grid of `K_J` vertex indices (NONE where absent).
    vertex_at: Vec<u32>,
}

/// Why a [`Hierarchy`] cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HierarchyError {
    /// Subdivision levels outside 1..=[`MAX_LEVELS`].
    #[error("the hierarchy needs 1 to {max} subdivision levels, got {0}", max = MAX_LEVELS)]
    Levels(u32),
    /// The pinned flags do not match the lattice.
    #[error("{flags} pinned flags for {vertices} lattice vertices")]
    PinnedFlags {
        /// Flags given.
        flags: usize,
        /// Vertices of the coarse lattice.
        vertices: usize,
    },
    /// An empty lattice.
    #[error("the lattice has no cells")]
    NoCells,
    /// A lattice whose subdivision lost a coarse vertex (a broken lattice).
    #[error("a coarse vertex is missing")]
    MissingCoarseVertex,
}

impl Hierarchy {
    /// The basis of `levels` subdivisions of `coarse`, where `pinned_coarse`
    /// marks the coarse vertices with known displacements besides the bone
    /// vertices (clamps).
    pub fn new(
        coarse: Lattice,
        levels: u32,
        pinned_coarse: &[bool],
    ) -> Result<Self, HierarchyError> {
        if levels == 0 || levels > MAX_LEVELS {
            return Err(HierarchyError::Levels(levels));
        }
        if pinned_coarse.len() != coarse.vertex_count() {
            return Err(HierarchyError::PinnedFlags {
                flags: pinned_coarse.len(),
                vertices: coarse.vertex_count(),
            });
        }
        if coarse.cell_count() == 0 {
            return Err(HierarchyError::NoCells);
        }
        let conformed = (0..coarse.cell_count()).any(|c| !coarse.is_box(c));
        let fine = coarse.subdivide(levels);
        let f = 1usize << levels;
        let vd = fine.dims.map(|d| d + 1);
        let mut vertex_at = vec![NONE; vd[0] * vd[1] * vd[2]];
        for (a, c) in fine.vertex_coords.iter().enumerate() {
            vertex_at[c[0] + vd[0] * (c[1] + vd[1] * c[2])] = a as u32;
        }
        let cvd = coarse.dims.map(|d| d + 1);
        let mut coarse_at = vec![NONE; cvd[0] * cvd[1] * cvd[2]];
        for (a, c) in coarse.vertex_coords.iter().enumerate() {
            coarse_at[c[0] + cvd[0] * (c[1] + cvd[1] * c[2])] = a as u32;
        }
        let coarse_index = |c: [usize; 3]| {
            (c[0] < cvd[0] && c[1] < cvd[1] && c[2] < cvd[2])
                .then(|| coarse_at[c[0] + cvd[0] * (c[1] + cvd[1] * c[2])])
                .filter(|&v| v != NONE)
                .map(|v| v as usize)
        };
        let is_pinned = |a: usize| pinned_coarse[a] || coarse.bone_of_vertex[a].is_some();
        let n = fine.vertex_count();
        let mut level_of = vec![0u8; n];
        let mut pinned = vec![false; n];
        let mut coarse_vertex = vec![None; n];
        let mut fine_of_coarse = vec![0; coarse.vertex_count()];
        for (a, c) in fine.vertex_coords.iter().enumerate() {
            level_of[a] = (0..=levels)
                .find(|&j| c.iter().all(|x| x % (1 << (levels - j)) == 0))
                .unwrap_or(levels) as u8;
            // The smallest face of K holding the vertex: its corners take
            // both neighbours along every axis where c is off the coarse grid.
            let mut all_pinned = true;
            for corner in 0..8usize {
                let cc: [usize; 3] = std::array::from_fn(|i| {
                    let base = c[i] / f;
                    base + usize::from(c[i] % f != 0 && (corner >> i) & 1 == 1)
                });
                match coarse_index(cc) {
                    Some(v) if is_pinned(v) => {}
                    _ => all_pinned = false,
                }
            }
            pinned[a] = all_pinned;
            if level_of[a] == 0 {
                let v =
                    coarse_index(c.map(|x| x / f)).ok_or(HierarchyError::MissingCoarseVertex)?;
                coarse_vertex[a] = Some(v);
                fine_of_coarse[v] = a;
            }
        }
        let h = fine.cell_size;
        let admissible = (0..n)
            .map(|a| {
                let j = level_of[a] as u32;
                if j == 0 {
                    return true;
                }
                if pinned[a] {
                    return false;
                }
                let s = 1i64 << (levels - j);
                if conformed {
                    // The bones run along chains of pinned edges: S meets
                    // the open support exactly when a pinned K_J vertex
                    // lies inside it (a grid line through the open box of
                    // integer half-width s passes a vertex inside it).
                    let c = fine.vertex_coords[a].map(|x| x as i64);
                    let vd = fine.dims.map(|d| d as i64 + 1);
                    for dz in 1 - s..s {
                        for dy in 1 - s..s {
                            for dx in 1 - s..s {
                                let g = [c[0] + dx, c[1] + dy, c[2] + dz];
                                if (0..3).any(|i| g[i] < 0 || g[i] >= vd[i]) {
                                    continue;
                                }
                                let b = vertex_at[(g[0] + vd[0] * (g[1] + vd[1] * g[2])) as usize];
                                if b != NONE && pinned[b as usize] {
                                    return false;
                                }
                            }
                        }
                    }
                    return true;
                }
                // The open support box, shrunk by a hair so a segment that
                // only grazes its boundary (where φ^a is zero) does not count.
                let half = h * s as f64 * (1.0 - 1e-9);
                let centre = fine.rest[a];
                !coarse
                    .bones
                    .iter()
                    .any(|b| segment_meets_box(b.head, b.tail, centre - half, centre + half))
            })
            .collect();
        Ok(Self {
            levels,
            coarse,
            fine,
            level_of,
            pinned,
            admissible,
            coarse_vertex,
            fine_of_coarse,
            vertex_at,
        })
    }

    /// Leaves out of B every detail whose support holds no integrated
    /// volume (`volume` per `K_J` cell): under integration only where the
    /// object is, a detail outside the object has no mass and no stiffness.
    pub fn exclude_empty_details(&mut self, volume: &[f64]) {
        for a in 0..self.fine.vertex_count() {
            let j = self.level_of[a] as u32;
            if j == 0 || !self.admissible[a] {
                continue;
            }
            let s = self.spacing(j) as i64;
            let c = self.fine.vertex_coords[a].map(|x| x as i64);
            let mut any = false;
            for dz in -s..s {
                for dy in -s..s {
                    for dx in -s..s {
                        let g = [c[0] + dx, c[1] + dy, c[2] + dz];
                        if g.iter().any(|&x| x < 0) {
                            continue;
                        }
                        if let Some(cell) = self.fine.cell_at(g.map(|x| x as usize)) {
                            any |= volume[cell] > 0.0;
                        }
                    }
                }
            }
            self.admissible[a] = any;
        }
    }

    /// The `K_J` vertex at fine grid coordinates, if any.
    pub fn vertex_at(&self, c: [i64; 3]) -> Option<usize> {
        let vd = self.fine.dims.map(|d| d as i64 + 1);
        if (0..3).any(|i| c[i] < 0 || c[i] >= vd[i]) {
            return None;
        }
        let v = self.vertex_at[(c[0] + vd[0] * (c[1] + vd[1] * c[2])) as usize];
        (v != NONE).then_some(v as usize)
    }

    /// Half-width of a level-j function's support, in `K_J` cells: 2^(J − j).
    pub fn spacing(&self, level: u32) -> usize {
        1 << (self.levels - level)
    }

    /// The function hosted by `K_J` vertex `a`, evaluated at the `K_J` vertices
    /// of its support: (vertex, φ^a there), the product of hats
    /// `Π (1 − |Δ|/s)` (A.1).
    pub fn function_values(&self, a: usize) -> Vec<(usize, f64)> {
        let s = self.spacing(self.level_of[a] as u32) as i64;
        let c = self.fine.vertex_coords[a].map(|x| x as i64);
        let mut out = Vec::with_capacity(((2 * s - 1) as usize).pow(3));
        for dz in 1 - s..s {
            for dy in 1 - s..s {
                for dx in 1 - s..s {
                    if let Some(b) = self.vertex_at([c[0] + dx, c[1] + dy, c[2] + dz]) {
                        let hat = |d: i64| 1.0 - d.abs() as f64 / s as f64;
                        out.push((b, hat(dx) * hat(dy) * hat(dz)));
                    }
                }
            }
        }
        out
    }

    /// The prolongation of the active functions (`K_J` vertex indices, in the
    /// order of the DOFs).
    pub fn prolongation(&self, active: &[usize]) -> Prolongation {
        let mut rows = vec![Vec::new(); self.fine.vertex_count()];
        let cols: Vec<Vec<(u32, f64)>> = active
            .iter()
            .enumerate()
            .map(|(k, &a)| {
                let values = self.function_values(a);
                for &(b, w) in &values {
                    rows[b].push((k as u32, w));
                }
                values.into_iter().map(|(b, w)| (b as u32, w)).collect()
            })
            .collect();
        Prolongation { rows, cols }
    }
}

/// P as both its rows (`K_J` vertex → (DOF, φ)) and columns (DOF → (`K_J`
/// vertex, φ)).
#[derive(Clone, Debug, Default)]
pub struct Prolongation {
    /// Per `K_J` vertex, the (DOF, φ value) pairs of the active functions nonzero there.
    pub rows: Vec<Vec<(u32, f64)>>,
    /// Per DOF (active function), its (`K_J` vertex, φ value) pairs.
    pub cols: Vec<Vec<(u32, f64)>>,
}

impl Prolongation {
    /// The fine field `P q`.
    pub fn apply(&self, q: &[DVec3]) -> Vec<DVec3> {
        self.rows
            .iter()
            .map(|row| row.iter().map(|&(k, w)| q[k as usize] * w).sum())
            .collect()
    }

    /// `Pᵀ f`: a fine load as generalized forces on the DOFs.
    pub fn restrict(&self, f: &[DVec3]) -> Vec<DVec3> {
        self.cols
            .iter()
            .map(|col| col.iter().map(|&(b, w)| f[b as usize] * w).sum())
            .collect()
    }
}

/// The Galerkin restriction of the `K_J` matrices to the active space:
/// stiffness `Pᵀ K_J P`, mass `Pᵀ diag(m_J) P` (the kinetic energy of the
/// fine field with `K_J`'s lumped mass, stored as the consistent mass), its
/// row sums as the lumped mass, and gravity weights `Pᵀ (∫ρφ)`.
pub fn galerkin(fine: &Assembled, p: &Prolongation) -> Assembled {
    let n = p.cols.len();
    let k = &fine.stiffness;
    // T = K_J P, row by row, with a dense scatter over the DOFs.
    let mut acc = vec![DMat3::ZERO; n];
    let mut seen = vec![false; n];
    let mut touched: Vec<u32> = Vec::new();
    let t: Vec<Vec<(u32, DMat3)>> = (0..k.rows())
        .map(|g| {
            for e in k.row_ptr[g]..k.row_ptr[g + 1] {
                let b = k.blocks[e];
                for &(col, w) in &p.rows[k.col[e] as usize] {
                    let c = col as usize;
                    if !seen[c] {
                        seen[c] = true;
                        touched.push(col);
                    }
                    acc[c] += b * w;
                }
            }
            touched
                .drain(..)
                .map(|c| {
                    seen[c as usize] = false;
                    (c, std::mem::replace(&mut acc[c as usize], DMat3::ZERO))
                })
                .collect()
        })
        .collect();
    // Row α of Pᵀ T and of Pᵀ diag(m) P.
    let mut macc = vec![0.0; n];
    let mut row_ptr = vec![0usize];
    let mut cols = Vec::new();
    let mut blocks = Vec::new();
    let mut mass_values = Vec::new();
    let mut lumped_mass = vec![0.0; n];
    let mut gravity_weight = vec![0.0; n];
    for (alpha, col_alpha) in p.cols.iter().enumerate() {
        for &(g, wa) in col_alpha {
            let g = g as usize;
            gravity_weight[alpha] += wa * fine.gravity_weight[g];
            for &(beta, tb) in &t[g] {
                let c = beta as usize;
                if !seen[c] {
                    seen[c] = true;
                    touched.push(beta);
                }
                acc[c] += tb * wa;
            }
            let m = wa * fine.lumped_mass[g];
            for &(beta, wb) in &p.rows[g] {
                macc[beta as usize] += m * wb;
            }
        }
        touched.sort_unstable();
        for c in touched.drain(..) {
            let ci = c as usize;
            seen[ci] = false;
            cols.push(c);
            blocks.push(std::mem::replace(&mut acc[ci], DMat3::ZERO));
            lumped_mass[alpha] += macc[ci];
            mass_values.push(std::mem::replace(&mut macc[ci], 0.0));
        }
        row_ptr.push(cols.len());
    }
    Assembled {
        stiffness: BlockCsr {
            row_ptr,
            col: cols,
            blocks,
        },
        consistent_mass: ScalarOnPattern {
            values: mass_values,
        },
        lumped_mass,
        gravity_weight,
        grid: None,
    }
}

/// Whether the segment [p, q] meets the open box (lo, hi) (slab test).
fn segment_meets_box(p: DVec3, q: DVec3, lo: DVec3, hi: DVec3) -> bool {
    let d = q - p;
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for i in 0..3 {
        if d[i].abs() < 1e-300 {
            if p[i] <= lo[i] || p[i] >= hi[i] {
                return false;
            }
            continue;
        }
        let (a, b) = ((lo[i] - p[i]) / d[i], (hi[i] - p[i]) / d[i]);
        t0 = t0.max(a.min(b));
        t1 = t1.min(a.max(b));
    }
    t0 < t1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block() -> Hierarchy {
        let l = Lattice::grid_box(DVec3::ZERO, DVec3::splat(0.1), [3, 2, 2]);
        let pinned = vec![false; l.vertex_count()];
        Hierarchy::new(l, 2, &pinned).unwrap()
    }

    #[test]
    fn every_fine_vertex_hosts_one_function_of_its_level() {
        let h = block();
        let counts: Vec<usize> = (0..=2)
            .map(|j| h.level_of.iter().filter(|&&l| l == j).count())
            .collect();
        // K: 4·3·3 vertices; K₁: 7·5·5; K₂: 13·9·9.
        assert_eq!(counts, vec![36, 7 * 5 * 5 - 36, 13 * 9 * 9 - 7 * 5 * 5]);
        // A detail vanishes at every other vertex of its level (lazy wavelet).
        for a in 0..h.fine.vertex_count() {
            let j = h.level_of[a] as u32;
            let s = h.spacing(j);
            for (b, w) in h.function_values(a) {
                let on_level = h.fine.vertex_coords[b].iter().all(|x| x % s == 0);
                if on_level {
                    assert_eq!(w, if a == b { 1.0 } else { 0.0 });
                }
            }
        }
    }

    #[test]
    fn segment_box_test_is_open() {
        let (lo, hi) = (DVec3::ZERO, DVec3::ONE);
        let x = DVec3::X;
        assert!(segment_meets_box(-x, 2.0 * x + 0.5 * DVec3::ONE, lo, hi));
        // Along a face: not in the open box.
        assert!(!segment_meets_box(-x, 2.0 * x, lo, hi));
        assert!(!segment_meets_box(
            DVec3::splat(2.0),
            DVec3::splat(3.0),
            lo,
            hi
        ));
    }
}
