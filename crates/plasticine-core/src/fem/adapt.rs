//! The adaptive body (Capell §4.7): the lattice simulation on the active
//! functions of the hierarchical basis ([`super::hierarchy`]), with detail
//! introduced where the flesh is distorted and removed where it relaxes.
//!
//! ## The simulation
//!
//! The DOFs are the coefficients `q_α` of the active functions; the fine
//! displacement on `K_J` is `P q`. The active system is the Galerkin
//! restriction of `K_J`'s: `K_h = Pᵀ K_J P`, `M_h = Pᵀ diag(m_J) P` (the
//! kinetic energy of the fine field under `K_J`'s lumped mass, so not diagonal
//! in this basis; [`FemSettings::mass`] is not used), gravity `Pᵀ (∫ρφ) g`.
//! The global linear model, or blended local linearization over bone
//! regions (`blend.rs`, §4.5), each with the twist constraint (§4.6) when
//! the settings ask for it: the penalty `k ∫_{Ω_β} φ^a φ^b` is added to `K_J`'s
//! stiffness (the whole of it for the global model, each region's own for
//! its bone), and so reaches every level through P.
//! A step is the global linear model of [`super::solver`] (eq. 15–16) on
//! that system, solved with the same projected block-Jacobi CG; the pinned
//! coarse vertices (bone-bound, clamped) are the known DOFs (eq. 17–18). The
//! details vanish on the skeleton, so they never disturb a bone. Position
//! constraints (§4.4, a grabbed point) are projected inside CG as in
//! [`super::solver`], their rows built from P (`constraints.rs`).
//!
//! The `K_J` cells carry their own elements ([`AdaptiveBody::with_elements`]):
//! isoparametric where the lattice is conformed, and, for a lattice
//! integrated only where the object is, Gauss points on the coarse cells'
//! kept sub-cells, split among the `K_J` cells
//! ([`super::quadrature::hierarchy_object_elements`]), so `K_J` holds the
//! coarse lattice's volume, mass and gravity load to round-off. A `K_J` cell
//! with no flesh has no distortion (its field is not determined).
//!
//! ## Adaptation
//!
//! The distortion of a `K_J` cell is `‖S − I‖_F` at its centre, with
//! `F = I + ∇(P q)` and `S = Rᵀ F` its symmetric polar factor: the strain
//! with the best-fit rotation removed, so a limb carried by its bone is not
//! "distorted". A cell of level j (a cell of `K_j`) takes the largest
//! distortion of the `K_J` cells inside it.
//!
//! - **Refine.** Where an active level-j function covers a level-j cell
//!   whose distortion exceeds `refine_threshold[j]`, every admissible
//!   level-(j+1) detail in that cell is introduced, with coefficient zero
//!   (q and q̇): the field, and so the energy, are unchanged.
//! - **Coarsen.** A level-(j+1) detail is removed when every level-j cell
//!   around it is below `coarsen_threshold[j]`, finest level first, and
//!   then any detail left without an active function of the level above
//!   around it. The state is then projected onto the smaller basis: q by
//!   the energy (Ritz) projection `K_h q' = P'ᵀ K_J (P q)`, q̇ by the mass
//!   projection `M_h q̇' = P'ᵀ diag(m_J) (P q̇)`, the pinned coarse DOFs
//!   kept. Merely dropping the details' coefficients would leave the coarse
//!   interpolant of the field, whose strain in cut cells (coarse vertices
//!   barely held by flesh, their place corrected by detail) can be far
//!   larger: measured on the penguin, a release let coarsening raise the
//!   energy a thousandfold and the flesh blew up. The projections are the
//!   closest fields of the new basis in the energy and kinetic norms, so
//!   neither energy grows.
//!
//! A detail is added and removed on the same measure (the level-j cells
//! around it) with `coarsen < refine`: a distortion between the two
//! thresholds changes nothing, which keeps the level from oscillating
//! (Capell, after Debunne et al. 2001).

