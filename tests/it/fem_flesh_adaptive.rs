//! Adaptive detail in the application's FEM flesh (Capell §4.7 through
//! `FleshSim`): the penguin's flesh on the hierarchy of its control
//! lattice, detail drawn where a grab distorts it and dropped when it lets
//! go, the muscles riding on the fine field. Run with `--nocapture` for the
//! numbers.

use crate::support::limb;

use glam::{DVec3, Vec3};
use plasticine::character::{Character, FemFlesh, Flesh, FleshDetail, WeightStroke};
use plasticine::fem::character_inside;
use plasticine::fem::{FleshBody, FleshSim, bone_transforms};

fn penguin(detail: Option<FleshDetail>) -> Character {
    let mut c = plasticine::samples::bare("penguin").expect("sample");
    c.flesh = Flesh::Fem(FemFlesh {
        detail,
        ..FemFlesh::default()
    });
    c
}

fn detail(flesh: &FleshSim) -> usize {
    flesh.body.detail_per_level().iter().sum()
}

/// The control vertex deepest in the flesh away from every bone: inside
/// the muscles, free, farthest from the skeleton.
fn deep_point(c: &Character, flesh: &FleshSim) -> DVec3 {
    let inside = character_inside(c);
    let control = flesh.body.control_lattice();
    (0..control.vertex_count())
        .filter(|&a| control.bone_of_vertex[a].is_none() && inside(control.rest[a]))
        .map(|a| control.rest[a])
        .max_by(|p, q| {
            let d = |x: &DVec3| {
                control
                    .bones
                    .iter()
                    .map(|b| b.distance(*x))
                    .fold(f64::INFINITY, f64::min)
            };
            d(p).total_cmp(&d(q))
        })
        .expect("a free vertex inside the flesh")
}

