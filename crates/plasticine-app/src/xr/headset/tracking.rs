//! What the headset tracks: the head and the hands located at the
//! predicted display time (sampled early for the tools, again late for the
//! views), the controllers' inputs, haptics, and the [`Tracker`] the frame
//! loop reads them through.

use super::{Headset, LocatedView, SessionState, finite, to_glam, valid};
use crate::input::{HandState, InputFrame};
use crate::input::{TrackedParts, TrackedPose, Tracker};
use crate::xr::actions::{HandInputs, Side};
use crate::xr::error::{XrError, call};
use glam::{Quat, Vec3};
use openxr as xr;
use std::cell::RefCell;
use std::time::{Duration, Instant};

impl Headset {
    /// A vibration on the hand with `role` (0 the vehicle hand, 1 the tool
    /// hand). Failures are logged, never fatal.
    pub fn pulse(&self, role: usize, amplitude: f32, duration: Duration) {
        let side = self.side_of_role(role);
        if let Err(e) = self.actions.pulse(&self.session, side, amplitude, duration) {
            tracing::debug!("haptic pulse refused: {e}");
        }
    }

    /// The physical hand holding `role` (0 vehicle, 1 tool).
    pub(super) fn side_of_role(&self, role: usize) -> Side {
        match (role == 1, self.options.left_handed) {
            (true, false) | (false, true) => Side::Right,
            _ => Side::Left,
        }
    }

    /// The buttons and axes of the last sample, by role: `[vehicle hand,
    /// tool hand]`.
    pub fn role_inputs(&self) -> [HandInputs; 2] {
        [0, 1].map(|role| self.inputs[self.side_of_role(role) as usize])
    }

    /// The aim poses of the last sample (tracker space) by role, and
    /// whether each is tracked.
    pub fn role_hands(&self) -> [(HandState, bool); 2] {
        [0, 1].map(|role| {
            let side = self.side_of_role(role);
            let tracked = match side {
                Side::Left => self.tracked.left,
                Side::Right => self.tracked.right,
            };
            (self.hands[side as usize], tracked)
        })
    }

    /// The head (tracker space) of the last sample.
    pub fn head(&self) -> (Vec3, Quat) {
        self.head
    }

    /// One tracking sample at the frame's predicted display time: the first
    /// of a frame syncs the actions and locates the head (`VIEW`) and hands;
    /// the late one (after [`acquire`](Self::acquire)) locates the views and
    /// the hands. Failures end the session (see [`ended`](Self::ended)).
    pub(super) fn sample_now(&mut self) {
        if self.ended.is_some() || !self.running {
            self.tracked = TrackedParts::NONE;
            return;
        }
        let Some(time) = self.display_time() else {
            self.tracked = TrackedParts::NONE;
            return;
        };
        let late = self.frame.begun;
        let r = if late {
            self.sample_late(time)
        } else {
            self.sample_first(time)
        };
        if let Err(e) = r {
            if matches!(e, XrError::SessionLost { .. }) {
                self.end_with(e);
            } else {
                tracing::warn!("OpenXR tracking failed: {e}");
                self.tracked = TrackedParts::NONE;
            }
        }
    }

    pub(super) fn sample_first(&mut self, time: xr::Time) -> Result<(), XrError> {
        // Outside FOCUSED this succeeds with XR_SESSION_NOT_FOCUSED and
        // every action reads inactive.
        self.session
            .sync_actions(&[xr::ActiveActionSet::new(&self.actions.set)])
            .map_err(call("xrSyncActions"))?;
        if self.profiles_stale && self.state == SessionState::FOCUSED {
            self.refresh_profiles()?;
        }
        let head = self
            .view_space
            .locate(&self.base, time)
            .map_err(call("xrLocateSpace (VIEW)"))?;
        let pose = to_glam(head.pose);
        let head_ok = valid(head.location_flags) && finite(&pose);
        if head_ok {
            self.head = pose;
        }
        for side in Side::BOTH {
            let inputs = self.actions.read(&self.session, side)?;
            let i = side as usize;
            self.hands[i].trigger = inputs.trigger.clamp(0.0, 1.0);
            self.hands[i].buttons = inputs.buttons;
            self.inputs[i] = inputs;
        }
        let [left, right] = self.locate_hands(time)?;
        self.tracked = TrackedParts {
            head: head_ok,
            left,
            right,
        };
        Ok(())
    }

