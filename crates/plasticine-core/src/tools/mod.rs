//! The edit layer every tool goes through (LEMAN §6.1–6.3).
//!
//! The interactive tools (sphere and superellipse creation, muscle
//! deformation, IK posing, skin attachment and re-binding, liposuction, the
//! parameters panel) are state machines over hand poses (`tool`); all they
//! ever do to the [`Character`](crate::character::Character)
//! is hand a [`Command`] to a [`History`]. That is what makes undo/redo,
//! symmetric modelling ([`Symmetry`]), autosave (watch
//! [`History::revision`]) and scripted tests (a recorded `Vec<Command>` in
//! RON, replayed) come for free.
//!
//! What a tool acts on it first finds by touching it or aiming the wand at
//! it: see `pick`.
//!
//! A part can be locked against accidental edits ([`Command::LockPart`]):
//! every command that would reshape, move or delete it is then refused with
//! [`EditError::Locked`], naming the joint.
//!
//! # Undo strategy and memory, per command
//!
//! | command | inverse kept | memory |
//! |---|---|---|
//! | `AddJoint` | nothing (pop joint, muscle, angles) | O(1) |
//! | `AddMuscle` | nothing (pop the muscle) | O(1) |
//! | `EditMuscle` | old shape | O(1) |
//! | `MoveJoint` | old offsets of the joint (and corrected children) | O(children) |
//! | `DeleteJoint` | removed joints, muscles, posture and key angles with their indices; the other indices are renumbered back | O(subtree) |
//! | `SetDofs`, `SetLocked` | old DOFs | O(1) |
//! | `LockPart` | old flag | O(1) |
//! | `SetPosture` | old working posture | O(joints) |
//! | `AddSkin` | nothing (pop the skin) | O(1) |
//! | `DeleteSkin` | the removed skin | O(points), ~170 B each |
//! | `GlobalAttach` | the skin's old bands | O(points), 28 B each |
//! | `SetAttachment` | one old band | O(1) |
//! | `FatStroke` | old fat of the changed points | 8 B per touched point |
//! | `PaintStroke` | old colours of the changed points (or: it was unpainted) | 16 B per touched point |
//! | `PaintMuscle` | the muscle's old colour (or: it was unpainted) | 16 B |
//! | `SetSkinMaterial` | old values of the changed fields in the region | 4–12 B per point and field |
//! | `SetKey`, `MoveKey`, `DeleteKey`, `SetKeyTcb` | the replaced, moved or removed key and where it was | O(joints) |
//!
//! Redo keeps only the undone commands and re-applies them: every command is
//! a deterministic function of the state, which undo restores exactly.

mod apply;
mod command;
#[cfg(test)]
mod gesture_tests;
mod history;
#[cfg(test)]
mod key_tests;
mod panel;
mod pick;
#[cfg(test)]
mod sculpt_tests;
mod session;
mod symmetry;
#[cfg(test)]
mod tests;
mod tool;
#[cfg(test)]
mod weight_symmetry_tests;

pub use panel::MuscleView;
pub use panel::{
    BEND_MAX, ControlPanel, PAD, PALETTE_COLUMNS, PALETTE_ROWS, PanelHit, PanelOutcome, Param,
    ROW_HEIGHT, Row, SLIDER_TRACK, STEP, Scope, Side, SliderScale, TimelineAction, TimelineRow,
    TimelineStatus, ViewLayers, ViewRow, blend_curve, palette_cell, palette_cell_middle,
    palette_line, parse_blend_curve, row_cells, row_help, row_help_at, slider_knob, slider_value,
    tool_label, tool_short_label,
};
pub use session::{Session, SessionError, SessionRecorder, empty_character, load_session, replay};
pub use tool::{
    BrushKind, DEFAULT_RADIUS, PAINT_RATE, PALETTE, SKIN_TOUCH_RADIUS, ScriptError, TOUCH_RADIUS,
    ToolContext, ToolKind, ToolState, Toolbox, run_script,
};

pub use command::{
    Command, EditError, FAT_STROKE_CUTOFF, KEY_TIME_EPSILON, NewMuscle, SculptBrush,
};
pub use history::{DEFAULT_UNDO_BUDGET, History};
pub use pick::{Pick, PickFilter, PickTarget, Picker};
pub use symmetry::{Symmetry, mirror_name, mirror_shape};
