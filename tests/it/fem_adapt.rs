//! The hierarchical basis and adaptation (Capell §3.1, A.1, §4.7).
//! Run with `--nocapture` to see the measured numbers.
//!
//! The checks: the basis spans `V_J` with every detail on and V₀ with none
//! (against plain lattice FEM on `K_J` and K); a concentrated load draws
//! detail to itself and nowhere else, and the adapted answer is closer to
//! the fine one with a fraction of its DOFs; detail leaves when the load
//! does; a strain between the thresholds changes nothing (hysteresis);
//! bones are untouched by detail; refining keeps the field and the energy.

use glam::{DAffine3, DQuat, DVec3};
use plasticine::fem::{
    AdaptSettings, AdaptiveBody, Bone, FemBody, FemSettings, Lattice, Linearization, Material,
};

const SOFT: Material = Material {
    young: 1.0e5,
    poisson: 0.3,
    density: 1000.0,
};

fn settings(gravity: DVec3) -> FemSettings {
    FemSettings {
        gravity,
        cg_tolerance: 1e-10,
        cg_max_iterations: 20_000,
        ..FemSettings::default()
    }
}

fn thresholds(refine: f64, coarsen: f64) -> AdaptSettings {
    AdaptSettings {
        levels: 2,
        refine_threshold: vec![refine; 2],
        coarsen_threshold: vec![coarsen; 2],
    }
}

/// A cantilever of 8 × 2 × 2 cells of 5 cm, clamped at x = 0.
fn cantilever() -> (Lattice, Vec<Option<DVec3>>) {
    let l = Lattice::grid_box(DVec3::new(0.0, -0.05, -0.05), DVec3::splat(0.05), [8, 2, 2]);
    let fixed = l
        .vertex_coords
        .iter()
        .map(|c| (c[0] == 0).then_some(DVec3::ZERO))
        .collect();
    (l, fixed)
}

/// A slab of 6 × 2 × 6 cells of 5 cm standing on its clamped base (y = 0),
/// and a point load pushing into its top near the corner (x, z) = (0, 0).
fn slab() -> (Lattice, Vec<Option<DVec3>>) {
    let l = Lattice::grid_box(DVec3::ZERO, DVec3::splat(0.05), [6, 2, 6]);
    let fixed = l
        .vertex_coords
        .iter()
        .map(|c| (c[1] == 0).then_some(DVec3::ZERO))
        .collect();
    (l, fixed)
}

const LOAD_AT: DVec3 = DVec3::new(0.0375, 0.1, 0.0375);

/// A downward point load at `LOAD_AT` on the `K_J` vertices.
fn point_load(body: &AdaptiveBody, newtons: f64) -> Vec<DVec3> {
    let fine = &body.hierarchy.fine;
    let at = (0..fine.vertex_count())
        .find(|&a| fine.rest[a].distance(LOAD_AT) < 1e-9)
        .expect("the load point is a K_J vertex");
    let mut f = vec![DVec3::ZERO; fine.vertex_count()];
    f[at] = DVec3::new(0.0, -newtons, 0.0);
    f
}

fn max_distortion(body: &AdaptiveBody) -> f64 {
    body.distortion().into_iter().fold(0.0, f64::max)
}

