//! A mesh drawn by modal flesh as DyRT draws it (§4, App. A): each vertex
//! its rest position and normal, four joints with weights, and per mode a
//! position offset `Φ̄_i` and a normal correction `N_i`; at any frame
//!
//! p = `Σ_j` `w_j` `T_j` (p̂ + `Σ_i` `q_i` `Φ̄_i`),  n ∝ `Σ_j` `w_j` `R_j` (n̂ + `Σ_i` `q_i` `N_i`),
//!
//! the modes superposed *before* skinning (§4.2), so a part's jiggle turns
//! with its bone. The same sum is what a glTF viewer computes from morph
//! targets and a skin, so an export of this mesh replays the bake.
//!
//! `Φ̄_i` is the lattice mode embedded at the vertex (trilinear in its cell,
//! [`Lattice::embed`]); the skinning weights are the flesh's region weights
//! interpolated the same way, the four largest kept and renormalised (what a
//! vertex stage and glTF's `JOINTS_0`/`WEIGHTS_0` hold). `N_i` is App. A's
//! linearised normal: with the vertex normal the area-weighted sum of its
//! faces' (b − a) × (c − a), its derivative along mode i is the sum of
//! (`Φ̄_b` − `Φ̄_a`) × (c − a) + (b − a) × (`Φ̄_c` − `Φ̄_a`).

use super::part::PartModes;
use crate::fem::Lattice;
use glam::{DAffine3, DVec3, Vec3};

/// Joints per vertex, as a vertex stage and glTF's `JOINTS_0` take them.
pub const JOINTS_PER_VERTEX: usize = 4;

/// A mesh riding modal flesh (see the module docs).
#[derive(Clone, Debug)]
pub struct ModalMesh {
    /// Rest positions (world, m).
    pub rest: Vec<DVec3>,
    /// Rest normals, area-weighted and not normalised (the base of `N_i`).
    pub normal: Vec<DVec3>,
    /// Per vertex, four joints and their weights (summing to one; unused
    /// slots have weight zero).
    pub skin: Vec<[(usize, f64); JOINTS_PER_VERTEX]>,
    /// Modes, over every part in the simulation's order.
    pub modes: usize,
    /// `Φ̄`, vertex-major: vertex v's offset along mode i at `v · modes + i`.
    pub shape: Vec<DVec3>,
    /// `N`, vertex-major like `shape`.
    pub normal_shape: Vec<DVec3>,
    /// The mesh's triangles.
    pub triangles: Vec<[u32; 3]>,
}

impl ModalMesh {
    /// Embeds `positions` (with `triangles`) in `lattice`, whose vertex a
    /// blends the bones `blend[a]` (bone index, weight); `parts` are the
    /// vibrating parts, each with the index of its first mode.
    pub fn new(
        lattice: &Lattice,
        blend: &[Vec<(usize, f64)>],
        parts: &[(usize, &PartModes)],
        positions: &[Vec3],
        triangles: &[[u32; 3]],
    ) -> Self {
        let modes: usize = parts.iter().map(|(_, p)| p.omega.len()).sum();
        // Per lattice vertex, its offset along every mode (zero where fixed).
        let mut lattice_shape = vec![DVec3::ZERO; lattice.vertex_count() * modes];
        for &(offset, part) in parts {
            for (i, shape) in part.shapes.iter().enumerate() {
                for (&a, phi) in part.free.iter().zip(shape) {
                    lattice_shape[a * modes + offset + i] = *phi;
                }
            }
        }
        let joint_of = |b: usize| lattice.bones[b].joint;
        let rest: Vec<DVec3> = positions.iter().map(|p| p.as_dvec3()).collect();
        let mut skin = Vec::with_capacity(rest.len());
        let mut shape = vec![DVec3::ZERO; rest.len() * modes];
        for (v, &p) in rest.iter().enumerate() {
            let mut joints: Vec<(usize, f64)> = Vec::new();
            let mut add = |j: usize, w: f64| match joints.iter_mut().find(|e| e.0 == j) {
                Some(e) => e.1 += w,
                None => joints.push((j, w)),
            };
            match lattice.embed(p) {
                Some(e) => {
                    for (&a, &w) in lattice.cells[e.cell].iter().zip(&e.weights) {
                        for &(b, wb) in &blend[a] {
                            add(joint_of(b), w * wb);
                        }
                        let from = &lattice_shape[a * modes..(a + 1) * modes];
                        for (s, phi) in shape[v * modes..(v + 1) * modes].iter_mut().zip(from) {
                            *s += *phi * w;
                        }
                    }
                }
                None => {
                    // Outside the flesh: rigid with the nearest lattice vertex.
                    let near = (0..lattice.vertex_count())
                        .min_by(|&a, &b| {
                            p.distance_squared(lattice.rest[a])
                                .total_cmp(&p.distance_squared(lattice.rest[b]))
                        })
                        .expect("a lattice has vertices");
                    for &(b, wb) in &blend[near] {
                        add(joint_of(b), wb);
                    }
                }
            }
            skin.push(four_largest(joints));
        }
        let mut normal = vec![DVec3::ZERO; rest.len()];
        let mut normal_shape = vec![DVec3::ZERO; rest.len() * modes];
        for t in triangles {
            let [a, b, c] = t.map(|i| i as usize);
            let (ab, ac) = (rest[b] - rest[a], rest[c] - rest[a]);
            let face = ab.cross(ac);
            for i in 0..modes {
                let (pa, pb, pc) = (
                    shape[a * modes + i],
                    shape[b * modes + i],
                    shape[c * modes + i],
                );
                let d = (pb - pa).cross(ac) + ab.cross(pc - pa);
                for v in [a, b, c] {
                    normal_shape[v * modes + i] += d;
                }
            }
            for v in [a, b, c] {
                normal[v] += face;
            }
        }
        Self {
            rest,
            normal,
            skin,
            modes,
            shape,
            normal_shape,
            triangles: triangles.to_vec(),
        }
    }

