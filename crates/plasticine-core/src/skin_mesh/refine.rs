//! A smooth display surface for a coarse skin grid: the grid refined by a
//! tensor-product Catmull–Rom spline, periodic around and clamped from
//! bottom to top. The spline passes through every simulated point (the
//! grid stays the truth, its boundary rings stay on their joints) and is C¹
//! between them, so a 16×16 skin shows as a round surface instead of flat
//! facets. Display and export only; the solver never sees it.
//!
//! Between points p₁ and p₂ of a grid line, with neighbours p₀ and p₃, the
//! curve at t ∈ [0, 1) is
//! ½[2p₁ + (p₂ − p₀)t + (2p₀ − 5p₁ + 4p₂ − p₃)t² + (3p₁ − p₀ − 3p₂ + p₃)t³].
//! Around, the neighbours wrap; beyond the end rows the missing neighbour is
//! the end row mirrored through its neighbour row (2p₀ − p₁), which keeps the
//! curve's end tangent along the grid's last edge.

use std::ops::{Add, Mul};

/// The size `(M, N)` of an m×n grid refined `s` times: `s` points per grid
/// edge around, `s` per edge up, the top row kept.
pub fn refined_size(m: usize, n: usize, s: usize) -> (usize, usize) {
    let s = s.max(1);
    (m * s, n.saturating_sub(1) * s + 1)
}

/// The Catmull–Rom weights of p₀..p₃ at t.
fn weights(t: f32) -> [f32; 4] {
    let (t2, t3) = (t * t, t * t * t);
    [
        0.5 * (-t + 2.0 * t2 - t3),
        0.5 * (2.0 - 5.0 * t2 + 3.0 * t3),
        0.5 * (t + 4.0 * t2 - 3.0 * t3),
        0.5 * (-t2 + t3),
    ]
}

/// The values `p` of an m×n grid (point (i, j) at `j·m + i`, periodic in
/// i) on the grid refined `s` times ([`refined_size`]); refined point
/// (s·i, s·j) is point (i, j) exactly. Positions and per-point scalars
/// alike (a scalar may overshoot its neighbours a little, as the spline
/// does). `s` ≤ 1, or a grid too small to have a spline (m < 3, n < 2, or
/// `p` not m·n long), returns `p` unchanged.
pub fn refine<T>(m: usize, n: usize, p: &[T], s: usize) -> Vec<T>
where
    T: Copy + Add<Output = T> + Mul<f32, Output = T>,
{
    if s <= 1 || m < 3 || n < 2 || p.len() != m * n {
        return p.to_vec();
    }
    let w: Vec<[f32; 4]> = (0..s).map(|a| weights(a as f32 / s as f32)).collect();
    let blend = |q: [T; 4], w: &[f32; 4]| q[0] * w[0] + q[1] * w[1] + q[2] * w[2] + q[3] * w[3];
    // Around each row (periodic).
    let big_m = m * s;
    let mut rows = Vec::with_capacity(big_m * n);
    for j in 0..n {
        let at = |i: usize| p[j * m + i % m];
        for i in 0..m {
            let q = [at(i + m - 1), at(i), at(i + 1), at(i + 2)];
            rows.extend(w.iter().map(|w| blend(q, w)));
        }
    }
    // Up each refined column (clamped: mirrored neighbours past the ends).
    let (_, big_n) = refined_size(m, n, s);
    let mut out = Vec::with_capacity(big_m * big_n);
    let row = |j: usize| &rows[j * big_m..(j + 1) * big_m];
    for j in 0..n - 1 {
        let below = (j > 0).then(|| row(j - 1));
        let above = (j + 2 < n).then(|| row(j + 2));
        let (r1, r2) = (row(j), row(j + 1));
        for w in &w {
            for i in 0..big_m {
                let (p1, p2) = (r1[i], r2[i]);
                let p0 = below.map_or(p1 * 2.0 + p2 * -1.0, |r| r[i]);
                let p3 = above.map_or(p2 * 2.0 + p1 * -1.0, |r| r[i]);
                out.push(blend([p0, p1, p2, p3], w));
            }
        }
    }
    out.extend_from_slice(row(n - 1));
    out
}

