//! Blended local linearization for the adaptive body (Capell §4.5 in the
//! hierarchical basis).
//!
//! Each bone i owns a region, as in [`crate::fem::regions`]: the coarse
//! cells with a vertex of positive weight W^i, the weights from
//! [`bone_weights`] on K. In the hierarchical basis:
//!
//! - **Region functions.** The active functions nonzero on a `K_J` cell inside
//!   the region's coarse cells (Capell's selection Q^i). A function with
//!   W^i > 0 at its node has its whole support there (its node's smallest
//!   coarse face has a corner of positive weight, and every coarse cell
//!   around that face is in the region), so its regional row is its global
//!   one; functions on the region's rim get partial rows, like `FemBody`'s rim
//!   vertices.
//! - **Region matrices.** The Galerkin restriction `P_iᵀ K_J^i P_i` of `K_J`'s
//!   matrices assembled over the region's `K_J` cells, rebuilt with P.
//! - **Weights.** W^i of a function is the coarse weights' trilinear
//!   interpolant at its node (the vertex weight for level 0). The coarse
//!   weights sum to one, so these do at every node.
//! - **The local displacement.** `u = T⁻¹(x + d(x)) − x = Rᵀ d + (Rᵀ(x − t) − x)`;
//!   the second term is affine, which V₀ reproduces with zero details, so
//!   `u_α = T⁻¹(r_a + q_a) − r_a` for a level-0 function and `Rᵀ q_α` for a
//!   detail. A rigid motion of the region is strain-free exactly.
//!
//! The step and the static solve are `FemBody`'s (solved in the bone's
//! frame, blended, then corrected back onto the position constraints).

use super::redundant::{hosts_of, redundant_functions};
use super::region::AdaptRegion;
use super::{AdaptError, AdaptiveBody, NONE};
use crate::fem::hierarchy::{Prolongation, galerkin};
use crate::fem::regions::add_twist;
use crate::fem::solver::{
    ConstraintBasis, LocalConstraint, MassKind, Scratch, StepReport, SystemCache, advance_state,
    mass_mul, projected_pcg,
};
use crate::fem::sparse::{Assembled, assemble_elements};
use glam::{DAffine3, DVec3};

impl AdaptiveBody {
    /// The regions for the coarse vertices' bone weights `weights[bone][vertex]`
    /// (none without bones).
    pub(super) fn build_regions(&self, weights: &[Vec<f64>]) -> Vec<AdaptRegion> {
        let h = &self.hierarchy;
        let (coarse, fine) = (&h.coarse, &h.fine);
        if coarse.bones.is_empty() {
            return Vec::new();
        }
        let f = 1usize << h.levels;
        let coarse_cell_of: Vec<usize> = fine
            .cell_coords
            .iter()
            .map(|c| {
                coarse
                    .cell_at(c.map(|x| x / f))
                    .expect("a fine cell lies in a coarse cell")
            })
            .collect();
        weights
            .iter()
            .enumerate()
            .filter_map(|(bone, w)| {
                let coarse_in: Vec<bool> = coarse
                    .cells
                    .iter()
                    .map(|cell| cell.iter().any(|&a| w[a] > 0.0))
                    .collect();
                let cells: Vec<usize> = (0..fine.cell_count())
                    .filter(|&c| coarse_in[coarse_cell_of[c]])
                    .collect();
                if cells.is_empty() {
                    return None;
                }
                let mut in_region = vec![false; fine.vertex_count()];
                for &c in &cells {
                    for &a in &fine.cells[c] {
                        in_region[a] = true;
                    }
                }
                let node_weights = (0..fine.vertex_count())
                    .map(|a| match h.coarse_vertex[a] {
                        Some(v) => w[v],
                        None => coarse.embed(fine.rest[a]).map_or(0.0, |e| {
                            coarse.cells[e.cell]
                                .iter()
                                .zip(&e.weights)
                                .map(|(&v, &ew)| w[v] * ew)
                                .sum()
                        }),
                    })
                    .collect();
                let local_cells: Vec<[usize; 8]> = cells.iter().map(|&c| fine.cells[c]).collect();
                let mats: Vec<_> = cells.iter().map(|&c| self.fine_materials[c]).collect();
                let elements = self.fine_elements.select(&cells);
                let mut fine_m =
                    assemble_elements(fine.vertex_count(), &local_cells, &mats, &elements);
                if let Some(twist) = self.settings.twist {
                    add_twist(fine, &cells, &local_cells, &[bone], twist, &mut fine_m);
                }
                Some(AdaptRegion {
                    bone,
                    node_weights,
                    in_region,
                    fine: fine_m,
                    dofs: Vec::new(),
                    local_of: Vec::new(),
                    weights: Vec::new(),
                    held: Vec::new(),
                    system: Assembled::default(),
                    scratch: Scratch::default(),
                })
            })
            .collect()
    }

