//! `plasticine fem-import`.

use super::args::parse_vec3;
use crate::io::{load_character, save_character};
use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

/// The arguments of `plasticine fem-import`.
#[derive(clap::Args)]
pub struct FemImportArgs {
    /// Mesh file: .obj, .glb, or .gltf with embedded (data:) buffers.
    mesh: PathBuf,
    /// Character file (.ron) whose skeleton, key postures and environment drive the flesh.
    #[arg(long, value_name = "CHARACTER")]
    skeleton: PathBuf,
    /// Where to save the new character (.ron).
    #[arg(long)]
    out: PathBuf,
    /// About how many lattice vertices [default: the skeleton file's FEM setting, else 200].
    #[arg(long, value_name = "N")]
    vertices: Option<usize>,
    /// Young's modulus of the flesh, Pa [default: the skeleton file's FEM setting, else 50000].
    #[arg(long, value_name = "PA")]
    young: Option<f64>,
    /// Poisson's ratio of the flesh, in [0, 0.5) [default: the skeleton file's, else 0.3].
    #[arg(long)]
    poisson: Option<f64>,
    /// Density of the flesh, kg/m³ [default: the skeleton file's, else 1000].
    #[arg(long, value_name = "KG_PER_M3")]
    density: Option<f64>,
    /// Multiply the mesh's coordinates by this (e.g. 0.01 for centimetres).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Then move the mesh by X,Y,Z metres.
    #[arg(long, value_parser = parse_vec3, default_value = "0,0,0", allow_hyphen_values = true)]
    translate: glam::Vec3,
    /// Name of the character [default: the mesh file's name].
    #[arg(long)]
    name: Option<String>,
    /// The flesh: `fem` (Capell's lattice FEM) or `modal` (DyRT: the
    /// lattice's lowest vibration modes per bone, excited by the skeleton;
    /// E defaults to 4 kPa, where the modes sit at a few Hz).
    #[arg(long, default_value = "fem", value_parser = ["fem", "modal"])]
    flesh: String,
}

impl FemImportArgs {
    pub fn run(self) -> Result<()> {
        let Self {
            mesh,
            skeleton,
            out,
            vertices,
            young,
            poisson,
            density,
            scale,
            translate,
            name,
            flesh,
        } = self;
        let modal = flesh == "modal";
        let young = young.or(modal.then_some(crate::character::MODAL_YOUNG));

        let name = name.unwrap_or_else(|| {
            mesh.file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("imported")
                .to_string()
        });
        let options = crate::fem::MeshImport {
            name,
            source: mesh
                .file_name()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
            scale,
            translate,
            target_vertices: vertices,
            young,
            poisson,
            density,
        };
        fem_import(&mesh, &skeleton, &out, &options, modal)?;

        Ok(())
    }
}

/// `plasticine fem-import`: reads the mesh and the skeleton's character,
/// builds and checks the lattice, saves the character, says what it built.
fn fem_import(
    mesh_path: &Path,
    skeleton: &Path,
    out: &Path,
    options: &crate::fem::MeshImport,
    modal: bool,
) -> Result<()> {
    let mesh = crate::io::load_mesh(mesh_path)?;
    let source = load_character(skeleton)?;
    let (mut c, r) =
        crate::fem::fem_character_from_mesh(&mesh.positions, &mesh.triangles, &source, options)
            .map_err(|e| anyhow::anyhow!("{}: {e}", mesh_path.display()))?;
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    if modal {
        to_modal(&mut c)?;
    }
    let size = crate::io::character_to_string(&c)?.len() as u64;
    if size > crate::io::MAX_CHARACTER_FILE_BYTES {
        bail!(
            "{}: the character would be {size} bytes, over the character file limit of {} bytes: decimate the mesh",
            mesh_path.display(),
            crate::io::MAX_CHARACTER_FILE_BYTES
        );
    }
    save_character(out, &c)?;
    println!(
        "Imported {}: {} vertices, {} triangles{}",
        mesh_path.display(),
        r.mesh_vertices,
        r.mesh_triangles,
        if r.open_edges == 0 {
            ", closed".to_string()
        } else {
            format!(", {} open edges", r.open_edges)
        }
    );
    println!(
        "  lattice: {} vertices, {} cells of {:.4} m; {} bones bound to {} vertices",
        r.lattice_vertices, r.lattice_cells, r.cell_size, r.bones, r.bound_vertices
    );
    println!(
        "  embedded all {} mesh vertices (trilinear reconstruction error {:.1e} m)",
        r.embedded_vertices, r.max_embedding_error
    );
    println!(
        "  FEM precompute {:.1} ms; at rest the mesh sags at most {:.4} m under gravity",
        r.precompute_seconds * 1e3,
        r.rest_sag
    );
    println!(
        "Saved '{}' ({} joints, {} key postures) to {}",
        c.name,
        c.skeleton.joints.len(),
        c.key_postures.len(),
        out.display()
    );
    if !(source.muscles.is_empty() && source.skins.is_empty()) {
        println!(
            "  ({}'s {} muscles and {} skins are not kept: the mesh is the flesh and the surface)",
            skeleton.display(),
            source.muscles.len(),
            source.skins.len()
        );
    }
    Ok(())
}

/// Makes the imported FEM flesh modal: a part per bone that owns flesh,
/// with the default modes; prints each part's modes.
fn to_modal(c: &mut crate::character::Character) -> Result<()> {
    use crate::character::{Flesh, ModalFlesh};
    let Flesh::Fem(fem) = std::mem::take(&mut c.flesh) else {
        bail!("the import made no FEM flesh to make modal");
    };
    let parts = ModalFlesh::part_per_bone(c);
    c.flesh = Flesh::Modal(ModalFlesh { fem, parts });
    let rest = c.skeleton.rest_posture();
    let sim = crate::modal::ModalSim::new(c, &|_| rest.clone(), 0.0)
        .map_err(|e| anyhow::anyhow!("cannot compute the modal flesh: {e}"))?;
    // Bones without flesh of their own are no parts.
    let kept: Vec<String> = sim.parts().map(|p| p.name.clone()).collect();
    for p in sim.parts() {
        let hz: Vec<String> = p
            .omega
            .iter()
            .map(|w| format!("{:.2}", w / std::f64::consts::TAU))
            .collect();
        println!(
            "  modal part '{}': {} modes at {} Hz",
            p.name,
            p.omega.len(),
            hz.join(", ")
        );
    }
    for why in sim.skipped() {
        println!("  not a part ({why})");
    }
    if kept.is_empty() {
        bail!("no bone owns enough flesh to vibrate: use --flesh fem");
    }
    if let Flesh::Modal(m) = &mut c.flesh {
        m.parts.retain(|p| kept.contains(&p.joint));
    }
    Ok(())
}
