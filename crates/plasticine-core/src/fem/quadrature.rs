//! Integrating only where the object is (Capell §3.3): a lattice cell that
//! the object's surface cuts gets its integrals (mass, gravity, stiffness,
//! and the nonlinear energy) from the part of the cell inside the object.
//!
//! Following §3.3's steps, each cell is subdivided `levels` times (2^levels
//! sub-cells per axis, step 1) and the sub-cells inside the object are kept,
//! those outside neglected (step 4). The paper then integrates piecewise
//! linear approximations of the basis over tetrahedra of the sub-cells; here
//! the integrals over the union U of kept sub-cells are **exact**: every
//! integrand of the trilinear basis is a polynomial of degree ≤ 4 per axis
//! (φφ: 2, ∂φ∂φ: 2, the St. Venant–Kirchhoff energy: 4), so it is enough to
//! know the moments `∫_U x^i y^j z^k`, i, j, k ≤ 4, and these are sums over
//! boxes. The moments are fitted by a fixed tensor rule of 5 × 5 × 5 Gauss–
//! Legendre nodes whose weights solve the moment equations (moment-fitted
//! quadrature): 125 points per cut cell, whatever the subdivision level,
//! exact for all those integrands over U. (Some weights may be negative;
//! the rule still integrates the non-negative energy density exactly, so a
//! cell's energy stays ≥ 0.)
//!
//! A sub-cell is inside when its centre is ([`SubcellTest::Centre`], the
//! midpoint rule: unbiased, the volume error falls like the sub-cell size or
//! faster), or when any of its corners is ([`SubcellTest::AnyCorner`], the
//! hexahedral form of the paper's "neglect a tetrahedron only if all its
//! vertices fall outside": conservative, it over-counts a surface layer one
//! sub-cell thick).
//!
//! Cells wholly inside share the full-cell element; cells with nothing
//! inside carry nothing, and [`trim_to_object`] removes them from the
//! lattice (their vertices would have neither mass nor stiffness). Under
//! the centre test, a cell that no sub-cell centre finds inside falls back
//! on the any-corner test, so a cell the object only grazes keeps the
//! sub-cells it touches rather than vanishing from under the flesh.

use super::element::{CellElements, HexElement, QuadraturePoint, gauss_points};
use super::hierarchy::Hierarchy;
use super::lattice::{Lattice, LatticeSettings};
use super::snap::conform_elements;
use crate::character::Character;
use crate::kinematics::PosedBody;
use glam::DVec3;

/// How a sub-cell is judged inside the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubcellTest {
    /// Its centre is inside.
    Centre,
    /// Any of its eight corners is inside (the paper's conservative rule).
    AnyCorner,
}

/// Subdivision levels above this are refused (2^8 = 256 sub-cells per axis,
/// 16.7 million predicate calls per cell).
pub const MAX_LEVELS: u32 = 8;

/// Nodes of the moment-fitted rule: 5-point Gauss–Legendre on [0, 1].
const NODES: [f64; 5] = [
    0.5 - 0.453_089_922_969_332,
    0.5 - 0.269_234_655_052_841_6,
    0.5,
    0.5 + 0.269_234_655_052_841_6,
    0.5 + 0.453_089_922_969_332,
];

/// The inverse of the Vandermonde matrix `V[i][p] = t_p^i` of [`NODES`]:
/// the weights of the nodes for the moments (0..5) of one axis are
/// `w_p = Σ_i inv[p][i] m_i`.
fn vandermonde_inverse() -> [[f64; 5]; 5] {
    // Gauss–Jordan on [V | I].
    let mut a = [[0.0; 10]; 5];
    for (i, row) in a.iter_mut().enumerate() {
        for (p, t) in NODES.iter().enumerate() {
            row[p] = t.powi(i as i32);
        }
        row[5 + i] = 1.0;
    }
    for col in 0..5 {
        let pivot = (col..5)
            .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
            .expect("rows left");
        a.swap(col, pivot);
        let d = a[col][col];
        for v in a[col].iter_mut() {
            *v /= d;
        }
        for r in 0..5 {
            if r != col {
                let f = a[r][col];
                let pivot_row = a[col];
                for (v, pv) in a[r].iter_mut().zip(pivot_row) {
                    *v -= f * pv;
                }
            }
        }
    }
    // a = [I | V⁻¹], V⁻¹[i][p] maps node values to moments' inverse: rows
    // of V⁻¹ are indexed by node p.
    std::array::from_fn(|p| std::array::from_fn(|i| a[p][5 + i]))
}