mod blend;
mod constraints;
mod error;
mod redundant;
mod refine;
mod region;

pub use error::AdaptError;
use redundant::{hosts_of, redundant_functions};

use super::element::{CellElements, Material};
use super::hierarchy::{Hierarchy, Prolongation, galerkin};
use super::lattice::Lattice;
use super::quadrature::QuadratureError;
use super::regions::{add_twist, bone_weights};
use super::snap::lattice_elements;
use super::solver::{
    CgReport, Energy, FemSettings, Linearization, MassKind, PositionConstraint, Scratch,
    SystemCache, advance_state, dot, mass_mul, projected_pcg,
};
use super::sparse::{Assembled, assemble_elements};
use glam::{DAffine3, DVec3};

const NONE: u32 = u32::MAX;

/// The adaptation thresholds of §4.7, one pair per level below the finest.
#[derive(Clone, Debug, PartialEq)]
pub struct AdaptSettings {
    /// J, the number of subdivisions of the control lattice.
    pub levels: u32,
    /// `refine_threshold[j]`: a level-j cell more distorted than this gets
    /// the level-(j+1) details. One per level 0..J.
    pub refine_threshold: Vec<f64>,
    /// `coarsen_threshold[j]`: level-(j+1) details go when the cells around
    /// them are all below this. Below the refine threshold (hysteresis).
    pub coarsen_threshold: Vec<f64>,
}

impl AdaptSettings {
    /// Checks that each level has one refine and one coarsen threshold, with
    /// `0 ≤ coarsen < refine`, all finite; the error is a sentence.
    pub fn validate(&self) -> Result<(), AdaptError> {
        let j = self.levels as usize;
        if self.refine_threshold.len() != j || self.coarsen_threshold.len() != j {
            return Err(AdaptError::Thresholds {
                levels: self.levels,
                refine: self.refine_threshold.len(),
                coarsen: self.coarsen_threshold.len(),
            });
        }
        for (l, (&r, &c)) in self
            .refine_threshold
            .iter()
            .zip(&self.coarsen_threshold)
            .enumerate()
        {
            if !(c.is_finite() && r.is_finite() && c >= 0.0 && c < r) {
                return Err(AdaptError::ThresholdOrder {
                    level: l,
                    coarsen: c,
                    refine: r,
                });
            }
        }
        Ok(())
    }
}

/// What an adaptation changed: functions added and removed, indexed by level
/// (entry 0, the coarse level, is always zero).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdaptReport {
    /// Functions introduced (details activated), per level.
    pub added: Vec<usize>,
    /// Functions removed (details deactivated), per level.
    pub removed: Vec<usize>,
}

impl AdaptReport {
    /// Whether any function was added or removed.
    pub fn changed(&self) -> bool {
        self.added.iter().chain(&self.removed).any(|&n| n > 0)
    }
}

/// A lattice of flesh simulated in the hierarchical basis.
#[derive(Clone, Debug)]
pub struct AdaptiveBody {
    /// The hierarchical basis: the control lattice K, the integration lattice `K_J` and
    /// the level and admissibility of each `K_J` vertex.
    pub hierarchy: Hierarchy,
    /// The material of each `K_J` cell (its coarse cell's).
    pub fine_materials: Vec<Material>,
    /// `K_J`'s stiffness, mass and gravity weights.
    pub fine_matrices: Assembled,
    /// The element of each `K_J` cell.
    pub fine_elements: CellElements,
    /// Per DOF: a function redundant on the flesh ([`redundant_functions`]),
    /// held where it is.
    redundant: Vec<bool>,
    /// The step's settings (time step, damping, gravity, linearization, CG); their `mass`
    /// is not used (the mass is the Galerkin restriction of `K_J`'s lumped mass).
    pub settings: FemSettings,
    /// The refine and coarsen thresholds per level (§4.7).
    pub adapt: AdaptSettings,
    /// Clamped coarse vertices (besides the bone vertices), fixed at
    /// construction: they shape the basis.
    pub fixed: Vec<Option<DVec3>>,
    /// Points of the flesh held at displacement targets (§4.4), embedded in
    /// `K_J` ([`grab`](Self::grab)).
    pub constraints: Vec<PositionConstraint>,
    /// Coefficients `q_α` of the active functions (eq. 4).
    pub q: Vec<DVec3>,
    /// Velocities `q̇_α`.
    pub v: Vec<DVec3>,
    /// The `K_J` vertex of each active function: the coarse vertices first, in
    /// K's order (so `q[..K.vertex_count()]` are the coarse vertices'), then
    /// the details in `K_J` order.
    active: Vec<usize>,
    /// The DOF of each `K_J` vertex's function, or NONE when inactive.
    dof_of: Vec<u32>,
    prolongation: Prolongation,
    system: Assembled,
    scratch: Scratch,
    /// The bone regions of blended local linearization (empty: the global
    /// linear model).
    regions: Vec<region::AdaptRegion>,
}

