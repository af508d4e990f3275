//! The fully nonlinear reference model of Capell §3.2–3.3 (eq. 10–12,
//! appendix A.2): St. Venant–Kirchhoff elasticity with Green's strain, solved
//! by Newton–Raphson, statically or with implicit Euler. The interactive
//! solver ([`super::solver`]) linearizes this model; this one is the
//! reference it is measured against (`tests/it/fem_nonlinear.rs`).
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

mod newton;

pub use newton::{NewtonError, NewtonReport, NewtonSettings};

use super::element::{CellElements, Material};
use super::lattice::Lattice;
use super::regions::bone_weights;
use super::solver::{FemBody, MassKind, PositionConstraint};
use super::sparse::{Assembled, BlockCsr};
use glam::{DAffine3, DMat3, DVec3};

/// The implicit-Euler inertia term of a dynamic step:
/// `½ c_m (q − q_n)ᵀ M (q − q_n) − (q − q_n)ᵀ p`.
struct Inertia {
    c_mass: f64,
    q_start: Vec<DVec3>,
    /// M `v_n` / h.
    momentum: Vec<DVec3>,
}

/// The nonlinear (Green strain, St. Venant–Kirchhoff) model of a lattice.
#[derive(Clone, Debug)]
pub struct NonlinearBody {
    /// The lattice: rest vertices, cells and bones.
    pub lattice: Lattice,
    /// Material of each cell.
    pub materials: Vec<Material>,
    /// Every cell's quadrature points and integrals (cut cells carry their own).
    pub elements: CellElements,
    /// Mass, gravity weights, and the block pattern the tangent fills (the
    /// linear K's: two vertices couple when they share a cell).
    pub matrices: Assembled,
    /// Which mass matrix M the inertia and kinetic energy use.
    pub mass: MassKind,
    /// Gravity g, m/s².
    pub gravity: DVec3,
    /// Time step h of [`step`](Self::step), seconds.
    pub time_step: f64,
    /// Mass-proportional damping α, 1/s (the force −α M v).
    pub mass_damping: f64,
    /// Tolerances of the Newton solves and their inner CG.
    pub newton: NewtonSettings,
    /// Displacements `q_a` and velocities `q̇_a`.
    pub q: Vec<DVec3>,
    /// Velocities `q̇_a`.
    pub v: Vec<DVec3>,
    /// Clamp displacement of each vertex (None: free), besides the bone vertices.
    pub fixed: Vec<Option<DVec3>>,
    /// Points of the flesh held at displacement targets (§4.4), met exactly.
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
            .map(|p| elements.full.gradients_at(p.local))
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

    /// Number of lattice vertices.
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
                let e = &self.elements.partial[k];
                for p in &e.quadrature {
                    f(p.weight, &e.gradients_at(p.local));
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
                    .mul(&self.matrices.stiffness, x, y);
            }
        }
    }

    /// Kinetic ½vᵀMv, elastic V(q) and gravitational −Σ `m_a` `g·q_a` energy.
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

    /// The applied load `f_g` + extra.
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
}

/// `u ⊗ v`: entry (i, j) = `u_i` `v_j`.
#[inline]
fn outer(u: DVec3, v: DVec3) -> DMat3 {
    DMat3::from_cols(u * v.x, u * v.y, u * v.z)
}

fn dot(a: &[DVec3], b: &[DVec3]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x.dot(*y)).sum()
}
