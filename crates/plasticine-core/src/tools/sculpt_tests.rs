//! The sculpt tool and the blendshape target commands: a grab brush on the
//! embedded mesh's target (a first one made from the mesh), shown alone
//! while sculpted, mirrored under symmetry, one undo step per drag.

use super::*;
use crate::character::{Character, EmbeddedMesh, FemFlesh, Flesh};
use crate::input::{HandState, InputFrame};
use glam::{Quat, Vec3};

/// The bare penguin on FEM flesh with an octahedron embedded around its
/// body (vertices 0.1 m from (0, 0.3, 0) along ±x, ±y, ±z), and those.
fn penguin_with_mesh() -> (Character, Vec<Vec3>) {
    let mut c = crate::samples::bare("penguin").unwrap();
    let o = Vec3::new(0.0, 0.3, 0.0);
    let positions = [Vec3::X, -Vec3::X, Vec3::Y, -Vec3::Y, Vec3::Z, -Vec3::Z]
        .map(|d| o + 0.1 * d)
        .to_vec();
    let triangles = vec![
        [0, 2, 4],
        [2, 1, 4],
        [1, 3, 4],
        [3, 0, 4],
        [2, 0, 5],
        [1, 2, 5],
        [3, 1, 5],
        [0, 3, 5],
    ];
    c.flesh = Flesh::Fem(FemFlesh {
        embedded_mesh: Some(EmbeddedMesh {
            source: "octahedron.obj".into(),
            positions: positions.clone(),
            triangles,
        }),
        ..FemFlesh::default()
    });
    c.validate().unwrap();
    (c, positions)
}

/// Drags the sculpt tool from `from` to `to` in three frames.
fn sculpt(c: &mut Character, h: &mut History, sym: Option<&Symmetry>, from: Vec3, to: Vec3) {
    let frame = |time: f64, at: Vec3, trigger: f32| InputFrame {
        time,
        right: HandState {
            pose: (at, Quat::IDENTITY),
            trigger,
            buttons: 0,
        },
        left: HandState::default(),
    };
    let mut ctx = ToolContext {
        character: c,
        history: h,
        symmetry: sym,
    };
    let mut tools = Toolbox::new();
    tools.set_tool(ToolKind::Sculpt, &mut ctx).unwrap();
    for (t, at, trigger) in [
        (0.0, from, 1.0),
        (0.1, from.lerp(to, 0.5), 1.0),
        (0.2, to, 1.0),
        (0.3, to, 0.0),
    ] {
        tools.handle(&frame(t, at, trigger), &mut ctx).unwrap();
    }
}

fn target(c: &Character, k: usize) -> Vec<Vec3> {
    c.blendshapes().unwrap().targets[k].positions.clone()
}

#[test]
fn the_sculpt_tool_drags_a_new_target_shown_alone_in_one_undo_step() {
    let (mut c, base) = penguin_with_mesh();
    let mut h = History::new(&c);
    let depth = h.undo_depth();
    // Grab the +x vertex and pull it 2 cm further out.
    sculpt(&mut c, &mut h, None, base[0], base[0] + Vec3::X * 0.02);
    let shapes = c.blendshapes().expect("a target was made");
    assert_eq!(shapes.targets.len(), 1);
    assert_eq!(shapes.targets[0].name, "sculpt 1");
    let t = target(&c, 0);
    let moved = t[0] - base[0];
    assert!((moved - Vec3::X * 0.02).length() < 1e-4, "{moved}");
    // The others are 0.14 m or more away: past the brush's reach.
    for k in 1..6 {
        assert!(t[k].distance(base[k]) < 1e-6, "vertex {k} moved");
    }
    assert_eq!(h.posture().blend, vec![1.0], "the target is shown alone");
    assert_eq!(h.undo_depth(), depth + 1, "one undo step");
    h.undo(&mut c).unwrap();
    assert!(c.blendshapes().is_none());
    assert!(h.posture().blend.is_empty());
    c.validate().unwrap();
}

#[test]
fn a_sculpt_is_mirrored_and_a_new_target_pads_the_keyed_weights() {
    let (mut c, base) = penguin_with_mesh();
    let mut h = History::new(&c);
    h.apply(
        &mut c,
        Command::AddBlendTarget {
            name: "first".into(),
        },
    )
    .unwrap();
    // A key weighting the first target.
    let mut posture = h.posture().clone();
    posture.blend = vec![0.5];
    h.apply(
        &mut c,
        Command::SetKey {
            time: 0.0,
            posture,
            tension: 0.0,
            continuity: 0.0,
            bias: 0.0,
        },
    )
    .unwrap();
    h.apply(
        &mut c,
        Command::AddBlendTarget {
            name: "second".into(),
        },
    )
    .unwrap();
    assert_eq!(c.key_postures[0].posture.blend, vec![0.5, 0.0]);
    let e = h
        .apply(
            &mut c,
            Command::AddBlendTarget {
                name: "second".into(),
            },
        )
        .unwrap_err();
    assert!(e.to_string().contains("a target is named 'second'"), "{e}");
    c.validate().unwrap();
    // Sculpt the first target (the tool's default) under symmetry: the
    // −x vertex moves as the mirror image of the +x one.
    let sym = Symmetry::x();
    sculpt(
        &mut c,
        &mut h,
        Some(&sym),
        base[0],
        base[0] + Vec3::new(0.02, 0.01, 0.0),
    );
    let t = target(&c, 0);
    let right = t[0] - base[0];
    let left = t[1] - base[1];
    assert!(
        (right - Vec3::new(0.02, 0.01, 0.0)).length() < 1e-4,
        "{right}"
    );
    assert!(
        (left - Vec3::new(-0.02, 0.01, 0.0)).length() < 1e-4,
        "{left}"
    );
    assert_eq!(target(&c, 1), base, "the second target is untouched");
    assert_eq!(h.posture().blend, vec![1.0, 0.0]);
}

#[test]
fn sculpting_without_an_embedded_mesh_is_refused_saying_why() {
    let mut c = crate::samples::bare("penguin").unwrap();
    let mut h = History::new(&c);
    let mut ctx = ToolContext {
        character: &mut c,
        history: &mut h,
        symmetry: None,
    };
    let mut tools = Toolbox::new();
    tools.set_tool(ToolKind::Sculpt, &mut ctx).unwrap();
    let frame = InputFrame {
        time: 0.0,
        right: HandState::at(Vec3::new(0.1, 0.3, 0.0)).with_trigger(true),
        left: HandState::default(),
    };
    let e = tools.handle(&frame, &mut ctx).unwrap_err();
    assert!(e.to_string().contains("fem-import"), "{e}");
    assert_eq!(ctx.history.undo_depth(), 0);
}
