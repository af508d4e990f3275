//! The elastic skin simulation (LEMAN §4): forces, integrators, constraints,
//! resampling and the driver that advances a character's skins in time.

pub mod constraints;
pub mod contact;
pub mod driver;
pub mod elastic;
pub mod flesh;
pub mod integrate;
mod layout;
pub mod quality;
mod settings;
pub mod simulation;
pub mod stability;
mod stepper;
pub mod system;

pub use driver::SkeletonDriver;
pub use integrate::{EvalCount, IntegratorKind, IntegratorState, Tolerances};
pub use simulation::{
    AdvanceReport, SimError, SimEvent, SimState, Simulation, SkinState, SkinStats, SolverSettings,
};
pub mod attach;
