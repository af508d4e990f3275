//! Importing a mesh as FEM flesh (`plasticine fem-import`): the
//! inside test, the lattice built around a mesh, a FEM body on it driven by
//! a skeleton, and the command end to end (the readers are in
//! `tests/mesh_import.rs`). Run with `--nocapture` for the numbers.

use crate::support::meshes;

use crate::support::plasticine;
use glam::{DVec3, Quat, Vec3};
use meshes::{capsule, limb_mesh, mesh_glb, obj_text, sphere};
use plasticine::character::{Character, Flesh, Posture};
use plasticine::fem::{
    Bone, FemBody, FemSettings, Lattice, Linearization, Material, MeshLatticeError, MeshSolid,
    Twist, bone_transforms,
};
use plasticine::fem::{MeshImport, fem_character_from_mesh};
use plasticine::io::load_mesh;
use rand::{Rng, SeedableRng};
use std::path::Path;

// ---------------------------------------------------------- inside test --

#[test]
fn winding_number_classifies_points_of_a_sphere_and_a_box() {
    let mesh = sphere(1.0, 24);
    let solid = MeshSolid::new(&mesh.positions, &mesh.triangles).unwrap();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(7);
    let mut rand = || rng.random::<f64>();
    let (mut inside_min, mut outside_max) = (f64::MAX, 0f64);
    for _ in 0..200 {
        let d = DVec3::new(rand() - 0.5, rand() - 0.5, rand() - 0.5).normalize();
        // The tessellated sphere lies between cos(π/24)·r and r.
        let w_in = solid.winding_number(d * 0.95 * rand());
        let w_out = solid.winding_number(d * (1.02 + 2.0 * rand()));
        inside_min = inside_min.min(w_in);
        outside_max = outside_max.max(w_out.abs());
    }
    eprintln!("sphere: winding number ≥ {inside_min:.12} inside, |w| ≤ {outside_max:.2e} outside");
    assert!((inside_min - 1.0).abs() < 1e-9);
    assert!(outside_max < 1e-9);

    // A unit box of 12 triangles, inside out (clockwise): w = −1 inside.
    let positions: Vec<Vec3> = (0..8)
        .map(|c| Vec3::new((c & 1) as f32, (c >> 1 & 1) as f32, (c >> 2 & 1) as f32))
        .collect();
    let faces = [
        [0, 1, 3, 2],
        [4, 6, 7, 5],
        [0, 4, 5, 1],
        [2, 3, 7, 6],
        [0, 2, 6, 4],
        [1, 5, 7, 3],
    ];
    let triangles: Vec<[u32; 3]> = faces
        .iter()
        .flat_map(|f| [[f[0], f[1], f[2]], [f[0], f[2], f[3]]])
        .collect();
    let solid = MeshSolid::new(&positions, &triangles).unwrap();
    let w = solid.winding_number(DVec3::splat(0.5));
    assert!((w.abs() - 1.0).abs() < 1e-12, "{w}");
    assert!(solid.contains(DVec3::new(0.01, 0.99, 0.5)));
    assert!(!solid.contains(DVec3::new(1.01, 0.5, 0.5)));
    assert!(!solid.contains(DVec3::new(0.5, -0.001, 0.5)));
}

/// Voxelization against the winding number, cell by cell, on a closed
/// sphere, on one with a hole (ten triangles cut out), and on two spheres
/// that overlap (a self-intersecting union, where parity would call the
/// overlap outside): the signed crossing counts of the three axes, with the
/// winding number where they disagree, keep exactly the cells whose centres
/// are inside, apart from cells kept because the surface passes within half
/// a diagonal.
#[test]
fn voxelization_agrees_with_the_winding_number_with_holes_and_overlaps() {
    for case in ["closed", "open", "overlapping"] {
        let mut mesh = sphere(0.5, 20);
        if case == "open" {
            let k = mesh.triangles.len() / 2;
            mesh.triangles.drain(k..k + 10);
        }
        if case == "overlapping" {
            let other = sphere(0.4, 16);
            let n = mesh.positions.len() as u32;
            mesh.positions.extend(
                other
                    .positions
                    .iter()
                    .map(|p| *p + Vec3::new(0.3, 0.1, 0.0)),
            );
            mesh.triangles
                .extend(other.triangles.iter().map(|t| t.map(|i| i + n)));
        }
        let solid = MeshSolid::new(&mesh.positions, &mesh.triangles).unwrap();
        let lattice = Lattice::from_solid(&solid, Vec::new(), 0.043, 0.5).unwrap();
        let h = lattice.cell_size.x;
        let reach = 0.5 * h * 3f64.sqrt() * (1.0 + 1e-6);
        let (mut inside, mut near) = (0, 0);
        for k in 0..lattice.dims[2] {
            for j in 0..lattice.dims[1] {
                for i in 0..lattice.dims[0] {
                    let centre =
                        lattice.origin + (DVec3::new(i as f64, j as f64, k as f64) + 0.5) * h;
                    let kept = lattice.cell_at([i, j, k]).is_some();
                    if solid.distance(centre) <= reach {
                        near += 1;
                        assert!(kept, "cell {i},{j},{k} touches the surface");
                    } else {
                        inside += usize::from(kept);
                        assert_eq!(kept, solid.contains(centre), "cell {i},{j},{k}, {case}");
                    }
                }
            }
        }
        eprintln!(
            "{case} sphere r = 0.5 m, {} triangles: {inside} cells inside and {near} near the surface, of {}",
            mesh.triangles.len(),
            lattice.dims.iter().product::<usize>()
        );
        assert!(inside > 200);
    }
}

