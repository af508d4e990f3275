//! Recorded editing sessions: the commands an animator applied, in order, as a
//! versioned RON file. Replaying one from the same start rebuilds the same
//! character, which is how sessions are shared, how bugs are reported, and how
//! the tests drive the tools headless.

use super::{Command, EditError, History};
use crate::character::{Character, Dof, Environment, Joint, Skeleton};
use glam::{Quat, Vec3};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub const SESSION_FORMAT: &str = "plasticine-session";
pub const SESSION_FORMAT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    pub format: String,
    pub version: u32,
    pub commands: Vec<Command>,
}

impl Session {
    pub fn new(commands: Vec<Command>) -> Self {
        Self {
            format: SESSION_FORMAT.into(),
            version: SESSION_FORMAT_VERSION,
            commands,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{path}: cannot read: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{col}: {message}")]
    Parse {
        path: String,
        line: usize,
        col: usize,
        message: String,
    },
    #[error(
        "{path}: not a Plasticine session (format '{found}', expected '{SESSION_FORMAT}', version {version})"
    )]
    Format {
        path: String,
        found: String,
        version: u32,
    },
    #[error("{path}: command {index} ({kind}): {source}")]
    Command {
        path: String,
        index: usize,
        kind: String,
        source: EditError,
    },
}

/// A new character with nothing but a root joint at the origin: where a
/// session "from nothing" starts.
pub fn empty_character(name: &str) -> Character {
    Character {
        name: name.into(),
        skeleton: Skeleton {
            joints: vec![Joint {
                locked: false,
                name: "root".into(),
                parent: None,
                offset: Vec3::ZERO,
                rest_rotation: Quat::IDENTITY,
                dofs: [Dof::default(); 3],
            }],
        },
        muscles: vec![],
        skins: vec![],
        environment: Environment::default(),
        key_postures: vec![],
    }
}

/// Reads a session file; errors name the file, the line and the column.
pub fn load_session(path: &Path) -> Result<Session, SessionError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| SessionError::Read {
        path: shown.clone(),
        source,
    })?;
    let session: Session = ron::Options::default()
        .with_recursion_limit(128)
        .from_str(&text)
        .map_err(|e| SessionError::Parse {
            path: shown.clone(),
            line: e.span.start.line,
            col: e.span.start.col,
            message: e.code.to_string(),
        })?;
    if session.format != SESSION_FORMAT || session.version > SESSION_FORMAT_VERSION {
        return Err(SessionError::Format {
            path: shown,
            found: session.format,
            version: session.version,
        });
    }
    Ok(session)
}

/// Applies every command in order. On the first refused command, stops and
/// names it; the character then holds the edits before it.
pub fn replay(
    character: &mut Character,
    session: &Session,
    origin: &Path,
) -> Result<History, SessionError> {
    let mut history = History::new(character);
    for (index, cmd) in session.commands.iter().enumerate() {
        let kind = format!("{cmd:?}")
            .split([' ', '{', '('])
            .next()
            .unwrap_or("?")
            .to_string();
        history
            .apply(character, cmd.clone())
            .map_err(|source| SessionError::Command {
                path: origin.display().to_string(),
                index,
                kind,
                source,
            })?;
    }
    Ok(history)
}
