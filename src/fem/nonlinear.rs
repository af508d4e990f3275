//! The fully nonlinear reference model of Capell §3.2–3.3 (eq. 10–12,
//! appendix A.2): St. Venant–Kirchhoff elasticity with Green's strain, solved
//! by Newton–Raphson, statically or with implicit Euler. The interactive
//! solver ([`super::solver`]) linearizes this model; this one is the
//! reference it is measured against (`tests/fem_nonlinear.rs`).
//!
//! ## Energy
//!
//! With `F = I + ∇d`, `d = q_a φ^a` (eq. 4), Green's strain
//! `E = ½(FᵀF − I)` and `W = μ E:E + ½λ (tr E)²`, the elastic potential is
//! `V = ∫ W dΩ`. Capell's eq. (10) drops the ½ (his e = 2E), and eq. (12)
//! with `G = μ`, `Gν/(1−2ν) = λ/2` reads `V_Capell = ∫ μ e:e + ½λ (tr e)² =
//! 4 V`; the engineering convention kept here (as in [`super::element`])
//! makes the tangent at q = 0 exactly the linear K the interactive solver
//! uses, so Young's modulus means the same thing in both.
//!
//! The first Piola stress is `P = F S`, `S = λ tr E I + 2μ E`, the elastic
//! force on vertex a is `f_a = −∫ P ∇φ^a`, and the tangent (material plus
//! geometric stiffness) is
//!
//! `K_ab = ∫ (∇φ^a·S∇φ^b) I + λ (F∇φ^a)⊗(F∇φ^b) + μ (∇φ^a·∇φ^b) FFᵀ
//!        + μ (F∇φ^b)⊗(F∇φ^a)`,
//!
//! which at F = I, S = 0 is the linear block `λ ∇φ^a⊗∇φ^b + μ(∇φ^a·∇φ^b I +
//! ∇φ^b⊗∇φ^a)`.
//!
//! ## Quadrature
//!
//! The integrals run per cell over the element's quadrature points (2×2×2
//! Gauss for a full cell, sub-cell Gauss points where the object's surface
//! cuts the cell, [`super::quadrature`]), the same points the linear K was
//! integrated on. The cells of the regular lattice are congruent boxes, so
//! the shape gradients ∇φ^a at the full cell's eight Gauss points are
//! computed once and shared; partial cells evaluate theirs on the fly. A.2
//! instead precomputes the polynomial coefficients A, B, C, D of V in q:
//! the same integrals (V is a quartic polynomial in the q of a cell), but
//! C and D are 8³ and 8⁴ tensors per cell, while evaluating F, E, S at eight
//! points needs only the 8 × 8 gradients; and the quadrature form takes
//! per-cell materials and partial cells with no extra tables.
//!
//! ## Solves
//!
//! Newton–Raphson on the total potential (elastic + gravity + applied
//! loads; plus the implicit-Euler inertia term for a dynamic step). Bone and
//! clamp vertices are known DOFs, set exactly as [`FemBody::pin_targets`]
//! does; position constraints (§4.4) hold exactly, by starting on the
//! constraint set and projecting the Newton system (as the linear solver's
//! CG does). The Newton system is solved with block-Jacobi CG, truncated at
//! negative curvature (the SVK tangent is indefinite under compression):
//! the iterate so far, or the preconditioned gradient if there is none, is
//! still a descent direction, and a backtracking (Armijo) line search on the
//! potential makes every iteration decrease it.

use super::element::{CellElements, Material, trilinear_gradients};
use super::lattice::Lattice;
use super::regions::bone_weights;
use super::solver::{ConstraintBasis, FemBody, LocalConstraint, MassKind, PositionConstraint};
use super::sparse::{Assembled, BlockCsr};
use glam::{DAffine3, DMat3, DVec3};

