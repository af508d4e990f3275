//! Character files, the bake cache and atomic writes: round trips, and the
//! errors users see for broken, hostile or foreign files.

use glam::{Quat, Vec3};
use plasticine::character::{
    Band, Character, Dof, Environment, Joint, KeyPosture, Muscle, Posture, Skeleton, Skin,
    SkinPoints,
};
use plasticine::io::{
    AtomicFile, CACHE_FORMAT_VERSION, CacheReader, CacheWriter, IoError, bytes_per_frame,
    character_to_string, load_character, parse_character, save_character, write_atomic,
};
use plasticine::shape::MuscleShape;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Two joints, one sphere muscle on the first, a 4x4 skin between them with a
/// band on one point, and two key postures.
fn small_character() -> Character {
    let joints = vec![
        Joint {
            locked: false,
            name: "hip".into(),
            parent: None,
            offset: Vec3::ZERO,
            rest_rotation: Quat::IDENTITY,
            dofs: [Dof::default(); 3],
        },
        Joint {
            locked: false,
            name: "knee".into(),
            parent: Some(0),
            offset: Vec3::new(0.0, -0.4, 0.0),
            rest_rotation: Quat::from_rotation_z(0.3),
            dofs: [
                Dof {
                    free: true,
                    min: -0.1,
                    max: 2.5,
                },
                Dof::LOCKED,
                Dof::LOCKED,
            ],
        },
    ];
    let muscle = Muscle {
        joint: 0,
        offset: Vec3::new(0.0, -0.2, 0.0),
        rotation: Quat::IDENTITY,
        shape: MuscleShape::sphere(0.12),
        drivers: vec![],
        color: None,
    };
    let (m, n) = (4usize, 4usize);
    let count = m * n;
    let mut position = Vec::with_capacity(count);
    for j in 0..n {
        for i in 0..m {
            let a = i as f32 / m as f32 * std::f32::consts::TAU;
            position.push(Vec3::new(
                0.15 * a.cos(),
                -0.4 * j as f32 / (n - 1) as f32,
                0.15 * a.sin(),
            ));
        }
    }
    let mut band = vec![None; count];
    band[5] = Some(Band {
        muscle: 0,
        anchor: Vec3::new(0.1, 0.0, 0.0),
        ks: 4.0,
        kd: 0.05,
        rest_length: 0.01,
    });
    let points = SkinPoints {
        velocity: vec![Vec3::ZERO; count],
        mass_density: vec![1.0; count],
        damping_density: vec![0.2; count],
        rest_metric: vec![[0.01, 0.0, 0.02]; count],
        rest_curvature: vec![[0.1, 0.0, -0.05]; count],
        stretch: vec![[0.02; 3]; count],
        bend: vec![1e-6; count],
        fat: (0..count).map(|k| 0.01 + 0.001 * k as f32).collect(),
        band,
        color: (0..count)
            .map(|k| [k as f32 / count as f32, 0.5, 1.0 - k as f32 / count as f32])
            .collect(),
        position: position.clone(),
    };
    let skin = Skin {
        name: "thigh".into(),
        bottom_joint: 0,
        top_joint: 1,
        m,
        n,
        boundary_local: position[..m]
            .iter()
            .chain(&position[count - m..])
            .copied()
            .collect(),
        muscles: vec![0],
        points,
    };
    let character = Character {
        name: "leg".into(),
        skeleton: Skeleton { joints },
        muscles: vec![muscle],
        skins: vec![skin],
        flesh: Default::default(),
        environment: Environment {
            gravity: Vec3::new(0.0, -9.81, 0.0),
            global_damping: 0.3,
        },
        key_postures: vec![
            KeyPosture {
                time: 0.0,
                posture: Posture {
                    root_translation: Vec3::ZERO,
                    angles: vec![Vec3::ZERO; 2],
                    blend: Vec::new(),
                },
                tension: 0.0,
                continuity: 0.0,
                bias: 0.0,
            },
            KeyPosture {
                time: 1.0 / 3.0,
                posture: Posture {
                    root_translation: Vec3::new(0.0, 0.1, 0.0),
                    angles: vec![Vec3::ZERO, Vec3::new(1.2, 0.0, 0.0)],
                    blend: Vec::new(),
                },
                tension: 0.5,
                continuity: -0.25,
                bias: 0.1,
            },
        ],
    };
    character.validate().expect("the test character is valid");
    character
}

