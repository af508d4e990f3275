//! The simulation thread (LEMAN §5.2, made concurrent): it owns the skin
//! state, receives edits and postures as [`SimMessage`]s, advances simulated
//! time at the user's ratio to real time, and publishes an immutable
//! [`SceneSnapshot`] after every advance. Nothing flows back but the snapshot
//! and a [`SimStatus`].
//!
//! # Timing
//!
//! Every `SIM_TICK` (about 120 Hz) the thread advances the skins by the real
//! time elapsed since its previous advance times `time_ratio`, within a
//! wall-clock budget of `ADVANCE_BUDGET`. When the solver cannot cover the
//! elapsed time within the budget the shortfall is dropped, not made up later
//! (catching up would only make the lag grow), and the status says it is
//! *falling behind* and what ratio it achieved. Between advances it waits on
//! its channel, so a message is seen at once and the thread never spins; with
//! no skin to simulate (or while paused) it wakes only every `IDLE_WAIT`.
//!
//! Edits arriving during a wait are coalesced: only the newest character and
//! the newest posture are applied, at the next advance (or at once while
//! idle), in the order character, resolution, posture.
//!
//! # Step delay
//!
//! [`SimMessage::SetStepDelay`] adds a deliberate wait after every advance, so
//! the solver behaves like one whose step costs that much more: snapshots come
//! out at most once per delay and edits show up that much later, while the
//! frame loop keeps rendering at its own rate. It exists for the latency test
//! and to demonstrate the decoupling; the wait is a wait on the channel, so
//! messages (and [`SimMessage::Shutdown`]) are still received during it.
//!
//! # Errors
//!
//! Nothing a message carries can stop the thread: an invalid character or
//! invalid settings are refused, a divergence the solver could not recover
//! from leaves the skins at their last good state, and in every case the
//! reason goes to [`SimStatus::message`] as a sentence a user can act on. The
//! thread goes on publishing.

use crate::character::{Character, Posture};
use crate::character::{ResampleError, resample};
use crate::contact::GroundDrop;
use crate::fem::flesh_changed;
use crate::skin::{SimError, SimEvent, Simulation, SkeletonDriver, SolverSettings};
use crate::snapshot::{SceneSnapshot, SkinSurface};
pub use hands::{FleshGrab, HandPush};
use modes::PendingModes;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
pub use trace::SolverTrace;
use trace::TraceSampler;

/// Period of the simulation thread's advances when nothing slows it down
/// (a headset's frame rate, so every frame can see a fresh snapshot).
pub const SIM_TICK: Duration = Duration::from_micros(8_333);
/// Wall-clock budget of one advance: the longest a snapshot waits for the
/// solver when it cannot keep up (then the thread reports falling behind).
pub const ADVANCE_BUDGET: Duration = Duration::from_millis(33);
/// FEM flesh slower than this everywhere (m/s), unheld under a still
/// skeleton, is at rest: the thread stops ticking for it.
pub const FLESH_REST_SPEED: f64 = 1e-5;
/// How long the thread sleeps on its channel with nothing to simulate.
pub const IDLE_WAIT: Duration = Duration::from_millis(100);
/// How often an idle thread looks whether modal modes being computed are
/// ready.
const MODES_POLL: Duration = Duration::from_millis(20);
/// The most real time one advance tries to cover (beyond it, e.g. after the
/// process was stopped in a debugger, the simulation does not try to catch
/// up). It grows to twice the step delay when one is set.
pub const MAX_REAL_STEP: Duration = Duration::from_millis(250);

