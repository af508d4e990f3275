//! Changing a skin's resolution (LEMAN §6.5, "Increasing the Surface
//! Resolution"): every per-point value of the mesh — velocity, densities, rest
//! metric and curvature, elasticities, fat, connective tissue — is bilinearly
//! interpolated in material coordinates to the new grid; positions (and the
//! boundary rings with them) cubically (Catmull–Rom), so that a refined skin
//! is as smooth as the surface it samples instead of a polygon with a kink at
//! every old point.
//!
//! # Mapping
//!
//! Material coordinates run over u1 ∈ \[0,1) around (periodic) and u2 ∈ \[0,1\]
//! from bottom to top. New point (i2, j2) of an m2×n2 grid sits at
//! u1 = i2/m2, u2 = j2/(n2−1). In old grid units that is x = u1·m between
//! columns ⌊x⌋ and ⌊x⌋+1 (mod m: the seam cell from column m−1 to column 0
//! interpolates across the seam, not back around the ring) and y = u2·(n−1)
//! between rows ⌊y⌋ and min(⌊y⌋+1, n−1). Both are computed in integer
//! arithmetic, so points whose u coincides with an old sample (all of them when
//! the resolution is unchanged; every other one when m or n−1 doubles) copy it
//! bit for bit, and rows 0 and n2−1 land exactly on the old boundary rows.
//!
//! # Why no rescaling
//!
//! Densities are per unit u-area and the rest metric and curvature are
//! expressed in u-units (see [`crate::skin::elastic`]), so all of them describe
//! the same continuum at any resolution and are interpolated as they are.
//!
//! # Shape
//!
//! Bilinear interpolation puts new points on the chords of the old polygon, so
//! an up-sampled ring of radius R shrinks slightly: new points lie at radii in
//! [R·cos(π/m), R]. That is what the paper does and it is harmless: the rest
//! metric is interpolated too, so the sag is an O(h²) change of the elastic
//! state, which the simulation relaxes. It is also not cumulative in a round
//! trip: sampling the piecewise-bilinear surface back at the old points only
//! mixes chord points next to each old sample, so resampling up and then down
//! reproduces the old grid exactly when the grids are nested and to within
//! ρ/4 of the old second differences (ρ ≤ 1: the intermediate spacing in old
//! grid units) otherwise — a small fraction of the grid spacing (tested).
//!
//! # Connective tissue
//!
//! A band is attached to a muscle and carries an anchor in that muscle's frame,
//! so anchors of different muscles cannot be averaged. The rule: if every
//! contributing corner (non-zero weight) has a band on the same muscle, the new
//! point gets a band on that muscle whose anchor, ks, kd and rest length are
//! interpolated; otherwise (mixed muscles, or some corners without a band) it
//! takes the band of the corner with the largest weight, `None` included. Ties
//! go to the first corner in the order (i0,j0), (i0+1,j0), (i0,j0+1),
//! (i0+1,j0+1), which keeps the result deterministic.

use crate::character::{Band, Skin, SkinPoints};
use glam::Vec3;

