//! Bake, cancel, resume (LEMAN §6.5, issue "a cancelled bake resumes to the
//! same result", "bake → playback returns the same frames"), through the
//! library: cancelled at chosen frames by the progress callback.

use glam::Vec3;
use plasticine::bake::{
    BakeControl, BakeError, BakeOptions, BakeOutcome, BakeStart, BakeSummary, CACHE_FILE,
    CHECKPOINT_FILE, PARTIAL_FILE, bake,
};
use plasticine::character::Character;
use plasticine::io::{CacheReader, load_character};
use plasticine::skin::{IntegratorKind, SimState, Simulation, SkeletonDriver, SolverSettings};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn penguin() -> Character {
    load_character(Path::new("assets/penguin.ron")).unwrap()
}

fn options(integrator: IntegratorKind, resolution: Option<(usize, usize)>) -> BakeOptions {
    BakeOptions {
        resolution,
        settings: SolverSettings {
            integrator,
            ..SolverSettings::default()
        },
        fps: 30.0,
        duration: Some(1.0),
        ..BakeOptions::default()
    }
}

/// Bakes to the end.
fn full(opts: &BakeOptions, dir: &Path) -> BakeSummary {
    match bake(penguin(), opts, dir, |_, _| BakeControl::Continue).unwrap() {
        BakeOutcome::Finished(s) => s,
        BakeOutcome::Cancelled(c) => panic!("cancelled unasked at {}", c.done),
    }
}

/// Bakes (or resumes) and cancels once `cancel_at` frames are done.
fn until(opts: &BakeOptions, dir: &Path, cancel_at: usize) -> BakeOutcome {
    bake(penguin(), opts, dir, |done, _| {
        if done == cancel_at {
            BakeControl::Cancel
        } else {
            BakeControl::Continue
        }
    })
    .unwrap()
}

fn resume(opts: &BakeOptions) -> BakeOptions {
    BakeOptions {
        start: BakeStart::Resume,
        ..opts.clone()
    }
}

fn frames(path: &Path) -> Frames {
    let mut r = CacheReader::open(path).unwrap();
    r.frames()
        .map(|f| {
            let f = f.unwrap();
            let bits = f
                .positions
                .iter()
                .map(|s| s.iter().map(|p| p.to_array().map(f32::to_bits)).collect())
                .collect();
            (f.time.to_bits(), bits)
        })
        .collect()
}

type Frames = Vec<(u64, Vec<Vec<[u32; 3]>>)>;

/// Equal frame by frame, bit for bit; names the first frame that differs
/// (rather than printing every coordinate).
fn same_frames(got: &Frames, want: &[(u64, Vec<Vec<[u32; 3]>>)], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: frame count");
    if let Some(f) = (0..got.len()).find(|&f| got[f] != want[f]) {
        let points = got[f]
            .1
            .iter()
            .flatten()
            .zip(want[f].1.iter().flatten())
            .filter(|(a, b)| a != b)
            .count();
        panic!(
            "{what}: frame {f} differs (time {}, {points} points)",
            if got[f].0 == want[f].0 {
                "same"
            } else {
                "differs"
            }
        );
    }
}

/// Stats and events of two summaries, without the wall-clock figures.
fn same_solver_work(a: &BakeSummary, b: &BakeSummary) {
    assert_eq!(a.frames, b.frames);
    assert_eq!(a.events, b.events);
    assert_eq!(a.obj_frames, b.obj_frames);
    assert_eq!(a.cache_bytes, b.cache_bytes);
    for (x, y) in a.skins.iter().zip(&b.skins) {
        assert_eq!((&x.name, x.m, x.n), (&y.name, y.m, y.n));
        assert_eq!(x.stats, y.stats, "skin {}: solver statistics", x.name);
    }
}

