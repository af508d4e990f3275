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

/// Plays the sculpt tool with `brush` of `radius` through `frames` (time,
/// tip, hand orientation, trigger).
fn play(
    c: &mut Character,
    h: &mut History,
    sym: Option<&Symmetry>,
    (brush, radius): (BrushKind, f32),
    frames: &[(f64, Vec3, Quat, f32)],
) {
    let mut ctx = ToolContext {
        character: c,
        history: h,
        symmetry: sym,
    };
    let mut tools = Toolbox::new();
    tools.state.sculpt_brush = brush;
    tools.state.lipo_radius = radius;
    tools.set_tool(ToolKind::Sculpt, &mut ctx).unwrap();
    for &(time, at, turn, trigger) in frames {
        let frame = InputFrame {
            time,
            right: HandState {
                pose: (at, turn),
                trigger,
                buttons: 0,
            },
            left: HandState::default(),
        };
        tools.handle(&frame, &mut ctx).unwrap();
    }
}

/// Drags the sculpt tool's grab brush from `from` to `to` in three frames.
fn sculpt(c: &mut Character, h: &mut History, sym: Option<&Symmetry>, from: Vec3, to: Vec3) {
    let radius = ToolState::default().lipo_radius;
    let q = Quat::IDENTITY;
    let frames = [
        (0.0, from, q, 1.0),
        (0.1, from.lerp(to, 0.5), q, 1.0),
        (0.2, to, q, 1.0),
        (0.3, to, q, 0.0),
    ];
    play(c, h, sym, (BrushKind::Grab, radius), &frames);
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

/// Holds the sculpt tool's `brush` at `at` (turned by `turn` after the
/// press) for three frames of 0.1 s, with brush radius `radius`.
fn hold(c: &mut Character, h: &mut History, brush: BrushKind, at: Vec3, turn: Quat, radius: f32) {
    let mut frames = vec![(0.0, at, Quat::IDENTITY, 1.0)];
    frames.extend((1..=3).map(|k| (0.1 * f64::from(k), at, turn, 1.0)));
    frames.push((0.4, at, turn, 0.0));
    play(c, h, None, (brush, radius), &frames);
}

fn sculpt_cmd(centre: Vec3, radius: f32, brush: SculptBrush) -> Command {
    Command::SculptBlendTarget {
        target: 0,
        centre,
        radius,
        brush,
    }
}

/// The brushes' arithmetic on the octahedron: smooth moves a vertex the
/// asked share of the way to its neighbours' mean (here the centre), only
/// within reach; inflate moves every vertex along its normal (radially) by
/// the distance times the falloff; each is undone exactly.
#[test]
fn smooth_moves_toward_the_neighbours_mean_and_inflate_along_the_normals() {
    let (mut c, base) = penguin_with_mesh();
    let o = Vec3::new(0.0, 0.3, 0.0);
    let mut h = History::new(&c);
    let name = "bump".to_string();
    h.apply(&mut c, Command::AddBlendTarget { name }).unwrap();
    let offset = Vec3::X * 0.03;
    h.apply(
        &mut c,
        sculpt_cmd(base[0], 0.05, SculptBrush::Grab { offset }),
    )
    .unwrap();
    let bumped = target(&c, 0);
    assert!(bumped[0].distance(base[0] + offset) < 1e-6);

    let smooth = SculptBrush::Smooth { strength: 0.5 };
    h.apply(&mut c, sculpt_cmd(bumped[0], 0.05, smooth))
        .unwrap();
    let t = target(&c, 0);
    // Its neighbours (±y, ±z) average to the centre.
    let want = bumped[0] + 0.5 * (o - bumped[0]);
    assert!(t[0].distance(want) < 1e-6, "{} against {want}", t[0]);
    assert_eq!(&t[1..], &bumped[1..], "the others are out of reach");
    h.undo(&mut c).unwrap();
    assert_eq!(target(&c, 0), bumped, "undone exactly");

    let inflate = SculptBrush::Inflate { distance: 0.01 };
    h.apply(&mut c, sculpt_cmd(o, 1.0, inflate)).unwrap();
    let t = target(&c, 0);
    for k in 0..6 {
        let d = bumped[k].distance(o);
        let w = (-2.0 * d * d).exp();
        let grew = t[k].distance(o) - d;
        let along = (t[k] - bumped[k])
            .normalize()
            .dot((bumped[k] - o).normalize());
        if k == 0 {
            // The bump's normal leans toward its neighbours: still outward.
            assert!(grew > 0.5 * 0.01 * w, "vertex 0 grew {grew}");
        } else {
            assert!(
                (grew - 0.01 * w).abs() < 2e-3 * 0.01,
                "vertex {k} grew {grew}"
            );
            assert!(along > 0.999, "vertex {k} moved along its normal: {along}");
        }
    }
    h.undo(&mut c).unwrap();
    assert_eq!(target(&c, 0), bumped, "undone exactly");
}

/// The sculpt tool with the smooth and inflate brushes, as a user holds
/// them: smooth pulls a bump back while held; inflate swells the mesh, and
/// twisted counter-clockwise shrinks it; one undo step per hold.
#[test]
fn the_smooth_and_inflate_brushes_work_while_held_and_a_twist_deflates() {
    let (mut c, base) = penguin_with_mesh();
    let o = Vec3::new(0.0, 0.3, 0.0);
    let mut h = History::new(&c);
    sculpt(&mut c, &mut h, None, base[0], base[0] + Vec3::X * 0.03);
    let bumped = target(&c, 0);
    let depth = h.undo_depth();
    hold(
        &mut c,
        &mut h,
        BrushKind::Smooth,
        bumped[0],
        Quat::IDENTITY,
        0.05,
    );
    let t = target(&c, 0);
    let (before, after) = (bumped[0].distance(o), t[0].distance(o));
    assert!(
        after < before - 0.05 && after > 0.0,
        "the bump relaxes: {before} → {after} m from the centre"
    );
    assert_eq!(h.undo_depth(), depth + 1, "one undo step");

    let size = |t: &[Vec3]| t.iter().map(|p| p.distance(o)).sum::<f32>();
    let start = size(&target(&c, 0));
    hold(&mut c, &mut h, BrushKind::Inflate, o, Quat::IDENTITY, 0.1);
    let swollen = size(&target(&c, 0));
    assert!(swollen > start + 1e-3, "inflated: {start} → {swollen}");
    let left = Quat::from_axis_angle(Vec3::NEG_Z, -0.6);
    hold(&mut c, &mut h, BrushKind::Inflate, o, left, 0.1);
    let shrunk = size(&target(&c, 0));
    assert!(shrunk < swollen - 1e-3, "deflated: {swollen} → {shrunk}");
    assert_eq!(h.undo_depth(), depth + 3);
    c.validate().unwrap();
}

/// A brush with values a front end should never send is refused, naming
/// the field, and changes nothing.
#[test]
fn bad_brush_values_are_refused_naming_the_field() {
    let (mut c, base) = penguin_with_mesh();
    let mut h = History::new(&c);
    let name = "t".to_string();
    h.apply(&mut c, Command::AddBlendTarget { name }).unwrap();
    let before = c.clone();
    for (brush, field) in [
        (SculptBrush::Smooth { strength: 1.5 }, "brush.strength"),
        (SculptBrush::Smooth { strength: f32::NAN }, "brush.strength"),
        (SculptBrush::Inflate { distance: 0.2 }, "brush.distance"),
        (
            SculptBrush::Inflate {
                distance: f32::INFINITY,
            },
            "brush.distance",
        ),
        (SculptBrush::Grab { offset: Vec3::NAN }, "brush.offset"),
    ] {
        let e = h
            .apply(&mut c, sculpt_cmd(base[0], 0.1, brush))
            .unwrap_err();
        assert!(e.to_string().contains(field), "{brush:?}: {e}");
        assert_eq!(c, before, "{brush:?} changed nothing");
    }
}