/// What the frame loop (or a front end) tells the simulation thread.
#[derive(Clone, Debug)]
pub enum SimMessage {
    /// An edit: the model as of history revision `revision`. It replaces the
    /// simulated one but keeps the current positions and velocities of every
    /// skin that is still the same skin (same name, grid size and boundary
    /// joints), so editing a muscle does not reset the skin. New or resized
    /// skins start from the character's own points.
    SetCharacter {
        /// The edited model.
        character: Arc<Character>,
        /// The history revision the model is as of.
        revision: u64,
    },
    /// The interactive posture (the working posture, or the IK drag in
    /// progress). The skeleton blends to it over one tick of simulated time
    /// so the skin's boundary never jumps between two integrator stages.
    SetPosture(Posture),
    /// Any other skeleton driver, e.g. `SkeletonDriver::Keys` to play the key
    /// postures. A later `SetPosture` replaces it.
    SetDriver(SkeletonDriver),
    /// Solver settings (integrator, tolerances, contact, time ratio).
    SetSettings(SolverSettings),
    /// Stops (`true`) or resumes simulated time. Edits are still applied and
    /// published while paused.
    Pause(bool),
    /// Simulates every skin at m×n (bilinear resampling, LEMAN §6.5), now and
    /// for every character received afterwards: the knob to turn when the
    /// solver falls behind. The edit side's model keeps its own resolution.
    Resample {
        /// Points around each skin (its grid's periodic direction).
        m: usize,
        /// Rows of each skin, from bottom to top.
        n: usize,
    },
    /// A deliberate extra wait after every advance (see the module docs).
    SetStepDelay(Duration),
    /// Ends the thread (also sent by `Drop`).
    Shutdown,
    /// Grabs the FEM flesh with a hand (Capell §4.4): a position constraint
    /// at the picked point that follows the hand until released. Ignored
    /// for kinematic flesh.
    Grab(FleshGrab),
    /// The hand pushes the character (none: it stopped pushing): the skins
    /// are held out of its capsule, and a responding skeleton's flesh is
    /// pushed by it.
    Push(Option<HandPush>),
    /// Makes the skeleton respond on FEM flesh: it falls onto the ground,
    /// stands or lies there, and the hand can push it (kept through edits).
    MakeDynamic(GroundDrop),
    /// Undoes [`SimMessage::Resample`]: simulates every skin at the model's
    /// own resolution again, resampling the current simulated state (so the
    /// skin goes on from where it hangs rather than jumping back).
    NativeResolution,
}

/// Cumulative solver cost, for a governor that picks the resolution from the
/// measured cost per simulated second ([`SimThread::load`]): differences of
/// two readings give the cost over the time between them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SimLoad {
    /// Solver wall time of every advance so far.
    pub solver_wall: Duration,
    /// Step delays waited out so far (a deliberate cost, see the module docs).
    pub delay: Duration,
    /// Simulated seconds covered by those advances.
    pub simulated: f64,
    /// Real time those advances tried to cover (s).
    pub real: f64,
    /// How many advances so far.
    pub advances: u64,
    /// Skin points simulated now (Σ m·n over the skins).
    pub points: usize,
    /// The resolution set by [`SimMessage::Resample`], `None` at the model's own.
    pub resolution: Option<(usize, usize)>,
}

/// What the simulation thread reports besides the snapshot.
#[derive(Clone, Debug, PartialEq)]
pub struct SimStatus {
    /// Simulated time reached (s).
    pub sim_time: f64,
    /// The requested simulated seconds per real second.
    pub time_ratio: f64,
    /// The ratio actually achieved (smoothed over the last few advances).
    pub achieved_ratio: f64,
    /// The last advance could not cover the elapsed real time.
    pub fell_behind: bool,
    /// Simulated time is stopped (`SimMessage::Pause`).
    pub paused: bool,
    /// History revision of the model being simulated.
    pub revision: u64,
    /// Sequence of the last published snapshot.
    pub sequence: u64,
    /// Solver wall time of the last advance (without the step delay).
    pub step_wall: Duration,
    /// The deliberate wait after every advance (`SimMessage::SetStepDelay`).
    pub step_delay: Duration,
    /// The last event or error, as a sentence for the user (a divergence and
    /// its rollback, a refused edit or setting).
    pub message: Option<String>,
    /// How many messages there have been: a front end shows a message when
    /// this changes.
    pub message_count: u64,
    /// False once the thread has ended (shut down, or stopped by a bug; then
    /// `message` says why).
    pub running: bool,
    /// The solver's counters and energy, for the live plots.
    pub trace: SolverTrace,
    /// The hand's push on a responding skeleton in the last flesh step:
    /// the normal impulse, N s (0 when not touching), for the haptic pulse.
    pub push_impulse: f64,
}

