//! Modal flesh (DyRT) in the application: the penguin's parts vibrate when
//! it waddles and come to rest when it stops, within the force filter's
//! clamp; a still skeleton leaves them still; the character file keeps the
//! settings; bad parts ride rigidly and say why; the muscles (and so the
//! skins) ride the modal field through the simulation and the bake.

use plasticine::character::{Character, Flesh, ModalFlesh, ModalPart, Posture};
use plasticine::modal::{MODAL_STEP, ModalSim};
use plasticine::skin::SkeletonDriver;

fn modal_penguin() -> Character {
    let mut c = plasticine::samples::bare("penguin").unwrap();
    c.flesh = Flesh::Modal(ModalFlesh::for_character(&c));
    c
}

/// Energy of every mode, Σ ½(q̇² + ω²q²), from two consecutive amplitudes.
fn modal_energy(sim: &ModalSim, q: &[f64], q_prev: &[f64]) -> f64 {
    let mut e = 0.0;
    let mut k = 0;
    for p in sim.parts() {
        for w in &p.omega {
            let v = (q[k] - q_prev[k]) / MODAL_STEP;
            e += 0.5 * (v * v + w * w * q[k] * q[k]);
            k += 1;
        }
    }
    e
}

/// DyRT's humanoid at the benchmark's size of model (issue 15: ≥ 8 parts
/// × 16 modes): the figure (the torso on two legs, with a head) wraps a
/// skin round each leg and the head, and a part per bone gives its twelve
/// bones twelve parts of 16 modes each, as asked, although some parts'
/// lowest 16 hold modes the bone cannot excite (dropped, and the next
/// excitable ones kept instead). Each leg's skin reaches the floor's side
/// of the knee: below the pelvis by more than a thigh.
#[test]
fn the_figure_has_twelve_parts_of_sixteen_modes() {
    use plasticine::samples::{FIGURE, build};
    let mut c = build(FIGURE, 16, 16).unwrap();
    let names: Vec<&str> = c.skins.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["torso", "arm_l", "arm_r", "head", "leg_l", "leg_r"]);
    let rest = c.skeleton.rest_posture();
    // The root at rest stands at its offset.
    let pelvis = c.skeleton.joints[0].offset.y;
    for leg in &c.skins[4..] {
        let low = leg
            .points
            .position
            .iter()
            .map(|p| p.y)
            .fold(f32::MAX, f32::min);
        assert!(
            pelvis - low > 0.6,
            "{}: lowest {low} m, pelvis {pelvis} m",
            leg.name
        );
    }
    let mut modal = ModalFlesh::for_character(&c);
    modal.parts = ModalFlesh::part_per_bone(&c);
    c.flesh = Flesh::Modal(modal);
    let sim = ModalSim::new(&c, &|_| rest.clone(), 0.0).unwrap();
    assert!(sim.skipped().is_empty(), "{:?}", sim.skipped());
    assert_eq!(sim.parts().count(), 12);
    for p in sim.parts() {
        assert_eq!(p.omega.len(), 16, "{}", p.name);
    }
    assert!(
        sim.parts().any(|p| p.dropped > 0),
        "no part dropped a mode: the test no longer checks the stand-ins"
    );
}

/// Every part listed for the penguin vibrates (none rides rigidly), each
/// mode under-damped with ξ = ½(α/ω + βω); at rest the field is zero and
/// the muscles sit where the kinematic ones do.
#[test]
fn the_penguin_has_modes_in_every_part_and_none_at_rest() {
    let c = modal_penguin();
    let rest = c.skeleton.rest_posture();
    let mut sim = ModalSim::new(&c, &|_| rest.clone(), 0.0).unwrap();
    assert!(sim.skipped().is_empty(), "{:?}", sim.skipped());
    let modal = c.flesh.modal().unwrap();
    assert_eq!(sim.parts().count(), modal.parts.len());
    assert!(modal.parts.len() >= 4, "{:?}", modal.parts);
    for p in sim.parts() {
        assert!(!p.omega.is_empty() && p.omega.len() <= 16, "{}", p.name);
        for (w, xi) in p.omega.iter().zip(&p.damping) {
            let want = 0.5 * (modal.fem.mass_damping / w + modal.fem.stiffness_damping * w);
            assert!((xi - want).abs() < 1e-12 && *xi < 1.0);
        }
        assert!(p.omega.windows(2).all(|w| w[0] <= w[1]));
    }
    sim.advance_within(&c, |_| rest.clone(), 1.0, None);
    assert!(sim.amplitudes().iter().all(|q| *q == 0.0));
    assert!(sim.is_at_rest(1e-12));
    let offsets = sim.muscle_offsets(&c, &rest, 1.0);
    for o in offsets {
        let d = (o.matrix3 - glam::Mat3A::IDENTITY)
            .to_cols_array()
            .iter()
            .map(|x| x.abs())
            .fold(0.0f32, f32::max);
        assert!(d < 1e-4 && o.translation.length() < 1e-5, "{o:?}");
    }
}

