use super::*;
use crate::character::{Dof, Joint, Skeleton};
use glam::{Affine3A, Quat};
use std::f32::consts::TAU;

/// An m×n cylinder of radius 1 around +Y, running counter-clockwise seen
/// from above (so T1×T2 points outward).
fn cylinder(m: usize, n: usize) -> Vec<Vec3> {
    let mut p = Vec::new();
    for j in 0..n {
        for i in 0..m {
            let a = TAU * i as f32 / m as f32;
            // Counter-clockwise about +Y seen from above: x = cos, z = −sin.
            p.push(Vec3::new(a.cos(), j as f32, -a.sin()));
        }
    }
    p
}

#[test]
fn grid_has_two_triangles_per_quad_and_closes_around() {
    let (m, n) = (5, 4);
    let t = grid_triangles(m, n, false);
    assert_eq!(t.len(), 2 * m * (n - 1));
    // Every edge around the seam is used: the last column connects to the first.
    assert!(t.contains(&[4, 0, 5]));
    // Each interior edge is shared by exactly two triangles, in opposite
    // directions (a consistently oriented, closed-around surface).
    let mut edges = std::collections::HashMap::new();
    for tri in &t {
        for k in 0..3 {
            *edges.entry((tri[k], tri[(k + 1) % 3])).or_insert(0) += 1;
        }
    }
    for (&(a, b), &c) in &edges {
        assert_eq!(c, 1, "edge {a}->{b} used twice in one direction");
        let boundary = |v: u32| (v as usize) < m || (v as usize) >= m * (n - 1);
        if !(boundary(a) && boundary(b) && (a as usize / m) == (b as usize / m)) {
            assert!(edges.contains_key(&(b, a)), "edge {a}->{b} has no twin");
        }
    }
}

#[test]
fn normals_are_unit_outward_and_agree_with_the_winding() {
    let (m, n) = (12, 5);
    let p = cylinder(m, n);
    let mut nrm = Vec::new();
    grid_normals(m, n, &p, false, &mut nrm);
    for (k, v) in nrm.iter().enumerate() {
        assert!((v.length() - 1.0).abs() < 1e-5);
        let radial = Vec3::new(p[k].x, 0.0, p[k].z).normalize();
        assert!(v.dot(radial) > 0.99, "normal {k} {v} is not radial");
    }
    // The triangles face the same way as the normals.
    for [a, b, c] in grid_triangles(m, n, false) {
        let (a, b, c) = (p[a as usize], p[b as usize], p[c as usize]);
        let face = (b - a).cross(c - a);
        let radial = Vec3::new(a.x + b.x + c.x, 0.0, a.z + b.z + c.z);
        assert!(face.dot(radial) > 0.0);
    }
}

#[test]
fn inward_grids_are_flipped_to_face_out() {
    let (m, n) = (10, 4);
    let p = cylinder(m, n);
    assert!(!grid_faces_inward(m, n, &p));
    // The same cylinder wound the other way round.
    let mirrored: Vec<Vec3> = p.iter().map(|v| Vec3::new(v.x, v.y, -v.z)).collect();
    assert!(grid_faces_inward(m, n, &mirrored));
    let mut nrm = Vec::new();
    grid_normals(m, n, &mirrored, true, &mut nrm);
    for (k, v) in nrm.iter().enumerate() {
        let radial = Vec3::new(mirrored[k].x, 0.0, mirrored[k].z).normalize();
        assert!(v.dot(radial) > 0.99);
    }
    for [a, b, c] in grid_triangles(m, n, true) {
        let (a, b, c) = (
            mirrored[a as usize],
            mirrored[b as usize],
            mirrored[c as usize],
        );
        let radial = Vec3::new(a.x + b.x + c.x, 0.0, a.z + b.z + c.z);
        assert!((b - a).cross(c - a).dot(radial) > 0.0);
    }
}

#[test]
fn degenerate_rings_still_get_unit_normals() {
    let (m, n) = (6, 4);
    let mut p = cylinder(m, n);
    // Collapse the top ring to a point.
    for i in 0..m {
        p[(n - 1) * m + i] = Vec3::new(0.0, 3.0, 0.0);
    }
    let mut nrm = Vec::new();
    grid_normals(m, n, &p, false, &mut nrm);
    assert!(nrm.iter().all(|v| (v.length() - 1.0).abs() < 1e-5));
}

#[test]
fn joint_local_transforms_compose_to_forward_kinematics() {
    let joint = |name: &str, parent, offset, rest_rotation| Joint {
        locked: false,
        name: name.into(),
        parent,
        offset,
        rest_rotation,
        dofs: [
            Dof::default(),
            Dof {
                free: true,
                min: -0.3,
                max: 0.3,
            },
            Dof::LOCKED,
        ],
    };
    let skeleton = Skeleton {
        joints: vec![
            joint("root", None, Vec3::new(0.0, 1.0, 0.0), Quat::IDENTITY),
            joint(
                "a",
                Some(0),
                Vec3::new(0.0, 0.5, 0.1),
                Quat::from_rotation_z(0.4),
            ),
            joint("b", Some(1), Vec3::new(0.3, 0.0, 0.0), Quat::IDENTITY),
            joint("c", Some(0), Vec3::new(-0.3, 0.0, 0.0), Quat::IDENTITY),
        ],
    };
    let posture = Posture {
        root_translation: Vec3::new(0.2, -0.1, 0.3),
        // The y angle of joint 1 is over its limit and z is locked: both clamp.
        angles: vec![
            Vec3::new(0.1, 0.2, 0.3),
            Vec3::new(-0.5, 0.9, 0.7),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, -0.2, 0.0),
        ],
        blend: Vec::new(),
    };
    let local = local_transforms(&skeleton, &posture);
    let fk = forward_kinematics(&skeleton, &posture);
    let mut world: Vec<Affine3A> = Vec::new();
    for (k, (t, r)) in local.iter().enumerate() {
        let l = Affine3A::from_rotation_translation(*r, *t);
        let w = match skeleton.joints[k].parent {
            Some(p) => world[p] * l,
            None => l,
        };
        assert!(
            w.abs_diff_eq(fk[k], 1e-6),
            "joint {k}: {w:?} vs {:?}",
            fk[k]
        );
        world.push(w);
    }
}

#[test]
fn format_comes_from_the_extension_or_the_option() {
    let p = Path::new;
    assert_eq!(
        resolve_format(p("a/b.glb"), None).unwrap(),
        ExportFormat::Glb
    );
    assert_eq!(
        resolve_format(p("b.USDA"), None).unwrap(),
        ExportFormat::Usda
    );
    assert_eq!(
        resolve_format(p("frames"), Some(ExportFormat::Obj)).unwrap(),
        ExportFormat::Obj
    );
    let e = resolve_format(p("b.fbx"), None).unwrap_err().to_string();
    assert!(
        e.contains("unknown extension '.fbx'") && e.contains(".glb"),
        "{e}"
    );
    let e = resolve_format(p("out"), None).unwrap_err().to_string();
    assert!(e.contains("no extension"), "{e}");
    let e = resolve_format(p("b.glb"), Some(ExportFormat::Usda))
        .unwrap_err()
        .to_string();
    assert!(e.contains("glb") && e.contains("usda"), "{e}");
    assert_eq!("OBJ".parse::<ExportFormat>().unwrap(), ExportFormat::Obj);
    assert!("fbx".parse::<ExportFormat>().is_err());
}