impl AdaptiveBody {
    /// The body on `coarse` with one material per coarse cell and the clamps
    /// `fixed` (one per coarse vertex), starting with the coarse level only.
    /// Every cell is integrated whole (isoparametrically where conformed).
    pub fn new(
        coarse: Lattice,
        materials: Vec<Material>,
        fixed: Vec<Option<DVec3>>,
        settings: FemSettings,
        adapt: AdaptSettings,
    ) -> Result<Self, AdaptError> {
        Self::with_elements(coarse, materials, fixed, settings, adapt, |h| {
            Ok(lattice_elements(&h.fine))
        })
    }

    /// As [`new`](Self::new), with the `K_J` cells' elements made by
    /// `elements` from the hierarchy (e.g. integrated only where the object
    /// is, [`super::quadrature::hierarchy_object_elements`]). A detail whose
    /// support holds no integrated volume is left out of the basis (it would
    /// carry neither mass nor stiffness).
    pub fn with_elements(
        coarse: Lattice,
        materials: Vec<Material>,
        fixed: Vec<Option<DVec3>>,
        settings: FemSettings,
        adapt: AdaptSettings,
        elements: impl FnOnce(&Hierarchy) -> Result<CellElements, QuadratureError>,
    ) -> Result<Self, AdaptError> {
        adapt.validate()?;
        if materials.len() != coarse.cell_count() {
            return Err(AdaptError::Materials {
                materials: materials.len(),
                cells: coarse.cell_count(),
            });
        }
        for m in &materials {
            m.validate()?;
        }
        if fixed.len() != coarse.vertex_count() {
            return Err(AdaptError::Clamps {
                clamps: fixed.len(),
                vertices: coarse.vertex_count(),
            });
        }
        if !(settings.time_step.is_finite() && settings.time_step > 0.0) {
            return Err(AdaptError::TimeStep(settings.time_step));
        }
        if let Linearization::BlendedLocal { blend_width } = settings.linearization
            && !(blend_width.is_finite() && blend_width > 0.0)
        {
            return Err(AdaptError::BlendWidth(blend_width));
        }
        let pinned: Vec<bool> = fixed.iter().map(Option::is_some).collect();
        let mut hierarchy = Hierarchy::new(coarse, adapt.levels, &pinned)?;
        let fine_elements = elements(&hierarchy)?;
        if fine_elements.len() != hierarchy.fine.cell_count() {
            return Err(AdaptError::Elements {
                elements: fine_elements.len(),
                cells: hierarchy.fine.cell_count(),
            });
        }
        let volumes: Vec<f64> = (0..fine_elements.len())
            .map(|c| fine_elements.get(c).volume())
            .collect();
        hierarchy.exclude_empty_details(&volumes);
        let f = 1usize << adapt.levels;
        let fine_materials: Vec<Material> = hierarchy
            .fine
            .cell_coords
            .iter()
            .map(|c| {
                let coarse_cell = hierarchy.coarse.cell_at(c.map(|x| x / f));
                materials[coarse_cell.expect("a fine cell lies in an active coarse cell")]
            })
            .collect();
        let mut fine_matrices = assemble_elements(
            hierarchy.fine.vertex_count(),
            &hierarchy.fine.cells,
            &fine_materials,
            &fine_elements,
        );
        if let (Some(twist), Linearization::Global) = (settings.twist, settings.linearization) {
            let fine = &hierarchy.fine;
            let cells: Vec<usize> = (0..fine.cell_count()).collect();
            let bones: Vec<usize> = (0..fine.bones.len()).collect();
            add_twist(fine, &cells, &fine.cells, &bones, twist, &mut fine_matrices);
        }
        let mut body = Self {
            fine_materials,
            fine_matrices,
            fine_elements,
            settings,
            adapt,
            fixed,
            constraints: Vec::new(),
            q: Vec::new(),
            v: Vec::new(),
            active: Vec::new(),
            dof_of: vec![NONE; hierarchy.fine.vertex_count()],
            prolongation: Prolongation::default(),
            redundant: Vec::new(),
            system: Assembled::default(),
            scratch: Scratch::default(),
            regions: Vec::new(),
            hierarchy,
        };
        if let Linearization::BlendedLocal { blend_width } = body.settings.linearization {
            let weights = bone_weights(&body.hierarchy.coarse, blend_width);
            body.regions = body.build_regions(&weights);
        }
        body.rebuild(&vec![false; body.dof_of.len()]);
        Ok(body)
    }

