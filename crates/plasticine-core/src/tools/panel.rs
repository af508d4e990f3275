//! The toolbar and parameters panel (LEMAN §5.1, §6.1–6.3).
//!
//! Rows standing in the world (painted with egui by the front end's
//! `app::panel_ui`): the headset's left hand holds them, the desk shows them
//! beside the work. The right hand points its wand at a row (the half it
//! points at lights up) and pulls the trigger:
//! - a **tool** row makes that tool current (its copy becomes the cursor);
//! - a **parameter** row steps the value down when the wand points at the
//!   row's left half and up at its right half (×0.8 / ×1.25 for stiffnesses,
//!   densities and rates; the next choice for the integrator; on/off for
//!   switches).
//!
//! The skin's material and the connective tissue are changed **globally**
//! (every point of every skin) or **on the touched region** (the points
//! within the brush radius of the skin point the tool tip last touched), as
//! the `scope` row says. Character parameters go through the [`History`]
//! like every edit, so they undo; the solver's settings (integrator,
//! tolerance, simulation/real-time ratio) are the session's, returned to the
//! caller to send to the simulation.
//!
//! The panel owns no device: [`ControlPanel::hit`] tests a ray against the
//! rows given the panel's pose, and [`ControlPanel::press`] acts on a row.
//!
//! [`History`]: super::History

use super::command::{Command, EditError};
use super::symmetry::Symmetry;
use super::tool::{ToolContext, ToolKind, Toolbox};
use crate::character::{Character, FemFlesh, Flesh, FleshDetail, ModalFlesh};
use crate::contact::{GROUND_FRICTION, mix_friction};
use crate::skin::{IntegratorKind, SolverSettings};
use glam::{Mat4, Vec3};
pub use help::row_help;
#[cfg(test)]
use timeline::{KEY_NUDGE, SCRUBBER_CHARS};
pub use timeline::{TimelineAction, TimelineRow, TimelineStatus};
use timeline::{timeline_action, timeline_line};
pub use view::{MuscleView, ViewLayers, ViewRow};

mod help;
mod timeline;
mod view;

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
const PART_FRICTION_STEP: f64 = 0.1;

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
    /// The skin simulation's integrator: steps through `IntegratorKind::ALL`.
    Integrator,
    /// ε(r), the adaptive integrators' position tolerance.
    Tolerance,
    /// Simulated seconds per real second.
    TimeRatio,
    /// The liposuction (and region, and paint) brush radius.
    BrushRadius,
    /// The paint tool's colour: steps through [`super::tool::PALETTE`].
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
    /// A layer of the picture changed (in [`ControlPanel::view`]); the
    /// message says how.
    View(String),
}

/// The panel's state: the scope and the last touched skin point.
#[derive(Clone, Debug, Default)]
pub struct ControlPanel {
    /// Which skin points the material rows change.
    pub scope: Scope,
    /// When set, every edit is mirrored (§6.1 symmetric modelling).
    pub symmetry: Option<Symmetry>,
    /// The skin point (skin, point) the tool tip last touched.
    pub touched: Option<(usize, usize)>,
    /// The row the wand points at (highlighted).
    pub hover: Option<usize>,
    /// The layers the picture shows.
    pub view: ViewLayers,
}

/// The palette's name for `color`, or "custom".
fn palette_name(color: [f32; 3]) -> &'static str {
    super::tool::PALETTE
        .iter()
        .find(|(_, c)| *c == color)
        .map_or("custom", |(name, _)| name)
}

/// A tool's name on the toolbar.
pub fn tool_label(tool: ToolKind) -> &'static str {
    match tool {
        ToolKind::Select => "select",
        ToolKind::Sphere => "sphere",
        ToolKind::Superellipse => "superellipse",
        ToolKind::Deform => "deform (taper/bend/twist)",
        ToolKind::Ik => "IK (pose)",
        ToolKind::Skin => "skin attach",
        ToolKind::Liposuction => "liposuction",
        ToolKind::Weights => "weights (FEM flesh)",
        ToolKind::Paint => "paint",
    }
}

