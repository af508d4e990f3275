//! The mesh readers of `plasticine fem-import` on files written
//! here: OBJ with quads, corner forms and negative indices; GLB with a byte
//! stride, u8/u16 indices, node translations, matrices, rotations, a
//! mirroring scale and fans; .gltf with a data: URI; sparse morph targets;
//! and hostile files (truncated, bad chunk lengths, indices out of range,
//! NaN, every truncation and thousands of corrupted bytes), which give
//! errors, never panics.

use crate::support::meshes;

use glam::{Quat, Vec3};
use meshes::{base64, capsule, glb, mesh_glb};
use plasticine::io::IoError;
use plasticine::io::parse_obj;
use plasticine::io::{parse_glb, parse_gltf_json};
use serde_json::json;
use std::path::Path;

fn here() -> &'static Path {
    Path::new("test.mesh")
}

#[test]
fn obj_quads_and_negative_indices_become_triangles() {
    let text = "# a unit square and a triangle\nmtllib x.mtl\no square\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n\
                vt 0 0\nvn 0 0 1\ng g1\ns off\nusemtl m\nf 1/1/1 2/1/1 3//1 4\nv 2 0 0\nv 2 1 0\nf -3 -2 -1 # relative\n\
                l 1 2\n";
    let mesh = parse_obj(text.as_bytes(), here()).unwrap();
    assert_eq!(mesh.positions.len(), 6);
    assert_eq!(mesh.positions[5], Vec3::new(2.0, 1.0, 0.0));
    // The quad fans from its first corner; -3 -2 -1 are vertices 4, 5, 6.
    assert_eq!(mesh.triangles, vec![[0, 1, 2], [0, 2, 3], [3, 4, 5]]);
}

fn parse_error(text: &str) -> String {
    let e = parse_obj(text.as_bytes(), here()).unwrap_err();
    e.to_string()
}

#[test]
fn malformed_obj_files_name_the_line() {
    let bad_number = parse_error("v 0 0 0\nv 1 0 0\nv 1 x 0\nf 1 2 3\n");
    assert!(bad_number.contains("test.mesh:3:"), "{bad_number}");
    assert!(bad_number.contains("'x'"), "{bad_number}");
    let nan = parse_error("v 0 0 0\nv NaN 0 0\nv 1 1 0\nf 1 2 3\n");
    assert!(nan.contains(":2:") && nan.contains("finite"), "{nan}");
    let inf = parse_error("v 0 0 1e39\nv 1 0 0\nv 1 1 0\nf 1 2 3\n");
    assert!(inf.contains(":1:") && inf.contains("finite"), "{inf}");
    let range = parse_error("v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\nf 1 2 9\n");
    assert!(
        range.contains(":5:") && range.contains("out of range"),
        "{range}"
    );
    let zero = parse_error("v 0 0 0\nv 1 0 0\nv 1 1 0\nf 0 1 2\n");
    assert!(zero.contains(":4:") && zero.contains("index 0"), "{zero}");
    let before = parse_error("v 0 0 0\nv 1 0 0\nf -1 -2 -3\n");
    assert!(
        before.contains(":3:") && before.contains("before the first"),
        "{before}"
    );
    let two = parse_error("v 0 0 0\nv 1 0 0\nf 1 2\n");
    assert!(two.contains(":3:") && two.contains("at least 3"), "{two}");
    let short = parse_error("v 0 0\nf 1 1 1\n");
    assert!(short.contains(":1:") && short.contains("z"), "{short}");
    let empty = parse_error("v 0 0 0\n# nothing else\n");
    assert!(empty.contains("no faces"), "{empty}");
}

#[test]
fn glb_with_u16_indices_a_stride_and_a_translated_parent_node() {
    let mesh = capsule(0.0, 1.0, 0.25, Vec3::ZERO, 8, 2, 3);
    let shift = Vec3::new(0.5, -2.0, 3.0);
    let read = parse_glb(&mesh_glb(&mesh, shift), here()).unwrap();
    assert_eq!(read.triangles, mesh.triangles);
    assert_eq!(read.positions.len(), mesh.positions.len());
    for (a, b) in read.positions.iter().zip(&mesh.positions) {
        assert!(a.distance(*b + shift) < 1e-6, "{a} vs {b}");
    }
}

