//! The calibration of a desk set-up (LEMAN §5.1): where the physical screen
//! is in tracker space, where the eyes are relative to the tracked head, a
//! head pose to use when there is no head tracker, how tracker space maps to
//! world space, and the clipping distances. Stored as a versioned RON file:
//!
//! ```ron
//! (
//!     format: "plasticine-calibration",
//!     version: 1,
//!     calibration: (
//!         screen: (lower_left: (x, y, z), lower_right: (...), upper_left: (...)),
//!         eyes: (left: (-0.032, 0.0, 0.0), right: (0.032, 0.0, 0.0)),
//!         fixed_head: (position: (0.0, 0.0, 0.6), orientation: (0.0, 0.0, 0.0, 1.0)),
//!         tracker_to_world: (translation: (0.0, 0.5, 0.0), rotation: (0.0, 0.0, 0.0, 1.0), scale: 4.0),
//!         near: 0.05,
//!         far: 50.0,
//!     ),
//! )
//! ```
//!
//! Unknown fields are refused (a misspelt field would otherwise be silently
//! replaced by nothing). Loading checks the header first, so another format
//! or a newer version is refused clearly, then parses, then runs
//! [`Calibration::validate`]. Saving validates and writes atomically
//! ([`write_atomic`]). `calibration/README.md` describes the fields for
//! people.

use super::error::{CalibrationError, CalibrationFileError, Corner};
use super::projection::{MIN_EYE_DISTANCE, Screen};
use crate::io::read_text;
use crate::io::{IoError, write_atomic};
use glam::{Mat4, Quat, Vec3};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `format` string of a calibration file.
pub const CALIBRATION_FORMAT: &str = "plasticine-calibration";
/// The version this build writes, and the newest it reads.
pub const CALIBRATION_FORMAT_VERSION: u32 = 1;
/// Calibration files larger than this are refused unread (1 MiB; a real one
/// is under 1 KiB).
pub const MAX_CALIBRATION_FILE_BYTES: u64 = 1 << 20;
/// Nesting depth RON allows while parsing (a calibration needs 4).
const RON_RECURSION_LIMIT: usize = 32;

/// Interpupillary distance used when none is measured (metres).
pub const DEFAULT_IPD: f32 = 0.064;
/// Largest accepted interpupillary distance (metres).
pub const MAX_IPD: f32 = 0.1;
/// Largest accepted distance of an eye from the tracked head point (metres).
pub const MAX_EYE_OFFSET: f32 = 0.25;
/// Accepted screen sides, metres: from a phone to a projection wall.
pub const MIN_SCREEN_SIDE: f64 = 0.05;
/// Largest accepted screen side (metres).
pub const MAX_SCREEN_SIDE: f64 = 20.0;
/// Largest accepted deviation of the screen's corner angle from 90°.
pub const MAX_SKEW_DEGREES: f32 = 1.0;
/// Corners closer than this are the same point (metres).
pub const COINCIDENT_CORNERS: f64 = 0.005;

/// The two eye positions in the head frame (metres): x right, y up, z
/// backwards (the head looks down −z, as `OpenXR`'s view space).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EyeOffsets {
    /// The left eye's offset from the tracked head point, in the head frame (metres).
    pub left: Vec3,
    /// The right eye's offset from the tracked head point, in the head frame (metres).
    pub right: Vec3,
}

impl EyeOffsets {
    /// Eyes at ∓`ipd`/2 along the head's x axis.
    pub fn from_ipd(ipd: f32) -> Self {
        Self {
            left: Vec3::new(-0.5 * ipd, 0.0, 0.0),
            right: Vec3::new(0.5 * ipd, 0.0, 0.0),
        }
    }

    /// The interpupillary distance.
    pub fn ipd(&self) -> f32 {
        self.left.distance(self.right)
    }
}

/// A head pose in tracker space: the head frame's origin (the tracked point)
/// and its orientation (identity: looking down tracker −z, y up).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadPose {
    /// The tracked head point, in tracker space (metres).
    pub position: Vec3,
    /// The head frame's orientation in tracker space.
    pub orientation: Quat,
}

impl HeadPose {
    /// A head point (tracker space) of an offset in the head frame.
    pub fn transform(&self, offset: Vec3) -> Vec3 {
        self.position + self.orientation * offset
    }

