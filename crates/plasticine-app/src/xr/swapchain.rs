//! The headset's colour swapchain: one `OpenXR` swapchain of two array
//! layers (layer 0 the left eye, 1 the right), its Vulkan images wrapped as
//! wgpu textures that wgpu never frees (the runtime owns them).
//!
//! The renderer draws each eye into its own eye texture at the swapchain's
//! size; [`EyeSwapchain::copy_eyes`] copies them into the acquired image's
//! layers. `OpenXR` hands an acquired colour image over in
//! `COLOR_ATTACHMENT_OPTIMAL` and wants it back in that layout at release,
//! so every image is tracked by wgpu as a colour target (its initial state)
//! and transitioned back to one after the copy (and after a read-back).

use super::error::{XrError, call};
use crate::gpu::GpuContext;
use crate::render::read_texture_layer;
use crate::render::{RenderError, RgbaImage};
use ash::vk;
use ash::vk::Handle;
use openxr as xr;
use std::time::Duration;

/// Why the eye images could not go to (or come back from) the swapchain.
#[derive(Debug, thiserror::Error)]
pub enum SwapchainError {
    /// The session has no swapchain (it has not begun rendering).
    #[error("no swapchain")]
    NoSwapchain,
    /// No image of the swapchain is acquired for this frame.
    #[error("no swapchain image is acquired")]
    NotAcquired,
    /// Reading a layer back failed (tests).
    #[error(transparent)]
    Read(#[from] RenderError),
}
use wgpu::hal;
use wgpu::hal::api::Vulkan as HalVulkan;

/// The swapchain formats we can fill, best first: the eye images are
/// `Rgba8UnormSrgb`, and a copy needs the same texel layout. An sRGB
/// format is what the compositor should get; plain UNORM (copy-compatible)
/// shows the sRGB-encoded values as if linear, too bright, but still works.
pub const FORMATS: &[(vk::Format, wgpu::TextureFormat)] = &[
    (
        vk::Format::R8G8B8A8_SRGB,
        wgpu::TextureFormat::Rgba8UnormSrgb,
    ),
    (vk::Format::R8G8B8A8_UNORM, wgpu::TextureFormat::Rgba8Unorm),
];

/// The first of [`FORMATS`] that the runtime offers (`offered` as
/// `xrEnumerateSwapchainFormats` lists them, Vulkan format numbers).
pub fn pick_format(offered: &[u32]) -> Option<(vk::Format, wgpu::TextureFormat)> {
    FORMATS
        .iter()
        .copied()
        .find(|(vkf, _)| offered.contains(&(vkf.as_raw() as u32)))
}

/// One array swapchain for both eyes.
pub struct EyeSwapchain {
    // Field order is drop order: the wgpu textures before the swapchain
    // that owns their images.
    images: Vec<wgpu::Texture>,
    swapchain: xr::Swapchain<xr::Vulkan>,
    size: (u32, u32),
    format: wgpu::TextureFormat,
    acquired: Option<usize>,
}

impl std::fmt::Debug for EyeSwapchain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EyeSwapchain")
            .field("size", &self.size)
            .field("format", &self.format)
            .field("images", &self.images.len())
            .field("acquired", &self.acquired)
            .finish()
    }
}

