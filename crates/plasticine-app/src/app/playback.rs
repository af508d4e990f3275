//! Playing the key postures back (LEMAN §6.4–6.5, §8): the
//! [`Timeline`] drives the simulation thread in one of four
//! [`PlaybackMode`]s, switchable while playing, and tells the frame loop
//! what to draw.
//!
//! | mode | simulation thread | timeline clock | drawn |
//! |---|---|---|---|
//! | `SkeletonOnly` | paused | real time | the last skin, the skeleton at the spline posture |
//! | `LiveLowRes` | running at ratio 1, `Resample` to `live_side`² (or the [`ResolutionGovernor`]'s choice), `SetDriver(Keys)` | real time | the simulation's snapshots |
//! | `SimulationTime` | running at ratio 1 at the model's own resolution (or `simulation_side`²), `SetDriver(Keys)` | the *simulated* time (slower when the solver cannot keep up) | the simulation's snapshots |
//! | `Baked` | paused | real time | frames streamed from a cache (random access) |
//!
//! Paused (any mode but `Baked`) pauses the simulation and draws the
//! skeleton at the current time over the skin as it hangs; scrubbing moves
//! it. Stopping returns to interactive editing: the simulation resumes at the
//! user's settings and own resolution, following the working posture again.
//!
//! # Keys on the simulation's clock
//!
//! The simulation thread's `SkeletonDriver::Keys` samples the keys at its own
//! simulated time, which started when the thread did. The driver sent is
//! therefore the keys shifted by `offset = sim_time − timeline_time`, sent
//! again whenever the relation changes: on play, a seek, a loop wrap, a key
//! edit, the end of an IK drag, or (live mode) when the simulation has
//! drifted more than [`LIVE_MAX_DRIFT`] behind the real-time timeline.
//!
//! # Performance recording
//!
//! With [`Playback::recording`] on, while the timeline plays and the IK tool
//! drags (the tool's preview posture), a key is laid down each time the
//! timeline crosses a multiple of [`Playback::record_every`]. Its posture is
//! the keys' motion at that time with the joints the drag turned taken from
//! the drag, so a performance re-animates the dragged chain and keeps the
//! rest of the motion. The skeleton follows that posture meanwhile. All keys
//! of one drag are one undo step. The blend weight slider held meanwhile
//! performs the chosen blend target's weight the same way: the keys'
//! motion with that weight.

use super::resolution::{GovernorConfig, LoadSample, ResolutionGovernor};
use super::sim_thread::{SimMessage, SimThread};
use crate::anim::sample_posture;
use crate::anim::{Advanced, PlaybackMode, Timeline, Transport, key_at};
use crate::character::{Character, KeyPosture, Posture};
use crate::character::{ResampleError, resample};
use crate::fem::FleshPose;
use crate::io::FleshRecordError;
use crate::io::{CacheReader, IoError};
use crate::skin::{SkeletonDriver, SolverSettings};
use crate::snapshot::{SceneSnapshot, SkinSurface};
use crate::tools::{Command, History};
pub use controls::PlaybackCtl;
use glam::{Affine3A, Vec3};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

mod controls;
mod reaction;

use reaction::{MAX_REACTION_KEYS, Reaction};

/// The live mode's skin resolution per side without the governor.
pub const LIVE_SIDE: usize = 16;
/// Timeline seconds between keys recorded by performance.
pub const RECORD_EVERY: f64 = 0.25;
/// In live mode, the keys are re-sent when the simulated skeleton is this
/// many seconds behind the real-time timeline.
pub const LIVE_MAX_DRIFT: f64 = 0.25;
/// The longest frame interval the timeline advances by (a stall, a
/// debugger) — beyond it playback does not jump.
pub const MAX_FRAME_STEP: f64 = 0.25;

/// A bake opened for baked playback: frames are read on demand.
pub struct BakedFrames {
    reader: CacheReader,
    /// The character with its skins at the cache's resolution (their fat
    /// resampled), for the snapshot.
    character: Arc<Character>,
    first_time: f64,
    fps: f64,
    scratch: Vec<Vec<Vec3>>,
    /// The frame's embedded meshes and muscle offsets (FEM flesh).
    meshes: Vec<Vec<Vec3>>,
    muscles: Vec<Affine3A>,
    /// The last frame read and the snapshot built from it.
    current: Option<(usize, Arc<SceneSnapshot>)>,
    path: PathBuf,
}

