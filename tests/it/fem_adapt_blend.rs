//! Blended local linearization on the adaptive body (Capell §4.5 in the
//! hierarchical basis, Figure 5). Run with `--nocapture` to see the
//! measured numbers.
//!
//! The checks: the blend weights of the active functions are a partition
//! of unity, coarse and with every detail; a rigid turn of the whole
//! skeleton carries no elastic force with blending and a large one without;
//! bending the elbow 90° leaves the forearm flesh near its rigid placement
//! with blending, detail active, and far off it with the global model.

use glam::{DAffine3, DQuat, DVec3};
use plasticine::fem::{
    AdaptSettings, AdaptiveBody, Bone, FemBody, FemSettings, Lattice, Linearization, Material,
    Twist,
};

const BLENDED: Linearization = Linearization::BlendedLocal { blend_width: 0.1 };
const G: f64 = 9.81;

/// The limb of `tests/fem_physics.rs`: two bones along z (joint at z = 0.3)
/// in a 4 × 4 × 12-cell box of 5 cm cells, one level of detail.
fn limb(linearization: Linearization) -> AdaptiveBody {
    let c = 0.05;
    let mut lattice = Lattice::grid_box(DVec3::new(-0.1, -0.1, 0.0), DVec3::splat(c), [4, 4, 12]);
    let bones = vec![
        Bone {
            joint: 0,
            child: Some(1),
            head: DVec3::ZERO,
            tail: DVec3::new(0.0, 0.0, 0.3),
        },
        Bone {
            joint: 1,
            child: Some(2),
            head: DVec3::new(0.0, 0.0, 0.3),
            tail: DVec3::new(0.0, 0.0, 0.6),
        },
    ];
    lattice.bind_bones(bones, 0.5 * c);
    let settings = FemSettings {
        linearization,
        gravity: DVec3::ZERO,
        cg_tolerance: 1e-10,
        cg_max_iterations: 20_000,
        ..FemSettings::default()
    };
    let fixed = vec![None; lattice.vertex_count()];
    let adapt = AdaptSettings {
        levels: 1,
        refine_threshold: vec![1.0],
        coarsen_threshold: vec![0.5],
    };
    AdaptiveBody::uniform(lattice, Material::FLESH, fixed, settings, adapt).unwrap()
}

fn rotation_about(pivot: DVec3, theta: f64) -> DAffine3 {
    DAffine3::from_translation(pivot)
        * DAffine3::from_quat(DQuat::from_rotation_x(theta))
        * DAffine3::from_translation(-pivot)
}

#[test]
fn blend_weights_are_a_partition_of_unity_over_the_active_functions() {
    let mut body = limb(BLENDED);
    let coarse = body.partition_error();
    body.refine_all();
    let fine = body.partition_error();
    eprintln!(
        "partition of unity: {} regions, error {coarse:.1e} coarse, {fine:.1e} with all {} DOFs",
        body.region_count(),
        body.dof_count()
    );
    assert_eq!(body.region_count(), 2);
    assert!(coarse < 1e-12 && fine < 1e-12, "{coarse} {fine}");
}

/// The whole limb turned rigidly by 90° (field `T(x) − x`, details zero):
/// no elastic force with blending, several times the limb's weight without
/// (generalized forces on the DOFs, `Pᵀ f` of the `K_J` nodal forces).
#[test]
fn rigid_rotation_is_force_free_only_with_blending_with_detail_active() {
    let t = rotation_about(DVec3::new(0.0, 0.0, 0.3), std::f64::consts::FRAC_PI_2);
    let bones = [t, t];
    let mut norms = Vec::new();
    for lin in [BLENDED, Linearization::Global] {
        let mut body = limb(lin);
        body.refine_all();
        let ncoarse = body.hierarchy.coarse.vertex_count();
        for k in 0..body.dof_count() {
            let r = body.hierarchy.fine.rest[body.active_functions()[k]];
            body.q[k] = if k < ncoarse {
                t.transform_point3(r) - r
            } else {
                DVec3::ZERO
            };
        }
        let f = body.elastic_forces(&bones).unwrap();
        let norm = f.iter().map(|v| v.length_squared()).sum::<f64>().sqrt();
        let weight: f64 = body.system().gravity_weight.iter().sum::<f64>() * G;
        eprintln!(
            "rigid 90° rotation, {lin:?}, {} DOFs: ‖f_elastic‖ = {norm:.3e} N ({:.3e} × the \
             limb's weight {weight:.2} N)",
            body.dof_count(),
            norm / weight
        );
        norms.push(norm / weight);
    }
    assert!(norms[0] < 1e-9, "{norms:?}");
    assert!(norms[1] > 1.0, "{norms:?}");
}

