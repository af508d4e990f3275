//! FEM flesh coupled to the muscles and the skin: the muscles
//! follow through where kinematic ones stop dead, the bones carry their
//! flesh exactly, the skin stays outside the deformed muscles (LEMAN
//! §4.2.3), a grab (Capell §4.4) holds its point at the hand, and painted
//! region weights (§4.5) stay a partition of unity.

use crate::support::limb;

use glam::{DVec3, Vec3};
use plasticine::character::{Character, EmbeddedMesh, FemFlesh, Flesh, Posture, WeightStroke};
use plasticine::fem::painted_weights;
use plasticine::fem::{FleshBody, FleshError, FleshSim, Lattice, bone_transforms, bone_weights};
use plasticine::kinematics::PosedBody;
use plasticine::skin::{SimError, Simulation, SkeletonDriver, SolverSettings};

fn with_fem(mut c: Character) -> Character {
    c.flesh = Flesh::Fem(FemFlesh::default());
    c
}

fn fem_penguin() -> Character {
    with_fem(plasticine::samples::bare("penguin").unwrap())
}

/// The left flipper raised by 0.8 rad and the head nodded by 0.4 rad.
fn flapped(c: &Character) -> Posture {
    let mut p = c.skeleton.rest_posture();
    p.angles[c.skeleton.find("flipper_l").unwrap()] = Vec3::new(0.0, 0.0, 0.8);
    p.angles[c.skeleton.find("head").unwrap()] = Vec3::new(0.4, 0.0, 0.0);
    p
}

/// The skeleton swings from rest to `flapped` over [0, 0.25] s, then holds.
fn swing(c: &Character) -> SkeletonDriver {
    SkeletonDriver::Blend {
        from: c.skeleton.rest_posture(),
        to: flapped(c),
        t0: 0.0,
        t1: 0.25,
    }
}

/// World centre of every muscle at each 1/120 s from 0.25 s (the skeleton
/// has stopped) to 4 s.
fn centres_after_stop(c: Character) -> Vec<Vec<Vec3>> {
    let driver = swing(&c);
    let mut sim = Simulation::new(c, driver, SolverSettings::default()).unwrap();
    let mut out = Vec::new();
    for f in 1..=480 {
        let t = f as f64 / 120.0;
        sim.advance_to(t, None).unwrap();
        if t >= 0.25 {
            out.push(sim.posed_body(t).muscles.iter().map(|m| m.center).collect());
        }
    }
    out
}

/// After the skeleton stops, an FEM muscle keeps moving: it overshoots its
/// rest place (the displacement's component along the first one changes
/// sign), and the oscillation decays. Kinematic muscles stop dead.
#[test]
fn fem_muscles_follow_through_and_settle_where_kinematic_ones_stop() {
    let kinematic = centres_after_stop(plasticine::samples::bare("penguin").unwrap());
    let still = kinematic.last().unwrap();
    for frame in &kinematic {
        for (a, b) in frame.iter().zip(still) {
            assert_eq!(a, b, "a kinematic muscle moved after the skeleton stopped");
        }
    }
    let fem = centres_after_stop(fem_penguin());
    let rest = fem.last().unwrap().clone();
    // The beak (muscle 3) sits off its bone, in free flesh.
    let k = 3;
    let d = |f: &Vec<Vec3>| f[k] - rest[k];
    let first = d(&fem[0]);
    let peak = fem.iter().map(|f| d(f).length()).fold(0.0f32, f32::max);
    let mut crossings = 0;
    for w in fem.windows(2) {
        if d(&w[0]).dot(first).signum() != d(&w[1]).dot(first).signum() {
            crossings += 1;
        }
    }
    let late = fem[fem.len() - 60..]
        .iter()
        .map(|f| d(f).length())
        .fold(0.0f32, f32::max);
    println!(
        "beak after the stop: first {:.3} mm, peak {:.3} mm, {crossings} sign changes, \
         last half second within {:.5} mm",
        first.length() * 1e3,
        peak * 1e3,
        late * 1e3
    );
    assert!(
        peak > 3e-4,
        "the flesh stopped with the skeleton ({peak} m)"
    );
    assert!(crossings >= 3, "no overshoot: {crossings} sign changes");
    assert!(late < 0.02 * peak, "not settled: {late} m of {peak} m");
}

