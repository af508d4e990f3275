use super::energy::quad_fade;
use super::fused::add_elastic_forces_in_bands;
use super::*;
use std::f64::consts::PI;

/// A surface of revolution r(u1, u2) = (ρ cos φ, z, −ρ sin φ), φ = 2πu1 +
/// twist·z, z = H u2: counter-clockwise about +y, so its normals point out.
fn revolution(m: usize, n: usize, radius: impl Fn(f64) -> f64, twist: f64) -> Vec<Vec3> {
    let h = 0.6;
    let mut r = Vec::with_capacity(m * n);
    for j in 0..n {
        for i in 0..m {
            let z = h * j as f64 / (n - 1) as f64;
            let phi = 2.0 * PI * i as f64 / m as f64 + twist * z;
            let rho = radius(z);
            r.push(Vec3::new(
                (rho * phi.cos()) as f32,
                z as f32,
                (-rho * phi.sin()) as f32,
            ));
        }
    }
    r
}

/// Grid, positions, rest metric, rest curvature, stretch and bend of a
/// wobbly tube with non-trivial (and different) rest state.
fn setup(m: usize, n: usize) -> (Grid, Vec<Vec3>, ElasticMaterial) {
    let g = Grid::new(m, n);
    let mut r = revolution(m, n, |z| 0.3 + 0.02 * (7.0 * z).cos(), 0.4);
    for (k, x) in r.iter_mut().enumerate() {
        let (i, j) = (k % m, k / m);
        let phi = i as f32 / m as f32 * std::f32::consts::TAU;
        *x += Vec3::new(0.0, 0.01 * (2.0 * phi).cos(), 0.0)
            + 0.04 * (3.0 * phi).sin() * (j as f32 / n as f32) * x.normalize_or_zero();
    }
    let rest_shape = revolution(m, n, |z| 0.25 + 0.03 * (5.0 * z).sin(), -0.2);
    let rm = rest_metric_of(&g, &rest_shape);
    let rc = rest_curvature_of(&g, &rest_shape, &rm);
    let p = g.points();
    let st: Vec<[f32; 3]> = (0..p)
        .map(|k| [1.0 + 0.1 * (k % 4) as f32, 0.5, 0.8])
        .collect();
    let be: Vec<f32> = (0..p).map(|k| 0.01 + 0.001 * (k % 7) as f32).collect();
    let mat = ElasticMaterial::new(&g, &rm, &rc, &st, &be);
    (g, r, mat)
}

/// Bending alone (no membrane), rigidity `xi` everywhere, at rest in `rest`.
fn bending_only(g: &Grid, rest: &[Vec3], xi: f32) -> ElasticMaterial {
    let p = g.points();
    let rm = rest_metric_of(g, rest);
    ElasticMaterial::new(
        g,
        &rm,
        &rest_curvature_of(g, rest, &rm),
        &vec![[0.0; 3]; p],
        &vec![xi; p],
    )
}

fn forces(g: &Grid, mat: &ElasticMaterial, r: &[Vec3]) -> Vec<Vec3> {
    let mut f = vec![Vec3::ZERO; g.points()];
    add_elastic_forces(g, mat, r, &mut Scratch::default(), &mut f);
    f
}

/// Central differences of the energy against the force, over the interior
/// points (every `stride`th): (max |F + dE/dr|, max |dE/dr|).
fn gradient_error(
    g: &Grid,
    mat: &ElasticMaterial,
    r: &[Vec3],
    eps: f32,
    stride: usize,
) -> (f64, f64) {
    let f = forces(g, mat, r);
    let (mut worst, mut scale) = (0.0f64, 0.0f64);
    for k in (g.m..g.points() - g.m).step_by(stride) {
        for c in 0..3 {
            let mut rp = r.to_vec();
            rp[k][c] += eps;
            let mut rn = r.to_vec();
            rn[k][c] -= eps;
            let fd =
                -(elastic_energy(g, mat, &rp) - elastic_energy(g, mat, &rn)) / (2.0 * eps as f64);
            worst = worst.max((fd - f[k][c] as f64).abs());
            scale = scale.max(fd.abs());
        }
    }
    (worst, scale)
}

