//! Creating a skin and binding it to the muscles (LEMAN §6.2).
//!
//! `wrap_skin` makes a new skin between a bottom and a top joint: a closed
//! spindle around the muscles of the joints on the path between them, whose
//! rest metric is the initial one scaled by `shrink²` (and rest curvature by
//! `shrink`), so that once simulated it shrinks onto the muscle layer like the
//! paper's initially spherical skin. `global_attach` then strings a band of
//! connective tissue from every skin point to the muscle point straight below
//! it along the skin normal.

use super::elastic::{Grid, rest_curvature_of, rest_metric_of};
use super::layout::Layout;
use super::{Simulation, SkeletonDriver, SolverSettings};
use crate::character::{
    Band, BandDefaults, Character, InvalidField, Posture, Skin, SkinMaterial, SkinPoints,
};
use crate::kinematics::PosedBody;
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

/// How strongly the skin shrinks while it is wrapped: its rest lengths
/// during the wrap are this fraction of the start surface's, small enough
/// that the start (at most a few times the muscles' girth) ends stretched on
/// every muscle, never slack.
const WRAP_SHRINK: f32 = 0.4;
/// Global damping during the wrap (1/s): the shrink is quasi-static.
const WRAP_DAMPING: f32 = 25.0;
/// The wrap has settled when no point moves faster than this many skin
/// lengths per second.
const WRAP_SETTLED_SPEED: f32 = 0.01;
/// Radius of the boundary rings, relative to the start surface's.
const RING: f32 = 0.25;
/// The resolution the shrink is solved at (at most).
const WRAP_RESOLUTION: usize = 64;
/// The resolution of the first wrap, which measures the columns' layout.
const LAYOUT_RESOLUTION: usize = 24;
/// Simulated seconds the wrap may take at most.
const WRAP_MAX_TIME: f64 = 6.0;

/// A new m×n skin wrapped around the muscles of the joints between `bottom` and
/// `top`, in the given posture. Rows run from bottom to top, counter-clockwise
/// about that axis (so grid normals point outward).
///
/// LEMAN §6.2: the skin starts as a smooth closed surface around the muscles
/// (here a spheroid-like tube fitted to their sampled surfaces and fat, with
/// rows evenly spaced along its meridians) and shrinks onto them. The shrink
/// is solved here, quasi-statically, until the skin has settled; the wrapped
/// shape is then its rest state: rest curvature as wrapped, rest metric the
/// wrapped metric times `shrink²`, so that the skin sits on the muscles in a
/// uniform tension 1/shrink (a taut membrane). Any other rest state leaves
/// the skin slack somewhere (a flat muscle's girth is less than its bounding
/// circle's), and slack skin crumples.
#[allow(
    clippy::too_many_arguments,
    reason = "a wrap is asked for by its joints, resolution and material, as the skin tool takes them"
)]
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
    // A first, coarse wrap measures where the grid must turn; the second
    // starts with its columns spread by it (see `layout`).
    let start = |m, n, layout| {
        start_skin(
            character, posture, name, bottom, top, m, n, material, layout,
        )
    };
    let (mut first, rows) = start(LAYOUT_RESOLUTION, LAYOUT_RESOLUTION, None)?;
    shrink_wrap(character, posture, &mut first)?;
    let layout = Layout::measure(&Grid::of(&first), &first.points.position, &rows);
    // The shrink is solved on a coarse grid (its cost grows with the cube of
    // the resolution) and carried to m×n by cubic resampling; what the
    // coarse grid cannot hold the simulation settles at full resolution.
    let (mc, nc) = (m.min(WRAP_RESOLUTION), n.min(WRAP_RESOLUTION));
    let (mut skin, _) = start(mc, nc, Some(&layout))?;
    shrink_wrap(character, posture, &mut skin)?;
    if (mc, nc) != (m, n) {
        skin = crate::character::resample(&skin, m, n)
            .map_err(|e| InvalidField::new("resolution", e.to_string()))?;
    }
    rest_in_place(&mut skin, material.shrink);
    skin.points.velocity.fill(Vec3::ZERO);
    Ok(skin)
}

/// Makes the skin's current shape its rest state under a prestress
/// `shrink`: rest metric the current metric times shrink², rest curvature the
/// current curvature.
pub fn rest_in_place(skin: &mut Skin, shrink: f32) {
    let grid = Grid::of(skin);
    let s2 = shrink * shrink;
    skin.points.rest_metric = rest_metric_of(&grid, &skin.points.position)
        .into_iter()
        .map(|g| g.map(|x| x * s2))
        .collect();
    skin.points.rest_curvature =
        rest_curvature_of(&grid, &skin.points.position, &skin.points.rest_metric);
}