fn tmp_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// The text of `small_character` with one substring replaced (must occur).
fn edited(from: &str, to: &str) -> String {
    let text = character_to_string(&small_character()).unwrap();
    assert!(text.contains(from), "{from:?} not in the saved text");
    text.replacen(from, to, 1)
}

// ---------------------------------------------------------------- characters

#[test]
fn character_round_trip_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chars/leg.ron");
    let original = small_character();
    save_character(&path, &original).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("(\n    format: \"plasticine-character\",\n    version: 2,\n"),
        "{text}"
    );
    let loaded = load_character(&path).unwrap();
    assert_eq!(loaded, original); // bit-exact floats, bands, quaternions, keys
    // Saving again gives the same bytes.
    save_character(&path, &loaded).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
    assert!(tmp_files(path.parent().unwrap()).is_empty());
}

#[test]
fn malformed_ron_reports_file_line_and_column() {
    let text = "(\n    format: \"plasticine-character\",\n    version: 1,\n    character: (\n        name: \"x\",\n        skeleton: (joints: [}),\n    ),\n)\n";
    let err = parse_character(text, Path::new("assets/penguin.ron")).unwrap_err();
    let IoError::Parse { line, col, .. } = &err else {
        panic!("expected a parse error, got {err:?}");
    };
    assert_eq!(*line, 6);
    assert_eq!(*col, "        skeleton: (joints: [".len() + 1); // at the `}`
    assert!(
        err.to_string().starts_with("assets/penguin.ron:6:"),
        "{err}"
    );

    // Through a real file too.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.ron");
    fs::write(&path, edited("version: 2,", "version: 2,,")).unwrap();
    let err = load_character(&path).unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:3:", path.display())), "{err}");
}

#[test]
fn missing_field_is_named() {
    let text =
        r#"(format: "plasticine-character", version: 1, character: (name: "x", muscles: []))"#;
    let err = parse_character(text, Path::new("assets/penguin.ron")).unwrap_err();
    assert!(matches!(err, IoError::Parse { line: 1, .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.starts_with("assets/penguin.ron:1:"), "{msg}");
    assert!(msg.contains("missing field named `skeleton`"), "{msg}");

    let err = parse_character(
        r#"(format: "plasticine-character", version: 1)"#,
        Path::new("a.ron"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("`character`"), "{err}");
}

#[test]
fn invalid_values_report_the_field_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leg.ron");

    let mut c = small_character();
    c.skins[0].points.fat[7] = -0.5;
    fs::write(&path, character_to_string(&c).unwrap()).unwrap();
    let err = load_character(&path).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "{}: skins[0].points.fat[7]: the fat thickness (m) must be a finite number 0 or \
             more, got -0.5",
            path.display()
        )
    );
    assert!(matches!(err, IoError::Invalid { ref field, .. } if field == "skins[0].points.fat[7]"));

    // A mass too big for a 32-bit float reads as infinite: the message says
    // that, not only that it must be positive.
    let text = character_to_string(&small_character()).unwrap();
    let at = text.find("mass_density: [").unwrap();
    let one = at + text[at..].find("1.0").unwrap();
    let huge = format!("{}1e300{}", &text[..one], &text[one + 3..]);
    let err = parse_character(&huge, Path::new("h.ron")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "h.ron: skins[0].points.mass_density[0]: the mass per m² of rest area (kg/m²) must be \
         a finite number above 0, got inf (not finite: beyond a 32-bit float's range, about \
         3.4e38)"
    );

    let mut c = small_character();
    c.muscles[0].joint = 9;
    let err = parse_character(&character_to_string(&c).unwrap(), Path::new("m.ron")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "m.ron: muscles[0].joint: joint 9 does not exist (the skeleton has 2)"
    );

    // A mistyped value is a parse error naming the place.
    let err = parse_character(
        &edited("global_damping: 0.3", "global_damping: \"lots\""),
        Path::new("t.ron"),
    )
    .unwrap_err();
    assert!(matches!(err, IoError::Parse { .. }), "{err:?}");
}

