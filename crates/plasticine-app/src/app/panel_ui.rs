//! The panel's picture: its rows painted with egui (anti-aliased text in
//! proportional fonts, rounded backings, the halves of a row a press acts
//! on), tessellated here on the main thread and handed to the renderer as a
//! [`UiQuad`], which paints it into a texture standing in the world.
//!
//! The geometry is the panel's own, not egui's: rows [`ROW_HEIGHT`] tall
//! below a [`PAD`], columns [`controls_width`] wide, [`COLUMN_GAP`] apart.
//! A press is told from where the pointer meets that geometry (row, half,
//! fraction along), the same with or without a picture, so tests and
//! scripted sessions press rows without painting; egui only draws what the
//! geometry says, with the hovered half and the current tool lit.

use super::plots::{Plot, WINDOW};

mod icons;
use crate::render::{UiFrame, UiQuad, UiTexture};
use crate::tools::{
    PAD, PALETTE_COLUMNS, Param, ROW_HEIGHT, Row, SLIDER_TRACK, Side, TimelineRow,
    parse_blend_curve, row_cells, slider_knob, tool_short_label,
};
use egui::{Align2, Color32, FontId, Pos2, Rect, Stroke, vec2};
use glam::{Mat4, Vec2};
use std::collections::HashMap;
use std::sync::Arc;

/// The widest control, in characters of the panel's former 8×8 font: the
/// width the panel is placed by.
pub const CONTROLS_WIDTH_CHARS: usize = 30;

/// Space between the headset panel's columns (m).
pub const COLUMN_GAP: f32 = 0.01;

/// egui points per metre of panel: a row is 20 points tall.
pub const POINTS_PER_METRE: f32 = 20.0 / ROW_HEIGHT;

/// One column's width (m, unscaled).
pub fn controls_width() -> f32 {
    CONTROLS_WIDTH_CHARS as f32 * 0.8 * ROW_HEIGHT + 2.0 * PAD
}

/// Where along the scrubber's drawn track (0 its start, 1 its end) a
/// press `fraction` of the way along its row is: the track is inset from
/// the row by the panel's padding and half a row.
pub fn track_fraction(fraction: f32) -> f32 {
    let m = track_inset();
    ((fraction - m) / (1.0 - 2.0 * m)).clamp(0.0, 1.0)
}

/// The fraction along the scrubber's row of a point `track` of the way
/// along its drawn track (the inverse of [`track_fraction`]).
#[cfg(test)]
pub fn row_fraction(track: f32) -> f32 {
    let m = track_inset();
    m + track * (1.0 - 2.0 * m)
}

/// The track's inset at each end, as a fraction of the row's width.
fn track_inset() -> f32 {
    (PAD + 0.5 * ROW_HEIGHT) / controls_width()
}

/// Where column `c` starts (m from the panel's left edge).
pub fn column_left(c: usize) -> f32 {
    c as f32 * (controls_width() + COLUMN_GAP)
}

/// The panel's size (m): `columns` side by side, `rows` tall, and `status`
/// lines hanging under them.
pub fn panel_size(columns: usize, rows: usize, status: usize) -> Vec2 {
    let columns = columns.max(1);
    Vec2::new(
        columns as f32 * controls_width() + (columns - 1) as f32 * COLUMN_GAP,
        (rows + status) as f32 * ROW_HEIGHT + 2.0 * PAD,
    )
}

/// A press on `row`'s half `side`: rows that toggle or choose do the same on
/// both halves, and show no marks.
fn half_marks(row: Row) -> Option<(&'static str, &'static str)> {
    match row {
        Row::Param(
            Param::Scope
            | Param::Snapping
            | Param::Precision
            | Param::Lock
            | Param::Symmetry
            | Param::MorphDelete,
        )
        | Row::Timeline(
            TimelineRow::Loop
            | TimelineRow::AutoResolution
            | TimelineRow::Perform
            | TimelineRow::Scrubber
            | TimelineRow::BlendCurve,
        )
        | Row::Heading(_)
        | Row::View(_)
        | Row::Palette(_) => None,
        Row::Param(Param::Integrator | Param::PaintColor | Param::Flesh | Param::MorphTarget)
        | Row::Timeline(TimelineRow::Mode | TimelineRow::SelectKey) => Some(("<", ">")),
        Row::Timeline(TimelineRow::Transport) => Some(("stop", "play")),
        Row::Timeline(TimelineRow::Key) => Some(("delete", "store")),
        Row::Timeline(TimelineRow::PerformRate) => Some(("more", "fewer")),
        Row::Param(_) | Row::Timeline(_) => Some(("\u{2212}", "+")),
    }
}

