//! A rolling record of [`FrameTimings`]: summaries (mean, 95th percentile,
//! maximum), the overlay lines drawn in the view, and a CSV a front end can
//! save (atomically, like every file Plasticine writes).

use super::sim_thread::SimStatus;
use crate::io::{IoError, write_atomic};
use std::collections::{BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// Timings of one frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameTimings {
    /// The frame's index, counted from 0 by the frame loop.
    pub frame_index: u64,
    /// Tracking sample the tools ran on.
    pub first_tracking_sequence: u64,
    /// Tracking sample the frame was rendered with.
    pub tracking_sequence_used: u64,
    /// Sequence number of the simulation snapshot the frame drew.
    pub snapshot_sequence: u64,
    /// Simulated time of the snapshot drawn (s).
    pub sim_time: f64,
    /// Tools and edits (step 2 and 3).
    pub tools: Duration,
    /// The renderer's CPU time.
    pub render_cpu: Duration,
    /// From the second tracking sample to submission: the head/hand latency
    /// the application adds.
    pub tracking_age: Duration,
    /// From the snapshot's publication to submission.
    pub snapshot_age: Duration,
    /// Wall time of the whole `frame` call.
    pub frame_time: Duration,
    /// From the previous frame's start to this one's (zero for the first).
    pub frame_interval: Duration,
}

/// Frames kept by [`FrameLog::default`]: ten seconds at 90 Hz.
pub const DEFAULT_CAPACITY: usize = 900;
/// Frames the overlay averages over: one second at 90 Hz.
pub const OVERLAY_WINDOW: usize = 90;

/// Mean, 95th percentile and maximum of one duration.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// The mean.
    pub mean: Duration,
    /// The 95th percentile (nearest rank).
    pub p95: Duration,
    /// The largest value.
    pub max: Duration,
}

impl Stats {
    /// The statistics of `values` (all zero when there are none).
    pub fn of(values: impl IntoIterator<Item = Duration>) -> Self {
        let mut v: Vec<Duration> = values.into_iter().collect();
        if v.is_empty() {
            return Self::default();
        }
        v.sort_unstable();
        let sum: Duration = v.iter().sum();
        // Nearest rank: the smallest value at or above 95 % of the samples.
        let rank = ((0.95 * v.len() as f64).ceil() as usize).clamp(1, v.len());
        Self {
            mean: sum / v.len() as u32,
            p95: v[rank - 1],
            max: v[v.len() - 1],
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "mean {:.2} ms, p95 {:.2} ms, max {:.2} ms",
            ms(self.mean),
            ms(self.p95),
            ms(self.max)
        )
    }
}

/// Summary of the frames in a log.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameSummary {
    /// How many frames were summarised.
    pub frames: usize,
    /// Distinct snapshots drawn.
    pub distinct_snapshots: usize,
    /// Time spent in the tools and edits.
    pub tools: Stats,
    /// The renderer's CPU time.
    pub render_cpu: Stats,
    /// From the second tracking sample to submission (head and hand latency).
    pub tracking_age: Stats,
    /// From the snapshot's publication to submission.
    pub snapshot_age: Stats,
    /// Wall time of the whole `frame` call.
    pub frame_time: Stats,
    /// Start-to-start time between frames (the first frame, which has none, left out).
    pub frame_interval: Stats,
}

impl FrameSummary {
    /// The summary of `frames`.
    pub fn of<'a>(frames: impl IntoIterator<Item = &'a FrameTimings>) -> Self {
        let v: Vec<&FrameTimings> = frames.into_iter().collect();
        let stat = |get: fn(&FrameTimings) -> Duration| Stats::of(v.iter().map(|t| get(t)));
        Self {
            frames: v.len(),
            distinct_snapshots: v
                .iter()
                .map(|t| t.snapshot_sequence)
                .collect::<BTreeSet<_>>()
                .len(),
            tools: stat(|t| t.tools),
            render_cpu: stat(|t| t.render_cpu),
            tracking_age: stat(|t| t.tracking_age),
            snapshot_age: stat(|t| t.snapshot_age),
            frame_time: stat(|t| t.frame_time),
            // The first frame has no interval.
            frame_interval: Stats::of(
                v.iter()
                    .filter(|t| !t.frame_interval.is_zero())
                    .map(|t| t.frame_interval),
            ),
        }
    }
}

