use super::*;
use std::collections::HashMap;
use std::f64::consts::PI;

/// Reproducible samples: a seeded PCG.
struct Samples(rand_pcg::Pcg64Mcg);

impl Samples {
    fn new(seed: u64) -> Self {
        Self(rand::SeedableRng::seed_from_u64(seed))
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * rand::Rng::random::<f64>(&mut self.0)
    }
    fn unit(&mut self) -> DVec3 {
        loop {
            let v = DVec3::new(
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
                self.range(-1.0, 1.0),
            );
            let l = v.length();
            if l > 0.1 && l <= 1.0 {
                return v / l;
            }
        }
    }
}

/// Muscle-sized primitives: a sphere, an ellipsoid and superellipsoids that
/// are boxy, bicone-like (2, 1) and pinched (0.5, 1.5).
fn primitives() -> Vec<(&'static str, MuscleShape)> {
    let radii = Vec3::new(0.04, 0.03, 0.12);
    vec![
        ("sphere", MuscleShape::sphere(0.05)),
        (
            "ellipsoid",
            MuscleShape::superellipsoid(radii, Vec2::new(1.0, 1.0)),
        ),
        (
            "boxy",
            MuscleShape::superellipsoid(radii, Vec2::new(0.3, 0.3)),
        ),
        (
            "bicone",
            MuscleShape::superellipsoid(radii, Vec2::new(2.0, 1.0)),
        ),
        (
            "pinched",
            MuscleShape::superellipsoid(radii, Vec2::new(0.5, 1.5)),
        ),
    ]
}

fn deformations() -> Vec<(&'static str, BarrDeformation)> {
    vec![
        ("none", BarrDeformation::default()),
        (
            "taper",
            BarrDeformation {
                taper: Vec2::new(3.0, -2.0),
                ..Default::default()
            },
        ),
        (
            "twist",
            BarrDeformation {
                twist: 10.0,
                ..Default::default()
            },
        ),
        (
            "bend",
            BarrDeformation {
                bend: 4.0,
                ..Default::default()
            },
        ),
        (
            "bend-",
            BarrDeformation {
                bend: -6.0,
                ..Default::default()
            },
        ),
        (
            "all",
            BarrDeformation {
                taper: Vec2::new(2.5, 1.5),
                twist: -8.0,
                bend: 3.0,
            },
        ),
    ]
}

/// Every primitive with every deformation.
fn all_shapes() -> Vec<(String, MuscleShape)> {
    let mut out = Vec::new();
    for (pn, prim) in primitives() {
        for (dn, def) in deformations() {
            let shape = prim.clone().with_deformation(def);
            shape
                .validate()
                .unwrap_or_else(|e| panic!("{pn}/{dn}: {e}"));
            out.push((format!("{pn}/{dn}"), shape));
        }
    }
    out
}

fn size(shape: &MuscleShape) -> f32 {
    shape.bounding_radius()
}

/// Surface points from the parametrisation, away from the coordinate planes
/// of the primitive (where the bicone and pinched shapes have creases).
fn surface_samples(shape: &MuscleShape, rng: &mut Samples, n: usize) -> Vec<DVec3> {
    let sq = shape.superquadric();
    (0..n)
        .map(|_| {
            let eta = rng.range(0.3, 1.2) * if rng.range(0.0, 1.0) < 0.5 { 1.0 } else { -1.0 };
            let quadrant = (rng.range(0.0, 1.0) * 4.0).floor();
            let omega = -PI + quadrant * PI / 2.0 + rng.range(0.3, PI / 2.0 - 0.3);
            shape.deformation.forward(sq.point(eta, omega))
        })
        .collect()
}

// ---- 1. surface, centre and far field -----------------------------------

#[test]
fn tessellated_vertices_lie_on_the_surface() {
    for (name, shape) in all_shapes() {
        let s = size(&shape);
        let mesh = shape.tessellate(24, 12);
        for v in &mesh.positions {
            let g = shape.inside_outside(*v);
            assert!(g.abs() < 1e-5 * s, "{name}: g = {g} at vertex {v}");
        }
        assert!(shape.inside_outside(Vec3::ZERO) < 0.0, "{name}: centre");
        for dir in [Vec3::X, -Vec3::X, Vec3::Y, -Vec3::Y, Vec3::Z, -Vec3::Z] {
            let g = shape.inside_outside(dir * 3.0 * s);
            assert!(g > 0.0, "{name}: far point {dir} g = {g}");
        }
    }
}

