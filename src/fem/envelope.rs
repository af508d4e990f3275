//! Envelope (skyline) Cholesky factor of a region's system matrix, the CG
//! preconditioner of small lattices.
//!
//! A region's system `S = c_m M + c_k K` is constant while h, the damping
//! and the bone/clamp set stay put (the solve runs in the bone's frame, see
//! `solver::SystemCache`), so it can be factored once and reused every step.
//! With the exact factor as preconditioner, projected CG (§4.4) converges in
//! one iteration without position constraints and in a few with them (the
//! projection is a low-rank change), where block-Jacobi takes 20–40. Known
//! rows (bone and clamp vertices, eq. 17–18) are decoupled: their rows and
//! columns are replaced by the identity, i.e. the factor is that of the
//! unknown block A₂₂ that CG actually solves.
//!
//! A regular lattice numbered layer by layer has a narrow envelope (a row
//! reaches back about one layer of vertices), so the factor costs a few
//! matrix products to apply. Wide envelopes (large lattices) cost more than
//! they save: [`EnvelopeCholesky::new`] declines beyond a fill budget, and
//! also when the matrix is not positive definite (a static solve with no
//! pins), leaving block-Jacobi in charge.

use super::sparse::BlockCsr;
use glam::DVec3;

/// Largest factor, in stored scalars, relative to the matrix's scalar
/// non-zeros: applying the factor costs 2·envelope multiply-adds, a matrix
/// product 9·blocks, so at this ratio one application is about eight
/// products (measured: the 225-vertex limb needs ~1.6, 1377 vertices ~4).
pub const MAX_FILL_RATIO: usize = 8;
/// Absolute cap on the factor's size, scalars (64 MB of f64).
pub const MAX_ENVELOPE: usize = 8 << 20;

/// Lower-triangular L with `L Lᵀ = A` (unknown block, identity on known
/// rows), stored row by row from each row's first structural non-zero.
#[derive(Clone, Debug)]
pub struct EnvelopeCholesky {
    /// First stored column of each scalar row.
    first: Vec<usize>,
    /// Offset of each scalar row in `values` (one past the end at `n`).
    offset: Vec<usize>,
    /// Row i holds `L[i][first[i]..=i]`, the diagonal last.
    values: Vec<f64>,
}

impl EnvelopeCholesky {
    /// Factors the block matrix `a` with the rows and columns of `known`
    /// block rows replaced by the identity. None if the envelope is over the
    /// fill budget or a pivot is not safely positive.
    pub fn new(a: &BlockCsr, known: &[bool]) -> Option<Self> {
        let rows = a.rows();
        if known.len() != rows {
            return None;
        }
        let n = 3 * rows;
        let mut first = vec![0usize; n];
        let mut offset = vec![0usize; n + 1];
        for row in 0..rows {
            let block_first = if known[row] {
                row
            } else {
                (a.row_ptr[row]..a.row_ptr[row + 1])
                    .map(|k| a.col[k] as usize)
                    .find(|&c| !known[c])
                    .unwrap_or(row)
                    .min(row)
            };
            for k in 0..3 {
                let i = 3 * row + k;
                first[i] = if known[row] { i } else { 3 * block_first };
                offset[i + 1] = offset[i] + (i - first[i] + 1);
            }
        }
        let envelope = offset[n];
        if envelope > MAX_ENVELOPE || envelope > MAX_FILL_RATIO * 9 * a.blocks.len() {
            return None;
        }
        let mut values = vec![0.0; envelope];
        for row in 0..rows {
            if known[row] {
                for r in 0..3 {
                    values[offset[3 * row + r]] = 1.0;
                }
                continue;
            }
            for k in a.row_ptr[row]..a.row_ptr[row + 1] {
                let col = a.col[k] as usize;
                if col > row || known[col] {
                    continue;
                }
                let block = a.blocks[k];
                for r in 0..3 {
                    let i = 3 * row + r;
                    for c in 0..3 {
                        let j = 3 * col + c;
                        if j <= i {
                            // glam is column-major: entry (r, c) is col(c)[r].
                            values[offset[i] + j - first[i]] = block.col(c)[r];
                        }
                    }
                }
            }
        }
        // Up-looking Cholesky: row i from the finished rows above it.
        for i in 0..n {
            let (done, rest) = values.split_at_mut(offset[i]);
            let row_i = &mut rest[..offset[i + 1] - offset[i]];
            let fi = first[i];
            for j in fi..i {
                let row_j = &done[offset[j]..offset[j + 1]];
                let start = fi.max(first[j]);
                let s: f64 = row_i[start - fi..j - fi]
                    .iter()
                    .zip(&row_j[start - first[j]..j - first[j]])
                    .map(|(x, y)| x * y)
                    .sum();
                row_i[j - fi] = (row_i[j - fi] - s) / row_j[j - first[j]];
            }
            let diag = row_i[i - fi];
            let s: f64 = row_i[..i - fi].iter().map(|x| x * x).sum();
            let pivot = diag - s;
            if !pivot.is_finite() || pivot <= 1e-12 * diag.abs() {
                return None;
            }
            row_i[i - fi] = pivot.sqrt();
        }
        Some(Self {
            first,
            offset,
            values,
        })
    }

