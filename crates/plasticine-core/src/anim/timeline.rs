//! The timeline's pure state (LEMAN §6.4: key postures on a time line,
//! played back in one of several modes): the current time, the transport
//! (stopped, playing, paused), looping, the playback mode and the selected
//! key. No threads, no simulation: `crates/plasticine-app/src/app/playback.rs` drives the
//! simulation thread from it.
//!
//! Times are seconds on the keys' time axis ([`KeyPosture::time`]). The
//! playable range is the keys' span, `[first.time, last.time]`.

use crate::character::KeyPosture;
use serde::{Deserialize, Serialize};

/// Two key postures closer in time than this (seconds) are the same key:
/// `Command::SetKey` replaces a key this close, the key commands find their
/// key within it, and `Command::MoveKey` refuses to land this close to
/// another key.
pub const KEY_TIME_EPSILON: f32 = 1e-3;

/// How the motion is shown while the timeline plays (LEMAN §6.4–6.5, §8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlaybackMode {
    /// The skeleton at the spline posture, at full speed; the simulation is
    /// paused (the skin stays where it was).
    #[default]
    SkeletonOnly,
    /// The skin simulated live at a low resolution, in real time.
    LiveLowRes,
    /// The skin simulated at full resolution; the timeline follows the
    /// *simulated* time, slower than real time but with the skin correct.
    SimulationTime,
    /// Frames streamed from a bake's frame cache; scrubbing is random access.
    Baked,
}

impl PlaybackMode {
    /// Every playback mode, in the order the "mode" button cycles through them.
    pub const ALL: [PlaybackMode; 4] = [
        PlaybackMode::SkeletonOnly,
        PlaybackMode::LiveLowRes,
        PlaybackMode::SimulationTime,
        PlaybackMode::Baked,
    ];

    /// A short name for the UI.
    pub fn label(self) -> &'static str {
        match self {
            PlaybackMode::SkeletonOnly => "skeleton only",
            PlaybackMode::LiveLowRes => "live (low resolution)",
            PlaybackMode::SimulationTime => "simulation time",
            PlaybackMode::Baked => "baked",
        }
    }

    /// The next mode in [`PlaybackMode::ALL`] order (wrapping), for a
    /// "mode" button that cycles.
    pub fn next(self) -> PlaybackMode {
        let i = Self::ALL.iter().position(|&m| m == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    /// Whether the skin is simulated while playing in this mode.
    pub fn simulates(self) -> bool {
        matches!(
            self,
            PlaybackMode::LiveLowRes | PlaybackMode::SimulationTime
        )
    }
}

/// Playing, paused on a frame, or stopped (interactive editing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Transport {
    /// Interactive editing: the simulation follows the working posture; the
    /// current time is only where the next key goes.
    #[default]
    Stopped,
    /// Playing: the current time advances and the motion is shown in the playback mode.
    Playing,
    /// Holding the current time's frame (scrubbing moves it).
    Paused,
}

/// The timeline: current time, transport, loop, mode and selected key.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Timeline {
    /// Current time (s, on the keys' axis).
    pub time: f64,
    /// Whether the timeline is stopped, playing or paused.
    pub transport: Transport,
    /// Whether playback wraps from the end of the range to its start.
    pub looping: bool,
    /// How the motion is shown while playing.
    pub mode: PlaybackMode,
    /// The selected key, by time (a key found within [`KEY_TIME_EPSILON`]).
    pub selected: Option<f32>,
    /// The range ends at least here (s), so that a performance can be
    /// recorded past the last key (or with no keys at all).
    pub extent: f64,
}

/// What [`Timeline::advance`] did at the end of the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advanced {
    /// Moved within the range.
    Within,
    /// Passed the end and wrapped to the start (looping).
    Wrapped,
    /// Reached the end and stopped there (not looping): the transport is
    /// now paused.
    Ended,
}

/// The keys' span `[first, last]`, `None` without keys (see also
/// [`Timeline::range`]).
pub fn key_range(keys: &[KeyPosture]) -> Option<(f64, f64)> {
    Some((keys.first()?.time as f64, keys.last()?.time as f64))
}

/// Index of the key within [`KEY_TIME_EPSILON`] of `time`.
pub fn key_at(keys: &[KeyPosture], time: f32) -> Option<usize> {
    keys.iter()
        .position(|k| (k.time - time).abs() < KEY_TIME_EPSILON)
}

impl Timeline {
    /// The playable range: from the first key (or 0 without keys) to the
    /// later of the last key and [`Timeline::extent`]; `None` when that is
    /// empty (no keys and no extent).
    pub fn range(&self, keys: &[KeyPosture]) -> Option<(f64, f64)> {
        match key_range(keys) {
            Some((start, end)) => Some((start, end.max(self.extent))),
            None if self.extent > 0.0 => Some((0.0, self.extent)),
            None => None,
        }
    }

    /// Whether the transport is [`Transport::Playing`].
    pub fn is_playing(&self) -> bool {
        self.transport == Transport::Playing
    }

    /// Whether the transport is [`Transport::Stopped`] (interactive editing).
    pub fn is_stopped(&self) -> bool {
        self.transport == Transport::Stopped
    }

