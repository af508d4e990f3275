use super::hands::HandPush;
use super::*;
use crate::samples::shipped_penguin;
use glam::Vec3;

/// Generous bound for waiting on the thread; only a hang reaches it.
const PATIENCE: Duration = Duration::from_secs(60);

fn wait_snapshot(
    sim: &SimThread,
    what: &str,
    ok: impl Fn(&SceneSnapshot) -> bool,
) -> Arc<SceneSnapshot> {
    let start = Instant::now();
    loop {
        let s = sim.latest();
        if ok(&s) {
            return s;
        }
        assert!(start.elapsed() < PATIENCE, "never published: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn wait_status(sim: &SimThread, what: &str, ok: impl Fn(&SimStatus) -> bool) -> SimStatus {
    let start = Instant::now();
    loop {
        let s = sim.status();
        if ok(&s) {
            return s;
        }
        assert!(
            start.elapsed() < PATIENCE,
            "status never showed: {what}: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn centroid(p: &[Vec3]) -> Vec3 {
    p.iter().copied().sum::<Vec3>() / p.len() as f32
}

fn max_distance(a: &[Vec3], b: &[Vec3]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| x.distance(*y))
        .fold(0.0, f32::max)
}

/// The penguin's left flipper swung out by one radian.
fn flipper_out(c: &Character) -> Posture {
    let mut p = c.skeleton.rest_posture();
    p.angles[c.skeleton.find("flipper_l").unwrap()] = Vec3::new(0.0, 0.0, 1.0);
    p
}

/// The penguin with its first muscle a little larger and its right
/// flipper's skin resampled to 12×10.
fn edited(c: &Character) -> Character {
    let mut e = c.clone();
    e.muscles[0].shape = {
        let mut s = e.muscles[0].shape.clone();
        if let crate::shape::Primitive::Superellipsoid { radii, .. } = &mut s.primitive {
            *radii *= 1.02;
        }
        s
    };
    assert_ne!(e.muscles[0].shape, c.muscles[0].shape);
    let r = e.skins.iter().position(|s| s.name == "flipper_r").unwrap();
    e.skins[r] = resample(&e.skins[r], 12, 10).unwrap();
    e
}

#[test]
fn carrying_state_keeps_same_skins_and_leaves_resized_ones() {
    let mut old = shipped_penguin();
    for skin in &mut old.skins {
        for (p, v) in skin
            .points
            .position
            .iter_mut()
            .zip(&mut skin.points.velocity)
        {
            *p += Vec3::new(0.01, 0.02, 0.03);
            *v = Vec3::new(0.5, 0.0, 0.0);
        }
    }
    let fresh = edited(&shipped_penguin());
    let mut new = fresh.clone();
    let kept = carry_skin_state(&old, &mut new);
    assert_eq!(
        kept,
        vec![true, true, false],
        "body, flipper_l kept; flipper_r resized"
    );
    for s in 0..2 {
        assert_eq!(new.skins[s].points.position, old.skins[s].points.position);
        assert_eq!(new.skins[s].points.velocity, old.skins[s].points.velocity);
        assert_eq!(
            new.skins[s].points.fat, fresh.skins[s].points.fat,
            "model data is new"
        );
    }
    assert_eq!(new.skins[2], fresh.skins[2]);
    // Same grid but another boundary joint: a different skin.
    let mut moved = fresh.clone();
    moved.skins[1].top_joint = moved.skins[1].bottom_joint + 2;
    assert_eq!(carry_skin_state(&old, &mut moved), vec![true, false, false]);
    // Skins are matched by name, so deleting one does not shift the others.
    let mut fewer = fresh.clone();
    fewer.skins.remove(0);
    assert_eq!(carry_skin_state(&old, &mut fewer), vec![true, false]);
    assert_eq!(fewer.skins[0].points.position, old.skins[1].points.position);
}

#[test]
fn set_character_keeps_unchanged_skins_and_resets_resized_ones() {
    let c = shipped_penguin();
    let sim = SimThread::spawn(c.clone(), SolverSettings::default(), 0);
    sim.send(SimMessage::SetPosture(flipper_out(&c))).unwrap();
    wait_snapshot(&sim, "0.3 s simulated", |s| s.sim_time >= 0.3);
    sim.send(SimMessage::Pause(true)).unwrap();
    wait_status(&sim, "paused", |s| s.paused);
    let before = sim.latest();
    // The swung flipper's skin is far from where the file has it: keeping
    // it is not the same as taking the new character's points.
    let l = 1;
    assert_eq!(c.skins[l].name, "flipper_l");
    let swing =
        centroid(&before.skins[l].positions).distance(centroid(&c.skins[l].points.position));
    assert!(swing > 0.02, "the flipper swung {swing} m");

    let e = Arc::new(edited(&c));
    sim.send(SimMessage::SetCharacter {
        character: e.clone(),
        revision: 1,
    })
    .unwrap();
    let after = wait_snapshot(&sim, "revision 1", |s| s.revision == 1);
    assert!(
        Arc::ptr_eq(&after.character, &e),
        "the snapshot carries the model sent"
    );
    assert_eq!(after.sim_time, before.sim_time, "paused: the clock is kept");
    for s in 0..2 {
        let d = max_distance(&after.skins[s].positions, &before.skins[s].positions);
        assert!(d < 1e-4, "skin {s} was reset by a muscle edit: moved {d} m");
    }
    let r = &after.skins[2];
    assert_eq!((r.m, r.n), (12, 10));
    // Interior rows are the new character's points; the boundary rows
    // are put on their joints.
    let new_points = &e.skins[2].points.position;
    assert_eq!(r.positions[12..12 * 9], new_points[12..12 * 9]);
    sim.shutdown();
}

#[test]
fn set_posture_moves_the_published_skin() {
    let c = shipped_penguin();
    let sim = SimThread::spawn(c.clone(), SolverSettings::default(), 0);
    let start = wait_snapshot(&sim, "some simulated time", |s| s.sim_time > 0.02);
    let target = flipper_out(&c);
    sim.send(SimMessage::SetPosture(target.clone())).unwrap();
    let t0 = start.sim_time;
    let end = wait_snapshot(&sim, "0.4 s more", |s| s.sim_time >= t0 + 0.4);
    assert_eq!(end.posture, target, "the skeleton reached the posture");
    let moved =
        |s: usize| centroid(&end.skins[s].positions).distance(centroid(&start.skins[s].positions));
    let (left, right) = (moved(1), moved(2));
    // The skin's centre is ~8 cm from the shoulder: a 1 rad swing moves it
    // ~8 cm; the other flipper only sways.
    assert!(left > 0.04, "the posed flipper's skin moved {left} m");
    assert!(left > 5.0 * right, "posed {left} m vs other {right} m");
    sim.shutdown();
}

#[test]
fn snapshot_sequences_strictly_increase() {
    let sim = SimThread::spawn(shipped_penguin(), SolverSettings::default(), 0);
    let mut last = sim.latest();
    let mut seen = 1;
    let start = Instant::now();
    while seen < 20 {
        assert!(start.elapsed() < PATIENCE, "only {seen} snapshots");
        let s = sim.latest();
        if !Arc::ptr_eq(&s, &last) {
            assert!(
                s.sequence > last.sequence,
                "{} after {}",
                s.sequence,
                last.sequence
            );
            assert!(s.published >= last.published);
            assert!(s.sim_time >= last.sim_time);
            seen += 1;
            last = s;
        } else {
            std::thread::sleep(Duration::from_micros(500));
        }
    }
    assert!(sim.status().sequence >= last.sequence);
}

#[test]
fn shutdown_does_not_wait_out_the_step_delay() {
    for delay in [Duration::from_millis(200), Duration::from_secs(20)] {
        let sim = SimThread::spawn(shipped_penguin(), SolverSettings::default(), 0);
        sim.send(SimMessage::SetStepDelay(delay)).unwrap();
        // The delay is published with the advance it follows: from then
        // on the thread waits out the delay.
        wait_status(&sim, "delay in effect", |s| s.step_delay == delay);
        std::thread::sleep(Duration::from_millis(10));
        let t = Instant::now();
        sim.shutdown();
        let took = t.elapsed();
        assert!(
            took < delay / 2,
            "shutdown took {took:?} with a {delay:?} step delay"
        );
    }
}

#[test]
fn divergence_and_bad_edits_become_messages_and_the_thread_goes_on() {
    let c = shipped_penguin();
    let sim = SimThread::spawn(c.clone(), SolverSettings::default(), 0);
    wait_snapshot(&sim, "a first advance", |s| s.sim_time > 0.0);

    // A swinging flipper's skin moves at about a metre per second: with a
    // "divergence" speed of 1 cm/s every step counts as a blow-up, rolls
    // back and cuts the step until the solver gives up.
    let absurd = SolverSettings {
        max_speed: 0.01,
        ..SolverSettings::default()
    };
    sim.send(SimMessage::SetSettings(absurd)).unwrap();
    sim.send(SimMessage::SetPosture(flipper_out(&c))).unwrap();
    let st = wait_status(&sim, "a divergence", |s| {
        s.message.as_deref().is_some_and(|m| m.contains("diverg"))
    });
    assert!(st.running);
    let seq = sim.latest().sequence;
    let s = wait_snapshot(&sim, "more snapshots", |s| s.sequence >= seq + 3);
    for skin in &s.skins {
        assert!(
            skin.positions.iter().all(|p| p.is_finite()),
            "last good state kept"
        );
    }

    // Back to sane settings: simulated time moves on from the last good state.
    sim.send(SimMessage::SetSettings(SolverSettings::default()))
        .unwrap();
    let t = sim.latest().sim_time;
    wait_snapshot(&sim, "time moving again", |s| s.sim_time > t + 0.1);

    // An invalid edit is refused with a message; the old model stays.
    let mut bad = c.clone();
    bad.muscles[0].joint = 99;
    let count = sim.status().message_count;
    sim.send(SimMessage::SetCharacter {
        character: Arc::new(bad),
        revision: 7,
    })
    .unwrap();
    let st = wait_status(&sim, "the refusal", |s| s.message_count > count);
    let m = st.message.unwrap();
    assert!(m.contains("edit 7 was not simulated"), "{m}");
    let seq = sim.latest().sequence;
    let s = wait_snapshot(&sim, "more snapshots", |s| s.sequence >= seq + 3);
    assert_eq!(s.revision, 0);
    // Invalid settings are refused too.
    let count = sim.status().message_count;
    sim.send(SimMessage::SetSettings(SolverSettings {
        time_ratio: -1.0,
        ..SolverSettings::default()
    }))
    .unwrap();
    let st = wait_status(&sim, "the refusal", |s| s.message_count > count);
    assert!(st.message.unwrap().contains("time_ratio"));
    assert_eq!(st.time_ratio, 1.0);
}

#[test]
fn without_skins_the_thread_idles_and_still_takes_postures() {
    let mut c = shipped_penguin();
    c.skins.clear();
    let sim = SimThread::spawn(c.clone(), SolverSettings::default(), 0);
    let first = wait_snapshot(&sim, "start", |s| s.sequence >= 1);
    let t = Instant::now();
    std::thread::sleep(Duration::from_millis(500));
    let published = sim.latest().sequence - first.sequence;
    let allowed = (t.elapsed().as_secs_f64() / IDLE_WAIT.as_secs_f64()).ceil() as u64 + 2;
    assert!(
        published <= allowed,
        "{published} snapshots in {:?} without skin: spinning",
        t.elapsed()
    );
    assert!(
        sim.latest().sim_time > 0.0,
        "the skeleton's clock still runs"
    );
    let p = flipper_out(&c);
    sim.send(SimMessage::SetPosture(p.clone())).unwrap();
    wait_snapshot(&sim, "the posture", |s| s.posture == p);
}

#[test]
fn resample_changes_the_simulated_resolution_and_sticks_across_edits() {
    let c = shipped_penguin();
    let sim = SimThread::spawn(c.clone(), SolverSettings::default(), 0);
    sim.send(SimMessage::Resample { m: 8, n: 8 }).unwrap();
    let s = wait_snapshot(&sim, "8×8", |s| {
        s.skins.iter().all(|k| (k.m, k.n) == (8, 8))
    });
    let t = s.sim_time;
    sim.send(SimMessage::SetCharacter {
        character: Arc::new(c.clone()),
        revision: 1,
    })
    .unwrap();
    let s = wait_snapshot(&sim, "revision 1", |s| s.revision == 1 && s.sim_time > t);
    assert!(s.skins.iter().all(|k| (k.m, k.n) == (8, 8)));
    assert_eq!(
        s.character.skins[0].m, c.skins[0].m,
        "the model keeps its own"
    );
}

#[test]
fn a_solver_that_cannot_keep_up_says_so() {
    // Ten thousand simulated seconds per real second: no solver keeps up.
    let settings = SolverSettings {
        time_ratio: 1e4,
        ..SolverSettings::default()
    };
    let sim = SimThread::spawn(shipped_penguin(), settings, 0);
    let st = wait_status(&sim, "falling behind", |s| s.fell_behind && s.sequence > 3);
    assert!(st.achieved_ratio < st.time_ratio, "{st:?}");
    // At a sane ratio it catches up again.
    sim.send(SimMessage::SetSettings(SolverSettings::default()))
        .unwrap();
    wait_status(&sim, "keeping up", |s| {
        !s.fell_behind && s.time_ratio == 1.0
    });
}

/// Modal flesh's modes are computed beside the simulation thread (DyRT's
/// precompute, seconds for a large character): meanwhile the skin is
/// simulated with the muscles riding rigidly, and when the modes are ready
/// the modal flesh takes over, stepped up to the simulation's clock.
#[test]
fn modal_modes_compute_beside_the_simulation_and_then_take_over() {
    use crate::character::{Flesh, ModalFlesh};
    let mut c = shipped_penguin();
    c.flesh = Flesh::Modal(ModalFlesh::for_character(&c));
    let sim = SimThread::spawn(c, SolverSettings::default(), 0);
    let rigid = wait_snapshot(&sim, "the skin simulated on rigid muscles", |s| {
        s.sim_time > 0.0 && s.flesh.is_none()
    });
    let ready = wait_status(&sim, "the modes taken in", |s| {
        s.message
            .as_deref()
            .is_some_and(|m| m.starts_with("the modal flesh is ready"))
    });
    let message = ready.message.unwrap();
    assert!(
        ready.message_count >= 2,
        "the wait was announced: {message}"
    );
    assert!(!message.contains(": 0 parts"), "{message}");
    let modal = wait_snapshot(&sim, "the modal flesh drawn", |s| {
        s.flesh.as_ref().is_some_and(|f| !f.lattice.is_empty())
    });
    assert!(
        modal.sim_time >= rigid.sim_time,
        "the clock ran on: {} then {}",
        rigid.sim_time,
        modal.sim_time
    );
    let flesh = modal.flesh.as_ref().unwrap();
    assert!(
        (flesh.time - modal.sim_time).abs() < 1e-9,
        "the flesh caught up: {} at {}",
        flesh.time,
        modal.sim_time
    );
    sim.shutdown();
}

#[test]
fn the_hand_pushes_a_responding_skeleton_and_says_when_the_skeleton_cannot_respond() {
    // Kinematic flesh: the push moves the skin only, and the user is told.
    let push = |a: Vec3, velocity: Vec3| HandPush {
        a,
        b: a + Vec3::X * 0.1,
        radius: 0.04,
        velocity,
    };
    let sim = SimThread::spawn(shipped_penguin(), SolverSettings::default(), 0);
    sim.send(SimMessage::Push(Some(push(
        Vec3::new(-0.6, 0.2, 0.0),
        Vec3::ZERO,
    ))))
    .unwrap();
    wait_status(&sim, "the skin-only notice", |s| {
        s.message
            .as_deref()
            .is_some_and(|m| m.contains("moves the skin only"))
    });
    sim.shutdown();
    // FEM flesh with --drop: it falls, tips onto its back and lies there;
    // a hand from its left (−x) at 0.4 m/s pushes it along.
    let mut c = shipped_penguin();
    c.flesh = crate::character::Flesh::Fem(Default::default());
    let sim = SimThread::spawn(c, SolverSettings::default(), 0);
    let ground = crate::contact::GroundDrop {
        plane: crate::contact::Plane::ground(),
        drop: Some(0.002),
    };
    sim.send(SimMessage::MakeDynamic(ground)).unwrap();
    wait_status(&sim, "the skeleton responds", |s| {
        s.message
            .as_deref()
            .is_some_and(|m| m.contains("the skeleton responds"))
    });
    let lying = wait_snapshot(&sim, "lying on its back", |s| s.sim_time > 1.2);
    let points: Vec<Vec3> = lying
        .skins
        .iter()
        .flat_map(|s| s.positions.clone())
        .collect();
    let (lo, hi) = points.iter().fold(
        (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    let body = |s: &SceneSnapshot| centroid(&s.skins[0].positions);
    let mid = (lo + hi) * 0.5;
    sim.send(SimMessage::Push(Some(push(
        Vec3::new(lo.x - 0.15, mid.y, mid.z),
        Vec3::new(0.4, 0.0, 0.0),
    ))))
    .unwrap();
    wait_status(&sim, "the hand's impulse", |s| s.push_impulse > 0.0);
    let pushed = wait_snapshot(&sim, "pushed for 0.4 s", |s| {
        s.sim_time > lying.sim_time + 0.45
    });
    let moved = body(&pushed) - body(&lying);
    assert!(moved.x > 0.03, "the body skin moved {moved}");
    sim.send(SimMessage::Push(None)).unwrap();
    wait_status(&sim, "the hand let go", |s| s.push_impulse == 0.0);
    sim.shutdown();
}
