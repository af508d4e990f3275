use super::*;
use crate::character::FemFlesh;
use crate::samples;
use crate::tools::History;
use glam::Quat;

fn penguin() -> Character {
    samples::build("penguin", 8, 8).expect("the penguin sample")
}

fn row_of(target: Row) -> usize {
    ControlPanel::rows()
        .iter()
        .position(|&r| r == target)
        .expect("the row exists")
}

/// A panel turned 30° about y and lifted, as the left hand holds it.
fn pose() -> Mat4 {
    Mat4::from_translation(Vec3::new(-0.3, 1.4, -0.4)) * Mat4::from_quat(Quat::from_rotation_y(0.5))
}

#[test]
fn a_ray_through_a_rows_middle_hits_that_row_and_side() {
    let m = pose();
    let width = 0.16;
    for row in [0, 3, 11] {
        for (x, side) in [(0.03, Side::Left), (0.13, Side::Right)] {
            let target =
                m.transform_point3(Vec3::new(x, -PAD - (row as f32 + 0.5) * ROW_HEIGHT, 0.0));
            let normal = m.transform_vector3(Vec3::Z).normalize();
            let origin = target + normal * 0.3 + m.transform_vector3(Vec3::X) * 0.05;
            let hit = ControlPanel::hit(&m, width, origin, (target - origin).normalize())
                .expect("the ray meets the panel");
            assert_eq!((hit.row, hit.side), (row, side));
            assert!((hit.distance - target.distance(origin)).abs() < 1e-4);
        }
    }
}

#[test]
fn rays_beside_behind_or_away_from_the_panel_miss() {
    let m = pose();
    let normal = m.transform_vector3(Vec3::Z).normalize();
    let centre = m.transform_point3(Vec3::new(0.08, -0.05, 0.0));
    // Beside: to the right of the panel's width.
    let beside = m.transform_point3(Vec3::new(0.2, -0.05, 0.0));
    assert!(ControlPanel::hit(&m, 0.16, beside + normal * 0.2, -normal).is_none());
    // Below the last row.
    let rows = ControlPanel::rows().len() as f32;
    let below = m.transform_point3(Vec3::new(0.08, -(rows + 0.5) * ROW_HEIGHT, 0.0));
    assert!(ControlPanel::hit(&m, 0.16, below + normal * 0.2, -normal).is_none());
    // From behind, and pointing away.
    assert!(ControlPanel::hit(&m, 0.16, centre - normal * 0.2, normal).is_none());
    assert!(ControlPanel::hit(&m, 0.16, centre + normal * 0.2, normal).is_none());
    // The same from the front hits.
    assert!(ControlPanel::hit(&m, 0.16, centre + normal * 0.2, -normal).is_some());
}

struct Rig {
    c: Character,
    h: History,
    tools: Toolbox,
    panel: ControlPanel,
    settings: SolverSettings,
}

impl Rig {
    fn new() -> Self {
        let c = penguin();
        let h = History::new(&c);
        Self {
            c,
            h,
            tools: Toolbox::new(),
            panel: ControlPanel::default(),
            settings: SolverSettings::default(),
        }
    }
    fn press(&mut self, row: Row, side: Side) -> Result<PanelOutcome, EditError> {
        // The middle of each half; on a slider row, its − and + marks.
        let slider = row.slider().is_some();
        let fraction = match (side, slider) {
            (Side::Left, false) => 0.25,
            (Side::Right, false) => 0.75,
            (Side::Left, true) => 0.05,
            (Side::Right, true) => 0.95,
        };
        self.press_at(row, side, fraction)
    }

    /// Presses `tool`'s cell of the palette, at its middle.
    fn press_tool(&mut self, tool: ToolKind) -> Result<PanelOutcome, EditError> {
        let (row, fraction) = ControlPanel::tool_cell(tool);
        let side = if fraction < 0.5 {
            Side::Left
        } else {
            Side::Right
        };
        self.press_at(ControlPanel::rows()[row], side, fraction)
    }

    fn press_at(&mut self, row: Row, side: Side, fraction: f32) -> Result<PanelOutcome, EditError> {
        let mut ctx = ToolContext {
            character: &mut self.c,
            history: &mut self.h,
            symmetry: None,
        };
        self.panel.press(
            row_of(row),
            side,
            fraction,
            &mut self.tools,
            &mut ctx,
            &mut self.settings,
        )
    }
}