    /// Replaces the automatic region weights with `weights[bone][coarse
    /// vertex]` (e.g. painted ones, a partition of unity over the coarse
    /// vertices). Errors for the global model or a shape mismatch.
    pub fn set_region_weights(&mut self, weights: &[Vec<f64>]) -> Result<(), AdaptError> {
        let coarse = &self.hierarchy.coarse;
        if self.regions.is_empty() {
            return Err(AdaptError::RegionWeightsNeedBlending);
        }
        if weights.len() != coarse.bones.len()
            || weights.iter().any(|w| w.len() != coarse.vertex_count())
        {
            return Err(AdaptError::RegionWeightsShape {
                bones: coarse.bones.len(),
                vertices: coarse.vertex_count(),
            });
        }
        self.regions = self.build_regions(weights);
        self.rebuild_regions();
        Ok(())
    }

    /// Selects each region's active functions and restricts its matrices
    /// (after P changed).
    pub(super) fn rebuild_regions(&mut self) {
        let mut regions = std::mem::take(&mut self.regions);
        let hosts = hosts_of(&self.active, self.dof_of.len());
        for r in &mut regions {
            let p = &self.prolongation;
            r.dofs = (0..self.dof_count())
                .filter(|&k| p.cols[k].iter().any(|&(b, _)| r.in_region[b as usize]))
                .collect();
            // Numbered by their nodes' K_J order (layer by layer), not DOF
            // order (coarse first, details after): neighbours sit near each
            // other in memory for the matrix products.
            r.dofs.sort_by_key(|&k| self.active[k]);
            r.local_of = vec![NONE; self.dof_count()];
            for (l, &k) in r.dofs.iter().enumerate() {
                r.local_of[k] = l as u32;
            }
            r.weights = r
                .dofs
                .iter()
                .map(|&k| r.node_weights[self.active[k]])
                .collect();
            let cols: Vec<Vec<(u32, f64)>> = r.dofs.iter().map(|&k| p.cols[k].clone()).collect();
            let mut rows = vec![Vec::new(); p.rows.len()];
            for (l, col) in cols.iter().enumerate() {
                for &(b, w) in col {
                    rows[b as usize].push((l as u32, w));
                }
            }
            r.system = galerkin(&r.fine, &Prolongation { rows, cols });
            r.held = redundant_functions(
                r.dofs
                    .iter()
                    .map(|&k| (self.active[k], p.cols[k].as_slice())),
                &hosts,
                &r.fine.lumped_mass,
            );
            r.scratch = Scratch::default();
        }
        self.regions = regions;
    }

    /// Largest deviation of `Σ_i` W^i from one over the active functions
    /// (zero for the global model).
    pub fn partition_error(&self) -> f64 {
        if self.regions.is_empty() {
            return 0.0;
        }
        let mut sum = vec![0.0; self.dof_count()];
        for r in &self.regions {
            for (l, &k) in r.dofs.iter().enumerate() {
                sum[k] += r.weights[l];
            }
        }
        sum.iter().map(|s| (s - 1.0).abs()).fold(0.0, f64::max)
    }

