//! The command line as a user meets it: real files, the real binary.

use crate::support::plasticine;
use std::path::Path;
use std::process::Command;

#[test]
fn bake_writes_a_cache_whose_frames_follow_the_motion() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bake");
    let (ok, stdout, stderr) = plasticine(&[
        "bake",
        "assets/penguin.ron",
        "--out",
        out.to_str().unwrap(),
        "--duration",
        "0.5",
        "--obj",
        "5",
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("Baked 16 frames"), "{stdout}");
    let mut cache = plasticine::io::CacheReader::open(&out.join("bake.plcache")).unwrap();
    assert_eq!(cache.frame_count(), 16);
    assert!(cache.is_complete());
    let (mut first, mut last) = (Vec::new(), Vec::new());
    cache.read_frame(0, &mut first).unwrap();
    let t = cache.read_frame(15, &mut last).unwrap();
    assert!((t - 0.5).abs() < 1e-9);
    // The skin moved with the waddle, and stayed finite.
    let moved = first[0]
        .iter()
        .zip(&last[0])
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    assert!(moved > 0.005, "the body skin moved {moved} m");
    assert!(last.iter().flatten().all(|p| p.is_finite()));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["frames"], 16);
    assert_eq!(std::fs::read_dir(out.join("obj")).unwrap().count(), 4);
}

#[test]
fn malformed_files_are_reported_with_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.ron");
    std::fs::write(&bad, "(format: \"plasticine-character\", version: 1, character: (name: \"x\", skeleton: (joints: [(name: \"root\", parent: None, offset: (0, 0))])))").unwrap();
    let (ok, _, stderr) = plasticine(&["info", bad.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains("bad.ron:1:"),
        "names file, line and column: {stderr}"
    );

    // A valid file with an impossible value names the field.
    let text = std::fs::read_to_string("assets/penguin.ron").unwrap();
    let broken = text.replacen("joint: 1,", "joint: 99,", 1);
    assert_ne!(text, broken);
    let f = dir.path().join("broken.ron");
    std::fs::write(&f, broken).unwrap();
    let (ok, _, stderr) = plasticine(&["info", f.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        stderr.contains("broken.ron") && stderr.contains("muscles[0].joint"),
        "{stderr}"
    );
}

#[test]
fn impossible_parameters_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("b");
    let (ok, _, stderr) = plasticine(&[
        "bake",
        "assets/penguin.ron",
        "--out",
        out.to_str().unwrap(),
        "--resolution",
        "2x2",
    ]);
    assert!(!ok);
    assert!(stderr.contains("at least 4"), "{stderr}");
    let (ok, _, stderr) = plasticine(&[
        "bake",
        "assets/penguin.ron",
        "--out",
        out.to_str().unwrap(),
        "--fps=0",
    ]);
    assert!(!ok);
    assert!(stderr.contains("fps"), "{stderr}");
    let (ok, _, stderr) = plasticine(&["bake", "no/such/file.ron", "--out", out.to_str().unwrap()]);
    assert!(!ok);
    assert!(stderr.contains("no/such/file.ron"), "{stderr}");
    assert!(
        !Path::new(&out).join("bake.plcache").exists(),
        "nothing half-written"
    );
    // Refused before any runtime is asked, whatever the machine has.
    for bad in ["--reconnect=-1", "--reconnect=nan", "--reconnect=inf"] {
        let (ok, _, stderr) = plasticine(&["xr", "assets/penguin.ron", "--fallback", "none", bad]);
        assert!(!ok, "{bad}");
        assert!(stderr.contains("--reconnect must be"), "{bad}: {stderr}");
    }
}

