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
    ExportError, MorphWeights, SecondaryMotion, SkinnedMorphs, Source, commit, local_transforms,
    relative_times,
};
use crate::character::Character;
use crate::io::{AtomicFile, IoError};
use crate::kinematics::forward_kinematics;
use builder::{Bounds, Builder, extras, index, mesh, morph_target, triangles};
use glam::{Mat4, Vec3};
use gltf::accessor::{ComponentType, Type};
use gltf::animation::{Interpolation, Property};
use gltf::buffer::Target;
use gltf::mesh::Semantic;
use gltf::validation::USize64;
use gltf::{Accessor, Index};
use gltf_json as gltf;
use std::io::Write;
use std::path::Path;

mod builder;

/// GLB magic, version and chunk types.
const GLB_MAGIC: u32 = 0x4654_6C67; // "glTF"
const GLB_VERSION: u32 = 2;
const CHUNK_JSON: u32 = 0x4E4F_534A; // "JSON"
const CHUNK_BIN: u32 = 0x004E_4942; // "BIN\0"

/// Two key times closer than this (s) to a frame time replace its sample.
const KEY_SNAP: f64 = 1e-6;

fn push_vec3s(buf: &mut Vec<u8>, data: impl Iterator<Item = Vec3>) {
    for v in data {
        for c in v.to_array() {
            buf.extend_from_slice(&c.to_le_bytes());
        }
    }
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
    modes: Option<&SkinnedMorphs>,
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

    // The skeleton.
    skeleton(src, &mut b)?;
    b.scene_roots.push(Index::new(0));
    let bones = bone_mesh(character, &mut b);
    b.mesh_node(format!("{}_bones", character.name), bones, true);
    let inverse_bind = inverse_bind_matrices(character, &mut b);

    let indices = skin_indices(src, &mut b);
    // Painted skins carry their colours (static: paint does not move).
    let colors: Vec<Option<Index<Accessor>>> = (0..src.surfaces.len())
        .map(|s| {
            src.colors(s).map(|c| {
                let flat: Vec<f32> = c.iter().flat_map(|x| x.to_array()).collect();
                b.floats(&flat, 3, Type::Vec3, Some(Target::ArrayBuffer), false)
            })
        })
        .collect();
    let times: Vec<f32> = relative_times(src).iter().map(|&t| t as f32).collect();
    if let Some(m) = modes {
        rigged_mesh(src, m, &times, &mut b)?;
    }

    // The secondary motion's small data and animation.
    if morph {
        morph_animation(src, &times, &mut b);
    } else {
        frame_animation(src, &times, &mut b);
    }
    reserve_frames(src, morph, (&indices, &colors), &bounds, &mut b);

    document(src, secondary, inverse_bind, &mut b);
    let json_bytes = json_chunk(&b.root, out)?;
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
fn skin_indices(src: &Source, b: &mut Builder) -> Vec<Index<Accessor>> {
    src.surfaces
        .iter()
        .map(|s| b.indices(&s.triangles(), s.point_count()))
        .collect()
}

/// The name of exported frame `e`: `frame_NNNNN`, its cache index.
fn frame_name(src: &Source, e: usize) -> String {
    format!("frame_{:05}", src.frames[e])
}

/// A rigged mesh ([`SkinnedMorphs`]): a node at the scene root skinned to
/// the skeleton, its mesh with its morph targets, and a LINEAR weights
/// channel holding every exported frame's weights.
///
/// Modal flesh as DyRT draws it has two targets per mode (the mode at
/// +scale, then at −scale), each frame's amplitude over the scale on the
/// side it is on (zero on the other). glTF allows negative weights, but
/// Blender's importer makes shape keys that clamp to [0, 1] and so would
/// show only half of every vibration; with a target per side every weight
/// is in [0, 1], and linear interpolation of the pair is that of the
/// amplitude. Blend targets are in [0, 1] already: one target each, named
/// as in the character.
fn rigged_mesh(
    src: &mut Source,
    m: &SkinnedMorphs,
    times: &[f32],
    b: &mut Builder,
) -> Result<(), IoError> {
    let count = m.positions.len();
    let position = b.vec3s(&m.positions, true);
    let normal = b.vec3s(&m.normals, false);
    let joints = b.joints(&m.joints);
    let weights: Vec<f32> = m.weights.iter().flatten().copied().collect();
    let weights = b.floats(&weights, 4, Type::Vec4, Some(Target::ArrayBuffer), false);
    let sides: &[(f32, &str)] = match m.animated {
        MorphWeights::Amplitudes(_) => &[(1.0, "+"), (-1.0, "-")],
        MorphWeights::Keyed => &[(1.0, "")],
    };
    let mut targets = Vec::with_capacity(sides.len() * m.targets.len());
    let mut names: Vec<String> = Vec::with_capacity(targets.capacity());
    for t in &m.targets {
        for &(sign, side) in sides {
            let signed = |v: &[Vec3]| -> Vec<Vec3> { v.iter().map(|x| *x * sign).collect() };
            // A target moves few vertices (a mode its part's, a blend
            // target what was sculpted): store the rest as zeros.
            let p = b.sparse_vec3s(&signed(&t.positions));
            let n = b.sparse_vec3s(&signed(&t.normals));
            targets.push(morph_target(p, n));
            names.push(format!("{}{side}", t.name));
        }
    }
    let indices = b.indices(&m.triangles, count);

    // Every exported frame's weights, a pair per mode of modal flesh.
    let mut output = Vec::with_capacity(times.len() * targets.len());
    for e in 0..src.frames.len() {
        let w = src.rig_weights(m, e)?;
        if sides.len() == 2 {
            output.extend(w.iter().flat_map(|&w| [w.max(0.0), (-w).max(0.0)]));
        } else {
            output.extend(w);
        }
    }
    let input = b.floats(times, 1, Type::Scalar, None, true);
    let output = b.floats(&output, 1, Type::Scalar, None, false);
    let primitive = triangles(
        &[
            (Semantic::Positions, position),
            (Semantic::Normals, normal),
            (Semantic::Joints(0), joints),
            (Semantic::Weights(0), weights),
        ],
        Some(indices),
        Some(targets),
    );
    let mesh = mesh(m.name.clone(), vec![primitive], &names);
    let node = b.mesh_node(format!("{}_{}", m.name, m.kind()), mesh, true);
    b.channel(
        node,
        Property::MorphTargetWeights,
        (input, output),
        Interpolation::Linear,
    );
    Ok(())
}

/// Morph targets: a node per skin with its mesh (primitives filled in by
/// [`reserve_frames`]) and a one-hot LINEAR weights channel.
fn morph_animation(src: &Source, times: &[f32], b: &mut Builder) {
    if src.surfaces.is_empty() {
        return; // no accessors nothing uses
    }
    let count = src.frames.len();
    let input = b.floats(times, 1, Type::Scalar, None, true);
    let mut weights = vec![0.0f32; count * count];
    for e in 0..count {
        weights[e * count + e] = 1.0;
    }
    let output = b.floats(&weights, 1, Type::Scalar, None, false);
    let names: Vec<String> = (0..count).map(|e| frame_name(src, e)).collect();
    for s in &src.surfaces {
        // Its primitive is added once the frame views are reserved.
        let mesh = mesh(s.name.clone(), Vec::new(), &names);
        let node = b.mesh_node(format!("{}_skin", s.name), mesh, false);
        b.channel(
            node,
            Property::MorphTargetWeights,
            (input, output),
            Interpolation::Linear,
        );
    }
}

/// Per-frame meshes: a group node per exported frame with a child (and
/// mesh, primitives filled in by [`reserve_frames`]) per skin, shown by a
/// STEP scale channel.
fn frame_animation(src: &Source, times: &[f32], b: &mut Builder) {
    if src.surfaces.is_empty() {
        return; // no empty frame groups
    }
    let count = src.frames.len();
    // Scale outputs, shared by the frames with the same pattern (made
    // only when used: the validator reports unused accessors).
    let mut outputs: Vec<(Vec<f32>, Index<Accessor>)> = Vec::new();
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
                let a = b.floats(&data, 3, Type::Vec3, None, false);
                outputs.push((shown.to_vec(), a));
                a
            }
        };
        let input = b.floats(&input, 1, Type::Scalar, None, true);
        let scale = if e == 0 { 1.0 } else { 0.0 };
        let mut children = Vec::with_capacity(src.surfaces.len());
        for s in &src.surfaces {
            let name = format!("{}_{:05}", s.name, src.frames[e]);
            // Its primitive is added once the frame views are reserved.
            let mesh = b.root.push(mesh(name.clone(), Vec::new(), &[]));
            children.push(b.root.push(gltf::Node {
                name: Some(name),
                mesh: Some(mesh),
                ..Default::default()
            }));
        }
        let group = b.root_node(gltf::Node {
            name: Some(frame_name(src, e)),
            scale: Some([scale; 3]),
            children: Some(children),
            ..Default::default()
        });
        b.channel(group, Property::Scale, (input, output), Interpolation::Step);
    }
}

