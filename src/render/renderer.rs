//! The stereo renderer: per-eye cameras, scene pipelines, eye render
//! targets, the compose pass that lays the eyes out for a desk display, and
//! the overlay.
//!
//! Resource lifetimes are explicit: pipelines live as long as the renderer;
//! eye targets are recreated when the eye size changes; geometry buffers
//! grow (never shrink) and are rewritten every frame.

use super::context::GpuContext;
use super::geometry::{DrawList, SceneGeometry, Vertex};
use super::overlay::Overlay;
use super::{RenderError, RgbaImage};
use glam::{Mat4, Vec3};
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

/// Colour format of the eye images (linear blending, sRGB storage).
pub const EYE_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
pub const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
/// Sky colour behind the scene (linear).
pub const BACKGROUND: wgpu::Color = wgpu::Color {
    r: 0.05,
    g: 0.06,
    b: 0.08,
    a: 1.0,
};
/// Uniform offsets must be multiples of this on every adapter.
const CAMERA_STRIDE: u64 = 256;

/// One eye's camera: world → clip (wgpu conventions, depth 0..1) and where the
/// eye is, for lighting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EyeCamera {
    pub view_proj: Mat4,
    pub position: Vec3,
}

/// How the two eyes reach a desk display.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum StereoMode {
    /// One eye (the left camera) only.
    Mono,
    /// Left eye in the left half, right eye in the right half.
    #[default]
    SideBySide,
    /// Left eye on top, right eye below.
    TopBottom,
    /// Red (left) / cyan (right) glasses.
    Anaglyph,
}

impl StereoMode {
    fn shader_code(self) -> u32 {
        match self {
            StereoMode::Mono => 0,
            StereoMode::SideBySide => 1,
            StereoMode::TopBottom => 2,
            StereoMode::Anaglyph => 3,
        }
    }

    /// Eyes rendered in this mode.
    pub fn eye_count(self) -> usize {
        if self == StereoMode::Mono { 1 } else { 2 }
    }

    /// Size of each eye image for an output of `output` pixels.
    pub fn eye_size(self, output: (u32, u32)) -> (u32, u32) {
        let (w, h) = output;
        match self {
            StereoMode::SideBySide => ((w / 2).max(1), h.max(1)),
            StereoMode::TopBottom => (w.max(1), (h / 2).max(1)),
            StereoMode::Mono | StereoMode::Anaglyph => (w.max(1), h.max(1)),
        }
    }
}

/// How the eyes are drawn on this adapter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StereoPath {
    /// Both eyes in one multiview pass.
    Multiview,
    /// One pass per eye into its own image, and why multiview is not used.
    PerEyePasses(String),
}

/// Render-thread CPU cost of one frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameStats {
    /// Writing geometry and cameras to the GPU.
    pub upload: Duration,
    pub upload_bytes: u64,
    /// Recording and submitting the passes.
    pub encode: Duration,
    pub triangles: u64,
}

/// Vertex and index buffers for one draw list, grown on demand.
struct GpuList {
    label: &'static str,
    vertices: Option<wgpu::Buffer>,
    indices: Option<wgpu::Buffer>,
    count: u32,
}

impl GpuList {
    fn new(label: &'static str) -> Self {
        Self {
            label,
            vertices: None,
            indices: None,
            count: 0,
        }
    }

