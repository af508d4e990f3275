//! The FEM flesh's dynamic morph targets listed on the panel.

use super::*;
use crate::character::{MorphTarget, Posture};

/// The morph-target row steps through the flesh's targets and the delete
/// row drops the chosen one, one undo step each; the plain rest kept
/// beside a first target goes with the last; undo brings them back; with
/// no targets (or kinematic flesh) both rows say why.
#[test]
fn the_morph_target_rows_choose_and_delete_targets_one_undo_step_each() {
    let mut r = Rig::new();
    let choose = Row::Param(Param::MorphTarget);
    let delete = Row::Param(Param::MorphDelete);
    assert!(r.press(choose, Side::Right).is_err(), "kinematic flesh");
    assert!(r.press(delete, Side::Right).is_err());
    r.press(Row::Param(Param::Flesh), Side::Right).unwrap();
    let line = |r: &Rig, row: Row| {
        r.panel
            .lines(&r.tools, &r.c, &r.settings, &TimelineStatus::default())[row_of(row)]
        .clone()
    };
    assert!(
        line(&r, choose).ends_with("- (morph targets)"),
        "{}",
        line(&r, choose)
    );
    let rest = r.c.skeleton.rest_posture();
    let bent = |angle: f32| {
        let mut p = rest.clone();
        p.angles[1].x += angle;
        p
    };
    let target = |name: &str, posture: Posture, stiffness: f64| MorphTarget {
        name: name.into(),
        posture,
        offsets: Vec::new(),
        stiffness,
        part_stiffness: Vec::new(),
    };
    let mut fem = r.c.flesh.fem().unwrap().clone();
    fem.morph_targets = vec![
        target(crate::fem::REST_TARGET, rest.clone(), 1.0),
        target("tucked", bent(0.5), 2.0),
        target("stretched", bent(-0.5), 0.5),
    ];
    r.h.apply(
        &mut r.c,
        Command::SetFlesh {
            flesh: Flesh::Fem(fem),
        },
    )
    .unwrap();
    let three = r.c.clone();
    let depth = r.h.undo_depth();
    assert!(
        line(&r, choose).ends_with("rest (1/3)"),
        "{}",
        line(&r, choose)
    );
    r.press(choose, Side::Left).unwrap();
    assert!(line(&r, choose).ends_with("stretched (3/3)"), "wraps round");
    r.press(choose, Side::Right).unwrap();
    let said = r.press(choose, Side::Right).unwrap();
    assert_eq!(
        said,
        PanelOutcome::ToolSetting("morph target 'tucked' (2/3)".into())
    );
    assert!(
        line(&r, delete).ends_with("'tucked'"),
        "{}",
        line(&r, delete)
    );
    assert_eq!(r.h.undo_depth(), depth, "choosing edits nothing");
    let names = |r: &Rig| -> Vec<String> {
        r.c.flesh
            .fem()
            .unwrap()
            .morph_targets
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    r.press(delete, Side::Left).unwrap();
    assert_eq!(names(&r), ["rest", "stretched"]);
    assert!(
        line(&r, choose).ends_with("stretched (2/2)"),
        "{}",
        line(&r, choose)
    );
    let said = r.press(delete, Side::Right).unwrap();
    assert!(
        matches!(&said, PanelOutcome::Edited(m) if m.contains("'stretched'") && m.contains("0 left")),
        "{said:?}"
    );
    assert!(names(&r).is_empty(), "the rest alone goes too");
    assert_eq!(r.h.undo_depth(), depth + 2, "a step each");
    assert!(r.press(delete, Side::Right).is_err(), "nothing left");
    r.h.undo(&mut r.c).unwrap();
    r.h.undo(&mut r.c).unwrap();
    assert_eq!(r.c, three, "undo brings them back");
}
