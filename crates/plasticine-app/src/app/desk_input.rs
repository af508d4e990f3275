//! Two hands at a desk without a headset (LEMAN §5.1): the **left hand flies
//! a vehicle** incrementally (keys or a gamepad, like the Spaceball), the
//! **right hand is an absolute 3D cursor** (the mouse ray from the eyes
//! through the physical screen, the wheel setting its depth). The head sits
//! at the calibrated position unless a tracker reports it.
//!
//! This is plain state fed by window and gamepad events, so it is tested
//! without a window; `desk.rs` feeds it from winit and gilrs.
//!
//! # A tracker as a source
//!
//! [`DeskTracker::with_source`] adds a [`Tracker`] (`OpenXR`'s
//! [`XrTracker`](crate::xr::XrTracker), or a test's) that is sampled with
//! every desk sample: while it tracks the head, the head comes from it (else
//! the calibration's fixed head); while it tracks the right hand, the right
//! hand (pose, trigger, buttons) comes from it (else the mouse ray); the
//! left hand's buttons add to the keys' undo/redo pulses. The source's
//! tracker space must be the calibration's: a calibration measured with the
//! same tracker (`plasticine calibrate --live`).

use super::frame_loop::{TrackedParts, TrackedPose, Tracker};
use crate::input::{HandState, InputFrame, buttons};
use crate::view::Calibration;
use glam::{Mat4, Quat, Vec2, Vec3};
use std::time::Instant;

/// Vehicle speeds, in physical units (tracker space) per second.
pub const FLY_SPEED: f32 = 0.3;
/// Vehicle turning speed at full deflection, in rad/s.
pub const TURN_SPEED: f32 = 1.2;
/// Each wheel notch moves the cursor this fraction of its distance.
pub const WHEEL_STEP: f32 = 0.05;
/// Wand twist per key press (radians), for the tools that read the twist.
pub const TWIST_STEP: f32 = 0.2;

/// Continuous vehicle commands, each in −1..1 (keys give ±1, sticks their deflection).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VehicleAxes {
    /// Right (+) / left (−).
    pub strafe: f32,
    /// Up (+) / down (−).
    pub lift: f32,
    /// Forward into the screen (+) / back (−).
    pub forward: f32,
    /// Turn the world to the right (+) about the screen's vertical.
    pub yaw: f32,
    /// Tilt the world towards the viewer (+).
    pub pitch: f32,
}

impl VehicleAxes {
    /// Adds two sets of commands (the keys' and the gamepad's), each axis clamped to −1..1.
    pub fn combined(self, o: VehicleAxes) -> Self {
        let c = |a: f32, b: f32| (a + b).clamp(-1.0, 1.0);
        Self {
            strafe: c(self.strafe, o.strafe),
            lift: c(self.lift, o.lift),
            forward: c(self.forward, o.forward),
            yaw: c(self.yaw, o.yaw),
            pitch: c(self.pitch, o.pitch),
        }
    }

    /// Whether every axis is zero, so the vehicle does not move this frame.
    pub fn is_idle(&self) -> bool {
        *self == Self::default()
    }

    /// The vehicle motion over `dt` seconds, in the vehicle's own (tracker)
    /// frame, rotating about the screen centre `pivot` so turning orbits
    /// the work in front of the user.
    pub fn delta(&self, dt: f32, pivot: Vec3) -> Mat4 {
        // Flying forward moves the viewer into the scene: the world comes
        // towards the screen, so the tracker frame moves along −z.
        let translation = Vec3::new(self.strafe, self.lift, -self.forward) * FLY_SPEED * dt;
        let rotation = Quat::from_rotation_y(-self.yaw * TURN_SPEED * dt)
            * Quat::from_rotation_x(-self.pitch * TURN_SPEED * dt);
        Mat4::from_translation(translation + pivot)
            * Mat4::from_quat(rotation)
            * Mat4::from_translation(-pivot)
    }
}