/// The waddle excites the modes (bounded by the clamp); when the skeleton
/// stops, the modal energy falls below 1 % of its peak within
/// 1.1·ln 100/(2 min ξω) and never grows between steps after that.
#[test]
fn the_waddle_jiggles_the_flesh_and_it_settles_when_the_skeleton_stops() {
    let c = modal_penguin();
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let stop = 1.0;
    let posture_at = |t: f64| driver.posture_at(t.min(stop));
    let mut sim = ModalSim::new(&c, &posture_at, 0.0).unwrap();
    let slowest = sim
        .parts()
        .flat_map(|p| p.omega.iter().zip(&p.damping).map(|(w, xi)| w * xi))
        .fold(f64::INFINITY, f64::min);
    let settle = 1.1 * 100f64.ln() / (2.0 * slowest);
    let mut prev = sim.amplitudes().to_vec();
    let (mut peak, mut after_stop, mut jiggle) = (0.0f64, Vec::new(), 0.0f64);
    while sim.time() < stop + settle {
        let t = sim.time() + MODAL_STEP;
        sim.advance_within(&c, posture_at, t, None);
        let q = sim.amplitudes().to_vec();
        let e = modal_energy(&sim, &q, &prev);
        jiggle = jiggle.max(sim.largest_displacement(&q));
        peak = peak.max(e);
        if sim.time() > stop + 2.0 * MODAL_STEP {
            after_stop.push(e);
        }
        let mut k = 0;
        for p in sim.parts() {
            for limit in &p.limit {
                assert!(
                    q[k].abs() <= limit * (1.0 + 1e-12),
                    "{} mode over its clamp",
                    p.name
                );
                k += 1;
            }
        }
        prev = q;
    }
    eprintln!("the waddle moves the flesh up to {jiggle} m off its skinned place");
    // A visible jiggle, and less than the clamp (15 % of a part, < 5 cm).
    assert!(jiggle > 2e-3 && jiggle < 0.05, "{jiggle} m");
    let last = *after_stop.last().unwrap();
    assert!(
        last < 0.01 * peak,
        "energy {last:e} of peak {peak:e} after {settle:.2} s"
    );
    // Per step the energy may wobble (kinetic and potential trade with
    // different weights); over a period of the slowest mode it only falls.
    let w_min = sim
        .parts()
        .flat_map(|p| p.omega.iter().copied())
        .fold(f64::INFINITY, f64::min);
    let period = (std::f64::consts::TAU / w_min / MODAL_STEP).ceil() as usize;
    for k in period..after_stop.len() {
        let window = |s: &[f64]| s.iter().copied().fold(0.0f64, f64::max);
        assert!(
            window(&after_stop[k - period + 1..=k])
                <= window(&after_stop[k - period..k]) * (1.0 + 1e-9),
            "energy grew after the stop at step {k}"
        );
    }
}

