use super::*;
use glam::DQuat;

const NONE: [bool; 1] = [false];

/// A translation at `velocity`, as a field.
fn moving(velocity: DVec3) -> Field {
    Field::rigid(DVec3::ZERO, velocity, DVec3::ZERO)
}

#[test]
fn a_step_across_a_landing_takes_the_whole_change_of_velocity() {
    // The frame falls at 3 m/s and stops dead within the step (a landing):
    // the point riding it must stop too, wherever it is.
    let fall = DVec3::new(0.0, -3.0, 0.0);
    let carried = DAffine3::from_translation(fall * 0.005);
    let r = [Vec3::new(0.3, 0.2, -0.1)];
    let mut v = [Vec3::new(0.5, -3.0, 0.0)];
    let largest = kick(
        carried,
        (moving(fall), moving(DVec3::ZERO)),
        &r,
        &mut v,
        &NONE,
    );
    assert!((v[0] - Vec3::new(0.5, 0.0, 0.0)).length() < 1e-6, "{v:?}");
    assert!((largest - 3.0).abs() < 1e-6, "{largest}");
    // While the frame keeps its velocity, nothing changes.
    let mut w = [Vec3::new(0.5, -3.0, 0.0)];
    kick(carried, (moving(fall), moving(fall)), &r, &mut w, &NONE);
    assert_eq!(w[0], Vec3::new(0.5, -3.0, 0.0));
}

#[test]
fn kinematic_points_are_left_to_their_joints() {
    let fall = DVec3::new(0.0, -3.0, 0.0);
    let mut v = [Vec3::ZERO];
    let fields = (moving(fall), moving(DVec3::ZERO));
    kick(DAffine3::IDENTITY, fields, &[Vec3::ONE], &mut v, &[true]);
    assert_eq!(v[0], Vec3::ZERO);
}

#[test]
fn the_rigid_field_is_the_velocity_of_a_point_on_the_body() {
    let (c, velocity, spin) = (
        DVec3::new(0.1, 0.5, -0.2),
        DVec3::new(0.3, -1.0, 0.2),
        DVec3::new(1.0, -2.0, 0.5),
    );
    let f = Field::rigid(c, velocity, spin);
    let x = DVec3::new(-0.4, 0.7, 0.9);
    let expected = velocity + spin.cross(x - c);
    assert!((f.at(x) - expected).length() < 1e-12);
}

#[test]
fn a_point_carried_by_a_spinning_frame_keeps_to_its_circle() {
    // A frame spun up at once to ω about a vertical axis through c: the
    // point at radius R, at rest before, must ride the circle at speed ωR
    // (the kicks supply the centripetal acceleration step by step), and the
    // error must fall with the step (first order: a kick before each drift).
    let (omega, radius) = (4.0f64, 0.25f64);
    let c = DVec3::new(0.1, 0.5, 0.0);
    let spin = DVec3::new(0.0, omega, 0.0);
    let turn = |s: f64| {
        let at = DQuat::from_rotation_y(omega * s.max(0.0));
        DAffine3::from_translation(c) * DAffine3::from_quat(at) * DAffine3::from_translation(-c)
    };
    // The field at s: still before the spin-up, spinning after.
    let field = |s: f64| Field::rigid(c, DVec3::ZERO, if s > 0.0 { spin } else { DVec3::ZERO });
    let ride = |steps: usize| {
        let h = (std::f64::consts::TAU / omega) / steps as f64;
        let mut r = [(c + DVec3::new(radius, 0.0, 0.0)).as_vec3()];
        let mut v = [Vec3::ZERO];
        let mut worst = 0.0f64;
        for s in 0..steps {
            let t = s as f64 * h - 0.5 * h;
            let carried = turn(t + h) * turn(t).inverse();
            kick(carried, (field(t), field(t + h)), &r, &mut v, &NONE);
            r[0] += (h as f32) * v[0];
            let off = r[0].as_dvec3() - c;
            let distance = DVec3::new(off.x, 0.0, off.z).length();
            worst = worst.max((distance - radius).abs() / radius);
            let speed = v[0].as_dvec3().length();
            worst = worst.max((speed - omega * radius).abs() / (omega * radius));
        }
        worst
    };
    let (coarse, fine) = (ride(200), ride(1600));
    assert!(coarse < 0.15, "{coarse}");
    assert!(fine < 0.02, "{fine}");
    assert!(
        coarse / fine > 4.0,
        "error ratio {} for 8× finer steps",
        coarse / fine
    );
}
