//! The lowest vibration modes of a part (DyRT §2, §5.1): `K_ff` φ = ω² `M_ff` φ
//! on its free degrees of freedom, with the lumped (diagonal) mass, so
//! M^(−½) K M^(−½) y = ω² y is an ordinary symmetric problem and φ = M^(−½) y
//! is mass-normalised (`ΦᵀMΦ` = I) by construction.
//!
//! faer's dense self-adjoint eigensolver (pure Rust) takes the whole
//! spectrum; a part of a few hundred lattice vertices (the penguin's) has a
//! few hundred free DOFs, milliseconds. Its error is a rounding of the
//! largest eigenvalue, which on the lowest modes of a stiff lattice
//! (`λ_max/λ₁` ~ 10⁶) leaves residuals of 10⁻⁶; one step of subspace inverse
//! iteration (solve A Z = Y with A's Cholesky factor, then Rayleigh–Ritz in
//! span Z) damps those components by `λ_i/λ_max` and brings the residuals to
//! rounding.

use super::tall;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::linalg::solvers::Solve;
use faer::sparse::linalg::cholesky::{
    LltRef, SymbolicCholesky, SymmetricOrdering, factorize_symbolic_cholesky,
};
use faer::{Mat, Side};

/// Parts with more free DOFs than this are refused (the dense solve grows
/// as n³: about a second at this size on 2 cores).
pub const DENSE_DOFS: usize = 2400;

/// The lowest modes of one part.
#[derive(Clone, Debug, PartialEq)]
pub struct Modes {
    /// Angular frequencies `ω_i` (rad/s), ascending.
    pub omega: Vec<f64>,
    /// Mode shapes, each over the free DOFs (3 per free vertex, x y z),
    /// mass-normalised.
    pub shapes: Vec<Vec<f64>>,
}

/// Why a part's modes could not be computed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum EigenError {
    /// No free degree of freedom.
    #[error("the part has no free vertex")]
    Empty,
    /// More modes asked for than the part has degrees of freedom.
    #[error("{asked} modes asked for, but the part has only {dofs} free DOFs")]
    TooManyModes {
        /// Modes asked for.
        asked: usize,
        /// Free DOFs of the part.
        dofs: usize,
    },
    /// The free block is too large for the dense solver.
    #[error("the part has {dofs} free DOFs; at most {DENSE_DOFS} are supported")]
    TooLarge {
        /// Free DOFs of the part.
        dofs: usize,
    },
    /// A mass is not positive and finite.
    #[error("free DOF {dof} has mass {mass}")]
    Mass {
        /// The DOF.
        dof: usize,
        /// Its mass.
        mass: f64,
    },
    /// `K_ff` is not positive definite (a part held by nothing floats).
    #[error(
        "the stiffness of the free block is not positive definite (lowest ω² = {lowest:.3e} \
         against {highest:.3e}): the part is not held by a bone or a seam"
    )]
    NotPositive {
        /// Lowest eigenvalue found.
        lowest: f64,
        /// Highest eigenvalue found.
        highest: f64,
    },
    /// No free vertex shares a cell with a held one (a bone-bound vertex or
    /// another part's): the part floats, and its lowest modes would be
    /// rigid motions at zero frequency.
    #[error("the part is held by neither a bone nor a seam with another part: it floats")]
    Floating,
    /// The eigensolver did not converge.
    #[error("the eigensolver did not converge")]
    NoConvergence,
}