/// The scrubber's text (a track of cells: `k` a key, `K` the selected one,
/// `|` the playhead) as fractions along the row: the playhead and the keys
/// with whether each is selected.
fn track(line: &str) -> (Option<f32>, Vec<(f32, bool)>) {
    let cells: Vec<char> = line.chars().collect();
    let last = cells.len().saturating_sub(1).max(1) as f32;
    let at = |i: usize| i as f32 / last;
    let head = cells.iter().position(|&c| c == '|').map(at);
    let keys = cells
        .iter()
        .enumerate()
        .filter(|(_, c)| matches!(c, 'k' | 'K'))
        .map(|(i, &c)| (at(i), c == 'K'))
        .collect();
    (head, keys)
}

/// What the panel shows this frame.
#[derive(Clone, Copy)]
pub struct PanelPicture<'a> {
    /// Its columns as (first row, rows).
    pub columns: &'a [(usize, usize)],
    /// What each row is.
    pub rows: &'a [Row],
    /// Each row's text with its current value.
    pub lines: &'a [String],
    /// Lines hanging under the first column (status, messages, timings).
    pub status: &'a [String],
    /// The current tool's palette row.
    pub highlight: Option<usize>,
    /// The row and half the pointer is on.
    pub hover: Option<(usize, Side)>,
    /// On a palette row, the cell the pointer is on
    /// ([`crate::tools::palette_cell`]).
    pub hover_cell: Option<usize>,
    /// Whether a press on the panel is held.
    pub pressed: bool,
    /// Live plots, under a heading: below the last column's rows, or in a
    /// column of their own left of the others (`plots_apart`).
    pub plots: &'a [Plot],
    /// Whether the plots get a column of their own.
    pub plots_apart: bool,
}

/// Rows a plot takes.
const PLOT_ROWS: usize = 2;

/// Where each column's rows, status lines and plots go.
struct Layout {
    /// Per column: (first row, rows, the row the status lines start at,
    /// the row the plots start at).
    columns: Vec<(usize, usize, Option<usize>, Option<usize>)>,
    /// Per column, the rows it fills.
    heights: Vec<usize>,
    /// The tallest column's.
    rows: usize,
}

impl Layout {
    fn of(picture: &PanelPicture) -> Self {
        let plot_rows = if picture.plots.is_empty() {
            0
        } else {
            1 + PLOT_ROWS * picture.plots.len()
        };
        let apart = plot_rows > 0 && (picture.plots_apart || picture.columns.is_empty());
        let n = picture.columns.len();
        // The status lines hang under the first column of controls; the
        // plots under the last, or in a column of their own first.
        let mut columns = Vec::with_capacity(n + 1);
        if apart {
            columns.push((0, 0, None, Some(0)));
        }
        columns.extend(
            picture
                .columns
                .iter()
                .enumerate()
                .map(|(c, &(start, rows))| {
                    let status = (c == 0).then_some(rows);
                    let below = rows + if c == 0 { picture.status.len() } else { 0 };
                    let plots = (plot_rows > 0 && !apart && c + 1 == n).then_some(below);
                    (start, rows, status, plots)
                }),
        );
        let heights: Vec<usize> = columns
            .iter()
            .map(|&(_, rows, status, plots)| {
                let status = if status.is_some() {
                    picture.status.len()
                } else {
                    0
                };
                plots.map_or(rows + status, |p| p + plot_rows)
            })
            .collect();
        let rows = heights.iter().copied().max().unwrap_or(0);
        Self {
            columns,
            heights,
            rows,
        }
    }
}

