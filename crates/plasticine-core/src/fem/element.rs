//! Element integrals of one lattice cell (Capell §3.3, appendix A.2, linear
//! part): a trilinear hexahedron, integrated with 2×2×2 Gauss points.
//!
//! The cells of a regular lattice are congruent boxes, so the integrals are
//! computed **once** for a unit material and scaled per cell:
//! `K_e = λ_e K_λ + μ_e K_μ`, `M_e = ρ_e M_1`. 2×2×2 Gauss is exact here: on a
//! box the integrands (products of two trilinear functions or of two of their
//! derivatives) are at most quadratic in each coordinate.
//!
//! Stiffness convention. With the linear (Cauchy) strain
//! `ε = ½(∇d + ∇dᵀ)` and the energy density `W = μ ε:ε + ½λ (tr ε)²`, the
//! stiffness block between basis functions a and b is
//!
//! `K^{ab}_{ij} = ∫ λ ∂_iφ^a ∂_jφ^b + μ (δ_ij ∇φ^a·∇φ^b + ∂_jφ^a ∂_iφ^b) dΩ`.
//!
//! Capell's eq. (10) omits the ½ in Green's strain, so his A₁, A₂, B of A.2
//! carry `4G…` and equal twice these (his V is four times the usual energy);
//! we keep the engineering convention so that Young's modulus means what a
//! cantilever test says it means (`tests/it/fem_physics.rs`). Then
//! `A₁ ↔ λ ∂φ^a⊗∂φ^b`, `A₂ ↔ μ ∂φ^b⊗∂φ^a`, `B ↔ μ ∂φ^a·∂φ^b` up to that factor 2.

use glam::{DMat3, DVec3};

/// Isotropic linear-elastic material of one cell.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material {
    /// Young's modulus E, Pa.
    pub young: f64,
    /// Poisson's ratio ν, in [0, 0.5).
    pub poisson: f64,
    /// Mass density ρ, kg/m³.
    pub density: f64,
}

impl Material {
    /// Soft flesh: E = 50 kPa, ν = 0.3, ρ = 1000 kg/m³ (ballpark of
    /// muscle/fat in the stiff, relaxed range).
    pub const FLESH: Material = Material {
        young: 5.0e4,
        poisson: 0.3,
        density: 1000.0,
    };

    /// Lamé's first parameter λ = Eν / ((1+ν)(1−2ν)).
    pub fn lambda(&self) -> f64 {
        self.young * self.poisson / ((1.0 + self.poisson) * (1.0 - 2.0 * self.poisson))
    }

    /// Shear modulus μ = G = E / (2(1+ν)).
    pub fn mu(&self) -> f64 {
        self.young / (2.0 * (1.0 + self.poisson))
    }

    /// Checks that E > 0, ν ∈ [0, 0.5) and ρ > 0, all finite; the error names the value.
    pub fn validate(&self) -> Result<(), MaterialError> {
        if !(self.young.is_finite() && self.young > 0.0) {
            return Err(MaterialError::Young(self.young));
        }
        if !(self.poisson.is_finite() && (0.0..0.5).contains(&self.poisson)) {
            return Err(MaterialError::Poisson(self.poisson));
        }
        if !(self.density.is_finite() && self.density > 0.0) {
            return Err(MaterialError::Density(self.density));
        }
        Ok(())
    }
}

/// A [`Material`] value outside its physical range.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum MaterialError {
    /// E ≤ 0 or not finite.
    #[error("Young's modulus must be > 0, got {0}")]
    Young(f64),
    /// ν outside [0, 0.5) (½ is incompressible: λ is infinite).
    #[error("Poisson's ratio must be in [0, 0.5), got {0}")]
    Poisson(f64),
    /// ρ ≤ 0 or not finite.
    #[error("density must be > 0, got {0}")]
    Density(f64),
}

/// Corner `i` of a cell sits at `(i & 1, (i >> 1) & 1, (i >> 2) & 1)` in cell
/// units: bit 0 is x, bit 1 is y, bit 2 is z.
pub fn corner_offset(i: usize) -> [usize; 3] {
    [i & 1, (i >> 1) & 1, (i >> 2) & 1]
}

