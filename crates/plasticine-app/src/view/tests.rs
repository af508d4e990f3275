//! The geometry of the projection, checked against independent
//! constructions: the screen's corners are the NDC corners, the frustum is
//! the one hand-built from eye → corner rays, a centred eye is an ordinary
//! symmetric perspective, parallax follows similar triangles, and the
//! registration to world space keeps the physical image.

use super::*;
use glam::{UVec2, Vec2, Vec4};

const NEAR: f32 = 0.05;
const FAR: f32 = 50.0;

fn close(a: Vec3, b: Vec3, tol: f32) -> bool {
    (a - b).abs().max_element() <= tol
}

fn assert_mat_close(a: Mat4, b: Mat4, tol: f32) {
    let (a, b) = (a.to_cols_array(), b.to_cols_array());
    for k in 0..16 {
        let scale = 1.0_f32.max(b[k].abs());
        assert!(
            (a[k] - b[k]).abs() <= tol * scale,
            "element {k} (column {}, row {}): {} vs {}\n{a:?}\n{b:?}",
            k / 4,
            k % 4,
            a[k],
            b[k]
        );
    }
}

/// The 24" monitor's picture in the x-y plane, centred at the origin,
/// facing +z.
fn monitor() -> Screen {
    Calibration::default_monitor().screen
}

/// A screen turned and tilted in space.
fn tilted() -> Screen {
    let r = Quat::from_rotation_y(-0.6) * Quat::from_rotation_x(0.3);
    Screen::centred(
        Vec3::new(0.3, 1.1, -0.4),
        1.2,
        0.7,
        r * Vec3::Z,
        r * Vec3::Y,
    )
}

#[test]
fn screen_basis_and_fourth_corner() {
    let s = monitor();
    assert_eq!(s.basis(), (Vec3::X, Vec3::Y, Vec3::Z));
    assert!(close(s.upper_right(), Vec3::new(0.2655, 0.1495, 0.0), 1e-7));
    let t = tilted();
    let (vr, vu, vn) = t.basis();
    assert!((vr.dot(vu)).abs() < 1e-6 && (vr.cross(vu) - vn).length() < 1e-6);
    assert!((t.width() - 1.2).abs() < 1e-6 && (t.height() - 0.7).abs() < 1e-6);
}

/// Kooima's defining property: the corners of the screen project to the
/// corners of NDC for any eye in front of it, at a depth between near and
/// far.
#[test]
fn screen_corners_land_on_the_ndc_corners() {
    let expected = [
        Vec2::new(-1.0, -1.0),
        Vec2::new(1.0, -1.0),
        Vec2::new(1.0, 1.0),
        Vec2::new(-1.0, 1.0),
    ];
    for screen in [monitor(), tilted()] {
        let c = screen.centre();
        let n = screen.normal();
        let (vr, vu, _) = screen.basis();
        for eye in [
            c + 0.6 * n,
            c + 0.5 * n + 0.3 * vr - 0.2 * vu,
            c + 0.2 * n - 0.9 * vr + 0.7 * vu, // far off to the side
        ] {
            let view = off_axis(&screen, eye, NEAR, FAR);
            for (corner, want) in screen.corners().iter().zip(expected) {
                let ndc = view.project(*corner).unwrap();
                assert!(
                    (ndc.truncate() - want).abs().max_element() < 2e-5,
                    "{corner} -> {ndc}, want {want}"
                );
                assert!(ndc.z > 0.0 && ndc.z < 1.0, "{ndc}");
            }
        }
    }
}

