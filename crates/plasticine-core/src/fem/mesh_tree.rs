//! An AABB tree over a triangle mesh (what the blendshape paper's SOLID
//! gives it, Ma et al. §4): the nearest surface point by branch and bound,
//! and the generalized winding number by Barill et al.'s far-field
//! expansion (*Fast Winding Numbers for Soups and Clouds*, 2018): a cluster
//! far from the query is one dipole with its second-order correction,
//! instead of a sum over its triangles. Both turn O(triangles) per query
//! into about O(log triangles), which is what an imported obstacle of tens
//! of thousands of triangles against thousands of blend vertices needs.

use glam::{DMat3, DVec3};

/// Triangles per leaf.
const LEAF: usize = 8;
/// A cluster whose centre is farther than `FAR` times its radius from the
/// query is summed by its expansion (Barill's β). The error of a far
/// cluster falls as (radius / distance)³ of its share; from deep inside a
/// closed mesh every cluster's share has one sign, so they add up: at 3 the
/// winding number is within 0.035 on the tests' meshes (0.065 at 2), far
/// inside the ½ an inside test needs.
const FAR: f64 = 3.0;

#[derive(Clone, Debug)]
struct Node {
    lo: DVec3,
    hi: DVec3,
    /// A leaf: its first triangle in `order`; an inner node: its second
    /// child (the first is the next node).
    first: u32,
    /// Triangles of a leaf; 0 for an inner node.
    count: u32,
    /// Area-weighted centroid of the cluster's triangles.
    centre: DVec3,
    /// Σ of the triangles' area vectors ½ (b − a) × (c − a).
    area: DVec3,
    /// Σ (centroid − centre) ⊗ area vector: the expansion's second term.
    spread: DMat3,
    /// The farthest triangle corner from `centre`.
    radius: f64,
}

/// The AABB tree of a triangle mesh.
#[derive(Clone, Debug, Default)]
pub struct TriangleTree {
    nodes: Vec<Node>,
    /// Triangle indices in leaf order.
    order: Vec<u32>,
}

impl TriangleTree {
    /// The tree of `triangles` over `positions` (indices already checked).
    pub fn new(positions: &[DVec3], triangles: &[[u32; 3]]) -> Self {
        let corners = |t: u32| triangles[t as usize].map(|i| positions[i as usize]);
        // Each triangle's centroid and area vector ½ (b − a) × (c − a),
        // once for every level of the build.
        let shapes: Vec<(DVec3, DVec3)> = (0..triangles.len() as u32)
            .map(|t| {
                let [a, b, c] = corners(t);
                ((a + b + c) / 3.0, 0.5 * (b - a).cross(c - a))
            })
            .collect();
        let mut tree = Self {
            nodes: Vec::with_capacity(2 * triangles.len() / LEAF + 1),
            order: (0..triangles.len() as u32).collect(),
        };
        if !triangles.is_empty() {
            tree.build(0, triangles.len(), &corners, &shapes);
        }
        tree
    }

