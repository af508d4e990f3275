//! The hierarchical basis on a conformed, cut-cell lattice (Capell §3.1,
//! §3.3, §4.7): `K_J` subdivided through each cell's trilinear map, its cells
//! integrated only where the object is. Run with `--nocapture` for the
//! numbers.

use glam::{DAffine3, DQuat, DVec3};
use plasticine::fem::MIN_JACOBIAN;
use plasticine::fem::Material;
use plasticine::fem::{AdaptSettings, AdaptiveBody, Bone, FemBody, FemSettings, Lattice};
use plasticine::fem::{BoneBinding, LatticeSettings};
use plasticine::fem::{
    SubcellTest, character_inside, character_lattice, character_lattice_with_vertices,
    hierarchy_object_elements,
};

const QUADRATURE_LEVELS: u32 = 2;

fn settings(gravity: DVec3) -> FemSettings {
    FemSettings {
        gravity,
        cg_tolerance: 1e-10,
        cg_max_iterations: 20_000,
        ..FemSettings::default()
    }
}

fn levels(j: u32) -> AdaptSettings {
    AdaptSettings {
        levels: j,
        refine_threshold: vec![1.0; j as usize],
        coarsen_threshold: vec![0.5; j as usize],
    }
}

fn max_norm(v: &[DVec3]) -> f64 {
    v.iter().map(|x| x.length()).fold(0.0, f64::max)
}

/// The penguin's trimmed, snapped lattice (about 200 vertices) in the
/// hierarchy of `j` levels, its `K_J` cells integrated over the muscles.
fn penguin(j: u32, snapped: bool) -> (AdaptiveBody, FemBody) {
    let c = plasticine::samples::bare("penguin").expect("sample");
    let (l, elements) = if snapped {
        character_lattice_with_vertices(&c, 200, 0.5, QUADRATURE_LEVELS).expect("lattice")
    } else {
        let radius = Lattice::from_character_with_vertices(&c, 200, 0.5);
        let settings = LatticeSettings {
            cell_size: radius.cell_size.x,
            bone_radius_cells: 0.5,
            binding: BoneBinding::Radius,
        };
        character_lattice(&c, &settings, QUADRATURE_LEVELS).expect("lattice")
    };
    assert_eq!((0..l.cell_count()).any(|k| !l.is_box(k)), snapped);
    assert!(!elements.partial.is_empty(), "cut cells");
    let g = DVec3::new(0.0, -9.81, 0.0);
    let materials = vec![Material::FLESH; l.cell_count()];
    let fixed = vec![None; l.vertex_count()];
    let inside = character_inside(&c);
    let body = AdaptiveBody::with_elements(
        l.clone(),
        materials.clone(),
        fixed,
        settings(g),
        levels(j),
        |h| hierarchy_object_elements(h, inside, QUADRATURE_LEVELS, SubcellTest::Centre),
    )
    .expect("adaptive body");
    let plain = FemBody::with_elements(l, materials, elements, settings(g));
    (body, plain)
}

/// No detail on a cut lattice of boxes (bones bound by radius): the coarse
/// space integrated on `K_J` is exactly the coarse FEM body (the sub-cell
/// rules integrate the same polynomials over the same union of sub-cells).
#[test]
fn with_no_detail_a_cut_box_lattice_is_the_plain_body() {
    let (mut body, mut plain) = penguin(2, false);
    let bones = vec![DAffine3::IDENTITY; plain.lattice.bones.len()];
    let r = body.solve_static(&bones, None).unwrap();
    assert!(r.converged, "{r:?}");
    plain.solve_static(&bones, None);
    let scale = max_norm(&plain.q);
    let diff = body
        .q
        .iter()
        .zip(&plain.q)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f64::max);
    eprintln!(
        "penguin, cut boxes, J = 2, no detail vs FemBody: sag {scale:.3e} m, difference {diff:.2e} m"
    );
    assert!(scale > 1e-6);
    assert!(diff < 1e-6 * scale);
}

