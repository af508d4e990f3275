//! Reading rendered images back to the CPU and writing them as PNG. This is
//! for tests, headless rendering and export, never the per-frame hot path.

use super::RenderError;
use crate::gpu::{GpuContext, GpuError, read_buffer};
use std::path::Path;

/// An 8-bit RGBA image, rows top to bottom, as stored (sRGB-encoded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RgbaImage {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// RGBA bytes, four per pixel, row by row with no padding.
    pub pixels: Vec<u8>,
}

impl RgbaImage {
    /// The RGBA bytes of the pixel at column `x`, row `y` (from the top); panics when
    /// out of range.
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = ((y * self.width + x) * 4) as usize;
        [
            self.pixels[i],
            self.pixels[i + 1],
            self.pixels[i + 2],
            self.pixels[i + 3],
        ]
    }

    /// PNG bytes of the image.
    pub fn to_png(&self) -> Result<Vec<u8>, RenderError> {
        let mut out = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut out, self.width, self.height);
            enc.set_color(png::ColorType::Rgba);
            enc.set_depth(png::BitDepth::Eight);
            enc.set_compression(png::Compression::Fast);
            let mut w = enc
                .write_header()
                .map_err(|e| RenderError::Capture(e.to_string()))?;
            w.write_image_data(&self.pixels)
                .map_err(|e| RenderError::Capture(e.to_string()))?;
        }
        Ok(out)
    }

    /// Writes the image as a PNG file, atomically.
    pub fn save_png(&self, path: &Path) -> Result<(), RenderError> {
        let bytes = self.to_png()?;
        crate::io::write_atomic(path, &bytes).map_err(|e| RenderError::Capture(e.to_string()))
    }
}

/// Copies one array layer of an RGBA8 texture to the CPU (blocking).
pub fn read_texture_layer(
    ctx: &GpuContext,
    texture: &wgpu::Texture,
    layer: u32,
    size: (u32, u32),
) -> Result<RgbaImage, RenderError> {
    let (w, h) = size;
    let unpadded = w * 4;
    let padded =
        unpadded.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("read-back"),
        size: (padded * h) as u64,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut encoder = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("read-back"),
        });
    encoder.copy_texture_to_buffer(
        wgpu::TexelCopyTextureInfo {
            texture,
            mip_level: 0,
            origin: wgpu::Origin3d {
                x: 0,
                y: 0,
                z: layer,
            },
            aspect: wgpu::TextureAspect::All,
        },
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(padded),
                rows_per_image: Some(h),
            },
        },
        wgpu::Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
    );
    ctx.queue.submit(Some(encoder.finish()));
    let bytes = read_buffer(ctx, &buffer, buffer.size()).map_err(|e| match e {
        GpuError::Readback(cause) => RenderError::Capture(cause),
        other => other.into(),
    })?;
    let mut pixels = Vec::with_capacity((unpadded * h) as usize);
    for row in 0..h {
        let at = (row * padded) as usize;
        pixels.extend_from_slice(&bytes[at..at + unpadded as usize]);
    }
    Ok(RgbaImage {
        width: w,
        height: h,
        pixels,
    })
}

/// A texture to render into with no window, and read back.
pub struct OffscreenTarget {
    /// The sRGB RGBA8 colour texture drawn into.
    pub texture: wgpu::Texture,
    /// A view of `texture`, to use as a render pass attachment.
    pub view: wgpu::TextureView,
    /// Width and height in pixels.
    pub size: (u32, u32),
}

impl OffscreenTarget {
    /// The texture format: 8-bit RGBA, sRGB-encoded.
    pub const FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8UnormSrgb;

    /// A new offscreen target of `size` (width, height) pixels that can be read back.
    pub fn new(ctx: &GpuContext, size: (u32, u32)) -> Self {
        let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("offscreen"),
            size: wgpu::Extent3d {
                width: size.0,
                height: size.1,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: Self::FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let view = texture.create_view(&Default::default());
        Self {
            texture,
            view,
            size,
        }
    }

    /// Reads the target's image back to the CPU (blocking until the GPU is done).
    pub fn read(&self, ctx: &GpuContext) -> Result<RgbaImage, RenderError> {
        read_texture_layer(ctx, &self.texture, 0, self.size)
    }
}