/// Settled in its rest posture the flesh holds still with no detail; a grab
/// pulled away draws detail around the grabbed point (and not elsewhere),
/// holds the point at the hand, and carries the muscle it is in along;
/// released, the flesh relaxes and the detail goes.
#[test]
fn a_grab_draws_detail_and_releasing_removes_it() {
    let c = penguin(Some(FleshDetail::default()));
    let rest = c.skeleton.rest_posture();
    let mut flesh = FleshSim::new(&c, &rest, 0.0).unwrap();
    assert!(matches!(flesh.body, FleshBody::Adaptive(_)));
    let h = flesh.body.control_lattice().cell_size.x;
    let mut t = 0.0;
    let run = |flesh: &mut FleshSim, t: &mut f64, seconds: f64| {
        let end = *t + seconds;
        while *t < end - 1e-9 {
            *t += 1.0 / 120.0;
            let reports = flesh.advance_to(&c, |_| rest.clone(), *t);
            assert!(reports.iter().all(|r| r.converged()), "{reports:?}");
        }
    };
    run(&mut flesh, &mut t, 0.25);
    assert_eq!(detail(&flesh), 0, "settled at rest: no detail");
    let before = flesh.muscle_offsets(&c, &rest, t);

    let at = deep_point(&c, &flesh);
    let id = flesh.grab(at.as_vec3()).expect("a point of the flesh");
    let pull = DVec3::new(0.0, 0.0, 0.5 * h);
    let hand = (at + pull).as_vec3();
    assert!(flesh.move_grab(id, hand));
    run(&mut flesh, &mut t, 0.5);
    let held = flesh.grabbed_position(id).unwrap();
    let off = (held - hand).length();
    let per_level = flesh.body.detail_per_level();
    let FleshBody::Adaptive(body) = &flesh.body else {
        unreachable!()
    };
    let fine = &body.hierarchy.fine;
    let mean = |set: &mut dyn Iterator<Item = usize>| {
        let d: Vec<f64> = set.map(|a| fine.rest[a].distance(at)).collect();
        d.iter().sum::<f64>() / d.len().max(1) as f64
    };
    let active = mean(
        &mut body
            .active_functions()
            .iter()
            .copied()
            .filter(|&a| body.hierarchy.level_of[a] > 0),
    );
    let admissible = mean(
        &mut (0..fine.vertex_count())
            .filter(|&a| body.hierarchy.level_of[a] > 0 && body.hierarchy.admissible[a]),
    );
    let after = flesh.muscle_offsets(&c, &rest, t);
    // The muscle the grab moved most, and how (its frame's correction; the
    // muscles ride on the fine field by a best rigid fit of their volume).
    let shift = before
        .iter()
        .zip(&after)
        .map(|(b, a)| Vec3::from(a.translation - b.translation))
        .max_by(|a, b| a.length().total_cmp(&b.length()))
        .unwrap();
    let moved = shift.length();
    eprintln!(
        "penguin, cell {h:.3} m, pulled {:.3} m: detail per level {per_level:?}; mean distance \
         from the grab {active:.3} m (every admissible detail {admissible:.3} m); point {off:.1e} \
         m off the hand; a muscle moved {moved:.4} m; {} fine vertices",
        pull.length(),
        fine.vertex_count()
    );
    assert!(per_level[0] > 0, "the grab draws detail");
    assert!(active < 0.7 * admissible, "{active} vs {admissible}");
    assert!(off < 1e-3 * h as f32, "{off}");
    // The same pull on the control lattice alone: the muscles follow the
    // fine field the way they follow the coarse one (a local pull barely
    // moves a whole muscle's rigid fit; detail makes it more local still).
    let mut plain = FleshSim::new(&penguin(None), &rest, 0.0).unwrap();
    let mut tp = 0.0;
    run(&mut plain, &mut tp, 0.25);
    let plain_before = plain.muscle_offsets(&c, &rest, tp);
    let id_plain = plain.grab(at.as_vec3()).unwrap();
    plain.move_grab(id_plain, hand);
    run(&mut plain, &mut tp, 0.5);
    let plain_after = plain.muscle_offsets(&c, &rest, tp);
    let k = after
        .iter()
        .zip(&before)
        .position(|(a, b)| Vec3::from(a.translation - b.translation) == shift)
        .unwrap();
    let plain_shift = Vec3::from(plain_after[k].translation - plain_before[k].translation);
    eprintln!("muscle {k}: moved {shift} with detail, {plain_shift} without");
    assert!(moved > 1e-2 * pull.length() as f32, "{moved}");
    assert!(shift.dot(plain_shift) > 0.7 * moved * plain_shift.length());
    assert!((0.2..=1.5).contains(&(moved / plain_shift.length())));

    assert!(flesh.release(id));
    run(&mut flesh, &mut t, 2.0);
    let left = detail(&flesh);
    eprintln!("released, 2 s later: {left} detail functions");
    assert_eq!(left, 0, "released, the detail goes");
}

/// With no detail active the adaptive flesh is the control lattice's own:
/// settled under gravity in the rest posture, both put the muscles in the
/// same place (`K_J` integrates the same flesh; only the cut cells' sampling
/// differs).
#[test]
fn without_detail_the_adaptive_flesh_sags_as_the_plain_one() {
    let rest = plasticine::samples::bare("penguin")
        .unwrap()
        .skeleton
        .rest_posture();
    let sag = |detail: Option<FleshDetail>| {
        let c = penguin(detail);
        let flesh = FleshSim::new(&c, &rest, 0.0).unwrap();
        let control = flesh.body.control_vertices();
        let q = flesh.q();
        let field: Vec<DVec3> = control.iter().map(|&x| q[x]).collect();
        (field, flesh.muscle_offsets(&c, &rest, 0.0))
    };
    let (plain, plain_muscles) = sag(None);
    let (adaptive, adaptive_muscles) = sag(Some(FleshDetail::default()));
    let scale = plain.iter().map(|q| q.length()).fold(0.0, f64::max);
    let diff = plain
        .iter()
        .zip(&adaptive)
        .map(|(a, b)| (*a - *b).length())
        .fold(0.0, f64::max);
    let muscle_diff = plain_muscles
        .iter()
        .zip(&adaptive_muscles)
        .map(|(a, b)| (a.translation - b.translation).length())
        .fold(0.0f32, f32::max);
    eprintln!(
        "settled sag: plain up to {scale:.2e} m, adaptive differs by {diff:.2e} m; muscles \
         differ by {muscle_diff:.2e} m"
    );
    assert!(scale > 1e-4, "gravity sags the flesh: {scale}");
    assert!(diff < 0.1 * scale, "{diff} of {scale}");
    assert!(muscle_diff < 0.1 * scale as f32, "{muscle_diff}");
}

