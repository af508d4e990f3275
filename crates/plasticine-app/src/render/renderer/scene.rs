//! The scene pass shared by both stereo paths: the pipelines (opaque,
//! lines, flat, translucent), the draw lists' GPU buffers, and recording a
//! pass that draws them.

use crate::gpu::GpuContext;
use crate::render::geometry::{DrawList, Vertex};
use std::num::NonZeroU32;

/// Colour format of the eye images (linear blending, sRGB storage).
pub const EYE_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;
/// Format of the eye passes' depth attachments.
pub const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;
/// Sky colour behind the scene (linear).
pub const BACKGROUND: wgpu::Color = wgpu::Color {
    r: 0.05,
    g: 0.06,
    b: 0.08,
    a: 1.0,
};

/// A mesh posed on the GPU (`render::morph`), drawn from its own buffers:
/// per vertex a position and a unit normal as two `vec4<f32>` (stride 32),
/// `u32` triangle indices, one colour (translucent when its alpha is under
/// one).
#[derive(Clone, Debug)]
pub struct MorphDraw {
    /// Posed positions and normals.
    pub vertices: wgpu::Buffer,
    /// Triangle indices.
    pub indices: wgpu::Buffer,
    /// How many indices to draw.
    pub index_count: u32,
    /// Linear RGBA colour of the whole mesh.
    pub color: [f32; 4],
}

impl MorphDraw {
    /// Whether it is drawn with the translucent lists.
    pub fn translucent(&self) -> bool {
        self.color[3] < 1.0
    }

    /// Draws it; `color` holds its colour as one instance.
    fn draw<'a>(&'a self, pass: &mut wgpu::RenderPass<'a>, color: &'a wgpu::Buffer) {
        pass.set_vertex_buffer(0, self.vertices.slice(..));
        pass.set_vertex_buffer(1, color.slice(..));
        pass.set_index_buffer(self.indices.slice(..), wgpu::IndexFormat::Uint32);
        pass.draw_indexed(0..self.index_count, 0, 0..1);
    }
}

/// Vertex and index buffers for one draw list, grown on demand.
pub(super) struct GpuList {
    pub(super) label: &'static str,
    pub(super) vertices: Option<wgpu::Buffer>,
    pub(super) indices: Option<wgpu::Buffer>,
    pub(super) count: u32,
}

impl GpuList {
    pub(super) fn new(label: &'static str) -> Self {
        Self {
            label,
            vertices: None,
            indices: None,
            count: 0,
        }
    }

    /// Writes `list`, growing the buffers to the next power of two when needed.
    pub(super) fn upload(&mut self, ctx: &GpuContext, list: &DrawList) -> u64 {
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

    pub(super) fn draw<'a>(&'a self, pass: &mut wgpu::RenderPass<'a>) {
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

/// Opaque triangles, lines, translucent triangles, the UI panel: one set
/// per stereo path.
pub(super) struct ScenePipelines {
    pub(super) opaque: wgpu::RenderPipeline,
    pub(super) lines: wgpu::RenderPipeline,
    pub(super) translucent: wgpu::RenderPipeline,
    pub(super) morph_opaque: wgpu::RenderPipeline,
    pub(super) morph_translucent: wgpu::RenderPipeline,
    /// The UI panel's quad: its texture at group 1, premultiplied.
    pub(super) panel: wgpu::RenderPipeline,
}

/// A morph mesh's vertex buffers: the posed buffer (position, then the
/// normal 16 bytes on) and the colour, one per instance, as the scene
/// shader's locations 0, 1 and 2.
fn morph_vertex_layouts() -> [Option<wgpu::VertexBufferLayout<'static>>; 2] {
    const POSED: [wgpu::VertexAttribute; 2] = [
        wgpu::VertexAttribute {
            format: wgpu::VertexFormat::Float32x3,
            offset: 0,
            shader_location: 0,
        },
        wgpu::VertexAttribute {
            format: wgpu::VertexFormat::Float32x3,
            offset: 16,
            shader_location: 1,
        },
    ];
    const COLOR: [wgpu::VertexAttribute; 1] = wgpu::vertex_attr_array![2 => Float32x4];
    [
        Some(wgpu::VertexBufferLayout {
            array_stride: 32,
            step_mode: wgpu::VertexStepMode::Vertex,
            attributes: &POSED,
        }),
        Some(wgpu::VertexBufferLayout {
            array_stride: 16,
            step_mode: wgpu::VertexStepMode::Instance,
            attributes: &COLOR,
        }),
    ]
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
    let common = include_str!("../../../../../shaders/scene.wgsl");
    let stage = if multiview {
        include_str!("../../../../../shaders/scene_multiview.wgsl")
    } else {
        include_str!("../../../../../shaders/scene_eye.wgsl")
    };
    format!("{common}\n{stage}")
}

/// The scene's pipelines for one stereo path: `camera` is its camera
/// binding (group 0), `panel` the UI panel's texture (group 1, for the
/// panel pipeline alone).
pub(super) fn scene_pipelines(
    ctx: &GpuContext,
    (camera, panel): (&wgpu::BindGroupLayout, &wgpu::BindGroupLayout),
    samples: u32,
    multiview_mask: Option<NonZeroU32>,
) -> ScenePipelines {
    let pipeline_layout = |label, groups: &[Option<&wgpu::BindGroupLayout>]| {
        ctx.device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: groups,
                immediate_size: 0,
            })
    };
    let layout = &pipeline_layout("scene", &[Some(camera)]);
    let panel_layout = &pipeline_layout("scene panel", &[Some(camera), Some(panel)]);
    let module = ctx
        .device
        .create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("scene"),
            source: wgpu::ShaderSource::Wgsl(scene_shader_source(multiview_mask.is_some()).into()),
        });
    let morph_buffers = morph_vertex_layouts();
    let make_with = |label: &str,
                     layout: &wgpu::PipelineLayout,
                     buffers: &[Option<wgpu::VertexBufferLayout>],
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
                    buffers,
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
    let scene_buffers = [Some(vertex_layout())];
    let make = |label: &str,
                topology: wgpu::PrimitiveTopology,
                fs: &str,
                blend: Option<wgpu::BlendState>,
                depth_write: bool| {
        make_with(
            label,
            layout,
            &scene_buffers,
            topology,
            fs,
            blend,
            depth_write,
        )
    };
    ScenePipelines {
        panel: make_with(
            "scene ui panel",
            panel_layout,
            &scene_buffers,
            wgpu::PrimitiveTopology::TriangleList,
            "fs_panel",
            Some(wgpu::BlendState::PREMULTIPLIED_ALPHA_BLENDING),
            false,
        ),
        morph_opaque: make_with(
            "morph opaque",
            layout,
            &morph_buffers,
            wgpu::PrimitiveTopology::TriangleList,
            "fs_lit",
            None,
            true,
        ),
        morph_translucent: make_with(
            "morph translucent",
            layout,
            &morph_buffers,
            wgpu::PrimitiveTopology::TriangleList,
            "fs_lit",
            Some(wgpu::BlendState::ALPHA_BLENDING),
            false,
        ),
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

/// The vertex stage's camera uniform: `size` bytes at binding 0.
pub(super) fn camera_layout(
    ctx: &GpuContext,
    label: &str,
    size: u64,
    dynamic_offset: bool,
) -> wgpu::BindGroupLayout {
    ctx.device
        .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some(label),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::VERTEX,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: dynamic_offset,
                    min_binding_size: wgpu::BufferSize::new(size),
                },
                count: None,
            }],
        })
}

