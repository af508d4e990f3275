//! `plasticine export` as a user and the next tool in the pipeline meet it: a
//! penguin bake exported to glTF (checked by the Khronos glTF validator and
//! read back here), USD (read back with Pixar's `pxr` from `PyPI`) and an OBJ
//! sequence; and bad inputs refused with nothing written. In every format
//! each skin is a closed surface: its grid's points, then the caps over its
//! two boundary rings, following each frame's rings (watertight and facing
//! out).
//!
//! The external readers are installed on first use under the target
//! directory (`CARGO_TARGET_TMPDIR`): the npm package `gltf-validator` with
//! the machine's Node.js, and the `PyPI` package `usd-core` into a Python venv.
//! When Node.js, Python or the registry is missing those tests are skipped
//! with a note, unless `PLASTICINE_REQUIRE_TOOLS` is set (as `cargo xtask
//! test` does), when they fail.
//!
//! With `PLASTICINE_BLENDER=1`, both glTF layouts are also imported into
//! Blender (the `PyPI` package `bpy`, Blender as a Python module: a ~350 MB
//! download, ~1 GB installed, into a venv under the target directory) and
//! what Blender shows at some frames is checked against the cache, and a
//! shape key exported by Blender (sparse accessors) is imported as a
//! blendshape rig.

use crate::support::plasticine;
use glam::{Affine3A, Quat, Vec3};
use plasticine::character::Character;
use plasticine::io::{CacheReader, CacheWriter, load_character, save_character};
use plasticine::io::{ClosedGrid, grid_faces_inward, joint_local, obj_frame_name};
use plasticine::kinematics::forward_kinematics;
use plasticine::skin::Grid;
use plasticine::skin::smoothness;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

const GLTF_VALIDATOR: &str = "gltf-validator@2.0.0-dev.3.10";
const USD_CORE: &str = "usd-core==26.11";
/// Blender 4.5 LTS as a Python module (for `CPython` 3.11).
const BPY: &str = "bpy==4.5.15";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn work_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("export-tests")
}

/// The penguin baked for 1 s at 25 fps (26 frames; the key at 0.5 s falls
/// between frames 12 and 13), once per test run.
fn penguin_bake() -> &'static Path {
    static BAKE: OnceLock<PathBuf> = OnceLock::new();
    BAKE.get_or_init(|| {
        let out = work_dir().join("penguin");
        let (ok, _, err) = plasticine(&[
            "bake",
            "assets/penguin.ron",
            "--out",
            s(&out),
            "--duration",
            "1.0",
            "--fps",
            "25",
        ]);
        assert!(ok, "{err}");
        out.join("bake.plcache")
    })
}

fn penguin() -> Character {
    load_character(Path::new("assets/penguin.ron")).unwrap()
}

/// A fresh output folder for one test.
fn out_dir(name: &str) -> tempfile::TempDir {
    std::fs::create_dir_all(work_dir()).unwrap();
    tempfile::Builder::new()
        .prefix(name)
        .tempdir_in(work_dir())
        .unwrap()
}

fn cache_frames(cache: &Path) -> (Vec<f64>, Vec<Vec<Vec<Vec3>>>) {
    let mut r = CacheReader::open(cache).unwrap();
    let (mut times, mut frames) = (Vec::new(), Vec::new());
    for k in 0..r.frame_count() {
        let mut f = Vec::new();
        times.push(r.read_frame(k, &mut f).unwrap());
        frames.push(f);
    }
    (times, frames)
}

/// A skin's cached grid points closed by their caps as the export closes
/// them (its winding taken from the first frame, `first`).
fn closed(m: usize, n: usize, grid: &[Vec3], first: &[Vec3]) -> Vec<Vec3> {
    ClosedGrid::new(m, n).closed(grid, grid_faces_inward(m, n, first))
}

/// Polygons (as vertex loops) over `p` form a closed, consistently oriented
/// surface: every directed edge once, its twin once; and it faces out (the
/// enclosed volume, by the divergence theorem over a fan of each polygon,
/// is positive).
fn assert_closed_outward(faces: &[Vec<u32>], p: &[Vec3], what: &str) {
    let mut edges = std::collections::HashMap::new();
    let mut volume = 0.0f64;
    for f in faces {
        for k in 0..f.len() {
            assert!(
                (f[k] as usize) < p.len(),
                "{what}: index {} of {}",
                f[k],
                p.len()
            );
            *edges.entry((f[k], f[(k + 1) % f.len()])).or_insert(0) += 1;
        }
        for k in 1..f.len() - 1 {
            let [a, b, c] = [f[0], f[k], f[k + 1]].map(|i| p[i as usize].as_dvec3());
            volume += a.dot(b.cross(c)) / 6.0;
        }
    }
    for (&(a, b), &c) in &edges {
        assert_eq!(c, 1, "{what}: edge {a}->{b} used {c} times one way");
        assert_eq!(
            edges.get(&(b, a)),
            Some(&1),
            "{what}: edge {a}->{b} is on a hole"
        );
    }
    let mut used = vec![false; p.len()];
    faces
        .iter()
        .flatten()
        .for_each(|&v| used[v as usize] = true);
    assert!(used.iter().all(|&u| u), "{what}: a vertex on no face");
    assert!(volume > 0.0, "{what}: encloses {volume} m³ (inside out)");
}

// ---------------------------------------------------------------------------
// External tools, installed on first use.

/// A line on the real stderr, which the test harness does not capture, so a
/// skip or an install shows in a passing run.
fn note(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn tools_required() -> bool {
    std::env::var_os("PLASTICINE_REQUIRE_TOOLS").is_some_and(|v| !v.is_empty())
}

/// `Some(tool)`, or `None` after a note (or a failure when tools are required).
fn tool_or_skip<T: Clone>(tool: &Result<T, String>, test: &str) -> Option<T> {
    match tool {
        Ok(t) => Some(t.clone()),
        Err(why) if tools_required() => panic!(
            "{test}: {why} (PLASTICINE_REQUIRE_TOOLS is set, so this test may not be skipped)"
        ),
        Err(why) => {
            note(&format!("note: skipping {test}: {why}"));
            None
        }
    }
}

fn run_ok(cmd: &mut Command, what: &str) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run {:?}: {e}", cmd.get_program()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into())
    } else {
        Err(format!(
            "{what} failed ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The folder `gltf-validator` is installed in (npm --prefix).
fn gltf_validator() -> &'static Result<PathBuf, String> {
    static TOOL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    TOOL.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("node-tools");
        let marker = dir.join(format!(".installed-{GLTF_VALIDATOR}"));
        run_ok(Command::new("node").arg("--version"), "node --version")
            .map_err(|e| format!("Node.js is needed for the glTF validator: {e}"))?;
        if !marker.exists() {
            let start = Instant::now();
            run_ok(
                Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--prefix"])
                    .arg(&dir)
                    .arg(GLTF_VALIDATOR),
                &format!("npm install {GLTF_VALIDATOR}"),
            )?;
            std::fs::write(&marker, b"").map_err(|e| e.to_string())?;
            note(&format!(
                "installed {GLTF_VALIDATOR} in {} ({:.1} s)",
                dir.display(),
                start.elapsed().as_secs_f64()
            ));
        }
        Ok(dir)
    })
}

/// The Python of a venv under the target directory with `package` installed.
fn venv_with(name: &str, package: &str) -> Result<PathBuf, String> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let python = venv.join("bin").join("python");
    let marker = venv.join(format!(".installed-{package}"));
    if !marker.exists() {
        let start = Instant::now();
        run_ok(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv (Debian: apt-get install python3-venv)",
        )?;
        run_ok(
            Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                // bpy's wheel is a few hundred MB: keep no second copy in ~/.cache.
                "--no-cache-dir",
                "--quiet",
                package,
            ]),
            &format!("pip install {package}"),
        )?;
        std::fs::write(&marker, b"").map_err(|e| e.to_string())?;
        note(&format!(
            "installed {package} in {} ({:.1} s)",
            venv.display(),
            start.elapsed().as_secs_f64()
        ));
    }
    Ok(python)
}

/// The Python of a venv with `usd-core`.
fn pxr_python() -> &'static Result<PathBuf, String> {
    static TOOL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    TOOL.get_or_init(|| venv_with("usd-venv", USD_CORE))
}

/// The Python of a venv with `bpy`.
fn blender_python() -> &'static Result<PathBuf, String> {
    static TOOL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    TOOL.get_or_init(|| venv_with("blender-venv", BPY))
}

/// The Python with Blender's `bpy` when `PLASTICINE_BLENDER` asks for the
/// Blender checks (failing if it cannot be had); else `None` after `skip`.
fn blender_or_skip(skip: &str) -> Option<PathBuf> {
    if std::env::var_os("PLASTICINE_BLENDER").is_none_or(|v| v.is_empty()) {
        note(skip);
        return None;
    }
    match blender_python() {
        Ok(p) => Some(p.clone()),
        Err(why) => panic!("PLASTICINE_BLENDER is set but Blender (bpy) is not usable: {why}"),
    }
}

/// The Khronos validator's report on `file`.
fn validate(tools: &Path, file: &Path) -> Value {
    let start = Instant::now();
    let report = run_ok(
        Command::new("node")
            .arg("tests/support/validate_gltf.js")
            .arg(tools)
            .arg(file),
        "the glTF validator",
    )
    .unwrap();
    eprintln!(
        "validated {} in {:.2} s",
        file.display(),
        start.elapsed().as_secs_f64()
    );
    serde_json::from_str(&report).unwrap()
}

/// Asserts the report has no errors and lists its other messages.
fn assert_valid(report: &Value, file: &Path) {
    let issues = &report["issues"];
    for m in issues["messages"].as_array().unwrap() {
        let severity = ["error", "warning", "info", "hint"]
            .get(m["severity"].as_u64().unwrap_or(0) as usize)
            .unwrap_or(&"?");
        eprintln!(
            "glTF validator {severity}: {} {} at {}",
            m["code"], m["message"], m["pointer"]
        );
    }
    assert_eq!(
        issues["numErrors"],
        0,
        "{} is not valid glTF: {}",
        file.display(),
        serde_json::to_string_pretty(issues).unwrap()
    );
    assert_eq!(report["info"]["version"], "2.0");
}

// ---------------------------------------------------------------------------
// A minimal GLB reader.

struct Glb {
    json: Value,
    bin: Vec<u8>,
}

