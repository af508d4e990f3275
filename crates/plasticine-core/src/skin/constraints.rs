//! Non-penetration and the fat layer (LEMAN §4.1.4, §4.2.3): after an
//! accepted step, every skin point closer to a muscle than its fat thickness
//! is moved out along the muscle's normal to that thickness (eq. 16a), and its
//! velocity relative to the muscle is split into normal and tangential parts,
//! v = −k∥v∥ + k⊥v⊥ (16b–d).
//!
//! # The fat layer as a distance
//!
//! LEMAN eq. 9 constrains the inner fat point r − fat·n, n the *skin*
//! normal. Where a muscle is sharper than the fat is thick (a beak's tip, a
//! flat flipper's end: curvature radii of 5–9 mm under 10 mm of fat) that
//! inward offset folds over itself, and a skin normal that turns by a few
//! degrees swings the inner point across the muscle: the projection kicks the
//! skin one way and the other and crumples it (measured on the penguin's beak
//! and flipper tips). Here the same layer is "the required distance out from
//! the underlying layers" (§3.5) measured from the muscle: a point is pushed
//! out while the muscle's gauge g(r) — Taubin's first-order distance, a lower
//! bound on the true distance outside convex primitives — is below its fat.
//! The level sets of g round every corner outward, never fold, and do not
//! depend on the skin's own (possibly crumpled) normals.
//!
//! Culling is hierarchical, as the paper's quadtree and its §7 optimisation
//! suggest: the grid is cut into 4×4-point blocks grouped 4×4 into super-blocks;
//! bounding spheres of their points, grown by the fat, are tested against muscle
//! bounding spheres, and only points of overlapping blocks get the distance
//! test, and only against the muscles near them.

use super::elastic::Grid;
use crate::kinematics::PosedBody;
use glam::Vec3;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

mod lanes;

const BLOCK: usize = 4;
const SUPER: usize = 4;
const PARALLEL_POINTS: usize = 2048;

/// How a point that hit a muscle keeps its velocity (eq. 16d).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContactResponse {
    /// k∥: restitution of the normal velocity (0 = inelastic).
    pub k_normal: f32,
    /// k⊥: kept fraction of the tangential velocity (1 = free sliding).
    pub k_tangent: f32,
}

impl Default for ContactResponse {
    fn default() -> Self {
        Self {
            k_normal: 0.0,
            k_tangent: 1.0,
        }
    }
}

/// What one pass of the fat-layer constraint (eq. 16) measured or corrected.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ConstraintReport {
    /// Largest position correction (m).
    pub max_correction: f32,
    /// Points moved out of a muscle.
    pub corrected: usize,
    /// Inside-outside evaluations made (to measure the culling).
    pub tests: usize,
}

#[derive(Clone, Copy, Default)]
struct Sphere {
    center: Vec3,
    radius: f32,
}

impl Sphere {
    fn overlaps(&self, c: Vec3, r: f32) -> bool {
        (self.center - c).length_squared() <= (self.radius + r) * (self.radius + r)
    }
}

/// Scratch and culling structures, reused across steps.
#[derive(Default)]
pub struct Constraints {
    blocks: Vec<Sphere>,
    /// Candidate muscles per block (flattened, with offsets).
    candidates: Vec<u16>,
    offsets: Vec<u32>,
    /// Wall time spent in [`resolve`](Self::resolve) so far: the cost of
    /// the skin–muscle contact on its own (`bench --scaling`). Timing
    /// only: it never enters the simulation.
    spent: std::time::Duration,
}