    /// Vertex v's position before skinning for amplitudes `q`.
    fn unskinned(&self, v: usize, q: &[f64]) -> DVec3 {
        let s = &self.shape[v * self.modes..(v + 1) * self.modes];
        self.rest[v] + s.iter().zip(q).map(|(s, &q)| *s * q).sum::<DVec3>()
    }

    /// Every vertex at amplitudes `q` with the joints at `joints` (rest →
    /// posed, per joint).
    pub fn positions(&self, joints: &[DAffine3], q: &[f64]) -> Vec<Vec3> {
        (0..self.rest.len())
            .map(|v| {
                let p = self.unskinned(v, q);
                self.skin[v]
                    .iter()
                    .filter(|e| e.1 != 0.0)
                    .map(|&(j, w)| joints[j].transform_point3(p) * w)
                    .sum::<DVec3>()
                    .as_vec3()
            })
            .collect()
    }

    /// Every vertex's unit normal at amplitudes `q`, the joints at `joints`.
    pub fn normals(&self, joints: &[DAffine3], q: &[f64]) -> Vec<Vec3> {
        (0..self.rest.len())
            .map(|v| {
                let s = &self.normal_shape[v * self.modes..(v + 1) * self.modes];
                let n = self.normal[v] + s.iter().zip(q).map(|(s, &q)| *s * q).sum::<DVec3>();
                self.skin[v]
                    .iter()
                    .filter(|e| e.1 != 0.0)
                    .map(|&(j, w)| joints[j].transform_vector3(n) * w)
                    .sum::<DVec3>()
                    .normalize_or_zero()
                    .as_vec3()
            })
            .collect()
    }
}

/// The four largest weights, renormalised to sum to one.
fn four_largest(mut joints: Vec<(usize, f64)>) -> [(usize, f64); JOINTS_PER_VERTEX] {
    joints.retain(|e| e.1 > 0.0);
    joints.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    joints.truncate(JOINTS_PER_VERTEX);
    let total: f64 = joints.iter().map(|e| e.1).sum();
    let mut out = [(0, 0.0); JOINTS_PER_VERTEX];
    for (o, (j, w)) in out.iter_mut().zip(joints) {
        *o = (j, if total > 0.0 { w / total } else { 0.0 });
    }
    if total <= 0.0 {
        // No flesh weight at all: ride the root.
        out[0] = (0, 1.0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_largest_keeps_the_heaviest_and_renormalises() {
        let w = four_largest(vec![(3, 0.1), (1, 0.4), (2, 0.2), (5, 0.05), (0, 0.25)]);
        let joints: Vec<usize> = w.iter().map(|e| e.0).collect();
        assert_eq!(joints, [1, 0, 2, 3]);
        let total: f64 = w.iter().map(|e| e.1).sum();
        assert!((total - 1.0).abs() < 1e-15);
        assert!((w[0].1 - 0.4 / 0.95).abs() < 1e-15);
        assert_eq!(
            four_largest(vec![]),
            [(0, 1.0), (0, 0.0), (0, 0.0), (0, 0.0)]
        );
    }
}