/// Object-only integration survives the subdivision: `K_J` holds the coarse
/// lattice's mass and gravity load; with no detail the adaptive answer is
/// the plain FEM body's on the same conformed, cut lattice, up to the
/// quadrature of the isoparametric stiffness (a rational integrand: the
/// whole cell's rule and its sub-cells' rules differ by that error).
#[test]
fn the_penguins_hierarchy_keeps_its_mass_and_its_coarse_answer() {
    let (mut body, mut plain) = penguin(1, true);
    let bones = vec![DAffine3::IDENTITY; plain.lattice.bones.len()];
    let coarse_mass: f64 = plain.global.lumped_mass.iter().sum();
    let fine_mass: f64 = body.fine_matrices.lumped_mass.iter().sum();
    let coarse_gravity: f64 = plain.global.gravity_weight.iter().sum();
    let fine_gravity: f64 = body.fine_matrices.gravity_weight.iter().sum();
    let empty = (0..body.fine_elements.len())
        .filter(|&c| body.fine_elements.get(c).volume() == 0.0)
        .count();
    let conformed = (0..body.hierarchy.fine.cell_count())
        .filter(|&c| !body.hierarchy.fine.is_box(c))
        .count();
    eprintln!(
        "penguin K_1: {} vertices, {} cells ({conformed} conformed, {empty} empty), mass {fine_mass:.6} \
         vs coarse {coarse_mass:.6} (per unit density), gravity weight {fine_gravity:.6} vs \
         {coarse_gravity:.6}",
        body.hierarchy.fine.vertex_count(),
        body.hierarchy.fine.cell_count(),
    );
    assert!((fine_mass - coarse_mass).abs() < 1e-10 * coarse_mass);
    assert!((fine_gravity - coarse_gravity).abs() < 1e-10 * coarse_gravity);

    // No detail: the coarse space, integrated on K_J.
    assert_eq!(body.dof_count(), plain.lattice.vertex_count());
    let r = body.solve_static(&bones, None).unwrap();
    assert!(r.converged, "{r:?}");
    plain.solve_static(&bones, None);
    let scale = max_norm(&plain.q);
    let diff = body
        .q
        .iter()
        .zip(&plain.q)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f64::max);
    eprintln!(
        "no detail vs FemBody::with_elements: largest sag {scale:.3e} m, difference {diff:.3e} m \
         ({:.2e} relative)",
        diff / scale
    );
    assert!(scale > 1e-6);
    assert!(diff < 2e-2 * scale);
    let coarse_field = body.field();

    // Every detail: the same mass on the DOFs (the basis is a partition of
    // unity at level 0 and K_J's masses are the sum), bone vertices exact.
    body.refine_all();
    let added = body.active_per_level();
    let r = body.solve_static(&bones, None).unwrap();
    assert!(r.converged, "{r:?}");
    let u = body.field();
    let pinned_worst = (0..u.len())
        .filter(|&a| body.hierarchy.pinned[a])
        .map(|a| u[a].length())
        .fold(0.0, f64::max);
    // The work of gravity, Σ ∫ρφ g·u: with the same K_J integrals the
    // coarse space is a subspace of the full one, so it can only grow.
    let work = |weights: &[f64], u: &[DVec3]| -> f64 {
        weights.iter().zip(u).map(|(w, x)| w * x.y * -9.81).sum()
    };
    let coarse_work = work(&body.fine_matrices.gravity_weight, &coarse_field);
    let fine_work = work(&body.fine_matrices.gravity_weight, &u);
    eprintln!(
        "all detail: active per level {added:?}, gravity work {fine_work:.4e} vs no detail \
         {coarse_work:.4e} (per unit density), bone vertices off {pinned_worst:.1e} m"
    );
    assert!(pinned_worst < 1e-12);
    assert!(coarse_work > 0.0);
    assert!(
        fine_work >= coarse_work * (1.0 - 1e-6),
        "a richer space sags at least as far"
    );
    assert!(added[1] > 0);
}

/// The off-grid limb of `tests/fem_snap.rs`: two bones conformed onto chains
/// of edges, every cell inside the object.
fn off_grid_limb() -> Lattice {
    let h = 0.05;
    let mut l = Lattice::grid_box(DVec3::new(-0.1, -0.1, 0.0), DVec3::splat(h), [4, 4, 8]);
    let elbow = DVec3::new(0.3 * h, -0.2 * h, 0.2);
    l.snap_bones(
        vec![
            Bone {
                joint: 0,
                child: Some(1),
                head: DVec3::new(-0.25 * h, 0.3 * h, 0.0),
                tail: elbow,
            },
            Bone {
                joint: 1,
                child: Some(2),
                head: elbow,
                tail: DVec3::new(0.1 * h, 0.35 * h, 0.4),
            },
        ],
        MIN_JACOBIAN,
    );
    l
}

fn elbow_pose(l: &Lattice, angle: f64) -> Vec<DAffine3> {
    let elbow = l.bones[1].head;
    vec![
        DAffine3::IDENTITY,
        DAffine3::from_translation(elbow)
            * DAffine3::from_quat(DQuat::from_rotation_x(angle))
            * DAffine3::from_translation(-elbow),
    ]
}

