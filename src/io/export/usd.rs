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

use super::{ClosedGrid, ExportError, Source, Topology, commit, relative_times};
use crate::io::{AtomicFile, IoError};
use glam::Vec3;
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

pub(super) fn write_usda(
    src: &mut Source,
    out: &Path,
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

    let mut s = String::new();
    let _ = writeln!(s, "#usda 1.0\n(");
    let _ = writeln!(s, "    defaultPrim = {}", quote(&root));
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
        quote(&root)
    );
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
    put(&mut file, "}\n")?;
    Ok(commit(file, bytes)?)
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
