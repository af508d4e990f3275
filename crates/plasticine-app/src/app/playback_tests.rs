//! Playback with a real simulation thread, through the frame loop: every
//! mode switch while playing shows its effect (simulation paused or
//! running, the skin resolution, where the timeline's time comes from, the
//! baked frames), editing works again after stop; the governor lowers the
//! resolution of a solver made slow; a performance lays keys down as one undo
//! step.

use super::playback::LIVE_MAX_DRIFT;
use super::resolution::{GovernorConfig, LoadSample, ResolutionGovernor};
use super::*;
use crate::anim::sample_posture;
use crate::anim::{PlaybackMode, Transport};
use crate::character::Posture;
use crate::input::{HandState, InputFrame};
use crate::io::CacheReader;
use crate::kinematics::PosedBody;
use crate::samples::shipped_penguin;
use crate::skin::SolverSettings;
use crate::tools::{Command, ToolKind};
use glam::{Quat, Vec3};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Only a hang reaches it.
const PATIENCE: Duration = Duration::from_secs(60);

/// Plays input frames (tracker space), then holds the last one.
struct Hands {
    frames: VecDeque<InputFrame>,
    last: InputFrame,
    sequence: u64,
}

impl Hands {
    fn still() -> Self {
        Self {
            frames: VecDeque::new(),
            last: InputFrame::default(),
            sequence: 0,
        }
    }
}

impl Tracker for Hands {
    fn sample(&mut self) -> TrackedPose {
        self.sequence += 1;
        if self.sequence % 2 == 1
            && let Some(f) = self.frames.pop_front()
        {
            self.last = f;
        }
        TrackedPose {
            head: (Vec3::new(0.0, 0.5, 1.5), Quat::IDENTITY),
            input: self.last,
            sequence: self.sequence,
            sampled_at: Instant::now(),
        }
    }
}

/// Keeps what the last frame drew.
#[derive(Default)]
struct Seen {
    snapshot: Option<SceneSnapshot>,
    edit_posture: Option<Posture>,
}

use crate::snapshot::SceneSnapshot;

impl FrameRenderer for Seen {
    fn render(&mut self, f: &FrameInputs) -> Result<RenderReport, RenderFailure> {
        self.snapshot = Some(f.snapshot.clone());
        self.edit_posture = Some(f.edit_posture.clone());
        Ok(RenderReport {
            cpu_encode: Duration::ZERO,
            submitted_at: Instant::now(),
        })
    }
}

impl Seen {
    fn snap(&self) -> &SceneSnapshot {
        self.snapshot.as_ref().unwrap()
    }
    fn sides(&self) -> Vec<(usize, usize)> {
        self.snap().skins.iter().map(|s| (s.m, s.n)).collect()
    }
}

fn frame(fl: &mut FrameLoop, hands: &mut Hands, seen: &mut Seen) {
    fl.frame(hands, seen).unwrap();
    std::thread::sleep(Duration::from_millis(4));
}

/// Frames until `ok`, at most PATIENCE.
fn frames_until(
    fl: &mut FrameLoop,
    hands: &mut Hands,
    seen: &mut Seen,
    what: &str,
    ok: impl Fn(&FrameLoop, &Seen) -> bool,
) {
    let start = Instant::now();
    loop {
        frame(fl, hands, seen);
        if ok(fl, seen) {
            return;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "never: {what} (status {:?})",
            fl.sim_status()
        );
    }
}

fn frames_for(fl: &mut FrameLoop, hands: &mut Hands, seen: &mut Seen, d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        frame(fl, hands, seen);
    }
}