    /// How many blending regions (0: the global linear model).
    pub fn region_count(&self) -> usize {
        self.regions.len()
    }

    /// The local displacement `u_α` in the bone frame of `t` (module doc).
    fn local_displacement(&self, k: usize, inv: &DAffine3, q: DVec3) -> DVec3 {
        if k < self.hierarchy.coarse.vertex_count() {
            let r = self.hierarchy.fine.rest[self.active[k]];
            inv.transform_point3(r + q) - r
        } else {
            inv.matrix3 * q
        }
    }

    /// Generalized elastic forces on the DOFs for the bone transforms:
    /// `Σ_i W^i (−R_i K^i u^i)` blended, `−K_h q` for the global model.
    pub fn elastic_forces(&self, bones: &[DAffine3]) -> Result<Vec<DVec3>, AdaptError> {
        self.pin_targets(bones)?;
        let n = self.dof_count();
        let mut f = vec![DVec3::ZERO; n];
        if self.regions.is_empty() {
            self.system.stiffness.mul(&self.q, &mut f);
            f.iter_mut().for_each(|x| *x = -*x);
            return Ok(f);
        }
        for r in &self.regions {
            let t = bones[r.bone];
            let inv = t.inverse();
            let u: Vec<DVec3> = r
                .dofs
                .iter()
                .map(|&k| self.local_displacement(k, &inv, self.q[k]))
                .collect();
            let mut ku = vec![DVec3::ZERO; u.len()];
            r.system.stiffness.mul(&u, &mut ku);
            for (l, &k) in r.dofs.iter().enumerate() {
                f[k] -= t.matrix3 * ku[l] * r.weights[l];
            }
        }
        Ok(f)
    }

    /// The constraints held inside region `r` (every function of the row in
    /// it), in its local numbering, values rotated by `rt`.
    fn region_constraints(
        &self,
        r: &AdaptRegion,
        global: &[LocalConstraint],
        rt: glam::DMat3,
    ) -> Vec<LocalConstraint> {
        global
            .iter()
            .filter(|c| c.support.iter().all(|&(k, _)| r.local_of[k] != NONE))
            .map(|c| LocalConstraint {
                support: c
                    .support
                    .iter()
                    .map(|&(k, w)| (r.local_of[k] as usize, w))
                    .collect(),
                value: rt * c.value,
            })
            .collect()
    }

    /// The blended step (eq. 15–16 per region in the bone's frame, §4.5);
    /// `load` is `Pᵀ f_extra` (gravity comes from each region's weights).
    pub(super) fn step_blended(
        &mut self,
        bones: &[DAffine3],
        targets: &[Option<DVec3>],
        extra: &[DVec3],
        cons: &[LocalConstraint],
    ) -> StepReport {
        let s = self.settings.clone();
        let h = s.time_step;
        let n = self.dof_count();
        let mut dv = vec![DVec3::ZERO; n];
        let mut report = StepReport::default();
        let mut regions = std::mem::take(&mut self.regions);
        for r in &mut regions {
            let t = bones[r.bone];
            let (rot, inv) = (t.matrix3, t.inverse());
            let rt = rot.transpose();
            let m = r.dofs.len();
            let mut sc = std::mem::take(&mut r.scratch);
            sc.resize(m);
            let mut w = vec![DVec3::ZERO; m];
            let mut vl = vec![DVec3::ZERO; m];
            for (l, &k) in r.dofs.iter().enumerate() {
                vl[l] = rt * self.v[k];
                w[l] =
                    self.local_displacement(k, &inv, self.q[k]) + vl[l] * (s.stiffness_damping + h);
            }
            let (mut kw, mut mv) = (vec![DVec3::ZERO; m], vec![DVec3::ZERO; m]);
            r.system.stiffness.mul(&w, &mut kw);
            mass_mul(&r.system, MassKind::Consistent, &vl, &mut mv);
            let fg = rt * s.gravity;
            for (l, &k) in r.dofs.iter().enumerate() {
                let f = fg * r.system.gravity_weight[l] + rt * extra[k];
                sc.b[l] = (f - mv[l] * s.mass_damping - kw[l]) * h;
                if let Some(tk) = targets[k] {
                    sc.known[l] = true;
                    sc.x[l] = rt * ((tk - self.q[k]) / h - self.v[k]);
                } else if r.held[l] {
                    sc.known[l] = true;
                    sc.x[l] = DVec3::ZERO;
                }
            }
            let local = self.region_constraints(r, cons, rt);
            let (c_m, c_k) = s.implicit_euler_coefficients();
            let mut system =
                SystemCache::ensure(&mut sc.system, &r.system, MassKind::Consistent, c_m, c_k);
            system.prepare_factor(&sc.known);
            report.solves.push(projected_pcg(
                &system,
                &mut sc,
                &local,
                s.cg_tolerance,
                s.cg_max_iterations,
                true,
            ));
            sc.system = Some(system);
            sc.warm.copy_from_slice(&sc.x);
            for (l, &k) in r.dofs.iter().enumerate() {
                dv[k] += rot * sc.x[l] * r.weights[l];
            }
            r.scratch = sc;
        }
        self.regions = regions;
        correct_blend(&mut dv, targets, cons);
        advance_state(&mut self.q, &mut self.v, &dv, targets, h);
        report
    }

