//! The lattice simulation (Capell §4.2–4.5): linearized implicit Euler solved
//! with preconditioned conjugate gradients, bone constraints by eliminating
//! known DOFs, linear-subspace position constraints projected inside CG, and
//! blended local linearization over bone regions.
//!
//! ## The step (eq. 15–16), per region i with bone transform T^i(x) = R x + t
//!
//! The region's elastic force is the linear one measured in the bone's frame:
//! with the local displacement `u = T⁻¹(r + q) − r` (eq. 24 and line 2 of the
//! §4.5 pseudocode), `f_e = −R K u`, whose Jacobian is `−R K Rᵀ`. Damping is
//! Rayleigh, `D = α M + β R K Rᵀ` (Capell's `μ q̇` is the α = μ/m special
//! case). Linearizing `M Δv = h f(q + h(v + Δv), v + Δv)` at the start of the
//! step gives
//!
//! `[(1 + hα) M + (hβ + h²) R K Rᵀ] Δv = h [f_g − α M v − R K (u + (β + h) Rᵀ v)]`
//!
//! which is eq. (16) with S = R K Rᵀ; then `v += Δv`, `q += h v` (eq. 15).
//! For R = I, t = 0 it is the global linear model.
//!
//! ## Constraints
//!
//! - **Bones (eq. 17–18).** A vertex bound to a bone has a known target
//!   `q* = T(r) − r`, hence a known `Δv = (q* − q)/h − v`. CG runs on the
//!   unknown rows only (`A₂₂ Δv_u = b_u − A₂₁ Δv_k`): known entries are set
//!   in the start vector and masked out of every residual and search
//!   direction. After the step the bone vertices are set to their targets
//!   exactly.
//! - **Position constraints (§4.4, eq. 19–21).** A point `x_c` held at a
//!   displacement target: `Σ_a φ^a(x_c) Δv_a = a_c`. The columns c of C are
//!   orthonormalised (Gram–Schmidt: the QR of §4.4), Δv starts on the
//!   constraint set, and every residual and preconditioned residual is
//!   projected with `P = I − Σ u uᵀ`, so CG's updates stay in the constraint
//!   null space (Baraff & Witkin's filter). Redundant or conflicting
//!   constraints show up as a vanishing diagonal of R and are dropped.
//!
//! ## Blending (§4.5)
//!
//! Each region solves its own system; `Δv = Σ_i W^i Q^iᵀ Δv^i`. A position
//! constraint is enforced in every region holding its cell, and after
//! blending the blended Δv is corrected by the minimum-norm step back onto
//! the constraint (the weights need not be constant over the constraint's
//! cell, so the blend of solutions that each meet it need not meet it).

pub use super::cg::CgReport;
pub(crate) use super::cg::{
    ConstraintBasis, LocalConstraint, Scratch, SystemCache, dot, mass_mul, projected_pcg,
};
use super::element::{CellElements, HexElement, Material};
use super::lattice::{Embedding, Lattice};
use super::morph::MorphBlend;
use super::regions::{NOT_IN_REGION, Region, Twist, build_regions_with, partition_error};
pub use super::sparse::MassKind;
use super::sparse::{Assembled, assemble_elements};
use glam::{DAffine3, DVec3};
use rayon::prelude::*;
use std::time::Instant;

/// Which linearization of the strain.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Linearization {
    /// One global linear model (distorts under large rotations, Figure 5).
    Global,
    /// Blended local linearization (§4.5), blending width in metres.
    BlendedLocal {
        /// How much farther than the nearest bone a bone may be and still weigh in
        /// (its region weight falls to zero there), m.
        blend_width: f64,
    },
}

/// Settings of the lattice simulation: time step, damping, gravity, mass matrix,
/// linearization, CG and the twist constraint.
#[derive(Clone, Debug)]
pub struct FemSettings {
    /// Time step h, seconds.
    pub time_step: f64,
    /// Mass-proportional damping α, 1/s.
    pub mass_damping: f64,
    /// Stiffness-proportional damping β, s.
    pub stiffness_damping: f64,
    /// Gravity g, m/s².
    pub gravity: DVec3,
    /// Which mass matrix M the dynamics use.
    pub mass: MassKind,
    /// The global linear model or blended local linearization (§4.5).
    pub linearization: Linearization,
    /// CG stops at this relative residual ‖r‖/‖r₀‖.
    pub cg_tolerance: f64,
    /// Most CG iterations per regional solve.
    pub cg_max_iterations: usize,
    /// The twist constraint of §4.6, if any.
    pub twist: Option<Twist>,
}

impl Default for FemSettings {
    fn default() -> Self {
        Self {
            time_step: 1.0 / 90.0,
            mass_damping: 0.5,
            stiffness_damping: 0.002,
            gravity: DVec3::new(0.0, -9.81, 0.0),
            mass: MassKind::Lumped,
            linearization: Linearization::Global,
            cg_tolerance: 1e-6,
            cg_max_iterations: 500,
            twist: None,
        }
    }
}