/// (1) Every detail on: the static sag under gravity is plain FEM on `K_J`;
/// no detail: it is plain FEM on K.
#[test]
fn the_basis_spans_the_fine_space_with_all_detail_and_the_coarse_one_without() {
    let g = DVec3::new(0.0, -9.81, 0.0);
    let (coarse, fixed) = cantilever();
    let mut body = AdaptiveBody::uniform(
        coarse.clone(),
        SOFT,
        fixed.clone(),
        settings(g),
        thresholds(1.0, 0.5),
    )
    .unwrap();
    // Coarse only against FemBody on K.
    body.solve_static(&[], None).unwrap();
    let mut plain = FemBody::uniform(coarse.clone(), SOFT, settings(g));
    plain.fixed = fixed.clone();
    plain.solve_static(&[], None);
    let scale = plain.q.iter().map(|q| q.length()).fold(0.0, f64::max);
    let coarse_err = (0..coarse.vertex_count())
        .map(|a| (body.q[a] - plain.q[a]).length())
        .fold(0.0, f64::max)
        / scale;
    // Every detail against FemBody on K₂, clamped on the same face.
    let report = body.refine_all();
    body.solve_static(&[], None).unwrap();
    let fine = coarse.subdivide(2);
    let mut plain_fine = FemBody::uniform(fine.clone(), SOFT, settings(g));
    for a in 0..fine.vertex_count() {
        if fine.vertex_coords[a][0] == 0 {
            plain_fine.fixed[a] = Some(DVec3::ZERO);
        }
    }
    plain_fine.solve_static(&[], None);
    let field = body.field();
    let fine_scale = plain_fine.q.iter().map(|q| q.length()).fold(0.0, f64::max);
    let fine_err = (0..fine.vertex_count())
        .map(|a| (field[a] - plain_fine.q[a]).length())
        .fold(0.0, f64::max)
        / fine_scale;
    // The DOFs: one per K₂ vertex except the details on the clamped face.
    let clamped_details = (0..fine.vertex_count())
        .filter(|&a| fine.vertex_coords[a][0] == 0 && body.hierarchy.level_of[a] > 0)
        .count();
    eprintln!(
        "span: coarse {} DOFs, max error vs FemBody(K) {coarse_err:.2e}; all detail {:?} = {} \
         DOFs, max error vs FemBody(K₂) {fine_err:.2e}; tip sag K {scale:.4e} m, K₂ \
         {fine_scale:.4e} m",
        coarse.vertex_count(),
        report.added,
        body.dof_count(),
    );
    assert_eq!(body.dof_count(), fine.vertex_count() - clamped_details);
    assert!(coarse_err < 1e-7, "{coarse_err}");
    assert!(fine_err < 1e-7, "{fine_err}");
    // The fine space is softer (trilinear hexes lock less when smaller).
    assert!(fine_scale > 1.05 * scale);
}

/// Static solve, adapt, until nothing changes; returns the rounds.
fn adapt_statically(body: &mut AdaptiveBody, load: &[DVec3]) -> usize {
    for round in 1..=8 {
        body.solve_static(&[], Some(load)).unwrap();
        if !body.adapt().changed() {
            return round;
        }
    }
    panic!("adaptation did not settle in 8 rounds");
}

