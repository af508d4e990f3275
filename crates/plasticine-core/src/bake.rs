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
mod smoothness;

use crate::character::Character;
use crate::character::resample;
use crate::fem::FleshSim;
use crate::io::{CacheFlesh, CacheModalPart, CacheReader, CacheWriter, IoError, write_atomic};
use crate::skin::FleshRun;
use crate::skin::{SimError, SimEvent, Simulation, SkeletonDriver, SkinStats, SolverSettings};
pub use checkpoint::{BakeIdentity, Checkpoint};
use serde::Serialize;
pub use smoothness::{CRUMPLED_PCT, WorstFrame, worst_frames};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The finished frame cache, in the output folder.
pub const CACHE_FILE: &str = "bake.plcache";
/// The frames of a bake not finished yet (an unfinished `PLSTCACH` file,
/// readable with [`CacheReader`]).
pub const PARTIAL_FILE: &str = "bake.plcache.partial";
/// The checkpoint of a cancelled bake.
pub const CHECKPOINT_FILE: &str = "bake.resume";

/// How a bake treats a cancelled bake in its output folder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BakeStart {
    /// Bake from the start; refuse if the folder holds a cancelled bake (so
    /// that its work is not thrown away by mistake).
    #[default]
    Fresh,
    /// Bake from the start, discarding a cancelled bake.
    Restart,
    /// Continue the cancelled bake, which must be of the same character with
    /// the same options.
    Resume,
}

/// What the progress callback wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BakeControl {
    /// Go on with the next frame.
    Continue,
    /// Stop after this frame, leaving a checkpoint to resume from.
    Cancel,
}

/// How to bake: skin resolution, solver settings, frame rate, duration and how to start.
#[derive(Clone, Debug)]
pub struct BakeOptions {
    /// Resample every skin to m×n first (§6.5), or keep each skin's own.
    pub resolution: Option<(usize, usize)>,
    /// Solver settings of the simulation that is baked.
    pub settings: SolverSettings,
    /// Frames per simulated second written to the cache.
    pub fps: f32,
    /// Simulated seconds to bake; defaults to the key postures' span.
    pub duration: Option<f64>,
    /// Also write every k-th frame as OBJ.
    pub obj_every: Option<usize>,
    /// Whether to bake from the start or continue a cancelled bake.
    pub start: BakeStart,
    /// Set (from any thread, or a signal handler) to cancel after the frame
    /// being baked.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Also write a checkpoint after a frame when this much wall time has
    /// passed since the last one (`None`: only when cancelled).
    pub checkpoint_every: Option<Duration>,
    /// Make the skeleton respond and land on this ground (FEM flesh only,
    /// see `fem::dynamic`), lifted first to the drop height if one is given.
    pub ground: Option<GroundDrop>,
}

pub use crate::contact::GroundDrop;

/// What the responding skeleton's contact did over a bake.
#[derive(Clone, Debug, Serialize)]
pub struct ContactSummary {
    /// The lowest point of any contact proxy over the bake, m over the
    /// ground (negative: inside it).
    pub min_ground_clearance_m: f64,
    /// The lowest bone end over the bake, m over the ground.
    pub min_bone_clearance_m: f64,
    /// The deepest a proxy was inside an obstacle after a step, before the
    /// position correction moved it out (m; Galoppo eq. 3.21).
    pub max_corrected_depth_m: f64,
    /// Contact proxies on the flesh.
    pub proxies: usize,
    /// The most contacts of one flesh step.
    pub max_contacts: usize,
    /// Contacts per flesh step, averaged.
    pub mean_contacts: f64,
    /// Flesh steps taken with the skeleton responding.
    pub steps: u64,
    /// The core's speed at the end, m/s (≈ 0: it has settled).
    pub final_speed_m_s: f64,
}

impl Default for BakeOptions {
    fn default() -> Self {
        Self {
            resolution: None,
            settings: SolverSettings::default(),
            fps: 30.0,
            duration: None,
            obj_every: None,
            start: BakeStart::Fresh,
            cancel: None,
            checkpoint_every: Some(Duration::from_secs(30)),
            ground: None,
        }
    }
}