/// Colours (sRGB, as egui takes them).
// Nearly opaque: alpha blends in linear light, where 4 % of a white skin
// behind would already read as a grey 20 % in sRGB.
const BACKING: Color32 = Color32::from_rgba_premultiplied(14, 16, 22, 250);
const TEXT: Color32 = Color32::from_rgb(232, 232, 220);
const DIM: Color32 = Color32::from_rgb(150, 156, 170);
const ACCENT: Color32 = Color32::from_rgb(255, 200, 70);
const HOVER: Color32 = Color32::from_rgb(40, 70, 130);
const PRESSED: Color32 = Color32::from_rgb(70, 110, 190);
const SELECTED: Color32 = Color32::from_rgb(90, 70, 20);

/// Paints panel pictures with egui and keeps egui's textures whole between
/// frames (see [`UiTexture`]).
#[derive(Clone, Default)]
pub struct PanelPainter {
    ctx: egui::Context,
    textures: HashMap<egui::TextureId, UiTexture>,
    version: u64,
}

impl std::fmt::Debug for PanelPainter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PanelPainter")
            .field("textures", &self.textures.len())
            .finish()
    }
}

impl PanelPainter {
    /// The picture as a quad at `to_world` (panel space → world), painted at
    /// `pixels_per_metre` (of panel space).
    pub fn paint(
        &mut self,
        picture: &PanelPicture,
        to_world: Mat4,
        pixels_per_metre: f32,
    ) -> UiQuad {
        let layout = Layout::of(picture);
        let size = panel_size(layout.columns.len(), layout.rows, 0);
        let size_pt = vec2(size.x, size.y) * POINTS_PER_METRE;
        let ppp = pixels_per_metre / POINTS_PER_METRE;
        let mut input = egui::RawInput {
            screen_rect: Some(Rect::from_min_size(Pos2::ZERO, size_pt)),
            ..Default::default()
        };
        input
            .viewports
            .entry(egui::ViewportId::ROOT)
            .or_default()
            .native_pixels_per_point = Some(ppp);
        let output = self
            .ctx
            .run_ui(input, |ui| paint_rows(ui, picture, &layout));
        self.apply(output.textures_delta);
        let primitives = self.ctx.tessellate(output.shapes, output.pixels_per_point);
        let mut textures: Vec<UiTexture> = self.textures.values().cloned().collect();
        textures.sort_by_key(|t| t.version);
        UiQuad {
            to_world,
            size,
            frame: Arc::new(UiFrame {
                size_px: [
                    (size_pt.x * output.pixels_per_point).ceil() as u32,
                    (size_pt.y * output.pixels_per_point).ceil() as u32,
                ],
                pixels_per_point: output.pixels_per_point,
                primitives,
                textures,
            }),
        }
    }

    /// Applies egui's texture changes to the whole images kept here.
    fn apply(&mut self, mut delta: egui::TexturesDelta) {
        for (id, changes) in std::mem::take(&mut delta.set) {
            for change in changes {
                let egui::ImageData::Color(patch) = change.image;
                self.version += 1;
                match change.pos {
                    None => {
                        self.textures.insert(
                            id,
                            UiTexture {
                                id,
                                image: patch,
                                options: change.options,
                                version: self.version,
                            },
                        );
                    }
                    Some([x0, y0]) => {
                        let Some(t) = self.textures.get_mut(&id) else {
                            continue;
                        };
                        let image = Arc::make_mut(&mut t.image);
                        let ([w, _], pw) = (image.size, patch.size[0]);
                        if x0 + pw <= w {
                            for (y, row) in patch.pixels.chunks_exact(pw.max(1)).enumerate() {
                                let at = (y0 + y) * w + x0;
                                if let Some(dst) = image.pixels.get_mut(at..at + pw) {
                                    dst.copy_from_slice(row);
                                }
                            }
                        }
                        t.version = self.version;
                    }
                }
            }
        }
        for id in std::mem::take(&mut delta.free) {
            self.textures.remove(&id);
        }
    }
}

