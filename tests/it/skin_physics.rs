//! Physics of the simulated skin, checked against what it must satisfy:
//! analytic periods, exact free fall, energy decay, non-penetration at the fat
//! offset, a common rest state for every integrator, and divergence handling.

use glam::{Quat, Vec3};
use plasticine::character::{
    Character, Dof, Environment, Joint, Muscle, Skeleton, Skin, SkinMaterial, SkinPoints,
};
use plasticine::shape::MuscleShape;
use plasticine::skin::SkinSystem;
use plasticine::skin::{Grid, rest_curvature_of, rest_metric_of};
use plasticine::skin::{
    IntegratorKind, SimError, Simulation, SkeletonDriver, SolverSettings, Tolerances,
};
use plasticine::skin::{global_attach, wrap_skin};
use std::f64::consts::TAU;

/// A free joint `y` above its parent (or the origin).
fn joint(name: &str, parent: Option<usize>, y: f32) -> Joint {
    Joint {
        locked: false,
        name: name.into(),
        parent,
        offset: Vec3::new(0.0, y, 0.0),
        rest_rotation: Quat::IDENTITY,
        dofs: [Dof::default(); 3],
    }
}

/// Two joints a metre apart on +y with a sphere muscle in the middle and one
/// m×n skin wrapped around it.
fn ball(m: usize, n: usize, material: SkinMaterial) -> Character {
    let mut c = Character {
        name: "ball".into(),
        skeleton: Skeleton {
            joints: vec![joint("bottom", None, 0.0), joint("top", Some(0), 0.6)],
        },
        muscles: vec![Muscle {
            joint: 0,
            offset: Vec3::new(0.0, 0.3, 0.0),
            rotation: Quat::IDENTITY,
            shape: MuscleShape::sphere(0.2),
            drivers: vec![],
            color: None,
        }],
        skins: vec![],
        environment: Environment::default(),
        key_postures: vec![],
        flesh: Default::default(),
    };
    let rest = c.skeleton.rest_posture();
    let skin = wrap_skin(&c, &rest, "skin", 0, 1, m, n, &material).expect("wraps");
    c.skins.push(skin);
    c
}

fn still(c: &Character) -> SkeletonDriver {
    SkeletonDriver::Still(c.skeleton.rest_posture())
}

/// With elasticity, gravity and damping off, every bound point is a mass on a
/// spring: ω² = `k_s/ρ` (both per unit u-area, so the grid size drops out).
#[test]
fn connective_tissue_oscillates_at_the_analytic_period() {
    let material = SkinMaterial {
        stretch: 0.0,
        bend: 0.0,
        damping_density: 0.0,
        ..SkinMaterial::default()
    };
    for (m, n) in [(8, 8), (16, 12)] {
        let mut c = ball(m, n, material);
        c.environment = Environment {
            gravity: Vec3::ZERO,
            global_damping: 0.0,
        };
        let rest = c.skeleton.rest_posture();
        global_attach(&mut c, 0, &rest, material.band);
        let k = c.skins[0].m * 3 + 2;
        // Lengthen every band by 2 cm: the point starts 2 cm inside its new
        // equilibrium and swings outward, away from the muscle.
        for b in c.skins[0].points.band.iter_mut().flatten() {
            b.rest_length += 0.02;
        }
        let band = c.skins[0].points.band[k].expect("bound");
        let anchor = c.muscles[0].offset + band.anchor;
        let settings = SolverSettings {
            tolerances: Tolerances {
                position: 1e-6,
                velocity: 1e-6,
                ..Tolerances::default()
            },
            ..SolverSettings::default()
        };
        let driver = still(&c);
        let mut sim = Simulation::new(c, driver, settings).unwrap();
        let mut last = (0.0f64, -0.02f32);
        let mut crossings = vec![];
        let dt = 1.0 / 2000.0;
        for f in 1..=2000 {
            let t = f as f64 * dt;
            sim.advance_to(t, None).unwrap();
            let x = sim.character.skins[0].points.position[k].distance(anchor) - band.rest_length;
            if last.1 < 0.0 && x >= 0.0 {
                crossings.push(last.0 + dt * (-last.1 / (x - last.1)) as f64);
            }
            last = (t, x);
        }
        // The band's own damping k_d lengthens the period: ω_d = ω√(1 − ζ²).
        let (ks, kd, rho) = (
            material.band.ks as f64,
            material.band.kd as f64,
            material.mass_density as f64,
        );
        let omega = (ks / rho).sqrt();
        let zeta = kd / (2.0 * (ks * rho).sqrt());
        let expected = TAU / (omega * (1.0 - zeta * zeta).sqrt());
        let period = (crossings[crossings.len() - 1] - crossings[0]) / (crossings.len() - 1) as f64;
        assert!(crossings.len() >= 3, "{m}x{n}: {crossings:?}");
        assert!(
            (period / expected - 1.0).abs() < 5e-3,
            "{m}x{n}: period {period} vs analytic {expected}"
        );
    }
}