    /// Builds the node of `order[start..end]`, returning its index.
    fn build(
        &mut self,
        start: usize,
        end: usize,
        corners: &impl Fn(u32) -> [DVec3; 3],
        shapes: &[(DVec3, DVec3)],
    ) -> usize {
        let tris = &self.order[start..end];
        let (mut lo, mut hi) = (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN));
        let (mut clo, mut chi) = (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN));
        let (mut area, mut weighted, mut total) = (DVec3::ZERO, DVec3::ZERO, 0.0);
        for &t in tris {
            let [a, b, c] = corners(t);
            lo = lo.min(a).min(b).min(c);
            hi = hi.max(a).max(b).max(c);
            let (centroid, n) = shapes[t as usize];
            clo = clo.min(centroid);
            chi = chi.max(centroid);
            area += n;
            weighted += centroid * n.length();
            total += n.length();
        }
        let centre = if total > 0.0 {
            weighted / total
        } else {
            tris.iter().map(|&t| shapes[t as usize].0).sum::<DVec3>() / tris.len() as f64
        };
        let mut spread = DMat3::ZERO;
        let mut radius: f64 = 0.0;
        for &t in tris {
            let (centroid, n) = shapes[t as usize];
            let d = centroid - centre;
            spread += DMat3::from_cols(d * n.x, d * n.y, d * n.z);
            let [a, b, c] = corners(t);
            radius = radius.max(
                a.distance(centre)
                    .max(b.distance(centre))
                    .max(c.distance(centre)),
            );
        }
        let index = self.nodes.len();
        self.nodes.push(Node {
            lo,
            hi,
            first: start as u32,
            count: (end - start) as u32,
            centre,
            area,
            spread,
            radius,
        });
        if end - start <= LEAF {
            return index;
        }
        // Split at the median centroid along the centroids' longest extent.
        let axis = (chi - clo).max_position();
        let mid = (start + end) / 2;
        self.order[start..end].select_nth_unstable_by(mid - start, |&x, &y| {
            shapes[x as usize].0[axis].total_cmp(&shapes[y as usize].0[axis])
        });
        self.build(start, mid, corners, shapes);
        let second = self.build(mid, end, corners, shapes);
        let node = &mut self.nodes[index];
        node.first = second as u32;
        node.count = 0;
        index
    }

    /// The surface point nearest `p` and the triangle it lies on (`None`
    /// for an empty tree).
    pub fn nearest(&self, p: DVec3, corners: impl Fn(u32) -> [DVec3; 3]) -> Option<(DVec3, u32)> {
        let mut best: Option<(DVec3, u32)> = None;
        let mut best_d2 = f64::INFINITY;
        let mut stack = Vec::with_capacity(64);
        if !self.nodes.is_empty() {
            stack.push(0usize);
        }
        while let Some(i) = stack.pop() {
            let node = &self.nodes[i];
            if box_distance2(p, node.lo, node.hi) >= best_d2 {
                continue;
            }
            if node.count > 0 {
                let (first, count) = (node.first as usize, node.count as usize);
                for &t in &self.order[first..first + count] {
                    let q = closest_point(p, corners(t));
                    let d2 = q.distance_squared(p);
                    if d2 < best_d2 {
                        best_d2 = d2;
                        best = Some((q, t));
                    }
                }
                continue;
            }
            // The nearer child is popped first.
            let (a, b) = (i + 1, node.first as usize);
            let da = box_distance2(p, self.nodes[a].lo, self.nodes[a].hi);
            let db = box_distance2(p, self.nodes[b].lo, self.nodes[b].hi);
            if da <= db {
                stack.push(b);
                stack.push(a);
            } else {
                stack.push(a);
                stack.push(b);
            }
        }
        best
    }

    /// The generalized winding number at `p` (see
    /// [`MeshSolid::winding_number`](super::MeshSolid::winding_number)),
    /// far clusters by their second-order expansion.
    pub fn winding_number(&self, p: DVec3, corners: impl Fn(u32) -> [DVec3; 3]) -> f64 {
        let mut omega = 0.0;
        let mut stack = Vec::with_capacity(64);
        if !self.nodes.is_empty() {
            stack.push(0usize);
        }
        while let Some(i) = stack.pop() {
            let node = &self.nodes[i];
            let r = node.centre - p;
            let d2 = r.length_squared();
            if d2 > (FAR * node.radius).powi(2) {
                // Σ_t A_t · f(c_t), f(x) = (x − p)/|x − p|³, expanded about
                // the centre to second order: A·f + tr(J_f C).
                let d = d2.sqrt();
                let inv3 = 1.0 / (d2 * d);
                let first = node.area.dot(r) * inv3;
                let c = &node.spread;
                let trace = c.x_axis.x + c.y_axis.y + c.z_axis.z;
                let second = trace * inv3 - 3.0 * r.dot(*c * r) * inv3 / d2;
                omega += first + second;
                continue;
            }
            if node.count > 0 {
                let (first, count) = (node.first as usize, node.count as usize);
                for &t in &self.order[first..first + count] {
                    omega += triangle_solid_angle(p, corners(t));
                }
                continue;
            }
            stack.push(i + 1);
            stack.push(node.first as usize);
        }
        omega / (4.0 * std::f64::consts::PI)
    }
}

/// The solid angle triangle `[a, b, c]` subtends at `p`, signed by its
/// orientation (Van Oosterom & Strackee).
pub fn triangle_solid_angle(p: DVec3, corners: [DVec3; 3]) -> f64 {
    let [a, b, c] = corners.map(|v| v - p);
    let (la, lb, lc) = (a.length(), b.length(), c.length());
    let num = a.dot(b.cross(c));
    let den = la * lb * lc + a.dot(b) * lc + b.dot(c) * la + c.dot(a) * lb;
    if num != 0.0 || den != 0.0 {
        2.0 * num.atan2(den)
    } else {
        0.0
    }
}

/// Squared distance from `p` to the box `[lo, hi]` (0 inside).
fn box_distance2(p: DVec3, lo: DVec3, hi: DVec3) -> f64 {
    let d = (lo - p).max(p - hi).max(DVec3::ZERO);
    d.length_squared()
}

/// The point of triangle `[a, b, c]` nearest `p`, or of its edges where it
/// has no area.
pub fn closest_point(p: DVec3, [a, b, c]: [DVec3; 3]) -> DVec3 {
    let (ab, ac) = (b - a, c - a);
    let n = ab.cross(ac);
    if n.length_squared() <= 1e-24 * ab.length_squared().max(ac.length_squared()).powi(2) {
        return [(a, b), (b, c), (c, a)]
            .map(|(u, v)| closest_on_segment(p, u, v))
            .into_iter()
            .min_by(|x, y| x.distance_squared(p).total_cmp(&y.distance_squared(p)))
            .unwrap_or(a);
    }
    closest_point_on_triangle(p, [a, b, c])
}

