//! Applying a [`Command`] to the character, checked completely first, and
//! taking it back: [`apply`] returns the inverse data (only what the command
//! touched) that [`revert`] restores bit for bit.

use super::command::{
    Command, EditError, NewMuscle, check_dofs, check_joint, check_muscle, check_new_muscle,
    check_point, check_skin, check_stroke_bones, check_unlocked, invalid, refused, subtree,
};
use crate::character::{Band, BandDefaults, Character, Dof, Flesh, Joint, Muscle, Posture};
use crate::kinematics::forward_kinematics;
use crate::shape::MuscleShape;
use crate::skin::{global_attach, wrap_skin};
use blend::{add_blend_target, remove_blend_target, sculpt_blend_target};
use glam::{Quat, Vec3};
pub(crate) use inverse::Inverse;
use keys::{delete_key, move_key, set_key, set_key_tcb};
use strokes::{fat_stroke, paint_muscle, paint_stroke, paint_weights};

mod blend;
mod inverse;
mod keys;
mod strokes;

/// Rewrites every joint and muscle index stored in the character.
fn renumber(c: &mut Character, joint: impl Fn(usize) -> usize, muscle: impl Fn(usize) -> usize) {
    for j in &mut c.skeleton.joints {
        j.parent = j.parent.map(&joint);
    }
    for m in &mut c.muscles {
        m.joint = joint(m.joint);
        for d in &mut m.drivers {
            d.joint = joint(d.joint);
        }
    }
    for s in &mut c.skins {
        s.bottom_joint = joint(s.bottom_joint);
        s.top_joint = joint(s.top_joint);
        for q in &mut s.muscles {
            *q = muscle(*q);
        }
        for b in s.points.band.iter_mut().flatten() {
            b.muscle = muscle(b.muscle);
        }
    }
}