#[test]
fn painted_colours_are_checked_and_unpainted_files_still_load() {
    // A colour channel outside [0, 1] (or NaN) is refused with
    // its point named; a colour list of the wrong length too.
    let mut c = small_character();
    c.skins[0].points.color[5] = [0.2, 1.5, 0.0];
    let err = parse_character(&character_to_string(&c).unwrap(), Path::new("p.ron")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "p.ron: skins[0].points.color[5]: is (0.2, 1.5, 0): each channel is linear RGB from 0 to 1"
    );
    let mut c = small_character();
    c.skins[0].points.color[2][0] = f32::NAN;
    let err = parse_character(&character_to_string(&c).unwrap(), Path::new("p.ron")).unwrap_err();
    assert!(
        err.to_string()
            .contains("points.color[2]: is (NaN (not a number)"),
        "{err}"
    );
    let mut c = small_character();
    c.skins[0].points.color.pop();
    let err = parse_character(&character_to_string(&c).unwrap(), Path::new("p.ron")).unwrap_err();
    assert!(
        err.to_string().contains(
            "points.color: has 15 entries but the 4x4 grid has 16 points (or leave it out"
        ),
        "{err}"
    );
    // A file written before colour (no `color:` at all) loads unpainted,
    // and an unpainted skin writes no colour list.
    let mut c = small_character();
    c.skins[0].points.color.clear();
    let text = character_to_string(&c).unwrap();
    assert!(
        !text.contains("color:"),
        "an unpainted skin writes no colours"
    );
    let loaded = parse_character(&text, Path::new("old.ron")).unwrap();
    assert!(loaded.skins[0].points.color.is_empty());
    assert_eq!(loaded, c);
}

#[test]
fn save_refuses_an_invalid_character_and_keeps_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leg.ron");
    save_character(&path, &small_character()).unwrap();
    let before = fs::read(&path).unwrap();
    let mut c = small_character();
    c.skins[0].points.mass_density[3] = 0.0;
    let err = save_character(&path, &c).unwrap_err();
    assert!(
        err.to_string().contains("skins[0].points.mass_density[3]"),
        "{err}"
    );
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(tmp_files(dir.path()).is_empty());
}

#[test]
fn wrong_format_and_newer_version_are_refused_clearly() {
    let text = edited("\"plasticine-character\"", "\"plasticine-calibration\"");
    let err = parse_character(&text, Path::new("assets/penguin.ron")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "assets/penguin.ron: not a plasticine-character file (its format is \"plasticine-calibration\")"
    );

    let text = edited("version: 2,", "version: 7,");
    let err = parse_character(&text, Path::new("assets/penguin.ron")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "assets/penguin.ron: written by a newer Plasticine: version 7, this build reads up to 2"
    );
}