/// Why a bake cannot be played back on a character.
#[derive(Debug, thiserror::Error)]
pub enum BakedPlaybackError {
    /// The cache cannot be opened.
    #[error("cannot open the bake: {0}")]
    Open(#[source] IoError),
    /// A cache with no frames.
    #[error("the bake {} has no frames", .0.display())]
    Empty(PathBuf),
    /// Another number of skins than the character's.
    #[error("the bake {} has {cached} skins, the character {character}", .path.display())]
    Skins {
        /// The cache.
        path: PathBuf,
        /// Its skins.
        cached: usize,
        /// The character's.
        character: usize,
    },
    /// Flesh that is not the character's.
    #[error("the bake {} does not fit: {source}", .path.display())]
    Flesh {
        /// The cache.
        path: PathBuf,
        /// How it differs.
        source: FleshRecordError,
    },
    /// A skin of another name at the same place.
    #[error("skin {index} is '{cached}' in the bake and '{character}' in the character")]
    SkinName {
        /// The skin's index.
        index: usize,
        /// Its name in the cache.
        cached: String,
        /// Its name in the character.
        character: String,
    },
    /// The character's skin cannot take the cache's resolution.
    #[error(transparent)]
    Resample(#[from] ResampleError),
    /// The cache's first frame cannot be read.
    #[error("cannot read the bake: {0}")]
    Read(#[source] IoError),
    /// A frame cannot be read.
    #[error("cannot read frame {frame} of the bake: {source}")]
    Frame {
        /// The frame.
        frame: usize,
        /// Why.
        source: IoError,
    },
}

impl BakedFrames {
    /// Opens the cache at `path`, which must hold `character`'s skins (by
    /// name, in order; at any resolution).
    pub fn open(path: &Path, character: &Character) -> Result<Self, BakedPlaybackError> {
        let mut reader = CacheReader::open(path).map_err(BakedPlaybackError::Open)?;
        if reader.frame_count() == 0 {
            return Err(BakedPlaybackError::Empty(path.to_path_buf()));
        }
        let skins = reader.skins().to_vec();
        if skins.len() != character.skins.len() {
            return Err(BakedPlaybackError::Skins {
                path: path.to_path_buf(),
                cached: skins.len(),
                character: character.skins.len(),
            });
        }
        reader
            .flesh()
            .check_against(character)
            .map_err(|source| BakedPlaybackError::Flesh {
                path: path.to_path_buf(),
                source,
            })?;
        let mut c = character.clone();
        for (k, (cs, skin)) in skins.iter().zip(&mut c.skins).enumerate() {
            if cs.name != skin.name {
                return Err(BakedPlaybackError::SkinName {
                    index: k,
                    cached: cs.name.clone(),
                    character: skin.name.clone(),
                });
            }
            if (cs.m, cs.n) != (skin.m, skin.n) {
                *skin = resample(skin, cs.m, cs.n)?;
            }
        }
        let first_time = reader.frame_time(0).map_err(BakedPlaybackError::Read)?;
        Ok(Self {
            fps: reader.fps() as f64,
            reader,
            character: Arc::new(c),
            first_time,
            scratch: Vec::new(),
            meshes: Vec::new(),
            muscles: Vec::new(),
            current: None,
            path: path.to_path_buf(),
        })
    }

    /// Where the bake was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many frames the bake holds.
    pub fn frame_count(&self) -> usize {
        self.reader.frame_count()
    }

    /// The frame shown at timeline time `t` (the nearest, clamped).
    pub fn frame_index(&self, t: f64) -> usize {
        let f = ((t - self.first_time) * self.fps).round();
        if f.is_nan() || f <= 0.0 {
            0
        } else {
            (f as usize).min(self.frame_count() - 1)
        }
    }

    /// The snapshot of the frame at time `t`, the skeleton at `posture`.
    /// Reads the cache only when the frame changes.
    pub fn snapshot(
        &mut self,
        t: f64,
        posture: &Posture,
        revision: u64,
        sequence: &mut u64,
    ) -> Result<Arc<SceneSnapshot>, BakedPlaybackError> {
        let f = self.frame_index(t);
        // (The reader's root is the current frame's: it was read last.)
        if let Some((cf, snap)) = &self.current
            && *cf == f
            && snap.posture
                == crate::kinematics::posture_with_stored_root(
                    &self.character,
                    posture,
                    self.reader.root(),
                )
        {
            return Ok(snap.clone());
        }
        let time = self
            .reader
            .read_frame_with_flesh(f, &mut self.scratch, &mut self.meshes, &mut self.muscles)
            .map_err(|source| BakedPlaybackError::Frame { frame: f, source })?;
        // The positions move into the snapshot (the next read allocates
        // afresh): one copy per frame, from the file's bytes.
        let skins = self
            .character
            .skins
            .iter()
            .zip(&mut self.scratch)
            .map(|(skin, positions)| SkinSurface {
                m: skin.m,
                n: skin.n,
                positions: std::mem::take(positions),
                fat: skin.points.fat.clone(),
            })
            .collect();
        *sequence += 1;
        let snap = Arc::new(SceneSnapshot {
            character: self.character.clone(),
            revision,
            // A responding skeleton's root, where the bake had it.
            posture: crate::kinematics::posture_with_stored_root(
                &self.character,
                posture,
                self.reader.root(),
            ),
            skins,
            sim_time: time,
            // FEM flesh: the muscles and embedded mesh where the bake put
            // them (a cache without flesh draws them on the skeleton).
            flesh: baked_flesh_pose(&self.character, time, &self.meshes, &self.muscles).map(
                |mut f| {
                    f.root_responds = self.reader.root().is_some();
                    Arc::new(f)
                },
            ),
            sequence: *sequence,
            published: Instant::now(),
        });
        self.current = Some((f, snap.clone()));
        Ok(snap)
    }
}

/// The flesh pose of a baked frame (FEM flesh): the cache's
/// embedded mesh and muscle offsets, or None when it holds neither. Muscles
/// without stored offsets stay rigid on the skeleton (identity offsets).
pub fn baked_flesh_pose(
    character: &Character,
    time: f64,
    meshes: &[Vec<Vec3>],
    muscles: &[Affine3A],
) -> Option<FleshPose> {
    if meshes.is_empty() && muscles.is_empty() {
        return None;
    }
    let muscle_offsets = if muscles.len() == character.muscles.len() {
        muscles.to_vec()
    } else {
        vec![Affine3A::IDENTITY; character.muscles.len()]
    };
    Some(FleshPose {
        time,
        muscle_offsets,
        lattice: Vec::new(),
        edges: Arc::new(Vec::new()),
        mesh: meshes.first().cloned(),
        morph: None,
        grabs: Vec::new(),
        detail: Vec::new(),
        morph_weights: Default::default(),
        blend_weights: Default::default(),
        root_responds: false,
    })
}

/// What the frame loop draws this frame instead of its defaults.
#[derive(Clone, Debug, Default)]
pub struct PlaybackView {
    /// The snapshot to draw instead of the simulation's newest.
    pub snapshot: Option<Arc<SceneSnapshot>>,
    /// The skeleton posture to draw the joints at instead of the
    /// interactive one.
    pub posture: Option<Posture>,
}

/// The playback state: the timeline, what the simulation thread has been
/// told, the governor, the recording and the loaded bake.
pub struct Playback {
    /// The timeline: current time, transport, loop, mode and selected key.
    pub timeline: Timeline,
    /// Live mode's resolution per side when the governor is off.
    pub live_side: usize,
    /// Live mode picks the resolution that keeps real time (§8).
    pub auto_resolution: bool,
    /// Simulation-time mode's resolution per side (`None`: each skin's own),
    /// e.g. the bake's resolution to preview it.
    pub simulation_side: Option<usize>,
    /// Picks live mode's resolution when `auto_resolution` is on.
    pub governor: ResolutionGovernor,
    /// Lay keys down while the IK tool drags during playback, or while the
    /// skeleton reacts (is pushed, falls) during editing.
    pub recording: bool,
    /// Timeline seconds between recorded keys.
    pub record_every: f64,
    bake: Option<BakedFrames>,
    /// What the simulation thread was last set up for.
    applied: (Transport, PlaybackMode),
    /// The side sent with `Resample`, `None` at the model's own resolution.
    applied_side: Option<usize>,
    /// `sim_time − timeline_time` of the keys driver last sent.
    offset: f64,
    /// History revision whose keys were last sent (`None`: resend).
    driver_revision: Option<u64>,
    last_update: Option<Instant>,
    /// The recording slot (multiple of `record_every`) last keyed, and
    /// whether this drag's undo step exists.
    recorded_slot: Option<i64>,
    performance_open: bool,
    /// The keys as they were when the drag began (what a performance is
    /// layered over).
    performance_base: Option<Vec<KeyPosture>>,
    /// The reaction being recorded while editing.
    reaction: Option<Reaction>,
    /// A key held on the scrubber: where it was taken from, where it is
    /// now, and whether the drag's undo step is open (see
    /// `PlaybackCtl::grab_key`).
    held_key: Option<(f32, f32, bool)>,
    dragging: bool,
    /// Set the simulation thread up again at the next update.
    force_setup: bool,
    view_sequence: u64,
    /// What happened, for the UI (oldest first).
    pub messages: Vec<String>,
}

impl Default for Playback {
    fn default() -> Self {
        Self {
            timeline: Timeline::default(),
            live_side: LIVE_SIDE,
            auto_resolution: false,
            simulation_side: None,
            governor: ResolutionGovernor::new(GovernorConfig::default(), LIVE_SIDE),
            recording: false,
            record_every: RECORD_EVERY,
            bake: None,
            applied: (Transport::Stopped, PlaybackMode::SkeletonOnly),
            applied_side: None,
            offset: 0.0,
            driver_revision: None,
            last_update: None,
            recorded_slot: None,
            performance_open: false,
            performance_base: None,
            reaction: None,
            held_key: None,
            dragging: false,
            force_setup: false,
            view_sequence: 0,
            messages: Vec::new(),
        }
    }
}

/// The parts of the frame loop playback works on.
pub struct PlaybackEnv<'a> {
    /// The character being edited; its key postures are the timeline's keys.
    pub character: &'a mut Character,
    /// The edit history that key edits go through, as undoable steps.
    pub history: &'a mut History,
    /// The simulation thread that playback drives.
    pub sim: &'a SimThread,
    /// The session's solver settings (restored when playback stops).
    pub settings: &'a SolverSettings,
    /// The IK drag in progress (the tool's preview posture).
    pub drag: Option<&'a Posture>,
    /// The blend weight slider held while the timeline plays with
    /// performance recording on: (target, weight).
    pub blend_drag: Option<(usize, f32)>,
    /// The posture the frame loop last sent with `SetPosture`.
    pub sent_posture: &'a mut Posture,
}

impl PlaybackEnv<'_> {
    /// The posture the user is working in: the drag, or the working posture.
    pub fn interactive_posture(&self) -> Posture {
        self.drag.unwrap_or(self.history.posture()).clone()
    }
}

impl Playback {
    /// Whether playback (not the working posture) drives the simulated
    /// skeleton now: the frame loop then does not send the working posture
    /// (an IK drag is sent by playback, layered over the keys).
    pub fn holds_skeleton(&self) -> bool {
        !self.timeline.is_stopped()
    }