/// Applies `cmd`, returning what undoes it. On error nothing has changed.
pub(crate) fn apply(
    c: &mut Character,
    posture: &mut Posture,
    cmd: &Command,
) -> Result<Inverse, EditError> {
    let nj = c.skeleton.joints.len();
    if posture.angles.len() != nj {
        return Err(refused(
            cmd,
            format!(
                "the working posture has {} angles but the skeleton has {nj} joints \
                 (was the character edited outside its history?)",
                posture.angles.len()
            ),
        ));
    }
    match cmd {
        Command::AddJoint {
            parent,
            name,
            position_world,
            muscle,
        } => add_joint(
            c,
            posture,
            cmd,
            *parent,
            name,
            *position_world,
            muscle.as_ref(),
        ),
        Command::AddMuscle { joint, muscle } => add_muscle(c, cmd, *joint, muscle),
        Command::LockPart { joint, locked } => {
            check_joint(c, *joint)?;
            let old = std::mem::replace(&mut c.skeleton.joints[*joint].locked, *locked);
            Ok(Inverse::Lock {
                joint: *joint,
                locked: old,
            })
        }
        Command::EditMuscle { muscle, shape } => edit_muscle(c, cmd, *muscle, shape),
        Command::MoveJoint {
            joint,
            position_world,
            keep_children,
        } => move_joint(c, posture, cmd, *joint, *position_world, *keep_children),
        Command::DeleteJoint { joint } => delete_joint(c, posture, cmd, *joint),
        Command::SetDofs { joint, dofs } => {
            check_joint(c, *joint)?;
            set_dofs(c, cmd, *joint, *dofs)
        }
        Command::SetLocked { joint, locked } => set_locked(c, cmd, *joint, *locked),
        Command::SetPosture { posture: new } => {
            c.check_posture(new)
                .map_err(|e| invalid(cmd, &format!("posture.{}", e.field), e.message))?;
            Ok(Inverse::Posture(std::mem::replace(posture, new.clone())))
        }
        Command::AddSkin {
            name,
            bottom,
            top,
            m,
            n,
            material,
        } => {
            check_joint(c, *bottom)?;
            check_joint(c, *top)?;
            let skin = wrap_skin(c, posture, name, *bottom, *top, *m, *n, material)
                .map_err(|e| invalid(cmd, &e.field, e.message))?;
            skin.validate(nj, c.muscles.len())
                .map_err(|e| invalid(cmd, &format!("material ({})", e.field), e.message))?;
            c.skins.push(skin);
            Ok(Inverse::AddSkin)
        }
        Command::DeleteSkin { skin } => {
            check_skin(c, *skin)?;
            Ok(Inverse::DeleteSkin {
                skin: *skin,
                removed: Box::new(c.skins.remove(*skin)),
            })
        }
        Command::GlobalAttach { skin, band } => attach_globally(c, posture, cmd, *skin, *band),
        Command::SetAttachment { skin, point, band } => {
            set_attachment(c, cmd, *skin, *point, *band)
        }
        Command::FatStroke {
            skin,
            center_point,
            radius,
            amount,
        } => fat_stroke(c, cmd, *skin, *center_point, *radius, *amount),
        Command::PaintStroke {
            skin,
            center_point,
            radius,
            color,
            strength,
        } => paint_stroke(c, cmd, *skin, *center_point, *radius, (*color, *strength)),
        Command::PaintMuscle {
            muscle,
            color,
            strength,
        } => paint_muscle(c, cmd, *muscle, (*color, *strength)),
        Command::SetSkinMaterial {
            skin,
            region,
            stretch,
            damping,
            mass,
            bend,
            band_stiffness,
        } => set_skin_material(
            c,
            cmd,
            *skin,
            region.as_deref(),
            [*stretch, *damping, *mass, *bend, *band_stiffness],
        ),
        Command::SetFlesh { flesh } => set_flesh(c, cmd, flesh),
        Command::PaintWeights { stroke } => paint_weights(c, cmd, stroke),
        Command::AddBlendTarget { name } => add_blend_target(c, posture, cmd, name),
        Command::SculptBlendTarget {
            target,
            centre,
            radius,
            brush,
        } => sculpt_blend_target(c, cmd, *target, (*centre, *radius), *brush),
        Command::SetEnvironment {
            gravity,
            global_damping,
        } => set_environment(c, cmd, *gravity, *global_damping),
        Command::SetKey {
            time,
            posture: key_posture,
            tension,
            continuity,
            bias,
        } => set_key(c, cmd, *time, key_posture, [*tension, *continuity, *bias]),
        Command::MoveKey { from, to } => move_key(c, cmd, *from, *to),
        Command::DeleteKey { time } => delete_key(c, cmd, *time),
        Command::SetKeyTcb {
            time,
            tension,
            continuity,
            bias,
        } => set_key_tcb(c, cmd, *time, [*tension, *continuity, *bias]),
    }
}

// Skeleton edits.

/// Applies [`Command::AddJoint`]: a new unlocked joint under `parent` at
/// `position_world` (in the working posture), with a zero angle in the working
/// posture and every key posture, and optionally its muscle.
fn add_joint(
    c: &mut Character,
    posture: &mut Posture,
    cmd: &Command,
    parent: usize,
    name: &str,
    position_world: Vec3,
    muscle: Option<&NewMuscle>,
) -> Result<Inverse, EditError> {
    let nj = c.skeleton.joints.len();
    check_joint(c, parent)?;
    if name.trim().is_empty() {
        return Err(invalid(cmd, "name", "a joint needs a name"));
    }
    if let Some(k) = c.skeleton.find(name) {
        return Err(invalid(
            cmd,
            "name",
            format!("a joint named '{name}' already exists (joint {k})"),
        ));
    }
    if !position_world.is_finite() {
        return Err(invalid(cmd, "position_world", "must be finite"));
    }
    if let Some(m) = muscle {
        check_new_muscle(cmd, m, "muscle")?;
    }
    let world = forward_kinematics(&c.skeleton, posture);
    let offset = world[parent].inverse().transform_point3(position_world);
    c.skeleton.joints.push(Joint {
        locked: false,
        name: name.to_owned(),
        parent: Some(parent),
        offset,
        rest_rotation: Quat::IDENTITY,
        dofs: [Dof::default(); 3],
    });
    posture.angles.push(Vec3::ZERO);
    for key in &mut c.key_postures {
        key.posture.angles.push(Vec3::ZERO);
    }
    if let Some(m) = muscle {
        c.muscles.push(Muscle {
            joint: nj,
            offset: m.offset,
            rotation: m.rotation,
            shape: m.shape.clone(),
            drivers: Vec::new(),
            color: None,
        });
    }
    Ok(Inverse::AddJoint {
        muscle: muscle.is_some(),
    })
}

