//! The panel's timeline rows (LEMAN §6.4): what each shows and what a press
//! on its halves asks the front end's playback to do.

use crate::anim::sample_posture;
use crate::character::Character;

/// Timeline rows (LEMAN §6.4): the panel shows them; the front
/// end's playback acts on them ([`PanelOutcome::Timeline`](super::PanelOutcome::Timeline)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimelineRow {
    /// The time track across the whole row: pointing at a place seeks there.
    Scrubber,
    /// The chosen blendshape target's keyed weight drawn over the time
    /// track, under the scrubber (pointing at a place seeks there too).
    BlendCurve,
    /// Left: stop (back to editing); right: play / pause.
    Transport,
    /// Left: the previous playback mode; right: the next.
    Mode,
    /// Left: the timeline 1 s shorter; right: longer (room past the last
    /// key for new keys and performances).
    Length,
    /// Looping playback, on or off.
    Loop,
    /// Left: delete the selected key; right: store the posture as a key at
    /// the current time.
    Key,
    /// Left: the previous key; right: the next.
    SelectKey,
    /// Left: the selected key 0.1 s earlier; right: later.
    MoveKey,
    /// The selected key's Kochanek–Bartels tension, continuity and bias:
    /// sliders over −1..1, their − and + marks −0.25 and +0.25.
    Tension,
    /// The selected key's Kochanek–Bartels continuity (a slider, as tension).
    Continuity,
    /// The selected key's Kochanek–Bartels bias (a slider, as tension).
    Bias,
    /// Live playback at whatever skin resolution keeps real time (§8), or
    /// at a fixed one.
    AutoResolution,
    /// Performance recording: keys laid down while an IK drag plays.
    Perform,
    /// Left: keys twice as often while performing; right: half as often.
    PerformRate,
}

/// What a timeline row asks the playback to do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimelineAction {
    /// Seek to this fraction (0..1) of the time range.
    Seek(f32),
    /// Stop playback and go back to editing.
    Stop,
    /// Play, or pause while playing.
    TogglePlay,
    /// Switch to the previous playback mode.
    PreviousMode,
    /// Switch to the next playback mode.
    NextMode,
    /// Lengthen (or shorten) the timeline by this many seconds.
    Lengthen(f64),
    /// Turn looping on or off.
    ToggleLoop,
    /// Delete the selected key.
    DeleteKey,
    /// Store the posture as a key at the current time.
    StoreKey,
    /// Select the previous key.
    PreviousKey,
    /// Select the next key.
    NextKey,
    /// Move the selected key by this many seconds.
    MoveKey(f64),
    /// Change the selected key's (tension, continuity, bias) by these.
    Tcb([f32; 3]),
    /// Set one of the selected key's tension (0), continuity (1) or bias
    /// (2) to `value` (a slider pressed or dragged), as one undo step, or
    /// as part of the last one when `continuing` (the same drag).
    SetTcb {
        /// 0 tension, 1 continuity, 2 bias.
        index: usize,
        /// The value, −1..1.
        value: f32,
        /// Part of the drag the last one began.
        continuing: bool,
    },
    /// Switch live playback between the resolution that keeps real time and a fixed one.
    ToggleAutoResolution,
    /// Start or stop performance recording.
    TogglePerform,
    /// Multiply the seconds between performed keys by this.
    ScalePerformInterval(f64),
}

/// What the timeline rows show (the front end's playback state).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimelineStatus {
    /// The playhead's time, s.
    pub time: f64,
    /// The time range shown by the scrubber.
    pub range: (f64, f64),
    /// "playing", "paused", "editing".
    pub transport: String,
    /// The playback mode's label.
    pub mode: String,
    /// Whether playback loops.
    pub looping: bool,
    /// Key times, ascending.
    pub keys: Vec<f32>,
    /// Index of the selected key in `keys`, if any.
    pub selected: Option<usize>,
    /// The selected key's tension, continuity, bias.
    pub selected_tcb: Option<[f32; 3]>,
    /// Whether live playback picks the skin resolution that keeps real time.
    pub auto_resolution: bool,
    /// Whether performance recording is on.
    pub performing: bool,
    /// Seconds between performed keys.
    pub perform_every: f64,
    /// The blendshape weights of the posture shown (the working one while
    /// editing, the animation's while playing).
    pub blend: Vec<f32>,
    /// The chosen blendshape target's name and its keyed weight at
    /// `SCRUBBER_CHARS` (30) times evenly across `range` ([`blend_curve`]);
    /// `None` without blendshapes.
    pub blend_curve: Option<(String, Vec<f32>)>,
}

