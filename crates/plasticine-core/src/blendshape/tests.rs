//! The physics of the blend: equilibrium, exact targets, Fig. 1's bend that
//! does not shrink, rigid motions recovered, continuity in the weights, and
//! every bad rig refused by name.

use super::*;
use crate::shape::BarrDeformation;
use crate::shape::MuscleShape;
use glam::{DQuat, DVec3, Vec2, Vec3};

/// Ring count of the test bar (stacks − 1) and vertices per ring.
const STACKS: usize = 24;
const SLICES: usize = 12;
const LENGTH: f32 = 0.6;

/// A bar along z (an elongated superellipsoid) bent by `angle` radians
/// over its length (Barr's bend, the axis along arc length).
fn bar(angle: f32) -> (Vec<Vec3>, Vec<[u32; 3]>) {
    let shape =
        MuscleShape::superellipsoid(Vec3::new(0.06, 0.06, LENGTH / 2.0), Vec2::new(0.6, 1.0))
            .with_deformation(BarrDeformation {
                bend: angle / LENGTH,
                ..Default::default()
            });
    let mesh = shape.tessellate(SLICES, STACKS);
    (mesh.positions, mesh.indices)
}

fn rig(targets: &[f32]) -> BlendRig {
    let (base, triangles) = bar(0.0);
    BlendRig {
        name: "bar".into(),
        base,
        triangles,
        targets: targets
            .iter()
            .map(|&a| BlendTarget {
                name: format!("bend {a}"),
                positions: bar(a).0,
            })
            .collect(),
        boundary: Boundary::Anchor,
        interior: true,
        constants: SpringConstants::default(),
    }
}

/// The straight bar with one target, `name` at `positions`.
fn straight_bar_with(name: &str, positions: Vec<Vec3>) -> BlendRig {
    let (base, triangles) = bar(0.0);
    BlendRig {
        name: "bar".into(),
        base,
        triangles,
        targets: vec![BlendTarget {
            name: name.into(),
            positions,
        }],
        boundary: Boundary::Anchor,
        interior: true,
        constants: SpringConstants::default(),
    }
}

/// Length of the polyline through the rings' centroids.
fn centre_line(x: &[DVec3]) -> f64 {
    let centres: Vec<DVec3> = (0..STACKS - 1)
        .map(|r| (0..SLICES).map(|j| x[1 + r * SLICES + j]).sum::<DVec3>() / SLICES as f64)
        .collect();
    centres.windows(2).map(|w| w[0].distance(w[1])).sum()
}

/// Largest |‖d‖ − r̄| / r̄ over the springs of the surface.
fn edge_error(model: &BlendModel, x: &[DVec3], rest: &[f64]) -> f64 {
    model
        .springs()
        .ends
        .iter()
        .zip(&model.springs().class)
        .zip(rest)
        .filter(|((_, class), _)| **class == SpringClass::Structure)
        .map(|((&[a, b], _), r)| (x[a as usize].distance(x[b as usize]) - r).abs() / r)
        .fold(0.0, f64::max)
}

#[test]
fn a_blend_is_an_equilibrium_at_any_simplex_weights() {
    let rig = rig(&[1.2, -0.8]);
    let mut model = BlendModel::new(&rig).expect("rig builds");
    for w in [[0.2, 0.5, 0.3], [0.6, 0.1, 0.3], [0.0, 0.0, 1.0]] {
        let blend = model.solve(&w, &rig).expect("solves");
        // The forces, recomputed independently of the solver's report.
        let (rest, k) = model.blended_springs(&w);
        let system = SpringSystem::new(
            model.vertices(),
            model.springs().clone(),
            vec![false; model.vertices()],
        );
        let mut f = vec![DVec3::ZERO; model.vertices()];
        // The solve's frame: undo nothing; forces are invariant to the
        // anchor's rigid motion.
        system.forces(&blend.positions, &rest, &k, &mut f);
        let scale = rest.iter().zip(&k).map(|(r, k)| r * k).sum::<f64>() / rest.len() as f64;
        let worst = f[..model.surface_vertices()]
            .iter()
            .map(|v| v.abs().max_element())
            .fold(0.0, f64::max);
        assert!(
            worst <= 1e-8 * scale,
            "weights {w:?}: force {worst:e} of scale {scale:e}"
        );
        assert!(blend.report.converged);
        // A mix needs Newton; weight one on a shape starts at it.
        let mixed = w.iter().filter(|&&x| x != 0.0).count() > 1;
        assert_eq!(blend.report.iterations > 0, mixed, "{w:?}");
    }
}

