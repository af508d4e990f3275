use super::*;
use crate::character::{Character, Dof, Environment, Joint, KeyPosture, Posture, Skeleton};
use crate::kinematics::PosedBody;
use crate::kinematics::forward_kinematics;
use crate::shape::{BarrDeformation, MuscleShape};
use glam::{Quat, Vec2, Vec3};

/// An empty penguin: the root joint only, and one key posture (so that the
/// key angles have to follow joints in and out).
pub(super) fn root_only() -> Character {
    let skeleton = Skeleton {
        joints: vec![Joint {
            locked: false,
            name: "pelvis".into(),
            parent: None,
            offset: Vec3::new(0.0, 0.2, 0.0),
            rest_rotation: Quat::IDENTITY,
            dofs: [Dof::default(); 3],
        }],
    };
    Character {
        name: "penguin".into(),
        flesh: Default::default(),
        key_postures: vec![KeyPosture {
            time: 0.0,
            posture: skeleton.rest_posture(),
            tension: 0.0,
            continuity: 0.0,
            bias: 0.0,
        }],
        skeleton,
        muscles: vec![],
        skins: vec![],
        environment: Environment::default(),
    }
}

pub(super) fn chest_shape() -> MuscleShape {
    MuscleShape::superellipsoid(Vec3::new(0.13, 0.12, 0.15), Vec2::new(0.8, 1.0))
}

pub(super) fn tapered_chest() -> MuscleShape {
    chest_shape().with_deformation(BarrDeformation {
        taper: Vec2::new(0.5, 0.3),
        twist: 0.0,
        bend: 0.0,
    })
}

const STROKE_POINT: usize = 6 * 16;
const STROKE_RADIUS: f32 = 0.08;
const STROKE_AMOUNT: f32 = 0.01;

/// The penguin, click by click: belly sphere, chest superellipsoid, head
/// sphere, a drag on the chest, the body skin from pelvis to head, the global
/// attach and one liposuction stroke.
pub(super) fn penguin_script() -> Vec<Command> {
    vec![
        Command::AddJoint {
            parent: 0,
            name: "belly".into(),
            position_world: Vec3::new(0.0, 0.35, 0.0),
            muscle: Some(NewMuscle::sphere(0.17)),
        },
        Command::AddJoint {
            parent: 1,
            name: "chest".into(),
            position_world: Vec3::new(0.0, 0.6, 0.0),
            muscle: Some(NewMuscle::centred(chest_shape())),
        },
        Command::AddJoint {
            parent: 2,
            name: "head".into(),
            position_world: Vec3::new(0.0, 0.82, 0.0),
            muscle: Some(NewMuscle::sphere(0.09)),
        },
        Command::EditMuscle {
            muscle: 1,
            shape: tapered_chest(),
        },
        Command::AddSkin {
            name: "body".into(),
            bottom: 0,
            top: 3,
            m: 16,
            n: 12,
            material: Default::default(),
        },
        Command::GlobalAttach {
            skin: 0,
            band: Default::default(),
        },
        Command::FatStroke {
            skin: 0,
            center_point: STROKE_POINT,
            radius: STROKE_RADIUS,
            amount: STROKE_AMOUNT,
        },
    ]
}

type State = (Character, Posture);

/// Applies the script, returning the states before and after every command.
pub(super) fn build(script: &[Command]) -> (Character, History, Vec<State>) {
    let mut c = root_only();
    let mut h = History::new(&c);
    let mut states = vec![(c.clone(), h.posture().clone())];
    for cmd in script {
        h.apply(&mut c, cmd.clone())
            .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
        c.validate().unwrap();
        states.push((c.clone(), h.posture().clone()));
    }
    (c, h, states)
}

