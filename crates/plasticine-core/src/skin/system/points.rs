//! The scalar arithmetic of the skin system's per-point passes.

use glam::Vec3;

/// What a pass over a skin's points reads per point, borrowed at once (so
/// that the pass's writes are known not to touch it). Its two methods are
/// the passes' arithmetic for one point; the system's `lanes` do the same for eight.
pub(super) struct Points<'s> {
    pub(super) inv_mass: &'s [f32],
    pub(super) weight: &'s [f32],
    pub(super) damping: &'s [f32],
    pub(super) area: &'s [f32],
    pub(super) band: &'s [Option<crate::character::Band>],
    pub(super) anchor_position: &'s [Vec3],
    pub(super) anchor_velocity: &'s [Vec3],
    pub(super) gravity: Vec3,
}

impl Points<'_> {
    /// Point k's position-dependent acceleration from the elastic force
    /// `f` on it at position `x` (connective tissue, eq. 6a, and gravity
    /// added; zero on the boundary rows), and its band's damping axis
    /// d̂·√(`k_d`·a/m) (zero without a band) for the velocity pass.
    #[inline]
    pub(super) fn acceleration(&self, k: usize, x: Vec3, f: Vec3) -> (Vec3, Vec3) {
        let w = self.inv_mass[k];
        if w == 0.0 {
            return (Vec3::ZERO, Vec3::ZERO);
        }
        let mut f = f;
        let mut damping_axis = Vec3::ZERO;
        // eq. (6a): Hookean rubber band from the anchor to the skin point.
        if let Some(b) = &self.band[k] {
            let d = x - self.anchor_position[k];
            let len = d.length();
            if len > 1e-9 {
                let area = self.area[k];
                f -= (b.ks * area * (len - b.rest_length) / len) * d;
                // d̂·√(k_d a/m): the velocity pass needs only a dot product.
                damping_axis = d * ((b.kd * area * w).sqrt() / len);
            }
        }
        (f * w + self.gravity * self.weight[k], damping_axis)
    }

    /// Point k's end velocity of a leapfrog kick from velocity `v` with
    /// position acceleration `a_pos` and band damping axis `s` (see
    /// `kick_at_mean_velocity`).
    #[inline]
    pub(super) fn kick(&self, k: usize, v: Vec3, a_pos: Vec3, s: Vec3, h: f32) -> Vec3 {
        let w = self.inv_mass[k];
        if w == 0.0 {
            return v + h * a_pos;
        }
        let half = 0.5 * h;
        let c = self.damping[k] * w;
        let rhs =
            v + h * a_pos - half * (c * v + s * s.dot(v)) + h * s * s.dot(self.anchor_velocity[k]);
        // (αI + ½h·s·sᵀ)⁻¹ = (d·I − ½h·s·sᵀ) / (α·d), d = α + ½h|s|².
        let alpha = 1.0 + half * c;
        let d = alpha + half * s.length_squared();
        (rhs * d - s * (half * s.dot(rhs))) * (1.0 / (alpha * d))
    }
}
