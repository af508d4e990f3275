//! Sparse global matrices of the lattice: 3×3 block CSR, one block row per
//! lattice vertex (a basis function φ^a carries the 3-vector `q_a`), and the
//! assembly of the cell integrals into the stiffness K, the consistent and
//! lumped mass M and the gravity load (Capell eq. 8, 14).
//!
//! Two vertices are coupled exactly when they share a cell, so the pattern
//! has at most 27 blocks a row. The consistent mass is scalar per block pair
//! (`M^{ab} I₃`) and shares K's pattern.

use super::element::{CellElements, HexElement, Material};
use glam::{DMat3, DVec3};
use rayon::prelude::*;

/// Which mass matrix the dynamics use (both are assembled here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MassKind {
    /// Row-sum lumped (diagonal) mass `m_a` = ∫ρφ^a. The default: it keeps the
    /// system matrix's diagonal dominant for the Jacobi preconditioner, makes
    /// kinetic energy a per-vertex sum, and with trilinear hexes (too stiff
    /// in bending) its lower frequencies partly offset the stiffness error.
    Lumped,
    /// Consistent mass M^{ab} = ∫ρφ^aφ^b (eq. 8), the Galerkin choice.
    Consistent,
}

/// Below this many block rows a product runs on one thread: a 200-vertex
/// lattice's product takes a few microseconds, about what it costs rayon to
/// wake the pool, and the solver does hundreds of products a frame.
pub const PARALLEL_ROWS: usize = 4096;

/// Symmetric 3×3 block sparse matrix in compressed sparse row form.
#[derive(Clone, Debug, Default)]
pub struct BlockCsr {
    /// Start of each block row in `col` and `blocks`, then the end (rows + 1 entries).
    pub row_ptr: Vec<usize>,
    /// Block column of each stored block, ascending within a row.
    pub col: Vec<u32>,
    /// The stored 3×3 blocks.
    pub blocks: Vec<DMat3>,
}

impl BlockCsr {
    /// Number of block rows (one per vertex or DOF).
    pub fn rows(&self) -> usize {
        self.row_ptr.len().saturating_sub(1)
    }

    /// Index of block (row, col) in `blocks`, if present.
    pub fn find(&self, row: usize, col: usize) -> Option<usize> {
        let (s, e) = (self.row_ptr[row], self.row_ptr[row + 1]);
        self.col[s..e]
            .binary_search(&(col as u32))
            .ok()
            .map(|k| s + k)
    }

    /// The diagonal block of `row` (zero if not stored).
    pub fn diagonal(&self, row: usize) -> DMat3 {
        self.find(row, row).map_or(DMat3::ZERO, |k| self.blocks[k])
    }

    #[inline]
    fn row_product(&self, row: usize, x: &[DVec3]) -> DVec3 {
        let mut acc = DVec3::ZERO;
        for k in self.row_ptr[row]..self.row_ptr[row + 1] {
            acc += self.blocks[k] * x[self.col[k] as usize];
        }
        acc
    }

    /// y = K x, in parallel (rayon) for large lattices.
    pub fn mul(&self, x: &[DVec3], y: &mut [DVec3]) {
        debug_assert_eq!(x.len(), self.rows());
        debug_assert_eq!(y.len(), self.rows());
        if self.rows() >= PARALLEL_ROWS {
            y.par_iter_mut()
                .with_min_len(256)
                .enumerate()
                .for_each(|(r, yr)| *yr = self.row_product(r, x));
        } else {
            for (r, yr) in y.iter_mut().enumerate() {
                *yr = self.row_product(r, x);
            }
        }
    }
}

/// Scalar values on a [`BlockCsr`]'s pattern (the consistent mass M^{ab}).
#[derive(Clone, Debug, Default)]
pub struct ScalarOnPattern {
    /// One scalar per block of the pattern, in its `blocks` order.
    pub values: Vec<f64>,
}

impl ScalarOnPattern {
    /// y = (M ⊗ I₃) x.
    pub fn mul(&self, pattern: &BlockCsr, x: &[DVec3], y: &mut [DVec3]) {
        let row = |r: usize| {
            let mut acc = DVec3::ZERO;
            for k in pattern.row_ptr[r]..pattern.row_ptr[r + 1] {
                acc += self.values[k] * x[pattern.col[k] as usize];
            }
            acc
        };
        if pattern.rows() >= PARALLEL_ROWS {
            y.par_iter_mut()
                .with_min_len(256)
                .enumerate()
                .for_each(|(r, yr)| *yr = row(r));
        } else {
            for (r, yr) in y.iter_mut().enumerate() {
                *yr = row(r);
            }
        }
    }
}

/// The global matrices of a set of cells.
#[derive(Clone, Debug, Default)]
pub struct Assembled {
    /// Stiffness K (Capell's S for the linear strain model).
    pub stiffness: BlockCsr,
    /// Consistent mass M^{ab} = ∫ρ φ^a φ^b on the stiffness pattern.
    pub consistent_mass: ScalarOnPattern,
    /// Lumped (row-sum) mass `m_a` = ∫ρ φ^a.
    pub lumped_mass: Vec<f64>,
    /// ∫ρ φ^a: the gravity load is this times g (eq. 14).
    pub gravity_weight: Vec<f64>,
    /// The lattice coordinates of each row's vertex, where the rows are a
    /// lattice's vertices: the sparse Cholesky factor of a system on them
    /// may then order them by nested dissection of the grid (see
    /// [`super::nested_dissection`]) where that fills less than AMD.
    pub grid: Option<std::sync::Arc<[[usize; 3]]>>,
}

