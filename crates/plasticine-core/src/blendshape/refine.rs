//! Long-spring splitting (Ma et al. §3.1: "to prevent springs with long
//! rest lengths we can also perform mesh refinement by inserting new
//! vertices. Those vertices have to be added to all the input shapes
//! correspondingly."). An edge longer than the limit in any shape is cut at
//! its midpoint in every shape, and each triangle on it in two (longest
//! first, so the triangles stay well shaped, as in Rivara's bisection);
//! the halves and the new edges to the opposite corners are cut again while
//! they are still too long. The new vertices come after the base's, which
//! keep their indices (pins, exports and files that name them still do).
//! Only the surface needs it: the internal springs are at most a couple of
//! grid spacings long by construction (`interior`).

use super::rig::BlendRig;
use glam::Vec3;
use std::collections::{BinaryHeap, HashMap};

/// Refinement refused: it would need more vertices than allowed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error(
    "splitting the edges longer than {longest} would make more than {limit} vertices; \
     ask for a longer limit"
)]
pub struct RefineError {
    /// The edge length asked for.
    pub longest: f32,
    /// The vertex limit.
    pub limit: usize,
}

/// An edge (its lower index first) and its longest length over the shapes,
/// ordered longest first, then by index, so the order never depends on a
/// hash map's.
#[derive(Clone, Copy, PartialEq)]
struct Long(f32, [u32; 2]);

impl Eq for Long {}

impl PartialOrd for Long {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Long {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0
            .total_cmp(&other.0)
            .then_with(|| other.1.cmp(&self.1))
    }
}

fn key(a: u32, b: u32) -> [u32; 2] {
    [a.min(b), a.max(b)]
}

/// Splits every edge of `rig` longer than `longest` in any of its shapes
/// (module docs), so that no spring along the surface is. Returns how many
/// vertices were added; refused, leaving the rig unchanged, if the result
/// would have more than `limit` vertices.
pub fn split_long_edges(
    rig: &mut BlendRig,
    longest: f32,
    limit: usize,
) -> Result<usize, RefineError> {
    let refused = RefineError { longest, limit };
    if !(longest.is_finite() && longest > 0.0) {
        return Err(refused);
    }
    let mut shapes: Vec<Vec<Vec3>> = std::iter::once(rig.base.clone())
        .chain(rig.targets.iter().map(|t| t.positions.clone()))
        .collect();
    let mut triangles = rig.triangles.clone();
    let length = |shapes: &[Vec<Vec3>], [a, b]: [u32; 2]| {
        shapes
            .iter()
            .map(|s| s[a as usize].distance(s[b as usize]))
            .fold(0.0f32, f32::max)
    };
    // Each edge's triangles.
    let mut faces: HashMap<[u32; 2], Vec<usize>> = HashMap::new();
    for (f, t) in triangles.iter().enumerate() {
        for k in 0..3 {
            faces.entry(key(t[k], t[(k + 1) % 3])).or_default().push(f);
        }
    }
    let mut queue: BinaryHeap<Long> = faces
        .keys()
        .map(|&e| Long(length(&shapes, e), e))
        .filter(|l| l.0 > longest)
        .collect();
    let original = rig.base.len();
    while let Some(Long(_, edge)) = queue.pop() {
        // Each edge is queued once, when it is made, and split edges never
        // come back (their halves hold the new vertex): never skipped on a
        // checked rig, but a key on no triangle has nothing to split.
        let Some(on) = faces.remove(&edge) else {
            continue;
        };
        if shapes[0].len() >= limit {
            return Err(refused);
        }
        let [a, b] = edge;
        let m = shapes[0].len() as u32;
        for s in &mut shapes {
            let mid = 0.5 * (s[a as usize] + s[b as usize]);
            s.push(mid);
        }
        let mut new_edges = vec![key(a, m), key(m, b)];
        for f in on {
            // The triangle as (p → q → c) with p → q along the edge in its
            // winding: it becomes (p, m, c) in place and (m, q, c) appended.
            let t = triangles[f];
            let k = (0..3)
                .find(|&k| key(t[k], t[(k + 1) % 3]) == edge)
                .expect("the triangle is on the edge");
            let (p, q, c) = (t[k], t[(k + 1) % 3], t[(k + 2) % 3]);
            let g = triangles.len();
            triangles[f] = [p, m, c];
            triangles.push([m, q, c]);
            faces.entry(key(p, m)).or_default().push(f);
            faces.entry(key(m, q)).or_default().push(g);
            faces.entry(key(m, c)).or_default().extend([f, g]);
            if let Some(list) = faces.get_mut(&key(q, c)) {
                for x in list.iter_mut().filter(|x| **x == f) {
                    *x = g;
                }
            }
            new_edges.push(key(m, c));
        }
        for e in new_edges {
            let l = length(&shapes, e);
            if l > longest {
                queue.push(Long(l, e));
            }
        }
    }
    let added = shapes[0].len() - original;
    let mut shapes = shapes.into_iter();
    rig.base = shapes.next().expect("the base");
    for (target, s) in rig.targets.iter_mut().zip(shapes) {
        target.positions = s;
    }
    rig.triangles = triangles;
    Ok(added)
}

