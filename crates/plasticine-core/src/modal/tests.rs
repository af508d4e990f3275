//! Tests of the modal flesh: the filter against the exact oscillator, the
//! modes against the lattice FEM, the transfer's physics, and the runtime.

use super::iir::{ModeFilter, substeps};
use super::part::{PartSource, part_modes};
use super::transfer::{RigidAcceleration, Transfer};
use crate::character::ModalPart;
use crate::fem::Lattice;
use crate::fem::Material;
use crate::fem::{FemBody, FemSettings, lowest_frequency};
use glam::{DAffine3, DQuat, DVec3};

/// ẍ = f(t) − 2ξωẋ − ω²x from rest, RK4 at `h/200`, sampled every h.
fn reference(omega: f64, xi: f64, h: f64, steps: usize, f: impl Fn(f64) -> f64) -> Vec<f64> {
    let dt = h / 200.0;
    let (mut x, mut v, mut t) = (0.0, 0.0, 0.0);
    let acc = |t: f64, x: f64, v: f64| f(t) - 2.0 * xi * omega * v - omega * omega * x;
    let mut out = vec![0.0];
    for _ in 0..steps {
        for _ in 0..200 {
            let (k1x, k1v) = (v, acc(t, x, v));
            let (k2x, k2v) = (
                v + 0.5 * dt * k1v,
                acc(t + 0.5 * dt, x + 0.5 * dt * k1x, v + 0.5 * dt * k1v),
            );
            let (k3x, k3v) = (
                v + 0.5 * dt * k2v,
                acc(t + 0.5 * dt, x + 0.5 * dt * k2x, v + 0.5 * dt * k2v),
            );
            let (k4x, k4v) = (v + dt * k3v, acc(t + dt, x + dt * k3x, v + dt * k3v));
            x += dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x);
            v += dt / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v);
            t += dt;
        }
        out.push(x);
    }
    out
}

/// The filter's response from rest to the force per unit mass f, sampled
/// at the start of each step (DyRT's Q⁽ᵏ⁻¹⁾).
fn filtered(filter: &ModeFilter, h: f64, steps: usize, f: impl Fn(f64) -> f64) -> Vec<f64> {
    let (mut q, mut q_prev) = (0.0, 0.0);
    let mut out = vec![0.0];
    for k in 1..=steps {
        let next = filter.step(q, q_prev, f((k - 1) as f64 * h));
        (q_prev, q) = (q, next);
        out.push(q);
    }
    out
}

#[test]
fn free_vibration_is_exact() {
    let (omega, xi, h): (f64, f64, f64) = (std::f64::consts::TAU * 3.0, 0.05, 1.0 / 90.0);
    let wd = omega * (1.0 - xi * xi).sqrt();
    let exact = |t: f64| (-xi * omega * t).exp() * (0.3 * (wd * t).cos() + 0.7 * (wd * t).sin());
    let f = ModeFilter::new(omega, xi, h);
    let (mut q_prev, mut q) = (exact(0.0), exact(h));
    let mut worst = 0.0f64;
    for k in 2..2000 {
        let next = f.step(q, q_prev, 0.0);
        (q_prev, q) = (q, next);
        worst = worst.max((q - exact(k as f64 * h)).abs());
    }
    assert!(worst < 1e-10, "free vibration off by {worst:e}");
}

#[test]
fn the_free_invariant_shrinks_by_epsilon_squared_per_step() {
    let f = ModeFilter::new(40.0, 0.08, 2e-3);
    let (mut q_prev, mut q) = (0.2, -0.1);
    for _ in 0..100 {
        let before = f.invariant(q, q_prev);
        let next = f.step(q, q_prev, 0.0);
        (q_prev, q) = (q, next);
        let after = f.invariant(q, q_prev);
        assert!(before > 0.0);
        assert!(
            (after / before - f.decay).abs() < 1e-10,
            "{after} / {before} vs {}",
            f.decay
        );
    }
}

