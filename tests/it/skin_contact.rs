//! Skins that keep out of each other: the solver's contact
//! between skins, checked by brute force against every quad of every skin
//! (`Simulation::crossings_since`) on the samples as an animator plays and
//! poses them.

use plasticine::skin::Grid;
use plasticine::skin::smoothness;
use plasticine::skin::{Crossing, SKIN_GAP};
use plasticine::skin::{Simulation, SkeletonDriver, SolverSettings};

/// The deepest crossing every `every` frames at 30 Hz up to `end` seconds,
/// the frame it was at, and the skins' worst p95 neighbour angle.
fn deepest(sim: &mut Simulation, end: f64, every: usize) -> (Option<(f64, Crossing)>, f32) {
    let start = sim.skins_now();
    let mut worst: Option<(f64, Crossing)> = None;
    let mut p95 = 0.0f32;
    let frames = (end * 30.0).round() as usize;
    for f in 1..=frames {
        let report = sim
            .advance_to(f as f64 / 30.0, None)
            .unwrap_or_else(|e| panic!("frame {f}: {e}"));
        assert!(report.events.is_empty(), "frame {f}: {:?}", report.events);
        if f % every == 0 || f == frames {
            for c in sim.crossings_since(&start) {
                if worst.is_none_or(|(_, w)| c.depth > w.depth) {
                    worst = Some((sim.time(), c));
                }
            }
            for s in &sim.character.skins {
                p95 = p95.max(smoothness(&Grid::of(s), &s.points.position).p95_deg);
            }
        }
    }
    (worst, p95)
}

fn depth(w: Option<(f64, Crossing)>) -> f32 {
    w.map_or(0.0, |(_, c)| c.depth)
}

/// A flipper of the 32×32 penguin pressed against the body (swung 0.25 rad
/// down over half a second and held): its muscle stays out of the body
/// skin, but with its fat the flipper skin does not fit. Without contact
/// the flipper skin sinks 3.4 mm into the body skin; with it the fat between
/// them gives and, at every checked frame, no point is inside (measured:
/// 0), and the skins stay as smooth (p95 within 3°; measured within 1°).
#[test]
fn a_flipper_pressed_on_the_body_stays_outside_it() {
    let run = |skin_contact: bool| {
        let c = plasticine::samples::build("penguin", 32, 32).unwrap();
        let rest = c.skeleton.rest_posture();
        let mut to = rest.clone();
        to.angles[c.skeleton.find("flipper_l").unwrap()].z = -0.25;
        let driver = SkeletonDriver::Blend {
            from: rest,
            to,
            t0: 0.1,
            t1: 0.6,
        };
        let settings = SolverSettings {
            skin_contact,
            ..SolverSettings::default()
        };
        let mut sim = Simulation::new(c, driver, settings).unwrap();
        deepest(&mut sim, 1.2, 3)
    };
    let (with, p95_with) = run(true);
    let (without, p95_without) = run(false);
    assert!(
        depth(with) <= 0.25 * SKIN_GAP,
        "with contact {with:?} (without {without:?})"
    );
    assert!(
        depth(without) > SKIN_GAP,
        "without contact only {without:?}: the scene no longer tests contact"
    );
    assert!(
        p95_with <= p95_without + 3.0,
        "p95 {p95_with}° with contact, {p95_without}° without"
    );
}

/// Every sample played through its key postures at 32×32: no point of a
/// skin ends up inside another (or inside another sheet of itself) by more
/// than the gap, at any checked frame.
#[test]
fn the_samples_animations_never_cross_their_skins() {
    for name in plasticine::samples::NAMES {
        let c = plasticine::samples::build(name, 32, 32).unwrap();
        let end = c
            .key_postures
            .last()
            .map_or(1.0, |k| f64::from(k.time))
            .min(2.0);
        let driver = SkeletonDriver::Keys(c.key_postures.clone());
        let mut sim = Simulation::new(c, driver, SolverSettings::default()).unwrap();
        let (worst, _) = deepest(&mut sim, end, 6);
        assert!(depth(worst) <= SKIN_GAP, "{name}: {worst:?}");
    }
}

/// The contact map's measure of skins resting on each other: two tubes
/// side by side, 1 mm apart (inside the skins' contact gap). The points
/// facing the other tube are at 1 mm from it, those on the far sides
/// out of reach; moved 5 cm apart, none is within reach; the map's value
/// is 1 at the gap, 0 a reach beyond it.
#[test]
fn skins_resting_on_each_other_are_found_for_the_contact_map() {
    use glam::Vec3;
    use plasticine::render::{CONTACT_REACH, skin_contact};
    use plasticine::skin::{SKIN_GAP, skin_gaps};
    let (m, n, r) = (16, 6, 0.05f32);
    let tube = |x0: f32| -> Vec<Vec3> {
        (0..m * n)
            .map(|k| {
                let (i, j) = (k % m, k / m);
                let a = std::f32::consts::TAU * i as f32 / m as f32;
                Vec3::new(
                    x0 + r * a.cos(),
                    r * a.sin(),
                    0.2 * j as f32 / (n - 1) as f32,
                )
            })
            .collect()
    };
    let a = tube(0.0);
    let reach = SKIN_GAP + CONTACT_REACH;
    let touching = tube(2.0 * r + 0.001);
    let gaps = skin_gaps(&[(m, n, &a), (m, n, &touching)], reach);
    // Point i = 0 faces +x (the other tube), i = m/2 faces away.
    for j in 1..n - 1 {
        let d = gaps[0][j * m];
        assert!((d - 0.001).abs() < 2e-4, "row {j}: {d}");
        assert_eq!(
            gaps[0][j * m + m / 2],
            f32::INFINITY,
            "row {j}: the far side"
        );
        assert!(
            (gaps[1][j * m + m / 2] - 0.001).abs() < 2e-4,
            "and the other way"
        );
        assert_eq!(skin_contact(d, SKIN_GAP), 1.0);
    }
    assert!(skin_contact(SKIN_GAP + CONTACT_REACH, SKIN_GAP) < 1e-6);
    assert_eq!(skin_contact(f32::INFINITY, SKIN_GAP), 0.0);
    let apart = tube(2.0 * r + 0.05);
    let gaps = skin_gaps(&[(m, n, &a), (m, n, &apart)], reach);
    assert!(gaps.iter().flatten().all(|d| d.is_infinite()));
}