    /// Writes `list`, growing the buffers to the next power of two when needed.
    fn upload(&mut self, ctx: &GpuContext, list: &DrawList) -> u64 {
        self.count = list.indices.len() as u32;
        if list.is_empty() {
            return 0;
        }
        let vbytes: &[u8] = bytemuck::cast_slice(&list.vertices);
        let ibytes: &[u8] = bytemuck::cast_slice(&list.indices);
        let ensure = |buf: &mut Option<wgpu::Buffer>, len: usize, usage: wgpu::BufferUsages| {
            let fits = buf.as_ref().is_some_and(|b| b.size() >= len as u64);
            if !fits {
                *buf = Some(ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(self.label),
                    size: (len as u64).next_power_of_two().max(256),
                    usage: usage | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }));
            }
        };
        ensure(&mut self.vertices, vbytes.len(), wgpu::BufferUsages::VERTEX);
        ensure(&mut self.indices, ibytes.len(), wgpu::BufferUsages::INDEX);
        let (Some(v), Some(i)) = (&self.vertices, &self.indices) else {
            unreachable!("buffers ensured above")
        };
        ctx.queue.write_buffer(v, 0, vbytes);
        ctx.queue.write_buffer(i, 0, ibytes);
        (vbytes.len() + ibytes.len()) as u64
    }

    fn draw<'a>(&'a self, pass: &mut wgpu::RenderPass<'a>) {
        if self.count == 0 {
            return;
        }
        let (Some(v), Some(i)) = (&self.vertices, &self.indices) else {
            return;
        };
        pass.set_vertex_buffer(0, v.slice(..));
        pass.set_index_buffer(i.slice(..), wgpu::IndexFormat::Uint32);
        pass.draw_indexed(0..self.count, 0, 0..1);
    }
}

/// Opaque triangles, lines, translucent triangles: one set per stereo path.
struct ScenePipelines {
    opaque: wgpu::RenderPipeline,
    lines: wgpu::RenderPipeline,
    translucent: wgpu::RenderPipeline,
}

/// The eye images and the attachments that draw them.
struct EyeTargets {
    size: (u32, u32),
    /// 0 = left eye, 1 = right eye (single-sampled, resolved).
    textures: [wgpu::Texture; 2],
    layers: [wgpu::TextureView; 2],
    /// Multisampled colour and depth, shared by the per-eye passes.
    msaa: Option<wgpu::TextureView>,
    depth: wgpu::TextureView,
    compose_bind_group: wgpu::BindGroup,
}

pub struct Renderer {
    ctx: GpuContext,
    output_format: wgpu::TextureFormat,
    samples: u32,
    path: StereoPath,
    eye_pipelines: ScenePipelines,
    camera_buffer: wgpu::Buffer,
    camera_bind_group: wgpu::BindGroup,
    lists: [GpuList; 3],
    eyes: Option<EyeTargets>,
    compose_layout: wgpu::BindGroupLayout,
    compose_pipeline: wgpu::RenderPipeline,
    compose_uniform: wgpu::Buffer,
    sampler: wgpu::Sampler,
    overlay: Overlay,
}

fn vertex_layout() -> wgpu::VertexBufferLayout<'static> {
    const ATTRS: [wgpu::VertexAttribute; 3] =
        wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Float32x4];
    wgpu::VertexBufferLayout {
        array_stride: std::mem::size_of::<Vertex>() as u64,
        step_mode: wgpu::VertexStepMode::Vertex,
        attributes: &ATTRS,
    }
}

/// The scene shader for one stereo path (WGSL in `shaders/`).
pub fn scene_shader_source(multiview: bool) -> String {
    let common = include_str!("../../shaders/scene.wgsl");
    let stage = if multiview {
        include_str!("../../shaders/scene_multiview.wgsl")
    } else {
        include_str!("../../shaders/scene_eye.wgsl")
    };
    format!("{common}\n{stage}")
}

