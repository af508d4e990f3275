//! ASCII USD (`.usda`) point cache: see the [module docs](super).
//!
//! One `Xform` prim named after the character (the default prim), holding one
//! `Mesh` prim per skin: `faceVertexCounts` and `faceVertexIndices` of the
//! grid's quads closed by its caps ([`ClosedGrid::faces`]: the grid's quads,
//! the caps' quads, then their apex triangles; the first m·n points are the
//! grid's, `plasticine:capRings` says how many rings each cap has; wound
//! counter-clockwise seen from the side the normals point to, so
//! `orientation = "rightHanded"`), `subdivisionScheme = "none"` (the points
//! are the simulated surface, not a cage), and time-sampled `points`,
//! `normals` (per vertex) and `extent`. Time code k is k frames after the
//! first exported frame, at `timeCodesPerSecond` = the cache's fps; the
//! stage is Y up in metres. Floats are written in their shortest exact
//! decimal form, so the points read back bit for bit.
//!
//! Each skin's samples are written together, so the cache is read once per
//! skin and attribute; only one frame is in memory at a time.

use super::{
    ClosedGrid, ExportError, SkinnedMorphs, Source, Topology, commit, local_transforms,
    relative_times,
};
use crate::io::{AtomicFile, IoError};
use crate::kinematics::forward_kinematics;
use glam::{Mat4, Quat, Vec3};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

/// A valid, unique USD prim name for `name` (letters, digits and `_`, not
/// starting with a digit).
pub fn prim_name(name: &str, taken: &mut HashSet<String>) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    let mut unique = s.clone();
    let mut k = 1;
    while !taken.insert(unique.clone()) {
        unique = format!("{s}_{k}");
        k += 1;
    }
    unique
}

/// A time code: whole numbers as such, others in full.
fn time_code(frames: f64) -> String {
    let r = frames.round();
    if (frames - r).abs() < 1e-6 {
        format!("{r}")
    } else {
        format!("{frames}")
    }
}

fn tuple(s: &mut String, v: Vec3) {
    let _ = write!(s, "({}, {}, {})", v.x, v.y, v.z);
}

fn quote(s: &str) -> String {
    let mut q = String::from("\"");
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                q.push('\\');
                q.push(c);
            }
            '\n' => q.push_str("\\n"),
            c if c.is_control() => {}
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// Writes the USD file; returns its size in bytes.
/// A painted skin's colours, one per vertex.
fn display_color(s: &mut String, colors: &[Vec3]) {
    let _ = write!(s, "        color3f[] primvars:displayColor = [");
    for (i, c) in colors.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        tuple(s, *c);
    }
    let _ = writeln!(s, "] (\n            interpolation = \"vertex\"\n        )");
}

/// The layer's metadata and the opening of the root `Xform`.
fn stage_header(src: &Source, root: &str, codes: &[String]) -> String {
    let character = src.character;
    let count = src.frames.len();
    let mut s = String::new();
    let _ = writeln!(s, "#usda 1.0\n(");
    let _ = writeln!(s, "    defaultPrim = {}", quote(root));
    let doc = format!(
        "Plasticine {}: '{}' from {}, {} frames at {} fps (cache frames {}..={} every {})",
        env!("CARGO_PKG_VERSION"),
        character.name,
        src.cache.path().display(),
        count,
        src.fps,
        src.frames[0],
        src.frames[count - 1],
        if count > 1 {
            src.frames[1] - src.frames[0]
        } else {
            1
        }
    );
    let _ = writeln!(s, "    doc = {}", quote(&doc));
    let _ = writeln!(s, "    endTimeCode = {}", codes[count - 1]);
    let _ = writeln!(s, "    framesPerSecond = {}", src.fps);
    let _ = writeln!(s, "    metersPerUnit = 1");
    let _ = writeln!(s, "    startTimeCode = {}", codes[0]);
    let _ = writeln!(s, "    timeCodesPerSecond = {}", src.fps);
    let _ = writeln!(s, "    upAxis = \"Y\"\n)\n");
    let _ = writeln!(
        s,
        "def Xform {} (\n    kind = \"component\"\n)\n{{",
        quote(root)
    );
    s
}