    /// One material everywhere.
    pub fn uniform(
        coarse: Lattice,
        material: Material,
        fixed: Vec<Option<DVec3>>,
        settings: FemSettings,
        adapt: AdaptSettings,
    ) -> Result<Self, AdaptError> {
        let m = vec![material; coarse.cell_count()];
        Self::new(coarse, m, fixed, settings, adapt)
    }

    /// Number of DOFs (active functions; three scalars each).
    pub fn dof_count(&self) -> usize {
        self.active.len()
    }

    /// The `K_J` vertex hosting each active function, in DOF order.
    pub fn active_functions(&self) -> &[usize] {
        &self.active
    }

    /// Active functions per level, 0..=J.
    pub fn active_per_level(&self) -> Vec<usize> {
        let mut n = vec![0; self.adapt.levels as usize + 1];
        for &a in &self.active {
            n[self.hierarchy.level_of[a] as usize] += 1;
        }
        n
    }

    /// The displacement at every `K_J` vertex, `P q`.
    pub fn field(&self) -> Vec<DVec3> {
        self.prolongation.apply(&self.q)
    }

    /// The velocity at every `K_J` vertex, `P q̇`.
    pub fn field_velocity(&self) -> Vec<DVec3> {
        self.prolongation.apply(&self.v)
    }

    /// The active system (stiffness, mass, gravity weights).
    pub fn system(&self) -> &Assembled {
        &self.system
    }

    /// Activates exactly the admissible details where `keep(K_J vertex)`
    /// holds (the coarse level always stays), preserving the field's
    /// coefficients of functions that stay. For tests and tools: the
    /// detail set is taken as given, not made consistent.
    pub fn set_details(&mut self, keep: impl Fn(usize) -> bool) -> AdaptReport {
        let on: Vec<bool> = (0..self.dof_of.len())
            .map(|a| self.hierarchy.level_of[a] > 0 && self.hierarchy.admissible[a] && keep(a))
            .collect();
        self.rebuild(&on)
    }

    /// Every admissible detail active: the basis spans `V_J` (less S).
    pub fn refine_all(&mut self) -> AdaptReport {
        self.set_details(|_| true)
    }

    /// Back to the coarse level only.
    pub fn coarsen_all(&mut self) -> AdaptReport {
        self.set_details(|_| false)
    }