/// (2) A point load: detail comes to the load and nowhere far from it, and
/// the adapted answer is far closer (energy norm) to the all-detail one
/// than the coarse answer, with a fraction of the DOFs.
#[test]
fn a_point_load_draws_detail_to_itself_and_improves_the_answer_cheaply() {
    let (coarse, fixed) = slab();
    let mut body = AdaptiveBody::uniform(
        coarse,
        SOFT,
        fixed,
        settings(DVec3::ZERO),
        thresholds(1.0, 0.5),
    )
    .unwrap();
    let load = point_load(&body, 20.0);
    // Compliance fᵀu: for nested Galerkin spaces with the same clamps, the
    // energy-norm error² of a coarser answer is c_fine − c.
    let compliance = |body: &AdaptiveBody| -> f64 {
        body.field().iter().zip(&load).map(|(u, f)| u.dot(*f)).sum()
    };
    body.solve_static(&[], Some(&load)).unwrap();
    let c0 = compliance(&body);
    let d0 = max_distortion(&body);
    let coarse_dofs = body.dof_count();
    body.adapt = thresholds(0.4 * d0, 0.2 * d0);
    let rounds = adapt_statically(&mut body, &load);
    let ch = compliance(&body);
    let per_level = body.active_per_level();
    let adapted_dofs = body.dof_count();
    // Where the detail went: the far corner of each level's details.
    let reach = |level: u8| {
        body.active_functions()
            .iter()
            .filter(|&&a| body.hierarchy.level_of[a] == level)
            .map(|&a| body.hierarchy.fine.rest[a])
            .fold(DVec3::ZERO, DVec3::max)
    };
    let (reach1, reach2) = (reach(1), reach(2));
    let mut all = body.clone();
    all.refine_all();
    all.solve_static(&[], Some(&load)).unwrap();
    let cj = compliance(&all);
    let err = |c: f64| ((cj - c) / cj).max(0.0).sqrt();
    eprintln!(
        "point load: coarse {coarse_dofs} DOFs, energy-norm error {:.3}; adapted in {rounds} \
         rounds to {per_level:?} = {adapted_dofs} DOFs, error {:.3}; all detail {} DOFs; \
         level-1 detail within x, z ≤ {:.4}, {:.4} m, level 2 within {:.4}, {:.4} m of the 0.3 m \
         slab (load at {:.4}, {:.4}); max distortion coarse {d0:.3e}",
        err(c0),
        err(ch),
        all.dof_count(),
        reach1.x,
        reach1.z,
        reach2.x,
        reach2.z,
        LOAD_AT.x,
        LOAD_AT.z,
    );
    assert!(per_level[1] > 0 && per_level[2] > 0, "{per_level:?}");
    // Only in the load's coarse column and the next: two thirds of the
    // slab's width along x and along z get no detail.
    for r in [reach1, reach2] {
        assert!(
            r.x <= 0.1 + 1e-9 && r.z <= 0.1 + 1e-9,
            "detail reaches {r:?}"
        );
    }
    assert!(c0 < ch && ch <= cj * (1.0 + 1e-9), "{c0} {ch} {cj}");
    assert!(err(ch) < 0.6 * err(c0), "{} vs {}", err(ch), err(c0));
    assert!(adapted_dofs * 3 < all.dof_count());
}

/// (3) Dynamics: the point load pulls detail in; when it is released and
/// the slab settles, the detail goes again.
#[test]
fn detail_leaves_when_the_load_is_removed_and_the_body_settles() {
    let (coarse, fixed) = slab();
    let mut s = settings(DVec3::ZERO);
    s.mass_damping = 20.0;
    let mut body = AdaptiveBody::uniform(coarse, SOFT, fixed, s, thresholds(1.0, 0.5)).unwrap();
    let load = point_load(&body, 20.0);
    body.solve_static(&[], Some(&load)).unwrap();
    let d0 = max_distortion(&body);
    body.coarsen_all();
    body.q.iter_mut().for_each(|q| *q = DVec3::ZERO);
    body.adapt = thresholds(0.4 * d0, 0.2 * d0);
    let mut peak = vec![0; 3];
    for _ in 0..60 {
        assert!(body.step(&[], Some(&load)).unwrap().converged);
        body.adapt();
        for (p, n) in peak.iter_mut().zip(body.active_per_level()) {
            *p = (*p).max(n);
        }
    }
    let loaded = body.active_per_level();
    let mut emptied_at = None;
    for k in 1..=120 {
        assert!(body.step(&[], None).unwrap().converged);
        body.adapt();
        if emptied_at.is_none() && body.dof_count() == body.hierarchy.coarse.vertex_count() {
            emptied_at = Some(k);
        }
    }
    eprintln!(
        "load on: peak {peak:?}, after 60 steps {loaded:?}; released: coarse only again after \
         {emptied_at:?} steps, end {:?}, max distortion {:.2e} (coarsen below {:.2e})",
        body.active_per_level(),
        max_distortion(&body),
        0.2 * d0
    );
    assert!(loaded[1] > 0 && loaded[2] > 0, "{loaded:?}");
    assert!(emptied_at.is_some());
    assert_eq!(body.active_per_level()[1..], [0, 0]);
}