/// Returns a copy of `skin` resampled to m×n points, every per-point field and
/// the boundary rings bilinearly interpolated in material coordinates (see the
/// module documentation for the mapping and the band rule). Name and joints are
/// copied. Refuses resolutions outside `Skin::MIN_M`×`Skin::MIN_N` ..
/// `Skin::MAX_POINTS`, and a source skin whose arrays do not match its own
/// resolution.
pub fn resample(skin: &Skin, m: usize, n: usize) -> Result<Skin, ResampleError> {
    let too_many = m.checked_mul(n).is_none_or(|c| c > Skin::MAX_POINTS);
    if m < Skin::MIN_M || n < Skin::MIN_N || too_many {
        return Err(ResampleError::Resolution {
            skin: skin.name.clone(),
            m,
            n,
        });
    }
    check_source(skin)?;

    let cols = periodic_axis(skin.m, m);
    let rows = clamped_axis(skin.n, n);
    let src = &skin.points;
    let count = m * n;
    let mut out = SkinPoints {
        position: Vec::with_capacity(count),
        velocity: Vec::with_capacity(count),
        mass_density: Vec::with_capacity(count),
        damping_density: Vec::with_capacity(count),
        rest_metric: Vec::with_capacity(count),
        rest_curvature: Vec::with_capacity(count),
        stretch: Vec::with_capacity(count),
        bend: Vec::with_capacity(count),
        fat: Vec::with_capacity(count),
        band: Vec::with_capacity(count),
        color: Vec::with_capacity(if src.color.is_empty() { 0 } else { count }),
    };
    for row in &rows {
        let row_w = cubic_rows(skin.n, *row);
        for col in &cols {
            let c = Corners::new(skin.m, *col, *row);
            let col_w = cubic_cols(skin.m, *col);
            out.position
                .push(mix_cubic(&col_w, &row_w, skin.m, &src.position));
            out.velocity.push(c.vec3(&src.velocity));
            out.mass_density.push(c.scalar(&src.mass_density));
            out.damping_density.push(c.scalar(&src.damping_density));
            out.rest_metric.push(c.triple(&src.rest_metric));
            out.rest_curvature.push(c.triple(&src.rest_curvature));
            out.stretch.push(c.triple(&src.stretch));
            out.bend.push(c.scalar(&src.bend));
            out.fat.push(c.scalar(&src.fat));
            out.band.push(c.band(&src.band));
            if !src.color.is_empty() {
                // A convex blend of colours in [0, 1] stays in it (but for rounding).
                out.color
                    .push(c.triple(&src.color).map(|x| x.clamp(0.0, 1.0)));
            }
        }
    }

    // The rings in the joints' frames: interpolated along the ring only, with
    // the same column weights as the grid, so they agree with the new boundary
    // rows (the joint transforms are affine and commute with interpolation).
    let (bottom, top) = skin.boundary_local.split_at(skin.m);
    let ring = |r: &[Vec3]| {
        cols.iter()
            .map(|&col| mix(&cubic_cols(skin.m, col), |k| r[k].as_dvec3()).as_vec3())
            .collect::<Vec<_>>()
    };
    let mut boundary_local = ring(bottom);
    boundary_local.extend(ring(top));

    Ok(Skin {
        name: skin.name.clone(),
        bottom_joint: skin.bottom_joint,
        top_joint: skin.top_joint,
        m,
        n,
        boundary_local,
        muscles: skin.muscles.clone(),
        points: out,
    })
}

/// Array lengths of the source must match its resolution (the interpolation
/// indexes them); values are not checked: a convex combination of valid values
/// is valid.
fn check_source(skin: &Skin) -> Result<(), ResampleError> {
    let p = &skin.points;
    let count = skin.m.saturating_mul(skin.n);
    let bad = skin.m < 1
        || skin.n < 2
        || skin.boundary_local.len() != 2 * skin.m
        || [
            p.position.len(),
            p.velocity.len(),
            p.mass_density.len(),
            p.damping_density.len(),
            p.rest_metric.len(),
            p.rest_curvature.len(),
            p.stretch.len(),
            p.bend.len(),
            p.fat.len(),
            p.band.len(),
        ]
        .iter()
        .any(|&len| len != count);
    if bad {
        return Err(ResampleError::Arrays {
            skin: skin.name.clone(),
            m: skin.m,
            n: skin.n,
        });
    }
    Ok(())
}

/// Why a skin cannot be resampled.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ResampleError {
    /// The resolution asked for is outside what a skin may have.
    #[error(
        "cannot resample skin '{skin}' to {m}x{n}: the resolution must be at least {min_m}x{min_n} \
         and at most {max} points",
        min_m = Skin::MIN_M,
        min_n = Skin::MIN_N,
        max = Skin::MAX_POINTS
    )]
    Resolution {
        /// The skin's name.
        skin: String,
        /// Points around asked for.
        m: usize,
        /// Rows asked for.
        n: usize,
    },
    /// The source skin's arrays do not match its own resolution.
    #[error("cannot resample skin '{skin}': its arrays do not match its {m}x{n} resolution")]
    Arrays {
        /// The skin's name.
        skin: String,
        /// Its points around.
        m: usize,
        /// Its rows.
        n: usize,
    },
}

/// For each new column: the old columns either side (periodic) and the weight
/// of the second, from x = i2·m/m2 in exact integer arithmetic.
fn periodic_axis(old: usize, new: usize) -> Vec<(usize, usize, f64)> {
    (0..new)
        .map(|i2| {
            let p = i2 * old;
            let lo = p / new;
            (lo, (lo + 1) % old, (p % new) as f64 / new as f64)
        })
        .collect()
}