    /// As the `(position, orientation)` pair [`super::stereo_views`] takes.
    pub fn pair(&self) -> (Vec3, Quat) {
        (self.position, self.orientation)
    }
}

/// The registration of tracker space in world space: a similarity,
/// `world = translation + rotation * (scale * tracker)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registration {
    /// Where the tracker origin lands in world space (world units).
    pub translation: Vec3,
    /// The rotation of tracker axes into world axes, applied after the scale.
    pub rotation: Quat,
    /// World units per tracker metre.
    pub scale: f32,
}

impl Registration {
    /// Tracker space is world space: no translation or rotation, scale 1.
    pub const IDENTITY: Registration = Registration {
        translation: Vec3::ZERO,
        rotation: Quat::IDENTITY,
        scale: 1.0,
    };

    /// The matrix taking tracker points to world points.
    pub fn world_from_tracker(&self) -> Mat4 {
        Mat4::from_scale_rotation_translation(
            Vec3::splat(self.scale),
            self.rotation,
            self.translation,
        )
    }
}

/// A desk set-up's calibration (see the module docs for the file).
///
/// Positions are in tracker space, in metres, except the eye offsets, which
/// are in the head frame. `near` and `far` are physical distances (metres)
/// from the eye along the screen normal; [`super::stereo_views`] converts
/// them to world units, so depth precision does not change with the zoom.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    /// The screen's picture area, tracker space.
    pub screen: Screen,
    /// The eyes, head frame.
    pub eyes: EyeOffsets,
    /// The head pose used when there is no head tracker, tracker space.
    pub fixed_head: HeadPose,
    /// Tracker space → world space.
    pub tracker_to_world: Registration,
    /// Near clipping distance, metres from the eye.
    pub near: f32,
    /// Far clipping distance, metres from the eye.
    pub far: f32,
}

/// Width and height of an ordinary 24" 16:9 monitor's picture (metres).
pub const MONITOR_24_INCH: (f32, f32) = (0.531, 0.299);

impl Calibration {
    /// An ordinary 24" 16:9 monitor (0.531 × 0.299 m) centred at the tracker
    /// origin in the tracker's x-y plane, facing +z, with the fixed head
    /// 0.60 m in front of its centre and the eyes 64 mm apart.
    ///
    /// World = 4 × tracker + (0, 0.5, 0): a 1 m tall character standing at
    /// the world origin (feet at y = 0) is shown 0.25 m tall, centred on the
    /// 0.299 m high screen and straddling the screen plane (where stereo is
    /// most comfortable: little parallax), seen from 2.4 world metres at the
    /// height of its middle. The screen spans world y −0.10 to 1.10.
    pub fn default_monitor() -> Self {
        let (w, h) = MONITOR_24_INCH;
        Self {
            screen: Screen {
                lower_left: Vec3::new(-w / 2.0, -h / 2.0, 0.0),
                lower_right: Vec3::new(w / 2.0, -h / 2.0, 0.0),
                upper_left: Vec3::new(-w / 2.0, h / 2.0, 0.0),
            },
            eyes: EyeOffsets::from_ipd(DEFAULT_IPD),
            fixed_head: HeadPose {
                position: Vec3::new(0.0, 0.0, 0.6),
                orientation: Quat::IDENTITY,
            },
            tracker_to_world: Registration {
                translation: Vec3::new(0.0, 0.5, 0.0),
                rotation: Quat::IDENTITY,
                scale: 4.0,
            },
            near: 0.05,
            far: 50.0,
        }
    }

    /// World from tracker, for a desk "vehicle" the left hand flies:
    /// `world_from_vehicle * tracker_to_world`.
    pub fn world_from_tracker(&self, world_from_vehicle: Mat4) -> Mat4 {
        world_from_vehicle * self.tracker_to_world.world_from_tracker()
    }

