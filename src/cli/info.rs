//! `plasticine info`.

use crate::io::load_character;
use anyhow::Result;
use std::path::PathBuf;

/// The arguments of `plasticine info`.
#[derive(clap::Args)]
pub struct InfoArgs {
    character: PathBuf,
}

impl InfoArgs {
    pub fn run(self) -> Result<()> {
        let Self { character } = self;

        let c = load_character(&character)?;
        println!("{}: '{}' is valid.", character.display(), c.name);
        println!(
            "  {} joints, {} muscles, {} skins",
            c.skeleton.joints.len(),
            c.muscles.len(),
            c.skins.len()
        );
        for s in &c.skins {
            let bands = s.points.band.iter().filter(|b| b.is_some()).count();
            println!(
                "  skin '{}': {}x{} from joint '{}' to '{}', {} bands of connective tissue, fat {:.3}..{:.3} m",
                s.name,
                s.m,
                s.n,
                c.skeleton.joints[s.bottom_joint].name,
                c.skeleton.joints[s.top_joint].name,
                bands,
                s.points.fat.iter().copied().fold(f32::MAX, f32::min),
                s.points.fat.iter().copied().fold(f32::MIN, f32::max)
            );
        }
        if let Some(f) = c.flesh.fem() {
            println!(
                "  FEM flesh: about {} lattice vertices, E {} Pa, ν {}, ρ {} kg/m³, {} painted weight strokes",
                f.target_vertices,
                f.young,
                f.poisson,
                f.density,
                f.weight_strokes.len()
            );
            if let Some(d) = &f.detail {
                println!(
                    "  adaptive detail: {} level(s), refined above {} strain, coarsened below {}",
                    d.levels, d.refine_strain, d.coarsen_strain
                );
            }
            for p in &f.part_stiffness {
                println!("  part '{}': E x{}", p.joint, p.scale);
            }
            for t in &f.morph_targets {
                let parts: Vec<String> = t
                    .part_stiffness
                    .iter()
                    .map(|p| format!(", '{}' x{}", p.joint, p.scale))
                    .collect();
                println!(
                    "  morph target '{}': {} offsets (largest {:.1} mm), stiffness x{}{}",
                    t.name,
                    t.offsets.len(),
                    t.offsets
                        .iter()
                        .map(|o| o.offset.length())
                        .fold(0.0, f32::max)
                        * 1e3,
                    t.stiffness,
                    parts.concat()
                );
            }
            if let Some(m) = &f.embedded_mesh {
                println!(
                    "  embedded mesh '{}': {} vertices, {} triangles",
                    m.source,
                    m.positions.len(),
                    m.triangles.len()
                );
            }
            if let Some(b) = &f.blendshapes {
                let names: Vec<&str> = b.targets.iter().map(|t| t.name.as_str()).collect();
                let keyed = c
                    .key_postures
                    .iter()
                    .filter(|k| k.posture.blend.iter().any(|&w| w > 0.0))
                    .count();
                println!(
                    "  blendshapes: {} targets ({}), {} blend; {keyed} key postures weight them",
                    names.len(),
                    names.join(", "),
                    if b.linear { "linear" } else { "physical" }
                );
            }
        }
        if c.flesh.modal().is_some() {
            print_modes(&c)?;
        }
        if c.key_postures.is_empty() {
            println!("  no key postures");
        } else {
            println!(
                "  {} key postures over {:.2} s",
                c.key_postures.len(),
                c.motion_duration()
            );
        }

        Ok(())
    }
}

/// The modal flesh's parts and each mode's frequency and damping (computed
/// now: the modes are not stored in the file).
fn print_modes(c: &crate::character::Character) -> Result<()> {
    let rest = c.skeleton.rest_posture();
    let start = std::time::Instant::now();
    let sim = crate::modal::ModalSim::new(c, &|_| rest.clone(), 0.0)?;
    println!(
        "  modal flesh: {} lattice vertices, modes computed in {:.2} s",
        sim.lattice().vertex_count(),
        start.elapsed().as_secs_f64()
    );
    for p in sim.parts() {
        let modes: Vec<String> = p
            .omega
            .iter()
            .zip(&p.damping)
            .map(|(w, xi)| format!("{:.2} Hz (ξ {:.3})", w / std::f64::consts::TAU, xi))
            .collect();
        println!(
            "  part '{}': {} free vertices, {} modes{}: {}",
            p.name,
            p.free.len(),
            p.omega.len(),
            if p.dropped > 0 {
                format!(
                    " ({} dropped: overdamped or not excited by the bone)",
                    p.dropped
                )
            } else {
                String::new()
            },
            modes.join(", ")
        );
    }
    for e in sim.skipped() {
        println!("  rides rigidly: {e}");
    }
    Ok(())
}