#[test]
fn sign_matches_barr_inside_outside_function() {
    // Undeformed: the sign of g must be the sign of F − 1 everywhere.
    let mut rng = Samples::new(7);
    for (name, shape) in primitives() {
        let sq = shape.superquadric();
        for _ in 0..2000 {
            let q = DVec3::new(
                rng.range(-2.0, 2.0),
                rng.range(-2.0, 2.0),
                rng.range(-2.0, 2.0),
            ) * sq.radii;
            let u = (q / sq.radii).abs();
            let f = (u.x.powf(2.0 / sq.e2) + u.y.powf(2.0 / sq.e2)).powf(sq.e2 / sq.e1)
                + u.z.powf(2.0 / sq.e1);
            if (f - 1.0).abs() < 1e-3 {
                continue;
            }
            let g = shape.inside_outside(q.as_vec3());
            assert_eq!(g < 0.0, f < 1.0, "{name}: q = {q}, F = {f}, g = {g}");
        }
    }
}

// ---- 2. gradient ----------------------------------------------------------

#[test]
fn gradient_matches_finite_differences() {
    let mut rng = Samples::new(42);
    for (name, shape) in all_shapes() {
        let s = size(&shape);
        for p in surface_samples(&shape, &mut rng, 40) {
            let p = p + rng.unit() * rng.range(-0.02, 0.02) * s as f64;
            let p = p.as_vec3();
            let h = 1e-3 * s;
            let mut fd = Vec3::ZERO;
            for k in 0..3 {
                let mut a = p;
                let mut b = p;
                a[k] += h;
                b[k] -= h;
                fd[k] = (shape.inside_outside(a) - shape.inside_outside(b)) / (a[k] - b[k]);
            }
            let (g, grad) = shape.evaluate(p);
            assert_eq!(g, shape.inside_outside(p));
            assert_eq!(grad, shape.gradient(p));
            let err = (grad - fd).length();
            assert!(
                err < 2e-3 * fd.length().max(1.0),
                "{name}: at {p} gradient {grad} vs finite differences {fd}"
            );
        }
    }
}

#[test]
fn cheap_normal_is_the_gradient_direction_on_the_surface() {
    let mut rng = Samples::new(3);
    for (name, shape) in all_shapes() {
        for p in surface_samples(&shape, &mut rng, 10) {
            let (g, n) = shape.value_and_normal(p.as_vec3());
            let grad = shape.gradient(p.as_vec3());
            assert!(g.abs() < 1e-5 * size(&shape));
            assert!((n.length() - 1.0).abs() < 1e-5, "{name}");
            assert!(
                (n - grad.normalize()).length() < 1e-3,
                "{name}: normal {n} vs gradient {grad}"
            );
        }
    }
}

// ---- 3. distance estimates ------------------------------------------------

#[test]
fn sphere_signed_distance_is_exact() {
    let shape = MuscleShape::sphere(0.5);
    for p in [
        Vec3::ZERO,
        Vec3::new(0.1, -0.2, 0.3),
        Vec3::new(2.0, 0.0, 0.0),
        Vec3::new(-0.3, 0.4, 1.2),
    ] {
        let exact = p.length() - 0.5;
        assert!((shape.signed_distance(p) - exact).abs() < 1e-6);
        assert!((shape.inside_outside(p) - exact).abs() < 1e-6);
    }
    // A twisted sphere is still the same sphere.
    let twisted = MuscleShape::sphere(0.5).with_deformation(BarrDeformation {
        twist: 3.0,
        ..Default::default()
    });
    for p in [Vec3::new(0.3, -0.7, 0.2), Vec3::new(0.1, 0.1, 0.1)] {
        let exact = p.length() - 0.5;
        assert!((twisted.inside_outside(p) - exact).abs() < 1e-5);
        assert!((twisted.signed_distance(p) - exact).abs() < 1e-5);
    }
}

