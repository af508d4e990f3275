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
use crate::character::Character;
use crate::fem::{Lattice, joint_weights};
use crate::io::{MorphWeights, SkinnedMorphs, SkinnedTarget};
use crate::kinematics::PosedBody;
pub use crate::morph::MorphMesh as ModalMesh;
use crate::morph::unit_sum;
use glam::{DVec3, Vec3};

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
        // Per lattice vertex, its part's modes: (first mode, shapes).
        let mut lattice_modes: Vec<Option<(usize, &PartModes, usize)>> =
            vec![None; lattice.vertex_count()];
        for &(offset, part) in parts {
            for (k, &a) in part.free.iter().enumerate() {
                lattice_modes[a] = Some((offset, part, k));
            }
        }
        let rest: Vec<DVec3> = positions.iter().map(|p| p.as_dvec3()).collect();
        let embedding: Vec<_> = rest.iter().map(|&p| lattice.embed(p)).collect();
        // The modes each vertex's cell moves in.
        let own_span = |v: usize| -> Option<[usize; 2]> {
            let e = embedding[v].as_ref()?;
            lattice.cells[e.cell]
                .iter()
                .filter_map(|&a| lattice_modes[a])
                .map(|(o, p, _)| [o, o + p.omega.len()])
                .reduce(|a, b| [a[0].min(b[0]), a[1].max(b[1])])
        };
        let own: Vec<Option<[usize; 2]>> = (0..rest.len()).map(own_span).collect();
        // A normal turns with its faces' vertices: widen to the 1-ring.
        let mut ring = own.clone();
        let union = |a: Option<[usize; 2]>, b: Option<[usize; 2]>| match (a, b) {
            (Some(a), Some(b)) => Some([a[0].min(b[0]), a[1].max(b[1])]),
            (a, None) => a,
            (None, b) => b,
        };
        for t in triangles {
            let face = t.iter().fold(None, |acc, &v| union(acc, own[v as usize]));
            for &v in t {
                ring[v as usize] = union(ring[v as usize], face);
            }
        }
        let span: Vec<[u32; 2]> = ring
            .iter()
            .map(|r| r.map_or([0, 0], |[a, b]| [a as u32, (b - a) as u32]))
            .collect();
        let mut start = Vec::with_capacity(rest.len() + 1);
        start.push(0);
        for s in &span {
            start.push(start.last().unwrap() + s[1] as usize);
        }
        let total = *start.last().unwrap();
        let mut shape = vec![DVec3::ZERO; total];
        let mut skin = Vec::with_capacity(rest.len());
        for (v, &p) in rest.iter().enumerate() {
            if let Some(e) = &embedding[v] {
                for (&a, &w) in lattice.cells[e.cell].iter().zip(&e.weights) {
                    if let Some((offset, part, k)) = lattice_modes[a] {
                        for (i, s) in part.shapes.iter().enumerate() {
                            let at = start[v] + offset + i - span[v][0] as usize;
                            shape[at] += s[k] * w;
                        }
                    }
                }
            }
            skin.push(joint_weights(lattice, blend, p, embedding[v].as_ref()));
        }
        let mut normal = vec![DVec3::ZERO; rest.len()];
        let mut normal_shape = vec![DVec3::ZERO; total];
        let phi = |v: usize, i: usize| -> DVec3 {
            let [first, count] = span[v].map(|x| x as usize);
            if i >= first && i < first + count {
                shape[start[v] + i - first]
            } else {
                DVec3::ZERO
            }
        };
        for t in triangles {
            let [a, b, c] = t.map(|i| i as usize);
            let (ab, ac) = (rest[b] - rest[a], rest[c] - rest[a]);
            let face = ab.cross(ac);
            for v in [a, b, c] {
                normal[v] += face;
                // Every mode a face vertex moves in lies in v's span.
                let [first, count] = span[v].map(|x| x as usize);
                for i in first..first + count {
                    let (pa, pb, pc) = (phi(a, i), phi(b, i), phi(c, i));
                    normal_shape[start[v] + i - first] += (pb - pa).cross(ac) + ab.cross(pc - pa);
                }
            }
        }
        let joint_count = skin.iter().flatten().map(|e| e.0 + 1).max().unwrap_or(0);
        Self {
            rest,
            normal,
            skin,
            joint_count,
            modes,
            span,
            start,
            shape,
            normal_shape,
            triangles: triangles.to_vec(),
        }
    }
}

impl ModalMesh {
    /// This mesh as an export's skinned mesh with a morph target per mode
    /// (glTF): `parts` are the simulation's, each with the index of its
    /// first mode; target i is mode i at its clamp amplitude, so the
    /// animated weights stay in [−1, 1].
    pub fn morphs(&self, name: &str, parts: &[(usize, &PartModes)]) -> SkinnedMorphs {
        let unit: Vec<f64> = self.normal.iter().map(|n| n.length()).collect();
        let mut targets = Vec::with_capacity(self.modes);
        for &(offset, part) in parts {
            for (i, &scale) in part.limit.iter().enumerate() {
                let k = offset + i;
                targets.push(SkinnedTarget {
                    name: format!("{}_mode{i}", part.name),
                    positions: (0..self.rest.len())
                        .map(|v| (self.shape_of(v, k) * scale).as_vec3())
                        .collect(),
                    normals: (0..self.rest.len())
                        .map(|v| {
                            let n = unit[v];
                            if n > 0.0 {
                                (self.normal_shape_of(v, k) * (scale / n)).as_vec3()
                            } else {
                                Vec3::ZERO
                            }
                        })
                        .collect(),
                    scale: scale as f32,
                });
            }
        }
        SkinnedMorphs {
            name: name.to_string(),
            triangles: self.triangles.clone(),
            positions: self.rest.iter().map(|p| p.as_vec3()).collect(),
            normals: self
                .normal
                .iter()
                .map(|n| n.normalize_or(DVec3::Y).as_vec3())
                .collect(),
            joints: self.skin.iter().map(|s| s.map(|e| e.0 as u16)).collect(),
            weights: self.skin.iter().map(|s| unit_sum(s.map(|e| e.1))).collect(),
            targets,
            animated: MorphWeights::Amplitudes(
                parts.iter().map(|(_, p)| p.cache_record()).collect(),
            ),
        }
    }
}

/// Every muscle of `character` at rest as one closed mesh (world, m): what
/// modal flesh looks like without an embedded mesh, the layer the skin
/// slides over.
pub fn rest_muscles(character: &Character) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let body = PosedBody::new(character, &character.skeleton.rest_posture());
    let (mut positions, mut triangles) = (Vec::new(), Vec::new());
    for m in &body.muscles {
        let mesh = m.shape.tessellate(MUSCLE_SLICES, MUSCLE_STACKS);
        let base = positions.len() as u32;
        positions.extend(
            mesh.positions
                .iter()
                .map(|p| m.to_world.transform_point3(*p)),
        );
        triangles.extend(mesh.indices.iter().map(|t| t.map(|i| i + base)));
    }
    (positions, triangles)
}

/// Slices and stacks of an exported muscle's tessellation.
const MUSCLE_SLICES: usize = 24;
const MUSCLE_STACKS: usize = 16;