impl FemSettings {
    /// The coefficients (`c_m`, `c_k`) of the implicit Euler system (eq. 16):
    /// `(1 + hα) M + (hβ + h²) K`.
    pub fn implicit_euler_coefficients(&self) -> (f64, f64) {
        let h = self.time_step;
        (
            1.0 + h * self.mass_damping,
            h * self.stiffness_damping + h * h,
        )
    }
}

/// Lines 6–7 of the §4.5 pseudocode: `v += Δv`, `q += h v`; pinned DOFs
/// (bones, clamps) land exactly on their targets.
pub fn advance_state(
    q: &mut [DVec3],
    v: &mut [DVec3],
    dv: &[DVec3],
    targets: &[Option<DVec3>],
    h: f64,
) {
    for (k, target) in targets.iter().enumerate() {
        match *target {
            Some(t) => {
                v[k] = (t - q[k]) / h;
                q[k] = t;
            }
            None => {
                v[k] += dv[k];
                q[k] += v[k] * h;
            }
        }
    }
}

/// A point of the flesh held at a displacement target (§4.4), e.g. grabbed
/// by a controller.
#[derive(Clone, Copy, Debug)]
pub struct PositionConstraint {
    /// The point's cell and trilinear weights in the rest lattice.
    pub embedding: Embedding,
    /// Target displacement `d_c` of the point (position − rest position).
    pub target: DVec3,
}

/// What [`FemBody::solve_velocity`] is asked.
pub(crate) struct VelocitySolve<'a> {
    /// The known Δv of every vertex (world; None where unknown).
    pub(crate) known: &'a [Option<DVec3>],
    /// Whether the state's loads (gravity, elastic force, damping) and the
    /// position constraints' targets are on the right-hand side; without,
    /// the solve is a response to `known` and `impulses` alone.
    pub(crate) loads: bool,
    /// Impulses (N·s, world) at embedded points.
    pub(crate) impulses: &'a [(Embedding, DVec3)],
    /// The rigid motion mass damping leaves alone (a dynamic core's).
    pub(crate) damping_frame: Option<RigidVelocity>,
    /// Whether to compute the known vertices' reactions (a product more
    /// per region).
    pub(crate) reactions: bool,
}

/// A rigid body's velocity field: `v + ω × (x − c)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RigidVelocity {
    /// The reference point c.
    pub centre: DVec3,
    /// Its velocity.
    pub linear: DVec3,
    /// The angular velocity ω.
    pub angular: DVec3,
}

impl RigidVelocity {
    /// The velocity of the point `x` moving with the body.
    pub fn at(&self, x: DVec3) -> DVec3 {
        self.linear + self.angular.cross(x - self.centre)
    }
}

/// What [`FemBody::solve_velocity`] found.
pub(crate) struct VelocitySolved {
    /// Δv of every vertex (world).
    pub(crate) dv: Vec<DVec3>,
    /// At known vertices, the impulse that holds each at its Δv (zero elsewhere).
    pub(crate) reaction: Vec<DVec3>,
    /// The regional solves.
    pub(crate) report: StepReport,
}

/// What one step did: one CG report per region.
#[derive(Clone, Debug, Default)]
pub struct StepReport {
    /// The CG report of each regional solve.
    pub solves: Vec<CgReport>,
}

impl StepReport {
    /// CG iterations summed over the regional solves.
    pub fn iterations(&self) -> usize {
        self.solves.iter().map(|s| s.iterations).sum()
    }
    /// Whether every regional solve converged.
    pub fn converged(&self) -> bool {
        self.solves.iter().all(|s| s.converged)
    }
}

/// A lattice of flesh driven by a skeleton: precomputed integrals, regions,
/// state (q, q̇) and constraints.
#[derive(Clone, Debug)]
pub struct FemBody {
    /// The lattice: rest vertices, cells and bones.
    pub lattice: Lattice,
    /// Material of each cell (floppy or rigid cells).
    pub materials: Vec<Material>,
    /// The shared element of the full cells (`elements.full`).
    pub element: HexElement,
    /// Every cell's element: cells cut by the object's surface carry their
    /// own integrals (§3.3, `super::quadrature`).
    pub elements: CellElements,
    /// The whole lattice's K, M and gravity weights.
    pub global: Assembled,
    /// The bone regions of blended local linearization, or the one region of the global
    /// linear model.
    pub regions: Vec<Region>,
    /// Time step, damping, gravity, mass matrix, linearization and CG settings.
    pub settings: FemSettings,
    /// Displacements `q_a` of the vertices (eq. 4).
    pub q: Vec<DVec3>,
    /// Velocities `q̇_a`.
    pub v: Vec<DVec3>,
    /// Vertices held at a fixed displacement (clamps), besides bone vertices.
    pub fixed: Vec<Option<DVec3>>,
    /// Points of the flesh held at displacement targets (§4.4).
    pub constraints: Vec<PositionConstraint>,
    /// Wall time of the precompute (integrals, assembly, regions), seconds.
    pub precompute_seconds: f64,
    /// The dynamic morph targets' blend at the current pose (Galoppo ch. 5,
    /// `super::morph`): each region's stiffness factor and rest offsets.
    /// Set by the owner before each step; `None` is the plain flesh.
    pub morph: Option<MorphBlend>,
    scratch: Vec<Scratch>,
}

