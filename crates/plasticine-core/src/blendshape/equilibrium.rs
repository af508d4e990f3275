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
use faer::sparse::SparseColMat;
use faer::sparse::linalg::cholesky::SymbolicCholesky;
use glam::DVec3;

mod jacobian;
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
    /// Numeric Cholesky factorizations (tried).
    pub factorizations: usize,
    /// Preconditioned CG iterations (steps solved with a kept factor).
    pub cg_iterations: usize,
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

/// Relative residual a preconditioned CG step stops at (an inexact Newton
/// step: each one still cuts the force a thousandfold).
const CG_TOLERANCE: f64 = 1e-3;
/// CG iterations before a step gives up on the kept factor and refactors.
const CG_MAX_ITERATIONS: usize = 12;

/// What `direction` reads and updates across a solve's Newton steps.
struct StepState {
    hessian: Hessian,
    /// The diagonal shift keeping a factor definite.
    mu: f64,
    /// The mean spring constant: the shift's ceiling.
    mean_k: f64,
    /// Whether to try the exact Hessian's factor first.
    exact: bool,
    factorizations: usize,
    cg_iterations: usize,
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

/// A spring system with its Dirichlet vertices and its Jacobian's cached
/// sparsity pattern and symbolic factor.
#[derive(Debug)]
pub struct SpringSystem {
    vertices: usize,
    springs: SpringSet,
    incidence: Vec<Vec<(u32, u32)>>,
    fixed: Vec<bool>,
    /// The held vertices the pattern was built for (identity rows there);
    /// vertices held since are identity rows written into it.
    structural: Vec<bool>,
    pattern: Option<Pattern>,
    /// The last Cholesky factor's values (for the pattern's symbolic
    /// factor): the preconditioner of the next steps' conjugate gradients.
    factor: Option<Vec<f64>>,
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
            structural: fixed.clone(),
            fixed,
            pattern: None,
            factor: None,
        }
    }

    /// Holds another set of vertices. Holding more than the pattern was
    /// built for (contacts) keeps the pattern, its symbolic factor and the
    /// kept numeric factor; releasing one of those it was built for
    /// rebuilds them at the next solve.
    pub fn set_fixed(&mut self, fixed: Vec<bool>) {
        assert_eq!(fixed.len(), self.vertices, "one fixed flag per vertex");
        if fixed
            .iter()
            .zip(&self.structural)
            .any(|(now, built)| *built && !*now)
        {
            self.structural = fixed.clone();
            self.pattern = None;
            self.factor = None;
        }
        self.fixed = fixed;
    }

    /// ∇E at vertex `i`, held or not: at a held vertex, the force its hold
    /// exerts to keep it there (the reaction).
    pub fn reaction(&self, i: usize, x: &[DVec3], rest: &[f64], k: &[f64]) -> DVec3 {
        self.incidence[i]
            .iter()
            .map(|&(j, s)| {
                let s = s as usize;
                let d = x[i] - x[j as usize];
                let len = d.length();
                if len > f64::MIN_POSITIVE {
                    d * (k[s] * (len - rest[s]) / len)
                } else {
                    DVec3::ZERO
                }
            })
            .sum()
    }

    /// The springs.
    pub fn springs(&self) -> &SpringSet {
        &self.springs
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
            *fi = if self.fixed[i] {
                DVec3::ZERO
            } else {
                self.reaction(i, x, rest, k)
            };
        });
    }

    /// Largest free force.
    fn max_force(f: &[DVec3]) -> f64 {
        f.iter().map(|v| v.abs().max_element()).fold(0.0, f64::max)
    }

    /// The Newton direction, in place on `rhs` (−f on entry). Projected:
    /// the exact Hessian when it is positive definite (Cholesky succeeds),
    /// for Newton's quadratic convergence near a stable equilibrium, else
    /// each block projected; after an indefinite step the next one goes
    /// straight to the projection, the one after tries exact again. The
    /// diagonal shift μ grows until a factor succeeds. False if none does.
    fn direction(
        &mut self,
        x: &[DVec3],
        rest: &[f64],
        k: &[f64],
        state: &mut StepState,
        rhs: &mut Vec<f64>,
    ) -> Result<bool, SolveError> {
        let StepState {
            hessian,
            mu,
            mean_k,
            exact,
            factorizations,
            cg_iterations,
        } = state;
        if *hessian == Hessian::Exact {
            let blocks = self.blocks(x, rest, k, false);
            loop {
                let mut trial = rhs.clone();
                if self.lu_step(&blocks, *mu, &mut trial) {
                    *rhs = trial;
                    return Ok(true);
                }
                *mu *= 100.0;
                if *mu > *mean_k {
                    return Ok(false);
                }
            }
        }
        let blocks = self.blocks(x, rest, k, false);
        if let Some((step, iterations)) =
            self.preconditioned_cg(&blocks, *mu, rhs, CG_TOLERANCE, CG_MAX_ITERATIONS)
        {
            *rhs = step;
            *cg_iterations += iterations;
            return Ok(true);
        }
        if *exact {
            self.assemble(&blocks, *mu)?;
            let mut trial = rhs.clone();
            *factorizations += 1;
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
            *factorizations += 1;
            if self.cholesky_step(&mut trial)? {
                *rhs = trial;
                return Ok(true);
            }
            *mu *= 100.0;
            if *mu > *mean_k {
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
        let mut state = StepState {
            hessian: settings.hessian,
            mu: 1e-9 * mean_k,
            mean_k,
            exact: true,
            factorizations: 0,
            cg_iterations: 0,
        };
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
            let solved = self.direction(x, rest, k, &mut state, &mut rhs)?;
            report.factorizations = state.factorizations;
            report.cg_iterations = state.cg_iterations;
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
