//! Bones on lattice edges (Capell §3.1 (ii), §4.1, §4.3): chains of lattice
//! edges conformed onto the bones, isoparametric cells, embedding by
//! inverting the trilinear map. Run with `--nocapture` for the counts.

use glam::{DAffine3, DMat3, DQuat, DVec3};
use plasticine::fem::assemble_elements;
use plasticine::fem::character_lattice_with_vertices;
use plasticine::fem::{
    Bone, BoneBinding, FemBody, FemSettings, Lattice, Linearization, NonlinearBody, bone_transforms,
};
use plasticine::fem::{CellElements, HexElement, Material, cell_point, corner_offset};
use plasticine::fem::{MIN_JACOBIAN, SnapReport, cell_quality, lattice_elements};

const TOL: f64 = 1e-12;

/// The rest-lattice edges (vertex pairs of some cell's edge).
fn is_edge(l: &Lattice, a: usize, b: usize) -> bool {
    l.cells.iter().any(|cell| {
        (0..8).any(|i| {
            [1, 2, 4].iter().any(|bit| {
                i & bit == 0
                    && ((cell[i] == a && cell[i | bit] == b)
                        || (cell[i] == b && cell[i | bit] == a))
            })
        })
    })
}

/// Per bone: (vertices bound to it, of those on it, fell back off it).
fn counts(l: &Lattice) -> Vec<(usize, usize, usize)> {
    (0..l.bones.len())
        .map(|b| {
            let bound: Vec<usize> = (0..l.vertex_count())
                .filter(|&a| l.bone_of_vertex[a] == Some(b))
                .collect();
            let on = bound
                .iter()
                .filter(|&&a| l.bones[b].distance(l.rest[a]) <= TOL)
                .count();
            (bound.len(), on, bound.len() - on)
        })
        .collect()
}

/// Whether bone `b` is covered by a chain of lattice edges lying on it: the
/// bound vertices on the bone (and a joint vertex another bone holds),
/// ordered along it, start at the head, end at the tail, and each pair of
/// neighbours is a lattice edge.
fn covered(l: &Lattice, b: usize) -> Result<(), String> {
    let bone = &l.bones[b];
    let d = bone.tail - bone.head;
    let mut on: Vec<(f64, usize)> = (0..l.vertex_count())
        .filter(|&a| l.bone_of_vertex[a].is_some() && bone.distance(l.rest[a]) <= TOL)
        .map(|a| ((l.rest[a] - bone.head).dot(d) / d.length_squared(), a))
        .collect();
    on.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (Some(first), Some(last)) = (on.first(), on.last()) else {
        return Err(format!("bone {b}: no vertex on it"));
    };
    if first.0.abs() > TOL || (last.0 - 1.0).abs() > TOL {
        return Err(format!(
            "bone {b}: chain spans t ∈ [{}, {}]",
            first.0, last.0
        ));
    }
    for w in on.windows(2) {
        if !is_edge(l, w[0].1, w[1].1) {
            return Err(format!(
                "bone {b}: gap between t = {} and t = {}",
                w[0].0, w[1].0
            ));
        }
    }
    Ok(())
}

fn min_quality(l: &Lattice) -> f64 {
    (0..l.cell_count())
        .map(|c| cell_quality(&l.cell_corners(c), l.cell_size.element_product()))
        .fold(f64::INFINITY, f64::min)
}

/// A limb of 4 × 4 × 8 cells whose two bones run off the grid lines (offset
/// and tilted by a third of a cell), snapped.
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

/// A 2 × 2 × 2 box whose centre vertex (in all eight cells) is moved by a
/// third of a cell: eight distorted cells.
fn distorted_block() -> Lattice {
    let h = 0.1;
    let mut l = Lattice::grid_box(DVec3::ZERO, DVec3::splat(h), [2, 2, 2]);
    let centre = (0..l.vertex_count())
        .find(|&a| l.vertex_coords[a] == [1, 1, 1])
        .expect("centre vertex");
    l.rest[centre] += DVec3::new(0.3, -0.25, 0.2) * h;
    l
}