/// The skin before it shrinks: a smooth tube around the muscles (see
/// [`wrap_skin`]), rest lengths [`WRAP_SHRINK`] of its own, with its rows
/// graded towards the poles and its columns at equal angles, or where
/// `layout` puts them; and its rows' meridian parameters.
#[allow(
    clippy::too_many_arguments,
    reason = "a wrap is asked for by its joints, resolution and material, as the skin tool takes them"
)]
fn start_skin(
    character: &Character,
    posture: &Posture,
    name: &str,
    bottom: usize,
    top: usize,
    m: usize,
    n: usize,
    material: &SkinMaterial,
    layout: Option<&Layout>,
) -> Result<(Skin, Vec<f32>), InvalidField> {
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
    let wrapped: Vec<usize> = (0..character.muscles.len())
        .filter(|&q| path.contains(&character.muscles[q].joint))
        .collect();
    // The muscles' surfaces pushed out by the fat, as (axial, radial) pairs.
    // Where the skin will rest: the fat's depth off the muscles.
    let margin = material.fat;
    let mut samples: Vec<(f32, f32)> = Vec::new();
    for &q in &wrapped {
        let pm = &body.muscles[q];
        let mesh = pm.shape.tessellate(24, 12);
        for (p, nrm) in mesh.positions.iter().zip(&mesh.normals) {
            let w = pm.to_world.transform_point3(*p)
                + pm.to_world.transform_vector3(*nrm).normalize_or_zero() * margin;
            let d = w - a;
            let s = d.dot(dir);
            samples.push((s, (d - s * dir).length()));
        }
    }
    let len = axis.length();
    let (s_min, s_max) = samples
        .iter()
        .fold((0.0f32, len), |(lo, hi), &(s, _)| (lo.min(s), hi.max(s)));
    // The rings just past the ends of the fat-covered muscles, where the skin
    // will rest: it closes over them like a pole instead of hanging from a
    // ring in the air (a ring a few millimetres out leaves a concave neck
    // that snaps through when the limb swings).
    let gap = 0.1 * material.fat + 1e-3 * len;
    let (s_min, s_max) = (s_min - gap, s_max + gap);
    let (mid, half) = (0.5 * (s_min + s_max), 0.5 * (s_max - s_min));
    // The smallest spheroid (s − mid)²/half² + ρ²/R² ≤ 1 holding every sample.
    let radius = samples
        .iter()
        .map(|&(s, rho)| {
            let t = ((s - mid) / half).clamp(-0.999, 0.999);
            rho / (1.0 - t * t).sqrt()
        })
        .fold(0.1 * len, f32::max)
        // Room to shrink onto them from outside.
        * 1.1;
    let ring = RING * radius;
    let meridian = |v: f32| (mid - half * v.cos(), ring + (radius - ring) * v.sin());
    let rows = pole_graded_rows(n, meridian, radius);
    let mut position = Vec::with_capacity(m * n);
    for &v in &rows {
        let (s, rho) = meridian(v);
        let angles = match layout {
            Some(l) => l.angles(v, m),
            None => (0..m)
                .map(|i| i as f32 / m as f32 * std::f32::consts::TAU)
                .collect(),
        };
        for phi in angles {
            position.push(a + s * dir + rho * (phi.cos() * e1 + phi.sin() * e2));
        }
    }
    let grid = Grid::new(m, n);
    let mut boundary_local = Vec::with_capacity(2 * m);
    for (row, joint) in [(0, bottom), (n - 1, top)] {
        let inv = body.joints[joint].inverse();
        for i in 0..m {
            boundary_local.push(inv.transform_point3(position[grid.idx(i, row)]));
        }
    }
    let s2 = WRAP_SHRINK * WRAP_SHRINK;
    let rest_metric: Vec<[f32; 3]> = rest_metric_of(&grid, &position)
        .into_iter()
        .map(|g| g.map(|x| x * s2))
        .collect();
    let rest_curvature = rest_curvature_of(&grid, &position, &rest_metric);
    let skin = Skin {
        name: name.to_string(),
        bottom_joint: bottom,
        top_joint: top,
        m,
        n,
        boundary_local,
        muscles: wrapped,
        points: SkinPoints::uniform(position, rest_metric, rest_curvature, material),
    };
    Ok((skin, rows))
}

