//! The panel's rows for the session's settings (solver tolerance,
//! simulation/real ratio, brush radius, integrator) and the environment's
//! (gravity, global damping): one step up or down each.

use super::rows::{PanelOutcome, Param, STEP};
use crate::skin::{IntegratorKind, SolverSettings};
use crate::tools::command::{Command, EditError};
use crate::tools::tool::{ToolContext, Toolbox};
use glam::Vec3;

/// Steps a row of the session's settings or the tools' (tolerance,
/// simulation/real ratio, brush radius) one step up or down, within its
/// limits.
pub(super) fn step_session(
    param: Param,
    up: bool,
    tools: &mut Toolbox,
    settings: &mut SolverSettings,
) -> PanelOutcome {
    // Within the slider's ends.
    let Some(scale) = param.slider() else {
        return PanelOutcome::Nothing;
    };
    let step =
        |v: f32, factor: f32| (if up { v * factor } else { v / factor }).clamp(scale.lo, scale.hi);
    match param {
        Param::Tolerance => {
            let t = &mut settings.tolerances.position;
            *t = step(*t, 2.0);
            PanelOutcome::Settings(format!("position tolerance {:.1e}", *t))
        }
        Param::TimeRatio => {
            let r = &mut settings.time_ratio;
            let (lo, hi) = (scale.lo as f64, scale.hi as f64);
            let factor = STEP as f64;
            *r = (if up { *r * factor } else { *r / factor }).clamp(lo, hi);
            PanelOutcome::Settings(format!("simulation x{:.2} of real time", *r))
        }
        Param::BrushRadius => {
            let r = &mut tools.state.lipo_radius;
            *r = step(*r, STEP);
            PanelOutcome::ToolSetting(format!("brush radius {:.0} mm", *r * 1e3))
        }
        _ => PanelOutcome::Nothing,
    }
}

/// One step of a parameter row's value `v`: up multiplies by `STEP` (from
/// `floor` when below it), down divides by it (to zero when that would fall
/// below `floor`).
pub(super) fn step_value(v: f32, floor: f32, up: bool) -> f32 {
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
pub(super) fn step_gravity(up: bool, ctx: &mut ToolContext) -> Result<PanelOutcome, EditError> {
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
pub(super) fn step_global_damping(
    up: bool,
    ctx: &mut ToolContext,
) -> Result<PanelOutcome, EditError> {
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

/// Steps the solver's integrator to the next (`up`) or previous kind in
/// `IntegratorKind::ALL`, wrapping around.
pub(super) fn step_integrator(up: bool, settings: &mut SolverSettings) -> PanelOutcome {
    let all = IntegratorKind::ALL;
    let i = all
        .iter()
        .position(|&k| k == settings.integrator)
        .unwrap_or(0);
    let n = all.len();
    settings.integrator = all[if up { (i + 1) % n } else { (i + n - 1) % n }];
    PanelOutcome::Settings(format!("integrator {:?}", settings.integrator))
}
