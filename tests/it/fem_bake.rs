//! Bake → render → export of an FEM character as a user runs it:
//! the sample limb imported with `plasticine fem-import` (an embedded mesh
//! and no skins), baked, rendered from the bake and exported, with the real
//! binary and real files. The cache's mesh frames are checked against the
//! flesh simulation run directly. Run with `--nocapture` for the numbers.

use crate::support::plasticine;
use glam::Vec3;
use plasticine::io::{CacheReader, CacheWriter, load_character};
use plasticine::skin::{Simulation, SkeletonDriver, SolverSettings};
use std::path::{Path, PathBuf};

const FPS: f32 = 10.0;
/// Rest at t = 0, the elbow bent 1.2 rad at the key t = 0.5.
const DURATION: &str = "0.5";

/// Imports the limb into `dir/limb.ron` and bakes it into `dir/bake`
/// (every 5th frame also as OBJ).
fn import_and_bake(dir: &Path) -> (PathBuf, PathBuf, String) {
    let character = dir.join("limb.ron");
    let (ok, _, stderr) = plasticine(&[
        "fem-import",
        "assets/limb.obj",
        "--skeleton",
        "assets/limb_skeleton.ron",
        "--out",
        character.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let bake = dir.join("bake");
    let (ok, stdout, stderr) = plasticine(&[
        "bake",
        character.to_str().unwrap(),
        "--out",
        bake.to_str().unwrap(),
        "--fps",
        &FPS.to_string(),
        "--duration",
        DURATION,
        "--obj",
        "5",
    ]);
    assert!(ok, "{stderr}");
    (character, bake, stdout)
}

fn max_distance(a: &[Vec3], b: &[Vec3]) -> f32 {
    a.iter()
        .zip(b)
        .map(|(p, q)| p.distance(*q))
        .fold(0.0, f32::max)
}

fn obj_vertices(path: &Path) -> Vec<Vec3> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("v "))
        .map(|l| {
            let c: Vec<f32> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
            Vec3::new(c[0], c[1], c[2])
        })
        .collect()
}

