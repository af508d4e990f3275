//! Symmetric weight painting (Capell §4.5 region weights under LEMAN §6.1
//! symmetric modelling): a stroke is painted again at its mirror image on
//! the counterpart bone, both in one undo step, and the painted weights come
//! out mirror-symmetric on the penguin's (symmetric) flesh lattice.

use super::*;
use crate::character::{Character, FemFlesh, Flesh, WeightStroke};
use crate::fem::falloff;
use crate::fem::{Lattice, skeleton_bones};
use crate::fem::{flesh_lattice, painted_weights};
use crate::input::{HandState, InputFrame};
use glam::{DVec3, Quat, Vec3};

/// Blending width of the regions (m).
const BLEND: f64 = 0.05;

fn fem_penguin() -> Character {
    let mut c = crate::samples::bare("penguin").unwrap();
    c.flesh = Flesh::Fem(FemFlesh {
        blend_width: Some(BLEND),
        ..Default::default()
    });
    c
}

/// The bone whose child (far end) is the joint `child`.
fn bone_to(c: &Character, child: &str) -> usize {
    let k = c.skeleton.find(child).unwrap();
    skeleton_bones(c)
        .iter()
        .position(|b| b.child == Some(k))
        .unwrap()
}

fn strokes(c: &Character) -> Vec<WeightStroke> {
    c.flesh.fem().unwrap().weight_strokes.clone()
}

fn paint(c: &mut Character, h: &mut History, stroke: WeightStroke) -> Option<Command> {
    h.apply_symmetric(c, Command::PaintWeights { stroke }, &Symmetry::x())
        .unwrap()
}

/// For each lattice vertex, the vertex at its mirror image in x = 0; `None`
/// if some vertex has none within `tol` (the lattice is not symmetric).
fn mirror_vertices(lattice: &Lattice, tol: f64) -> Option<Vec<usize>> {
    lattice
        .rest
        .iter()
        .map(|p| {
            let image = DVec3::new(-p.x, p.y, p.z);
            lattice.rest.iter().position(|q| q.distance(image) <= tol)
        })
        .collect()
}

/// Largest |`W_i(a)` − `W_i`'(a')| over bones i and vertices a (i' and a' their
/// mirror images).
fn asymmetry(w: &[Vec<f64>], vertex: &[usize], bone: &[usize]) -> f64 {
    let mut worst = 0.0f64;
    for (i, wi) in w.iter().enumerate() {
        for (a, &x) in wi.iter().enumerate() {
            worst = worst.max((x - w[bone[i]][vertex[a]]).abs());
        }
    }
    worst
}

/// The flesh lattice of `c` with every vertex's and bone's mirror image.
fn symmetric_lattice(c: &Character) -> (Lattice, Vec<usize>, Vec<usize>) {
    let (lattice, _) = flesh_lattice(c, c.flesh.fem().unwrap()).unwrap();
    let vertex = mirror_vertices(&lattice, 1e-9 * lattice.cell_size.x)
        .expect("the penguin's flesh lattice is mirror-symmetric in x = 0");
    let sym = Symmetry::x();
    let bone: Vec<usize> = (0..lattice.bones.len())
        .map(|b| sym.mirror_bone(c, b).unwrap())
        .collect();
    // The automatic weights see the same skeleton on both sides.
    for (a, &a2) in vertex.iter().enumerate() {
        assert_eq!(
            lattice.bone_of_vertex[a].map(|b| bone[b]),
            lattice.bone_of_vertex[a2],
            "vertex {a} is bound asymmetrically"
        );
    }
    (lattice, vertex, bone)
}