/// An edit on the same lattice (a painted stroke) keeps the adaptive
/// flesh's motion and detail; switching detail off rebuilds the plain
/// flesh, settled, the grab made again; bad detail settings are refused
/// with the field named.
#[test]
fn edits_keep_the_detail_and_switching_it_off_settles() {
    let c = penguin(Some(FleshDetail::default()));
    let rest = c.skeleton.rest_posture();
    let mut flesh = FleshSim::new(&c, &rest, 0.0).unwrap();
    let at = deep_point(&c, &flesh);
    let h = flesh.body.control_lattice().cell_size.x;
    let id = flesh.grab(at.as_vec3()).unwrap();
    flesh.move_grab(id, (at + DVec3::new(0.0, 0.0, 0.5 * h)).as_vec3());
    flesh.advance_to(&c, |_| rest.clone(), 0.3);
    let drawn = detail(&flesh);
    assert!(drawn > 0);

    let mut painted = c.clone();
    if let Flesh::Fem(f) = &mut painted.flesh {
        f.weight_strokes.push(WeightStroke {
            bone: 0,
            centre: Vec3::ZERO,
            radius: 0.05,
            amount: 0.3,
        });
    }
    let kept = FleshSim::rebuilt(&painted, &rest, flesh.time(), Some(&flesh)).unwrap();
    assert_eq!(detail(&kept), drawn, "the detail carries over");
    assert_eq!(kept.q(), flesh.q(), "the field carries over");
    assert_eq!(kept.grabs().len(), 1, "the grab carries over");
    assert!(kept.body.partition_error() < 1e-12);

    let mut off = c.clone();
    if let Flesh::Fem(f) = &mut off.flesh {
        f.detail = None;
    }
    let plain = FleshSim::rebuilt(&off, &rest, flesh.time(), Some(&flesh)).unwrap();
    assert!(matches!(plain.body, FleshBody::Lattice(_)));
    // A new simulation starts settled, the hand still holding the point.
    assert!(plain.body.is_still(1e-3));
    assert_eq!(plain.grabs().len(), 1, "the grab is made again");
    assert_eq!(plain.grabs()[0].id, id);

    for (detail, field) in [
        (
            FleshDetail {
                levels: 3,
                ..FleshDetail::default()
            },
            "flesh.Fem.detail.levels",
        ),
        (
            FleshDetail {
                refine_strain: 0.01,
                coarsen_strain: 0.02,
                ..FleshDetail::default()
            },
            "flesh.Fem.detail",
        ),
    ] {
        let e = penguin(Some(detail)).flesh.validate().unwrap_err();
        assert_eq!(e.field, field, "{e:?}");
    }
}

/// Grabs the deep point, pulls it half a cell for 0.5 s, lets go.
fn grab_and_release(c: &Character) -> FleshSim {
    let rest = c.skeleton.rest_posture();
    let mut flesh = FleshSim::new(c, &rest, 0.0).unwrap();
    let h = flesh.body.control_lattice().cell_size.x;
    let at = deep_point(c, &flesh);
    let id = flesh.grab(at.as_vec3()).unwrap();
    flesh.move_grab(id, (at + DVec3::new(0.0, 0.0, 0.5 * h)).as_vec3());
    flesh.advance_to(c, |_| rest.clone(), 0.5);
    assert!(detail(&flesh) > 0);
    flesh.release(id);
    flesh
}

