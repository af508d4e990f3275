//! Plasticine's front ends: the GPU (rendering, the FEM's GPU back end), the
//! headset (`OpenXR` over Vulkan), the desk window and the headless renderer,
//! over the core (`plasticine-core`, re-exported here module by module, so
//! `crate::skin` reads the same in both crates).
//!
//! Each module imports only from the ones below it in this order, and no
//! files import each other round a loop (`cargo xtask layers` checks it):
//! `app` → `fem_gpu` → (the core's `samples` … `contact`) → `xr` →
//! `render`, `view` → (the core's `io` …) → `gpu`. The core imports nothing
//! from this crate.

// Numerical kernels index several parallel arrays by the same point index;
// iterator zips of four or five slices would read worse.
#![allow(
    clippy::needless_range_loop,
    reason = "numerical kernels index several parallel arrays by one point index"
)]

pub use plasticine_core::{
    anim, bake, blendshape, character, contact, fem, input, io, kinematics, modal, morph, samples,
    shape, skin, skin_mesh, snapshot, tools,
};

pub mod app;
pub mod fem_gpu;
pub mod gpu;
pub mod render;
pub mod view;
pub mod xr;
