use super::*;
use crate::character::{Dof, FemFlesh, Flesh, Joint, Muscle, Skeleton};
use crate::contact::Plane;
use crate::fem::FleshSim;
use crate::shape::MuscleShape;
use glam::{EulerRot, Quat, Vec2, Vec3};

/// A flat block of flesh (a boxy superellipsoid, 0.24 × 0.08 × 0.24 m)
/// on a two-joint bone through its middle, turned by `tilt` about z.
fn block(tilt: f32) -> Character {
    let j = |name: &str, parent, offset| Joint {
        locked: false,
        name: String::from(name),
        parent,
        offset,
        rest_rotation: Quat::IDENTITY,
        dofs: [Dof::default(); 3],
    };
    let mut root = j("root", None, Vec3::new(0.0, 0.5, 0.0));
    root.rest_rotation = Quat::from_rotation_z(tilt);
    Character {
        name: "block".into(),
        skeleton: Skeleton {
            joints: vec![root, j("tip", Some(0), Vec3::new(0.08, 0.0, 0.0))],
        },
        muscles: vec![Muscle {
            joint: 0,
            offset: Vec3::ZERO,
            rotation: Quat::IDENTITY,
            shape: MuscleShape::superellipsoid(Vec3::new(0.12, 0.04, 0.12), Vec2::new(0.3, 0.3)),
            drivers: Vec::new(),
            color: None,
        }],
        skins: Vec::new(),
        environment: Default::default(),
        flesh: Flesh::Fem(FemFlesh {
            target_vertices: 150,
            young: 2.0e5,
            blend_width: None,
            ..FemFlesh::default()
        }),
        key_postures: Vec::new(),
    }
}

fn dynamic(c: &Character, ground: Plane, drop: f64) -> FleshSim {
    let posture = c.skeleton.rest_posture();
    let mut sim = FleshSim::new(c, &posture, 0.0).expect("flesh builds");
    sim.make_dynamic(c, &posture, ground, Some(drop))
        .expect("the skeleton responds");
    sim
}

fn run(sim: &mut FleshSim, c: &Character, to: f64) {
    let posture = c.skeleton.rest_posture();
    sim.advance_to(c, |_| posture.clone(), to);
}

/// Total momentum of the flesh (lumped mass), and its total mass.
fn momentum(sim: &FleshSim) -> (DVec3, f64) {
    let FleshBodyRef::Lattice(b) = body_of(sim);
    let m = &b.global.lumped_mass;
    let p = b.v.iter().zip(m).map(|(v, m)| *v * *m).sum();
    (p, m.iter().sum())
}

enum FleshBodyRef<'a> {
    Lattice(&'a FemBody),
}

fn body_of(sim: &FleshSim) -> FleshBodyRef<'_> {
    match &sim.body {
        super::super::FleshBody::Lattice(b) => FleshBodyRef::Lattice(b),
        _ => panic!("lattice flesh"),
    }
}

#[test]
fn posture_with_root_puts_the_root_where_the_frame_is() {
    let c = block(0.3);
    let frame = DAffine3::from_rotation_translation(
        DQuat::from_euler(EulerRot::YXZ, 2.0, -0.7, 0.4),
        DVec3::new(0.3, 1.2, -0.5),
    );
    let p = posture_with_root(&c, &c.skeleton.rest_posture(), frame);
    let got = root_frame(&c, &p);
    assert!(got.translation.distance(frame.translation) < 1e-6);
    assert!(
        (got.matrix3 - frame.matrix3)
            .abs()
            .to_cols_array()
            .iter()
            .all(|x| *x < 1e-6)
    );
}

#[test]
fn the_flesh_and_its_core_fall_freely_together() {
    let c = block(0.0);
    // The ground far below: nothing touches.
    let ground = Plane::through(DVec3::new(0.0, -50.0, 0.0), DVec3::Y, 0.5, 0.0);
    let mut sim = FleshSim::new(&c, &c.skeleton.rest_posture(), 0.0).unwrap();
    sim.make_dynamic(&c, &c.skeleton.rest_posture(), ground, None)
        .unwrap();
    let t = 0.25;
    run(&mut sim, &c, t);
    let (p, mass) = momentum(&sim);
    let g = -9.81;
    // Implicit Euler's mass term (1 + hα) slows any acceleration by hα/(1 + hα).
    let h = super::super::FLESH_STEP;
    let slow = 1.0 / (1.0 + h * 0.5);
    let expected = mass * g * t * slow;
    assert!(
        (p.y - expected).abs() < 2e-3 * expected.abs(),
        "momentum {p} vs {expected}"
    );
    assert!(p.x.abs() + p.z.abs() < 1e-4 * expected.abs(), "{p}");
    let core = sim.core().unwrap();
    assert!(
        (core.velocity.y - g * t * slow).abs() < 2e-3 * (g * t).abs(),
        "{}",
        core.velocity
    );
    assert_eq!(core.totals.max_contacts, 0);
}

