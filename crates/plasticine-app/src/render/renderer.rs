//! The stereo renderer: per-eye cameras, scene pipelines, eye render
//! targets, the compose pass that lays the eyes out for a desk display, and
//! the overlay.
//!
//! Resource lifetimes are explicit: pipelines live as long as the renderer;
//! eye targets are recreated when the eye size changes; geometry buffers
//! grow (never shrink) and are rewritten every frame.

use super::geometry::{SceneGeometry, Vertex};
use super::overlay::Overlay;
use super::stereo::StereoMode;
use super::ui_panel::UiQuad;
use super::{RenderError, RgbaImage};
use crate::gpu::GpuContext;
use glam::{Mat4, Vec3};
use multiview::{Multiview, record_multiview_eyes};
pub use scene::{DEPTH_FORMAT, EYE_FORMAT, MorphDraw};
use scene::{
    GpuList, SceneExtras, ScenePipelines, begin_scene_pass, camera_layout, draw_scene,
    scene_pipelines,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use ui::{UiPanelGpu, panel_texture_layout, quad_triangles};

mod multiview;
mod scene;
mod ui;

/// Uniform offsets must be multiples of this on every adapter.
const CAMERA_STRIDE: u64 = 256;

/// One eye's camera: world → clip (wgpu conventions, depth 0..1) and where the
/// eye is, for lighting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EyeCamera {
    /// World → clip transform (view, then projection).
    pub view_proj: Mat4,
    /// The eye's position in world space (metres), for lighting.
    pub position: Vec3,
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
    /// Vertex and index bytes uploaded; `Renderer::render` leaves it 0 for the caller to fill.
    pub upload_bytes: u64,
    /// Recording and submitting the passes.
    pub encode: Duration,
    /// Triangles drawn, summed over the eyes drawn (lines not counted).
    pub triangles: u64,
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

/// The GPU side of drawing: uploads the geometry, draws each eye, lays the eyes out for
/// the display and draws the overlay. Pipelines and eye targets live inside it.
pub struct Renderer {
    ctx: GpuContext,
    output_format: wgpu::TextureFormat,
    samples: u32,
    path: StereoPath,
    multiview: Option<Multiview>,
    eye_pipelines: ScenePipelines,
    camera_buffer: wgpu::Buffer,
    camera_bind_group: wgpu::BindGroup,
    /// Opaque, lines, translucent.
    lists: [GpuList; 3],
    /// A mesh posed on the GPU to draw with the lists, and its colour (one
    /// instance).
    morph: Option<MorphDraw>,
    morph_color: wgpu::Buffer,
    /// The UI panel: its painter, its quad, and the frame to paint next.
    ui: UiPanelGpu,
    ui_quad: GpuList,
    ui_frame: Option<Arc<super::ui_panel::UiFrame>>,
    ui_painted: Option<Arc<super::ui_panel::UiFrame>>,
    eyes: Option<EyeTargets>,
    compose_layout: wgpu::BindGroupLayout,
    compose_pipeline: wgpu::RenderPipeline,
    compose_uniform: wgpu::Buffer,
    sampler: wgpu::Sampler,
    overlay: Overlay,
}

/// The eye passes' MSAA sample count: `PLASTICINE_MSAA` (4 when unset or
/// unreadable), lowered to what the adapter offers for both the eye colour and
/// depth formats.
fn eye_sample_count(ctx: &GpuContext) -> u32 {
    let wanted = std::env::var("PLASTICINE_MSAA")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4);
    ctx.msaa_samples(EYE_FORMAT, wanted)
        .min(ctx.msaa_samples(DEPTH_FORMAT, wanted))
}

/// How the eyes will be drawn: one multiview pass (its pipelines and camera
/// with it) where allowed and the adapter can, else one pass per eye and why.
fn choose_stereo_path(
    ctx: &GpuContext,
    samples: u32,
    allow_multiview: bool,
    panel: &wgpu::BindGroupLayout,
) -> (Option<Multiview>, StereoPath) {
    let forced_per_eye = std::env::var("PLASTICINE_STEREO_PATH").is_ok_and(|v| v == "per-eye");
    if forced_per_eye || !allow_multiview {
        (
            None,
            StereoPath::PerEyePasses("one pass per eye was asked for".into()),
        )
    } else if !ctx.multiview {
        (
            None,
            StereoPath::PerEyePasses("the adapter does not offer multiview".into()),
        )
    } else if samples > 1 && !ctx.multisample_array {
        (
            None,
            StereoPath::PerEyePasses(
                "multiview here has no multisampled array targets; per-eye passes keep MSAA".into(),
            ),
        )
    } else {
        (
            Some(Multiview::new(ctx, samples, panel)),
            StereoPath::Multiview,
        )
    }
}