/// What a bake did for one skin: its resolution and the solver's counters.
#[derive(Clone, Debug, Serialize)]
pub struct SkinSummary {
    /// Name of the skin.
    pub name: String,
    /// Points around the skin (periodic).
    pub m: usize,
    /// Rows of the skin, bottom to top.
    pub n: usize,
    /// The solver's counters for this skin.
    pub stats: SkinStats,
    /// Its least smooth frame.
    pub worst_frame: WorstFrame,
}

/// What a finished bake did; also written to `summary.json` in the output folder.
#[derive(Clone, Debug, Serialize)]
pub struct BakeSummary {
    /// Name of the baked character.
    pub character: String,
    /// Name of the integrator used (such as `rk4`).
    pub integrator: String,
    /// Frames in the cache.
    pub frames: usize,
    /// Frames per simulated second.
    pub fps: f32,
    /// Simulated time baked, in s.
    pub simulated_seconds: f64,
    /// Wall time spent baking, in s, including the parts before any resume.
    pub wall_seconds: f64,
    /// Simulated seconds per wall second.
    pub real_time_factor: f64,
    /// One summary per skin, in the character's order.
    pub skins: Vec<SkinSummary>,
    /// What the cache holds of the FEM flesh per frame: the embedded meshes
    /// (name, vertex count) and the number of muscle offsets.
    pub flesh: CacheFlesh,
    /// Divergences and what was done about them.
    pub events: Vec<String>,
    /// Path of the finished frame cache.
    pub cache: PathBuf,
    /// Size of the finished frame cache, in bytes.
    pub cache_bytes: u64,
    /// Frames also written as OBJ.
    pub obj_frames: usize,
    /// What the responding skeleton's contact did (a bake with a ground).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact: Option<Box<ContactSummary>>,
}

/// A bake stopped between two frames, resumable with [`BakeStart::Resume`].
#[derive(Clone, Debug, Serialize)]
pub struct BakeCancelled {
    /// Name of the character being baked.
    pub character: String,
    /// Frames baked (the first `done` of the cache).
    pub done: usize,
    /// Frames the finished bake has.
    pub frames: usize,
    /// Path of the checkpoint to resume from.
    pub checkpoint: PathBuf,
    /// The partial cache, readable as it is.
    pub partial: PathBuf,
}

/// How a bake ended (errors aside).
#[derive(Clone, Debug)]
pub enum BakeOutcome {
    /// Every frame was baked and the cache is in place.
    Finished(BakeSummary),
    /// Cancelled between two frames, leaving a checkpoint.
    Cancelled(BakeCancelled),
}

impl BakeOutcome {
    /// The summary of a finished bake, or `None` if it was cancelled.
    pub fn finished(self) -> Option<BakeSummary> {
        match self {
            BakeOutcome::Finished(s) => Some(s),
            BakeOutcome::Cancelled(_) => None,
        }
    }
}

/// Why a bake failed.
#[derive(Debug, thiserror::Error)]
pub enum BakeError {
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The simulation could not start, restore its state or go on.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The bake options are invalid (frame rate, duration or resolution).
    #[error("{0}")]
    Options(String),
    /// A skin cannot be resampled to the resolution asked for.
    #[error(transparent)]
    Resample(#[from] crate::character::ResampleError),
    /// A fresh bake would throw away a cancelled one.
    #[error(
        "{} holds a cancelled bake{detail}: resume it, or start over discarding it",
        dir.display()
    )]
    Unfinished {
        /// The output folder.
        dir: PathBuf,
        /// What the cancelled bake is of, or why its checkpoint is unreadable.
        detail: String,
    },
    /// Nothing to resume, or the checkpoint and partial cache do not fit together.
    #[error("cannot resume: {0}")]
    Resume(String),
    /// The cancelled bake is of something else; nothing was changed.
    #[error(
        "cannot resume the cancelled bake in {}: it differs from this one: {}",
        dir.display(),
        differences.join("; ")
    )]
    Mismatch {
        /// The output folder holding the cancelled bake.
        dir: PathBuf,
        /// How the cancelled bake differs from this one, one item each.
        differences: Vec<String>,
    },
}

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
    // FEM or modal flesh: the embedded mesh and muscle offsets per frame;
    // modal flesh also its amplitudes.
    let flesh_layout = CacheFlesh::of(&sim.character)
        .with_modal(modal_parts(&sim))
        .with_root(sim.flesh().and_then(FleshSim::core).is_some());

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
            let report = sim.advance_to(t, None)?;
            run.events.extend(report.events.iter().map(describe));
        }
        if write_frame(&sim, &mut run.cache, &frame_out, f, t)? {
            run.obj_frames += 1;
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
    let cache_summary = run.cache.finish()?;
    remove_checkpoint(&paths.checkpoint)?;
    let skins = skin_summaries(&sim, worst_frames(&paths.cache)?);
    let summary = BakeSummary {
        character: name,
        integrator: opts.settings.integrator.name().into(),
        frames: total,
        fps: opts.fps,
        simulated_seconds: duration,
        wall_seconds,
        real_time_factor: duration / wall_seconds.max(1e-9),
        skins,
        flesh: cache_summary.flesh.clone(),
        events: run.events,
        cache: paths.cache,
        cache_bytes: cache_summary.bytes,
        obj_frames: run.obj_frames,
        contact: contact_summary(&sim),
    };
    let json = serde_json::to_string_pretty(&summary).expect("summary serializes");
    write_atomic(&out_dir.join("summary.json"), json.as_bytes())?;
    Ok(BakeOutcome::Finished(summary))
}