#[test]
fn the_demo_limb_and_an_off_grid_limb_lie_on_chains_of_edges() {
    let demo = plasticine::samples::limb([4, 4, 8], 0.05, Linearization::Global);
    let l = &demo.lattice;
    eprintln!(
        "demo limb (bone vertices, on bone, fell back): {:?}",
        counts(l)
    );
    for b in 0..l.bones.len() {
        covered(l, b).unwrap();
    }
    assert_eq!(counts(l), vec![(5, 5, 0), (4, 4, 0)]);

    let l = off_grid_limb();
    let c = counts(&l);
    eprintln!(
        "off-grid limb (bone vertices, on bone, fell back): {c:?}, {} of {} cells conformed, least \
         Jacobian ratio {:.3}",
        (0..l.cell_count()).filter(|&k| !l.is_box(k)).count(),
        l.cell_count(),
        min_quality(&l)
    );
    for b in 0..l.bones.len() {
        covered(&l, b).unwrap();
    }
    assert!(c.iter().all(|&(_, _, fell)| fell == 0));
    assert!(min_quality(&l) >= MIN_JACOBIAN);
    // The vertices moved less than half a cell (the nearest grid line).
    for a in 0..l.vertex_count() {
        assert!(l.rest[a].distance(l.grid_position(a)) < 0.5 * l.cell_size.x);
    }
}

#[test]
fn the_penguin_lattice_snaps_its_bones() {
    let c = plasticine::samples::bare("penguin").expect("sample");
    let l = Lattice::from_character_with_vertices(&c, 180, 0.5);
    assert_eq!(l.binding, BoneBinding::Snapped);
    let per_bone = counts(&l);
    let covered_bones: Vec<usize> = (0..l.bones.len())
        .filter(|&b| covered(&l, b).is_ok())
        .collect();
    eprintln!(
        "penguin lattice: {} vertices, {} cells ({} conformed), least Jacobian ratio {:.3}; per \
         bone (bone vertices, on bone, fell back): {per_bone:?}; covered bones {covered_bones:?} \
         of {}",
        l.vertex_count(),
        l.cell_count(),
        (0..l.cell_count()).filter(|&k| !l.is_box(k)).count(),
        min_quality(&l),
        l.bones.len()
    );
    // Snapping the grid again gives the same lattice, and its report.
    let mut again = l.clone();
    for a in 0..again.vertex_count() {
        again.rest[a] = again.grid_position(a);
    }
    let report = again.snap_bones(l.bones.clone(), MIN_JACOBIAN);
    assert_eq!(again.rest, l.rest);
    for (b, chain) in report.chains.iter().enumerate() {
        let bone = &l.bones[b];
        eprintln!(
            "  bone {b}: length {:.2} cells, chain {:?} ({} on the bone, {} fell back, {} shared, {} \
             free vertices relaxed){}",
            bone.head.distance(bone.tail) / l.cell_size.x,
            chain.vertices,
            chain.on_bone,
            chain.fell_back,
            chain.shared,
            chain.relaxed,
            covered(&l, b)
                .err()
                .map_or(String::new(), |e| format!(": {e}"))
        );
    }
    assert!(min_quality(&l) >= MIN_JACOBIAN);
    assert!(per_bone.iter().all(|&(n, _, _)| n > 0));
    // The trunk, neck, head and flippers lie on their chains; the two legs
    // (0.86 cell, oblique on all three axes, ending near a cell's centre)
    // cannot: the only edges towards their feet would turn a cell inside
    // out, and their end vertices lie on the lattice's boundary, where
    // moving the neighbours too (relaxing, which only interior vertices do)
    // would dent the lattice into the feet. They keep their grid vertex,
    // bound by distance.
    assert!(covered_bones.len() >= 8, "{covered_bones:?}");
}

/// On a box the isoparametric element is the box element.
#[test]
fn the_isoparametric_element_of_a_box_is_the_box_element() {
    let size = DVec3::new(0.3, 0.5, 0.7);
    let origin = DVec3::new(-1.0, 2.0, 0.5);
    let corners: [DVec3; 8] = std::array::from_fn(|i| {
        let [a, b, c] = corner_offset(i);
        origin + DVec3::new(a as f64, b as f64, c as f64) * size
    });
    let boxed = HexElement::new(size);
    let iso = HexElement::isoparametric(size, corners, &boxed.quadrature);
    let scale = boxed
        .k_mu
        .iter()
        .map(|m| m.abs().to_cols_array()[0])
        .fold(0.0, f64::max);
    for k in 0..64 {
        assert!(iso.k_lambda[k].abs_diff_eq(boxed.k_lambda[k], TOL * scale));
        assert!(iso.k_mu[k].abs_diff_eq(boxed.k_mu[k], TOL * scale));
        assert!((iso.mass[k / 8][k % 8] - boxed.mass[k / 8][k % 8]).abs() < TOL);
    }
    for a in 0..8 {
        assert!((iso.integral[a] - boxed.integral[a]).abs() < TOL);
    }
}

