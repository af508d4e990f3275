//! FEM flesh in the application: the backend and painted weights
//! as undoable commands, edits that keep the flesh's motion and the skins'
//! state, grabs through the simulation thread, bakes (resumed bit for bit),
//! the renderer drawing the flesh pose, and the character file.

use glam::{DVec3, Vec3};
use plasticine::character::{Character, EmbeddedMesh, FemFlesh, Flesh, WeightStroke};
use plasticine::fem::FleshSim;
use plasticine::kinematics::PosedBody;
use plasticine::skin::{Simulation, SkeletonDriver, SolverSettings};

fn with_fem(mut c: Character) -> Character {
    c.flesh = Flesh::Fem(FemFlesh::default());
    c
}

fn fem_penguin() -> Character {
    with_fem(plasticine::samples::bare("penguin").unwrap())
}

/// The character file keeps FEM flesh: strokes, part stiffness, adaptive
/// detail and all.
#[test]
fn the_character_file_round_trips_fem_flesh() {
    let mut c = fem_penguin();
    if let Flesh::Fem(f) = &mut c.flesh {
        f.young = 2.5e4;
        f.blend_width = None;
        f.weight_strokes.push(WeightStroke {
            bone: 2,
            centre: Vec3::new(0.1, 0.2, -0.3),
            radius: 0.04,
            amount: -0.25,
        });
        f.part_stiffness.push(plasticine::character::PartStiffness {
            joint: "flipper_l".into(),
            scale: 0.2,
        });
        f.detail = Some(plasticine::character::FleshDetail {
            levels: 2,
            ..Default::default()
        });
    }
    let text = plasticine::io::character_to_string(&c).unwrap();
    let back = plasticine::io::parse_character(&text, std::path::Path::new("mem.ron")).unwrap();
    assert_eq!(back, c);
    assert!(text.contains("Fem("));
    // Settings written before adaptive detail and part stiffness existed
    // still load, with neither.
    let old: FemFlesh = ron::from_str("(young: 30000.0, blend_width: Some(0.05))").unwrap();
    assert_eq!((old.detail, old.part_stiffness.len()), (None, 0));
    assert_eq!(old.young, 3.0e4);
}

/// Switching the backend and painting weights are commands: applied,
/// undone and redone through the history, refused when they make no sense.
#[test]
fn flesh_commands_are_undoable() {
    use plasticine::tools::{Command, History};
    let mut c = plasticine::samples::bare("penguin").unwrap();
    let mut h = History::new(&c);
    let stroke = WeightStroke {
        bone: 1,
        centre: Vec3::new(0.0, 0.3, 0.1),
        radius: 0.05,
        amount: 0.5,
    };
    let paint = Command::PaintWeights {
        stroke: stroke.clone(),
    };
    assert!(
        h.apply(&mut c, paint.clone()).is_err(),
        "painted kinematic flesh"
    );
    h.apply(
        &mut c,
        Command::SetFlesh {
            flesh: Flesh::Fem(FemFlesh::default()),
        },
    )
    .unwrap();
    h.apply(&mut c, paint.clone()).unwrap();
    h.apply(&mut c, paint).unwrap();
    assert_eq!(
        c.flesh.fem().unwrap().weight_strokes,
        vec![stroke.clone(); 2]
    );
    let bad = Command::PaintWeights {
        stroke: WeightStroke {
            bone: 10,
            ..stroke.clone()
        },
    };
    assert!(
        h.apply(&mut c, bad).is_err(),
        "painted a bone the skeleton lacks"
    );
    let nan = Command::PaintWeights {
        stroke: WeightStroke {
            radius: f32::NAN,
            ..stroke.clone()
        },
    };
    assert!(h.apply(&mut c, nan).is_err(), "painted a NaN radius");
    assert_eq!(c.flesh.fem().unwrap().weight_strokes.len(), 2);
    h.undo(&mut c).unwrap();
    assert_eq!(c.flesh.fem().unwrap().weight_strokes.len(), 1);
    h.undo(&mut c).unwrap();
    h.undo(&mut c).unwrap();
    assert_eq!(c.flesh, Flesh::Kinematic);
    h.redo(&mut c).unwrap();
    h.redo(&mut c).unwrap();
    assert_eq!(c.flesh.fem().unwrap().weight_strokes, vec![stroke]);
    let bad_young = Command::SetFlesh {
        flesh: Flesh::Fem(FemFlesh {
            young: -1.0,
            ..FemFlesh::default()
        }),
    };
    assert!(h.apply(&mut c, bad_young).is_err());
}

