//! The folder a file is written in: which one it is, and the space left
//! there (what a full-disk error tells the user).

use std::path::Path;

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Bytes an ordinary user can still write on the file system holding
/// `dir`, if the system says.
#[cfg(unix)]
#[allow(
    unsafe_code,
    reason = "statvfs(3) is the C call that reports a file system's free space"
)]
pub(crate) fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs is plain old data, for which all zeroes is a value.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and outlives the call; `stat` is a
    // valid, writable statvfs.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut stat) };
    #[allow(
        clippy::unnecessary_cast,
        reason = "the field types differ between platforms"
    )]
    (rc == 0).then(|| stat.f_bavail as u64 * stat.f_frsize as u64)
}

#[cfg(not(unix))]
pub(crate) fn free_bytes(_dir: &Path) -> Option<u64> {
    None
}