/// The frustum built by hand, sharing no code with `off_axis`: the screen
/// is in the plane z = 0 facing +z and the eye at (ex, ey, ez), so eye
/// space is world space moved by −eye. The ray from the eye to a corner
/// (cx, cy, 0) meets the near plane z = ez − n at parameter t = n / ez,
/// i.e. at x − ex = (cx − ex)·n/ez, which gives l, r, b, t. Then OpenGL's
/// glFrustum matrix (depth in [−1, 1]) is remapped to [0, 1] by
/// z' = (z + w)/2. The same set-up turned by a rotation R must give the
/// same projection and the view `Rᵀ`-rotated.
#[test]
fn off_axis_matches_an_independent_frustum() {
    let (w, h) = (0.531_f64, 0.299_f64);
    let (ex, ey, ez) = (0.13_f64, -0.07_f64, 0.58_f64);
    let (n, f) = (0.05_f64, 50.0_f64);
    let lower_left = (-w / 2.0, -h / 2.0);
    let upper_right = (w / 2.0, h / 2.0);
    let t_near = n / ez;
    let l = (lower_left.0 - ex) * t_near;
    let r = (upper_right.0 - ex) * t_near;
    let b = (lower_left.1 - ey) * t_near;
    let t = (upper_right.1 - ey) * t_near;
    // glFrustum, row-major.
    let gl = [
        [2.0 * n / (r - l), 0.0, (r + l) / (r - l), 0.0],
        [0.0, 2.0 * n / (t - b), (t + b) / (t - b), 0.0],
        [0.0, 0.0, -(f + n) / (f - n), -2.0 * f * n / (f - n)],
        [0.0, 0.0, -1.0, 0.0],
    ];
    let remap = [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 0.5, 0.5],
        [0.0, 0.0, 0.0, 1.0],
    ];
    let mut p = [[0.0_f64; 4]; 4];
    for i in 0..4 {
        for j in 0..4 {
            p[i][j] = (0..4).map(|k| remap[i][k] * gl[k][j]).sum();
        }
    }
    // Row-major → glam's column-major.
    let expected_projection =
        Mat4::from_cols_array_2d(&p.map(|row| row.map(|x| x as f32))).transpose();
    let eye = Vec3::new(ex as f32, ey as f32, ez as f32);
    let expected_view = Mat4::from_translation(-eye);

    let v = off_axis(&monitor(), eye, n as f32, f as f32);
    assert_mat_close(v.projection, expected_projection, 1e-5);
    assert_mat_close(v.view, expected_view, 1e-6);
    assert_eq!(v.eye, eye);

    // The whole set-up turned: same frustum, the view undoes the turn.
    let rot = Quat::from_euler(glam::EulerRot::YXZ, 0.7, -0.4, 0.2);
    let turned = monitor().transformed(&Mat4::from_quat(rot));
    let v = off_axis(&turned, rot * eye, n as f32, f as f32);
    assert_mat_close(v.projection, expected_projection, 1e-5);
    assert_mat_close(v.view, expected_view * Mat4::from_quat(rot.inverse()), 1e-5);
}

/// An eye straight in front of the screen's centre at distance d sees an
/// ordinary symmetric perspective: vertical field of view 2·atan(h/2d),
/// aspect w/h (glam's right-handed, depth [0, 1], y-up projection, the one
/// glam 0.34 files under `camera::rh::proj::directx`, a.k.a. webgpu).
#[test]
fn centred_eye_is_a_symmetric_perspective() {
    let s = monitor();
    let d = 0.6;
    let eye = Vec3::new(0.0, 0.0, d);
    let v = off_axis(&s, eye, NEAR, FAR);
    let (w, h) = (s.width(), s.height());
    let fovy = 2.0 * (h / (2.0 * d)).atan();
    let glam_projection = glam::camera::rh::proj::directx::perspective(fovy, w / h, NEAR, FAR);
    let glam_view = glam::camera::rh::view::look_to_mat4(eye, Vec3::NEG_Z, Vec3::Y);
    assert_mat_close(v.projection, glam_projection, 1e-5);
    assert_mat_close(v.view_projection(), glam_projection * glam_view, 1e-5);
}