/// For each new row: the old rows either side (clamped at the top) and the
/// weight of the second, from y = j2·(n−1)/(n2−1).
fn clamped_axis(old: usize, new: usize) -> Vec<(usize, usize, f64)> {
    (0..new)
        .map(|j2| {
            let p = j2 * (old - 1);
            let lo = p / (new - 1);
            (
                lo,
                (lo + 1).min(old - 1),
                (p % (new - 1)) as f64 / (new - 1) as f64,
            )
        })
        .collect()
}

/// The contributing corners of one new point: old indices with non-zero
/// bilinear weights, in the order (i0,j0), (i1,j0), (i0,j1), (i1,j1).
struct Corners {
    k: [(usize, f64); 4],
    len: usize,
}

impl Corners {
    fn new(m: usize, (i0, i1, s): (usize, usize, f64), (j0, j1, t): (usize, usize, f64)) -> Self {
        let all = [
            (j0 * m + i0, (1.0 - s) * (1.0 - t)),
            (j0 * m + i1, s * (1.0 - t)),
            (j1 * m + i0, (1.0 - s) * t),
            (j1 * m + i1, s * t),
        ];
        let mut k = [(0, 0.0); 4];
        let mut len = 0;
        for c in all.into_iter().filter(|c| c.1 > 0.0) {
            k[len] = c;
            len += 1;
        }
        Self { k, len }
    }

    fn list(&self) -> &[(usize, f64)] {
        &self.k[..self.len]
    }

    fn scalar(&self, v: &[f32]) -> f32 {
        mix(self.list(), |k| f64::from(v[k])) as f32
    }

    fn vec3(&self, v: &[Vec3]) -> Vec3 {
        mix(self.list(), |k| v[k].as_dvec3()).as_vec3()
    }

    fn triple(&self, v: &[[f32; 3]]) -> [f32; 3] {
        self.vec3_of(|k| Vec3::from_array(v[k])).to_array()
    }

    fn vec3_of(&self, f: impl Fn(usize) -> Vec3) -> Vec3 {
        mix(self.list(), |k| f(k).as_dvec3()).as_vec3()
    }

    /// The band rule of the module documentation.
    fn band(&self, v: &[Option<Band>]) -> Option<Band> {
        let corners = self.list();
        let first = v[corners[0].0];
        let same = |b: &Band| {
            corners
                .iter()
                .all(|&(k, _)| v[k].is_some_and(|c| c.muscle == b.muscle))
        };
        if let Some(first) = first.filter(same) {
            let b = |k: usize| v[k].expect("checked above");
            return Some(Band {
                muscle: first.muscle,
                anchor: self.vec3_of(|k| b(k).anchor),
                ks: mix(corners, |k| f64::from(b(k).ks)) as f32,
                kd: mix(corners, |k| f64::from(b(k).kd)) as f32,
                rest_length: mix(corners, |k| f64::from(b(k).rest_length)) as f32,
            });
        }
        let mut best = corners[0];
        for &c in &corners[1..] {
            if c.1 > best.1 {
                best = c;
            }
        }
        v[best.0]
    }
}

/// Catmull–Rom weights of the samples at −1, 0, 1, 2 for a point at s ∈ [0, 1).
fn catmull_rom(s: f64) -> [f64; 4] {
    let (s2, s3) = (s * s, s * s * s);
    [
        0.5 * (-s3 + 2.0 * s2 - s),
        0.5 * (3.0 * s3 - 5.0 * s2 + 2.0),
        0.5 * (-3.0 * s3 + 4.0 * s2 + s),
        0.5 * (s3 - s2),
    ]
}

/// Cubic (Catmull–Rom) weights of the old columns for a new column, around
/// the ring; a point on an old column copies it.
fn cubic_cols(m: usize, (lo, _, s): (usize, usize, f64)) -> Vec<(usize, f64)> {
    if s == 0.0 {
        return vec![(lo, 1.0)];
    }
    let w = catmull_rom(s);
    (0..4).map(|q| ((lo + m + q - 1) % m, w[q])).collect()
}

