//! The anchor (Ma et al. §3.4): a small rigid tetrahedron inside the base,
//! joined to the nearest vertices by springs, whose vertices are the
//! boundary condition so that every surface vertex moves freely. Each
//! target's anchor is found by the springs (the target's surface held), its
//! rigid motion from the base fitted, and a blend moves the anchor by the
//! interpolated motion.

use super::springs::{SpringClass, SpringSet, is_closed};
use crate::fem::MeshSolid;
use crate::fem::polar_rotation;
use glam::{DMat3, DQuat, DVec3};
use std::ops::Range;

/// Vertices each anchor vertex is joined to.
const ATTACHMENTS: usize = 16;

/// A rigid motion about a centre: p ↦ centre + translation + R (p − centre).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RigidMotion {
    /// The point the rotation turns about (the base anchor's centroid).
    pub centre: DVec3,
    /// The rotation.
    pub rotation: DQuat,
    /// Where the centre goes, relative to where it was.
    pub translation: DVec3,
}

impl RigidMotion {
    /// The identity about the origin.
    pub const IDENTITY: Self = Self {
        centre: DVec3::ZERO,
        rotation: DQuat::IDENTITY,
        translation: DVec3::ZERO,
    };

    /// Moves a point.
    pub fn apply(&self, p: DVec3) -> DVec3 {
        self.centre + self.translation + self.rotation * (p - self.centre)
    }

    /// The point this motion takes to `p`.
    pub fn invert(&self, p: DVec3) -> DVec3 {
        self.centre + self.rotation.inverse() * (p - self.centre - self.translation)
    }

    /// The least-squares rigid motion taking `from` onto `to` (Kabsch, the
    /// rotation as the polar factor of the cross-covariance), about the
    /// centroid of `from`.
    pub fn fit(from: &[DVec3], to: &[DVec3]) -> Self {
        let n = from.len().max(1) as f64;
        let cf = from.iter().sum::<DVec3>() / n;
        let ct = to.iter().sum::<DVec3>() / n;
        let mut cov = DMat3::ZERO;
        for (p, q) in from.iter().zip(to) {
            let (p, q) = (*p - cf, *q - ct);
            cov += DMat3::from_cols(q * p.x, q * p.y, q * p.z);
        }
        let rotation =
            polar_rotation(cov).map_or(DQuat::IDENTITY, |r| DQuat::from_mat3(&r).normalize());
        Self {
            centre: cf,
            rotation,
            translation: ct - cf,
        }
    }

    /// The blend of motions sharing one centre (the base's is the identity):
    /// Σ wᵢ tᵢ, and the rotations slerped when two shapes are weighted (the
    /// paper's T' = {slerp(I, R, α) | α t}), else their normalised weighted
    /// quaternion sum, signs aligned (more than two targets is not in the
    /// paper).
    pub fn blend(weights: &[f64], motions: &[Self]) -> Self {
        let centre = motions.first().map_or(DVec3::ZERO, |m| m.centre);
        let translation = weights
            .iter()
            .zip(motions)
            .map(|(w, m)| m.translation * *w)
            .sum();
        let active: Vec<usize> = (0..weights.len()).filter(|&i| weights[i] > 0.0).collect();
        let rotation = match active.as_slice() {
            [] => DQuat::IDENTITY,
            [i] => motions[*i].rotation,
            [i, j] => {
                let t = weights[*j] / (weights[*i] + weights[*j]);
                motions[*i].rotation.slerp(motions[*j].rotation, t)
            }
            _ => {
                let lead = active
                    .iter()
                    .copied()
                    .max_by(|&a, &b| weights[a].total_cmp(&weights[b]))
                    .map_or(DQuat::IDENTITY, |i| motions[i].rotation);
                let sum = active
                    .iter()
                    .fold(DQuat::from_xyzw(0.0, 0.0, 0.0, 0.0), |acc, &i| {
                        let q = motions[i].rotation;
                        let q = if q.dot(lead) < 0.0 { -q } else { q };
                        acc + q * weights[i]
                    });
                sum.normalize()
            }
        };
        Self {
            centre,
            rotation,
            translation,
        }
    }
}

/// Where the anchor sits among a model's vertices.
#[derive(Clone, Debug, PartialEq)]
pub struct Anchor {
    first: usize,
    count: usize,
}