/// An edit rebuilds the flesh: on the same lattice (a painted stroke) its
/// motion goes on, on a new one (another resolution) it starts at rest; the
/// skins keep their state either way.
#[test]
fn an_edit_rebuilds_the_flesh_and_keeps_the_skins() {
    let c = plasticine::io::load_character(std::path::Path::new("assets/penguin.ron")).unwrap();
    let c = with_fem(c);
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let mut sim = Simulation::new(c, driver, SolverSettings::default()).unwrap();
    sim.advance_to(0.3, None).unwrap();
    let skins = sim.character.skins.clone();
    let (q, flesh_time) = {
        let f = sim.flesh().unwrap();
        (f.q().to_vec(), f.time())
    };
    let mut edited = sim.character.clone();
    if let Flesh::Fem(f) = &mut edited.flesh {
        f.weight_strokes.push(WeightStroke {
            bone: 0,
            centre: Vec3::new(0.0, 0.2, 0.1),
            radius: 0.1,
            amount: 0.3,
        });
    }
    sim.set_character(edited.clone()).unwrap();
    assert_eq!(sim.character.skins, skins);
    let f = sim.flesh().unwrap();
    assert_eq!(
        (f.q().to_vec(), f.time()),
        (q, flesh_time),
        "the flesh restarted"
    );
    if let Flesh::Fem(f) = &mut edited.flesh {
        f.target_vertices = 400;
    }
    sim.set_character(edited).unwrap();
    let f = sim.flesh().unwrap();
    assert!(
        f.lattice().vertex_count() > 300,
        "{}",
        f.lattice().vertex_count()
    );
    assert_eq!(f.time(), sim.time());
    assert_eq!(sim.character.skins, skins);
    sim.advance_to(0.5, None).unwrap();
    // Back to kinematic: no flesh.
    let mut kinematic = sim.character.clone();
    kinematic.flesh = Flesh::Kinematic;
    sim.set_character(kinematic).unwrap();
    assert!(sim.flesh().is_none() && sim.flesh_pose().is_none());
}

