//! The frame-timing overlay: text in an 8×8 bitmap font over a translucent
//! panel, drawn on the composed output. In side-by-side and top-bottom
//! layouts it is drawn once per eye so each eye reads it.

use super::context::GpuContext;
use super::stereo::StereoMode;
use bytemuck::{Pod, Zeroable};

const GLYPH: u32 = 8;
/// Screen pixels per font pixel on large outputs (1 on small ones).
const SCALE: f32 = 2.0;
/// Outputs (per eye region) narrower than this use the 1× font.
const SMALL_REGION: f32 = 900.0;
const PAD: f32 = 6.0;
const TEXT_COLOR: [f32; 4] = [0.95, 0.95, 0.85, 1.0];
const PANEL_COLOR: [f32; 4] = [0.0, 0.0, 0.0, 0.55];

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct QuadVertex {
    pixel: [f32; 2],
    texel: [f32; 2],
    color: [f32; 4],
}

/// The text overlay: its pipeline, font atlas and quad vertex buffer, laid out by `prepare`
/// and drawn over the composed output.
pub struct Overlay {
    pipeline: wgpu::RenderPipeline,
    bind_group: wgpu::BindGroup,
    screen: wgpu::Buffer,
    vertices: Option<wgpu::Buffer>,
    count: u32,
    scratch: Vec<QuadVertex>,
}

/// The atlas: 128 ASCII glyphs side by side, one byte of coverage per texel.
fn atlas_texels() -> Vec<u8> {
    let width = 128 * GLYPH as usize;
    let mut texels = vec![0u8; width * GLYPH as usize];
    for (c, rows) in font8x8::legacy::BASIC_LEGACY.iter().enumerate() {
        for (y, row) in rows.iter().enumerate() {
            for x in 0..8 {
                if row & (1 << x) != 0 {
                    texels[y * width + c * 8 + x] = 255;
                }
            }
        }
    }
    texels
}