/// Rigid motions carry no force in distorted cells, and the patch test: a
/// linear displacement field gives its own constant strain at every
/// quadrature point, no force on the interior vertex, and the energy
/// `W(ε)·volume` exactly.
#[test]
fn distorted_cells_pass_the_patch_test() {
    let l = distorted_block();
    assert_eq!((0..8).filter(|&c| !l.is_box(c)).count(), 8);
    let q = min_quality(&l);
    eprintln!("distorted block: least Jacobian ratio {q:.3}");
    assert!(q > 0.0);
    let elements: CellElements = lattice_elements(&l);
    let m = Material {
        young: 1000.0,
        poisson: 0.3,
        density: 1.0,
    };
    let k = assemble_elements(l.vertex_count(), &l.cells, &[m; 8], &elements).stiffness;
    let apply = |u: &[DVec3]| {
        let mut f = vec![DVec3::ZERO; u.len()];
        k.mul(u, &mut f);
        f
    };
    let kscale = m.young * l.cell_size.x;
    // Translation and infinitesimal rotation.
    let omega = DVec3::new(0.3, -0.7, 0.2);
    let rigid: Vec<DVec3> = l
        .rest
        .iter()
        .map(|&x| DVec3::new(1.0, 2.0, -3.0) + omega.cross(x))
        .collect();
    let f = apply(&rigid);
    let worst = f.iter().map(|v| v.length()).fold(0.0, f64::max);
    eprintln!("rigid motion: largest force {worst:.2e} (E h = {kscale})");
    assert!(worst < 1e-10 * kscale);
    // A linear field u = A x + t.
    let a = DMat3::from_cols(
        DVec3::new(1e-3, 2e-4, -3e-4),
        DVec3::new(5e-4, -2e-3, 1e-4),
        DVec3::new(-4e-4, 3e-4, 1.5e-3),
    );
    let u: Vec<DVec3> = l
        .rest
        .iter()
        .map(|&x| a * x + DVec3::new(0.1, 0.0, -0.2))
        .collect();
    let eps = (a + a.transpose()) * 0.5;
    for (c, cell) in l.cells.iter().enumerate() {
        let e = elements.get(c);
        for p in &e.quadrature {
            let g = e.gradients_at(p.local);
            // ∇u = Σ u_a ⊗ ∇φ^a.
            let mut grad = DMat3::ZERO;
            for (&v, ga) in cell.iter().zip(g) {
                grad += DMat3::from_cols(u[v] * ga.x, u[v] * ga.y, u[v] * ga.z);
            }
            assert!(grad.abs_diff_eq(a, 1e-15), "{grad} vs {a}");
        }
    }
    let f = apply(&u);
    let centre = (0..l.vertex_count())
        .find(|&v| l.vertex_coords[v] == [1, 1, 1])
        .unwrap();
    let stress_scale = m.young * 2e-3 * l.cell_size.x * l.cell_size.x;
    eprintln!(
        "linear field: force on the interior vertex {:.2e} (σ h² = {stress_scale:.1e})",
        f[centre].length()
    );
    assert!(f[centre].length() < 1e-12 * stress_scale.max(1.0) + 1e-12);
    // The energy of the strain alone (a translation adds only round-off of
    // the O(E h |t|) forces that cancel).
    let strain_only: Vec<DVec3> = l.rest.iter().map(|&x| a * x).collect();
    let f = apply(&strain_only);
    let energy: f64 = 0.5
        * strain_only
            .iter()
            .zip(&f)
            .map(|(x, y)| x.dot(*y))
            .sum::<f64>();
    let tr = eps.x_axis.x + eps.y_axis.y + eps.z_axis.z;
    let eps2: f64 = (eps * eps).to_cols_array().iter().step_by(4).sum();
    let density = m.mu() * eps2 + 0.5 * m.lambda() * tr * tr;
    let volume: f64 = (0..8).map(|c| elements.get(c).volume()).sum();
    assert!((volume - 8.0 * l.cell_size.element_product()).abs() < 1e-15 * volume.max(1.0));
    assert!(
        (energy - density * volume).abs() < 1e-12 * density * volume,
        "{energy} vs {}",
        density * volume
    );
}