impl std::fmt::Display for FrameSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} frames, {} distinct snapshots",
            self.frames, self.distinct_snapshots
        )?;
        writeln!(f, "tools          {}", self.tools)?;
        writeln!(f, "render cpu     {}", self.render_cpu)?;
        writeln!(f, "tracking age   {}", self.tracking_age)?;
        writeln!(f, "snapshot age   {}", self.snapshot_age)?;
        writeln!(f, "frame time     {}", self.frame_time)?;
        write!(f, "frame interval {}", self.frame_interval)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The last `capacity` frames' timings.
#[derive(Clone, Debug)]
pub struct FrameLog {
    frames: VecDeque<FrameTimings>,
    capacity: usize,
}

impl Default for FrameLog {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl FrameLog {
    /// An empty log that keeps the last `capacity` frames (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            frames: VecDeque::with_capacity(capacity.max(1)),
            capacity: capacity.max(1),
        }
    }

    /// Records a frame, forgetting the oldest when full.
    pub fn push(&mut self, t: FrameTimings) {
        if self.frames.len() == self.capacity {
            self.frames.pop_front();
        }
        self.frames.push_back(t);
    }

    /// How many frames are kept.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether no frame has been recorded.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The newest frame's timings, if any.
    pub fn last(&self) -> Option<&FrameTimings> {
        self.frames.back()
    }

    /// Oldest first.
    pub fn frames(&self) -> impl ExactSizeIterator<Item = &FrameTimings> + Clone {
        self.frames.iter()
    }

    /// Summary of every frame kept.
    pub fn summary(&self) -> FrameSummary {
        FrameSummary::of(self.frames.iter())
    }

    /// Summary of the last `n` frames.
    pub fn recent(&self, n: usize) -> FrameSummary {
        FrameSummary::of(self.frames.iter().skip(self.frames.len().saturating_sub(n)))
    }

    /// The timing lines drawn in the view, e.g.
    /// `render 3.1 ms  tracking age 3.2 ms  snapshot age 48 ms  sim t=1.23 s x0.9`,
    /// then the simulation's state when it needs attention.
    pub fn overlay_lines(&self, status: &SimStatus) -> Vec<String> {
        let r = self.recent(OVERLAY_WINDOW);
        let snapshot_age = self.last().map_or(Duration::ZERO, |t| t.snapshot_age);
        let mut lines = vec![format!(
            "render {:.1} ms  tracking age {:.1} ms  snapshot age {:.0} ms  sim t={:.2} s x{:.2}",
            ms(r.render_cpu.mean),
            ms(r.tracking_age.mean),
            ms(snapshot_age),
            status.sim_time,
            status.achieved_ratio,
        )];
        if r.frame_interval.mean > Duration::ZERO {
            lines.push(format!(
                "{:.0} fps  frame p95 {:.1} ms  solver {:.1} ms/advance",
                1.0 / r.frame_interval.mean.as_secs_f64(),
                ms(r.frame_interval.p95),
                ms(status.step_wall),
            ));
        }
        if status.paused {
            lines.push("simulation paused".into());
        } else if status.fell_behind {
            lines.push(format!(
                "simulation falling behind: x{:.2} of x{:.2} (lower the resolution or the ratio)",
                status.achieved_ratio, status.time_ratio
            ));
        }
        if !status.step_delay.is_zero() {
            lines.push(format!(
                "solver slowed down by {:.0} ms per advance",
                ms(status.step_delay)
            ));
        }
        if let Some(m) = &status.message {
            lines.push(m.clone());
        }
        if !status.running {
            lines.push("simulation stopped".into());
        }
        lines
    }

    /// Logs a summary of every frame kept (`tracing`, info).
    pub fn log_summary(&self) {
        let s = self.summary();
        tracing::info!(
            frames = s.frames,
            snapshots = s.distinct_snapshots,
            render_ms = ms(s.render_cpu.mean),
            tracking_age_ms = ms(s.tracking_age.mean),
            tracking_age_max_ms = ms(s.tracking_age.max),
            snapshot_age_ms = ms(s.snapshot_age.mean),
            snapshot_age_max_ms = ms(s.snapshot_age.max),
            frame_ms = ms(s.frame_interval.mean),
            "frame timings"
        );
    }

    /// The frames as CSV text (durations in milliseconds).
    pub fn to_csv(&self) -> String {
        let mut out = String::from(
            "frame,first_tracking_sequence,tracking_sequence_used,snapshot_sequence,sim_time_s,\
             tools_ms,render_cpu_ms,tracking_age_ms,snapshot_age_ms,frame_time_ms,frame_interval_ms\n",
        );
        for t in &self.frames {
            let _ = writeln!(
                out,
                "{},{},{},{},{:.6},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4}",
                t.frame_index,
                t.first_tracking_sequence,
                t.tracking_sequence_used,
                t.snapshot_sequence,
                t.sim_time,
                ms(t.tools),
                ms(t.render_cpu),
                ms(t.tracking_age),
                ms(t.snapshot_age),
                ms(t.frame_time),
                ms(t.frame_interval),
            );
        }
        out
    }

    /// Writes [`to_csv`](Self::to_csv) to `path` atomically.
    pub fn write_csv(&self, path: &Path) -> Result<(), IoError> {
        write_atomic(path, self.to_csv().as_bytes())
    }
}