/// The median length of the base's edges (each edge once).
pub fn median_edge(rig: &BlendRig) -> f32 {
    let mut lengths: Vec<f32> = rig
        .triangles
        .iter()
        .flat_map(|t| (0..3).map(move |k| key(t[k], t[(k + 1) % 3])))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|[a, b]| rig.base[a as usize].distance(rig.base[b as usize]))
        .collect();
    if lengths.is_empty() {
        return 0.0;
    }
    lengths.sort_by(f32::total_cmp);
    lengths[lengths.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::character::{BlendTarget, Boundary, SpringConstants};
    use crate::shape::{BarrDeformation, MuscleShape};
    use glam::Vec2;

    /// A coarse bar (four rings along its 0.6 m): side edges 0.2 m long
    /// against rings of 0.05 m edges, straight and bent by `angle`.
    fn coarse_bar(angle: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
        let shape = MuscleShape::superellipsoid(Vec3::new(0.06, 0.06, 0.3), Vec2::new(0.6, 1.0))
            .with_deformation(BarrDeformation {
                bend: angle / 0.6,
                ..Default::default()
            });
        let mesh = shape.tessellate(8, 4);
        (mesh.positions, mesh.indices)
    }

    fn coarse_rig() -> BlendRig {
        let (base, triangles) = coarse_bar(0.0);
        BlendRig {
            name: "coarse bar".into(),
            base,
            triangles,
            targets: vec![BlendTarget {
                name: "bent".into(),
                positions: coarse_bar(std::f32::consts::FRAC_PI_2).0,
            }],
            boundary: Boundary::Anchor,
            interior: true,
            constants: SpringConstants::default(),
        }
    }

    fn edges(triangles: &[[u32; 3]]) -> std::collections::BTreeSet<[u32; 2]> {
        triangles
            .iter()
            .flat_map(|t| (0..3).map(move |k| key(t[k], t[(k + 1) % 3])))
            .collect()
    }

    /// The signed volume the triangles enclose in `shape`.
    fn volume(shape: &[Vec3], triangles: &[[u32; 3]]) -> f64 {
        triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| shape[i as usize].as_dvec3());
                a.dot(b.cross(c)) / 6.0
            })
            .sum()
    }

    #[test]
    fn long_edges_are_split_in_every_shape_and_the_surface_stays_closed() {
        let before = coarse_rig();
        let longest = 0.05;
        let too_long = |rig: &BlendRig| {
            let shapes: Vec<&Vec<Vec3>> = std::iter::once(&rig.base)
                .chain(rig.targets.iter().map(|t| &t.positions))
                .collect();
            edges(&rig.triangles)
                .into_iter()
                .filter(|&[a, b]| {
                    shapes
                        .iter()
                        .any(|s| s[a as usize].distance(s[b as usize]) > longest)
                })
                .count()
        };
        assert!(too_long(&before) > 10, "the test bar has long edges");
        let mut rig = before.clone();
        let added = split_long_edges(&mut rig, longest, 10_000).expect("splits");
        assert!(added > 0 && rig.base.len() == before.base.len() + added);
        assert_eq!(too_long(&rig), 0, "an edge is still longer than the limit");
        assert!(super::super::springs::is_closed(&rig.triangles));
        // The base's vertices keep their places and indices; each shape's
        // surface is the same surface (a midpoint split keeps every
        // triangle's plane, so the volume is the same to rounding).
        let old_shapes = before.shapes();
        for (s, shape) in rig.shapes().iter().enumerate() {
            assert_eq!(shape[..before.base.len()], old_shapes[s][..], "shape {s}");
        }
        let shapes = std::iter::once(&rig.base).chain(rig.targets.iter().map(|t| &t.positions));
        let old = std::iter::once(&before.base).chain(before.targets.iter().map(|t| &t.positions));
        for (new, old) in shapes.zip(old) {
            let (v1, v0) = (volume(new, &rig.triangles), volume(old, &before.triangles));
            assert!((v1 - v0).abs() <= 1e-5 * v0.abs(), "volume {v1} vs {v0}");
        }
        // The refined rig builds, and weight one still gives the target.
        let mut model = super::super::BlendModel::new(&rig).expect("the refined rig builds");
        let blend = model.solve(&[0.0, 1.0], &rig).expect("solves");
        let target = &rig.shapes()[1];
        let worst = target
            .iter()
            .zip(&blend.positions)
            .map(|(a, b)| a.distance(*b))
            .fold(0.0, f64::max);
        assert!(worst <= 1e-9 * rig.diagonal(), "{worst:e} m off the target");
    }

    #[test]
    fn a_split_past_the_vertex_limit_is_refused_and_changes_nothing() {
        let before = coarse_rig();
        let mut rig = before.clone();
        let e = split_long_edges(&mut rig, 0.001, 1_000).expect_err("too many vertices");
        assert_eq!(e.limit, 1_000);
        assert_eq!(rig, before);
        for bad in [0.0, -1.0, f32::NAN] {
            assert!(split_long_edges(&mut rig, bad, 1_000).is_err());
        }
        assert_eq!(rig, before);
        // A limit no edge passes adds nothing.
        assert_eq!(split_long_edges(&mut rig, 10.0, 1_000), Ok(0));
        assert_eq!(rig, before);
    }
}
