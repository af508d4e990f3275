//! The quasi-static equilibrium of a mass-spring system (Ma et al. eq. 2–4):
//! the positions where every free vertex's spring forces sum to zero, found
//! by Newton–Raphson, J Δx = −f.
//!
//! With E = ½ Σ k (‖d‖ − r)² over the springs, f = ∇E and J = ∇²E. One spring's block
//! is k (d̂d̂ᵀ + (1 − r/‖d‖)(I − d̂d̂ᵀ)): along the spring k, across it
//! k(1 − r/‖d‖), negative when the spring is compressed. The paper's J is
//! −∇²E with the same blocks. A compressed spring makes J indefinite; by
//! default ([`Hessian::Projected`]) each block's transverse part is clamped
//! at zero, as the paper's future work suggests, so the system is positive
//! semi-definite, factored by sparse Cholesky, and every step descends E
//! (backtracked until it does). [`Hessian::Exact`] keeps the blocks as they
//! are and solves with sparse LU.
//!
//! Dirichlet vertices (§3.4) keep their positions: their rows are the
//! identity and their forces zero. The pattern never changes, so the
//! Cholesky's symbolic analysis (ordering, elimination tree) runs once per
//! system and each Newton step only refactors the values. All in f64: the
//! paper blames crumpling on precision.

use super::springs::SpringSet;
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::prelude::Solve as _;
use faer::sparse::linalg::cholesky::{
    LltRef, SymbolicCholesky, SymmetricOrdering, factorize_symbolic_cholesky,
};
use faer::sparse::{SparseColMat, Triplet};
use faer::{Conj, Mat, MatMut, Par, Side};
use glam::{DMat3, DVec3};
use rayon::prelude::*;

/// How the Jacobian is treated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hessian {
    /// Each spring's block projected to positive semi-definite; Cholesky.
    #[default]
    Projected,
    /// The exact blocks, indefinite under compression; LU.
    Exact,
}

/// When Newton stops.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewtonSettings {
    /// Converged when the largest free force is under this times the mean
    /// spring force scale k̄·r̄.
    pub force_tolerance: f64,
    /// Stop when a step moves no vertex more than this times the mean rest
    /// length (Ma et al.'s ‖Δx‖ < threshold).
    pub step_tolerance: f64,
    /// At most this many Newton steps.
    pub max_iterations: usize,
    /// How the Jacobian is treated.
    pub hessian: Hessian,
}

impl Default for NewtonSettings {
    fn default() -> Self {
        Self {
            force_tolerance: 1e-10,
            step_tolerance: 1e-13,
            max_iterations: 60,
            hessian: Hessian::Projected,
        }
    }
}

/// What one solve did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolveReport {
    /// Newton steps taken.
    pub iterations: usize,
    /// Largest free force at the end (N, in the springs' units).
    pub residual: f64,
    /// The force scale the tolerance is relative to: mean k·r over the springs.
    pub force_scale: f64,
    /// Whether the residual met the tolerance.
    pub converged: bool,
    /// Seconds spent factoring (numeric) and solving.
    pub factor_s: f64,
    /// Seconds spent assembling forces and Jacobians.
    pub assemble_s: f64,
}

/// Why a solve failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SolveError {
    /// Positions or rest lengths not finite on entry.
    #[error("the shape or its rest lengths are not finite")]
    NotFinite,
    /// The Jacobian could not be factored even regularised (no vertex holds
    /// some part of the mesh in place).
    #[error("the spring system is singular: some part of it is held by no boundary condition")]
    Singular,
}

/// A spring system with its Dirichlet vertices and its Jacobian's cached
/// sparsity pattern and symbolic factor.
#[derive(Debug)]
pub struct SpringSystem {
    vertices: usize,
    springs: SpringSet,
    incidence: Vec<Vec<(u32, u32)>>,
    fixed: Vec<bool>,
    pattern: Option<Pattern>,
}

