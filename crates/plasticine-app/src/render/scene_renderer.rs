//! [`SceneRenderer`]: one call per frame that builds the snapshot's draw
//! lists, poses the flesh's morph mesh on the GPU where it can, and draws.

use super::RenderError;
use super::geometry::{self, Decorations, GeometryBuilder, SceneStyle};
use super::morph::{MorphGpuError, MorphMeshGpu};
use super::renderer::{EyeCamera, FrameStats, MorphDraw, Renderer};
use super::stereo::StereoMode;
use crate::character::Posture;
use crate::gpu::GpuContext;
use crate::morph::MorphMesh;
use crate::snapshot::SceneSnapshot;
use std::sync::Arc;
use std::time::Instant;

/// Geometry building and GPU drawing together: one call per frame.
pub struct SceneRenderer {
    /// Turns the scene snapshot into CPU draw lists, reusing its buffers.
    pub geometry: GeometryBuilder,
    /// Uploads the draw lists and draws the eyes, their stereo layout and the overlay.
    pub gpu: Renderer,
    /// What to draw (skin, wireframe, muscles, skeleton...), as the animator toggles it.
    pub style: SceneStyle,
    /// Whether the flesh's morph mesh is posed on the GPU where the device
    /// can (the default); false poses it on the CPU, as a device without
    /// compute shaders does.
    pub morph_on_gpu: bool,
    /// The flesh's morph mesh on the GPU, built when a snapshot first shows
    /// it (or why it cannot be, and the CPU poses it).
    morph: Option<MorphCache>,
    /// One builder per other character drawn with the snapshot
    /// ([`draw_among`](Self::draw_among)).
    company: Vec<GeometryBuilder>,
}

/// A morph mesh's GPU side, kept while the snapshots show the same mesh.
struct MorphCache {
    mesh: Arc<MorphMesh>,
    gpu: Result<MorphMeshGpu, MorphGpuError>,
}

impl SceneRenderer {
    /// A scene renderer drawing with `ctx` into targets of `output_format`.
    pub fn new(ctx: &GpuContext, output_format: wgpu::TextureFormat) -> Result<Self, RenderError> {
        Ok(Self::with_renderer(Renderer::new(ctx, output_format)?))
    }

    /// A scene renderer drawing with `gpu` (one made for a chosen stereo
    /// path, say), in the default style.
    pub fn with_renderer(gpu: Renderer) -> Self {
        Self {
            geometry: GeometryBuilder::new(),
            gpu,
            style: SceneStyle::default(),
            morph_on_gpu: true,
            morph: None,
            company: Vec::new(),
        }
    }

