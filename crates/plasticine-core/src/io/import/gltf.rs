//! glTF 2.0 geometry: binary `.glb` (header, JSON chunk, BIN chunk) and JSON
//! `.gltf` whose buffers are embedded `data:` URIs.
//!
//! Every triangle primitive (mode 4, the default, and strips and fans, modes
//! 5 and 6) of every mesh the default scene instantiates is read: its
//! `POSITION` accessor (float VEC3) and its indices (unsigned byte, short or
//! int; none for a plain vertex list), placed by the world transform of its
//! node (`matrix`, or translation · rotation · scale, composed down the node
//! tree). A file without scenes instantiates its root nodes; one without
//! nodes, every mesh as it is. Points and lines are skipped. Byte offsets and
//! strides are honoured and every range is checked against its buffer view
//! and buffer, so a hostile file gets an error, never an out-of-bounds read.
//! Positions and morph-target displacements may be sparse accessors (as
//! Blender and our own export write shape keys): substitutions over the
//! dense data or over zeros, their indices strictly increasing.

use super::mesh::{ImportedMesh, MAX_MESH_TRIANGLES, MAX_MESH_VERTICES, MorphTarget};
use crate::io::IoError;
use glam::{DMat4, DQuat, DVec3};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

const GLB_MAGIC: &[u8; 4] = b"glTF";
const CHUNK_JSON: u32 = 0x4E4F_534A;
const CHUNK_BIN: u32 = 0x004E_4942;
/// How deep the node tree may nest.
const MAX_NODE_DEPTH: usize = 256;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Document {
    scene: Option<usize>,
    scenes: Vec<Scene>,
    nodes: Vec<Node>,
    meshes: Vec<Mesh>,
    accessors: Vec<Accessor>,
    buffer_views: Vec<BufferView>,
    buffers: Vec<Buffer>,
    extensions_required: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Scene {
    nodes: Vec<usize>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Node {
    children: Vec<usize>,
    mesh: Option<usize>,
    matrix: Option<[f64; 16]>,
    translation: Option<[f64; 3]>,
    rotation: Option<[f64; 4]>,
    scale: Option<[f64; 3]>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Mesh {
    primitives: Vec<Primitive>,
    extras: Option<serde_json::Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Primitive {
    attributes: HashMap<String, usize>,
    indices: Option<usize>,
    mode: Option<u32>,
    /// Morph targets: per target, its attribute displacements.
    targets: Vec<HashMap<String, usize>>,
}

/// One primitive's displacements of one morph target: the first vertex
/// they apply to and one per vertex from it.
struct TargetDeltas {
    target: usize,
    first: usize,
    deltas: Vec<glam::Vec3>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Accessor {
    buffer_view: Option<usize>,
    #[serde(default)]
    byte_offset: u64,
    component_type: u32,
    count: u64,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    sparse: Option<Sparse>,
}

/// A sparse accessor's substitutions: `count` elements at the `indices`
/// replaced by the `values` (over the dense data, or zeros).
#[derive(Deserialize)]
struct Sparse {
    count: u64,
    indices: SparseIndices,
    values: SparseValues,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SparseIndices {
    buffer_view: usize,
    #[serde(default)]
    byte_offset: u64,
    component_type: u32,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SparseValues {
    buffer_view: usize,
    #[serde(default)]
    byte_offset: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BufferView {
    buffer: usize,
    #[serde(default)]
    byte_offset: u64,
    byte_length: u64,
    byte_stride: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Buffer {
    byte_length: u64,
    uri: Option<String>,
}

/// Parses a binary glTF (`.glb`); `origin` names it in errors.
pub fn parse_glb(bytes: &[u8], origin: &Path) -> Result<ImportedMesh, IoError> {
    parse_glb_targets(bytes, origin, None)
}

/// [`parse_glb`], and with `targets` the meshes' morph targets (each the
/// whole mesh's positions with that target at weight one; names from the
/// mesh's `extras.targetNames`).
pub fn parse_glb_targets(
    bytes: &[u8],
    origin: &Path,
    targets: Option<&mut Vec<MorphTarget>>,
) -> Result<ImportedMesh, IoError> {
    let len = bytes.len() as u64;
    let truncated = |offset: u64, what: &str, needed: u64| IoError::Truncated {
        path: origin.to_path_buf(),
        offset,
        what: what.into(),
        needed,
        len,
    };
    let corrupt = |offset: u64, message: String| IoError::Corrupt {
        path: origin.to_path_buf(),
        offset,
        message,
    };
    let u32_at =
        |o: usize| u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
    if bytes.len() < 12 {
        return Err(truncated(0, "the 12-byte GLB header", 12 - len));
    }
    if &bytes[0..4] != GLB_MAGIC {
        return Err(corrupt(
            0,
            "not a binary glTF file (no 'glTF' magic)".into(),
        ));
    }
    let version = u32_at(4);
    if version != 2 {
        return Err(corrupt(
            4,
            format!("glTF version {version}; only version 2 is supported"),
        ));
    }
    let total = u32_at(8) as u64;
    if total > len {
        return Err(truncated(len, "the length in the GLB header", total - len));
    }
    let bytes = &bytes[..total as usize];
    let mut offset = 12usize;
    let mut json: Option<&[u8]> = None;
    let mut bin: Option<&[u8]> = None;
    while offset < bytes.len() {
        if bytes.len() - offset < 8 {
            return Err(truncated(
                offset as u64,
                "a chunk header",
                8 - (bytes.len() - offset) as u64,
            ));
        }
        let chunk_len = u32_at(offset) as u64;
        let chunk_type = u32_at(offset + 4);
        let start = offset as u64 + 8;
        let name = match chunk_type {
            CHUNK_JSON => "the JSON chunk",
            CHUNK_BIN => "the BIN chunk",
            _ => "a chunk",
        };
        if start + chunk_len > total {
            return Err(truncated(start, name, start + chunk_len - total));
        }
        let data = &bytes[start as usize..(start + chunk_len) as usize];
        match (chunk_type, json.is_some()) {
            (CHUNK_JSON, false) => json = Some(data),
            (_, false) => {
                return Err(corrupt(
                    offset as u64,
                    "the first chunk must be the JSON chunk".into(),
                ));
            }
            (CHUNK_BIN, true) if bin.is_none() => bin = Some(data),
            (CHUNK_JSON | CHUNK_BIN, true) => {
                return Err(corrupt(offset as u64, format!("a second {}", &name[4..])));
            }
            _ => {} // unknown chunks are skipped, as the specification says
        }
        // Chunks are 4-byte aligned.
        offset = (start + chunk_len).next_multiple_of(4) as usize;
    }
    let Some(json) = json else {
        return Err(truncated(12, "the JSON chunk", 8));
    };
    // Padding is spaces by the specification; some writers use zeros.
    let end = json.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    let doc = parse_json(&json[..end], origin, "the JSON chunk: ")?;
    read_document(&doc, bin, origin, targets)
}

/// Parses a JSON glTF (`.gltf`) whose buffers are `data:` URIs.
pub fn parse_gltf_json(bytes: &[u8], origin: &Path) -> Result<ImportedMesh, IoError> {
    parse_gltf_json_targets(bytes, origin, None)
}

/// [`parse_gltf_json`], with the morph targets as [`parse_glb_targets`].
pub fn parse_gltf_json_targets(
    bytes: &[u8],
    origin: &Path,
    targets: Option<&mut Vec<MorphTarget>>,
) -> Result<ImportedMesh, IoError> {
    let doc = parse_json(bytes, origin, "")?;
    read_document(&doc, None, origin, targets)
}

fn parse_json(bytes: &[u8], origin: &Path, place: &str) -> Result<Document, IoError> {
    serde_json::from_slice(bytes).map_err(|e| IoError::Parse {
        path: origin.to_path_buf(),
        line: e.line(),
        col: e.column(),
        message: format!("{place}{e}"),
    })
}

/// Reads the geometry of a parsed document; `bin` is the GLB's BIN chunk.
/// With `targets`, also every morph target's positions.
fn read_document(
    doc: &Document,
    bin: Option<&[u8]>,
    origin: &Path,
    targets: Option<&mut Vec<MorphTarget>>,
) -> Result<ImportedMesh, IoError> {
    let invalid = |field: String, message: String| IoError::Invalid {
        path: origin.to_path_buf(),
        field,
        message,
    };
    for ext in &doc.extensions_required {
        if ext.contains("draco") || ext.contains("meshopt") || ext.contains("quantization") {
            return Err(invalid(
                "extensionsRequired".into(),
                format!(
                    "compressed or quantized geometry ({ext}) is not supported; export uncompressed float positions"
                ),
            ));
        }
    }
    let buffers = doc
        .buffers
        .iter()
        .enumerate()
        .map(|(k, b)| buffer_data(k, b, bin, origin))
        .collect::<Result<Vec<_>, _>>()?;
    let reader = Reader {
        doc,
        buffers,
        origin,
    };
    let mut mesh = ImportedMesh::default();
    let mut triangle_primitives = 0;
    let want_targets = targets.is_some();
    let (mut deltas_of, mut names) = (Vec::<TargetDeltas>::new(), Vec::<String>::new());
    for (m, world) in instances(doc, origin)? {
        let Some(gm) = doc.meshes.get(m) else {
            return Err(invalid(
                "nodes[].mesh".into(),
                format!(
                    "mesh {m} does not exist (the file has {})",
                    doc.meshes.len()
                ),
            ));
        };
        for (p, prim) in gm.primitives.iter().enumerate() {
            let field = format!("meshes[{m}].primitives[{p}]");
            if !matches!(prim.mode, None | Some(4..=6)) {
                if prim.mode.is_some_and(|mode| mode > 6) {
                    return Err(invalid(
                        format!("{field}.mode"),
                        format!("unknown mode {}", prim.mode.unwrap_or(0)),
                    ));
                }
                continue; // points and lines
            }
            triangle_primitives += 1;
            let first = mesh.positions.len();
            reader.append_primitive(prim, &field, &world, &mut mesh)?;
            if want_targets {
                if names.is_empty() {
                    names = target_names(gm);
                }
                for (t, attributes) in prim.targets.iter().enumerate() {
                    if let Some(&acc) = attributes.get("POSITION") {
                        let field = format!("{field}.targets[{t}].POSITION");
                        let deltas = reader.target_deltas(
                            acc,
                            &field,
                            &world,
                            mesh.positions.len() - first,
                        )?;
                        deltas_of.push(TargetDeltas {
                            target: t,
                            first,
                            deltas,
                        });
                    }
                }
            }
        }
    }
    if mesh.triangles.is_empty() {
        return Err(IoError::BadInput {
            path: origin.to_path_buf(),
            message: format!(
                "no triangles in the default scene ({triangle_primitives} triangle primitives, {} meshes)",
                doc.meshes.len()
            ),
        });
    }
    if let Some(targets) = targets {
        let count = deltas_of.iter().map(|d| d.target + 1).max().unwrap_or(0);
        *targets = (0..count)
            .map(|t| MorphTarget {
                name: names
                    .get(t)
                    .cloned()
                    .unwrap_or_else(|| format!("target {t}")),
                positions: mesh.positions.clone(),
            })
            .collect();
        for d in deltas_of {
            let positions = &mut targets[d.target].positions[d.first..];
            for (p, delta) in positions.iter_mut().zip(&d.deltas) {
                *p += *delta;
            }
        }
    }
    Ok(mesh)
}

/// A mesh's `extras.targetNames`, if it has them.
fn target_names(mesh: &Mesh) -> Vec<String> {
    mesh.extras
        .as_ref()
        .and_then(|e| e.get("targetNames"))
        .and_then(|n| n.as_array())
        .map(|names| {
            names
                .iter()
                .map(|n| n.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The bytes of buffer `k`: the BIN chunk for the GLB's first buffer without
/// a URI, else a decoded `data:` URI.
fn buffer_data<'a>(
    k: usize,
    b: &'a Buffer,
    bin: Option<&'a [u8]>,
    origin: &Path,
) -> Result<Cow<'a, [u8]>, IoError> {
    let invalid = |field: &str, message: String| IoError::Invalid {
        path: origin.to_path_buf(),
        field: format!("buffers[{k}]{field}"),
        message,
    };
    let data: Cow<[u8]> = match (&b.uri, bin) {
        (None, Some(bin)) if k == 0 => Cow::Borrowed(bin),
        (None, _) => {
            return Err(invalid(
                "",
                "has no uri and there is no BIN chunk for it".into(),
            ));
        }
        (Some(uri), _) => {
            let Some(rest) = uri.strip_prefix("data:") else {
                return Err(invalid(
                    ".uri",
                    format!(
                        "external buffer '{uri}' is not supported: export a .glb (or embed the buffer as a data: URI)"
                    ),
                ));
            };
            let Some((_, payload)) = rest.split_once(";base64,") else {
                return Err(invalid(".uri", "a data: URI must be base64".into()));
            };
            Cow::Owned(
                decode_base64(payload)
                    .ok_or_else(|| invalid(".uri", "invalid base64 in the data: URI".into()))?,
            )
        }
    };
    if (data.len() as u64) < b.byte_length {
        return Err(invalid(
            ".byteLength",
            format!("is {} but the data has {} bytes", b.byte_length, data.len()),
        ));
    }
    Ok(data)
}

/// Every (mesh, world transform) the document places: its default scene's
/// node trees, else the root nodes, else every mesh untransformed.
fn instances(doc: &Document, origin: &Path) -> Result<Vec<(usize, DMat4)>, IoError> {
    let invalid = |field: String, message: String| IoError::Invalid {
        path: origin.to_path_buf(),
        field,
        message,
    };
    if doc.nodes.is_empty() {
        return Ok((0..doc.meshes.len())
            .map(|m| (m, DMat4::IDENTITY))
            .collect());
    }
    let roots: Vec<usize> = if doc.scenes.is_empty() {
        let mut is_child = vec![false; doc.nodes.len()];
        for n in &doc.nodes {
            for &c in &n.children {
                if let Some(flag) = is_child.get_mut(c) {
                    *flag = true;
                }
            }
        }
        (0..doc.nodes.len()).filter(|&n| !is_child[n]).collect()
    } else {
        let s = doc.scene.unwrap_or(0);
        doc.scenes
            .get(s)
            .ok_or_else(|| {
                invalid(
                    "scene".into(),
                    format!(
                        "scene {s} does not exist (the file has {})",
                        doc.scenes.len()
                    ),
                )
            })?
            .nodes
            .clone()
    };
    let mut seen = vec![false; doc.nodes.len()];
    let mut out = Vec::new();
    let mut stack: Vec<(usize, DMat4, usize)> = roots
        .iter()
        .rev()
        .map(|&n| (n, DMat4::IDENTITY, 0))
        .collect();
    while let Some((n, parent, depth)) = stack.pop() {
        let Some(node) = doc.nodes.get(n) else {
            return Err(invalid(
                "nodes".into(),
                format!("node {n} does not exist (the file has {})", doc.nodes.len()),
            ));
        };
        if std::mem::replace(&mut seen[n], true) {
            return Err(invalid(
                format!("nodes[{n}]"),
                "is reached twice: the node hierarchy must be a tree".into(),
            ));
        }
        if depth > MAX_NODE_DEPTH {
            return Err(invalid(
                format!("nodes[{n}]"),
                format!("nested more than {MAX_NODE_DEPTH} levels deep"),
            ));
        }
        let world = parent * local_transform(node, n, origin)?;
        if let Some(m) = node.mesh {
            out.push((m, world));
        }
        for &c in node.children.iter().rev() {
            stack.push((c, world, depth + 1));
        }
    }
    Ok(out)
}

fn local_transform(node: &Node, n: usize, origin: &Path) -> Result<DMat4, IoError> {
    let invalid = |field: &str| IoError::Invalid {
        path: origin.to_path_buf(),
        field: format!("nodes[{n}].{field}"),
        message: "must be finite".into(),
    };
    if let Some(m) = node.matrix {
        if m.iter().any(|v| !v.is_finite()) {
            return Err(invalid("matrix"));
        }
        // Column-major: the bottom row is elements 3, 7, 11, 15.
        if [m[3], m[7], m[11], m[15]] != [0.0, 0.0, 0.0, 1.0] {
            return Err(IoError::Invalid {
                path: origin.to_path_buf(),
                field: format!("nodes[{n}].matrix"),
                message: "must be affine (bottom row 0, 0, 0, 1)".into(),
            });
        }
        return Ok(DMat4::from_cols_array(&m));
    }
    let t = node.translation.unwrap_or([0.0; 3]);
    let r = node.rotation.unwrap_or([0.0, 0.0, 0.0, 1.0]);
    let s = node.scale.unwrap_or([1.0; 3]);
    if t.iter().any(|v| !v.is_finite()) {
        return Err(invalid("translation"));
    }
    if s.iter().any(|v| !v.is_finite()) {
        return Err(invalid("scale"));
    }
    let q = DQuat::from_array(r);
    if !q.is_finite() || q.length() < 1e-6 {
        return Err(IoError::Invalid {
            path: origin.to_path_buf(),
            field: format!("nodes[{n}].rotation"),
            message: "must be a finite, non-zero quaternion".into(),
        });
    }
    Ok(DMat4::from_scale_rotation_translation(
        DVec3::from_array(s),
        q.normalize(),
        DVec3::from_array(t),
    ))
}

struct Reader<'a> {
    doc: &'a Document,
    buffers: Vec<Cow<'a, [u8]>>,
    origin: &'a Path,
}

impl Reader<'_> {
    fn invalid(&self, field: String, message: String) -> IoError {
        IoError::Invalid {
            path: self.origin.to_path_buf(),
            field,
            message,
        }
    }

    /// Appends one triangle primitive, transformed, to `mesh`.
    fn append_primitive(
        &self,
        prim: &Primitive,
        field: &str,
        world: &DMat4,
        mesh: &mut ImportedMesh,
    ) -> Result<(), IoError> {
        let Some(&pos) = prim.attributes.get("POSITION") else {
            return Err(self.invalid(format!("{field}.attributes"), "has no POSITION".into()));
        };
        let points = self.vec3s(pos)?;
        let count = points.len();
        let base = mesh.positions.len();
        if base + count > MAX_MESH_VERTICES {
            return Err(self.invalid(
                format!("accessors[{pos}].count"),
                format!("more than {MAX_MESH_VERTICES} vertices in all"),
            ));
        }
        for (k, v) in points.into_iter().enumerate() {
            let p = world.transform_point3(DVec3::new(v[0] as f64, v[1] as f64, v[2] as f64));
            let p32 = p.as_vec3();
            if !p32.is_finite() {
                return Err(self.invalid(
                    format!("accessors[{pos}]"),
                    format!("vertex {k} is not finite (after its node transform)"),
                ));
            }
            mesh.positions.push(p32);
        }
        let indices: Vec<u32> = match prim.indices {
            None => (0..count as u32).collect(),
            Some(ix) => {
                let acc = self.doc.accessors.get(ix).ok_or_else(|| {
                    self.invalid(
                        format!("{field}.indices"),
                        format!("accessor {ix} does not exist"),
                    )
                })?;
                let size = match acc.component_type {
                    5121 => 1,
                    5123 => 2,
                    5125 => 4,
                    t => {
                        return Err(self.invalid(
                            format!("accessors[{ix}].componentType"),
                            format!("indices must be unsigned byte, short or int, got {t}"),
                        ));
                    }
                };
                let (data, stride, n) = self.accessor(ix, acc.component_type, "SCALAR", size)?;
                let mut out = Vec::with_capacity(n);
                for k in 0..n {
                    let o = k * stride;
                    let i = match size {
                        1 => data[o] as u32,
                        2 => u16::from_le_bytes([data[o], data[o + 1]]) as u32,
                        _ => u32::from_le_bytes([data[o], data[o + 1], data[o + 2], data[o + 3]]),
                    };
                    if i as usize >= count {
                        return Err(self.invalid(
                            format!("accessors[{ix}]"),
                            format!(
                                "index {k} is {i}, out of range (POSITION has {count} vertices)"
                            ),
                        ));
                    }
                    out.push(i);
                }
                out
            }
        };
        let flip = world.determinant() < 0.0;
        let mut push = |a: u32, b: u32, c: u32| -> Result<(), IoError> {
            if mesh.triangles.len() >= MAX_MESH_TRIANGLES {
                return Err(self.invalid(
                    field.to_string(),
                    format!("more than {MAX_MESH_TRIANGLES} triangles in all"),
                ));
            }
            let b0 = base as u32;
            let t = if flip { [a, c, b] } else { [a, b, c] };
            mesh.triangles.push(t.map(|i| i + b0));
            Ok(())
        };
        match prim.mode.unwrap_or(4) {
            4 => {
                if !indices.len().is_multiple_of(3) {
                    return Err(self.invalid(
                        field.to_string(),
                        format!(
                            "{} indices is not a whole number of triangles",
                            indices.len()
                        ),
                    ));
                }
                for t in indices.chunks_exact(3) {
                    push(t[0], t[1], t[2])?;
                }
            }
            5 => {
                for k in 0..indices.len().saturating_sub(2) {
                    let (a, b, c) = (indices[k], indices[k + 1], indices[k + 2]);
                    if k % 2 == 0 {
                        push(a, b, c)?;
                    } else {
                        push(b, a, c)?;
                    }
                }
            }
            _ => {
                for k in 1..indices.len().saturating_sub(1) {
                    push(indices[0], indices[k], indices[k + 1])?;
                }
            }
        }
        Ok(())
    }

    /// A morph target's position displacements for a primitive of `count`
    /// vertices, turned by its node's transform (displacements are vectors).
    fn target_deltas(
        &self,
        acc: usize,
        field: &str,
        world: &DMat4,
        count: usize,
    ) -> Result<Vec<glam::Vec3>, IoError> {
        let deltas = self.vec3s(acc)?;
        let n = deltas.len();
        if n != count {
            return Err(self.invalid(
                field.to_string(),
                format!("{n} displacements for a primitive of {count} vertices"),
            ));
        }
        deltas
            .into_iter()
            .enumerate()
            .map(|(k, v)| {
                let d = world
                    .transform_vector3(DVec3::new(v[0] as f64, v[1] as f64, v[2] as f64))
                    .as_vec3();
                if d.is_finite() {
                    Ok(d)
                } else {
                    Err(self.invalid(
                        format!("accessors[{acc}]"),
                        format!("displacement {k} is not finite"),
                    ))
                }
            })
            .collect()
    }

    /// Accessor `ix`, checked to be `kind` of `component_type` and to
    /// have at most as many elements as a mesh may.
    fn checked_accessor(
        &self,
        ix: usize,
        component_type: u32,
        kind: &str,
    ) -> Result<&Accessor, IoError> {
        let f = |name: &str| format!("accessors[{ix}]{name}");
        let acc = self
            .doc
            .accessors
            .get(ix)
            .ok_or_else(|| self.invalid(f(""), "does not exist".into()))?;
        if acc.component_type != component_type || acc.kind != kind {
            return Err(self.invalid(
                f(""),
                format!(
                    "expected {kind} of component type {component_type}, got {} of {}",
                    acc.kind, acc.component_type
                ),
            ));
        }
        let limit = MAX_MESH_VERTICES.max(3 * MAX_MESH_TRIANGLES) as u64;
        if acc.count > limit {
            return Err(self.invalid(
                f(".count"),
                format!("{} is over the limit of {limit}", acc.count),
            ));
        }
        Ok(acc)
    }

    /// The bytes an accessor reads, starting at its first element, with the
    /// stride and count; checks type, component type and every range.
    /// Sparse accessors are refused (see [`Self::vec3s`]).
    fn accessor(
        &self,
        ix: usize,
        component_type: u32,
        kind: &str,
        element_size: u64,
    ) -> Result<(&[u8], usize, usize), IoError> {
        let f = |name: &str| format!("accessors[{ix}]{name}");
        let acc = self.checked_accessor(ix, component_type, kind)?;
        if acc.sparse.is_some() {
            return Err(self.invalid(
                f(".sparse"),
                "sparse accessors are supported for positions and morph targets only".into(),
            ));
        }
        let Some(v) = acc.buffer_view else {
            return Err(self.invalid(
                f(".bufferView"),
                "is missing (zero-filled accessors are supported for positions and morph targets only)"
                    .into(),
            ));
        };
        let (data, stride) =
            self.elements(&f(""), v, acc.byte_offset, acc.count, element_size, true)?;
        Ok((data, stride, acc.count as usize))
    }

    /// The bytes of `count` elements of `element_size` from `byte_offset`
    /// in buffer view `v` (for `field`), and their stride (the view's, where
    /// `strided` allows one); checks every range.
    fn elements(
        &self,
        field: &str,
        v: usize,
        byte_offset: u64,
        count: u64,
        element_size: u64,
        strided: bool,
    ) -> Result<(&[u8], usize), IoError> {
        let view = self.doc.buffer_views.get(v).ok_or_else(|| {
            self.invalid(
                format!("{field}.bufferView"),
                format!("buffer view {v} does not exist"),
            )
        })?;
        let vf = |name: &str| format!("bufferViews[{v}]{name}");
        let buffer = self.buffers.get(view.buffer).ok_or_else(|| {
            self.invalid(
                vf(".buffer"),
                format!("buffer {} does not exist", view.buffer),
            )
        })?;
        let view_end = view.byte_offset.checked_add(view.byte_length);
        if view_end.is_none_or(|e| e > buffer.len() as u64) {
            return Err(self.invalid(
                vf(""),
                format!(
                    "bytes {}..+{} run past the end of buffer {} ({} bytes)",
                    view.byte_offset,
                    view.byte_length,
                    view.buffer,
                    buffer.len()
                ),
            ));
        }
        let stride = match view.byte_stride {
            Some(stride) if strided => stride,
            Some(_) => {
                return Err(self.invalid(
                    vf(".byteStride"),
                    "must not be set on a sparse accessor's view".into(),
                ));
            }
            None => element_size,
        };
        if stride < element_size || stride > 252 {
            return Err(self.invalid(
                vf(".byteStride"),
                format!(
                    "{stride} must be at least the element size {element_size} and at most 252"
                ),
            ));
        }
        // Last byte read: byteOffset + (count − 1)·stride + element size.
        let needed = match count {
            0 => byte_offset,
            n => byte_offset.saturating_add((n - 1) * stride + element_size),
        };
        if needed > view.byte_length {
            return Err(self.invalid(
                field.to_string(),
                format!(
                    "{count} elements from byte {byte_offset} with stride {stride} need {needed} bytes, buffer view {v} has {}",
                    view.byte_length
                ),
            ));
        }
        let start = (view.byte_offset + byte_offset) as usize;
        let end = (view.byte_offset + view.byte_length) as usize;
        Ok((&buffer[start..end], stride as usize))
    }

    /// A float VEC3 accessor's elements: its buffer view's (or zeros
    /// without one), then a sparse accessor's substitutions, as our own
    /// export writes modal morph targets.
    fn vec3s(&self, ix: usize) -> Result<Vec<[f32; 3]>, IoError> {
        let f = |name: &str| format!("accessors[{ix}]{name}");
        let acc = self.checked_accessor(ix, 5126, "VEC3")?;
        let count = acc.count as usize;
        let read = |data: &[u8], o: usize| -> [f32; 3] {
            std::array::from_fn(|c| {
                f32::from_le_bytes(data[o + 4 * c..o + 4 * c + 4].try_into().unwrap_or([0; 4]))
            })
        };
        let mut out = match acc.buffer_view {
            Some(v) => {
                let (data, stride) =
                    self.elements(&f(""), v, acc.byte_offset, acc.count, 12, true)?;
                (0..count).map(|k| read(data, k * stride)).collect()
            }
            None if acc.sparse.is_some() => vec![[0.0; 3]; count],
            None => {
                return Err(self.invalid(
                    f(".bufferView"),
                    "is missing and the accessor is not sparse".into(),
                ));
            }
        };
        let Some(sparse) = &acc.sparse else {
            return Ok(out);
        };
        if sparse.count == 0 || sparse.count > acc.count {
            return Err(self.invalid(
                f(".sparse.count"),
                format!(
                    "{} must be 1 to the accessor's count {}",
                    sparse.count, acc.count
                ),
            ));
        }
        let size = match sparse.indices.component_type {
            5121 => 1,
            5123 => 2,
            5125 => 4,
            t => {
                return Err(self.invalid(
                    f(".sparse.indices.componentType"),
                    format!("must be unsigned byte, short or int, got {t}"),
                ));
            }
        };
        let (indices, _) = self.elements(
            &f(".sparse.indices"),
            sparse.indices.buffer_view,
            sparse.indices.byte_offset,
            sparse.count,
            size,
            false,
        )?;
        let (values, _) = self.elements(
            &f(".sparse.values"),
            sparse.values.buffer_view,
            sparse.values.byte_offset,
            sparse.count,
            12,
            false,
        )?;
        let mut previous = None;
        for k in 0..sparse.count as usize {
            let o = k * size as usize;
            let i = match size {
                1 => u64::from(indices[o]),
                2 => u64::from(u16::from_le_bytes([indices[o], indices[o + 1]])),
                _ => u64::from(u32::from_le_bytes([
                    indices[o],
                    indices[o + 1],
                    indices[o + 2],
                    indices[o + 3],
                ])),
            };
            // The specification asks for strictly increasing indices.
            if i >= acc.count || previous.is_some_and(|p| i <= p) {
                return Err(self.invalid(
                    f(".sparse.indices"),
                    format!(
                        "index {k} is {i}: indices must increase and stay below the count {}",
                        acc.count
                    ),
                ));
            }
            previous = Some(i);
            out[i as usize] = read(values, 12 * k);
        }
        Ok(out)
    }
}

/// Standard base64, padding optional (writers differ), whitespace not
/// allowed.
fn decode_base64(s: &str) -> Option<Vec<u8>> {
    use base64::engine::{DecodePaddingMode, Engine, GeneralPurpose, GeneralPurposeConfig};
    const DATA_URI: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    DATA_URI.decode(s).ok()
}
