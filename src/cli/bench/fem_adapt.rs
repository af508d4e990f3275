//! `plasticine bench` figures of the adaptive body (`crate::fem::adapt`): a
//! slab of 8 × 2 × 8 cells of 5 cm on a clamped base, J = 2, pressed by a
//! point load near a corner and then released, adapting after every step.
//! Reports the step rate with adaptation (the Galerkin rebuild included),
//! the cost of an adaptation, the DOFs it used against the coarse and the
//! all-detail body, and the step rates of those two fixed bases.

use crate::fem::FemSettings;
use crate::fem::Lattice;
use crate::fem::Material;
use crate::fem::{AdaptError, AdaptSettings, AdaptiveBody};
use glam::DVec3;
use serde_json::json;
use std::time::Instant;

/// What stops the slab's benchmark.
#[derive(Debug, thiserror::Error)]
enum SlabError {
    #[error(transparent)]
    Adaptive(#[from] AdaptError),
    #[error("the load point is not a fine vertex")]
    LoadPoint,
}

fn slab() -> Result<AdaptiveBody, AdaptError> {
    let l = Lattice::grid_box(DVec3::ZERO, DVec3::splat(0.05), [8, 2, 8]);
    let fixed = l
        .vertex_coords
        .iter()
        .map(|c| (c[1] == 0).then_some(DVec3::ZERO))
        .collect();
    let material = Material {
        young: 1.0e5,
        poisson: 0.3,
        density: 1000.0,
    };
    let settings = FemSettings {
        gravity: DVec3::ZERO,
        mass_damping: 20.0,
        ..FemSettings::default()
    };
    let adapt = AdaptSettings {
        levels: 2,
        refine_threshold: vec![0.02; 2],
        coarsen_threshold: vec![0.01; 2],
    };
    AdaptiveBody::uniform(l, material, fixed, settings, adapt)
}

/// Steps per wall second of `body` under `load` for `seconds` (at least
/// three steps), adapting after each step if `adapt`.
fn rate(body: &mut AdaptiveBody, load: &[DVec3], seconds: f64) -> Result<f64, AdaptError> {
    let start = Instant::now();
    let mut steps = 0;
    while start.elapsed().as_secs_f64() < seconds || steps < 3 {
        body.step(&[], Some(load))?;
        steps += 1;
    }
    Ok(steps as f64 / start.elapsed().as_secs_f64())
}

fn run(quick: bool) -> Result<serde_json::Value, SlabError> {
    let steps = if quick { 20 } else { 90 };
    let mut body = slab()?;
    let fine = body.hierarchy.fine.vertex_count();
    let at = (0..fine)
        .find(|&a| body.hierarchy.fine.rest[a].distance(DVec3::new(0.0375, 0.1, 0.0375)) < 1e-9)
        .ok_or(SlabError::LoadPoint)?;
    let mut load = vec![DVec3::ZERO; fine];
    load[at] = DVec3::new(0.0, -20.0, 0.0);
    let none = vec![DVec3::ZERO; fine];
    let coarse_dofs = body.dof_count();
    let (mut adapt_s, mut adapt_max, mut rebuilds, mut peak) = (0.0, 0.0f64, 0, coarse_dofs);
    let mut peak_levels = body.active_per_level();
    let start = Instant::now();
    for k in 0..2 * steps {
        body.step(&[], Some(if k < steps { &load } else { &none }))?;
        let t = Instant::now();
        let report = body.adapt();
        let dt = t.elapsed().as_secs_f64();
        adapt_s += dt;
        adapt_max = adapt_max.max(dt);
        rebuilds += usize::from(report.changed());
        if body.dof_count() > peak {
            peak = body.dof_count();
            peak_levels = body.active_per_level();
        }
    }
    let wall = start.elapsed().as_secs_f64();
    let end_dofs = body.dof_count();
    let seconds = if quick { 0.2 } else { 1.0 };
    let mut coarse = slab()?;
    let coarse_rate = rate(&mut coarse, &load, seconds)?;
    let mut all = slab()?;
    all.refine_all();
    let all_dofs = all.dof_count();
    let all_rate = rate(&mut all, &load, seconds)?;
    Ok(json!({
        "bench": "fem_adaptive_steps_per_second",
        "lattice": "8x2x8",
        "levels": 2,
        "fine_vertices": fine,
        "steps": 2 * steps,
        "steps_per_second_adapting": (2 * steps) as f64 / wall,
        "adapt_ms_mean": 1e3 * adapt_s / (2 * steps) as f64,
        "adapt_ms_max": 1e3 * adapt_max,
        "rebuilds": rebuilds,
        "dofs_coarse": coarse_dofs,
        "dofs_peak": peak,
        "dofs_peak_per_level": peak_levels,
        "dofs_after_release": end_dofs,
        "dofs_all_detail": all_dofs,
        "steps_per_second_coarse_only": coarse_rate,
        "steps_per_second_all_detail": all_rate,
    }))
}

/// One JSON value (or one saying what failed).
pub fn fem_adaptive_steps_per_second(quick: bool) -> Vec<serde_json::Value> {
    vec![run(quick).unwrap_or_else(|e| json!({ "bench": "fem_adaptive", "error": e.to_string() }))]
}
