//! Recorded editing sessions: the commands an animator applied, in order, as a
//! versioned RON file. Replaying one from the same start rebuilds the same
//! character, which is how sessions are shared, how bugs are reported, and how
//! the tests drive the tools headless.

use super::{Command, EditError, History};
use crate::character::{Character, Dof, Environment, Joint, Skeleton};
use glam::{Quat, Vec3};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `format` tag of a session file.
pub const SESSION_FORMAT: &str = "plasticine-session";
/// Version 2 added `start`; version 1 files still load.
pub const SESSION_FORMAT_VERSION: u32 = 2;

/// A recorded editing session: the commands applied to a character, in order,
/// as saved in a RON file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Session {
    /// Always `SESSION_FORMAT`: `load_session` refuses any other.
    pub format: String,
    /// Format version the file was written in; `load_session` refuses versions newer
    /// than `SESSION_FORMAT_VERSION`.
    pub version: u32,
    /// The character file the session started from, relative to the
    /// session file's folder (`None`: an empty character). `plasticine
    /// replay` uses it when no `--start` is given.
    #[serde(default)]
    pub start: Option<String>,
    /// The commands, in the order they were applied.
    pub commands: Vec<Command>,
}

impl Session {
    /// A session of these commands in the current format and version, with no start
    /// file.
    pub fn new(commands: Vec<Command>) -> Self {
        Self {
            format: SESSION_FORMAT.into(),
            version: SESSION_FORMAT_VERSION,
            start: None,
            commands,
        }
    }
}

/// Records an editing session from a front end (`--record FILE`): the
/// history's effective commands (what undo left standing, in order),
/// rewritten atomically when they change, at most once per
/// [`SessionRecorder::INTERVAL`] and at the end. A crash loses at most that
/// interval. The character the session started from is saved beside it
/// (`FILE.start.ron`: the document itself may be saved over during the
/// session), so `plasticine replay FILE` rebuilds the character alone.
#[derive(Debug)]
pub struct SessionRecorder {
    path: std::path::PathBuf,
    start: Option<String>,
    written_revision: Option<u64>,
    last_write: Option<std::time::Instant>,
    /// Commands in the last file written.
    pub written_commands: usize,
}

impl SessionRecorder {
    /// Shortest time between two rewrites of the file (1 s).
    pub const INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

    /// Starts recording to `path`, from `start`. Both files are written at
    /// once, so a path that cannot be written fails now rather than after
    /// an hour's work.
    pub fn new(path: &Path, start: &Character) -> Result<Self, SessionError> {
        let name =
            path.file_name()
                .and_then(|n| n.to_str())
                .ok_or_else(|| SessionError::Write {
                    path: path.display().to_string(),
                    message: "not a file name".into(),
                })?;
        let start_name = format!("{}.start.ron", name.trim_end_matches(".ron"));
        let start_path = path.with_file_name(&start_name);
        crate::io::save_character(&start_path, start).map_err(|e| SessionError::Write {
            path: start_path.display().to_string(),
            message: e.to_string(),
        })?;
        let mut r = Self {
            path: path.to_path_buf(),
            start: Some(start_name),
            written_revision: None,
            last_write: None,
            written_commands: 0,
        };
        r.write(&[])?;
        Ok(r)
    }

    /// The file the session is recorded to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write(&mut self, commands: &[Command]) -> Result<(), SessionError> {
        let session = Session {
            start: self.start.clone(),
            ..Session::new(commands.to_vec())
        };
        let text = ron::ser::to_string_pretty(&session, ron::ser::PrettyConfig::default())
            .map_err(|e| SessionError::Write {
                path: self.path.display().to_string(),
                message: e.to_string(),
            })?;
        crate::io::write_atomic(&self.path, text.as_bytes()).map_err(|e| SessionError::Write {
            path: self.path.display().to_string(),
            message: e.to_string(),
        })?;
        self.last_write = Some(std::time::Instant::now());
        self.written_commands = commands.len();
        Ok(())
    }

    /// Rewrites the file if the history moved and the interval has passed.
    /// Returns whether it wrote.
    pub fn update(&mut self, history: &History) -> Result<bool, SessionError> {
        let due = self
            .last_write
            .is_none_or(|t| t.elapsed() >= Self::INTERVAL);
        if !due || self.written_revision == Some(history.revision()) {
            return Ok(false);
        }
        self.flush(history)?;
        Ok(true)
    }

    /// Writes the history at the end of a session; what to tell the user.
    pub fn finish(&mut self, history: &History) -> String {
        match self.flush(history) {
            Ok(()) => format!(
                "the session ({} commands) was recorded to {} (replay: plasticine replay {} --out FILE)",
                self.written_commands,
                self.path.display(),
                self.path.display()
            ),
            Err(e) => format!("the session could NOT be recorded: {e}"),
        }
    }

    /// Writes the history now.
    pub fn flush(&mut self, history: &History) -> Result<(), SessionError> {
        self.write(&history.recorded())?;
        self.written_revision = Some(history.revision());
        Ok(())
    }
}

/// Why a session could not be recorded, read or replayed.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// `path` (the session file, or the character it starts from) could not be
    /// written; `message` says why.
    #[error("{path}: cannot write the recorded session: {message}")]
    Write {
        /// The file that could not be written.
        path: String,
        /// Why not.
        message: String,
    },
    /// The session file could not be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The session file is not valid RON for a session.
    #[error("{path}:{line}:{col}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// Line of the error.
        line: usize,
        /// Column of the error.
        col: usize,
        /// What the parser found wrong.
        message: String,
    },
    /// The file is not a session, or is of a newer version than this build reads.
    #[error(
        "{path}: not a Plasticine session (format '{found}', expected '{SESSION_FORMAT}', version {version})"
    )]
    Format {
        /// The file.
        path: String,
        /// The `format` tag the file has.
        found: String,
        /// The version the file has.
        version: u32,
    },
    /// A command of the session was refused during replay.
    #[error("{path}: command {index} ({kind}): {source}")]
    Command {
        /// The session file.
        path: String,
        /// Position of the command in the session, from 0.
        index: usize,
        /// The command's variant name, such as `AddJoint`.
        kind: String,
        /// Why the command was refused.
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
        flesh: Default::default(),
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