#[test]
fn deeply_nested_input_is_an_error_not_a_crash() {
    for garbage in [
        format!(
            "(format: \"plasticine-character\", version: 1, character: {}",
            "(".repeat(100_000)
        ),
        format!(
            "(format: \"plasticine-character\", version: 1, character: {}",
            "[".repeat(100_000)
        ),
        format!(
            "(format: \"plasticine-character\", version: 1, character: (name: {}",
            "Some(".repeat(100_000)
        ),
        format!(
            "(format: \"plasticine-character\", version: 1, character: (name: \"x\", skeleton: (joints: {}",
            "[".repeat(100_000)
        ),
    ] {
        let err = parse_character(&garbage, Path::new("deep.ron")).unwrap_err();
        assert!(matches!(err, IoError::Parse { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.starts_with("deep.ron:1:"), "{msg}");
        assert!(msg.ends_with("nested more than 128 levels deep"), "{msg}");
    }
    // Garbage that is not even RON fails at once.
    let err = parse_character(&"[".repeat(100_000), Path::new("deep.ron")).unwrap_err();
    assert!(err.to_string().starts_with("deep.ron:1:1: "), "{err}");
}

#[test]
fn huge_declared_sizes_are_refused_without_overflow() {
    // m·n overflows usize: must be a clean error, not a panic or an allocation.
    let text = edited("m: 4,", &format!("m: {},", usize::MAX / 2)).replacen(
        "n: 4,",
        &format!("n: {},", usize::MAX / 2),
        1,
    );
    let err = parse_character(&text, Path::new("huge.ron")).unwrap_err();
    assert!(
        matches!(err, IoError::Invalid { ref field, .. } if field == "skins[0].m"),
        "{err:?}"
    );
}

#[test]
fn empty_and_non_ron_files_are_errors() {
    for text in ["", "   ", "\u{0}\u{1}", "PLSTCACH", "{\"format\": 1}"] {
        let err = parse_character(text, Path::new("x.ron")).unwrap_err();
        assert!(err.to_string().starts_with("x.ron:"), "{err}");
    }
    let err = load_character(Path::new("/nonexistent/dir/x.ron")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("/nonexistent/dir/x.ron: cannot open:"),
        "{err}"
    );
}

// ---------------------------------------------------------------- cache

fn frame(k: usize, points: usize, salt: f32) -> Vec<Vec3> {
    (0..points)
        .map(|p| {
            Vec3::new(
                k as f32 + salt,
                p as f32 * 0.5,
                -(k as f32) * 1e-3 + p as f32,
            )
        })
        .collect()
}

/// A cache with two skins (4x4 "a", 3x5 "b") and `frames` frames at 24 fps.
fn write_cache(path: &Path, frames: usize) -> plasticine::io::CacheSummary {
    let mut w = CacheWriter::create(path, 24.0, &[("a", 4, 4), ("bé", 3, 5)]).unwrap();
    for k in 0..frames {
        let (a, b) = (frame(k, 16, 0.0), frame(k, 15, 0.25));
        w.write_frame(k as f64 / 24.0, &[&a, &b]).unwrap();
    }
    w.finish().unwrap()
}

/// Where the skin records of `write_cache`'s header end.
fn skins_end() -> u64 {
    28 + (12 + 1) + (12 + "bé".len() as u64)
}

/// The header: the skin records, the (empty) flesh section's three counts
/// (meshes, muscles, modal parts) and the header's checksum.
fn header_len() -> u64 {
    skins_end() + 4 + 4 + 4 + 4
}

#[test]
fn cache_round_trip_with_random_access() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bake/leg.plcache");
    let summary = write_cache(&path, 10);
    let frame_bytes = bytes_per_frame([16, 15]);
    assert_eq!(frame_bytes, 8 + 12 * 31 + 4, "time, points, checksum");
    assert_eq!(summary.frames, 10);
    assert_eq!(summary.bytes, header_len() + 10 * frame_bytes);
    assert_eq!(fs::metadata(&path).unwrap().len(), summary.bytes);
    assert_eq!(summary.last_time, Some(9.0 / 24.0));

    let mut r = CacheReader::open(&path).unwrap();
    assert!(r.is_complete());
    assert_eq!(r.frame_count(), 10);
    assert_eq!(r.fps(), 24.0);
    assert_eq!(r.skins()[1].name, "bé");
    assert_eq!((r.skins()[1].m, r.skins()[1].n), (3, 5));
    let mut out = Vec::new();
    for k in [7, 2, 9, 0, 0, 5] {
        let t = r.read_frame(k, &mut out).unwrap();
        assert_eq!(t, k as f64 / 24.0);
        assert_eq!(out, vec![frame(k, 16, 0.0), frame(k, 15, 0.25)]);
        assert_eq!(r.frame_time(k).unwrap(), t);
    }
    assert!(r.read_frame(10, &mut out).is_err());
    let all: Vec<_> = r.frames().collect::<Result<_, _>>().unwrap();
    assert_eq!(all.len(), 10);
    for (k, f) in all.iter().enumerate() {
        assert_eq!(f.time, k as f64 / 24.0);
        assert_eq!(f.positions[0], frame(k, 16, 0.0));
    }
}

#[test]
fn cache_writer_checks_what_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.plcache");
    let mut w = CacheWriter::create(&path, 30.0, &[("a", 4, 4)]).unwrap();
    let ok = frame(0, 16, 0.0);
    let short = frame(0, 15, 0.0);
    let mut nan = ok.clone();
    nan[3].y = f32::NAN;
    assert!(
        w.write_frame(0.0, &[&short])
            .unwrap_err()
            .to_string()
            .contains("has 15 points")
    );
    assert!(w.write_frame(0.0, &[&ok, &ok]).is_err());
    assert!(
        w.write_frame(0.0, &[&nan])
            .unwrap_err()
            .to_string()
            .contains("point 3")
    );
    assert!(w.write_frame(f64::NAN, &[&ok]).is_err());
    w.write_frame(0.0, &[&ok]).unwrap();
    assert!(w.write_frame(0.0, &[&ok]).is_err()); // not after the previous frame
    w.write_frame(0.1, &[&ok]).unwrap();
    assert_eq!(w.finish().unwrap().frames, 2); // refused frames wrote nothing
    assert_eq!(CacheReader::open(&path).unwrap().frame_count(), 2);

    assert!(CacheWriter::create(&path, 0.0, &[("a", 4, 4)]).is_err());
    assert!(CacheWriter::create(&path, 24.0, &[("a", 1 << 12, 1 << 12)]).is_err());
}

