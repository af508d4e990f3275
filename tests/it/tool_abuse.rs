//! The editing history under abuse: random sequences of tool commands, valid
//! and not (indices past the end, NaN, negative and huge values), applied to
//! a character. Each command either applies and leaves a character that
//! validates, or is refused and changes nothing; undoing everything restores
//! the start exactly, and redoing everything restores the end exactly.

use glam::{Quat, Vec3};
use plasticine::character::{Character, Dof, Posture};
use plasticine::io::character_to_string;
use plasticine::shape::MuscleShape;
use plasticine::tools::{Command, History, NewMuscle};
use proptest::prelude::*;

/// The shipped penguin with 8×8 skins: every kind of part, small enough to
/// compare whole after every command.
fn start() -> Character {
    let mut c = plasticine::samples::shipped_penguin();
    for s in &mut c.skins {
        *s = plasticine::character::resample(s, 8, 8).unwrap();
    }
    c
}

/// Floats as a hostile tool script writes them.
fn value() -> impl Strategy<Value = f32> {
    prop_oneof![
        16 => -1.0f32..1.0,
        1 => Just(0.0f32),
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(-5.0f32),
        1 => Just(1e30f32),
    ]
}

fn point() -> impl Strategy<Value = Vec3> {
    (value(), value(), value()).prop_map(|(x, y, z)| Vec3::new(x, y, z))
}

/// Indices: mostly in range for the penguin (11 joints, 8 muscles, 3 skins,
/// 64 points), sometimes past the end.
fn index(n: usize) -> impl Strategy<Value = usize> {
    prop_oneof![10 => 0..n, 1 => n..n + 3, 1 => Just(usize::MAX)]
}

fn muscle() -> impl Strategy<Value = NewMuscle> {
    (value(), point()).prop_map(|(r, offset)| NewMuscle {
        shape: MuscleShape::sphere(r.abs().max(r) * 0.1),
        offset: offset * 0.1,
        rotation: Quat::IDENTITY,
    })
}

fn posture(joints: usize) -> impl Strategy<Value = Posture> {
    (
        proptest::collection::vec(point(), joints - 1..joints + 2),
        point(),
    )
        .prop_map(|(angles, root_translation)| Posture {
            angles,
            root_translation: root_translation * 0.1,
            blend: Vec::new(),
        })
}

fn command(joints: usize) -> impl Strategy<Value = Command> {
    prop_oneof![
        (index(joints), point(), proptest::option::of(muscle())).prop_map(|(parent, p, muscle)| {
            Command::AddJoint {
                parent,
                name: format!("j{parent}"),
                position_world: p * 0.5,
                muscle,
            }
        }),
        (index(joints), muscle()).prop_map(|(joint, muscle)| Command::AddMuscle { joint, muscle }),
        (index(8), value()).prop_map(|(muscle, r)| Command::EditMuscle {
            muscle,
            shape: MuscleShape::sphere(r * 0.2),
        }),
        (index(joints), point(), any::<bool>()).prop_map(|(joint, p, keep_children)| {
            Command::MoveJoint {
                joint,
                position_world: p * 0.5,
                keep_children,
            }
        }),
        index(joints).prop_map(|joint| Command::DeleteJoint { joint }),
        (index(joints), value(), value()).prop_map(|(joint, a, b)| Command::SetDofs {
            joint,
            dofs: [Dof {
                free: true,
                min: a * 3.0,
                max: b * 3.0,
            }; 3],
        }),
        (index(joints), any::<bool>())
            .prop_map(|(joint, locked)| Command::SetLocked { joint, locked }),
        posture(joints).prop_map(|posture| Command::SetPosture { posture }),
        (index(3), index(64), value(), value()).prop_map(|(skin, center_point, r, a)| {
            Command::FatStroke {
                skin,
                center_point,
                radius: r * 0.1,
                amount: a * 0.01,
            }
        }),
        (
            index(3),
            proptest::option::of(value()),
            proptest::option::of(value())
        )
            .prop_map(|(skin, mass, bend)| Command::SetSkinMaterial {
                skin,
                region: None,
                stretch: None,
                damping: None,
                mass,
                bend: bend.map(|b| b * 1e-5),
                band_stiffness: None,
            }),
        (proptest::option::of(point()), proptest::option::of(value())).prop_map(
            |(gravity, global_damping)| Command::SetEnvironment {
                gravity,
                global_damping,
            }
        ),
        (value(), posture(joints), value()).prop_map(|(t, posture, tension)| Command::SetKey {
            time: t * 3.0,
            posture,
            tension,
            continuity: 0.0,
            bias: 0.0,
        }),
        (value(), value()).prop_map(|(from, to)| Command::MoveKey {
            from: from * 3.0,
            to: to * 3.0,
        }),
        value().prop_map(|t| Command::DeleteKey { time: t * 3.0 }),
    ]
}

/// The character and the working posture, as text: equal means equal bit
/// for bit (floats are written in full).
fn state(c: &Character, h: &History) -> String {
    format!(
        "{}\n{:?}",
        character_to_string(c).expect("a valid character serializes"),
        h.posture()
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_tool_scripts_never_break_the_character_and_undo_exactly(
        script in proptest::collection::vec(command(11), 1..60)
    ) {
        let mut c = start();
        let mut h = History::new(&c);
        let first = state(&c, &h);
        let mut applied = 0;
        for cmd in script {
            let before = state(&c, &h);
            match h.apply(&mut c, cmd.clone()) {
                Ok(()) => {
                    applied += 1;
                    prop_assert!(c.validate().is_ok(), "{cmd:?} left {:?}", c.validate());
                }
                Err(e) => {
                    prop_assert_eq!(&state(&c, &h), &before, "refused {:?} ({}) but changed", cmd, e);
                }
            }
        }
        let last = state(&c, &h);
        for _ in 0..applied {
            h.undo(&mut c).expect("one undo per applied command");
        }
        prop_assert!(state(&c, &h) == first, "undoing everything restores the start");
        for _ in 0..applied {
            h.redo(&mut c).expect("one redo per undone command");
        }
        prop_assert!(state(&c, &h) == last, "redoing everything restores the end");
    }
}
