//! Bones on lattice edges (Capell §3.1 condition (ii), §4.1, §4.3):
//! "voxelize, conform, snap".
//!
//! Each bone takes a chain of lattice edges from the vertex nearest its head
//! to the (other) vertex nearest its tail, the cheapest path on the lattice's edge
//! graph when an edge costs its length times the mean distance of its ends
//! from the bone (plus a little length, so a bone on a grid line takes the
//! straight line). The chain's vertices are then moved ("conformed") onto
//! the bone, the ends onto the joints and the others at their projected
//! parameters, one at a time, each move kept
//! only while every cell touching the vertex stays valid: the Jacobian
//! determinant of its trilinear map, at the eight corners and the eight
//! Gauss points, at least [`MIN_JACOBIAN`] of the undistorted box's. Where
//! moving an interior vertex alone would spoil a cell (a short oblique bone
//! whose tail lies deep in a cell), the free interior vertices within two
//! edges of it are moved part-way too ([`super::conform`],
//! `Lattice::relax_move`) under the same guard over every cell they
//! touch. A vertex whose move still spoils a cell stays where it is and is
//! bound to the bone by distance (the fallback of [`Lattice::bind_bones`]):
//! so do the penguin's legs, whose tails lie inside the feet near
//! boundary vertices only, where a chain vertex would dent the lattice into
//! the flesh.
//!
//! The chain's vertices are the bone's vertices: they move rigidly with it
//! (eq. 17–18), so the flesh's displacement on a fully conformed bone is
//! exactly the bone's motion and `p_S` is linear along it (eq. 6).
//!
//! Conformed cells are no longer boxes: they are integrated isoparametrically
//! ([`HexElement::isoparametric`], [`conform_elements`]) and points are
//! embedded in them by inverting their trilinear map ([`invert_trilinear`]).

#[cfg(any(doc, test))]
use super::element::cell_jacobian;
#[cfg(test)]
use super::element::invert_trilinear;
use super::element::{CellElements, HexElement, corner_offset, gauss_points, trilinear_gradients};
use super::lattice::{Bone, BoneBinding, Lattice};
use glam::{DMat3, DVec3};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::OnceLock;

/// How many vertices nearest a bone's tail are tried as its chain's end.
const END_CANDIDATES: usize = 12;

/// The chain of one bone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoneChain {
    /// The chain's vertices, head to tail.
    pub vertices: Vec<usize>,
    /// How many of them now lie on the bone (moved there, or already on it).
    pub on_bone: usize,
    /// How many could not be moved without spoiling a cell (bound by
    /// distance instead).
    pub fell_back: usize,
    /// How many belonged to an earlier bone already (a shared joint).
    pub shared: usize,
    /// How many free vertices around the chain were moved part-way to make
    /// room for its vertices ([`super::conform`]).
    pub relaxed: usize,
}

/// What [`Lattice::snap_bones`] did, per bone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SnapReport {
    /// The chain of each bone, in bone order.
    pub chains: Vec<BoneChain>,
    /// The least Jacobian ratio over the conformed cells (1 if none).
    pub min_jacobian: f64,
}

/// The smallest `det J / |box|` of a cell's trilinear map over its eight
/// corners and eight Gauss points.
pub fn cell_quality(corners: &[DVec3; 8], box_volume: f64) -> f64 {
    cell_quality_until(corners, box_volume, |_| false)
}

/// [`cell_quality`], stopping at the first sample whose least ratio so far
/// `stop` accepts: exact when it accepts none, else at most that. The
/// lattice's conforming only compares qualities with a bound, and most of
/// the positions its pattern search tries fail at a sample or two.
pub(super) fn cell_quality_until(
    corners: &[DVec3; 8],
    box_volume: f64,
    stop: impl Fn(f64) -> bool,
) -> f64 {
    let mut least = f64::INFINITY;
    for g in quality_gradients() {
        let mut j = DMat3::ZERO;
        for (x, ga) in corners.iter().zip(g) {
            j += DMat3::from_cols(*x * ga.x, *x * ga.y, *x * ga.z);
        }
        least = least.min(j.determinant() / box_volume);
        if stop(least) {
            break;
        }
    }
    least
}

/// The trilinear shape functions' gradients at [`cell_quality`]'s samples
/// (the corners, then the Gauss points), computed once: the sums are those
/// of [`cell_jacobian`], term for term.
fn quality_gradients() -> &'static [[DVec3; 8]; 16] {
    static GRADIENTS: OnceLock<[[DVec3; 8]; 16]> = OnceLock::new();
    GRADIENTS.get_or_init(|| {
        let gauss = gauss_points(DVec3::ZERO, DVec3::ONE, DVec3::ONE);
        std::array::from_fn(|k| {
            let s = if k < 8 {
                let [a, b, c] = corner_offset(k);
                DVec3::new(a as f64, b as f64, c as f64)
            } else {
                gauss[k - 8].local
            };
            trilinear_gradients(s, DVec3::ONE)
        })
    })
}

