//! `plasticine bench --only contact`: the FEM flesh with its skeleton
//! responding and frictional contact with the ground (Galoppo 2008, ch.
//! 3–4, `crate::fem::dynamic`), at the sizes of the thesis' Table 4.1
//! where we have the scene: a 5-bone tube lying on the ground (292 nodes)
//! and the penguin at about 2,800 and 8,400 lattice vertices (its 10
//! bones, not the deer's 34), each dropped a centimetre and timed while
//! it lies on the ground ("colliding"), while the hand's capsule (4 cm,
//! 0.3 m/s) pushes it along the ground ("pushed", eq. 3.19), and in free
//! fall ("free").
//! Step and contact wall time per 1/120 s flesh step, the contacts per
//! step, the thesis' figure and our goal. Two penguins touching, one
//! walking into the other (`touching`), as the thesis' several
//! 3,500-vertex characters. Then the skins over such a
//! skeleton (`drop_skin`): the penguin dropped 0.5 m as `bake --drop 0.5`
//! runs it, its real-time factor and how smooth its skins stay.

use crate::character::{Character, Dof, Environment, FemFlesh, Flesh, Joint, Muscle, Skeleton};
use crate::contact::{Capsule, Plane};
use crate::fem::FleshSim;
use crate::samples;
use crate::shape::MuscleShape;
use glam::{DVec3, Quat, Vec2, Vec3};
use serde_json::json;
use std::time::Instant;

/// The scenes: name, lattice vertices asked for, the thesis' colliding
/// step (ms) and our goal (ms).
const SCENES: [(&str, usize, f64, f64); 3] = [
    ("tube", 292, 23.3, 0.4),
    ("penguin-2800", 2800, 160.0, 4.0),
    ("penguin-8400", 8400, 450.0, 8.0),
];

/// A tube of five bones along x (six joints, 0.1 m apart), a rounded
/// cylinder of flesh on each.
pub fn tube(vertices: usize) -> Character {
    let joint = |k: usize| Joint {
        locked: false,
        name: format!("link{k}"),
        parent: k.checked_sub(1),
        offset: if k == 0 {
            Vec3::new(-0.25, 0.2, 0.0)
        } else {
            Vec3::new(0.1, 0.0, 0.0)
        },
        rest_rotation: Quat::IDENTITY,
        dofs: [Dof::default(); 3],
    };
    Character {
        name: "tube".into(),
        skeleton: Skeleton {
            joints: (0..6).map(joint).collect(),
        },
        muscles: (0..5)
            .map(|k| Muscle {
                joint: k,
                offset: Vec3::new(0.05, 0.0, 0.0),
                // The shape's long (z) axis along the bone.
                rotation: Quat::from_rotation_y(std::f32::consts::FRAC_PI_2),
                shape: MuscleShape::superellipsoid(
                    Vec3::new(0.05, 0.05, 0.06),
                    Vec2::new(0.6, 1.0),
                ),
                drivers: Vec::new(),
                color: None,
            })
            .collect(),
        skins: Vec::new(),
        environment: Environment::default(),
        flesh: Flesh::Fem(FemFlesh {
            target_vertices: vertices,
            ..FemFlesh::default()
        }),
        key_postures: Vec::new(),
    }
}

/// The scene's character.
fn scene(name: &str, vertices: usize) -> Option<Character> {
    if name == "tube" {
        return Some(tube(vertices));
    }
    let mut c = samples::bare("penguin")?;
    c.flesh = Flesh::Fem(FemFlesh {
        target_vertices: vertices,
        ..FemFlesh::default()
    });
    Some(c)
}

/// What a timed run measured.
struct Timing {
    vertices: usize,
    bones: usize,
    contacts: f64,
    step_ms: f64,
    contact_ms: f64,
    /// CG iterations per step, summed over the step's solves.
    cg_iterations: f64,
    /// The hand's contacts per step.
    push_contacts: f64,
}

/// The hand's speed in the pushed regime, m/s.
const PUSH_SPEED: f64 = 0.3;