/// A node's matrix (column-major), a rotation + scale child, u8 indices and
/// a fan primitive; a mirroring scale flips the winding back outward.
#[test]
fn glb_node_matrices_trs_and_fans() {
    // One triangle (0,0,0) (1,0,0) (0,1,0) twice: as a list with u8
    // indices, and as a fan without indices.
    let mut bin = Vec::new();
    for v in [0f32, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0] {
        bin.extend_from_slice(&v.to_le_bytes());
    }
    bin.extend_from_slice(&[0u8, 1, 2, 0]);
    let matrix = [
        1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 10.0, 0.0, 0.0, 1.0,
    ];
    let q = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
    let doc = json!({
        "asset": {"version": "2.0"},
        "nodes": [
            {"matrix": matrix, "children": [1], "mesh": 0},
            {"rotation": [q.x, q.y, q.z, q.w], "scale": [2.0, 2.0, -1.0], "mesh": 1}
        ],
        "meshes": [
            {"primitives": [{"attributes": {"POSITION": 0}, "indices": 1, "mode": 4}]},
            {"primitives": [{"attributes": {"POSITION": 0}, "mode": 6}, {"attributes": {"POSITION": 0}, "mode": 1}]}
        ],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3"},
            {"bufferView": 1, "componentType": 5121, "count": 3, "type": "SCALAR"}
        ],
        "bufferViews": [
            {"buffer": 0, "byteLength": 36},
            {"buffer": 0, "byteOffset": 36, "byteLength": 4}
        ],
        "buffers": [{"byteLength": 40}]
    });
    let read = parse_glb(&glb(&doc, &bin), here()).unwrap();
    // The first mesh under the matrix (x + 10); the second under matrix ·
    // rotate 90° about z · scale (2, 2, −1); the line primitive skipped.
    assert_eq!(read.positions.len(), 6);
    assert_eq!(read.triangles, vec![[0, 1, 2], [3, 5, 4]]);
    let expect = [
        Vec3::new(10.0, 0.0, 0.0),
        Vec3::new(11.0, 0.0, 0.0),
        Vec3::new(10.0, 1.0, 0.0),
        Vec3::new(10.0, 0.0, 0.0),
        Vec3::new(10.0, 2.0, 0.0),
        Vec3::new(8.0, 0.0, 0.0),
    ];
    for (a, b) in read.positions.iter().zip(&expect) {
        assert!(a.distance(*b) < 1e-5, "{a} vs {b}");
    }
}

#[test]
fn gltf_json_with_a_data_uri_buffer_and_external_buffers_refused() {
    let mesh = capsule(0.0, 1.0, 0.25, Vec3::ZERO, 6, 2, 2);
    let bytes = mesh_glb(&mesh, Vec3::ZERO);
    // Take the GLB's JSON and BIN apart and rebuild as .gltf text.
    let jlen = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let mut doc: serde_json::Value = serde_json::from_slice(&bytes[20..20 + jlen]).unwrap();
    let bin = &bytes[20 + jlen + 8..];
    doc["buffers"][0]["uri"] = json!(format!(
        "data:application/octet-stream;base64,{}",
        base64(bin)
    ));
    let text = serde_json::to_vec(&doc).unwrap();
    let read = parse_gltf_json(&text, here()).unwrap();
    assert_eq!(read.triangles, mesh.triangles);
    assert_eq!(read.positions, mesh.positions);

    doc["buffers"][0]["uri"] = json!("limb.bin");
    let e = parse_gltf_json(&serde_json::to_vec(&doc).unwrap(), here()).unwrap_err();
    assert!(e.to_string().contains("external buffer 'limb.bin'"), "{e}");
}

