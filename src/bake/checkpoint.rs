//! The bake checkpoint (`bake.resume`): what a cancelled bake leaves next to
//! its partial cache so that `--resume` continues it bit for bit.
//!
//! # Format, version 1
//!
//! Little-endian, no padding. Written atomically ([`write_atomic`]).
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `PLSTBKCP` (ASCII) |
//! | 8 | 4 | format version, `u32`, = 1 |
//! | 12 | 8 | body length `B`, `u64` |
//! | 20 | `B` | body |
//! | 20 + `B` | 8 | FNV-1a 64 of bytes 0 .. 20 + `B`, `u64` |
//!
//! The file is exactly 28 + `B` bytes. Strings are a `u32` byte length and
//! UTF-8; `opt<T>` is a `u8` 0 or 1 and then `T`. The body, in order:
//!
//! - **what was baked** ([`BakeIdentity`]): character name (string), character
//!   fingerprint (`u64`, FNV-1a 64 of the character's compact RON before
//!   resampling), solver settings (string, their JSON, compared exactly),
//!   resolution (`opt<u32 m, u32 n>`), fps (`f32`), duration (`f64`), start
//!   time (`f64`), frame count (`u64`), OBJ interval (`opt<u64>`), and the skins
//!   as baked (`u32` count, then name, `u32` m, `u32` n each);
//! - **progress**: frames written (`u64`, at least 1), time of the last of them
//!   (`f64`), length of the partial cache holding them (`u64`), OBJ frames
//!   written (`u64`), wall seconds spent so far (`f64`), and the solver events
//!   so far (`u32` count, strings);
//! - **solver state** ([`SimState`]): clock (`f64`), integrator
//!   ([`IntegratorKind::name`], string), `u32` skin count, then per skin: `u32`
//!   point count `P`, `P` positions and `P` velocities (3 × `f32` each), time,
//!   step, step limit (`f64` each), the statistics (steps, error rejections,
//!   constraint rejections, rollbacks, full and velocity-only evaluations:
//!   `u64`; smallest and largest step: `f64`; largest correction: `f32`), and
//!   the integrator's state (full and velocity-only evaluations, solver
//!   iterations: `u64`).
//!
//! Every float is stored as its bits, so the state comes back exactly.

use crate::character::Character;
use crate::io::{IoError, write_atomic};
use crate::skin::{
    EvalCount, IntegratorKind, IntegratorState, SimState, SkinState, SkinStats, SolverSettings,
};
use glam::Vec3;
use std::path::Path;

/// The first 8 bytes of a checkpoint.
pub const CHECKPOINT_MAGIC: [u8; 8] = *b"PLSTBKCP";
/// The checkpoint version this build writes and reads.
pub const CHECKPOINT_VERSION: u32 = 1;
/// Largest checkpoint read (a skin's state is at most
/// [`Skin::MAX_POINTS`](crate::character::Skin::MAX_POINTS) × 24 bytes).
const MAX_CHECKPOINT_BYTES: u64 = 1 << 34;
const PREAMBLE: usize = 20;

/// FNV-1a, 64 bit: a stable hash (unlike `DefaultHasher`, the same in every
/// build), for fingerprints and the checksum.
#[derive(Clone, Copy, Debug)]
pub struct Fnv64(pub u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv64 {
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    pub fn of(bytes: &[u8]) -> u64 {
        let mut h = Self::default();
        h.update(bytes);
        h.0
    }
}

impl std::fmt::Write for Fnv64 {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.update(s.as_bytes());
        Ok(())
    }
}

/// The character's fingerprint: FNV-1a 64 of its compact RON (no text kept).
pub fn fingerprint(character: &Character) -> u64 {
    let mut h = Fnv64::default();
    ron::Options::default()
        .to_writer(&mut h, character)
        .expect("a character serializes");
    h.0
}

/// What a bake is of: a checkpoint continues only a bake with the same.
#[derive(Clone, Debug, PartialEq)]
pub struct BakeIdentity {
    pub character: String,
    pub fingerprint: u64,
    /// The solver settings as JSON (exact: floats print as the shortest text
    /// that reads back to the same bits).
    pub settings: String,
    pub resolution: Option<(usize, usize)>,
    pub fps: f32,
    pub duration: f64,
    pub start: f64,
    /// Frames in the finished cache.
    pub frames: u64,
    pub obj_every: Option<usize>,
    /// Skins as baked (after resampling): name, m, n.
    pub skins: Vec<(String, usize, usize)>,
}

impl BakeIdentity {
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
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub identity: BakeIdentity,
    /// Frames written (0 .. done), at least 1.
    pub done: u64,
    /// Time of frame `done - 1`.
    pub last_time: f64,
    /// Length of the partial cache holding those frames.
    pub cache_bytes: u64,
    pub obj_frames: u64,
    pub wall_seconds: f64,
    pub events: Vec<String>,
    pub state: SimState,
}

struct Enc(Vec<u8>);

