//! Brush strokes: fat added or taken away (liposuction), muscle colour
//! painted, and the FEM flesh's region weights painted.

use super::inverse::Inverse;
use crate::character::{Character, DEFAULT_MUSCLE_COLOR, DEFAULT_SKIN_COLOR, Flesh, WeightStroke};
use crate::tools::command::{
    Command, EditError, FAT_STROKE_CUTOFF, check_muscle, check_point, check_stroke_bones, invalid,
    refused,
};
use glam::Vec3;

// Fat and liposuction.

/// Checks a brush stroke's skin point and radius (positive metres).
fn check_brush(
    c: &Character,
    cmd: &Command,
    skin: usize,
    center_point: usize,
    radius: f32,
) -> Result<(), EditError> {
    check_point(c, skin, center_point)?;
    if !(radius.is_finite() && radius > 0.0) {
        return Err(invalid(
            cmd,
            "radius",
            format!("must be positive (metres), got {radius}"),
        ));
    }
    Ok(())
}

/// A brush's weight at a point: the Gaussian `exp(−d²/(2 radius²))` of its
/// distance from the stroke's centre point, `None` beyond
/// [`FAT_STROKE_CUTOFF`] radii.
fn brush_falloff(
    positions: &[Vec3],
    center_point: usize,
    radius: f32,
) -> impl Fn(Vec3) -> Option<f32> {
    let centre = positions[center_point];
    let reach2 = (FAT_STROKE_CUTOFF * radius).powi(2);
    let inv_two_r2 = 1.0 / (2.0 * radius * radius);
    move |p| {
        let d2 = p.distance_squared(centre);
        (d2 <= reach2).then(|| (-d2 * inv_two_r2).exp())
    }
}

/// Applies [`Command::FatStroke`]: adds `amount` of fat (negative: takes it
/// away) with a Gaussian falloff of `radius` around `center_point` of `skin`.
pub(super) fn fat_stroke(
    c: &mut Character,
    cmd: &Command,
    skin: usize,
    center_point: usize,
    radius: f32,
    amount: f32,
) -> Result<Inverse, EditError> {
    check_brush(c, cmd, skin, center_point, radius)?;
    if !amount.is_finite() {
        return Err(invalid(
            cmd,
            "amount",
            format!("must be finite, got {amount}"),
        ));
    }
    let pts = &mut c.skins[skin].points;
    let falloff = brush_falloff(&pts.position, center_point, radius);
    let mut old = Vec::new();
    for (k, (p, fat)) in pts.position.iter().zip(&mut pts.fat).enumerate() {
        let Some(w) = falloff(*p) else {
            continue;
        };
        let new = (*fat + amount * w).max(0.0);
        if new != *fat {
            old.push((k as u32, *fat));
            *fat = new;
        }
    }
    Ok(Inverse::Fat { skin, old })
}

/// Applies [`Command::PaintStroke`]: blends the colours around
/// `center_point` of `skin` towards `color` by `strength` with a Gaussian
/// falloff of `radius`.
pub(super) fn paint_stroke(
    c: &mut Character,
    cmd: &Command,
    skin: usize,
    center_point: usize,
    radius: f32,
    (color, strength): ([f32; 3], f32),
) -> Result<Inverse, EditError> {
    check_brush(c, cmd, skin, center_point, radius)?;
    check_paint(cmd, color, strength)?;
    let pts = &mut c.skins[skin].points;
    let unpainted = pts.color.is_empty();
    if unpainted {
        pts.color = vec![DEFAULT_SKIN_COLOR; pts.position.len()];
    }
    let falloff = brush_falloff(&pts.position, center_point, radius);
    let target = Vec3::from_array(color);
    let mut old = Vec::new();
    for (k, (p, c)) in pts.position.iter().zip(&mut pts.color).enumerate() {
        let Some(w) = falloff(*p) else {
            continue;
        };
        let w = strength * w;
        let new = Vec3::from_array(*c)
            .lerp(target, w)
            .clamp(Vec3::ZERO, Vec3::ONE)
            .to_array();
        if new != *c {
            old.push((k as u32, *c));
            *c = new;
        }
    }
    Ok(Inverse::Color {
        skin,
        old,
        unpainted,
    })
}

/// Checks a paint command's colour (linear RGB in [0, 1]) and strength.
fn check_paint(cmd: &Command, color: [f32; 3], strength: f32) -> Result<(), EditError> {
    if !color.iter().all(|x| (0.0..=1.0).contains(x)) {
        return Err(invalid(
            cmd,
            "color",
            format!("each channel must be linear RGB from 0 to 1, got {color:?}"),
        ));
    }
    if !(0.0..=1.0).contains(&strength) {
        return Err(invalid(
            cmd,
            "strength",
            format!("must be from 0 to 1, got {strength}"),
        ));
    }
    Ok(())
}

/// Applies [`Command::PaintMuscle`]: blends the muscle's colour towards
/// `color` by `strength`.
pub(super) fn paint_muscle(
    c: &mut Character,
    cmd: &Command,
    muscle: usize,
    (color, strength): ([f32; 3], f32),
) -> Result<Inverse, EditError> {
    check_muscle(c, muscle)?;
    check_paint(cmd, color, strength)?;
    let m = &mut c.muscles[muscle];
    let old = m.color;
    let from = Vec3::from_array(old.unwrap_or(DEFAULT_MUSCLE_COLOR));
    m.color = Some(
        from.lerp(Vec3::from_array(color), strength)
            .clamp(Vec3::ZERO, Vec3::ONE)
            .to_array(),
    );
    Ok(Inverse::MuscleColor { muscle, old })
}

/// Applies [`Command::PaintWeights`]: appends `stroke` to the FEM flesh's
/// region-weight strokes.
pub(super) fn paint_weights(
    c: &mut Character,
    cmd: &Command,
    stroke: &WeightStroke,
) -> Result<Inverse, EditError> {
    check_stroke_bones(cmd, c, std::slice::from_ref(stroke))?;
    let Flesh::Fem(f) = &mut c.flesh else {
        return Err(refused(
            cmd,
            "the flesh is kinematic: switch it to FEM to paint its region weights",
        ));
    };
    let mut painted = f.clone();
    painted.weight_strokes.push(stroke.clone());
    painted
        .validate()
        .map_err(|e| invalid(cmd, &e.field, e.message))?;
    f.weight_strokes.push(stroke.clone());
    Ok(Inverse::WeightStroke)
}
