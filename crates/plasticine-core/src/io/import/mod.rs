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

mod gltf;
mod mesh;
mod obj;

pub use gltf::{parse_glb, parse_glb_targets, parse_gltf_json, parse_gltf_json_targets};
pub use obj::parse_obj;

pub use mesh::{ImportedMesh, MAX_MESH_FILE_BYTES, MorphTarget};

use super::IoError;
use super::character_file::read_bytes;
use std::path::Path;

/// Reads a mesh, choosing the reader by extension: `.obj`, `.glb`, `.gltf`.
pub fn load_mesh(path: &Path) -> Result<ImportedMesh, IoError> {
    load(path, None)
}

/// [`load_mesh`] with a glTF mesh's morph targets (none from OBJ).
pub fn load_mesh_with_targets(path: &Path) -> Result<(ImportedMesh, Vec<MorphTarget>), IoError> {
    let mut targets = Vec::new();
    let mesh = load(path, Some(&mut targets))?;
    Ok((mesh, targets))
}

/// Reads a mesh by its extension, and glTF's morph targets into `targets`.
fn load(path: &Path, targets: Option<&mut Vec<MorphTarget>>) -> Result<ImportedMesh, IoError> {
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
            gltf::parse_glb_targets(&bytes, path, targets)
        }
        Some("gltf") => {
            let bytes = read_bytes(path, MAX_MESH_FILE_BYTES)?;
            gltf::parse_gltf_json_targets(&bytes, path, targets)
        }
        _ => Err(IoError::BadInput {
            path: path.to_path_buf(),
            message: "unknown mesh format: expected a .obj, .glb or .gltf file".into(),
        }),
    }
}