// --------------------------------------------------------------- lattice --

fn limb_bones() -> Vec<Bone> {
    let (s, e, w) = (
        DVec3::new(0.0, 1.0, 0.0),
        DVec3::new(0.3, 1.0, 0.0),
        DVec3::new(0.6, 1.0, 0.0),
    );
    vec![
        Bone {
            joint: 0,
            child: Some(1),
            head: s,
            tail: e,
        },
        Bone {
            joint: 1,
            child: Some(2),
            head: e,
            tail: w,
        },
    ]
}

/// The lattice around the limb: every mesh vertex embeds, the trilinear
/// weights give it back, every active cell is inside or within half a
/// diagonal of the surface, every inside cell centre is active, every bone
/// holds vertices, and the count is near the target.
#[test]
fn the_lattice_of_a_mesh_covers_it_and_hugs_it() {
    let mesh = limb_mesh();
    let solid = MeshSolid::new(&mesh.positions, &mesh.triangles).unwrap();
    for target in [60, 200, 800] {
        let lattice =
            Lattice::from_mesh(&mesh.positions, &mesh.triangles, limb_bones(), target).unwrap();
        let h = lattice.cell_size.x;
        let zero = vec![DVec3::ZERO; lattice.vertex_count()];
        let mut worst = 0f64;
        for p in &solid.positions {
            let e = lattice
                .embed(*p)
                .expect("every mesh vertex is in an active cell");
            worst = worst.max(lattice.deform(&e, &zero).distance(*p));
        }
        assert!(worst < 1e-9, "trilinear reconstruction off by {worst}");
        let reach = 0.5 * h * 3f64.sqrt() * (1.0 + 1e-6);
        let mut inside_cells = 0;
        for c in &lattice.cell_coords {
            let centre =
                lattice.origin + (DVec3::new(c[0] as f64, c[1] as f64, c[2] as f64) + 0.5) * h;
            let inside = solid.contains(centre);
            inside_cells += usize::from(inside);
            let near_bone = limb_bones().iter().any(|b| b.distance(centre) <= reach);
            assert!(
                inside || near_bone || solid.distance(centre) <= reach,
                "cell {c:?} is far from the mesh"
            );
        }
        // Conversely every grid cell whose centre is inside is active.
        for k in 0..lattice.dims[2] {
            for j in 0..lattice.dims[1] {
                for i in 0..lattice.dims[0] {
                    let centre =
                        lattice.origin + (DVec3::new(i as f64, j as f64, k as f64) + 0.5) * h;
                    if solid.contains(centre) {
                        assert!(
                            lattice.cell_at([i, j, k]).is_some(),
                            "inside cell {i},{j},{k} dropped"
                        );
                    }
                }
            }
        }
        for b in 0..2 {
            let n = lattice
                .bone_of_vertex
                .iter()
                .filter(|&&v| v == Some(b))
                .count();
            assert!(n >= 2, "bone {b} binds {n} vertices");
        }
        let n = lattice.vertex_count();
        eprintln!(
            "limb lattice for {target}: {n} vertices, {} cells ({inside_cells} with the centre inside) of {h:.4} m, \
             reconstruction error {worst:.1e} m",
            lattice.cell_count()
        );
        assert!(
            n.abs_diff(target) as f64 <= 0.3 * target as f64,
            "{n} vertices for {target}"
        );
    }
}

