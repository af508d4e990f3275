//! Triangle meshes from other tools, for `plasticine fem-import`: Wavefront
//! OBJ ([`obj`]) and glTF 2.0, binary (`.glb`) or JSON with embedded
//! `data:` buffers (`.gltf`) ([`gltf`]).
//!
//! Only geometry is read: positions and triangles (polygons fan-triangulated,
//! glTF node transforms applied), in the file's units. Input is treated as
//! hostile: the file size and the vertex and triangle counts are bounded,
//! every offset and index is checked, and non-finite numbers are refused, each
//! with an [`IoError`] naming the file and the line, byte offset or glTF
//! field.

pub mod gltf;
pub mod obj;

use super::IoError;
use super::character_file::read_bytes;
use glam::Vec3;
use std::path::Path;

/// Mesh files larger than this are refused before being read (256 MiB).
pub const MAX_MESH_FILE_BYTES: u64 = 256 << 20;
/// At most this many vertices (positions) in an imported mesh.
pub const MAX_MESH_VERTICES: usize = 8_000_000;
/// At most this many triangles in an imported mesh.
pub const MAX_MESH_TRIANGLES: usize = 16_000_000;

/// A triangle mesh as read: positions and vertex-index triples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportedMesh {
    pub positions: Vec<Vec3>,
    pub triangles: Vec<[u32; 3]>,
}

impl ImportedMesh {
    /// Axis-aligned bounds (min, max) of the positions, if any.
    pub fn bounds(&self) -> Option<(Vec3, Vec3)> {
        let first = *self.positions.first()?;
        Some(
            self.positions
                .iter()
                .fold((first, first), |(lo, hi), &p| (lo.min(p), hi.max(p))),
        )
    }
}

/// Reads a mesh, choosing the reader by extension: `.obj`, `.glb`, `.gltf`.
pub fn load_mesh(path: &Path) -> Result<ImportedMesh, IoError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("obj") => {
            let bytes = read_bytes(path, MAX_MESH_FILE_BYTES)?;
            obj::parse_obj(&bytes, path)
        }
        Some("glb") => {
            let bytes = read_bytes(path, MAX_MESH_FILE_BYTES)?;
            gltf::parse_glb(&bytes, path)
        }
        Some("gltf") => {
            let bytes = read_bytes(path, MAX_MESH_FILE_BYTES)?;
            gltf::parse_gltf_json(&bytes, path)
        }
        _ => Err(IoError::BadInput {
            path: path.to_path_buf(),
            message: "unknown mesh format: expected a .obj, .glb or .gltf file".into(),
        }),
    }
}