/// Tolerances of the Newton solves.
#[derive(Clone, Debug, PartialEq)]
pub struct NewtonSettings {
    /// Converged when ‖residual‖ ≤ this × max(‖applied load‖, ‖first
    /// residual‖) (free rows, constraint-projected).
    pub tolerance: f64,
    pub max_iterations: usize,
    /// Relative residual of the inner CG solve of each Newton system.
    pub cg_tolerance: f64,
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
    pub iterations: usize,
    /// ‖residual‖ before the first iteration and after each one.
    pub residuals: Vec<f64>,
    pub converged: bool,
    /// CG iterations over all Newton systems.
    pub cg_iterations: usize,
    /// Newton systems whose CG met negative curvature (indefinite tangent).
    pub negative_curvature: usize,
    /// Step halvings of the line search, over all iterations.
    pub line_search_cuts: usize,
    /// ‖q_{k+1} − q_k‖ of each iteration (near the solution, the error).
    pub steps: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NewtonError {
    #[error("expected one transform per lattice bone ({expected}), got {got}")]
    BoneCount { expected: usize, got: usize },
    #[error("{what} has {got} entries, the lattice has {expected} vertices")]
    Length {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    #[error("the potential became non-finite (time step or load too large?)")]
    NonFinite,
}

/// The implicit-Euler inertia term of a dynamic step:
/// `½ c_m (q − q_n)ᵀ M (q − q_n) − (q − q_n)ᵀ p`.
struct Inertia {
    c_mass: f64,
    q_start: Vec<DVec3>,
    /// M v_n / h.
    momentum: Vec<DVec3>,
}

/// The nonlinear (Green strain, St. Venant–Kirchhoff) model of a lattice.
#[derive(Clone, Debug)]
pub struct NonlinearBody {
    pub lattice: Lattice,
    pub materials: Vec<Material>,
    pub elements: CellElements,
    /// Mass, gravity weights, and the block pattern the tangent fills (the
    /// linear K's: two vertices couple when they share a cell).
    pub matrices: Assembled,
    pub mass: MassKind,
    pub gravity: DVec3,
    /// Time step h of [`step`](Self::step), seconds.
    pub time_step: f64,
    /// Mass-proportional damping α, 1/s (the force −α M v).
    pub mass_damping: f64,
    pub newton: NewtonSettings,
    /// Displacements q_a and velocities q̇_a.
    pub q: Vec<DVec3>,
    pub v: Vec<DVec3>,
    pub fixed: Vec<Option<DVec3>>,
    pub constraints: Vec<PositionConstraint>,
    /// ∇φ^a at the full cell's quadrature points, computed once.
    full_gradients: Vec<[DVec3; 8]>,
    /// Per cell, the index in the pattern's blocks of block (a, b), a·8+b.
    block_index: Vec<[u32; 64]>,
}

impl NonlinearBody {
    /// The nonlinear model of a linear body: same lattice, materials,
    /// elements (partial cells included), mass, gravity, clamps, position
    /// constraints and state. Rayleigh's stiffness damping β has no
    /// counterpart here (it needs a fixed K): compare with β = 0.
    pub fn from_fem(body: &FemBody) -> Self {
        let elements = body.elements.clone();
        let full_gradients = elements
            .full
            .quadrature
            .iter()
            .map(|p| trilinear_gradients(p.local, body.lattice.cell_size))
            .collect();
        let pattern = &body.global.stiffness;
        let block_index = body
            .lattice
            .cells
            .iter()
            .map(|cell| {
                std::array::from_fn(|k| {
                    pattern
                        .find(cell[k / 8], cell[k % 8])
                        .expect("pattern holds every cell pair") as u32
                })
            })
            .collect();
        Self {
            lattice: body.lattice.clone(),
            materials: body.materials.clone(),
            elements,
            matrices: body.global.clone(),
            mass: body.settings.mass,
            gravity: body.settings.gravity,
            time_step: body.settings.time_step,
            mass_damping: body.settings.mass_damping,
            newton: NewtonSettings::default(),
            q: body.q.clone(),
            v: body.v.clone(),
            fixed: body.fixed.clone(),
            constraints: body.constraints.clone(),
            full_gradients,
            block_index,
        }
    }

    pub fn vertex_count(&self) -> usize {
        self.lattice.vertex_count()
    }

    /// Visits the quadrature points of cell `c`: weight and shape gradients.
    fn for_points(&self, c: usize, mut f: impl FnMut(f64, &[DVec3; 8])) {
        match self.elements.own[c] {
            None => {
                for (p, g) in self
                    .elements
                    .full
                    .quadrature
                    .iter()
                    .zip(&self.full_gradients)
                {
                    f(p.weight, g);
                }
            }
            Some(k) => {
                for p in &self.elements.partial[k].quadrature {
                    f(
                        p.weight,
                        &trilinear_gradients(p.local, self.lattice.cell_size),
                    );
                }
            }
        }
    }

    /// Elastic energy V(q), and if asked the elastic forces −∂V/∂q (added
    /// into `forces`) and the tangent ∂²V/∂q² (added into `tangent`, on the
    /// pattern of `matrices.stiffness`).
    fn elastic(
        &self,
        q: &[DVec3],
        mut forces: Option<&mut [DVec3]>,
        mut tangent: Option<&mut BlockCsr>,
    ) -> f64 {
        let mut energy = 0.0;
        for (c, cell) in self.lattice.cells.iter().enumerate() {
            let m = &self.materials[c];
            let (lambda, mu) = (m.lambda(), m.mu());
            let qc: [DVec3; 8] = std::array::from_fn(|k| q[cell[k]]);
            self.for_points(c, |w, g| {
                // F_ij = δ_ij + Σ_a q_a,i ∂_jφ^a: column j is Σ_a q_a ∂_jφ^a.
                let mut f = DMat3::IDENTITY;
                for (qa, ga) in qc.iter().zip(g) {
                    f += outer(*qa, *ga);
                }
                let e = (f.transpose() * f - DMat3::IDENTITY) * 0.5;
                let tr = e.x_axis.x + e.y_axis.y + e.z_axis.z;
                let ee = e.x_axis.length_squared()
                    + e.y_axis.length_squared()
                    + e.z_axis.length_squared();
                energy += w * (mu * ee + 0.5 * lambda * tr * tr);
                let s = DMat3::from_diagonal(DVec3::splat(lambda * tr)) + e * (2.0 * mu);
                if let Some(out) = forces.as_deref_mut() {
                    let p = f * s;
                    for (k, ga) in g.iter().enumerate() {
                        out[cell[k]] -= p * *ga * w;
                    }
                }
                if let Some(t) = tangent.as_deref_mut() {
                    let fg: [DVec3; 8] = std::array::from_fn(|k| f * g[k]);
                    let sg: [DVec3; 8] = std::array::from_fn(|k| s * g[k]);
                    let ff = f * f.transpose();
                    let idx = &self.block_index[c];
                    for a in 0..8 {
                        for b in 0..8 {
                            let gab = g[a].dot(g[b]);
                            let block = DMat3::from_diagonal(DVec3::splat(g[a].dot(sg[b])))
                                + outer(fg[a], fg[b]) * lambda
                                + ff * (mu * gab)
                                + outer(fg[b], fg[a]) * mu;
                            t.blocks[idx[a * 8 + b] as usize] += block * w;
                        }
                    }
                }
            });
        }
        energy
    }

    /// The smallest det F over the quadrature points: ≤ 0 where the
    /// deformation inverts the flesh (St. Venant–Kirchhoff does not resist
    /// inversion; a reference with an inverted point is suspect there).
    pub fn min_jacobian(&self, q: &[DVec3]) -> f64 {
        let mut worst = f64::INFINITY;
        for (c, cell) in self.lattice.cells.iter().enumerate() {
            self.for_points(c, |_, g| {
                let mut f = DMat3::IDENTITY;
                for (k, ga) in g.iter().enumerate() {
                    f += outer(q[cell[k]], *ga);
                }
                worst = worst.min(f.determinant());
            });
        }
        worst
    }

    /// The elastic energy V(q), joules.
    pub fn elastic_energy(&self, q: &[DVec3]) -> f64 {
        self.elastic(q, None, None)
    }

    /// The elastic forces −∂V/∂q.
    pub fn elastic_forces(&self, q: &[DVec3]) -> Vec<DVec3> {
        let mut f = vec![DVec3::ZERO; self.vertex_count()];
        self.elastic(q, Some(&mut f), None);
        f
    }

    /// The tangent stiffness ∂²V/∂q² (material + geometric).
    pub fn tangent(&self, q: &[DVec3]) -> BlockCsr {
        let mut t = self.zero_pattern();
        self.elastic(q, None, Some(&mut t));
        t
    }

    fn zero_pattern(&self) -> BlockCsr {
        let p = &self.matrices.stiffness;
        BlockCsr {
            row_ptr: p.row_ptr.clone(),
            col: p.col.clone(),
            blocks: vec![DMat3::ZERO; p.blocks.len()],
        }
    }

    fn mass_mul(&self, x: &[DVec3], y: &mut [DVec3]) {
        match self.mass {
            MassKind::Lumped => {
                for ((yi, xi), m) in y.iter_mut().zip(x).zip(&self.matrices.lumped_mass) {
                    *yi = *xi * *m;
                }
            }
            MassKind::Consistent => {
                self.matrices
                    .consistent_mass
                    .mul(&self.matrices.stiffness, x, y)
            }
        }
    }

    /// Kinetic ½vᵀMv, elastic V(q) and gravitational −Σ m_a g·q_a energy.
    pub fn energy(&self) -> (f64, f64, f64) {
        let mut mv = vec![DVec3::ZERO; self.vertex_count()];
        self.mass_mul(&self.v, &mut mv);
        let kinetic = 0.5 * dot(&self.v, &mv);
        let gravity = -(0..self.vertex_count())
            .map(|a| self.gravity.dot(self.q[a]) * self.matrices.gravity_weight[a])
            .sum::<f64>();
        (kinetic, self.elastic_energy(&self.q), gravity)
    }

    /// Known displacements, exactly as [`FemBody::pin_targets`]: `T(r) − r`
    /// for bone vertices, the clamp value for fixed ones.
    pub fn pin_targets(&self, bones: &[DAffine3]) -> Result<Vec<Option<DVec3>>, NewtonError> {
        if bones.len() != self.lattice.bones.len() {
            return Err(NewtonError::BoneCount {
                expected: self.lattice.bones.len(),
                got: bones.len(),
            });
        }
        if self.fixed.len() != self.vertex_count() {
            return Err(NewtonError::Length {
                what: "fixed",
                expected: self.vertex_count(),
                got: self.fixed.len(),
            });
        }
        Ok((0..self.vertex_count())
            .map(|a| match self.lattice.bone_of_vertex[a] {
                Some(b) => {
                    let r = self.lattice.rest[a];
                    Some(bones[b].transform_point3(r) - r)
                }
                None => self.fixed[a],
            })
            .collect())
    }

    /// Sets q to the linear-blend-skinned placement of the rest lattice
    /// (weights of [`bone_weights`] with blending width `width`): a start
    /// for a static solve after a large bone motion, with no inverted cell.
    pub fn pose_rigidly(&mut self, bones: &[DAffine3], width: f64) -> Result<(), NewtonError> {
        let targets = self.pin_targets(bones)?;
        if bones.is_empty() {
            return Ok(());
        }
        let w = bone_weights(&self.lattice, width);
        for a in 0..self.vertex_count() {
            let r = self.lattice.rest[a];
            let skinned: DVec3 = (0..bones.len())
                .map(|i| bones[i].transform_point3(r) * w[i][a])
                .sum();
            self.q[a] = targets[a].unwrap_or(skinned - r);
        }
        Ok(())
    }

    /// Static equilibrium `f_elastic(q) + f_gravity + extra = 0` with the
    /// bones at `bones`, by Newton–Raphson from the current q. Sets q (and
    /// zeroes v).
    pub fn solve_static(
        &mut self,
        bones: &[DAffine3],
        extra_forces: Option<&[DVec3]>,
    ) -> Result<NewtonReport, NewtonError> {
        let targets = self.pin_targets(bones)?;
        let mut q = self.q.clone();
        let report = self.newton(&mut q, &targets, extra_forces, None)?;
        self.q = q;
        self.v.iter_mut().for_each(|v| *v = DVec3::ZERO);
        Ok(report)
    }

    /// One step of implicit Euler with the nonlinear forces, solved exactly
    /// by Newton: `M (v' − v)/h = f_e(q') + f_g − α M v'`, `q' = q + h v'`,
    /// the bones at `bones` at the end of the step. It minimizes
    /// `½ (1 + hα)/h² ‖q' − q‖²_M − (q' − q)ᵀ M v / h + V(q') − f_gᵀ q'`.
    pub fn step(&mut self, bones: &[DAffine3]) -> Result<NewtonReport, NewtonError> {
        let targets = self.pin_targets(bones)?;
        let h = self.time_step;
        let n = self.vertex_count();
        let mut momentum = vec![DVec3::ZERO; n];
        self.mass_mul(&self.v, &mut momentum);
        momentum.iter_mut().for_each(|p| *p /= h);
        let inertia = Inertia {
            c_mass: (1.0 + h * self.mass_damping) / (h * h),
            q_start: self.q.clone(),
            momentum,
        };
        // Predictor: drift with the current velocity.
        let mut q: Vec<DVec3> = (0..n).map(|a| self.q[a] + self.v[a] * h).collect();
        let report = self.newton(&mut q, &targets, None, Some(&inertia))?;
        for a in 0..n {
            self.v[a] = (q[a] - self.q[a]) / h;
        }
        self.q = q;
        Ok(report)
    }

    /// The applied load f_g + extra.
    fn load(&self, extra: Option<&[DVec3]>) -> Vec<DVec3> {
        (0..self.vertex_count())
            .map(|a| {
                self.gravity * self.matrices.gravity_weight[a] + extra.map_or(DVec3::ZERO, |e| e[a])
            })
            .collect()
    }

    /// The potential Φ(q) and, if asked, its negative gradient (the
    /// residual) and Hessian.
    fn potential(
        &self,
        q: &[DVec3],
        load: &[DVec3],
        inertia: Option<&Inertia>,
        residual: Option<&mut [DVec3]>,
        hessian: Option<&mut BlockCsr>,
    ) -> f64 {
        let n = q.len();
        let mut phi = -dot(load, q);
        let want_r = residual.is_some();
        let mut dummy = Vec::new();
        let r = match residual {
            Some(r) => {
                r.copy_from_slice(load);
                r
            }
            None => &mut dummy[..],
        };
        let mut hess = hessian;
        phi += self.elastic(q, want_r.then_some(&mut *r), hess.as_deref_mut());
        if let Some(i) = inertia {
            let dq: Vec<DVec3> = (0..n).map(|a| q[a] - i.q_start[a]).collect();
            let mut mdq = vec![DVec3::ZERO; n];
            self.mass_mul(&dq, &mut mdq);
            phi += 0.5 * i.c_mass * dot(&dq, &mdq) - dot(&dq, &i.momentum);
            if want_r {
                for a in 0..n {
                    r[a] -= mdq[a] * i.c_mass - i.momentum[a];
                }
            }
            if let Some(hm) = hess {
                for row in 0..hm.rows() {
                    for k in hm.row_ptr[row]..hm.row_ptr[row + 1] {
                        let col = hm.col[k] as usize;
                        let m = match self.mass {
                            MassKind::Lumped if col == row => self.matrices.lumped_mass[row],
                            MassKind::Lumped => 0.0,
                            MassKind::Consistent => self.matrices.consistent_mass.values[k],
                        };
                        hm.blocks[k] += DMat3::from_diagonal(DVec3::splat(i.c_mass * m));
                    }
                }
            }
        }
        phi
    }

    /// Newton–Raphson with a backtracking line search on Φ, from `q` (whose
    /// known rows are overwritten by the targets).
    fn newton(
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
                support: std::array::from_fn(|k| {
                    (
                        self.lattice.cells[c.embedding.cell][k],
                        c.embedding.weights[k],
                    )
                }),
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

/// `u ⊗ v`: entry (i, j) = u_i v_j.
#[inline]
fn outer(u: DVec3, v: DVec3) -> DMat3 {
    DMat3::from_cols(u * v.x, u * v.y, u * v.z)
}

fn dot(a: &[DVec3], b: &[DVec3]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x.dot(*y)).sum()
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