/// The static gain is within 1 % wherever ωh ≤ 0.1 (ξ ≤ 0.1), its error at
/// least halves when h halves, and the paper's printed phase (+arcsin ξ)
/// is far off (1.28 for a 3 Hz mode at 90 Hz, worse at smaller steps).
#[test]
fn static_gain_is_one_and_the_printed_phase_is_not() {
    for xi in [0.01, 0.05, 0.1] {
        for omega in [5.0, 20.0, 200.0] {
            let h = 0.1 / omega;
            let gain = ModeFilter::new(omega, xi, h).static_gain(omega);
            assert!((gain - 1.0).abs() < 0.01, "ξ {xi} ω {omega}: gain {gain}");
            let half = ModeFilter::new(omega, xi, h / 2.0).static_gain(omega);
            assert!(
                (half - 1.0).abs() <= 0.5 * (gain - 1.0).abs(),
                "{half} vs {gain}"
            );
        }
    }
    let omega = std::f64::consts::TAU * 3.0;
    let printed =
        |h: f64| ModeFilter::with_phase(omega, 0.05, h, 0.05f64.asin()).static_gain(omega);
    assert!(
        (printed(1.0 / 90.0) - 1.28).abs() < 0.01,
        "{}",
        printed(1.0 / 90.0)
    );
    assert!(printed(1e-3) > 4.0, "{}", printed(1e-3));
}

/// Smooth forcing: the filter follows the exact oscillator (Duhamel's
/// integral, here a fine RK4) within 1 % of the peak at ωh = 0.1, better
/// at 0.05; the printed phase is off by more than half the peak.
#[test]
fn smooth_forcing_follows_the_exact_response() {
    let (omega, xi) = (std::f64::consts::TAU * 3.0, 0.05);
    let force =
        |t: f64| (std::f64::consts::TAU * t).sin() * (1.0 - (std::f64::consts::PI * t).cos());
    let mut errors = Vec::new();
    for wh in [0.1, 0.05] {
        let h = wh / omega;
        let steps = (2.0 / h) as usize;
        let exact = reference(omega, xi, h, steps, force);
        let peak = exact.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let off = |q: &[f64]| {
            q.iter()
                .zip(&exact)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max)
                / peak
        };
        let ours = off(&filtered(&ModeFilter::new(omega, xi, h), h, steps, force));
        let printed = off(&filtered(
            &ModeFilter::with_phase(omega, xi, h, xi.asin()),
            h,
            steps,
            force,
        ));
        assert!(ours < 0.01, "ωh {wh}: {ours}");
        assert!(printed > 0.5, "ωh {wh}: printed phase only {printed} off");
        errors.push(ours);
    }
    assert!(errors[1] < 0.5 * errors[0], "{errors:?}");
    assert_eq!(substeps(1.0 / 120.0, 11.9), 1);
    assert_eq!(substeps(1.0 / 120.0, 12.1), 2);
    assert_eq!(substeps(1.0 / 120.0, 120.0), 10);
}

const BEAM: Material = Material {
    young: 1.0e7,
    poisson: 0.0,
    density: 1000.0,
};
const LENGTH: f64 = 1.0;
const THICK: f64 = 0.1;

/// A square beam of `n` cells through its thickness along x, its x = 0 face
/// bound to bone 0 (joint 0), as a part of one joint.
fn cantilever(n: usize) -> FemBody {
    let h = THICK / n as f64;
    let mut lattice = Lattice::grid_box(
        DVec3::new(0.0, -THICK / 2.0, -THICK / 2.0),
        DVec3::splat(h),
        [10 * n, n, n],
    );
    lattice.bones = vec![crate::fem::Bone {
        joint: 0,
        child: None,
        head: DVec3::ZERO,
        tail: DVec3::X * 0.01,
    }];
    for a in 0..lattice.vertex_count() {
        if lattice.vertex_coords[a][0] == 0 {
            lattice.bone_of_vertex[a] = Some(0);
        }
    }
    let settings = FemSettings {
        cg_tolerance: 1e-12,
        cg_max_iterations: 50_000,
        ..FemSettings::default()
    };
    let mut body = FemBody::uniform(lattice, BEAM, settings);
    for a in 0..body.vertex_count() {
        if body.lattice.vertex_coords[a][0] == 0 {
            body.fixed[a] = Some(DVec3::ZERO);
        }
    }
    body
}