/// Figure 5 with detail: the elbow bent 90°, static solve, every detail
/// active. Far from the joint (z > 0.45) the blended model keeps the forearm
/// flesh with its bone; the global one shrinks and shears it.
#[test]
fn bending_the_elbow_with_detail_distorts_the_global_model_not_the_blended_one() {
    let elbow = DVec3::new(0.0, 0.0, 0.3);
    let t1 = rotation_about(elbow, std::f64::consts::FRAC_PI_2);
    let bones = [DAffine3::IDENTITY, t1];
    let mut distortion = Vec::new();
    let mut strains = Vec::new();
    for lin in [BLENDED, Linearization::Global] {
        let mut body = limb(lin);
        body.refine_all();
        let report = body.solve_static(&bones, None).unwrap();
        assert!(report.converged, "{report:?}");
        let field = body.field();
        let fine = &body.hierarchy.fine;
        let mut worst: f64 = 0.0;
        for (&r, u) in fine.rest.iter().zip(&field) {
            if r.z > 0.45 {
                worst = worst.max((r + *u).distance(t1.transform_point3(r)));
            }
        }
        // The rotation-free strain ‖S − I‖ that adaptation reads (§4.7), in
        // the same outer forearm: the global model's rotation artefact is
        // strain there, and would draw detail.
        let dist = body.distortion();
        let outer: Vec<f64> = fine
            .cells
            .iter()
            .zip(&dist)
            .filter(|(cell, _)| cell.iter().all(|&a| fine.rest[a].z > 0.45))
            .map(|(_, d)| *d)
            .collect();
        let strain = outer.iter().copied().fold(0.0, f64::max);
        let inverted = outer.iter().filter(|d| d.is_infinite()).count();
        let mut sorted = outer.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        eprintln!(
            "elbow bent 90° with all detail ({} DOFs), {lin:?}: forearm flesh off its rigid \
             placement by up to {:.2} mm (coarse cell 50 mm), its strain ‖S − I‖ up to \
             {strain:.3} (median {median:.3}, {inverted} of {} cells inverted); {} CG iterations",
            body.dof_count(),
            worst * 1e3,
            outer.len(),
            report.iterations
        );
        distortion.push(worst);
        strains.push((strain, median));
    }
    assert!(distortion[1] > 0.1, "{distortion:?}");
    assert!(distortion[0] < 0.25 * distortion[1], "{distortion:?}");
    // Blended: no cell inverted, a small typical strain; global: cells
    // inverted or crushed, a typical strain many times larger.
    assert!(strains[0].0.is_finite(), "{strains:?}");
    assert!(strains[0].1 < 0.25 * strains[1].1, "{strains:?}");
}

/// The twist constraint (§4.6) in the hierarchical basis: the elbow bent
/// 90°, blended, static. A line of bone vertices lets the forearm flesh turn
/// about its bone; the penalty on `K_J` holds it there with every detail
/// active, and with no detail it is the control lattice's own twist (the
/// same integral, sampled on finer cells).
#[test]
fn the_twist_constraint_holds_the_flesh_to_its_bone_with_detail() {
    let elbow = DVec3::new(0.0, 0.0, 0.3);
    let t1 = rotation_about(elbow, std::f64::consts::FRAC_PI_2);
    let bones = [DAffine3::IDENTITY, t1];
    let twist = Twist {
        stiffness: 10.0 * Material::FLESH.young / (0.05f64 * 0.05),
        radius: 0.05,
    };
    let with = |twist: Option<Twist>| {
        let c = limb(BLENDED);
        let settings = FemSettings {
            twist,
            ..c.settings.clone()
        };
        let coarse = c.hierarchy.coarse.clone();
        AdaptiveBody::uniform(coarse, Material::FLESH, c.fixed, settings, c.adapt).unwrap()
    };
    // The outer forearm (every K_J vertex with z > 0.45) off its rigid
    // placement, with all detail active.
    let mut worst = Vec::new();
    for twist in [None, Some(twist)] {
        let mut body = with(twist);
        body.refine_all();
        let report = body.solve_static(&bones, None).unwrap();
        assert!(report.converged, "{report:?}");
        let fine = &body.hierarchy.fine;
        let w = fine
            .rest
            .iter()
            .zip(&body.field())
            .filter(|(r, _)| r.z > 0.45)
            .map(|(&r, &u)| (r + u).distance(t1.transform_point3(r)))
            .fold(0.0, f64::max);
        eprintln!(
            "elbow bent 90°, blended, all detail ({} DOFs), twist {}: forearm flesh off its \
             rigid placement by up to {:.2} mm",
            body.dof_count(),
            twist.is_some(),
            w * 1e3
        );
        worst.push(w);
    }
    assert!(worst[0] > 1e-2, "{worst:?}");
    assert!(worst[1] < 0.5 * worst[0], "{worst:?}");
    // No detail: the control lattice's FemBody with the same twist.
    let mut body = with(Some(twist));
    body.solve_static(&bones, None).unwrap();
    let coarse = body.hierarchy.coarse.clone();
    let settings = FemSettings {
        twist: Some(twist),
        ..body.settings.clone()
    };
    let mut plain = FemBody::uniform(coarse, Material::FLESH, settings);
    let report = plain.solve_static(&bones, None);
    assert!(report.converged(), "{report:?}");
    let field = body.field();
    let diff = body
        .hierarchy
        .fine_of_coarse
        .iter()
        .zip(&plain.q)
        .map(|(&x, q)| (field[x] - *q).length())
        .fold(0.0, f64::max);
    let scale = plain.q.iter().map(|q| q.length()).fold(0.0, f64::max);
    eprintln!("no detail vs FemBody, both with twist: {diff:.2e} m of {scale:.3} m");
    assert!(diff < 1e-2 * scale, "{diff} of {scale}");
}

