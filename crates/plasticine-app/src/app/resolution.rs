//! "Real time at whatever resolution fits" (LEMAN §8's future work, built):
//! the [`ResolutionGovernor`] measures what the solver costs per simulated
//! second and picks the skin resolution from a ladder so that the simulation
//! keeps up with the requested ratio to real time.
//!
//! # The measurement
//!
//! The simulation thread keeps cumulative counters ([`SimLoad`]): the solver's
//! wall time (plus any step delay, which by its definition makes the solver
//! behave like one whose step costs that much more), the simulated seconds and
//! the real seconds covered. Over a window of at least `window` real seconds
//! at one resolution the governor computes the **load**
//!
//! ```text
//! load = (Δ busy / Δ simulated) · time_ratio
//! ```
//!
//! the fraction of real time the solver needs to advance at the requested
//! ratio. It keeps up when load < 1, whatever the achieved ratio happened to
//! be (when it falls behind the load says by how much: 2 means it needs twice
//! the real time it has).
//!
//! # The choice
//!
//! The solver's cost is close to proportional to the number of skin points
//! (every force, constraint and integrator stage is a pass over the points),
//! so the load at another rung of the ladder is predicted as
//! `load · (side' / side)²`. A rung *fits* when its predicted load is at most
//! `fit_load` (headroom for the thread's own overhead and for noise).
//!
//! - Above `overload` (or with nothing simulated in the window although time
//!   was asked for) it drops at once to the largest rung that fits.
//! - Below `fit_load`, it climbs one rung when that rung is predicted to fit.
//! - Otherwise it holds.
//!
//! That is the hysteresis: after a climb the load is about `fit_load`, well
//! under `overload`, so it does not drop back; after a drop to the largest
//! rung that fits, the next rung up is by construction predicted not to fit,
//! so it does not climb back. Every change restarts the measurement, which
//! begins only once the thread simulates the new resolution.

use super::sim_thread::SimLoad;

/// Sides of the square skin grids the governor chooses from.
pub const RESOLUTION_LADDER: [usize; 7] = [8, 12, 16, 24, 32, 48, 64];

/// A cumulative cost reading (see the module docs); [`SimLoad`] converts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadSample {
    /// Solver wall time plus step delays, seconds.
    pub busy: f64,
    /// Simulated seconds.
    pub simulated: f64,
    /// Real seconds the advances covered.
    pub real: f64,
    /// Skin points simulated when the reading was taken.
    pub points: usize,
}

impl From<SimLoad> for LoadSample {
    fn from(l: SimLoad) -> Self {
        Self {
            busy: (l.solver_wall + l.delay).as_secs_f64(),
            simulated: l.simulated,
            real: l.real,
            points: l.points,
        }
    }
}

/// How the [`ResolutionGovernor`] chooses: its ladder, its thresholds and its measurement window.
#[derive(Clone, Debug, PartialEq)]
pub struct GovernorConfig {
    /// Sides to choose from, increasing.
    pub ladder: Vec<usize>,
    /// A rung fits when its predicted load is at most this.
    pub fit_load: f64,
    /// Above this measured load the resolution drops at once.
    pub overload: f64,
    /// Real seconds of measurement at one resolution before deciding.
    pub window: f64,
}

impl Default for GovernorConfig {
    fn default() -> Self {
        Self {
            ladder: RESOLUTION_LADDER.to_vec(),
            fit_load: 0.6,
            overload: 0.9,
            window: 0.3,
        }
    }
}

/// Picks the skin resolution so the simulation keeps real time (see the
/// module docs).
#[derive(Clone, Debug)]
pub struct ResolutionGovernor {
    /// The ladder and thresholds it decides with.
    pub config: GovernorConfig,
    rung: usize,
    window_start: Option<LoadSample>,
    /// The last measured load (for the UI).
    pub last_load: Option<f64>,
    /// How many times it changed the resolution.
    pub changes: u64,
}

