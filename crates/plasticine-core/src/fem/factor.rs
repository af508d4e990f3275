//! Sparse Cholesky factor of a region's system matrix, CG's preconditioner
//! (faer's supernodal `LLᵀ`, ordered by nested dissection of the lattice
//! where the rows are a lattice's vertices, else by AMD).
//!
//! A region's system `S = c_m M + c_k K` is constant while h, the damping
//! and the bone/clamp set stay put (the solve runs in the bone's frame, see
//! `solver::SystemCache`), so it can be factored once and reused every step.
//! With the exact factor as preconditioner, projected CG (§4.4) converges in
//! one iteration without position constraints and in a few with them (the
//! projection is a low-rank change), where block-Jacobi takes 20–180. Known
//! rows (bone and clamp vertices, eq. 17–18) are decoupled: their rows and
//! columns are replaced by the identity, i.e. the factor is that of the
//! unknown block A₂₂ that CG actually solves.
//!
//! The ordering keeps the fill low whatever the numbering. A 3D lattice's
//! factor still grows faster than the lattice, so [`SparseCholesky::new`]
//! declines one past a fill budget, and a matrix that is not positive
//! definite (a static solve with no pins), leaving block-Jacobi in charge.

use super::ordering::{nested_dissection_dofs, permutation_pair};
use super::sparse::BlockCsr;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::sparse::linalg::cholesky::{
    LltRef, SymbolicCholesky, SymmetricOrdering, factorize_symbolic_cholesky,
};
use faer::sparse::{SparseColMat, Triplet};
use faer::{Conj, MatMut, Par, Side};
use glam::DVec3;
use std::sync::Arc;

/// Largest factor, in stored scalars, relative to the matrix's scalar
/// non-zeros. One application reads the factor twice, about as much memory
/// traffic as this many matrix products. Measured on the limb: 5.3× at
/// 1,377 vertices (one CG iteration instead of the envelope factor's
/// slower substitutions: 1,705 steps/s, was 1,252), 16× at 9,537 under
/// AMD (34 M scalars; two substitutions then cost about what
/// block-Jacobi's 85 iterations do, so the factor would not pay). Ordered
/// by the grid's nested dissection the 9,537-vertex factor is 7.6×, kept
/// in single precision: 2 CG iterations a step instead of 89, 11 → 25
/// steps/s.
pub const MAX_FILL_RATIO: usize = 8;
/// Absolute cap on the factor's size, scalars (64 MB of f64).
pub const MAX_STORED: usize = 8 << 20;
/// Past the budgets above, up to this many times them, the factor is kept
/// in single precision: half the memory traffic per application, and
/// still a preconditioner CG converges with in two or three iterations.
/// Measured on the penguin at 7,933 lattice vertices (`bench --only
/// contact`): its two largest regions (4,225 and 5,310 vertices) factor
/// at 10× fill, 8.7 M and 11.1 M scalars, and took 26–33 block-Jacobi
/// iterations each per solve.
pub const SINGLE_PRECISION_SPAN: usize = 2;

/// The factor's values, in the precision its size allows.
#[derive(Clone, Debug)]
enum Values {
    Double(Vec<f64>),
    Single(Vec<f32>),
}

/// `L Lᵀ = P A Pᵀ` of the unknown block (identity on known rows).
/// (The symbolic part is shared: a cached system is cloned with its factor.)
#[derive(Clone, Debug)]
pub struct SparseCholesky {
    symbolic: Arc<SymbolicCholesky<u32>>,
    values: Values,
}

