//! `plasticine blendshape` as a user runs it: meshes in, a rig saved, a
//! blend solved to OBJ that keeps a bend's length where the linear blend
//! shrinks it, and bad input refused with the file named and nothing
//! written.

use crate::support::meshes::{capsule, obj_text};
use crate::support::plasticine;
use glam::Vec3;
use plasticine::io::{ImportedMesh, load_mesh};

const SEGMENTS: usize = 12;

/// A capsule along x from 0 to 0.6, and that capsule bent by `angle` about z
/// over its length (its axis onto a circular arc of the same length).
fn bar(angle: f32) -> ImportedMesh {
    bent(capsule(0.0, 0.6, 0.05, Vec3::ZERO, SEGMENTS, 4, 16), angle)
}

/// `mesh` (along x from 0 to 0.6) bent by `angle` about z over its length.
fn bent(mut mesh: ImportedMesh, angle: f32) -> ImportedMesh {
    if angle != 0.0 {
        let radius = 0.6 / angle;
        for p in &mut mesh.positions {
            let theta = p.x / radius;
            let r = radius - p.y;
            *p = Vec3::new(r * theta.sin(), radius - r * theta.cos(), p.z);
        }
    }
    mesh
}

/// `plasticine blendshape solve RIG --weights W --out OUT EXTRA…`, which
/// must succeed.
fn solve(rig: &str, weights: &str, out: &str, extra: &[&str]) {
    let mut args = vec![
        "blendshape",
        "solve",
        rig,
        "--weights",
        weights,
        "--out",
        out,
    ];
    args.extend_from_slice(extra);
    let (ok, stdout, stderr) = plasticine(&args);
    assert!(ok, "{stdout}{stderr}");
}

/// Length of the polyline through the capsule's ring centroids.
fn centre_line(mesh: &ImportedMesh) -> f32 {
    let rings = (mesh.positions.len() - 2) / SEGMENTS;
    let centres: Vec<Vec3> = (0..rings)
        .map(|k| {
            (0..SEGMENTS)
                .map(|j| mesh.positions[1 + k * SEGMENTS + j])
                .sum::<Vec3>()
                / SEGMENTS as f32
        })
        .collect();
    centres.windows(2).map(|w| w[0].distance(w[1])).sum()
}

#[test]
fn a_rig_from_meshes_blends_a_bend_without_shrinking_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    std::fs::write(path("straight.obj"), obj_text(&bar(0.0))).unwrap();
    std::fs::write(path("curled.obj"), obj_text(&bar(std::f32::consts::PI))).unwrap();
    let (ok, stdout, stderr) = plasticine(&[
        "blendshape",
        "import",
        &path("straight.obj"),
        &path("curled.obj"),
        "--out",
        &path("rig.ron"),
    ]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("2 shapes"), "{stdout}");
    for (flag, out) in [(&[][..], "physical.obj"), (&["--linear"][..], "linear.obj")] {
        solve(&path("rig.ron"), "0.5,0.5", &path(out), flag);
    }
    let straight = bar(0.0);
    let physical = load_mesh(&dir.path().join("physical.obj")).unwrap();
    let linear = load_mesh(&dir.path().join("linear.obj")).unwrap();
    // The base's vertices and triangles, in its order.
    assert_eq!(physical.positions.len(), straight.positions.len());
    assert_eq!(physical.triangles, straight.triangles);
    let length = centre_line(&straight);
    let (l_phys, l_lin) = (centre_line(&physical), centre_line(&linear));
    assert!(
        (l_phys - length).abs() <= 0.01 * length,
        "physical {l_phys} of {length}"
    );
    assert!(l_lin < 0.95 * length, "linear {l_lin} of {length}");
}