#[test]
fn baked_fem_mesh_equals_the_flesh_simulation_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let (character_path, bake, stdout) = import_and_bake(dir.path());
    let character = load_character(&character_path).unwrap();
    assert!(
        character.skins.is_empty(),
        "an imported character has no skins"
    );
    let mesh = character
        .flesh
        .fem()
        .and_then(|f| f.embedded_mesh.clone())
        .expect("an embedded mesh");
    let vertices = mesh.positions.len();
    assert!(
        stdout.contains(&format!("{vertices} vertices per frame")),
        "{stdout}"
    );

    // The cache: a version-4 file (checksummed) with the mesh in every frame.
    let mut reader = CacheReader::open(&bake.join("bake.plcache")).unwrap();
    let frames = reader.frame_count();
    assert_eq!(frames, 6, "0.5 s at 10 fps, both ends");
    assert_eq!(reader.version(), 4);
    assert!(reader.flesh().modal.is_empty(), "FEM flesh has no modes");
    assert_eq!(reader.flesh().meshes.len(), 1);
    assert_eq!(reader.flesh().meshes[0].vertices, vertices);
    assert_eq!(reader.flesh().muscles, character.muscles.len());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bake.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["frames"], 6);
    assert_eq!(summary["flesh"]["meshes"][0]["vertices"], vertices);

    // The flesh simulation run directly, frame by frame as the bake does.
    let driver = SkeletonDriver::Keys(character.key_postures.clone());
    let mut sim = Simulation::new(character.clone(), driver, SolverSettings::default()).unwrap();
    let (mut skins, mut meshes, mut muscles) = (Vec::new(), Vec::new(), Vec::new());
    let mut cached = Vec::new();
    let mut worst = 0f32;
    for f in 0..frames {
        let t = f as f64 / FPS as f64;
        if f > 0 {
            sim.advance_to(t, None).unwrap();
        }
        let time = reader
            .read_frame_with_flesh(f, &mut skins, &mut meshes, &mut muscles)
            .unwrap();
        assert_eq!(time, t);
        assert!(skins.is_empty());
        let pose = sim.flesh_pose().expect("FEM flesh");
        let direct = pose.mesh.expect("the embedded mesh");
        assert_eq!(meshes[0].len(), vertices);
        worst = worst.max(max_distance(&meshes[0], &direct));
        assert_eq!(muscles.len(), pose.muscle_offsets.len());
        cached.push(meshes[0].clone());
    }
    let rest_to_rest = max_distance(&cached[0], &mesh.positions);
    let bent = max_distance(&cached[0], &cached[frames - 1]);
    eprintln!(
        "{vertices} vertices, {frames} frames: cache vs FleshSim ≤ {worst:.2e} m; \
         frame 0 vs the rest mesh {rest_to_rest:.2e} m; rest vs bent key {bent:.3} m"
    );
    assert!(worst <= 1e-6, "the cache holds the flesh's mesh: {worst}");
    // Frame 0 is the flesh at rest under the first key (the rest posture),
    // within the few millimetres the lattice's settling moves it.
    assert!(
        rest_to_rest < 5e-3,
        "frame 0 is near the rest mesh: {rest_to_rest}"
    );
    assert!(bent > 0.05, "the bent key moves the mesh: {bent}");

    // Baked playback: the snapshot of each frame carries the cached mesh.
    let mut playback =
        plasticine::app::BakedFrames::open(&bake.join("bake.plcache"), &character).unwrap();
    let mut sequence = 0;
    for (f, expected) in cached.iter().enumerate() {
        let t = f as f64 / FPS as f64;
        let posture = character.skeleton.rest_posture();
        let snap = playback.snapshot(t, &posture, 0, &mut sequence).unwrap();
        let pose = snap.flesh.as_ref().expect("a flesh pose from the bake");
        assert_eq!(pose.mesh.as_ref(), Some(expected));
        assert_eq!(pose.muscle_offsets.len(), character.muscles.len());
    }

    // --obj 5: frames 0 and 5, the mesh's vertices as the cache has them.
    for f in [0, 5] {
        let v = obj_vertices(&bake.join("obj").join(format!("frame_{f:05}.obj")));
        assert_eq!(v.len(), vertices);
        assert!(max_distance(&v, &cached[f]) < 1e-6);
    }

    // Export: glb, usda and an OBJ sequence each hold the mesh.
    let cache = bake.join("bake.plcache");
    let export = |out: &Path, extra: &[&str]| {
        let mut args = vec![
            "export",
            character_path.to_str().unwrap(),
            "--baked",
            cache.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (ok, stdout, stderr) = plasticine(&args);
        assert!(ok, "{stdout}{stderr}");
    };
    let glb = dir.path().join("limb.glb");
    export(&glb, &[]);
    let doc = glb_json(&glb);
    let limb = doc["meshes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "limb")
        .expect("a mesh named after the import");
    let prim = &limb["primitives"][0];
    let position = prim["attributes"]["POSITION"].as_u64().unwrap() as usize;
    assert_eq!(doc["accessors"][position]["count"], vertices);
    assert_eq!(
        prim["targets"].as_array().map(Vec::len),
        Some(frames),
        "one morph target per frame"
    );
    let indices = prim["indices"].as_u64().unwrap() as usize;
    assert_eq!(doc["accessors"][indices]["count"], 3 * mesh.triangles.len());

    let usda = dir.path().join("limb.usda");
    export(&usda, &[]);
    let text = std::fs::read_to_string(&usda).unwrap();
    assert!(text.contains("plasticine:embeddedMesh = \"limb\""));
    let first_sample = text
        .lines()
        .skip_while(|l| !l.contains("point3f[] points.timeSamples"))
        .nth(1)
        .unwrap();
    assert_eq!(first_sample.matches('(').count(), vertices);
    assert_eq!(
        text.matches("point3f[] points.timeSamples").count(),
        1,
        "one mesh prim"
    );

    let seq = dir.path().join("seq");
    export(&seq, &["--format", "obj"]);
    for (f, expected) in cached.iter().enumerate() {
        let v = obj_vertices(&seq.join(format!("frame_{f:05}.obj")));
        assert_eq!(v.len(), vertices);
        assert!(max_distance(&v, expected) < 1e-6);
    }
}

/// The JSON chunk of a .glb.
fn glb_json(path: &Path) -> serde_json::Value {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[0..4], b"glTF");
    let len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    serde_json::from_slice(&bytes[20..20 + len]).unwrap()
}

