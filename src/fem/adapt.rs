//! The adaptive body (Capell §4.7): the lattice simulation on the active
//! functions of the hierarchical basis ([`super::hierarchy`]), with detail
//! introduced where the flesh is distorted and removed where it relaxes.
//!
//! ## The simulation
//!
//! The DOFs are the coefficients q_α of the active functions; the fine
//! displacement on K_J is `P q`. The active system is the Galerkin
//! restriction of K_J's: `K_h = Pᵀ K_J P`, `M_h = Pᵀ diag(m_J) P` (the
//! kinetic energy of the fine field under K_J's lumped mass, so not diagonal
//! in this basis; [`FemSettings::mass`] is not used), gravity `Pᵀ (∫ρφ) g`.
//! Only the global linear model: a body asking for blended local
//! linearization or the twist constraint is refused.
//! A step is the global linear model of [`super::solver`] (eq. 15–16) on
//! that system, solved with the same projected block-Jacobi CG; the pinned
//! coarse vertices (bone-bound, clamped) are the known DOFs (eq. 17–18). The
//! details vanish on the skeleton, so they never disturb a bone. Position
//! constraints (§4.4, a grabbed point) are projected inside CG as in
//! [`super::solver`], their rows built from P ([`constraints`]).
//!
//! ## Adaptation
//!
//! The distortion of a K_J cell is `‖S − I‖_F` at its centre, with
//! `F = I + ∇(P q)` and `S = Rᵀ F` its symmetric polar factor: the strain
//! with the best-fit rotation removed, so a limb carried by its bone is not
//! "distorted". A cell of level j (a cell of K_j) takes the largest
//! distortion of the K_J cells inside it.
//!
//! - **Refine.** Where an active level-j function covers a level-j cell
//!   whose distortion exceeds `refine_threshold[j]`, every admissible
//!   level-(j+1) detail in that cell is introduced, with coefficient zero
//!   (q and q̇): the field, and so the energy, are unchanged.
//! - **Coarsen.** A level-(j+1) detail is removed when every level-j cell
//!   around it is below `coarsen_threshold[j]`, finest level first, and
//!   then any detail left without an active function of the level above
//!   around it. Its coefficients are dropped.
//!
//! A detail is added and removed on the same measure (the level-j cells
//! around it) with `coarsen < refine`: a distortion between the two
//! thresholds changes nothing, which keeps the level from oscillating
//! (Capell, after Debunne et al. 2001).

mod constraints;

use super::element::{HexElement, Material, trilinear_gradients};
use super::hierarchy::{Hierarchy, Prolongation, galerkin};
use super::lattice::Lattice;
use super::solver::{
    CgReport, Energy, FemSettings, Linearization, MassKind, PositionConstraint, Scratch,
    SystemCache, dot, mass_mul, projected_pcg,
};
use super::sparse::{Assembled, assemble};
use glam::{DAffine3, DMat3, DVec3};

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
    pub fn validate(&self) -> Result<(), String> {
        let j = self.levels as usize;
        if self.refine_threshold.len() != j || self.coarsen_threshold.len() != j {
            return Err(format!(
                "{} levels need {j} refine and {j} coarsen thresholds, got {} and {}",
                self.levels,
                self.refine_threshold.len(),
                self.coarsen_threshold.len()
            ));
        }
        for (l, (&r, &c)) in self
            .refine_threshold
            .iter()
            .zip(&self.coarsen_threshold)
            .enumerate()
        {
            if !(c.is_finite() && r.is_finite() && c >= 0.0 && c < r) {
                return Err(format!(
                    "level {l}: need 0 ≤ coarsen threshold < refine threshold, got {c} and {r}"
                ));
            }
        }
        Ok(())
    }
}

/// What an adaptation changed: functions added and removed, indexed by level
/// (entry 0, the coarse level, is always zero).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AdaptReport {
    pub added: Vec<usize>,
    pub removed: Vec<usize>,
}

