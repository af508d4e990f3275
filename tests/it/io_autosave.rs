//! Autosave and crash recovery on real files: when autosaves are written, how
//! many are kept, what a crash leaves to recover, how corrupt autosaves are
//! reported, and that a failed save loses nothing.

use plasticine::character::Character;
use plasticine::io::{
    AutosaveSettings, AutosaveStatus, Autosaver, IoError, RecoveryReport, find_recovery,
    load_character,
};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const DOC: &str = "penguin";

/// 2023-11-14 22:13:20 UTC.
fn t(seconds_after: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000 + seconds_after)
}

fn penguin() -> Character {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/penguin.ron");
    load_character(&path).unwrap()
}

/// The penguin after `k` edits: renamed and with its second joint moved.
fn edited(k: u32) -> Character {
    let mut c = penguin();
    c.name = format!("penguin edit {k}");
    c.skeleton.joints[1].offset.y += 0.01 * k as f32;
    c
}

fn settings(generations: usize) -> AutosaveSettings {
    AutosaveSettings {
        interval: Duration::from_secs(60),
        generations,
    }
}

/// Every file in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn sequences(report: &RecoveryReport) -> Vec<u64> {
    report.candidates.iter().map(|c| c.sequence).collect()
}

fn corrupt_error(report: &RecoveryReport, index: usize) -> &IoError {
    match &report.candidates[index].status {
        AutosaveStatus::Corrupt(e) => e,
        AutosaveStatus::Ok => panic!("candidate {index} loads: {report:?}"),
    }
}

#[test]
fn saves_only_when_the_interval_passed_and_the_character_changed() {
    let dir = tempfile::tempdir().unwrap();
    let mut saver = Autosaver::new(dir.path(), DOC, settings(5)).unwrap();
    saver.mark_saved(&edited(0), t(0)).unwrap();

    // Changed, but the interval has not passed.
    assert_eq!(saver.maybe_save(&edited(1), t(59)).unwrap(), None);
    // The interval passed, but nothing changed.
    assert_eq!(saver.maybe_save(&edited(0), t(61)).unwrap(), None);
    assert!(listing(dir.path()).is_empty());
    // Both.
    let first = saver.maybe_save(&edited(1), t(61)).unwrap().unwrap();
    assert_eq!(load_character(&first).unwrap(), edited(1));

    // The interval restarts at the autosave.
    assert_eq!(saver.maybe_save(&edited(2), t(61 + 59)).unwrap(), None);
    // Unchanged since the last autosave (an edit undone counts as unchanged).
    assert_eq!(saver.maybe_save(&edited(1), t(61 + 60)).unwrap(), None);
    let second = saver.maybe_save(&edited(2), t(61 + 60)).unwrap().unwrap();
    assert_ne!(first, second);
    assert_eq!(load_character(&second).unwrap(), edited(2));
    assert_eq!(listing(dir.path()).len(), 2);
}

#[test]
fn first_autosave_comes_one_interval_after_the_first_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut saver = Autosaver::new(dir.path(), DOC, settings(5)).unwrap();
    // No baseline: the character may hold unsaved work, so it is saved once
    // the interval has passed.
    assert_eq!(saver.maybe_save(&edited(0), t(0)).unwrap(), None);
    assert_eq!(saver.maybe_save(&edited(0), t(30)).unwrap(), None);
    let path = saver.maybe_save(&edited(0), t(60)).unwrap().unwrap();
    assert_eq!(load_character(&path).unwrap(), edited(0));
}

