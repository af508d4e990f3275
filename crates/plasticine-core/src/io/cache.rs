//! The bake frame cache: skin positions over time, in a compact binary file
//! that is written and read one frame at a time (never all frames in memory)
//! and supports random access for scrubbing.
//!
//! # Format, version 1
//!
//! All integers and floats are little-endian; there is no padding.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `PLSTCACH` (ASCII) |
//! | 8 | 4 | format version, `u32`, = 1 (2: see below) |
//! | 12 | 4 | frames per second, `f32`, finite and > 0 (the bake rate; frame times are authoritative) |
//! | 16 | 8 | frame count, `u64`; `u64::MAX` while the file is being written (see below) |
//! | 24 | 4 | skin count `S`, `u32`, at most [`MAX_CACHE_SKINS`] |
//! | 28 | … | `S` skin records: `m: u32`, `n: u32`, name length `L: u32` (at most [`MAX_SKIN_NAME_BYTES`]), `L` bytes of UTF-8 name |
//! | `H` | … | frames |
//!
//! `H` (the header length) is 28 + Σ (12 + `L`). Each skin has `m·n` points (at
//! most [`Skin::MAX_POINTS`]), in the skin grid order of
//! [`SkinPoints`](crate::character::SkinPoints): point `(i, j)` at index
//! `j·m + i`.
//!
//! Every frame has the same size, [`bytes_per_frame`] = 8 + 12 · Σ m·n:
//! the frame time in seconds (`f64`, finite, strictly increasing from frame to
//! frame), then for each skin in header order its `m·n` positions as three
//! `f32` (x, y, z, finite). Frame `k` starts at byte `H + k · bytes_per_frame`.
//!
//! ## Frame count and cut-off writers
//!
//! The frame count is a header field patched when the writer finishes, just
//! before the file is atomically renamed into place
//! ([`AtomicFile`]). A finished file therefore has a count and its length must
//! be exactly `H + count · bytes_per_frame`; anything else is reported as
//! truncation or corruption.
//!
//! While being written the count is `u64::MAX` ("unfinished"). Such a file is
//! only ever seen under a name other than the target's: the temporary name
//! (`.<name>.<random>.tmp`, next to the target) of a writer made by
//! [`CacheWriter::create`], left behind when the process was killed outright,
//! or the staging name (e.g. `bake.plcache.partial`) of a writer made by
//! [`CacheWriter::create_staged`], which a cancelled bake keeps on purpose and
//! [`CacheWriter::resume_staged`] reopens for appending. [`CacheReader::open`]
//! accepts it and derives the frame count from the file length, ignoring a
//! trailing partial frame, so the frames written so far can still be read
//! ([`CacheReader::is_complete`] is then `false`).
//!
//! # Format, version 2: FEM flesh
//!
//! A character with FEM flesh also bakes its embedded meshes'
//! deformed vertices and its muscles' flesh offsets. Version 2 is version 1
//! with, after the skin records:
//!
//! | size | field |
//! |---|---|
//! | 4 | embedded mesh count `E`, `u32`, at most [`MAX_CACHE_MESHES`] |
//! | … | `E` mesh records: vertex count `v: u32` (1 ..= [`MAX_MESH_VERTICES`]), name length `L: u32`, `L` bytes of UTF-8 name |
//! | 4 | muscle offset count `U`, `u32`, at most [`MAX_CACHE_MUSCLES`] |
//!
//! and each frame continues after the skins with each mesh's `v` vertices
//! (three `f32` each) and then `U` muscle offsets (an affine map as twelve
//! `f32`: the matrix's columns, then the translation), so
//! [`bytes_per_frame`] grows by 12 · Σ v + 48 · `U`.
//!
//! # Format, version 3: checksums
//!
//! Version 2's layout (the flesh section always present, with `E` and `U`
//! zero for a character without flesh), with a CRC-32 ([`CHECKSUM_BYTES`],
//! `u32`) after the header, over the header's bytes with the frame count read
//! as zeros (it is patched last), and one after each frame, over that frame's
//! bytes. A reader refuses a header or a frame whose bytes do not match, naming
//! it: a disk, a copy or a hand that changed the file after it was written.
//! An older cache loads with a warning that its corruption cannot be
//! detected.
//!
//! # Format, version 4: modal flesh
//!
//! Version 3 with, after the muscle offset count, the modal flesh's parts:
//!
//! | size | field |
//! |---|---|
//! | 4 | modal part count `P`, `u32`, at most [`flesh::MAX_MODAL_PARTS`] |
//! | … | `P` part records: name length `L: u32`, `L` bytes of UTF-8 joint name, mode count `m: u32` (1 ..= [`flesh::MAX_PART_MODES`]), `m` angular frequencies (`f32`, rad/s, > 0) |
//!
//! and each frame's flesh ends with every part's `m` modal amplitudes
//! (`f32`), part after part, so [`bytes_per_frame`] grows by 4 · Σ m. The
//! frequencies let an export that computes the modes again check that the
//! amplitudes are theirs.
//!
//! # Format, version 5: a responding skeleton
//!
//! Version 4 with, after the modal parts, a `u32` of flags (bit 0: every
//! frame stores the root joint's simulated world frame; other bits must be
//! zero), and each frame's flesh with that frame (an `Affine3A`, 12 `f32`,
//! column-major) after the muscle offsets, before the amplitudes. Written
//! only for a bake whose skeleton responded (`fem::dynamic`, `bake
//! --drop`): playback puts the skeleton's root there. Every other cache is
//! still written as version 4; this build reads all five.

