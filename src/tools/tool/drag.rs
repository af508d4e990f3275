//! The toolbox while the trigger is held and when it is let go: each
//! gesture followed frame by frame, then committed as one command.

use super::{
    DEFORM_TWIST_DEAD_ZONE, DRAG_DEAD_ZONE, Gesture, MIN_RADIUS, RAY_LENGTH, SKIN_TOUCH_RADIUS,
    TWIST_DEAD_ZONE, ToolContext, Toolbox, WEIGHT_RATE, angle_to_exponent, deform_drag,
    exponent_to_angle, twist_and_pitch, weight_stroke,
};
use crate::character::Band;
use crate::input::{HandState, InputFrame};
use crate::kinematics::ik::IkTarget;
use crate::kinematics::pose::PosedBody;
use crate::shape::Primitive;
use crate::tools::command::{Command, EditError};
use crate::tools::pick::{PickFilter, PickTarget, Picker};
use glam::{Vec2, Vec3};

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
                            // Per-axis radii from the tip's offset in the muscle frame.
                            let body = PosedBody::new(ctx.character, ctx.history.posture());
                            let local = body.muscles[*muscle]
                                .to_local
                                .transform_vector3(tip - *center);
                            *radii = local.abs().max(Vec3::splat(MIN_RADIUS));
                        }
                        let (twist, pitch) =
                            twist_and_pitch(*press_orientation, frame.right.orientation());
                        *exponents = Vec2::new(
                            angle_to_exponent(exponent_to_angle(exponents.x) + pitch),
                            angle_to_exponent(exponent_to_angle(exponents.y) + twist),
                        );
                    }
                }
                if shape == *last {
                    return Ok(());
                }
                let cmd = Command::EditMuscle {
                    muscle: *muscle,
                    shape: shape.clone(),
                };
                ctx.apply(cmd, *open)?;
                *open = true;
                *last = shape;
                Ok(())
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
                let moved = tip - *press_tip;
                let d = if moved.length() > DRAG_DEAD_ZONE {
                    rotation.inverse() * moved
                } else {
                    Vec3::ZERO
                };
                let (twist, _) = twist_and_pitch(*press_orientation, frame.right.orientation());
                let twist = if twist.abs() > DEFORM_TWIST_DEAD_ZONE {
                    twist
                } else {
                    0.0
                };
                let mut shape = last.clone();
                shape.deformation = deform_drag(start, d, twist, *half_length, *xy_extent);
                if shape == *last || shape.validate().is_err() {
                    return Ok(());
                }
                ctx.apply(
                    Command::EditMuscle {
                        muscle: *muscle,
                        shape: shape.clone(),
                    },
                    *open,
                )?;
                *open = true;
                *last = shape;
                Ok(())
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
                // The joint hangs rigidly on the wand from the press on.
                let turn = (frame.right.orientation() * press_orientation.inverse()).normalize();
                let position = tip + turn * (*grab - *press_tip);
                let target = if self.state.ik_follow_rotation {
                    IkTarget::pose(position, (turn * *grab_rotation).normalize())
                } else {
                    IkTarget::position(position)
                };
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
                let body = PosedBody::new(ctx.character, ctx.history.posture());
                let picker = Picker::new(ctx.character, &body);
                let Some(pick) = picker.pick_near(tip, SKIN_TOUCH_RADIUS, PickFilter::SKIN) else {
                    return Ok(());
                };
                let PickTarget::SkinPoint { skin, point } = pick.target else {
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
