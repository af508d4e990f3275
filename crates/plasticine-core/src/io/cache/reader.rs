//! Reading a cache (format in the parent module's docs): the header checked
//! against the file's length, then any frame by index, bounds-checked, with
//! every damage reported as truncation or corruption at its offset.

use super::flesh::{
    self, CacheFlesh, CacheMesh, CacheModalPart, MAX_CACHE_MESHES, MAX_CACHE_MUSCLES,
};
use super::{
    CACHE_FORMAT_VERSION, CACHE_MAGIC, CHECKSUM_BYTES, CacheSkin, FRAME_COUNT_OFFSET,
    MAX_CACHE_SKINS, UNFINISHED_FRAME_COUNT, bytes_per_frame, check_skin, header_checksum,
};
use crate::io::IoError;
use glam::{Affine3A, Vec3};
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Reads a cache file, one frame at a time, in any order.
#[derive(Debug)]
pub struct CacheReader {
    path: PathBuf,
    file: BufReader<File>,
    /// Current position of `file`.
    pos: u64,
    file_len: u64,
    fps: f32,
    skins: Vec<CacheSkin>,
    flesh: CacheFlesh,
    version: u32,
    pub(super) header_len: u64,
    pub(super) frame_bytes: u64,
    frames: u64,
    complete: bool,
    buf: Vec<u8>,
    /// The root frame of the frame last read with its flesh.
    root: Option<Affine3A>,
}

/// One decoded frame.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheFrame {
    /// Time of the frame, in s.
    pub time: f64,
    /// Per skin, its m·n positions.
    pub positions: Vec<Vec<Vec3>>,
}

impl CacheReader {
    /// Opens a cache and checks its header and length (see the module docs).
    pub fn open(path: &Path) -> Result<Self, IoError> {
        let file = File::open(path).map_err(|e| IoError::os(path, "open", e))?;
        let file_len = file
            .metadata()
            .map_err(|e| IoError::os(path, "read the size of", e))?
            .len();
        let mut r = Self {
            path: path.to_path_buf(),
            file: BufReader::with_capacity(1 << 16, file),
            pos: 0,
            file_len,
            fps: 0.0,
            skins: Vec::new(),
            flesh: CacheFlesh::default(),
            version: 0,
            header_len: 0,
            frame_bytes: 0,
            frames: 0,
            complete: false,
            buf: Vec::new(),
            root: None,
        };
        r.read_header()?;
        Ok(r)
    }

    pub(super) fn corrupt(&self, offset: u64, message: impl Into<String>) -> IoError {
        IoError::Corrupt {
            path: self.path.clone(),
            offset,
            message: message.into(),
        }
    }

    /// Reads `n` bytes at the current position into `self.buf`, reporting a
    /// truncation at that offset if the file is too short.
    fn read_bytes(&mut self, n: u64, what: &str) -> Result<(), IoError> {
        let offset = self.pos;
        let truncated = |len: u64| IoError::Truncated {
            path: self.path.clone(),
            offset,
            what: what.to_string(),
            needed: n,
            len,
        };
        if offset.checked_add(n).is_none_or(|end| end > self.file_len) {
            return Err(truncated(self.file_len));
        }
        self.buf.resize(n as usize, 0);
        match self.file.read_exact(&mut self.buf) {
            Ok(()) => {
                self.pos += n;
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                // The file shrank since it was opened.
                self.pos = u64::MAX; // unknown: force a seek next time
                let len = self.file.get_ref().metadata().map_or(0, |m| m.len());
                Err(truncated(len))
            }
            Err(e) => {
                self.pos = u64::MAX;
                Err(IoError::os(&self.path, "read", e))
            }
        }
    }

    fn read_u32(&mut self, what: &str) -> Result<u32, IoError> {
        self.read_bytes(4, what)?;
        Ok(u32::from_le_bytes(self.buf[..4].try_into().unwrap()))
    }

