//! Device-agnostic input (LEMAN §5.1): each frame, the pose of the tool tip
//! held in each hand, the trigger and the buttons. Front ends (`OpenXR`, a desk
//! set-up with a 3D mouse) produce [`InputFrame`]s; the tools consume only
//! these, so a recorded [`InputScript`] replays a modelling session exactly
//! and the tests drive the tools without any device.

use glam::{Quat, Vec3};
use serde::{Deserialize, Serialize};

pub mod gesture;
pub mod precision;
pub mod tracking;
pub use gesture::{HistoryGesture, RollGesture};
pub use precision::Precision;

pub const INPUT_FORMAT: &str = "plasticine-input";
pub const INPUT_FORMAT_VERSION: u32 = 1;

/// Button bits of [`HandState::buttons`]. Bits are a plain `u32` rather than
/// a bitflags type so a RON script stays readable and dependency-free.
pub mod buttons {
    pub const A: u32 = 1 << 0;
    pub const B: u32 = 1 << 1;
    pub const MENU: u32 = 1 << 2;
    pub const GRIP: u32 = 1 << 3;
    pub const THUMBSTICK: u32 = 1 << 4;
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

    pub fn position(&self) -> Vec3 {
        self.pose.0
    }

    pub fn orientation(&self) -> Quat {
        self.pose.1
    }

    /// World direction the wand points in.
    pub fn pointing(&self) -> Vec3 {
        self.pose.1 * Vec3::NEG_Z
    }

    pub fn triggered(&self) -> bool {
        self.trigger >= TRIGGER_PRESSED
    }

    pub fn held(&self, button: u32) -> bool {
        self.buttons & button != 0
    }

    /// The same hand with the trigger fully pressed (`true`) or released.
    pub fn with_trigger(mut self, pressed: bool) -> Self {
        self.trigger = if pressed { 1.0 } else { 0.0 };
        self
    }

    pub fn with_buttons(mut self, buttons: u32) -> Self {
        self.buttons = buttons;
        self
    }

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
    pub right: HandState,
    #[serde(default)]
    pub left: HandState,
}

/// A recorded (or hand-written) sequence of frames, as a versioned RON file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputScript {
    pub format: String,
    pub version: u32,
    pub frames: Vec<InputFrame>,
}

#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{line}:{col}: {message}")]
    Parse {
        line: usize,
        col: usize,
        message: String,
    },
    #[error("not a Plasticine input script (format '{found}' version {version})")]
    Format { found: String, version: u32 },
    #[error("cannot write the script: {0}")]
    Write(String),
}

impl InputScript {
    pub fn new(frames: Vec<InputFrame>) -> Self {
        Self {
            format: INPUT_FORMAT.into(),
            version: INPUT_FORMAT_VERSION,
            frames,
        }
    }

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
