//! Authoring a dynamic morph target (Galoppo 2008, §5.2): at a posture, the
//! flesh pulled into shape by grabs (several at once) is relaxed with the
//! held points fixed, and its shape becomes the target's rest offsets.
//!
//! The offsets are the pulled shape less the flesh settled at that posture
//! without the pulls, taken back into the rest frame through each vertex's
//! blend of its regions' rotations, plus the rest offset the targets
//! already give at that posture (so a new target keeps what is there and
//! adds the pull). Gravity's sag is in both shapes and so in neither
//! target: the target is a rest shape, and the flesh still sags from it.

use super::flesh::{FleshError, FleshSim};
use super::flesh_body::FleshBody;
use super::lattice::bone_transforms;
use crate::character::{
    Character, FemFlesh, MorphOffset, MorphTarget, PartStiffness, Posture, Skeleton, same_pose,
};
use glam::{DMat3, DVec3, Vec3};

/// A grab of the sculpting: the flesh point `at` (world, on the flesh
/// settled at the posture) held at `to`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pull {
    /// The grabbed point, world, m.
    pub at: Vec3,
    /// Where it is held, world, m.
    pub to: Vec3,
}

/// Why a target could not be sculpted.
#[derive(Debug, thiserror::Error)]
pub enum SculptError {
    /// The flesh could not be built or the result is not a valid target.
    #[error(transparent)]
    Flesh(#[from] FleshError),
    /// A pull's point is not in the flesh.
    #[error(
        "pull {index} at ({x:.3}, {y:.3}, {z:.3}) m does not grab the flesh: the point is outside it"
    )]
    Miss {
        /// Which pull (from 0).
        index: usize,
        /// The point, m.
        x: f32,
        /// The point, m.
        y: f32,
        /// The point, m.
        z: f32,
    },
    /// No pull was given.
    #[error(
        "a target needs at least one pull (or use its stiffness alone with no pull: give --stiffness)"
    )]
    NoPull,
}

/// Mass damping (1/s) of the relaxation: about critical for the flesh's
/// lowest modes, as the flesh's own settling.
const RELAX_DAMPING: f64 = 40.0;
/// Simulated length of the relaxation (s).
const RELAX_TIME: f64 = 1.5;
/// A vertex with less than this share of the median vertex's mass holds
/// almost no flesh (see `sculpt_target`).
const MATERIAL_SHARE: f64 = 0.05;
/// Offsets smaller than this (m) are not stored.
const SMALLEST_OFFSET: f64 = 1e-7;

/// The target `name` at `posture`: the flesh's shape under `pulls` (none:
/// the shape the targets give there now), with the stiffness factors
/// `stiffness` and `parts`.
pub fn sculpt_target(
    character: &Character,
    name: &str,
    posture: &Posture,
    pulls: &[Pull],
    stiffness: f64,
    parts: Vec<PartStiffness>,
) -> Result<MorphTarget, SculptError> {
    if pulls.is_empty() && (stiffness - 1.0).abs() < 1e-12 && parts.is_empty() {
        return Err(SculptError::NoPull);
    }
    // The flesh as it is at this posture, without the target being made
    // (a target at the same pose is replaced).
    let mut base = character.clone();
    if let Some(f) = base.flesh.fem_mut() {
        f.morph_targets.retain(|t| !same_pose(&t.posture, posture));
    }
    let settled = FleshSim::new(&base, posture, 0.0)?;
    let mut pulled = settled.clone();
    for (index, p) in pulls.iter().enumerate() {
        let id = pulled.grab(p.at).ok_or(SculptError::Miss {
            index,
            x: p.at.x,
            y: p.at.y,
            z: p.at.z,
        })?;
        pulled.move_grab(id, p.to);
    }
    if !pulls.is_empty() {
        relax(&mut pulled, &base, posture);
    }
    let FleshBody::Lattice(body) = &settled.body else {
        // Validation refuses targets with adaptive detail; there is
        // nothing to sculpt on.
        return Err(SculptError::Flesh(FleshError::NotFem));
    };
    let bones = bone_transforms(&base, &body.lattice.bones, posture);
    // Per vertex: the blend of its regions' rotations back to rest, and
    // the rest offset the existing targets give at this posture.
    let n = body.vertex_count();
    let mut back = vec![DMat3::ZERO; n];
    let mut existing = vec![DVec3::ZERO; n];
    for (ri, region) in body.regions.iter().enumerate() {
        let rot = region.bone.map_or(DMat3::IDENTITY, |b| bones[b].matrix3);
        for (l, &a) in region.vertices.iter().enumerate() {
            let w = region.weights[l];
            back[a] += rot.transpose() * w;
            if let Some(m) = &body.morph {
                existing[a] += m.offset[ri][l] / m.scale[ri] * w;
            }
        }
    }
    // Vertices of cells the flesh barely reaches carry almost no mass and
    // stiffness; the blend of regions leaves them loose (they drift far
    // under a grab, holding nothing that is drawn): they get no offset.
    let mut masses = body.global.lumped_mass.clone();
    masses.sort_by(f64::total_cmp);
    let substantial = MATERIAL_SHARE * masses[masses.len() / 2];
    let offsets = (0..n)
        .filter(|&a| body.lattice.bone_of_vertex[a].is_none())
        .filter(|&a| body.global.lumped_mass[a] >= substantial)
        .filter_map(|a| {
            let du = back[a] * (pulled.q()[a] - settled.q()[a]) + existing[a];
            (du.length() > SMALLEST_OFFSET).then(|| MorphOffset {
                at: body.lattice.rest[a].as_vec3(),
                offset: du.as_vec3(),
            })
        })
        .collect();
    Ok(MorphTarget {
        name: name.to_string(),
        posture: posture.clone(),
        offsets,
        stiffness,
        part_stiffness: parts,
    })
}

