//! Physics checks of the lattice FEM (Capell et al. 2002) against
//! analytic results. Run with `--nocapture` to see the measured numbers.
//!
//! The cantilever: a square beam of length L = 1 m and side H = 0.1 m
//! (slender, L/H = 10), E = 10 `MPa`, ν = 0 (no Poisson coupling, so the 3D
//! solution is the beam's up to shear deformation), ρ = 1000 kg/m³, clamped
//! at x = 0 by fixing the vertices of that face. Trilinear hexes lock in
//! bending (parasitic shear ∝ (cell length / beam height)²), so the
//! deflection and frequency converge as the cells shrink; Timoshenko shear
//! adds ≈ 0.6 (H/L)² ≈ 0.6 % to the Euler–Bernoulli deflection, which is the
//! floor the errors converge to.

use glam::{DAffine3, DQuat, DVec3};
use plasticine::character::{Character, Dof, Environment, Joint, Muscle, Skeleton};
use plasticine::fem::lowest_frequency;
use plasticine::fem::{
    Bone, FemBody, FemSettings, Lattice, LatticeSettings, Linearization, MassKind, Material,
    PositionConstraint, Twist, bone_transforms, muscle_centres,
};
use plasticine::shape::MuscleShape;

const L: f64 = 1.0;
const H: f64 = 0.1;
const BEAM: Material = Material {
    young: 1.0e7,
    poisson: 0.0,
    density: 1000.0,
};
const G: f64 = 9.81;

fn second_moment() -> f64 {
    H.powi(4) / 12.0
}

/// A beam with `n` cells through the thickness (cubic cells), clamped at x = 0.
fn cantilever(n: usize, settings: FemSettings) -> FemBody {
    let h = H / n as f64;
    let lattice = Lattice::grid_box(
        DVec3::new(0.0, -H / 2.0, -H / 2.0),
        DVec3::splat(h),
        [10 * n, n, n],
    );
    let mut body = FemBody::uniform(lattice, BEAM, settings);
    for a in 0..body.vertex_count() {
        if body.lattice.vertex_coords[a][0] == 0 {
            body.fixed[a] = Some(DVec3::ZERO);
        }
    }
    body
}

fn static_settings() -> FemSettings {
    FemSettings {
        gravity: DVec3::new(0.0, -G, 0.0),
        cg_tolerance: 1e-10,
        cg_max_iterations: 50_000,
        ..FemSettings::default()
    }
}

/// Mean y displacement of the tip face (x = L).
fn tip_deflection(body: &FemBody) -> f64 {
    let nx = body.lattice.dims[0];
    let tip: Vec<f64> = (0..body.vertex_count())
        .filter(|&a| body.lattice.vertex_coords[a][0] == nx)
        .map(|a| body.q[a].y)
        .collect();
    tip.iter().sum::<f64>() / tip.len() as f64
}

/// Static tip deflection under self-weight against Euler–Bernoulli
/// δ = q L⁴ / (8 E I), q = ρ g A, for 1, 2 and 4 cells through the
/// thickness: the error falls at every refinement and ends below 5 %.
#[test]
fn cantilever_static_deflection_converges_to_euler_bernoulli() {
    let q = BEAM.density * G * H * H;
    let exact = q * L.powi(4) / (8.0 * BEAM.young * second_moment());
    let mut errors = Vec::new();
    for n in [1, 2, 4] {
        let mut body = cantilever(n, static_settings());
        let report = body.solve_static(&[], None);
        assert!(report.converged(), "{report:?}");
        let delta = -tip_deflection(&body);
        let err = (delta - exact).abs() / exact;
        eprintln!(
            "cantilever static n={n}: {} vertices, δ = {delta:.6} m vs EB {exact:.6} m, \
             error {:.2} %, CG {} iterations",
            body.vertex_count(),
            err * 100.0,
            report.iterations()
        );
        errors.push(err);
    }
    assert!(errors[1] < errors[0] && errors[2] < errors[1], "{errors:?}");
    assert!(errors[2] < 0.05, "{errors:?}");
}

