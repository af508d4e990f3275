//! Blendshapes on a character (Ma et al. 2012 in the app): a rig attached
//! to an FEM character's embedded mesh, its weights keyed with the
//! postures, the blend carried by the flesh into the drawn mesh, the bake
//! and its exports, as a user runs it. Run with `--nocapture` for the
//! numbers.

use crate::support::meshes::{LIMB_BULGE, capsule, limb_flexed, limb_mesh, obj_text};
use crate::support::plasticine;
use glam::{Quat, Vec3};
use plasticine::character::{BlendTarget, Blendshapes, Boundary, Character, SpringConstants};
use plasticine::fem::{MeshImport, fem_character_from_mesh};
use plasticine::io::{CacheReader, load_character};
use plasticine::skin::{Simulation, SkeletonDriver, SolverSettings};
use std::path::Path;

/// The sample limb imported as FEM flesh with the flexed biceps as a target.
fn flexing_limb(linear: bool) -> Character {
    let mesh = limb_mesh();
    let skeleton = plasticine::io::load_character(Path::new("assets/limb_skeleton.ron")).unwrap();
    let options = MeshImport {
        name: "limb".into(),
        source: "limb.obj".into(),
        scale: 1.0,
        translate: Vec3::ZERO,
        target_vertices: Some(120),
        young: None,
        poisson: None,
        density: None,
    };
    let (mut c, _) =
        fem_character_from_mesh(&mesh.positions, &mesh.triangles, &skeleton, &options).unwrap();
    c.flesh.fem_mut().unwrap().blendshapes = Some(Box::new(Blendshapes {
        targets: vec![BlendTarget {
            name: "flexed".into(),
            positions: limb_flexed().positions,
        }],
        boundary: Boundary::Anchor,
        interior: true,
        constants: SpringConstants::default(),
        linear,
    }));
    c.validate().unwrap();
    c
}

/// The drawn embedded mesh of `c` held at `posture` with the flexed weight `w`.
fn drawn(c: &Character, angles: &[Vec3], w: Option<f32>) -> Vec<Vec3> {
    let mut posture = c.skeleton.rest_posture();
    posture.angles.copy_from_slice(angles);
    posture.blend = w.into_iter().collect();
    let sim = Simulation::new(
        c.clone(),
        SkeletonDriver::Still(posture),
        SolverSettings::default(),
    )
    .unwrap();
    assert!(sim.blend_failure().is_none(), "{:?}", sim.blend_failure());
    sim.flesh_pose().unwrap().mesh.unwrap()
}

#[test]
fn a_blendshape_reshapes_the_embedded_mesh_and_turns_with_the_flesh() {
    let c = flexing_limb(false);
    let base = limb_mesh().positions;
    let target = limb_flexed().positions;
    let rest = [Vec3::ZERO; 3];
    let plain = drawn(&c, &rest, None);
    let flexed = drawn(&c, &rest, Some(1.0));
    // At rest the flesh carries the blend as it is: the drawn change is the
    // target's (F ≈ I; the sag under gravity bends it a little).
    let mut worst = 0f32;
    for k in 0..base.len() {
        let want = target[k] - base[k];
        worst = worst.max((flexed[k] - plain[k] - want).length());
    }
    eprintln!("at rest: drawn change vs the target's within {worst:.2e} m (bulge {LIMB_BULGE} m)");
    assert!(worst < 0.05 * LIMB_BULGE, "{worst}");

    // The shoulder turned 90° about z: the bulge turns with the arm.
    let turn = [
        Vec3::new(0.0, 0.0, std::f32::consts::FRAC_PI_2),
        Vec3::ZERO,
        Vec3::ZERO,
    ];
    let plain = drawn(&c, &turn, None);
    let flexed = drawn(&c, &turn, Some(1.0));
    let r = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
    let peak = (0..base.len())
        .max_by(|&a, &b| {
            (target[a] - base[a])
                .length()
                .total_cmp(&(target[b] - base[b]).length())
        })
        .unwrap();
    let want = r * (target[peak] - base[peak]);
    let got = flexed[peak] - plain[peak];
    eprintln!("turned: the peak moves {got:?}, the turned target's {want:?}");
    assert!(
        got.angle_between(want) < 5f32.to_radians(),
        "{got:?} vs {want:?}"
    );
    assert!((got.length() / want.length() - 1.0).abs() < 0.05);
    // Without weights, the blendshapes change nothing.
    let zero = drawn(&c, &turn, Some(0.0));
    let moved = zero
        .iter()
        .zip(&plain)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    assert!(moved < 1e-6 * LIMB_BULGE, "{moved}");
}