impl AdaptReport {
    pub fn changed(&self) -> bool {
        self.added.iter().chain(&self.removed).any(|&n| n > 0)
    }
}

/// A lattice of flesh simulated in the hierarchical basis.
#[derive(Clone, Debug)]
pub struct AdaptiveBody {
    pub hierarchy: Hierarchy,
    /// The material of each K_J cell (its coarse cell's).
    pub fine_materials: Vec<Material>,
    /// K_J's stiffness, mass and gravity weights.
    pub fine_matrices: Assembled,
    pub settings: FemSettings,
    pub adapt: AdaptSettings,
    /// Clamped coarse vertices (besides the bone vertices), fixed at
    /// construction: they shape the basis.
    pub fixed: Vec<Option<DVec3>>,
    /// Points of the flesh held at displacement targets (§4.4), embedded in
    /// K_J ([`grab`](Self::grab)).
    pub constraints: Vec<PositionConstraint>,
    /// Coefficients q_α of the active functions (eq. 4).
    pub q: Vec<DVec3>,
    /// Velocities q̇_α.
    pub v: Vec<DVec3>,
    /// The K_J vertex of each active function: the coarse vertices first, in
    /// K's order (so `q[..K.vertex_count()]` are the coarse vertices'), then
    /// the details in K_J order.
    active: Vec<usize>,
    /// The DOF of each K_J vertex's function, or NONE when inactive.
    dof_of: Vec<u32>,
    prolongation: Prolongation,
    system: Assembled,
    scratch: Scratch,
}

impl AdaptiveBody {
    /// The body on `coarse` with one material per coarse cell and the clamps
    /// `fixed` (one per coarse vertex), starting with the coarse level only.
    pub fn new(
        coarse: Lattice,
        materials: Vec<Material>,
        fixed: Vec<Option<DVec3>>,
        settings: FemSettings,
        adapt: AdaptSettings,
    ) -> Result<Self, String> {
        adapt.validate()?;
        if materials.len() != coarse.cell_count() {
            return Err(format!(
                "{} materials for {} cells",
                materials.len(),
                coarse.cell_count()
            ));
        }
        for m in &materials {
            m.validate()?;
        }
        if fixed.len() != coarse.vertex_count() {
            return Err(format!(
                "{} clamps for {} vertices",
                fixed.len(),
                coarse.vertex_count()
            ));
        }
        if !(settings.time_step.is_finite() && settings.time_step > 0.0) {
            return Err(format!("time step must be > 0, got {}", settings.time_step));
        }
        if settings.linearization != Linearization::Global || settings.twist.is_some() {
            return Err(
                "the adaptive body runs the global linear model: no blended local \
                 linearization or twist"
                    .into(),
            );
        }
        let pinned: Vec<bool> = fixed.iter().map(Option::is_some).collect();
        let hierarchy = Hierarchy::new(coarse, adapt.levels, &pinned)?;
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
        let element = HexElement::new(hierarchy.fine.cell_size);
        let fine_matrices = assemble(
            hierarchy.fine.vertex_count(),
            &hierarchy.fine.cells,
            &fine_materials,
            &element,
        );
        let mut body = Self {
            fine_materials,
            fine_matrices,
            settings,
            adapt,
            fixed,
            constraints: Vec::new(),
            q: Vec::new(),
            v: Vec::new(),
            active: Vec::new(),
            dof_of: vec![NONE; hierarchy.fine.vertex_count()],
            prolongation: Prolongation::default(),
            system: Assembled::default(),
            scratch: Scratch::default(),
            hierarchy,
        };
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
    ) -> Result<Self, String> {
        let m = vec![material; coarse.cell_count()];
        Self::new(coarse, m, fixed, settings, adapt)
    }

    /// Number of DOFs (active functions; three scalars each).
    pub fn dof_count(&self) -> usize {
        self.active.len()
    }

    /// The K_J vertex hosting each active function, in DOF order.
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