#[test]
fn scripted_penguin_has_the_modelled_joints_muscles_skin_and_fat() {
    let (c, h, _) = build(&penguin_script());
    // Joint tree and positions (the clicks' world positions).
    let names: Vec<&str> = c.skeleton.joints.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["pelvis", "belly", "chest", "head"]);
    let parents: Vec<Option<usize>> = c.skeleton.joints.iter().map(|j| j.parent).collect();
    assert_eq!(parents, [None, Some(0), Some(1), Some(2)]);
    let world = forward_kinematics(&c.skeleton, h.posture());
    for (j, y) in [(1, 0.35), (2, 0.6), (3, 0.82)] {
        let p: Vec3 = world[j].translation.into();
        assert!(
            p.distance(Vec3::new(0.0, y, 0.0)) < 1e-6,
            "joint {j} at {p}"
        );
    }
    assert_eq!(c.key_postures[0].posture.angles.len(), 4);
    // Muscles exactly as the tools made and edited them.
    let joints: Vec<usize> = c.muscles.iter().map(|m| m.joint).collect();
    assert_eq!(joints, [1, 2, 3]);
    assert_eq!(c.muscles[0].shape, MuscleShape::sphere(0.17));
    assert_eq!(c.muscles[1].shape, tapered_chest());
    assert_eq!(c.muscles[2].shape, MuscleShape::sphere(0.09));
    assert!(
        c.muscles.iter().all(|m| m.offset == Vec3::ZERO
            && m.rotation == Quat::IDENTITY
            && m.drivers.is_empty())
    );
    // The skin hangs from pelvis and head and wraps the three muscles.
    let s = &c.skins[0];
    assert_eq!((s.bottom_joint, s.top_joint), (0, 3));
    assert_eq!(s.muscles, [0, 1, 2]);
    let bands = s.points.band.iter().flatten().count();
    assert_eq!(bands, s.m * (s.n - 2), "every interior point is attached");
    // Fat: a Gaussian of the distance around the stroke, nothing beyond 3 radii.
    let base = crate::character::SkinMaterial::default().fat;
    let centre = s.points.position[STROKE_POINT];
    assert!((s.points.fat[STROKE_POINT] - (base + STROKE_AMOUNT)).abs() < 1e-9);
    let (mut near, mut far) = (0, 0);
    for (p, &fat) in s.points.position.iter().zip(&s.points.fat) {
        let d = p.distance(centre);
        if d > FAT_STROKE_CUTOFF * STROKE_RADIUS {
            assert_eq!(fat, base, "fat changed {d} m from the stroke");
            far += 1;
        } else {
            let want =
                base + STROKE_AMOUNT * (-d * d / (2.0 * STROKE_RADIUS * STROKE_RADIUS)).exp();
            assert!((fat - want).abs() < 1e-8, "at {d} m: {fat} vs {want}");
            near += 1;
        }
    }
    assert!(near > 4 && far > near, "near {near}, far {far}");
    // At about one radius the rise is e^(-1/2) of the centre's.
    let (k, d) = s
        .points
        .position
        .iter()
        .map(|p| (p.distance(centre) / STROKE_RADIUS - 1.0).abs())
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap();
    assert!(d < 0.25, "no point near one radius ({d})");
    let rise = (s.points.fat[k] - base) / STROKE_AMOUNT;
    assert!((0.45..0.78).contains(&rise), "rise at ~1 radius {rise}");
}

#[test]
fn undo_returns_every_previous_state_and_redo_reapplies_exactly() {
    let script = penguin_script();
    let (mut c, mut h, states) = build(&script);
    assert_eq!(h.revision(), script.len() as u64);
    for k in (0..script.len()).rev() {
        h.undo(&mut c).unwrap();
        assert!(c == states[k].0, "after undoing step {k}");
        assert_eq!(h.posture(), &states[k].1);
    }
    assert_eq!(h.undo(&mut c), Err(EditError::NothingToUndo));
    for k in 1..=script.len() {
        h.redo(&mut c).unwrap();
        assert!(c == states[k].0, "after redoing step {k}");
    }
    assert_eq!(h.redo(&mut c), Err(EditError::NothingToRedo));
    assert_eq!(h.revision(), 3 * script.len() as u64);
    // A new edit clears the redo stack.
    h.undo(&mut c).unwrap();
    h.apply(
        &mut c,
        Command::SetLocked {
            joint: 1,
            locked: true,
        },
    )
    .unwrap();
    assert!(!h.can_redo());
    assert!(c.skeleton.joints[1].dofs.iter().all(|d| !d.free));
}