/// A bar of 6 × 2 × 2 cells (ν = 0) stretched by clamping both ends, the
/// far one displaced by 6 mm: the strain is uniform, ε = 0.02.
fn stretched_bar(adapt: AdaptSettings) -> AdaptiveBody {
    let l = Lattice::grid_box(DVec3::ZERO, DVec3::splat(0.05), [6, 2, 2]);
    let fixed = l
        .vertex_coords
        .iter()
        .map(|c| match c[0] {
            0 => Some(DVec3::ZERO),
            6 => Some(DVec3::new(0.006, 0.0, 0.0)),
            _ => None,
        })
        .collect();
    let m = Material {
        poisson: 0.0,
        ..SOFT
    };
    let mut body = AdaptiveBody::uniform(l, m, fixed, settings(DVec3::ZERO), adapt).unwrap();
    body.solve_static(&[], None).unwrap();
    body
}

/// (4) Hysteresis: with the strain between the thresholds, neither the
/// coarse nor the fully refined body changes, step after step; above the
/// refine threshold detail comes, below the coarsen one it goes.
#[test]
fn a_strain_between_the_thresholds_changes_nothing() {
    let eps = 0.02;
    let between = thresholds(1.5 * eps, 0.5 * eps);
    let mut body = stretched_bar(between.clone());
    let d = body.distortion();
    let spread = d.iter().map(|x| (x - eps).abs()).fold(0.0, f64::max);
    assert!(spread < 1e-8, "the strain is uniform: {spread}");
    assert!(!body.adapt().changed());
    body.refine_all();
    let full = body.dof_count();
    for _ in 0..20 {
        body.step(&[], None).unwrap();
        assert!(!body.adapt().changed());
    }
    assert_eq!(body.dof_count(), full);
    // Above the refine threshold: both levels come in one adaptation.
    let mut up = stretched_bar(thresholds(0.5 * eps, 0.25 * eps));
    let added = up.adapt();
    assert!(added.added[1] > 0 && added.added[2] > 0, "{added:?}");
    let refined = up.active_per_level();
    for _ in 0..10 {
        up.step(&[], None).unwrap();
        assert!(!up.adapt().changed(), "no oscillation");
    }
    // Below the coarsen threshold: all goes.
    let mut down = stretched_bar(thresholds(3.0 * eps, 2.0 * eps));
    down.refine_all();
    let removed = down.adapt();
    eprintln!(
        "hysteresis: uniform ε = {eps}, spread {spread:.1e}; refined to {refined:?}, fully \
         refined {full} DOFs kept for 20 steps; coarsening removed {:?}",
        removed.removed
    );
    assert_eq!(down.active_per_level()[1..], [0, 0]);
    // Repeated dynamic steps under a constant point load settle on one
    // level set: nothing changes over the last 40 of 100 steps.
    let (coarse, fixed) = slab();
    let mut s = settings(DVec3::ZERO);
    s.mass_damping = 20.0;
    let mut slab = AdaptiveBody::uniform(coarse, SOFT, fixed, s, thresholds(1.0, 0.5)).unwrap();
    let load = point_load(&slab, 20.0);
    slab.solve_static(&[], Some(&load)).unwrap();
    let d0 = max_distortion(&slab);
    slab.q.iter_mut().for_each(|q| *q = DVec3::ZERO);
    slab.adapt = thresholds(0.4 * d0, 0.2 * d0);
    let mut changes = Vec::new();
    for _ in 0..100 {
        slab.step(&[], Some(&load)).unwrap();
        changes.push(slab.adapt().changed());
    }
    let last_change = changes.iter().rposition(|&c| c);
    eprintln!("constant load: last change at step {last_change:?} of 100");
    assert!(changes[60..].iter().all(|c| !c));
}