/// First bending frequency (inverse iteration on K x = ω² M x, lumped mass)
/// against ω₁ = 1.8751² √(EI / (ρ A L⁴)), converging with refinement.
#[test]
fn cantilever_first_frequency_converges_to_the_analytic_one() {
    let exact = 1.8751f64.powi(2)
        * (BEAM.young * second_moment() / (BEAM.density * H * H * L.powi(4))).sqrt();
    let mut errors = Vec::new();
    for n in [1, 2, 4] {
        let body = cantilever(n, static_settings());
        let (omega, _) = lowest_frequency(&body, 6);
        let err = (omega - exact).abs() / exact;
        eprintln!(
            "cantilever frequency n={n}: ω₁ = {omega:.4} rad/s vs analytic {exact:.4}, error {:.2} %",
            err * 100.0
        );
        errors.push(err);
    }
    assert!(errors[1] < errors[0] && errors[2] < errors[1], "{errors:?}");
    assert!(errors[2] < 0.05, "{errors:?}");
    // The consistent mass is the Rayleigh–Ritz (Galerkin) choice: its
    // frequency bounds the lumped one from above on the same lattice.
    let consistent = FemSettings {
        mass: MassKind::Consistent,
        ..static_settings()
    };
    let (lumped_omega, _) = lowest_frequency(&cantilever(2, static_settings()), 6);
    let (consistent_omega, _) = lowest_frequency(&cantilever(2, consistent), 6);
    eprintln!(
        "cantilever frequency n=2, consistent mass: ω₁ = {consistent_omega:.4} rad/s \
         (lumped {lumped_omega:.4}, analytic {exact:.4})"
    );
    assert!(consistent_omega > lumped_omega);
}

/// Free vibration with implicit Euler, no damping and no gravity, released
/// from the self-weight sag: the total energy never grows (the method is
/// dissipative), it falls overall, and the period of the tip's swing matches
/// the eigen frequency of the same lattice.
#[test]
fn implicit_euler_free_vibration_dissipates_and_swings_at_the_eigen_frequency() {
    let n = 2;
    let mut body = cantilever(n, static_settings());
    body.solve_static(&[], None);
    let (omega, _) = lowest_frequency(&body, 6);
    body.settings = FemSettings {
        time_step: 1e-3,
        mass_damping: 0.0,
        stiffness_damping: 0.0,
        gravity: DVec3::ZERO,
        cg_tolerance: 1e-12,
        cg_max_iterations: 10_000,
        ..FemSettings::default()
    };
    let h = body.settings.time_step;
    let e0 = body.energy().total();
    let mut last = e0;
    let mut worst_gain: f64 = 0.0;
    let mut crossings = Vec::new();
    let mut prev_tip = tip_deflection(&body);
    let steps = 1500;
    for k in 1..=steps {
        let r = body.step(&[]);
        assert!(r.converged(), "{r:?}");
        let e = body.energy().total();
        worst_gain = worst_gain.max((e - last) / e0);
        last = e;
        let tip = tip_deflection(&body);
        if prev_tip < 0.0 && tip >= 0.0 {
            // Linear interpolation of the upward zero crossing.
            crossings.push((k as f64 - tip / (tip - prev_tip)) * h);
        }
        prev_tip = tip;
    }
    let period = crossings[1] - crossings[0];
    let measured = 2.0 * std::f64::consts::PI / period;
    eprintln!(
        "free vibration n={n}: E₀ = {e0:.5} J, E_end = {last:.5} J ({:.2} % lost over {} s), \
         largest one-step gain {worst_gain:.2e}·E₀; ω from the swing {measured:.4} rad/s vs \
         eigen {omega:.4} ({:.2} %)",
        100.0 * (1.0 - last / e0),
        steps as f64 * h,
        100.0 * (measured - omega).abs() / omega
    );
    assert!(
        worst_gain <= 1e-9,
        "energy grew by {worst_gain:e} E₀ in a step"
    );
    assert!(last < 0.99 * e0);
    assert!((measured - omega).abs() / omega < 0.01);
}

/// A limb: two bones along z (upper arm and forearm, joint at z = 0.3) inside
/// a 4 × 4 × 12-cell box of 5 cm cells, the bones on the box's axis.
fn limb(linearization: Linearization) -> FemBody {
    let c = 0.05;
    let lattice = Lattice::grid_box(DVec3::new(-0.1, -0.1, 0.0), DVec3::splat(c), [4, 4, 12]);
    let mut lattice = lattice;
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
    FemBody::uniform(lattice, Material::FLESH, settings)
}

const BLENDED: Linearization = Linearization::BlendedLocal { blend_width: 0.1 };