#[test]
fn fat_never_goes_below_zero_and_a_held_stroke_undoes_as_one_step() {
    let (mut c, mut h, states) = build(&penguin_script());
    let before = c.clone();
    let depth = h.undo_depth();
    // A spray held for several frames, removing far more than there is.
    for _ in 0..5 {
        h.apply_continuing(
            &mut c,
            Command::FatStroke {
                skin: 0,
                center_point: STROKE_POINT + 3,
                radius: 0.1,
                amount: -0.02,
            },
        )
        .unwrap();
    }
    assert_eq!(h.undo_depth(), depth);
    let sprayed = c.clone();
    let fat = &c.skins[0].points.fat;
    assert_eq!(fat[STROKE_POINT + 3], 0.0);
    assert!(fat.iter().all(|&f| f >= 0.0));
    c.validate().unwrap();
    assert!(c != before);
    h.undo(&mut c).unwrap();
    assert!(
        c == states[states.len() - 2].0,
        "the whole spray went with the stroke it continued"
    );
    h.redo(&mut c).unwrap();
    assert!(c == sprayed);
}

#[test]
fn joint_edits_and_skin_material_undo_exactly() {
    let (mut c, mut h, _) = build(&penguin_script());
    let before = c.clone();
    // Move the chest but keep the head where it is.
    h.apply(
        &mut c,
        Command::MoveJoint {
            joint: 2,
            position_world: Vec3::new(0.0, 0.62, 0.03),
            keep_children: true,
        },
    )
    .unwrap();
    let w = forward_kinematics(&c.skeleton, h.posture());
    assert!(Vec3::from(w[2].translation).distance(Vec3::new(0.0, 0.62, 0.03)) < 1e-6);
    assert!(Vec3::from(w[3].translation).distance(Vec3::new(0.0, 0.82, 0.0)) < 1e-6);
    // Stiffen and weigh down a region of the skin.
    h.apply(
        &mut c,
        Command::SetSkinMaterial {
            skin: 0,
            region: Some(vec![20, 21, 22, 21]),
            stretch: Some(0.05),
            damping: None,
            mass: Some(2.0),
            band_stiffness: None,
            bend: None,
        },
    )
    .unwrap();
    assert_eq!(c.skins[0].points.stretch[21], [0.05, 0.025, 0.05]);
    assert_eq!(c.skins[0].points.mass_density[22], 2.0);
    assert_eq!(
        c.skins[0].points.mass_density[23],
        crate::character::SkinMaterial::default().mass_density
    );
    h.apply(
        &mut c,
        Command::SetDofs {
            joint: 3,
            dofs: [
                Dof::LOCKED,
                Dof {
                    free: true,
                    min: -0.5,
                    max: 0.5,
                },
                Dof::default(),
            ],
        },
    )
    .unwrap();
    for _ in 0..3 {
        h.undo(&mut c).unwrap();
    }
    assert!(c == before);
}

/// Builds the penguin with flippers (and a flipper tip) added symmetrically
/// before the head, so deleting a flipper renumbers the head and its muscle.
pub(super) fn penguin_with_flippers() -> (Character, History) {
    let mut c = root_only();
    let mut h = History::new(&c);
    let sym = Symmetry::default();
    for cmd in &penguin_script()[..2] {
        h.apply(&mut c, cmd.clone()).unwrap();
    }
    let flipper = flipper_muscle();
    h.apply_symmetric(
        &mut c,
        Command::AddJoint {
            parent: 2,
            name: "flipper".into(),
            position_world: Vec3::new(0.16, 0.6, 0.02),
            muscle: Some(flipper),
        },
        &sym,
    )
    .unwrap();
    h.apply_symmetric(
        &mut c,
        Command::AddJoint {
            parent: 3,
            name: "tip_l".into(),
            position_world: Vec3::new(0.2, 0.45, 0.03),
            muscle: Some(NewMuscle::sphere(0.02)),
        },
        &sym,
    )
    .unwrap();
    for cmd in [
        Command::AddJoint {
            parent: 2,
            name: "head".into(),
            position_world: Vec3::new(0.0, 0.82, 0.0),
            muscle: Some(NewMuscle::sphere(0.09)),
        },
        Command::AddSkin {
            name: "body".into(),
            bottom: 0,
            top: 7,
            m: 16,
            n: 12,
            material: Default::default(),
        },
        Command::GlobalAttach {
            skin: 0,
            band: Default::default(),
        },
    ] {
        h.apply(&mut c, cmd).unwrap();
    }
    c.validate().unwrap();
    (c, h)
}