#[test]
fn truncated_or_garbage_caches_name_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.plcache");
    write_cache(&good, 3);
    let bytes = fs::read(&good).unwrap();
    let h = header_len();
    let fb = bytes_per_frame([16, 15]);
    let bad = dir.path().join("bad.plcache");
    let open = |data: &[u8]| {
        fs::write(&bad, data).unwrap();
        CacheReader::open(&bad).unwrap_err()
    };

    // Cut inside the last frame: the offset is that frame's start.
    let err = open(&bytes[..(h + 2 * fb + 20) as usize]);
    assert!(
        matches!(err, IoError::Truncated { offset, .. } if offset == h + 2 * fb),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "{}: truncated at byte {}",
            bad.display(),
            h + 2 * fb
        )),
        "{msg}"
    );

    // Cut inside the header (in the second skin's name).
    let err = open(&bytes[..(skins_end() - 1) as usize]);
    assert!(
        matches!(err, IoError::Truncated { offset, .. } if offset == skins_end() - 3),
        "{err:?}"
    );
    // Empty file.
    let err = open(&[]);
    assert!(
        matches!(err, IoError::Truncated { offset: 0, .. }),
        "{err:?}"
    );
    // Garbage.
    let err = open(b"this is not a cache at all, just text............");
    assert!(matches!(err, IoError::Corrupt { offset: 0, .. }), "{err:?}");
    assert!(err.to_string().contains("not a Plasticine cache"), "{err}");
    // A newer version.
    let mut v = bytes.clone();
    v[8..12].copy_from_slice(&(CACHE_FORMAT_VERSION + 1).to_le_bytes());
    let err = open(&v);
    assert!(matches!(err, IoError::Corrupt { offset: 8, .. }), "{err:?}");
    assert!(err.to_string().contains("newer Plasticine"), "{err}");
    // An absurd skin size at the first skin record.
    let mut v = bytes.clone();
    v[28..32].copy_from_slice(&u32::MAX.to_le_bytes());
    v[32..36].copy_from_slice(&u32::MAX.to_le_bytes());
    let err = open(&v);
    assert!(
        matches!(err, IoError::Corrupt { offset: 28, .. }),
        "{err:?}"
    );
    // A huge name length: refused before allocating.
    let mut v = bytes.clone();
    v[36..40].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(open(&v), IoError::Corrupt { offset: 28, .. }));
    // A huge skin count.
    let mut v = bytes.clone();
    v[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(matches!(open(&v), IoError::Corrupt { offset: 24, .. }));
    // Trailing bytes after the announced frames.
    let mut v = bytes.clone();
    v.extend_from_slice(&[0; 5]);
    let err = open(&v);
    assert!(
        matches!(err, IoError::Corrupt { offset, .. } if offset == h + 3 * fb),
        "{err:?}"
    );
    // A NaN frame time is reported when the frame is read.
    let mut v = bytes.clone();
    let t1 = (h + fb) as usize;
    v[t1..t1 + 8].copy_from_slice(&f64::NAN.to_le_bytes());
    fs::write(&bad, &v).unwrap();
    let mut r = CacheReader::open(&bad).unwrap();
    let err = r.read_frame(1, &mut Vec::new()).unwrap_err();
    assert!(
        matches!(err, IoError::Corrupt { offset, .. } if offset == h + fb),
        "{err:?}"
    );
    // One bit flipped in a point of frame 2, the value still a plausible
    // float: the frame's checksum names it; the other frames still read.
    let mut v = bytes.clone();
    let at = (h + 2 * fb + 8 + 12 * 5) as usize;
    v[at] ^= 0x01;
    fs::write(&bad, &v).unwrap();
    let mut r = CacheReader::open(&bad).unwrap();
    let err = r.read_frame(2, &mut Vec::new()).unwrap_err();
    assert!(
        matches!(err, IoError::Corrupt { offset, .. } if offset == h + 2 * fb),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("frame 2: its checksum does not match"),
        "{err}"
    );
    assert!(r.read_frame(1, &mut Vec::new()).is_ok());
    // A changed frame rate (still a valid one): the header's checksum.
    let mut v = bytes.clone();
    v[12..16].copy_from_slice(&25f32.to_le_bytes());
    let err = open(&v);
    assert!(
        err.to_string().contains("header's checksum does not match"),
        "{err}"
    );
}