#[test]
fn the_jacobian_is_the_derivative_of_the_forces() {
    // A small random system, springs stretched and compressed.
    let rig = rig(&[1.0]);
    let model = BlendModel::new(&rig).expect("rig builds");
    let (rest, k) = model.blended_springs(&[0.5, 0.5]);
    let n = model.vertices();
    let x: Vec<DVec3> = (0..n)
        .map(|i| {
            model.shape(1)[i] + DVec3::new((i as f64 * 0.37).sin(), (i as f64).cos(), 0.3) * 0.004
        })
        .collect();
    let v: Vec<DVec3> = (0..n)
        .map(|i| DVec3::new((i as f64 * 1.3).cos(), (i as f64 * 0.7).sin(), 1.0))
        .collect();
    let system = SpringSystem::new(n, model.springs().clone(), vec![false; n]);
    let eps = 1e-6;
    let shifted = |s: f64| -> Vec<DVec3> {
        let y: Vec<DVec3> = x.iter().zip(&v).map(|(p, d)| *p + *d * s).collect();
        let mut f = vec![DVec3::ZERO; n];
        system.forces(&y, &rest, &k, &mut f);
        f
    };
    let (fp, fm) = (shifted(eps), shifted(-eps));
    let jv = system.hessian_times(&x, &rest, &k, &v);
    let scale = jv.iter().map(|a| a.length()).fold(0.0, f64::max);
    for i in 0..n {
        let fd = (fp[i] - fm[i]) / (2.0 * eps);
        assert!(
            (fd - jv[i]).length() <= 1e-6 * scale,
            "vertex {i}: {fd} vs {}",
            jv[i]
        );
    }
}

#[test]
fn weight_one_reproduces_each_target() {
    let centred = rig(&[1.5, -1.0]);
    // Off the origin too: the anchor's motions turn about its centroid.
    let mut moved = centred.clone();
    let away = Vec3::new(0.3, 1.1, -0.2);
    for p in moved.base.iter_mut().chain(
        moved
            .targets
            .iter_mut()
            .flat_map(|t| t.positions.iter_mut()),
    ) {
        *p += away;
    }
    for rig in [centred, moved] {
        reproduces_each_target(&rig);
    }
}

fn reproduces_each_target(rig: &BlendRig) {
    let mut model = BlendModel::new(rig).expect("rig builds");
    // The solve's tolerance is relative to the size, its rounding to the
    // coordinates' magnitude.
    let far = rig
        .base
        .iter()
        .map(|p| f64::from(p.length()))
        .fold(0.0, f64::max);
    let scale = rig.diagonal() + far;
    for t in 0..3 {
        let mut w = [0.0; 3];
        w[t] = 1.0;
        model.reset();
        let blend = model.solve(&w, rig).expect("solves");
        assert_eq!(
            blend.report.iterations, 0,
            "weight one starts at the shape, which is the equilibrium"
        );
        let shape = &rig.shapes()[t];
        let worst = shape
            .iter()
            .zip(&blend.positions)
            .map(|(a, b)| a.distance(*b))
            .fold(0.0, f64::max);
        assert!(
            worst <= 1e-9 * scale,
            "{}: {worst:e} m off",
            rig.shape_name(t)
        );
    }
}