pub(super) fn flipper_muscle() -> NewMuscle {
    NewMuscle {
        shape: MuscleShape::superellipsoid(Vec3::new(0.03, 0.1, 0.05), Vec2::new(0.6, 1.0))
            .with_deformation(BarrDeformation {
                taper: Vec2::new(0.0, 0.0),
                twist: 1.0,
                bend: 2.0,
            }),
        offset: Vec3::new(0.01, -0.05, 0.0),
        rotation: Quat::from_rotation_z(0.4) * Quat::from_rotation_x(0.3),
    }
}

/// Muscles `a` and `b` are mirror images in the X plane: the inside-outside
/// value of `a` at x equals that of `b` at the mirror image of x.
pub(super) fn assert_mirrored_muscles(c: &Character, posture: &Posture, a: usize, b: usize) {
    let body = PosedBody::new(c, posture);
    let (ma, mb) = (&body.muscles[a], &body.muscles[b]);
    let sym = Symmetry::default();
    let mut checked = 0;
    for i in -6..=6 {
        for j in -6..=6 {
            for k in -6..=6 {
                let x = ma.center + 0.012 * Vec3::new(i as f32, j as f32, k as f32);
                let ga = ma.shape.inside_outside(ma.to_local.transform_point3(x));
                let gb = mb
                    .shape
                    .inside_outside(mb.to_local.transform_point3(sym.reflect(x)));
                assert!((ga - gb).abs() < 1e-4, "at {x}: {ga} vs {gb}");
                checked += usize::from(ga < 0.0);
            }
        }
    }
    assert!(checked > 5, "too few sample points inside ({checked})");
}