/// Painted colours (linear RGB) of an m×n grid on the grid refined `s`
/// times, as [`refine`] does positions, clamped back into [0, 1] where the
/// spline overshoots.
pub fn refine_colors(m: usize, n: usize, colors: &[[f32; 3]], s: usize) -> Vec<glam::Vec3> {
    let c: Vec<glam::Vec3> = colors.iter().map(|x| glam::Vec3::from_array(*x)).collect();
    refine(m, n, &c, s)
        .into_iter()
        .map(|x| x.clamp(glam::Vec3::ZERO, glam::Vec3::ONE))
        .collect()
}

/// The refinement that shows an m×n skin smooth: enough points that about
/// 48 go around it, at most 4 per grid edge (a 64×64 skin is drawn as
/// simulated).
pub fn display_refinement(m: usize) -> usize {
    48usize.div_ceil(m.max(1)).clamp(1, 4)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Vec3;
    use std::f32::consts::TAU;

    /// A tube of m rings of n rows, radius 1, rows 0.3 apart.
    fn tube(m: usize, n: usize) -> Vec<Vec3> {
        (0..m * n)
            .map(|k| {
                let (i, j) = (k % m, k / m);
                let a = TAU * i as f32 / m as f32;
                Vec3::new(a.cos(), 0.3 * j as f32, -a.sin())
            })
            .collect()
    }

    #[test]
    fn the_refined_grid_passes_through_every_simulated_point() {
        let (m, n, s) = (7, 5, 3);
        let p: Vec<Vec3> = tube(m, n)
            .iter()
            .enumerate()
            .map(|(k, x)| *x + Vec3::splat(0.05 * (k as f32 * 1.7).sin()))
            .collect();
        let q = refine(m, n, &p, s);
        let (big_m, big_n) = refined_size(m, n, s);
        assert_eq!(q.len(), big_m * big_n);
        for j in 0..n {
            for i in 0..m {
                let d = q[j * s * big_m + i * s] - p[j * m + i];
                assert!(d.length() < 1e-6, "({i}, {j}) moved {d}");
            }
        }
    }

    #[test]
    fn a_coarse_ring_refines_onto_its_circle() {
        // Linear interpolation cuts the corners of a 12-gon by 1 − cos(π/12)
        // = 3.4 % of the radius; the spline stays within a fraction of that.
        let (m, n, s) = (12, 3, 4);
        let q = refine(m, n, &tube(m, n), s);
        let worst = q
            .iter()
            .map(|x| (Vec3::new(x.x, 0.0, x.z).length() - 1.0).abs())
            .fold(0.0f32, f32::max);
        let linear = 1.0 - (std::f32::consts::PI / m as f32).cos();
        assert!(worst < 0.15 * linear, "{worst} vs linear {linear}");
    }

    #[test]
    fn straight_lines_up_stay_straight_and_evenly_spaced() {
        // Along a row of evenly spaced rows the clamped ends add no bulge.
        let (m, n, s) = (6, 4, 2);
        let q = refine(m, n, &tube(m, n), s);
        let (big_m, big_n) = refined_size(m, n, s);
        for j in 0..big_n {
            let y = q[j * big_m].y;
            assert!((y - 0.15 * j as f32).abs() < 1e-5, "row {j} at {y}");
        }
    }

    #[test]
    fn scalars_refine_like_positions() {
        let (m, n) = (4, 3);
        let f: Vec<f32> = (0..m * n).map(|k| k as f32).collect();
        let q = refine(m, n, &f, 2);
        assert_eq!(q.len(), 8 * 5);
        assert_eq!(q[0], 0.0);
        assert_eq!(q[2 * 8 + 2], f[m + 1]);
        assert_eq!(refine(m, n, &f, 1), f);
    }

    #[test]
    fn coarse_skins_get_enough_points_around() {
        assert_eq!(display_refinement(16), 3);
        assert_eq!(display_refinement(8), 4);
        assert_eq!(display_refinement(64), 1);
        assert!(16 * display_refinement(16) >= 48);
    }
}
