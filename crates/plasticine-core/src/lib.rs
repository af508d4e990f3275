//! Plasticine's core: the character, its simulation and its files, without
//! a GPU, a window or a headset (no wgpu, winit, `OpenXR` or Vulkan here, so
//! the physics tests link without them).
//!
//! Data flows one way through the layers (LEMAN §3.2):
//! `anim` (key postures) → `kinematics` (skeleton pose, posed muscles) →
//! `fem` (flesh, optional: FEM, or `modal` vibration modes on it) → `skin`
//! (fat, connective tissue, elastic skin, simulated) → `snapshot`; `io`
//! reads and writes the files, `bake` runs a simulation to a cache.
//!
//! Each module imports only from the ones below it in this order, and no
//! files import each other round a loop (`cargo xtask layers` checks it):
//! `samples` → `tools`, `bake` → `skin` → `modal`, `blendshape` → `fem` →
//! `contact` → `io` → `kinematics`, `anim`, `snapshot` → `character` →
//! `shape`, `input`, `skin_mesh`, `morph`.

// Numerical kernels index several parallel arrays by the same point index;
// iterator zips of four or five slices would read worse.
#![allow(
    clippy::needless_range_loop,
    reason = "numerical kernels index several parallel arrays by one point index"
)]

pub mod anim;
pub mod bake;
pub mod blendshape;
pub mod character;
pub mod contact;
pub mod fem;
pub mod input;
pub mod io;
pub mod kinematics;
pub mod modal;
pub mod morph;
pub mod samples;
pub mod shape;
pub mod skin;
pub mod skin_mesh;
pub mod snapshot;
pub mod tools;
