//! The pieces the samples are written with: joints, muscles standing along
//! a joint, key postures from short lists, and the skin material.

use crate::character::{Character, Dof, Joint, KeyPosture, Muscle, SkinMaterial};
use crate::shape::MuscleShape;
use glam::{Quat, Vec2, Vec3};
use std::f32::consts::FRAC_PI_2;

pub(super) fn joint(name: &str, parent: Option<usize>, offset: Vec3) -> Joint {
    Joint {
        locked: false,
        name: name.into(),
        parent,
        offset,
        rest_rotation: Quat::IDENTITY,
        dofs: [Dof::default(); 3],
    }
}

/// A superellipsoid whose north–south (z) axis points along the joint's +y.
pub(super) fn upright(joint: usize, offset: Vec3, radii: Vec3, exponents: Vec2) -> Muscle {
    Muscle {
        joint,
        offset,
        rotation: Quat::from_rotation_x(-FRAC_PI_2),
        shape: MuscleShape::superellipsoid(radii, exponents),
        drivers: Vec::new(),
        color: None,
    }
}

pub(super) fn sphere(joint: usize, offset: Vec3, radius: f32) -> Muscle {
    Muscle {
        joint,
        offset,
        rotation: Quat::IDENTITY,
        shape: MuscleShape::sphere(radius),
        drivers: Vec::new(),
        color: None,
    }
}

/// One key posture as written in the samples: time, root translation, and the
/// joints whose angles differ from rest.
pub(super) type KeySpec<'a> = (f32, Vec3, &'a [(&'a str, Vec3)]);

/// Key postures from (time, root translation, [(joint, angles)]) lists.
pub(super) fn keys(c: &Character, list: &[KeySpec]) -> Vec<KeyPosture> {
    list.iter()
        .map(|(t, root, angles)| {
            let mut p = c.skeleton.rest_posture();
            p.root_translation = *root;
            for (name, a) in angles.iter() {
                p.angles[c.skeleton.find(name).expect("sample joint")] = *a;
            }
            KeyPosture {
                time: *t,
                posture: p,
                tension: 0.0,
                continuity: 0.0,
                bias: 0.0,
            }
        })
        .collect()
}

/// (skin name, bottom joint, top joint, material).
pub type SkinSpec = (&'static str, &'static str, &'static str, SkinMaterial);

/// The default skin material of the samples: about 1 kg of skin per body part,
/// loose enough to jiggle, bands at ~3 Hz.
pub fn material() -> SkinMaterial {
    SkinMaterial::default()
}