impl ControlPanel {
    /// The rows, top to bottom.
    pub fn rows() -> Vec<Row> {
        let mut rows = vec![Row::Heading("TOOLS")];
        rows.extend(ToolKind::ALL.iter().map(|&k| Row::Tool(k)));
        rows.push(Row::Heading("PARAMETERS"));
        rows.extend(
            [
                Param::Scope,
                Param::SkinStretch,
                Param::SkinBend,
                Param::SkinDamping,
                Param::SkinMass,
                Param::BandStiffness,
                Param::Gravity,
                Param::GlobalDamping,
                Param::Flesh,
                Param::PartStiffness,
                Param::PartFriction,
                Param::Integrator,
                Param::Tolerance,
                Param::TimeRatio,
                Param::BrushRadius,
                Param::PaintColor,
                Param::Snapping,
                Param::Precision,
                Param::Lock,
                Param::Symmetry,
            ]
            .map(Row::Param),
        );
        rows.push(Row::Heading("VIEW"));
        rows.extend(ViewRow::ALL.map(Row::View));
        rows.push(Row::Heading("TIMELINE"));
        rows.extend(
            [
                TimelineRow::Scrubber,
                TimelineRow::Transport,
                TimelineRow::Mode,
                TimelineRow::Length,
                TimelineRow::Loop,
                TimelineRow::Key,
                TimelineRow::SelectKey,
                TimelineRow::MoveKey,
                TimelineRow::Tension,
                TimelineRow::Continuity,
                TimelineRow::Bias,
                TimelineRow::AutoResolution,
                TimelineRow::Perform,
                TimelineRow::PerformRate,
            ]
            .map(Row::Timeline),
        );
        rows
    }

    /// The text of every row, with current values.
    pub fn lines(
        &self,
        tools: &Toolbox,
        c: &Character,
        settings: &SolverSettings,
        timeline: &TimelineStatus,
    ) -> Vec<String> {
        let region = self.region(tools, c).ok();
        let skin_value = |param: Param| -> String {
            match mean_value(c, param, region.as_deref()) {
                Some(v) => format!("{v:.3e}"),
                None => "-".into(),
            }
        };
        let on = |b: bool| if b { "on" } else { "off" };
        Self::rows()
            .iter()
            .map(|row| match row {
                Row::Heading(h) => (*h).to_string(),
                Row::Tool(k) => {
                    let mark = if *k == tools.tool() { '>' } else { ' ' };
                    format!("{mark} {}", tool_label(*k))
                }
                Row::Param(p) => {
                    let value = match p {
                        Param::Scope => match self.scope {
                            Scope::Global => "all skins".to_string(),
                            Scope::TouchedRegion => match &region {
                                Some(r) => format!("touched, {} pts", r.len()),
                                None => "touch the skin".into(),
                            },
                        },
                        Param::SkinStretch
                        | Param::SkinBend
                        | Param::SkinDamping
                        | Param::SkinMass
                        | Param::BandStiffness => skin_value(*p),
                        Param::Gravity => format!("{:.2} m/s2", c.environment.gravity.length()),
                        Param::GlobalDamping => format!("{:.3}", c.environment.global_damping),
                        Param::Flesh => match &c.flesh {
                            Flesh::Fem(f) => format!(
                                "FEM{}, E {:.0} kPa",
                                if f.detail.is_some() { " + detail" } else { "" },
                                f.young * 1e-3
                            ),
                            Flesh::Modal(m) => format!(
                                "modal, {} parts, E {:.0} kPa",
                                m.parts.len(),
                                m.fem.young * 1e-3
                            ),
                            Flesh::Kinematic => "kinematic".into(),
                        },
                        Param::PartStiffness => {
                            match (
                                c.flesh.fem(),
                                c.skeleton.joints.get(tools.state.current_joint),
                            ) {
                                (Some(f), Some(j)) => {
                                    format!("{} x{:.2}", j.name, f.part_scale(&j.name))
                                }
                                _ => "- (FEM flesh)".into(),
                            }
                        }
                        Param::PartFriction => {
                            match (
                                c.flesh.fem(),
                                c.skeleton.joints.get(tools.state.current_joint),
                            ) {
                                (Some(f), Some(j)) => match f.part_friction(&j.name) {
                                    Some(mu) => format!("{} {mu:.1}", j.name),
                                    None => format!("{} as the ground", j.name),
                                },
                                _ => "- (FEM flesh)".into(),
                            }
                        }
                        Param::Integrator => format!("{:?}", settings.integrator),
                        Param::Tolerance => format!("{:.1e}", settings.tolerances.position),
                        Param::TimeRatio => format!("x{:.2}", settings.time_ratio),
                        Param::BrushRadius => {
                            format!("{:.0} mm", tools.state.lipo_radius * 1e3)
                        }
                        Param::PaintColor => palette_name(tools.state.paint_color).into(),
                        Param::Snapping => on(tools.state.snapping).into(),
                        Param::Precision => on(tools.precision.enabled).into(),
                        Param::Lock => match c.skeleton.joints.get(tools.state.current_joint) {
                            Some(j) if j.locked => format!("{} LOCKED", j.name),
                            Some(j) => format!("{} free", j.name),
                            None => "-".into(),
                        },
                        Param::Symmetry => match self.symmetry {
                            Some(_) => "mirror x = 0".into(),
                            None => "off".into(),
                        },
                    };
                    format!("  {:<13}{value}", param_label(*p))
                }
                Row::Timeline(r) => timeline_line(*r, timeline),
                Row::View(v) => v.line(&self.view),
            })
            .collect()
    }

