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
//!   switches). A continuous value's row is a slider ([`Param::slider`]):
//!   pressed on its track it takes the value there, dragged it follows the
//!   wand (one undo step), and only the − and + marks at its ends step.
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
use crate::character::{Character, Flesh};
use crate::contact::GROUND_FRICTION;
use crate::skin::SolverSettings;
use glam::{Mat4, Vec3};
pub use help::{row_help, row_help_at};
#[cfg(test)]
use timeline::{KEY_NUDGE, SCRUBBER_CHARS};
pub use timeline::{TimelineAction, TimelineRow, TimelineStatus, blend_curve, parse_blend_curve};
use timeline::{tcb_index, timeline_action, timeline_line};
pub use view::{MuscleView, ViewLayers, ViewRow};

mod flesh;
mod help;
mod material;
mod rows;
mod settings;
mod timeline;
mod view;

use flesh::{
    apply_edit, change_part_friction, chosen_morph_target, delete_morph_target,
    scale_part_stiffness, set_blend_weight, step_blend_target, step_blend_weight, step_flesh,
    step_morph_target, step_part_friction, step_part_stiffness, step_sculpt_brush,
    toggle_blend_mode,
};
use material::{material_commands, mean_value};
pub use rows::{
    BEND_MAX, PAD, PALETTE_COLUMNS, PALETTE_ROWS, PanelHit, PanelOutcome, Param, ROW_HEIGHT, Row,
    SLIDER_TRACK, STEP, Scope, Side, SliderScale, palette_cell, palette_cell_middle, slider_value,
};
use settings::{step_global_damping, step_gravity, step_integrator, step_session, step_value};

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
    /// The slider row held since its press made an edit: the drag's
    /// further edits continue that undo step ([`release`](Self::release)
    /// ends it).
    sliding: Option<usize>,
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
        ToolKind::Sculpt => "sculpt (blendshape)",
    }
}

/// A tool's name in its palette cell, under its icon's width: a word.
pub fn tool_short_label(tool: ToolKind) -> &'static str {
    match tool {
        ToolKind::Select => "select",
        ToolKind::Sphere => "sphere",
        ToolKind::Superellipse => "super",
        ToolKind::Deform => "deform",
        ToolKind::Ik => "IK",
        ToolKind::Skin => "skin",
        ToolKind::Liposuction => "lipo",
        ToolKind::Weights => "weights",
        ToolKind::Paint => "paint",
        ToolKind::Sculpt => "sculpt",
    }
}

/// Palette row `p`'s text: each cell's short name, the current tool's
/// marked `>`, cells a fixed width apart so the text lines up with them.
pub fn palette_line(p: u8, current: ToolKind) -> String {
    Row::palette_tools(p)
        .iter()
        .map(|&k| {
            let mark = if k == current { '>' } else { ' ' };
            format!("{mark}{:<7}", tool_short_label(k))
        })
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end()
        .to_string()
}

impl ControlPanel {
    /// Where `tool`'s palette cell is: its row's index in [`Self::rows`]
    /// and the fraction along the row at the cell's middle (what a front
    /// end or a test points at to choose it).
    pub fn tool_cell(tool: ToolKind) -> (usize, f32) {
        let k = ToolKind::ALL
            .iter()
            .position(|&t| t == tool)
            .expect("every tool is in ALL");
        let p = (k / PALETTE_COLUMNS) as u8;
        let row = Self::rows()
            .iter()
            .position(|&r| r == Row::Palette(p))
            .expect("every palette row is on the panel");
        (row, palette_cell_middle(k % PALETTE_COLUMNS))
    }