/// Largest distance of 21 points per bone, embedded in `K_J` at rest, from
/// their rigidly posed places.
fn bone_error(body: &AdaptiveBody, pose: &[DAffine3]) -> f64 {
    let fine = &body.hierarchy.fine;
    let mut worst = 0.0f64;
    for (b, bone) in fine.bones.iter().enumerate() {
        for k in 0..=20 {
            let p = bone.head.lerp(bone.tail, k as f64 / 20.0);
            let e = fine.embed(p).expect("bone inside K_J");
            let moved = p + body.displacement_at(&e);
            worst = worst.max(moved.distance(pose[b].transform_point3(p)));
        }
    }
    worst
}

/// The posed elbow, the limb under gravity: `K_J`'s vertices follow the
/// cells' trilinear maps, the bones stay exact with every detail, and the
/// answer converges as the levels grow.
#[test]
fn the_off_grid_limb_converges_under_refinement_with_exact_bones() {
    let l = off_grid_limb();
    assert!((0..l.cell_count()).any(|k| !l.is_box(k)));
    let pose = elbow_pose(&l, 0.5);
    let g = DVec3::new(0.0, -9.81, 0.0);
    let solve = |j: u32, detail: bool| {
        let fixed = vec![None; l.vertex_count()];
        let mut body =
            AdaptiveBody::uniform(l.clone(), Material::FLESH, fixed, settings(g), levels(j))
                .expect("adaptive body");
        // K_J's vertices lie on the coarse cells' maps: a coarse vertex
        // keeps its place, and K_J embeds every coarse vertex exactly.
        for (v, &a) in body.hierarchy.fine_of_coarse.iter().enumerate() {
            assert_eq!(body.hierarchy.fine.rest[a], l.rest[v]);
        }
        if detail {
            body.refine_all();
        }
        let r = body.solve_static(&pose, None).unwrap();
        assert!(r.converged, "{r:?}");
        body
    };
    let coarse = solve(1, false);
    let mut plain = FemBody::uniform(l.clone(), Material::FLESH, settings(g));
    plain.solve_static(&pose, None);
    let diff = coarse
        .q
        .iter()
        .zip(&plain.q)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f64::max);
    let one = solve(1, true);
    let reference = solve(2, true);
    // Compare the fields at the coarse vertices (every K_J holds them).
    let at_coarse = |b: &AdaptiveBody| -> Vec<DVec3> {
        let u = b.field();
        b.hierarchy.fine_of_coarse.iter().map(|&a| u[a]).collect()
    };
    let r = at_coarse(&reference);
    let err = |b: &AdaptiveBody| {
        at_coarse(b)
            .iter()
            .zip(&r)
            .map(|(a, b)| a.distance(*b))
            .fold(0.0, f64::max)
    };
    let (e0, e1) = (err(&coarse), err(&one));
    let bones = [bone_error(&one, &pose), bone_error(&reference, &pose)];
    eprintln!(
        "off-grid limb, elbow 0.5 rad + gravity: no detail vs FemBody {diff:.2e} m (sag {:.3e}); \
         error vs J = 2 at the coarse vertices: no detail {e0:.3e}, J = 1 {e1:.3e} m; \
         bone points off {:.1e}, {:.1e} m",
        max_norm(&plain.q),
        bones[0],
        bones[1]
    );
    // The isoparametric stiffness is rational: the whole cell's Gauss rule
    // and its sub-cells' differ by that quadrature error.
    assert!(diff < 1e-3 * max_norm(&plain.q));
    assert!(e1 < 0.7 * e0, "{e0} {e1}");
    assert!(bones.iter().all(|&e| e < 1e-12), "{bones:?}");
}

/// The field at the `K_J` vertices of cells holding flesh (a vertex whose
/// cells are all empty carries no energy, so the physics leaves it as it
/// was: it holds no material and no embedded point).
fn in_flesh(body: &AdaptiveBody) -> Vec<DVec3> {
    let u = body.field();
    let mut keep = vec![false; u.len()];
    for (c, cell) in body.hierarchy.fine.cells.iter().enumerate() {
        if !body.fine_elements.get(c).quadrature.is_empty() {
            cell.iter().for_each(|&a| keep[a] = true);
        }
    }
    u.into_iter()
        .zip(keep)
        .filter(|p| p.1)
        .map(|p| p.0)
        .collect()
}

/// Adapt, then solve again, until nothing changes; returns the rounds.
fn adapt_statically(body: &mut AdaptiveBody, bones: &[DAffine3]) -> usize {
    for round in 1..=8 {
        if !body.adapt().changed() {
            return round;
        }
        let r = body.solve_static(bones, None).unwrap();
        assert!(r.converged, "round {round}: {r:?}");
    }
    panic!("adaptation did not settle in 8 rounds");
}