/// Coarsening projects the state onto the smaller basis (energy projection
/// for q, mass projection for q̇) instead of dropping the details'
/// coefficients, so it never raises the energy: after a release, with the
/// global linear model (whose energy implicit Euler never raises), the
/// energy falls through every step and every adaptation. Dropping them
/// raised it up to a thousandfold here and the flesh blew up.
#[test]
fn coarsening_never_raises_the_energy() {
    let mut c = penguin(Some(FleshDetail::default()));
    if let Flesh::Fem(f) = &mut c.flesh {
        f.blend_width = None;
    }
    let mut flesh = grab_and_release(&c);
    let bones = bone_transforms(&c, flesh.body.bones(), &c.skeleton.rest_posture());
    let FleshBody::Adaptive(body) = &mut flesh.body else {
        unreachable!()
    };
    body.constraints.clear();
    let (mut removed, mut worst_rise) = (0, f64::NEG_INFINITY);
    let start = body.energy().total();
    for _ in 0..60 {
        let before = body.energy().total();
        assert!(body.step(&bones, None).unwrap().converged);
        let stepped = body.energy().total();
        let report = body.adapt();
        let adapted = body.energy().total();
        assert!(stepped <= before + 1e-9, "a step raised the energy");
        removed += report.removed.iter().sum::<usize>();
        worst_rise = worst_rise.max(adapted - stepped);
    }
    let end = body.energy().total();
    eprintln!(
        "after the release: energy {start:.3e} J → {end:.3e} J in 60 steps, {removed} details \
         removed, largest change by an adaptation {worst_rise:.1e} J"
    );
    assert!(removed > 0, "the detail goes");
    assert!(worst_rise <= 1e-3 * start.abs().max(1e-3), "{worst_rise}");
    assert!(end < start);
}

/// Detail kept after the release (it is never coarsened here) leaves the
/// blended flesh at rest: no function of the basis drifts (functions
/// outside the flesh that the active detail reproduces are held).
#[test]
fn held_detail_rests_after_a_release() {
    let c = penguin(Some(FleshDetail {
        coarsen_strain: 0.0,
        ..FleshDetail::default()
    }));
    let rest = c.skeleton.rest_posture();
    let mut flesh = grab_and_release(&c);
    let h = flesh.body.control_lattice().cell_size.x;
    let biggest = |f: &FleshSim| f.q().iter().map(|q| q.length()).fold(0.0, f64::max);
    flesh.advance_to(&c, |_| rest.clone(), 1.5);
    let (held, a) = (detail(&flesh), biggest(&flesh));
    flesh.advance_to(&c, |_| rest.clone(), 2.5);
    let b = biggest(&flesh);
    eprintln!(
        "{held} details held after the release: largest displacement {a:.4} m at 1.5 s, {b:.4} m \
         at 2.5 s (cell {h:.3} m)"
    );
    assert!(held > 0);
    // Bounded (the shipped penguin, its flippers well out from the body,
    // holds 0.097 m with cells of 0.088 m) and still.
    assert!(a < 2.0 * h && (a - b).abs() < 1e-3, "{a} → {b}");
    assert!(flesh.is_at_rest(1e-2));
}