/// Vertices bound to a bone move exactly with it (eq. 17–18) at every step
/// of a swing, and a muscle whose flesh moves rigidly lands where the
/// kinematic model puts it.
#[test]
fn bone_attached_flesh_stays_on_the_bones() {
    let c = fem_penguin();
    let driver = swing(&c);
    let mut flesh = FleshSim::new(&c, &driver.posture_at(0.0), 0.0).unwrap();
    let bound = flesh
        .lattice()
        .bone_of_vertex
        .iter()
        .filter(|b| b.is_some())
        .count();
    // Bones are snapped onto chains of lattice edges: every bone holds at
    // least one vertex (a chain, or a fallback bound by distance).
    let lattice = flesh.lattice();
    for b in 0..lattice.bones.len() {
        let n = lattice
            .bone_of_vertex
            .iter()
            .filter(|x| **x == Some(b))
            .count();
        assert!(n >= 1, "bone {b} holds no vertex");
    }
    assert!(bound > lattice.bones.len(), "only {bound} bone vertices");
    let mut worst = 0.0f64;
    let mut wall = std::time::Duration::ZERO;
    for f in 1..=60 {
        let t = f as f64 / 120.0;
        let start = std::time::Instant::now();
        flesh.advance_to(&c, |t| driver.posture_at(t), t);
        wall += start.elapsed();
        let bones = bone_transforms(&c, flesh.body.bones(), &driver.posture_at(t));
        let l = flesh.lattice();
        for (a, b) in l.bone_of_vertex.iter().enumerate() {
            if let Some(b) = b {
                let want = bones[*b].transform_point3(l.rest[a]);
                worst = worst.max((l.rest[a] + flesh.q()[a] - want).length());
            }
        }
    }
    println!("bone vertices off their bones by at most {worst:e} m");
    // Cost (informational, never asserted): this build's profile.
    println!(
        "penguin flesh: {} vertices, {} regions, {:.3} ms and {:.1} CG iterations per step of 1/120 s",
        flesh.lattice().vertex_count(),
        flesh.body.region_count(),
        wall.as_secs_f64() * 1e3 / flesh.steps as f64,
        flesh.cg_iterations as f64 / flesh.steps as f64
    );
    assert!(worst < 1e-12, "{worst}");

    // Flesh displaced rigidly carries its muscles rigidly.
    let q: Vec<DVec3> = {
        let l = flesh.lattice();
        let t = glam::DAffine3::from_rotation_translation(
            glam::DQuat::from_rotation_y(0.3),
            DVec3::new(0.01, 0.02, 0.0),
        );
        l.rest.iter().map(|&r| t.transform_point3(r) - r).collect()
    };
    let offsets = flesh.muscle_offsets_for(&c, &c.skeleton.rest_posture(), &q);
    let moved = PosedBody::with_muscle_offsets(&c, &c.skeleton.rest_posture(), &offsets);
    let rest = PosedBody::new(&c, &c.skeleton.rest_posture());
    let t = glam::Affine3A::from_rotation_translation(
        glam::Quat::from_rotation_y(0.3),
        Vec3::new(0.01, 0.02, 0.0),
    );
    for (m, r) in moved.muscles.iter().zip(&rest.muscles) {
        let want = t * r.to_world;
        let err = (m.to_world.matrix3 - want.matrix3)
            .abs()
            .to_cols_array()
            .iter()
            .fold(0.0f32, |a, &b| a.max(b))
            + (Vec3::from(m.to_world.translation) - Vec3::from(want.translation)).length();
        assert!(err < 1e-5, "a rigidly carried muscle is off by {err}");
    }
}

