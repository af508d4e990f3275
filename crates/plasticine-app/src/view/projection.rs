//! Kooima's generalized perspective projection ("Generalized Perspective
//! Projection", 2008): the frustum of an eye looking through a physical
//! screen rectangle, wherever the eye is.
//!
//! Conventions (see also the [module docs](super)):
//! - right-handed coordinates, y up; the eye space of [`EyeView::view`] has
//!   x along the screen's right edge, y along its up edge and z out of the
//!   screen towards the viewer, so the eye looks down −z;
//! - clip space is wgpu's (the same as glam's `camera::rh::proj::directx`,
//!   which glam also names `webgpu`): NDC x right and y **up** in [−1, 1],
//!   depth z in [0, 1] with the near plane at 0 and the far plane at 1. wgpu
//!   flips y to framebuffer rows itself. This is **not** glam's `vulkan`
//!   module, which flips y.
//! - near and far are distances from the eye along the screen normal (the
//!   near and far planes are parallel to the screen), in the units of the
//!   screen and eye positions.

use glam::{Mat4, UVec2, Vec2, Vec3, Vec4};
use serde::{Deserialize, Serialize};

/// The eye is kept at least this far in front of the screen plane (same
/// units as the positions). A tracked head that crosses the plane would
/// otherwise give no frustum at all.
pub const MIN_EYE_DISTANCE: f32 = 1e-3;

/// A physical screen rectangle, given by three of its corners (Kooima's
/// pa, pb, pc). The fourth, [`Screen::upper_right`], follows. The viewer is
/// on the side of [`Screen::normal`], where lower-left → lower-right →
/// upper-left turns counter-clockwise.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Screen {
    /// The lower-left corner (Kooima's pa), as the viewer sees it.
    pub lower_left: Vec3,
    /// The lower-right corner (Kooima's pb).
    pub lower_right: Vec3,
    /// The upper-left corner (Kooima's pc).
    pub upper_left: Vec3,
}

impl Screen {
    /// A `width` × `height` screen centred at `centre`, facing `normal`, with
    /// its up edge along `up` (projected perpendicular to `normal`).
    pub fn centred(centre: Vec3, width: f32, height: f32, normal: Vec3, up: Vec3) -> Self {
        let vn = normal.normalize();
        let vr = up.cross(vn).normalize();
        let vu = vn.cross(vr);
        let (hw, hh) = (0.5 * width * vr, 0.5 * height * vu);
        Self {
            lower_left: centre - hw - hh,
            lower_right: centre + hw - hh,
            upper_left: centre - hw + hh,
        }
    }

    /// The fourth corner, completing the parallelogram of the other three.
    pub fn upper_right(&self) -> Vec3 {
        self.lower_right + self.upper_left - self.lower_left
    }

    /// The corners in measuring order, [`Corner::ALL`](super::Corner::ALL):
    /// lower-left, lower-right, upper-right, upper-left.
    pub fn corners(&self) -> [Vec3; 4] {
        [
            self.lower_left,
            self.lower_right,
            self.upper_right(),
            self.upper_left,
        ]
    }

    /// The screen's centre: the midpoint of its lower-right and upper-left corners.
    pub fn centre(&self) -> Vec3 {
        0.5 * (self.lower_right + self.upper_left)
    }

    /// The length of the bottom edge, lower-left to lower-right (same units as the corners).
    pub fn width(&self) -> f32 {
        (self.lower_right - self.lower_left).length()
    }

    /// The length of the left edge, lower-left to upper-left (same units as the corners).
    pub fn height(&self) -> f32 {
        (self.upper_left - self.lower_left).length()
    }

    /// Kooima's orthonormal screen basis `(vr, vu, vn)`: right, up, and the
    /// normal towards the viewer. `vr` is along the bottom edge; `vu` is the
    /// left edge made exactly perpendicular to it (Kooima normalises the left
    /// edge as is; the two agree for a rectangle, and this keeps the view
    /// matrix a rotation when a hand-edited screen is off by a fraction of a
    /// degree).
    pub fn basis(&self) -> (Vec3, Vec3, Vec3) {
        let vr = (self.lower_right - self.lower_left).normalize();
        let vn = vr.cross(self.upper_left - self.lower_left).normalize();
        let vu = vn.cross(vr);
        (vr, vu, vn)
    }

    /// The unit normal towards the viewer (`vn` of [`Screen::basis`]).
    pub fn normal(&self) -> Vec3 {
        self.basis().2
    }

    /// Signed distance of `p` from the screen plane, positive on the
    /// viewer's side.
    pub fn signed_distance(&self, p: Vec3) -> f32 {
        self.normal().dot(p - self.lower_left)
    }

