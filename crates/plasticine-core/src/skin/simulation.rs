//! The driver that advances every skin of a character in simulation time
//! (LEMAN §4.2): adaptive steps, constraint enforcement with step rejection and
//! root bracketing (§4.2.3), divergence rollback, a wall-clock budget, and
//! statistics.

use super::constraints::Constraints;
use super::driver::SkeletonDriver;
use super::flesh::FleshRun;
use super::integrate::{IntegratorKind, IntegratorState};
pub use super::settings::{Frequency, SimError, SimEvent, SkinStats, SolverSettings};
use super::stepper::{SkinRuntime, SkinStepper};
use super::system::SkinSystem;
use crate::character::Character;
use crate::fem::flesh_changed;
use crate::fem::{FleshPose, FleshSim};
use glam::Vec3;
use rayon::prelude::*;
use std::time::{Duration, Instant};

/// What one [`Simulation::advance_to`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AdvanceReport {
    /// Simulation time every skin reached.
    pub reached: f64,
    /// The wall-clock budget ran out before the target.
    pub fell_behind: bool,
    /// What the user should know about from this advance (divergences rolled back).
    pub events: Vec<SimEvent>,
    /// Wall-clock time the advance took.
    pub wall: Duration,
}

/// Everything the solver carries from one [`Simulation::advance_to`] to the
/// next for one skin, exactly (what a bake checkpoint saves): with it a
/// simulation continues bit for bit as if it had never stopped.
///
/// Not in it: the FEM flesh's state. A restored simulation replays the
/// flesh from its start (t = 0, at rest) up to the skins' time on the next
/// advance; the flesh's fixed steps are deterministic, so this reproduces
/// its trajectory exactly (without grabs, which are interactive only).
///
/// Not in it either, because nothing is carried there: the constraint structures
/// (`Constraints` are scratch rebuilt on every resolve), the skin system
/// (built anew on every `advance_to`) and the integrators' buffers (see
/// [`IntegratorState`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SkinState {
    /// Position of every skin point (m).
    pub position: Vec<Vec3>,
    /// Velocity of every skin point (m/s).
    pub velocity: Vec<Vec3>,
    /// Simulation time reached.
    pub time: f64,
    /// The step to try next.
    pub h: f64,
    /// The step limit (cut after a divergence).
    pub h_cap: f64,
    /// The skin's step counters.
    pub stats: SkinStats,
    /// What the skin's integrator carries between steps.
    pub integrator: IntegratorState,
}

/// The solver state of a whole [`Simulation`] (see [`SkinState`]).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SimState {
    /// The clock of a character without skins.
    pub clock: f64,
    /// The integrator the state belongs to.
    pub integrator: IntegratorKind,
    /// The state of every skin, in the character's order.
    pub skins: Vec<SkinState>,
}

/// A character whose skins are being simulated.
pub struct Simulation {
    /// The character, its skins holding the current positions and velocities.
    pub character: Character,
    /// What poses the skeleton at each simulated time.
    pub driver: SkeletonDriver,
    settings: SolverSettings,
    skins: Vec<SkinRuntime>,
    /// Time reached by the last advance (what `time()` reports without skins).
    clock: f64,
    /// The FEM flesh of an FEM character: stepped to each target
    /// before the skins, whose muscles ride on it.
    flesh: Option<FleshRun>,
    /// Each skin's highest frequency `ω_max` (rad/s) at its creation, for the
    /// explicit integrators' stability limit ([`super::stability`]). Kept
    /// through `restore`, so a resumed bake steps as the uninterrupted one.
    omega: Vec<Frequency>,
    /// Where the skins cross as the character was given (a limb's root inside
    /// the body): left out of skin contact. Kept through `restore` too.
    junctions: super::contact::Junctions,
    /// The ground a responding skeleton lands on and the drop height it
    /// started from, made again on `restore`.
    ground: Option<(crate::contact::Plane, Option<f64>)>,
    /// The hand's capsules pushing the character (the push tool): the
    /// skins are held out of them, and a responding skeleton's flesh is
    /// pushed by them.
    pushers: Vec<crate::contact::Capsule>,
    /// The embedded mesh's blendshapes, solved for the drawn posture's
    /// weights when it is drawn (behind a lock: drawing reads the
    /// simulation, and the solve keeps its warm start).
    blend: Option<std::sync::Mutex<super::BlendRun>>,
}

