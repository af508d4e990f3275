//! `plasticine replay`.

use crate::io::{load_character, save_character};
use anyhow::{Context, Result};
use std::path::PathBuf;

/// The arguments of `plasticine replay`.
#[derive(clap::Args)]
pub struct ReplayArgs {
    /// Session file (.ron): (format: "plasticine-session", version: 1, commands: [...]).
    session: PathBuf,
    /// Character to start from (default: the one recorded beside the session, else an
    /// empty character with one root joint).
    #[arg(long)]
    start: Option<PathBuf>,
    /// Where to save the resulting character.
    #[arg(long)]
    out: PathBuf,
}

impl ReplayArgs {
    pub fn run(self) -> Result<()> {
        let Self {
            session,
            start,
            out,
        } = self;

        use crate::tools::{empty_character, load_session, replay};
        let s = load_session(&session)?;
        // The recorded start (beside the session file) unless told otherwise.
        let recorded_start = s.start.as_ref().map(|name| {
            session
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join(name)
        });
        let mut c = match start.as_ref().or(recorded_start.as_ref()) {
            Some(p) => load_character(p).with_context(|| {
                format!(
                    "the character the session starts from ({}); give another with --start",
                    p.display()
                )
            })?,
            None => empty_character(
                session
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("character"),
            ),
        };
        let history = replay(&mut c, &s, &session)?;
        save_character(&out, &c)?;
        println!(
            "Replayed {} commands: {} joints, {} muscles, {} skins (revision {}). Saved {}",
            s.commands.len(),
            c.skeleton.joints.len(),
            c.muscles.len(),
            c.skins.len(),
            history.revision(),
            out.display()
        );

        Ok(())
    }
}