/// The overlay's line on adaptive flesh detail (§4.7), when there is any.
pub(super) fn flesh_detail_line(flesh: &crate::fem::FleshPose) -> Option<String> {
    let total: usize = flesh.detail.iter().sum();
    (total > 0).then(|| {
        let per_level: Vec<String> = flesh
            .detail
            .iter()
            .enumerate()
            .map(|(j, n)| format!("{n} at level {}", j + 1))
            .collect();
        format!("flesh detail: {}", per_level.join(", "))
    })
}

/// The status line of the dynamic morph targets' weights at the drawn pose
/// ("morph: tucked 0.62, rest 0.38"), so an animator scrubbing the timeline
/// sees which targets act; None without targets.
pub(super) fn flesh_morph_line(flesh: &crate::fem::FleshPose) -> Option<String> {
    let (weights, clamped) = &flesh.morph_weights;
    (!weights.is_empty()).then(|| {
        let clamp = if *clamped {
            " (clamped: a pose far past the targets)"
        } else {
            ""
        };
        format!("morph: {}{clamp}", named_weights(weights))
    })
}

/// "name 0.62, other 0.38".
fn named_weights(weights: &[(String, f32)]) -> String {
    let named: Vec<String> = weights
        .iter()
        .map(|(name, w)| format!("{name} {w:.2}"))
        .collect();
    named.join(", ")
}