/// Rotation by θ about the x axis through `pivot`.
fn rotation_about(pivot: DVec3, theta: f64) -> DAffine3 {
    DAffine3::from_translation(pivot)
        * DAffine3::from_quat(DQuat::from_rotation_x(theta))
        * DAffine3::from_translation(-pivot)
}

/// The whole limb turned rigidly by 90°: the blended local model feels no
/// elastic force (each region measures strain in its bone's frame); the
/// global linear model does (linear strain penalizes finite rotations), a
/// force many times the limb's weight.
#[test]
fn rigid_rotation_is_force_free_only_with_blended_local_linearization() {
    let t = rotation_about(DVec3::new(0.0, 0.0, 0.3), std::f64::consts::FRAC_PI_2);
    let bones = [t, t];
    let mut norms = Vec::new();
    for lin in [BLENDED, Linearization::Global] {
        let mut body = limb(lin);
        assert!(body.partition_error() < 1e-12);
        for a in 0..body.vertex_count() {
            let r = body.lattice.rest[a];
            body.q[a] = t.transform_point3(r) - r;
        }
        let f = body.elastic_forces(&bones);
        let norm = f.iter().map(|v| v.length_squared()).sum::<f64>().sqrt();
        let weight: f64 = body.global.lumped_mass.iter().sum::<f64>() * G;
        eprintln!(
            "rigid 90° rotation, {lin:?}: {} regions, ‖f_elastic‖ = {norm:.3e} N \
             ({:.3e} × the limb's weight {weight:.2} N)",
            body.regions.len(),
            norm / weight
        );
        norms.push(norm / weight);
    }
    assert!(norms[0] < 1e-9, "{norms:?}");
    assert!(norms[1] > 10.0, "{norms:?}");
}

/// Figure 5, measured: bend the elbow by 90° and let the flesh settle
/// (static solve, no gravity). Far from the joint (z > 0.45, the outer half
/// of the forearm) the blended local model keeps the forearm flesh with its
/// bone; the global linear model shrinks and shears it. A line of bone
/// vertices lets the flesh turn about the bone; the twist constraint (§4.6)
/// removes that freedom too.
#[test]
fn bending_the_elbow_distorts_the_global_linear_model_not_the_blended_one() {
    let elbow = DVec3::new(0.0, 0.0, 0.3);
    let t1 = rotation_about(elbow, std::f64::consts::FRAC_PI_2);
    let bones = [DAffine3::IDENTITY, t1];
    let twist = Twist {
        stiffness: 10.0 * Material::FLESH.young / (0.05f64 * 0.05),
        radius: 0.05,
    };
    let mut distortion = Vec::new();
    for (lin, twist) in [
        (BLENDED, Some(twist)),
        (BLENDED, None),
        (Linearization::Global, None),
    ] {
        let mut body = limb(lin);
        body.settings.twist = twist;
        let mut body = FemBody::new(body.lattice, body.materials, body.settings);
        let report = body.solve_static(&bones, None);
        assert!(report.converged(), "{report:?}");
        let mut worst: f64 = 0.0;
        for a in 0..body.vertex_count() {
            let r = body.lattice.rest[a];
            if r.z > 0.45 {
                let rigid = t1.transform_point3(r);
                worst = worst.max((r + body.q[a]).distance(rigid));
            }
        }
        eprintln!(
            "elbow bent 90°, {lin:?}, twist {}: forearm flesh off its rigid placement by up \
             to {:.2} mm (cell 50 mm)",
            twist.is_some(),
            worst * 1e3
        );
        distortion.push(worst);
    }
    assert!(distortion[2] > 0.1, "{distortion:?}");
    assert!(distortion[1] < 0.25 * distortion[2], "{distortion:?}");
    assert!(distortion[0] < 0.05 * distortion[2], "{distortion:?}");
}