/// Solves one region's system (eq. 16 in its bone's frame) for the
/// right-hand side, known entries and start vector in `sc`: the morph
/// blend's σ folds into the mass term, `(c_m/σ) M + c_k K` with `b/σ`; the
/// factor is prepared for the known mask; the system stays in `sc`.
fn solve_region(
    region: &Region,
    s: &FemSettings,
    scale: f64,
    sc: &mut Scratch,
    cons: &[LocalConstraint],
    warm: bool,
) -> CgReport {
    let (c_m, c_k) = s.implicit_euler_coefficients();
    if scale != 1.0 {
        sc.b.iter_mut().for_each(|b| *b /= scale);
    }
    let mut system = SystemCache::ensure_near(
        &mut sc.system,
        &region.matrices,
        s.mass,
        c_m / scale,
        c_k,
        MORPH_REFACTOR_SHARE,
    );
    system.prepare_factor(&sc.known);
    let report = projected_pcg(&system, sc, cons, s.cg_tolerance, s.cg_max_iterations, warm);
    sc.system = Some(system);
    report
}

/// How far a region's blended stiffness may move before its factor is
/// refactored (numerically, on the same ordering); in between the old
/// factor preconditions CG. Measured on the penguin's waddle at 4,581
/// DOFs with 6 targets (`bench --only morph`): 0.05 takes 2.4 CG
/// iterations per region and 4.6 ms a step; 0.01, 1.3 and 15.8 ms; 0
/// (refactor whenever the blend moves), 1 and 15.0 ms: a numeric
/// refactorization costs about what 25 iterations do.
pub const MORPH_REFACTOR_SHARE: f64 = 0.05;

impl FemBody {
    /// Precomputes the integrals and regions of a lattice with per-cell
    /// materials.
    pub fn new(lattice: Lattice, materials: Vec<Material>, settings: FemSettings) -> Self {
        let start = Instant::now();
        let elements = super::snap::lattice_elements(&lattice);
        let mut body = Self::with_elements(lattice, materials, elements, settings);
        body.precompute_seconds = start.elapsed().as_secs_f64();
        body
    }

    /// As [`FemBody::new`], with per-cell elements (cells cut by the
    /// object's surface integrated over the object only, §3.3; see
    /// [`super::quadrature::object_elements`]). `precompute_seconds` counts
    /// the assembly and regions, not the building of `elements`.
    pub fn with_elements(
        lattice: Lattice,
        materials: Vec<Material>,
        elements: CellElements,
        settings: FemSettings,
    ) -> Self {
        assert_eq!(
            materials.len(),
            lattice.cell_count(),
            "one material per cell"
        );
        assert_eq!(elements.len(), lattice.cell_count(), "one element per cell");
        let start = Instant::now();
        let element = elements.full.clone();
        let mut global = assemble_elements(
            lattice.vertex_count(),
            &lattice.cells,
            &materials,
            &elements,
        );
        global.grid = Some(lattice.vertex_coords.clone().into());
        let blend = match settings.linearization {
            Linearization::Global => None,
            Linearization::BlendedLocal { blend_width } => Some(blend_width),
        };
        let regions = build_regions_with(&lattice, &materials, &elements, blend, settings.twist);
        let n = lattice.vertex_count();
        let scratch = vec![Scratch::default(); regions.len()];
        Self {
            precompute_seconds: start.elapsed().as_secs_f64(),
            lattice,
            materials,
            element,
            elements,
            global,
            regions,
            settings,
            q: vec![DVec3::ZERO; n],
            v: vec![DVec3::ZERO; n],
            fixed: vec![None; n],
            constraints: Vec::new(),
            morph: None,
            scratch,
        }
    }

    /// Replaces the automatic region weights by `weights` (`[bone][vertex]`,
    /// a partition of unity, e.g. painted, §4.5) and rebuilds the regions.
    pub fn set_region_weights(&mut self, weights: &[Vec<f64>]) {
        self.regions = super::regions::regions_with_weights(
            &self.lattice,
            &self.materials,
            &self.elements,
            weights,
            self.settings.twist,
        );
        self.scratch = vec![Scratch::default(); self.regions.len()];
    }

    /// One material everywhere.
    pub fn uniform(lattice: Lattice, material: Material, settings: FemSettings) -> Self {
        let m = vec![material; lattice.cell_count()];
        Self::new(lattice, m, settings)
    }