#[test]
fn malformed_glb_files_are_errors_not_panics() {
    let mesh = capsule(0.0, 1.0, 0.25, Vec3::ZERO, 6, 2, 2);
    let good = mesh_glb(&mesh, Vec3::ZERO);
    let err = |bytes: &[u8]| parse_glb(bytes, here()).unwrap_err();

    let truncated = err(&good[..good.len() - 10]);
    assert!(
        matches!(truncated, IoError::Truncated { .. }),
        "{truncated}"
    );
    assert!(truncated.to_string().contains("GLB header"), "{truncated}");

    let mut bad_chunk = good.clone();
    bad_chunk[12..16].copy_from_slice(&(good.len() as u32).to_le_bytes());
    let e = err(&bad_chunk);
    assert!(e.to_string().contains("JSON chunk"), "{e}");

    let mut magic = good.clone();
    magic[0] = b'x';
    assert!(err(&magic).to_string().contains("not a binary glTF"));

    assert!(matches!(err(&good[..7]), IoError::Truncated { .. }));

    // An index out of range and a NaN position, in otherwise valid files.
    let jlen = u32::from_le_bytes(good[12..16].try_into().unwrap()) as usize;
    let doc: serde_json::Value = serde_json::from_slice(&good[20..20 + jlen]).unwrap();
    let mut bin = good[20 + jlen + 8..].to_vec();
    let index_at = 24 * mesh.positions.len() + 2 * 7;
    bin[index_at..index_at + 2].copy_from_slice(&999u16.to_le_bytes());
    let e = err(&glb(&doc, &bin));
    assert!(
        e.to_string().contains("accessors[2]") && e.to_string().contains("999, out of range"),
        "{e}"
    );

    let mut bin = good[20 + jlen + 8..].to_vec();
    bin[24 * 3..24 * 3 + 4].copy_from_slice(&f32::NAN.to_le_bytes());
    let e = err(&glb(&doc, &bin));
    assert!(e.to_string().contains("vertex 3 is not finite"), "{e}");

    // A buffer view past its buffer, and an accessor past its view.
    let mut d = doc.clone();
    d["bufferViews"][1]["byteLength"] = json!(1 << 30);
    let e = err(&glb(&d, &good[20 + jlen + 8..]));
    assert!(e.to_string().contains("bufferViews[1]"), "{e}");
    let mut d = doc.clone();
    d["accessors"][0]["count"] = json!(mesh.positions.len() + 1);
    let e = err(&glb(&d, &good[20 + jlen + 8..]));
    assert!(e.to_string().contains("accessors[0]"), "{e}");
    let mut d = doc.clone();
    d["accessors"][0]["byteOffset"] = json!(u64::MAX);
    assert!(parse_glb(&glb(&d, &good[20 + jlen + 8..]), here()).is_err());
    // A projective node matrix.
    let mut d = doc.clone();
    d["nodes"][1]["matrix"] = json!([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0.5, 0, 0, 0, 1]);
    let e = err(&glb(&d, &good[20 + jlen + 8..]));
    assert!(
        e.to_string().contains("nodes[1].matrix: must be affine"),
        "{e}"
    );
    // A node that is its own child.
    let mut d = doc.clone();
    d["nodes"][1]["children"] = json!([0]);
    let e = err(&glb(&d, &good[20 + jlen + 8..]));
    assert!(e.to_string().contains("tree"), "{e}");

    // Every truncation and many single-byte corruptions: an answer, never a
    // panic (the test harness would report one).
    let mut ok = 0;
    for cut in 0..good.len() {
        ok += usize::from(parse_glb(&good[..cut], here()).is_ok());
    }
    assert_eq!(ok, 0, "a truncated file parsed");
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..3000 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let mut bytes = good.clone();
        let at = (state % bytes.len() as u64) as usize;
        bytes[at] = (state >> 32) as u8;
        let _ = parse_glb(&bytes, here());
    }
}