impl Anchor {
    /// Places a regular tetrahedron inside the base (at the volume centroid,
    /// or the deepest inside point if that is outside), a third of the way
    /// to the surface in size, appends its vertices to `positions` and its
    /// springs (hard among themselves, internal to the nearest vertices) to
    /// `springs`.
    pub fn place(
        positions: &mut Vec<DVec3>,
        springs: &mut SpringSet,
        base: &[DVec3],
        triangles: &[[u32; 3]],
    ) -> Self {
        let (centre, depth) = deepest_centre(base, triangles);
        let size = depth / 3.0;
        let first = positions.len();
        let corners = [
            DVec3::new(1.0, 1.0, 1.0),
            DVec3::new(1.0, -1.0, -1.0),
            DVec3::new(-1.0, 1.0, -1.0),
            DVec3::new(-1.0, -1.0, 1.0),
        ];
        let others = positions.len();
        for c in corners {
            positions.push(centre + c * (size / 3f64.sqrt()));
        }
        let vertex = |k: usize| (first + k) as u32;
        springs.extend(
            (0..4).flat_map(|a| ((a + 1)..4).map(move |b| [vertex(a), vertex(b)])),
            SpringClass::Anchor,
        );
        let mut attach = Vec::new();
        for k in 0..4 {
            let near = nearest(positions[first + k], &positions[..others], ATTACHMENTS);
            attach.extend(near.into_iter().map(|i| [i, vertex(k)]));
        }
        springs.extend(attach, SpringClass::Internal);
        Self { first, count: 4 }
    }

    /// The anchor's vertices.
    pub fn vertices(&self) -> Range<usize> {
        self.first..self.first + self.count
    }

    /// The anchor's rigid motion from `base` to `shape` (§3.4 step 4),
    /// about the base anchor's centroid.
    pub fn motion(&self, base: &[DVec3], shape: &[DVec3]) -> RigidMotion {
        RigidMotion::fit(&base[self.vertices()], &shape[self.vertices()])
    }
}

/// The indices of the `count` points nearest `p` (all of them if fewer).
pub fn nearest(p: DVec3, points: &[DVec3], count: usize) -> Vec<u32> {
    let mut order: Vec<(f64, u32)> = points
        .iter()
        .enumerate()
        .map(|(i, q)| (q.distance_squared(p), i as u32))
        .collect();
    let count = count.min(order.len());
    if count > 0 && count < order.len() {
        order.select_nth_unstable_by(count - 1, |a, b| a.0.total_cmp(&b.0));
    }
    order[..count].iter().map(|&(_, i)| i).collect()
}

/// A point well inside the mesh and its distance to the surface: the volume
/// centroid if it is inside, else the deepest of a grid of inside points.
/// An open mesh has no inside: its vertex centroid, a twentieth of its size.
fn deepest_centre(base: &[DVec3], triangles: &[[u32; 3]]) -> (DVec3, f64) {
    let mean = base.iter().sum::<DVec3>() / base.len().max(1) as f64;
    let (lo, hi) = base.iter().fold(
        (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN)),
        |(lo, hi), &p| (lo.min(p), hi.max(p)),
    );
    let open = (mean, 0.05 * lo.distance(hi));
    if !is_closed(triangles) {
        return open;
    }
    let narrowed: Vec<glam::Vec3> = base.iter().map(|p| p.as_vec3()).collect();
    let Ok(solid) = MeshSolid::new(&narrowed, triangles) else {
        return open;
    };
    // Volume centroid: Σ over the triangles' tetrahedra with the origin.
    let (mut volume, mut moment) = (0.0, DVec3::ZERO);
    for t in triangles {
        let [a, b, c] = t.map(|i| base[i as usize]);
        let v = a.dot(b.cross(c)) / 6.0;
        volume += v;
        moment += (a + b + c) * (v / 4.0);
    }
    let centroid = if volume.abs() > 0.0 {
        moment / volume
    } else {
        mean
    };
    if solid.contains(centroid) {
        return (centroid, solid.distance(centroid));
    }
    let steps = 10;
    let mut best = open;
    best.1 = 0.0;
    for i in 0..steps {
        for j in 0..steps {
            for k in 0..steps {
                let f = DVec3::new(i as f64, j as f64, k as f64) + 0.5;
                let p = lo + (hi - lo) * f / steps as f64;
                if solid.contains(p) {
                    let d = solid.distance(p);
                    if d > best.1 {
                        best = (p, d);
                    }
                }
            }
        }
    }
    if best.1 > 0.0 { best } else { open }
}
