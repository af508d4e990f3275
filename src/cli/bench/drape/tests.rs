use super::*;

fn size(m: usize, n: usize) -> DrapeSize {
    DrapeSize { m, n }
}

#[test]
fn the_six_families_hold_the_documented_springs() {
    assert_eq!(size(16, 16).springs(), 1456);
    assert_eq!(size(64, 64).springs(), 24256);
    assert_eq!(size(128, 128).springs(), 97664);
}

#[test]
fn the_skin_starts_with_the_documented_prestress() {
    // The workload document gives the initial spring energy to three
    // figures: the geometry, the rest lengths and the first projection.
    for (m, joules) in [(16, 5.77), (64, 7.10), (128, 7.21)] {
        let e = Drape::new(size(m, m), Precision::F64)
            .diagnostics()
            .spring_energy;
        assert!(
            (e - joules).abs() <= 0.005,
            "{m}x{m}: {e} J, expected {joules} J"
        );
    }
}

/// The workload stepped straight from its text, spring by spring, in f64:
/// every spring of the six families adds F to its first end and −F to its
/// second, then the free points are integrated and projected.
fn reference(sz: DrapeSize, steps: usize) -> Vec<[f64; 3]> {
    let count = sz.m * sz.n;
    let free = |p: usize| (1..sz.n - 1).contains(&(p % sz.n));
    let project = |x: &mut [f64; 3]| {
        let mut moved = false;
        for (cy, r) in kernel::SPHERES {
            let d = [x[0], x[1] - cy, x[2]];
            let l = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            if l < r {
                *x = [d[0] * r / l, cy + d[1] * r / l, d[2] * r / l];
                moved = true;
            }
        }
        moved
    };
    let mut x: Vec<[f64; 3]> = (0..count)
        .map(|p| {
            let mut q = start_point(sz, p / sz.n, p % sz.n);
            if free(p) {
                project(&mut q);
            }
            q
        })
        .collect();
    let mut v = vec![[0.0f64; 3]; count];
    let m = 1.0 / count as f64;
    for _ in 0..steps {
        let mut f = vec![[0.0f64; 3]; count];
        for family in kernel::FAMILIES {
            let rest = kernel::rest_length(sz, family);
            let (di, dj) = family;
            for i in 0..sz.m {
                for j in 0..sz.n - dj {
                    let a = i * sz.n + j;
                    let b = (i as isize + di).rem_euclid(sz.m as isize) as usize * sz.n + j + dj;
                    let d: [f64; 3] = std::array::from_fn(|c| x[b][c] - x[a][c]);
                    let l = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                    for c in 0..3 {
                        let force = kernel::STIFFNESS * (l - rest) * d[c] / l;
                        f[a][c] += force;
                        f[b][c] -= force;
                    }
                }
            }
        }
        for p in (0..count).filter(|&p| free(p)) {
            let g = [0.0, kernel::GRAVITY, 0.0];
            for c in 0..3 {
                v[p][c] += DT * (f[p][c] / m + g[c] - kernel::DAMPING * v[p][c]);
            }
            let old = x[p];
            let mut new: [f64; 3] = std::array::from_fn(|c| old[c] + DT * v[p][c]);
            if project(&mut new) {
                v[p] = std::array::from_fn(|c| (new[c] - old[c]) / DT);
            }
            x[p] = new;
        }
    }
    x
}

/// The largest coordinate difference between two states' points.
fn farthest(a: &[[f64; 3]], b: &[[f64; 3]]) -> f64 {
    a.iter()
        .zip(b)
        .flat_map(|(p, q)| (0..3).map(move |c| (p[c] - q[c]).abs()))
        .fold(0.0, f64::max)
}

#[test]
fn the_fused_kernel_steps_the_workload_as_written() {
    // Small grids reach every boundary case: the wrap-around, bending
    // springs that two rows next to the rims lack, shear at both ends.
    for sz in [size(5, 6), size(16, 16), size(7, 12)] {
        let want = reference(sz, 30);
        let mut drape = Drape::new(sz, Precision::F64);
        drape.run(30);
        let (got, _) = drape.state();
        let worst = farthest(&got, &want);
        // The order of the force sums differs: round-off only.
        assert!(worst <= 1e-12, "{sz}: off by {worst} m after 30 steps");
    }
}

#[test]
fn single_precision_follows_double_at_the_checkpoints() {
    let sz = size(64, 64);
    let (mut a, mut b) = (
        Drape::new(sz, Precision::F32),
        Drape::new(sz, Precision::F64),
    );
    let mut done = 0;
    for k in [1, 10, 100] {
        a.run(k - done);
        b.run(k - done);
        done = k;
        let (xa, _) = a.state();
        let (xb, _) = b.state();
        let worst = farthest(&xa, &xb);
        // Point by point, relative to the cylinder's height: f32 round-off
        // grows through the contacts.
        assert!(
            worst <= 1e-5 * CYLINDER.1,
            "step {k}: f32 is {worst} m from f64"
        );
        // The checkpoint sums, as the workload's reference compares them:
        // about 1e-6 relative.
        let (sa, sb) = (a.sums(), b.sums());
        for c in 0..3 {
            let scale = xb.iter().map(|p| p[c].abs()).sum::<f64>();
            let rel = (sa[c] - sb[c]).abs() / scale;
            eprintln!("step {k}: sum {c} relative {rel:.2e}, worst point {worst:.2e} m");
            assert!(rel <= 1e-6, "step {k}: sum {c} of f32 is {rel:e} from f64");
        }
    }
}

#[test]
fn the_result_does_not_depend_on_the_thread_count() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut d = Drape::new(size(64, 64), Precision::F32);
            d.run(20);
            d.state()
        })
    };
    let (one, two) = (run(1), run(2));
    assert!(one == two, "1 and 2 threads give different states");
}

#[test]
fn the_skin_stays_on_the_spheres_and_the_rims_stay_pinned() {
    let sz = size(16, 16);
    let mut drape = Drape::new(sz, Precision::F64);
    drape.run(400);
    let d = drape.diagnostics();
    assert!(d.finite);
    // One pass over the spheres in order leaves no point inside one here.
    assert!(d.max_penetration < 1e-9, "{}", d.max_penetration);
    // Taut between the rims (0.3 m) and over the largest sphere (0.36 m).
    assert!(d.min_radius >= 0.28 && d.max_radius <= 0.37, "{d:?}");
    let (x, v) = drape.state();
    for i in 0..sz.m {
        for j in [0, sz.n - 1] {
            let p = i * sz.n + j;
            assert_eq!(x[p], start_point(sz, i, j), "pinned point {p} moved");
            assert_eq!(v[p], [0.0; 3]);
        }
    }
}

#[test]
fn bad_workloads_are_refused_naming_the_limit() {
    assert_eq!("64x32".parse::<DrapeSize>(), Ok(size(64, 32)));
    assert!(matches!(
        "64".parse::<DrapeSize>(),
        Err(DrapeError::Syntax(_))
    ));
    let small = "3x3".parse::<DrapeSize>().unwrap_err();
    assert!(small.to_string().contains("at least 4x4"), "{small}");
    let big = "100000x100000".parse::<DrapeSize>().unwrap_err();
    assert!(big.to_string().contains("over the limit"), "{big}");
    assert!(steps_in(0.0).is_err() && steps_in(0.00025).is_err());
    assert_eq!(steps_in(1.0), Ok(2000));
    assert!(timed(size(16, 16), Precision::F32, 0.01, 0, 1).is_err());
}