#[test]
fn rotation_keeps_exactly_n_generations_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut saver = Autosaver::new(dir.path(), DOC, settings(3)).unwrap();
    for k in 1..=7u32 {
        saver.save_now(&edited(k), t(60 * u64::from(k))).unwrap();
        assert_eq!(listing(dir.path()).len(), (k as usize).min(3), "after {k}");
    }
    // No temporary files left behind either.
    assert!(listing(dir.path()).iter().all(|n| n.ends_with(".ron")));

    let report = find_recovery(dir.path(), DOC);
    assert_eq!(sequences(&report), [7, 6, 5]);
    for (c, k) in report.candidates.iter().zip([7u32, 6, 5]) {
        assert!(c.is_ok(), "{:?}", c.status);
        assert_eq!(c.saved_at, t(60 * u64::from(k)));
        assert_eq!(c.load().unwrap(), edited(k));
    }
    let paths: Vec<PathBuf> = report.candidates.iter().map(|c| c.path.clone()).collect();
    assert_eq!(saver.files(), paths);
    assert_eq!(
        report.candidates[0].path.file_name().unwrap(),
        "penguin.autosave.7.2023-11-14T22-20-20.000Z.ron"
    );
}

#[test]
fn after_a_crash_the_newest_autosave_is_offered_and_loads() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut saver = Autosaver::new(dir.path(), DOC, settings(5)).unwrap();
        saver.save_now(&edited(1), t(0)).unwrap();
        saver.save_now(&edited(2), t(70)).unwrap();
        // Dropped without close_cleanly: a crash.
    }
    let report = find_recovery(dir.path(), DOC);
    assert!(!report.is_clean());
    assert_eq!(sequences(&report), [2, 1]);
    let best = report.best().unwrap();
    assert_eq!(best.sequence, 2);
    assert_eq!(best.saved_at, t(70));
    assert_eq!(report.recover().unwrap(), Some(edited(2)));

    let message = report.describe();
    assert_eq!(
        message,
        "Plasticine did not close cleanly. Recovered work on penguin from \
         2023-11-14 22:14:30 UTC is available \
         (penguin.autosave.2.2023-11-14T22-14-30.000Z.ron)."
    );
}

#[test]
fn truncated_newest_autosave_is_reported_and_the_previous_one_offered() {
    let dir = tempfile::tempdir().unwrap();
    let mut saver = Autosaver::new(dir.path(), DOC, settings(5)).unwrap();
    saver.save_now(&edited(1), t(0)).unwrap();
    let newest = saver.save_now(&edited(2), t(60)).unwrap();
    drop(saver);
    let bytes = fs::read(&newest).unwrap();
    fs::write(&newest, &bytes[..bytes.len() / 2]).unwrap();

    let report = find_recovery(dir.path(), DOC);
    assert_eq!(sequences(&report), [2, 1]);
    let err = corrupt_error(&report, 0);
    assert!(matches!(err, IoError::Parse { .. }), "{err:?}");
    assert_eq!(err.path(), newest);
    let best = report.best().unwrap();
    assert_eq!(best.sequence, 1);
    assert_eq!(report.recover().unwrap(), Some(edited(1)));

    let message = report.describe();
    let IoError::Parse { line, col, .. } = err else {
        unreachable!()
    };
    let expected_start = format!(
        "Plasticine did not close cleanly. The newest autosave of penguin \
         (penguin.autosave.2.2023-11-14T22-14-20.000Z.ron, saved 2023-11-14 22:14:20 UTC) \
         is corrupt: line {line}, column {col}: "
    );
    assert!(message.starts_with(&expected_start), "{message}");
    assert!(
        message.ends_with(
            "The last good autosave, penguin.autosave.1.2023-11-14T22-13-20.000Z.ron \
             from 2023-11-14 22:13:20 UTC (1 minute older), can be recovered."
        ),
        "{message}"
    );
}