/// Paints every column, the status lines and the plots.
fn paint_rows(ui: &mut egui::Ui, picture: &PanelPicture, layout: &Layout) {
    let painter = ui.painter();
    let m = POINTS_PER_METRE;
    let (row_h, pad, width) = (ROW_HEIGHT * m, PAD * m, controls_width() * m);
    let body = FontId::proportional(0.62 * row_h);
    let small = FontId::proportional(0.55 * row_h);
    let row_rect = |left: f32, k: usize, rows: usize| {
        Rect::from_min_size(
            Pos2::new(left + pad, pad + k as f32 * row_h),
            vec2(width - 2.0 * pad, rows as f32 * row_h),
        )
    };
    for (c, &(start, rows, status, plots)) in layout.columns.iter().enumerate() {
        let left = column_left(c) * m;
        painter.rect_filled(
            Rect::from_min_size(
                Pos2::new(left, 0.0),
                vec2(width, layout.heights[c] as f32 * row_h + 2.0 * pad),
            ),
            0.4 * row_h,
            BACKING,
        );
        for k in 0..rows {
            let index = start + k;
            let (Some(&row), Some(line)) = (picture.rows.get(index), picture.lines.get(index))
            else {
                continue;
            };
            let rect = row_rect(left, k, 1).shrink2(vec2(0.0, 0.06 * row_h));
            let hover = picture.hover.filter(|h| h.0 == index).map(|h| h.1);
            paint_row(painter, row, line, rect, hover, picture, (&body, &small));
        }
        if let Some(first) = status {
            for (k, line) in picture.status.iter().enumerate() {
                painter.text(
                    row_rect(left, first + k, 1).left_center() + vec2(0.3 * row_h, 0.0),
                    Align2::LEFT_CENTER,
                    line,
                    small.clone(),
                    DIM,
                );
            }
        }
        if let Some(first) = plots {
            let heading = row_rect(left, first, 1).shrink2(vec2(0.0, 0.06 * row_h));
            paint_row(
                painter,
                Row::Heading("LIVE (last 10 s)"),
                "",
                heading,
                None,
                picture,
                (&body, &small),
            );
            let newest = picture
                .plots
                .iter()
                .filter_map(|p| p.samples.back().map(|s| s.0))
                .fold(f64::NEG_INFINITY, f64::max);
            for (k, plot) in picture.plots.iter().enumerate() {
                let rect = row_rect(left, first + 1 + PLOT_ROWS * k, PLOT_ROWS);
                paint_plot(painter, plot, rect, newest, (&body, &small));
            }
        }
    }
}

/// One plot in `rect`: its name and newest value on the left, the samples
/// of the last [`WINDOW`] seconds to `newest` on the right, scaled to their
/// own range (logarithmic for a log plot).
fn paint_plot(
    painter: &egui::Painter,
    plot: &Plot,
    rect: Rect,
    newest: f64,
    (body, small): (&FontId, &FontId),
) {
    let h = rect.height() / PLOT_ROWS as f32;
    let split = rect.left() + 0.36 * rect.width();
    painter.text(
        Pos2::new(rect.left() + 0.3 * h, rect.top() + 0.5 * h),
        Align2::LEFT_CENTER,
        plot.name,
        small.clone(),
        DIM,
    );
    let value = plot.last().map_or("-".to_string(), |v| {
        if v.abs() >= 100.0 || v == 0.0 {
            format!("{v:.0} {}", plot.unit)
        } else if v.abs() >= 0.01 {
            format!("{v:.3} {}", plot.unit)
        } else {
            format!("{v:.2e} {}", plot.unit)
        }
    });
    painter.text(
        Pos2::new(rect.left() + 0.3 * h, rect.top() + 1.4 * h),
        Align2::LEFT_CENTER,
        value,
        body.clone(),
        TEXT,
    );
    let area = Rect::from_min_max(Pos2::new(split, rect.top()), rect.max).shrink(0.15 * h);
    painter.rect_filled(area, 0.2 * h, Color32::from_rgb(28, 32, 42));
    let scale = |v: f64| if plot.log { v.log10() } else { v };
    let (lo, hi) = plot
        .samples
        .iter()
        .map(|s| scale(s.1))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !(lo.is_finite() && hi.is_finite()) {
        return;
    }
    let (lo, hi) = if hi - lo < 1e-12 * hi.abs().max(1.0) {
        (lo - 0.5, hi + 0.5)
    } else {
        let margin = 0.1 * (hi - lo);
        (lo - margin, hi + margin)
    };
    let points: Vec<Pos2> = plot
        .samples
        .iter()
        .map(|&(t, v)| {
            let x = (1.0 - (newest - t) / WINDOW).clamp(0.0, 1.0) as f32;
            let y = ((scale(v) - lo) / (hi - lo)) as f32;
            Pos2::new(
                area.left() + x * area.width(),
                area.bottom() - y * area.height(),
            )
        })
        .collect();
    painter.add(egui::Shape::line(
        points,
        Stroke::new(0.1 * h, Color32::from_rgb(120, 200, 255)),
    ));
}

