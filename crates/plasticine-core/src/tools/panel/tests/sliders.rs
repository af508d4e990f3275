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
            // The blend weight and the part rows need blendshapes and FEM
            // flesh (tested on their own).
            Row::Param(p)
                if p.slider().is_some()
                    && !matches!(
                        p,
                        Param::BlendWeight | Param::PartStiffness | Param::PartFriction
                    ) =>
            {
                Some(*p)
            }
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

/// The selected key's tension, continuity and bias are sliders over
/// −1..1: a press on the track asks the front end to set that one value
/// there, the rest of a drag continues it, a new press after letting go
/// starts afresh; the marks still step; the row's value puts the knob back.
#[test]
fn the_key_spline_rows_are_sliders_over_minus_one_to_one() {
    let mut r = Rig::new();
    let rows = [
        (TimelineRow::Tension, 0),
        (TimelineRow::Continuity, 1),
        (TimelineRow::Bias, 2),
    ];
    for (row, index) in rows {
        let set = |r: &mut Rig, t: f32| r.press_at(Row::Timeline(row), Side::Left, on_track(t));
        let want = |value: f32, continuing| {
            PanelOutcome::Timeline(TimelineAction::SetTcb {
                index,
                value,
                continuing,
            })
        };
        let got = set(&mut r, 0.75).unwrap();
        assert_eq!(got, want(0.5, false), "{row:?}");
        let got = set(&mut r, 0.25).unwrap();
        assert_eq!(got, want(-0.5, true), "{row:?}: the drag goes on");
        r.panel.release();
        assert_eq!(set(&mut r, 1.0).unwrap(), want(1.0, false));
        r.panel.release();
        // The − mark still steps.
        let got = r.press_at(Row::Timeline(row), Side::Left, 0.02).unwrap();
        let mut step = [0.0; 3];
        step[index] = -timeline::TCB_STEP;
        assert_eq!(got, PanelOutcome::Timeline(TimelineAction::Tcb(step)));
        // The row's text, for a key at 0.5, puts the knob at 3/4.
        let status = TimelineStatus {
            selected_tcb: Some([0.5; 3]),
            ..TimelineStatus::default()
        };
        let line = &r.panel.lines(&r.tools, &r.c, &r.settings, &status)[row_of(Row::Timeline(row))];
        let knob = slider_knob(Row::Timeline(row), line).expect("a knob");
        assert!((knob - 0.75).abs() < 1e-3, "{line:?}: {knob}");
        let none = &r
            .panel
            .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default())
            [row_of(Row::Timeline(row))];
        assert_eq!(slider_knob(Row::Timeline(row), none), None, "{none:?}");
    }
    assert_eq!(r.h.undo_depth(), 0, "the front end edits the keys");
    assert_eq!(Row::Timeline(TimelineRow::MoveKey).slider(), None);
}

/// The current part's flesh E and friction are sliders: a drag along
/// either sets the part and its mirror image under symmetry, as one undo
/// step, and the row's text puts the knob back where the wand let go.
#[test]
fn the_part_sliders_set_the_part_and_its_mirror_in_one_undo_step() {
    let mut r = Rig::new();
    r.tools.state.current_joint = r.c.skeleton.find("flipper_l").unwrap();
    r.press(Row::Param(Param::Flesh), Side::Right).unwrap();
    let sym = Symmetry::x();
    let cases = [
        (Param::PartStiffness, [0.3, 0.7, 0.6]),
        (Param::PartFriction, [0.2, 0.5, 0.45]),
    ];
    for (p, drag) in cases {
        let row = Row::Param(p);
        let depth = r.h.undo_depth();
        for t in drag {
            let mut ctx = ToolContext {
                character: &mut r.c,
                history: &mut r.h,
                symmetry: Some(&sym),
            };
            let out = r
                .panel
                .press(
                    row_of(row),
                    Side::Left,
                    on_track(t),
                    &mut r.tools,
                    &mut ctx,
                    &mut r.settings,
                )
                .unwrap();
            assert!(matches!(out, PanelOutcome::Edited(_)), "{out:?}");
        }
        r.panel.release();
        assert_eq!(r.h.undo_depth(), depth + 1, "{p:?}: one step");
        let want = f64::from(p.slider().unwrap().value(drag[2]));
        let f = r.c.flesh.fem().unwrap();
        for side in ["flipper_l", "flipper_r"] {
            let got = match p {
                Param::PartStiffness => f.part_scale(side),
                _ => f.part_friction(side).unwrap(),
            };
            assert!(
                (got - want).abs() < 1e-5 * want,
                "{p:?} {side}: {got} vs {want}"
            );
        }
        assert_eq!(f.part_scale("body"), 1.0);
        let line = &r
            .panel
            .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default())[row_of(row)];
        let knob = slider_knob(row, line).expect("a knob");
        // The text keeps two decimals (E) or one (μ).
        assert!(
            (knob - drag[2]).abs() < 0.03,
            "{p:?}: {line:?} puts it at {knob}"
        );
    }
    // A part with the ground's friction shows its knob there.
    r.h.undo(&mut r.c).unwrap();
    let line = &r
        .panel
        .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default())
        [row_of(Row::Param(Param::PartFriction))];
    let knob = slider_knob(Row::Param(Param::PartFriction), line).unwrap();
    let at = Param::PartFriction
        .slider()
        .unwrap()
        .position(crate::contact::GROUND_FRICTION as f32);
    assert!((knob - at).abs() < 1e-3, "{line:?}");
}
