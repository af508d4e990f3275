//! An imported triangle mesh and the bounds every reader enforces.

use glam::Vec3;

/// Mesh files larger than this are refused before being read (256 MiB).
pub const MAX_MESH_FILE_BYTES: u64 = 256 << 20;
/// At most this many vertices (positions) in an imported mesh.
pub const MAX_MESH_VERTICES: usize = 8_000_000;
/// At most this many triangles in an imported mesh.
pub const MAX_MESH_TRIANGLES: usize = 16_000_000;

/// A triangle mesh as read: positions and vertex-index triples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportedMesh {
    /// Vertex positions in the file's space (glTF: placed by their node's world transform).
    pub positions: Vec<Vec3>,
    /// Triangles as triples of indices into `positions`.
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

/// A morph target as read: the whole mesh's positions with the target at
/// weight one.
#[derive(Clone, Debug, PartialEq)]
pub struct MorphTarget {
    /// Its name (the mesh's `extras.targetNames`, else "target K").
    pub name: String,
    /// Every vertex's position, in the mesh's order.
    pub positions: Vec<Vec3>,
}
