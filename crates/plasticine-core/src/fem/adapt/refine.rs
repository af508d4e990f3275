//! Adaptation (Capell §4.7, see [`super`]'s module doc): the rotation-free
//! distortion of the `K_J` cells, gathered per level, and the refine/coarsen
//! rules with hysteresis.

use super::{AdaptReport, AdaptiveBody, NONE};
use crate::fem::solver::{MassKind, Scratch, SystemCache, projected_pcg};
use glam::{DMat3, DVec3};

impl AdaptiveBody {
    /// The distortion ‖S − I‖_F of every `K_J` cell (module doc); zero in a
    /// cell with no flesh (integrated only where the object is, an empty
    /// cell's field is not determined by the physics and must not draw
    /// detail).
    pub fn distortion(&self) -> Vec<f64> {
        let u = self.field();
        let fine = &self.hierarchy.fine;
        fine.cells
            .iter()
            .enumerate()
            .map(|(k, cell)| {
                if self.fine_elements.get(k).quadrature.is_empty() {
                    return 0.0;
                }
                let grads = self.fine_elements.get(k).gradients_at(DVec3::splat(0.5));
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

    /// Grid shape of the cells of level j (`K_j`).
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

    /// The level-j cells (indices) whose closure holds `K_J` vertex `a`.
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

    /// After detail was removed: the state that was the fine field `field`
    /// (velocity `velocity`) projected onto the active basis (module doc,
    /// "Coarsen"): energy projection for q, mass projection for q̇, with the
    /// pinned coarse DOFs (and functions redundant on the flesh) held. A projection that does not converge leaves
    /// the dropped coefficients' state as it is.
    pub(super) fn project_state(&mut self, field: &[DVec3], velocity: &[DVec3]) {
        let coarse = &self.hierarchy.coarse;
        let known: Vec<bool> = self
            .active
            .iter()
            .zip(&self.redundant)
            .map(|(&a, &redundant)| {
                redundant
                    || self.hierarchy.coarse_vertex[a].is_some_and(|v| {
                        coarse.bone_of_vertex[v].is_some() || self.fixed[v].is_some()
                    })
            })
            .collect();
        let fine = &self.fine_matrices;
        let mut ku = vec![DVec3::ZERO; field.len()];
        fine.stiffness.mul(field, &mut ku);
        let mv: Vec<DVec3> = velocity
            .iter()
            .zip(&fine.lumped_mass)
            .map(|(v, m)| *v * *m)
            .collect();
        let (tol, max) = (self.settings.cg_tolerance, self.settings.cg_max_iterations);
        for (rhs, (c_m, c_k), state) in [
            (self.prolongation.restrict(&ku), (0.0, 1.0), 0),
            (self.prolongation.restrict(&mv), (1.0, 0.0), 1),
        ] {
            let x = if state == 0 { &self.q } else { &self.v };
            let mut sc = Scratch::default();
            sc.resize(x.len());
            sc.b.copy_from_slice(&rhs);
            sc.known.copy_from_slice(&known);
            sc.x.copy_from_slice(x);
            let system =
                SystemCache::ensure(&mut sc.system, &self.system, MassKind::Consistent, c_m, c_k);
            let report = projected_pcg(&system, &mut sc, &[], tol, max, false);
            if report.converged && sc.x.iter().all(|x| x.is_finite()) {
                let x = if state == 0 { &mut self.q } else { &mut self.v };
                x.copy_from_slice(&sc.x);
            }
        }
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

/// `‖S − I‖_F` for the polar decomposition `F = R S`: with the SVD
/// `F = U Σ Vᵀ`, `S = V Σ Vᵀ`, so it is `√Σ(σᵢ − 1)²`; infinite for an
/// inverted or degenerate cell.
pub fn polar_strain(f: DMat3) -> f64 {
    if f.determinant() <= 1e-12 {
        return f64::INFINITY;
    }
    let sigma = crate::fem::element::to_nalgebra(f).singular_values();
    sigma.iter().map(|s| (s - 1.0).powi(2)).sum::<f64>().sqrt()
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
