//! Triangle mesh of a deformed superellipsoid from Barr's parametrisation.
//!
//! Vertices are Barr's signed-power surface points
//! `(a1 cos^e1 η cos^e2 ω, a2 cos^e1 η sin^e2 ω, a3 sin^e1 η)` on a latitude
//! (η) × longitude (ω) grid, with a single vertex at each pole and the
//! longitude seam shared, so the mesh is closed and watertight. Each vertex is
//! pushed through the forward Barr deformation; its normal is the gauge's
//! gradient there (evaluated through the inverse map), which is the exact
//! surface normal of the deformed shape. Triangles wind counter-clockwise seen
//! from outside (east × north points out).

use super::{MuscleShape, TriMesh};
use glam::DVec3;
use std::f64::consts::{FRAC_PI_2, PI};

impl MuscleShape {
    /// Closed triangle mesh of the deformed surface: `slices` around z (at
    /// least 3) by `stacks` from pole to pole (at least 2).
    pub fn tessellate(&self, slices: usize, stacks: usize) -> TriMesh {
        tessellate(self, slices, stacks)
    }
}

fn tessellate(shape: &MuscleShape, slices: usize, stacks: usize) -> TriMesh {
    let slices = slices.max(3);
    let stacks = stacks.max(2);
    let sq = shape.superquadric();
    let rings = stacks - 1;
    let vertex_count = 2 + rings * slices;
    let mut positions = Vec::with_capacity(vertex_count);
    let mut normals = Vec::with_capacity(vertex_count);
    let mut push = |q: DVec3| {
        let p = shape.deformation.forward(q);
        positions.push(p.as_vec3());
        normals.push(shape.value_normal64(p).1.as_vec3());
    };

    push(DVec3::new(0.0, 0.0, -sq.radii.z));
    for i in 1..stacks {
        let eta = -FRAC_PI_2 + PI * i as f64 / stacks as f64;
        for j in 0..slices {
            let omega = -PI + 2.0 * PI * j as f64 / slices as f64;
            push(sq.point(eta, omega));
        }
    }
    push(DVec3::new(0.0, 0.0, sq.radii.z));

    let south = 0u32;
    let north = (vertex_count - 1) as u32;
    // Vertex j of ring i (1-based rings, from the south pole up).
    let v = |i: usize, j: usize| (1 + (i - 1) * slices + j % slices) as u32;
    let mut indices = Vec::with_capacity(2 * slices * rings);
    for j in 0..slices {
        indices.push([south, v(1, j + 1), v(1, j)]);
    }
    for i in 1..rings {
        for j in 0..slices {
            indices.push([v(i, j), v(i, j + 1), v(i + 1, j + 1)]);
            indices.push([v(i, j), v(i + 1, j + 1), v(i + 1, j)]);
        }
    }
    for j in 0..slices {
        indices.push([v(rings, j), v(rings, j + 1), north]);
    }

    TriMesh {
        positions,
        normals,
        indices,
    }
}