/// The desk's hands and head, as the window (and the source, if any) last saw them.
pub struct DeskTracker {
    calibration: Calibration,
    started: Instant,
    sequence: u64,
    /// Window size in pixels, and the mouse in it (pixels, y down).
    window: Vec2,
    mouse: Vec2,
    /// Right-hand cursor distance from the head, as a fraction of the
    /// head-to-screen distance along the ray (1 = on the screen glass).
    pub depth: f32,
    /// The mouse hand's wand twist about the ray (rad); `[` and `]` change it.
    pub twist: f32,
    /// Whether the right hand's trigger is held (the left mouse button).
    pub trigger: bool,
    /// Right-hand buttons held (bits of [`buttons`]).
    pub right_buttons: u32,
    /// Left-hand buttons: pulses (undo, redo) set by keys, held for one sample.
    left_pulse: u32,
    left_pulse_sampled: bool,
    /// A tracker for the head and the hands, sampled with every sample.
    source: Option<Box<dyn Tracker>>,
    /// What the source measured at the last sample.
    measured: Measured,
}

/// The parts of the source's last sample that it tracked.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Measured {
    head: Option<(Vec3, Quat)>,
    right: Option<HandState>,
    left_buttons: u32,
}

impl std::fmt::Debug for DeskTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeskTracker")
            .field("sequence", &self.sequence)
            .field("mouse", &self.mouse)
            .field("depth", &self.depth)
            .field("has_source", &self.source.is_some())
            .field("measured", &self.measured)
            .finish_non_exhaustive()
    }
}

impl DeskTracker {
    /// A desk tracker for `calibration` and a window of `window` pixels (width, height): the mouse
    /// centred, the cursor on the screen glass, no source.
    pub fn new(calibration: Calibration, window: (u32, u32)) -> Self {
        let window = Vec2::new(window.0.max(1) as f32, window.1.max(1) as f32);
        Self {
            calibration,
            started: Instant::now(),
            sequence: 0,
            window,
            mouse: window * 0.5,
            depth: 1.0,
            twist: 0.0,
            trigger: false,
            right_buttons: 0,
            left_pulse: 0,
            left_pulse_sampled: false,
            source: None,
            measured: Measured::default(),
        }
    }

    /// Takes the head and the right hand from `source` while it tracks them
    /// (see the module documentation).
    pub fn with_source(mut self, source: Box<dyn Tracker>) -> Self {
        self.source = Some(source);
        self
    }

    /// Whether a tracker source was added with [`DeskTracker::with_source`].
    pub fn has_source(&self) -> bool {
        self.source.is_some()
    }

    /// Which parts came from the source at the last sample.
    pub fn from_source(&self) -> TrackedParts {
        TrackedParts {
            head: self.measured.head.is_some(),
            left: false,
            right: self.measured.right.is_some(),
        }
    }

    /// One line for the overlay: where the head and the right hand come from.
    pub fn sources_line(&self) -> String {
        let head = if self.measured.head.is_some() {
            "tracked"
        } else {
            "fixed (calibration)"
        };
        let right = if self.measured.right.is_some() {
            "tracked controller"
        } else {
            "mouse ray"
        };
        format!("head {head}, right hand {right}")
    }

    /// Tells the tracker the window's new size in pixels (width, height).
    pub fn resize(&mut self, size: (u32, u32)) {
        self.window = Vec2::new(size.0.max(1) as f32, size.1.max(1) as f32);
    }

    /// Moves the mouse to (`x`, `y`) in window pixels, y down.
    pub fn mouse_moved(&mut self, x: f32, y: f32) {
        self.mouse = Vec2::new(x, y);
    }

    /// Wheel notches: positive pushes the cursor away, into the screen.
    pub fn wheel(&mut self, notches: f32) {
        self.depth = (self.depth * (1.0 + WHEEL_STEP).powf(notches)).clamp(0.2, 5.0);
    }

    /// Presses a left-hand button for exactly one frame's samples (undo = A,
    /// redo = B, as the tools read them).
    pub fn pulse_left(&mut self, button: u32) {
        self.left_pulse |= button;
        self.left_pulse_sampled = false;
    }

    /// The tracked head while the source tracks it, else the calibration's fixed head.
    pub fn head(&self) -> (Vec3, Quat) {
        self.measured
            .head
            .unwrap_or_else(|| self.calibration.fixed_head.pair())
    }

    /// The point of the physical screen under the mouse (tracker space).
    pub fn screen_point(&self) -> Vec3 {
        let s = &self.calibration.screen;
        let u = (self.mouse.x / self.window.x).clamp(0.0, 1.0);
        let v = 1.0 - (self.mouse.y / self.window.y).clamp(0.0, 1.0);
        s.lower_left + (s.lower_right - s.lower_left) * u + (s.upper_left - s.lower_left) * v
    }

