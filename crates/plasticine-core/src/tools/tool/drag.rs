//! The toolbox while the trigger is held and when it is let go: each
//! gesture followed frame by frame, then committed as one command.

use super::{
    BrushKind, DEFORM_TWIST_DEAD_ZONE, DRAG_DEAD_ZONE, Gesture, INFLATE_RATE, MIN_RADIUS,
    PAINT_RATE, RAY_LENGTH, SKIN_TOUCH_RADIUS, SMOOTH_RATE, TWIST_DEAD_ZONE, ToolContext, Toolbox,
    WEIGHT_RATE, angle_to_exponent, deform_drag, exponent_to_angle, to_rest, twist_and_pitch,
    weight_stroke,
};
use crate::character::Band;
use crate::input::{HandState, InputFrame};
use crate::kinematics::IkTarget;
use crate::kinematics::PosedBody;
use crate::shape::{MuscleShape, Primitive};
use crate::tools::command::{Command, EditError, SculptBrush};
use crate::tools::pick::{PickFilter, PickTarget, Picker};
use glam::{Quat, Vec2, Vec3};

impl Toolbox {
    pub(super) fn drag(
        &mut self,
        frame: &InputFrame,
        dt: f32,
        ctx: &mut ToolContext,
    ) -> Result<(), EditError> {
        let tip = frame.right.position();
        match &mut self.gesture {
            Gesture::Idle => Ok(()),
            Gesture::Shape {
                muscle,
                center,
                press_tip,
                press_orientation,
                start,
                open,
                last,
            } => {
                let moved = tip.distance(*press_tip) > DRAG_DEAD_ZONE;
                let mut shape = start.clone();
                match &mut shape.primitive {
                    Primitive::Sphere { radius } => {
                        if moved {
                            *radius = tip.distance(*center).max(MIN_RADIUS);
                        }
                    }
                    Primitive::Superellipsoid { radii, exponents } => {
                        if moved {
                            *radii = superellipsoid_radii(ctx, *muscle, *center, tip);
                        }
                        *exponents = turned_exponents(
                            *exponents,
                            *press_orientation,
                            frame.right.orientation(),
                        );
                    }
                }
                if shape == *last {
                    return Ok(());
                }
                commit_shape(ctx, *muscle, shape, open, last)
            }
            Gesture::Deform {
                muscle,
                press_tip,
                press_orientation,
                frame: rotation,
                half_length,
                xy_extent,
                start,
                open,
                last,
            } => {
                let (d, twist) =
                    deform_motion(&frame.right, *press_tip, *press_orientation, *rotation);
                let mut shape = last.clone();
                shape.deformation = deform_drag(start, d, twist, *half_length, *xy_extent);
                if shape == *last || shape.validate().is_err() {
                    return Ok(());
                }
                commit_shape(ctx, *muscle, shape, open, last)
            }
            Gesture::Ik {
                joint,
                chain,
                press_tip,
                press_orientation,
                grab,
                grab_rotation,
                posture,
            } => {
                let target = hanging_target(
                    &frame.right,
                    *press_tip,
                    *press_orientation,
                    *grab,
                    *grab_rotation,
                    self.state.ik_follow_rotation,
                );
                self.solver.solve(
                    &ctx.character.skeleton,
                    posture,
                    *joint,
                    chain,
                    &target,
                    &self.ik_settings,
                );
                self.state.preview_posture = Some(posture.clone());
                Ok(())
            }
            Gesture::Rebind { hand, .. } => {
                *hand = frame.right;
                Ok(())
            }
            Gesture::Lipo {
                press_orientation,
                open,
            } => {
                let (twist, _) = twist_and_pitch(*press_orientation, frame.right.orientation());
                if twist.abs() < TWIST_DEAD_ZONE || dt <= 0.0 {
                    return Ok(());
                }
                let Some((skin, point)) = touched_skin_point(ctx, tip) else {
                    return Ok(());
                };
                let cmd = Command::FatStroke {
                    skin,
                    center_point: point,
                    radius: self.state.lipo_radius,
                    amount: self.state.lipo_rate * dt * twist.signum(),
                };
                ctx.apply(cmd, *open)?;
                *open = true;
                Ok(())
            }
            Gesture::Sculpt { .. } => self.drag_sculpt(frame, dt, ctx),
            Gesture::Paint { open } => {
                if let Some(cmd) = paint_stroke(ctx, tip, &self.state, dt) {
                    ctx.apply(cmd, *open)?;
                    *open = true;
                }
                Ok(())
            }
            Gesture::Weights {
                press_orientation,
                open,
            } => {
                let (twist, _) = twist_and_pitch(*press_orientation, frame.right.orientation());
                if twist.abs() < TWIST_DEAD_ZONE || dt <= 0.0 {
                    return Ok(());
                }
                let Some(stroke) = weight_stroke(
                    ctx.character,
                    ctx.history.posture(),
                    tip,
                    self.state.lipo_radius,
                    WEIGHT_RATE * dt * twist.signum(),
                ) else {
                    return Ok(());
                };
                let cmd = Command::PaintWeights { stroke };
                let note = ctx.symmetry.and_then(|s| s.unmirrored(&cmd, ctx.character));
                ctx.apply(cmd, *open)?;
                if note.is_some() {
                    self.state.notice = note;
                }
                *open = true;
                Ok(())
            }
        }
    }

