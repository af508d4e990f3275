//! The hierarchical basis on a conformed, cut-cell lattice (Capell §3.1,
//! §3.3, §4.7): K_J subdivided through each cell's trilinear map, its cells
//! integrated only where the object is. Run with `--nocapture` for the
//! numbers.

use glam::{DAffine3, DQuat, DVec3};
use plasticine::fem::element::Material;
use plasticine::fem::lattice::{BoneBinding, LatticeSettings};
use plasticine::fem::quadrature::{
    SubcellTest, character_inside, character_lattice, character_lattice_with_vertices,
    hierarchy_object_elements,
};
use plasticine::fem::snap::MIN_JACOBIAN;
use plasticine::fem::{AdaptSettings, AdaptiveBody, Bone, FemBody, FemSettings, Lattice};

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
/// hierarchy of `j` levels, its K_J cells integrated over the muscles.
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
/// space integrated on K_J is exactly the coarse FEM body (the sub-cell
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

/// Object-only integration survives the subdivision: K_J holds the coarse
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

/// The off-grid limb of tests/fem_snap.rs: two bones conformed onto chains
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

/// Largest distance of 21 points per bone, embedded in K_J at rest, from
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

/// The posed elbow, the limb under gravity: K_J's vertices follow the
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