#[test]
fn ellipsoid_distance_estimates_bracket_the_true_distance() {
    // Points at a small distance δ along the outward normal of an ellipsoid's
    // surface point s are at true distance δ from it (δ below the smallest
    // radius of curvature). g is a lower bound, signed_distance an upper one,
    // and both equal δ to first order.
    let radii = Vec3::new(0.04, 0.03, 0.12);
    let shape = MuscleShape::superellipsoid(radii, Vec2::ONE);
    let min_curvature_radius = 0.03f64 * 0.03 / 0.12;
    let mut rng = Samples::new(11);
    for s in surface_samples(&shape, &mut rng, 200) {
        let (_, n, _) = shape.value_normal64(s);
        for delta in [0.2, 0.5, -0.2, -0.5].map(|k| k * min_curvature_radius) {
            let p = (s + n * delta).as_vec3();
            let g = shape.inside_outside(p) as f64;
            let d = shape.signed_distance(p) as f64;
            assert_eq!(g < 0.0, delta < 0.0);
            assert_eq!(d < 0.0, delta < 0.0);
            if delta > 0.0 {
                assert!(g <= delta * (1.0 + 1e-4), "g = {g} > δ = {delta}");
                assert!(g >= 0.8 * delta, "g = {g} ≪ δ = {delta}");
            }
            assert!(
                d.abs() >= delta.abs() * (1.0 - 1e-4),
                "d = {d}, δ = {delta}"
            );
            assert!(d.abs() <= delta.abs() * 1.05, "d = {d}, δ = {delta}");
            // Projecting lands (near) the foot point s.
            let sp = shape.project_to_surface(p);
            assert!(shape.inside_outside(sp.point).abs() < 1e-4 * 0.12);
            assert!(
                sp.point.as_dvec3().distance(s) < 0.3 * delta.abs(),
                "projection {} far from foot {s}",
                sp.point
            );
        }
    }
}

// ---- 4. projection ----------------------------------------------------------

fn check_projection(name: &str, shape: &MuscleShape, p: Vec3) {
    let s = size(shape);
    let sp = shape.project_to_surface(p);
    assert!(
        sp.point.is_finite() && sp.normal.is_finite(),
        "{name}: NaN projecting {p}"
    );
    let g = shape.inside_outside(sp.point);
    assert!(g.abs() < 1e-4 * s, "{name}: projection of {p} has g = {g}");
    assert!((sp.normal.length() - 1.0).abs() < 1e-4, "{name}: normal");
    let e = 1e-3 * s;
    assert!(
        shape.inside_outside(sp.point + sp.normal * e) > 0.0
            && shape.inside_outside(sp.point - sp.normal * e) < 0.0,
        "{name}: normal {} at {} (from {p}) does not point outward",
        sp.normal,
        sp.point
    );
}

#[test]
fn projection_lands_on_the_surface_with_an_outward_normal() {
    let mut rng = Samples::new(5);
    for (name, shape) in all_shapes() {
        let s = size(&shape) as f64;
        let mut points = vec![Vec3::ZERO];
        for axis in [Vec3::X, Vec3::Y, Vec3::Z] {
            for k in [-1.5f32, -0.5, -0.01, 0.01, 0.3, 0.9, 2.0] {
                points.push(axis * k * s as f32);
            }
        }
        for _ in 0..40 {
            points.push((rng.unit() * rng.range(0.0, 1.5 * s)).as_vec3());
        }
        for p in surface_samples(&shape, &mut rng, 20) {
            points.push((p + rng.unit() * 0.05 * s).as_vec3());
        }
        for p in points {
            check_projection(&name, &shape, p);
        }
    }
}

#[test]
fn sphere_projection_is_the_nearest_point() {
    let shape = MuscleShape::sphere(0.5);
    let mut rng = Samples::new(9);
    for _ in 0..100 {
        let p = rng.unit() * rng.range(0.01, 2.0);
        let sp = shape.project_to_surface(p.as_vec3());
        let expect = p.normalize() * 0.5;
        assert!((sp.point.as_dvec3() - expect).length() < 1e-6);
        assert!((sp.normal.as_dvec3() - p.normalize()).length() < 1e-6);
    }
    let sp = shape.project_to_surface(Vec3::ZERO);
    assert!((sp.point.length() - 0.5).abs() < 1e-6 && sp.normal.is_finite());
}

