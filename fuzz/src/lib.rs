//! What the character targets share: building a character from the
//! fuzzer's bytes by structure ([`arbitrary_character`]), and what a
//! character that loads must survive ([`survive`]).

use arbitrary::{Result, Unstructured};
use glam::{Quat, Vec2, Vec3};
use plasticine::character::{Character, KeyPosture};
use plasticine::render::{Decorations, GeometryBuilder, SceneStyle};
use plasticine::shape::Primitive;
use plasticine::skin::{Simulation, SkeletonDriver, SolverSettings};
use plasticine::snapshot::SceneSnapshot;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

/// Skin points past which an input is only loaded, not simulated: a large
/// character is legal, but its steps do not fit libFuzzer's time per input.
pub const SIMULATED_POINTS: usize = 4096;

/// What a character that loaded must survive: ten 1/90 s frames of the
/// solver, each within a 10 ms budget (an advance ends within five of its
/// budgets however often a skin diverges: half a second at most in all,
/// inside libFuzzer's time per input), with no non-finite skin point in an
/// accepted step, and the render geometry of the result.
pub fn survive(c: Character) {
    let points: usize = c.skins.iter().map(|s| s.m * s.n).sum();
    if points > SIMULATED_POINTS {
        return;
    }
    // As the front ends do: the key postures, or the rest pose without any.
    let driver = if c.key_postures.is_empty() {
        SkeletonDriver::Still(c.skeleton.rest_posture())
    } else {
        SkeletonDriver::Keys(c.key_postures.clone())
    };
    let Ok(mut sim) = Simulation::new(c, driver.clone(), SolverSettings::default()) else {
        return;
    };
    // A stiff character takes many small steps, never forever.
    let mut t = 0.0;
    for _ in 0..10 {
        t += 1.0 / 90.0;
        if sim.advance_to(t, Some(Duration::from_millis(10))).is_err() {
            return;
        }
        for s in &sim.character.skins {
            assert!(
                s.points.position.iter().all(|p| p.is_finite()),
                "an accepted step left a non-finite skin point"
            );
        }
    }
    let snapshot = SceneSnapshot::of(Arc::new(sim.character.clone()), driver.posture_at(t), 0);
    GeometryBuilder::new().build(&snapshot, &SceneStyle::default(), &Decorations::default());
}

/// A number near `typical` (a power of two times it, either sign), or one
/// of the values that break arithmetic: zero, the extremes, infinities, NaN.
fn value(u: &mut Unstructured, typical: f32) -> Result<f32> {
    Ok(match u.int_in_range(0u8..=9)? {
        0..=4 => typical * 2f32.powi(u.int_in_range(-24..=24)?),
        5 => -typical * 2f32.powi(u.int_in_range(-24..=24)?),
        6 => *u.choose(&[0.0, -0.0, f32::MIN_POSITIVE, f32::MAX, -f32::MAX, 1e-30])?,
        7 => *u.choose(&[f32::INFINITY, f32::NEG_INFINITY, f32::NAN])?,
        _ => f32::from_bits(u.arbitrary()?),
    })
}

fn vec3(u: &mut Unstructured, typical: f32) -> Result<Vec3> {
    Ok(Vec3::new(
        value(u, typical)?,
        value(u, typical)?,
        value(u, typical)?,
    ))
}

/// An index below `len`, or one just past it (which validation must refuse).
fn index(u: &mut Unstructured, len: usize) -> Result<usize> {
    u.int_in_range(0..=len + 1)
}

/// The shipped samples at a few resolutions, built once per process:
/// building one wraps and settles its skins, which takes seconds under the
/// sanitizer, far more than an input may.
static SAMPLES: LazyLock<Vec<Character>> = LazyLock::new(|| {
    let mut samples = Vec::new();
    for name in ["penguin", "wombat", "torso"] {
        for (m, n) in [(4, 4), (8, 8), (6, 12)] {
            samples.push(plasticine::samples::build(name, m, n).expect("a shipped sample builds"));
        }
    }
    samples
});

/// Builds [`SAMPLES`] (the targets' `init`, outside libFuzzer's time per input).
pub fn prepare() {
    LazyLock::force(&SAMPLES);
}