    /// Number of lattice vertices.
    pub fn vertex_count(&self) -> usize {
        self.lattice.vertex_count()
    }

    /// Per region, after a step: the sparse factor's stored scalars and the
    /// system matrix's scalar non-zeros (the fill is their ratio), or `None`
    /// where no factor preconditions (declined past its fill budget, or not
    /// built yet) and block-Jacobi CG does.
    pub fn factor_fill(&self) -> Vec<Option<(usize, usize)>> {
        self.scratch
            .iter()
            .map(|sc| {
                let system = sc.system.as_ref()?;
                let (_, factor) = system.factor.as_ref()?;
                Some((factor.as_ref()?.stored(), 9 * system.matrix.blocks.len()))
            })
            .collect()
    }

    /// Deformed vertex positions `r_a` + `q_a`.
    pub fn positions(&self) -> Vec<DVec3> {
        self.lattice
            .rest
            .iter()
            .zip(&self.q)
            .map(|(r, q)| *r + *q)
            .collect()
    }

    /// The known displacement of every constrained vertex for the given bone
    /// transforms: `T(r) − r` for bone vertices (eq. 24), the clamp value for
    /// fixed ones.
    pub fn pin_targets(&self, bones: &[DAffine3]) -> Vec<Option<DVec3>> {
        (0..self.vertex_count())
            .map(|a| match self.lattice.bone_of_vertex[a] {
                Some(b) => {
                    let r = self.lattice.rest[a];
                    Some(bones[b].transform_point3(r) - r)
                }
                None => self.fixed[a],
            })
            .collect()
    }

    /// The frame a region's local solve works in: its bone's placement, or
    /// the identity for a region with no bone.
    pub fn region_transform(&self, region: &Region, bones: &[DAffine3]) -> DAffine3 {
        region.bone.map_or(DAffine3::IDENTITY, |b| bones[b])
    }

    /// Constraints whose whole cell lies in the region, in local numbering,
    /// with `value(embedding, target)` the value of Σφx asked for.
    pub fn local_constraints(
        &self,
        region: &Region,
        value: impl Fn(&PositionConstraint) -> DVec3,
    ) -> Vec<LocalConstraint> {
        self.constraints
            .iter()
            .filter_map(|c| {
                let cell = &self.lattice.cells[c.embedding.cell];
                if cell.iter().any(|&a| region.local_of[a] == NOT_IN_REGION) {
                    return None;
                }
                Some(LocalConstraint {
                    support: (0..8)
                        .map(|k| (region.local_of[cell[k]] as usize, c.embedding.weights[k]))
                        .collect(),
                    value: value(c),
                })
            })
            .collect()
    }

    /// Region `ri`'s morph terms: its stiffness factor `σ_r` and rest offsets
    /// `w_r` per local vertex (1 and none without targets).
    fn morph_terms(&self, ri: usize) -> (f64, Option<&[DVec3]>) {
        match &self.morph {
            Some(m) => (m.scale[ri], Some(&m.offset[ri][..])),
            None => (1.0, None),
        }
    }

    /// Elastic forces `Σ_i W^i (−R_i K^i (T_i⁻¹(r + q) − r))` of the current
    /// state for the bone transforms (global model: `−K q`).
    pub fn elastic_forces(&self, bones: &[DAffine3]) -> Vec<DVec3> {
        let mut f = vec![DVec3::ZERO; self.vertex_count()];
        for (ri, region) in self.regions.iter().enumerate() {
            let t = self.region_transform(region, bones);
            let inv = t.inverse();
            let (scale, offset) = self.morph_terms(ri);
            let u: Vec<DVec3> = region
                .vertices
                .iter()
                .enumerate()
                .map(|(l, &a)| {
                    let r = self.lattice.rest[a];
                    (inv.transform_point3(r + self.q[a]) - r) * scale
                        - offset.map_or(DVec3::ZERO, |w| w[l])
                })
                .collect();
            let mut ku = vec![DVec3::ZERO; region.len()];
            region.matrices.stiffness.mul(&u, &mut ku);
            for (l, &a) in region.vertices.iter().enumerate() {
                f[a] -= t.matrix3 * ku[l] * region.weights[l];
            }
        }
        f
    }

    /// Advances one step of linearized implicit Euler (eq. 15–16) to bone
    /// transforms `bones` (rest → pose at the end of the step, one per
    /// lattice bone).
    pub fn step(&mut self, bones: &[DAffine3]) -> StepReport {
        assert_eq!(
            bones.len(),
            self.lattice.bones.len(),
            "one transform per bone"
        );
        let h = self.settings.time_step;
        let targets = self.pin_targets(bones);
        let known: Vec<Option<DVec3>> = targets
            .iter()
            .zip(self.q.iter().zip(&self.v))
            .map(|(t, (q, v))| t.map(|t| (t - *q) / h - *v))
            .collect();
        let solved = self.solve_velocity(
            bones,
            &VelocitySolve {
                known: &known,
                loads: true,
                impulses: &[],
                damping_frame: None,
                reactions: false,
            },
        );
        advance_state(&mut self.q, &mut self.v, &solved.dv, &targets, h);
        solved.report
    }