fn all(side: usize, n: usize) -> Vec<(usize, usize)> {
    vec![(side, side); n]
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one playback session switched through every mode in turn: each switch starts from the state the previous one left"
)]
fn every_mode_switch_while_playing_shows_its_effect_and_editing_resumes() {
    let c = shipped_penguin();
    let keys = c.key_postures.clone();
    let native: Vec<(usize, usize)> = c.skins.iter().map(|s| (s.m, s.n)).collect();
    assert_eq!(native, all(16, 3));
    let nskins = c.skins.len();
    // A short bake at 8×8 for baked playback.
    let dir = tempfile::tempdir().unwrap();
    let opts = crate::bake::BakeOptions {
        resolution: Some((8, 8)),
        duration: Some(1.0),
        checkpoint_every: None,
        ..Default::default()
    };
    let baked = crate::bake::bake(c.clone(), &opts, dir.path(), |_, _| {
        crate::bake::BakeControl::Continue
    })
    .unwrap()
    .finished()
    .unwrap();

    let mut fl = FrameLoop::new(c.clone(), SolverSettings::default());
    let (mut hands, mut seen) = (Hands::still(), Seen::default());
    frames_for(&mut fl, &mut hands, &mut seen, Duration::from_millis(50));
    {
        let mut ctl = fl.playback_mut();
        assert!(ctl.set_mode(PlaybackMode::Baked).contains("no bake"));
        assert!(ctl.load_bake(&baked.cache).contains("31 frames"));
        assert!(ctl.set_live_side(12).contains("12×12"));
        assert_eq!(ctl.toggle_loop(), "loop on");
        assert!(ctl.toggle_play().starts_with("playing (skeleton only)"));
    }

    // Skeleton only: the simulation pauses, the skeleton follows the keys at
    // full (real-time) speed.
    frames_until(&mut fl, &mut hands, &mut seen, "paused", |fl, _| {
        fl.sim_status().paused
    });
    let (sim0, tl0, t0) = (
        fl.sim().latest().sim_time,
        fl.playback().timeline.time,
        Instant::now(),
    );
    frames_for(&mut fl, &mut hands, &mut seen, Duration::from_millis(300));
    let tl = fl.playback().timeline.time;
    assert_eq!(fl.sim().latest().sim_time, sim0, "simulation paused");
    let real = t0.elapsed().as_secs_f64();
    assert!(
        tl - tl0 > 0.5 * real && tl - tl0 <= real + 0.05,
        "timeline moved {} s in {real} s",
        tl - tl0
    );
    let spline = sample_posture(&keys, tl as f32).unwrap();
    assert_eq!(seen.snap().posture, spline, "drawn at the spline posture");
    assert_eq!(seen.edit_posture.as_ref(), Some(&spline));

    // Live at low resolution: running, 12×12, the skeleton on the keys.
    assert_eq!(
        fl.playback_mut().set_mode(PlaybackMode::LiveLowRes),
        "mode: live (low resolution)"
    );
    frames_until(&mut fl, &mut hands, &mut seen, "live 12×12", |fl, seen| {
        !fl.sim_status().paused && seen.sides() == all(12, nskins)
    });
    let sim0 = fl.sim().latest().sim_time;
    frames_for(&mut fl, &mut hands, &mut seen, Duration::from_millis(300));
    let s = seen.snap();
    assert!(s.sim_time > sim0 + 0.05, "simulated time runs");
    let offset = fl.playback().driver_offset();
    let sim_timeline = s.sim_time - offset;
    let tl = fl.playback().timeline.time;
    assert!(
        (sim_timeline - tl).abs() <= LIVE_MAX_DRIFT + 0.1,
        "live skeleton at {sim_timeline} s, timeline at {tl} s"
    );
    let want = sample_posture(&keys, sim_timeline as f32).unwrap();
    let got = &s.posture;
    let err = got
        .angles
        .iter()
        .zip(&want.angles)
        .map(|(a, b)| (*a - *b).abs().max_element())
        .fold(0.0, f32::max);
    assert!(err < 1e-3, "simulated skeleton off the keys by {err} rad");
    assert_eq!(fl.playback().simulated_side(), Some(12));

    // Simulation time at any resolution (here 24×24, more than the model's).
    fl.playback_mut().set_simulation_side(Some(24));
    fl.playback_mut().set_mode(PlaybackMode::SimulationTime);
    frames_until(&mut fl, &mut hands, &mut seen, "24×24", |fl, seen| {
        !fl.sim_status().paused && seen.sides() == all(24, nskins)
    });
    // Simulation time: full resolution, the timeline follows simulated time.
    assert_eq!(
        fl.playback_mut().set_simulation_side(None),
        "simulation time at the skins' own resolution"
    );
    frames_until(
        &mut fl,
        &mut hands,
        &mut seen,
        "native resolution",
        |fl, seen| !fl.sim_status().paused && seen.sides() == all(16, nskins),
    );
    frame(&mut fl, &mut hands, &mut seen);
    let (sim_a, tl_a) = (fl.sim().latest().sim_time, fl.playback().timeline.time);
    frames_for(&mut fl, &mut hands, &mut seen, Duration::from_millis(300));
    frame(&mut fl, &mut hands, &mut seen);
    let offset = fl.playback().driver_offset();
    let (sim_b, tl_b) = (fl.sim().latest().sim_time, fl.playback().timeline.time);
    assert!(tl_b > tl_a, "the timeline moves");
    // The timeline's time is the simulated time (minus the keys' offset),
    // as of the snapshot the frame saw: never ahead of the simulation.
    assert!(
        tl_b <= sim_b - offset + 1e-9 && tl_b >= sim_b - offset - 0.1,
        "timeline {tl_b} vs simulated {}",
        sim_b - offset
    );
    assert!(
        ((tl_b - tl_a) - (sim_b - sim_a)).abs() < 0.1,
        "timeline moved {} s, simulation {} s",
        tl_b - tl_a,
        sim_b - sim_a
    );

    // Baked: the simulation pauses, the frames come from the cache at 8×8.
    fl.playback_mut().set_mode(PlaybackMode::Baked);
    frames_until(&mut fl, &mut hands, &mut seen, "baked", |fl, seen| {
        fl.sim_status().paused && seen.sides() == all(8, nskins)
    });
    // Scrubbing is random access: pause, seek, the exact cache frame.
    assert!(fl.playback_mut().toggle_play().starts_with("paused"));
    let mut reader = CacheReader::open(&baked.cache).unwrap();
    let mut frame_positions = Vec::new();
    for (seek, f) in [(0.5, 15), (0.1, 3), (0.97, 29)] {
        assert!(fl.playback_mut().seek(seek).starts_with("at "));
        frame(&mut fl, &mut hands, &mut seen);
        let t = reader.read_frame(f, &mut frame_positions).unwrap();
        let s = seen.snap();
        assert_eq!(s.sim_time, t, "seek {seek} shows frame {f}");
        for (k, skin) in s.skins.iter().enumerate() {
            assert_eq!(skin.positions, frame_positions[k], "skin {k} of frame {f}");
        }
        assert_eq!(s.posture, sample_posture(&keys, seek as f32).unwrap());
    }
    assert_eq!(fl.playback().timeline.transport, Transport::Paused);

    // And back through every mode, playing, a few frames each: no panic.
    fl.playback_mut().toggle_play();
    for m in [
        PlaybackMode::SimulationTime,
        PlaybackMode::LiveLowRes,
        PlaybackMode::SkeletonOnly,
        PlaybackMode::Baked,
        PlaybackMode::LiveLowRes,
    ] {
        fl.playback_mut().set_mode(m);
        frames_for(&mut fl, &mut hands, &mut seen, Duration::from_millis(60));
        assert!(fl.playback().timeline.is_playing(), "{m:?}");
    }

    // Stop: interactive editing as before. The simulation runs at the
    // model's own resolution and follows the working posture again.
    assert_eq!(fl.playback_mut().stop(), "stopped: editing");
    frames_until(&mut fl, &mut hands, &mut seen, "editing", |fl, seen| {
        !fl.sim_status().paused && seen.sides() == native
    });
    assert_eq!(fl.playback().simulated_side(), None);
    let mut pose = c.skeleton.rest_posture();
    pose.angles[c.skeleton.find("flipper_l").unwrap()] = Vec3::new(0.0, 0.0, 0.7);
    fl.edit(|_, ctx| {
        ctx.history.apply(
            ctx.character,
            Command::SetPosture {
                posture: pose.clone(),
            },
        )
    })
    .unwrap();
    let rev = fl.history().revision();
    frames_until(
        &mut fl,
        &mut hands,
        &mut seen,
        "the edit simulated",
        |fl, seen| {
            let s = seen.snap();
            s.revision == rev && s.posture == pose && fl.sim().latest().posture == pose
        },
    );
    // A key stored at the current time goes through the history.
    let msg = fl.playback_mut().store_key();
    assert!(msg.starts_with("key "), "{msg}");
    assert_eq!(fl.history().revision(), rev + 1);
}