/// An arm character: shoulder → elbow → wrist along x, a capsule muscle on
/// each segment.
fn arm() -> Character {
    let joint = |name: &str, parent, offset| Joint {
        name: name.into(),
        parent,
        offset,
        rest_rotation: glam::Quat::IDENTITY,
        dofs: [Dof::default(); 3],
        locked: false,
    };
    let muscle = |j: usize| Muscle {
        joint: j,
        offset: glam::Vec3::new(0.15, 0.0, 0.0),
        rotation: glam::Quat::from_rotation_y(std::f32::consts::FRAC_PI_2),
        shape: MuscleShape::superellipsoid(glam::Vec3::new(0.06, 0.06, 0.17), glam::Vec2::ONE),
        drivers: Vec::new(),
        color: None,
    };
    Character {
        name: "arm".into(),
        skeleton: Skeleton {
            joints: vec![
                joint("shoulder", None, glam::Vec3::ZERO),
                joint("elbow", Some(0), glam::Vec3::new(0.3, 0.0, 0.0)),
                joint("wrist", Some(1), glam::Vec3::new(0.3, 0.0, 0.0)),
            ],
        },
        muscles: vec![muscle(0), muscle(1)],
        skins: Vec::new(),
        environment: Environment::default(),
        key_postures: Vec::new(),
        flesh: Default::default(),
    }
}

/// The lattice built from the arm's muscles contains the muscles, binds
/// vertices to both bones, and while the elbow bends by 1.2 rad in half a
/// second the bone vertices sit exactly on their bones' rigid motion
/// (1e-12 m) and a grabbed point inside the forearm stays on its target to
/// the solver's tolerance, in both models; without the grab the point goes
/// elsewhere (so the constraint did the work). Coupling: the forearm
/// muscle's centre and a point on its surface, embedded at rest, follow the
/// flesh.
#[test]
fn bone_and_position_constraints_hold_while_the_elbow_bends() {
    let c = arm();
    let lattice = Lattice::from_character(&c, &LatticeSettings::default());
    let bound = |b: usize| {
        lattice
            .bone_of_vertex
            .iter()
            .filter(|x| **x == Some(b))
            .count()
    };
    eprintln!(
        "arm lattice: {} cells, {} vertices, bone vertices {} + {}",
        lattice.cell_count(),
        lattice.vertex_count(),
        bound(0),
        bound(1)
    );
    assert!(bound(0) >= 3 && bound(1) >= 3);
    // Every muscle surface point lies in an active cell.
    for m in &c.muscles {
        let mesh = m.shape.tessellate(12, 8);
        let to_world = glam::Affine3A::from_rotation_translation(m.rotation, m.offset);
        let world = if m.joint == 1 {
            glam::Affine3A::from_translation(glam::Vec3::new(0.3, 0.0, 0.0)) * to_world
        } else {
            to_world
        };
        for p in &mesh.positions {
            let w = world.transform_point3(*p).as_dvec3();
            assert!(
                lattice.embed(w).is_some(),
                "muscle point {w} outside the lattice"
            );
        }
    }
    let bones = lattice.bones.clone();
    let grab_rest = DVec3::new(0.45, 0.0, 0.05);
    let target = DVec3::new(0.0, 0.03, -0.01);
    for (lin, grab) in [
        (BLENDED, true),
        (Linearization::Global, true),
        (BLENDED, false),
    ] {
        let settings = FemSettings {
            linearization: lin,
            cg_tolerance: 1e-8,
            ..FemSettings::default()
        };
        let mut body = FemBody::uniform(lattice.clone(), Material::FLESH, settings);
        let embedding = body.lattice.embed(grab_rest).expect("inside");
        if grab {
            body.constraints
                .push(PositionConstraint { embedding, target });
        }
        let mut worst_bone: f64 = 0.0;
        let mut worst_grab: f64 = 0.0;
        let mut posture = c.skeleton.rest_posture();
        for k in 1..=45 {
            posture.angles[1].z = 1.2 * (k as f32 / 45.0);
            let transforms = bone_transforms(&c, &bones, &posture);
            let report = body.step(&transforms);
            assert!(report.converged(), "{report:?}");
            for a in 0..body.vertex_count() {
                if let Some(b) = body.lattice.bone_of_vertex[a] {
                    let r = body.lattice.rest[a];
                    let d = (r + body.q[a]).distance(transforms[b].transform_point3(r));
                    worst_bone = worst_bone.max(d);
                }
            }
            let d = body.lattice.displacement(&embedding, &body.q);
            worst_grab = worst_grab.max(d.distance(target));
        }
        eprintln!(
            "arm {lin:?}, grabbed {grab}: bone vertices off their bones by ≤ {worst_bone:.1e} m, \
             the point off the grab target by ≤ {worst_grab:.1e} m"
        );
        assert!(worst_bone <= 1e-12, "{worst_bone:e}");
        // Coupling: the muscle centres, embedded at rest, ride on the flesh.
        // The forearm's centre lies on its bone, a lattice edge between two
        // bound vertices, so it follows the skeleton exactly; a point on the
        // muscle's top surface rides on free flesh, within centimetres of
        // where the skeleton alone would carry it (sag and lag).
        let transforms = bone_transforms(&c, &bones, &posture);
        let posed = plasticine::kinematics::PosedBody::new(&c, &posture);
        let centre = body.lattice.embed(muscle_centres(&c)[1]).expect("inside");
        let centre_off = body
            .lattice
            .deform(&centre, &body.q)
            .distance(posed.muscles[1].center.as_dvec3());
        let top = DVec3::new(0.45, 0.055, 0.0);
        let top_off = body
            .lattice
            .deform(&body.lattice.embed(top).expect("inside"), &body.q)
            .distance(transforms[1].transform_point3(top));
        eprintln!(
            "   forearm muscle: centre {:.1e} m, top surface point {:.1} mm from the \
             kinematic placement",
            centre_off,
            top_off * 1e3
        );
        assert!(centre_off < 1e-6, "{centre_off:e}");
        if !grab {
            // (The grab holds a forearm point near its rest place while the
            // elbow turns 1.2 rad, so with it the flesh is pulled far off.)
            assert!(top_off > 1e-4 && top_off < 0.03, "{top_off:e}");
        }
        if grab {
            assert!(worst_grab <= 1e-9, "{worst_grab:e}");
        } else {
            // Left alone the point goes elsewhere: the constraint did work.
            assert!(worst_grab > 0.01, "{worst_grab:e}");
        }
    }
}

