//! Eyes, screen and projection for a desk set-up with a tracked head
//! (LEMAN §5.1, "fishtank VR"): each eye's frustum is the pyramid from the
//! eye through the corners of the physical screen, recomputed every frame
//! from the tracked head; the eyes are offsets from the head; the screen's
//! position in tracker space comes from measuring its four corners with a
//! tracked pointer (the calibration). The projection is Kooima's
//! "Generalized Perspective Projection" (2008).
//!
//! This module knows nothing about the GPU: it produces matrices.
//!
//! # Spaces
//!
//! - **Tracker space**: where the tracker reports the head and hands, in
//!   metres. The calibration's screen corners and fixed head are in it. The
//!   default monitor calibration takes x right, y up, z out of the screen.
//! - **Head frame**: x right, y up, looking down −z (`OpenXR` view space); the
//!   eye offsets are in it.
//! - **World space**: where the characters are: right-handed, y up, feet at
//!   y = 0, a character 0.5–1 m tall. `world_from_tracker =
//!   world_from_vehicle * tracker_to_world`, where `tracker_to_world` is the
//!   calibration's registration (rotation, translation, uniform scale) and
//!   `world_from_vehicle` the desk "vehicle" the left hand flies (identity
//!   when not flying). Both must be similarities (rotation, translation,
//!   positive uniform scale).
//!
//! # Conventions for the renderer
//!
//! - [`EyeView::view`] takes world points to eye space: origin at the eye,
//!   x along the screen's bottom edge (right), y along its left edge (up), z
//!   out of the screen towards the viewer; the eye looks down −z. It is a
//!   rotation and translation only (world units).
//! - [`EyeView::projection`] takes eye space to clip space in **wgpu's
//!   convention**: NDC x right, y **up**, both in [−1, 1] across the screen's
//!   picture; depth z in **[0, 1]**, 0 at the near plane and 1 at the far
//!   plane (use `CompareFunction::Less` with depth cleared to 1.0). wgpu
//!   turns NDC y up into framebuffer rows going down itself, so no flip is
//!   needed. This is glam's `camera::rh::proj::directx` convention (glam
//!   also calls it `webgpu`), not glam's `vulkan` one, which flips y.
//! - Triangles counter-clockwise as seen by the eye stay counter-clockwise
//!   in NDC (the projection keeps handedness), so `FrontFace::Ccw`.
//! - Each eye's image covers the whole physical screen (or the whole
//!   viewport given to that eye). A point on the screen plane lands on the
//!   same pixel for both eyes (zero parallax); in front of the screen the
//!   right eye sees it further left than the left eye (crossed, negative
//!   parallax); behind the screen further right (positive parallax).
//! - [`ndc_to_pixel`] converts NDC to pixel coordinates (x right, y down,
//!   integer values at pixel centres) to predict where a point lands.
//! - Index 0 of [`stereo_views`] is the left eye, 1 the right.
//! - Calibration near/far are physical metres from the eye (along the screen
//!   normal); [`stereo_views`] scales them into world units.

mod calibration;
mod capture;
mod error;
mod fit;
mod projection;

pub use calibration::{
    CALIBRATION_FORMAT, CALIBRATION_FORMAT_VERSION, Calibration, DEFAULT_IPD, EyeOffsets, HeadPose,
    MAX_CALIBRATION_FILE_BYTES, MAX_EYE_OFFSET, MAX_IPD, MAX_SCREEN_SIDE, MAX_SKEW_DEGREES,
    MIN_SCREEN_SIDE, MONITOR_24_INCH, Registration,
};
pub use capture::CornerCapture;
pub use error::{CalibrationError, CalibrationFileError, Corner};
pub use fit::{MAX_RESIDUAL_FRACTION, MIN_VIEWER_DISTANCE, ScreenFit, fit_screen};
pub use projection::{
    EyeView, MIN_EYE_DISTANCE, Screen, frustum, ndc_to_pixel, off_axis, pixel_to_ndc,
};

use glam::{Mat4, Quat, Vec3};

/// The two eyes' views for a head pose in tracker space: index 0 is the left
/// eye, 1 the right. The eyes are the head pose applied to the calibration's
/// eye offsets; the eyes and the physical screen's corners are taken into
/// world space by `world_from_vehicle * tracker_to_world`, so each frustum
/// is the physical screen seen from the physical eye, wherever the vehicle
/// has flown. Near and far (physical metres) are scaled into world units.
pub fn stereo_views(
    cal: &Calibration,
    head_in_tracker: (Vec3, Quat),
    world_from_vehicle: Mat4,
) -> [EyeView; 2] {
    let world_from_tracker = cal.world_from_tracker(world_from_vehicle);
    let screen = cal.screen.transformed(&world_from_tracker);
    let scale = screen.width() / cal.screen.width();
    let (near, far) = (cal.near * scale, cal.far * scale);
    let (position, orientation) = head_in_tracker;
    [cal.eyes.left, cal.eyes.right].map(|offset| {
        let eye = world_from_tracker.transform_point3(position + orientation * offset);
        off_axis(&screen, eye, near, far)
    })
}

#[cfg(test)]
mod tests;