    /// Takes over the state of `old` when it ran on the same coarse lattice
    /// and levels (the hierarchy is then the same): its active details
    /// (those still admissible here), their q and q̇, and its position
    /// constraints. Returns whether it did.
    pub fn take_state(&mut self, old: &AdaptiveBody) -> bool {
        if self.adapt.levels != old.adapt.levels
            || !self.hierarchy.coarse.same_shape(&old.hierarchy.coarse)
        {
            return false;
        }
        self.set_details(|x| old.dof_of[x] != NONE);
        for (k, &x) in self.active.iter().enumerate() {
            if let Some(&old_k) = old.dof_of.get(x).filter(|&&d| d != NONE) {
                self.q[k] = old.q[old_k as usize];
                self.v[k] = old.v[old_k as usize];
            }
        }
        self.constraints.clone_from(&old.constraints);
        true
    }

    /// Switches to the detail set `on` (per `K_J` vertex; level 0 implied):
    /// kept functions keep q and q̇, new ones start at zero, removed ones
    /// are dropped. Rebuilds P and the active system.
    fn rebuild(&mut self, on: &[bool]) -> AdaptReport {
        // The old field, for projecting the state when detail goes (only
        // then: adding detail keeps every coefficient).
        let removing = self
            .active
            .iter()
            .any(|&a| !on[a] && self.hierarchy.level_of[a] > 0);
        let before = removing.then(|| (self.field(), self.field_velocity()));
        let h = &self.hierarchy;
        let levels = self.adapt.levels as usize;
        let mut report = AdaptReport {
            added: vec![0; levels + 1],
            removed: vec![0; levels + 1],
        };
        let mut active = h.fine_of_coarse.clone();
        active.extend((0..on.len()).filter(|&a| on[a] && h.level_of[a] > 0));
        let (mut q, mut v) = (Vec::with_capacity(active.len()), Vec::new());
        let mut dof_of = vec![NONE; on.len()];
        for (k, &a) in active.iter().enumerate() {
            dof_of[a] = k as u32;
            match self.dof_of[a] {
                NONE => {
                    q.push(DVec3::ZERO);
                    v.push(DVec3::ZERO);
                    if h.level_of[a] > 0 {
                        report.added[h.level_of[a] as usize] += 1;
                    }
                }
                old => {
                    q.push(self.q[old as usize]);
                    v.push(self.v[old as usize]);
                }
            }
        }
        for &a in &self.active {
            if dof_of[a] == NONE {
                report.removed[h.level_of[a] as usize] += 1;
            }
        }
        self.prolongation = h.prolongation(&active);
        self.system = galerkin(&self.fine_matrices, &self.prolongation);
        self.redundant = redundant_functions(
            active
                .iter()
                .zip(&self.prolongation.cols)
                .map(|(&a, col)| (a, col.as_slice())),
            &hosts_of(&active, self.dof_of.len()),
            &self.fine_matrices.lumped_mass,
        );
        self.active = active;
        self.dof_of = dof_of;
        self.q = q;
        self.v = v;
        self.scratch = Scratch::default();
        self.rebuild_regions();
        if let Some((field, velocity)) = before {
            self.project_state(&field, &velocity);
        }
        report
    }

    /// The known displacement of each DOF for the bone transforms: `T(r) − r`
    /// for bone-bound coarse vertices (eq. 24), the clamp value for clamped
    /// ones, None for the rest (every detail).
    pub fn pin_targets(&self, bones: &[DAffine3]) -> Result<Vec<Option<DVec3>>, AdaptError> {
        let coarse = &self.hierarchy.coarse;
        if bones.len() != coarse.bones.len() {
            return Err(AdaptError::BoneTransforms {
                transforms: bones.len(),
                bones: coarse.bones.len(),
            });
        }
        Ok((0..self.dof_count())
            .map(|k| {
                let a = self.hierarchy.coarse_vertex[self.active[k]]?;
                match coarse.bone_of_vertex[a] {
                    Some(b) => {
                        let r = coarse.rest[a];
                        Some(bones[b].transform_point3(r) - r)
                    }
                    None => self.fixed[a],
                }
            })
            .collect())
    }

