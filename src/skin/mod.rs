//! The elastic skin simulation (LEMAN §4): forces, integrators, constraints,
//! resampling and the driver that advances a character's skins in time.

pub mod body;
pub mod elastic;
pub mod integrate;