pub(super) fn write_usda(
    src: &mut Source,
    out: &Path,
    rig: Option<&SkinnedMorphs>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<u64, ExportError> {
    let character = src.character;
    let count = src.frames.len();
    let codes: Vec<String> = relative_times(src)
        .iter()
        .map(|t| time_code(t * f64::from(src.fps)))
        .collect();
    let mut taken = HashSet::new();
    let root = prim_name(&character.name, &mut taken);
    let mut file = AtomicFile::create(out)?;
    let mut bytes = 0u64;
    let mut put = |file: &mut AtomicFile, s: &str| -> Result<(), IoError> {
        bytes += s.len() as u64;
        file.write_all(s.as_bytes())
            .map_err(|e| IoError::os(out, "write", e))
    };

    let mut s = stage_header(src, &root, &codes);
    put(&mut file, &s)?;

    let skins = src.surfaces.clone();
    let total = 2 * count * skins.len();
    let mut done = 0;
    let mut frame = Vec::new();
    let mut normals = Vec::new();
    for (k, skin) in skins.iter().enumerate() {
        s.clear();
        let name = prim_name(&skin.name, &mut taken);
        let _ = writeln!(s, "    def Mesh {}\n    {{", quote(&name));
        // Skins as quads (and their caps' apex triangles), embedded meshes
        // as their triangles.
        let faces: Vec<Vec<u32>> = match &skin.topology {
            Topology::Grid { m, n, flip } => ClosedGrid::new(*m, *n).faces(*flip),
            Topology::Mesh(t) => t.iter().map(|t| t.to_vec()).collect(),
        };
        let _ = write!(s, "        int[] faceVertexCounts = [");
        for (q, f) in faces.iter().enumerate() {
            let _ = write!(s, "{}{}", if q == 0 { "" } else { ", " }, f.len());
        }
        let _ = write!(s, "]\n        int[] faceVertexIndices = [");
        for (q, face) in faces.iter().enumerate() {
            for (i, v) in face.iter().enumerate() {
                let sep = if q == 0 && i == 0 { "" } else { ", " };
                let _ = write!(s, "{sep}{v}");
            }
        }
        let _ = writeln!(s, "]");
        let _ = writeln!(s, "        uniform token orientation = \"rightHanded\"");
        let _ = writeln!(s, "        uniform token subdivisionScheme = \"none\"");
        if let Some(colors) = src.colors(k) {
            display_color(&mut s, &colors);
        }
        match &skin.topology {
            Topology::Grid { m, n, .. } => {
                let _ = writeln!(
                    s,
                    "        custom string plasticine:skin = {}\n        custom int2 plasticine:grid = ({m}, {n})\n        custom int plasticine:capRings = {}",
                    quote(&skin.name),
                    ClosedGrid::new(*m, *n).rings,
                );
            }
            Topology::Mesh(_) => {
                let _ = writeln!(
                    s,
                    "        custom string plasticine:embeddedMesh = {}",
                    quote(&skin.name),
                );
            }
        }
        put(&mut file, &s)?;

        // Points (and the extent), then normals: one pass over the cache each.
        let mut extents = Vec::with_capacity(count);
        for attr in ["point3f[] points", "normal3f[] normals"] {
            let normal = attr.starts_with("normal");
            s.clear();
            if normal {
                let _ = writeln!(
                    s,
                    "        {attr} (\n            interpolation = \"vertex\"\n        )"
                );
            }
            let _ = writeln!(s, "        {attr}.timeSamples = {{");
            put(&mut file, &s)?;
            for e in 0..count {
                src.read(e, &mut frame)?;
                let p = &frame[k];
                let data: &[Vec3] = if normal {
                    skin.normals(p, &mut normals);
                    &normals
                } else {
                    let lo = p.iter().copied().fold(Vec3::INFINITY, Vec3::min);
                    let hi = p.iter().copied().fold(Vec3::NEG_INFINITY, Vec3::max);
                    extents.push((lo, hi));
                    p
                };
                s.clear();
                let _ = write!(s, "            {}: [", codes[e]);
                for (i, v) in data.iter().enumerate() {
                    if i > 0 {
                        s.push_str(", ");
                    }
                    tuple(&mut s, *v);
                }
                s.push_str("],\n");
                put(&mut file, &s)?;
                done += 1;
                progress(done, total);
            }
            put(&mut file, "        }\n")?;
        }
        s.clear();
        let _ = writeln!(s, "        float3[] extent.timeSamples = {{");
        for (e, (lo, hi)) in extents.iter().enumerate() {
            let _ = write!(s, "            {}: [", codes[e]);
            tuple(&mut s, *lo);
            s.push_str(", ");
            tuple(&mut s, *hi);
            s.push_str("],\n");
        }
        let _ = writeln!(s, "        }}\n    }}");
        if k + 1 < skins.len() {
            s.push('\n');
        }
        put(&mut file, &s)?;
    }
    if let Some(m) = rig {
        s.clear();
        rig_skel(src, m, &codes, &root, &mut taken, &mut s)?;
        put(&mut file, &s)?;
    }
    put(&mut file, "}\n")?;
    Ok(commit(file, bytes)?)
}

/// A matrix as USD writes it: rows are glam's columns (USD multiplies row
/// vectors on the left).
fn matrix(s: &mut String, m: Mat4) {
    s.push('(');
    for (i, c) in m.to_cols_array_2d().iter().enumerate() {
        let _ = write!(
            s,
            "{}({}, {}, {}, {})",
            if i > 0 { ", " } else { "" },
            c[0],
            c[1],
            c[2],
            c[3]
        );
    }
    s.push(')');
}

fn list<T>(s: &mut String, items: &[T], mut each: impl FnMut(&mut String, &T)) {
    s.push('[');
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        each(s, x);
    }
    s.push(']');
}