impl Constraints {
    /// Measures (`apply = false`) or enforces (`apply = true`) the fat layer
    /// at the state (r, v). `body` is the inner layers at this time and
    /// `later` the same a short `VELOCITY_DT` after (for the muscles' surface
    /// velocity).
    #[allow(
        clippy::too_many_arguments,
        reason = "the state, the layers at two times and the response, as the stepper holds them"
    )]
    pub fn resolve(
        &mut self,
        grid: &Grid,
        fat: &[f32],
        body: &PosedBody,
        later: &PosedBody,
        r: &mut [Vec3],
        v: &mut [Vec3],
        wrapped: &[usize],
        response: ContactResponse,
        apply: bool,
    ) -> ConstraintReport {
        let start = std::time::Instant::now();
        let report = self.resolve_untimed(grid, fat, (body, later), r, v, wrapped, response, apply);
        self.spent += start.elapsed();
        report
    }

    /// Wall seconds spent resolving the fat layer so far.
    pub fn seconds(&self) -> f64 {
        self.spent.as_secs_f64()
    }

    #[allow(clippy::too_many_arguments, reason = "as resolve, whose body it is")]
    fn resolve_untimed(
        &mut self,
        grid: &Grid,
        fat: &[f32],
        (body, later): (&PosedBody, &PosedBody),
        r: &mut [Vec3],
        v: &mut [Vec3],
        wrapped: &[usize],
        response: ContactResponse,
        apply: bool,
    ) -> ConstraintReport {
        let p = grid.points();
        let max_fat = fat.iter().copied().fold(0.0f32, f32::max);
        self.build_candidates(grid, r, max_fat, body, wrapped);
        let m = grid.m;
        let bw = m.div_ceil(BLOCK);
        let this = &*self;
        let row = |j: usize, r_row: &mut [Vec3], v_row: &mut [Vec3]| -> ConstraintReport {
            let mut rep = ConstraintReport::default();
            if grid.is_boundary_row(j) {
                return rep;
            }
            let bj = (j - 1) / BLOCK;
            let fat_row = &fat[grid.idx(0, j)..grid.idx(0, j) + m];
            let cands_of =
                |b: usize| &this.candidates[this.offsets[b] as usize..this.offsets[b + 1] as usize];
            let mut bi = 0;
            while bi < bw {
                let b = bj * bw + bi;
                let cands = cands_of(b);
                let points = bi * BLOCK..((bi + 1) * BLOCK).min(m);
                if cands.is_empty() {
                    bi += 1;
                    continue;
                }
                // A block's points share their muscles: where all of them are
                // ellipsoids, the block's points go through together, with
                // the next block's where it has the same muscles.
                if points.len() == BLOCK
                    && cands
                        .iter()
                        .all(|&q| body.muscles[q as usize].shape.ellipsoid_radii().is_some())
                {
                    let lanes = lanes::Block {
                        body,
                        later,
                        cands,
                        k_normal: response.k_normal,
                        k_tangent: response.k_tangent,
                        apply,
                        velocity_dt: super::system::VELOCITY_DT,
                    };
                    let pair = 2 * BLOCK <= lanes::LANES
                        && (bi + 2) * BLOCK <= m
                        && cands_of(b + 1) == cands;
                    let span = if pair { 2 * BLOCK } else { BLOCK };
                    let range = points.start..points.start + span;
                    if let Some(t) = lanes.resolve(
                        &fat_row[range.clone()],
                        &mut r_row[range.clone()],
                        &mut v_row[range],
                    ) {
                        rep.max_correction = rep.max_correction.max(t.max_correction);
                        rep.corrected += t.corrected;
                        rep.tests += t.tests;
                        bi += span / BLOCK;
                        continue;
                    }
                }
                for i in points {
                    resolve_point(
                        body,
                        later,
                        cands,
                        fat_row[i],
                        &mut r_row[i],
                        &mut v_row[i],
                        (response, apply),
                        &mut rep,
                    );
                }
                bi += 1;
            }
            rep
        };
        let merge = |a: ConstraintReport, b: ConstraintReport| ConstraintReport {
            max_correction: a.max_correction.max(b.max_correction),
            corrected: a.corrected + b.corrected,
            tests: a.tests + b.tests,
        };
        if p >= PARALLEL_POINTS {
            r.par_chunks_mut(m)
                .zip(v.par_chunks_mut(m))
                .enumerate()
                .map(|(j, (rr, vv))| row(j, rr, vv))
                .reduce(ConstraintReport::default, merge)
        } else {
            r.chunks_mut(m)
                .zip(v.chunks_mut(m))
                .enumerate()
                .map(|(j, (rr, vv))| row(j, rr, vv))
                .fold(ConstraintReport::default(), merge)
        }
    }

    /// Bounding spheres of the points per block (grown by the thickest fat)
    /// and super-block, and the muscles whose bounding spheres touch each block.
    fn build_candidates(
        &mut self,
        grid: &Grid,
        r: &[Vec3],
        max_fat: f32,
        body: &PosedBody,
        wrapped: &[usize],
    ) {
        let (m, n) = (grid.m, grid.n);
        let rows = n - 2;
        let (bw, bh) = (m.div_ceil(BLOCK), rows.div_ceil(BLOCK));
        self.blocks.clear();
        for bj in 0..bh {
            for bi in 0..bw {
                let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
                for j in 1 + bj * BLOCK..(1 + (bj + 1) * BLOCK).min(n - 1) {
                    for i in bi * BLOCK..((bi + 1) * BLOCK).min(m) {
                        let x = r[grid.idx(i, j)];
                        lo = lo.min(x);
                        hi = hi.max(x);
                    }
                }
                self.blocks.push(Sphere {
                    center: 0.5 * (lo + hi),
                    radius: 0.5 * (hi - lo).length() + max_fat,
                });
            }
        }
        let (sw, sh) = (bw.div_ceil(SUPER), bh.div_ceil(SUPER));
        let mut super_cands: Vec<Vec<u16>> = Vec::with_capacity(sw * sh);
        for sj in 0..sh {
            for si in 0..sw {
                let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
                for bj in sj * SUPER..((sj + 1) * SUPER).min(bh) {
                    for bi in si * SUPER..((si + 1) * SUPER).min(bw) {
                        let s = self.blocks[bj * bw + bi];
                        lo = lo.min(s.center - Vec3::splat(s.radius));
                        hi = hi.max(s.center + Vec3::splat(s.radius));
                    }
                }
                let sphere = Sphere {
                    center: 0.5 * (lo + hi),
                    radius: 0.5 * (hi - lo).length(),
                };
                super_cands.push(
                    wrapped
                        .iter()
                        .filter(|&&q| {
                            sphere.overlaps(body.muscles[q].center, body.muscles[q].radius)
                        })
                        .map(|&q| q as u16)
                        .collect(),
                );
            }
        }
        self.candidates.clear();
        self.offsets.clear();
        self.offsets.push(0);
        for bj in 0..bh {
            for bi in 0..bw {
                let s = self.blocks[bj * bw + bi];
                for &q in &super_cands[(bj / SUPER) * sw + bi / SUPER] {
                    if body.may_touch(q as usize, s.center, s.radius) {
                        self.candidates.push(q);
                    }
                }
                self.offsets.push(self.candidates.len() as u32);
            }
        }
    }
}