#[test]
fn the_linear_switch_blends_the_positions_linearly() {
    let c = flexing_limb(true);
    let rest = [Vec3::ZERO; 3];
    let plain = drawn(&c, &rest, None);
    let half = drawn(&c, &rest, Some(0.5));
    let full = drawn(&c, &rest, Some(1.0));
    let worst = (0..plain.len())
        .map(|k| ((half[k] - plain[k]) * 2.0 - (full[k] - plain[k])).length())
        .fold(0.0, f32::max);
    eprintln!("linear: 2 × half − full within {worst:.2e} m");
    assert!(worst < 1e-5 * LIMB_BULGE, "{worst}");
}

#[test]
fn keyed_weights_play_back_between_their_keys() {
    let mut c = flexing_limb(false);
    // Hold the arm still; flex over one second.
    for key in &mut c.key_postures {
        key.posture.angles.iter_mut().for_each(|a| *a = Vec3::ZERO);
    }
    c.key_postures.truncate(1);
    let mut flexed = c.key_postures[0].clone();
    flexed.time = 1.0;
    flexed.posture.blend = vec![1.0];
    c.key_postures.push(flexed);
    c.validate().unwrap();
    let peak = {
        let (b, t) = (limb_mesh().positions, limb_flexed().positions);
        (0..b.len())
            .max_by(|&x, &y| (t[x] - b[x]).length().total_cmp(&(t[y] - b[y]).length()))
            .unwrap()
    };
    let still = drawn(&c, &[Vec3::ZERO; 3], None);
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let mut sim = Simulation::new(c, driver, SolverSettings::default()).unwrap();
    let mut last = 0.0;
    for t in [0.25, 0.5, 0.75, 1.0] {
        sim.advance_to(t, None).unwrap();
        let pose = sim.flesh_pose().unwrap();
        // The status line's weights are those drawn.
        let (names, weights): (Vec<String>, Vec<f32>) =
            pose.blend_weights.0.iter().cloned().unzip();
        assert_eq!(names, ["flexed"]);
        assert!(pose.blend_weights.1.is_none());
        let mesh = pose.mesh.unwrap();
        let bulge = (mesh[peak] - still[peak]).length() / LIMB_BULGE;
        eprintln!(
            "t = {t}: weight {:.3}, the biceps at {bulge:.3} of its bulge",
            weights[0]
        );
        assert!(
            (bulge - weights[0]).abs() < 0.05,
            "{bulge} at weight {}",
            weights[0]
        );
        assert!(bulge >= last - 0.01, "the flex grows: {bulge} after {last}");
        last = bulge;
    }
    assert!((last - 1.0).abs() < 0.05, "fully flexed at the key: {last}");
}