// ---- 5. deformation inverse ---------------------------------------------------

#[test]
fn deformation_inverse_round_trips() {
    let mut rng = Samples::new(13);
    let radii = DVec3::new(0.04, 0.03, 0.12);
    for (name, def) in deformations() {
        for _ in 0..500 {
            let q = DVec3::new(
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
                rng.range(-1.0, 1.0),
            ) * radii;
            let p = def.forward(q);
            let back = def.inverse(p).q;
            assert!((back - q).length() < 1e-12, "{name}: {q} → {p} → {back}");
            let again = def.forward(back);
            assert!((again - p).length() < 1e-12, "{name}");
            // f32 convenience wrappers agree.
            let pf = def.deform(q.as_vec3());
            assert!((def.undeform(pf).as_dvec3() - q).length() < 1e-6);
        }
    }
    // A tiny bend is numerically a tiny bend (no cancellation).
    let tiny = BarrDeformation {
        bend: 1e-9,
        ..Default::default()
    };
    let q = DVec3::new(0.03, 0.01, 0.1);
    assert!((tiny.forward(q) - q).length() < 1e-9);
    assert!((tiny.inverse(q).q - q).length() < 1e-9);
}

#[test]
fn inverse_jacobian_matches_finite_differences() {
    // pull_back(e_k) = row k of the inverse Jacobian's transpose, i.e. the
    // gradient of the k-th undeformed coordinate with respect to p.
    let mut rng = Samples::new(17);
    for (name, def) in deformations() {
        for _ in 0..50 {
            let p = DVec3::new(
                rng.range(-0.05, 0.05),
                rng.range(-0.05, 0.05),
                rng.range(-0.12, 0.12),
            );
            let inv = def.inverse(p);
            for k in 0..3 {
                let mut e = DVec3::ZERO;
                e[k] = 1.0;
                let analytic = inv.pull_back(e);
                let h = 1e-6;
                let fd = DVec3::new(
                    (def.inverse(p + DVec3::X * h).q[k] - def.inverse(p - DVec3::X * h).q[k])
                        / (2.0 * h),
                    (def.inverse(p + DVec3::Y * h).q[k] - def.inverse(p - DVec3::Y * h).q[k])
                        / (2.0 * h),
                    (def.inverse(p + DVec3::Z * h).q[k] - def.inverse(p - DVec3::Z * h).q[k])
                        / (2.0 * h),
                );
                assert!(
                    (analytic - fd).length() < 1e-6,
                    "{name}: ∂q{k}/∂p {analytic} vs {fd}"
                );
            }
        }
    }
}

// ---- 6. bounding radius -----------------------------------------------------

#[test]
fn bounding_radius_contains_the_deformed_shape() {
    let mut shapes = all_shapes();
    // Extremes: a near-box, a strongly tapered and bent near-box.
    let boxy = MuscleShape::superellipsoid(Vec3::new(0.04, 0.03, 0.12), Vec2::splat(0.05));
    shapes.push(("box".into(), boxy.clone()));
    shapes.push((
        "box/all".into(),
        boxy.with_deformation(BarrDeformation {
            taper: Vec2::new(8.0, -8.0),
            twist: 20.0,
            bend: 8.0,
        }),
    ));
    for (name, shape) in shapes {
        shape.validate().unwrap();
        let r = shape.bounding_radius();
        let mesh = shape.tessellate(64, 48);
        let max = mesh
            .positions
            .iter()
            .map(|v| v.length())
            .fold(0.0f32, f32::max);
        assert!(max <= r, "{name}: vertex at {max} outside radius {r}");
        assert!(r < 2.0 * max, "{name}: radius {r} is very loose ({max})");
        // And g is positive just outside the bounding sphere.
        let mut rng = Samples::new(1);
        for _ in 0..50 {
            let p = (rng.unit() * r as f64 * 1.001).as_vec3();
            assert!(shape.inside_outside(p) > 0.0, "{name}: {p}");
        }
    }
}

// ---- 7. mesh ------------------------------------------------------------------

fn mesh_volume(mesh: &TriMesh) -> f64 {
    mesh.indices
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| mesh.positions[i as usize].as_dvec3());
            a.dot(b.cross(c)) / 6.0
        })
        .sum()
}