impl Simulation {
    /// Starts simulating `character` at time 0 with its boundary rows on their joints;
    /// fails on an invalid character, invalid settings or FEM flesh that cannot be built.
    pub fn new(
        character: Character,
        driver: SkeletonDriver,
        settings: SolverSettings,
    ) -> Result<Self, SimError> {
        character.validate()?;
        settings.validate().map_err(SimError::Settings)?;
        let flesh = build_flesh(&character, &driver, 0.0)?;
        let blend = super::BlendRun::build(&character)?.map(std::sync::Mutex::new);
        let mut sim = Self {
            character,
            driver,
            settings,
            skins: Vec::new(),
            clock: 0.0,
            flesh,
            omega: Vec::new(),
            junctions: Default::default(),
            ground: None,
            pushers: Vec::new(),
            blend,
        };
        sim.reset_runtimes(0.0);
        // Start consistent: boundary rows on their joints.
        for s in 0..sim.skins.len() {
            sim.prescribe_skin(s, 0.0);
        }
        sim.measure_frequencies();
        Ok(sim)
    }

    fn reset_runtimes(&mut self, t: f64) {
        self.clock = t;
        let tol = &self.settings.tolerances;
        self.skins = (0..self.character.skins.len())
            .map(|_| SkinRuntime {
                integrator: self.settings.integrator.create(),
                time: t,
                h: (tol.max_step * 0.1).max(tol.min_step),
                h_cap: tol.max_step,
                constraints: Constraints::default(),
                stats: SkinStats {
                    smallest_step: f64::INFINITY,
                    ..SkinStats::default()
                },
                work: 0,
            })
            .collect();
    }

    /// The skins as they are now, to check later states against with
    /// [`Simulation::crossings_since`].
    pub fn skins_now(&self) -> super::contact::Obstacles {
        super::contact::Obstacles::of_skins(self.time(), 0.0, &self.character.skins)
    }

    /// Every point of a skin that was outside another skin (or another
    /// sheet of itself) in `start` and is inside it now, by brute force:
    /// the invariant skin contact keeps (`super::contact`). Left out, as
    /// the solver leaves them: the junctions as the character was built,
    /// and points whose own muscles have come within the gap of the other
    /// skin (a limb swung into the body), with a few grid steps around.
    pub fn crossings_since(
        &self,
        start: &super::contact::Obstacles,
    ) -> Vec<super::contact::Crossing> {
        use super::contact::{Junctions, SKIN_GAP, crossings};
        let body = self.posed_body(self.time());
        let anchors: Vec<Vec<Vec3>> = self
            .character
            .skins
            .iter()
            .map(|s| {
                s.points
                    .position
                    .iter()
                    .map(|&p| super::constraints::anchor(&body, &s.muscles, p))
                    .collect()
            })
            .collect();
        let probes: Vec<&[Vec3]> = anchors.iter().map(|a| &a[..]).collect();
        let now = self.skins_now();
        let joined = Junctions::where_inside(&now, &probes, SKIN_GAP).union(&self.junctions);
        crossings(start, &now, &joined)
    }