    /// The index of the timeline's heading: where a panel laid out in two
    /// columns starts its second.
    pub fn timeline_start() -> usize {
        Self::rows()
            .iter()
            .position(|r| matches!(r, Row::Heading("TIMELINE")))
            .expect("the panel has a timeline")
    }

    /// The timeline rows' indices and text: cheap, so a front end can
    /// refresh them every frame while playing without rebuilding the rest.
    pub fn timeline_lines(status: &TimelineStatus) -> Vec<(usize, String)> {
        Self::rows()
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match r {
                Row::Timeline(t) => Some((i, timeline_line(*t, status))),
                _ => None,
            })
            .collect()
    }

    /// The row under a ray, given the panel's pose (`to_world`: panel space
    /// → world, x along the text, y up, origin at the top-left corner, rows
    /// [`ROW_HEIGHT`] tall below a [`PAD`]) and its width in panel units. Rays
    /// from behind the panel, or meeting it behind their origin (beyond a
    /// tip's reach), miss.
    pub fn hit(to_world: &Mat4, width: f32, origin: Vec3, dir: Vec3) -> Option<PanelHit> {
        Self::hit_rows(to_world, width, Self::rows().len(), origin, dir)
    }

    /// [`hit`](Self::hit) on a column of `rows` rows (its first row is 0).
    pub fn hit_rows(
        to_world: &Mat4,
        width: f32,
        rows: usize,
        origin: Vec3,
        dir: Vec3,
    ) -> Option<PanelHit> {
        let inv = to_world.inverse();
        let o = inv.transform_point3(origin);
        let d = inv.transform_vector3(dir);
        // The panel faces +z: the ray must come from the front, towards it.
        if o.z <= 0.0 || d.z >= -1e-9 {
            return None;
        }
        let t = -o.z / d.z;
        let p = o + d * t;
        let row = ((-p.y - PAD) / ROW_HEIGHT).floor();
        if !(0.0..width).contains(&p.x) || row < 0.0 || row >= rows as f32 {
            return None;
        }
        let side = if p.x < width * 0.5 {
            Side::Left
        } else {
            Side::Right
        };
        let distance = to_world.transform_vector3(d * t).length();
        Some(PanelHit {
            row: row as usize,
            side,
            fraction: p.x / width,
            distance,
        })
    }

    /// The skin points a material row changes: all of every skin (`None`
    /// per skin), or the touched region.
    fn region(&self, tools: &Toolbox, c: &Character) -> Result<Vec<(usize, usize)>, String> {
        match self.scope {
            Scope::Global => Ok(c
                .skins
                .iter()
                .enumerate()
                .flat_map(|(s, skin)| (0..skin.point_count()).map(move |k| (s, k)))
                .collect()),
            Scope::TouchedRegion => {
                let (skin, point) = self
                    .touched
                    .filter(|&(s, k)| s < c.skins.len() && k < c.skins[s].point_count())
                    .ok_or("touch the skin with the tool first to choose the region")?;
                let positions = &c.skins[skin].points.position;
                let centre = positions[point];
                let r = tools.state.lipo_radius;
                Ok(positions
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| p.distance(centre) <= r)
                    .map(|(k, _)| (skin, k))
                    .collect())
            }
        }
    }

    /// Acts on `row` (pointed at on `side`). Character edits are one undo
    /// step; `settings` are changed in place.
    pub fn press(
        &mut self,
        row: usize,
        side: Side,
        fraction: f32,
        tools: &mut Toolbox,
        ctx: &mut ToolContext,
        settings: &mut SolverSettings,
    ) -> Result<PanelOutcome, EditError> {
        let Some(&row) = Self::rows().get(row) else {
            return Ok(PanelOutcome::Nothing);
        };
        let up = side == Side::Right;
        let param = match row {
            Row::Heading(_) => return Ok(PanelOutcome::Nothing),
            Row::Tool(k) => {
                tools.set_tool(k, ctx)?;
                return Ok(PanelOutcome::Tool(k));
            }
            Row::Param(p) => p,
            Row::Timeline(r) => {
                let action = timeline_action(r, side == Side::Left, fraction);
                return Ok(PanelOutcome::Timeline(action));
            }
            Row::View(v) => return Ok(PanelOutcome::View(v.press(&mut self.view))),
        };
        match param {
            Param::Scope => {
                self.scope = match self.scope {
                    Scope::Global => Scope::TouchedRegion,
                    Scope::TouchedRegion => Scope::Global,
                };
                Ok(PanelOutcome::ToolSetting(format!(
                    "parameters act on {}",
                    match self.scope {
                        Scope::Global => "all skins",
                        Scope::TouchedRegion => "the touched region",
                    }
                )))
            }
            Param::SkinStretch
            | Param::SkinBend
            | Param::SkinDamping
            | Param::SkinMass
            | Param::BandStiffness => self.step_material(param, up, tools, ctx),
            Param::Gravity => step_gravity(up, ctx),
            Param::GlobalDamping => step_global_damping(up, ctx),
            Param::Flesh => step_flesh(up, ctx),
            Param::PartStiffness => step_part_stiffness(up, tools, ctx),
            Param::PartFriction => step_part_friction(up, tools, ctx),
            Param::Integrator => Ok(step_integrator(up, settings)),
            Param::Tolerance => {
                let t = &mut settings.tolerances.position;
                *t = (if up { *t * 2.0 } else { *t / 2.0 }).clamp(1e-7, 1e-1);
                Ok(PanelOutcome::Settings(format!(
                    "position tolerance {:.1e}",
                    *t
                )))
            }
            Param::TimeRatio => {
                let r = &mut settings.time_ratio;
                *r = (if up {
                    *r * STEP as f64
                } else {
                    *r / STEP as f64
                })
                .clamp(0.01, 10.0);
                Ok(PanelOutcome::Settings(format!(
                    "simulation x{:.2} of real time",
                    *r
                )))
            }
            Param::BrushRadius => {
                let r = &mut tools.state.lipo_radius;
                *r = (if up { *r * STEP } else { *r / STEP }).clamp(0.005, 0.3);
                Ok(PanelOutcome::ToolSetting(format!(
                    "brush radius {:.0} mm",
                    *r * 1e3
                )))
            }
            Param::PaintColor => {
                use super::tool::PALETTE;
                let c = &mut tools.state.paint_color;
                let at = PALETTE.iter().position(|(_, p)| p == c);
                let next = match (at, up) {
                    (Some(i), true) => (i + 1) % PALETTE.len(),
                    (Some(i), false) => (i + PALETTE.len() - 1) % PALETTE.len(),
                    (None, _) => 0,
                };
                *c = PALETTE[next].1;
                Ok(PanelOutcome::ToolSetting(format!(
                    "paint colour {}",
                    PALETTE[next].0
                )))
            }
            Param::Snapping => {
                tools.state.snapping = !tools.state.snapping;
                Ok(PanelOutcome::ToolSetting(format!(
                    "snapping {}",
                    if tools.state.snapping { "on" } else { "off" }
                )))
            }
            Param::Lock => {
                let locked = tools.toggle_lock_current(ctx)?;
                let name = &ctx.character.skeleton.joints[tools.state.current_joint].name;
                Ok(PanelOutcome::Edited(format!(
                    "{name} {}",
                    if locked {
                        "locked against edits"
                    } else {
                        "unlocked"
                    }
                )))
            }
            Param::Symmetry => {
                self.symmetry = match self.symmetry {
                    Some(_) => None,
                    None => Some(Symmetry::x()),
                };
                Ok(PanelOutcome::ToolSetting(match self.symmetry {
                    Some(_) => "symmetric modelling: every edit mirrored in x = 0".into(),
                    None => "symmetric modelling off".into(),
                }))
            }
            Param::Precision => {
                tools.precision.enabled = !tools.precision.enabled;
                Ok(PanelOutcome::ToolSetting(format!(
                    "precision {}",
                    if tools.precision.enabled { "on" } else { "off" }
                )))
            }
        }
    }

    /// Steps a skin material or band stiffness row (`param`) one step up or
    /// down over the panel's region, as one undo step.
    fn step_material(
        &self,
        param: Param,
        up: bool,
        tools: &Toolbox,
        ctx: &mut ToolContext,
    ) -> Result<PanelOutcome, EditError> {
        let region = self
            .region(tools, ctx.character)
            .map_err(|message| EditError::Invalid {
                command: "parameters panel",
                field: param_label(param).trim().to_string(),
                message,
            })?;
        // Mass must stay positive; the others may reach zero.
        let floor = match param {
            Param::SkinBend => 1e-7,
            Param::SkinMass => 1e-3,
            _ => 1e-4,
        };
        let new_value = |v: f32| {
            let n = step_value(v, floor, up);
            match param {
                Param::SkinMass => n.max(floor),
                // Up to leather (see BEND_MAX); further is refused.
                Param::SkinBend => n.min(BEND_MAX),
                _ => n,
            }
        };
        let commands = material_commands(ctx.character, param, new_value, &region, self.scope);
        if commands.is_empty() {
            return Ok(PanelOutcome::Nothing);
        }
        ctx.history.apply_group(ctx.character, commands)?;
        let now = mean_value(ctx.character, param, Some(&region)).unwrap_or(0.0);
        Ok(PanelOutcome::Edited(format!(
            "{} {} to {now:.3e} ({} points)",
            param_label(param),
            if up { "up" } else { "down" },
            region.len()
        )))
    }
}

