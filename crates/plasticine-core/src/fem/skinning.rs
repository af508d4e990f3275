//! Linear blend skinning weights of points riding a lattice flesh: each
//! point takes its cell's bone-region weights (§4.5) interpolated
//! trilinearly, keeps the four heaviest joints and renormalises, which is
//! what a vertex stage and glTF's `JOINTS_0`/`WEIGHTS_0` hold. Modal flesh
//! draws its mesh with them (DyRT §4), and exports skin a blendshape rig
//! with them.

use super::flesh_body::RegionWeights;
use super::{Embedding, Lattice};
use crate::morph::{JOINTS_PER_VERTEX, four_largest};
use glam::DVec3;

/// Region blending width when the flesh sets none (m): each lattice
/// vertex rides its own bone's region.
pub const NARROW_BLEND: f64 = 1e-6;

/// Per lattice vertex, the bones whose region weight there is positive,
/// with that weight (`weights` is `[bone][vertex]`).
pub fn vertex_bones(lattice: &Lattice, weights: &RegionWeights) -> Vec<Vec<(usize, f64)>> {
    (0..lattice.vertex_count())
        .map(|a| {
            (0..lattice.bones.len())
                .filter(|&b| weights[b][a] > 0.0)
                .map(|b| (b, weights[b][a]))
                .collect()
        })
        .collect()
}

/// The four heaviest joints of point `p` (lying in `embedding`'s cell, or
/// outside the flesh) with weights summing to one. `blend` is
/// [`vertex_bones`]. A point outside the flesh rides rigidly with the
/// nearest lattice vertex.
pub fn joint_weights(
    lattice: &Lattice,
    blend: &[Vec<(usize, f64)>],
    p: DVec3,
    embedding: Option<&Embedding>,
) -> [(usize, f64); JOINTS_PER_VERTEX] {
    let mut joints: Vec<(usize, f64)> = Vec::new();
    let mut add = |b: usize, w: f64| {
        let j = lattice.bones[b].joint;
        match joints.iter_mut().find(|e| e.0 == j) {
            Some(e) => e.1 += w,
            None => joints.push((j, w)),
        }
    };
    match embedding {
        Some(e) => {
            for (&a, &w) in lattice.cells[e.cell].iter().zip(&e.weights) {
                for &(b, wb) in &blend[a] {
                    add(b, w * wb);
                }
            }
        }
        None => {
            let near = (0..lattice.vertex_count())
                .min_by(|&a, &b| {
                    p.distance_squared(lattice.rest[a])
                        .total_cmp(&p.distance_squared(lattice.rest[b]))
                })
                .expect("a lattice has vertices");
            for &(b, wb) in &blend[near] {
                add(b, wb);
            }
        }
    }
    four_largest(joints)
}