/// Reserves the streamed frame data, in the order [`stream_frames`] writes
/// it, and fills in the skin meshes' primitives (and morph targets).
fn reserve_frames(
    src: &Source,
    morph: bool,
    (indices, colors): (&[Index<Accessor>], &[Option<Index<Accessor>>]),
    bounds: &FrameBounds,
    b: &mut Builder,
) {
    let count = src.frames.len();
    let first_skin_mesh = b.root.meshes.len()
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
            let streamed = |b: &mut Builder, bounds: Option<&Bounds>| {
                let v = b.streamed_view(bytes, Some(Target::ArrayBuffer));
                b.accessor(Some(v), ComponentType::F32, p, Type::Vec3, bounds)
            };
            if !morph || e == 0 {
                let position = streamed(b, Some(&bounds.abs[e][s]));
                let normal = streamed(b, None);
                let mut attributes =
                    vec![(Semantic::Positions, position), (Semantic::Normals, normal)];
                if let Some(c) = colors[s] {
                    attributes.push((Semantic::Colors(0), c));
                }
                let targets = morph.then(Vec::new);
                b.root.meshes[mesh_index].primitives =
                    vec![triangles(&attributes, Some(indices[s]), targets)];
            }
            if morph {
                let position = streamed(b, Some(&bounds.delta[e][s]));
                let normal = streamed(b, None);
                b.root.meshes[mesh_index].primitives[0]
                    .targets
                    .get_or_insert_with(Vec::new)
                    .push(morph_target(position, normal));
            }
        }
    }
}

