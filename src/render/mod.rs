//! Drawing the layered character in stereo with wgpu (WGSL in `shaders/`).
//!
//! The pipeline per frame: [`geometry`] turns an immutable
//! [`SceneSnapshot`] into draw lists on the
//! CPU; [`Renderer`] uploads them and draws each eye into its layer of an
//! eye array texture (per-eye passes with MSAA), then lays the eyes out for
//! the display ([`StereoMode`]) and draws the overlay. [`capture`] reads
//! images back for tests and headless output.

pub mod capture;
pub mod context;
pub mod geometry;
pub mod heat;
pub mod overlay;
pub mod renderer;
pub mod sheet;
pub mod stereo;

pub use capture::{OffscreenTarget, RgbaImage};
pub use context::GpuContext;
pub use geometry::{Cursor, Decorations, GeometryBuilder, MuscleStyle, SceneStyle};
pub use heat::SkinMap;
pub use renderer::{EyeCamera, FrameStats, Renderer, StereoPath};
pub use stereo::StereoMode;

use crate::character::Posture;
use crate::snapshot::SceneSnapshot;
use std::time::Instant;

/// Why the GPU could not be set up, drawn with, or read back.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// No GPU adapter could be opened; the string is wgpu's reason.
    #[error(
        "no GPU adapter could be opened ({0}). On Debian, `apt-get install mesa-vulkan-drivers libvulkan1` \
         gives a software one (lavapipe); `cargo xtask demo` installs it"
    )]
    NoAdapter(String),
    /// Creating the GPU device, or waiting on it, failed.
    #[error("the GPU device failed: {0}")]
    Device(String),
    /// An image could not be read back from the GPU or written out.
    #[error("could not read the image back: {0}")]
    Capture(String),
    /// No window could be opened; the string says why.
    #[error("no window could be opened: {0}")]
    Window(String),
}

/// Geometry building and GPU drawing together: one call per frame.
pub struct SceneRenderer {
    /// Turns the scene snapshot into CPU draw lists, reusing its buffers.
    pub geometry: GeometryBuilder,
    /// Uploads the draw lists and draws the eyes, their stereo layout and the overlay.
    pub gpu: Renderer,
    /// What to draw (skin, wireframe, muscles, skeleton...), as the animator toggles it.
    pub style: SceneStyle,
}

impl SceneRenderer {
    /// A scene renderer drawing with `ctx` into targets of `output_format`.
    pub fn new(ctx: &GpuContext, output_format: wgpu::TextureFormat) -> Result<Self, RenderError> {
        Ok(Self {
            geometry: GeometryBuilder::new(),
            gpu: Renderer::new(ctx, output_format)?,
            style: SceneStyle::default(),
        })
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
        let t0 = Instant::now();
        let geometry = self
            .geometry
            .build_posed(snapshot, posture, &self.style, decorations);
        let bytes = self.gpu.upload(geometry);
        let build_upload = t0.elapsed();
        let mut stats = self.gpu.render(cameras, mode, eye_size, target, overlay);
        stats.upload += build_upload;
        stats.upload_bytes = bytes;
        stats
    }
}
