//! The condensed contact problem (Galoppo eq. 4.27–4.32, 3.13–3.20): with
//! the free step's velocity `u_i` of every contact and the Delassus matrix
//! `W = J A⁻¹ Jᵀ` (the velocity change at contact i from a unit impulse at
//! contact j, through the flesh and the responding skeleton), find impulses
//! λ with
//!
//! - normal: `u_n + (Wλ)_n ≥ target`, `λ_n ≥ 0`, one of them tight
//!   (unilateral: a contact pushes, never pulls; the thesis' equality rows
//!   stick, §6.2.1);
//! - friction: `‖λ_t‖ ≤ μ λ_n` (the Coulomb cone, 3.20), and where the
//!   contact slides, `λ_t` opposes the sliding at the cone's edge.
//!
//! Solved by projected Gauss–Seidel over the 3×3 contact blocks, each in
//! its contact frame (n, t₁, t₂): a contact's normal impulse is clamped at
//! zero, its tangential one projected onto the disc of radius `μ λ_n`.
//! W is small and dense (three rows per contact).

use glam::DVec3;

/// Coulomb's μ where a flesh part with its own friction `part` touches an
/// obstacle of friction `obstacle`: their geometric mean (as `Box2D` mixes
/// two bodies' frictions), so either one at zero makes the contact
/// frictionless and equal ones give that value. Without a part's own, the
/// obstacle's.
pub fn mix_friction(obstacle: f64, part: Option<f64>) -> f64 {
    part.map_or(obstacle, |p| (obstacle * p).max(0.0).sqrt())
}

/// One contact of the condensed problem.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactRow {
    /// The contact frame: outward normal n and tangents t₁, t₂.
    pub frame: [DVec3; 3],
    /// The contact's velocity after the free step (world).
    pub free_velocity: DVec3,
    /// The least normal velocity allowed after the step: `−d/h` for a gap
    /// d ≥ 0 (close it, no further), a share of `−d/h` for a penetration
    /// (push out), `−ε u_n⁻` for a bounce, whichever is largest.
    pub target: f64,
    /// Coulomb friction coefficient μ.
    pub friction: f64,
}

impl ContactRow {
    /// The frame of a contact with outward normal `n`.
    pub fn frame_of(n: DVec3) -> [DVec3; 3] {
        let t1 = n.any_orthonormal_vector();
        [n, t1, n.cross(t1)]
    }
}

/// What the solve did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContactSolve {
    /// Each contact's impulse in its frame (`λ_n`, `λ_t₁`, `λ_t₂`).
    pub impulses: Vec<DVec3>,
    /// Gauss–Seidel sweeps taken.
    pub sweeps: usize,
    /// The largest normal-velocity violation left (m/s), 0 when settled.
    pub violation: f64,
}

/// Most sweeps of projected Gauss–Seidel.
pub const MAX_SWEEPS: usize = 400;