    /// The right hand: the source's while it tracks it, else the mouse
    /// ray's ([`DeskTracker::mouse_hand`]).
    pub fn right_hand(&self) -> HandState {
        self.measured.right.unwrap_or_else(|| self.mouse_hand())
    }

    /// The mouse's hand: on the ray from the head through the screen point
    /// under the mouse, at `depth` times the glass's distance, its wand
    /// pointing along the ray (so pointing picks what is under the mouse).
    pub fn mouse_hand(&self) -> HandState {
        let (head, _) = self.head();
        let on_glass = self.screen_point();
        let ray = on_glass - head;
        let dir = ray.normalize_or(Vec3::NEG_Z);
        let orientation =
            Quat::from_axis_angle(dir, self.twist) * Quat::from_rotation_arc(Vec3::NEG_Z, dir);
        HandState {
            pose: (head + ray * self.depth, orientation),
            trigger: if self.trigger { 1.0 } else { 0.0 },
            buttons: self.right_buttons,
        }
    }

    /// The left hand rests at the screen's lower left, in front of it.
    pub fn left_hand(&self) -> HandState {
        let s = &self.calibration.screen;
        let inward = s.normal() * 0.1;
        HandState {
            pose: (s.lower_left + inward, Quat::IDENTITY),
            trigger: 0.0,
            buttons: self.left_pulse | self.measured.left_buttons,
        }
    }

    /// Samples the source, if any, and keeps what it tracked.
    fn sample_source(&mut self) {
        let Some(source) = self.source.as_mut() else {
            return;
        };
        let pose = source.sample();
        let tracked = source.tracked();
        self.measured = Measured {
            head: tracked.head.then_some(pose.head),
            right: tracked.right.then_some(pose.input.right),
            left_buttons: pose.input.left.buttons,
        };
    }
}

impl Tracker for DeskTracker {
    fn sample(&mut self) -> TrackedPose {
        self.sample_source();
        self.sequence += 1;
        let input = InputFrame {
            time: self.started.elapsed().as_secs_f64(),
            right: self.right_hand(),
            left: self.left_hand(),
        };
        // A pulse lasts for the frame that first sees it (both of its samples).
        if self.left_pulse != 0 {
            if self.left_pulse_sampled {
                self.left_pulse = 0;
                self.left_pulse_sampled = false;
            } else {
                self.left_pulse_sampled = true;
            }
        }
        TrackedPose {
            head: self.head(),
            input,
            sequence: self.sequence,
            sampled_at: Instant::now(),
        }
    }
}