    fn read_header(&mut self) -> Result<(), IoError> {
        self.read_bytes(8, "the magic number")?;
        if self.buf[..] != CACHE_MAGIC {
            return Err(self.corrupt(
                0,
                format!(
                    "not a Plasticine cache (magic {:?}, expected \"PLSTCACH\")",
                    String::from_utf8_lossy(&self.buf)
                ),
            ));
        }
        let version = self.read_u32("the format version")?;
        if !(1..=CACHE_FORMAT_VERSION).contains(&version) {
            let msg = if version > CACHE_FORMAT_VERSION {
                format!(
                    "written by a newer Plasticine: cache version {version}, this build reads {CACHE_FORMAT_VERSION}"
                )
            } else {
                format!("unknown cache version {version}")
            };
            return Err(self.corrupt(8, msg));
        }
        let fps = f32::from_bits(self.read_u32("frames per second")?);
        if !(fps.is_finite() && fps > 0.0) {
            return Err(self.corrupt(12, format!("frames per second {fps} is not positive")));
        }
        self.fps = fps;
        self.read_bytes(8, "the frame count")?;
        let stored_frames = u64::from_le_bytes(self.buf[..8].try_into().unwrap());
        let skin_count = self.read_u32("the skin count")? as usize;
        if skin_count > MAX_CACHE_SKINS {
            return Err(self.corrupt(
                24,
                format!("{skin_count} skins, the format holds at most {MAX_CACHE_SKINS}"),
            ));
        }
        // No allocation from the untrusted count beyond what the file can hold.
        let mut skins = Vec::with_capacity(skin_count.min((self.file_len / 12) as usize));
        for k in 0..skin_count {
            let at = self.pos;
            let what = format!("skin {k}'s header");
            let m = self.read_u32(&what)?;
            let n = self.read_u32(&what)?;
            let name_len = self.read_u32(&what)? as usize;
            check_skin(u64::from(m), u64::from(n), name_len)
                .map_err(|e| self.corrupt(at, format!("skin {k}: {e}")))?;
            self.read_bytes(name_len as u64, &format!("skin {k}'s name"))?;
            let name = String::from_utf8(std::mem::take(&mut self.buf))
                .map_err(|_| self.corrupt(at + 12, format!("skin {k}: name is not UTF-8")))?;
            skins.push(CacheSkin {
                name,
                m: m as usize,
                n: n as usize,
            });
        }
        self.version = version;
        if version >= 2 {
            self.read_flesh_header()?;
        }
        if self.checksum_bytes() > 0 {
            self.check_header_checksum()?;
        } else {
            tracing::warn!(
                "{}: a cache of version {version}, written without checksums: a change to its \
                 bytes cannot be detected (bake again to add them)",
                self.path.display()
            );
        }
        self.header_len = self.pos;
        // `bytes_per_frame` is this build's frame, checksum included.
        self.frame_bytes = bytes_per_frame(skins.iter().map(CacheSkin::point_count))
            - CHECKSUM_BYTES
            + self.checksum_bytes() as u64
            + self.flesh.frame_bytes();
        self.skins = skins;
        let body = self.file_len - self.header_len;
        if stored_frames == UNFINISHED_FRAME_COUNT {
            // A cut-off writer's temporary file: keep the complete frames.
            self.frames = body / self.frame_bytes;
            self.complete = false;
        } else {
            let expected = stored_frames
                .checked_mul(self.frame_bytes)
                .and_then(|b| b.checked_add(self.header_len));
            match expected {
                Some(len) if len == self.file_len => {}
                Some(len) if len > self.file_len => {
                    let whole = body / self.frame_bytes;
                    return Err(IoError::Truncated {
                        path: self.path.clone(),
                        offset: self.header_len + whole * self.frame_bytes,
                        what: format!("frame {whole} of the {stored_frames} in the header"),
                        needed: len - (self.header_len + whole * self.frame_bytes),
                        len: self.file_len,
                    });
                }
                Some(len) => {
                    return Err(self.corrupt(
                        len,
                        format!(
                            "{} unexpected bytes after the last of {stored_frames} frames",
                            self.file_len - len
                        ),
                    ));
                }
                None => {
                    return Err(self.corrupt(
                        FRAME_COUNT_OFFSET,
                        format!("frame count {stored_frames} is impossibly large"),
                    ));
                }
            }
            self.frames = stored_frames;
            self.complete = true;
        }
        Ok(())
    }