impl EyeSwapchain {
    /// Creates the swapchain (`size` per eye) in the best format the
    /// runtime offers and wraps its images for `ctx`.
    pub fn new(
        session: &xr::Session<xr::Vulkan>,
        ctx: &GpuContext,
        size: (u32, u32),
    ) -> Result<Self, XrError> {
        let offered = session
            .enumerate_swapchain_formats()
            .map_err(call("xrEnumerateSwapchainFormats"))?;
        let (vk_format, format) = pick_format(&offered).ok_or_else(|| XrError::Graphics {
            detail: format!(
                "the runtime offers no RGBA8 swapchain format (it offers Vulkan formats {offered:?})"
            ),
        })?;
        if !format.is_srgb() {
            tracing::warn!(
                "the runtime offers no sRGB swapchain format: colours will look too bright"
            );
        }
        let swapchain = session
            .create_swapchain(&xr::SwapchainCreateInfo {
                create_flags: xr::SwapchainCreateFlags::EMPTY,
                usage_flags: xr::SwapchainUsageFlags::COLOR_ATTACHMENT
                    | xr::SwapchainUsageFlags::TRANSFER_DST
                    | xr::SwapchainUsageFlags::TRANSFER_SRC,
                format: vk_format.as_raw() as u32,
                sample_count: 1,
                width: size.0,
                height: size.1,
                face_count: 1,
                array_size: 2,
                mip_count: 1,
            })
            .map_err(call("xrCreateSwapchain"))?;
        let raw_images = swapchain
            .enumerate_images()
            .map_err(call("xrEnumerateSwapchainImages"))?;
        let extent = wgpu::Extent3d {
            width: size.0,
            height: size.1,
            depth_or_array_layers: 2,
        };
        let usage = wgpu::TextureUsages::RENDER_ATTACHMENT
            | wgpu::TextureUsages::COPY_DST
            | wgpu::TextureUsages::COPY_SRC;
        let hal_usage = wgpu::TextureUses::COLOR_TARGET
            | wgpu::TextureUses::COPY_DST
            | wgpu::TextureUses::COPY_SRC;
        let mut images = Vec::with_capacity(raw_images.len());
        for (k, &raw) in raw_images.iter().enumerate() {
            let label = format!("swapchain image {k}");
            let hal_desc = hal::TextureDescriptor {
                label: Some(&label),
                size: extent,
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format,
                usage: hal_usage,
                memory_flags: hal::MemoryFlags::empty(),
                view_formats: vec![],
            };
            // SAFETY: the device is a Vulkan device (the headset's context
            // is made from one in `vulkan::create_gpu`).
            let hal_device =
                unsafe { ctx.device.as_hal::<HalVulkan>() }.ok_or_else(|| XrError::Graphics {
                    detail: "the headset's wgpu device is not a Vulkan device".into(),
                })?;
            // SAFETY: `raw` is an image of this swapchain, made by the runtime
            // on this device as `hal_desc` says (size, layers, format, usage).
            // The empty drop callback tells wgpu-hal it does not own the image,
            // and External that it does not own its memory: the runtime frees
            // both with the swapchain, which outlives these textures.
            let hal_texture = unsafe {
                hal_device.texture_from_raw(
                    vk::Image::from_raw(raw),
                    &hal_desc,
                    Some(Box::new(|| {})),
                    hal::vulkan::TextureMemory::External,
                )
            };
            drop(hal_device);
            // SAFETY: as above; an acquired colour image is handed over in
            // COLOR_ATTACHMENT_OPTIMAL, which is wgpu's COLOR_TARGET state,
            // and is always given back in it (`copy_eyes`, `read_layer`).
            let texture = unsafe {
                ctx.device.create_texture_from_hal::<HalVulkan>(
                    hal_texture,
                    &wgpu::TextureDescriptor {
                        label: Some(&label),
                        size: extent,
                        mip_level_count: 1,
                        sample_count: 1,
                        dimension: wgpu::TextureDimension::D2,
                        format,
                        usage,
                        view_formats: &[],
                    },
                    wgpu::TextureUses::COLOR_TARGET,
                )
            };
            images.push(texture);
        }
        tracing::info!(
            "OpenXR swapchain: {}x{} x 2 layers, {format:?}, {} images",
            size.0,
            size.1,
            images.len()
        );
        Ok(Self {
            images,
            swapchain,
            size,
            format,
            acquired: None,
        })
    }

    /// Each eye's image size.
    pub fn size(&self) -> (u32, u32) {
        self.size
    }

    /// The format of the swapchain images, as wgpu names it.
    pub fn format(&self) -> wgpu::TextureFormat {
        self.format
    }

    /// The `OpenXR` swapchain itself.
    pub fn swapchain(&self) -> &xr::Swapchain<xr::Vulkan> {
        &self.swapchain
    }

    /// Whether an image is acquired (between [`acquire`](Self::acquire)
    /// and [`release`](Self::release)).
    pub fn is_acquired(&self) -> bool {
        self.acquired.is_some()
    }