#[test]
fn the_governor_lowers_the_resolution_of_a_solver_made_slow() {
    let c = shipped_penguin();
    let sim = SimThread::spawn(c, SolverSettings::default(), 0);
    sim.send(SimMessage::Resample { m: 24, n: 24 }).unwrap();
    let mut gov = ResolutionGovernor::new(GovernorConfig::default(), 24);
    // A step delay of 40 ms after every advance counts as solver cost (the
    // thread then cannot advance more often than every 40 ms): whatever the
    // solver's own speed, the load is about 1 at any resolution.
    sim.send(SimMessage::SetStepDelay(Duration::from_millis(40)))
        .unwrap();
    let start = Instant::now();
    let mut sides = Vec::new();
    while gov.side() >= 24 {
        assert!(
            start.elapsed() < PATIENCE,
            "never lowered; last load {:?}",
            gov.last_load
        );
        std::thread::sleep(Duration::from_millis(11));
        if let Some(side) = gov.observe(LoadSample::from(sim.load()), 1.0) {
            sim.send(SimMessage::Resample { m: side, n: side }).unwrap();
            sides.push(side);
        }
    }
    assert!(gov.last_load.unwrap() > GovernorConfig::default().overload);
    // The thread simulates the new resolution.
    let side = gov.side();
    let wait = Instant::now();
    while sim.load().resolution != Some((side, side)) {
        assert!(wait.elapsed() < PATIENCE);
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        sim.latest()
            .skins
            .iter()
            .all(|s| (s.m, s.n) == (side, side))
    );
    assert!(side < 24, "{sides:?}");
}