#[test]
fn a_dropped_block_lands_and_rests_on_the_ground_without_sinking() {
    let c = block(0.0);
    let mut sim = dynamic(&c, Plane::ground(), 0.1);
    let FleshBodyRef::Lattice(b) = body_of(&sim);
    let (_, start) = sim.core().unwrap().lowest_proxy(&b.lattice, &b.q).unwrap();
    assert!((start - 0.1).abs() < 1e-9, "{start}");
    run(&mut sim, &c, 1.0);
    let core = sim.core().unwrap();
    assert!(core.totals.max_contacts > 4, "{:?}", core.totals);
    // Every proxy above −1 mm after the correction, the bone above the floor.
    assert!(core.totals.min_clearance > -2e-3, "{:?}", core.totals);
    assert!(core.last.clearance > -1e-3, "{:?}", core.last);
    assert!(core.totals.min_bone_clearance > 0.0, "{:?}", core.totals);
    // At rest on the floor: still, the proxies touching.
    assert!(core.velocity.length() < 1e-2, "{}", core.velocity);
    assert!(core.last.clearance < 2e-3, "{:?}", core.last);
}

#[test]
fn the_hands_capsule_pushes_the_block_along_the_floor_without_entering_it() {
    // Eq. 3.19: a moving obstacle. The block rests on the floor; a capsule
    // (a hand, 3 cm round) comes from the left at 0.3 m/s and keeps
    // going: the block goes with it, the flesh stays out of the capsule.
    let c = block(0.0);
    let mut sim = dynamic(&c, Plane::ground(), 0.002);
    run(&mut sim, &c, 0.3);
    let x0 = sim.core().unwrap().position;
    let speed = 0.3;
    let hand = crate::contact::Capsule::hand(
        DVec3::new(-0.2, x0.y, 0.0),
        DVec3::new(-0.2, x0.y + 0.15, 0.0),
        0.03,
        DVec3::new(speed, 0.0, 0.0),
        0.3,
    );
    sim.core_mut().unwrap().pushers = vec![hand];
    run(&mut sim, &c, 0.8);
    let core = sim.core().unwrap();
    // The capsule's face went from 0.05 m short of the block to 0.1 m
    // into where it stood: the block moved about that far, the flesh
    // dented under the push.
    let moved = core.position - x0;
    assert!(moved.x > 0.07 && moved.x < 0.105, "{moved}");
    // Straight on (the Fibonacci proxies are not mirror-symmetric: a hair
    // of drift).
    assert!(moved.z.abs() < 0.03 * moved.x, "{moved}");
    assert!(
        (core.velocity.x - speed).abs() < 0.15 * speed,
        "{}",
        core.velocity
    );
    assert!(
        core.last.push_contacts > 0 && core.last.push_impulse > 0.0,
        "{:?}",
        core.last
    );
    // Friction inside its cone on every contact of every step (3.20),
    // and at its edge somewhere: the block slid over the floor.
    assert!(
        core.totals.max_cone_ratio <= 1.0 + 1e-9 && core.totals.max_cone_ratio > 0.99,
        "{:?}",
        core.totals
    );
    // No proxy inside the capsule beyond 2 mm, none under the floor.
    let FleshBodyRef::Lattice(b) = body_of(&sim);
    let now = hand.at(0.8);
    let deepest = core
        .proxy_positions(&b.lattice, &b.q)
        .into_iter()
        .map(|x| now.distance_normal(x).0)
        .fold(f64::INFINITY, f64::min);
    assert!(deepest > -2e-3, "{deepest}");
    assert!(core.last.clearance > -1e-3, "{:?}", core.last);
}

