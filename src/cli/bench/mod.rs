//! `plasticine bench`: the performance figures the issues ask for, printed as
//! one JSON object per line (machine-readable), on the penguin sample with its
//! key postures and default tolerances.

pub mod blendshape;
mod command;
pub mod contact;
pub mod drape;
pub mod fem_adapt;
pub mod fem_gpu;
pub mod modal;
pub mod morph;
pub mod render;
pub mod scaling;

pub use command::BenchArgs;

use crate::character::{Band, Character};
use crate::samples;
use crate::skin::{IntegratorKind, SimError, SolverSettings, Tolerances};
use glam::Vec3;
use serde_json::json;
use std::io::Write;
use std::time::Instant;

/// What stopped a benchmark.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Building or simulating a sample character failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// An I/O error: writing the JSON lines out, or making the temporary directory.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Writing or reading the benchmark's cache file failed.
    #[error(transparent)]
    Files(#[from] crate::io::IoError),
    /// Playing back the baked cache failed.
    #[error("baked playback: {0}")]
    Playback(#[source] crate::app::BakedPlaybackError),
    /// A bake the scaling figures time failed.
    #[error(transparent)]
    Bake(#[from] crate::bake::BakeError),
    /// An export the scaling figures time failed.
    #[error(transparent)]
    Export(#[from] crate::io::ExportError),
}

/// The penguin wrapped natively at m×n, as `plasticine sample penguin
/// --resolution MxN` builds it (what the real-time figures are measured on).
pub fn penguin_native(m: usize, n: usize) -> Result<Character, SimError> {
    samples::build("penguin", m, n)
}

/// The smoothness figure: each skin of sample `name` wrapped at m×m,
/// its key postures played at 30 Hz; the worst frame's p95 of the
/// neighbour-normal angle and share of creased pairs (over 30°), one JSON
/// object per skin.
pub fn skin_smoothness(name: &str, m: usize) -> Result<Vec<serde_json::Value>, SimError> {
    use crate::skin::Grid;
    use crate::skin::smoothness;
    let c = samples::build(name, m, m)?;
    let end = c.key_postures.last().map_or(1.0, |k| k.time as f64);
    let mut worst: Vec<_> = c
        .skins
        .iter()
        .map(|s| smoothness(&Grid::of(s), &s.points.position))
        .collect();
    let mut sim = samples::playback(c, SolverSettings::default())?;
    let mut events = 0;
    for f in 1..=(end * 30.0).round() as usize {
        events += sim.advance_to(f as f64 / 30.0, None)?.events.len();
        for (w, s) in worst.iter_mut().zip(&sim.character.skins) {
            *w = w.worst(smoothness(&Grid::of(s), &s.points.position));
        }
    }
    Ok(worst
        .iter()
        .zip(&sim.character.skins)
        .map(|(w, s)| {
            json!({
                "name": "skin_smoothness",
                "character": name,
                "skin": s.name,
                "resolution": format!("{m}x{m}"),
                "p95_deg": w.p95_deg,
                "max_deg": w.max_deg,
                "creased_pct": w.creased_pct,
                "divergence_events": events,
                "goal_p95_deg": if m >= 64 { 15.0 } else { 30.0 },
            })
        })
        .collect())
}

/// The skin group (`plasticine bench --only skin`): the penguin's real-time
/// factor at 16×16, 64×64 and 128×128, and every sample's smoothness at
/// 64×64 and 128×128 (32×32 and 64×64 with `quick`).
pub fn skin_figures(quick: bool, out: &mut dyn Write) -> Result<(), BenchError> {
    let scale = if quick { 0.1 } else { 1.0 };
    for (m, seconds, goal, repeats) in [(16, 3.0, 50.0, 5), (64, 1.0, 2.0, 3), (128, 0.5, 0.5, 3)] {
        let mut v = real_time_factor(m, m, seconds * scale, repeats)?;
        v["goal"] = json!(goal);
        writeln!(out, "{v}")?;
        if m <= 64 {
            writeln!(
                out,
                "{}",
                skin_contact_cost(m, seconds * scale, repeats, &v)?
            )?;
        }
    }
    let sizes: &[usize] = if quick { &[32, 64] } else { &[64, 128] };
    for &m in sizes {
        for name in samples::NAMES {
            for v in skin_smoothness(name, m)? {
                writeln!(out, "{v}")?;
            }
        }
    }
    Ok(())
}

/// What skin–skin contact costs: the penguin's real-time factor with it
/// (`with`, a [`real_time_factor`] line) against the same run without.
fn skin_contact_cost(
    m: usize,
    seconds: f64,
    repeats: usize,
    with: &serde_json::Value,
) -> Result<serde_json::Value, SimError> {
    let settings = SolverSettings {
        skin_contact: false,
        ..SolverSettings::default()
    };
    let without = real_time_factor_with(m, m, seconds, repeats, &settings)?;
    let (on, off) = (
        with["real_time_factor"].as_f64().unwrap_or(f64::NAN),
        without["real_time_factor"].as_f64().unwrap_or(f64::NAN),
    );
    Ok(json!({
        "name": "skin_contact",
        "character": "penguin",
        "resolution": format!("{m}x{m}"),
        "rtf": on,
        "rtf_without_contact": off,
        "cost_pct": 100.0 * (off / on - 1.0),
    }))
}

/// Simulated seconds per wall second over `seconds` of the key postures of
/// the penguin wrapped natively at m×n, advanced frame by frame at 30 Hz as
/// playback does. After a warm-up (thread pool, caches), the median of
/// `repeats` runs from the same start.
pub fn real_time_factor(
    m: usize,
    n: usize,
    seconds: f64,
    repeats: usize,
) -> Result<serde_json::Value, SimError> {
    real_time_factor_with(m, n, seconds, repeats, &SolverSettings::default())
}

/// [`real_time_factor`] with the given solver settings.
pub fn real_time_factor_with(
    m: usize,
    n: usize,
    seconds: f64,
    repeats: usize,
    settings: &SolverSettings,
) -> Result<serde_json::Value, SimError> {
    let c = penguin_native(m, n)?;
    let points: usize = c.skins.iter().map(|s| s.m * s.n).sum();
    let frames = (seconds * 30.0).round().max(1.0) as usize;
    let run = |frames: usize| -> Result<(f64, u64, usize), SimError> {
        let mut sim = samples::playback(c.clone(), settings.clone())?;
        let start = Instant::now();
        for f in 1..=frames {
            sim.advance_to(f as f64 / 30.0, None)?;
        }
        let wall = start.elapsed().as_secs_f64();
        let steps = (0..sim.character.skins.len())
            .map(|s| sim.stats(s).steps)
            .sum();
        Ok((wall, steps, sim.character.skins.len()))
    };
    run(frames.min(3))?;
    let mut walls = Vec::new();
    let (mut steps, mut skins) = (0, 0);
    for _ in 0..repeats.max(1) {
        let (w, st, sk) = run(frames)?;
        walls.push(w);
        (steps, skins) = (st, sk);
    }
    walls.sort_by(f64::total_cmp);
    let wall = walls[walls.len() / 2];
    Ok(json!({
        "bench": "real_time_factor",
        "character": "penguin",
        "resolution": format!("{m}x{n}"),
        "skins": skins,
        "points": points,
        "integrator": "verlet",
        "skin_contact": settings.skin_contact,
        "threads": rayon::current_num_threads(),
        "simulated_s": frames as f64 / 30.0,
        "repeats": walls.len(),
        "wall_s": wall,
        "wall_s_all": walls,
        "real_time_factor": frames as f64 / 30.0 / wall,
        "steps": steps,
    }))
}

fn run_positions(
    c: &Character,
    kind: IntegratorKind,
    tol: Tolerances,
    seconds: f64,
) -> Result<(Vec<Vec<Vec3>>, u64, u64), SimError> {
    let settings = SolverSettings {
        integrator: kind,
        tolerances: tol,
        ..SolverSettings::default()
    };
    let mut sim = samples::playback(c.clone(), settings)?;
    sim.advance_to(seconds, None)?;
    let n = sim.character.skins.len();
    let full = (0..n).map(|s| sim.stats(s).evals.full).sum();
    let velocity_only = (0..n).map(|s| sim.stats(s).evals.velocity_only).sum();
    let positions = sim
        .character
        .skins
        .iter()
        .map(|s| s.points.position.clone())
        .collect();
    Ok((positions, full, velocity_only))
}

/// Root-mean-square distance between two sets of skin positions.
fn rms_error(a: &[Vec<Vec3>], b: &[Vec<Vec3>]) -> f32 {
    let (sum, count) = a
        .iter()
        .zip(b)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| p.distance_squared(*q)))
        .fold((0.0f64, 0usize), |(s, c), d| (s + d as f64, c + 1));
    (sum / count.max(1) as f64).sqrt() as f32
}

/// Force evaluations per simulated second for fixed Euler, adaptive RK2 and
/// adaptive Verlet at equal accuracy: each method's cheapest setting (from a
/// geometric scan of its step or tolerance) whose final positions after
/// `seconds` lie within `target` metres (RMS over all points) of an RK4
/// reference at a tight tolerance. Every run, the reference included, resolves
/// contact with the same tight ε(c), so contact is not what is compared.
pub fn evals_at_equal_accuracy(
    seconds: f64,
    target: f32,
) -> Result<Vec<serde_json::Value>, SimError> {
    let c = samples::resampled("penguin", 16, 16)?;
    let contact = 1e-3;
    let tight = Tolerances {
        constraint: contact,
        position: 1e-7,
        velocity: 1e-7,
        max_step: 2e-3,
        ..Tolerances::default()
    };
    let (reference, _, _) = run_positions(&c, IntegratorKind::Rk4, tight, seconds)?;
    let mut out = Vec::new();
    for kind in [
        IntegratorKind::Euler,
        IntegratorKind::Rk2,
        IntegratorKind::Verlet,
    ] {
        let mut best: Option<(f64, u64, f32, u64)> = None;
        let mut tried = Vec::new();
        for k in 0..14 {
            let x = 0.5f64.powf(k as f64 * 0.75);
            let mut tol = Tolerances {
                constraint: contact,
                ..Tolerances::default()
            };
            let setting = if kind == IntegratorKind::Euler {
                tol.fixed_step = 2e-3 * x;
                tol.fixed_step
            } else {
                tol.position = (2e-3 * x) as f32;
                tol.velocity = tol.position;
                tol.position as f64
            };
            let (pos, evals, velocity_only) = match run_positions(&c, kind, tol, seconds) {
                Ok(r) => r,
                Err(SimError::Diverged { .. }) => {
                    tried.push(json!({"setting": setting, "diverged": true}));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let err = rms_error(&pos, &reference);
            tried.push(json!({"setting": setting, "error_m": err, "evals": evals, "velocity_only_evals": velocity_only}));
            if err <= target && best.is_none_or(|b| evals < b.1) {
                best = Some((setting, evals, err, velocity_only));
            }
            if err <= target {
                break;
            }
        }
        out.push(json!({
            "bench": "force_evals_per_simulated_second",
            "character": "penguin",
            "resolution": "16x16",
            "integrator": kind.name(),
            "target_error_m": target,
            "setting": best.map(|b| b.0),
            "error_m": best.map(|b| b.2),
            "evals_per_simulated_s": best.map(|b| b.1 as f64 / seconds),
            // Verlet's fixed point re-evaluates only the cheap damping forces.
            "velocity_only_evals_per_simulated_s": best.map(|b| b.3 as f64 / seconds),
            "scan": tried,
        }));
    }
    Ok(out)
}

/// Bytes per skin point: the persistent per-point fields of the character, and
/// the solver's per-point working set (integrator, forces, constraints).
pub fn bytes_per_point() -> serde_json::Value {
    use std::mem::size_of;
    let v3 = size_of::<Vec3>();
    let persistent = 2 * v3 // position, velocity
        + 2 * size_of::<f32>() // mass and damping densities
        + 3 * size_of::<[f32; 3]>() // rest metric, rest curvature, stretch
        + 2 * size_of::<f32>() // bend, fat
        + size_of::<Option<Band>>();
    let working = 3 * size_of::<f32>() // mass, 1/mass, damping
        + crate::skin::Scratch::bytes_per_point(64, 64, rayon::current_num_threads())
        + 7 * v3 // Verlet buffers
        + 2 * v3 // step start state
        + 2 * v3 // constraint normals and inner points
        + 4 * v3; // anchors and their velocities at the cached time
    json!({
        "bench": "bytes_per_skin_point",
        "persistent": persistent,
        "solver_working_set": working,
        "total": persistent + working,
    })
}

/// Wall time per inverse-kinematics drag event (LEMAN §6.1) for a 10-joint
/// chain following `events` targets a few centimetres apart, each solved from
/// the previous posture with one reused solver.
pub fn ik_drag_event(events: usize) -> serde_json::Value {
    use crate::kinematics::{
        IkSettings, IkSolver, IkTarget, chain_to_branch, demo_chain, demo_drag_target,
    };
    let (skeleton, mut posture) = demo_chain(10);
    let tip = skeleton.joints.len() - 1;
    let chain = chain_to_branch(&skeleton, tip);
    let start = crate::kinematics::forward_kinematics(&skeleton, &posture)[tip]
        .translation
        .into();
    let (settings, mut solver) = (IkSettings::default(), IkSolver::new());
    let (mut total, mut max, mut converged) = (0.0f64, 0.0f64, 0);
    for k in 1..=events.max(1) {
        let target = IkTarget::position(demo_drag_target(start, k));
        let t = Instant::now();
        let r = solver.solve(&skeleton, &mut posture, tip, &chain, &target, &settings);
        let us = t.elapsed().as_secs_f64() * 1e6;
        (total, max) = (total + us, max.max(us));
        converged += usize::from(r.converged);
    }
    json!({
        "bench": "ik_drag_event",
        "joints": 10,
        "events": events.max(1),
        "converged": converged,
        "mean_us": total / events.max(1) as f64,
        "max_us": max,
        "goal_us": 200,
    })
}

/// Wall time of tool picking (LEMAN §6.1–6.3) on the penguin with 64×64 skins
/// and 30 muscles: building the per-frame picker, one touch (`pick_near`, 2 cm
/// radius) and one wand ray (`pick_ray`) against every kind of target, each
/// the mean over `picks` probes. The goal is ≤ 0.5 ms per pick.
pub fn pick_event(picks: usize) -> Result<serde_json::Value, SimError> {
    use crate::samples::{demo_probes, demo_scene};
    use crate::tools::{PickFilter, Picker};
    let c = demo_scene(64, 64, 30)?;
    let body = crate::kinematics::PosedBody::new(&c, &c.skeleton.rest_posture());
    let picks = picks.max(1);
    let (tips, rays) = demo_probes(&c, &body, picks, 7);
    let builds = 50;
    let t = Instant::now();
    for _ in 0..builds {
        std::hint::black_box(Picker::new(&c, &body));
    }
    let build_us = t.elapsed().as_secs_f64() * 1e6 / builds as f64;
    let picker = Picker::new(&c, &body);
    let t = Instant::now();
    let near_hits = tips
        .iter()
        .filter(|&&tip| picker.pick_near(tip, 0.02, PickFilter::ALL).is_some())
        .count();
    let near_us = t.elapsed().as_secs_f64() * 1e6 / picks as f64;
    let t = Instant::now();
    let ray_hits = rays
        .iter()
        .filter(|&&(o, d)| picker.pick_ray(o, d, 10.0, PickFilter::ALL).is_some())
        .count();
    let ray_us = t.elapsed().as_secs_f64() * 1e6 / picks as f64;
    Ok(json!({
        "bench": "pick",
        "skin": "64x64",
        "skins": c.skins.len(),
        "muscles": c.muscles.len(),
        "picks": picks,
        "near_hits": near_hits,
        "ray_hits": ray_hits,
        "near_us": near_us,
        "ray_us": ray_us,
        "build_us": build_us,
        "goal_us": 500,
    }))
}

/// Every measurement, one JSON line each.
pub fn run_all(quick: bool, out: &mut dyn Write) -> Result<(), BenchError> {
    skin_figures(quick, out)?;
    for v in evals_at_equal_accuracy(if quick { 0.2 } else { 1.0 }, 1e-3)? {
        writeln!(out, "{v}")?;
    }
    writeln!(out, "{}", bytes_per_point())?;
    writeln!(out, "{}", ik_drag_event(1000))?;
    writeln!(out, "{}", pick_event(1000)?)?;
    writeln!(
        out,
        "{}",
        baked_playback_frame(128, 128, if quick { 10 } else { 60 })?
    )?;
    writeln!(
        out,
        "{}",
        baked_playback_snapshot(128, 128, if quick { 10 } else { 60 })?
    )?;
    for v in fem_steps_per_second(quick) {
        writeln!(out, "{v}")?;
    }
    for v in modal::figures(quick) {
        writeln!(out, "{v}")?;
    }
    for v in blendshape::figures(quick) {
        writeln!(out, "{v}")?;
    }
    for v in morph::figures(quick) {
        writeln!(out, "{v}")?;
    }
    for v in render::run(quick) {
        writeln!(out, "{v}")?;
    }
    Ok(())
}

/// The figures that need a graphics adapter, for a machine lent a GPU: the
/// GPU FEM's steps (`fem_gpu`), the modal mesh with its GPU pose pass, and
/// the renderer's frames. Each line names its adapter; without one, each
/// group prints one line saying why it was skipped.
pub fn gpu_figures(quick: bool) -> Vec<serde_json::Value> {
    let mut out = fem_gpu::fem_gpu_steps_per_second(quick);
    out.extend(modal::gpu_figures(quick));
    out.extend(render::run(quick));
    out
}

/// Baked playback (LEMAN §6.5): the CPU cost of streaming one frame of a
/// three-skin m×n bake from its cache file, sequentially (playback) and at
/// random (scrubbing). The cache is written to a temporary folder first.
pub fn baked_playback_frame(
    m: usize,
    n: usize,
    frames: usize,
) -> Result<serde_json::Value, BenchError> {
    use crate::io::{CacheReader, CacheWriter};
    let dir = std::env::temp_dir().join(format!("plasticine-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("bench.plcache");
    let skins = [("body", m, n), ("flipper_l", m, n), ("flipper_r", m, n)];
    let mut w = CacheWriter::create(&path, 30.0, &skins)?;
    let points: Vec<Vec3> = (0..m * n).map(|k| Vec3::splat(k as f32 * 1e-4)).collect();
    for f in 0..frames {
        w.write_frame(f as f64 / 30.0, &[&points, &points, &points])?;
    }
    w.finish()?;
    let mut r = CacheReader::open(&path)?;
    let mut buf = Vec::new();
    r.read_frame(0, &mut buf)?; // warm the file cache and the buffers
    let t0 = Instant::now();
    for f in 0..frames {
        r.read_frame(f, &mut buf)?;
    }
    let sequential = t0.elapsed().as_secs_f64() * 1e3 / frames as f64;
    let t1 = Instant::now();
    let mut k = 7usize;
    for _ in 0..frames {
        k = (k * 31 + 17) % frames;
        r.read_frame(k, &mut buf)?;
    }
    let random = t1.elapsed().as_secs_f64() * 1e3 / frames as f64;
    let bytes = r.bytes_per_frame();
    drop(r);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(json!({
        "name": "baked_playback_frame",
        "skin": format!("{m}x{n} x3"),
        "bytes_per_frame": bytes,
        "sequential_ms": sequential,
        "random_ms": random,
        "goal_ms": 1.0,
    }))
}

/// Baked playback as the front ends do it: the penguin's three skins at
/// m×n in a cache, and per frame the frame read plus the scene snapshot
/// built from it (`BakedFrames::snapshot`: positions, the fat, the posture),
/// sequentially and scrubbing at random. Goal ≤ 1 ms of CPU per frame.
pub fn baked_playback_snapshot(
    m: usize,
    n: usize,
    frames: usize,
) -> Result<serde_json::Value, BenchError> {
    use crate::app::BakedFrames;
    use crate::io::CacheWriter;
    let c = samples::resampled("penguin", 16, 16)?;
    let dir = std::env::temp_dir().join(format!("plasticine-bench-snap-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("bench.plcache");
    let skins: Vec<(&str, usize, usize)> =
        c.skins.iter().map(|s| (s.name.as_str(), m, n)).collect();
    let mut w = CacheWriter::create(&path, 30.0, &skins)?;
    let points: Vec<Vec3> = (0..m * n).map(|k| Vec3::splat(k as f32 * 1e-4)).collect();
    let per_skin: Vec<&[Vec3]> = c.skins.iter().map(|_| points.as_slice()).collect();
    for f in 0..frames {
        w.write_frame(f as f64 / 30.0, &per_skin)?;
    }
    w.finish()?;
    let mut baked = BakedFrames::open(&path, &c).map_err(BenchError::Playback)?;
    let posture = c.skeleton.rest_posture();
    let mut seq = 0;
    let time_of = |f: usize| f as f64 / 30.0;
    baked
        .snapshot(time_of(frames - 1), &posture, 0, &mut seq)
        .map_err(BenchError::Playback)?;
    let t0 = Instant::now();
    for f in 0..frames {
        baked
            .snapshot(time_of(f), &posture, 0, &mut seq)
            .map_err(BenchError::Playback)?;
    }
    let sequential = t0.elapsed().as_secs_f64() * 1e3 / frames as f64;
    let t1 = Instant::now();
    let mut k = 7usize;
    for _ in 0..frames {
        k = (k * 31 + 17) % frames;
        baked
            .snapshot(time_of(k), &posture, 0, &mut seq)
            .map_err(BenchError::Playback)?;
    }
    let random = t1.elapsed().as_secs_f64() * 1e3 / frames as f64;
    drop(baked);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(json!({
        "name": "baked_playback_snapshot",
        "skin": format!("{m}x{n} x{}", c.skins.len()),
        "sequential_ms": sequential,
        "random_ms": random,
        "goal_ms": 1.0,
    }))
}

/// The lattice FEM: implicit Euler steps per wall second of the
/// demonstration limb (two bones, elbow swinging, h = 1/90 s) at three
/// sizes, global linear and blended local, with the precompute time and the
/// lattice vertices a second of stepping moves (vertices × steps/s; a lattice
/// runs at 90 Hz when its steps/s is ≥ 90). The goal is ≥ 2000 steps/s at
/// about 200 vertices.
pub fn fem_steps_per_second(quick: bool) -> Vec<serde_json::Value> {
    use crate::fem::Linearization;
    use crate::samples::{limb, limb_pose};
    let seconds = if quick { 0.3 } else { 2.0 };
    let mut out = Vec::new();
    for dims in [[4, 4, 8], [8, 8, 16], [16, 16, 32]] {
        for lin in [
            Linearization::Global,
            Linearization::BlendedLocal { blend_width: 0.1 },
        ] {
            let mut body = limb(dims, 0.4 / dims[2] as f64, lin);
            let h = body.settings.time_step;
            // The first step factors each region's system (once per
            // known-row mask): timed apart, as the factor's cost.
            let first = Instant::now();
            body.step(&limb_pose(&body, 0.0));
            let first_step_ms = first.elapsed().as_secs_f64() * 1e3;
            let fill: Vec<Option<f64>> = body
                .factor_fill()
                .iter()
                .map(|f| f.map(|(stored, nnz)| stored as f64 / nnz.max(1) as f64))
                .collect();
            let (mut steps, mut iterations, mut converged) = (0usize, 0usize, 0usize);
            let start = Instant::now();
            while start.elapsed().as_secs_f64() < seconds || steps < 3 {
                steps += 1;
                let r = body.step(&limb_pose(&body, steps as f64 * h));
                iterations += r.iterations();
                converged += usize::from(r.converged());
            }
            let wall = start.elapsed().as_secs_f64();
            let rate = steps as f64 / wall;
            out.push(json!({
                "bench": "fem_steps_per_second",
                "lattice": format!("{}x{}x{}", dims[0], dims[1], dims[2]),
                "vertices": body.vertex_count(),
                "cells": body.lattice.cell_count(),
                "linearization": if body.regions.len() > 1 { "blended_local" } else { "global" },
                "regions": body.regions.len(),
                "threads": rayon::current_num_threads(),
                "steps": steps,
                "steps_per_second": rate,
                "cg_iterations_per_step": iterations as f64 / steps as f64,
                "converged_steps": converged,
                "vertices_per_second": rate * body.vertex_count() as f64,
                "runs_at_90hz": rate >= 90.0,
                "precompute_ms": body.precompute_seconds * 1e3,
                "first_step_ms": first_step_ms,
                "factor_fill": fill,
                "goal_steps_per_second": 2000,
            }));
        }
    }
    out.extend(fem_adapt::fem_adaptive_steps_per_second(quick));
    out.push(fem_flesh_penguin(quick, None));
    out.push(fem_flesh_penguin(
        quick,
        Some(crate::character::FleshDetail::default()),
    ));
    out.extend(fem_gpu::fem_gpu_steps_per_second(quick));
    out
}

/// The FEM flesh of the penguin sample as the application runs it: the time
/// to build it (lattice, object-only integrals, bones snapped, regions,
/// factors: what an edit that rebuilds the flesh waits for), and the cost of
/// its 1/120 s steps while the key postures drive it; with adaptive detail
/// (§4.7), also the detail it drew.
pub fn fem_flesh_penguin(
    quick: bool,
    detail: Option<crate::character::FleshDetail>,
) -> serde_json::Value {
    use crate::character::{FemFlesh, Flesh};
    use crate::fem::FleshSim;
    let name = match detail {
        Some(_) => "fem_flesh_penguin_adaptive",
        None => "fem_flesh_penguin",
    };
    let flesh = Flesh::Fem(FemFlesh {
        detail,
        ..FemFlesh::default()
    });
    let c = match samples::build_with_flesh("penguin", 16, 16, flesh) {
        Ok(c) => c,
        Err(e) => return json!({"bench": name, "error": e.to_string()}),
    };
    let driver = crate::skin::SkeletonDriver::Keys(c.key_postures.clone());
    let start = Instant::now();
    let mut flesh = match FleshSim::new(&c, &driver.posture_at(0.0), 0.0) {
        Ok(f) => f,
        Err(e) => return json!({"bench": name, "error": e.to_string()}),
    };
    let build_ms = start.elapsed().as_secs_f64() * 1e3;
    let seconds = if quick {
        0.5
    } else {
        c.motion_duration().max(1.0) as f64
    };
    let (steps0, iterations0) = (flesh.steps, flesh.cg_iterations);
    let mut most_detail = 0;
    let start = Instant::now();
    // In 1/30 s slices, to see the detail the motion draws.
    let mut t = 0.0;
    while t < seconds {
        t = (t + 1.0 / 30.0).min(seconds);
        flesh.advance_to(&c, |t| driver.posture_at(t), t);
        most_detail = most_detail.max(flesh.body.detail_per_level().iter().sum::<usize>());
    }
    let wall = start.elapsed().as_secs_f64();
    let steps = (flesh.steps - steps0).max(1);
    let control = flesh.body.control_lattice();
    json!({
        "bench": name,
        "lattice_vertices": control.vertex_count(),
        "cells": control.cell_count(),
        "regions": flesh.body.region_count(),
        "most_detail_functions": most_detail,
        "build_ms": build_ms,
        "simulated_seconds": seconds,
        "steps": steps,
        "step_ms": wall * 1e3 / steps as f64,
        "cg_iterations_per_step": (flesh.cg_iterations - iterations0) as f64 / steps as f64,
        "simulated_seconds_per_wall_second": seconds / wall,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn ik_line_follows_a_thousand_drag_events() {
        let v = super::ik_drag_event(1000);
        assert_eq!(v["converged"], 1000, "{v}");
        assert!(v["mean_us"].as_f64().unwrap() > 0.0);
    }
}
