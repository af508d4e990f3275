//! Fitting the screen rectangle to measured corners (LEMAN §5.1: "measuring
//! the position of the four corners of the workstation monitor with the 3D
//! mouse").
//!
//! In f64:
//! 1. each corner's samples are averaged;
//! 2. the plane is the least-squares plane of the four points: through their
//!    centroid, normal to the eigenvector of the smallest eigenvalue of their
//!    scatter matrix (a 3×3 symmetric eigenproblem, solved by Jacobi
//!    rotations below);
//! 3. in that plane, the best rectangle in the least-squares sense: its
//!    centre is the centroid; for a unit x axis (y = x turned 90°) the best
//!    width is `A·x / 2` and height `B·y / 2`, where `A = lr + ur − ll − ul`
//!    (twice the mean bottom/top edge) and `B = ur + ul − ll − lr` (twice the
//!    mean left/right edge), and the squared residual is smallest for the x
//!    that maximises `(A·x)² + (B·y)²`: the top eigenvector of the 2×2 matrix
//!    `A Aᵀ + B' B'ᵀ`, with `B'` = B turned −90°. This is the "averaged edge
//!    directions, orthogonalised", done so that the residual is minimal;
//! 4. the residual of a corner is the distance from its averaged measurement
//!    to the fitted corner.
//!
//! Degenerate input is refused with a message that says what to re-measure.

use super::calibration::{COINCIDENT_CORNERS, MAX_SCREEN_SIDE, MIN_SCREEN_SIDE};
use super::error::{CalibrationError, Corner};
use super::projection::Screen;
use glam::{DVec2, DVec3, Vec3};

/// A fit is refused when a corner is further than this fraction of the
/// shorter side from the fitted rectangle.
pub const MAX_RESIDUAL_FRACTION: f64 = 0.1;
/// The viewer must be at least this far from the measured plane (metres),
/// or the side the screen faces cannot be told.
pub const MIN_VIEWER_DISTANCE: f64 = 0.01;
/// The corners are collinear when their spread across the main direction is
/// under this fraction of the spread along it.
const COLLINEAR_SPREAD: f64 = 0.01;

/// The fitted screen and how well the measurements agree with it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScreenFit {
    /// The fitted rectangle, in the space of the samples (tracker space).
    pub screen: Screen,
    /// Root mean square over the four corners of the distance from the
    /// averaged measurement to the fitted corner (metres).
    pub rms_residual: f64,
    /// The largest of those distances (metres).
    pub max_residual: f64,
    /// The corner with the largest residual.
    pub worst_corner: Corner,
    /// Each corner's residual, in measuring order (metres).
    pub residuals: [f64; 4],
    /// How many samples each corner had.
    pub samples: [usize; 4],
    /// Width and height of the fitted rectangle, in f64 (metres).
    pub size: (f64, f64),
    /// The corner most likely mismeasured: the one whose opposite corner
    /// makes the best right angle with the other two.
    pub suspect: Corner,
    /// How far the suspect is from where the other three corners put it
    /// (the fourth corner of their parallelogram), metres.
    pub suspect_offset: f64,
}