#[test]
fn a_bend_blended_physically_keeps_its_length_where_linear_shrinks() {
    for angle in [std::f32::consts::FRAC_PI_2, std::f32::consts::PI] {
        let rig = rig(&[angle]);
        let mut model = BlendModel::new(&rig).expect("rig builds");
        let w = [0.5, 0.5];
        let physical = model.solve(&w, &rig).expect("solves").positions;
        let linear = model.linear(&w);
        let straight = centre_line(model.shape(0));
        let (l_phys, l_lin) = (centre_line(&physical), centre_line(&linear));
        assert!(
            (l_phys - straight).abs() <= 0.01 * straight,
            "{angle} rad: physical centre line {l_phys} of {straight}"
        );
        assert!(
            l_lin < 0.99 * straight,
            "{angle} rad: linear {l_lin} does not shrink"
        );
        let (rest, _) = model.blended_springs(&w);
        let (e_phys, e_lin) = (
            edge_error(&model, &physical, &rest),
            edge_error(&model, &linear, &rest),
        );
        assert!(
            e_phys <= 0.1 * e_lin,
            "{angle} rad: edge error {e_phys} vs linear {e_lin}"
        );
    }
}

#[test]
fn a_rigidly_moved_target_is_recovered_exactly() {
    let base = bar(0.0).0;
    let motion = RigidMotion {
        centre: DVec3::ZERO,
        rotation: DQuat::from_axis_angle(DVec3::new(1.0, 2.0, 0.5).normalize(), 1.1),
        translation: DVec3::new(0.3, -0.1, 0.2),
    };
    let moved: Vec<Vec3> = base
        .iter()
        .map(|p| motion.apply(p.as_dvec3()).as_vec3())
        .collect();
    let rig = straight_bar_with("moved", moved.clone());
    let mut model = BlendModel::new(&rig).expect("rig builds");
    let diagonal = rig.diagonal();
    for alpha in [0.0, 0.3, 1.0] {
        let blend = model.solve(&[1.0 - alpha, alpha], &rig).expect("solves");
        // The shape keeps its form: every edge has its rest length, and the
        // whole is the base moved by the interpolated motion.
        let fit = RigidMotion::fit(
            &base.iter().map(|p| p.as_dvec3()).collect::<Vec<_>>(),
            &blend.positions[..base.len()],
        );
        let worst = base
            .iter()
            .zip(&blend.positions)
            .map(|(p, q)| fit.apply(p.as_dvec3()).distance(*q))
            .fold(0.0, f64::max);
        assert!(
            worst <= 1e-6 * diagonal,
            "α = {alpha}: {worst:e} m from rigid"
        );
        let angle = fit.rotation.angle_between(DQuat::IDENTITY);
        assert!(
            (angle - 1.1 * alpha).abs() <= 1e-5,
            "α = {alpha}: turned {angle} rad"
        );
    }
}

#[test]
fn a_three_target_blend_is_continuous_in_the_weights() {
    let rig = rig(&[1.0, -1.0, 0.0]);
    let mut model = BlendModel::new(&rig).expect("rig builds");
    let diagonal = rig.diagonal();
    let mut previous: Option<Vec<DVec3>> = None;
    let steps = 20;
    for s in 0..=steps {
        let t = s as f64 / steps as f64;
        let w = [
            0.4 * (1.0 - t),
            0.3 + 0.4 * t,
            0.3 - 0.1 * t,
            0.3 * t - 0.3 * t + 0.0,
        ];
        let w = [w[0], w[1], w[2], 1.0 - w[0] - w[1] - w[2]];
        let blend = model.solve(&w, &rig).expect("solves").positions;
        if let Some(p) = &previous {
            let jump = p
                .iter()
                .zip(&blend)
                .map(|(a, b)| a.distance(*b))
                .fold(0.0, f64::max);
            // A twentieth of the weight moves the shape a small fraction of
            // its size, never a jump to another branch.
            assert!(jump <= 0.05 * diagonal, "step {s}: jumped {jump} m");
        }
        previous = Some(blend);
    }
}