    pub(super) fn sample_late(&mut self, time: xr::Time) -> Result<(), XrError> {
        let located_at = Instant::now();
        let (flags, views) = self
            .session
            .locate_views(self.view_configuration, time, &self.base)
            .map_err(call("xrLocateViews"))?;
        let views_ok = flags.contains(xr::ViewStateFlags::POSITION_VALID)
            && flags.contains(xr::ViewStateFlags::ORIENTATION_VALID)
            && views.len() >= 2;
        let mut head_ok = false;
        if views_ok {
            let eyes = [
                LocatedView::from_xr(&views[0]),
                LocatedView::from_xr(&views[1]),
            ];
            if eyes
                .iter()
                .all(|e| finite(&(e.position, e.orientation)) && e.fov.angle_left.is_finite())
            {
                self.head = (
                    (eyes[0].position + eyes[1].position) * 0.5,
                    eyes[0].orientation.slerp(eyes[1].orientation, 0.5),
                );
                self.frame.views = Some(eyes);
                head_ok = true;
            }
        }
        if self.frame.views.is_none() {
            // Nothing valid to render from: keep the last head and use the
            // recommended field of view around it, so the frame still goes out.
            self.frame.views = Some(self.fallback_views(&views));
        }
        self.frame.located_at = Some(located_at);
        let [left, right] = self.locate_hands(time)?;
        self.tracked = TrackedParts {
            head: head_ok,
            left,
            right,
        };
        Ok(())
    }

    /// Eyes at the last head pose, 63 mm apart, with the located FOVs
    /// (or ±45°) when the runtime could not locate the views.
    pub(super) fn fallback_views(&self, views: &[xr::View]) -> [LocatedView; 2] {
        let (p, q) = self.head;
        [(-0.0315f32, 0usize), (0.0315, 1)].map(|(dx, k)| LocatedView {
            position: p + q * Vec3::new(dx, 0.0, 0.0),
            orientation: q,
            fov: views.get(k).map_or(
                xr::Fovf {
                    angle_left: -0.785,
                    angle_right: 0.785,
                    angle_up: 0.785,
                    angle_down: -0.785,
                },
                |v| v.fov,
            ),
        })
    }

    pub(super) fn locate_hands(&mut self, time: xr::Time) -> Result<[bool; 2], XrError> {
        let mut ok = [false; 2];
        for side in Side::BOTH {
            let i = side as usize;
            let aim = self.aim[i]
                .locate(&self.base, time)
                .map_err(call("xrLocateSpace (aim)"))?;
            let pose = to_glam(aim.pose);
            ok[i] = valid(aim.location_flags) && finite(&pose);
            if ok[i] {
                self.hands[i].pose = pose;
            }
        }
        Ok(ok)
    }

    pub(super) fn tracked_pose(&mut self) -> TrackedPose {
        self.sequence += 1;
        let tool = self.side_of_role(1) as usize;
        let vehicle = self.side_of_role(0) as usize;
        TrackedPose {
            head: self.head,
            input: InputFrame {
                time: self.started.elapsed().as_secs_f64(),
                left: self.hands[vehicle],
                right: self.hands[tool],
            },
            sequence: self.sequence,
            sampled_at: Instant::now(),
        }
    }

    /// Which parts of the last sample were measured, by role (`left` is the
    /// vehicle hand, `right` the tool hand).
    pub fn tracked(&self) -> TrackedParts {
        let t = self.tracked;
        if self.options.left_handed {
            TrackedParts {
                head: t.head,
                left: t.right,
                right: t.left,
            }
        } else {
            t
        }
    }
}

/// The [`Tracker`] side of a [`Headset`] shared with its renderer: the
/// frame loop takes the tracker and the renderer as two `&mut`, and both
/// need the session, so they share it through a `RefCell` (one thread, one
/// borrow at a time).
pub struct HeadsetTracker<'a> {
    /// The headset session, shared with the renderer.
    pub headset: &'a RefCell<Headset>,
}

impl Tracker for HeadsetTracker<'_> {
    fn sample(&mut self) -> TrackedPose {
        let mut h = self.headset.borrow_mut();
        h.sample_now();
        h.tracked_pose()
    }

    fn tracked(&self) -> TrackedParts {
        self.headset.borrow().tracked()
    }
}
