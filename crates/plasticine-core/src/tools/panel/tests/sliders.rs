//! The continuous parameter rows as sliders.

use super::*;

/// Where a press `t` of the way along a slider's track lands on its row.
fn on_track(t: f32) -> f32 {
    let (a, b) = SLIDER_TRACK;
    a + t * (b - a)
}

/// What a slider row's setting is now, in the unit its scale uses.
fn setting(r: &Rig, p: Param) -> f32 {
    match p {
        Param::SkinStretch
        | Param::SkinBend
        | Param::SkinDamping
        | Param::SkinMass
        | Param::BandStiffness => mean_value(&r.c, p, None).unwrap(),
        Param::Gravity => r.c.environment.gravity.length(),
        Param::GlobalDamping => r.c.environment.global_damping,
        Param::Tolerance => r.settings.tolerances.position,
        Param::TimeRatio => r.settings.time_ratio as f32,
        Param::BrushRadius => r.tools.state.lipo_radius,
        other => panic!("{other:?} is not tested here"),
    }
}

/// Every continuous row is a slider: a press along its track sets the
/// value there (on a log scale for stiffnesses, densities and rates), and
/// the row's text puts the knob back where it was pressed.
#[test]
fn a_press_on_a_sliders_track_sets_its_value_and_the_knob_reads_it_back() {
    let sliders: Vec<Param> = ControlPanel::rows()
        .iter()
        .filter_map(|r| match r {
            Row::Param(p) if p.slider().is_some() && *p != Param::BlendWeight => Some(*p),
            _ => None,
        })
        .collect();
    assert_eq!(sliders.len(), 10, "{sliders:?}");
    for p in sliders {
        let scale = p.slider().unwrap();
        for t in [0.3, 0.8] {
            let mut r = Rig::new();
            let before = setting(&r, p);
            r.press_at(Row::Param(p), Side::Left, on_track(t)).unwrap();
            let want = scale.value(t);
            let got = setting(&r, p);
            assert!(
                (got - want).abs() <= 1e-4 * want.abs().max(scale.hi.abs()),
                "{p:?} at {t}: {got} (was {before}), want {want}"
            );
            let line = &r
                .panel
                .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default())
                [row_of(Row::Param(p))];
            let knob = slider_knob(Row::Param(p), line).expect("the row shows a knob");
            assert!(
                (knob - t).abs() < 0.01,
                "{p:?}: {line:?} puts the knob at {knob}, not {t}"
            );
        }
    }
    // The scales' ends.
    let stretch = Param::SkinStretch.slider().unwrap();
    assert!((stretch.value(0.0) - 1e-2).abs() < 1e-8 && (stretch.value(1.0) - 1e2).abs() < 1e-3);
    assert!(
        (stretch.value(0.5) - 1.0).abs() < 1e-5,
        "log scale: the middle is the geometric mean"
    );
    assert_eq!(stretch.position(0.0), 0.0);
    assert_eq!(stretch.position(1e9), 1.0);
    assert_eq!(
        slider_knob(Row::Param(Param::Flesh), "  flesh        kinematic"),
        None
    );
    assert_eq!(
        slider_knob(Row::Param(Param::BandStiffness), "  tissue k_s   -"),
        None
    );
}

/// A drag along the stretch slider is one undo step; a region painted
/// stiffer stays stiffer by the same factor, and undo gives back every
/// point's own value.
#[test]
fn a_material_slider_dragged_scales_every_point_in_one_undo_step() {
    let mut r = Rig::new();
    // Paint part of the first skin twice as stiff.
    let stiff: Vec<usize> = (0..10).collect();
    let base = r.c.skins[0].points.stretch[0][0];
    r.h.apply(
        &mut r.c,
        Command::SetSkinMaterial {
            skin: 0,
            region: Some(stiff.clone()),
            stretch: Some(2.0 * base),
            damping: None,
            mass: None,
            bend: None,
            band_stiffness: None,
        },
    )
    .unwrap();
    let painted = r.c.clone();
    let depth = r.h.undo_depth();
    let row = Row::Param(Param::SkinStretch);
    for t in [0.2, 0.35, 0.6, 0.55] {
        r.press_at(row, Side::Right, on_track(t)).unwrap();
    }
    assert_eq!(r.h.undo_depth(), depth + 1, "the drag is one step");
    let want = Param::SkinStretch.slider().unwrap().value(0.55);
    let mean = mean_value(&r.c, Param::SkinStretch, None).unwrap();
    assert!((mean - want).abs() < 1e-4 * want, "{mean} vs {want}");
    let p = &r.c.skins[0].points.stretch;
    let ratio = p[0][0] / p[20][0];
    assert!(
        (ratio - 2.0).abs() < 1e-4,
        "painted region kept twice as stiff: {ratio}"
    );
    // Let go, the + mark steps once more: a new step.
    r.panel.release();
    r.press(row, Side::Right).unwrap();
    assert_eq!(r.h.undo_depth(), depth + 2);
    r.h.undo(&mut r.c).unwrap();
    r.h.undo(&mut r.c).unwrap();
    for (a, b) in painted.skins.iter().zip(&r.c.skins) {
        assert_eq!(
            a.points.stretch, b.points.stretch,
            "undo gives back every point"
        );
    }
}

/// Gravity's slider keeps its direction; a drag over it, and over the
/// global damping after it, is one undo step each.
#[test]
fn the_environment_sliders_keep_gravitys_direction_and_drag_in_one_step() {
    let mut r = Rig::new();
    let dir = r.c.environment.gravity.normalize();
    let depth = r.h.undo_depth();
    for t in [0.1, 0.4, 0.25] {
        r.press_at(Row::Param(Param::Gravity), Side::Left, on_track(t))
            .unwrap();
    }
    let g = r.c.environment.gravity;
    assert!((g.length() - 5.0).abs() < 1e-4, "{g}");
    assert!(g.normalize().dot(dir) > 0.99999);
    // Another row pressed: a new drag, even with the trigger still held.
    for t in [0.5, 0.3] {
        r.press_at(Row::Param(Param::GlobalDamping), Side::Left, on_track(t))
            .unwrap();
    }
    assert!((r.c.environment.global_damping - 1.5).abs() < 1e-5);
    assert_eq!(r.h.undo_depth(), depth + 2);
}