/// The simulation thread's end of the snapshot slot and status.
struct Shared {
    snapshot: Mutex<Arc<SceneSnapshot>>,
    status: Mutex<SimStatus>,
    load: Mutex<SimLoad>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock cannot leave a pointer swap half done.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The simulation thread has ended; messages can no longer be delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the simulation thread has stopped")]
pub struct SimStopped;

/// A [`Simulation`] running on its own thread. Dropping it shuts the thread
/// down and joins it.
pub struct SimThread {
    tx: Sender<SimMessage>,
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl SimThread {
    /// Starts simulating `character` (as of history revision `revision`),
    /// held at its rest posture. The first snapshot is available at once.
    /// An invalid character or invalid settings do not stop it: the status
    /// says why nothing is simulated until a valid `SetCharacter` arrives.
    pub fn spawn(character: Character, settings: SolverSettings, revision: u64) -> SimThread {
        let model = Arc::new(character);
        let posture = model.skeleton.rest_posture();
        let first = SceneSnapshot::of(model.clone(), posture.clone(), revision);
        let status = SimStatus {
            sim_time: 0.0,
            time_ratio: settings.time_ratio,
            achieved_ratio: 0.0,
            fell_behind: false,
            paused: false,
            revision,
            sequence: first.sequence,
            step_wall: Duration::ZERO,
            step_delay: Duration::ZERO,
            message: None,
            message_count: 0,
            running: true,
            trace: SolverTrace::default(),
            push_impulse: 0.0,
        };
        let shared = Arc::new(Shared {
            snapshot: Mutex::new(Arc::new(first)),
            status: Mutex::new(status.clone()),
            load: Mutex::new(SimLoad::default()),
        });
        let (tx, rx) = mpsc::channel();
        let thread_shared = shared.clone();
        let handle = std::thread::Builder::new()
            .name("plasticine-sim".into())
            .spawn(move || {
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    Worker::new(rx, thread_shared.clone(), model, settings, revision, status).run();
                }));
                let mut st = lock(&thread_shared.status);
                st.running = false;
                if let Err(panic) = outcome {
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown cause".into());
                    st.message = Some(format!(
                        "the simulation stopped after an internal error ({what}); \
                         the last snapshot stays on screen: save your work"
                    ));
                    st.message_count += 1;
                }
            })
            .expect("the OS can start a thread");
        SimThread {
            tx,
            shared,
            handle: Some(handle),
        }
    }

    /// The newest snapshot. Never waits for the solver: the lock is held only
    /// for the pointer copy on either side.
    pub fn latest(&self) -> Arc<SceneSnapshot> {
        lock(&self.shared.snapshot).clone()
    }

    /// The thread's current status (a copy); never waits for the solver.
    pub fn status(&self) -> SimStatus {
        lock(&self.shared.status).clone()
    }

    /// The cumulative solver cost, as of the last published snapshot.
    pub fn load(&self) -> SimLoad {
        *lock(&self.shared.load)
    }

    /// Queues a message; never blocks.
    pub fn send(&self, msg: SimMessage) -> Result<(), SimStopped> {
        self.tx.send(msg).map_err(|_| SimStopped)
    }

    /// Stops the thread and waits for it: at most the advance in progress
    /// (bounded by `ADVANCE_BUDGET` plus one solver step, five budgets when
    /// a skin is rolled back), never a step delay.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let _ = self.tx.send(SimMessage::Shutdown);
        if let Some(h) = self.handle.take()
            && h.join().is_err()
        {
            tracing::error!("the simulation thread panicked");
        }
    }
}

