//! The tool palette's icons: a small drawing of what each tool makes or does,
//! painted with egui's shapes (no image assets), in the row's text colour.

use crate::tools::ToolKind;
use egui::{Color32, Painter, Pos2, Rect, Shape, Stroke, pos2, vec2};

/// Paints `tool`'s icon filling the square `rect` in `color`.
pub(super) fn paint_tool_icon(painter: &Painter, tool: ToolKind, rect: Rect, color: Color32) {
    let s = rect.width().min(rect.height());
    let c = rect.center();
    // Points in the icon's unit square, −1..1 across, y down.
    let p = |x: f32, y: f32| pos2(c.x + 0.5 * s * x, c.y + 0.5 * s * y);
    let line = Stroke::new((0.09 * s).max(1.0), color);
    let thin = Stroke::new((0.06 * s).max(1.0), color);
    match tool {
        // A pointer arrow.
        ToolKind::Select => {
            let points = vec![
                p(-0.55, -0.85),
                p(0.55, 0.2),
                p(0.0, 0.25),
                p(0.35, 0.85),
                p(0.15, 0.95),
                p(-0.2, 0.35),
                p(-0.55, 0.65),
            ];
            painter.add(Shape::convex_polygon(points, color, Stroke::NONE));
        }
        // A shaded ball: the sphere muscle.
        ToolKind::Sphere => {
            painter.circle_filled(c, 0.42 * s, color.gamma_multiply(0.35));
            painter.circle_stroke(c, 0.42 * s, line);
            painter.circle_filled(p(-0.3, -0.3), 0.12 * s, color);
        }
        // A squircle: the superellipse muscle.
        ToolKind::Superellipse => {
            let r = Rect::from_center_size(c, vec2(0.8 * s, 0.8 * s));
            painter.rect_filled(r, 0.12 * s, color.gamma_multiply(0.35));
            painter.rect_stroke(r, 0.12 * s, line, egui::StrokeKind::Middle);
        }
        // A tapered bar bent sideways: taper, bend, twist.
        ToolKind::Deform => {
            let spine = |t: f32| (0.5 * (t * 1.6).sin(), -0.85 + 1.7 * t);
            let (mut left, mut right) = (Vec::new(), Vec::new());
            for k in 0..=8 {
                let t = k as f32 / 8.0;
                let (x, y) = spine(t);
                let half = 0.35 - 0.25 * t;
                left.push(p(x - half, y));
                right.push(p(x + half, y));
            }
            painter.add(Shape::line(left, line));
            painter.add(Shape::line(right, line));
        }
        // A chain of bones with its joints: inverse kinematics.
        ToolKind::Ik => {
            let joints = [p(-0.7, 0.7), p(-0.1, 0.05), p(0.65, -0.2), p(0.75, -0.8)];
            painter.add(Shape::line(joints.to_vec(), line));
            for j in joints {
                painter.circle_filled(j, 0.13 * s, color);
            }
        }
        // A skin (an outline) wrapped around a muscle (a dot).
        ToolKind::Skin => {
            painter.circle_filled(c, 0.2 * s, color.gamma_multiply(0.5));
            let ring: Vec<Pos2> = (0..=24)
                .map(|k| {
                    let a = k as f32 / 24.0 * std::f32::consts::TAU;
                    let r = 0.8 + 0.08 * (3.0 * a).sin();
                    p(r * a.cos(), r * a.sin())
                })
                .collect();
            painter.add(Shape::line(ring, line));
        }
        // A syringe: liposuction.
        ToolKind::Liposuction => {
            let body = Rect::from_min_max(p(-0.35, -0.85), p(0.35, 0.35));
            painter.rect_stroke(body, 0.05 * s, line, egui::StrokeKind::Middle);
            painter.rect_filled(
                Rect::from_min_max(p(-0.35, -0.2), p(0.35, 0.35)),
                0.0,
                color.gamma_multiply(0.5),
            );
            painter.line_segment([p(0.0, 0.35), p(0.0, 0.95)], thin);
            painter.line_segment([p(-0.55, -0.85), p(0.55, -0.85)], line);
        }
        // Bars rising in weight: region weights.
        ToolKind::Weights => {
            for (k, h) in [0.5, 1.0, 1.5].into_iter().enumerate() {
                let x = -0.6 + 0.55 * k as f32;
                let bar = Rect::from_min_max(p(x - 0.18, 0.8 - h), p(x + 0.18, 0.8));
                painter.rect_filled(bar, 0.0, color.gamma_multiply(0.4 + 0.3 * k as f32));
            }
        }
        // A brush: paint.
        ToolKind::Paint => {
            painter.line_segment([p(0.8, -0.8), p(-0.1, 0.1)], line);
            painter.circle_filled(p(-0.35, 0.35), 0.3 * s, color);
            painter.circle_filled(p(-0.7, 0.75), 0.12 * s, color.gamma_multiply(0.6));
        }
        // A surface raised in a bump by an arrow: sculpt.
        ToolKind::Sculpt => {
            let mut hill: Vec<Pos2> = (0..=16)
                .map(|k| {
                    let x = -0.95 + 1.9 * k as f32 / 16.0;
                    p(x, 0.8 - 1.1 * (-3.0 * x * x).exp())
                })
                .collect();
            hill.push(p(0.95, 0.8));
            painter.add(Shape::line(hill, line));
            let head = vec![p(0.0, -0.95), p(0.3, -0.55), p(-0.3, -0.55)];
            painter.add(Shape::convex_polygon(head, color, Stroke::NONE));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tool has an icon, drawn inside its square (strokes' half
    /// widths aside), and no two tools share a drawing.
    #[test]
    fn every_tool_has_its_own_icon_inside_its_square() {
        let ctx = egui::Context::default();
        let square = Rect::from_center_size(pos2(50.0, 50.0), vec2(40.0, 40.0));
        let mut drawings: Vec<Vec<String>> = Vec::new();
        for tool in ToolKind::ALL {
            let mut output = ctx.run_ui(egui::RawInput::default(), |ui| {
                let painter = ui.ctx().layer_painter(egui::LayerId::background());
                paint_tool_icon(&painter, tool, square, Color32::WHITE);
            });
            // The font atlas is not drawn here.
            output.textures_delta.clear();
            let shapes: Vec<_> = output.shapes.iter().map(|c| &c.shape).collect();
            assert!(!shapes.is_empty(), "{tool:?} draws nothing");
            for shape in &shapes {
                let bounds = shape.visual_bounding_rect();
                assert!(
                    square.expand(0.1 * square.width()).contains_rect(bounds),
                    "{tool:?}: {bounds:?} outside {square:?}"
                );
            }
            let drawing: Vec<String> = shapes.iter().map(|s| format!("{s:?}")).collect();
            assert!(!drawings.contains(&drawing), "{tool:?} repeats an icon");
            drawings.push(drawing);
        }
    }
}
