//! Autosave and crash recovery for one open document.
//!
//! An [`Autosaver`] writes the character every [`AutosaveSettings::interval`]
//! (60 s by default) when it changed, keeping the newest
//! [`AutosaveSettings::generations`] (5) files. [`Autosaver::close_cleanly`]
//! removes them on a clean exit, so autosaves that are still there at the next
//! start mean Plasticine did not close cleanly: [`find_recovery`] lists them,
//! newest first, each loaded and validated, and [`RecoveryReport::describe`]
//! tells the animator what can be recovered and which files are corrupt, and
//! why.
//!
//! # Files
//!
//! ```text
//! DIR/DOCUMENT.autosave.SEQUENCE.YYYY-MM-DDTHH-MM-SS.mmmZ.ron
//! DIR/penguin.autosave.42.2025-03-14T14-02-10.000Z.ron
//! ```
//!
//! Each autosave is an ordinary character file (written by
//! [`save_character`], so validated and atomic) that anyone can open. Its
//! metadata lives in its name, so it is renamed into place together with the
//! content and no sidecar can disagree with it:
//! - `SEQUENCE` orders the autosaves (the newest has the highest number; the
//!   clock may jump, the sequence does not). A new [`Autosaver`] continues
//!   after the highest number already in the directory, so it never reuses
//!   the name of an earlier session's file;
//! - the UTC save time (the `now` the caller passed), to the millisecond,
//!   readable in a file browser.
//!
//! # Never losing the last good autosave
//!
//! Every autosave gets a new name, so writing one never replaces an existing
//! file, and the atomic write means a crash leaves either no new file or a
//! complete one. Only after the new file is committed does the autosaver delete
//! its oldest files beyond `generations`, and it only ever deletes files it
//! wrote itself in this session: those of a session that crashed stay until
//! [`Autosaver::close_cleanly`], so a second crash before the animator decided
//! what to recover cannot rotate them away. A failed save deletes nothing.
//!
//! # Change detection
//!
//! The autosaver hashes the serialized character (compact RON streamed into a
//! 64-bit `SipHash`, no text kept) and saves only when the hash differs from the
//! last autosave's. Nothing depends on the caller remembering to mark the
//! character dirty, and undoing back to the saved state counts as unchanged.
//! The hash is computed only once the interval has passed, so calling
//! [`Autosaver::maybe_save`] from a once-a-second timer costs one
//! serialization per second at most while nothing changed.

use super::{IoError, load_character, save_character};
use crate::character::Character;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::fs;
use std::hash::{DefaultHasher, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often to autosave and how many autosaves to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutosaveSettings {
    /// Minimum time between two autosaves.
    pub interval: Duration,
    /// Autosaves kept per session (at least 1 is always kept).
    pub generations: usize,
}

impl Default for AutosaveSettings {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(60),
            generations: 5,
        }
    }
}

/// After a failed autosave the next try waits this long: a full disk or a
/// lost network folder is not fixed within a frame, and trying every frame
/// would serialize the character 90 times a second.
pub const RETRY_AFTER: Duration = Duration::from_secs(10);

/// Autosaves one document (see the module docs).
///
/// Dropping it without [`close_cleanly`](Self::close_cleanly) leaves the
/// autosaves in place, which is what a crash looks like to the next start.
#[derive(Debug)]
pub struct Autosaver {
    dir: PathBuf,
    document: String,
    settings: AutosaveSettings,
    /// The sequence number the next autosave gets, at least.
    next_sequence: u64,
    /// When the interval started: the last autosave, or the first call.
    clock: Option<SystemTime>,
    /// Fingerprint of the last character autosaved (or marked saved).
    saved_hash: Option<u64>,
    /// Autosaves written by this session, oldest first.
    written: VecDeque<PathBuf>,
    /// After a failure: when to try again, and that the failure was
    /// reported (once per run of failures).
    retry_at: Option<SystemTime>,
    failing: bool,
}