#[test]
fn attach_key_bake_and_export_as_a_user_runs_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    // The limb placed 1.1× larger (and back onto its shoulder) by
    // fem-import: attach fits the rig (made in the mesh file's units) to
    // where the mesh went.
    let (ok, _, e) = plasticine(&[
        "fem-import",
        "assets/limb.obj",
        "--skeleton",
        "assets/limb_skeleton.ron",
        "--scale",
        "1.1",
        "--translate",
        "-0.01,-0.1,0",
        "--out",
        &path("limb.ron"),
    ]);
    assert!(ok, "{e}");
    let (ok, _, e) = plasticine(&[
        "blendshape",
        "import",
        "assets/limb.obj",
        "assets/limb_flexed.obj",
        "--out",
        &path("rig.ron"),
    ]);
    assert!(ok, "{e}");
    let (ok, out, e) = plasticine(&[
        "blendshape",
        "attach",
        &path("limb.ron"),
        &path("rig.ron"),
        "--out",
        &path("flex.ron"),
    ]);
    assert!(ok, "{e}");
    assert!(out.contains("attached 1 targets (limb_flexed)"), "{out}");
    let c = load_character(Path::new(&path("flex.ron"))).unwrap();
    let shapes = c.blendshapes().expect("the rig's targets");
    let placed = |p: Vec3| p * 1.1 + Vec3::new(-0.01, -0.1, 0.0);
    let off = shapes.targets[0]
        .positions
        .iter()
        .zip(&limb_flexed().positions)
        .map(|(a, b)| a.distance(placed(*b)))
        .fold(0.0, f32::max);
    assert!(off < 1e-5, "the target placed as the mesh was: {off}");

    // Flex at the middle key (0.5 s), then bake 0.5 s with and without.
    let (ok, out, e) = plasticine(&[
        "blendshape",
        "key",
        &path("flex.ron"),
        "--time",
        "0.5",
        "--weight",
        "limb_flexed=1",
        "--out",
        &path("keyed.ron"),
    ]);
    assert!(ok, "{e}");
    assert!(out.contains("keyed limb_flexed=1 at 0.500 s"), "{out}");
    let (ok, info, e) = plasticine(&["info", &path("keyed.ron")]);
    assert!(ok, "{e}");
    assert!(
        info.contains(
            "blendshapes: 1 targets (limb_flexed), physical blend; 1 key postures weight them"
        ),
        "{info}"
    );
    let keyed = load_character(Path::new(&path("keyed.ron"))).unwrap();
    assert_eq!(keyed.key_postures.len(), c.key_postures.len());
    assert_eq!(keyed.key_postures[1].posture.blend, vec![1.0]);
    let bake = |character: &str, out: &str| {
        let (ok, _, e) = plasticine(&[
            "bake",
            &path(character),
            "--out",
            &path(out),
            "--fps",
            "10",
            "--duration",
            "0.5",
        ]);
        assert!(ok, "{e}");
        let mut r = CacheReader::open(&dir.path().join(out).join("bake.plcache")).unwrap();
        let n = r.frame_count();
        let (mut s, mut m, mut u) = (Vec::new(), Vec::new(), Vec::new());
        r.read_frame_with_flesh(n - 1, &mut s, &mut m, &mut u)
            .unwrap();
        m.swap_remove(0)
    };
    let flexed = bake("keyed.ron", "flexed");
    let plain = bake("flex.ron", "plain");
    let bulge = flexed
        .iter()
        .zip(&plain)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    eprintln!("baked: the keyed flex moves the mesh up to {bulge:.4} m at 0.5 s");
    assert!(
        (bulge / (1.1 * LIMB_BULGE) - 1.0).abs() < 0.15,
        "the scaled bulge: {bulge}"
    );
    let (ok, _, e) = plasticine(&[
        "export",
        &path("keyed.ron"),
        "--baked",
        &path("flexed/bake.plcache"),
        "--out",
        &path("flexed.glb"),
    ]);
    assert!(ok, "{e}");
}

#[test]
fn bad_blendshape_input_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    // A posture with weights on a character without blendshapes.
    let mut c = flexing_limb(false);
    c.flesh.fem_mut().unwrap().blendshapes = None;
    c.key_postures[1].posture.blend = vec![0.5];
    let e = c.validate().unwrap_err();
    assert_eq!(e.field, "key_postures[1].posture.blend", "{e}");
    // Weights past the simplex.
    let mut c = flexing_limb(false);
    c.key_postures[1].posture.blend = vec![1.5];
    assert_eq!(
        c.validate().unwrap_err().field,
        "key_postures[1].posture.blend[0]"
    );
    // A target with another vertex count than the embedded mesh.
    let mut c = flexing_limb(false);
    let shapes = c.flesh.fem_mut().unwrap().blendshapes.as_mut().unwrap();
    shapes.targets[0].positions.pop();
    let e = c.validate().unwrap_err();
    assert_eq!(e.field, "flesh.Fem.blendshapes.targets[0].positions", "{e}");

    // A target with a collapsed edge passes the file's checks but not the
    // springs': the simulation refuses it, naming the target.
    let mut c = flexing_limb(false);
    let (a, b) = {
        let t = &limb_mesh().triangles[0];
        (t[0] as usize, t[1] as usize)
    };
    let shapes = c.flesh.fem_mut().unwrap().blendshapes.as_mut().unwrap();
    shapes.targets[0].positions[b] = shapes.targets[0].positions[a];
    let Err(e) = Simulation::new(
        c,
        SkeletonDriver::Still(flexing_limb(false).skeleton.rest_posture()),
        SolverSettings::default(),
    ) else {
        panic!("a collapsed target edge must be refused");
    };
    let e = e.to_string();
    assert!(e.starts_with("blendshapes: target 'flexed'"), "{e}");
    assert!(e.contains("zero length"), "{e}");

    // attach: a rig of another mesh.
    let other = capsule(0.0, 0.2, 0.05, Vec3::Y, 8, 2, 4);
    std::fs::write(path("other.obj"), obj_text(&other)).unwrap();
    let (ok, _, e) = plasticine(&[
        "fem-import",
        "assets/limb.obj",
        "--skeleton",
        "assets/limb_skeleton.ron",
        "--out",
        &path("limb.ron"),
    ]);
    assert!(ok, "{e}");
    let mut bumped = other.clone();
    bumped.positions[3] += Vec3::splat(0.01);
    std::fs::write(path("bumped.obj"), obj_text(&bumped)).unwrap();
    let (ok, _, e) = plasticine(&[
        "blendshape",
        "import",
        &path("other.obj"),
        &path("bumped.obj"),
        "--out",
        &path("rig.ron"),
    ]);
    assert!(ok, "{e}");
    let (ok, _, e) = plasticine(&[
        "blendshape",
        "attach",
        &path("limb.ron"),
        &path("rig.ron"),
        "--out",
        &path("out.ron"),
    ]);
    assert!(!ok);
    assert!(e.contains("is not the character's embedded mesh"), "{e}");
    assert!(!dir.path().join("out.ron").exists());
    // key: an unknown target, and a character without blendshapes.
    let (ok, _, e) = plasticine(&[
        "blendshape",
        "key",
        &path("limb.ron"),
        "--time",
        "0.5",
        "--weight",
        "smile=1",
        "--out",
        &path("out.ron"),
    ]);
    assert!(!ok);
    assert!(e.contains("has no blendshapes"), "{e}");
    assert!(!dir.path().join("out.ron").exists());
}