/// One step of a parameter row's value `v`: up multiplies by `STEP` (from
/// `floor` when below it), down divides by it (to zero when that would fall
/// below `floor`).
fn step_value(v: f32, floor: f32, up: bool) -> f32 {
    if up {
        if v < floor { floor } else { v * STEP }
    } else if v / STEP < floor {
        0.0
    } else {
        v / STEP
    }
}

/// Steps |g| one step up or down along its direction (straight down from
/// zero), as one undo step.
fn step_gravity(up: bool, ctx: &mut ToolContext) -> Result<PanelOutcome, EditError> {
    let g = ctx.character.environment.gravity;
    let magnitude = step_value(g.length(), 0.5, up);
    let dir = g.try_normalize().unwrap_or(Vec3::NEG_Y);
    let gravity = dir * magnitude;
    ctx.history.apply(
        ctx.character,
        Command::SetEnvironment {
            gravity: Some(gravity),
            global_damping: None,
        },
    )?;
    Ok(PanelOutcome::Edited(format!(
        "gravity {:.2} m/s2",
        gravity.length()
    )))
}

/// Steps the global damping one step up or down, as one undo step.
fn step_global_damping(up: bool, ctx: &mut ToolContext) -> Result<PanelOutcome, EditError> {
    let d = step_value(ctx.character.environment.global_damping, 0.01, up);
    ctx.history.apply(
        ctx.character,
        Command::SetEnvironment {
            gravity: None,
            global_damping: Some(d),
        },
    )?;
    Ok(PanelOutcome::Edited(format!("global damping {d:.3}")))
}

