//! The latency measurement of ARCHITECTURE.md ("head and hand
//! motion-to-photon latency is set by rendering alone, never by the
//! simulation's cost"), as a function any renderer can be run through: the
//! test stand-in [`BusyRenderer`] in `tests/it/frame_loop.rs`, and the real wgpu
//! renderer in its own test.
//!
//! [`latency_run`] drives a [`FrameLoop`] on the sample penguin playing its
//! waddle, with the solver slowed down by a step delay, with a
//! [`MovingTracker`] whose pose changes at every sample, pacing frames at
//! [`FRAME_PERIOD`] (standing in for the display's vsync). [`LatencyResult::check`] then states what the
//! decoupling promises, in terms relative to the step delay, never in
//! absolute wall-clock figures.

use super::frame_log::FrameSummary;
use super::frame_loop::{
    FrameInputs, FrameLoop, FrameRenderer, FrameTimings, RenderReport, TrackedPose, Tracker,
};
use super::render_failure::RenderFailure;
use super::sim_thread::{SimMessage, SimStatus};
use crate::input::{HandState, InputFrame};
use crate::samples::shipped_penguin;
use crate::skin::{SkeletonDriver, SolverSettings};
use glam::{Mat4, Quat, Vec3, Vec4};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Frame pacing of the run: a 90 Hz headset.
pub const FRAME_PERIOD: Duration = Duration::from_nanos(11_111_111);

/// A tracker whose head and right hand move at every sample (1 mm per
/// sample, and a small turn), so a frame drawn with an old sample is
/// recognisable. It publishes its newest sequence number.
#[derive(Clone, Debug)]
pub struct MovingTracker {
    sequence: u64,
    latest: Arc<AtomicU64>,
    start: Instant,
    offset: Vec3,
}

impl Default for MovingTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl MovingTracker {
    /// The moving tracker with no offset: the head starts at (0, 1.6, 0.5) m in tracker space.
    pub fn new() -> Self {
        Self::with_offset(Vec3::ZERO)
    }

    /// The same motion moved by `offset` (tracker space), e.g. to a desk
    /// calibration's head position.
    pub fn with_offset(offset: Vec3) -> Self {
        Self {
            sequence: 0,
            latest: Arc::new(AtomicU64::new(0)),
            start: Instant::now(),
            offset,
        }
    }

    /// The sequence of the newest sample, readable from anywhere.
    pub fn latest(&self) -> Arc<AtomicU64> {
        self.latest.clone()
    }

    /// Head pose (tracker space) of sample `sequence`.
    pub fn head_at(&self, sequence: u64) -> (Vec3, Quat) {
        let s = sequence as f32;
        (
            self.offset + Vec3::new(0.001 * s, 1.6, 0.5),
            Quat::from_rotation_y(0.002 * s),
        )
    }

    /// Right hand position (tracker space) of sample `sequence`.
    pub fn right_hand_at(&self, sequence: u64) -> Vec3 {
        let s = sequence as f32;
        self.offset + Vec3::new(0.3, 1.2 + 0.001 * s, 0.2)
    }
}

impl Tracker for MovingTracker {
    fn sample(&mut self) -> TrackedPose {
        self.sequence += 1;
        let seq = self.sequence;
        self.latest.store(seq, Ordering::SeqCst);
        let now = Instant::now();
        TrackedPose {
            head: self.head_at(seq),
            input: InputFrame {
                time: (now - self.start).as_secs_f64(),
                right: HandState::at(self.right_hand_at(seq)),
                left: HandState::at(self.offset + Vec3::new(-0.3, 1.2, 0.2)),
            },
            sequence: seq,
            sampled_at: now,
        }
    }
}

/// A stand-in renderer doing a fixed amount of CPU work per frame: projecting
/// every skin point of the snapshot with the head's view-projection, `passes`
/// times. Its cost depends on the work, not on the solver.
#[derive(Clone, Debug)]
pub struct BusyRenderer {
    /// How many times each frame projects every skin point.
    pub passes: usize,
    /// Keeps the work from being optimised away.
    pub checksum: f32,
}

impl BusyRenderer {
    /// A renderer that projects every skin point `passes` times per frame.
    pub fn new(passes: usize) -> Self {
        Self {
            passes,
            checksum: 0.0,
        }
    }
}

