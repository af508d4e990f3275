//! A skinned mesh with morph targets, as a vertex stage (and glTF) draws
//! one: each vertex its rest position and normal, four joints with
//! weights, and per target a position offset `Φ̄_i` and a normal correction
//! `N_i`; at weights q and joint placements `T_j`
//!
//! p = `Σ_j` `w_j` `T_j` (p̂ + `Σ_i` `q_i` `Φ̄_i`),  n ∝ `Σ_j` `w_j` `R_j` (n̂ + `Σ_i` `q_i` `N_i`),
//!
//! the targets superposed *before* skinning (DyRT §4.2). Modal flesh's
//! vibration modes are such targets (`modal::mesh` builds them); the
//! renderer poses the mesh in one GPU pass (`render::morph`), and the CPU
//! sum here is its fallback and its test oracle. A [`MorphFrame`] is one
//! instant: the static mesh (shared) and that frame's placements and
//! weights, a few hundred bytes.

use glam::{DAffine3, DVec3, Vec3};
use rayon::prelude::*;
use std::sync::Arc;

/// Vertices per parallel task of the CPU superposition.
const PARALLEL_CHUNK: usize = 4096;

/// Joints per vertex, as a vertex stage and glTF's `JOINTS_0` take them.
pub const JOINTS_PER_VERTEX: usize = 4;

/// A skinned mesh with morph targets (see the module docs).
///
/// A vertex moves only in the modes of the parts whose lattice cells it
/// lies in (one part, two at a seam), so its `Φ̄` and `N` are stored over a
/// span of modes, not all of them: a 100k-vertex mesh with 8 parts of 16
/// modes holds 16–32 per vertex instead of 128.
#[derive(Clone, Debug, PartialEq)]
pub struct MorphMesh {
    /// Rest positions (world, m).
    pub rest: Vec<DVec3>,
    /// Rest normals, area-weighted and not normalised (the base of `N_i`).
    pub normal: Vec<DVec3>,
    /// Per vertex, four joints and their weights (summing to one; unused
    /// slots have weight zero).
    pub skin: Vec<[(usize, f64); JOINTS_PER_VERTEX]>,
    /// One more than the largest joint `skin` names: the placements a frame
    /// needs (kept so a frame is checked without reading every vertex).
    pub joint_count: usize,
    /// Targets (modal flesh: modes, over every part in the simulation's order).
    pub modes: usize,
    /// Per vertex, the first mode it moves in and how many follow.
    pub span: Vec<[u32; 2]>,
    /// Where vertex v's span starts in `shape` and `normal_shape`
    /// (`start[v + 1]` − `start[v]` = its span's length).
    pub start: Vec<usize>,
    /// `Φ̄` over each vertex's span, vertex after vertex.
    pub shape: Vec<DVec3>,
    /// `N` over each vertex's span, like `shape`.
    pub normal_shape: Vec<DVec3>,
    /// The mesh's triangles.
    pub triangles: Vec<[u32; 3]>,
}

impl MorphMesh {
    /// Vertex v's `Φ̄` and `N` over its span, and the span's first mode.
    pub fn modes_of(&self, v: usize) -> (usize, &[DVec3], &[DVec3]) {
        let r = self.start[v]..self.start[v + 1];
        (
            self.span[v][0] as usize,
            &self.shape[r.clone()],
            &self.normal_shape[r],
        )
    }

    /// Vertex v's offset along mode i (zero outside its span).
    pub fn shape_of(&self, v: usize, i: usize) -> DVec3 {
        let (first, s, _) = self.modes_of(v);
        i.checked_sub(first)
            .and_then(|k| s.get(k))
            .copied()
            .unwrap_or(DVec3::ZERO)
    }

    /// Vertex v's normal correction along mode i (zero outside its span).
    pub fn normal_shape_of(&self, v: usize, i: usize) -> DVec3 {
        let (first, _, n) = self.modes_of(v);
        i.checked_sub(first)
            .and_then(|k| n.get(k))
            .copied()
            .unwrap_or(DVec3::ZERO)
    }

    /// Vertex v's position and (unnormalised) normal before skinning for
    /// amplitudes `q`.
    fn unskinned(&self, v: usize, q: &[f64]) -> (DVec3, DVec3) {
        let (first, s, n) = self.modes_of(v);
        let q = &q[first..first + s.len()];
        let p = s.iter().zip(q).map(|(s, &q)| *s * q).sum::<DVec3>();
        let m = n.iter().zip(q).map(|(n, &q)| *n * q).sum::<DVec3>();
        (self.rest[v] + p, self.normal[v] + m)
    }

    /// Every vertex at amplitudes `q` with the joints at `joints` (rest →
    /// posed, per joint).
    pub fn positions(&self, joints: &[DAffine3], q: &[f64]) -> Vec<Vec3> {
        self.skinned(q, |v, (p, _)| self.skin_point(v, joints, p))
    }

    /// Every vertex's unit normal at amplitudes `q`, the joints at `joints`.
    pub fn normals(&self, joints: &[DAffine3], q: &[f64]) -> Vec<Vec3> {
        self.skinned(q, |v, (_, n)| self.skin_normal(v, joints, n))
    }

