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
        /// The file the operation was on.
        path: PathBuf,
        /// The operation that failed, as a verb phrase (e.g. `"read"`, `"replace the file"`).
        action: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// The file is larger than this build is willing to read.
    #[error(
        "{}: file is {size} bytes, larger than the limit of {limit} bytes",
        Shown(path)
    )]
    TooLarge {
        /// The file that is too large.
        path: PathBuf,
        /// Its size, in bytes.
        size: u64,
        /// The largest size this build reads, in bytes.
        limit: u64,
    },

    /// The text is not valid UTF-8.
    #[error("{}:{line}:{col}: not valid UTF-8 (byte {offset})", Shown(path))]
    NotUtf8 {
        /// The file with the invalid text.
        path: PathBuf,
        /// Byte offset of the first invalid byte.
        offset: usize,
        /// Line of the first invalid byte, counting from 1.
        line: usize,
        /// Column of the first invalid byte in characters, counting from 1.
        col: usize,
    },

    /// RON syntax error, or a missing / unknown / mistyped field.
    /// `message` is RON's own text (it names the field).
    #[error("{}:{line}:{col}: {message}", Shown(path))]
    Parse {
        /// The file that failed to parse.
        path: PathBuf,
        /// Line of the error, counting from 1.
        line: usize,
        /// Column of the error, counting from 1.
        col: usize,
        /// The parser's description of the error.
        message: String,
    },

    /// The `format` header is not the one this reader expects.
    #[error("{}: not a {expected} file (its format is \"{found}\")", Shown(path))]
    WrongFormat {
        /// The file with the wrong header.
        path: PathBuf,
        /// The `format` string this reader expects.
        expected: &'static str,
        /// The `format` string found in the file.
        found: String,
    },

    /// The file was written by a newer build.
    #[error(
        "{}: written by a newer Plasticine: version {version}, this build reads up to {supported}",
        Shown(path)
    )]
    NewerVersion {
        /// The file written by a newer build.
        path: PathBuf,
        /// The format version found in the file.
        version: u32,
        /// The newest format version this build reads.
        supported: u32,
    },

    /// An older version for which no migration exists.
    #[error(
        "{}: format version {version} is not one this build can migrate (it reads versions {oldest} to {supported})",
        Shown(path)
    )]
    UnknownVersion {
        /// The file with the unknown version.
        path: PathBuf,
        /// The format version found in the file.
        version: u32,
        /// The oldest format version this build can migrate.
        oldest: u32,
        /// The newest format version this build reads.
        supported: u32,
    },

    /// The content parsed but breaks an invariant of the model.
    #[error("{}: {field}: {message}", Shown(path))]
    Invalid {
        /// The file whose content is invalid.
        path: PathBuf,
        /// Path of the offending field (e.g. `muscles[3].joint`).
        field: String,
        /// What invariant the field breaks.
        message: String,
    },

    /// A binary file is corrupt at the given byte offset.
    #[error("{}: byte {offset}: {message}", Shown(path))]
    Corrupt {
        /// The corrupt file.
        path: PathBuf,
        /// Byte offset of the corruption.
        offset: u64,
        /// What is wrong at that offset.
        message: String,
    },

    /// A binary file ends before the data it announces.
    #[error(
        "{}: truncated at byte {offset}: {what} needs {needed} more bytes, the file has {len} bytes",
        Shown(path)
    )]
    Truncated {
        /// The truncated file.
        path: PathBuf,
        /// Byte offset where the missing data starts.
        offset: u64,
        /// What the missing data is (e.g. a frame of the cache).
        what: String,
        /// Bytes that data needs from `offset` on.
        needed: u64,
        /// Length of the file, in bytes.
        len: u64,
    },

    /// The caller passed data that does not fit the file being written
    /// (wrong number of skins or points, non-finite values, ...).
    #[error("{}: {message}", Shown(path))]
    BadInput {
        /// The file being written.
        path: PathBuf,
        /// What is wrong with the data.
        message: String,
    },

    /// The file system the file is written to is full (or over quota).
    #[error(
        "{}: cannot {action}: the file system holding {} is full ({}); free some space there, or write somewhere else",
        Shown(path),
        Shown(dir),
        Free(*free)
    )]
    DiskFull {
        /// The file being written.
        path: PathBuf,
        /// The folder it is written in.
        dir: PathBuf,
        /// The operation that failed, as a verb phrase.
        action: &'static str,
        /// Bytes left to an ordinary user on that file system, if known.
        free: Option<u64>,
    },

    /// The folder the file is written in cannot be written to.
    #[error(
        "{}: cannot {action}: {} is read-only or not writable ({source}); write somewhere else",
        Shown(path),
        Shown(dir)
    )]
    ReadOnly {
        /// The file being written.
        path: PathBuf,
        /// The folder it is written in.
        dir: PathBuf,
        /// The operation that failed, as a verb phrase.
        action: &'static str,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// Serialization failed (should not happen for valid data).
    #[error("{}: cannot serialize: {message}", Shown(path))]
    Serialize {
        /// The file being written.
        path: PathBuf,
        /// The serializer's description of the failure.
        message: String,
    },
}

/// Free space as the user reads it.
struct Free(Option<u64>);

impl fmt::Display for Free {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(b) if b >= 1 << 20 => write!(f, "{:.1} MB free", b as f64 / 1e6),
            Some(b) => write!(f, "{} kB free", b.div_ceil(1000)),
            None => write!(f, "no space left"),
        }
    }
}

impl IoError {
    /// An operating-system error on `path`; a full disk or a read-only
    /// folder becomes [`IoError::DiskFull`] or [`IoError::ReadOnly`], which
    /// say what to do.
    pub fn os(path: &Path, action: &'static str, source: std::io::Error) -> Self {
        use std::io::ErrorKind;
        let dir = || super::folder::parent_dir(path).to_path_buf();
        match source.kind() {
            ErrorKind::StorageFull | ErrorKind::QuotaExceeded => IoError::DiskFull {
                path: path.to_path_buf(),
                free: super::folder::free_bytes(&dir()),
                dir: dir(),
                action,
            },
            ErrorKind::ReadOnlyFilesystem | ErrorKind::PermissionDenied
                if action != "read" && action != "open" =>
            {
                IoError::ReadOnly {
                    path: path.to_path_buf(),
                    dir: dir(),
                    action,
                    source,
                }
            }
            _ => IoError::Os {
                path: path.to_path_buf(),
                action,
                source,
            },
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
            | IoError::DiskFull { path, .. }
            | IoError::ReadOnly { path, .. }
            | IoError::Serialize { path, .. } => path,
        }
    }
}