/// Trilinear weights φ^i of the eight corners at local coordinates
/// `s ∈ [0, 1]³` (the FFD weights of a point in its cell). They sum to one.
pub fn trilinear_weights(s: DVec3) -> [f64; 8] {
    let mut w = [0.0; 8];
    for (i, wi) in w.iter_mut().enumerate() {
        let [a, b, c] = corner_offset(i);
        let fx = if a == 1 { s.x } else { 1.0 - s.x };
        let fy = if b == 1 { s.y } else { 1.0 - s.y };
        let fz = if c == 1 { s.z } else { 1.0 - s.z };
        *wi = fx * fy * fz;
    }
    w
}

/// Gradients ∂φ^i/∂x of the corners at local coordinates `s` for a box of
/// edge lengths `size`.
pub fn trilinear_gradients(s: DVec3, size: DVec3) -> [DVec3; 8] {
    let mut g = [DVec3::ZERO; 8];
    for (i, gi) in g.iter_mut().enumerate() {
        let [a, b, c] = corner_offset(i);
        let (fx, dx) = if a == 1 {
            (s.x, 1.0)
        } else {
            (1.0 - s.x, -1.0)
        };
        let (fy, dy) = if b == 1 {
            (s.y, 1.0)
        } else {
            (1.0 - s.y, -1.0)
        };
        let (fz, dz) = if c == 1 {
            (s.z, 1.0)
        } else {
            (1.0 - s.z, -1.0)
        };
        *gi = DVec3::new(
            dx * fy * fz / size.x,
            fx * dy * fz / size.y,
            fx * fy * dz / size.z,
        );
    }
    g
}

/// The Jacobian `J = ∂x/∂s` of the trilinear map `x(s) = Σ corners_a φ^a(s)`
/// of a cell at local coordinates `s` (columns ∂`x/∂s_x`, ∂`x/∂s_y`, ∂`x/∂s_z`).
/// For a box it is `diag(size)`.
pub fn cell_jacobian(corners: &[DVec3; 8], s: DVec3) -> DMat3 {
    let g = trilinear_gradients(s, DVec3::ONE);
    let mut j = DMat3::ZERO;
    for (x, ga) in corners.iter().zip(g) {
        j += DMat3::from_cols(*x * ga.x, *x * ga.y, *x * ga.z);
    }
    j
}

/// The point of a cell at local coordinates `s`: `Σ corners_a φ^a(s)`.
pub fn cell_point(corners: &[DVec3; 8], s: DVec3) -> DVec3 {
    corners
        .iter()
        .zip(trilinear_weights(s))
        .map(|(x, w)| *x * w)
        .sum()
}

/// A quadrature point of a cell: local coordinates `s ∈ [0, 1]³` and the
/// volume it stands for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuadraturePoint {
    /// Local coordinates `s ∈ [0, 1]³` of the point in its cell.
    pub local: DVec3,
    /// The volume the point stands for, m³ (a cell's weights sum to its integrated volume).
    pub weight: f64,
}

/// The 2×2×2 Gauss points of the sub-box `[lo, hi]` (local coordinates) of a
/// cell of edge lengths `size`: exact for polynomials of degree ≤ 3 per axis.
pub fn gauss_points(lo: DVec3, hi: DVec3, size: DVec3) -> [QuadraturePoint; 8] {
    let g = 0.5 / 3f64.sqrt();
    let extent = hi - lo;
    // Each point carries an eighth of the sub-box's volume.
    let weight = (extent * size).element_product() / 8.0;
    std::array::from_fn(|i| {
        let [a, b, c] = corner_offset(i);
        let t = DVec3::new(a as f64, b as f64, c as f64) * (2.0 * g) + (0.5 - g);
        QuadraturePoint {
            local: lo + t * extent,
            weight,
        }
    })
}

/// Precomputed integrals of one box cell for a unit material, as 8×8 arrays
/// of 3×3 blocks (`[a * 8 + b]` couples corner a to corner b).
///
/// The integrals run over the quadrature points of the cell: 2×2×2 Gauss
/// over the whole box for a cell inside the object ([`HexElement::new`]), or
/// Gauss points on the sub-cells inside the object for a cell that the
/// object's surface cuts ([`HexElement::from_quadrature`], §3.3, see
/// `super::quadrature`).
#[derive(Clone, Debug)]
pub struct HexElement {
    /// Edge lengths of the (reference) box cell, m.
    pub size: DVec3,
    /// ∫ ∂_iφ^a ∂_jφ^b: multiplies λ.
    pub k_lambda: Vec<DMat3>,
    /// ∫ `δ_ij` ∇φ^a·∇φ^b + ∂_jφ^a ∂_iφ^b: multiplies μ.
    pub k_mu: Vec<DMat3>,
    /// Consistent mass ∫ φ^a φ^b (scalar, times I₃), unit density.
    pub mass: [[f64; 8]; 8],
    /// ∫ φ^a: the lumped mass and the gravity load per unit density.
    pub integral: [f64; 8],
    /// The points the integrals ran over (the nonlinear model integrates
    /// its energy on the same ones, so it linearizes to exactly this K).
    pub quadrature: Vec<QuadraturePoint>,
    /// The rest corners of an isoparametric (distorted) cell; None for a
    /// box of edge lengths `size`.
    pub corners: Option<[DVec3; 8]>,
}