/// Applies [`Command::MoveJoint`]: moves `joint` to `position_world` (in the
/// working posture), its children staying put in the world when
/// `keep_children`.
fn move_joint(
    c: &mut Character,
    posture: &Posture,
    cmd: &Command,
    joint: usize,
    position_world: Vec3,
    keep_children: bool,
) -> Result<Inverse, EditError> {
    check_joint(c, joint)?;
    check_unlocked(c, cmd, joint)?;
    if !position_world.is_finite() {
        return Err(invalid(cmd, "position_world", "must be finite"));
    }
    let world = forward_kinematics(&c.skeleton, posture);
    let j = joint;
    let new_offset = match c.skeleton.joints[j].parent {
        // The root's frame is T(root_translation)·T(offset)·R.
        None => position_world - posture.root_translation,
        Some(p) => world[p].inverse().transform_point3(position_world),
    };
    let mut old = vec![(j, c.skeleton.joints[j].offset)];
    let children: Vec<usize> = if keep_children {
        c.skeleton.children(j).collect()
    } else {
        Vec::new()
    };
    let mut moved = world[j];
    moved.translation = position_world.into();
    let to_moved = moved.inverse();
    let child_offsets: Vec<Vec3> = children
        .iter()
        .map(|&k| to_moved.transform_point3(world[k].translation.into()))
        .collect();
    c.skeleton.joints[j].offset = new_offset;
    for (&k, o) in children.iter().zip(child_offsets) {
        old.push((k, c.skeleton.joints[k].offset));
        c.skeleton.joints[k].offset = o;
    }
    Ok(Inverse::Offsets(old))
}

/// Applies [`Command::DeleteJoint`]: removes `joint`'s subtree with its
/// muscles and angles (working and key postures), renumbering what is left.
fn delete_joint(
    c: &mut Character,
    posture: &mut Posture,
    cmd: &Command,
    joint: usize,
) -> Result<Inverse, EditError> {
    check_joint(c, joint)?;
    let j = joint;
    if j == 0 {
        return Err(refused(cmd, "joint 0 is the root and cannot be deleted"));
    }
    let gone = subtree(c, j);
    check_subtree_deletable(c, cmd, j, &gone)?;
    let muscle_gone: Vec<bool> = c.muscles.iter().map(|m| gone[m.joint]).collect();
    let joint_map = new_indices(&gone);
    let muscle_map = new_indices(&muscle_gone);
    let joints = take_where(&mut c.skeleton.joints, &gone);
    let muscles = take_where(&mut c.muscles, &muscle_gone);
    let angles = take_where(&mut posture.angles, &gone)
        .into_iter()
        .map(|(_, a)| a)
        .collect();
    let key_angles = c
        .key_postures
        .iter_mut()
        .map(|key| {
            take_where(&mut key.posture.angles, &gone)
                .into_iter()
                .map(|(_, a)| a)
                .collect()
        })
        .collect();
    renumber(c, |k| joint_map[k], |q| muscle_map[q]);
    Ok(Inverse::DeleteJoint {
        joints,
        muscles,
        angles,
        key_angles,
    })
}