#[test]
fn every_sample_asset_loads_and_is_settled() {
    for name in ["penguin", "wombat", "torso"] {
        let c = plasticine::io::load_character(Path::new(&format!("assets/{name}.ron"))).unwrap();
        assert!(!c.skins.is_empty() && c.key_postures.len() >= 3, "{name}");
        for s in &c.skins {
            let bound = s.points.band.iter().filter(|b| b.is_some()).count();
            assert!(
                bound >= (s.n - 2) * s.m * 9 / 10,
                "{name}/{}: most points are attached",
                s.name
            );
        }
        // Settled: held in its rest posture, the skin stays where it is.
        let before: Vec<Vec<glam::Vec3>> =
            c.skins.iter().map(|s| s.points.position.clone()).collect();
        let driver = plasticine::skin::SkeletonDriver::Still(c.skeleton.rest_posture());
        let mut sim = plasticine::skin::Simulation::new(c, driver, Default::default()).unwrap();
        sim.advance_to(0.2, None).unwrap();
        for (s, b) in sim.character.skins.iter().zip(&before) {
            let d: Vec<f32> = s
                .points
                .position
                .iter()
                .zip(b)
                .map(|(p, q)| p.distance(*q))
                .collect();
            let rms = (d.iter().map(|x| x * x).sum::<f32>() / d.len() as f32).sqrt();
            let max = d.iter().copied().fold(0.0, f32::max);
            // Contact chatter at sharp muscle tips (the beak) stays a few mm.
            assert!(
                rms < 1e-3 && max < 1e-2,
                "{name}/{}: drifts rms {rms} m, max {max} m at rest",
                s.name
            );
        }
    }
}

#[test]
fn a_settings_file_chooses_the_integrator_unless_the_flag_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("solver.ron");
    std::fs::write(&settings, "(integrator: Rk2, tolerances: (position: 5e-4))").unwrap();
    let out = dir.path().join("b");
    let args = [
        "bake",
        "assets/penguin.ron",
        "--out",
        out.to_str().unwrap(),
        "--duration",
        "0.1",
        "--settings",
        settings.to_str().unwrap(),
    ];
    let (ok, stdout, stderr) = plasticine(&args);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("with rk2"), "{stdout}");
    let mut with_flag = args.to_vec();
    with_flag.extend(["--integrator", "euler"]);
    let (ok, stdout, stderr) = plasticine(&with_flag);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("with euler"), "{stdout}");
    std::fs::write(&settings, "(tolerances: (positon: 5e-4))").unwrap();
    let (ok, _, stderr) = plasticine(&args);
    assert!(!ok);
    assert!(
        stderr.contains("solver.ron") && stderr.contains("positon"),
        "{stderr}"
    );
}

/// A recorded session replayed headless builds a character from nothing:
/// joints with spheres and a superellipsoid, a skin between two joints, a
/// global attach and a fat stroke. A session with a bad command is refused
/// naming the command, and nothing is written.
#[test]
fn a_recorded_session_replays_into_a_character() {
    use glam::{Vec2, Vec3};
    use plasticine::shape::MuscleShape;
    use plasticine::tools::Session;
    use plasticine::tools::{Command, NewMuscle};
    let joint = |parent, name: &str, y, muscle| Command::AddJoint {
        parent,
        name: name.into(),
        position_world: Vec3::new(0.0, y, 0.0),
        muscle,
    };
    let commands = vec![
        joint(0, "belly", 0.2, Some(NewMuscle::sphere(0.13))),
        joint(
            1,
            "chest",
            0.35,
            Some(NewMuscle::centred(MuscleShape::superellipsoid(
                Vec3::new(0.1, 0.09, 0.09),
                Vec2::new(0.8, 1.0),
            ))),
        ),
        joint(2, "head", 0.5, Some(NewMuscle::sphere(0.07))),
        joint(3, "crown", 0.58, None),
        Command::AddSkin {
            name: "body".into(),
            bottom: 0,
            top: 4,
            m: 12,
            n: 12,
            material: Default::default(),
        },
        Command::GlobalAttach {
            skin: 0,
            band: Default::default(),
        },
        Command::FatStroke {
            skin: 0,
            center_point: 12 * 6 + 3,
            radius: 0.05,
            amount: 0.01,
        },
    ];
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("penguin.session.ron");
    std::fs::write(
        &session,
        ron::ser::to_string_pretty(&Session::new(commands.clone()), Default::default()).unwrap(),
    )
    .unwrap();
    let out = dir.path().join("built.ron");
    let (ok, stdout, stderr) = plasticine(&[
        "replay",
        session.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("Replayed 7 commands: 5 joints, 3 muscles, 1 skins"),
        "{stdout}"
    );
    let c = plasticine::io::load_character(&out).unwrap();
    let names: Vec<&str> = c.skeleton.joints.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["root", "belly", "chest", "head", "crown"]);
    assert_eq!(c.skeleton.joints[3].parent, Some(2));
    assert_eq!(
        c.muscles[1].shape,
        MuscleShape::superellipsoid(Vec3::new(0.1, 0.09, 0.09), Vec2::new(0.8, 1.0))
    );
    let skin = &c.skins[0];
    assert!(
        skin.points
            .band
            .iter()
            .skip(12)
            .take(12 * 10)
            .all(|b| b.is_some()),
        "every interior point attached"
    );
    let base = plasticine::character::SkinMaterial::default().fat;
    assert!(
        (skin.points.fat[12 * 6 + 3] - (base + 0.01)).abs() < 1e-6,
        "the stroke's centre got the full amount"
    );
    assert!(
        skin.points.fat.iter().filter(|&&f| f > base + 1e-6).count() < skin.points.fat.len() / 2,
        "fat rose only near the stroke"
    );

    // A bad command: named, nothing written.
    let mut bad = commands;
    bad.insert(
        2,
        Command::FatStroke {
            skin: 3,
            center_point: 0,
            radius: 0.05,
            amount: 0.01,
        },
    );
    std::fs::write(
        &session,
        ron::ser::to_string_pretty(&Session::new(bad), Default::default()).unwrap(),
    )
    .unwrap();
    let out2 = dir.path().join("never.ron");
    let (ok, _, stderr) = plasticine(&[
        "replay",
        session.to_str().unwrap(),
        "--out",
        out2.to_str().unwrap(),
    ]);
    assert!(!ok);
    assert!(
        stderr.contains("penguin.session.ron: command 2 (FatStroke)") && stderr.contains("skin 3"),
        "{stderr}"
    );
    assert!(!out2.exists());
}