/// The lower triangle of the free block with fixed rows as the identity, its
/// symbolic Cholesky, and where each assembled entry lands in its values.
#[derive(Debug)]
struct Pattern {
    matrix: SparseColMat<u32, f64>,
    symbolic: SymbolicCholesky<u32>,
    /// Per free row in order: the 6 lower diagonal entries, then 9 per
    /// incident free spring whose other end has a lower index.
    slots: Vec<u32>,
}

/// One spring's Hessian block k(d̂d̂ᵀ + t(I − d̂d̂ᵀ)), t = 1 − r/‖d‖,
/// with t clamped at zero when `project`.
fn spring_block(d: DVec3, rest: f64, k: f64, project: bool) -> DMat3 {
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
    /// A system over `vertices` vertices; `fixed[i]` holds vertex i.
    pub fn new(vertices: usize, springs: SpringSet, fixed: Vec<bool>) -> Self {
        assert_eq!(fixed.len(), vertices, "one fixed flag per vertex");
        let incidence = springs.incidence(vertices);
        Self {
            vertices,
            springs,
            incidence,
            fixed,
            pattern: None,
        }
    }

    /// The springs.
    pub fn springs(&self) -> &SpringSet {
        &self.springs
    }

    /// Which vertices are held.
    pub fn fixed(&self) -> &[bool] {
        &self.fixed
    }

    /// Number of vertices.
    pub fn vertices(&self) -> usize {
        self.vertices
    }

    /// E = ½ Σ k (‖d‖ − r)².
    pub fn energy(&self, x: &[DVec3], rest: &[f64], k: &[f64]) -> f64 {
        self.springs
            .ends
            .iter()
            .zip(rest.iter().zip(k))
            .map(|(&[a, b], (&r, &k))| {
                let e = x[a as usize].distance(x[b as usize]) - r;
                0.5 * k * e * e
            })
            .sum()
    }

    /// f = ∇E at every vertex (eq. 2), zero at the fixed ones.
    pub fn forces(&self, x: &[DVec3], rest: &[f64], k: &[f64], f: &mut [DVec3]) {
        f.par_iter_mut().enumerate().for_each(|(i, fi)| {
            *fi = DVec3::ZERO;
            if self.fixed[i] {
                return;
            }
            for &(j, s) in &self.incidence[i] {
                let s = s as usize;
                let d = x[i] - x[j as usize];
                let len = d.length();
                if len > f64::MIN_POSITIVE {
                    *fi += d * (k[s] * (len - rest[s]) / len);
                }
            }
        });
    }

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

    /// Largest free force.
    fn max_force(f: &[DVec3]) -> f64 {
        f.iter().map(|v| v.abs().max_element()).fold(0.0, f64::max)
    }

    fn pattern(&mut self) -> Result<&Pattern, SolveError> {
        if self.pattern.is_none() {
            self.pattern = Some(self.build_pattern()?);
        }
        Ok(self.pattern.as_ref().expect("just built"))
    }

    fn build_pattern(&self) -> Result<Pattern, SolveError> {
        let n = 3 * self.vertices;
        let mut entries = Vec::new();
        for i in 0..self.vertices {
            for r in 0..3 {
                for c in 0..=r {
                    entries.push(Triplet::new((3 * i + r) as u32, (3 * i + c) as u32, 0.0));
                }
            }
            if self.fixed[i] {
                continue;
            }
            for &(j, _) in &self.incidence[i] {
                let j = j as usize;
                if j < i && !self.fixed[j] {
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
            if self.fixed[i] {
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
                if j < i && !self.fixed[j] {
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
    fn blocks(&self, x: &[DVec3], rest: &[f64], k: &[f64], project: bool) -> Vec<DMat3> {
        self.springs
            .ends
            .par_iter()
            .enumerate()
            .map(|(s, &[a, b])| spring_block(x[a as usize] - x[b as usize], rest[s], k[s], project))
            .collect()
    }

    /// Writes ∇²E (+ μ on the free diagonal) into the pattern's values.
    fn assemble(&mut self, blocks: &[DMat3], mu: f64) -> Result<(), SolveError> {
        self.pattern()?;
        let pattern = self.pattern.as_mut().expect("built");
        let values = pattern.matrix.val_mut();
        let mut slot = pattern.slots.iter();
        for i in 0..self.vertices {
            if self.fixed[i] {
                continue;
            }
            let mut diag = DMat3::from_diagonal(DVec3::splat(mu));
            for &(_, s) in &self.incidence[i] {
                diag += blocks[s as usize];
            }
            for r in 0..3 {
                for c in 0..=r {
                    values[*slot.next().expect("slot") as usize] = diag.col(c)[r];
                }
            }
            for &(j, s) in &self.incidence[i] {
                let j = j as usize;
                if j < i && !self.fixed[j] {
                    let b = blocks[s as usize];
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

    /// Solves (∇²E + μ) Δ = −f with the projected Hessian, in place on `rhs`
    /// (flat, 3 per vertex). False if the factor failed.
    fn cholesky_step(&mut self, rhs: &mut [f64]) -> Result<bool, SolveError> {
        let pattern = self.pattern.as_ref().ok_or(SolveError::Singular)?;
        let par = Par::Seq;
        let mut values = vec![0.0; pattern.symbolic.len_val()];
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
        let n = rhs.len();
        let mut buffer = MemBuffer::new(pattern.symbolic.solve_in_place_scratch::<f64>(1, par));
        LltRef::new(&pattern.symbolic, &values).solve_in_place_with_conj(
            Conj::No,
            MatMut::from_column_major_slice_mut(rhs, n, 1),
            par,
            MemStack::new(&mut buffer),
        );
        Ok(true)
    }

    /// Solves with the exact (indefinite) Jacobian by sparse LU.
    fn lu_step(&self, blocks: &[DMat3], mu: f64, rhs: &mut [f64]) -> bool {
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

    /// The Newton direction, in place on `rhs` (−f on entry). Projected:
    /// the exact Hessian when it is positive definite (Cholesky succeeds),
    /// for Newton's quadratic convergence near a stable equilibrium, else
    /// each block projected; after an indefinite step the next one goes
    /// straight to the projection, the one after tries exact again. The
    /// diagonal shift μ grows until a factor succeeds. False if none does.
    #[allow(
        clippy::too_many_arguments,
        reason = "one Newton step's state, kept by `solve`"
    )]
    fn direction(
        &mut self,
        x: &[DVec3],
        rest: &[f64],
        k: &[f64],
        hessian: Hessian,
        mu: &mut f64,
        exact: &mut bool,
        rhs: &mut Vec<f64>,
    ) -> Result<bool, SolveError> {
        let mean_k = k.iter().sum::<f64>() / k.len().max(1) as f64;
        if hessian == Hessian::Exact {
            let blocks = self.blocks(x, rest, k, false);
            loop {
                let mut trial = rhs.clone();
                if self.lu_step(&blocks, *mu, &mut trial) {
                    *rhs = trial;
                    return Ok(true);
                }
                *mu *= 100.0;
                if *mu > mean_k {
                    return Ok(false);
                }
            }
        }
        if *exact {
            let blocks = self.blocks(x, rest, k, false);
            self.assemble(&blocks, *mu)?;
            let mut trial = rhs.clone();
            if self.cholesky_step(&mut trial)? {
                *rhs = trial;
                return Ok(true);
            }
            *exact = false;
        } else {
            *exact = true;
        }
        let blocks = self.blocks(x, rest, k, true);
        loop {
            self.assemble(&blocks, *mu)?;
            let mut trial = rhs.clone();
            if self.cholesky_step(&mut trial)? {
                *rhs = trial;
                return Ok(true);
            }
            *mu *= 100.0;
            if *mu > mean_k {
                return Ok(false);
            }
        }
    }

    /// Newton–Raphson from `x` (fixed vertices already in place) to the
    /// equilibrium of springs with rest lengths `rest` and constants `k`.
    /// On error `x` is left as it was; when the iterations run out it holds
    /// the last (lowest-energy) iterate and the report says so.
    pub fn solve(
        &mut self,
        x: &mut [DVec3],
        rest: &[f64],
        k: &[f64],
        settings: &NewtonSettings,
    ) -> Result<SolveReport, SolveError> {
        assert_eq!(x.len(), self.vertices);
        if !x.iter().all(|p| p.is_finite())
            || !rest.iter().chain(k).all(|v| v.is_finite() && *v >= 0.0)
        {
            return Err(SolveError::NotFinite);
        }
        let springs = self.springs.len().max(1) as f64;
        let force_scale = rest.iter().zip(k).map(|(r, k)| r * k).sum::<f64>() / springs;
        let mean_rest = rest.iter().sum::<f64>() / springs;
        let mean_k = k.iter().sum::<f64>() / springs;
        let mut report = SolveReport {
            force_scale,
            ..Default::default()
        };
        let mut f = vec![DVec3::ZERO; self.vertices];
        let mut trial = x.to_vec();
        let mut rhs = vec![0.0; 3 * self.vertices];
        let clock = std::time::Instant::now;
        let t = clock();
        self.forces(x, rest, k, &mut f);
        let mut energy = self.energy(x, rest, k);
        report.assemble_s += t.elapsed().as_secs_f64();
        report.residual = Self::max_force(&f);
        // Flat or straight regions have no transverse stiffness at rest: a
        // whisper of diagonal keeps the projected Jacobian definite.
        let mut mu = 1e-9 * mean_k;
        // Whether to try the exact Hessian first (see `direction`).
        let mut exact = true;
        while report.iterations < settings.max_iterations {
            if report.residual <= settings.force_tolerance * force_scale {
                break;
            }
            report.iterations += 1;
            let t = clock();
            for (c, fi) in rhs.chunks_exact_mut(3).zip(&f) {
                c.copy_from_slice(&(-*fi).to_array());
            }
            report.assemble_s += t.elapsed().as_secs_f64();
            let t = clock();
            let solved =
                self.direction(x, rest, k, settings.hessian, &mut mu, &mut exact, &mut rhs)?;
            report.factor_s += t.elapsed().as_secs_f64();
            if !solved {
                return Err(SolveError::Singular);
            }
            // Backtrack until E decreases (or, at round-off, the force does).
            let step: Vec<DVec3> = rhs
                .chunks_exact(3)
                .map(|c| DVec3::new(c[0], c[1], c[2]))
                .collect();
            let slope: f64 = step.iter().zip(&f).map(|(s, g)| s.dot(*g)).sum();
            let mut alpha = 1.0;
            let mut accepted = false;
            let mut f_trial = vec![DVec3::ZERO; self.vertices];
            for _ in 0..30 {
                for ((t, &p), &s) in trial.iter_mut().zip(x.iter()).zip(&step) {
                    *t = p + s * alpha;
                }
                let e = self.energy(&trial, rest, k);
                self.forces(&trial, rest, k, &mut f_trial);
                let r = Self::max_force(&f_trial);
                if e.is_finite() && (e <= energy + 1e-4 * alpha * slope || r < report.residual) {
                    energy = e;
                    report.residual = r;
                    accepted = true;
                    break;
                }
                alpha *= 0.5;
            }
            if !accepted {
                break;
            }
            x.copy_from_slice(&trial);
            std::mem::swap(&mut f, &mut f_trial);
            let moved = step
                .iter()
                .map(|s| s.abs().max_element())
                .fold(0.0, f64::max)
                * alpha;
            if moved < settings.step_tolerance * mean_rest {
                break;
            }
        }
        report.converged = report.residual <= settings.force_tolerance * force_scale;
        Ok(report)
    }
}