/// Refuses deleting joint `j` whose subtree is `gone` when a joint in it is
/// locked, a skin hangs from it or wraps one of its muscles, or a kept
/// muscle has a deformation driver in it.
fn check_subtree_deletable(
    c: &Character,
    cmd: &Command,
    j: usize,
    gone: &[bool],
) -> Result<(), EditError> {
    if let Some(k) = (j..gone.len()).find(|&k| gone[k] && c.skeleton.joints[k].locked) {
        return Err(EditError::Locked {
            command: cmd.label(),
            joint: k,
            name: c.skeleton.joints[k].name.clone(),
        });
    }
    let jname = &c.skeleton.joints[j].name;
    for (s, skin) in c.skins.iter().enumerate() {
        for (end, k) in [("bottom", skin.bottom_joint), ("top", skin.top_joint)] {
            if gone[k] {
                return Err(refused(
                    cmd,
                    format!(
                        "joint {j} ('{jname}') cannot be deleted: the {end} of skin {s} \
                         ('{}') hangs from joint {k} ('{}') in its subtree; \
                         delete the skin first",
                        skin.name, c.skeleton.joints[k].name
                    ),
                ));
            }
        }
        if let Some(&q) = skin.muscles.iter().find(|&&q| gone[c.muscles[q].joint]) {
            return Err(refused(
                cmd,
                format!(
                    "joint {j} ('{jname}') cannot be deleted: skin {s} ('{}') wraps \
                     muscle {q} of its subtree; delete the skin first",
                    skin.name
                ),
            ));
        }
    }
    for (q, m) in c.muscles.iter().enumerate() {
        if gone[m.joint] {
            continue;
        }
        if let Some(d) = m.drivers.iter().find(|d| gone[d.joint]) {
            return Err(refused(
                cmd,
                format!(
                    "joint {j} ('{jname}') cannot be deleted: muscle {q} has a \
                     deformation driver on joint {} in its subtree",
                    d.joint
                ),
            ));
        }
    }
    Ok(())
}

/// Applies [`Command::SetLocked`]: frees or locks all three DOFs of `joint`.
fn set_locked(
    c: &mut Character,
    cmd: &Command,
    joint: usize,
    locked: bool,
) -> Result<Inverse, EditError> {
    check_joint(c, joint)?;
    let mut dofs = c.skeleton.joints[joint].dofs;
    for d in &mut dofs {
        d.free = !locked;
    }
    set_dofs(c, cmd, joint, dofs)
}

/// Applies new `dofs` to `joint` (already checked to exist), as
/// [`Command::SetDofs`] and [`Command::SetLocked`] do.
fn set_dofs(
    c: &mut Character,
    cmd: &Command,
    joint: usize,
    dofs: [Dof; 3],
) -> Result<Inverse, EditError> {
    check_dofs(cmd, &dofs)?;
    let old = std::mem::replace(&mut c.skeleton.joints[joint].dofs, dofs);
    Ok(Inverse::Dofs { joint, dofs: old })
}

// Muscle edits.

/// Applies [`Command::AddMuscle`]: a new muscle on the unlocked `joint`.
fn add_muscle(
    c: &mut Character,
    cmd: &Command,
    joint: usize,
    muscle: &NewMuscle,
) -> Result<Inverse, EditError> {
    check_joint(c, joint)?;
    check_unlocked(c, cmd, joint)?;
    check_new_muscle(cmd, muscle, "muscle")?;
    c.muscles.push(Muscle {
        joint,
        offset: muscle.offset,
        rotation: muscle.rotation,
        shape: muscle.shape.clone(),
        drivers: Vec::new(),
        color: None,
    });
    Ok(Inverse::AddMuscle)
}

/// Applies [`Command::EditMuscle`]: replaces the shape of `muscle`, whose
/// joint must be unlocked.
fn edit_muscle(
    c: &mut Character,
    cmd: &Command,
    muscle: usize,
    shape: &MuscleShape,
) -> Result<Inverse, EditError> {
    check_muscle(c, muscle)?;
    check_unlocked(c, cmd, c.muscles[muscle].joint)?;
    shape
        .validate()
        .map_err(|e| invalid(cmd, &format!("shape.{}", e.field), e.message))?;
    let old = std::mem::replace(&mut c.muscles[muscle].shape, shape.clone());
    Ok(Inverse::EditMuscle { muscle, shape: old })
}

// Skin edits.

