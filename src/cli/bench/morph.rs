//! `plasticine bench --only morph`: the FEM flesh with dynamic morph targets
//! (Galoppo 2008, ch. 5) at the sizes of the thesis' Table 5.1: the penguin's
//! lattice at about 201 vertices (603 DOFs, "Herbert", 3 targets) and 1,633
//! (4,899 DOFs, "shoulder", 6 targets), each stepped through its key
//! postures with and without the targets. A step with targets blends them
//! (the pose descriptor, the RBF weights, each region's stiffness and rest
//! offsets) and solves with the blended stiffness, refactoring a region
//! when it has moved by 5 %. The reduced model of §5.1.4 is not built:
//! there are no `"reduced": true` lines.

use crate::character::{Character, FemFlesh, Flesh, MorphOffset, MorphTarget, same_pose};
use crate::fem::FleshSim;
use crate::samples;
use crate::skin::SkeletonDriver;
use serde_json::json;
use std::time::Instant;

/// The cases: name, lattice vertices asked for, targets, the thesis'
/// full-model step (ms) and our goal (ms).
const CASES: [(&str, usize, usize, f64, f64); 2] = [
    ("herbert-size", 201, 3, 29.0, 0.25),
    ("shoulder-size", 1633, 6, 333.0, 2.0),
];

/// One JSON line per case with targets, one without, and the targets'
/// overhead.
pub fn figures(quick: bool) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for (case, vertices, targets, thesis, goal) in CASES {
        let (plain, with) = match characters(vertices, targets) {
            Ok(c) => c,
            Err(error) => {
                out.push(json!({"name": "morph", "case": case, "error": error}));
                continue;
            }
        };
        let steps = if quick { 30 } else { 240 };
        let (Some((dofs, base, base_cg)), Some((_, morphed, morphed_cg))) =
            (time(&plain, steps), time(&with, steps))
        else {
            continue;
        };
        for (t, ms, cg) in [(0, base, base_cg), (targets, morphed, morphed_cg)] {
            out.push(json!({
                "name": "morph",
                "case": case,
                "dofs": dofs,
                "targets": t,
                "reduced": false,
                "modes": null,
                "step_ms": ms,
                "cg_iterations_per_step": cg,
                "thesis_step_ms": thesis,
                "goal_step_ms": goal,
            }));
        }
        out.push(json!({
            "name": "morph_overhead",
            "case": case,
            "dofs": dofs,
            "targets": targets,
            "overhead_pct": 100.0 * (morphed / base - 1.0),
            "goal_pct": 15.0,
        }));
    }
    out
}

/// The penguin with FEM flesh of about `vertices` lattice vertices, plain
/// and with `targets` targets: one at rest (the plain shape) and the others
/// at postures spread over its animation, each a belly bulge of a few millimetres and its own
/// stiffness.
fn characters(vertices: usize, targets: usize) -> Result<(Character, Character), String> {
    let mut plain = samples::bare("penguin").ok_or("no penguin sample")?;
    plain.flesh = Flesh::Fem(FemFlesh {
        target_vertices: vertices,
        ..FemFlesh::default()
    });
    let flesh =
        FleshSim::new(&plain, &plain.skeleton.rest_posture(), 0.0).map_err(|e| e.to_string())?;
    let lattice = flesh.lattice();
    let centre = lattice.rest.iter().sum::<glam::DVec3>().as_vec3() / lattice.vertex_count() as f32;
    let mut list = vec![MorphTarget {
        name: "rest".into(),
        posture: plain.skeleton.rest_posture(),
        offsets: Vec::new(),
        stiffness: 1.0,
        part_stiffness: Vec::new(),
    }];
    // Postures spread over the animation (the penguin's keys repeat).
    let driver = SkeletonDriver::Keys(plain.key_postures.clone());
    let duration = plain.motion_duration() as f64;
    let mut k = 0;
    for i in 0..64 {
        if list.len() == targets {
            break;
        }
        // Golden-ratio spaced times, skipping poses already taken (the
        // waddle passes through its rest pose).
        let posture = driver.posture_at((0.173 + 0.618 * i as f64).fract() * duration);
        if list.iter().any(|t| same_pose(&t.posture, &posture)) {
            continue;
        }
        k += 1;
        let amount = 0.001 + 0.001 * k as f32;
        let offsets = (0..lattice.vertex_count())
            .filter(|&a| lattice.bone_of_vertex[a].is_none())
            .map(|a| {
                let p = lattice.rest[a].as_vec3();
                let out = (p - centre).with_y(0.0).normalize_or_zero();
                MorphOffset {
                    at: p,
                    offset: out * amount * (-(p - centre).length_squared() / 0.02).exp(),
                }
            })
            .collect();
        list.push(MorphTarget {
            name: format!("pose {k}"),
            posture,
            offsets,
            stiffness: 0.5 + 0.5 * k as f64,
            part_stiffness: Vec::new(),
        });
    }
    if list.len() < targets {
        return Err(format!(
            "the animation has fewer than {targets} distinct poses"
        ));
    }
    let mut with = plain.clone();
    if let Some(f) = with.flesh.fem_mut() {
        f.morph_targets = list;
    }
    with.validate()
        .map_err(|e| format!("{}: {}", e.field, e.message))?;
    FleshSim::new(&with, &with.skeleton.rest_posture(), 0.0).map_err(|e| e.to_string())?;
    Ok((plain, with))
}

/// DOFs, the median wall time (ms) of a flesh step over `steps` steps of
/// the key postures' animation, and the CG iterations per step (summed
/// over the regions).
fn time(c: &Character, steps: usize) -> Option<(usize, f64, f64)> {
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let mut flesh = FleshSim::new(c, &driver.posture_at(0.0), 0.0).ok()?;
    let dofs = 3 * flesh.lattice().vertex_count();
    let h = crate::fem::FLESH_STEP;
    // Warm-up: the first factorizations.
    flesh.advance_to(c, |t| driver.posture_at(t), 10.0 * h);
    let mut times = Vec::with_capacity(steps);
    let iterations = flesh.cg_iterations;
    for _ in 0..steps {
        let end = flesh.time() + h;
        let start = Instant::now();
        flesh.advance_to(c, |t| driver.posture_at(t), end - 0.5 * h);
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let per_step = (flesh.cg_iterations - iterations) as f64 / steps as f64;
    times.sort_by(f64::total_cmp);
    Some((dofs, times[times.len() / 2], per_step))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_targets_sit_at_distinct_poses_of_the_animation() {
        let (plain, with) = super::characters(201, 3).expect("built");
        let f = with.flesh.fem().unwrap();
        assert_eq!(f.morph_targets.len(), 3);
        assert!(plain.flesh.fem().unwrap().morph_targets.is_empty());
        assert!(f.morph_targets[1..].iter().all(|t| !t.offsets.is_empty()));
    }
}
