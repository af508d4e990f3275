//! The bake checkpoint (`bake.resume`): what a cancelled bake leaves next to
//! its partial cache so that `--resume` continues it bit for bit.
//!
//! # Format, version 2
//!
//! Written atomically ([`write_atomic`]). A fixed frame, little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `PLSTBKCP` (ASCII) |
//! | 8 | 4 | format version, `u32`, = 2 |
//! | 12 | 8 | body length `B`, `u64` |
//! | 20 | `B` | body: the [`Checkpoint`] in postcard |
//! | 20 + `B` | 4 | CRC-32 of bytes 0 .. 20 + `B`, `u32` |
//!
//! The body is the [`Checkpoint`] struct as the `postcard` crate writes it
//! (varint integers and lengths, floats as their little-endian bits, so the
//! solver state comes back exactly): what was baked ([`BakeIdentity`]), the
//! progress (frames, the partial cache's length, OBJ frames, wall time,
//! events) and the solver state ([`SimState`]). Version 1 (a hand-laid body
//! with an FNV-1a checksum) is refused as an older format: a checkpoint only
//! lives between a cancel and its resume.

use crate::character::Character;
use crate::io::{IoError, write_atomic};
use crate::skin::{SimState, SolverSettings};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The first 8 bytes of a checkpoint.
pub const CHECKPOINT_MAGIC: [u8; 8] = *b"PLSTBKCP";
/// The checkpoint version this build writes and reads.
pub const CHECKPOINT_VERSION: u32 = 2;
/// Largest checkpoint read (a skin's state is at most
/// [`Skin::MAX_POINTS`](crate::character::Skin::MAX_POINTS) × 24 bytes).
const MAX_CHECKPOINT_BYTES: u64 = 1 << 34;
/// Magic, version and body length.
const PREAMBLE: usize = 20;
/// The CRC-32 after the body.
const TRAILER: usize = 4;

/// The character's fingerprint: the CRC-32 of its compact RON (no text
/// kept), stable across builds.
pub fn fingerprint(character: &Character) -> u64 {
    struct Crc(crc32fast::Hasher);
    impl std::fmt::Write for Crc {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.update(s.as_bytes());
            Ok(())
        }
    }
    let mut h = Crc(crc32fast::Hasher::new());
    ron::Options::default()
        .to_writer(&mut h, character)
        .expect("a character serializes");
    u64::from(h.0.finalize())
}

/// What a bake is of: a checkpoint continues only a bake with the same.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BakeIdentity {
    /// Name of the character.
    pub character: String,
    /// The character's `fingerprint`: the CRC-32 of its compact RON.
    pub fingerprint: u64,
    /// The solver settings as JSON (exact: floats print as the shortest text
    /// that reads back to the same bits).
    pub settings: String,
    /// The m×n every skin was resampled to, or `None` to keep each skin's own.
    pub resolution: Option<(usize, usize)>,
    /// Frames per simulated second.
    pub fps: f32,
    /// Simulated time baked, in s.
    pub duration: f64,
    /// Simulation time of the first frame (the first key posture's), in s.
    pub start: f64,
    /// Frames in the finished cache.
    pub frames: u64,
    /// Also write every k-th frame as OBJ, if set.
    pub obj_every: Option<usize>,
    /// The ground and drop height of a bake whose skeleton responds (as
    /// JSON, exact), none for a kinematic skeleton.
    #[serde(default)]
    pub ground: Option<String>,
    /// Skins as baked (after resampling): name, m, n.
    pub skins: Vec<(String, usize, usize)>,
}

impl BakeIdentity {
    /// The solver settings as JSON, as kept in `settings`.
    pub fn settings_json(settings: &SolverSettings) -> String {
        serde_json::to_string(settings).expect("settings serialize")
    }

