//! The single-pass stereo path: both eyes drawn at once into the two layers
//! of array attachments (`multiview`), then copied into the eye textures.

use super::scene::{
    DEPTH_FORMAT, EYE_FORMAT, GpuList, SceneExtras, ScenePipelines, begin_scene_pass,
    camera_layout, draw_scene, scene_pipelines,
};
use crate::gpu::GpuContext;
use std::num::NonZeroU32;

/// The single-pass path: both eyes as the two layers of array attachments.
pub(super) struct Multiview {
    pub(super) pipelines: ScenePipelines,
    pub(super) camera_buffer: wgpu::Buffer,
    pub(super) bind_group: wgpu::BindGroup,
    pub(super) samples: u32,
    pub(super) targets: Option<MultiviewTargets>,
}

pub(super) struct MultiviewTargets {
    pub(super) size: (u32, u32),
    pub(super) color: wgpu::TextureView,
    /// Single-sampled layers the eyes are copied from (the resolve target
    /// with MSAA, else the colour attachment itself).
    pub(super) resolved: wgpu::Texture,
    pub(super) resolve: Option<wgpu::TextureView>,
    pub(super) depth: wgpu::TextureView,
}

/// Records both eyes in one multiview pass into `mv`'s array targets, then
/// copies each layer into its eye's texture in `eye_textures` (the compose pass and
/// read-back take the eyes as separate images).
pub(super) fn record_multiview_eyes(
    encoder: &mut wgpu::CommandEncoder,
    mv: &Multiview,
    eye_textures: &[wgpu::Texture; 2],
    lists: &[GpuList; 3],
    extras: SceneExtras,
) {
    let t = mv
        .targets
        .as_ref()
        .expect("multiview targets ensured by the caller");
    {
        let mut pass = begin_scene_pass(
            encoder,
            "both eyes (multiview)",
            (&t.color, t.resolve.as_ref()),
            &t.depth,
            NonZeroU32::new(0b11),
        );
        pass.set_bind_group(0, &mv.bind_group, &[]);
        draw_scene(&mut pass, &mv.pipelines, lists, extras);
    }
    // The compose pass and read-back take the eyes as separate images.
    for (eye, texture) in eye_textures.iter().enumerate() {
        encoder.copy_texture_to_texture(
            wgpu::TexelCopyTextureInfo {
                texture: &t.resolved,
                mip_level: 0,
                origin: wgpu::Origin3d {
                    x: 0,
                    y: 0,
                    z: eye as u32,
                },
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::TexelCopyTextureInfo {
                texture,
                mip_level: 0,
                origin: wgpu::Origin3d::ZERO,
                aspect: wgpu::TextureAspect::All,
            },
            wgpu::Extent3d {
                width: t.size.0,
                height: t.size.1,
                depth_or_array_layers: 1,
            },
        );
    }
}

impl Multiview {
    pub(super) fn new(ctx: &GpuContext, samples: u32, panel: &wgpu::BindGroupLayout) -> Self {
        // Both eyes' cameras, indexed by the view.
        let layout = camera_layout(ctx, "cameras (multiview)", 160, false);
        let camera_buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("cameras (multiview)"),
            size: 160,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("cameras (multiview)"),
            layout: &layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: camera_buffer.as_entire_binding(),
            }],
        });
        Self {
            pipelines: scene_pipelines(ctx, (&layout, panel), samples, NonZeroU32::new(0b11)),
            camera_buffer,
            bind_group,
            samples,
            targets: None,
        }
    }

    pub(super) fn ensure_targets(&mut self, ctx: &GpuContext, size: (u32, u32)) {
        if self.targets.as_ref().is_some_and(|t| t.size == size) {
            return;
        }
        let make = |label, format, samples, usage| {
            ctx.device.create_texture(&wgpu::TextureDescriptor {
                label: Some(label),
                size: wgpu::Extent3d {
                    width: size.0,
                    height: size.1,
                    depth_or_array_layers: 2,
                },
                mip_level_count: 1,
                sample_count: samples,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage,
                view_formats: &[],
            })
        };
        let array = |t: &wgpu::Texture| {
            t.create_view(&wgpu::TextureViewDescriptor {
                dimension: Some(wgpu::TextureViewDimension::D2Array),
                ..Default::default()
            })
        };
        let attach = wgpu::TextureUsages::RENDER_ATTACHMENT;
        let single = make(
            "eyes (multiview)",
            EYE_FORMAT,
            1,
            attach | wgpu::TextureUsages::COPY_SRC,
        );
        let (color, resolve) = if self.samples > 1 {
            let msaa = make("eyes msaa (multiview)", EYE_FORMAT, self.samples, attach);
            (array(&msaa), Some(array(&single)))
        } else {
            (array(&single), None)
        };
        let depth = make("eye depth (multiview)", DEPTH_FORMAT, self.samples, attach);
        self.targets = Some(MultiviewTargets {
            size,
            color,
            resolve,
            depth: array(&depth),
            resolved: single,
        });
    }
}