    /// The rows, top to bottom.
    pub fn rows() -> Vec<Row> {
        let mut rows = vec![Row::Heading("TOOLS")];
        rows.extend((0..PALETTE_ROWS as u8).map(Row::Palette));
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
                Param::MorphTarget,
                Param::MorphDelete,
                Param::BlendTarget,
                Param::BlendWeight,
                Param::BlendMode,
                Param::SculptBrush,
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
                TimelineRow::BlendCurve,
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
        // Each material's mean over the scope, with its unit (densities
        // per square metre of rest skin).
        let skin_value = |param: Param| -> String {
            let unit = match param {
                Param::SkinStretch | Param::BandStiffness => "N/m",
                Param::SkinBend => "J",
                Param::SkinDamping => "Ns/m3",
                _ => "kg/m2",
            };
            match mean_value(c, param, region.as_deref()) {
                Some(v) => format!("{v:.3e} {unit}"),
                None => "-".into(),
            }
        };
        let on = |b: bool| if b { "on" } else { "off" };
        Self::rows()
            .iter()
            .map(|row| match row {
                Row::Heading(h) => (*h).to_string(),
                Row::Palette(p) => palette_line(*p, tools.tool()),
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
                        Param::GlobalDamping => format!("{:.3} /s", c.environment.global_damping),
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
                                    None => {
                                        format!("{} as the ground, {GROUND_FRICTION:.1}", j.name)
                                    }
                                },
                                _ => "- (FEM flesh)".into(),
                            }
                        }
                        Param::MorphTarget | Param::MorphDelete => {
                            match chosen_morph_target(c, tools) {
                                Some((k, n, name)) if *p == Param::MorphTarget => {
                                    format!("{name} ({}/{n})", k + 1)
                                }
                                Some((_, _, name)) => format!("'{name}'"),
                                None => "- (morph targets)".into(),
                            }
                        }
                        Param::BlendTarget => match c.blendshapes() {
                            Some(b) if !b.targets.is_empty() => {
                                let k = tools.state.blend_target.min(b.targets.len() - 1);
                                format!("{} ({}/{})", b.targets[k].name, k + 1, b.targets.len())
                            }
                            _ => "- (blendshapes)".into(),
                        },
                        Param::BlendWeight => match c.blendshapes() {
                            Some(b) if !b.targets.is_empty() => {
                                let k = tools.state.blend_target.min(b.targets.len() - 1);
                                let w = timeline.blend.get(k).copied().unwrap_or(0.0);
                                format!("{} {w:.2}", b.targets[k].name)
                            }
                            _ => "- (blendshapes)".into(),
                        },
                        Param::BlendMode => match c.blendshapes() {
                            Some(b) if b.linear => "linear".into(),
                            Some(_) => "physical".into(),
                            None => "- (blendshapes)".into(),
                        },
                        Param::SculptBrush => tools.state.sculpt_brush.name().into(),
                        Param::Integrator => format!("{:?}", settings.integrator),
                        Param::Tolerance => format!("{:.1e} m", settings.tolerances.position),
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