    /// `ω_max` of every skin at its current state (see [`super::stability`]),
    /// and where the skins cross.
    fn measure_frequencies(&mut self) {
        self.junctions = super::contact::Junctions::new(&self.skins_now());
        let (character, driver, flesh) = (&self.character, &self.driver, self.flesh.as_ref());
        let times: Vec<f64> = self.skins.iter().map(|rt| rt.time).collect();
        self.omega = character
            .skins
            .par_iter()
            .zip(times)
            .map(|(skin, t)| {
                let mut sys = SkinSystem::new(character, skin, driver).with_flesh(flesh);
                Frequency {
                    omega: super::stability::highest_frequency(&mut sys, t, &skin.points.position),
                    stretch: sys.min_stretch(&skin.points.position),
                }
            })
            .collect();
    }

    /// Each skin's estimated highest frequency `ω_max` (rad/s).
    pub fn highest_frequencies(&self) -> Vec<f64> {
        self.omega.iter().map(|f| f.omega).collect()
    }

    fn prescribe_skin(&mut self, s: usize, t: f64) {
        let mut skin = std::mem::take(&mut self.character.skins[s].points.position);
        let mut vel = std::mem::take(&mut self.character.skins[s].points.velocity);
        {
            use super::integrate::SecondOrderSystem;
            let mut sys = SkinSystem::new(&self.character, &self.character.skins[s], &self.driver)
                .with_flesh(self.flesh.as_ref());
            sys.prescribe(t, &mut skin, &mut vel);
        }
        self.character.skins[s].points.position = skin;
        self.character.skins[s].points.velocity = vel;
    }

    /// The solver settings in use.
    pub fn settings(&self) -> &SolverSettings {
        &self.settings
    }

    /// Changes settings; switching the integrator takes effect at the next step (§4.2.1).
    pub fn set_settings(&mut self, settings: SolverSettings) -> Result<(), SimError> {
        settings.validate().map_err(SimError::Settings)?;
        let switch = settings.integrator != self.settings.integrator;
        self.settings = settings;
        for rt in &mut self.skins {
            if switch {
                rt.integrator = self.settings.integrator.create();
            }
            rt.h_cap = self.settings.tolerances.max_step;
            rt.h = rt.h.clamp(self.settings.tolerances.min_step, rt.h_cap);
        }
        Ok(())
    }

    /// The time every skin has reached.
    pub fn time(&self) -> f64 {
        if self.skins.is_empty() {
            // A skeleton without skin still has a clock.
            return self.clock;
        }
        self.skins
            .iter()
            .map(|s| s.time)
            .fold(f64::INFINITY, f64::min)
    }

    /// Wall seconds skin `skin` has spent holding its points outside the
    /// muscles' fat layer (the skin–muscle contact) since it was built or
    /// restored: timing for the benches, never part of the state.
    pub fn muscle_contact_seconds(&self, skin: usize) -> f64 {
        self.skins[skin].constraints.seconds()
    }

    /// The counters of skin `skin`, with its integrator's current force evaluations.
    pub fn stats(&self, skin: usize) -> SkinStats {
        let mut s = self.skins[skin].stats;
        s.evals = self.skins[skin].integrator.evals();
        s
    }

    /// The exact solver state, to continue later with [`restore`](Self::restore).
    pub fn save(&self) -> SimState {
        SimState {
            clock: self.clock,
            integrator: self.settings.integrator,
            skins: self
                .skins
                .iter()
                .zip(&self.character.skins)
                .map(|(rt, skin)| SkinState {
                    position: skin.points.position.clone(),
                    velocity: skin.points.velocity.clone(),
                    time: rt.time,
                    h: rt.h,
                    h_cap: rt.h_cap,
                    stats: rt.stats,
                    integrator: rt.integrator.state(),
                })
                .collect(),
        }
    }