/// The fat-layer constraint at one point `x` (velocity `v`) against the
/// muscles `cands`, with fat `thickness`: see [`Constraints::resolve`].
#[expect(
    clippy::too_many_arguments,
    reason = "one point's state, the layers at two times and the pass's report"
)]
fn resolve_point(
    body: &PosedBody,
    later: &PosedBody,
    cands: &[u16],
    thickness: f32,
    x: &mut Vec3,
    v: &mut Vec3,
    (response, apply): (ContactResponse, bool),
    rep: &mut ConstraintReport,
) {
    // A second pass catches a point pushed from one muscle into another.
    for _pass in 0..2 {
        let mut moved = false;
        for &q in cands {
            let mus = &body.muscles[q as usize];
            let local = mus.to_local.transform_point3(*x);
            // Cheap reject: outside the local box (or bounding
            // sphere) grown by the fat.
            let far = match mus.local_box {
                Some(half) => (local.abs() - half).max_element() > thickness,
                None => local.length() > mus.radius + thickness,
            };
            if far {
                continue;
            }
            rep.tests += 1;
            let (g, n_local) = mus.shape.distance_and_normal(local, thickness);
            if g >= thickness || !n_local.is_finite() {
                continue;
            }
            // To the fat's depth along the muscle normal: one gauge
            // step, exact for spheres and to second order in the
            // (small, per-step) intrusion otherwise; what is left
            // the next step removes.
            let target_local = local + (thickness - g) * n_local;
            let target = mus.to_world.transform_point3(target_local);
            let delta = target - *x;
            rep.max_correction = rep.max_correction.max(delta.length());
            rep.corrected += 1;
            if !apply {
                continue;
            }
            moved = true;
            *x = target;
            let normal = mus.to_world.transform_vector3(n_local).normalize_or_zero();
            let surface_v = (later.muscles[q as usize]
                .to_world
                .transform_point3(target_local)
                - target)
                * (1.0 / super::system::VELOCITY_DT) as f32;
            let rel = *v - surface_v;
            let vn = rel.dot(normal);
            if vn < 0.0 {
                let v_par = vn * normal;
                let v_perp = rel - v_par;
                *v = surface_v - response.k_normal * v_par + response.k_tangent * v_perp;
            }
        }
        // With a single muscle near, nothing can push it back in.
        if !moved || cands.len() == 1 {
            break;
        }
    }
}

