//! Physical blendshapes on a character's embedded mesh (Ma et al. 2012) as
//! plain data: the targets sculpted or imported for it, what holds the
//! spring system, the spring constants. The base is the embedded mesh
//! itself; the weights are keyed with the key postures
//! ([`Posture::blend`](super::Posture::blend)). Solved by
//! `crate::blendshape`.

use glam::Vec3;
use serde::{Deserialize, Serialize};

use super::InvalidField;

/// One blendshape target: a name and a position per base vertex.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlendTarget {
    /// Shown on the panel and the timeline, and written to exports.
    pub name: String,
    /// The target's position of each base vertex, in the base's order.
    pub positions: Vec<Vec3>,
}

/// What holds the spring system in place (Ma et al. §3.4).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Boundary {
    /// A small rigid object inside the base joined to the mesh by springs:
    /// every surface vertex moves freely, the anchor follows the targets'
    /// interpolated rigid motion (slerped rotation, blended translation).
    #[default]
    Anchor,
    /// The vertices that do not move between the base and any target (within
    /// `tolerance` times the base's bounding-box diagonal) stay put.
    Static {
        /// Relative distance under which a vertex counts as not moving.
        tolerance: f32,
    },
    /// These vertices follow the linear blend of the targets (the paper
    /// finds it looks worse; a face mask's rim needs it).
    Pins {
        /// The pinned base vertices.
        vertices: Vec<u32>,
    },
}

/// Spring constants per class (§3.5): a spring's stiffness is its class's
/// constant over its blended rest length, so short and long springs of one
/// class stretch alike.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(default)]
pub struct SpringConstants {
    /// Mesh edges.
    pub structure: f64,
    /// Vertex to 2-ring.
    pub bending: f64,
    /// Inside the solid, and the anchor's attachment.
    pub internal: f64,
    /// The anchor's own springs, as a multiple of `structure` (hard).
    pub anchor_factor: f64,
}

impl Default for SpringConstants {
    fn default() -> Self {
        Self {
            structure: 1.0,
            bending: 1.0,
            internal: 1.0,
            anchor_factor: 1e4,
        }
    }
}

/// The blendshapes of an FEM character's embedded mesh: its targets, blended
/// by the weights each posture carries. The blend reshapes the mesh's rest
/// shape; the flesh then carries the reshaped mesh as it carries the base.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blendshapes {
    /// The targets, in weight order (w₁, w₂, …; the base takes the rest).
    pub targets: Vec<BlendTarget>,
    /// What holds the spring system.
    #[serde(default)]
    pub boundary: Boundary,
    /// Internal springs through the solid (closed meshes only).
    #[serde(default = "yes")]
    pub interior: bool,
    /// Spring constants per class.
    #[serde(default)]
    pub constants: SpringConstants,
    /// Blend the positions linearly (what other tools do) instead of
    /// solving the springs: the live toggle to compare the two.
    #[serde(default)]
    pub linear: bool,
}

fn yes() -> bool {
    true
}

/// How far the weights of a posture may sum past 1 (rounding of keyed
/// values) before they are refused.
pub const WEIGHT_SUM_SLACK: f32 = 1e-4;

impl Blendshapes {
    /// Checks what needs no topology: a target per name, one finite
    /// position per vertex of the `vertices`-vertex base. Field paths are
    /// relative to the blendshapes (`targets[1].positions[7]`); the spring
    /// system's own checks (degenerate edges, a closed mesh for interior
    /// springs) run when the blend is built.
    pub fn validate(&self, vertices: usize) -> Result<(), InvalidField> {
        for (k, t) in self.targets.iter().enumerate() {
            let f = |name: &str| format!("targets[{k}].{name}");
            if t.name.trim().is_empty() {
                return Err(InvalidField::new(f("name"), "must not be empty"));
            }
            if self.targets[..k].iter().any(|o| o.name == t.name) {
                return Err(InvalidField::new(
                    f("name"),
                    format!("two targets are named '{}'", t.name),
                ));
            }
            if t.positions.len() != vertices {
                return Err(InvalidField::new(
                    f("positions"),
                    format!(
                        "target '{}' has {} vertices, the embedded mesh {vertices}",
                        t.name,
                        t.positions.len()
                    ),
                ));
            }
            if let Some(v) = t.positions.iter().position(|p| !p.is_finite()) {
                return Err(InvalidField::new(
                    f(&format!("positions[{v}]")),
                    "must be finite",
                ));
            }
        }
        Ok(())
    }

    /// The target named `name`.
    pub fn target(&self, name: &str) -> Option<usize> {
        self.targets.iter().position(|t| t.name == name)
    }
}