    /// The same set-up around another screen (for a screen measured in
    /// another tracker space): the fixed head and the registration move
    /// rigidly with the screen's frame (its centre and its right, up and
    /// normal axes), so the world and the viewer sit where they sat relative
    /// to the old screen. The new screen replaces the old one; eyes,
    /// clipping and the registration's scale are kept.
    pub fn moved_with_screen(&self, screen: Screen) -> Calibration {
        let frame = |s: &Screen| {
            let (vr, vu, vn) = s.basis();
            (
                Quat::from_mat3(&glam::Mat3::from_cols(vr, vu, vn)),
                s.centre(),
            )
        };
        let (old_rotation, old_centre) = frame(&self.screen);
        let (new_rotation, new_centre) = frame(&screen);
        // old_from_new: a rigid motion taking the new screen onto the old one.
        let rotation = (old_rotation * new_rotation.inverse()).normalize();
        let translation = old_centre - rotation * new_centre;
        let new_from_old = |p: Vec3| rotation.inverse() * (p - translation);
        let r = &self.tracker_to_world;
        Calibration {
            screen,
            fixed_head: HeadPose {
                position: new_from_old(self.fixed_head.position),
                orientation: (rotation.inverse() * self.fixed_head.orientation).normalize(),
            },
            tracker_to_world: Registration {
                translation: r.translation + r.scale * (r.rotation * translation),
                rotation: (r.rotation * rotation).normalize(),
                scale: r.scale,
            },
            ..*self
        }
    }

    /// Sets the eyes ∓`ipd`/2 along the head's x axis.
    pub fn set_ipd(&mut self, ipd: f32) {
        self.eyes = EyeOffsets::from_ipd(ipd);
    }

    /// Checks that the calibration describes a usable set-up. Each error says
    /// what is wrong and what to do.
    pub fn validate(&self) -> Result<(), CalibrationError> {
        self.check_finite()?;
        for (field, q) in [
            ("fixed_head.orientation", self.fixed_head.orientation),
            ("tracker_to_world.rotation", self.tracker_to_world.rotation),
        ] {
            let length = q.length();
            if (length - 1.0).abs() > 1e-3 {
                return Err(CalibrationError::NotUnitQuaternion {
                    field: field.into(),
                    length,
                });
            }
        }
        check_screen(&self.screen)?;
        let ipd = self.eyes.ipd();
        if !(ipd > 0.0 && ipd <= MAX_IPD) {
            return Err(CalibrationError::Ipd { ipd, max: MAX_IPD });
        }
        if (self.eyes.right - self.eyes.left).x <= 0.0 {
            return Err(CalibrationError::EyesSwapped);
        }
        for (eye, offset) in [("left", self.eyes.left), ("right", self.eyes.right)] {
            let distance = offset.length();
            if distance > MAX_EYE_OFFSET {
                return Err(CalibrationError::EyeFarFromHead {
                    eye,
                    distance,
                    max: MAX_EYE_OFFSET,
                });
            }
        }
        if self.near <= 0.0 {
            return Err(CalibrationError::Near { near: self.near });
        }
        if self.far <= self.near {
            return Err(CalibrationError::Far {
                near: self.near,
                far: self.far,
            });
        }
        if self.tracker_to_world.scale <= 0.0 {
            return Err(CalibrationError::Scale {
                scale: self.tracker_to_world.scale,
            });
        }
        let head = &self.fixed_head;
        for (what, p) in [
            ("fixed head", head.position),
            ("fixed head's left eye", head.transform(self.eyes.left)),
            ("fixed head's right eye", head.transform(self.eyes.right)),
        ] {
            let distance = self.screen.signed_distance(p);
            if distance <= MIN_EYE_DISTANCE {
                return Err(CalibrationError::NotInFront { what, distance });
            }
        }
        Ok(())
    }

    fn check_finite(&self) -> Result<(), CalibrationError> {
        let s = &self.screen;
        let r = &self.tracker_to_world;
        let vectors = [
            ("screen.lower_left", s.lower_left),
            ("screen.lower_right", s.lower_right),
            ("screen.upper_left", s.upper_left),
            ("eyes.left", self.eyes.left),
            ("eyes.right", self.eyes.right),
            ("fixed_head.position", self.fixed_head.position),
            ("tracker_to_world.translation", r.translation),
        ];
        let quats = [
            ("fixed_head.orientation", self.fixed_head.orientation),
            ("tracker_to_world.rotation", r.rotation),
        ];
        let scalars = [
            ("tracker_to_world.scale", r.scale),
            ("near", self.near),
            ("far", self.far),
        ];
        let bad = vectors
            .iter()
            .find(|(_, v)| !v.is_finite())
            .map(|(f, _)| *f)
            .or_else(|| quats.iter().find(|(_, q)| !q.is_finite()).map(|(f, _)| *f))
            .or_else(|| {
                scalars
                    .iter()
                    .find(|(_, x)| !x.is_finite())
                    .map(|(f, _)| *f)
            });
        match bad {
            Some(field) => Err(CalibrationError::NonFinite {
                field: field.into(),
            }),
            None => Ok(()),
        }
    }