#[test]
fn a_performance_lays_keys_down_in_one_undo_step() {
    let mut c = shipped_penguin();
    c.key_postures.clear();
    let mut fl = FrameLoop::new(c.clone(), SolverSettings::default());
    fl.set_tool(ToolKind::Ik).unwrap();
    let (mut hands, mut seen) = (Hands::still(), Seen::default());
    frame(&mut fl, &mut hands, &mut seen);
    {
        let mut ctl = fl.playback_mut();
        assert!(ctl.play().starts_with("nothing to play"));
        ctl.set_extent(10.0);
        assert!(ctl.set_recording(true).starts_with("recording"));
        assert!(ctl.set_record_every(0.25).contains("0.25"));
        assert!(ctl.play().starts_with("playing"));
    }
    // Grab the left flipper's tip and swing it for about 1.2 s.
    let tip = c.skeleton.find("flipper_l_tip").unwrap();
    let at: Vec3 = PosedBody::new(&c, &c.skeleton.rest_posture()).joints[tip]
        .translation
        .into();
    let hand = |p: Vec3, pressed: bool| InputFrame {
        time: 0.0,
        right: HandState::at(p).with_trigger(pressed),
        left: HandState::default(),
    };
    hands.frames.push_back(hand(at, false));
    hands.frames.push_back(hand(at, true));
    let depth = fl.history().undo_depth();
    let start = Instant::now();
    let mut k = 0;
    while start.elapsed() < Duration::from_millis(1200) {
        k += 1;
        let s = (k as f32 * 0.05).sin();
        hands
            .frames
            .push_back(hand(at + Vec3::new(0.0, 0.04 * s, 0.02 * s), true));
        frame(&mut fl, &mut hands, &mut seen);
        assert!(
            k < 4 || fl.toolbox().state.preview_posture.is_some(),
            "the IK drag holds (frame {k}, error {:?})",
            fl.last_edit_error()
        );
    }
    hands.frames.push_back(hand(at, false));
    frames_until(&mut fl, &mut hands, &mut seen, "the release", |fl, _| {
        fl.toolbox().state.preview_posture.is_none()
    });
    let tl = fl.playback().timeline.time;
    let keys = fl.character().key_postures.clone();
    let times: Vec<f32> = keys.iter().map(|k| k.time).collect();
    // A key at every multiple of 0.25 s the timeline passed during the drag.
    assert!(times.len() >= 4, "{times:?}");
    let first = (times[0] / 0.25).round() as usize;
    let want: Vec<f32> = (first..first + times.len())
        .map(|i| i as f32 * 0.25)
        .collect();
    assert_eq!(times, want, "played to {tl} s");
    assert!(
        *times.last().unwrap() as f64 <= tl && tl - (*times.last().unwrap() as f64) < 0.25 + 0.05
    );
    let rest = c.skeleton.rest_posture();
    assert!(
        keys.iter().skip(1).any(|k| k.posture != rest),
        "the keys hold the dragged postures"
    );
    fl.character().validate().unwrap();
    // One undo step for the performance, one for the drag's release.
    assert_eq!(fl.history().undo_depth(), depth + 2);
    fl.playback_mut().stop();
    fl.edit(|_, ctx| ctx.history.undo(ctx.character)).unwrap();
    assert!(!fl.character().key_postures.is_empty());
    fl.edit(|_, ctx| ctx.history.undo(ctx.character)).unwrap();
    assert!(
        fl.character().key_postures.is_empty(),
        "one step removes them all"
    );
}

#[test]
fn live_mode_with_auto_resolution_lowers_the_resolution_when_the_solver_is_slow() {
    let c = shipped_penguin();
    let nskins = c.skins.len();
    let mut fl = FrameLoop::new(c, SolverSettings::default());
    let (mut hands, mut seen) = (Hands::still(), Seen::default());
    {
        let mut ctl = fl.playback_mut();
        ctl.set_mode(PlaybackMode::LiveLowRes);
        assert_eq!(
            ctl.set_auto_resolution(true),
            "real time at whatever resolution fits"
        );
        ctl.toggle_loop();
        ctl.play();
    }
    frames_until(
        &mut fl,
        &mut hands,
        &mut seen,
        "live at 16×16",
        |fl, seen| !fl.sim_status().paused && seen.sides() == all(16, nskins),
    );
    // 60 ms of deliberate cost after every advance: the load is about 1 at
    // any resolution, so the governor goes down to the bottom rung.
    fl.sim()
        .send(SimMessage::SetStepDelay(Duration::from_millis(60)))
        .unwrap();
    frames_until(&mut fl, &mut hands, &mut seen, "live at 8×8", |_, seen| {
        seen.sides() == all(8, nskins)
    });
    assert_eq!(fl.playback().simulated_side(), Some(8));
    assert!(fl.playback().governor.changes >= 1);
    let said = fl.playback().messages.last().unwrap().clone();
    assert!(said.starts_with("live resolution 8×8"), "{said}");
    // Stopping goes back to the model's own resolution.
    fl.playback_mut().stop();
    frames_until(
        &mut fl,
        &mut hands,
        &mut seen,
        "own resolution",
        |_, seen| seen.sides() == all(16, nskins),
    );
}

