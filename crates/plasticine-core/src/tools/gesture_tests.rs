//! Locking, `AddMuscle`, the deformation tool, IK orientation, wand rays and
//! the left hand's roll gesture, fed frame by frame through a toolbox.

use super::tests::{
    assert_mirrored_muscles, build, chest_shape, flipper_muscle, penguin_script,
    penguin_with_flippers, root_only, tapered_chest,
};
use super::*;
use crate::character::{Character, Dof, Posture};
use crate::input::{HandState, InputFrame};
use crate::kinematics::forward_kinematics;
use crate::shape::{BarrDeformation, MuscleShape};
use crate::tools::tool::{DEFORM_LIMIT, ToolContext, ToolKind, Toolbox};
use glam::{Quat, Vec2, Vec3};

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
    #[allow(
        clippy::too_many_arguments,
        reason = "a test helper that spells out one frame of both hands"
    )]
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
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("assets/penguin.ron");
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
