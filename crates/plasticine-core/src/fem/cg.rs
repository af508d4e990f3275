//! The conjugate-gradient core shared by the lattice solvers (Capell §4.2,
//! §4.4): each regional system `S = c_m M + c_k K`, cached with its
//! preconditioners, and projected preconditioned CG with known entries
//! (bones, eq. 17–18) masked and position constraints projected out
//! (Baraff & Witkin's filter, the QR of §4.4). [`FemBody`] and the adaptive
//! body build their systems and call `solver::projected_pcg`.
//!
//! [`FemBody`]: super::solver::FemBody

use super::factor::SparseCholesky;
use super::sparse::{Assembled, BlockCsr, MassKind};
use glam::{DMat3, DVec3};

/// What one CG solve did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CgReport {
    /// CG iterations taken.
    pub iterations: usize,
    /// Final projected residual norm over that of the start vector before any warm
    /// start (`‖r‖/‖r₀‖`).
    pub relative_residual: f64,
    /// Whether `relative_residual` reached the tolerance.
    pub converged: bool,
    /// Position constraints dropped as redundant or conflicting.
    pub dropped_constraints: usize,
}

/// A constraint in a region's local numbering: the (local DOF, weight)
/// pairs of `Σ φ x` (a cell's eight corners on the lattice; up to 8·(J+1)
/// functions in the hierarchical basis) and the value it asks for.
#[derive(Clone, Debug)]
pub struct LocalConstraint {
    /// The (local DOF, weight) pairs of `Σ φ x`.
    pub support: Vec<(usize, f64)>,
    /// The value `Σ φ x` is held to.
    pub value: DVec3,
}

/// Reusable vectors of one regional solve.
#[derive(Default, Clone, Debug)]
pub(crate) struct Scratch {
    pub(crate) x: Vec<DVec3>,
    pub(crate) b: Vec<DVec3>,
    pub(crate) r: Vec<DVec3>,
    pub(crate) z: Vec<DVec3>,
    pub(crate) p: Vec<DVec3>,
    pub(crate) ap: Vec<DVec3>,
    pub(crate) tmp: Vec<DVec3>,
    pub(crate) tmp2: Vec<DVec3>,
    /// Scalar view of a vector for the factor's substitutions.
    pub(crate) flat: Vec<f64>,
    pub(crate) known: Vec<bool>,
    /// The regional system matrix, kept while h and the damping stay put.
    pub(crate) system: Option<SystemCache>,
    /// The previous step's solution (kept across steps: warm start).
    pub(crate) warm: Vec<DVec3>,
}

impl Scratch {
    pub(crate) fn resize(&mut self, n: usize) {
        for v in [
            &mut self.x,
            &mut self.b,
            &mut self.r,
            &mut self.z,
            &mut self.p,
            &mut self.ap,
            &mut self.tmp,
            &mut self.tmp2,
        ] {
            v.clear();
            v.resize(n, DVec3::ZERO);
        }
        self.known.clear();
        self.known.resize(n, false);
        self.warm.resize(n, DVec3::ZERO);
    }
}

/// The regional system matrix `S = c_m M + c_k K` in the bone's frame,
/// assembled once per (`c_m`, `c_k`, mass kind), with its block-Jacobi inverse
/// and, once per known-row mask, the sparse Cholesky factor of its unknown
/// block ([`SparseCholesky`], where it fits its memory budget): the
/// factor makes CG converge in one iteration (a few with constraints).
///
/// The solve runs in the bone's frame: M is a scalar times I₃ per block, so
/// `c_m M + c_k R K Rᵀ = R (c_m M + c_k K) Rᵀ`, and `A Δv = b` becomes
/// `S (Rᵀ Δv) = Rᵀ b`; position constraints are scalar per vertex, so they
/// commute with R. CG then multiplies by one fixed sparse matrix, with no
/// per-iteration rotation and no per-step re-assembly.
#[derive(Clone, Debug)]
pub(crate) struct SystemCache {
    pub(crate) key: (f64, f64, MassKind),
    pub(crate) matrix: BlockCsr,
    pub(crate) precond: Vec<DMat3>,
    /// The sparse Cholesky factor of the unknown block and the known-row
    /// mask it was built for (None inside: declined, block-Jacobi it is).
    pub(crate) factor: Option<(Vec<bool>, Option<SparseCholesky>)>,
    /// The mass coefficient the factor was built for (the system's may
    /// have moved since, see [`SystemCache::ensure_near`]).
    pub(crate) factored_at: f64,
    /// The rows' lattice coordinates, for the factor's ordering.
    pub(crate) grid: Option<std::sync::Arc<[[usize; 3]]>>,
}

