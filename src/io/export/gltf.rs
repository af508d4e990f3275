//! glTF 2.0 binary (`.glb`) writer: see the [module docs](super) for what
//! goes in and why.
//!
//! # Layout
//!
//! - Nodes `0..J` are the joints, in skeleton order (parents first), each with
//!   its rest local transform (`offset`, `rest_rotation`); then the bone mesh
//!   node (skinned, at the scene root, no transform); then one node per skin
//!   (morph targets) or one group node per exported frame, each with one child
//!   per skin (per-frame meshes).
//! - Skin 0: the joints, `inverseBindMatrices` = the inverse world transforms
//!   of the rest posture.
//! - Animation 0 (named after the character): a rotation channel per joint
//!   and a translation channel for the root, sampled (LINEAR) at every cache
//!   frame in the exported range and at every key time; then the weights
//!   channel of each skin node (LINEAR, one-hot), or the scale channel of each
//!   frame group (STEP).
//! - One buffer, the GLB's binary chunk: first the small data (indices,
//!   times, skeleton samples, weights, bones), held in memory, then the
//!   frames, streamed from the cache in order: for each exported frame, for
//!   each skin, absolute positions and normals (per-frame meshes, and the
//!   base = first frame of morph targets), then position and normal deltas
//!   from the base (morph targets). The cache is read twice: once for the
//!   accessors' bounds, which the JSON chunk (written first) must hold.
//!
//! glTF's axes are Plasticine's: Y up, right-handed, metres.

use super::{
    ExportError, ModeMorphs, SecondaryMotion, Source, commit, local_transforms, posture_at,
    relative_times,
};
use crate::character::Character;
use crate::io::{AtomicFile, IoError};
use crate::kinematics::forward_kinematics;
use glam::{Mat4, Vec3};
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;

const ARRAY_BUFFER: u32 = 34962;
const ELEMENT_ARRAY_BUFFER: u32 = 34963;
const UNSIGNED_SHORT: u32 = 5123;
const UNSIGNED_INT: u32 = 5125;
const FLOAT: u32 = 5126;
const TRIANGLES: u32 = 4;

/// GLB magic, version and chunk types.
const GLB_MAGIC: u32 = 0x4654_6C67; // "glTF"
const GLB_VERSION: u32 = 2;
const CHUNK_JSON: u32 = 0x4E4F_534A; // "JSON"
const CHUNK_BIN: u32 = 0x004E_4942; // "BIN\0"

/// Two key times closer than this (s) to a frame time replace its sample.
const KEY_SNAP: f64 = 1e-6;

/// Buffer views and accessors over one buffer whose first part is built in
/// memory and whose rest is streamed afterwards.
#[derive(Default)]
struct Builder {
    views: Vec<Value>,
    accessors: Vec<Value>,
    /// The in-memory part.
    bin: Vec<u8>,
    /// Bytes reserved after `bin` (padded to 4) for streamed views.
    streamed: u64,
}

impl Builder {
    fn align(&mut self) {
        while !self.bin.len().is_multiple_of(4) {
            self.bin.push(0);
        }
    }

    fn view_json(offset: u64, len: u64, target: Option<u32>) -> Value {
        let mut v = json!({"buffer": 0, "byteOffset": offset, "byteLength": len});
        if let Some(t) = target {
            v["target"] = json!(t);
        }
        v
    }

    /// A view over `bytes`, stored in memory.
    fn static_view(&mut self, bytes: &[u8], target: Option<u32>) -> usize {
        assert_eq!(self.streamed, 0, "static data goes before streamed data");
        self.align();
        let offset = self.bin.len() as u64;
        self.bin.extend_from_slice(bytes);
        self.views
            .push(Self::view_json(offset, bytes.len() as u64, target));
        self.views.len() - 1
    }

    /// A view of `len` bytes (a multiple of 4) to be streamed later, in order.
    fn streamed_view(&mut self, len: u64, target: Option<u32>) -> usize {
        debug_assert_eq!(len % 4, 0);
        if self.streamed == 0 {
            self.align();
        }
        let offset = self.bin.len() as u64 + self.streamed;
        self.streamed += len;
        self.views.push(Self::view_json(offset, len, target));
        self.views.len() - 1
    }

    fn accessor(
        &mut self,
        view: usize,
        component: u32,
        count: usize,
        ty: &str,
        bounds: Option<&Bounds>,
    ) -> usize {
        let mut a = json!({
            "bufferView": view,
            "componentType": component,
            "count": count,
            "type": ty,
        });
        if let Some(b) = bounds {
            a["min"] = json!(b.min);
            a["max"] = json!(b.max);
        }
        self.accessors.push(a);
        self.accessors.len() - 1
    }