/// Relaxes the grabbed flesh at `posture` with heavy damping, so it comes
/// to rest in the held shape.
fn relax(flesh: &mut FleshSim, character: &Character, posture: &Posture) {
    let FleshBody::Lattice(body) = &mut flesh.body else {
        return;
    };
    let damping = body.settings.mass_damping;
    body.settings.mass_damping = damping.max(RELAX_DAMPING);
    let end = flesh.time() + RELAX_TIME;
    let h = flesh.time_step();
    flesh.advance_to(character, |_| posture.clone(), end - 0.5 * h);
    if let FleshBody::Lattice(body) = &mut flesh.body {
        body.settings.mass_damping = damping;
    }
}

/// The plain target added beside the first one (see [`with_target`]).
pub const REST_TARGET: &str = "rest";

/// What [`with_target`] did besides adding the target.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Added {
    /// Targets it replaced: the same name, or the same pose.
    pub replaced: Vec<String>,
    /// Whether it added [`REST_TARGET`], the plain flesh at rest, beside a
    /// first target away from rest: one target alone shapes the flesh in
    /// every pose, so it acts near its own pose only with another.
    pub rest: bool,
}

/// `flesh` with `target` kept: a target of the same name or at the same
/// pose is replaced, and a first target away from the rest posture gets
/// the plain flesh at rest beside it.
pub fn with_target(
    flesh: &FemFlesh,
    skeleton: &Skeleton,
    target: MorphTarget,
) -> (FemFlesh, Added) {
    let mut f = flesh.clone();
    let replaced: Vec<String> = f
        .morph_targets
        .iter()
        .filter(|t| t.name == target.name || same_pose(&t.posture, &target.posture))
        .map(|t| t.name.clone())
        .collect();
    f.morph_targets.retain(|t| !replaced.contains(&t.name));
    let rest = skeleton.rest_posture();
    let add_rest = f.morph_targets.is_empty()
        && !same_pose(&target.posture, &rest)
        && target.name != REST_TARGET;
    if add_rest {
        f.morph_targets.push(MorphTarget {
            name: REST_TARGET.to_string(),
            posture: rest,
            offsets: Vec::new(),
            stiffness: 1.0,
            part_stiffness: Vec::new(),
        });
    }
    f.morph_targets.push(target);
    (
        f,
        Added {
            replaced,
            rest: add_rest,
        },
    )
}

/// `flesh` without its target `name`; with it goes [`REST_TARGET`] when
/// that is all that would be left (the rest added beside a first target
/// shapes nothing alone).
pub fn without_target(flesh: &FemFlesh, name: &str) -> FemFlesh {
    let mut f = flesh.clone();
    f.morph_targets.retain(|t| t.name != name);
    if f.morph_targets.iter().all(|t| t.name == REST_TARGET) {
        f.morph_targets.clear();
    }
    f
}

/// A name for a new target not yet taken: "pose 1", "pose 2", …
pub fn next_name(flesh: &FemFlesh) -> String {
    (1..)
        .map(|k| format!("pose {k}"))
        .find(|n| flesh.morph_targets.iter().all(|t| t.name != *n))
        .expect("some name is free")
}