impl SystemCache {
    pub(crate) fn new(matrices: &Assembled, mass: MassKind, c_mass: f64, c_stiff: f64) -> Self {
        let mut matrix = matrices.stiffness.clone();
        for b in &mut matrix.blocks {
            *b *= c_stiff;
        }
        for row in 0..matrix.rows() {
            for k in matrix.row_ptr[row]..matrix.row_ptr[row + 1] {
                let col = matrix.col[k] as usize;
                let m = match mass {
                    MassKind::Lumped if col == row => matrices.lumped_mass[row],
                    MassKind::Lumped => 0.0,
                    MassKind::Consistent => matrices.consistent_mass.values[k],
                };
                matrix.blocks[k] += DMat3::from_diagonal(DVec3::splat(c_mass * m));
            }
        }
        let precond = (0..matrix.rows())
            .map(|row| jacobi_block(matrix.diagonal(row)))
            .collect();
        Self {
            key: (c_mass, c_stiff, mass),
            matrix,
            precond,
            factor: None,
            factored_at: c_mass,
            grid: matrices.grid.clone(),
        }
    }

    /// Factors the unknown block for this known-row mask (once per mask)
    /// so that [`projected_pcg`] preconditions with the exact inverse;
    /// without it, or where the factor is declined, block-Jacobi.
    pub(crate) fn prepare_factor(&mut self, known: &[bool]) {
        if !matches!(&self.factor, Some((mask, _)) if mask.as_slice() == known) {
            let factor = SparseCholesky::new(&self.matrix, known, self.grid.as_deref());
            self.factor = Some((known.to_vec(), factor));
            self.factored_at = self.key.0;
        }
    }

    /// The factor to precondition with for this mask, if any.
    fn factor_for(&self, known: &[bool]) -> Option<&SparseCholesky> {
        match &self.factor {
            Some((mask, Some(f))) if mask.as_slice() == known => Some(f),
            _ => None,
        }
    }

    /// As [`ensure`](Self::ensure) for a system whose mass coefficient
    /// moves from step to step (morph targets fold their blended stiffness
    /// σ into it: `S/σ = (c_m/σ) M + c_k K`). With lumped mass the mass
    /// sits on the diagonal blocks alone, so a moved coefficient updates
    /// them in place, and the factor is kept, preconditioning CG, until
    /// the coefficient has moved by `share` from the one it was built for;
    /// then it is refactored numerically on the same symbolic analysis.
    pub(crate) fn ensure_near(
        cache: &mut Option<SystemCache>,
        matrices: &Assembled,
        mass: MassKind,
        c_mass: f64,
        c_stiff: f64,
        share: f64,
    ) -> SystemCache {
        match cache.take() {
            // A blend that sums to one up to rounding is the same system.
            Some(c)
                if c.key.1 == c_stiff
                    && c.key.2 == mass
                    && (c_mass / c.key.0 - 1.0).abs() <= 1e-12 =>
            {
                c
            }
            Some(mut c) if c.key.1 == c_stiff && mass == MassKind::Lumped && c.key.2 == mass => {
                let change = c_mass - c.key.0;
                for row in 0..c.matrix.rows() {
                    if let Some(k) = c.matrix.find(row, row) {
                        c.matrix.blocks[k] +=
                            DMat3::from_diagonal(DVec3::splat(change * matrices.lumped_mass[row]));
                        c.precond[row] = jacobi_block(c.matrix.blocks[k]);
                    }
                }
                c.key.0 = c_mass;
                if (c_mass / c.factored_at - 1.0).abs() > share {
                    // Refactor numerically on the same ordering and symbolic
                    // analysis (the pattern and the known rows are the same).
                    if let Some((mask, factor)) = &mut c.factor {
                        *factor = factor.as_ref().and_then(|f| f.refactored(&c.matrix, mask));
                    }
                    c.factored_at = c_mass;
                }
                c
            }
            _ => Self::new(matrices, mass, c_mass, c_stiff),
        }
    }

    /// The cached system for these coefficients, rebuilt if they changed.
    pub(crate) fn ensure(
        cache: &mut Option<SystemCache>,
        matrices: &Assembled,
        mass: MassKind,
        c_mass: f64,
        c_stiff: f64,
    ) -> SystemCache {
        match cache.take() {
            Some(c) if c.key == (c_mass, c_stiff, mass) => c,
            _ => Self::new(matrices, mass, c_mass, c_stiff),
        }
    }
}

