//! Small systems with known solutions for the integrator tests.

use super::*;

/// Independent damped oscillators a = −ω²(r − c) − ζ v + g, with point 0
/// kinematic (moving on a circle) so that `prescribe` is exercised.
pub struct Oscillators {
    pub omega: f32,
    pub damping: f32,
    pub gravity: Vec3,
    pub centers: Vec<Vec3>,
    pub kinematic_first: bool,
}

impl Oscillators {
    pub fn new(n: usize, omega: f32, damping: f32) -> Self {
        Self {
            omega,
            damping,
            gravity: Vec3::ZERO,
            centers: (0..n).map(|k| Vec3::new(k as f32, 0.0, 0.0)).collect(),
            kinematic_first: true,
        }
    }

    pub fn kinematic_position(t: f64) -> Vec3 {
        Vec3::new(t.cos() as f32, t.sin() as f32, 0.0)
    }

    /// Exact solution of one undamped, gravity-free oscillator from (x0, v0) after time t.
    pub fn exact_undamped(&self, x0: Vec3, v0: Vec3, c: Vec3, t: f64) -> (Vec3, Vec3) {
        let w = self.omega as f64;
        let (s, co) = ((w * t).sin() as f32, (w * t).cos() as f32);
        let d = x0 - c;
        let w = self.omega;
        (c + d * co + v0 * (s / w), -d * (w * s) + v0 * co)
    }
}

impl SecondOrderSystem for Oscillators {
    fn len(&self) -> usize {
        self.centers.len()
    }

    fn position_acceleration(&mut self, _t: f64, r: &[Vec3], a: &mut [Vec3]) {
        for k in 0..r.len() {
            a[k] = if self.is_kinematic(k) {
                Vec3::ZERO
            } else {
                -self.omega * self.omega * (r[k] - self.centers[k]) + self.gravity
            };
        }
    }

    fn add_velocity_acceleration(&mut self, _t: f64, _r: &[Vec3], v: &[Vec3], a: &mut [Vec3]) {
        for k in 0..v.len() {
            if !self.is_kinematic(k) {
                a[k] -= self.damping * v[k];
            }
        }
    }

    fn prescribe(&mut self, t: f64, r: &mut [Vec3], v: &mut [Vec3]) {
        if self.kinematic_first {
            r[0] = Self::kinematic_position(t);
            v[0] = Vec3::new(-(t.sin() as f32), t.cos() as f32, 0.0);
        }
    }

    fn is_kinematic(&self, k: usize) -> bool {
        self.kinematic_first && k == 0
    }
}