    /// A sculpt drag's frame, by the brush: grab moves the target's
    /// vertices near where the tip was (at rest) to where it is; smooth and
    /// inflate work where the tip is, at a rate per second.
    fn drag_sculpt(
        &mut self,
        frame: &InputFrame,
        dt: f32,
        ctx: &mut ToolContext,
    ) -> Result<(), EditError> {
        let radius = self.state.lipo_radius;
        let kind = self.state.sculpt_brush;
        let Gesture::Sculpt {
            target,
            last,
            press_orientation,
            open,
        } = &mut self.gesture
        else {
            return Ok(());
        };
        let Some((_, now)) = to_rest(ctx.character, ctx.history.posture(), frame.right.position())
        else {
            return Ok(());
        };
        let (centre, brush) = match kind {
            BrushKind::Grab => {
                let offset = now - *last;
                if offset.length_squared() < 1e-12 {
                    return Ok(());
                }
                (*last, SculptBrush::Grab { offset })
            }
            _ if dt <= 0.0 => return Ok(()),
            BrushKind::Smooth => (
                now,
                SculptBrush::Smooth {
                    strength: (SMOOTH_RATE * dt).min(1.0),
                },
            ),
            BrushKind::Inflate => {
                let (twist, _) = twist_and_pitch(*press_orientation, frame.right.orientation());
                let sign = if twist < -TWIST_DEAD_ZONE { -1.0 } else { 1.0 };
                let distance = sign * (INFLATE_RATE * dt).min(1.0) * radius;
                (now, SculptBrush::Inflate { distance })
            }
        };
        let cmd = Command::SculptBlendTarget {
            target: *target,
            centre,
            radius,
            brush,
        };
        ctx.apply(cmd, *open)?;
        *open = true;
        *last = now;
        Ok(())
    }

    /// Ends the gesture; an IK drag becomes one `SetPosture`.
    pub(super) fn release(&mut self, ctx: &mut ToolContext) -> Result<(), EditError> {
        let gesture = std::mem::replace(&mut self.gesture, Gesture::Idle);
        self.state.preview_posture = None;
        self.state.skin_selection = None;
        match gesture {
            Gesture::Ik { posture, .. } if &posture != ctx.history.posture() => {
                ctx.apply(Command::SetPosture { posture }, false)
            }
            Gesture::Rebind {
                skin,
                points,
                at,
                hand,
            } => self.release_rebind(ctx, skin, &points, at, &hand),
            _ => Ok(()),
        }
    }

    /// Releases a re-bind at the muscle the tip touches or the wand points
    /// at: one `SetAttachment` per selected point, as one undo step.
    pub(super) fn release_rebind(
        &mut self,
        ctx: &mut ToolContext,
        skin: usize,
        points: &[usize],
        at: Vec3,
        hand: &HandState,
    ) -> Result<(), EditError> {
        let commands = {
            let c = &*ctx.character;
            let body = PosedBody::new(c, ctx.history.posture());
            let picker = Picker::new(c, &body);
            let Some(hit) = picker
                .pick_near(hand.position(), SKIN_TOUCH_RADIUS, PickFilter::MUSCLES)
                .or_else(|| {
                    picker.pick_ray(
                        hand.position(),
                        hand.pointing(),
                        RAY_LENGTH,
                        PickFilter::MUSCLES,
                    )
                })
            else {
                return Ok(());
            };
            let PickTarget::Muscle(q) = hit.target else {
                return Ok(());
            };
            let mu = &body.muscles[q];
            let s = &c.skins[skin];
            points
                .iter()
                .map(|&k| {
                    let p = s.points.position[k];
                    let want = mu.to_local.transform_point3(hit.position + (p - at));
                    let anchor = mu.shape.project_to_surface(want).point;
                    let (ks, kd) = match s.points.band[k] {
                        Some(b) => (b.ks, b.kd),
                        None => (
                            self.state.skin_material.band.ks,
                            self.state.skin_material.band.kd,
                        ),
                    };
                    Command::SetAttachment {
                        skin,
                        point: k,
                        band: Some(Band {
                            muscle: q,
                            anchor,
                            ks,
                            kd,
                            rest_length: p.distance(mu.to_world.transform_point3(anchor)),
                        }),
                    }
                })
                .collect::<Vec<_>>()
        };
        for (i, cmd) in commands.into_iter().enumerate() {
            ctx.apply(cmd, i > 0)?;
        }
        Ok(())
    }
}