    /// What differs from `now`, one line each, as "what: then …, now …".
    pub fn differences(&self, now: &BakeIdentity) -> Vec<String> {
        let mut d = Vec::new();
        if self.character != now.character || self.fingerprint != now.fingerprint {
            d.push(format!(
                "the character changed (then '{}', fingerprint {:016x}; now '{}', fingerprint {:016x})",
                self.character, self.fingerprint, now.character, now.fingerprint
            ));
        }
        if self.settings != now.settings {
            let parse = |s: &str| serde_json::from_str::<serde_json::Value>(s).ok();
            let mut fields = Vec::new();
            if let (Some(a), Some(b)) = (parse(&self.settings), parse(&now.settings)) {
                json_differences("settings", &a, &b, &mut fields);
            }
            if fields.is_empty() {
                fields.push(format!(
                    "solver settings: then {}, now {}",
                    self.settings, now.settings
                ));
            }
            d.extend(fields);
        }
        let res = |r: Option<(usize, usize)>| {
            r.map_or("the character's own".to_string(), |(m, n)| {
                format!("{m}x{n}")
            })
        };
        if self.resolution != now.resolution {
            d.push(format!(
                "resolution: then {}, now {}",
                res(self.resolution),
                res(now.resolution)
            ));
        }
        if self.fps.to_bits() != now.fps.to_bits() {
            d.push(format!("fps: then {}, now {}", self.fps, now.fps));
        }
        // (The frame count follows from fps and duration.)
        if self.duration.to_bits() != now.duration.to_bits()
            || (self.frames != now.frames && self.fps.to_bits() == now.fps.to_bits())
        {
            d.push(format!(
                "duration: then {} s ({} frames), now {} s ({} frames)",
                self.duration, self.frames, now.duration, now.frames
            ));
        }
        if self.start.to_bits() != now.start.to_bits() {
            d.push(format!(
                "start time: then {} s, now {} s",
                self.start, now.start
            ));
        }
        if self.ground != now.ground {
            let g = |x: &Option<String>| x.clone().unwrap_or_else(|| "none".into());
            d.push(format!(
                "ground: then {}, now {}",
                g(&self.ground),
                g(&now.ground)
            ));
        }
        if self.obj_every != now.obj_every {
            let obj = |o: Option<usize>| o.map_or("none".to_string(), |k| format!("every {k}"));
            d.push(format!(
                "OBJ frames: then {}, now {}",
                obj(self.obj_every),
                obj(now.obj_every)
            ));
        }
        if d.is_empty() && self.skins != now.skins {
            d.push(format!("skins: then {:?}, now {:?}", self.skins, now.skins));
        }
        d
    }
}

/// Leaf fields that differ between two JSON values, as "path: then a, now b".
fn json_differences(
    path: &str,
    a: &serde_json::Value,
    b: &serde_json::Value,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => json_differences(&p, u, v, out),
                    (u, v) => out.push(format!("{p}: then {u:?}, now {v:?}")),
                }
            }
        }
        _ if a != b => out.push(format!("{path}: then {a}, now {b}")),
        _ => {}
    }
}

/// Everything a cancelled bake needs to continue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// What the bake is of.
    pub identity: BakeIdentity,
    /// Frames written (0 .. done), at least 1.
    pub done: u64,
    /// Time of frame `done - 1`.
    pub last_time: f64,
    /// Length of the partial cache holding those frames.
    pub cache_bytes: u64,
    /// Frames written as OBJ so far.
    pub obj_frames: u64,
    /// Wall time spent baking so far, in s.
    pub wall_seconds: f64,
    /// Divergences so far and what was done about them.
    pub events: Vec<String>,
    /// The solver state after frame `done - 1`.
    pub state: SimState,
}