impl Overlay {
    /// An overlay drawing into targets of `format`, with the font atlas uploaded.
    pub fn new(ctx: &GpuContext, format: wgpu::TextureFormat) -> Self {
        let device = &ctx.device;
        let size = wgpu::Extent3d {
            width: 128 * GLYPH,
            height: GLYPH,
            depth_or_array_layers: 1,
        };
        let atlas = device.create_texture(&wgpu::TextureDescriptor {
            label: Some("font atlas"),
            size,
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: wgpu::TextureFormat::R8Unorm,
            usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
            view_formats: &[],
        });
        ctx.queue.write_texture(
            wgpu::TexelCopyTextureInfo {
                texture: &atlas,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            &atlas_texels(),
            wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(128 * GLYPH),
                rows_per_image: Some(GLYPH),
            },
            size,
        );
        let screen = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("overlay screen"),
            size: 16,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("overlay"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Float { filterable: false },
                        view_dimension: wgpu::TextureViewDimension::D2,
                        multisampled: false,
                    },
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 1,
                    visibility: wgpu::ShaderStages::VERTEX,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: wgpu::BufferSize::new(16),
                    },
                    count: None,
                },
            ],
        });
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("overlay"),
            layout: &layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::TextureView(
                        &atlas.create_view(&Default::default()),
                    ),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: screen.as_entire_binding(),
                },
            ],
        });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("overlay"),
            source: wgpu::ShaderSource::Wgsl(include_str!("../../shaders/overlay.wgsl").into()),
        });
        let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("overlay"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        const ATTRS: [wgpu::VertexAttribute; 3] =
            wgpu::vertex_attr_array![0 => Float32x2, 1 => Float32x2, 2 => Float32x4];
        let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
            label: Some("overlay"),
            layout: Some(&pl),
            vertex: wgpu::VertexState {
                module: &module,
                entry_point: Some("vs_overlay"),
                compilation_options: Default::default(),
                buffers: &[Some(wgpu::VertexBufferLayout {
                    array_stride: std::mem::size_of::<QuadVertex>() as u64,
                    step_mode: wgpu::VertexStepMode::Vertex,
                    attributes: &ATTRS,
                })],
            },
            primitive: Default::default(),
            depth_stencil: None,
            multisample: Default::default(),
            fragment: Some(wgpu::FragmentState {
                module: &module,
                entry_point: Some("fs_overlay"),
                compilation_options: Default::default(),
                targets: &[Some(wgpu::ColorTargetState {
                    format,
                    blend: Some(wgpu::BlendState::ALPHA_BLENDING),
                    write_mask: wgpu::ColorWrites::ALL,
                })],
            }),
            multiview_mask: None,
            cache: None,
        });
        Self {
            pipeline,
            bind_group,
            screen,
            vertices: None,
            count: 0,
            scratch: Vec::new(),
        }
    }

    /// Lays out `lines` for an output of `size` pixels in `mode`.
    pub fn prepare(
        &mut self,
        ctx: &GpuContext,
        lines: &[String],
        mode: StereoMode,
        size: (u32, u32),
    ) {
        self.scratch.clear();
        self.count = 0;
        if lines.is_empty() {
            return;
        }
        let (w, h) = (size.0 as f32, size.1 as f32);
        // Regions (origin, scale) so each eye's half carries the overlay.
        let regions = mode.regions();
        for (origin, scale) in regions {
            // Each eye's region is squeezed by the layout (`scale`); the text
            // is laid out in the region's unsqueezed pixels and cut at its edge.
            let region_w = w * scale[0];
            let font = if region_w < SMALL_REGION { 1.0 } else { SCALE };
            let glyph = GLYPH as f32 * font;
            let fits = ((w - 2.0 * PAD) / glyph).floor().max(0.0) as usize;
            let longest = lines
                .iter()
                .map(|l| l.chars().count().min(fits))
                .max()
                .unwrap_or(0) as f32;
            let map = |x: f32, y: f32| [origin[0] * w + x * scale[0], origin[1] * h + y * scale[1]];
            let mut quad = |x0: f32, y0: f32, x1: f32, y1: f32, t0: [f32; 2], t1: [f32; 2], c| {
                let (a, b, cc, d) = (map(x0, y0), map(x1, y0), map(x1, y1), map(x0, y1));
                let v = |p: [f32; 2], t: [f32; 2]| QuadVertex {
                    pixel: p,
                    texel: t,
                    color: c,
                };
                self.scratch.extend_from_slice(&[
                    v(a, t0),
                    v(b, [t1[0], t0[1]]),
                    v(cc, t1),
                    v(a, t0),
                    v(cc, t1),
                    v(d, [t0[0], t1[1]]),
                ]);
            };
            let panel_w = longest * glyph + 2.0 * PAD;
            let panel_h = lines.len() as f32 * (glyph + 2.0) + 2.0 * PAD;
            quad(
                0.0,
                0.0,
                panel_w,
                panel_h,
                [-1.0, 0.0],
                [-1.0, 0.0],
                PANEL_COLOR,
            );
            for (row, line) in lines.iter().enumerate() {
                let y = PAD + row as f32 * (glyph + 2.0);
                for (col, ch) in line.chars().take(fits).enumerate() {
                    let code = if ch.is_ascii() { ch as u32 } else { '?' as u32 };
                    if code == ' ' as u32 {
                        continue;
                    }
                    let x = PAD + col as f32 * glyph;
                    let tx = (code * GLYPH) as f32;
                    quad(
                        x,
                        y,
                        x + glyph,
                        y + glyph,
                        [tx, 0.0],
                        [tx + GLYPH as f32, GLYPH as f32],
                        TEXT_COLOR,
                    );
                }
            }
        }
        let bytes: &[u8] = bytemuck::cast_slice(&self.scratch);
        if self
            .vertices
            .as_ref()
            .is_none_or(|b| b.size() < bytes.len() as u64)
        {
            self.vertices = Some(ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("overlay quads"),
                size: (bytes.len() as u64).next_power_of_two(),
                usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
        }
        if let Some(buf) = &self.vertices {
            ctx.queue.write_buffer(buf, 0, bytes);
        }
        ctx.queue
            .write_buffer(&self.screen, 0, bytemuck::cast_slice(&[w, h, 0.0, 0.0]));
        self.count = self.scratch.len() as u32;
    }

    /// Draws the quads last laid out by `prepare` into `pass` (nothing when there is no text).
    pub fn draw<'a>(&'a self, pass: &mut wgpu::RenderPass<'a>) {
        if self.count == 0 {
            return;
        }
        let Some(buf) = &self.vertices else { return };
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.set_vertex_buffer(0, buf.slice(..));
        pass.draw(0..self.count, 0..1);
    }
}