    /// One linear solve of the step's system (eq. 16, every region, blended):
    /// the velocity change Δv for the known Δv of `input.known` (bones,
    /// clamps), with the state's loads or without (a response), plus
    /// impulses at points. Also returns the residual impulse at every known
    /// vertex: what holds it to its Δv, which the flesh pushes back on
    /// whatever moves it (a dynamic bone, [`super::dynamic`]). The solve is
    /// linear in the known Δv and the impulses, so responses superpose.
    /// The state is not advanced.
    pub(crate) fn solve_velocity(
        &mut self,
        bones: &[DAffine3],
        input: &VelocitySolve,
    ) -> VelocitySolved {
        let s = self.settings.clone();
        let h = s.time_step;
        let n_all = self.vertex_count();
        let mut dv = vec![DVec3::ZERO; n_all];
        let mut reaction = vec![DVec3::ZERO; n_all];
        let mut report = StepReport::default();
        let mut scratch = std::mem::take(&mut self.scratch);
        let this = &*self;
        let impulse = this.spread(input.impulses);
        // One region's solve; its Δv^i (bone frame) is left in `sc.x`, the
        // unbalanced right-hand side at its known rows in `sc.r` (world).
        let solve = |ri: usize, region: &Region, sc: &mut Scratch| -> CgReport {
            let t = this.region_transform(region, bones);
            // With morph targets: σ_r K in place of K, and its rest shifted
            // by w_r (see `super::morph`).
            let (scale, offset) = this.morph_terms(ri);
            let rot = t.matrix3;
            let inv = t.inverse();
            let n = region.len();
            sc.resize(n);
            let rt = rot.transpose();
            if input.loads {
                // In the bone's frame (Rᵀ applied to eq. 16, see SystemCache):
                // S x̃ = h [Rᵀ f_g − α M ṽ − K (u + (β + h) ṽ)], ṽ = Rᵀ v, Δv = R x̃.
                // A dynamic core's rigid motion is not damped (α on the
                // velocity relative to it).
                for (l, &a) in region.vertices.iter().enumerate() {
                    let r = this.lattice.rest[a];
                    let u = inv.transform_point3(r + this.q[a]) - r;
                    let v_local = rt * this.v[a];
                    sc.tmp[l] = (u + v_local * (s.stiffness_damping + h)) * scale
                        - offset.map_or(DVec3::ZERO, |w| w[l]);
                    sc.z[l] = match &input.damping_frame {
                        Some(f) => rt * (this.v[a] - f.at(r + this.q[a])),
                        None => v_local,
                    };
                }
                region.matrices.stiffness.mul(&sc.tmp, &mut sc.ap);
                mass_mul(&region.matrices, s.mass, &sc.z, &mut sc.r);
                let fg = rt * s.gravity;
                for l in 0..n {
                    sc.b[l] = (fg * region.matrices.gravity_weight[l]
                        - sc.r[l] * s.mass_damping
                        - sc.ap[l])
                        * h;
                }
            }
            if !impulse.is_empty() {
                for (l, &a) in region.vertices.iter().enumerate() {
                    sc.b[l] += rt * impulse[a];
                }
            }
            let mut any_known = false;
            for (l, &a) in region.vertices.iter().enumerate() {
                if let Some(known) = input.known[a] {
                    sc.known[l] = true;
                    sc.x[l] = rt * known;
                    any_known |= known != DVec3::ZERO;
                }
            }
            // A response with nothing pushing this region: Δv^i = 0.
            if !input.loads && !any_known && sc.b.iter().all(|b| *b == DVec3::ZERO) {
                sc.r.iter_mut().for_each(|r| *r = DVec3::ZERO);
                return CgReport {
                    converged: true,
                    ..CgReport::default()
                };
            }
            // Eq. 20: Σφ Δv = (d_c(t+h) − d_c(t))/h − Σφ v, in the bone frame;
            // a response keeps the constraints where they are (value 0).
            let cons = this.local_constraints(region, |c| {
                if !input.loads {
                    return DVec3::ZERO;
                }
                let d = this.lattice.displacement(&c.embedding, &this.q);
                let v = this.lattice.displacement(&c.embedding, &this.v);
                rt * ((c.target - d) / h - v)
            });
            let solved = solve_region(region, &s, scale, sc, &cons, input.loads);
            if input.loads {
                sc.warm.copy_from_slice(&sc.x);
            }
            // The known rows' unbalanced impulse, b − S x, back in the world
            // (σ times the scaled system's).
            if let (true, Some(system)) = (input.reactions, &sc.system) {
                system.matrix.mul(&sc.x, &mut sc.ap);
            }
            for l in 0..n {
                sc.r[l] = if input.reactions && sc.known[l] {
                    rot * (sc.b[l] - sc.ap[l]) * scale
                } else {
                    DVec3::ZERO
                };
            }
            solved
        };
        // The regions are independent systems: solve them on the rayon
        // pool (two bones, two cores), then blend.
        report.solves = if self.regions.len() > 1 {
            self.regions
                .par_iter()
                .zip(scratch.par_iter_mut())
                .enumerate()
                .map(|(ri, (region, sc))| solve(ri, region, sc))
                .collect()
        } else {
            self.regions
                .iter()
                .zip(scratch.iter_mut())
                .enumerate()
                .map(|(ri, (region, sc))| solve(ri, region, sc))
                .collect()
        };
        // Line 5 of the §4.5 pseudocode: Δv ← Σ_i W^i Q^iᵀ Δv^i (and the
        // known rows' impulses alike).
        for (region, sc) in self.regions.iter().zip(&scratch) {
            let rot = self.region_transform(region, bones).matrix3;
            for (l, &a) in region.vertices.iter().enumerate() {
                dv[a] += rot * sc.x[l] * region.weights[l];
                reaction[a] += sc.r[l] * region.weights[l];
            }
        }
        self.scratch = scratch;
        if self.regions.len() > 1 && !self.constraints.is_empty() {
            let values: Vec<DVec3> = self
                .constraints
                .iter()
                .map(|c| match input.loads {
                    true => self.constraint_velocity(c),
                    false => DVec3::ZERO,
                })
                .collect();
            self.correct_blend(&mut dv, input.known, &values);
        }
        VelocitySolved {
            dv,
            reaction,
            report,
        }
    }