/// Applies [`Command::GlobalAttach`]: attaches every inner point of `skin` to
/// the muscles it wraps with new bands made from `band`.
fn attach_globally(
    c: &mut Character,
    posture: &Posture,
    cmd: &Command,
    skin: usize,
    band: BandDefaults,
) -> Result<Inverse, EditError> {
    check_skin(c, skin)?;
    if !(band.ks.is_finite() && band.ks >= 0.0 && band.kd.is_finite() && band.kd >= 0.0) {
        return Err(invalid(
            cmd,
            "band",
            format!("ks and kd must be finite and non-negative, got {band:?}"),
        ));
    }
    if c.skins[skin].muscles.is_empty() {
        return Err(refused(
            cmd,
            format!(
                "skin {skin} ('{}') wraps no muscles: there is nothing to attach it to",
                c.skins[skin].name
            ),
        ));
    }
    let bands = c.skins[skin].points.band.clone();
    global_attach(c, skin, posture, band);
    Ok(Inverse::Bands { skin, bands })
}

/// Applies [`Command::SetAttachment`]: sets or clears the band of one inner
/// point of `skin`.
fn set_attachment(
    c: &mut Character,
    cmd: &Command,
    skin: usize,
    point: usize,
    band: Option<Band>,
) -> Result<Inverse, EditError> {
    check_point(c, skin, point)?;
    let s = &c.skins[skin];
    let row = point / s.m;
    if row == 0 || row + 1 == s.n {
        return Err(refused(
            cmd,
            format!(
                "point {point} of skin {skin} is on a boundary row, which is fixed to \
                 its joint and takes no connective tissue"
            ),
        ));
    }
    if let Some(b) = band {
        if !s.muscles.contains(&b.muscle) {
            return Err(invalid(
                cmd,
                "band.muscle",
                format!(
                    "skin {skin} does not wrap muscle {} (it wraps {:?})",
                    b.muscle, s.muscles
                ),
            ));
        }
        if !b.is_physical() {
            return Err(invalid(
                cmd,
                "band",
                "needs a finite anchor and non-negative ks, kd and rest length",
            ));
        }
    }
    let old = std::mem::replace(&mut c.skins[skin].points.band[point], band);
    Ok(Inverse::Band {
        skin,
        point,
        band: old,
    })
}

// Skin material.

/// Applies [`Command::SetSkinMaterial`]: the named parameters, in the order
/// `stretch`, `damping`, `mass`, `bend`, `band_stiffness`, at the `region`'s
/// points of `skin` (all of them when `None`).
fn set_skin_material(
    c: &mut Character,
    cmd: &Command,
    skin: usize,
    region: Option<&[usize]>,
    [stretch, damping, mass, bend, band_stiffness]: [Option<f32>; 5],
) -> Result<Inverse, EditError> {
    check_skin(c, skin)?;
    let count = c.skins[skin].point_count();
    let points: Vec<usize> = match region {
        Some(r) => {
            if r.is_empty() {
                return Err(invalid(cmd, "region", "selects no points"));
            }
            if let Some(&k) = r.iter().find(|&&k| k >= count) {
                return Err(EditError::NoSuchPoint {
                    skin,
                    index: k,
                    count,
                });
            }
            r.to_vec()
        }
        None => (0..count).collect(),
    };
    if stretch.is_none()
        && damping.is_none()
        && mass.is_none()
        && bend.is_none()
        && band_stiffness.is_none()
    {
        return Err(invalid(cmd, "material", "names no parameter to change"));
    }
    for (field, v, positive) in [
        ("stretch", stretch, false),
        ("damping", damping, false),
        ("mass", mass, true),
        ("bend", bend, false),
        ("band_stiffness", band_stiffness, false),
    ] {
        if let Some(v) = v
            && !(v.is_finite() && (v > 0.0 || (!positive && v == 0.0)))
        {
            let want = if positive { "positive" } else { "non-negative" };
            return Err(invalid(cmd, field, format!("must be {want}, got {v}")));
        }
    }
    let p = &mut c.skins[skin].points;
    let band_old = band_stiffness.map(|v| {
        points
            .iter()
            .map(|&k| p.band[k].as_mut().map(|b| std::mem::replace(&mut b.ks, v)))
            .collect()
    });
    let stretch_old = stretch.map(|s| {
        points
            .iter()
            .map(|&k| std::mem::replace(&mut p.stretch[k], [s, 0.5 * s, s]))
            .collect()
    });
    let damping_old = damping.map(|v| {
        points
            .iter()
            .map(|&k| std::mem::replace(&mut p.damping_density[k], v))
            .collect()
    });
    let mass_old = mass.map(|v| {
        points
            .iter()
            .map(|&k| std::mem::replace(&mut p.mass_density[k], v))
            .collect()
    });
    let bend_old = bend.map(|v| {
        points
            .iter()
            .map(|&k| std::mem::replace(&mut p.bend[k], v))
            .collect()
    });
    Ok(Inverse::Material {
        skin,
        points,
        stretch: stretch_old,
        damping: damping_old,
        mass: mass_old,
        bend: bend_old,
        band_stiffness: band_old,
    })
}