fn beam_modes(body: &FemBody, modes: usize) -> super::PartModes {
    beam_modes_result(body, modes).expect("beam modes")
}

/// The beam as one part of `modes` modes, or why it has none.
fn beam_modes_result(body: &FemBody, modes: usize) -> Result<super::PartModes, super::PartError> {
    let owner = vec![0; body.vertex_count()];
    let part = ModalPart {
        joint: "beam".into(),
        modes,
        clamp: 1.0,
    };
    let source = PartSource {
        lattice: &body.lattice,
        owner: &owner,
        matrices: &body.global,
        alpha: 0.0,
        beta: 1e-4,
    };
    part_modes(0, &part, source)
}

/// K φ and M φ of a part's mode over the whole lattice (held vertices zero).
fn k_and_m(body: &FemBody, p: &super::PartModes, i: usize) -> (Vec<DVec3>, Vec<DVec3>) {
    let mut phi = vec![DVec3::ZERO; body.vertex_count()];
    for (&a, v) in p.free.iter().zip(&p.shapes[i]) {
        phi[a] = *v;
    }
    let mut k = vec![DVec3::ZERO; phi.len()];
    body.global.stiffness.mul(&phi, &mut k);
    let m = phi
        .iter()
        .zip(&body.global.lumped_mass)
        .map(|(p, m)| *p * *m)
        .collect();
    (k, m)
}

/// `ΦᵀMΦ` = I and K φ = ω² M φ on the free vertices, to 1e-8; the lowest
/// frequency is the FEM's own (inverse iteration) to 1e-6 and within 10 %
/// of Euler–Bernoulli's 1.8751² √(EI/(ρAL⁴)) at two cells through.
#[test]
fn modes_solve_the_lattice_eigenproblem() {
    let body = cantilever(2);
    let p = beam_modes(&body, 8);
    let free: std::collections::HashSet<usize> = p.free.iter().copied().collect();
    for i in 0..p.omega.len() {
        let (ki, mi) = k_and_m(&body, &p, i);
        let w2 = p.omega[i] * p.omega[i];
        let scale = ki.iter().map(|v| v.length()).fold(0.0, f64::max);
        let residual = ki
            .iter()
            .zip(&mi)
            .enumerate()
            .filter(|(a, _)| free.contains(a))
            .map(|(_, (k, m))| (*k - *m * w2).length())
            .fold(0.0, f64::max);
        assert!(
            residual <= 1e-8 * scale,
            "mode {i}: {residual:e} of {scale:e}"
        );
        for j in 0..p.omega.len() {
            let (_, mj) = k_and_m(&body, &p, j);
            let mut phi_i = vec![DVec3::ZERO; body.vertex_count()];
            for (&a, v) in p.free.iter().zip(&p.shapes[i]) {
                phi_i[a] = *v;
            }
            let dot: f64 = phi_i.iter().zip(&mj).map(|(a, b)| a.dot(*b)).sum();
            let want = if i == j { 1.0 } else { 0.0 };
            assert!((dot - want).abs() < 1e-8, "φ{i}ᵀMφ{j} = {dot}");
        }
    }
    let (inverse, _) = lowest_frequency(&body, 40);
    assert!(
        (p.omega[0] - inverse).abs() < 1e-6 * inverse,
        "{} vs {inverse}",
        p.omega[0]
    );
    let i2 = THICK.powi(4) / 12.0;
    let euler = 1.8751f64.powi(2)
        * (BEAM.young * i2 / (BEAM.density * THICK * THICK * LENGTH.powi(4))).sqrt();
    assert!(
        (p.omega[0] - euler).abs() < 0.1 * euler,
        "{} vs {euler}",
        p.omega[0]
    );
}

