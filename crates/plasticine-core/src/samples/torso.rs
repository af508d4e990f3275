//! The torso (LEMAN Figure 14).

use super::parts::{KeySpec, SkinSpec, joint, keys, material, sphere, upright};
use crate::character::{
    Character, DeformationDriver, DeformationParam, Environment, Muscle, Skeleton,
};
use glam::{Vec2, Vec3};

/// The torso of Figure 14: pelvis to neck with chest, belly and shoulders;
/// arms with a biceps that bulges as the elbow flexes.
pub(super) fn torso() -> (Character, Vec<SkinSpec>) {
    let mut c = Character {
        name: "torso".into(),
        skeleton: Skeleton {
            joints: vec![
                joint("pelvis", None, Vec3::new(0.0, 0.0, 0.0)),
                joint("waist", Some(0), Vec3::new(0.0, 0.12, 0.0)),
                joint("chest", Some(1), Vec3::new(0.0, 0.16, 0.0)),
                joint("neck", Some(2), Vec3::new(0.0, 0.15, 0.0)),
                joint("shoulder_l", Some(2), Vec3::new(0.19, 0.09, 0.0)),
                joint("elbow_l", Some(4), Vec3::new(0.0, -0.27, 0.0)),
                joint("wrist_l", Some(5), Vec3::new(0.0, -0.25, 0.0)),
                joint("shoulder_r", Some(2), Vec3::new(-0.19, 0.09, 0.0)),
                joint("elbow_r", Some(7), Vec3::new(0.0, -0.27, 0.0)),
                joint("wrist_r", Some(8), Vec3::new(0.0, -0.25, 0.0)),
            ],
        },
        muscles: vec![
            upright(
                0,
                Vec3::new(0.0, 0.02, 0.0),
                Vec3::new(0.15, 0.1, 0.09),
                Vec2::new(0.8, 0.9),
            ),
            upright(
                1,
                Vec3::new(0.0, 0.03, 0.02),
                Vec3::new(0.13, 0.09, 0.1),
                Vec2::new(0.8, 1.0),
            ),
            upright(
                2,
                Vec3::new(0.07, 0.01, 0.04),
                Vec3::new(0.08, 0.06, 0.08),
                Vec2::new(0.8, 1.0),
            ),
            upright(
                2,
                Vec3::new(-0.07, 0.01, 0.04),
                Vec3::new(0.08, 0.06, 0.08),
                Vec2::new(0.8, 1.0),
            ),
            upright(
                2,
                Vec3::new(0.0, 0.03, -0.02),
                Vec3::new(0.15, 0.09, 0.12),
                Vec2::new(0.7, 1.0),
            ),
            upright(
                3,
                Vec3::new(0.0, 0.02, 0.0),
                Vec3::new(0.05, 0.05, 0.06),
                Vec2::new(1.0, 1.0),
            ),
            sphere(4, Vec3::ZERO, 0.06),
            sphere(7, Vec3::ZERO, 0.06),
            // Biceps: bulges (tapers) as the elbow bends.
            Muscle {
                drivers: vec![DeformationDriver {
                    param: DeformationParam::TaperX,
                    joint: 5,
                    axis: 0,
                    gain: -2.0,
                }],
                ..upright(
                    4,
                    Vec3::new(0.0, -0.14, 0.01),
                    Vec3::new(0.045, 0.045, 0.12),
                    Vec2::new(1.0, 1.0),
                )
            },
            Muscle {
                drivers: vec![DeformationDriver {
                    param: DeformationParam::TaperX,
                    joint: 8,
                    axis: 0,
                    gain: -2.0,
                }],
                ..upright(
                    7,
                    Vec3::new(0.0, -0.14, 0.01),
                    Vec3::new(0.045, 0.045, 0.12),
                    Vec2::new(1.0, 1.0),
                )
            },
            upright(
                5,
                Vec3::new(0.0, -0.12, 0.0),
                Vec3::new(0.035, 0.035, 0.11),
                Vec2::new(1.0, 1.0),
            ),
            upright(
                8,
                Vec3::new(0.0, -0.12, 0.0),
                Vec3::new(0.035, 0.035, 0.11),
                Vec2::new(1.0, 1.0),
            ),
        ],
        flesh: Default::default(),
        skins: Vec::new(),
        environment: Environment::default(),
        key_postures: Vec::new(),
    };
    // Bend and twist at the waist while the arms curl and swing.
    let k: &[KeySpec] = &[
        (0.0, Vec3::ZERO, &[]),
        (
            0.6,
            Vec3::ZERO,
            &[
                ("waist", Vec3::new(0.15, 0.3, 0.0)),
                ("elbow_l", Vec3::new(-1.2, 0.0, 0.0)),
                ("shoulder_r", Vec3::new(0.5, 0.0, 0.0)),
            ],
        ),
        (
            1.2,
            Vec3::ZERO,
            &[
                ("waist", Vec3::new(0.0, -0.3, 0.1)),
                ("elbow_r", Vec3::new(-1.2, 0.0, 0.0)),
                ("shoulder_l", Vec3::new(0.5, 0.0, 0.0)),
            ],
        ),
        (1.8, Vec3::ZERO, &[]),
        (2.6, Vec3::ZERO, &[]),
    ];
    c.key_postures = keys(&c, k);
    c.key_postures[3].tension = 1.0;
    (
        c,
        vec![
            ("torso", "pelvis", "neck", material()),
            ("arm_l", "shoulder_l", "wrist_l", material()),
            ("arm_r", "shoulder_r", "wrist_r", material()),
        ],
    )
}

