//! Position constraints on the adaptive body (Capell §4.4 in the
//! hierarchical basis, §4.7): grabbing the flesh. Run with `--nocapture` to
//! see the measured numbers.
//!
//! The checks: a grabbed point holds to rounding with detail active, in the
//! static solve and step after step; pulling a grabbed point draws detail to
//! the grab and nowhere far from it, and the adapted answer approaches the
//! all-detail one (energy norm) with a fraction of its DOFs; released, the
//! detail goes again.

use glam::DVec3;
use plasticine::fem::{AdaptSettings, AdaptiveBody, FemSettings, Lattice, Material};

const SOFT: Material = Material {
    young: 1.0e5,
    poisson: 0.3,
    density: 1000.0,
};

fn settings() -> FemSettings {
    FemSettings {
        gravity: DVec3::ZERO,
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

/// A slab of 6 × 2 × 6 cells of 5 cm standing on its clamped base (y = 0).
fn slab(s: FemSettings) -> AdaptiveBody {
    let l = Lattice::grid_box(DVec3::ZERO, DVec3::splat(0.05), [6, 2, 6]);
    let fixed = l
        .vertex_coords
        .iter()
        .map(|c| (c[1] == 0).then_some(DVec3::ZERO))
        .collect();
    AdaptiveBody::uniform(l, SOFT, fixed, s, thresholds(1.0, 0.5)).unwrap()
}

/// The grabbed point: on the top face near the corner (x, z) = (0, 0), off
/// every K₂ vertex, so it touches functions of every level.
const GRAB_AT: DVec3 = DVec3::new(0.041, 0.1, 0.033);
/// Pulled up and sideways.
const PULL: DVec3 = DVec3::new(0.004, 0.012, -0.003);

fn max_distortion(body: &AdaptiveBody) -> f64 {
    body.distortion().into_iter().fold(0.0, f64::max)
}

fn off_target(body: &AdaptiveBody) -> f64 {
    body.constraints
        .iter()
        .map(|c| (body.displacement_at(&c.embedding) - c.target).length())
        .fold(0.0, f64::max)
}

/// (1) With every detail active the grabbed point sits on its target to
/// rounding: in the static solve and after every dynamic step while the
/// target moves.
#[test]
fn a_grabbed_point_holds_with_detail_active() {
    let mut body = slab(settings());
    body.refine_all();
    body.grab(GRAB_AT, PULL).unwrap();
    let report = body.solve_static(&[], None).unwrap();
    assert!(report.converged, "{report:?}");
    assert_eq!(report.dropped_constraints, 0);
    let static_off = off_target(&body);
    // The constraint's row: up to 8 functions per level, here all levels.
    let e = body.constraints[0].embedding;
    let row = body.displacement_row_len(&e);
    // Dynamics: the target circles; the point follows exactly.
    let mut dynamic_off: f64 = 0.0;
    let mut moved: f64 = 0.0;
    for k in 1..=30 {
        let phase = k as f64 * 0.2;
        body.constraints[0].target = PULL + 0.01 * DVec3::new(phase.cos(), 0.0, phase.sin());
        assert!(body.step(&[], None).unwrap().converged);
        dynamic_off = dynamic_off.max(off_target(&body));
        moved = moved.max(body.displacement_at(&e).length());
    }
    eprintln!(
        "grab, all detail ({} DOFs): the point's row has {row} functions; off target by \
         {static_off:.1e} m static, {dynamic_off:.1e} m over 30 steps (moved up to {moved:.4} m)",
        body.dof_count()
    );
    assert!(row > 8 && row <= 8 * 3, "{row}");
    assert!(static_off < 1e-12, "{static_off}");
    assert!(dynamic_off < 1e-12, "{dynamic_off}");
}

/// Adapt, then solve again, until nothing changes; returns the rounds. (A
/// solve that starts on the answer would start at rounding level, so only
/// solves after a change are asked to converge.)
fn adapt_statically(body: &mut AdaptiveBody) -> usize {
    for round in 1..=8 {
        if !body.adapt().changed() {
            return round;
        }
        let r = body.solve_static(&[], None).unwrap();
        assert!(r.converged, "round {round}: {r:?}");
    }
    panic!("adaptation did not settle in 8 rounds");
}

/// The elastic energy of the difference of two fields on `K_J`, `eᵀ K_J e`.
fn energy_norm2(body: &AdaptiveBody, a: &[DVec3], b: &[DVec3]) -> f64 {
    let e: Vec<DVec3> = a.iter().zip(b).map(|(x, y)| *x - *y).collect();
    let mut ke = vec![DVec3::ZERO; e.len()];
    body.fine_matrices.stiffness.mul(&e, &mut ke);
    e.iter().zip(&ke).map(|(x, y)| x.dot(*y)).sum()
}

/// (2) Pulling a grabbed point: detail comes to the grab and nowhere far
/// from it, and the adapted answer is far closer (energy norm) to the
/// all-detail one than the coarse answer. The grab is an affine constraint
/// on nested spaces, so the error is also the energy gap: both are printed.
#[test]
fn pulling_a_grabbed_point_draws_detail_to_the_grab_only() {
    let mut body = slab(settings());
    body.grab(GRAB_AT, PULL).unwrap();
    assert!(body.solve_static(&[], None).unwrap().converged);
    let coarse_field = body.field();
    let coarse_dofs = body.dof_count();
    let d0 = max_distortion(&body);
    body.adapt = thresholds(0.4 * d0, 0.2 * d0);
    let rounds = adapt_statically(&mut body);
    let adapted_field = body.field();
    let per_level = body.active_per_level();
    let adapted_dofs = body.dof_count();
    let reach = |level: u8| {
        body.active_functions()
            .iter()
            .filter(|&&a| body.hierarchy.level_of[a] == level)
            .map(|&a| body.hierarchy.fine.rest[a])
            .fold(DVec3::ZERO, DVec3::max)
    };
    let (reach1, reach2) = (reach(1), reach(2));
    let adapted_off = off_target(&body);
    let mut all = body.clone();
    all.refine_all();
    all.solve_static(&[], None).unwrap();
    let fine_field = all.field();
    let zero = vec![DVec3::ZERO; fine_field.len()];
    let scale = energy_norm2(&body, &fine_field, &zero);
    let err = |f: &[DVec3]| (energy_norm2(&body, f, &fine_field) / scale).sqrt();
    let (e0, eh) = (err(&coarse_field), err(&adapted_field));
    let gap = |f: &[DVec3]| {
        ((energy_norm2(&body, f, &zero) - scale) / scale)
            .max(0.0)
            .sqrt()
    };
    eprintln!(
        "grab pulled {PULL}: coarse {coarse_dofs} DOFs, energy-norm error {e0:.3} (from the \
         energy gap {:.3}); adapted in {rounds} rounds to {per_level:?} = {adapted_dofs} DOFs, \
         error {eh:.3} (gap {:.3}); all detail {} DOFs; level-1 detail within x, z ≤ {:.4}, \
         {:.4} m, level 2 within {:.4}, {:.4} m of the 0.3 m slab; grab off target {adapted_off:.1e} m",
        gap(&coarse_field),
        gap(&adapted_field),
        all.dof_count(),
        reach1.x,
        reach1.z,
        reach2.x,
        reach2.z,
    );
    assert!(per_level[1] > 0 && per_level[2] > 0, "{per_level:?}");
    for r in [reach1, reach2] {
        assert!(
            r.x <= 0.1 + 1e-9 && r.z <= 0.1 + 1e-9,
            "detail reaches {r:?}"
        );
    }
    assert!(
        (gap(&adapted_field) - eh).abs() < 1e-3,
        "Galerkin orthogonality"
    );
    assert!(eh < 0.6 * e0, "{eh} vs {e0}");
    assert!(adapted_dofs * 3 < all.dof_count());
    assert!(adapted_off < 1e-12);
}

/// (3) Dynamics: the grab is pulled out over 20 steps and held; detail
/// comes in around it. Released, the slab springs back and settles, and the
/// detail goes.
///
/// While the grab holds a settled slab the step's right-hand side is the
/// large elastic force that the constraint balances, and its projection,
/// CG's start residual, falls to rounding level: a tolerance relative to it
/// is then out of reach. So only the steps of the pull (moving target) and
/// after the release are asked to converge; the hold is checked on the
/// constraint itself, which the projection keeps exact regardless.
#[test]
fn releasing_the_grab_lets_the_detail_go() {
    let mut s = settings();
    s.mass_damping = 20.0;
    s.cg_tolerance = 1e-8;
    s.cg_max_iterations = 2_000;
    let mut body = slab(s);
    let mut probe = body.clone();
    probe.grab(GRAB_AT, PULL).unwrap();
    probe.solve_static(&[], None).unwrap();
    let d0 = max_distortion(&probe);
    body.adapt = thresholds(0.4 * d0, 0.2 * d0);
    body.grab(GRAB_AT, DVec3::ZERO).unwrap();
    let mut held_off: f64 = 0.0;
    let mut hold_unconverged = Vec::new();
    for k in 1..=60 {
        body.constraints[0].target = PULL * (k as f64 / 20.0).min(1.0);
        let r = body.step(&[], None).unwrap();
        if k <= 20 {
            assert!(r.converged, "step {k}: {r:?}");
        } else if !r.converged {
            hold_unconverged.push(r.relative_residual);
        }
        held_off = held_off.max(off_target(&body));
        body.adapt();
    }
    let held = body.active_per_level();
    body.constraints.clear();
    let mut emptied_at = None;
    for k in 1..=150 {
        assert!(body.step(&[], None).unwrap().converged);
        body.adapt();
        if emptied_at.is_none() && body.dof_count() == body.hierarchy.coarse.vertex_count() {
            emptied_at = Some(k);
        }
    }
    eprintln!(
        "grab held 60 steps: {held:?}, off target ≤ {held_off:.1e} m across adaptations \
         ({} hold steps at the rounding floor, relative residual ≤ {:.1e}); released: coarse \
         only again after {emptied_at:?} steps, end {:?}",
        hold_unconverged.len(),
        hold_unconverged.iter().copied().fold(0.0, f64::max),
        body.active_per_level()
    );
    assert!(held[1] > 0 && held[2] > 0, "{held:?}");
    assert!(held_off < 1e-12, "{held_off}");
    assert!(emptied_at.is_some());
    assert_eq!(body.active_per_level()[1..], [0, 0]);
}

/// Bad grabs are errors, not panics.
#[test]
fn bad_grabs_are_errors() {
    let mut body = slab(settings());
    assert!(body.grab(DVec3::new(1.0, 0.0, 0.0), DVec3::ZERO).is_err());
    assert!(body.grab(GRAB_AT, DVec3::NAN).is_err());
    let i = body.grab(GRAB_AT, PULL).unwrap();
    body.constraints[i].embedding.cell = usize::MAX;
    assert!(body.solve_static(&[], None).is_err());
    assert!(body.step(&[], None).is_err());
}