/// Drops `c` on `ground` from `drop` (none: where it stands), lets it
/// settle for `settle` seconds, then times `steps` steps; with `push`, a
/// hand's capsule on the line along +x through the proxies' centroid starts
/// 1 cm off the nearest proxy on that line and slides it along +x.
fn time(
    c: &Character,
    (ground, drop, settle): (Plane, Option<f64>, f64),
    push: bool,
    steps: usize,
) -> Result<Timing, String> {
    let posture = c.skeleton.rest_posture();
    let mut flesh = FleshSim::new(c, &posture, 0.0).map_err(|e| e.to_string())?;
    flesh
        .make_dynamic(c, &posture, ground, drop)
        .map_err(|e| e.to_string())?;
    flesh.advance_to(c, |_| posture.clone(), settle);
    if push {
        let core = flesh.core().expect("dynamic");
        let points = core.proxy_positions(flesh.lattice(), flesh.q());
        // Along +x through the proxies' centroid (the flesh's middle,
        // wherever it has tipped), 1 cm off the nearest proxy within the
        // capsule's reach of that line.
        let radius = 0.04;
        let centre = points.iter().sum::<DVec3>() / points.len().max(1) as f64;
        let near = points
            .iter()
            .filter(|p| (p.y - centre.y).hypot(p.z - centre.z) < radius)
            .map(|p| p.x)
            .fold(f64::INFINITY, f64::min);
        let Some(near) = Some(near).filter(|x| x.is_finite()) else {
            return Err("no contact proxy on the hand's line".into());
        };
        let tip = DVec3::new(near - radius - 0.01, centre.y, centre.z);
        let hand = Capsule::hand(
            tip - DVec3::X * 0.1,
            tip,
            radius,
            DVec3::X * PUSH_SPEED,
            flesh.time(),
        );
        flesh.core_mut().expect("dynamic").pushers = vec![hand];
    }
    let h = crate::fem::FLESH_STEP;
    let (mut wall, mut contact, mut contacts, mut pushed) = (0.0, 0.0, 0usize, 0usize);
    let iterations_before = flesh.cg_iterations;
    for _ in 0..steps {
        let end = flesh.time() + h;
        let start = Instant::now();
        flesh.advance_to(c, |_| posture.clone(), end - 0.5 * h);
        wall += start.elapsed().as_secs_f64();
        let core = flesh.core().expect("dynamic");
        contact += core.last.contact_seconds;
        contacts += core.last.contacts;
        pushed += core.last.push_contacts;
    }
    let n = steps as f64;
    Ok(Timing {
        vertices: flesh.lattice().vertex_count(),
        bones: flesh.lattice().bones.len(),
        contacts: contacts as f64 / n,
        step_ms: 1e3 * wall / n,
        contact_ms: 1e3 * contact / n,
        cg_iterations: (flesh.cg_iterations - iterations_before) as f64 / n,
        push_contacts: pushed as f64 / n,
    })
}

/// The thesis' "several 3,500-vertex characters" (Table 4.1: 4–8 fps, so
/// 125–250 ms a frame) and our goal for two of them touching, ms a step.
const TOUCHING: (usize, f64, f64) = (3500, 250.0, 8.0);