impl Enc {
    fn u8(&mut self, x: u8) {
        self.0.push(x);
    }
    fn u32(&mut self, x: u32) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    fn f32(&mut self, x: f32) {
        self.u32(x.to_bits());
    }
    fn f64(&mut self, x: f64) {
        self.u64(x.to_bits());
    }
    fn len(&mut self, n: usize) {
        self.u32(u32::try_from(n).expect("checkpoint lists fit in u32"));
    }
    fn str(&mut self, s: &str) {
        self.len(s.len());
        self.0.extend_from_slice(s.as_bytes());
    }
    fn vec3s(&mut self, v: &[Vec3]) {
        for p in v {
            for c in p.to_array() {
                self.f32(c);
            }
        }
    }
}

struct Dec<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    pos: usize,
}

impl Dec<'_> {
    fn corrupt(&self, offset: usize, message: impl Into<String>) -> IoError {
        IoError::Corrupt {
            path: self.path.to_path_buf(),
            offset: offset as u64,
            message: message.into(),
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], IoError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(self.corrupt(
                self.pos,
                format!("{what} runs past the end of the checkpoint's body"),
            ));
        };
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self, what: &str) -> Result<u8, IoError> {
        Ok(self.take(1, what)?[0])
    }
    fn u32(&mut self, what: &str) -> Result<u32, IoError> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }
    fn u64(&mut self, what: &str) -> Result<u64, IoError> {
        Ok(u64::from_le_bytes(self.take(8, what)?.try_into().unwrap()))
    }
    fn f32(&mut self, what: &str) -> Result<f32, IoError> {
        Ok(f32::from_bits(self.u32(what)?))
    }
    fn f64(&mut self, what: &str) -> Result<f64, IoError> {
        Ok(f64::from_bits(self.u64(what)?))
    }
    fn bool(&mut self, what: &str) -> Result<bool, IoError> {
        let at = self.pos;
        match self.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            x => Err(self.corrupt(at, format!("{what}: flag {x} is neither 0 nor 1"))),
        }
    }
    /// A count of items of at least `item_bytes` each: no larger than what is left.
    fn count(&mut self, item_bytes: usize, what: &str) -> Result<usize, IoError> {
        let at = self.pos;
        let n = self.u32(what)? as usize;
        if n.saturating_mul(item_bytes.max(1)) > self.bytes.len() - self.pos {
            return Err(self.corrupt(at, format!("{what}: {n} is more than the file holds")));
        }
        Ok(n)
    }
    fn str(&mut self, what: &str) -> Result<String, IoError> {
        let n = self.count(1, what)?;
        let at = self.pos;
        let b = self.take(n, what)?.to_vec();
        String::from_utf8(b).map_err(|_| self.corrupt(at, format!("{what} is not UTF-8")))
    }
    fn usize(&mut self, what: &str) -> Result<usize, IoError> {
        let at = self.pos;
        usize::try_from(self.u64(what)?).map_err(|_| self.corrupt(at, format!("{what} too large")))
    }
    fn vec3s(&mut self, n: usize, what: &str) -> Result<Vec<Vec3>, IoError> {
        let b = self.take(n * 12, what)?;
        Ok(b.chunks_exact(12)
            .map(|c| {
                let f = |k: usize| f32::from_le_bytes(c[k..k + 4].try_into().unwrap());
                Vec3::new(f(0), f(4), f(8))
            })
            .collect())
    }
}

