//! The flesh rows of the panel: the flesh backend, each part's stiffness
//! and friction, and the embedded mesh's blendshapes (target, weight,
//! physical or linear). Each press is one undo step.

use super::rows::{BLEND_WEIGHT_STEP, PART_FRICTION_STEP, PanelOutcome, STEP};
use crate::character::{Character, FemFlesh, Flesh, FleshDetail, ModalFlesh};
use crate::contact::{GROUND_FRICTION, mix_friction};
use crate::tools::command::{Command, EditError};
use crate::tools::tool::{ToolContext, Toolbox};

/// Steps the flesh backend: up goes kinematic → FEM → FEM with adaptive
/// detail (§4.7) → modal (DyRT) → kinematic, down back; FEM keeps its
/// settings, and modal flesh starts with a part per joint carrying muscles.
pub(super) fn step_flesh(up: bool, ctx: &mut ToolContext) -> Result<PanelOutcome, EditError> {
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
/// undo step, or part of the last when `continuing` (a slider dragged);
/// `field` names the row in refusals. Returns the part's and the mirror's
/// names and the flesh as it now is.
fn edit_part(
    tools: &Toolbox,
    ctx: &mut ToolContext,
    (field, continuing): (&str, bool),
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
    let flesh = Flesh::Fem(fem.clone());
    apply_edit(ctx, Command::SetFlesh { flesh }, continuing)?;
    Ok((name, mirror, fem))
}

/// The names of `c`'s blendshape targets, or the refusal naming `field`.
pub(super) fn blend_targets(c: &Character, field: &str) -> Result<Vec<String>, EditError> {
    match c.blendshapes() {
        Some(b) if !b.targets.is_empty() => Ok(b.targets.iter().map(|t| t.name.clone()).collect()),
        _ => Err(EditError::Invalid {
            command: "parameters panel",
            field: field.into(),
            message: "the character has no blendshapes: attach a rig to its embedded mesh \
                      (`plasticine blendshape attach`)"
                .into(),
        }),
    }
}

/// The blend-target row: the next (`up`) or previous target of the
/// embedded mesh; past the last, a new one (a copy of the mesh, one undo
/// step) to sculpt.
pub(super) fn step_blend_target(
    up: bool,
    tools: &mut Toolbox,
    ctx: &mut ToolContext,
) -> Result<PanelOutcome, EditError> {
    let c = &*ctx.character;
    let n = c.blend_targets();
    let k = tools.state.blend_target.min(n.saturating_sub(1));
    if up && k + 1 >= n {
        // Refused, saying why, where there is no embedded mesh.
        let name = (n + 1..)
            .map(|i| format!("sculpt {i}"))
            .find(|name| c.blendshapes().is_none_or(|b| b.target(name).is_none()))
            .expect("some name is free");
        ctx.history.apply(
            ctx.character,
            Command::AddBlendTarget { name: name.clone() },
        )?;
        tools.state.blend_target = n;
        return Ok(PanelOutcome::Edited(format!(
            "new blend target '{name}' (a copy of the mesh): sculpt it with the sculpt tool"
        )));
    }
    let names = blend_targets(c, "blend target")?;
    tools.state.blend_target = if up { k + 1 } else { (k + n - 1) % n };
    Ok(PanelOutcome::ToolSetting(format!(
        "blend weight row and sculpt tool on '{}'",
        names[tools.state.blend_target]
    )))
}

/// The blend weight row's − and + marks: the chosen target's weight one
/// step down or up in the working posture (see [`set_blend_weight`]).
pub(super) fn step_blend_weight(
    target: usize,
    up: bool,
    ctx: &mut ToolContext,
) -> Result<PanelOutcome, EditError> {
    let names = blend_targets(ctx.character, "blend weight")?;
    let k = target.min(names.len() - 1);
    let now = ctx.history.posture().blend.get(k).copied().unwrap_or(0.0);
    let step = if up {
        BLEND_WEIGHT_STEP
    } else {
        -BLEND_WEIGHT_STEP
    };
    // Rounded to the step, so presses land on 0.1, 0.2, … exactly.
    let new = ((now + step) / BLEND_WEIGHT_STEP).round() * BLEND_WEIGHT_STEP;
    set_blend_weight(target, new, false, ctx)
}

/// Sets the chosen target's weight in the working posture to `value`
/// (clamped to 0..1), the other targets scaled down if the sum would pass
/// 1, as one undo step, or as part of the last one when `continuing` (a
/// slider dragged). Nothing when it is already there.
pub(super) fn set_blend_weight(
    target: usize,
    value: f32,
    continuing: bool,
    ctx: &mut ToolContext,
) -> Result<PanelOutcome, EditError> {
    let names = blend_targets(ctx.character, "blend weight")?;
    let k = target.min(names.len() - 1);
    let mut posture = ctx.history.posture().clone();
    let w = &mut posture.blend;
    w.resize(names.len(), 0.0);
    crate::character::set_weight(w, k, value);
    let value = w[k];
    if posture == *ctx.history.posture() {
        // At 0 or 1 already: no empty undo step.
        return Ok(PanelOutcome::Nothing);
    }
    apply_edit(ctx, Command::SetPosture { posture }, continuing)?;
    Ok(PanelOutcome::Edited(format!(
        "blend '{}' at {value:.2} (K keys it)",
        names[k]
    )))
}

/// The blend row: the embedded mesh's blendshapes solved physically or
/// linearly (what other tools do), one undo step.
pub(super) fn toggle_blend_mode(ctx: &mut ToolContext) -> Result<PanelOutcome, EditError> {
    blend_targets(ctx.character, "blend")?;
    let mut fem = ctx
        .character
        .flesh
        .fem()
        .cloned()
        .expect("blendshapes are on FEM flesh");
    let shapes = fem.blendshapes.as_mut().expect("checked above");
    shapes.linear = !shapes.linear;
    let linear = shapes.linear;
    ctx.history.apply(
        ctx.character,
        Command::SetFlesh {
            flesh: Flesh::Fem(fem),
        },
    )?;
    Ok(PanelOutcome::Edited(
        if linear {
            "blendshapes blended linearly (as other tools do)"
        } else {
            "blendshapes solved physically (springs at equilibrium)"
        }
        .into(),
    ))
}

/// The FEM flesh's morph target the panel's rows act on, as its index, the
/// count and its name; `None` without any.
pub(crate) fn chosen_morph_target(
    c: &Character,
    tools: &Toolbox,
) -> Option<(usize, usize, String)> {
    let targets = &c.flesh.fem()?.morph_targets;
    let k = tools.state.morph_target.min(targets.len().checked_sub(1)?);
    Some((k, targets.len(), targets[k].name.clone()))
}

/// The morph-target row: the next (`up`) or previous of the flesh's dynamic
/// morph targets.
pub(super) fn step_morph_target(
    up: bool,
    tools: &mut Toolbox,
    c: &Character,
) -> Result<PanelOutcome, EditError> {
    let Some((k, n, _)) = chosen_morph_target(c, tools) else {
        return Err(EditError::Invalid {
            command: "parameters panel",
            field: "morph target".into(),
            message:
                "no morph targets: grip the FEM flesh, pull it into shape and press A to keep one"
                    .into(),
        });
    };
    tools.state.morph_target = if up { (k + 1) % n } else { (k + n - 1) % n };
    let (k, n, name) = chosen_morph_target(c, tools).expect("some target");
    Ok(PanelOutcome::ToolSetting(format!(
        "morph target '{name}' ({}/{n})",
        k + 1
    )))
}

/// The delete-target row: drops the chosen morph target (and the plain
/// rest kept beside a first target when it is all that is left), one undo
/// step.
pub(super) fn delete_morph_target(
    tools: &mut Toolbox,
    ctx: &mut ToolContext,
) -> Result<PanelOutcome, EditError> {
    let c = &*ctx.character;
    let Some((k, _, name)) = chosen_morph_target(c, tools) else {
        return Err(EditError::Invalid {
            command: "parameters panel",
            field: "delete target".into(),
            message: "no morph targets to delete".into(),
        });
    };
    let fem = crate::fem::without_target(c.flesh.fem().expect("targets are on FEM flesh"), &name);
    let left = fem.morph_targets.len();
    ctx.history.apply(
        ctx.character,
        Command::SetFlesh {
            flesh: Flesh::Fem(fem),
        },
    )?;
    tools.state.morph_target = k.min(left.saturating_sub(1));
    Ok(PanelOutcome::Edited(format!(
        "deleted morph target '{name}' ({left} left; undo brings it back)"
    )))
}

/// The part-stiffness row: the current part's flesh a step stiffer (`up`)
/// or floppier.
pub(super) fn step_part_stiffness(
    up: bool,
    tools: &Toolbox,
    ctx: &mut ToolContext,
) -> Result<PanelOutcome, EditError> {
    let factor = if up { STEP as f64 } else { 1.0 / STEP as f64 };
    scale_part_stiffness(|now| now * factor, false, tools, ctx)
}

/// The current part's (and its mirror's) stiffness factor set to `scale`
/// of what it is (a step, or the slider's value), one undo step or part of
/// the last when `continuing`.
pub(super) fn scale_part_stiffness(
    scale: impl Fn(f64) -> f64,
    continuing: bool,
    tools: &Toolbox,
    ctx: &mut ToolContext,
) -> Result<PanelOutcome, EditError> {
    let (name, mirror, fem) = edit_part(tools, ctx, ("part flesh E", continuing), |f, n| {
        f.with_part_scale(n, scale(f.part_scale(n)))
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
pub(super) fn step_part_friction(
    up: bool,
    tools: &Toolbox,
    ctx: &mut ToolContext,
) -> Result<PanelOutcome, EditError> {
    let step = if up {
        PART_FRICTION_STEP
    } else {
        -PART_FRICTION_STEP
    };
    // Rounded to the step, so presses land on 0.1, 0.2, … exactly.
    let stepped = |mu: f64| ((mu + step) / PART_FRICTION_STEP).round() * PART_FRICTION_STEP;
    change_part_friction(stepped, false, tools, ctx)
}

/// The current part's (and its mirror's) own friction set to `to` of what
/// it meets the ground with now (a step, or the slider's value), one undo
/// step or part of the last when `continuing`.
pub(super) fn change_part_friction(
    to: impl Fn(f64) -> f64,
    continuing: bool,
    tools: &Toolbox,
    ctx: &mut ToolContext,
) -> Result<PanelOutcome, EditError> {
    let (name, mirror, fem) = edit_part(tools, ctx, ("part friction", continuing), |f, n| {
        f.with_part_friction(n, Some(to(f.part_friction(n).unwrap_or(GROUND_FRICTION))))
    })?;
    let mu = fem.part_friction(&name).unwrap_or(GROUND_FRICTION);
    Ok(PanelOutcome::Edited(format!(
        "friction of {name}{} {mu:.1} (on the ground {:.2})",
        mirror.map(|m| format!(" and {m}")).unwrap_or_default(),
        mix_friction(GROUND_FRICTION, Some(mu))
    )))
}

/// The sculpt brush row: the next (or previous) of grab, smooth, inflate.
pub(super) fn step_sculpt_brush(up: bool, tools: &mut Toolbox) -> PanelOutcome {
    use crate::tools::tool::BrushKind;
    let all = BrushKind::ALL;
    let at = all
        .iter()
        .position(|&b| b == tools.state.sculpt_brush)
        .unwrap_or(0);
    let next = (if up { at + 1 } else { at + all.len() - 1 }) % all.len();
    tools.state.sculpt_brush = all[next];
    PanelOutcome::ToolSetting(format!("sculpt brush {}", all[next].name()))
}

/// Applies `cmd` as one undo step, or as part of the last when
/// `continuing` (a slider dragged).
pub(super) fn apply_edit(
    ctx: &mut ToolContext,
    cmd: Command,
    continuing: bool,
) -> Result<(), EditError> {
    if continuing {
        ctx.history.apply_continuing(ctx.character, cmd)
    } else {
        ctx.history.apply(ctx.character, cmd)
    }
}