impl Drop for SimThread {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Copies the simulated state (positions and velocities) of `old`'s skins into
/// the skins of `new` that are the same skin: same name, same m×n grid, same
/// bottom and top joints. Returns, per skin of `new`, whether it was kept.
pub fn carry_skin_state(old: &Character, new: &mut Character) -> Vec<bool> {
    let mut kept = vec![false; new.skins.len()];
    for (s, skin) in new.skins.iter_mut().enumerate() {
        let same_index = old.skins.get(s).filter(|o| o.name == skin.name);
        let Some(o) = same_index.or_else(|| old.skins.iter().find(|o| o.name == skin.name)) else {
            continue;
        };
        if (o.m, o.n, o.bottom_joint, o.top_joint)
            != (skin.m, skin.n, skin.bottom_joint, skin.top_joint)
            || o.points.position.len() != skin.points.position.len()
            || o.points.velocity.len() != skin.points.velocity.len()
        {
            continue;
        }
        skin.points.position.clone_from(&o.points.position);
        skin.points.velocity.clone_from(&o.points.velocity);
        kept[s] = true;
    }
    kept
}

/// `p` with one angle per joint of a `joints`-joint skeleton: extra angles are
/// dropped, missing ones are rest (zero).
fn fit_posture(p: &Posture, joints: usize) -> Posture {
    let mut p = p.clone();
    p.angles.resize(joints, glam::Vec3::ZERO);
    p
}

/// Whether every posture `driver` produces fits a `joints`-joint skeleton.
fn driver_fits(driver: &SkeletonDriver, joints: usize) -> bool {
    match driver {
        SkeletonDriver::Still(p) => p.validate(joints).is_ok(),
        SkeletonDriver::Keys(keys) => {
            !keys.is_empty() && keys.iter().all(|k| k.posture.validate(joints).is_ok())
        }
        SkeletonDriver::Blend { from, to, .. } => {
            from.validate(joints).is_ok() && to.validate(joints).is_ok()
        }
    }
}

enum PendingDriver {
    Posture(Posture),
    Driver(SkeletonDriver),
}

/// The thread's state.
struct Worker {
    rx: Receiver<SimMessage>,
    shared: Arc<Shared>,
    /// `None` when the model cannot be simulated (then `model` is still drawn).
    sim: Option<Simulation>,
    /// The model as received, for the snapshot.
    model: Arc<Character>,
    revision: u64,
    /// The skeleton driver when there is no simulation.
    idle_driver: SkeletonDriver,
    settings: SolverSettings,
    paused: bool,
    step_delay: Duration,
    resolution: Option<(usize, usize)>,
    sequence: u64,
    last_advance: Instant,
    status: SimStatus,
    /// Something changed since the last snapshot.
    dirty: bool,
    pending_character: Option<(Arc<Character>, u64)>,
    pending_driver: Option<PendingDriver>,
    pending_settings: Option<SolverSettings>,
    pending_resample: bool,
    load: SimLoad,
    /// The hands' grab and push, and the ground.
    hands: hands::Hands,
    /// Modal flesh's modes being computed (meanwhile the muscles ride
    /// rigidly).
    modes: Option<PendingModes>,
    tracer: TraceSampler,
}

impl Worker {
    fn new(
        rx: Receiver<SimMessage>,
        shared: Arc<Shared>,
        model: Arc<Character>,
        settings: SolverSettings,
        revision: u64,
        status: SimStatus,
    ) -> Self {
        let rest = model.skeleton.rest_posture();
        let mut w = Worker {
            rx,
            shared,
            sim: None,
            model: model.clone(),
            revision,
            idle_driver: SkeletonDriver::Still(rest.clone()),
            settings: SolverSettings::default(),
            paused: false,
            step_delay: Duration::ZERO,
            resolution: None,
            sequence: status.sequence,
            last_advance: Instant::now(),
            status,
            dirty: true,
            pending_character: None,
            pending_driver: None,
            pending_settings: None,
            pending_resample: false,
            load: SimLoad::default(),
            hands: hands::Hands::default(),
            modes: None,
            tracer: TraceSampler::default(),
        };
        match settings.validate() {
            Ok(()) => w.settings = settings,
            Err(e) => w.report(format!(
                "the solver settings were refused ({e}); using the defaults"
            )),
        }
        w.status.time_ratio = w.settings.time_ratio;
        let character = w.defer_modes(Arc::unwrap_or_clone(model));
        match Simulation::new(character, SkeletonDriver::Still(rest), w.settings.clone()) {
            Ok(sim) => w.sim = Some(sim),
            Err(e) => w.report(format!(
                "nothing is simulated: {e}. Fix the character to start the simulation"
            )),
        }
        w
    }