#[test]
fn a_cancelled_bake_resumes_to_the_same_result() {
    // Verlet, RK4 (Cash–Karp, six stages) and Rosenbrock (BiCGSTAB solves)
    // at the penguin's own 16x16, and Verlet at 64x64, where the forces and
    // constraint resolution run row-parallel on rayon. Cut after the first
    // frame, in the middle, and before the last.
    type Case = (IntegratorKind, Option<(usize, usize)>, &'static [usize]);
    let cases: [Case; 4] = [
        (IntegratorKind::Verlet, None, &[1, 13, 30]),
        (IntegratorKind::Rk4, None, &[7, 22]),
        (IntegratorKind::Rosenbrock, None, &[11]),
        (IntegratorKind::Verlet, Some((64, 64)), &[9]),
    ];
    for (integrator, resolution, cuts) in cases {
        let opts = options(integrator, resolution);
        let tag = format!("{integrator:?} {resolution:?}");
        let root = tempfile::tempdir().unwrap();
        let reference_dir = root.path().join("reference");
        let reference = full(&opts, &reference_dir);
        let want_bytes = std::fs::read(reference_dir.join(CACHE_FILE)).unwrap();
        let want = frames(&reference_dir.join(CACHE_FILE));
        assert_eq!(want.len(), 31, "{tag}");
        assert!(!reference_dir.join(CHECKPOINT_FILE).exists());
        assert!(!reference_dir.join(PARTIAL_FILE).exists());
        for &k in cuts {
            let dir = root.path().join(format!("cut{k}"));
            match until(&opts, &dir, k) {
                BakeOutcome::Cancelled(c) => {
                    assert_eq!((c.done, c.frames), (k, 31), "{tag}");
                    assert_eq!(c.checkpoint, dir.join(CHECKPOINT_FILE));
                    assert_eq!(c.partial, dir.join(PARTIAL_FILE));
                }
                BakeOutcome::Finished(_) => panic!("{tag}: not cancelled at {k}"),
            }
            assert!(!dir.join(CACHE_FILE).exists(), "{tag}: no final cache yet");
            // The partial cache is readable as it is: the first k frames.
            let partial = CacheReader::open(&dir.join(PARTIAL_FILE)).unwrap();
            assert!(!partial.is_complete());
            same_frames(
                &frames(&dir.join(PARTIAL_FILE)),
                &want[..k],
                &format!("{tag}: the partial cache cut at {k}"),
            );
            drop(partial);
            let summary = full(&resume(&opts), &dir);
            let got_bytes = std::fs::read(dir.join(CACHE_FILE)).unwrap();
            same_frames(
                &frames(&dir.join(CACHE_FILE)),
                &want,
                &format!("{tag}: resumed from frame {k}"),
            );
            assert!(
                got_bytes == want_bytes,
                "{tag}: resumed from frame {k}, byte for byte"
            );
            same_solver_work(&reference, &summary);
            assert!(
                !dir.join(CHECKPOINT_FILE).exists(),
                "{tag}: checkpoint removed"
            );
            assert!(!dir.join(PARTIAL_FILE).exists(), "{tag}: partial renamed");
        }
    }
}

/// Cancelled twice, resumed twice; and a bake killed outright after a
/// periodic checkpoint, with frames after it and a torn frame in the partial
/// cache, resumes from that checkpoint to the same result.
#[test]
fn repeated_cancels_and_a_kill_after_a_checkpoint_resume_to_the_same_result() {
    let opts = options(IntegratorKind::Verlet, Some((24, 20)));
    let root = tempfile::tempdir().unwrap();
    let reference_dir = root.path().join("reference");
    full(&opts, &reference_dir);
    let want = std::fs::read(reference_dir.join(CACHE_FILE)).unwrap();

    let dir = root.path().join("twice");
    assert!(matches!(until(&opts, &dir, 5), BakeOutcome::Cancelled(_)));
    assert!(matches!(
        until(&resume(&opts), &dir, 17),
        BakeOutcome::Cancelled(c) if c.done == 17
    ));
    full(&resume(&opts), &dir);
    assert!(std::fs::read(dir.join(CACHE_FILE)).unwrap() == want);

    // A checkpoint after every frame; at frame 12 keep copies of what a kill
    // right then would leave, then let the bake finish.
    let dir = root.path().join("killed");
    let saved = root.path().join("saved");
    std::fs::create_dir_all(&saved).unwrap();
    let every = BakeOptions {
        checkpoint_every: Some(std::time::Duration::ZERO),
        ..opts.clone()
    };
    bake(penguin(), &every, &dir, |done, _| {
        if done == 12 {
            for f in [CHECKPOINT_FILE, PARTIAL_FILE] {
                std::fs::copy(dir.join(f), saved.join(f)).unwrap();
            }
        }
        BakeControl::Continue
    })
    .unwrap()
    .finished()
    .unwrap();
    assert!(std::fs::read(dir.join(CACHE_FILE)).unwrap() == want);
    // Frames 12 and 13 were written after the checkpoint, and half of 14.
    let killed = root.path().join("killed2");
    std::fs::create_dir_all(&killed).unwrap();
    std::fs::copy(saved.join(CHECKPOINT_FILE), killed.join(CHECKPOINT_FILE)).unwrap();
    let mut partial = std::fs::read(saved.join(PARTIAL_FILE)).unwrap();
    let whole = std::fs::read(reference_dir.join(CACHE_FILE)).unwrap();
    let frame_bytes = CacheReader::open(&reference_dir.join(CACHE_FILE))
        .unwrap()
        .bytes_per_frame() as usize;
    let n = partial.len();
    partial.extend_from_slice(&whole[n..n + 2 * frame_bytes + frame_bytes / 2]);
    std::fs::write(killed.join(PARTIAL_FILE), &partial).unwrap();
    assert_eq!(
        CacheReader::open(&killed.join(PARTIAL_FILE))
            .unwrap()
            .frame_count(),
        14
    );
    full(&resume(&opts), &killed);
    assert!(std::fs::read(killed.join(CACHE_FILE)).unwrap() == want);
}

/// The library cancel flag (what a GUI or a signal handler sets) stops the
/// bake after the frame in progress.
#[test]
fn the_cancel_flag_stops_after_the_current_frame() {
    let flag = Arc::new(AtomicBool::new(false));
    let opts = BakeOptions {
        cancel: Some(flag.clone()),
        ..options(IntegratorKind::Verlet, None)
    };
    let dir = tempfile::tempdir().unwrap();
    let outcome = bake(penguin(), &opts, dir.path(), |done, _| {
        if done == 4 {
            flag.store(true, Ordering::SeqCst);
        }
        BakeControl::Continue
    })
    .unwrap();
    assert!(matches!(outcome, BakeOutcome::Cancelled(c) if c.done == 4));
    flag.store(false, Ordering::SeqCst);
    let resumed = bake(penguin(), &resume(&opts), dir.path(), |_, _| {
        BakeControl::Continue
    })
    .unwrap();
    assert!(matches!(resumed, BakeOutcome::Finished(s) if s.frames == 31));
}

fn snapshot(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    (
        std::fs::read(dir.join(CHECKPOINT_FILE)).unwrap(),
        std::fs::read(dir.join(PARTIAL_FILE)).unwrap(),
    )
}

#[test]
fn a_resume_of_something_else_is_refused_and_changes_nothing() {
    let opts = options(IntegratorKind::Verlet, None);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    assert!(matches!(until(&opts, dir, 8), BakeOutcome::Cancelled(_)));
    let before = snapshot(dir);
    let refused = |character: Character, o: &BakeOptions| -> String {
        let e = bake(character, o, dir, |_, _| BakeControl::Continue).unwrap_err();
        assert!(matches!(e, BakeError::Mismatch { .. }), "{e}");
        assert!(snapshot(dir) == before, "checkpoint and partial untouched");
        assert!(!dir.join(CACHE_FILE).exists());
        e.to_string()
    };
    let r = resume(&opts);
    // A changed character.
    let mut c = penguin();
    c.skins[0].points.fat[40] += 0.001;
    let e = refused(c, &r);
    assert!(e.contains("the character changed"), "{e}");
    // Changed settings, each named.
    let mut o = r.clone();
    o.settings.tolerances.position = 2e-3;
    let e = refused(penguin(), &o);
    assert!(
        e.contains("settings.tolerances.position: then 0.001, now 0.002"),
        "{e}"
    );
    let mut o = r.clone();
    o.settings.integrator = IntegratorKind::Rk4;
    let e = refused(penguin(), &o);
    assert!(e.contains("settings.integrator"), "{e}");
    let o = BakeOptions {
        fps: 25.0,
        ..r.clone()
    };
    let e = refused(penguin(), &o);
    assert!(e.contains("fps: then 30, now 25"), "{e}");
    let o = BakeOptions {
        duration: Some(2.0),
        ..r.clone()
    };
    let e = refused(penguin(), &o);
    assert!(
        e.contains("duration: then 1 s (31 frames), now 2 s (61 frames)"),
        "{e}"
    );
    let o = BakeOptions {
        resolution: Some((20, 20)),
        ..r.clone()
    };
    let e = refused(penguin(), &o);
    assert!(
        e.contains("resolution: then the character's own, now 20x20"),
        "{e}"
    );
    // A fresh bake does not throw the cancelled one away...
    let e = bake(penguin(), &opts, dir, |_, _| BakeControl::Continue).unwrap_err();
    assert!(matches!(e, BakeError::Unfinished { .. }), "{e}");
    assert!(e.to_string().contains("at frame 8/31"), "{e}");
    assert!(snapshot(dir) == before);
    // ...and the matching resume still works after all those refusals.
    full(&r, dir);
    assert!(!dir.join(CHECKPOINT_FILE).exists());
    // Nothing left to resume.
    let e = bake(penguin(), &r, dir, |_, _| BakeControl::Continue).unwrap_err();
    assert!(
        matches!(e, BakeError::Resume(_)) && e.to_string().contains("holds no cancelled bake"),
        "{e}"
    );
}

#[test]
fn restart_discards_a_cancelled_bake() {
    let opts = options(IntegratorKind::Verlet, None);
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("b");
    assert!(matches!(until(&opts, &dir, 8), BakeOutcome::Cancelled(_)));
    let restart = BakeOptions {
        start: BakeStart::Restart,
        fps: 24.0,
        ..opts.clone()
    };
    let s = full(&restart, &dir);
    assert_eq!(s.frames, 25);
    assert!(!dir.join(CHECKPOINT_FILE).exists() && !dir.join(PARTIAL_FILE).exists());
}

#[test]
fn a_damaged_checkpoint_or_partial_cache_gives_a_clear_error() {
    let opts = options(IntegratorKind::Verlet, None);
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("b");
    assert!(matches!(until(&opts, &dir, 6), BakeOutcome::Cancelled(_)));
    let (checkpoint, partial) = snapshot(&dir);
    let r = resume(&opts);
    let attempt = |cp: &[u8], part: Option<&[u8]>| -> String {
        std::fs::write(dir.join(CHECKPOINT_FILE), cp).unwrap();
        match part {
            Some(p) => std::fs::write(dir.join(PARTIAL_FILE), p).unwrap(),
            None => {
                let _ = std::fs::remove_file(dir.join(PARTIAL_FILE));
            }
        }
        let e = bake(penguin(), &r, &dir, |_, _| BakeControl::Continue).unwrap_err();
        assert!(!dir.join(CACHE_FILE).exists());
        e.to_string()
    };
    let shown = dir.join(CHECKPOINT_FILE).display().to_string();
    // A flipped byte in the solver state.
    let mut bad = checkpoint.clone();
    let at = bad.len() - 100;
    bad[at] ^= 0x10;
    let e = attempt(&bad, Some(&partial));
    assert!(e.contains(&shown) && e.contains("checksum"), "{e}");
    // Cut short.
    let e = attempt(&checkpoint[..checkpoint.len() / 2], Some(&partial));
    assert!(e.contains(&shown) && e.contains("truncated"), "{e}");
    let e = attempt(&checkpoint[..5], Some(&partial));
    assert!(e.contains("truncated at byte 0"), "{e}");
    // Not a checkpoint at all, and one from a newer build.
    let e = attempt(b"(format: \"plasticine-character\")", Some(&partial));
    assert!(e.contains("not a Plasticine bake checkpoint"), "{e}");
    let mut newer = checkpoint.clone();
    newer[8] = 9;
    let e = attempt(&newer, Some(&partial));
    assert!(
        e.contains("newer Plasticine") && e.contains("version 9"),
        "{e}"
    );
    // One from an older build (the checkpoint's format changed): refused,
    // pointing to a fresh bake.
    let mut older = checkpoint.clone();
    older[8] = 1;
    let e = attempt(&older, Some(&partial));
    assert!(
        e.contains("format version 1") && e.contains("--restart"),
        "{e}"
    );
    // The partial cache gone, cut before the checkpoint's frame, or of
    // another bake.
    let e = attempt(&checkpoint, None);
    assert!(e.contains("partial cache") && e.contains("missing"), "{e}");
    let e = attempt(&checkpoint, Some(&partial[..partial.len() - 10]));
    assert!(
        e.contains("holds 5 whole frames") && e.contains("at frame 6"),
        "{e}"
    );
    // The last frame's last coordinate changed and its checksum made to
    // match: a consistent cache, but not the state the checkpoint saved.
    std::fs::write(dir.join(PARTIAL_FILE), &partial).unwrap();
    let frame_bytes = CacheReader::open(&dir.join(PARTIAL_FILE))
        .unwrap()
        .bytes_per_frame() as usize;
    let mut other = partial.clone();
    let n = other.len();
    other[n - 8] ^= 0x01;
    let checksum = crc32fast::hash(&other[n - frame_bytes..n - 4]);
    other[n - 4..].copy_from_slice(&checksum.to_le_bytes());
    let e = attempt(&checkpoint, Some(&other));
    assert!(e.contains("is not the state saved in"), "{e}");
    // The same change with the checksum left as written: the cache names the
    // damaged frame.
    other[n - 4..].copy_from_slice(&partial[n - 4..]);
    let e = attempt(&checkpoint, Some(&other));
    assert!(e.contains("its checksum does not match"), "{e}");
    // Intact again: resumes.
    std::fs::write(dir.join(CHECKPOINT_FILE), &checkpoint).unwrap();
    std::fs::write(dir.join(PARTIAL_FILE), &partial).unwrap();
    full(&r, &dir);
}

/// Bake → playback: the frames read back from the cache, in order and by
/// random access, are exactly those the simulation produced, advanced frame
/// by frame as simulation-time playback does.
#[test]
fn bake_then_playback_returns_the_simulated_frames() {
    let opts = options(IntegratorKind::Verlet, None);
    let dir = tempfile::tempdir().unwrap();
    full(&opts, dir.path());
    let c = penguin();
    let start = c.key_postures[0].time as f64;
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let mut sim = Simulation::new(c, driver, opts.settings.clone()).unwrap();
    sim.advance_to(start, None).unwrap();
    let mut reader = CacheReader::open(&dir.path().join(CACHE_FILE)).unwrap();
    assert!(reader.is_complete());
    assert_eq!(reader.frame_count(), 31);
    let mut simulated: Vec<(f64, Vec<Vec<Vec3>>)> = Vec::new();
    let mut frame = Vec::new();
    for f in 0..31 {
        let t = start + f as f64 / 30.0;
        if f > 0 {
            sim.advance_to(t, None).unwrap();
        }
        let now: Vec<Vec<Vec3>> = sim
            .character
            .skins
            .iter()
            .map(|s| s.points.position.clone())
            .collect();
        let time = reader.read_frame(f, &mut frame).unwrap();
        assert_eq!(time.to_bits(), t.to_bits(), "frame {f} time");
        assert!(
            frame == now,
            "frame {f}: the cache holds what was simulated"
        );
        simulated.push((t, now));
    }
    // Scrubbing backwards and jumping about returns the same frames.
    for f in (0..31).rev().chain([17, 3, 30, 0, 12]) {
        let time = reader.read_frame(f, &mut frame).unwrap();
        assert_eq!(time, simulated[f].0);
        assert!(frame == simulated[f].1, "frame {f} on random access");
    }
    // The skin moved: the comparison is not of a still picture.
    let moved = simulated[0].1[0]
        .iter()
        .zip(&simulated[30].1[0])
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, f32::max);
    assert!(moved > 0.005, "{moved}");
}

