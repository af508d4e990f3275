//! Playback with blendshapes: the blend weight slider performed while the
//! timeline records.

use super::*;

/// The shipped penguin on FEM flesh around a small embedded mesh with one
/// blendshape target ("up", the mesh 1 cm higher), keyed with weight 0 at
/// 0 s and 3 s.
fn blending_penguin() -> crate::character::Character {
    use crate::character::{BlendTarget, Blendshapes, EmbeddedMesh, FemFlesh, Flesh};
    let mut c = shipped_penguin();
    let base = vec![
        Vec3::new(0.0, 0.3, 0.0),
        Vec3::new(0.1, 0.3, 0.0),
        Vec3::new(0.0, 0.4, 0.0),
        Vec3::new(0.0, 0.3, 0.1),
    ];
    c.flesh = Flesh::Fem(FemFlesh {
        embedded_mesh: Some(EmbeddedMesh {
            source: "tetra.obj".into(),
            positions: base.clone(),
            triangles: vec![[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]],
        }),
        blendshapes: Some(Box::new(Blendshapes {
            targets: vec![BlendTarget {
                name: "up".into(),
                positions: base.iter().map(|p| *p + Vec3::Y * 0.01).collect(),
            }],
            boundary: Default::default(),
            interior: true,
            constants: Default::default(),
            linear: false,
        })),
        ..FemFlesh::default()
    });
    let rest = c.skeleton.rest_posture();
    c.key_postures = [0.0, 3.0]
        .map(|time| crate::character::KeyPosture {
            time,
            posture: crate::character::Posture {
                blend: vec![0.0],
                ..rest.clone()
            },
            tension: 0.0,
            continuity: 0.0,
            bias: 0.0,
        })
        .to_vec();
    c.validate().unwrap();
    c
}

/// The blend weight slider held while the timeline plays with performance
/// recording on performs the weight: keys are laid over the keys' motion
/// with the slider's weight, as one undo step, and the working posture is
/// not edited.
#[test]
fn the_blend_weight_slider_performs_the_weight_while_recording() {
    use crate::tools::{ControlPanel, Param, Row, SLIDER_TRACK};
    let c = blending_penguin();
    let mut fl = FrameLoop::new(c, SolverSettings::default());
    let (mut hands, mut seen, sample, pose) = panel_on_left_hand(&mut fl);
    let left = sample.input.left;
    let depth = fl.history().undo_depth();
    let working = fl.history().posture().clone();
    {
        let mut ctl = fl.playback_mut();
        ctl.set_recording(true);
        ctl.play();
    }
    let slider = ControlPanel::rows()
        .iter()
        .position(|&r| r == Row::Param(Param::BlendWeight))
        .unwrap();
    let (a, b) = SLIDER_TRACK;
    let target = fl
        .panel()
        .row_point(&sample, slider, a + 0.8 * (b - a))
        .unwrap();
    let from = target + pose.transform_vector3(Vec3::Z).normalize() * 0.15;
    let aim = HandState::at(from).with_orientation(Quat::from_rotation_arc(
        Vec3::NEG_Z,
        (target - from).normalize(),
    ));
    let hold = |pressed: bool| InputFrame {
        time: 0.0,
        right: aim.with_trigger(pressed),
        left,
    };
    hands.frames.push_back(hold(false));
    frame(&mut fl, &mut hands, &mut seen);
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(900) {
        hands.frames.push_back(hold(true));
        frame(&mut fl, &mut hands, &mut seen);
    }
    hands.frames.push_back(hold(false));
    frame(&mut fl, &mut hands, &mut seen);
    fl.playback_mut().stop();
    frame(&mut fl, &mut hands, &mut seen);
    let keys = fl.character().key_postures.clone();
    let performed: Vec<&crate::character::KeyPosture> = keys
        .iter()
        .filter(|k| k.time > 0.0 && k.time < 3.0)
        .collect();
    assert!(
        performed.len() >= 2,
        "keys laid while held: {:?}",
        keys.iter()
            .map(|k| (k.time, k.posture.blend.clone()))
            .collect::<Vec<_>>()
    );
    for k in &performed {
        assert!(
            (k.posture.blend[0] - 0.8).abs() < 0.02,
            "key at {} weighs {:?}",
            k.time,
            k.posture.blend
        );
    }
    assert_eq!(fl.history().undo_depth(), depth + 1, "one undo step");
    assert_eq!(
        fl.history().posture(),
        &working,
        "the working posture untouched"
    );
    let said = fl.take_panel_messages().join("\n");
    assert!(said.contains("performing the blend weight"), "{said}");
    fl.edit(|_, ctx| ctx.history.undo(ctx.character)).unwrap();
    assert_eq!(fl.character().key_postures.len(), 2);
}