/// Through the simulation thread, as the application runs it: a grab on the
/// adaptive flesh draws detail (the snapshot's flesh pose reports it, and
/// its wireframe grows by the refined cells' edges) and holds the point at
/// the hand; released, the detail goes.
#[test]
fn the_simulation_thread_runs_adaptive_flesh() {
    use plasticine::app::{FleshGrab, SimMessage, SimThread};
    use plasticine::skin::SolverSettings;
    use plasticine::snapshot::SceneSnapshot;
    use std::time::{Duration, Instant};
    let c = penguin(Some(FleshDetail::default()));
    let flesh = FleshSim::new(&c, &c.skeleton.rest_posture(), 0.0).unwrap();
    let at = deep_point(&c, &flesh).as_vec3();
    let h = flesh.body.control_lattice().cell_size.x as f32;
    let sim = SimThread::spawn(c, SolverSettings::default(), 1);
    let wait = |what: &str, ok: &dyn Fn(&SceneSnapshot) -> bool| {
        let start = Instant::now();
        loop {
            let s = sim.latest();
            if ok(&s) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "never published: {what}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    let detail = |s: &SceneSnapshot| s.flesh.as_ref().map(|f| f.detail.iter().sum::<usize>());
    let s = wait("the flesh", &|s| s.flesh.is_some());
    assert_eq!(detail(&s), Some(0));
    let control_edges = s.flesh.as_ref().unwrap().edges.len();
    let hand = at + Vec3::new(0.0, 0.0, 0.5 * h);
    sim.send(SimMessage::Grab(FleshGrab::Start { at })).unwrap();
    sim.send(SimMessage::Grab(FleshGrab::Move { hand }))
        .unwrap();
    let s = wait("detail at the grab", &|s| {
        detail(s).is_some_and(|d| d > 0)
            && s.flesh
                .as_ref()
                .is_some_and(|f| f.grabs.len() == 1 && f.grabs[0].0.distance(hand) < 1e-4)
    });
    let f = s.flesh.as_ref().unwrap();
    eprintln!(
        "simulation thread: detail {:?} at the grab, wireframe {} edges (control lattice {control_edges})",
        f.detail,
        f.edges.len()
    );
    assert!(f.edges.len() > control_edges);
    sim.send(SimMessage::Grab(FleshGrab::Release)).unwrap();
    wait("the detail gone", &|s| detail(s) == Some(0));
    sim.shutdown();
}

/// An imported mesh's flesh (`fem-import`) with adaptive detail: its
/// lattice's bones pin thin lines of vertices, so it runs with the twist
/// constraint (§4.6), which the adaptive body takes on `K_J`. Bending the
/// elbow, the embedded mesh lands where the control lattice alone puts it,
/// up to the detail's own (small) correction.
#[test]
fn an_imported_mesh_bends_with_detail_as_without() {
    use plasticine::skin::SkeletonDriver;
    let (plain, _) = limb::imported_limb();
    let mut detailed = plain.clone();
    if let Flesh::Fem(f) = &mut detailed.flesh {
        f.detail = Some(FleshDetail::default());
    }
    let driver = SkeletonDriver::Keys(plain.key_postures.clone());
    let end = plain.key_postures[1].time as f64;
    let run = |c: &Character| {
        let mut flesh = FleshSim::new(c, &driver.posture_at(0.0), 0.0).unwrap();
        let rest = flesh.pose(c, &driver.posture_at(0.0), 0.0).mesh.unwrap();
        let mut most = 0;
        let mut t = 0.0;
        while t < end {
            t = (t + 1.0 / 30.0).min(end);
            let reports = flesh.advance_to(c, |t| driver.posture_at(t), t);
            assert!(reports.iter().all(|r| r.converged()));
            most = most.max(detail(&flesh));
        }
        let posed = flesh.pose(c, &driver.posture_at(end), end).mesh.unwrap();
        (
            rest,
            posed,
            most,
            matches!(flesh.body, FleshBody::Adaptive(_)),
        )
    };
    let (rest, a, _, adaptive_a) = run(&plain);
    let (_, b, most, adaptive_b) = run(&detailed);
    assert!(!adaptive_a && adaptive_b);
    let moved = rest
        .iter()
        .zip(&a)
        .map(|(r, p)| r.distance(*p))
        .fold(0.0f32, f32::max);
    let diff = a
        .iter()
        .zip(&b)
        .map(|(p, q)| p.distance(*q))
        .fold(0.0f32, f32::max);
    eprintln!(
        "imported limb bent: mesh moved up to {moved:.3} m; with detail (up to {most} \
         functions) it lands within {diff:.4} m of the control lattice's answer"
    );
    assert!(b.iter().all(|p| p.is_finite()));
    assert!(moved > 0.05);
    assert!(diff < 0.2 * moved, "{diff} vs {moved}");
}