    /// Floats stored in memory, `ty` of `comps` components, with bounds if asked.
    fn floats(
        &mut self,
        data: &[f32],
        comps: usize,
        ty: &str,
        target: Option<u32>,
        with_bounds: bool,
    ) -> usize {
        let view = self.static_view(&f32_bytes(data), target);
        let bounds = with_bounds.then(|| Bounds::of(data, comps));
        self.accessor(view, FLOAT, data.len() / comps, ty, bounds.as_ref())
    }

    /// A VEC3 float accessor of `data` stored sparsely (the non-zero
    /// elements and their indices over implicit zeros) when fewer than half
    /// are non-zero, densely otherwise; with min/max.
    fn sparse_vec3s(&mut self, data: &[Vec3]) -> usize {
        let nonzero: Vec<u32> = (0..data.len() as u32)
            .filter(|&i| data[i as usize] != Vec3::ZERO)
            .collect();
        let flat: Vec<f32> = data.iter().flat_map(|v| v.to_array()).collect();
        if nonzero.is_empty() || 2 * nonzero.len() >= data.len() {
            return self.floats(&flat, 3, "VEC3", Some(ARRAY_BUFFER), true);
        }
        let bounds = Bounds::of(&flat, 3);
        let index_bytes: Vec<u8> = nonzero.iter().flat_map(|i| i.to_le_bytes()).collect();
        let indices = self.static_view(&index_bytes, None);
        let values: Vec<f32> = nonzero
            .iter()
            .flat_map(|&i| data[i as usize].to_array())
            .collect();
        let values = self.static_view(&f32_bytes(&values), None);
        self.accessors.push(json!({
            "componentType": FLOAT,
            "count": data.len(),
            "type": "VEC3",
            "min": bounds.min,
            "max": bounds.max,
            "sparse": {
                "count": nonzero.len(),
                "indices": {"bufferView": indices, "componentType": UNSIGNED_INT},
                "values": {"bufferView": values},
            },
        }));
        self.accessors.len() - 1
    }

    /// The index accessor of `triangles` over `points` vertices (`u16`
    /// where they fit, else `u32`).
    fn indices(&mut self, triangles: &[[u32; 3]], points: usize) -> usize {
        let flat = triangles.iter().flatten().copied();
        let (bytes, ty): (Vec<u8>, u32) = if points <= usize::from(u16::MAX) {
            (
                flat.flat_map(|i| (i as u16).to_le_bytes()).collect(),
                UNSIGNED_SHORT,
            )
        } else {
            (flat.flat_map(|i| i.to_le_bytes()).collect(), UNSIGNED_INT)
        };
        let view = self.static_view(&bytes, Some(ELEMENT_ARRAY_BUFFER));
        self.accessor(view, ty, triangles.len() * 3, "SCALAR", None)
    }

    /// Total buffer length.
    fn len(&self) -> u64 {
        self.bin.len().next_multiple_of(4) as u64 + self.streamed
    }
}

/// Per-component bounds, as the exact values of the stored `f32`s.
#[derive(Clone, Debug)]
struct Bounds {
    min: Vec<f64>,
    max: Vec<f64>,
}

impl Bounds {
    fn empty(comps: usize) -> Self {
        Self {
            min: vec![f64::INFINITY; comps],
            max: vec![f64::NEG_INFINITY; comps],
        }
    }

    fn of(data: &[f32], comps: usize) -> Self {
        let mut b = Self::empty(comps);
        for chunk in data.chunks_exact(comps) {
            for (c, &v) in chunk.iter().enumerate() {
                b.add(c, v);
            }
        }
        b
    }

    fn add(&mut self, c: usize, v: f32) {
        let v = f64::from(v);
        self.min[c] = self.min[c].min(v);
        self.max[c] = self.max[c].max(v);
    }

    fn add_vec3(&mut self, v: Vec3) {
        for (c, x) in v.to_array().into_iter().enumerate() {
            self.add(c, x);
        }
    }
}

