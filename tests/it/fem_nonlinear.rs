//! The nonlinear (Green strain, St. Venant–Kirchhoff) reference model of
//! Capell §3.2–3.3 against the linear one it linearizes, analytic
//! invariants and finite differences. Run with `--nocapture` for the
//! measured numbers.

use glam::{DAffine3, DQuat, DVec3};
use plasticine::fem::{FemBody, FemSettings, Lattice, Linearization, Material};
use plasticine::fem::{NewtonReport, NonlinearBody};
use plasticine::samples::{limb, limb_pose};
use std::time::Instant;

const L: f64 = 1.0;
const H: f64 = 0.1;
const BEAM: Material = Material {
    young: 1.0e7,
    poisson: 0.0,
    density: 1000.0,
};

/// A square beam L × H × H, `n` cubic cells through the thickness, clamped
/// at x = 0, under gravity g (m/s², along −y).
fn cantilever(n: usize, g: f64) -> FemBody {
    let h = H / n as f64;
    let lattice = Lattice::grid_box(
        DVec3::new(0.0, -H / 2.0, -H / 2.0),
        DVec3::splat(h),
        [10 * n, n, n],
    );
    let settings = FemSettings {
        gravity: DVec3::new(0.0, -g, 0.0),
        cg_tolerance: 1e-12,
        cg_max_iterations: 50_000,
        ..FemSettings::default()
    };
    let mut body = FemBody::uniform(lattice, BEAM, settings);
    for a in 0..body.vertex_count() {
        if body.lattice.vertex_coords[a][0] == 0 {
            body.fixed[a] = Some(DVec3::ZERO);
        }
    }
    body
}

fn norm(v: &[DVec3]) -> f64 {
    v.iter().map(|x| x.length_squared()).sum::<f64>().sqrt()
}

fn distance(a: &[DVec3], b: &[DVec3]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (*x - *y).length_squared())
        .sum::<f64>()
        .sqrt()
}

/// A deterministic pseudo-random field (no RNG crate): components in [−1, 1].
fn field(n: usize, seed: f64) -> Vec<DVec3> {
    (0..n)
        .map(|a| {
            let t = a as f64 + seed;
            DVec3::new(
                (12.9898 * t).sin(),
                (78.233 * t + 1.0).sin(),
                (37.719 * t + 2.0).sin(),
            )
        })
        .collect()
}

/// The tangent at q = 0 is the linear stiffness K of the interactive solver,
/// block for block (1e-10 relative), with per-cell materials.
#[test]
fn the_tangent_at_rest_is_the_linear_stiffness() {
    let lattice = Lattice::grid_box(DVec3::ZERO, DVec3::new(0.1, 0.07, 0.05), [3, 2, 2]);
    let materials: Vec<Material> = (0..lattice.cell_count())
        .map(|c| Material {
            young: 1e4 * (1.0 + c as f64),
            poisson: 0.05 + 0.03 * c as f64,
            density: 1000.0,
        })
        .collect();
    let body = FemBody::new(lattice, materials, FemSettings::default());
    let nl = NonlinearBody::from_fem(&body);
    let zero = vec![DVec3::ZERO; body.vertex_count()];
    let t = nl.tangent(&zero);
    let k = &body.global.stiffness;
    let scale = k
        .blocks
        .iter()
        .map(|b| b.abs().to_cols_array().into_iter().fold(0.0, f64::max))
        .fold(0.0, f64::max);
    let worst = t
        .blocks
        .iter()
        .zip(&k.blocks)
        .map(|(a, b)| {
            (*a - *b)
                .abs()
                .to_cols_array()
                .into_iter()
                .fold(0.0, f64::max)
        })
        .fold(0.0, f64::max);
    eprintln!(
        "tangent at rest vs linear K: largest block-entry difference {:.2e} of {:.2e} ({:.1e} relative)",
        worst,
        scale,
        worst / scale
    );
    assert!(worst <= 1e-10 * scale, "{worst:e} vs {scale:e}");
    assert_eq!(nl.elastic_energy(&zero), 0.0);
    assert_eq!(norm(&nl.elastic_forces(&zero)), 0.0);
}

