//! Non-penetration (LEMAN §4.1.4, §4.2.3): after an accepted step, every skin
//! point whose fat-offset inner point r − fat·n (eq. 9) lies inside a muscle is
//! moved out to the muscle surface (eq. 16a), and its velocity relative to the
//! muscle is split into normal and tangential parts, v = −k∥v∥ + k⊥v⊥ (16b–d).
//!
//! Culling is hierarchical, as the paper's quadtree and its §7 optimisation
//! suggest: the grid is cut into 4×4-point blocks grouped 4×4 into super-blocks;
//! bounding spheres of their inner points are tested against muscle bounding
//! spheres, and only points of overlapping blocks get the inside-outside test,
//! and only against the muscles near them.

use super::body::PosedBody;
use super::elastic::Grid;
use glam::Vec3;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

const BLOCK: usize = 4;
const SUPER: usize = 4;
const PARALLEL_POINTS: usize = 2048;
/// A second pass retests a point whose inner fat point moved more than this (m).
const RETEST_SHIFT: f32 = 1e-4;

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
    normals: Vec<Vec3>,
    inner: Vec<Vec3>,
    blocks: Vec<Sphere>,
    /// Candidate muscles per block (flattened, with offsets).
    candidates: Vec<u16>,
    offsets: Vec<u32>,
    /// Points a second pass must retest, and spare normals storage.
    retest: Vec<bool>,
    retest_normals: Vec<Vec3>,
}