/// Fits a rectangle to measured corners, grouped per corner in measuring
/// order (lower-left, lower-right, upper-right, upper-left, counter-clockwise
/// as seen by the viewer); a corner's samples are averaged. `viewer` is any
/// point on the viewing side (the head, or the fixed head of the
/// calibration): it tells a mirrored order from a correct one.
pub fn fit_screen<S: AsRef<[Vec3]>>(
    samples: &[S; 4],
    viewer: Vec3,
) -> Result<ScreenFit, CalibrationError> {
    let mut p = [DVec3::ZERO; 4];
    let mut counts = [0; 4];
    for corner in Corner::ALL {
        let s = samples[corner.index()].as_ref();
        if s.is_empty() {
            return Err(CalibrationError::TooFewSamples { corner, count: 0 });
        }
        if let Some(k) = s.iter().position(|v| !v.is_finite()) {
            return Err(CalibrationError::NonFinite {
                field: format!("sample {} of the {corner} corner", k + 1),
            });
        }
        counts[corner.index()] = s.len();
        p[corner.index()] = s.iter().map(|v| v.as_dvec3()).sum::<DVec3>() / s.len() as f64;
    }
    if !viewer.is_finite() {
        return Err(CalibrationError::NonFinite {
            field: "the viewer position".into(),
        });
    }
    let viewer = viewer.as_dvec3();
    for i in 0..4 {
        for j in i + 1..4 {
            let d = p[i].distance(p[j]);
            if d < COINCIDENT_CORNERS {
                return Err(CalibrationError::CoincidentCorners {
                    a: Corner::ALL[i],
                    b: Corner::ALL[j],
                    distance_mm: d * 1e3,
                });
            }
        }
    }

    // The plane: centroid and principal directions.
    let centre = p.iter().sum::<DVec3>() / 4.0;
    let mut scatter = [[0.0; 3]; 3];
    for q in &p {
        let d = (*q - centre).to_array();
        for r in 0..3 {
            for c in 0..3 {
                scatter[r][c] += d[r] * d[c];
            }
        }
    }
    let (values, vectors) = symmetric_eigen(scatter);
    if values[1] <= COLLINEAR_SPREAD * COLLINEAR_SPREAD * values[0] {
        return Err(CalibrationError::CollinearCorners);
    }
    let mut normal = vectors[2];
    let viewer_distance = normal.dot(viewer - centre);
    if viewer_distance.abs() < MIN_VIEWER_DISTANCE {
        return Err(CalibrationError::NotInFront {
            what: "viewer (the head used to tell the screen's front)",
            distance: viewer_distance as f32,
        });
    }
    if viewer_distance < 0.0 {
        normal = -normal;
    }
    // In-plane coordinates, right-handed as seen from the viewer.
    let e1 = vectors[0];
    let e2 = normal.cross(e1);
    let q = p.map(|v| DVec2::new((v - centre).dot(e1), (v - centre).dot(e2)));

    check_order(&q)?;

    // The least-squares rectangle in the plane.
    let a = q[1] + q[2] - q[0] - q[3];
    let b = q[2] + q[3] - q[0] - q[1];
    let b_turned = DVec2::new(b.y, -b.x); // B·y = B'·x for y = x turned +90°
    let (sxx, sxy, syy) = (
        a.x * a.x + b_turned.x * b_turned.x,
        a.x * a.y + b_turned.x * b_turned.y,
        a.y * a.y + b_turned.y * b_turned.y,
    );
    let phi = 0.5 * (2.0 * sxy).atan2(sxx - syy);
    let mut x = DVec2::new(phi.cos(), phi.sin());
    if x.dot(a) < 0.0 {
        x = -x;
    }
    let y = x.perp();
    let (width, height) = (0.5 * a.dot(x), 0.5 * b.dot(y));
    if !(MIN_SCREEN_SIDE..=MAX_SCREEN_SIDE).contains(&width)
        || !(MIN_SCREEN_SIDE..=MAX_SCREEN_SIDE).contains(&height)
    {
        return Err(CalibrationError::ScreenSize {
            width,
            height,
            min: MIN_SCREEN_SIDE,
            max: MAX_SCREEN_SIDE,
        });
    }
    let right = e1 * x.x + e2 * x.y;
    let up = e1 * y.x + e2 * y.y;
    let (hw, hh) = (0.5 * width * right, 0.5 * height * up);
    let fitted = [
        centre - hw - hh,
        centre + hw - hh,
        centre + hw + hh,
        centre - hw + hh,
    ];
    let residuals: [f64; 4] = std::array::from_fn(|i| p[i].distance(fitted[i]));
    let worst = (0..4)
        .max_by(|&i, &j| residuals[i].total_cmp(&residuals[j]))
        .expect("four corners");
    let max_residual = residuals[worst];
    let rms_residual = (residuals.iter().map(|r| r * r).sum::<f64>() / 4.0).sqrt();
    let tolerance = MAX_RESIDUAL_FRACTION * width.min(height);
    let (suspect, suspect_offset) = culprit(&p);
    if max_residual > tolerance {
        return Err(CalibrationError::NotRectangle {
            corner: suspect,
            off_mm: suspect_offset * 1e3,
            residual_mm: max_residual * 1e3,
            tolerance_mm: tolerance * 1e3,
        });
    }
    Ok(ScreenFit {
        screen: Screen {
            lower_left: fitted[0].as_vec3(),
            lower_right: fitted[1].as_vec3(),
            upper_left: fitted[3].as_vec3(),
        },
        rms_residual,
        max_residual,
        worst_corner: Corner::ALL[worst],
        residuals,
        samples: counts,
        size: (width, height),
        suspect,
        suspect_offset,
    })
}