    /// The bake loaded for baked playback, if any.
    pub fn bake(&self) -> Option<&BakedFrames> {
        self.bake.as_ref()
    }

    /// The side `Resample` was last sent with (`None`: the model's own).
    pub fn simulated_side(&self) -> Option<usize> {
        self.applied_side
    }

    /// `sim_time − timeline_time` of the keys driver last sent.
    pub fn driver_offset(&self) -> f64 {
        self.offset
    }

    fn say(&mut self, m: impl Into<String>) -> String {
        let m = m.into();
        self.messages.push(m.clone());
        m
    }

    /// One frame's worth of playback at wall time `now`: sets the
    /// simulation thread up for the transport and mode, advances the
    /// timeline, records, and says what to draw.
    pub fn update(&mut self, now: Instant, env: &mut PlaybackEnv) -> PlaybackView {
        let dt = self
            .last_update
            .map_or(0.0, |l| (now - l).as_secs_f64().min(MAX_FRAME_STEP));
        self.last_update = Some(now);
        let transport = self.timeline.transport;
        let mode = self.timeline.mode;
        if transport == Transport::Stopped {
            if self.applied.0 != Transport::Stopped {
                self.back_to_editing(env);
            }
            self.end_drag();
            self.record_reaction(env);
            return PlaybackView::default();
        }
        self.finish_reaction(env);
        if env.character.key_postures.is_empty() && self.timeline.range(&[]).is_none() {
            // Every key was deleted during playback: nothing to play.
            self.timeline.transport = Transport::Stopped;
            self.say("stopped: no keys left to play");
            self.back_to_editing(env);
            return PlaybackView::default();
        }
        if self.applied != (transport, mode) || std::mem::take(&mut self.force_setup) {
            self.set_up(transport, mode, env);
        }
        let sim_running = mode.simulates() && transport == Transport::Playing;
        let latest = env.sim.latest();

        // The clock.
        if transport == Transport::Playing {
            let keys = &env.character.key_postures;
            let advanced = if mode == PlaybackMode::SimulationTime && self.driver_revision.is_some()
            {
                // The timeline follows the simulated time.
                let t = latest.sim_time - self.offset;
                if t > self.timeline.time {
                    self.timeline.time = t;
                }
                self.timeline.advance(0.0, keys)
            } else {
                self.timeline.advance(dt, keys)
            };
            match advanced {
                Advanced::Wrapped => self.driver_revision = None,
                Advanced::Ended => {
                    self.say("end of the timeline");
                    // Paused at the end: set up at the next frame.
                }
                Advanced::Within => {}
            }
            if mode == PlaybackMode::LiveLowRes
                && self.driver_revision.is_some()
                && (latest.sim_time - self.offset - self.timeline.time).abs() > LIVE_MAX_DRIFT
            {
                self.driver_revision = None;
            }
        }

        // Drags: the dragged joints over the keys' motion (see
        // `layered`) drive the skeleton; the keys go back when it ends.
        let dragging = env.drag.is_some() || env.blend_drag.is_some();
        if self.dragging && !dragging {
            self.driver_revision = None;
            self.end_drag();
        }
        if dragging && !self.dragging {
            self.performance_base = Some(env.character.key_postures.clone());
        }
        self.dragging = dragging;
        let performed = match (env.drag, env.blend_drag) {
            (Some(d), _) => Some(self.layered(d, env)),
            (None, Some((target, weight))) => self.blend_performed(target, weight, env),
            (None, None) => None,
        };
        if let Some(p) = &performed
            && sim_running
            && *p != *env.sent_posture
            && env.sim.send(SimMessage::SetPosture(p.clone())).is_ok()
        {
            *env.sent_posture = p.clone();
        }

        // The keys, on the simulation's clock.
        if sim_running
            && !dragging
            && self.timeline.is_playing()
            && self.driver_revision != Some(env.history.revision())
            && !env.character.key_postures.is_empty()
        {
            self.offset = latest.sim_time - self.timeline.time;
            let keys = shifted(&env.character.key_postures, self.offset);
            if env.sim.send(SimMessage::SetDriver(keys)).is_ok() {
                self.driver_revision = Some(env.history.revision());
            }
        }

        // Real time at whatever resolution fits.
        if mode == PlaybackMode::LiveLowRes && sim_running && self.auto_resolution {
            let load = LoadSample::from(env.sim.load());
            if let Some(side) = self.governor.observe(load, 1.0)
                && env
                    .sim
                    .send(SimMessage::Resample { m: side, n: side })
                    .is_ok()
            {
                self.applied_side = Some(side);
                let load = self.governor.last_load.unwrap_or(0.0);
                self.say(format!(
                    "live resolution {side}×{side} (solver load {:.0} %)",
                    load * 100.0
                ));
            }
        }

        // Performance recording.
        if self.recording
            && self.timeline.is_playing()
            && let Some(p) = &performed
        {
            self.record(p.clone(), env);
        }

        self.view(env, &latest, performed)
    }