impl Constraints {
    /// Measures (`apply = false`) or enforces (`apply = true`) non-penetration at
    /// the state (r, v). `body` is the inner layers at this time and `later`
    /// the same a short VELOCITY_DT after (for the muscles' surface velocity).
    /// Projection moves points, which turns their neighbours' normals and so
    /// their inner fat points: a second pass with fresh normals removes most of
    /// that residual (the first pass's corrections are already in r).
    #[allow(clippy::too_many_arguments)]
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
        let first = self.resolve_pass(
            grid, fat, body, later, r, v, wrapped, response, apply, false,
        );
        if !apply || first.corrected == 0 {
            return first;
        }
        // Retest only where an inner fat point shifted noticeably with its
        // normal (next to the points that moved, and mostly near sharp features
        // and the fixed boundary rings).
        let p = grid.points();
        let mut fresh = std::mem::take(&mut self.retest_normals);
        fresh.resize(p, Vec3::ZERO);
        grid.normals(r, &mut fresh);
        self.retest.clear();
        self.retest
            .extend((0..p).map(|k| fat[k] * (fresh[k] - self.normals[k]).length() > RETEST_SHIFT));
        self.retest_normals = std::mem::replace(&mut self.normals, fresh);
        if !self.retest.iter().any(|&t| t) {
            return first;
        }
        let second =
            self.resolve_pass(grid, fat, body, later, r, v, wrapped, response, apply, true);
        ConstraintReport {
            max_correction: first.max_correction.max(second.max_correction),
            corrected: first.corrected,
            tests: first.tests + second.tests,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn resolve_pass(
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
        only_retest: bool,
    ) -> ConstraintReport {
        let p = grid.points();
        self.normals.resize(p, Vec3::ZERO);
        self.inner.resize(p, Vec3::ZERO);
        // The second pass gets fresh normals from `resolve`.
        if !only_retest {
            grid.normals(r, &mut self.normals);
        }
        for k in 0..p {
            self.inner[k] = r[k] - fat[k] * self.normals[k];
        }
        self.build_candidates(grid, body, wrapped);
        let (m, n) = (grid.m, grid.n);
        let bw = m.div_ceil(BLOCK);
        let this = &*self;
        let row = |j: usize, r_row: &mut [Vec3], v_row: &mut [Vec3]| -> ConstraintReport {
            let mut rep = ConstraintReport::default();
            if grid.is_boundary_row(j) {
                return rep;
            }
            let bj = (j - 1) / BLOCK;
            for i in 0..m {
                let b = bj * bw + i / BLOCK;
                let cands =
                    &this.candidates[this.offsets[b] as usize..this.offsets[b + 1] as usize];
                if cands.is_empty() {
                    continue;
                }
                let k = grid.idx(i, j);
                if only_retest && !this.retest[k] {
                    continue;
                }
                let mut inner = this.inner[k];
                // A second pass catches a point pushed from one muscle into another.
                for _pass in 0..2 {
                    let mut moved = false;
                    for &q in cands {
                        let mus = &body.muscles[q as usize];
                        let local = mus.to_local.transform_point3(inner);
                        rep.tests += 1;
                        if !mus.shape.is_inside(local) {
                            continue;
                        }
                        let s = mus.shape.project_near_surface(local);
                        let target = mus.to_world.transform_point3(s.point);
                        let delta = target - inner;
                        rep.max_correction = rep.max_correction.max(delta.length());
                        rep.corrected += 1;
                        if !apply {
                            continue;
                        }
                        moved = true;
                        inner = target;
                        r_row[i] += delta;
                        let normal = mus.to_world.transform_vector3(s.normal).normalize_or_zero();
                        let surface_v =
                            (later.muscles[q as usize].to_world.transform_point3(s.point) - target)
                                * (1.0 / super::system::VELOCITY_DT) as f32;
                        let rel = v_row[i] - surface_v;
                        let vn = rel.dot(normal);
                        if vn < 0.0 {
                            let v_par = vn * normal;
                            let v_perp = rel - v_par;
                            v_row[i] =
                                surface_v - response.k_normal * v_par + response.k_tangent * v_perp;
                        }
                    }
                    if !moved {
                        break;
                    }
                }
            }
            rep
        };
        let merge = |a: ConstraintReport, b: ConstraintReport| ConstraintReport {
            max_correction: a.max_correction.max(b.max_correction),
            corrected: a.corrected + b.corrected,
            tests: a.tests + b.tests,
        };
        let _ = n;
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

    /// Bounding spheres of the inner points per block and super-block, and the
    /// muscles whose bounding spheres touch each block.
    fn build_candidates(&mut self, grid: &Grid, body: &PosedBody, wrapped: &[usize]) {
        let (m, n) = (grid.m, grid.n);
        let rows = n - 2;
        let (bw, bh) = (m.div_ceil(BLOCK), rows.div_ceil(BLOCK));
        self.blocks.clear();
        for bj in 0..bh {
            for bi in 0..bw {
                let (mut lo, mut hi) = (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN));
                for j in 1 + bj * BLOCK..(1 + (bj + 1) * BLOCK).min(n - 1) {
                    for i in bi * BLOCK..((bi + 1) * BLOCK).min(m) {
                        let x = self.inner[grid.idx(i, j)];
                        lo = lo.min(x);
                        hi = hi.max(x);
                    }
                }
                self.blocks.push(Sphere {
                    center: 0.5 * (lo + hi),
                    radius: 0.5 * (hi - lo).length(),
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

    /// Normals computed by the last `resolve` call.
    pub fn normals(&self) -> &[Vec3] {
        &self.normals
    }
}

/// Deepest penetration of any inner fat point into any muscle (m, ≥ 0), checked
/// by brute force against every muscle — the invariant the tests hold the solver to.
pub fn deepest_penetration(
    grid: &Grid,
    fat: &[f32],
    body: &PosedBody,
    wrapped: &[usize],
    r: &[Vec3],
) -> f32 {
    let mut normals = vec![Vec3::ZERO; grid.points()];
    grid.normals(r, &mut normals);
    let mut worst = 0.0f32;
    for j in 1..grid.n - 1 {
        for i in 0..grid.m {
            let k = grid.idx(i, j);
            let inner = r[k] - fat[k] * normals[k];
            for mu in wrapped.iter().map(|&q| &body.muscles[q]) {
                let d = mu
                    .shape
                    .signed_distance(mu.to_local.transform_point3(inner));
                worst = worst.max(-d);
            }
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

    /// The hierarchical culling never misses a point that brute force finds
    /// inside a muscle, and it skips most of the work.
    #[test]
    fn culling_finds_every_penetrating_point() {
        let joint = Joint {
            locked: false,
            name: "j".into(),
            parent: None,
            offset: Vec3::ZERO,
            rest_rotation: Quat::IDENTITY,
            dofs: [Dof::default(); 3],
        };
        let muscle = |x: f32, shape: MuscleShape| Muscle {
            joint: 0,
            offset: Vec3::new(x, 0.5, 0.0),
            rotation: Quat::from_rotation_z(0.3),
            shape,
            drivers: vec![],
        };
        let c = Character {
            name: "t".into(),
            skeleton: Skeleton {
                joints: vec![joint],
            },
            muscles: vec![
                muscle(-0.3, MuscleShape::sphere(0.15)),
                muscle(
                    0.0,
                    MuscleShape::superellipsoid(Vec3::new(0.1, 0.2, 0.12), Vec2::new(0.6, 1.2)),
                ),
                muscle(0.35, MuscleShape::sphere(0.1)),
            ],
            skins: vec![],
            environment: Environment::default(),
            flesh: Default::default(),
            key_postures: vec![],
        };
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
}