/// `∫_a^b t^i dt` for i = 0..5.
fn interval_moments(a: f64, b: f64) -> [f64; 5] {
    std::array::from_fn(|i| {
        let e = i as i32 + 1;
        (b.powi(e) - a.powi(e)) / e as f64
    })
}

/// The moment-fitted rule of the union of the kept sub-cells of a cell
/// (`kept[ix][iy][iz]` flattened as `ix + k (iy + k iz)`), in local
/// coordinates, weights in volume (× the cell's volume `volume`).
pub fn moment_fitted_rule(kept: &[bool], per_axis: usize, volume: f64) -> Vec<QuadraturePoint> {
    let k = per_axis;
    assert_eq!(kept.len(), k * k * k, "one flag per sub-cell");
    let h = 1.0 / k as f64;
    let axis: Vec<[f64; 5]> = (0..k)
        .map(|i| interval_moments(i as f64 * h, (i + 1) as f64 * h))
        .collect();
    // m[i][j][l] = Σ_kept Ix_i Iy_j Iz_l, summed axis by axis.
    let mut m = [[[0.0; 5]; 5]; 5];
    for (ix, mx) in axis.iter().enumerate() {
        let mut myz = [[0.0; 5]; 5];
        for (iy, my) in axis.iter().enumerate() {
            let mut mz = [0.0; 5];
            let mut any = false;
            for (iz, mzz) in axis.iter().enumerate() {
                if kept[ix + k * (iy + k * iz)] {
                    any = true;
                    for l in 0..5 {
                        mz[l] += mzz[l];
                    }
                }
            }
            if any {
                for j in 0..5 {
                    for l in 0..5 {
                        myz[j][l] += my[j] * mz[l];
                    }
                }
            }
        }
        for i in 0..5 {
            for j in 0..5 {
                for l in 0..5 {
                    m[i][j][l] += mx[i] * myz[j][l];
                }
            }
        }
    }
    let inv = vandermonde_inverse();
    // w[p][q][r] = Σ inv[p][i] inv[q][j] inv[r][l] m[i][j][l], one axis at a time.
    let apply = |m: &[[[f64; 5]; 5]; 5], axis: usize| {
        let mut out = [[[0.0; 5]; 5]; 5];
        for a in 0..5 {
            for b in 0..5 {
                for c in 0..5 {
                    let mut s = 0.0;
                    for t in 0..5 {
                        s += match axis {
                            0 => inv[a][t] * m[t][b][c],
                            1 => inv[b][t] * m[a][t][c],
                            _ => inv[c][t] * m[a][b][t],
                        };
                    }
                    out[a][b][c] = s;
                }
            }
        }
        out
    };
    let w = apply(&apply(&apply(&m, 0), 1), 2);
    let mut points = Vec::with_capacity(125);
    for (p, tx) in NODES.iter().enumerate() {
        for (q, ty) in NODES.iter().enumerate() {
            for (r, tz) in NODES.iter().enumerate() {
                points.push(QuadraturePoint {
                    local: DVec3::new(*tx, *ty, *tz),
                    weight: w[p][q][r] * volume,
                });
            }
        }
    }
    points
}

/// Why the cells' integrals cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuadratureError {
    /// A subdivision of the cut cells deeper than [`MAX_LEVELS`].
    #[error("quadrature levels must be at most {max}, got {0}", max = MAX_LEVELS)]
    Levels(u32),
    /// A hierarchy whose fine lattice does not nest in its coarse one.
    #[error("a fine cell lies outside the coarse lattice")]
    FineCellOutside,
}

/// Refuses a subdivision deeper than [`MAX_LEVELS`].
fn check_levels(levels: u32) -> Result<(), QuadratureError> {
    if levels > MAX_LEVELS {
        return Err(QuadratureError::Levels(levels));
    }
    Ok(())
}