#[test]
fn the_hand_dents_the_blend_and_it_recovers_when_let_go() {
    use glam::DVec3;
    use plasticine::contact::Capsule;
    let c = flexing_limb(false);
    // The arm turned up (shoulder 90° about z): the hand's ball is taken
    // back through the flesh into the blend's rest frame.
    let mut posture = c.skeleton.rest_posture();
    posture.angles[0] = Vec3::new(0.0, 0.0, std::f32::consts::FRAC_PI_2);
    posture.blend = vec![0.5];
    let mut sim =
        Simulation::new(c, SkeletonDriver::Still(posture), SolverSettings::default()).unwrap();
    let before = sim.flesh_pose().unwrap().mesh.unwrap();
    // A 3 cm ball 1.5 cm into the upper arm's side (the arm's axis is now
    // x = 0 from y = 1 up; its radius 6 cm).
    let (centre, radius) = (DVec3::new(0.075, 1.15, 0.0), 0.03);
    let depth = |mesh: &[Vec3]| {
        mesh.iter()
            .map(|p| radius - p.as_dvec3().distance(centre))
            .fold(f64::MIN, f64::max)
    };
    let inside = depth(&before);
    assert!(inside > 0.01, "the ball reaches into the arm: {inside}");
    sim.set_pushers(vec![Capsule::hand(
        centre,
        centre,
        radius,
        DVec3::ZERO,
        0.0,
    )])
    .unwrap();
    let pose = sim.flesh_pose().unwrap();
    assert!(pose.blend_weights.1.is_none(), "{:?}", pose.blend_weights.1);
    let dented = pose.mesh.unwrap();
    let left = depth(&dented);
    let far = dented
        .iter()
        .zip(&before)
        .filter(|(p, _)| p.as_dvec3().distance(centre) > 0.15)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    eprintln!(
        "dent: {inside:.4} m inside before, {left:.5} m after; 15 cm away the mesh moved {far:.2e} m"
    );
    assert!(left < 1e-3, "the surface is held on the ball: {left}");
    // The springs spread a push (the interior keeps the volume), but the
    // dent is where the hand is.
    assert!(f64::from(far) < 0.4 * inside, "the dent stays local: {far}");
    // Let go: the blend recovers.
    sim.set_pushers(Vec::new()).unwrap();
    let after = sim.flesh_pose().unwrap().mesh.unwrap();
    let back = after
        .iter()
        .zip(&before)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    eprintln!("let go: within {back:.2e} m of the undented blend");
    assert!(back < 1e-4, "{back}");
}

/// A bake of keyed blendshapes cancelled after three frames and resumed
/// writes the bytes of the uninterrupted one (each frame's blend depends on
/// its weights alone, not on the solve before it).
#[test]
fn a_resumed_bake_of_keyed_blendshapes_equals_the_uninterrupted_one() {
    use plasticine::bake::BakeOptions;
    let mut c = flexing_limb(false);
    c.key_postures[1].posture.blend = vec![1.0];
    c.key_postures[2].posture.blend = vec![0.3];
    let dir = tempfile::tempdir().unwrap();
    let opts = BakeOptions {
        fps: 10.0,
        duration: Some(1.0),
        ..BakeOptions::default()
    };
    let (a, b) = crate::support::bake_whole_and_resumed(&c, &opts, dir.path(), 3, |_| {});
    assert!(a == b, "the resumed cache equals the uninterrupted one");
}