/// Two FEM penguins of about `vertices` lattice vertices standing side by
/// side on the ground, the second 1 cm to the first's +x, which walks
/// into it at 0.3 m/s (`FleshSim::advance_together`): wall time per
/// 1/120 s scene step (both characters) and its contact part, the
/// contacts per step and those between the two, over `steps` steps from
/// when the gap closes.
fn touching(vertices: usize, settle: f64, steps: usize) -> Result<serde_json::Value, String> {
    let c = scene("penguin", vertices).ok_or("no penguin sample")?;
    let posture = c.skeleton.rest_posture();
    let dropped = || -> Result<FleshSim, String> {
        let mut f = FleshSim::new(&c, &posture, 0.0).map_err(|e| e.to_string())?;
        f.make_dynamic(&c, &posture, Plane::ground(), Some(0.01))
            .map_err(|e| e.to_string())?;
        Ok(f)
    };
    let (mut a, mut b) = (dropped()?, dropped()?);
    let extent = |f: &FleshSim, sign: f64| {
        let core = f.core().expect("dynamic");
        core.proxy_positions(f.lattice(), f.q())
            .iter()
            .map(|p| sign * p.x)
            .fold(f64::NEG_INFINITY, f64::max)
    };
    // Side by side, 1 cm apart, before they settle.
    b.place(DVec3::X * (extent(&a, 1.0) + extent(&b, -1.0) + 0.01));
    let rest = |_: usize, _: f64| posture.clone();
    FleshSim::advance_together(&mut [(&mut a, &c), (&mut b, &c)], rest, settle)
        .map_err(|e| e.to_string())?;
    a.throw(DVec3::X * PUSH_SPEED);
    let h = crate::fem::FLESH_STEP;
    let (mut wall, mut contact, mut contacts, mut between, mut timed) = (0.0, 0.0, 0, 0, 0);
    // Untimed until the gap closes (at most a quarter second).
    let mut waited = 0;
    while timed < steps {
        let end = a.time() + h;
        let start = Instant::now();
        FleshSim::advance_together(&mut [(&mut a, &c), (&mut b, &c)], rest, end - 0.5 * h)
            .map_err(|e| e.to_string())?;
        let spent = start.elapsed().as_secs_f64();
        let (la, lb) = (
            &a.core().expect("dynamic").last,
            &b.core().expect("dynamic").last,
        );
        if la.between == 0 && timed == 0 && waited < 30 {
            waited += 1;
            continue;
        }
        wall += spent;
        contact += la.contact_seconds;
        contacts += la.contacts + lb.contacts - la.between;
        between += la.between;
        timed += 1;
    }
    let n = steps as f64;
    let (_, thesis, goal) = TOUCHING;
    Ok(json!({
        "name": "contact",
        "scene": "two-penguins",
        "regime": "touching",
        "vertices": a.lattice().vertex_count() + b.lattice().vertex_count(),
        "bones": a.lattice().bones.len() + b.lattice().bones.len(),
        "contacts": contacts as f64 / n,
        "between": between as f64 / n,
        "step_ms": 1e3 * wall / n,
        "contact_ms": 1e3 * contact / n,
        "thesis_step_ms": thesis,
        "goal_step_ms": goal,
    }))
}

/// Until then the dropped penguin falls, lands (0.32 s) and rebounds;
/// after it, it falls over.
const LANDING_S: f64 = 0.65;

/// The FEM penguin (16×16 skins resampled to m×m, as `bake --resolution`
/// does) dropped 0.5 m for `seconds`: simulated seconds per wall second
/// (the smoothness measure left out), the rollbacks, and the skins' worst
/// p95 neighbour angle through the landing and over the whole run.
fn drop_skin(m: usize, seconds: f64) -> Result<serde_json::Value, String> {
    use crate::skin::{Grid, SolverSettings, smoothness};
    let mut c = samples::resampled("penguin", m, m).map_err(|e| e.to_string())?;
    c.flesh = Flesh::Fem(FemFlesh::default());
    let mut sim = samples::playback(c, SolverSettings::default()).map_err(|e| e.to_string())?;
    sim.make_dynamic(Plane::ground(), Some(0.5))
        .map_err(|e| e.to_string())?;
    let grids: Vec<Grid> = sim.character.skins.iter().map(Grid::of).collect();
    let (mut landing, mut worst, mut creased) = (0.0f32, 0.0f32, 0.0f32);
    let (mut wall, mut rollbacks) = (0.0, 0);
    let frames = (seconds * 30.0).round() as usize;
    for f in 1..=frames {
        let t = f as f64 / 30.0;
        let start = Instant::now();
        let report = sim.advance_to(t, None).map_err(|e| e.to_string())?;
        wall += start.elapsed().as_secs_f64();
        rollbacks += report.events.len();
        for (skin, grid) in sim.character.skins.iter().zip(&grids) {
            let s = smoothness(grid, &skin.points.position);
            worst = worst.max(s.p95_deg);
            creased = creased.max(s.creased_pct);
            if t <= LANDING_S {
                landing = landing.max(s.p95_deg);
            }
        }
    }
    Ok(json!({
        "name": "drop_skin",
        "character": "penguin",
        "resolution": format!("{m}x{m}"),
        "drop_m": 0.5,
        "simulated_s": frames as f64 / 30.0,
        "rtf": frames as f64 / 30.0 / wall.max(1e-9),
        "rollbacks": rollbacks,
        "landing_s": LANDING_S,
        "landing_p95_deg": landing,
        "worst_p95_deg": worst,
        "worst_creased_pct": creased,
    }))
}

