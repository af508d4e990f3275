//! Blendshape targets made and sculpted in the app (the sculpt tool, the
//! panel's new target): commands on the FEM flesh's embedded mesh.

use super::inverse::Inverse;
use crate::character::{BlendTarget, Blendshapes, Character, Posture};
use crate::tools::command::{Command, EditError, SculptBrush, invalid, refused};
use glam::Vec3;

/// Beyond this many radii a sculpt moves nothing (the Gaussian is below
/// e⁻⁸ there).
const SCULPT_CUTOFF: f32 = 2.0;

/// A new target, a copy of the embedded mesh; the postures that weight
/// the targets get a 0 for it.
pub(super) fn add_blend_target(
    c: &mut Character,
    posture: &mut Posture,
    cmd: &Command,
    name: &str,
) -> Result<Inverse, EditError> {
    let Some(fem) = c.flesh.fem_mut() else {
        return Err(refused(
            cmd,
            "blendshapes reshape the embedded mesh of FEM flesh: import a mesh with \
             `plasticine fem-import` first",
        ));
    };
    let Some(mesh) = &fem.embedded_mesh else {
        return Err(refused(
            cmd,
            "this FEM flesh has no embedded mesh for a blendshape to reshape \
             (import one with `plasticine fem-import`)",
        ));
    };
    if name.trim().is_empty() {
        return Err(invalid(cmd, "name", "must not be empty"));
    }
    if let Some(b) = &fem.blendshapes
        && b.target(name).is_some()
    {
        return Err(invalid(cmd, "name", format!("a target is named '{name}'")));
    }
    let positions = mesh.positions.clone();
    let created = fem.blendshapes.is_none();
    let shapes = fem.blendshapes.get_or_insert_with(|| {
        Box::new(Blendshapes {
            targets: Vec::new(),
            boundary: Default::default(),
            interior: true,
            constants: Default::default(),
            linear: false,
        })
    });
    shapes.targets.push(BlendTarget {
        name: name.to_string(),
        positions,
    });
    let weighted = |p: &mut Posture| {
        if !p.blend.is_empty() {
            p.blend.push(0.0);
        }
    };
    weighted(posture);
    c.key_postures
        .iter_mut()
        .for_each(|k| weighted(&mut k.posture));
    Ok(Inverse::AddBlendTarget { created })
}

/// Takes the last target back (and the blendshapes when they were made
/// with it), with the postures' weight for it.
pub(super) fn remove_blend_target(c: &mut Character, posture: &mut Posture, created: bool) {
    let Some(fem) = c.flesh.fem_mut() else {
        return;
    };
    let Some(shapes) = fem.blendshapes.as_mut() else {
        return;
    };
    shapes.targets.pop();
    let n = shapes.targets.len();
    if created {
        fem.blendshapes = None;
    }
    let trim = |p: &mut Posture| {
        p.blend.truncate(n);
        if n == 0 {
            p.blend.clear();
        }
    };
    trim(posture);
    c.key_postures.iter_mut().for_each(|k| trim(&mut k.posture));
}