    fn end_drag(&mut self) {
        self.recorded_slot = None;
        self.performance_open = false;
        self.performance_base = None;
    }

    /// The posture performed by an IK drag during playback: the keys'
    /// motion at the current time (as it was when the drag began), with the
    /// joints the drag turned (those differing from the working posture the
    /// drag started from) taken from the drag. So a performance re-animates
    /// the dragged chain and leaves the rest of the motion as it was.
    fn layered(&self, drag: &Posture, env: &PlaybackEnv) -> Posture {
        let base = self.performed_keys(env);
        let working = env.history.posture();
        let Some(mut p) = sample_posture(base, self.timeline.time as f32) else {
            return drag.clone();
        };
        if p.angles.len() != drag.angles.len() || working.angles.len() != drag.angles.len() {
            return drag.clone();
        }
        for (j, (a, w)) in drag.angles.iter().zip(&working.angles).enumerate() {
            if a != w {
                p.angles[j] = *a;
            }
        }
        if drag.root_translation != working.root_translation {
            p.root_translation = drag.root_translation;
        }
        p
    }

    /// The keys a performance plays over: as they were when it began.
    fn performed_keys<'a>(&'a self, env: &'a PlaybackEnv) -> &'a [KeyPosture] {
        self.performance_base
            .as_deref()
            .unwrap_or(&env.character.key_postures)
    }