    /// Region `ri`'s answer, in its bone's frame, to a unit impulse along
    /// its local axis `axis` at the embedded point `e`, every bone and
    /// clamped vertex held (Δv = 0) and no loads (see
    /// [`region_response`](Self::region_response)). None when the point's
    /// cell is not in the region.
    pub(crate) fn region_impulse_response(
        &mut self,
        ri: usize,
        e: &Embedding,
        axis: usize,
    ) -> Option<(Vec<DVec3>, Vec<DVec3>)> {
        let region = &self.regions[ri];
        let cell = &self.lattice.cells[e.cell];
        if cell.iter().all(|&a| region.local_of[a] == NOT_IN_REGION) {
            return None;
        }
        let mut b = vec![DVec3::ZERO; region.len()];
        for (&a, &w) in cell.iter().zip(&e.weights) {
            let l = region.local_of[a];
            if l != NOT_IN_REGION {
                b[l as usize][axis] += w;
            }
        }
        Some(self.region_response(ri, &b, |_| DVec3::ZERO))
    }

    /// Region `ri`'s answer, in its bone's frame, to the impulses `b` (per
    /// local vertex) with its bone and clamped vertices moved by
    /// `known(l)` (local vertex l) and no loads: its Δv per local vertex,
    /// and the impulse each known vertex needs to hold (before the
    /// region's weights). The regional system is constant in the bone's
    /// frame, so this is too while the blend of morph targets and the
    /// position constraints stay as they are: a caller may keep it across
    /// steps and turn it into the world with the region's current frame.
    pub(crate) fn region_response(
        &mut self,
        ri: usize,
        b: &[DVec3],
        known: impl Fn(usize) -> DVec3,
    ) -> (Vec<DVec3>, Vec<DVec3>) {
        let s = self.settings.clone();
        let mut scratch = std::mem::take(&mut self.scratch);
        let region = &self.regions[ri];
        let sc = &mut scratch[ri];
        let n = region.len();
        sc.resize(n);
        sc.b.copy_from_slice(b);
        for (l, &a) in region.vertices.iter().enumerate() {
            sc.known[l] = self.lattice.bone_of_vertex[a].is_some() || self.fixed[a].is_some();
            if sc.known[l] {
                sc.x[l] = known(l);
            }
        }
        let cons = self.local_constraints(region, |_| DVec3::ZERO);
        let (scale, _) = self.morph_terms(ri);
        solve_region(region, &s, scale, sc, &cons, false);
        if let Some(system) = &sc.system {
            system.matrix.mul(&sc.x, &mut sc.ap);
        }
        let reaction = (0..n)
            .map(|l| match sc.known[l] {
                true => (sc.b[l] - sc.ap[l]) * scale,
                false => DVec3::ZERO,
            })
            .collect();
        let x = sc.x.clone();
        self.scratch = scratch;
        (x, reaction)
    }