use super::atomic::{parent_dir, sync_dir};
use super::{AtomicFile, IoError};
use crate::character::Skin;
mod flesh;
mod reader;

pub use flesh::{CacheFlesh, CacheMesh, CacheModalPart, EntryError, FleshRecordError, mesh_name};

use glam::{Affine3A, Vec3};
pub use reader::{CacheFrame, CacheReader, Frames};
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The first 8 bytes of every cache file.
pub const CACHE_MAGIC: [u8; 8] = *b"PLSTCACH";
/// The format version this build writes; it reads versions 1 to this.
pub const CACHE_FORMAT_VERSION: u32 = 5;
/// Bytes of the CRC-32 after the header and after each frame (version 3).
pub const CHECKSUM_BYTES: u64 = 4;
/// The frame count of a file whose writer has not finished.
pub const UNFINISHED_FRAME_COUNT: u64 = u64::MAX;
/// Most skins a cache may hold.
pub const MAX_CACHE_SKINS: usize = 1 << 16;
/// Longest skin name, in bytes.
pub const MAX_SKIN_NAME_BYTES: usize = 4096;

pub(crate) const FRAME_COUNT_OFFSET: u64 = 16;

/// Size in bytes of one frame, as this build writes it, for skins with the
/// given point counts (m·n each) and no flesh: 8 + 12 · Σ points + the
/// frame's checksum.
pub fn bytes_per_frame<I: IntoIterator<Item = usize>>(points_per_skin: I) -> u64 {
    8 + 12 * points_per_skin.into_iter().map(|p| p as u64).sum::<u64>() + CHECKSUM_BYTES
}

/// The CRC-32 of a header: every byte but the frame count, which is
/// patched when the writer finishes (read as zeros).
pub(crate) fn header_checksum(header: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&header[..FRAME_COUNT_OFFSET as usize]);
    h.update(&[0; 8]);
    h.update(&header[FRAME_COUNT_OFFSET as usize + 8..]);
    h.finalize()
}

/// A skin as described in a cache header.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CacheSkin {
    /// Name of the skin.
    pub name: String,
    /// Points around.
    pub m: usize,
    /// Rows.
    pub n: usize,
}

impl CacheSkin {
    /// Number of points of the skin, m·n.
    pub fn point_count(&self) -> usize {
        self.m * self.n
    }
}

/// What a finished cache holds (serializable, for a bake report).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CacheSummary {
    /// The cache file written (the writer's target).
    pub path: PathBuf,
    /// Frames per second of the bake.
    pub fps: f32,
    /// The skins, in header order.
    pub skins: Vec<CacheSkin>,
    /// The FEM flesh stored per frame (empty for most characters).
    pub flesh: CacheFlesh,
    /// Number of frames written.
    pub frames: u64,
    /// Total file size.
    pub bytes: u64,
    /// Time of the first and last frame, if any.
    pub first_time: Option<f64>,
    /// Time of the last frame in s, if any.
    pub last_time: Option<f64>,
}