/// The solver state saved mid-run and restored into a fresh simulation
/// continues bit for bit, for every integrator (the core of resuming).
#[test]
fn a_restored_simulation_continues_bit_for_bit() {
    for integrator in IntegratorKind::ALL {
        let settings = SolverSettings {
            integrator,
            ..SolverSettings::default()
        };
        let c = penguin();
        let driver = SkeletonDriver::Keys(c.key_postures.clone());
        let mut a = Simulation::new(c.clone(), driver.clone(), settings.clone()).unwrap();
        a.advance_to(0.2, None).unwrap();
        let saved: SimState = a.save();
        let mut b = Simulation::new(c, driver, settings).unwrap();
        b.restore(&saved).unwrap();
        assert!(
            b.save() == saved,
            "{integrator:?}: restore gives back the state"
        );
        a.advance_to(0.3, None).unwrap();
        b.advance_to(0.3, None).unwrap();
        assert!(a.save() == b.save(), "{integrator:?}: continued the same");
    }
}

/// Determinism across thread counts: skins step in parallel and, at 64x64,
/// constraint resolution and the elastic forces run row-parallel, yet nothing
/// is summed in an order that depends on the threads (per-row writes, and the
/// only reductions are maxima and integer counts). So a bake resumed on
/// another machine, or with other threads, still matches bit for bit.
#[test]
fn the_bake_does_not_depend_on_the_number_of_threads() {
    let opts = BakeOptions {
        duration: Some(0.5),
        ..options(IntegratorKind::Verlet, Some((64, 64)))
    };
    let root = tempfile::tempdir().unwrap();
    let mut caches = Vec::new();
    for threads in [1, 3, 8] {
        let dir = root.path().join(format!("t{threads}"));
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| full(&opts, &dir));
        caches.push(std::fs::read(dir.join(CACHE_FILE)).unwrap());
    }
    assert!(caches[0] == caches[1], "1 thread vs 3");
    assert!(caches[0] == caches[2], "1 thread vs 8");
    // Cancelled under 8 threads, resumed under 1.
    let dir = root.path().join("mixed");
    let eight = rayon::ThreadPoolBuilder::new()
        .num_threads(8)
        .build()
        .unwrap();
    eight.install(|| assert!(matches!(until(&opts, &dir, 6), BakeOutcome::Cancelled(_))));
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    one.install(|| full(&resume(&opts), &dir));
    assert!(std::fs::read(dir.join(CACHE_FILE)).unwrap() == caches[0]);
}

/// Killed after the finished cache was moved into place but before the
/// checkpoint was removed: `--resume` says the bake had finished, removes
/// the stale checkpoint and leaves the cache alone.
#[test]
fn a_checkpoint_left_beside_a_finished_bake_is_stale() {
    let opts = options(IntegratorKind::Verlet, None);
    let root = tempfile::tempdir().unwrap();
    let cut = root.path().join("cut");
    assert!(matches!(until(&opts, &cut, 6), BakeOutcome::Cancelled(_)));
    let dir = root.path().join("done");
    full(&opts, &dir);
    std::fs::copy(cut.join(CHECKPOINT_FILE), dir.join(CHECKPOINT_FILE)).unwrap();
    let want = std::fs::read(dir.join(CACHE_FILE)).unwrap();
    let e = bake(penguin(), &resume(&opts), &dir, |_, _| {
        BakeControl::Continue
    })
    .unwrap_err();
    assert!(e.to_string().contains("had already finished"), "{e}");
    assert!(!dir.join(CHECKPOINT_FILE).exists());
    assert!(std::fs::read(dir.join(CACHE_FILE)).unwrap() == want);
}
