//! Two characters stepping together (`super::super::together`).

use super::*;

/// A block (see [`block`]) without gravity or mass damping (which pulls
/// momentum towards the core's frame), its flesh solved to `cg`, the
/// ground far below, made `offset` from the first and thrown at
/// `velocity`.
fn thrown(offset: DVec3, velocity: DVec3, cg: f64) -> (Character, FleshSim) {
    thrown_stiff(offset, velocity, cg, 1.0)
}

/// As [`thrown`], the flesh `stiff` times as stiff.
fn thrown_stiff(offset: DVec3, velocity: DVec3, cg: f64, stiff: f64) -> (Character, FleshSim) {
    let mut c = block(0.0);
    c.environment.gravity = Vec3::ZERO;
    if let Flesh::Fem(f) = &mut c.flesh {
        f.mass_damping = 0.0;
        f.young *= stiff;
    }
    let ground = Plane::through(DVec3::new(0.0, -50.0, 0.0), DVec3::Y, 0.5, 0.0);
    let posture = c.skeleton.rest_posture();
    let mut sim = FleshSim::new(&c, &posture, 0.0).expect("flesh builds");
    sim.make_dynamic(&c, &posture, ground, None)
        .expect("the skeleton responds");
    assert!(sim.place(offset) && sim.throw(velocity));
    let (crate::fem::FleshBody::Lattice(body), Some(core)) = (&mut sim.body, &mut sim.core) else {
        panic!("a dynamic lattice");
    };
    body.settings.cg_tolerance = cg;
    core.position_correction = false;
    (c, sim)
}

/// Linear momentum and energy (kinetic and elastic, flesh and bones) of a
/// dynamic flesh.
fn momentum_energy(sim: &FleshSim) -> (DVec3, f64) {
    let FleshBodyRef::Lattice(b) = body_of(sim);
    let core = sim.core().unwrap();
    let m = &b.global.lumped_mass;
    let flesh: DVec3 = b.v.iter().zip(m).map(|(v, m)| *v * *m).sum();
    let e = b.energy();
    let bones = 0.5 * core.bone_mass * core.velocity.length_squared()
        + 0.5 * core.bone_inertia * core.angular_velocity.length_squared();
    (
        flesh + core.velocity * core.bone_mass,
        e.kinetic + e.elastic + bones,
    )
}

/// The deepest any proxy of `a` lies inside `b`'s flesh (m, ≥ 0): where
/// it is inside one of `b`'s muscles pushed out by their fat, as they
/// stand on `b`'s core (`rigid`), and past the nearest of `b`'s own
/// proxies on that muscle along the muscle's normal (`flesh`: `b`'s
/// surface as its flesh has dented).
fn depth_in(a: &FleshSim, b: &FleshSim, cb: &Character) -> (f64, f64) {
    let (FleshBodyRef::Lattice(ba), FleshBodyRef::Lattice(bb)) = (body_of(a), body_of(b));
    let (core_a, core_b) = (a.core().unwrap(), b.core().unwrap());
    let placed = posture_with_root(cb, &cb.skeleton.rest_posture(), core_b.frame());
    let muscles = crate::kinematics::PosedBody::new(cb, &placed).muscles;
    let own = core_b.proxy_positions(&bb.lattice, &bb.q);
    let (mut rigid, mut flesh) = (0.0f64, 0.0f64);
    for x in core_a.proxy_positions(&ba.lattice, &ba.q) {
        for (j, m) in muscles.iter().enumerate() {
            let (d, n) = m
                .shape
                .distance_and_normal(m.to_local.transform_point3(x.as_vec3()), 0.1);
            let d = f64::from(d) - core_b.muscle_fat[j];
            if d >= 0.0 {
                continue;
            }
            rigid = rigid.max(-d);
            let n = m.to_world.transform_vector3(n).as_dvec3().normalize();
            let nearest = (0..own.len())
                .filter(|&k| core_b.proxy_muscle(k) == Some(j))
                .map(|k| own[k])
                .min_by(|u, v| u.distance(x).total_cmp(&v.distance(x)))
                .expect("a proxy on the muscle");
            flesh = flesh.max(-n.dot(x - nearest));
        }
    }
    (rigid, flesh)
}