/// The elements of every cell of `lattice` for the object `inside` (a point
/// predicate on rest positions, world units): full cells share one
/// element, cut cells get their own from the sub-cells inside
/// (subdivided `levels` times), cells with nothing inside an empty one.
pub fn object_elements(
    lattice: &Lattice,
    inside: impl Fn(DVec3) -> bool,
    levels: u32,
    test: SubcellTest,
) -> Result<CellElements, QuadratureError> {
    check_levels(levels)?;
    let size = lattice.cell_size;
    let volume = size.element_product();
    let k = 1usize << levels;
    let full = HexElement::new(size);
    let mut own = Vec::with_capacity(lattice.cell_count());
    let mut partial = Vec::new();
    let mut kept = vec![false; k * k * k];
    let mut corner = vec![false; (k + 1) * (k + 1) * (k + 1)];
    for cell in &lattice.cells {
        // The grid box (a conformed lattice's elements are conformed after,
        // [`super::snap::conform_elements`]).
        let origin = lattice.grid_position(cell[0]);
        classify_cell(&inside, origin, size, k, test, &mut kept, &mut corner);
        let count = kept.iter().filter(|&&x| x).count();
        if count == kept.len() {
            own.push(None);
            continue;
        }
        let rule = if count == 0 {
            Vec::new()
        } else {
            moment_fitted_rule(&kept, k, volume)
        };
        own.push(Some(partial.len()));
        partial.push(HexElement::from_quadrature(size, rule));
    }
    Ok(CellElements { full, own, partial })
}

/// Which of the k³ sub-cells of the grid box at `origin` (edge lengths
/// `size`) are inside, by `test`; under the centre test a cell that no
/// sub-cell centre finds inside falls back on the any-corner test, so a
/// cell the object only grazes keeps the sub-cells it touches rather than
/// vanishing from under the flesh.
fn classify_cell(
    inside: &impl Fn(DVec3) -> bool,
    origin: DVec3,
    size: DVec3,
    k: usize,
    test: SubcellTest,
    kept: &mut [bool],
    corner: &mut [bool],
) {
    let at = |i: usize, j: usize, l: usize, offset: f64| {
        origin
            + DVec3::new(i as f64 + offset, j as f64 + offset, l as f64 + offset) * size / k as f64
    };
    let mut classify = |test: SubcellTest, kept: &mut [bool]| match test {
        SubcellTest::Centre => {
            for l in 0..k {
                for j in 0..k {
                    for i in 0..k {
                        kept[i + k * (j + k * l)] = inside(at(i, j, l, 0.5));
                    }
                }
            }
        }
        SubcellTest::AnyCorner => {
            let n = k + 1;
            for l in 0..n {
                for j in 0..n {
                    for i in 0..n {
                        corner[i + n * (j + n * l)] = inside(at(i, j, l, 0.0));
                    }
                }
            }
            for l in 0..k {
                for j in 0..k {
                    for i in 0..k {
                        kept[i + k * (j + k * l)] = (0..8).any(|c| {
                            let (a, b, d) = (c & 1, (c >> 1) & 1, (c >> 2) & 1);
                            corner[(i + a) + n * ((j + b) + n * (l + d))]
                        });
                    }
                }
            }
        }
    };
    classify(test, kept);
    if test == SubcellTest::Centre && !kept.contains(&true) {
        classify(SubcellTest::AnyCorner, kept);
    }
}

