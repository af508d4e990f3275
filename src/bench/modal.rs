//! `plasticine bench --only modal`: the modal flesh (DyRT) of the penguin
//! with a part per joint that carries muscles, on lattices of increasing
//! size: the precompute per part (lattice, K, M, eigenmodes, transfer) and
//! the CPU cost per frame step (the skeleton's forward kinematics, every
//! part's transfer and IIR filters), and the cost of evaluating the field
//! the muscles ride (the displacement of every lattice vertex and the
//! muscles' rigid fits), which a frame pays once per skin stage it needs.

use crate::character::{Flesh, ModalFlesh};
use crate::modal::{MODAL_STEP, ModalSim};
use crate::samples;
use crate::skin::SkeletonDriver;
use serde_json::json;
use std::time::Instant;

/// One JSON line per lattice size.
pub fn figures(quick: bool) -> Vec<serde_json::Value> {
    let sizes: &[usize] = if quick { &[1200] } else { &[1200, 3000, 8000] };
    sizes.iter().filter_map(|&v| case(v, quick)).collect()
}

fn case(target_vertices: usize, quick: bool) -> Option<serde_json::Value> {
    let mut c = samples::bare("penguin")?;
    let mut modal = ModalFlesh::for_character(&c);
    modal.fem.target_vertices = target_vertices;
    c.flesh = Flesh::Modal(modal);
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let posture_at = |t: f64| driver.posture_at(t);
    let start = Instant::now();
    let mut sim = match ModalSim::new(&c, &posture_at, 0.0) {
        Ok(s) => s,
        Err(e) => return Some(json!({"name": "modal", "error": e.to_string()})),
    };
    let precompute = start.elapsed().as_secs_f64();
    let parts = sim.parts().count();
    let modes: usize = sim.parts().map(|p| p.omega.len()).sum();
    let free: usize = sim.parts().map(|p| p.free.len()).sum();
    let frames = if quick { 120 } else { 360 };
    let start = Instant::now();
    for k in 1..=frames {
        sim.advance_within(&c, posture_at, k as f64 * MODAL_STEP, None);
    }
    let per_frame = start.elapsed().as_secs_f64() / frames as f64;
    let queries = if quick { 20 } else { 100 };
    let t = sim.time();
    let posture = driver.posture_at(t);
    let start = Instant::now();
    for _ in 0..queries {
        std::hint::black_box(sim.muscle_offsets(&c, &posture, t));
    }
    let per_query = start.elapsed().as_secs_f64() / queries as f64;
    Some(json!({
        "name": "modal",
        "character": "penguin",
        "lattice_vertices": sim.lattice().vertex_count(),
        "free_vertices": free,
        "parts": parts,
        "modes": modes,
        "modes_per_part": modes as f64 / parts.max(1) as f64,
        "substeps": sim.substeps(),
        "precompute_s": precompute,
        "precompute_s_per_part": precompute / parts.max(1) as f64,
        "cpu_us_per_frame": per_frame * 1e6,
        "muscle_field_us": per_query * 1e6,
        "threads": rayon::current_num_threads(),
    }))
}