    /// Impulses at embedded points spread over their cells' corners
    /// (φ-weighted), per vertex; empty for none.
    fn spread(&self, impulses: &[(Embedding, DVec3)]) -> Vec<DVec3> {
        if impulses.is_empty() {
            return Vec::new();
        }
        let mut out = vec![DVec3::ZERO; self.vertex_count()];
        for (e, j) in impulses {
            for (&a, &w) in self.lattice.cells[e.cell].iter().zip(&e.weights) {
                out[a] += *j * w;
            }
        }
        out
    }

    /// The velocity change a position constraint asks of its point this
    /// step (eq. 20): `(d_c(t + h) − d_c(t))/h − Σφ v`, world.
    fn constraint_velocity(&self, c: &PositionConstraint) -> DVec3 {
        let h = self.settings.time_step;
        let d = self.lattice.displacement(&c.embedding, &self.q);
        let v = self.lattice.displacement(&c.embedding, &self.v);
        (c.target - d) / h - v
    }

    /// After blending: the minimum-norm change of the free entries of `x`
    /// that meets every position constraint `Σφ x = value` exactly.
    pub fn correct_blend(&self, x: &mut [DVec3], targets: &[Option<DVec3>], values: &[DVec3]) {
        if self.constraints.is_empty() {
            return;
        }
        let known: Vec<bool> = targets.iter().map(Option::is_some).collect();
        let cons: Vec<LocalConstraint> = self
            .constraints
            .iter()
            .zip(values)
            .map(|(c, &value)| {
                let cell = &self.lattice.cells[c.embedding.cell];
                LocalConstraint {
                    support: (0..8).map(|k| (cell[k], c.embedding.weights[k])).collect(),
                    value,
                }
            })
            .collect();
        ConstraintBasis::new(x.len(), &known, &cons, x);
    }

    /// Static equilibrium under gravity and `extra_forces` (if any) with the
    /// bones at `bones`: per region `R K (T⁻¹(r + q) − r) = f`, i.e.
    /// `R K Rᵀ q = f − R K (Rᵀ(r − t) − r)`, with pins and position
    /// constraints as in [`step`](Self::step); the regional displacements are
    /// blended. Sets q (and zeroes v). Each region needs enough pinned or
    /// constrained vertices to remove its rigid motions.
    pub fn solve_static(
        &mut self,
        bones: &[DAffine3],
        extra_forces: Option<&[DVec3]>,
    ) -> StepReport {
        assert_eq!(
            bones.len(),
            self.lattice.bones.len(),
            "one transform per bone"
        );
        let s = self.settings.clone();
        let targets = self.pin_targets(bones);
        let mut q = vec![DVec3::ZERO; self.vertex_count()];
        let mut report = StepReport::default();
        let mut scratch = std::mem::take(&mut self.scratch);
        for (ri, region) in self.regions.iter().enumerate() {
            let t = self.region_transform(region, bones);
            let rot = t.matrix3;
            let inv = t.inverse();
            let n = region.len();
            let sc = &mut scratch[ri];
            sc.resize(n);
            // In the bone's frame: K q̃ = Rᵀ f − K (T⁻¹(r) − r), q = R q̃;
            // with morph targets σ_r K q̃ = Rᵀ f − K (σ_r (T⁻¹(r) − r) − w_r).
            let rt = rot.transpose();
            let (scale, offset) = self.morph_terms(ri);
            for (l, &a) in region.vertices.iter().enumerate() {
                let r = self.lattice.rest[a];
                sc.tmp[l] =
                    (inv.transform_point3(r) - r) * scale - offset.map_or(DVec3::ZERO, |w| w[l]);
            }
            region.matrices.stiffness.mul(&sc.tmp, &mut sc.ap);
            for (l, &a) in region.vertices.iter().enumerate() {
                let mut f = s.gravity * region.matrices.gravity_weight[l];
                if let Some(extra) = extra_forces {
                    f += extra[a];
                }
                sc.b[l] = rt * f - sc.ap[l];
                if let Some(target) = targets[a] {
                    sc.known[l] = true;
                    sc.x[l] = rt * target;
                } else {
                    // Start from the current state: repeated solves (a
                    // grabbed point moving) converge in a few iterations.
                    sc.x[l] = rt * self.q[a];
                }
            }
            let cons = self.local_constraints(region, |c| rt * c.target);
            let mut system =
                SystemCache::ensure(&mut sc.system, &region.matrices, s.mass, 0.0, scale);
            system.prepare_factor(&sc.known);
            report.solves.push(projected_pcg(
                &system,
                sc,
                &cons,
                s.cg_tolerance,
                s.cg_max_iterations,
                false,
            ));
            sc.system = Some(system);
            for (l, &a) in region.vertices.iter().enumerate() {
                q[a] += rot * sc.x[l] * region.weights[l];
            }
        }
        self.scratch = scratch;
        if self.regions.len() > 1 {
            let values: Vec<DVec3> = self.constraints.iter().map(|c| c.target).collect();
            self.correct_blend(&mut q, &targets, &values);
        }
        for a in 0..self.vertex_count() {
            if let Some(target) = targets[a] {
                q[a] = target;
            }
        }
        self.q = q;
        self.v.iter_mut().for_each(|v| *v = DVec3::ZERO);
        report
    }