    /// Builds, uploads and draws one stereo frame of `snapshot`.
    #[allow(
        clippy::too_many_arguments,
        reason = "one frame's scene, eyes, overlay and target, as the renderer takes them"
    )]
    pub fn draw(
        &mut self,
        snapshot: &SceneSnapshot,
        decorations: &Decorations,
        cameras: &[EyeCamera; 2],
        mode: StereoMode,
        eye_size: (u32, u32),
        target: Option<(&wgpu::TextureView, (u32, u32))>,
        overlay: &[String],
    ) -> FrameStats {
        self.draw_posed(
            snapshot,
            None,
            decorations,
            cameras,
            mode,
            eye_size,
            target,
            overlay,
        )
    }

    /// As [`draw`](Self::draw), with the skeleton and muscles at `posture`.
    #[allow(
        clippy::too_many_arguments,
        reason = "one frame's scene, eyes, overlay and target, as the renderer takes them"
    )]
    pub fn draw_posed(
        &mut self,
        snapshot: &SceneSnapshot,
        posture: Option<&Posture>,
        decorations: &Decorations,
        cameras: &[EyeCamera; 2],
        mode: StereoMode,
        eye_size: (u32, u32),
        target: Option<(&wgpu::TextureView, (u32, u32))>,
        overlay: &[String],
    ) -> FrameStats {
        self.draw_among(
            (snapshot, posture, &[]),
            decorations,
            cameras,
            mode,
            eye_size,
            target,
            overlay,
        )
    }

    /// As [`draw_posed`](Self::draw_posed), with other characters of the
    /// scene drawn too (`others`: their skins, muscles and skeletons as the
    /// style says, on the snapshot's floor; their meshes posed on the CPU).
    #[allow(
        clippy::too_many_arguments,
        reason = "one frame's scene, eyes, overlay and target, as the renderer takes them"
    )]
    pub fn draw_among(
        &mut self,
        (snapshot, posture, others): (&SceneSnapshot, Option<&Posture>, &[&SceneSnapshot]),
        decorations: &Decorations,
        cameras: &[EyeCamera; 2],
        mode: StereoMode,
        eye_size: (u32, u32),
        target: Option<(&wgpu::TextureView, (u32, u32))>,
        overlay: &[String],
    ) -> FrameStats {
        let t0 = Instant::now();
        let morph_bytes = self.pose_morph(snapshot);
        self.geometry.morph_on_gpu = morph_bytes.is_some();
        self.geometry
            .build_posed(snapshot, posture, &self.style, decorations);
        if !others.is_empty() {
            self.company.resize_with(others.len(), GeometryBuilder::new);
            // One floor: the snapshot's.
            let style = SceneStyle {
                floor: false,
                ..self.style
            };
            let mine = &mut self.geometry.geometry;
            for (builder, other) in self.company.iter_mut().zip(others) {
                let g = builder.build_posed(other, None, &style, &Decorations::default());
                mine.opaque.append(&g.opaque);
                mine.lines.append(&g.lines);
                mine.translucent.append(&g.translucent);
            }
        }
        let bytes = self.gpu.upload(&self.geometry.geometry)
            + morph_bytes.unwrap_or(0)
            + self.gpu.set_ui(decorations.ui.as_ref());
        let build_upload = t0.elapsed();
        // A heat map's colours are explained under the overlay's lines.
        self.gpu
            .set_legend_bar(self.style.map.bar(self.style.fat_map_max));
        let mut stats = self.gpu.render(cameras, mode, eye_size, target, overlay);
        stats.upload += build_upload;
        stats.upload_bytes = bytes;
        stats
    }

    /// Why the flesh's morph mesh is posed on the CPU instead of the GPU
    /// (None when the GPU poses it, or there is none).
    pub fn morph_on_cpu(&self) -> Option<String> {
        match &self.morph {
            Some(MorphCache { gpu: Err(e), .. }) => Some(e.to_string()),
            _ => None,
        }
    }

    /// Poses the snapshot's morph mesh on the GPU (one compute pass,
    /// submitted before the frame's passes) and hands it to the renderer;
    /// the bytes uploaded, or None when the CPU draws it (or nothing does).
    fn pose_morph(&mut self, snapshot: &SceneSnapshot) -> Option<u64> {
        let frame = snapshot
            .flesh
            .as_ref()
            .and_then(|f| f.morph.as_ref())
            .filter(|f| f.fits());
        let color = geometry::flesh_mesh_color(&self.style).filter(|_| self.morph_on_gpu);
        let (Some(frame), Some(color)) = (frame, color) else {
            self.gpu.set_morph(None);
            return None;
        };
        let fresh = matches!(&self.morph, Some(c) if Arc::ptr_eq(&c.mesh, &frame.mesh));
        if !fresh {
            let gpu = MorphMeshGpu::new(self.gpu.context(), &frame.mesh, frame.joints.len());
            if let Err(e) = &gpu {
                tracing::warn!("the flesh's mesh is posed on the CPU: {e}");
            }
            self.morph = Some(MorphCache {
                mesh: frame.mesh.clone(),
                gpu,
            });
        }
        let Some(MorphCache { gpu: Ok(mesh), .. }) = &self.morph else {
            self.gpu.set_morph(None);
            return None;
        };
        let ctx = self.gpu.context();
        let bytes = mesh.set_frame(ctx, &frame.joints, &frame.weights);
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("morph pose"),
            });
        mesh.encode(&mut encoder);
        ctx.queue.submit(Some(encoder.finish()));
        let (indices, index_count) = mesh.triangles();
        let draw = MorphDraw {
            vertices: mesh.posed().clone(),
            indices: indices.clone(),
            index_count,
            color,
        };
        self.gpu.set_morph(Some(draw));
        Some(bytes)
    }
}