/// How much the rows gather towards the poles: row spacing along the
/// meridian ∝ ρ + `POLE_GRADING·R`. 0 would make every cell square (a Mercator
/// grid, which spends most rows on the poles); ∞ spaces rows evenly along
/// the meridian, which leaves thin wedge cells at the rings (10:1 at 64×64),
/// the stiffest and most easily crumpled cells of the skin.
const POLE_GRADING: f32 = 0.3;

/// The meridian parameter v ∈ [0, π] of each of `n` rows along a meridian
/// `v ↦ (axial, radial)`, graded towards the poles (see [`POLE_GRADING`]).
fn pole_graded_rows(n: usize, meridian: impl Fn(f32) -> (f32, f32), radius: f32) -> Vec<f32> {
    const SAMPLES: usize = 2048;
    let v_at = |q: usize| std::f32::consts::PI * q as f32 / SAMPLES as f32;
    let mut cumulative = vec![0.0f32; SAMPLES + 1];
    let mut last = meridian(0.0);
    for q in 1..=SAMPLES {
        let here = meridian(v_at(q));
        let arc = ((here.0 - last.0).powi(2) + (here.1 - last.1).powi(2)).sqrt();
        let rho = 0.5 * (here.1 + last.1);
        cumulative[q] = cumulative[q - 1] + arc / (rho + POLE_GRADING * radius);
        last = here;
    }
    let total = cumulative[SAMPLES];
    let mut q = 0;
    (0..n)
        .map(|j| {
            let target = total * j as f32 / (n - 1) as f32;
            while q + 1 < SAMPLES && cumulative[q + 1] < target {
                q += 1;
            }
            let span = (cumulative[q + 1] - cumulative[q]).max(f32::MIN_POSITIVE);
            let f = ((target - cumulative[q]) / span).clamp(0.0, 1.0);
            if j + 1 == n {
                std::f32::consts::PI
            } else {
                v_at(q) + f * (v_at(q + 1) - v_at(q))
            }
        })
        .collect()
}

/// Lets `skin` shrink onto its muscles in `posture` without gravity, heavily
/// damped, until it has settled (or [`WRAP_MAX_TIME`] has passed).
fn shrink_wrap(
    character: &Character,
    posture: &Posture,
    skin: &mut Skin,
) -> Result<(), InvalidField> {
    let mut c = Character {
        skins: vec![std::mem::replace(skin, placeholder())],
        flesh: Default::default(),
        key_postures: Vec::new(),
        ..character.clone()
    };
    c.environment.gravity = Vec3::ZERO;
    c.environment.global_damping = WRAP_DAMPING;
    let size = {
        let p = &c.skins[0].points.position;
        let (lo, hi) = p.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), x| {
            (lo.min(*x), hi.max(*x))
        });
        (hi - lo).length()
    };
    let settled = WRAP_SETTLED_SPEED * size;
    // The shrink starts fast (every edge at 1/WRAP_SHRINK of its rest
    // length): no speed limit for divergence, only NaN.
    // Contact sticks while wrapping: a point keeps where it first lands on
    // a muscle, so the grid stays spread over every feature instead of
    // sliding off a protrusion's tip and leaving one stretched quad across
    // it (a beak then pokes through between four points). The uneven
    // stretch this leaves does not matter: the wrapped shape becomes the
    // rest state.
    let settings = SolverSettings {
        max_speed: f32::MAX,
        contact: crate::skin::constraints::ContactResponse {
            k_normal: 0.0,
            k_tangent: 0.0,
        },
        ..SolverSettings::default()
    };
    let mut sim = Simulation::new(c, SkeletonDriver::Still(posture.clone()), settings)
        .map_err(|e| InvalidField::new("skin", e.to_string()))?;
    let mut t = 0.0;
    while t < WRAP_MAX_TIME {
        t += 0.05;
        sim.advance_to(t, None).map_err(|e| {
            InvalidField::new(
                "skin",
                format!("the skin could not shrink onto the muscles: {e}"),
            )
        })?;
        let fastest = sim.character.skins[0]
            .points
            .velocity
            .iter()
            .map(|v| v.length())
            .fold(0.0f32, f32::max);
        if t > 0.25 && fastest < settled {
            break;
        }
    }
    *skin = sim.character.skins.pop().expect("one skin");
    Ok(())
}

fn placeholder() -> Skin {
    Skin {
        name: String::new(),
        bottom_joint: 0,
        top_joint: 0,
        m: 0,
        n: 0,
        boundary_local: Vec::new(),
        muscles: Vec::new(),
        points: SkinPoints::default(),
    }
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