/// Reshapes target `target`'s vertices near `centre` with `brush`, each by
/// the falloff exp(−2 (d/radius)²) of its distance d from the centre.
pub(super) fn sculpt_blend_target(
    c: &mut Character,
    cmd: &Command,
    target: usize,
    (centre, radius): (Vec3, f32),
    brush: SculptBrush,
) -> Result<Inverse, EditError> {
    if !centre.is_finite() {
        return Err(invalid(cmd, "centre", "must be finite"));
    }
    if !(radius.is_finite() && radius > 0.0) {
        return Err(invalid(
            cmd,
            "radius",
            format!("must be positive, got {radius}"),
        ));
    }
    match brush {
        SculptBrush::Grab { offset } if !offset.is_finite() => {
            return Err(invalid(cmd, "brush.offset", "must be finite"));
        }
        SculptBrush::Smooth { strength } if !(0.0..=1.0).contains(&strength) => {
            return Err(invalid(
                cmd,
                "brush.strength",
                format!("must lie in [0, 1], got {strength}"),
            ));
        }
        SculptBrush::Inflate { distance }
            if !(distance.is_finite() && distance.abs() <= radius) =>
        {
            return Err(invalid(
                cmd,
                "brush.distance",
                format!("must be finite and at most the radius ({radius} m), got {distance}"),
            ));
        }
        _ => {}
    }
    let Some(fem) = c.flesh.fem_mut() else {
        return Err(refused(cmd, NOTHING_TO_SCULPT));
    };
    let (Some(mesh), Some(shapes)) = (&fem.embedded_mesh, fem.blendshapes.as_mut()) else {
        return Err(refused(cmd, NOTHING_TO_SCULPT));
    };
    let count = shapes.targets.len();
    let Some(t) = shapes.targets.get_mut(target) else {
        return Err(invalid(
            cmd,
            "target",
            format!("no target {target} (there are {count})"),
        ));
    };
    // The touched vertices and their falloff.
    let touched: Vec<(usize, f32)> = t
        .positions
        .iter()
        .enumerate()
        .filter_map(|(i, p)| {
            let d2 = p.distance_squared(centre) / (radius * radius);
            (d2 < SCULPT_CUTOFF * SCULPT_CUTOFF).then(|| (i, (-2.0 * d2).exp()))
        })
        .collect();
    let moves: Vec<Vec3> = match brush {
        SculptBrush::Grab { offset } => touched.iter().map(|&(_, w)| offset * w).collect(),
        SculptBrush::Smooth { strength } => {
            let mean = neighbour_means(&t.positions, &mesh.triangles, &touched);
            touched
                .iter()
                .zip(&mean)
                .map(|(&(i, w), m)| m.map_or(Vec3::ZERO, |m| (m - t.positions[i]) * strength * w))
                .collect()
        }
        SculptBrush::Inflate { distance } => {
            let normal = vertex_normals(&t.positions, &mesh.triangles, &touched);
            touched
                .iter()
                .zip(&normal)
                .map(|(&(_, w), n)| *n * distance * w)
                .collect()
        }
    };
    let mut old = Vec::with_capacity(touched.len());
    for (&(i, _), m) in touched.iter().zip(&moves) {
        old.push((i as u32, t.positions[i]));
        t.positions[i] += *m;
    }
    Ok(Inverse::BlendTarget { target, old })
}

const NOTHING_TO_SCULPT: &str = "the character has no blendshape target to sculpt";

/// Per touched vertex (in `touched`'s order), the mean of its mesh
/// neighbours' positions (`None` for a vertex on no triangle). Read from
/// the positions before the stroke, so the result does not depend on the
/// vertices' order.
fn neighbour_means(
    positions: &[Vec3],
    triangles: &[[u32; 3]],
    touched: &[(usize, f32)],
) -> Vec<Option<Vec3>> {
    let slot = slots(positions.len(), touched);
    // Each edge is in two triangles of a closed mesh: counted twice on both
    // sides, which leaves the mean unchanged.
    let mut sum = vec![(Vec3::ZERO, 0u32); touched.len()];
    for t in triangles {
        for e in 0..3 {
            let (a, b) = (t[e] as usize, t[(e + 1) % 3] as usize);
            for (v, w) in [(a, b), (b, a)] {
                if let Some(s) = sum.get_mut(slot[v]) {
                    s.0 += positions[w];
                    s.1 += 1;
                }
            }
        }
    }
    sum.iter()
        .map(|&(p, n)| (n > 0).then(|| p / n as f32))
        .collect()
}

/// Per touched vertex (in `touched`'s order), its area-weighted unit
/// normal (zero on no triangle or degenerate ones only).
fn vertex_normals(
    positions: &[Vec3],
    triangles: &[[u32; 3]],
    touched: &[(usize, f32)],
) -> Vec<Vec3> {
    let slot = slots(positions.len(), touched);
    let mut normal = vec![Vec3::ZERO; touched.len()];
    for t in triangles {
        let [a, b, c] = t.map(|i| positions[i as usize]);
        let face = (b - a).cross(c - a);
        for &v in t {
            if let Some(n) = normal.get_mut(slot[v as usize]) {
                *n += face;
            }
        }
    }
    normal.iter().map(|n| n.normalize_or_zero()).collect()
}

/// Per vertex of a `vertices`-vertex mesh, its index in `touched`
/// (`usize::MAX` where untouched).
fn slots(vertices: usize, touched: &[(usize, f32)]) -> Vec<usize> {
    let mut slot = vec![usize::MAX; vertices];
    for (k, &(i, _)) in touched.iter().enumerate() {
        slot[i] = k;
    }
    slot
}
