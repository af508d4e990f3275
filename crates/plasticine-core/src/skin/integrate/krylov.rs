//! Matrix-free `BiCGSTAB` for the linear systems of the implicit integrators.
//! The operators (I − h∂a/∂v − h²∂a/∂r, or I − γhJ) are applied through
//! finite-difference directional derivatives of the forces, so no Jacobian is
//! ever assembled.

use glam::Vec3;

fn dot(a: &[Vec3], b: &[Vec3]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.as_dvec3().dot(y.as_dvec3()))
        .sum()
}

/// Solves A x = b from the initial guess in `x`. Returns (iterations, relative residual).
pub fn bicgstab(
    mut apply: impl FnMut(&[Vec3], &mut [Vec3]),
    b: &[Vec3],
    x: &mut [Vec3],
    rel_tol: f64,
    max_iter: usize,
) -> (usize, f64) {
    let n = b.len();
    let bnorm = dot(b, b).sqrt();
    if bnorm == 0.0 {
        x.fill(Vec3::ZERO);
        return (0, 0.0);
    }
    let mut r = vec![Vec3::ZERO; n];
    apply(x, &mut r);
    for k in 0..n {
        r[k] = b[k] - r[k];
    }
    let r_hat = r.clone();
    let (mut rho, mut alpha, mut omega) = (1.0f64, 1.0f64, 1.0f64);
    let mut v = vec![Vec3::ZERO; n];
    let mut p = vec![Vec3::ZERO; n];
    let mut s = vec![Vec3::ZERO; n];
    let mut t = vec![Vec3::ZERO; n];
    let mut res = dot(&r, &r).sqrt() / bnorm;
    for it in 0..max_iter {
        if res <= rel_tol {
            return (it, res);
        }
        let rho_new = dot(&r_hat, &r);
        if rho_new.abs() < 1e-300 {
            return (it, res);
        }
        let beta = (rho_new / rho) * (alpha / omega);
        rho = rho_new;
        for k in 0..n {
            p[k] = r[k] + (beta as f32) * (p[k] - (omega as f32) * v[k]);
        }
        apply(&p, &mut v);
        let rv = dot(&r_hat, &v);
        if rv.abs() < 1e-300 {
            return (it, res);
        }
        alpha = rho / rv;
        for k in 0..n {
            s[k] = r[k] - (alpha as f32) * v[k];
        }
        let snorm = dot(&s, &s).sqrt() / bnorm;
        if snorm <= rel_tol {
            for k in 0..n {
                x[k] += (alpha as f32) * p[k];
            }
            return (it + 1, snorm);
        }
        apply(&s, &mut t);
        let tt = dot(&t, &t);
        omega = if tt > 0.0 { dot(&t, &s) / tt } else { 0.0 };
        for k in 0..n {
            x[k] += (alpha as f32) * p[k] + (omega as f32) * s[k];
            r[k] = s[k] - (omega as f32) * t[k];
        }
        res = dot(&r, &r).sqrt() / bnorm;
        if omega == 0.0 {
            return (it + 1, res);
        }
    }
    (max_iter, res)
}

/// max |`x_k`| over components, for sizing finite-difference perturbations.
pub fn max_abs(x: &[Vec3]) -> f32 {
    x.iter().map(|v| v.abs().max_element()).fold(0.0, f32::max)
}

/// Relative size of finite-difference perturbations (≈ √ε of f32, scaled).
pub const FD_STEP: f32 = 3e-4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_a_nonsymmetric_system() {
        // A = tridiagonal, non-symmetric, diagonally dominant.
        let n = 40;
        let apply = |x: &[Vec3], y: &mut [Vec3]| {
            for k in 0..n {
                let mut s = 4.0 * x[k];
                if k > 0 {
                    s -= 1.5 * x[k - 1];
                }
                if k + 1 < n {
                    s += 0.7 * x[k + 1];
                }
                y[k] = s;
            }
        };
        let truth: Vec<Vec3> = (0..n)
            .map(|k| Vec3::new(k as f32, 1.0, -(k as f32).sin()))
            .collect();
        let mut b = vec![Vec3::ZERO; n];
        apply(&truth, &mut b);
        let mut x = vec![Vec3::ZERO; n];
        let (_, res) = bicgstab(apply, &b, &mut x, 1e-6, 200);
        assert!(res <= 1e-6);
        for k in 0..n {
            assert!(
                (x[k] - truth[k]).length() < 1e-3,
                "{k}: {} vs {}",
                x[k],
                truth[k]
            );
        }
    }
}