    /// Stored scalars of the factor.
    pub fn envelope(&self) -> usize {
        self.values.len()
    }

    /// x ← A⁻¹ x (forward then backward substitution), in place on the
    /// scalar view `flat` of the block vector.
    pub fn solve_flat(&self, x: &mut [f64]) {
        let n = self.first.len();
        debug_assert_eq!(x.len(), n);
        for i in 0..n {
            let row = &self.values[self.offset[i]..self.offset[i + 1]];
            let fi = self.first[i];
            let s: f64 = row[..i - fi]
                .iter()
                .zip(&x[fi..i])
                .map(|(l, y)| l * y)
                .sum();
            x[i] = (x[i] - s) / row[i - fi];
        }
        for i in (0..n).rev() {
            let row = &self.values[self.offset[i]..self.offset[i + 1]];
            let fi = self.first[i];
            let xi = x[i] / row[i - fi];
            x[i] = xi;
            for (xk, l) in x[fi..i].iter_mut().zip(&row[..i - fi]) {
                *xk -= l * xi;
            }
        }
    }

    /// z = A⁻¹ r for block vectors, with `flat` as scratch.
    pub fn solve(&self, r: &[DVec3], z: &mut [DVec3], flat: &mut Vec<f64>) {
        flat.clear();
        flat.extend(r.iter().flat_map(|v| v.to_array()));
        self.solve_flat(flat);
        for (zi, c) in z.iter_mut().zip(flat.chunks_exact(3)) {
            *zi = DVec3::new(c[0], c[1], c[2]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::DMat3;

    /// A 1D chain of 3×3 blocks, SPD: diagonal 4I + a coupling, neighbours
    /// −I (plus a small asymmetric-looking but symmetric off-diagonal mix).
    fn chain(rows: usize) -> BlockCsr {
        let mut m = BlockCsr {
            row_ptr: vec![0],
            col: Vec::new(),
            blocks: Vec::new(),
        };
        let off = DMat3::from_cols_array(&[-1.0, 0.2, 0.0, 0.1, -1.0, 0.3, 0.0, 0.1, -1.0]);
        for r in 0..rows {
            if r > 0 {
                m.col.push(r as u32 - 1);
                m.blocks.push(off.transpose());
            }
            m.col.push(r as u32);
            m.blocks.push(DMat3::from_cols_array(&[
                4.0, 0.5, 0.1, 0.5, 5.0, 0.2, 0.1, 0.2, 6.0,
            ]));
            if r + 1 < rows {
                m.col.push(r as u32 + 1);
                m.blocks.push(off);
            }
            m.row_ptr.push(m.col.len());
        }
        m
    }

    #[test]
    fn solves_the_unknown_block_and_passes_known_rows_through() {
        let a = chain(6);
        let known = [false, false, true, false, false, false];
        let f = EnvelopeCholesky::new(&a, &known).expect("SPD");
        // x with zero known entries: (A x) restricted to unknown rows, then
        // solved back, returns x.
        let x: Vec<DVec3> = (0..6)
            .map(|i| {
                if known[i] {
                    DVec3::ZERO
                } else {
                    DVec3::new(i as f64 + 1.0, -0.5 * i as f64, 0.25)
                }
            })
            .collect();
        let mut ax = vec![DVec3::ZERO; 6];
        a.mul(&x, &mut ax);
        for (v, &k) in ax.iter_mut().zip(&known) {
            if k {
                *v = DVec3::ZERO;
            }
        }
        let mut back = vec![DVec3::ZERO; 6];
        f.solve(&ax, &mut back, &mut Vec::new());
        for (p, q) in back.iter().zip(&x) {
            assert!((*p - *q).length() < 1e-12, "{p} vs {q}");
        }
    }

    /// On the limb's regions (225-vertex lattice, blended local, bone
    /// vertices known), CG preconditioned with the factor reaches the
    /// block-Jacobi solution, with and without a position constraint, in a
    /// handful of iterations instead of dozens.
    #[test]
    fn factor_preconditioned_cg_matches_block_jacobi_on_the_limb() {
        use crate::fem::Linearization;
        use crate::fem::solver::{LocalConstraint, Scratch, SystemCache, projected_pcg};
        use crate::samples::limb::limb;
        let body = limb(
            [4, 4, 8],
            0.05,
            Linearization::BlendedLocal { blend_width: 0.1 },
        );
        let s = &body.settings;
        let (c_m, c_k) = s.implicit_euler_coefficients();
        for region in &body.regions {
            let n = region.len();
            // A point inside a free cell held still, in local numbering.
            let cell = body.lattice.cells[body.lattice.cell_count() / 2 + 1];
            let constraint = LocalConstraint {
                support: (0..8)
                    .map(|k| (region.local_of[cell[k]] as usize, 0.125))
                    .collect(),
                value: DVec3::new(0.01, -0.02, 0.005),
            };
            for cons in [vec![], vec![constraint]] {
                let mut system = SystemCache::new(&region.matrices, s.mass, c_m, c_k);
                let solve = |system: &SystemCache| {
                    let mut sc = Scratch::default();
                    sc.resize(n);
                    for (l, &a) in region.vertices.iter().enumerate() {
                        let r = body.lattice.rest[a];
                        sc.b[l] = DVec3::new(r.z.sin(), -1.0 - r.x, 0.3 * r.y) * 0.01;
                        if body.lattice.bone_of_vertex[a].is_some() {
                            sc.known[l] = true;
                            sc.x[l] = DVec3::new(0.0, 0.02 * r.z, 0.0);
                        }
                    }
                    let report = projected_pcg(system, &mut sc, &cons, 1e-10, 2000, false);
                    assert!(report.converged, "{report:?}");
                    (sc.x, report.iterations)
                };
                let (jacobi, jacobi_its) = solve(&system);
                system.prepare_factor(&{
                    let mut known = vec![false; n];
                    for (l, &a) in region.vertices.iter().enumerate() {
                        known[l] = body.lattice.bone_of_vertex[a].is_some();
                    }
                    known
                });
                let (exact, exact_its) = solve(&system);
                let scale = jacobi.iter().map(|v| v.length()).fold(0.0, f64::max);
                let err = jacobi
                    .iter()
                    .zip(&exact)
                    .map(|(a, b)| (*a - *b).length())
                    .fold(0.0, f64::max);
                assert!(err <= 1e-8 * scale, "max diff {err} of {scale}");
                let bound = if cons.is_empty() { 1 } else { 6 };
                assert!(
                    exact_its <= bound && jacobi_its >= 20,
                    "factor {exact_its} vs block-Jacobi {jacobi_its} iterations"
                );
                // The constraint holds in both.
                for c in &cons {
                    let got: DVec3 = c.support.iter().map(|&(l, w)| exact[l] * w).sum();
                    assert!((got - c.value).length() < 1e-12, "{got}");
                }
            }
        }
    }

    #[test]
    fn declines_an_indefinite_matrix() {
        let mut a = chain(3);
        let d = a.find(1, 1).unwrap();
        a.blocks[d] = -a.blocks[d];
        assert!(EnvelopeCholesky::new(&a, &[false; 3]).is_none());
        // With the bad row known, the rest is SPD again.
        assert!(EnvelopeCholesky::new(&a, &[false, true, false]).is_some());
    }
}