/// A part on an unknown joint, or asking for more modes than it has free
/// DOFs, rides rigidly and says why; invalid numbers are refused with the
/// field named; the file keeps the settings.
#[test]
fn bad_parts_ride_rigidly_and_bad_numbers_are_refused() {
    let mut c = modal_penguin();
    if let Flesh::Modal(m) = &mut c.flesh {
        m.parts.push(ModalPart::new("tail"));
    }
    let rest = c.skeleton.rest_posture();
    let sim = ModalSim::new(&c, &|_| rest.clone(), 0.0).unwrap();
    let why: Vec<String> = sim.skipped().iter().map(|e| e.to_string()).collect();
    assert_eq!(
        why,
        vec!["part 'tail': the skeleton has no such joint".to_string()]
    );

    let text = plasticine::io::character_to_string(&c).unwrap();
    let back = plasticine::io::parse_character(&text, std::path::Path::new("mem.ron")).unwrap();
    assert_eq!(back, c);
    assert!(text.contains("Modal("));

    for (edit, field) in [
        (
            &(|m: &mut ModalFlesh| m.parts[0].modes = 0) as &dyn Fn(&mut ModalFlesh),
            "flesh.Modal.parts[0].modes",
        ),
        (
            &|m: &mut ModalFlesh| m.parts[1].clamp = f64::NAN,
            "flesh.Modal.parts[1].clamp",
        ),
        (
            &|m: &mut ModalFlesh| m.fem.young = -1.0,
            "flesh.Modal.fem.young",
        ),
        (
            &|m: &mut ModalFlesh| {
                let p = m.parts[0].clone();
                m.parts.push(p);
            },
            "flesh.Modal.parts[5].joint",
        ),
    ] {
        // The penguin's five parts: belly, chest, head and the flippers.
        assert_eq!(modal_penguin().flesh.modal().unwrap().parts.len(), 5);
        let mut bad = modal_penguin();
        if let Flesh::Modal(m) = &mut bad.flesh {
            edit(m);
        }
        let err = bad.validate().unwrap_err();
        assert_eq!(err.field, field, "{err:?}");
    }
}

/// Through the simulation, the muscles ride the modal field: the waddle
/// moves them off their kinematic places (the jiggle) by no more than the
/// clamp allows, and the skins follow.
#[test]
fn the_simulation_rides_the_muscles_on_the_modes() {
    use plasticine::kinematics::PosedBody;
    use plasticine::skin::{Simulation, SolverSettings};
    let mut c = plasticine::samples::build("penguin", 8, 8).unwrap();
    c.flesh = Flesh::Modal(ModalFlesh::for_character(&c));
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let mut sim = Simulation::new(c.clone(), driver.clone(), SolverSettings::default()).unwrap();
    assert!(sim.flesh_run().and_then(|f| f.modal()).is_some());
    let mut moved = 0.0f32;
    for k in 1..=20 {
        let t = k as f64 * 0.05;
        sim.advance_to(t, None).unwrap();
        let posture: Posture = driver.posture_at(t);
        let rigid = PosedBody::new(&c, &posture);
        let flesh = sim.posed_body(t);
        for (a, b) in rigid.muscles.iter().zip(&flesh.muscles) {
            moved = moved.max(a.center.distance(b.center));
        }
        assert!(
            sim.character
                .skins
                .iter()
                .all(|s| s.points.position.iter().all(|p| p.is_finite()))
        );
    }
    eprintln!("muscles moved off their kinematic places by up to {moved} m");
    let size = 0.3; // the penguin is about 0.6 m tall: its parts are under 0.3 m
    assert!(moved > 1e-4, "the muscles do not jiggle: {moved}");
    assert!(moved < 0.15 * size + 0.02, "muscles moved {moved} m");
    assert!(sim.flesh_pose().is_some_and(|p| p.lattice.len() > 500));
}

