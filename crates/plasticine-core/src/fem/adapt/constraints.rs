//! Position constraints on the adaptive body (Capell §4.4 in the
//! hierarchical basis): a point `x_c` of the flesh held at a displacement
//! target, `Σ_α φ^α(x_c) q_α = d_c` over the active functions.
//!
//! Every function of the basis is trilinear on the cells of `K_J`, so with `x_c`
//! embedded in a `K_J` cell (corner weights `w_b`), `φ^α(x_c) = Σ_b w_b P_bα`:
//! the constraint's row is the embedding's weights times the rows of P. A
//! point lies in the support of at most eight functions per level, so the
//! row has at most 8·(J+1) entries. It is rebuilt from the current P at every
//! solve, so the constraint survives refinement and coarsening unchanged
//! (the field at `x_c` does not change when detail comes or goes with zero
//! coefficient). The solve projects CG onto the constraint set exactly as
//! [`super::super::solver`] does.

use super::{AdaptError, AdaptiveBody};
use crate::fem::lattice::Embedding;
use crate::fem::solver::{LocalConstraint, PositionConstraint};
use glam::DVec3;

impl AdaptiveBody {
    /// Holds the flesh point `point` (rest space) at the displacement
    /// `target`; the point is embedded in `K_J`. Returns the constraint's
    /// index in [`constraints`](Self::constraints).
    pub fn grab(&mut self, point: DVec3, target: DVec3) -> Result<usize, AdaptError> {
        if !(point.is_finite() && target.is_finite()) {
            return Err(AdaptError::GrabNotFinite { point, target });
        }
        let embedding = self
            .hierarchy
            .fine
            .embed(point)
            .ok_or(AdaptError::GrabOutside(point))?;
        self.constraints
            .push(PositionConstraint { embedding, target });
        Ok(self.constraints.len() - 1)
    }

    /// The displacement of the field `P q` at an embedded `K_J` point.
    pub fn displacement_at(&self, e: &Embedding) -> DVec3 {
        self.constraint_row(e)
            .iter()
            .map(|&(k, w)| self.q[k] * w)
            .sum()
    }

    /// How many active functions are nonzero at an embedded `K_J` point (at
    /// most 8·(J+1)).
    pub fn displacement_row_len(&self, e: &Embedding) -> usize {
        self.constraint_row(e).len()
    }

    /// `φ^α(x_c)` for the active functions α nonzero at the point, merged
    /// (DOF, value) pairs in DOF order.
    pub(super) fn constraint_row(&self, e: &Embedding) -> Vec<(usize, f64)> {
        let cell = &self.hierarchy.fine.cells[e.cell];
        let mut row: Vec<(usize, f64)> = Vec::with_capacity(8 * (self.adapt.levels as usize + 1));
        for (&b, &w) in cell.iter().zip(&e.weights) {
            if w == 0.0 {
                continue;
            }
            for &(k, phi) in &self.prolongation.rows[b] {
                row.push((k as usize, w * phi));
            }
        }
        row.sort_unstable_by_key(|&(k, _)| k);
        row.dedup_by(|next, kept| {
            if next.0 == kept.0 {
                kept.1 += next.1;
                true
            } else {
                false
            }
        });
        row.retain(|&(_, w)| w != 0.0);
        row
    }

    /// Checks the constraints against `K_J`: an embedding from another
    /// lattice, or a non-finite target, is an error.
    pub(super) fn check_constraints(&self) -> Result<(), AdaptError> {
        let cells = self.hierarchy.fine.cell_count();
        for (i, c) in self.constraints.iter().enumerate() {
            if c.embedding.cell >= cells {
                return Err(AdaptError::ConstraintCell {
                    index: i,
                    cell: c.embedding.cell,
                    cells,
                });
            }
            if !c.target.is_finite() || c.embedding.weights.iter().any(|w| !w.is_finite()) {
                return Err(AdaptError::ConstraintNotFinite(i));
            }
        }
        Ok(())
    }

    /// The constraints in DOF numbering, `value(constraint, its row)` the
    /// value of `Σ φ x` each asks for.
    pub(super) fn dof_constraints(
        &self,
        value: impl Fn(&PositionConstraint, &[(usize, f64)]) -> DVec3,
    ) -> Vec<LocalConstraint> {
        self.constraints
            .iter()
            .map(|c| {
                let support = self.constraint_row(&c.embedding);
                LocalConstraint {
                    value: value(c, &support),
                    support,
                }
            })
            .collect()
    }
}