/// Steps the flesh backend: up goes kinematic → FEM → FEM with adaptive
/// detail (§4.7) → modal (DyRT) → kinematic, down back; FEM keeps its
/// settings, and modal flesh starts with a part per joint carrying muscles.
fn step_flesh(up: bool, ctx: &mut ToolContext) -> Result<PanelOutcome, EditError> {
    let c = &*ctx.character;
    let state = match &c.flesh {
        Flesh::Kinematic => 0,
        Flesh::Fem(f) if f.detail.is_none() => 1,
        Flesh::Fem(_) => 2,
        Flesh::Modal(_) => 3,
    };
    let fem = c.flesh.fem().cloned().unwrap_or_default();
    let flesh = match (state + if up { 1 } else { 3 }) % 4 {
        0 => Flesh::Kinematic,
        1 => Flesh::Fem(FemFlesh {
            detail: None,
            ..fem
        }),
        2 => Flesh::Fem(FemFlesh {
            detail: Some(FleshDetail::default()),
            ..fem
        }),
        _ => Flesh::Modal(ModalFlesh::for_character(c)),
    };
    let name = match &flesh {
        Flesh::Fem(f) if f.detail.is_some() => "FEM (adaptive detail)",
        Flesh::Fem(_) => "FEM",
        Flesh::Modal(_) => "modal",
        Flesh::Kinematic => "kinematic",
    };
    ctx.history
        .apply(ctx.character, Command::SetFlesh { flesh })?;
    Ok(PanelOutcome::Edited(format!("{name} flesh")))
}

