//! [`Inverse`]: what an applied command keeps to be taken back.

use crate::character::{Band, Dof, Environment, Flesh, Joint, KeyPosture, Muscle, Posture, Skin};
use crate::shape::MuscleShape;
use glam::Vec3;

/// What [`revert`](super::revert) needs to take an applied command back exactly.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Inverse {
    /// Pop the last joint (and its muscle when `muscle`), and the last angle
    /// of the working posture and of every key posture. O(1).
    AddJoint { muscle: bool },
    /// Pop the last muscle. O(1).
    AddMuscle,
    /// The old lock flag. O(1).
    Lock { joint: usize, locked: bool },
    /// The replaced shape. O(1).
    EditMuscle { muscle: usize, shape: MuscleShape },
    /// Old offsets of the joint and of the children that were corrected.
    /// O(children).
    Offsets(Vec<(usize, Vec3)>),
    /// The removed joints and muscles at their old indices (ascending), and
    /// the removed angles of the working posture and each key posture.
    /// O(subtree).
    DeleteJoint {
        joints: Vec<(usize, Joint)>,
        muscles: Vec<(usize, Muscle)>,
        angles: Vec<Vec3>,
        key_angles: Vec<Vec<Vec3>>,
    },
    /// The old DOFs. O(1).
    Dofs { joint: usize, dofs: [Dof; 3] },
    /// The old working posture. O(joints).
    Posture(Posture),
    /// Pop the last skin. O(1).
    AddSkin,
    /// The removed skin. O(points).
    DeleteSkin { skin: usize, removed: Box<Skin> },
    /// The old bands of the whole skin. O(points), about 28 bytes each.
    Bands {
        skin: usize,
        bands: Vec<Option<Band>>,
    },
    /// One old band. O(1).
    Band {
        skin: usize,
        point: usize,
        band: Option<Band>,
    },
    /// Old fat of the points the stroke changed. O(footprint), 8 bytes each.
    Fat { skin: usize, old: Vec<(u32, f32)> },
    /// Old colours of the points the stroke changed (16 bytes each), or,
    /// after the first stroke on an unpainted skin, that it was unpainted.
    Color {
        skin: usize,
        old: Vec<(u32, [f32; 3])>,
        unpainted: bool,
    },
    /// The muscle's old colour (None: unpainted). O(1).
    MuscleColor {
        muscle: usize,
        old: Option<[f32; 3]>,
    },
    /// Old values of the changed fields at the region's points, in region
    /// order. O(region × fields).
    Material {
        skin: usize,
        points: Vec<usize>,
        stretch: Option<Vec<[f32; 3]>>,
        damping: Option<Vec<f32>>,
        mass: Option<Vec<f32>>,
        bend: Option<Vec<f32>>,
        /// Old `k_s` of the region's bands (`None` for unattached points).
        band_stiffness: Option<Vec<Option<f32>>>,
    },
    /// The old environment. O(1).
    Environment(Environment),
    /// The old flesh. O(strokes + embedded mesh).
    Flesh(Box<Flesh>),
    /// Pop the last weight stroke. O(1).
    WeightStroke,
    /// Pop the last blendshape target (and the blendshapes, when the
    /// command `created` them), and the postures' weight for it. O(keys).
    AddBlendTarget { created: bool },
    /// Old positions of the target's vertices the sculpt moved. O(footprint),
    /// 16 bytes each.
    BlendTarget {
        target: usize,
        old: Vec<(u32, Vec3)>,
    },
    /// Key postures: remove the key at `remove` (the one the command put
    /// there), then put `insert` back at its old index. O(keys).
    Keys {
        remove: Option<usize>,
        insert: Option<(usize, KeyPosture)>,
    },
}

impl Inverse {
    /// Bytes this inverse keeps (its own size and what it points to): what
    /// the undo history's memory budget counts.
    pub(crate) fn bytes(&self) -> usize {
        use std::mem::{size_of, size_of_val};
        let heap = match self {
            Inverse::Offsets(v) => size_of_val(&v[..]),
            Inverse::DeleteJoint {
                joints,
                muscles,
                angles,
                key_angles,
            } => {
                size_of_val(&joints[..])
                    + size_of_val(&muscles[..])
                    + size_of_val(&angles[..])
                    + key_angles
                        .iter()
                        .map(|a| size_of_val(&a[..]))
                        .sum::<usize>()
            }
            Inverse::Posture(p) => size_of_val(&p.angles[..]),
            Inverse::DeleteSkin { removed, .. } => size_of::<Skin>() + removed.points.heap_bytes(),
            Inverse::Bands { bands, .. } => size_of_val(&bands[..]),
            Inverse::Fat { old, .. } => size_of_val(&old[..]),
            Inverse::BlendTarget { old, .. } => size_of_val(&old[..]),
            Inverse::Color { old, .. } => size_of_val(&old[..]),
            Inverse::Material {
                points,
                stretch,
                damping,
                mass,
                bend,
                band_stiffness,
                ..
            } => {
                size_of_val(&points[..])
                    + stretch.as_ref().map_or(0, |v| size_of_val(&v[..]))
                    + damping.as_ref().map_or(0, |v| size_of_val(&v[..]))
                    + mass.as_ref().map_or(0, |v| size_of_val(&v[..]))
                    + bend.as_ref().map_or(0, |v| size_of_val(&v[..]))
                    + band_stiffness.as_ref().map_or(0, |v| size_of_val(&v[..]))
            }
            // Rare and small beside a skin; its text is a fair measure.
            Inverse::Flesh(f) => ron::to_string(f.as_ref()).map_or(0, |t| t.len()),
            Inverse::Keys {
                insert: Some((_, key)),
                ..
            } => size_of_val(&key.posture.angles[..]),
            _ => 0,
        };
        size_of::<Self>() + heap
    }
}