    /// Moves the current time by `dt` seconds of timeline time. Past the last
    /// key it wraps to the first (looping) or stops at the last, pausing.
    /// Does nothing without keys or unless playing.
    pub fn advance(&mut self, dt: f64, keys: &[KeyPosture]) -> Advanced {
        let Some((start, end)) = self.range(keys) else {
            return Advanced::Within;
        };
        if !self.is_playing() || !dt.is_finite() {
            return Advanced::Within;
        }
        self.time += dt.max(0.0);
        if self.time < start {
            self.time = start;
        }
        if self.time <= end {
            return Advanced::Within;
        }
        let period = end - start;
        if self.looping && period > 0.0 {
            self.time = start + (self.time - start).rem_euclid(period);
            Advanced::Wrapped
        } else {
            self.time = end;
            self.transport = Transport::Paused;
            Advanced::Ended
        }
    }

    /// Puts the current time at `t`, clamped to [`Timeline::range`] (to ≥ 0
    /// without one). Returns the time reached.
    pub fn seek(&mut self, t: f64, keys: &[KeyPosture]) -> f64 {
        let t = if t.is_finite() { t } else { self.time };
        self.time = match self.range(keys) {
            Some((start, end)) => t.clamp(start, end),
            None => t.max(0.0),
        };
        self.time
    }

    /// The index of the selected key, if it still exists.
    pub fn selected_index(&self, keys: &[KeyPosture]) -> Option<usize> {
        key_at(keys, self.selected?)
    }

    /// Selects the first key after the current time (a selected key moved
    /// the current time to itself), wrapping to the first key, and moves the
    /// current time to it.
    pub fn select_next_key(&mut self, keys: &[KeyPosture]) -> Option<usize> {
        let from = self.time;
        let i = keys
            .iter()
            .position(|k| k.time as f64 > from + KEY_TIME_EPSILON as f64)
            .or_else(|| (!keys.is_empty()).then_some(0))?;
        self.select(keys, i)
    }

    /// Selects the last key before the current time, wrapping to the last
    /// key, and moves the current time to it.
    pub fn select_previous_key(&mut self, keys: &[KeyPosture]) -> Option<usize> {
        let from = self.time;
        let i = keys
            .iter()
            .rposition(|k| (k.time as f64) < from - KEY_TIME_EPSILON as f64)
            .or_else(|| keys.len().checked_sub(1))?;
        self.select(keys, i)
    }

    /// Selects key `i` and moves the current time to it.
    pub fn select(&mut self, keys: &[KeyPosture], i: usize) -> Option<usize> {
        let k = keys.get(i)?;
        self.selected = Some(k.time);
        self.time = k.time as f64;
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::character::Posture;

    fn keys(times: &[f32]) -> Vec<KeyPosture> {
        times
            .iter()
            .map(|&time| KeyPosture {
                time,
                posture: Posture {
                    root_translation: glam::Vec3::ZERO,
                    angles: vec![],
                    blend: vec![],
                },
                tension: 0.0,
                continuity: 0.0,
                bias: 0.0,
            })
            .collect()
    }

    #[test]
    fn advance_wraps_when_looping_and_pauses_at_the_end_otherwise() {
        let k = keys(&[0.5, 1.0, 2.5]);
        let mut tl = Timeline {
            time: 0.5,
            transport: Transport::Playing,
            looping: true,
            ..Timeline::default()
        };
        assert_eq!(tl.advance(1.0, &k), Advanced::Within);
        assert_eq!(tl.time, 1.5);
        // 1.5 + 1.5 = 3.0 → 0.5 past the end of a 2 s period.
        assert_eq!(tl.advance(1.5, &k), Advanced::Wrapped);
        assert!((tl.time - 1.0).abs() < 1e-12, "{}", tl.time);
        tl.looping = false;
        assert_eq!(tl.advance(5.0, &k), Advanced::Ended);
        assert_eq!(tl.time, 2.5);
        assert_eq!(tl.transport, Transport::Paused);
        // Paused and stopped timelines do not move.
        assert_eq!(tl.advance(1.0, &k), Advanced::Within);
        assert_eq!(tl.time, 2.5);
        // Without keys nothing moves either.
        tl.transport = Transport::Playing;
        tl.advance(1.0, &[]);
        assert_eq!(tl.time, 2.5);
    }

    #[test]
    fn seek_clamps_to_the_keys_and_selection_walks_them() {
        let k = keys(&[0.0, 1.0, 2.0]);
        let mut tl = Timeline::default();
        assert_eq!(tl.seek(7.0, &k), 2.0);
        assert_eq!(tl.seek(-1.0, &k), 0.0);
        assert_eq!(tl.seek(f64::NAN, &k), 0.0);
        assert_eq!(tl.seek(3.0, &[]), 3.0);
        assert_eq!(tl.seek(-3.0, &[]), 0.0);
        tl.extent = 5.0;
        assert_eq!(tl.seek(7.0, &k), 5.0, "the extent lengthens the range");
        assert_eq!(tl.range(&[]), Some((0.0, 5.0)));
        tl.extent = 0.0;
        tl.time = 0.4;
        assert_eq!(tl.select_next_key(&k), Some(1));
        assert_eq!(tl.time, 1.0);
        assert_eq!(tl.select_next_key(&k), Some(2));
        assert_eq!(tl.select_next_key(&k), Some(0), "wraps");
        assert_eq!(tl.select_previous_key(&k), Some(2), "wraps back");
        assert_eq!(tl.select_previous_key(&k), Some(1));
        assert_eq!(tl.selected_index(&k), Some(1));
        assert_eq!(tl.selected_index(&keys(&[0.0, 2.0])), None);
        assert_eq!(tl.select_next_key(&[]), None);
        assert_eq!(PlaybackMode::Baked.next(), PlaybackMode::SkeletonOnly);
    }
}
