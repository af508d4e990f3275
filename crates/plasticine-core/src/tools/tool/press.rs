//! The toolbox when the trigger goes down: what each tool starts (a new
//! joint and muscle, a shape or deform gesture, a skin rebind, an IK drag).

use super::{
    DEFAULT_RADIUS, Gesture, RAY_LENGTH, SKIN_TOUCH_RADIUS, TOUCH_RADIUS, ToolContext, ToolKind,
    Toolbox, extents, to_rest,
};
use crate::input::{HandState, InputFrame};
use crate::kinematics::PosedBody;
use crate::kinematics::chain_to_branch;
use crate::shape::{MuscleShape, Primitive};
use crate::tools::command::{Command, EditError, NewMuscle, check_unlocked_for};
use crate::tools::pick::{PickFilter, PickTarget, Picker};
use glam::{Quat, Vec2, Vec3};

impl Toolbox {
    pub(super) fn press(
        &mut self,
        frame: &InputFrame,
        ctx: &mut ToolContext,
    ) -> Result<(), EditError> {
        let tip = frame.right.position();
        self.state.notice = None;
        match self.kind {
            ToolKind::Select => {
                if let Some(j) = self.touched_or_pointed_joint(
                    ctx,
                    &frame.right,
                    PickFilter::JOINTS_AND_MUSCLES,
                    PickFilter::JOINTS_AND_MUSCLES,
                ) {
                    self.state.current_joint = j;
                }
                Ok(())
            }
            ToolKind::Sphere | ToolKind::Superellipse => self.press_shape(frame, ctx),
            ToolKind::Deform => self.press_deform(frame, ctx),
            ToolKind::Ik => {
                let Some(joint) = self.touched_or_pointed_joint(
                    ctx,
                    &frame.right,
                    PickFilter::JOINTS,
                    PickFilter::JOINTS_AND_MUSCLES,
                ) else {
                    return Ok(());
                };
                self.state.current_joint = joint;
                let body = PosedBody::new(ctx.character, ctx.history.posture());
                let x = body.joints[joint];
                self.gesture = Gesture::Ik {
                    joint,
                    chain: chain_to_branch(&ctx.character.skeleton, joint),
                    press_tip: tip,
                    press_orientation: frame.right.orientation(),
                    grab: x.translation.into(),
                    grab_rotation: Quat::from_mat3a(&x.matrix3).normalize(),
                    posture: ctx.history.posture().clone(),
                };
                Ok(())
            }
            ToolKind::Skin => {
                let j = match self.touched_joint(ctx, tip, PickFilter::JOINTS) {
                    Some(j) => j,
                    None => {
                        let filter = PickFilter {
                            joints: true,
                            muscles: false,
                            skin: true,
                        };
                        let body = PosedBody::new(ctx.character, ctx.history.posture());
                        let picker = Picker::new(ctx.character, &body);
                        let hand = &frame.right;
                        let pick = picker
                            .pick_near(tip, SKIN_TOUCH_RADIUS, PickFilter::SKIN)
                            .or_else(|| picker.pick_ray(tip, hand.pointing(), RAY_LENGTH, filter));
                        match pick.map(|p| p.target) {
                            Some(PickTarget::Joint(j)) => j,
                            Some(PickTarget::SkinPoint { skin, point }) => {
                                self.press_rebind(ctx, skin, point, *hand);
                                return Ok(());
                            }
                            _ => return Ok(()),
                        }
                    }
                };
                match self.state.skin_bottom.take() {
                    None => self.state.skin_bottom = Some(j),
                    Some(bottom) if bottom == j => {} // same joint twice: cancel
                    Some(bottom) => {
                        let (m, n) = self.state.skin_resolution;
                        let name = (ctx.character.skins.len()..)
                            .map(|i| format!("skin{i}"))
                            .find(|s| ctx.character.skins.iter().all(|k| &k.name != s))
                            .expect("some name is free");
                        ctx.apply(
                            Command::AddSkin {
                                name,
                                bottom,
                                top: j,
                                m,
                                n,
                                material: self.state.skin_material,
                            },
                            false,
                        )?;
                        self.state.current_skin = Some(ctx.character.skins.len() - 1);
                    }
                }
                Ok(())
            }
            ToolKind::Paint => {
                self.gesture = Gesture::Paint { open: false };
                Ok(())
            }
            ToolKind::Sculpt => self.press_sculpt(tip, frame.right.orientation(), ctx),
            ToolKind::Liposuction => {
                self.gesture = Gesture::Lipo {
                    press_orientation: frame.right.orientation(),
                    open: false,
                };
                Ok(())
            }
            ToolKind::Weights => {
                if !ctx.character.flesh.is_fem() {
                    return Err(EditError::Refused {
                        command: "paint weights",
                        message: "the flesh is kinematic: switch it to FEM (panel row 'flesh') \
                                  to paint its region weights"
                            .into(),
                    });
                }
                self.gesture = Gesture::Weights {
                    press_orientation: frame.right.orientation(),
                    open: false,
                };
                Ok(())
            }
        }
    }