#[test]
fn symmetric_edits_mirror_joints_and_muscles_and_undo_as_one_step() {
    let (mut c, mut h) = penguin_with_flippers();
    let names: Vec<&str> = c.skeleton.joints.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "pelvis",
            "belly",
            "chest",
            "flipper_l",
            "flipper_r",
            "tip_l",
            "tip_r",
            "head"
        ]
    );
    let parents: Vec<Option<usize>> = c.skeleton.joints.iter().map(|j| j.parent).collect();
    assert_eq!(
        parents,
        [
            None,
            Some(0),
            Some(1),
            Some(2),
            Some(2),
            Some(3),
            Some(4),
            Some(2)
        ]
    );
    let sym = Symmetry::default();
    let w = forward_kinematics(&c.skeleton, h.posture());
    for (l, r) in [(3, 4), (5, 6)] {
        let (pl, pr) = (Vec3::from(w[l].translation), Vec3::from(w[r].translation));
        assert!(
            pl.x > 0.1 && pr.distance(sym.reflect(pl)) < 1e-6,
            "{pl} {pr}"
        );
    }
    assert_eq!(c.muscles[2].shape, flipper_muscle().shape);
    assert_eq!(c.muscles[3].shape.deformation.twist, -1.0);
    assert_eq!(c.muscles[3].shape.deformation.bend, -2.0);
    assert_mirrored_muscles(&c, h.posture(), 2, 3);
    assert_mirrored_muscles(&c, h.posture(), 4, 5);

    // A drag on the left flipper reshapes the right one too; one undo takes both back.
    let before = c.clone();
    let depth = h.undo_depth();
    let edited = MuscleShape::superellipsoid(Vec3::new(0.035, 0.12, 0.05), Vec2::new(0.4, 1.2))
        .with_deformation(BarrDeformation {
            taper: Vec2::new(1.0, 0.0),
            twist: -0.5,
            bend: 1.0,
        });
    let image = h
        .apply_symmetric(
            &mut c,
            Command::EditMuscle {
                muscle: 2,
                shape: edited.clone(),
            },
            &sym,
        )
        .unwrap();
    assert!(matches!(image, Some(Command::EditMuscle { muscle: 3, .. })));
    assert_eq!(h.undo_depth(), depth + 1);
    assert_mirrored_muscles(&c, h.posture(), 2, 3);
    h.undo(&mut c).unwrap();
    assert!(c == before);

    // A stroke off the centre line of the body skin is repeated at the
    // mirrored point; both go with one undo.
    let s = &c.skins[0];
    let row = 6 * s.m;
    let k = (row..row + s.m)
        .max_by(|&a, &b| s.points.position[a].x.total_cmp(&s.points.position[b].x))
        .unwrap();
    let image_point = (0..s.point_count())
        .min_by(|&a, &b| {
            let t = sym.reflect(s.points.position[k]);
            s.points.position[a]
                .distance(t)
                .total_cmp(&s.points.position[b].distance(t))
        })
        .unwrap();
    assert_ne!(k, image_point);
    let base = s.points.fat[k];
    let stroke = Command::FatStroke {
        skin: 0,
        center_point: k,
        radius: 0.05,
        amount: 0.01,
    };
    let image = h.apply_symmetric(&mut c, stroke, &sym).unwrap();
    assert_eq!(
        image,
        Some(Command::FatStroke {
            skin: 0,
            center_point: image_point,
            radius: 0.05,
            amount: 0.01,
        })
    );
    assert!((c.skins[0].points.fat[k] - base - 0.01).abs() < 1e-9);
    assert!((c.skins[0].points.fat[image_point] - base - 0.01).abs() < 1e-9);
    h.undo(&mut c).unwrap();
    assert!(c == before);

    // A joint on the centre line has no mirror image: added once.
    let image = h
        .apply_symmetric(
            &mut c,
            Command::AddJoint {
                parent: 7,
                name: "beak".into(),
                position_world: Vec3::new(0.0, 0.82, 0.1),
                muscle: Some(NewMuscle::sphere(0.02)),
            },
            &sym,
        )
        .unwrap();
    assert_eq!(image, None);
    assert_eq!(c.skeleton.find("beak"), Some(8));
    assert_eq!(c.skeleton.joints.len(), 9);

    // Undoing a symmetric joint addition removes both halves.
    h.undo(&mut c).unwrap();
    let (mut c0, mut h0) = penguin_with_flippers();
    let recorded = h0.recorded();
    // Steps: 2 joints, flippers (2 commands, 1 step), tips (2 commands, 1 step), head, skin, attach.
    assert_eq!(recorded.len(), 9);
    assert_eq!(h0.undo_depth(), 7);
    for _ in 0..3 {
        h0.undo(&mut c0).unwrap();
    }
    assert_eq!(c0.skeleton.joints.len(), 7);
    h0.undo(&mut c0).unwrap();
    assert_eq!(c0.skeleton.joints.len(), 5, "tip_l and tip_r went together");
    h0.undo(&mut c0).unwrap();
    assert_eq!(
        c0.skeleton.joints.len(),
        3,
        "flipper_l and flipper_r went together"
    );
}

#[test]
fn deleting_a_subtree_renumbers_the_rest_and_undoes_exactly() {
    let (mut c, mut h) = penguin_with_flippers();
    let before = c.clone();
    let head_world = forward_kinematics(&c.skeleton, h.posture())[7].translation;
    let sym = Symmetry::default();
    // Deleting the left flipper also deletes the right one (and both tips).
    let image = h
        .apply_symmetric(&mut c, Command::DeleteJoint { joint: 3 }, &sym)
        .unwrap();
    assert_eq!(image, Some(Command::DeleteJoint { joint: 4 }));
    c.validate().unwrap();
    let names: Vec<&str> = c.skeleton.joints.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["pelvis", "belly", "chest", "head"]);
    assert_eq!(c.muscles.len(), 3);
    assert_eq!(c.muscles[2].joint, 3);
    assert_eq!(
        (c.skins[0].top_joint, c.skins[0].muscles.clone()),
        (3, vec![0, 1, 2])
    );
    assert!(
        c.skins[0]
            .points
            .band
            .iter()
            .flatten()
            .all(|b| b.muscle < 3)
    );
    assert_eq!(h.posture().angles.len(), 4);
    assert_eq!(c.key_postures[0].posture.angles.len(), 4);
    let moved = forward_kinematics(&c.skeleton, h.posture())[3].translation;
    assert_eq!(moved, head_world);
    h.undo(&mut c).unwrap();
    assert!(c == before);
}