/// Through the simulation thread: a grab holds the picked flesh point at the
/// hand (the snapshot shows both), and lets go.
#[test]
fn the_simulation_thread_grabs_and_releases_the_flesh() {
    use plasticine::app::{FleshGrab, SimMessage, SimThread};
    use std::time::{Duration, Instant};
    let c = fem_penguin();
    let belly = PosedBody::new(&c, &c.skeleton.rest_posture()).muscles[0].center;
    let sim = SimThread::spawn(c, SolverSettings::default(), 1);
    let wait = |what: &str, ok: &dyn Fn(&plasticine::snapshot::SceneSnapshot) -> bool| {
        let start = Instant::now();
        loop {
            let s = sim.latest();
            if ok(&s) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "never published: {what}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    };
    wait("the flesh", &|s| s.flesh.is_some());
    let at = belly + Vec3::new(0.0, 0.0, 0.08);
    let hand = at + Vec3::new(0.0, 0.0, 0.02);
    sim.send(SimMessage::Grab(FleshGrab::Start { at })).unwrap();
    sim.send(SimMessage::Grab(FleshGrab::Move { hand }))
        .unwrap();
    let s = wait("the grabbed point at the hand", &|s| {
        s.flesh
            .as_ref()
            .is_some_and(|f| f.grabs.len() == 1 && f.grabs[0].0.distance(hand) < 1e-5)
    });
    let f = s.flesh.as_ref().unwrap();
    assert_eq!(f.grabs[0].1, hand);
    sim.send(SimMessage::Grab(FleshGrab::Release)).unwrap();
    wait("the release", &|s| {
        s.flesh.as_ref().is_some_and(|f| f.grabs.is_empty())
    });
    sim.shutdown();
}

/// A bake of an FEM character follows the flesh (it differs from the
/// kinematic bake) and, cancelled and resumed, gives the same cache bit for
/// bit: the flesh is replayed from its deterministic start.
#[test]
fn an_fem_bake_resumes_to_the_same_result() {
    use plasticine::bake::{BakeControl, BakeOptions, BakeOutcome, BakeStart, CACHE_FILE, bake};
    let kinematic =
        plasticine::io::load_character(std::path::Path::new("assets/penguin.ron")).unwrap();
    let fem = with_fem(kinematic.clone());
    let opts = BakeOptions {
        fps: 30.0,
        duration: Some(1.0),
        ..BakeOptions::default()
    };
    let root = tempfile::tempdir().unwrap();
    let run = |c: &Character, dir: &str, opts: &BakeOptions, cancel_at: Option<usize>| {
        let dir = root.path().join(dir);
        let out = bake(c.clone(), opts, &dir, |done, _| {
            if Some(done) == cancel_at {
                BakeControl::Cancel
            } else {
                BakeControl::Continue
            }
        })
        .unwrap();
        (out, dir)
    };
    let (out, reference) = run(&fem, "fem", &opts, None);
    assert!(matches!(out, BakeOutcome::Finished(_)));
    let want = std::fs::read(reference.join(CACHE_FILE)).unwrap();
    let (_, kin) = run(&kinematic, "kinematic", &opts, None);
    assert_ne!(
        std::fs::read(kin.join(CACHE_FILE)).unwrap(),
        want,
        "the flesh changed nothing"
    );
    let (out, _) = run(&fem, "cut", &opts, Some(13));
    assert!(matches!(out, BakeOutcome::Cancelled(_)));
    let resume = BakeOptions {
        start: BakeStart::Resume,
        ..opts.clone()
    };
    let (out, dir) = run(&fem, "cut", &resume, None);
    assert!(matches!(out, BakeOutcome::Finished(_)));
    assert!(
        std::fs::read(dir.join(CACHE_FILE)).unwrap() == want,
        "the resumed bake differs"
    );
}

/// The renderer draws the muscles where the snapshot's flesh put them, the
/// embedded mesh deformed, the lattice in wireframe and a line per grab.
#[test]
fn the_renderer_draws_the_flesh_pose() {
    use plasticine::render::{Decorations, GeometryBuilder, MuscleStyle, SceneStyle};
    use plasticine::snapshot::SceneSnapshot;
    use std::sync::Arc;
    let mut c = fem_penguin();
    let rest = c.skeleton.rest_posture();
    let mut flesh = FleshSim::new(&c, &rest, 0.0).unwrap();
    let shift = DVec3::new(0.05, 0.0, 0.0);
    let q: Vec<DVec3> = vec![shift; flesh.lattice().vertex_count()];
    let style = SceneStyle {
        muscles: MuscleStyle::Opaque,
        skin: false,
        floor: false,
        skeleton: false,
        ..SceneStyle::default()
    };
    let centroid = |s: &SceneSnapshot, style: &SceneStyle| {
        let mut b = GeometryBuilder::new();
        let g = b.build(s, style, &Decorations::default()).clone();
        let n = g.opaque.vertices.len();
        let sum: Vec3 = g
            .opaque
            .vertices
            .iter()
            .map(|v| Vec3::from(v.position))
            .sum();
        (sum / n as f32, g)
    };
    let plain = SceneSnapshot::of(Arc::new(c.clone()), rest.clone(), 1);
    let (before, _) = centroid(&plain, &style);
    let mut shifted = plain.clone();
    let mut pose = flesh.pose(&c, &rest, 0.0);
    pose.muscle_offsets = flesh.muscle_offsets_for(&c, &rest, &q);
    shifted.flesh = Some(Arc::new(pose.clone()));
    let (after, g) = centroid(&shifted, &style);
    assert!(
        (after - before - shift.as_vec3()).length() < 1e-5,
        "{}",
        after - before
    );
    assert!(g.lines.is_empty());
    // Wireframe: every lattice edge; a grab: one more line.
    let wire = SceneStyle {
        wireframe: true,
        ..style
    };
    let id = flesh
        .grab(PosedBody::new(&c, &rest).muscles[0].center)
        .unwrap();
    flesh.move_grab(id, Vec3::new(0.0, 0.3, 0.2));
    let mut grabbed = plain.clone();
    grabbed.flesh = Some(Arc::new(flesh.pose(&c, &rest, 0.0)));
    let (_, g) = centroid(&grabbed, &wire);
    let edges = grabbed.flesh.as_ref().unwrap().edges.len();
    assert_eq!(g.lines.indices.len(), 2 * (edges + 1));
    // An embedded mesh is drawn deformed.
    if let Flesh::Fem(f) = &mut c.flesh {
        f.embedded_mesh = Some(EmbeddedMesh {
            source: "tri.obj".into(),
            positions: vec![
                Vec3::new(0.0, 0.2, 0.1),
                Vec3::new(0.05, 0.3, 0.05),
                Vec3::new(0.0, 0.3, 0.0),
            ],
            triangles: vec![[0, 1, 2]],
        });
    }
    let lattice = flesh.lattice().clone();
    let meshed = FleshSim::with_lattice(&c, lattice, &rest, 0.0).unwrap();
    let mut pose = meshed.pose(&c, &rest, 0.0);
    let mesh = pose.mesh.clone().unwrap();
    pose.muscle_offsets.clear(); // draw the muscles kinematically
    let mut with_mesh = SceneSnapshot::of(Arc::new(c.clone()), rest.clone(), 1);
    with_mesh.flesh = Some(Arc::new(pose));
    let (_, g) = centroid(&with_mesh, &style);
    let (_, g0) = centroid(&plain, &style);
    assert_eq!(g.opaque.indices.len(), g0.opaque.indices.len() + 3);
    let drawn: Vec<Vec3> = g.opaque.vertices[g.opaque.vertices.len() - 3..]
        .iter()
        .map(|v| Vec3::from(v.position))
        .collect();
    assert_eq!(drawn, mesh);
}

/// The weights tool: a twisted drag paints the bone nearest the tip, one
/// stroke per frame, one undo step per drag; refused on kinematic flesh.
#[test]
fn the_weights_tool_paints_the_nearest_bone() {
    use glam::Quat;
    use plasticine::input::{HandState, InputFrame};
    use plasticine::tools::{History, ToolContext, ToolKind, Toolbox};
    let frame = |time: f64, twist: f32, trigger: f32| InputFrame {
        time,
        right: HandState {
            // Just in front of the flipper_l's muscle, below its joint.
            pose: (
                Vec3::new(0.12, 0.28, 0.03),
                Quat::from_rotation_z(-twist), // about the wand (−z)
            ),
            trigger,
            buttons: 0,
        },
        left: HandState::default(),
    };
    let mut kinematic = plasticine::samples::bare("penguin").unwrap();
    let mut h = History::new(&kinematic);
    let mut tools = Toolbox::new();
    let mut ctx = ToolContext {
        character: &mut kinematic,
        history: &mut h,
        symmetry: None,
    };
    tools.set_tool(ToolKind::Weights, &mut ctx).unwrap();
    assert!(tools.handle(&frame(0.0, 0.0, 1.0), &mut ctx).is_err());

    let mut c = fem_penguin();
    let mut h = History::new(&c);
    let mut tools = Toolbox::new();
    let mut ctx = ToolContext {
        character: &mut c,
        history: &mut h,
        symmetry: None,
    };
    tools.set_tool(ToolKind::Weights, &mut ctx).unwrap();
    tools.handle(&frame(0.0, 0.0, 1.0), &mut ctx).unwrap();
    tools.handle(&frame(0.1, 0.5, 1.0), &mut ctx).unwrap();
    tools.handle(&frame(0.2, 0.5, 1.0), &mut ctx).unwrap();
    tools.handle(&frame(0.3, 0.5, 0.0), &mut ctx).unwrap();
    let strokes = c.flesh.fem().unwrap().weight_strokes.clone();
    assert_eq!(strokes.len(), 2, "{strokes:?}");
    let flipper = plasticine::fem::skeleton_bones(&c)
        .iter()
        .position(|b| b.joint == c.skeleton.find("flipper_l").unwrap())
        .unwrap();
    for s in &strokes {
        assert_eq!(s.bone, flipper);
        assert!((s.amount - 0.2).abs() < 1e-5, "{}", s.amount);
        // At rest the tip is where it is (the posture is the rest one).
        assert!(s.centre.distance(Vec3::new(0.12, 0.28, 0.03)) < 1e-5);
    }
    h.undo(&mut c).unwrap();
    assert!(
        c.flesh.fem().unwrap().weight_strokes.is_empty(),
        "one undo step per drag"
    );
}