/// A stroke on the left flipper is painted on the right one too: centre
/// mirrored, counterpart bone, one undo step for both; the painted weights
/// are mirror-symmetric (and without the image they would not be).
#[test]
fn a_flipper_stroke_is_painted_mirrored_and_undone_with_its_image() {
    let mut c = fem_penguin();
    let mut h = History::new(&c);
    let sym = Symmetry::x();
    // The counterparts: the spine maps to itself, flippers and feet swap
    // (the tips by position at rest, the others by name).
    let (fl, fr) = (bone_to(&c, "flipper_l_tip"), bone_to(&c, "flipper_r_tip"));
    assert_eq!(sym.mirror_bone(&c, fl), Some(fr));
    assert_eq!(sym.mirror_bone(&c, fr), Some(fl));
    for (a, b) in [("flipper_l", "flipper_r"), ("foot_l", "foot_r")] {
        assert_eq!(sym.mirror_bone(&c, bone_to(&c, a)), Some(bone_to(&c, b)));
    }
    for spine in ["belly", "chest", "head", "crown"] {
        let b = bone_to(&c, spine);
        assert_eq!(sym.mirror_bone(&c, b), Some(b));
    }

    let stroke = WeightStroke {
        bone: fl,
        centre: Vec3::new(0.12, 0.28, 0.03),
        // The lattice is coarse (146 vertices, cells of 8.6 cm): a brush
        // that reaches a few of them.
        radius: 0.15,
        amount: 0.6,
    };
    let image = paint(&mut c, &mut h, stroke.clone());
    let want = WeightStroke {
        bone: fr,
        centre: Vec3::new(-0.12, 0.28, 0.03),
        ..stroke.clone()
    };
    assert_eq!(
        image,
        Some(Command::PaintWeights {
            stroke: want.clone()
        })
    );
    assert_eq!(strokes(&c), vec![stroke.clone(), want.clone()]);
    assert_eq!(h.undo_depth(), 1);
    let painted = c.clone();
    h.undo(&mut c).unwrap();
    assert!(strokes(&c).is_empty(), "one undo takes back both strokes");
    h.redo(&mut c).unwrap();
    assert_eq!(c, painted);

    let (lattice, vertex, bone) = symmetric_lattice(&c);
    let auto = painted_weights(&lattice, BLEND, &[]).unwrap();
    let w = painted_weights(&lattice, BLEND, &strokes(&c)).unwrap();
    let one_sided = painted_weights(&lattice, BLEND, &strokes(&c)[..1]).unwrap();
    let (sym_err, auto_err, one_err) = (
        asymmetry(&w, &vertex, &bone),
        asymmetry(&auto, &vertex, &bone),
        asymmetry(&one_sided, &vertex, &bone),
    );
    // The strokes change the weights, on both sides alike.
    let change = |a: usize| (w[fl][a] - auto[fl][a]).abs();
    let moved = (0..lattice.rest.len()).map(change).fold(0.0, f64::max);
    println!(
        "{} vertices; largest painted change {moved:.3}; asymmetry: automatic {auto_err:.2e}, \
         painted pair {sym_err:.2e}, one-sided stroke {one_err:.3}",
        lattice.rest.len()
    );
    assert!(moved > 0.1, "the stroke painted nothing ({moved})");
    assert!(
        auto_err < 1e-9,
        "automatic weights asymmetric by {auto_err}"
    );
    assert!(sym_err < 1e-6, "painted weights asymmetric by {sym_err}");
    assert!(
        one_err > 0.1,
        "one stroke alone should break the symmetry ({one_err})"
    );
}

/// A spine bone is its own counterpart: a stroke on the plane is painted
/// once; just off it, the pair's amounts are scaled so the change at the
/// brush centre is what was asked, not twice it; far off it, the image is
/// painted at full amount. Each result is mirror-symmetric.
#[test]
fn a_spine_stroke_is_painted_once_on_the_plane_and_not_doubled_beside_it() {
    let mut c = fem_penguin();
    let mut h = History::new(&c);
    let belly = bone_to(&c, "chest"); // belly → chest
    let at = |x: f32| WeightStroke {
        bone: belly,
        centre: Vec3::new(x, 0.25, 0.08),
        radius: 0.15,
        // Small enough that no weight is clamped at 1.
        amount: 0.1,
    };
    assert_eq!(paint(&mut c, &mut h, at(0.0)), None, "its own image");
    assert_eq!(strokes(&c), vec![at(0.0)]);

    for (x, scale) in [
        (0.03, 1.0 / (1.0 + falloff(0.4))),
        (0.06, 1.0 / (1.0 + falloff(0.8))),
        (0.09, 1.0),
    ] {
        h.undo(&mut c).unwrap();
        let image = paint(&mut c, &mut h, at(x)).expect("mirrored");
        let amount = (0.1 * scale) as f32;
        let got = strokes(&c);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].centre, at(x).centre);
        assert_eq!(got[1].centre, Vec3::new(-x, 0.25, 0.08));
        assert_eq!(got[1].bone, belly);
        assert!(
            got.iter().all(|s| (s.amount - amount).abs() < 1e-6),
            "x = {x}: amounts {got:?}, want {amount}"
        );
        assert_eq!(
            image,
            Command::PaintWeights {
                stroke: got[1].clone()
            }
        );
    }
    // Each pair paints mirror-symmetric weights. At the lattice vertex
    // nearest the brush centre, the weight change of the scaled pair is
    // compared with that of the stroke alone (`single`) and of the pair
    // unscaled (`doubled`).
    let (lattice, vertex, bone) = symmetric_lattice(&c);
    let auto = painted_weights(&lattice, BLEND, &[]).unwrap();
    for x in [0.03, 0.06, 0.09] {
        h.undo(&mut c).unwrap();
        paint(&mut c, &mut h, at(x)).unwrap();
        let centre = at(x).centre.as_dvec3();
        let (near, _) = lattice
            .rest
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.distance(centre).total_cmp(&b.1.distance(centre)))
            .unwrap();
        let change = |strokes: &[WeightStroke]| {
            let w = painted_weights(&lattice, BLEND, strokes).unwrap();
            (w[belly][near] - auto[belly][near], w)
        };
        let (pair, w) = change(&strokes(&c));
        let (single, _) = change(&[at(x)]);
        let unscaled = [
            at(x),
            WeightStroke {
                centre: Vec3::new(-x, 0.25, 0.08),
                ..at(x)
            },
        ];
        let (doubled, _) = change(&unscaled);
        let err = asymmetry(&w, &vertex, &bone);
        println!(
            "x = {x}: asymmetry {err:.2e}; change at the nearest vertex: pair {pair:.3}, \
             one stroke {single:.3}, unscaled pair {doubled:.3}"
        );
        assert!(err < 1e-6, "x = {x}: asymmetric by {err}");
        assert!(pair > 0.01, "x = {x}: painted nothing ({pair})");
        assert!(pair <= doubled, "x = {x}: {pair} > {doubled}");
        if x == 0.03 {
            // Nearly one brush (the nearest vertex is on the plane, 3.5 cm
            // from both centres): the pair paints about what one does.
            assert!(
                (pair - single).abs() < 0.5 * (doubled - single),
                "x = {x}: the pair paints {pair}, one stroke {single}, two {doubled}"
            );
        }
        if x == 0.09 {
            // Apart (2x > r): unscaled, and the image does not reach here.
            assert!((pair - doubled).abs() < 1e-12 && (pair - single).abs() < 1e-12);
        }
    }
}

