//! The sample characters shipped in `assets/` (LEMAN Figures 12–14: a penguin,
//! a wombat and a torso), built the way an animator would: joints, muscles,
//! skins wrapped between joints and left to shrink onto the muscles, a global
//! attach, and a few seconds of key postures that show follow-through.
//! `plasticine sample NAME --out FILE` regenerates an asset from this code.

use crate::character::{Character, Flesh, Posture};
use crate::skin::{SimError, Simulation, SkeletonDriver, SolverSettings};
use crate::skin::{global_attach, wrap_skin};
use glam::Vec3;

mod limb;
mod paint;
mod parts;
mod penguin;
mod pick_scene;
mod torso;
mod wombat;

pub use limb::{limb, limb_pose};
pub use pick_scene::{demo_probes, demo_scene};

pub use parts::{SkinSpec, material};
use penguin::penguin;
use torso::{figure, torso};
use wombat::wombat;

/// Names of the sample characters, as `plasticine sample NAME` takes them.
pub const NAMES: [&str; 3] = ["penguin", "wombat", "torso"];

/// DyRT's humanoid (§6), the modal benchmark's figure: the torso standing
/// on two legs, with a head. Twelve joints carry bones, so a part per bone
/// gives twelve parts. `plasticine sample figure` builds it too, but it is
/// not one of [`NAMES`]: not shipped, since LEMAN shows no whole figure,
/// and its skins are not held to the samples' fidelity tests.
pub const FIGURE: &str = "figure";

/// Every name `plasticine sample` takes, for messages: the shipped
/// samples, then the figure.
pub fn known_names() -> String {
    format!("{}, {FIGURE}", NAMES.join(", "))
}

/// A simulation of the character's key postures (what playback, the
/// benchmarks and the tests run).
pub fn playback(c: Character, settings: SolverSettings) -> Result<Simulation, SimError> {
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    Simulation::new(c, driver, settings)
}

/// Sample `name` wrapped at 16×16 and resampled to m×n (LEMAN §6.5): the
/// same character at every resolution, quickly.
pub fn resampled(name: &str, m: usize, n: usize) -> Result<Character, SimError> {
    let mut c = build(name, 16, 16)?;
    if (m, n) != (16, 16) {
        for s in &mut c.skins {
            *s = crate::character::resample(s, m, n)?;
        }
    }
    Ok(c)
}

/// The shipped file of sample `name` (`assets/NAME.ron`, built from this
/// code at 16×16 and checked against it by a test), carried in the binary:
/// nothing to find on disk at run time. `None` for an unknown name.
pub fn shipped(name: &str) -> Option<Character> {
    let text = match name {
        "penguin" => include_str!("../../../../assets/penguin.ron"),
        "wombat" => include_str!("../../../../assets/wombat.ron"),
        "torso" => include_str!("../../../../assets/torso.ron"),
        _ => return None,
    };
    let path = format!("assets/{name}.ron");
    Some(
        crate::io::parse_character(text, std::path::Path::new(&path))
            .unwrap_or_else(|e| panic!("the shipped {path} does not load: {e}")),
    )
}

/// The shipped penguin: the fixture of the front ends' tests and latency
/// measurement.
pub fn shipped_penguin() -> Character {
    shipped("penguin").expect("the penguin is a sample")
}

/// Builds a sample by name at the given skin resolution.
pub fn build(name: &str, m: usize, n: usize) -> Result<Character, SimError> {
    build_with_flesh(name, m, n, Flesh::Kinematic)
}

/// Builds a sample with the given flesh backend: its skins settle on that
/// flesh (FEM flesh sags a little under gravity).
pub fn build_with_flesh(
    name: &str,
    m: usize,
    n: usize,
    flesh: Flesh,
) -> Result<Character, SimError> {
    let (mut c, skins) = match name {
        "penguin" => penguin(),
        "wombat" => wombat(),
        "torso" => torso(),
        FIGURE => figure(),
        other => {
            return Err(SimError::UnknownSample {
                name: other.to_owned(),
                known: known_names(),
            });
        }
    };
    c.flesh = flesh;
    wrapped(name, c, skins, m, n)
}

/// Wraps `skins` round `c` at m×n, settles them and paints them as the
/// sample `name`.
fn wrapped(
    name: &str,
    mut c: Character,
    skins: Vec<SkinSpec>,
    m: usize,
    n: usize,
) -> Result<Character, SimError> {
    let rest = c.skeleton.rest_posture();
    for (skin_name, bottom, top, mat) in skins {
        let b = c.skeleton.find(bottom).expect("sample joint");
        let t = c.skeleton.find(top).expect("sample joint");
        let skin = wrap_skin(&c, &rest, skin_name, b, t, m, n, &mat)?;
        c.skins.push(skin);
    }
    let mut c = settle(c, rest.clone())?;
    paint::paint(name, &mut c, &rest);
    Ok(c)
}

/// The skins a sample wraps: (name, bottom joint, top joint, material).
pub fn skin_specs(name: &str) -> Vec<SkinSpec> {
    match name {
        "penguin" => penguin().1,
        "wombat" => wombat().1,
        "torso" => torso().1,
        FIGURE => figure().1,
        _ => Vec::new(),
    }
}

/// A sample's skeleton, muscles and key postures without skins (no wrapping
/// or settling, so it is instant): what a flesh lattice is built from.
pub fn bare(name: &str) -> Option<Character> {
    match name {
        "penguin" => Some(penguin().0),
        "wombat" => Some(wombat().0),
        "torso" => Some(torso().0),
        FIGURE => Some(figure().0),
        _ => None,
    }
}

/// Attaches the wrapped skins (the wrap has shrunk them onto the muscles
/// already), lets them settle under gravity, and takes the settled shape as
/// their rest state (so the skin is evenly prestressed where it hangs, not
/// where it was wrapped without weight), then settles again.
fn settle(mut c: Character, rest: Posture) -> Result<Character, SimError> {
    // The rest shape is found without skin contact: at rest the skins meet
    // only at their junctions, and a coarse skin's rim pushed apart while
    // it settles would become its rest curvature.
    let settings = SolverSettings {
        skin_contact: false,
        ..SolverSettings::default()
    };
    for s in 0..c.skins.len() {
        global_attach(&mut c, s, &rest, material().band);
    }
    // Relax under gravity with near-critical damping, so the loose skin's
    // slow modes do not ring on into the first take.
    let damping = c.environment.global_damping;
    c.environment.global_damping = 35.0;
    for pass in 0..2 {
        let mut sim = Simulation::new(c, SkeletonDriver::Still(rest.clone()), settings.clone())?;
        sim.advance_to(if pass == 0 { 1.0 } else { 1.5 }, None)?;
        c = sim.character;
        if pass == 0 {
            for skin in &mut c.skins {
                crate::skin::rest_in_place(skin, material().shrink);
            }
        }
    }
    c.environment.global_damping = damping;
    for s in &mut c.skins {
        s.points.velocity.fill(Vec3::ZERO);
    }
    Ok(c)
}
