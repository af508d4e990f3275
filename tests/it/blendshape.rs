//! `plasticine blendshape` as a user runs it: meshes in, a rig saved, a
//! blend solved to OBJ that keeps a bend's length where the linear blend
//! shrinks it, and bad input refused with the file named and nothing
//! written.

use crate::support::meshes::{capsule, obj_text};
use glam::Vec3;
use plasticine::io::import::{ImportedMesh, load_mesh};
use std::process::Command;

const SEGMENTS: usize = 12;

fn plasticine(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_plasticine"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A capsule along x from 0 to 0.6, and that capsule bent by `angle` about z
/// over its length (its axis onto a circular arc of the same length).
fn bar(angle: f32) -> ImportedMesh {
    let mut mesh = capsule(0.0, 0.6, 0.05, Vec3::ZERO, SEGMENTS, 4, 16);
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
    for (flag, out) in [(None, "physical.obj"), (Some("--linear"), "linear.obj")] {
        let (rig, out) = (path("rig.ron"), path(out));
        let mut args = vec![
            "blendshape",
            "solve",
            &rig,
            "--weights",
            "0.5,0.5",
            "--out",
            &out,
        ];
        args.extend(flag);
        let (ok, stdout, stderr) = plasticine(&args);
        assert!(ok, "{stdout}{stderr}");
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
    let (ok, stdout, stderr) = plasticine(&[
        "blendshape",
        "solve",
        &path("rig.ron"),
        "--weights",
        "1,0",
        "--obstacle",
        &ball,
        "--out",
        &path("pushed.obj"),
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("held on the obstacles"), "{stdout}");
    let pushed = load_mesh(&dir.path().join("pushed.obj")).unwrap();
    let inside = pushed
        .positions
        .iter()
        .map(|p| radius - p.distance(centre))
        .fold(f32::MIN, f32::max);
    assert!(inside <= 1e-6, "a vertex is {inside} m inside the ball");
    let dent = free
        .positions
        .iter()
        .zip(&pushed.positions)
        .map(|(a, b)| a.y - b.y)
        .fold(f32::MIN, f32::max);
    assert!(dent >= 0.015, "the top went down {dent} m");
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