/// A uniform acceleration a of the bone gives each mode the force
/// −φᵀM1a; held, the modes settle to the static sag the FEM finds under
/// gravity g = −a (the inertial force of being carried up is weight).
#[test]
fn uniform_acceleration_sags_the_beam_as_gravity_does() {
    let mut body = cantilever(2);
    let p = beam_modes(&body, 16);
    let a = DVec3::new(0.0, 9.81, 0.0);
    let acc = RigidAcceleration::uniform(a);
    let mut u = vec![DVec3::ZERO; body.vertex_count()];
    for i in 0..p.omega.len() {
        let terms = p
            .free
            .iter()
            .zip(&p.shapes[i])
            .map(|(&b, phi)| body.global.lumped_mass[b] * phi.dot(a));
        let scale: f64 = terms.clone().map(f64::abs).sum();
        let direct = -terms.sum::<f64>();
        let force = p.transfer[i].force(&acc);
        assert!(
            (force - direct).abs() <= 1e-12 * scale,
            "{force} vs {direct}"
        );
        let q = force / (p.omega[i] * p.omega[i]);
        for (&b, phi) in p.free.iter().zip(&p.shapes[i]) {
            u[b] += *phi * q;
        }
    }
    body.settings.gravity = -a;
    let report = body.solve_static(&[DAffine3::IDENTITY], None);
    assert!(report.converged(), "{report:?}");
    let tip = |field: &[DVec3]| {
        let nx = body.lattice.dims[0];
        let at: Vec<f64> = (0..field.len())
            .filter(|&b| body.lattice.vertex_coords[b][0] == nx)
            .map(|b| field[b].y)
            .collect();
        at.iter().sum::<f64>() / at.len() as f64
    };
    let (modal, fem) = (tip(&u), tip(&body.q));
    assert!(fem < 0.0, "the beam sags: {fem}");
    assert!(
        (modal - fem).abs() < 0.03 * fem.abs(),
        "modal {modal} vs static {fem}"
    );
}

/// Spinning the beam up about its own axis pushes its torsion modes and
/// leaves its bending modes alone (they are odd across the section, the
/// force is not).
#[test]
fn a_spin_about_the_axis_excites_torsion_not_bending() {
    let body = cantilever(2);
    let p = beam_modes(&body, 8);
    let h = 1e-3;
    let spin = |t: f64| DAffine3::from_quat(DQuat::from_rotation_x(0.5 * 40.0 * t * t));
    let acc =
        RigidAcceleration::from_placements(&spin(0.1 - h), &spin(0.1), &spin(0.1 + h), h, p.origin);
    let forces: Vec<f64> = (0..p.omega.len())
        .map(|i| p.transfer[i].force(&acc))
        .collect();
    let largest = forces.iter().fold(0.0f64, |m, f| m.max(f.abs()));
    for (i, f) in forces.iter().enumerate() {
        // How much of the mode turns about x: φ · (x̂ × r) against |φ||r|.
        let (mut turn, mut norm) = (0.0, 0.0);
        for (&a, phi) in p.free.iter().zip(&p.shapes[i]) {
            let r = body.lattice.rest[a];
            let about = DVec3::new(0.0, -r.z, r.y);
            turn += phi.dot(about);
            norm += phi.length() * about.length();
        }
        let torsion = turn.abs() / norm;
        if torsion < 0.01 {
            assert!(
                f.abs() < 1e-6 * largest,
                "bending mode {i} pushed: {f} of {largest}"
            );
        }
        if f.abs() == largest {
            assert!(
                torsion > 0.5,
                "the pushed mode {i} is not torsion ({torsion})"
            );
        }
    }
    assert!(largest > 0.0);
    let t = Transfer::new(&p.shapes[0], &[], &[], DVec3::ZERO);
    assert_eq!(t.force(&acc), 0.0);
}

/// The sparse shift-and-invert solver finds the dense solver's modes: the
/// same frequencies to 1e-9 and the same shapes up to sign, on the
/// cantilever's 540 free DOFs; by block Lanczos, and by the subspace
/// iteration it falls back to where its residuals stall.
#[test]
fn sparse_modes_equal_dense_modes() {
    for solver in [
        super::eigen::lowest_modes_sparse,
        super::eigen::lowest_modes_subspace,
    ] {
        sparse_modes_equal_dense_modes_by(solver);
    }
}

type SparseSolver =
    fn(usize, &[(usize, usize, f64)], &[f64], usize) -> Result<super::Modes, super::EigenError>;

