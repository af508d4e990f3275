//! The picking scenario of the tools' benchmark and tests: the penguin with
//! extra muscles, and reproducible probes (tool tips and wand rays) about it.

use crate::character::{Character, Muscle};
use crate::kinematics::PosedBody;
use crate::shape::MuscleShape;
use crate::skin::SimError;
use glam::{Quat, Vec3};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// The picking scenario: the sample penguin with m×n skins and
/// small spheres added on its joints (two rings of them, the second offset)
/// until it has `muscles` muscles.
pub fn demo_scene(m: usize, n: usize, muscles: usize) -> Result<Character, SimError> {
    let mut c = super::resampled("penguin", m, n)?;
    let joints = c.skeleton.joints.len();
    let mut k = 0;
    while c.muscles.len() < muscles {
        let ring = (k / joints) as f32;
        c.muscles.push(Muscle {
            joint: k % joints,
            offset: Vec3::new(0.0, 0.02, 0.03) * ring,
            rotation: Quat::IDENTITY,
            shape: MuscleShape::sphere(0.015),
            drivers: Vec::new(),
            color: None,
        });
        k += 1;
    }
    Ok(c)
}

/// Reproducible probes: a seeded PCG and what the probes draw from it.
struct Probes(Pcg64Mcg);

impl Probes {
    fn below(&mut self, n: usize) -> usize {
        self.0.random_range(0..n.max(1))
    }

    /// Uniform in the cube [−h, h]³.
    fn cube(&mut self, h: f32) -> Vec3 {
        Vec3::new(
            self.0.random_range(-h..=h),
            self.0.random_range(-h..=h),
            self.0.random_range(-h..=h),
        )
    }

    /// Uniform in the box [lo, hi].
    fn in_box(&mut self, lo: Vec3, hi: Vec3) -> Vec3 {
        lo + Vec3::new(self.0.random(), self.0.random(), self.0.random()) * (hi - lo)
    }

    fn direction(&mut self) -> Vec3 {
        loop {
            let v = self.cube(1.0);
            if (1e-3..=1.0).contains(&v.length_squared()) {
                return v.normalize();
            }
        }
    }
}

/// Reproducible tool tips and wand rays `(origin, dir)` around a posed
/// character, as a tool would produce them: tips near skin points, joints
/// and muscles or anywhere about the body; rays from about a metre away
/// aimed near those, and a few from inside the body.
pub fn demo_probes(
    character: &Character,
    body: &PosedBody,
    count: usize,
    seed: u64,
) -> (Vec<Vec3>, Vec<(Vec3, Vec3)>) {
    let mut rng = Probes(Pcg64Mcg::seed_from_u64(seed));
    let skin_points: Vec<Vec3> = character
        .skins
        .iter()
        .flat_map(|s| s.points.position.iter().copied())
        .collect();
    let joints: Vec<Vec3> = body.joints.iter().map(|x| x.translation.into()).collect();
    let (lo, hi) = skin_points
        .iter()
        .chain(&joints)
        .fold((Vec3::MAX, Vec3::MIN), |(lo, hi), p| {
            (lo.min(*p), hi.max(*p))
        });
    let (lo, hi) = (lo - Vec3::splat(0.05), hi + Vec3::splat(0.05));
    let centre = 0.5 * (lo + hi);
    let near = |rng: &mut Probes, spread: f32| -> Vec3 {
        match rng.below(4) {
            0 | 1 if !skin_points.is_empty() => {
                skin_points[rng.below(skin_points.len())] + rng.cube(spread)
            }
            2 if !body.muscles.is_empty() => {
                let mu = &body.muscles[rng.below(body.muscles.len())];
                mu.center + rng.cube(mu.radius.min(3.0 * spread))
            }
            3 if !joints.is_empty() => joints[rng.below(joints.len())] + rng.cube(spread),
            _ => rng.in_box(lo, hi),
        }
    };
    let tips = (0..count).map(|_| near(&mut rng, 0.03)).collect();
    let rays = (0..count)
        .map(|k| {
            if k % 8 == 7 {
                let o = near(&mut rng, 0.02);
                (o, rng.direction())
            } else {
                let o = centre + rng.direction() * 1.0;
                let target = near(&mut rng, 0.02);
                (o, target - o)
            }
        })
        .collect();
    (tips, rays)
}