/// Checks one skin entry (shared by writer and reader).
pub(crate) fn check_skin(m: u64, n: u64, name_len: usize) -> Result<(), EntryError> {
    if m > u64::from(u32::MAX) || n > u64::from(u32::MAX) {
        return Err(EntryError::Resolution { m, n });
    }
    if m.checked_mul(n).is_none_or(|p| p > Skin::MAX_POINTS as u64) {
        return Err(EntryError::Points { m, n });
    }
    if name_len > MAX_SKIN_NAME_BYTES {
        return Err(EntryError::NameLength(name_len));
    }
    Ok(())
}

/// Where a [`CacheWriter`]'s bytes go.
#[derive(Debug)]
enum Sink {
    /// A temporary file, removed if the writer is dropped unfinished.
    Atomic(AtomicFile),
    /// A staging file with a fixed name that outlives the writer.
    Staged {
        file: BufWriter<File>,
        staging: PathBuf,
    },
}

impl Sink {
    /// The file the bytes go to: the staging file, or the temporary file
    /// (not shown to the user; see [`CacheWriter::shown_path`]).
    fn path(&self) -> &Path {
        match self {
            Sink::Atomic(f) => f.temp_path(),
            Sink::Staged { staging, .. } => staging,
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Atomic(f) => f.write(buf),
            Sink::Staged { file, .. } => file.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Atomic(f) => f.write_all(buf),
            Sink::Staged { file, .. } => file.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Atomic(f) => f.flush(),
            Sink::Staged { file, .. } => file.flush(),
        }
    }
}

impl Seek for Sink {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        match self {
            Sink::Atomic(f) => f.seek(pos),
            Sink::Staged { file, .. } => file.seek(pos),
        }
    }
}

/// Streams frames into a new cache file, which replaces `path` atomically on
/// [`finish`](Self::finish). Dropping it unfinished leaves `path` untouched.
///
/// Made by [`create`](Self::create) it writes a temporary file that is removed
/// if the writer is dropped unfinished. Made by
/// [`create_staged`](Self::create_staged) or
/// [`resume_staged`](Self::resume_staged) it writes a staging file of a fixed
/// name that stays when the writer is dropped (with its frames flushed), so
/// that a cancelled bake can be continued later; [`finish`](Self::finish)
/// renames it over the target.
#[derive(Debug)]
pub struct CacheWriter {
    file: Sink,
    path: PathBuf,
    fps: f32,
    skins: Vec<CacheSkin>,
    flesh: CacheFlesh,
    header_len: u64,
    frame_bytes: u64,
    frames: u64,
    first_time: Option<f64>,
    last_time: Option<f64>,
    /// A write failed part-way through a frame: the file is unusable.
    broken: bool,
    buf: Vec<u8>,
}

impl CacheWriter {
    /// Starts a cache for skins given as `(name, m, n)`, baked at `fps`.
    pub fn create(path: &Path, fps: f32, skins: &[(&str, usize, usize)]) -> Result<Self, IoError> {
        Self::create_with_flesh(path, fps, skins, &CacheFlesh::default())
    }

    /// Like [`create`](Self::create), for a cache that also holds `flesh`
    /// per frame (written with [`write_frame_with_flesh`](Self::write_frame_with_flesh)).
    pub fn create_with_flesh(
        path: &Path,
        fps: f32,
        skins: &[(&str, usize, usize)],
        flesh: &CacheFlesh,
    ) -> Result<Self, IoError> {
        let (header, list) = Self::header(path, fps, skins, flesh)?;
        let mut file = AtomicFile::create(path)?;
        file.write_all(&header)
            .map_err(|e| IoError::os(path, "write", e))?;
        Ok(Self::new(
            Sink::Atomic(file),
            path,
            fps,
            list,
            flesh.clone(),
            header.len() as u64,
        ))
    }

    /// Like [`create`](Self::create), but writes to `staging` (replacing any
    /// file there), a name of the caller's choosing next to `target`, which
    /// stays if the writer is dropped unfinished and can be continued with
    /// [`resume_staged`](Self::resume_staged). [`finish`](Self::finish) renames
    /// it over `target`.
    pub fn create_staged(
        staging: &Path,
        target: &Path,
        fps: f32,
        skins: &[(&str, usize, usize)],
    ) -> Result<Self, IoError> {
        Self::create_staged_with_flesh(staging, target, fps, skins, &CacheFlesh::default())
    }