/// The force is the exact negative gradient of the energy (membrane, hinges
/// with their edge directions, twist with its normalisation), at several
/// resolutions.
#[test]
fn elastic_force_is_the_negative_energy_gradient() {
    for (m, n) in [(9, 7), (16, 12), (24, 20)] {
        let (g, r, mat) = setup(m, n);
        // Every interior point at the small grids, a sample at the larger.
        let stride = if m * n > 200 { 7 } else { 1 };
        let (worst, scale) = gradient_error(&g, &mat, &r, 2e-4, stride);
        assert!(scale > 1e-3, "{m}x{n}: the test geometry produces forces");
        assert!(
            worst < 3e-3 * scale,
            "{m}x{n}: max |F + dE/dr| = {worst} vs scale {scale}"
        );
    }
}

/// The bending part alone (membrane off) also matches its energy: the hinge
/// and twist terms are not hidden behind larger membrane forces.
#[test]
fn bending_force_alone_is_its_energy_gradient() {
    let (g, r, _) = setup(12, 10);
    let rest = revolution(12, 10, |z| 0.25 + 0.03 * (5.0 * z).sin(), -0.2);
    let mat = bending_only(&g, &rest, 0.02);
    let (worst, scale) = gradient_error(&g, &mat, &r, 2e-4, 1);
    assert!(scale > 1e-4, "bending forces present ({scale})");
    assert!(worst < 3e-3 * scale, "max |F + dE/dr| = {worst} vs {scale}");
}

/// Rigid motions change neither stretch nor angles: a rigidly moved rest
/// shape feels no force and stores no energy.
#[test]
fn a_rigidly_moved_rest_shape_feels_no_force() {
    let (g, r, _) = setup(12, 8);
    let p = g.points();
    let st = vec![[1.0, 0.5, 0.8]; p];
    let be = vec![0.01; p];
    let rm = rest_metric_of(&g, &r);
    let mat = ElasticMaterial::new(&g, &rm, &rest_curvature_of(&g, &r, &rm), &st, &be);
    let q = glam::Quat::from_euler(glam::EulerRot::XYZ, 0.3, -1.1, 0.7);
    let moved: Vec<Vec3> = r
        .iter()
        .map(|p| q * *p + Vec3::new(1.0, -2.0, 0.5))
        .collect();
    let f = forces(&g, &mat, &moved);
    let fmax = f.iter().map(|v| v.length()).fold(0.0, f32::max);
    assert!(fmax < 1e-3, "max force {fmax}");
    assert!(elastic_energy(&g, &mat, &moved) < 1e-8);
}

/// The fused sweep gives the scalar passes' forces, and the same bits
/// whatever the number of bands the rows are cut into (so a bake does not
/// depend on the thread count).
#[test]
fn bands_match_the_scalar_passes_and_each_other() {
    for (m, n) in [(64, 40), (13, 30)] {
        let (g, r, mat) = setup(m, n);
        let (reference, _) = super::reference::forces(&g, &mat, &r);
        let swept = |bands: usize| {
            let mut f = vec![Vec3::ZERO; g.points()];
            add_elastic_forces_in_bands(&g, &mat, &r, &mut Scratch::default(), &mut f, bands);
            f
        };
        let one = swept(1);
        for k in g.m..g.points() - g.m {
            let (a, b) = (reference[k], one[k]);
            assert!(
                (a - b).length() <= 1e-6 * (1.0 + a.length()),
                "{m}x{n} point {k}: swept {b} scalar {a}"
            );
        }
        let bits = |f: &[Vec3]| -> Vec<u32> {
            f.iter()
                .flat_map(|x| x.to_array().map(f32::to_bits))
                .collect()
        };
        for bands in [2, 3, 5] {
            assert!(
                bits(&swept(bands)) == bits(&one),
                "{m}x{n}: {bands} bands differ from one"
            );
        }
        // The boundary rows get no force.
        let boundary = one[..g.m].iter().chain(&one[g.points() - g.m..]);
        assert!(boundary.into_iter().all(|x| *x == Vec3::ZERO));
    }
}

