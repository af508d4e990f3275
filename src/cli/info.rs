//! `plasticine info`.

use anyhow::Result;
use plasticine::io::load_character;
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
            if let Some(m) = &f.embedded_mesh {
                println!(
                    "  embedded mesh '{}': {} vertices, {} triangles",
                    m.source,
                    m.positions.len(),
                    m.triangles.len()
                );
            }
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
