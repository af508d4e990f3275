//! The limb lattice of the FEM benchmarks and tests: a limb (a box of
//! flesh around two bones meeting at an elbow) whose elbow swings.

use crate::fem::Material;
use crate::fem::{Bone, Lattice};
use crate::fem::{FemBody, FemSettings, Linearization};
use glam::{DAffine3, DQuat, DVec3};

/// A limb of `[nx, ny, nz]` cells of `cell` metres, the bones on the z axis
/// through the middle of the cross-section (nx, ny even put them on lattice
/// edges, so snapping them moves nothing), the elbow at half length. 4 × 4 × 8 cells make 225 vertices,
/// about Capell's kangaroo (177) and cow (214).
pub fn limb(dims: [usize; 3], cell: f64, linearization: Linearization) -> FemBody {
    let origin = DVec3::new(
        -(dims[0] as f64) * cell / 2.0,
        -(dims[1] as f64) * cell / 2.0,
        0.0,
    );
    let mut lattice = Lattice::grid_box(origin, DVec3::splat(cell), dims);
    let length = dims[2] as f64 * cell;
    let elbow = DVec3::new(0.0, 0.0, length / 2.0);
    lattice.snap_bones(
        vec![
            Bone {
                joint: 0,
                child: Some(1),
                head: DVec3::ZERO,
                tail: elbow,
            },
            Bone {
                joint: 1,
                child: Some(2),
                head: elbow,
                tail: DVec3::new(0.0, 0.0, length),
            },
        ],
        crate::fem::MIN_JACOBIAN,
    );
    let settings = FemSettings {
        linearization,
        ..FemSettings::default()
    };
    FemBody::uniform(lattice, Material::FLESH, settings)
}

/// Bone transforms of the limb at time t: the upper arm still, the forearm
/// swinging ±0.8 rad about x at the elbow, once a second.
pub fn limb_pose(body: &FemBody, t: f64) -> Vec<DAffine3> {
    let elbow = body.lattice.bones[1].head;
    let angle = 0.8 * (std::f64::consts::TAU * t).sin();
    let swing = DAffine3::from_translation(elbow)
        * DAffine3::from_quat(DQuat::from_rotation_x(angle))
        * DAffine3::from_translation(-elbow);
    vec![DAffine3::IDENTITY, swing]
}