    /// The same screen moved by an affine transform (rigid motion with
    /// uniform scale).
    pub fn transformed(&self, m: &Mat4) -> Screen {
        Screen {
            lower_left: m.transform_point3(self.lower_left),
            lower_right: m.transform_point3(self.lower_right),
            upper_left: m.transform_point3(self.upper_left),
        }
    }
}

/// What the renderer needs for one eye.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EyeView {
    /// Eye position, world space.
    pub eye: Vec3,
    /// World → eye space: a rotation into the screen basis after moving the
    /// eye to the origin (no scale).
    pub view: Mat4,
    /// Eye space → clip space (wgpu conventions, depth in [0, 1]).
    pub projection: Mat4,
}

impl EyeView {
    /// World → clip space: `projection * view`.
    pub fn view_projection(&self) -> Mat4 {
        self.projection * self.view
    }

    /// Normalized device coordinates of a world point: x right and y up in
    /// [−1, 1] across the screen, depth z in [0, 1] from near to far. Points
    /// outside the frustum give values outside these ranges; `None` only
    /// when the point is on or behind the eye plane (clip w ≤ 0), where a
    /// projection means nothing.
    pub fn project(&self, world: Vec3) -> Option<Vec3> {
        let clip = self.view_projection() * world.extend(1.0);
        (clip.w > 0.0).then(|| clip.truncate() / clip.w)
    }
}

/// Pixel coordinates of an NDC position in a `viewport` of `size` pixels:
/// x right, y down, integer values at pixel centres. (0, 0) is the centre of
/// the top-left pixel and (width − 1, height − 1) that of the bottom-right
/// one; NDC (−1, 1), the top-left corner of the image, is (−0.5, −0.5).
/// `round()` gives the index of the pixel the point falls in.
pub fn ndc_to_pixel(ndc: Vec2, size: UVec2) -> Vec2 {
    let s = size.as_vec2();
    Vec2::new(
        0.5 * (ndc.x + 1.0) * s.x - 0.5,
        0.5 * (1.0 - ndc.y) * s.y - 0.5,
    )
}

/// The inverse of [`ndc_to_pixel`].
pub fn pixel_to_ndc(pixel: Vec2, size: UVec2) -> Vec2 {
    let s = size.as_vec2();
    Vec2::new(
        2.0 * (pixel.x + 0.5) / s.x - 1.0,
        1.0 - 2.0 * (pixel.y + 0.5) / s.y,
    )
}

/// The perspective projection of the frustum with extents `l, r, b, t` on
/// the near plane at distance `n`, and far plane at `f`: OpenGL's
/// `glFrustum` with depth mapped to [0, 1] (near → 0, far → 1) instead of
/// [−1, 1]. Right-handed, looking down −z, NDC y up.
pub fn frustum(l: f32, r: f32, b: f32, t: f32, n: f32, f: f32) -> Mat4 {
    Mat4::from_cols(
        Vec4::new(2.0 * n / (r - l), 0.0, 0.0, 0.0),
        Vec4::new(0.0, 2.0 * n / (t - b), 0.0, 0.0),
        Vec4::new((r + l) / (r - l), (t + b) / (t - b), f / (n - f), -1.0),
        Vec4::new(0.0, 0.0, n * f / (n - f), 0.0),
    )
}

/// Kooima's off-axis projection of `eye` through `screen`, both in the same
/// (world) space, with near and far planes parallel to the screen at
/// distances `near` and `far` from the eye. The screen's corners land
/// exactly on the NDC corners (±1, ±1).
///
/// An eye on or behind the screen plane (a tracking glitch) is moved along
/// the normal to [`MIN_EYE_DISTANCE`] in front of it, so there is always a
/// frustum; [`Calibration::validate`](super::Calibration::validate) refuses
/// a fixed head there.
pub fn off_axis(screen: &Screen, eye: Vec3, near: f32, far: f32) -> EyeView {
    let (vr, vu, vn) = screen.basis();
    let pa = screen.lower_left;
    // Distance from the eye to the screen plane (Kooima's d).
    let mut d = -vn.dot(pa - eye);
    let eye = if d < MIN_EYE_DISTANCE {
        let moved = eye + (MIN_EYE_DISTANCE - d) * vn;
        d = MIN_EYE_DISTANCE;
        moved
    } else {
        eye
    };
    let va = pa - eye;
    let vb = screen.lower_right - eye;
    let vc = screen.upper_left - eye;
    let scale = near / d;
    let l = vr.dot(va) * scale;
    let r = vr.dot(vb) * scale;
    let b = vu.dot(va) * scale;
    let t = vu.dot(vc) * scale;
    let projection = frustum(l, r, b, t, near, far);
    // M^T: rows are the screen basis; then move the eye to the origin.
    let rotation =
        Mat4::from_cols(vr.extend(0.0), vu.extend(0.0), vn.extend(0.0), Vec4::W).transpose();
    let view = rotation * Mat4::from_translation(-eye);
    EyeView {
        eye,
        view,
        projection,
    }
}
