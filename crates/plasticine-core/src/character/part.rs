//! A part of the flesh (the cells nearest a joint's bones) with its own
//! stiffness: shared by the FEM flesh's materials and its morph targets.

use serde::{Deserialize, Serialize};

/// A part of the flesh with its own stiffness: every lattice cell whose
/// centre (at rest) is nearest a bone carried by the joint `joint` (the
/// joint's part: the bone from it to a child, where its muscles ride) has
/// Young's modulus `young × scale`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartStiffness {
    /// The joint's name.
    pub joint: String,
    /// Factor on the flesh's Young's modulus for this part, within `PART_STIFFNESS_RANGE`.
    pub scale: f64,
}

/// The range of a part's stiffness scale.
pub const PART_STIFFNESS_RANGE: std::ops::RangeInclusive<f64> = 1e-3..=1e3;

/// A part of the flesh with its own Coulomb friction (Galoppo 3.20, μ per
/// flesh part): where the flesh over the muscles of joint `joint` touches
/// an obstacle, the contact's μ mixes the part's with the obstacle's
/// ([`crate::contact::mix_friction`]). A slippery belly, grippy feet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartFriction {
    /// The joint's name.
    pub joint: String,
    /// The part's friction coefficient, within `PART_FRICTION_RANGE`.
    pub friction: f64,
}

/// The range of a part's friction coefficient.
pub const PART_FRICTION_RANGE: std::ops::RangeInclusive<f64> = 0.0..=10.0;