/// The lattice's edge graph and the cells of each vertex.
pub(super) struct Topology<'a> {
    pub(super) adjacency: &'a [Vec<usize>],
    pub(super) cells_of: &'a [Vec<usize>],
}

/// The 12 edges of a cell as corner pairs.
fn cell_edges() -> impl Iterator<Item = (usize, usize)> {
    (0..8).flat_map(|c| {
        [1, 2, 4]
            .into_iter()
            .filter(move |bit| c & bit == 0)
            .map(move |bit| (c, c | bit))
    })
}

impl Lattice {
    /// Snaps `bones` to chains of lattice edges (module docs): conforms the
    /// chains' vertices onto the bones where the cells allow (Jacobian
    /// ratio ≥ `min_jacobian`) and binds every chain vertex to its bone.
    /// Earlier bones keep shared vertices (a joint); a chain passes through
    /// no other bone's vertex. A bone whose ends find no path binds the
    /// vertices nearest its ends and middle.
    pub fn snap_bones(&mut self, bones: Vec<Bone>, min_jacobian: f64) -> SnapReport {
        let n = self.vertex_count();
        let mut adjacency: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut cells_of: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (c, cell) in self.cells.iter().enumerate() {
            for &a in cell {
                cells_of[a].push(c);
            }
            for (i, j) in cell_edges() {
                let (a, b) = (cell[i], cell[j]);
                if !adjacency[a].contains(&b) {
                    adjacency[a].push(b);
                    adjacency[b].push(a);
                }
            }
        }
        let box_volume = self.cell_size.element_product();
        let h = self.cell_size.min_element();
        self.bone_of_vertex = vec![None; n];
        let mut report = SnapReport {
            chains: Vec::with_capacity(bones.len()),
            min_jacobian: 1.0,
        };
        for (bi, bone) in bones.iter().enumerate() {
            let nearest = |p: DVec3| {
                (0..n).min_by(|&x, &y| {
                    self.rest[x]
                        .distance(p)
                        .total_cmp(&self.rest[y].distance(p))
                })
            };
            let Some(start) = nearest(bone.head) else {
                break;
            };
            // The tail's own vertex, unless the bone is too short for an
            // edge (a fifth of a cell).
            // The tail's own vertex (unless the bone is too short for an
            // edge, a fifth of a cell): the nearest few to the tail are
            // tried in turn, the first whose chain conforms whole kept
            // (else the one with the fewest vertices left off the bone).
            let mut ends: Vec<usize> = (0..n)
                .filter(|&a| a != start && self.bone_of_vertex[a].is_none())
                .collect();
            ends.sort_by(|&x, &y| {
                self.rest[x]
                    .distance(bone.tail)
                    .total_cmp(&self.rest[y].distance(bone.tail))
            });
            ends.truncate(END_CANDIDATES);
            if bone.head.distance(bone.tail) < 0.2 * h || ends.is_empty() {
                ends = vec![start];
            }
            let saved = (self.rest.clone(), self.bone_of_vertex.clone());
            let topology = Topology {
                adjacency: &adjacency,
                cells_of: &cells_of,
            };
            // The best trial's chain and the lattice it left.
            let mut best: Option<(BoneChain, Vec<DVec3>, Vec<Option<usize>>)> = None;
            for &end in &ends {
                let path = self
                    .bone_path(&adjacency, bone, start, end, h)
                    .unwrap_or_else(|| vec![start, end]);
                let chain = self.conform_chain(bi, bone, &path, &topology, min_jacobian);
                let fell = chain.fell_back;
                if best
                    .as_ref()
                    .is_none_or(|(kept, _, _)| fell < kept.fell_back)
                {
                    let left = (self.rest.clone(), self.bone_of_vertex.clone());
                    best = Some((chain, left.0, left.1));
                }
                (self.rest, self.bone_of_vertex) = saved.clone();
                if fell == 0 {
                    break;
                }
            }
            let (chain, rest, bound) = best.expect("a bone has at least one end to try");
            (self.rest, self.bone_of_vertex) = (rest, bound);
            report.chains.push(chain);
            // A bone whose whole chain an earlier bone holds (shorter than
            // a cell, from a shared joint) binds the free vertices nearest
            // its ends and middle, so it drives some flesh.
            if !self.bone_of_vertex.contains(&Some(bi)) {
                for p in [bone.head, (bone.head + bone.tail) * 0.5, bone.tail] {
                    let free = (0..n).filter(|&a| self.bone_of_vertex[a].is_none());
                    if let Some(a) = free.min_by(|&x, &y| {
                        self.rest[x]
                            .distance(p)
                            .total_cmp(&self.rest[y].distance(p))
                    }) {
                        self.bone_of_vertex[a] = Some(bi);
                    }
                }
            }
        }
        for c in 0..self.cell_count() {
            if !self.is_box(c) {
                report.min_jacobian = report
                    .min_jacobian
                    .min(cell_quality(&self.cell_corners(c), box_volume));
            }
        }
        self.bones = bones;
        self.binding = BoneBinding::Snapped;
        report
    }

