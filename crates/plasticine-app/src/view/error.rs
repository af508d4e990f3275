//! What can be wrong with a calibration, a set of corner measurements, or a
//! calibration file. Every message says what is wrong and what to do.

use crate::io::IoError;
use std::fmt;
use std::path::{Path, PathBuf};

/// One corner of the physical screen, as seen by the viewer. The measuring
/// order is counter-clockwise seen from the viewer: [`Corner::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Corner {
    /// The lower-left corner, as the viewer sees it.
    LowerLeft,
    /// The lower-right corner, as the viewer sees it.
    LowerRight,
    /// The upper-right corner, as the viewer sees it.
    UpperRight,
    /// The upper-left corner, as the viewer sees it.
    UpperLeft,
}

impl Corner {
    /// The measuring order: counter-clockwise seen from the viewer.
    pub const ALL: [Corner; 4] = [
        Corner::LowerLeft,
        Corner::LowerRight,
        Corner::UpperRight,
        Corner::UpperLeft,
    ];

    /// Position in [`Corner::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The corner's name in messages, e.g. "lower-left".
    pub fn name(self) -> &'static str {
        match self {
            Corner::LowerLeft => "lower-left",
            Corner::LowerRight => "lower-right",
            Corner::UpperRight => "upper-right",
            Corner::UpperLeft => "upper-left",
        }
    }
}