    /// Records a message for the user. The same message again (a divergence
    /// the solver keeps hitting at every tick) is not repeated.
    fn report(&mut self, message: String) {
        if self.status.message.as_ref() == Some(&message) {
            return;
        }
        tracing::warn!("simulation: {message}");
        self.status.message = Some(message);
        self.status.message_count += 1;
        self.dirty = true;
    }

    /// Says `said`, if anything; something changed either way.
    fn tell(&mut self, said: Option<String>) {
        if let Some(m) = said {
            self.report(m);
        }
        self.dirty = true;
    }

    /// Whether simulated time needs advancing at the tick rate.
    fn active(&self) -> bool {
        match &self.sim {
            None => false,
            Some(sim) => {
                !self.paused
                    && (!sim.character.skins.is_empty()
                        || sim
                            .flesh_run()
                            .is_some_and(|f| !f.is_at_rest(FLESH_REST_SPEED))
                        || !matches!(sim.driver, SkeletonDriver::Still(_)))
            }
        }
    }

    fn run(mut self) {
        self.publish();
        let mut next_advance = Instant::now() + SIM_TICK;
        loop {
            let active = self.active();
            let mut deadline = if active {
                next_advance
            } else {
                Instant::now() + IDLE_WAIT
            };
            if self.modes.is_some() {
                deadline = deadline.min(Instant::now() + MODES_POLL);
            }
            let mut woke_by_message = false;
            loop {
                let now = Instant::now();
                let msg = if now >= deadline {
                    match self.rx.try_recv() {
                        Ok(m) => m,
                        Err(TryRecvError::Empty) => break,
                        Err(TryRecvError::Disconnected) => return,
                    }
                } else {
                    match self.rx.recv_timeout(deadline - now) {
                        Ok(m) => m,
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                };
                if matches!(msg, SimMessage::Shutdown) {
                    return;
                }
                self.queue(msg);
                woke_by_message = true;
                if !active {
                    // Idle: apply what came and publish it now (after draining
                    // whatever else is already queued).
                    deadline = now;
                }
            }
            self.apply_pending();
            self.install_modes();
            if self.active() {
                if !active {
                    // Just became active (resumed, or got a skin): time starts now.
                    self.last_advance = Instant::now();
                    next_advance = self.last_advance + SIM_TICK;
                } else if Instant::now() >= next_advance {
                    let start = Instant::now();
                    self.advance();
                    next_advance = (start + SIM_TICK).max(Instant::now() + self.step_delay);
                }
            } else if !woke_by_message && !self.paused {
                // Idle tick: a skeleton without skin still keeps time.
                self.advance();
            }
            if self.dirty {
                self.publish();
            }
        }
    }

    /// Takes a message in; edits wait for `apply_pending`.
    fn queue(&mut self, msg: SimMessage) {
        match msg {
            SimMessage::SetCharacter {
                character,
                revision,
            } => self.pending_character = Some((character, revision)),
            SimMessage::SetPosture(p) => self.pending_driver = Some(PendingDriver::Posture(p)),
            SimMessage::SetDriver(d) => self.pending_driver = Some(PendingDriver::Driver(d)),
            SimMessage::SetSettings(s) => self.pending_settings = Some(s),
            SimMessage::Pause(p) => {
                if p != self.paused {
                    self.paused = p;
                    self.status.paused = p;
                    self.dirty = true;
                }
            }
            SimMessage::Resample { m, n } => {
                self.resolution = Some((m, n));
                self.pending_resample = true;
            }
            SimMessage::SetStepDelay(d) => {
                self.step_delay = d;
                self.status.step_delay = d;
                self.dirty = true;
            }
            SimMessage::NativeResolution => {
                if self.resolution.take().is_some() {
                    self.pending_resample = true;
                }
            }
            SimMessage::Grab(g) => {
                let said = self.hands.grab(self.sim.as_mut(), g);
                self.tell(said);
            }
            SimMessage::Push(p) => {
                let said = self.hands.push(self.sim.as_mut(), p);
                self.tell(said);
            }
            SimMessage::MakeDynamic(ground) => {
                let said = self.hands.make_dynamic(self.sim.as_mut(), ground);
                self.tell(Some(said));
            }
            SimMessage::Shutdown => {}
        }
    }

    fn apply_pending(&mut self) {
        if let Some(s) = self.pending_settings.take() {
            self.apply_settings(s);
        }
        if let Some((c, revision)) = self.pending_character.take() {
            self.apply_character(c, revision);
        } else if std::mem::take(&mut self.pending_resample) {
            self.apply_resample();
        }
        self.pending_resample = false;
        match self.pending_driver.take() {
            Some(PendingDriver::Posture(p)) => self.apply_posture(p),
            Some(PendingDriver::Driver(d)) => self.apply_driver(d),
            None => {}
        }
    }

    fn apply_settings(&mut self, settings: SolverSettings) {
        let result = match &mut self.sim {
            Some(sim) => sim.set_settings(settings.clone()),
            None => settings.validate().map_err(SimError::Settings),
        };
        match result {
            Ok(()) => {
                self.status.time_ratio = settings.time_ratio;
                self.settings = settings;
                self.dirty = true;
            }
            Err(e) => self.report(format!("{e}; the previous settings stay in effect")),
        }
    }

    /// The received character at the simulated resolution, carrying over the
    /// state of the skins that are still the same.
    fn prepare(&self, model: &Character) -> Result<Character, ResampleError> {
        let mut c = model.clone();
        if let Some((m, n)) = self.resolution {
            for skin in &mut c.skins {
                if (skin.m, skin.n) != (m, n) {
                    *skin = resample(skin, m, n)?;
                }
            }
        }
        if let Some(sim) = &self.sim {
            carry_skin_state(&sim.character, &mut c);
        }
        Ok(c)
    }

    /// The character to simulate now for `c`: `c` itself, or, when its
    /// modal flesh's modes are not computed yet, `c` with rigid muscles while
    /// another thread computes them ([`install_modes`](Self::install_modes)
    /// takes them in).
    fn defer_modes(&mut self, c: Character) -> Character {
        if !modes::is_modal(&c) {
            self.modes = None;
            return c;
        }
        let running = self
            .sim
            .as_ref()
            .is_some_and(|s| s.flesh_run().is_some() && !flesh_changed(&s.character, &c));
        if running {
            self.modes = None;
            return c;
        }
        if !self.modes.as_ref().is_some_and(|m| m.serves(&c)) {
            let (driver, t) = match &self.sim {
                Some(sim) => (sim.driver.clone(), sim.time()),
                None => (self.idle_driver.clone(), 0.0),
            };
            self.modes = Some(PendingModes::start(&c, &driver, t));
            self.report(
                "computing the modal flesh's vibration modes; the muscles ride rigidly until \
                 they are ready"
                    .into(),
            );
        }
        modes::rigid(&c)
    }

    /// Takes in the modal flesh once its modes are computed.
    fn install_modes(&mut self) {
        let Some(result) = self.modes.as_ref().and_then(PendingModes::poll) else {
            return;
        };
        let pending = self.modes.take().expect("polled above");
        let Some(sim) = &mut self.sim else {
            return;
        };
        let run = match result {
            Ok(run) => run,
            Err(e) => {
                return self.report(format!(
                    "the modal flesh could not be computed: {e}; the muscles ride rigidly"
                ));
            }
        };
        let mut c = sim.character.clone();
        c.flesh = pending.flesh().clone();
        if !pending.serves(&c) {
            return; // edited meanwhile: the edit started the right modes
        }
        let (parts, modes) = run.modal().map_or((0, 0), |m| {
            (m.parts().count(), m.parts().map(|p| p.omega.len()).sum())
        });
        let message = match sim.set_character_with_flesh(c, run) {
            Ok(()) => format!(
                "the modal flesh is ready: {parts} parts, {modes} modes, computed in {:.1} s",
                pending.seconds()
            ),
            Err(e) => format!("the modal flesh could not be used: {e}; the muscles ride rigidly"),
        };
        self.dirty = true;
        self.report(message);
    }

    fn apply_character(&mut self, model: Arc<Character>, revision: u64) {
        let c = match self.prepare(&model) {
            Ok(c) => self.defer_modes(c),
            Err(e) => {
                return self.report(format!(
                    "edit {revision} cannot be simulated at the chosen resolution ({e}); \
                     still simulating edit {}",
                    self.revision
                ));
            }
        };
        let joints = c.skeleton.joints.len();
        let result = match &mut self.sim {
            Some(sim) => {
                let old_driver = sim.driver.clone();
                if !driver_fits(&sim.driver, joints) {
                    // The skeleton changed shape; its posture follows with the
                    // next SetPosture, meanwhile keep what fits.
                    let p = fit_posture(&sim.driver.posture_at(sim.time()), joints);
                    sim.driver = SkeletonDriver::Still(p);
                }
                let r = sim.set_character(c);
                if r.is_err() {
                    sim.driver = old_driver;
                }
                r
            }
            None => {
                let driver = if driver_fits(&self.idle_driver, joints) {
                    self.idle_driver.clone()
                } else {
                    SkeletonDriver::Still(fit_posture(&self.idle_driver.posture_at(0.0), joints))
                };
                Simulation::new(c, driver, self.settings.clone()).map(|sim| {
                    self.sim = Some(sim);
                })
            }
        };
        match result {
            Ok(()) => {
                self.model = model;
                self.revision = revision;
                self.status.revision = revision;
                self.dirty = true;
                let said = self.hands.keep_dynamic(self.sim.as_mut());
                self.tell(said);
            }
            Err(e) => self.report(format!(
                "edit {revision} was not simulated: {e}; still simulating edit {}",
                self.revision
            )),
        }
    }

    fn apply_resample(&mut self) {
        let Some((m, n)) = self.resolution else {
            return self.apply_native_resolution();
        };
        if let Some(sim) = &mut self.sim {
            if let Err(e) = sim.resample_skins(m, n) {
                self.report(format!(
                    "cannot simulate at {m}×{n}: {e}; the resolution is unchanged"
                ));
                self.resolution = None;
            } else {
                self.dirty = true;
            }
        }
    }

    /// Back to the model's own resolution, carrying the simulated state over
    /// by resampling it to each skin's own grid.
    fn apply_native_resolution(&mut self) {
        let Some(sim) = &mut self.sim else {
            return;
        };
        let mut c = (*self.model).clone();
        for skin in &mut c.skins {
            let Some(old) = sim.character.skins.iter().find(|o| o.name == skin.name) else {
                continue;
            };
            if (old.m, old.n) == (skin.m, skin.n) {
                continue;
            }
            if let Ok(r) = resample(old, skin.m, skin.n)
                && r.points.position.len() == skin.points.position.len()
            {
                skin.points.position = r.points.position;
                skin.points.velocity = r.points.velocity;
            }
        }
        carry_skin_state(&sim.character, &mut c);
        // set_character keeps the clock.
        match sim.set_character(c) {
            Ok(()) => self.dirty = true,
            Err(e) => self.report(format!("cannot go back to the model's own resolution: {e}")),
        }
    }

    fn apply_posture(&mut self, p: Posture) {
        let Some(sim) = &mut self.sim else {
            self.idle_driver = SkeletonDriver::Still(p);
            self.dirty = true;
            return;
        };
        if let Err(e) = p.validate(sim.character.skeleton.joints.len()) {
            return self.report(format!("posture refused: {e}"));
        }
        if sim.character.skins.is_empty() {
            // Nothing to tear: take it at once.
            sim.driver = SkeletonDriver::Still(p);
        } else {
            let t = sim.time();
            let blend = (SIM_TICK.as_secs_f64() * self.settings.time_ratio).max(1e-4);
            sim.driver = SkeletonDriver::Blend {
                from: sim.driver.posture_at(t),
                to: p,
                t0: t,
                t1: t + blend,
            };
        }
        self.dirty = true;
    }

    fn apply_driver(&mut self, d: SkeletonDriver) {
        let joints = match &self.sim {
            Some(sim) => sim.character.skeleton.joints.len(),
            None => self.model.skeleton.joints.len(),
        };
        if !driver_fits(&d, joints) {
            return self.report(format!(
                "skeleton driver refused: its postures do not have {joints} joint angles"
            ));
        }
        match &mut self.sim {
            Some(sim) => sim.driver = d,
            None => self.idle_driver = d,
        }
        self.dirty = true;
    }

    fn advance(&mut self) {
        let Some(sim) = &mut self.sim else {
            return;
        };
        let start = Instant::now();
        let real = start - self.last_advance;
        self.last_advance = start;
        let cap = MAX_REAL_STEP.max(2 * self.step_delay);
        let t0 = sim.time();
        let result = sim.advance_real(real.min(cap), Some(ADVANCE_BUDGET));
        let t1 = sim.time();
        self.status.step_wall = start.elapsed();
        self.status.trace = self.tracer.sample(sim, start);
        self.load.solver_wall += self.status.step_wall;
        self.load.delay += self.step_delay;
        self.load.simulated += t1 - t0;
        self.load.real += real.min(cap).as_secs_f64();
        self.load.advances += 1;
        let achieved = if real.is_zero() {
            self.settings.time_ratio
        } else {
            (t1 - t0) / real.as_secs_f64()
        };
        self.status.achieved_ratio = if self.status.achieved_ratio == 0.0 {
            achieved
        } else {
            0.8 * self.status.achieved_ratio + 0.2 * achieved
        };
        self.dirty = true;
        self.status.push_impulse = hands::Hands::push_impulse(self.sim.as_ref());
        match result {
            Ok(report) => {
                self.status.fell_behind = report.fell_behind || real > cap;
                for ev in report.events {
                    match ev {
                        SimEvent::Diverged {
                            skin,
                            at,
                            rolled_back_to,
                            new_max_step,
                        } => {
                            let name =
                                self.model.skins.get(skin).map_or("?", |s| s.name.as_str());
                            self.report(format!(
                                "skin '{name}' diverged at t = {at:.3} s: rolled back to {rolled_back_to:.3} s, \
                                 steps now at most {new_max_step:.1e} s"
                            ));
                        }
                        SimEvent::ContactUnsettled {
                            steps,
                            at,
                            violation,
                        } => self.report(format!(
                            "the contact with the ground or the hand did not settle in {steps} flesh \
                             steps from t = {at:.3} s ({violation:.1e} m/s into it left): the character \
                             is squeezed between them"
                        )),
                    }
                }
            }
            Err(e) => {
                self.status.fell_behind = true;
                self.report(e.to_string());
            }
        }
    }

    fn publish(&mut self) {
        self.sequence += 1;
        let (posture, skins, sim_time) = match &self.sim {
            Some(sim) => {
                let t = sim.time();
                let skins = (0..sim.character.skins.len())
                    .map(|s| SkinSurface::of(&sim.character, s))
                    .collect();
                (sim.posture_at(t), skins, t)
            }
            None => (
                self.idle_driver.posture_at(0.0),
                (0..self.model.skins.len())
                    .map(|s| SkinSurface::of(&self.model, s))
                    .collect(),
                0.0,
            ),
        };
        let snapshot = Arc::new(SceneSnapshot {
            character: self.model.clone(),
            revision: self.revision,
            posture,
            skins,
            sim_time,
            flesh: self.sim.as_ref().and_then(|s| s.flesh_pose()).map(Arc::new),
            sequence: self.sequence,
            published: Instant::now(),
        });
        *lock(&self.shared.snapshot) = snapshot;
        self.status.sim_time = sim_time;
        self.status.sequence = self.sequence;
        *lock(&self.shared.status) = self.status.clone();
        self.load.resolution = self.resolution;
        self.load.points = match &self.sim {
            Some(sim) => sim.character.skins.iter().map(|k| k.m * k.n).sum(),
            None => 0,
        };
        *lock(&self.shared.load) = self.load;
        self.dirty = false;
    }
}

mod hands;
mod modes;
#[cfg(test)]
mod tests;
mod trace;