/// Motion parallax by similar triangles. Screen in z = 0, eye at (`x_e`, 0, D).
/// The ray from the eye through a point (0, 0, z) meets the screen plane at
/// `x = −x_e·z/(D − z)`, which is NDC x = 2x/w. So with the eye moved right
/// (`x_e` > 0), a point in front of the screen (0 < z < D) moves left on the
/// screen, a point behind it (z < 0) moves right, and a point on the screen
/// stays put.
#[test]
fn parallax_follows_similar_triangles() {
    let s = monitor();
    let w = s.width();
    let d = 0.6_f32;
    let on_screen = Vec3::ZERO;
    let in_front = Vec3::new(0.0, 0.0, 0.2);
    let behind = Vec3::new(0.0, 0.0, -0.3);
    let predicted = |x_e: f32, z: f32| 2.0 * (-x_e * z / (d - z)) / w;
    let centred = off_axis(&s, Vec3::new(0.0, 0.0, d), NEAR, FAR);
    for p in [on_screen, in_front, behind] {
        assert!(centred.project(p).unwrap().x.abs() < 1e-6);
    }
    for x_e in [0.05_f32, 0.032, -0.1] {
        let v = off_axis(&s, Vec3::new(x_e, 0.0, d), NEAR, FAR);
        let x0 = v.project(on_screen).unwrap().x;
        let x1 = v.project(in_front).unwrap().x;
        let x2 = v.project(behind).unwrap().x;
        assert!(x0.abs() < 1e-6, "zero parallax on the screen: {x0}");
        assert!((x1 - predicted(x_e, 0.2)).abs() < 1e-5, "{x1}");
        assert!((x2 - predicted(x_e, -0.3)).abs() < 1e-5, "{x2}");
        if x_e > 0.0 {
            assert!(x1 < x0 && x2 > x0, "front moves left, behind moves right");
        }
    }
    // The values themselves: eye 5 cm right, a point 20 cm in front of the
    // screen appears 2.5 cm left of centre, one 30 cm behind 1.67 cm right.
    let v = off_axis(&s, Vec3::new(0.05, 0.0, d), NEAR, FAR);
    assert!((v.project(in_front).unwrap().x * w / 2.0 + 0.025).abs() < 1e-6);
    assert!((v.project(behind).unwrap().x * w / 2.0 - 0.05 / 3.0).abs() < 1e-6);
}

/// Depth: the near plane (distance n from the eye, parallel to the screen)
/// is at NDC z = 0, the far plane at 1, and a point behind the eye does not
/// project.
#[test]
fn depth_runs_from_near_to_far() {
    let s = tilted();
    let n = s.normal();
    let eye = s.centre() + 0.7 * n + 0.1 * s.basis().0;
    let v = off_axis(&s, eye, NEAR, FAR);
    let z = |dist: f32| v.project(eye - dist * n).unwrap().z;
    assert!(z(NEAR).abs() < 1e-5, "{}", z(NEAR));
    assert!((z(FAR) - 1.0).abs() < 1e-5, "{}", z(FAR));
    assert!(z(1.0) > z(0.5));
    assert_eq!(v.project(eye + 0.1 * n), None);
}

/// A tracked eye that wanders onto or behind the screen plane still gives a
/// finite frustum, from just in front of the plane.
#[test]
fn an_eye_behind_the_screen_is_kept_in_front() {
    let s = monitor();
    for z in [0.0, -0.2] {
        let v = off_axis(&s, Vec3::new(0.1, 0.0, z), NEAR, FAR);
        assert!((v.eye.z - MIN_EYE_DISTANCE).abs() < 1e-7);
        assert!(v.view_projection().is_finite());
    }
}