    /// Reads the header's CRC-32 (version 3) and checks it against the
    /// header's bytes before it.
    fn check_header_checksum(&mut self) -> Result<(), IoError> {
        let end = self.pos;
        let stored = self.read_u32("the header's checksum")?;
        self.file
            .seek(SeekFrom::Start(0))
            .map_err(|e| IoError::os(&self.path, "seek in", e))?;
        self.pos = 0;
        self.read_bytes(end, "the header")?;
        let actual = header_checksum(&self.buf);
        self.read_bytes(CHECKSUM_BYTES, "the header's checksum")?;
        if actual != stored {
            return Err(self.corrupt(
                end,
                "the header's checksum does not match its bytes: the file was changed after \
                 it was written (a disk or copy error)"
                    .to_string(),
            ));
        }
        Ok(())
    }

    /// The version-2 header section: embedded meshes and muscle count.
    fn read_flesh_header(&mut self) -> Result<(), IoError> {
        let at = self.pos;
        let count = self.read_u32("the embedded mesh count")? as usize;
        if count > MAX_CACHE_MESHES {
            return Err(self.corrupt(
                at,
                format!("{count} embedded meshes, the format holds at most {MAX_CACHE_MESHES}"),
            ));
        }
        let mut meshes = Vec::with_capacity(count);
        for k in 0..count {
            let at = self.pos;
            let what = format!("embedded mesh {k}'s header");
            let vertices = self.read_u32(&what)?;
            let name_len = self.read_u32(&what)? as usize;
            flesh::check_mesh(u64::from(vertices), name_len)
                .map_err(|e| self.corrupt(at, format!("embedded mesh {k}: {e}")))?;
            self.read_bytes(name_len as u64, &format!("embedded mesh {k}'s name"))?;
            let name = String::from_utf8(std::mem::take(&mut self.buf)).map_err(|_| {
                self.corrupt(at + 8, format!("embedded mesh {k}: name is not UTF-8"))
            })?;
            meshes.push(CacheMesh {
                name,
                vertices: vertices as usize,
            });
        }
        let at = self.pos;
        let muscles = self.read_u32("the muscle offset count")? as usize;
        if muscles > MAX_CACHE_MUSCLES {
            return Err(self.corrupt(
                at,
                format!("{muscles} muscle offsets, the format holds at most {MAX_CACHE_MUSCLES}"),
            ));
        }
        let mut modal = Vec::new();
        if self.version >= 4 {
            let at = self.pos;
            let count = self.read_u32("the modal part count")? as usize;
            if count > flesh::MAX_MODAL_PARTS {
                return Err(self.corrupt(
                    at,
                    format!(
                        "{count} modal parts, the format holds at most {}",
                        flesh::MAX_MODAL_PARTS
                    ),
                ));
            }
            for k in 0..count {
                let at = self.pos;
                let what = format!("modal part {k}'s header");
                let name_len = self.read_u32(&what)? as usize;
                flesh::check_modal_part(1, name_len)
                    .map_err(|e| self.corrupt(at, format!("modal part {k}: {e}")))?;
                self.read_bytes(name_len as u64, &format!("modal part {k}'s name"))?;
                let name = String::from_utf8(std::mem::take(&mut self.buf)).map_err(|_| {
                    self.corrupt(at + 4, format!("modal part {k}: name is not UTF-8"))
                })?;
                let at = self.pos;
                let modes = self.read_u32(&what)?;
                flesh::check_modal_part(u64::from(modes), 0)
                    .map_err(|e| self.corrupt(at, format!("modal part {k} ({name:?}): {e}")))?;
                let mut omega = Vec::with_capacity(modes as usize);
                for i in 0..modes {
                    let w = f32::from_bits(self.read_u32(&what)?);
                    if !(w.is_finite() && w > 0.0) {
                        return Err(self.corrupt(
                            at + 4 + 4 * u64::from(i),
                            format!(
                                "modal part {k} ({name:?}): mode {i}'s angular frequency {w} \
                                 is not positive"
                            ),
                        ));
                    }
                    omega.push(w);
                }
                modal.push(CacheModalPart { name, omega });
            }
        }
        let mut root = false;
        if self.version >= 5 {
            let at = self.pos;
            let flags = self.read_u32("the flesh flags")?;
            if flags > 1 {
                return Err(self.corrupt(at, format!("unknown flesh flags {flags:#x}")));
            }
            root = flags & 1 == 1;
        }
        self.flesh = CacheFlesh {
            meshes,
            muscles,
            modal,
            root,
        };
        Ok(())
    }

