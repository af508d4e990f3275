//! Why a frame was not drawn: the renderer's reason ([`RenderFailure`]),
//! and the frame loop's error that carries it ([`FrameError`]).

/// Why a renderer did not draw a frame.
#[derive(Debug, thiserror::Error)]
pub enum RenderFailure {
    /// The window's surface was lost or out of date; it is reconfigured for the next frame.
    #[error("the window surface was out of date; reconfigured")]
    SurfaceOutdated,
    /// The window gave no image this frame (its status, as wgpu names it).
    #[error("no surface image this frame: {0}")]
    NoSurfaceImage(String),
    /// The `OpenXR` frame could not begin.
    #[error(transparent)]
    Xr(#[from] crate::xr::XrError),
    /// The runtime located no views to draw.
    #[error("no views were located for this frame")]
    NoViews,
    /// The scene renderer made no eye images to hand over.
    #[error("the renderer drew no eye images")]
    NoEyeImages,
    /// The eye images could not reach the headset's swapchain.
    #[error(transparent)]
    Swapchain(#[from] crate::xr::SwapchainError),
}

/// The renderer refused a frame (e.g. a lost surface); the edits of that
/// frame were made and sent.
#[derive(Debug, thiserror::Error)]
#[error("frame {frame_index} was not rendered: {reason}")]
pub struct FrameError {
    /// The frame that was not rendered.
    pub frame_index: u64,
    /// The renderer's reason.
    #[source]
    pub reason: RenderFailure,
}