/// Deepest intrusion of any skin point into the fat layer of any muscle it
/// wraps (m, ≥ 0): max over points of fat − d(r), d the distance the
/// constraint enforces ([`crate::shape::MuscleShape::distance_and_normal`]: for convex
/// primitives at most the true distance, so the true fat is never thinner). Checked
/// by brute force against every muscle — the invariant the tests hold the
/// solver to.
pub fn deepest_penetration(
    grid: &Grid,
    fat: &[f32],
    body: &PosedBody,
    wrapped: &[usize],
    r: &[Vec3],
) -> f32 {
    let mut worst = 0.0f32;
    for j in 1..grid.n - 1 {
        for i in 0..grid.m {
            let k = grid.idx(i, j);
            worst = worst.max(body.fat_depth(fat[k], wrapped, r[k]));
        }
    }
    worst
}

/// Where point `p` rests on the muscles it wraps: the nearest surface point
/// of the nearest of them. A skin point sits a fat thickness out from here;
/// where this lies inside another skin, the muscles themselves have entered
/// it (a limb swung into the body), and no position of the point keeps both
/// its fat layer and the other skin ([`super::contact`]).
pub fn anchor(body: &PosedBody, wrapped: &[usize], p: Vec3) -> Vec3 {
    let mut best = (f32::INFINITY, p);
    for mu in wrapped.iter().map(|&q| &body.muscles[q]) {
        // The bounding sphere bounds the distance from below: a muscle
        // further than the best found cannot be nearer.
        if p.distance(mu.center) - mu.radius > best.0 {
            continue;
        }
        let local = mu.to_local.transform_point3(p);
        let foot = mu
            .to_world
            .transform_point3(mu.shape.project_to_surface(local).point);
        let d = p.distance(foot);
        if d < best.0 {
            best = (d, foot);
        }
    }
    best.1
}