/// Counts pixels of the muscle red (the embedded mesh's colour), in all and
/// in the outer tenth of the image on every side.
fn red_pixels(path: &Path) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let (w, h) = (info.width, info.height);
    let (mut all, mut border) = (0, 0);
    for y in 0..h {
        for x in 0..w {
            let i = ((y * w + x) * 4) as usize;
            let [r, g, b] = [0, 1, 2].map(|c| buf[i + c] as i32);
            if r > g + 40 && r > b + 40 {
                all += 1;
                if x < w / 10 || x >= w - w / 10 || y < h / 10 || y >= h - h / 10 {
                    border += 1;
                }
            }
        }
    }
    (all, border)
}

#[test]
fn render_of_a_fem_bake_draws_the_deformed_mesh() {
    let dir = tempfile::tempdir().unwrap();
    let (character, bake, _) = import_and_bake(dir.path());
    let cache = bake.join("bake.plcache");
    // The bake's frames 0 and 5 (10 fps); live at 30 fps, frames 0 and 15.
    let render = |out: &Path, baked: bool, extra: &[&str]| {
        let mut args = vec![
            "render",
            character.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--size",
            "160x120",
            "--stereo",
            "mono",
            "--frames",
            "2",
        ];
        if baked {
            args.extend_from_slice(&["--baked", cache.to_str().unwrap(), "--every", "5"]);
        } else {
            args.extend_from_slice(&["--every", "15"]);
        }
        args.extend_from_slice(extra);
        let (ok, stdout, stderr) = plasticine(&args);
        assert!(ok, "{stdout}{stderr}");
    };
    let baked = dir.path().join("baked");
    render(&baked, true, &[]);
    let live = dir.path().join("live");
    render(&live, false, &[]);
    // The control: the same bake with muscles (and so the mesh) hidden.
    let hidden = dir.path().join("hidden");
    render(&hidden, true, &["--muscles", "hidden"]);
    let mut counts = Vec::new();
    for (f, g) in [(0, 0), (5, 15)] {
        let name = format!("frame_{f:05}.png");
        let (b, b_border) = red_pixels(&baked.join(&name));
        let (l, _) = red_pixels(&live.join(format!("frame_{g:05}.png")));
        let (none, _) = red_pixels(&hidden.join(&name));
        eprintln!(
            "{name}: {b} mesh pixels baked ({b_border} in the border), {l} live, {none} hidden"
        );
        assert_eq!(none, 0, "{name}: the red pixels are the mesh's");
        assert!(b > 500, "{name}: the mesh is drawn: {b} pixels");
        assert_eq!(b_border, 0, "{name}: nothing drawn where the mesh is not");
        // The same flesh, drawn from the bake or live.
        let ratio = b as f32 / l as f32;
        assert!((0.95..1.05).contains(&ratio), "{name}: {b} vs {l}");
        counts.push(b);
    }
    assert_ne!(counts[0], counts[1], "the bent mesh covers other pixels");
}

