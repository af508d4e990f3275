//! The hand pushes the character (issue 17's push tool, Galoppo eq. 3.19):
//! a moving capsule against a responding skeleton's flesh and its skins.

use glam::{DVec3, Vec3};
use plasticine::character::{FemFlesh, Flesh};
use plasticine::contact::{Capsule, Plane};
use plasticine::skin::{Simulation, SkeletonDriver, SolverSettings};

/// The FEM penguin on the floor, its skeleton responding.
fn standing_penguin() -> Simulation {
    let mut c = plasticine::samples::shipped_penguin();
    c.flesh = Flesh::Fem(FemFlesh::default());
    let rest = c.skeleton.rest_posture();
    let mut sim =
        Simulation::new(c, SkeletonDriver::Still(rest), SolverSettings::default()).unwrap();
    sim.make_dynamic(Plane::ground(), Some(0.002)).unwrap();
    sim
}

fn root(sim: &Simulation) -> DVec3 {
    sim.flesh().unwrap().core().unwrap().position
}

/// The skins' points, world.
fn skin_points(sim: &Simulation) -> Vec<Vec3> {
    sim.character
        .skins
        .iter()
        .flat_map(|s| s.points.position.iter().copied())
        .collect()
}

#[test]
fn a_hand_pushing_the_lying_penguin_moves_its_skeleton_and_stays_out_of_its_skin() {
    // A standing penguin tips onto its back (its feet are too short to
    // stand on): let it lie there first.
    let settle = 1.2;
    let (mut pushed, mut still) = (standing_penguin(), standing_penguin());
    pushed.advance_to(settle, None).unwrap();
    still.advance_to(settle, None).unwrap();
    // The hand comes at its side (from −x), in the middle of the skins'
    // box, a 4 cm capsule pointing along the push, at 0.4 m/s.
    let points = skin_points(&pushed);
    let (lo, hi) = points.iter().fold(
        (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    let (mid, side) = (((lo + hi) * 0.5).as_dvec3(), lo.x as f64);
    let speed = 0.4;
    let hand = Capsule::hand(
        DVec3::new(side - 0.15, mid.y, mid.z),
        DVec3::new(side - 0.05, mid.y, mid.z),
        0.04,
        DVec3::new(speed, 0.0, 0.0),
        settle,
    );
    pushed.set_pushers(vec![hand]).unwrap();
    let end = settle + 0.4;
    let report = pushed.advance_to(end, None).unwrap();
    still.advance_to(end, None).unwrap();
    assert!(
        report
            .events
            .iter()
            .all(|e| !format!("{e:?}").contains("Diverged")),
        "{:?}",
        report.events
    );
    // The skeleton yields: the root went along the push (+x) against the
    // unpushed one.
    let moved = root(&pushed) - root(&still);
    let (impulse, contacts) = pushed.push_impulse().unwrap();
    eprintln!("root moved {moved}, impulse {impulse} N s over {contacts} contacts");
    // The skins stay out of the hand (where a hand presses a skin onto its
    // muscle the muscle wins; the flesh's contact keeps that from
    // happening here).
    let now = hand.at(end);
    let deepest = skin_points(&pushed)
        .iter()
        .map(|p| now.distance_normal(p.as_dvec3()).0)
        .fold(f64::INFINITY, f64::min);
    let core = pushed.flesh().unwrap().core().unwrap();
    eprintln!(
        "deepest skin point in the hand: {deepest} m; turned {:?}, unpushed {:?}",
        core.rotation.to_scaled_axis(),
        still
            .flesh()
            .unwrap()
            .core()
            .unwrap()
            .rotation
            .to_scaled_axis()
    );
    assert!(moved.x > 0.03, "{moved}");
    assert!(contacts > 0 && impulse > 0.0, "{impulse} {contacts}");
    assert!(deepest > -1e-3, "{deepest}");
    // The hand lets go: nothing holds the skin any more.
    pushed.set_pushers(Vec::new()).unwrap();
    assert_eq!(pushed.push_impulse().map(|p| p.1 > 0), Some(true));
    pushed.advance_to(end + 0.05, None).unwrap();
    assert_eq!(pushed.push_impulse(), Some((0.0, 0)));
}

#[test]
fn a_hand_that_is_not_a_capsule_is_refused_naming_the_field() {
    let mut sim = standing_penguin();
    let mut hand = Capsule::hand(DVec3::ZERO, DVec3::Z, -0.1, DVec3::ZERO, 0.0);
    let e = sim.set_pushers(vec![hand]).unwrap_err();
    assert_eq!(e.field, "push.radius");
    hand.radius = 0.05;
    hand.velocity.x = f64::NAN;
    assert_eq!(sim.set_pushers(vec![hand]).unwrap_err().field, "push");
}

#[test]
fn a_hand_crushing_the_penguin_into_the_floor_is_reported() {
    // The hand comes down through the lying penguin onto its bones at
    // 2 m/s while the floor holds it: the contacts cannot all be met, and
    // the advance says so in its events.
    let mut sim = standing_penguin();
    sim.advance_to(1.2, None).unwrap();
    let r = root(&sim);
    let hand = Capsule::hand(
        DVec3::new(r.x - 0.2, r.y + 0.06, r.z),
        DVec3::new(r.x + 0.2, r.y + 0.06, r.z),
        0.05,
        DVec3::new(0.0, -2.0, 0.0),
        1.2,
    );
    sim.set_pushers(vec![hand]).unwrap();
    let report = sim.advance_to(1.3, None).unwrap();
    let unsettled: Vec<_> = report
        .events
        .iter()
        .filter_map(|e| match e {
            plasticine::skin::SimEvent::ContactUnsettled {
                steps,
                at,
                violation,
            } => Some((*steps, *at, *violation)),
            _ => None,
        })
        .collect();
    assert_eq!(unsettled.len(), 1, "{:?}", report.events);
    let (steps, at, violation) = unsettled[0];
    assert!(
        steps >= 1 && at > 1.2 && at <= 1.3 && violation > 1e-3,
        "{unsettled:?}"
    );
}

#[test]
fn a_grabbed_responding_penguin_is_lifted_and_falls_back_when_let_go() {
    // Grabbing the flesh of a responding skeleton holds the whole
    // character by it: lifted, it comes off the floor; let go, it falls
    // back (a toss is the same with a moving hand).
    let mut sim = standing_penguin();
    sim.advance_to(1.2, None).unwrap();
    // The belly, 3 cm in from the body skin's top (away from the bone: a
    // grab on the bone is the bone's, and dropped).
    let top = sim.character.skins[0]
        .points
        .position
        .iter()
        .copied()
        .max_by(|a, b| a.y.total_cmp(&b.y))
        .unwrap();
    let centre = top - Vec3::Y * 0.03;
    let lying = root(&sim);
    let flesh = sim.flesh_mut().unwrap();
    let id = flesh.grab(centre).expect("the belly is flesh");
    let mut t = 1.2;
    for k in 1..=30 {
        t += 1.0 / 60.0;
        let hand = centre + Vec3::Y * (0.25 * k as f32 / 30.0);
        sim.flesh_mut().unwrap().move_grab(id, hand);
        sim.advance_to(t, None).unwrap();
    }
    let lifted = root(&sim);
    assert!(lifted.y - lying.y > 0.15, "lifted from {lying} to {lifted}");
    sim.flesh_mut().unwrap().release(id);
    sim.advance_to(t + 1.0, None).unwrap();
    let fallen = root(&sim);
    assert!(
        fallen.y - lying.y < 0.05,
        "lying at {lying}, after the drop {fallen}"
    );
    let core = sim.flesh().unwrap().core().unwrap();
    assert!(core.totals.min_bone_clearance > -2e-3, "{:?}", core.totals);
}