    /// [`pin_targets`](Self::pin_targets) for a dynamics step: functions
    /// redundant on the flesh ([`redundant_functions`]) are also held where
    /// they are (zero velocity). A static solve leaves them free: its
    /// system is consistent along them, and holding one at a value from
    /// before a change of load would leave its small free part strained.
    fn step_targets(&self, bones: &[DAffine3]) -> Result<Vec<Option<DVec3>>, AdaptError> {
        let mut targets = self.pin_targets(bones)?;
        for ((t, &redundant), &q) in targets.iter_mut().zip(&self.redundant).zip(&self.q) {
            if redundant && t.is_none() {
                *t = Some(q);
            }
        }
        Ok(targets)
    }

    /// `Pᵀ f` for a load on the `K_J` vertices, checked (zero for none).
    fn restrict_extra(&self, extra: Option<&[DVec3]>) -> Result<Vec<DVec3>, AdaptError> {
        match extra {
            None => Ok(vec![DVec3::ZERO; self.dof_count()]),
            Some(extra) if extra.len() != self.hierarchy.fine.vertex_count() => {
                Err(AdaptError::Forces {
                    forces: extra.len(),
                    vertices: self.hierarchy.fine.vertex_count(),
                })
            }
            Some(extra) => Ok(self.prolongation.restrict(extra)),
        }
    }

    /// Gravity plus `Pᵀ f` for a load on the `K_J` vertices, checked.
    fn restrict_load(&self, extra: Option<&[DVec3]>) -> Result<Vec<DVec3>, AdaptError> {
        let g = self.settings.gravity;
        let mut f = self.restrict_extra(extra)?;
        for (fi, &w) in f.iter_mut().zip(&self.system.gravity_weight) {
            *fi += g * w;
        }
        Ok(f)
    }

    /// One step of linearized implicit Euler (eq. 15–16, global linear
    /// model) to the bone transforms `bones`, with an optional extra load on
    /// the `K_J` vertices (newtons). Does not adapt: call [`adapt`](Self::adapt).
    pub fn step(
        &mut self,
        bones: &[DAffine3],
        extra_forces: Option<&[DVec3]>,
    ) -> Result<CgReport, AdaptError> {
        let targets = self.step_targets(bones)?;
        let f = self.restrict_load(extra_forces)?;
        self.check_constraints()?;
        let s = &self.settings;
        let h = s.time_step;
        let n = self.dof_count();
        // Eq. 20: Σφ Δv = (d_c(t+h) − d_c(t))/h − Σφ v.
        let cons = self.dof_constraints(|c, row| {
            let (d, v): (DVec3, DVec3) = row
                .iter()
                .map(|&(k, w)| (self.q[k] * w, self.v[k] * w))
                .fold((DVec3::ZERO, DVec3::ZERO), |a, b| (a.0 + b.0, a.1 + b.1));
            (c.target - d) / h - v
        });
        if !self.regions.is_empty() {
            let extra = self.restrict_extra(extra_forces)?;
            return Ok(merged(
                self.step_blended(bones, &targets, &extra, &cons).solves,
            ));
        }
        // b = h [f − α M v − K (q + (β + h) v)].
        let w: Vec<DVec3> = (0..n)
            .map(|k| self.q[k] + self.v[k] * (s.stiffness_damping + h))
            .collect();
        let (mut kw, mut mv) = (vec![DVec3::ZERO; n], vec![DVec3::ZERO; n]);
        self.system.stiffness.mul(&w, &mut kw);
        mass_mul(&self.system, MassKind::Consistent, &self.v, &mut mv);
        let sc = &mut self.scratch;
        sc.resize(n);
        for k in 0..n {
            sc.b[k] = (f[k] - mv[k] * s.mass_damping - kw[k]) * h;
            if let Some(t) = targets[k] {
                sc.known[k] = true;
                sc.x[k] = (t - self.q[k]) / h - self.v[k];
            }
        }
        let (c_m, c_k) = s.implicit_euler_coefficients();
        // Block-Jacobi here: with no bones pinning the global system, the
        // factor-preconditioned projected CG loses accuracy as the
        // right-hand side shrinks (measured on a floating slab held by a
        // grab: the residual floor rose to 1e-6, then CG broke down).
        let system =
            SystemCache::ensure(&mut sc.system, &self.system, MassKind::Consistent, c_m, c_k);
        let report = projected_pcg(
            &system,
            sc,
            &cons,
            s.cg_tolerance,
            s.cg_max_iterations,
            true,
        );
        sc.system = Some(system);
        sc.warm.copy_from_slice(&sc.x);
        advance_state(&mut self.q, &mut self.v, &sc.x, &targets, h);
        Ok(report)
    }