#[test]
fn two_blocks_thrown_together_keep_their_momentum_and_lose_energy() {
    // Galoppo's two free bodies: no gravity, no drift term, ε = 0, no
    // position correction. A at 1 m/s and B at −0.6 m/s along x, 6 cm
    // apart, B a little higher so the blow also turns them.
    let cg = 1e-12;
    let (ca, mut a) = thrown(DVec3::ZERO, DVec3::new(1.0, 0.0, 0.0), cg);
    let (cb, mut b) = thrown(DVec3::new(0.3, 0.02, 0.0), DVec3::new(-0.6, 0.0, 0.0), cg);
    let (pa, ea) = momentum_energy(&a);
    let (pb, eb) = momentum_energy(&b);
    let p0 = pa + pb;
    let scale = pa.length() + pb.length();
    let mut energy = ea + eb;
    let (mut dented, mut deepest) = (0.0f64, 0.0f64);
    let h = a.time_step();
    let rest = |_: usize, _: f64| ca.skeleton.rest_posture();
    let steps = (0.25 / h).round() as usize;
    for k in 1..=steps {
        FleshSim::advance_together(&mut [(&mut b, &cb), (&mut a, &ca)], rest, k as f64 * h)
            .expect("two dynamic blocks step together");
        let (qa, ea) = momentum_energy(&a);
        let (qb, eb) = momentum_energy(&b);
        let p = qa + qb;
        assert!(
            (p - p0).length() <= 1e-9 * scale,
            "step {k}: momentum {p} against {p0} ({:e} relative)",
            (p - p0).length() / scale
        );
        let e = ea + eb;
        assert!(
            e <= energy * (1.0 + 1e-9),
            "step {k}: energy rose from {energy} to {e}"
        );
        energy = e;
        for (rigid, flesh) in [depth_in(&a, &b, &cb), depth_in(&b, &a, &ca)] {
            dented = dented.max(rigid);
            deepest = deepest.max(flesh);
        }
    }
    let (core_a, core_b) = (a.core().unwrap(), b.core().unwrap());
    // They met (contacts between them) and no longer close.
    assert!(core_a.totals.max_between > 0, "{:?}", core_a.totals);
    assert!(core_b.totals.max_between > 0, "{:?}", core_b.totals);
    assert!(
        core_a.velocity.x <= core_b.velocity.x + 1e-3,
        "{} {}",
        core_a.velocity,
        core_b.velocity
    );
    // The flesh dented (proxies of one inside the other's undented
    // surface), but no proxy went more than a millimetre into the other's
    // dented flesh.
    assert!(dented > 1e-3, "{dented}");
    assert!(
        deepest < 1e-3,
        "{deepest} ({dented} into the undented surface)"
    );
    // The blow was inelastic: energy went.
    assert!(energy < 0.9 * (ea + eb), "{energy} of {}", ea + eb);
}

/// Block A (`stiff` times as stiff) and block B 5 mm into it, still,
/// stepped once with or without the position correction: each one's
/// proxies after the step, and how deep one is in the other's flesh then.
fn overlapped(stiff: f64, correction: bool) -> (Vec<DVec3>, Vec<DVec3>, f64) {
    let (ca, mut a) = thrown_stiff(DVec3::ZERO, DVec3::ZERO, 1e-10, stiff);
    let (cb, mut b) = thrown_stiff(DVec3::new(0.235, 0.0, 0.0), DVec3::ZERO, 1e-10, 1.0);
    for sim in [&mut a, &mut b] {
        sim.core.as_mut().unwrap().position_correction = correction;
    }
    let rest = |_: usize, _: f64| ca.skeleton.rest_posture();
    let h = a.time_step();
    FleshSim::advance_together(&mut [(&mut a, &ca), (&mut b, &cb)], rest, h).unwrap();
    let depth = depth_in(&a, &b, &cb).1.max(depth_in(&b, &a, &ca).1);
    let proxies = |s: &FleshSim| s.core().unwrap().proxy_positions(s.lattice(), s.q());
    (proxies(&a), proxies(&b), depth)
}