/// The flesh row steps kinematic → FEM → FEM with adaptive detail → modal
/// → kinematic (right), back (left), each one undo step, FEM keeping its
/// settings; the symmetry row turns mirroring on and off.
#[test]
fn the_flesh_and_symmetry_rows_step_and_undo() {
    let mut r = Rig::new();
    let flesh_row = Row::Param(Param::Flesh);
    let state = |c: &Character| match &c.flesh {
        Flesh::Kinematic => "kinematic",
        Flesh::Fem(f) if f.detail.is_some() => "detail",
        Flesh::Fem(_) => "fem",
        Flesh::Modal(_) => "modal",
    };
    let mut seen = vec![state(&r.c)];
    for _ in 0..4 {
        r.press(flesh_row, Side::Right).unwrap();
        seen.push(state(&r.c));
        if let Some(f) = r.c.flesh.fem()
            && f.detail.is_none()
        {
            // A changed material survives switching detail on.
            let mut soft = f.clone();
            soft.young = 2.0e4;
            r.h.apply(
                &mut r.c,
                Command::SetFlesh {
                    flesh: Flesh::Fem(soft),
                },
            )
            .unwrap();
        }
    }
    assert_eq!(seen, ["kinematic", "fem", "detail", "modal", "kinematic"]);
    r.h.undo(&mut r.c).unwrap();
    assert_eq!(state(&r.c), "modal");
    let modal = r.c.flesh.modal().unwrap();
    assert!(!modal.parts.is_empty() && modal.validate().is_ok());
    r.h.undo(&mut r.c).unwrap();
    assert_eq!(state(&r.c), "detail");
    assert_eq!(r.c.flesh.fem().unwrap().young, 2.0e4);
    let line = |r: &Rig| {
        r.panel
            .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default())[row_of(flesh_row)]
        .clone()
    };
    assert!(line(&r).contains("FEM + detail, E 20 kPa"), "{}", line(&r));
    r.press(flesh_row, Side::Left).unwrap();
    assert_eq!(state(&r.c), "fem");
    r.press(flesh_row, Side::Left).unwrap();
    assert_eq!(state(&r.c), "kinematic");
    r.press(flesh_row, Side::Left).unwrap();
    assert_eq!(state(&r.c), "modal");
    assert!(line(&r).contains("modal, 5 parts, E 4 kPa"), "{}", line(&r));
    r.press(flesh_row, Side::Left).unwrap();
    assert_eq!(state(&r.c), "detail");

    let sym_row = Row::Param(Param::Symmetry);
    let sym_line = |r: &Rig| {
        r.panel
            .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default())[row_of(sym_row)]
        .clone()
    };
    assert!(sym_line(&r).ends_with("off"));
    r.press(sym_row, Side::Right).unwrap();
    assert_eq!(r.panel.symmetry, Some(Symmetry::x()));
    assert!(sym_line(&r).ends_with("mirror x = 0"), "{}", sym_line(&r));
    r.press(sym_row, Side::Left).unwrap();
    assert_eq!(r.panel.symmetry, None);
}

/// Presses `row`'s left side `times` times with mirror symmetry in x.
fn press_mirrored(r: &mut Rig, row: Row, times: usize) {
    let sym = Symmetry::x();
    let mut ctx = ToolContext {
        character: &mut r.c,
        history: &mut r.h,
        symmetry: Some(&sym),
    };
    for _ in 0..times {
        r.panel
            .press(
                row_of(row),
                Side::Left,
                0.05,
                &mut r.tools,
                &mut ctx,
                &mut r.settings,
            )
            .unwrap();
    }
}

/// The part-stiffness row scales the current joint's part of the FEM
/// flesh (and its mirror image under symmetry) in one undo step; on
/// kinematic flesh it is refused and nothing changes.
#[test]
fn the_part_stiffness_row_scales_the_current_part_and_its_mirror() {
    let mut r = Rig::new();
    let row = Row::Param(Param::PartStiffness);
    r.tools.state.current_joint = r.c.skeleton.find("flipper_l").unwrap();
    assert!(r.press(row, Side::Left).is_err(), "kinematic flesh");
    assert_eq!(r.c.flesh, Flesh::Kinematic);
    r.press(Row::Param(Param::Flesh), Side::Right).unwrap();
    press_mirrored(&mut r, row, 2);
    let f = r.c.flesh.fem().unwrap();
    let want = 1.0 / (STEP as f64 * STEP as f64);
    for side in ["flipper_l", "flipper_r"] {
        assert!((f.part_scale(side) - want).abs() < 1e-9, "{side}");
    }
    assert_eq!(f.part_scale("body"), 1.0);
    let line = r
        .panel
        .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default())[row_of(row)]
    .clone();
    assert!(line.ends_with("flipper_l x0.64"), "{line}");
    r.h.undo(&mut r.c).unwrap();
    let f = r.c.flesh.fem().unwrap();
    let once = 1.0 / STEP as f64;
    assert!((f.part_scale("flipper_l") - once).abs() < 1e-9);
    assert!((f.part_scale("flipper_r") - once).abs() < 1e-9);
}

