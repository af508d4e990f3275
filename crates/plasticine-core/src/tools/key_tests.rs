//! The key-posture commands (timeline editing, LEMAN §6.4): insert/replace,
//! move, delete and the Kochanek–Bartels parameters, each undone exactly.

use super::*;
use crate::character::{Character, Posture};
use glam::Vec3;

/// The sample penguin without its keys.
fn penguin() -> Character {
    let mut c = crate::samples::shipped_penguin();
    c.key_postures.clear();
    c
}

/// The rest posture with the first joint's angle set to `a` (distinct keys).
fn posed(c: &Character, a: f32) -> Posture {
    let mut p = c.skeleton.rest_posture();
    p.angles[1] = Vec3::new(0.0, 0.0, a);
    p
}

fn set_key(c: &Character, time: f32, a: f32) -> Command {
    Command::SetKey {
        time,
        posture: posed(c, a),
        tension: 0.0,
        continuity: 0.0,
        bias: 0.0,
    }
}

fn times(c: &Character) -> Vec<f32> {
    c.key_postures.iter().map(|k| k.time).collect()
}

/// Applies `cmd`, checks the character validates, undoes it and checks the
/// character is bit for bit what it was, redoes it and returns the result.
fn apply_undo_redo(c: &mut Character, h: &mut History, cmd: Command) -> Character {
    let before = c.clone();
    h.apply(c, cmd.clone()).unwrap();
    c.validate().unwrap();
    let after = c.clone();
    h.undo(c).unwrap();
    assert_eq!(*c, before, "undo of {cmd:?} restores the keys exactly");
    h.redo(c).unwrap();
    assert_eq!(*c, after, "redo of {cmd:?}");
    after
}

#[test]
fn set_key_inserts_sorted_and_replaces_the_key_at_that_time() {
    let mut c = penguin();
    let mut h = History::new(&c);
    for (t, a) in [(1.0, 0.1), (0.0, 0.2), (0.5, 0.3), (2.0, 0.4)] {
        let cmd = set_key(&c, t, a);
        apply_undo_redo(&mut c, &mut h, cmd);
    }
    assert_eq!(times(&c), vec![0.0, 0.5, 1.0, 2.0]);
    assert_eq!(c.key_postures[1].posture, posed(&c, 0.3));
    // Within KEY_TIME_EPSILON of an existing key: replaces it, count unchanged.
    let cmd = Command::SetKey {
        time: 0.5 + KEY_TIME_EPSILON / 2.0,
        posture: posed(&c, -0.7),
        tension: 0.5,
        continuity: -0.25,
        bias: 1.0,
    };
    apply_undo_redo(&mut c, &mut h, cmd);
    assert_eq!(c.key_postures.len(), 4);
    let k = &c.key_postures[1];
    assert_eq!(k.posture, posed(&c, -0.7));
    assert_eq!((k.tension, k.continuity, k.bias), (0.5, -0.25, 1.0));
    assert_eq!(h.undo_depth(), 5);
}

#[test]
fn move_delete_and_tcb_undo_exactly() {
    let mut c = penguin();
    let mut h = History::new(&c);
    for (t, a) in [(0.0, 0.1), (0.5, 0.2), (1.0, 0.3)] {
        let cmd = set_key(&c, t, a);
        h.apply(&mut c, cmd).unwrap();
    }
    // Moving past another key re-sorts; the posture travels with the key.
    apply_undo_redo(
        &mut c,
        &mut h,
        Command::MoveKey {
            from: 0.0,
            to: 0.75,
        },
    );
    assert_eq!(times(&c), vec![0.5, 0.75, 1.0]);
    assert_eq!(c.key_postures[1].posture, posed(&c, 0.1));
    apply_undo_redo(
        &mut c,
        &mut h,
        Command::SetKeyTcb {
            time: 0.75,
            tension: 1.0,
            continuity: 0.0,
            bias: -1.0,
        },
    );
    assert_eq!(c.key_postures[1].tension, 1.0);
    assert_eq!(c.key_postures[1].bias, -1.0);
    apply_undo_redo(&mut c, &mut h, Command::DeleteKey { time: 1.0 });
    assert_eq!(times(&c), vec![0.5, 0.75]);
    // Everything back to no keys, one undo step at a time.
    while h.can_undo() {
        h.undo(&mut c).unwrap();
    }
    assert_eq!(c, penguin());
}