/// The weights tool under symmetry: each frame's stroke and its image go
/// into the drag's one undo step. On a bone without a counterpart (a tail
/// off the plane) it paints that side only and says so.
#[test]
fn the_weights_tool_mirrors_its_strokes_or_says_why_not() {
    let mut c = fem_penguin();
    let mut h = History::new(&c);
    let sym = Symmetry::x();
    let frame = |time: f64, at: Vec3, twist: f32, trigger: f32| InputFrame {
        time,
        right: HandState {
            pose: (at, Quat::from_rotation_z(-twist)),
            trigger,
            buttons: 0,
        },
        left: HandState::default(),
    };
    let mut tools = Toolbox::new();
    let mut drag = |c: &mut Character, h: &mut History, at: Vec3| {
        let mut ctx = ToolContext {
            character: c,
            history: h,
            symmetry: Some(&sym),
        };
        tools.set_tool(ToolKind::Weights, &mut ctx).unwrap();
        for (t, twist, trigger) in [(0.0, 0.0, 1.0), (0.1, 0.5, 1.0), (0.2, 0.5, 1.0)] {
            tools
                .handle(&frame(t, at, twist, trigger), &mut ctx)
                .unwrap();
        }
        tools.handle(&frame(0.3, at, 0.5, 0.0), &mut ctx).unwrap();
        tools.state.notice.clone()
    };

    let (fl, fr) = (bone_to(&c, "flipper_l_tip"), bone_to(&c, "flipper_r_tip"));
    let notice = drag(&mut c, &mut h, Vec3::new(0.12, 0.28, 0.03));
    assert_eq!(notice, None);
    let got = strokes(&c);
    let bones: Vec<usize> = got.iter().map(|s| s.bone).collect();
    assert_eq!(bones, vec![fl, fr, fl, fr]);
    for pair in got.chunks(2) {
        assert_eq!(pair[1].centre, Symmetry::x().reflect(pair[0].centre));
        assert_eq!(pair[1].amount, pair[0].amount);
    }
    h.undo(&mut c).unwrap();
    assert!(strokes(&c).is_empty(), "one undo step per drag, images too");

    // A tail off the plane with no joint at its mirror image.
    h.apply(
        &mut c,
        Command::AddJoint {
            parent: 0,
            name: "tail".into(),
            position_world: Vec3::new(0.03, 0.04, -0.12),
            muscle: None,
        },
    )
    .unwrap();
    let tail = bone_to(&c, "tail");
    assert_eq!(sym.mirror_bone(&c, tail), None);
    let notice = drag(&mut c, &mut h, Vec3::new(0.03, 0.04, -0.13)).expect("a notice");
    assert!(
        notice.contains("'base' → 'tail'") && notice.contains("this side only"),
        "{notice}"
    );
    let got = strokes(&c);
    assert_eq!(got.len(), 2, "one stroke a frame, no images: {got:?}");
    assert!(got.iter().all(|s| s.bone == tail));
    // History::apply_symmetric paints it alone and reports no image.
    assert_eq!(paint(&mut c, &mut h, got[0].clone()), None);
    assert_eq!(strokes(&c).len(), 3);
    // The next press clears the notice.
    let notice = drag(&mut c, &mut h, Vec3::new(0.12, 0.28, 0.03));
    assert_eq!(notice, None);
}
