//! The Jacobian of a spring system: each spring's block, the assembled
//! lower triangle in the cached pattern, its Cholesky factor (kept as the
//! next steps' preconditioner), conjugate gradients on it, and sparse LU
//! for the exact, indefinite option.

use super::{Pattern, SolveError, SpringSystem};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::prelude::Solve as _;
use faer::sparse::linalg::cholesky::{LltRef, SymmetricOrdering, factorize_symbolic_cholesky};
use faer::sparse::{SparseColMat, Triplet};
use faer::{Conj, Mat, MatMut, Par, Side};
use glam::{DMat3, DVec3};
use rayon::prelude::*;

/// One spring's Hessian block k(d̂d̂ᵀ + t(I − d̂d̂ᵀ)), t = 1 − r/‖d‖,
/// with t clamped at zero when `project`.
pub(super) fn spring_block(d: DVec3, rest: f64, k: f64, project: bool) -> DMat3 {
    let len = d.length();
    if len <= f64::MIN_POSITIVE {
        return DMat3::from_diagonal(DVec3::splat(k));
    }
    let n = d / len;
    let mut t = 1.0 - rest / len;
    if project {
        t = t.max(0.0);
    }
    let nn = DMat3::from_cols(n * n.x, n * n.y, n * n.z);
    (nn * (1.0 - t) + DMat3::IDENTITY * t) * k
}

impl SpringSystem {
    /// ∇²E v, exact (unprojected) at `x`, for every vertex (fixed or not):
    /// what the finite-difference check compares with.
    pub fn hessian_times(&self, x: &[DVec3], rest: &[f64], k: &[f64], v: &[DVec3]) -> Vec<DVec3> {
        let blocks = self.blocks(x, rest, k, false);
        let mut out = vec![DVec3::ZERO; self.vertices];
        for (s, &[a, b]) in self.springs.ends.iter().enumerate() {
            let (a, b) = (a as usize, b as usize);
            let d = blocks[s] * (v[a] - v[b]);
            out[a] += d;
            out[b] -= d;
        }
        out
    }

    pub(super) fn pattern(&mut self) -> Result<&Pattern, SolveError> {
        if self.pattern.is_none() {
            self.pattern = Some(self.build_pattern()?);
        }
        Ok(self.pattern.as_ref().expect("just built"))
    }

    pub(super) fn build_pattern(&self) -> Result<Pattern, SolveError> {
        let n = 3 * self.vertices;
        let mut entries = Vec::new();
        for i in 0..self.vertices {
            for r in 0..3 {
                for c in 0..=r {
                    entries.push(Triplet::new((3 * i + r) as u32, (3 * i + c) as u32, 0.0));
                }
            }
            if self.structural[i] {
                continue;
            }
            for &(j, _) in &self.incidence[i] {
                let j = j as usize;
                if j < i && !self.structural[j] {
                    for r in 0..3 {
                        for c in 0..3 {
                            entries.push(Triplet::new((3 * i + r) as u32, (3 * j + c) as u32, 0.0));
                        }
                    }
                }
            }
        }
        let mut matrix = SparseColMat::<u32, f64>::try_new_from_triplets(n, n, &entries)
            .map_err(|_| SolveError::Singular)?;
        let symbolic = factorize_symbolic_cholesky(
            matrix.symbolic(),
            Side::Lower,
            SymmetricOrdering::Amd,
            Default::default(),
        )
        .map_err(|_| SolveError::Singular)?;
        let position = |matrix: &SparseColMat<u32, f64>, i: usize, j: usize| -> u32 {
            let col = matrix.symbolic();
            let (s, e) = (col.col_ptr()[j] as usize, col.col_ptr()[j + 1] as usize);
            let k = col.row_idx()[s..e]
                .binary_search(&(i as u32))
                .expect("entry in the pattern");
            (s + k) as u32
        };
        let mut slots = Vec::with_capacity(entries.len());
        for i in 0..self.vertices {
            if self.structural[i] {
                // Fixed rows are the identity, set once.
                for r in 0..3 {
                    let p = position(&matrix, 3 * i + r, 3 * i + r) as usize;
                    matrix.val_mut()[p] = 1.0;
                }
                continue;
            }
            for r in 0..3 {
                for c in 0..=r {
                    slots.push(position(&matrix, 3 * i + r, 3 * i + c));
                }
            }
            for &(j, _) in &self.incidence[i] {
                let j = j as usize;
                if j < i && !self.structural[j] {
                    for r in 0..3 {
                        for c in 0..3 {
                            slots.push(position(&matrix, 3 * i + r, 3 * j + c));
                        }
                    }
                }
            }
        }
        Ok(Pattern {
            matrix,
            symbolic,
            slots,
        })
    }

