//! One line of help per row, shown under the panel's controls while the
//! wand points at the row: what it changes, in the animator's terms.

use super::timeline::TimelineRow;
use super::{Param, Row};
use crate::tools::tool::ToolKind;

/// What `row` does, in a line.
pub fn row_help(row: Row) -> &'static str {
    match row {
        Row::Heading(_) => "",
        Row::Palette(_) => "tools: press one to make it current",
        Row::Param(p) => param_help(p),
        Row::Timeline(t) => timeline_help(t),
        Row::View(v) => v.help(),
    }
}

/// What the point `fraction` along `row` does: on the tool palette, the
/// tool in that cell; elsewhere the row's [`row_help`].
pub fn row_help_at(row: Row, fraction: f32) -> &'static str {
    match row.tool_at(fraction) {
        Some(tool) => tool_help(tool),
        None => row_help(row),
    }
}

fn tool_help(tool: ToolKind) -> &'static str {
    match tool {
        ToolKind::Select => "select: touch a joint to make it current; edits nothing",
        ToolKind::Sphere => "sphere: press in space for a joint with a muscle; drag sets its size",
        ToolKind::Superellipse => {
            "superellipse: as the sphere; turning the hand makes it boxier or pointier"
        }
        ToolKind::Deform => "deform: drag a muscle to bend or taper it, twist the hand to twist it",
        ToolKind::Ik => "IK: grab a joint and drag it; the chain above follows (posing)",
        ToolKind::Skin => "skin attach: touch a bottom then a top joint for a skin; A attaches it",
        ToolKind::Liposuction => "liposuction: hold and twist the wand to remove or inject fat",
        ToolKind::Weights => {
            "weights: hold and twist to paint how much the FEM flesh follows a bone"
        }
        ToolKind::Paint => "paint: brush the paint colour onto the skin or a muscle",
        ToolKind::Sculpt => {
            "sculpt: hold on the mesh's blendshape target (the panel's blend target) with the sculpt brush"
        }
    }
}

fn param_help(p: Param) -> &'static str {
    match p {
        Param::Scope => "scope: the skin rows change every skin, or the touched region",
        Param::SkinStretch => "skin stretch: how hard the skin resists stretching (N/m)",
        Param::SkinBend => "skin bend: bending stiffness (J); higher is smoother and stiffer",
        Param::SkinDamping => "skin damping: how fast the skin's wobble dies out",
        Param::SkinMass => "skin mass: heavier skin swings later and further",
        Param::BandStiffness => "tissue k_s: how tightly the skin is tied to the muscles",
        Param::Gravity => "gravity: its pull on the skin (m/s2); 0 floats",
        Param::GlobalDamping => "damping: drag on every motion, like moving through air or water",
        Param::Flesh => "flesh: muscles that ride their bones, or elastic FEM flesh",
        Param::PartStiffness => "part flesh E: the current part's flesh, floppier or stiffer",
        Param::PartFriction => {
            "part friction: how the current part's flesh grips the ground and the hand"
        }
        Param::MorphTarget => {
            "morph target: which pose-dependent shape of the FEM flesh (kept with A while gripping) the row under acts on"
        }
        Param::MorphDelete => {
            "delete target: press to drop the chosen morph target (undo brings it back)"
        }
        Param::BlendTarget => "blend target: which blendshape of the mesh the weight row sets",
        Param::BlendWeight => "blend weight: how much of the target the mesh takes now; K keys it",
        Param::BlendMode => "blend: physical keeps lengths through a blend; linear shrinks bends",
        Param::SculptBrush => {
            "sculpt brush: grab pulls the mesh; smooth relaxes it; inflate swells it (twist left: shrinks)"
        }
        Param::Integrator => "integrator: the solver; adaptive Verlet is the default",
        Param::Tolerance => "tolerance: smaller is more accurate and slower",
        Param::TimeRatio => "sim/real: simulated seconds per real second (slow motion below 1)",
        Param::BrushRadius => "brush: the radius of liposuction, paint and the touched region",
        Param::PaintColor => "paint colour: what the paint tool brushes on",
        Param::Snapping => "snapping: new joints snap to the mirror plane and the bone's axis",
        Param::Precision => "precision: the hand's motion scaled down and smoothed",
        Param::Lock => "lock part: the current joint's part refuses edits",
        Param::Symmetry => "symmetry: every edit mirrored in x = 0",
    }
}

fn timeline_help(t: TimelineRow) -> &'static str {
    match t {
        TimelineRow::Scrubber => {
            "timeline: press to seek, hold and move to scrub; press a key's dot to drag it"
        }
        TimelineRow::BlendCurve => {
            "blend curve: the blend target's keyed weight over the timeline; press to seek"
        }
        TimelineRow::Transport => "transport: stop (back to editing), or play and pause",
        TimelineRow::Mode => "mode: skeleton only, live simulation, full resolution, or baked",
        TimelineRow::Length => "length: one second shorter or longer",
        TimelineRow::Loop => "loop: playback starts over at the end",
        TimelineRow::Key => "keys: delete the selected key, or store the posture at the playhead",
        TimelineRow::SelectKey => "select key: the previous or the next key",
        TimelineRow::MoveKey => "move key: the selected key 0.1 s earlier or later",
        TimelineRow::Tension => "tension: a tighter (+) or looser (-) curve through the key",
        TimelineRow::Continuity => "continuity: a sharper (-) or rounder (+) corner at the key",
        TimelineRow::Bias => "bias: overshoot (+) or undershoot (-) the key",
        TimelineRow::AutoResolution => {
            "live res: the skin resolution that keeps real time, or fixed"
        }
        TimelineRow::Perform => "perform: drag a joint while it plays to lay keys down",
        TimelineRow::PerformRate => "perform rate: keys more or less often while performing",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::panel::ControlPanel;

    #[test]
    fn every_row_but_a_heading_has_help_naming_it() {
        for row in ControlPanel::rows() {
            let help = row_help(row);
            match row {
                Row::Heading(_) => assert!(help.is_empty()),
                _ => {
                    let name = help.split(':').next().unwrap_or("");
                    assert!(
                        !name.is_empty() && help.len() > name.len() + 10,
                        "{row:?}: {help}"
                    );
                }
            }
        }
    }
}