/// The point of triangle `[a, b, c]` nearest `p` (Ericson §5.1.5: the
/// vertex, edge or face region `p` projects into).
pub fn closest_point_on_triangle(p: DVec3, [a, b, c]: [DVec3; 3]) -> DVec3 {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return a + ab * (d1 / (d1 - d3));
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return a + ac * (d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 {
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
    }
    let denom = 1.0 / (va + vb + vc);
    a + ab * (vb * denom) + ac * (vc * denom)
}

fn closest_on_segment(p: DVec3, a: DVec3, b: DVec3) -> DVec3 {
    let ab = b - a;
    let t = ((p - a).dot(ab) / ab.length_squared().max(f64::MIN_POSITIVE)).clamp(0.0, 1.0);
    a + ab * t
}

#[cfg(test)]
mod tests {
    use super::{TriangleTree, closest_point, triangle_solid_angle};
    use crate::shape::{BarrDeformation, MuscleShape};
    use glam::{DVec3, Vec2, Vec3};
    use rand::{Rng, SeedableRng};

    /// A closed mesh and its tree.
    struct Solid {
        positions: Vec<DVec3>,
        triangles: Vec<[u32; 3]>,
        tree: TriangleTree,
        lo: DVec3,
        hi: DVec3,
    }

    impl Solid {
        fn corners(&self, t: u32) -> [DVec3; 3] {
            self.triangles[t as usize].map(|i| self.positions[i as usize])
        }
        fn exact_winding(&self, p: DVec3) -> f64 {
            let omega: f64 = (0..self.triangles.len() as u32)
                .map(|t| triangle_solid_angle(p, self.corners(t)))
                .sum();
            omega / (4.0 * std::f64::consts::PI)
        }
        fn brute_distance(&self, p: DVec3) -> f64 {
            (0..self.triangles.len() as u32)
                .map(|t| closest_point(p, self.corners(t)).distance(p))
                .fold(f64::INFINITY, f64::min)
        }
    }

    /// A closed, bent and twisted bar (not convex) and a sphere.
    fn solids() -> Vec<Solid> {
        let bar = MuscleShape::superellipsoid(Vec3::new(0.08, 0.06, 0.4), Vec2::new(0.7, 0.8))
            .with_deformation(BarrDeformation {
                bend: 3.0,
                twist: 0.8,
                ..Default::default()
            })
            .tessellate(40, 60);
        let ball = MuscleShape::sphere(0.1).tessellate(48, 32);
        [bar, ball]
            .into_iter()
            .map(|m| {
                let positions: Vec<DVec3> = m.positions.iter().map(|p| p.as_dvec3()).collect();
                let (lo, hi) = positions.iter().fold(
                    (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN)),
                    |(lo, hi), &p| (lo.min(p), hi.max(p)),
                );
                Solid {
                    tree: TriangleTree::new(&positions, &m.indices),
                    positions,
                    triangles: m.indices,
                    lo,
                    hi,
                }
            })
            .collect()
    }

    /// Points in and around the solid's box.
    fn probes(solid: &Solid, n: usize) -> Vec<DVec3> {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let margin = (solid.hi - solid.lo) * 0.2;
        (0..n)
            .map(|_| {
                let u = DVec3::new(rng.random(), rng.random(), rng.random());
                solid.lo - margin + (solid.hi - solid.lo + 2.0 * margin) * u
            })
            .collect()
    }

    #[test]
    fn the_tree_finds_the_same_nearest_point_as_every_triangle() {
        for solid in solids() {
            let size = solid.lo.distance(solid.hi);
            for p in probes(&solid, 400) {
                let brute = solid.brute_distance(p);
                let (q, t) = solid
                    .tree
                    .nearest(p, |t| solid.corners(t))
                    .expect("a point");
                assert!(
                    (q.distance(p) - brute).abs() <= 1e-12 * size,
                    "{p}: tree {} brute {brute}",
                    q.distance(p)
                );
                // The point is on the triangle named.
                assert!(closest_point(q, solid.corners(t)).distance(q) <= 1e-12 * size);
            }
        }
    }

    #[test]
    fn the_expanded_winding_number_matches_the_exact_sum() {
        for solid in solids() {
            let size = solid.lo.distance(solid.hi);
            let (mut worst, mut inside) = (0.0f64, 0);
            for p in probes(&solid, 400) {
                let exact = solid.exact_winding(p);
                let fast = solid.tree.winding_number(p, |t| solid.corners(t));
                worst = worst.max((fast - exact).abs());
                // Away from the surface (where the exact value is ½), the
                // inside test agrees with the exact number's.
                if solid.brute_distance(p) > 1e-3 * size {
                    assert_eq!(fast.abs() > 0.5, exact.abs() > 0.5, "{p}: {exact}");
                    inside += usize::from(exact.abs() > 0.5);
                }
            }
            assert!(worst < 0.05, "largest error {worst}");
            // The probes did test both sides.
            assert!(inside > 10 && inside < 390, "{inside} inside");
        }
    }
}