/// The bending energy does not change when the surface is scaled: folding
/// the grid up with collapsed spacing costs as much as a fold at full size.
/// (Terzopoulos' B = n·D²r scales with the square of the spacing, which is
/// what let a large bending rigidity shred the skin.)
#[test]
fn bending_energy_is_scale_invariant() {
    let (g, r, _) = setup(16, 12);
    let flat = revolution(16, 12, |_| 0.3, 0.0);
    let mat = bending_only(&g, &flat, 0.05);
    let e = elastic_energy(&g, &mat, &r);
    assert!(e > 1e-4, "the wobble bends ({e})");
    for s in [0.01f32, 0.3, 4.0, 100.0] {
        let scaled: Vec<Vec3> = r.iter().map(|x| *x * s).collect();
        let es = elastic_energy(&g, &mat, &scaled);
        assert!((es - e).abs() < 1e-4 * e, "scale {s}: {es} vs {e}");
    }
}

/// Along an edge the membrane's restoring force grows as the edge is
/// compressed, all the way to zero length (the St Venant–Kirchhoff force
/// fell off below l₀/√3 and vanished at 0). With shear, which fades on
/// edges compressed below [`SHEAR_FADE`], the edge still pushes back at
/// every length, and harder at 2 % than at 90 %.
#[test]
fn a_compressed_edge_pushes_back_harder_the_more_it_is_compressed() {
    let (m, n) = (8, 5);
    let g = Grid::new(m, n);
    let rest = revolution(m, n, |_| 0.2, 0.0);
    let p = g.points();
    // Move point (0, 2) up towards (0, 3): its up edge shortens (and, the
    // point leaving its row, its around edges shear).
    let (k, up) = (g.idx(0, 2), g.idx(0, 3));
    let l0 = (rest[up] - rest[k]).length();
    for shear in [0.0f32, 0.5] {
        let mat = ElasticMaterial::new(
            &g,
            &rest_metric_of(&g, &rest),
            &vec![[0.0; 3]; p],
            &vec![[1.0, shear, 1.0]; p],
            &vec![0.0; p],
        );
        let pushes: Vec<f32> = [0.9f32, 0.7, 0.5, 0.3, 0.1, 0.02]
            .iter()
            .map(|frac| {
                let mut r = rest.clone();
                r[k] = rest[up] + (rest[k] - rest[up]) * *frac;
                // The force at the moved point along the edge, away from `up`.
                forces(&g, &mat, &r)[k].dot((rest[k] - rest[up]) / l0)
            })
            .collect();
        if shear == 0.0 {
            assert!(
                pushes.windows(2).all(|w| w[1] > w[0]),
                "membrane: {pushes:?}"
            );
        } else {
            assert!(pushes.iter().all(|&f| f > 0.0), "with shear: {pushes:?}");
            assert!(pushes[5] > pushes[0], "with shear: {pushes:?}");
        }
    }
}

/// The bending energy of a surface of revolution converges to the continuum
/// ½ξ∫(κ11² + κ22²) dA with the principal curvatures κ11 = 1/(ρ√(1+ρ'²))
/// (along the parallels) and κ22 = −ρ''/(1+ρ'²)^{3/2} (along the meridians),
/// dA = 2πρ√(1+ρ'²) dz, at second order.
#[test]
fn bending_energy_converges_to_the_continuum_value() {
    let h = 0.6f64;
    let (r0, amp) = (0.2f64, 0.05f64);
    let w = 2.0 * PI / h;
    let rho = |z: f64| r0 + amp * (w * z).sin();
    let xi = 0.01f64;
    // The rows next to the rings do not bend (simply supported edges): the
    // around hinges cover u2 in [h2, 1 − h2], the up hinges [1.5h2, 1 − 1.5h2].
    let exact = |res: usize| {
        let h2 = 1.0 / (res - 1) as f64;
        let steps = 20000;
        let mut s = 0.0;
        for q in 0..steps {
            let u = (q as f64 + 0.5) / steps as f64;
            let z = h * u;
            let d1 = amp * w * (w * z).cos();
            let d2 = -amp * w * w * (w * z).sin();
            let slope = (1.0 + d1 * d1).sqrt();
            let k11 = 1.0 / (rho(z) * slope);
            let k22 = -d2 / slope.powi(3);
            let mut k2 = 0.0;
            if u > h2 && u < 1.0 - h2 {
                k2 += k11 * k11;
            }
            if u > 1.5 * h2 && u < 1.0 - 1.5 * h2 {
                k2 += k22 * k22;
            }
            s += k2 * 2.0 * PI * rho(z) * slope * h / steps as f64;
        }
        0.5 * xi * s
    };
    let mut errors = Vec::new();
    for res in [16usize, 32, 64] {
        let g = Grid::new(res, res);
        let r = revolution(res, res, rho, 0.0);
        let p = g.points();
        let rm = rest_metric_of(&g, &r);
        let mat = ElasticMaterial::new(
            &g,
            &rm,
            &vec![[0.0; 3]; p],
            &vec![[0.0; 3]; p],
            &vec![xi as f32; p],
        );
        let (_, eb) = elastic_energy_parts(&g, &mat, &r);
        errors.push(((eb - exact(res)) / exact(res)).abs());
    }
    assert!(errors[2] < 5e-3, "64x64 within 0.5 %: {errors:?}");
    for w in errors.windows(2) {
        assert!(w[1] < 0.35 * w[0], "second-order convergence: {errors:?}");
    }
}