/// Applies `shape` to `muscle` as part of the gesture's step (opening it if
/// not `open`), then records it as the `last` shape applied.
fn commit_shape(
    ctx: &mut ToolContext,
    muscle: usize,
    shape: MuscleShape,
    open: &mut bool,
    last: &mut MuscleShape,
) -> Result<(), EditError> {
    let cmd = Command::EditMuscle {
        muscle,
        shape: shape.clone(),
    };
    ctx.apply(cmd, *open)?;
    *open = true;
    *last = shape;
    Ok(())
}

/// Per-axis superellipsoid radii from the tip's offset from `center` in the
/// frame of `muscle` (in the working posture), each at least `MIN_RADIUS`.
fn superellipsoid_radii(ctx: &ToolContext, muscle: usize, center: Vec3, tip: Vec3) -> Vec3 {
    let body = PosedBody::new(ctx.character, ctx.history.posture());
    let local = body.muscles[muscle]
        .to_local
        .transform_vector3(tip - center);
    local.abs().max(Vec3::splat(MIN_RADIUS))
}

/// Superellipse `exponents` after the hand turned from `press` to `now`:
/// the pitch changes x, the twist y.
fn turned_exponents(exponents: Vec2, press: Quat, now: Quat) -> Vec2 {
    let (twist, pitch) = twist_and_pitch(press, now);
    Vec2::new(
        angle_to_exponent(exponent_to_angle(exponents.x) + pitch),
        angle_to_exponent(exponent_to_angle(exponents.y) + twist),
    )
}

/// A deformation drag's input: the tip's motion since `press_tip` in the
/// muscle's frame (`rotation`: local → world) and the twist since
/// `press_orientation`, each zero within its dead zone.
fn deform_motion(
    hand: &HandState,
    press_tip: Vec3,
    press_orientation: Quat,
    rotation: Quat,
) -> (Vec3, f32) {
    let moved = hand.position() - press_tip;
    let d = if moved.length() > DRAG_DEAD_ZONE {
        rotation.inverse() * moved
    } else {
        Vec3::ZERO
    };
    let (twist, _) = twist_and_pitch(press_orientation, hand.orientation());
    let twist = if twist.abs() > DEFORM_TWIST_DEAD_ZONE {
        twist
    } else {
        0.0
    };
    (d, twist)
}

/// The IK target of a joint grabbed at `grab` (rotation `grab_rotation`)
/// with the wand at `press_tip`, `press_orientation`: it hangs rigidly on
/// the `hand` from the press on, its rotation followed when
/// `follow_rotation`.
fn hanging_target(
    hand: &HandState,
    press_tip: Vec3,
    press_orientation: Quat,
    grab: Vec3,
    grab_rotation: Quat,
    follow_rotation: bool,
) -> IkTarget {
    let turn = (hand.orientation() * press_orientation.inverse()).normalize();
    let position = hand.position() + turn * (grab - press_tip);
    if follow_rotation {
        IkTarget::pose(position, (turn * grab_rotation).normalize())
    } else {
        IkTarget::position(position)
    }
}

/// The skin point (skin, point) within `SKIN_TOUCH_RADIUS` of `tip` in the
/// working posture, if any.
fn touched_skin_point(ctx: &ToolContext, tip: Vec3) -> Option<(usize, usize)> {
    let body = PosedBody::new(ctx.character, ctx.history.posture());
    let picker = Picker::new(ctx.character, &body);
    let pick = picker.pick_near(tip, SKIN_TOUCH_RADIUS, PickFilter::SKIN)?;
    let PickTarget::SkinPoint { skin, point } = pick.target else {
        return None;
    };
    Some((skin, point))
}

/// One frame's paint stroke where the tip touches the skin, else on the
/// muscle it touches (none elsewhere, or for a frame that took no time).
fn paint_stroke(
    ctx: &ToolContext,
    tip: Vec3,
    state: &super::ToolState,
    dt: f32,
) -> Option<Command> {
    if dt <= 0.0 {
        return None;
    }
    let strength = (PAINT_RATE * dt).min(1.0);
    if let Some((skin, point)) = touched_skin_point(ctx, tip) {
        return Some(Command::PaintStroke {
            skin,
            center_point: point,
            radius: state.lipo_radius,
            color: state.paint_color,
            strength,
        });
    }
    // Touching no skin: the muscle the tip is on, painted whole.
    let body = PosedBody::new(ctx.character, ctx.history.posture());
    let pick =
        Picker::new(ctx.character, &body).pick_near(tip, SKIN_TOUCH_RADIUS, PickFilter::MUSCLES)?;
    let PickTarget::Muscle(muscle) = pick.target else {
        return None;
    };
    Some(Command::PaintMuscle {
        muscle,
        color: state.paint_color,
        strength,
    })
}