/// The responding skeleton's contact figures, if it responds.
fn contact_summary(sim: &Simulation) -> Option<Box<ContactSummary>> {
    let core = sim.flesh()?.core()?;
    let t = &core.totals;
    Some(Box::new(ContactSummary {
        min_ground_clearance_m: t.min_clearance,
        min_bone_clearance_m: t.min_bone_clearance,
        max_corrected_depth_m: t.max_corrected,
        proxies: core.proxy_count(),
        max_contacts: t.max_contacts,
        mean_contacts: t.contacts as f64 / t.steps.max(1) as f64,
        steps: t.steps,
        final_speed_m_s: core.velocity.length(),
    }))
}

/// Where a bake's files go in its output folder.
struct BakePaths {
    /// The output folder.
    dir: PathBuf,
    /// The finished cache ([`CACHE_FILE`]).
    cache: PathBuf,
    /// The frames of an unfinished bake ([`PARTIAL_FILE`]).
    partial: PathBuf,
    /// The checkpoint of a cancelled bake ([`CHECKPOINT_FILE`]).
    checkpoint: PathBuf,
}

impl BakePaths {
    /// The bake files in `out_dir`.
    fn in_dir(out_dir: &Path) -> Self {
        Self {
            dir: out_dir.to_path_buf(),
            cache: out_dir.join(CACHE_FILE),
            partial: out_dir.join(PARTIAL_FILE),
            checkpoint: out_dir.join(CHECKPOINT_FILE),
        }
    }
}

/// A bake under way: its cache writer and what it carries over a resume.
struct Run {
    cache: CacheWriter,
    /// The first frame still to bake.
    first: usize,
    /// Frames written as OBJ so far.
    obj_frames: usize,
    /// The simulation events so far, described.
    events: Vec<String>,
    /// Wall time spent before this run (by the cancelled bake resumed), in s.
    wall_before: f64,
}

/// What each frame writes besides the cache's skins.
struct FrameOut<'a> {
    /// What the cache holds of the FEM flesh.
    flesh_layout: &'a CacheFlesh,
    /// The triangles of the embedded mesh, for OBJ frames.
    triangles: &'a [[u32; 3]],
    /// Also write every k-th frame as OBJ.
    obj_every: Option<usize>,
    /// The folder of the OBJ frames.
    obj_dir: &'a Path,
}

/// The frame a checkpoint is taken after: the frames baked and the last one's time.
#[derive(Clone, Copy)]
struct FramePoint {
    done: usize,
    time: f64,
}

/// Refuses a frame rate out of range, a character with no key postures, or
/// invalid solver settings.
fn check_options(character: &Character, opts: &BakeOptions) -> Result<(), BakeError> {
    if !(opts.fps.is_finite() && opts.fps > 0.0 && opts.fps <= 1000.0) {
        return Err(BakeError::Options(format!(
            "fps must lie in (0, 1000], got {}",
            opts.fps
        )));
    }
    if character.key_postures.is_empty() {
        return Err(SimError::NoMotion.into());
    }
    opts.settings.validate().map_err(SimError::Settings)?;
    Ok(())
}