#[test]
fn lattice_errors_name_the_problem() {
    let mesh = limb_mesh();
    let e = Lattice::from_mesh(&[], &[], limb_bones(), 200).unwrap_err();
    assert!(matches!(e, MeshLatticeError::Empty { .. }), "{e}");
    let mut far = limb_bones();
    far[1].head += DVec3::new(0.0, 5.0, 0.0);
    far[1].tail += DVec3::new(0.0, 5.0, 0.0);
    let e = Lattice::from_mesh(&mesh.positions, &mesh.triangles, far, 200).unwrap_err();
    assert_eq!(e, MeshLatticeError::BoneOutside { bone: 1, joint: 1 });
    let e = Lattice::from_mesh(&mesh.positions, &mesh.triangles, limb_bones(), 4).unwrap_err();
    assert!(matches!(e, MeshLatticeError::Degenerate(_)), "{e}");
    let e = Lattice::from_mesh(&mesh.positions, &[[0, 1, 99_999]], limb_bones(), 200).unwrap_err();
    assert!(e.to_string().contains("99999"), "{e}");
}

// ------------------------------------------------------------- FEM body --

fn limb_character() -> Character {
    plasticine::io::load_character(Path::new("assets/limb_skeleton.ron")).unwrap()
}

fn import_limb(target: usize) -> Character {
    let mesh = limb_mesh();
    let options = MeshImport {
        name: "limb".into(),
        source: "limb.obj".into(),
        scale: 1.0,
        translate: Vec3::ZERO,
        target_vertices: Some(target),
        young: None,
        poisson: None,
        density: None,
    };
    let (c, report) = fem_character_from_mesh(
        &mesh.positions,
        &mesh.triangles,
        &limb_character(),
        &options,
    )
    .unwrap();
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
    assert_eq!(report.embedded_vertices, mesh.positions.len());
    c
}

fn body_of(c: &Character, lattice: Lattice) -> FemBody {
    let fem = c.flesh.fem().unwrap();
    let h = lattice.cell_size.x;
    let settings = FemSettings {
        gravity: DVec3::ZERO,
        linearization: Linearization::BlendedLocal { blend_width: 0.05 },
        cg_tolerance: 1e-10,
        cg_max_iterations: 20_000,
        // A line of bone vertices leaves the flesh free to turn about it;
        // the twist constraint (§4.6) makes the bones three-dimensional.
        twist: Some(Twist {
            stiffness: 10.0 * fem.young / (h * h),
            radius: h,
        }),
        ..FemSettings::default()
    };
    let material = Material {
        young: fem.young,
        poisson: fem.poisson,
        density: fem.density,
    };
    FemBody::uniform(lattice, material, settings)
}