/// A twisted tube (helical grid lines on a cylinder) carries twist energy,
/// and a checkerboard of radial bumps — invisible to every quad normal —
/// costs bending energy through the quads' warp.
#[test]
fn twist_and_checkerboard_modes_are_resisted() {
    let (m, n) = (16, 16);
    let g = Grid::new(m, n);
    let straight = revolution(m, n, |_| 0.2, 0.0);
    let mat = bending_only(&g, &straight, 0.01);
    assert!(elastic_energy(&g, &mat, &straight) < 1e-10);
    let twisted = revolution(m, n, |_| 0.2, 3.0);
    assert!(elastic_energy(&g, &mat, &twisted) > 1e-4);
    let bumps: Vec<Vec3> = straight
        .iter()
        .enumerate()
        .map(|(k, x)| {
            let s = if (k % m + k / m) % 2 == 0 { 1.0 } else { -1.0 };
            *x + Vec3::new(x.x, 0.0, x.z).normalize() * (0.005 * s)
        })
        .collect();
    let eb = elastic_energy(&g, &mat, &bumps);
    assert!(eb > 1e-3, "checkerboard bending energy {eb}");
}

/// Quads squashed to slivers, some inside the bending fade: the force is
/// still the gradient of the (faded) energy.
#[test]
fn faded_bending_is_still_the_energy_gradient() {
    let (m, n) = (12, 10);
    let g = Grid::new(m, n);
    let rest = revolution(m, n, |z| 0.25 + 0.03 * (5.0 * z).sin(), -0.2);
    let mat = bending_only(&g, &rest, 0.02);
    // Shear every other column up and down: quads turn into slivers whose
    // diagonals come near parallel, across the fade.
    let r: Vec<Vec3> = rest
        .iter()
        .enumerate()
        .map(|(k, x)| {
            let (i, j) = (k % m, k / m);
            let lift = if i % 2 == 0 { 1.0 } else { -1.0 } * (0.08 + 0.015 * j as f32);
            *x + Vec3::new(0.003 * (j as f32).sin(), lift, 0.003 * (i as f32).cos())
        })
        .collect();
    let fades: Vec<f64> = (0..m * (n - 1))
        .map(|k| quad_fade(&g, &r, k % m, k / m))
        .collect();
    assert!(
        fades.iter().filter(|&&f| f > 0.0 && f < 1.0).count() > 10,
        "some quads inside the fade: {fades:?}"
    );
    let (worst, scale) = gradient_error(&g, &mat, &r, 1e-4, 1);
    assert!(scale > 1e-4, "bending forces present ({scale})");
    assert!(worst < 5e-3 * scale, "max |F + dE/dr| = {worst} vs {scale}");
}