fn scene_pipelines(
    ctx: &GpuContext,
    layout: &wgpu::PipelineLayout,
    samples: u32,
    multiview_mask: Option<NonZeroU32>,
) -> ScenePipelines {
    let module = ctx
        .device
        .create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("scene"),
            source: wgpu::ShaderSource::Wgsl(scene_shader_source(multiview_mask.is_some()).into()),
        });
    let make = |label: &str,
                topology: wgpu::PrimitiveTopology,
                fs: &str,
                blend: Option<wgpu::BlendState>,
                depth_write: bool| {
        ctx.device
            .create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(layout),
                vertex: wgpu::VertexState {
                    module: &module,
                    entry_point: Some("vs_main"),
                    compilation_options: Default::default(),
                    buffers: &[Some(vertex_layout())],
                },
                primitive: wgpu::PrimitiveState {
                    topology,
                    cull_mode: None,
                    ..Default::default()
                },
                depth_stencil: Some(wgpu::DepthStencilState {
                    format: DEPTH_FORMAT,
                    depth_write_enabled: Some(depth_write),
                    depth_compare: Some(wgpu::CompareFunction::LessEqual),
                    stencil: Default::default(),
                    bias: Default::default(),
                }),
                multisample: wgpu::MultisampleState {
                    count: samples,
                    ..Default::default()
                },
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some(fs),
                    compilation_options: Default::default(),
                    targets: &[Some(wgpu::ColorTargetState {
                        format: EYE_FORMAT,
                        blend,
                        write_mask: wgpu::ColorWrites::ALL,
                    })],
                }),
                multiview_mask,
                cache: None,
            })
    };
    ScenePipelines {
        opaque: make(
            "scene opaque",
            wgpu::PrimitiveTopology::TriangleList,
            "fs_lit",
            None,
            true,
        ),
        lines: make(
            "scene lines",
            wgpu::PrimitiveTopology::LineList,
            "fs_unlit",
            Some(wgpu::BlendState::ALPHA_BLENDING),
            true,
        ),
        translucent: make(
            "scene translucent",
            wgpu::PrimitiveTopology::TriangleList,
            "fs_lit",
            Some(wgpu::BlendState::ALPHA_BLENDING),
            false,
        ),
    }
}

fn camera_bytes(cam: &EyeCamera) -> [f32; 20] {
    let mut out = [0.0f32; 20];
    out[..16].copy_from_slice(&cam.view_proj.to_cols_array());
    out[16..19].copy_from_slice(&cam.position.to_array());
    out[19] = 1.0;
    out
}