/// Checks a posture's blend weights against `targets` targets: none (the
/// base alone) or one per target, each in [0, 1], summing to at most 1.
pub fn validate_weights(weights: &[f32], targets: usize) -> Result<(), InvalidField> {
    if weights.is_empty() {
        return Ok(());
    }
    if weights.len() != targets {
        return Err(InvalidField::new(
            "blend",
            format!(
                "has {} weights but the embedded mesh has {targets} blendshape targets",
                weights.len()
            ),
        ));
    }
    if let Some((k, w)) = weights
        .iter()
        .enumerate()
        .find(|(_, w)| !(w.is_finite() && (0.0..=1.0).contains(*w)))
    {
        return Err(InvalidField::new(
            format!("blend[{k}]"),
            format!("must lie in [0, 1], got {w}"),
        ));
    }
    let sum: f32 = weights.iter().sum();
    if sum > 1.0 + WEIGHT_SUM_SLACK {
        return Err(InvalidField::new(
            "blend",
            format!("the weights sum to {sum}: at most 1 (the base takes the rest)"),
        ));
    }
    Ok(())
}

/// The weights between `a` and `b` at `s` ∈ [0, 1], a missing weight (a
/// posture keyed before the targets existed) counting as 0; empty when both
/// are.
pub fn lerp_weights(a: &[f32], b: &[f32], s: f32) -> Vec<f32> {
    let at = |w: &[f32], k: usize| w.get(k).copied().unwrap_or(0.0);
    (0..a.len().max(b.len()))
        .map(|k| at(a, k) + (at(b, k) - at(a, k)) * s)
        .collect()
}

/// The weights on the simplex: each clamped to [0, 1] and, if they sum past
/// 1, scaled down to sum to 1, so a spline's overshoot between keys never
/// leaves the base a negative weight.
pub fn clamp_to_simplex(weights: &mut [f32]) {
    for w in weights.iter_mut() {
        *w = if w.is_finite() {
            w.clamp(0.0, 1.0)
        } else {
            0.0
        };
    }
    let sum: f32 = weights.iter().sum();
    if sum > 1.0 {
        weights.iter_mut().for_each(|w| *w /= sum);
    }
}

/// Sets weight `k` to `value` (clamped to [0, 1]), the others scaled down
/// if the sum would pass 1: the chosen target takes what it is given and
/// the rest give way, so the weights stay on the simplex.
pub fn set_weight(weights: &mut [f32], k: usize, value: f32) {
    let Some(w) = weights.get_mut(k) else {
        return;
    };
    *w = value.clamp(0.0, 1.0);
    let mine = *w;
    let others: f32 = weights
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != k)
        .map(|(_, x)| x)
        .sum();
    if mine + others > 1.0 && others > 0.0 {
        let scale = (1.0 - mine) / others;
        for (i, x) in weights.iter_mut().enumerate() {
            if i != k {
                *x *= scale;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes(names: &[&str], n: usize) -> Blendshapes {
        Blendshapes {
            targets: names
                .iter()
                .map(|name| BlendTarget {
                    name: name.to_string(),
                    positions: vec![Vec3::ZERO; n],
                })
                .collect(),
            boundary: Boundary::Anchor,
            interior: true,
            constants: SpringConstants::default(),
            linear: false,
        }
    }

    #[test]
    fn targets_are_checked_naming_the_field() {
        assert!(shapes(&["smile", "frown"], 4).validate(4).is_ok());
        let e = shapes(&["smile", "smile"], 4).validate(4).unwrap_err();
        assert_eq!(e.field, "targets[1].name");
        let e = shapes(&["smile"], 3).validate(4).unwrap_err();
        assert_eq!(e.field, "targets[0].positions");
        assert!(e.message.contains("3 vertices"), "{e}");
        let mut s = shapes(&["smile"], 4);
        s.targets[0].positions[2].y = f32::NAN;
        assert_eq!(s.validate(4).unwrap_err().field, "targets[0].positions[2]");
        assert_eq!(
            shapes(&[" "], 4).validate(4).unwrap_err().field,
            "targets[0].name"
        );
    }

    #[test]
    fn weights_are_on_the_simplex() {
        assert!(validate_weights(&[], 3).is_ok());
        assert!(validate_weights(&[0.2, 0.3, 0.5], 3).is_ok());
        assert_eq!(validate_weights(&[0.2], 3).unwrap_err().field, "blend");
        assert_eq!(
            validate_weights(&[0.2, -0.1, 0.0], 3).unwrap_err().field,
            "blend[1]"
        );
        assert_eq!(
            validate_weights(&[0.6, 0.6, 0.0], 3).unwrap_err().field,
            "blend"
        );
        let mut w = [0.8, 0.6, -0.2];
        clamp_to_simplex(&mut w);
        assert_eq!(w[2], 0.0);
        assert!((w[0] + w[1] - 1.0).abs() < 1e-6);
        assert!((w[0] / w[1] - 0.8 / 0.6).abs() < 1e-5, "{w:?}");
        let mut w = [0.2, f32::NAN];
        clamp_to_simplex(&mut w);
        assert_eq!(w, [0.2, 0.0]);
    }
}