/// One JSON line per scene and regime (colliding, free), then the dropped
/// penguin's skins (`drop_skin`) at 16×16 and 64×64.
pub fn figures(quick: bool) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    let drops: &[(usize, f64)] = if quick {
        &[(16, 0.4)]
    } else {
        &[(16, 1.0), (64, 1.0)]
    };
    for &(m, seconds) in drops {
        out.push(drop_skin(m, seconds).unwrap_or_else(
            |error| json!({"name": "drop_skin", "resolution": format!("{m}x{m}"), "error": error}),
        ));
    }
    let (vertices, ..) = TOUCHING;
    let (size, settle, steps) = if quick {
        (300, 0.05, 3)
    } else {
        (vertices, 0.5, 60)
    };
    out.push(touching(size, settle, steps).unwrap_or_else(
        |error| json!({"name": "contact", "scene": "two-penguins", "error": error}),
    ));
    for (name, vertices, thesis, goal) in SCENES {
        if quick && vertices > 1000 {
            continue;
        }
        let Some(c) = scene(name, vertices) else {
            continue;
        };
        let steps = if quick { 5 } else { 60 };
        let far = Plane::through(DVec3::new(0.0, -1e3, 0.0), DVec3::Y, 0.8, 0.1);
        let lying = (Plane::ground(), Some(0.01), if quick { 0.05 } else { 0.5 });
        // Pushed once it lies still (a dropped penguin tips onto its back
        // within about a second).
        let still = (lying.0, lying.1, if quick { 0.05 } else { 1.3 });
        for (regime, scene, push) in [
            ("colliding", lying, false),
            ("pushed", still, true),
            ("free", (far, None, 0.05), false),
        ] {
            out.push(match time(&c, scene, push, steps) {
                Ok(t) => json!({
                    "name": "contact",
                    "scene": name,
                    "regime": regime,
                    "vertices": t.vertices,
                    "bones": t.bones,
                    "contacts": t.contacts,
                    "step_ms": t.step_ms,
                    "contact_ms": t.contact_ms,
                    "cg_iterations": t.cg_iterations,
                    "push_contacts": t.push_contacts,
                    "thesis_step_ms": thesis,
                    "goal_step_ms": goal,
                }),
                Err(error) => json!({"name": "contact", "scene": name, "error": error}),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tube_lies_on_the_ground_on_its_flesh() {
        let lines = super::figures(true);
        let tube = lines
            .iter()
            .find(|l| l["scene"] == "tube" && l["regime"] == "colliding")
            .expect("a tube line");
        assert!(tube["contacts"].as_f64().unwrap() > 5.0, "{tube}");
        assert_eq!(tube["bones"], 5);
        let free = lines
            .iter()
            .find(|l| l["scene"] == "tube" && l["regime"] == "free")
            .expect("a free line");
        assert_eq!(free["contacts"].as_f64(), Some(0.0), "{free}");
        // The hand starts 1 cm off the tube: at 0.3 m/s it touches within
        // the quick run's five 1/120 s steps (1.25 cm).
        let pushed = lines
            .iter()
            .find(|l| l["scene"] == "tube" && l["regime"] == "pushed")
            .expect("a pushed line");
        assert!(pushed["push_contacts"].as_f64().unwrap() > 0.0, "{pushed}");
        // The walking penguin reaches the other: contacts between them.
        let two = lines
            .iter()
            .find(|l| l["scene"] == "two-penguins")
            .expect("a two-penguins line");
        assert!(two["between"].as_f64().unwrap() > 0.0, "{two}");
    }
}
