//! Dynamic morph targets of FEM flesh (Galoppo 2008, ch. 5): at a few
//! postures the artist gives the flesh a sculpted rest shape and a
//! stiffness; between and beyond them both are interpolated in pose space
//! (`crate::fem::morph`). Plain data.

use glam::Vec3;
use serde::{Deserialize, Serialize};

use super::part::{PART_STIFFNESS_RANGE, PartStiffness};
use super::{InvalidField, Posture, Skeleton};

/// One dynamic morph target `{E_i, s_i}`: at `posture` the flesh rests in its
/// sculpted shape and is `stiffness` (times a part's factor) as stiff.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MorphTarget {
    /// The artist's name for it ("tucked", "biceps flexed").
    pub name: String,
    /// The skeleton's posture the target belongs to (root translation is
    /// not part of the pose: only joint rotations are).
    pub posture: Posture,
    /// The sculpted shape: displacements of the flesh's rest shape at
    /// sample points, both in rest-world coordinates (the lattice vertices'
    /// rest positions when authored). The lattice's offsets are fitted to
    /// them by least squares, so a rebuilt lattice keeps the target.
    pub offsets: Vec<MorphOffset>,
    /// Factor on the flesh's stiffness at this posture, in
    /// [`PART_STIFFNESS_RANGE`].
    #[serde(default = "one")]
    pub stiffness: f64,
    /// Parts (per joint) with their own factor at this posture, on top of
    /// `stiffness`; needs blended local linearization (`blend_width`).
    #[serde(default)]
    pub part_stiffness: Vec<PartStiffness>,
}

fn one() -> f64 {
    1.0
}

/// A displacement `offset` of the rest flesh at the rest point `at`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MorphOffset {
    /// Rest-world point, m.
    pub at: Vec3,
    /// Its displacement in the target's rest shape, m.
    pub offset: Vec3,
}

impl MorphTarget {
    /// The stiffness factor of the part of joint `name` at this target.
    pub fn part_scale(&self, name: &str) -> f64 {
        self.stiffness
            * self
                .part_stiffness
                .iter()
                .find(|p| p.joint == name)
                .map_or(1.0, |p| p.scale)
    }
}

/// Two postures are the same pose when no joint's angles (the root's
/// translation aside) differ by more than this, rad.
pub const SAME_POSE: f32 = 1e-6;

/// Whether `a` and `b` are the same pose (see [`SAME_POSE`]).
pub fn same_pose(a: &Posture, b: &Posture) -> bool {
    a.angles.len() == b.angles.len()
        && a.angles
            .iter()
            .zip(&b.angles)
            .all(|(x, y)| (*x - *y).abs().max_element() <= SAME_POSE)
}

/// Checks the targets against the skeleton, naming fields under
/// `morph_targets[i]`: postures with one finite angle triple per joint,
/// finite offsets, stiffness factors in range and parts that exist, and no
/// two targets at one pose with different shapes or stiffness. `global`
/// says the flesh runs one global linear model, which has no parts.
pub fn validate_targets(
    targets: &[MorphTarget],
    skeleton: &Skeleton,
    global: bool,
) -> Result<(), InvalidField> {
    for (k, t) in targets.iter().enumerate() {
        let field = |f: &str| format!("morph_targets[{k}].{f}");
        t.posture
            .validate(skeleton.joints.len())
            .map_err(|e| InvalidField::new(field(&format!("posture.{}", e.field)), e.message))?;
        if let Some(j) = t
            .offsets
            .iter()
            .position(|o| !(o.at.is_finite() && o.offset.is_finite()))
        {
            return Err(InvalidField::new(
                field(&format!("offsets[{j}]")),
                "must be finite",
            ));
        }
        if !(t.stiffness.is_finite() && PART_STIFFNESS_RANGE.contains(&t.stiffness)) {
            return Err(InvalidField::new(
                field("stiffness"),
                format!("must be in 0.001..=1000, got {}", t.stiffness),
            ));
        }
        for (p, part) in t.part_stiffness.iter().enumerate() {
            let pf = |f: &str| field(&format!("part_stiffness[{p}].{f}"));
            if global {
                return Err(InvalidField::new(
                    pf("joint"),
                    "parts need blended local linearization (set the flesh's blend_width)",
                ));
            }
            if skeleton.find(&part.joint).is_none() {
                return Err(InvalidField::new(
                    pf("joint"),
                    format!("the skeleton has no joint '{}'", part.joint),
                ));
            }
            if !(part.scale.is_finite() && PART_STIFFNESS_RANGE.contains(&part.scale)) {
                return Err(InvalidField::new(
                    pf("scale"),
                    format!("must be in 0.001..=1000, got {}", part.scale),
                ));
            }
        }
        if let Some(j) = targets[..k].iter().position(|o| {
            same_pose(&o.posture, &t.posture)
                && (o.offsets != t.offsets
                    || o.stiffness != t.stiffness
                    || o.part_stiffness != t.part_stiffness)
        }) {
            return Err(InvalidField::new(
                field("posture"),
                format!(
                    "'{}' and '{}' (morph_targets[{j}]) are at the same pose with different \
                     shapes or stiffness",
                    t.name, targets[j].name
                ),
            ));
        }
    }
    Ok(())
}