    /// Sculpt press: on the chosen blendshape target (a first one, a copy
    /// of the embedded mesh, made if there is none), shown alone in the
    /// working posture while it is sculpted.
    fn press_sculpt(
        &mut self,
        tip: Vec3,
        press_orientation: Quat,
        ctx: &mut ToolContext,
    ) -> Result<(), EditError> {
        let mut open = false;
        // A mesh with targets is there (validation); without, the new
        // target's command refuses, saying how to import one.
        if ctx.character.blend_targets() == 0 {
            let name = "sculpt 1".to_string();
            ctx.apply(Command::AddBlendTarget { name }, false)?;
            open = true;
        }
        let n = ctx.character.blend_targets();
        let target = self.state.blend_target.min(n - 1);
        self.state.blend_target = target;
        let mut posture = ctx.history.posture().clone();
        let alone: Vec<f32> = (0..n).map(|k| f32::from(u8::from(k == target))).collect();
        if posture.blend != alone {
            posture.blend = alone;
            ctx.apply(Command::SetPosture { posture }, open)?;
            open = true;
        }
        let Some((_, last)) = to_rest(ctx.character, ctx.history.posture(), tip) else {
            return Ok(());
        };
        self.gesture = Gesture::Sculpt {
            target,
            last,
            press_orientation,
            open,
        };
        Ok(())
    }

    /// Sphere/superellipse press (§6.1): on a joint with a muscle, edit that
    /// muscle; on a bare joint, give it a muscle and size it; in empty space, create a joint
    /// (child of the current one) with a default muscle at the tip.
    pub(super) fn press_shape(
        &mut self,
        frame: &InputFrame,
        ctx: &mut ToolContext,
    ) -> Result<(), EditError> {
        let hand = frame.right.position();
        let tip = if self.state.snapping {
            self.snap(hand, ctx)
        } else {
            hand
        };
        let sphere = self.kind == ToolKind::Sphere;
        let default_shape = if sphere {
            MuscleShape::sphere(DEFAULT_RADIUS)
        } else {
            MuscleShape::superellipsoid(Vec3::splat(DEFAULT_RADIUS), Vec2::ONE)
        };
        let (muscle, open) = match self.touched_joint(ctx, hand, PickFilter::JOINTS) {
            Some(j) => {
                self.state.current_joint = j;
                match ctx.character.muscles.iter().position(|m| m.joint == j) {
                    Some(k) => {
                        check_unlocked_for(ctx.character, "edit muscle", j)?;
                        (k, false)
                    }
                    None => {
                        // A bare joint gets the tool's muscle, then the
                        // drag sizes it as for a new joint.
                        let k = ctx.character.muscles.len();
                        ctx.apply(
                            Command::AddMuscle {
                                joint: j,
                                muscle: NewMuscle::centred(default_shape.clone()),
                            },
                            false,
                        )?;
                        (k, true)
                    }
                }
            }
            None => {
                let name = self.new_name(ctx.character);
                // The primary joint and muscle come first in the step (a
                // mirror image, if any, follows), so they get these indices.
                let (joint, muscle) = (
                    ctx.character.skeleton.joints.len(),
                    ctx.character.muscles.len(),
                );
                ctx.apply(
                    Command::AddJoint {
                        parent: self.state.current_joint,
                        name,
                        position_world: tip,
                        muscle: Some(NewMuscle::centred(default_shape.clone())),
                    },
                    false,
                )?;
                if tip != hand {
                    self.state.snaps += 1;
                }
                self.state.current_joint = joint;
                (muscle, true)
            }
        };
        let body = PosedBody::new(ctx.character, ctx.history.posture());
        let mut start = ctx.character.muscles[muscle].shape.clone();
        if !sphere && let Primitive::Sphere { radius } = start.primitive {
            start.primitive = Primitive::Superellipsoid {
                radii: Vec3::splat(radius),
                exponents: Vec2::ONE,
            };
        }
        self.gesture = Gesture::Shape {
            muscle,
            center: body.muscles[muscle].to_world.translation.into(),
            press_tip: hand,
            press_orientation: frame.right.orientation(),
            last: ctx.character.muscles[muscle].shape.clone(),
            start,
            open,
        };
        Ok(())
    }