impl HexElement {
    /// The whole box, 2×2×2 Gauss.
    pub fn new(size: DVec3) -> Self {
        Self::from_quadrature(size, gauss_points(DVec3::ZERO, DVec3::ONE, size).to_vec())
    }

    /// The integrals over the given quadrature points of a box cell.
    pub fn from_quadrature(size: DVec3, quadrature: Vec<QuadraturePoint>) -> Self {
        let points = quadrature
            .into_iter()
            .map(|p| (p, trilinear_gradients(p.local, size)))
            .collect();
        Self::integrate(size, None, points)
    }

    /// The isoparametric element of a cell whose corners sit at `corners`
    /// (rest, world; corner order of [`corner_offset`]): a box cell whose
    /// vertices were moved onto a bone (§4.3, `super::snap`). The
    /// trilinear map `x(s) = Σ corners_a φ^a(s)` carries the reference
    /// rule `reference` (local coordinates, weights in volume of the box
    /// of edge lengths `size`) onto the cell: weights scale by
    /// `det J(s) / |box|`, gradients are `∇φ^a = J⁻ᵀ ∇_s φ^a`. On an
    /// undistorted box it is exactly [`from_quadrature`](Self::from_quadrature).
    pub fn isoparametric(size: DVec3, corners: [DVec3; 8], reference: &[QuadraturePoint]) -> Self {
        let volume = size.element_product();
        let points = reference
            .iter()
            .map(|p| {
                let j = cell_jacobian(&corners, p.local);
                let grad_s = trilinear_gradients(p.local, DVec3::ONE);
                let inv_t = j.inverse().transpose();
                let point = QuadraturePoint {
                    local: p.local,
                    weight: p.weight * j.determinant() / volume,
                };
                (point, grad_s.map(|g| inv_t * g))
            })
            .collect();
        Self::integrate(size, Some(corners), points)
    }

    /// ∇φ^a (rest, world) at local coordinates `s` of this element's cell.
    pub fn gradients_at(&self, s: DVec3) -> [DVec3; 8] {
        match &self.corners {
            None => trilinear_gradients(s, self.size),
            Some(corners) => {
                let inv_t = cell_jacobian(corners, s).inverse().transpose();
                trilinear_gradients(s, DVec3::ONE).map(|g| inv_t * g)
            }
        }
    }

    fn integrate(
        size: DVec3,
        corners: Option<[DVec3; 8]>,
        points: Vec<(QuadraturePoint, [DVec3; 8])>,
    ) -> Self {
        let mut k_lambda = vec![DMat3::ZERO; 64];
        let mut k_mu = vec![DMat3::ZERO; 64];
        let mut mass = [[0.0; 8]; 8];
        let mut integral = [0.0; 8];
        for (p, grad) in &points {
            let (s, w) = (p.local, p.weight);
            let phi = trilinear_weights(s);
            for a in 0..8 {
                integral[a] += w * phi[a];
                for b in 0..8 {
                    mass[a][b] += w * phi[a] * phi[b];
                    let (ga, gb) = (grad[a], grad[b]);
                    // Column j of the block is the j-th DOF of b:
                    // K_λ[i][j] = ga_i gb_j  → outer(ga, gb) has
                    // column j = ga * gb_j.
                    let outer_ab = DMat3::from_cols(ga * gb.x, ga * gb.y, ga * gb.z);
                    // μ term ∂_jφ^a ∂_iφ^b: entry (i, j) = gb_i ga_j.
                    let outer_ba = DMat3::from_cols(gb * ga.x, gb * ga.y, gb * ga.z);
                    k_lambda[a * 8 + b] += outer_ab * w;
                    k_mu[a * 8 + b] +=
                        (DMat3::from_diagonal(DVec3::splat(ga.dot(gb))) + outer_ba) * w;
                }
            }
        }
        Self {
            size,
            k_lambda,
            k_mu,
            mass,
            integral,
            quadrature: points.into_iter().map(|(p, _)| p).collect(),
            corners,
        }
    }

