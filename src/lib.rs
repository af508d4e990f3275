//! Plasticine: building and animating soft characters with the elastic surface
//! layer model (Turner & Gobbetti, LEMAN 1998).
//!
//! Data flows one way through the layers (LEMAN §3.2):
//! `anim` (key postures) → `kinematics` (skeleton pose, posed muscles) →
//! `fem` (flesh, optional: FEM, or `modal` vibration modes on it) → `skin`
//! (fat, connective tissue, elastic skin, simulated) → `snapshot` →
//! `render`; `io` reads and writes the files.
//!
//! Three crates: `plasticine-core` (the character, its simulation and files:
//! no GPU, window or headset), `plasticine-app` (the GPU, the renderer, the
//! headset, desk and headless front ends) and this one (the command line and
//! its benchmarks). This crate re-exports every module of both, so
//! `plasticine::skin` and `plasticine::app` name the same modules as before.
//!
//! Each module imports only from the ones below it in this order, and no
//! files import each other round a loop (`cargo xtask layers` checks it):
//! `cli` → `app` → `fem_gpu` → `samples` → `tools`, `bake` → `skin` →
//! `modal`, `blendshape` → `fem` → `contact` → `xr` → `render`, `view` →
//! `io` → `kinematics`, `anim`, `snapshot` → `character` → `shape`, `input`,
//! `gpu`, `skin_mesh`, `morph`.

// Numerical kernels index several parallel arrays by the same point index;
// iterator zips of four or five slices would read worse.
#![allow(
    clippy::needless_range_loop,
    reason = "numerical kernels index several parallel arrays by one point index"
)]

pub use plasticine_app::{
    anim, app, bake, blendshape, character, contact, fem, fem_gpu, gpu, input, io, kinematics,
    modal, morph, render, samples, shape, skin, skin_mesh, snapshot, tools, view, xr,
};

pub mod cli;