/// A version-1 cache (as written before FEM flesh was baked and before
/// checksums) opens and reads, with no flesh.
#[test]
fn old_format_cache_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.plcache");
    let points: Vec<Vec3> = (0..12).map(|i| Vec3::splat(i as f32)).collect();
    // The version-1 layout, byte by byte: magic, version, fps, frame count,
    // one skin record (m, n, name), then frames of a time and 12 points.
    let mut bytes = b"PLSTCACH".to_vec();
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&24f32.to_le_bytes());
    bytes.extend_from_slice(&2u64.to_le_bytes());
    bytes.extend_from_slice(&1u32.to_le_bytes());
    for x in [4u32, 3, 4] {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    bytes.extend_from_slice(b"body");
    for t in [0.0f64, 0.5] {
        bytes.extend_from_slice(&t.to_le_bytes());
        for p in &points {
            for c in p.to_array() {
                bytes.extend_from_slice(&c.to_le_bytes());
            }
        }
    }
    assert_eq!(bytes.len(), 28 + 12 + 4 + 2 * (8 + 12 * 12));
    std::fs::write(&path, &bytes).unwrap();
    let mut r = CacheReader::open(&path).unwrap();
    assert_eq!(r.version(), 1);
    assert!(r.flesh().is_empty());
    let (mut skins, mut meshes, mut muscles) = (Vec::new(), vec![vec![Vec3::ONE]], Vec::new());
    let t = r
        .read_frame_with_flesh(1, &mut skins, &mut meshes, &mut muscles)
        .unwrap();
    assert_eq!(t, 0.5);
    assert_eq!(skins, vec![points]);
    assert!(meshes.is_empty() && muscles.is_empty());
}

/// A cache with flesh round-trips it exactly, its writer refuses
/// frames that do not fit the header, and damaged flesh headers or frames
/// are reported with their offset, never a panic.
#[test]
fn flesh_sections_round_trip_and_hostile_headers_are_refused() {
    use glam::Affine3A;
    use plasticine::io::{CacheFlesh, CacheMesh, IoError};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.plcache");
    let flesh = CacheFlesh {
        meshes: vec![CacheMesh {
            name: "limb".into(),
            vertices: 5,
        }],
        muscles: 2,
        modal: Vec::new(),
        root: false,
    };
    let skin: Vec<Vec3> = (0..12).map(|i| Vec3::splat(i as f32)).collect();
    let mesh = |k: usize| -> Vec<Vec3> {
        (0..5)
            .map(|i| Vec3::new(i as f32, k as f32, 0.1 * i as f32))
            .collect()
    };
    let muscles = |k: usize| {
        vec![
            Affine3A::from_rotation_z(0.1 * k as f32),
            Affine3A::from_scale_rotation_translation(
                Vec3::new(1.0, 0.9, 1.1),
                glam::Quat::from_rotation_x(0.3),
                Vec3::new(0.0, 0.01 * k as f32, 0.0),
            ),
        ]
    };
    let mut w = CacheWriter::create_with_flesh(&path, 30.0, &[("s", 4, 3)], &flesh).unwrap();
    // Frames that do not fit the header write nothing.
    assert!(w.write_frame(0.0, &[&skin]).is_err(), "the mesh is missing");
    assert!(
        w.write_frame_with_flesh(0.0, &[&skin], &[&mesh(0)[..4]], &muscles(0))
            .is_err()
    );
    let mut nan = muscles(0);
    nan[1].translation.x = f32::NAN;
    assert!(
        w.write_frame_with_flesh(0.0, &[&skin], &[&mesh(0)], &nan)
            .is_err()
    );
    for k in 0..3 {
        w.write_frame_with_flesh(k as f64 / 30.0, &[&skin], &[&mesh(k)], &muscles(k))
            .unwrap();
    }
    let summary = w.finish().unwrap();
    assert_eq!(summary.flesh, flesh);
    // The fields (the last: no modal parts), then the header's checksum;
    // each frame ends with its own.
    let fields = 28 + (12 + 1) + 4 + (8 + 4) + 4 + 4;
    let header = fields + 4;
    let frame = 8 + 12 * 12 + 12 * 5 + 48 * 2 + 4;
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), header + 3 * frame);
    let mut r = CacheReader::open(&path).unwrap();
    assert_eq!((r.version(), r.flesh()), (4, &flesh));
    let (mut s, mut m, mut u) = (Vec::new(), Vec::new(), Vec::new());
    for k in [2, 0, 1] {
        r.read_frame_with_flesh(k, &mut s, &mut m, &mut u).unwrap();
        assert_eq!(s, vec![skin.clone()]);
        assert_eq!(m, vec![mesh(k)]);
        assert_eq!(u, muscles(k), "bit for bit");
    }

    let open = |b: &[u8]| {
        let p = dir.path().join("bad.plcache");
        std::fs::write(&p, b).unwrap();
        CacheReader::open(&p).unwrap_err()
    };
    let mesh_count_at = 28 + 13;
    let mut v = bytes.clone();
    v[mesh_count_at..mesh_count_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let err = open(&v);
    assert!(
        matches!(err, IoError::Corrupt { offset, .. } if offset == mesh_count_at as u64),
        "{err:?}"
    );
    for bad_vertices in [0u32, u32::MAX] {
        let mut v = bytes.clone();
        v[mesh_count_at + 4..mesh_count_at + 8].copy_from_slice(&bad_vertices.to_le_bytes());
        let err = open(&v);
        assert!(err.to_string().contains("embedded mesh 0"), "{err}");
    }
    let mut v = bytes.clone();
    v[mesh_count_at + 8..mesh_count_at + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(open(&v), IoError::Corrupt { .. }), "a huge name");
    let mut v = bytes.clone();
    v[mesh_count_at + 12] = 0xff;
    assert!(open(&v).to_string().contains("not UTF-8"));
    let mut v = bytes.clone();
    v[fields - 8..fields - 4].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(open(&v).to_string().contains("muscle offsets"));
    // Cut in the flesh header, and in the last frame's muscle offsets.
    assert!(matches!(
        open(&bytes[..fields - 2]),
        IoError::Truncated { .. }
    ));
    let err = open(&bytes[..bytes.len() - 10]);
    assert!(
        matches!(err, IoError::Truncated { offset, .. } if offset == (header + 2 * frame) as u64),
        "{err:?}"
    );
}