#[test]
fn bad_rigs_are_refused_by_name() {
    let good = rig(&[1.0]);
    let mut r = good.clone();
    r.targets[0].positions.pop();
    assert!(matches!(
        BlendModel::new(&r),
        Err(BlendError::Rig(RigError::VertexCount { .. }))
    ));
    let mut r = good.clone();
    r.targets[0].positions[7].x = f32::NAN;
    let err = BlendModel::new(&r).unwrap_err().to_string();
    assert!(err.contains("bend 1") && err.contains("vertex 7"), "{err}");
    let mut r = good.clone();
    let [a, b, _] = r.triangles[30];
    r.targets[0].positions[b as usize] = r.targets[0].positions[a as usize];
    assert!(matches!(
        BlendModel::new(&r),
        Err(BlendError::Rig(RigError::DegenerateEdge { .. }))
    ));
    let mut r = good.clone();
    r.base.push(Vec3::ZERO);
    r.targets[0].positions.push(Vec3::ONE);
    assert!(matches!(
        BlendModel::new(&r),
        Err(BlendError::Rig(RigError::IsolatedVertex { vertex })) if vertex == good.base.len()
    ));
    let mut r = good.clone();
    r.boundary = Boundary::Static { tolerance: 0.0 };
    for p in &mut r.targets[0].positions {
        p.x += 0.01;
    }
    assert!(matches!(
        BlendModel::new(&r),
        Err(BlendError::Rig(RigError::NoBoundary(_)))
    ));
    let mut r = good.clone();
    r.triangles.pop();
    assert!(matches!(
        BlendModel::new(&r),
        Err(BlendError::Rig(RigError::OpenMesh))
    ));
    let mut model = BlendModel::new(&good).expect("good rig");
    for w in [
        vec![0.5, 0.6],
        vec![1.2, -0.2],
        vec![1.0],
        vec![f64::NAN, 1.0],
    ] {
        assert!(
            matches!(
                model.solve(&w, &good),
                Err(BlendError::Rig(RigError::Weights { .. }))
            ),
            "{w:?}"
        );
    }
}

#[test]
fn static_vertices_hold_the_bend_where_it_does_not_move() {
    // Barr's bend keeps the ring at z = 0 in place: those vertices are the
    // boundary, and the blend still keeps its length.
    let mut rig = rig(&[std::f32::consts::FRAC_PI_2]);
    rig.boundary = Boundary::Static { tolerance: 1e-6 };
    let fixed = rig.static_vertices();
    assert!(fixed.len() >= SLICES, "{} static vertices", fixed.len());
    let mut model = BlendModel::new(&rig).expect("rig builds");
    let blend = model.solve(&[0.5, 0.5], &rig).expect("solves").positions;
    for &v in &fixed {
        assert_eq!(blend[v as usize], rig.base[v as usize].as_dvec3());
    }
    let straight = centre_line(model.shape(0));
    assert!((centre_line(&blend) - straight).abs() <= 0.01 * straight);
}

#[test]
fn an_obstacle_dents_the_surface_holds_no_internal_vertex_and_lets_go() {
    // Fig. 2: a rod pushed into the side of the blend.
    let rig = rig(&[std::f32::consts::FRAC_PI_2]);
    let mut model = BlendModel::new(&rig).expect("rig builds");
    let w = [0.5, 0.5];
    let free = model.solve(&w, &rig).expect("solves").positions;
    // Where the blend's surface is at z ≈ 0.15 on its +x side, a capsule
    // across it, 2 cm deep.
    let side = (0..model.surface_vertices())
        .max_by(|&a, &b| {
            let score = |p: DVec3| p.x - 4.0 * (p.z - 0.15).abs();
            score(free[a]).total_cmp(&score(free[b]))
        })
        .expect("vertices");
    let radius = 0.03;
    let centre = free[side] + DVec3::new(radius - 0.02, 0.0, 0.0);
    let rod = Obstacle::Capsule {
        a: centre - DVec3::Y * 0.2,
        b: centre + DVec3::Y * 0.2,
        radius,
    };
    let pushed = model
        .solve_with(&w, &rig, std::slice::from_ref(&rod))
        .expect("solves");
    assert!(!pushed.contacts.is_empty() && pushed.rounds > 1);
    assert!(
        pushed
            .contacts
            .iter()
            .all(|c| (c.vertex as usize) < model.surface_vertices()),
        "an internal vertex was held"
    );
    let mut deepest = 0.0f64;
    for p in &pushed.positions[..model.surface_vertices()] {
        if let Some((q, _)) = rod.penetration(*p) {
            deepest = deepest.max(q.distance(*p));
        }
    }
    assert!(
        deepest <= 1e-6,
        "a surface vertex is {deepest:e} m inside the rod"
    );
    // The surface gave way by about the push's depth (the anchor holds the
    // middle; the rest of the bar may turn about it).
    let moved = pushed.positions[side].distance(free[side]);
    assert!(moved >= 0.015, "the pushed vertex moved {moved} m");
    // The rod leaves: every contact lets go and the blend comes back.
    let away = Obstacle::Sphere {
        centre: DVec3::new(5.0, 0.0, 0.0),
        radius: 0.1,
    };
    let back = model.solve_with(&w, &rig, &[away]).expect("solves");
    assert!(back.contacts.is_empty());
    let worst = back
        .positions
        .iter()
        .zip(&free)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f64::max);
    assert!(
        worst <= 1e-8 * rig.diagonal(),
        "{worst:e} m from the free blend"
    );
}

