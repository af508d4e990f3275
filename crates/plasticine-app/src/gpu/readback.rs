//! Reading a GPU buffer back to the CPU.

use super::{GpuContext, GpuError};

/// The first `bytes` of a `MAP_READ` buffer, once the GPU has finished the
/// work submitted before (waits for it); the buffer is unmapped again.
pub fn read_buffer(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    bytes: u64,
) -> Result<Vec<u8>, GpuError> {
    let (tx, rx) = std::sync::mpsc::channel();
    buffer.map_async(wgpu::MapMode::Read, 0..bytes, move |r| {
        let _ = tx.send(r);
    });
    ctx.wait_idle()?;
    rx.recv()
        .map_err(|e| GpuError::Readback(e.to_string()))?
        .map_err(|e| GpuError::Readback(e.to_string()))?;
    let out = buffer
        .get_mapped_range(0..bytes)
        .map_err(|e| GpuError::Readback(format!("{e:?}")))?
        .to_vec();
    buffer.unmap();
    Ok(out)
}