/// The corner most likely mismeasured, and how far it is from where the
/// other three put it (the fourth corner of their parallelogram).
///
/// When one corner is wrong, the other three still meet at a right angle at
/// the corner opposite it, so the suspect is the corner whose opposite angle
/// is closest to 90°. (A single corner pushed straight out of the plane
/// leaves three right angles, and no measurement can tell which one moved;
/// the message then asks to re-measure all four if the named one was right.)
fn culprit(p: &[DVec3; 4]) -> (Corner, f64) {
    let skew = |i: usize| {
        let o = p[(i + 2) % 4];
        let (a, b) = (p[(i + 1) % 4] - o, p[(i + 3) % 4] - o);
        (a.dot(b) / (a.length() * b.length())).abs()
    };
    let i = (0..4)
        .min_by(|&i, &j| skew(i).total_cmp(&skew(j)))
        .expect("four corners");
    let predicted = p[(i + 1) % 4] + p[(i + 3) % 4] - p[(i + 2) % 4];
    (Corner::ALL[i], p[i].distance(predicted))
}

/// The turn at corner `i + 1` of the closed path through `q` (positive:
/// counter-clockwise).
fn turns(q: &[DVec2; 4]) -> [f64; 4] {
    std::array::from_fn(|i| {
        let (a, b, c) = (q[i], q[(i + 1) % 4], q[(i + 2) % 4]);
        (b - a).perp_dot(c - b)
    })
}

/// Refuses a path that does not go around the quadrilateral (two turns each
/// way: a bow tie, two corners measured in swapped order) or goes around it
/// clockwise as seen from the viewer (mirrored). Other irregular shapes are
/// left to the residual test.
fn check_order(q: &[DVec2; 4]) -> Result<(), CalibrationError> {
    let t = turns(q);
    let scale = t.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    let significant = |v: f64| v.abs() > 1e-3 * scale;
    let positive = t.iter().filter(|&&v| significant(v) && v > 0.0).count();
    let negative = t.iter().filter(|&&v| significant(v) && v < 0.0).count();
    if positive == 2 && negative == 2 {
        // Which two neighbours, exchanged, make a counter-clockwise loop?
        for i in 0..4 {
            let mut swapped = *q;
            swapped.swap(i, (i + 1) % 4);
            if turns(&swapped).iter().all(|&v| v > 0.0) {
                return Err(CalibrationError::OutOfOrder {
                    first: Corner::ALL[i],
                    second: Corner::ALL[(i + 1) % 4],
                });
            }
        }
        return Err(CalibrationError::OutOfOrder {
            first: Corner::ALL[0],
            second: Corner::ALL[1],
        });
    }
    let area: f64 = (0..4).map(|i| q[i].perp_dot(q[(i + 1) % 4])).sum();
    if area < 0.0 {
        return Err(CalibrationError::Mirrored);
    }
    Ok(())
}

