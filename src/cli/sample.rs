//! `plasticine sample`.

use super::args::parse_resolution;
use crate::io::save_character;
use anyhow::Result;
use std::path::PathBuf;

/// The arguments of `plasticine sample`.
#[derive(clap::Args)]
pub struct SampleArgs {
    name: String,
    #[arg(long)]
    out: PathBuf,
    /// Skin resolution `MxN`.
    #[arg(long, value_parser = parse_resolution, default_value = "16x16")]
    resolution: (usize, usize),
    /// The flesh under the skin: kinematic muscles, or FEM flesh (Capell 2002) with
    /// its default settings, the muscles riding on a simulated lattice; fem-detail
    /// adds adaptive detail (§4.7) where the flesh is distorted; modal vibrates in the
    /// lowest modes of that lattice (DyRT), a part per joint that carries muscles.
    #[arg(long, value_parser = ["kinematic", "fem", "fem-detail", "modal"], default_value = "kinematic")]
    flesh: String,
}

impl SampleArgs {
    pub fn run(self) -> Result<()> {
        let Self {
            name,
            out,
            resolution,
            flesh,
        } = self;

        let backend = match flesh.as_str() {
            "modal" => {
                let bare = crate::samples::bare(&name).ok_or_else(|| {
                    anyhow::anyhow!(
                        "unknown sample '{name}': choose one of {}",
                        crate::samples::known_names()
                    )
                })?;
                crate::character::Flesh::Modal(crate::character::ModalFlesh::for_character(&bare))
            }
            "fem" => crate::character::Flesh::Fem(Default::default()),
            "fem-detail" => crate::character::Flesh::Fem(crate::character::FemFlesh {
                detail: Some(Default::default()),
                ..Default::default()
            }),
            _ => crate::character::Flesh::Kinematic,
        };
        let c = crate::samples::build_with_flesh(&name, resolution.0, resolution.1, backend)?;
        save_character(&out, &c)?;
        let skins = c.skins.len();
        println!(
            "Wrote the {name} ({skins} skin{} at {}x{}, {flesh} flesh) to {}",
            if skins == 1 { "" } else { "s" },
            resolution.0,
            resolution.1,
            out.display()
        );

        Ok(())
    }
}