    /// Continues from a state [`save`](Self::save)d by a simulation of the
    /// same character and settings. Checks that it fits (skin and point
    /// counts, integrator, finite values); on error nothing is changed.
    pub fn restore(&mut self, state: &SimState) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::State(m));
        if state.integrator != self.settings.integrator {
            return bad(format!(
                "it was saved by the {} integrator, this simulation uses {}",
                state.integrator.name(),
                self.settings.integrator.name()
            ));
        }
        if state.skins.len() != self.character.skins.len() {
            return bad(format!(
                "it has {} skins, the character {}",
                state.skins.len(),
                self.character.skins.len()
            ));
        }
        if !state.clock.is_finite() {
            return bad(format!("clock {} is not finite", state.clock));
        }
        for (s, (st, skin)) in state.skins.iter().zip(&self.character.skins).enumerate() {
            let p = skin.points.len();
            if st.position.len() != p || st.velocity.len() != p {
                return bad(format!(
                    "skin {s} ({:?}) has {} positions and {} velocities, the {}x{} grid {p} points",
                    skin.name,
                    st.position.len(),
                    st.velocity.len(),
                    skin.m,
                    skin.n
                ));
            }
            let finite = st
                .position
                .iter()
                .chain(&st.velocity)
                .all(|x| x.is_finite());
            if !(finite && st.time.is_finite()) {
                return bad(format!(
                    "skin {s} ({:?}) holds non-finite values",
                    skin.name
                ));
            }
            if !(st.h > 0.0 && st.h.is_finite() && st.h_cap > 0.0 && st.h_cap.is_finite()) {
                return bad(format!(
                    "skin {s} ({:?}): step {} and step limit {} must be positive",
                    skin.name, st.h, st.h_cap
                ));
            }
        }
        if self.flesh.is_some() {
            self.flesh = build_flesh(&self.character, &self.driver, 0.0)?;
            // The flesh replays from t = 0: lifted the same way (the skins'
            // state comes with the saved state).
            if let Some((ground, drop)) = self.ground {
                let posture = self.driver.posture_at(0.0);
                if let Some(flesh) = self.flesh.as_mut().and_then(FleshRun::fem_mut) {
                    flesh.make_dynamic(&self.character, &posture, ground, drop)?;
                }
            }
        }
        self.clock = state.clock;
        for ((st, skin), rt) in state
            .skins
            .iter()
            .zip(&mut self.character.skins)
            .zip(&mut self.skins)
        {
            skin.points.position.clone_from(&st.position);
            skin.points.velocity.clone_from(&st.velocity);
            let mut integrator = self.settings.integrator.create();
            integrator.restore(&st.integrator);
            *rt = SkinRuntime {
                integrator,
                time: st.time,
                h: st.h,
                h_cap: st.h_cap,
                constraints: Constraints::default(),
                stats: st.stats,
                work: 0,
            };
        }
        Ok(())
    }

    /// Current step size of each skin (s).
    pub fn step_sizes(&self) -> Vec<f64> {
        self.skins.iter().map(|s| s.h).collect()
    }

    /// Advances by `real` wall-clock time at the user's simulation/real ratio,
    /// within the budget.
    pub fn advance_real(
        &mut self,
        real: Duration,
        budget: Option<Duration>,
    ) -> Result<AdvanceReport, SimError> {
        let target = self.time() + real.as_secs_f64() * self.settings.time_ratio;
        self.advance_to(target, budget)
    }

    /// Advances every skin to simulation time `target`, or as far as the
    /// wall-clock `budget` allows (then `fell_behind` is set). A skin rolled
    /// back after diverging retries past the budget, for at most four more
    /// of it.
    pub fn advance_to(
        &mut self,
        target: f64,
        budget: Option<Duration>,
    ) -> Result<AdvanceReport, SimError> {
        let start = Instant::now();
        let deadline = budget.map(|b| start + b);
        let mut report = AdvanceReport::default();
        // The flesh first, one velocity offset past the target: the skins'
        // stages read the muscles at t and t + VELOCITY_DT. Within the
        // budget too: a flesh that cannot keep up holds the skins back to
        // where it got (the report says it fell behind) rather than
        // stalling the thread.
        let mut target = target;
        let asked = target;
        let from = self.time();
        if let Some(flesh) = &mut self.flesh {
            let driver = &self.driver;
            flesh.advance_within(
                &self.character,
                |t| driver.posture_at(t),
                target + super::system::VELOCITY_DT,
                deadline,
            );
            target = target.min(flesh.time() - super::system::VELOCITY_DT);
        }
        report.events.extend(self.unsettled_contact(from));
        // Skins are independent systems: step them in parallel. They are taken
        // out of the character meanwhile; the inner layers stay readable.
        let mut skins = std::mem::take(&mut self.character.skins);
        let (character, driver, settings) = (&self.character, &self.driver, &self.settings);
        let flesh = self.flesh.as_ref();
        let omega = &self.omega;
        let obstacles = (self.settings.skin_contact && !skins.is_empty()).then(|| {
            let t0 = self
                .skins
                .iter()
                .map(|rt| rt.time)
                .fold(f64::INFINITY, f64::min);
            super::contact::Obstacles::of_skins(t0, target - t0, &skins)
        });
        let junctions = &self.junctions;
        let pushers = &self.pushers[..];
        // The costliest first (by the point-steps of their last advance):
        // rayon hands the skins out in this order, so the cheap ones fill
        // the threads the costly ones leave free, and the skins' own passes
        // (split over the pool) end an advance together. Measured on the
        // 64×64 penguin on 2 threads, two flippers each taking 2.5× the
        // body's steps: 1.95 s for 3 s of animation, against 2.09 s with
        // the body first.
        let mut jobs: Vec<(usize, (&mut crate::character::Skin, &mut SkinRuntime))> = skins
            .iter_mut()
            .zip(self.skins.iter_mut())
            .enumerate()
            .collect();
        jobs.sort_by_key(|(_, (_, rt))| std::cmp::Reverse(rt.work));
        let mut results: Vec<(usize, Result<Vec<SimEvent>, SimError>)> = jobs
            .into_par_iter()
            .map(|(s, (skin, rt))| {
                let mut stepper = SkinStepper {
                    character,
                    driver,
                    flesh,
                    settings,
                    skin,
                    rt,
                    index: s,
                    omega: omega.get(s).copied().unwrap_or_default(),
                    contact: obstacles.as_ref().map(|o| (o, junctions)),
                    pushers,
                };
                (s, stepper.advance(target, deadline))
            })
            .collect();
        self.character.skins = skins;
        results.sort_by_key(|(s, _)| *s);
        for (_, r) in results {
            report.events.extend(r?);
        }
        if self.skins.is_empty() {
            self.clock = self.clock.max(target);
        }
        let now = self.time();
        if let Some(flesh) = &mut self.flesh {
            flesh.forget_before(now);
        }
        report.reached = self.time().min(target);
        report.fell_behind = report.reached < asked - 1e-12;
        report.wall = start.elapsed();
        Ok(report)
    }

    /// Changes the resolution of every skin now, keeping the clock (§6.5): all
    /// per-point fields, positions and velocities included, are resampled
    /// bilinearly and the simulation carries on from there.
    pub fn resample_skins(&mut self, m: usize, n: usize) -> Result<(), SimError> {
        let t = self.time();
        let mut c = self.character.clone();
        for s in &mut c.skins {
            *s = crate::character::resample(s, m, n)?;
        }
        self.set_character(c)?;
        for rt in &mut self.skins {
            rt.time = t;
        }
        Ok(())
    }

    /// Deepest penetration of any skin's inner fat point into any muscle, at the
    /// current state (the invariant of §4.2.3).
    pub fn deepest_penetration(&self) -> f32 {
        let mut worst = 0.0f32;
        for (s, skin) in self.character.skins.iter().enumerate() {
            let body = super::system::posed_body(
                &self.character,
                &self.driver,
                self.flesh.as_ref(),
                self.skins[s].time,
            );
            let grid = super::elastic::Grid::of(skin);
            worst = worst.max(super::constraints::deepest_penetration(
                &grid,
                &skin.points.fat,
                &body,
                &skin.muscles,
                &skin.points.position,
            ));
        }
        worst
    }

    /// The FEM flesh, for an FEM character.
    pub fn flesh(&self) -> Option<&FleshSim> {
        self.flesh.as_ref().and_then(FleshRun::fem)
    }

    /// The FEM flesh, to grab it.
    pub fn flesh_mut(&mut self) -> Option<&mut FleshSim> {
        self.flesh.as_mut().and_then(FleshRun::fem_mut)
    }

    /// The running flesh, FEM or modal (None when the muscles are kinematic).
    pub fn flesh_run(&self) -> Option<&FleshRun> {
        self.flesh.as_ref()
    }

    /// The flesh at the current time, for drawing (None when kinematic).
    pub fn flesh_pose(&self) -> Option<FleshPose> {
        let t = self.time();
        let flesh = self.flesh.as_ref()?;
        let posture = self.posture_at(t);
        let mut pose = flesh.pose(&self.character, &posture, t);
        if let (Some(blend), Some(fem), Some(mesh)) = (&self.blend, flesh.fem(), pose.mesh.as_mut())
        {
            let mut blend = blend.lock().unwrap_or_else(|e| e.into_inner());
            // The hand dents the blend (and it recovers once let go).
            let q = fem.q_at(t);
            let obstacles =
                blend.rest_obstacles(&self.pushers, t, mesh, |v| fem.mesh_gradient(v, &q));
            fem.reshape_mesh(mesh, &q, blend.offsets_pushed(&posture.blend, &obstacles));
            pose.blend_weights = (
                blend
                    .names()
                    .map(String::from)
                    .zip(blend.weights())
                    .collect(),
                blend.failure().map(String::from),
            );
        }
        Some(pose)
    }

    /// Whether the blendshapes' Newton starts from the last blend (the
    /// default: fast while scrubbing) or from the base every time (a blend
    /// then depends on its weights alone, as a resumable bake needs).
    pub fn set_blend_warm_start(&mut self, warm: bool) {
        if let Some(b) = &mut self.blend {
            b.get_mut().unwrap_or_else(|e| e.into_inner()).warm_start = warm;
        }
    }

    /// Why the last blendshape solve failed, if it did (the blend before it
    /// is drawn).
    pub fn blend_failure(&self) -> Option<String> {
        let blend = self.blend.as_ref()?.lock().ok()?;
        blend.failure().map(str::to_string)
    }

    /// The skeleton's posture at time t: the driver's, with the root where
    /// a responding skeleton's core carried it.
    pub fn posture_at(&self, t: f64) -> crate::character::Posture {
        let driven = self.driver.posture_at(t);
        match &self.flesh {
            Some(f) => f.posture(&self.character, &driven, t),
            None => driven,
        }
    }

    /// A responding skeleton's flesh steps after `from` whose ground
    /// contact did not settle, as one event (a resumed bake replays the
    /// steps before it, already reported).
    fn unsettled_contact(&mut self, from: f64) -> Option<SimEvent> {
        let core = self.flesh_mut()?.core_mut()?;
        let steps: Vec<(f64, f64)> = core
            .take_unsettled()
            .into_iter()
            .filter(|&(t, _)| t > from)
            .collect();
        let &(at, _) = steps.first()?;
        Some(SimEvent::ContactUnsettled {
            steps: steps.len(),
            at,
            violation: steps.iter().map(|s| s.1).fold(0.0, f64::max),
        })
    }

    /// The hand's capsules pushing the character from now on (none: the
    /// hand lets go). The skins are held out of them; a responding
    /// skeleton's flesh is pushed by them, and the push's impulse is in
    /// [`push_impulse`](Self::push_impulse). Refused, naming the field,
    /// for a capsule that is not finite or has no radius.
    pub fn set_pushers(
        &mut self,
        pushers: Vec<crate::contact::Capsule>,
    ) -> Result<(), crate::character::InvalidField> {
        for c in &pushers {
            c.validate()?;
        }
        if let Some(core) = self.flesh_mut().and_then(|f| f.core_mut()) {
            core.pushers.clone_from(&pushers);
        }
        self.pushers = pushers;
        Ok(())
    }

    /// The normal impulse (N s) the hand's capsules gave a responding
    /// skeleton's flesh in its last step, and the contacts it took: for
    /// the haptic pulse. None when the skeleton does not respond.
    pub fn push_impulse(&self) -> Option<(f64, usize)> {
        let core = self.flesh.as_ref()?.fem()?.core()?;
        Some((core.last.push_impulse, core.last.push_contacts))
    }

    /// Makes the skeleton respond on FEM flesh (see `fem::dynamic`): its
    /// core falls, tips and lands on `ground`. With `drop`, the character
    /// (flesh and skins) is first lifted so its lowest contact proxy is that
    /// high over the ground. Only at the start (time 0).
    pub fn make_dynamic(
        &mut self,
        ground: crate::contact::Plane,
        drop: Option<f64>,
    ) -> Result<(), SimError> {
        let t = self.time();
        let posture = self.driver.posture_at(t);
        let character = &self.character;
        let Some(flesh) = self.flesh.as_mut().and_then(FleshRun::fem_mut) else {
            return Err(SimError::Dynamic(crate::fem::DynamicError::Flesh(
                "this character's flesh is not FEM (choose FEM in the panel's flesh row, or `plasticine sample NAME --flesh fem`)".into(),
            )));
        };
        let before = crate::fem::root_frame(character, &posture).translation;
        flesh.make_dynamic(character, &posture, ground, drop)?;
        let lift = flesh
            .core()
            .map_or(glam::DVec3::ZERO, |c| c.position - before);
        let lift = lift.as_vec3();
        for skin in &mut self.character.skins {
            for p in &mut skin.points.position {
                *p += lift;
            }
        }
        // The integrators start afresh from the lifted skins (a step's
        // history from below would read the lift as a blow), their
        // boundary rows on the joints where the core now holds them.
        self.reset_runtimes(t);
        for s in 0..self.skins.len() {
            self.prescribe_skin(s, t);
        }
        self.ground = Some((ground, drop));
        self.measure_frequencies();
        Ok(())
    }

    /// Moves a character whose skeleton responds (see
    /// [`make_dynamic`](Self::make_dynamic)), flesh and skins, by `offset`:
    /// placing a second character beside the first. Only at the start.
    pub fn place(&mut self, offset: glam::DVec3) -> Result<(), SimError> {
        let t = self.time();
        let placed = self
            .flesh
            .as_mut()
            .and_then(FleshRun::fem_mut)
            .is_some_and(|f| f.place(offset));
        if !placed {
            return Err(SimError::Dynamic(crate::fem::DynamicError::Flesh(
                "only a character whose skeleton responds (on the ground) can be placed".into(),
            )));
        }
        for skin in &mut self.character.skins {
            for p in &mut skin.points.position {
                *p += offset.as_vec3();
            }
        }
        self.reset_runtimes(t);
        for s in 0..self.skins.len() {
            self.prescribe_skin(s, t);
        }
        Ok(())
    }

    /// Advances several characters whose skeletons respond together to
    /// `target`: their flesh steps as one scene (each touching the ground
    /// and the others, `FleshSim::advance_together`), then each one's
    /// skins follow their own flesh. They must be at the same time, with
    /// the same flesh time step.
    pub fn advance_together(
        sims: &mut [&mut Simulation],
        target: f64,
    ) -> Result<Vec<AdvanceReport>, SimError> {
        let mut scene = Vec::with_capacity(sims.len());
        let mut drivers = Vec::with_capacity(sims.len());
        for (i, sim) in sims.iter_mut().enumerate() {
            let Simulation {
                flesh,
                character,
                driver,
                ..
            } = &mut **sim;
            let Some(flesh) = flesh.as_mut().and_then(FleshRun::fem_mut) else {
                return Err(
                    crate::fem::DynamicError::from(crate::fem::SceneError::NotDynamic(i)).into(),
                );
            };
            scene.push((flesh, &*character));
            drivers.push(&*driver);
        }
        FleshSim::advance_together(
            &mut scene,
            |i, t| drivers[i].posture_at(t),
            target + super::system::VELOCITY_DT,
        )
        .map_err(crate::fem::DynamicError::from)?;
        drop(scene);
        sims.iter_mut()
            .map(|sim| sim.advance_to(target, None))
            .collect()
    }

    /// The inner layers (skeleton and muscles, on the flesh) at time t.
    pub fn posed_body(&self, t: f64) -> crate::kinematics::PosedBody {
        super::system::posed_body(&self.character, &self.driver, self.flesh.as_ref(), t)
    }

    /// Total energy of skin `s` at its current state.
    pub fn energy(&self, s: usize) -> f64 {
        let skin = &self.character.skins[s];
        let mut sys =
            SkinSystem::new(&self.character, skin, &self.driver).with_flesh(self.flesh.as_ref());
        sys.energy(
            self.skins[s].time,
            &skin.points.position,
            &skin.points.velocity,
        )
    }

    /// Replaces the character (after an edit or a resampling), keeping the
    /// solver's clock. Integrator history is restarted.
    pub fn set_character(&mut self, character: Character) -> Result<(), SimError> {
        character.validate()?;
        let t = self.finite_time();
        if flesh_changed(&self.character, &character) || self.flesh.is_none() {
            self.flesh = FleshRun::build(&character, &self.driver, t, self.flesh.as_ref())?;
        }
        self.take_blend(&character)?;
        self.take_character(character, t);
        Ok(())
    }

    /// As [`set_character`](Self::set_character), with `flesh` built
    /// elsewhere for `character` (the modes computed on another thread,
    /// from an earlier time): it is stepped up to the simulation's clock.
    pub fn set_character_with_flesh(
        &mut self,
        character: Character,
        mut flesh: FleshRun,
    ) -> Result<(), SimError> {
        character.validate()?;
        let t = self.finite_time();
        let driver = &self.driver;
        flesh.advance_within(&character, |s| driver.posture_at(s), t, None);
        self.flesh = Some(flesh);
        self.take_blend(&character)?;
        self.take_character(character, t);
        Ok(())
    }

    /// Compiles `character`'s blendshapes unless they are those running.
    fn take_blend(&mut self, character: &Character) -> Result<(), SimError> {
        let fits = match self.blend.as_mut() {
            // Unchanged, or a sculpt stroke (target shapes only): taken in
            // without rebuilding the springs.
            Some(b) => b
                .get_mut()
                .unwrap_or_else(|e| e.into_inner())
                .take_in(character)?,
            None => false,
        };
        if !fits {
            let warm = self
                .blend
                .as_mut()
                .is_none_or(|b| b.get_mut().unwrap_or_else(|e| e.into_inner()).warm_start);
            self.blend = super::BlendRun::build(character)?.map(std::sync::Mutex::new);
            self.set_blend_warm_start(warm);
        }
        Ok(())
    }

    /// The clock, or 0 when it is not finite (after a failure).
    fn finite_time(&self) -> f64 {
        let t = self.time();
        if t.is_finite() { t } else { 0.0 }
    }

    /// Takes `character` in at time t, its flesh already in place.
    fn take_character(&mut self, character: Character, t: f64) {
        self.character = character;
        self.reset_runtimes(t);
        for s in 0..self.skins.len() {
            self.prescribe_skin(s, self.skins[s].time);
        }
        self.measure_frequencies();
    }
}

/// The flesh simulation of a character at time t (None when kinematic).
fn build_flesh(
    character: &Character,
    driver: &SkeletonDriver,
    t: f64,
) -> Result<Option<FleshRun>, SimError> {
    Ok(FleshRun::build(character, driver, t, None)?)
}