/// Eigenvalues (descending) and unit eigenvectors of a symmetric 3×3 matrix
/// (nalgebra's symmetric eigensolver).
pub(crate) fn symmetric_eigen(m: [[f64; 3]; 3]) -> ([f64; 3], [DVec3; 3]) {
    let e = nalgebra::Matrix3::from_fn(|i, j| m[i][j]).symmetric_eigen();
    let mut order = [0, 1, 2];
    order.sort_by(|&i, &j| e.eigenvalues[j].total_cmp(&e.eigenvalues[i]));
    let values = order.map(|i| e.eigenvalues[i]);
    let vectors = order.map(|i| {
        let c = e.eigenvectors.column(i);
        DVec3::new(c[0], c[1], c[2]).normalize()
    });
    (values, vectors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::{DMat3, Quat};

    /// A seeded PCG with Gaussian samples (Box–Muller), so the noise tests
    /// are reproducible.
    struct Rng(rand_pcg::Pcg64Mcg);

    impl Rng {
        fn new(seed: u64) -> Self {
            Self(rand::SeedableRng::seed_from_u64(seed))
        }
        /// Uniform in (0, 1]: the logarithm below never sees 0.
        fn uniform(&mut self) -> f64 {
            1.0 - rand::Rng::random::<f64>(&mut self.0)
        }
        fn gaussian(&mut self) -> f64 {
            let (u, v) = (self.uniform(), self.uniform());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
        }
        fn vec3(&mut self, sigma: f64) -> DVec3 {
            DVec3::new(self.gaussian(), self.gaussian(), self.gaussian()) * sigma
        }
    }

    /// A 0.60 × 0.34 m screen, turned and tilted, off the tracker origin.
    fn screen() -> Screen {
        let rotation = Quat::from_rotation_y(0.35) * Quat::from_rotation_x(-0.2);
        Screen::centred(
            Vec3::new(0.12, -0.05, 0.2),
            0.6,
            0.34,
            rotation * Vec3::Z,
            rotation * Vec3::Y,
        )
    }

    fn viewer(s: &Screen) -> Vec3 {
        s.centre() + 0.7 * s.normal()
    }

    fn exact(s: &Screen) -> [Vec<Vec3>; 4] {
        s.corners().map(|c| vec![c])
    }

    #[test]
    fn the_eigensolver_solves_a_symmetric_eigenproblem() {
        let mut rng = Rng::new(7);
        for _ in 0..20 {
            let r: [[f64; 3]; 3] = std::array::from_fn(|_| std::array::from_fn(|_| rng.gaussian()));
            let m: [[f64; 3]; 3] =
                std::array::from_fn(|i| std::array::from_fn(|j| r[i][j] + r[j][i]));
            let (values, vectors) = symmetric_eigen(m);
            let mm = DMat3::from_cols_array_2d(&m).transpose();
            for k in 0..3 {
                let residual = mm * vectors[k] - values[k] * vectors[k];
                assert!(residual.length() < 1e-12, "{residual}");
                for l in 0..3 {
                    let expected = if k == l { 1.0 } else { 0.0 };
                    assert!((vectors[k].dot(vectors[l]) - expected).abs() < 1e-12);
                }
            }
            assert!(values[0] >= values[1] && values[1] >= values[2]);
        }
    }

    /// Four exact corners of a turned, tilted and moved rectangle give that
    /// rectangle back, to f32 precision, with zero residual.
    #[test]
    fn exact_rectangle_is_recovered() {
        let s = screen();
        let fit = fit_screen(&exact(&s), viewer(&s)).unwrap();
        for (got, want) in fit.screen.corners().iter().zip(s.corners()) {
            assert!(got.distance(want) < 1e-6, "{got} vs {want}");
        }
        assert!(fit.max_residual < 1e-6 && fit.rms_residual < 1e-6);
        assert!((fit.size.0 - 0.6).abs() < 1e-6 && (fit.size.1 - 0.34).abs() < 1e-6);
        assert_eq!(fit.samples, [1; 4]);
    }

    /// Independent Gaussian noise of σ = 2 mm per coordinate on one sample
    /// per corner: 12 measured numbers, 8 fitted (centre 3, orientation 3,
    /// width, height), so E[Σ residual²] = (12 − 8) σ² and the expected mean
    /// square corner residual is σ². The width is half of (A·x), a sum of
    /// four samples with signs, so its error has standard deviation σ (the
    /// height alike). Over 400 seeded trials both are checked within 15%
    /// (their standard errors are about 4%). Averaging 8 rounds per corner
    /// cuts the size error √8 times.
    #[test]
    fn noisy_measurements_have_the_predicted_residual_and_size_error() {
        let s = screen();
        let sigma = 0.002;
        let mut rng = Rng::new(2024);
        let size_error_rms = |rng: &mut Rng, rounds: usize, trials: usize| {
            let mut mean_square_residual = 0.0;
            let mut mean_square_size = 0.0;
            for _ in 0..trials {
                let noisy = s.corners().map(|c| {
                    (0..rounds)
                        .map(|_| (c.as_dvec3() + rng.vec3(sigma)).as_vec3())
                        .collect::<Vec<_>>()
                });
                let fit = fit_screen(&noisy, viewer(&s)).unwrap();
                assert_eq!(fit.samples, [rounds; 4]);
                mean_square_residual += fit.rms_residual.powi(2) / trials as f64;
                mean_square_size += ((fit.size.0 - 0.6).powi(2) + (fit.size.1 - 0.34).powi(2))
                    / (2 * trials) as f64;
            }
            (mean_square_residual.sqrt(), mean_square_size.sqrt())
        };
        let (residual, size) = size_error_rms(&mut rng, 1, 400);
        assert!(
            (residual / sigma - 1.0).abs() < 0.15,
            "rms residual {residual}"
        );
        assert!((size / sigma - 1.0).abs() < 0.15, "rms size error {size}");
        let (residual, size) = size_error_rms(&mut rng, 8, 400);
        let expected = sigma / 8f64.sqrt();
        assert!(
            (residual / expected - 1.0).abs() < 0.15,
            "rms residual {residual}"
        );
        assert!(
            (size / expected - 1.0).abs() < 0.15,
            "rms size error {size}"
        );
    }

    #[test]
    fn degenerate_measurements_are_refused_with_the_right_reason() {
        let s = screen();
        let v = viewer(&s);
        let [ll, lr, ur, ul] = s.corners();

        let missing: [Vec<Vec3>; 4] = [vec![ll], vec![lr], vec![], vec![ul]];
        assert_eq!(
            fit_screen(&missing, v).unwrap_err(),
            CalibrationError::TooFewSamples {
                corner: Corner::UpperRight,
                count: 0
            }
        );

        let coincident = [[ll], [lr], [lr], [ul]];
        assert!(matches!(
            fit_screen(&coincident, v).unwrap_err(),
            CalibrationError::CoincidentCorners {
                a: Corner::LowerRight,
                b: Corner::UpperRight,
                ..
            }
        ));

        let along = lr - ll;
        let collinear = [[ll], [ll + 0.3 * along], [ll + 0.7 * along], [lr]];
        assert_eq!(
            fit_screen(&collinear, v).unwrap_err(),
            CalibrationError::CollinearCorners
        );

        // A trapezoid: the top edge 40% shorter than the bottom one.
        let shrink = 0.2 * along;
        let trapezoid = [[ll], [lr], [ur - shrink], [ul + shrink]];
        assert!(matches!(
            fit_screen(&trapezoid, v).unwrap_err(),
            CalibrationError::NotRectangle { .. }
        ));

        // One corner 8 cm off sideways: the fitted rectangle misses by about
        // 4 cm (δ/2 without the small rotation the shear also causes; over a
        // tenth of the 0.34 m side), and the three good corners name the bad
        // one and exactly how far it is off.
        let right = along.normalize();
        let off = [[ll], [lr], [ur + 0.08 * right], [ul]];
        match fit_screen(&off, v).unwrap_err() {
            CalibrationError::NotRectangle {
                corner,
                off_mm,
                residual_mm,
                ..
            } => {
                assert_eq!(corner, Corner::UpperRight);
                assert!((off_mm - 80.0).abs() < 1e-3, "{off_mm}");
                assert!((34.0..42.0).contains(&residual_mm), "{residual_mm}");
            }
            e => panic!("{e}"),
        }
        // Out of the plane by 16 cm: a twist, which leaves each corner δ/4
        // = 4 cm off the best plane; refused.
        let twisted = [[ll], [lr], [ur + 0.16 * s.normal()], [ul]];
        match fit_screen(&twisted, v).unwrap_err() {
            CalibrationError::NotRectangle {
                off_mm,
                residual_mm,
                ..
            } => {
                assert!((off_mm - 160.0).abs() < 1e-3, "{off_mm}");
                // δ/4 out of the best plane, plus a little in it (the
                // best plane is tilted, which shortens the projected edges).
                assert!((38.0..46.0).contains(&residual_mm), "{residual_mm}");
            }
            e => panic!("{e}"),
        }
        // 2 cm off sideways is accepted, with the residual (about 1 cm)
        // reported and the width grown by about half of it.
        let near = [[ll], [lr], [ur + 0.02 * right], [ul]];
        let fit = fit_screen(&near, v).unwrap();
        assert_eq!(fit.suspect, Corner::UpperRight);
        assert!((fit.suspect_offset - 0.02).abs() < 1e-6);
        assert!(
            (0.008..0.011).contains(&fit.max_residual),
            "{}",
            fit.max_residual
        );
        assert!((fit.size.0 - 0.61).abs() < 1e-3, "{}", fit.size.0);

        // Seen from the viewer, going lr, ll, ul, ur is clockwise.
        let mirrored = [[lr], [ll], [ul], [ur]];
        assert_eq!(
            fit_screen(&mirrored, v).unwrap_err(),
            CalibrationError::Mirrored
        );
        // The same measurements are fine for a viewer on the other side.
        let behind = s.centre() - 0.7 * s.normal();
        fit_screen(&mirrored, behind).unwrap();

        // Upper-right and upper-left measured in swapped order: a bow tie.
        let crossed = [[ll], [lr], [ul], [ur]];
        assert_eq!(
            fit_screen(&crossed, v).unwrap_err(),
            CalibrationError::OutOfOrder {
                first: Corner::UpperRight,
                second: Corner::UpperLeft
            }
        );

        let in_plane = s.centre() + 0.5 * along;
        assert!(matches!(
            fit_screen(&exact(&s), in_plane).unwrap_err(),
            CalibrationError::NotInFront { .. }
        ));

        let tiny = Screen::centred(Vec3::ZERO, 0.04, 0.03, Vec3::Z, Vec3::Y);
        assert!(matches!(
            fit_screen(&exact(&tiny), Vec3::Z).unwrap_err(),
            CalibrationError::ScreenSize { .. }
        ));

        let nan = [[ll], [lr], [Vec3::NAN], [ul]];
        assert!(matches!(
            fit_screen(&nan, v).unwrap_err(),
            CalibrationError::NonFinite { .. }
        ));
    }
}
