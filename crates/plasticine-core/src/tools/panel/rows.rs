//! The panel's rows and what a press on one gives back: the parameter
//! rows, the sides a press acts on, the outcome for the front end, and
//! the panel's physical sizes.

use super::timeline::{TimelineAction, TimelineRow, tcb_index};
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
    /// Which of the FEM flesh's dynamic morph targets the delete row acts
    /// on: steps through them.
    MorphTarget,
    /// Deletes the chosen morph target (one undo step).
    MorphDelete,
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

impl Param {
    /// The row's slider, for the rows that set a continuous value: a press
    /// on its track ([`SLIDER_TRACK`]) sets the value there, and a drag
    /// follows the wand (one undo step); the − and + marks at its ends
    /// still step.
    pub fn slider(self) -> Option<SliderScale> {
        let log = |lo, hi| Some(SliderScale::log(lo, hi));
        let linear = |lo, hi| Some(SliderScale::linear(lo, hi));
        match self {
            // Around the samples' values (stretch 0.75 N/m, mass 1.5,
            // damping 0.3, bands 1480 N/m, bend 1e-6 J) with room to
            // both sides; bend up to leather.
            // A part's flesh E as a factor on the flesh's, likewise.
            Param::SkinStretch | Param::SkinMass | Param::PartStiffness => log(1e-2, 1e2),
            Param::SkinBend => log(1e-8, BEND_MAX),
            Param::SkinDamping => log(1e-3, 1e1),
            Param::BandStiffness => log(1e1, 1e5),
            Param::Gravity => linear(0.0, 20.0),
            Param::GlobalDamping => linear(0.0, 5.0),
            Param::BlendWeight => linear(0.0, 1.0),
            // A part's friction from none to 2 (its marks step on to 10,
            // as the part's E steps on to 1e-3..1e3).
            Param::PartFriction => linear(0.0, 2.0),
            // The stepped rows' own limits.
            Param::Tolerance => log(1e-7, 1e-1),
            Param::TimeRatio => log(0.01, 10.0),
            Param::BrushRadius => Some(SliderScale {
                shown: 1e3, // the row reads millimetres
                ..SliderScale::log(0.005, 0.3)
            }),
            _ => None,
        }
    }
}

/// The share of a slider row (0..1 across it) at which its track starts
/// and ends; presses outside it, on the − and + marks, step instead.
pub const SLIDER_TRACK: (f32, f32) = (0.12, 0.88);

/// Where along its track (0..1) a press at `fraction` of a slider row
/// lands, or `None` on the − and + marks at its ends.
pub fn slider_value(fraction: f32) -> Option<f32> {
    let (a, b) = SLIDER_TRACK;
    (a..=b)
        .contains(&fraction)
        .then(|| ((fraction - a) / (b - a)).clamp(0.0, 1.0))
}

/// How a slider's track (0 at its left end, 1 at its right) maps to the
/// value it sets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SliderScale {
    /// The value at the left end.
    pub lo: f32,
    /// The value at the right end.
    pub hi: f32,
    /// Even steps in log(value) (stiffnesses, densities, rates) rather
    /// than in the value.
    pub log: bool,
    /// The row's text shows the value times this (a radius in mm).
    pub shown: f32,
}

impl SliderScale {
    fn log(lo: f32, hi: f32) -> Self {
        Self {
            lo,
            hi,
            log: true,
            shown: 1.0,
        }
    }

    fn linear(lo: f32, hi: f32) -> Self {
        Self {
            log: false,
            ..Self::log(lo, hi)
        }
    }

    /// The value at `t` (0..1, clamped) along the track.
    pub fn value(&self, t: f32) -> f32 {
        let t = t.clamp(0.0, 1.0);
        if self.log {
            (self.lo.ln() + t * (self.hi.ln() - self.lo.ln())).exp()
        } else {
            self.lo + t * (self.hi - self.lo)
        }
    }

    /// Where `value` sits along the track (0..1; clamped to its ends,
    /// and 0 for a value at or below zero on a log track).
    pub fn position(&self, value: f32) -> f32 {
        let t = if self.log {
            if value <= 0.0 {
                return 0.0;
            }
            (value.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (value - self.lo) / (self.hi - self.lo)
        };
        if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) }
    }
}

/// Tools side by side in a palette row.
pub const PALETTE_COLUMNS: usize = 5;

/// The tool palette's rows: every tool once, in [`ToolKind::ALL`]'s order.
pub const PALETTE_ROWS: usize = ToolKind::ALL.len().div_ceil(PALETTE_COLUMNS);

/// The cell of a palette row a point `fraction` of the way along it is in
/// (0 = left edge, 1 = right edge): the row is cut into
/// [`PALETTE_COLUMNS`] equal cells.
pub fn palette_cell(fraction: f32) -> usize {
    if fraction.is_nan() {
        return 0;
    }
    ((fraction * PALETTE_COLUMNS as f32).floor().max(0.0) as usize).min(PALETTE_COLUMNS - 1)
}

/// The fraction along a palette row at the middle of `cell`.
pub fn palette_cell_middle(cell: usize) -> f32 {
    (cell as f32 + 0.5) / PALETTE_COLUMNS as f32
}

/// One row of the panel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// A section heading, with its text.
    Heading(&'static str),
    /// A row of the tool palette ([`PALETTE_COLUMNS`] tools side by side,
    /// [`ToolKind::ALL`] in order): pressing a cell makes its tool current.
    Palette(u8),
    /// A parameter: the left half steps it down, the right half up (a
    /// slider's track sets it; see [`Param::slider`]).
    Param(Param),
    /// A timeline row, acted on by the front end's playback.
    Timeline(TimelineRow),
    /// A layer of the picture, shown or hidden (the panel keeps them; the
    /// front end draws with them).
    View(ViewRow),
}

impl Row {
    /// The tools of palette row `p`, left to right (the last row may hold
    /// fewer than [`PALETTE_COLUMNS`]; none past the palette).
    pub fn palette_tools(p: u8) -> &'static [ToolKind] {
        let start = (p as usize * PALETTE_COLUMNS).min(ToolKind::ALL.len());
        let end = (start + PALETTE_COLUMNS).min(ToolKind::ALL.len());
        &ToolKind::ALL[start..end]
    }

    /// The tool of a palette row's cell at `fraction` along it; `None` on
    /// another row, or an empty cell of the last palette row.
    pub fn tool_at(self, fraction: f32) -> Option<ToolKind> {
        match self {
            Row::Palette(p) => Row::palette_tools(p).get(palette_cell(fraction)).copied(),
            _ => None,
        }
    }

    /// The row's slider: a parameter's ([`Param::slider`]), or the
    /// selected key's tension, continuity or bias (−1..1); `None` for the
    /// rest.
    pub fn slider(self) -> Option<SliderScale> {
        match self {
            Row::Param(p) => p.slider(),
            Row::Timeline(r) => tcb_index(r).map(|_| SliderScale::linear(-1.0, 1.0)),
            _ => None,
        }
    }
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