/// The `count` lowest modes of the dense symmetric stiffness `k` (n×n, row
/// major, only its symmetry is assumed) with the diagonal mass `mass` (n).
pub fn lowest_modes(k: &[f64], mass: &[f64], count: usize) -> Result<Modes, EigenError> {
    let n = mass.len();
    if n == 0 {
        return Err(EigenError::Empty);
    }
    assert_eq!(k.len(), n * n, "stiffness must be n×n");
    if count > n {
        return Err(EigenError::TooManyModes {
            asked: count,
            dofs: n,
        });
    }
    if n > DENSE_DOFS {
        return Err(EigenError::TooLarge { dofs: n });
    }
    if let Some((dof, &m)) = mass
        .iter()
        .enumerate()
        .find(|(_, m)| !(m.is_finite() && **m > 0.0))
    {
        return Err(EigenError::Mass { dof, mass: m });
    }
    let s: Vec<f64> = mass.iter().map(|m| 1.0 / m.sqrt()).collect();
    // Symmetrised: K assembled in floating point is symmetric to rounding.
    let a = Mat::<f64>::from_fn(n, n, |i, j| {
        0.5 * (k[i * n + j] + k[j * n + i]) * s[i] * s[j]
    });
    let evd = a
        .self_adjoint_eigen(Side::Lower)
        .map_err(|_| EigenError::NoConvergence)?;
    let values = evd.S().column_vector();
    let vectors = evd.U();
    let highest = values[n - 1];
    let lowest = values[0];
    // Relative to the stiffest mode: a floating part has ω² ≈ 0 up to rounding.
    if lowest.is_nan() || lowest <= 1e-10 * highest.abs() || !highest.is_finite() {
        return Err(EigenError::NotPositive { lowest, highest });
    }
    let y = vectors.subcols(0, count).to_owned();
    let (values, vectors) = refine(&a, y).unwrap_or_else(|| {
        let v: Vec<f64> = (0..count).map(|c| values[c]).collect();
        (v, vectors.subcols(0, count).to_owned())
    });
    let mut omega = Vec::with_capacity(count);
    let mut shapes = Vec::with_capacity(count);
    for c in 0..count {
        omega.push(values[c].sqrt());
        shapes.push((0..n).map(|i| vectors[(i, c)] * s[i]).collect());
    }
    Ok(Modes { omega, shapes })
}

/// One step of subspace inverse iteration on the approximate eigenvectors
/// `y` of the SPD `a`, then Rayleigh–Ritz: the refined eigenvalues
/// (ascending) and orthonormal eigenvectors. None if `a` cannot be factored.
fn refine(a: &Mat<f64>, y: Mat<f64>) -> Option<(Vec<f64>, Mat<f64>)> {
    let llt = a.llt(Side::Lower).ok()?;
    let z = llt.solve(&y);
    let q = z.qr().compute_thin_Q();
    let b = q.transpose() * a * &q;
    let m = b.nrows();
    let b = Mat::<f64>::from_fn(m, m, |i, j| 0.5 * (b[(i, j)] + b[(j, i)]));
    let evd = b.self_adjoint_eigen(Side::Lower).ok()?;
    let values = (0..m).map(|c| evd.S().column_vector()[c]).collect();
    Some((values, &q * evd.U()))
}

/// The shift of the sparse solver's spectral transformation, relative to
/// the mean diagonal of M⁻¹K: below zero, so K − σM is positive definite
/// for any held part, and close enough that the lowest modes separate.
const SHIFT: f64 = -1e-3;

/// Blocks the sparse solver may add to its basis, restarts included.
const MAX_ITERATIONS: usize = 500;

/// Relative residual ‖Ay − λy‖/λ at which a sparse mode has converged.
pub const RESIDUAL: f64 = 1e-9;

/// The `count` lowest modes of a sparse free block: K (as `(row, col,
/// value)` entries over n DOFs, both triangles) with the diagonal mass
/// `mass` ([`SparseModes`]).
#[cfg(test)]
pub fn lowest_modes_sparse(
    n: usize,
    k: &[(usize, usize, f64)],
    mass: &[f64],
    count: usize,
) -> Result<Modes, EigenError> {
    SparseModes::new(n, k, mass, None)?.lowest(count)
}

/// The same by subspace iteration alone (the block Lanczos's fallback),
/// from pseudo-random vectors.
#[cfg(test)]
pub fn lowest_modes_subspace(
    n: usize,
    k: &[(usize, usize, f64)],
    mass: &[f64],
    count: usize,
) -> Result<Modes, EigenError> {
    let solver = SparseModes::new(n, k, mass, None)?;
    Ok(solver.subspace(count, Mat::zeros(n, 0))?.0)
}