    /// The cache file being read.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root joint's simulated world frame of the frame last read with
    /// [`read_frame_with_flesh`](Self::read_frame_with_flesh) (version 5, a
    /// bake whose skeleton responded; None otherwise).
    pub fn root(&self) -> Option<Affine3A> {
        self.root
    }

    /// The file's format version (1 to 5).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The FEM flesh stored per frame (empty for a version-1 cache).
    pub fn flesh(&self) -> &CacheFlesh {
        &self.flesh
    }

    /// Frames per second of the bake, from the header.
    pub fn fps(&self) -> f32 {
        self.fps
    }

    /// The skins described in the header, in header order.
    pub fn skins(&self) -> &[CacheSkin] {
        &self.skins
    }

    /// Number of complete frames.
    pub fn frame_count(&self) -> usize {
        self.frames as usize
    }

    /// `false` for the temporary file of a writer that never finished.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// Size of one frame in bytes.
    pub fn bytes_per_frame(&self) -> u64 {
        self.frame_bytes
    }

    /// Bytes of the checksum at the end of each frame (none before version 3).
    fn checksum_bytes(&self) -> usize {
        if self.version >= 3 {
            CHECKSUM_BYTES as usize
        } else {
            0
        }
    }

    fn seek_frame(&mut self, index: usize) -> Result<u64, IoError> {
        if index as u64 >= self.frames {
            return Err(IoError::BadInput {
                path: self.path.clone(),
                message: format!(
                    "frame {index} does not exist (the cache has {})",
                    self.frames
                ),
            });
        }
        let offset = self.header_len + index as u64 * self.frame_bytes;
        if self.pos != offset {
            self.file
                .seek(SeekFrom::Start(offset))
                .map_err(|e| IoError::os(&self.path, "seek in", e))?;
            self.pos = offset;
        }
        Ok(offset)
    }

    fn read_time(&mut self, index: usize, offset: u64) -> Result<f64, IoError> {
        let time = f64::from_le_bytes(self.buf[..8].try_into().unwrap());
        if !time.is_finite() {
            return Err(self.corrupt(offset, format!("frame {index}: time {time} is not finite")));
        }
        Ok(time)
    }

    /// The time of frame `index`, reading only those 8 bytes.
    pub fn frame_time(&mut self, index: usize) -> Result<f64, IoError> {
        let offset = self.seek_frame(index)?;
        self.read_bytes(8, &format!("frame {index}'s time"))?;
        self.read_time(index, offset)
    }

    /// Reads frame `index` into `out` (resized to one `Vec` per skin, reusing
    /// its allocations) and returns its time.
    pub fn read_frame(&mut self, index: usize, out: &mut Vec<Vec<Vec3>>) -> Result<f64, IoError> {
        self.read_frame_parts(index, out, None)
    }

    /// Like [`read_frame`](Self::read_frame), also reading the frame's flesh:
    /// `meshes` gets one `Vec` per embedded mesh and `muscles` the muscle
    /// offsets (both empty for a cache without flesh).
    pub fn read_frame_with_flesh(
        &mut self,
        index: usize,
        out: &mut Vec<Vec<Vec3>>,
        meshes: &mut Vec<Vec<Vec3>>,
        muscles: &mut Vec<Affine3A>,
    ) -> Result<f64, IoError> {
        self.read_frame_parts(index, out, Some((meshes, muscles)))
    }