    /// The posture a blend weight performance plays: the keys' motion at
    /// the current time (as it was when the performance began), with
    /// `target`'s weight set to `weight` and the others scaled down if the
    /// sum would pass 1. None without keys or blendshapes.
    fn blend_performed(&self, target: usize, weight: f32, env: &PlaybackEnv) -> Option<Posture> {
        let n = env.character.blend_targets();
        if target >= n {
            return None;
        }
        let base = self.performed_keys(env);
        let mut p = sample_posture(base, self.timeline.time as f32)?;
        p.blend.resize(n, 0.0);
        crate::character::set_weight(&mut p.blend, target, weight);
        Some(p)
    }

    /// Lays a key down when the timeline entered a new recording slot.
    fn record(&mut self, posture: Posture, env: &mut PlaybackEnv) {
        let every = self.record_every.max(1e-3);
        let slot = (self.timeline.time / every + 1e-9).floor() as i64;
        if self.recorded_slot == Some(slot) {
            return;
        }
        self.recorded_slot = Some(slot);
        let time = (slot as f64 * every) as f32;
        let (tension, continuity, bias) = key_tcb(&env.character.key_postures, time);
        let cmd = Command::SetKey {
            time,
            posture,
            tension,
            continuity,
            bias,
        };
        let result = if self.performance_open {
            env.history.apply_continuing(env.character, cmd)
        } else {
            env.history.apply(env.character, cmd)
        };
        match result {
            Ok(()) => self.performance_open = true,
            Err(e) => {
                self.say(format!("key not recorded: {e}"));
            }
        }
    }

