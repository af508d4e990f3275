//! Wavefront OBJ of skin grids: the simplest interchange, one file per frame.

use super::export::grid_faces_inward;
use super::{IoError, write_atomic};
use crate::skin_mesh::ClosedGrid;
use glam::Vec3;
use std::fmt::Write as _;
use std::path::Path;

/// An embedded (FEM flesh) mesh in one frame: name, deformed vertices, and
/// the character's triangles over them.
pub type ObjMesh<'a> = (&'a str, &'a [Vec3], &'a [[u32; 3]]);

/// Writes one frame's meshes (as [`write_frame_obj`]'s embedded meshes)
/// with per-vertex colours where given (linear RGB after each `v`'s
/// position, the common OBJ extension that Blender reads).
pub fn write_colored_obj(
    path: &Path,
    meshes: &[ObjMesh],
    colors: &[Option<Vec<Vec3>>],
) -> Result<(), IoError> {
    let mut s = String::from("# Plasticine skin frame\n");
    push_meshes(&mut s, 1, meshes, colors);
    write_atomic(path, s.as_bytes())
}

/// Writes one frame's skins (as `write_skins_obj`) followed by the
/// embedded meshes, each its own object.
pub fn write_frame_obj(
    path: &Path,
    skins: &[(&str, usize, usize, &[Vec3])],
    meshes: &[ObjMesh],
) -> Result<(), IoError> {
    let mut s = String::from("# Plasticine skin frame\n");
    let mut base = 1usize;
    for &(name, m, n, pos) in skins {
        let _ = writeln!(s, "o {name}");
        let grid = ClosedGrid::new(m, n);
        // Counter-clockwise seen from outside, whichever way the grid turns.
        let flip = grid_faces_inward(m, n, pos);
        let closed = grid.closed(pos, flip);
        for p in &closed {
            let _ = writeln!(s, "v {} {} {}", p.x, p.y, p.z);
        }
        for t in grid.triangles(flip) {
            let [a, b, c] = t.map(|i| base + i as usize);
            let _ = writeln!(s, "f {a} {b} {c}");
        }
        base += closed.len();
    }
    push_meshes(&mut s, base, meshes, &[]);
    write_atomic(path, s.as_bytes())
}

/// Appends `meshes` as OBJ objects, their vertices numbered from `base`
/// (1-based), with the colours of those that have them.
fn push_meshes(s: &mut String, mut base: usize, meshes: &[ObjMesh], colors: &[Option<Vec<Vec3>>]) {
    for (k, (name, pos, triangles)) in meshes.iter().enumerate() {
        let _ = writeln!(s, "o {name}");
        let color = colors.get(k).and_then(Option::as_ref);
        for (i, p) in pos.iter().enumerate() {
            match color.and_then(|c| c.get(i)) {
                Some(c) => {
                    let _ = writeln!(s, "v {} {} {} {} {} {}", p.x, p.y, p.z, c.x, c.y, c.z);
                }
                None => {
                    let _ = writeln!(s, "v {} {} {}", p.x, p.y, p.z);
                }
            }
        }
        for t in triangles.iter() {
            let [a, b, c] = t.map(|i| base + i as usize);
            let _ = writeln!(s, "f {a} {b} {c}");
        }
        base += pos.len();
    }
}