/// A sparse free block's modes by block Lanczos with shift and invert: a
/// Krylov basis of the operator Op = M^½(K − σM)⁻¹M^½ (faer's sparse
/// Cholesky of K − σM, in the caller's fill-reducing order), grown a block
/// at a time and kept orthonormal by classical Gram–Schmidt applied twice;
/// Rayleigh–Ritz on Op in it (H = `QᵀOpQ`, kept as the basis grows) gives
/// the lowest modes as its largest values. Near σ the operator spreads the
/// low spectrum wide, so they converge in a basis a few times as wide as
/// the modes; a basis past its cap restarts from its best Ritz vectors and
/// the next Lanczos block (a thick restart). A block, not a single vector,
/// so the repeated frequencies of a symmetric part are found together.
/// Converged, the Ritz vectors' images (free: Op Q is kept) are a step of
/// inverse iteration, which damps what the basis kept of the stiff modes,
/// and Rayleigh–Ritz on A = M^(−½)KM^(−½) there must bring every wanted
/// mode's residual below [`RESIDUAL`]. Where the residuals stall (rounding,
/// on some thin parts) subspace iteration from the Ritz vectors finishes.
/// (Subspace iteration alone needed 60–160 solves of a block twice the
/// modes' width; faer's Krylov–Schur stalled on the penguin's parts,
/// spinning in its reorthogonalisation without applying the operator.)
/// The factor is kept, and a later call for more modes starts from the
/// last call's Ritz vectors, so asking again costs a few blocks, not a
/// second factor.
pub struct SparseModes {
    n: usize,
    sqrt_mass: Vec<f64>,
    /// A = M^(−½) K M^(−½).
    a: faer::sparse::SparseColMat<u32, f64>,
    /// The factor of K − σM: its structure and values.
    symbolic: SymbolicCholesky<u32>,
    values: Vec<f64>,
    /// The last call's Ritz vectors (M^½-weighted), ascending.
    block: Option<Mat<f64>>,
}

/// Relative residual of the operator's Ritz pairs at which the sparse
/// solver polishes them and checks A's residuals.
const OPERATOR_RESIDUAL: f64 = 0.3 * RESIDUAL;

/// Blocks without the worst residual halving after which the block Lanczos
/// hands its Ritz vectors to subspace iteration.
const STALL_BLOCKS: usize = 8;

/// Columns the Krylov basis grows by per application of the operator: wide
/// enough for the repeated frequencies of a symmetric part.
const BLOCK: usize = 16;

/// The deterministic pseudo-random start vectors' entry (i, j).
fn start_entry(i: usize, j: usize) -> f64 {
    ((i * 7919 + j * 104_729) as f64 * 0.618_033_988_75).fract() - 0.5
}