/// A rigged mesh as UsdSkel draws it: a `SkelRoot` holding the skeleton
/// (bind and rest transforms) with its `SkelAnimation` (every exported
/// frame's joint transforms and, as `blendShapeWeights`, the targets'
/// weights: modal flesh's cached amplitudes over each mode's scale, or the
/// keyed blend weights), and the mesh at rest, bound to it by four joints
/// per vertex, with one `BlendShape` per target (`offsets`,
/// `normalOffsets`, and `pointIndices` where the target moves under half
/// the vertices). UsdSkel applies blend shapes before skinning, as DyRT
/// superposes its modes.
fn rig_skel(
    src: &mut Source,
    m: &SkinnedMorphs,
    codes: &[String],
    root: &str,
    taken: &mut HashSet<String>,
    s: &mut String,
) -> Result<(), IoError> {
    let character = src.character;
    let skeleton = &character.skeleton;
    let skel_root = prim_name(&format!("{}_{}", m.name, m.kind()), taken);
    let base = format!("/{root}/{skel_root}");
    let mut joint_names = HashSet::new();
    let mut tokens: Vec<String> = Vec::with_capacity(skeleton.joints.len());
    for j in &skeleton.joints {
        let name = prim_name(&j.name, &mut joint_names);
        tokens.push(match j.parent {
            Some(p) => format!("{}/{name}", tokens[p]),
            None => name,
        });
    }
    let quoted: Vec<String> = tokens.iter().map(|t| quote(t)).collect();
    let rest_posture = skeleton.rest_posture();
    let world = forward_kinematics(skeleton, &rest_posture);
    let rest = local_transforms(skeleton, &rest_posture);
    let _ = writeln!(s, "\n    def SkelRoot {}\n    {{", quote(&skel_root));
    let _ = writeln!(
        s,
        "        def Skeleton \"Skeleton\" (\n            prepend apiSchemas = [\"SkelBindingAPI\"]\n        )\n        {{"
    );
    s.push_str("            uniform matrix4d[] bindTransforms = ");
    list(s, &world, |s, w| matrix(s, Mat4::from(*w)));
    s.push_str("\n            uniform token[] joints = ");
    list(s, &quoted, |s, q| s.push_str(q));
    s.push_str("\n            uniform matrix4d[] restTransforms = ");
    list(s, &rest, |s, (t, r)| {
        matrix(s, Mat4::from_rotation_translation(*r, *t));
    });
    let _ = writeln!(
        s,
        "\n            rel skel:animationSource = <{base}/Skeleton/Animation>\n"
    );
    let _ = writeln!(
        s,
        "            def SkelAnimation \"Animation\"\n            {{"
    );
    let shapes: Vec<String> = {
        let mut names = HashSet::new();
        m.targets
            .iter()
            .map(|t| prim_name(&t.name, &mut names))
            .collect()
    };
    s.push_str("                uniform token[] blendShapes = ");
    list(s, &shapes, |s, n| s.push_str(&quote(n)));
    s.push_str("\n                float[] blendShapeWeights.timeSamples = {\n");
    for (e, code) in codes.iter().enumerate() {
        let w = src.rig_weights(m, e)?;
        let _ = write!(s, "                    {code}: ");
        list(s, &w, |s, w| {
            let _ = write!(s, "{w}");
        });
        s.push_str(",\n");
    }
    s.push_str("                }\n                uniform token[] joints = ");
    list(s, &quoted, |s, q| s.push_str(q));
    let mut rotations = String::new();
    let mut translations = String::new();
    let mut previous: Vec<Quat> = rest.iter().map(|(_, r)| *r).collect();
    for (e, code) in codes.iter().enumerate() {
        let local = local_transforms(skeleton, &src.posture_at(src.times[e]));
        let _ = write!(rotations, "                    {code}: ");
        let _ = write!(translations, "                    {code}: ");
        let turned: Vec<Quat> = local
            .iter()
            .zip(&mut previous)
            .map(|((_, r), prev)| {
                // Neighbouring samples in one hemisphere: the shortest slerp.
                let r = if r.dot(*prev) < 0.0 { -*r } else { *r };
                *prev = r;
                r
            })
            .collect();
        list(&mut rotations, &turned, |s, r| {
            let _ = write!(s, "({}, {}, {}, {})", r.w, r.x, r.y, r.z);
        });
        list(&mut translations, &local, |s, (t, _)| tuple(s, *t));
        rotations.push_str(",\n");
        translations.push_str(",\n");
    }
    let _ = write!(
        s,
        "\n                quatf[] rotations.timeSamples = {{\n{rotations}                }}\n"
    );
    s.push_str("                half3[] scales = ");
    list(s, &tokens, |s, _| s.push_str("(1, 1, 1)"));
    let _ = writeln!(
        s,
        "\n                float3[] translations.timeSamples = {{\n{translations}                }}\n            }}\n        }}\n"
    );

    mesh_prim(s, m, &shapes, &base);
    s.push_str("        }\n    }\n");
    Ok(())
}

