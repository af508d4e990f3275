//! Where a wrapped skin's columns go: spread by the shape they land on, so
//! that a coarse grid turns evenly round a flat limb.
//!
//! The wrap starts from a spheroid with rows graded along its meridians and
//! columns at equal angles about its axis, and every point keeps where it
//! lands on the muscles. A flat muscle then gets its columns where its faces
//! are and few round its edges: at 16 around, a flipper's grid turned 12° per
//! column on its faces and 38° round its edges (the neighbour-normal angle the
//! smoothness measure reads), where a round limb turns 22.5° everywhere. A
//! [`Layout`] is measured on a first, coarse wrap and moves the start's
//! columns (per row) closer together where the grid would turn by more than
//! [`TURN`] per cell at the resolution asked for; the second wrap then lands
//! its points spread by curvature. A fine grid that turns gently everywhere
//! keeps the start's spacing (even cells, the longest stable step).
//!
//! Rows keep the start's grading. Spread by the meridians' turning as well,
//! a 16×16 arm's elbow smoothed (p95 36° → 27°), but a small sharp feature
//! drew rows and columns onto its tip and stood out as a spike (the
//! penguin's beak: up to 87–100° between neighbours, 42° before).

use super::elastic::Grid;
use glam::Vec3;
use std::f32::consts::TAU;

/// The turning per cell (radians, 10°) that needs no closer spacing.
pub const TURN: f32 = 0.1745;

/// A first wrap's turning round each of its rows.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The first wrap's rows' meridian parameters.
    rows_v: Vec<f32>,
    /// Per first-wrap row, the turning over each column interval (between
    /// equally spaced angles 2πi/m).
    around: Vec<Vec<f32>>,
}

impl Layout {
    /// Measures the turning round each row of a wrapped m×n grid whose rows
    /// sit at meridian parameters `rows_v` and columns at equal angles.
    pub fn measure(grid: &Grid, r: &[Vec3], rows_v: &[f32]) -> Self {
        let (m, n) = (grid.m, grid.n);
        let angle = |a: Vec3, b: Vec3| {
            let (a, b) = (a.normalize_or_zero(), b.normalize_or_zero());
            if a == Vec3::ZERO || b == Vec3::ZERO {
                0.0
            } else {
                a.dot(b).clamp(-1.0, 1.0).acos()
            }
        };
        let around = (0..n)
            .map(|j| {
                let p = |i: usize| r[grid.idx(i % m, j)];
                // Turning at each point of the ring.
                let turn: Vec<f32> = (0..m)
                    .map(|i| angle(p(i) - p(i + m - 1), p(i + 1) - p(i)))
                    .collect();
                // Each interval takes its two ends' turning, spread over the
                // neighbouring intervals, so that a narrow feature (a beak)
                // draws the columns near it closer rather than gathering
                // them onto its tip.
                (0..m)
                    .map(|i| {
                        let t = |k: usize| turn[(i + k) % m];
                        (t(m - 1) + 3.0 * t(0) + 3.0 * t(1) + t(2)) / 8.0
                    })
                    .collect()
            })
            .collect();
        Self {
            rows_v: rows_v.to_vec(),
            around,
        }
    }

    /// Angles about the axis of `m` columns on the row at meridian parameter
    /// `v`, each column interval an equal share.
    pub fn angles(&self, v: f32, m: usize) -> Vec<f32> {
        // The two first-wrap rows around v, blended.
        let k = self
            .rows_v
            .iter()
            .rposition(|&vk| vk <= v)
            .unwrap_or(0)
            .min(self.rows_v.len() - 2);
        let (v0, v1) = (self.rows_v[k], self.rows_v[k + 1]);
        let f = if v1 > v0 {
            ((v - v0) / (v1 - v0)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let turn: Vec<f32> = self.around[k]
            .iter()
            .zip(&self.around[k + 1])
            .map(|(a, b)| a + f * (b - a))
            .collect();
        let w = cumulative(&turn, m);
        let knots = w.len() - 1;
        let phi: Vec<f32> = (0..=knots).map(|i| TAU * i as f32 / knots as f32).collect();
        (0..m)
            .map(|i| invert(&w, &phi, i as f32 / m as f32))
            .collect()
    }
}

/// Cumulative shares (0 first, 1 last) of the first wrap's intervals, each
/// weighted by how many of the `cells` asked for it needs: its share of the
/// start's spacing, more where that share would turn by over [`TURN`].
fn cumulative(turn: &[f32], cells: usize) -> Vec<f32> {
    let scale = turn.len() as f32 / cells as f32 / TURN;
    let mut w = Vec::with_capacity(turn.len() + 1);
    let mut acc = 0.0f32;
    w.push(0.0);
    for t in turn {
        acc += (t * scale).max(1.0);
        w.push(acc);
    }
    for x in &mut w {
        *x /= acc;
    }
    w
}

/// The x where the piecewise-linear map from `x` to the increasing `w`
/// reaches `target`.
fn invert(w: &[f32], x: &[f32], target: f32) -> f32 {
    let k = w
        .iter()
        .rposition(|&wk| wk <= target)
        .unwrap_or(0)
        .min(w.len() - 2);
    let span = w[k + 1] - w[k];
    let f = if span > 0.0 {
        ((target - w[k]) / span).clamp(0.0, 1.0)
    } else {
        0.0
    };
    x[k] + f * (x[k + 1] - x[k])
}