#[test]
fn killed_writer_leaves_a_readable_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bake.plcache");
    let mut w = CacheWriter::create(&path, 24.0, &[("a", 4, 4)]).unwrap();
    for k in 0..5 {
        w.write_frame(k as f64, &[&frame(k, 16, 0.0)]).unwrap();
    }
    w.flush().unwrap();
    let temp: PathBuf = w.temp_path().to_path_buf();
    std::mem::forget(w); // as if the process were killed: no destructor runs
    assert!(!path.exists());
    // Also cut the temporary file mid-frame, as a kill during a write would.
    let len = fs::metadata(&temp).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&temp)
        .unwrap()
        .set_len(len - 7)
        .unwrap();

    let mut r = CacheReader::open(&temp).unwrap();
    assert!(!r.is_complete());
    assert_eq!(r.frame_count(), 4);
    let mut out = Vec::new();
    assert_eq!(r.read_frame(3, &mut out).unwrap(), 3.0);
    assert_eq!(out[0], frame(3, 16, 0.0));
    fs::remove_file(&temp).unwrap();
}

#[test]
fn unfinished_cache_writer_keeps_the_old_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bake.plcache");
    write_cache(&path, 2);
    let before = fs::read(&path).unwrap();
    {
        let mut w = CacheWriter::create(&path, 24.0, &[("a", 4, 4)]).unwrap();
        w.write_frame(0.0, &[&frame(0, 16, 0.0)]).unwrap();
        // dropped without finish
    }
    assert_eq!(fs::read(&path).unwrap(), before);
    assert!(tmp_files(dir.path()).is_empty());
}

