use super::*;
use glam::DQuat;

const NONE: [bool; 1] = [false];

#[test]
fn a_step_across_a_landing_takes_the_whole_change_of_velocity() {
    // The frame falls at 3 m/s and stops dead at t = 0.01 (a landing within
    // one step): the point riding it must stop too, wherever it is.
    let frame = |t: f64| DAffine3::from_translation(DVec3::new(0.0, -3.0 * t.min(0.01), 0.0));
    let r = [Vec3::new(0.3, 0.2, -0.1)];
    let mut v = [Vec3::new(0.5, -3.0, 0.0)];
    let largest = kick(frame, (0.005, 0.01), &r, &mut v, &NONE);
    assert!((v[0] - Vec3::new(0.5, 0.0, 0.0)).length() < 1e-4, "{v:?}");
    assert!((largest - 3.0).abs() < 1e-4, "{largest}");
    // Inside one linear piece the frame's velocity does not change.
    let mut w = [Vec3::new(0.5, -3.0, 0.0)];
    kick(frame, (0.001, 0.004), &r, &mut w, &NONE);
    assert!((w[0] - Vec3::new(0.5, -3.0, 0.0)).length() < 1e-4, "{w:?}");
}

#[test]
fn kinematic_points_are_left_to_their_joints() {
    let frame = |t: f64| DAffine3::from_translation(DVec3::new(0.0, -3.0 * t.min(0.01), 0.0));
    let mut v = [Vec3::ZERO];
    kick(frame, (0.005, 0.01), &[Vec3::ONE], &mut v, &[true]);
    assert_eq!(v[0], Vec3::ZERO);
}

#[test]
fn a_point_carried_by_a_spinning_frame_keeps_to_its_circle() {
    // A frame spun up at once to ω about an axis through c: the point at
    // radius R, at rest before, must ride the circle at speed ωR (the kicks
    // supply the centripetal acceleration step by step), and the error
    // must fall with the step (first order: a kick before each drift).
    let (omega, radius) = (4.0f64, 0.25f64);
    let c = DVec3::new(0.1, 0.5, 0.0);
    let frame = move |t: f64| {
        let turn = DQuat::from_rotation_y(omega * t.max(0.0));
        DAffine3::from_translation(c) * DAffine3::from_quat(turn) * DAffine3::from_translation(-c)
    };
    let ride = |steps: usize| {
        let h = (std::f64::consts::TAU / omega) / steps as f64;
        let mut r = [(c + DVec3::new(radius, 0.0, 0.0)).as_vec3()];
        let mut v = [Vec3::ZERO];
        let mut worst = 0.0f64;
        for s in 0..steps {
            kick(frame, (s as f64 * h - 0.5 * h, h), &r, &mut v, &NONE);
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
