//! Plasticine: building and animating soft characters with the elastic surface
//! layer model (Turner & Gobbetti, LEMAN 1998).
//!
//! Data flows one way through the layers (LEMAN §3.2):
//! `anim` (key postures) → `kinematics` (skeleton pose, posed muscles) →
//! `fem` (flesh, optional: FEM, or `modal` vibration modes on it) → `skin`
//! (fat, connective tissue, elastic skin, simulated) → `snapshot` →
//! `render`; `io` reads and writes the files.
//!
//! Each module imports only from the ones below it in this order, and no
//! files import each other round a loop (`cargo xtask layers` checks it):
//! `bench` → `app` → `samples` → `tools`, `bake` → `skin` → `modal`,
//! `blendshape` → `fem` → `contact` → `xr` → `render`, `view` → `io` → `kinematics`,
//! `anim`, `snapshot` → `character` → `shape`, `input`, `skin_mesh`, `morph`.

// Numerical kernels index several parallel arrays by the same point index;
// iterator zips of four or five slices would read worse.
#![allow(
    clippy::needless_range_loop,
    reason = "numerical kernels index several parallel arrays by one point index"
)]

pub mod anim;
pub mod app;
pub mod bake;
pub mod bench;
pub mod blendshape;
pub mod character;
pub mod contact;
pub mod fem;
pub mod input;
pub mod io;
pub mod kinematics;
pub mod modal;
pub mod morph;
pub mod render;
pub mod samples;
pub mod shape;
pub mod skin;
pub mod skin_mesh;
pub mod snapshot;
pub mod tools;
pub mod view;
pub mod xr;