#[test]
fn ndc_to_pixel_centres_and_back() {
    let size = UVec2::new(1920, 1080);
    // The image corners are pixel-edge corners, half a pixel outside the
    // corner pixels' centres.
    assert_eq!(
        ndc_to_pixel(Vec2::new(-1.0, 1.0), size),
        Vec2::new(-0.5, -0.5)
    );
    assert_eq!(
        ndc_to_pixel(Vec2::new(1.0, -1.0), size),
        Vec2::new(1919.5, 1079.5)
    );
    assert_eq!(ndc_to_pixel(Vec2::ZERO, size), Vec2::new(959.5, 539.5));
    // y goes down: NDC y up is a smaller row.
    assert!(ndc_to_pixel(Vec2::new(0.0, 0.5), size).y < 539.5);
    // The centre of pixel (0, 0).
    let first = pixel_to_ndc(Vec2::ZERO, size);
    assert!((first - Vec2::new(-1.0 + 1.0 / 1920.0, 1.0 - 1.0 / 1080.0)).length() < 1e-6);
    let p = Vec2::new(123.25, 456.75);
    assert!((ndc_to_pixel(pixel_to_ndc(p, size), size) - p).length() < 1e-3);
}

/// The eyes are the head pose applied to ±ipd/2 along the head's x axis:
/// index 0 is the left eye, index 1 the right one at +ipd/2, turning with
/// the head.
#[test]
fn stereo_eyes_sit_at_half_the_ipd() {
    let mut cal = Calibration::default_monitor();
    cal.tracker_to_world = Registration::IDENTITY;
    let head = Vec3::new(0.02, 0.05, 0.6);
    let [left, right] = stereo_views(&cal, (head, Quat::IDENTITY), Mat4::IDENTITY);
    assert!(close(right.eye, head + Vec3::new(0.032, 0.0, 0.0), 1e-7));
    assert!(close(left.eye, head - Vec3::new(0.032, 0.0, 0.0), 1e-7));
    // Head turned 30° to the left (about +y): the right eye comes forward.
    let turn = Quat::from_rotation_y(30_f32.to_radians());
    let [left, right] = stereo_views(&cal, (head, turn), Mat4::IDENTITY);
    let half = 0.032;
    let expected = Vec3::new(half * 30_f32.to_radians().cos(), 0.0, -half * 0.5);
    assert!(
        close(right.eye - head, expected, 1e-6),
        "{}",
        right.eye - head
    );
    assert!(close(left.eye - head, -expected, 1e-6));
    // Crossed disparity: a point in front of the screen is further left
    // for the right eye than for the left one.
    let p = Vec3::new(0.0, 0.0, 0.2);
    let [left, right] = stereo_views(&cal, (head, Quat::IDENTITY), Mat4::IDENTITY);
    assert!(right.project(p).unwrap().x < left.project(p).unwrap().x);
}

/// Registration and vehicle move the world, not the physics: a point fixed
/// in tracker space, mapped to world by `world_from_vehicle *
/// tracker_to_world`, lands in NDC exactly where the physical ray from the
/// physical eye crosses the physical screen (computed in tracker space), and
/// the physical near distance maps to depth 0.
#[test]
fn the_image_is_physical_whatever_the_registration_and_vehicle() {
    let mut cal = Calibration::default_monitor();
    cal.tracker_to_world = Registration {
        translation: Vec3::new(1.0, -2.0, 0.5),
        rotation: Quat::from_rotation_z(0.3) * Quat::from_rotation_y(1.1),
        scale: 4.0,
    };
    let vehicle = Mat4::from_scale_rotation_translation(
        Vec3::splat(0.5),
        Quat::from_rotation_x(-0.4),
        Vec3::new(3.0, 0.0, -1.0),
    );
    let head = (Vec3::new(0.1, -0.03, 0.55), Quat::from_rotation_y(0.2));
    let views = stereo_views(&cal, head, vehicle);
    let world_from_tracker = cal.world_from_tracker(vehicle);
    let s = cal.screen; // tracker space: z = 0 plane, x right, y up
    for (k, offset) in [cal.eyes.left, cal.eyes.right].into_iter().enumerate() {
        let eye = head.0 + head.1 * offset; // tracker space
        for p in [Vec3::new(0.05, 0.02, 0.2), Vec3::new(-0.1, 0.08, -0.4)] {
            // The physical ray eye → p meets the plane z = 0 at t = eye.z / (eye.z − p.z).
            let t = eye.z / (eye.z - p.z);
            let hit = eye + t * (p - eye);
            let want = Vec2::new(hit.x / (s.width() / 2.0), hit.y / (s.height() / 2.0));
            let ndc = views[k]
                .project(world_from_tracker.transform_point3(p))
                .unwrap();
            assert!(
                (ndc.truncate() - want).abs().max_element() < 1e-4,
                "{ndc} vs {want}"
            );
        }
        // A point the physical near distance in front of the eye.
        let p = eye - Vec3::new(0.0, 0.0, cal.near);
        let ndc = views[k]
            .project(world_from_tracker.transform_point3(p))
            .unwrap();
        assert!(ndc.z.abs() < 1e-4, "{ndc}");
        // And the eye itself is where it should be in the world.
        assert!(close(
            views[k].eye,
            world_from_tracker.transform_point3(eye),
            1e-5
        ));
    }
}

