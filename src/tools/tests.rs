use super::*;
use crate::character::{Character, Dof, Environment, Joint, KeyPosture, Posture, Skeleton};
use crate::kinematics::forward_kinematics;
use crate::kinematics::pose::PosedBody;
use crate::shape::{BarrDeformation, MuscleShape};
use glam::{Quat, Vec2, Vec3};

/// An empty penguin: the root joint only, and one key posture (so that the
/// key angles have to follow joints in and out).
fn root_only() -> Character {
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

fn chest_shape() -> MuscleShape {
    MuscleShape::superellipsoid(Vec3::new(0.13, 0.12, 0.15), Vec2::new(0.8, 1.0))
}

fn tapered_chest() -> MuscleShape {
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
fn penguin_script() -> Vec<Command> {
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
fn build(script: &[Command]) -> (Character, History, Vec<State>) {
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
fn penguin_with_flippers() -> (Character, History) {
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

fn flipper_muscle() -> NewMuscle {
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
fn assert_mirrored_muscles(c: &Character, posture: &Posture, a: usize, b: usize) {
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
            "radius must be positive, got -0.1",
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
    assert!(err.to_string().contains("radius must be positive"), "{err}");
    assert!(c == before);
    assert_eq!((h.revision(), h.undo_depth()), (rev, depth));
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

// ---- Locking, AddMuscle, the deformation tool, IK orientation, wand rays ----

use crate::input::{HandState, InputFrame};
use crate::tools::tool::{DEFORM_LIMIT, ToolContext, ToolKind, Toolbox};

/// A toolbox fed one frame at a time.
struct Hand {
    tools: Toolbox,
    t: f64,
}

impl Hand {
    fn new(kind: ToolKind, c: &mut Character, h: &mut History) -> Self {
        let mut tools = Toolbox::new();
        let mut ctx = ToolContext {
            character: c,
            history: h,
            symmetry: None,
        };
        tools.set_tool(kind, &mut ctx).unwrap();
        Self { tools, t: 0.0 }
    }

    fn frame(
        &mut self,
        c: &mut Character,
        h: &mut History,
        symmetry: Option<&Symmetry>,
        right: HandState,
    ) -> Result<(), EditError> {
        self.t += 1.0 / 60.0;
        let mut ctx = ToolContext {
            character: c,
            history: h,
            symmetry,
        };
        self.tools.handle(
            &InputFrame {
                time: self.t,
                right,
                left: HandState::default(),
            },
            &mut ctx,
        )
    }

    /// Press at `from` (hand orientation `q0`), move to `to` turning the hand
    /// to `q1` in `steps` frames, release there.
    #[allow(clippy::too_many_arguments)]
    fn drag(
        &mut self,
        c: &mut Character,
        h: &mut History,
        symmetry: Option<&Symmetry>,
        from: Vec3,
        to: Vec3,
        q0: Quat,
        q1: Quat,
        steps: usize,
    ) -> Result<(), EditError> {
        let at = |p: Vec3, q: Quat| HandState::at(p).with_orientation(q);
        self.frame(c, h, symmetry, at(from, q0).with_trigger(true))?;
        for s in 1..=steps {
            let a = s as f32 / steps as f32;
            let hand = at(from.lerp(to, a), q0.slerp(q1, a)).with_trigger(true);
            self.frame(c, h, symmetry, hand)?;
        }
        self.frame(c, h, symmetry, at(to, q1))
    }
}

/// The penguin's muscles and joints (no skin yet).
fn penguin_body() -> (Character, History) {
    let (c, h, _) = build(&penguin_script()[..4]);
    (c, h)
}

const CHEST: Vec3 = Vec3::new(0.0, 0.6, 0.0);

#[test]
fn a_locked_part_refuses_edits_by_name_and_locking_undoes() {
    let (mut c, mut h) = penguin_body();
    let unlocked = c.clone();
    h.apply(
        &mut c,
        Command::LockPart {
            joint: 2,
            locked: true,
        },
    )
    .unwrap();
    assert!(c.skeleton.joints[2].locked);
    assert!(
        c.skeleton.joints[2].dofs.iter().all(|d| d.free),
        "not SetLocked"
    );
    let locked = c.clone();
    let refused = [
        Command::EditMuscle {
            muscle: 1,
            shape: chest_shape(),
        },
        Command::MoveJoint {
            joint: 2,
            position_world: Vec3::new(0.0, 0.65, 0.0),
            keep_children: false,
        },
        Command::DeleteJoint { joint: 2 },
        // Deleting an ancestor would delete the locked part with it.
        Command::DeleteJoint { joint: 1 },
        Command::AddMuscle {
            joint: 2,
            muscle: NewMuscle::sphere(0.05),
        },
    ];
    for cmd in refused {
        let err = h.apply(&mut c, cmd.clone()).unwrap_err();
        assert!(
            matches!(err, EditError::Locked { joint: 2, .. }),
            "{cmd:?}: {err:?}"
        );
        assert!(
            err.to_string()
                .contains("joint 2 ('chest') is locked against edits"),
            "{err}"
        );
        assert!(c == locked, "{cmd:?} changed the character");
    }
    // A child, posing, limits and moving the parent (the part goes along)
    // are still allowed.
    let mut pose = h.posture().clone();
    pose.angles[2] = Vec3::new(0.1, 0.0, 0.0);
    for cmd in [
        Command::SetPosture { posture: pose },
        Command::AddJoint {
            parent: 2,
            name: "neck".into(),
            position_world: Vec3::new(0.0, 0.7, 0.0),
            muscle: None,
        },
        Command::SetLocked {
            joint: 2,
            locked: true,
        },
        Command::MoveJoint {
            joint: 1,
            position_world: Vec3::new(0.0, 0.36, 0.0),
            keep_children: false,
        },
    ] {
        h.apply(&mut c, cmd.clone())
            .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    }
    for _ in 0..4 {
        h.undo(&mut c).unwrap();
    }
    assert!(c == locked);
    h.undo(&mut c).unwrap();
    assert!(
        c == unlocked,
        "undoing the lock returns the unlocked character"
    );
    h.redo(&mut c).unwrap();
    assert!(c == locked);
    // Unlocked again, the edit goes through.
    h.apply(
        &mut c,
        Command::LockPart {
            joint: 2,
            locked: false,
        },
    )
    .unwrap();
    h.apply(
        &mut c,
        Command::EditMuscle {
            muscle: 1,
            shape: chest_shape(),
        },
    )
    .unwrap();
}

#[test]
fn character_files_without_lock_flags_still_load_and_unlocked_joints_write_none() {
    // A character file written before the flag existed.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/penguin.ron");
    let text = std::fs::read_to_string(&dir).unwrap();
    assert!(!text.contains("locked:"), "the sample predates the flag");
    let old = crate::io::parse_character(&text, &dir).unwrap();
    assert!(old.skeleton.joints.iter().all(|j| !j.locked));
    // Unlocked joints are written as before; a locked one round-trips.
    let mut c = old.clone();
    let written = crate::io::character_to_string(&c).unwrap();
    assert!(!written.contains("locked:"));
    c.skeleton.joints[1].locked = true;
    let written = crate::io::character_to_string(&c).unwrap();
    assert!(written.contains("locked: true"));
    let back = crate::io::parse_character(&written, &dir).unwrap();
    assert!(back == c);
}

#[test]
fn add_muscle_gives_a_bare_joint_a_mirrored_muscle_and_undoes() {
    let (mut c, mut h) = penguin_body();
    let sym = Symmetry::default();
    h.apply_symmetric(
        &mut c,
        Command::AddJoint {
            parent: 2,
            name: "flipper".into(),
            position_world: Vec3::new(0.16, 0.6, 0.02),
            muscle: None,
        },
        &sym,
    )
    .unwrap();
    let bare = c.clone();
    let image = h
        .apply_symmetric(
            &mut c,
            Command::AddMuscle {
                joint: 4,
                muscle: flipper_muscle(),
            },
            &sym,
        )
        .unwrap();
    assert!(matches!(image, Some(Command::AddMuscle { joint: 5, .. })));
    assert_eq!((c.muscles[3].joint, c.muscles[4].joint), (4, 5));
    assert_eq!(c.muscles[3].shape, flipper_muscle().shape);
    assert_mirrored_muscles(&c, h.posture(), 3, 4);
    c.validate().unwrap();
    h.undo(&mut c).unwrap();
    assert!(c == bare);
}

#[test]
fn new_commands_round_trip_through_session_files_and_have_names() {
    let (mut c, mut h) = penguin_body();
    let cmds = vec![
        Command::AddJoint {
            parent: 3,
            name: "beak".into(),
            position_world: Vec3::new(0.0, 0.82, 0.1),
            muscle: None,
        },
        Command::AddMuscle {
            joint: 4,
            muscle: flipper_muscle(),
        },
        Command::LockPart {
            joint: 4,
            locked: true,
        },
    ];
    for cmd in &cmds {
        h.apply(&mut c, cmd.clone()).unwrap();
    }
    let session = session::Session::new(h.recorded());
    let text = ron::ser::to_string_pretty(&session, Default::default()).unwrap();
    let back: session::Session = ron::from_str(&text).unwrap();
    assert_eq!(back, session);
    let mut replayed = root_only();
    session::replay(&mut replayed, &back, std::path::Path::new("test.ron")).unwrap();
    assert!(replayed == c);
    assert_eq!(cmds[1].label(), "add muscle");
    assert_eq!(cmds[2].label(), "lock part");
}

#[test]
fn mirror_shape_reflects_barr_deformations_exactly() {
    // Reflecting in local x: the mirrored shape deforms the mirrored point
    // onto the mirror image of the deformed point (twist and bend negated,
    // taper kept).
    let mx = |p: Vec3| Vec3::new(-p.x, p.y, p.z);
    let shape = MuscleShape::superellipsoid(Vec3::new(0.03, 0.04, 0.1), Vec2::ONE)
        .with_deformation(BarrDeformation {
            taper: Vec2::new(2.0, -1.5),
            twist: 4.0,
            bend: 3.0,
        });
    let image = mirror_shape(&shape);
    assert_eq!(image.deformation.taper, shape.deformation.taper);
    assert_eq!(image.deformation.twist, -4.0);
    assert_eq!(image.deformation.bend, -3.0);
    for q in [
        Vec3::new(0.02, 0.01, 0.08),
        Vec3::new(-0.01, 0.03, -0.05),
        Vec3::new(0.025, -0.02, 0.0),
    ] {
        let a = mx(shape.deformation.deform(q));
        let b = image.deformation.deform(mx(q));
        assert!(a.distance(b) < 1e-6, "{q}: {a} vs {b}");
        let g = shape.inside_outside(q);
        assert!((g - image.inside_outside(mx(q))).abs() < 1e-6);
    }
}

fn deformation(c: &Character, k: usize) -> BarrDeformation {
    c.muscles[k].shape.deformation.clone()
}

#[test]
fn the_deform_tool_bends_tapers_and_twists_one_step_per_gesture() {
    let (mut c, mut h) = penguin_body();
    let mut hand = Hand::new(ToolKind::Deform, &mut c, &mut h);
    let start = deformation(&c, 1);
    let (hl, xy) = (0.15f32, 0.13f32.hypot(0.12));
    // Sideways along local x (the chest's frame is the world's): bend.
    let before = c.clone();
    let depth = h.undo_depth();
    let q = Quat::IDENTITY;
    hand.drag(
        &mut c,
        &mut h,
        None,
        CHEST,
        CHEST + Vec3::new(0.01, 0.0, 0.0),
        q,
        q,
        5,
    )
    .unwrap();
    let d = deformation(&c, 1);
    assert!(
        (d.bend - 2.0 * 0.01 / (hl * hl)).abs() < 1e-3,
        "bend {}",
        d.bend
    );
    assert_eq!((d.taper, d.twist), (start.taper, start.twist));
    assert_eq!(h.undo_depth(), depth + 1, "one gesture, one step");
    assert_eq!(hand.tools.state.current_joint, 2);
    h.undo(&mut c).unwrap();
    assert!(c == before);
    // Along local z: taper, both axes alike.
    hand.drag(
        &mut c,
        &mut h,
        None,
        CHEST,
        CHEST + Vec3::new(0.0, 0.0, 0.02),
        q,
        q,
        5,
    )
    .unwrap();
    let d = deformation(&c, 1);
    let dt = 0.02 / (hl * hl);
    assert!(
        d.taper.abs_diff_eq(start.taper + Vec2::splat(dt), 1e-3),
        "taper {}",
        d.taper
    );
    assert_eq!(d.bend, 0.0);
    // Turning the hand clockwise about the wand: twist, the end turning with it.
    let turn = Quat::from_axis_angle(Vec3::NEG_Z, 0.3);
    hand.drag(&mut c, &mut h, None, CHEST, CHEST, q, turn, 6)
        .unwrap();
    let d = deformation(&c, 1);
    assert!((d.twist - 0.3 / hl).abs() < 1e-3, "twist {}", d.twist);
    assert_eq!(h.undo_depth(), depth + 2);
    // Dragged far, every parameter stops inside its valid range.
    hand.drag(
        &mut c,
        &mut h,
        None,
        CHEST,
        CHEST + Vec3::new(1.0, 0.0, -1.0),
        q,
        Quat::from_axis_angle(Vec3::NEG_Z, 3.0),
        10,
    )
    .unwrap();
    let d = deformation(&c, 1);
    c.muscles[1].shape.validate().unwrap();
    assert!(
        (d.taper.x + DEFORM_LIMIT / hl).abs() < 1e-4,
        "taper {}",
        d.taper
    );
    let widest = 1.0 + d.taper.x.abs().max(d.taper.y.abs()) * hl;
    let bend_max = DEFORM_LIMIT * (std::f32::consts::PI / hl).min(1.0 / (widest * xy));
    assert!(
        (d.bend - bend_max).abs() < 1e-3,
        "bend {} of {bend_max}",
        d.bend
    );
    assert!(d.twist <= std::f32::consts::PI / hl + 1e-4);
    // A tiny tremor (within the dead zones) changes nothing and adds no step.
    let depth = h.undo_depth();
    let held = c.clone();
    hand.drag(
        &mut c,
        &mut h,
        None,
        CHEST,
        CHEST + Vec3::splat(0.001),
        q,
        Quat::from_axis_angle(Vec3::NEG_Z, 0.02),
        4,
    )
    .unwrap();
    assert!(c == held);
    assert_eq!(h.undo_depth(), depth);
}

#[test]
fn a_deform_gesture_under_symmetry_mirrors_bend_and_twist() {
    let (mut c, mut h) = penguin_with_flippers();
    let sym = Symmetry::default();
    let before = c.clone();
    let depth = h.undo_depth();
    let mut hand = Hand::new(ToolKind::Deform, &mut c, &mut h);
    let at = Vec3::new(0.16, 0.6, 0.02);
    hand.drag(
        &mut c,
        &mut h,
        Some(&sym),
        at,
        at + Vec3::new(0.004, 0.003, 0.006),
        Quat::IDENTITY,
        Quat::from_axis_angle(Vec3::NEG_Z, 0.4),
        6,
    )
    .unwrap();
    let (l, r) = (deformation(&c, 2), deformation(&c, 3));
    assert_ne!(l, deformation(&before, 2), "the left flipper deformed");
    assert_eq!(r.twist, -l.twist);
    assert_eq!(r.bend, -l.bend);
    assert_eq!(r.taper, l.taper);
    assert_mirrored_muscles(&c, h.posture(), 2, 3);
    assert_eq!(h.undo_depth(), depth + 1, "both sides in one step");
    h.undo(&mut c).unwrap();
    assert!(c == before);
}

#[test]
fn gestures_on_a_locked_part_are_refused_at_the_press_and_change_nothing() {
    let (mut c, mut h) = penguin_body();
    let mut hand = Hand::new(ToolKind::Deform, &mut c, &mut h);
    hand.tools.state.current_joint = 2;
    {
        let mut ctx = ToolContext {
            character: &mut c,
            history: &mut h,
            symmetry: None,
        };
        assert!(hand.tools.toggle_lock_current(&mut ctx).unwrap());
    }
    assert!(c.skeleton.joints[2].locked);
    let locked = c.clone();
    let depth = h.undo_depth();
    for kind in [ToolKind::Deform, ToolKind::Superellipse] {
        let mut ctx = ToolContext {
            character: &mut c,
            history: &mut h,
            symmetry: None,
        };
        hand.tools.set_tool(kind, &mut ctx).unwrap();
        let err = hand
            .frame(
                &mut c,
                &mut h,
                None,
                HandState::at(CHEST).with_trigger(true),
            )
            .unwrap_err();
        assert!(matches!(err, EditError::Locked { joint: 2, .. }), "{err:?}");
        assert!(err.to_string().contains("'chest'"), "{err}");
        assert!(!hand.tools.busy(), "the gesture ended");
        let moved = HandState::at(CHEST + Vec3::new(0.05, 0.0, 0.0)).with_trigger(true);
        hand.frame(&mut c, &mut h, None, moved).unwrap();
        hand.frame(&mut c, &mut h, None, HandState::at(CHEST))
            .unwrap();
        assert!(c == locked, "{kind:?} changed a locked part");
        assert_eq!(h.undo_depth(), depth);
    }
    // Unlocking is a step too, and then the tool works.
    let mut ctx = ToolContext {
        character: &mut c,
        history: &mut h,
        symmetry: None,
    };
    assert!(!hand.tools.toggle_lock_current(&mut ctx).unwrap());
    hand.tools.set_tool(ToolKind::Deform, &mut ctx).unwrap();
    let q = Quat::IDENTITY;
    hand.drag(&mut c, &mut h, None, CHEST, CHEST + Vec3::X * 0.01, q, q, 3)
        .unwrap();
    assert!(deformation(&c, 1).bend > 0.0);
}

#[test]
fn the_shape_tools_give_a_bare_joint_a_muscle_and_size_it_in_one_step() {
    let mut c = root_only();
    let mut h = History::new(&c);
    let tip = Vec3::new(0.0, 0.5, 0.0);
    h.apply(
        &mut c,
        Command::AddJoint {
            parent: 0,
            name: "bare".into(),
            position_world: tip,
            muscle: None,
        },
    )
    .unwrap();
    let bare = c.clone();
    let depth = h.undo_depth();
    let mut hand = Hand::new(ToolKind::Sphere, &mut c, &mut h);
    let q = Quat::IDENTITY;
    hand.drag(
        &mut c,
        &mut h,
        None,
        tip,
        tip + Vec3::new(0.08, 0.0, 0.0),
        q,
        q,
        4,
    )
    .unwrap();
    assert_eq!(c.muscles.len(), 1);
    assert_eq!(c.muscles[0].joint, 1);
    assert_eq!(c.skeleton.joints.len(), 2, "no new joint");
    match c.muscles[0].shape.primitive {
        crate::shape::Primitive::Sphere { radius } => assert!((radius - 0.08).abs() < 1e-5),
        ref p => panic!("{p:?}"),
    }
    assert_eq!(h.undo_depth(), depth + 1);
    h.undo(&mut c).unwrap();
    assert!(c == bare);
    // A click keeps the default radius.
    hand.drag(&mut c, &mut h, None, tip, tip, q, q, 1).unwrap();
    assert_eq!(
        c.muscles[0].shape,
        MuscleShape::sphere(crate::tools::tool::DEFAULT_RADIUS)
    );
}

#[test]
fn select_ik_and_deform_pick_along_the_wand_ray() {
    let (mut c, mut h) = penguin_body();
    // A metre in front of the chest, pointing at it (the wand is −z; the
    // penguin faces +z).
    let front = Vec3::new(0.0, 0.6, 1.0);
    let mut hand = Hand::new(ToolKind::Select, &mut c, &mut h);
    hand.frame(
        &mut c,
        &mut h,
        None,
        HandState::at(front).with_trigger(true),
    )
    .unwrap();
    hand.frame(&mut c, &mut h, None, HandState::at(front))
        .unwrap();
    assert_eq!(hand.tools.state.current_joint, 2);
    // Pointing at nothing leaves the selection.
    let away = HandState::at(front).with_orientation(Quat::from_rotation_y(std::f32::consts::PI));
    hand.frame(&mut c, &mut h, None, away.with_trigger(true))
        .unwrap();
    hand.frame(&mut c, &mut h, None, away).unwrap();
    assert_eq!(hand.tools.state.current_joint, 2);
    // The deformation tool acts on the pointed-at head.
    let head_front = Vec3::new(0.0, 0.82, 1.0);
    let mut ctx = ToolContext {
        character: &mut c,
        history: &mut h,
        symmetry: None,
    };
    hand.tools.set_tool(ToolKind::Deform, &mut ctx).unwrap();
    let q = Quat::IDENTITY;
    hand.drag(
        &mut c,
        &mut h,
        None,
        head_front,
        head_front + Vec3::new(0.01, 0.0, 0.0),
        q,
        q,
        3,
    )
    .unwrap();
    assert!(deformation(&c, 2).bend > 0.0, "the head muscle bent");
    assert_eq!(deformation(&c, 1), tapered_chest().deformation);
    // IK by pointing: the head hangs on the wand and follows it.
    let mut ctx = ToolContext {
        character: &mut c,
        history: &mut h,
        symmetry: None,
    };
    hand.tools.set_tool(ToolKind::Ik, &mut ctx).unwrap();
    let head0: Vec3 = forward_kinematics(&c.skeleton, h.posture())[3]
        .translation
        .into();
    let depth = h.undo_depth();
    let shift = Vec3::new(0.03, -0.02, 0.0);
    hand.drag(
        &mut c,
        &mut h,
        None,
        head_front,
        head_front + shift,
        q,
        q,
        6,
    )
    .unwrap();
    assert_eq!(h.undo_depth(), depth + 1);
    let head1: Vec3 = forward_kinematics(&c.skeleton, h.posture())[3]
        .translation
        .into();
    assert!(
        head1.distance(head0 + shift) < 2e-3,
        "head at {head1}, want {}",
        head0 + shift
    );
}

/// Root and three joints in a row along +x, without muscles.
fn arm() -> (Character, History) {
    let mut c = root_only();
    let mut h = History::new(&c);
    for k in 1..=3 {
        h.apply(
            &mut c,
            Command::AddJoint {
                parent: k - 1,
                name: format!("arm{k}"),
                position_world: Vec3::new(0.1 * k as f32, 0.2, 0.0),
                muscle: None,
            },
        )
        .unwrap();
    }
    (c, h)
}

fn world_rotation(c: &Character, p: &Posture, j: usize) -> Quat {
    Quat::from_mat3a(&forward_kinematics(&c.skeleton, p)[j].matrix3).normalize()
}

#[test]
fn ik_turns_the_grabbed_joint_with_the_hand_within_joint_limits() {
    let (mut c, mut h) = arm();
    let end = Vec3::new(0.3, 0.2, 0.0);
    let start = world_rotation(&c, h.posture(), 3);
    let mut hand = Hand::new(ToolKind::Ik, &mut c, &mut h);
    // Reachable: turn the hand 0.4 rad about a tilted axis and move it 3 cm.
    let turn = Quat::from_axis_angle(Vec3::new(0.3, 1.0, 0.5).normalize(), 0.4);
    let to = end + Vec3::new(-0.02, 0.02, 0.01);
    hand.drag(&mut c, &mut h, None, end, to, Quat::IDENTITY, turn, 12)
        .unwrap();
    let p = h.posture().clone();
    let got = world_rotation(&c, &p, 3);
    let want = turn * start;
    assert!(
        got.angle_between(want) < 1e-2,
        "orientation off by {} rad",
        got.angle_between(want)
    );
    let reached: Vec3 = forward_kinematics(&c.skeleton, &p)[3].translation.into();
    assert!(reached.distance(to) < 2e-3, "{reached} vs {to}");
    // Without following the rotation, only the position is held.
    h.undo(&mut c).unwrap();
    hand.tools.state.ik_follow_rotation = false;
    hand.drag(&mut c, &mut h, None, end, end, Quat::IDENTITY, turn, 6)
        .unwrap();
    assert_eq!(h.posture(), &c.skeleton.rest_posture(), "nothing to do");
    hand.tools.state.ik_follow_rotation = true;

    // Limited: the end joint may turn 0.1 rad per axis, the middle one is
    // locked; a 1 rad turn cannot be followed, and the limits hold.
    let limited = Dof {
        free: true,
        min: -0.1,
        max: 0.1,
    };
    h.apply(
        &mut c,
        Command::SetDofs {
            joint: 3,
            dofs: [limited; 3],
        },
    )
    .unwrap();
    h.apply(
        &mut c,
        Command::SetLocked {
            joint: 2,
            locked: true,
        },
    )
    .unwrap();
    let big = Quat::from_axis_angle(Vec3::Z, 1.0);
    hand.drag(&mut c, &mut h, None, end, end, Quat::IDENTITY, big, 12)
        .unwrap();
    let p = h.posture();
    for (j, joint) in c.skeleton.joints.iter().enumerate() {
        for a in 0..3 {
            let (dof, v) = (joint.dofs[a], p.angles[j][a]);
            if dof.free {
                assert!(v >= dof.min - 1e-6 && v <= dof.max + 1e-6, "joint {j}: {v}");
            } else {
                assert_eq!(v, 0.0, "locked joint {j} moved");
            }
        }
    }
    let got = world_rotation(&c, p, 3);
    assert!(got.angle_between(start) > 0.05, "it turned some way");
}

#[test]
fn a_rebind_and_a_lock_under_symmetry_are_mirrored_in_one_step() {
    let (mut c, mut h) = penguin_with_flippers();
    let sym = Symmetry::default();
    let before = c.clone();
    let depth = h.undo_depth();
    // A skin point on the left, well away from every joint.
    let s = &c.skins[0];
    let joints = forward_kinematics(&c.skeleton, h.posture());
    let k = (s.m..s.m * (s.n - 1))
        .filter(|&k| {
            let p = s.points.position[k];
            p.x > 0.08
                && joints
                    .iter()
                    .all(|x| Vec3::from(x.translation).distance(p) > 0.08)
        })
        .max_by(|&a, &b| s.points.position[a].x.total_cmp(&s.points.position[b].x))
        .expect("a point on the left");
    let tip = s.points.position[k] + Vec3::new(0.01, 0.0, 0.0);
    let image = (0..s.point_count())
        .min_by(|&a, &b| {
            let t = sym.reflect(s.points.position[k]);
            s.points.position[a]
                .distance(t)
                .total_cmp(&s.points.position[b].distance(t))
        })
        .unwrap();
    assert_ne!(image, k);
    // Release inside the belly (a centre muscle, its own mirror image).
    let release = Vec3::new(0.1, 0.35, 0.0);
    let mut hand = Hand::new(ToolKind::Skin, &mut c, &mut h);
    let q = Quat::IDENTITY;
    hand.drag(&mut c, &mut h, Some(&sym), tip, release, q, q, 4)
        .unwrap();
    let bands = &c.skins[0].points.band;
    let (a, b) = (bands[k].unwrap(), bands[image].unwrap());
    assert_eq!((a.muscle, b.muscle), (0, 0));
    assert!(
        b.anchor
            .abs_diff_eq(Vec3::new(-a.anchor.x, a.anchor.y, a.anchor.z), 1e-6),
        "{} vs {}",
        a.anchor,
        b.anchor
    );
    assert_eq!(h.undo_depth(), depth + 1);
    h.undo(&mut c).unwrap();
    assert!(c == before);
    // Locking the left flipper locks the right one too, in one step.
    h.apply_symmetric(
        &mut c,
        Command::LockPart {
            joint: 3,
            locked: true,
        },
        &sym,
    )
    .unwrap();
    assert!(c.skeleton.joints[3].locked && c.skeleton.joints[4].locked);
    assert!(!c.skeleton.joints[2].locked);
    h.undo(&mut c).unwrap();
    assert!(c == before);
}

#[test]
fn the_deform_tool_reads_the_drag_in_the_muscles_own_frame() {
    // The flipper's muscle is turned in its joint: a drag along its local x
    // only bends, one along its local z only tapers.
    let (mut c, mut h) = penguin_with_flippers();
    let m = flipper_muscle();
    let (x, z) = (m.rotation * Vec3::X, m.rotation * Vec3::Z);
    let hl = 0.05f32; // the flipper's half-length along its local z
    let start = deformation(&c, 2);
    let mut hand = Hand::new(ToolKind::Deform, &mut c, &mut h);
    let at = Vec3::new(0.16, 0.6, 0.02);
    let q = Quat::IDENTITY;
    hand.drag(&mut c, &mut h, None, at, at + 0.006 * x, q, q, 3)
        .unwrap();
    let d = deformation(&c, 2);
    assert!(
        (d.bend - start.bend - 2.0 * 0.006 / (hl * hl)).abs() < 1e-2,
        "{d:?}"
    );
    assert!(d.taper.abs_diff_eq(start.taper, 1e-4) && (d.twist - start.twist).abs() < 1e-4);
    h.undo(&mut c).unwrap();
    hand.drag(&mut c, &mut h, None, at, at + 0.006 * z, q, q, 3)
        .unwrap();
    let d = deformation(&c, 2);
    let want = start.taper + Vec2::splat(0.006 / (hl * hl));
    assert!(d.taper.abs_diff_eq(want, 1e-2), "{d:?}");
    assert!((d.bend - start.bend).abs() < 1e-3, "{d:?}");
    // Only the left flipper: no symmetry here.
    assert_eq!(deformation(&c, 3).bend, -start.bend);
}

/// The left hand's roll gesture undoes and redoes like its A and B buttons:
/// a joint made with the sphere tool goes with a quick counter-clockwise
/// roll and comes back with a clockwise one; a slow roll does nothing.
#[test]
fn a_quick_roll_of_the_left_hand_undoes_and_redoes() {
    use crate::input::{HandState, InputFrame};
    let mut c = root_only();
    let mut h = History::new(&c);
    let mut tools = Toolbox::new();
    let mut t = 0.0;
    let mut feed =
        |tools: &mut Toolbox, c: &mut Character, h: &mut History, right: HandState, roll: f32| {
            t += 1.0 / 90.0;
            let left = HandState::at(Vec3::new(-0.3, 1.0, -0.3))
                .with_orientation(Quat::from_axis_angle(Vec3::NEG_Z, roll));
            let mut ctx = ToolContext {
                character: c,
                history: h,
                symmetry: None,
            };
            tools
                .handle(
                    &InputFrame {
                        time: t,
                        right,
                        left,
                    },
                    &mut ctx,
                )
                .unwrap();
        };
    {
        let mut ctx = ToolContext {
            character: &mut c,
            history: &mut h,
            symmetry: None,
        };
        tools.set_tool(ToolKind::Sphere, &mut ctx).unwrap();
    }
    let at = HandState::at(Vec3::new(0.2, 0.5, 0.1));
    feed(&mut tools, &mut c, &mut h, at, 0.0);
    feed(&mut tools, &mut c, &mut h, at.with_trigger(true), 0.0);
    feed(&mut tools, &mut c, &mut h, at, 0.0);
    assert_eq!(c.skeleton.joints.len(), 2, "a joint made");
    let made = c.clone();
    // A slow roll (90° over 3 s) and back: nothing.
    for k in 0..=270 {
        feed(&mut tools, &mut c, &mut h, at, -1.57 * k as f32 / 270.0);
    }
    for k in 0..=270 {
        feed(
            &mut tools,
            &mut c,
            &mut h,
            at,
            -1.57 * (1.0 - k as f32 / 270.0),
        );
    }
    assert_eq!(c, made, "a slow roll is not the gesture");
    // Quickly counter-clockwise (90° in 0.2 s) and back: undone once.
    for k in 0..=18 {
        feed(&mut tools, &mut c, &mut h, at, -1.57 * k as f32 / 18.0);
    }
    for k in 0..=18 {
        feed(
            &mut tools,
            &mut c,
            &mut h,
            at,
            -1.57 * (1.0 - k as f32 / 18.0),
        );
    }
    assert_eq!(c.skeleton.joints.len(), 1, "undone");
    // Clockwise: redone, exactly.
    for k in 0..=18 {
        feed(&mut tools, &mut c, &mut h, at, 1.57 * k as f32 / 18.0);
    }
    assert_eq!(c, made, "redone");
}

/// `--record`: the start is saved beside the session at once, the file is
/// rewritten at most once per interval while editing and in full at the
/// end, it loads as a session that rebuilds the character from that start,
/// and a path that cannot be written fails before any work is done.
#[test]
fn a_recorder_keeps_the_start_beside_the_session_and_replays() {
    use crate::tools::session::{SessionRecorder, load_session, replay};
    let dir = tempfile::tempdir().unwrap();
    let start = root_only();
    let path = dir.path().join("rec.ron");
    let mut recorder = SessionRecorder::new(&path, &start).unwrap();
    let start_file = dir.path().join("rec.start.ron");
    assert_eq!(crate::io::load_character(&start_file).unwrap(), start);
    let (mut c, mut h) = (start.clone(), History::new(&start));
    for cmd in penguin_script().into_iter().take(2) {
        h.apply(&mut c, cmd).unwrap();
    }
    // Just written (empty) at creation: not again within the interval.
    assert!(!recorder.update(&h).unwrap());
    assert_eq!(load_session(&path).unwrap().commands.len(), 0);
    let message = recorder.finish(&h);
    assert!(message.contains("2 commands"), "{message}");
    let session = load_session(&path).unwrap();
    assert_eq!(session.start.as_deref(), Some("rec.start.ron"));
    let mut rebuilt = crate::io::load_character(&start_file).unwrap();
    replay(&mut rebuilt, &session, &path).unwrap();
    assert_eq!(rebuilt, c);
    // Under a file, where no folder can be made: refused now, naming the file.
    std::fs::write(dir.path().join("a-file"), b"").unwrap();
    let bad = dir.path().join("a-file/rec.ron");
    let err = SessionRecorder::new(&bad, &start).unwrap_err().to_string();
    assert!(err.contains("rec.start.ron"), "{err}");
}
