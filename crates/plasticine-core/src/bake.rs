//! Baking (LEMAN §6.4–6.5): play the key postures in simulation time at the
//! chosen skin resolution and stream every frame's skin into a frame cache,
//! with a summary of what the solver did.
//!
//! # Cancel and resume
//!
//! A bake writes its frames one at a time (never all in memory) to
//! [`PARTIAL_FILE`] in the output folder. It can be cancelled between two
//! frames ([`BakeOptions::cancel`], or the progress callback returning
//! [`BakeControl::Cancel`]): it then writes a [`Checkpoint`] ([`CHECKPOINT_FILE`],
//! the exact solver state and what the bake is of) and leaves the partial
//! cache, and [`BakeStart::Resume`] continues from there to a cache equal bit
//! for bit to an uninterrupted bake's. Only a finished bake is renamed to
//! [`CACHE_FILE`] (and its checkpoint removed). A checkpoint is also written
//! every [`BakeOptions::checkpoint_every`] of wall time, so that a bake killed
//! outright (or a crash) can be resumed from the last one.

mod checkpoint;
mod frames;
mod options;
mod smoothness;
mod summary;
mod with;

use crate::character::Character;
use crate::character::resample;
use crate::io::write_atomic;
use crate::skin::{Simulation, SkeletonDriver};
pub use checkpoint::{BakeIdentity, Checkpoint};
use frames::{
    BakePaths, Baked, FrameOut, FramePoint, bake_identity, begin, describe, embedded_triangles,
    finish, layout, write_checkpoint, write_frame,
};
pub use frames::{CACHE_FILE, CHECKPOINT_FILE, PARTIAL_FILE};
use options::check_options;
pub use options::{
    BESIDE_GAP, BakeControl, BakeError, BakeOptions, BakeStart, GroundDrop, SecondCharacter,
};
pub use smoothness::{CRUMPLED_PCT, WorstFrame, worst_frames};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;
pub use summary::{BakeCancelled, BakeOutcome, BakeSummary, ContactSummary, SkinSummary};
pub use with::WITH_DIR;

/// Bakes `character` into `out_dir` ([`CACHE_FILE`], `summary.json`, and
/// `obj/frame_NNNNN.obj` if asked), or continues a cancelled bake there (see
/// the module docs). `progress(done, total)` is called after every frame with
/// the frames baked so far and the frames of the whole bake; it may cancel.
pub fn bake(
    mut character: Character,
    opts: &BakeOptions,
    out_dir: &Path,
    mut progress: impl FnMut(usize, usize) -> BakeControl,
) -> Result<BakeOutcome, BakeError> {
    check_options(&character, opts)?;
    let fingerprint = checkpoint::fingerprint(&character);
    if let Some((m, n)) = opts.resolution {
        for skin in &mut character.skins {
            *skin = resample(skin, m, n)?;
        }
    }
    let start = character.key_postures[0].time as f64;
    let duration = opts.duration.unwrap_or(character.motion_duration() as f64);
    if !(duration.is_finite() && duration > 0.0) {
        return Err(BakeError::Options(format!(
            "duration must be positive, got {duration}"
        )));
    }
    let last = (duration * opts.fps as f64).round().max(1.0) as usize;
    let total = last + 1;
    let identity = bake_identity(&character, opts, fingerprint, duration, start, total);
    let paths = BakePaths::in_dir(out_dir);
    let triangles = embedded_triangles(&character);
    let driver = SkeletonDriver::Keys(character.key_postures.clone());
    let name = character.name.clone();
    let mut sim = Simulation::new(character, driver, opts.settings.clone())?;
    // Each frame's blend from its weights alone, so a resumed bake writes
    // the bytes the uninterrupted one did.
    sim.set_blend_warm_start(false);
    if let Some(g) = opts.ground {
        sim.make_dynamic(g.plane, g.drop)?;
    }
    let mut second = match &opts.with {
        Some(w) => Some(with::Second::new(w, &sim, opts, out_dir)?),
        None => None,
    };
    // FEM or modal flesh: the embedded mesh and muscle offsets per frame;
    // modal flesh also its amplitudes.
    let flesh_layout = layout(&sim);
    if let Some(second) = &mut second {
        if start != 0.0 {
            Simulation::advance_together(&mut [&mut sim, &mut second.sim], start)?;
        }
        second.begin(opts, fingerprint, (duration, start, total))?;
    }

    let mut run = begin(&mut sim, opts, &paths, &identity, &flesh_layout, start)?;
    let frame_out = FrameOut {
        flesh_layout: &flesh_layout,
        triangles: &triangles,
        obj_every: opts.obj_every,
        obj_dir: &out_dir.join("obj"),
    };
    let wall = Instant::now();
    let mut last_checkpoint = Instant::now();
    for f in run.first..total {
        let t = start + f as f64 / opts.fps as f64;
        if f > 0 {
            match &mut second {
                Some(second) => {
                    let reports =
                        Simulation::advance_together(&mut [&mut sim, &mut second.sim], t)?;
                    run.events.extend(reports[0].events.iter().map(describe));
                    second.note(&reports[1]);
                }
                None => {
                    let report = sim.advance_to(t, None)?;
                    run.events.extend(report.events.iter().map(describe));
                }
            }
        }
        if write_frame(&sim, &mut run.cache, &frame_out, f, t)? {
            run.obj_frames += 1;
        }
        if let Some(second) = &mut second {
            second.write_frame(opts, f, t)?;
        }
        let done = f + 1;
        let control = progress(done, total);
        if done == total {
            break;
        }
        let cancelled = control == BakeControl::Cancel
            || opts
                .cancel
                .as_ref()
                .is_some_and(|c| c.load(Ordering::SeqCst));
        let due = opts
            .checkpoint_every
            .is_some_and(|every| last_checkpoint.elapsed() >= every);
        if second.is_some() {
            if cancelled {
                return Err(with::cancelled(done, total));
            }
            continue;
        }
        if cancelled || due {
            let at = FramePoint { done, time: t };
            write_checkpoint(&mut run, &identity, &sim, at, wall, &paths.checkpoint)?;
            last_checkpoint = Instant::now();
        }
        if cancelled {
            return Ok(BakeOutcome::Cancelled(BakeCancelled {
                character: name,
                done,
                frames: total,
                checkpoint: paths.checkpoint,
                partial: paths.partial,
            }));
        }
    }
    let wall_seconds = run.wall_before + wall.elapsed().as_secs_f64();
    let done = Baked {
        total,
        duration,
        wall_seconds,
    };
    let mut summary = finish(&sim, opts, run, &paths, name, done)?;
    if let Some(second) = second {
        summary.with = Some(Box::new(second.finish(opts, done)?));
    }
    let json = serde_json::to_string_pretty(&summary).expect("summary serializes");
    write_atomic(&out_dir.join("summary.json"), json.as_bytes())?;
    Ok(BakeOutcome::Finished(summary))
}