/// Cubic weights of the old rows for a new row; past the ends the grid is
/// continued linearly (ghost row 2r₀ − r₁), so the boundary rows stay put.
fn cubic_rows(n: usize, (lo, _, t): (usize, usize, f64)) -> Vec<(usize, f64)> {
    if t == 0.0 {
        return vec![(lo, 1.0)];
    }
    let w = catmull_rom(t);
    let mut out: Vec<(usize, f64)> = Vec::with_capacity(6);
    let mut add = |row: isize, weight: f64| {
        let (row, weight) = (row, weight);
        let last = n as isize - 1;
        let terms: [(isize, f64); 2] = if row < 0 {
            [(0, 2.0 * weight), (1, -weight)]
        } else if row > last {
            [(last, 2.0 * weight), (last - 1, -weight)]
        } else {
            [(row, weight), (row, 0.0)]
        };
        for (r, w) in terms {
            if w != 0.0 {
                match out.iter_mut().find(|e| e.0 == r as usize) {
                    Some(e) => e.1 += w,
                    None => out.push((r as usize, w)),
                }
            }
        }
    };
    for (q, wq) in w.iter().enumerate() {
        add(lo as isize + q as isize - 1, *wq);
    }
    out
}

/// The tensor-product cubic interpolation of `v` with column and row weights.
fn mix_cubic(cols: &[(usize, f64)], rows: &[(usize, f64)], m: usize, v: &[Vec3]) -> Vec3 {
    let mut acc = glam::DVec3::ZERO;
    for &(j, wj) in rows {
        for &(i, wi) in cols {
            acc += v[j * m + i].as_dvec3() * (wi * wj);
        }
    }
    acc.as_vec3()
}