    /// Static equilibrium `K_h q = Pᵀ f` under gravity and the extra load,
    /// with the pinned DOFs at their targets and the position constraints
    /// held. Sets q, zeroes q̇.
    pub fn solve_static(
        &mut self,
        bones: &[DAffine3],
        extra_forces: Option<&[DVec3]>,
    ) -> Result<CgReport, AdaptError> {
        let targets = self.pin_targets(bones)?;
        let f = self.restrict_load(extra_forces)?;
        self.check_constraints()?;
        let cons = self.dof_constraints(|c, _| c.target);
        if !self.regions.is_empty() {
            let extra = self.restrict_extra(extra_forces)?;
            return Ok(merged(
                self.solve_static_blended(bones, &targets, &extra, &cons)
                    .solves,
            ));
        }
        let n = self.dof_count();
        let sc = &mut self.scratch;
        sc.resize(n);
        for k in 0..n {
            sc.b[k] = f[k];
            sc.known[k] = targets[k].is_some();
            sc.x[k] = targets[k].unwrap_or(self.q[k]);
        }
        let system =
            SystemCache::ensure(&mut sc.system, &self.system, MassKind::Consistent, 0.0, 1.0);
        let report = projected_pcg(
            &system,
            sc,
            &cons,
            self.settings.cg_tolerance,
            self.settings.cg_max_iterations,
            false,
        );
        sc.system = Some(system);
        self.q.copy_from_slice(&sc.x);
        self.v.iter_mut().for_each(|v| *v = DVec3::ZERO);
        Ok(report)
    }

    /// Energies of the field: kinetic ½ `q̇ᵀM_h` q̇, elastic ½ `qᵀK_h` q,
    /// gravitational −Σ `g·q_α` ∫ρφ^α. All three are functions of the fine
    /// field `P q`, so refining leaves them exactly as they were.
    pub fn energy(&self) -> Energy {
        let n = self.dof_count();
        let (mut mv, mut kq) = (vec![DVec3::ZERO; n], vec![DVec3::ZERO; n]);
        mass_mul(&self.system, MassKind::Consistent, &self.v, &mut mv);
        self.system.stiffness.mul(&self.q, &mut kq);
        let g = self.settings.gravity;
        Energy {
            kinetic: 0.5 * dot(&self.v, &mv),
            elastic: 0.5 * dot(&self.q, &kq),
            gravity: -(0..n)
                .map(|k| g.dot(self.q[k]) * self.system.gravity_weight[k])
                .sum::<f64>(),
        }
    }
}

/// One report for the regional solves: iterations summed, the worst
/// residual, converged when all did.
fn merged(solves: Vec<CgReport>) -> CgReport {
    CgReport {
        iterations: solves.iter().map(|s| s.iterations).sum(),
        relative_residual: solves
            .iter()
            .map(|s| s.relative_residual)
            .fold(0.0, f64::max),
        converged: solves.iter().all(|s| s.converged),
        dropped_constraints: solves.iter().map(|s| s.dropped_constraints).sum(),
    }
}