/// What the bake of `character` (already resampled) with `opts` is of, as a
/// checkpoint records it.
fn bake_identity(
    character: &Character,
    opts: &BakeOptions,
    fingerprint: u64,
    duration: f64,
    start: f64,
    total: usize,
) -> BakeIdentity {
    BakeIdentity {
        character: character.name.clone(),
        fingerprint,
        settings: BakeIdentity::settings_json(&opts.settings),
        resolution: opts.resolution,
        fps: opts.fps,
        duration,
        start,
        frames: total as u64,
        obj_every: opts.obj_every,
        ground: opts
            .ground
            .map(|g| serde_json::to_string(&g).expect("the ground serializes")),
        skins: character
            .skins
            .iter()
            .map(|s| (s.name.clone(), s.m, s.n))
            .collect(),
    }
}

/// The triangles of the character's FEM embedded mesh (none without one).
/// The vibrating parts of `sim`'s modal flesh, as a cache lists them.
fn modal_parts(sim: &Simulation) -> Vec<CacheModalPart> {
    match sim.flesh_run() {
        Some(FleshRun::Modal(m)) => m.parts().map(|p| p.cache_record()).collect(),
        _ => Vec::new(),
    }
}

fn embedded_triangles(character: &Character) -> Vec<[u32; 3]> {
    character
        .flesh
        .lattice_model()
        .and_then(|f| f.embedded_mesh.as_ref())
        .map(|m| m.triangles.clone())
        .unwrap_or_default()
}

/// Where to begin: a fresh cache (the simulation advanced to `start`), or
/// the cancelled bake's (the simulation restored to its checkpoint).
fn begin(
    sim: &mut Simulation,
    opts: &BakeOptions,
    paths: &BakePaths,
    identity: &BakeIdentity,
    flesh_layout: &CacheFlesh,
    start: f64,
) -> Result<Run, BakeError> {
    let layout_ref: Vec<(&str, usize, usize)> = identity
        .skins
        .iter()
        .map(|(s, m, n)| (s.as_str(), *m, *n))
        .collect();
    let resumed = match opts.start {
        BakeStart::Resume => Some(resume_point(
            &paths.dir,
            &paths.checkpoint,
            &paths.partial,
            identity,
        )?),
        BakeStart::Fresh | BakeStart::Restart => {
            clear_cancelled(&paths.dir, &paths.checkpoint, &paths.partial, opts.start)?;
            None
        }
    };
    Ok(match resumed {
        Some(cp) => {
            sim.restore(&cp.state)?;
            let cache = CacheWriter::resume_staged_with_flesh(
                &paths.partial,
                &paths.cache,
                opts.fps,
                &layout_ref,
                flesh_layout,
                cp.done,
            )?;
            Run {
                cache,
                first: cp.done as usize,
                obj_frames: cp.obj_frames as usize,
                events: cp.events,
                wall_before: cp.wall_seconds,
            }
        }
        None => {
            if start != 0.0 {
                sim.advance_to(start, None)?;
            }
            let cache = CacheWriter::create_staged_with_flesh(
                &paths.partial,
                &paths.cache,
                opts.fps,
                &layout_ref,
                flesh_layout,
            )?;
            Run {
                cache,
                first: 0,
                obj_frames: 0,
                events: Vec::new(),
                wall_before: 0.0,
            }
        }
    })
}

