use super::*;

fn symmetric(half: f32) -> xr::Fovf {
    xr::Fovf {
        angle_left: -half,
        angle_right: half,
        angle_up: half,
        angle_down: -half,
    }
}

/// A point straight ahead lands at the centre of the image, at depth
/// between 0 and 1; the FOV's edges land on the NDC edges (asymmetric
/// too), in wgpu's conventions (y up).
#[test]
fn the_projection_maps_the_field_of_view_onto_the_image() {
    let eye = LocatedView {
        position: Vec3::new(0.0, 1.6, 0.0),
        orientation: Quat::IDENTITY,
        fov: xr::Fovf {
            angle_left: -0.9,
            angle_right: 0.7,
            angle_up: 0.8,
            angle_down: -0.85,
        },
    };
    let cam = eye.camera(Mat4::IDENTITY, 0.05, 100.0);
    let ndc = |p: Vec3| {
        let c = cam.view_proj * p.extend(1.0);
        c.truncate() / c.w
    };
    let d = 2.0;
    let left = ndc(Vec3::new(-d * 0.9f32.tan(), 1.6, -d));
    assert!((left.x + 1.0).abs() < 1e-4 && left.y.abs() < 0.2, "{left}");
    let right = ndc(Vec3::new(d * 0.7f32.tan(), 1.6, -d));
    assert!((right.x - 1.0).abs() < 1e-4, "{right}");
    let up = ndc(Vec3::new(0.0, 1.6 + d * 0.8f32.tan(), -d));
    assert!((up.y - 1.0).abs() < 1e-4, "{up}");
    let down = ndc(Vec3::new(0.0, 1.6 - d * 0.85f32.tan(), -d));
    assert!((down.y + 1.0).abs() < 1e-4, "{down}");
    let near = ndc(Vec3::new(0.0, 1.6, -0.05));
    let far = ndc(Vec3::new(0.0, 1.6, -100.0));
    assert!(
        near.z.abs() < 1e-4 && (far.z - 1.0).abs() < 1e-4,
        "{near} {far}"
    );
}

/// With the world scaled and turned by the vehicle, an eye sees the
/// world point the vehicle puts in front of it where it would see the
/// tracker point without the vehicle; the camera position is in world
/// space.
#[test]
fn the_camera_follows_the_vehicle() {
    let eye = LocatedView {
        position: Vec3::new(0.03, 1.5, 0.2),
        orientation: Quat::from_rotation_y(0.3),
        fov: symmetric(0.8),
    };
    let vehicle = Mat4::from_scale_rotation_translation(
        Vec3::splat(2.0),
        Quat::from_rotation_y(-1.1),
        Vec3::new(1.0, -0.5, 3.0),
    );
    let plain = eye.camera(Mat4::IDENTITY, 0.05, 50.0);
    let moved = eye.camera(vehicle, 0.05, 50.0);
    for p in [Vec3::new(0.1, 1.4, -0.5), Vec3::new(-0.3, 1.7, -1.5)] {
        let a = plain.view_proj * p.extend(1.0);
        let b = moved.view_proj * vehicle.transform_point3(p).extend(1.0);
        assert!(
            (a.truncate() / a.w - b.truncate() / b.w).length() < 1e-4,
            "{a} {b}"
        );
    }
    assert!(
        moved
            .position
            .distance(vehicle.transform_point3(eye.position))
            < 1e-5
    );
}

#[test]
fn session_ends_describe_themselves() {
    assert!(
        SessionEnd::ByRuntime
            .to_string()
            .contains("XR_SESSION_STATE_EXITING")
    );
    let lost = SessionEnd::Lost(XrError::SessionLost {
        reason: "gone".into(),
    });
    assert!(lost.to_string().contains("was lost: gone"), "{lost}");
}