/// The lower triangle of block matrix `a` in scalars, the rows and columns
/// of `known` block rows replaced by the identity.
fn lower_triangle(a: &BlockCsr, known: &[bool]) -> Option<SparseColMat<u32, f64>> {
    let rows = a.rows();
    if known.len() != rows {
        return None;
    }
    let n = 3 * rows;
    // The lower triangle, column-major in faer's terms: A is symmetric,
    // so block (row, col) with col ≤ row is entry (i, j) with j ≤ i.
    let mut entries = Vec::with_capacity(9 * a.blocks.len() / 2 + n);
    for row in 0..rows {
        if known[row] {
            for r in 0..3 {
                let i = (3 * row + r) as u32;
                entries.push(Triplet::new(i, i, 1.0));
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
                for c in 0..3 {
                    let (i, j) = (3 * row + r, 3 * col + c);
                    if j <= i {
                        // glam is column-major: entry (r, c) is col(c)[r].
                        entries.push(Triplet::new(i as u32, j as u32, block.col(c)[r]));
                    }
                }
            }
        }
    }
    SparseColMat::<u32, f64>::try_new_from_triplets(n, n, &entries).ok()
}

/// The lower triangle of `a` (known rows the identity) and its symbolic
/// analysis under AMD or, where `grid` (the rows' lattice coordinates) is
/// given, nested dissection of the grid, whichever stores less. On the
/// limb's 9,537-vertex lattice AMD's factor held 16× the matrix's scalars,
/// over the budget, and dissection by grid planes 7.6×; on small lattices
/// AMD's is the smaller. The analyses cost little beside the numeric
/// factorization.
fn analysed(
    a: &BlockCsr,
    known: &[bool],
    grid: Option<&[[usize; 3]]>,
) -> Option<(SparseColMat<u32, f64>, SymbolicCholesky<u32>)> {
    let matrix = lower_triangle(a, known)?;
    fn analyse(
        matrix: &SparseColMat<u32, f64>,
        ordering: SymmetricOrdering<'_, u32>,
    ) -> Option<SymbolicCholesky<u32>> {
        factorize_symbolic_cholesky(matrix.symbolic(), Side::Lower, ordering, Default::default())
            .ok()
    }
    let amd = analyse(&matrix, SymmetricOrdering::Amd);
    let dissected = grid.filter(|g| g.len() == a.rows()).and_then(|g| {
        let (forward, inverse) = permutation_pair(&nested_dissection_dofs(g));
        analyse(
            &matrix,
            SymmetricOrdering::Custom(faer::perm::PermRef::new_checked(
                &forward,
                &inverse,
                forward.len(),
            )),
        )
    });
    let symbolic = match (amd, dissected) {
        (Some(a), Some(d)) if d.len_val() < a.len_val() => d,
        (Some(a), _) => a,
        (None, d) => d?,
    };
    Some((matrix, symbolic))
}

impl SparseCholesky {
    /// Factors the block matrix `a` with the rows and columns of `known`
    /// block rows replaced by the identity. None if the factor is over the
    /// fill budget or the matrix is not positive definite.
    pub fn new(a: &BlockCsr, known: &[bool], grid: Option<&[[usize; 3]]>) -> Option<Self> {
        let (matrix, symbolic) = analysed(a, known, grid)?;
        let stored = symbolic.len_val();
        let fill_budget = MAX_FILL_RATIO * 9 * a.blocks.len();
        let single = if stored <= MAX_STORED && stored <= fill_budget {
            false
        } else if stored <= SINGLE_PRECISION_SPAN * MAX_STORED
            && stored <= SINGLE_PRECISION_SPAN * fill_budget
        {
            true
        } else {
            return None;
        };
        Self::numeric(Arc::new(symbolic), &matrix, single)
    }

    /// As [`new`](Self::new), in the precision asked for, whatever the
    /// factor's size (for tests of the single-precision path).
    #[cfg(test)]
    fn with_precision(
        a: &BlockCsr,
        known: &[bool],
        grid: Option<&[[usize; 3]]>,
        single: bool,
    ) -> Option<Self> {
        let (matrix, symbolic) = analysed(a, known, grid)?;
        Self::numeric(Arc::new(symbolic), &matrix, single)
    }

    /// Whether the factor is kept in single precision.
    pub fn is_single(&self) -> bool {
        matches!(self.values, Values::Single(_))
    }

    /// The factor of `a` (same pattern and known rows as this one's), its
    /// ordering and symbolic analysis reused: only the numeric
    /// factorization runs (a morph target's blend moved the system).
    pub fn refactored(&self, a: &BlockCsr, known: &[bool]) -> Option<Self> {
        let matrix = lower_triangle(a, known)?;
        Self::numeric(self.symbolic.clone(), &matrix, self.is_single())
    }