    /// Every vertex's position and unit normal, the targets summed once per
    /// vertex for both.
    pub fn posed(&self, joints: &[DAffine3], q: &[f64]) -> (Vec<Vec3>, Vec<Vec3>) {
        self.skinned(q, |v, (p, n)| {
            (
                self.skin_point(v, joints, p),
                self.skin_normal(v, joints, n),
            )
        })
        .into_iter()
        .unzip()
    }

    /// Vertex v's unskinned point `p` carried by its joints.
    fn skin_point(&self, v: usize, joints: &[DAffine3], p: DVec3) -> Vec3 {
        self.blend(v, |j, w| joints[j].transform_point3(p) * w)
            .as_vec3()
    }

    /// Vertex v's unskinned normal `n` turned by its joints, normalised.
    fn skin_normal(&self, v: usize, joints: &[DAffine3], n: DVec3) -> Vec3 {
        self.blend(v, |j, w| joints[j].transform_vector3(n) * w)
            .normalize_or_zero()
            .as_vec3()
    }

    /// `f(v, unskinned position and normal)` for every vertex, in parallel.
    fn skinned<T: Send>(
        &self,
        q: &[f64],
        f: impl Fn(usize, (DVec3, DVec3)) -> T + Sync + Send,
    ) -> Vec<T> {
        (0..self.rest.len())
            .into_par_iter()
            .with_min_len(PARALLEL_CHUNK)
            .map(|v| f(v, self.unskinned(v, q)))
            .collect()
    }

    /// Σ over vertex v's joints of `term(joint, weight)`.
    fn blend(&self, v: usize, term: impl Fn(usize, f64) -> DVec3) -> DVec3 {
        self.skin[v]
            .iter()
            .filter(|e| e.1 != 0.0)
            .map(|&(j, w)| term(j, w))
            .sum()
    }
}

/// A [`MorphMesh`] at one instant: the joints' placements (rest → posed)
/// and the target weights. The mesh is shared, so a frame is cheap to
/// publish; whoever draws it poses it (on the GPU, or [`positions`](Self::positions)).
#[derive(Clone, Debug, PartialEq)]
pub struct MorphFrame {
    /// The mesh, the same `Arc` from frame to frame while it is unchanged.
    pub mesh: Arc<MorphMesh>,
    /// Per joint, its placement rest → posed.
    pub joints: Vec<DAffine3>,
    /// Per target, its weight (modal flesh: the mode's amplitude).
    pub weights: Vec<f64>,
}

impl MorphFrame {
    /// Whether the weights and placements fit the mesh (one weight per
    /// target, a placement for every joint a vertex names): a frame that
    /// does not is not drawn.
    pub fn fits(&self) -> bool {
        self.weights.len() == self.mesh.modes && self.mesh.joint_count <= self.joints.len()
    }

    /// Every vertex posed (on the CPU).
    pub fn positions(&self) -> Vec<Vec3> {
        self.mesh.positions(&self.joints, &self.weights)
    }

    /// Every vertex's position and unit normal (on the CPU).
    pub fn posed(&self) -> (Vec<Vec3>, Vec<Vec3>) {
        self.mesh.posed(&self.joints, &self.weights)
    }
}

/// Weights as `f32` summing to one as exactly as `f32` allows (the rounding
/// put on the largest), as glTF asks of `WEIGHTS_0`.
pub fn unit_sum(w: [f64; JOINTS_PER_VERTEX]) -> [f32; JOINTS_PER_VERTEX] {
    let mut out = w.map(|w| w as f32);
    let rest: f32 = out[1..].iter().sum();
    out[0] = 1.0 - rest;
    out
}

/// The four largest weights, renormalised to sum to one.
pub fn four_largest(mut joints: Vec<(usize, f64)>) -> [(usize, f64); JOINTS_PER_VERTEX] {
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

    /// One vertex on joint 1, moving along x in target 0: the frame poses
    /// it; a frame whose weights or placements do not fit is refused
    /// instead of indexing past them.
    #[test]
    fn a_frame_poses_its_mesh_only_when_it_fits() {
        let mesh = Arc::new(MorphMesh {
            rest: vec![DVec3::new(0.0, 1.0, 0.0)],
            normal: vec![DVec3::Y],
            skin: vec![[(1, 1.0), (0, 0.0), (0, 0.0), (0, 0.0)]],
            joint_count: 2,
            modes: 1,
            span: vec![[0, 1]],
            start: vec![0, 1],
            shape: vec![DVec3::X * 0.5],
            normal_shape: vec![DVec3::ZERO],
            triangles: vec![],
        });
        let lift = DAffine3::from_translation(DVec3::Z);
        let frame = MorphFrame {
            mesh: mesh.clone(),
            joints: vec![DAffine3::IDENTITY, lift],
            weights: vec![2.0],
        };
        assert!(frame.fits());
        assert_eq!(frame.positions(), vec![Vec3::new(1.0, 1.0, 1.0)]);
        let short = MorphFrame {
            weights: vec![],
            ..frame.clone()
        };
        let one_joint = MorphFrame {
            joints: vec![lift],
            ..frame
        };
        assert!(!short.fits() && !one_joint.fits());
    }
}