/// At a large random deformation (displacements up to 30 % of a cell) the
/// forces are −∂V/∂q and the tangent is −∂f/∂q, by central differences.
#[test]
fn forces_and_tangent_are_the_derivatives_of_the_energy() {
    let cell = 0.1;
    let lattice = Lattice::grid_box(DVec3::ZERO, DVec3::splat(cell), [2, 2, 1]);
    let body = FemBody::uniform(lattice, Material::FLESH, FemSettings::default());
    let nl = NonlinearBody::from_fem(&body);
    let n = body.vertex_count();
    let q: Vec<DVec3> = field(n, 0.5).iter().map(|v| *v * 0.3 * cell).collect();
    let f = nl.elastic_forces(&q);
    let t = nl.tangent(&q);
    let eps = 1e-6 * cell;
    let (mut worst_f, mut worst_k) = (0.0f64, 0.0f64);
    let f_scale = f.iter().map(|v| v.abs().max_element()).fold(0.0, f64::max);
    let mut k_scale = 0.0f64;
    for a in 0..n {
        for i in 0..3 {
            let (mut qp, mut qm) = (q.clone(), q.clone());
            qp[a][i] += eps;
            qm[a][i] -= eps;
            let dv = (nl.elastic_energy(&qp) - nl.elastic_energy(&qm)) / (2.0 * eps);
            worst_f = worst_f.max((-dv - f[a][i]).abs());
            // Column (a, i) of the tangent: −∂f/∂q_{a,i}.
            let (fp, fm) = (nl.elastic_forces(&qp), nl.elastic_forces(&qm));
            for b in 0..n {
                let fd = -(fp[b] - fm[b]) / (2.0 * eps);
                let col = t.find(b, a).map_or(DVec3::ZERO, |k| t.blocks[k].col(i));
                k_scale = k_scale.max(col.abs().max_element());
                worst_k = worst_k.max((fd - col).abs().max_element());
            }
        }
    }
    eprintln!(
        "finite differences at 30 %-of-a-cell displacements: force error {:.1e} (of {:.1e}), \
         tangent error {:.1e} (of {:.1e})",
        worst_f, f_scale, worst_k, k_scale
    );
    assert!(worst_f < 1e-6 * f_scale, "{worst_f:e}");
    assert!(worst_k < 1e-6 * k_scale, "{worst_k:e}");
}

/// A 90° rotation plus a translation of the whole limb strains nothing: the
/// nonlinear energy and forces vanish to round-off (no Figure-5 distortion),
/// while the global linear model charges it as a large strain.
#[test]
fn a_large_rigid_motion_carries_no_energy_and_no_force() {
    let body = limb([4, 4, 12], 0.05, Linearization::Global);
    let nl = NonlinearBody::from_fem(&body);
    let t = DAffine3::from_translation(DVec3::new(0.3, -0.2, 0.5))
        * DAffine3::from_quat(DQuat::from_axis_angle(
            DVec3::new(1.0, 2.0, 0.5).normalize(),
            std::f64::consts::FRAC_PI_2,
        ));
    let rest = &body.lattice.rest;
    let q: Vec<DVec3> = rest.iter().map(|r| t.transform_point3(*r) - *r).collect();
    // Reference: a 1 % uniaxial stretch.
    let stretch: Vec<DVec3> = rest
        .iter()
        .map(|r| DVec3::new(0.0, 0.0, 0.01 * r.z))
        .collect();
    let (e_ref, f_ref) = (
        nl.elastic_energy(&stretch),
        norm(&nl.elastic_forces(&stretch)),
    );
    let (e, f) = (nl.elastic_energy(&q), norm(&nl.elastic_forces(&q)));
    let mut kq = vec![DVec3::ZERO; q.len()];
    body.global.stiffness.mul(&q, &mut kq);
    let linear_energy = 0.5 * q.iter().zip(&kq).map(|(a, b)| a.dot(*b)).sum::<f64>();
    eprintln!(
        "rigid 90° + translation: nonlinear V = {e:.2e} J, ‖f‖ = {f:.2e} N; a 1 % stretch: \
         V = {e_ref:.2e} J, ‖f‖ = {f_ref:.2e} N; the global linear model's V = {linear_energy:.2e} J"
    );
    assert!(e < 1e-12 * e_ref, "{e:e}");
    assert!(f < 1e-10 * f_ref, "{f:e}");
    assert!(linear_energy > 100.0 * e_ref);
}