    /// Binds the vertices of `path` to bone `bi` (those no earlier bone
    /// holds) and moves each onto the bone where the cells allow, alone or
    /// with its free interior neighbours relaxed: the ends to the joints, the others
    /// to their projections (increasing along the bone, less than 0.9 cell
    /// from the grid).
    fn conform_chain(
        &mut self,
        bi: usize,
        bone: &Bone,
        path: &[usize],
        topology: &Topology,
        min_jacobian: f64,
    ) -> BoneChain {
        let cells_of = topology.cells_of;
        let box_volume = self.cell_size.element_product();
        let h = self.cell_size.min_element();
        let mut chain = BoneChain {
            vertices: path.to_vec(),
            ..BoneChain::default()
        };
        let d = bone.tail - bone.head;
        let len2 = d.length_squared();
        let mut last_t = f64::NEG_INFINITY;
        for (k, &a) in path.iter().enumerate() {
            if self.bone_of_vertex[a].is_some_and(|b| b != bi) {
                chain.shared += 1;
                continue;
            }
            self.bone_of_vertex[a] = Some(bi);
            let t = if k == 0 || len2 == 0.0 {
                0.0
            } else if k + 1 == path.len() {
                1.0
            } else {
                ((self.rest[a] - bone.head).dot(d) / len2).clamp(0.0, 1.0)
            };
            let target = bone.head + d * t;
            let grid = self.grid_position(a);
            let reachable = t > last_t && (target - grid).abs().max_element() < 0.9 * h;
            let ok = reachable
                && (self.try_move(a, target, &cells_of[a], box_volume, min_jacobian) || {
                    let moved = self.relax_move(a, target, topology, min_jacobian);
                    chain.relaxed += moved.unwrap_or(0);
                    moved.is_some()
                });
            if ok {
                chain.on_bone += 1;
                last_t = t;
            } else {
                chain.fell_back += 1;
            }
        }
        chain
    }

    /// Moves vertex `a` to `target` if every cell in `cells` keeps a
    /// Jacobian ratio ≥ `min_jacobian`; else leaves it.
    fn try_move(
        &mut self,
        a: usize,
        target: DVec3,
        cells: &[usize],
        box_volume: f64,
        min_jacobian: f64,
    ) -> bool {
        let old = self.rest[a];
        self.rest[a] = target;
        let valid = cells.iter().all(|&c| {
            cell_quality_until(&self.cell_corners(c), box_volume, |q| q < min_jacobian)
                >= min_jacobian
        });
        if !valid {
            self.rest[a] = old;
        }
        valid
    }

    /// The cheapest edge path from `start` to `end` (Dijkstra) through
    /// vertices no bone holds yet, an edge costing its length times (0.01 + mean distance of its ends from the
    /// bone in cells).
    fn bone_path(
        &self,
        adjacency: &[Vec<usize>],
        bone: &Bone,
        start: usize,
        end: usize,
        h: f64,
    ) -> Option<Vec<usize>> {
        let n = self.vertex_count();
        let mut dist = vec![f64::INFINITY; n];
        let mut prev = vec![usize::MAX; n];
        let mut heap = BinaryHeap::new();
        dist[start] = 0.0;
        heap.push(Reverse((Ordered(0.0), start)));
        while let Some(Reverse((Ordered(du), u))) = heap.pop() {
            if u == end {
                break;
            }
            if du > dist[u] {
                continue;
            }
            // The chain passes through no other bone's vertex.
            for &v in adjacency[u]
                .iter()
                .filter(|&&v| self.bone_of_vertex[v].is_none())
            {
                let (pu, pv) = (self.rest[u], self.rest[v]);
                let off = 0.5 * (bone.distance(pu) + bone.distance(pv)) / h;
                let dv = du + pu.distance(pv) * (0.01 + off);
                if dv < dist[v] {
                    dist[v] = dv;
                    prev[v] = u;
                    heap.push(Reverse((Ordered(dv), v)));
                }
            }
        }
        if !dist[end].is_finite() {
            return None;
        }
        let mut path = vec![end];
        let mut v = end;
        while v != start {
            v = prev[v];
            path.push(v);
        }
        path.reverse();
        Some(path)
    }
}

/// An f64 ordered by `total_cmp`, for the heap.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Ordered(f64);

impl Eq for Ordered {}