/// Per-cell materials: a cantilever whose inner (root) half is 1000× stiffer
/// bends only in its outer half, so by Euler–Bernoulli its tip sags
/// (L/2)⁴/L⁴ = 1/16 as much as the uniform beam (plus the small sag of the
/// stiff half). Compared at the same refinement, so locking cancels.
#[test]
fn per_cell_materials_change_the_response() {
    let n = 2;
    let mut soft = cantilever(n, static_settings());
    let lattice = soft.lattice.clone();
    let materials: Vec<Material> = lattice
        .cell_coords
        .iter()
        .map(|c| {
            if c[0] < 5 * n {
                Material {
                    young: BEAM.young * 1000.0,
                    ..BEAM
                }
            } else {
                BEAM
            }
        })
        .collect();
    let mut stiff = FemBody::new(lattice, materials, static_settings());
    stiff.fixed = soft.fixed.clone();
    assert!(soft.solve_static(&[], None).converged());
    assert!(stiff.solve_static(&[], None).converged());
    let (ds, dt) = (-tip_deflection(&soft), -tip_deflection(&stiff));
    let ratio = dt / ds;
    eprintln!(
        "per-cell material: tip sag {ds:.5} m uniform, {dt:.5} m with a rigid root half: \
         ratio {ratio:.4} vs Euler–Bernoulli 1/16 = 0.0625"
    );
    assert!((ratio - 0.0625).abs() < 0.15 * 0.0625, "{ratio}");
}