/// Σ w·f(k) in f64, so a single corner of weight 1 is copied exactly.
fn mix<T>(corners: &[(usize, f64)], f: impl Fn(usize) -> T) -> T
where
    T: std::ops::Mul<f64, Output = T> + std::ops::Add<Output = T>,
{
    let (k0, w0) = corners[0];
    corners[1..]
        .iter()
        .fold(f(k0) * w0, |acc, &(k, w)| acc + f(k) * w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f32::consts::TAU;

    const R: f32 = 0.3;

    /// A cylinder of radius R and height 1 running counter-clockwise about +y,
    /// every field a distinct smooth function of (φ, z) so that any indexing
    /// mistake shows; bands on rows 1..n−2, on muscle 0 for the first half of
    /// the columns and muscle 1 for the second.
    fn cylinder(m: usize, n: usize) -> Skin {
        let mut p = SkinPoints::default();
        for j in 0..n {
            let z = j as f32 / (n - 1) as f32;
            for i in 0..m {
                let phi = TAU * i as f32 / m as f32;
                let (s, c) = phi.sin_cos();
                let pos = Vec3::new(R * c, z, -R * s);
                p.position.push(pos);
                p.velocity.push(Vec3::new(0.1 * s, 0.2 * z, 0.05 * c * z));
                p.mass_density.push(1.0 + 0.3 * c + 0.5 * z);
                p.damping_density.push(0.2 + 0.1 * s + 0.05 * z * z);
                p.rest_metric
                    .push([(TAU * R).powi(2) * (1.0 + 0.1 * z), 0.01 * s, 1.0 + 0.2 * c]);
                p.rest_curvature.push([
                    -TAU * TAU * R + 0.1 * z,
                    0.02 * c,
                    0.03 * (2.0 * phi).sin(),
                ]);
                p.stretch
                    .push([0.02 + 0.01 * z, 0.01 + 0.005 * c, 0.03 + 0.01 * s]);
                p.bend.push(1e-3 * (1.0 + 0.5 * z + 0.2 * c));
                p.fat.push(0.01 + 0.005 * z + 0.003 * s);
                p.band.push((j > 0 && j + 1 < n).then(|| Band {
                    muscle: usize::from(i >= m / 2),
                    anchor: 0.9 * pos + Vec3::new(0.0, 0.01 * c, 0.0),
                    ks: 4.0 + z + 0.5 * s,
                    kd: 0.05 + 0.01 * c,
                    rest_length: 0.02 + 0.01 * z,
                }));
            }
        }
        let ring = |j: usize| p.position[j * m..(j + 1) * m].to_vec();
        let mut boundary_local = ring(0);
        boundary_local.extend(ring(n - 1));
        let skin = Skin {
            name: "cylinder".into(),
            bottom_joint: 0,
            top_joint: 1,
            m,
            n,
            boundary_local,
            muscles: vec![0, 1],
            points: p,
        };
        skin.validate(2, 2).expect("test skin is valid");
        skin
    }

    /// The numeric per-point fields of point k, flattened (20 scalars).
    fn fields(s: &Skin, k: usize) -> Vec<f32> {
        let p = &s.points;
        let mut v = Vec::with_capacity(20);
        v.extend(p.position[k].to_array());
        v.extend(p.velocity[k].to_array());
        v.push(p.mass_density[k]);
        v.push(p.damping_density[k]);
        v.extend(p.rest_metric[k]);
        v.extend(p.rest_curvature[k]);
        v.extend(p.stretch[k]);
        v.push(p.bend[k]);
        v.push(p.fat[k]);
        v
    }

    /// A band's numeric values (6 scalars).
    fn band_fields(b: &Band) -> Vec<f32> {
        let mut v = b.anchor.to_array().to_vec();
        v.extend([b.ks, b.kd, b.rest_length]);
        v
    }

    /// Per component, the largest |first difference| and |second difference|
    /// along i (periodic) and along j, over the points where `get` is defined.
    fn differences(
        s: &Skin,
        get: impl Fn(usize) -> Option<Vec<f32>>,
    ) -> ([Vec<f32>; 2], [Vec<f32>; 2]) {
        let (m, n) = (s.m, s.n);
        let len = (0..m * n).find_map(&get).unwrap().len();
        let mut d1 = [vec![0f32; len], vec![0f32; len]];
        let mut d2 = [vec![0f32; len], vec![0f32; len]];
        let update = |d: &mut Vec<f32>, v: Vec<f32>| {
            for (a, b) in d.iter_mut().zip(v) {
                *a = a.max(b.abs());
            }
        };
        for j in 0..n {
            for i in 0..m {
                let at = |i: usize, j: usize| get(j * m + i);
                let (l, r) = ((i + m - 1) % m, (i + 1) % m);
                if let (Some(a), Some(b)) = (at(i, j), at(r, j)) {
                    update(&mut d1[0], a.iter().zip(&b).map(|(a, b)| b - a).collect());
                }
                if let (Some(a), Some(b), Some(c)) = (at(l, j), at(i, j), at(r, j)) {
                    update(
                        &mut d2[0],
                        (0..len).map(|q| a[q] - 2.0 * b[q] + c[q]).collect(),
                    );
                }
                if j + 1 < n
                    && let (Some(a), Some(b)) = (at(i, j), at(i, j + 1))
                {
                    update(&mut d1[1], a.iter().zip(&b).map(|(a, b)| b - a).collect());
                }
                if j > 0
                    && j + 1 < n
                    && let (Some(a), Some(b), Some(c)) = (at(i, j - 1), at(i, j), at(i, j + 1))
                {
                    update(
                        &mut d2[1],
                        (0..len).map(|q| a[q] - 2.0 * b[q] + c[q]).collect(),
                    );
                }
            }
        }
        (d1, d2)
    }

    #[test]
    fn same_resolution_is_the_identity() {
        for (m, n) in [(16, 16), (12, 9), (5, 4)] {
            let s = cylinder(m, n);
            let r = resample(&s, m, n).unwrap();
            // Exact, every field: Skin's PartialEq compares them all.
            assert_eq!(r, s, "{m}x{n}");
        }
    }

    #[test]
    fn nested_up_then_down_is_exact() {
        // m doubles and n−1 doubles (15 → 30), so every old sample is a new
        // sample and comes back bit for bit.
        let s = cylinder(16, 16);
        let up = resample(&s, 32, 31).unwrap();
        up.validate(2, 2).unwrap();
        let back = resample(&up, 16, 16).unwrap();
        assert_eq!(back, s);
        // And 31×31 (columns not nested): rows still exact, and the result is
        // close (checked in detail by the non-nested test).
        let back = resample(&resample(&s, 31, 31).unwrap(), 16, 16).unwrap();
        for k in 0..s.point_count() {
            assert!(back.points.position[k].distance(s.points.position[k]) < 0.01);
            assert_eq!(back.points.position[k].y, s.points.position[k].y);
        }
    }

    #[test]
    fn non_nested_up_then_down_is_close() {
        let s = cylinder(16, 16);
        let (m2, n2) = (40, 37);
        let up = resample(&s, m2, n2).unwrap();
        up.validate(2, 2).unwrap();
        let back = resample(&up, 16, 16).unwrap();
        back.validate(2, 2).unwrap();
        assert_eq!((back.m, back.n, &back.name), (16, 16, &s.name));

        // Re-interpolating the piecewise-bilinear surface at an old node, from
        // intermediate points at distances a before and b after it, errs by
        // ab/(a+b)·Δ² ≤ ρ/4·|Δ²| per axis, ρ the intermediate spacing in old
        // grid units; plus f32 rounding.
        let rho = [16.0 / m2 as f32, 15.0 / (n2 - 1) as f32];
        let (_, d2) = differences(&s, |k| Some(fields(&s, k)));
        let mut worst_pos = 0f32;
        for k in 0..s.point_count() {
            let (a, b) = (fields(&s, k), fields(&back, k));
            for q in 0..a.len() {
                let tol =
                    rho[0] / 4.0 * d2[0][q] + rho[1] / 4.0 * d2[1][q] + 1e-6 * (1.0 + a[q].abs());
                let err = (a[q] - b[q]).abs();
                assert!(
                    err <= tol,
                    "point {k} field {q}: {} vs {} (tol {tol})",
                    a[q],
                    b[q]
                );
            }
            worst_pos = worst_pos.max(back.points.position[k].distance(s.points.position[k]));
        }
        // Small relative to the grid spacing (the chord 2R·sin(π/16) ≈ 0.117):
        // the ring's second difference is 2R(1 − cos(π/8)) ≈ 0.046 and
        // ρ/4 ≈ 0.1, so about 0.0046, 4% of the spacing.
        let spacing = 2.0 * R * (std::f32::consts::PI / 16.0).sin();
        assert!(
            worst_pos < 0.05 * spacing,
            "{worst_pos} vs spacing {spacing}"
        );
        assert!(worst_pos > 0.0, "non-nested grids cannot be exact");

        // Boundary rings: 1-D re-interpolation along each ring.
        for (k, (a, b)) in s
            .boundary_local
            .iter()
            .zip(&back.boundary_local)
            .enumerate()
        {
            assert!(
                a.distance(*b) <= rho[0] / 4.0 * 2.0 * R * (1.0 - (TAU / 16.0).cos()) + 1e-6,
                "{k}"
            );
        }

        // Bands: same presence and muscle; values within the interpolation
        // tolerance plus, where the rule copied the nearest corner instead of
        // interpolating (next to boundary rows and muscle changes), half a
        // neighbour difference per axis.
        let (bd1, bd2) = differences(&s, |k| s.points.band[k].as_ref().map(band_fields));
        for k in 0..s.point_count() {
            match (&s.points.band[k], &back.points.band[k]) {
                (None, None) => {}
                (Some(a), Some(b)) => {
                    assert_eq!(a.muscle, b.muscle, "point {k}");
                    let (a, b) = (band_fields(a), band_fields(b));
                    for q in 0..a.len() {
                        let tol = rho[0] / 4.0 * bd2[0][q]
                            + rho[1] / 4.0 * bd2[1][q]
                            + 0.5 * (bd1[0][q] + bd1[1][q])
                            + 1e-6 * (1.0 + a[q].abs());
                        assert!(
                            (a[q] - b[q]).abs() <= tol,
                            "band {k} field {q}: {} vs {}",
                            a[q],
                            b[q]
                        );
                    }
                }
                (a, b) => panic!("point {k}: band {a:?} became {b:?}"),
            }
        }
    }

    #[test]
    fn upsampled_ring_only_sags_onto_chords() {
        let s = cylinder(16, 16);
        let up = resample(&s, 40, 37).unwrap();
        let lo = R * (std::f32::consts::PI / 16.0).cos();
        let mut shrunk = false;
        for p in up.points.position.iter().chain(&up.boundary_local) {
            let r = (p.x * p.x + p.z * p.z).sqrt();
            assert!(r >= lo - 1e-6 && r <= R + 1e-6, "radius {r}");
            shrunk |= r < R - 1e-4;
        }
        assert!(
            shrunk,
            "bilinear interpolation of a ring puts points on chords"
        );
    }

    #[test]
    fn bilinear_fields_are_reproduced() {
        let (m, n) = (16, 16);
        let mut s = cylinder(m, n);
        let f = |u1: f32, u2: f32| 0.02 + 0.01 * u2 + 0.004 * u1 + 0.03 * u1 * u2;
        for j in 0..n {
            for i in 0..m {
                let (u1, u2) = (i as f32 / m as f32, j as f32 / (n - 1) as f32);
                s.points.fat[j * m + i] = f(u1, u2);
                s.points.mass_density[j * m + i] = 1.0 + 2.0 * u2;
            }
        }
        let (m2, n2) = (40, 37);
        let up = resample(&s, m2, n2).unwrap();
        let mut checked = 0;
        for j2 in 0..n2 {
            for i2 in 0..m2 {
                let (u1, u2) = (i2 as f32 / m2 as f32, j2 as f32 / (n2 - 1) as f32);
                let k = j2 * m2 + i2;
                // Height is linear in u2 everywhere, the seam included.
                assert!((up.points.position[k].y - u2).abs() < 1e-6, "({i2},{j2})");
                assert!((up.points.mass_density[k] - (1.0 + 2.0 * u2)).abs() < 1e-6);
                // f is bilinear in every cell except the seam cell, where it
                // jumps from u1 = (m−1)/m back to 0.
                if u1 <= (m - 1) as f32 / m as f32 {
                    let (got, want) = (up.points.fat[k], f(u1, u2));
                    assert!((got - want).abs() < 1e-6, "({i2},{j2}): {got} vs {want}");
                    checked += 1;
                }
            }
        }
        assert!(checked > m2 * n2 * 9 / 10);
    }

    #[test]
    fn seam_interpolates_across_not_around() {
        let (m, n) = (16, 8);
        let mut s = cylinder(m, n);
        for j in 0..n {
            for i in 0..m {
                s.points.fat[j * m + i] = if i == m - 1 { 1.0 } else { 0.0 };
            }
        }
        let (m2, n2) = (40, 15);
        let up = resample(&s, m2, n2).unwrap();
        let mut seen = 0;
        for i2 in 0..m2 {
            let x = i2 as f32 * m as f32 / m2 as f32;
            if x <= (m - 1) as f32 {
                continue;
            }
            // In the seam cell from column m−1 (x = m−1) to column 0 (x = m).
            let t = x - (m - 1) as f32;
            for j2 in 0..n2 {
                let k = j2 * m2 + i2;
                assert!((up.points.fat[k] - (1.0 - t)).abs() < 1e-5, "({i2},{j2})");
                // On the cylinder (cubic interpolation of a circle), at the
                // angle between the two seam columns: across the seam.
                let p = up.points.position[k];
                let radius = (p.x * p.x + p.z * p.z).sqrt();
                assert!(
                    (radius - R).abs() < 2e-3 * R,
                    "({i2},{j2}) off the circle: {radius}"
                );
                let angle = (-p.z).atan2(p.x).rem_euclid(TAU);
                let expect = TAU * x / m as f32;
                assert!(
                    (angle - expect).abs() < 1e-2,
                    "({i2},{j2}) at {angle}, not {expect}"
                );
                assert!(
                    (p.x * p.x + p.z * p.z).sqrt() > 0.9 * R,
                    "({i2},{j2}) fell inside"
                );
            }
            for ring in 0..2 {
                let (a, b) = (
                    s.boundary_local[ring * m + m - 1],
                    s.boundary_local[ring * m],
                );
                let got = up.boundary_local[ring * m2 + i2];
                // Between the seam columns and bulging out of their chord
                // as a circle does (the rings are interpolated like the grid).
                let chord = a.lerp(b, t);
                assert!(
                    got.distance(chord) < 0.05 * a.distance(b),
                    "ring {ring} column {i2}"
                );
                assert_eq!(
                    got,
                    up.points.position[ring * (n2 - 1) * m2 + i2],
                    "ring {ring} matches its row"
                );
            }
            seen += 1;
        }
        assert_eq!(
            seen, 2,
            "40/16 puts two new columns strictly inside the seam cell"
        );
    }

    /// Checks every new point of `s` resampled to m2×n2 against the band rule,
    /// with corners and weights recomputed independently in floats.
    fn check_band_rule(s: &Skin, m2: usize, n2: usize) {
        let (m, n) = (s.m, s.n);
        let up = resample(s, m2, n2).unwrap();
        up.validate(2, 2).unwrap();
        let (mut interpolated, mut picked, mut none) = (0, 0, 0);
        for j2 in 0..n2 {
            for i2 in 0..m2 {
                // Corners and weights recomputed independently, in floats.
                let x = i2 as f64 * m as f64 / m2 as f64;
                let y = j2 as f64 * (n - 1) as f64 / (n2 - 1) as f64;
                let (i0, j0) = (x.floor() as usize, y.floor() as usize);
                let (s1, t1) = (x - i0 as f64, y - j0 as f64);
                let mut corners = vec![];
                for (di, wi) in [(0, 1.0 - s1), (1, s1)] {
                    for (dj, wj) in [(0, 1.0 - t1), (1, t1)] {
                        if wi * wj > 1e-9 {
                            let k = (j0 + dj).min(n - 1) * m + (i0 + di) % m;
                            corners.push((s.points.band[k], wi * wj));
                        }
                    }
                }
                let got = up.points.band[j2 * m2 + i2];
                let muscle = corners[0].0.map(|b| b.muscle);
                let same =
                    muscle.is_some() && corners.iter().all(|c| c.0.map(|b| b.muscle) == muscle);
                if same {
                    let got = got.expect("same-muscle corners give a band");
                    assert_eq!(Some(got.muscle), muscle);
                    let want = corners.iter().fold(vec![0.0; 6], |acc, (b, w)| {
                        let v = band_fields(b.as_ref().unwrap());
                        acc.iter()
                            .zip(v)
                            .map(|(a, v)| a + f64::from(v) * w)
                            .collect()
                    });
                    for (g, w) in band_fields(&got).iter().zip(&want) {
                        assert!((f64::from(*g) - w).abs() < 1e-5, "({i2},{j2}): {g} vs {w}");
                    }
                    interpolated += 1;
                } else {
                    // Exactly one of the largest-weight corners' bands (ties
                    // are possible: 37 rows put some points half-way).
                    let wmax = corners.iter().map(|c| c.1).fold(0.0, f64::max);
                    assert!(
                        corners.iter().any(|c| c.1 > wmax - 1e-9 && c.0 == got),
                        "({i2},{j2}): {got:?} is not a nearest corner's band"
                    );
                    if got.is_some() {
                        picked += 1;
                    } else {
                        none += 1;
                    }
                }
            }
        }
        // All three cases occur: interior cells, the muscle changes at columns
        // 8 and 0, and the cells next to the boundary rows.
        assert!(
            interpolated > 0 && picked > 0 && none >= 2 * m2,
            "{interpolated} {picked} {none}"
        );
    }

    #[test]
    fn band_rule_interpolates_one_muscle_and_picks_the_nearest_otherwise() {
        let (m, n) = (16, 16);
        let s = cylinder(m, n);
        // 40×37: no new column on an old one, ties in rows; 32×22: new columns
        // on the old ones, where a zero-weight neighbour on another muscle
        // must not stop the interpolation along j.
        for (m2, n2) in [(40, 37), (32, 22)] {
            check_band_rule(&s, m2, n2);
        }
        let (m2, n2) = (40, 37);
        let up = resample(&s, m2, n2).unwrap();
        // A point in the muscle-change cell (x = 7.6, between columns 7 and 8
        // on muscles 0 and 1) copies column 8's band exactly.
        let (i2, j2) = (19, 18); // x = 19·16/40 = 7.6, y = 18·15/36 = 7.5
        let k = j2 * m2 + i2;
        let want = [7 * m + 8, 8 * m + 8].map(|k| s.points.band[k]);
        assert!(want.contains(&up.points.band[k]), "{:?}", up.points.band[k]);
        assert_eq!(up.points.band[k].unwrap().muscle, 1);
        // Tie (t = 0.5) goes to the first corner, row 7.
        assert_eq!(up.points.band[k], want[0]);
    }

    #[test]
    fn invalid_resolutions_are_refused() {
        let s = cylinder(8, 8);
        for (m, n) in [(3, 16), (16, 3), (0, 0), (4096, 2048), (usize::MAX, 2)] {
            let e = resample(&s, m, n).unwrap_err();
            let want = ResampleError::Resolution {
                skin: s.name.clone(),
                m,
                n,
            };
            assert_eq!(e, want);
            assert!(e.to_string().contains(&format!("{m}x{n}")), "{e}");
        }
        let mut broken = s.clone();
        broken.points.fat.pop();
        let e = resample(&broken, 8, 8).unwrap_err();
        let want = ResampleError::Arrays {
            skin: s.name.clone(),
            m: 8,
            n: 8,
        };
        assert_eq!(e, want);
        assert!(e.to_string().contains("8x8"), "{e}");
    }
}
