//! The sample limb (`assets/limb.obj` on `assets/limb_skeleton.ron`) made
//! into an FEM character as `plasticine fem-import` makes it.

#![allow(dead_code, reason = "each test module uses some of the fixtures")]

use glam::Vec3;
use plasticine::character::Character;
use plasticine::io::ImportedMesh;

/// The imported limb's character (a lattice of about 150 vertices) and the
/// mesh it embeds.
pub fn imported_limb() -> (Character, ImportedMesh) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    let mesh = plasticine::io::load_mesh(&root.join("limb.obj")).unwrap();
    let skeleton = plasticine::io::load_character(&root.join("limb_skeleton.ron")).unwrap();
    let options = plasticine::fem::MeshImport {
        name: "limb".into(),
        source: "limb.obj".into(),
        scale: 1.0,
        translate: Vec3::ZERO,
        target_vertices: Some(150),
        young: None,
        poisson: None,
        density: None,
    };
    let (c, _) = plasticine::fem::fem_character_from_mesh(
        &mesh.positions,
        &mesh.triangles,
        &skeleton,
        &options,
    )
    .unwrap();
    (c, mesh)
}