    /// Every spring's Hessian block at `x`.
    pub(super) fn blocks(&self, x: &[DVec3], rest: &[f64], k: &[f64], project: bool) -> Vec<DMat3> {
        self.springs
            .ends
            .par_iter()
            .enumerate()
            .map(|(s, &[a, b])| spring_block(x[a as usize] - x[b as usize], rest[s], k[s], project))
            .collect()
    }

    /// Writes ∇²E (+ μ on the free diagonal) into the pattern's values.
    pub(super) fn assemble(&mut self, blocks: &[DMat3], mu: f64) -> Result<(), SolveError> {
        self.pattern()?;
        let pattern = self.pattern.as_mut().expect("built");
        let values = pattern.matrix.val_mut();
        let mut slot = pattern.slots.iter();
        for i in 0..self.vertices {
            if self.structural[i] {
                continue;
            }
            // A vertex held since the pattern was built (a contact) is an
            // identity row and column in the same pattern: no new symbolic
            // factor, and the kept factor stays a preconditioner.
            let diag = if self.fixed[i] {
                DMat3::IDENTITY
            } else {
                self.incidence[i]
                    .iter()
                    .fold(DMat3::from_diagonal(DVec3::splat(mu)), |d, &(_, s)| {
                        d + blocks[s as usize]
                    })
            };
            for r in 0..3 {
                for c in 0..=r {
                    values[*slot.next().expect("slot") as usize] = diag.col(c)[r];
                }
            }
            for &(j, s) in &self.incidence[i] {
                let j = j as usize;
                if j < i && !self.structural[j] {
                    let b = if self.fixed[i] || self.fixed[j] {
                        DMat3::ZERO
                    } else {
                        blocks[s as usize]
                    };
                    for r in 0..3 {
                        for c in 0..3 {
                            values[*slot.next().expect("slot") as usize] = -b.col(c)[r];
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Factors the assembled matrix and solves, in place on `rhs` (flat, 3
    /// per vertex); the factor is kept as the next steps' preconditioner.
    /// False if the matrix is not positive definite.
    pub(super) fn cholesky_step(&mut self, rhs: &mut [f64]) -> Result<bool, SolveError> {
        let pattern = self.pattern.as_ref().ok_or(SolveError::Singular)?;
        let par = Par::Seq;
        let mut values = self
            .factor
            .take()
            .unwrap_or_else(|| vec![0.0; pattern.symbolic.len_val()]);
        let mut buffer = MemBuffer::try_new(
            pattern
                .symbolic
                .factorize_numeric_llt_scratch::<f64>(par, Default::default()),
        )
        .map_err(|_| SolveError::Singular)?;
        if pattern
            .symbolic
            .factorize_numeric_llt(
                &mut values,
                pattern.matrix.as_ref(),
                Side::Lower,
                LltRegularization::default(),
                par,
                MemStack::new(&mut buffer),
                Default::default(),
            )
            .is_err()
        {
            return Ok(false);
        }
        self.factor = Some(values);
        self.apply_factor(rhs);
        Ok(true)
    }

    /// rhs ← (the kept factor)⁻¹ rhs.
    pub(super) fn apply_factor(&self, rhs: &mut [f64]) {
        let (Some(pattern), Some(values)) = (&self.pattern, &self.factor) else {
            return;
        };
        let par = Par::Seq;
        let n = rhs.len();
        let mut buffer = MemBuffer::new(pattern.symbolic.solve_in_place_scratch::<f64>(1, par));
        LltRef::new(&pattern.symbolic, values).solve_in_place_with_conj(
            Conj::No,
            MatMut::from_column_major_slice_mut(rhs, n, 1),
            par,
            MemStack::new(&mut buffer),
        );
    }

    /// Solves ∇²E Δ = rhs (exact Hessian at `x`, μ on the diagonal) by
    /// conjugate gradients preconditioned with the factor kept from an
    /// earlier step, to `tolerance` relative to ‖rhs‖. A warm step's Hessian
    /// is close to the factored one, so a few iterations of two triangular
    /// solves each replace a refactor. None on negative curvature (the
    /// exact Hessian is indefinite there) or if it does not converge in
    /// `max_iterations`; then the caller refactors.
    pub(super) fn preconditioned_cg(
        &self,
        blocks: &[DMat3],
        mu: f64,
        rhs: &[f64],
        tolerance: f64,
        max_iterations: usize,
    ) -> Option<(Vec<f64>, usize)> {
        self.factor.as_ref()?;
        let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
        // The assembled matrix's product: P (H + μ) P v + (I − P) v, P
        // zeroing the held vertices (the kept factor may be of another
        // held set, so v's held entries need not be zero).
        let held = |v: &[f64], i: usize| {
            if self.fixed[i] {
                DVec3::ZERO
            } else {
                DVec3::from_slice(&v[3 * i..3 * i + 3])
            }
        };
        let product = |v: &[f64], out: &mut [f64]| {
            for (i, o) in out.chunks_exact_mut(3).enumerate() {
                o.copy_from_slice(&(held(v, i) * mu).to_array());
            }
            for (s, &[a, b]) in self.springs.ends.iter().enumerate() {
                let (a, b) = (a as usize, b as usize);
                let d = blocks[s] * (held(v, a) - held(v, b));
                for r in 0..3 {
                    out[3 * a + r] += d[r];
                    out[3 * b + r] -= d[r];
                }
            }
            for (i, fixed) in self.fixed.iter().enumerate() {
                if *fixed {
                    out[3 * i..3 * i + 3].copy_from_slice(&v[3 * i..3 * i + 3]);
                }
            }
        };
        let n = rhs.len();
        let goal = tolerance * dot(rhs, rhs).sqrt();
        let mut x = vec![0.0; n];
        let mut r = rhs.to_vec();
        let mut z = r.clone();
        self.apply_factor(&mut z);
        let mut p = z.clone();
        let mut rz = dot(&r, &z);
        let mut ap = vec![0.0; n];
        for iteration in 1..=max_iterations {
            product(&p, &mut ap);
            let curvature = dot(&p, &ap);
            if curvature.is_nan() || curvature <= 0.0 {
                return None;
            }
            let alpha = rz / curvature;
            for i in 0..n {
                x[i] += alpha * p[i];
                r[i] -= alpha * ap[i];
            }
            if dot(&r, &r).sqrt() <= goal {
                return Some((x, iteration));
            }
            z.copy_from_slice(&r);
            self.apply_factor(&mut z);
            let rz_next = dot(&r, &z);
            let beta = rz_next / rz;
            rz = rz_next;
            for i in 0..n {
                p[i] = z[i] + beta * p[i];
            }
        }
        None
    }

    /// Solves with the exact (indefinite) Jacobian by sparse LU.
    pub(super) fn lu_step(&self, blocks: &[DMat3], mu: f64, rhs: &mut [f64]) -> bool {
        let n = 3 * self.vertices;
        let mut entries = Vec::new();
        for i in 0..self.vertices {
            if self.fixed[i] {
                for r in 0..3 {
                    entries.push(Triplet::new(3 * i + r, 3 * i + r, 1.0));
                }
                continue;
            }
            let mut diag = DMat3::from_diagonal(DVec3::splat(mu));
            for &(j, s) in &self.incidence[i] {
                let b = blocks[s as usize];
                diag += b;
                let j = j as usize;
                if !self.fixed[j] {
                    for r in 0..3 {
                        for c in 0..3 {
                            entries.push(Triplet::new(3 * i + r, 3 * j + c, -b.col(c)[r]));
                        }
                    }
                }
            }
            for r in 0..3 {
                for c in 0..3 {
                    entries.push(Triplet::new(3 * i + r, 3 * i + c, diag.col(c)[r]));
                }
            }
        }
        let Ok(matrix) = SparseColMat::<usize, f64>::try_new_from_triplets(n, n, &entries) else {
            return false;
        };
        let Ok(lu) = matrix.sp_lu() else {
            return false;
        };
        let b = Mat::from_fn(n, 1, |i, _| rhs[i]);
        let x = lu.solve(&b);
        for (i, v) in rhs.iter_mut().enumerate() {
            *v = x[(i, 0)];
        }
        rhs.iter().all(|v| v.is_finite())
    }
}
