//! What the solver did, for the panel's live plots: counters summed over
//! the skins after each advance, and the skins' energy sampled a few times
//! a second (it costs a force pass per skin).

use crate::skin::Simulation;
use std::time::{Duration, Instant};

/// The solver's counters as of the last advance.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolverTrace {
    /// Accepted steps, summed over the skins.
    pub steps: u64,
    /// Steps rejected (error estimate or constraint) and rollbacks after
    /// divergence, summed over the skins.
    pub rejections: u64,
    /// How many skins are simulated.
    pub skins: usize,
    /// The skins' total energy (J), as last sampled.
    pub energy: Option<f64>,
}

/// How often the energy is sampled.
const ENERGY_EVERY: Duration = Duration::from_millis(200);

/// Samples [`SolverTrace`]s, the energy at most every [`ENERGY_EVERY`].
#[derive(Debug, Default)]
pub(super) struct TraceSampler {
    energy_at: Option<Instant>,
    energy: Option<f64>,
}

impl TraceSampler {
    /// The counters of `sim` now.
    pub(super) fn sample(&mut self, sim: &Simulation, now: Instant) -> SolverTrace {
        let skins = sim.character.skins.len();
        let mut trace = SolverTrace {
            skins,
            ..SolverTrace::default()
        };
        for s in 0..skins {
            let st = sim.stats(s);
            trace.steps += st.steps;
            trace.rejections += st.error_rejections + st.constraint_rejections + st.rollbacks;
        }
        if self
            .energy_at
            .is_none_or(|at| now.duration_since(at) >= ENERGY_EVERY)
        {
            self.energy_at = Some(now);
            let total: f64 = (0..skins).map(|s| sim.energy(s)).sum();
            self.energy = total.is_finite().then_some(total);
        }
        trace.energy = self.energy;
        trace
    }
}