/// A sculpt stroke on a running simulation's target (`set_character` with
/// only the target's shape changed, as each sculpt frame sends) is taken in
/// without rebuilding the springs, and the drawn mesh is the one a
/// simulation built from the sculpted character draws.
#[test]
fn a_sculpted_target_reaches_the_running_blend_as_a_fresh_one_draws_it() {
    let c = flexing_limb(false);
    let mut posture = c.skeleton.rest_posture();
    posture.blend = vec![1.0];
    let driver = SkeletonDriver::Still(posture);
    let mut sim = Simulation::new(c.clone(), driver.clone(), SolverSettings::default()).unwrap();
    let before = sim.flesh_pose().unwrap().mesh.unwrap();
    let mut sculpted = c.clone();
    let shapes = sculpted
        .flesh
        .fem_mut()
        .unwrap()
        .blendshapes
        .as_mut()
        .unwrap();
    let centre = shapes.targets[0].positions[40];
    for p in &mut shapes.targets[0].positions {
        let d2 = p.distance_squared(centre) / (0.05 * 0.05);
        *p += Vec3::new(0.0, 0.01, 0.0) * (-2.0 * d2).exp();
    }
    sim.set_character(sculpted.clone()).unwrap();
    assert!(sim.blend_failure().is_none(), "{:?}", sim.blend_failure());
    let live = sim.flesh_pose().unwrap().mesh.unwrap();
    let fresh = Simulation::new(sculpted, driver, SolverSettings::default()).unwrap();
    let want = fresh.flesh_pose().unwrap().mesh.unwrap();
    let gap = live
        .iter()
        .zip(&want)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    let moved = live
        .iter()
        .zip(&before)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    eprintln!("sculpted 1 cm: the live blend moved {moved:.4} m, {gap:.1e} m from a fresh one");
    assert!(moved > 0.005, "the stroke shows: {moved}");
    assert!(gap < 1e-5, "as a fresh simulation draws it: {gap}");
}

/// The character's muscles are obstacles of its blend (Ma et al. §4): a
/// muscle set where the flexed target's bulge would go (and clear of the
/// base) flattens the bulge against it, its vertex held on the muscle's
/// surface; without the muscle the bulge goes into it.
#[test]
fn the_blend_stays_out_of_the_characters_muscles() {
    use plasticine::character::Muscle;
    use plasticine::kinematics::PosedBody;
    use plasticine::shape::MuscleShape;
    use plasticine::skin::BlendRun;
    let mut c = flexing_limb(false);
    let blend = c.flesh.fem().unwrap().blendshapes.clone().unwrap();
    let base = c
        .flesh
        .fem()
        .unwrap()
        .embedded_mesh
        .clone()
        .unwrap()
        .positions;
    let flexed = &blend.targets[0].positions;
    // The vertex the bulge moves furthest, and a ball half a bulge past it.
    let v = (0..base.len())
        .max_by(|&a, &b| {
            (flexed[a] - base[a])
                .length()
                .total_cmp(&(flexed[b] - base[b]).length())
        })
        .unwrap();
    let bulge = flexed[v] - base[v];
    let radius = 0.75 * bulge.length();
    let centre = flexed[v] + bulge.normalize() * (0.5 * radius);
    let joints = PosedBody::new(&c, &c.skeleton.rest_posture()).joints;
    let solved = |c: &Character| {
        let mut run = BlendRun::build(c).unwrap().expect("a rig");
        let offsets = run.offsets(&[1.0]).to_vec();
        assert!(run.failure().is_none(), "{:?}", run.failure());
        base[v].as_dvec3() + offsets[v]
    };
    let free = solved(&c);
    let gap = |p: glam::DVec3| p.distance(centre.as_dvec3()) - f64::from(radius);
    assert!(
        gap(free) < -0.3 * f64::from(radius),
        "unpushed gap {}",
        gap(free)
    );
    c.muscles.push(Muscle {
        joint: 0,
        offset: joints[0].inverse().transform_point3(centre),
        rotation: Quat::IDENTITY,
        shape: MuscleShape::sphere(radius),
        drivers: Vec::new(),
        color: None,
    });
    let pushed = solved(&c);
    assert!(
        gap(pushed) > -1e-4 * f64::from(radius),
        "pushed gap {} (radius {radius})",
        gap(pushed)
    );
}