/// DyRT §4 on the GPU: `shaders/morph.wgsl` poses a mesh riding the
/// penguin's modal flesh (its body skin's rest grid, embedded in the
/// lattice) mid-waddle exactly as the CPU does: positions within 1e-5 of
/// the mesh's size, unit normals within 1e-4 (f32 against f64). Runs on
/// lavapipe; skipped with a note when there is no adapter, unless
/// `PLASTICINE_REQUIRE_GPU_TESTS` is set.
#[test]
fn the_gpu_poses_a_modal_mesh_as_the_cpu_does() {
    use plasticine::render::MorphMeshGpu;
    let ctx = match plasticine::gpu::GpuContext::headless() {
        Ok(ctx) => ctx,
        Err(e) => {
            if std::env::var_os("PLASTICINE_REQUIRE_GPU_TESTS").is_some() {
                panic!("PLASTICINE_REQUIRE_GPU_TESTS is set and there is no adapter: {e}");
            }
            eprintln!("SKIPPED: no wgpu adapter ({e}); install lavapipe (mesa-vulkan-drivers)");
            return;
        }
    };
    let mut c = plasticine::io::load_character(std::path::Path::new("assets/penguin.ron")).unwrap();
    c.flesh = Flesh::Modal(ModalFlesh::for_character(&c));
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let posture_at = |t: f64| driver.posture_at(t);
    let mut sim = ModalSim::new(&c, &posture_at, 0.0).unwrap();
    let t = 0.6;
    sim.advance_within(&c, posture_at, t, None);
    let body = &c.skins[0];
    let (m, n) = (body.m, body.n);
    let mut triangles = Vec::new();
    for j in 0..n - 1 {
        for i in 0..m {
            let a = (j * m + i) as u32;
            let b = (j * m + (i + 1) % m) as u32;
            let (c2, d) = (b + m as u32, a + m as u32);
            triangles.push([a, b, c2]);
            triangles.push([a, c2, d]);
        }
    }
    let mesh = sim.embed_mesh(&body.points.position, &triangles);
    let q = sim.amplitudes().to_vec();
    let placements = sim.placements(&c, &posture_at(t));
    let cpu_p = mesh.positions(&placements, &q);
    let cpu_n = mesh.normals(&placements, &q);
    let gpu = MorphMeshGpu::new(&ctx, &mesh, c.skeleton.joints.len()).unwrap();
    let (gpu_p, gpu_n) = gpu.pose(&ctx, &placements, &q).unwrap();
    let size = mesh
        .rest
        .iter()
        .flat_map(|a| mesh.rest.iter().map(move |b| a.distance(*b)))
        .fold(0.0, f64::max) as f32;
    let worst_p = cpu_p
        .iter()
        .zip(&gpu_p)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0f32, f32::max);
    let worst_n = cpu_n
        .iter()
        .zip(&gpu_n)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0f32, f32::max);
    // The modes move the mesh well beyond the check's resolution.
    let rest_q = vec![0.0; q.len()];
    let jiggle = mesh
        .positions(&placements, &rest_q)
        .iter()
        .zip(&cpu_p)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0f32, f32::max);
    eprintln!(
        "modal GPU vs CPU on {} vertices, {} modes: positions {worst_p:.1e} m, normals {worst_n:.1e}, modal motion {jiggle:.1e} m",
        mesh.rest.len(),
        mesh.modes
    );
    assert!(
        worst_p <= 1e-5 * size,
        "positions differ by {worst_p} (mesh {size} m)"
    );
    assert!(worst_n <= 1e-4, "normals differ by {worst_n}");
    assert!(
        jiggle > 100.0 * worst_p.max(1e-7 * size),
        "modal motion {jiggle}"
    );
}

/// A broken posture (NaN angles, as a failed IK solve could give) for a
/// tenth of a second mid-waddle: the modal flesh holds the joints where they
/// were instead of taking NaN into its amplitudes, says how often, and
/// moves on when the postures are whole again.
#[test]
fn a_broken_posture_is_held_and_never_reaches_the_modes() {
    let c = modal_penguin();
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let posture_at = |t: f64| {
        let mut p = driver.posture_at(t);
        if (0.3..0.4).contains(&t) {
            p.angles[1].x = f32::NAN;
            p.root_translation.y = f32::INFINITY;
        }
        p
    };
    let mut sim = ModalSim::new(&c, &posture_at, 0.0).unwrap();
    let mut largest = 0.0f64;
    for k in 1..=120 {
        let t = k as f64 * MODAL_STEP;
        sim.advance_within(&c, posture_at, t, None);
        assert!(
            sim.amplitudes().iter().all(|q| q.is_finite()),
            "amplitudes at {t}: {:?}",
            sim.amplitudes()
        );
        largest = largest.max(sim.largest_displacement(sim.amplitudes()));
    }
    assert!(
        sim.held >= 11,
        "held {} steps of the broken tenth",
        sim.held
    );
    assert!(
        largest > 1e-4,
        "the waddle still jiggles the flesh ({largest} m)"
    );
    let offsets = sim.muscle_offsets(&c, &driver.posture_at(1.0), 1.0);
    assert!(offsets.iter().all(|o| o.is_finite()));
}