    /// While editing with recording on and the skeleton responding: keys
    /// the reaction (see [`Reaction`]), moving the timeline along with it.
    /// Recording off, or the skeleton no longer responding, stores what was
    /// recorded.
    fn record_reaction(&mut self, env: &mut PlaybackEnv) {
        if !self.recording {
            return self.finish_reaction(env);
        }
        let latest = env.sim.latest();
        let Some(reacted) = latest.with_simulated_root(&env.interactive_posture()) else {
            return self.finish_reaction(env);
        };
        let every = self.record_every.max(1e-3);
        let time = self.timeline.time;
        let reaction = self
            .reaction
            .get_or_insert_with(|| Reaction::start(&latest, time));
        if let Some(t) = reaction.sample(latest.sim_time, reacted, every) {
            self.timeline.time = t;
        }
        if reaction.is_full() {
            self.recording = false;
            self.say(format!(
                "recording stopped at {MAX_REACTION_KEYS} keys (the most one reaction keeps)"
            ));
            self.finish_reaction(env);
        }
    }

    /// Stores the reaction recorded so far as key postures, one undo step.
    fn finish_reaction(&mut self, env: &mut PlaybackEnv) {
        let Some(reaction) = self.reaction.take() else {
            return;
        };
        let Some((first, last)) = reaction.span() else {
            return;
        };
        let n = reaction.len();
        let commands = reaction.into_commands(|t| key_tcb(&env.character.key_postures, t));
        match env.history.apply_group(env.character, commands) {
            Ok(()) => self.say(format!(
                "reaction recorded: {n} keys from {first:.2} to {last:.2} s (one undo step)"
            )),
            Err(e) => self.say(format!("reaction not recorded: {e}")),
        };
    }

