//! Self-intersection of a shape (Ma et al. §6 name inversion as the
//! method's limitation: springs of a self-intersecting target fold it
//! through itself). Rigs are warned about, not refused.

use glam::DVec3;
use std::collections::HashMap;

/// The first pair of triangles (sharing no vertex) that cross each other,
/// if any: an edge of one passes through the other.
pub fn first_self_intersection(x: &[DVec3], triangles: &[[u32; 3]]) -> Option<(usize, usize)> {
    if triangles.is_empty() {
        return None;
    }
    let corners = |t: usize| triangles[t].map(|i| x[i as usize]);
    // Bucket the triangles' boxes in cubes about twice the mean edge.
    let mean_edge = triangles
        .iter()
        .map(|t| x[t[0] as usize].distance(x[t[1] as usize]))
        .sum::<f64>()
        / triangles.len() as f64;
    let cell = (2.0 * mean_edge).max(f64::MIN_POSITIVE);
    let key = |p: DVec3| (p / cell).floor().as_i64vec3().to_array();
    let mut buckets: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
    for t in 0..triangles.len() {
        let c = corners(t);
        let (lo, hi) = (key(c[0].min(c[1]).min(c[2])), key(c[0].max(c[1]).max(c[2])));
        for i in lo[0]..=hi[0] {
            for j in lo[1]..=hi[1] {
                for k in lo[2]..=hi[2] {
                    buckets.entry([i, j, k]).or_default().push(t as u32);
                }
            }
        }
    }
    let mut found: Option<(usize, usize)> = None;
    for bucket in buckets.values() {
        for (n, &a) in bucket.iter().enumerate() {
            for &b in &bucket[n + 1..] {
                let (a, b) = (a.min(b) as usize, a.max(b) as usize);
                if found.is_some_and(|f| f <= (a, b)) {
                    continue;
                }
                let shared = triangles[a].iter().any(|v| triangles[b].contains(v));
                if !shared && triangles_cross(corners(a), corners(b)) {
                    found = Some((a, b));
                }
            }
        }
    }
    found
}

/// Whether an edge of either triangle passes through the other.
fn triangles_cross(a: [DVec3; 3], b: [DVec3; 3]) -> bool {
    (0..3).any(|k| segment_hits(a[k], a[(k + 1) % 3], b) || segment_hits(b[k], b[(k + 1) % 3], a))
}

/// Whether segment p–q crosses triangle t (Möller–Trumbore, strictly inside).
fn segment_hits(p: DVec3, q: DVec3, [a, b, c]: [DVec3; 3]) -> bool {
    let d = q - p;
    let (e1, e2) = (b - a, c - a);
    let h = d.cross(e2);
    let det = e1.dot(h);
    let scale = e1.length() * e2.length() * d.length();
    if det.abs() <= 1e-12 * scale {
        return false;
    }
    let s = p - a;
    let u = s.dot(h) / det;
    let qv = s.cross(e1);
    let v = d.dot(qv) / det;
    let t = e2.dot(qv) / det;
    u > 0.0 && v > 0.0 && u + v < 1.0 && t > 0.0 && t < 1.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::MuscleShape;

    #[test]
    fn a_sphere_is_clean_and_a_folded_one_is_caught() {
        let mesh = MuscleShape::sphere(0.1).tessellate(16, 12);
        let mut x: Vec<DVec3> = mesh.positions.iter().map(|p| p.as_dvec3()).collect();
        assert_eq!(first_self_intersection(&x, &mesh.indices), None);
        // Push the north pole through the south side.
        let north = x.len() - 1;
        x[north] = DVec3::new(0.0, 0.0, -0.2);
        assert!(first_self_intersection(&x, &mesh.indices).is_some());
    }
}
