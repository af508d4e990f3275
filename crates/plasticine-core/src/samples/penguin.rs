//! The penguin (LEMAN Figure 12).

use super::parts::{KeySpec, SkinSpec, joint, keys, material, sphere, upright};
use crate::character::{Character, Environment, Muscle, Skeleton};
use crate::shape::{BarrDeformation, MuscleShape};
use glam::{Quat, Vec2, Vec3};

/// The penguin of Figure 12: one skin over body and head, one per flipper.
pub(super) fn penguin() -> (Character, Vec<SkinSpec>) {
    let mut c = Character {
        name: "penguin".into(),
        skeleton: Skeleton {
            joints: vec![
                joint("base", None, Vec3::new(0.0, 0.06, 0.0)),
                joint("belly", Some(0), Vec3::new(0.0, 0.14, 0.0)),
                joint("chest", Some(1), Vec3::new(0.0, 0.15, 0.0)),
                joint("head", Some(2), Vec3::new(0.0, 0.14, 0.0)),
                joint("crown", Some(3), Vec3::new(0.0, 0.08, 0.0)),
                joint("flipper_l", Some(2), Vec3::new(0.15, 0.01, 0.0)),
                joint("flipper_l_tip", Some(5), Vec3::new(0.0, -0.17, 0.0)),
                joint("flipper_r", Some(2), Vec3::new(-0.15, 0.01, 0.0)),
                joint("flipper_r_tip", Some(7), Vec3::new(0.0, -0.17, 0.0)),
                joint("foot_l", Some(0), Vec3::new(0.05, -0.04, 0.04)),
                joint("foot_r", Some(0), Vec3::new(-0.05, -0.04, 0.04)),
            ],
        },
        muscles: vec![
            upright(
                1,
                Vec3::ZERO,
                Vec3::new(0.13, 0.12, 0.12),
                Vec2::new(0.9, 1.0),
            ),
            upright(
                2,
                Vec3::ZERO,
                Vec3::new(0.10, 0.09, 0.09),
                Vec2::new(1.0, 1.0),
            ),
            sphere(3, Vec3::new(0.0, 0.01, 0.0), 0.07),
            Muscle {
                joint: 3,
                offset: Vec3::new(0.0, 0.0, 0.09),
                rotation: Quat::IDENTITY,
                shape: MuscleShape::superellipsoid(
                    Vec3::new(0.026, 0.02, 0.045),
                    Vec2::new(1.0, 1.0),
                )
                .with_deformation(BarrDeformation {
                    taper: Vec2::new(-8.0, -8.0),
                    twist: 0.0,
                    bend: 0.0,
                }),
                drivers: Vec::new(),
                color: None,
            },
            upright(
                5,
                Vec3::new(0.0, -0.08, 0.0),
                Vec3::new(0.034, 0.048, 0.085),
                Vec2::new(1.0, 1.0),
            ),
            upright(
                7,
                Vec3::new(0.0, -0.08, 0.0),
                Vec3::new(0.034, 0.048, 0.085),
                Vec2::new(1.0, 1.0),
            ),
            sphere(9, Vec3::new(0.0, 0.0, 0.03), 0.035),
            sphere(10, Vec3::new(0.0, 0.0, 0.03), 0.035),
        ],
        skins: Vec::new(),
        environment: Environment::default(),
        flesh: Default::default(),
        key_postures: Vec::new(),
    };
    // A waddle: roll side to side with a bob, flippers flapping, the head
    // nodding; then a sudden stop at 2 s so the skin's follow-through shows.
    let roll = 0.22;
    let up = Vec3::new(0.0, 0.025, 0.0);
    let k: &[KeySpec] = &[
        (0.0, Vec3::ZERO, &[]),
        (
            0.5,
            up,
            &[
                ("base", Vec3::new(0.0, 0.0, roll)),
                ("head", Vec3::new(0.25, 0.0, 0.0)),
                ("flipper_l", Vec3::new(0.0, 0.0, 0.6)),
                ("flipper_r", Vec3::new(0.0, 0.0, -0.2)),
            ],
        ),
        (
            1.0,
            Vec3::ZERO,
            &[
                ("belly", Vec3::new(0.0, 0.0, 0.05)),
                ("head", Vec3::new(-0.15, 0.0, 0.0)),
            ],
        ),
        (
            1.5,
            up,
            &[
                ("base", Vec3::new(0.0, 0.0, -roll)),
                ("head", Vec3::new(0.25, 0.0, 0.0)),
                ("flipper_l", Vec3::new(0.0, 0.0, 0.2)),
                ("flipper_r", Vec3::new(0.0, 0.0, -0.6)),
            ],
        ),
        (2.0, Vec3::ZERO, &[]),
        (3.0, Vec3::ZERO, &[]),
    ];
    c.key_postures = keys(&c, k);
    c.key_postures[4].tension = 1.0; // stop dead: the skeleton halts, the skin does not
    (
        c,
        vec![
            ("body", "base", "crown", material()),
            ("flipper_l", "flipper_l", "flipper_l_tip", material()),
            ("flipper_r", "flipper_r", "flipper_r_tip", material()),
        ],
    )
}