/// A shipped sample at one of a few resolutions, then up to 16 edits, each a
/// field of one layer set to a fuzzed value (joints, limits, muscles, skin
/// materials, fat, points, the environment, key postures), or a part
/// removed. Written out and loaded as a file, it reaches the validation and
/// the solver's set-up with values a text mutator rarely spells.
pub fn arbitrary_character(u: &mut Unstructured) -> Result<Character> {
    let mut c = u.choose(&SAMPLES)?.clone();
    for _ in 0..u.int_in_range(0..=16)? {
        edit(u, &mut c)?;
    }
    Ok(c)
}

fn edit(u: &mut Unstructured, c: &mut Character) -> Result<()> {
    let joints = c.skeleton.joints.len();
    match u.int_in_range(0u8..=15)? {
        0 => {
            if let Some(j) = c.skeleton.joints.get_mut(index(u, joints)?) {
                j.offset = vec3(u, 0.1)?;
            }
        }
        1 => {
            if let Some(j) = c.skeleton.joints.get_mut(index(u, joints)?) {
                let v = vec3(u, 1.0)?;
                j.rest_rotation = Quat::from_xyzw(v.x, v.y, v.z, value(u, 1.0)?);
            }
        }
        2 => {
            let axis = u.int_in_range(0..=2)?;
            if let Some(j) = c.skeleton.joints.get_mut(index(u, joints)?) {
                j.dofs[axis].free = u.arbitrary()?;
                j.dofs[axis].min = value(u, -1.0)?;
                j.dofs[axis].max = value(u, 1.0)?;
            }
        }
        3 => {
            let k = index(u, c.muscles.len())?;
            let primitive = if u.arbitrary()? {
                Primitive::Sphere {
                    radius: value(u, 0.05)?,
                }
            } else {
                Primitive::Superellipsoid {
                    radii: vec3(u, 0.05)?,
                    exponents: Vec2::new(value(u, 1.0)?, value(u, 1.0)?),
                }
            };
            if let Some(muscle) = c.muscles.get_mut(k) {
                muscle.shape.primitive = primitive;
            }
        }
        4 => {
            let k = index(u, c.muscles.len())?;
            let (offset, joint) = (vec3(u, 0.05)?, index(u, joints)?);
            if let Some(muscle) = c.muscles.get_mut(k) {
                muscle.offset = offset;
                muscle.joint = joint;
            }
        }
        5..=9 => {
            let kind = u.int_in_range(0u8..=4)?;
            let s = index(u, c.skins.len())?;
            let Some(skin) = c.skins.get_mut(s) else {
                return Ok(());
            };
            let points = skin.points.position.len();
            let p = index(u, points)?;
            let v = value(u, 1.0)?;
            match kind {
                0 => skin
                    .points
                    .stretch
                    .iter_mut()
                    .for_each(|k| *k = [v * 1e3; 3]),
                1 => skin.points.bend.iter_mut().for_each(|b| *b = v * 1e-5),
                2 => skin.points.mass_density.iter_mut().for_each(|d| *d = v),
                3 => {
                    if let Some(f) = skin.points.fat.get_mut(p) {
                        *f = v * 0.01;
                    }
                }
                _ => {
                    if let Some(x) = skin.points.position.get_mut(p) {
                        *x += Vec3::splat(v * 0.01);
                    }
                }
            }
        }
        10 => {
            let s = index(u, c.skins.len())?;
            let (bottom, top) = (index(u, joints)?, index(u, joints)?);
            if let Some(skin) = c.skins.get_mut(s) {
                skin.bottom_joint = bottom;
                skin.top_joint = top;
            }
        }
        11 => {
            c.environment.gravity = vec3(u, 9.8)?;
            c.environment.global_damping = value(u, 0.1)?;
        }
        12 => {
            let mut posture = c.skeleton.rest_posture();
            for a in &mut posture.angles {
                *a = vec3(u, 0.5)?;
            }
            posture.root_translation = vec3(u, 0.1)?;
            c.key_postures.push(KeyPosture {
                time: value(u, 0.5)?,
                posture,
                tension: value(u, 0.5)?,
                continuity: value(u, 0.5)?,
                bias: value(u, 0.5)?,
            });
        }
        13 => {
            c.skeleton.joints.pop();
        }
        14 => {
            let k = index(u, c.muscles.len())?;
            if k < c.muscles.len() {
                c.muscles.remove(k);
            }
        }
        _ => {
            let k = index(u, c.skins.len())?;
            if k < c.skins.len() {
                c.skins.remove(k);
            }
        }
    }
    Ok(())
}