#[test]
fn the_exact_jacobian_with_lu_reaches_the_same_equilibrium() {
    let rig = rig(&[std::f32::consts::FRAC_PI_2]);
    let mut projected = BlendModel::new(&rig).expect("rig builds");
    let mut exact = BlendModel::new(&rig).expect("rig builds");
    exact.settings.hessian = Hessian::Exact;
    let w = [0.4, 0.6];
    let a = projected.solve(&w, &rig).expect("solves");
    let b = exact.solve(&w, &rig).expect("solves with LU");
    assert!(b.report.converged && b.report.factorizations == 0);
    let worst = a
        .positions
        .iter()
        .zip(&b.positions)
        .map(|(p, q)| p.distance(*q))
        .fold(0.0, f64::max);
    assert!(worst <= 1e-8 * rig.diagonal(), "{worst:e} m apart");
}

#[test]
fn a_rig_file_round_trips_and_a_bad_one_names_its_field() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bar.ron");
    let rig = rig(&[1.0, -0.5]);
    save_rig(&path, &rig).expect("saves");
    assert_eq!(load_rig(&path).expect("loads"), rig);
    // A target vertex made infinite in the file: refused with its path.
    let mut bad_file = rig.clone();
    bad_file.targets[1].positions[3] = Vec3::new(0.0, f32::INFINITY, 0.0);
    save_rig(&path, &bad_file).expect("saves");
    let err = load_rig(&path).expect_err("refused").to_string();
    assert!(err.contains("targets[1].positions[3]"), "{err}");
}

/// A sculpted target taken in by `reshape_target` (its inside solved again
/// from its last shape, nothing rebuilt) gives the model a rebuild from
/// scratch gives: the same shape to the Newton tolerance, the same blends,
/// and weight one reproduces the sculpted surface. A bad sculpt (a
/// collapsed edge) is refused and leaves the model as it was.
#[test]
fn a_sculpted_target_is_taken_in_without_a_rebuild() {
    let before = rig(&[1.0]);
    let mut model = BlendModel::new(&before).expect("rig builds");
    let mut after = before.clone();
    // A grab on the bend's outside: the vertices near one end pulled out.
    let centre = after.targets[0].positions[STACKS * SLICES / 3];
    for p in &mut after.targets[0].positions {
        let d2 = p.distance_squared(centre) / (0.1 * 0.1);
        *p += Vec3::new(0.02, 0.01, 0.0) * (-2.0 * d2).exp();
    }
    model.reshape_target(&after, 0).expect("taken in");
    let mut fresh = BlendModel::new(&after).expect("rebuilt");
    let diagonal = after.diagonal();
    let off = |a: &[DVec3], b: &[DVec3]| {
        a.iter()
            .zip(b)
            .map(|(a, b)| a.distance(*b))
            .fold(0.0, f64::max)
    };
    assert!(
        off(model.shape(1), fresh.shape(1)) <= 1e-6 * diagonal,
        "the shape, inside included: {:e}",
        off(model.shape(1), fresh.shape(1))
    );
    for w in [[0.0, 1.0], [0.5, 0.5], [0.8, 0.2]] {
        model.reset();
        let a = model.solve(&w, &after).expect("solves").positions;
        let b = fresh.solve(&w, &after).expect("solves").positions;
        assert!(off(&a, &b) <= 1e-6 * diagonal, "{w:?}: {:e}", off(&a, &b));
    }
    model.reset();
    let one = model.solve(&[0.0, 1.0], &after).expect("solves").positions;
    let sculpted: Vec<DVec3> = after.targets[0]
        .positions
        .iter()
        .map(|p| p.as_dvec3())
        .collect();
    assert!(off(&one[..sculpted.len()], &sculpted) <= 1e-9 * diagonal);

    let mut collapsed = after.clone();
    collapsed.targets[0].positions[1] = collapsed.targets[0].positions[2];
    let kept = model.shape(1).to_vec();
    let e = model.reshape_target(&collapsed, 0).unwrap_err();
    assert!(e.to_string().contains("edge"), "{e}");
    assert_eq!(model.shape(1), &kept[..], "unchanged");
}