/// Without elastic forces, bands or damping, interior points fall exactly as
/// ½ g t² (Verlet integrates a constant acceleration exactly).
#[test]
fn free_fall_of_an_unbound_skin_is_exact() {
    let material = SkinMaterial {
        stretch: 0.0,
        bend: 0.0,
        damping_density: 0.0,
        ..SkinMaterial::default()
    };
    let mut c = ball(8, 8, material);
    c.environment.global_damping = 0.0;
    // The muscle is moved far away so nothing touches it.
    c.muscles[0].offset = Vec3::new(0.0, 100.0, 0.0);
    let start = c.skins[0].points.position.clone();
    let g = c.environment.gravity;
    let driver = still(&c);
    let mut sim = Simulation::new(c, driver, SolverSettings::default()).unwrap();
    sim.advance_to(0.5, None).unwrap();
    let grid_m = sim.character.skins[0].m;
    for (k, p) in sim.character.skins[0].points.position.iter().enumerate() {
        let row = k / grid_m;
        if row == 0 || row == 7 {
            assert_eq!(*p, start[k], "boundary rows stay on their joints");
            continue;
        }
        let exact = start[k] + 0.5 * g * 0.25;
        assert!(p.distance(exact) < 1e-5, "point {k}: {p} vs {exact}");
    }
    assert!(sim.stats(0).steps > 5, "adaptive steps were taken");
}

/// With damping and a still skeleton, the total energy (kinetic + elastic +
/// connective tissue + gravity) never rises, whatever the integrator.
#[test]
fn with_damping_the_skin_energy_never_rises() {
    let material = SkinMaterial {
        damping_density: 0.5,
        shrink: 0.9,
        ..SkinMaterial::default()
    };
    for kind in [
        IntegratorKind::Verlet,
        IntegratorKind::Rk4,
        IntegratorKind::Euler,
        IntegratorKind::ImplicitEuler,
    ] {
        let mut c = ball(10, 8, material);
        // Far from the muscle: no constraint projection, the energy is the
        // system's own. Bands to where the muscle was would pull it back, so none.
        c.muscles[0].offset = Vec3::new(0.0, 100.0, 0.0);
        c.environment.gravity = Vec3::new(0.0, -9.81, 0.0);
        let driver = still(&c);
        let settings = SolverSettings {
            integrator: kind,
            tolerances: Tolerances {
                fixed_step: 1e-4, // explicit Euler only loses energy for h·ω small against the damping
                ..Tolerances::default()
            },
            ..SolverSettings::default()
        };
        let mut sim = Simulation::new(c, driver, settings).unwrap();
        let mut last = sim.energy(0);
        let e0 = last;
        for f in 1..=60 {
            sim.advance_to(f as f64 / 60.0, None).unwrap();
            let e = sim.energy(0);
            assert!(
                e <= last + 1e-6 * last.abs().max(1.0),
                "{kind:?}: energy rose from {last} to {e} at frame {f}"
            );
            last = e;
        }
        assert!(last < e0, "{kind:?}: the skin lost energy");
    }
}

