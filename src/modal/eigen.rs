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
