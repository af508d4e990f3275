//! The in-world panel's pixels: an immediate-mode UI frame (egui's
//! tessellated shapes and textures, laid out by the front end), which the
//! renderer paints with egui-wgpu into a texture and draws on a quad
//! standing in the world, in both stereo paths (`renderer/ui.rs`).
//!
//! The frame carries its textures whole, each with a version, rather than
//! egui's per-frame deltas: a renderer that starts late (a headset session
//! after the desk), or a frame that is never drawn, cannot leave a patch of
//! the font atlas unapplied.

use glam::{Mat4, Vec2};
use std::sync::Arc;

/// One of the UI's textures (egui's font atlas, an image) whole, and a
/// version that changes whenever its pixels do.
#[derive(Clone)]
pub struct UiTexture {
    /// egui's name for it.
    pub id: egui::TextureId,
    /// Its pixels.
    pub image: Arc<egui::ColorImage>,
    /// Sampling options.
    pub options: egui::TextureOptions,
    /// Changes whenever the pixels do.
    pub version: u64,
}

/// A laid-out UI frame, ready to paint.
#[derive(Clone)]
pub struct UiFrame {
    /// The texture's size in pixels.
    pub size_px: [u32; 2],
    /// Pixels per egui point.
    pub pixels_per_point: f32,
    /// egui's tessellated shapes.
    pub primitives: Vec<egui::ClippedPrimitive>,
    /// Every texture the shapes use.
    pub textures: Vec<UiTexture>,
}

/// A UI frame standing in the world as a rectangle.
#[derive(Clone)]
pub struct UiQuad {
    /// Panel space → world: x to the right, y up, facing +z, the origin at
    /// the top-left corner; metres.
    pub to_world: Mat4,
    /// Width and height (metres in panel space).
    pub size: Vec2,
    /// What it shows.
    pub frame: Arc<UiFrame>,
}

impl std::fmt::Debug for UiQuad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UiQuad")
            .field("to_world", &self.to_world)
            .field("size", &self.size)
            .field("size_px", &self.frame.size_px)
            .field("primitives", &self.frame.primitives.len())
            .finish()
    }
}
