//! `plasticine bench --scaling`: what each part costs at four sizes, and
//! the exponent k of cost ∝ nᵏ fitted by least squares on the logarithms,
//! so a part whose cost grows faster than its size shows.
//!
//! Expected: ≈ 1 per skin step (every pass is local), per FEM step on the
//! lattice sizes where the factor or block-Jacobi CG keeps its iteration
//! count, and per exported second. A baked second costs steps × step: the
//! explicit skin's stable step shrinks with the grid spacing, so there k is
//! about 1.5 (steps ∝ √n on an m×m skin) by design, not by a defect.

use super::{BenchError, penguin_native};
use crate::bake::{BakeControl, BakeOptions, BakeOutcome, bake};
use crate::fem::Linearization;
use crate::io::CacheReader;
use crate::io::{ExportOptions, export};
use crate::samples::{limb, limb_pose};
use crate::skin::{Simulation, SolverSettings};
use serde_json::{Value, json};
use std::time::Instant;

/// The least-squares slope of ln(cost) over ln(n); `None` with fewer than
/// two sizes or a cost that is not positive.
pub fn exponent(n: &[f64], cost: &[f64]) -> Option<f64> {
    if n.len() < 2 || n.len() != cost.len() || cost.iter().chain(n).any(|&v| v <= 0.0) {
        return None;
    }
    let (x, y): (Vec<f64>, Vec<f64>) = n.iter().zip(cost).map(|(a, b)| (a.ln(), b.ln())).unzip();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (mx, my) = (mean(&x), mean(&y));
    let sxy: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx) * (a - mx)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

/// One figure line: the sizes, n, the cost at each and the fitted exponent.
fn line(what: &str, unit: &str, sizes: &[String], n: &[f64], cost: &[f64], expect: f64) -> Value {
    json!({
        "name": "scaling",
        "what": what,
        "sizes": sizes,
        "n": n,
        "cost": cost,
        "cost_unit": unit,
        "exponent": exponent(n, cost),
        "expected_exponent": expect,
        "threads": rayon::current_num_threads(),
    })
}

/// What one skin step of the penguin's playback at m×m costs (the three
/// skins summed), with the given settings.
struct SkinStepCost {
    /// Wall seconds per step.
    step: f64,
    /// Of which holding the points outside the muscles' fat layer.
    muscle_contact: f64,
    /// Points per skin.
    points: f64,
}

fn skin_step_cost(
    m: usize,
    seconds: f64,
    settings: &SolverSettings,
) -> Result<SkinStepCost, BenchError> {
    let c = penguin_native(m, m)?;
    let points = c.skins.iter().map(|s| s.m * s.n).sum::<usize>() as f64 / c.skins.len() as f64;
    let frames = (seconds * 30.0).round().max(1.0) as usize;
    let mut sim = crate::samples::playback(c, settings.clone())?;
    sim.advance_to(1.0 / 30.0, None)?; // warm-up: threads, caches
    let skins = 0..sim.character.skins.len();
    let steps = |sim: &Simulation| -> u64 { skins.clone().map(|s| sim.stats(s).steps).sum() };
    let contact =
        |sim: &Simulation| -> f64 { skins.clone().map(|s| sim.muscle_contact_seconds(s)).sum() };
    let (steps_before, contact_before) = (steps(&sim), contact(&sim));
    let start = Instant::now();
    for f in 2..=frames + 1 {
        sim.advance_to(f as f64 / 30.0, None)?;
    }
    let wall = start.elapsed().as_secs_f64();
    let taken = (steps(&sim) - steps_before).max(1) as f64;
    Ok(SkinStepCost {
        step: wall / taken,
        muscle_contact: (contact(&sim) - contact_before) / taken,
        points,
    })
}

