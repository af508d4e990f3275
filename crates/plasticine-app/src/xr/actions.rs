//! The hands as `OpenXR` actions: one action set with, for each hand (as
//! subaction paths `/user/hand/left` and `/user/hand/right`), the aim pose,
//! the grip pose, the trigger, the squeeze, the primary (A/X) and secondary
//! (B/Y) buttons, menu, the thumbstick and its click, and the haptic
//! output; and the bindings we suggest for the controllers we know.
//!
//! What a [`HandState`](crate::input::HandState) gets from them: the tool tip is the **aim** pose
//! (its −z points along the controller, `OpenXR`'s convention and ours); the
//! trigger is the trigger value; the buttons are primary → [`buttons::A`],
//! secondary → [`buttons::B`], menu → [`buttons::MENU`], squeeze at or above
//! [`TRIGGER_PRESSED`] → [`buttons::GRIP`], thumbstick click →
//! [`buttons::THUMBSTICK`].

use super::error::{XrError, call};
use crate::input::{TRIGGER_PRESSED, buttons};
use openxr as xr;

/// One hand's side: index 0 is the left hand, 1 the right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The left hand.
    Left = 0,
    /// The right hand.
    Right = 1,
}

impl Side {
    /// Both hands, left first.
    pub const BOTH: [Side; 2] = [Side::Left, Side::Right];

    /// The hand's `OpenXR` user path (`/user/hand/left` or `/user/hand/right`).
    pub fn user_path(self) -> &'static str {
        match self {
            Side::Left => "/user/hand/left",
            Side::Right => "/user/hand/right",
        }
    }
}

/// What an action reads, for the binding tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// The aim pose: the tool tip.
    Aim,
    /// The grip pose.
    Grip,
    /// The trigger.
    Trigger,
    /// The squeeze (grip), a value or a click.
    Squeeze,
    /// The primary button (A or X).
    Primary,
    /// The secondary button (B or Y).
    Secondary,
    /// The menu button.
    Menu,
    /// The thumbstick's two axes.
    Thumbstick,
    /// The thumbstick's click (the trackpad's on a Vive controller).
    ThumbstickClick,
    /// The vibration output (`/user/hand/<side>/output/haptic`).
    Haptic,
}

/// An interaction profile and, per hand, the component paths (under
/// `/user/hand/<side>/input/`, or `.../output/` for [`Input::Haptic`])
/// bound to each of our inputs.
pub struct Profile {
    /// The interaction profile's path, such as `/interaction_profiles/khr/simple_controller`.
    pub path: &'static str,
    /// `(input, left component, right component)`; `None` where that hand
    /// has no such component.
    pub bindings: &'static [(Input, Option<&'static str>, Option<&'static str>)],
}