/// Newton from the current state, asserting convergence.
fn solve(nl: &mut NonlinearBody) -> NewtonReport {
    let report = nl.solve_static(&[], None).expect("valid input");
    assert!(report.converged, "{report:?}");
    report
}

/// Under small loads the nonlinear solution tends to the linear one, the
/// gap shrinking like the load squared: doubling the load quadruples it.
#[test]
fn small_loads_give_the_linear_solution_up_to_the_load_squared() {
    let mut gaps = Vec::new();
    for g in [0.2, 0.4] {
        let mut lin = cantilever(2, g);
        assert!(lin.solve_static(&[], None).converged());
        let mut nl = NonlinearBody::from_fem(&cantilever(2, g));
        solve(&mut nl);
        let gap = distance(&nl.q, &lin.q);
        eprintln!(
            "g = {g} m/s²: linear ‖q‖ = {:.3e} m, nonlinear − linear {gap:.3e} m ({:.2e} relative)",
            norm(&lin.q),
            gap / norm(&lin.q)
        );
        gaps.push(gap);
    }
    let order = (gaps[1] / gaps[0]).log2();
    eprintln!(
        "gap ratio for twice the load: {:.3} (order {order:.3})",
        gaps[1] / gaps[0]
    );
    assert!((order - 2.0).abs() < 0.1, "{order}");
}

/// The centre line of a cantilever: vertices on y = z = 0, from root to tip.
fn centre_line(body: &FemBody, q: &[DVec3]) -> Vec<DVec3> {
    let n = body.lattice.dims[1];
    let mut pts: Vec<(usize, DVec3)> = (0..body.vertex_count())
        .filter(|&a| {
            let c = body.lattice.vertex_coords[a];
            c[1] == n / 2 && c[2] == n / 2
        })
        .map(|a| {
            (
                body.lattice.vertex_coords[a][0],
                body.lattice.rest[a] + q[a],
            )
        })
        .collect();
    pts.sort_by_key(|p| p.0);
    pts.into_iter().map(|p| p.1).collect()
}

fn arc_length(pts: &[DVec3]) -> f64 {
    pts.windows(2).map(|w| w[0].distance(w[1])).sum()
}

