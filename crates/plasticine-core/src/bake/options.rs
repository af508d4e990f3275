//! How to bake: the options, what can go wrong, and the checks made
//! before anything runs.

use crate::character::Character;
use crate::io::IoError;
use crate::skin::{SimError, SolverSettings};
use glam::DVec3;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// How a bake treats a cancelled bake in its output folder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BakeStart {
    /// Bake from the start; refuse if the folder holds a cancelled bake (so
    /// that its work is not thrown away by mistake).
    #[default]
    Fresh,
    /// Bake from the start, discarding a cancelled bake.
    Restart,
    /// Continue the cancelled bake, which must be of the same character with
    /// the same options.
    Resume,
}

/// What the progress callback wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BakeControl {
    /// Go on with the next frame.
    Continue,
    /// Stop after this frame, leaving a checkpoint to resume from.
    Cancel,
}

/// How to bake: skin resolution, solver settings, frame rate, duration and how to start.
#[derive(Clone, Debug)]
pub struct BakeOptions {
    /// Resample every skin to m×n first (§6.5), or keep each skin's own.
    pub resolution: Option<(usize, usize)>,
    /// Solver settings of the simulation that is baked.
    pub settings: SolverSettings,
    /// Frames per simulated second written to the cache.
    pub fps: f32,
    /// Simulated seconds to bake; defaults to the key postures' span.
    pub duration: Option<f64>,
    /// Also write every k-th frame as OBJ.
    pub obj_every: Option<usize>,
    /// Whether to bake from the start or continue a cancelled bake.
    pub start: BakeStart,
    /// Set (from any thread, or a signal handler) to cancel after the frame
    /// being baked.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Also write a checkpoint after a frame when this much wall time has
    /// passed since the last one (`None`: only when cancelled).
    pub checkpoint_every: Option<Duration>,
    /// Make the skeleton respond and land on this ground (FEM flesh only,
    /// see `fem::dynamic`), lifted first to the drop height if one is given.
    pub ground: Option<GroundDrop>,
    /// A second character on the same ground, touching the first (see
    /// `bake::with`); needs `ground`.
    pub with: Option<Box<SecondCharacter>>,
}

pub use crate::contact::GroundDrop;

impl Default for BakeOptions {
    fn default() -> Self {
        Self {
            resolution: None,
            settings: SolverSettings::default(),
            fps: 30.0,
            duration: None,
            obj_every: None,
            start: BakeStart::Fresh,
            cancel: None,
            checkpoint_every: Some(Duration::from_secs(30)),
            ground: None,
            with: None,
        }
    }
}

/// Why a bake failed.
#[derive(Debug, thiserror::Error)]
pub enum BakeError {
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The simulation could not start, restore its state or go on.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The bake options are invalid (frame rate, duration or resolution).
    #[error("{0}")]
    Options(String),
    /// A skin cannot be resampled to the resolution asked for.
    #[error(transparent)]
    Resample(#[from] crate::character::ResampleError),
    /// A fresh bake would throw away a cancelled one.
    #[error(
        "{} holds a cancelled bake{detail}: resume it, or start over discarding it",
        dir.display()
    )]
    Unfinished {
        /// The output folder.
        dir: PathBuf,
        /// What the cancelled bake is of, or why its checkpoint is unreadable.
        detail: String,
    },
    /// Nothing to resume, or the checkpoint and partial cache do not fit together.
    #[error("cannot resume: {0}")]
    Resume(String),
    /// The cancelled bake is of something else; nothing was changed.
    #[error(
        "cannot resume the cancelled bake in {}: it differs from this one: {}",
        dir.display(),
        differences.join("; ")
    )]
    Mismatch {
        /// The output folder holding the cancelled bake.
        dir: PathBuf,
        /// How the cancelled bake differs from this one, one item each.
        differences: Vec<String>,
    },
}

/// Refuses a frame rate out of range, a character with no key postures, or
/// invalid solver settings.
pub(super) fn check_options(character: &Character, opts: &BakeOptions) -> Result<(), BakeError> {
    if !(opts.fps.is_finite() && opts.fps > 0.0 && opts.fps <= 1000.0) {
        return Err(BakeError::Options(format!(
            "fps must lie in (0, 1000], got {}",
            opts.fps
        )));
    }
    if character.key_postures.is_empty() {
        return Err(SimError::NoMotion.into());
    }
    opts.settings.validate().map_err(SimError::Settings)?;
    Ok(())
}

/// The gap left between the two characters when no place is given (m).
pub const BESIDE_GAP: f64 = 0.05;

/// The second character of a bake and where it stands.
#[derive(Clone, Debug)]
pub struct SecondCharacter {
    /// The character, as its file has it.
    pub character: Character,
    /// How far to move it from where its file stands it (m); `None` stands
    /// it beside the first, [`BESIDE_GAP`] to its +x.
    pub offset: Option<DVec3>,
}
