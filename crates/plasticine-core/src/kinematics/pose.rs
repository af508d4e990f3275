//! The inner layers at one instant: the skeleton posed by forward kinematics and
//! its muscles placed in the world (riding on FEM flesh where the flesh pose's
//! muscle offsets say so). The skin, the flesh, the tools and the renderer
//! read this; none writes it (LEMAN §3.2: each layer depends only on the ones
//! inside it).

use super::forward_kinematics;
use crate::character::{Character, Posture};
use crate::shape::MuscleShape;
use glam::{Affine3A, Vec3};

/// A muscle placed in the world for one posture.
#[derive(Clone, Debug)]
pub struct PosedMuscle {
    /// The muscle's frame: muscle-local coordinates to world coordinates.
    pub to_world: Affine3A,
    /// Inverse of `to_world`: world coordinates to muscle-local coordinates.
    pub to_local: Affine3A,
    /// The shape with joint-angle drivers applied.
    pub shape: MuscleShape,
    /// Bounding sphere in the world (muscle frames are rigid, so the local
    /// bounding radius carries over).
    pub center: Vec3,
    /// Radius of the world bounding sphere around `center` (m).
    pub radius: f32,
    /// Local bounding box half-extents, where tighter than the sphere.
    pub local_box: Option<Vec3>,
}

/// Joints and muscles in the world at one instant.
#[derive(Clone, Debug)]
pub struct PosedBody {
    /// World transform of every joint, indexed like the skeleton's joints.
    pub joints: Vec<Affine3A>,
    /// Every muscle of the character placed in the world, in the character's order.
    pub muscles: Vec<PosedMuscle>,
}

impl PosedBody {
    /// The layers for a posture with every muscle kinematic (no flesh offsets).
    pub fn new(character: &Character, posture: &Posture) -> Self {
        Self::with_muscle_offsets(character, posture, &[])
    }

    /// The layers with muscle k's frame `W_joint · local · offsets[k]`
    /// (a missing offset is the identity: the kinematic muscle).
    pub fn with_muscle_offsets(
        character: &Character,
        posture: &Posture,
        offsets: &[Affine3A],
    ) -> Self {
        let joints = forward_kinematics(&character.skeleton, posture);
        let muscles = character
            .muscles
            .iter()
            .enumerate()
            .map(|(k, m)| {
                let mut to_world =
                    joints[m.joint] * Affine3A::from_rotation_translation(m.rotation, m.offset);
                if let Some(offset) = offsets.get(k) {
                    to_world *= *offset;
                }
                let shape = m.posed_shape(&posture.angles);
                PosedMuscle {
                    to_local: to_world.inverse(),
                    center: to_world.translation.into(),
                    radius: shape.bounding_radius(),
                    local_box: shape.bounding_box(),
                    to_world,
                    shape,
                }
            })
            .collect();
        Self { joints, muscles }
    }

    /// How deep point `p`, with fat thickness `fat`, lies inside the fat
    /// layer of the muscles `wrapped` (m, ≥ 0): 0 on or outside it.
    pub fn fat_depth(&self, fat: f32, wrapped: &[usize], p: Vec3) -> f32 {
        let mut worst = 0.0f32;
        for mu in wrapped.iter().map(|&q| &self.muscles[q]) {
            let local = mu.to_local.transform_point3(p);
            if local.length() > mu.radius + fat {
                continue;
            }
            let (g, _) = mu.shape.distance_and_normal(local, fat);
            worst = worst.max(fat - g);
        }
        worst
    }

    /// Whether a world sphere may touch the muscle: its bounding sphere, then
    /// (where known) its local bounding box.
    #[inline]
    pub fn may_touch(&self, muscle: usize, center: Vec3, radius: f32) -> bool {
        let m = &self.muscles[muscle];
        let reach = m.radius + radius;
        if (m.center - center).length_squared() > reach * reach {
            return false;
        }
        match m.local_box {
            Some(half) => {
                let c = m.to_local.transform_point3(center).abs();
                (c - half).max_element() <= radius
            }
            None => true,
        }
    }

    /// Signed distance estimate from a world point to the muscle layer (the
    /// minimum over muscles), with the index of the nearest muscle.
    pub fn distance_to_muscles(&self, p: Vec3) -> Option<(f32, usize)> {
        self.muscles
            .iter()
            .enumerate()
            .map(|(k, m)| (m.shape.signed_distance(m.to_local.transform_point3(p)), k))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    }

    /// Nearest hit of a world ray with the muscle layer: (t, muscle, world point).
    pub fn ray_cast(&self, origin: Vec3, dir: Vec3, max_t: f32) -> Option<(f32, usize, Vec3)> {
        let mut best: Option<(f32, usize, Vec3)> = None;
        for (k, m) in self.muscles.iter().enumerate() {
            // Cull by the bounding sphere first.
            let oc = m.center - origin;
            let along = oc.dot(dir);
            if oc.length_squared() - along * along > m.radius * m.radius {
                continue;
            }
            let o = m.to_local.transform_point3(origin);
            let d = m.to_local.transform_vector3(dir);
            if let Some(t) = m.shape.ray_intersect(o, d, max_t)
                && best.is_none_or(|b| t < b.0)
            {
                best = Some((t, k, origin + dir * t));
            }
        }
        best
    }
}
