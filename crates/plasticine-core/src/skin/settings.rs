//! What the solver is told and what it reports, shared by the simulation
//! (which advances every skin) and the stepper (which advances one): the
//! user's settings, per-skin statistics and events, errors, and each skin's
//! measured stability limit.

use super::constraints::ContactResponse;
use super::integrate::{EvalCount, IntegratorKind, Tolerances};
use crate::character::InvalidField;
use serde::{Deserialize, Serialize};

/// What the user sets for the solver (the parameters panel of §6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SolverSettings {
    /// The integrator that advances the skins.
    pub integrator: IntegratorKind,
    /// Error tolerances and step bounds of the integrator and constraints.
    pub tolerances: Tolerances,
    /// How skin points that hit a muscle keep their velocity (eq. 16d).
    pub contact: ContactResponse,
    /// Simulated seconds per real second for interactive use (§8).
    pub time_ratio: f64,
    /// Speed above which the state counts as diverged (m/s).
    pub max_speed: f32,
    /// Skins kept from passing through each other and through themselves
    /// where they fold (`super::contact`).
    pub skin_contact: bool,
}

impl Default for SolverSettings {
    fn default() -> Self {
        Self {
            integrator: IntegratorKind::Verlet,
            tolerances: Tolerances::default(),
            contact: ContactResponse::default(),
            time_ratio: 1.0,
            max_speed: 50.0,
            skin_contact: true,
        }
    }
}

impl SolverSettings {
    /// Checks the tolerances, time ratio, contact response and speed limit; the message
    /// names the offending field.
    pub fn validate(&self) -> Result<(), InvalidField> {
        self.tolerances.validate()?;
        if !(self.time_ratio.is_finite() && self.time_ratio > 0.0) {
            return Err(InvalidField::new(
                "time_ratio",
                format!("must be positive, got {}", self.time_ratio),
            ));
        }
        let c = self.contact;
        for (name, k) in [("k_normal", c.k_normal), ("k_tangent", c.k_tangent)] {
            if !(0.0..=1.0).contains(&k) {
                return Err(InvalidField::new(
                    format!("contact.{name}"),
                    format!("must lie in [0, 1], got {k}"),
                ));
            }
        }
        if !(self.max_speed.is_finite() && self.max_speed > 0.0) {
            return Err(InvalidField::new(
                "max_speed",
                format!("must be positive, got {}", self.max_speed),
            ));
        }
        Ok(())
    }
}

/// Counters over a skin's life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SkinStats {
    /// Steps accepted.
    pub steps: u64,
    /// Steps rejected by the error estimate (eq. 15).
    pub error_rejections: u64,
    /// Steps rejected because a constraint correction exceeded ε(c).
    pub constraint_rejections: u64,
    /// Rollbacks after divergence.
    pub rollbacks: u64,
    /// Force evaluations made by the skin's integrator.
    pub evals: EvalCount,
    /// Shortest step accepted (s).
    pub smallest_step: f64,
    /// Longest step accepted (s).
    pub largest_step: f64,
    /// Largest fat-layer (muscle non-penetration) correction of an accepted step (m).
    pub max_correction: f32,
}

/// Something the user should know about, from one `advance_to`.
#[derive(Clone, Debug, PartialEq)]
pub enum SimEvent {
    /// The state blew up; it was rolled back and the step limit cut.
    Diverged {
        /// Index of the skin that diverged.
        skin: usize,
        /// Simulated time at which the state went bad (s).
        at: f64,
        /// Simulated time the skin's state was rolled back to (s).
        rolled_back_to: f64,
        /// The skin's new step limit (s).
        new_max_step: f64,
    },
    /// A responding skeleton's contact solve left contacts sinking into
    /// the ground or the hand's capsule (it stopped at its sweep limit, or
    /// no impulses could meet them all: the character squeezed between
    /// the two); the flesh steps went on with the impulses found.
    ContactUnsettled {
        /// Flesh steps so affected in this advance.
        steps: usize,
        /// The first one's time (s).
        at: f64,
        /// The fastest sinking left (m/s).
        violation: f64,
    },
}

/// Why the simulation could not be built or advanced.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Invalid solver settings; the error names the field.
    #[error("invalid solver settings: {0}")]
    Settings(InvalidField),
    /// A skin cannot be resampled to the resolution asked for.
    #[error(transparent)]
    Resample(#[from] crate::character::ResampleError),
    /// No sample of that name.
    #[error("unknown sample '{name}': choose one of {known}")]
    UnknownSample {
        /// The name asked for.
        name: String,
        /// The samples there are, comma-separated.
        known: String,
    },
    /// The character violates an invariant; the error names the field.
    #[error("invalid character: {0}")]
    Character(#[from] crate::character::InvalidField),
    /// A skin kept diverging through repeated rollbacks with ever shorter steps.
    #[error(
        "skin {skin} keeps diverging near t = {at:.4} s even with steps of {step:.2e} s; \
         its state was left at the last good time {good:.4} s. Lower the stiffness or mass ratio, \
         or raise the damping"
    )]
    Diverged {
        /// Index of the skin that diverged.
        skin: usize,
        /// Simulated time at which the state last went bad (s).
        at: f64,
        /// The last good time, where the skin's state was left (s).
        good: f64,
        /// The step limit it had been cut to (s).
        step: f64,
    },
    /// The character has no key postures to play.
    #[error("the character has no key postures to play")]
    NoMotion,
    /// A saved solver state does not fit this simulation; the message says why.
    #[error("cannot restore the solver state: {0}")]
    State(String),
    /// The character's FEM flesh could not be built.
    #[error("FEM flesh: {0}")]
    Flesh(#[from] crate::fem::FleshError),
    /// The character's modal flesh could not be built.
    #[error("modal flesh: {0}")]
    Modal(#[from] crate::modal::ModalError),
    /// The embedded mesh's blendshapes cannot be compiled.
    #[error("blendshapes: {0}")]
    Blend(#[from] crate::blendshape::BlendError),
    /// The skeleton cannot be made to respond (see `fem::dynamic`).
    #[error("dynamic skeleton: {0}")]
    Dynamic(#[from] crate::fem::DynamicError),
}

impl From<super::flesh::FleshBuildError> for SimError {
    fn from(e: super::flesh::FleshBuildError) -> Self {
        match e {
            super::flesh::FleshBuildError::Fem(e) => Self::Flesh(e),
            super::flesh::FleshBuildError::Modal(e) => Self::Modal(e),
        }
    }
}

/// A skin's highest frequency `ω_max` (rad/s) when it was measured, and its
/// smallest edge stretch then: the stability limit scales with the stretch
/// (see `stepper.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Frequency {
    /// Highest frequency `ω_max` of the skin's system when measured (rad/s).
    pub omega: f64,
    /// Smallest edge stretch of the skin when measured.
    pub stretch: f32,
}