#[test]
fn garbage_and_invalid_autosaves_are_reported_with_their_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut saver = Autosaver::new(dir.path(), DOC, settings(5)).unwrap();
    saver.save_now(&edited(1), t(0)).unwrap();
    let invalid = saver.save_now(&edited(2), t(60)).unwrap();
    let garbage = saver.save_now(&edited(3), t(120)).unwrap();
    drop(saver);
    fs::write(&garbage, b"\x00\xff\xfe not a character").unwrap();
    // Valid RON, but a field no character may have.
    let text = fs::read_to_string(&invalid).unwrap();
    let text = text.replace("global_damping: 0.5", "global_damping: -1.0");
    assert!(text.contains("global_damping: -1.0"));
    fs::write(&invalid, text).unwrap();

    let report = find_recovery(dir.path(), DOC);
    assert_eq!(sequences(&report), [3, 2, 1]);
    assert!(matches!(corrupt_error(&report, 0), IoError::NotUtf8 { .. }));
    let IoError::Invalid { field, .. } = corrupt_error(&report, 1) else {
        panic!("{:?}", report.candidates[1].status)
    };
    assert_eq!(field, "environment.global_damping");
    assert_eq!(report.best().unwrap().sequence, 1);
    assert_eq!(report.recover().unwrap(), Some(edited(1)));

    let message = report.describe();
    assert!(
        message.contains("The 2 newest autosaves of penguin are corrupt: "),
        "{message}"
    );
    assert!(
        message.contains(
            "(saved 2023-11-14 22:15:20 UTC): line 1, column 2: not valid UTF-8 (byte 1)"
        ),
        "{message}"
    );
    assert!(
        message.contains("environment.global_damping: must be finite and non-negative, got -1"),
        "{message}"
    );
    for name in [&garbage, &invalid] {
        let name = name.file_name().unwrap().to_str().unwrap();
        assert!(message.contains(name), "{message}");
    }
    assert!(message.ends_with("can be recovered."), "{message}");
}

#[test]
fn when_every_autosave_is_corrupt_nothing_is_offered() {
    let dir = tempfile::tempdir().unwrap();
    let mut saver = Autosaver::new(dir.path(), DOC, settings(5)).unwrap();
    let a = saver.save_now(&edited(1), t(0)).unwrap();
    let b = saver.save_now(&edited(2), t(60)).unwrap();
    drop(saver);
    fs::write(&a, b"").unwrap();
    fs::write(
        &b,
        b"(format: \"plasticine-character\", version: 1, character: (",
    )
    .unwrap();

    let report = find_recovery(dir.path(), DOC);
    assert!(!report.is_clean());
    assert_eq!(report.candidates.len(), 2);
    assert_eq!(report.corrupt().count(), 2);
    assert!(report.best().is_none());
    assert_eq!(report.recover().unwrap(), None);
    let message = report.describe();
    assert!(
        message.starts_with(
            "Plasticine did not close cleanly. No autosave of penguin can be recovered: \
             all 2 are corrupt: penguin.autosave.2."
        ),
        "{message}"
    );
    assert!(
        message.contains(a.file_name().unwrap().to_str().unwrap()),
        "{message}"
    );
}

#[test]
fn clean_close_leaves_nothing_to_recover() {
    let dir = tempfile::tempdir().unwrap();
    // An earlier session crashed, leaving an autosave and a killed write's
    // temporary file; the document itself sits beside them.
    {
        let mut crashed = Autosaver::new(dir.path(), DOC, settings(5)).unwrap();
        crashed.save_now(&edited(1), t(0)).unwrap();
    }
    let temp = dir
        .path()
        .join(".penguin.autosave.9.2023-11-14T22-13-20.000Z.ron.123.0.tmp");
    fs::write(&temp, b"(format: ").unwrap();
    plasticine::io::save_character(&dir.path().join("penguin.ron"), &edited(0)).unwrap();
    // Another document's autosave is not this one's to remove.
    let mut other = Autosaver::new(dir.path(), "walrus", settings(5)).unwrap();
    let walrus = other.save_now(&edited(5), t(0)).unwrap();

    let mut saver = Autosaver::new(dir.path(), DOC, settings(5)).unwrap();
    saver.save_now(&edited(2), t(60)).unwrap();
    saver.save_now(&edited(3), t(120)).unwrap();
    assert_eq!(find_recovery(dir.path(), DOC).candidates.len(), 3);
    saver.close_cleanly().unwrap();

    let report = find_recovery(dir.path(), DOC);
    assert!(report.is_clean(), "{report:?}");
    assert!(report.best().is_none());
    assert_eq!(report.recover().unwrap(), None);
    assert_eq!(
        report.describe(),
        "Nothing to recover for penguin: Plasticine closed cleanly."
    );
    assert_eq!(
        listing(dir.path()),
        [
            "penguin.ron".to_owned(),
            walrus.file_name().unwrap().to_string_lossy().into_owned()
        ]
    );
}