/// Paints one row in `rect`, lit on its hovered half.
#[allow(
    clippy::too_many_arguments,
    reason = "one row's place, text, state and fonts, as the column loop has them"
)]
fn paint_row(
    painter: &egui::Painter,
    row: Row,
    line: &str,
    rect: Rect,
    hover: Option<Side>,
    picture: &PanelPicture,
    (body, small): (&FontId, &FontId),
) {
    let h = rect.height();
    let lit = if picture.pressed { PRESSED } else { HOVER };
    let round = 0.3 * h;
    match row {
        Row::Heading(text) => {
            painter.text(
                rect.left_center() + vec2(0.2 * h, 0.0),
                Align2::LEFT_CENTER,
                text,
                small.clone(),
                ACCENT,
            );
            painter.line_segment(
                [rect.left_bottom(), rect.right_bottom()],
                Stroke::new(1.0, ACCENT.gamma_multiply(0.4)),
            );
        }
        Row::Palette(p) => {
            // The cells cut the column's whole width, as a press does
            // (`palette_cell`); the outer two stop at the row's backing.
            let pad = PAD * POINTS_PER_METRE;
            let (x0, w) = (rect.left() - pad, rect.width() + 2.0 * pad);
            let x = |c: usize| x0 + w * c as f32 / PALETTE_COLUMNS as f32;
            let tools = Row::palette_tools(p);
            let marked = line.split_whitespace().find_map(|w| w.strip_prefix('>'));
            let current = tools
                .iter()
                .position(|&k| Some(tool_short_label(k)) == marked);
            let hovered = hover.and(picture.hover_cell);
            for (c, &tool) in tools.iter().enumerate() {
                let cell = Rect::from_min_max(
                    Pos2::new(x(c).max(rect.left()), rect.top()),
                    Pos2::new(x(c + 1).min(rect.right()), rect.bottom()),
                )
                .shrink2(vec2(0.05 * h, 0.0));
                let is_current = current == Some(c);
                if hovered == Some(c) {
                    painter.rect_filled(cell, round, lit);
                } else if is_current {
                    painter.rect_filled(cell, round, SELECTED);
                }
                let color = if is_current { ACCENT } else { TEXT };
                let icon = Rect::from_center_size(
                    cell.left_center() + vec2(0.65 * h, 0.0),
                    vec2(0.72 * h, 0.72 * h),
                );
                icons::paint_tool_icon(painter, tool, icon, color);
                painter.text(
                    cell.left_center() + vec2(1.25 * h, 0.0),
                    Align2::LEFT_CENTER,
                    tool_short_label(tool),
                    small.clone(),
                    color,
                );
            }
        }
        Row::Timeline(TimelineRow::Scrubber) => {
            if hover.is_some() {
                painter.rect_filled(rect, round, lit.gamma_multiply(0.6));
            }
            let track_rect = rect.shrink2(vec2(0.5 * h, 0.0));
            let x = |f: f32| track_rect.left() + f * track_rect.width();
            let y = rect.center().y;
            painter.line_segment(
                [Pos2::new(x(0.0), y), Pos2::new(x(1.0), y)],
                Stroke::new(0.12 * h, DIM),
            );
            let (head, keys) = track(line);
            for (f, selected) in keys {
                let r = if selected { 0.3 * h } else { 0.2 * h };
                let color = if selected { ACCENT } else { TEXT };
                painter.circle_filled(Pos2::new(x(f), y), r, color);
            }
            if let Some(f) = head {
                painter.line_segment(
                    [
                        Pos2::new(x(f), rect.top() + 0.1 * h),
                        Pos2::new(x(f), rect.bottom() - 0.1 * h),
                    ],
                    Stroke::new(0.14 * h, Color32::from_rgb(120, 200, 255)),
                );
            }
        }
        Row::Timeline(TimelineRow::BlendCurve) if parse_blend_curve(line).is_some() => {
            if hover.is_some() {
                painter.rect_filled(rect, round, lit.gamma_multiply(0.6));
            }
            paint_blend_curve(painter, rect, line, small);
        }
        Row::Param(_) | Row::Timeline(_) | Row::View(_) => {
            let (label, value) = row_cells(line);
            let slider = slider_knob(row, line);
            let marks = half_marks(row);
            match (hover, marks) {
                (Some(side), Some(_)) => {
                    let half = match side {
                        Side::Left => Rect::from_min_max(rect.min, rect.center_bottom()),
                        Side::Right => Rect::from_min_max(rect.center_top(), rect.max),
                    };
                    painter.rect_filled(half, round, lit);
                }
                (Some(_), None) => {
                    painter.rect_filled(rect, round, lit);
                }
                _ => {}
            }
            let mut text_left = rect.left() + 0.6 * h;
            let mut text_right = rect.right() - 0.6 * h;
            if let Some((down, up)) = marks {
                let l = painter.text(
                    rect.left_center() + vec2(0.35 * h, 0.0),
                    Align2::LEFT_CENTER,
                    down,
                    body.clone(),
                    ACCENT,
                );
                let r = painter.text(
                    rect.right_center() - vec2(0.35 * h, 0.0),
                    Align2::RIGHT_CENTER,
                    up,
                    body.clone(),
                    ACCENT,
                );
                text_left = l.right() + 0.4 * h;
                text_right = r.left() - 0.4 * h;
            }
            painter.text(
                Pos2::new(text_left, rect.center().y),
                Align2::LEFT_CENTER,
                label,
                body.clone(),
                DIM,
            );
            painter.text(
                Pos2::new(text_right, rect.center().y),
                Align2::RIGHT_CENTER,
                value,
                body.clone(),
                TEXT,
            );
            if let Some(w) = slider {
                paint_slider(painter, rect, w);
            }
        }
    }
}