/// DyRT's humanoid (§6) for the modal benchmark: the torso above standing
/// on two legs, with a head. Every joint with a child is a part, twelve in
/// all (LEMAN has no whole figure, so it is not a shipped sample).
pub(super) fn figure() -> (Character, Vec<SkinSpec>) {
    let (mut c, mut skins) = torso();
    c.name = "figure".into();
    let pelvis = 0;
    // Standing on the floor: the feet's ankles a few cm above it.
    c.skeleton.joints[pelvis].offset.y = 0.9;
    let neck = c.skeleton.find("neck").expect("torso joint");
    let mut add = |name: &str, parent: usize, offset: Vec3| {
        c.skeleton.joints.push(joint(name, Some(parent), offset));
        c.skeleton.joints.len() - 1
    };
    add("crown", neck, Vec3::new(0.0, 0.24, 0.0));
    let mut legs = Vec::new();
    for side in [1.0, -1.0] {
        let suffix = if side > 0.0 { "l" } else { "r" };
        let hip = add(
            &format!("hip_{suffix}"),
            pelvis,
            Vec3::new(0.09 * side, -0.07, 0.0),
        );
        let knee = add(&format!("knee_{suffix}"), hip, Vec3::new(0.0, -0.42, 0.0));
        add(&format!("ankle_{suffix}"), knee, Vec3::new(0.0, -0.40, 0.0));
        legs.push((hip, knee));
    }
    let joints = c.skeleton.joints.len();
    for key in &mut c.key_postures {
        key.posture.angles.resize(joints, Vec3::ZERO);
    }
    c.muscles
        .push(sphere(neck, Vec3::new(0.0, 0.13, 0.01), 0.09));
    for (hip, knee) in legs {
        // Thigh and calf, as the arm's biceps and forearm.
        c.muscles.push(upright(
            hip,
            Vec3::new(0.0, -0.21, 0.01),
            Vec3::new(0.07, 0.07, 0.2),
            Vec2::new(1.0, 1.0),
        ));
        c.muscles.push(upright(
            knee,
            Vec3::new(0.0, -0.19, -0.01),
            Vec3::new(0.05, 0.05, 0.18),
            Vec2::new(1.0, 1.0),
        ));
    }
    // The torso's keys with a step: one hip swings forward as its knee
    // bends, then the other.
    let steps: [&[(&str, Vec3)]; 5] = [
        &[],
        &[
            ("hip_l", Vec3::new(-0.5, 0.0, 0.0)),
            ("knee_l", Vec3::new(0.9, 0.0, 0.0)),
        ],
        &[
            ("hip_r", Vec3::new(-0.5, 0.0, 0.0)),
            ("knee_r", Vec3::new(0.9, 0.0, 0.0)),
        ],
        &[],
        &[],
    ];
    for (key, step) in c.key_postures.iter_mut().zip(steps) {
        for (name, angles) in step {
            let j = c.skeleton.find(name).expect("figure joint");
            key.posture.angles[j] = *angles;
        }
    }
    skins.push(("head", "neck", "crown", material()));
    skins.push(("leg_l", "hip_l", "ankle_l", material()));
    skins.push(("leg_r", "hip_r", "ankle_r", material()));
    (c, skins)
}
