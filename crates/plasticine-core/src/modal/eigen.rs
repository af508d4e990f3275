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

use faer::linalg::solvers::Solve;
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

/// Subspace iterations the sparse solver may take.
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
    SparseModes::new(n, k, mass)?.lowest(count)
}

/// A sparse free block's modes by subspace iteration with shift and
/// invert: a block of vectors is multiplied by M^½(K − σM)⁻¹M^½ (faer's
/// sparse Cholesky of K − σM) and Rayleigh–Ritz on A = M^(−½)KM^(−½) picks
/// the best approximations in it, until every wanted mode's residual is
/// below [`RESIDUAL`]. (faer's Krylov–Schur stalled on the penguin's parts,
/// spinning in its Lanczos reorthogonalisation without applying the
/// operator.) The factor is kept, and a later call for more modes starts
/// from the last call's converged block, so asking again costs a few
/// iterations, not a second solve.
pub struct SparseModes<'a> {
    n: usize,
    k: &'a [(usize, usize, f64)],
    sqrt_mass: Vec<f64>,
    factor: faer::sparse::linalg::solvers::Llt<u32, f64>,
    /// The last converged block (M^½-weighted Ritz vectors), ascending.
    block: Option<Mat<f64>>,
}

impl<'a> SparseModes<'a> {
    /// Factors K − σM of the block (module docs), σ a little below zero.
    pub fn new(n: usize, k: &'a [(usize, usize, f64)], mass: &[f64]) -> Result<Self, EigenError> {
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
        let shifted = SparseColMat::<u32, f64>::try_new_from_triplets(n, n, &entries)
            .map_err(|_| EigenError::NoConvergence)?;
        let factor = shifted
            .sp_cholesky(Side::Lower)
            .map_err(|_| EigenError::NotPositive {
                lowest: f64::NAN,
                highest: f64::NAN,
            })?;
        Ok(Self {
            n,
            k,
            sqrt_mass: mass.iter().map(|m| m.sqrt()).collect(),
            factor,
            block: None,
        })
    }

    /// The `count` lowest modes.
    pub fn lowest(&mut self, count: usize) -> Result<Modes, EigenError> {
        let (n, k, sqrt_mass) = (self.n, self.k, &self.sqrt_mass);
        if count > n {
            return Err(EigenError::TooManyModes {
                asked: count,
                dofs: n,
            });
        }
        // A = M^(−½) K M^(−½) applied to a block, a column at a time (the
        // same sums, in the same order, as entry by entry).
        let scaled: Vec<(usize, usize, f64)> = k
            .iter()
            .map(|&(r, c, v)| (r, c, v / (sqrt_mass[r] * sqrt_mass[c])))
            .collect();
        let apply_a = |x: &Mat<f64>| {
            let mut y = Mat::<f64>::zeros(n, x.ncols());
            for j in 0..x.ncols() {
                let (xc, yc) = (x.col_as_slice(j), y.col_as_slice_mut(j));
                for &(r, c, w) in &scaled {
                    yc[r] += w * xc[c];
                }
            }
            y
        };
        // Each column times M^½.
        let weigh = |x: &mut Mat<f64>| {
            for j in 0..x.ncols() {
                for (v, s) in x.col_as_slice_mut(j).iter_mut().zip(sqrt_mass) {
                    *v *= s;
                }
            }
        };
        let p = (2 * count + 8).min(n);
        // The last block's vectors first, then fixed pseudo-random ones.
        let kept = self.block.as_ref().map_or(0, |b| b.ncols().min(p));
        let mut y = Mat::<f64>::from_fn(n, p, |i, j| match &self.block {
            Some(b) if j < kept => b[(i, j)],
            _ => ((i * 7919 + j * 104_729) as f64 * 0.618_033_988_75).fract() - 0.5,
        });
        for _ in 0..MAX_ITERATIONS {
            let mut z = y.clone();
            weigh(&mut z);
            faer::linalg::solvers::SolveCore::solve_in_place_with_conj(
                &self.factor,
                faer::Conj::No,
                z.as_mut(),
            );
            weigh(&mut z);
            let q = z.qr().compute_thin_Q();
            let aq = apply_a(&q);
            let b = q.transpose() * &aq;
            let b = Mat::<f64>::from_fn(p, p, |i, j| 0.5 * (b[(i, j)] + b[(j, i)]));
            let evd = b
                .self_adjoint_eigen(Side::Lower)
                .map_err(|_| EigenError::NoConvergence)?;
            let theta: Vec<f64> = (0..p).map(|c| evd.S().column_vector()[c]).collect();
            y = &q * evd.U();
            let ay = &aq * evd.U();
            let converged = (0..count).all(|c| {
                let r: f64 = ay
                    .col_as_slice(c)
                    .iter()
                    .zip(y.col_as_slice(c))
                    .map(|(a, v)| (a - theta[c] * v).powi(2))
                    .sum::<f64>()
                    .sqrt();
                r <= RESIDUAL * theta[c].abs()
            });
            if converged {
                if theta[0].is_nan() || theta[0] <= 0.0 {
                    return Err(EigenError::NotPositive {
                        lowest: theta[0],
                        highest: theta[p - 1],
                    });
                }
                let omega = theta[..count].iter().map(|t| t.sqrt()).collect();
                let shapes = (0..count)
                    .map(|c| {
                        y.col_as_slice(c)
                            .iter()
                            .zip(sqrt_mass)
                            .map(|(v, s)| v / s)
                            .collect()
                    })
                    .collect();
                self.block = Some(y);
                return Ok(Modes { omega, shapes });
            }
        }
        Err(EigenError::NoConvergence)
    }
}