#[test]
fn invalid_commands_are_refused_with_messages_and_change_nothing() {
    let (mut c, mut h, _) = build(&penguin_script());
    let cases: Vec<(Command, &str)> = vec![
        (
            Command::AddJoint {
                parent: 7,
                name: "x".into(),
                position_world: Vec3::ZERO,
                muscle: None,
            },
            "joint 7 does not exist (the skeleton has 4)",
        ),
        (
            Command::AddJoint {
                parent: 1,
                name: "x".into(),
                position_world: Vec3::ZERO,
                muscle: Some(NewMuscle::sphere(-0.1)),
            },
            "muscle.shape.radius: must be positive, got -0.1",
        ),
        (
            Command::AddJoint {
                parent: 1,
                name: "chest".into(),
                position_world: Vec3::ZERO,
                muscle: None,
            },
            "a joint named 'chest' already exists (joint 2)",
        ),
        (
            Command::EditMuscle {
                muscle: 9,
                shape: MuscleShape::sphere(0.1),
            },
            "muscle 9 does not exist",
        ),
        (
            Command::DeleteJoint { joint: 3 },
            "skin 0 ('body') hangs from joint 3 ('head')",
        ),
        (
            Command::DeleteJoint { joint: 1 },
            "the top of skin 0 ('body') hangs from joint 3",
        ),
        (Command::DeleteJoint { joint: 0 }, "root"),
        (
            Command::FatStroke {
                skin: 0,
                center_point: 5000,
                radius: 0.1,
                amount: 0.01,
            },
            "point 5000 does not exist on skin 0 (192 points)",
        ),
        (
            Command::FatStroke {
                skin: 0,
                center_point: 5,
                radius: 0.0,
                amount: 0.01,
            },
            "radius: must be positive",
        ),
        (
            Command::SetPosture {
                posture: Posture {
                    root_translation: Vec3::ZERO,
                    angles: vec![Vec3::ZERO; 3],
                    blend: Vec::new(),
                },
            },
            "has 3 entries but the skeleton has 4 joints",
        ),
        (
            Command::SetSkinMaterial {
                skin: 0,
                region: None,
                stretch: None,
                damping: None,
                mass: Some(0.0),
                band_stiffness: None,
                bend: None,
            },
            "mass: must be positive",
        ),
        (
            Command::AddSkin {
                name: "x".into(),
                bottom: 2,
                top: 2,
                m: 8,
                n: 8,
                material: Default::default(),
            },
            "need two different existing joints",
        ),
        (
            Command::SetAttachment {
                skin: 0,
                point: 3,
                band: None,
            },
            "boundary row",
        ),
    ];
    let before = c.clone();
    let (rev, depth) = (h.revision(), h.undo_depth());
    for (cmd, want) in cases {
        let err = h.apply(&mut c, cmd.clone()).expect_err(want).to_string();
        assert!(err.contains(want), "{cmd:?}: got '{err}', want '{want}'");
        assert!(c == before, "{cmd:?} changed the character");
    }
    // A group is all or nothing: its valid first half is taken back.
    let err = h
        .apply_group(
            &mut c,
            vec![
                Command::EditMuscle {
                    muscle: 0,
                    shape: MuscleShape::sphere(0.2),
                },
                Command::EditMuscle {
                    muscle: 1,
                    shape: MuscleShape::sphere(f32::NAN),
                },
            ],
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("shape.radius: must be positive"),
        "{err}"
    );
    assert!(c == before);
    assert_eq!((h.revision(), h.undo_depth()), (rev, depth));
}

/// A muscle paint stroke on a muscle that does not exist, with a colour
/// outside [0, 1] or a strength that is not a number is refused, naming
/// what is wrong, and changes nothing.
#[test]
fn invalid_muscle_paint_is_refused_and_changes_nothing() {
    let (mut c, mut h, _) = build(&penguin_script());
    let cases: Vec<(Command, &str)> = vec![
        (
            Command::PaintMuscle {
                muscle: 9,
                color: [0.5; 3],
                strength: 0.1,
            },
            "muscle 9 does not exist",
        ),
        (
            Command::PaintMuscle {
                muscle: 0,
                color: [0.5, 1.5, 0.5],
                strength: 0.1,
            },
            "color: each channel must be linear RGB from 0 to 1",
        ),
        (
            Command::PaintMuscle {
                muscle: 0,
                color: [0.5; 3],
                strength: f32::NAN,
            },
            "strength: must be from 0 to 1",
        ),
    ];
    let before = c.clone();
    for (cmd, want) in cases {
        let err = h.apply(&mut c, cmd.clone()).expect_err(want).to_string();
        assert!(err.contains(want), "{cmd:?}: got '{err}', want '{want}'");
        assert!(c == before, "{cmd:?} changed the character");
    }
}