/// The block-Jacobi preconditioner's block for diagonal block `d`: its
/// inverse, or the identity where it is singular.
fn jacobi_block(d: DMat3) -> DMat3 {
    if d.determinant().abs() > 0.0 {
        d.inverse()
    } else {
        DMat3::IDENTITY
    }
}

/// y = (M ⊗ I₃) x for the chosen mass matrix.
pub(crate) fn mass_mul(matrices: &Assembled, mass: MassKind, x: &[DVec3], y: &mut [DVec3]) {
    match mass {
        MassKind::Lumped => {
            for ((yi, xi), m) in y.iter_mut().zip(x).zip(&matrices.lumped_mass) {
                *yi = *xi * *m;
            }
        }
        MassKind::Consistent => matrices.consistent_mass.mul(&matrices.stiffness, x, y),
    }
}

/// A constraint whose free corners carry less than this share of its
/// support's weight (its norm) is dropped: see [`ConstraintBasis::new`].
pub(crate) const HELD_BY_KNOWN: f64 = 0.1;

/// Orthonormal basis of the constraint columns restricted to unknown rows
/// (the Q of C's QR), stored sparsely.
pub struct ConstraintBasis {
    /// The basis vectors, each as (unknown row, value) pairs.
    pub columns: Vec<Vec<(usize, f64)>>,
}

impl ConstraintBasis {
    /// Builds the basis and moves `x` onto the constraint set: adds the
    /// minimum-norm change of its unknown entries after which every
    /// constraint holds. Returns the basis and how many constraints were
    /// dropped.
    pub fn new(
        n: usize,
        known: &[bool],
        cons: &[LocalConstraint],
        x: &mut [DVec3],
    ) -> (Self, usize) {
        let mut columns: Vec<Vec<f64>> = Vec::new();
        let mut r_diag_and_coeffs: Vec<(Vec<f64>, f64, DVec3)> = Vec::new();
        let mut dropped = 0;
        for c in cons {
            let mut col = vec![0.0; n];
            let mut value = c.value;
            // Whatever x already holds (known entries, a warm start) counts
            // towards the constraint; the correction lives on unknown rows.
            for &(l, w) in &c.support {
                value -= x[l] * w;
                if !known[l] {
                    col[l] += w;
                }
            }
            let norm0 = col.iter().map(|v| v * v).sum::<f64>().sqrt();
            // A point that lies almost on the known (bone) vertices cannot
            // be moved without throwing its free corners far (the change
            // is the target over their weights): it is held by the bone.
            let full = c.support.iter().map(|(_, w)| w * w).sum::<f64>().sqrt();
            if norm0 < HELD_BY_KNOWN * full {
                dropped += 1;
                continue;
            }
            // Modified Gram–Schmidt against the accepted columns; the
            // projections are the off-diagonal entries of R.
            let mut coeffs = Vec::with_capacity(columns.len());
            for u in &columns {
                let d: f64 = u.iter().zip(&col).map(|(a, b)| a * b).sum();
                for (ci, ui) in col.iter_mut().zip(u) {
                    *ci -= d * ui;
                }
                coeffs.push(d);
            }
            let norm = col.iter().map(|v| v * v).sum::<f64>().sqrt();
            if norm <= 1e-10 * norm0.max(1e-300) || norm0 == 0.0 {
                dropped += 1;
                continue;
            }
            for ci in &mut col {
                *ci /= norm;
            }
            columns.push(col);
            r_diag_and_coeffs.push((coeffs, norm, value));
        }
        // Rᵀ y = a by forward substitution, then x_u = Q y.
        let mut y: Vec<DVec3> = Vec::with_capacity(columns.len());
        for (coeffs, diag, value) in &r_diag_and_coeffs {
            let mut s = *value;
            for (k, d) in coeffs.iter().enumerate() {
                s -= y[k] * *d;
            }
            y.push(s / *diag);
        }
        let sparse: Vec<Vec<(usize, f64)>> = columns
            .iter()
            .map(|c| {
                c.iter()
                    .enumerate()
                    .filter(|(_, v)| **v != 0.0)
                    .map(|(l, v)| (l, *v))
                    .collect()
            })
            .collect();
        for (col, yj) in sparse.iter().zip(&y) {
            for &(l, w) in col {
                x[l] += *yj * w;
            }
        }
        (Self { columns: sparse }, dropped)
    }