/// The part-friction row gives the current joint's part (and its mirror
/// under symmetry) its own friction, from the ground's in steps of 0.1,
/// one undo step a press; on kinematic flesh it is refused.
#[test]
fn the_part_friction_row_sets_the_current_parts_own_friction() {
    let mut r = Rig::new();
    let row = Row::Param(Param::PartFriction);
    r.tools.state.current_joint = r.c.skeleton.find("flipper_l").unwrap();
    assert!(r.press(row, Side::Right).is_err(), "kinematic flesh");
    r.press(Row::Param(Param::Flesh), Side::Right).unwrap();
    let line = |r: &Rig| {
        r.panel
            .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default())[row_of(row)]
        .clone()
    };
    assert!(
        line(&r).ends_with("flipper_l as the ground, 0.8"),
        "{}",
        line(&r)
    );
    press_mirrored(&mut r, row, 3);
    let f = r.c.flesh.fem().unwrap();
    let want = crate::contact::GROUND_FRICTION - 0.3;
    for side in ["flipper_l", "flipper_r"] {
        let mu = f.part_friction(side).unwrap();
        assert!((mu - want).abs() < 1e-9, "{side}: {mu}");
    }
    assert_eq!(f.part_friction("body"), None);
    assert!(
        line(&r).ends_with(&format!("flipper_l {want:.1}")),
        "{}",
        line(&r)
    );
    r.h.undo(&mut r.c).unwrap();
    let mu = r.c.flesh.fem().unwrap().part_friction("flipper_r").unwrap();
    assert!((mu - (want + 0.1)).abs() < 1e-9, "{mu}");
}

#[test]
fn pressing_a_palette_cell_makes_its_tool_current() {
    let mut r = Rig::new();
    // Every tool has one cell, and the palette's rows hold them all.
    let cells: Vec<(usize, f32)> = ToolKind::ALL
        .iter()
        .map(|&k| ControlPanel::tool_cell(k))
        .collect();
    for (a, ca) in cells.iter().enumerate() {
        for cb in &cells[a + 1..] {
            assert!(ca != cb, "two tools share a cell");
        }
    }
    for k in ToolKind::ALL {
        assert_eq!(r.press_tool(k).unwrap(), PanelOutcome::Tool(k));
        assert_eq!(r.tools.tool(), k);
        let lines = r
            .panel
            .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default());
        let (row, _) = ControlPanel::tool_cell(k);
        let marked = format!(">{}", tool_short_label(k));
        assert!(
            lines[row].contains(&marked),
            "{:?} lacks {marked}",
            lines[row]
        );
        assert_eq!(lines[row].matches('>').count(), 1, "{:?}", lines[row]);
        // Nothing is marked on the other palette rows.
        for p in 0..PALETTE_ROWS as u8 {
            let other = row_of(Row::Palette(p));
            if other != row {
                assert!(!lines[other].contains('>'), "{:?}", lines[other]);
            }
        }
    }
    // A press anywhere in a cell chooses that cell's tool: near both its
    // edges, on either half of the row.
    for (c, &k) in Row::palette_tools(0).iter().enumerate() {
        for f in [c as f32 + 0.02, c as f32 + 0.98] {
            let fraction = f / PALETTE_COLUMNS as f32;
            let side = if fraction < 0.5 {
                Side::Left
            } else {
                Side::Right
            };
            assert_eq!(
                r.press_at(Row::Palette(0), side, fraction).unwrap(),
                PanelOutcome::Tool(k)
            );
        }
    }
    // Choosing a tool edits nothing.
    assert_eq!(r.h.undo_depth(), 0);
}

#[test]
fn the_palette_cells_cut_the_row_evenly_and_clamp_at_its_ends() {
    for c in 0..PALETTE_COLUMNS {
        assert_eq!(palette_cell(palette_cell_middle(c)), c);
    }
    assert_eq!(palette_cell(-0.3), 0);
    assert_eq!(palette_cell(1.0), PALETTE_COLUMNS - 1);
    assert_eq!(palette_cell(7.0), PALETTE_COLUMNS - 1);
    assert_eq!(palette_cell(f32::NAN), 0);
    // Past the tools of the last row, a cell chooses nothing.
    let last = (PALETTE_ROWS - 1) as u8;
    let held = Row::palette_tools(last).len();
    if held < PALETTE_COLUMNS {
        assert_eq!(Row::Palette(last).tool_at(palette_cell_middle(held)), None);
    }
    // The help line follows the cell pointed at.
    let (row, f) = ControlPanel::tool_cell(ToolKind::Paint);
    assert!(row_help_at(ControlPanel::rows()[row], f).starts_with("paint"));
}

