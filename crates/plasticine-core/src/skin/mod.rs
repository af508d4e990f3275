//! The elastic skin simulation (LEMAN §4): forces, integrators, constraints,
//! resampling and the driver that advances a character's skins in time.

mod carry;
mod constraints;
mod contact;
mod driver;
mod elastic;
mod flesh;
mod integrate;
mod layout;
mod quality;
mod settings;
mod simulation;
mod stability;
mod stepper;
mod system;

pub use driver::SkeletonDriver;
pub use integrate::{EvalCount, IntegratorKind, IntegratorState, SecondOrderSystem, Tolerances};
pub use simulation::{
    AdvanceReport, SimError, SimEvent, SimState, Simulation, SkinState, SkinStats, SolverSettings,
};
mod attach;
mod blend;

pub use attach::{global_attach, rest_in_place, wrap_skin};
pub use blend::BlendRun;
pub use constraints::deepest_penetration;
pub use contact::{Crossing, SKIN_GAP, skin_gaps};
pub use elastic::{
    ElasticMaterial, Grid, Scratch, add_elastic_forces, rest_areas, rest_curvature_of,
    rest_metric_of,
};
pub use flesh::{FleshBuildError, FleshRun};
pub use quality::{Smoothness, neighbour_angles, smoothness};
pub use system::SkinSystem;