#[test]
fn key_editing_controls_go_through_the_history() {
    let mut c = shipped_penguin();
    c.key_postures.clear();
    let rest = c.skeleton.rest_posture();
    let mut fl = FrameLoop::new(c.clone(), SolverSettings::default());
    let l = c.skeleton.find("flipper_l").unwrap();
    {
        let mut ctl = fl.playback_mut();
        assert_eq!(ctl.select_next_key(), "no keys");
        assert_eq!(ctl.delete_selected_key(), "no key selected");
        ctl.set_extent(2.0);
        for (t, a) in [(0.0, 0.0), (0.5, 0.6), (1.0, -0.6)] {
            ctl.seek(t);
            let mut p = rest.clone();
            p.angles[l].z = a;
            let m = ctl.store_key_at_current_time(p);
            assert!(m.starts_with(&format!("key stored at {t:.2} s")), "{m}");
        }
        ctl.seek(0.2);
        assert_eq!(ctl.select_next_key(), "key 2 of 3 at 0.50 s");
        assert_eq!(ctl.timeline().time, 0.5);
        assert_eq!(
            ctl.set_selected_key_tcb(0.5, 0.0, -0.5),
            "key at 0.50 s: tension 0.50, continuity 0.00, bias -0.50"
        );
        assert_eq!(ctl.move_selected_key(0.25), "key moved to 0.75 s");
        let m = ctl.move_selected_key(0.25);
        assert!(
            m.starts_with("refused: move key: key 2 already lies at 1 s"),
            "{m}"
        );
        // Re-posing keeps the key's tension/continuity/bias.
        let m = ctl.repose_selected_key(rest.clone());
        assert_eq!(m, "key replaced at 0.75 s (3 keys)");
        assert_eq!(ctl.select_previous_key(), "key 1 of 3 at 0.00 s");
        assert_eq!(ctl.delete_selected_key(), "key at 0.00 s deleted");
        let line = ctl.status_line();
        assert!(
            line.contains("editing") && line.contains("2 keys"),
            "{line}"
        );
    }
    let keys = &fl.character().key_postures;
    let times: Vec<f32> = keys.iter().map(|k| k.time).collect();
    assert_eq!(times, vec![0.75, 1.0]);
    assert_eq!(keys[0].posture, rest);
    assert_eq!((keys[0].tension, keys[0].bias), (0.5, -0.5));
    // Seven key edits and the two selections that posed the character in
    // their key: nine undo steps; undoing all of them leaves no keys.
    assert_eq!(fl.history().undo_depth(), 9);
    for _ in 0..9 {
        fl.edit(|_, ctx| ctx.history.undo(ctx.character)).unwrap();
    }
    assert!(fl.character().key_postures.is_empty());
}

#[test]
fn a_performance_is_layered_over_the_keys_motion() {
    // Keys turn the right flipper from 0 to 1.5 rad over 3 s; the left one
    // is performed with the IK tool while the timeline plays live.
    let mut c = shipped_penguin();
    let (l, r) = (
        c.skeleton.find("flipper_l").unwrap(),
        c.skeleton.find("flipper_r").unwrap(),
    );
    let rest = c.skeleton.rest_posture();
    let key = |time: f32, a: f32| {
        let mut posture = rest.clone();
        posture.angles[r] = Vec3::new(0.0, 0.0, a);
        crate::character::KeyPosture {
            time,
            posture,
            tension: 0.0,
            continuity: 0.0,
            bias: 0.0,
        }
    };
    c.key_postures = vec![key(0.0, 0.0), key(3.0, 1.5)];
    let base = c.key_postures.clone();
    let mut fl = FrameLoop::new(c.clone(), SolverSettings::default());
    fl.set_tool(ToolKind::Ik).unwrap();
    let (mut hands, mut seen) = (Hands::still(), Seen::default());
    frame(&mut fl, &mut hands, &mut seen);
    {
        let mut ctl = fl.playback_mut();
        ctl.set_mode(PlaybackMode::LiveLowRes);
        ctl.set_recording(true);
        ctl.play();
    }
    let tip = c.skeleton.find("flipper_l_tip").unwrap();
    let at: Vec3 = PosedBody::new(&c, &rest).joints[tip].translation.into();
    let hand = |p: Vec3, pressed: bool| InputFrame {
        time: 0.0,
        right: HandState::at(p).with_trigger(pressed),
        left: HandState::default(),
    };
    hands.frames.push_back(hand(at, true));
    let start = Instant::now();
    let mut k = 0;
    while start.elapsed() < Duration::from_millis(1300) {
        k += 1;
        let s = (k as f32 * 0.05).sin();
        hands
            .frames
            .push_back(hand(at + Vec3::new(0.0, 0.05 * s, 0.03), true));
        frame(&mut fl, &mut hands, &mut seen);
    }
    // While dragging, the simulation was given the layered posture: the
    // right flipper on its keys, the left one where the hand put it.
    let shown = seen.edit_posture.clone().unwrap();
    let t = fl.playback().timeline.time as f32;
    let want_r = sample_posture(&base, t).unwrap().angles[r];
    assert!((shown.angles[r] - want_r).length() < 1e-5);
    assert_ne!(
        shown.angles[l], rest.angles[l],
        "the left flipper performed"
    );
    hands.frames.push_back(hand(at, false));
    frames_until(&mut fl, &mut hands, &mut seen, "the release", |fl, _| {
        fl.toolbox().state.preview_posture.is_none()
    });
    let keys = fl.character().key_postures.clone();
    assert!(
        keys.len() >= 5,
        "{:?}",
        keys.iter().map(|k| k.time).collect::<Vec<_>>()
    );
    assert_eq!(keys.last().unwrap().time, 3.0, "the last key is kept");
    let recorded = &keys[..keys.len() - 1];
    assert!(
        recorded
            .iter()
            .any(|k| k.posture.angles[l] != rest.angles[l])
    );
    for k in recorded {
        // Sampled a frame after the key's time at most: 0.5 rad/s × a frame.
        let want = sample_posture(&base, k.time).unwrap().angles[r];
        let err = (k.posture.angles[r] - want).length();
        assert!(
            err < 0.03,
            "key at {}: right flipper off its keys by {err} rad",
            k.time
        );
    }
    // Stop; one undo takes back the release, one the whole performance.
    fl.playback_mut().stop();
    fl.edit(|_, ctx| ctx.history.undo(ctx.character)).unwrap();
    fl.edit(|_, ctx| ctx.history.undo(ctx.character)).unwrap();
    assert_eq!(fl.character().key_postures, base);
}