    /// Loads and validates a calibration file.
    pub fn load(path: &Path) -> Result<Self, CalibrationFileError> {
        let text = read_text(path, MAX_CALIBRATION_FILE_BYTES)?;
        Self::parse(&text, path)
    }

    /// Parses and validates the text of a calibration file; `origin` names
    /// it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Self, CalibrationFileError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let header: Header = ron_options()
            .from_str(text)
            .map_err(|e| parse_error(origin, e))?;
        if header.format != CALIBRATION_FORMAT {
            return Err(IoError::WrongFormat {
                path: origin.to_path_buf(),
                expected: CALIBRATION_FORMAT,
                found: header.format,
            }
            .into());
        }
        if header.version != CALIBRATION_FORMAT_VERSION {
            // There are no older versions yet; when version 2 comes, version
            // 1 files are migrated here (see `io::character_file::migrate`).
            return Err(if header.version > CALIBRATION_FORMAT_VERSION {
                IoError::NewerVersion {
                    path: origin.to_path_buf(),
                    version: header.version,
                    supported: CALIBRATION_FORMAT_VERSION,
                }
            } else {
                IoError::UnknownVersion {
                    path: origin.to_path_buf(),
                    version: header.version,
                    oldest: CALIBRATION_FORMAT_VERSION,
                    supported: CALIBRATION_FORMAT_VERSION,
                }
            }
            .into());
        }
        let file: FileIn = ron_options()
            .from_str(text)
            .map_err(|e| parse_error(origin, e))?;
        file.calibration
            .validate()
            .map_err(|e| CalibrationFileError::invalid(origin, e))?;
        Ok(file.calibration)
    }

    /// The text [`Calibration::save`] writes (without validating).
    pub fn to_ron_string(&self) -> Result<String, ron::Error> {
        let file = FileOut {
            format: CALIBRATION_FORMAT,
            version: CALIBRATION_FORMAT_VERSION,
            calibration: self,
        };
        let mut text = ron_options().to_string_pretty(&file, ron::ser::PrettyConfig::new())?;
        text.push('\n');
        Ok(text)
    }

    /// Validates, then writes the file atomically (temporary file, fsync,
    /// rename): an invalid calibration is refused, and a reader never sees a
    /// half-written file.
    pub fn save(&self, path: &Path) -> Result<(), CalibrationFileError> {
        self.validate()
            .map_err(|e| CalibrationFileError::invalid(path, e))?;
        let text = self.to_ron_string().map_err(|e| IoError::Serialize {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        write_atomic(path, text.as_bytes())?;
        Ok(())
    }
}

/// The checks of a screen rectangle given by three corners, in order:
/// coincident corners, collinear corners, skew, size.
pub(crate) fn check_screen(s: &Screen) -> Result<(), CalibrationError> {
    let right = (s.lower_right - s.lower_left).as_dvec3();
    let up = (s.upper_left - s.lower_left).as_dvec3();
    for (b, v) in [(Corner::LowerRight, right), (Corner::UpperLeft, up)] {
        if v.length() < COINCIDENT_CORNERS {
            return Err(CalibrationError::CoincidentCorners {
                a: Corner::LowerLeft,
                b,
                distance_mm: v.length() * 1e3,
            });
        }
    }
    let diagonal = (s.lower_right - s.upper_left).as_dvec3().length();
    if diagonal < COINCIDENT_CORNERS {
        return Err(CalibrationError::CoincidentCorners {
            a: Corner::LowerRight,
            b: Corner::UpperLeft,
            distance_mm: diagonal * 1e3,
        });
    }
    let (width, height) = (right.length(), up.length());
    let cos = right.dot(up) / (width * height);
    let sin = right.cross(up).length() / (width * height);
    if sin < 1e-3 {
        return Err(CalibrationError::CollinearCorners);
    }
    let angle_deg = cos.clamp(-1.0, 1.0).acos().to_degrees() as f32;
    if (angle_deg - 90.0).abs() > MAX_SKEW_DEGREES {
        return Err(CalibrationError::SkewedScreen {
            angle_deg,
            tolerance_deg: MAX_SKEW_DEGREES,
        });
    }
    if !(MIN_SCREEN_SIDE..=MAX_SCREEN_SIDE).contains(&width)
        || !(MIN_SCREEN_SIDE..=MAX_SCREEN_SIDE).contains(&height)
    {
        return Err(CalibrationError::ScreenSize {
            width,
            height,
            min: MIN_SCREEN_SIDE,
            max: MAX_SCREEN_SIDE,
        });
    }
    Ok(())
}

fn ron_options() -> ron::Options {
    ron::Options::default().with_recursion_limit(RON_RECURSION_LIMIT)
}

fn parse_error(origin: &Path, e: ron::error::SpannedError) -> IoError {
    let message = match e.code {
        ron::Error::ExceededRecursionLimit => {
            format!("nested more than {RON_RECURSION_LIMIT} levels deep")
        }
        code => code.to_string(),
    };
    IoError::Parse {
        path: origin.to_path_buf(),
        line: e.span.start.line,
        col: e.span.start.col,
        message,
    }
}

#[derive(Serialize)]
#[serde(rename = "CalibrationFile")]
struct FileOut<'a> {
    format: &'a str,
    version: u32,
    calibration: &'a Calibration,
}