/// Solves the condensed contact problem. `w` is the Delassus matrix in the
/// contacts' frames, row-major `3m × 3m`: `w[(3i + a) * 3m + 3j + b]` is the
/// velocity along axis a of contact i's frame per unit impulse along axis b
/// of contact j's.
pub fn solve_contacts(rows: &[ContactRow], w: &[f64], tolerance: f64) -> ContactSolve {
    let m = rows.len();
    let n3 = 3 * m;
    assert_eq!(w.len(), n3 * n3, "W is 3m x 3m");
    // u = u_free + W λ in the contact frames, kept up to date.
    let mut u: Vec<f64> = rows
        .iter()
        .flat_map(|r| r.frame.map(|axis| axis.dot(r.free_velocity)))
        .collect();
    let mut lambda = vec![0.0; n3];
    let mut sweeps = 0;
    let mut violation = 0.0;
    let apply = |u: &mut [f64], lambda: &mut [f64], k: usize, delta: f64| {
        if delta != 0.0 {
            lambda[k] += delta;
            for (r, ur) in u.iter_mut().enumerate() {
                *ur += w[r * n3 + k] * delta;
            }
        }
    };
    while sweeps < MAX_SWEEPS {
        sweeps += 1;
        let mut change = 0.0f64;
        for (i, row) in rows.iter().enumerate() {
            let (kn, kt1, kt2) = (3 * i, 3 * i + 1, 3 * i + 2);
            // Normal: λ_n ← max(0, λ_n − (u_n − target)/W_nn).
            let wnn = w[kn * n3 + kn].max(1e-300);
            let new_n = (lambda[kn] - (u[kn] - row.target) / wnn).max(0.0);
            let dn = new_n - lambda[kn];
            apply(&mut u, &mut lambda, kn, dn);
            change = change.max(dn.abs() * wnn);
            // Tangential: the 2×2 block's Newton step towards u_t = 0, then
            // onto the cone's disc.
            let (a, b, c, d) = (
                w[kt1 * n3 + kt1],
                w[kt1 * n3 + kt2],
                w[kt2 * n3 + kt1],
                w[kt2 * n3 + kt2],
            );
            let det = a * d - b * c;
            let (mut t1, mut t2) = (lambda[kt1], lambda[kt2]);
            if det.abs() > 1e-300 {
                t1 -= (d * u[kt1] - b * u[kt2]) / det;
                t2 -= (-c * u[kt1] + a * u[kt2]) / det;
            }
            let limit = row.friction * lambda[kn];
            let norm = (t1 * t1 + t2 * t2).sqrt();
            if norm > limit {
                let s = if norm > 0.0 { limit / norm } else { 0.0 };
                t1 *= s;
                t2 *= s;
            }
            let (d1, d2) = (t1 - lambda[kt1], t2 - lambda[kt2]);
            apply(&mut u, &mut lambda, kt1, d1);
            apply(&mut u, &mut lambda, kt2, d2);
            change = change.max(d1.abs() * a).max(d2.abs() * d);
        }
        violation = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.target - u[3 * i]).max(0.0))
            .fold(0.0, f64::max);
        if change <= tolerance && violation <= tolerance {
            break;
        }
    }
    ContactSolve {
        impulses: (0..m)
            .map(|i| DVec3::new(lambda[3 * i], lambda[3 * i + 1], lambda[3 * i + 2]))
            .collect(),
        sweeps,
        violation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point mass m: W = I/m in any frame.
    fn point_mass(m: f64, rows: &[ContactRow]) -> Vec<f64> {
        let n3 = 3 * rows.len();
        let mut w = vec![0.0; n3 * n3];
        for i in 0..rows.len() {
            for a in 0..3 {
                for j in 0..rows.len() {
                    for b in 0..3 {
                        w[(3 * i + a) * n3 + 3 * j + b] =
                            rows[i].frame[a].dot(rows[j].frame[b]) / m;
                    }
                }
            }
        }
        w
    }

    #[test]
    fn a_falling_mass_stops_without_pulling_and_friction_stays_in_its_cone() {
        let m = 2.0;
        let row = ContactRow {
            frame: ContactRow::frame_of(DVec3::Y),
            free_velocity: DVec3::new(3.0, -1.0, 0.0),
            target: 0.0,
            friction: 0.5,
        };
        let s = solve_contacts(&[row], &point_mass(m, &[row]), 1e-12);
        let l = s.impulses[0];
        // The normal impulse stops the fall exactly: m · 1 m/s.
        assert!((l.x - 2.0).abs() < 1e-9, "{l}");
        // Sliding at 3 m/s is more than friction can stop: at the cone's edge.
        let t = (l.y * l.y + l.z * l.z).sqrt();
        assert!((t - 0.5 * l.x).abs() < 1e-9, "{l}");
        // Opposing the slide.
        let world = row.frame[1] * l.y + row.frame[2] * l.z;
        assert!(world.x < 0.0 && world.x.abs() > 0.999 * t);
        // A mass moving away is left alone.
        let away = ContactRow {
            free_velocity: DVec3::new(3.0, 1.0, 0.0),
            ..row
        };
        let s = solve_contacts(&[away], &point_mass(m, &[away]), 1e-12);
        assert_eq!(s.impulses[0], DVec3::ZERO);
    }

    #[test]
    fn a_slow_slide_sticks_inside_the_cone() {
        let row = ContactRow {
            frame: ContactRow::frame_of(DVec3::Y),
            free_velocity: DVec3::new(0.2, -1.0, 0.0),
            target: 0.0,
            friction: 0.5,
        };
        let s = solve_contacts(&[row], &point_mass(1.0, &[row]), 1e-12);
        let l = s.impulses[0];
        let world = row.frame[1] * l.y + row.frame[2] * l.z;
        // Friction stops the 0.2 m/s slide entirely (0.2 < μ · 1).
        assert!((world.x + 0.2).abs() < 1e-9, "{l}");
    }
}