/// The timeline rows of the tool panel, pointed at with the wand (the
/// panel above the left hand, as in the headset) and clicked: lengthen the
/// timeline, store a key at 0, scrub to the middle, store a second key in
/// another posture, play (time advances), switch the mode while playing,
/// and stop (editing again). The clicks never reach the tools.
/// The frame loop's panel on a still left hand, one frame drawn: the
/// hands, what was seen, the tracking sample the panel stands for (to find
/// where a row is) and the panel's pose for it.
fn panel_on_left_hand(fl: &mut FrameLoop) -> (Hands, Seen, TrackedPose, glam::Mat4) {
    fl.set_panel_anchor(super::panel_driver::PanelAnchor::LeftHand);
    let mut hands = Hands::still();
    let mut seen = Seen::default();
    let left = HandState::at(Vec3::new(-0.25, 0.3, 1.1));
    hands.last.left = left;
    frame(fl, &mut hands, &mut seen);
    let sample = TrackedPose {
        head: (Vec3::new(0.0, 0.5, 1.5), Quat::IDENTITY),
        input: InputFrame {
            time: 0.0,
            right: HandState::default(),
            left,
        },
        sequence: 0,
        sampled_at: Instant::now(),
    };
    let pose = fl.panel().pose(&sample).expect("the panel is shown");
    (hands, seen, sample, pose)
}

#[test]
fn the_panels_timeline_rows_pointed_at_store_keys_scrub_play_and_stop() {
    use crate::tools::{ControlPanel, Row, TimelineRow};
    let mut c = shipped_penguin();
    c.key_postures.clear();
    let joints_before = c.skeleton.joints.len();
    let mut fl = FrameLoop::new(c.clone(), SolverSettings::default());
    let (mut hands, mut seen, sample, pose) = panel_on_left_hand(&mut fl);
    let left = sample.input.left;
    let click =
        |fl: &mut FrameLoop, hands: &mut Hands, seen: &mut Seen, row: TimelineRow, f: f32| {
            let k = ControlPanel::rows()
                .iter()
                .position(|&r| r == Row::Timeline(row))
                .unwrap();
            let target = fl.panel().row_point(&sample, k, f).unwrap();
            let from = target + pose.transform_vector3(Vec3::Z).normalize() * 0.15 + Vec3::X * 0.03;
            let aim = HandState::at(from).with_orientation(Quat::from_rotation_arc(
                Vec3::NEG_Z,
                (target - from).normalize(),
            ));
            for pressed in [false, true, true, false] {
                hands.frames.push_back(InputFrame {
                    time: 0.0,
                    right: aim.with_trigger(pressed),
                    left,
                });
            }
            for _ in 0..4 {
                frame(fl, hands, seen);
            }
        };
    let (l, r) = (0.2, 0.8);
    click(&mut fl, &mut hands, &mut seen, TimelineRow::Length, r);
    click(&mut fl, &mut hands, &mut seen, TimelineRow::Length, r);
    assert_eq!(fl.playback().timeline.extent, 2.0);
    click(&mut fl, &mut hands, &mut seen, TimelineRow::Key, r);
    // Scrub to the middle of 0..2 s (the track spans the row).
    click(&mut fl, &mut hands, &mut seen, TimelineRow::Scrubber, 0.5);
    let t = fl.playback().timeline.time;
    assert!((t - 1.0).abs() < 0.05, "scrubbed to {t}");
    let flipper = c.skeleton.find("flipper_l").unwrap();
    let mut raised = fl.history().posture().clone();
    raised.angles[flipper].z += 0.5;
    fl.edit(|_, ctx| {
        ctx.history.apply(
            ctx.character,
            Command::SetPosture {
                posture: raised.clone(),
            },
        )
    })
    .unwrap();
    click(&mut fl, &mut hands, &mut seen, TimelineRow::Key, r);
    let keys = &fl.character().key_postures;
    assert_eq!(keys.len(), 2, "two keys stored");
    assert_eq!(keys[0].time, 0.0);
    assert!((keys[1].time as f64 - t).abs() < 1e-6);
    assert_eq!(keys[1].posture, raised);
    // The stored key is selected: the + and − marks at the ends of its
    // tension and bias sliders step them by 0.25.
    click(&mut fl, &mut hands, &mut seen, TimelineRow::Tension, 0.95);
    click(&mut fl, &mut hands, &mut seen, TimelineRow::Bias, 0.05);
    let k = &fl.character().key_postures[1];
    assert_eq!((k.tension, k.continuity, k.bias), (0.25, 0.0, -0.25));
    click(
        &mut fl,
        &mut hands,
        &mut seen,
        TimelineRow::AutoResolution,
        r,
    );
    assert!(fl.playback().auto_resolution);
    // Performance: on, and keys twice as often.
    let every = fl.playback().record_every;
    click(&mut fl, &mut hands, &mut seen, TimelineRow::Perform, r);
    click(&mut fl, &mut hands, &mut seen, TimelineRow::PerformRate, l);
    assert!(fl.playback().recording);
    assert_eq!(fl.playback().record_every, every / 2.0);
    // Selecting the first key poses the character in it (to re-pose it);
    // the next brings the raised flipper back.
    click(&mut fl, &mut hands, &mut seen, TimelineRow::SelectKey, l);
    assert_eq!(
        fl.history().posture(),
        &fl.character().key_postures[0].posture
    );
    click(&mut fl, &mut hands, &mut seen, TimelineRow::SelectKey, r);
    assert_eq!(fl.history().posture(), &raised);
    // Play: the time moves; switch the mode while playing; stop.
    click(&mut fl, &mut hands, &mut seen, TimelineRow::Transport, r);
    assert_eq!(fl.playback().timeline.transport, Transport::Playing);
    frames_for(&mut fl, &mut hands, &mut seen, Duration::from_millis(300));
    click(&mut fl, &mut hands, &mut seen, TimelineRow::Mode, r);
    assert_eq!(fl.playback().timeline.mode, PlaybackMode::LiveLowRes);
    assert_eq!(fl.playback().timeline.transport, Transport::Playing);
    click(&mut fl, &mut hands, &mut seen, TimelineRow::Transport, l);
    assert_eq!(fl.playback().timeline.transport, Transport::Stopped);
    // The clicks were the panel's: no joint was made or selected by them.
    assert_eq!(fl.character().skeleton.joints.len(), joints_before);
    let messages = fl.take_panel_messages().join("\n");
    assert!(messages.contains("key stored"), "{messages}");
}

