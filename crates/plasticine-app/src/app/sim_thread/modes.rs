//! Modal flesh's vibration modes computed beside the simulation thread
//! (DyRT's precompute: a second or two for a large character). Until they
//! are ready the simulation runs the character with its muscles riding the
//! skeleton rigidly, so the skin keeps moving; then the modal flesh is
//! stepped up to the simulation's clock and takes over.

use crate::character::{Character, Flesh};
use crate::fem::flesh_changed;
use crate::skin::FleshRun;
use crate::skin::SkeletonDriver;
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::time::Instant;

/// Why a character's modal flesh did not arrive from its thread.
#[derive(Debug, thiserror::Error)]
pub(super) enum ModesError {
    /// The character's flesh turned out not to be modal.
    #[error("the character's flesh is not modal")]
    NotModal,
    /// The flesh could not be built (its error says why).
    #[error(transparent)]
    Build(#[from] crate::skin::FleshBuildError),
    /// The thread ended without an answer.
    #[error("the modes' thread stopped")]
    Stopped,
}

/// Modes being computed on their own thread for one character's flesh.
pub(super) struct PendingModes {
    /// The character they are for (what decides the flesh: its flesh,
    /// muscles, skeleton and gravity).
    character: Character,
    rx: Receiver<Result<FleshRun, ModesError>>,
    started: Instant,
}

impl PendingModes {
    /// Starts computing `character`'s modal flesh from time t under
    /// `driver`.
    pub(super) fn start(character: &Character, driver: &SkeletonDriver, t: f64) -> Self {
        let (tx, rx) = mpsc::channel();
        let (c, d) = (character.clone(), driver.clone());
        let spawned = std::thread::Builder::new()
            .name("modal modes".into())
            .spawn(move || {
                let built = match FleshRun::build(&c, &d, t, None) {
                    Ok(Some(run)) => Ok(run),
                    Ok(None) => Err(ModesError::NotModal),
                    Err(e) => Err(ModesError::Build(e)),
                };
                // The simulation may have moved on to other flesh: then
                // nobody listens, and that is fine.
                let _ = tx.send(built);
            });
        if let Err(e) = spawned {
            // The receiver reports the thread as gone.
            tracing::warn!("cannot start the modal modes' thread: {e}");
        }
        Self {
            character: character.clone(),
            rx,
            started: Instant::now(),
        }
    }

    /// Whether these modes are the ones `c`'s flesh needs.
    pub(super) fn serves(&self, c: &Character) -> bool {
        !flesh_changed(&self.character, c)
    }

    /// The flesh these modes are for.
    pub(super) fn flesh(&self) -> &Flesh {
        &self.character.flesh
    }

    /// The flesh, once computed (an error when it could not be).
    pub(super) fn poll(&self) -> Option<Result<FleshRun, ModesError>> {
        match self.rx.try_recv() {
            Ok(built) => Some(built),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(ModesError::Stopped)),
        }
    }

    /// Seconds since the computation started.
    pub(super) fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}

/// Whether `c`'s flesh has modes to compute.
pub(super) fn is_modal(c: &Character) -> bool {
    matches!(c.flesh, Flesh::Modal(_))
}

/// `c` with its muscles riding the skeleton rigidly.
pub(super) fn rigid(c: &Character) -> Character {
    let mut r = c.clone();
    r.flesh = Flesh::Kinematic;
    r
}
