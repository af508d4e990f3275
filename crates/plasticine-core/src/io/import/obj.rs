//! Wavefront OBJ geometry: `v x y z [w]` and `f` lines.
//!
//! Face corners may be `v`, `v/vt`, `v//vn` or `v/vt/vn`; only the vertex
//! index is used. Indices are 1-based, or negative (relative to the vertices
//! read so far). Polygons are fan-triangulated from their first corner. Every
//! other statement (`vt`, `vn`, `o`, `g`, `s`, `usemtl`, `mtllib`, `l`, ...)
//! and comments are ignored. Errors name the line and column.

use super::mesh::{ImportedMesh, MAX_MESH_TRIANGLES, MAX_MESH_VERTICES};
use crate::io::IoError;
use glam::Vec3;
use std::path::Path;

/// Parses the bytes of an OBJ file; `origin` names it in errors.
pub fn parse_obj(bytes: &[u8], origin: &Path) -> Result<ImportedMesh, IoError> {
    let err = |line: usize, col: usize, message: String| IoError::Parse {
        path: origin.to_path_buf(),
        line,
        col,
        message,
    };
    let mut mesh = ImportedMesh::default();
    // The line of each triangle, for the range check of forward references.
    let mut triangle_lines: Vec<u32> = Vec::new();
    let mut corners: Vec<(u32, usize)> = Vec::new();
    for (number, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = number + 1;
        // Names and comments may be in any encoding; numbers are ASCII.
        let text = String::from_utf8_lossy(raw);
        let text = text.split('#').next().unwrap_or("");
        let mut tokens = tokens_with_columns(text);
        let Some((_, keyword)) = tokens.next() else {
            continue;
        };
        match keyword {
            "v" => {
                let mut xyz = [0f32; 3];
                for (axis, value) in xyz.iter_mut().enumerate() {
                    let (col, token) = tokens.next().ok_or_else(|| {
                        err(
                            line,
                            text.len() + 1,
                            format!(
                                "a vertex needs x, y and z; {} missing",
                                ["x", "y", "z"][axis]
                            ),
                        )
                    })?;
                    *value = token
                        .parse::<f32>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| {
                            err(line, col, format!("'{token}' is not a finite number"))
                        })?;
                }
                if mesh.positions.len() >= MAX_MESH_VERTICES {
                    return Err(err(
                        line,
                        1,
                        format!("more than {MAX_MESH_VERTICES} vertices"),
                    ));
                }
                mesh.positions.push(Vec3::from_array(xyz));
            }
            "f" => {
                corners.clear();
                for (col, token) in tokens {
                    let index = token.split('/').next().unwrap_or("");
                    let k: i64 = index
                        .parse()
                        .map_err(|_| err(line, col, format!("'{token}' is not a vertex index")))?;
                    let count = mesh.positions.len() as i64;
                    let resolved = match k {
                        0 => {
                            return Err(err(
                                line,
                                col,
                                "vertex index 0 (OBJ indices start at 1)".into(),
                            ));
                        }
                        k if k > 0 => k - 1,
                        k => count + k,
                    };
                    if resolved < 0 {
                        return Err(err(
                            line,
                            col,
                            format!(
                                "relative index {k} reaches before the first vertex ({count} read so far)"
                            ),
                        ));
                    }
                    let resolved = u32::try_from(resolved)
                        .map_err(|_| err(line, col, format!("vertex index {k} is out of range")))?;
                    corners.push((resolved, col));
                }
                if corners.len() < 3 {
                    return Err(err(
                        line,
                        1,
                        format!("a face needs at least 3 vertices, got {}", corners.len()),
                    ));
                }
                if mesh.triangles.len() + corners.len() - 2 > MAX_MESH_TRIANGLES {
                    return Err(err(
                        line,
                        1,
                        format!("more than {MAX_MESH_TRIANGLES} triangles"),
                    ));
                }
                for k in 1..corners.len() - 1 {
                    mesh.triangles
                        .push([corners[0].0, corners[k].0, corners[k + 1].0]);
                    triangle_lines.push(line as u32);
                }
            }
            _ => {}
        }
    }
    // Positive indices may refer forward; check them against the final count.
    let n = mesh.positions.len() as u32;
    if let Some(t) = mesh
        .triangles
        .iter()
        .position(|t| t.iter().any(|&i| i >= n))
    {
        let bad = mesh.triangles[t]
            .iter()
            .find(|&&i| i >= n)
            .copied()
            .unwrap_or(n);
        return Err(err(
            triangle_lines[t] as usize,
            1,
            format!(
                "vertex index {} is out of range (the file has {n} vertices)",
                bad as u64 + 1
            ),
        ));
    }
    if mesh.triangles.is_empty() {
        return Err(IoError::BadInput {
            path: origin.to_path_buf(),
            message: format!(
                "no faces (f lines): nothing to import ({} vertices)",
                mesh.positions.len()
            ),
        });
    }
    Ok(mesh)
}

/// Whitespace-separated tokens with their 1-based columns (in characters).
fn tokens_with_columns(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut start = None;
    let mut out = Vec::new();
    let mut col = 0;
    for (i, c) in text.char_indices() {
        col += 1;
        match (c.is_whitespace(), start) {
            (false, None) => start = Some((i, col)),
            (true, Some((s, sc))) => {
                out.push((sc, &text[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some((s, sc)) = start {
        out.push((sc, &text[s..]));
    }
    out.into_iter()
}