/// The frame loop on the FEM penguin with no keys, and its rest posture.
fn fem_penguin_without_keys() -> (FrameLoop, Posture) {
    let mut c = shipped_penguin();
    c.key_postures.clear();
    c.flesh = crate::character::Flesh::Fem(Default::default());
    let rest = c.skeleton.rest_posture();
    (FrameLoop::new(c, SolverSettings::default()), rest)
}

/// A fall (or a push) kept as a key: with the skeleton responding, K
/// stores the working posture with the root where the simulation holds
/// it, one undo step; the skeleton is drawn there too.
#[test]
fn a_key_stored_while_the_skeleton_responds_keeps_where_it_fell() {
    let (mut fl, rest) = fem_penguin_without_keys();
    let mut hands = Hands::still();
    let mut seen = Seen::default();
    let ground = crate::contact::GroundDrop {
        plane: crate::contact::Plane::ground(),
        drop: Some(0.2),
    };
    fl.sim().send(SimMessage::MakeDynamic(ground)).unwrap();
    frames_until(
        &mut fl,
        &mut hands,
        &mut seen,
        "fallen and lying",
        |_, s| s.snapshot.as_ref().is_some_and(|s| s.sim_time > 1.0),
    );
    let fallen = fl.sim().latest();
    let drawn = fallen
        .with_simulated_root(&rest)
        .expect("the skeleton responds");
    // It fell over: the root is far from where the rest posture holds it.
    let rest_root = crate::fem::root_frame(fl.character(), &rest);
    let fallen_root = crate::fem::root_frame(fl.character(), &drawn);
    assert!(
        fallen_root.matrix3.z_axis.dot(rest_root.matrix3.z_axis) < 0.5,
        "it tipped over"
    );
    let said = fl.playback_mut().store_key();
    assert!(
        said.contains("with the root where the simulation holds it"),
        "{said}"
    );
    let key = fl.character().key_postures[0].posture.clone();
    let kept = crate::fem::root_frame(fl.character(), &key);
    // Where the simulation held it when K was pressed (a frame later at most).
    let now = crate::fem::root_frame(fl.character(), &fl.sim().latest().posture);
    assert!(
        kept.translation.distance(now.translation) < 0.02,
        "{kept:?} vs {now:?}"
    );
    assert!(kept.matrix3.z_axis.dot(now.matrix3.z_axis) > 0.99);
    // The other joints are the working posture's.
    assert_eq!(key.angles[1..], rest.angles[1..]);
    // One undo takes it back.
    fl.edit(|_, ctx| ctx.history.undo(ctx.character)).unwrap();
    assert!(fl.character().key_postures.is_empty());
}