#[test]
fn no_directory_means_nothing_to_recover() {
    let dir = tempfile::tempdir().unwrap();
    let report = find_recovery(&dir.path().join("never-created"), DOC);
    assert!(report.is_clean());
    assert!(report.best().is_none());
}

#[test]
fn a_new_session_keeps_the_crashed_sessions_autosaves() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut first = Autosaver::new(dir.path(), DOC, settings(2)).unwrap();
        for k in 1..=3u32 {
            first.save_now(&edited(k), t(60 * u64::from(k))).unwrap();
        }
    }
    // The second session starts after a crash and writes more than
    // `generations` autosaves before crashing too.
    {
        let mut second = Autosaver::new(dir.path(), DOC, settings(2)).unwrap();
        for k in 11..=13u32 {
            second.save_now(&edited(k), t(60 * u64::from(k))).unwrap();
        }
    }
    let report = find_recovery(dir.path(), DOC);
    // Sequence numbers continue; the first session's two survivors remain.
    assert_eq!(sequences(&report), [6, 5, 3, 2]);
    assert_eq!(report.recover().unwrap(), Some(edited(13)));
    assert_eq!(report.candidates[2].load().unwrap(), edited(3));
}

#[test]
fn a_failed_save_returns_the_error_and_keeps_the_previous_autosaves() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("autosaves");
    let mut saver = Autosaver::new(&dir, DOC, settings(1)).unwrap();
    let good = saver.save_now(&edited(1), t(0)).unwrap();
    let good_bytes = fs::read(&good).unwrap();

    // An invalid character is refused before anything is written or rotated,
    // even with a single generation.
    let mut broken = edited(2);
    broken.environment.global_damping = f32::NAN;
    let err = saver.save_now(&broken, t(60)).unwrap_err();
    assert!(matches!(err, IoError::Invalid { .. }), "{err}");
    assert_eq!(listing(&dir), [good.file_name().unwrap().to_str().unwrap()]);

    // The directory has become a file.
    let moved = root.path().join("moved");
    fs::rename(&dir, &moved).unwrap();
    fs::write(&dir, b"not a directory").unwrap();
    let err = saver.maybe_save(&edited(3), t(120)).unwrap_err();
    assert!(matches!(err, IoError::Os { .. }), "{err}");
    assert!(err.path().starts_with(&dir), "{err}");
    assert_eq!(fs::read(&dir).unwrap(), b"not a directory");
    assert!(saver.is_failing());
    // Reported once: the next tries wait RETRY_AFTER, then fail quietly.
    assert!(saver.maybe_save(&edited(3), t(125)).unwrap().is_none());
    assert!(saver.maybe_save(&edited(3), t(130)).unwrap().is_none());
    assert!(saver.is_failing());
    fs::remove_file(&dir).unwrap();
    fs::rename(&moved, &dir).unwrap();

    assert_eq!(fs::read(&good).unwrap(), good_bytes);
    let report = find_recovery(&dir, DOC);
    assert_eq!(sequences(&report), [1]);
    assert_eq!(report.recover().unwrap(), Some(edited(1)));

    // The failed saves did not restart the interval: the first call after
    // RETRY_AFTER retries, and rotation resumes with one generation.
    assert!(saver.maybe_save(&edited(3), t(135)).unwrap().is_none());
    let retried = saver.maybe_save(&edited(3), t(140)).unwrap().unwrap();
    assert!(!saver.is_failing());
    assert_eq!(
        listing(&dir),
        [retried.file_name().unwrap().to_str().unwrap()]
    );
    assert_eq!(load_character(&retried).unwrap(), edited(3));
}
