//! The spring structure every shape of a rig shares (Ma et al. §3.1):
//! structure springs on the mesh's edges, bending springs from each vertex
//! to its 2-ring (the vertices two edges away), and whatever internal or
//! anchor springs the rig adds. One topology, a rest length per shape.

use glam::DVec3;
use std::collections::BTreeSet;

/// What a spring models; its class sets its stiffness constant (§3.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpringClass {
    /// A mesh edge: the surface's stretch.
    Structure,
    /// A vertex to one of its 2-ring: bending, the surface's curvature.
    Bending,
    /// Inside the solid: volume, so a large surface of small triangles does
    /// not crumple (§3.1).
    Internal,
    /// Between the anchor's vertices: hard, so the anchor stays rigid (§3.4).
    Anchor,
}

/// Springs as vertex pairs (`a < b`) with their classes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpringSet {
    /// The two vertices of each spring, lower index first.
    pub ends: Vec<[u32; 2]>,
    /// The class of each spring.
    pub class: Vec<SpringClass>,
}

impl SpringSet {
    /// Number of springs.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no springs.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Adds the springs of `pairs` not already present (either order).
    pub fn extend(&mut self, pairs: impl IntoIterator<Item = [u32; 2]>, class: SpringClass) {
        let mut seen: BTreeSet<[u32; 2]> = self.ends.iter().copied().collect();
        for [a, b] in pairs {
            let pair = [a.min(b), a.max(b)];
            if a != b && seen.insert(pair) {
                self.ends.push(pair);
                self.class.push(class);
            }
        }
    }

    /// The surface springs of a triangle mesh over `vertices` vertices:
    /// every edge (structure) and every pair two edges apart (bending).
    pub fn surface(vertices: usize, triangles: &[[u32; 3]]) -> Self {
        let neighbours = edge_neighbours(vertices, triangles);
        let mut springs = Self::default();
        springs.extend(
            neighbours.iter().enumerate().flat_map(|(a, ring)| {
                ring.iter()
                    .filter(move |&&b| b as usize > a)
                    .map(move |&b| [a as u32, b])
            }),
            SpringClass::Structure,
        );
        let mut bending = Vec::new();
        for (a, ring) in neighbours.iter().enumerate() {
            let second: BTreeSet<u32> = ring
                .iter()
                .flat_map(|&b| neighbours[b as usize].iter().copied())
                .filter(|&c| c as usize > a && !ring.contains(&c))
                .collect();
            bending.extend(second.into_iter().map(|c| [a as u32, c]));
        }
        springs.extend(bending, SpringClass::Bending);
        springs
    }

    /// Each spring's length in `positions`.
    pub fn lengths(&self, positions: &[DVec3]) -> Vec<f64> {
        self.ends
            .iter()
            .map(|&[a, b]| positions[a as usize].distance(positions[b as usize]))
            .collect()
    }

    /// For each vertex, its springs as (other end, spring index), sorted by
    /// the other end.
    pub fn incidence(&self, vertices: usize) -> Vec<Vec<(u32, u32)>> {
        let mut incident = vec![Vec::new(); vertices];
        for (s, &[a, b]) in self.ends.iter().enumerate() {
            incident[a as usize].push((b, s as u32));
            incident[b as usize].push((a, s as u32));
        }
        for row in &mut incident {
            row.sort_unstable();
        }
        incident
    }
}

/// The sorted edge neighbours of each vertex of a triangle mesh.
pub fn edge_neighbours(vertices: usize, triangles: &[[u32; 3]]) -> Vec<Vec<u32>> {
    let mut neighbours: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); vertices];
    for t in triangles {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            if a != b {
                neighbours[a as usize].insert(b);
                neighbours[b as usize].insert(a);
            }
        }
    }
    neighbours
        .into_iter()
        .map(|s| s.into_iter().collect())
        .collect()
}

/// Whether every edge of the mesh is shared by exactly two triangles (a
/// closed surface: an inside exists).
pub fn is_closed(triangles: &[[u32; 3]]) -> bool {
    let mut count = std::collections::HashMap::<[u32; 2], u32>::new();
    for t in triangles {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            *count.entry([a.min(b), a.max(b)]).or_default() += 1;
        }
    }
    !count.is_empty() && count.values().all(|&c| c == 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tetrahedron_has_six_structure_springs_and_no_bending() {
        let tris = [[0, 1, 2], [0, 3, 1], [1, 3, 2], [2, 3, 0]];
        let s = SpringSet::surface(4, &tris);
        assert_eq!(s.len(), 6);
        assert!(s.class.iter().all(|&c| c == SpringClass::Structure));
        assert!(is_closed(&tris));
        assert!(!is_closed(&tris[..3]));
    }

    #[test]
    fn a_strip_bends_each_vertex_to_its_second_neighbours() {
        // 0-1-2-3 along a strip of triangles: (0,1,4) (1,2,5) … with a top
        // row 4-5-6-7; vertex 0 reaches 2, 5 (via 1 or 4) at distance two.
        let tris = [
            [0, 1, 4],
            [1, 5, 4],
            [1, 2, 5],
            [2, 6, 5],
            [2, 3, 6],
            [3, 7, 6],
        ];
        let s = SpringSet::surface(8, &tris);
        let bending: BTreeSet<[u32; 2]> = s
            .ends
            .iter()
            .zip(&s.class)
            .filter(|(_, c)| **c == SpringClass::Bending)
            .map(|(e, _)| *e)
            .collect();
        assert!(bending.contains(&[0, 2]) && bending.contains(&[0, 5]));
        assert!(!bending.contains(&[0, 1]) && !bending.contains(&[0, 3]));
        // Every pair of vertices is either one spring or none.
        let all: BTreeSet<[u32; 2]> = s.ends.iter().copied().collect();
        assert_eq!(all.len(), s.len());
    }
}