/// Levels of the blend curve's text, weight 0 to 1.
const CURVE_LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Blendshape target `target`'s weight in `c`'s key postures at
/// `SCRUBBER_CHARS` (30) times evenly across `range` (s), with its name; `None`
/// without blendshapes or keys.
pub fn blend_curve(c: &Character, target: usize, range: (f64, f64)) -> Option<(String, Vec<f32>)> {
    let shapes = c.blendshapes()?;
    let target = target.min(shapes.targets.len().checked_sub(1)?);
    if c.key_postures.is_empty() {
        return None;
    }
    let (a, b) = range;
    let weights = (0..SCRUBBER_CHARS)
        .map(|i| {
            let t = a + (b - a) * i as f64 / (SCRUBBER_CHARS - 1) as f64;
            sample_posture(&c.key_postures, t as f32)
                .and_then(|p| p.blend.get(target).copied())
                .unwrap_or(0.0)
        })
        .collect();
    Some((shapes.targets[target].name.clone(), weights))
}

/// The blend curve row's text back as its weights (to the levels the text
/// keeps, 1/7 apart) and the target's name; `None` for a row without a
/// curve.
pub fn parse_blend_curve(line: &str) -> Option<(Vec<f32>, &str)> {
    let mut weights = Vec::with_capacity(SCRUBBER_CHARS);
    for (i, ch) in line.char_indices() {
        match CURVE_LEVELS.iter().position(|&l| l == ch) {
            Some(level) => weights.push(level as f32 / (CURVE_LEVELS.len() - 1) as f32),
            None if weights.len() == SCRUBBER_CHARS => return Some((weights, line[i..].trim())),
            None => return None,
        }
    }
    (weights.len() == SCRUBBER_CHARS).then_some((weights, ""))
}

/// Seconds a move-key press moves the selected key.
pub const KEY_NUDGE: f64 = 0.1;
/// A tension/continuity/bias press's step.
pub const TCB_STEP: f32 = 0.25;

/// Which of a key's tension (0), continuity (1) and bias (2) row `r`
/// sets; `None` for the other rows.
pub(super) fn tcb_index(r: TimelineRow) -> Option<usize> {
    match r {
        TimelineRow::Tension => Some(0),
        TimelineRow::Continuity => Some(1),
        TimelineRow::Bias => Some(2),
        _ => None,
    }
}

/// The playback action of a press on timeline row `r`, on its left half
/// (`left`) or its right; the scrubber seeks to `fraction` along the row.
pub(super) fn timeline_action(r: TimelineRow, left: bool, fraction: f32) -> TimelineAction {
    match r {
        TimelineRow::Scrubber | TimelineRow::BlendCurve => {
            TimelineAction::Seek(fraction.clamp(0.0, 1.0))
        }
        TimelineRow::Transport if left => TimelineAction::Stop,
        TimelineRow::Transport => TimelineAction::TogglePlay,
        TimelineRow::Mode if left => TimelineAction::PreviousMode,
        TimelineRow::Mode => TimelineAction::NextMode,
        TimelineRow::Length if left => TimelineAction::Lengthen(-1.0),
        TimelineRow::Length => TimelineAction::Lengthen(1.0),
        TimelineRow::Loop => TimelineAction::ToggleLoop,
        TimelineRow::Key if left => TimelineAction::DeleteKey,
        TimelineRow::Key => TimelineAction::StoreKey,
        TimelineRow::SelectKey if left => TimelineAction::PreviousKey,
        TimelineRow::SelectKey => TimelineAction::NextKey,
        TimelineRow::MoveKey if left => TimelineAction::MoveKey(-KEY_NUDGE),
        TimelineRow::MoveKey => TimelineAction::MoveKey(KEY_NUDGE),
        TimelineRow::Tension | TimelineRow::Continuity | TimelineRow::Bias => {
            let mut v = [0.0; 3];
            v[tcb_index(r).unwrap_or(0)] = if left { -TCB_STEP } else { TCB_STEP };
            TimelineAction::Tcb(v)
        }
        TimelineRow::AutoResolution => TimelineAction::ToggleAutoResolution,
        TimelineRow::Perform => TimelineAction::TogglePerform,
        TimelineRow::PerformRate if left => TimelineAction::ScalePerformInterval(0.5),
        TimelineRow::PerformRate => TimelineAction::ScalePerformInterval(2.0),
    }
}

