//! A character file (RON, every version the loader accepts): parsed,
//! validated and, when it loads, written back out and read again; then
//! simulated for ten frames' worth of steps and turned into render geometry.
//! A character that loads must survive all of it: no panic, no NaN in a
//! step the solver accepted, bounded work.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plasticine::character::Character;
use plasticine::render::{Decorations, GeometryBuilder, SceneStyle};
use plasticine::skin::{SkeletonDriver, Simulation, SolverSettings};
use plasticine::snapshot::SceneSnapshot;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Skin points past which an input is only loaded, not simulated: a large
/// character is legal, but its steps do not fit libFuzzer's time per input.
const SIMULATED_POINTS: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let origin = Path::new("fuzz.ron");
    if let Ok(c) = plasticine::io::parse_character(text, origin) {
        let again = plasticine::io::character_to_string(&c).expect("a loaded character writes");
        plasticine::io::parse_character(&again, origin).expect("what was written reads back");
        survive(c);
    }
});

fn survive(c: Character) {
    let points: usize = c.skins.iter().map(|s| s.m * s.n).sum();
    if points > SIMULATED_POINTS {
        return;
    }
    // As the front ends do: the key postures, or the rest pose without any.
    let driver = if c.key_postures.is_empty() {
        SkeletonDriver::Still(c.skeleton.rest_posture())
    } else {
        SkeletonDriver::Keys(c.key_postures.clone())
    };
    let Ok(mut sim) = Simulation::new(c, driver.clone(), SolverSettings::default()) else {
        return;
    };
    // Ten 1/90 s frames, each with a budget (what the simulation thread
    // gives it): a stiff character takes many small steps, never forever.
    let mut t = 0.0;
    for _ in 0..10 {
        t += 1.0 / 90.0;
        if sim.advance_to(t, Some(Duration::from_millis(20))).is_err() {
            return;
        }
        for s in &sim.character.skins {
            assert!(
                s.points.position.iter().all(|p| p.is_finite()),
                "an accepted step left a non-finite skin point"
            );
        }
    }
    let snapshot = SceneSnapshot::of(Arc::new(sim.character.clone()), driver.posture_at(t), 0);
    GeometryBuilder::new().build(&snapshot, &SceneStyle::default(), &Decorations::default());
}