/// §4.2.3 with FEM flesh: on the penguin's waddle no inner fat point enters
/// a muscle where the flesh has put it (which is not where the kinematic
/// model would), checked at every frame by brute force per skin. The body's
/// skin wraps the flesh-driven trunk; the thin flippers' skins fold, and the
/// normals recomputed after the projection leave a larger residual there
/// (as with kinematic muscles, `tests/skin_physics.rs`).
#[test]
fn no_skin_point_enters_a_deformed_muscle() {
    let c = plasticine::io::load_character(std::path::Path::new("assets/penguin.ron")).unwrap();
    let c = with_fem(c);
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let fat = c.skins[0].points.fat[0];
    let mut sim = Simulation::new(c, driver, SolverSettings::default()).unwrap();
    let mut worst = vec![0.0f32; sim.character.skins.len()];
    let mut moved = 0.0f32;
    for f in 1..=90 {
        let t = f as f64 / 60.0;
        sim.advance_to(t, None).unwrap();
        let body = sim.posed_body(t);
        let mut frame = 0.0f32;
        for (w, skin) in worst.iter_mut().zip(&sim.character.skins) {
            let grid = plasticine::skin::Grid::of(skin);
            let d = plasticine::skin::deepest_penetration(
                &grid,
                &skin.points.fat,
                &body,
                &skin.muscles,
                &skin.points.position,
            );
            *w = w.max(d);
            frame = frame.max(d);
        }
        // The simulation's own check measures against the same flesh pose.
        assert_eq!(sim.deepest_penetration(), frame);
        let rigid = PosedBody::new(&sim.character, &sim.driver.posture_at(t));
        for (a, b) in body.muscles.iter().zip(&rigid.muscles) {
            moved = moved.max(a.center.distance(b.center));
        }
    }
    println!(
        "deepest penetration per skin {:?} mm (fat {:.1} mm); muscles up to {:.3} mm off their kinematic place",
        worst.iter().map(|w| w * 1e3).collect::<Vec<_>>(),
        fat * 1e3,
        moved * 1e3
    );
    assert!(
        moved > 5e-4,
        "the flesh did not move the muscles ({moved} m)"
    );
    assert!(
        worst[0] < 0.05 * fat,
        "body skin: {} m with fat {fat} m",
        worst[0]
    );
    for (s, w) in worst.iter().enumerate() {
        assert!(*w < 0.5 * fat, "skin {s}: {w} m with fat {fat} m");
    }
}

/// §4.4: a grabbed point follows the hand within the solver's tolerance, the
/// flesh around it stretches, and on release it springs back.
#[test]
fn a_grab_pulls_the_point_to_the_hand_and_lets_go() {
    let c = fem_penguin();
    let rest_posture = c.skeleton.rest_posture();
    let mut flesh = FleshSim::new(&c, &rest_posture, 0.0).unwrap();
    // The free vertex farthest from every bone: the belly's front.
    let l = flesh.lattice();
    let a = (0..l.vertex_count())
        .filter(|&a| l.bone_of_vertex[a].is_none())
        .max_by(|&x, &y| {
            let d = |a: usize| {
                l.bones
                    .iter()
                    .map(|b| b.distance(l.rest[a]))
                    .fold(f64::MAX, f64::min)
            };
            d(x).total_cmp(&d(y))
        })
        .unwrap();
    // A point a little inside from it, in a cell of free flesh.
    let start = (l.rest[a] + flesh.q()[a]).as_vec3() * 0.97;
    let id = flesh.grab(start).expect("the point is in the flesh");
    assert!(flesh.grabbed_position(id).unwrap().distance(start) < 1e-6);
    let hand = start + Vec3::new(0.0, 0.0, 0.02);
    flesh.move_grab(id, hand);
    let mut t = 0.0;
    let mut worst_after_first = 0.0f32;
    for _ in 0..120 {
        t += 1.0 / 120.0;
        flesh.advance_to(&c, |_| rest_posture.clone(), t);
        worst_after_first =
            worst_after_first.max(flesh.grabbed_position(id).unwrap().distance(hand));
    }
    println!(
        "grabbed point off the hand by at most {:e} m",
        worst_after_first
    );
    assert!(worst_after_first < 1e-6, "{worst_after_first}");
    // The neighbourhood stretched towards the hand.
    let pulled = flesh.q()[a].z;
    assert!(
        pulled > 0.005,
        "the flesh around the grab moved only {pulled} m"
    );
    let embedding = flesh.grabs()[0].embedding;
    assert!(flesh.release(id));
    assert!(flesh.grabs().is_empty() && !flesh.release(id));
    for _ in 0..480 {
        t += 1.0 / 120.0;
        flesh.advance_to(&c, |_| rest_posture.clone(), t);
    }
    let back = flesh.lattice().deform(&embedding, flesh.q()).as_vec3();
    println!(
        "4 s after the release the point is {:.4} mm from where it was grabbed",
        back.distance(start) * 1e3
    );
    assert!(back.distance(start) < 5e-4, "{}", back.distance(start));
    // Outside the flesh nothing is grabbed.
    assert!(flesh.grab(Vec3::new(5.0, 5.0, 5.0)).is_none());
}