/// How deep any interior skin point lies inside a muscle it wraps (m, ≥ 0;
/// not the fat layer: the muscle itself). After every step the fat layer is
/// restored, so a point inside a muscle by more than the constraint
/// tolerance is a step gone wrong.
pub fn deepest_sinking(grid: &Grid, body: &PosedBody, wrapped: &[usize], r: &[Vec3]) -> f32 {
    let mut worst = 0.0f32;
    for j in 1..grid.n - 1 {
        for i in 0..grid.m {
            // A fat layer of nothing: the muscle itself.
            worst = worst.max(body.fat_depth(0.0, wrapped, r[grid.idx(i, j)]));
        }
    }
    worst
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::character::{Character, Dof, Environment, Joint, Muscle, Skeleton};
    use crate::shape::MuscleShape;
    use glam::{Quat, Vec2};

    /// A one-joint character whose muscles sit along x (at the given x,
    /// y = 0.5), each turned 0.3 rad about z.
    fn one_joint_with(muscles: Vec<(f32, MuscleShape)>) -> Character {
        let joint = Joint {
            locked: false,
            name: "j".into(),
            parent: None,
            offset: Vec3::ZERO,
            rest_rotation: Quat::IDENTITY,
            dofs: [Dof::default(); 3],
        };
        Character {
            name: "t".into(),
            skeleton: Skeleton {
                joints: vec![joint],
            },
            muscles: muscles
                .into_iter()
                .map(|(x, shape)| Muscle {
                    joint: 0,
                    offset: Vec3::new(x, 0.5, 0.0),
                    rotation: Quat::from_rotation_z(0.3),
                    shape,
                    drivers: vec![],
                    color: None,
                })
                .collect(),
            skins: vec![],
            environment: Environment::default(),
            flesh: Default::default(),
            key_postures: vec![],
        }
    }

    /// The hierarchical culling never misses a point that brute force finds
    /// inside a muscle, and it skips most of the work.
    #[test]
    fn culling_finds_every_penetrating_point() {
        let c = one_joint_with(vec![
            (-0.3, MuscleShape::sphere(0.15)),
            (
                0.0,
                MuscleShape::superellipsoid(Vec3::new(0.1, 0.2, 0.12), Vec2::new(0.6, 1.2)),
            ),
            (0.35, MuscleShape::sphere(0.1)),
        ]);
        let body = PosedBody::new(&c, &c.skeleton.rest_posture());
        // A wavy sheet-like tube crossing all three muscles.
        let grid = Grid::new(40, 30);
        let mut r = Vec::new();
        for j in 0..grid.n {
            for i in 0..grid.m {
                let phi = i as f32 / grid.m as f32 * std::f32::consts::TAU;
                let x = -0.6 + 1.2 * j as f32 / (grid.n - 1) as f32;
                let rad = 0.12 + 0.05 * (5.0 * phi).sin() * (7.0 * x).cos();
                r.push(Vec3::new(x, 0.5 + rad * phi.cos(), rad * phi.sin()));
            }
        }
        let fat = vec![0.01; grid.points()];
        let mut v = vec![Vec3::ZERO; grid.points()];
        let mut normals = vec![Vec3::ZERO; grid.points()];
        grid.normals(&r, &mut normals);
        let mut brute = 0;
        for j in 1..grid.n - 1 {
            for i in 0..grid.m {
                let k = grid.idx(i, j);
                let inner = r[k] - fat[k] * normals[k];
                if body
                    .muscles
                    .iter()
                    .any(|mu| mu.shape.is_inside(mu.to_local.transform_point3(inner)))
                {
                    brute += 1;
                }
            }
        }
        let mut cons = Constraints::default();
        let mut rr = r.clone();
        let rep = cons.resolve(
            &grid,
            &fat,
            &body,
            &body,
            &mut rr,
            &mut v,
            &[0, 1, 2],
            ContactResponse::default(),
            false,
        );
        assert!(brute > 50, "the test geometry penetrates ({brute})");
        // A point inside two muscles counts twice in `corrected`.
        assert!(
            rep.corrected >= brute,
            "culling found {} of {brute}",
            rep.corrected
        );
        assert!(
            rep.tests < 3 * (grid.n - 2) * grid.m * 2 / 3,
            "culling skipped work: {} tests",
            rep.tests
        );
        assert_eq!(rr, r, "measuring moves nothing");
    }

    /// Blocks whose muscles are all ellipsoids go through in lanes: they
    /// must move every point and velocity as the scalar code does, with a
    /// moving muscle (surface velocity), a bounce (k∥ > 0), points pressed
    /// into two muscles at once, and a superellipsoid that sends its blocks
    /// down the scalar path.
    #[test]
    fn lanes_resolve_as_the_scalar_code_does() {
        let c = one_joint_with(vec![
            (-0.3, MuscleShape::sphere(0.15)),
            (
                -0.05,
                MuscleShape::superellipsoid(Vec3::new(0.1, 0.2, 0.12), Vec2::ONE),
            ),
            (
                0.3,
                MuscleShape::superellipsoid(Vec3::new(0.1, 0.15, 0.12), Vec2::new(0.6, 1.2)),
            ),
        ]);
        let body = PosedBody::new(&c, &c.skeleton.rest_posture());
        let mut later = body.clone();
        for (q, mu) in later.muscles.iter_mut().enumerate() {
            mu.to_world.translation += glam::Vec3A::new(1e-4, -2e-4 * q as f32, 5e-5);
        }
        let grid = Grid::new(40, 30);
        let mut r = Vec::new();
        let mut v = Vec::new();
        for j in 0..grid.n {
            for i in 0..grid.m {
                let phi = i as f32 / grid.m as f32 * std::f32::consts::TAU;
                let x = -0.6 + 1.2 * j as f32 / (grid.n - 1) as f32;
                let rad = 0.12 + 0.05 * (5.0 * phi).sin() * (7.0 * x).cos();
                r.push(Vec3::new(x, 0.5 + rad * phi.cos(), rad * phi.sin()));
                v.push(Vec3::new((3.0 * phi).cos(), (2.0 * x).sin(), phi.sin()) * 0.3);
            }
        }
        let fat: Vec<f32> = (0..grid.points())
            .map(|k| 0.01 + 0.002 * (k % 5) as f32)
            .collect();
        let response = ContactResponse {
            k_normal: 0.3,
            k_tangent: 0.8,
        };
        let wrapped = [0usize, 1, 2];
        let (mut rl, mut vl) = (r.clone(), v.clone());
        let lanes = Constraints::default().resolve(
            &grid, &fat, &body, &later, &mut rl, &mut vl, &wrapped, response, true,
        );
        // The scalar code on every interior point against its block's
        // candidate muscles.
        let mut cons = Constraints::default();
        let max_fat = fat.iter().copied().fold(0.0, f32::max);
        cons.build_candidates(&grid, &r, max_fat, &body, &wrapped);
        let bw = grid.m.div_ceil(BLOCK);
        let (mut rs, mut vs) = (r.clone(), v.clone());
        let mut scalar = ConstraintReport::default();
        let mut lane_blocks = 0;
        for j in 1..grid.n - 1 {
            for i in 0..grid.m {
                let k = grid.idx(i, j);
                let b = (j - 1) / BLOCK * bw + i / BLOCK;
                let cands =
                    &cons.candidates[cons.offsets[b] as usize..cons.offsets[b + 1] as usize];
                let ellipsoids = cands
                    .iter()
                    .all(|&q| body.muscles[q as usize].shape.ellipsoid_radii().is_some());
                if !cands.is_empty() && ellipsoids {
                    lane_blocks += 1;
                }
                resolve_point(
                    &body,
                    &later,
                    cands,
                    fat[k],
                    &mut rs[k],
                    &mut vs[k],
                    (response, true),
                    &mut scalar,
                );
            }
        }
        assert!(scalar.corrected > 200, "the geometry presses into the fat");
        assert!(lane_blocks > 100, "points in lanes: {lane_blocks}");
        // Counts may differ by a few re-corrections of points the first pass
        // left on the fat's surface to within rounding.
        assert!(
            lanes.corrected.abs_diff(scalar.corrected) * 50 <= scalar.corrected,
            "corrected: lanes {} scalar {}",
            lanes.corrected,
            scalar.corrected
        );
        assert!((lanes.max_correction - scalar.max_correction).abs() <= 1e-6);
        for k in 0..grid.points() {
            assert!(
                (rl[k] - rs[k]).length() <= 1e-6,
                "point {k}: lanes {} scalar {}",
                rl[k],
                rs[k]
            );
            assert!(
                (vl[k] - vs[k]).length() <= 1e-4 * (1.0 + vs[k].length()),
                "velocity {k}: lanes {} scalar {}",
                vl[k],
                vs[k]
            );
        }
        let moved = (0..grid.points()).filter(|&k| vl[k] != v[k]).count();
        assert!(moved > 100, "velocities were changed ({moved})");
    }
}
