//! The skin's material rows: a parameter's mean over a region and the
//! commands that change it point by point.

use super::rows::{Param, Scope};
use crate::character::Character;
use crate::tools::command::Command;

/// The mean of a material parameter over `region` (every point when
/// `None`); `None` when nothing has that parameter (no skin, no band).
pub(super) fn mean_value(
    c: &Character,
    param: Param,
    region: Option<&[(usize, usize)]>,
) -> Option<f32> {
    let value = |s: usize, k: usize| -> Option<f32> {
        let p = &c.skins.get(s)?.points;
        match param {
            Param::SkinStretch => p.stretch.get(k).map(|e| e[0]),
            Param::SkinBend => p.bend.get(k).copied(),
            Param::SkinDamping => p.damping_density.get(k).copied(),
            Param::SkinMass => p.mass_density.get(k).copied(),
            Param::BandStiffness => p.band.get(k)?.as_ref().map(|b| b.ks),
            _ => None,
        }
    };
    let (mut sum, mut n) = (0.0f64, 0usize);
    let mut add = |s, k| {
        if let Some(v) = value(s, k) {
            sum += v as f64;
            n += 1;
        }
    };
    match region {
        Some(r) => r.iter().for_each(|&(s, k)| add(s, k)),
        None => {
            for (s, skin) in c.skins.iter().enumerate() {
                (0..skin.point_count()).for_each(|k| add(s, k));
            }
        }
    }
    (n > 0).then(|| (sum / n as f64) as f32)
}

/// The commands that step each point of `region` from its own value `v`
/// to `new_value(v)`, so a region painted stiffer stays stiffer than the
/// rest: per skin, one `SetSkinMaterial` per distinct value (the whole skin
/// at once when it is uniform and the scope is global, so the command stays
/// small).
pub(super) fn material_commands(
    c: &Character,
    param: Param,
    new_value: impl Fn(f32) -> f32,
    region: &[(usize, usize)],
    scope: Scope,
) -> Vec<Command> {
    let mut out = Vec::new();
    for s in 0..c.skins.len() {
        // Points by their current value (bit-exact), in first-seen order.
        let mut groups: Vec<(f32, Vec<usize>)> = Vec::new();
        for &(_, k) in region.iter().filter(|(rs, _)| *rs == s) {
            let p = &c.skins[s].points;
            let v = match param {
                Param::SkinStretch => p.stretch[k][0],
                Param::SkinBend => p.bend[k],
                Param::SkinDamping => p.damping_density[k],
                Param::SkinMass => p.mass_density[k],
                _ => match &p.band[k] {
                    Some(b) => b.ks,
                    None => continue, // no band: no connective tissue to change
                },
            };
            match groups.iter_mut().find(|(g, _)| g.to_bits() == v.to_bits()) {
                Some((_, points)) => points.push(k),
                None => groups.push((v, vec![k])),
            }
        }
        let whole_skin = scope == Scope::Global
            && groups.len() == 1
            && groups[0].1.len() == c.skins[s].point_count();
        for (v, points) in groups {
            let value = Some(new_value(v));
            let none = None;
            let (stretch, bend, damping, mass, band_stiffness) = match param {
                Param::SkinStretch => (value, none, none, none, none),
                Param::SkinBend => (none, value, none, none, none),
                Param::SkinDamping => (none, none, value, none, none),
                Param::SkinMass => (none, none, none, value, none),
                _ => (none, none, none, none, value),
            };
            out.push(Command::SetSkinMaterial {
                skin: s,
                region: (!whole_skin).then_some(points),
                stretch,
                damping,
                mass,
                bend,
                band_stiffness,
            });
        }
    }
    out
}