    /// [`create_staged`](Self::create_staged) for a cache that also holds
    /// `flesh` per frame.
    pub fn create_staged_with_flesh(
        staging: &Path,
        target: &Path,
        fps: f32,
        skins: &[(&str, usize, usize)],
        flesh: &CacheFlesh,
    ) -> Result<Self, IoError> {
        let (header, list) = Self::header(target, fps, skins, flesh)?;
        let dir = parent_dir(staging);
        std::fs::create_dir_all(dir).map_err(|e| IoError::os(dir, "create the directory", e))?;
        let file = File::create(staging).map_err(|e| IoError::os(staging, "create", e))?;
        let mut file = BufWriter::with_capacity(1 << 16, file);
        file.write_all(&header)
            .map_err(|e| IoError::os(staging, "write", e))?;
        let sink = Sink::Staged {
            file,
            staging: staging.to_path_buf(),
        };
        Ok(Self::new(
            sink,
            target,
            fps,
            list,
            flesh.clone(),
            header.len() as u64,
        ))
    }

    /// Reopens the staging file of an unfinished writer (see
    /// [`create_staged`](Self::create_staged)) to append after its first
    /// `keep_frames` frames. Checks that the file is an unfinished cache with
    /// this frame rate and these skins, that it holds at least `keep_frames`
    /// whole frames and that they are valid (finite, times strictly
    /// increasing); then cuts off whatever follows them: frames written after
    /// the caller's last checkpoint, and a torn frame of a writer killed
    /// mid-write. On error the file is left as it was.
    pub fn resume_staged(
        staging: &Path,
        target: &Path,
        fps: f32,
        skins: &[(&str, usize, usize)],
        keep_frames: u64,
    ) -> Result<Self, IoError> {
        let none = CacheFlesh::default();
        Self::resume_staged_with_flesh(staging, target, fps, skins, &none, keep_frames)
    }

    /// [`resume_staged`](Self::resume_staged) for a cache that also holds
    /// `flesh` per frame (checked against the file's).
    pub fn resume_staged_with_flesh(
        staging: &Path,
        target: &Path,
        fps: f32,
        skins: &[(&str, usize, usize)],
        flesh: &CacheFlesh,
        keep_frames: u64,
    ) -> Result<Self, IoError> {
        let (header, list) = Self::header(target, fps, skins, flesh)?;
        let bad = |message: String| IoError::BadInput {
            path: staging.to_path_buf(),
            message,
        };
        let mut reader = CacheReader::open(staging)?;
        // A staging file already finished was left by a writer killed
        // between `finish` patching the frame count and the rename: its
        // frames are whole, so it resumes like any other (the frame count
        // is outside the header's checksum, and is reset below).
        let finished = reader.is_complete();
        if reader.fps().to_bits() != fps.to_bits() || reader.skins() != list.as_slice() {
            let describe = |fps: f32, skins: &[CacheSkin]| {
                let s: Vec<String> = skins
                    .iter()
                    .map(|k| format!("{:?} {}x{}", k.name, k.m, k.n))
                    .collect();
                format!("{fps} fps, skins [{}]", s.join(", "))
            };
            return Err(bad(format!(
                "holds {}, expected {}",
                describe(reader.fps(), reader.skins()),
                describe(fps, &list)
            )));
        }
        if reader.flesh() != flesh {
            return Err(bad(format!(
                "holds the flesh {:?}, expected {:?}",
                reader.flesh(),
                flesh
            )));
        }
        if reader.header_len != header.len() as u64 {
            return Err(reader.corrupt(24, "the header differs from the one expected"));
        }
        if (reader.frame_count() as u64) < keep_frames {
            return Err(bad(format!(
                "holds {} whole frames, {keep_frames} expected",
                reader.frame_count()
            )));
        }
        let (mut first_time, mut last_time) = (None, None::<f64>);
        let (mut frame, mut meshes, mut muscles) = (Vec::new(), Vec::new(), Vec::new());
        for k in 0..keep_frames as usize {
            let time = reader.read_frame_with_flesh(k, &mut frame, &mut meshes, &mut muscles)?;
            let offset = reader.header_len + k as u64 * reader.frame_bytes;
            if last_time.is_some_and(|t| time <= t) {
                return Err(reader.corrupt(
                    offset,
                    format!("frame {k}: time {time} is not after the previous frame's"),
                ));
            }
            if frame
                .iter()
                .chain(&meshes)
                .flatten()
                .any(|p| !p.is_finite())
                || muscles.iter().any(|a| !a.is_finite())
            {
                return Err(reader.corrupt(offset, format!("frame {k}: a position is not finite")));
            }
            first_time.get_or_insert(time);
            last_time = Some(time);
        }
        let len = reader.header_len + keep_frames * reader.frame_bytes;
        drop(reader);
        let mut file = OpenOptions::new()
            .write(true)
            .open(staging)
            .map_err(|e| IoError::os(staging, "open", e))?;
        if finished {
            file.seek(SeekFrom::Start(FRAME_COUNT_OFFSET))
                .and_then(|_| file.write_all(&UNFINISHED_FRAME_COUNT.to_le_bytes()))
                .map_err(|e| IoError::os(staging, "reopen", e))?;
        }
        file.set_len(len)
            .and_then(|()| file.seek(SeekFrom::Start(len)).map(drop))
            .map_err(|e| IoError::os(staging, "cut back", e))?;
        let sink = Sink::Staged {
            file: BufWriter::with_capacity(1 << 16, file),
            staging: staging.to_path_buf(),
        };
        let mut w = Self::new(sink, target, fps, list, flesh.clone(), header.len() as u64);
        w.frames = keep_frames;
        w.first_time = first_time;
        w.last_time = last_time;
        Ok(w)
    }

