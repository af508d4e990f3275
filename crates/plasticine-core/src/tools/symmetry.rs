//! Symmetric modelling: every edit on one side of the character made again,
//! mirrored, on the other, and undone with it as one step.
//!
//! The mirror plane passes through the origin; by default its normal is +X,
//! the character's left (it faces +Z, Y up, the glTF convention), so joints
//! at x > 0 are `_l` and their images at x < 0 are `_r`.
//!
//! Counterparts are found by name first (`_l` ↔ `_r`, `_L` ↔ `_R`), then by
//! mirrored position in the working posture (within `tolerance`). A joint on
//! the plane is its own counterpart, and an edit whose mirror image is itself
//! (a centre-line joint, a stroke on the centre line) is not repeated.
//!
//! Frames: a mirrored joint frame is `W' = M·W·Mx` (M the reflection in the
//! plane, Mx the one in the local yz plane: both are reflections, so `W'` is
//! a rotation again). A muscle placed at `L` in `W` is placed at
//! `L' = W'⁻¹·M·W·L·Mx` in its mirrored joint, with its shape reflected in its
//! local x ([`mirror_shape`]), which puts it exactly at the mirror image in
//! the world for any plane. Muscle edits and band anchors are then mirrored in
//! local coordinates by Mx. Joint limits are mirrored as `Mx·R·Mx`, which
//! negates the y and z angles; that is exact when the joint frames are
//! mirror-consistent, as those made by symmetric [`Command::AddJoint`] with
//! the default X plane are (their rest rotations are the identity).
//!
//! Painted region weights ([`Command::PaintWeights`], Capell §4.5): a
//! stroke's centre is a rest-pose point and its bone a parent→child pair, so
//! its image is taken at rest: the centre reflected in the plane, the bone the
//! one whose child and parent are the counterparts of its own in the rest
//! posture ([`Symmetry::mirror_bone`]). A bone on the plane (the spine) is its
//! own counterpart: a stroke on it within `tolerance` of the plane is its own
//! image and is painted once; off the plane its image is painted too, and when
//! the two brushes overlap so that each adds to the other's centre the pair's
//! amounts are both scaled by `1/(1 + s(2d/r))` (s the stroke falloff, d the
//! centre's distance to the plane, r the radius), so the weight change at
//! the brush centre is the one asked for rather than up to twice it, and the
//! pair tends continuously to the single stroke as d → 0. A bone without a
//! counterpart is painted on its side only, and [`Symmetry::unmirrored`]
//! says so.

use super::command::{Command, NewMuscle, joint_frames};
use crate::character::{Band, Character, Dof, Posture, Skin, WeightStroke};
use crate::fem::falloff;
use crate::shape::MuscleShape;
use glam::{Affine3A, Mat3, Quat, Vec3};
use serde::{Deserialize, Serialize};

/// A mirror plane through the origin.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Symmetry {
    /// Plane normal (need not be unit length); +X by default.
    pub normal: Vec3,
    /// Metres: how far from the plane counts as on it, and how close a
    /// joint must be to a mirrored position to be its counterpart.
    pub tolerance: f32,
}

impl Default for Symmetry {
    fn default() -> Self {
        Self {
            normal: Vec3::X,
            tolerance: 1e-3,
        }
    }
}

/// The shape reflected in its local x (the yz plane): the primitive is
/// symmetric, taper is even in x, twist and bend change sign.
pub fn mirror_shape(shape: &MuscleShape) -> MuscleShape {
    let mut s = shape.clone();
    s.deformation.twist = -s.deformation.twist;
    s.deformation.bend = -s.deformation.bend;
    s
}

/// `_l` ↔ `_r` (and `_L` ↔ `_R`); `None` for a name without a side.
pub fn mirror_name(name: &str) -> Option<String> {
    for (a, b) in [("_l", "_r"), ("_r", "_l"), ("_L", "_R"), ("_R", "_L")] {
        if let Some(stem) = name.strip_suffix(a) {
            return Some(format!("{stem}{b}"));
        }
    }
    None
}