#[test]
fn global_stiffness_steps_every_skin_point_and_undoes_exactly() {
    let mut r = Rig::new();
    let before = r.c.clone();
    let old = mean_value(&r.c, Param::SkinStretch, None).unwrap();
    let out = r
        .press(Row::Param(Param::SkinStretch), Side::Right)
        .unwrap();
    assert!(matches!(out, PanelOutcome::Edited(_)), "{out:?}");
    for skin in &r.c.skins {
        for e in &skin.points.stretch {
            assert!((e[0] - old * STEP).abs() < 1e-6 * old, "{e:?}");
            assert_eq!(e[1], 0.5 * e[0]);
        }
    }
    // One step however many skins.
    r.h.undo(&mut r.c).unwrap();
    assert_eq!(r.c, before);
    // Down divides.
    r.press(Row::Param(Param::SkinDamping), Side::Left).unwrap();
    let d0 = mean_value(&before, Param::SkinDamping, None).unwrap();
    let d1 = mean_value(&r.c, Param::SkinDamping, None).unwrap();
    assert!((d1 - d0 / STEP).abs() < 1e-6);
}

#[test]
fn a_global_step_keeps_a_painted_region_stiffer_than_the_rest() {
    let mut r = Rig::new();
    r.h.apply(
        &mut r.c,
        Command::SetSkinMaterial {
            skin: 0,
            region: Some(vec![5, 6, 7]),
            stretch: Some(0.08),
            damping: None,
            mass: None,
            bend: None,
            band_stiffness: None,
        },
    )
    .unwrap();
    let before = r.c.clone();
    r.press(Row::Param(Param::SkinStretch), Side::Right)
        .unwrap();
    for (a, b) in before.skins.iter().zip(&r.c.skins) {
        for (ea, eb) in a.points.stretch.iter().zip(&b.points.stretch) {
            assert!(
                (eb[0] - ea[0] * STEP).abs() <= 1e-6 * ea[0],
                "{ea:?} -> {eb:?}"
            );
        }
    }
    assert_eq!(r.c.skins[0].points.stretch[6][0], 0.08 * STEP);
    r.h.undo(&mut r.c).unwrap();
    assert_eq!(r.c, before);
}

#[test]
fn the_touched_region_scope_changes_only_points_near_the_touch() {
    let mut r = Rig::new();
    // No touch yet: a clear refusal, nothing changed.
    r.press(Row::Param(Param::Scope), Side::Left).unwrap();
    let before = r.c.clone();
    let err = r
        .press(Row::Param(Param::BandStiffness), Side::Right)
        .unwrap_err();
    assert!(err.to_string().contains("touch the skin"), "{err}");
    assert_eq!(r.c, before);
    // Touch a point of skin 0.
    let centre_point = r.c.skins[0].point_count() / 2;
    r.panel.touched = Some((0, centre_point));
    r.tools.state.lipo_radius = 0.1;
    r.press(Row::Param(Param::BandStiffness), Side::Right)
        .unwrap();
    let centre = before.skins[0].points.position[centre_point];
    let mut changed = 0;
    for (s, skin) in r.c.skins.iter().enumerate() {
        for k in 0..skin.point_count() {
            let (a, b) = (&before.skins[s].points.band[k], &skin.points.band[k]);
            let near = s == 0 && skin.points.position[k].distance(centre) <= 0.1;
            if near && a.is_some() {
                changed += 1;
                assert_ne!(a, b, "point {k} is in the region");
            } else {
                assert_eq!(a, b, "skin {s} point {k} is outside the region");
            }
        }
    }
    assert!(changed >= 3, "a region of a few points: {changed}");
    r.h.undo(&mut r.c).unwrap();
    assert_eq!(r.c, before);
}

#[test]
fn the_lock_row_locks_the_current_part_and_edits_are_then_refused() {
    let mut r = Rig::new();
    r.tools.state.current_joint = 1;
    let out = r.press(Row::Param(Param::Lock), Side::Left).unwrap();
    assert!(matches!(out, PanelOutcome::Edited(m) if m.contains("locked")));
    assert!(r.c.skeleton.joints[1].locked);
    let lines = r
        .panel
        .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default());
    assert!(lines[row_of(Row::Param(Param::Lock))].contains("LOCKED"));
    let k =
        r.c.muscles
            .iter()
            .position(|m| m.joint == 1)
            .expect("joint 1 has a muscle");
    let shape = r.c.muscles[k].shape.clone();
    let err =
        r.h.apply(&mut r.c, Command::EditMuscle { muscle: k, shape })
            .unwrap_err();
    assert!(matches!(err, EditError::Locked { .. }), "{err}");
    r.press(Row::Param(Param::Lock), Side::Left).unwrap();
    assert!(!r.c.skeleton.joints[1].locked);
}