/// A point of a conformed cell embeds back to itself (the trilinear map
/// inverted); so do all lattice vertices and points of box cells.
#[test]
fn embedding_reproduces_rest_points_in_conformed_cells() {
    for l in [distorted_block(), off_grid_limb()] {
        let q = vec![DVec3::ZERO; l.vertex_count()];
        let mut worst = 0.0f64;
        let mut tried = 0;
        for c in 0..l.cell_count() {
            let corners = l.cell_corners(c);
            for s in [
                DVec3::new(0.5, 0.5, 0.5),
                DVec3::new(0.1, 0.8, 0.35),
                DVec3::new(0.97, 0.02, 0.6),
                DVec3::new(0.0, 0.3, 1.0),
            ] {
                let p = cell_point(&corners, s);
                let e = l.embed(p).expect("a rest point of the lattice embeds");
                worst = worst.max(l.deform(&e, &q).distance(p));
                tried += 1;
            }
        }
        for (a, &r) in l.rest.iter().enumerate() {
            let e = l.embed(r).expect("vertex embeds");
            worst = worst.max(l.deform(&e, &q).distance(r));
            let w = e.weights[l.cells[e.cell].iter().position(|&v| v == a).unwrap()];
            assert!((w - 1.0).abs() < 1e-9);
        }
        eprintln!("embedded {tried} cell points and every vertex: worst error {worst:.1e} m");
        assert!(worst < 1e-9);
        // A point outside the lattice stays outside.
        assert!(l.embed(l.origin - DVec3::splat(0.01)).is_none());
    }
}

/// Bone vertices of the snapped penguin stay exactly on their posed bones
/// through a sequence of steps following the sample's key postures.
#[test]
fn bone_vertices_sit_on_their_bones_through_a_posed_sequence() {
    let c = plasticine::samples::bare("penguin").expect("sample");
    let lattice = Lattice::from_character_with_vertices(&c, 180, 0.5);
    let bones = lattice.bones.clone();
    let settings = FemSettings {
        linearization: Linearization::BlendedLocal {
            blend_width: lattice.cell_size.x,
        },
        ..FemSettings::default()
    };
    let mut body = FemBody::uniform(lattice, Material::FLESH, settings);
    let (mut worst_on, mut worst_rigid, mut checked) = (0.0f64, 0.0f64, 0usize);
    for k in 1..=45 {
        let t = k as f64 * body.settings.time_step;
        let posture = plasticine::anim::sample_posture(&c.key_postures, t as f32).expect("keys");
        let transforms = bone_transforms(&c, &bones, &posture);
        let r = body.step(&transforms);
        assert!(r.converged(), "step {k}: {r:?}");
        for a in 0..body.vertex_count() {
            let Some(b) = body.lattice.bone_of_vertex[a] else {
                continue;
            };
            let rest = body.lattice.rest[a];
            let p = rest + body.q[a];
            worst_rigid = worst_rigid.max(p.distance(transforms[b].transform_point3(rest)));
            if bones[b].distance(rest) <= TOL {
                let posed = Bone {
                    head: transforms[b].transform_point3(bones[b].head),
                    tail: transforms[b].transform_point3(bones[b].tail),
                    ..bones[b].clone()
                };
                worst_on = worst_on.max(posed.distance(p));
                checked += 1;
            }
        }
    }
    eprintln!(
        "penguin, 45 steps: {checked} on-bone vertex checks, worst distance to the posed bone \
         {worst_on:.1e} m, bone vertices off their rigid motion ≤ {worst_rigid:.1e} m"
    );
    assert!(checked > 0);
    assert!(worst_on < 1e-12 && worst_rigid < 1e-12);
}