/// A sphere muscle as the character's posed body gives it.
fn sphere_muscle(centre: Vec3, radius: f32) -> crate::kinematics::PosedMuscle {
    let to_world = glam::Affine3A::from_translation(centre);
    crate::kinematics::PosedMuscle {
        to_world,
        to_local: to_world.inverse(),
        shape: MuscleShape::sphere(radius),
        center: centre,
        radius,
        local_box: None,
    }
}

/// Muscles are obstacles of the blend (§4, with the character's muscles):
/// a target that thins the bar to 0.7 of its radius would cut into a muscle
/// in its middle; with the muscle as an obstacle no surface vertex ends
/// inside it (beyond its 1e-5 skin) and none inside is held, while a
/// muscle that the base already cuts into (poking out of its side) leaves
/// the base's own vertices where they are: the base alone is the base.
#[test]
fn muscles_push_the_blend_but_not_where_the_base_lies_inside_them() {
    let base = bar(0.0).0;
    let thin: Vec<Vec3> = base
        .iter()
        .map(|p| Vec3::new(0.7 * p.x, 0.7 * p.y, p.z))
        .collect();
    let rig = straight_bar_with("thin", thin);
    let base64: Vec<DVec3> = base.iter().map(|p| p.as_dvec3()).collect();
    let inner = Obstacle::Muscle(Box::new(MuscleObstacle::new(
        &sphere_muscle(Vec3::ZERO, 0.054),
        &base64,
    )));
    // On the bar's side, 0.1 m along: the base's vertices there are inside.
    let poking = Obstacle::Muscle(Box::new(MuscleObstacle::new(
        &sphere_muscle(Vec3::new(0.06, 0.0, 0.1), 0.03),
        &base64,
    )));
    let surface = BlendModel::new(&rig)
        .expect("rig builds")
        .surface_vertices();
    let deepest = |x: &[DVec3], o: &Obstacle| {
        x[..surface]
            .iter()
            .filter_map(|p| o.penetration(*p).map(|(q, _)| q.distance(*p)))
            .fold(0.0f64, f64::max)
    };
    let w = [0.2, 0.8];
    let mut free = BlendModel::new(&rig).expect("rig builds");
    let free = free.solve(&w, &rig).expect("solves");
    assert!(
        deepest(&free.positions, &inner) > 0.005,
        "the thin blend should cut into the muscle unpushed"
    );
    let mut model = BlendModel::new(&rig).expect("rig builds");
    let pushed = model
        .solve_with(&w, &rig, &[inner.clone(), poking.clone()])
        .expect("solves");
    assert!(!pushed.contacts.is_empty());
    assert!(
        pushed
            .contacts
            .iter()
            .all(|c| (c.vertex as usize) < surface),
        "an internal vertex was held"
    );
    let depth = deepest(&pushed.positions, &inner);
    assert!(
        depth <= 1e-5 * 0.054 + 1e-9,
        "{depth:e} m inside the muscle"
    );

    let inside_at_rest = base64[..surface]
        .iter()
        .filter(|p| poking.penetration(**p).is_some())
        .count();
    assert!(inside_at_rest > 0, "the poking muscle should cut the base");
    let mut model = BlendModel::new(&rig).expect("rig builds");
    let alone = model
        .solve_with(&[1.0, 0.0], &rig, &[inner, poking])
        .expect("solves");
    assert!(alone.contacts.is_empty(), "{:?}", alone.contacts);
    let worst = alone
        .positions
        .iter()
        .zip(&base64)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f64::max);
    assert!(worst <= 1e-9 * rig.diagonal(), "{worst:e} m off the base");
}