#[test]
fn a_hand_crushing_the_bone_into_the_floor_is_reported_unsettled() {
    // The hand comes down on the block's bone at 1 m/s while the floor
    // holds it: the rigid core cannot go both ways, no impulses settle the
    // contacts, and the steps say so (the owner reports them as events).
    let c = block(0.0);
    let mut sim = dynamic(&c, Plane::ground(), 0.002);
    run(&mut sim, &c, 0.2);
    let core = sim.core_mut().unwrap();
    assert!(core.take_unsettled().is_empty(), "resting settles");
    let x = core.position;
    core.pushers = vec![crate::contact::Capsule::hand(
        x + DVec3::new(-0.2, 0.05, 0.0),
        x + DVec3::new(0.2, 0.05, 0.0),
        0.045,
        DVec3::new(0.0, -1.0, 0.0),
        0.2,
    )];
    run(&mut sim, &c, 0.3);
    let core = sim.core_mut().unwrap();
    let unsettled = core.take_unsettled();
    assert!(!unsettled.is_empty(), "{:?}", core.last);
    assert!(
        unsettled
            .iter()
            .all(|&(t, v)| t > 0.2 && v > UNSETTLED_VIOLATION),
        "{unsettled:?}"
    );
}

/// The block's speed down a 30° slope after `t`, for friction μ.
fn slide(mu: f64) -> (f64, f64) {
    slide_block(block(30f32.to_radians()), mu)
}

/// `c` (the block tilted 30°) sliding down a 30° slope of friction μ: its
/// acceleration and how far it went.
fn slide_block(c: Character, mu: f64) -> (f64, f64) {
    let theta = 30f64.to_radians();
    let n = DVec3::new(-theta.sin(), theta.cos(), 0.0);
    let ground = Plane::through(DVec3::ZERO, n, mu, 0.0);
    let mut sim = dynamic(&c, ground, 0.002);
    let down = DVec3::new(-theta.cos(), -theta.sin(), 0.0);
    run(&mut sim, &c, 0.2);
    let (v0, x0) = {
        let core = sim.core().unwrap();
        (core.velocity.dot(down), core.position.dot(down))
    };
    run(&mut sim, &c, 0.5);
    let core = sim.core().unwrap();
    let a = (core.velocity.dot(down) - v0) / 0.3;
    (a, core.position.dot(down) - x0)
}

#[test]
fn on_a_30_degree_slope_the_block_slides_at_g_sin_minus_mu_cos_or_sticks() {
    let theta = 30f64.to_radians();
    let g = 9.81;
    let mu = 0.2;
    let (a, _) = slide(mu);
    let expected = g * (theta.sin() - mu * theta.cos());
    assert!((a - expected).abs() < 0.05 * expected, "{a} vs {expected}");
    // μ > tan 30° ≈ 0.577: it stays put.
    let (a, moved) = slide(0.8);
    assert!(a.abs() < 0.05, "{a}");
    assert!(moved.abs() < 1e-3, "{moved}");
}

#[test]
fn a_slippery_part_slides_where_the_slope_alone_would_hold_it() {
    // The slope's μ 0.8 holds the block (above); its flesh part's own μ
    // 0.05 mixes to √(0.8 · 0.05) = 0.2 and it slides as on a μ 0.2 slope.
    let theta = 30f64.to_radians();
    let mut c = block(theta as f32);
    if let Flesh::Fem(f) = &mut c.flesh {
        *f = f.with_part_friction("root", Some(0.05));
    }
    let (a, _) = slide_block(c, 0.8);
    let mu = crate::contact::mix_friction(0.8, Some(0.05));
    assert!((mu - 0.2).abs() < 1e-12);
    let expected = 9.81 * (theta.sin() - mu * theta.cos());
    assert!((a - expected).abs() < 0.05 * expected, "{a} vs {expected}");
}

/// The FEM penguin dropped from `height`, for `seconds`, at the flesh step
/// `h`; `bones`: whether the bones meet the ground too; `correction`:
/// whether proxies left inside are moved out after each step (eq. 3.21).
fn drop_penguin(height: f64, seconds: f64, h: f64, bones: bool, correction: bool) -> ContactTotals {
    let mut c = crate::samples::shipped_penguin();
    c.flesh = Flesh::Fem(FemFlesh {
        time_step: h,
        ..FemFlesh::default()
    });
    let posture = c.skeleton.rest_posture();
    let mut sim = FleshSim::new(&c, &posture, 0.0).unwrap();
    assert_eq!(sim.time_step(), h);
    sim.make_dynamic(&c, &posture, Plane::ground(), Some(height))
        .unwrap();
    let core = sim.core_mut().unwrap();
    core.bone_contacts = bones;
    core.position_correction = correction;
    run(&mut sim, &c, seconds);
    let core = sim.core().unwrap();
    assert!(
        (core.totals.steps as f64 - seconds / h).abs() < 1.5,
        "{:?}",
        core.totals
    );
    core.totals
}