impl SparseModes {
    /// Factors K − σM of the block (module docs), σ a little below zero,
    /// eliminating the DOFs in `order` (a permutation of them; None: faer's
    /// AMD order).
    pub fn new(
        n: usize,
        k: &[(usize, usize, f64)],
        mass: &[f64],
        order: Option<&[usize]>,
    ) -> Result<Self, EigenError> {
        use faer::sparse::{SparseColMat, Triplet};
        if n == 0 {
            return Err(EigenError::Empty);
        }
        assert_eq!(mass.len(), n, "one mass per DOF");
        if let Some((dof, &m)) = mass
            .iter()
            .enumerate()
            .find(|(_, m)| !(m.is_finite() && **m > 0.0))
        {
            return Err(EigenError::Mass { dof, mass: m });
        }
        let mean: f64 = k
            .iter()
            .filter(|(r, c, _)| r == c)
            .map(|(r, _, v)| v / mass[*r])
            .sum::<f64>()
            / n as f64;
        let sigma = SHIFT * mean;
        let mut entries: Vec<Triplet<u32, u32, f64>> = k
            .iter()
            .map(|&(r, c, v)| Triplet::new(r as u32, c as u32, v))
            .collect();
        entries.extend((0..n).map(|i| Triplet::new(i as u32, i as u32, -sigma * mass[i])));
        // The lower triangle: the factor reads only that side.
        entries.retain(|t| t.row >= t.col);
        let shifted = SparseColMat::<u32, f64>::try_new_from_triplets(n, n, &entries)
            .map_err(|_| EigenError::NoConvergence)?;
        let not_positive = |_| EigenError::NotPositive {
            lowest: f64::NAN,
            highest: f64::NAN,
        };
        let ordering = order.map(|order| {
            assert_eq!(order.len(), n, "the order is a permutation of the DOFs");
            crate::fem::permutation_pair(order)
        });
        let symbolic = factorize_symbolic_cholesky(
            shifted.symbolic(),
            Side::Lower,
            match &ordering {
                Some((forward, inverse)) => {
                    SymmetricOrdering::Custom(faer::perm::PermRef::new_checked(forward, inverse, n))
                }
                None => SymmetricOrdering::Amd,
            },
            Default::default(),
        )
        .map_err(|_| EigenError::NoConvergence)?;
        // The factor and A = M^(−½)KM^(−½) side by side: the factor is
        // sequential (faer without threads), A's assembly is a sort.
        let factor = || {
            let par = faer::Par::Seq;
            let mut values = vec![0.0; symbolic.len_val()];
            let mut scratch = MemBuffer::try_new(
                symbolic.factorize_numeric_llt_scratch::<f64>(par, Default::default()),
            )
            .map_err(|_| EigenError::NoConvergence)?;
            symbolic
                .factorize_numeric_llt(
                    &mut values,
                    shifted.as_ref(),
                    Side::Lower,
                    LltRegularization::default(),
                    par,
                    MemStack::new(&mut scratch),
                    Default::default(),
                )
                .map_err(not_positive)?;
            Ok(values)
        };
        let sqrt_mass: Vec<f64> = mass.iter().map(|m| m.sqrt()).collect();
        let scaled = || {
            let scaled: Vec<Triplet<u32, u32, f64>> = k
                .iter()
                .map(|&(r, c, v)| {
                    Triplet::new(r as u32, c as u32, v / (sqrt_mass[r] * sqrt_mass[c]))
                })
                .collect();
            SparseColMat::<u32, f64>::try_new_from_triplets(n, n, &scaled)
                .map_err(|_| EigenError::NoConvergence)
        };
        let (values, a) = rayon::join(factor, scaled);
        let (values, a) = (values?, a?);
        Ok(Self {
            n,
            sqrt_mass,
            a,
            symbolic,
            values,
            block: None,
        })
    }