impl FrameRenderer for BusyRenderer {
    fn render(&mut self, frame: &FrameInputs) -> Result<RenderReport, RenderFailure> {
        let start = Instant::now();
        let (eye, look) = frame.head;
        let view = Mat4::from_rotation_translation(look, eye).inverse();
        // Right-handed perspective, 1.6 rad vertical field, depth 0.05..20 m.
        let (f, near, far) = (1.0 / (0.8f32).tan(), 0.05, 20.0);
        let proj = Mat4::from_cols(
            Vec4::new(f, 0.0, 0.0, 0.0),
            Vec4::new(0.0, f, 0.0, 0.0),
            Vec4::new(0.0, 0.0, far / (near - far), -1.0),
            Vec4::new(0.0, 0.0, near * far / (near - far), 0.0),
        );
        let view_proj = proj * view;
        let mut sum = 0.0f32;
        for pass in 0..self.passes {
            let m = view_proj * Mat4::from_translation(Vec3::splat(pass as f32 * 1e-6));
            for skin in &frame.snapshot.skins {
                for p in &skin.positions {
                    let c = m * p.extend(1.0);
                    sum += c.x / c.w.max(1e-3);
                }
            }
        }
        for line in frame.overlay {
            sum += line.len() as f32;
        }
        self.checksum = std::hint::black_box(sum);
        Ok(RenderReport {
            cpu_encode: start.elapsed(),
            submitted_at: Instant::now(),
        })
    }
}

/// Wraps the renderer under test and checks, at render time, that it is given
/// the tracker's newest sample and that sample's head in world space.
struct Checked<R> {
    inner: R,
    latest: Arc<AtomicU64>,
    stale: usize,
    wrong_head: usize,
    /// A copy of the tracker's motion, to know where the head should be.
    tracker: MovingTracker,
}

impl<R: FrameRenderer> FrameRenderer for Checked<R> {
    fn acquire(&mut self) -> Result<(), RenderFailure> {
        self.inner.acquire()
    }

    fn render(&mut self, frame: &FrameInputs) -> Result<RenderReport, RenderFailure> {
        if frame.tracking_sequence != self.latest.load(Ordering::SeqCst) {
            self.stale += 1;
        }
        let expected = frame
            .vehicle
            .transform_point3(self.tracker.head_at(frame.tracking_sequence).0);
        if frame.head.0.distance(expected) > 1e-4 {
            self.wrong_head += 1;
        }
        self.inner.render(frame)
    }
}

/// What a latency run measured.
#[derive(Clone, Debug)]
pub struct LatencyResult {
    /// The delay the solver was slowed down by at every advance.
    pub step_delay: Duration,
    /// Every frame's timings, in order.
    pub frames: Vec<FrameTimings>,
    /// The summary of those frames.
    pub summary: FrameSummary,
    /// Frames rendered with a tracking sample that was not the tracker's
    /// newest at render time.
    pub stale_tracking_frames: usize,
    /// Frames whose head was not the rendered sample's head in world space.
    pub wrong_head_frames: usize,
    /// The simulation's status at the end.
    pub status: SimStatus,
}