/// The profiles we suggest bindings for. A runtime picks the one that fits
/// the controllers it has (Monado's simulated "simple" controllers and many
/// others offer the Khronos simple controller).
pub const PROFILES: &[Profile] = &[
    Profile {
        path: "/interaction_profiles/khr/simple_controller",
        bindings: &[
            (Input::Aim, Some("aim/pose"), Some("aim/pose")),
            (Input::Grip, Some("grip/pose"), Some("grip/pose")),
            (Input::Haptic, Some("haptic"), Some("haptic")),
            (Input::Trigger, Some("select/click"), Some("select/click")),
            (Input::Menu, Some("menu/click"), Some("menu/click")),
        ],
    },
    Profile {
        path: "/interaction_profiles/valve/index_controller",
        bindings: &[
            (Input::Aim, Some("aim/pose"), Some("aim/pose")),
            (Input::Grip, Some("grip/pose"), Some("grip/pose")),
            (Input::Haptic, Some("haptic"), Some("haptic")),
            (Input::Trigger, Some("trigger/value"), Some("trigger/value")),
            (Input::Squeeze, Some("squeeze/value"), Some("squeeze/value")),
            (Input::Primary, Some("a/click"), Some("a/click")),
            (Input::Secondary, Some("b/click"), Some("b/click")),
            (Input::Thumbstick, Some("thumbstick"), Some("thumbstick")),
            (
                Input::ThumbstickClick,
                Some("thumbstick/click"),
                Some("thumbstick/click"),
            ),
        ],
    },
    Profile {
        path: "/interaction_profiles/oculus/touch_controller",
        bindings: &[
            (Input::Aim, Some("aim/pose"), Some("aim/pose")),
            (Input::Grip, Some("grip/pose"), Some("grip/pose")),
            (Input::Haptic, Some("haptic"), Some("haptic")),
            (Input::Trigger, Some("trigger/value"), Some("trigger/value")),
            (Input::Squeeze, Some("squeeze/value"), Some("squeeze/value")),
            (Input::Primary, Some("x/click"), Some("a/click")),
            (Input::Secondary, Some("y/click"), Some("b/click")),
            // The menu button is on the left controller only (the right
            // one's is the system button, which applications cannot bind).
            (Input::Menu, Some("menu/click"), None),
            (Input::Thumbstick, Some("thumbstick"), Some("thumbstick")),
            (
                Input::ThumbstickClick,
                Some("thumbstick/click"),
                Some("thumbstick/click"),
            ),
        ],
    },
    Profile {
        path: "/interaction_profiles/htc/vive_controller",
        bindings: &[
            (Input::Aim, Some("aim/pose"), Some("aim/pose")),
            (Input::Grip, Some("grip/pose"), Some("grip/pose")),
            (Input::Haptic, Some("haptic"), Some("haptic")),
            (Input::Trigger, Some("trigger/value"), Some("trigger/value")),
            (Input::Squeeze, Some("squeeze/click"), Some("squeeze/click")),
            (Input::Menu, Some("menu/click"), Some("menu/click")),
            (
                Input::ThumbstickClick,
                Some("trackpad/click"),
                Some("trackpad/click"),
            ),
        ],
    },
    Profile {
        path: "/interaction_profiles/microsoft/motion_controller",
        bindings: &[
            (Input::Aim, Some("aim/pose"), Some("aim/pose")),
            (Input::Grip, Some("grip/pose"), Some("grip/pose")),
            (Input::Haptic, Some("haptic"), Some("haptic")),
            (Input::Trigger, Some("trigger/value"), Some("trigger/value")),
            (Input::Squeeze, Some("squeeze/click"), Some("squeeze/click")),
            (Input::Menu, Some("menu/click"), Some("menu/click")),
            (Input::Thumbstick, Some("thumbstick"), Some("thumbstick")),
            (
                Input::ThumbstickClick,
                Some("thumbstick/click"),
                Some("thumbstick/click"),
            ),
        ],
    },
];

/// The action set and its actions, each with both hands as subaction paths.
pub struct HandActions {
    /// The action set holding every action below.
    pub set: xr::ActionSet,
    /// Each hand's aim pose: the tool tip.
    pub aim: xr::Action<xr::Posef>,
    /// Each hand's grip pose.
    pub grip: xr::Action<xr::Posef>,
    /// Each hand's trigger value, 0..1.
    pub trigger: xr::Action<f32>,
    /// Each hand's squeeze value, 0..1.
    pub squeeze: xr::Action<f32>,
    /// Each hand's primary button (A or X).
    pub primary: xr::Action<bool>,
    /// Each hand's secondary button (B or Y).
    pub secondary: xr::Action<bool>,
    /// Each hand's menu button.
    pub menu: xr::Action<bool>,
    /// Each hand's thumbstick axes.
    pub thumbstick: xr::Action<xr::Vector2f>,
    /// Each hand's thumbstick (or trackpad) click.
    pub thumbstick_click: xr::Action<bool>,
    /// Each hand's vibration output.
    pub haptic: xr::Action<xr::Haptic>,
    /// `/user/hand/left` and `/user/hand/right`.
    pub hands: [xr::Path; 2],
    /// The profiles the runtime accepted bindings for.
    pub suggested: Vec<&'static str>,
}

/// One hand's buttons and axes after a sync.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HandInputs {
    /// Whether any of the hand's actions is bound to a device now.
    pub active: bool,
    /// Trigger value, 0..1 (0 where unbound).
    pub trigger: f32,
    /// Squeeze value, 0..1 (0 where unbound).
    pub squeeze: f32,
    /// Bits of [`buttons`].
    pub buttons: u32,
    /// Thumbstick x and y, −1..1 (0 where unbound).
    pub thumbstick: [f32; 2],
}