/// Limits of the mirrored joint: `Mx·Rx(a)Ry(b)Rz(c)·Mx = Rx(a)Ry(−b)Rz(−c)`.
fn mirror_dofs(dofs: &[Dof; 3]) -> [Dof; 3] {
    let flip = |d: Dof| Dof {
        free: d.free,
        min: -d.max,
        max: -d.min,
    };
    [dofs[0], flip(dofs[1]), flip(dofs[2])]
}

const MX: Mat3 = Mat3::from_cols(Vec3::NEG_X, Vec3::Y, Vec3::Z);

fn nearest_point(skin: &Skin, p: Vec3) -> usize {
    skin.points
        .position
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.distance_squared(p).total_cmp(&b.1.distance_squared(p)))
        .map_or(0, |(k, _)| k)
}

impl Symmetry {
    /// The X plane (x = 0), left at +x.
    pub fn x() -> Self {
        Self::default()
    }

    fn n(&self) -> Vec3 {
        self.normal.normalize_or(Vec3::X)
    }

    /// The point `p` reflected in the mirror plane.
    pub fn reflect(&self, p: Vec3) -> Vec3 {
        let n = self.n();
        p - 2.0 * p.dot(n) * n
    }

    fn reflection(&self) -> Mat3 {
        let n = self.n();
        Mat3::IDENTITY - 2.0 * Mat3::from_cols(n * n.x, n * n.y, n * n.z)
    }

