//! Dynamic morph targets of the FEM flesh (Galoppo 2008, ch. 5) on the
//! penguin: pose-dependent rest shape and stiffness, interpolated in pose
//! space. Run with `--nocapture` for the numbers.

use glam::{DVec3, Vec3};
use plasticine::character::{
    Character, FemFlesh, Flesh, MorphOffset, MorphTarget, PartStiffness, Posture,
};
use plasticine::fem::FleshBody;
use plasticine::fem::{FleshError, FleshSim};
use plasticine::skin::SkeletonDriver;

fn penguin(targets: Vec<MorphTarget>, gravity: bool) -> Character {
    let mut c = plasticine::samples::bare("penguin").expect("sample");
    if !gravity {
        c.environment.gravity = Vec3::ZERO;
    }
    c.flesh = Flesh::Fem(FemFlesh {
        morph_targets: targets,
        ..FemFlesh::default()
    });
    c.validate().expect("valid");
    c
}

/// The penguin with its left flipper raised.
fn raised(c: &Character, angle: f32) -> Posture {
    let mut p = c.skeleton.rest_posture();
    p.angles[c.skeleton.find("flipper_l").unwrap()] = Vec3::new(0.0, 0.0, angle);
    p
}

fn target(name: &str, posture: Posture, offsets: Vec<MorphOffset>, stiffness: f64) -> MorphTarget {
    MorphTarget {
        name: name.into(),
        posture,
        offsets,
        stiffness,
        part_stiffness: Vec::new(),
    }
}

/// A belly bulge: every free lattice vertex of the belly's part (nearest
/// a bone of the belly joint) within `radius` of the belly bone's middle,
/// pushed outward from its axis by up to `amount`, falling off smoothly to
/// nothing at `radius`.
fn bulge(c: &Character, amount: f32, radius: f32) -> Vec<MorphOffset> {
    let flesh =
        FleshSim::new(&penguin(Vec::new(), false), &c.skeleton.rest_posture(), 0.0).expect("flesh");
    let l = flesh.lattice();
    let belly = c.skeleton.find("belly").unwrap();
    let (head, tail) = l
        .bones
        .iter()
        .find(|b| b.joint == belly)
        .map(|b| (b.head.as_vec3(), b.tail.as_vec3()))
        .unwrap();
    let centre = (head + tail) * 0.5;
    let axis = (tail - head).normalize();
    (0..l.vertex_count())
        .filter(|&a| l.bone_of_vertex[a].is_none())
        .filter(|&a| l.nearest_bone(l.rest[a]).unwrap().joint == belly)
        .filter_map(|a| {
            let p = l.rest[a].as_vec3();
            let d = p - centre;
            let t = d.length() / radius;
            (t < 1.0).then(|| {
                let out = (d - axis * d.dot(axis)).normalize_or_zero();
                MorphOffset {
                    at: p,
                    offset: out * amount * (1.0 - t * t).powi(3),
                }
            })
        })
        .collect()
}

fn lattice_body(flesh: &FleshSim) -> &plasticine::fem::FemBody {
    match &flesh.body {
        FleshBody::Lattice(b) => b,
        FleshBody::Adaptive(_) => panic!("lattice flesh expected"),
    }
}

fn largest(v: &[DVec3]) -> f64 {
    v.iter().map(|x| x.length()).fold(0.0, f64::max)
}

/// The mean of |x| over the free lattice vertices.
fn mean_free(flesh: &FleshSim, x: &[DVec3]) -> f64 {
    let l = flesh.lattice();
    let free: Vec<f64> = (0..l.vertex_count())
        .filter(|&a| l.bone_of_vertex[a].is_none())
        .map(|a| x[a].length())
        .collect();
    free.iter().sum::<f64>() / free.len() as f64
}