    /// Total energy of the global linear model: kinetic ½ vᵀMv, elastic
    /// ½ qᵀKq (the rest stiffness, without the twist penalty; with morph
    /// targets, of the blended rest shape and stiffness) and
    /// gravitational −Σ `m_a` `g·q_a`. Implicit Euler on this model never
    /// increases it (`tests/it/fem_physics.rs`).
    pub fn energy(&self) -> Energy {
        let n = self.vertex_count();
        let mut mv = vec![DVec3::ZERO; n];
        match self.settings.mass {
            MassKind::Lumped => {
                for a in 0..n {
                    mv[a] = self.v[a] * self.global.lumped_mass[a];
                }
            }
            MassKind::Consistent => {
                self.global
                    .consistent_mass
                    .mul(&self.global.stiffness, &self.v, &mut mv);
            }
        }
        // With morph targets the global model's elastic energy is
        // ½σ(q − w/σ)ᵀK(q − w/σ): its rest shape is shifted and it is σ as stiff.
        let (scale, offset) = match (&self.morph, &self.regions[..]) {
            (Some(m), [region]) if region.bone.is_none() => {
                let mut w = vec![DVec3::ZERO; n];
                for (l, &a) in region.vertices.iter().enumerate() {
                    w[a] = m.offset[0][l];
                }
                (m.scale[0], Some(w))
            }
            _ => (1.0, None),
        };
        let d: Vec<DVec3> = match &offset {
            Some(w) => self.q.iter().zip(w).map(|(q, w)| *q - *w / scale).collect(),
            None => self.q.clone(),
        };
        let mut kq = vec![DVec3::ZERO; n];
        self.global.stiffness.mul(&d, &mut kq);
        let gravity: f64 = (0..n)
            .map(|a| -self.settings.gravity.dot(self.q[a]) * self.global.gravity_weight[a])
            .sum();
        Energy {
            kinetic: 0.5 * dot(&self.v, &mv),
            elastic: 0.5 * scale * dot(&d, &kq),
            gravity,
        }
    }

    /// Largest deviation of the partition of unity over the regions.
    pub fn partition_error(&self) -> f64 {
        partition_error(&self.lattice, &self.regions)
    }
}

/// Energies of the global linear model, joules.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Energy {
    /// Kinetic energy `½ vᵀ M v`, J.
    pub kinetic: f64,
    /// Elastic energy `½ qᵀ K q`, J.
    pub elastic: f64,
    /// Gravitational potential energy relative to rest (`−g·q` weighted by each DOF's
    /// `∫ρφ`), J.
    pub gravity: f64,
}

impl Energy {
    /// Sum of the three energies, J.
    pub fn total(&self) -> f64 {
        self.kinetic + self.elastic + self.gravity
    }
}

/// Lowest eigenpair of `K x = ω² M x` with the fixed and bone vertices held
/// at zero (inverse iteration with CG), for a body at rest configuration:
/// returns ω (rad/s) and the mode. Uses the global linear model.
pub fn lowest_frequency(body: &FemBody, iterations: usize) -> (f64, Vec<DVec3>) {
    let n = body.vertex_count();
    let pinned: Vec<bool> = (0..n)
        .map(|a| body.lattice.bone_of_vertex[a].is_some() || body.fixed[a].is_some())
        .collect();
    let mass = |x: &[DVec3], y: &mut [DVec3]| mass_mul(&body.global, body.settings.mass, x, y);
    let system = SystemCache::new(&body.global, body.settings.mass, 0.0, 1.0);
    // Start from gravity-like sag along y (the bending mode's shape).
    let mut x: Vec<DVec3> = (0..n)
        .map(|a| {
            if pinned[a] {
                DVec3::ZERO
            } else {
                DVec3::new(0.0, 1.0, 0.0)
            }
        })
        .collect();
    let mut sc = Scratch::default();
    let mut omega2 = 0.0;
    for _ in 0..iterations {
        sc.resize(n);
        let mut mx = vec![DVec3::ZERO; n];
        mass(&x, &mut mx);
        sc.b.copy_from_slice(&mx);
        sc.known.copy_from_slice(&pinned);
        projected_pcg(&system, &mut sc, &[], 1e-10, 20_000, false);
        let y = sc.x.clone();
        // Rayleigh quotient yᵀKy / yᵀMy.
        let mut ky = vec![DVec3::ZERO; n];
        system.matrix.mul(&y, &mut ky);
        let mut my = vec![DVec3::ZERO; n];
        mass(&y, &mut my);
        omega2 = dot(&y, &ky) / dot(&y, &my);
        let norm = dot(&y, &my).sqrt();
        x = y.iter().map(|v| *v / norm).collect();
    }
    (omega2.sqrt(), x)
}