    /// `_l` on the positive side of the plane, `_r` on the other.
    pub fn side_suffix(&self, p: Vec3) -> &'static str {
        if p.dot(self.n()) > 0.0 { "_l" } else { "_r" }
    }

    fn on_plane(&self, p: Vec3) -> bool {
        p.dot(self.n()).abs() <= self.tolerance
    }

    /// A muscle placed at `m` in joint frame `w`, mirrored into the frame
    /// `w2` of the counterpart joint: `L' = W'⁻¹·M·W·L·Mx` (module docs).
    fn mirror_placement(&self, w: Affine3A, w2: Affine3A, m: &NewMuscle) -> NewMuscle {
        let l = Affine3A::from_rotation_translation(m.rotation, m.offset);
        let l2 =
            w2.inverse() * Affine3A::from_mat3(self.reflection()) * w * l * Affine3A::from_mat3(MX);
        NewMuscle {
            shape: mirror_shape(&m.shape),
            offset: l2.translation.into(),
            rotation: Quat::from_mat3a(&l2.matrix3).normalize(),
        }
    }

    /// The joint's counterpart: by name, else by mirrored position in
    /// `posture`; the joint itself if it lies on the plane; `None` if it has
    /// no counterpart.
    pub fn mirror_joint(&self, c: &Character, posture: &Posture, j: usize) -> Option<usize> {
        let joint = c.skeleton.joints.get(j)?;
        if let Some(k) = mirror_name(&joint.name).and_then(|n| c.skeleton.find(&n)) {
            return Some(k);
        }
        let world = joint_frames(c, posture);
        let p: Vec3 = world[j].translation.into();
        if self.on_plane(p) {
            return Some(j);
        }
        let image = self.reflect(p);
        world
            .iter()
            .enumerate()
            .filter(|&(k, _)| k != j)
            .map(|(k, w)| (k, Vec3::from(w.translation).distance(image)))
            .filter(|&(_, d)| d <= self.tolerance)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(k, _)| k)
    }

    /// The counterpart of bone `b` (an index into the skeleton's bones: its
    /// parent→child pairs in joint order, as [`WeightStroke::bone`] counts
    /// them), found at rest: the bone whose child and parent are the
    /// counterparts ([`mirror_joint`](Self::mirror_joint)) of `b`'s. A bone
    /// on the plane is its own; `None` when it has none.
    pub fn mirror_bone(&self, c: &Character, b: usize) -> Option<usize> {
        let joints = &c.skeleton.joints;
        let children: Vec<usize> = (0..joints.len())
            .filter(|&k| joints[k].parent.is_some())
            .collect();
        let child = *children.get(b)?;
        let parent = joints[child].parent?;
        let rest = c.skeleton.rest_posture();
        let child2 = self.mirror_joint(c, &rest, child)?;
        let parent2 = self.mirror_joint(c, &rest, parent)?;
        if joints[child2].parent != Some(parent2) {
            return None;
        }
        children.iter().position(|&k| k == child2)
    }

    /// Why `cmd`, an edit with a side, gets no mirror image under this
    /// symmetry, for front ends to tell the user (the edit itself still
    /// goes through, on its side only); `None` when it is mirrored, is its
    /// own image or has no side. It explains weight strokes on a bone
    /// without a counterpart.
    pub fn unmirrored(&self, cmd: &Command, c: &Character) -> Option<String> {
        let Command::PaintWeights { stroke } = cmd else {
            return None;
        };
        let joints = &c.skeleton.joints;
        let child = (0..joints.len())
            .filter(|&k| joints[k].parent.is_some())
            .nth(stroke.bone)?;
        let parent = joints[child].parent?;
        if self.mirror_bone(c, stroke.bone).is_some() {
            return None;
        }
        Some(format!(
            "symmetry: bone {} ('{}' → '{}') has no mirror counterpart (no _l/_r name \
             and no joint at the mirror image at rest); its weights were painted on \
             this side only",
            stroke.bone, joints[parent].name, joints[child].name
        ))
    }

    /// The muscle in the same place (by order) on the mirrored joint.
    pub fn mirror_muscle(&self, c: &Character, posture: &Posture, q: usize) -> Option<usize> {
        let j = c.muscles.get(q)?.joint;
        let j2 = self.mirror_joint(c, posture, j)?;
        if j2 == j {
            return Some(q);
        }
        let rank = c.muscles[..q].iter().filter(|m| m.joint == j).count();
        c.muscles
            .iter()
            .enumerate()
            .filter(|(_, m)| m.joint == j2)
            .nth(rank)
            .map(|(k, _)| k)
    }

    /// The skin hanging between the mirrored joints (itself for a centre skin).
    pub fn mirror_skin(&self, c: &Character, posture: &Posture, s: usize) -> Option<usize> {
        let skin = c.skins.get(s)?;
        let b = self.mirror_joint(c, posture, skin.bottom_joint)?;
        let t = self.mirror_joint(c, posture, skin.top_joint)?;
        c.skins
            .iter()
            .position(|k| k.bottom_joint == b && k.top_joint == t)
    }

    /// Point of skin `s2` nearest to the mirror image of point `k` of skin `s`.
    fn mirror_point(&self, c: &Character, s: usize, k: usize, s2: usize) -> Option<usize> {
        let p = *c.skins.get(s)?.points.position.get(k)?;
        Some(nearest_point(&c.skins[s2], self.reflect(p)))
    }

    /// An edit of `muscle` (its shape, or its paint) on the mirrored
    /// muscle: None where it has no counterpart but itself.
    fn mirror_muscle_edit(
        &self,
        cmd: &Command,
        c: &Character,
        posture: &Posture,
        muscle: usize,
    ) -> Option<Command> {
        let q = self
            .mirror_muscle(c, posture, muscle)
            .filter(|&q| q != muscle)?;
        let mut mirrored = cmd.clone();
        match &mut mirrored {
            Command::EditMuscle { muscle, shape } => {
                *muscle = q;
                *shape = mirror_shape(shape);
            }
            Command::PaintMuscle { muscle, .. } => *muscle = q,
            _ => return None,
        }
        Some(mirrored)
    }

    /// The mirror image of `cmd` on the current state, or `None` when it is
    /// its own image (a centre-line edit), has no counterpart, or is a
    /// posture (posing is not mirrored: it is rarely symmetric).
    pub fn mirror(&self, cmd: &Command, c: &Character, posture: &Posture) -> Option<Command> {
        let other_joint = |j: usize| {
            self.mirror_joint(c, posture, j)
                .filter(|&k| k != j && posture.angles.len() == c.skeleton.joints.len())
        };
        match cmd {
            Command::AddJoint {
                parent,
                name,
                position_world,
                muscle,
            } => self.mirror_add_joint(c, posture, *parent, name, *position_world, muscle.as_ref()),
            Command::AddMuscle { joint, muscle } => {
                let j2 = other_joint(*joint)?;
                let world = joint_frames(c, posture);
                Some(Command::AddMuscle {
                    joint: j2,
                    muscle: self.mirror_placement(world[*joint], world[j2], muscle),
                })
            }
            Command::LockPart { joint, locked } => Some(Command::LockPart {
                joint: other_joint(*joint)?,
                locked: *locked,
            }),
            Command::EditMuscle { muscle, .. } | Command::PaintMuscle { muscle, .. } => {
                self.mirror_muscle_edit(cmd, c, posture, *muscle)
            }
            Command::MoveJoint {
                joint,
                position_world,
                keep_children,
            } => Some(Command::MoveJoint {
                joint: other_joint(*joint)?,
                position_world: self.reflect(*position_world),
                keep_children: *keep_children,
            }),
            Command::DeleteJoint { joint } => Some(Command::DeleteJoint {
                joint: other_joint(*joint)?,
            }),
            Command::SetDofs { joint, dofs } => Some(Command::SetDofs {
                joint: other_joint(*joint)?,
                dofs: mirror_dofs(dofs),
            }),
            Command::SetLocked { joint, locked } => Some(Command::SetLocked {
                joint: other_joint(*joint)?,
                locked: *locked,
            }),
            Command::AddSkin {
                name,
                bottom,
                top,
                m,
                n,
                material,
            } => {
                let (b, t, name) = self.mirror_skin_ends(c, posture, name, *bottom, *top)?;
                Some(Command::AddSkin {
                    name,
                    bottom: b,
                    top: t,
                    m: *m,
                    n: *n,
                    material: *material,
                })
            }
            Command::DeleteSkin { skin } => Some(Command::DeleteSkin {
                skin: self.mirror_skin(c, posture, *skin).filter(|s| s != skin)?,
            }),
            Command::GlobalAttach { skin, band } => Some(Command::GlobalAttach {
                skin: self.mirror_skin(c, posture, *skin).filter(|s| s != skin)?,
                band: *band,
            }),
            Command::SetAttachment { skin, point, band } => {
                let (s2, p2) = self.mirror_skin_point(c, posture, *skin, *point)?;
                let band = match band {
                    None => None,
                    Some(b) => Some(self.mirror_band(c, posture, b)?),
                };
                Some(Command::SetAttachment {
                    skin: s2,
                    point: p2,
                    band,
                })
            }
            // A brush stroke: the same stroke at the mirrored skin point.
            Command::FatStroke {
                skin, center_point, ..
            }
            | Command::PaintStroke {
                skin, center_point, ..
            } => {
                let (s2, p2) = self.mirror_skin_point(c, posture, *skin, *center_point)?;
                let mut mirrored = cmd.clone();
                if let Command::FatStroke {
                    skin, center_point, ..
                }
                | Command::PaintStroke {
                    skin, center_point, ..
                } = &mut mirrored
                {
                    (*skin, *center_point) = (s2, p2);
                }
                Some(mirrored)
            }
            Command::SetSkinMaterial {
                skin,
                region,
                stretch,
                damping,
                mass,
                bend,
                band_stiffness,
            } => {
                let s2 = self.mirror_skin(c, posture, *skin)?;
                let region2 = self.mirror_region(c, *skin, s2, region.as_deref())?;
                Some(Command::SetSkinMaterial {
                    skin: s2,
                    region: region2,
                    stretch: *stretch,
                    damping: *damping,
                    mass: *mass,
                    bend: *bend,
                    band_stiffness: *band_stiffness,
                })
            }
            Command::PaintWeights { stroke } => Some(Command::PaintWeights {
                stroke: self.mirror_stroke(c, stroke)?,
            }),
            // A sculpt is mirrored on the same target, where the mirror
            // image of its centre lies on the other side of the plane.
            Command::SculptBlendTarget {
                target,
                centre,
                radius,
                brush,
            } => {
                let image = *centre * Vec3::new(-1.0, 1.0, 1.0);
                (image.distance(*centre) > *radius).then(|| Command::SculptBlendTarget {
                    target: *target,
                    centre: image,
                    radius: *radius,
                    brush: brush.mirrored(),
                })
            }
            // No mirror: a posture is the whole body's; the environment and
            // the flesh backend have no side; key postures are whole-body
            // and on the timeline (a key stores the posture as posed,
            // already mirrored by the IK).
            Command::SetPosture { .. }
            | Command::SetEnvironment { .. }
            | Command::SetFlesh { .. }
            | Command::SetKey { .. }
            | Command::MoveKey { .. }
            | Command::DeleteKey { .. }
            | Command::SetKeyTcb { .. }
            | Command::AddBlendTarget { .. } => None,
        }
    }

    /// The image of a new joint at `position_world` under `parent`, its
    /// muscle placed at the mirror image and its name given a side; `None`
    /// for a joint on the plane, a parent out of range or one without a
    /// counterpart.
    fn mirror_add_joint(
        &self,
        c: &Character,
        posture: &Posture,
        parent: usize,
        name: &str,
        position_world: Vec3,
        muscle: Option<&NewMuscle>,
    ) -> Option<Command> {
        if self.on_plane(position_world) || parent >= c.skeleton.joints.len() {
            return None;
        }
        let parent2 = self.mirror_joint(c, posture, parent)?;
        let image = self.reflect(position_world);
        let name2 =
            mirror_name(name).unwrap_or_else(|| format!("{name}{}", self.side_suffix(image)));
        let muscle = muscle.map(|m| {
            let world = joint_frames(c, posture);
            let frame = |j: usize, at: Vec3| Affine3A {
                matrix3: world[j].matrix3,
                translation: at.into(),
            };
            self.mirror_placement(frame(parent, position_world), frame(parent2, image), m)
        });
        Some(Command::AddJoint {
            parent: parent2,
            name: name2,
            position_world: image,
            muscle,
        })
    }

    /// The bottom and top joints of the image of the skin `name` hung
    /// between `bottom` and `top`, and the image's name (given a side);
    /// `None` without counterparts or for a centre skin (its own image).
    fn mirror_skin_ends(
        &self,
        c: &Character,
        posture: &Posture,
        name: &str,
        bottom: usize,
        top: usize,
    ) -> Option<(usize, usize, String)> {
        let b = self.mirror_joint(c, posture, bottom)?;
        let t = self.mirror_joint(c, posture, top)?;
        if (b, t) == (bottom, top) {
            return None;
        }
        let world = joint_frames(c, posture);
        let mid = 0.5 * Vec3::from(world[b].translation + world[t].translation);
        let name2 = mirror_name(name).unwrap_or_else(|| format!("{name}{}", self.side_suffix(mid)));
        Some((b, t, name2))
    }

    /// The image (skin, point) of point `point` of skin `skin`; `None` when
    /// it has none or is the point itself.
    fn mirror_skin_point(
        &self,
        c: &Character,
        posture: &Posture,
        skin: usize,
        point: usize,
    ) -> Option<(usize, usize)> {
        let s2 = self.mirror_skin(c, posture, skin)?;
        let p2 = self.mirror_point(c, skin, point, s2)?;
        if (s2, p2) == (skin, point) {
            return None;
        }
        Some((s2, p2))
    }

    /// The image of an attachment's band: on the counterpart muscle, its
    /// anchor mirrored in local x; `None` when the muscle has no counterpart.
    fn mirror_band(&self, c: &Character, posture: &Posture, band: &Band) -> Option<Band> {
        let mut b2 = *band;
        b2.muscle = self.mirror_muscle(c, posture, band.muscle)?;
        b2.anchor = MX * band.anchor;
        Some(b2)
    }

    /// The image on skin `s2` of a material edit's `region` of skin `skin`
    /// (`Some(None)`: the whole skin); `None` when the edit is its own image
    /// (the same skin and points) or a point has no image.
    fn mirror_region(
        &self,
        c: &Character,
        skin: usize,
        s2: usize,
        region: Option<&[usize]>,
    ) -> Option<Option<Vec<usize>>> {
        match region {
            None if s2 == skin => None,
            None => Some(None),
            Some(r) => {
                let mut r2 = r
                    .iter()
                    .map(|&k| self.mirror_point(c, skin, k, s2))
                    .collect::<Option<Vec<usize>>>()?;
                if s2 == skin {
                    let mut a = r.to_vec();
                    a.sort_unstable();
                    a.dedup();
                    r2.sort_unstable();
                    r2.dedup();
                    if a == r2 {
                        return None;
                    }
                }
                Some(Some(r2))
            }
        }
    }

    /// The image of a weight stroke: on the counterpart bone, its centre
    /// reflected; `None` for a bone without a counterpart, or for a stroke on
    /// the plane on a bone that is its own counterpart.
    fn mirror_stroke(&self, c: &Character, stroke: &WeightStroke) -> Option<WeightStroke> {
        let bone = self.mirror_bone(c, stroke.bone)?;
        if bone == stroke.bone && self.on_plane(stroke.centre) {
            return None;
        }
        Some(WeightStroke {
            bone,
            centre: self.reflect(stroke.centre),
            ..stroke.clone()
        })
    }

    /// The command to apply and its mirror image. A new joint or skin that
    /// has a mirror image but no side in its name gets one (`_l` on the
    /// positive side of the plane, `_r` on the other), so both halves are
    /// named by the `_l`/`_r` convention that later edits use to pair them.
    /// A weight stroke painted with its image on the same bone has both
    /// amounts scaled where the brushes overlap (module docs).
    pub fn pair(
        &self,
        cmd: &Command,
        c: &Character,
        posture: &Posture,
    ) -> (Command, Option<Command>) {
        let Some(image) = self.mirror(cmd, c, posture) else {
            return (cmd.clone(), None);
        };
        let mut primary = cmd.clone();
        match (&mut primary, &image) {
            (
                Command::AddJoint {
                    name,
                    position_world,
                    ..
                },
                _,
            ) if mirror_name(name).is_none() => {
                name.push_str(self.side_suffix(*position_world));
            }
            (
                Command::AddSkin { name, .. },
                Command::AddSkin {
                    name: image_name, ..
                },
            ) if mirror_name(name).is_none() => {
                let suffix = if image_name.ends_with("_l") {
                    "_r"
                } else {
                    "_l"
                };
                name.push_str(suffix);
            }
            _ => {}
        }
        let mut image = image;
        if let (Command::PaintWeights { stroke: a }, Command::PaintWeights { stroke: b }) =
            (&mut primary, &mut image)
            && a.bone == b.bone
        {
            // One bone painted twice: keep the change at the brush centre
            // the one asked for where the brushes overlap (module docs).
            let d = a.centre.dot(self.n()).abs() as f64;
            let k = 1.0 / (1.0 + falloff(2.0 * d / a.radius as f64));
            a.amount = (a.amount as f64 * k) as f32;
            b.amount = a.amount;
        }
        (primary, Some(image))
    }
}