#[test]
fn mesh_is_closed_and_outward() {
    for (name, shape) in all_shapes() {
        let mesh = shape.tessellate(16, 9);
        assert_eq!(mesh.positions.len(), mesh.normals.len());
        assert_eq!(mesh.positions.len(), 2 + 8 * 16);
        // Every directed edge once and its reverse once: closed, manifold and
        // consistently wound.
        let mut edges: HashMap<(u32, u32), usize> = HashMap::new();
        for t in &mesh.indices {
            assert!(
                t[0] != t[1] && t[1] != t[2] && t[0] != t[2],
                "{name}: degenerate"
            );
            for k in 0..3 {
                *edges.entry((t[k], t[(k + 1) % 3])).or_default() += 1;
            }
        }
        for (&(a, b), &count) in &edges {
            assert_eq!(count, 1, "{name}: edge {a}-{b} used {count} times");
            assert_eq!(edges.get(&(b, a)), Some(&1), "{name}: edge {a}-{b} open");
        }
        for n in &mesh.normals {
            assert!((n.length() - 1.0).abs() < 1e-5, "{name}: normal {n}");
        }
        // Faces point the same way as the vertex normals, i.e. outward.
        for t in &mesh.indices {
            let [a, b, c] = t.map(|i| mesh.positions[i as usize]);
            let face = (b - a).cross(c - a);
            let vn: Vec3 = t.iter().map(|&i| mesh.normals[i as usize]).sum();
            assert!(face.dot(vn) > 0.0, "{name}: inward face {t:?}");
        }
        assert!(mesh_volume(&mesh) > 0.0, "{name}");
    }
}

#[test]
fn mesh_volume_matches_sphere_and_ellipsoid() {
    let sphere = MuscleShape::sphere(0.05);
    let v = mesh_volume(&sphere.tessellate(48, 24));
    let exact = 4.0 / 3.0 * PI * 0.05f64.powi(3);
    assert!(
        (v / exact - 1.0).abs() < 0.02,
        "sphere volume {v} vs {exact}"
    );

    let radii = Vec3::new(0.04, 0.03, 0.12);
    let ellipsoid = MuscleShape::superellipsoid(radii, Vec2::ONE);
    let v = mesh_volume(&ellipsoid.tessellate(48, 24));
    let exact = 4.0 / 3.0 * PI * 0.04 * 0.03 * 0.12;
    assert!(
        (v / exact - 1.0).abs() < 0.02,
        "ellipsoid volume {v} vs {exact}"
    );
}

#[test]
fn twist_preserves_volume_and_taper_scales_it() {
    let radii = Vec3::new(0.04, 0.03, 0.12);
    let ellipsoid = MuscleShape::superellipsoid(radii, Vec2::ONE);
    let v0 = mesh_volume(&ellipsoid.tessellate(64, 48));
    let twisted = ellipsoid.clone().with_deformation(BarrDeformation {
        twist: 10.0,
        ..Default::default()
    });
    let v1 = mesh_volume(&twisted.tessellate(64, 48));
    assert!((v1 / v0 - 1.0).abs() < 0.005, "twisted {v1} vs {v0}");
    let bent = ellipsoid.clone().with_deformation(BarrDeformation {
        bend: 5.0,
        ..Default::default()
    });
    // The circular bend's Jacobian is 1 − κx, which averages to 1 over a
    // shape symmetric in x.
    let v2 = mesh_volume(&bent.tessellate(64, 48));
    assert!((v2 / v0 - 1.0).abs() < 0.005, "bent {v2} vs {v0}");
    // Taper multiplies each slice's area by (1 + tx z)(1 + ty z); for an
    // ellipsoid the volume becomes V·(1 + tx·ty·c²/5).
    let (tx, ty) = (3.0f64, 2.0f64);
    let tapered = ellipsoid.with_deformation(BarrDeformation {
        taper: Vec2::new(tx as f32, ty as f32),
        ..Default::default()
    });
    let v3 = mesh_volume(&tapered.tessellate(64, 48));
    let expect = v0 * (1.0 + tx * ty * 0.12 * 0.12 / 5.0);
    assert!(
        (v3 / expect - 1.0).abs() < 0.005,
        "tapered {v3} vs {expect}"
    );
}

// ---- 8. rays ------------------------------------------------------------------