#[test]
fn joints_are_added_where_the_hand_is_in_the_working_posture() {
    let mut c = root_only();
    let mut h = History::new(&c);
    h.apply(&mut c, penguin_script()[0].clone()).unwrap();
    let mut pose = h.posture().clone();
    pose.angles[1] = Vec3::new(0.3, -0.2, 0.5);
    pose.root_translation = Vec3::new(0.1, 0.0, 0.0);
    h.apply(&mut c, Command::SetPosture { posture: pose })
        .unwrap();
    let hand = Vec3::new(0.2, 0.7, -0.1);
    h.apply(
        &mut c,
        Command::AddJoint {
            parent: 1,
            name: "wing".into(),
            position_world: hand,
            muscle: None,
        },
    )
    .unwrap();
    let w = forward_kinematics(&c.skeleton, h.posture());
    assert!(Vec3::from(w[2].translation).distance(hand) < 1e-6);
    assert_eq!(h.posture().angles.len(), 3);
    h.undo(&mut c).unwrap();
    h.undo(&mut c).unwrap();
    assert_eq!(h.posture(), &c.skeleton.rest_posture());
}

#[test]
fn a_session_recorded_in_ron_replays_to_the_same_character() {
    let (mut c, mut h) = penguin_with_flippers();
    let sym = Symmetry::default();
    let mut pose = h.posture().clone();
    pose.angles[3] = Vec3::new(0.0, 0.2, -0.4);
    for cmd in [
        Command::SetPosture { posture: pose },
        Command::FatStroke {
            skin: 0,
            center_point: 70,
            radius: 0.06,
            amount: 0.004,
        },
        Command::SetSkinMaterial {
            skin: 0,
            region: Some(vec![40, 41]),
            stretch: None,
            damping: Some(0.3),
            mass: None,
            band_stiffness: None,
            bend: Some(1e-6),
        },
        Command::MoveJoint {
            joint: 5,
            position_world: Vec3::new(0.21, 0.44, 0.04),
            keep_children: false,
        },
    ] {
        h.apply_symmetric(&mut c, cmd, &sym).unwrap();
    }
    for k in 0..3 {
        h.apply_continuing(
            &mut c,
            Command::FatStroke {
                skin: 0,
                center_point: 100 + k,
                radius: 0.04,
                amount: -0.003,
            },
        )
        .unwrap();
    }
    // Undone edits are not part of the session.
    h.apply(
        &mut c,
        Command::SetLocked {
            joint: 2,
            locked: true,
        },
    )
    .unwrap();
    h.undo(&mut c).unwrap();

    let text = ron::ser::to_string_pretty(&h.recorded(), Default::default()).unwrap();
    let script: Vec<Command> = ron::from_str(&text).unwrap();
    assert_eq!(script, h.recorded());
    let mut replayed = root_only();
    let mut h2 = History::new(&replayed);
    for cmd in script {
        h2.apply(&mut replayed, cmd).unwrap();
    }
    assert!(replayed == c);
    assert_eq!(h2.posture(), h.posture());
}