/// Version 4's modal section: each part's name and angular frequencies in
/// the header, every frame's amplitudes after the muscle offsets, read back
/// bit for bit; wrong amplitudes write nothing and hostile part records are
/// refused naming the part.
#[test]
fn modal_amplitudes_round_trip_and_hostile_parts_are_refused() {
    use plasticine::io::{CacheFlesh, CacheModalPart};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.plcache");
    let flesh = CacheFlesh {
        meshes: Vec::new(),
        muscles: 0,
        modal: vec![
            CacheModalPart {
                name: "arm".into(),
                omega: vec![20.0, 31.5],
            },
            CacheModalPart {
                name: "leg".into(),
                omega: vec![12.25],
            },
        ],
        root: false,
    };
    let skin: Vec<Vec3> = (0..12).map(|i| Vec3::splat(i as f32)).collect();
    let q = |k: usize| vec![0.1 * k as f32, -0.02, 1e-7 * k as f32];
    let mut w = CacheWriter::create_with_flesh(&path, 30.0, &[("s", 4, 3)], &flesh).unwrap();
    assert!(
        w.write_frame_with_modal(0.0, &[&skin], &[], &[], &q(0)[..2])
            .is_err(),
        "too few amplitudes"
    );
    assert!(
        w.write_frame_with_modal(0.0, &[&skin], &[], &[], &[0.0, f32::NAN, 0.0])
            .is_err(),
        "a NaN amplitude"
    );
    for k in 0..3 {
        w.write_frame_with_modal(k as f64 / 30.0, &[&skin], &[], &[], &q(k))
            .unwrap();
    }
    w.finish().unwrap();
    let parts = 4 + (4 + 3 + 4 + 8) + (4 + 3 + 4 + 4);
    let fields = 28 + (12 + 1) + 4 + 4 + parts;
    let frame = 8 + 12 * 12 + 4 * 3 + 4;
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), fields + 4 + 3 * frame);
    let mut r = CacheReader::open(&path).unwrap();
    assert_eq!((r.version(), r.flesh()), (4, &flesh));
    for k in [2, 0, 1] {
        assert_eq!(r.read_amplitudes(k).unwrap(), q(k), "bit for bit");
    }

    let open = |b: &[u8]| {
        let p = dir.path().join("bad.plcache");
        std::fs::write(&p, b).unwrap();
        CacheReader::open(&p).unwrap_err().to_string()
    };
    let arm = 28 + 13 + 4 + 4 + 4;
    let mut v = bytes.clone();
    v[arm - 4..arm].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(open(&v).contains("modal parts"), "{}", open(&v));
    let mut v = bytes.clone();
    v[arm + 7..arm + 11].copy_from_slice(&0u32.to_le_bytes());
    assert!(open(&v).contains("modal part 0 (\"arm\")"), "{}", open(&v));
    let mut v = bytes.clone();
    v[arm + 11..arm + 15].copy_from_slice(&f32::NAN.to_le_bytes());
    let err = open(&v);
    assert!(err.contains("mode 0's angular frequency"), "{err}");
    assert!(open(&bytes[..arm + 13]).contains("modal part 0"));
}