/// What the scene pass draws besides the lists: the morph mesh (with its
/// colour buffer) and the UI panel's quad (with its texture).
#[derive(Clone, Copy, Default)]
pub(super) struct SceneExtras<'a> {
    pub(super) morph: Option<(&'a MorphDraw, &'a wgpu::Buffer)>,
    pub(super) panel: Option<(&'a GpuList, &'a wgpu::BindGroup)>,
}

/// Draws the scene's lists (opaque, lines, translucent) with `pipelines`;
/// the morph mesh with the opaque or the translucent ones; the UI panel
/// last, over what is behind it.
pub(super) fn draw_scene<'a>(
    pass: &mut wgpu::RenderPass<'a>,
    pipelines: &ScenePipelines,
    lists: &'a [GpuList; 3],
    extras: SceneExtras<'a>,
) {
    let morph = extras.morph;
    pass.set_pipeline(&pipelines.opaque);
    lists[0].draw(pass);
    if let Some((m, color)) = morph.filter(|(m, _)| !m.translucent()) {
        pass.set_pipeline(&pipelines.morph_opaque);
        m.draw(pass, color);
    }
    pass.set_pipeline(&pipelines.lines);
    lists[1].draw(pass);
    pass.set_pipeline(&pipelines.translucent);
    lists[2].draw(pass);
    if let Some((m, color)) = morph.filter(|(m, _)| m.translucent()) {
        pass.set_pipeline(&pipelines.morph_translucent);
        m.draw(pass, color);
    }
    if let Some((quad, texture)) = extras.panel {
        pass.set_pipeline(&pipelines.panel);
        pass.set_bind_group(1, texture, &[]);
        quad.draw(pass);
    }
}

/// Begins a pass that draws the scene into `color` (resolved into the
/// second view with MSAA) over a cleared background and depth; the depth is
/// not kept. `multiview_mask` draws into several layers at once.
pub(super) fn begin_scene_pass<'e>(
    encoder: &'e mut wgpu::CommandEncoder,
    label: &str,
    (color, resolve): (&wgpu::TextureView, Option<&wgpu::TextureView>),
    depth: &wgpu::TextureView,
    multiview_mask: Option<NonZeroU32>,
) -> wgpu::RenderPass<'e> {
    encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
        label: Some(label),
        color_attachments: &[Some(wgpu::RenderPassColorAttachment {
            view: color,
            depth_slice: None,
            resolve_target: resolve,
            ops: wgpu::Operations {
                load: wgpu::LoadOp::Clear(BACKGROUND),
                store: wgpu::StoreOp::Store,
            },
        })],
        depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
            view: depth,
            depth_ops: Some(wgpu::Operations {
                load: wgpu::LoadOp::Clear(1.0),
                store: wgpu::StoreOp::Discard,
            }),
            stencil_ops: None,
        }),
        timestamp_writes: None,
        occlusion_query_set: None,
        multiview_mask,
    })
}