    /// The operator M^½(K − σM)⁻¹M^½ on a block, in place.
    fn apply_operator(&self, mut x: Mat<f64>) -> Mat<f64> {
        let weigh = |x: &mut Mat<f64>| {
            for j in 0..x.ncols() {
                for (v, s) in x.col_as_slice_mut(j).iter_mut().zip(&self.sqrt_mass) {
                    *v *= s;
                }
            }
        };
        weigh(&mut x);
        // The two halves of the block solved side by side (faer's solve is
        // sequential here; the two share the factor's reads, 20–25 % faster
        // on 2 cores). Always split, so the arithmetic is the same on any
        // number of threads.
        let solve = |mut x: faer::MatMut<'_, f64>| {
            let par = faer::Par::Seq;
            let mut scratch =
                MemBuffer::new(self.symbolic.solve_in_place_scratch::<f64>(x.ncols(), par));
            LltRef::new(&self.symbolic, &self.values).solve_in_place_with_conj(
                faer::Conj::No,
                x.as_mut(),
                par,
                MemStack::new(&mut scratch),
            );
        };
        let half = x.ncols() / 2;
        let (left, right) = x.as_mut().split_at_col_mut(half);
        rayon::join(|| solve(left), || solve(right));
        weigh(&mut x);
        x
    }

    /// The `count` lowest modes.
    pub fn lowest(&mut self, count: usize) -> Result<Modes, EigenError> {
        if count > self.n {
            return Err(EigenError::TooManyModes {
                asked: count,
                dofs: self.n,
            });
        }
        let kept = self.block.take();
        let (modes, ritz) = match self.krylov(count, kept)? {
            Krylov::Converged(modes, ritz) => (modes, ritz),
            Krylov::Stalled(ritz) => self.subspace(count, ritz)?,
        };
        self.block = Some(ritz);
        Ok(modes)
    }

    /// Subspace iteration from the vectors `start` (the stalled Krylov
    /// basis's Ritz vectors): a block twice as wide as the modes multiplied
    /// by the operator, then Rayleigh–Ritz on A, until every wanted mode's
    /// residual is below [`RESIDUAL`]. Slow from scratch (`λ_i/λ_p` per step),
    /// a few steps from nearly converged vectors; and every step damps what
    /// is left of the stiff modes.
    fn subspace(&self, count: usize, start: Mat<f64>) -> Result<(Modes, Mat<f64>), EigenError> {
        let n = self.n;
        let p = (2 * count + 8).min(n).max(start.ncols().min(n));
        let kept = start.ncols().min(p);
        let mut y = Mat::<f64>::from_fn(n, p, |i, j| {
            if j < kept {
                start[(i, j)]
            } else {
                start_entry(i, j)
            }
        });
        for _ in 0..MAX_ITERATIONS {
            let z = self.apply_operator(y);
            let q = z.qr().compute_thin_Q();
            let (theta, ritz, converged) = self.ritz_on_a(&q, count)?;
            y = ritz;
            if converged {
                return Ok((self.modes(&theta, &y, count)?, y));
            }
        }
        Err(EigenError::NoConvergence)
    }

    /// The `count` lowest modes and the Ritz vectors they came from (block
    /// Lanczos, the type's docs), starting from the vectors `kept`; or the
    /// Ritz vectors where the residuals stopped falling short of the
    /// tolerance (rounding in the operator's images, on some thin parts).
    fn krylov(&self, count: usize, kept: Option<Mat<f64>>) -> Result<Krylov, EigenError> {
        let n = self.n;
        let block = BLOCK.min(n);
        // Past this many vectors the basis restarts: room for the wanted
        // modes, a block of extra Ritz vectors and eight blocks of growth
        // (a 15k-vertex part: one restart, 18 solves; four blocks restarted
        // three times and needed 21).
        let cap = (3 * count + 8 * block).min(n);
        let keep = (count + block).min(cap - block.min(cap)).max(count);
        // The basis Q, its image W = Op Q, and H = QᵀW.
        let mut q = Mat::<f64>::zeros(n, cap);
        let mut w = Mat::<f64>::zeros(n, cap);
        let mut h = Mat::<f64>::zeros(cap, cap);
        let image =
            |q: &Mat<f64>, w: &mut Mat<f64>, h: &mut Mat<f64>, new: std::ops::Range<usize>| {
                let (start, len) = (new.start, new.len());
                let out = self.apply_operator(q.subcols(start, len).to_owned());
                w.subcols_mut(start, len).copy_from(&out);
                let end = new.end;
                let cols = tall::tmul(q.subcols(0, end), w.subcols(start, len));
                for c in 0..len {
                    for r in 0..end {
                        h[(r, start + c)] = cols[(r, c)];
                        h[(start + c, r)] = cols[(r, c)];
                    }
                }
            };
        // The start: the last call's Ritz vectors, then pseudo-random ones.
        let kept_cols = kept.as_ref().map_or(0, |b| b.ncols().min(keep));
        let seed = Mat::<f64>::from_fn(n, (kept_cols + block).min(cap), |i, j| match &kept {
            Some(b) if j < kept_cols => b[(i, j)],
            _ => start_entry(i, j),
        });
        let mut m = append_orthonormal(&mut q, 0, seed, true, 2);
        image(&q, &mut w, &mut h, 0..m);
        // The block whose image extends the basis next: not the kept
        // vectors, which span (nearly) an invariant subspace already.
        let mut frontier = kept_cols.min(m.saturating_sub(1))..m;
        let (mut best, mut since) = (f64::INFINITY, 0);
        for _ in 0..MAX_ITERATIONS {
            // The frontier's image less its projection on the basis, where
            // the residuals needed it: a first pass of Gram–Schmidt done.
            let mut projected = None;
            if m >= count {
                // Rayleigh–Ritz on the operator: its largest values are
                // A's lowest, and the Ritz vectors' images come for free.
                let hm = Mat::<f64>::from_fn(m, m, |i, j| 0.5 * (h[(i, j)] + h[(j, i)]));
                let evd = hm
                    .self_adjoint_eigen(Side::Lower)
                    .map_err(|_| EigenError::NoConvergence)?;
                let ritz = keep.min(m);
                let nu: Vec<f64> = (0..ritz)
                    .map(|c| evd.S().column_vector()[m - 1 - c])
                    .collect();
                let s = Mat::<f64>::from_fn(m, ritz, |i, c| evd.U()[(i, m - 1 - c)]);
                // The residuals Op y − νy = (W − QH)s without forming the
                // Ritz vectors: every earlier block's image lies in the
                // basis, so W − QH is zero but on the frontier's columns.
                let (f0, fl) = (frontier.start, frontier.len());
                let mut outside = w.subcols(f0, fl).to_owned();
                tall::mul_into(
                    outside.as_mut(),
                    faer::Accum::Add,
                    q.subcols(0, m),
                    h.submatrix(0, f0, m, fl),
                    -1.0,
                );
                let gram = tall::tmul(outside.as_ref(), outside.as_ref());
                projected = Some(outside);
                let sf = s.subrows(f0, fl);
                let worst = (0..count)
                    .map(|c| {
                        let sc = sf.col(c);
                        let r2 = sc.transpose() * &gram * sc;
                        r2.max(0.0).sqrt() / nu[c].abs()
                    })
                    .fold(0.0, f64::max);
                let wy = || tall::mul(w.subcols(0, m), s.as_ref());
                if (m == n || worst <= OPERATOR_RESIDUAL)
                    && let Some((modes, ritz)) = self.polish(&wy(), count)?
                {
                    return Ok(Krylov::Converged(modes, ritz));
                }
                // Stalled: the worst residual has not halved in a while.
                if worst < 0.5 * best {
                    (best, since) = (worst, 0);
                } else {
                    since += 1;
                    if since >= STALL_BLOCKS {
                        return Ok(Krylov::Stalled(tall::mul(q.subcols(0, m), s.as_ref())));
                    }
                }
                if m + block > cap {
                    // Thick restart: the Ritz vectors, and the last block's
                    // image, the next direction of the Krylov sequence.
                    // (Orthogonal to the whole basis first: what it has of
                    // the Ritz vectors dropped must not come back.)
                    let mut next = projected.take().expect("the residuals projected it");
                    tall::project_out(q.subcols(0, m), next.as_mut());
                    let (y, wy) = (tall::mul(q.subcols(0, m), s.as_ref()), wy());
                    q.subcols_mut(0, ritz).copy_from(&y);
                    w.subcols_mut(0, ritz).copy_from(&wy);
                    h.fill(0.0);
                    for (c, v) in nu.iter().enumerate() {
                        h[(c, c)] = *v;
                    }
                    m = ritz;
                    let grown = append_orthonormal(&mut q, m, next, true, 2);
                    image(&q, &mut w, &mut h, m..grown);
                    frontier = m..grown;
                    m = grown;
                    continue;
                }
            }
            let next = w.subcols(frontier.start, frontier.len());
            let mut grown = match projected {
                Some(outside) => append_orthonormal(&mut q, m, outside, false, 1),
                None => append_orthonormal(&mut q, m, next.to_owned(), false, 2),
            };
            if grown == m {
                // The basis is invariant: new directions, at random.
                grown = append_orthonormal(&mut q, m, next.to_owned(), true, 2);
            }
            if grown == m {
                return Err(EigenError::NoConvergence);
            }
            image(&q, &mut w, &mut h, m..grown);
            frontier = m..grown;
            m = grown;
        }
        Err(EigenError::NoConvergence)
    }

    /// The modes from the operator's converged Ritz vectors' images `wy`: a
    /// step of inverse iteration, which damps what the basis kept of the
    /// stiff modes (its start vectors') by `λ/λ_max`, then Rayleigh–Ritz on
    /// A. None if a wanted mode's residual is still above [`RESIDUAL`].
    fn polish(&self, wy: &Mat<f64>, count: usize) -> Result<Option<(Modes, Mat<f64>)>, EigenError> {
        let mut z = Mat::<f64>::zeros(self.n, wy.ncols());
        let cols = append_orthonormal(&mut z, 0, wy.to_owned(), true, 2);
        let z = z.subcols(0, cols).to_owned();
        let (theta, y, converged) = self.ritz_on_a(&z, count)?;
        if !converged {
            return Ok(None);
        }
        Ok(Some((self.modes(&theta, &y, count)?, y)))
    }

    /// Rayleigh–Ritz on A in the span of the orthonormal `q`: the Ritz
    /// values (ascending), their vectors, and whether the first `count`
    /// have residuals below [`RESIDUAL`].
    fn ritz_on_a(
        &self,
        q: &Mat<f64>,
        count: usize,
    ) -> Result<(Vec<f64>, Mat<f64>, bool), EigenError> {
        let aq = self.apply_a(q);
        let b = tall::tmul(q.as_ref(), aq.as_ref());
        let p = b.nrows();
        let b = Mat::<f64>::from_fn(p, p, |i, j| 0.5 * (b[(i, j)] + b[(j, i)]));
        let evd = b
            .self_adjoint_eigen(Side::Lower)
            .map_err(|_| EigenError::NoConvergence)?;
        let theta: Vec<f64> = (0..p).map(|c| evd.S().column_vector()[c]).collect();
        let y = tall::mul(q.as_ref(), evd.U());
        let ay = tall::mul(aq.as_ref(), evd.U());
        let converged =
            (0..count).all(|c| column_residual(&ay, &y, c, theta[c]) <= RESIDUAL * theta[c].abs());
        Ok((theta, y, converged))
    }

    /// A = M^(−½) K M^(−½) on a block.
    fn apply_a(&self, x: &Mat<f64>) -> Mat<f64> {
        let mut y = Mat::<f64>::zeros(self.n, x.ncols());
        // Half the columns per thread (each column's arithmetic is its own).
        let half = x.ncols() / 2;
        let (y_left, y_right) = y.as_mut().split_at_col_mut(half);
        let (x_left, x_right) = x.as_ref().split_at_col(half);
        let product = |y: faer::MatMut<'_, f64>, x: faer::MatRef<'_, f64>| {
            faer::sparse::linalg::matmul::sparse_dense_matmul(
                y,
                faer::Accum::Replace,
                self.a.as_ref(),
                x,
                1.0,
                faer::Par::Seq,
            );
        };
        rayon::join(|| product(y_left, x_left), || product(y_right, x_right));
        y
    }

    /// The first `count` of the converged Ritz pairs (values `theta`
    /// ascending, M^½-weighted vectors `y`) as mass-normalised modes;
    /// refused if the lowest is not positive.
    fn modes(&self, theta: &[f64], y: &Mat<f64>, count: usize) -> Result<Modes, EigenError> {
        if theta[0].is_nan() || theta[0] <= 0.0 {
            return Err(EigenError::NotPositive {
                lowest: theta[0],
                highest: theta[theta.len() - 1],
            });
        }
        let omega = theta[..count].iter().map(|t| t.sqrt()).collect();
        let shapes = (0..count)
            .map(|c| {
                y.col_as_slice(c)
                    .iter()
                    .zip(&self.sqrt_mass)
                    .map(|(v, s)| v / s)
                    .collect()
            })
            .collect();
        Ok(Modes { omega, shapes })
    }
}