/// The imported limb on a FEM body: a rigid motion of the whole skeleton
/// moves the embedded mesh rigidly (static solve, no gravity); stepping
/// through an elbow bend keeps every bone vertex exactly on its bone, and
/// after settling the hand end of the mesh rides on the forearm.
#[test]
fn an_imported_mesh_moves_with_the_skeleton() {
    let c = import_limb(200);
    let mesh = match &c.flesh {
        Flesh::Fem(f) => f.embedded_mesh.clone().unwrap(),
        Flesh::Kinematic | Flesh::Modal(_) => unreachable!(),
    };
    let bones = plasticine::fem::skeleton_bones(&c);
    let lattice = Lattice::from_mesh(&mesh.positions, &mesh.triangles, bones.clone(), 200).unwrap();
    let embeddings: Vec<_> = mesh
        .positions
        .iter()
        .map(|p| lattice.embed(p.as_dvec3()).unwrap())
        .collect();
    let mut body = body_of(&c, lattice);

    // Rigid: turn the root 50° about (1, 2, 3) and move it.
    let mut posture = c.skeleton.rest_posture();
    posture.root_translation = Vec3::new(0.2, -0.1, 0.3);
    let (axis, angle) = (Vec3::new(1.0, 2.0, 3.0).normalize(), 50f32.to_radians());
    let euler = Quat::from_axis_angle(axis, angle).to_euler(glam::EulerRot::XYZ);
    posture.angles[0] = Vec3::new(euler.0, euler.1, euler.2);
    let t = bone_transforms(&c, &bones, &posture);
    assert!(
        t[0].abs_diff_eq(t[1], 1e-6),
        "one rigid motion for both bones"
    );
    let report = body.solve_static(&t, None);
    assert!(report.converged(), "{report:?}");
    let worst = embeddings
        .iter()
        .zip(&mesh.positions)
        .map(|(e, p)| {
            body.lattice
                .deform(e, &body.q)
                .distance(t[0].transform_point3(p.as_dvec3()))
        })
        .fold(0.0, f64::max);
    eprintln!("rigid motion of the skeleton: mesh off the rigid motion by at most {worst:.2e} m");
    assert!(worst < 1e-6);

    // Dynamic: bend the elbow 60° over 0.3 s, stepping at 90 Hz.
    let mut body = body_of(&c, body.lattice.clone());
    let bend = |theta: f32| -> Posture {
        let mut p = c.skeleton.rest_posture();
        p.angles[1] = Vec3::new(0.0, 0.0, theta);
        p
    };
    let mut t = Vec::new();
    for k in 1..=27 {
        let theta = 60f32.to_radians() * (k as f32 / 27.0).min(1.0);
        t = bone_transforms(&c, &bones, &bend(theta));
        body.step(&t);
        for (a, target) in body.pin_targets(&t).iter().enumerate() {
            if body.lattice.bone_of_vertex[a].is_some() {
                assert_eq!(body.q[a], target.unwrap(), "bone vertex {a} off its bone");
            }
        }
    }
    assert!(body.q.iter().all(|q| q.is_finite()));
    let report = body.solve_static(&t, None);
    assert!(report.converged(), "{report:?}");
    // Mesh vertices past 0.45 m (the hand half of the forearm) against the
    // forearm's rigid motion, relative to how far they moved.
    let (mut worst, mut moved) = (0f64, f64::MAX);
    for (e, p) in embeddings.iter().zip(&mesh.positions) {
        if p.x > 0.45 {
            let p = p.as_dvec3();
            let rigid = t[1].transform_point3(p);
            worst = worst.max(body.lattice.deform(e, &body.q).distance(rigid));
            moved = moved.min(rigid.distance(p));
        }
    }
    eprintln!(
        "elbow bent 60°: hand-end mesh vertices moved ≥ {moved:.3} m, off the forearm's motion by ≤ {worst:.2e} m"
    );
    assert!(moved > 0.15);
    assert!(worst < 0.05 * moved, "{worst}");
}

// ------------------------------------------------------------------ CLI --

#[test]
fn fem_import_writes_a_character_that_info_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let obj = dir.path().join("arm.obj");
    std::fs::write(&obj, obj_text(&limb_mesh())).unwrap();
    let out = dir.path().join("arm.ron");
    let (ok, stdout, stderr) = plasticine(&[
        "fem-import",
        obj.to_str().unwrap(),
        "--skeleton",
        "assets/limb_skeleton.ron",
        "--out",
        out.to_str().unwrap(),
        "--vertices",
        "150",
        "--young",
        "20000",
    ]);
    assert!(ok, "{stderr}");
    eprintln!("{stdout}");
    assert!(stdout.contains("embedded all"), "{stdout}");
    assert!(stdout.contains("2 bones bound"), "{stdout}");
    let (ok, info, stderr) = plasticine(&["info", out.to_str().unwrap()]);
    assert!(ok, "{stderr}");
    assert!(info.contains("'arm' is valid"), "{info}");
    assert!(
        info.contains("embedded mesh 'arm.obj': 306 vertices, 608 triangles"),
        "{info}"
    );
    let c = plasticine::io::load_character(&out).unwrap();
    let fem = c.flesh.fem().unwrap();
    assert_eq!(fem.young, 20000.0);
    assert_eq!(fem.target_vertices, 150);
    let m = fem.embedded_mesh.as_ref().unwrap();
    assert_eq!(m.source, "arm.obj");
    assert_eq!(m.triangles.len(), limb_mesh().triangles.len());
    assert_eq!(c.key_postures.len(), 4);
    assert!(c.muscles.is_empty() && c.skins.is_empty());
}

