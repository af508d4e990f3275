//! The selected key's tension, continuity and bias sliders, dragged with
//! the wand through the frame loop.

use super::*;

/// With a key selected, holding the trigger on the continuity slider and
/// dragging along it sets the key's continuity where the wand is let go,
/// as one undo step; undo gives the key back as it was.
#[test]
fn a_key_s_continuity_slider_dragged_is_one_undo_step() {
    use crate::tools::{ControlPanel, Row, SLIDER_TRACK, TimelineRow};
    let mut c = shipped_penguin();
    c.key_postures.truncate(2);
    let mut fl = FrameLoop::new(c, SolverSettings::default());
    let (mut hands, mut seen, sample, pose) = panel_on_left_hand(&mut fl);
    let left = sample.input.left;
    fl.playback_mut().select_next_key();
    frame(&mut fl, &mut hands, &mut seen);
    let selected = fl.playback().timeline.selected.expect("a key selected");
    let key = |fl: &FrameLoop| {
        let k = fl
            .character()
            .key_postures
            .iter()
            .find(|k| k.time == selected)
            .expect("the key stays");
        (k.tension, k.continuity, k.bias)
    };
    let before = key(&fl);
    let depth = fl.history().undo_depth();
    let row = ControlPanel::rows()
        .iter()
        .position(|&r| r == Row::Timeline(TimelineRow::Continuity))
        .unwrap();
    let (a, b) = SLIDER_TRACK;
    // The wand held from a quarter of the track to three quarters.
    let aim_at = |t: f32| {
        let target = fl.panel().row_point(&sample, row, a + t * (b - a)).unwrap();
        let from = target + pose.transform_vector3(Vec3::Z).normalize() * 0.15;
        HandState::at(from).with_orientation(Quat::from_rotation_arc(
            Vec3::NEG_Z,
            (target - from).normalize(),
        ))
    };
    let path = [
        (0.25, false),
        (0.25, true),
        (0.4, true),
        (0.6, true),
        (0.75, true),
        (0.75, false),
    ];
    let aims: Vec<HandState> = path
        .iter()
        .map(|&(t, pressed)| aim_at(t).with_trigger(pressed))
        .collect();
    for right in aims {
        hands.frames.push_back(InputFrame {
            time: 0.0,
            right,
            left,
        });
        frame(&mut fl, &mut hands, &mut seen);
    }
    let (tension, continuity, bias) = key(&fl);
    assert!(
        (continuity - 0.5).abs() < 0.02,
        "continuity {continuity}, let go at 3/4 of −1..1"
    );
    assert_eq!((tension, bias), (before.0, before.2), "only continuity");
    assert_eq!(fl.history().undo_depth(), depth + 1, "one undo step");
    let said = fl.take_panel_messages().join("\n");
    assert!(said.contains("continuity"), "{said}");
    fl.edit(|_, ctx| ctx.history.undo(ctx.character)).unwrap();
    assert_eq!(key(&fl), before);
}
