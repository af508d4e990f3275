//! The frame loop with scripted trackers and a recording renderer.

use super::*;
use crate::input::buttons;
use crate::kinematics::PosedBody;
use std::collections::VecDeque;

/// A root joint only.
fn root_only() -> Character {
    let mut c = crate::tools::empty_character("blob");
    c.skeleton.joints[0].offset = Vec3::new(0.0, 0.2, 0.0);
    c
}

/// Plays input frames (tracker space), repeating the last one.
struct Script {
    frames: VecDeque<InputFrame>,
    last: InputFrame,
    sequence: u64,
    /// Which parts each frame tracked (all once these run out).
    tracking: VecDeque<TrackedParts>,
    tracked: TrackedParts,
}

impl Script {
    fn new(frames: impl IntoIterator<Item = InputFrame>) -> Self {
        Self {
            frames: frames.into_iter().collect(),
            last: InputFrame::default(),
            sequence: 0,
            tracking: VecDeque::new(),
            tracked: TrackedParts::ALL,
        }
    }
}

impl Tracker for Script {
    fn sample(&mut self) -> TrackedPose {
        self.sequence += 1;
        // Each frame's input is taken by its first sample.
        if self.sequence % 2 == 1
            && let Some(f) = self.frames.pop_front()
        {
            self.last = f;
            self.tracked = self.tracking.pop_front().unwrap_or(TrackedParts::ALL);
        }
        TrackedPose {
            head: (Vec3::new(0.0, 1.6, 0.4), Quat::IDENTITY),
            input: self.last,
            sequence: self.sequence,
            sampled_at: Instant::now(),
        }
    }
    fn tracked(&self) -> TrackedParts {
        self.tracked
    }
}

/// Remembers what it was given.
#[derive(Default)]
struct Recorder {
    revisions: Vec<u64>,
    joints: Vec<usize>,
    heads: Vec<Vec3>,
    overlay: Vec<String>,
    views: Vec<crate::tools::ViewLayers>,
}

impl FrameRenderer for Recorder {
    fn render(&mut self, f: &FrameInputs) -> Result<RenderReport, RenderFailure> {
        self.revisions.push(f.snapshot.revision);
        self.joints.push(f.snapshot.character.skeleton.joints.len());
        self.heads.push(f.head.0);
        self.overlay = f.overlay.to_vec();
        self.views.push(f.view);
        Ok(RenderReport {
            cpu_encode: Duration::ZERO,
            submitted_at: Instant::now(),
        })
    }
}

