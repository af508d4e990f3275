//! The Newton–Raphson solve of the nonlinear model: the total potential
//! minimized over the free DOFs, each Newton system solved by block-Jacobi
//! CG truncated at negative curvature, a backtracking (Armijo) line search
//! on the potential (module docs of [`super`]).

use super::{Inertia, NonlinearBody, dot};
use crate::fem::solver::{ConstraintBasis, LocalConstraint};
use crate::fem::sparse::BlockCsr;
use glam::{DMat3, DVec3};

/// Tolerances of the Newton solves.
#[derive(Clone, Debug, PartialEq)]
pub struct NewtonSettings {
    /// Converged when ‖residual‖ ≤ this × max(‖applied load‖, ‖first
    /// residual‖) (free rows, constraint-projected).
    pub tolerance: f64,
    /// Most Newton iterations per solve.
    pub max_iterations: usize,
    /// Relative residual of the inner CG solve of each Newton system.
    pub cg_tolerance: f64,
    /// Most CG iterations per Newton system.
    pub cg_max_iterations: usize,
}

impl Default for NewtonSettings {
    fn default() -> Self {
        Self {
            tolerance: 1e-9,
            max_iterations: 60,
            cg_tolerance: 1e-10,
            cg_max_iterations: 20_000,
        }
    }
}

/// What one Newton solve did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewtonReport {
    /// Newton iterations taken (accepted steps).
    pub iterations: usize,
    /// ‖residual‖ before the first iteration and after each one.
    pub residuals: Vec<f64>,
    /// Whether the final residual met the tolerance.
    pub converged: bool,
    /// CG iterations over all Newton systems.
    pub cg_iterations: usize,
    /// Newton systems whose CG met negative curvature (indefinite tangent).
    pub negative_curvature: usize,
    /// Step halvings of the line search, over all iterations.
    pub line_search_cuts: usize,
    /// ‖q_{k+1} − `q_k`‖ of each iteration (near the solution, the error).
    pub steps: Vec<f64>,
}

/// Why a nonlinear solve could not run or finish.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NewtonError {
    /// The bone transforms are not one per lattice bone.
    #[error("expected one transform per lattice bone ({expected}), got {got}")]
    BoneCount {
        /// Bones of the lattice.
        expected: usize,
        /// Transforms given.
        got: usize,
    },
    /// A per-vertex input has the wrong length.
    #[error("{what} has {got} entries, the lattice has {expected} vertices")]
    Length {
        /// Which input (e.g. `fixed`, `extra_forces`).
        what: &'static str,
        /// Vertices of the lattice.
        expected: usize,
        /// Entries the input has.
        got: usize,
    },
    /// The potential became non-finite (time step or load too large).
    #[error("the potential became non-finite (time step or load too large?)")]
    NonFinite,
}

impl NonlinearBody {
    /// Newton–Raphson with a backtracking line search on Φ, from `q` (whose
    /// known rows are overwritten by the targets).
    pub(super) fn newton(
        &self,
        q: &mut [DVec3],
        targets: &[Option<DVec3>],
        extra: Option<&[DVec3]>,
        inertia: Option<&Inertia>,
    ) -> Result<NewtonReport, NewtonError> {
        let n = self.vertex_count();
        if let Some(e) = extra
            && e.len() != n
        {
            return Err(NewtonError::Length {
                what: "extra_forces",
                expected: n,
                got: e.len(),
            });
        }
        let known: Vec<bool> = targets.iter().map(Option::is_some).collect();
        for a in 0..n {
            if let Some(t) = targets[a] {
                q[a] = t;
            }
        }
        // Start on the constraint set; Newton steps then stay on it.
        let cons: Vec<LocalConstraint> = self
            .constraints
            .iter()
            .map(|c| LocalConstraint {
                support: (0..8)
                    .map(|k| {
                        (
                            self.lattice.cells[c.embedding.cell][k],
                            c.embedding.weights[k],
                        )
                    })
                    .collect(),
                value: c.target,
            })
            .collect();
        let (basis, _) = ConstraintBasis::new(n, &known, &cons, q);
        let filter = |v: &mut [DVec3]| {
            for (vi, &k) in v.iter_mut().zip(&known) {
                if k {
                    *vi = DVec3::ZERO;
                }
            }
            basis.project(v);
        };
        let load = self.load(extra);
        let mut load_free = load.clone();
        filter(&mut load_free);
        let mut report = NewtonReport::default();
        let mut r = vec![DVec3::ZERO; n];
        let mut hess = self.zero_pattern();
        let mut phi = self.potential(q, &load, inertia, Some(&mut r), Some(&mut hess));
        filter(&mut r);
        let mut rnorm = dot(&r, &r).sqrt();
        let scale = rnorm.max(dot(&load_free, &load_free).sqrt());
        report.residuals.push(rnorm);
        let tol = self.newton.tolerance * scale;
        let mut trial = vec![DVec3::ZERO; n];
        let mut trial_r = vec![DVec3::ZERO; n];
        while rnorm > tol && report.iterations < self.newton.max_iterations {
            if !phi.is_finite() {
                return Err(NewtonError::NonFinite);
            }
            let cg = truncated_pcg(
                &hess,
                &r,
                &filter,
                self.newton.cg_tolerance,
                self.newton.cg_max_iterations,
            );
            report.cg_iterations += cg.iterations;
            report.negative_curvature += cg.negative_curvature as usize;
            let mut dir = cg.x;
            let mut slope = dot(&r, &dir);
            if slope <= 0.0 {
                // Not a descent direction (should not happen with an SPD
                // preconditioner): fall back on the gradient.
                dir = r.clone();
                slope = dot(&r, &r);
            }
            // Backtracking (Armijo) on Φ. Near the solution Φ's change
            // sinks below its round-off; then a step that shrinks the
            // residual is accepted.
            let mut alpha = 1.0;
            let mut accepted = false;
            for _ in 0..40 {
                for a in 0..n {
                    trial[a] = q[a] + dir[a] * alpha;
                }
                let trial_phi = self.potential(&trial, &load, inertia, None, None);
                let noise = 1e-12 * (phi.abs() + self.elastic_energy(q).abs());
                if trial_phi.is_finite() && trial_phi <= phi - 1e-4 * alpha * slope {
                    accepted = true;
                } else if trial_phi.is_finite() && (trial_phi - phi).abs() <= noise {
                    self.potential(&trial, &load, inertia, Some(&mut trial_r), None);
                    filter(&mut trial_r);
                    accepted = dot(&trial_r, &trial_r).sqrt() < rnorm;
                }
                if accepted {
                    break;
                }
                alpha *= 0.5;
                report.line_search_cuts += 1;
            }
            if !accepted {
                break;
            }
            let step = alpha * dot(&dir, &dir).sqrt();
            report.steps.push(step);
            q.copy_from_slice(&trial);
            hess.blocks.iter_mut().for_each(|b| *b = DMat3::ZERO);
            phi = self.potential(q, &load, inertia, Some(&mut r), Some(&mut hess));
            filter(&mut r);
            rnorm = dot(&r, &r).sqrt();
            report.iterations += 1;
            report.residuals.push(rnorm);
            // Stagnation at round-off: three steps that move q by less than
            // its last digits end the solve (converged or not by `tol`).
            let q_norm = dot(q, q).sqrt().max(self.lattice.cell_size.min_element());
            if report.steps.len() >= 3
                && report.steps[report.steps.len() - 3..]
                    .iter()
                    .all(|&s| s <= 1e-13 * q_norm)
            {
                break;
            }
        }
        if !phi.is_finite() {
            return Err(NewtonError::NonFinite);
        }
        report.converged = rnorm <= tol;
        Ok(report)
    }
}