/// The compose pass's bindings: the two eye images, their sampler, and the
/// uniform saying how to lay them out.
fn compose_layout(ctx: &GpuContext) -> wgpu::BindGroupLayout {
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
        })
}

/// The pipeline that lays the eyes out into a target of `output_format`
/// (one full-screen triangle, `shaders/compose.wgsl`).
fn compose_pipeline(
    ctx: &GpuContext,
    compose_layout: &wgpu::BindGroupLayout,
    output_format: wgpu::TextureFormat,
) -> wgpu::RenderPipeline {
    let compose_module = ctx
        .device
        .create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("compose"),
            source: wgpu::ShaderSource::Wgsl(
                include_str!("../../../../shaders/compose.wgsl").into(),
            ),
        });
    let compose_pl = ctx
        .device
        .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("compose"),
            bind_group_layouts: &[Some(compose_layout)],
            immediate_size: 0,
        });
    ctx.device
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
        })
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
        Self::with_stereo_path(ctx, output_format, true)
    }

    /// As [`new`](Self::new); `allow_multiview = false` forces one pass per
    /// eye (to compare the two paths). Multiview is used only when the
    /// adapter offers it and a self-test shows it rendering both views.
    pub fn with_stereo_path(
        ctx: &GpuContext,
        output_format: wgpu::TextureFormat,
        allow_multiview: bool,
    ) -> Result<Self, RenderError> {
        let ctx = ctx.clone();
        let samples = eye_sample_count(&ctx);
        // One eye's camera at a dynamic offset per pass.
        let camera_layout = camera_layout(&ctx, "camera", 80, true);
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
        let panel_layout = panel_texture_layout(&ctx);
        let eye_pipelines = scene_pipelines(&ctx, (&camera_layout, &panel_layout), samples, None);
        let (multiview, path) = choose_stereo_path(&ctx, samples, allow_multiview, &panel_layout);
        let compose_layout = compose_layout(&ctx);
        let compose_pipeline = compose_pipeline(&ctx, &compose_layout, output_format);
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
        let morph_color = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("morph colour"),
            size: 16,
            usage: wgpu::BufferUsages::VERTEX | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let ui = UiPanelGpu::new(&ctx, panel_layout);
        let mut renderer = Self {
            ctx,
            output_format,
            samples,
            path,
            multiview,
            eye_pipelines,
            camera_buffer,
            camera_bind_group,
            lists: [
                GpuList::new("opaque"),
                GpuList::new("lines"),
                GpuList::new("translucent"),
            ],
            morph: None,
            morph_color,
            ui,
            ui_quad: GpuList::new("ui panel"),
            ui_frame: None,
            ui_painted: None,
            eyes: None,
            compose_layout,
            compose_pipeline,
            compose_uniform,
            sampler,
            overlay,
        };
        if renderer.multiview.is_some() && !renderer.multiview_renders_both_views()? {
            renderer.multiview = None;
            renderer.path = StereoPath::PerEyePasses(
                "multiview failed its self-test here: the views did not match one pass per \
                 eye (bookworm's Mesa 22 loses the second view's primitives that cross the near plane)"
                    .into(),
            );
        }
        Ok(renderer)
    }

    /// Draws a small test scene (triangles, lines, a translucent triangle)
    /// with a different camera per eye, once in a multiview pass and once per
    /// eye, and checks that both eyes match. Drivers get multiview wrong in
    /// parts: bookworm's lavapipe draws most of both views but drops (or
    /// misplaces) the second view's primitives that the near plane clips.
    fn multiview_renders_both_views(&mut self) -> Result<bool, RenderError> {
        let mut test = SceneGeometry::default();
        // A floor quad and grid lines reaching behind the eyes (so the
        // clipper has to cut them at the near plane, where bookworm's
        // lavapipe loses the second view), and a triangle in front.
        let grey = [0.6, 0.6, 0.6, 1.0];
        let white = [1.0, 1.0, 1.0, 1.0];
        for (p, c) in [
            (Vec3::new(-3.0, -0.5, 3.0), grey),
            (Vec3::new(3.0, -0.5, 3.0), grey),
            (Vec3::new(3.0, -0.5, -6.0), grey),
            (Vec3::new(-3.0, -0.5, -6.0), grey),
            (Vec3::new(-0.3, -0.2, -1.0), white),
            (Vec3::new(0.3, -0.2, -1.0), white),
            (Vec3::new(0.0, 0.4, -1.0), white),
        ] {
            test.opaque.vertices.push(Vertex::new(p, Vec3::Y, c));
        }
        test.opaque
            .indices
            .extend_from_slice(&[0, 1, 2, 0, 2, 3, 4, 5, 6]);
        let green = [0.1, 1.0, 0.1, 1.0];
        for x in [-1.0f32, -0.4, 0.4, 1.0] {
            let base = test.lines.vertices.len() as u32;
            test.lines
                .vertices
                .push(Vertex::new(Vec3::new(x, -0.49, 3.0), Vec3::ZERO, green));
            test.lines
                .vertices
                .push(Vertex::new(Vec3::new(x, -0.49, -6.0), Vec3::ZERO, green));
            test.lines.indices.extend_from_slice(&[base, base + 1]);
        }
        let red = [1.0, 0.1, 0.1, 0.5];
        for p in [
            Vec3::new(-0.6, 0.0, -0.8),
            Vec3::new(-0.1, 0.0, -0.8),
            Vec3::new(-0.1, 0.5, -0.8),
        ] {
            test.translucent.vertices.push(Vertex::new(p, Vec3::Z, red));
        }
        test.translucent.indices.extend_from_slice(&[0, 1, 2]);
        self.upload(&test);
        let proj = glam::camera::rh::proj::directx::perspective(1.2, 1.0, 0.05, 20.0);
        let camera = |x: f32| {
            let eye = Vec3::new(x, 0.0, 0.0);
            EyeCamera {
                view_proj: proj * glam::camera::rh::view::look_to_mat4(eye, Vec3::NEG_Z, Vec3::Y),
                position: eye,
            }
        };
        let cams = [camera(-0.1), camera(0.1)];
        let size = (32, 32);
        let draw = |r: &mut Self| -> Result<[RgbaImage; 2], RenderError> {
            r.render(&cams, StereoMode::SideBySide, size, None, &[]);
            Ok([r.read_eye(0)?, r.read_eye(1)?])
        };
        let multiview = draw(self)?;
        let saved = self.multiview.take();
        let per_eye = draw(self);
        self.multiview = saved;
        let per_eye = per_eye?;
        self.upload(&SceneGeometry::default());
        let same = multiview.iter().zip(&per_eye).all(|(a, b)| {
            let differing = a
                .pixels
                .chunks_exact(4)
                .zip(b.pixels.chunks_exact(4))
                .filter(|(p, q)| p.iter().zip(q.iter()).any(|(x, y)| x.abs_diff(*y) > 24))
                .count();
            differing <= 4
        });
        Ok(same)
    }

    /// The GPU context it draws with.
    pub fn context(&self) -> &GpuContext {
        &self.ctx
    }

    /// The format of the targets it composes the eyes into.
    pub fn output_format(&self) -> wgpu::TextureFormat {
        self.output_format
    }

    /// The MSAA sample count of the eye passes (1 without MSAA).
    pub fn msaa_samples(&self) -> u32 {
        self.samples
    }

    /// How the eyes are drawn on this adapter: one multiview pass, or one pass per eye.
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
                    | wgpu::TextureUsages::COPY_SRC
                    | wgpu::TextureUsages::COPY_DST,
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

    /// Draws `morph` (a mesh posed on the GPU) with the scene from the next
    /// [`render`](Self::render) on, until it is replaced or `None`.
    pub fn set_morph(&mut self, morph: Option<MorphDraw>) {
        if let Some(m) = &morph {
            self.ctx
                .queue
                .write_buffer(&self.morph_color, 0, bytemuck::cast_slice(&m.color));
        }
        self.morph = morph;
    }

    /// Draws `ui` (the in-world panel) with the scene from the next
    /// [`render`](Self::render) on, until it is replaced or `None`; its
    /// frame is painted into the panel's texture then.
    pub fn set_ui(&mut self, ui: Option<&UiQuad>) -> u64 {
        self.ui_frame = ui.map(|q| q.frame.clone());
        match ui {
            Some(q) => self.ui_quad.upload(&self.ctx, &quad_triangles(q)),
            None => self.ui_quad.upload(&self.ctx, &Default::default()),
        }
    }

    /// The colour bar drawn under the overlay's lines (a heat map's
    /// legend; empty for none).
    pub fn set_legend_bar(&mut self, colours: Vec<[f32; 4]>) {
        self.overlay.bar = colours;
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
        let upload = t0.elapsed();

        let t1 = Instant::now();
        let mut encoder = self
            .ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("stereo frame"),
            });
        if let Some((_, size)) = target {
            self.overlay
                .prepare(&self.ctx, &mut encoder, overlay_lines, (mode, size));
        }
        let multiview = mode.eye_count() == 2 && self.multiview.is_some();
        // A frame already in the panel's texture is not painted again.
        if let Some(frame) = self.ui_frame.take()
            && !self
                .ui_painted
                .as_ref()
                .is_some_and(|p| Arc::ptr_eq(p, &frame))
        {
            self.ui.paint(&self.ctx, &mut encoder, &frame);
            self.ui_painted = Some(frame);
        }
        let extras = SceneExtras {
            morph: self.morph.as_ref().map(|m| (m, &self.morph_color)),
            panel: self
                .ui
                .bind_group()
                .filter(|_| self.ui_quad.count > 0)
                .map(|b| (&self.ui_quad, b)),
        };
        if multiview {
            let mv = self.multiview.as_mut().expect("checked above");
            mv.ensure_targets(&self.ctx, eye_size);
            let cams: Vec<u8> = cameras
                .iter()
                .flat_map(|c| bytemuck::cast_slice::<f32, u8>(&camera_bytes(c)).to_vec())
                .collect();
            self.ctx.queue.write_buffer(&mv.camera_buffer, 0, &cams);
        }
        let eyes = self.eyes.as_ref().expect("eye targets ensured above");
        if let Some(mv) = self.multiview.as_ref().filter(|_| multiview) {
            record_multiview_eyes(&mut encoder, mv, &eyes.textures, &self.lists, extras);
        }
        let per_eye_passes = if multiview { 0 } else { mode.eye_count() };
        for eye in 0..per_eye_passes {
            record_eye_pass(
                &mut encoder,
                eyes,
                eye,
                &self.camera_bind_group,
                &self.eye_pipelines,
                &self.lists,
                extras,
            );
        }
        if let Some((target, _)) = target {
            self.record_compose_pass(&mut encoder, eyes, target);
        }
        self.ctx.queue.submit(Some(encoder.finish()));
        let morph = self.morph.as_ref().map_or(0, |m| m.index_count);
        let triangles = (self.lists[0].count + self.lists[2].count + morph) as u64 / 3;
        FrameStats {
            upload,
            upload_bytes: 0,
            encode: t1.elapsed(),
            triangles: triangles * mode.eye_count() as u64,
        }
    }

    /// Records the pass that lays the eyes of `eyes` out into `target` and
    /// draws the overlay on top.
    fn record_compose_pass(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        eyes: &EyeTargets,
        target: &wgpu::TextureView,
    ) {
        let mut pass = encoder
            .begin_render_pass(&wgpu::RenderPassDescriptor {
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
            })
            // egui-wgpu records into a pass of any lifetime.
            .forget_lifetime();
        pass.set_pipeline(&self.compose_pipeline);
        pass.set_bind_group(0, &eyes.compose_bind_group, &[]);
        pass.draw(0..3, 0..1);
        self.overlay.draw(&mut pass);
    }

    /// The last frame's eye images, left and right: single-layer textures of
    /// the eye size in [`EYE_FORMAT`], usable as copy sources (a headset
    /// copies them into its swapchain). `None` before the first frame.
    pub fn eye_textures(&self) -> Option<[&wgpu::Texture; 2]> {
        let eyes = self.eyes.as_ref()?;
        Some([&eyes.textures[0], &eyes.textures[1]])
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

/// Records eye `eye`'s pass into `eyes`' attachments (resolving into its
/// image with MSAA), its camera at that eye's offset in `camera_bind_group`.
fn record_eye_pass(
    encoder: &mut wgpu::CommandEncoder,
    eyes: &EyeTargets,
    eye: usize,
    camera_bind_group: &wgpu::BindGroup,
    pipelines: &ScenePipelines,
    lists: &[GpuList; 3],
    extras: SceneExtras,
) {
    let (view, resolve) = match &eyes.msaa {
        Some(msaa) => (msaa, Some(&eyes.layers[eye])),
        None => (&eyes.layers[eye], None),
    };
    let label = if eye == 0 { "left eye" } else { "right eye" };
    let mut pass = begin_scene_pass(encoder, label, (view, resolve), &eyes.depth, None);
    pass.set_bind_group(0, camera_bind_group, &[(eye as u64 * CAMERA_STRIDE) as u32]);
    draw_scene(&mut pass, pipelines, lists, extras);
}