/// The blend curve row's weights (its text, [`parse_blend_curve`]) as a line
/// over the scrubber's track, with the target's name.
fn paint_blend_curve(painter: &egui::Painter, rect: Rect, line: &str, small: &FontId) {
    let h = rect.height();
    let Some((weights, name)) = parse_blend_curve(line) else {
        return;
    };
    // The scrubber's track above, so a key's dot sits over its weight.
    let track_rect = rect.shrink2(vec2(0.5 * h, 0.12 * h));
    let x = |f: f32| track_rect.left() + f * track_rect.width();
    let y = |w: f32| track_rect.bottom() - w * track_rect.height();
    painter.line_segment(
        [Pos2::new(x(0.0), y(0.0)), Pos2::new(x(1.0), y(0.0))],
        Stroke::new(0.06 * h, DIM),
    );
    let last = weights.len().saturating_sub(1).max(1) as f32;
    let points: Vec<Pos2> = weights
        .iter()
        .enumerate()
        .map(|(i, &w)| Pos2::new(x(i as f32 / last), y(w)))
        .collect();
    painter.add(egui::Shape::line(points, Stroke::new(0.12 * h, ACCENT)));
    painter.text(
        track_rect.right_top(),
        Align2::RIGHT_TOP,
        name,
        small.clone(),
        DIM,
    );
}

