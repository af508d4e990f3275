//! Internal springs (Ma et al. §3.1): points inside a closed base and the
//! springs that join them to each other and to the surface, so that a large
//! surface of small triangles keeps its volume instead of crumpling.
//!
//! The paper tetrahedralizes the surface and interior points (constrained
//! Delaunay, `TetGen`) and takes the tetrahedra's edges. Here the interior
//! points are a grid inside the solid, at least half a spacing deep, and
//! each point inside is joined to its nearest neighbours among all points
//! (surface and inside): about the valence of a tetrahedralization's edges,
//! with no tetrahedralizer. Inside is decided by casting a ray along z
//! through each grid column and pairing its crossings with the surface.

use glam::DVec3;
use std::collections::HashMap;

/// Neighbours each interior point is joined to.
pub const INTERIOR_NEIGHBOURS: usize = 12;
/// Grid spacing of the interior points, in mean surface edge lengths.
pub const SPACING_EDGES: f64 = 2.0;

/// Points added inside the solid and springs among them and the surface.
/// Indices below the surface's vertex count are surface vertices; from it,
/// `points[i - surface]`.
#[derive(Clone, Debug, Default)]
pub struct Interior {
    /// The added points.
    pub points: Vec<DVec3>,
    /// The internal springs.
    pub springs: Vec<[u32; 2]>,
}

/// The interior of a closed mesh (its triangles wound either way).
pub fn interior(surface: &[DVec3], triangles: &[[u32; 3]]) -> Interior {
    let (edges, total) = triangles.iter().fold((0usize, 0.0), |(n, sum), t| {
        let [a, b, c] = t.map(|i| surface[i as usize]);
        (n + 3, sum + a.distance(b) + b.distance(c) + c.distance(a))
    });
    if edges == 0 {
        return Interior::default();
    }
    let h = SPACING_EDGES * total / edges as f64;
    let points = grid_inside(surface, triangles, h);
    let springs = nearest_springs(surface, &points, h);
    Interior { points, springs }
}

/// Grid points (spacing `h`) inside the surface and at least h/2 from every
/// surface vertex.
fn grid_inside(surface: &[DVec3], triangles: &[[u32; 3]], h: f64) -> Vec<DVec3> {
    let (lo, hi) = surface.iter().fold(
        (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN)),
        |(lo, hi), &p| (lo.min(p), hi.max(p)),
    );
    let count = ((hi - lo) / h).floor().as_uvec3() + 1;
    // Centre the grid in the box; an irrational nudge keeps rays off edges.
    let origin =
        (lo + hi) * 0.5 - (count.as_dvec3() - 1.0) * h * 0.5 + DVec3::new(0.0137, 0.0291, 0.0) * h;
    let vertices = SpatialHash::new(surface, h);
    let mut points = Vec::new();
    for i in 0..count.x {
        for j in 0..count.y {
            let (x, y) = (origin.x + f64::from(i) * h, origin.y + f64::from(j) * h);
            let mut crossings: Vec<f64> = triangles
                .iter()
                .filter_map(|t| ray_z(x, y, t.map(|v| surface[v as usize])))
                .collect();
            if crossings.len() < 2 {
                continue;
            }
            crossings.sort_by(f64::total_cmp);
            for k in 0..count.z {
                let z = origin.z + f64::from(k) * h;
                let below = crossings.partition_point(|&c| c < z);
                let p = DVec3::new(x, y, z);
                if below % 2 == 1 && vertices.nearest_distance(p, 0.5 * h) >= 0.5 * h {
                    points.push(p);
                }
            }
        }
    }
    points
}

/// Where the vertical line through (x, y) crosses the triangle, if it does.
fn ray_z(x: f64, y: f64, [a, b, c]: [DVec3; 3]) -> Option<f64> {
    let d = (b.x - a.x) * (c.y - a.y) - (c.x - a.x) * (b.y - a.y);
    if d.abs() <= f64::MIN_POSITIVE {
        return None;
    }
    let u = ((x - a.x) * (c.y - a.y) - (c.x - a.x) * (y - a.y)) / d;
    let v = ((b.x - a.x) * (y - a.y) - (x - a.x) * (b.y - a.y)) / d;
    (u >= 0.0 && v >= 0.0 && u + v < 1.0).then_some(a.z + u * (b.z - a.z) + v * (c.z - a.z))
}

