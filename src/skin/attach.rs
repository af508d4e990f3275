//! Creating a skin and binding it to the muscles (LEMAN §6.2).
//!
//! `wrap_skin` makes a new skin between a bottom and a top joint: a closed
//! spindle around the muscles of the joints on the path between them, whose
//! rest metric is the initial one scaled by `shrink²` (and rest curvature by
//! `shrink`), so that once simulated it shrinks onto the muscle layer like the
//! paper's initially spherical skin. `global_attach` then strings a band of
//! connective tissue from every skin point to the muscle point straight below
//! it along the skin normal.

use super::body::PosedBody;
use super::elastic::{Grid, curvature_at, metric_at};
use crate::character::{
    Band, BandDefaults, Character, InvalidField, Posture, Skin, SkinMaterial, SkinPoints,
};
use glam::Vec3;

/// Joints on the path from `a` to `b` in the hierarchy (both included).
pub fn joint_path(character: &Character, a: usize, b: usize) -> Vec<usize> {
    let ancestors = |mut j: usize| {
        let mut v = vec![j];
        while let Some(p) = character.skeleton.joints[j].parent {
            v.push(p);
            j = p;
        }
        v
    };
    let (pa, pb) = (ancestors(a), ancestors(b));
    let lca = pa.iter().copied().find(|j| pb.contains(j)).unwrap_or(0);
    let mut path: Vec<usize> = pa.iter().copied().take_while(|&j| j != lca).collect();
    path.push(lca);
    path.extend(pb.iter().copied().take_while(|&j| j != lca));
    path
}

/// A new m×n skin wrapped around the muscles of the joints between `bottom` and
/// `top`, in the given posture. Rows run from bottom to top, counter-clockwise
/// about that axis (so grid normals point outward).
#[allow(clippy::too_many_arguments)]
pub fn wrap_skin(
    character: &Character,
    posture: &Posture,
    name: &str,
    bottom: usize,
    top: usize,
    m: usize,
    n: usize,
    material: &SkinMaterial,
) -> Result<Skin, InvalidField> {
    let joints = character.skeleton.joints.len();
    if bottom >= joints || top >= joints || bottom == top {
        return Err(InvalidField::new(
            "skin joints",
            format!("need two different existing joints, got {bottom} and {top}"),
        ));
    }
    if m < Skin::MIN_M || n < Skin::MIN_N || m * n > Skin::MAX_POINTS {
        return Err(InvalidField::new(
            "resolution",
            format!(
                "{m}x{n} is outside {}x{} .. {} points",
                Skin::MIN_M,
                Skin::MIN_N,
                Skin::MAX_POINTS
            ),
        ));
    }
    if !(material.shrink > 0.0 && material.shrink <= 1.0) {
        return Err(InvalidField::new(
            "material.shrink",
            format!("must lie in (0, 1], got {}", material.shrink),
        ));
    }
    let body = PosedBody::new(character, posture);
    let a: Vec3 = body.joints[bottom].translation.into();
    let b: Vec3 = body.joints[top].translation.into();
    let axis = b - a;
    if axis.length() < 1e-4 {
        return Err(InvalidField::new(
            "skin joints",
            "the bottom and top joints are at the same place",
        ));
    }
    let dir = axis.normalize();
    let (e1, e2) = dir.any_orthonormal_pair();
    let path = joint_path(character, bottom, top);
    // The muscles to wrap, as bounding spheres: (axial position, lateral offset, radius).
    let wrapped: Vec<usize> = (0..character.muscles.len())
        .filter(|&q| path.contains(&character.muscles[q].joint))
        .collect();
    let spheres: Vec<(f32, f32, f32)> = wrapped
        .iter()
        .map(|&q| &body.muscles[q])
        .map(|pm| {
            let d = pm.center - a;
            let s = d.dot(dir);
            (s, (d - s * dir).length(), pm.radius)
        })
        .collect();
    let margin = material.fat + 0.02 * axis.length();
    let (s_min, s_max, widest) = if spheres.is_empty() {
        (0.0, axis.length(), 0.1 * axis.length())
    } else {
        (
            spheres
                .iter()
                .map(|s| s.0 - s.2)
                .fold(f32::MAX, f32::min)
                .min(0.0)
                - margin,
            spheres
                .iter()
                .map(|s| s.0 + s.2)
                .fold(f32::MIN, f32::max)
                .max(axis.length())
                + margin,
            spheres.iter().map(|s| s.1 + s.2).fold(0.0, f32::max),
        )
    };
    let ring = 0.15 * widest.max(1e-3);
    let mut position = Vec::with_capacity(m * n);
    for j in 0..n {
        let s = s_min + (s_max - s_min) * j as f32 / (n - 1) as f32;
        let mut rho = spheres
            .iter()
            .map(|&(sc, d, r)| {
                let h = r * r - (s - sc) * (s - sc);
                if h > 0.0 { d + h.sqrt() } else { 0.0 }
            })
            .fold(0.0, f32::max);
        rho = if j == 0 || j + 1 == n {
            ring
        } else {
            (rho + margin).max(ring)
        };
        for i in 0..m {
            let phi = i as f32 / m as f32 * std::f32::consts::TAU;
            position.push(a + s * dir + rho * (phi.cos() * e1 + phi.sin() * e2));
        }
    }
    let grid = Grid::new(m, n);
    let count = m * n;
    let mut boundary_local = Vec::with_capacity(2 * m);
    for (row, joint) in [(0, bottom), (n - 1, top)] {
        let inv = body.joints[joint].inverse();
        for i in 0..m {
            boundary_local.push(inv.transform_point3(position[grid.idx(i, row)]));
        }
    }
    let s = material.shrink;
    let rest_metric = (0..count)
        .map(|k| metric_at(&grid, &position, k % m, k / m).map(|g| g * s * s))
        .collect();
    let rest_curvature = (0..count)
        .map(|k| curvature_at(&grid, &position, k % m, k / m).map(|c| c * s))
        .collect();
    let eta = material.stretch;
    Ok(Skin {
        name: name.to_string(),
        bottom_joint: bottom,
        top_joint: top,
        m,
        n,
        boundary_local,
        muscles: wrapped,
        points: SkinPoints {
            position,
            velocity: vec![Vec3::ZERO; count],
            mass_density: vec![material.mass_density; count],
            damping_density: vec![material.damping_density; count],
            rest_metric,
            rest_curvature,
            stretch: vec![[eta, 0.5 * eta, eta]; count],
            bend: vec![material.bend; count],
            fat: vec![material.fat; count],
            band: vec![None; count],
        },
    })
}