/// The scaling lines: skin step with and without skin–skin contact (and
/// the contact's own share), the skin–muscle contact, FEM step, a baked second and an exported
/// second. `quick` uses smaller sizes and shorter runs (smoke tests).
pub fn figures(quick: bool) -> Result<Vec<Value>, BenchError> {
    let skin_sizes: &[usize] = if quick {
        &[8, 12, 16, 24]
    } else {
        &[16, 32, 64, 128]
    };
    let seconds = if quick { 0.1 } else { 0.3 };
    let skins: Vec<String> = skin_sizes.iter().map(|m| format!("{m}x{m}")).collect();
    let mut out = Vec::new();

    let without = SolverSettings {
        skin_contact: false,
        ..SolverSettings::default()
    };
    let (mut with_cost, mut without_cost, mut n) = (Vec::new(), Vec::new(), Vec::new());
    let mut muscle_contact = Vec::new();
    for &m in skin_sizes {
        let cost = skin_step_cost(m, seconds, &SolverSettings::default())?;
        with_cost.push(cost.step);
        muscle_contact.push(cost.muscle_contact);
        n.push(cost.points);
        without_cost.push(skin_step_cost(m, seconds, &without)?.step);
    }
    out.push(line(
        "skin_step",
        "s per skin step",
        &skins,
        &n,
        &with_cost,
        1.0,
    ));
    out.push(line(
        "skin_step_without_skin_contact",
        "s per skin step",
        &skins,
        &n,
        &without_cost,
        1.0,
    ));
    let contact: Vec<f64> = with_cost
        .iter()
        .zip(&without_cost)
        .map(|(a, b)| a - b)
        .collect();
    let mut l = line(
        "skin_skin_contact",
        "s per skin step",
        &skins,
        &n,
        &contact,
        1.0,
    );
    if exponent(&n, &contact).is_none() {
        l["note"] = json!("the contact's share is within the timing noise at some size: no fit");
    }
    out.push(l);
    // The skin–muscle contact, timed inside the step (it cannot be left
    // out: the skin would sink).
    out.push(line(
        "skin_muscle_contact",
        "s per skin step",
        &skins,
        &n,
        &muscle_contact,
        1.0,
    ));

    // FEM: the limb lattice, global linearization, cost per implicit step.
    let dims: &[[usize; 3]] = if quick {
        &[[3, 3, 6], [4, 4, 8], [5, 5, 10], [6, 6, 12]]
    } else {
        &[[4, 4, 8], [6, 6, 12], [8, 8, 16], [12, 12, 24]]
    };
    let (mut cost, mut n, mut lattices, mut iterations, mut fill) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for d in dims {
        let mut body = limb(*d, 0.4 / d[2] as f64, Linearization::Global);
        let h = body.settings.time_step;
        body.step(&limb_pose(&body, h)); // warm-up
        let steps = if quick { 5 } else { 30 };
        let start = Instant::now();
        let mut cg = 0;
        for k in 2..steps + 2 {
            cg += body.step(&limb_pose(&body, k as f64 * h)).iterations();
        }
        cost.push(start.elapsed().as_secs_f64() / steps as f64);
        iterations.push(cg as f64 / steps as f64);
        // The factor's fill over all regions; null where any region has none.
        let regions = body.factor_fill();
        fill.push(regions.iter().copied().collect::<Option<Vec<_>>>().map(|r| {
            let (stored, nnz) = r.iter().fold((0, 0), |(a, b), (s, z)| (a + s, b + z));
            json!({"factor_scalars": stored, "matrix_scalars": nnz, "ratio": stored as f64 / nnz as f64})
        }));
        n.push(body.vertex_count() as f64);
        lattices.push(format!("{}x{}x{}", d[0], d[1], d[2]));
    }
    let mut l = line("fem_step", "s per step", &lattices, &n, &cost, 1.0);
    // One iteration where the sparse factor preconditions; tens where its
    // fill is over budget and block-Jacobi does (the cost's knee). The
    // direct solve's fill is reported, as it grows faster than the lattice.
    l["cg_iterations_per_step"] = json!(iterations);
    l["factor_fill"] = json!(fill);
    out.push(l);

    // A baked second and its export, at the skin sizes.
    let dir = tempfile::tempdir()?;
    let (mut bake_cost, mut export_cost, mut n) = (Vec::new(), Vec::new(), Vec::new());
    for &m in skin_sizes {
        let c = penguin_native(m, m)?;
        n.push(c.skins.iter().map(|s| s.m * s.n).sum::<usize>() as f64);
        let opts = BakeOptions {
            duration: Some(seconds),
            ..BakeOptions::default()
        };
        let folder = dir.path().join(format!("{m}"));
        let start = Instant::now();
        let BakeOutcome::Finished(summary) =
            bake(c.clone(), &opts, &folder, |_, _| BakeControl::Continue)?
        else {
            unreachable!("nothing cancels this bake");
        };
        bake_cost.push(start.elapsed().as_secs_f64() / seconds);
        let mut cache = CacheReader::open(&summary.cache)?;
        let start = Instant::now();
        export(
            &c,
            &mut cache,
            &folder.join("s.glb"),
            &ExportOptions::default(),
            |_, _| {},
        )?;
        export_cost.push(start.elapsed().as_secs_f64() / seconds);
    }
    out.push(line(
        "bake_second",
        "wall s per simulated s",
        &skins,
        &n,
        &bake_cost,
        1.5,
    ));
    out.push(line(
        "export_second",
        "wall s per simulated s",
        &skins,
        &n,
        &export_cost,
        1.0,
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::exponent;

    #[test]
    fn the_fit_recovers_a_power_law_and_refuses_what_it_cannot_fit() {
        let n = [16.0, 64.0, 256.0, 1024.0];
        for k in [0.5, 1.0, 1.5, 3.0] {
            let cost: Vec<f64> = n.iter().map(|v: &f64| 2e-6 * v.powf(k)).collect();
            let fit = exponent(&n, &cost).unwrap();
            assert!((fit - k).abs() < 1e-9, "{fit} for {k}");
        }
        assert_eq!(exponent(&n[..1], &[1.0]), None);
        assert_eq!(exponent(&n, &[1.0, -1.0, 2.0, 3.0]), None);
        assert_eq!(exponent(&[5.0, 5.0], &[1.0, 2.0]), None);
    }
}
