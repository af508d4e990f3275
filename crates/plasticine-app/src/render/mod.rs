//! Drawing the layered character in stereo with wgpu (WGSL in `shaders/`).
//!
//! The pipeline per frame: `geometry` turns an immutable
//! [`SceneSnapshot`](crate::snapshot::SceneSnapshot) into draw lists on the
//! CPU; [`Renderer`] uploads them and draws each eye into its layer of an
//! eye array texture (per-eye passes with MSAA), then lays the eyes out for
//! the display ([`StereoMode`]) and draws the overlay. `capture` reads
//! images back for tests and headless output.

mod capture;
mod context;
mod geometry;
mod heat;
mod morph;
mod overlay;
mod renderer;
mod scene_renderer;
mod sheet;
mod stereo;
mod ui_panel;

pub use capture::{OffscreenTarget, RgbaImage, read_buffer, read_texture_layer};
pub use context::{GpuContext, LiveObjects, backends_defaulted, instance_descriptor};
pub use renderer::{EYE_FORMAT, EyeCamera, FrameStats, Renderer, StereoPath};
pub use sheet::ContactSheet;

pub use geometry::{Cursor, Decorations, GeometryBuilder, MuscleStyle, SceneStyle};
pub use heat::SkinMap;
pub use morph::{MorphGpuError, MorphMeshGpu};
pub use scene_renderer::SceneRenderer;
pub use stereo::StereoMode;
pub use ui_panel::{UiFrame, UiQuad, UiTexture};

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