/// Ma §3.1's long-spring splitting: a capsule of four long sections
/// (side edges 0.15 m against 0.026 m around) imported with
/// `--split-longer-than 2` gains vertices after the base's; its blend
/// keeps the bend's length (the targets' mean), and the OBJ keeps the base's vertices
/// first. A length of zero is refused, naming the flag, and nothing is
/// written.
#[test]
fn long_edges_split_on_import_keep_the_base_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let coarse = |angle| bent(capsule(0.0, 0.6, 0.05, Vec3::ZERO, SEGMENTS, 4, 4), angle);
    let straight = coarse(0.0);
    std::fs::write(path("straight.obj"), obj_text(&straight)).unwrap();
    std::fs::write(path("curled.obj"), obj_text(&coarse(std::f32::consts::PI))).unwrap();
    let import = |times: &str, out: &str| {
        plasticine(&[
            "blendshape",
            "import",
            &path("straight.obj"),
            &path("curled.obj"),
            "--split-longer-than",
            times,
            "--out",
            &path(out),
        ])
    };
    let (ok, stdout, stderr) = import("0", "refused.ron");
    assert!(
        !ok && stderr.contains("--split-longer-than"),
        "{stdout}{stderr}"
    );
    assert!(!dir.path().join("refused.ron").exists());
    let (ok, stdout, stderr) = import("2", "rig.ron");
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("vertices added"), "{stdout}");
    let out = path("physical.obj");
    solve(&path("rig.ron"), "0.5,0.5", &out, &[]);
    let mut physical = load_mesh(std::path::Path::new(&out)).unwrap();
    let n = straight.positions.len();
    assert!(physical.positions.len() > n, "no vertex was added");
    // The 0.15 m side edges are cut (the limit is twice the median edge).
    let longest = physical
        .triangles
        .iter()
        .flat_map(|t| (0..3).map(move |k| (t[k], t[(k + 1) % 3])))
        .map(|(a, b)| physical.positions[a as usize].distance(physical.positions[b as usize]))
        .fold(0.0f32, f32::max);
    assert!(longest < 0.1, "an edge of {longest} m is left");
    // The blend's centre line is the targets' mean: four straight sections
    // make the curled one's chords 2.6 % shorter than the straight's.
    physical.positions.truncate(n);
    let curled = coarse(std::f32::consts::PI);
    let length = 0.5 * (centre_line(&straight) + centre_line(&curled));
    let l_phys = centre_line(&physical);
    assert!(
        (l_phys - length).abs() <= 0.01 * length,
        "physical {l_phys} of {length}"
    );
}

#[test]
fn meshes_that_do_not_match_are_refused_naming_the_file_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    std::fs::write(path("straight.obj"), obj_text(&bar(0.0))).unwrap();
    let mut other = bar(1.0);
    other.triangles.swap(5, 40);
    std::fs::write(path("odd.obj"), obj_text(&other)).unwrap();
    let (ok, _, stderr) = plasticine(&[
        "blendshape",
        "import",
        &path("straight.obj"),
        &path("odd.obj"),
        "--out",
        &path("rig.ron"),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("odd.obj") && stderr.contains("face 5"),
        "{stderr}"
    );
    assert!(!dir.path().join("rig.ron").exists());

    // A good rig, then weights off the simplex: refused, no shape written.
    std::fs::write(path("bent.obj"), obj_text(&bar(1.0))).unwrap();
    let (ok, _, stderr) = plasticine(&[
        "blendshape",
        "import",
        &path("straight.obj"),
        &path("bent.obj"),
        "--out",
        &path("rig.ron"),
    ]);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = plasticine(&[
        "blendshape",
        "solve",
        &path("rig.ron"),
        "--weights",
        "0.7,0.7",
        "--out",
        &path("shape.obj"),
    ]);
    assert!(!ok);
    assert!(stderr.contains("sum to 1.4"), "{stderr}");
    assert!(!dir.path().join("shape.obj").exists());
}