impl fmt::Display for Corner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Something wrong with the content of a calibration, or with corner
/// measurements given to [`fit_screen`](super::fit_screen).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CalibrationError {
    /// A number is NaN or infinite.
    #[error(
        "{field} is not a finite number: write a plain number there (metres, or a unit quaternion)"
    )]
    NonFinite {
        /// The field or measurement at fault, e.g. `screen.lower_left`.
        field: String,
    },

    /// A quaternion that should be a rotation is not of unit length.
    #[error(
        "{field} is a quaternion of length {length:.4}, not a rotation: write a unit quaternion (x, y, z, w), e.g. (0.0, 0.0, 0.0, 1.0) for none"
    )]
    NotUnitQuaternion {
        /// The quaternion's field, e.g. `fixed_head.orientation`.
        field: String,
        /// Its length (1 for a rotation).
        length: f32,
    },

    /// Two corners are (nearly) at the same place.
    #[error(
        "the {a} and {b} corners are only {distance_mm:.1} mm apart (the screen has no area): each corner must be measured at its own corner of the screen"
    )]
    CoincidentCorners {
        /// One of the two corners.
        a: Corner,
        /// The other corner.
        b: Corner,
        /// Their distance apart (mm).
        distance_mm: f64,
    },

    /// The corners lie on one line.
    #[error(
        "the screen corners lie on one line (the screen has no area): measure the four corners of the screen's picture, not points along one edge"
    )]
    CollinearCorners,

    /// The screen's bottom and left edges are not perpendicular.
    #[error(
        "the screen's bottom edge (lower_left to lower_right) and left edge (lower_left to upper_left) meet at {angle_deg:.2}°, not 90° (tolerance {tolerance_deg}°): the corners do not form a rectangle; re-measure them with `plasticine calibrate`"
    )]
    SkewedScreen {
        /// The angle between the bottom and left edges (degrees).
        angle_deg: f32,
        /// The largest accepted deviation from 90° (degrees).
        tolerance_deg: f32,
    },

    /// The screen is implausibly small or large.
    #[error(
        "the screen is {width:.4} m wide and {height:.4} m high; each side must be between {min} m and {max} m: corners are in metres (not millimetres or inches) in tracker space"
    )]
    ScreenSize {
        /// The screen's width (metres).
        width: f64,
        /// The screen's height (metres).
        height: f64,
        /// The smallest accepted side (metres).
        min: f64,
        /// The largest accepted side (metres).
        max: f64,
    },

    /// The measured points are too far from any rectangle.
    #[error(
        "the four points do not form a rectangle: the best-fitting rectangle misses a corner by {residual_mm:.1} mm (at most {tolerance_mm:.1} mm, a tenth of the shorter side, is accepted); the {corner} corner is {off_mm:.1} mm from where the other three put it: re-measure that corner (or all four, if it was right)"
    )]
    NotRectangle {
        /// The corner farthest from where the other three put it: the likely mismeasured one.
        corner: Corner,
        /// That corner's distance from where the other three put it (mm).
        off_mm: f64,
        /// The best-fitting rectangle's largest miss at a corner (mm).
        residual_mm: f64,
        /// The largest accepted miss, a tenth of the shorter side (mm).
        tolerance_mm: f64,
    },

    /// Going lower-left, lower-right, upper-right, upper-left turns clockwise
    /// as seen from the viewer: left and right (or top and bottom) are swapped.
    #[error(
        "the corners go clockwise as seen from the viewer, so the screen would face away from it (left and right, or top and bottom, are swapped): measure lower-left, lower-right, upper-right, upper-left as you see them while sitting in front of the screen"
    )]
    Mirrored,

    /// The points do not go around the quadrilateral (a bow tie): two
    /// neighbours in the measuring order were measured swapped.
    #[error(
        "the corners were not measured going around the screen: the {first} and {second} measurements look swapped; measure lower-left, lower-right, upper-right, upper-left in that order"
    )]
    OutOfOrder {
        /// The earlier of the two neighbours, in the measuring order, that look swapped.
        first: Corner,
        /// The later of the two.
        second: Corner,
    },

    /// A corner has no measurement.
    #[error(
        "the {corner} corner has {count} measurements: every corner needs at least one (touch it with the tool tip and pull the trigger)"
    )]
    TooFewSamples {
        /// The corner lacking measurements.
        corner: Corner,
        /// How many measurements it has.
        count: usize,
    },

    /// The number of presses is not a whole number of rounds of four.
    #[error(
        "{presses} trigger presses is not a whole number of rounds (4 corners each): the last round stops before the {next} corner; measure the remaining corners or remove the extra presses"
    )]
    IncompleteRound {
        /// The number of trigger presses.
        presses: usize,
        /// The corner the unfinished last round would measure next.
        next: Corner,
    },

    /// The eyes are too close together or too far apart.
    #[error(
        "the eyes are {ipd:.4} m apart; an interpupillary distance must be more than 0 and at most {max} m (adults: 0.054 to 0.074 m): set eyes.left and eyes.right to (-IPD/2, 0, 0) and (IPD/2, 0, 0), or pass --ipd to `plasticine calibrate`"
    )]
    Ipd {
        /// The distance between the eyes (metres).
        ipd: f32,
        /// The largest accepted interpupillary distance (metres).
        max: f32,
    },

    /// The right eye is left of the left eye.
    #[error(
        "the right eye is to the left of the left eye along the head's x axis (x points right): swap eyes.left and eyes.right"
    )]
    EyesSwapped,

    /// An eye offset is implausibly far from the tracked head point.
    #[error(
        "the {eye} eye is {distance:.3} m from the tracked head point; offsets are in metres in the head frame and at most {max} m: check the units of eyes.{eye}"
    )]
    EyeFarFromHead {
        /// Which eye: "left" or "right".
        eye: &'static str,
        /// The eye's distance from the tracked head point (metres).
        distance: f32,
        /// The largest accepted distance (metres).
        max: f32,
    },

    /// The fixed head (or one of its eyes) is on or behind the screen plane.
    #[error(
        "the {what} is at {distance:+.3} m from the screen plane; it must be in front (more than 0), on the side the screen faces, (lower_right - lower_left) x (upper_left - lower_left): move fixed_head.position in front of the screen, or if the corners were listed as seen from behind, swap left and right"
    )]
    NotInFront {
        /// The point at fault, e.g. "fixed head".
        what: &'static str,
        /// Its signed distance from the screen plane (metres).
        distance: f32,
    },

    /// The near clipping distance is not positive.
    #[error("near is {near} m: the near clipping distance must be more than 0 (e.g. 0.05)")]
    Near {
        /// The near clipping distance given (metres).
        near: f32,
    },

    /// The far clipping distance is not beyond the near one.
    #[error(
        "far is {far} m but near is {near} m: the far clipping distance must be larger than near (e.g. 50)"
    )]
    Far {
        /// The near clipping distance (metres).
        near: f32,
        /// The far clipping distance given (metres).
        far: f32,
    },

    /// The tracker-to-world scale is not positive.
    #[error(
        "tracker_to_world.scale is {scale}: it must be more than 0 (world units per tracker metre, e.g. 4.0 shows a 1 m character 25 cm tall)"
    )]
    Scale {
        /// The scale given (world units per tracker metre).
        scale: f32,
    },
}

/// Reading or writing a calibration file. Every message names the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CalibrationFileError {
    /// The file could not be read, parsed (the message gives
    /// `file:line:column`), or written, or it is another format or version.
    #[error(transparent)]
    Io(#[from] IoError),

    /// The file parsed but its content is unusable.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The calibration file.
        path: PathBuf,
        /// What is wrong with its content.
        reason: CalibrationError,
    },
}

impl CalibrationFileError {
    pub(crate) fn invalid(path: &Path, reason: CalibrationError) -> Self {
        CalibrationFileError::Invalid {
            path: path.to_path_buf(),
            reason,
        }
    }

    /// The content problem, when the file parsed but is unusable.
    pub fn reason(&self) -> Option<&CalibrationError> {
        match self {
            CalibrationFileError::Invalid { reason, .. } => Some(reason),
            CalibrationFileError::Io(_) => None,
        }
    }
}