impl Autosaver {
    /// An autosaver writing `dir/document.autosave.*.ron`. `document` is the
    /// file stem (`"penguin"`); it must not be empty nor contain a path
    /// separator. Does no I/O: the directory is created by the first save.
    pub fn new(dir: &Path, document: &str, settings: AutosaveSettings) -> Result<Self, IoError> {
        check_document(dir, document)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            document: document.to_owned(),
            settings: AutosaveSettings {
                generations: settings.generations.max(1),
                ..settings
            },
            next_sequence: 1,
            clock: None,
            saved_hash: None,
            written: VecDeque::new(),
            retry_at: None,
            failing: false,
        })
    }

    /// The directory the autosaves go to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The document stem.
    pub fn document(&self) -> &str {
        &self.document
    }

    /// The settings in force (`generations` at least 1).
    pub fn settings(&self) -> AutosaveSettings {
        self.settings
    }

    /// The autosaves this session wrote and still keeps, newest first.
    pub fn files(&self) -> Vec<PathBuf> {
        self.written.iter().rev().cloned().collect()
    }

    /// Records that `character` is safe on disk as of `now` (just loaded from
    /// the document, or just saved by the user), so no autosave is written
    /// until it changes and the interval has passed.
    pub fn mark_saved(&mut self, character: &Character, now: SystemTime) -> Result<(), IoError> {
        self.saved_hash = Some(self.fingerprint(character)?);
        self.clock = Some(now);
        Ok(())
    }

    /// Autosaves `character` if the interval has passed since the last
    /// autosave (or since the first call, for the first one) and the character
    /// changed since then; returns the file written.
    ///
    /// On error nothing is deleted and the interval is not restarted: the
    /// save is tried again `RETRY_AFTER` later, and again, until it
    /// works. Only the first failure of such a run is returned (the caller
    /// warns once); the later ones return `Ok(None)`, and
    /// [`is_failing`](Self::is_failing) says the last try failed. A clock
    /// that went backwards counts as the interval having passed: waiting
    /// for it to catch up could lose an hour.
    pub fn maybe_save(
        &mut self,
        character: &Character,
        now: SystemTime,
    ) -> Result<Option<PathBuf>, IoError> {
        let start = *self.clock.get_or_insert(now);
        let due = now
            .duration_since(start)
            .map_or(true, |elapsed| elapsed >= self.settings.interval);
        let waiting = self.retry_at.is_some_and(|at| {
            at.duration_since(now)
                .is_ok_and(|left| left > Duration::ZERO && left <= RETRY_AFTER)
        });
        if !due || waiting {
            return Ok(None);
        }
        let hash = self.fingerprint(character)?;
        if self.saved_hash == Some(hash) {
            return Ok(None);
        }
        match self.write(character, hash, now) {
            Ok(path) => {
                if std::mem::take(&mut self.failing) {
                    tracing::info!("autosave works again: {}", path.display());
                }
                self.retry_at = None;
                Ok(Some(path))
            }
            Err(e) => {
                self.retry_at = Some(now + RETRY_AFTER);
                if std::mem::replace(&mut self.failing, true) {
                    tracing::debug!("autosave still failing: {e}");
                    Ok(None)
                } else {
                    Err(e)
                }
            }
        }
    }

    /// Whether the last autosave tried failed (it is being retried every
    /// `RETRY_AFTER`; the edits are safe in memory meanwhile).
    pub fn is_failing(&self) -> bool {
        self.failing
    }

    /// Autosaves `character` now, changed or not (e.g. before a risky
    /// operation); returns the file written.
    pub fn save_now(&mut self, character: &Character, now: SystemTime) -> Result<PathBuf, IoError> {
        let hash = self.fingerprint(character)?;
        self.write(character, hash, now)
    }

    /// Ends the session cleanly: removes every autosave of the document in the
    /// directory (this session's and any left by an earlier crash, whose
    /// recovery was already offered) and stray temporary files of killed
    /// autosaves, so the next start finds nothing to recover.
    ///
    /// Oldest first, so if this is interrupted what remains is the newest
    /// work, not an older state posing as it.
    pub fn close_cleanly(self) -> Result<(), IoError> {
        let (mut autosaves, temps) = match scan(&self.dir, &self.document) {
            Ok(found) => found,
            Err(e) if is_not_found(&e) => return Ok(()),
            Err(e) => return Err(IoError::os(&self.dir, "list the directory", e)),
        };
        autosaves.sort_by_key(|a| (a.sequence, a.saved_at));
        let mut first_error = None;
        for path in autosaves.into_iter().map(|a| a.path).chain(temps) {
            if let Err(e) = fs::remove_file(&path)
                && !is_not_found(&e)
                && first_error.is_none()
            {
                first_error = Some(IoError::os(&path, "remove the autosave", e));
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn write(
        &mut self,
        character: &Character,
        hash: u64,
        now: SystemTime,
    ) -> Result<PathBuf, IoError> {
        // Continue after any autosave already there (an earlier session's, or
        // another instance's), so no existing file is ever replaced.
        let on_disk = scan(&self.dir, &self.document)
            .map(|(found, _)| found.iter().map(|a| a.sequence).max().unwrap_or(0))
            .unwrap_or(0);
        let sequence = self.next_sequence.max(on_disk.saturating_add(1));
        let path = self
            .dir
            .join(autosave_file_name(&self.document, sequence, now));
        save_character(&path, character)?;
        self.next_sequence = sequence.saturating_add(1);
        self.clock = Some(now);
        self.saved_hash = Some(hash);
        self.written.push_back(path.clone());
        self.prune();
        Ok(path)
    }

    /// Deletes this session's oldest autosaves beyond `generations`. Runs only
    /// after a new autosave is committed. A file that cannot be deleted is
    /// kept on the list and retried after the next save.
    fn prune(&mut self) {
        while self.written.len() > self.settings.generations {
            let oldest = &self.written[0];
            match fs::remove_file(oldest) {
                Ok(()) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => {
                    tracing::warn!("cannot remove the old autosave {}: {e}", oldest.display());
                    return;
                }
            }
            self.written.pop_front();
        }
    }

    fn fingerprint(&self, character: &Character) -> Result<u64, IoError> {
        let mut hasher = HashWriter(DefaultHasher::new());
        ron::Options::default()
            .to_writer(&mut hasher, character)
            .map_err(|e| IoError::Serialize {
                path: self.dir.join(&self.document),
                message: e.to_string(),
            })?;
        Ok(hasher.0.finish())
    }
}

/// Feeds serialized text to a hasher without keeping it.
struct HashWriter(DefaultHasher);

impl std::fmt::Write for HashWriter {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.write(s.as_bytes());
        Ok(())
    }
}

/// The file name of an autosave: `DOCUMENT.autosave.SEQUENCE.STAMP.ron`, with
/// the UTC time as `YYYY-MM-DDTHH-MM-SS.mmmZ` (no colons, which some file
/// systems refuse). Times before 1970 or after 9999 are clamped.
pub fn autosave_file_name(document: &str, sequence: u64, saved_at: SystemTime) -> String {
    format!(
        "{document}.autosave.{sequence}.{}.ron",
        format_stamp(saved_at)
    )
}

/// One autosave found by [`find_recovery`].
#[derive(Debug)]
pub struct AutosaveCandidate {
    /// The autosave file.
    pub path: PathBuf,
    /// Higher is newer.
    pub sequence: u64,
    /// When it was saved (from its name, to the millisecond).
    pub saved_at: SystemTime,
    /// Whether it loaded and validated when found, and if not, why.
    pub status: AutosaveStatus,
}

/// Whether an autosave can be recovered.
#[derive(Debug)]
pub enum AutosaveStatus {
    /// It loads and validates.
    Ok,
    /// The loader refused it; the error says why and where.
    Corrupt(IoError),
}

impl AutosaveCandidate {
    /// Whether it loaded and validated when found.
    pub fn is_ok(&self) -> bool {
        matches!(self.status, AutosaveStatus::Ok)
    }

    /// The file name alone, for messages.
    pub fn file_name(&self) -> String {
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    /// Loads it (again: the file may have changed since it was found).
    pub fn load(&self) -> Result<Character, IoError> {
        load_character(&self.path)
    }
}

/// What [`find_recovery`] found for one document.
#[derive(Debug)]
pub struct RecoveryReport {
    /// The directory searched for autosaves.
    pub dir: PathBuf,
    /// The document stem, the `DOCUMENT` part of the autosave file names.
    pub document: String,
    /// Every autosave of the document, newest first.
    pub candidates: Vec<AutosaveCandidate>,
    /// The directory could not be listed (a missing directory is not an
    /// error: there is nothing to recover).
    pub scan_error: Option<IoError>,
}

impl RecoveryReport {
    /// True when Plasticine closed cleanly (or never autosaved this
    /// document): no autosave and no error.
    pub fn is_clean(&self) -> bool {
        self.candidates.is_empty() && self.scan_error.is_none()
    }

    /// The newest autosave that loads.
    pub fn best(&self) -> Option<&AutosaveCandidate> {
        self.candidates.iter().find(|c| c.is_ok())
    }

    /// The corrupt autosaves, newest first.
    pub fn corrupt(&self) -> impl Iterator<Item = (&AutosaveCandidate, &IoError)> {
        self.candidates.iter().filter_map(|c| match &c.status {
            AutosaveStatus::Corrupt(e) => Some((c, e)),
            AutosaveStatus::Ok => None,
        })
    }

    /// Loads [`best`](Self::best); `Ok(None)` when there is nothing to recover.
    pub fn recover(&self) -> Result<Option<Character>, IoError> {
        self.best().map(AutosaveCandidate::load).transpose()
    }

    /// The message for the animator, with times in UTC, e.g.
    ///
    /// ```text
    /// Plasticine did not close cleanly. The newest autosave of penguin
    /// (penguin.autosave.3.2025-03-14T14-02-10.000Z.ron, saved 2025-03-14 14:02:10 UTC)
    /// is corrupt: line 40, column 1: Unexpected end of RON. The last good autosave,
    /// penguin.autosave.2.2025-03-14T14-01-10.000Z.ron from 2025-03-14 14:01:10 UTC
    /// (1 minute older), can be recovered.
    /// ```
    pub fn describe(&self) -> String {
        self.describe_with(format_utc)
    }

    /// [`describe`](Self::describe) with the caller's time format (e.g. local
    /// time, which the standard library cannot compute).
    pub fn describe_with(&self, format_time: impl Fn(SystemTime) -> String) -> String {
        let doc = &self.document;
        let mut out = String::new();
        if let Some(e) = &self.scan_error {
            let _ = write!(out, "Cannot look for autosaves of {doc}: {e}. ");
        }
        if self.candidates.is_empty() {
            if self.scan_error.is_none() {
                let _ = write!(
                    out,
                    "Nothing to recover for {doc}: Plasticine closed cleanly."
                );
            }
            return out.trim_end().to_owned();
        }
        out.push_str("Plasticine did not close cleanly. ");
        let best = self.candidates.iter().position(|c| c.is_ok());
        let newer_corrupt = &self.candidates[..best.unwrap_or(self.candidates.len())];
        let list = |cs: &[AutosaveCandidate]| {
            cs.iter()
                .map(|c| {
                    let reason = match &c.status {
                        AutosaveStatus::Corrupt(e) => reason(e),
                        AutosaveStatus::Ok => String::new(),
                    };
                    format!(
                        "{} (saved {}): {reason}",
                        c.file_name(),
                        format_time(c.saved_at)
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        match (best, newer_corrupt) {
            (Some(_), []) => {
                let c = &self.candidates[0];
                let _ = write!(
                    out,
                    "Recovered work on {doc} from {} is available ({}).",
                    format_time(c.saved_at),
                    c.file_name()
                );
            }
            (Some(b), [one]) => {
                let _ = write!(
                    out,
                    "The newest autosave of {doc} ({}, saved {}) is corrupt: {}.",
                    one.file_name(),
                    format_time(one.saved_at),
                    match &one.status {
                        AutosaveStatus::Corrupt(e) => reason(e),
                        AutosaveStatus::Ok => String::new(),
                    }
                );
                self.describe_good(&mut out, b, &format_time);
            }
            (Some(b), many) => {
                let _ = write!(
                    out,
                    "The {} newest autosaves of {doc} are corrupt: {}.",
                    many.len(),
                    list(many)
                );
                self.describe_good(&mut out, b, &format_time);
            }
            (None, all) => {
                let _ = write!(
                    out,
                    "No autosave of {doc} can be recovered: {} corrupt: {}.",
                    if all.len() == 1 {
                        "the only one is".to_owned()
                    } else {
                        format!("all {} are", all.len())
                    },
                    list(all)
                );
            }
        }
        if let Some(b) = best {
            let older: Vec<_> = self.candidates[b + 1..]
                .iter()
                .filter(|c| !c.is_ok())
                .collect();
            if !older.is_empty() {
                let older: Vec<String> = older
                    .iter()
                    .map(|c| {
                        let AutosaveStatus::Corrupt(e) = &c.status else {
                            unreachable!("filtered on corrupt")
                        };
                        format!("{}: {}", c.file_name(), reason(e))
                    })
                    .collect();
                let _ = write!(
                    out,
                    " Older autosaves that are also corrupt: {}.",
                    older.join("; ")
                );
            }
        }
        out
    }

    /// "The last good autosave, NAME from TIME (1 minute older), can be recovered."
    fn describe_good(
        &self,
        out: &mut String,
        best: usize,
        format_time: &impl Fn(SystemTime) -> String,
    ) {
        let good = &self.candidates[best];
        let age = self.candidates[0]
            .saved_at
            .duration_since(good.saved_at)
            .map(|d| format!(" ({} older)", human_duration(d)))
            .unwrap_or_default();
        let _ = write!(
            out,
            " The last good autosave, {} from {}{age}, can be recovered.",
            good.file_name(),
            format_time(good.saved_at),
        );
    }
}

/// Lists the autosaves of `document` in `dir`, newest first, each loaded and
/// validated. A missing directory, or one without autosaves, gives a clean
/// report (nothing to recover). Call it at start, before creating the
/// document's [`Autosaver`].
pub fn find_recovery(dir: &Path, document: &str) -> RecoveryReport {
    let mut report = RecoveryReport {
        dir: dir.to_path_buf(),
        document: document.to_owned(),
        candidates: Vec::new(),
        scan_error: None,
    };
    if let Err(e) = check_document(dir, document) {
        report.scan_error = Some(e);
        return report;
    }
    let found = match scan(dir, document) {
        Ok((found, _temps)) => found,
        Err(e) if is_not_found(&e) => return report,
        Err(e) => {
            report.scan_error = Some(IoError::os(dir, "list the directory", e));
            return report;
        }
    };
    report.candidates = found
        .into_iter()
        .map(|f| AutosaveCandidate {
            status: match load_character(&f.path) {
                Ok(_) => AutosaveStatus::Ok,
                Err(e) => AutosaveStatus::Corrupt(e),
            },
            path: f.path,
            sequence: f.sequence,
            saved_at: f.saved_at,
        })
        .collect();
    report
        .candidates
        .sort_by_key(|c| std::cmp::Reverse((c.sequence, c.saved_at)));
    report
}

/// An autosave file name, parsed.
struct Found {
    path: PathBuf,
    sequence: u64,
    saved_at: SystemTime,
}

/// The autosaves of `document` in `dir` (unordered), and the temporary files
/// left by killed autosave writes. Names that do not follow the scheme are not
/// autosaves and are left alone.
fn scan(dir: &Path, document: &str) -> io::Result<(Vec<Found>, Vec<PathBuf>)> {
    let prefix = format!("{document}.autosave.");
    let temp_prefix = format!(".{prefix}");
    let mut found = Vec::new();
    let mut temps = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(rest) = name.strip_prefix(&prefix) {
            if let Some((sequence, saved_at)) = parse_rest(rest) {
                found.push(Found {
                    path: entry.path(),
                    sequence,
                    saved_at,
                });
            }
        } else if name.starts_with(&temp_prefix) && name.ends_with(".tmp") {
            temps.push(entry.path());
        }
    }
    Ok((found, temps))
}

/// Parses `SEQUENCE.STAMP.ron`.
fn parse_rest(rest: &str) -> Option<(u64, SystemTime)> {
    let rest = rest.strip_suffix(".ron")?;
    let (sequence, stamp) = rest.split_once('.')?;
    if sequence.is_empty() || !sequence.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((sequence.parse().ok()?, parse_stamp(stamp)?))
}

fn check_document(dir: &Path, document: &str) -> Result<(), IoError> {
    let bad = document.is_empty()
        || document == "."
        || document == ".."
        || document.contains(['/', '\\', '\0']);
    if bad {
        return Err(IoError::BadInput {
            path: dir.join(document),
            message: format!(
                "\"{document}\" is not a document name (a file stem without a path separator)"
            ),
        });
    }
    Ok(())
}

fn is_not_found(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
}

/// The error without the file name (the message already names the file).
fn reason(e: &IoError) -> String {
    match e {
        IoError::Parse {
            line, col, message, ..
        } => return format!("line {line}, column {col}: {message}"),
        IoError::NotUtf8 {
            line, col, offset, ..
        } => return format!("line {line}, column {col}: not valid UTF-8 (byte {offset})"),
        _ => {}
    }
    let text = e.to_string();
    let path = e.path().display().to_string();
    match text.strip_prefix(&path) {
        Some(rest) => rest.trim_start_matches([':', ' ']).to_owned(),
        None => text,
    }
}

/// "45 seconds", "1 minute", "2 hours 5 minutes", "3 days".
fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    let unit = |n: u64, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    match s {
        0..60 => unit(s, "second"),
        60..3600 => unit(s / 60, "minute"),
        3600..86400 if (s % 3600) / 60 == 0 => unit(s / 3600, "hour"),
        3600..86400 => format!(
            "{} {}",
            unit(s / 3600, "hour"),
            unit((s % 3600) / 60, "minute")
        ),
        _ => unit(s / 86400, "day"),
    }
}

// Civil dates (proleptic Gregorian, UTC) without a date crate: Howard
// Hinnant's `days_from_civil` / `civil_from_days`.

const MAX_MILLIS: u64 = 253_402_300_799_999; // 9999-12-31T23:59:59.999Z

fn millis_since_epoch(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .min(MAX_MILLIS)
}

struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
    milli: u32,
}

fn civil(t: SystemTime) -> Civil {
    let ms = millis_since_epoch(t);
    let days = (ms / 86_400_000) as i64;
    let in_day = ms % 86_400_000;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    Civil {
        year,
        month,
        day,
        hour: (in_day / 3_600_000) as u32,
        minute: (in_day / 60_000 % 60) as u32,
        second: (in_day / 1000 % 60) as u32,
        milli: (in_day % 1000) as u32,
    }
}

fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DDTHH-MM-SS.mmmZ`.
fn format_stamp(t: SystemTime) -> String {
    let c = civil(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}-{:02}-{:02}.{:03}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second, c.milli
    )
}

fn parse_stamp(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 24 || &b[4..5] != b"-" || &b[7..8] != b"-" || &b[10..11] != b"T" {
        return None;
    }
    if &b[13..14] != b"-" || &b[16..17] != b"-" || &b[19..20] != b"." || &b[23..24] != b"Z" {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second, milli) = (num(11..13)?, num(14..16)?, num(17..19)?, num(20..23)?);
    if year < 1970 || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let days = u64::try_from(days_from_civil(i64::from(year), month, day)).ok()?;
    let ms = ((days * 24 + u64::from(hour)) * 60 + u64::from(minute)) * 60_000
        + u64::from(second) * 1000
        + u64::from(milli);
    Some(UNIX_EPOCH + Duration::from_millis(ms))
}

/// `2025-03-14 14:02:10 UTC`.
fn format_utc(t: SystemTime) -> String {
    let c = civil(t);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_round_trips_and_matches_known_dates() {
        let t = UNIX_EPOCH + Duration::from_millis(1_741_960_930_123);
        assert_eq!(format_stamp(t), "2025-03-14T14-02-10.123Z");
        assert_eq!(parse_stamp("2025-03-14T14-02-10.123Z"), Some(t));
        assert_eq!(format_utc(t), "2025-03-14 14:02:10 UTC");
        assert_eq!(format_stamp(UNIX_EPOCH), "1970-01-01T00-00-00.000Z");
        // A leap day, and every day of a few years both ways.
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(format_stamp(leap), "2000-02-29T00-00-00.000Z");
        for day in (0..40_000u64).step_by(7) {
            let t = UNIX_EPOCH + Duration::from_millis(day * 86_400_000 + 45_296_789);
            assert_eq!(parse_stamp(&format_stamp(t)), Some(t), "day {day}");
        }
    }

    #[test]
    fn names_parse_strictly() {
        let t = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let name = autosave_file_name("my.penguin", 12, t);
        let rest = name.strip_prefix("my.penguin.autosave.").unwrap();
        assert_eq!(parse_rest(rest), Some((12, t)));
        for bad in [
            "12.ron",
            "x.2023-11-14T22-13-20.000Z.ron",
            "12.2023-11-14T22-13-20.000Z.ron.bak",
            "12.2023-13-14T22-13-20.000Z.ron",
            "+1.2023-11-14T22-13-20.000Z.ron",
        ] {
            assert_eq!(parse_rest(bad), None, "{bad}");
        }
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(Duration::from_secs(1)), "1 second");
        assert_eq!(human_duration(Duration::from_secs(60)), "1 minute");
        assert_eq!(human_duration(Duration::from_secs(150)), "2 minutes");
        assert_eq!(human_duration(Duration::from_secs(7200)), "2 hours");
        assert_eq!(
            human_duration(Duration::from_secs(3900)),
            "1 hour 5 minutes"
        );
        assert_eq!(human_duration(Duration::from_secs(3 * 86400)), "3 days");
    }

    #[test]
    fn document_names_with_paths_are_refused() {
        for bad in ["", ".", "..", "a/b", "a\\b"] {
            assert!(
                Autosaver::new(Path::new("d"), bad, AutosaveSettings::default()).is_err(),
                "{bad:?}"
            );
        }
        assert!(Autosaver::new(Path::new("d"), "pen.guin", AutosaveSettings::default()).is_ok());
    }
}