/// The limb with its bones off the grid, its elbow bent 45° over 20
/// implicit-Euler steps under gravity: every step converges, and every point of each bone,
/// embedded at rest, lands exactly on the posed bone (`p_S` linear along the
/// bone, eq. 6, because the bone is made of lattice edges whose ends move
/// with it). The same limb bound by radius instead misses by millimetres.
#[test]
fn an_off_grid_snapped_limb_carries_its_bones_exactly() {
    let snapped = bone_point_error(off_grid_limb());
    let mut radius = off_grid_limb();
    for a in 0..radius.vertex_count() {
        radius.rest[a] = radius.grid_position(a);
    }
    let bones = radius.bones.clone();
    radius.bind_bones(bones, 0.5 * radius.cell_size.x);
    let unsnapped = bone_point_error(radius);
    eprintln!(
        "bone points off their posed bones: snapped {snapped:.1e} m, bound by radius {unsnapped:.1e} m"
    );
    assert!(snapped < 1e-12);
    assert!(unsnapped > 1e-4);
}

/// The largest distance of 21 points per bone, embedded at rest, from their
/// rigidly posed places after the steps.
fn bone_point_error(l: Lattice) -> f64 {
    let settings = FemSettings {
        linearization: Linearization::BlendedLocal { blend_width: 0.05 },
        ..FemSettings::default()
    };
    let mut body = FemBody::uniform(l, Material::FLESH, settings);
    let elbow = body.lattice.bones[1].head;
    let pose = |angle: f64| {
        [
            DAffine3::IDENTITY,
            DAffine3::from_translation(elbow)
                * DAffine3::from_quat(DQuat::from_rotation_x(angle))
                * DAffine3::from_translation(-elbow),
        ]
    };
    let mut iterations = 0;
    for k in 1..=20 {
        let r = body.step(&pose(0.785 * (k as f64 / 20.0)));
        assert!(r.converged(), "step {k}: {r:?}");
        iterations += r.iterations();
    }
    let transforms = pose(0.785);
    let sag = body.q.iter().map(|q| q.length()).fold(0.0, f64::max);
    eprintln!(
        "off-grid limb, 20 steps bending the elbow 45° ({:?}): {iterations} CG iterations, largest \
         displacement {sag:.3} m",
        body.lattice.binding
    );
    assert!(sag.is_finite() && sag < 0.5);
    let mut worst = 0.0f64;
    for (b, bone) in body.lattice.bones.iter().enumerate() {
        for k in 0..=20 {
            let p = bone.head.lerp(bone.tail, k as f64 / 20.0);
            let e = body.lattice.embed(p).expect("bone inside the lattice");
            let moved = body.lattice.deform(&e, &body.q);
            worst = worst.max(moved.distance(transforms[b].transform_point3(p)));
        }
    }
    worst
}

/// The nonlinear reference integrates the conformed cells with their own
/// gradients: its tangent at rest is the linear K of the isoparametric
/// elements, and a large rigid motion of the off-grid limb carries no
/// energy and no force.
#[test]
fn the_nonlinear_model_sees_the_conformed_cells() {
    let body = FemBody::uniform(off_grid_limb(), Material::FLESH, FemSettings::default());
    assert!((0..body.lattice.cell_count()).any(|c| !body.lattice.is_box(c)));
    let nl = NonlinearBody::from_fem(&body);
    let zero = vec![DVec3::ZERO; body.vertex_count()];
    let t = nl.tangent(&zero);
    let k = &body.global.stiffness;
    let max_abs = |m: DMat3| m.abs().to_cols_array().into_iter().fold(0.0, f64::max);
    let scale = k.blocks.iter().map(|b| max_abs(*b)).fold(0.0, f64::max);
    let worst = t
        .blocks
        .iter()
        .zip(&k.blocks)
        .map(|(a, b)| max_abs(*a - *b))
        .fold(0.0, f64::max);
    let rigid = DAffine3::from_translation(DVec3::new(0.3, -0.2, 0.5))
        * DAffine3::from_quat(DQuat::from_axis_angle(
            DVec3::new(1.0, 2.0, 0.5).normalize(),
            std::f64::consts::FRAC_PI_2,
        ));
    let rest = &body.lattice.rest;
    let q: Vec<DVec3> = rest
        .iter()
        .map(|r| rigid.transform_point3(*r) - *r)
        .collect();
    let stretch: Vec<DVec3> = rest
        .iter()
        .map(|r| DVec3::new(0.0, 0.0, 0.01 * r.z))
        .collect();
    let norm = |v: &[DVec3]| v.iter().map(|x| x.length_squared()).sum::<f64>().sqrt();
    let (e_ref, f_ref) = (
        nl.elastic_energy(&stretch),
        norm(&nl.elastic_forces(&stretch)),
    );
    let (e, f) = (nl.elastic_energy(&q), norm(&nl.elastic_forces(&q)));
    eprintln!(
        "conformed limb: tangent at rest − K ≤ {:.1e} of max |K|; rigid 90°: V = {e:.1e} J, \
         ‖f‖ = {f:.1e} N (a 1 % stretch: {e_ref:.1e} J, {f_ref:.1e} N)",
        worst / scale
    );
    assert!(worst < 1e-12 * scale);
    assert!(e < 1e-12 * e_ref && f < 1e-10 * f_ref);
}

