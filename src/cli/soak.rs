//! `plasticine soak`: a long scripted session in the headless front end, to
//! show that memory holds steady and frames do not slow down over hours of
//! work. Each cycle edits the penguin (skin material, fat strokes, a pose, a
//! key posture) through the undo history, undoes and redoes every edit
//! (checking that both land exactly), plays a second of the key postures
//! with the skin simulated frame by frame (drawing the last one offscreen
//! with the real renderer), and bakes half a second. It prints one
//! JSON line per sample of the process's memory and GPU objects and a
//! summary, and fails if memory grew more than the limit after the warm-up
//! or the GPU holds more buffers or textures at the end than after it.

use crate::app::OrbitRig;
use crate::bake::{BakeOptions, bake};
use crate::gpu::{GpuContext, LiveObjects};
use crate::render::{Decorations, OffscreenTarget, SceneRenderer, StereoMode};
use crate::skin::{Simulation, SkeletonDriver, SolverSettings};
use crate::snapshot::SceneSnapshot;
use crate::tools::{Command, History};
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// The arguments of `plasticine soak`.
#[derive(clap::Args)]
pub struct SoakArgs {
    /// Simulated minutes to play back in all (one second per cycle).
    #[arg(long, default_value_t = 60.0)]
    minutes: f64,
    /// Edits per cycle, each undone and redone.
    #[arg(long, default_value_t = 40)]
    edits: usize,
    /// Memory for undo (MB), as the front ends' --undo-budget.
    #[arg(long, value_name = "MB", default_value_t = 8)]
    undo_budget: usize,
    /// Largest growth of resident memory after the warm-up (the first tenth
    /// of the cycles, and until the undo data fills its budget), in
    /// percent, before the soak fails: the median over the last tenth of
    /// the cycles against the median over the tenth before the warm-up's end.
    #[arg(long, default_value_t = 5.0)]
    max_growth: f64,
    /// Draw nothing: no GPU (or software renderer) needed, and no GPU
    /// objects counted.
    #[arg(long)]
    no_render: bool,
}

/// The played frames drawn offscreen, as a session's renderer draws them
/// (one renderer, one target, for the whole soak), so the GPU objects a
/// long session holds can be counted.
struct View {
    ctx: GpuContext,
    renderer: SceneRenderer,
    target: OffscreenTarget,
    rig: Option<OrbitRig>,
}

/// The offscreen image's size (small: the soak counts objects, not pixels).
const VIEW_SIZE: (u32, u32) = (160, 120);

impl View {
    fn new() -> Result<Self> {
        let ctx =
            GpuContext::headless().context("the soak draws its frames (--no-render does not)")?;
        let renderer = SceneRenderer::new(&ctx, OffscreenTarget::FORMAT)?;
        let target = OffscreenTarget::new(&ctx, VIEW_SIZE);
        Ok(Self {
            ctx,
            renderer,
            target,
            rig: None,
        })
    }

    /// Draws the simulation as it stands, waits for the image; the time.
    fn draw(&mut self, sim: &Simulation, t: f64, revision: u64) -> Result<f64> {
        let start = Instant::now();
        // The snapshot's skins are the simulated character's own points.
        let character = Arc::new(sim.character.clone());
        let mut snapshot = SceneSnapshot::of(character, sim.driver.posture_at(t), revision);
        snapshot.sim_time = t;
        let rig = *self.rig.get_or_insert_with(|| OrbitRig::framing(&snapshot));
        let aspect = VIEW_SIZE.0 as f32 / VIEW_SIZE.1 as f32;
        self.renderer.draw(
            &snapshot,
            &Decorations::default(),
            &rig.eyes(0.0, aspect, 0.0),
            StereoMode::Mono,
            VIEW_SIZE,
            Some((&self.target.view, VIEW_SIZE)),
            &[],
        );
        self.target.read(&self.ctx)?;
        Ok(start.elapsed().as_secs_f64() * 1e3)
    }

    fn live(&self) -> Option<LiveObjects> {
        self.ctx.live_objects()
    }
}