#[test]
fn timeline_rows_ask_the_playback_and_the_scrubber_seeks_where_pointed() {
    let mut r = Rig::new();
    let before = r.c.clone();
    let mut ctx = ToolContext {
        character: &mut r.c,
        history: &mut r.h,
        symmetry: None,
    };
    let scrub = row_of(Row::Timeline(TimelineRow::Scrubber));
    let out = r
        .panel
        .press(
            scrub,
            Side::Right,
            0.7,
            &mut r.tools,
            &mut ctx,
            &mut r.settings,
        )
        .unwrap();
    assert_eq!(out, PanelOutcome::Timeline(TimelineAction::Seek(0.7)));
    for (row, side, want) in [
        (
            TimelineRow::Transport,
            Side::Right,
            TimelineAction::TogglePlay,
        ),
        (TimelineRow::Transport, Side::Left, TimelineAction::Stop),
        (TimelineRow::Key, Side::Right, TimelineAction::StoreKey),
        (TimelineRow::Key, Side::Left, TimelineAction::DeleteKey),
        (
            TimelineRow::MoveKey,
            Side::Left,
            TimelineAction::MoveKey(-KEY_NUDGE),
        ),
        (TimelineRow::SelectKey, Side::Right, TimelineAction::NextKey),
    ] {
        let out = r
            .panel
            .press(
                row_of(Row::Timeline(row)),
                side,
                0.5,
                &mut r.tools,
                &mut ctx,
                &mut r.settings,
            )
            .unwrap();
        assert_eq!(out, PanelOutcome::Timeline(want), "{row:?} {side:?}");
    }
    assert_eq!(r.c, before, "the panel itself changes nothing");
    // The track: keys at their places, the selected one upper case, the playhead.
    let status = TimelineStatus {
        time: 1.0,
        range: (0.0, 2.0),
        keys: vec![0.0, 0.5, 2.0],
        selected: Some(1),
        ..TimelineStatus::default()
    };
    let lines = r.panel.lines(&r.tools, &r.c, &r.settings, &status);
    let track: Vec<char> = lines[scrub].chars().collect();
    assert_eq!(track.len(), SCRUBBER_CHARS);
    assert_eq!((track[0], track[7], track[29]), ('k', 'K', 'k'));
    assert_eq!(track[15], '|');
}

#[test]
fn gravity_and_damping_are_undoable_environment_edits() {
    let mut r = Rig::new();
    let g0 = r.c.environment.gravity;
    r.press(Row::Param(Param::Gravity), Side::Left).unwrap();
    assert!((r.c.environment.gravity - g0 / STEP).length() < 1e-5);
    r.press(Row::Param(Param::GlobalDamping), Side::Right)
        .unwrap();
    r.h.undo(&mut r.c).unwrap();
    r.h.undo(&mut r.c).unwrap();
    assert_eq!(r.c.environment.gravity, g0);
    // Stepping down to nothing, then up again: straight down.
    for _ in 0..40 {
        r.press(Row::Param(Param::Gravity), Side::Left).unwrap();
    }
    assert_eq!(r.c.environment.gravity, Vec3::ZERO);
    r.press(Row::Param(Param::Gravity), Side::Right).unwrap();
    assert_eq!(r.c.environment.gravity, Vec3::new(0.0, -0.5, 0.0));
}

#[test]
fn solver_rows_change_the_sessions_settings_not_the_character() {
    let mut r = Rig::new();
    let before = r.c.clone();
    let kind = r.settings.integrator;
    let out = r.press(Row::Param(Param::Integrator), Side::Right).unwrap();
    assert!(matches!(out, PanelOutcome::Settings(_)));
    assert_ne!(r.settings.integrator, kind);
    r.press(Row::Param(Param::Integrator), Side::Left).unwrap();
    assert_eq!(r.settings.integrator, kind);
    let ratio = r.settings.time_ratio;
    r.press(Row::Param(Param::TimeRatio), Side::Left).unwrap();
    assert!((r.settings.time_ratio - ratio / STEP as f64).abs() < 1e-9);
    assert!(r.settings.validate().is_ok());
    assert_eq!(r.c, before);
    assert!(!r.h.can_undo());
    // Mass never reaches zero, however far it is stepped down.
    for _ in 0..60 {
        r.press(Row::Param(Param::SkinMass), Side::Left).unwrap();
    }
    assert!(mean_value(&r.c, Param::SkinMass, None).unwrap() > 0.0);
}