    fn new(
        file: Sink,
        path: &Path,
        fps: f32,
        skins: Vec<CacheSkin>,
        flesh: CacheFlesh,
        header_len: u64,
    ) -> Self {
        Self {
            frame_bytes: bytes_per_frame(skins.iter().map(CacheSkin::point_count))
                + flesh.frame_bytes(),
            flesh,
            header_len,
            file,
            path: path.to_path_buf(),
            fps,
            skins,
            frames: 0,
            first_time: None,
            last_time: None,
            broken: false,
            buf: Vec::new(),
        }
    }

    /// The header for these skins, checked.
    fn header(
        path: &Path,
        fps: f32,
        skins: &[(&str, usize, usize)],
        flesh: &CacheFlesh,
    ) -> Result<(Vec<u8>, Vec<CacheSkin>), IoError> {
        let bad = |message: String| IoError::BadInput {
            path: path.to_path_buf(),
            message,
        };
        if !(fps.is_finite() && fps > 0.0) {
            return Err(bad(format!(
                "frames per second must be positive, got {fps}"
            )));
        }
        if skins.len() > MAX_CACHE_SKINS {
            return Err(bad(format!(
                "{} skins, the format holds at most {MAX_CACHE_SKINS}",
                skins.len()
            )));
        }
        flesh.check().map_err(|e| bad(e.to_string()))?;
        let version = flesh.version();
        let mut header = Vec::with_capacity(64);
        header.extend_from_slice(&CACHE_MAGIC);
        header.extend_from_slice(&version.to_le_bytes());
        header.extend_from_slice(&fps.to_le_bytes());
        header.extend_from_slice(&UNFINISHED_FRAME_COUNT.to_le_bytes());
        header.extend_from_slice(&(skins.len() as u32).to_le_bytes());
        let mut list = Vec::with_capacity(skins.len());
        for (k, &(name, m, n)) in skins.iter().enumerate() {
            check_skin(m as u64, n as u64, name.len())
                .map_err(|e| bad(format!("skin {k} ({name:?}): {e}")))?;
            header.extend_from_slice(&(m as u32).to_le_bytes());
            header.extend_from_slice(&(n as u32).to_le_bytes());
            header.extend_from_slice(&(name.len() as u32).to_le_bytes());
            header.extend_from_slice(name.as_bytes());
            list.push(CacheSkin {
                name: name.to_string(),
                m,
                n,
            });
        }
        flesh.encode_header(&mut header);
        let checksum = header_checksum(&header);
        header.extend_from_slice(&checksum.to_le_bytes());
        Ok((header, list))
    }

    /// The skins, as in the header.
    pub fn skins(&self) -> &[CacheSkin] {
        &self.skins
    }

    /// Frames written so far.
    pub fn frame_count(&self) -> u64 {
        self.frames
    }