/// Dynamics with blending, adaptation and a grab: the elbow bends 1.2 rad
/// over 30 steps while a point of the flesh across the joint (where the
/// regions overlap and the blend is corrected back onto the constraint) is
/// held where it started, then 60 steps more; detail comes in. Every step
/// converges, the bone vertices land on their targets and the grab holds.
#[test]
fn the_blended_step_keeps_bones_and_grab_while_adapting() {
    let elbow = DVec3::new(0.0, 0.0, 0.3);
    let mut body = limb(BLENDED);
    let grab_at = DVec3::new(0.07, 0.06, 0.31);
    body.grab(grab_at, DVec3::ZERO).unwrap();
    // Thresholds from the most distorted cell of the static bend to 1.2 rad.
    let mut probe = body.clone();
    probe
        .solve_static(&[DAffine3::IDENTITY, rotation_about(elbow, 1.2)], None)
        .unwrap();
    let d = probe.distortion().into_iter().fold(0.0, f64::max);
    body.adapt = AdaptSettings {
        levels: 1,
        refine_threshold: vec![0.5 * d],
        coarsen_threshold: vec![0.25 * d],
    };
    let (mut bone_off, mut grab_off): (f64, f64) = (0.0, 0.0);
    let mut peak = 0;
    for k in 1..=90 {
        let t1 = rotation_about(elbow, 1.2 * (k as f64 / 30.0).min(1.0));
        let bones = [DAffine3::IDENTITY, t1];
        let r = body.step(&bones, None).unwrap();
        assert!(r.converged, "step {k}: {r:?}");
        let h = &body.hierarchy;
        for a in 0..h.coarse.vertex_count() {
            if let Some(b) = h.coarse.bone_of_vertex[a] {
                let rest = h.coarse.rest[a];
                bone_off =
                    bone_off.max((body.q[a] - (bones[b].transform_point3(rest) - rest)).length());
            }
        }
        let c = body.constraints[0];
        grab_off = grab_off.max((body.displacement_at(&c.embedding) - c.target).length());
        body.adapt();
        peak = peak.max(body.active_per_level()[1]);
    }
    let details: Vec<DVec3> = body
        .active_functions()
        .iter()
        .filter(|&&a| body.hierarchy.level_of[a] == 1)
        .map(|&a| body.hierarchy.fine.rest[a])
        .collect();
    let (zmin, zmax) = details
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.z), hi.max(p.z))
        });
    eprintln!(
        "blended step, elbow to 1.2 rad in 30 steps, held 60, with a grab at {grab_at}: bone vertices off \
         by {bone_off:.1e} m, grab off by {grab_off:.1e} m; level-1 detail peak {peak}, at the end \
         {} functions within z ∈ [{zmin:.3}, {zmax:.3}] m of the 0.6 m limb",
        details.len()
    );
    assert_eq!(bone_off, 0.0);
    assert!(grab_off < 1e-12, "{grab_off}");
    assert!(peak > 0);
}