#[test]
fn ray_hits_a_sphere_at_the_analytic_distance() {
    let shape = MuscleShape::sphere(0.5);
    let t = shape
        .ray_intersect(Vec3::new(-2.0, 0.3, 0.0), Vec3::X, 10.0)
        .unwrap();
    assert!((t - 1.6).abs() < 1e-5, "t = {t}");
    let t = shape
        .ray_intersect(Vec3::new(0.0, 0.0, 3.0), -Vec3::Z, 10.0)
        .unwrap();
    assert!((t - 2.5).abs() < 1e-5, "t = {t}");
    // Misses: passing by, too short, pointing away.
    assert_eq!(
        shape.ray_intersect(Vec3::new(-2.0, 0.6, 0.0), Vec3::X, 10.0),
        None
    );
    assert_eq!(
        shape.ray_intersect(Vec3::new(-2.0, 0.0, 0.0), Vec3::X, 1.0),
        None
    );
    assert_eq!(
        shape.ray_intersect(Vec3::new(-2.0, 0.0, 0.0), -Vec3::X, 10.0),
        None
    );
    // Starting inside.
    assert_eq!(shape.ray_intersect(Vec3::ZERO, Vec3::Y, 1.0), Some(0.0));
}

#[test]
fn ray_hits_deformed_shapes_on_their_surface() {
    let mut rng = Samples::new(23);
    for (name, shape) in all_shapes() {
        let s = size(&shape);
        for _ in 0..10 {
            // Aim from outside the bounding sphere at a point inside.
            let sq = shape.superquadric();
            let inner = sq.point(rng.range(-1.4, 1.4), rng.range(-PI, PI)) * 0.5;
            let target = shape.deformation.forward(inner).as_vec3();
            let origin = (rng.unit() * 2.0 * s as f64).as_vec3();
            let dir = (target - origin).normalize();
            let t = shape
                .ray_intersect(origin, dir, 10.0 * s)
                .unwrap_or_else(|| panic!("{name}: missed"));
            let hit = origin + dir * t;
            assert!(shape.inside_outside(hit).abs() < 1e-4 * s, "{name}");
            // The segment before the hit is outside.
            for k in 1..20 {
                let g = shape.inside_outside(origin + dir * t * k as f32 / 20.0);
                assert!(g > 0.0, "{name}: inside before the hit");
            }
            assert_eq!(shape.ray_intersect(origin, -dir, 10.0 * s), None, "{name}");
        }
    }
}

// ---- 9. validation ------------------------------------------------------------

#[test]
fn validate_rejects_bad_parameters_naming_the_field() {
    let expect_err = |shape: MuscleShape, field: &str| {
        let err = shape.validate().expect_err(field);
        assert_eq!(err.field, field, "{err} should name {field}");
    };
    expect_err(MuscleShape::sphere(0.0), "radius");
    expect_err(MuscleShape::sphere(-1.0), "radius");
    expect_err(MuscleShape::sphere(f32::NAN), "radius");
    let radii = Vec3::new(0.04, 0.03, 0.12);
    expect_err(
        MuscleShape::superellipsoid(Vec3::new(0.04, 0.0, 0.12), Vec2::ONE),
        "radii",
    );
    expect_err(
        MuscleShape::superellipsoid(radii, Vec2::new(0.01, 1.0)),
        "exponents",
    );
    expect_err(
        MuscleShape::superellipsoid(radii, Vec2::new(1.0, 5.0)),
        "exponents",
    );
    let ell = MuscleShape::superellipsoid(radii, Vec2::ONE);
    let with = |d: BarrDeformation| ell.clone().with_deformation(d);
    // 1 − 9·0.12 < 0: the taper inverts the top of the shape.
    expect_err(
        with(BarrDeformation {
            taper: Vec2::new(9.0, 0.0),
            ..Default::default()
        }),
        "deformation.taper.x",
    );
    expect_err(
        with(BarrDeformation {
            taper: Vec2::new(0.0, -8.4),
            ..Default::default()
        }),
        "deformation.taper.y",
    );
    expect_err(
        with(BarrDeformation {
            twist: f32::INFINITY,
            ..Default::default()
        }),
        "deformation.twist",
    );
    // Centre of curvature inside the shape, and wrapping past a full circle.
    expect_err(
        with(BarrDeformation {
            bend: 30.0,
            ..Default::default()
        }),
        "deformation.bend",
    );
    expect_err(
        MuscleShape::superellipsoid(Vec3::new(0.01, 0.01, 1.0), Vec2::ONE).with_deformation(
            BarrDeformation {
                bend: 3.2,
                ..Default::default()
            },
        ),
        "deformation.bend",
    );
    // Close to the limits but fine.
    with(BarrDeformation {
        taper: Vec2::new(8.0, -8.0),
        twist: 50.0,
        bend: 10.0,
    })
    .validate()
    .unwrap();
}

