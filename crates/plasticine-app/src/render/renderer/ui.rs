//! The UI panel on the GPU: egui-wgpu paints each [`UiFrame`] into the
//! panel's texture, which the scene pass samples on the panel's quad.

use super::scene::EYE_FORMAT;
use crate::gpu::GpuContext;
use crate::render::geometry::{DrawList, Vertex};
use crate::render::ui_panel::{UiFrame, UiQuad};
use glam::Vec3;
use std::collections::HashMap;

/// The quad's two triangles, the texture coordinate (0..1, v down) in the
/// normal's x and y: the scene shader's `fs_panel` reads it there.
pub(super) fn quad_triangles(q: &UiQuad) -> DrawList {
    let mut list = DrawList::default();
    let m = &q.to_world;
    let (w, h) = (q.size.x, q.size.y);
    for (x, y, u, v) in [
        (0.0, 0.0, 0.0, 0.0),
        (w, 0.0, 1.0, 0.0),
        (w, -h, 1.0, 1.0),
        (0.0, -h, 0.0, 1.0),
    ] {
        list.vertices.push(Vertex::new(
            m.transform_point3(Vec3::new(x, y, 0.0)),
            Vec3::new(u, v, 0.0),
            [1.0; 4],
        ));
    }
    list.indices.extend_from_slice(&[0, 1, 2, 0, 2, 3]);
    list
}

/// The scene pass's bindings for the panel: its texture and sampler.
pub(super) fn panel_texture_layout(ctx: &GpuContext) -> wgpu::BindGroupLayout {
    ctx.device
        .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("ui panel"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Float { filterable: true },
                        view_dimension: wgpu::TextureViewDimension::D2,
                        multisampled: false,
                    },
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 1,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                    count: None,
                },
            ],
        })
}

/// The panel's texture and the bind group that samples it.
struct Target {
    size: [u32; 2],
    view: wgpu::TextureView,
    bind_group: wgpu::BindGroup,
}

/// Paints UI frames into the panel texture (egui-wgpu) and keeps the
/// texture's bind group for the scene pass.
pub(super) struct UiPanelGpu {
    egui: egui_wgpu::Renderer,
    /// The version of each egui texture uploaded.
    uploaded: HashMap<egui::TextureId, u64>,
    layout: wgpu::BindGroupLayout,
    sampler: wgpu::Sampler,
    target: Option<Target>,
}

impl UiPanelGpu {
    /// Painting into [`EYE_FORMAT`] (linear blending, sRGB storage), so the
    /// scene samples linear colours; `layout` is the scene's panel binding.
    pub(super) fn new(ctx: &GpuContext, layout: wgpu::BindGroupLayout) -> Self {
        let options = egui_wgpu::RendererOptions {
            dithering: false,
            ..Default::default()
        };
        Self {
            egui: egui_wgpu::Renderer::new(&ctx.device, EYE_FORMAT, options),
            uploaded: HashMap::new(),
            layout,
            sampler: ctx.device.create_sampler(&wgpu::SamplerDescriptor {
                label: Some("ui panel"),
                mag_filter: wgpu::FilterMode::Linear,
                min_filter: wgpu::FilterMode::Linear,
                ..Default::default()
            }),
            target: None,
        }
    }

    /// The bind group of the last painted panel.
    pub(super) fn bind_group(&self) -> Option<&wgpu::BindGroup> {
        self.target.as_ref().map(|t| &t.bind_group)
    }

    /// Uploads the frame's changed textures, frees the ones it no longer
    /// uses, and records the pass that paints it into the panel texture.
    pub(super) fn paint(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        frame: &UiFrame,
    ) {
        for t in &frame.textures {
            if self.uploaded.get(&t.id) != Some(&t.version) {
                let delta = egui::epaint::ImageDelta::full(t.image.clone(), t.options);
                self.egui
                    .update_texture(&ctx.device, &ctx.queue, t.id, &delta);
                self.uploaded.insert(t.id, t.version);
            }
        }
        let gone: Vec<egui::TextureId> = self
            .uploaded
            .keys()
            .filter(|id| !frame.textures.iter().any(|t| t.id == **id))
            .copied()
            .collect();
        for id in gone {
            self.egui.free_texture(&id);
            self.uploaded.remove(&id);
        }
        let size = [frame.size_px[0].max(1), frame.size_px[1].max(1)];
        if self.target.as_ref().is_none_or(|t| t.size != size) {
            self.target = Some(self.make_target(ctx, size));
        }
        let target = self.target.as_ref().expect("made above");
        let screen = egui_wgpu::ScreenDescriptor {
            size_in_pixels: size,
            pixels_per_point: frame.pixels_per_point,
        };
        let callbacks =
            self.egui
                .update_buffers(&ctx.device, &ctx.queue, encoder, &frame.primitives, &screen);
        debug_assert!(callbacks.is_empty(), "the panel paints no callbacks");
        let mut pass = encoder
            .begin_render_pass(&wgpu::RenderPassDescriptor {
                label: Some("ui panel"),
                color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                    view: &target.view,
                    depth_slice: None,
                    resolve_target: None,
                    ops: wgpu::Operations {
                        load: wgpu::LoadOp::Clear(wgpu::Color::TRANSPARENT),
                        store: wgpu::StoreOp::Store,
                    },
                })],
                depth_stencil_attachment: None,
                timestamp_writes: None,
                occlusion_query_set: None,
                multiview_mask: None,
            })
            .forget_lifetime();
        self.egui.render(&mut pass, &frame.primitives, &screen);
    }

    fn make_target(&self, ctx: &GpuContext, size: [u32; 2]) -> Target {
        let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("ui panel"),
            size: wgpu::Extent3d {
                width: size[0],
                height: size[1],
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: EYE_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
            view_formats: &[],
        });
        let view = texture.create_view(&Default::default());
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("ui panel"),
            layout: &self.layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: wgpu::BindingResource::TextureView(&view),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: wgpu::BindingResource::Sampler(&self.sampler),
                },
            ],
        });
        Target {
            size,
            view,
            bind_group,
        }
    }
}
