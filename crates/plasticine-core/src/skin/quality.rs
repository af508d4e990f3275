//! How smooth a skin looks: the angle between the normals of neighbouring
//! grid quads (around and up). A smooth 64×64 skin has almost every angle
//! under ~10°; a crumple or a shard shows as tens of degrees, a fold as
//! 90–180°. Quads touching the two boundary rings are left out (the rings are
//! the joints' business, not the skin's).

use super::elastic::Grid;
use glam::Vec3;
use serde::Serialize;

/// Above this angle a neighbour pair counts as creased (degrees).
pub const CREASE_DEG: f32 = 30.0;

/// The smoothness of one skin at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Smoothness {
    /// 95th percentile of the neighbour-normal angle (degrees).
    pub p95_deg: f32,
    /// Largest angle (degrees).
    pub max_deg: f32,
    /// Share of neighbour pairs above `CREASE_DEG`, in percent.
    pub creased_pct: f32,
    /// Neighbour pairs measured.
    pub pairs: usize,
}

impl Smoothness {
    /// The worse of two measurements, field by field (for the worst frame).
    pub fn worst(self, other: Self) -> Self {
        Self {
            p95_deg: self.p95_deg.max(other.p95_deg),
            max_deg: self.max_deg.max(other.max_deg),
            creased_pct: self.creased_pct.max(other.creased_pct),
            pairs: self.pairs.max(other.pairs),
        }
    }
}

/// Unit normal of quad (i, j) (corners (i,j), (i+1,j), (i+1,j+1), (i,j+1)),
/// from the cross product of its diagonals; zero for a collapsed quad.
#[inline]
pub fn quad_normal(g: &Grid, r: &[Vec3], i: usize, j: usize) -> Vec3 {
    let ir = g.right(i);
    let d1 = r[g.idx(ir, j + 1)] - r[g.idx(i, j)];
    let d2 = r[g.idx(i, j + 1)] - r[g.idx(ir, j)];
    d1.cross(d2).normalize_or_zero()
}

/// Every neighbour-pair angle (degrees) of the quads in rows 1..n−3 (those
/// not touching a boundary ring), around pairs first, then up pairs.
pub fn neighbour_angles(g: &Grid, r: &[Vec3]) -> Vec<f32> {
    if g.n < 5 {
        return Vec::new();
    }
    let rows = 1..g.n - 2;
    let mut normals = vec![Vec3::ZERO; g.m * g.n];
    for j in rows.clone() {
        for i in 0..g.m {
            normals[g.idx(i, j)] = quad_normal(g, r, i, j);
        }
    }
    let angle = |a: Vec3, b: Vec3| a.dot(b).clamp(-1.0, 1.0).acos().to_degrees();
    let mut out = Vec::with_capacity(2 * g.m * g.n);
    for j in rows.clone() {
        for i in 0..g.m {
            out.push(angle(normals[g.idx(i, j)], normals[g.idx(g.right(i), j)]));
        }
    }
    for j in rows.start..rows.end - 1 {
        for i in 0..g.m {
            out.push(angle(normals[g.idx(i, j)], normals[g.idx(i, j + 1)]));
        }
    }
    out
}

/// The smoothness of positions `r` on grid `g`.
pub fn smoothness(g: &Grid, r: &[Vec3]) -> Smoothness {
    let mut a = neighbour_angles(g, r);
    if a.is_empty() {
        return Smoothness::default();
    }
    let creased = a.iter().filter(|&&x| x > CREASE_DEG).count();
    a.sort_by(f32::total_cmp);
    let p95 = a[((a.len() - 1) as f32 * 0.95).round() as usize];
    Smoothness {
        p95_deg: p95,
        max_deg: *a.last().expect("not empty"),
        creased_pct: 100.0 * creased as f32 / a.len() as f32,
        pairs: a.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cylinder(m: usize, n: usize, wobble: impl Fn(usize, usize) -> f32) -> Vec<Vec3> {
        let mut r = Vec::new();
        for j in 0..n {
            for i in 0..m {
                let phi = i as f32 / m as f32 * std::f32::consts::TAU;
                let rad = 0.1 + wobble(i, j);
                r.push(Vec3::new(
                    rad * phi.cos(),
                    j as f32 / (n - 1) as f32 * 0.3,
                    -rad * phi.sin(),
                ));
            }
        }
        r
    }

    /// A cylinder's around angle is exactly 360°/m; up angles are zero.
    #[test]
    fn a_cylinder_turns_by_its_polygon_angle() {
        let g = Grid::new(64, 64);
        let s = smoothness(&g, &cylinder(64, 64, |_, _| 0.0));
        assert!((s.max_deg - 360.0 / 64.0).abs() < 0.05, "{s:?}");
        assert_eq!(s.creased_pct, 0.0);
        // Around pairs (m per row) outnumber up pairs by one row: p95 is the
        // polygon angle too.
        assert!((s.p95_deg - 360.0 / 64.0).abs() < 0.05, "{s:?}");
    }

    /// Ridges every other row (a crumple at the grid spacing) crease every
    /// up pair. (A checkerboard of bumps leaves the diagonal quad normals
    /// unchanged: the elastic skin's twist term, not this measure, sees it.)
    #[test]
    fn a_grid_scale_crumple_creases() {
        let g = Grid::new(32, 32);
        let r = cylinder(32, 32, |_, j| if j % 2 == 0 { 0.01 } else { -0.01 });
        let s = smoothness(&g, &r);
        assert!(s.creased_pct > 40.0 && s.p95_deg > 60.0, "{s:?}");
    }
}