fn frame_until(
    fl: &mut FrameLoop,
    tracker: &mut Script,
    r: &mut Recorder,
    ok: impl Fn(&Recorder) -> bool,
) {
    let start = Instant::now();
    while !ok(r) {
        assert!(start.elapsed() < Duration::from_secs(60), "never rendered");
        fl.frame(tracker, r).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn tools_act_in_world_space_and_edits_flow_to_the_snapshot() {
    let mut fl = FrameLoop::new(root_only(), SolverSettings::default());
    fl.set_tool(ToolKind::Sphere).unwrap();
    // The vehicle: the user stands 2 m back and turned a quarter left.
    let vehicle = Mat4::from_rotation_translation(
        Quat::from_rotation_y(std::f32::consts::FRAC_PI_2),
        Vec3::new(0.0, 0.0, 2.0),
    );
    fl.fly(vehicle);
    let tip = Vec3::new(0.3, 0.5, -0.2);
    let hand = |pressed: bool, left: u32| InputFrame {
        time: 0.0,
        right: HandState::at(tip).with_trigger(pressed),
        left: HandState::default().with_buttons(left),
    };
    let mut tracker = Script::new([hand(false, 0), hand(true, 0), hand(false, 0)]);
    let mut r = Recorder::default();
    for _ in 0..3 {
        fl.frame(&mut tracker, &mut r).unwrap();
    }
    assert_eq!(fl.vehicle(), vehicle);
    // A joint where the hand is in the world, not in the tracker.
    let c = fl.character();
    assert_eq!(c.skeleton.joints.len(), 2);
    let body = PosedBody::new(c, fl.history().posture());
    let at: Vec3 = body.joints[1].translation.into();
    let want = vehicle.transform_point3(tip);
    assert!(at.distance(want) < 1e-4, "joint at {at}, hand at {want}");
    // The head handed to the renderer is in the world too.
    let head = *r.heads.last().unwrap();
    assert!(head.distance(vehicle.transform_point3(Vec3::new(0.0, 1.6, 0.4))) < 1e-4);
    // The edit reaches the simulation and comes back in a snapshot.
    let rev = fl.history().revision();
    frame_until(&mut fl, &mut tracker, &mut r, |r| {
        r.revisions.last() == Some(&rev)
    });
    assert_eq!(r.joints.last(), Some(&2));
    // Left A undoes (handled by the toolbox), and that flows too.
    tracker
        .frames
        .extend([hand(false, buttons::A), hand(false, 0)]);
    fl.frame(&mut tracker, &mut r).unwrap();
    fl.frame(&mut tracker, &mut r).unwrap();
    assert_eq!(fl.character().skeleton.joints.len(), 1);
    let rev = fl.history().revision();
    frame_until(&mut fl, &mut tracker, &mut r, |r| {
        r.revisions.last() == Some(&rev)
    });
    assert_eq!(r.joints.last(), Some(&1));
    assert!(r.overlay[0].starts_with("render "), "{:?}", r.overlay);
    assert_eq!(fl.log().len(), r.revisions.len());
}

/// A sphere drawn out to 5 cm, then the controller loses tracking with
/// the trigger held (the tracker keeps its last pose; the runtime reads
/// the trigger as held, or as released) and comes back 40 cm away,
/// trigger still down: the sphere keeps its 5 cm, no second joint is
/// made, the user is told once, and one undo removes it all.
#[test]
fn a_controller_lost_mid_drag_lets_go_where_it_was_last_seen() {
    for lost_reads_held in [true, false] {
        lost_mid_drag(lost_reads_held);
    }
}

fn lost_mid_drag(lost_reads_held: bool) {
    let mut fl = FrameLoop::new(root_only(), SolverSettings::default());
    fl.set_tool(ToolKind::Sphere).unwrap();
    let tip = Vec3::new(0.3, 0.5, -0.2);
    let at = |x: f32, pressed: bool| InputFrame {
        time: 0.0,
        right: HandState::at(tip + Vec3::X * x).with_trigger(pressed),
        left: HandState::default(),
    };
    let lost = TrackedParts {
        right: false,
        ..TrackedParts::ALL
    };
    let all = TrackedParts::ALL;
    let mut tracker = Script::new([
        at(0.0, true),
        at(0.05, true),
        at(0.05, lost_reads_held),
        at(0.05, lost_reads_held),
        at(0.4, true),
        at(0.4, true),
        at(0.4, false),
    ]);
    tracker.tracking = [all, all, lost, lost, all, all, all].into();
    let mut r = Recorder::default();
    let radius = |fl: &FrameLoop| match fl.character().muscles.last().unwrap().shape.primitive {
        crate::shape::Primitive::Sphere { radius } => radius,
        ref p => panic!("a sphere muscle, not {p:?}"),
    };
    let revision = fl.history().revision();
    let mut messages = Vec::new();
    for _ in 0..7 {
        fl.frame(&mut tracker, &mut r).unwrap();
        messages.extend(fl.take_panel_messages());
    }
    assert_eq!(
        fl.character().skeleton.joints.len(),
        2,
        "one joint, not two"
    );
    assert!(
        (radius(&fl) - 0.05).abs() < 1e-4,
        "the radius where the hand was last seen: {}",
        radius(&fl)
    );
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(
        messages[0].contains("right controller lost tracking"),
        "{messages:?}"
    );
    assert!(fl.history().revision() > revision);
    // One undo takes the whole gesture back.
    tracker.frames.extend([
        InputFrame {
            left: HandState::default().with_buttons(buttons::A),
            ..at(0.4, false)
        },
        at(0.4, false),
    ]);
    fl.frame(&mut tracker, &mut r).unwrap();
    fl.frame(&mut tracker, &mut r).unwrap();
    assert_eq!(fl.character().skeleton.joints.len(), 1);
    assert!(fl.character().muscles.is_empty());
}

#[test]
fn skin_tools_see_the_simulated_skin() {
    let c = crate::samples::shipped_penguin();
    let file_positions = c.skins[0].points.position.clone();
    let mut fl = FrameLoop::new(c, SolverSettings::default());
    let mut tracker = Script::new([]);
    let mut r = Recorder::default();
    // With the selection tool the edit side's skin is left alone.
    frame_until(&mut fl, &mut tracker, &mut r, |r| r.revisions.len() > 20);
    assert_eq!(fl.character().skins[0].points.position, file_positions);
    // The skin tool copies in the newest snapshot of this revision.
    fl.set_tool(ToolKind::Skin).unwrap();
    fl.frame(&mut tracker, &mut r).unwrap();
    let synced = fl.synced_sequence;
    assert!(synced > 0);
    let snap = fl.sim().latest();
    if snap.sequence == synced {
        assert_eq!(
            fl.character().skins[0].points.position,
            snap.skins[0].positions
        );
    }
    assert_ne!(fl.character().skins[0].points.position, file_positions);
    assert_eq!(
        fl.history().revision(),
        0,
        "a copy of simulation state, not an edit"
    );
}

/// The bare penguin on FEM flesh in a frame loop (its panel's symmetry
/// on when `symmetric`), run until the simulation has built the flesh.
fn fem_penguin_loop(symmetric: bool) -> (FrameLoop, Script, Recorder) {
    use crate::character::{FemFlesh, Flesh};
    let mut c = crate::samples::bare("penguin").unwrap();
    c.flesh = Flesh::Fem(FemFlesh::default());
    let mut fl = FrameLoop::new(c, SolverSettings::default());
    if symmetric {
        fl.panel_mut().panel.symmetry = Some(crate::tools::Symmetry::x());
    }
    let mut tracker = Script::new([]);
    let mut r = Recorder::default();
    let start = Instant::now();
    while fl.sim.latest().flesh.is_none() {
        assert!(start.elapsed() < Duration::from_secs(60), "no flesh");
        fl.frame(&mut tracker, &mut r).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    (fl, tracker, r)
}

/// Grip the FEM penguin's belly, pull it 3 cm, press A: the pulled shape
/// is kept as a dynamic morph target at this posture, in one undo step;
/// left A takes it back. A with nothing held keeps nothing.
#[test]
fn a_on_the_gripped_flesh_keeps_a_morph_target_in_one_undo_step() {
    let (mut fl, mut tracker, mut r) = fem_penguin_loop(false);
    let hand = |at: Vec3, right: u32, left: u32| InputFrame {
        time: 0.0,
        right: HandState::at(at).with_buttons(right),
        left: HandState::default().with_buttons(left),
    };
    let front = Vec3::new(0.0, 0.2, 0.5);
    let pulled = front + Vec3::new(0.0, 0.0, 0.03);
    let (grip, a) = (buttons::GRIP, buttons::A);
    // A with nothing held.
    tracker
        .frames
        .extend([hand(front, a, 0), hand(front, 0, 0)]);
    fl.frame(&mut tracker, &mut r).unwrap();
    fl.frame(&mut tracker, &mut r).unwrap();
    let targets = |fl: &FrameLoop| fl.character().flesh.fem().unwrap().morph_targets.clone();
    assert!(targets(&fl).is_empty());
    let revision = fl.history().revision();
    tracker.frames.extend([
        hand(front, grip, 0),
        hand(pulled, grip, 0),
        hand(pulled, grip | a, 0),
        hand(pulled, grip, 0),
        hand(pulled, 0, 0),
    ]);
    for _ in 0..5 {
        fl.frame(&mut tracker, &mut r).unwrap();
    }
    let kept = targets(&fl);
    assert_eq!(
        kept.len(),
        1,
        "{:?}",
        kept.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    assert_eq!(kept[0].name, "pose 1");
    let largest = kept[0]
        .offsets
        .iter()
        .map(|o| o.offset.length())
        .fold(0.0, f32::max);
    let forward: f32 = kept[0].offsets.iter().map(|o| o.offset.z).sum();
    assert!(
        largest > 0.005 && forward > 0.0,
        "largest {largest} m, forward {forward}"
    );
    assert_eq!(fl.history().revision(), revision + 1, "one undo step");
    assert!(
        fl.toolbox()
            .state
            .notice
            .as_deref()
            .is_some_and(|n| n.contains("kept morph target 'pose 1'")),
        "{:?}",
        fl.toolbox().state.notice
    );
    // The status line shows the target's weight once the simulation has
    // rebuilt the flesh with it.
    frame_until(&mut fl, &mut tracker, &mut r, |r| {
        r.overlay.iter().any(|l| l == "morph: pose 1 1.00")
    });
    // Left A undoes it.
    tracker
        .frames
        .extend([hand(pulled, 0, a), hand(pulled, 0, 0)]);
    fl.frame(&mut tracker, &mut r).unwrap();
    fl.frame(&mut tracker, &mut r).unwrap();
    assert!(targets(&fl).is_empty());
}

/// The FEM penguin's flesh gripped beside the middle of its belly, pulled
/// 3 cm forward and kept with A, with the panel's symmetry on or off: the
/// kept target.
fn side_target(symmetric: bool) -> crate::character::MorphTarget {
    let (mut fl, mut tracker, mut r) = fem_penguin_loop(symmetric);
    let hand = |at: Vec3, right: u32| InputFrame {
        time: 0.0,
        right: HandState::at(at).with_buttons(right),
        left: HandState::default(),
    };
    let side = Vec3::new(0.06, 0.2, 0.5);
    let pulled = side + Vec3::new(0.0, 0.0, 0.03);
    let (grip, a) = (buttons::GRIP, buttons::A);
    tracker.frames.extend([
        hand(side, grip),
        hand(pulled, grip),
        hand(pulled, grip | a),
        hand(pulled, grip),
        hand(pulled, 0),
    ]);
    for _ in 0..5 {
        fl.frame(&mut tracker, &mut r).unwrap();
    }
    let notice = fl.toolbox().state.notice.clone().unwrap_or_default();
    assert!(notice.contains("kept morph target"), "{notice}");
    assert_eq!(notice.contains("mirrored"), symmetric, "{notice}");
    let kept = fl.character().flesh.fem().unwrap().morph_targets.clone();
    assert_eq!(kept.len(), 1);
    kept[0].clone()
}

/// Under symmetry a target kept from a pull beside the mirror plane is
/// pulled on both sides alike (LEMAN §6.1's mirrored edits): the forward
/// displacement of the points on either side of x = 0 agrees within 1 %,
/// and sideways they mirror; without symmetry the pulled side moves at
/// least twice as far as the other.
#[test]
fn a_target_kept_under_symmetry_is_pulled_on_both_sides() {
    let sides = |t: &crate::character::MorphTarget| {
        let (mut right, mut left) = (Vec3::ZERO, Vec3::ZERO);
        for o in &t.offsets {
            if o.at.x > 1e-3 {
                right += o.offset;
            } else if o.at.x < -1e-3 {
                left += o.offset;
            }
        }
        (right, left)
    };
    let (right, left) = sides(&side_target(false));
    assert!(
        right.z > 2.0 * left.z.abs(),
        "one side pulled: {right} against {left}"
    );
    let (right, left) = sides(&side_target(true));
    assert!(right.z > 0.0, "{right}");
    assert!(
        (right.z - left.z).abs() < 0.01 * right.z,
        "forward alike: {right} and {left}"
    );
    assert!(
        (right.x + left.x).abs() < 0.01 * right.length(),
        "sideways mirrored: {right} and {left}"
    );
}

/// The push gesture as a script plays it: the right hand with PUSH held
/// at the kinematic penguin's belly; the frames send the push, the status
/// line shows it, the user is told the skeleton won't respond; letting go
/// ends it. (Kinematic flesh holds the skin on the fat over its muscles:
/// the hand moves only skin that bridges between them.)
#[test]
fn the_push_gesture_is_sent_shown_and_ends_on_release() {
    let c = crate::samples::shipped_penguin();
    let mut fl = FrameLoop::new(c, SolverSettings::default());
    let mut tracker = Script::new([]);
    let mut r = Recorder::default();
    let hand = |buttons: u32| InputFrame {
        time: 0.0,
        right: HandState::at(Vec3::new(0.0, 0.3, 0.14)).with_buttons(buttons),
        left: HandState::default(),
    };
    tracker.frames.push_back(hand(buttons::PUSH));
    frame_until(&mut fl, &mut tracker, &mut r, |r| {
        r.overlay.iter().any(|l| l.starts_with("push: "))
    });
    let start = Instant::now();
    while !fl
        .sim_status()
        .message
        .as_deref()
        .is_some_and(|m| m.contains("the skeleton does not respond"))
    {
        assert!(start.elapsed() < Duration::from_secs(60), "never told");
        fl.frame(&mut tracker, &mut r).unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    tracker.frames.push_back(hand(0));
    frame_until(&mut fl, &mut tracker, &mut r, |r| {
        !r.overlay.iter().any(|l| l.starts_with("push: "))
    });
}

/// The panel's view rows (the headset's way to the desk's F2, F4–F6, F8) set
/// the layers every frame is drawn with, and edit nothing.
#[test]
fn the_view_rows_set_the_layers_the_frames_are_drawn_with() {
    use crate::render::{MuscleStyle, SceneStyle};
    use crate::tools::{ControlPanel, MuscleView, Row, Side, ViewRow};
    let mut fl = FrameLoop::new(root_only(), SolverSettings::default());
    let mut tracker = Script::new([]);
    let mut r = Recorder::default();
    let row = |v: ViewRow| {
        ControlPanel::rows()
            .iter()
            .position(|&x| x == Row::View(v))
            .unwrap()
    };
    fl.press_panel_row(row(ViewRow::Xray), Side::Left, 0.5);
    fl.press_panel_row(row(ViewRow::Muscles), Side::Right, 0.5);
    fl.press_panel_row(row(ViewRow::Muscles), Side::Left, 0.5);
    fl.press_panel_row(row(ViewRow::Fat), Side::Left, 0.5);
    frame_until(&mut fl, &mut tracker, &mut r, |r| !r.views.is_empty());
    let view = *r.views.last().unwrap();
    assert!(view.xray);
    assert_eq!(
        view.muscles,
        MuscleView::Hidden,
        "translucent, opaque, hidden"
    );
    assert!(!view.wireframe && !view.bands);
    assert!(view.fat);
    let said = fl.take_panel_messages().join("\n");
    assert!(said.contains("x-ray (skin seen through) on"), "{said}");
    assert!(said.contains("muscles hidden"), "{said}");
    assert_eq!(fl.history().undo_depth(), 0, "a view is not an edit");
    let mut style = SceneStyle::default();
    crate::app::view_renderer::apply_view(&view, &mut style);
    assert!(style.xray && style.fat);
    assert_eq!(style.muscles, MuscleStyle::Hidden);
    assert_eq!(
        style.skeleton,
        SceneStyle::default().skeleton,
        "the rest stays"
    );
    // The desk's F5 changes the view without a press: the shown panel's
    // row follows at the next frame.
    fl.set_panel_anchor(PanelAnchor::LeftHand);
    fl.frame(&mut tracker, &mut r).unwrap();
    let tissue = row(ViewRow::Bands);
    assert!(
        fl.panel().lines[tissue].ends_with("off"),
        "{}",
        fl.panel().lines[tissue]
    );
    fl.panel_mut().panel.view.bands = true;
    fl.frame(&mut tracker, &mut r).unwrap();
    assert!(
        fl.panel().lines[tissue].ends_with("on"),
        "{}",
        fl.panel().lines[tissue]
    );
}