/// Grabbing the penguin's conformed, cut flesh and pulling draws detail to
/// the grab (and only near it); released, the detail goes again.
#[test]
fn a_grab_on_the_penguin_draws_detail_and_releasing_removes_it() {
    let (mut body, plain) = penguin(1, true);
    body.settings.gravity = DVec3::ZERO;
    body.adapt = AdaptSettings {
        levels: 1,
        refine_threshold: vec![0.15],
        coarsen_threshold: vec![0.05],
    };
    let l = &plain.lattice;
    let bones = vec![DAffine3::IDENTITY; l.bones.len()];
    // The free coarse vertex with the most flesh around it, a little off
    // it (so the point touches functions of both levels).
    let v = (0..l.vertex_count())
        .filter(|&a| l.bone_of_vertex[a].is_none())
        .max_by(|&a, &b| plain.global.lumped_mass[a].total_cmp(&plain.global.lumped_mass[b]))
        .expect("a free vertex");
    let h = l.cell_size.x;
    let at = l.rest[v] + DVec3::new(0.2, 0.15, 0.1) * h;
    body.grab(at, DVec3::new(0.0, 0.3 * h, 0.0)).unwrap();
    let r = body.solve_static(&bones, None).unwrap();
    assert!(r.converged, "{r:?}");
    let peak = body.distortion().into_iter().fold(0.0, f64::max);
    eprintln!("penguin grab: peak distortion {peak:.3} on the coarse level");
    let rounds = adapt_statically(&mut body, &bones);
    let per_level = body.active_per_level();
    let fine = &body.hierarchy.fine;
    // The details near the grab: their mean distance from it against that
    // of every admissible detail.
    let mean = |set: &mut dyn Iterator<Item = usize>| {
        let d: Vec<f64> = set.map(|a| fine.rest[a].distance(at)).collect();
        d.iter().sum::<f64>() / d.len().max(1) as f64
    };
    let active_mean = mean(
        &mut body
            .active_functions()
            .iter()
            .copied()
            .filter(|&a| body.hierarchy.level_of[a] > 0),
    );
    let all_mean = mean(
        &mut (0..fine.vertex_count())
            .filter(|&a| body.hierarchy.level_of[a] > 0 && body.hierarchy.admissible[a]),
    );
    let nearest_all: usize = (0..fine.vertex_count())
        .filter(|&a| body.hierarchy.level_of[a] > 0 && body.hierarchy.admissible[a])
        .filter(|&a| fine.rest[a].distance(at) < 1.5 * h)
        .count();
    let nearest_active = body
        .active_functions()
        .iter()
        .filter(|&&a| body.hierarchy.level_of[a] > 0 && fine.rest[a].distance(at) < 1.5 * h)
        .count();
    let off = (body.displacement_at(&body.constraints[0].embedding) - body.constraints[0].target)
        .length();
    eprintln!(
        "penguin grab (cell {h:.3} m, pulled {:.3} m): {rounds} rounds, active per level \
         {per_level:?}; details' mean distance from the grab {active_mean:.3} m (all admissible \
         {all_mean:.3} m), {nearest_active} of the {nearest_all} within 1.5 cells active; point \
         off target {off:.1e} m",
        0.3 * h
    );
    assert!(per_level[1] > 0, "detail at the grab");
    assert!(active_mean < 0.7 * all_mean, "{active_mean} vs {all_mean}");
    assert!(
        2 * nearest_active > nearest_all,
        "{nearest_active} of {nearest_all}"
    );
    assert!(off < 1e-9, "{off}");
    // Released, with no load the answer is zero (a zero right-hand side:
    // the relative residual is not a measure, the field is).
    body.constraints.clear();
    let rr = body.solve_static(&bones, None).unwrap();
    assert!(rr.converged, "{rr:?}");
    let left = max_norm(&in_flesh(&body));
    let report = body.adapt();
    eprintln!(
        "released: field left {left:.1e} m, adapt removed {:?}",
        report.removed
    );
    assert!(left < 1e-9 * h, "{left}");
    assert_eq!(body.active_per_level()[1], 0, "released, the detail goes");
}

#[test]
fn elements_of_the_wrong_count_are_an_error() {
    let l = off_grid_limb();
    let n = l.vertex_count();
    let r = AdaptiveBody::with_elements(
        l.clone(),
        vec![Material::FLESH; l.cell_count()],
        vec![None; n],
        settings(DVec3::ZERO),
        levels(1),
        |_| Ok(plasticine::fem::lattice_elements(&l)),
    );
    let fine_cells = l.subdivide(1).cell_count();
    assert_eq!(
        r.unwrap_err(),
        plasticine::fem::AdaptError::Elements {
            elements: l.cell_count(),
            cells: fine_cells,
        }
    );
}