/// The character lattice integrated over its muscles only (§3.3) and
/// trimmed is snapped after trimming: its bones lie on chains as the
/// untrimmed one's do, and every conformed cell carries the isoparametric
/// element of its own corners over its cut-cell rule.
#[test]
fn the_trimmed_character_lattice_is_snapped_and_conformed() {
    let c = plasticine::samples::bare("penguin").expect("sample");
    let (l, elements) =
        character_lattice_with_vertices(&c, 200, 0.5, 3).expect("quadrature levels");
    assert_eq!(l.binding, BoneBinding::Snapped);
    let covered_bones = (0..l.bones.len())
        .filter(|&b| covered(&l, b).is_ok())
        .count();
    let conformed: Vec<usize> = (0..l.cell_count()).filter(|&k| !l.is_box(k)).collect();
    eprintln!(
        "trimmed penguin lattice: {} vertices, {} cells ({} conformed), least Jacobian ratio \
         {:.3}, per bone {:?}, {covered_bones} of {} bones covered",
        l.vertex_count(),
        l.cell_count(),
        conformed.len(),
        min_quality(&l),
        counts(&l),
        l.bones.len()
    );
    for b in 0..l.bones.len() {
        if let Err(e) = covered(&l, b) {
            eprintln!("  {e}");
        }
    }
    assert!(covered_bones >= 8);
    assert!(min_quality(&l) >= MIN_JACOBIAN);
    for &k in &conformed {
        let e = elements.get(k);
        assert_eq!(e.corners, Some(l.cell_corners(k)));
        assert!(e.volume() > 0.0);
    }
    let body = FemBody::with_elements(
        l,
        vec![Material::FLESH; elements.len()],
        elements,
        FemSettings::default(),
    );
    assert!(body.global.lumped_mass.iter().all(|&m| m > 0.0));
}

/// The penguin's hips inside a solid block: a trunk bone up the grid line
/// from a vertex and two legs 0.88 cell long, oblique on all three axes,
/// ending near cell centres (the penguin's leg geometry, here surrounded by
/// cells).
fn hips_in_a_block() -> (Lattice, SnapReport) {
    let h = 0.1;
    let mut l = Lattice::grid_box(DVec3::ZERO, DVec3::splat(h), [6, 6, 6]);
    let root = DVec3::new(3.0, 3.0, 3.0) * h;
    let bones = vec![
        Bone {
            joint: 0,
            child: Some(1),
            head: root,
            tail: root + DVec3::new(0.0, 1.6, 0.0) * h,
        },
        Bone {
            joint: 0,
            child: Some(2),
            head: root,
            tail: root + DVec3::new(0.58, -0.46, 0.46) * h,
        },
        Bone {
            joint: 0,
            child: Some(3),
            head: root,
            tail: root + DVec3::new(-0.58, -0.46, 0.46) * h,
        },
    ];
    let report = l.snap_bones(bones, MIN_JACOBIAN);
    (l, report)
}