/// Ctrl+C (SIGINT) during `plasticine bake` finishes the frame, leaves a
/// checkpoint and the partial cache, says how to continue and exits with 130;
/// `--resume` then gives the same cache, byte for byte, as a bake never
/// interrupted.
#[cfg(unix)]
#[test]
fn ctrl_c_cancels_a_bake_and_resume_finishes_it_identically() {
    let dir = tempfile::tempdir().unwrap();
    let (cut, whole) = (dir.path().join("cut"), dir.path().join("whole"));
    // 121 frames at 64x64: a few seconds, time enough to interrupt.
    let args = |out: &Path| -> Vec<String> {
        [
            "bake",
            "assets/penguin.ron",
            "--out",
            out.to_str().unwrap(),
            "--duration",
            "4",
            "--resolution",
            "64x64",
        ]
        .map(String::from)
        .to_vec()
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_plasticine"))
        .args(args(&cut))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until some frames are on disk (the header is 56 bytes, a frame
    // 3 × 64 × 64 × 12 + 8).
    let partial = cut.join("bake.plcache.partial");
    let frame = 3 * 64 * 64 * 12 + 8;
    let t0 = std::time::Instant::now();
    while std::fs::metadata(&partial).map_or(0, |m| m.len()) < 56 + 3 * frame {
        assert!(
            t0.elapsed().as_secs() < 120,
            "no frames written after 2 minutes"
        );
        assert!(child.try_wait().unwrap().is_none(), "the bake ended early");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let re = stderr
        .lines()
        .find(|l| l.starts_with("bake cancelled at frame "))
        .unwrap_or_else(|| panic!("no cancel message: {stderr}"));
    let (k, n) = re["bake cancelled at frame ".len()..]
        .split_once(';')
        .unwrap()
        .0
        .split_once('/')
        .unwrap();
    let (k, n): (usize, usize) = (k.parse().unwrap(), n.parse().unwrap());
    assert!(k >= 3 && k < n && n == 121, "{re}");
    let resume_cmd = format!(
        "run `plasticine bake assets/penguin.ron --out {} --duration 4 --resolution 64x64 --resume` to continue",
        cut.display()
    );
    assert!(re.contains(&resume_cmd), "{re}");
    assert!(!cut.join("bake.plcache").exists());
    assert!(cut.join("bake.resume").exists());
    let cache = plasticine::io::CacheReader::open(&partial).unwrap();
    assert_eq!(
        cache.frame_count(),
        k,
        "the partial cache holds the frames baked"
    );

    // Without --resume the cancelled bake is not thrown away.
    let mut fresh: Vec<String> = args(&cut);
    let strs = |v: &[String]| v.iter().map(String::as_str).collect::<Vec<_>>().join(" ");
    let run = |v: &[String]| {
        let v: Vec<&str> = v.iter().map(String::as_str).collect();
        plasticine(&v)
    };
    let (ok, _, stderr) = run(&fresh);
    assert!(!ok, "{}", strs(&fresh));
    assert!(
        stderr.contains("holds a cancelled bake") && stderr.contains("--resume"),
        "{stderr}"
    );
    fresh.push("--resume".into());
    // Nor resumed with other options: refused, naming what differs.
    let before = (
        std::fs::read(cut.join("bake.resume")).unwrap(),
        std::fs::read(&partial).unwrap(),
    );
    let mut other = fresh.clone();
    other.extend(["--fps".into(), "24".into()]);
    let (ok, _, stderr) = run(&other);
    assert!(!ok);
    assert!(
        stderr.contains("it differs from this one: fps: then 30, now 24")
            && stderr.contains("--restart"),
        "{stderr}"
    );
    assert!(
        before
            == (
                std::fs::read(cut.join("bake.resume")).unwrap(),
                std::fs::read(&partial).unwrap(),
            ),
        "a refused resume changes nothing"
    );
    let (ok, stdout, stderr) = run(&fresh);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("Baked 121 frames"), "{stdout}");
    let (ok, _, stderr) = run(&args(&whole));
    assert!(ok, "{stderr}");
    let (a, b) = (
        std::fs::read(cut.join("bake.plcache")).unwrap(),
        std::fs::read(whole.join("bake.plcache")).unwrap(),
    );
    assert!(a == b, "the resumed cache equals the uninterrupted one");
    assert!(!cut.join("bake.resume").exists() && !partial.exists());
    // The same solver work in both summaries (wall times aside).
    let summary = |d: &Path| {
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap())
                .unwrap();
        for k in ["wall_seconds", "real_time_factor", "cache"] {
            v.as_object_mut().unwrap().remove(k);
        }
        v
    };
    assert_eq!(summary(&cut), summary(&whole));
}

/// `plasticine bench --only interactive --quick` prints one JSON object per
/// line (machine-readable), with the figures the tools and playback issues
/// ask for, each measured (positive) and with its goal.
/// Every line of `out`, each a JSON object (`plasticine bench` prints
/// nothing else on stdout).
fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

#[test]
fn the_interactive_bench_prints_machine_readable_figures() {
    let (ok, out, err) = plasticine(&["bench", "--only", "interactive", "--quick"]);
    assert!(ok, "{err}");
    let lines = json_lines(&out);
    let find = |name: &str| {
        lines
            .iter()
            .find(|v| v["bench"] == name || v["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in\n{out}"))
    };
    assert!(find("ik_drag_event")["mean_us"].as_f64().unwrap() > 0.0);
    assert!(find("pick")["near_us"].as_f64().unwrap() > 0.0);
    for name in ["baked_playback_frame", "baked_playback_snapshot"] {
        let v = find(name);
        assert!(v["sequential_ms"].as_f64().unwrap() > 0.0, "{v}");
        assert_eq!(v["goal_ms"].as_f64(), Some(1.0));
    }
}

/// `plasticine bench --only contact --quick`: the tube's regimes, and the
/// dropped penguin's skins (`drop_skin`) measured through the landing.
#[test]
fn the_contact_bench_prints_the_scenes_and_the_dropped_skins() {
    let (ok, out, err) = plasticine(&["bench", "--only", "contact", "--quick"]);
    assert!(ok, "{err}");
    let lines = json_lines(&out);
    let tube: Vec<_> = lines.iter().filter(|v| v["scene"] == "tube").collect();
    assert_eq!(tube.len(), 3, "{out}");
    assert!(
        tube.iter().all(|v| v["step_ms"].as_f64().unwrap() > 0.0),
        "{out}"
    );
    let drop = lines
        .iter()
        .find(|v| v["name"] == "drop_skin")
        .unwrap_or_else(|| panic!("no drop_skin in\n{out}"));
    assert_eq!(drop["resolution"], "16x16", "{drop}");
    assert!(drop["rtf"].as_f64().unwrap() > 0.0, "{drop}");
    // 0.4 s: the fall and the landing. The skins stay as smooth as a
    // 16×16 grid is at rest (p95 29°) give or take the squash; before
    // the skin rode the core, the landing crumpled them past 150°.
    let landing = drop["landing_p95_deg"].as_f64().unwrap();
    assert!(landing > 10.0 && landing < 50.0, "{drop}");
    assert!(drop["worst_p95_deg"].as_f64().unwrap() >= landing, "{drop}");
}

/// `plasticine bench --only blendshape --quick`: the Man-sized rig of Ma et
/// al.'s Table 1 (±5 % of its vertices), its sweep converged at every step,
/// with the named figures.
#[test]
fn the_blendshape_bench_prints_the_table_figures() {
    let (ok, out, err) = plasticine(&["bench", "--only", "blendshape", "--quick"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.lines().next().expect("a line"))
        .unwrap_or_else(|e| panic!("{out}: {e}"));
    assert_eq!(v["name"], "blendshape");
    assert_eq!(v["shape"], "Man");
    let vertices = v["vertices"].as_f64().unwrap();
    assert!((vertices - 2200.0).abs() <= 0.05 * 2200.0, "{v}");
    for figure in [
        "warm_step_ms_median",
        "warm_step_ms_p99",
        "cold_solve_ms",
        "newton_iterations",
        "sculpt_rebuild_ms",
        "sculpt_retarget_ms",
        "sculpt_frame_ms",
    ] {
        assert!(v[figure].as_f64().unwrap() > 0.0, "{figure}: {v}");
    }
    assert_eq!(v["cold_solve_weights"], serde_json::json!([0.5, 0.5]));
    assert_eq!(v["failed_steps"], 0, "{v}");
    assert!(v["residual"].as_f64().unwrap() <= 1e-8, "{v}");
    // The push by the analytic ball and by the same ball as a 12k-triangle
    // mesh: both dent the blend in every frame, and hold about as many
    // vertices (the mesh is the sphere to within its chords).
    let (sphere, mesh) = (&v["push"], &v["mesh_push"]);
    assert_eq!(mesh["frames"], sphere["frames"], "{v}");
    assert!(v["mesh_push_triangles"].as_u64().unwrap() > 10_000, "{v}");
    let held = |p: &serde_json::Value| p["contacts_per_frame"].as_f64().unwrap();
    assert!(held(sphere) > 0.0 && held(mesh) > 0.0, "{v}");
    assert!(
        (held(mesh) - held(sphere)).abs() <= 0.5 * held(sphere),
        "{v}"
    );
}

/// `plasticine bench --only modal --quick`: the penguin's parts all solved
/// (none skipped), the limb's part (the sparse eigensolver's side of the
/// size limit: 980 free vertices) with every mode asked for and its
/// lowest frequency the clamped box's, and the mesh case.
#[test]
fn the_modal_bench_prints_every_part_solved() {
    let (ok, out, err) = plasticine(&["bench", "--only", "modal", "--quick"]);
    assert!(ok, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    let penguin = lines
        .iter()
        .find(|v| v["character"] == "penguin")
        .expect("the penguin's line");
    assert_eq!(penguin["skipped"], serde_json::json!([]), "{penguin}");
    assert_eq!(penguin["parts"], 5, "{penguin}");
    let limb = lines
        .iter()
        .find(|v| v["name"] == "modal_part")
        .expect("the limb's line");
    assert!(limb.get("error").is_none(), "{limb}");
    assert_eq!(limb["modes"], limb["modes_asked"], "{limb}");
    // A clamped 0.4 m box of E = 4 kPa, ρ = 1000 kg/m³, 0.12 m square:
    // Euler–Bernoulli's first bending mode, (1.875²/2π)·√(EI/ρAL⁴) =
    // 0.242 Hz; the coarse lattice and its shear (the box is only 3.3 times
    // as long as it is thick) are a few % softer.
    let f = limb["lowest_hz"].as_f64().unwrap();
    assert!((f - 0.242).abs() < 0.08 * 0.242, "{f} Hz: {limb}");
    assert!(limb["precompute_s_per_part"].as_f64().unwrap() > 0.0);
    assert!(lines.iter().any(|v| v["case"] == "mesh"), "{out}");
}

/// `plasticine bench --only gpu --quick`: every figure that needs an
/// adapter, each naming it: the GPU FEM's CG converged on every step of
/// each size and linearization, the modal mesh's frame upload within the
/// issue's 4 KB, and the renderer's lines with the 128×128 skin's render
/// thread share beside its whole frame. Skipped without an adapter unless
/// `PLASTICINE_REQUIRE_GPU_TESTS` is set.
#[test]
fn the_gpu_bench_prints_each_group_on_a_named_adapter() {
    let (ok, out, err) = plasticine(&["bench", "--only", "gpu", "--quick"]);
    assert!(ok, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    if lines.iter().any(|v| v.get("skipped").is_some()) {
        assert!(
            std::env::var_os("PLASTICINE_REQUIRE_GPU_TESTS").is_none(),
            "no adapter: {out}"
        );
        eprintln!("SKIPPED: no wgpu adapter: {out}");
        return;
    }
    for v in &lines {
        assert!(v.get("error").is_none(), "{v}");
        assert!(v["adapter"].as_str().is_some_and(|a| !a.is_empty()), "{v}");
    }
    let fem: Vec<_> = lines.iter().filter(|v| v["bench"] == "fem_gpu").collect();
    assert_eq!(fem.len(), 6, "three sizes × two linearizations: {out}");
    for v in &fem {
        assert_eq!(v["converged_steps"], v["steps"], "{v}");
        let (ms, rate) = (
            v["ms_per_step"].as_f64().unwrap(),
            v["steps_per_second"].as_f64().unwrap(),
        );
        assert!((ms * rate - 1e3).abs() < 1e-6, "{v}");
    }
    let modal = lines
        .iter()
        .find(|v| v["case"] == "mesh")
        .expect("the modal mesh's line");
    let (pose, plain) = (
        modal["gpu_pose_ms"].as_f64().unwrap(),
        modal["gpu_skinning_only_ms"].as_f64().unwrap(),
    );
    assert!(pose > 0.0 && plain > 0.0, "{modal}");
    let over = modal["gpu_modes_over_skinning_ms"].as_f64().unwrap();
    assert!((over - (pose - plain)).abs() <= 1e-9 * pose, "{modal}");
    let upload = modal["upload_bytes_per_frame"].as_u64().unwrap();
    assert!(upload > 0 && upload <= 4096, "{modal}");
    for (name, skin) in [
        ("render_stereo_frame_cpu", "64x64"),
        ("render_stereo_frame_cpu", "128x128"),
        ("render_stereo_frame_total", "128x128"),
    ] {
        assert!(
            lines.iter().any(|v| v["name"] == name && v["skin"] == skin),
            "{name} {skin}: {out}"
        );
    }
}

/// `plasticine bench --only morph --quick`: both of Galoppo's Table 5.1
/// sizes, each with and without its targets, with the named
/// figures, and the targets' overhead.
#[test]
fn the_morph_bench_prints_each_case_with_and_without_targets() {
    let (ok, out, err) = plasticine(&["bench", "--only", "morph", "--quick"]);
    assert!(ok, "{err}");
    let lines = json_lines(&out);
    for (case, targets) in [("herbert-size", 3), ("shoulder-size", 6)] {
        let of = |name: &str, t: u64| {
            lines
                .iter()
                .find(|l| l["name"] == name && l["case"] == case && l["targets"] == t)
                .unwrap_or_else(|| panic!("{name} {case} {t}: {out}"))
        };
        let (plain, with) = (of("morph", 0), of("morph", targets));
        for l in [plain, with] {
            assert!(l["step_ms"].as_f64().unwrap() > 0.0, "{l}");
            assert!(l["dofs"].as_u64().unwrap() > 300, "{l}");
            assert_eq!(l["reduced"], false, "{l}");
        }
        assert_eq!(plain["dofs"], with["dofs"]);
        assert!(
            of("morph_overhead", targets)["overhead_pct"].is_number(),
            "{out}"
        );
    }
}

/// `plasticine soak`, briefly: every cycle's edits undo to the state before
/// them and redo to the edited one (the command fails otherwise), and the
/// summary counts what it did.
#[test]
fn a_short_soak_edits_undoes_redoes_plays_and_bakes() {
    let (ok, stdout, stderr) = plasticine(&[
        "soak",
        "--minutes",
        "0.2",
        "--edits",
        "8",
        "--max-growth",
        "1000",
    ]);
    assert!(ok, "{stderr}");
    let summary: serde_json::Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["name"] == "soak")
        .expect("a summary line");
    assert_eq!(summary["cycles"], 12);
    assert_eq!(summary["edits"], 96);
    assert_eq!(summary["undos_and_redos"], 192);
    assert!(summary["rss_peak_mb"].as_f64().unwrap() > 1.0, "{summary}");
    // It drew with the real renderer, and the GPU holds what it held
    // after the warm-up (the command fails on more buffers or textures).
    assert!(
        summary["draw_ms_median_end"].as_f64().unwrap() > 0.0,
        "{summary}"
    );
    assert!(
        summary["gpu_end"]["buffers"].as_u64().unwrap() > 0,
        "{summary}"
    );
    assert_eq!(
        summary["gpu_end"], summary["gpu_after_warm_up"],
        "{summary}"
    );
}

#[test]
fn the_drape_workload_prints_the_documented_lines_and_refuses_bad_sizes() {
    let (ok, stdout, stderr) = plasticine(&[
        "bench",
        "drape",
        "--sizes",
        "8x8,16x12",
        "--runs",
        "3",
        "--sim-seconds",
        "0.05",
        "--sim-seconds-for",
        "16x12=0.01",
        "--threads",
        "2",
    ]);
    assert!(ok, "{stderr}");
    let lines = json_lines(&stdout);
    assert_eq!(lines.len(), 2, "{stdout}");
    for (line, (m, n, steps)) in lines.iter().zip([(8, 8, 100), (16, 12, 20)]) {
        assert_eq!(line["peer"], "plasticine");
        assert_eq!((line["M"].as_u64(), line["N"].as_u64()), (Some(m), Some(n)));
        assert_eq!(line["points"], m * n);
        assert_eq!(line["springs"], m * (6 * n - 5));
        assert_eq!(line["steps"], steps);
        assert_eq!(line["runs_wall_seconds"].as_array().unwrap().len(), 3);
        assert_eq!(line["threads"], 2);
        assert_eq!(line["finite"], true);
        let wall = line["wall_seconds"].as_f64().unwrap();
        let rate = line["point_steps_per_s"].as_f64().unwrap();
        assert!(((m * n * steps) as f64 / wall - rate).abs() <= 1e-9 * rate);
        for field in [
            "max_penetration_end",
            "mean_radius_end",
            "min_radius_end",
            "max_radius_end",
            "mean_y_end",
            "kinetic_energy_end",
            "spring_energy_end",
            "setup_and_warmup_seconds",
            "realtime_factor",
        ] {
            assert!(line[field].is_number(), "{field} missing: {line}");
        }
    }

    // Checkpoints: one line per step count, the initial state first.
    let (ok, stdout, stderr) = plasticine(&[
        "bench",
        "drape",
        "--sizes",
        "16x16",
        "--checkpoints",
        "0,1,10",
        "--precision",
        "f64",
    ]);
    assert!(ok, "{stderr}");
    let lines = json_lines(&stdout);
    let steps: Vec<u64> = lines.iter().map(|l| l["steps"].as_u64().unwrap()).collect();
    assert_eq!(steps, [0, 1, 10]);
    // At rest at first, pre-stretched as the workload document says.
    assert_eq!(lines[0]["sum_vy"], 0.0);
    let e = lines[0]["spring_energy_end"].as_f64().unwrap();
    assert!((e - 5.77).abs() < 0.005, "{e}");
    assert!(
        lines[2]["sum_vy"].as_f64().unwrap() < 0.0,
        "gravity pulls down"
    );

    for (args, what) in [
        (&["--sizes", "3x3"][..], "at least 4x4"),
        (&["--sizes", "64"][..], "is not MxN"),
        (&["--threads", "0"][..], "--threads must be at least 1"),
        (&["--runs", "0"][..], "--runs must be at least 1"),
        (
            &["--sim-seconds", "0.0001"][..],
            "whole number of 0.0005 s steps",
        ),
    ] {
        let mut all = vec!["bench", "drape"];
        all.extend_from_slice(args);
        let (ok, stdout, stderr) = plasticine(&all);
        assert!(!ok && stderr.contains(what), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?} printed {stdout}");
    }
}

/// What a render farm needs of a bake: the same bytes on any number of
/// threads, and a long shot baked as chained jobs (`--until-frame`, then
/// `--resume`) that equals one bake, each job ending successfully.
#[test]
fn a_bake_is_the_same_on_any_thread_count_and_as_chained_farm_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let out = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let bake = |name: &str, threads: &str, extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_plasticine"));
        cmd.args([
            "bake",
            "assets/penguin.ron",
            "--out",
            &out(name),
            "--duration",
            "0.3",
            "--resolution",
            "48x48",
        ])
        .args(extra)
        .env("RAYON_NUM_THREADS", threads);
        let o = cmd.output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        );
        assert!(o.status.success(), "{name} {extra:?}: {stdout}{stderr}");
        stdout
    };
    bake("one", "1", &[]);
    bake("two", "2", &[]);
    let first = bake("chained", "2", &["--until-frame", "3"]);
    assert!(
        first.contains("baked frames 0 to 3 of the 10")
            && first.contains("--resume`")
            && !first.contains("--until-frame 3 "),
        "{first}"
    );
    let second = bake("chained", "1", &["--resume", "--until-frame", "6"]);
    assert!(second.contains("baked frames 0 to 6 of the 10"), "{second}");
    let last = bake("chained", "2", &["--resume"]);
    assert!(last.contains("Baked 10 frames"), "{last}");
    let cache = |name: &str| std::fs::read(Path::new(&out(name)).join("bake.plcache")).unwrap();
    let one = cache("one");
    assert!(one == cache("two"), "1 and 2 threads baked different bytes");
    assert!(
        one == cache("chained"),
        "the chained jobs baked different bytes"
    );
}