/// The elements of the cells of a hierarchy's `K_J` (`Hierarchy`) for the
/// object `inside`: each coarse cell's sub-cells are classified exactly as
/// [`object_elements`] does at `levels` (so the integration domain U is the
/// coarse one's), and each `K_J` cell gets 2×2×2 Gauss points on the kept
/// sub-cells inside it, made isoparametric where the cell is conformed
/// (`conform_elements`). Those are exact for degree ≤ 3 per axis: the
/// volume, gravity load and lumped mass (∫ φ det J) over U are the coarse
/// rules' to round-off, and the linear box-cell integrals are exact. (Not
/// the moment-fitted rule: its negative weights on a conformed cell's
/// rational stiffness integrand can make `K_J` indefinite.)
/// With fewer quadrature levels than hierarchy levels, a `K_J` cell is full
/// or empty as the sub-cell holding it is.
pub fn hierarchy_object_elements(
    h: &Hierarchy,
    inside: impl Fn(DVec3) -> bool,
    levels: u32,
    test: SubcellTest,
) -> Result<CellElements, QuadratureError> {
    check_levels(levels)?;
    let (coarse, fine) = (&h.coarse, &h.fine);
    let size = coarse.cell_size;
    let k = 1usize << levels;
    let f = 1usize << h.levels;
    let fine_size = fine.cell_size;
    let mut kept = vec![false; k * k * k];
    let mut corner = vec![false; (k + 1) * (k + 1) * (k + 1)];
    let mut masks: Vec<Vec<bool>> = Vec::with_capacity(coarse.cell_count());
    for cell in &coarse.cells {
        classify_cell(
            &inside,
            coarse.grid_position(cell[0]),
            size,
            k,
            test,
            &mut kept,
            &mut corner,
        );
        masks.push(kept.clone());
    }
    // Sub-cells per K_J cell and axis (at least one: a coarser rule's
    // sub-cell covers several K_J cells).
    let per = (k / f).max(1);
    let mut sub = vec![false; per * per * per];
    let mut own = Vec::with_capacity(fine.cell_count());
    let mut partial = Vec::new();
    for &c in &fine.cell_coords {
        let parent = coarse
            .cell_at(c.map(|x| x / f))
            .ok_or(QuadratureError::FineCellOutside)?;
        let o = c.map(|x| x % f);
        let mask = &masks[parent];
        for l in 0..per {
            for j in 0..per {
                for i in 0..per {
                    let g = [i, j, l];
                    let q: [usize; 3] = std::array::from_fn(|a| {
                        if k >= f {
                            o[a] * per + g[a]
                        } else {
                            o[a] * k / f
                        }
                    });
                    sub[i + per * (j + per * l)] = mask[q[0] + k * (q[1] + k * q[2])];
                }
            }
        }
        let count = sub.iter().filter(|&&x| x).count();
        if count == sub.len() {
            own.push(None);
            continue;
        }
        // 2×2×2 Gauss on each kept sub-cell: positive weights, so the
        // isoparametric stiffness (a rational integrand, which no rule
        // integrates exactly) stays positive semi-definite.
        let step = 1.0 / per as f64;
        let mut rule = Vec::with_capacity(8 * count);
        for l in 0..per {
            for j in 0..per {
                for i in 0..per {
                    if sub[i + per * (j + per * l)] {
                        let lo = DVec3::new(i as f64, j as f64, l as f64) * step;
                        rule.extend(gauss_points(lo, lo + DVec3::splat(step), fine_size));
                    }
                }
            }
        }
        own.push(Some(partial.len()));
        partial.push(HexElement::from_quadrature(fine_size, rule));
    }
    let boxes = CellElements {
        full: HexElement::new(fine_size),
        own,
        partial,
    };
    Ok(conform_elements(fine, &boxes))
}

/// Removes the cells with nothing inside the object (an empty element) and
/// binds the bones again the lattice's way: within `bone_radius` (the rule
/// of [`Lattice::bind_bones`], so surviving vertices keep their bone and a
/// bone left with none catches the vertices nearest to it), or snapped to
/// the trimmed lattice's edges with the conformed cells' elements made
/// isoparametric. `elements` are the grid boxes' (as
/// [`object_elements`] computes them).
pub fn trim_to_object(
    lattice: &Lattice,
    elements: &CellElements,
    bone_radius: f64,
) -> (Lattice, CellElements) {
    let keep = |c: usize| elements.get(c).quadrature.iter().any(|p| p.weight != 0.0);
    let mut trimmed = Lattice::from_cells(lattice.origin, lattice.cell_size, lattice.dims, |g| {
        lattice.cell_at(g).is_some_and(keep)
    });
    let old: Vec<usize> = trimmed
        .cell_coords
        .iter()
        .map(|&g| lattice.cell_at(g).expect("a kept cell was active"))
        .collect();
    trimmed.bind(lattice.bones.clone(), lattice.binding, bone_radius);
    let trimmed_elements = conform_elements(&trimmed, &elements.select(&old));
    (trimmed, trimmed_elements)
}