// Flesh and environment.

/// Applies [`Command::SetFlesh`]: replaces the flesh backend and its settings.
fn set_flesh(c: &mut Character, cmd: &Command, flesh: &Flesh) -> Result<Inverse, EditError> {
    flesh
        .validate()
        .map_err(|e| invalid(cmd, &e.field, e.message))?;
    if let Some(f) = flesh.fem() {
        check_stroke_bones(cmd, c, &f.weight_strokes)?;
    }
    let old = std::mem::replace(&mut c.flesh, flesh.clone());
    Ok(Inverse::Flesh(Box::new(old)))
}

/// Applies [`Command::SetEnvironment`]: the named ones of `gravity` and
/// `global_damping`.
fn set_environment(
    c: &mut Character,
    cmd: &Command,
    gravity: Option<Vec3>,
    global_damping: Option<f32>,
) -> Result<Inverse, EditError> {
    if gravity.is_none() && global_damping.is_none() {
        return Err(invalid(cmd, "environment", "names no parameter to change"));
    }
    if let Some(g) = gravity
        && !g.is_finite()
    {
        return Err(invalid(cmd, "gravity", format!("must be finite, got {g}")));
    }
    if let Some(d) = global_damping
        && !(d.is_finite() && d >= 0.0)
    {
        return Err(invalid(
            cmd,
            "global_damping",
            format!("must be non-negative, got {d}"),
        ));
    }
    let old = c.environment.clone();
    if let Some(g) = gravity {
        c.environment.gravity = g;
    }
    if let Some(d) = global_damping {
        c.environment.global_damping = d;
    }
    Ok(Inverse::Environment(old))
}

/// New index of every kept entry (`usize::MAX` for removed ones).
fn new_indices(gone: &[bool]) -> Vec<usize> {
    let mut next = 0;
    gone.iter()
        .map(|&g| {
            if g {
                usize::MAX
            } else {
                next += 1;
                next - 1
            }
        })
        .collect()
}

/// Removes the flagged entries, returning them with their old indices.
fn take_where<T>(v: &mut Vec<T>, gone: &[bool]) -> Vec<(usize, T)> {
    let mut kept = Vec::with_capacity(v.len());
    let mut taken = Vec::new();
    for (k, x) in std::mem::take(v).into_iter().enumerate() {
        if gone[k] {
            taken.push((k, x));
        } else {
            kept.push(x);
        }
    }
    *v = kept;
    taken
}

/// Old index of every kept entry, given the removed indices (ascending) and
/// the old length.
fn old_indices(removed: &[usize], old_len: usize) -> Vec<usize> {
    (0..old_len)
        .filter(|k| removed.binary_search(k).is_err())
        .collect()
}