/// Resident memory of this process (bytes), from `/proc/self/statm`.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// The edits of cycle `cycle`: whole-skin materials, fat strokes, a pose
/// and a key posture, varied so no two cycles are alike.
fn edits(c: &crate::character::Character, cycle: usize, count: usize) -> Vec<Command> {
    let skins = c.skins.len();
    (0..count)
        .map(|k| {
            let x = (cycle * count + k) as f32;
            match k % 4 {
                0 => {
                    // A few percent around the skin's own material.
                    let p = &c.skins[k % skins].points;
                    let wobble = 1.0 + 0.05 * (x * 0.37).sin();
                    Command::SetSkinMaterial {
                        skin: k % skins,
                        region: None,
                        stretch: Some(p.stretch[0][0] * wobble),
                        damping: Some(p.damping_density[0] * wobble),
                        mass: None,
                        band_stiffness: None,
                        bend: None,
                    }
                }
                1 => {
                    let s = &c.skins[k % skins];
                    Command::FatStroke {
                        skin: k % skins,
                        center_point: (cycle * 37 + k * 11) % (s.m * s.n),
                        radius: 0.03,
                        amount: if cycle.is_multiple_of(2) {
                            -0.002
                        } else {
                            0.002
                        },
                    }
                }
                2 => {
                    let mut posture = c.skeleton.rest_posture();
                    for (j, a) in posture.angles.iter_mut().enumerate().skip(1) {
                        a.x = 0.2 * ((x + j as f32) * 0.7).sin();
                    }
                    Command::SetPosture { posture }
                }
                _ => {
                    // The motion as it is there, a little more bent.
                    let time = 0.25 + 0.01 * (x % 50.0);
                    let mut posture = crate::anim::sample_posture(&c.key_postures, time)
                        .unwrap_or_else(|| c.skeleton.rest_posture());
                    for a in posture.angles.iter_mut().skip(1) {
                        a.x += 0.03 * (x * 0.11).sin();
                    }
                    Command::SetKey {
                        time,
                        posture,
                        tension: 0.0,
                        continuity: 0.0,
                        bias: 0.0,
                    }
                }
            }
        })
        .collect()
}