#[test]
fn fem_import_refuses_bad_input_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.ron");
    let run = |mesh: &Path, extra: &[&str]| {
        let mut args = vec![
            "fem-import",
            mesh.to_str().unwrap(),
            "--skeleton",
            "assets/limb_skeleton.ron",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        plasticine(&args)
    };
    // A malformed OBJ names its line.
    let bad = dir.path().join("bad.obj");
    std::fs::write(&bad, "v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 7\n").unwrap();
    let (ok, _, stderr) = run(&bad, &[]);
    assert!(
        !ok && stderr.contains("bad.obj:4:") && stderr.contains("out of range"),
        "{stderr}"
    );
    // A mesh in millimetres: the hint says --scale 1e-3.
    let mut mm = limb_mesh();
    mm.positions.iter_mut().for_each(|p| *p *= 1000.0);
    let f = dir.path().join("mm.obj");
    std::fs::write(&f, obj_text(&mm)).unwrap();
    let (ok, _, stderr) = run(&f, &[]);
    assert!(
        !ok && stderr.contains("lies entirely outside the mesh"),
        "{stderr}"
    );
    assert!(stderr.contains("--scale 1.000e-3"), "{stderr}");
    // ... which fits with --scale.
    let (ok, stdout, stderr) = run(&f, &["--scale", "0.001"]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("embedded all"), "{stdout}");
    // A mesh beside the skeleton: the hint says --translate, naming the bone.
    let mut away = limb_mesh();
    away.positions.iter_mut().for_each(|p| p.z += 2.0);
    let f = dir.path().join("away.obj");
    std::fs::write(&f, obj_text(&away)).unwrap();
    let (ok, _, stderr) = run(&f, &[]);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("'shoulder' to 'elbow'")
            && stderr.contains("--translate 0.000,0.000,-2.000"),
        "{stderr}"
    );
    let (ok, _, stderr) = run(&f, &["--translate", "0,0,-2"]);
    assert!(ok, "{stderr}");
    // A joint outside a shorter mesh is a warning only.
    let short = capsule(-0.02, 0.45, 0.06, Vec3::new(0.0, 1.0, 0.0), 12, 3, 6);
    let f = dir.path().join("short.obj");
    std::fs::write(&f, obj_text(&short)).unwrap();
    let (ok, _, stderr) = run(&f, &[]);
    assert!(ok, "{stderr}");
    assert!(
        stderr.contains("warning: 1 of 3 joints lie outside the mesh: 'wrist'"),
        "{stderr}"
    );
    // Unknown format, missing file, bad material.
    let (ok, _, stderr) = run(&dir.path().join("x.stl"), &[]);
    assert!(
        !ok && stderr.contains("expected a .obj, .glb or .gltf"),
        "{stderr}"
    );
    let (ok, _, stderr) = run(&dir.path().join("missing.obj"), &[]);
    assert!(
        !ok && stderr.contains("missing.obj: cannot open"),
        "{stderr}"
    );
    let good = dir.path().join("good.obj");
    std::fs::write(&good, obj_text(&limb_mesh())).unwrap();
    let (ok, _, stderr) = run(&good, &["--poisson", "0.5"]);
    assert!(!ok && stderr.contains("poisson"), "{stderr}");
    std::fs::remove_file(&out).unwrap();
    let (ok, _, _) = run(&good, &["--vertices", "3"]);
    assert!(!ok);
    assert!(!out.exists(), "nothing written on failure");
}

/// The sample assets (written by `regenerate_sample_assets`) import, the
/// OBJ and the GLB alike.
#[test]
fn the_sample_limb_assets_import_alike() {
    let obj = load_mesh(Path::new("assets/limb.obj")).unwrap();
    let glb = load_mesh(Path::new("assets/limb.glb")).unwrap();
    assert_eq!(obj.triangles, glb.triangles);
    let worst = obj
        .positions
        .iter()
        .zip(&glb.positions)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    assert!(worst < 1e-6, "{worst}");
    let dir = tempfile::tempdir().unwrap();
    let mut lines = Vec::new();
    for f in ["assets/limb.obj", "assets/limb.glb"] {
        let out = dir.path().join("limb.ron");
        let (ok, stdout, stderr) = plasticine(&[
            "fem-import",
            f,
            "--skeleton",
            "assets/limb_skeleton.ron",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(ok, "{stderr}");
        assert!(stderr.is_empty(), "no warnings: {stderr}");
        lines.push(stdout.lines().nth(1).unwrap().to_string());
    }
    assert_eq!(lines[0], lines[1]);
}

/// Writes assets/limb.obj and assets/limb.glb (run with `--ignored` after
/// changing the limb).
#[test]
#[ignore]
fn regenerate_sample_assets() {
    let mesh = limb_mesh();
    std::fs::write("assets/limb.obj", obj_text(&mesh)).unwrap();
    std::fs::write("assets/limb.glb", mesh_glb(&mesh, Vec3::ZERO)).unwrap();
    std::fs::write(
        "assets/limb_flexed.obj",
        obj_text(&crate::support::meshes::limb_flexed()),
    )
    .unwrap();
}