/// Characters of the scrubber's track (the row's width: the controls are
/// 30 characters wide).
pub const SCRUBBER_CHARS: usize = 30;

/// The text of a timeline row.
pub(super) fn timeline_line(row: TimelineRow, t: &TimelineStatus) -> String {
    let on = |b: bool| if b { "on" } else { "off" };
    let (a, b) = t.range;
    let span = (b - a).max(1e-6);
    let column = |time: f64| -> usize {
        (((time - a) / span).clamp(0.0, 1.0) * (SCRUBBER_CHARS - 1) as f64).round() as usize
    };
    match row {
        TimelineRow::Scrubber => {
            // Keys as 'k' (the selected one 'K'), the playhead as '|'.
            let mut track = vec!['-'; SCRUBBER_CHARS];
            for (i, &k) in t.keys.iter().enumerate() {
                track[column(k as f64)] = if t.selected == Some(i) { 'K' } else { 'k' };
            }
            track[column(t.time)] = '|';
            track.into_iter().collect()
        }
        TimelineRow::BlendCurve => match &t.blend_curve {
            Some((name, weights)) => {
                let top = (CURVE_LEVELS.len() - 1) as f32;
                let curve: String = weights
                    .iter()
                    .map(|w| CURVE_LEVELS[(w.clamp(0.0, 1.0) * top).round() as usize])
                    .collect();
                format!("{curve} {name}")
            }
            None => format!("  {:<13}- (blendshapes)", "blend curve"),
        },
        TimelineRow::Transport => format!("  {:<13}{} {:.2} s", "transport", t.transport, t.time),
        TimelineRow::Mode => format!("  {:<13}{}", "mode", t.mode),
        TimelineRow::Length => format!("  {:<13}{:.2}..{:.2} s", "length", a, b),
        TimelineRow::Loop => format!("  {:<13}{}", "loop", on(t.looping)),
        TimelineRow::Key => format!("  {:<13}{} keys", "keys", t.keys.len()),
        TimelineRow::SelectKey => format!(
            "  {:<13}{}",
            "select key",
            match t.selected.and_then(|i| t.keys.get(i).map(|k| (i, k))) {
                Some((i, k)) => format!("{} at {k:.2} s", i + 1),
                None => "none".into(),
            }
        ),
        TimelineRow::MoveKey => format!("  {:<13}{KEY_NUDGE} s", "move key"),
        TimelineRow::Tension | TimelineRow::Continuity | TimelineRow::Bias => {
            let i = tcb_index(row).unwrap_or(0);
            let label = ["tension", "continuity", "bias"][i];
            match t.selected_tcb {
                Some(v) => format!("  {label:<13}{:+.2}", v[i]),
                None => format!("  {label:<13}(select a key)"),
            }
        }
        TimelineRow::AutoResolution => format!(
            "  {:<13}{}",
            "live res",
            if t.auto_resolution {
                "auto (real time)"
            } else {
                "fixed"
            }
        ),
        TimelineRow::Perform => format!("  {:<13}{}", "perform", on(t.performing)),
        TimelineRow::PerformRate => {
            format!(
                "  {:<13}a key every {:.3} s",
                "perform rate", t.perform_every
            )
        }
    }
}