/// What the default registration shows: a 1 m character standing at the
/// world origin, seen from the fixed head, fills about 84% of the screen
/// height, feet near the bottom.
#[test]
fn default_monitor_frames_a_one_metre_character() {
    let cal = Calibration::default_monitor();
    let [left, _] = stereo_views(&cal, cal.fixed_head.pair(), Mat4::IDENTITY);
    let feet = left.project(Vec3::ZERO).unwrap();
    let top = left.project(Vec3::new(0.0, 1.0, 0.0)).unwrap();
    assert!((feet.y - (-0.125 / 0.1495)).abs() < 1e-4, "{feet}");
    assert!((top.y - 0.125 / 0.1495).abs() < 1e-4, "{top}");
    assert!(feet.z > 0.0 && feet.z < 1.0);
    let clip = left.view_projection() * Vec4::new(0.0, 0.5, 0.0, 1.0);
    assert!(clip.w > 0.0);
}

/// Moving a calibration to a screen measured elsewhere in another tracker
/// space (a room-scale STAGE space: 1.2 m up, turned and tilted) keeps what
/// the viewer sees: from the moved fixed head, both eyes' view-projections
/// of the world are the old ones, and the head stays 0.6 m in front of the
/// screen's centre.
#[test]
fn a_calibration_moved_with_its_screen_shows_the_same_world() {
    let old = Calibration::default_monitor();
    let turn = Quat::from_rotation_y(0.7) * Quat::from_rotation_x(-0.2);
    let place = Vec3::new(0.3, 1.2, -0.5);
    let screen = old
        .screen
        .transformed(&Mat4::from_rotation_translation(turn, place));
    let new = old.moved_with_screen(screen);
    new.validate().unwrap();
    assert_eq!(new.screen, screen);
    assert!((new.screen.signed_distance(new.fixed_head.position) - 0.6).abs() < 1e-5);
    assert!(close(
        new.fixed_head.position,
        place + turn * Vec3::new(0.0, 0.0, 0.6),
        1e-5
    ));
    let a = stereo_views(&old, old.fixed_head.pair(), Mat4::IDENTITY);
    let b = stereo_views(&new, new.fixed_head.pair(), Mat4::IDENTITY);
    for (a, b) in a.iter().zip(&b) {
        assert_mat_close(b.view_projection(), a.view_projection(), 1e-4);
    }
    // Moving onto the same screen changes nothing.
    let same = old.moved_with_screen(old.screen);
    assert!(close(
        same.fixed_head.position,
        old.fixed_head.position,
        1e-6
    ));
    assert!(close(
        same.tracker_to_world.translation,
        old.tracker_to_world.translation,
        1e-6
    ));
}