/// Takes back a command applied by [`apply`], given its inverse. The character
/// must be in the state [`apply`] left it in (the history guarantees this).
pub(crate) fn revert(c: &mut Character, posture: &mut Posture, inverse: Inverse) {
    match inverse {
        Inverse::AddJoint { muscle } => {
            c.skeleton.joints.pop();
            posture.angles.pop();
            for key in &mut c.key_postures {
                key.posture.angles.pop();
            }
            if muscle {
                c.muscles.pop();
            }
        }
        Inverse::AddMuscle => {
            c.muscles.pop();
        }
        Inverse::Lock { joint, locked } => c.skeleton.joints[joint].locked = locked,
        Inverse::EditMuscle { muscle, shape } => c.muscles[muscle].shape = shape,
        Inverse::MuscleColor { muscle, old } => c.muscles[muscle].color = old,
        Inverse::Offsets(old) => {
            for (k, o) in old {
                c.skeleton.joints[k].offset = o;
            }
        }
        Inverse::DeleteJoint {
            joints,
            muscles,
            angles,
            key_angles,
        } => {
            let removed_j: Vec<usize> = joints.iter().map(|(k, _)| *k).collect();
            let removed_m: Vec<usize> = muscles.iter().map(|(k, _)| *k).collect();
            let old_j = old_indices(&removed_j, c.skeleton.joints.len() + joints.len());
            let old_m = old_indices(&removed_m, c.muscles.len() + muscles.len());
            renumber(c, |k| old_j[k], |q| old_m[q]);
            for ((k, joint), a) in joints.into_iter().zip(angles) {
                c.skeleton.joints.insert(k, joint);
                posture.angles.insert(k, a);
            }
            for (key, ka) in c.key_postures.iter_mut().zip(key_angles) {
                for (&k, a) in removed_j.iter().zip(ka) {
                    key.posture.angles.insert(k, a);
                }
            }
            for (q, m) in muscles {
                c.muscles.insert(q, m);
            }
        }
        Inverse::Dofs { joint, dofs } => c.skeleton.joints[joint].dofs = dofs,
        Inverse::Posture(p) => *posture = p,
        Inverse::AddSkin => {
            c.skins.pop();
        }
        Inverse::DeleteSkin { skin, removed } => c.skins.insert(skin, *removed),
        Inverse::Bands { skin, bands } => c.skins[skin].points.band = bands,
        Inverse::Band { skin, point, band } => c.skins[skin].points.band[point] = band,
        Inverse::Fat { skin, old } => {
            let fat = &mut c.skins[skin].points.fat;
            for (k, v) in old {
                fat[k as usize] = v;
            }
        }
        Inverse::Color {
            skin,
            old,
            unpainted,
        } => {
            let color = &mut c.skins[skin].points.color;
            if unpainted {
                color.clear();
            } else {
                for (k, v) in old {
                    color[k as usize] = v;
                }
            }
        }
        Inverse::Material {
            skin,
            points,
            stretch,
            damping,
            mass,
            bend,
            band_stiffness,
        } => {
            let p = &mut c.skins[skin].points;
            if let Some(v) = band_stiffness {
                for (&k, x) in points.iter().zip(v).rev() {
                    if let (Some(b), Some(x)) = (p.band[k].as_mut(), x) {
                        b.ks = x;
                    }
                }
            }
            // Reverse order, so a point listed twice ends with its first old value.
            if let Some(v) = stretch {
                for (&k, x) in points.iter().zip(v).rev() {
                    p.stretch[k] = x;
                }
            }
            if let Some(v) = damping {
                for (&k, x) in points.iter().zip(v).rev() {
                    p.damping_density[k] = x;
                }
            }
            if let Some(v) = mass {
                for (&k, x) in points.iter().zip(v).rev() {
                    p.mass_density[k] = x;
                }
            }
            if let Some(v) = bend {
                for (&k, x) in points.iter().zip(v).rev() {
                    p.bend[k] = x;
                }
            }
        }
        Inverse::Environment(old) => c.environment = old,
        Inverse::Flesh(old) => c.flesh = *old,
        Inverse::WeightStroke => {
            if let Flesh::Fem(f) = &mut c.flesh {
                f.weight_strokes.pop();
            }
        }
        Inverse::AddBlendTarget { created } => remove_blend_target(c, posture, created),
        Inverse::BlendTarget { target, old } => {
            if let Some(t) = c
                .flesh
                .fem_mut()
                .and_then(|f| f.blendshapes.as_mut())
                .and_then(|b| b.targets.get_mut(target))
            {
                for (i, p) in old {
                    t.positions[i as usize] = p;
                }
            }
        }
        Inverse::Keys { remove, insert } => {
            if let Some(i) = remove {
                c.key_postures.remove(i);
            }
            if let Some((i, key)) = insert {
                c.key_postures.insert(i, key);
            }
        }
    }
}