    /// Appends one frame: `positions[s]` holds skin `s`'s m·n points. Checks
    /// the skin count, point counts, that the time is finite and strictly
    /// increasing and that every position is finite; a refused frame writes
    /// nothing.
    pub fn write_frame(&mut self, time: f64, positions: &[&[Vec3]]) -> Result<(), IoError> {
        self.write_frame_with_flesh(time, positions, &[], &[])
    }

    /// The flesh stored per frame, as in the header.
    pub fn flesh(&self) -> &CacheFlesh {
        &self.flesh
    }

    /// Like [`write_frame`](Self::write_frame), with the frame's flesh:
    /// `meshes[e]` the embedded mesh `e`'s deformed vertices and `muscles`
    /// the muscle offsets, as many as the header says.
    pub fn write_frame_with_flesh(
        &mut self,
        time: f64,
        positions: &[&[Vec3]],
        meshes: &[&[Vec3]],
        muscles: &[Affine3A],
    ) -> Result<(), IoError> {
        self.write_frame_with_modal(time, positions, meshes, muscles, &[])
    }

    /// Like [`write_frame_with_flesh`](Self::write_frame_with_flesh), with
    /// the modal flesh's amplitudes, as many as the header's modal parts
    /// have modes.
    pub fn write_frame_with_modal(
        &mut self,
        time: f64,
        positions: &[&[Vec3]],
        meshes: &[&[Vec3]],
        muscles: &[Affine3A],
        amplitudes: &[f32],
    ) -> Result<(), IoError> {
        self.write_frame_with_root(time, positions, meshes, muscles, amplitudes, None)
    }

    /// Like [`write_frame_with_modal`](Self::write_frame_with_modal), with
    /// the root joint's simulated world frame, which the header's layout
    /// must ask for (and only then).
    pub fn write_frame_with_root(
        &mut self,
        time: f64,
        positions: &[&[Vec3]],
        meshes: &[&[Vec3]],
        muscles: &[Affine3A],
        amplitudes: &[f32],
        root: Option<Affine3A>,
    ) -> Result<(), IoError> {
        let bad = |message: String| IoError::BadInput {
            path: self.path.clone(),
            message,
        };
        if self.broken {
            return Err(bad(
                "an earlier write failed; the cache cannot be continued".into(),
            ));
        }
        let frame = self.frames;
        if !time.is_finite() || self.last_time.is_some_and(|t| time <= t) {
            return Err(bad(format!(
                "frame {frame}: time {time} must be finite and after the previous frame's {}",
                self.last_time.unwrap_or(f64::NEG_INFINITY)
            )));
        }
        if positions.len() != self.skins.len() {
            return Err(bad(format!(
                "frame {frame}: {} skins given, the cache has {}",
                positions.len(),
                self.skins.len()
            )));
        }
        for (s, (skin, p)) in self.skins.iter().zip(positions).enumerate() {
            if p.len() != skin.point_count() {
                return Err(bad(format!(
                    "frame {frame}: skin {s} ({:?}) has {} points, the {}x{} grid needs {}",
                    skin.name,
                    p.len(),
                    skin.m,
                    skin.n,
                    skin.point_count()
                )));
            }
            if let Some(k) = p.iter().position(|v| !v.is_finite()) {
                return Err(bad(format!(
                    "frame {frame}: skin {s} ({:?}) point {k} is not finite: {}",
                    skin.name, p[k]
                )));
            }
        }
        self.flesh
            .check_frame(frame, meshes, muscles)
            .map_err(|e| bad(e.to_string()))?;
        self.flesh
            .check_amplitudes(frame, amplitudes)
            .map_err(|e| bad(e.to_string()))?;
        match root {
            Some(r) if !r.is_finite() => {
                return Err(bad(format!("frame {frame}: the root frame is not finite")));
            }
            Some(_) if !self.flesh.root => {
                return Err(bad(format!(
                    "frame {frame}: a root frame the header has no room for"
                )));
            }
            None if self.flesh.root => {
                return Err(bad(format!(
                    "frame {frame}: the header asks for a root frame"
                )));
            }
            _ => {}
        }
        self.broken = true; // until the whole frame is written
        let temp = self.shown_path().to_path_buf();
        let io = |e| IoError::os(&temp, "write", e);
        let mut checksum = crc32fast::Hasher::new();
        checksum.update(&time.to_le_bytes());
        self.file.write_all(&time.to_le_bytes()).map_err(io)?;
        for p in positions {
            // Encode in bounded chunks: no second copy of a big skin.
            for chunk in p.chunks(4096) {
                self.buf.clear();
                for v in chunk {
                    for c in v.to_array() {
                        self.buf.extend_from_slice(&c.to_le_bytes());
                    }
                }
                checksum.update(&self.buf);
                self.file.write_all(&self.buf).map_err(io)?;
            }
        }
        if !self.flesh.is_empty() {
            self.buf.clear();
            CacheFlesh::encode_frame(meshes, muscles, &mut self.buf);
            if let Some(r) = &root {
                CacheFlesh::encode_root(r, &mut self.buf);
            }
            CacheFlesh::encode_amplitudes(amplitudes, &mut self.buf);
            checksum.update(&self.buf);
            self.file.write_all(&self.buf).map_err(io)?;
        }
        self.file
            .write_all(&checksum.finalize().to_le_bytes())
            .map_err(io)?;
        self.broken = false;
        self.frames += 1;
        self.first_time.get_or_insert(time);
        self.last_time = Some(time);
        Ok(())
    }

