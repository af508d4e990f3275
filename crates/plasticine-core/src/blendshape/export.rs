//! A character's blendshapes as an export's rig: the embedded mesh skinned
//! to the skeleton by the flesh's region weights, one morph target per
//! blend target (its offsets from the base), the weights keyed in the key
//! postures. A DCC tool blends these linearly; the bake's physical blend is
//! what a point-cache export carries.

use crate::character::Character;
use crate::fem::{
    FleshError, NARROW_BLEND, flesh_lattice, joint_weights, painted_weights, vertex_bones,
};
use crate::io::{MorphWeights, SkinnedMorphs, SkinnedTarget, mesh_name, mesh_normals};
use crate::morph::unit_sum;

/// `character`'s blendshapes as a rig to export, or `None` when its flesh
/// has no embedded mesh with blend targets.
pub fn blend_morphs(character: &Character) -> Result<Option<SkinnedMorphs>, FleshError> {
    let Some(flesh) = character.flesh.fem() else {
        return Ok(None);
    };
    let (Some(mesh), Some(shapes)) = (&flesh.embedded_mesh, &flesh.blendshapes) else {
        return Ok(None);
    };
    let (lattice, _) = flesh_lattice(character, flesh)?;
    let width = flesh.blend_width.unwrap_or(NARROW_BLEND);
    let weights = painted_weights(&lattice, width, &flesh.weight_strokes)?;
    let blend = vertex_bones(&lattice, &weights);
    let skin: Vec<_> = mesh
        .positions
        .iter()
        .map(|p| {
            let p = p.as_dvec3();
            joint_weights(&lattice, &blend, p, lattice.embed(p).as_ref())
        })
        .collect();
    let mut normals = Vec::new();
    mesh_normals(&mesh.triangles, &mesh.positions, &mut normals);
    let mut target_normals = Vec::new();
    let targets = shapes
        .targets
        .iter()
        .map(|t| {
            mesh_normals(&mesh.triangles, &t.positions, &mut target_normals);
            SkinnedTarget {
                name: t.name.clone(),
                positions: t
                    .positions
                    .iter()
                    .zip(&mesh.positions)
                    .map(|(t, b)| *t - *b)
                    .collect(),
                normals: target_normals
                    .iter()
                    .zip(&normals)
                    .map(|(t, b)| *t - *b)
                    .collect(),
                scale: 1.0,
            }
        })
        .collect();
    Ok(Some(SkinnedMorphs {
        name: mesh_name(mesh),
        positions: mesh.positions.clone(),
        normals,
        joints: skin.iter().map(|s| s.map(|e| e.0 as u16)).collect(),
        weights: skin.iter().map(|s| unit_sum(s.map(|e| e.1))).collect(),
        triangles: mesh.triangles.clone(),
        targets,
        animated: MorphWeights::Keyed,
    }))
}
