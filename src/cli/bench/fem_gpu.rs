//! `plasticine bench` figures of the GPU back end (`crate::fem::gpu`): the
//! demonstration limb stepped by [`GpuFemBody`] at the CPU bench's sizes and
//! at about 50,000 vertices (the speed goal: ≥ 90 steps/s with CG at 1e-4
//! relative residual on a real GPU). On lavapipe (a CPU rasteriser) the
//! numbers measure correctness plumbing, not GPU speed.

use crate::fem::Linearization;
use crate::fem_gpu::GpuFemBody;
use crate::gpu::GpuContext;
use crate::samples::{limb, limb_pose};
use serde_json::json;
use std::time::Instant;

/// One JSON value per lattice size and linearization (or one saying why
/// there is none).
pub fn fem_gpu_steps_per_second(quick: bool) -> Vec<serde_json::Value> {
    let ctx = match GpuContext::headless() {
        Ok(c) => c,
        Err(e) => return vec![json!({ "bench": "fem_gpu", "skipped": e.to_string() })],
    };
    let adapter = ctx.summary().to_string();
    let seconds = if quick { 0.3 } else { 2.0 };
    let mut sizes = vec![[4, 4, 8], [8, 8, 16], [16, 16, 32]];
    if !quick {
        // 25 × 25 × 81 = 50,625 vertices.
        sizes.push([24, 24, 80]);
    }
    let mut out = Vec::new();
    for dims in sizes {
        for lin in [
            Linearization::Global,
            Linearization::BlendedLocal { blend_width: 0.1 },
        ] {
            let mut body = limb(dims, 0.4 / dims[2] as f64, lin);
            body.settings.cg_tolerance = 1e-4;
            let h = body.settings.time_step;
            let vertices = body.vertex_count();
            let regions = body.regions.len();
            let upload = Instant::now();
            let mut gpu = GpuFemBody::new(&ctx, body);
            let upload_ms = upload.elapsed().as_secs_f64() * 1e3;
            let (mut steps, mut iterations, mut converged) = (0usize, 0usize, 0usize);
            let start = Instant::now();
            let big = vertices > 20_000;
            while start.elapsed().as_secs_f64() < seconds || steps < if big { 1 } else { 3 } {
                steps += 1;
                let bones = limb_pose(&gpu.body, steps as f64 * h);
                match gpu.step(&bones) {
                    Ok(r) => {
                        iterations += r.iterations();
                        converged += usize::from(r.converged());
                    }
                    Err(e) => {
                        out.push(json!({ "bench": "fem_gpu", "error": e.to_string() }));
                        return out;
                    }
                }
            }
            let rate = steps as f64 / start.elapsed().as_secs_f64();
            out.push(json!({
                "bench": "fem_gpu",
                "adapter": adapter,
                "lattice": format!("{}x{}x{}", dims[0], dims[1], dims[2]),
                "vertices": vertices,
                "linearization": if regions > 1 { "blended_local" } else { "global" },
                "regions": regions,
                "cg_tolerance": 1e-4,
                "steps": steps,
                "steps_per_second": rate,
                "ms_per_step": 1e3 / rate,
                "cg_iterations_per_step": iterations as f64 / steps as f64,
                "converged_steps": converged,
                "runs_at_90hz": rate >= 90.0,
                "upload_ms": upload_ms,
                "goal": "50k vertices at >= 90 steps/s on a real GPU",
            }));
        }
    }
    out
}