    /// The 3×3 stiffness block coupling corners a and b for a material.
    #[inline]
    pub fn stiffness_block(&self, m: &Material, a: usize, b: usize) -> DMat3 {
        self.k_lambda[a * 8 + b] * m.lambda() + self.k_mu[a * 8 + b] * m.mu()
    }

    /// The volume integrated over: the box for a full cell, the part inside
    /// the object for a partial one.
    pub fn volume(&self) -> f64 {
        self.quadrature.iter().map(|p| p.weight).sum()
    }
}

/// The element of every cell of a lattice: the one shared full-cell element
/// (congruent boxes, computed once) or, for a cell the object's surface
/// cuts, the cell's own (§3.3: integrate only where the object is).
#[derive(Clone, Debug)]
pub struct CellElements {
    /// The whole-box element, shared by every cell inside the object.
    pub full: HexElement,
    /// Per cell: None for a full cell, else its index in `partial`.
    pub own: Vec<Option<usize>>,
    /// The elements of the partial cells.
    pub partial: Vec<HexElement>,
}

impl CellElements {
    /// Every one of `cells` cells full.
    pub fn uniform(full: HexElement, cells: usize) -> Self {
        Self {
            full,
            own: vec![None; cells],
            partial: Vec::new(),
        }
    }

    /// The element of cell `c`.
    #[inline]
    pub fn get(&self, c: usize) -> &HexElement {
        match self.own[c] {
            Some(k) => &self.partial[k],
            None => &self.full,
        }
    }

    /// Number of cells.
    pub fn len(&self) -> usize {
        self.own.len()
    }

    /// Whether there are no cells.
    pub fn is_empty(&self) -> bool {
        self.own.is_empty()
    }

    /// The elements of a subset of the cells (a region's), in that order.
    pub fn select(&self, cells: &[usize]) -> Self {
        let mut partial = Vec::new();
        let own = cells
            .iter()
            .map(|&c| {
                self.own[c].map(|k| {
                    partial.push(self.partial[k].clone());
                    partial.len() - 1
                })
            })
            .collect();
        Self {
            full: self.full.clone(),
            own,
            partial,
        }
    }
}

/// The least Jacobian determinant a conformed cell may keep, as a fraction
/// of its undistorted box's.
pub const MIN_JACOBIAN: f64 = 0.1;

/// The local coordinates `s` with `Σ corners_a φ^a(s) = p`, by damped
/// Newton from the cell's centre; None when it does not converge (a point
/// far outside the cell, or a degenerate cell). The answer may lie outside
/// `[0, 1]³`: the caller decides whether the point is in the cell.
pub fn invert_trilinear(corners: &[DVec3; 8], p: DVec3) -> Option<DVec3> {
    let scale = (corners[7] - corners[0]).length().max(f64::MIN_POSITIVE);
    let mut s = DVec3::splat(0.5);
    let mut r = cell_point(corners, s) - p;
    for _ in 0..50 {
        if r.length() <= 1e-14 * scale {
            return Some(s);
        }
        let j = cell_jacobian(corners, s);
        if j.determinant().abs() < 1e-300 {
            return None;
        }
        let step = j.inverse() * r;
        // Backtrack until the residual falls (the map is only trilinear).
        let mut t = 1.0;
        loop {
            let trial = s - step * t;
            let rt = cell_point(corners, trial) - p;
            if rt.length() < r.length() || t < 1e-6 {
                s = trial;
                r = rt;
                break;
            }
            t *= 0.5;
        }
        if !s.is_finite() || s.abs().max_element() > 10.0 {
            return None;
        }
    }
    (r.length() <= 1e-11 * scale).then_some(s)
}

/// A glam matrix as nalgebra's (for its decompositions).
pub fn to_nalgebra(m: DMat3) -> nalgebra::Matrix3<f64> {
    nalgebra::Matrix3::from_fn(|i, j| m.col(j)[i])
}

