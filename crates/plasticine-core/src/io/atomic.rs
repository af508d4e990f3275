//! Atomic file replacement: every file Plasticine writes goes through here.
//!
//! The data is written to a temporary file in the target's directory (same
//! file system, so the rename is atomic), flushed and `fsync`ed, renamed over
//! the target, and finally the directory is `fsync`ed so the rename itself is
//! durable. Readers therefore see either the old file or the complete new one,
//! never a mix, even across a crash or power loss.
//!
//! Temporary files (`tempfile`'s, in the target's directory) are named
//! `.<target name>.<random>.tmp`. On any error,
//! and when an [`AtomicFile`] is dropped without [`AtomicFile::commit`], the
//! temporary file is removed and the target is left untouched. Only a process
//! killed outright (no destructors) leaves a temporary file behind; it is
//! complete up to the last write, which is what makes a killed bake's cache
//! prefix recoverable (see [`crate::io::cache`]).

use super::IoError;
pub(crate) use super::folder::parent_dir;
use std::fs::{self, File};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// Writes `bytes` to `path` atomically (see the module docs). Creates the
/// parent directories if needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), IoError> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)
        .map_err(|e| IoError::os(path, "write", e))?;
    file.commit()
}

/// A file being written that replaces `target` only on [`commit`](Self::commit).
///
/// Writes are buffered. Dropping it without committing removes the temporary
/// file and leaves the target as it was. It also implements [`Seek`], so a
/// writer can patch a header before committing.
#[derive(Debug)]
pub struct AtomicFile {
    target: PathBuf,
    file: Option<BufWriter<NamedTempFile>>,
}

impl AtomicFile {
    /// Starts writing a replacement for `target`, creating its parent
    /// directories if needed.
    pub fn create(target: &Path) -> Result<Self, IoError> {
        let name = target.file_name().ok_or_else(|| IoError::BadInput {
            path: target.to_path_buf(),
            message: "not a file path (no file name)".into(),
        })?;
        let dir = parent_dir(target);
        fs::create_dir_all(dir).map_err(|e| IoError::os(dir, "create the directory", e))?;
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        // As an ordinary new file (0o666 less the umask), not tempfile's
        // private 0o600: exports are read by other programs and users.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(fs::Permissions::from_mode(0o666));
        }
        let file = builder
            .tempfile_in(dir)
            .map_err(|e| IoError::os(target, "write", e))?;
        // Keep the permissions of the file being replaced.
        if let Ok(meta) = fs::metadata(target)
            && meta.is_file()
        {
            let _ = file.as_file().set_permissions(meta.permissions());
        }
        Ok(Self {
            target: target.to_path_buf(),
            file: Some(BufWriter::with_capacity(1 << 16, file)),
        })
    }

    /// The file that will be replaced.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The temporary file being written.
    pub fn temp_path(&self) -> &Path {
        self.file
            .as_ref()
            .expect("file present until commit or drop")
            .get_ref()
            .path()
    }

    /// Flushes, syncs and renames the temporary file over the target, then
    /// syncs the directory. On error the target is untouched and the temporary
    /// file removed.
    pub fn commit(mut self) -> Result<(), IoError> {
        let writer = self.file.take().expect("file present until commit or drop");
        // Dropping the temporary file on any error below removes it.
        let file = writer
            .into_inner()
            .map_err(|e| IoError::os(&self.target, "write", e.into_error()))?;
        file.as_file()
            .sync_all()
            .map_err(|e| IoError::os(&self.target, "sync", e))?;
        file.persist(&self.target)
            .map_err(|e| IoError::os(&self.target, "replace the file", e.error))?;
        sync_dir(parent_dir(&self.target))
    }

    fn writer(&mut self) -> &mut BufWriter<NamedTempFile> {
        self.file
            .as_mut()
            .expect("file present until commit or drop")
    }
}

#[cfg(unix)]
pub(crate) fn sync_dir(dir: &Path) -> Result<(), IoError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| IoError::os(dir, "sync the directory", e))
}

#[cfg(not(unix))]
pub(crate) fn sync_dir(_dir: &Path) -> Result<(), IoError> {
    // Directories cannot be opened for syncing on this platform; the rename
    // is still atomic, only its durability across power loss is weaker.
    Ok(())
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

impl Seek for AtomicFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.writer().seek(pos)
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if let Some(writer) = self.file.take() {
            // Not committed: throw the partial file away, unflushed
            // (dropping the temporary file removes it).
            drop(writer.into_parts());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn replaces_and_creates_parents() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/c.txt");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert!(leftovers(p.parent().unwrap()).is_empty());
    }

    #[test]
    fn drop_without_commit_keeps_old_file_and_removes_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.bin");
        write_atomic(&p, b"old").unwrap();
        {
            let mut f = AtomicFile::create(&p).unwrap();
            f.write_all(&[7u8; 100_000]).unwrap();
            assert!(f.temp_path().exists());
        }
        assert_eq!(fs::read(&p).unwrap(), b"old");
        assert!(leftovers(dir.path()).is_empty());
    }

    #[test]
    fn seek_patches_before_commit() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.bin");
        let mut f = AtomicFile::create(&p).unwrap();
        f.write_all(b"0000abcd").unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        f.write_all(b"12").unwrap();
        f.commit().unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"1200abcd");
    }
}