/// The global "attach" command (§6.2): binds every interior skin point to the
/// muscle point where the inward normal first meets the muscle layer (or, if the
/// normal misses every muscle, the nearest muscle surface point), with the
/// current distance as rest length. Returns how many points were bound.
pub fn global_attach(
    character: &mut Character,
    skin: usize,
    posture: &Posture,
    band: BandDefaults,
) -> usize {
    let mut body = PosedBody::new(character, posture);
    let s = &character.skins[skin];
    // Only the muscles this skin wraps take its bands; keep their indices.
    let keep: Vec<usize> = s.muscles.clone();
    body.muscles = keep.iter().map(|&q| body.muscles[q].clone()).collect();
    if body.muscles.is_empty() {
        return 0;
    }
    let grid = Grid::of(s);
    let r = &s.points.position;
    let mut normals = vec![Vec3::ZERO; r.len()];
    grid.normals(r, &mut normals);
    let reach = body
        .muscles
        .iter()
        .map(|m| m.center.distance(r[0]) + m.radius)
        .fold(0.0, f32::max)
        * 2.0
        + 1.0;
    let mut bands = vec![None; r.len()];
    let mut bound = 0;
    for j in 1..grid.n - 1 {
        for i in 0..grid.m {
            let k = grid.idx(i, j);
            let hit = body
                .ray_cast(r[k], -normals[k], reach)
                .map(|(_, q, p)| (q, p))
                .or_else(|| {
                    let (_, q) = body.distance_to_muscles(r[k])?;
                    let mu = &body.muscles[q];
                    let sp = mu
                        .shape
                        .project_to_surface(mu.to_local.transform_point3(r[k]));
                    Some((q, mu.to_world.transform_point3(sp.point)))
                });
            if let Some((q, p)) = hit {
                bands[k] = Some(Band {
                    muscle: keep[q],
                    anchor: body.muscles[q].to_local.transform_point3(p),
                    ks: band.ks,
                    kd: band.kd,
                    rest_length: r[k].distance(p),
                });
                bound += 1;
            }
        }
    }
    character.skins[skin].points.band = bands;
    bound
}