#[test]
fn an_obstacle_on_the_command_line_dents_the_blend() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    std::fs::write(path("straight.obj"), obj_text(&bar(0.0))).unwrap();
    std::fs::write(path("bent.obj"), obj_text(&bar(1.0))).unwrap();
    let (ok, _, stderr) = plasticine(&[
        "blendshape",
        "import",
        &path("straight.obj"),
        &path("bent.obj"),
        "--out",
        &path("rig.ron"),
    ]);
    assert!(ok, "{stderr}");
    // A ball 2 cm into the top of the bar, a third of the way along.
    let free = {
        let (ok, _, stderr) = plasticine(&[
            "blendshape",
            "solve",
            &path("rig.ron"),
            "--weights",
            "1,0",
            "--out",
            &path("free.obj"),
        ]);
        assert!(ok, "{stderr}");
        load_mesh(&dir.path().join("free.obj")).unwrap()
    };
    let top = free
        .positions
        .iter()
        .copied()
        .filter(|p| (p.x - 0.2).abs() < 0.03)
        .max_by(|a, b| a.y.total_cmp(&b.y))
        .unwrap();
    let (centre, radius) = (top + Vec3::new(0.0, 0.03 - 0.02, 0.0), 0.03f32);
    let ball = format!("sphere:{},{},{},{radius}", centre.x, centre.y, centre.z);
    // The blend pushed by `obstacle`, written to `out`, and how far its top
    // went down.
    let pushed_by = |obstacle: &str, out: &str| {
        let (ok, stdout, stderr) = plasticine(&[
            "blendshape",
            "solve",
            &path("rig.ron"),
            "--weights",
            "1,0",
            "--obstacle",
            obstacle,
            "--out",
            &path(out),
        ]);
        assert!(ok, "{stderr}");
        assert!(stdout.contains("held on the obstacles"), "{stdout}");
        let pushed = load_mesh(&dir.path().join(out)).unwrap();
        let dent = free
            .positions
            .iter()
            .zip(&pushed.positions)
            .map(|(a, b)| a.y - b.y)
            .fold(f32::MIN, f32::max);
        (pushed, dent)
    };
    let (pushed, dent) = pushed_by(&ball, "pushed.obj");
    let inside = pushed
        .positions
        .iter()
        .map(|p| radius - p.distance(centre))
        .fold(f32::MIN, f32::max);
    assert!(inside <= 1e-6, "a vertex is {inside} m inside the ball");
    assert!(dent >= 0.015, "the top went down {dent} m");
    // The same ball as an imported closed mesh (`mesh:FILE`, its queries
    // through the AABB tree): no pushed vertex inside it, the same dent.
    let tessellated = plasticine::shape::MuscleShape::sphere(radius).tessellate(48, 32);
    let ball_mesh = ImportedMesh {
        positions: tessellated.positions.iter().map(|p| *p + centre).collect(),
        triangles: tessellated.indices.clone(),
    };
    std::fs::write(path("ball.obj"), obj_text(&ball_mesh)).unwrap();
    let (meshed, dent) = pushed_by(&format!("mesh:{}", path("ball.obj")), "meshed.obj");
    let solid =
        plasticine::fem::MeshSolid::new(&ball_mesh.positions, &ball_mesh.triangles).unwrap();
    let inside = meshed
        .positions
        .iter()
        .map(|p| p.as_dvec3())
        .filter(|p| solid.contains(*p))
        .map(|p| solid.distance(p))
        .fold(0.0, f64::max);
    assert!(inside <= 1e-5, "a vertex is {inside} m inside the mesh");
    assert!(dent >= 0.015, "the top went down {dent} m under the mesh");
    // A malformed obstacle is refused before anything is solved.
    let (ok, _, stderr) = plasticine(&[
        "blendshape",
        "solve",
        &path("rig.ron"),
        "--weights",
        "1,0",
        "--obstacle",
        "sphere:0,0,0,-1",
        "--out",
        &path("bad.obj"),
    ]);
    assert!(
        !ok && stderr.contains("radius -1 is not positive"),
        "{stderr}"
    );
    assert!(!dir.path().join("bad.obj").exists());
}

/// A GLB of `base` with one morph target per mesh of `targets` (dense
/// displacements), named in `extras.targetNames`, under a node turned a
/// quarter about z: the targets' displacements turn with it.
fn morph_glb(
    base: &ImportedMesh,
    targets: &[(&str, ImportedMesh)],
    count_override: Option<usize>,
) -> Vec<u8> {
    let mut bin = Vec::new();
    let push = |v: Vec3, bin: &mut Vec<u8>| {
        for c in v.to_array() {
            bin.extend_from_slice(&c.to_le_bytes());
        }
    };
    for p in &base.positions {
        push(*p, &mut bin);
    }
    let vertex_bytes = bin.len();
    for (_, t) in targets {
        for (p, q) in base.positions.iter().zip(&t.positions) {
            push(*q - *p, &mut bin);
        }
    }
    let indices_at = bin.len();
    for t in &base.triangles {
        for &i in t {
            bin.extend_from_slice(&i.to_le_bytes());
        }
    }
    let n = base.positions.len();
    let mut accessors = vec![
        serde_json::json!({"bufferView": 0, "componentType": 5126, "count": n, "type": "VEC3"}),
    ];
    let mut views =
        vec![serde_json::json!({"buffer": 0, "byteOffset": 0, "byteLength": vertex_bytes})];
    for k in 0..targets.len() {
        views.push(serde_json::json!({"buffer": 0, "byteOffset": vertex_bytes * (k + 1), "byteLength": vertex_bytes}));
        accessors.push(serde_json::json!({"bufferView": k + 1, "componentType": 5126, "count": count_override.unwrap_or(n), "type": "VEC3"}));
    }
    views.push(serde_json::json!({"buffer": 0, "byteOffset": indices_at, "byteLength": bin.len() - indices_at}));
    accessors.push(serde_json::json!({"bufferView": targets.len() + 1, "componentType": 5125, "count": 3 * base.triangles.len(), "type": "SCALAR"}));
    let doc = serde_json::json!({
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0, "rotation": [0.0, 0.0, std::f32::consts::FRAC_1_SQRT_2, std::f32::consts::FRAC_1_SQRT_2]}],
        "meshes": [{
            "primitives": [{
                "attributes": {"POSITION": 0},
                "indices": targets.len() + 1,
                "targets": (1..=targets.len()).map(|k| serde_json::json!({"POSITION": k})).collect::<Vec<_>>()
            }],
            "extras": {"targetNames": targets.iter().map(|(name, _)| *name).collect::<Vec<_>>()}
        }],
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [{"byteLength": bin.len()}]
    });
    crate::support::meshes::glb(&doc, &bin)
}