/// Assembles the cells `cells` (each a list of eight vertex indices in
/// `0..vertex_count`, corner order of [`super::element::corner_offset`]) with
/// per-cell materials, every cell with the same (full-cell) element.
pub fn assemble(
    vertex_count: usize,
    cells: &[[usize; 8]],
    materials: &[Material],
    element: &HexElement,
) -> Assembled {
    assemble_with(vertex_count, cells, materials, |_| element)
}

/// As `assemble`, with each cell's own element (`elements` indexed like
/// `cells`): full cells share one, cells cut by the object's surface carry
/// their own integrals (§3.3).
pub fn assemble_elements(
    vertex_count: usize,
    cells: &[[usize; 8]],
    materials: &[Material],
    elements: &CellElements,
) -> Assembled {
    assert_eq!(cells.len(), elements.len(), "one element per cell");
    assemble_with(vertex_count, cells, materials, |c| elements.get(c))
}

/// The symmetric block pattern of a set of cells: each vertex's neighbours
/// through shared cells, sorted; the blocks zero.
pub fn pattern(vertex_count: usize, cells: &[[usize; 8]]) -> BlockCsr {
    let mut neighbours: Vec<Vec<u32>> = vec![Vec::new(); vertex_count];
    for cell in cells {
        for &a in cell {
            neighbours[a].extend(cell.iter().map(|&b| b as u32));
        }
    }
    let mut row_ptr = Vec::with_capacity(vertex_count + 1);
    let mut col = Vec::new();
    row_ptr.push(0);
    for n in &mut neighbours {
        n.sort_unstable();
        n.dedup();
        col.extend_from_slice(n);
        row_ptr.push(col.len());
    }
    let blocks = vec![DMat3::ZERO; col.len()];
    BlockCsr {
        row_ptr,
        col,
        blocks,
    }
}

fn assemble_with<'a>(
    vertex_count: usize,
    cells: &[[usize; 8]],
    materials: &[Material],
    element_of: impl Fn(usize) -> &'a HexElement,
) -> Assembled {
    assert_eq!(cells.len(), materials.len());
    let mut stiffness = pattern(vertex_count, cells);
    let mut mass_values = vec![0.0; stiffness.col.len()];
    let mut lumped_mass = vec![0.0; vertex_count];
    for (c, (cell, m)) in cells.iter().zip(materials).enumerate() {
        let element = element_of(c);
        let (lambda, mu) = (m.lambda(), m.mu());
        for a in 0..8 {
            lumped_mass[cell[a]] += m.density * element.integral[a];
            for b in 0..8 {
                let k = stiffness
                    .find(cell[a], cell[b])
                    .expect("pattern holds every cell pair");
                stiffness.blocks[k] +=
                    element.k_lambda[a * 8 + b] * lambda + element.k_mu[a * 8 + b] * mu;
                mass_values[k] += m.density * element.mass[a][b];
            }
        }
    }
    Assembled {
        stiffness,
        consistent_mass: ScalarOnPattern {
            values: mass_values,
        },
        gravity_weight: lumped_mass.clone(),
        lumped_mass,
        grid: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two cells side by side: the shared face's four vertices couple to all
    /// 12, the others to 8; the assembled product equals the sum of the
    /// element products.
    #[test]
    fn two_cells_assemble_to_the_sum_of_their_elements() {
        let e = HexElement::new(DVec3::splat(0.1));
        // Vertices of a 2×1×1 grid: index = i + 3 (j + 2 k).
        let v = |i: usize, j: usize, k: usize| i + 3 * (j + 2 * k);
        let cell = |ci: usize| -> [usize; 8] {
            std::array::from_fn(|c| v(ci + (c & 1), (c >> 1) & 1, (c >> 2) & 1))
        };
        let cells = [cell(0), cell(1)];
        let m = [
            Material::FLESH,
            Material {
                young: 1e6,
                ..Material::FLESH
            },
        ];
        let a = assemble(12, &cells, &m, &e);
        assert_eq!(a.stiffness.row_ptr[1] - a.stiffness.row_ptr[0], 8);
        assert_eq!(a.stiffness.row_ptr[2] - a.stiffness.row_ptr[1], 12);
        let x: Vec<DVec3> = (0..12)
            .map(|i| DVec3::new(i as f64, (i * i) as f64 * 0.1, -(i as f64)))
            .collect();
        let mut y = vec![DVec3::ZERO; 12];
        a.stiffness.mul(&x, &mut y);
        let mut expect = vec![DVec3::ZERO; 12];
        for (c, mat) in cells.iter().zip(&m) {
            for p in 0..8 {
                for q in 0..8 {
                    expect[c[p]] += e.stiffness_block(mat, p, q) * x[c[q]];
                }
            }
        }
        for (g, w) in y.iter().zip(&expect) {
            assert!((*g - *w).length() <= 1e-9 * w.length().max(1.0));
        }
        let total: f64 = a.lumped_mass.iter().sum();
        assert!((total - 2.0 * 1000.0 * 1e-3).abs() < 1e-12);
    }
}
