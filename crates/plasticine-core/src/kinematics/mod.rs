//! Forward kinematics, joint limits and inverse kinematics (`ik`, the
//! posture tool of LEMAN §6.1).

mod ik;
mod pose;

pub use ik::{
    IkReport, IkSettings, IkSolver, IkTarget, chain_to_branch, demo_chain, demo_drag_target,
    solve_ik,
};

pub use pose::{PosedBody, PosedMuscle};

use crate::character::{Posture, Skeleton};
use glam::{Affine3A, Quat, Vec3};

/// Local rotation of a joint for its three angles: Rx · Ry · Rz.
pub fn joint_rotation(angles: Vec3) -> Quat {
    Quat::from_rotation_x(angles.x)
        * Quat::from_rotation_y(angles.y)
        * Quat::from_rotation_z(angles.z)
}

/// World transform of every joint for a posture. Angles are clamped to the
/// joints' limits (and locked DOFs held at zero).
pub fn forward_kinematics(skeleton: &Skeleton, posture: &Posture) -> Vec<Affine3A> {
    let mut world: Vec<Affine3A> = Vec::with_capacity(skeleton.joints.len());
    for (k, joint) in skeleton.joints.iter().enumerate() {
        let a = posture.angles.get(k).copied().unwrap_or(Vec3::ZERO);
        let a = clamp_angles(&joint.dofs, a);
        let rot = joint.rest_rotation * joint_rotation(a);
        let local = Affine3A::from_rotation_translation(rot, joint.offset);
        let w = match joint.parent {
            Some(p) => world[p] * local,
            None => Affine3A::from_translation(posture.root_translation) * local,
        };
        world.push(w);
    }
    world
}

/// `posture` with the root joint placed at the world frame `frame` (its
/// translation and its three angles; the other joints as they are).
pub fn posture_with_root(
    character: &crate::character::Character,
    posture: &Posture,
    frame: glam::DAffine3,
) -> Posture {
    let root = &character.skeleton.joints[0];
    let r = glam::DQuat::from_mat3(&frame.matrix3).normalize();
    let local = (root.rest_rotation.as_dquat().inverse() * r).normalize();
    let (x, y, z) = local.to_euler(glam::EulerRot::XYZ);
    let mut p = posture.clone();
    p.angles[0] = Vec3::new(x as f32, y as f32, z as f32);
    p.root_translation = (frame.translation - root.offset.as_dvec3()).as_vec3();
    p
}

/// [`posture_with_root`] for a root frame stored in single precision (a
/// cache's), or `posture` itself for none.
pub fn posture_with_stored_root(
    character: &crate::character::Character,
    posture: &Posture,
    root: Option<Affine3A>,
) -> Posture {
    match root {
        Some(r) => posture_with_root(
            character,
            posture,
            glam::DAffine3::from_cols_array(&r.to_cols_array().map(f64::from)),
        ),
        None => posture.clone(),
    }
}

/// A joint's three angles (rad) clamped to its DOF limits, locked DOFs held at zero.
pub fn clamp_angles(dofs: &[crate::character::Dof; 3], a: Vec3) -> Vec3 {
    Vec3::new(dofs[0].clamp(a.x), dofs[1].clamp(a.y), dofs[2].clamp(a.z))
}

/// The posture with every angle clamped to its joint's limits.
pub fn clamp_posture(skeleton: &Skeleton, posture: &Posture) -> Posture {
    Posture {
        root_translation: posture.root_translation,
        angles: skeleton
            .joints
            .iter()
            .zip(&posture.angles)
            .map(|(j, a)| clamp_angles(&j.dofs, *a))
            .collect(),
        blend: posture.blend.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::character::{Dof, Joint};
    use std::f32::consts::FRAC_PI_2;

    fn arm() -> Skeleton {
        let j = |name: &str, parent, offset| Joint {
            locked: false,
            name: name.into(),
            parent,
            offset,
            rest_rotation: Quat::IDENTITY,
            dofs: [Dof::default(); 3],
        };
        Skeleton {
            joints: vec![
                j("shoulder", None, Vec3::ZERO),
                j("elbow", Some(0), Vec3::X),
                j("wrist", Some(1), Vec3::X),
            ],
        }
    }

    #[test]
    fn rotating_the_shoulder_by_90_degrees_about_z_swings_the_arm_to_y() {
        let s = arm();
        let mut p = s.rest_posture();
        p.angles[0].z = FRAC_PI_2;
        let w = forward_kinematics(&s, &p);
        assert!((w[2].translation - glam::Vec3A::new(0.0, 2.0, 0.0)).length() < 1e-5);
        // Bending the elbow by another 90° folds the forearm back along −x.
        p.angles[1].z = FRAC_PI_2;
        let w = forward_kinematics(&s, &p);
        assert!((w[2].translation - glam::Vec3A::new(-1.0, 1.0, 0.0)).length() < 1e-5);
    }

    #[test]
    fn limits_clamp_angles_and_locked_dofs_stay_at_zero() {
        let mut s = arm();
        s.joints[1].dofs[2] = Dof {
            free: true,
            min: 0.0,
            max: 0.5,
        };
        s.joints[1].dofs[0] = Dof::LOCKED;
        let mut p = s.rest_posture();
        p.angles[1] = Vec3::new(1.0, 0.0, 2.0);
        let c = clamp_posture(&s, &p);
        assert_eq!(c.angles[1], Vec3::new(0.0, 0.0, 0.5));
    }
}
