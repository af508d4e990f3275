//! What the fuzzers found, kept as regression tests: each names the input
//! the fuzzer wrote (kept among its target's seeds, so every fuzz run
//! replays it) and builds here the character that input amounts to.

use glam::Vec3;
use plasticine::skin::{SimError, SimEvent, Simulation, SkeletonDriver, SolverSettings};
use std::time::Duration;

/// `fuzz/seeds/character_arbitrary/diverging_retries`, a timeout: the 6×12
/// penguin with its root joint and crown at the origin, a flipper 2·10⁷
/// times as stiff in bending, gravity 5·10⁶ m/s² and a damping of 2·10⁵.
/// The flipper diverges again and again. Each retry after a rollback ran
/// past the advance's budget over the whole span, at ever shorter steps,
/// and held the thread for 1.1–3.9 s against a 20 ms budget.
fn diverging_penguin() -> plasticine::character::Character {
    let mut c = plasticine::samples::build("penguin", 6, 12).unwrap();
    let joint = |c: &plasticine::character::Character, name| c.skeleton.find(name).unwrap();
    let (base, crown) = (joint(&c, "base"), joint(&c, "crown"));
    c.skeleton.joints[base].offset = Vec3::splat(5.960_464_6e-9);
    c.skeleton.joints[crown].offset = Vec3::new(0.0, 5.960_464_6e-9, 5.960_464_6e-9);
    c.skins[2].points.bend.fill(20.971_52);
    c.environment.gravity = Vec3::new(0.306_25, 0.0, 5_138_022.5);
    c.environment.global_damping = 209_715.2;
    c
}

/// The flipper that keeps diverging is given up on with the clear error
/// (which skin, where, what to change) and its last good state, every
/// point finite; the other skins are not blamed. The time the input took is
/// the fuzz target's to check (its seed, 1 s per input): an advance with a
/// budget now ends within five of them, and this input takes 0.28 s.
#[test]
fn a_skin_that_keeps_diverging_is_stopped_at_its_last_good_state() {
    let c = diverging_penguin();
    let driver = SkeletonDriver::Still(c.skeleton.rest_posture());
    let mut sim = Simulation::new(c, driver, SolverSettings::default()).unwrap();
    // A spent budget: one step per try, so the test is quick in debug too.
    let mut error = None;
    for _ in 0..5000 {
        let target = sim.time() + 1.0 / 90.0;
        match sim.advance_to(target, Some(Duration::ZERO)) {
            Ok(report) => assert!(
                report.events.iter().all(|e| match e {
                    SimEvent::Diverged { skin, .. } => *skin == 2,
                    _ => true,
                }),
                "{:?}",
                report.events
            ),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let Some(SimError::Diverged { skin, good, .. }) = error else {
        panic!("the flipper was not given up on: {error:?}")
    };
    assert_eq!(skin, 2);
    let message = error.unwrap().to_string();
    assert!(message.contains("keeps diverging"), "{message}");
    let flipper = &sim.character.skins[2];
    assert!(flipper.points.position.iter().all(|p| p.is_finite()));
    assert!(
        (sim.time() - good).abs() <= 1e-9 * good.max(1e-3),
        "left at {} against its last good time {good}",
        sim.time()
    );
}