#[test]
fn serde_representation_is_unchanged() {
    let shape: MuscleShape = ron::from_str("(primitive: Sphere(radius: 0.1))").unwrap();
    assert_eq!(shape, MuscleShape::sphere(0.1));
    let shape = MuscleShape::superellipsoid(Vec3::new(0.1, 0.2, 0.3), Vec2::new(0.5, 1.5))
        .with_deformation(BarrDeformation {
            taper: Vec2::new(0.5, 0.0),
            twist: 1.0,
            bend: 0.0,
        });
    let text = ron::to_string(&shape).unwrap();
    assert_eq!(ron::from_str::<MuscleShape>(&text).unwrap(), shape);
    let partial: MuscleShape =
        ron::from_str("(primitive: Sphere(radius: 0.1), deformation: (twist: 2.0))").unwrap();
    assert_eq!(partial.deformation.twist, 2.0);
    assert_eq!(partial.deformation.taper, Vec2::ZERO);
}

// ---- robustness -----------------------------------------------------------------

#[test]
fn extreme_exponents_and_points_stay_finite() {
    let radii = Vec3::new(0.04, 0.03, 0.12);
    let mut rng = Samples::new(29);
    for e in [
        Vec2::new(0.05, 0.05),
        Vec2::new(4.0, 4.0),
        Vec2::new(0.05, 4.0),
        Vec2::new(4.0, 0.05),
        Vec2::new(3.0, 2.5),
    ] {
        for (dn, def) in deformations() {
            let shape = MuscleShape::superellipsoid(radii, e).with_deformation(def);
            shape.validate().unwrap();
            let s = size(&shape);
            let mut points = vec![Vec3::ZERO, Vec3::splat(1e-30), Vec3::new(0.0, 0.0, 1e3)];
            for axis in [Vec3::X, Vec3::Y, Vec3::Z] {
                for k in [-100.0f32, -0.3, -1e-7, 1e-7, 0.5, 1.0, 1e4] {
                    points.push(axis * k * s);
                }
            }
            for _ in 0..50 {
                points.push((rng.unit() * rng.range(0.0, 3.0 * s as f64)).as_vec3());
            }
            for p in points {
                let (g, grad) = shape.evaluate(p);
                let (_, n) = shape.value_and_normal(p);
                let sp = shape.project_to_surface(p);
                let d = shape.signed_distance(p);
                assert!(
                    g.is_finite() && grad.is_finite() && n.is_finite() && d.is_finite(),
                    "{e}/{dn}: non-finite at {p}"
                );
                assert!(
                    sp.point.is_finite() && sp.normal.is_finite(),
                    "{e}/{dn}: {p}"
                );
                assert!(
                    shape.inside_outside(sp.point).abs() < 1e-4 * s,
                    "{e}/{dn}: {p}"
                );
            }
            assert!(shape.inside_outside(Vec3::ZERO) < 0.0);
            let mesh = shape.tessellate(12, 6);
            assert!(
                mesh.positions
                    .iter()
                    .all(|v| v.is_finite() && v.length() <= s)
            );
            assert!(mesh.normals.iter().all(|n| (n.length() - 1.0).abs() < 1e-4));
        }
    }
}

