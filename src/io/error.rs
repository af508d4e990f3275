//! The one error type of the `io` module. Every variant names the file; parse
//! errors add the line and column, validation errors the field path, binary
//! format errors the byte offset.

use std::fmt;
use std::path::{Path, PathBuf};

/// Shows a path the way the user typed it.
struct Shown<'a>(&'a Path);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.display())
    }
}

/// Anything that can go wrong reading or writing a Plasticine file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IoError {
    /// The operating system refused an operation (`action` says which).
    #[error("{}: cannot {action}: {source}", Shown(path))]
    Os {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: std::io::Error,
    },

    /// The file is larger than this build is willing to read.
    #[error(
        "{}: file is {size} bytes, larger than the limit of {limit} bytes",
        Shown(path)
    )]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },

    /// The text is not valid UTF-8.
    #[error("{}:{line}:{col}: not valid UTF-8 (byte {offset})", Shown(path))]
    NotUtf8 {
        path: PathBuf,
        offset: usize,
        line: usize,
        col: usize,
    },

    /// RON syntax error, or a missing / unknown / mistyped field.
    /// `message` is RON's own text (it names the field).
    #[error("{}:{line}:{col}: {message}", Shown(path))]
    Parse {
        path: PathBuf,
        line: usize,
        col: usize,
        message: String,
    },

    /// The `format` header is not the one this reader expects.
    #[error("{}: not a {expected} file (its format is \"{found}\")", Shown(path))]
    WrongFormat {
        path: PathBuf,
        expected: &'static str,
        found: String,
    },

    /// The file was written by a newer build.
    #[error(
        "{}: written by a newer Plasticine: version {version}, this build reads up to {supported}",
        Shown(path)
    )]
    NewerVersion {
        path: PathBuf,
        version: u32,
        supported: u32,
    },

    /// An older version for which no migration exists.
    #[error(
        "{}: format version {version} is not one this build can migrate (it reads versions {oldest} to {supported})",
        Shown(path)
    )]
    UnknownVersion {
        path: PathBuf,
        version: u32,
        oldest: u32,
        supported: u32,
    },

    /// The content parsed but breaks an invariant of the model.
    #[error("{}: {field}: {message}", Shown(path))]
    Invalid {
        path: PathBuf,
        field: String,
        message: String,
    },

    /// A binary file is corrupt at the given byte offset.
    #[error("{}: byte {offset}: {message}", Shown(path))]
    Corrupt {
        path: PathBuf,
        offset: u64,
        message: String,
    },

    /// A binary file ends before the data it announces.
    #[error(
        "{}: truncated at byte {offset}: {what} needs {needed} more bytes, the file has {len} bytes",
        Shown(path)
    )]
    Truncated {
        path: PathBuf,
        offset: u64,
        what: String,
        needed: u64,
        len: u64,
    },

    /// The caller passed data that does not fit the file being written
    /// (wrong number of skins or points, non-finite values, ...).
    #[error("{}: {message}", Shown(path))]
    BadInput { path: PathBuf, message: String },

    /// Serialization failed (should not happen for valid data).
    #[error("{}: cannot serialize: {message}", Shown(path))]
    Serialize { path: PathBuf, message: String },
}

impl IoError {
    pub(crate) fn os(path: &Path, action: &'static str, source: std::io::Error) -> Self {
        IoError::Os {
            path: path.to_path_buf(),
            action,
            source,
        }
    }

    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            IoError::Os { path, .. }
            | IoError::TooLarge { path, .. }
            | IoError::NotUtf8 { path, .. }
            | IoError::Parse { path, .. }
            | IoError::WrongFormat { path, .. }
            | IoError::NewerVersion { path, .. }
            | IoError::UnknownVersion { path, .. }
            | IoError::Invalid { path, .. }
            | IoError::Corrupt { path, .. }
            | IoError::Truncated { path, .. }
            | IoError::BadInput { path, .. }
            | IoError::Serialize { path, .. } => path,
        }
    }
}
