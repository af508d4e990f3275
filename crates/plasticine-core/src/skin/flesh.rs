//! The simulated flesh the muscles ride on, whichever model the character
//! chose: Capell's lattice FEM or DyRT's modes ([`crate::modal`]). The
//! skin reads the muscles' offsets from it; the simulation steps it first.

use super::driver::SkeletonDriver;
use crate::character::{Character, Flesh, Posture};
use crate::fem::{FleshError, FleshPose, FleshSim};
use crate::modal::{ModalError, ModalSim};
use glam::Affine3A;

/// Why a character's flesh could not be built.
#[derive(Debug, thiserror::Error)]
pub enum FleshBuildError {
    /// The FEM flesh.
    #[error(transparent)]
    Fem(#[from] FleshError),
    /// The modal flesh.
    #[error(transparent)]
    Modal(#[from] ModalError),
}

/// A character's running flesh.
#[derive(Clone, Debug)]
pub enum FleshRun {
    /// Lattice FEM (Capell 2002).
    Fem(Box<FleshSim>),
    /// Vibration modes per part (DyRT).
    Modal(Box<ModalSim>),
}

impl FleshRun {
    /// The flesh of `character` at time t (None when its muscles are
    /// kinematic); `old`, the flesh before an edit, carries its state over
    /// where the model allows.
    pub fn build(
        character: &Character,
        driver: &SkeletonDriver,
        t: f64,
        old: Option<&FleshRun>,
    ) -> Result<Option<Self>, FleshBuildError> {
        Ok(match &character.flesh {
            Flesh::Kinematic => None,
            Flesh::Fem(_) => Some(Self::Fem(Box::new(FleshSim::rebuilt(
                character,
                &driver.posture_at(t),
                t,
                old.and_then(FleshRun::fem),
            )?))),
            Flesh::Modal(_) => Some(Self::Modal(Box::new(ModalSim::new(
                character,
                &|t| driver.posture_at(t),
                t,
            )?))),
        })
    }

    /// The FEM flesh, if that is the model.
    pub fn fem(&self) -> Option<&FleshSim> {
        match self {
            Self::Fem(f) => Some(f),
            Self::Modal(_) => None,
        }
    }

    /// The FEM flesh, to grab it.
    pub fn fem_mut(&mut self) -> Option<&mut FleshSim> {
        match self {
            Self::Fem(f) => Some(f),
            Self::Modal(_) => None,
        }
    }

    /// The modal flesh, if that is the model.
    pub fn modal(&self) -> Option<&ModalSim> {
        match self {
            Self::Modal(m) => Some(m),
            Self::Fem(_) => None,
        }
    }

    /// Time of the newest step.
    pub fn time(&self) -> f64 {
        match self {
            Self::Fem(f) => f.time(),
            Self::Modal(m) => m.time(),
        }
    }

    /// Steps until `target` (or the wall clock passes `deadline`).
    pub fn advance_within(
        &mut self,
        character: &Character,
        posture_at: impl Fn(f64) -> Posture,
        target: f64,
        deadline: Option<std::time::Instant>,
    ) {
        match self {
            Self::Fem(f) => {
                f.advance_within(character, posture_at, target, deadline);
            }
            Self::Modal(m) => m.advance_within(character, posture_at, target, deadline),
        }
    }

    /// Forgets the steps no reader before time `t` needs.
    pub fn forget_before(&mut self, t: f64) {
        match self {
            Self::Fem(f) => f.forget_before(t),
            Self::Modal(m) => m.forget_before(t),
        }
    }

    /// Each muscle's correction in its own frame at time t.
    pub fn muscle_offsets(
        &self,
        character: &Character,
        posture: &Posture,
        t: f64,
    ) -> Vec<Affine3A> {
        match self {
            Self::Fem(f) => f.muscle_offsets(character, posture, t),
            Self::Modal(m) => m.muscle_offsets(character, posture, t),
        }
    }

    /// The skeleton's posture at time t: the key postures' `driven`, with
    /// the root where a responding skeleton's core carried it.
    pub fn posture(&self, character: &Character, driven: &Posture, t: f64) -> Posture {
        match self {
            Self::Fem(f) => f.posture(character, driven, t),
            Self::Modal(_) => driven.clone(),
        }
    }

    /// The flesh at time t, for drawing.
    pub fn pose(&self, character: &Character, posture: &Posture, t: f64) -> FleshPose {
        match self {
            Self::Fem(f) => f.pose(character, posture, t),
            Self::Modal(m) => m.pose(character, posture, t),
        }
    }

    /// Whether a still skeleton leaves the flesh still (nothing to step).
    pub fn is_at_rest(&self, speed: f64) -> bool {
        match self {
            Self::Fem(f) => f.is_at_rest(speed),
            Self::Modal(m) => m.is_at_rest(speed),
        }
    }
}
