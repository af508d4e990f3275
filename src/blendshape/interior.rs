//! Internal springs (Ma et al. §3.1): points inside a closed base and the
//! springs that join them to each other and to the surface.

use glam::DVec3;

/// Points added inside the solid and springs among them and the surface.
/// Indices below the surface's vertex count are surface vertices; above,
/// `points[i - surface]`.
#[derive(Clone, Debug, Default)]
pub struct Interior {
    /// The added points.
    pub points: Vec<DVec3>,
    /// The internal springs.
    pub springs: Vec<[u32; 2]>,
}

/// The interior of a closed mesh.
pub fn interior(_surface: &[DVec3], _triangles: &[[u32; 3]]) -> Interior {
    Interior::default()
}