impl LatencyResult {
    /// Every violated promise, or `Ok`:
    /// - each frame was rendered with a tracking sample taken after its
    ///   snapshot was taken (a later sample than the one the tools ran on),
    ///   the tracker's newest at render time, its head in world space;
    /// - the solver really was slow: it published during the run, and some
    ///   frame drew a snapshot at least half a step delay old;
    /// - rendering never waited for it: at least three frames per snapshot;
    /// - the head-to-render latency is bounded by rendering, not by the step:
    ///   every frame's tracking age is under half the step delay.
    pub fn check(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        let late = self
            .frames
            .iter()
            .filter(|t| t.tracking_sequence_used <= t.first_tracking_sequence)
            .count();
        if late > 0 {
            problems.push(format!(
                "{late} frames were rendered with the tools' tracking sample, not a later one"
            ));
        }
        if self.stale_tracking_frames > 0 {
            problems.push(format!(
                "{} frames were rendered with a tracking sample older than the tracker's newest",
                self.stale_tracking_frames
            ));
        }
        if self.wrong_head_frames > 0 {
            problems.push(format!(
                "{} frames were rendered with a head pose other than the sample's, in world space",
                self.wrong_head_frames
            ));
        }
        let s = &self.summary;
        if s.distinct_snapshots < 2 {
            problems.push("the simulation published no snapshot during the run".into());
        }
        if s.frames < 3 * s.distinct_snapshots {
            problems.push(format!(
                "{} frames for {} snapshots: rendering kept pace with the solver, \
                 it should not wait for it",
                s.frames, s.distinct_snapshots
            ));
        }
        // The tracking age is the frame's own rendering, never the solver's
        // step: per frame it exceeds the render time by far less than the
        // step delay (a tenth of it covers a loaded machine's preemption),
        // however slow the renderer is.
        let slack = self.step_delay / 10;
        if let Some(t) = self
            .frames
            .iter()
            .find(|t| t.tracking_age > t.render_cpu + slack)
        {
            problems.push(format!(
                "frame {}'s tracking age {:?} exceeds its render time {:?} by more than a tenth \
                 of the {:?} step delay: the frame waited for the solver",
                t.frame_index, t.tracking_age, t.render_cpu, self.step_delay
            ));
        }
        if s.snapshot_age.max < self.step_delay / 2 {
            problems.push(format!(
                "snapshots were at most {:?} old: the {:?} step delay did not slow the solver",
                s.snapshot_age.max, self.step_delay
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

impl std::fmt::Display for LatencyResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "latency run: step delay {:?}, {} frames at {:.0} Hz pacing, {:.1} frames per snapshot",
            self.step_delay,
            self.summary.frames,
            1.0 / FRAME_PERIOD.as_secs_f64(),
            self.summary.frames as f64 / self.summary.distinct_snapshots.max(1) as f64,
        )?;
        writeln!(f, "{}", self.summary)?;
        write!(
            f,
            "solver: {:.1} ms per advance, sim t={:.3} s, achieved x{:.2}{}",
            self.status.step_wall.as_secs_f64() * 1e3,
            self.status.sim_time,
            self.status.achieved_ratio,
            if self.status.fell_behind {
                " (falling behind)"
            } else {
                ""
            }
        )
    }
}

/// Runs `frames` paced frames of a [`FrameLoop`] on the sample penguin with
/// the solver slowed down by `step_delay` per advance, rendering with
/// `renderer`, and returns what was measured (see [`LatencyResult::check`]).
pub fn latency_run<R: FrameRenderer>(
    renderer: R,
    step_delay: Duration,
    frames: usize,
) -> LatencyResult {
    // Put the penguin in front of a standing user.
    let vehicle = Mat4::from_translation(Vec3::new(0.0, 0.9, 0.8)).inverse();
    latency_run_with(renderer, step_delay, frames, vehicle, Vec3::ZERO)
}

/// [`latency_run`] with the vehicle (`world_from_tracker`) and the tracker's
/// motion moved by `tracker_offset`: e.g. a desk calibration's registration
/// and its fixed head, so a real renderer shows the penguin.
pub fn latency_run_with<R: FrameRenderer>(
    renderer: R,
    step_delay: Duration,
    frames: usize,
    vehicle: Mat4,
    tracker_offset: Vec3,
) -> LatencyResult {
    let penguin = shipped_penguin();
    // Play the waddle, so the solver has real work (skin in motion, contact).
    let waddle = SkeletonDriver::Keys(penguin.key_postures.clone());
    let mut fl = FrameLoop::new(penguin, SolverSettings::default());
    for msg in [
        SimMessage::SetDriver(waddle),
        SimMessage::SetStepDelay(step_delay),
    ] {
        fl.sim().send(msg).expect("the simulation thread runs");
    }
    let waited = Instant::now();
    while fl.sim_status().step_delay != step_delay {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the simulation thread did not take the step delay"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    fl.set_vehicle(vehicle);
    let mut tracker = MovingTracker::with_offset(tracker_offset);
    let mut checked = Checked {
        inner: renderer,
        latest: tracker.latest(),
        stale: 0,
        wrong_head: 0,
        tracker: tracker.clone(),
    };
    let mut timings = Vec::with_capacity(frames);
    let mut next = Instant::now();
    for _ in 0..frames {
        // Stand-in for vsync / xrWaitFrame.
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        // A late frame starts the next period, it does not call for a burst.
        next = next.max(now) + FRAME_PERIOD;
        let t = fl
            .frame(&mut tracker, &mut checked)
            .unwrap_or_else(|e| panic!("{e}"));
        timings.push(t);
    }
    let summary = FrameSummary::of(&timings);
    fl.log().log_summary();
    LatencyResult {
        step_delay,
        summary,
        frames: timings,
        stale_tracking_frames: checked.stale,
        wrong_head_frames: checked.wrong_head,
        status: fl.sim_status(),
    }
}