impl Renderer {
    /// A renderer drawing into targets of `output_format`, with up to 4×
    /// MSAA in the eye passes.
    pub fn new(ctx: &GpuContext, output_format: wgpu::TextureFormat) -> Result<Self, RenderError> {
        let ctx = ctx.clone();
        let wanted = std::env::var("PLASTICINE_MSAA")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4);
        let samples = ctx
            .msaa_samples(EYE_FORMAT, wanted)
            .min(ctx.msaa_samples(DEPTH_FORMAT, wanted));
        let camera_layout = ctx
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some("camera"),
                entries: &[wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::VERTEX,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: true,
                        min_binding_size: wgpu::BufferSize::new(80),
                    },
                    count: None,
                }],
            });
        let camera_buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("cameras"),
            size: CAMERA_STRIDE * 2,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let camera_bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("camera"),
            layout: &camera_layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &camera_buffer,
                    offset: 0,
                    size: wgpu::BufferSize::new(80),
                }),
            }],
        });
        let scene_layout = ctx
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("scene"),
                bind_group_layouts: &[Some(&camera_layout)],
                immediate_size: 0,
            });
        let eye_pipelines = scene_pipelines(&ctx, &scene_layout, samples, None);
        let path = StereoPath::PerEyePasses(if ctx.multiview {
            "multiview is not used for the desk eye targets yet".into()
        } else {
            "the adapter does not offer multiview".into()
        });

        let eye_entry = |binding| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::FRAGMENT,
            ty: wgpu::BindingType::Texture {
                sample_type: wgpu::TextureSampleType::Float { filterable: true },
                view_dimension: wgpu::TextureViewDimension::D2,
                multisampled: false,
            },
            count: None,
        };
        let compose_layout =
            ctx.device
                .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some("compose"),
                    entries: &[
                        eye_entry(0),
                        eye_entry(1),
                        wgpu::BindGroupLayoutEntry {
                            binding: 2,
                            visibility: wgpu::ShaderStages::FRAGMENT,
                            ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                            count: None,
                        },
                        wgpu::BindGroupLayoutEntry {
                            binding: 3,
                            visibility: wgpu::ShaderStages::FRAGMENT,
                            ty: wgpu::BindingType::Buffer {
                                ty: wgpu::BufferBindingType::Uniform,
                                has_dynamic_offset: false,
                                min_binding_size: wgpu::BufferSize::new(16),
                            },
                            count: None,
                        },
                    ],
                });
        let compose_module = ctx
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("compose"),
                source: wgpu::ShaderSource::Wgsl(include_str!("../../shaders/compose.wgsl").into()),
            });
        let compose_pl = ctx
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some("compose"),
                bind_group_layouts: &[Some(&compose_layout)],
                immediate_size: 0,
            });
        let compose_pipeline = ctx
            .device
            .create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some("compose"),
                layout: Some(&compose_pl),
                vertex: wgpu::VertexState {
                    module: &compose_module,
                    entry_point: Some("vs_full"),
                    compilation_options: Default::default(),
                    buffers: &[],
                },
                primitive: Default::default(),
                depth_stencil: None,
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &compose_module,
                    entry_point: Some("fs_compose"),
                    compilation_options: Default::default(),
                    targets: &[Some(wgpu::ColorTargetState {
                        format: output_format,
                        blend: None,
                        write_mask: wgpu::ColorWrites::ALL,
                    })],
                }),
                multiview_mask: None,
                cache: None,
            });
        let compose_uniform = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("compose"),
            size: 16,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let sampler = ctx.device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("eyes"),
            mag_filter: wgpu::FilterMode::Linear,
            min_filter: wgpu::FilterMode::Linear,
            ..Default::default()
        });
        let overlay = Overlay::new(&ctx, output_format);
        Ok(Self {
            ctx,
            output_format,
            samples,
            path,
            eye_pipelines,
            camera_buffer,
            camera_bind_group,
            lists: [
                GpuList::new("opaque"),
                GpuList::new("lines"),
                GpuList::new("translucent"),
            ],
            eyes: None,
            compose_layout,
            compose_pipeline,
            compose_uniform,
            sampler,
            overlay,
        })
    }

    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    pub fn output_format(&self) -> wgpu::TextureFormat {
        self.output_format
    }

    pub fn msaa_samples(&self) -> u32 {
        self.samples
    }

    pub fn stereo_path(&self) -> &StereoPath {
        &self.path
    }

    /// (Re)creates the eye targets when the eye size changes.
    fn ensure_eyes(&mut self, size: (u32, u32)) {
        if self.eyes.as_ref().is_some_and(|e| e.size == size) {
            return;
        }
        let device = &self.ctx.device;
        let extent = |layers| wgpu::Extent3d {
            width: size.0,
            height: size.1,
            depth_or_array_layers: layers,
        };
        // Two separate textures rather than two layers of one: bookworm's
        // lavapipe resolves MSAA into layer 0 whatever layer the view names
        // (the right eye overwrote the left), and separate images sidestep
        // that on every driver.
        let eye_texture = |label| {
            device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size: extent(1),
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: EYE_FORMAT,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT
                    | wgpu::TextureUsages::TEXTURE_BINDING
                    | wgpu::TextureUsages::COPY_SRC,
                view_formats: &[],
            })
        };
        let textures = [eye_texture("left eye"), eye_texture("right eye")];
        let layers = [
            textures[0].create_view(&Default::default()),
            textures[1].create_view(&Default::default()),
        ];
        let attachment = |label, format, samples| {
            device
                .create_texture(&wgpu::TextureDescriptor {
                    label: Some(label),
                    size: extent(1),
                    mip_level_count: 1,
                    sample_count: samples,
                    dimension: wgpu::TextureDimension::D2,
                    format,
                    usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
                    view_formats: &[],
                })
                .create_view(&Default::default())
        };
        let msaa = (self.samples > 1).then(|| attachment("eye msaa", EYE_FORMAT, self.samples));
        let depth = attachment("eye depth", DEPTH_FORMAT, self.samples);
        let compose_bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("compose"),
            layout: &self.compose_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::TextureView(&layers[0]),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::TextureView(&layers[1]),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: wgpu::BindingResource::Sampler(&self.sampler),
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: self.compose_uniform.as_entire_binding(),
                },
            ],
        });
        self.eyes = Some(EyeTargets {
            size,
            textures,
            layers,
            msaa,
            depth,
            compose_bind_group,
        });
    }

    /// Uploads this frame's geometry.
    pub fn upload(&mut self, geometry: &SceneGeometry) -> u64 {
        let ctx = &self.ctx;
        self.lists[0].upload(ctx, &geometry.opaque)
            + self.lists[1].upload(ctx, &geometry.lines)
            + self.lists[2].upload(ctx, &geometry.translucent)
    }

    /// Draws the uploaded scene for each eye of `mode` (eye images of
    /// `eye_size`), then lays them out into `target` and draws the overlay
    /// lines on top. `target` must have the renderer's output format.
    pub fn render(
        &mut self,
        cameras: &[EyeCamera; 2],
        mode: StereoMode,
        eye_size: (u32, u32),
        target: Option<(&wgpu::TextureView, (u32, u32))>,
        overlay_lines: &[String],
    ) -> FrameStats {
        let t0 = Instant::now();
        self.ensure_eyes(eye_size);
        let mut cam = [0u8; (CAMERA_STRIDE * 2) as usize];
        for (k, c) in cameras.iter().enumerate() {
            let bytes = camera_bytes(c);
            let at = k * CAMERA_STRIDE as usize;
            cam[at..at + 80].copy_from_slice(bytemuck::cast_slice(&bytes));
        }
        self.ctx.queue.write_buffer(&self.camera_buffer, 0, &cam);
        self.ctx.queue.write_buffer(
            &self.compose_uniform,
            0,
            bytemuck::cast_slice(&[mode.shader_code(), 0, 0, 0]),
        );
        if let Some((_, size)) = target {
            self.overlay.prepare(&self.ctx, overlay_lines, mode, size);
        }
        let upload = t0.elapsed();

        let t1 = Instant::now();
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("stereo frame"),
            });
        let eyes = self.eyes.as_ref().expect("eye targets ensured above");
        for eye in 0..mode.eye_count() {
            let (view, resolve) = match &eyes.msaa {
                Some(msaa) => (msaa, Some(&eyes.layers[eye])),
                None => (&eyes.layers[eye], None),
            };
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some(if eye == 0 { "left eye" } else { "right eye" }),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view,
                    depth_slice: None,
                    resolve_target: resolve,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(BACKGROUND),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                    view: &eyes.depth,
                    depth_ops: Some(wgpu::Operations {
                        load: wgpu::LoadOp::Clear(1.0),
                        store: wgpu::StoreOp::Discard,
                    }),
                    stencil_ops: None,
                }),
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_bind_group(
                0,
                &self.camera_bind_group,
                &[(eye as u64 * CAMERA_STRIDE) as u32],
            );
            pass.set_pipeline(&self.eye_pipelines.opaque);
            self.lists[0].draw(&mut pass);
            pass.set_pipeline(&self.eye_pipelines.lines);
            self.lists[1].draw(&mut pass);
            pass.set_pipeline(&self.eye_pipelines.translucent);
            self.lists[2].draw(&mut pass);
        }
        if let Some((target, _)) = target {
            let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("compose"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: target,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color::BLACK),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            });
            pass.set_pipeline(&self.compose_pipeline);
            pass.set_bind_group(0, &eyes.compose_bind_group, &[]);
            pass.draw(0..3, 0..1);
            self.overlay.draw(&mut pass);
        }
        self.ctx.queue.submit(Some(encoder.finish()));
        let triangles = (self.lists[0].count + self.lists[2].count) as u64 / 3;
        FrameStats {
            upload,
            upload_bytes: 0,
            encode: t1.elapsed(),
            triangles: triangles * mode.eye_count() as u64,
        }
    }

    /// Reads back one eye's image (blocking; for tests, capture and export).
    pub fn read_eye(&self, eye: usize) -> Result<RgbaImage, RenderError> {
        let eyes = self
            .eyes
            .as_ref()
            .ok_or_else(|| RenderError::Capture("nothing rendered yet".into()))?;
        let texture = eyes
            .textures
            .get(eye)
            .ok_or_else(|| RenderError::Capture(format!("there is no eye {eye}")))?;
        super::capture::read_texture_layer(&self.ctx, texture, 0, eyes.size)
    }
}
