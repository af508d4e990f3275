//! How the skeleton excites a part's modes (DyRT §3): in the frame of the
//! part's bone, the flesh feels the inertial force −M r̈ of being carried,
//! and its modal force is Q = −`ΦᵀM` r̈.
//!
//! DyRT writes r̈ = Γψ̇ with the bone's body twist ψ (6 numbers; it drops
//! the centrifugal term). A rigid motion's acceleration field is affine in
//! the rest position, r̈(r) = C(r − o) + d, so we keep all of it, 12 numbers
//! at the same cost: per mode `G_i` = `Σ_a` `m_a` `φ_ia` (`r_a` − o)ᵀ and
//! `g_i` = `Σ_a` `m_a` `φ_ia`, and `Q_i` = −(C : `G_i` + d · `g_i`). A uniform
//! acceleration a gives −`ΦᵀM1a` exactly; a spin-up about the limb's axis
//! gives the torsion modes' forces (a symmetric limb's bending modes see
//! none). C and d come from three consecutive placements of the bone by
//! central differences, expressed in the middle one's frame.

use glam::{DAffine3, DMat3, DVec3};

/// The acceleration field of a rigidly carried point, in the bone's frame at
/// rest coordinates: r̈(r) = C(r − o) + d.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RigidAcceleration {
    /// The linear part C (1/s²).
    pub c: DMat3,
    /// The acceleration at the origin o (m/s²).
    pub d: DVec3,
}

impl RigidAcceleration {
    /// From the bone's placements (rest → world) one step `h` apart, the
    /// acceleration at the middle one, rotated into its frame, about the rest
    /// point `origin`.
    pub fn from_placements(
        before: &DAffine3,
        now: &DAffine3,
        after: &DAffine3,
        h: f64,
        origin: DVec3,
    ) -> Self {
        let inv_h2 = 1.0 / (h * h);
        let back = now.matrix3.transpose();
        let a = (after.matrix3 - now.matrix3 * 2.0 + before.matrix3) * inv_h2;
        let at_origin = (after.transform_point3(origin) - now.transform_point3(origin) * 2.0
            + before.transform_point3(origin))
            * inv_h2;
        Self {
            c: back * a,
            d: back * at_origin,
        }
    }

    /// A uniform acceleration `a` (bone frame).
    pub fn uniform(a: DVec3) -> Self {
        Self {
            c: DMat3::ZERO,
            d: a,
        }
    }
}

/// One mode's transfer from the rigid acceleration to its modal force.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transfer {
    /// `Σ_a` `m_a` `φ_a` (`r_a` − o)ᵀ.
    pub g_matrix: DMat3,
    /// `Σ_a` `m_a` `φ_a`.
    pub g: DVec3,
}

impl Transfer {
    /// The transfer of a mode `shape` (per vertex) over vertices at rest
    /// positions `rest` with masses `mass`, about `origin`.
    pub fn new(shape: &[DVec3], rest: &[DVec3], mass: &[f64], origin: DVec3) -> Self {
        let mut g_matrix = DMat3::ZERO;
        let mut g = DVec3::ZERO;
        for ((phi, r), m) in shape.iter().zip(rest).zip(mass) {
            let mp = *phi * *m;
            g += mp;
            let rel = *r - origin;
            // Column c of the outer product mp ⊗ rel is mp · rel[c].
            g_matrix += DMat3::from_cols(mp * rel.x, mp * rel.y, mp * rel.z);
        }
        Self { g_matrix, g }
    }

    /// The modal force per unit modal mass, −(C : G + d · g).
    #[inline]
    pub fn force(&self, acc: &RigidAcceleration) -> f64 {
        let c = acc.c;
        let gm = self.g_matrix;
        let frob = c.x_axis.dot(gm.x_axis) + c.y_axis.dot(gm.y_axis) + c.z_axis.dot(gm.z_axis);
        -(frob + acc.d.dot(self.g))
    }

    /// Size of the transfer, to compare how strongly modes can be excited:
    /// the force of a unit acceleration in the worst direction, plus that of
    /// a unit C over a part of extent `size`.
    pub fn strength(&self, size: f64) -> f64 {
        let gm = self.g_matrix;
        self.g.length()
            + (gm.x_axis.length_squared() + gm.y_axis.length_squared() + gm.z_axis.length_squared())
                .sqrt()
                / size.max(1e-12)
    }
}