/// A nalgebra matrix as glam's.
pub fn from_nalgebra(m: &nalgebra::Matrix3<f64>) -> DMat3 {
    DMat3::from_cols_array(&[
        m[(0, 0)],
        m[(1, 0)],
        m[(2, 0)],
        m[(0, 1)],
        m[(1, 1)],
        m[(2, 1)],
        m[(0, 2)],
        m[(1, 2)],
        m[(2, 2)],
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn element() -> HexElement {
        HexElement::new(DVec3::new(0.3, 0.5, 0.7))
    }

    fn apply(e: &HexElement, m: &Material, u: &[DVec3; 8]) -> [DVec3; 8] {
        let mut f = [DVec3::ZERO; 8];
        for a in 0..8 {
            for b in 0..8 {
                f[a] += e.stiffness_block(m, a, b) * u[b];
            }
        }
        f
    }

    fn corners(e: &HexElement) -> [DVec3; 8] {
        std::array::from_fn(|i| {
            let [a, b, c] = corner_offset(i);
            DVec3::new(a as f64, b as f64, c as f64) * e.size
        })
    }

    /// Rigid translations and infinitesimal rotations are the kernel of the
    /// linear stiffness: six zero-energy modes, no more.
    #[test]
    fn rigid_modes_carry_no_force() {
        let e = element();
        let m = Material::FLESH;
        let x = corners(&e);
        let omega = DVec3::new(0.3, -0.7, 0.2);
        let u: [DVec3; 8] = std::array::from_fn(|i| DVec3::new(1.0, 2.0, -3.0) + omega.cross(x[i]));
        let f = apply(&e, &m, &u);
        let scale = e.stiffness_block(&m, 0, 0).abs_diff_eq(DMat3::ZERO, 0.0);
        assert!(!scale);
        for fi in f {
            assert!(fi.length() < 1e-9 * m.young, "{fi}");
        }
    }

    /// A uniform stretch `ε_xx` = e: the nodal forces on the +x face sum to the
    /// traction `σ_xx` × area with `σ_xx` = (λ + 2μ) e (laterally constrained
    /// strain state, u = (e x, 0, 0)).
    #[test]
    fn uniaxial_strain_gives_the_analytic_traction() {
        let e = element();
        let m = Material {
            young: 1000.0,
            poisson: 0.25,
            density: 1.0,
        };
        let strain = 1e-3;
        let x = corners(&e);
        let u: [DVec3; 8] = std::array::from_fn(|i| DVec3::new(strain * x[i].x, 0.0, 0.0));
        let f = apply(&e, &m, &u);
        let face: f64 = (0..8).filter(|&i| i & 1 == 1).map(|i| f[i].x).sum();
        let sigma = (m.lambda() + 2.0 * m.mu()) * strain;
        let expect = sigma * e.size.y * e.size.z;
        assert!(
            (face - expect).abs() < 1e-12 * expect.abs().max(1.0),
            "{face} vs {expect}"
        );
        // Lateral faces feel σ_yy = λ e.
        let side: f64 = (0..8).filter(|&i| (i >> 1) & 1 == 1).map(|i| f[i].y).sum();
        let expect_side = m.lambda() * strain * e.size.x * e.size.z;
        assert!((side - expect_side).abs() < 1e-12 * expect_side.abs().max(1.0));
    }

    #[test]
    fn stiffness_is_symmetric_and_mass_sums_to_the_volume() {
        let e = element();
        let m = Material::FLESH;
        for a in 0..8 {
            for b in 0..8 {
                let kab = e.stiffness_block(&m, a, b);
                let kba = e.stiffness_block(&m, b, a);
                assert!(kab.abs_diff_eq(kba.transpose(), 1e-9 * m.young));
            }
        }
        let total: f64 = e.mass.iter().flatten().sum();
        assert!((total - e.volume()).abs() < 1e-15);
        let lumped: f64 = e.integral.iter().sum();
        assert!((lumped - e.volume()).abs() < 1e-15);
        // Rows of the consistent mass sum to ∫φ^a (the lumped mass).
        for a in 0..8 {
            let row: f64 = e.mass[a].iter().sum();
            assert!((row - e.integral[a]).abs() < 1e-15);
        }
    }

    #[test]
    fn trilinear_weights_reproduce_linear_functions() {
        let s = DVec3::new(0.2, 0.7, 0.4);
        let w = trilinear_weights(s);
        assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-15);
        let p: DVec3 = (0..8)
            .map(|i| {
                let [a, b, c] = corner_offset(i);
                DVec3::new(a as f64, b as f64, c as f64) * w[i]
            })
            .sum();
        assert!((p - s).length() < 1e-15);
    }
}
