//! The muscles riding on the FEM flesh: sample points filling each
//! muscle are embedded in the rest lattice; at any lattice displacement q the
//! muscle's frame follows their best rigid fit — the centroid's
//! displacement, and the rotation R of the polar decomposition `A = R S` of
//! their moment matrix `A = Σ (p − p̄)(x − x̄)ᵀ` (where the samples are too
//! few or flat, the local deformation gradient's at the centroid). Sampling
//! the volume matters: a muscle centred on its joint has its centre on a
//! bone, pinned, while its bulk jiggles. Muscles stay rigid shapes, so the
//! skin's distance tests against them are unchanged; flesh moving rigidly
//! with a muscle's bone puts the muscle exactly where the kinematic model
//! does.

use super::element::trilinear_gradients;
use super::lattice::{Embedding, Lattice, to_daffine};
use crate::character::{Character, Posture};
use crate::kinematics::forward_kinematics;
use crate::kinematics::{PosedBody, PosedMuscle};
use glam::{Affine3A, DAffine3, DMat3, DQuat, DVec3, Vec3};

/// A muscle as the flesh carries it.
#[derive(Clone, Debug)]
struct MuscleAnchor {
    joint: usize,
    /// Muscle frame in its joint's frame.
    local: DAffine3,
    /// Muscle frame in the world at rest.
    rest_frame: DAffine3,
    /// Sample points filling the muscle, embedded in the rest lattice (empty
    /// outside the lattice: the muscle rides rigidly), and their centroid.
    samples: Vec<Embedding>,
    rest_samples: Vec<DVec3>,
    rest_centroid: DVec3,
    /// The centroid in the rest lattice, for the local deformation gradient
    /// where the samples are too few or flat to fix a rotation.
    centroid_embedding: Option<Embedding>,
}

/// Sample points per axis of a muscle's bounding box.
const MUSCLE_SAMPLES: usize = 5;

/// Rest-world sample points inside a posed muscle (a grid over its local
/// bounding box, kept where the shape's inside; the centre if none is).
fn muscle_samples(m: &PosedMuscle) -> Vec<DVec3> {
    let half = m.local_box.unwrap_or(Vec3::splat(m.radius));
    let mut points = Vec::new();
    let n = MUSCLE_SAMPLES;
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let s = (Vec3::new(i as f32, j as f32, k as f32) + 0.5) / n as f32 * 2.0 - 1.0;
                let local = s * half;
                if m.shape.signed_distance(local) <= 0.0 {
                    points.push(m.to_world.transform_point3(local).as_dvec3());
                }
            }
        }
    }
    if points.is_empty() {
        points.push(m.center.as_dvec3());
    }
    points
}

/// Every muscle of a character, embedded in a lattice.
#[derive(Clone, Debug)]
pub struct MuscleCoupling {
    anchors: Vec<MuscleAnchor>,
}

impl MuscleCoupling {
    /// Embeds the sample points filling each of `character`'s muscles, placed at the rest
    /// posture, in the rest `lattice`.
    pub fn new(character: &Character, lattice: &Lattice) -> Self {
        let rest_body = PosedBody::new(character, &character.skeleton.rest_posture());
        let anchors = character
            .muscles
            .iter()
            .zip(&rest_body.muscles)
            .map(|(m, posed)| {
                let local = to_daffine(Affine3A::from_rotation_translation(m.rotation, m.offset));
                let points = muscle_samples(posed);
                let (samples, rest_samples): (Vec<Embedding>, Vec<DVec3>) = points
                    .iter()
                    .filter_map(|&p| Some((lattice.embed(p)?, p)))
                    .unzip();
                let rest_centroid =
                    rest_samples.iter().sum::<DVec3>() / rest_samples.len().max(1) as f64;
                MuscleAnchor {
                    centroid_embedding: lattice.embed(rest_centroid),
                    joint: m.joint,
                    local,
                    rest_frame: to_daffine(posed.to_world),
                    samples,
                    rest_samples,
                    rest_centroid,
                }
            })
            .collect();
        Self { anchors }
    }

