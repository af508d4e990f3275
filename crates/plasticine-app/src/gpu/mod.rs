//! The GPU itself: the wgpu instance, adapter, device and queue
//! ([`GpuContext`]), and reading buffers back. Below everything that draws or
//! computes on it: the renderer (`render`) and the FEM's GPU back end
//! (`fem_gpu`) share one context.

mod context;
mod readback;

pub use context::{
    AdapterSummary, GpuContext, LiveObjects, backends_defaulted, instance_descriptor,
};
pub use readback::read_buffer;

/// Why the GPU could not be set up, waited on, or read back.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No GPU adapter could be opened; the string is wgpu's reason.
    #[error(
        "no GPU adapter could be opened ({0}). On Debian, `apt-get install mesa-vulkan-drivers libvulkan1` \
         gives a software one (lavapipe); `cargo xtask demo` installs it"
    )]
    NoAdapter(String),
    /// Creating the GPU device, or waiting on it, failed.
    #[error("the GPU device failed: {0}")]
    Device(String),
    /// A buffer could not be read back from the GPU.
    #[error("could not read a buffer back from the GPU: {0}")]
    Readback(String),
}
