//! Writing an export: the checked source read frame by frame into the
//! format asked for (glTF, USD or an OBJ sequence).

use super::{
    ClosedGrid, ExportError, ExportFormat, ExportOptions, ExportSummary, SecondaryMotion, Source,
    Surface, Topology, check_cache, gltf, grid_faces_inward, obj_frame_name, resolve_format, usd,
};
use crate::character::Character;
use crate::io::CacheReader;
use std::path::Path;

/// Exports the frames of `cache` (baked from `character`) to `out`.
/// `progress(done, total)` is called as frames are processed.
pub fn export(
    character: &Character,
    cache: &mut CacheReader,
    out: &Path,
    opts: &ExportOptions,
    mut progress: impl FnMut(usize, usize),
) -> Result<ExportSummary, ExportError> {
    let format = resolve_format(out, opts.format)?;
    if opts.subdivide == 0 || opts.subdivide > super::MAX_SUBDIVIDE {
        return Err(ExportError::Refused {
            path: out.to_path_buf(),
            message: format!(
                "--subdivide {} is out of range: 1 (the simulated grid) to {}",
                opts.subdivide,
                super::MAX_SUBDIVIDE
            ),
        });
    }
    if opts.every == 0 {
        return Err(ExportError::Refused {
            path: out.to_path_buf(),
            message: "--every must be at least 1".into(),
        });
    }
    match format {
        ExportFormat::Obj if out.is_file() => {
            return Err(ExportError::Refused {
                path: out.to_path_buf(),
                message: "is a file: the OBJ sequence goes into a folder".into(),
            });
        }
        ExportFormat::Glb | ExportFormat::Usda if out.is_dir() => {
            return Err(ExportError::Refused {
                path: out.to_path_buf(),
                message: format!("is a folder: give a .{format} file to write"),
            });
        }
        _ => {}
    }
    let boundary_error = check_cache(character, cache)?;
    let frames: Vec<usize> = (0..cache.frame_count()).step_by(opts.every).collect();
    let mut times = Vec::with_capacity(frames.len());
    for &k in &frames {
        times.push(cache.frame_time(k)?);
    }
    let mut first = Vec::new();
    cache.read_frame(frames[0], &mut first)?;
    // Per skin: reverse its winding and normals ([`grid_faces_inward`]).
    let flip: Vec<bool> = cache
        .skins()
        .iter()
        .zip(&first)
        .map(|(s, p)| grid_faces_inward(s.m, s.n, p))
        .collect();
    let mut surfaces: Vec<Surface> = cache
        .skins()
        .iter()
        .zip(&flip)
        .map(|(s, &flip)| {
            let (m, n) = crate::skin_mesh::refined_size(s.m, s.n, opts.subdivide);
            Surface {
                name: s.name.clone(),
                points: ClosedGrid::new(m, n).vertex_count(),
                topology: Topology::Grid { m, n, flip },
            }
        })
        .collect();
    // glTF and USD draw a rigged mesh from its rig, not its points.
    let rig = opts.rig.as_ref().filter(|_| format != ExportFormat::Obj);
    if let Some(m) = rig {
        m.check_cache(&cache.flesh().modal)
            .map_err(|e| ExportError::Mismatch {
                cache: cache.path().to_path_buf(),
                character: character.name.clone(),
                message: e.to_string(),
            })?;
    }
    let embedded = character
        .flesh
        .lattice_model()
        .and_then(|f| f.embedded_mesh.as_ref())
        .filter(|_| rig.is_none());
    for (m, mesh) in cache.flesh().meshes.iter().zip(embedded) {
        surfaces.push(Surface {
            name: m.name.clone(),
            points: m.vertices,
            topology: Topology::Mesh(mesh.triangles.clone()),
        });
    }
    let roots = super::cache_roots(cache)?;
    let mut src = Source {
        roots,
        character,
        surfaces,
        meshes: if rig.is_some() {
            Vec::new()
        } else {
            cache.flesh().meshes.clone()
        },
        mesh_scratch: Vec::new(),
        muscle_scratch: Vec::new(),
        skins: cache.skins().to_vec(),
        fps: cache.fps(),
        subdivide: opts.subdivide,
        frames,
        times,
        cache,
    };
    let (secondary, files, bytes) = match format {
        ExportFormat::Glb => {
            let (s, b) = gltf::write_glb(&mut src, out, opts.morph_limit, rig, &mut progress)?;
            (s, 1, b)
        }
        ExportFormat::Usda => (
            SecondaryMotion::TimeSampledPoints,
            1,
            usd::write_usda(&mut src, out, rig, &mut progress)?,
        ),
        ExportFormat::Obj => {
            let (files, bytes) = write_obj_sequence(&mut src, out, &mut progress)?;
            (SecondaryMotion::FileSequence, files, bytes)
        }
    };
    Ok(ExportSummary {
        format,
        out: out.to_path_buf(),
        frames: src.frames.len(),
        first_frame: src.frames[0],
        last_frame: *src.frames.last().expect("at least one frame"),
        every: opts.every,
        fps: src.fps,
        duration: src.times.last().expect("at least one frame") - src.times[0],
        skins: src.skins.clone(),
        subdivide: opts.subdivide,
        meshes: src.cache.flesh().meshes.clone(),
        secondary,
        files,
        bytes,
        boundary_error,
        complete_cache: src.cache.is_complete(),
    })
}

/// `frame_NNNNN.obj` for every exported frame in `dir`.
fn write_obj_sequence(
    src: &mut Source,
    dir: &Path,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(usize, u64), ExportError> {
    let total = src.frames.len();
    let triangles: Vec<Vec<[u32; 3]>> = src.surfaces.iter().map(Surface::triangles).collect();
    let colors: Vec<Option<Vec<glam::Vec3>>> =
        (0..src.surfaces.len()).map(|s| src.colors(s)).collect();
    let mut frame = Vec::new();
    let mut bytes = 0;
    for e in 0..total {
        src.read(e, &mut frame)?;
        // Skins (closed by their caps) and embedded meshes alike.
        let meshes: Vec<crate::io::obj::ObjMesh> = src
            .surfaces
            .iter()
            .zip(&frame)
            .zip(&triangles)
            .map(|((s, p), t)| (s.name.as_str(), p.as_slice(), t.as_slice()))
            .collect();
        let path = dir.join(obj_frame_name(src.frames[e]));
        crate::io::obj::write_colored_obj(&path, &meshes, &colors)?;
        bytes += std::fs::metadata(&path).map_or(0, |m| m.len());
        progress(e + 1, total);
    }
    Ok((total, bytes))
}
