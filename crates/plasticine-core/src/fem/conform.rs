//! Making room for a bone's chain (Capell §3.1 (ii), §4.1 "conform"): when
//! a chain vertex cannot be moved onto its bone alone without spoiling a
//! cell, the free vertices (no bone's) within two edges of it are moved
//! part-way too, by a pattern search that raises the least Jacobian ratio
//! of their cells (`Lattice::relax_move`).
//!
//! Only interior vertices move this way (all eight cells around them in
//! the lattice), the chain vertex too: the lattice's boundary stays put, so
//! the region the lattice covers, and the flesh it holds, do not change
//! (condition (iii) of §3.1; a boundary chain vertex moved onto a bone
//! inside the flesh would dent the lattice into it, as the penguin's legs
//! would: their tails lie 5 mm inside the feet, in a layer of cells one
//! thick whose vertices near the tails all lie on the boundary). Each free
//! vertex stays within 0.9 cell
//! of its grid place, so embedding still finds a point in the 27 cells
//! around its grid cell.

use super::lattice::Lattice;
use super::snap::{Topology, cell_quality_until};
use glam::DVec3;

/// The least Jacobian ratio [`Lattice::relax_move`] aims for (it stops
/// there: the cells need be no better).
const RELAX_GOAL: f64 = 0.5;

/// The most sweeps over the free vertices per step length in
/// [`Lattice::relax_move`].
const RELAX_SWEEPS: usize = 20;

/// How many edges from a chain vertex the free vertices lie that
/// [`Lattice::relax_move`] may move.
const RELAX_RINGS: usize = 2;

/// The step lengths of the pattern search in [`Lattice::relax_move`], in
/// cells.
const RELAX_STEPS: [f64; 5] = [0.2, 0.1, 0.05, 0.025, 0.0125];

/// The 26 directions of the pattern search: the faces, edges and corners of
/// a cube.
fn search_directions() -> impl Iterator<Item = DVec3> {
    (0..27).filter(|&i| i != 13).map(|i| {
        DVec3::new(
            (i % 3) as f64 - 1.0,
            ((i / 3) % 3) as f64 - 1.0,
            (i / 9) as f64 - 1.0,
        )
    })
}

impl Lattice {
    /// Moves interior chain vertex `a` to `target` when moving it alone
    /// would spoil a cell ("conforming its neighbours"): the free interior
    /// vertices within [`RELAX_RINGS`] edges of it are moved by a pattern
    /// search, each in turn to the step (of [`RELAX_STEPS`], along 26
    /// directions) that most raises the least Jacobian ratio of its own
    /// cells, staying within 0.9 cell of its grid place. Kept when every
    /// touched cell ends with a ratio ≥ `min_jacobian`, returning how many
    /// free vertices moved; else everything is put back and None returned
    /// (at once for a chain vertex on the lattice's boundary).
    pub(super) fn relax_move(
        &mut self,
        a: usize,
        target: DVec3,
        topology: &Topology,
        min_jacobian: f64,
    ) -> Option<usize> {
        if topology.cells_of[a].len() != 8 {
            return None;
        }
        let h = self.cell_size.min_element();
        let n = self.vertex_count();
        // The free interior vertices within RELAX_RINGS edges, nearest
        // first.
        let mut seen = vec![false; n];
        seen[a] = true;
        let mut frontier = vec![a];
        let mut free = Vec::new();
        for _ in 0..RELAX_RINGS {
            let mut next = Vec::new();
            for &u in &frontier {
                for &v in &topology.adjacency[u] {
                    if !seen[v] {
                        seen[v] = true;
                        next.push(v);
                        if self.bone_of_vertex[v].is_none() && topology.cells_of[v].len() == 8 {
                            free.push(v);
                        }
                    }
                }
            }
            frontier = next;
        }
        let saved: Vec<DVec3> = free.iter().map(|&v| self.rest[v]).collect();
        let old = self.rest[a];
        let mut cells: Vec<usize> = std::iter::once(a)
            .chain(free.iter().copied())
            .flat_map(|v| topology.cells_of[v].iter().copied())
            .collect();
        cells.sort_unstable();
        cells.dedup();
        self.rest[a] = target;
        for step in RELAX_STEPS {
            for _ in 0..RELAX_SWEEPS {
                if self.least_quality_until(&cells, |q| q < RELAX_GOAL) >= RELAX_GOAL {
                    break;
                }
                let mut improved = false;
                for &v in &free {
                    let own = &topology.cells_of[v];
                    let start = self.rest[v];
                    let grid = self.grid_position(v);
                    let (mut best, mut best_p) = (self.least_quality_until(own, |_| false), start);
                    for dir in search_directions() {
                        let p = start + dir * (step * h);
                        let offset = p - grid;
                        if offset.abs().max_element() >= 0.9 * h {
                            continue;
                        }
                        self.rest[v] = p;
                        let bar = best + 1e-12;
                        let q = self.least_quality_until(own, |q| q <= bar);
                        if q > bar {
                            (best, best_p) = (q, p);
                        }
                    }
                    self.rest[v] = best_p;
                    improved |= best_p != start;
                }
                if !improved {
                    break;
                }
            }
        }
        if self.least_quality_until(&cells, |q| q < min_jacobian) >= min_jacobian {
            Some(
                free.iter()
                    .zip(&saved)
                    .filter(|&(&v, p)| self.rest[v] != *p)
                    .count(),
            )
        } else {
            self.rest[a] = old;
            for (&v, &p) in free.iter().zip(&saved) {
                self.rest[v] = p;
            }
            None
        }
    }

    /// The least Jacobian ratio (`cell_quality`) over `cells`, stopping as
    /// soon as `stop` accepts the least so far: exact when it accepts none,
    /// else at most that (what a comparison with a bound needs).
    fn least_quality_until(&self, cells: &[usize], stop: impl Fn(f64) -> bool) -> f64 {
        let box_volume = self.cell_size.element_product();
        let mut least = f64::INFINITY;
        for &c in cells {
            least = least.min(cell_quality_until(&self.cell_corners(c), box_volume, |q| {
                stop(q.min(least))
            }));
            if stop(least) {
                break;
            }
        }
        least
    }
}