struct CgResult {
    x: Vec<DVec3>,
    iterations: usize,
    negative_curvature: bool,
}

/// A symmetric positive definite block-Jacobi factor of a diagonal block:
/// its inverse where the block is positive definite (Sylvester), else the
/// identity over the block's largest absolute row sum.
fn jacobi_block(d: DMat3) -> DMat3 {
    let (a, b, c) = (d.x_axis, d.y_axis, d.z_axis);
    let minor2 = a.x * b.y - a.y * b.x;
    if a.x > 0.0 && minor2 > 0.0 && d.determinant() > 0.0 {
        return d.inverse();
    }
    let row = |i: usize| a[i].abs() + b[i].abs() + c[i].abs();
    let s = row(0).max(row(1)).max(row(2));
    if s > 0.0 {
        DMat3::from_diagonal(DVec3::splat(1.0 / s))
    } else {
        DMat3::IDENTITY
    }
}

/// Block-Jacobi preconditioned CG for `H x = r` on the filtered subspace
/// (free rows, constraint null space), from x = 0, stopped at negative
/// curvature (Steihaug): the iterate so far is a descent direction for the
/// potential, or, at the first iteration, the preconditioned residual is.
fn truncated_pcg(
    h: &BlockCsr,
    r0: &[DVec3],
    filter: &impl Fn(&mut [DVec3]),
    tolerance: f64,
    max_iterations: usize,
) -> CgResult {
    let n = r0.len();
    let precond: Vec<DMat3> = (0..n).map(|a| jacobi_block(h.diagonal(a))).collect();
    let mut x = vec![DVec3::ZERO; n];
    let mut r = r0.to_vec();
    let mut z: Vec<DVec3> = (0..n).map(|a| precond[a] * r[a]).collect();
    filter(&mut z);
    let mut p = z.clone();
    let mut hp = vec![DVec3::ZERO; n];
    let mut rz = dot(&r, &z);
    let norm0 = dot(&r, &r).sqrt();
    let mut out = CgResult {
        x: Vec::new(),
        iterations: 0,
        negative_curvature: false,
    };
    if norm0 == 0.0 {
        out.x = x;
        return out;
    }
    while out.iterations < max_iterations {
        h.mul(&p, &mut hp);
        filter(&mut hp);
        let php = dot(&p, &hp);
        if php <= 0.0 {
            out.negative_curvature = true;
            if out.iterations == 0 {
                x.copy_from_slice(&p);
            }
            break;
        }
        let alpha = rz / php;
        for a in 0..n {
            x[a] += p[a] * alpha;
            r[a] -= hp[a] * alpha;
        }
        out.iterations += 1;
        if dot(&r, &r).sqrt() <= tolerance * norm0 {
            break;
        }
        for a in 0..n {
            z[a] = precond[a] * r[a];
        }
        filter(&mut z);
        let rz_new = dot(&r, &z);
        let beta = rz_new / rz;
        rz = rz_new;
        for a in 0..n {
            p[a] = z[a] + p[a] * beta;
        }
    }
    out.x = x;
    out
}