/// Large deflection: a load for which the linear model's tip drops half
/// the length. The linear model moves the tip straight down and stretches
/// the centre line; the nonlinear one keeps its arc length (to ~1 %) and
/// pulls the tip back towards the root. The nonlinear solve is loaded in
/// four increments; its last Newton solve converges quadratically.
#[test]
fn a_large_deflection_cantilever_keeps_its_length_and_newton_converges_quadratically() {
    let n = 2;
    // Euler–Bernoulli: δ = ρ g A L⁴ / (8 E I) = 1.5 ρ g L⁴ / (E H²).
    let g = 0.5 * L * BEAM.young * H * H / (1.5 * BEAM.density * L.powi(4));
    let mut lin = cantilever(n, g);
    assert!(lin.solve_static(&[], None).converged());
    let base = cantilever(n, g);
    let mut nl = NonlinearBody::from_fem(&base);
    let mut last = NewtonReport::default();
    let start = Instant::now();
    for frac in [0.25, 0.5, 0.75, 1.0] {
        nl.gravity = DVec3::new(0.0, -g * frac, 0.0);
        last = solve(&mut nl);
        eprintln!(
            "load {:.0} %: {} Newton iterations, {} CG iterations, {} negative-curvature \
             systems, {} line-search halvings",
            frac * 100.0,
            last.iterations,
            last.cg_iterations,
            last.negative_curvature,
            last.line_search_cuts
        );
    }
    let seconds = start.elapsed().as_secs_f64();
    let tip = |q: &[DVec3]| *centre_line(&base, q).last().expect("tip");
    let (tl, tn) = (
        tip(&lin.q) - DVec3::new(L, 0.0, 0.0),
        tip(&nl.q) - DVec3::new(L, 0.0, 0.0),
    );
    let (sl, sn) = (
        arc_length(&centre_line(&base, &lin.q)) / L - 1.0,
        arc_length(&centre_line(&base, &nl.q)) / L - 1.0,
    );
    eprintln!(
        "large deflection ({} vertices): linear tip moves ({:.4}, {:.4}) m, centre line \
         stretched {:.2} %; nonlinear tip ({:.4}, {:.4}) m, stretch {:.3} %; four Newton \
         solves {:.2} s (debug build)",
        base.vertex_count(),
        tl.x,
        tl.y,
        sl * 100.0,
        tn.x,
        tn.y,
        sn * 100.0,
        seconds
    );
    assert!(tl.x.abs() < 0.01 * L, "{tl}");
    assert!(sl > 0.08, "{sl}");
    assert!(sn.abs() < 0.01, "{sn}");
    assert!(tn.x < -0.05 * L, "{tn}");
    assert!(tn.y > tl.y, "the nonlinear beam sags less: {tn} vs {tl}");
    // Quadratic convergence: near the solution the step s_k = ‖q_{k+1} − q_k‖
    // is the error, and s_{k+1} ≈ C s_k^p with p = 2. Fit p (least squares on
    // ln s_{k+1} against ln s_k) over the steps below a tenth of the first,
    // above the round-off floor.
    let s = &last.steps;
    let floor = 1e-12 * norm(&nl.q);
    let pairs: Vec<(f64, f64)> = s
        .windows(2)
        .filter(|w| w[0] < 0.1 * s[0] && w[1] > floor)
        .map(|w| (w[0].ln(), w[1].ln()))
        .collect();
    let order = fit_slope(&pairs);
    eprintln!(
        "last solve: residuals {}, steps {}, fitted order {order:.2} over {} pairs",
        sci(&last.residuals),
        sci(s),
        pairs.len()
    );
    assert!(pairs.len() >= 2, "{pairs:?}");
    assert!((1.7..2.5).contains(&order), "{order}");
}