impl Checkpoint {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut e = Enc(Vec::with_capacity(
            4096 + self
                .state
                .skins
                .iter()
                .map(|s| 24 * s.position.len())
                .sum::<usize>(),
        ));
        let id = &self.identity;
        e.str(&id.character);
        e.u64(id.fingerprint);
        e.str(&id.settings);
        match id.resolution {
            Some((m, n)) => {
                e.u8(1);
                e.u32(m as u32);
                e.u32(n as u32);
            }
            None => e.u8(0),
        }
        e.f32(id.fps);
        e.f64(id.duration);
        e.f64(id.start);
        e.u64(id.frames);
        match id.obj_every {
            Some(k) => {
                e.u8(1);
                e.u64(k as u64);
            }
            None => e.u8(0),
        }
        e.len(id.skins.len());
        for (name, m, n) in &id.skins {
            e.str(name);
            e.u32(*m as u32);
            e.u32(*n as u32);
        }
        e.u64(self.done);
        e.f64(self.last_time);
        e.u64(self.cache_bytes);
        e.u64(self.obj_frames);
        e.f64(self.wall_seconds);
        e.len(self.events.len());
        for ev in &self.events {
            e.str(ev);
        }
        let st = &self.state;
        e.f64(st.clock);
        e.str(st.integrator.name());
        e.len(st.skins.len());
        for s in &st.skins {
            e.len(s.position.len());
            e.vec3s(&s.position);
            e.vec3s(&s.velocity);
            e.f64(s.time);
            e.f64(s.h);
            e.f64(s.h_cap);
            let k = &s.stats;
            for x in [
                k.steps,
                k.error_rejections,
                k.constraint_rejections,
                k.rollbacks,
                k.evals.full,
                k.evals.velocity_only,
            ] {
                e.u64(x);
            }
            e.f64(k.smallest_step);
            e.f64(k.largest_step);
            e.f32(k.max_correction);
            e.u64(s.integrator.evals.full);
            e.u64(s.integrator.evals.velocity_only);
            e.u64(s.integrator.solver_iterations);
        }
        let body = e.0;
        let mut out = Vec::with_capacity(body.len() + PREAMBLE + 8);
        out.extend_from_slice(&CHECKPOINT_MAGIC);
        out.extend_from_slice(&CHECKPOINT_VERSION.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        let sum = Fnv64::of(&out);
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
        let total = body_len.checked_add(PREAMBLE as u64 + 8);
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
        let end = bytes.len() - 8;
        let stored = u64::from_le_bytes(bytes[end..].try_into().unwrap());
        let sum = Fnv64::of(&bytes[..end]);
        if stored != sum {
            return Err(corrupt(
                end,
                format!(
                    "checksum {stored:016x} does not match the content's {sum:016x}: the checkpoint is damaged"
                ),
            ));
        }
        let mut d = Dec {
            path,
            bytes: &bytes[..end],
            pos: PREAMBLE,
        };
        let character = d.str("the character name")?;
        let fingerprint = d.u64("the character fingerprint")?;
        let settings = d.str("the solver settings")?;
        let resolution = if d.bool("the resolution flag")? {
            Some((
                d.u32("the resolution")? as usize,
                d.u32("the resolution")? as usize,
            ))
        } else {
            None
        };
        let fps = d.f32("fps")?;
        let duration = d.f64("the duration")?;
        let start = d.f64("the start time")?;
        let frames = d.u64("the frame count")?;
        let obj_every = if d.bool("the OBJ flag")? {
            Some(d.usize("the OBJ interval")?)
        } else {
            None
        };
        let n = d.count(12, "the skin count")?;
        let mut skins = Vec::with_capacity(n);
        for k in 0..n {
            let what = format!("skin {k}");
            let name = d.str(&what)?;
            skins.push((name, d.u32(&what)? as usize, d.u32(&what)? as usize));
        }
        let at = d.pos;
        let done = d.u64("the frames written")?;
        if done == 0 || done > frames {
            return Err(d.corrupt(at, format!("{done} frames written of {frames}")));
        }
        let last_time = d.f64("the last frame's time")?;
        let cache_bytes = d.u64("the partial cache's length")?;
        let obj_frames = d.u64("the OBJ frames written")?;
        let wall_seconds = d.f64("the wall time")?;
        let n = d.count(4, "the event count")?;
        let mut events = Vec::with_capacity(n);
        for k in 0..n {
            events.push(d.str(&format!("event {k}"))?);
        }
        let clock = d.f64("the clock")?;
        let at = d.pos;
        let name = d.str("the integrator")?;
        let integrator = IntegratorKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| d.corrupt(at, format!("unknown integrator {name:?}")))?;
        let n = d.count(4, "the skin state count")?;
        if n != skins.len() {
            return Err(d.corrupt(at, format!("{n} skin states for {} skins", skins.len())));
        }
        let mut states = Vec::with_capacity(n);
        for k in 0..n {
            let what = format!("skin {k}'s state");
            let p = d.count(24, &what)?;
            let position = d.vec3s(p, &what)?;
            let velocity = d.vec3s(p, &what)?;
            let time = d.f64(&what)?;
            let h = d.f64(&what)?;
            let h_cap = d.f64(&what)?;
            let mut c = [0u64; 6];
            for x in &mut c {
                *x = d.u64(&what)?;
            }
            let stats = SkinStats {
                steps: c[0],
                error_rejections: c[1],
                constraint_rejections: c[2],
                rollbacks: c[3],
                evals: EvalCount {
                    full: c[4],
                    velocity_only: c[5],
                },
                smallest_step: d.f64(&what)?,
                largest_step: d.f64(&what)?,
                max_correction: d.f32(&what)?,
            };
            let integ = IntegratorState {
                evals: EvalCount {
                    full: d.u64(&what)?,
                    velocity_only: d.u64(&what)?,
                },
                solver_iterations: d.u64(&what)?,
            };
            states.push(SkinState {
                position,
                velocity,
                time,
                h,
                h_cap,
                stats,
                integrator: integ,
            });
        }
        if d.pos != d.bytes.len() {
            return Err(d.corrupt(
                d.pos,
                format!("{} unexpected bytes after the state", d.bytes.len() - d.pos),
            ));
        }
        Ok(Self {
            identity: BakeIdentity {
                character,
                fingerprint,
                settings,
                resolution,
                fps,
                duration,
                start,
                frames,
                obj_every,
                skins,
            },
            done,
            last_time,
            cache_bytes,
            obj_frames,
            wall_seconds,
            events,
            state: SimState {
                clock,
                integrator,
                skins: states,
            },
        })
    }
}