#[test]
fn the_scaling_bench_fits_an_exponent_for_every_part() {
    let (ok, stdout, stderr) = plasticine(&["bench", "--scaling", "--quick"]);
    assert!(ok, "{stderr}");
    let lines = json_lines(&stdout);
    let parts: Vec<&str> = lines.iter().map(|l| l["what"].as_str().unwrap()).collect();
    assert_eq!(
        parts,
        [
            "skin_step",
            "skin_step_without_skin_contact",
            "skin_skin_contact",
            "skin_muscle_contact",
            "fem_step",
            "bake_second",
            "export_second"
        ]
    );
    for l in &lines {
        assert_eq!(l["sizes"].as_array().unwrap().len(), 4, "{l}");
        let n: Vec<f64> = l["n"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert!(n.windows(2).all(|w| w[1] > w[0]), "sizes grow: {l}");
        // Every part but the contact's share (a difference of two timings)
        // has a positive cost at every size and so a fitted exponent.
        if l["what"] != "skin_skin_contact" {
            assert!(l["exponent"].as_f64().is_some_and(f64::is_finite), "{l}");
        }
    }
    // The FEM line says how each size was solved: CG iterations per step,
    // and the factor's fill where one preconditions (these small lattices
    // are all under the fill budget, so each has one, filling over the
    // matrix as the lattice grows).
    let fem = &lines[4];
    assert_eq!(fem["cg_iterations_per_step"].as_array().unwrap().len(), 4);
    let ratios: Vec<f64> = fem["factor_fill"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["ratio"].as_f64().unwrap())
        .collect();
    assert!(ratios.windows(2).all(|w| w[1] > w[0]), "{ratios:?}");
}