/// Completes the glTF document: asset, scene, the skin, the animation and
/// the one buffer.
fn document(
    src: &Source,
    secondary: SecondaryMotion,
    inverse_bind: Index<Accessor>,
    b: &mut Builder,
) {
    let character = src.character;
    b.root.asset = gltf::Asset {
        version: "2.0".into(),
        generator: Some(format!("Plasticine {}", env!("CARGO_PKG_VERSION"))),
        extras: extras(&serde_json::json!({
            "character": character.name,
            "cache": src.cache.path().display().to_string(),
            "fps": src.fps,
            "cacheFrames": src.frames,
            "secondaryMotion": format!("{secondary:?}"),
        })),
        copyright: None,
        extensions: None,
        min_version: None,
    };
    let scene = b.root.push(gltf::Scene {
        extensions: None,
        extras: None,
        name: Some(character.name.clone()),
        nodes: b.scene_roots.clone(),
    });
    b.root.scene = Some(scene);
    b.root.push(gltf::Skin {
        extensions: None,
        extras: None,
        inverse_bind_matrices: Some(inverse_bind),
        joints: (0..character.skeleton.joints.len()).map(index).collect(),
        name: Some(format!("{}_skeleton", character.name)),
        skeleton: Some(Index::new(0)),
    });
    b.root.push(gltf::Animation {
        extensions: None,
        extras: None,
        channels: std::mem::take(&mut b.channels),
        name: Some(character.name.clone()),
        samplers: std::mem::take(&mut b.samplers),
    });
    let byte_length = USize64(b.len());
    b.root.push(gltf::Buffer {
        byte_length,
        name: None,
        uri: None,
        extensions: None,
        extras: None,
    });
}