/// (5) A bone along the middle of a bar: detail never moves it (the bone
/// vertices sit exactly on their targets, the field along the bone is the
/// rigid motion), and the level-0 functions still sum to one.
#[test]
fn bones_keep_their_targets_with_detail_and_level_zero_is_a_partition_of_unity() {
    let mut l = Lattice::grid_box(DVec3::new(0.0, -0.05, -0.05), DVec3::splat(0.05), [4, 2, 2]);
    let bone = Bone {
        joint: 0,
        child: None,
        head: DVec3::ZERO,
        tail: DVec3::new(0.2, 0.0, 0.0),
    };
    l.bind_bones(vec![bone.clone()], 0.025);
    let bound = l.bone_of_vertex.iter().flatten().count();
    let fixed = vec![None; l.vertex_count()];
    let mut body = AdaptiveBody::uniform(
        l,
        SOFT,
        fixed,
        settings(DVec3::new(0.0, -9.81, 0.0)),
        thresholds(1.0, 0.5),
    )
    .unwrap();
    let h = &body.hierarchy;
    // Partition of unity of V₀ at every K₂ vertex.
    let mut sum = vec![0.0; h.fine.vertex_count()];
    for &a in &h.fine_of_coarse {
        for (b, w) in h.function_values(a) {
            sum[b] += w;
        }
    }
    let pu = sum.iter().map(|s| (s - 1.0).abs()).fold(0.0, f64::max);
    // Excluded details: exactly those on the bone.
    let on_bone: Vec<usize> = (0..h.fine.vertex_count())
        .filter(|&a| bone.distance(h.fine.rest[a]) < 1e-12)
        .collect();
    let excluded = (0..h.fine.vertex_count())
        .filter(|&a| !h.admissible[a])
        .count();
    assert_eq!(excluded, on_bone.len() - bound);
    body.refine_all();
    let mut worst_vertex: f64 = 0.0;
    let mut worst_line: f64 = 0.0;
    for k in 1..=20 {
        let t = DAffine3::from_translation(DVec3::new(0.0, 0.01, 0.0) * k as f64)
            * DAffine3::from_quat(DQuat::from_rotation_z(0.03 * k as f64));
        assert!(body.step(&[t], None).unwrap().converged);
        let h = &body.hierarchy;
        for a in 0..h.coarse.vertex_count() {
            if h.coarse.bone_of_vertex[a].is_some() {
                let r = h.coarse.rest[a];
                worst_vertex = worst_vertex.max((body.q[a] - (t.transform_point3(r) - r)).length());
            }
        }
        let field = body.field();
        for &a in &on_bone {
            let r = h.fine.rest[a];
            worst_line = worst_line.max((field[a] - (t.transform_point3(r) - r)).length());
        }
    }
    let moved = body.field().iter().map(|u| u.length()).fold(0.0, f64::max);
    eprintln!(
        "bones: {bound} bound vertices, {excluded} details excluded (on the bone), {} DOFs; \
         bone vertices off target by {worst_vertex:.1e} m, the bone line by {worst_line:.1e} m \
         (flesh moved up to {moved:.3} m); partition of unity error {pu:.1e}",
        body.dof_count()
    );
    assert_eq!(worst_vertex, 0.0);
    assert!(worst_line < 1e-14, "{worst_line}");
    assert!(pu < 1e-14);
}

