//! Device-agnostic input (LEMAN §5.1): each frame, the pose of the tool tip
//! held in each hand, the trigger and the buttons. Front ends (`OpenXR`, a desk
//! set-up with a 3D mouse) produce [`InputFrame`]s; the tools consume only
//! these, so a recorded [`InputScript`] replays a modelling session exactly
//! and the tests drive the tools without any device.

use glam::{Quat, Vec3};
use serde::{Deserialize, Serialize};

mod gesture;
mod precision;
mod tracking;

pub use gesture::{HistoryGesture, RollGesture};
pub use precision::Precision;
pub use tracking::{LostHands, TrackedParts, TrackedPose, Tracker};

/// The `format` name an input script carries.
pub const INPUT_FORMAT: &str = "plasticine-input";
/// The input script version this build writes; newer ones are refused.
pub const INPUT_FORMAT_VERSION: u32 = 1;

/// Button bits of [`HandState::buttons`]. Bits are a plain `u32` rather than
/// a bitflags type so a RON script stays readable and dependency-free.
pub mod buttons {
    /// The primary face button.
    pub const A: u32 = 1 << 0;
    /// The secondary face button.
    pub const B: u32 = 1 << 1;
    /// The menu button.
    pub const MENU: u32 = 1 << 2;
    /// The grip, squeezed.
    pub const GRIP: u32 = 1 << 3;
    /// The thumbstick, clicked.
    pub const THUMBSTICK: u32 = 1 << 4;
    /// The push gesture, held: the desk's Shift + right mouse button (a
    /// headset's tool-hand thumbstick click pushes too).
    pub const PUSH: u32 = 1 << 5;
}

/// Trigger value at or above which the trigger counts as pressed.
pub const TRIGGER_PRESSED: f32 = 0.5;

/// The tool tip of one hand. The wand points along the tip frame's −z axis
/// (the `OpenXR` "aim" convention), so the "twist" a tool reads is the rotation
/// about `orientation * −Z`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandState {
    /// Tool tip position and orientation, world space (metres).
    pub pose: (Vec3, Quat),
    /// Analog trigger, 0 (released) .. 1 (fully pressed).
    #[serde(default)]
    pub trigger: f32,
    /// Held buttons, bits of [`buttons`].
    #[serde(default)]
    pub buttons: u32,
}

impl Default for HandState {
    fn default() -> Self {
        Self {
            pose: (Vec3::ZERO, Quat::IDENTITY),
            trigger: 0.0,
            buttons: 0,
        }
    }
}

impl HandState {
    /// A hand at `position` with the wand pointing along −z, nothing pressed.
    pub fn at(position: Vec3) -> Self {
        Self {
            pose: (position, Quat::IDENTITY),
            ..Self::default()
        }
    }

    /// Tool tip position, world space (m).
    pub fn position(&self) -> Vec3 {
        self.pose.0
    }

    /// Tool tip orientation, world space.
    pub fn orientation(&self) -> Quat {
        self.pose.1
    }

    /// World direction the wand points in.
    pub fn pointing(&self) -> Vec3 {
        self.pose.1 * Vec3::NEG_Z
    }

    /// Whether the trigger counts as pressed (at or above [`TRIGGER_PRESSED`]).
    pub fn triggered(&self) -> bool {
        self.trigger >= TRIGGER_PRESSED
    }

    /// Whether any of the `button` bits (see [`buttons`]) is held.
    pub fn held(&self, button: u32) -> bool {
        self.buttons & button != 0
    }

    /// The same hand with the trigger fully pressed (`true`) or released.
    pub fn with_trigger(mut self, pressed: bool) -> Self {
        self.trigger = if pressed { 1.0 } else { 0.0 };
        self
    }

    /// The same hand holding exactly the `buttons` bits.
    pub fn with_buttons(mut self, buttons: u32) -> Self {
        self.buttons = buttons;
        self
    }

    /// The same hand with the tool tip turned to `orientation`.
    pub fn with_orientation(mut self, orientation: Quat) -> Self {
        self.pose.1 = orientation;
        self
    }
}

/// One input sample. The right hand holds the tool (§5.1); the left flies the
/// vehicle and carries undo/redo on its buttons.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputFrame {
    /// Seconds since the start of the session.
    pub time: f64,
    /// The right hand, which holds the tool.
    pub right: HandState,
    /// The left hand, which flies the vehicle and carries undo/redo.
    #[serde(default)]
    pub left: HandState,
}

/// A recorded (or hand-written) sequence of frames, as a versioned RON file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputScript {
    /// The file format name, [`INPUT_FORMAT`].
    pub format: String,
    /// The format version, at most [`INPUT_FORMAT_VERSION`].
    pub version: u32,
    /// The input samples.
    pub frames: Vec<InputFrame>,
}

/// Why an input script could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The text is not a valid input script in RON.
    #[error("{line}:{col}: {message}")]
    Parse {
        /// Line where parsing failed.
        line: usize,
        /// Column where parsing failed.
        col: usize,
        /// What was wrong there.
        message: String,
    },
    /// The file is of another format, or of a newer version.
    #[error("not a Plasticine input script (format '{found}' version {version})")]
    Format {
        /// The `format` name the file carries.
        found: String,
        /// The version the file carries.
        version: u32,
    },
    /// Serializing the script to RON failed.
    #[error("cannot write the script: {0}")]
    Write(String),
}

impl InputScript {
    /// A script of `frames` in the current format and version.
    pub fn new(frames: Vec<InputFrame>) -> Self {
        Self {
            format: INPUT_FORMAT.into(),
            version: INPUT_FORMAT_VERSION,
            frames,
        }
    }

    /// The script as pretty-printed RON.
    pub fn to_ron(&self) -> Result<String, InputError> {
        ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default())
            .map_err(|e| InputError::Write(e.to_string()))
    }

    /// Parses a script, refusing other formats and newer versions.
    pub fn from_ron(text: &str) -> Result<Self, InputError> {
        let script: InputScript = ron::from_str(text).map_err(|e| InputError::Parse {
            line: e.span.start.line,
            col: e.span.start.col,
            message: e.code.to_string(),
        })?;
        if script.format != INPUT_FORMAT || script.version > INPUT_FORMAT_VERSION {
            return Err(InputError::Format {
                found: script.format,
                version: script.version,
            });
        }
        Ok(script)
    }
}