#[test]
fn mirrored_names_and_limits() {
    assert_eq!(mirror_name("arm_l").as_deref(), Some("arm_r"));
    assert_eq!(mirror_name("arm_R").as_deref(), Some("arm_L"));
    assert_eq!(mirror_name("spine"), None);
    let (c, h) = penguin_with_flippers();
    let sym = Symmetry::default();
    let cmd = Command::SetDofs {
        joint: 3,
        dofs: [
            Dof {
                free: true,
                min: -0.1,
                max: 0.2,
            },
            Dof {
                free: true,
                min: -0.3,
                max: 0.4,
            },
            Dof::LOCKED,
        ],
    };
    let Some(Command::SetDofs { joint, dofs }) = sym.mirror(&cmd, &c, h.posture()) else {
        panic!("no mirror");
    };
    assert_eq!(joint, 4);
    assert_eq!((dofs[0].min, dofs[0].max), (-0.1, 0.2));
    assert_eq!((dofs[1].min, dofs[1].max), (-0.4, 0.3));
    assert!(!dofs[2].free);
    // Posing is not mirrored.
    let pose = Command::SetPosture {
        posture: h.posture().clone(),
    };
    assert_eq!(sym.mirror(&pose, &c, h.posture()), None);
}

/// The undo history keeps to its memory budget: past it the oldest steps
/// are forgotten (still recorded, no longer undoable), the newest are undone
/// exactly, and one step larger than the whole budget is still undoable.
#[test]
fn the_undo_history_keeps_to_its_memory_budget() {
    let (start, start_history) = penguin_with_flippers();
    let material = |k: usize| Command::SetSkinMaterial {
        skin: 0,
        region: None,
        stretch: Some(40.0 + k as f32),
        damping: Some(0.5 + 0.01 * k as f32),
        mass: None,
        band_stiffness: None,
        bend: None,
    };
    // What one whole-skin edit keeps (the body skin's old stretch and damping).
    let mut probe = start.clone();
    let mut h = start_history.clone();
    h.apply(&mut probe, material(0)).unwrap();
    let one = h.held_bytes() - start_history.held_bytes();
    assert!(
        one > 16 * start.skins[0].points.stretch.len(),
        "{one} bytes"
    );

    let mut c = start.clone();
    let mut history = start_history.clone();
    history.set_budget(3 * one + one / 2);
    let mut states = vec![c.clone()];
    for k in 0..10 {
        history.apply(&mut c, material(k)).unwrap();
        states.push(c.clone());
        assert!(
            history.held_bytes() <= history.budget(),
            "edit {k}: {} bytes held, budget {}",
            history.held_bytes(),
            history.budget()
        );
    }
    assert!(history.forgotten_steps() > 0);
    // The oldest go first (the build steps, then the earliest edits).
    let depth = history.undo_depth();
    assert_eq!(depth, 3, "undoable steps");
    // The whole session is still recorded: replayed, it rebuilds the character.
    let mut replayed = start.clone();
    let mut fresh = start_history.clone();
    let recorded = history.recorded();
    let already = start_history.recorded().len();
    for cmd in &recorded[already..] {
        fresh.apply(&mut replayed, cmd.clone()).unwrap();
    }
    assert!(replayed == c, "the recorded session rebuilds the character");
    // The kept steps undo exactly; past them, nothing changes.
    for back in 1..=depth {
        history.undo(&mut c).unwrap();
        assert!(c == states[10 - back], "undo {back}");
    }
    assert!(matches!(
        history.undo(&mut c),
        Err(EditError::NothingToUndo)
    ));
    assert!(c == states[10 - depth]);
    // Redo is unaffected by the budget.
    history.redo(&mut c).unwrap();
    assert!(c == states[11 - depth]);
    // A budget below one edit keeps only the newest step, which still undoes.
    history.set_budget(0);
    assert_eq!(history.undo_depth(), 1);
    history.undo(&mut c).unwrap();
    assert!(c == states[10 - depth]);
    assert!(!history.can_undo());
}

/// Without a session being recorded, steps past the budget go entirely:
/// a session of thousands of edits holds as many steps as fit the budget.
#[test]
fn without_a_record_forgotten_steps_go_entirely() {
    let (mut c, mut history) = penguin_with_flippers();
    history.keep_record(false);
    history.set_budget(0);
    for k in 0..2000 {
        let mut posture = c.skeleton.rest_posture();
        posture.angles[1].x = 0.001 * k as f32;
        history
            .apply(&mut c, Command::SetPosture { posture })
            .unwrap();
    }
    assert_eq!(history.undo_depth(), 1);
    assert_eq!(history.recorded().len(), 1, "only the newest step is held");
    history.undo(&mut c).unwrap();
    assert!((history.posture().angles[1].x - 0.001 * 1998.0).abs() < 1e-6);
}