    /// Acquires the next image and waits (at most `timeout`) until it can
    /// be written. Acquiring again before a release returns the same image.
    pub fn acquire(&mut self, timeout: Duration) -> Result<usize, XrError> {
        if let Some(k) = self.acquired {
            return Ok(k);
        }
        let k = self
            .swapchain
            .acquire_image()
            .map_err(call("xrAcquireSwapchainImage"))? as usize;
        self.acquired = Some(k);
        match self.swapchain.wait_image(xr::Duration::from_nanos(
            timeout.as_nanos().min(i64::MAX as u128) as i64,
        )) {
            Ok(()) => Ok(k),
            Err(xr::sys::Result::TIMEOUT_EXPIRED) => Err(XrError::Call {
                call: "xrWaitSwapchainImage (timed out)",
                result: xr::sys::Result::TIMEOUT_EXPIRED,
            }),
            Err(r) => Err(XrError::call("xrWaitSwapchainImage", r)),
        }
    }

    /// The acquired image.
    pub fn acquired_texture(&self) -> Option<&wgpu::Texture> {
        self.acquired.map(|k| &self.images[k])
    }

    /// Copies `eyes` (left, right: single-layer textures of this
    /// swapchain's size and a copy-compatible format) into the acquired
    /// image's layers 0 and 1, and hands the image back to the colour
    /// target layout. Submits.
    pub fn copy_eyes(
        &self,
        ctx: &GpuContext,
        eyes: [&wgpu::Texture; 2],
    ) -> Result<(), SwapchainError> {
        let target = self.acquired_texture().ok_or(SwapchainError::NotAcquired)?;
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("eyes to swapchain"),
            });
        for (layer, eye) in eyes.into_iter().enumerate() {
            encoder.copy_texture_to_texture(
                wgpu::TexelCopyTextureInfo {
                    texture: eye,
                    mip_level: 0,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::TexelCopyTextureInfo {
                    texture: target,
                    mip_level: 0,
                    origin: wgpu::Origin3d {
                        x: 0,
                        y: 0,
                        z: layer as u32,
                    },
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::Extent3d {
                    width: self.size.0,
                    height: self.size.1,
                    depth_or_array_layers: 1,
                },
            );
        }
        to_color_target(&mut encoder, target);
        ctx.queue.submit(Some(encoder.finish()));
        Ok(())
    }

    /// Reads one layer of the acquired image back (blocking: tests and
    /// screenshots), leaving the image in the colour target layout.
    pub fn read_layer(&self, ctx: &GpuContext, layer: u32) -> Result<RgbaImage, RenderError> {
        let target = self
            .acquired_texture()
            .ok_or_else(|| RenderError::Capture("no swapchain image is acquired".into()))?;
        let image = read_texture_layer(ctx, target, layer, self.size);
        let mut encoder = ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("swapchain image back to colour target"),
            });
        to_color_target(&mut encoder, target);
        ctx.queue.submit(Some(encoder.finish()));
        image
    }

    /// Releases the acquired image to the compositor (its GPU work must be
    /// submitted on the session's queue: it is, as wgpu submits there).
    pub fn release(&mut self) -> Result<(), XrError> {
        if self.acquired.take().is_some() {
            self.swapchain
                .release_image()
                .map_err(call("xrReleaseSwapchainImage"))?;
        }
        Ok(())
    }
}

/// Records the transition of all of `texture` to wgpu's colour target state
/// (Vulkan's `COLOR_ATTACHMENT_OPTIMAL`).
fn to_color_target(encoder: &mut wgpu::CommandEncoder, texture: &wgpu::Texture) {
    encoder.transition_resources(
        std::iter::empty(),
        std::iter::once(wgpu::TextureTransition {
            texture,
            selector: None,
            state: wgpu::TextureUses::COLOR_TARGET,
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn srgb_rgba_is_preferred_and_bgra_alone_is_refused() {
        let srgb = vk::Format::R8G8B8A8_SRGB.as_raw() as u32;
        let unorm = vk::Format::R8G8B8A8_UNORM.as_raw() as u32;
        let bgra = vk::Format::B8G8R8A8_SRGB.as_raw() as u32;
        assert_eq!(
            pick_format(&[bgra, unorm, srgb]).map(|f| f.1),
            Some(wgpu::TextureFormat::Rgba8UnormSrgb)
        );
        assert_eq!(
            pick_format(&[bgra, unorm]).map(|f| f.1),
            Some(wgpu::TextureFormat::Rgba8Unorm)
        );
        assert_eq!(pick_format(&[bgra]), None);
        // Every format we offer is copy-compatible with the eye images.
        for (_, f) in FORMATS {
            assert_eq!(
                f.remove_srgb_suffix(),
                crate::render::EYE_FORMAT.remove_srgb_suffix()
            );
        }
    }
}