fn sparse_modes_equal_dense_modes_by(solver: SparseSolver) {
    let body = cantilever(2);
    let free: Vec<usize> = (0..body.vertex_count())
        .filter(|&a| body.lattice.bone_of_vertex[a].is_none())
        .collect();
    let (k, mass) = super::part::free_block(&body.global, &free);
    let n = mass.len();
    let mut dense = vec![0.0; n * n];
    for &(r, c, v) in &k {
        dense[r * n + c] = v;
    }
    // Two more dense modes: the tenth's degenerate partner may be the eleventh.
    let a = super::eigen::lowest_modes(&dense, &mass, 12).unwrap();
    let b = solver(n, &k, &mass, 10).unwrap();
    for i in 0..10 {
        assert!(
            (a.omega[i] - b.omega[i]).abs() < 1e-9 * a.omega[i],
            "mode {i}: {} vs {}",
            a.omega[i],
            b.omega[i]
        );
    }
    // Each sparse mode lies in the span of the dense modes of its frequency
    // (the square beam's bending pairs are degenerate, so the vectors within
    // a pair may differ by a rotation): its M-projection there has norm 1.
    for i in 0..10 {
        let same: Vec<usize> = (0..12)
            .filter(|&j| (a.omega[j] - b.omega[i]).abs() < 1e-6 * b.omega[i])
            .collect();
        let norm2: f64 = same
            .iter()
            .map(|&j| {
                let d: f64 = (0..n)
                    .map(|r| a.shapes[j][r] * mass[r] * b.shapes[i][r])
                    .sum();
                d * d
            })
            .sum();
        assert!((norm2 - 1.0).abs() < 1e-8, "mode {i}: |P φ'|² = {norm2}");
    }
}

/// A part held by nothing (the beam with no bone-bound face and no other
/// part) is refused before solving, naming the part, on the dense and on
/// the sparse solver's side of the size limit (the sparse one would
/// otherwise iterate on zero frequencies); the held beam is not.
#[test]
fn a_floating_part_is_refused_by_name() {
    for n in [1, 4] {
        let mut body = cantilever(n);
        if n == 1 {
            assert!(
                beam_modes_result(&body, 6).is_ok(),
                "the held beam has modes"
            );
        }
        body.lattice
            .bone_of_vertex
            .iter_mut()
            .for_each(|b| *b = None);
        let err = beam_modes_result(&body, 6).unwrap_err().to_string();
        assert!(
            err.starts_with("part 'beam': ") && err.contains("it floats"),
            "{} DOFs: {err}",
            3 * body.vertex_count()
        );
    }
}

/// A wavy sheet of triangles inside the cantilever, away from its bound face.
fn sheet_in_beam() -> (Vec<glam::Vec3>, Vec<[u32; 3]>) {
    let (nx, nz) = (9usize, 4usize);
    let mut points = Vec::new();
    for i in 0..nx {
        for k in 0..nz {
            let x = (0.1 + 0.85 * i as f64 / (nx - 1) as f64) * 10.0 * THICK;
            let z = (k as f64 / (nz - 1) as f64 - 0.5) * 0.6 * THICK;
            let y = 0.2 * THICK * (x / THICK).sin();
            points.push(glam::Vec3::new(x as f32, y as f32, z as f32));
        }
    }
    let mut triangles = Vec::new();
    for i in 0..nx - 1 {
        for k in 0..nz - 1 {
            let a = (i * nz + k) as u32;
            let (b, c, d) = (a + nz as u32, a + nz as u32 + 1, a + 1);
            triangles.push([a, b, c]);
            triangles.push([a, c, d]);
        }
    }
    (points, triangles)
}

/// The area-weighted vertex normals of a mesh.
fn vertex_normals(p: &[DVec3], triangles: &[[u32; 3]]) -> Vec<DVec3> {
    let mut n = vec![DVec3::ZERO; p.len()];
    for t in triangles {
        let [a, b, c] = t.map(|i| i as usize);
        let face = (p[b] - p[a]).cross(p[c] - p[a]);
        for v in [a, b, c] {
            n[v] += face;
        }
    }
    n
}

