//! Where the world sits in the headset: dragged, turned and scaled by the
//! squeeze buttons ([`WorldGrab`]), or recentred in front of the user.

use crate::kinematics::PosedBody;
use crate::snapshot::SceneSnapshot;
use glam::{Mat4, Quat, Vec3};

/// Where the recentred character stands: this far in front of the head...
pub const ARM_LENGTH: f32 = 0.6;
/// ... this far below the eyes (chest height) ...
pub const BELOW_EYES: f32 = 0.2;
/// ... and this tall (its largest extent), in physical metres.
pub const COMFORTABLE_SIZE: f32 = 0.45;

/// The world grab of the squeeze buttons, in tracker space: one hand
/// squeezed drags the world with it; both hands scale it (hands apart =
/// bigger) and turn it about the vertical through their midpoint, so the
/// world points first under the hands stay under them.
#[derive(Clone, Debug, Default)]
pub struct WorldGrab {
    start: Option<GrabStart>,
}

#[derive(Clone, Copy, Debug)]
struct GrabStart {
    squeezed: [bool; 2],
    hands: [Vec3; 2],
    vehicle: Mat4,
}

/// Yaw angle `θ` with `R_y(θ) · x̂` along `v`'s horizontal part.
fn yaw_of(v: Vec3) -> f32 {
    (-v.z).atan2(v.x)
}

impl WorldGrab {
    /// Whether a grab is in progress.
    #[cfg(test)]
    pub fn active(&self) -> bool {
        self.start.is_some()
    }

    /// The vehicle (`world_from_tracker`) for this frame's hands, or `None`
    /// when no hand squeezes. A change in which hands squeeze restarts the
    /// grab from here, so going from one hand to two (or back) is seamless.
    pub fn update(&mut self, squeezed: [bool; 2], hands: [Vec3; 2], vehicle: Mat4) -> Option<Mat4> {
        if !squeezed.iter().any(|&s| s) {
            self.start = None;
            return None;
        }
        let start = match self.start {
            Some(s) if s.squeezed == squeezed => s,
            _ => {
                let s = GrabStart {
                    squeezed,
                    hands,
                    vehicle,
                };
                self.start = Some(s);
                return Some(vehicle);
            }
        };
        let [a0, b0] = start.hands;
        let [a, b] = hands;
        let m = match squeezed {
            [true, true] => {
                let (d0, d) = (b0 - a0, b - a);
                let (len0, len) = (d0.length(), d.length());
                if len < 0.01 || len0 < 0.01 {
                    return Some(vehicle);
                }
                let k = (len0 / len).clamp(0.05, 20.0);
                let theta = yaw_of(d0) - yaw_of(d);
                let (mid0, mid) = ((a0 + b0) * 0.5, (a + b) * 0.5);
                Mat4::from_translation(mid0)
                    * Mat4::from_rotation_y(theta)
                    * Mat4::from_scale(Vec3::splat(k))
                    * Mat4::from_translation(-mid)
            }
            [true, false] => Mat4::from_translation(a0 - a),
            _ => Mat4::from_translation(b0 - b),
        };
        Some(start.vehicle * m)
    }
}

/// The vehicle that puts the character's bounding box (`lo`, `hi`, world
/// space) at [`ARM_LENGTH`] in front of `head` (tracker space), at chest
/// height, facing the user, its largest extent [`COMFORTABLE_SIZE`] tall.
pub fn recentred(head: (Vec3, Quat), lo: Vec3, hi: Vec3) -> Mat4 {
    let (eye, orientation) = head;
    let mut forward = orientation * Vec3::NEG_Z;
    forward.y = 0.0;
    let forward = forward.try_normalize().unwrap_or(Vec3::NEG_Z);
    let target = Vec3::new(0.0, -BELOW_EYES, 0.0) + eye + forward * ARM_LENGTH;
    let extent = (hi - lo).max_element();
    let scale = if extent.is_finite() && extent > 1e-4 {
        (extent / COMFORTABLE_SIZE).clamp(0.02, 50.0)
    } else {
        1.0
    };
    // R_y(φ) takes −z to `forward`; the vehicle turns `forward` back to −z,
    // so the user looks at the character from the world's +z side (its
    // front, as at the desk).
    let phi = (-forward.x).atan2(-forward.z);
    let centre = (lo + hi) * 0.5;
    Mat4::from_translation(centre)
        * Mat4::from_rotation_y(-phi)
        * Mat4::from_scale(Vec3::splat(scale))
        * Mat4::from_translation(-target)
}

