//! Baking (LEMAN §6.4–6.5): play the key postures in simulation time at the
//! chosen skin resolution and stream every frame's skin into a frame cache,
//! with a summary of what the solver did.

use crate::character::Character;
use crate::io::{CacheWriter, IoError, write_atomic};
use crate::skin::resample::resample;
use crate::skin::{SimError, SimEvent, Simulation, SkeletonDriver, SkinStats, SolverSettings};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Clone, Debug)]
pub struct BakeOptions {
    /// Resample every skin to m×n first (§6.5), or keep each skin's own.
    pub resolution: Option<(usize, usize)>,
    pub settings: SolverSettings,
    pub fps: f32,
    /// Simulated seconds to bake; defaults to the key postures' span.
    pub duration: Option<f64>,
    /// Also write every k-th frame as OBJ.
    pub obj_every: Option<usize>,
}

impl Default for BakeOptions {
    fn default() -> Self {
        Self {
            resolution: None,
            settings: SolverSettings::default(),
            fps: 30.0,
            duration: None,
            obj_every: None,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct SkinSummary {
    pub name: String,
    pub m: usize,
    pub n: usize,
    pub stats: SkinStats,
}

#[derive(Clone, Debug, Serialize)]
pub struct BakeSummary {
    pub character: String,
    pub integrator: String,
    pub frames: usize,
    pub fps: f32,
    pub simulated_seconds: f64,
    pub wall_seconds: f64,
    /// Simulated seconds per wall second.
    pub real_time_factor: f64,
    pub skins: Vec<SkinSummary>,
    /// Divergences and what was done about them.
    pub events: Vec<String>,
    pub cache: PathBuf,
    pub cache_bytes: u64,
    pub obj_frames: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum BakeError {
    #[error(transparent)]
    Io(#[from] IoError),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error("{0}")]
    Options(String),
}

/// Bakes `character` into `out_dir` (`bake.plcache`, `summary.json`, and
/// `obj/frame_NNNNN.obj` if asked). `progress(done, total)` is called per frame.
pub fn bake(
    mut character: Character,
    opts: &BakeOptions,
    out_dir: &Path,
    mut progress: impl FnMut(usize, usize),
) -> Result<BakeSummary, BakeError> {
    if !(opts.fps.is_finite() && opts.fps > 0.0 && opts.fps <= 1000.0) {
        return Err(BakeError::Options(format!(
            "fps must lie in (0, 1000], got {}",
            opts.fps
        )));
    }
    if character.key_postures.is_empty() {
        return Err(SimError::NoMotion.into());
    }
    if let Some((m, n)) = opts.resolution {
        for skin in &mut character.skins {
            *skin = resample(skin, m, n).map_err(BakeError::Options)?;
        }
    }
    let start = character.key_postures[0].time as f64;
    let duration = opts.duration.unwrap_or(character.motion_duration() as f64);
    if !(duration.is_finite() && duration > 0.0) {
        return Err(BakeError::Options(format!(
            "duration must be positive, got {duration}"
        )));
    }
    let frames = (duration * opts.fps as f64).round().max(1.0) as usize;
    let driver = SkeletonDriver::Keys(character.key_postures.clone());
    let name = character.name.clone();
    let mut sim = Simulation::new(character, driver, opts.settings.clone())?;
    if start != 0.0 {
        sim.advance_to(start, None)?;
    }
    let cache_path = out_dir.join("bake.plcache");
    let layout: Vec<(String, usize, usize)> = sim
        .character
        .skins
        .iter()
        .map(|s| (s.name.clone(), s.m, s.n))
        .collect();
    let layout_ref: Vec<(&str, usize, usize)> = layout
        .iter()
        .map(|(s, m, n)| (s.as_str(), *m, *n))
        .collect();
    let mut cache = CacheWriter::create(&cache_path, opts.fps, &layout_ref)?;
    let obj_dir = out_dir.join("obj");
    let mut obj_frames = 0;
    let mut events = Vec::new();
    let wall = Instant::now();
    for f in 0..=frames {
        let t = start + f as f64 / opts.fps as f64;
        if f > 0 {
            let report = sim.advance_to(t, None)?;
            events.extend(report.events.iter().map(describe));
        }
        let positions: Vec<&[glam::Vec3]> = sim
            .character
            .skins
            .iter()
            .map(|s| s.points.position.as_slice())
            .collect();
        cache.write_frame(t, &positions)?;
        if let Some(k) = opts.obj_every.filter(|&k| k > 0 && f % k == 0) {
            let _ = k;
            let skins: Vec<_> = sim
                .character
                .skins
                .iter()
                .map(|s| (s.name.as_str(), s.m, s.n, s.points.position.as_slice()))
                .collect();
            crate::io::obj::write_skins_obj(&obj_dir.join(format!("frame_{f:05}.obj")), &skins)?;
            obj_frames += 1;
        }
        progress(f, frames);
    }
    let wall_seconds = wall.elapsed().as_secs_f64();
    let cache_summary = cache.finish()?;
    let summary = BakeSummary {
        character: name,
        integrator: opts.settings.integrator.name().into(),
        frames: frames + 1,
        fps: opts.fps,
        simulated_seconds: duration,
        wall_seconds,
        real_time_factor: duration / wall_seconds.max(1e-9),
        skins: sim
            .character
            .skins
            .iter()
            .enumerate()
            .map(|(s, skin)| SkinSummary {
                name: skin.name.clone(),
                m: skin.m,
                n: skin.n,
                stats: sim.stats(s),
            })
            .collect(),
        events,
        cache: cache_path,
        cache_bytes: cache_summary.bytes,
        obj_frames,
    };
    let json = serde_json::to_string_pretty(&summary).expect("summary serializes");
    write_atomic(&out_dir.join("summary.json"), json.as_bytes())?;
    Ok(summary)
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
    }
}