/// The JSON chunk's bytes: `doc` serialized, padded with spaces to 4 bytes.
fn json_chunk(doc: &gltf::Root, out: &Path) -> Result<Vec<u8>, IoError> {
    let mut json_bytes = gltf::serialize::to_vec(doc).map_err(|e| IoError::Serialize {
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
fn skeleton(src: &mut Source, b: &mut Builder) -> Result<(), IoError> {
    let character = src.character;
    let skeleton = &character.skeleton;
    let rest = local_transforms(skeleton, &skeleton.rest_posture());
    for (k, (joint, (t, r))) in skeleton.joints.iter().zip(&rest).enumerate() {
        let children: Vec<Index<gltf::Node>> = skeleton.children(k).map(index).collect();
        b.root.push(gltf::Node {
            name: Some(joint.name.clone()),
            translation: Some(t.to_array()),
            rotation: Some(gltf::scene::UnitQuaternion(r.to_array())),
            children: (!children.is_empty()).then_some(children),
            ..Default::default()
        });
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
        let local = local_transforms(skeleton, &src.posture_at(t));
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
    let input = b.floats(&input, 1, Type::Scalar, None, true);
    for (j, r) in rotations.iter().enumerate() {
        let output = b.floats(r, 4, Type::Vec4, None, false);
        b.channel(
            index(j),
            Property::Rotation,
            (input, output),
            Interpolation::Linear,
        );
    }
    let output = b.floats(&root, 3, Type::Vec3, None, false);
    b.channel(
        Index::new(0),
        Property::Translation,
        (input, output),
        Interpolation::Linear,
    );
    Ok(())
}

/// Inverse world transforms of the joints in the rest posture.
fn inverse_bind_matrices(character: &Character, b: &mut Builder) -> Index<Accessor> {
    let skeleton = &character.skeleton;
    let world = forward_kinematics(skeleton, &skeleton.rest_posture());
    let data: Vec<f32> = world
        .iter()
        .flat_map(|w| Mat4::from(w.inverse()).to_cols_array())
        .collect();
    b.floats(&data, 16, Type::Mat4, None, false)
}

/// A bone mesh skinned to the joints: an octahedron from each joint to each
/// child, following the parent, and a small one at the root; flat-shaded.
fn bone_mesh(character: &Character, b: &mut Builder) -> gltf::Mesh {
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
    let mut joints: Vec<[u16; 4]> = Vec::new();
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
                joints.extend([[joint as u16, 0, 0, 0]; 3]);
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
    let count = positions.len();
    let position = b.vec3s(&positions, true);
    let normal = b.vec3s(&normals, false);
    let joints = b.joints(&joints);
    let weights: Vec<f32> = (0..count).flat_map(|_| [1.0, 0.0, 0.0, 0.0]).collect();
    let weights = b.floats(&weights, 4, Type::Vec4, Some(Target::ArrayBuffer), false);
    let primitive = triangles(
        &[
            (Semantic::Positions, position),
            (Semantic::Normals, normal),
            (Semantic::Joints(0), joints),
            (Semantic::Weights(0), weights),
        ],
        None,
        None,
    );
    mesh(format!("{}_bones", character.name), vec![primitive], &[])
}