    /// The displacement at every K_J vertex, `P q`.
    pub fn field(&self) -> Vec<DVec3> {
        self.prolongation.apply(&self.q)
    }

    /// The velocity at every K_J vertex, `P q̇`.
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

    /// Every admissible detail active: the basis spans V_J (less S).
    pub fn refine_all(&mut self) -> AdaptReport {
        self.set_details(|_| true)
    }

    /// Back to the coarse level only.
    pub fn coarsen_all(&mut self) -> AdaptReport {
        self.set_details(|_| false)
    }

    /// Switches to the detail set `on` (per K_J vertex; level 0 implied):
    /// kept functions keep q and q̇, new ones start at zero, removed ones
    /// are dropped. Rebuilds P and the active system.
    fn rebuild(&mut self, on: &[bool]) -> AdaptReport {
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
        self.active = active;
        self.dof_of = dof_of;
        self.q = q;
        self.v = v;
        self.scratch = Scratch::default();
        report
    }

    /// The known displacement of each DOF for the bone transforms: `T(r) − r`
    /// for bone-bound coarse vertices (eq. 24), the clamp value for clamped
    /// ones, None for the rest (every detail).
    pub fn pin_targets(&self, bones: &[DAffine3]) -> Result<Vec<Option<DVec3>>, String> {
        let coarse = &self.hierarchy.coarse;
        if bones.len() != coarse.bones.len() {
            return Err(format!(
                "{} bone transforms for {} bones",
                bones.len(),
                coarse.bones.len()
            ));
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

    /// `Pᵀ f` for a load on the K_J vertices, checked.
    fn restrict_load(&self, extra: Option<&[DVec3]>) -> Result<Vec<DVec3>, String> {
        let g = self.settings.gravity;
        let mut f: Vec<DVec3> = self.system.gravity_weight.iter().map(|&w| g * w).collect();
        if let Some(extra) = extra {
            if extra.len() != self.hierarchy.fine.vertex_count() {
                return Err(format!(
                    "{} forces for {} fine vertices",
                    extra.len(),
                    self.hierarchy.fine.vertex_count()
                ));
            }
            for (fi, e) in f.iter_mut().zip(self.prolongation.restrict(extra)) {
                *fi += e;
            }
        }
        Ok(f)
    }

    /// One step of linearized implicit Euler (eq. 15–16, global linear
    /// model) to the bone transforms `bones`, with an optional extra load on
    /// the K_J vertices (newtons). Does not adapt: call [`adapt`](Self::adapt).
    pub fn step(
        &mut self,
        bones: &[DAffine3],
        extra_forces: Option<&[DVec3]>,
    ) -> Result<CgReport, String> {
        let targets = self.pin_targets(bones)?;
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
        let system = SystemCache::ensure(
            &mut sc.system,
            &self.system,
            MassKind::Consistent,
            1.0 + h * s.mass_damping,
            h * s.stiffness_damping + h * h,
        );
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
        for k in 0..n {
            match targets[k] {
                Some(t) => {
                    self.v[k] = (t - self.q[k]) / h;
                    self.q[k] = t;
                }
                None => {
                    self.v[k] += sc.x[k];
                    self.q[k] += self.v[k] * h;
                }
            }
        }
        Ok(report)
    }

    /// Static equilibrium `K_h q = Pᵀ f` under gravity and the extra load,
    /// with the pinned DOFs at their targets and the position constraints
    /// held. Sets q, zeroes q̇.
    pub fn solve_static(
        &mut self,
        bones: &[DAffine3],
        extra_forces: Option<&[DVec3]>,
    ) -> Result<CgReport, String> {
        let targets = self.pin_targets(bones)?;
        let f = self.restrict_load(extra_forces)?;
        self.check_constraints()?;
        let cons = self.dof_constraints(|c, _| c.target);
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

    /// Energies of the field: kinetic ½ q̇ᵀM_h q̇, elastic ½ qᵀK_h q,
    /// gravitational −Σ g·q_α ∫ρφ^α. All three are functions of the fine
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

    /// The distortion ‖S − I‖_F of every K_J cell (module doc).
    pub fn distortion(&self) -> Vec<f64> {
        let u = self.field();
        let fine = &self.hierarchy.fine;
        let grads = trilinear_gradients(DVec3::splat(0.5), fine.cell_size);
        fine.cells
            .iter()
            .map(|cell| {
                let mut cols = [DVec3::ZERO; 3];
                for (c, &a) in cell.iter().enumerate() {
                    for (j, col) in cols.iter_mut().enumerate() {
                        *col += u[a] * grads[c][j];
                    }
                }
                polar_strain(DMat3::IDENTITY + DMat3::from_cols(cols[0], cols[1], cols[2]))
            })
            .collect()
    }

    /// Grid shape of the cells of level j (K_j).
    fn level_dims(&self, j: u32) -> [usize; 3] {
        self.hierarchy.coarse.dims.map(|d| d << j)
    }

    fn level_index(&self, j: u32, w: [usize; 3]) -> Option<usize> {
        let d = self.level_dims(j);
        if (0..3).any(|i| w[i] >= d[i]) {
            return None;
        }
        self.hierarchy.coarse.cell_at(w.map(|x| x >> j))?;
        Some(w[0] + d[0] * (w[1] + d[1] * w[2]))
    }

    /// The level-j cells (indices) whose closure holds K_J vertex `a`.
    fn cells_around(&self, j: u32, a: usize) -> Vec<usize> {
        let s = self.hierarchy.spacing(j);
        let c = self.hierarchy.fine.vertex_coords[a];
        let mut out = Vec::with_capacity(8);
        for corner in 0..8usize {
            let mut w = [0usize; 3];
            let mut ok = true;
            for i in 0..3 {
                let below = (corner >> i) & 1 == 1;
                if below && !c[i].is_multiple_of(s) {
                    // Off the level-j grid on this axis: one cell only.
                    ok = false;
                    break;
                }
                w[i] = match (below, c[i] / s) {
                    (true, 0) => {
                        ok = false;
                        break;
                    }
                    (true, x) => x - 1,
                    (false, x) => x,
                };
            }
            if ok && let Some(idx) = self.level_index(j, w) {
                out.push(idx);
            }
        }
        out
    }

    /// Level-j cells covered by an active level-j function: all of them for
    /// the coarse level, else those with an active level-j detail corner.
    fn covered(&self, j: u32, on: &[bool]) -> Vec<bool> {
        let d = self.level_dims(j);
        let mut covered = vec![j == 0; d[0] * d[1] * d[2]];
        if j > 0 {
            for a in 0..on.len() {
                if on[a] && self.hierarchy.level_of[a] as u32 == j {
                    for idx in self.cells_around(j, a) {
                        covered[idx] = true;
                    }
                }
            }
        }
        covered
    }

    /// Refines and coarsens by the distortion of the current field (§4.7,
    /// module doc), transferring the state. Returns what changed.
    pub fn adapt(&mut self) -> AdaptReport {
        let levels = self.adapt.levels;
        let h = &self.hierarchy;
        // Distortion of every cell of every level below J (max over the K_J
        // cells inside; −∞ where there is no cell).
        let dist = self.distortion();
        let grids: Vec<Vec<f64>> = (0..levels)
            .map(|j| {
                let d = self.level_dims(j);
                let mut g = vec![f64::NEG_INFINITY; d[0] * d[1] * d[2]];
                for (cell, c) in h.fine.cell_coords.iter().enumerate() {
                    let w = c.map(|x| x >> (levels - j));
                    let idx = w[0] + d[0] * (w[1] + d[1] * w[2]);
                    g[idx] = g[idx].max(dist[cell]);
                }
                g
            })
            .collect();
        let mut on: Vec<bool> = (0..self.dof_of.len())
            .map(|a| self.dof_of[a] != NONE && h.level_of[a] > 0)
            .collect();
        // Refine, coarse to fine: the 19 new vertices of each hot, covered
        // level-j cell.
        for j in 0..levels {
            let covered = self.covered(j, &on);
            let d = self.level_dims(j);
            let s = h.spacing(j) as i64;
            let half = s / 2;
            for (idx, &hot) in grids[j as usize].iter().enumerate() {
                if !(covered[idx] && hot > self.adapt.refine_threshold[j as usize]) {
                    continue;
                }
                let w = [idx % d[0], (idx / d[0]) % d[1], idx / (d[0] * d[1])];
                for o in 0..27 {
                    let off = [o % 3, (o / 3) % 3, o / 9];
                    if off.iter().all(|&x| x != 1) {
                        continue;
                    }
                    let c: [i64; 3] = std::array::from_fn(|i| w[i] as i64 * s + off[i] * half);
                    if let Some(a) = h.vertex_at(c)
                        && h.admissible[a]
                    {
                        on[a] = true;
                    }
                }
            }
        }
        // Coarsen, finest first: a level-(j+1) detail whose surrounding
        // level-j cells are all calm.
        for j in (0..levels).rev() {
            for a in 0..on.len() {
                if on[a] && h.level_of[a] as u32 == j + 1 {
                    let calm = self.cells_around(j, a).iter().all(|&idx| {
                        grids[j as usize][idx] < self.adapt.coarsen_threshold[j as usize]
                    });
                    if calm {
                        on[a] = false;
                    }
                }
            }
        }
        // No orphans: a level-(j+1) detail needs an active level-j function
        // over one of its level-j cells.
        for j in 1..levels {
            let covered = self.covered(j, &on);
            for a in 0..on.len() {
                if on[a]
                    && h.level_of[a] as u32 == j + 1
                    && !self.cells_around(j, a).iter().any(|&idx| covered[idx])
                {
                    on[a] = false;
                }
            }
        }
        let unchanged =
            (0..on.len()).all(|a| on[a] == (self.dof_of[a] != NONE && h.level_of[a] > 0));
        if unchanged {
            let n = levels as usize + 1;
            return AdaptReport {
                added: vec![0; n],
                removed: vec![0; n],
            };
        }
        self.rebuild(&on)
    }
}

/// `‖S − I‖_F` for the polar decomposition `F = R S` (R by the iteration
/// `R ← (R + R⁻ᵀ)/2`); infinite for an inverted or degenerate cell.
pub fn polar_strain(f: DMat3) -> f64 {
    if f.determinant() <= 1e-12 {
        return f64::INFINITY;
    }
    let mut r = f;
    for _ in 0..50 {
        let next = (r + r.inverse().transpose()) * 0.5;
        let change = frobenius(next - r);
        r = next;
        if change < 1e-14 {
            break;
        }
    }
    frobenius(r.transpose() * f - DMat3::IDENTITY)
}

fn frobenius(m: DMat3) -> f64 {
    (m.x_axis.length_squared() + m.y_axis.length_squared() + m.z_axis.length_squared()).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::DQuat;

    #[test]
    fn polar_strain_ignores_rotation_and_measures_stretch() {
        let rot = DMat3::from_quat(DQuat::from_axis_angle(
            DVec3::new(1.0, 2.0, 0.5).normalize(),
            1.1,
        ));
        assert!(polar_strain(rot) < 1e-12);
        let stretch = DMat3::from_diagonal(DVec3::new(1.1, 1.0, 0.95));
        let expect = (0.1f64 * 0.1 + 0.05 * 0.05).sqrt();
        assert!((polar_strain(rot * stretch) - expect).abs() < 1e-12);
        assert!(polar_strain(DMat3::from_diagonal(DVec3::new(-1.0, 1.0, 1.0))).is_infinite());
    }
}