/// Writes frame `f` (time `t`) of `sim` to the cache, flushed, and as OBJ
/// when it is one of every k-th; returns whether it wrote the OBJ.
fn write_frame(
    sim: &Simulation,
    cache: &mut CacheWriter,
    out: &FrameOut,
    f: usize,
    t: f64,
) -> Result<bool, BakeError> {
    let flesh_layout = out.flesh_layout;
    let positions: Vec<&[glam::Vec3]> = sim
        .character
        .skins
        .iter()
        .map(|s| s.points.position.as_slice())
        .collect();
    let flesh = (!flesh_layout.is_empty())
        .then(|| sim.flesh_pose())
        .flatten();
    let points = flesh
        .as_ref()
        .filter(|_| !flesh_layout.meshes.is_empty())
        .and_then(|p| p.mesh_points());
    let mesh: Vec<&[glam::Vec3]> = points.as_deref().into_iter().collect();
    let muscles = match &flesh {
        Some(p) if flesh_layout.muscles > 0 => p.muscle_offsets.as_slice(),
        _ => &[],
    };
    let amplitudes: Vec<f32> = match sim.flesh_run() {
        Some(FleshRun::Modal(m)) if !flesh_layout.modal.is_empty() => {
            m.amplitudes_at(t).iter().map(|&q| q as f32).collect()
        }
        _ => Vec::new(),
    };
    // A responding skeleton's root, so playback and export put it there.
    let root = sim.flesh().and_then(FleshSim::core).map(|c| {
        let f = c.frame_at(t);
        glam::Affine3A::from_mat3_translation(f.matrix3.as_mat3(), f.translation.as_vec3())
    });
    cache.write_frame_with_root(t, &positions, &mesh, muscles, &amplitudes, root)?;
    // Hand every frame to the OS: a bake killed outright keeps them.
    cache.flush()?;
    if let Some(k) = out.obj_every.filter(|&k| k > 0 && f.is_multiple_of(k)) {
        let _ = k;
        let skins: Vec<_> = sim
            .character
            .skins
            .iter()
            .map(|s| (s.name.as_str(), s.m, s.n, s.points.position.as_slice()))
            .collect();
        let meshes: Vec<crate::io::ObjMesh> = flesh_layout
            .meshes
            .iter()
            .zip(&mesh)
            .map(|(m, p)| (m.name.as_str(), *p, out.triangles))
            .collect();
        crate::io::write_frame_obj(
            &out.obj_dir.join(format!("frame_{f:05}.obj")),
            &skins,
            &meshes,
        )?;
        return Ok(true);
    }
    Ok(false)
}

/// Makes the frames written so far durable and writes the checkpoint of the
/// bake after frame `at` to `path`; `wall` is when this run started.
fn write_checkpoint(
    run: &mut Run,
    identity: &BakeIdentity,
    sim: &Simulation,
    at: FramePoint,
    wall: Instant,
    path: &Path,
) -> Result<(), BakeError> {
    let cp = Checkpoint {
        identity: identity.clone(),
        done: at.done as u64,
        last_time: at.time,
        cache_bytes: run.cache.sync()?,
        obj_frames: run.obj_frames as u64,
        wall_seconds: run.wall_before + wall.elapsed().as_secs_f64(),
        events: run.events.clone(),
        state: sim.save(),
    };
    cp.write(path)?;
    Ok(())
}

/// Removes the checkpoint of a finished bake, if there is one.
fn remove_checkpoint(checkpoint_path: &Path) -> Result<(), BakeError> {
    match std::fs::remove_file(checkpoint_path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(IoError::os(checkpoint_path, "remove", e).into()),
    }
    Ok(())
}

/// Each skin's resolution, solver counters and worst frame (`worst`, from
/// the finished cache), in the character's order.
fn skin_summaries(sim: &Simulation, worst: Vec<WorstFrame>) -> Vec<SkinSummary> {
    sim.character
        .skins
        .iter()
        .zip(worst)
        .enumerate()
        .map(|(s, (skin, worst_frame))| SkinSummary {
            name: skin.name.clone(),
            m: skin.m,
            n: skin.n,
            stats: sim.stats(s),
            worst_frame,
        })
        .collect()
}

/// Before a fresh bake: refuses to throw away a cancelled bake unless told
/// to. A checkpoint without its partial cache is stale (left by a crash just
/// after a bake finished) and is removed.
fn clear_cancelled(
    out_dir: &Path,
    checkpoint_path: &Path,
    partial_path: &Path,
    start: BakeStart,
) -> Result<(), BakeError> {
    if !checkpoint_path.exists() {
        return Ok(());
    }
    if start == BakeStart::Fresh && partial_path.exists() {
        let detail = match Checkpoint::read(checkpoint_path) {
            Ok(cp) => format!(
                " of '{}' at frame {}/{}",
                cp.identity.character, cp.done, cp.identity.frames
            ),
            Err(e) => format!(" (its checkpoint is unreadable: {e})"),
        };
        return Err(BakeError::Unfinished {
            dir: out_dir.to_path_buf(),
            detail,
        });
    }
    std::fs::remove_file(checkpoint_path)
        .map_err(|e| IoError::os(checkpoint_path, "remove", e).into())
        .map(drop)
}

