//! Drawing the layered character in stereo with wgpu (WGSL in `shaders/`).
//!
//! The pipeline per frame: `geometry` turns an immutable
//! [`SceneSnapshot`](crate::snapshot::SceneSnapshot) into draw lists on the
//! CPU; [`Renderer`] uploads them and draws each eye into its layer of an
//! eye array texture (per-eye passes with MSAA), then lays the eyes out for
//! the display ([`StereoMode`]) and draws the overlay. `capture` reads
//! images back for tests and headless output.

mod capture;
mod geometry;
mod heat;
mod morph;
mod overlay;
mod renderer;
mod scene_renderer;
mod sheet;
mod stereo;
mod ui_panel;

pub use capture::{OffscreenTarget, RgbaImage, read_texture_layer};
pub use renderer::{EYE_FORMAT, EyeCamera, FrameStats, Renderer, StereoPath};
pub use sheet::ContactSheet;

pub use geometry::{Cursor, Decorations, GeometryBuilder, MuscleStyle, SceneStyle};
pub use heat::{CONTACT_REACH, SkinMap, skin_contact};
pub use morph::{MorphGpuError, MorphMeshGpu};
pub use scene_renderer::SceneRenderer;
pub use stereo::StereoMode;
pub use ui_panel::{UiFrame, UiQuad, UiTexture};

/// Why the GPU could not be set up, drawn with, or read back.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    /// The GPU could not be set up or waited on.
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
    /// An image could not be read back from the GPU or written out.
    #[error("could not read the image back: {0}")]
    Capture(String),
    /// No window could be opened; the string says why.
    #[error("no window could be opened: {0}")]
    Window(String),
}