fn f32_bytes(data: &[f32]) -> Vec<u8> {
    data.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn push_vec3s(buf: &mut Vec<u8>, data: impl Iterator<Item = Vec3>) {
    for v in data {
        for c in v.to_array() {
            buf.extend_from_slice(&c.to_le_bytes());
        }
    }
}

/// The nodes, meshes and animation of the glTF document, built up in order.
#[derive(Default)]
struct Scene {
    nodes: Vec<Value>,
    meshes: Vec<Value>,
    samplers: Vec<Value>,
    channels: Vec<Value>,
    /// The scene's root nodes.
    roots: Vec<usize>,
}

/// The bounds of every position accessor, found by pass 1.
struct FrameBounds {
    /// The first exported frame, from which morph targets are deltas.
    base: Vec<Vec<Vec3>>,
    /// `[exported frame][skin]`: absolute positions.
    abs: Vec<Vec<Bounds>>,
    /// `[exported frame][skin]`: deltas from the base (morph targets).
    delta: Vec<Vec<Bounds>>,
}

/// Writes the glTF binary; returns how the secondary motion was stored and
/// the file size.
pub(super) fn write_glb(
    src: &mut Source,
    out: &Path,
    morph_limit: usize,
    modes: Option<&ModeMorphs>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(SecondaryMotion, u64), ExportError> {
    let character = src.character;
    let count = src.frames.len();
    let morph = count <= morph_limit;
    let secondary = if morph {
        SecondaryMotion::MorphTargets
    } else {
        SecondaryMotion::PerFrameMeshes
    };

    // Pass 1: the bounds of every position accessor.
    let bounds = frame_bounds(src, progress)?;

    let mut b = Builder::default();
    let mut scene = Scene::default();

    // The skeleton.
    skeleton(
        src,
        &mut b,
        &mut scene.nodes,
        &mut scene.samplers,
        &mut scene.channels,
    )?;
    scene.roots.push(0);
    let bones_node = scene.nodes.len();
    scene.nodes.push(
        json!({"name": format!("{}_bones", character.name), "mesh": scene.meshes.len(), "skin": 0}),
    );
    scene.meshes.push(bone_mesh(character, &mut b));
    scene.roots.push(bones_node);
    let inverse_bind = inverse_bind_matrices(character, &mut b);

    let indices = skin_indices(src, &mut b);
    // Painted skins carry their colours (static: paint does not move).
    let colors: Vec<Option<usize>> = (0..src.surfaces.len())
        .map(|s| {
            src.colors(s).map(|c| {
                let flat: Vec<f32> = c.iter().flat_map(|x| x.to_array()).collect();
                b.floats(&flat, 3, "VEC3", Some(ARRAY_BUFFER), false)
            })
        })
        .collect();
    let times: Vec<f32> = relative_times(src).iter().map(|&t| t as f32).collect();
    if let Some(m) = modes {
        modal_mesh(src, m, &times, &mut b, &mut scene)?;
    }

    // The secondary motion's small data and animation.
    if morph {
        morph_animation(src, &times, &mut b, &mut scene);
    } else {
        frame_animation(src, &times, &mut b, &mut scene);
    }
    reserve_frames(
        src,
        morph,
        (&indices, &colors),
        &bounds,
        &mut b,
        &mut scene.meshes,
    );

    let doc = document(src, secondary, &scene, inverse_bind, &b);
    let json_bytes = json_chunk(&doc, out)?;
    b.align();
    let bin_len = b.len();
    let total = glb_size(out, json_bytes.len(), bin_len)?;

    // Pass 2: write.
    let mut file = AtomicFile::create(out)?;
    write_head(&mut file, out, total, &json_bytes, bin_len, &b.bin)?;
    let written =
        b.bin.len() as u64 + stream_frames(src, &mut file, out, morph, &bounds.base, progress)?;
    debug_assert_eq!(
        written, bin_len,
        "the streamed data fills the reserved views"
    );
    if written != bin_len {
        return Err(IoError::BadInput {
            path: out.to_path_buf(),
            message: format!("internal error: wrote {written} bytes of a {bin_len}-byte buffer"),
        }
        .into());
    }
    Ok((secondary, commit(file, total)?))
}

/// Pass 1: reads every exported frame for the bounds of its absolute
/// positions and of its deltas from the first frame, reporting progress
/// over the first half of the `2 * frames` steps.
fn frame_bounds(
    src: &mut Source,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<FrameBounds, ExportError> {
    let count = src.frames.len();
    let total_steps = 2 * count;
    let mut frame = Vec::new();
    let mut base: Vec<Vec<Vec3>> = Vec::new();
    let mut abs_bounds = Vec::with_capacity(count);
    let mut delta_bounds = Vec::with_capacity(count);
    for e in 0..count {
        src.read(e, &mut frame)?;
        if e == 0 {
            base = frame.clone();
        }
        let mut abs = Vec::with_capacity(frame.len());
        let mut delta = Vec::with_capacity(frame.len());
        for (s, p) in frame.iter().enumerate() {
            let mut a = Bounds::empty(3);
            let mut d = Bounds::empty(3);
            for (k, v) in p.iter().enumerate() {
                a.add_vec3(*v);
                d.add_vec3(*v - base[s][k]);
            }
            abs.push(a);
            delta.push(d);
        }
        abs_bounds.push(abs);
        delta_bounds.push(delta);
        progress(e + 1, total_steps);
    }
    Ok(FrameBounds {
        base,
        abs: abs_bounds,
        delta: delta_bounds,
    })
}

/// The index accessor of each surface's triangles (`u16` where the points
/// fit, else `u32`).
fn skin_indices(src: &Source, b: &mut Builder) -> Vec<usize> {
    src.surfaces
        .iter()
        .map(|s| b.indices(&s.triangles(), s.point_count()))
        .collect()
}

/// The name of exported frame `e`: `frame_NNNNN`, its cache index.
fn frame_name(src: &Source, e: usize) -> String {
    format!("frame_{:05}", src.frames[e])
}

/// Modal flesh's embedded mesh as DyRT draws it: a node at the scene root
/// skinned to the skeleton, its mesh with two morph targets per mode (the
/// mode at +scale, then at −scale), and a LINEAR weights channel holding
/// every exported frame's amplitude over the scale on the side it is on
/// (zero on the other). glTF allows negative weights, but Blender's
/// importer makes shape keys that clamp to [0, 1] and so would show only
/// half of every vibration; with a target per side every weight is in
/// [0, 1], and linear interpolation of the pair is that of the amplitude.
fn modal_mesh(
    src: &mut Source,
    m: &ModeMorphs,
    times: &[f32],
    b: &mut Builder,
    scene: &mut Scene,
) -> Result<(), IoError> {
    let flat = |v: &[Vec3]| -> Vec<f32> { v.iter().flat_map(|p| p.to_array()).collect() };
    let count = m.positions.len();
    let position = b.floats(&flat(&m.positions), 3, "VEC3", Some(ARRAY_BUFFER), true);
    let normal = b.floats(&flat(&m.normals), 3, "VEC3", Some(ARRAY_BUFFER), false);
    let bytes: Vec<u8> = m
        .joints
        .iter()
        .flatten()
        .flat_map(|j| j.to_le_bytes())
        .collect();
    let view = b.static_view(&bytes, Some(ARRAY_BUFFER));
    let joints = b.accessor(view, UNSIGNED_SHORT, count, "VEC4", None);
    let weights: Vec<f32> = m.weights.iter().flatten().copied().collect();
    let weights = b.floats(&weights, 4, "VEC4", Some(ARRAY_BUFFER), false);
    let mut targets: Vec<Value> = Vec::with_capacity(2 * m.targets.len());
    let mut names: Vec<String> = Vec::with_capacity(2 * m.targets.len());
    for t in &m.targets {
        for (sign, side) in [(1.0, "+"), (-1.0, "-")] {
            let signed = |v: &[Vec3]| -> Vec<Vec3> { v.iter().map(|x| *x * sign).collect() };
            // A mode moves only its part's vertices: store the rest as zeros.
            let p = b.sparse_vec3s(&signed(&t.positions));
            let n = b.sparse_vec3s(&signed(&t.normals));
            targets.push(json!({"POSITION": p, "NORMAL": n}));
            names.push(format!("{}{side}", t.name));
        }
    }
    let indices = b.indices(&m.triangles, count);

    // The amplitudes of every exported frame, as target weights.
    let mut output = Vec::with_capacity(times.len() * targets.len());
    for e in 0..src.frames.len() {
        let q = src.cache.read_amplitudes(src.frames[e])?;
        for (q, t) in q.iter().zip(&m.targets) {
            let w = q / t.scale;
            output.extend([w.max(0.0), (-w).max(0.0)]);
        }
    }
    let input = b.floats(times, 1, "SCALAR", None, true);
    let output = b.floats(&output, 1, "SCALAR", None, false);
    let name = &m.name;
    let node = scene.nodes.len();
    scene
        .nodes
        .push(json!({"name": format!("{name}_modal"), "mesh": scene.meshes.len(), "skin": 0}));
    scene.roots.push(node);
    scene.meshes.push(json!({
        "name": name,
        "primitives": [{
            "attributes": {"POSITION": position, "NORMAL": normal, "JOINTS_0": joints, "WEIGHTS_0": weights},
            "indices": indices,
            "mode": TRIANGLES,
            "targets": targets,
        }],
        "weights": vec![0.0; names.len()],
        "extras": {"targetNames": names},
    }));
    scene.channels.push(
        json!({"sampler": scene.samplers.len(), "target": {"node": node, "path": "weights"}}),
    );
    scene
        .samplers
        .push(json!({"input": input, "output": output, "interpolation": "LINEAR"}));
    Ok(())
}

/// Morph targets: a node per skin with its mesh (primitives filled in by
/// [`reserve_frames`]) and a one-hot LINEAR weights channel.
fn morph_animation(src: &Source, times: &[f32], b: &mut Builder, scene: &mut Scene) {
    if src.surfaces.is_empty() {
        return; // no accessors nothing uses
    }
    let count = src.frames.len();
    let input = b.floats(times, 1, "SCALAR", None, true);
    let mut weights = vec![0.0f32; count * count];
    for e in 0..count {
        weights[e * count + e] = 1.0;
    }
    let output = b.floats(&weights, 1, "SCALAR", None, false);
    for s in &src.surfaces {
        let node = scene.nodes.len();
        scene
            .nodes
            .push(json!({"name": format!("{}_skin", s.name), "mesh": scene.meshes.len()}));
        scene.roots.push(node);
        // Filled in once the frame views are reserved.
        scene.meshes.push(json!({"name": s.name, "weights": vec![0.0; count],
            "extras": {"targetNames": (0..count).map(|e| frame_name(src, e)).collect::<Vec<_>>()}}));
        scene.channels.push(
            json!({"sampler": scene.samplers.len(), "target": {"node": node, "path": "weights"}}),
        );
        scene
            .samplers
            .push(json!({"input": input, "output": output, "interpolation": "LINEAR"}));
    }
}

/// Per-frame meshes: a group node per exported frame with a child (and
/// mesh, primitives filled in by [`reserve_frames`]) per skin, shown by a
/// STEP scale channel.
fn frame_animation(src: &Source, times: &[f32], b: &mut Builder, scene: &mut Scene) {
    if src.surfaces.is_empty() {
        return; // no empty frame groups
    }
    let count = src.frames.len();
    // Scale outputs, shared by the frames with the same pattern (made
    // only when used: the validator reports unused accessors).
    let mut outputs: Vec<(Vec<f32>, usize)> = Vec::new();
    for e in 0..count {
        let (input, shown): (Vec<f32>, &[f32]) = match e {
            _ if count == 1 => (vec![0.0], &[1.0]),
            0 => (vec![0.0, times[1]], &[1.0, 0.0]),
            _ if e + 1 == count => (vec![0.0, times[e]], &[0.0, 1.0]),
            _ => (vec![0.0, times[e], times[e + 1]], &[0.0, 1.0, 0.0]),
        };
        let output = match outputs.iter().find(|(v, _)| v == shown) {
            Some(&(_, a)) => a,
            None => {
                let data: Vec<f32> = shown.iter().flat_map(|&s| [s; 3]).collect();
                let a = b.floats(&data, 3, "VEC3", None, false);
                outputs.push((shown.to_vec(), a));
                a
            }
        };
        let input = b.floats(&input, 1, "SCALAR", None, true);
        let group = scene.nodes.len();
        let scale = if e == 0 { 1.0 } else { 0.0 };
        scene.nodes.push(
            json!({"name": frame_name(src, e), "scale": [scale, scale, scale], "children": []}),
        );
        scene.roots.push(group);
        scene.channels.push(
            json!({"sampler": scene.samplers.len(), "target": {"node": group, "path": "scale"}}),
        );
        scene
            .samplers
            .push(json!({"input": input, "output": output, "interpolation": "STEP"}));
        for s in &src.surfaces {
            let child = scene.nodes.len();
            scene.nodes.push(
                json!({"name": format!("{}_{:05}", s.name, src.frames[e]), "mesh": scene.meshes.len()}),
            );
            scene.nodes[group]["children"]
                .as_array_mut()
                .expect("children")
                .push(json!(child));
            scene
                .meshes
                .push(json!({"name": format!("{}_{:05}", s.name, src.frames[e])}));
        }
    }
}

/// Reserves the streamed frame data, in the order [`stream_frames`] writes
/// it, and fills in the skin meshes' primitives (and morph targets).
fn reserve_frames(
    src: &Source,
    morph: bool,
    (indices, colors): (&[usize], &[Option<usize>]),
    bounds: &FrameBounds,
    b: &mut Builder,
    meshes: &mut [Value],
) {
    let count = src.frames.len();
    let first_skin_mesh = meshes.len()
        - if morph {
            src.surfaces.len()
        } else {
            count * src.surfaces.len()
        };
    for e in 0..count {
        for (s, skin) in src.surfaces.iter().enumerate() {
            let p = skin.point_count();
            let bytes = 12 * p as u64;
            let mesh_index = if morph {
                first_skin_mesh + s
            } else {
                first_skin_mesh + e * src.surfaces.len() + s
            };
            if !morph || e == 0 {
                let v = b.streamed_view(bytes, Some(ARRAY_BUFFER));
                let position = b.accessor(v, FLOAT, p, "VEC3", Some(&bounds.abs[e][s]));
                let v = b.streamed_view(bytes, Some(ARRAY_BUFFER));
                let normal = b.accessor(v, FLOAT, p, "VEC3", None);
                let mut attributes = json!({"POSITION": position, "NORMAL": normal});
                if let Some(c) = colors[s] {
                    attributes["COLOR_0"] = json!(c);
                }
                meshes[mesh_index]["primitives"] = json!([{
                    "attributes": attributes,
                    "indices": indices[s],
                    "mode": TRIANGLES,
                }]);
            }
            if morph {
                let v = b.streamed_view(bytes, Some(ARRAY_BUFFER));
                let position = b.accessor(v, FLOAT, p, "VEC3", Some(&bounds.delta[e][s]));
                let v = b.streamed_view(bytes, Some(ARRAY_BUFFER));
                let normal = b.accessor(v, FLOAT, p, "VEC3", None);
                let prim = &mut meshes[mesh_index]["primitives"][0];
                if prim.get("targets").is_none() {
                    prim["targets"] = json!([]);
                }
                prim["targets"]
                    .as_array_mut()
                    .expect("targets")
                    .push(json!({"POSITION": position, "NORMAL": normal}));
            }
        }
    }
}

/// The glTF JSON document: asset, scene, nodes, meshes, the skin, the
/// animation, accessors, buffer views and the one buffer.
fn document(
    src: &Source,
    secondary: SecondaryMotion,
    scene: &Scene,
    inverse_bind: usize,
    b: &Builder,
) -> Value {
    let character = src.character;
    json!({
        "asset": {
            "version": "2.0",
            "generator": format!("Plasticine {}", env!("CARGO_PKG_VERSION")),
            "extras": {
                "character": character.name,
                "cache": src.cache.path().display().to_string(),
                "fps": src.fps,
                "cacheFrames": src.frames,
                "secondaryMotion": format!("{secondary:?}"),
            },
        },
        "scene": 0,
        "scenes": [{"name": character.name, "nodes": scene.roots}],
        "nodes": scene.nodes,
        "meshes": scene.meshes,
        "skins": [{
            "name": format!("{}_skeleton", character.name),
            "joints": (0..character.skeleton.joints.len()).collect::<Vec<_>>(),
            "skeleton": 0,
            "inverseBindMatrices": inverse_bind,
        }],
        "animations": [{"name": character.name, "samplers": scene.samplers, "channels": scene.channels}],
        "accessors": b.accessors,
        "bufferViews": b.views,
        "buffers": [{"byteLength": b.len()}],
    })
}

/// The JSON chunk's bytes: `doc` serialized, padded with spaces to 4 bytes.
fn json_chunk(doc: &Value, out: &Path) -> Result<Vec<u8>, IoError> {
    let mut json_bytes = serde_json::to_vec(doc).map_err(|e| IoError::Serialize {
        path: out.to_path_buf(),
        message: e.to_string(),
    })?;
    while !json_bytes.len().is_multiple_of(4) {
        json_bytes.push(b' ');
    }
    Ok(json_bytes)
}

/// The size of the `.glb` with a JSON chunk of `json_len` and a binary chunk
/// of `bin_len` bytes; refuses one over the 4 GiB the format holds.
fn glb_size(out: &Path, json_len: usize, bin_len: u64) -> Result<u64, ExportError> {
    let total = 12 + 8 + json_len as u64 + 8 + bin_len;
    if total > u64::from(u32::MAX) {
        return Err(ExportError::Refused {
            path: out.to_path_buf(),
            message: format!(
                "the .glb would be {:.2} GiB, over the 4 GiB the format holds: export every Nth frame (--every), \
                 at a lower resolution, or as .usda or an OBJ sequence",
                total as f64 / (1u64 << 30) as f64
            ),
        });
    }
    Ok(total)
}

/// Writes the GLB header, the JSON chunk, the binary chunk's header and its
/// in-memory part `bin`.
fn write_head(
    file: &mut AtomicFile,
    out: &Path,
    total: u64,
    json_bytes: &[u8],
    bin_len: u64,
    bin: &[u8],
) -> Result<(), IoError> {
    let io = |e| IoError::os(out, "write", e);
    let mut head = Vec::with_capacity(28);
    for w in [
        GLB_MAGIC,
        GLB_VERSION,
        total as u32,
        json_bytes.len() as u32,
        CHUNK_JSON,
    ] {
        head.extend_from_slice(&w.to_le_bytes());
    }
    file.write_all(&head).map_err(io)?;
    file.write_all(json_bytes).map_err(io)?;
    head.clear();
    for w in [bin_len as u32, CHUNK_BIN] {
        head.extend_from_slice(&w.to_le_bytes());
    }
    file.write_all(&head).map_err(io)?;
    file.write_all(bin).map_err(io)?;
    Ok(())
}

/// Pass 2: streams every exported frame's positions and normals (absolute,
/// and deltas from `base` for morph targets) into `file`, reporting
/// progress over the second half of the steps; returns the bytes written.
fn stream_frames(
    src: &mut Source,
    file: &mut AtomicFile,
    out: &Path,
    morph: bool,
    base: &[Vec<Vec3>],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<u64, ExportError> {
    let count = src.frames.len();
    let total_steps = 2 * count;
    let io = |e| IoError::os(out, "write", e);
    let mut written = 0;
    let mut frame = Vec::new();
    let mut buf = Vec::new();
    let mut normals = Vec::new();
    let mut base_normals: Vec<Vec<Vec3>> = Vec::new();
    for e in 0..count {
        src.read(e, &mut frame)?;
        for (s, skin) in src.surfaces.iter().enumerate() {
            let p = &frame[s];
            skin.normals(p, &mut normals);
            buf.clear();
            if !morph || e == 0 {
                push_vec3s(&mut buf, p.iter().copied());
                push_vec3s(&mut buf, normals.iter().copied());
            }
            if morph {
                if e == 0 {
                    base_normals.push(normals.clone());
                }
                push_vec3s(&mut buf, p.iter().zip(&base[s]).map(|(a, b)| *a - *b));
                push_vec3s(
                    &mut buf,
                    normals.iter().zip(&base_normals[s]).map(|(a, b)| *a - *b),
                );
            }
            file.write_all(&buf).map_err(io)?;
            written += buf.len() as u64;
        }
        progress(count + e + 1, total_steps);
    }
    Ok(written)
}

/// Joint nodes, and the skeleton's animation channels.
fn skeleton(
    src: &mut Source,
    b: &mut Builder,
    nodes: &mut Vec<Value>,
    samplers: &mut Vec<Value>,
    channels: &mut Vec<Value>,
) -> Result<(), IoError> {
    let character = src.character;
    let skeleton = &character.skeleton;
    let rest = local_transforms(skeleton, &skeleton.rest_posture());
    for (k, (joint, (t, r))) in skeleton.joints.iter().zip(&rest).enumerate() {
        let children: Vec<usize> = skeleton.children(k).collect();
        let mut node = json!({
            "name": joint.name,
            "translation": t.to_array(),
            "rotation": r.to_array(),
        });
        if !children.is_empty() {
            node["children"] = json!(children);
        }
        nodes.push(node);
    }

    // Sample times: every cache frame in the exported range, and every key.
    let t0 = src.times[0];
    let t_end = *src.times.last().expect("frames");
    let (first, last) = (src.frames[0], *src.frames.last().expect("frames"));
    let mut samples = Vec::with_capacity(last - first + 1 + character.key_postures.len());
    for k in first..=last {
        samples.push(src.cache.frame_time(k)?);
    }
    for key in &character.key_postures {
        let t = f64::from(key.time);
        if t < t0 - KEY_SNAP || t > t_end + KEY_SNAP {
            continue;
        }
        let at = samples.partition_point(|&s| s < t);
        let near = [at.checked_sub(1), Some(at)]
            .into_iter()
            .flatten()
            .filter(|&i| i < samples.len())
            .find(|&i| (samples[i] - t).abs() <= KEY_SNAP);
        match near {
            Some(i) => samples[i] = t,
            None => samples.insert(at, t),
        }
    }
    // Strictly increasing as f32 seconds from the first frame.
    let mut input: Vec<f32> = Vec::with_capacity(samples.len());
    let mut kept = Vec::with_capacity(samples.len());
    for &t in &samples {
        let rel = ((t - t0) as f32).max(0.0);
        if input.last().is_none_or(|&l| rel > l) {
            input.push(rel);
            kept.push(t);
        }
    }
    let joints = skeleton.joints.len();
    let mut rotations = vec![Vec::with_capacity(4 * kept.len()); joints];
    let mut root = Vec::with_capacity(3 * kept.len());
    let mut previous: Vec<glam::Quat> = rest.iter().map(|(_, r)| *r).collect();
    for &t in &kept {
        let local = local_transforms(skeleton, &posture_at(character, t));
        for (j, (tr, r)) in local.iter().enumerate() {
            // Keep neighbouring samples in one hemisphere: the shortest slerp.
            let r = if r.dot(previous[j]) < 0.0 { -*r } else { *r };
            previous[j] = r;
            rotations[j].extend_from_slice(&r.to_array());
            if j == 0 {
                root.extend_from_slice(&tr.to_array());
            }
        }
    }
    let input = b.floats(&input, 1, "SCALAR", None, true);
    for (j, r) in rotations.iter().enumerate() {
        let output = b.floats(r, 4, "VEC4", None, false);
        channels
            .push(json!({"sampler": samplers.len(), "target": {"node": j, "path": "rotation"}}));
        samplers.push(json!({"input": input, "output": output, "interpolation": "LINEAR"}));
    }
    let output = b.floats(&root, 3, "VEC3", None, false);
    channels.push(json!({"sampler": samplers.len(), "target": {"node": 0, "path": "translation"}}));
    samplers.push(json!({"input": input, "output": output, "interpolation": "LINEAR"}));
    Ok(())
}

/// Inverse world transforms of the joints in the rest posture.
fn inverse_bind_matrices(character: &Character, b: &mut Builder) -> usize {
    let skeleton = &character.skeleton;
    let world = forward_kinematics(skeleton, &skeleton.rest_posture());
    let data: Vec<f32> = world
        .iter()
        .flat_map(|w| Mat4::from(w.inverse()).to_cols_array())
        .collect();
    b.floats(&data, 16, "MAT4", None, false)
}

/// A bone mesh skinned to the joints: an octahedron from each joint to each
/// child, following the parent, and a small one at the root; flat-shaded.
fn bone_mesh(character: &Character, b: &mut Builder) -> Value {
    let skeleton = &character.skeleton;
    let world = forward_kinematics(skeleton, &skeleton.rest_posture());
    let origin = |k: usize| Vec3::from(world[k].translation);
    let extent = (0..world.len())
        .flat_map(|a| (0..world.len()).map(move |b| (a, b)))
        .map(|(a, b)| origin(a).distance(origin(b)))
        .fold(0.0f32, f32::max);
    let root_size = if extent > 0.0 { 0.04 * extent } else { 0.02 };
    let mut positions: Vec<Vec3> = Vec::new();
    let mut normals: Vec<Vec3> = Vec::new();
    let mut joints: Vec<u16> = Vec::new();
    let mut add = |tip_a: Vec3, tip_b: Vec3, at: f32, width: f32, joint: usize| {
        let d = (tip_b - tip_a).normalize();
        let (u, v) = d.any_orthonormal_pair();
        let mid = tip_a.lerp(tip_b, at);
        let ring = [
            mid + u * width,
            mid + v * width,
            mid - u * width,
            mid - v * width,
        ];
        let centre = (tip_a + tip_b) * 0.5;
        for q in 0..4 {
            let (r0, r1) = (ring[q], ring[(q + 1) % 4]);
            for tip in [tip_a, tip_b] {
                let mut tri = [tip, r0, r1];
                let mut nrm = (tri[1] - tri[0]).cross(tri[2] - tri[0]).normalize();
                let c = (tri[0] + tri[1] + tri[2]) / 3.0;
                if nrm.dot(c - centre) < 0.0 {
                    tri.swap(1, 2);
                    nrm = -nrm;
                }
                positions.extend(tri);
                normals.extend([nrm; 3]);
                joints.extend([[joint as u16, 0, 0, 0]; 3].into_iter().flatten());
            }
        }
    };
    let up = Vec3::Y * root_size;
    add(origin(0) - up, origin(0) + up, 0.5, 0.5 * root_size, 0);
    for (k, joint) in skeleton.joints.iter().enumerate() {
        if let Some(p) = joint.parent {
            let (a, c) = (origin(p), origin(k));
            let len = a.distance(c);
            if len > 1e-6 {
                add(a, c, 0.2, 0.08 * len, p);
            }
        }
    }
    let flat = |v: &[Vec3]| -> Vec<f32> { v.iter().flat_map(|p| p.to_array()).collect() };
    let count = positions.len();
    let position = b.floats(&flat(&positions), 3, "VEC3", Some(ARRAY_BUFFER), true);
    let normal = b.floats(&flat(&normals), 3, "VEC3", Some(ARRAY_BUFFER), false);
    let bytes: Vec<u8> = joints.iter().flat_map(|j| j.to_le_bytes()).collect();
    let view = b.static_view(&bytes, Some(ARRAY_BUFFER));
    let joint_acc = b.accessor(view, UNSIGNED_SHORT, count, "VEC4", None);
    let weights: Vec<f32> = (0..count).flat_map(|_| [1.0, 0.0, 0.0, 0.0]).collect();
    let weight_acc = b.floats(&weights, 4, "VEC4", Some(ARRAY_BUFFER), false);
    json!({
        "name": format!("{}_bones", character.name),
        "primitives": [{
            "attributes": {"POSITION": position, "NORMAL": normal, "JOINTS_0": joint_acc, "WEIGHTS_0": weight_acc},
            "mode": TRIANGLES,
        }],
    })
}