    /// The blended static solve: per region `K^i q̃ = Rᵀ f − K^i (T⁻¹(r) − r)`
    /// in the bone's frame, `q = Σ W^i R q̃`.
    pub(super) fn solve_static_blended(
        &mut self,
        bones: &[DAffine3],
        targets: &[Option<DVec3>],
        extra: &[DVec3],
        cons: &[LocalConstraint],
    ) -> StepReport {
        let s = self.settings.clone();
        let n = self.dof_count();
        let mut q = vec![DVec3::ZERO; n];
        let mut report = StepReport::default();
        let mut regions = std::mem::take(&mut self.regions);
        for r in &mut regions {
            let t = bones[r.bone];
            let (rot, inv) = (t.matrix3, t.inverse());
            let rt = rot.transpose();
            let m = r.dofs.len();
            let mut sc = std::mem::take(&mut r.scratch);
            sc.resize(m);
            let offset: Vec<DVec3> = r
                .dofs
                .iter()
                .map(|&k| self.local_displacement(k, &inv, DVec3::ZERO))
                .collect();
            let mut ko = vec![DVec3::ZERO; m];
            r.system.stiffness.mul(&offset, &mut ko);
            for (l, &k) in r.dofs.iter().enumerate() {
                let f = s.gravity * r.system.gravity_weight[l] + extra[k];
                sc.b[l] = rt * f - ko[l];
                match targets[k] {
                    Some(tk) => {
                        sc.known[l] = true;
                        sc.x[l] = rt * tk;
                    }
                    None => {
                        sc.known[l] = r.held[l];
                        sc.x[l] = rt * self.q[k];
                    }
                }
            }
            let local = self.region_constraints(r, cons, rt);
            let mut system =
                SystemCache::ensure(&mut sc.system, &r.system, MassKind::Consistent, 0.0, 1.0);
            system.prepare_factor(&sc.known);
            report.solves.push(projected_pcg(
                &system,
                &mut sc,
                &local,
                s.cg_tolerance,
                s.cg_max_iterations,
                false,
            ));
            sc.system = Some(system);
            for (l, &k) in r.dofs.iter().enumerate() {
                q[k] += rot * sc.x[l] * r.weights[l];
            }
            r.scratch = sc;
        }
        self.regions = regions;
        correct_blend(&mut q, targets, cons);
        for k in 0..n {
            if let Some(t) = targets[k] {
                q[k] = t;
            }
        }
        self.q = q;
        self.v.iter_mut().for_each(|v| *v = DVec3::ZERO);
        report
    }
}