#[test]
fn bad_key_edits_are_refused_and_change_nothing() {
    let mut c = penguin();
    let mut h = History::new(&c);
    for (t, a) in [(0.0, 0.1), (1.0, 0.2)] {
        let cmd = set_key(&c, t, a);
        h.apply(&mut c, cmd).unwrap();
    }
    let before = c.clone();
    let rev = h.revision();
    let nj = c.skeleton.joints.len();
    let mut short = posed(&c, 0.0);
    short.angles.truncate(nj - 1);
    let mut nan_posture = posed(&c, 0.0);
    nan_posture.angles[0].x = f32::NAN;
    let cases: Vec<(Command, &str)> = vec![
        (set_key(&c, f32::NAN, 0.0), "time"),
        (set_key(&c, -0.5, 0.0), "non-negative"),
        (set_key(&c, f32::INFINITY, 0.0), "finite"),
        (
            Command::SetKey {
                time: 2.0,
                posture: short,
                tension: 0.0,
                continuity: 0.0,
                bias: 0.0,
            },
            "joints",
        ),
        (
            Command::SetKey {
                time: 2.0,
                posture: nan_posture,
                tension: 0.0,
                continuity: 0.0,
                bias: 0.0,
            },
            "finite",
        ),
        (
            Command::SetKey {
                time: 2.0,
                posture: posed(&c, 0.0),
                tension: 1.5,
                continuity: 0.0,
                bias: 0.0,
            },
            "tension",
        ),
        (Command::MoveKey { from: 0.0, to: 1.0 }, "already lies at 1"),
        (
            Command::MoveKey {
                from: 0.0,
                to: -1.0,
            },
            "non-negative",
        ),
        (
            Command::MoveKey {
                from: 0.0,
                to: f32::NAN,
            },
            "to",
        ),
        (Command::MoveKey { from: 0.3, to: 2.0 }, "no key at 0.3"),
        (Command::DeleteKey { time: 0.5 }, "no key at 0.5"),
        (Command::DeleteKey { time: f32::NAN }, "no key"),
        (
            Command::SetKeyTcb {
                time: 1.0,
                tension: 0.0,
                continuity: f32::NAN,
                bias: 0.0,
            },
            "continuity",
        ),
    ];
    for (cmd, want) in cases {
        let err = h.apply(&mut c, cmd.clone()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(want), "{cmd:?}: '{text}' lacks '{want}'");
        assert_eq!(c, before, "{cmd:?} was refused but changed the character");
        assert_eq!(h.revision(), rev);
    }
}

#[test]
fn key_commands_round_trip_through_ron_and_have_no_mirror_image() {
    let c = penguin();
    let cmds = vec![
        Command::SetKey {
            time: 0.25,
            posture: posed(&c, 0.3),
            tension: 0.1,
            continuity: -0.2,
            bias: 0.3,
        },
        Command::MoveKey {
            from: 0.25,
            to: 0.5,
        },
        Command::SetKeyTcb {
            time: 0.5,
            tension: 1.0,
            continuity: 0.0,
            bias: -1.0,
        },
        Command::DeleteKey { time: 0.5 },
    ];
    let text = ron::ser::to_string_pretty(&cmds, Default::default()).unwrap();
    let back: Vec<Command> = ron::from_str(&text).unwrap();
    assert_eq!(back, cmds);
    // A SetKey written by hand may leave the KB parameters out.
    let short: Command = ron::from_str(&format!(
        "SetKey(time: 1.0, posture: {})",
        ron::to_string(&posed(&c, 0.0)).unwrap()
    ))
    .unwrap();
    assert!(matches!(short, Command::SetKey { tension: 0.0, .. }));
    let labels: Vec<&str> = cmds.iter().map(Command::label).collect();
    assert_eq!(
        labels,
        [
            "set key",
            "move key",
            "key tension/continuity/bias",
            "delete key"
        ]
    );
    // Mirroring: none of them has a counterpart, so a symmetric apply is one
    // command.
    let mut c = c;
    let mut h = History::new(&c);
    let sym = Symmetry::x();
    for cmd in cmds {
        assert_eq!(sym.mirror(&cmd, &c, h.posture()), None, "{cmd:?}");
        assert_eq!(h.apply_symmetric(&mut c, cmd, &sym).unwrap(), None);
    }
    assert!(c.key_postures.is_empty());
}