/// The modal mesh's prim inside the `SkelRoot` at `base`: rest points and
/// normals, joint indices and weights, and a `BlendShape` per mode named
/// `shapes`.
fn mesh_prim(s: &mut String, m: &SkinnedMorphs, shapes: &[String], base: &str) {
    let mesh = prim_name(&m.name, &mut HashSet::new());
    let _ = writeln!(
        s,
        "        def Mesh {} (\n            prepend apiSchemas = [\"SkelBindingAPI\"]\n        )\n        {{",
        quote(&mesh)
    );
    s.push_str("            int[] faceVertexCounts = ");
    list(s, &m.triangles, |s, _| s.push('3'));
    s.push_str("\n            int[] faceVertexIndices = ");
    list(s, &m.triangles, |s, t| {
        let _ = write!(s, "{}, {}, {}", t[0], t[1], t[2]);
    });
    s.push_str("\n            normal3f[] normals = ");
    list(s, &m.normals, |s, n| tuple(s, *n));
    s.push_str(" (\n                interpolation = \"vertex\"\n            )\n");
    s.push_str(
        "            uniform token orientation = \"rightHanded\"\n            point3f[] points = ",
    );
    list(s, &m.positions, |s, p| tuple(s, *p));
    s.push_str("\n            int[] primvars:skel:jointIndices = ");
    list(s, &m.joints, |s, j| {
        let _ = write!(s, "{}, {}, {}, {}", j[0], j[1], j[2], j[3]);
    });
    s.push_str(" (\n                elementSize = 4\n                interpolation = \"vertex\"\n            )\n");
    s.push_str("            float[] primvars:skel:jointWeights = ");
    list(s, &m.weights, |s, w| {
        let _ = write!(s, "{}, {}, {}, {}", w[0], w[1], w[2], w[3]);
    });
    s.push_str(" (\n                elementSize = 4\n                interpolation = \"vertex\"\n            )\n");
    s.push_str("            uniform token[] skel:blendShapes = ");
    list(s, shapes, |s, n| s.push_str(&quote(n)));
    s.push_str("\n            rel skel:blendShapeTargets = ");
    list(s, shapes, |s, n| {
        let _ = write!(s, "<{base}/{mesh}/{n}>");
    });
    let _ = writeln!(
        s,
        "\n            rel skel:skeleton = <{base}/Skeleton>\n            uniform token subdivisionScheme = \"none\""
    );
    for (t, name) in m.targets.iter().zip(shapes) {
        // Only the vertices the mode moves, where that is under half.
        let moved: Vec<usize> = (0..t.positions.len())
            .filter(|&v| t.positions[v] != Vec3::ZERO || t.normals[v] != Vec3::ZERO)
            .collect();
        let sparse = 2 * moved.len() < t.positions.len();
        let all: Vec<usize> = (0..t.positions.len()).collect();
        let at = if sparse { &moved } else { &all };
        let _ = writeln!(
            s,
            "\n            def BlendShape {}\n            {{",
            quote(name)
        );
        s.push_str("                uniform vector3f[] normalOffsets = ");
        list(s, at, |s, &v| tuple(s, t.normals[v]));
        s.push_str("\n                uniform vector3f[] offsets = ");
        list(s, at, |s, &v| tuple(s, t.positions[v]));
        if sparse {
            s.push_str("\n                uniform int[] pointIndices = ");
            list(s, at, |s, v| {
                let _ = write!(s, "{v}");
            });
        }
        s.push_str("\n            }\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prim_names_are_identifiers_and_unique() {
        let mut taken = HashSet::new();
        assert_eq!(prim_name("body", &mut taken), "body");
        assert_eq!(prim_name("body", &mut taken), "body_1");
        assert_eq!(prim_name("left arm", &mut taken), "left_arm");
        assert_eq!(prim_name("3d", &mut taken), "_3d");
        assert_eq!(prim_name("", &mut taken), "_");
    }

    #[test]
    fn time_codes_are_whole_when_on_a_frame() {
        assert_eq!(time_code(12.000_000_1), "12");
        assert_eq!(time_code(0.0), "0");
        assert_eq!(time_code(2.5), "2.5");
    }

    #[test]
    fn floats_print_exactly() {
        let mut s = String::new();
        let v = Vec3::new(0.1, -1.0e-7, 123456.79);
        tuple(&mut s, v);
        let parts: Vec<f32> = s
            .trim_matches(|c| c == '(' || c == ')')
            .split(", ")
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(parts, v.to_array());
    }
}