/// Least-squares slope of y against x.
fn fit_slope(xy: &[(f64, f64)]) -> f64 {
    let n = xy.len() as f64;
    let (mx, my) = (
        xy.iter().map(|p| p.0).sum::<f64>() / n,
        xy.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let sxy: f64 = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = xy.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    sxy / sxx
}

/// Figure 5 against the reference: the limb of `samples::limb` with the
/// forearm at the top of its `limb_pose` swing (0.8 rad), no gravity,
/// static. Distances of the linear models' lattices from the nonlinear
/// equilibrium: blended local linearization is about three times closer
/// than the global linear model overall, and six times closer on the outer
/// forearm (z ≥ 0.45 m), where the global model's distortion lives.
///
/// (At 90° the St. Venant–Kirchhoff reference inverts cells at the inner
/// elbow, det F < 0: SVK does not resist inversion, so it is no reference
/// there; at 0.8 rad no point is inverted, which the test checks.)
#[test]
fn blended_local_linearization_is_close_to_the_nonlinear_reference_global_is_not() {
    let setup = |lin| {
        let mut b = limb([4, 4, 12], 0.05, lin);
        b.settings.gravity = DVec3::ZERO;
        b.settings.cg_tolerance = 1e-10;
        b.settings.cg_max_iterations = 20_000;
        b
    };
    let global = setup(Linearization::Global);
    let bones = limb_pose(&global, 0.25);
    let mut nl = NonlinearBody::from_fem(&global);
    nl.pose_rigidly(&bones, 0.1).expect("bones");
    let start = Instant::now();
    let report = nl.solve_static(&bones, None).expect("bones");
    let seconds = start.elapsed().as_secs_f64();
    let min_det = nl.min_jacobian(&nl.q);
    eprintln!(
        "nonlinear elbow reference ({} vertices): {} Newton iterations, {} CG, {} negative \
         curvature, {} halvings, {:.3} s (debug build); residuals {}; min det F {min_det:.3}",
        nl.vertex_count(),
        report.iterations,
        report.cg_iterations,
        report.negative_curvature,
        report.line_search_cuts,
        seconds,
        sci(&report.residuals)
    );
    assert!(report.converged, "{report:?}");
    assert!(min_det > 0.1, "{min_det}");
    let mut dist = Vec::new();
    for lin in [
        Linearization::BlendedLocal { blend_width: 0.1 },
        Linearization::Global,
    ] {
        let mut body = setup(lin);
        assert!(body.solve_static(&bones, None).converged());
        let off: Vec<(f64, f64)> = (0..body.vertex_count())
            .map(|a| (body.lattice.rest[a].z, body.q[a].distance(nl.q[a])))
            .collect();
        let rms = |far: bool| {
            let d: Vec<f64> = off
                .iter()
                .filter(|(z, _)| !far || *z >= 0.45)
                .map(|p| p.1)
                .collect();
            (d.iter().map(|x| x * x).sum::<f64>() / d.len() as f64).sqrt()
        };
        let worst = off.iter().map(|p| p.1).fold(0.0, f64::max);
        eprintln!(
            "elbow at 0.8 rad, {lin:?}: off the nonlinear reference by {:.2} mm RMS \
             ({:.2} mm RMS on the outer forearm), {:.2} mm at worst",
            rms(false) * 1e3,
            rms(true) * 1e3,
            worst * 1e3
        );
        dist.push((rms(false), rms(true), worst));
    }
    let (blended, global) = (dist[0], dist[1]);
    assert!(blended.0 < 0.4 * global.0, "{dist:?}");
    assert!(blended.1 < 0.25 * global.1, "{dist:?}");
    assert!(blended.2 < 0.4 * global.2, "{dist:?}");
}

/// Newton implicit Euler: a body with no pins falls freely, undeformed, at
/// exactly g (v' = v + h g); released from a large deflection with no
/// damping and no gravity, the cantilever's total energy (kinetic + Green
/// strain) never grows and falls overall, while it swings through zero.
#[test]
fn the_nonlinear_implicit_euler_step_falls_freely_and_dissipates() {
    let lattice = Lattice::grid_box(DVec3::ZERO, DVec3::splat(0.1), [2, 1, 1]);
    let free = FemBody::uniform(lattice, Material::FLESH, FemSettings::default());
    let mut nl = NonlinearBody::from_fem(&free);
    nl.mass_damping = 0.0;
    let h = nl.time_step;
    for k in 1..=10 {
        let r = nl.step(&[]).expect("no bones");
        assert!(r.converged, "{r:?}");
        let expect_v = nl.gravity * (k as f64 * h);
        for v in &nl.v {
            assert!((*v - expect_v).length() < 1e-9, "{v} vs {expect_v}");
        }
    }
    assert!(nl.elastic_energy(&nl.q) < 1e-20);

    let g = 0.3 * L * BEAM.young * H * H / (1.5 * BEAM.density * L.powi(4));
    let mut nl = NonlinearBody::from_fem(&cantilever(1, g));
    solve(&mut nl);
    nl.gravity = DVec3::ZERO;
    nl.mass_damping = 0.0;
    nl.time_step = 2e-3;
    let total = |b: &NonlinearBody| {
        let (k, e, gr) = b.energy();
        k + e + gr
    };
    let e0 = total(&nl);
    let (mut last, mut worst_gain, mut newton) = (e0, 0.0f64, 0usize);
    let tip0 = nl.q.iter().map(|q| q.y).fold(0.0, f64::min);
    let mut crossed = false;
    for _ in 0..100 {
        let r = nl.step(&[]).expect("no bones");
        assert!(r.converged, "{r:?}");
        newton += r.iterations;
        let e = total(&nl);
        worst_gain = worst_gain.max((e - last) / e0);
        last = e;
        crossed |= nl.q.iter().map(|q| q.y).fold(f64::MIN, f64::max) > 0.2 * -tip0;
    }
    eprintln!(
        "nonlinear free swing from a {:.3} m sag: E₀ = {e0:.4} J, after 100 steps {last:.4} J, \
         largest one-step gain {worst_gain:.1e} E₀, {:.1} Newton iterations a step",
        -tip0,
        newton as f64 / 100.0
    );
    assert!(worst_gain <= 1e-9, "{worst_gain:e}");
    assert!(last < 0.99 * e0);
    assert!(crossed, "the beam swings up past its rest line");
}

/// Bad input is an error, not a panic.
#[test]
fn a_wrong_bone_count_is_an_error() {
    let body = limb([2, 2, 4], 0.05, Linearization::Global);
    let mut nl = NonlinearBody::from_fem(&body);
    assert!(nl.solve_static(&[DAffine3::IDENTITY], None).is_err());
    assert!(nl.step(&[]).is_err());
    let short = vec![DVec3::ZERO; 3];
    let two = [DAffine3::IDENTITY; 2];
    assert!(nl.solve_static(&two, Some(&short)).is_err());
}

fn sci(v: &[f64]) -> String {
    let parts: Vec<String> = v.iter().map(|x| format!("{x:.2e}")).collect();
    format!("[{}]", parts.join(", "))
}

/// The nonlinear implicit-Euler step is the reference for the linearized
/// step: over 20 steps of a cantilever falling from rest (no Rayleigh
/// stiffness damping, which has no nonlinear counterpart) the two
/// trajectories differ by the load squared, as the static solutions do.
#[test]
fn the_linearized_step_follows_the_nonlinear_step_up_to_the_load_squared() {
    let mut gaps = Vec::new();
    for g in [0.5, 1.0] {
        let mut lin = cantilever(1, g);
        lin.settings.stiffness_damping = 0.0;
        lin.settings.time_step = 5e-3;
        let mut nl = NonlinearBody::from_fem(&lin);
        for _ in 0..20 {
            assert!(lin.step(&[]).converged());
            let r = nl.step(&[]).expect("no bones");
            assert!(r.converged, "{r:?}");
        }
        let gap = distance(&nl.q, &lin.q);
        eprintln!(
            "dynamic, g = {g} m/s², 20 steps: linear ‖q‖ = {:.3e} m, nonlinear − linear {gap:.3e} m",
            norm(&lin.q)
        );
        gaps.push(gap);
    }
    let order = (gaps[1] / gaps[0]).log2();
    eprintln!("dynamic gap order {order:.3}");
    assert!((order - 2.0).abs() < 0.1, "{order}");
}

/// Position constraints (§4.4) in the nonlinear static solve: a point of the
/// forearm flesh between lattice vertices, held 2 cm above where it hangs
/// under gravity with the elbow at 0.8 rad, sits on its target to 1e-9 m.
#[test]
fn a_grabbed_point_holds_in_the_nonlinear_equilibrium() {
    use plasticine::fem::PositionConstraint;
    let mut body = limb([4, 4, 12], 0.05, Linearization::Global);
    body.settings.gravity = DVec3::new(0.0, -9.81, 0.0);
    let bones = limb_pose(&body, 0.25);
    let grab_rest = DVec3::new(0.07, 0.06, 0.47);
    let embedding = body.lattice.embed(grab_rest).expect("inside");
    let mut free = NonlinearBody::from_fem(&body);
    free.pose_rigidly(&bones, 0.1).expect("bones");
    let r = free.solve_static(&bones, None).expect("bones");
    assert!(r.converged, "{r:?}");
    let hang = free.lattice.displacement(&embedding, &free.q);
    let target = hang + DVec3::new(0.0, 0.02, 0.0);
    body.constraints
        .push(PositionConstraint { embedding, target });
    let mut held = NonlinearBody::from_fem(&body);
    held.q = free.q.clone();
    let r = held.solve_static(&bones, None).expect("bones");
    assert!(r.converged, "{r:?}");
    let got = held.lattice.displacement(&embedding, &held.q);
    eprintln!(
        "nonlinear grab: the point hangs {:.1} mm below rest, held 20 mm higher: off its target \
         by {:.1e} m after {} Newton iterations",
        -hang.y * 1e3,
        got.distance(target),
        r.iterations
    );
    assert!(got.distance(target) < 1e-9);
    assert!(distance(&held.q, &free.q) > 0.01);
}