/// Changes the FEM flesh of the current joint's part, and of its mirror
/// image under symmetry, with `edit` (the flesh and a joint's name), one
/// undo step; `field` names the row in refusals. Returns the part's and the
/// mirror's names and the flesh as it now is.
fn edit_part(
    tools: &Toolbox,
    ctx: &mut ToolContext,
    field: &str,
    edit: impl Fn(&FemFlesh, &str) -> FemFlesh,
) -> Result<(String, Option<String>, FemFlesh), EditError> {
    let invalid = |message: String| EditError::Invalid {
        command: "parameters panel",
        field: field.into(),
        message,
    };
    let c = &*ctx.character;
    let fem = c.flesh.fem().ok_or_else(|| {
        invalid("the flesh is kinematic: switch it to FEM (the flesh row)".into())
    })?;
    let joint = tools.state.current_joint;
    let name = c
        .skeleton
        .joints
        .get(joint)
        .ok_or_else(|| invalid("pick a joint first".into()))?
        .name
        .clone();
    let mut fem = edit(fem, &name);
    let mirror = ctx
        .symmetry
        .and_then(|s| s.mirror_joint(c, &c.skeleton.rest_posture(), joint))
        .filter(|&m| m != joint)
        .map(|m| c.skeleton.joints[m].name.clone());
    if let Some(m) = &mirror {
        fem = edit(&fem, m);
    }
    ctx.history.apply(
        ctx.character,
        Command::SetFlesh {
            flesh: Flesh::Fem(fem.clone()),
        },
    )?;
    Ok((name, mirror, fem))
}

/// The part-stiffness row: the current part's flesh a step stiffer (`up`)
/// or floppier.
fn step_part_stiffness(
    up: bool,
    tools: &Toolbox,
    ctx: &mut ToolContext,
) -> Result<PanelOutcome, EditError> {
    let factor = if up { STEP as f64 } else { 1.0 / STEP as f64 };
    let (name, mirror, fem) = edit_part(tools, ctx, "part flesh E", |f, n| {
        f.with_part_scale(n, f.part_scale(n) * factor)
    })?;
    Ok(PanelOutcome::Edited(format!(
        "flesh of {name}{} x{:.2} as stiff",
        mirror.map(|m| format!(" and {m}")).unwrap_or_default(),
        fem.part_scale(&name)
    )))
}

/// The part-friction row: the current part's own friction coefficient a
/// step (0.1) higher (`up`) or lower, starting from the ground's (a part
/// with the ground's μ meets the ground as one without its own).
fn step_part_friction(
    up: bool,
    tools: &Toolbox,
    ctx: &mut ToolContext,
) -> Result<PanelOutcome, EditError> {
    let step = if up {
        PART_FRICTION_STEP
    } else {
        -PART_FRICTION_STEP
    };
    let (name, mirror, fem) = edit_part(tools, ctx, "part friction", |f, n| {
        let mu = f.part_friction(n).unwrap_or(GROUND_FRICTION) + step;
        f.with_part_friction(
            n,
            Some((mu / PART_FRICTION_STEP).round() * PART_FRICTION_STEP),
        )
    })?;
    let mu = fem.part_friction(&name).unwrap_or(GROUND_FRICTION);
    Ok(PanelOutcome::Edited(format!(
        "friction of {name}{} {mu:.1} (on the ground {:.2})",
        mirror.map(|m| format!(" and {m}")).unwrap_or_default(),
        mix_friction(GROUND_FRICTION, Some(mu))
    )))
}

/// Steps the solver's integrator to the next (`up`) or previous kind in
/// `IntegratorKind::ALL`, wrapping around.
fn step_integrator(up: bool, settings: &mut SolverSettings) -> PanelOutcome {
    let all = IntegratorKind::ALL;
    let i = all
        .iter()
        .position(|&k| k == settings.integrator)
        .unwrap_or(0);
    let n = all.len();
    settings.integrator = all[if up { (i + 1) % n } else { (i + n - 1) % n }];
    PanelOutcome::Settings(format!("integrator {:?}", settings.integrator))
}