    /// Frame `index`'s modal amplitudes (empty for a cache without modal
    /// flesh), part after part as [`CacheFlesh::modal`] lists them.
    pub fn read_amplitudes(&mut self, index: usize) -> Result<Vec<f32>, IoError> {
        let mut out = Vec::new();
        self.load_frame(index)?;
        let end = self.frame_bytes as usize - self.checksum_bytes();
        self.flesh.decode_amplitudes(&self.buf[..end], &mut out);
        if let Some(i) = out.iter().position(|q| !q.is_finite()) {
            let offset = self.header_len + index as u64 * self.frame_bytes;
            return Err(self.corrupt(
                offset,
                format!("frame {index}: modal amplitude {i} is not finite"),
            ));
        }
        Ok(out)
    }

    fn read_frame_parts(
        &mut self,
        index: usize,
        out: &mut Vec<Vec<Vec3>>,
        flesh: Option<(&mut Vec<Vec<Vec3>>, &mut Vec<Affine3A>)>,
    ) -> Result<f64, IoError> {
        let time = self.load_frame(index)?;
        out.resize_with(self.skins.len(), Vec::new);
        let mut at = 8;
        for (skin, dst) in self.skins.iter().zip(out.iter_mut()) {
            let len = skin.point_count() * 12;
            dst.clear();
            dst.extend(self.buf[at..at + len].chunks_exact(12).map(|c| {
                let f = |k: usize| f32::from_le_bytes(c[k..k + 4].try_into().unwrap());
                Vec3::new(f(0), f(4), f(8))
            }));
            at += len;
        }
        if let Some((meshes, muscles)) = flesh {
            let end = self.frame_bytes as usize - self.checksum_bytes();
            self.flesh.decode_frame(&self.buf[at..end], meshes, muscles);
            self.root = self.flesh.decode_root(&self.buf[at..end]);
            if self.root.is_some_and(|r| !r.is_finite()) {
                let offset = self.header_len + index as u64 * self.frame_bytes;
                return Err(self.corrupt(
                    offset,
                    format!("frame {index}: the root frame is not finite"),
                ));
            }
        }
        Ok(time)
    }

    /// Reads frame `index`'s bytes into the buffer, checks its checksum and
    /// returns its time.
    fn load_frame(&mut self, index: usize) -> Result<f64, IoError> {
        let offset = self.seek_frame(index)?;
        self.read_bytes(self.frame_bytes, &format!("frame {index}"))?;
        if self.checksum_bytes() > 0 {
            let body = self.frame_bytes as usize - self.checksum_bytes();
            let stored = u32::from_le_bytes(self.buf[body..].try_into().unwrap());
            if crc32fast::hash(&self.buf[..body]) != stored {
                return Err(self.corrupt(
                    offset,
                    format!(
                        "frame {index}: its checksum does not match its bytes: the file was \
                         changed after it was written (a disk or copy error)"
                    ),
                ));
            }
        }
        self.read_time(index, offset)
    }

    /// Iterates over all frames in order, from the first.
    pub fn frames(&mut self) -> Frames<'_> {
        Frames {
            reader: self,
            next: 0,
        }
    }
}

/// Iterator over a cache's frames; see [`CacheReader::frames`].
#[derive(Debug)]
pub struct Frames<'a> {
    reader: &'a mut CacheReader,
    next: usize,
}

impl Iterator for Frames<'_> {
    type Item = Result<CacheFrame, IoError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.reader.frame_count() {
            return None;
        }
        let index = self.next;
        self.next += 1;
        let mut positions = Vec::new();
        Some(
            self.reader
                .read_frame(index, &mut positions)
                .map(|time| CacheFrame { time, positions }),
        )
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.reader.frame_count().saturating_sub(self.next);
        (left, Some(left))
    }
}

impl ExactSizeIterator for Frames<'_> {}