impl PartialOrd for Ordered {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The elements of a lattice whose conformed cells had their elements
/// computed on their grid boxes (`elements`, e.g. by
/// [`super::quadrature::object_elements`]): every cell that is no longer a
/// box gets the isoparametric element of its own corners over the same
/// reference rule (the whole box's Gauss points, or a cut cell's rule).
pub fn conform_elements(lattice: &Lattice, elements: &CellElements) -> CellElements {
    let size = lattice.cell_size;
    let mut partial = Vec::new();
    let own = (0..lattice.cell_count())
        .map(|c| {
            if lattice.is_box(c) {
                elements.own[c].map(|k| {
                    partial.push(elements.partial[k].clone());
                    partial.len() - 1
                })
            } else {
                let reference = &elements.get(c).quadrature;
                partial.push(HexElement::isoparametric(
                    size,
                    lattice.cell_corners(c),
                    reference,
                ));
                Some(partial.len() - 1)
            }
        })
        .collect();
    CellElements {
        full: elements.full.clone(),
        own,
        partial,
    }
}

/// The elements of a lattice whose cells are all inside the object: the
/// shared box element, and the isoparametric one of each conformed cell.
pub fn lattice_elements(lattice: &Lattice) -> CellElements {
    let uniform = CellElements::uniform(HexElement::new(lattice.cell_size), lattice.cell_count());
    conform_elements(lattice, &uniform)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fem::element::cell_point;

    /// A unit cube with corner 7 pulled in towards corner 0 and corner 1
    /// sheared: its least Jacobian ratio between 0.05 and 0.5 (asserted).
    fn skewed() -> [DVec3; 8] {
        let mut c: [DVec3; 8] = std::array::from_fn(|i| {
            let [a, b, d] = corner_offset(i);
            DVec3::new(a as f64, b as f64, d as f64)
        });
        c[7] = DVec3::new(0.7, 0.75, 0.65);
        c[1] = DVec3::new(1.1, 0.3, -0.2);
        c
    }

    #[test]
    fn the_trilinear_map_inverts_to_round_off_in_a_skewed_cell() {
        let c = skewed();
        let q = cell_quality(&c, 1.0);
        assert!(q > 0.05 && q < 0.5, "{q}");
        let mut worst = 0.0f64;
        for i in 0..=6 {
            for j in 0..=6 {
                for k in 0..=6 {
                    let s = DVec3::new(i as f64, j as f64, k as f64) / 6.0;
                    let back = invert_trilinear(&c, cell_point(&c, s)).expect("inside");
                    worst = worst.max((back - s).abs().max_element());
                }
            }
        }
        assert!(worst < 1e-10, "{worst}");
        // A point well outside is either not found or found outside [0, 1]³.
        let outside = invert_trilinear(&c, DVec3::new(3.0, -2.0, 0.5));
        assert!(outside.is_none_or(|s| s.min_element() < 0.0 || s.max_element() > 1.0));
    }

    #[test]
    fn a_box_is_a_unit_quality_cell() {
        let size = DVec3::new(0.3, 0.5, 0.7);
        let c: [DVec3; 8] = std::array::from_fn(|i| {
            let [a, b, d] = corner_offset(i);
            DVec3::new(a as f64, b as f64, d as f64) * size
        });
        assert!((cell_quality(&c, size.element_product()) - 1.0).abs() < 1e-14);
        let mut flipped = c;
        flipped.swap(0, 1);
        assert!(cell_quality(&flipped, size.element_product()) < 0.0);
    }

    /// The quality is the least det J / |box| over the corners and the
    /// Gauss points, each J the one `cell_jacobian` gives (bit for bit: the
    /// lattice's conforming must not change with the cached gradients), and
    /// stopping at a bound gives the exact quality above it and at most the
    /// bound below it.
    #[test]
    fn the_quality_is_the_least_jacobian_ratio_and_stops_only_below_its_bound() {
        let c = skewed();
        let gauss = gauss_points(DVec3::ZERO, DVec3::ONE, DVec3::ONE);
        let direct = (0..8)
            .map(|i| {
                let [a, b, d] = corner_offset(i);
                DVec3::new(a as f64, b as f64, d as f64)
            })
            .chain(gauss.iter().map(|p| p.local))
            .map(|s| cell_jacobian(&c, s).determinant())
            .fold(f64::INFINITY, f64::min);
        let q = cell_quality(&c, 1.0);
        assert_eq!(q.to_bits(), direct.to_bits(), "{q} vs {direct}");
        for bound in [-1.0, 0.5 * q, q, 0.9, 2.0] {
            let below = cell_quality_until(&c, 1.0, |v| v < bound);
            if q >= bound {
                assert_eq!(below.to_bits(), q.to_bits(), "bound {bound}");
            } else {
                assert!(below < bound, "bound {bound}: {below}");
            }
        }
    }
}
