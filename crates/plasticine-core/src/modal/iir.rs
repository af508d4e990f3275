//! The 2-pole IIR filter of one mode (DyRT eq. 19): the damped oscillator
//! q̈ + 2ξωq̇ + ω²q = Q/m stepped exactly in its free motion, with the
//! forcing held over the step.
//!
//! q⁽ᵏ⁾ = 2ε cos θ q⁽ᵏ⁻¹⁾ − ε² q⁽ᵏ⁻²⁾ + 2[ε cos(θ+γ) − ε² cos(2θ+γ)] `Q⁽ᵏ⁻¹⁾/(3ωω_d` m)
//!
//! with ε = e^(−ξωh), θ = `ω_d` h, `ω_d` = ω√(1−ξ²).
//!
//! **The sign of γ.** As printed, γ = arcsin ξ, and the filter's static gain
//! (q under a constant Q, over Q/(mω²)) is ≈ 1 + 4ξ/(3ωh): 1.28 for a 3 Hz
//! mode with ξ = 0.05 at h = 1/90 s, 4.5 at h = 1 ms, worse as the step
//! shrinks. The phase of the step response e^(−ξωt) `cos(ω_d` t − γ)/cos γ
//! is γ = −arcsin ξ; with it the first-order error cancels and the gain is
//! 0.98 and 0.9994 there. We use −arcsin ξ. The gain stays within 1 % only
//! while ωh ≤ 0.1 (ξ ≤ 0.1), so [`substeps`] divides a frame step until it is.

/// Largest ωh the filter is stepped at (static gain within 1 % for ξ ≤ 0.1).
pub const MAX_OMEGA_H: f64 = 0.1;

/// The coefficients of one mode's filter at one step h.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModeFilter {
    /// 2ε cos θ.
    pub a1: f64,
    /// −ε².
    pub a2: f64,
    /// 2[ε cos(θ+γ) − ε² cos(2θ+γ)]/(`3ωω_d)`: the gain on Q/m.
    pub b: f64,
    /// ε², the factor the free oscillation's invariant shrinks by per step.
    pub decay: f64,
}

impl ModeFilter {
    /// The filter of a mode of angular frequency `omega` (rad/s) and damping
    /// ratio `xi` (< 1) at step `h` (s).
    pub fn new(omega: f64, xi: f64, h: f64) -> Self {
        Self::with_phase(omega, xi, h, -xi.asin())
    }

    /// As [`new`](Self::new) with the phase γ given: `xi.asin()` is the
    /// paper's printed (inconsistent) filter, kept for the tests that show it.
    pub fn with_phase(omega: f64, xi: f64, h: f64, gamma: f64) -> Self {
        let eps = (-xi * omega * h).exp();
        let wd = omega * (1.0 - xi * xi).sqrt();
        let theta = wd * h;
        let e2 = eps * eps;
        Self {
            a1: 2.0 * eps * theta.cos(),
            a2: -e2,
            b: 2.0 * (eps * (theta + gamma).cos() - e2 * (2.0 * theta + gamma).cos())
                / (3.0 * omega * wd),
            decay: e2,
        }
    }

    /// One step: the new q from the last two and the forcing per unit modal
    /// mass `force` (Q/m) held over the step.
    #[inline]
    pub fn step(&self, q: f64, q_prev: f64, force: f64) -> f64 {
        self.a1 * q + self.a2 * q_prev + self.b * force
    }

    /// The filter's response to a constant force per unit mass, over the
    /// oscillator's static deflection `force/ω²`: its static gain.
    pub fn static_gain(&self, omega: f64) -> f64 {
        self.b / (1.0 - self.a1 - self.a2) * omega * omega
    }

    /// The free oscillation's invariant q² − 2ε cos θ q q⁻ + ε² q⁻² (a
    /// quadratic form in the last two values; it shrinks by ε² per free step).
    pub fn invariant(&self, q: f64, q_prev: f64) -> f64 {
        q * q - self.a1 * q * q_prev - self.a2 * q_prev * q_prev
    }
}

/// How many equal sub-steps a frame step `h` needs so that ωh ≤ [`MAX_OMEGA_H`]
/// for the highest mode `omega_max`.
pub fn substeps(h: f64, omega_max: f64) -> usize {
    ((h * omega_max / MAX_OMEGA_H).ceil() as usize).max(1)
}