/// The hot-loop sign test agrees with the inside-outside function away from
/// the surface (within a hair of it either answer is right).
#[test]
fn fast_inside_test_agrees_with_the_inside_outside_function() {
    let shapes = [
        MuscleShape::sphere(0.3),
        MuscleShape::superellipsoid(Vec3::new(0.2, 0.3, 0.4), Vec2::new(1.0, 1.0)),
        MuscleShape::superellipsoid(Vec3::new(0.2, 0.3, 0.4), Vec2::new(0.3, 0.3)),
        MuscleShape::superellipsoid(Vec3::new(0.2, 0.3, 0.4), Vec2::new(0.5, 1.5)),
        MuscleShape::superellipsoid(Vec3::new(0.2, 0.3, 0.4), Vec2::new(2.0, 1.0)),
        MuscleShape::superellipsoid(Vec3::new(0.1, 0.1, 0.3), Vec2::new(1.0, 1.0))
            .with_deformation(BarrDeformation {
                taper: Vec2::new(-1.0, -0.5),
                twist: 2.0,
                bend: 0.5,
            }),
    ];
    let mut rng = Samples::new(12345);
    let mut rnd = || rng.range(-1.0, 1.0) as f32;
    for shape in &shapes {
        let (mut inside, mut outside) = (0, 0);
        for _ in 0..4000 {
            let p = Vec3::new(rnd(), rnd(), rnd()) * 0.5;
            let g = shape.inside_outside(p);
            if g.abs() < 1e-4 {
                continue;
            }
            assert_eq!(shape.is_inside(p), g < 0.0, "{shape:?} at {p}: g = {g}");
            if g < 0.0 { inside += 1 } else { outside += 1 }
        }
        assert!(
            inside > 20 && outside > 20,
            "{shape:?}: both sides sampled ({inside}, {outside})"
        );
    }
}

/// The quick projection lands on the surface (to second order) with the true
/// normal, for points slightly inside, as the constraint solver uses it.
#[test]
fn near_surface_projection_matches_the_full_projection() {
    let shapes = [
        MuscleShape::sphere(0.3),
        MuscleShape::superellipsoid(Vec3::new(0.2, 0.3, 0.4), Vec2::new(1.0, 1.0)),
        MuscleShape::superellipsoid(Vec3::new(0.2, 0.3, 0.4), Vec2::new(0.6, 0.9)),
        MuscleShape::superellipsoid(Vec3::new(0.1, 0.1, 0.3), Vec2::new(1.0, 1.0))
            .with_deformation(BarrDeformation {
                taper: Vec2::new(-1.0, -0.5),
                twist: 1.0,
                bend: 0.0,
            }),
    ];
    for shape in &shapes {
        let mesh = shape.tessellate(24, 16);
        for (x, n) in mesh.positions.iter().zip(&mesh.normals).step_by(7) {
            let p = *x - 0.001 * *n; // a millimetre inside
            let quick = shape.project_near_surface(p);
            let full = shape.project_to_surface(p);
            assert!(
                shape.inside_outside(quick.point).abs() < 2e-5,
                "{shape:?}: lands on the surface"
            );
            assert!(
                quick.point.distance(full.point) < 5e-5,
                "{shape:?}: {} vs {}",
                quick.point,
                full.point
            );
            assert!(quick.normal.dot(full.normal) > 0.999);
        }
    }
}

/// The f32 hot-loop evaluation agrees with the f64 one.
#[test]
fn f32_value_and_normal_agrees_with_f64() {
    let shapes = [
        MuscleShape::sphere(0.3),
        MuscleShape::superellipsoid(Vec3::new(0.2, 0.3, 0.4), Vec2::new(1.0, 1.0)),
        MuscleShape::superellipsoid(Vec3::new(0.2, 0.3, 0.4), Vec2::new(0.6, 0.9)),
        MuscleShape::superellipsoid(Vec3::new(0.2, 0.3, 0.4), Vec2::new(1.5, 0.4)),
    ];
    for shape in &shapes {
        let mesh = shape.tessellate(20, 14);
        for (x, n) in mesh.positions.iter().zip(&mesh.normals) {
            for off in [-0.01f32, -0.001, 0.0, 0.002] {
                let p = *x + off * *n;
                let (g32, n32) = shape
                    .value_and_normal_f32(p)
                    .expect("undeformed, off centre");
                let (g64, n64) = shape.value_and_normal(p);
                assert!((g32 - g64).abs() < 1e-5, "{shape:?} at {p}: {g32} vs {g64}");
                assert!(n32.dot(n64) > 0.9999, "{shape:?} at {p}");
            }
        }
    }
}