/// The header alone; the rest is skipped (parsed for syntax only).
#[derive(Deserialize)]
#[serde(rename = "CalibrationFile")]
struct Header {
    format: String,
    version: u32,
}

#[derive(Deserialize)]
#[serde(rename = "CalibrationFile", deny_unknown_fields)]
struct FileIn {
    #[allow(
        dead_code,
        reason = "read to be refused if wrong; checked through `Header`"
    )]
    format: String,
    #[allow(
        dead_code,
        reason = "read to be refused if wrong; checked through `Header`"
    )]
    version: u32,
    calibration: Calibration,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> &'static Path {
        Path::new("test.ron")
    }

    #[test]
    fn default_monitor_is_valid_and_as_described() {
        let c = Calibration::default_monitor();
        c.validate().unwrap();
        assert!((c.screen.width() - 0.531).abs() < 1e-6);
        assert!((c.screen.height() - 0.299).abs() < 1e-6);
        assert_eq!(c.screen.centre(), Vec3::ZERO);
        assert_eq!(c.screen.normal(), Vec3::Z);
        assert!((c.screen.signed_distance(c.fixed_head.position) - 0.6).abs() < 1e-6);
        assert!((c.eyes.ipd() - 0.064).abs() < 1e-7);
        // The 24" diagonal.
        let diagonal_in = (c.screen.width().powi(2) + c.screen.height().powi(2)).sqrt() / 0.0254;
        assert!((diagonal_in - 24.0).abs() < 0.05, "{diagonal_in}");
    }

    /// The registration puts a 1 m character standing at the world origin
    /// inside the screen's picture, straddling the screen plane.
    #[test]
    fn default_world_fits_a_one_metre_character_on_the_screen() {
        let c = Calibration::default_monitor();
        let tracker_from_world = c.world_from_tracker(Mat4::IDENTITY).inverse();
        let feet = tracker_from_world.transform_point3(Vec3::ZERO);
        let head = tracker_from_world.transform_point3(Vec3::new(0.0, 1.0, 0.0));
        let half_h = 0.5 * c.screen.height();
        assert!(feet.y > -half_h && head.y < half_h, "{feet} {head}");
        assert!((head.y - feet.y - 0.25).abs() < 1e-6);
        assert!(
            feet.z.abs() < 1e-6 && head.z.abs() < 1e-6,
            "on the screen plane"
        );
    }

    /// The file `calibration/default-monitor.ron` holds exactly
    /// `default_monitor()`.
    #[test]
    fn default_monitor_file_equals_the_code() {
        let text = include_str!("../../../../calibration/default-monitor.ron");
        let c = Calibration::parse(text, Path::new("default-monitor.ron")).unwrap();
        assert_eq!(c, Calibration::default_monitor());
    }

    #[test]
    fn text_round_trips_exactly() {
        let mut c = Calibration::default_monitor();
        c.screen = Screen::centred(
            Vec3::new(0.1, -0.2, 0.3),
            0.6,
            0.34,
            Vec3::new(0.1, 0.2, 1.0),
            Vec3::Y,
        );
        c.fixed_head.position = Vec3::new(0.05, 0.1, 0.9);
        c.fixed_head.orientation = Quat::from_rotation_y(0.1);
        c.set_ipd(0.061);
        let text = c.to_ron_string().unwrap();
        assert_eq!(Calibration::parse(&text, origin()).unwrap(), c);
    }

    fn invalid(c: &Calibration) -> CalibrationError {
        c.validate().expect_err("should be refused")
    }

    #[test]
    fn degenerate_content_is_refused_with_its_reason() {
        let good = Calibration::default_monitor();
        let mut c = good;
        c.screen.lower_left.x = f32::NAN;
        assert!(
            matches!(invalid(&c), CalibrationError::NonFinite { ref field } if field == "screen.lower_left")
        );
        let mut c = good;
        c.fixed_head.orientation = Quat::from_xyzw(0.0, 0.0, 0.0, 2.0);
        assert!(matches!(
            invalid(&c),
            CalibrationError::NotUnitQuaternion { .. }
        ));
        let mut c = good;
        c.screen.lower_right = c.screen.lower_left;
        assert!(matches!(
            invalid(&c),
            CalibrationError::CoincidentCorners {
                a: Corner::LowerLeft,
                b: Corner::LowerRight,
                ..
            }
        ));
        let mut c = good;
        c.screen.upper_left =
            c.screen.lower_left + 0.5 * (c.screen.lower_right - c.screen.lower_left);
        assert_eq!(invalid(&c), CalibrationError::CollinearCorners);
        let mut c = good;
        c.screen.upper_left.x += 0.03; // 0.03 / 0.299 rad ≈ 5.7° of skew
        assert!(
            matches!(invalid(&c), CalibrationError::SkewedScreen { angle_deg, .. } if (angle_deg - 84.27).abs() < 0.05)
        );
        let mut c = good;
        c.screen = Screen::centred(Vec3::ZERO, 0.531 * 100.0, 0.299 * 100.0, Vec3::Z, Vec3::Y);
        assert!(matches!(invalid(&c), CalibrationError::ScreenSize { .. }));
        let mut c = good;
        c.screen = Screen::centred(Vec3::ZERO, 0.04, 0.03, Vec3::Z, Vec3::Y);
        assert!(matches!(invalid(&c), CalibrationError::ScreenSize { .. }));
        for ipd in [0.0, 0.5] {
            let mut c = good;
            c.set_ipd(ipd);
            assert!(matches!(invalid(&c), CalibrationError::Ipd { .. }), "{ipd}");
        }
        let mut c = good;
        c.set_ipd(-0.064);
        assert_eq!(invalid(&c), CalibrationError::EyesSwapped);
        let mut c = good;
        c.eyes.left.z = 64.0;
        c.eyes.right.z = 64.0; // millimetres by mistake
        assert!(matches!(
            invalid(&c),
            CalibrationError::EyeFarFromHead { eye: "left", .. }
        ));
        let mut c = good;
        c.near = 0.0;
        assert!(matches!(invalid(&c), CalibrationError::Near { .. }));
        let mut c = good;
        c.far = c.near;
        assert!(matches!(invalid(&c), CalibrationError::Far { .. }));
        let mut c = good;
        c.tracker_to_world.scale = 0.0;
        assert!(matches!(invalid(&c), CalibrationError::Scale { .. }));
        for z in [-0.6, 0.0] {
            let mut c = good;
            c.fixed_head.position.z = z;
            assert!(
                matches!(invalid(&c), CalibrationError::NotInFront { what: "fixed head", distance } if (distance - z).abs() < 1e-6),
                "{z}"
            );
        }
        // A head whose centre is in front but one eye is not.
        let mut c = good;
        c.fixed_head.position.z = 0.01;
        c.fixed_head.orientation = Quat::from_rotation_y(std::f32::consts::FRAC_PI_2);
        assert!(matches!(invalid(&c), CalibrationError::NotInFront { .. }));
    }

    #[test]
    fn other_formats_and_newer_versions_are_refused_before_the_body() {
        let text = Calibration::default_monitor().to_ron_string().unwrap();
        let newer = text.replace("version: 1", "version: 2");
        let e = Calibration::parse(&newer, origin()).unwrap_err();
        assert!(
            matches!(
                e,
                CalibrationFileError::Io(IoError::NewerVersion { version: 2, .. })
            ),
            "{e}"
        );
        let other = text.replace("plasticine-calibration", "plasticine-character");
        let e = Calibration::parse(&other, origin()).unwrap_err();
        assert!(
            matches!(e, CalibrationFileError::Io(IoError::WrongFormat { .. })),
            "{e}"
        );
    }
}