/// Shear faded on compressed edges (see [`SHEAR_FADE`]) is still the
/// energy's gradient: membrane alone, every other up edge compressed into
/// the fade and its top sheared sideways.
#[test]
fn faded_shear_is_still_the_energy_gradient() {
    let (m, n) = (12, 10);
    let (g, rest, _) = setup(m, n);
    let p = g.points();
    let rm = rest_metric_of(&g, &rest);
    let mat = ElasticMaterial::new(
        &g,
        &rm,
        &vec![[0.0; 3]; p],
        &vec![[1.0, 0.5, 1.0]; p],
        &vec![0.0; p],
    );
    let mut r = rest.clone();
    for j in (1..n - 1).step_by(2) {
        for i in 0..m {
            let (lo, hi) = (g.idx(i, j), g.idx(i, j + 1));
            let side = r[g.idx(g.right(i), j)] - r[lo];
            let share = 0.05 + 0.04 * (i % 10) as f32;
            r[hi] = r[lo] + share * (r[hi] - r[lo]) + 0.2 * share * side;
        }
    }
    let faded = (0..p - m)
        .filter(|&k| {
            let x = (r[k + m] - r[k]).length() * mat.points[k].inv_l2 / SHEAR_FADE;
            x > 0.0 && x < 1.0
        })
        .count();
    assert!(faded > 20, "edges inside the fade: {faded}");
    let (worst, scale) = gradient_error(&g, &mat, &r, 1e-5, 1);
    assert!(scale > 1e-3, "membrane forces present ({scale})");
    assert!(worst < 3e-3 * scale, "max |F + dE/dr| = {worst} vs {scale}");
}

/// The lanes give the scalar passes' forces, point by point, on a grid with
/// a tail of points past the last full group (m = 13), a twisted rest
/// state, and degenerate quads (a collapsed edge, a collapsed quad), which
/// the lanes must mask exactly as the scalar code skips them.
#[test]
fn lanes_match_the_scalar_passes() {
    for (m, n) in [(13, 9), (24, 10)] {
        let (g, mut r, mat) = setup(m, n);
        // A zero-length around edge at (2, 3), a quad collapsed to a point at (9, 5).
        r[g.idx(3, 3)] = r[g.idx(2, 3)];
        for (i, j) in [(10, 5), (9, 6), (10, 6)] {
            r[g.idx(i, j)] = r[g.idx(9, 5)];
        }
        // A sliver at (5, 2): its top-left corner pushed past the top-right
        // one, so its diagonals are within a few degrees of parallel and its
        // bending fades (0 < s < 1, ds/dx ≠ 0).
        let along = r[g.idx(6, 2)] - r[g.idx(5, 2)];
        r[g.idx(5, 3)] += 1.9 * along;
        // An up edge at (7, 4) compressed into the shear fade.
        let (lo, hi) = (g.idx(7, 4), g.idx(7, 5));
        let to = r[lo] + 0.1 * (r[hi] - r[lo]);
        r[hi] = to;
        let stretch = (r[hi] - r[lo]).length() * mat.points[lo].inv_l2;
        assert!(stretch > 0.0 && stretch < SHEAR_FADE, "{stretch}");
        let (reference, reference_stretch) = super::reference::forces(&g, &mat, &r);
        let mut s = Scratch::default();
        let mut f = vec![Vec3::ZERO; g.points()];
        add_elastic_forces(&g, &mat, &r, &mut s, &mut f);
        for (k, (a, b)) in reference.iter().zip(&f).enumerate() {
            assert!(
                (*a - *b).length() <= 1e-5 * (1.0 + a.length().max(b.length())),
                "{m}x{n} point {k} ({}, {}): lanes {b} scalar {a}",
                k % m,
                k / m
            );
        }
        // The case covers what it says: the degenerate quad carries no
        // normal, and the twist, the up hinges and both fades really act.
        let t = super::reference::Terms::of(&g, &mat, &r);
        assert_eq!(t.quads[g.idx(9, 5)].normal, Vec3::ZERO);
        assert!(t.quads.iter().any(|q| q.g_twist.length() > 0.0));
        assert!(t.hinges.iter().any(|h| h.gu_e.length() > 0.0));
        assert!(t.quads.iter().any(|q| q.fade > 0.0 && q.fade < 1.0));
        assert!(t.hinges.iter().any(|h| h.ca_l != 0.0));
        assert!(t.hinges.iter().any(|h| h.cu_d != 0.0));
        assert!(f.iter().all(|x| x.is_finite()));
        // The step limit's stretch, measured on the way, is the one measured
        // apart (here the collapsed quad's, zero) and the scalar passes'.
        let measured = s.min_stretch.expect("measured");
        let direct = min_stretch(&g, &mat, &r);
        for other in [direct, reference_stretch] {
            assert!(
                (measured - other).abs() <= 1e-6 * other.max(1.0),
                "{measured} vs {other}"
            );
        }
    }
}
