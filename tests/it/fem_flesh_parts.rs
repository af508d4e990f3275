//! Per-part flesh stiffness (Capell §3.3's per-cell materials: floppy ears,
//! rigid horns) as a user sets it: a joint's part of the FEM flesh made
//! softer sags more under its own weight, the rest of the flesh stays as it
//! was. Run with `--nocapture` for the numbers.

use plasticine::character::{Character, FemFlesh, Flesh, PartFriction, PartStiffness};
use plasticine::fem::cell_materials;
use plasticine::fem::{FleshError, FleshSim};

fn penguin(parts: Vec<PartStiffness>) -> Character {
    let mut c = plasticine::samples::bare("penguin").expect("sample");
    c.flesh = Flesh::Fem(FemFlesh {
        part_stiffness: parts,
        ..FemFlesh::default()
    });
    c
}

/// The largest settled displacement (rest posture, gravity) over the free
/// lattice vertices whose nearest bone is carried by `joint`.
fn sag_of_part(c: &Character, flesh: &FleshSim, joint: &str) -> f64 {
    let j = c.skeleton.find(joint).unwrap();
    let l = flesh.lattice();
    (0..l.vertex_count())
        .filter(|&a| l.bone_of_vertex[a].is_none())
        .filter(|&a| l.nearest_bone(l.rest[a]).unwrap().joint == j)
        .map(|a| flesh.q()[a].length())
        .fold(0.0, f64::max)
}

#[test]
fn a_softened_part_sags_more_and_the_rest_stays() {
    let plain = penguin(Vec::new());
    let soft = penguin(vec![PartStiffness {
        joint: "flipper_l".into(),
        scale: 0.05,
    }]);
    soft.validate().unwrap();
    let rest = plain.skeleton.rest_posture();
    let a = FleshSim::new(&plain, &rest, 0.0).unwrap();
    let b = FleshSim::new(&soft, &rest, 0.0).unwrap();
    // The cells made soft are exactly the flipper_l part's.
    let materials = cell_materials(&soft, soft.flesh.fem().unwrap(), a.lattice()).unwrap();
    let base = FemFlesh::default().young;
    let softened = materials
        .iter()
        .filter(|m| (m.young - 0.05 * base).abs() < 1e-6)
        .count();
    let unchanged = materials.iter().filter(|m| m.young == base).count();
    assert_eq!(softened + unchanged, materials.len());
    assert!(
        softened > 0 && unchanged > softened,
        "{softened} of {}",
        materials.len()
    );

    let (left_a, left_b) = (
        sag_of_part(&plain, &a, "flipper_l"),
        sag_of_part(&soft, &b, "flipper_l"),
    );
    let (right_a, right_b) = (
        sag_of_part(&plain, &a, "flipper_r"),
        sag_of_part(&soft, &b, "flipper_r"),
    );
    eprintln!(
        "{softened} of {} cells at 5 % E: the left flipper's flesh sags {:.2} mm (was {:.2} mm), \
         the right one {:.3} mm (was {:.3} mm)",
        materials.len(),
        left_b * 1e3,
        left_a * 1e3,
        right_b * 1e3,
        right_a * 1e3
    );
    assert!(left_b > 3.0 * left_a, "{left_b} vs {left_a}");
    assert!(
        (right_b - right_a).abs() < 0.1 * right_a,
        "{right_b} vs {right_a}"
    );
    // Mirror-symmetric before: the two flippers sagged alike.
    assert!((left_a - right_a).abs() < 1e-3 * right_a.max(1e-9) + 1e-9);
}

#[test]
fn a_part_of_an_unknown_joint_is_a_clear_error() {
    let c = penguin(vec![PartStiffness {
        joint: "ear".into(),
        scale: 0.5,
    }]);
    let e = c.validate().unwrap_err();
    assert_eq!(e.field, "flesh.Fem.part_stiffness[0].joint");
    assert!(e.message.contains("'ear'"), "{}", e.message);
    let err = FleshSim::new(&c, &c.skeleton.rest_posture(), 0.0).unwrap_err();
    assert_eq!(
        err,
        FleshError::PartJoint {
            joint: "ear".into()
        }
    );
    for scale in [0.0, f64::NAN, 1e6] {
        let c = penguin(vec![PartStiffness {
            joint: "flipper_l".into(),
            scale,
        }]);
        let e = c.validate().unwrap_err();
        assert_eq!(e.field, "flesh.Fem.part_stiffness[0].scale", "{scale}");
    }
}

#[test]
fn a_part_friction_out_of_range_or_of_an_unknown_joint_is_a_clear_error() {
    let with = |joint: &str, friction: f64| {
        let mut c = penguin(Vec::new());
        if let Flesh::Fem(f) = &mut c.flesh {
            f.part_friction = vec![PartFriction {
                joint: joint.into(),
                friction,
            }];
        }
        c
    };
    let e = with("ear", 0.5).validate().unwrap_err();
    assert_eq!(e.field, "flesh.Fem.part_friction[0].joint");
    assert!(e.message.contains("'ear'"), "{}", e.message);
    let c = with("ear", 0.5);
    let err = FleshSim::new(&c, &c.skeleton.rest_posture(), 0.0).unwrap_err();
    assert_eq!(
        err,
        FleshError::PartJoint {
            joint: "ear".into()
        }
    );
    for friction in [-0.1, f64::NAN, 11.0] {
        let e = with("flipper_l", friction).validate().unwrap_err();
        assert_eq!(e.field, "flesh.Fem.part_friction[0].friction", "{friction}");
    }
    assert!(with("flipper_l", 0.0).validate().is_ok());
}
