//! Blendshape targets made and sculpted in the app (the sculpt tool, the
//! panel's new target): commands on the FEM flesh's embedded mesh.

use super::inverse::Inverse;
use crate::character::{BlendTarget, Blendshapes, Character, Posture};
use crate::tools::command::{Command, EditError, invalid, refused};
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

/// Moves target `target`'s vertices near `centre` by `offset`, each by
/// exp(−2 (d/radius)²).
pub(super) fn sculpt_blend_target(
    c: &mut Character,
    cmd: &Command,
    target: usize,
    (centre, radius): (Vec3, f32),
    offset: Vec3,
) -> Result<Inverse, EditError> {
    if !(centre.is_finite() && offset.is_finite()) {
        return Err(invalid(cmd, "centre", "centre and offset must be finite"));
    }
    if !(radius.is_finite() && radius > 0.0) {
        return Err(invalid(
            cmd,
            "radius",
            format!("must be positive, got {radius}"),
        ));
    }
    let Some(shapes) = c.flesh.fem_mut().and_then(|f| f.blendshapes.as_mut()) else {
        return Err(refused(
            cmd,
            "the character has no blendshape target to sculpt",
        ));
    };
    let count = shapes.targets.len();
    let Some(t) = shapes.targets.get_mut(target) else {
        return Err(invalid(
            cmd,
            "target",
            format!("no target {target} (there are {count})"),
        ));
    };
    let mut old = Vec::new();
    for (i, p) in t.positions.iter_mut().enumerate() {
        let d2 = p.distance_squared(centre) / (radius * radius);
        if d2 < SCULPT_CUTOFF * SCULPT_CUTOFF {
            old.push((i as u32, *p));
            *p += offset * (-2.0 * d2).exp();
        }
    }
    Ok(Inverse::BlendTarget { target, old })
}