fn param_label(p: Param) -> &'static str {
    match p {
        Param::Scope => "scope",
        Param::SkinStretch => "skin stretch",
        Param::SkinBend => "skin bend",
        Param::SkinDamping => "skin damping",
        Param::SkinMass => "skin mass",
        Param::BandStiffness => "tissue k_s",
        Param::Gravity => "gravity",
        Param::GlobalDamping => "damping",
        Param::Flesh => "flesh",
        Param::Integrator => "integrator",
        Param::Tolerance => "tolerance",
        Param::TimeRatio => "sim/real",
        Param::BrushRadius => "brush",
        Param::PaintColor => "paint colour",
        Param::Snapping => "snapping",
        Param::Precision => "precision",
        Param::Lock => "lock part",
        Param::PartStiffness => "part flesh E",
        Param::PartFriction => "part friction",
        Param::Symmetry => "symmetry",
    }
}

/// The mean of a material parameter over `region` (every point when
/// `None`); `None` when nothing has that parameter (no skin, no band).
fn mean_value(c: &Character, param: Param, region: Option<&[(usize, usize)]>) -> Option<f32> {
    let value = |s: usize, k: usize| -> Option<f32> {
        let p = &c.skins.get(s)?.points;
        match param {
            Param::SkinStretch => p.stretch.get(k).map(|e| e[0]),
            Param::SkinBend => p.bend.get(k).copied(),
            Param::SkinDamping => p.damping_density.get(k).copied(),
            Param::SkinMass => p.mass_density.get(k).copied(),
            Param::BandStiffness => p.band.get(k)?.as_ref().map(|b| b.ks),
            _ => None,
        }
    };
    let (mut sum, mut n) = (0.0f64, 0usize);
    let mut add = |s, k| {
        if let Some(v) = value(s, k) {
            sum += v as f64;
            n += 1;
        }
    };
    match region {
        Some(r) => r.iter().for_each(|&(s, k)| add(s, k)),
        None => {
            for (s, skin) in c.skins.iter().enumerate() {
                (0..skin.point_count()).for_each(|k| add(s, k));
            }
        }
    }
    (n > 0).then(|| (sum / n as f64) as f32)
}

/// The commands that step each point of `region` from its own value `v`
/// to `new_value(v)`, so a region painted stiffer stays stiffer than the
/// rest: per skin, one `SetSkinMaterial` per distinct value (the whole skin
/// at once when it is uniform and the scope is global, so the command stays
/// small).
fn material_commands(
    c: &Character,
    param: Param,
    new_value: impl Fn(f32) -> f32,
    region: &[(usize, usize)],
    scope: Scope,
) -> Vec<Command> {
    let mut out = Vec::new();
    for s in 0..c.skins.len() {
        // Points by their current value (bit-exact), in first-seen order.
        let mut groups: Vec<(f32, Vec<usize>)> = Vec::new();
        for &(_, k) in region.iter().filter(|(rs, _)| *rs == s) {
            let p = &c.skins[s].points;
            let v = match param {
                Param::SkinStretch => p.stretch[k][0],
                Param::SkinBend => p.bend[k],
                Param::SkinDamping => p.damping_density[k],
                Param::SkinMass => p.mass_density[k],
                _ => match &p.band[k] {
                    Some(b) => b.ks,
                    None => continue, // no band: no connective tissue to change
                },
            };
            match groups.iter_mut().find(|(g, _)| g.to_bits() == v.to_bits()) {
                Some((_, points)) => points.push(k),
                None => groups.push((v, vec![k])),
            }
        }
        let whole_skin = scope == Scope::Global
            && groups.len() == 1
            && groups[0].1.len() == c.skins[s].point_count();
        for (v, points) in groups {
            let value = Some(new_value(v));
            let none = None;
            let (stretch, bend, damping, mass, band_stiffness) = match param {
                Param::SkinStretch => (value, none, none, none, none),
                Param::SkinBend => (none, value, none, none, none),
                Param::SkinDamping => (none, none, value, none, none),
                Param::SkinMass => (none, none, none, value, none),
                _ => (none, none, none, none, value),
            };
            out.push(Command::SetSkinMaterial {
                skin: s,
                region: (!whole_skin).then_some(points),
                stretch,
                damping,
                mass,
                bend,
                band_stiffness,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests;