impl HandActions {
    /// Creates the action set and suggests the bindings of [`PROFILES`].
    /// A profile the runtime does not know is skipped (with a log line);
    /// none accepted at all is an error.
    pub fn new(instance: &xr::Instance) -> Result<Self, XrError> {
        let path = |s: &str| instance.string_to_path(s).map_err(call("xrStringToPath"));
        let hands = [
            path(Side::Left.user_path())?,
            path(Side::Right.user_path())?,
        ];
        let set = instance
            .create_action_set("plasticine", "Plasticine", 0)
            .map_err(call("xrCreateActionSet"))?;
        macro_rules! action {
            ($name:literal, $label:literal) => {
                set.create_action($name, $label, &hands)
                    .map_err(call("xrCreateAction"))?
            };
        }
        let mut actions = Self {
            aim: action!("aim", "Tool tip (aim pose)"),
            grip: action!("grip", "Grip pose"),
            trigger: action!("trigger", "Trigger"),
            squeeze: action!("squeeze", "Squeeze"),
            primary: action!("primary", "A / X"),
            secondary: action!("secondary", "B / Y"),
            menu: action!("menu", "Menu"),
            thumbstick: action!("thumbstick", "Thumbstick"),
            thumbstick_click: action!("thumbstick_click", "Thumbstick click"),
            haptic: action!("haptic", "Vibration"),
            set,
            hands,
            suggested: Vec::new(),
        };
        for profile in PROFILES {
            match actions.suggest(instance, profile) {
                Ok(()) => actions.suggested.push(profile.path),
                Err(e) => tracing::info!("OpenXR: no bindings for {}: {e}", profile.path),
            }
        }
        if actions.suggested.is_empty() {
            return Err(XrError::Call {
                call: "xrSuggestInteractionProfileBindings (every profile refused)",
                result: xr::sys::Result::ERROR_PATH_UNSUPPORTED,
            });
        }
        Ok(actions)
    }

    fn suggest(&self, instance: &xr::Instance, profile: &Profile) -> Result<(), XrError> {
        let path = |s: &str| instance.string_to_path(s).map_err(call("xrStringToPath"));
        let mut bindings = Vec::new();
        for (input, left, right) in profile.bindings {
            for (side, component) in Side::BOTH.into_iter().zip([left, right]) {
                let Some(component) = component else { continue };
                let kind = if *input == Input::Haptic {
                    "output"
                } else {
                    "input"
                };
                let p = path(&format!("{}/{kind}/{component}", side.user_path()))?;
                bindings.push(match input {
                    Input::Aim => xr::Binding::new(&self.aim, p),
                    Input::Grip => xr::Binding::new(&self.grip, p),
                    Input::Trigger => xr::Binding::new(&self.trigger, p),
                    Input::Squeeze => xr::Binding::new(&self.squeeze, p),
                    Input::Primary => xr::Binding::new(&self.primary, p),
                    Input::Secondary => xr::Binding::new(&self.secondary, p),
                    Input::Menu => xr::Binding::new(&self.menu, p),
                    Input::Thumbstick => xr::Binding::new(&self.thumbstick, p),
                    Input::ThumbstickClick => xr::Binding::new(&self.thumbstick_click, p),
                    Input::Haptic => xr::Binding::new(&self.haptic, p),
                });
            }
        }
        instance
            .suggest_interaction_profile_bindings(path(profile.path)?, &bindings)
            .map_err(call("xrSuggestInteractionProfileBindings"))
    }

    /// A vibration of `amplitude` (0..1) for `duration` on one hand, at the
    /// runtime's default frequency. Nothing happens where the hand has no
    /// haptic output bound.
    pub fn pulse<G: xr::Graphics>(
        &self,
        session: &xr::Session<G>,
        side: Side,
        amplitude: f32,
        duration: std::time::Duration,
    ) -> Result<(), XrError> {
        let event = xr::HapticVibration::new()
            .amplitude(amplitude.clamp(0.0, 1.0))
            .frequency(xr::FREQUENCY_UNSPECIFIED)
            .duration(xr::Duration::from_nanos(duration.as_nanos() as i64));
        self.haptic
            .apply_feedback(session, self.hands[side as usize], &event)
            .map_err(call("xrApplyHapticFeedback"))
    }

    /// The buttons and axes of one hand (after `xrSyncActions`).
    pub fn read<G: xr::Graphics>(
        &self,
        session: &xr::Session<G>,
        side: Side,
    ) -> Result<HandInputs, XrError> {
        let hand = self.hands[side as usize];
        let trigger = self
            .trigger
            .state(session, hand)
            .map_err(call("xrGetActionStateFloat"))?;
        let squeeze = self
            .squeeze
            .state(session, hand)
            .map_err(call("xrGetActionStateFloat"))?;
        let stick = self
            .thumbstick
            .state(session, hand)
            .map_err(call("xrGetActionStateVector2f"))?;
        let mut inputs = HandInputs {
            active: trigger.is_active,
            trigger: if trigger.is_active {
                trigger.current_state
            } else {
                0.0
            },
            squeeze: if squeeze.is_active {
                squeeze.current_state
            } else {
                0.0
            },
            buttons: 0,
            thumbstick: if stick.is_active {
                [stick.current_state.x, stick.current_state.y]
            } else {
                [0.0; 2]
            },
        };
        if inputs.squeeze >= TRIGGER_PRESSED {
            inputs.buttons |= buttons::GRIP;
        }
        for (action, bit) in [
            (&self.primary, buttons::A),
            (&self.secondary, buttons::B),
            (&self.menu, buttons::MENU),
            (&self.thumbstick_click, buttons::THUMBSTICK),
        ] {
            let s = action
                .state(session, hand)
                .map_err(call("xrGetActionStateBoolean"))?;
            inputs.active |= s.is_active;
            if s.is_active && s.current_state {
                inputs.buttons |= bit;
            }
        }
        Ok(inputs)
    }
}