/// Each interior point joined to its nearest neighbours among the surface
/// and interior points (indices: surface first, then interior).
fn nearest_springs(surface: &[DVec3], inside: &[DVec3], h: f64) -> Vec<[u32; 2]> {
    let all: Vec<DVec3> = surface.iter().chain(inside).copied().collect();
    let hash = SpatialHash::new(&all, h);
    let mut springs = Vec::new();
    for (k, &p) in inside.iter().enumerate() {
        let me = (surface.len() + k) as u32;
        let mut near = hash.within(p, 1.8 * h);
        near.retain(|&(_, i)| i != me);
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        springs.extend(
            near.iter()
                .take(INTERIOR_NEIGHBOURS)
                .map(|&(_, i)| [me.min(i), me.max(i)]),
        );
    }
    springs
}

/// Points bucketed in cubes of side `cell`.
struct SpatialHash<'a> {
    points: &'a [DVec3],
    cell: f64,
    buckets: HashMap<[i64; 3], Vec<u32>>,
}

impl<'a> SpatialHash<'a> {
    fn new(points: &'a [DVec3], cell: f64) -> Self {
        let mut buckets: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
        for (i, &p) in points.iter().enumerate() {
            buckets
                .entry(Self::key(p, cell))
                .or_default()
                .push(i as u32);
        }
        Self {
            points,
            cell,
            buckets,
        }
    }

    fn key(p: DVec3, cell: f64) -> [i64; 3] {
        (p / cell).floor().as_i64vec3().to_array()
    }

    /// (squared distance, index) of every point within `r` of `p`.
    fn within(&self, p: DVec3, r: f64) -> Vec<(f64, u32)> {
        let reach = (r / self.cell).ceil() as i64;
        let [x, y, z] = Self::key(p, self.cell);
        let mut out = Vec::new();
        for dx in -reach..=reach {
            for dy in -reach..=reach {
                for dz in -reach..=reach {
                    if let Some(bucket) = self.buckets.get(&[x + dx, y + dy, z + dz]) {
                        for &i in bucket {
                            let d = self.points[i as usize].distance_squared(p);
                            if d <= r * r {
                                out.push((d, i));
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// Distance to the nearest point, or `r` if none is within `r`.
    fn nearest_distance(&self, p: DVec3, r: f64) -> f64 {
        self.within(p, r)
            .iter()
            .map(|&(d, _)| d.sqrt())
            .fold(r, f64::min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::MuscleShape;

    #[test]
    fn a_sphere_is_filled_inside_and_nowhere_else() {
        let mesh = MuscleShape::sphere(0.1).tessellate(32, 24);
        let surface: Vec<DVec3> = mesh.positions.iter().map(|p| p.as_dvec3()).collect();
        let inside = interior(&surface, &mesh.indices);
        assert!(inside.points.len() > 50, "{} points", inside.points.len());
        // Every point inside the sphere, the grid's cubes fill most of it.
        assert!(inside.points.iter().all(|p| p.length() < 0.1));
        let cell = inside.points[0].distance(
            *inside.points[1..]
                .iter()
                .min_by(|a, b| {
                    a.distance(inside.points[0])
                        .total_cmp(&b.distance(inside.points[0]))
                })
                .expect("two points"),
        );
        let filled = inside.points.len() as f64 * cell.powi(3);
        let ball = 4.0 / 3.0 * std::f64::consts::PI * 0.1f64.powi(3);
        assert!(filled > 0.3 * ball && filled < ball, "{filled} of {ball}");
        // Each interior point has its neighbours; springs are valid pairs.
        let n = (surface.len() + inside.points.len()) as u32;
        assert!(inside.springs.iter().all(|&[a, b]| a < b && b < n));
        assert!(inside.springs.len() >= 6 * inside.points.len());
    }
}