/// A staged writer (what a bake uses): the staging file outlives the writer,
/// can be reopened to append after N frames (cutting off later frames and a
/// torn one), and `finish` renames it over the target.
#[test]
fn staged_cache_writer_appends_and_finishes_to_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("bake.plcache");
    let staging = dir.path().join("bake.plcache.partial");
    let skins = [("a", 4, 4), ("bé", 3, 5)];
    let write = |w: &mut CacheWriter, k: usize| {
        let (a, b) = (frame(k, 16, 0.0), frame(k, 15, 0.25));
        w.write_frame(k as f64 / 24.0, &[&a, &b]).unwrap();
    };
    let reference = dir.path().join("reference.plcache");
    write_cache(&reference, 10);
    let want = fs::read(&reference).unwrap();
    let h = header_len();
    let fb = bytes_per_frame([16, 15]);

    let mut w = CacheWriter::create_staged(&staging, &target, 24.0, &skins).unwrap();
    for k in 0..6 {
        write(&mut w, k);
    }
    assert_eq!(w.sync().unwrap(), h + 6 * fb);
    assert_eq!(w.temp_path(), staging);
    drop(w); // cancelled: the staging file stays, readable
    assert!(!target.exists());
    let r = CacheReader::open(&staging).unwrap();
    assert!(!r.is_complete());
    assert_eq!(r.frame_count(), 6);
    drop(r);
    // A torn seventh frame, as from a kill mid-write.
    let mut f = fs::OpenOptions::new().append(true).open(&staging).unwrap();
    f.write_all(&[1, 2, 3, 4, 5, 6, 7]).unwrap();
    drop(f);
    let before = fs::read(&staging).unwrap();

    // Refusals leave the file as it was.
    let refuse = |fps: f32, skins: &[(&str, usize, usize)], keep: u64| {
        let e = CacheWriter::resume_staged(&staging, &target, fps, skins, keep).unwrap_err();
        assert_eq!(fs::read(&staging).unwrap(), before);
        e.to_string()
    };
    let e = refuse(25.0, &skins, 6);
    assert!(
        e.contains("holds 24 fps") && e.contains("expected 25 fps"),
        "{e}"
    );
    let e = refuse(24.0, &[("a", 4, 4), ("b", 3, 5)], 6);
    assert!(e.contains("\"bé\" 3x5") && e.contains("\"b\" 3x5"), "{e}");
    let e = refuse(24.0, &skins, 7);
    assert!(e.contains("holds 6 whole frames, 7 expected"), "{e}");
    // Finished but never moved into place (a writer killed between
    // `finish` patching the frame count and the rename): reopened as
    // unfinished, cut back to the frames kept.
    let finished = dir.path().join("finished.plcache.partial");
    fs::copy(&reference, &finished).unwrap();
    let elsewhere = dir.path().join("elsewhere.plcache");
    drop(CacheWriter::resume_staged(&finished, &elsewhere, 24.0, &skins, 2).unwrap());
    let r = CacheReader::open(&finished).unwrap();
    assert!(!r.is_complete());
    assert_eq!(r.frame_count(), 2);
    assert!(fs::read(&finished).unwrap()[16 + 8..] == want[16 + 8..(h + 2 * fb) as usize]);
    // A non-finite position or a time going backwards in a kept frame.
    let mut nan = before.clone();
    let at = (h + 2 * fb + 8) as usize;
    nan[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    fs::write(&staging, &nan).unwrap();
    let e = CacheWriter::resume_staged(&staging, &target, 24.0, &skins, 6).unwrap_err();
    assert!(
        matches!(e, IoError::Corrupt { offset, .. } if offset == h + 2 * fb),
        "{e:?}"
    );
    // (Its checksum made to match, so the time check itself is reached.)
    let mut back = before.clone();
    let at = (h + 4 * fb) as usize;
    back[at..at + 8].copy_from_slice(&0.0f64.to_le_bytes());
    let end = at + fb as usize - 4;
    let checksum = crc32fast::hash(&back[at..end]);
    back[end..end + 4].copy_from_slice(&checksum.to_le_bytes());
    fs::write(&staging, &back).unwrap();
    let e = CacheWriter::resume_staged(&staging, &target, 24.0, &skins, 6).unwrap_err();
    assert!(e.to_string().contains("frame 4: time 0"), "{e}");
    fs::write(&staging, &before).unwrap();

    // Keep only 4 of the 6 frames (a checkpoint at frame 4), append the rest.
    let mut w = CacheWriter::resume_staged(&staging, &target, 24.0, &skins, 4).unwrap();
    assert_eq!(w.frame_count(), 4);
    assert_eq!(fs::metadata(&staging).unwrap().len(), h + 4 * fb);
    // Times must still increase from the kept frames on.
    let a = frame(9, 16, 0.0);
    let b = frame(9, 15, 0.25);
    assert!(w.write_frame(3.0 / 24.0, &[&a, &b]).is_err());
    for k in 4..10 {
        write(&mut w, k);
    }
    let summary = w.finish().unwrap();
    assert_eq!(summary.frames, 10);
    assert_eq!(summary.first_time, Some(0.0));
    assert!(!staging.exists());
    assert_eq!(fs::read(&target).unwrap(), want);
    assert!(tmp_files(dir.path()).is_empty());
}

