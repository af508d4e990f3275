//! The frame-timing overlay: lines of text on a translucent backing at the
//! top left of the composed output, laid out and painted with egui (its
//! monospace font, anti-aliased). In side-by-side and top-bottom layouts it
//! is drawn once per eye region, squeezed as the layout squeezes that eye,
//! so each eye reads it.

use super::stereo::StereoMode;
use crate::gpu::GpuContext;
use egui::epaint::{ClippedPrimitive, Primitive};
use egui::{Color32, FontId, Pos2, Rect, vec2};

/// Regions (per eye) narrower than this use the small font.
const SMALL_REGION: f32 = 900.0;
/// Text size (pixels) in large and small regions.
const FONT_PX: [f32; 2] = [16.0, 11.0];
const PAD: f32 = 6.0;
const TEXT: Color32 = Color32::from_rgb(242, 242, 220);
const BACKING: Color32 = Color32::from_rgba_premultiplied(0, 0, 0, 140);

/// A mesh filling `rect` with `colours` (linear RGB) left to right, each
/// blended into the next.
fn legend_bar(rect: Rect, colours: &[[f32; 4]]) -> egui::Mesh {
    let mut mesh = egui::Mesh::default();
    let n = colours.len().max(2) - 1;
    for (k, c) in colours.iter().enumerate() {
        let x = rect.left() + rect.width() * k as f32 / n as f32;
        let color = Color32::from(egui::Rgba::from_rgb(c[0], c[1], c[2]));
        let i = mesh.vertices.len() as u32;
        mesh.colored_vertex(Pos2::new(x, rect.top()), color);
        mesh.colored_vertex(Pos2::new(x, rect.bottom()), color);
        if k > 0 {
            mesh.add_triangle(i - 2, i - 1, i);
            mesh.add_triangle(i - 1, i + 1, i);
        }
    }
    mesh
}

/// The overlay's egui context and painter, and the shapes last laid out.
pub struct Overlay {
    ctx: egui::Context,
    egui: egui_wgpu::Renderer,
    primitives: Vec<ClippedPrimitive>,
    screen: egui_wgpu::ScreenDescriptor,
    /// A heat map's legend bar drawn under the text (linear colours, left
    /// to right; empty for none).
    pub bar: Vec<[f32; 4]>,
}

impl Overlay {
    /// An overlay drawing into targets of `format`.
    pub fn new(ctx: &GpuContext, format: wgpu::TextureFormat) -> Self {
        let options = egui_wgpu::RendererOptions {
            dithering: false,
            ..Default::default()
        };
        Self {
            ctx: egui::Context::default(),
            egui: egui_wgpu::Renderer::new(&ctx.device, format, options),
            primitives: Vec::new(),
            screen: egui_wgpu::ScreenDescriptor {
                size_in_pixels: [1, 1],
                pixels_per_point: 1.0,
            },
            bar: Vec::new(),
        }
    }

    /// Lays out `lines` for an output of `size` pixels in `mode` and uploads
    /// what painting them needs (egui's font atlas as it grows, the meshes).
    pub fn prepare(
        &mut self,
        gpu: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        lines: &[String],
        (mode, size): (StereoMode, (u32, u32)),
    ) {
        self.primitives.clear();
        let (w, h) = (size.0 as f32, size.1 as f32);
        let input = egui::RawInput {
            screen_rect: Some(Rect::from_min_size(Pos2::ZERO, vec2(w, h))),
            ..Default::default()
        };
        // Each eye's region is squeezed by the layout (`scale`): the text is
        // laid out in the region's unsqueezed pixels (cut at its edge), then
        // its vertices are squeezed into place.
        let regions = mode.regions();
        let region_w = w * regions.first().map_or(1.0, |r| r.1[0]);
        let font = FontId::monospace(FONT_PX[usize::from(region_w < SMALL_REGION)]);
        let bar = &self.bar;
        let output = self.ctx.run_ui(input, |ui| {
            if lines.is_empty() {
                return;
            }
            let painter = ui.painter();
            let galleys: Vec<_> = lines
                .iter()
                .map(|l| painter.layout_no_wrap(l.clone(), font.clone(), TEXT))
                .collect();
            let line_h = galleys.iter().map(|g| g.size().y).fold(0.0, f32::max);
            let width = galleys.iter().map(|g| g.size().x).fold(0.0, f32::max);
            let text_h = line_h * lines.len() as f32;
            let bar_h = if bar.is_empty() { 0.0 } else { line_h + PAD };
            let backing = Rect::from_min_size(
                Pos2::ZERO,
                vec2(width, text_h + bar_h) + vec2(2.0, 2.0) * PAD,
            );
            painter.rect_filled(backing.intersect(ui.max_rect()), 0.0, BACKING);
            for (k, g) in galleys.into_iter().enumerate() {
                painter.galley(Pos2::new(PAD, PAD + k as f32 * line_h), g, TEXT);
            }
            if !bar.is_empty() {
                let rect =
                    Rect::from_min_size(Pos2::new(PAD, 2.0 * PAD + text_h), vec2(width, line_h));
                painter.add(legend_bar(rect, bar));
            }
        });
        let egui::FullOutput {
            mut textures_delta,
            shapes,
            ..
        } = output;
        for (id, deltas) in &textures_delta.set {
            for delta in deltas {
                self.egui
                    .update_texture(&gpu.device, &gpu.queue, *id, delta);
            }
        }
        for id in &textures_delta.free {
            self.egui.free_texture(id);
        }
        // Applied (egui asserts that no delta is dropped unapplied).
        textures_delta.clear();
        let shapes = self.ctx.tessellate(shapes, 1.0);
        for (origin, scale) in regions {
            let map = |p: Pos2| {
                Pos2::new(
                    origin[0] * w + p.x * scale[0],
                    origin[1] * h + p.y * scale[1],
                )
            };
            for shape in &shapes {
                let Primitive::Mesh(mesh) = &shape.primitive else {
                    continue;
                };
                let mut mesh = mesh.clone();
                for v in &mut mesh.vertices {
                    v.pos = map(v.pos);
                }
                // Cut at the region's edge, as the region is cut.
                let region =
                    Rect::from_min_max(map(Pos2::ZERO), map(Pos2::new(w, h)).min(Pos2::new(w, h)));
                let clip = Rect::from_min_max(map(shape.clip_rect.min), map(shape.clip_rect.max));
                self.primitives.push(ClippedPrimitive {
                    clip_rect: clip.intersect(region),
                    primitive: Primitive::Mesh(mesh),
                });
            }
        }
        self.screen = egui_wgpu::ScreenDescriptor {
            size_in_pixels: [size.0.max(1), size.1.max(1)],
            pixels_per_point: 1.0,
        };
        let callbacks = self.egui.update_buffers(
            &gpu.device,
            &gpu.queue,
            encoder,
            &self.primitives,
            &self.screen,
        );
        debug_assert!(callbacks.is_empty(), "the overlay paints no callbacks");
    }

    /// Draws what `prepare` laid out last into `pass` (nothing when there
    /// is no text).
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'static>) {
        if !self.primitives.is_empty() {
            self.egui.render(pass, &self.primitives, &self.screen);
        }
    }
}