/// A quad of two triangles whose one morph target is sparse (displacements
/// of vertices 1 and 3 over implicit zeros, u8 indices), as our own
/// export writes modal targets; `sparse` edits the target's `sparse` entry.
fn sparse_target_glb(sparse: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let mut bin = Vec::new();
    let positions = [
        [0.0f32, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 1.0, 0.0],
    ];
    for c in positions.iter().flatten() {
        bin.extend_from_slice(&c.to_le_bytes());
    }
    for i in [0u16, 1, 2, 0, 2, 3] {
        bin.extend_from_slice(&i.to_le_bytes());
    }
    bin.extend_from_slice(&[1, 3, 0, 0]); // indices, padded to 4
    for c in [0.0f32, 0.1, 0.0, 0.2, 0.0, -0.3] {
        bin.extend_from_slice(&c.to_le_bytes());
    }
    let mut target = json!({
        "componentType": 5126, "count": 4, "type": "VEC3",
        "sparse": {
            "count": 2,
            "indices": {"bufferView": 2, "componentType": 5121},
            "values": {"bufferView": 3}
        }
    });
    sparse(&mut target["sparse"]);
    let doc = json!({
        "asset": {"version": "2.0"},
        "meshes": [{
            "primitives": [{"attributes": {"POSITION": 0}, "indices": 1, "targets": [{"POSITION": 2}]}],
            "extras": {"targetNames": ["lift"]}
        }],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3"},
            {"bufferView": 1, "componentType": 5123, "count": 6, "type": "SCALAR"},
            target
        ],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 48},
            {"buffer": 0, "byteOffset": 48, "byteLength": 12},
            {"buffer": 0, "byteOffset": 60, "byteLength": 2},
            {"buffer": 0, "byteOffset": 64, "byteLength": 24}
        ],
        "buffers": [{"byteLength": bin.len()}]
    });
    glb(&doc, &bin)
}

#[test]
fn sparse_morph_targets_are_read_and_hostile_ones_refused() {
    use plasticine::io::load_mesh_with_targets;
    let dir = tempfile::tempdir().unwrap();
    let load = |bytes: Vec<u8>| {
        let path = dir.path().join("sparse.glb");
        std::fs::write(&path, bytes).unwrap();
        load_mesh_with_targets(&path)
    };
    let (mesh, targets) = load(sparse_target_glb(|_| {})).unwrap();
    assert_eq!(targets.len(), 1);
    assert_eq!(targets[0].name, "lift");
    let moved: Vec<Vec3> = targets[0]
        .positions
        .iter()
        .zip(&mesh.positions)
        .map(|(t, p)| *t - *p)
        .collect();
    let expected = [
        Vec3::ZERO,
        Vec3::new(0.0, 0.1, 0.0),
        Vec3::ZERO,
        Vec3::new(0.2, 0.0, -0.3),
    ];
    for (k, (m, e)) in moved.iter().zip(expected).enumerate() {
        assert!(m.distance(e) < 1e-7, "vertex {k} moved {m}, expected {e}");
    }

    let refused = |edit: fn(&mut serde_json::Value), what: &str| {
        let e = load(sparse_target_glb(edit)).unwrap_err().to_string();
        assert!(
            e.contains("accessors[2].sparse") && e.contains(what),
            "{what}: {e}"
        );
    };
    refused(
        |s| s["count"] = json!(5),
        "must be 1 to the accessor's count",
    );
    refused(
        |s| s["count"] = json!(0),
        "must be 1 to the accessor's count",
    );
    refused(
        |s| s["indices"]["componentType"] = json!(5126),
        "unsigned byte, short or int",
    );
    refused(|s| s["indices"]["byteOffset"] = json!(1), "need 3 bytes");
    refused(|s| s["values"]["byteOffset"] = json!(4), "need 28 bytes");
    refused(|s| s["values"]["bufferView"] = json!(9), "does not exist");
    // Indices 3 then 0: they must increase; and one past the count.
    let e = load({
        let mut bytes = sparse_target_glb(|_| {});
        let at = bytes.len() - 28; // the indices, before the 24 value bytes
        bytes[at..at + 2].copy_from_slice(&[3, 0]);
        bytes
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("index 1 is 0: indices must increase"), "{e}");
    let e = load({
        let mut bytes = sparse_target_glb(|_| {});
        let at = bytes.len() - 28;
        bytes[at + 1] = 4;
        bytes
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("index 1 is 4"), "{e}");
}