    /// The trigger let go: a slider drag's undo step is complete.
    pub fn release(&mut self) {
        self.sliding = None;
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
        let row_index = row;
        let Some(&row) = Self::rows().get(row) else {
            return Ok(PanelOutcome::Nothing);
        };
        if self.sliding != Some(row_index) {
            self.sliding = None;
        }
        let up = side == Side::Right;
        let param = match row {
            Row::Heading(_) => return Ok(PanelOutcome::Nothing),
            Row::Palette(_) => {
                return match row.tool_at(fraction) {
                    Some(k) => {
                        tools.set_tool(k, ctx)?;
                        Ok(PanelOutcome::Tool(k))
                    }
                    None => Ok(PanelOutcome::Nothing),
                };
            }
            Row::Param(p) => p,
            Row::Timeline(r) => {
                // The key's tension, continuity and bias are sliders: the
                // front end sets the selected key's value, a drag one undo
                // step.
                if let Some((scale, t)) = row.slider().zip(slider_value(fraction))
                    && let Some(index) = tcb_index(r)
                {
                    let continuing = self.sliding == Some(row_index);
                    self.sliding = Some(row_index);
                    return Ok(PanelOutcome::Timeline(TimelineAction::SetTcb {
                        index,
                        value: scale.value(t),
                        continuing,
                    }));
                }
                let action = timeline_action(r, side == Side::Left, fraction);
                return Ok(PanelOutcome::Timeline(action));
            }
            Row::View(v) => return Ok(PanelOutcome::View(v.press(&mut self.view))),
        };
        // A press on a slider's track sets the value there; a drag goes on
        // as one undo step.
        if let Some((scale, t)) = param.slider().zip(slider_value(fraction)) {
            let continuing = self.sliding == Some(row_index);
            let out = self.set_value(param, scale.value(t), continuing, tools, ctx, settings)?;
            if matches!(out, PanelOutcome::Edited(_)) {
                self.sliding = Some(row_index);
            }
            return Ok(out);
        }
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
            Param::MorphTarget => step_morph_target(up, tools, ctx.character),
            Param::MorphDelete => delete_morph_target(tools, ctx),
            Param::BlendTarget => step_blend_target(up, tools, ctx),
            Param::BlendWeight => {
                // A drag from a mark onto the track goes on in its step.
                let out = step_blend_weight(tools.state.blend_target, up, ctx)?;
                if matches!(out, PanelOutcome::Edited(_)) {
                    self.sliding = Some(row_index);
                }
                Ok(out)
            }
            Param::BlendMode => toggle_blend_mode(ctx),
            Param::SculptBrush => Ok(step_sculpt_brush(up, tools)),
            Param::Integrator => Ok(step_integrator(up, settings)),
            Param::Tolerance | Param::TimeRatio | Param::BrushRadius => {
                Ok(step_session(param, up, tools, settings))
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

    /// Sets a slider row's `param` to `value`: the character's as one undo
    /// step (or as part of the last one when `continuing`, a drag), the
    /// session's settings and the tools' in place.
    fn set_value(
        &self,
        param: Param,
        value: f32,
        continuing: bool,
        tools: &mut Toolbox,
        ctx: &mut ToolContext,
        settings: &mut SolverSettings,
    ) -> Result<PanelOutcome, EditError> {
        match param {
            Param::SkinStretch
            | Param::SkinBend
            | Param::SkinDamping
            | Param::SkinMass
            | Param::BandStiffness => self.set_material(param, value, continuing, tools, ctx),
            Param::Gravity => {
                let dir = ctx.character.environment.gravity.try_normalize();
                let cmd = Command::SetEnvironment {
                    gravity: Some(dir.unwrap_or(Vec3::NEG_Y) * value),
                    global_damping: None,
                };
                apply_edit(ctx, cmd, continuing)?;
                Ok(PanelOutcome::Edited(format!("gravity {value:.2} m/s2")))
            }
            Param::GlobalDamping => {
                let cmd = Command::SetEnvironment {
                    gravity: None,
                    global_damping: Some(value),
                };
                apply_edit(ctx, cmd, continuing)?;
                Ok(PanelOutcome::Edited(format!("global damping {value:.3}")))
            }
            Param::BlendWeight => {
                set_blend_weight(tools.state.blend_target, value, continuing, ctx)
            }
            Param::PartStiffness => scale_part_stiffness(|_| value.into(), continuing, tools, ctx),
            Param::PartFriction => change_part_friction(|_| value.into(), continuing, tools, ctx),
            Param::Tolerance => {
                settings.tolerances.position = value;
                Ok(PanelOutcome::Settings(format!(
                    "position tolerance {value:.1e}"
                )))
            }
            Param::TimeRatio => {
                settings.time_ratio = value as f64;
                Ok(PanelOutcome::Settings(format!(
                    "simulation x{value:.2} of real time"
                )))
            }
            Param::BrushRadius => {
                tools.state.lipo_radius = value;
                Ok(PanelOutcome::ToolSetting(format!(
                    "brush radius {:.0} mm",
                    value * 1e3
                )))
            }
            _ => Ok(PanelOutcome::Nothing),
        }
    }

    /// Sets a skin material or band stiffness row (`param`) over the
    /// panel's region to a mean of `value`: every point scaled by the same
    /// factor, so a region painted stiffer stays stiffer (points all at
    /// zero are set to it).
    fn set_material(
        &self,
        param: Param,
        value: f32,
        continuing: bool,
        tools: &Toolbox,
        ctx: &mut ToolContext,
    ) -> Result<PanelOutcome, EditError> {
        let region = self.region_for(param, tools, ctx.character)?;
        let mean = mean_value(ctx.character, param, Some(&region)).unwrap_or(0.0);
        let new_value = |v: f32| {
            if mean > 0.0 {
                v * (value / mean)
            } else {
                value
            }
        };
        let commands = material_commands(ctx.character, param, new_value, &region, self.scope);
        if commands.is_empty() {
            return Ok(PanelOutcome::Nothing);
        }
        if continuing {
            for cmd in commands {
                ctx.history.apply_continuing(ctx.character, cmd)?;
            }
        } else {
            ctx.history.apply_group(ctx.character, commands)?;
        }
        let now = mean_value(ctx.character, param, Some(&region)).unwrap_or(0.0);
        Ok(PanelOutcome::Edited(format!(
            "{} set to {now:.3e} ({} points)",
            param_label(param),
            region.len()
        )))
    }

    /// The region a material row acts on, or the refusal naming the row.
    fn region_for(
        &self,
        param: Param,
        tools: &Toolbox,
        c: &Character,
    ) -> Result<Vec<(usize, usize)>, EditError> {
        self.region(tools, c).map_err(|message| EditError::Invalid {
            command: "parameters panel",
            field: param_label(param).trim().to_string(),
            message,
        })
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
        let region = self.region_for(param, tools, ctx.character)?;
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

/// A parameter or timeline row's text, `"  {label:<13}{value}"` as
/// [`ControlPanel::lines`] writes it, as its label and value.
pub fn row_cells(line: &str) -> (String, String) {
    let chars: Vec<char> = line.chars().collect();
    let cut = 15.min(chars.len());
    let label: String = chars[..cut].iter().collect();
    let value: String = chars[cut..].iter().collect();
    (label.trim().to_string(), value.trim().to_string())
}

/// Where a slider row's knob stands (0..1 along its track), read from its
/// text (`"  {label:<13}{value}"`, as [`ControlPanel::lines`] writes it):
/// the value's last number (a leading `x` dropped) over the row's scale;
/// `None` for rows without a slider or without a value ("-").
pub fn slider_knob(row: Row, line: &str) -> Option<f32> {
    let scale = row.slider()?;
    let (_, value) = row_cells(line);
    let number = value
        .split_whitespace()
        .filter_map(|w| w.trim_start_matches('x').parse::<f32>().ok())
        .next_back()?;
    Some(scale.position(number / scale.shown))
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
        Param::MorphTarget => "morph target",
        Param::MorphDelete => "delete target",
        Param::BlendTarget => "blend target",
        Param::BlendWeight => "blend weight",
        Param::BlendMode => "blend",
        Param::SculptBrush => "sculpt brush",
        Param::Symmetry => "symmetry",
    }
}

#[cfg(test)]
mod tests;
