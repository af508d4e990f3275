//! The panel's live plots: what the solver does and what the frames cost
//! over the last seconds, so an animator tuning a material sees its effect
//! (a stiffer skin shortens the steps; a diverging one rejects them).
//!
//! Each frame the front end records the simulation's status and the frame
//! time; each plot keeps its samples of the last [`WINDOW`] seconds.

use super::sim_thread::SimStatus;
use std::collections::VecDeque;

/// Seconds of history a plot shows.
pub const WINDOW: f64 = 10.0;

/// One plotted quantity.
#[derive(Clone, Debug)]
pub struct Plot {
    /// What it is.
    pub name: &'static str,
    /// Its unit, as printed after the value.
    pub unit: &'static str,
    /// Drawn on a logarithmic scale (step sizes span decades).
    pub log: bool,
    /// (wall-clock seconds, value), oldest first.
    pub samples: VecDeque<(f64, f64)>,
}

impl Plot {
    fn new(name: &'static str, unit: &'static str, log: bool) -> Self {
        Self {
            name,
            unit,
            log,
            samples: VecDeque::new(),
        }
    }

    fn push(&mut self, t: f64, v: f64) {
        if !v.is_finite() || (self.log && v <= 0.0) {
            return;
        }
        self.samples.push_back((t, v));
        while self.samples.front().is_some_and(|s| s.0 < t - WINDOW) {
            self.samples.pop_front();
        }
    }

    /// The newest value.
    pub fn last(&self) -> Option<f64> {
        self.samples.back().map(|s| s.1)
    }
}

/// The solver's step, real-time factor, rejections and energy, and the
/// frame time.
#[derive(Clone, Debug)]
pub struct LivePlots {
    plots: Vec<Plot>,
    /// (wall time, simulated time, steps, rejections) at the last advance seen.
    last: Option<(f64, f64, u64, u64)>,
}

impl Default for LivePlots {
    fn default() -> Self {
        Self {
            plots: vec![
                Plot::new("step", "ms", true),
                Plot::new("sim/real", "x", false),
                Plot::new("rejected", "/s", false),
                Plot::new("energy", "J", false),
                Plot::new("frame", "ms", false),
            ],
            last: None,
        }
    }
}

impl LivePlots {
    /// Records `status` and the frame's time (ms) at wall time `t` (s).
    /// The step is the mean accepted step since the last advance seen
    /// (simulated time per step of each skin); rejections are per wall
    /// second.
    pub fn record(&mut self, t: f64, status: &SimStatus, frame_ms: f64) {
        let trace = &status.trace;
        let now = (t, status.sim_time, trace.steps, trace.rejections);
        if let Some((t0, sim0, steps0, rejected0)) = self.last {
            let steps = trace.steps.saturating_sub(steps0);
            if steps > 0 && status.sim_time > sim0 {
                let per_skin = steps as f64 / trace.skins.max(1) as f64;
                self.plots[0].push(t, (status.sim_time - sim0) / per_skin * 1e3);
            }
            if t > t0 && (steps > 0 || trace.rejections != rejected0) {
                let rejected = trace.rejections.saturating_sub(rejected0) as f64;
                self.plots[2].push(t, rejected / (t - t0));
            }
            if steps > 0 || trace.rejections != rejected0 || status.sim_time != sim0 {
                self.last = Some(now);
            }
        } else {
            self.last = Some(now);
        }
        self.plots[1].push(t, status.achieved_ratio);
        if let Some(e) = trace.energy {
            self.plots[3].push(t, e);
        }
        self.plots[4].push(t, frame_ms);
    }

    /// The plots, in drawing order.
    pub fn plots(&self) -> &[Plot] {
        &self.plots
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::sim_thread::SolverTrace;
    use std::time::Duration;

    fn status(sim_time: f64, steps: u64, rejections: u64) -> SimStatus {
        SimStatus {
            sim_time,
            time_ratio: 1.0,
            achieved_ratio: 1.0,
            fell_behind: false,
            paused: false,
            revision: 0,
            sequence: 0,
            step_wall: Duration::ZERO,
            step_delay: Duration::ZERO,
            message: None,
            message_count: 0,
            running: true,
            trace: SolverTrace {
                steps,
                rejections,
                skins: 2,
                energy: Some(0.5),
            },
            push_impulse: 0.0,
        }
    }

    #[test]
    fn the_step_is_simulated_time_per_step_of_each_skin_and_rejections_are_per_second() {
        let mut p = LivePlots::default();
        p.record(0.0, &status(0.0, 0, 0), 10.0);
        // 0.1 s simulated in 100 steps over two skins: 2 ms steps; 3
        // rejections in half a second: 6 per second.
        p.record(0.5, &status(0.1, 100, 3), 12.0);
        let [step, ratio, rejected, energy, frame] = p.plots() else {
            panic!("five plots")
        };
        assert!((step.last().unwrap() - 2.0).abs() < 1e-9);
        assert!((rejected.last().unwrap() - 6.0).abs() < 1e-9);
        assert_eq!(ratio.last(), Some(1.0));
        assert_eq!(energy.last(), Some(0.5));
        assert_eq!(frame.samples.len(), 2);
        // A frame with no new advance adds no step or rejection sample.
        p.record(0.6, &status(0.1, 100, 3), 12.0);
        assert_eq!(p.plots()[0].samples.len(), 1);
        assert_eq!(p.plots()[2].samples.len(), 1);
    }

    #[test]
    fn samples_older_than_the_window_are_dropped() {
        let mut p = LivePlots::default();
        for k in 0..=200 {
            p.record(k as f64 * 0.1, &status(k as f64 * 0.1, k * 10, 0), 5.0);
        }
        let frame = &p.plots()[4];
        let span = frame.samples.back().unwrap().0 - frame.samples.front().unwrap().0;
        assert!(span <= WINDOW + 1e-9 && span > WINDOW - 0.2, "{span}");
        // A step that cannot be drawn on a log scale is skipped, not drawn as -inf.
        let mut log = Plot::new("step", "ms", true);
        log.push(0.0, 0.0);
        assert!(log.samples.is_empty());
    }
}