    /// Sends what the transport and mode need.
    fn set_up(&mut self, transport: Transport, mode: PlaybackMode, env: &mut PlaybackEnv) {
        let sim_running = mode.simulates() && transport == Transport::Playing;
        let _ = env.sim.send(SimMessage::Pause(!sim_running));
        let realtime = SolverSettings {
            time_ratio: 1.0,
            ..env.settings.clone()
        };
        match mode {
            PlaybackMode::LiveLowRes => {
                let side = if self.auto_resolution {
                    self.governor.side()
                } else {
                    self.live_side
                };
                let _ = env.sim.send(SimMessage::SetSettings(realtime));
                if self.applied_side != Some(side) {
                    let _ = env.sim.send(SimMessage::Resample { m: side, n: side });
                    self.applied_side = Some(side);
                }
                self.governor.restart();
            }
            PlaybackMode::SimulationTime => {
                let _ = env.sim.send(SimMessage::SetSettings(realtime));
                match self.simulation_side {
                    Some(side) if self.applied_side != Some(side) => {
                        let _ = env.sim.send(SimMessage::Resample { m: side, n: side });
                        self.applied_side = Some(side);
                    }
                    Some(_) => {}
                    None => {
                        if self.applied_side.take().is_some() {
                            let _ = env.sim.send(SimMessage::NativeResolution);
                        }
                    }
                }
            }
            PlaybackMode::SkeletonOnly | PlaybackMode::Baked => {}
        }
        if sim_running {
            self.driver_revision = None;
        }
        self.applied = (transport, mode);
    }

    /// Interactive editing again: the user's settings and resolution, the
    /// working posture.
    fn back_to_editing(&mut self, env: &mut PlaybackEnv) {
        let _ = env.sim.send(SimMessage::SetSettings(env.settings.clone()));
        if self.applied_side.take().is_some() {
            let _ = env.sim.send(SimMessage::NativeResolution);
        }
        let posture = env.interactive_posture();
        let _ = env.sim.send(SimMessage::SetPosture(posture.clone()));
        *env.sent_posture = posture;
        let _ = env.sim.send(SimMessage::Pause(false));
        self.applied = (Transport::Stopped, self.timeline.mode);
        self.driver_revision = None;
    }

    /// The skeleton at the current time on the key spline.
    fn spline_posture(&self, env: &PlaybackEnv) -> Option<Posture> {
        sample_posture(&env.character.key_postures, self.timeline.time as f32)
            .or_else(|| Some(env.interactive_posture()))
    }

    fn view(
        &mut self,
        env: &PlaybackEnv,
        latest: &Arc<SceneSnapshot>,
        performed: Option<Posture>,
    ) -> PlaybackView {
        let transport = self.timeline.transport;
        let mode = self.timeline.mode;
        let posture = match performed {
            Some(p) => Some(p),
            None if mode.simulates() && transport == Transport::Playing => {
                Some(latest.posture.clone())
            }
            None => self.spline_posture(env),
        };
        if mode == PlaybackMode::Baked
            && let (Some(bake), Some(p)) = (self.bake.as_mut(), posture.as_ref())
        {
            match bake.snapshot(
                self.timeline.time,
                p,
                env.history.revision(),
                &mut self.view_sequence,
            ) {
                Ok(snap) => {
                    return PlaybackView {
                        snapshot: Some(snap),
                        posture,
                    };
                }
                Err(e) => {
                    self.say(e.to_string());
                }
            }
        }
        let snapshot = match (
            &posture,
            mode.simulates() && transport == Transport::Playing,
        ) {
            (Some(p), false) if *p != latest.posture => Some(Arc::new(SceneSnapshot {
                posture: p.clone(),
                ..(**latest).clone()
            })),
            _ => None,
        };
        PlaybackView { snapshot, posture }
    }
}

/// The keys with their times moved by `offset`, as a driver.
fn shifted(keys: &[KeyPosture], offset: f64) -> SkeletonDriver {
    SkeletonDriver::Keys(
        keys.iter()
            .map(|k| KeyPosture {
                time: (k.time as f64 + offset) as f32,
                ..k.clone()
            })
            .collect(),
    )
}

/// The KB parameters of the key at `time`, to keep them when it is replaced.
fn key_tcb(keys: &[KeyPosture], time: f32) -> (f32, f32, f32) {
    key_at(keys, time).map_or((0.0, 0.0, 0.0), |i| {
        let k = &keys[i];
        (k.tension, k.continuity, k.bias)
    })
}