/// The force the integrators see is minus the gradient of the energy the test
/// above tracks (elastic, bands, gravity): a finite-difference check through
/// the whole system, bands and gravity included.
#[test]
fn system_force_is_the_negative_gradient_of_the_system_energy() {
    use plasticine::skin::SecondOrderSystem;
    let material = SkinMaterial {
        bend: 1e-3,
        ..SkinMaterial::default()
    };
    let mut c = ball(8, 7, material);
    let rest = c.skeleton.rest_posture();
    global_attach(&mut c, 0, &rest, material.band);
    // Perturb positions so forces are not trivially zero.
    for (k, p) in c.skins[0].points.position.iter_mut().enumerate() {
        *p += 0.01
            * Vec3::new(
                (k as f32).sin(),
                (2.0 * k as f32).cos(),
                (3.0 * k as f32).sin(),
            );
    }
    let driver = still(&c);
    let skin = c.skins[0].clone();
    let mut sys = SkinSystem::new(&c, &skin, &driver);
    let r = skin.points.position.clone();
    let v = vec![Vec3::ZERO; r.len()];
    let mut a = vec![Vec3::ZERO; r.len()];
    sys.position_acceleration(0.0, &r, &mut a);
    let mut worst = 0.0f64;
    let mut scale = 0.0f64;
    for k in [skin.m + 1, 3 * skin.m + 4, 5 * skin.m + 7] {
        for comp in 0..3 {
            let eps = 1e-3;
            let (mut rp, mut rn) = (r.clone(), r.clone());
            rp[k][comp] += eps;
            rn[k][comp] -= eps;
            let fd = -(sys.energy(0.0, &rp, &v) - sys.energy(0.0, &rn, &v)) / (2.0 * eps as f64);
            let f = (a[k][comp] * sys.inertia[k]) as f64;
            worst = worst.max((fd - f).abs());
            scale = scale.max(fd.abs());
        }
    }
    assert!(
        worst < 1e-2 * scale,
        "force vs -dE/dr: worst {worst}, scale {scale}"
    );
}

/// LEMAN §4.2.3: after every accepted step no inner fat point is inside a
/// muscle. Checked on the penguin's waddle at every frame, brute force against
/// every wrapped muscle.
#[test]
fn no_skin_point_enters_a_muscle_beyond_tolerance_at_the_fat_offset() {
    let c = plasticine::io::load_character(std::path::Path::new("assets/penguin.ron")).unwrap();
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let fat = c.skins[0].points.fat[0];
    let mut sim = Simulation::new(c, driver, SolverSettings::default()).unwrap();
    let mut worst = 0.0f32;
    for f in 1..=90 {
        sim.advance_to(f as f64 / 60.0, None).unwrap();
        worst = worst.max(sim.deepest_penetration());
    }
    // The projection is exact for the normals at projection time; recomputing
    // normals after neighbours moved leaves a residual well under the fat.
    assert!(
        worst < 0.2 * fat,
        "deepest penetration {worst} m with fat {fat} m"
    );
}

/// Every integrator brings a skin draped over a muscle under gravity to the
/// same rest state.
#[test]
fn every_integrator_reaches_the_same_draped_rest_state() {
    let material = SkinMaterial {
        damping_density: 2.0,
        shrink: 0.7,
        ..SkinMaterial::default()
    };
    let mut base = ball(8, 6, material);
    let rest = base.skeleton.rest_posture();
    global_attach(&mut base, 0, &rest, material.band);
    let mut finals = vec![];
    for kind in IntegratorKind::ALL {
        let settings = SolverSettings {
            integrator: kind,
            tolerances: Tolerances {
                fixed_step: 1e-4,
                ..Tolerances::default()
            },
            ..SolverSettings::default()
        };
        let mut sim = Simulation::new(base.clone(), still(&base), settings).unwrap();
        sim.advance_to(6.0, None).unwrap();
        let speed = sim.character.skins[0]
            .points
            .velocity
            .iter()
            .map(|v| v.length())
            .fold(0.0, f32::max);
        // At rest on the muscle, up to the few mm/s that the contact
        // projection leaves each step (a micrometre a step, not a motion).
        assert!(
            speed < 5e-3,
            "{kind:?} has come to rest (max speed {speed})"
        );
        finals.push((kind, sim.character.skins[0].points.position.clone()));
    }
    let (k0, reference) = &finals[0];
    for (kind, pos) in &finals[1..] {
        let d = pos
            .iter()
            .zip(reference)
            .map(|(a, b)| a.distance(*b))
            .fold(0.0, f32::max);
        assert!(d < 1e-3, "{kind:?} rests {d} m away from {k0:?}");
    }
}