/// §4.5: a painted stroke raises its bone's weight inside its radius only,
/// and the weights stay a partition of unity; the regions are rebuilt from
/// them.
#[test]
fn a_painted_stroke_changes_the_weights_where_painted_only() {
    let c = fem_penguin();
    let flesh = FleshSim::new(&c, &c.skeleton.rest_posture(), 0.0).unwrap();
    let l = flesh.lattice();
    let width = 0.05;
    let auto = bone_weights(l, width);
    // Paint bone 0 (base→belly) around the free vertex nearest the chest's
    // side, where it has no weight, over a cell and a half.
    let chest = DVec3::new(0.1, 0.35, 0.05);
    let v = (0..l.vertex_count())
        .filter(|&a| l.bone_of_vertex[a].is_none() && auto[0][a] == 0.0)
        .min_by(|&x, &y| {
            l.rest[x]
                .distance(chest)
                .total_cmp(&l.rest[y].distance(chest))
        })
        .unwrap();
    let centre = l.rest[v].as_vec3();
    let radius = 1.5 * l.cell_size.x as f32;
    let stroke = WeightStroke {
        bone: 0,
        centre,
        radius,
        amount: 0.8,
    };
    let painted = painted_weights(l, width, std::slice::from_ref(&stroke)).unwrap();
    let (mut inside_changed, mut outside_changed) = (0, 0);
    let mut partition = 0.0f64;
    for a in 0..l.vertex_count() {
        let sum: f64 = painted.iter().map(|w| w[a]).sum();
        partition = partition.max((sum - 1.0).abs());
        let d = l.rest[a].distance(centre.as_dvec3());
        let changed = (0..painted.len()).any(|i| painted[i][a] != auto[i][a]);
        if d < radius as f64 && l.bone_of_vertex[a].is_none() {
            assert!(painted[0][a] > auto[0][a], "vertex {a} inside the stroke");
            inside_changed += changed as usize;
        } else {
            outside_changed += changed as usize;
        }
    }
    println!(
        "stroke changed {inside_changed} vertices inside, {outside_changed} outside; partition error {partition:e}"
    );
    assert!(inside_changed >= 3, "{inside_changed}");
    assert_eq!(outside_changed, 0);
    assert!(partition < 1e-12);

    // The runtime uses them.
    let mut painted_c = c.clone();
    if let Flesh::Fem(f) = &mut painted_c.flesh {
        f.weight_strokes.push(stroke.clone());
    }
    let painted_flesh = FleshSim::new(&painted_c, &c.skeleton.rest_posture(), 0.0).unwrap();
    assert!(painted_flesh.body.partition_error() < 1e-12);
    let region0 = |f: &FleshSim| {
        let FleshBody::Lattice(body) = &f.body else {
            panic!("no adaptive detail here")
        };
        body.regions
            .iter()
            .find(|r| r.bone == Some(0))
            .unwrap()
            .len()
    };
    assert!(
        region0(&painted_flesh) > region0(&flesh),
        "region 0 did not grow"
    );

    // A stroke on a bone the skeleton lacks is refused (by the runtime and,
    // first, by the character's validation).
    if let Flesh::Fem(f) = &mut painted_c.flesh {
        f.weight_strokes[0].bone = 99;
    }
    let e = FleshSim::new(&painted_c, &c.skeleton.rest_posture(), 0.0).unwrap_err();
    assert!(matches!(e, FleshError::StrokeBone { bone: 99, .. }), "{e}");
    let e = Simulation::new(
        painted_c,
        SkeletonDriver::Still(c.skeleton.rest_posture()),
        SolverSettings::default(),
    )
    .err()
    .unwrap();
    assert!(matches!(e, SimError::Character(_)), "{e}");
}