#[test]
fn a_dropped_penguin_lands_on_its_flesh_and_its_bones_stay_above_the_floor() {
    // Galoppo's Fig. 1.7: impulses on the surface alone let a hard landing
    // drive the core through its soft flesh; with the bones meeting the
    // ground on the core as well, every bone stays above it.
    let h = super::super::FLESH_STEP;
    let with = drop_penguin(0.5, 0.6, h, true, true);
    assert!(with.max_contacts > 20, "{with:?}");
    assert!(with.min_bone_clearance > -1e-3, "{with:?}");
    let without = drop_penguin(0.5, 0.6, h, false, true);
    assert!(without.min_bone_clearance < -0.01, "{without:?}");
    for t in [with, without] {
        assert!(t.min_clearance > -1e-3, "{t:?}");
    }
}

#[test]
fn at_a_30_hz_flesh_step_the_correction_keeps_every_proxy_out_of_the_floor() {
    // Fig. 1.7 at h = 1/30 s: four times the step, so the contact solve's
    // share per step leaves more inside; eq. 3.21 moves it out after each.
    let h = 1.0 / 30.0;
    let with = drop_penguin(0.5, 0.8, h, true, true);
    assert!(with.max_contacts > 10, "{with:?}");
    assert!(with.min_bone_clearance > -1e-3, "{with:?}");
    // Every proxy on or above the floor after each step's correction...
    assert!(with.min_clearance > -1e-6, "{with:?}");
    // ...where the contact solve alone leaves tenths of a millimetre
    // inside: about what the correction moved out.
    let uncorrected = drop_penguin(0.5, 0.8, h, true, false);
    assert!(uncorrected.min_clearance < -2e-4, "{uncorrected:?}");
    let left = -uncorrected.min_clearance;
    assert!(
        (with.max_corrected - left).abs() < 0.5 * left,
        "{with:?} {uncorrected:?}"
    );
}

/// The block resting on the ground, its flesh (not its bone) pushed
/// `depth` into it, then stepped once with or without the position
/// correction: the lowest proxy's clearance after the step, the depth
/// corrected, and the flesh's velocities.
fn pushed_in_block(depth: f64, correction: bool) -> (f64, f64, Vec<DVec3>) {
    let c = block(0.0);
    let mut sim = dynamic(&c, Plane::ground(), 0.0);
    sim.core_mut().unwrap().position_correction = correction;
    let super::super::FleshBody::Lattice(b) = &mut sim.body else {
        panic!("lattice flesh")
    };
    for (q, bone) in b.q.iter_mut().zip(&b.lattice.bone_of_vertex) {
        if bone.is_none() {
            q.y -= depth;
        }
    }
    let h = super::super::FLESH_STEP;
    run(&mut sim, &c, h);
    let FleshBodyRef::Lattice(b) = body_of(&sim);
    let core = sim.core().unwrap();
    (core.last.clearance, core.last.corrected, b.v.clone())
}

#[test]
fn flesh_left_inside_the_ground_is_moved_out_after_the_step_without_changing_velocities() {
    // Eq. 3.21 with a rigid ground (k_j = ∞): the flesh takes the whole
    // depth. The contact solve alone pushes a share of it out per step.
    let depth = 5e-3;
    let (kept_in, none, v_without) = pushed_in_block(depth, false);
    assert!(kept_in < -0.5 * depth, "{kept_in}");
    assert_eq!(none, 0.0);
    let (clearance, corrected, v_with) = pushed_in_block(depth, true);
    assert!(clearance > -1e-3 * depth, "{clearance}");
    assert!(
        (corrected + kept_in).abs() < 1e-3 * depth,
        "corrected {corrected}, left {kept_in}"
    );
    // Positions only (3.22): the velocities are the contact solve's.
    assert_eq!(v_with, v_without);
}

