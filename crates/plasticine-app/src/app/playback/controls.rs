//! [`PlaybackCtl`]: the timeline's controls as a UI calls them, each
//! answering with a message to show.

use super::{BakedFrames, Playback, PlaybackEnv, key_tcb};
use crate::anim::{PlaybackMode, Timeline, Transport, key_at};
use crate::character::{KeyPosture, Posture};
use crate::tools::{Command, EditError};
use std::path::Path;

/// The timeline's controls for a UI (panel rows, buttons, a script): each
/// returns a short message to show. Get one with `FrameLoop::playback_mut`;
/// what they change reaches the simulation at the next frame.
pub struct PlaybackCtl<'a> {
    /// The playback state the controls change.
    pub playback: &'a mut Playback,
    /// The parts of the frame loop the controls work on.
    pub env: PlaybackEnv<'a>,
}

impl PlaybackCtl<'_> {
    fn say(&mut self, m: impl Into<String>) -> String {
        self.playback.say(m)
    }

    fn keys(&self) -> &[KeyPosture] {
        &self.env.character.key_postures
    }

    /// The timeline: current time, transport, loop, mode and selected key.
    pub fn timeline(&self) -> &Timeline {
        &self.playback.timeline
    }

    /// Play from the current time (from the start when at the end), or
    /// pause when playing.
    pub fn toggle_play(&mut self) -> String {
        if self.playback.timeline.is_playing() {
            self.pause()
        } else {
            self.play()
        }
    }

    /// Plays from the current time (from the start when outside the range or at its end); refused
    /// without keys, or in baked mode without a loaded bake.
    pub fn play(&mut self) -> String {
        let Some((start, end)) = self.playback.timeline.range(self.keys()) else {
            return self.say("nothing to play: store a key posture first");
        };
        if self.playback.timeline.mode == PlaybackMode::Baked && self.playback.bake.is_none() {
            return self.say("no bake loaded: bake the motion, or pick another mode");
        }
        let tl = &mut self.playback.timeline;
        if tl.time >= end || tl.time < start {
            tl.time = start;
        }
        tl.transport = Transport::Playing;
        let mode = tl.mode.label();
        self.playback.last_update = None;
        self.say(format!("playing ({mode})"))
    }

    /// Pauses at the current time; says so and does nothing when stopped.
    pub fn pause(&mut self) -> String {
        if self.playback.timeline.is_stopped() {
            return self.say("not playing");
        }
        self.playback.timeline.transport = Transport::Paused;
        let t = self.playback.timeline.time;
        self.say(format!("paused at {t:.2} s"))
    }

    /// Back to interactive editing.
    pub fn stop(&mut self) -> String {
        self.playback.timeline.transport = Transport::Stopped;
        self.say("stopped: editing")
    }

    /// Switches mode, also while playing. Baked needs a loaded bake.
    pub fn set_mode(&mut self, mode: PlaybackMode) -> String {
        if mode == PlaybackMode::Baked && self.playback.bake.is_none() {
            return self.say("no bake loaded: bake the motion first");
        }
        self.playback.timeline.mode = mode;
        self.say(format!("mode: {}", mode.label()))
    }

    /// The next mode (skipping Baked without a bake).
    pub fn cycle_mode(&mut self) -> String {
        let mut m = self.playback.timeline.mode.next();
        if m == PlaybackMode::Baked && self.playback.bake.is_none() {
            m = m.next();
        }
        self.set_mode(m)
    }

    /// Turns looping at the end of the range on or off.
    pub fn toggle_loop(&mut self) -> String {
        let tl = &mut self.playback.timeline;
        tl.looping = !tl.looping;
        let on = if tl.looping { "on" } else { "off" };
        self.say(format!("loop {on}"))
    }

    /// Scrubs to `t` (clamped to the range); while playing a simulated mode
    /// the skeleton jumps there and the skin follows.
    pub fn seek(&mut self, t: f64) -> String {
        let keys = self.env.character.key_postures.clone();
        let t = self.playback.timeline.seek(t, &keys);
        self.playback.driver_revision = None;
        self.say(format!("at {t:.2} s"))
    }

    /// Lengthens the range to at least `end` seconds (room to record).
    pub fn set_extent(&mut self, end: f64) -> String {
        self.playback.timeline.extent = if end.is_finite() { end.max(0.0) } else { 0.0 };
        let e = self.playback.timeline.extent;
        self.say(format!("timeline to at least {e:.2} s"))
    }

    fn apply(&mut self, cmd: Command) -> Result<(), EditError> {
        self.env.history.apply(self.env.character, cmd)
    }

    /// Stores `posture` as the key at the current time (replacing the key
    /// there, keeping its tension/continuity/bias), and selects it.
    pub fn store_key_at_current_time(&mut self, posture: Posture) -> String {
        let said = self.set_key_now(posture);
        self.say(said)
    }

    /// The key at the current time set to `posture`, and the sentence
    /// saying so (not yet said).
    fn set_key_now(&mut self, posture: Posture) -> String {
        let time = self.playback.timeline.time as f32;
        let (tension, continuity, bias) = key_tcb(self.keys(), time);
        let replacing = key_at(self.keys(), time).is_some();
        match self.apply(Command::SetKey {
            time,
            posture,
            tension,
            continuity,
            bias,
        }) {
            Ok(()) => {
                self.playback.timeline.selected = Some(time);
                let what = if replacing { "replaced" } else { "stored" };
                let n = self.keys().len();
                format!("key {what} at {time:.2} s ({n} keys)")
            }
            Err(e) => format!("refused: {e}"),
        }
    }

    /// Stores the interactive posture (the working posture, or the drag) as
    /// the key at the current time. When the skeleton responds, the key
    /// keeps the root where the simulation holds it: a push's or a fall's
    /// reaction, kept as a key posture.
    pub fn store_key(&mut self) -> String {
        let p = self.env.interactive_posture();
        match self.env.sim.latest().with_simulated_root(&p) {
            Some(reacted) => {
                let said = self.set_key_now(reacted);
                self.say(format!(
                    "{said}, with the root where the simulation holds it"
                ))
            }
            None => self.store_key_at_current_time(p),
        }
    }

    /// Selects the first key after the current time (wrapping) and moves the time to it; while
    /// editing, also poses the character in it (one undo step).
    pub fn select_next_key(&mut self) -> String {
        let keys = self.env.character.key_postures.clone();
        match self.playback.timeline.select_next_key(&keys) {
            Some(i) => self.selected_message(i),
            None => self.say("no keys"),
        }
    }

    /// Selects the last key before the current time (wrapping) and moves the time to it; while
    /// editing, also poses the character in it (one undo step).
    pub fn select_previous_key(&mut self) -> String {
        let keys = self.env.character.key_postures.clone();
        match self.playback.timeline.select_previous_key(&keys) {
            Some(i) => self.selected_message(i),
            None => self.say("no keys"),
        }
    }

    fn selected_message(&mut self, i: usize) -> String {
        self.playback.driver_revision = None;
        let n = self.keys().len();
        let t = self.keys()[i].time;
        // While editing, selecting a key poses the character in it (one
        // undoable step), so an IK drag and "store" re-pose that key.
        let posture = self.keys()[i].posture.clone();
        if self.playback.timeline.transport == Transport::Stopped
            && &posture != self.env.history.posture()
            && let Err(e) = self.apply(Command::SetPosture { posture })
        {
            return self.say(format!("key {} of {n} at {t:.2} s (not posed: {e})", i + 1));
        }
        self.say(format!("key {} of {n} at {t:.2} s", i + 1))
    }

    fn selected_time(&self) -> Option<f32> {
        let i = self
            .playback
            .timeline
            .selected_index(&self.env.character.key_postures)?;
        Some(self.keys()[i].time)
    }

    /// A press on the scrubber at time `t`: takes hold of the key within
    /// `reach` seconds of it (the nearest) and selects it; returns whether
    /// it did. Then [`drag_key_to`](Self::drag_key_to) moves it and
    /// [`release_key`](Self::release_key) lets it go.
    pub fn grab_key(&mut self, t: f64, reach: f64) -> bool {
        let nearest = self.keys().iter().map(|k| k.time).min_by(|a, b| {
            (f64::from(*a) - t)
                .abs()
                .total_cmp(&(f64::from(*b) - t).abs())
        });
        match nearest.filter(|k| (f64::from(*k) - t).abs() <= reach) {
            Some(time) => {
                self.playback.held_key = Some((time, time, false));
                self.playback.timeline.selected = Some(time);
                self.say(format!(
                    "key at {time:.2} s held: drag it along the timeline"
                ));
                true
            }
            None => false,
        }
    }

    /// Whether a key is held on the scrubber.
    pub fn holding_key(&self) -> bool {
        self.playback.held_key.is_some()
    }

    /// Moves the held key to `t` (≥ 0). The moves of one drag are one undo
    /// step; a time on another key is passed over (the key stays where it
    /// was until the wand leaves it).
    pub fn drag_key_to(&mut self, t: f64) {
        let Some((from, now, open)) = self.playback.held_key else {
            return;
        };
        let to = t.max(0.0) as f32;
        if (to - now).abs() <= crate::tools::KEY_TIME_EPSILON {
            return;
        }
        let cmd = Command::MoveKey { from: now, to };
        let moved = if open {
            self.env.history.apply_continuing(self.env.character, cmd)
        } else {
            self.env.history.apply(self.env.character, cmd)
        };
        if moved.is_ok() {
            self.playback.held_key = Some((from, to, true));
            self.playback.timeline.selected = Some(to);
            self.playback.timeline.time = f64::from(to);
            self.playback.driver_revision = None;
        }
    }

    /// Lets the held key go; says where it went (None when none was held).
    pub fn release_key(&mut self) -> Option<String> {
        let (from, to, _) = self.playback.held_key.take()?;
        Some(if from == to {
            self.say(format!("key at {from:.2} s selected"))
        } else {
            self.say(format!("key moved from {from:.2} s to {to:.2} s"))
        })
    }

    /// Deletes the selected key, as one undo step.
    pub fn delete_selected_key(&mut self) -> String {
        let Some(time) = self.selected_time() else {
            return self.say("no key selected");
        };
        match self.apply(Command::DeleteKey { time }) {
            Ok(()) => {
                self.playback.timeline.selected = None;
                self.say(format!("key at {time:.2} s deleted"))
            }
            Err(e) => self.say(format!("refused: {e}")),
        }
    }

    /// Moves the selected key by `dt` seconds; the current time follows it.
    pub fn move_selected_key(&mut self, dt: f64) -> String {
        let Some(from) = self.selected_time() else {
            return self.say("no key selected");
        };
        let to = (from as f64 + dt) as f32;
        match self.apply(Command::MoveKey { from, to }) {
            Ok(()) => {
                self.playback.timeline.selected = Some(to);
                self.playback.timeline.time = to as f64;
                self.say(format!("key moved to {to:.2} s"))
            }
            Err(e) => self.say(format!("refused: {e}")),
        }
    }

    /// Re-poses the selected key with `posture` (e.g. after an IK drag).
    pub fn repose_selected_key(&mut self, posture: Posture) -> String {
        let Some(time) = self.selected_time() else {
            return self.say("no key selected");
        };
        self.playback.timeline.time = time as f64;
        self.store_key_at_current_time(posture)
    }

    /// Sets the selected key's tension, continuity and bias (its Kochanek–Bartels parameters).
    pub fn set_selected_key_tcb(&mut self, tension: f32, continuity: f32, bias: f32) -> String {
        self.drag_selected_key_tcb([tension, continuity, bias], false)
    }

    /// As [`set_selected_key_tcb`](Self::set_selected_key_tcb), as part of
    /// the last undo step when `continuing` (a slider dragged).
    pub fn drag_selected_key_tcb(
        &mut self,
        [tension, continuity, bias]: [f32; 3],
        continuing: bool,
    ) -> String {
        let Some(time) = self.selected_time() else {
            return self.say("no key selected");
        };
        let cmd = Command::SetKeyTcb {
            time,
            tension,
            continuity,
            bias,
        };
        let done = if continuing {
            self.env.history.apply_continuing(self.env.character, cmd)
        } else {
            self.apply(cmd)
        };
        match done {
            Ok(()) => self.say(format!(
                "key at {time:.2} s: tension {tension:.2}, continuity {continuity:.2}, bias {bias:.2}"
            )),
            Err(e) => self.say(format!("refused: {e}")),
        }
    }

    /// Opens a bake (a frame cache of this character) for baked playback.
    pub fn load_bake(&mut self, path: &Path) -> String {
        match BakedFrames::open(path, self.env.character) {
            Ok(b) => {
                let n = b.frame_count();
                self.playback.bake = Some(b);
                self.say(format!("bake loaded: {n} frames"))
            }
            Err(e) => self.say(format!("refused: {e}")),
        }
    }

    /// Live mode picks its resolution to keep real time (§8), or uses
    /// `live_side`.
    pub fn set_auto_resolution(&mut self, on: bool) -> String {
        self.playback.auto_resolution = on;
        self.playback.governor.restart();
        // Set up again at the next frame with the right resolution.
        self.playback.force_setup = true;
        if on {
            self.say("real time at whatever resolution fits")
        } else {
            let s = self.playback.live_side;
            self.say(format!("live resolution fixed at {s}×{s}"))
        }
    }

    /// Fixes live mode's resolution at `side` × `side` skin points (clamped to
    /// `Skin::MIN_M`..=256) and turns the governor off.
    pub fn set_live_side(&mut self, side: usize) -> String {
        self.playback.live_side = side.clamp(crate::character::Skin::MIN_M, 256);
        let s = self.playback.live_side;
        self.set_auto_resolution(false);
        self.say(format!("live resolution {s}×{s}"))
    }

    /// Simulation-time mode's resolution per side, `None` for each skin's
    /// own (any resolution: it need not keep real time).
    pub fn set_simulation_side(&mut self, side: Option<usize>) -> String {
        let side = side.map(|s| s.clamp(crate::character::Skin::MIN_M, 256));
        self.playback.simulation_side = side;
        self.playback.force_setup = true;
        match side {
            Some(s) => self.say(format!("simulation time at {s}×{s}")),
            None => self.say("simulation time at the skins' own resolution"),
        }
    }

    /// Turns performance recording on or off (see the module docs); keys recorded afterwards
    /// start a new undo step.
    pub fn set_recording(&mut self, on: bool) -> String {
        self.playback.recording = on;
        self.playback.end_drag();
        if on {
            let every = self.playback.record_every;
            let reacts = self
                .env
                .sim
                .latest()
                .with_simulated_root(self.env.history.posture())
                .is_some();
            if reacts && self.playback.timeline.is_stopped() {
                self.say(format!(
                    "recording the skeleton's reaction: push or drop it (a key every {every:.2} s \
                     of its motion, stored as one undo step when recording stops)"
                ))
            } else {
                self.say(format!(
                    "recording: drag a joint with the IK tool while playing (a key every {every:.2} s)"
                ))
            }
        } else {
            self.say("recording off")
        }
    }

    /// Sets the timeline seconds between recorded keys; refused under 0.01 s.
    pub fn set_record_every(&mut self, seconds: f64) -> String {
        if !(seconds.is_finite() && seconds >= 1e-2) {
            return self.say(format!("refused: a key every {seconds} s"));
        }
        self.playback.record_every = seconds;
        self.say(format!("a key every {seconds:.2} s"))
    }

    /// One line for the timeline panel.
    pub fn status_line(&self) -> String {
        let tl = &self.playback.timeline;
        let state = match tl.transport {
            Transport::Stopped => "editing",
            Transport::Playing => "playing",
            Transport::Paused => "paused",
        };
        let keys = self.keys().len();
        let lp = if tl.looping { ", loop" } else { "" };
        let rec = if self.playback.recording { ", rec" } else { "" };
        format!(
            "{:.2} s · {state} · {}{lp}{rec} · {keys} keys",
            tl.time,
            tl.mode.label()
        )
    }
}
