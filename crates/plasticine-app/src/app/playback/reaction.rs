//! Recording the skeleton's reaction (a push, a fall, a bounce) as key
//! postures: while editing with the skeleton responding, a key every
//! `record_every` seconds of simulated time, kept aside while it plays out
//! (a key edit would send the character to the simulation and disturb the
//! motion being recorded) and stored at the end as one undo step.

use crate::character::Posture;
use crate::snapshot::SceneSnapshot;
use crate::tools::Command;

/// The most keys one reaction records (a minute at the default rate); the
/// recording stops there and keeps what it has.
pub const MAX_REACTION_KEYS: usize = 240;

/// A reaction being recorded.
#[derive(Clone, Debug)]
pub struct Reaction {
    /// The simulation's clock when recording began.
    start_sim: f64,
    /// The timeline time the first key goes to.
    start_time: f64,
    /// The last recording slot keyed (a multiple of the interval).
    slot: Option<i64>,
    /// The keys so far: timeline time and posture.
    keys: Vec<(f32, Posture)>,
}

impl Reaction {
    /// Starts recording at timeline time `time` from the simulation's
    /// newest picture.
    pub fn start(latest: &SceneSnapshot, time: f64) -> Self {
        Self {
            start_sim: latest.sim_time,
            start_time: time,
            slot: None,
            keys: Vec::new(),
        }
    }

    /// Takes the simulation's picture at `sim_time` in, `reacted` being the
    /// working posture with the root where the simulation holds it: when it
    /// entered a new slot of `every` seconds, keys it. Returns the timeline
    /// time the reaction has reached, None when the simulation's clock is
    /// behind where recording began (it was rebuilt).
    pub fn sample(&mut self, sim_time: f64, reacted: Posture, every: f64) -> Option<f64> {
        let elapsed = sim_time - self.start_sim;
        if elapsed.is_nan() || elapsed < 0.0 || self.is_full() {
            return None;
        }
        let slot = (elapsed / every + 1e-9).floor() as i64;
        if self.slot != Some(slot) {
            self.slot = Some(slot);
            let time = self.start_time + slot as f64 * every;
            self.keys.push((time as f32, reacted));
        }
        Some(self.start_time + elapsed)
    }

    /// Keys recorded so far.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether it has [`MAX_REACTION_KEYS`].
    pub fn is_full(&self) -> bool {
        self.keys.len() >= MAX_REACTION_KEYS
    }

    /// The first and last keys' times.
    pub fn span(&self) -> Option<(f32, f32)> {
        Some((self.keys.first()?.0, self.keys.last()?.0))
    }

    /// The keys as edits (to apply as one group), each with the
    /// tension/continuity/bias `tcb` gives for its time.
    pub fn into_commands(self, tcb: impl Fn(f32) -> (f32, f32, f32)) -> Vec<Command> {
        self.keys
            .into_iter()
            .map(|(time, posture)| {
                let (tension, continuity, bias) = tcb(time);
                Command::SetKey {
                    time,
                    posture,
                    tension,
                    continuity,
                    bias,
                }
            })
            .collect()
    }
}