/// The FEM penguin with its joints turned by `angles` (joint, angles),
/// made dynamic 0.2 m over the ground.
fn posed_penguin(angles: &[(usize, Vec3)]) -> (Character, Posture, FleshSim) {
    let mut c = crate::samples::shipped_penguin();
    c.flesh = Flesh::Fem(FemFlesh::default());
    let mut posture = c.skeleton.rest_posture();
    for &(j, a) in angles {
        posture.angles[j] = a;
    }
    let mut sim = FleshSim::new(&c, &posture, 0.0).unwrap();
    sim.make_dynamic(&c, &posture, Plane::ground(), Some(0.2))
        .unwrap();
    (c, posture, sim)
}

#[test]
fn a_kept_impulse_response_turned_into_this_step_s_frames_is_the_solved_one() {
    // The penguin's blended regions, posed away from rest: the answers
    // kept in the bones' frames, rotated, must equal a fresh solve.
    let (c, posture, mut sim) = posed_penguin(&[
        (0, Vec3::new(0.3, -0.5, 0.2)),
        (2, Vec3::new(0.0, 0.4, -0.3)),
    ]);
    let (super::super::FleshBody::Lattice(body), Some(core)) =
        (&mut sim.body, sim.core.as_deref_mut())
    else {
        panic!("lattice flesh with a core");
    };
    let bones: Vec<DAffine3> = DynamicCore::relative_bones(&c, &body.lattice.bones, &posture)
        .iter()
        .map(|l| core.frame() * *l)
        .collect();
    let known: Vec<Option<DVec3>> = body
        .pin_targets(&bones)
        .iter()
        .map(|t| t.map(|_| DVec3::ZERO))
        .collect();
    let axis = DVec3::new(0.3, -0.8, 0.5).normalize();
    for k in [0, core.proxies.len() / 2, core.proxies.len() - 1] {
        let e = core.proxies[k].embedding;
        let (dv, reaction) = core.cached_response(body, &bones, k, axis);
        // Twice: the second comes from what was kept.
        let (dv2, _) = core.cached_response(body, &bones, k, axis);
        assert_eq!(dv, dv2);
        let direct = body.solve_velocity(
            &bones,
            &VelocitySolve {
                known: &known,
                loads: false,
                impulses: &[(e, axis)],
                damping_frame: None,
                reactions: true,
            },
        );
        let scale = direct.dv.iter().map(|v| v.length()).fold(0.0, f64::max);
        let err = dv
            .iter()
            .zip(&direct.dv)
            .map(|(a, b)| (*a - *b).length())
            .fold(0.0, f64::max);
        assert!(scale > 0.0 && err < 1e-6 * scale, "{err} of {scale}");
        let rs = direct.reaction.iter().map(|v| v.length()).sum::<f64>();
        let re = reaction
            .iter()
            .zip(&direct.reaction)
            .map(|(a, b)| (*a - *b).length())
            .sum::<f64>();
        assert!(rs > 0.0 && re < 1e-6 * rs, "{re} of {rs}");
    }
}

#[test]
fn kept_answers_to_the_core_s_unit_velocities_are_the_solved_ones() {
    // The penguin posed away from rest and its core turned: the six
    // answers kept in the bones' frames, turned into the world, must
    // equal fresh solves with the bone vertices moved by G_a e_j.
    let (c, posture, mut sim) = posed_penguin(&[
        (0, Vec3::new(0.4, -0.6, 0.3)),
        (5, Vec3::new(0.0, 0.3, 0.5)),
    ]);
    let (super::super::FleshBody::Lattice(body), Some(core)) =
        (&mut sim.body, sim.core.as_deref_mut())
    else {
        panic!("lattice flesh with a core");
    };
    let relative = DynamicCore::relative_bones(&c, &body.lattice.bones, &posture);
    for turn in [
        DQuat::IDENTITY,
        DQuat::from_euler(EulerRot::XYZ, 0.7, -1.1, 0.4),
    ] {
        let frame = DAffine3::from_rotation_translation(turn, DVec3::new(0.1, 0.4, -0.2));
        let bones: Vec<DAffine3> = relative.iter().map(|l| frame * *l).collect();
        let kept = core.unit_responses(body, &relative, &bones).expect("kept");
        let targets = body.pin_targets(&bones);
        for (j, (dv, reaction)) in kept.iter().enumerate() {
            let known: Vec<Option<DVec3>> = (0..body.vertex_count())
                .map(|a| {
                    let t = targets[a]?;
                    Some(match body.lattice.bone_of_vertex[a] {
                        Some(_) => {
                            let arm = body.lattice.rest[a] + t - frame.translation;
                            g_column(j, arm)
                        }
                        None => DVec3::ZERO,
                    })
                })
                .collect();
            let direct = body.solve_velocity(
                &bones,
                &VelocitySolve {
                    known: &known,
                    loads: false,
                    impulses: &[],
                    damping_frame: None,
                    reactions: true,
                },
            );
            let size = |v: &[DVec3]| v.iter().map(|x| x.length()).sum::<f64>();
            let diff = |a: &[DVec3], b: &[DVec3]| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| (*x - *y).length())
                    .sum::<f64>()
            };
            assert!(
                diff(dv, &direct.dv) < 1e-6 * size(&direct.dv),
                "unit {j}: Δv off by {} of {}",
                diff(dv, &direct.dv),
                size(&direct.dv)
            );
            assert!(
                diff(reaction, &direct.reaction) < 1e-6 * size(&direct.reaction),
                "unit {j}: reactions off by {} of {}",
                diff(reaction, &direct.reaction),
                size(&direct.reaction)
            );
        }
    }
}