impl Glb {
    fn read(path: &Path) -> Self {
        let bytes = std::fs::read(path).unwrap();
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!(&bytes[0..4], b"glTF");
        assert_eq!(word(4), 2);
        assert_eq!(word(8) as usize, bytes.len(), "the header's length");
        let json_len = word(12) as usize;
        assert_eq!(&bytes[16..20], b"JSON");
        let json = serde_json::from_slice(&bytes[20..20 + json_len]).unwrap();
        let at = 20 + json_len;
        let bin_len = word(at) as usize;
        assert_eq!(&bytes[at + 4..at + 8], b"BIN\0");
        let bin = bytes[at + 8..at + 8 + bin_len].to_vec();
        assert_eq!(at + 8 + bin_len, bytes.len());
        Glb { json, bin }
    }

    /// An accessor's floats, flattened (tightly packed views only).
    fn floats(&self, accessor: &Value) -> Vec<f32> {
        let a = &self.json["accessors"][accessor.as_u64().unwrap() as usize];
        assert_eq!(a["componentType"], 5126);
        let comps = match a["type"].as_str().unwrap() {
            "SCALAR" => 1,
            "VEC3" => 3,
            "VEC4" => 4,
            "MAT4" => 16,
            t => panic!("type {t}"),
        };
        let count = a["count"].as_u64().unwrap() as usize * comps;
        let view_floats = |view: &Value, offset: usize, count: usize| -> Vec<f32> {
            assert!(view.get("byteStride").is_none());
            let start = view["byteOffset"].as_u64().unwrap_or(0) as usize + offset;
            self.bin[start..start + 4 * count]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        let view = |k: &Value| &self.json["bufferViews"][k.as_u64().unwrap() as usize];
        // No buffer view: zeros (glTF 2.0 §3.6.2.3), then the sparse values.
        let mut out = match a.get("bufferView") {
            Some(v) => view_floats(
                view(v),
                a["byteOffset"].as_u64().unwrap_or(0) as usize,
                count,
            ),
            None => vec![0.0; count],
        };
        if let Some(sparse) = a.get("sparse") {
            let k = sparse["count"].as_u64().unwrap() as usize;
            assert_eq!(sparse["indices"]["componentType"], 5125);
            let iv = view(&sparse["indices"]["bufferView"]);
            let start = iv["byteOffset"].as_u64().unwrap_or(0) as usize;
            let indices: Vec<usize> = self.bin[start..start + 4 * k]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as usize)
                .collect();
            assert!(indices.windows(2).all(|w| w[0] < w[1]), "increasing");
            let values = view_floats(view(&sparse["values"]["bufferView"]), 0, k * comps);
            for (j, &i) in indices.iter().enumerate() {
                out[i * comps..(i + 1) * comps]
                    .copy_from_slice(&values[j * comps..(j + 1) * comps]);
            }
        }
        out
    }

    /// An index accessor's values as triangles.
    fn triangles(&self, accessor: &Value) -> Vec<Vec<u32>> {
        let a = &self.json["accessors"][accessor.as_u64().unwrap() as usize];
        let view = &self.json["bufferViews"][a["bufferView"].as_u64().unwrap() as usize];
        let start = view["byteOffset"].as_u64().unwrap_or(0) as usize
            + a["byteOffset"].as_u64().unwrap_or(0) as usize;
        let count = a["count"].as_u64().unwrap() as usize;
        let values: Vec<u32> = match a["componentType"].as_u64().unwrap() {
            5123 => self.bin[start..start + 2 * count]
                .chunks_exact(2)
                .map(|c| u32::from(u16::from_le_bytes(c.try_into().unwrap())))
                .collect(),
            5125 => self.bin[start..start + 4 * count]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect(),
            t => panic!("index component type {t}"),
        };
        values.chunks_exact(3).map(|t| t.to_vec()).collect()
    }

    fn vec3s(&self, accessor: &Value) -> Vec<Vec3> {
        self.floats(accessor)
            .chunks_exact(3)
            .map(Vec3::from_slice)
            .collect()
    }