    fn numeric(
        symbolic: Arc<SymbolicCholesky<u32>>,
        matrix: &SparseColMat<u32, f64>,
        single: bool,
    ) -> Option<Self> {
        let values = if single {
            let m = matrix.as_ref();
            let narrowed: Vec<f32> = m.val().iter().map(|&v| v as f32).collect();
            let m32 = SparseColMat::<u32, f32>::new(m.symbolic().to_owned().ok()?, narrowed);
            Values::Single(factor_values(&symbolic, &m32)?)
        } else {
            Values::Double(factor_values(&symbolic, matrix)?)
        };
        Some(Self { symbolic, values })
    }

    /// Stored scalars of the factor.
    pub fn stored(&self) -> usize {
        match &self.values {
            Values::Double(v) => v.len(),
            Values::Single(v) => v.len(),
        }
    }

    /// x ← A⁻¹ x, in place on the scalar view `flat` of the block vector
    /// (through single precision where the factor is kept so).
    pub fn solve_flat(&self, x: &mut [f64]) {
        let n = x.len();
        let par = Par::Seq;
        match &self.values {
            Values::Double(values) => {
                let mut buffer =
                    MemBuffer::new(self.symbolic.solve_in_place_scratch::<f64>(1, par));
                LltRef::new(&self.symbolic, values).solve_in_place_with_conj(
                    Conj::No,
                    MatMut::from_column_major_slice_mut(x, n, 1),
                    par,
                    MemStack::new(&mut buffer),
                );
            }
            Values::Single(values) => {
                let mut narrow: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                let mut buffer =
                    MemBuffer::new(self.symbolic.solve_in_place_scratch::<f32>(1, par));
                LltRef::new(&self.symbolic, values).solve_in_place_with_conj(
                    Conj::No,
                    MatMut::from_column_major_slice_mut(&mut narrow, n, 1),
                    par,
                    MemStack::new(&mut buffer),
                );
                for (xi, v) in x.iter_mut().zip(&narrow) {
                    *xi = f64::from(*v);
                }
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

/// The numeric factor of `matrix` on `symbolic`, in `matrix`'s precision.
fn factor_values<T>(
    symbolic: &SymbolicCholesky<u32>,
    matrix: &SparseColMat<u32, T>,
) -> Option<Vec<T>>
where
    T: faer::traits::ComplexField<Real = T> + faer::traits::RealField + Copy,
{
    let mut values = vec![T::zero_impl(); symbolic.len_val()];
    let par = Par::Seq;
    let mut buffer =
        MemBuffer::try_new(symbolic.factorize_numeric_llt_scratch::<T>(par, Default::default()))
            .ok()?;
    symbolic
        .factorize_numeric_llt(
            &mut values,
            matrix.as_ref(),
            Side::Lower,
            LltRegularization::default(),
            par,
            MemStack::new(&mut buffer),
            Default::default(),
        )
        .ok()?;
    Some(values)
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

    /// On the limb's 4,225-vertex lattice (bone vertices known) the grid's
    /// nested dissection stores less than AMD, the analysis takes it, and
    /// the factor in that order still inverts the unknown block: A (A⁻¹ b)
    /// = b to rounding. On the 225-vertex lattice AMD's is the smaller and
    /// is kept.
    #[test]
    fn a_lattice_is_factored_in_the_smaller_of_dissection_and_amd() {
        use crate::fem::Linearization;
        use crate::samples::limb;
        for (dims, dissection_wins) in [([12, 12, 24], true), ([4, 4, 8], false)] {
            let body = limb(dims, 0.4 / dims[2] as f64, Linearization::Global);
            let (c_m, c_k) = body.settings.implicit_euler_coefficients();
            let system =
                crate::fem::solver::SystemCache::new(&body.global, body.settings.mass, c_m, c_k);
            let a = &system.matrix;
            let known: Vec<bool> = body
                .lattice
                .bone_of_vertex
                .iter()
                .map(Option::is_some)
                .collect();
            assert!(known.iter().any(|&k| k) && known.iter().any(|&k| !k));
            let grid = body.global.grid.as_deref().expect("a lattice's rows");
            let (_, amd) = analysed(a, &known, None).unwrap();
            let (_, chosen) = analysed(a, &known, Some(grid)).unwrap();
            if dissection_wins {
                assert!(
                    chosen.len_val() * 10 < amd.len_val() * 9,
                    "{dims:?}: dissection {} vs AMD {}",
                    chosen.len_val(),
                    amd.len_val()
                );
            } else {
                assert_eq!(chosen.len_val(), amd.len_val(), "{dims:?}");
            }
            let f = SparseCholesky::with_precision(a, &known, Some(grid), false).unwrap();
            let b: Vec<DVec3> = (0..a.rows())
                .map(|i| {
                    let t = i as f64;
                    if known[i] {
                        DVec3::ZERO
                    } else {
                        DVec3::new(t.sin(), (0.3 * t).cos(), 1.0)
                    }
                })
                .collect();
            let (mut x, mut flat) = (vec![DVec3::ZERO; b.len()], Vec::new());
            f.solve(&b, &mut x, &mut flat);
            let mut ax = vec![DVec3::ZERO; b.len()];
            a.mul(&x, &mut ax);
            let (mut err, mut size) = (0.0f64, 0.0f64);
            for i in (0..b.len()).filter(|&i| !known[i]) {
                // Known entries of x are zero, so A x on the unknown rows is
                // the unknown block applied to x's unknown part.
                assert_eq!(x[i].length() == 0.0, b[i].length() == 0.0);
                err = err.max((ax[i] - b[i]).length());
                size = size.max(b[i].length());
            }
            assert!(err < 1e-8 * size, "{dims:?}: residual {err} of {size}");
        }
    }

    #[test]
    fn solves_the_unknown_block_and_passes_known_rows_through() {
        let a = chain(6);
        let known = [false, false, true, false, false, false];
        let f = SparseCholesky::new(&a, &known, None).expect("SPD");
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

    #[test]
    fn a_single_precision_factor_solves_to_single_precision_and_refactors_so() {
        let a = chain(40);
        let mut known = vec![false; 40];
        known[7] = true;
        let f = SparseCholesky::with_precision(&a, &known, None, true).expect("SPD");
        assert!(f.is_single());
        let x: Vec<DVec3> = (0..40)
            .map(|i| {
                if known[i] {
                    DVec3::ZERO
                } else {
                    DVec3::new((i as f64).sin(), 0.5 - i as f64 * 0.01, 0.25)
                }
            })
            .collect();
        let mut ax = vec![DVec3::ZERO; 40];
        a.mul(&x, &mut ax);
        ax[7] = DVec3::ZERO;
        let mut back = vec![DVec3::ZERO; 40];
        f.solve(&ax, &mut back, &mut Vec::new());
        let scale = x.iter().map(|v| v.length()).fold(0.0, f64::max);
        let err = back
            .iter()
            .zip(&x)
            .map(|(p, q)| (*p - *q).length())
            .fold(0.0, f64::max);
        // Single precision: about 1e-7 of the magnitudes, not 1e-15.
        assert!(err < 1e-5 * scale, "{err}");
        assert!(err > 0.0);
        let again = f.refactored(&a, &known).expect("SPD");
        assert!(again.is_single());
        assert_eq!(again.stored(), f.stored());
        // The double factor of the same matrix is exact to rounding.
        let exact = SparseCholesky::with_precision(&a, &known, None, false).unwrap();
        assert!(!exact.is_single());
        exact.solve(&ax, &mut back, &mut Vec::new());
        for (p, q) in back.iter().zip(&x) {
            assert!((*p - *q).length() < 1e-12 * scale.max(1.0));
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
        use crate::samples::limb;
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
        assert!(SparseCholesky::new(&a, &[false; 3], None).is_none());
        // With the bad row known, the rest is SPD again.
        assert!(SparseCholesky::new(&a, &[false, true, false], None).is_some());
    }
}