/// The paint colour row steps through the palette both ways, wrapping, and
/// shows the colour's name; the paint tool's palette cell makes painting current.
#[test]
fn the_paint_colour_row_steps_through_the_palette() {
    use crate::tools::tool::PALETTE;
    let mut r = Rig::new();
    let row = Row::Param(Param::PaintColor);
    assert_eq!(r.tools.state.paint_color, PALETTE[0].1);
    let out = r.press(row, Side::Right).unwrap();
    assert!(
        matches!(out, PanelOutcome::ToolSetting(ref m) if m == "paint colour white"),
        "{out:?}"
    );
    assert_eq!(r.tools.state.paint_color, PALETTE[1].1);
    r.press(row, Side::Left).unwrap();
    r.press(row, Side::Left).unwrap();
    assert_eq!(r.tools.state.paint_color, PALETTE[PALETTE.len() - 1].1);
    let lines = r
        .panel
        .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default());
    assert!(
        lines[row_of(row)].contains(PALETTE[PALETTE.len() - 1].0),
        "{}",
        lines[row_of(row)]
    );
    // Not a character edit: nothing to undo.
    assert_eq!(r.h.undo_depth(), 0);
    r.press_tool(ToolKind::Paint).unwrap();
    assert_eq!(r.tools.tool(), ToolKind::Paint);
}

/// The view rows toggle the panel's layers (the muscles cycle through
/// three looks), show them, and edit nothing.
#[test]
fn the_view_rows_toggle_the_layers_and_edit_nothing() {
    use super::{MuscleView, ViewRow};
    let mut r = Rig::new();
    let before = r.c.clone();
    let line = |r: &Rig, v: ViewRow| {
        r.panel
            .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default())[row_of(Row::View(v))]
        .clone()
    };
    assert!(
        line(&r, ViewRow::Xray).ends_with("off"),
        "{}",
        line(&r, ViewRow::Xray)
    );
    let said = r.press(Row::View(ViewRow::Xray), Side::Right).unwrap();
    assert_eq!(
        said,
        PanelOutcome::View("x-ray (skin seen through) on".into())
    );
    assert!(r.panel.view.xray);
    assert!(line(&r, ViewRow::Xray).ends_with("on"));
    let mut seen = Vec::new();
    for _ in 0..3 {
        r.press(Row::View(ViewRow::Muscles), Side::Left).unwrap();
        seen.push(r.panel.view.muscles);
    }
    assert_eq!(
        seen,
        [
            MuscleView::Opaque,
            MuscleView::Hidden,
            MuscleView::Translucent
        ]
    );
    r.press(Row::View(ViewRow::Bands), Side::Left).unwrap();
    r.press(Row::View(ViewRow::Wireframe), Side::Left).unwrap();
    assert!(r.panel.view.bands && r.panel.view.wireframe);
    assert!(line(&r, ViewRow::Muscles).ends_with("translucent"));
    assert!(!r.panel.view.fat && line(&r, ViewRow::Fat).ends_with("off"));
    let said = r.press(Row::View(ViewRow::Fat), Side::Left).unwrap();
    assert_eq!(said, PanelOutcome::View("fat shell on".into()));
    assert!(r.panel.view.fat && line(&r, ViewRow::Fat).ends_with("on"));
    assert_eq!(r.c, before);
    assert_eq!(r.h.undo_depth(), 0);
}

/// The penguin with FEM flesh around a small embedded mesh with two
/// blendshape targets.
fn blending_penguin() -> Character {
    use crate::character::{BlendTarget, Blendshapes, EmbeddedMesh};
    let mut c = penguin();
    let base = vec![
        Vec3::new(0.0, 0.3, 0.0),
        Vec3::new(0.1, 0.3, 0.0),
        Vec3::new(0.0, 0.4, 0.0),
        Vec3::new(0.0, 0.3, 0.1),
    ];
    let target = |name: &str, dy: f32| BlendTarget {
        name: name.into(),
        positions: base.iter().map(|p| *p + Vec3::Y * dy).collect(),
    };
    c.flesh = Flesh::Fem(FemFlesh {
        embedded_mesh: Some(EmbeddedMesh {
            source: "tetra.obj".into(),
            positions: base.clone(),
            triangles: vec![[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]],
        }),
        blendshapes: Some(Box::new(Blendshapes {
            targets: vec![target("up", 0.01), target("down", -0.01)],
            boundary: Default::default(),
            interior: true,
            constants: Default::default(),
            linear: false,
        })),
        ..FemFlesh::default()
    });
    c.validate().unwrap();
    c
}