/// The inside predicate of a character's flesh at rest: a point is inside
/// when some muscle's signed distance there is negative.
pub fn character_inside(character: &Character) -> impl Fn(DVec3) -> bool + use<> {
    let body = PosedBody::new(character, &character.skeleton.rest_posture());
    move |p: DVec3| {
        let p32 = p.as_vec3();
        (0..body.muscles.len()).any(|m| {
            body.may_touch(m, p32, 0.0) && {
                let pm = &body.muscles[m];
                pm.shape.signed_distance(pm.to_local.transform_point3(p32)) < 0.0
            }
        })
    }
}

/// A character's lattice ([`Lattice::from_character`]) with its cells
/// integrated over the muscles only and the cells outside them removed.
pub fn character_lattice(
    character: &Character,
    settings: &LatticeSettings,
    levels: u32,
) -> Result<(Lattice, CellElements), QuadratureError> {
    let lattice = Lattice::from_character(character, settings);
    let elements = object_elements(
        &lattice,
        character_inside(character),
        levels,
        SubcellTest::Centre,
    )?;
    Ok(trim_to_object(
        &lattice,
        &elements,
        settings.bone_radius_cells * settings.cell_size,
    ))
}

/// As [`character_lattice`] from [`Lattice::from_character_with_vertices`]
/// (the count is the untrimmed lattice's: trimming removes a few).
pub fn character_lattice_with_vertices(
    character: &Character,
    vertices: usize,
    bone_radius_cells: f64,
    levels: u32,
) -> Result<(Lattice, CellElements), QuadratureError> {
    let lattice = Lattice::from_character_with_vertices(character, vertices, bone_radius_cells);
    let elements = object_elements(
        &lattice,
        character_inside(character),
        levels,
        SubcellTest::Centre,
    )?;
    let radius = bone_radius_cells * lattice.cell_size.x;
    Ok(trim_to_object(&lattice, &elements, radius))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule of a random set of sub-cells integrates x⁴ y³ z² (and the
    /// volume) over their union exactly; a full cell reproduces the Gauss
    /// element.
    #[test]
    fn the_moment_fitted_rule_is_exact_on_the_union_of_sub_cells() {
        let k = 4;
        let kept: Vec<bool> = (0..k * k * k).map(|i| (i * 7 + i / 5) % 3 != 0).collect();
        let rule = moment_fitted_rule(&kept, k, 1.0);
        let f = |p: DVec3| p.x.powi(4) * p.y.powi(3) * p.z.powi(2);
        let got: f64 = rule.iter().map(|q| q.weight * f(q.local)).sum();
        let h = 1.0 / k as f64;
        let mut exact = 0.0;
        let mut vol = 0.0;
        for iz in 0..k {
            for iy in 0..k {
                for ix in 0..k {
                    if kept[ix + k * (iy + k * iz)] {
                        let m = |i: usize, e: i32| {
                            let (a, b) = (i as f64 * h, (i + 1) as f64 * h);
                            (b.powi(e + 1) - a.powi(e + 1)) / (e + 1) as f64
                        };
                        exact += m(ix, 4) * m(iy, 3) * m(iz, 2);
                        vol += h * h * h;
                    }
                }
            }
        }
        let got_vol: f64 = rule.iter().map(|q| q.weight).sum();
        // Relative to the magnitudes, a few ulps of the sums: optimised code
        // rounds differently (fused multiply-adds).
        assert!(
            (got - exact).abs() < 1e-12 * exact.abs().max(1e-300),
            "{got} vs {exact}"
        );
        assert!((got_vol - vol).abs() < 1e-12 * vol, "{got_vol} vs {vol}");
        let size = DVec3::new(0.1, 0.2, 0.3);
        let all = moment_fitted_rule(&[true; 8], 2, size.element_product());
        let fitted = HexElement::from_quadrature(size, all);
        let gauss = HexElement::new(size);
        for (a, b) in fitted.k_mu.iter().zip(&gauss.k_mu) {
            assert!(a.abs_diff_eq(*b, 1e-12));
        }
        for a in 0..8 {
            assert!((fitted.integral[a] - gauss.integral[a]).abs() < 1e-15);
        }
    }

    #[test]
    fn too_many_levels_is_an_error() {
        let l = Lattice::grid_box(DVec3::ZERO, DVec3::ONE, [1, 1, 1]);
        assert!(object_elements(&l, |_| true, MAX_LEVELS + 1, SubcellTest::Centre).is_err());
    }
}