impl SoakArgs {
    pub fn run(self) -> Result<()> {
        let start = crate::samples::build("penguin", 16, 16)?;
        let cycles = (self.minutes * 60.0).ceil().max(10.0) as usize;
        let warm_up = cycles / 10;
        let dir = tempfile::tempdir()?;
        let mut history = History::new(&start);
        history.set_budget(self.undo_budget.saturating_mul(1 << 20));
        // As the front ends run without --record.
        history.keep_record(false);
        let mut c = start.clone();
        let (mut baseline, mut peak) = (None, 0u64);
        // Resident memory of the latest cycles (a window as long as the
        // warm-up): growth compares the window's median at the end with its
        // median after the warm-up, so a passing peak (a bake's buffers, the
        // driver's) is not taken for growth. The peak is reported too.
        let mut rss_window: std::collections::VecDeque<f64> = std::collections::VecDeque::new();
        // Frame times of the latest cycles only (a window as long as the
        // warm-up): the soak's own record must not grow with its length.
        let window = 30 * warm_up.max(1);
        let mut frame_ms: std::collections::VecDeque<f64> = std::collections::VecDeque::new();
        let (mut first_frames, mut undos) = (None, 0usize);
        let mut full = false;
        let mut view = if self.no_render {
            None
        } else {
            Some(View::new()?)
        };
        let mut draw_ms: std::collections::VecDeque<f64> = std::collections::VecDeque::new();
        let (mut gpu_after_warm_up, mut first_draws) = (None, None);
        let wall = Instant::now();
        for cycle in 0..cycles {
            // Edit, undo everything, redo everything: both exact.
            let before = c.clone();
            let batch = edits(&c, cycle, self.edits);
            let depth_before = history.undo_depth();
            for cmd in &batch {
                history.apply(&mut c, cmd.clone())?;
            }
            // The undo data filled its budget: from here on it holds steady.
            full |= history.undo_depth() < depth_before + batch.len();
            let edited = c.clone();
            let depth = history.undo_depth().min(batch.len());
            for _ in 0..depth {
                history.undo(&mut c)?;
            }
            if depth == batch.len() && c != before {
                bail!("cycle {cycle}: undoing the cycle's edits did not restore it");
            }
            for _ in 0..depth {
                history.redo(&mut c)?;
            }
            undos += depth;
            if c != edited {
                bail!("cycle {cycle}: undo then redo did not land on the edited character");
            }
            // Play a second of the key postures, frame by frame.
            let driver = SkeletonDriver::Keys(c.key_postures.clone());
            let mut sim = Simulation::new(c.clone(), driver, SolverSettings::default())?;
            for f in 1..=30 {
                let t = Instant::now();
                sim.advance_to(f as f64 / 30.0, None)?;
                if frame_ms.len() == window {
                    frame_ms.pop_front();
                }
                frame_ms.push_back(t.elapsed().as_secs_f64() * 1e3);
                if let Some(view) = view.as_mut().filter(|_| f == 30) {
                    let ms = view.draw(&sim, f as f64 / 30.0, history.revision())?;
                    // One draw per cycle: a window as long as the warm-up.
                    if draw_ms.len() == warm_up.max(1) {
                        draw_ms.pop_front();
                    }
                    draw_ms.push_back(ms);
                }
            }
            // Bake half a second, over the last cycle's bake.
            let opts = BakeOptions {
                duration: Some(0.5),
                start: crate::bake::BakeStart::Restart,
                ..BakeOptions::default()
            };
            bake(c.clone(), &opts, dir.path(), |_, _| {
                crate::bake::BakeControl::Continue
            })?;
            let rss = resident_bytes().unwrap_or(0);
            if rss_window.len() == warm_up.max(1) {
                rss_window.pop_front();
            }
            rss_window.push_back(rss as f64);
            let gpu = view.as_ref().and_then(View::live);
            // Warm-up: a tenth of the cycles, and until the undo data is full.
            if baseline.is_none() && cycle + 1 >= warm_up.max(1) && (full || cycle + 1 == cycles) {
                baseline = Some(median(&mut Vec::from(rss_window.clone())));
                first_frames = Some(median(&mut Vec::from(frame_ms.clone())));
                gpu_after_warm_up = gpu;
                first_draws = Some(median(&mut Vec::from(draw_ms.clone())));
            }
            peak = peak.max(rss);
            if cycle % (cycles / 20).max(1) == 0 || cycle + 1 == cycles {
                println!(
                    "{}",
                    json!({
                        "name": "soak_sample",
                        "cycle": cycle,
                        "simulated_s": (cycle + 1) as f64,
                        "wall_s": wall.elapsed().as_secs_f64(),
                        "rss_mb": rss as f64 / 1e6,
                        "undo_depth": history.undo_depth(),
                        "undo_mb": history.held_bytes() as f64 / 1e6,
                        "forgotten_steps": history.forgotten_steps(),
                        "gpu": gpu,
                    })
                );
            }
        }
        let end = median(&mut Vec::from(rss_window));
        let baseline = baseline.unwrap_or(end).max(1.0);
        let growth = 100.0 * (end / baseline - 1.0);
        let last_frames = median(&mut Vec::from(frame_ms));
        let gpu_end = view.as_ref().and_then(View::live);
        let last_draws = median(&mut Vec::from(draw_ms));
        println!(
            "{}",
            json!({
                "name": "soak",
                "cycles": cycles,
                "simulated_minutes": cycles as f64 / 60.0,
                "edits": cycles * self.edits,
                "undos_and_redos": 2 * undos,
                "wall_s": wall.elapsed().as_secs_f64(),
                "rss_after_warm_up_mb": baseline / 1e6,
                "rss_end_mb": end / 1e6,
                "undo_budget_reached": full,
                "rss_peak_mb": peak as f64 / 1e6,
                "rss_growth_pct": growth,
                "frame_ms_median_start": first_frames,
                "frame_ms_median_end": last_frames,
                "undo_mb": history.held_bytes() as f64 / 1e6,
                "gpu_after_warm_up": gpu_after_warm_up,
                "gpu_end": gpu_end,
                "draw_ms_median_start": first_draws,
                "draw_ms_median_end": view.is_some().then_some(last_draws),
            })
        );
        if let (Some(warm), Some(end)) = (gpu_after_warm_up, gpu_end)
            && (end.buffers > warm.buffers || end.textures > warm.textures)
        {
            bail!(
                "the GPU holds more objects than after the warm-up: {} buffers (was {}), {} textures (was {})",
                end.buffers,
                warm.buffers,
                end.textures,
                warm.textures
            );
        }
        if growth > self.max_growth {
            bail!(
                "resident memory grew {growth:.1} % after the warm-up (limit {} %)",
                self.max_growth
            );
        }
        Ok(())
    }
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}