#[test]
fn characters_left_in_each_other_are_moved_apart_the_softer_more() {
    // Eq. 3.21 between two flesh bodies: A three times as stiff as B
    // takes a quarter of the depth, B three quarters: A moves a third as
    // much as B, relative to an equally stiff pair.
    let (qa0, qb0, before) = overlapped(3.0, false);
    let (qa1, qb1, after) = overlapped(3.0, true);
    assert!(before > 1e-3, "{before}");
    assert!(after < 0.05 * before, "{after} of {before}");
    // The most any proxy of each was moved along the blow.
    let moved = |q0: &[DVec3], q1: &[DVec3]| -> f64 {
        q0.iter()
            .zip(q1)
            .map(|(x, y)| (*y - *x).x.abs())
            .fold(0.0, f64::max)
    };
    let (ma, mb) = (moved(&qa0, &qa1), moved(&qb0, &qb1));
    assert!(ma > 0.0 && mb > 0.0, "{ma} {mb}");
    // Against the same pair equally stiff (the order the two are moved in
    // and the proxies' layout make that ratio 1.25, not 1): a third of it.
    let (qa2, qb2, _) = overlapped(1.0, false);
    let (qa3, qb3, _) = overlapped(1.0, true);
    let equal = moved(&qa2, &qa3) / moved(&qb2, &qb3);
    let ratio = (ma / mb) / equal;
    assert!(
        (ratio - 1.0 / 3.0).abs() < 0.15 / 3.0,
        "A moved {ma}, B {mb}: {ratio} of the equal pair's {equal}"
    );
}

#[test]
fn a_block_dropped_on_another_comes_to_rest_on_it() {
    // The lower block rests on the floor; the upper one, 4 cm above it,
    // falls on it: both end still, stacked, neither in the other nor in
    // the floor.
    let (ca, cb) = (block(0.0), block(0.0));
    let posture = ca.skeleton.rest_posture();
    let mut a = dynamic(&ca, Plane::ground(), 0.0);
    // Its lowest proxy 12 cm up: 4 cm over the lower block's top.
    let mut b = dynamic(&cb, Plane::ground(), 0.12);
    let (mut dented, mut deepest) = (0.0f64, 0.0f64);
    let h = a.time_step();
    let rest = |_: usize, _: f64| posture.clone();
    for k in 1..=(1.0 / h).round() as usize {
        FleshSim::advance_together(&mut [(&mut a, &ca), (&mut b, &cb)], rest, k as f64 * h)
            .expect("two dynamic blocks step together");
        for (rigid, flesh) in [depth_in(&a, &b, &cb), depth_in(&b, &a, &ca)] {
            dented = dented.max(rigid);
            deepest = deepest.max(flesh);
        }
    }
    let (core_a, core_b) = (a.core().unwrap(), b.core().unwrap());
    assert!(core_b.totals.max_between > 4, "{:?}", core_b.totals);
    // Stacked: the upper block's core a block's height (8 cm) above the
    // lower's, give or take the flesh's sag, and both at rest.
    let rise = core_b.position.y - core_a.position.y;
    assert!((rise - 0.08).abs() < 0.01, "{rise}");
    assert!(core_a.velocity.length() < 1e-2, "{}", core_a.velocity);
    assert!(core_b.velocity.length() < 1e-2, "{}", core_b.velocity);
    // The lower one pressed into the floor no more than it alone is.
    assert!(core_a.totals.min_clearance > -2e-3, "{:?}", core_a.totals);
    assert!(
        core_a.totals.min_bone_clearance > 0.0,
        "{:?}",
        core_a.totals
    );
    assert!(
        deepest < 2e-3,
        "{deepest} ({dented} into the undented surface)"
    );
}

#[test]
fn characters_that_cannot_step_together_are_refused() {
    let c = block(0.0);
    let posture = c.skeleton.rest_posture();
    let mut still = FleshSim::new(&c, &posture, 0.0).unwrap();
    let mut a = dynamic(&c, Plane::ground(), 0.1);
    let rest = |_: usize, _: f64| posture.clone();
    let err =
        FleshSim::advance_together(&mut [(&mut a, &c), (&mut still, &c)], rest, 0.1).unwrap_err();
    assert_eq!(err, SceneError::NotDynamic(1));
    let mut later = dynamic(&c, Plane::ground(), 0.1);
    run(&mut later, &c, 0.05);
    let err =
        FleshSim::advance_together(&mut [(&mut a, &c), (&mut later, &c)], rest, 0.1).unwrap_err();
    assert!(matches!(err, SceneError::Clocks { other: 1, .. }), "{err}");
    // Nothing stepped.
    assert_eq!(a.time(), 0.0);
}
