//! `plasticine resample`.

use super::args::parse_resolution;
use crate::io::{load_character, save_character};
use anyhow::{Result, bail};
use std::path::PathBuf;

/// The arguments of `plasticine resample`.
#[derive(clap::Args)]
pub struct ResampleArgs {
    character: PathBuf,
    #[arg(long, value_parser = parse_resolution)]
    resolution: (usize, usize),
    #[arg(long)]
    out: PathBuf,
}

impl ResampleArgs {
    pub fn run(self) -> Result<()> {
        let Self {
            character,
            resolution,
            out,
        } = self;

        let mut c = load_character(&character)?;
        if c.skins.is_empty() {
            bail!("{} has no skins to resample", character.display());
        }
        for s in &mut c.skins {
            *s = crate::character::resample(s, resolution.0, resolution.1)
                .map_err(anyhow::Error::msg)?;
        }
        save_character(&out, &c)?;
        println!(
            "Wrote {} with every skin at {}x{}",
            out.display(),
            resolution.0,
            resolution.1
        );

        Ok(())
    }
}