#[test]
fn blend_rows_choose_a_target_step_its_weight_and_switch_the_blend_undoably() {
    let mut r = Rig::new();
    // Without blendshapes the rows say so and refuse.
    let e = r
        .press(Row::Param(Param::BlendWeight), Side::Right)
        .unwrap_err();
    assert!(e.to_string().contains("no blendshapes"), "{e}");
    r.c = blending_penguin();
    r.h = History::new(&r.c);
    let line = |r: &Rig, p: Param, blend: Vec<f32>| {
        let status = TimelineStatus {
            blend,
            ..TimelineStatus::default()
        };
        r.panel.lines(&r.tools, &r.c, &r.settings, &status)[row_of(Row::Param(p))].clone()
    };
    assert!(line(&r, Param::BlendTarget, vec![]).ends_with("up (1/2)"));
    assert!(line(&r, Param::BlendMode, vec![]).ends_with("physical"));
    // Three presses up on 'up': 0.3, each its own undo step.
    for _ in 0..3 {
        let out = r
            .press_at(Row::Param(Param::BlendWeight), Side::Right, 0.95)
            .unwrap();
        assert!(matches!(out, PanelOutcome::Edited(_)), "{out:?}");
    }
    assert_eq!(r.h.posture().blend, vec![0.3, 0.0]);
    assert!(line(&r, Param::BlendWeight, r.h.posture().blend.clone()).ends_with("up 0.30"));
    // The next target takes 0.9: 'up' gives way so the sum stays 1.
    r.press(Row::Param(Param::BlendTarget), Side::Right)
        .unwrap();
    assert!(line(&r, Param::BlendTarget, vec![]).ends_with("down (2/2)"));
    for _ in 0..9 {
        r.press_at(Row::Param(Param::BlendWeight), Side::Right, 0.95)
            .unwrap();
    }
    let w = r.h.posture().blend.clone();
    assert!((w[1] - 0.9).abs() < 1e-6, "{w:?}");
    assert!((w[0] + w[1] - 1.0).abs() < 1e-6, "{w:?}");
    // Past 1 (or below 0) a press changes nothing and adds no undo step.
    let r2 = r.h.undo_depth();
    for _ in 0..3 {
        r.press_at(Row::Param(Param::BlendWeight), Side::Left, 0.05)
            .unwrap();
    }
    let down = r.press_at(Row::Param(Param::BlendWeight), Side::Left, 0.05);
    for _ in 0..9 {
        r.press_at(Row::Param(Param::BlendWeight), Side::Left, 0.05)
            .unwrap();
    }
    assert_eq!(
        down.unwrap(),
        PanelOutcome::Edited("blend 'down' at 0.50 (K keys it)".into())
    );
    assert_eq!(r.h.posture().blend[1], 0.0);
    assert_eq!(
        r.press_at(Row::Param(Param::BlendWeight), Side::Left, 0.05)
            .unwrap(),
        PanelOutcome::Nothing
    );
    assert_eq!(
        r.h.undo_depth(),
        r2 + 9,
        "one step per press that changed it"
    );
    for _ in 0..9 {
        r.h.undo(&mut r.c).unwrap();
    }
    // Undo takes one press back.
    r.h.undo(&mut r.c).unwrap();
    assert!((r.h.posture().blend[1] - 0.8).abs() < 1e-6);
    // Right past the last target: a new one to sculpt, a copy of the mesh
    // (one undo step), chosen; the posture's weights gain its 0.
    let out = r
        .press(Row::Param(Param::BlendTarget), Side::Right)
        .unwrap();
    assert!(
        matches!(&out, PanelOutcome::Edited(m) if m.contains("'sculpt 3'")),
        "{out:?}"
    );
    assert!(line(&r, Param::BlendTarget, vec![]).ends_with("sculpt 3 (3/3)"));
    assert_eq!(r.h.posture().blend.len(), 3);
    r.h.undo(&mut r.c).unwrap();
    assert_eq!(r.c.blend_targets(), 2);
    assert_eq!(r.h.posture().blend.len(), 2);
    r.tools.state.blend_target = 1;
    // The blend switch is a character edit, undone in one step.
    r.press(Row::Param(Param::BlendMode), Side::Right).unwrap();
    assert!(r.c.blendshapes().unwrap().linear);
    assert!(line(&r, Param::BlendMode, vec![]).ends_with("linear"));
    r.h.undo(&mut r.c).unwrap();
    assert!(!r.c.blendshapes().unwrap().linear);
}