/// Reads the checkpoint of a cancelled bake and checks that it continues this
/// bake and that its partial cache holds the frames it says, the last of them
/// equal to the saved state. Changes nothing.
fn resume_point(
    out_dir: &Path,
    checkpoint_path: &Path,
    partial_path: &Path,
    identity: &BakeIdentity,
) -> Result<Checkpoint, BakeError> {
    if !checkpoint_path.exists() {
        return Err(BakeError::Resume(format!(
            "{} holds no cancelled bake (no checkpoint {}){}",
            out_dir.display(),
            checkpoint_path.display(),
            if partial_path.exists() {
                format!(
                    "; {} was left by a bake stopped before its first checkpoint: its frames can be read but not continued",
                    partial_path.display()
                )
            } else {
                String::new()
            }
        )));
    }
    let finished = out_dir.join(CACHE_FILE);
    if !partial_path.exists() && CacheReader::open(&finished).is_ok_and(|r| r.is_complete()) {
        // A bake killed after its cache was moved into place but before
        // its checkpoint was removed: it had finished.
        std::fs::remove_file(checkpoint_path)
            .map_err(|e| IoError::os(checkpoint_path, "remove", e))?;
        return Err(BakeError::Resume(format!(
            "the bake in {} had already finished ({} is complete); its stale checkpoint was removed",
            out_dir.display(),
            finished.display()
        )));
    }
    let cp = Checkpoint::read(checkpoint_path).map_err(|e| match e {
        IoError::UnknownVersion { .. } => BakeError::Resume(format!(
            "{e}; a checkpoint only carries a bake over to the build that wrote it: bake again with --restart"
        )),
        e => e.into(),
    })?;
    let differences = cp.identity.differences(identity);
    if !differences.is_empty() {
        return Err(BakeError::Mismatch {
            dir: out_dir.to_path_buf(),
            differences,
        });
    }
    if !partial_path.exists() {
        return Err(BakeError::Resume(format!(
            "the partial cache {} of the checkpoint {} is missing",
            partial_path.display(),
            checkpoint_path.display()
        )));
    }
    let mut reader = CacheReader::open(partial_path)?;
    let k = cp.done as usize - 1;
    if reader.frame_count() <= k {
        return Err(BakeError::Resume(format!(
            "{} holds {} whole frames, the checkpoint {} is at frame {}",
            partial_path.display(),
            reader.frame_count(),
            checkpoint_path.display(),
            cp.done
        )));
    }
    let mut frame = Vec::new();
    let time = reader.read_frame(k, &mut frame)?;
    let same = time.to_bits() == cp.last_time.to_bits()
        && frame.len() == cp.state.skins.len()
        && frame.iter().zip(&cp.state.skins).all(|(f, s)| {
            f.len() == s.position.len()
                && f.iter()
                    .zip(&s.position)
                    .all(|(a, b)| a.to_array().map(f32::to_bits) == b.to_array().map(f32::to_bits))
        });
    if !same {
        return Err(BakeError::Resume(format!(
            "frame {k} of {} is not the state saved in {}: they are not of the same bake",
            partial_path.display(),
            checkpoint_path.display()
        )));
    }
    Ok(cp)
}

fn describe(e: &SimEvent) -> String {
    match e {
        SimEvent::Diverged {
            skin,
            at,
            rolled_back_to,
            new_max_step,
        } => format!(
            "skin {skin} diverged at t={at:.4} s: rolled back to t={rolled_back_to:.4} s and limited the step to {new_max_step:.2e} s"
        ),
        SimEvent::ContactUnsettled {
            steps,
            at,
            violation,
        } => format!(
            "the ground contact did not settle in {steps} flesh steps from t={at:.4} s (up to {violation:.2e} m/s into the ground left); the steps went on with the impulses found"
        ),
    }
}