// ---------------------------------------------------------------- atomic writes

#[test]
fn failed_atomic_write_keeps_the_old_file_and_no_temp() {
    let dir = tempfile::tempdir().unwrap();

    // The rename fails: the target is a non-empty directory.
    let target = dir.path().join("scene.ron");
    fs::create_dir(&target).unwrap();
    fs::write(target.join("keep.txt"), b"old").unwrap();
    let err = write_atomic(&target, b"new").unwrap_err();
    assert!(matches!(err, IoError::Os { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with(&format!("{}: cannot replace", target.display())),
        "{err}"
    );
    assert_eq!(fs::read(target.join("keep.txt")).unwrap(), b"old");
    assert!(tmp_files(dir.path()).is_empty());

    // The parent is a file: nothing can be created, the file is untouched.
    let file = dir.path().join("plain.txt");
    fs::write(&file, b"old").unwrap();
    let err = write_atomic(&file.join("child.ron"), b"new").unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("{}: cannot create the directory", file.display())),
        "{err}"
    );
    assert_eq!(fs::read(&file).unwrap(), b"old");

    // A streaming write abandoned half-way (an error in the producer).
    let mut f = AtomicFile::create(&file).unwrap();
    f.write_all(b"partial").unwrap();
    drop(f);
    assert_eq!(fs::read(&file).unwrap(), b"old");
    assert!(tmp_files(dir.path()).is_empty());
}

/// A version-1 file (the first skin model: densities per u-area,
/// Terzopoulos' metric and curvature) loads with its skin material carried
/// over to version 2's meanings: every skin keeps its mass and its bands'
/// total stiffness, rest curvatures turn convex-positive, and the character
/// simulates.
#[test]
fn a_version_1_character_loads_with_its_material_converted() {
    use plasticine::skin::{Grid, rest_areas};
    let path = Path::new("tests/data/wombat_v1.ron");
    let text = fs::read_to_string(path).unwrap();
    assert!(text.contains("version: 1,"));
    // The raw version-1 values, as that build read them.
    let raw = text.replacen("version: 1,", "version: 2,", 1);
    let old = parse_character(&raw, path).unwrap();
    let new = load_character(path).unwrap();
    for (o, n) in old.skins.iter().zip(&new.skins) {
        let g = Grid::of(o);
        let u_area = g.area() as f64;
        let areas = rest_areas(&g, &n.points.rest_metric);
        let interior = |k: &usize| !g.is_boundary_row(k / g.m);
        let mass_old: f64 = (0..o.point_count())
            .filter(interior)
            .map(|k| o.points.mass_density[k] as f64 * u_area)
            .sum();
        let mass_new: f64 = (0..n.point_count())
            .filter(interior)
            .map(|k| (n.points.mass_density[k] * areas[k]) as f64)
            .sum();
        assert!(
            (mass_new - mass_old).abs() < 1e-4 * mass_old,
            "{mass_new} vs {mass_old} kg"
        );
        let ks = |s: &plasticine::character::Skin, a: &dyn Fn(usize) -> f64| -> f64 {
            (0..s.point_count())
                .filter_map(|k| s.points.band[k].map(|b| b.ks as f64 * a(k)))
                .sum()
        };
        let (ks_old, ks_new) = (ks(o, &|_| u_area), ks(n, &|k| areas[k] as f64));
        assert!(ks_old > 0.0 && (ks_new - ks_old).abs() < 1e-4 * ks_old);
        // Convex-positive curvature around the body (old B⁰11 was negative).
        let mid = (g.n / 2) * g.m;
        assert!(o.points.rest_curvature[mid][0] < 0.0 && n.points.rest_curvature[mid][0] > 0.0);
    }
    let driver = plasticine::skin::SkeletonDriver::Keys(new.key_postures.clone());
    let mut sim = plasticine::skin::Simulation::new(new, driver, Default::default()).unwrap();
    sim.advance_to(0.3, None).unwrap();
}