    /// Each muscle's correction in its own frame (see
    /// [`FleshPose::muscle_offsets`](super::flesh::FleshPose)) for the lattice
    /// displacement `q`, the skeleton at `posture`.
    pub fn offsets(
        &self,
        lattice: &Lattice,
        character: &Character,
        posture: &Posture,
        q: &[DVec3],
    ) -> Vec<Affine3A> {
        let joints = forward_kinematics(&character.skeleton, posture);
        self.anchors
            .iter()
            .map(|m| {
                let Some(joint) = joints.get(m.joint) else {
                    return Affine3A::IDENTITY;
                };
                if m.samples.is_empty() {
                    return Affine3A::IDENTITY;
                }
                let rigid = to_daffine(*joint) * m.local;
                let l = lattice;
                let moved: Vec<DVec3> = m.samples.iter().map(|e| l.deform(e, q)).collect();
                let centroid = moved.iter().sum::<DVec3>() / moved.len() as f64;
                let c0 = m.rest_centroid;
                let mut a = DMat3::ZERO;
                for (x, p) in m.rest_samples.iter().zip(&moved) {
                    let x = *x - c0;
                    let d = *p - centroid;
                    a += DMat3::from_cols(d * x.x, d * x.y, d * x.z);
                }
                let bone_rotation = rigid.matrix3 * m.rest_frame.matrix3.inverse();
                let r = polar_rotation(a)
                    .or_else(|| {
                        let e = m.centroid_embedding.as_ref()?;
                        polar_rotation(deformation_at(lattice, e, q).1)
                    })
                    .unwrap_or(bone_rotation);
                // x ↦ p̄ + R (x − x̄), applied to the rest frame.
                let moved = DAffine3 {
                    matrix3: r * m.rest_frame.matrix3,
                    translation: centroid + r * (m.rest_frame.translation - c0),
                };
                let l = rigid.inverse() * moved;
                Affine3A::from_mat3_translation(l.matrix3.as_mat3(), l.translation.as_vec3())
            })
            .collect()
    }
}

/// Deformed position and deformation gradient F = `Σ_a` (`r_a` + `q_a`) ⊗ ∇φ^a
/// at an embedded point.
pub fn deformation_at(l: &Lattice, e: &Embedding, q: &[DVec3]) -> (DVec3, DMat3) {
    let cell = &l.cells[e.cell];
    // The local coordinates from the weights: s_x = Σ of the x = 1 corners.
    let s = DVec3::new(
        (0..8).filter(|c| c & 1 == 1).map(|c| e.weights[c]).sum(),
        (0..8).filter(|c| c & 2 == 2).map(|c| e.weights[c]).sum(),
        (0..8).filter(|c| c & 4 == 4).map(|c| e.weights[c]).sum(),
    );
    let grads = trilinear_gradients(s, l.cell_size);
    // Gradients against the cell's box coordinates; a conformed cell (a bone
    // snapped through it, §3.1 (ii)) is not that box at rest, so divide by
    // the rest map's Jacobian J: F = (∂x/∂X_box) J⁻¹ (J = I for a box).
    let mut f = DMat3::ZERO;
    let mut j = DMat3::ZERO;
    let mut p = DVec3::ZERO;
    for (k, &a) in cell.iter().enumerate() {
        let r = l.rest[a];
        let x = r + q[a];
        p += x * e.weights[k];
        f += DMat3::from_cols(x * grads[k].x, x * grads[k].y, x * grads[k].z);
        j += DMat3::from_cols(r * grads[k].x, r * grads[k].y, r * grads[k].z);
    }
    if j.determinant().abs() > 0.0 {
        f *= j.inverse();
    }
    (p, f)
}

/// The rotation R of the polar decomposition F = R S (R = U Vᵀ from
/// nalgebra's SVD F = U Σ Vᵀ), None for a degenerate or inverted F.
pub fn polar_rotation(f: DMat3) -> Option<DMat3> {
    // The rotation is invariant to scaling F: normalise, so the test for a
    // degenerate F does not depend on the muscle's size.
    let norm = f.to_cols_array().iter().map(|x| x * x).sum::<f64>().sqrt();
    if !(norm > 0.0 && (f * (1.0 / norm)).determinant() > 1e-9) {
        return None;
    }
    let svd = crate::fem::element::to_nalgebra(f).svd(true, true);
    let (u, v_t) = (svd.u?, svd.v_t?);
    let r = crate::fem::element::from_nalgebra(&(u * v_t));
    // Re-orthonormalise the last rounding away.
    Some(DMat3::from_quat(DQuat::from_mat3(&r).normalize()))
}