/// A stiff skin with explicit Euler at a large step blows up; the solver rolls
/// back, cuts the step, reports it, and never hands back a non-finite state.
#[test]
fn divergence_is_rolled_back_and_reported() {
    let material = SkinMaterial {
        stretch: 50.0,
        ..SkinMaterial::default()
    };
    let c = ball(8, 8, material);
    let settings = SolverSettings {
        integrator: IntegratorKind::Euler,
        tolerances: Tolerances {
            fixed_step: 0.01,
            max_step: 0.01,
            ..Tolerances::default()
        },
        ..SolverSettings::default()
    };
    let driver = still(&c);
    let mut sim = Simulation::new(c, driver, settings).unwrap();
    let mut events = 0;
    let mut outcome = Ok(());
    for f in 1..=20 {
        match sim.advance_to(f as f64 * 0.05, None) {
            Ok(rep) => events += rep.events.len(),
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    assert!(events > 0 || outcome.is_err(), "the blow-up was noticed");
    if let Err(e) = &outcome {
        assert!(matches!(e, SimError::Diverged { .. }), "{e}");
        assert!(e.to_string().contains("last good time"), "{e}");
    }
    let p = &sim.character.skins[0].points;
    assert!(
        p.position.iter().chain(&p.velocity).all(|x| x.is_finite()),
        "state stays finite"
    );
    assert!(sim.stats(0).rollbacks > 0);
}

/// With a wall-clock budget the solver stops early, says so, and stays consistent.
#[test]
fn a_tight_budget_reports_falling_behind() {
    let c = plasticine::io::load_character(std::path::Path::new("assets/penguin.ron")).unwrap();
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let mut sim = Simulation::new(c, driver, SolverSettings::default()).unwrap();
    let rep = sim
        .advance_to(100.0, Some(std::time::Duration::from_millis(20)))
        .unwrap();
    assert!(rep.fell_behind);
    assert!(rep.reached > 0.0 && rep.reached < 100.0, "{}", rep.reached);
    // And it catches up when given the time.
    let rep = sim.advance_to(rep.reached + 0.1, None).unwrap();
    assert!(!rep.fell_behind);
}

/// Real time maps to simulation time by the user's ratio (§8), and the
/// resolution can change mid-simulation without disturbing the clock or the
/// shape (§6.5).
#[test]
fn time_ratio_and_resolution_change_at_run_time() {
    let c = plasticine::io::load_character(std::path::Path::new("assets/penguin.ron")).unwrap();
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let settings = SolverSettings {
        time_ratio: 0.25,
        ..SolverSettings::default()
    };
    let mut sim = Simulation::new(c, driver, settings).unwrap();
    let rep = sim
        .advance_real(std::time::Duration::from_millis(400), None)
        .unwrap();
    assert!(
        (rep.reached - 0.1).abs() < 1e-9,
        "0.4 s of real time at ratio 1/4 is 0.1 s simulated, got {}",
        rep.reached
    );
    let before: Vec<Vec3> = sim.character.skins[0].points.position.clone();
    sim.resample_skins(32, 31).unwrap();
    assert_eq!(sim.time(), 0.1);
    let s = &sim.character.skins[0];
    assert_eq!((s.m, s.n), (32, 31));
    // 32×31 nests 16×16 (every other column, every other row): the old points are still there.
    for j in 0..16 {
        for i in 0..16 {
            let d = s.points.position[(2 * j) * 32 + 2 * i].distance(before[j * 16 + i]);
            assert!(d < 1e-6, "point ({i},{j}) moved {d} m in the resampling");
        }
    }
    sim.advance_to(0.2, None).unwrap();
    assert!(sim.deepest_penetration() < 2e-3);
}

/// A character without skin still keeps time (the skeleton plays on).
#[test]
fn a_skinless_character_keeps_time() {
    let mut c = ball(8, 8, SkinMaterial::default());
    c.skins.clear();
    let driver = still(&c);
    let mut sim = Simulation::new(c, driver, SolverSettings::default()).unwrap();
    assert_eq!(sim.advance_to(0.5, None).unwrap().reached, 0.5);
    assert_eq!(sim.time(), 0.5);
}

/// A vertical tube of skin hung between two rings a distance `TUBE_LENGTH`
/// apart (bottom at the origin, top above it), of radius `TUBE_RADIUS`, on an
/// m×n grid. Its hoop sits at its rest length and it is prestretched along
/// its length by `TUBE_LENGTH / rest_length`: hung under gravity it stays a
/// cylinder, and each meridian is an elastic string in the continuum limit.
const TUBE_LENGTH: f32 = 0.5;
const TUBE_RADIUS: f32 = 0.1;

fn tube(m: usize, n: usize, material: SkinMaterial, rest_length: f32) -> Character {
    let mut position = Vec::with_capacity(m * n);
    for j in 0..n {
        for i in 0..m {
            let phi = i as f32 / m as f32 * std::f32::consts::TAU;
            position.push(Vec3::new(
                TUBE_RADIUS * phi.cos(),
                TUBE_LENGTH * j as f32 / (n - 1) as f32,
                -TUBE_RADIUS * phi.sin(),
            ));
        }
    }
    let grid = Grid::new(m, n);
    let axial = rest_length / TUBE_LENGTH;
    let rest_metric: Vec<[f32; 3]> = rest_metric_of(&grid, &position)
        .into_iter()
        .map(|g| [g[0], g[1] * axial, g[2] * axial * axial])
        .collect();
    let rest_curvature = rest_curvature_of(&grid, &position, &rest_metric);
    let mut boundary_local: Vec<Vec3> = position[..m].to_vec();
    boundary_local.extend(
        position[(n - 1) * m..]
            .iter()
            .map(|x| *x - TUBE_LENGTH * Vec3::Y),
    );
    Character {
        name: "tube".into(),
        skeleton: Skeleton {
            joints: vec![
                joint("bottom", None, 0.0),
                joint("top", Some(0), TUBE_LENGTH),
            ],
        },
        muscles: vec![],
        skins: vec![Skin {
            name: "tube".into(),
            bottom_joint: 0,
            top_joint: 1,
            m,
            n,
            boundary_local,
            muscles: vec![],
            points: SkinPoints::uniform(position, rest_metric, rest_curvature, &material),
        }],
        environment: Environment {
            gravity: Vec3::new(0.0, -9.81, 0.0),
            global_damping: 0.0,
        },
        key_postures: vec![],
        flesh: Default::default(),
    }
}

/// The hanging tube's material: stiff enough along its length to sag a few
/// millimetres, no damping, the default bending (inert on a cylinder).
fn tube_material() -> SkinMaterial {
    SkinMaterial {
        stretch: 50.0,
        damping_density: 0.0,
        ..SkinMaterial::default()
    }
}

const TUBE_REST_LENGTH: f32 = 0.4;

/// The continuum hanging string: with tension η(λ − 1) per unit of hoop and
/// weight ρ per unit rest area, equilibrium is dλ/du = ρgL₀/η, so a point at
/// material height u sits at y(u) = L·u − ρgL₀²/(2η)·u(1 − u).
fn hanging_height(material: &SkinMaterial, u: f32) -> f32 {
    let sag = material.mass_density * 9.81 * TUBE_REST_LENGTH * TUBE_REST_LENGTH
        / (2.0 * material.stretch);
    TUBE_LENGTH * u - sag * u * (1.0 - u)
}

/// Material parameters are densities: the continuum's hanging shape is the
/// rest shape of the tube at every resolution. Placed there, every free
/// point's acceleration vanishes to round-off, while the straight tube it sags
/// from falls at g. Round-off: positions are f32, so an edge of rest length ℓ₀
/// is known to ε·L, which the string's stiffness turns into an acceleration
/// of η/(ρℓ₀²)·εL (0.5 % of g at 64×64).
#[test]
fn a_hanging_skin_rests_in_the_continuum_shape_at_every_resolution() {
    use plasticine::skin::SecondOrderSystem;
    let material = tube_material();
    for res in [16, 32, 64] {
        let mut c = tube(res, res, material, TUBE_REST_LENGTH);
        let driver = still(&c);
        let residual = |c: &Character| {
            let skin = &c.skins[0];
            let mut sys = SkinSystem::new(c, skin, &driver);
            let mut a = vec![Vec3::ZERO; skin.points.position.len()];
            sys.position_acceleration(0.0, &skin.points.position, &mut a);
            a[res..a.len() - res]
                .iter()
                .map(|x| x.length())
                .fold(0.0f32, f32::max)
        };
        let straight = residual(&c);
        for (k, x) in c.skins[0].points.position.iter_mut().enumerate() {
            x.y = hanging_height(&material, (k / res) as f32 / (res - 1) as f32);
        }
        let hung = residual(&c);
        let l0 = TUBE_REST_LENGTH / (res - 1) as f32;
        let round_off =
            material.stretch / (material.mass_density * l0 * l0) * f32::EPSILON * TUBE_LENGTH;
        assert!(round_off < 0.01 * 9.81, "{res}: the check is sharp");
        assert!(
            straight > 0.9 * 9.81,
            "{res}: the straight tube must sag ({straight})"
        );
        assert!(
            hung < 2.0 * round_off,
            "{res}x{res}: acceleration {hung} m/s² left in the continuum's hanging shape \
             (round-off {round_off})"
        );
    }
}

/// Material parameters are densities: the first vibration period of the
/// hanging tube converges to the continuum string's, T₁ = 2L₀/√(η/ρ), at
/// second order as the grid is refined, and it decays at the continuum's
/// rate d/2ρ (d the damping density) at every resolution. Released from its
/// hanging shape with gravity switched off, it swings through its straight
/// shape; the first mode's amplitude, q₁ = Σ (y − L·u) sin πu over the free
/// rows (the lattice sine modes are exact, so the higher modes do not leak
/// into it), crosses zero twice a period.
#[test]
fn a_hanging_skins_first_period_and_decay_converge_to_the_continuum() {
    let material = SkinMaterial {
        damping_density: 1.5,
        ..tube_material()
    };
    let (rho, eta) = (material.mass_density as f64, material.stretch as f64);
    let decay = material.damping_density as f64 / (2.0 * rho);
    let omega = std::f64::consts::PI * (eta / rho).sqrt() / TUBE_REST_LENGTH as f64;
    let continuum = TAU / (omega * omega - decay * decay).sqrt();
    let mut errors = Vec::new();
    for res in [16, 32, 64] {
        let mut c = tube(res, res, material, TUBE_REST_LENGTH);
        for (k, x) in c.skins[0].points.position.iter_mut().enumerate() {
            x.y = hanging_height(&material, (k / res) as f32 / (res - 1) as f32);
        }
        c.environment.gravity = Vec3::ZERO;
        let settings = SolverSettings {
            tolerances: Tolerances {
                position: 1e-6,
                velocity: 1e-6,
                ..Tolerances::default()
            },
            ..SolverSettings::default()
        };
        let driver = still(&c);
        let mut sim = Simulation::new(c, driver, settings).unwrap();
        let mode = |c: &Character| -> f64 {
            let p = &c.skins[0].points.position;
            (1..res - 1)
                .map(|j| {
                    let u = j as f64 / (res - 1) as f64;
                    let y = p[j * res..(j + 1) * res]
                        .iter()
                        .map(|x| x.y as f64)
                        .sum::<f64>()
                        / res as f64;
                    (y - TUBE_LENGTH as f64 * u) * (std::f64::consts::PI * u).sin()
                })
                .sum()
        };
        let dt = continuum / 400.0;
        let mut last = (0.0f64, mode(&sim.character));
        let (mut crossings, mut peaks) = (vec![], vec![last.1.abs()]);
        let mut f = 0;
        while crossings.len() < 5 {
            f += 1;
            let t = f as f64 * dt;
            assert!(
                t < 4.0 * continuum,
                "{res}: too few crossings {crossings:?}"
            );
            sim.advance_to(t, None).unwrap();
            let q = mode(&sim.character);
            if last.1.signum() != q.signum() {
                crossings.push(last.0 + dt * last.1 / (last.1 - q));
                peaks.push(0.0);
            }
            let peak = peaks.last_mut().unwrap();
            *peak = peak.max(q.abs());
            last = (t, q);
        }
        let period = 2.0 * (crossings[4] - crossings[0]) / 4.0;
        errors.push(period / continuum - 1.0);
        // Half a period between the first swing's peak (the release) and
        // each later one.
        let rate = (peaks[0] / peaks[4]).ln() / (4.0 * 0.5 * period);
        assert!(
            (rate / decay - 1.0).abs() < 0.02,
            "{res}x{res}: decays at {rate}/s, the continuum at {decay}/s"
        );
    }
    // A chain of N segments swings slower by sin(π/2N)/(π/2N): 0.18 % at 16.
    assert!(errors[0] > 0.0 && errors[0] < 4e-3, "16x16: {errors:?}");
    assert!(errors[2].abs() < 3e-4, "64x64 within 0.03 %: {errors:?}");
    for w in errors.windows(2) {
        assert!(w[1].abs() < 0.35 * w[0].abs(), "second order: {errors:?}");
    }
}