/// A slider's track and knob along the row's foot, the knob `w` (0..1) of
/// the way between [`SLIDER_TRACK`]'s ends.
fn paint_slider(painter: &egui::Painter, rect: Rect, w: f32) {
    let h = rect.height();
    let (a, b) = SLIDER_TRACK;
    let x = |f: f32| rect.left() + f * rect.width();
    let y = rect.bottom() - 0.07 * h;
    painter.line_segment(
        [Pos2::new(x(a), y), Pos2::new(x(b), y)],
        Stroke::new(0.06 * h, DIM),
    );
    let knob = Pos2::new(x(a + w * (b - a)), y);
    painter.line_segment([Pos2::new(x(a), y), knob], Stroke::new(0.1 * h, ACCENT));
    painter.circle_filled(knob, 0.14 * h, ACCENT);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rows_text_splits_into_its_label_and_value() {
        assert_eq!(
            row_cells("  skin stretch 7.500e-1"),
            ("skin stretch".to_string(), "7.500e-1".to_string())
        );
        assert_eq!(
            row_cells("  gravity      9.81 m/s2"),
            ("gravity".into(), "9.81 m/s2".into())
        );
        assert_eq!(row_cells("  x"), ("x".into(), String::new()));
    }

    #[test]
    fn the_scrubbers_track_gives_the_playhead_and_the_keys() {
        let (head, keys) = track("k----K----|");
        assert_eq!(head, Some(1.0));
        assert_eq!(keys, vec![(0.0, false), (0.5, true)]);
    }

    #[test]
    fn the_picture_holds_the_text_and_its_font_atlas_whole() {
        let rows = [Row::Heading("TOOLS"), Row::Param(Param::Gravity)];
        let lines = ["TOOLS".to_string(), "  gravity      9.81 m/s2".to_string()];
        let status = ["a status line".to_string()];
        let mut painter = PanelPainter::default();
        let picture = PanelPicture {
            columns: &[(0, 2)],
            rows: &rows,
            lines: &lines,
            status: &status,
            highlight: None,
            hover: Some((1, Side::Right)),
            hover_cell: None,
            pressed: false,
            plots: &[],
            plots_apart: false,
        };
        let q = painter.paint(&picture, Mat4::IDENTITY, 2000.0);
        // Two rows and one status line, at the panel's physical size.
        let expected = panel_size(1, 2, 1);
        assert!((q.size - expected).length() < 1e-6);
        let px = q.frame.size_px;
        assert!((px[0] as f32 - expected.x * 2000.0).abs() <= 1.0, "{px:?}");
        // Text was shaped: meshes drawn, and the font atlas is whole (no
        // patch waits on a texture not yet sent).
        let vertices: usize = q
            .frame
            .primitives
            .iter()
            .map(|p| match &p.primitive {
                egui::epaint::Primitive::Mesh(m) => m.vertices.len(),
                egui::epaint::Primitive::Callback(_) => 0,
            })
            .sum();
        assert!(vertices > 100, "{vertices} vertices");
        assert!(
            q.frame
                .textures
                .iter()
                .any(|t| t.id == egui::TextureId::default() && t.image.size[0] > 0)
        );
        // A second frame with new glyphs patches the atlas and bumps its version.
        let before = q.frame.textures[0].version;
        let lines2 = ["TOOLS".to_string(), "  gravity      QWXZ jq".to_string()];
        let q2 = painter.paint(
            &PanelPicture {
                lines: &lines2,
                ..picture
            },
            Mat4::IDENTITY,
            2000.0,
        );
        assert!(q2.frame.textures.iter().all(|t| t.version >= before));
    }

    #[test]
    fn the_plots_go_under_the_last_column_or_in_a_column_of_their_own_first() {
        let plots = super::super::plots::LivePlots::default();
        let rows = [Row::Heading("A"); 6];
        let lines = vec![String::new(); 6];
        let status = ["s".to_string()];
        let picture = PanelPicture {
            columns: &[(0, 4), (4, 2)],
            rows: &rows,
            lines: &lines,
            status: &status,
            highlight: None,
            hover: None,
            hover_cell: None,
            pressed: false,
            plots: plots.plots(),
            plots_apart: false,
        };
        // The headset: under the timeline column (2 rows), a heading and
        // two rows per plot; the status under the first column.
        let l = Layout::of(&picture);
        let n = plots.plots().len();
        assert_eq!(
            l.columns,
            vec![(0, 4, Some(4), None), (4, 2, None, Some(2))]
        );
        assert_eq!(l.heights, vec![5, 2 + 1 + PLOT_ROWS * n]);
        assert_eq!(l.rows, 2 + 1 + PLOT_ROWS * n);
        // The desk: a column of plots left of the controls.
        let l = Layout::of(&PanelPicture {
            columns: &[(0, 6)],
            plots_apart: true,
            ..picture
        });
        assert_eq!(
            l.columns,
            vec![(0, 0, None, Some(0)), (0, 6, Some(6), None)]
        );
        assert_eq!(l.heights, vec![1 + PLOT_ROWS * n, 7]);
        // Without plots, no room is kept for them.
        let l = Layout::of(&PanelPicture {
            plots: &[],
            ..picture
        });
        assert_eq!(l.heights, vec![5, 2]);
    }
}