/// The spaces every session tracks in: the base (STAGE where the runtime
/// has it, else LOCAL), the head (VIEW) and each hand's aim pose.
pub struct TrackingSpaces {
    /// Which reference space `base` is: STAGE or LOCAL.
    pub base_kind: xr::ReferenceSpaceType,
    /// The base reference space, which the head and hands are located in.
    pub base: xr::Space,
    /// The head's space (VIEW).
    pub view: xr::Space,
    /// Left, right.
    pub aim: [xr::Space; 2],
}

impl TrackingSpaces {
    /// Attaches `actions` to `session` and creates its tracking spaces.
    pub fn attach<G: xr::Graphics>(
        session: &xr::Session<G>,
        actions: &HandActions,
    ) -> Result<Self, XrError> {
        session
            .attach_action_sets(&[&actions.set])
            .map_err(call("xrAttachSessionActionSets"))?;
        let spaces = session
            .enumerate_reference_spaces()
            .map_err(call("xrEnumerateReferenceSpaces"))?;
        let base_kind = if spaces.contains(&xr::ReferenceSpaceType::STAGE) {
            xr::ReferenceSpaceType::STAGE
        } else {
            xr::ReferenceSpaceType::LOCAL
        };
        let base = session
            .create_reference_space(base_kind, xr::Posef::IDENTITY)
            .map_err(call("xrCreateReferenceSpace"))?;
        let view = session
            .create_reference_space(xr::ReferenceSpaceType::VIEW, xr::Posef::IDENTITY)
            .map_err(call("xrCreateReferenceSpace (VIEW)"))?;
        let [left, right] = Side::BOTH.map(|side| {
            actions
                .aim
                .create_space(session, actions.hands[side as usize], xr::Posef::IDENTITY)
        });
        let aim = [
            left.map_err(call("xrCreateActionSpace"))?,
            right.map_err(call("xrCreateActionSpace"))?,
        ];
        Ok(Self {
            base_kind,
            base,
            view,
            aim,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every profile binds the aim pose and the trigger of both hands (the
    /// tool tip and the press every tool needs), and no component twice.
    #[test]
    fn every_profile_binds_the_tool_tip_and_the_trigger_of_both_hands() {
        for p in PROFILES {
            for needed in [Input::Aim, Input::Trigger] {
                let row = p.bindings.iter().find(|(i, _, _)| *i == needed);
                let (_, l, r) = row.unwrap_or_else(|| panic!("{} lacks {needed:?}", p.path));
                assert!(l.is_some() && r.is_some(), "{} {needed:?}", p.path);
            }
            let mut seen = std::collections::HashSet::new();
            for (_, l, r) in p.bindings {
                for (side, c) in [("l", l), ("r", r)] {
                    if let Some(c) = c {
                        assert!(seen.insert((side, *c)), "{} binds {c} twice", p.path);
                    }
                }
            }
        }
        let names: Vec<_> = PROFILES.iter().map(|p| p.path).collect();
        assert!(names.contains(&"/interaction_profiles/khr/simple_controller"));
        assert!(names.contains(&"/interaction_profiles/valve/index_controller"));
        assert!(names.contains(&"/interaction_profiles/oculus/touch_controller"));
        assert!(names.contains(&"/interaction_profiles/htc/vive_controller"));
        assert!(names.contains(&"/interaction_profiles/microsoft/motion_controller"));
        // Every profile can vibrate both hands (the tools' feedback).
        for p in PROFILES {
            let row = p.bindings.iter().find(|(i, _, _)| *i == Input::Haptic);
            assert!(
                row.is_some_and(|(_, l, r)| l.is_some() && r.is_some()),
                "{} lacks haptics",
                p.path
            );
        }
    }
}