/// An imported mesh needs a lattice from fem-import; on a given lattice its
/// vertices move by the flesh's FFD, exactly with the bones where bound.
#[test]
fn an_embedded_mesh_deforms_with_the_lattice() {
    let mut c = fem_penguin();
    let lattice = Lattice::from_character_with_vertices(&c, 200, 0.5);
    // A vertex on a lattice vertex bound to the head's bone (it nods).
    let head = c.skeleton.find("head").unwrap();
    let (a, bone) = (0..lattice.vertex_count())
        .filter_map(|a| {
            let b = lattice.bone_of_vertex[a]?;
            (lattice.bones[b].joint == head).then_some((a, b))
        })
        .max_by(|x, y| {
            let d = |a: usize| lattice.rest[a].distance(lattice.bones[x.1].head);
            d(x.0).total_cmp(&d(y.0))
        })
        .expect("a vertex on the head's bone");
    let positions = vec![
        Vec3::new(0.0, 0.2, 0.1),
        Vec3::new(0.05, 0.3, 0.05),
        lattice.rest[a].as_vec3(),
    ];
    if let Flesh::Fem(f) = &mut c.flesh {
        f.embedded_mesh = Some(EmbeddedMesh {
            source: "blob.obj".into(),
            positions: positions.clone(),
            triangles: vec![[0, 1, 2]],
        });
    }
    // Three points are no solid: the runtime says which mesh and why.
    let e = FleshSim::new(&c, &c.skeleton.rest_posture(), 0.0).unwrap_err();
    assert!(matches!(e, FleshError::ImportedMesh { .. }), "{e}");
    assert!(e.to_string().contains("blob.obj"), "{e}");
    let driver = swing(&c);
    let mut flesh = FleshSim::with_lattice(&c, lattice, &driver.posture_at(0.0), 0.0).unwrap();
    flesh.advance_to(&c, |t| driver.posture_at(t), 0.5);
    let pose = flesh.pose(&c, &driver.posture_at(0.5), 0.5);
    let mesh = pose.mesh.expect("the embedded mesh is deformed");
    let l = flesh.lattice();
    for (p, m) in positions.iter().zip(&mesh) {
        let e = l.embed(p.as_dvec3()).unwrap();
        assert!((l.deform(&e, flesh.q()).as_vec3() - *m).length() < 1e-6);
    }
    let bones = bone_transforms(&c, &l.bones, &driver.posture_at(0.5));
    let on_bone = bones[bone]
        .transform_point3(positions[2].as_dvec3())
        .as_vec3();
    let moved = on_bone.distance(positions[2]);
    println!(
        "mesh vertex on the head bone moved {moved:.4} m, {:e} m off the bone",
        mesh[2].distance(on_bone)
    );
    assert!(moved > 0.01);
    assert!(mesh[2].distance(on_bone) < 1e-6);
}

/// The sample limb imported by `fem-import` runs as FEM flesh: its lattice is
/// rebuilt from the mesh, every mesh vertex is embedded, and bending the
/// elbow carries the hand end of the mesh with the forearm while the
/// shoulder end stays.
#[test]
fn an_imported_mesh_runs_as_fem_flesh() {
    let (c, mesh) = limb::imported_limb();
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    // The second key bends the elbow 1.2 rad (the last returns to rest).
    let end = c.key_postures[1].time as f64;
    let mut flesh = FleshSim::new(&c, &driver.posture_at(0.0), 0.0).unwrap();
    let rest = flesh.pose(&c, &driver.posture_at(0.0), 0.0).mesh.unwrap();
    assert_eq!(
        rest.len(),
        mesh.positions.len(),
        "every mesh vertex embedded"
    );
    flesh.advance_to(&c, |t| driver.posture_at(t), end);
    let posed = flesh.pose(&c, &driver.posture_at(end), end).mesh.unwrap();
    let moved: Vec<f32> = rest
        .iter()
        .zip(&posed)
        .map(|(a, b)| a.distance(*b))
        .collect();
    let max = moved.iter().copied().fold(0.0f32, f32::max);
    let min = moved.iter().copied().fold(f32::INFINITY, f32::min);
    println!("imported limb: mesh vertices moved {min:.4} .. {max:.4} m over the keys");
    assert!(posed.iter().all(|p| p.is_finite()));
    assert!(max > 0.05, "the keys move the mesh ({max} m)");
    assert!(
        min < 0.5 * max,
        "not everything moves alike ({min} vs {max} m)"
    );
}