    /// r ← P r: removes the components along every constraint direction.
    pub fn project(&self, r: &mut [DVec3]) {
        for col in &self.columns {
            let s: DVec3 = col.iter().map(|&(l, w)| r[l] * w).sum();
            for &(l, w) in col {
                r[l] -= s * w;
            }
        }
    }
}

pub(crate) fn dot(a: &[DVec3], b: &[DVec3]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x.dot(*y)).sum()
}

/// Projected preconditioned CG (the Cholesky factor if prepared for this
/// mask, else block-Jacobi) for `A x = b` with known
/// entries (already in `x`, masked) and position constraints. `x` holds the
/// start vector's known entries on input and the solution on output.
pub(crate) fn projected_pcg(
    system: &SystemCache,
    s: &mut Scratch,
    cons: &[LocalConstraint],
    tolerance: f64,
    max_iterations: usize,
    warm: bool,
) -> CgReport {
    let n = s.x.len();
    let (basis, dropped) = ConstraintBasis::new(n, &s.known, cons, &mut s.x);
    let filter = |v: &mut [DVec3], known: &[bool]| {
        for (vi, &k) in v.iter_mut().zip(known) {
            if k {
                *vi = DVec3::ZERO;
            }
        }
        basis.project(v);
    };
    let (a, precond) = (&system.matrix, &system.precond);
    let factor = system.factor_for(&s.known);
    // z ← M⁻¹ r: the factor's exact inverse or block-Jacobi.
    let precondition = |r: &[DVec3], z: &mut [DVec3], flat: &mut Vec<f64>| match factor {
        Some(f) => f.solve(r, z, flat),
        None => {
            for ((zi, ri), pi) in z.iter_mut().zip(r).zip(precond) {
                *zi = *pi * *ri;
            }
        }
    };
    a.mul(&s.x, &mut s.ap);
    for i in 0..n {
        s.r[i] = s.b[i] - s.ap[i];
    }
    filter(&mut s.r, &s.known);
    // The tolerance is relative to the residual of the start vector without
    // a warm start, so a good warm start means fewer iterations, not a
    // tighter target.
    let r0 = dot(&s.r, &s.r).sqrt();
    let mut report = CgReport {
        iterations: 0,
        relative_residual: 0.0,
        converged: true,
        dropped_constraints: dropped,
    };
    if r0 == 0.0 {
        return report;
    }
    // With the exact factor and no constraints the first iteration solves
    // to round-off from any start, so a warm start would cost a product
    // and save nothing.
    if warm && (factor.is_none() || !basis.columns.is_empty()) {
        // The previous solution, filtered, keeps the known entries and the
        // constraint values: x + P w still meets them.
        s.tmp2.copy_from_slice(&s.warm);
        filter(&mut s.tmp2, &s.known);
        for i in 0..n {
            s.x[i] += s.tmp2[i];
        }
        a.mul(&s.x, &mut s.ap);
        for i in 0..n {
            s.r[i] = s.b[i] - s.ap[i];
        }
        filter(&mut s.r, &s.known);
    }
    precondition(&s.r, &mut s.z, &mut s.flat);
    filter(&mut s.z, &s.known);
    s.p.copy_from_slice(&s.z);
    let mut rz = dot(&s.r, &s.z);
    let mut rel = dot(&s.r, &s.r).sqrt() / r0;
    let mut it = 0;
    while it < max_iterations && rel > tolerance {
        a.mul(&s.p, &mut s.ap);
        filter(&mut s.ap, &s.known);
        let pap = dot(&s.p, &s.ap);
        if pap <= 0.0 {
            break;
        }
        let alpha = rz / pap;
        for i in 0..n {
            s.x[i] += s.p[i] * alpha;
            s.r[i] -= s.ap[i] * alpha;
        }
        it += 1;
        rel = dot(&s.r, &s.r).sqrt() / r0;
        if rel <= tolerance {
            break;
        }
        precondition(&s.r, &mut s.z, &mut s.flat);
        filter(&mut s.z, &s.known);
        let rz_new = dot(&s.r, &s.z);
        let beta = rz_new / rz;
        rz = rz_new;
        for i in 0..n {
            s.p[i] = s.z[i] + s.p[i] * beta;
        }
    }
    report.iterations = it;
    report.relative_residual = rel;
    report.converged = rel <= tolerance;
    report
}