#[test]
fn a_character_starting_deep_in_the_ground_is_refused_naming_the_part() {
    let c = block(0.0);
    let posture = c.skeleton.rest_posture();
    let mut sim = FleshSim::new(&c, &posture, 0.0).unwrap();
    // The ground through the block's middle and a little above: over half
    // its flesh under it.
    let ground = Plane::through(DVec3::new(0.0, 0.51, 0.0), DVec3::Y, 0.5, 0.0);
    let err = sim.make_dynamic(&c, &posture, ground, None).unwrap_err();
    match &err {
        DynamicError::Buried { part, depth } => {
            assert!(part.contains("root"), "{err}");
            assert!(*depth > 0.04 && *depth < 0.06, "{err}");
        }
        other => panic!("{other}"),
    }
    assert!(err.to_string().contains("--drop"), "{err}");
    // Grazing the ground is fine: contact pushes it out.
    let ground = Plane::through(DVec3::new(0.0, 0.47, 0.0), DVec3::Y, 0.5, 0.0);
    sim.make_dynamic(&c, &posture, ground, None).unwrap();
    assert!(sim.core().is_some());
}

#[test]
fn the_core_s_velocity_at_a_time_is_that_of_its_frames_whatever_steps_are_held() {
    // A block dropped 0.1 m: it falls, lands and turns a little.
    let c = block(0.3);
    let mut sim = dynamic(&c, Plane::ground(), 0.1);
    let h = super::super::FLESH_STEP;
    run(&mut sim, &c, 0.3);
    let core = sim.core().unwrap();
    // Inside a step the frames move at the step's velocities exactly: a
    // difference of `frame_at` over part of one step gives them back.
    for t in [0.1, 0.15 + 0.3 * h, 0.25 + 0.7 * h] {
        let step = (t / h).floor() * h;
        let (a, b) = (step + 0.2 * h, step + 0.8 * h);
        let (fa, fb) = (core.frame_at(a), core.frame_at(b));
        let (v, w) = core.velocity_at(b);
        let moved = (fb.translation - fa.translation) / (b - a);
        assert!(
            (moved - v).length() < 1e-9 * (1.0 + v.length()),
            "{moved} vs {v}"
        );
        let turn = DQuat::from_mat3(&fb.matrix3) * DQuat::from_mat3(&fa.matrix3).inverse();
        let turned = turn.to_scaled_axis() / (b - a);
        assert!(
            (turned - w).length() < 1e-6 * (1.0 + w.length()),
            "{turned} vs {w}"
        );
    }
    // At a step's own time the answer is that step's, before and after the
    // flesh moves on and forgets the steps behind (in free fall, where the
    // velocity changes by g·h at every step).
    let at = (0.08 / h).round() * h;
    let before = core.velocity_at(at);
    let into = core.velocity_at(at + 0.5 * h);
    assert!(
        (before.0 - into.0).length() > 1e-6,
        "the velocity changes at a step"
    );
    run(&mut sim, &c, 0.4);
    sim.forget_before(at);
    assert_eq!(sim.core().unwrap().velocity_at(at), before);
}

mod together;