#[test]
fn a_gltf_mesh_with_morph_targets_is_a_rig() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let curl = bar(std::f32::consts::PI);
    std::fs::write(
        path("bar.glb"),
        morph_glb(&bar(0.0), &[("curl", curl.clone())], None),
    )
    .unwrap();
    let (ok, stdout, stderr) = plasticine(&[
        "blendshape",
        "import",
        &path("bar.glb"),
        "--out",
        &path("rig.ron"),
    ]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("2 shapes"), "{stdout}");
    let rig = plasticine::blendshape::load_rig(&dir.path().join("rig.ron")).unwrap();
    assert_eq!(rig.targets[0].name, "curl");
    // The node's quarter turn about z applies to the target's displacements
    // too: the target is the curled bar, turned.
    let turn = |p: Vec3| Vec3::new(-p.y, p.x, p.z);
    let worst = rig.targets[0]
        .positions
        .iter()
        .zip(&curl.positions)
        .map(|(a, b)| a.distance(turn(*b)))
        .fold(0.0f32, f32::max);
    assert!(worst < 1e-5, "target off by {worst} m");
    let (ok, _, stderr) = plasticine(&[
        "blendshape",
        "solve",
        &path("rig.ron"),
        "--weights",
        "0.5,0.5",
        "--out",
        &path("half.obj"),
    ]);
    assert!(ok, "{stderr}");
    let half = load_mesh(&dir.path().join("half.obj")).unwrap();
    let length = centre_line(&bar(0.0));
    assert!((centre_line(&half) - length).abs() <= 0.01 * length);

    // A target with the wrong number of displacements names its accessor.
    std::fs::write(
        path("odd.glb"),
        morph_glb(&bar(0.0), &[("curl", curl)], Some(10)),
    )
    .unwrap();
    let (ok, _, stderr) = plasticine(&[
        "blendshape",
        "import",
        &path("odd.glb"),
        "--out",
        &path("odd.ron"),
    ]);
    assert!(
        !ok && stderr.contains("targets[0].POSITION") && stderr.contains("10 displacements"),
        "{stderr}"
    );
    assert!(!dir.path().join("odd.ron").exists());
    // A plain mesh with no targets and none given is refused.
    std::fs::write(path("plain.obj"), obj_text(&bar(0.0))).unwrap();
    let (ok, _, stderr) = plasticine(&[
        "blendshape",
        "import",
        &path("plain.obj"),
        "--out",
        &path("plain.ron"),
    ]);
    assert!(!ok && stderr.contains("no morph targets"), "{stderr}");
}

#[test]
fn a_target_that_passes_through_itself_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    std::fs::write(path("straight.obj"), obj_text(&bar(0.0))).unwrap();
    let mut folded = bar(0.0);
    // The far pole pushed back through the bar's side.
    let last = folded.positions.len() - 1;
    folded.positions[last] = Vec3::new(0.3, 0.0, -0.2);
    std::fs::write(path("folded.obj"), obj_text(&folded)).unwrap();
    let (_, _, stderr) = plasticine(&[
        "blendshape",
        "import",
        &path("straight.obj"),
        &path("folded.obj"),
        "--out",
        &path("rig.ron"),
    ]);
    assert!(
        stderr.contains("target 'folded' passes through itself"),
        "{stderr}"
    );
    assert!(!stderr.contains("base passes through itself"), "{stderr}");
}