/// The blend curve row draws the chosen target's keyed weight across the
/// timeline: 'up' keyed 0 at the first key, 1 at the middle one, 0 at the
/// last rises and falls through the row (the text's levels read back to
/// within a level), 'down' keyed nowhere lies flat; without blendshapes
/// the row says so; a press seeks like the scrubber.
#[test]
fn the_blend_curve_row_draws_the_chosen_targets_keyed_weight() {
    let mut c = blending_penguin();
    let n = c.key_postures.len();
    assert!(n >= 3, "the penguin's keys");
    for (i, k) in c.key_postures.iter_mut().enumerate() {
        k.posture.blend = vec![if i == n / 2 { 1.0 } else { 0.0 }, 0.0];
    }
    let range = (
        f64::from(c.key_postures[0].time),
        f64::from(c.key_postures[n - 1].time),
    );
    let line = |c: &Character, target: usize| {
        let status = TimelineStatus {
            range,
            blend_curve: blend_curve(c, target, range),
            ..TimelineStatus::default()
        };
        ControlPanel::timeline_lines(&status)
            .into_iter()
            .find(|(i, _)| *i == row_of(Row::Timeline(TimelineRow::BlendCurve)))
            .unwrap()
            .1
    };
    let up = line(&c, 0);
    let (weights, name) = parse_blend_curve(&up).expect("a curve");
    assert_eq!(name, "up");
    assert_eq!(weights.len(), SCRUBBER_CHARS);
    let (_, exact) = blend_curve(&c, 0, range).unwrap();
    for (shown, w) in weights.iter().zip(&exact) {
        assert!((shown - w).abs() <= 0.5 / 7.0 + 1e-6, "{shown} for {w}");
    }
    assert!(exact[0].abs() < 1e-6 && exact[SCRUBBER_CHARS - 1].abs() < 1e-6);
    let middle = f64::from(c.key_postures[n / 2].time);
    let at = ((middle - range.0) / (range.1 - range.0) * (SCRUBBER_CHARS - 1) as f64).round();
    let peak = exact.iter().copied().fold(0.0, f32::max);
    assert!(peak > 0.9, "the middle key's 1: {exact:?}");
    assert!(
        (exact[at as usize] - peak).abs() < 0.15,
        "the peak at the middle key: {exact:?}"
    );
    let (down, _) = parse_blend_curve(&line(&c, 1)).unwrap();
    assert!(down.iter().all(|&w| w == 0.0), "{down:?}");
    c.flesh = Flesh::Kinematic;
    let bare = line(&c, 0);
    assert!(parse_blend_curve(&bare).is_none() && bare.contains("- (blendshapes)"));
    assert_eq!(
        timeline::timeline_action(TimelineRow::BlendCurve, true, 0.25),
        TimelineAction::Seek(0.25)
    );
}

/// The blend weight row is a slider: a press along its track sets the
/// weight where it points, a drag (presses on it until the trigger is let
/// go) is one undo step, and the − and + marks at its ends still step.
#[test]
fn the_blend_weight_row_is_a_slider_dragged_in_one_undo_step() {
    let mut r = Rig::new();
    r.c = blending_penguin();
    r.h = History::new(&r.c);
    let row = Row::Param(Param::BlendWeight);
    let depth = r.h.undo_depth();
    let (a, b) = super::SLIDER_TRACK;
    let at = |w: f32| a + w * (b - a);
    r.press_at(row, Side::Left, at(0.3)).unwrap();
    assert!(
        (r.h.posture().blend[0] - 0.3).abs() < 1e-5,
        "{:?}",
        r.h.posture().blend
    );
    for w in [0.45, 0.7, 0.62] {
        r.press_at(row, Side::Right, at(w)).unwrap();
    }
    assert!((r.h.posture().blend[0] - 0.62).abs() < 1e-5);
    assert_eq!(r.h.undo_depth(), depth + 1, "the drag is one step");
    r.panel.release();
    // Past the track's end the + mark steps by 0.1 from 0.62.
    r.press_at(row, Side::Right, 0.95).unwrap();
    assert!((r.h.posture().blend[0] - 0.7).abs() < 1e-5);
    assert_eq!(r.h.undo_depth(), depth + 2, "a new press, a new step");
    r.h.undo(&mut r.c).unwrap();
    r.h.undo(&mut r.c).unwrap();
    assert!(
        r.h.posture().blend.iter().all(|&w| w == 0.0),
        "{:?}",
        r.h.posture().blend
    );
    assert_eq!(super::slider_value(0.05), None);
    assert_eq!(super::slider_value(a), Some(0.0));
    assert_eq!(super::slider_value(b), Some(1.0));
}

mod morph;
mod sliders;