/// The bounding box of what a snapshot shows: its skins and its joints.
pub fn snapshot_bounds(snapshot: &SceneSnapshot) -> Option<(Vec3, Vec3)> {
    let body = PosedBody::new(&snapshot.character, &snapshot.posture);
    let points = snapshot
        .skins
        .iter()
        .flat_map(|s| s.positions.iter().copied())
        .chain(body.joints.iter().map(|j| Vec3::from(j.translation)));
    let mut bounds: Option<(Vec3, Vec3)> = None;
    for p in points.filter(|p| p.is_finite()) {
        bounds = Some(match bounds {
            None => (p, p),
            Some((lo, hi)) => (lo.min(p), hi.max(p)),
        });
    }
    bounds
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    fn close(a: Vec3, b: Vec3) -> bool {
        a.distance(b) < 1e-4
    }

    /// One hand: the world point first under it stays under it.
    #[test]
    fn one_hand_drags_the_world() {
        let v0 = Mat4::from_scale_rotation_translation(
            Vec3::splat(1.5),
            Quat::from_rotation_y(0.4),
            Vec3::new(0.2, -1.0, 0.5),
        );
        let mut g = WorldGrab::default();
        let a0 = Vec3::new(0.1, 1.2, -0.4);
        assert_eq!(g.update([false, true], [Vec3::ZERO, a0], v0), Some(v0));
        let held = v0.transform_point3(a0);
        let a = a0 + Vec3::new(0.3, -0.1, 0.2);
        let v = g.update([false, true], [Vec3::ZERO, a], v0).unwrap();
        assert!(close(v.transform_point3(a), held));
        // Rotation and scale are kept.
        assert!(close(
            v.transform_vector3(Vec3::X),
            v0.transform_vector3(Vec3::X)
        ));
        assert_eq!(g.update([false, false], [Vec3::ZERO, a], v), None);
        assert!(!g.active());
    }

    /// Two hands: both world points first under the hands stay under them
    /// (for hands moved apart and turned about the vertical), and the scale
    /// follows the hands' distance.
    #[test]
    fn two_hands_scale_and_turn_the_world_about_their_midpoint() {
        let v0 = Mat4::from_translation(Vec3::new(0.0, 0.0, 1.0));
        let mut g = WorldGrab::default();
        let (a0, b0) = (Vec3::new(-0.2, 1.2, -0.4), Vec3::new(0.2, 1.2, -0.4));
        g.update([true, true], [a0, b0], v0);
        let (wa, wb) = (v0.transform_point3(a0), v0.transform_point3(b0));
        // Hands twice as far apart, turned 30° about the vertical, moved.
        let turn = Quat::from_rotation_y(0.5);
        let mid = Vec3::new(0.1, 1.3, -0.3);
        let (a, b) = (
            mid + turn * (a0 - (a0 + b0) * 0.5) * 2.0,
            mid + turn * (b0 - (a0 + b0) * 0.5) * 2.0,
        );
        let v = g.update([true, true], [a, b], v0).unwrap();
        assert!(
            close(v.transform_point3(a), wa),
            "{}",
            v.transform_point3(a)
        );
        assert!(
            close(v.transform_point3(b), wb),
            "{}",
            v.transform_point3(b)
        );
        let scale = v.x_axis.truncate().length();
        assert!(
            (scale - 0.5).abs() < 1e-4,
            "hands apart: the world is bigger ({scale})"
        );
        // Up stays up.
        assert!(close(v.transform_vector3(Vec3::Y).normalize(), Vec3::Y));
    }

    /// Going from two hands to one restarts the grab where it is (no jump).
    #[test]
    fn changing_hands_does_not_jump() {
        let mut g = WorldGrab::default();
        let v0 = Mat4::IDENTITY;
        let (a, b) = (Vec3::new(-0.2, 1.2, -0.4), Vec3::new(0.2, 1.2, -0.4));
        g.update([true, true], [a, b], v0);
        let v1 = g.update([true, true], [a * 1.1, b * 0.9], v0).unwrap();
        assert_eq!(g.update([true, false], [a * 1.1, b * 0.9], v1), Some(v1));
    }

    /// The recentred character: its centre at arm's length in front of the
    /// head at chest height, its largest extent `COMFORTABLE_SIZE`, its front
    /// (+z) towards the user, whichever way the user faces.
    #[test]
    fn recentring_puts_the_character_at_arms_length() {
        let (lo, hi) = (Vec3::new(-0.3, 0.0, -0.2), Vec3::new(0.3, 0.9, 0.2));
        for yaw in [0.0f32, 1.0, -2.5] {
            let head = (Vec3::new(0.3, 1.7, -0.2), Quat::from_rotation_y(yaw));
            let v = recentred(head, lo, hi);
            let tracker_from_world = v.inverse();
            let centre = tracker_from_world.transform_point3((lo + hi) * 0.5);
            let forward = Quat::from_rotation_y(yaw) * Vec3::NEG_Z;
            let want = head.0 + forward * ARM_LENGTH - Vec3::Y * BELOW_EYES;
            assert!(close(centre, want), "yaw {yaw}: {centre} vs {want}");
            let top = tracker_from_world.transform_point3(Vec3::new(0.0, 0.9, 0.0));
            let bottom = tracker_from_world.transform_point3(Vec3::ZERO);
            assert!(((top - bottom).length() - COMFORTABLE_SIZE).abs() < 1e-4);
            // The world's +z (the character's front) points back at the user.
            let front = tracker_from_world.transform_vector3(Vec3::Z).normalize();
            assert!(close(front, -forward), "yaw {yaw}: {front}");
        }
    }
}