/// A reaction recorded: with recording on while editing and the skeleton
/// responding, its fall is keyed every `record_every` seconds of simulated
/// time from the current time; stopping stores the keys as one undo step.
#[test]
fn a_reaction_is_recorded_as_keys_in_one_undo_step() {
    let (mut fl, rest) = fem_penguin_without_keys();
    let mut hands = Hands::still();
    let mut seen = Seen::default();
    // Nothing responds yet: recording says it records a performance.
    let said = fl.playback_mut().set_record_every(0.1);
    assert!(said.contains("0.10"), "{said}");
    let ground = crate::contact::GroundDrop {
        plane: crate::contact::Plane::ground(),
        drop: Some(0.3),
    };
    fl.sim().send(SimMessage::MakeDynamic(ground)).unwrap();
    frames_until(&mut fl, &mut hands, &mut seen, "responding", |fl, _| {
        fl.sim().latest().with_simulated_root(&rest).is_some()
    });
    let said = fl.playback_mut().set_recording(true);
    assert!(said.contains("reaction"), "{said}");
    let start = fl.sim().latest().sim_time;
    frames_until(
        &mut fl,
        &mut hands,
        &mut seen,
        "a second of the fall",
        |fl, _| fl.sim().latest().sim_time > start + 1.0,
    );
    // Kept aside while it plays out: no key edit disturbs the motion.
    assert!(fl.character().key_postures.is_empty());
    assert!(fl.playback().timeline.time > 0.9, "the playhead follows");
    fl.playback_mut().set_recording(false);
    frame(&mut fl, &mut hands, &mut seen);
    let messages = fl.take_panel_messages().join("\n");
    assert!(messages.contains("reaction recorded"), "{messages}");
    let keys = &fl.character().key_postures;
    assert!(
        keys.len() >= 10,
        "{} keys over a second at 0.1 s",
        keys.len()
    );
    assert!(keys[0].time.abs() < 1e-6, "from the current time (0)");
    for (i, k) in keys.iter().enumerate() {
        let slot = k.time / 0.1;
        assert!((slot - slot.round()).abs() < 1e-3, "key {i} at {}", k.time);
        // The working posture's joints, the simulated root.
        assert_eq!(k.posture.angles[1..], rest.angles[1..]);
    }
    let (first, last) = (&keys[0].posture, &keys[keys.len() - 1].posture);
    let fell = first.root_translation.distance(last.root_translation);
    assert!(fell > 0.1, "the keys follow the fall: {fell} m");
    // One undo takes them all back.
    fl.edit(|_, ctx| ctx.history.undo(ctx.character)).unwrap();
    assert!(fl.character().key_postures.is_empty());
}

#[test]
fn a_key_dragged_along_the_scrubber_moves_in_one_undo_step() {
    use crate::tools::{ControlPanel, Row, TimelineRow};
    let mut c = shipped_penguin();
    c.key_postures.clear();
    let rest = c.skeleton.rest_posture();
    let mut fl = FrameLoop::new(c, SolverSettings::default());
    {
        let mut ctl = fl.playback_mut();
        ctl.set_extent(2.0);
        for t in [0.0, 1.0] {
            ctl.seek(t);
            ctl.store_key_at_current_time(rest.clone());
        }
    }
    let depth = fl.history().undo_depth();
    let (mut hands, mut seen, sample, pose) = panel_on_left_hand(&mut fl);
    let left = sample.input.left;
    let scrubber = ControlPanel::rows()
        .iter()
        .position(|&r| r == Row::Timeline(TimelineRow::Scrubber))
        .unwrap();
    // The wand held on the scrubber through `fractions` (pressed from the
    // second to the last but one), a frame each.
    let drag = |fl: &mut FrameLoop, hands: &mut Hands, seen: &mut Seen, fractions: &[f32]| {
        let n = fractions.len();
        for (i, &f) in fractions.iter().enumerate() {
            let f = super::panel_ui::row_fraction(f);
            let target = fl.panel().row_point(&sample, scrubber, f).unwrap();
            let from = target + pose.transform_vector3(Vec3::Z).normalize() * 0.15;
            let aim = HandState::at(from).with_orientation(Quat::from_rotation_arc(
                Vec3::NEG_Z,
                (target - from).normalize(),
            ));
            hands.frames.push_back(InputFrame {
                time: 0.0,
                right: aim.with_trigger(i > 0 && i + 1 < n),
                left,
            });
            frame(fl, hands, seen);
        }
    };
    let times = |fl: &FrameLoop| -> Vec<f32> {
        fl.character().key_postures.iter().map(|k| k.time).collect()
    };
    // A press away from the keys moves the playhead, not a key.
    drag(&mut fl, &mut hands, &mut seen, &[0.3, 0.3, 0.3]);
    assert_eq!(times(&fl), [0.0, 1.0]);
    let t = fl.playback().timeline.time;
    assert!((t - 0.6).abs() < 0.05, "scrubbed to {t}");
    // The key at 1 s (the middle of 0..2 s) taken by its dot and dragged
    // to three quarters: 1.5 s, the playhead with it.
    drag(
        &mut fl,
        &mut hands,
        &mut seen,
        &[0.5, 0.5, 0.6, 0.7, 0.75, 0.75],
    );
    let moved = times(&fl);
    assert_eq!(moved[0], 0.0);
    assert!((moved[1] - 1.5).abs() < 0.02, "{moved:?}");
    assert!((fl.playback().timeline.time - f64::from(moved[1])).abs() < 1e-6);
    assert_eq!(fl.history().undo_depth(), depth + 1, "one undo step");
    let said = fl.take_panel_messages().join("\n");
    assert!(said.contains("key moved from 1.00 s to 1.5"), "{said}");
    fl.edit(|_, ctx| ctx.history.undo(ctx.character)).unwrap();
    assert_eq!(times(&fl), [0.0, 1.0]);
}

mod blend;
mod key_sliders;
