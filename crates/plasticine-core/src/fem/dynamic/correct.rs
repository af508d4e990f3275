//! Position correction after a dynamic step (Galoppo eq. 3.21–3.22).
//!
//! The contact solve stops proxies sinking further, and its Baumgarte
//! term (`CORRECTION`) pushes a share of the depth out per step, so after a
//! hard landing a proxy can stay millimetres inside the ground for several
//! steps. The thesis instead detects again after the position update and
//! moves each colliding node out: for a pair of nodes i and j of local
//! stiffnesses `k_i`, `k_j`, node i moves by `δx_i = −k_j / (k_i + k_j) d n`
//! (3.21). Every obstacle here (the ground, the hand's capsule) is rigid,
//! `k_j = ∞`, so the flesh takes the whole depth: `δx_i = −d n`.
//!
//! A proxy is embedded in a lattice cell, so its move is spread over the
//! cell's free corners with the least-norm displacement that gives it,
//! `δq_a = φ_a δx / Σ_free φ_b²` (3.22's change to the body-frame
//! displacement, in the lattice's world frame). Corners that ride the core
//! (bone vertices) or are clamped stay: the core meets obstacles through
//! its own points. Only positions move; the velocities are the contact
//! solve's, so the correction adds no momentum.

use super::DynamicCore;
use crate::contact::Obstacle;
use crate::fem::lattice::{Embedding, Lattice};
use crate::fem::solver::FemBody;
use glam::DVec3;

/// Gauss–Seidel passes over the proxies still inside: a corner shared by
/// two proxies is moved for both.
pub(super) const PASSES: usize = 4;

/// A proxy whose free corners carry less of its weight than this rides the
/// core: moving them would take a lever of more than 1/φ; the core's own
/// contact points keep it out instead.
const MIN_FREE_WEIGHT: f64 = 0.25;

/// Moves the embedded point `e` by `dx`, spread over its cell's free
/// corners with the least-norm displacement that gives it (eq. 3.22).
/// False, and nothing moved, where its free corners carry less than
/// `MIN_FREE_WEIGHT` of it.
pub(super) fn move_point(
    lattice: &Lattice,
    q: &mut [DVec3],
    pinned: &[bool],
    e: &Embedding,
    dx: DVec3,
) -> bool {
    let corners = &lattice.cells[e.cell];
    let free = || corners.iter().zip(&e.weights).filter(|(a, _)| !pinned[**a]);
    let weight: f64 = free().map(|(_, w)| w).sum();
    if weight < MIN_FREE_WEIGHT {
        return false;
    }
    let norm: f64 = free().map(|(_, w)| w * w).sum();
    for (&a, &w) in free() {
        q[a] += dx * (w / norm);
    }
    true
}

impl DynamicCore {
    /// Moves every flesh proxy still inside an obstacle out to its surface
    /// (eq. 3.21–3.22), moving only the vertices that `pinned` leaves free.
    /// Returns the deepest penetration found before correcting (m, ≥ 0).
    pub(super) fn correct_positions(
        &self,
        body: &mut FemBody,
        pinned: &[bool],
        obstacles: &[Obstacle],
    ) -> f64 {
        let lattice = &body.lattice;
        let q = &mut body.q;
        let mut deepest = 0.0f64;
        for pass in 0..PASSES {
            // The proxies inside, found before any of them moves (so the
            // first pass measures every depth as the step left it).
            let mut inside = Vec::new();
            for (k, p) in self.proxies.iter().enumerate() {
                // The fat reaches at most its length past the embedded point.
                let x = lattice.deform(&p.embedding, q);
                for (i, o) in obstacles.iter().enumerate() {
                    if o.distance_normal(x).0 - p.fat.length() < 0.0 {
                        let d = o.distance_normal(self.proxy_position(lattice, q, p)).0;
                        if d < 0.0 {
                            if pass == 0 {
                                deepest = deepest.max(-d);
                            }
                            inside.push((k, i));
                        }
                    }
                }
            }
            let mut moved = false;
            for (k, i) in inside {
                let p = &self.proxies[k];
                // Where it is now: a corner it shares may have moved.
                let (d, n) = obstacles[i].distance_normal(self.proxy_position(lattice, q, p));
                if d >= 0.0 {
                    continue;
                }
                if !move_point(lattice, q, pinned, &p.embedding, n * -d) {
                    continue;
                }
                moved = true;
            }
            if !moved {
                break;
            }
        }
        deepest
    }
}