impl Checkpoint {
    /// The checkpoint in its file format (see the module docs).
    pub fn to_bytes(&self) -> Vec<u8> {
        let body = postcard::to_allocvec(self).expect("a checkpoint serializes");
        let mut out = Vec::with_capacity(body.len() + PREAMBLE + TRAILER);
        out.extend_from_slice(&CHECKPOINT_MAGIC);
        out.extend_from_slice(&CHECKPOINT_VERSION.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        let sum = crc32fast::hash(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Writes the checkpoint atomically.
    pub fn write(&self, path: &Path) -> Result<(), IoError> {
        write_atomic(path, &self.to_bytes())
    }

    /// Reads and checks a checkpoint (magic, version, length, checksum, and
    /// every field's shape).
    pub fn read(path: &Path) -> Result<Self, IoError> {
        let meta = std::fs::metadata(path).map_err(|e| IoError::os(path, "open", e))?;
        if meta.len() > MAX_CHECKPOINT_BYTES {
            return Err(IoError::TooLarge {
                path: path.to_path_buf(),
                size: meta.len(),
                limit: MAX_CHECKPOINT_BYTES,
            });
        }
        let bytes = std::fs::read(path).map_err(|e| IoError::os(path, "read", e))?;
        Self::from_bytes(path, &bytes)
    }

    /// Parses a checkpoint read from `path` (named in errors).
    pub fn from_bytes(path: &Path, bytes: &[u8]) -> Result<Self, IoError> {
        let truncated = |offset: usize, what: &str, needed: usize| IoError::Truncated {
            path: path.to_path_buf(),
            offset: offset as u64,
            what: what.to_string(),
            needed: needed as u64,
            len: bytes.len() as u64,
        };
        let corrupt = |offset: usize, message: String| IoError::Corrupt {
            path: path.to_path_buf(),
            offset: offset as u64,
            message,
        };
        if bytes.len() < 8 {
            return Err(truncated(0, "the magic number", 8 - bytes.len()));
        }
        if bytes[..8] != CHECKPOINT_MAGIC {
            return Err(corrupt(
                0,
                format!(
                    "not a Plasticine bake checkpoint (magic {:?}, expected \"PLSTBKCP\")",
                    String::from_utf8_lossy(&bytes[..8])
                ),
            ));
        }
        if bytes.len() < PREAMBLE {
            return Err(truncated(
                bytes.len(),
                "the version and body length",
                PREAMBLE - bytes.len(),
            ));
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
        if version > CHECKPOINT_VERSION {
            return Err(IoError::NewerVersion {
                path: path.to_path_buf(),
                version,
                supported: CHECKPOINT_VERSION,
            });
        }
        if version != CHECKPOINT_VERSION {
            return Err(IoError::UnknownVersion {
                path: path.to_path_buf(),
                version,
                oldest: CHECKPOINT_VERSION,
                supported: CHECKPOINT_VERSION,
            });
        }
        let body_len = u64::from_le_bytes(bytes[12..20].try_into().unwrap());
        let total = body_len.checked_add((PREAMBLE + TRAILER) as u64);
        match total {
            Some(t) if t == bytes.len() as u64 => {}
            Some(t) if t > bytes.len() as u64 => {
                return Err(truncated(
                    bytes.len(),
                    &format!("the body of {body_len} bytes and its checksum"),
                    (t - bytes.len() as u64) as usize,
                ));
            }
            _ => {
                return Err(corrupt(
                    12,
                    format!(
                        "body length {body_len} does not match the file's {} bytes",
                        bytes.len()
                    ),
                ));
            }
        }
        let end = bytes.len() - TRAILER;
        let stored = u32::from_le_bytes(bytes[end..].try_into().unwrap());
        let sum = crc32fast::hash(&bytes[..end]);
        if stored != sum {
            return Err(corrupt(
                end,
                format!(
                    "checksum {stored:08x} does not match the content's {sum:08x}: the checkpoint is damaged"
                ),
            ));
        }
        Self::from_body(path, &bytes[PREAMBLE..end])
    }

    /// Parses a checkpoint's body (the postcard bytes between the frame's
    /// preamble and its checksum; `path` is named in errors, offsets count
    /// from the file's start). Past a matching checksum a body that does not
    /// parse was written wrong, not damaged on disk: still an error, never a
    /// panic (the fuzz target feeds it directly, as random bytes almost
    /// never pass the checksum).
    pub fn from_body(path: &Path, body: &[u8]) -> Result<Self, IoError> {
        let corrupt = |offset: usize, message: String| IoError::Corrupt {
            path: path.to_path_buf(),
            offset: (PREAMBLE + offset) as u64,
            message,
        };
        let (cp, rest): (Self, &[u8]) = postcard::take_from_bytes(body)
            .map_err(|e| corrupt(0, format!("the body does not parse: {e}")))?;
        if !rest.is_empty() {
            return Err(corrupt(
                body.len() - rest.len(),
                format!("{} unexpected bytes after the state", rest.len()),
            ));
        }
        cp.check().map_err(|e| corrupt(0, e.to_string()))?;
        Ok(cp)
    }

    /// What the types cannot say: the progress lies within the bake, and
    /// the solver state has a skin, with as many velocities as positions,
    /// for every skin baked.
    fn check(&self) -> Result<(), Inconsistent> {
        let (done, frames) = (self.done, self.identity.frames);
        if done == 0 || done > frames {
            return Err(Inconsistent::Progress { done, frames });
        }
        let (states, skins) = (self.state.skins.len(), self.identity.skins.len());
        if states != skins {
            return Err(Inconsistent::Skins { states, skins });
        }
        for (k, s) in self.state.skins.iter().enumerate() {
            if s.position.len() != s.velocity.len() {
                return Err(Inconsistent::State {
                    skin: k,
                    positions: s.position.len(),
                    velocities: s.velocity.len(),
                });
            }
        }
        Ok(())
    }
}

/// A checkpoint that decodes but contradicts itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
enum Inconsistent {
    /// Progress outside the bake.
    #[error("{done} frames written of {frames}")]
    Progress { done: u64, frames: u64 },
    /// Not one solver state per skin.
    #[error("{states} skin states for {skins} skins")]
    Skins { states: usize, skins: usize },
    /// A skin's state with unequal arrays.
    #[error("skin {skin}'s state: {positions} positions but {velocities} velocities")]
    State {
        skin: usize,
        positions: usize,
        velocities: usize,
    },
}