/// Undo and redo, as the left hand's buttons.
pub const UNDO: u32 = buttons::A;
/// Redo, as the left hand's B button.
pub const REDO: u32 = buttons::B;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{Calibration, stereo_views};

    fn tracker() -> DeskTracker {
        DeskTracker::new(Calibration::default_monitor(), (800, 450))
    }

    /// The mouse at a pixel puts the cursor (at depth 1) on the physical
    /// screen under that pixel, so both eyes see it where the mouse is: zero
    /// parallax, the registration of LEMAN §5.1.
    #[test]
    fn the_cursor_sits_under_the_mouse_on_the_glass() {
        let mut t = tracker();
        let cal = Calibration::default_monitor();
        for (x, y) in [(400.0, 225.0), (100.0, 50.0), (700.0, 400.0)] {
            t.mouse_moved(x, y);
            let hand = t.right_hand().position();
            assert!(cal.screen.signed_distance(hand).abs() < 1e-5);
            let views = stereo_views(&cal, t.head(), Mat4::IDENTITY);
            let reg = cal.tracker_to_world.world_from_tracker();
            for v in views {
                let ndc = v.project(reg.transform_point3(hand)).unwrap();
                let px = (ndc.x + 1.0) * 0.5 * 800.0;
                let py = (1.0 - ndc.y) * 0.5 * 450.0;
                assert!(
                    (px - x).abs() < 0.05 && (py - y).abs() < 0.05,
                    "({px}, {py}) vs ({x}, {y})"
                );
            }
        }
    }

    #[test]
    fn the_wheel_moves_the_cursor_along_the_ray_and_the_wand_points_along_it() {
        let mut t = tracker();
        t.mouse_moved(200.0, 100.0);
        let a = t.right_hand();
        t.wheel(3.0);
        let b = t.right_hand();
        let (head, _) = t.head();
        let along = (b.position() - head).normalize();
        assert!((a.position() - head).normalize().dot(along) > 0.99999);
        assert!((b.position() - head).length() > (a.position() - head).length() * 1.15);
        assert!(
            b.pointing().dot(along) > 0.9999,
            "the wand points into the screen"
        );
    }

    #[test]
    fn an_undo_pulse_lasts_exactly_one_frame() {
        let mut t = tracker();
        t.pulse_left(UNDO);
        // Frame 1: both samples see it; frame 2 does not.
        assert!(t.sample().input.left.held(UNDO));
        assert!(t.sample().input.left.held(UNDO));
        assert!(!t.sample().input.left.held(UNDO));
    }

    /// A scripted source: each sample pops the next (pose, tracked parts).
    struct Scripted(Vec<(TrackedPose, TrackedParts)>, TrackedParts);

    impl Tracker for Scripted {
        fn sample(&mut self) -> TrackedPose {
            let (pose, parts) = self.0.remove(0);
            self.1 = parts;
            pose
        }
        fn tracked(&self) -> TrackedParts {
            self.1
        }
    }

    fn pose(head: Vec3, right: Vec3, trigger: bool) -> TrackedPose {
        TrackedPose {
            head: (head, Quat::from_rotation_y(0.1)),
            input: InputFrame {
                time: 0.0,
                right: HandState::at(right).with_trigger(trigger),
                left: HandState::default().with_buttons(REDO),
            },
            sequence: 0,
            sampled_at: Instant::now(),
        }
    }

    /// The head follows the source while it tracks it, and falls back to
    /// the calibration's fixed head when it does not; the same for the right
    /// hand and the mouse ray, which starts at whichever head is in use.
    #[test]
    fn a_source_gives_the_head_and_the_right_hand_while_it_tracks_them() {
        let cal = Calibration::default_monitor();
        let tracked_head = Vec3::new(0.05, 0.02, 0.55);
        let tool = Vec3::new(0.1, 0.0, 0.2);
        let head_only = TrackedParts {
            head: true,
            ..TrackedParts::NONE
        };
        let source = Scripted(
            vec![
                (pose(tracked_head, tool, true), TrackedParts::ALL),
                (pose(tracked_head, tool, true), head_only),
                (
                    pose(Vec3::splat(9.0), Vec3::splat(9.0), true),
                    TrackedParts::NONE,
                ),
            ],
            TrackedParts::NONE,
        );
        let mut t = tracker().with_source(Box::new(source));
        t.mouse_moved(400.0, 225.0);

        let s = t.sample();
        assert_eq!(s.head.0, tracked_head);
        assert_eq!(s.input.right.position(), tool);
        assert!(s.input.right.triggered(), "the controller's trigger");
        assert!(s.input.left.held(REDO), "the source's left buttons");
        assert_eq!(
            t.from_source(),
            TrackedParts {
                head: true,
                left: false,
                right: true
            }
        );
        assert_eq!(
            t.sources_line(),
            "head tracked, right hand tracked controller"
        );

        // The hand is lost: the mouse ray from the tracked head.
        let s = t.sample();
        assert_eq!(s.head.0, tracked_head);
        let on_glass = t.screen_point();
        let dir = (s.input.right.position() - tracked_head).normalize();
        assert!(dir.dot((on_glass - tracked_head).normalize()) > 0.99999);
        assert!(!s.input.right.triggered(), "the mouse's trigger");

        // Everything is lost: the fixed head, whatever the source said.
        let s = t.sample();
        assert_eq!(s.head, cal.fixed_head.pair());
        assert!(cal.screen.signed_distance(s.input.right.position()).abs() < 1e-5);
        assert_eq!(
            t.sources_line(),
            "head fixed (calibration), right hand mouse ray"
        );
    }

    #[test]
    fn turning_orbits_the_screen_centre_and_flying_forward_enters_the_screen() {
        let pivot = Vec3::new(0.0, 0.0, 0.0);
        let turn = VehicleAxes {
            yaw: 1.0,
            ..Default::default()
        }
        .delta(0.5, pivot);
        assert!(turn.transform_point3(pivot).distance(pivot) < 1e-6);
        let fwd = VehicleAxes {
            forward: 1.0,
            ..Default::default()
        }
        .delta(1.0, pivot);
        // world_from_tracker · delta: the tracker's origin moves to −z in the
        // old tracker frame, i.e. the viewer moved into the screen.
        assert!((fwd.transform_point3(Vec3::ZERO).z + FLY_SPEED).abs() < 1e-6);
    }
}
