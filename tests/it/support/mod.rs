//! Fixtures shared by the integration tests: a limb character and meshes
//! to import.

pub mod limb;
pub mod meshes;