/// How the block Lanczos ended.
enum Krylov {
    /// The modes, and the Ritz vectors they came from.
    Converged(Modes, Mat<f64>),
    /// Its best Ritz vectors, where the residuals stopped falling.
    Stalled(Mat<f64>),
}

/// `‖a_c − θ y_c‖` of column c.
fn column_residual(a: &Mat<f64>, y: &Mat<f64>, c: usize, theta: f64) -> f64 {
    a.col_as_slice(c)
        .iter()
        .zip(y.col_as_slice(c))
        .map(|(a, v)| (a - theta * v).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// Appends the columns of `w`, made orthonormal to the first `m` columns of
/// `q` (classical Gram–Schmidt, `passes` times: twice, or once where the
/// caller did the first) and to each other (twice, a column at a time),
/// after them, as many as fit; a column that lies in the span is dropped,
/// or with `fill` replaced by a pseudo-random one. The new column count.
fn append_orthonormal(q: &mut Mat<f64>, m: usize, w: Mat<f64>, fill: bool, passes: usize) -> usize {
    let n = q.nrows();
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let norms: Vec<f64> = (0..w.ncols())
        .map(|j| dot(w.col_as_slice(j), w.col_as_slice(j)).sqrt())
        .collect();
    // Against the basis as a block (matrix products, which read the basis
    // twice per pass and block, not per column).
    let mut w = w;
    for _ in 0..passes {
        if m > 0 {
            tall::project_out(q.subcols(0, m), w.as_mut());
        }
    }
    let start = m;
    let mut m = m;
    let mut v = vec![0.0; n];
    for j in 0..w.ncols() {
        if m == q.ncols() {
            break;
        }
        v.copy_from_slice(w.col_as_slice(j));
        // Against the columns this block appended so far, twice.
        for _ in 0..2 {
            for t in start..m {
                let qt = q.col_as_slice(t);
                let d = dot(qt, &v);
                v.iter_mut().zip(qt).for_each(|(x, y)| *x -= d * y);
            }
        }
        let mut after = dot(&v, &v).sqrt();
        let mut independent = after > 1e-8 * norms[j] && after > 0.0;
        let mut attempt = 0;
        while !independent && fill && attempt < 3 {
            // In the span already: a fresh direction instead, against the
            // whole basis.
            attempt += 1;
            let mut fresh = faer::Col::<f64>::from_fn(n, |i| start_entry(i, m + 31 * attempt));
            let before = fresh.norm_l2();
            for _ in 0..2 {
                let basis = q.subcols(0, m);
                let c = basis.transpose() * &fresh;
                fresh -= basis * &c;
            }
            v.iter_mut().enumerate().for_each(|(i, x)| *x = fresh[i]);
            after = dot(&v, &v).sqrt();
            independent = after > 1e-8 * before;
        }
        if independent {
            q.col_as_slice_mut(m)
                .iter_mut()
                .zip(&v)
                .for_each(|(x, y)| *x = y / after);
            m += 1;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operator on a single column (its halves: none and one) and on a
    /// block of several: each column's image is its own, the same either
    /// way, and (K − σM) times it gives the column back.
    #[test]
    fn the_operator_takes_one_column_or_a_block() {
        // A chain of five unit masses on springs, held at both ends.
        let n = 5;
        let mut k = Vec::new();
        for i in 0..n {
            k.push((i, i, 2.0));
            if i + 1 < n {
                k.push((i, i + 1, -1.0));
                k.push((i + 1, i, -1.0));
            }
        }
        let mass = vec![1.0; n];
        let solver = SparseModes::new(n, &k, &mass, None).expect("factors");
        let block = Mat::<f64>::from_fn(n, 3, start_entry);
        let images = solver.apply_operator(block.clone());
        for j in 0..3 {
            let one = solver.apply_operator(block.subcols(j, 1).to_owned());
            for i in 0..n {
                assert!((one[(i, 0)] - images[(i, j)]).abs() <= 1e-14, "{i}, {j}");
            }
        }
        // Unit masses: Op = (K − σM)⁻¹, so (K − σM)·Op x = x.
        let sigma = SHIFT * 2.0;
        for j in 0..3 {
            for i in 0..n {
                let mut back = (2.0 - sigma) * images[(i, j)];
                if i > 0 {
                    back -= images[(i - 1, j)];
                }
                if i + 1 < n {
                    back -= images[(i + 1, j)];
                }
                assert!((back - block[(i, j)]).abs() <= 1e-12, "{i}, {j}");
            }
        }
    }
}