/// The mean of |x| over the free lattice vertices wholly in the regions
/// of `joint`'s bones.
fn mean_in_regions(c: &Character, flesh: &FleshSim, x: &[DVec3], joint: Option<&str>) -> f64 {
    let body = lattice_body(flesh);
    let j = joint.map(|name| c.skeleton.find(name).unwrap());
    let values: Vec<f64> = body
        .regions
        .iter()
        .filter(|r| j.is_none_or(|j| r.bone.is_some_and(|b| body.lattice.bones[b].joint == j)))
        .flat_map(|r| r.vertices.iter().zip(&r.weights))
        .filter(|(a, w)| **w > 1.0 - 1e-9 && body.lattice.bone_of_vertex[**a].is_none())
        .map(|(&a, _)| x[a].length())
        .collect();
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

#[test]
fn a_target_of_the_plain_shape_is_the_plain_flesh() {
    // One target, or identical ones at two poses: the flesh is today's,
    // step for step, through the waddle.
    let plain = penguin(Vec::new(), true);
    let rest = plain.skeleton.rest_posture();
    let one = penguin(vec![target("rest", rest.clone(), Vec::new(), 1.0)], true);
    let two = penguin(
        vec![
            target("rest", rest.clone(), Vec::new(), 1.0),
            target("raised", raised(&plain, 0.8), Vec::new(), 1.0),
        ],
        true,
    );
    let driver = SkeletonDriver::Keys(plain.key_postures.clone());
    let run = |c: &Character| {
        let mut f = FleshSim::new(c, &driver.posture_at(0.0), 0.0).unwrap();
        f.advance_to(c, |t| driver.posture_at(t), 0.5);
        f.q().to_vec()
    };
    let (a, b, d) = (run(&plain), run(&one), run(&two));
    let scale = largest(&a);
    let diff = |x: &[DVec3]| {
        x.iter()
            .zip(&a)
            .map(|(p, q)| (*p - *q).length())
            .fold(0.0, f64::max)
    };
    eprintln!(
        "largest displacement {:.2} mm; one target differs by {:.1e}, two identical by {:.1e}",
        scale * 1e3,
        diff(&b) / scale,
        diff(&d) / scale
    );
    assert!(scale > 1e-3, "the waddle moves the flesh");
    assert_eq!(diff(&b), 0.0, "one plain target is the plain flesh exactly");
    assert!(
        diff(&d) <= 1e-12 * scale,
        "two identical targets: {:.1e}",
        diff(&d)
    );
}

#[test]
fn at_its_pose_the_flesh_rests_in_the_sculpted_shape_and_far_from_it_not() {
    let plain = penguin(Vec::new(), false);
    let offsets = bulge(&plain, 0.01, 0.2);
    assert!(offsets.len() >= 8, "{} bulged vertices", offsets.len());
    let sculpted = offsets
        .iter()
        .map(|o| o.offset.length() as f64)
        .fold(0.0, f64::max);
    let up = raised(&plain, 0.8);
    let c = penguin(
        vec![
            target("rest", plain.skeleton.rest_posture(), Vec::new(), 1.0),
            target("tucked", up.clone(), offsets.clone(), 1.0),
        ],
        false,
    );
    let at = |c: &Character, p: &Posture| FleshSim::new(c, p, 0.0).unwrap();
    // At the target's pose: the flesh minus the plain flesh is the
    // sculpted offset (the belly's bone does not turn in this pose).
    let (with, without) = (at(&c, &up), at(&plain, &up));
    let body = lattice_body(&with);
    let mut worst: f64 = 0.0;
    let mut bulged: f64 = 0.0;
    for o in &offsets {
        let a = (0..body.vertex_count())
            .find(|&a| body.lattice.rest[a].as_vec3() == o.at)
            .unwrap();
        let got = with.q()[a] - without.q()[a];
        worst = worst.max((got - o.offset.as_dvec3()).length());
        bulged = bulged.max(got.length());
    }
    // Far from it (the rest pose, the other target): no bulge at all.
    let (rest_with, rest_without) = (
        at(&c, &plain.skeleton.rest_posture()),
        at(&plain, &plain.skeleton.rest_posture()),
    );
    let far = rest_with
        .q()
        .iter()
        .zip(rest_without.q())
        .map(|(a, b)| (*a - *b).length())
        .fold(0.0, f64::max);
    // Halfway, about half of it.
    let half = raised(&plain, 0.4);
    let (mid_with, mid_without) = (at(&c, &half), at(&plain, &half));
    let mid = largest(
        &mid_with
            .q()
            .iter()
            .zip(mid_without.q())
            .map(|(a, b)| *a - *b)
            .collect::<Vec<_>>(),
    );
    eprintln!(
        "bulge {:.2} mm at its pose (sculpted {:.2} mm, off it by {:.3} mm), {:.2} mm halfway, {:.1e} mm at rest; β halfway {:?}",
        bulged * 1e3,
        sculpted * 1e3,
        worst * 1e3,
        mid * 1e3,
        far * 1e3,
        mid_with.pose(&c, &half, 0.0).morph_weights.0
    );
    assert!(worst <= 5e-4, "off the sculpted shape by {worst} m");
    assert!(
        (bulged - sculpted).abs() < 0.1 * sculpted,
        "bulge {bulged} m of {sculpted}"
    );
    assert!(far <= 1e-9, "a bulge of {far} m at rest");
    assert!(
        (mid - 0.5 * sculpted).abs() < 0.1 * sculpted,
        "halfway bulge {mid} m"
    );
}

#[test]
fn a_stiffer_target_sags_less_by_its_stiffness_and_only_at_its_pose() {
    let plain = penguin(Vec::new(), true);
    let up = raised(&plain, 0.8);
    let rest = plain.skeleton.rest_posture();
    let stiff = penguin(
        vec![
            target("rest", rest.clone(), Vec::new(), 1.0),
            target("raised", up.clone(), Vec::new(), 4.0),
        ],
        true,
    );
    // Gravity's share of the settled flesh: the settled shape with gravity
    // less the one without (the blend of regions' linearizations puts its
    // own, gravity-free displacement into both).
    let sagged = |c: &Character, p: &Posture| {
        let mut weightless = c.clone();
        weightless.environment.gravity = Vec3::ZERO;
        let (a, b) = (
            FleshSim::new(c, p, 0.0).unwrap(),
            FleshSim::new(&weightless, p, 0.0).unwrap(),
        );
        let d: Vec<DVec3> = a.q().iter().zip(b.q()).map(|(x, y)| *x - *y).collect();
        (mean_free(&a, &d), a.q().to_vec())
    };
    let ((soft_up, _), (stiff_up, _)) = (sagged(&plain, &up), sagged(&stiff, &up));
    let ((soft_rest, a), (_, b)) = (sagged(&plain, &rest), sagged(&stiff, &rest));
    let rest_diff = largest(&a.iter().zip(&b).map(|(x, y)| *x - *y).collect::<Vec<_>>());
    let ratio = stiff_up / soft_up;
    eprintln!(
        "mean sag at the raised pose {:.3} mm plain, {:.3} mm with the 4x target (ratio {ratio:.3}); \
         at rest they differ by {:.1e} mm",
        soft_up * 1e3,
        stiff_up * 1e3,
        rest_diff * 1e3
    );
    assert!(soft_up > 1e-4, "the flesh sags: {soft_up} m");
    assert!(
        (ratio - 0.25).abs() <= 0.05,
        "sag ratio {ratio}, stiffness ratio 0.25"
    );
    assert!(rest_diff <= 1e-9 * soft_rest, "{rest_diff}");
}

#[test]
fn a_stiffer_part_sags_less_and_the_others_the_same() {
    let plain = penguin(Vec::new(), true);
    let up = raised(&plain, 0.8);
    let mut t = target("raised", up.clone(), Vec::new(), 1.0);
    t.part_stiffness = vec![PartStiffness {
        joint: "flipper_l".into(),
        scale: 4.0,
    }];
    let c = penguin(
        vec![
            target("rest", plain.skeleton.rest_posture(), Vec::new(), 1.0),
            t,
        ],
        true,
    );
    let part_sag = |c: &Character, joint: &str| {
        let mut weightless = c.clone();
        weightless.environment.gravity = Vec3::ZERO;
        let (a, b) = (
            FleshSim::new(c, &up, 0.0).unwrap(),
            FleshSim::new(&weightless, &up, 0.0).unwrap(),
        );
        let d: Vec<DVec3> = a.q().iter().zip(b.q()).map(|(x, y)| *x - *y).collect();
        mean_in_regions(c, &a, &d, Some(joint))
    };
    let (left_plain, left) = (part_sag(&plain, "flipper_l"), part_sag(&c, "flipper_l"));
    let (right_plain, right) = (part_sag(&plain, "flipper_r"), part_sag(&c, "flipper_r"));
    eprintln!(
        "left flipper {:.3} -> {:.3} mm, right flipper {:.3} -> {:.3} mm",
        left_plain * 1e3,
        left * 1e3,
        right_plain * 1e3,
        right * 1e3
    );
    assert!(left_plain > 1e-5 && right_plain > 1e-5);
    // Its flesh is held by the body's, which is as soft as before: less
    // than the 4x alone would give.
    assert!(
        left / left_plain < 0.6,
        "the stiffened flipper: {left} vs {left_plain}"
    );
    assert!(
        (right / right_plain - 1.0).abs() < 0.02,
        "the other: {right} vs {right_plain}"
    );
}

#[test]
fn stiffness_and_rest_shape_change_smoothly_along_a_pose_path() {
    let plain = penguin(Vec::new(), false);
    let offsets = bulge(&plain, 0.01, 0.2);
    let c = penguin(
        vec![
            target("rest", plain.skeleton.rest_posture(), Vec::new(), 1.0),
            target("raised", raised(&plain, 1.5), offsets, 2.0),
        ],
        false,
    );
    let mut flesh = FleshSim::new(&c, &plain.skeleton.rest_posture(), 0.0).unwrap();
    // Walk the flipper from 0 to 90 degrees in 1-degree steps, one flesh
    // step each; read the blend the body steps with.
    let mut last: Option<(Vec<f64>, Vec<Vec<DVec3>>)> = None;
    let (mut worst_scale, mut worst_offset) = (0.0f64, 0.0f64);
    let mut largest_offset: f64 = 0.0;
    for deg in 0..=90 {
        let p = raised(&plain, (deg as f32).to_radians());
        let t = flesh.time() + plasticine::fem::FLESH_STEP;
        flesh.advance_to(&c, |_| p.clone(), t);
        let blend = lattice_body(&flesh).morph.clone().expect("blend");
        for w in blend.offset.iter().flatten() {
            largest_offset = largest_offset.max(w.length());
        }
        if let Some((scale, offset)) = &last {
            for (a, b) in scale.iter().zip(&blend.scale) {
                worst_scale = worst_scale.max((a - b).abs());
            }
            for (a, b) in offset.iter().flatten().zip(blend.offset.iter().flatten()) {
                worst_offset = worst_offset.max((*a - *b).length());
            }
        }
        assert!(!blend.clamped, "no clamping between the targets");
        last = Some((blend.scale, blend.offset));
    }
    let (scale, _) = last.unwrap();
    eprintln!(
        "per degree: stiffness factor moves at most {worst_scale:.4} (ends at {:.3}), rest offset \
         at most {:.3} mm of {:.2} mm",
        scale.iter().copied().fold(0.0, f64::max),
        worst_offset * 1e3,
        largest_offset * 1e3
    );
    assert!(
        worst_scale > 0.0 && worst_scale <= 0.01 * 2.0,
        "{worst_scale}"
    );
    assert!(
        worst_offset > 0.0 && worst_offset <= 0.01 * largest_offset * 2.0,
        "{worst_offset}"
    );
}

#[test]
fn held_still_the_flesh_loses_energy_every_step() {
    // The global linear model (one region), whose energy is defined:
    // ½vᵀMv + ½σ(q − w/σ)ᵀK(q − w/σ). Pose held between two targets, no
    // gravity, the flesh kicked.
    let mut plain = penguin(Vec::new(), false);
    let offsets = bulge(&plain, 0.01, 0.2);
    let rest = plain.skeleton.rest_posture();
    let targets = vec![
        target("rest", rest.clone(), Vec::new(), 1.0),
        target("raised", raised(&plain, 0.8), offsets, 3.0),
    ];
    if let Flesh::Fem(f) = &mut plain.flesh {
        f.blend_width = None;
        f.morph_targets = targets;
    }
    plain.validate().unwrap();
    let c = plain;
    let mut flesh = FleshSim::new(&c, &rest, 0.0).unwrap();
    let pose = raised(&c, 0.4);
    // Kick: every free vertex moving up at 0.3 m/s.
    if let FleshBody::Lattice(b) = &mut flesh.body {
        for a in 0..b.vertex_count() {
            if b.lattice.bone_of_vertex[a].is_none() {
                b.v[a] = DVec3::new(0.0, 0.3, 0.0);
            }
        }
    }
    let mut energies = Vec::new();
    for k in 1..=120 {
        let t = k as f64 * plasticine::fem::FLESH_STEP;
        flesh.advance_to(&c, |_| pose.clone(), t);
        energies.push(lattice_body(&flesh).energy().total());
    }
    // Rises below the CG's tolerance (1e-6 of the residual) are noise.
    let rises = energies
        .windows(2)
        .filter(|w| w[1] > w[0] + 1e-7 * energies[0])
        .count();
    eprintln!(
        "energy {:.3e} J after the first step, {:.3e} J after 1 s; {rises} rises",
        energies[0],
        energies[energies.len() - 1]
    );
    assert_eq!(rises, 0, "{energies:?}");
    assert!(energies[energies.len() - 1] < 0.5 * energies[0]);
    let kinetic = lattice_body(&flesh).energy().kinetic;
    assert!(kinetic < 1e-3 * energies[0], "still moving: {kinetic} J");
}

#[test]
fn bad_targets_are_refused_naming_the_field() {
    let c = penguin(Vec::new(), true);
    let rest = c.skeleton.rest_posture();
    let refused = |targets: Vec<MorphTarget>| {
        let mut d = c.clone();
        if let Flesh::Fem(f) = &mut d.flesh {
            f.morph_targets = targets;
        }
        d.validate().expect_err("refused")
    };
    let mut short = rest.clone();
    short.angles.pop();
    let e = refused(vec![target("short", short, Vec::new(), 1.0)]);
    assert_eq!(
        e.field, "flesh.Fem.morph_targets[0].posture.angles",
        "{e:?}"
    );
    let nan = vec![MorphOffset {
        at: Vec3::ZERO,
        offset: Vec3::new(f32::NAN, 0.0, 0.0),
    }];
    let e = refused(vec![target("nan", rest.clone(), nan, 1.0)]);
    assert_eq!(e.field, "flesh.Fem.morph_targets[0].offsets[0]");
    for s in [0.0, -1.0, f64::NAN] {
        let e = refused(vec![target("soft", rest.clone(), Vec::new(), s)]);
        assert_eq!(e.field, "flesh.Fem.morph_targets[0].stiffness");
    }
    let e = refused(vec![
        target("a", rest.clone(), Vec::new(), 1.0),
        target("b", rest.clone(), Vec::new(), 2.0),
    ]);
    assert_eq!(e.field, "flesh.Fem.morph_targets[1].posture");
    assert!(
        e.message.contains("'b'") && e.message.contains("'a'"),
        "{}",
        e.message
    );
    let mut t = target("part", rest.clone(), Vec::new(), 1.0);
    t.part_stiffness = vec![PartStiffness {
        joint: "tail".into(),
        scale: 2.0,
    }];
    let e = refused(vec![t]);
    assert_eq!(
        e.field,
        "flesh.Fem.morph_targets[0].part_stiffness[0].joint"
    );
    // The same target twice is one target.
    let mut d = c.clone();
    if let Flesh::Fem(f) = &mut d.flesh {
        f.morph_targets = vec![target("a", rest.clone(), Vec::new(), 1.0); 2];
    }
    d.validate().unwrap();
    FleshSim::new(&d, &rest, 0.0).unwrap();
}

#[test]
fn a_target_that_turns_a_cell_inside_out_is_refused_naming_it() {
    let plain = penguin(Vec::new(), true);
    let mut offsets = bulge(&plain, 0.01, 0.2);
    // One vertex thrown across the body, 0.3 m: its cells invert.
    offsets[0].offset = -offsets[0].at.with_y(0.0).normalize_or(Vec3::X) * 0.3;
    let c = penguin(
        vec![target("wild", plain.skeleton.rest_posture(), offsets, 1.0)],
        true,
    );
    let Err(e) = FleshSim::new(&c, &c.skeleton.rest_posture(), 0.0) else {
        panic!("a target that inverts cells was accepted");
    };
    assert!(matches!(e, FleshError::Morph(_)), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("'wild'") && text.contains("cell"), "{text}");
}

#[test]
fn an_animator_pulls_the_belly_at_a_key_and_keeps_it_as_a_target() {
    use crate::support::plasticine;
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let (p, q) = (path("p.ron"), path("q.ron"));
    let (ok, _, err) = plasticine(&["sample", "penguin", "--flesh", "fem", "--out", &p]);
    assert!(ok, "{err}");
    let (ok, out, err) = plasticine(&[
        "morph",
        "add",
        &p,
        "--name",
        "tucked",
        "--key",
        "1",
        "--pull",
        "belly:0,0,0.01",
        "--stiffness",
        "2",
        "--out",
        &q,
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("Kept 'tucked'") && out.contains("Added 'rest'"),
        "{out}"
    );
    let (ok, info, _) = plasticine(&["info", &q]);
    assert!(
        ok && info.contains("morph target 'tucked'") && info.contains("stiffness x2"),
        "{info}"
    );
    assert!(info.contains("morph target 'rest'"), "{info}");

    // At the key the flesh rests pulled forward (+z) at the belly, as far
    // as it was pulled; at rest it is the plain flesh.
    let (plain, kept) = (
        plasticine::io::load_character(std::path::Path::new(&p)).unwrap(),
        plasticine::io::load_character(std::path::Path::new(&q)).unwrap(),
    );
    let key = plain.key_postures[1].posture.clone();
    let moved = |posture: &Posture| {
        let (a, b) = (
            FleshSim::new(&plain, posture, 0.0).unwrap(),
            FleshSim::new(&kept, posture, 0.0).unwrap(),
        );
        let d: Vec<DVec3> = b.q().iter().zip(a.q()).map(|(x, y)| *x - *y).collect();
        let forward: f64 = d.iter().map(|v| v.z).fold(0.0, f64::max);
        // The stiffer target also sags less, which moves the flesh every
        // way; the pull moves it forward on the whole.
        let net: f64 = d.iter().map(|v| v.z).sum();
        (forward, net, largest(&d))
    };
    let (forward, net, _) = moved(&key);
    let (_, _, at_rest) = moved(&plain.skeleton.rest_posture());
    eprintln!(
        "at the key the flesh moved forward at most {:.1} mm, {:.1} mm summed over the lattice; at rest {:.1e} mm",
        forward * 1e3,
        net * 1e3,
        at_rest * 1e3
    );
    assert!(
        forward > 0.005 && forward < 0.05,
        "pulled 10 mm, moved {forward} m forward"
    );
    assert!(net > forward, "pulled forward, net {net} m");
    assert!(at_rest < 1e-9, "{at_rest}");

    // Clear refusals.
    let (ok, _, err) = plasticine(&["morph", "remove", &q, "--name", "nope", "--out", &q]);
    assert!(
        !ok && err.contains("no morph target 'nope'") && err.contains("tucked"),
        "{err}"
    );
    let kinematic = path("k.ron");
    plasticine(&["sample", "penguin", "--out", &kinematic]);
    let (ok, _, err) = plasticine(&[
        "morph",
        "add",
        &kinematic,
        "--name",
        "x",
        "--pull",
        "belly:0,0,0.01",
        "--out",
        &q,
    ]);
    assert!(!ok && err.contains("no FEM flesh"), "{err}");
    let (ok, _, err) = plasticine(&[
        "morph",
        "add",
        &q,
        "--name",
        "x",
        "--pull",
        "5,5,5:0,0,0.01",
        "--out",
        &q,
    ]);
    assert!(!ok && err.contains("does not grab the flesh"), "{err}");
    let (ok, _, err) = plasticine(&["morph", "remove", &q, "--name", "tucked", "--out", &q]);
    assert!(ok, "{err}");
    let (_, info, _) = plasticine(&["info", &q]);
    assert!(!info.contains("'tucked'"), "{info}");
}

/// An imported mesh's sculpted copy (a shape key on the rest mesh) kept as
/// the target at the bent key: the limb's upper arm bulges there, fitted
/// through the lattice, and not at rest.
#[test]
fn a_sculpted_copy_of_the_imported_mesh_is_a_target() {
    use crate::support::plasticine;
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let root = env!("CARGO_MANIFEST_DIR");
    let (limb, kept, flexed) = (path("limb.ron"), path("flex.ron"), path("flex.obj"));
    let (ok, _, err) = plasticine(&[
        "fem-import",
        &format!("{root}/assets/limb.obj"),
        "--skeleton",
        &format!("{root}/assets/limb_skeleton.ron"),
        "--out",
        &limb,
    ]);
    assert!(ok, "{err}");
    // The biceps: the upper side of the upper arm pushed out by up to 2 cm.
    let mesh = plasticine::io::load_mesh(std::path::Path::new(&format!("{root}/assets/limb.obj")))
        .unwrap();
    let sculpt: Vec<Vec3> = mesh
        .positions
        .iter()
        .map(|&p| {
            let radial = Vec3::new(0.0, p.y - 1.0, p.z);
            let up = (radial.y / radial.length().max(1e-9)).max(0.0);
            let along = ((p.x - 0.18) / 0.1).powi(2);
            radial.normalize_or_zero() * 0.02 * up * (-along).exp()
        })
        .collect();
    let mut obj = String::new();
    for (p, d) in mesh.positions.iter().zip(&sculpt) {
        let q = *p + *d;
        obj += &format!("v {} {} {}\n", q.x, q.y, q.z);
    }
    for t in &mesh.triangles {
        obj += &format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1);
    }
    std::fs::write(&flexed, obj).unwrap();
    let (ok, out, err) = plasticine(&[
        "morph", "add", &limb, "--name", "flex", "--key", "1", "--mesh", &flexed, "--out", &kept,
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("Kept 'flex' (306 offsets"), "{out}");

    let (plain, with) = (
        plasticine::io::load_character(std::path::Path::new(&limb)).unwrap(),
        plasticine::io::load_character(std::path::Path::new(&kept)).unwrap(),
    );
    let drawn = |c: &Character, p: &Posture| {
        FleshSim::new(c, p, 0.0)
            .unwrap()
            .pose(c, p, 0.0)
            .mesh
            .expect("the embedded mesh is drawn")
    };
    // The most sculpted vertex, in the bone's frame at rest: compare where
    // it is drawn at the key with and without the target.
    let (k, most) = sculpt
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.length().total_cmp(&b.1.length()))
        .unwrap();
    let key = plain.key_postures[1].posture.clone();
    let rest = plain.skeleton.rest_posture();
    let bulge = (drawn(&with, &key)[k] - drawn(&plain, &key)[k]).length();
    let at_rest = drawn(&with, &rest)
        .iter()
        .zip(drawn(&plain, &rest))
        .map(|(a, b)| a.distance(b))
        .fold(0.0, f32::max);
    eprintln!(
        "sculpted {:.1} mm, drawn {:.1} mm further out at the key; at rest {:.1e} mm",
        most.length() * 1e3,
        bulge * 1e3,
        at_rest * 1e3
    );
    assert!(
        bulge > 0.4 * most.length() && bulge < 1.5 * most.length(),
        "{bulge}"
    );
    assert!(at_rest < 1e-6, "{at_rest}");

    // A mesh with other vertices is refused, naming both counts.
    let short = path("short.obj");
    std::fs::write(&short, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n").unwrap();
    let (ok, _, err) = plasticine(&[
        "morph", "add", &limb, "--name", "x", "--mesh", &short, "--out", &kept,
    ]);
    assert!(
        !ok && err.contains("has 3 vertices") && err.contains("306"),
        "{err}"
    );
}