    fn node_named(&self, name: &str) -> usize {
        self.json["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .position(|n| n["name"] == name)
            .unwrap_or_else(|| panic!("no node named {name}"))
    }

    /// (input times, output values) of the channel animating `path` of `node`.
    fn channel(&self, node: usize, path: &str) -> (Vec<f32>, Vec<f32>, String) {
        let anim = &self.json["animations"][0];
        let ch = anim["channels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["target"]["node"] == node && c["target"]["path"] == path)
            .unwrap_or_else(|| panic!("node {node} has no {path} channel"));
        let sampler = &anim["samplers"][ch["sampler"].as_u64().unwrap() as usize];
        (
            self.floats(&sampler["input"]),
            self.floats(&sampler["output"]),
            sampler["interpolation"].as_str().unwrap().to_string(),
        )
    }
}

/// The skeleton in the .glb, posed at time `t` (which must be a sample
/// time), against the character's forward kinematics of its key posture.
fn check_key_postures(glb: &Glb, character: &Character, t0: f64) {
    let skeleton = &character.skeleton;
    let skin = &glb.json["skins"][0];
    let joints: Vec<usize> = skin["joints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(joints.len(), skeleton.joints.len());
    // Inverse bind matrices: the inverse rest world transforms.
    let ibm = glb.floats(&skin["inverseBindMatrices"]);
    let rest = forward_kinematics(skeleton, &skeleton.rest_posture());
    for (k, w) in rest.iter().enumerate() {
        let m = glam::Mat4::from_cols_slice(&ibm[16 * k..16 * k + 16]);
        let back = glam::Mat4::from(*w) * m;
        assert!(
            back.abs_diff_eq(glam::Mat4::IDENTITY, 1e-5),
            "joint {k}: {back}"
        );
    }
    let mut checked = 0;
    for key in &character.key_postures {
        let t = (f64::from(key.time) - t0) as f32;
        let mut world: Vec<Affine3A> = Vec::new();
        for (k, joint) in skeleton.joints.iter().enumerate() {
            let node = joints[k];
            assert_eq!(glb.json["nodes"][node]["name"], joint.name.as_str());
            let (input, output, interpolation) = glb.channel(node, "rotation");
            assert_eq!(interpolation, "LINEAR");
            let Some(i) = input.iter().position(|&s| s == t) else {
                assert!(
                    t > *input.last().unwrap(),
                    "key time {t} is in the clip but not a sample"
                );
                break;
            };
            let got = Quat::from_slice(&output[4 * i..4 * i + 4]);
            let (want_t, want_r) =
                joint_local(joint, key.posture.angles[k], key.posture.root_translation);
            assert!(
                got.dot(want_r).abs() > 1.0 - 1e-5 && (got.length() - 1.0).abs() < 1e-5,
                "joint '{}' at key time {t}: rotation {got} vs {want_r}",
                joint.name
            );
            let translation = if k == 0 {
                let (_, out, _) = glb.channel(node, "translation");
                Vec3::from_slice(&out[3 * i..3 * i + 3])
            } else {
                Vec3::from_slice(
                    &glb.json["nodes"][node]["translation"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_f64().unwrap() as f32)
                        .collect::<Vec<_>>(),
                )
            };
            assert!(
                translation.abs_diff_eq(want_t, 1e-5),
                "joint '{}' at key time {t}: translation {translation} vs {want_t}",
                joint.name
            );
            let local = Affine3A::from_rotation_translation(got, translation);
            world.push(match joint.parent {
                Some(p) => world[p] * local,
                None => local,
            });
        }
        if world.len() < skeleton.joints.len() {
            continue; // the key lies after the clip
        }
        let fk = forward_kinematics(skeleton, &key.posture);
        for (k, (a, b)) in world.iter().zip(&fk).enumerate() {
            assert!(
                a.abs_diff_eq(*b, 1e-5),
                "joint {k} at key time {t}: the glTF hierarchy gives {a:?}, forward kinematics {b:?}"
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 3, "the keys at 0, 0.5 and 1 s are in the clip");
}

fn export(cache: &Path, out: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "export",
        "assets/penguin.ron",
        "--baked",
        s(cache),
        "--out",
        s(out),
    ];
    args.extend_from_slice(extra);
    let (ok, stdout, stderr) = plasticine(&args);
    assert!(ok, "{stderr}");
    stdout
}

// ---------------------------------------------------------------------------

#[test]
fn short_clip_exports_morph_targets_that_round_trip_and_validate() {
    let cache = penguin_bake();
    let dir = out_dir("morph");
    let out = dir.path().join("penguin.glb");
    let stdout = export(cache, &out, &[]);
    assert!(stdout.contains("26 morph targets"), "{stdout}");
    let glb = Glb::read(&out);
    let character = penguin();
    let (times, frames) = cache_frames(cache);
    check_key_postures(&glb, &character, times[0]);
    // The key at 0.5 s lies between frames: it was added as a sample.
    let (input, _, _) = glb.channel(0, "rotation");
    assert_eq!(input.len(), frames.len() + 1);
    assert!(input.contains(&0.5));

    for (s, skin) in character.skins.iter().enumerate() {
        let node = glb.node_named(&format!("{}_skin", skin.name));
        let mesh = &glb.json["meshes"][glb.json["nodes"][node]["mesh"].as_u64().unwrap() as usize];
        let prim = &mesh["primitives"][0];
        let base = glb.vec3s(&prim["attributes"]["POSITION"]);
        let normals = glb.vec3s(&prim["attributes"]["NORMAL"]);
        assert!(normals.iter().all(|n| (n.length() - 1.0).abs() < 1e-5));
        let targets = prim["targets"].as_array().unwrap();
        assert_eq!(targets.len(), frames.len());
        assert_eq!(mesh["extras"]["targetNames"][12], "frame_00012");
        let (m, n) = (skin.m, skin.n);
        let triangles = glb.triangles(&prim["indices"]);
        assert_eq!(base.len(), ClosedGrid::new(m, n).vertex_count());
        for (k, frame) in frames.iter().enumerate() {
            let delta = glb.vec3s(&targets[k]["POSITION"]);
            // The grid's points, then the caps, which follow this frame's rings.
            let want = closed(m, n, &frame[s], &frames[0][s]);
            let got: Vec<Vec3> = base.iter().zip(&delta).map(|(b, d)| *b + *d).collect();
            for (i, (got, want)) in got.iter().zip(&want).enumerate() {
                assert!(
                    got.distance(*want) < 1e-5,
                    "skin '{}' frame {k} point {i}: {got} vs {want}",
                    skin.name
                );
            }
            assert_closed_outward(&triangles, &got, &format!("skin '{}' frame {k}", skin.name));
        }
        // The weights are one-hot: frame k's target at frame k's time.
        let (input, output, interpolation) = glb.channel(node, "weights");
        assert_eq!(interpolation, "LINEAR");
        let n = frames.len();
        assert_eq!(input.len(), n);
        for k in 0..n {
            assert!((f64::from(input[k]) - (times[k] - times[0])).abs() < 1e-6);
            for j in 0..n {
                assert_eq!(output[k * n + j], if j == k { 1.0 } else { 0.0 });
            }
        }
    }

    if let Some(tools) = tool_or_skip(gltf_validator(), "the glTF validator check") {
        let report = validate(&tools, &out);
        assert_valid(&report, &out);
        assert_eq!(report["info"]["hasMorphTargets"], true);
        assert_eq!(report["info"]["hasSkins"], true);
        assert_eq!(report["info"]["animationCount"], 1);
    }
}

#[test]
fn long_clip_exports_per_frame_meshes_that_round_trip_and_validate() {
    let cache = penguin_bake();
    let dir = out_dir("frames");
    let out = dir.path().join("penguin.glb");
    // 26 frames over a limit of 10: the long-clip path.
    let stdout = export(cache, &out, &["--morph-limit", "10"]);
    assert!(stdout.contains("26 per-frame meshes"), "{stdout}");
    let glb = Glb::read(&out);
    let character = penguin();
    let (times, frames) = cache_frames(cache);
    check_key_postures(&glb, &character, times[0]);
    assert!(
        glb.json["meshes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["primitives"][0].get("targets").is_none())
    );
    for (k, frame) in frames.iter().enumerate() {
        let group = glb.node_named(&format!("frame_{k:05}"));
        let children = glb.json["nodes"][group]["children"].as_array().unwrap();
        assert_eq!(children.len(), character.skins.len());
        for (s, child) in children.iter().enumerate() {
            let node = &glb.json["nodes"][child.as_u64().unwrap() as usize];
            assert_eq!(
                node["name"],
                format!("{}_{k:05}", character.skins[s].name).as_str()
            );
            let mesh = &glb.json["meshes"][node["mesh"].as_u64().unwrap() as usize];
            let got = glb.vec3s(&mesh["primitives"][0]["attributes"]["POSITION"]);
            let (m, n) = (character.skins[s].m, character.skins[s].n);
            let want = closed(m, n, &frame[s], &frames[0][s]);
            assert_eq!(got.len(), want.len());
            for (a, b) in got.iter().zip(&want) {
                assert!(a.distance(*b) < 1e-5);
            }
            let triangles = glb.triangles(&mesh["primitives"][0]["indices"]);
            assert_closed_outward(&triangles, &got, &format!("frame {k} skin {s}"));
        }
        // Shown (scale 1) from its time until the next frame's, hidden otherwise.
        let (input, output, interpolation) = glb.channel(group, "scale");
        assert_eq!(interpolation, "STEP");
        let scale_at = |t: f32| {
            let i = input.iter().rposition(|&s| s <= t).unwrap_or(0);
            output[3 * i]
        };
        let t = |k: usize| (times[k] - times[0]) as f32;
        assert_eq!(scale_at(t(k)), 1.0, "frame {k} at its own time");
        if k > 0 {
            assert_eq!(scale_at(t(k - 1)), 0.0);
        }
        if k + 1 < frames.len() {
            assert_eq!(scale_at(t(k + 1)), 0.0);
        }
    }

    if let Some(tools) = tool_or_skip(gltf_validator(), "the glTF validator check") {
        let report = validate(&tools, &out);
        assert_valid(&report, &out);
        assert_eq!(report["info"]["hasMorphTargets"], false);
    }
}

#[test]
fn usd_point_cache_parses_with_pxr_and_matches_the_cache() {
    let cache = penguin_bake();
    let dir = out_dir("usd");
    let out = dir.path().join("penguin.usda");
    export(cache, &out, &[]);
    let character = penguin();
    let (_, frames) = cache_frames(cache);
    let text = std::fs::read_to_string(&out).unwrap();
    // The painted penguin's colours, one per vertex of each skin.
    assert_eq!(
        text.matches("color3f[] primvars:displayColor = [").count(),
        character.skins.len()
    );
    let Some(python) = tool_or_skip(pxr_python(), "the USD (pxr) check") else {
        // Without pxr, at least the text must hold what the reader would see.
        assert!(text.starts_with("#usda 1.0") && text.contains("timeCodesPerSecond = 25"));
        return;
    };
    let codes = [0usize, 7, 12, 25];
    let start = Instant::now();
    let stdout = run_ok(
        Command::new(&python)
            .arg("tests/support/usd_points.py")
            .arg(&out)
            .args(codes.iter().map(|c| c.to_string())),
        "reading the USD file with pxr",
    )
    .unwrap();
    eprintln!("read with pxr in {:.2} s", start.elapsed().as_secs_f64());
    let usd: Value = serde_json::from_str(&stdout).unwrap();
    let stage = &usd["stage"];
    assert_eq!(stage["defaultPrim"], "/penguin");
    assert_eq!(stage["upAxis"], "Y");
    assert_eq!(stage["metersPerUnit"], 1.0);
    assert_eq!(stage["timeCodesPerSecond"], 25.0);
    assert_eq!(stage["framesPerSecond"], 25.0);
    assert_eq!(stage["startTimeCode"], 0.0);
    assert_eq!(stage["endTimeCode"], 25.0);
    for (s, skin) in character.skins.iter().enumerate() {
        let mesh = &usd["meshes"][format!("/penguin/{}", skin.name)];
        let (m, n) = (skin.m, skin.n);
        let grid = ClosedGrid::new(m, n);
        // The grid's quads and the caps' rings as quads, then each cap's
        // apex triangles.
        let counts: Vec<usize> = mesh["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap() as usize)
            .collect();
        let quads = m * (n - 1) + 2 * grid.rings * m;
        assert_eq!(counts.len(), quads + 2 * m);
        assert!(counts[..quads].iter().all(|&c| c == 4));
        assert!(counts[quads..].iter().all(|&c| c == 3));
        let indices: Vec<u32> = mesh["indices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i.as_u64().unwrap() as u32)
            .collect();
        assert_eq!(indices.len(), counts.iter().sum::<usize>());
        let mut faces = Vec::new();
        let mut at = 0;
        for &c in &counts {
            faces.push(indices[at..at + c].to_vec());
            at += c;
        }
        assert_eq!(mesh["orientation"], "rightHanded");
        assert_eq!(mesh["normalsInterpolation"], "vertex");
        assert_eq!(mesh["times"].as_array().unwrap().len(), frames.len());
        for &k in &codes {
            let key = format!("{:?}", k as f64);
            let points = mesh["points"][&key].as_array().unwrap();
            let want = closed(m, n, &frames[k][s], &frames[0][s]);
            assert_eq!(points.len(), want.len());
            let mut lo = Vec3::INFINITY;
            let mut hi = Vec3::NEG_INFINITY;
            let mut read = Vec::new();
            for (i, (p, want)) in points.iter().zip(&want).enumerate() {
                let got = Vec3::from_slice(
                    &p.as_array()
                        .unwrap()
                        .iter()
                        .map(|v| v.as_f64().unwrap() as f32)
                        .collect::<Vec<_>>(),
                );
                assert!(
                    got.distance(*want) <= 1e-6,
                    "skin '{}' time code {k} point {i}: {got} vs {want}",
                    skin.name
                );
                lo = lo.min(got);
                hi = hi.max(got);
                read.push(got);
            }
            assert_closed_outward(&faces, &read, &format!("skin '{}' at {k}", skin.name));
            let extent = &mesh["extent"][&key];
            assert_eq!(extent[0][1].as_f64().unwrap() as f32, lo.y);
            assert_eq!(extent[1][0].as_f64().unwrap() as f32, hi.x);
            let normals = mesh["normals"][&key].as_array().unwrap();
            assert_eq!(normals.len(), want.len());
        }
    }
}

#[test]
fn obj_sequence_writes_every_nth_frame() {
    let cache = penguin_bake();
    let dir = out_dir("obj");
    let out = dir.path().join("frames");
    let stdout = export(cache, &out, &["--format", "obj", "--every", "4"]);
    assert!(stdout.contains("Exported 7 frames"), "{stdout}");
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    let want: Vec<String> = (0..26).step_by(4).map(obj_frame_name).collect();
    assert_eq!(names, want);
    let (_, frames) = cache_frames(cache);
    let text = std::fs::read_to_string(out.join("frame_00012.obj")).unwrap();
    let vertices: Vec<Vec3> = text
        .lines()
        .filter_map(|l| l.strip_prefix("v "))
        .map(|l| {
            let v: Vec<f32> = l.split(' ').map(|x| x.parse().unwrap()).collect();
            Vec3::from_slice(&v)
        })
        .collect();
    let character = penguin();
    let want: Vec<Vec3> = character
        .skins
        .iter()
        .enumerate()
        .flat_map(|(s, k)| closed(k.m, k.n, &frames[12][s], &frames[0][s]))
        .collect();
    assert_eq!(vertices.len(), want.len());
    for (a, b) in vertices.iter().zip(&want) {
        assert!(a.distance(*b) <= 1e-6);
    }
    // Each vertex carries its painted colour after its position (the caps
    // their boundary's): the sample penguin is painted.
    let colours: Vec<Vec3> = text
        .lines()
        .filter_map(|l| l.strip_prefix("v "))
        .map(|l| {
            let v: Vec<f32> = l.split(' ').map(|x| x.parse().unwrap()).collect();
            assert_eq!(v.len(), 6, "v {l}");
            Vec3::from_slice(&v[3..])
        })
        .collect();
    let painted: Vec<Vec3> = character
        .skins
        .iter()
        .flat_map(|k| {
            let c: Vec<Vec3> = k
                .points
                .color
                .iter()
                .map(|c| Vec3::from_array(*c))
                .collect();
            ClosedGrid::new(k.m, k.n).closed_values(&c)
        })
        .collect();
    assert_eq!(colours.len(), painted.len());
    for (a, b) in colours.iter().zip(&painted) {
        assert!(a.distance(*b) <= 1e-6, "{a} vs {b}");
    }
    // One object per skin, each closed and facing out.
    let mut objects: Vec<Vec<Vec<u32>>> = Vec::new();
    for line in text.lines() {
        if line.starts_with("o ") {
            objects.push(Vec::new());
        } else if let Some(f) = line.strip_prefix("f ") {
            let face = f
                .split(' ')
                .map(|v| v.parse::<u32>().unwrap() - 1)
                .collect();
            objects.last_mut().unwrap().push(face);
        }
    }
    assert_eq!(objects.len(), 3);
    let tris = ClosedGrid::new(16, 16).triangles(false).len();
    let mut first = 0u32;
    for (s, faces) in objects.iter().enumerate() {
        assert_eq!(faces.len(), tris);
        let count = ClosedGrid::new(16, 16).vertex_count() as u32;
        let local: Vec<Vec<u32>> = faces
            .iter()
            .map(|f| f.iter().map(|v| v - first).collect())
            .collect();
        let p = &vertices[first as usize..(first + count) as usize];
        assert_closed_outward(&local, p, &format!("OBJ skin {s}"));
        first += count;
    }
}

#[test]
fn a_bake_at_a_raised_resolution_exports() {
    // §6.5: bake after resampling; the character file keeps its 16x16 skins.
    let dir = out_dir("resampled");
    let bake = dir.path().join("bake");
    let (ok, _, err) = plasticine(&[
        "bake",
        "assets/penguin.ron",
        "--out",
        s(&bake),
        "--duration",
        "0.2",
        "--resolution",
        "24x12",
    ]);
    assert!(ok, "{err}");
    let out = dir.path().join("p.glb");
    let stdout = export(&bake.join("bake.plcache"), &out, &[]);
    assert!(stdout.contains("skin 'body' 24x12"), "{stdout}");
    let glb = Glb::read(&out);
    let prim = &glb.json["meshes"][1]["primitives"][0];
    assert_eq!(
        glb.vec3s(&prim["attributes"]["POSITION"]).len(),
        ClosedGrid::new(24, 12).vertex_count()
    );
}

/// The grid's own facets, each split into s×s flat quads: what a
/// refinement that only adds points would show.
fn bilinear(m: usize, n: usize, p: &[Vec3], s: usize) -> Vec<Vec3> {
    let (big_m, big_n) = plasticine::skin_mesh::refined_size(m, n, s);
    (0..big_m * big_n)
        .map(|q| {
            let (x, y) = (q % big_m, q / big_m);
            let (i, a) = (x / s, (x % s) as f32 / s as f32);
            let (j, b) = (
                (y / s).min(n - 2),
                (y as f32 / s as f32) - (y / s).min(n - 2) as f32,
            );
            let at = |i: usize, j: usize| p[j * m + i % m];
            let lo = at(i, j).lerp(at(i + 1, j), a);
            let hi = at(i, j + 1).lerp(at(i + 1, j + 1), a);
            lo.lerp(hi, b)
        })
        .collect()
}

#[test]
fn a_subdivided_export_is_the_smooth_surface_through_the_cached_points() {
    // `--subdivide 3` writes each 16x16 skin as the spline
    // surface through its points (48x46, closed by its caps): through every
    // cached point, each frame's morph target the refinement of that frame,
    // watertight and facing out, and smoother to the eye than the grid's
    // own facets (neighbouring quads' normals turn less).
    let cache = penguin_bake();
    let dir = out_dir("subdivided");
    let out = dir.path().join("penguin.glb");
    let stdout = export(cache, &out, &["--subdivide", "3"]);
    assert!(stdout.contains("at 48x46 (--subdivide 3)"), "{stdout}");
    let glb = Glb::read(&out);
    let character = penguin();
    let (_, frames) = cache_frames(cache);
    for (s, skin) in character.skins.iter().enumerate() {
        let node = glb.node_named(&format!("{}_skin", skin.name));
        let mesh = &glb.json["meshes"][glb.json["nodes"][node]["mesh"].as_u64().unwrap() as usize];
        let prim = &mesh["primitives"][0];
        let base = glb.vec3s(&prim["attributes"]["POSITION"]);
        let (m, n) = (skin.m, skin.n);
        let (big_m, big_n) = plasticine::skin_mesh::refined_size(m, n, 3);
        assert_eq!((big_m, big_n), (48, 46));
        assert_eq!(base.len(), ClosedGrid::new(big_m, big_n).vertex_count());
        let triangles = glb.triangles(&prim["indices"]);
        let targets = prim["targets"].as_array().unwrap();
        let first = plasticine::skin_mesh::refine(m, n, &frames[0][s], 3);
        // The paint (COLOR_0) is refined with the surface: the simulated
        // points keep their own colour.
        let colours = glb.vec3s(&prim["attributes"]["COLOR_0"]);
        assert_eq!(colours.len(), base.len());
        for (q, c) in skin.points.color.iter().enumerate() {
            let (i, j) = (q % m, q / m);
            let got = colours[3 * j * big_m + 3 * i];
            assert!(
                got.distance(Vec3::from_array(*c)) < 1e-6,
                "colour ({i}, {j}): {got} vs {c:?}"
            );
        }
        for k in [0, frames.len() / 2, frames.len() - 1] {
            let delta = glb.vec3s(&targets[k]["POSITION"]);
            let got: Vec<Vec3> = base.iter().zip(&delta).map(|(b, d)| *b + *d).collect();
            let refined = plasticine::skin_mesh::refine(m, n, &frames[k][s], 3);
            let want = closed(big_m, big_n, &refined, &first);
            for (i, (got, want)) in got.iter().zip(&want).enumerate() {
                assert!(
                    got.distance(*want) < 1e-5,
                    "skin '{}' frame {k} point {i}: {got} vs {want}",
                    skin.name
                );
            }
            for (q, p) in frames[k][s].iter().enumerate() {
                let (i, j) = (q % m, q / m);
                let d = got[3 * j * big_m + 3 * i].distance(*p);
                assert!(
                    d < 1e-5,
                    "skin '{}' frame {k}: point ({i}, {j}) moved {d} m",
                    skin.name
                );
            }
            assert_closed_outward(&triangles, &got, &format!("skin '{}' frame {k}", skin.name));
            // p95 of the neighbour-normal angle: as simulated, refined, and
            // the control, the same facets split flat (which the measure
            // must tell from a smooth surface).
            let p95 = |m: usize, n: usize, p: &[Vec3]| smoothness(&Grid::new(m, n), p).p95_deg;
            let coarse = p95(m, n, &frames[k][s]);
            let fine = p95(big_m, big_n, &got[..big_m * big_n]);
            let flat = p95(big_m, big_n, &bilinear(m, n, &frames[k][s], 3));
            assert!(
                fine <= 0.6 * coarse && flat > 0.6 * coarse,
                "skin '{}' frame {k}: p95 {fine:.1} deg refined, {flat:.1} split flat, {coarse:.1} as simulated",
                skin.name
            );
        }
    }
    if let Some(tools) = tool_or_skip(gltf_validator(), "the glTF validator check") {
        assert_valid(&validate(&tools, &out), &out);
    }
}

/// Runs `plasticine export` expecting a refusal that mentions every one of
/// `needles`, and checks nothing was written in `dir`.
fn refused(args: &[&str], needles: &[&str], dir: &Path) {
    let before: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let (ok, stdout, stderr) = plasticine(args);
    assert!(!ok, "accepted {args:?}: {stdout}");
    for n in needles {
        assert!(stderr.contains(n), "{args:?}: '{n}' not in: {stderr}");
    }
    let after: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after, "{args:?} left files behind");
}

/// A cache for `skins` (name, m, n) with `frames` frames of points at `at`.
fn fake_cache(path: &Path, skins: &[(&str, usize, usize)], frames: usize, at: Vec3) {
    let mut w = CacheWriter::create(path, 25.0, skins).unwrap();
    for f in 0..frames {
        let pts: Vec<Vec<Vec3>> = skins.iter().map(|&(_, m, n)| vec![at; m * n]).collect();
        let refs: Vec<&[Vec3]> = pts.iter().map(|p| p.as_slice()).collect();
        w.write_frame(f as f64 / 25.0, &refs).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn bad_inputs_are_refused_with_clear_errors_and_nothing_written() {
    let cache = penguin_bake();
    let dir = out_dir("refused");
    let d = dir.path();
    let c = s(cache);
    let export = |out: &Path, extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = vec![
            "export".into(),
            "assets/penguin.ron".into(),
            "--baked".into(),
            c.into(),
            "--out".into(),
            s(out).into(),
        ];
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let run = |args: Vec<String>, needles: &[&str]| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&a, needles, d);
    };
    run(
        export(&d.join("p.fbx"), &[]),
        &[
            "p.fbx",
            "unknown extension '.fbx'",
            ".glb",
            ".usda",
            "--format obj",
        ],
    );
    run(export(&d.join("p"), &[]), &["no extension"]);
    run(
        export(&d.join("p.glb"), &["--subdivide", "9"]),
        &["--subdivide", "9 is not in 1..=8"],
    );
    run(
        export(&d.join("p.glb"), &["--format", "usda"]),
        &["the extension says glb but the format asked for is usda"],
    );
    run(
        export(&d.join("p.glb"), &["--format", "fbx"]),
        &["unknown format 'fbx'"],
    );
    run(
        export(&d.join("p.glb"), &["--every", "0"]),
        &["--every must be at least 1"],
    );
    run(export(d, &["--format", "usda"]), &["is a folder"]);

    // Caches that are not the character's.
    let character = penguin();
    let names: Vec<&str> = character.skins.iter().map(|s| s.name.as_str()).collect();
    let empty = d.join("empty.plcache");
    fake_cache(
        &empty,
        &[(names[0], 16, 16), (names[1], 16, 16), (names[2], 16, 16)],
        0,
        Vec3::ZERO,
    );
    let two = d.join("two.plcache");
    fake_cache(
        &two,
        &[(names[0], 16, 16), (names[1], 16, 16)],
        2,
        Vec3::ZERO,
    );
    let renamed = d.join("renamed.plcache");
    fake_cache(
        &renamed,
        &[(names[0], 16, 16), ("tail", 16, 16), (names[2], 16, 16)],
        2,
        Vec3::ZERO,
    );
    let other = d.join("other.plcache");
    fake_cache(
        &other,
        &[(names[0], 8, 8), (names[1], 16, 16), (names[2], 16, 16)],
        3,
        Vec3::new(5.0, 0.0, 0.0),
    );
    let with_cache = |cache: &Path, out: &str| -> Vec<String> {
        vec![
            "export".into(),
            "assets/penguin.ron".into(),
            "--baked".into(),
            s(cache).into(),
            "--out".into(),
            s(&d.join(out)).into(),
        ]
    };
    run(with_cache(&empty, "e.glb"), &["empty.plcache", "no frames"]);
    run(
        with_cache(&two, "t.usda"),
        &[
            "two.plcache",
            "does not match the character 'penguin'",
            "the cache has 2 skins ('body', 'flipper_l') but the character has 3 skins ('body', 'flipper_l', 'flipper_r')",
        ],
    );
    run(
        with_cache(&renamed, "r.glb"),
        &["skin 1 is 'tail' (16x16) in the cache but 'flipper_l' (16x16) in the character"],
    );
    run(
        with_cache(&other, "o.glb"),
        &[
            "skin 'body' (8x8 in the cache, 16x16 in the character)",
            "from where the character's joints put it",
            "bake again",
        ],
    );
    let mut obj = with_cache(&other, "objs");
    obj.extend(["--format".into(), "obj".into()]);
    run(obj, &["does not match"]);

    // The right cache with a character whose motion changed since the bake.
    let mut edited = character.clone();
    edited.key_postures[0].posture.root_translation.x += 0.05;
    let edited_path = d.join("edited.ron");
    save_character(&edited_path, &edited).unwrap();
    run(
        vec![
            "export".into(),
            s(&edited_path).into(),
            "--baked".into(),
            c.into(),
            "--out".into(),
            s(&d.join("x.glb")).into(),
        ],
        &["0.0500 m from where the character's joints put it"],
    );
    // A corrupt frame (a NaN inside a skin) in an otherwise good cache: the
    // frame's checksum names it.
    let corrupt = d.join("corrupt.plcache");
    let mut bytes = std::fs::read(cache).unwrap();
    let reader = CacheReader::open(cache).unwrap();
    let header = bytes.len() as u64 - reader.frame_count() as u64 * reader.bytes_per_frame();
    let at = (header + 3 * reader.bytes_per_frame() + 8 + 12 * (16 * 5 + 3)) as usize;
    bytes[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    std::fs::write(&corrupt, bytes).unwrap();
    run(
        with_cache(&corrupt, "c.glb"),
        &["frame 3: its checksum does not match its bytes"],
    );
    // A missing cache names the file.
    run(
        with_cache(&d.join("missing.plcache"), "m.glb"),
        &["missing.plcache"],
    );
}

/// What Blender shows of `glb` at `frames`, the scene at `fps` (the cache's,
/// so Blender frame k is cache frame k).
fn blender_view(python: &Path, glb: &Path, frames: &[usize], fps: usize) -> Value {
    let report = glb.with_extension("blender.json");
    let start = Instant::now();
    run_ok(
        Command::new(python)
            .arg("tests/support/blender_import.py")
            .arg(glb)
            .arg(&report)
            .arg(fps.to_string())
            .args(frames.iter().map(|f| f.to_string())),
        "importing into Blender",
    )
    .unwrap();
    note(&format!(
        "imported {} into Blender in {:.1} s",
        glb.display(),
        start.elapsed().as_secs_f64()
    ));
    serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap()
}

fn json_vec3(v: &Value) -> Vec3 {
    let a = v.as_array().unwrap();
    Vec3::new(
        a[0].as_f64().unwrap() as f32,
        a[1].as_f64().unwrap() as f32,
        a[2].as_f64().unwrap() as f32,
    )
}

#[test]
fn blender_imports_both_layouts_frame_for_frame() {
    let Some(python) = blender_or_skip(
        "note: skipping the Blender import check: set PLASTICINE_BLENDER=1 to run it \
             (installs bpy from PyPI: ~350 MB download, ~1 GB under the target directory)",
    ) else {
        return;
    };
    let cache = penguin_bake();
    let character = penguin();
    let (times, frames) = cache_frames(cache);
    let dir = out_dir("blender");
    let probe = [0usize, 12, 25];
    for (file, extra) in [
        ("morph.glb", vec![]),
        ("frames.glb", vec!["--morph-limit", "10"]),
    ] {
        let out = dir.path().join(file);
        export(cache, &out, &extra);
        let view = blender_view(&python, &out, &probe, 25);
        let morph = extra.is_empty();
        assert_eq!(view["import"][0], "FINISHED", "{file}");
        let objects = &view["objects"];
        let armature = &objects["penguin_skeleton"];
        assert_eq!(armature["type"], "ARMATURE", "{file}: {objects}");
        let bones: Vec<&str> = armature["bones"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_str().unwrap())
            .collect();
        let joints: Vec<&str> = character
            .skeleton
            .joints
            .iter()
            .map(|j| j.name.as_str())
            .collect();
        assert_eq!(bones, joints, "{file}");
        for &k in &probe {
            let shown = &view["frames"][k.to_string()];
            for (s, skin) in character.skins.iter().enumerate() {
                let name = if morph {
                    let name = format!("{}_skin", skin.name);
                    assert_eq!(
                        objects[&name]["shape_keys"],
                        frames.len() + 1,
                        "{file}: a basis and one shape key per frame"
                    );
                    name
                } else {
                    // Only this frame's meshes are visible.
                    for other in [k.wrapping_sub(1), k + 1] {
                        let hidden = format!("{}_{other:05}", skin.name);
                        assert!(
                            shown["meshes"].get(&hidden).is_none(),
                            "{file}: {hidden} at {k}"
                        );
                    }
                    format!("{}_{k:05}", skin.name)
                };
                let got = shown["meshes"][&name]
                    .as_array()
                    .unwrap_or_else(|| panic!("{file}: no visible mesh {name} at frame {k}"));
                let want = closed(skin.m, skin.n, &frames[k][s], &frames[0][s]);
                assert_eq!(got.len(), want.len());
                for (i, (g, want)) in got.iter().zip(&want).enumerate() {
                    let g = json_vec3(g);
                    assert!(
                        g.distance(*want) < 1e-5,
                        "{file}: Blender shows {name} point {i} at frame {k} at {g}, the cache has {want}"
                    );
                }
            }
            let posture = plasticine::io::posture_at(&character, times[k]);
            let fk = forward_kinematics(&character.skeleton, &posture);
            for (j, joint) in character.skeleton.joints.iter().enumerate() {
                let head = json_vec3(&shown["bones"][&joint.name]);
                let want = Vec3::from(fk[j].translation);
                assert!(
                    head.distance(want) < 1e-5,
                    "{file}: Blender puts bone {} at {head} at frame {k}, forward kinematics at {want}",
                    joint.name
                );
            }
        }
    }
}

/// An FEM character with only an imported mesh: its bake exports
/// the deformed mesh as morph targets and as per-frame meshes that
/// reproduce the cache's mesh frames and validate.
#[test]
fn fem_embedded_mesh_exports_as_morph_targets_and_per_frame_meshes() {
    let dir = out_dir("fem-mesh");
    let character = dir.path().join("limb.ron");
    let bake = dir.path().join("bake");
    for args in [
        vec![
            "fem-import",
            "assets/limb.obj",
            "--skeleton",
            "assets/limb_skeleton.ron",
            "--out",
            s(&character),
        ],
        vec![
            "bake",
            s(&character),
            "--out",
            s(&bake),
            "--fps",
            "10",
            "--duration",
            "0.5",
        ],
    ] {
        let (ok, _, stderr) = plasticine(&args);
        assert!(ok, "{stderr}");
    }
    let cache = bake.join("bake.plcache");
    let mut reader = CacheReader::open(&cache).unwrap();
    let (mut skins, mut meshes, mut muscles) = (Vec::new(), Vec::new(), Vec::new());
    let frames: Vec<Vec<Vec3>> = (0..reader.frame_count())
        .map(|k| {
            reader
                .read_frame_with_flesh(k, &mut skins, &mut meshes, &mut muscles)
                .unwrap();
            meshes[0].clone()
        })
        .collect();
    assert_eq!(frames.len(), 6);
    for (name, extra) in [
        ("morph.glb", vec![]),
        ("frames.glb", vec!["--morph-limit", "2"]),
    ] {
        let out = dir.path().join(name);
        let mut args = vec![
            "export",
            s(&character),
            "--baked",
            s(&cache),
            "--out",
            s(&out),
        ];
        args.extend_from_slice(&extra);
        let (ok, _, stderr) = plasticine(&args);
        assert!(ok, "{stderr}");
        let glb = Glb::read(&out);
        let mut worst = 0f32;
        for (k, frame) in frames.iter().enumerate() {
            let got: Vec<Vec3> = if extra.is_empty() {
                let node = glb.node_named("limb_skin");
                let mesh = glb.json["nodes"][node]["mesh"].as_u64().unwrap() as usize;
                let prim = &glb.json["meshes"][mesh]["primitives"][0];
                let base = glb.vec3s(&prim["attributes"]["POSITION"]);
                let delta = glb.vec3s(&prim["targets"][k]["POSITION"]);
                base.iter().zip(&delta).map(|(b, d)| *b + *d).collect()
            } else {
                let node = glb.node_named(&format!("limb_{k:05}"));
                let mesh = glb.json["nodes"][node]["mesh"].as_u64().unwrap() as usize;
                glb.vec3s(&glb.json["meshes"][mesh]["primitives"][0]["attributes"]["POSITION"])
            };
            assert_eq!(got.len(), frame.len());
            for (a, b) in got.iter().zip(frame) {
                worst = worst.max(a.distance(*b));
            }
        }
        eprintln!(
            "{name}: {} vertices, largest error {worst:.1e} m",
            frames[0].len()
        );
        assert!(worst < 1e-5, "{name}: {worst}");
        if let Some(tools) = tool_or_skip(gltf_validator(), "the glTF validator check") {
            assert_valid(&validate(&tools, &out), &out);
        }
    }
}

/// The skeleton's world transforms in the .glb at sample time `t` (s from
/// the clip's start, one of the rotation channels' inputs).
fn glb_joint_worlds(glb: &Glb, t: f32) -> Vec<glam::Mat4> {
    let skin = &glb.json["skins"][0];
    let joints: Vec<usize> = skin["joints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j.as_u64().unwrap() as usize)
        .collect();
    let parent_of = |node: usize| -> Option<usize> {
        glb.json["nodes"].as_array().unwrap().iter().position(|n| {
            n["children"]
                .as_array()
                .is_some_and(|c| c.contains(&node.into()))
        })
    };
    let mut world: Vec<glam::Mat4> = Vec::new();
    for (k, &node) in joints.iter().enumerate() {
        let (input, output, _) = glb.channel(node, "rotation");
        let i = input
            .iter()
            .position(|&s| (s - t).abs() < 1e-6)
            .unwrap_or_else(|| panic!("time {t} is not a sample of joint {k}"));
        let r = Quat::from_slice(&output[4 * i..4 * i + 4]);
        let tr = if k == 0 {
            let (_, out, _) = glb.channel(node, "translation");
            Vec3::from_slice(&out[3 * i..3 * i + 3])
        } else {
            let v: Vec<f32> = glb.json["nodes"][node]["translation"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect();
            Vec3::from_slice(&v)
        };
        let local = glam::Mat4::from_rotation_translation(r, tr);
        world.push(match parent_of(node) {
            Some(p) => world[joints.iter().position(|&j| j == p).unwrap()] * local,
            None => local,
        });
    }
    world
}

/// Exports a modal character's bake to `out`, which must say it wrote the
/// mesh `mesh` skinned with a target per mode.
fn export_modal(character: &Path, cache: &Path, out: &Path, mesh: &str) {
    let (ok, stdout, err) =
        plasticine(&["export", s(character), "--baked", s(cache), "--out", s(out)]);
    assert!(ok, "{err}");
    assert!(
        stdout.contains(&format!("mesh '{mesh}': skinned"))
            && stdout.contains("one per side of each vibration mode"),
        "{stdout}"
    );
}

/// A rigged mesh in a .glb: skinned, its morph targets' weights animated,
/// each in [0, 1]. Modal flesh's ([`Self::modal`]) has a target per side
/// of each mode (the mode, then its negative), at most one of a pair
/// non-zero; blendshapes' one per blend target.
#[derive(Clone)]
struct RigGlb {
    node: usize,
    /// Targets whose positions are stored sparsely (only the vertices the
    /// mode moves).
    sparse_targets: usize,
    rest: Vec<Vec3>,
    joints: Vec<u16>,
    weights: Vec<f32>,
    targets: Vec<Vec<Vec3>>,
    /// Morph targets (modal: two per mode).
    target_count: usize,
    /// The weights channel's output: `target_count` per sample.
    animated: Vec<f32>,
}

impl RigGlb {
    /// The modal mesh of node `node_name`, checked for its pairs.
    fn modal(glb: &Glb, node_name: &str) -> Self {
        let rig = Self::read(glb, node_name);
        assert_eq!(rig.target_count % 2, 0, "a target per side of each mode");
        for pair in rig.targets.chunks_exact(2) {
            assert!(
                pair[0].iter().zip(&pair[1]).all(|(a, b)| *a == -*b),
                "the second target of a pair is the first's negative"
            );
        }
        assert!(
            rig.animated
                .chunks_exact(2)
                .all(|p| p[0] == 0.0 || p[1] == 0.0),
            "one side of a mode at a time"
        );
        rig
    }

    fn read(glb: &Glb, node_name: &str) -> Self {
        let node = glb.node_named(node_name);
        assert_eq!(glb.json["nodes"][node]["skin"], 0);
        let mesh = &glb.json["meshes"][glb.json["nodes"][node]["mesh"].as_u64().unwrap() as usize];
        let prim = &mesh["primitives"][0];
        let rest = glb.vec3s(&prim["attributes"]["POSITION"]);
        let weights = glb.floats(&prim["attributes"]["WEIGHTS_0"]);
        let a = &glb.json["accessors"][prim["attributes"]["JOINTS_0"].as_u64().unwrap() as usize];
        let view = &glb.json["bufferViews"][a["bufferView"].as_u64().unwrap() as usize];
        let start = view["byteOffset"].as_u64().unwrap_or(0) as usize;
        let joints = glb.bin[start..start + 8 * rest.len()]
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let targets: Vec<Vec<Vec3>> = prim["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| glb.vec3s(&t["POSITION"]))
            .collect();
        let target_count = targets.len();
        let sparse_targets = prim["targets"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| {
                glb.json["accessors"][t["POSITION"].as_u64().unwrap() as usize]
                    .get("sparse")
                    .is_some()
            })
            .count();
        let (input, animated, interpolation) = glb.channel(node, "weights");
        assert_eq!(interpolation, "LINEAR");
        assert_eq!(animated.len(), input.len() * target_count);
        assert!(
            animated.iter().all(|w| (0.0..=1.0 + 1e-6).contains(w)),
            "weights in [0, 1]"
        );
        Self {
            node,
            sparse_targets,
            rest,
            joints,
            weights,
            targets,
            target_count,
            animated,
        }
    }

    /// Largest distance between two rest vertices.
    fn size(&self) -> f32 {
        self.rest
            .iter()
            .flat_map(|a| self.rest.iter().map(move |b| a.distance(*b)))
            .fold(0.0f32, f32::max)
    }

    /// The mesh as a glTF viewer shows it at exported frame `k` (time `t`
    /// from the clip's start): morph targets, then the skin; and how far
    /// the morph moves any vertex.
    fn evaluate(&self, glb: &Glb, k: usize, t: f32) -> (Vec<Vec3>, f32) {
        let _ = self.node;
        let ibm = glb.floats(&glb.json["skins"][0]["inverseBindMatrices"]);
        let world = glb_joint_worlds(glb, t);
        let skinning: Vec<glam::Mat4> = world
            .iter()
            .enumerate()
            .map(|(j, w)| *w * glam::Mat4::from_cols_slice(&ibm[16 * j..16 * j + 16]))
            .collect();
        let n = self.target_count;
        let w = &self.animated[k * n..(k + 1) * n];
        let mut moved = 0.0f32;
        let shown = self
            .rest
            .iter()
            .enumerate()
            .map(|(v, p)| {
                let offset: Vec3 = (0..n).map(|i| self.targets[i][v] * w[i]).sum();
                moved = moved.max(offset.length());
                let morphed = *p + offset;
                (0..4)
                    .map(|c| {
                        let m = skinning[usize::from(self.joints[4 * v + c])];
                        m.transform_point3(morphed) * self.weights[4 * v + c]
                    })
                    .sum()
            })
            .collect();
        (shown, moved)
    }
}

/// Modal flesh (DyRT §4) exports as DyRT draws it: the imported mesh skinned
/// to the skeleton with one morph target per vibration mode, its weights the
/// bake's amplitudes; evaluated as any glTF viewer does (morph, then skin)
/// it is the baked mesh at every frame, and it validates. A cache whose
/// modes are not the character's (its flesh changed) is refused.
#[test]
fn modal_flesh_exports_a_morph_target_per_mode_that_replays_the_bake() {
    let dir = out_dir("modal");
    let (character, cache) = modal_limb_bake();
    let (character, cache) = (character.clone(), cache.clone());
    let glb_path = dir.path().join("limb.glb");
    export_modal(&character, &cache, &glb_path, "limb");
    if let Some(tools) = tool_or_skip(gltf_validator(), "the modal glTF validation") {
        assert_valid(&validate(&tools, &glb_path), &glb_path);
    }

    let glb = Glb::read(&glb_path);
    let modal = RigGlb::modal(&glb, "limb_modal");
    assert_eq!(
        modal.target_count, 64,
        "a target per side of 16 modes (as asked: the next excitable mode stands in for \
         a dropped one) on each of the limb's two bones"
    );
    let mut reader = CacheReader::open(&cache).unwrap();
    assert_eq!(reader.flesh().modal.len(), 2);
    let size = modal.size();
    let (mut worst, mut jiggle) = (0.0f32, 0.0f32);
    let t0 = reader.frame_time(0).unwrap();
    for k in 0..reader.frame_count() {
        let (mut skins, mut meshes, mut muscles) = (Vec::new(), Vec::new(), Vec::new());
        let t = reader
            .read_frame_with_flesh(k, &mut skins, &mut meshes, &mut muscles)
            .unwrap();
        let (shown, moved) = modal.evaluate(&glb, k, (t - t0) as f32);
        jiggle = jiggle.max(moved);
        for (a, b) in shown.iter().zip(&meshes[0]) {
            worst = worst.max(a.distance(*b));
        }
    }
    let modes = modal.target_count / 2;
    assert!(
        worst <= 1e-4 * size,
        "the glTF evaluates {worst} m from the bake (mesh {size} m)"
    );
    assert!(
        jiggle > 100.0 * worst.max(1e-6 * size),
        "the modes move the mesh ({jiggle} m), well above the check's resolution"
    );
    note(&format!(
        "modal glTF: {modes} modes (two targets each), replays the bake to {worst:.1e} m, modal motion up to {jiggle:.1e} m"
    ));

    // The flesh made stiffer after the bake: its modes are not the cache's.
    let mut c = load_character(&character).unwrap();
    if let plasticine::character::Flesh::Modal(m) = &mut c.flesh {
        m.fem.young *= 2.0;
    }
    let stiffer = dir.path().join("stiffer.ron");
    save_character(&stiffer, &c).unwrap();
    let refused = dir.path().join("refused.glb");
    let (ok, _, err) = plasticine(&[
        "export",
        s(&stiffer),
        "--baked",
        s(&cache),
        "--out",
        s(&refused),
    ]);
    assert!(!ok && err.contains("bake it again"), "{err}");
    assert!(!refused.exists(), "nothing written");
}

/// Makes a character under `work_dir()/name` as `file` with `plasticine
/// make... --out FILE`, then bakes it with `bake_extra`: (character, cache,
/// what the making printed).
fn make_and_bake(
    name: &str,
    file: &str,
    make: &[&str],
    bake_extra: &[&str],
) -> (PathBuf, PathBuf, String) {
    let dir = work_dir().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let character = dir.join(file);
    let mut args = make.to_vec();
    args.extend(["--out", s(&character)]);
    let (ok, out, err) = plasticine(&args);
    assert!(ok, "{err}");
    let bake = dir.join("bake");
    let mut args = vec!["bake", s(&character), "--out", s(&bake)];
    args.extend_from_slice(bake_extra);
    let (ok, _, err) = plasticine(&args);
    assert!(ok, "{err}");
    (character, bake.join("bake.plcache"), out)
}

/// The imported limb over modal flesh, baked through its keys:
/// (character, cache).
fn modal_limb_bake() -> &'static (PathBuf, PathBuf) {
    static BAKE: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BAKE.get_or_init(|| {
        let make = [
            "fem-import",
            "assets/limb.obj",
            "--skeleton",
            "assets/limb_skeleton.ron",
            "--flesh",
            "modal",
        ];
        let (character, cache, out) = make_and_bake("modal-limb", "limb.ron", &make, &[]);
        assert!(out.contains("modal part 'shoulder'"), "{out}");
        (character, cache)
    })
}

/// Blender's glTF importer (`bpy`, with `PLASTICINE_BLENDER=1`) shows the
/// modal limb as it was baked: a shape key per mode driven by the
/// amplitudes, under the armature, evaluated at frames through the motion
/// within 1e-4 of the mesh's size of the cache's mesh.
#[test]
fn blender_shows_the_modal_mesh_as_baked() {
    let Some(python) = blender_or_skip(
        "note: skipping the Blender import of the modal glb: set PLASTICINE_BLENDER=1",
    ) else {
        return;
    };
    let (character, cache) = modal_limb_bake();
    let dir = out_dir("blender-modal");
    let glb = dir.path().join("limb.glb");
    export_modal(character, cache, &glb, "limb");
    let targets = RigGlb::modal(&Glb::read(&glb), "limb_modal").target_count;
    let mut reader = CacheReader::open(cache).unwrap();
    let n = reader.frame_count();
    let span = reader.frame_time(n - 1).unwrap() - reader.frame_time(0).unwrap();
    let fps = ((n - 1) as f64 / span).round() as usize;
    let probe = [0, n / 3, n / 2, 2 * n / 3, n - 1];
    let view = blender_view(&python, &glb, &probe, fps);
    assert_eq!(view["import"][0], "FINISHED");
    // Blender names the skinned mesh's object after its mesh ("limb"); the
    // node ("limb_modal") becomes an empty beside it.
    let object = &view["objects"]["limb"];
    assert_eq!(object["modifiers"][0], "ARMATURE", "{object}");
    assert_eq!(
        object["shape_keys"],
        targets + 1,
        "a basis and a shape key per target: {object}"
    );
    let (mut worst, mut size, mut moved) = (0.0f32, 0.0f32, 0.0f32);
    let mut first: Option<Vec<Vec3>> = None;
    for &k in &probe {
        let (mut skins, mut meshes, mut muscles) = (Vec::new(), Vec::new(), Vec::new());
        reader
            .read_frame_with_flesh(k, &mut skins, &mut meshes, &mut muscles)
            .unwrap();
        let baked = &meshes[0];
        let shown: Vec<Vec3> = view["frames"][k.to_string()]["meshes"]["limb"]
            .as_array()
            .unwrap_or_else(|| panic!("Blender shows no modal mesh at frame {k}"))
            .iter()
            .map(json_vec3)
            .collect();
        assert_eq!(shown.len(), baked.len(), "Blender keeps every vertex");
        for (a, b) in shown.iter().zip(baked) {
            worst = worst.max(a.distance(*b));
        }
        let first = first.get_or_insert_with(|| baked.clone());
        for (a, b) in baked.iter().zip(first.iter()) {
            moved = moved.max(a.distance(*b));
            size = size.max(a.distance(baked[0]));
        }
    }
    note(&format!(
        "Blender shows the modal limb ({targets} shape keys) within {worst:.1e} m of the bake at frames {probe:?} ({fps} fps); it moves {moved:.3} m"
    ));
    assert!(
        worst <= 1e-4 * size,
        "Blender shows the mesh {worst} m from the bake (mesh {size} m)"
    );
    assert!(
        moved > 100.0 * worst.max(1e-6),
        "the probed frames differ: {moved}"
    );
}

/// The penguin over modal flesh, baked for 0.6 s: (character, cache).
fn modal_penguin_bake() -> &'static (PathBuf, PathBuf) {
    static BAKE: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BAKE.get_or_init(|| {
        let make = ["sample", "penguin", "--flesh", "modal"];
        let (character, cache, _) =
            make_and_bake("modal-penguin", "p.ron", &make, &["--duration", "0.6"]);
        (character, cache)
    })
}

/// The modal penguin's muscles posed on the CPU from the cache's
/// amplitudes at every frame (what every export must show), and their size.
fn modal_penguin_muscles(character: &Path, cache: &Path) -> (Vec<Vec<Vec3>>, usize) {
    let c = load_character(character).unwrap();
    let driver = plasticine::skin::SkeletonDriver::Keys(c.key_postures.clone());
    let posture_at = |t: f64| driver.posture_at(t);
    let sim = plasticine::modal::ModalSim::new(&c, &posture_at, 0.0).unwrap();
    let (positions, triangles) = plasticine::modal::rest_muscles(&c);
    let mesh = sim.embed_mesh(&positions, &triangles);
    let mut reader = CacheReader::open(cache).unwrap();
    let frames = (0..reader.frame_count())
        .map(|k| {
            let t = reader.frame_time(k).unwrap();
            let q: Vec<f64> = reader
                .read_amplitudes(k)
                .unwrap()
                .iter()
                .map(|&q| f64::from(q))
                .collect();
            mesh.positions(&sim.placements(&c, &posture_at(t)), &q)
        })
        .collect();
    (frames, mesh.modes)
}

/// The penguin over modal flesh has no embedded mesh: its muscles are the
/// flesh, so they export as the modal mesh (the layer the simulated skin
/// slides over), one morph target per mode of its five parts; a glTF viewer
/// shows them where the modal flesh put them at every frame of the bake.
#[test]
fn modal_penguin_exports_its_muscles_with_a_morph_target_per_mode() {
    let dir = out_dir("modal-penguin");
    let (character, cache) = modal_penguin_bake();
    let glb_path = dir.path().join("p.glb");
    export_modal(character, cache, &glb_path, "penguin_muscles");
    if let Some(tools) = tool_or_skip(gltf_validator(), "the modal penguin's glTF validation") {
        assert_valid(&validate(&tools, &glb_path), &glb_path);
    }
    let glb = Glb::read(&glb_path);
    let modal = RigGlb::modal(&glb, "penguin_muscles_modal");
    // Each mode moves only its part's muscles: most targets are sparse.
    assert!(
        2 * modal.sparse_targets > modal.target_count,
        "{} of {} targets sparse",
        modal.sparse_targets,
        modal.target_count
    );

    // The same muscles posed by the modal flesh on the CPU from the
    // cache's amplitudes.
    let (want, modes) = modal_penguin_muscles(character, cache);
    assert_eq!(modal.target_count, 2 * modes);
    assert_eq!(modal.rest.len(), want[0].len());
    let size = modal.size();
    let mut reader = CacheReader::open(cache).unwrap();
    let t0 = reader.frame_time(0).unwrap();
    let (mut worst, mut jiggle) = (0.0f32, 0.0f32);
    for (k, want) in want.iter().enumerate() {
        let t = reader.frame_time(k).unwrap();
        let (shown, moved) = modal.evaluate(&glb, k, (t - t0) as f32);
        jiggle = jiggle.max(moved);
        for (a, b) in shown.iter().zip(want) {
            worst = worst.max(a.distance(*b));
        }
    }
    note(&format!(
        "modal penguin glTF: {} targets on {} muscle vertices, within {worst:.1e} m of the CPU, modal motion up to {jiggle:.1e} m",
        modal.target_count,
        modal.rest.len()
    ));
    assert!(worst <= 1e-4 * size, "{worst} m from the CPU (size {size})");
    assert!(
        jiggle > 100.0 * worst.max(1e-6 * size),
        "modal motion {jiggle}"
    );
}

/// USD carries the modal flesh as UsdSkel does DyRT: the penguin's muscles
/// bound to a skeleton with a `BlendShape` per mode and the amplitudes as
/// `blendShapeWeights`; Pixar's own UsdSkel (blend shapes, then skinning)
/// poses them where the modal flesh put them at every frame of the bake.
#[test]
fn modal_penguin_exports_to_usd_skel_blend_shapes_that_replay_the_modes() {
    let Some(python) = tool_or_skip(pxr_python(), "the modal USD check") else {
        return;
    };
    let dir = out_dir("modal-usd");
    let (character, cache) = modal_penguin_bake();
    let usd = dir.path().join("p.usda");
    export_modal(character, cache, &usd, "penguin_muscles");
    let (want, _) = modal_penguin_muscles(character, cache);
    let codes: Vec<String> = (0..want.len()).map(|k| k.to_string()).collect();
    let mut cmd = Command::new(python);
    cmd.arg("tests/support/usd_skel.py").arg(&usd).args(&codes);
    let report: Value = serde_json::from_str(&run_ok(&mut cmd, "usd_skel.py").unwrap()).unwrap();
    assert_eq!(report["baked"], true, "{}", report["rest"]);
    let mesh = &report["meshes"]["/penguin/penguin_muscles_modal/penguin_muscles"];
    let size = want[0]
        .iter()
        .flat_map(|a| want[0].iter().map(move |b| a.distance(*b)))
        .fold(0.0f32, f32::max);
    let mut worst = 0.0f32;
    for (k, want) in want.iter().enumerate() {
        let shown = mesh[format!("{k}.0")]
            .as_array()
            .unwrap_or_else(|| panic!("no points at time code {k}: {}", report["rest"]));
        assert_eq!(shown.len(), want.len());
        for (p, w) in shown.iter().zip(want) {
            worst = worst.max(json_vec3(p).distance(*w));
        }
    }
    note(&format!(
        "modal penguin USD: UsdSkel poses the muscles within {worst:.1e} m of the CPU over {} frames",
        want.len()
    ));
    assert!(worst <= 1e-4 * size, "{worst} m from the CPU (size {size})");
}

/// A shape key made in Blender and exported by Blender's own glTF exporter
/// (sparse morph-target accessors, u8 indices, no buffer view under them)
/// becomes a blendshape rig whose target moves the sphere's cap by what the
/// key moved it.
#[test]
fn blender_shape_keys_with_sparse_accessors_become_a_blendshape_rig() {
    let Some(python) =
        blender_or_skip("note: skipping the Blender shape-key import: set PLASTICINE_BLENDER=1")
    else {
        return;
    };
    let dir = out_dir("shape-keys");
    let ball = dir.path().join("ball.glb");
    run_ok(
        Command::new(&python)
            .arg("tests/support/blender_shape_keys.py")
            .arg(&ball),
        "exporting a shape key from Blender",
    )
    .unwrap();
    let glb = Glb::read(&ball);
    let sparse = glb.json["accessors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a.get("sparse").is_some())
        .count();
    assert_eq!(
        sparse, 1,
        "Blender wrote the shape key sparsely: {}",
        glb.json
    );

    let rig_file = dir.path().join("ball.ron");
    let (ok, stdout, stderr) = plasticine(&[
        "blendshape",
        "import",
        ball.to_str().unwrap(),
        "--out",
        rig_file.to_str().unwrap(),
    ]);
    assert!(ok, "{stdout}{stderr}");
    let rig = plasticine::blendshape::load_rig(&rig_file).unwrap();
    assert_eq!(rig.targets.len(), 1);
    assert_eq!(rig.targets[0].name, "lift");
    // Blender's z is glTF's y: the cap (above 0.05 m) rose 0.02 m, the rest
    // stayed.
    let (mut raised, mut still) = (0, 0);
    for (k, (t, b)) in rig.targets[0].positions.iter().zip(&rig.base).enumerate() {
        let d = *t - *b;
        if b.y > 0.05 {
            assert!(
                d.distance(Vec3::new(0.0, 0.02, 0.0)) < 1e-6,
                "vertex {k} moved {d}"
            );
            raised += 1;
        } else {
            assert!(d.length() < 1e-7, "vertex {k} moved {d}");
            still += 1;
        }
    }
    assert!(
        raised > 10 && still > raised,
        "{raised} raised, {still} still"
    );
}

/// The imported limb with its flexed shape attached as a blend target and
/// keyed to weight 1 at 0.5 s, baked for 0.5 s: (character, cache).
fn blend_limb_bake() -> &'static (PathBuf, PathBuf) {
    static BAKE: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    BAKE.get_or_init(|| {
        let dir = work_dir().join("blend-limb");
        std::fs::create_dir_all(&dir).unwrap();
        let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
        for args in [
            vec![
                "fem-import",
                "assets/limb.obj",
                "--skeleton",
                "assets/limb_skeleton.ron",
            ],
            vec![
                "blendshape",
                "import",
                "assets/limb.obj",
                "assets/limb_flexed.obj",
            ],
        ] {
            let out = if args[0] == "fem-import" {
                path("limb.ron")
            } else {
                path("rig.ron")
            };
            let mut args = args.clone();
            args.extend(["--out", &out]);
            let (ok, _, err) = plasticine(&args);
            assert!(ok, "{err}");
        }
        for args in [
            vec!["blendshape", "attach", &path("limb.ron"), &path("rig.ron")],
            vec![
                "blendshape",
                "key",
                &path("limb.ron"),
                "--time",
                "0.5",
                "--weight",
                "limb_flexed=1",
            ],
        ] {
            let mut args = args.clone();
            let out = path("limb.ron");
            args.extend(["--out", &out]);
            let (ok, _, err) = plasticine(&args);
            assert!(ok, "{err}");
        }
        let character = dir.join("limb.ron");
        let bake = dir.join("bake");
        let (ok, _, err) = plasticine(&[
            "bake",
            s(&character),
            "--out",
            s(&bake),
            "--fps",
            "20",
            "--duration",
            "0.5",
        ]);
        assert!(ok, "{err}");
        (character, bake.join("bake.plcache"))
    })
}

/// `export --blend-targets` writes the blendshapes as a DCC tool wants
/// them: the embedded mesh skinned to the skeleton with one morph target
/// named after each blend target (its offsets from the base), its weights
/// the key postures' at every frame, in place of the baked points. It
/// validates; evaluated as a viewer does (morph, then skin) at the flexed
/// key it sits nearer the baked flex than the unmorphed rig does; USD gets
/// a `BlendShape` of the same name.
#[test]
fn blend_targets_export_as_named_morph_targets_keyed_from_the_postures() {
    let dir = out_dir("blend-targets");
    let (character, cache) = blend_limb_bake();
    let c = load_character(character).unwrap();
    let shapes = c.blendshapes().expect("the attached target");
    let base = &c
        .flesh
        .fem()
        .unwrap()
        .embedded_mesh
        .as_ref()
        .unwrap()
        .positions;
    let glb_path = dir.path().join("limb.glb");
    let (ok, stdout, err) = export_limb(character, &glb_path, &["--blend-targets"]);
    assert!(ok, "{err}");
    assert!(
        stdout.contains("mesh 'limb': skinned, 1 named morph targets (limb_flexed)"),
        "{stdout}"
    );
    if let Some(tools) = tool_or_skip(gltf_validator(), "the blend-target glTF validation") {
        assert_valid(&validate(&tools, &glb_path), &glb_path);
    }
    let glb = Glb::read(&glb_path);
    let nodes = glb.json["nodes"].as_array().unwrap();
    assert!(
        !nodes.iter().any(|n| n["name"] == "limb_skin"),
        "the rig replaces the baked points"
    );
    let rig = RigGlb::read(&glb, "limb_blend");
    let mesh = &glb.json["meshes"][glb.json["nodes"][rig.node]["mesh"].as_u64().unwrap() as usize];
    assert_eq!(
        mesh["extras"]["targetNames"],
        serde_json::json!(["limb_flexed"])
    );
    assert_eq!(rig.target_count, 1);
    assert_eq!(rig.rest.len(), base.len());
    let size = rig.size();
    for ((t, want), b) in rig.targets[0]
        .iter()
        .zip(&shapes.targets[0].positions)
        .zip(base)
    {
        assert!(
            t.distance(*want - *b) <= 1e-6 * size,
            "the target's offset {t} against {}",
            *want - *b
        );
    }
    let moved = rig.targets[0]
        .iter()
        .map(|t| t.length())
        .fold(0.0, f32::max);
    assert!(moved > 0.01 * size, "the flex moves the mesh: {moved}");

    // The weights: the key postures' at every frame, 0 → 1 over the clip.
    let mut reader = CacheReader::open(cache).unwrap();
    let n = reader.frame_count();
    let t0 = reader.frame_time(0).unwrap();
    let (input, _, _) = glb.channel(rig.node, "weights");
    assert_eq!(input.len(), n);
    for (k, at) in input.iter().enumerate() {
        let t = reader.frame_time(k).unwrap();
        let want = plasticine::io::posture_at(&c, t).blend[0];
        assert!((at - (t - t0) as f32).abs() < 1e-6);
        assert!(
            (rig.animated[k] - want).abs() < 1e-6,
            "frame {k}: weight {} against the keyed {want}",
            rig.animated[k]
        );
    }
    assert!(rig.animated[0] < 1e-6 && (rig.animated[n - 1] - 1.0).abs() < 1e-6);

    // As a viewer shows the last frame: where the target moves the mesh
    // (the bulge), the morph brings the skinned rig nearer the baked flex
    // than the rig without it. Elsewhere both differ from the bake by what
    // skinning misses of the simulated flesh.
    let (mut skins, mut meshes, mut muscles) = (Vec::new(), Vec::new(), Vec::new());
    let t = reader
        .read_frame_with_flesh(n - 1, &mut skins, &mut meshes, &mut muscles)
        .unwrap();
    let (shown, _) = rig.evaluate(&glb, n - 1, (t - t0) as f32);
    let mut unmorphed = rig.clone();
    unmorphed.animated.iter_mut().for_each(|w| *w = 0.0);
    let (plain, _) = unmorphed.evaluate(&glb, n - 1, (t - t0) as f32);
    let bulge: Vec<usize> = (0..base.len())
        .filter(|&v| rig.targets[0][v].length() > 0.3 * moved)
        .collect();
    let off = |a: &[Vec3]| -> f32 {
        bulge
            .iter()
            .map(|&v| a[v].distance(meshes[0][v]))
            .sum::<f32>()
            / bulge.len() as f32
    };
    let (morphed_off, plain_off) = (off(&shown), off(&plain));
    note(&format!(
        "blend-target glTF: at the flexed key the rig's {} bulge vertices are {morphed_off:.2e} m (mean) from the bake, {plain_off:.2e} m without its target",
        bulge.len()
    ));
    assert!(
        morphed_off < 0.7 * plain_off,
        "the morph brings the rig to the flex: {morphed_off} against {plain_off}"
    );

    // USD: a BlendShape named as the target, weights keyed.
    let usd = dir.path().join("limb.usda");
    let (ok, _, err) = export_limb(character, &usd, &["--blend-targets"]);
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&usd).unwrap();
    assert!(text.contains("def BlendShape \"limb_flexed\""), "{text}");
    assert!(text.contains("uniform token[] blendShapes = [\"limb_flexed\"]"));
    assert!(text.contains("def SkelRoot \"limb_blend\""));
}

/// `export --blend-targets` is refused, with nothing written, to an OBJ
/// sequence (no morph targets) and for a character without blend targets.
#[test]
fn blend_targets_export_is_refused_to_obj_and_without_targets() {
    let dir = out_dir("blend-targets-refused");
    let (character, _) = blend_limb_bake();
    let c = load_character(character).unwrap();
    let obj = dir.path().join("obj");
    let (ok, _, err) = export_limb(character, &obj, &["--format", "obj", "--blend-targets"]);
    assert!(!ok && err.contains("needs glb or usda"), "{err}");
    assert!(!obj.exists(), "nothing written");
    let mut bare = c.clone();
    bare.flesh.fem_mut().unwrap().blendshapes = None;
    for k in &mut bare.key_postures {
        k.posture.blend.clear();
    }
    let bare_path = dir.path().join("bare.ron");
    save_character(&bare_path, &bare).unwrap();
    let refused = dir.path().join("bare.glb");
    let (ok, _, err) = export_limb(&bare_path, &refused, &["--blend-targets"]);
    assert!(!ok && err.contains("has no blend targets"), "{err}");
    assert!(!refused.exists(), "nothing written");
}

/// `plasticine export CHARACTER --baked` the blend limb's cache `--out OUT`
/// with `extra` options: (success, stdout, stderr).
fn export_limb(character: &Path, out: &Path, extra: &[&str]) -> (bool, String, String) {
    let (_, cache) = blend_limb_bake();
    let mut args = vec!["export", s(character), "--baked", s(cache), "--out", s(out)];
    args.extend_from_slice(extra);
    plasticine(&args)
}
