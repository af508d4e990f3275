//! Meshes for the import tests, written from code: a capsule (and a
//! sphere, a capsule of zero length), as OBJ text and as GLB bytes.

#![allow(dead_code, reason = "each test module uses some of the fixtures")]

use glam::Vec3;
use plasticine::io::ImportedMesh;
use serde_json::json;

/// A closed capsule along x from `x0` to `x1` (radius `r`, centre line at
/// `centre`), triangles counter-clockwise seen from outside.
pub fn capsule(
    x0: f32,
    x1: f32,
    r: f32,
    centre: Vec3,
    segments: usize,
    hemi: usize,
    mid: usize,
) -> ImportedMesh {
    use std::f32::consts::{FRAC_PI_2, PI};
    let mut profile = vec![(x0 - r, 0.0)];
    for i in 1..=hemi {
        let phi = PI - i as f32 * FRAC_PI_2 / hemi as f32;
        profile.push((x0 + r * phi.cos(), r * phi.sin()));
    }
    for k in 1..mid {
        profile.push((x0 + (x1 - x0) * k as f32 / mid as f32, r));
    }
    for i in 0..hemi {
        let phi = FRAC_PI_2 - i as f32 * FRAC_PI_2 / hemi as f32;
        profile.push((x1 + r * phi.cos(), r * phi.sin()));
    }
    profile.push((x1 + r, 0.0));
    let rings = profile.len() - 2;
    let mut positions = vec![centre + Vec3::new(profile[0].0, 0.0, 0.0)];
    for &(x, rho) in &profile[1..=rings] {
        for j in 0..segments {
            let a = 2.0 * PI * j as f32 / segments as f32;
            positions.push(centre + Vec3::new(x, rho * a.cos(), rho * a.sin()));
        }
    }
    positions.push(centre + Vec3::new(profile[rings + 1].0, 0.0, 0.0));
    let p = |k: usize, j: usize| (1 + k * segments + j % segments) as u32;
    let last = (positions.len() - 1) as u32;
    let mut triangles = Vec::new();
    for j in 0..segments {
        triangles.push([0, p(0, j + 1), p(0, j)]);
        for k in 0..rings - 1 {
            triangles.push([p(k, j), p(k, j + 1), p(k + 1, j + 1)]);
            triangles.push([p(k, j), p(k + 1, j + 1), p(k + 1, j)]);
        }
        triangles.push([p(rings - 1, j), p(rings - 1, j + 1), last]);
    }
    ImportedMesh {
        positions,
        triangles,
    }
}

/// The limb of `assets/limb_skeleton.ron`: shoulder at (0, 1, 0), elbow and
/// wrist 0.3 m apart along +x, in a capsule of radius 6 cm.
pub fn limb_mesh() -> ImportedMesh {
    capsule(-0.02, 0.62, 0.06, Vec3::new(0.0, 1.0, 0.0), 16, 4, 12)
}

/// The limb with its biceps flexed: a bulge of up to `LIMB_BULGE` on top of
/// the upper arm (x near 0.15 m), out along the surface's radial direction;
/// the same vertices and triangles (a blendshape target of `limb_mesh`).
pub fn limb_flexed() -> ImportedMesh {
    let mut mesh = limb_mesh();
    for p in &mut mesh.positions {
        let radial = Vec3::new(0.0, p.y - 1.0, p.z);
        let Some(n) = radial.try_normalize() else {
            continue;
        };
        let along = (-((p.x - 0.15) / 0.06).powi(2)).exp();
        let top = n.y.max(0.0).powf(1.5);
        *p += n * (LIMB_BULGE * along * top);
    }
    mesh
}

/// The flexed limb's largest bulge, m.
pub const LIMB_BULGE: f32 = 0.025;

pub fn obj_text(mesh: &ImportedMesh) -> String {
    let mut s = String::from("# capsule limb for plasticine fem-import\no limb\n");
    for p in &mesh.positions {
        s += &format!("v {} {} {}\n", p.x, p.y, p.z);
    }
    for t in &mesh.triangles {
        s += &format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1);
    }
    s
}

/// A GLB: the JSON and BIN chunks, each padded to 4 bytes.
pub fn glb(doc: &serde_json::Value, bin: &[u8]) -> Vec<u8> {
    let mut j = serde_json::to_vec(doc).unwrap();
    while !j.len().is_multiple_of(4) {
        j.push(b' ');
    }
    let mut b = bin.to_vec();
    while !b.len().is_multiple_of(4) {
        b.push(0);
    }
    let total = 12 + 8 + j.len() + if b.is_empty() { 0 } else { 8 + b.len() };
    let mut out = Vec::new();
    out.extend_from_slice(b"glTF");
    out.extend_from_slice(&2u32.to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&(j.len() as u32).to_le_bytes());
    out.extend_from_slice(&0x4E4F_534Au32.to_le_bytes());
    out.extend_from_slice(&j);
    if !b.is_empty() {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(&0x004E_4942u32.to_le_bytes());
        out.extend_from_slice(&b);
    }
    out
}

/// A mesh as a GLB: positions interleaved with a dummy normal (byteStride
/// 24), u16 indices, under a node translated by `shift` whose child node
/// holds the mesh.
pub fn mesh_glb(mesh: &ImportedMesh, shift: Vec3) -> Vec<u8> {
    let mut bin = Vec::new();
    for p in &mesh.positions {
        for v in [p.x, p.y, p.z, 0.0, 1.0, 0.0] {
            bin.extend_from_slice(&v.to_le_bytes());
        }
    }
    let vertex_bytes = bin.len();
    for t in &mesh.triangles {
        for &i in t {
            bin.extend_from_slice(&(i as u16).to_le_bytes());
        }
    }
    let index_bytes = bin.len() - vertex_bytes;
    let doc = json!({
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": [
            {"translation": [shift.x, shift.y, shift.z], "children": [1]},
            {"mesh": 0}
        ],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0, "NORMAL": 1}, "indices": 2}]}],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": mesh.positions.len(), "type": "VEC3"},
            {"bufferView": 0, "byteOffset": 12, "componentType": 5126, "count": mesh.positions.len(), "type": "VEC3"},
            {"bufferView": 1, "componentType": 5123, "count": 3 * mesh.triangles.len(), "type": "SCALAR"}
        ],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": vertex_bytes, "byteStride": 24},
            {"buffer": 0, "byteOffset": vertex_bytes, "byteLength": index_bytes}
        ],
        "buffers": [{"byteLength": bin.len()}]
    });
    glb(&doc, &bin)
}

pub fn sphere(radius: f32, segments: usize) -> ImportedMesh {
    // A capsule of zero length is a UV sphere.
    capsule(0.0, 0.0, radius, Vec3::ZERO, segments, segments / 2, 1)
}

/// `bytes` as padded standard base64, as data: URIs carry it.
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}