    /// Deformation press: the touched or pointed-at muscle (or its joint's
    /// first muscle), else the current joint's first muscle.
    pub(super) fn press_deform(
        &mut self,
        frame: &InputFrame,
        ctx: &mut ToolContext,
    ) -> Result<(), EditError> {
        let c = &*ctx.character;
        let first_of = |j: usize| c.muscles.iter().position(|m| m.joint == j);
        let picked = self
            .touch_or_point(
                ctx,
                &frame.right,
                TOUCH_RADIUS,
                PickFilter::JOINTS_AND_MUSCLES,
            )
            .map(|p| p.target);
        let muscle = match picked {
            Some(PickTarget::Muscle(k)) => Some(k),
            Some(PickTarget::Joint(j)) => first_of(j),
            _ => first_of(self.state.current_joint),
        };
        let Some(muscle) = muscle else {
            return Ok(());
        };
        let joint = c.muscles[muscle].joint;
        self.state.current_joint = joint;
        check_unlocked_for(c, "edit muscle", joint)?;
        let body = PosedBody::new(c, ctx.history.posture());
        let shape = c.muscles[muscle].shape.clone();
        let (half_length, xy_extent) = extents(&shape);
        self.gesture = Gesture::Deform {
            muscle,
            press_tip: frame.right.position(),
            press_orientation: frame.right.orientation(),
            frame: Quat::from_mat3a(&body.muscles[muscle].to_world.matrix3).normalize(),
            half_length,
            xy_extent,
            start: shape.deformation.clone(),
            open: false,
            last: shape,
        };
        Ok(())
    }

    /// Skin tool press on skin point `point`: selects it and the interior
    /// points within [`ToolState::rebind_radius`] (boundary rows are fixed to
    /// their joints and take no connective tissue).
    pub(super) fn press_rebind(
        &mut self,
        ctx: &ToolContext,
        skin: usize,
        point: usize,
        hand: HandState,
    ) {
        let s = &ctx.character.skins[skin];
        let interior = |k: usize| k / s.m > 0 && k / s.m + 1 < s.n;
        let at = s.points.position[point];
        let r = self.state.rebind_radius;
        let mut points: Vec<usize> = Vec::new();
        if interior(point) {
            points.push(point);
        }
        if r > 0.0 {
            points.extend(
                (0..s.point_count()).filter(|&k| {
                    k != point && interior(k) && s.points.position[k].distance(at) <= r
                }),
            );
        }
        if points.is_empty() {
            return;
        }
        self.state.skin_selection = Some((skin, points.clone()));
        self.gesture = Gesture::Rebind {
            skin,
            points,
            at,
            hand,
        };
    }
}
