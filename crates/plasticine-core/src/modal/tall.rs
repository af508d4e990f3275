//! Products with the sparse eigensolver's tall, thin blocks (its Krylov
//! basis: a DOF per row, a few hundred columns) on two threads. faer runs
//! sequentially here, so each product is split in two by rows, a half per
//! thread: always in two, so the arithmetic (and a part's modes) is the
//! same on any number of threads.

use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatMut, MatRef, Par};

/// `dst ← lhs·rhs·alpha` (`Accum::Replace`) or `dst += lhs·rhs·alpha`
/// (`Accum::Add`), `lhs` as tall as `dst`.
pub fn mul_into(
    dst: MatMut<'_, f64>,
    accum: Accum,
    lhs: MatRef<'_, f64>,
    rhs: MatRef<'_, f64>,
    alpha: f64,
) {
    let half = dst.nrows() / 2;
    let (top, bottom) = dst.split_at_row_mut(half);
    let (lhs_top, lhs_bottom) = lhs.split_at_row(half);
    rayon::join(
        || matmul(top, accum, lhs_top, rhs, alpha, Par::Seq),
        || matmul(bottom, accum, lhs_bottom, rhs, alpha, Par::Seq),
    );
}

/// `lhs·rhs`, `lhs` tall.
pub fn mul(lhs: MatRef<'_, f64>, rhs: MatRef<'_, f64>) -> Mat<f64> {
    let mut out = Mat::zeros(lhs.nrows(), rhs.ncols());
    mul_into(out.as_mut(), Accum::Replace, lhs, rhs, 1.0);
    out
}

/// `lhsᵀ·rhs`, both tall (their inner products): each half of the rows'
/// products, then their sum.
pub fn tmul(lhs: MatRef<'_, f64>, rhs: MatRef<'_, f64>) -> Mat<f64> {
    let half = lhs.nrows() / 2;
    let (lhs_top, lhs_bottom) = lhs.split_at_row(half);
    let (rhs_top, rhs_bottom) = rhs.split_at_row(half);
    let product = |l: MatRef<'_, f64>, r: MatRef<'_, f64>| {
        let mut out = Mat::zeros(l.ncols(), r.ncols());
        matmul(
            out.as_mut(),
            Accum::Replace,
            l.transpose(),
            r,
            1.0,
            Par::Seq,
        );
        out
    };
    let (mut top, bottom) = rayon::join(
        || product(lhs_top, rhs_top),
        || product(lhs_bottom, rhs_bottom),
    );
    top += bottom;
    top
}

/// `w ← w − q·(qᵀw)`: a pass of classical Gram–Schmidt of the block `w`
/// against the orthonormal `q`.
pub fn project_out(q: MatRef<'_, f64>, w: MatMut<'_, f64>) {
    let c = tmul(q, w.as_ref());
    mul_into(w, Accum::Add, q, c.as_ref(), -1.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The split products equal faer's whole ones (to rounding), odd row
    /// counts included.
    #[test]
    fn split_products_equal_whole_ones() {
        for rows in [1, 2, 7, 100] {
            let a = Mat::<f64>::from_fn(rows, 5, |i, j| ((i * 31 + j * 7) % 13) as f64 - 6.0);
            let b = Mat::<f64>::from_fn(rows, 3, |i, j| ((i * 17 + j * 5) % 11) as f64 - 5.0);
            let c = Mat::<f64>::from_fn(5, 3, |i, j| (i as f64 - j as f64) * 0.5);
            let close =
                |x: &Mat<f64>, y: &Mat<f64>| (x - y).norm_max() <= 1e-12 * (1.0 + y.norm_max());
            assert!(close(&tmul(a.as_ref(), b.as_ref()), &(a.transpose() * &b)));
            assert!(close(&mul(a.as_ref(), c.as_ref()), &(&a * &c)));
            let mut w = b.clone();
            mul_into(w.as_mut(), Accum::Add, a.as_ref(), c.as_ref(), -2.0);
            assert!(close(&w, &(&b - &a * &c * 2.0)));
        }
    }
}