/// After blending: the minimum-norm change of the free entries that meets
/// every position constraint exactly (the weights vary over a constraint's
/// functions, so a blend of solutions that each meet it need not).
fn correct_blend(x: &mut [DVec3], targets: &[Option<DVec3>], cons: &[LocalConstraint]) {
    if cons.is_empty() {
        return;
    }
    // Known entries already hold their values (each region set them, and
    // the weights sum to one); they count towards the constraint.
    let known: Vec<bool> = targets.iter().map(Option::is_some).collect();
    ConstraintBasis::new(x.len(), &known, cons, x);
}

#[cfg(test)]
mod tests {
    use crate::fem::lattice::{Bone, Lattice};
    use crate::fem::{AdaptSettings, AdaptiveBody, FemSettings, Linearization, Material};
    use glam::{DMat3, DVec3};

    /// A function with blend weight in a region has its whole support in the
    /// region's cells: its regional rows (stiffness, mass, gravity) are its
    /// global ones, so the blend of the regional systems is the global
    /// system wherever the bones agree.
    #[test]
    fn weighted_functions_have_their_global_rows_in_each_region() {
        let mut l = Lattice::grid_box(DVec3::new(-0.05, -0.05, 0.0), DVec3::splat(0.05), [2, 2, 6]);
        let bone = |z0: f64, z1: f64, j| Bone {
            joint: j,
            child: None,
            head: DVec3::new(0.0, 0.0, z0),
            tail: DVec3::new(0.0, 0.0, z1),
        };
        l.bind_bones(vec![bone(0.0, 0.15, 0), bone(0.15, 0.3, 1)], 0.025);
        let settings = FemSettings {
            linearization: Linearization::BlendedLocal { blend_width: 0.1 },
            ..FemSettings::default()
        };
        let adapt = AdaptSettings {
            levels: 2,
            refine_threshold: vec![1.0; 2],
            coarsen_threshold: vec![0.5; 2],
        };
        let fixed = vec![None; l.vertex_count()];
        let mut body = AdaptiveBody::uniform(l, Material::FLESH, fixed, settings, adapt).unwrap();
        body.refine_all();
        let g = &body.system;
        let kmax = g
            .stiffness
            .blocks
            .iter()
            .map(|b| b.to_cols_array().iter().fold(0.0f64, |m, x| m.max(x.abs())))
            .fold(0.0, f64::max);
        let (mut checked, mut worst) = (0, 0.0f64);
        for r in &body.regions {
            for (l, &k) in r.dofs.iter().enumerate() {
                if r.weights[l] == 0.0 {
                    continue;
                }
                checked += 1;
                let rs = &r.system.stiffness;
                let mut regional = std::collections::HashMap::new();
                for e in rs.row_ptr[l]..rs.row_ptr[l + 1] {
                    regional.insert(
                        r.dofs[rs.col[e] as usize],
                        (rs.blocks[e], r.system.consistent_mass.values[e]),
                    );
                }
                for e in g.stiffness.row_ptr[k]..g.stiffness.row_ptr[k + 1] {
                    let beta = g.stiffness.col[e] as usize;
                    let (kb, mb) = regional.remove(&beta).unwrap_or((DMat3::ZERO, 0.0));
                    let dk = (kb - g.stiffness.blocks[e])
                        .to_cols_array()
                        .iter()
                        .fold(0.0f64, |m, x| m.max(x.abs()));
                    worst = worst.max(dk / kmax);
                    assert!((mb - g.consistent_mass.values[e]).abs() <= 1e-12 * g.lumped_mass[k]);
                }
                assert!(
                    regional
                        .values()
                        .all(|(b, m)| *b == DMat3::ZERO && *m == 0.0)
                );
                assert!(
                    (r.system.gravity_weight[l] - g.gravity_weight[k]).abs()
                        <= 1e-12 * g.gravity_weight[k]
                );
            }
        }
        assert!(checked > body.dof_count());
        assert!(worst < 1e-12, "{worst}");
    }
}