/// Capell's setup at our scale: a lattice of about 180 vertices (the
/// kangaroo's 177) built automatically from the penguin sample's muscles,
/// blended local linearization over its bones with the twist constraint,
/// driven through the sample's key postures for two seconds at 90 Hz. The
/// bones hold exactly, every step's CG converges, and the flesh stays near
/// its bones (no blow-up): no lattice vertex strays more than 0.1 m from its
/// linear-blend-skinned placement (sag and follow-through are centimetres).
#[test]
fn a_kangaroo_sized_lattice_from_a_sample_follows_its_key_postures() {
    let c = plasticine::samples::bare("penguin").expect("sample");
    let lattice = Lattice::from_character_with_vertices(&c, 180, 0.5);
    let bones = lattice.bones.clone();
    let bound: Vec<usize> = (0..bones.len())
        .map(|b| {
            lattice
                .bone_of_vertex
                .iter()
                .filter(|x| **x == Some(b))
                .count()
        })
        .collect();
    eprintln!(
        "penguin lattice: {} cells of {:.3} m, {} vertices, {} bones, bound vertices per bone {bound:?}",
        lattice.cell_count(),
        lattice.cell_size.x,
        lattice.vertex_count(),
        bones.len()
    );
    assert!(lattice.vertex_count().abs_diff(180) <= 25);
    assert!(bound.iter().all(|&n| n > 0));
    let h = lattice.cell_size.x;
    let settings = FemSettings {
        linearization: Linearization::BlendedLocal { blend_width: h },
        twist: Some(Twist {
            stiffness: 10.0 * Material::FLESH.young / (h * h),
            radius: h,
        }),
        ..FemSettings::default()
    };
    let mut body = FemBody::uniform(lattice, Material::FLESH, settings);
    eprintln!(
        "penguin FEM: {} regions, precompute {:.2} ms",
        body.regions.len(),
        body.precompute_seconds * 1e3
    );
    let (mut iterations, mut worst_bone, mut worst_far) = (0usize, 0.0f64, 0.0f64);
    let steps = 180;
    for k in 1..=steps {
        let t = k as f64 * body.settings.time_step;
        let posture = plasticine::anim::sample_posture(&c.key_postures, t as f32).expect("keys");
        let transforms = bone_transforms(&c, &bones, &posture);
        let r = body.step(&transforms);
        assert!(r.converged(), "step {k}: {r:?}");
        iterations += r.iterations();
        for a in 0..body.vertex_count() {
            let rest = body.lattice.rest[a];
            let p = rest + body.q[a];
            assert!(p.is_finite());
            if let Some(b) = body.lattice.bone_of_vertex[a] {
                worst_bone = worst_bone.max(p.distance(transforms[b].transform_point3(rest)));
            }
        }
        // Linear blend skinning with the region weights: where the flesh
        // would be with no dynamics and no elasticity.
        let mut skinned = vec![DVec3::ZERO; body.vertex_count()];
        for region in &body.regions {
            let t = transforms[region.bone.expect("bone region")];
            for (l, &a) in region.vertices.iter().enumerate() {
                skinned[a] += t.transform_point3(body.lattice.rest[a]) * region.weights[l];
            }
        }
        for (a, s) in skinned.iter().enumerate() {
            let p = body.lattice.rest[a] + body.q[a];
            worst_far = worst_far.max(p.distance(*s));
        }
    }
    eprintln!(
        "penguin FEM over {steps} steps: {:.1} CG iterations per step (all regions), bone \
         vertices off by ≤ {worst_bone:.1e} m, flesh ≤ {:.1} mm from its linear-blend-skinned \
         placement (the kinematic answer)",
        iterations as f64 / steps as f64,
        worst_far * 1e3
    );
    assert!(worst_bone <= 1e-12);
    assert!(worst_far < 0.1);
}

/// Position constraints in the static solve (§4.4 in equilibrium, the
/// "grab and hold" of a controller): a point of the forearm flesh between
/// lattice vertices is lifted 2 cm against gravity with the elbow bent 45°;
/// the trilinear combination meets the target to 1e-9 m in both models
/// (the soft flesh, pinned only along the bone axis, sags 12–14 cm here).
#[test]
fn a_grabbed_point_is_held_in_static_equilibrium() {
    let elbow = DVec3::new(0.0, 0.0, 0.3);
    let t1 = rotation_about(elbow, std::f64::consts::FRAC_PI_4);
    let bones = [DAffine3::IDENTITY, t1];
    let grab_rest = DVec3::new(0.07, 0.06, 0.47);
    for lin in [BLENDED, Linearization::Global] {
        let mut body = limb(lin);
        body.settings.gravity = DVec3::new(0.0, -G, 0.0);
        let free = {
            let mut b = body.clone();
            assert!(b.solve_static(&bones, None).converged());
            b
        };
        let embedding = body.lattice.embed(grab_rest).expect("inside");
        let free_disp = free.lattice.displacement(&embedding, &free.q);
        let target = free_disp + DVec3::new(0.0, 0.02, 0.0);
        body.constraints
            .push(PositionConstraint { embedding, target });
        let report = body.solve_static(&bones, None);
        assert!(report.converged(), "{report:?}");
        let got = body.lattice.displacement(&embedding, &body.q);
        eprintln!(
            "static grab, {lin:?}: point off its target by {:.1e} m (lifted 20 mm from {:.1} mm sag)",
            got.distance(target),
            -free_disp.y * 1e3
        );
        assert!(got.distance(target) < 1e-9);
    }
}