/// The status line of the embedded mesh's blendshapes at the drawn pose
/// ("blend: smile 0.62, frown 0.00"), with the last solve's failure if it
/// failed (the blend before it is drawn); None without blendshapes.
pub(super) fn flesh_blend_line(flesh: &crate::fem::FleshPose) -> Option<String> {
    let (weights, failure) = &flesh.blend_weights;
    (!weights.is_empty()).then(|| {
        let named = named_weights(weights);
        match failure {
            Some(why) => format!("blend: {named} (kept the last blend: {why})"),
            None => format!("blend: {named}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_morph_line_names_each_targets_weight() {
        let mut pose = crate::fem::FleshPose {
            time: 0.0,
            muscle_offsets: Vec::new(),
            lattice: Vec::new(),
            edges: Default::default(),
            mesh: None,
            morph: None,
            grabs: Vec::new(),
            detail: Vec::new(),
            morph_weights: Default::default(),
            blend_weights: Default::default(),
            root_responds: false,
        };
        assert_eq!(flesh_morph_line(&pose), None);
        pose.morph_weights = (
            vec![("tucked".into(), 0.625), ("rest".into(), 0.375)],
            false,
        );
        assert_eq!(
            flesh_morph_line(&pose).as_deref(),
            Some("morph: tucked 0.62, rest 0.38")
        );
        assert_eq!(flesh_blend_line(&pose), None);
        pose.blend_weights = (vec![("smile".into(), 0.625), ("frown".into(), 0.0)], None);
        assert_eq!(
            flesh_blend_line(&pose).as_deref(),
            Some("blend: smile 0.62, frown 0.00")
        );
        pose.blend_weights.1 = Some("did not converge".into());
        assert!(
            flesh_blend_line(&pose)
                .unwrap()
                .ends_with("(kept the last blend: did not converge)")
        );
        pose.morph_weights.1 = true;
        assert!(
            flesh_morph_line(&pose)
                .unwrap()
                .ends_with("(clamped: a pose far past the targets)")
        );
    }

    fn timings(i: u64, tracking_ms: u64, snapshot: u64) -> FrameTimings {
        FrameTimings {
            frame_index: i,
            first_tracking_sequence: 2 * i,
            tracking_sequence_used: 2 * i + 1,
            snapshot_sequence: snapshot,
            sim_time: i as f64 * 0.01,
            tools: Duration::from_micros(100),
            render_cpu: Duration::from_millis(2),
            tracking_age: Duration::from_millis(tracking_ms),
            snapshot_age: Duration::from_millis(10 * i),
            frame_time: Duration::from_millis(3),
            frame_interval: if i == 0 {
                Duration::ZERO
            } else {
                Duration::from_millis(11)
            },
        }
    }

    #[test]
    fn stats_take_mean_nearest_rank_p95_and_max() {
        let s = Stats::of((1..=100).map(Duration::from_millis));
        assert_eq!(s.mean, Duration::from_micros(50_500));
        assert_eq!(s.p95, Duration::from_millis(95));
        assert_eq!(s.max, Duration::from_millis(100));
        assert_eq!(Stats::of([]), Stats::default());
    }

    #[test]
    fn the_log_rolls_and_summarises() {
        let mut log = FrameLog::new(3);
        for i in 0..5 {
            log.push(timings(i, i + 1, i / 2));
        }
        assert_eq!(log.len(), 3);
        assert_eq!(log.frames().next().unwrap().frame_index, 2);
        let s = log.summary();
        assert_eq!(s.frames, 3);
        assert_eq!(s.distinct_snapshots, 2, "snapshots 1, 1, 2");
        assert_eq!(s.tracking_age.max, Duration::from_millis(5));
        assert_eq!(s.tracking_age.mean, Duration::from_millis(4));
    }

    #[test]
    fn overlay_and_csv_carry_the_figures() {
        let mut log = FrameLog::default();
        for i in 0..4 {
            log.push(timings(i, 3, 1));
        }
        let status = SimStatus {
            sim_time: 1.234,
            time_ratio: 1.0,
            achieved_ratio: 0.5,
            fell_behind: true,
            paused: false,
            revision: 0,
            sequence: 1,
            step_wall: Duration::from_millis(30),
            step_delay: Duration::ZERO,
            message: Some("skin 'body' diverged".into()),
            message_count: 1,
            running: true,
            trace: Default::default(),
            push_impulse: 0.0,
        };
        let lines = log.overlay_lines(&status);
        assert!(lines[0].contains("tracking age 3.0 ms"), "{lines:?}");
        assert!(lines[0].contains("snapshot age 30 ms"), "{lines:?}");
        assert!(lines[0].contains("sim t=1.23 s x0.50"), "{lines:?}");
        assert!(lines.iter().any(|l| l.contains("falling behind")));
        assert!(lines.iter().any(|l| l.contains("diverged")));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timings.csv");
        log.write_csv(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(rows.len(), 5);
        assert!(rows[0].starts_with("frame,first_tracking_sequence"));
        assert!(rows[4].starts_with("3,6,7,1,0.030000,"), "{}", rows[4]);
        assert_eq!(rows[4].split(',').count(), rows[0].split(',').count());
    }
}