/// A leg's end vertex moved onto its tail alone turns a cell inside out;
/// with its free interior neighbours relaxed every bone lies on its chain,
/// every cell keeps its Jacobian guard, the boundary does not move (so the
/// conformed cells fill the block exactly: their isoparametric volumes sum
/// to the block's), and points of the bones, embedded at rest, follow the
/// legs swung about the hips exactly through implicit-Euler steps.
#[test]
fn relaxed_neighbours_put_short_oblique_legs_on_chains() {
    let (l, report) = hips_in_a_block();
    // The end vertex alone, on the grid lattice.
    let mut alone = Lattice::grid_box(l.origin, l.cell_size, l.dims);
    let box_volume = l.cell_size.element_product();
    let mut worst_alone = f64::INFINITY;
    for chain in &report.chains[1..] {
        let end = *chain.vertices.last().unwrap();
        let saved = alone.rest[end];
        alone.rest[end] = l.rest[end];
        for c in (0..alone.cell_count()).filter(|&c| alone.cells[c].contains(&end)) {
            worst_alone = worst_alone.min(cell_quality(&alone.cell_corners(c), box_volume));
        }
        alone.rest[end] = saved;
    }
    let moved: Vec<usize> = (0..l.vertex_count())
        .filter(|&a| l.rest[a] != l.grid_position(a))
        .collect();
    let boundary_moved = moved
        .iter()
        .filter(|&&a| l.vertex_coords[a].iter().any(|&x| x == 0 || x == 6))
        .count();
    let farthest = moved
        .iter()
        .map(|&a| (l.rest[a] - l.grid_position(a)).abs().max_element() / l.cell_size.x)
        .fold(0.0, f64::max);
    let elements = lattice_elements(&l);
    let volume: f64 = (0..l.cell_count()).map(|c| elements.get(c).volume()).sum();
    let block = 216.0 * box_volume;
    eprintln!(
        "hips in a block: end vertex alone → least Jacobian ratio {worst_alone:.3}; relaxed: \
         chains {:?}, {} free vertices relaxed per bone {:?}, {} vertices moved (≤ {farthest:.2} \
         cell, {boundary_moved} on the boundary), least ratio {:.3}, volume {volume:.6} vs {block:.6} m³",
        counts(&l),
        report.chains.iter().map(|c| c.relaxed).sum::<usize>(),
        report.chains.iter().map(|c| c.relaxed).collect::<Vec<_>>(),
        moved.len(),
        min_quality(&l)
    );
    assert!(worst_alone < 0.0, "{worst_alone}");
    for (b, chain) in report.chains.iter().enumerate() {
        covered(&l, b).unwrap();
        assert_eq!(chain.fell_back, 0, "bone {b}: {chain:?}");
    }
    assert!(report.chains[1].relaxed > 0 && report.chains[2].relaxed > 0);
    assert!(
        counts(&l)
            .iter()
            .all(|&(n, on, fell)| n > 0 && on == n && fell == 0)
    );
    assert!(min_quality(&l) >= MIN_JACOBIAN);
    assert!((report.min_jacobian - min_quality(&l)).abs() < 1e-15);
    assert_eq!(boundary_moved, 0);
    assert!(farthest < 0.9);
    assert!(
        (volume - block).abs() < 1e-12 * block,
        "{volume} vs {block}"
    );

    // The legs swung about the hips (the trunk still): 21 points per bone.
    let root = l.bones[0].head;
    let settings = FemSettings {
        linearization: Linearization::BlendedLocal { blend_width: 0.1 },
        ..FemSettings::default()
    };
    let mut body = FemBody::uniform(l, Material::FLESH, settings);
    let swing = |angle: f64| {
        let about = |axis: DVec3, a: f64| {
            DAffine3::from_translation(root)
                * DAffine3::from_quat(DQuat::from_axis_angle(axis, a))
                * DAffine3::from_translation(-root)
        };
        vec![
            DAffine3::IDENTITY,
            about(DVec3::X, angle),
            about(DVec3::new(1.0, 0.0, 0.3).normalize(), -angle),
        ]
    };
    let points: Vec<Vec<_>> = body
        .lattice
        .bones
        .iter()
        .map(|bone| {
            (0..=20)
                .map(|k| {
                    let p = bone.head.lerp(bone.tail, k as f64 / 20.0);
                    (p, body.lattice.embed(p).expect("bone point inside"))
                })
                .collect()
        })
        .collect();
    let mut worst = 0.0f64;
    for step in 1..=15 {
        let pose = swing(0.6 * step as f64 / 15.0);
        let r = body.step(&pose);
        assert!(r.converged(), "step {step}: {r:?}");
        for (b, bone_points) in points.iter().enumerate() {
            for (p, e) in bone_points {
                let moved = body.lattice.deform(e, &body.q);
                worst = worst.max(moved.distance(pose[b].transform_point3(*p)));
            }
        }
    }
    eprintln!(
        "  legs swung 0.6 rad over 15 steps: bone points off their posed bones ≤ {worst:.1e} m"
    );
    assert!(worst < 1e-12);
}