/// (6) Refining during a fall under gravity keeps the field exactly and so
/// the energy; implicit Euler never adds energy, refinements included.
#[test]
fn refining_keeps_the_field_and_never_adds_energy() {
    let (coarse, fixed) = cantilever();
    let mut s = settings(DVec3::new(0.0, -9.81, 0.0));
    s.mass_damping = 0.0;
    s.stiffness_damping = 0.0;
    // Coarsen threshold 0: detail, once in, stays (no dropped energy).
    let mut body = AdaptiveBody::uniform(coarse, SOFT, fixed, s, thresholds(1.0, 0.0)).unwrap();
    let mut probe = body.clone();
    probe.solve_static(&[], None).unwrap();
    let d = max_distortion(&probe);
    body.adapt = thresholds(0.3 * d, 0.0);
    let mut last = body.energy().total();
    let (mut worst_jump, mut worst_field, mut worst_gain): (f64, f64, f64) = (0.0, 0.0, 0.0);
    let mut refinements = 0;
    let mut scale: f64 = 0.0;
    for _ in 0..40 {
        assert!(body.step(&[], None).unwrap().converged);
        let e = body.energy().total();
        scale = scale.max(e.abs());
        worst_gain = worst_gain.max(e - last);
        let before = body.field();
        let v_before = body.field_velocity();
        let report = body.adapt();
        if report.changed() {
            refinements += 1;
            assert_eq!(report.removed.iter().sum::<usize>(), 0);
            let after = body.field();
            let v_after = body.field_velocity();
            for a in 0..after.len() {
                worst_field = worst_field
                    .max((after[a] - before[a]).length())
                    .max((v_after[a] - v_before[a]).length());
            }
            worst_jump = worst_jump.max((body.energy().total() - e).abs());
        }
        last = body.energy().total();
    }
    eprintln!(
        "refining: {refinements} refinements, ends at {:?}; field jump {worst_field:.1e}, energy \
         jump {worst_jump:.1e} J, largest step gain {worst_gain:.1e} J of |E| ≤ {scale:.3e} J",
        body.active_per_level()
    );
    assert!(refinements > 0);
    assert_eq!(worst_field, 0.0);
    assert!(worst_jump <= 1e-12 * scale);
    assert!(worst_gain <= 1e-9 * scale);
}

/// Bad input is an error, not a panic.
#[test]
fn bad_settings_are_errors() {
    let (coarse, fixed) = cantilever();
    let bad = [
        AdaptSettings {
            levels: 0,
            refine_threshold: vec![],
            coarsen_threshold: vec![],
        },
        thresholds(0.1, 0.2),
        AdaptSettings {
            levels: 2,
            refine_threshold: vec![1.0],
            coarsen_threshold: vec![0.5],
        },
    ];
    for adapt in bad {
        let r = AdaptiveBody::uniform(
            coarse.clone(),
            SOFT,
            fixed.clone(),
            settings(DVec3::ZERO),
            adapt,
        );
        assert!(r.is_err());
    }
    let bad = FemSettings {
        linearization: Linearization::BlendedLocal { blend_width: 0.0 },
        ..settings(DVec3::ZERO)
    };
    let r = AdaptiveBody::uniform(
        coarse.clone(),
        SOFT,
        fixed.clone(),
        bad,
        thresholds(1.0, 0.5),
    );
    assert!(r.is_err());
    let mut body = AdaptiveBody::uniform(
        coarse,
        SOFT,
        fixed,
        settings(DVec3::ZERO),
        thresholds(1.0, 0.5),
    )
    .unwrap();
    assert!(body.step(&[DAffine3::IDENTITY], None).is_err());
    assert!(body.solve_static(&[], Some(&[DVec3::ZERO])).is_err());
}

/// The bench scenario (`plasticine bench --only fem`): the pressed slab
/// refines under the load and is back to the coarse level after release.
/// Prints the figures (debug profile here: the rates are not the release
/// ones).
#[test]
fn the_adaptive_bench_refines_under_the_load_and_returns_to_coarse() {
    let v = plasticine::cli::bench::fem_adapt::fem_adaptive_steps_per_second(true)
        .pop()
        .unwrap();
    eprintln!("{v}");
    let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    assert!(n("dofs_coarse") < n("dofs_peak"));
    assert!(n("dofs_peak") * 3 < n("dofs_all_detail"));
    assert_eq!(n("dofs_after_release"), n("dofs_coarse"));
    assert!(n("rebuilds") >= 2);
}