/// Within a wall-clock budget the flesh steps only as far as the budget
/// allows (at least one step a call) and the skins never run ahead of it:
/// the report says the simulation fell behind, and later calls catch up.
#[test]
fn a_flesh_over_budget_holds_the_skins_back_and_catches_up() {
    use std::time::Duration;
    let c = plasticine::io::load_character(std::path::Path::new("assets/penguin.ron")).unwrap();
    let c = with_fem(c);
    assert!(!c.skins.is_empty());
    let driver = swing(&c);
    let mut sim = Simulation::new(c, driver, SolverSettings::default()).unwrap();
    let target = 0.05;
    let report = sim.advance_to(target, Some(Duration::ZERO)).unwrap();
    let flesh_time = sim.flesh().unwrap().time();
    eprintln!(
        "budget 0: flesh at {flesh_time:.4} s, skins at {:.4} s of {target} s",
        report.reached
    );
    assert!(report.fell_behind);
    assert!(flesh_time > 0.0 && flesh_time < target);
    assert!(sim.time() <= flesh_time, "the skins ran ahead of the flesh");
    let mut calls = 1;
    while sim.time() < target - 1e-9 {
        // Every call makes progress: the flesh steps, or (once it is past
        // the target) the skins do.
        let before = (sim.flesh().unwrap().time(), sim.time());
        sim.advance_to(target, Some(Duration::ZERO)).unwrap();
        assert!(sim.flesh().unwrap().time() > before.0 || sim.time() > before.1);
        assert!(sim.time() <= sim.flesh().unwrap().time());
        calls += 1;
        assert!(calls < 2000, "never caught up");
    }
    let report = sim.advance_to(target, None).unwrap();
    assert!(!report.fell_behind);
    assert!(
        sim.deepest_penetration() < 0.01,
        "{}",
        sim.deepest_penetration()
    );
}

/// A hand holding the flesh through an edit that rebuilds it on another
/// lattice keeps holding it: the grab is made again where the point is, under
/// the same id, and the new flesh brings the point to the hand.
#[test]
fn a_grab_survives_a_new_lattice() {
    let c = fem_penguin();
    let rest = c.skeleton.rest_posture();
    let mut flesh = FleshSim::new(&c, &rest, 0.0).unwrap();
    let belly = PosedBody::new(&c, &rest).muscles[0].center;
    let at = belly + Vec3::new(0.0, 0.0, 0.08);
    let id = flesh.grab(at).expect("the belly's flesh");
    let hand = at + Vec3::new(0.0, 0.0, 0.03);
    flesh.move_grab(id, hand);
    flesh.advance_to(&c, |_| rest.clone(), 0.3);
    let mut finer = c.clone();
    if let Flesh::Fem(f) = &mut finer.flesh {
        f.target_vertices = 400;
    }
    let mut rebuilt = FleshSim::rebuilt(&finer, &rest, flesh.time(), Some(&flesh)).unwrap();
    assert_ne!(
        rebuilt.lattice().vertex_count(),
        flesh.lattice().vertex_count()
    );
    assert_eq!(rebuilt.grabs().len(), 1);
    assert_eq!(rebuilt.grabs()[0].id, id);
    assert!(rebuilt.move_grab(id, hand), "the same id moves it");
    rebuilt.advance_to(&finer, |_| rest.clone(), flesh.time() + 0.3);
    let off = (rebuilt.grabbed_position(id).unwrap() - hand).length();
    eprintln!(
        "grab carried onto a {}-vertex lattice: {off:.1e} m off the hand",
        rebuilt.lattice().vertex_count()
    );
    assert!(off < 1e-4, "{off}");
    let next = rebuilt.grab(belly).unwrap();
    assert_ne!(next, id, "new grabs get new ids");
}