impl ResolutionGovernor {
    /// Starting at the rung closest to `side`.
    pub fn new(config: GovernorConfig, side: usize) -> Self {
        assert!(!config.ladder.is_empty(), "the ladder needs a rung");
        let rung = (0..config.ladder.len())
            .min_by_key(|&r| config.ladder[r].abs_diff(side))
            .unwrap_or(0);
        Self {
            config,
            rung,
            window_start: None,
            last_load: None,
            changes: 0,
        }
    }

    /// The side the governor wants simulated now.
    pub fn side(&self) -> usize {
        self.config.ladder[self.rung]
    }

    /// Forgets the measurement in progress (after a pause, a seek, a mode
    /// change: anything that makes the next advances unlike the last ones).
    pub fn restart(&mut self) {
        self.window_start = None;
    }

    /// Takes a cumulative reading at `time_ratio`. Returns the new side when
    /// the resolution should change (then send `Resample`).
    pub fn observe(&mut self, sample: LoadSample, time_ratio: f64) -> Option<usize> {
        let Some(start) = self.window_start else {
            self.window_start = Some(sample);
            return None;
        };
        if sample.points != start.points
            || sample.real < start.real
            || sample.simulated < start.simulated
        {
            // The resolution (or the thread) changed under the window.
            self.window_start = Some(sample);
            return None;
        }
        let real = sample.real - start.real;
        if real < self.config.window {
            return None;
        }
        let simulated = sample.simulated - start.simulated;
        let busy = sample.busy - start.busy;
        self.window_start = Some(sample);
        let load = if simulated > 0.0 {
            busy / simulated * time_ratio
        } else {
            f64::INFINITY
        };
        self.last_load = Some(load);
        let side = self.side() as f64;
        let predicted = |r: usize| {
            let s = self.config.ladder[r] as f64 / side;
            load * s * s
        };
        let new = if load > self.config.overload {
            (0..self.rung)
                .rev()
                .find(|&r| predicted(r) <= self.config.fit_load)
                .unwrap_or(0)
        } else if load <= self.config.fit_load
            && self.rung + 1 < self.config.ladder.len()
            && predicted(self.rung + 1) <= self.config.fit_load
        {
            self.rung + 1
        } else {
            self.rung
        };
        if new == self.rung {
            return None;
        }
        self.rung = new;
        self.changes += 1;
        self.window_start = None;
        Some(self.side())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A solver whose cost per simulated second is `k` seconds per point,
    /// with a deterministic ±`noise` relative wobble, simulating `skins`
    /// square skins at the governor's side, advancing `dt` real seconds per
    /// reading at ratio 1 (it keeps up when the load is < 1, else covers
    /// only 1/load of the time).
    struct Synthetic {
        k: f64,
        noise: f64,
        skins: usize,
        total: LoadSample,
        step: u64,
    }

    impl Synthetic {
        fn reading(&mut self, side: usize, dt: f64) -> LoadSample {
            self.step += 1;
            // A cheap deterministic pseudo-random wobble in [−1, 1].
            let x = ((self.step as f64 * 12.9898).sin() * 43758.5453).fract();
            let points = self.skins * side * side;
            let cost = self.k * points as f64 * (1.0 + self.noise * x);
            let simulated = dt.min(dt / cost);
            self.total.busy += simulated * cost;
            self.total.simulated += simulated;
            self.total.real += dt;
            self.total.points = points;
            self.total
        }
    }

    /// The largest rung whose load k·points is at most `fit`.
    fn expected(k: f64, skins: usize, fit: f64) -> usize {
        *RESOLUTION_LADDER
            .iter()
            .rfind(|&&s| k * (skins * s * s) as f64 <= fit)
            .unwrap_or(&RESOLUTION_LADDER[0])
    }

    fn run(gov: &mut ResolutionGovernor, solver: &mut Synthetic, frames: usize) -> Vec<usize> {
        let mut sides = Vec::new();
        for _ in 0..frames {
            let s = solver.reading(gov.side(), 1.0 / 90.0);
            if let Some(side) = gov.observe(s, 1.0) {
                sides.push(side);
            }
        }
        sides
    }

    #[test]
    fn converges_to_the_largest_resolution_that_fits_and_stays() {
        let fit = GovernorConfig::default().fit_load;
        // Per-point costs putting the answer on every rung (3 skins), with a
        // load of 0.55 there: the next rung up (≥ 1.78 times the points) is
        // then over the overload threshold, so from above and from below
        // there is one answer.
        for side in RESOLUTION_LADDER {
            let k = 0.55 / (3 * side * side) as f64;
            let want = expected(k, 3, fit);
            assert_eq!(want, side);
            for start in [8, 64, 24] {
                let mut gov = ResolutionGovernor::new(GovernorConfig::default(), start);
                let mut solver = Synthetic {
                    k,
                    noise: 0.05,
                    skins: 3,
                    total: LoadSample::default(),
                    step: 0,
                };
                // 20 s of frames at 90 Hz.
                let sides = run(&mut gov, &mut solver, 1800);
                assert_eq!(
                    gov.side(),
                    want,
                    "k = {k:e} from {start}: went {sides:?}, want {want}"
                );
                // Monotone: climbing or dropping, never back and forth.
                let up = sides.windows(2).all(|w| w[1] > w[0]);
                let down = sides.windows(2).all(|w| w[1] < w[0]);
                assert!(up || down, "oscillated: {sides:?}");
                // And then another minute without a single change.
                let changes = gov.changes;
                run(&mut gov, &mut solver, 5400);
                assert_eq!(gov.changes, changes, "changed after settling");
                let load = gov.last_load.unwrap();
                assert!(load < 1.0, "settled but overloaded: {load}");
            }
        }
    }

    #[test]
    fn a_solver_that_gets_slower_drops_at_once_and_climbs_back() {
        let k = 0.55 / (2 * 32 * 32) as f64;
        let mut solver = Synthetic {
            k,
            noise: 0.05,
            skins: 2,
            total: LoadSample::default(),
            step: 0,
        };
        let mut gov = ResolutionGovernor::new(GovernorConfig::default(), 16);
        run(&mut gov, &mut solver, 900);
        assert_eq!(gov.side(), 32);
        // Four times slower (another program took the cores): 16 fits.
        solver.k *= 4.0;
        let sides = run(&mut gov, &mut solver, 900);
        assert_eq!(sides, vec![16], "one drop straight to the rung that fits");
        solver.k /= 4.0;
        let sides = run(&mut gov, &mut solver, 1800);
        assert_eq!(sides, vec![24, 32], "climbs back one rung at a time");
    }

    #[test]
    fn a_load_between_fit_and_overload_is_held() {
        // The hysteresis band: at 64 the load is 0.75 (keeps up with
        // headroom); 48 would fit, but dropping is only for overload.
        let k = 0.75 / (64 * 64) as f64;
        let mut solver = Synthetic {
            k,
            noise: 0.05,
            skins: 1,
            total: LoadSample::default(),
            step: 0,
        };
        let mut gov = ResolutionGovernor::new(GovernorConfig::default(), 64);
        assert_eq!(run(&mut gov, &mut solver, 1800), Vec::<usize>::new());
        assert!((gov.last_load.unwrap() - 0.75).abs() < 0.05);
    }

    #[test]
    fn readings_across_a_resolution_change_are_not_mixed() {
        let mut gov = ResolutionGovernor::new(GovernorConfig::default(), 16);
        let mut s = LoadSample {
            busy: 0.0,
            simulated: 0.0,
            real: 0.0,
            points: 256,
        };
        assert_eq!(gov.observe(s, 1.0), None);
        // The points changed: a new window, whatever the numbers say.
        s.points = 64;
        s.real = 10.0;
        s.busy = 100.0;
        assert_eq!(gov.observe(s, 1.0), None);
        assert_eq!(gov.last_load, None);
        // Nothing simulated over a whole window: overloaded, drop to the bottom.
        s.real += 1.0;
        assert_eq!(gov.observe(s, 1.0), Some(8));
    }
}
