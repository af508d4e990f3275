//! The wombat (LEMAN Figure 13).

use super::parts::{KeySpec, SkinSpec, joint, keys, material, sphere, upright};
use crate::character::{Character, Environment, Muscle, Skeleton};
use crate::shape::{BarrDeformation, MuscleShape};
use glam::{Quat, Vec2, Vec3};

/// The wombat of Figure 13: a horizontal body from tail to snout, bare legs.
pub(super) fn wombat() -> (Character, Vec<SkinSpec>) {
    let mut c = Character {
        name: "wombat".into(),
        skeleton: Skeleton {
            joints: vec![
                joint("hips", None, Vec3::new(0.0, 0.18, -0.12)),
                joint("tail", Some(0), Vec3::new(0.0, 0.0, -0.14)),
                joint("spine", Some(0), Vec3::new(0.0, 0.01, 0.13)),
                joint("shoulders", Some(2), Vec3::new(0.0, 0.0, 0.12)),
                joint("neck", Some(3), Vec3::new(0.0, 0.01, 0.08)),
                joint("head", Some(4), Vec3::new(0.0, 0.0, 0.08)),
                joint("snout", Some(5), Vec3::new(0.0, -0.02, 0.11)),
                joint("leg_fl", Some(3), Vec3::new(0.08, -0.09, 0.0)),
                joint("leg_fr", Some(3), Vec3::new(-0.08, -0.09, 0.0)),
                joint("leg_bl", Some(0), Vec3::new(0.08, -0.09, 0.0)),
                joint("leg_br", Some(0), Vec3::new(-0.08, -0.09, 0.0)),
            ],
        },
        muscles: vec![
            sphere(0, Vec3::ZERO, 0.13),
            Muscle {
                joint: 2,
                offset: Vec3::ZERO,
                rotation: Quat::IDENTITY,
                shape: MuscleShape::superellipsoid(
                    Vec3::new(0.13, 0.12, 0.12),
                    Vec2::new(0.8, 1.0),
                ),
                drivers: Vec::new(),
                color: None,
            },
            sphere(3, Vec3::new(0.0, 0.0, 0.0), 0.115),
            sphere(5, Vec3::new(0.0, 0.0, 0.02), 0.08),
            Muscle {
                joint: 5,
                offset: Vec3::new(0.0, -0.015, 0.09),
                rotation: Quat::IDENTITY,
                shape: MuscleShape::superellipsoid(
                    Vec3::new(0.045, 0.04, 0.045),
                    Vec2::new(0.8, 0.8),
                )
                .with_deformation(BarrDeformation {
                    taper: Vec2::new(-6.0, -6.0),
                    twist: 0.0,
                    bend: 0.0,
                }),
                drivers: Vec::new(),
                color: None,
            },
            upright(
                7,
                Vec3::new(0.0, -0.03, 0.0),
                Vec3::new(0.035, 0.035, 0.06),
                Vec2::new(0.7, 1.0),
            ),
            upright(
                8,
                Vec3::new(0.0, -0.03, 0.0),
                Vec3::new(0.035, 0.035, 0.06),
                Vec2::new(0.7, 1.0),
            ),
            upright(
                9,
                Vec3::new(0.0, -0.03, 0.0),
                Vec3::new(0.04, 0.04, 0.06),
                Vec2::new(0.7, 1.0),
            ),
            upright(
                10,
                Vec3::new(0.0, -0.03, 0.0),
                Vec3::new(0.04, 0.04, 0.06),
                Vec2::new(0.7, 1.0),
            ),
        ],
        skins: Vec::new(),
        flesh: Default::default(),
        environment: Environment::default(),
        key_postures: Vec::new(),
    };
    // A trot: the back rolls and bobs, the head swings, legs step.
    let bob = Vec3::new(0.0, 0.02, 0.0);
    let k: &[KeySpec] = &[
        (0.0, Vec3::ZERO, &[]),
        (
            0.4,
            bob,
            &[
                ("hips", Vec3::new(0.0, 0.0, 0.12)),
                ("spine", Vec3::new(0.08, 0.1, 0.0)),
                ("head", Vec3::new(0.2, 0.2, 0.0)),
                ("leg_fl", Vec3::new(0.5, 0.0, 0.0)),
                ("leg_br", Vec3::new(0.5, 0.0, 0.0)),
            ],
        ),
        (0.8, Vec3::ZERO, &[]),
        (
            1.2,
            bob,
            &[
                ("hips", Vec3::new(0.0, 0.0, -0.12)),
                ("spine", Vec3::new(0.08, -0.1, 0.0)),
                ("head", Vec3::new(0.2, -0.2, 0.0)),
                ("leg_fr", Vec3::new(0.5, 0.0, 0.0)),
                ("leg_bl", Vec3::new(0.5, 0.0, 0.0)),
            ],
        ),
        (1.6, Vec3::ZERO, &[]),
        (2.5, Vec3::ZERO, &[]),
    ];
    c.key_postures = keys(&c, k);
    c.key_postures[4].tension = 1.0;
    (c, vec![("body", "tail", "snout", material())])
}
