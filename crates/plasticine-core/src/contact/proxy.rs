//! Contact proxies (Galoppo §4.3.3): the points of a character's surface
//! that are tested against obstacles. Without an embedded mesh the surface
//! is the muscles' pushed out by the fat: points spread over each muscle
//! (a Fibonacci sphere projected onto its shape), moved out along the
//! shape's normal by the fat of the skins over it. Points buried inside
//! another muscle are left out: they can never touch first.

use crate::character::{Character, Flesh, Posture};
use crate::kinematics::PosedBody;
use glam::DVec3;

/// Points per muscle.
pub const PROXIES_PER_MUSCLE: usize = 96;

/// One contact proxy at rest.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Proxy {
    /// The point on the muscle's surface (world, rest posture).
    pub surface: DVec3,
    /// From there out to the fat's surface (world, rest posture): the
    /// normal times the fat.
    pub fat: DVec3,
    /// The muscle it lies on.
    pub muscle: usize,
    /// The friction coefficient of the flesh part it lies on (its muscle's
    /// joint's), if that part has its own ([`crate::character::PartFriction`]).
    pub friction: Option<f64>,
}

/// The fat over muscle `k`: the mean fat of the points of the skins that
/// wrap it (zero where no skin does).
fn fat_over(character: &Character, k: usize) -> f64 {
    let (mut sum, mut count) = (0.0, 0usize);
    for skin in character.skins.iter().filter(|s| s.muscles.contains(&k)) {
        sum += skin.points.fat.iter().map(|&f| f as f64).sum::<f64>();
        count += skin.points.fat.len();
    }
    if count == 0 { 0.0 } else { sum / count as f64 }
}

/// The contact proxies of `character` in `posture` (its rest posture, for a
/// lattice's rest frame).
pub fn contact_proxies(character: &Character, posture: &Posture) -> Vec<Proxy> {
    let body = PosedBody::new(character, posture);
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    let n = PROXIES_PER_MUSCLE;
    let mut proxies = Vec::new();
    for (k, m) in body.muscles.iter().enumerate() {
        let fat = fat_over(character, k);
        let friction = match &character.flesh {
            Flesh::Fem(f) => character
                .muscles
                .get(k)
                .and_then(|mu| character.skeleton.joints.get(mu.joint))
                .and_then(|j| f.part_friction(&j.name)),
            _ => None,
        };
        for i in 0..n {
            // The Fibonacci sphere: even spread, no poles crowded.
            let y = 1.0 - 2.0 * (i as f64 + 0.5) / n as f64;
            let r = (1.0 - y * y).sqrt();
            let phi = golden * i as f64;
            let dir = DVec3::new(r * phi.cos(), y, r * phi.sin());
            let reach = m.local_box.map_or(m.radius, |b| b.max_element());
            let start = (dir * reach as f64).as_vec3();
            let s = m.shape.project_to_surface(start);
            if !(s.point.is_finite() && s.normal.is_finite()) {
                continue;
            }
            let surface = m.to_world.transform_point3(s.point);
            let normal = m.to_world.transform_vector3(s.normal).normalize_or_zero();
            let outer = surface + normal * fat as f32;
            let buried = body.muscles.iter().enumerate().any(|(j, o)| {
                j != k && o.shape.signed_distance(o.to_local.transform_point3(outer)) < 0.0
            });
            if buried {
                continue;
            }
            proxies.push(Proxy {
                surface: surface.as_dvec3(),
                fat: (normal * fat as f32).as_dvec3(),
                muscle: k,
                friction,
            });
        }
    }
    proxies
}

/// The lowest point of a set of world points along `up` (their minimum
/// `up · x`), `f64::INFINITY` for none.
#[cfg(test)]
pub fn lowest(points: impl IntoIterator<Item = DVec3>, up: DVec3) -> f64 {
    points
        .into_iter()
        .map(|p| up.dot(p))
        .fold(f64::INFINITY, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::character::{Muscle, Skeleton};
    use crate::shape::MuscleShape;
    use glam::{Quat, Vec3};

    #[test]
    fn a_sphere_s_proxies_lie_on_it_pushed_out_by_nothing_without_skin() {
        let c = Character {
            name: "ball".into(),
            skeleton: Skeleton {
                joints: vec![crate::character::Joint {
                    name: "root".into(),
                    parent: None,
                    offset: Vec3::new(0.0, 1.0, 0.0),
                    rest_rotation: Quat::IDENTITY,
                    dofs: Default::default(),
                    locked: false,
                }],
            },
            muscles: vec![Muscle {
                joint: 0,
                offset: Vec3::ZERO,
                rotation: Quat::IDENTITY,
                shape: MuscleShape::sphere(0.1),
                drivers: Vec::new(),
                color: None,
            }],
            skins: Vec::new(),
            environment: Default::default(),
            flesh: Default::default(),
            key_postures: Vec::new(),
        };
        let p = contact_proxies(&c, &c.skeleton.rest_posture());
        assert_eq!(p.len(), PROXIES_PER_MUSCLE);
        for x in &p {
            let r = (x.surface - DVec3::new(0.0, 1.0, 0.0)).length();
            assert!((r - 0.1).abs() < 1e-5, "{r}");
            assert_eq!(x.fat, DVec3::ZERO);
        }
        let low = lowest(p.iter().map(|x| x.surface), DVec3::Y);
        assert!(low < 0.905 && low > 0.9 - 1e-6, "{low}");
    }
}