/// A bake of the imported limb cancelled part-way and resumed writes the
/// same cache, bit for bit, as one never interrupted: the flesh replays from
/// its start, so the mesh frames after the checkpoint continue exactly.
#[test]
fn cancelled_and_resumed_fem_bake_equals_an_uninterrupted_one() {
    use plasticine::bake::BakeOptions;
    let dir = tempfile::tempdir().unwrap();
    let character_path = dir.path().join("limb.ron");
    let (ok, _, stderr) = plasticine(&[
        "fem-import",
        "assets/limb.obj",
        "--skeleton",
        "assets/limb_skeleton.ron",
        "--out",
        character_path.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let character = load_character(&character_path).unwrap();
    let opts = BakeOptions {
        fps: FPS,
        duration: Some(0.5),
        ..BakeOptions::default()
    };
    let (a, b) = crate::support::bake_whole_and_resumed(&character, &opts, dir.path(), 3, |cut| {
        let partial = CacheReader::open(&cut.join("bake.plcache.partial")).unwrap();
        assert_eq!(partial.frame_count(), 3);
        assert_eq!(partial.flesh().meshes.len(), 1);
    });
    assert_eq!(a.len(), b.len());
    assert!(a == b, "the resumed cache equals the uninterrupted one");
}

/// An FEM character with muscles and no embedded mesh (the bare penguin on
/// FEM flesh, swung by two keys): the bake stores one flesh offset per
/// muscle per frame, equal to the flesh simulation's, and not all rigid.
#[test]
fn muscle_offsets_are_baked_as_the_flesh_moves_them() {
    use plasticine::bake::{BakeControl, BakeOptions, bake};
    use plasticine::character::{FemFlesh, Flesh, KeyPosture};
    let mut c = plasticine::samples::bare("penguin").unwrap();
    c.flesh = Flesh::Fem(FemFlesh::default());
    let rest = c.skeleton.rest_posture();
    let mut flapped = rest.clone();
    flapped.angles[c.skeleton.find("flipper_l").unwrap()] = Vec3::new(0.0, 0.0, 0.8);
    let key = |time: f32, posture| KeyPosture {
        time,
        posture,
        tension: 0.0,
        continuity: 0.0,
        bias: 0.0,
    };
    c.key_postures = vec![key(0.0, rest), key(0.2, flapped)];
    let dir = tempfile::tempdir().unwrap();
    let opts = BakeOptions {
        fps: FPS,
        duration: Some(0.2),
        ..BakeOptions::default()
    };
    let summary = bake(c.clone(), &opts, dir.path(), |_, _| BakeControl::Continue)
        .unwrap()
        .finished()
        .unwrap();
    assert_eq!(summary.flesh.muscles, c.muscles.len());
    assert!(summary.flesh.meshes.is_empty());
    let mut reader = CacheReader::open(&summary.cache).unwrap();
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let mut sim = Simulation::new(c.clone(), driver, SolverSettings::default()).unwrap();
    let (mut skins, mut meshes, mut muscles) = (Vec::new(), Vec::new(), Vec::new());
    let mut moved = 0f32;
    for f in 0..reader.frame_count() {
        if f > 0 {
            sim.advance_to(f as f64 / FPS as f64, None).unwrap();
        }
        reader
            .read_frame_with_flesh(f, &mut skins, &mut meshes, &mut muscles)
            .unwrap();
        assert_eq!(skins.len(), c.skins.len());
        let direct = sim.flesh_pose().unwrap().muscle_offsets;
        assert_eq!(muscles, direct, "frame {f}: bit for bit");
        for m in &muscles {
            moved = moved.max(m.translation.length());
        }
    }
    eprintln!(
        "{} muscles: largest baked offset translation {moved:.2e} m",
        c.muscles.len()
    );
    assert!(moved > 1e-5, "the flesh moves the muscles: {moved}");
}

/// Version 5: a root frame per frame (a bake whose skeleton responded)
/// after the muscle offsets and before the modal amplitudes, read back
/// exactly; a frame without one where the header asks for one (or the
/// other way round) is refused, and so are unknown header flags.
#[test]
fn root_frames_round_trip_and_a_missing_one_is_refused() {
    use glam::{Affine3A, Quat};
    use plasticine::io::{CacheFlesh, CacheModalPart, CacheReader, CacheWriter};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v5.plcache");
    let flesh = CacheFlesh {
        meshes: Vec::new(),
        muscles: 1,
        modal: vec![CacheModalPart {
            name: "arm".into(),
            omega: vec![20.0],
        }],
        root: true,
    };
    let skin: Vec<Vec3> = (0..12).map(|i| Vec3::splat(i as f32)).collect();
    let root = |k: usize| {
        Affine3A::from_rotation_translation(
            Quat::from_rotation_z(0.1 * k as f32),
            Vec3::new(0.0, 0.5 - 0.1 * k as f32, 0.0),
        )
    };
    let offset = Affine3A::from_translation(Vec3::X);
    let mut w = CacheWriter::create_with_flesh(&path, 30.0, &[("s", 4, 3)], &flesh).unwrap();
    // No root where the header asks for one: refused, nothing written.
    let err = w
        .write_frame_with_modal(0.0, &[&skin], &[], &[offset], &[0.5])
        .unwrap_err();
    assert!(err.to_string().contains("root frame"), "{err}");
    for k in 0..3 {
        w.write_frame_with_root(
            k as f64 / 30.0,
            &[&skin],
            &[],
            &[offset],
            &[k as f32],
            Some(root(k)),
        )
        .unwrap();
    }
    w.finish().unwrap();
    let mut r = CacheReader::open(&path).unwrap();
    assert_eq!(r.version(), 5);
    assert!(r.flesh().root);
    let (mut s, mut m, mut o) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..3 {
        r.read_frame_with_flesh(k, &mut s, &mut m, &mut o).unwrap();
        assert_eq!(r.root(), Some(root(k)));
        assert_eq!(o, [offset]);
        assert_eq!(r.read_amplitudes(k).unwrap(), [k as f32]);
    }
    // A cache without a root layout refuses a root frame.
    let plain = dir.path().join("v4.plcache");
    let mut w = CacheWriter::create_with_flesh(
        &plain,
        30.0,
        &[("s", 4, 3)],
        &CacheFlesh {
            root: false,
            ..flesh.clone()
        },
    )
    .unwrap();
    let err = w
        .write_frame_with_root(0.0, &[&skin], &[], &[offset], &[0.5], Some(root(0)))
        .unwrap_err();
    assert!(err.to_string().contains("root frame"), "{err}");
}