    /// Hands the frames written so far to the operating system, so that if
    /// the process is then killed they can be read back from the temporary
    /// file (see "Frame count and cut-off writers" above). Not needed for
    /// correctness: [`finish`](Self::finish) flushes everything.
    pub fn flush(&mut self) -> Result<(), IoError> {
        self.file
            .flush()
            .map_err(|e| IoError::os(self.shown_path(), "write", e))
    }

    /// Flushes and, for a staging file, makes the frames written so far
    /// durable (`fsync`), e.g. before a checkpoint refers to them. Returns the
    /// length of the file.
    pub fn sync(&mut self) -> Result<u64, IoError> {
        self.flush()?;
        if let Sink::Staged { file, staging } = &mut self.file {
            file.get_ref()
                .sync_data()
                .map_err(|e| IoError::os(staging, "sync", e))?;
        }
        Ok(self.bytes())
    }

    /// Size of the file so far: the header and the whole frames.
    pub fn bytes(&self) -> u64 {
        self.header_len + self.frames * self.frame_bytes
    }

    /// The file being written (renamed to the target by
    /// [`finish`](Self::finish)): the temporary file, or the staging file.
    pub fn temp_path(&self) -> &Path {
        self.file.path()
    }

    /// The file errors name: the staging file the user sees beside a
    /// cancelled bake, or the cache being written (never the hidden
    /// temporary file of an atomic write).
    fn shown_path(&self) -> &Path {
        match &self.file {
            Sink::Atomic(_) => &self.path,
            Sink::Staged { staging, .. } => staging,
        }
    }

    /// Patches the frame count into the header and atomically moves the file
    /// into place.
    pub fn finish(mut self) -> Result<CacheSummary, IoError> {
        if self.broken {
            return Err(IoError::BadInput {
                path: self.path.clone(),
                message: "an earlier write failed; the cache was not written".into(),
            });
        }
        let temp = self.shown_path().to_path_buf();
        let io = |e| IoError::os(&temp, "write", e);
        self.file
            .seek(SeekFrom::Start(FRAME_COUNT_OFFSET))
            .map_err(io)?;
        self.file
            .write_all(&self.frames.to_le_bytes())
            .map_err(io)?;
        let summary = CacheSummary {
            path: self.path.clone(),
            fps: self.fps,
            bytes: self.bytes(),
            skins: std::mem::take(&mut self.skins),
            flesh: std::mem::take(&mut self.flesh),
            frames: self.frames,
            first_time: self.first_time,
            last_time: self.last_time,
        };
        match self.file {
            Sink::Atomic(file) => file.commit()?,
            Sink::Staged { file, staging } => {
                let file = file
                    .into_inner()
                    .map_err(|e| IoError::os(&staging, "write", e.into_error()))?;
                file.sync_all()
                    .map_err(|e| IoError::os(&staging, "sync", e))?;
                drop(file);
                std::fs::rename(&staging, &self.path)
                    .map_err(|e| IoError::os(&self.path, "replace the file", e))?;
                sync_dir(parent_dir(&self.path))?;
            }
        }
        Ok(summary)
    }
}
