//! The sample characters shipped in `assets/` (LEMAN Figures 12–14: a penguin,
//! a wombat and a torso), built the way an animator would: joints, muscles,
//! skins wrapped between joints and left to shrink onto the muscles, a global
//! attach, and a few seconds of key postures that show follow-through.
//! `plasticine sample NAME --out FILE` regenerates an asset from this code.

use crate::character::{
    Character, DeformationDriver, DeformationParam, Dof, Environment, Flesh, Joint, KeyPosture,
    Muscle, Posture, Skeleton, SkinMaterial,
};
use crate::shape::{BarrDeformation, MuscleShape};
use crate::skin::attach::{global_attach, wrap_skin};
use crate::skin::{SimError, Simulation, SkeletonDriver, SolverSettings};
use glam::{Quat, Vec2, Vec3};
use std::f32::consts::FRAC_PI_2;

pub mod pick_scene;

pub const NAMES: [&str; 3] = ["penguin", "wombat", "torso"];

/// Builds a sample by name at the given skin resolution.
/// Sample `name` wrapped at 16×16 and resampled to m×n (LEMAN §6.5): the
/// same character at every resolution, quickly.
pub fn resampled(name: &str, m: usize, n: usize) -> Result<Character, SimError> {
    let mut c = build(name, 16, 16)?;
    if (m, n) != (16, 16) {
        for s in &mut c.skins {
            *s = crate::character::resample::resample(s, m, n).map_err(SimError::Settings)?;
        }
    }
    Ok(c)
}

pub fn build(name: &str, m: usize, n: usize) -> Result<Character, SimError> {
    build_with_flesh(name, m, n, Flesh::Kinematic)
}

/// Builds a sample with the given flesh backend: its skins settle on that
/// flesh (FEM flesh sags a little under gravity).
pub fn build_with_flesh(
    name: &str,
    m: usize,
    n: usize,
    flesh: Flesh,
) -> Result<Character, SimError> {
    let (mut c, skins) = match name {
        "penguin" => penguin(),
        "wombat" => wombat(),
        "torso" => torso(),
        other => {
            return Err(SimError::Settings(format!(
                "unknown sample '{other}': choose one of {}",
                NAMES.join(", ")
            )));
        }
    };
    c.flesh = flesh;
    let rest = c.skeleton.rest_posture();
    for (skin_name, bottom, top, mat) in skins {
        let b = c.skeleton.find(bottom).expect("sample joint");
        let t = c.skeleton.find(top).expect("sample joint");
        let skin = wrap_skin(&c, &rest, skin_name, b, t, m, n, &mat)?;
        c.skins.push(skin);
    }
    settle(c, rest)
}

/// The skins a sample wraps: (name, bottom joint, top joint, material).
pub fn skin_specs(name: &str) -> Vec<SkinSpec> {
    match name {
        "penguin" => penguin().1,
        "wombat" => wombat().1,
        "torso" => torso().1,
        _ => Vec::new(),
    }
}

/// A sample's skeleton, muscles and key postures without skins (no wrapping
/// or settling, so it is instant): what a flesh lattice is built from.
pub fn bare(name: &str) -> Option<Character> {
    match name {
        "penguin" => Some(penguin().0),
        "wombat" => Some(wombat().0),
        "torso" => Some(torso().0),
        _ => None,
    }
}

/// The default skin material of the samples: about 1 kg of skin per body part,
/// loose enough to jiggle, bands at ~3 Hz.
pub fn material() -> SkinMaterial {
    SkinMaterial::default()
}

/// Attaches the wrapped skins (the wrap has shrunk them onto the muscles
/// already), lets them settle under gravity, and takes the settled shape as
/// their rest state (so the skin is evenly prestressed where it hangs, not
/// where it was wrapped without weight), then settles again.
fn settle(mut c: Character, rest: Posture) -> Result<Character, SimError> {
    let settings = SolverSettings::default();
    for s in 0..c.skins.len() {
        global_attach(&mut c, s, &rest, material().band);
    }
    // Relax under gravity with near-critical damping, so the loose skin's
    // slow modes do not ring on into the first take.
    let damping = c.environment.global_damping;
    c.environment.global_damping = 35.0;
    for pass in 0..2 {
        let mut sim = Simulation::new(c, SkeletonDriver::Still(rest.clone()), settings.clone())?;
        sim.advance_to(if pass == 0 { 1.0 } else { 1.5 }, None)?;
        c = sim.character;
        if pass == 0 {
            for skin in &mut c.skins {
                crate::skin::attach::rest_in_place(skin, material().shrink);
            }
        }
    }
    c.environment.global_damping = damping;
    for s in &mut c.skins {
        s.points.velocity.fill(Vec3::ZERO);
    }
    Ok(c)
}

fn joint(name: &str, parent: Option<usize>, offset: Vec3) -> Joint {
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
fn upright(joint: usize, offset: Vec3, radii: Vec3, exponents: Vec2) -> Muscle {
    Muscle {
        joint,
        offset,
        rotation: Quat::from_rotation_x(-FRAC_PI_2),
        shape: MuscleShape::superellipsoid(radii, exponents),
        drivers: Vec::new(),
    }
}

fn sphere(joint: usize, offset: Vec3, radius: f32) -> Muscle {
    Muscle {
        joint,
        offset,
        rotation: Quat::IDENTITY,
        shape: MuscleShape::sphere(radius),
        drivers: Vec::new(),
    }
}

/// One key posture as written in the samples: time, root translation, and the
/// joints whose angles differ from rest.
type KeySpec<'a> = (f32, Vec3, &'a [(&'a str, Vec3)]);

/// Key postures from (time, root translation, [(joint, angles)]) lists.
fn keys(c: &Character, list: &[KeySpec]) -> Vec<KeyPosture> {
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

/// The penguin of Figure 12: one skin over body and head, one per flipper.
fn penguin() -> (Character, Vec<SkinSpec>) {
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

/// The wombat of Figure 13: a horizontal body from tail to snout, bare legs.
fn wombat() -> (Character, Vec<SkinSpec>) {
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

/// The torso of Figure 14: pelvis to neck with chest, belly and shoulders;
/// arms with a biceps that bulges as the elbow flexes.
fn torso() -> (Character, Vec<SkinSpec>) {
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