/// DyRT §4 on a mesh: its vertices are the lattice's modal field embedded
/// (free-form deformation of the rest + Σ q φ lattice) carried by the bone,
/// and App. A's normal corrections are the exact derivative of the vertex
/// normal along each mode (central differences of a quadratic: to rounding).
#[test]
fn a_modal_mesh_rides_the_embedded_field_with_exact_normal_corrections() {
    let body = cantilever(2);
    let part = beam_modes(&body, 4);
    let (points, triangles) = sheet_in_beam();
    let blend = vec![vec![(0, 1.0)]; body.vertex_count()];
    let mesh = super::ModalMesh::new(&body.lattice, &blend, &[(0, &part)], &points, &triangles);
    assert_eq!(mesh.modes, 4);
    // Amplitudes giving a displacement of about a tenth of the thickness.
    let q: Vec<f64> = (0..4)
        .map(|i| 0.1 * THICK / part.peak[i] * [1.0, -0.6, 0.3, 0.8][i])
        .collect();
    let mut u = vec![DVec3::ZERO; body.vertex_count()];
    for (i, shape) in part.shapes.iter().enumerate() {
        for (&a, phi) in part.free.iter().zip(shape) {
            u[a] += *phi * q[i];
        }
    }
    let bone = DAffine3::from_rotation_translation(
        DQuat::from_rotation_z(0.4),
        DVec3::new(0.01, -0.02, 0.03),
    );
    let got = mesh.positions(&[bone], &q);
    let mut moved = 0.0f64;
    for (v, p) in points.iter().enumerate() {
        let e = body.lattice.embed(p.as_dvec3()).expect("inside the beam");
        let want = bone.transform_point3(body.lattice.deform(&e, &u));
        let err = got[v].as_dvec3().distance(want);
        assert!(err < 1e-6 * THICK, "vertex {v}: {} vs {want}", got[v]);
        moved = moved.max(want.distance(bone.transform_point3(p.as_dvec3())));
    }
    assert!(moved > 0.01 * THICK, "the modes move the sheet ({moved})");

    let rest: Vec<DVec3> = points.iter().map(|p| p.as_dvec3()).collect();
    for i in 0..4 {
        let eps = 0.05 * THICK / part.peak[i];
        let at = |s: f64| -> Vec<DVec3> {
            (0..rest.len())
                .map(|v| rest[v] + mesh.shape_of(v, i) * s)
                .collect()
        };
        let plus = vertex_normals(&at(eps), &triangles);
        let minus = vertex_normals(&at(-eps), &triangles);
        let scale = mesh.normal.iter().map(|n| n.length()).fold(0.0, f64::max) / THICK;
        for v in 0..rest.len() {
            let fd = (plus[v] - minus[v]) / (2.0 * eps);
            let n = mesh.normal_shape_of(v, i);
            assert!(
                (fd - n).length() <= 1e-9 * scale,
                "mode {i} vertex {v}: N {n} vs finite difference {fd}"
            );
        }
    }
    // The unit normals rotate with the bone.
    let n0 = mesh.normals(&[DAffine3::IDENTITY], &q);
    let n1 = mesh.normals(&[bone], &q);
    for (a, b) in n0.iter().zip(&n1) {
        let turned = bone.transform_vector3(a.as_dvec3());
        assert!(turned.distance(b.as_dvec3()) < 1e-6);
    }
}

/// A part keeps the lowest `modes` modes its bone can excite: among the
/// square beam's lowest 20 are some that no motion of its bone excites
/// (dropped), and asked for 20 it still keeps 20, the same as the lowest
/// 20 kept when asked for 28: the stand-ins are the next excitable modes.
#[test]
fn a_part_keeps_as_many_modes_as_asked_the_lowest_excitable() {
    let body = cantilever(2);
    let few = beam_modes(&body, 20);
    let many = beam_modes(&body, 28);
    assert_eq!(few.omega.len(), 20);
    assert_eq!(many.omega.len(), 28);
    assert!(
        few.dropped > 0,
        "the beam's lowest 20 modes should include unexcitable ones"
    );
    for (a, b) in few.omega.iter().zip(&many.omega) {
        assert!((a - b).abs() <= 1e-9 * b, "{a} vs {b}");
    }
}
