//! The character a front end edits: the file, a new one, or its autosave.

use crate::io::load_character;
use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

/// Where autosaves live: `$XDG_STATE_HOME/plasticine/autosave`, else
/// `~/.local/state/plasticine/autosave`.
fn autosave_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join("state"))
        })?;
    Some(base.join("plasticine").join("autosave"))
}

/// The character to edit: the file, a new one, or (`recover`) the newest
/// autosave of it; with a note when an autosave from a session that did not
/// end cleanly is there. Returns it with the autosave directory.
pub(crate) fn open_document(
    character: Option<&Path>,
    recover: bool,
) -> Result<(crate::character::Character, Option<PathBuf>)> {
    let stem = character
        .and_then(|p| p.file_stem())
        .and_then(|s| s.to_str())
        .unwrap_or("untitled")
        .to_string();
    let autosaves = autosave_dir();
    let mut model = match character {
        Some(p) => load_character(p)?,
        None => crate::tools::empty_character("untitled"),
    };
    if let Some(dir) = &autosaves {
        let report = crate::io::find_recovery(dir, &stem);
        if let Some(best) = report.best() {
            if recover {
                model = best.load()?;
                eprintln!(
                    "Recovered '{stem}' from the autosave {}",
                    best.path.display()
                );
            } else {
                eprintln!(
                    "note: an autosave of '{stem}' from an earlier session that did not end cleanly \
                     is in {}; run with --recover to open it",
                    best.path.display()
                );
            }
        } else if recover {
            bail!(
                "there is no autosave of '{stem}' in {} to recover",
                dir.display()
            );
        }
    }
    Ok((model, autosaves))
}
