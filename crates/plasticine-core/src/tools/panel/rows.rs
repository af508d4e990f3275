//! The panel's rows and what a press on one gives back: the parameter
//! rows, the sides a press acts on, the outcome for the front end, and
//! the panel's physical sizes.

use super::timeline::{TimelineAction, TimelineRow};
use super::view::ViewRow;
use crate::tools::tool::ToolKind;

/// Physical height of one row (m): readable at arm's length.
pub const ROW_HEIGHT: f32 = 0.012;
/// Space above the first row (m), as the renderer pads the text
/// (`render::geometry::Panel::padding`).
pub const PAD: f32 = 0.2 * ROW_HEIGHT;
/// The stiffest skin the panel's "skin bend" reaches, J: a bending length
/// √(ξ/T) of ~1 cm under the default tension T = η(1/shrink − 1) = 0.75 N/m,
/// stiff as leather on a character of the samples' size. Measured: the 16×16
/// samples stay smooth up to it; at 10× more a flipper's rim tore (reported
/// as divergence, never passed as a step).
pub const BEND_MAX: f32 = 1e-4;
/// Step factor of a parameter row (its right half; the left half divides).
pub const STEP: f32 = 1.25;
/// How far one press moves the part-friction row's coefficient.
pub(super) const PART_FRICTION_STEP: f64 = 0.1;
/// How far one press moves a blendshape weight.
pub const BLEND_WEIGHT_STEP: f32 = 0.1;

/// Rows the wand can act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// Global, or the touched region.
    Scope,
    /// Skin stretching elasticity η.
    SkinStretch,
    /// Skin bending rigidity ξ.
    SkinBend,
    /// Skin damping per unit u-area.
    SkinDamping,
    /// Skin mass per unit u-area.
    SkinMass,
    /// Connective tissue: the bands' spring constant `k_s`.
    BandStiffness,
    /// |g|, along the current direction (straight down from zero).
    Gravity,
    /// The global damping γ.
    GlobalDamping,
    /// The flesh backend: kinematic muscles or FEM flesh.
    Flesh,
    /// The FEM flesh stiffness of the current joint's part (floppy ears,
    /// rigid horns), and of its mirror image under symmetry.
    PartStiffness,
    /// The current joint's part's own friction against obstacles (and its
    /// mirror image's under symmetry).
    PartFriction,
    /// Which blendshape target of the embedded mesh the weight row keys:
    /// steps through the targets.
    BlendTarget,
    /// The chosen target's weight in the working posture (keyed with K).
    BlendWeight,
    /// The blend solved physically (springs) or linearly.
    BlendMode,
    /// The sculpt tool's brush: steps through grab, smooth and inflate.
    SculptBrush,
    /// The skin simulation's integrator: steps through `IntegratorKind::ALL`.
    Integrator,
    /// ε(r), the adaptive integrators' position tolerance.
    Tolerance,
    /// Simulated seconds per real second.
    TimeRatio,
    /// The liposuction (and region, and paint) brush radius.
    BrushRadius,
    /// The paint tool's colour: steps through [`crate::tools::tool::PALETTE`].
    PaintColor,
    /// Snapping of new joints to the mirror plane and the current bone's axis, on or off.
    Snapping,
    /// Precision mode for the right hand (motion scaled down and smoothed), on or off.
    Precision,
    /// Lock (or unlock) the current joint's part against edits.
    Lock,
    /// Symmetric modelling (LEMAN §6.1): every edit mirrored in x = 0.
    Symmetry,
}

/// One row of the panel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// A section heading, with its text.
    Heading(&'static str),
    /// A tool: pressing the row makes it current.
    Tool(ToolKind),
    /// A parameter: the left half steps it down, the right half up.
    Param(Param),
    /// A timeline row, acted on by the front end's playback.
    Timeline(TimelineRow),
    /// A layer of the picture, shown or hidden (the panel keeps them; the
    /// front end draws with them).
    View(ViewRow),
}

/// Which skin points the material rows change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scope {
    /// Every point of every skin.
    #[default]
    Global,
    /// The points within the brush radius of the skin point the tool tip last touched.
    TouchedRegion,
}

/// Which half of a row the wand points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Step down.
    Left,
    /// Step up.
    Right,
}

/// Where a ray meets the panel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PanelHit {
    /// Index of the row, top to bottom as in `ControlPanel::rows`.
    pub row: usize,
    /// Which half of the row.
    pub side: Side,
    /// Where along the row (0 = left edge, 1 = right edge).
    pub fraction: f32,
    /// Distance along the ray (world units).
    pub distance: f32,
}

/// What a press did, for the front end to pass on.
#[derive(Clone, Debug, PartialEq)]
pub enum PanelOutcome {
    /// A heading, or nothing to do.
    Nothing,
    /// The tool changed.
    Tool(ToolKind),
    /// The character changed (one undo step); the message says how.
    Edited(String),
    /// The solver's settings changed: send them to the simulation.
    Settings(String),
    /// A tool setting changed (brush, snapping, precision).
    ToolSetting(String),
    /// For the playback.
    Timeline(TimelineAction),
    /// A layer of the picture changed (in [`ControlPanel::view`](super::ControlPanel::view)); the
    /// message says how.
    View(String),
}
