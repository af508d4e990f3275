//! One character's bake into one folder: its files, its cache under way
//! (fresh or resumed from a checkpoint), each frame written, the
//! checkpoints, and the finished cache summed up.

use super::checkpoint::{BakeIdentity, Checkpoint};
use super::options::{BakeError, BakeOptions, BakeStart};
use super::smoothness::worst_frames;
use super::summary::{BakeSummary, contact_summary, skin_summaries};
use crate::character::Character;
use crate::fem::FleshSim;
use crate::io::{CacheFlesh, CacheModalPart, CacheReader, CacheWriter, IoError};
use crate::skin::{FleshRun, SimEvent, Simulation};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The finished frame cache, in the output folder.
pub const CACHE_FILE: &str = "bake.plcache";

/// The frames of a bake not finished yet (an unfinished `PLSTCACH` file,
/// readable with [`CacheReader`]).
pub const PARTIAL_FILE: &str = "bake.plcache.partial";

/// The checkpoint of a cancelled bake.
pub const CHECKPOINT_FILE: &str = "bake.resume";

/// What a cache of `sim` holds besides the skins: the FEM or modal flesh's
/// embedded mesh and muscle offsets per frame, modal flesh's amplitudes, a
/// responding skeleton's root.
pub(super) fn layout(sim: &Simulation) -> CacheFlesh {
    CacheFlesh::of(&sim.character)
        .with_modal(modal_parts(sim))
        .with_root(sim.flesh().and_then(FleshSim::core).is_some())
}

/// How much a finished bake baked.
#[derive(Clone, Copy)]
pub(super) struct Baked {
    /// Frames.
    pub(super) total: usize,
    /// Simulated seconds.
    pub(super) duration: f64,
    /// Wall seconds, with any run before a resume.
    pub(super) wall_seconds: f64,
}

/// Finishes the cache of `sim`'s bake `run` in `paths` (removing its
/// checkpoint) and sums the bake up.
pub(super) fn finish(
    sim: &Simulation,
    opts: &BakeOptions,
    run: Run,
    paths: &BakePaths,
    name: String,
    done: Baked,
) -> Result<BakeSummary, BakeError> {
    let cache_summary = run.cache.finish()?;
    remove_checkpoint(&paths.checkpoint)?;
    let skins = skin_summaries(sim, worst_frames(&paths.cache)?);
    Ok(BakeSummary {
        character: name,
        integrator: opts.settings.integrator.name().into(),
        frames: done.total,
        fps: opts.fps,
        simulated_seconds: done.duration,
        wall_seconds: done.wall_seconds,
        real_time_factor: done.duration / done.wall_seconds.max(1e-9),
        skins,
        flesh: cache_summary.flesh.clone(),
        events: run.events,
        cache: paths.cache.clone(),
        cache_bytes: cache_summary.bytes,
        obj_frames: run.obj_frames,
        contact: contact_summary(sim),
        with: None,
    })
}

/// Where a bake's files go in its output folder.
pub(super) struct BakePaths {
    /// The output folder.
    pub(super) dir: PathBuf,
    /// The finished cache ([`CACHE_FILE`]).
    pub(super) cache: PathBuf,
    /// The frames of an unfinished bake ([`PARTIAL_FILE`]).
    pub(super) partial: PathBuf,
    /// The checkpoint of a cancelled bake ([`CHECKPOINT_FILE`]).
    pub(super) checkpoint: PathBuf,
}

impl BakePaths {
    /// The bake files in `out_dir`.
    pub(super) fn in_dir(out_dir: &Path) -> Self {
        Self {
            dir: out_dir.to_path_buf(),
            cache: out_dir.join(CACHE_FILE),
            partial: out_dir.join(PARTIAL_FILE),
            checkpoint: out_dir.join(CHECKPOINT_FILE),
        }
    }
}

/// A bake under way: its cache writer and what it carries over a resume.
pub(super) struct Run {
    pub(super) cache: CacheWriter,
    /// The first frame still to bake.
    pub(super) first: usize,
    /// Frames written as OBJ so far.
    pub(super) obj_frames: usize,
    /// The simulation events so far, described.
    pub(super) events: Vec<String>,
    /// Wall time spent before this run (by the cancelled bake resumed), in s.
    pub(super) wall_before: f64,
}

/// What each frame writes besides the cache's skins.
pub(super) struct FrameOut<'a> {
    /// What the cache holds of the FEM flesh.
    pub(super) flesh_layout: &'a CacheFlesh,
    /// The triangles of the embedded mesh, for OBJ frames.
    pub(super) triangles: &'a [[u32; 3]],
    /// Also write every k-th frame as OBJ.
    pub(super) obj_every: Option<usize>,
    /// The folder of the OBJ frames.
    pub(super) obj_dir: &'a Path,
}

/// The frame a checkpoint is taken after: the frames baked and the last one's time.
#[derive(Clone, Copy)]
pub(super) struct FramePoint {
    pub(super) done: usize,
    pub(super) time: f64,
}

/// What the bake of `character` (already resampled) with `opts` is of, as a
/// checkpoint records it.
pub(super) fn bake_identity(
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

/// The vibrating parts of `sim`'s modal flesh, as a cache lists them.
pub(super) fn modal_parts(sim: &Simulation) -> Vec<CacheModalPart> {
    match sim.flesh_run() {
        Some(FleshRun::Modal(m)) => m.parts().map(|p| p.cache_record()).collect(),
        _ => Vec::new(),
    }
}

/// The triangles of the character's FEM embedded mesh (none without one).
pub(super) fn embedded_triangles(character: &Character) -> Vec<[u32; 3]> {
    character
        .flesh
        .lattice_model()
        .and_then(|f| f.embedded_mesh.as_ref())
        .map(|m| m.triangles.clone())
        .unwrap_or_default()
}

/// Where to begin: a fresh cache (the simulation advanced to `start`), or
/// the cancelled bake's (the simulation restored to its checkpoint).
pub(super) fn begin(
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
pub(super) fn write_frame(
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
pub(super) fn write_checkpoint(
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
pub(super) fn remove_checkpoint(checkpoint_path: &Path) -> Result<(), BakeError> {
    match std::fs::remove_file(checkpoint_path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(IoError::os(checkpoint_path, "remove", e).into()),
    }
    Ok(())
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

pub(super) fn describe(e: &SimEvent) -> String {
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
