//! The interactive tools driven by hand-written input frames (LEMAN §6.1–6.3):
//! a penguin built from nothing with the shape, skin and attach tools, then
//! simulated, edited with liposuction and posed with IK.

use glam::{Quat, Vec2, Vec3};
use plasticine::character::{Character, Dof};
use plasticine::input::{HandState, InputFrame, InputScript, buttons};
use plasticine::kinematics::PosedBody;
use plasticine::kinematics::forward_kinematics;
use plasticine::shape::Primitive;
use plasticine::skin::SkeletonDriver;
use plasticine::skin::{Simulation, SolverSettings};
use plasticine::tools::empty_character;
use plasticine::tools::{Command, History, Symmetry, ToolContext, ToolKind, Toolbox, run_script};
use std::sync::OnceLock;

const FRAME: f64 = 1.0 / 60.0;

/// A character, its history and a toolbox, fed one frame at a time.
struct Rig {
    c: Character,
    h: History,
    tools: Toolbox,
    t: f64,
    frames: Vec<InputFrame>,
    symmetry: Option<Symmetry>,
}

impl Rig {
    fn new(c: Character) -> Self {
        let h = History::new(&c);
        Self {
            c,
            h,
            tools: Toolbox::new(),
            t: 0.0,
            frames: Vec::new(),
            symmetry: None,
        }
    }

    fn with(c: Character, h: History) -> Self {
        Self {
            c,
            h,
            tools: Toolbox::new(),
            t: 0.0,
            frames: Vec::new(),
            symmetry: None,
        }
    }

    fn frame(&mut self, right: HandState, left: HandState) {
        self.t += FRAME;
        let f = InputFrame {
            time: self.t,
            right,
            left,
        };
        self.frames.push(f);
        let mut ctx = ToolContext {
            character: &mut self.c,
            history: &mut self.h,
            symmetry: self.symmetry.as_ref(),
        };
        self.tools.handle(&f, &mut ctx).unwrap();
    }

    fn tool(&mut self, kind: ToolKind) {
        let mut ctx = ToolContext {
            character: &mut self.c,
            history: &mut self.h,
            symmetry: None,
        };
        self.tools.set_tool(kind, &mut ctx).unwrap();
    }

    fn right(&mut self, hand: HandState) {
        self.frame(hand, HandState::default());
    }

    fn click(&mut self, at: Vec3) {
        self.right(HandState::at(at).with_trigger(true));
        self.right(HandState::at(at));
    }

    /// Press at `at`, hold still there for `frames` more frames, release.
    fn hold(&mut self, at: Vec3, frames: usize) {
        for _ in 0..=frames {
            self.right(HandState::at(at).with_trigger(true));
        }
        self.right(HandState::at(at));
    }

    /// Press at `from`, move in `steps` frames to `to` while turning the hand
    /// from identity to `turn`, release there.
    fn drag(&mut self, from: Vec3, to: Vec3, turn: Quat, steps: usize) {
        self.right(HandState::at(from).with_trigger(true));
        for s in 1..=steps {
            let a = s as f32 / steps as f32;
            let q = Quat::IDENTITY.slerp(turn, a);
            self.right(
                HandState::at(from.lerp(to, a))
                    .with_orientation(q)
                    .with_trigger(true),
            );
        }
        self.right(HandState::at(to).with_orientation(turn));
    }
}

/// Clockwise looking along the wand (which points along −z).
fn clockwise(deg: f32) -> Quat {
    Quat::from_axis_angle(Vec3::NEG_Z, deg.to_radians())
}

fn sphere_radius(c: &Character, k: usize) -> f32 {
    match c.muscles[k].shape.primitive {
        Primitive::Sphere { radius } => radius,
        ref p => panic!("muscle {k} is not a sphere: {p:?}"),
    }
}

/// The penguin, built from an empty character with the tools.
fn build_penguin() -> Rig {
    let mut r = Rig::new(empty_character("penguin"));
    r.tool(ToolKind::Select);
    r.click(Vec3::ZERO);
    assert_eq!(r.tools.state.current_joint, 0);

    r.tool(ToolKind::Sphere);
    r.tools.state.next_name = Some("belly".into());
    r.drag(
        Vec3::new(0.0, 0.35, 0.0),
        Vec3::new(0.17, 0.35, 0.0),
        Quat::IDENTITY,
        8,
    );

    r.tool(ToolKind::Superellipse);
    r.tools.state.next_name = Some("chest".into());
    // Translate to the corner (0.13, 0.12, 0.15) while twisting 45° clockwise.
    r.drag(
        Vec3::new(0.0, 0.6, 0.0),
        Vec3::new(0.13, 0.72, 0.15),
        clockwise(45.0),
        8,
    );
    // Press on the chest joint again and pitch the hand down 45°: only the
    // north–south exponent changes.
    let chest = Vec3::new(0.0, 0.6, 0.0);
    r.drag(
        chest,
        chest,
        Quat::from_axis_angle(Vec3::X, -45f32.to_radians()),
        6,
    );

    r.tool(ToolKind::Sphere);
    r.tools.state.next_name = Some("head".into());
    r.drag(
        Vec3::new(0.0, 0.82, 0.0),
        Vec3::new(0.0, 0.82, 0.09),
        Quat::IDENTITY,
        5,
    );
    r.tools.state.next_name = Some("crown".into());
    r.click(Vec3::new(0.0, 0.93, 0.0));

    r.tool(ToolKind::Skin);
    r.click(Vec3::ZERO);
    r.click(Vec3::new(0.0, 0.93, 0.0));
    r.right(HandState::default().with_buttons(buttons::A));
    r.right(HandState::default());
    r
}

#[test]
fn a_penguin_is_built_from_input_frames() {
    let r = build_penguin();
    let c = &r.c;
    let names: Vec<&str> = c.skeleton.joints.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["root", "belly", "chest", "head", "crown"]);
    let parents: Vec<Option<usize>> = c.skeleton.joints.iter().map(|j| j.parent).collect();
    assert_eq!(parents, [None, Some(0), Some(1), Some(2), Some(3)]);
    assert_eq!(c.muscles.len(), 4);
    assert!((sphere_radius(c, 0) - 0.17).abs() < 1e-4);
    assert!((sphere_radius(c, 2) - 0.09).abs() < 1e-4);
    assert!((sphere_radius(c, 3) - plasticine::tools::DEFAULT_RADIUS).abs() < 1e-6);
    match c.muscles[1].shape.primitive {
        Primitive::Superellipsoid { radii, exponents } => {
            assert!(
                radii.abs_diff_eq(Vec3::new(0.13, 0.12, 0.15), 1e-4),
                "radii {radii}"
            );
            // Twist +45° → e2 = 1 + 0.5·(2 − 1); pitch −45° → e1 = 1 − 0.5·(1 − 0.2).
            assert!(
                exponents.abs_diff_eq(Vec2::new(0.6, 1.5), 1e-3),
                "exponents {exponents}"
            );
        }
        ref p => panic!("chest is not a superellipsoid: {p:?}"),
    }
    assert_eq!(c.skins.len(), 1);
    let skin = &c.skins[0];
    assert_eq!(
        (skin.bottom_joint, skin.top_joint, skin.m, skin.n),
        (0, 4, 16, 16)
    );
    let bound = skin.points.band[skin.m..skin.m * (skin.n - 1)]
        .iter()
        .filter(|b| b.is_some())
        .count();
    assert_eq!(
        bound,
        skin.m * (skin.n - 2),
        "global attach binds every interior point"
    );
    // belly, chest, chest edit, head, crown, skin, attach: one step per gesture.
    assert_eq!(r.h.undo_depth(), 7);
}

/// The penguin after 1.5 s of simulation at rest, built once for the tests
/// that need a settled skin.
fn settled() -> &'static (Character, History) {
    static SETTLED: OnceLock<(Character, History)> = OnceLock::new();
    SETTLED.get_or_init(|| {
        let r = build_penguin();
        let driver = SkeletonDriver::Still(r.h.posture().clone());
        let mut sim = Simulation::new(r.c, driver, SolverSettings::default()).unwrap();
        let report = sim.advance_to(1.5, None).unwrap();
        assert!(!report.fell_behind && sim.time() >= 1.5 - 1e-9);
        (sim.character, r.h)
    })
}

#[test]
fn the_skin_settles_outside_the_muscles_by_the_fat_thickness() {
    let (c, h) = settled();
    let body = PosedBody::new(c, h.posture());
    let skin = &c.skins[0];
    let fat = skin.points.fat[0];
    let mut d: Vec<f32> = (skin.m..skin.m * (skin.n - 1))
        .map(|k| body.distance_to_muscles(skin.points.position[k]).unwrap().0)
        .collect();
    d.sort_by(f32::total_cmp);
    let median = d[d.len() / 2];
    eprintln!(
        "skin-muscle distance: min {} median {median} max {}",
        d[0],
        d[d.len() - 1]
    );
    assert!(
        (median - fat).abs() < 0.004,
        "median skin–muscle distance {median} m, fat {fat} m"
    );
    assert!(d[0] > 0.0, "a skin point is inside a muscle: {}", d[0]);
}

/// Holds the liposuction trigger on the skin point nearest `tip` for `frames`
/// frames with the hand twisted by `turn`; returns the touched point.
fn stroke(r: &mut Rig, tip: Vec3, turn: Quat, frames: usize) {
    r.tool(ToolKind::Liposuction);
    r.right(HandState::at(tip).with_trigger(true));
    for _ in 0..frames {
        r.right(HandState::at(tip).with_orientation(turn).with_trigger(true));
    }
    r.right(HandState::at(tip).with_orientation(turn));
}

/// The front-most point of the middle row, and a tip 1 cm in front of it.
fn stroke_target(c: &Character) -> (usize, Vec3) {
    let skin = &c.skins[0];
    let row = skin.n / 2;
    let k = (row * skin.m..(row + 1) * skin.m)
        .max_by(|&a, &b| {
            skin.points.position[a]
                .z
                .total_cmp(&skin.points.position[b].z)
        })
        .unwrap();
    (k, skin.points.position[k] + Vec3::new(0.0, 0.0, 0.01))
}

#[test]
fn liposuction_twist_injects_or_removes_a_gaussian_of_fat_and_undoes_in_one_step() {
    let (c, h) = settled();
    let mut r = Rig::with(c.clone(), h.clone());
    let (centre, tip) = stroke_target(&r.c);
    let before = r.c.skins[0].points.fat.clone();
    let depth = r.h.undo_depth();
    // Wider than the grid spacing (~7 cm around the belly) so the profile
    // can be checked at about one radius.
    r.tools.state.lipo_radius = 0.1;
    let n = 12;
    stroke(&mut r, tip, clockwise(60.0), n);
    assert_eq!(
        r.h.undo_depth(),
        depth + 1,
        "a held stroke is one undo step"
    );

    let st = &r.tools.state;
    let total = st.lipo_rate * FRAME as f32 * n as f32;
    let radius = st.lipo_radius;
    let pos = &r.c.skins[0].points.position;
    let after = &r.c.skins[0].points.fat;
    let delta = |k: usize| after[k] - before[k];
    assert!(
        (delta(centre) - total).abs() < 1e-3 * total,
        "centre rose {} m, expected {total} m",
        delta(centre)
    );
    let mut near_one_radius = 0;
    for k in 0..pos.len() {
        let d = pos[k].distance(pos[centre]);
        let expected = total * (-d * d / (2.0 * radius * radius)).exp();
        if d > 3.0 * radius {
            assert_eq!(after[k], before[k], "far point {k} at {d} m changed");
        } else {
            assert!(
                (delta(k) - expected).abs() < 1e-3 * total,
                "point {k} at {d} m rose {} m, Gaussian says {expected} m",
                delta(k)
            );
        }
        if (0.7 * radius..1.3 * radius).contains(&d) {
            near_one_radius += 1;
            assert!(delta(k) > 0.35 * total && delta(k) < 0.85 * total);
        }
    }
    assert!(near_one_radius > 0, "no point near one radius to check");

    r.h.undo(&mut r.c).unwrap();
    assert_eq!(
        r.c.skins[0].points.fat, before,
        "undo restores the exact fat"
    );

    stroke(&mut r, tip, clockwise(-60.0), n);
    let after = &r.c.skins[0].points.fat;
    assert!(
        (before[centre] - after[centre] - total.min(before[centre])).abs() < 1e-3 * total,
        "counter-clockwise removes: {} → {}",
        before[centre],
        after[centre]
    );
}

#[test]
fn the_paint_tool_paints_a_soft_spot_and_undoes_in_one_step() {
    // A held paint drag on the tool-built (unpainted) penguin
    // paints the panel's colour where the tip touches, falling off with the
    // brush radius; the whole drag is one undo step, and undoing it leaves
    // the skin unpainted again (as saved before).
    let (c, h) = settled();
    let mut r = Rig::with(c.clone(), h.clone());
    assert!(r.c.skins[0].points.color.is_empty(), "built unpainted");
    let (centre, tip) = stroke_target(&r.c);
    let depth = r.h.undo_depth();
    r.tools.state.lipo_radius = 0.1;
    let orange = plasticine::tools::PALETTE[2];
    assert_eq!(orange.0, "orange");
    r.tools.state.paint_color = orange.1;
    r.tool(ToolKind::Paint);
    r.hold(tip, 30);
    assert_eq!(r.h.undo_depth(), depth + 1, "a held drag is one undo step");
    let skin = &r.c.skins[0];
    let pos = &skin.points.position;
    let col = |k: usize| Vec3::from_array(skin.points.color[k]);
    let base = Vec3::from_array(plasticine::character::DEFAULT_SKIN_COLOR);
    let paint = Vec3::from_array(orange.1);
    // Each frame moves a point w = (PAINT_RATE/60)·exp(−d²/2r²) of the way
    // to the paint, so after 30 frames it is 1 − (1 − w)^30 along.
    let (mut near, mut mid) = (0, 0);
    for k in 0..pos.len() {
        let d = pos[k].distance(pos[centre]);
        // How far along from the skin tone towards the paint, on the line.
        let along = (col(k) - base).dot(paint - base) / (paint - base).length_squared();
        let off_line = (col(k) - base.lerp(paint, along)).length();
        assert!(off_line < 1e-4, "point {k} left the line: {}", col(k));
        if d > 3.0 * 0.1 {
            assert_eq!(col(k), base, "far point {k} at {d} m painted");
            continue;
        }
        let w = plasticine::tools::PAINT_RATE / 60.0 * (-d * d / (2.0 * 0.01)).exp();
        let want = 1.0 - (1.0 - w).powi(30);
        assert!(
            (along - want).abs() < 1e-3,
            "point {k} at {d} m: {along} along, want {want}"
        );
        if d < 0.03 {
            near += 1;
        } else if (0.09..0.11).contains(&d) {
            mid += 1;
        }
    }
    assert!(near > 0 && mid > 0, "{near} {mid}");
    assert!(1.0 - (1.0 - plasticine::tools::PAINT_RATE / 60.0).powi(30) > 0.98);

    let painted = r.c.skins[0].points.color.clone();
    r.h.undo(&mut r.c).unwrap();
    assert!(
        r.c.skins[0].points.color.is_empty(),
        "undo leaves it unpainted"
    );
    r.h.redo(&mut r.c).unwrap();
    assert_eq!(
        r.c.skins[0].points.color, painted,
        "redo paints it again, exactly"
    );
}

#[test]
fn under_symmetry_a_paint_stroke_is_mirrored() {
    let (c, h) = settled();
    let mut r = Rig::with(c.clone(), h.clone());
    r.symmetry = Some(Symmetry::x());
    // The side-most point of the middle row, and the tip 1 cm outside it.
    let skin = &r.c.skins[0];
    let row = skin.n / 2;
    let side = (row * skin.m..(row + 1) * skin.m)
        .max_by(|&a, &b| {
            skin.points.position[a]
                .x
                .total_cmp(&skin.points.position[b].x)
        })
        .unwrap();
    let at = skin.points.position[side];
    let mirror = (0..skin.points.len())
        .min_by(|&a, &b| {
            let m = Vec3::new(-at.x, at.y, at.z);
            skin.points.position[a]
                .distance(m)
                .total_cmp(&skin.points.position[b].distance(m))
        })
        .unwrap();
    r.tools.state.lipo_radius = 0.02;
    r.tools.state.paint_color = plasticine::tools::PALETTE[0].1;
    r.tool(ToolKind::Paint);
    let tip = at + Vec3::X * 0.01;
    r.hold(tip, 20);
    let lum = |k: usize| {
        let c = r.c.skins[0].points.color[k];
        0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]
    };
    assert!(
        lum(side) < 0.1 && lum(mirror) < 0.1,
        "{} and its mirror {}",
        lum(side),
        lum(mirror)
    );
    // The front, between the two strokes, keeps the skin tone.
    let (front, _) = stroke_target(&r.c);
    assert!(lum(front) > 0.6, "front {}", lum(front));
}

#[test]
fn ik_drag_of_the_head_reaches_the_target_within_joint_limits() {
    let (c, h) = settled();
    let mut r = Rig::with(c.clone(), h.clone());
    let limited = Dof {
        free: true,
        min: -0.3,
        max: 0.3,
    };
    let locked = Dof {
        free: false,
        min: -0.3,
        max: 0.3,
    };
    r.h.apply(
        &mut r.c,
        Command::SetDofs {
            joint: 2,
            dofs: [limited; 3],
        },
    )
    .unwrap();
    r.h.apply(
        &mut r.c,
        Command::SetDofs {
            joint: 1,
            dofs: [locked; 3],
        },
    )
    .unwrap();
    let depth = r.h.undo_depth();
    r.tool(ToolKind::Ik);
    let head = Vec3::new(0.0, 0.82, 0.0);
    let target = Vec3::new(0.06, 0.80, 0.03);
    r.right(HandState::at(head).with_trigger(true));
    for s in 1..=10 {
        r.right(HandState::at(head.lerp(target, s as f32 / 10.0)).with_trigger(true));
        assert!(r.tools.state.preview_posture.is_some());
    }
    assert_eq!(
        r.h.undo_depth(),
        depth,
        "nothing is applied during the drag"
    );
    r.right(HandState::at(target));
    assert_eq!(r.h.undo_depth(), depth + 1, "the drag is one SetPosture");

    let p = r.h.posture();
    let x = forward_kinematics(&r.c.skeleton, p);
    let reached: Vec3 = x[3].translation.into();
    assert!(
        reached.distance(target) < 2e-3,
        "head at {reached}, target {target}"
    );
    for (j, joint) in r.c.skeleton.joints.iter().enumerate() {
        for a in 0..3 {
            let dof = joint.dofs[a];
            let v = p.angles[j][a];
            assert!(
                v >= dof.min - 1e-6 && v <= dof.max + 1e-6,
                "joint {j} axis {a}: {v}"
            );
            if !dof.free {
                assert_eq!(v, 0.0, "locked joint {j} moved");
            }
        }
    }
    assert!(p.angles[2] != Vec3::ZERO, "the chest took part");
    // The hand did not turn, so neither did the head (it follows the hand's
    // rotation, here none, while the chest bends under it).
    let turned = Quat::from_mat3a(&x[3].matrix3).angle_between(Quat::from_mat3a(
        &forward_kinematics(&r.c.skeleton, h.posture())[3].matrix3,
    ));
    assert!(turned < 0.01, "the head turned by {turned} rad");
    r.h.undo(&mut r.c).unwrap();
    assert_eq!(r.h.posture(), h.posture(), "undo restores the posture");
}

#[test]
fn a_ron_script_round_trips_and_replays_with_buttons() {
    // Right B twice: Select → Sphere; create and drag a sphere; left A undoes
    // it; left B redoes it.
    let mut frames = Vec::new();
    let mut t = 0.0;
    let mut push = |right: HandState, left: HandState| {
        t += FRAME;
        frames.push(InputFrame {
            time: t,
            right,
            left,
        });
    };
    let idle = HandState::default();
    push(idle.with_buttons(buttons::B), idle);
    push(idle, idle);
    let from = Vec3::new(0.0, 0.3, 0.0);
    push(HandState::at(from).with_trigger(true), idle);
    for s in 1..=4 {
        let p = from + Vec3::new(0.025 * s as f32, 0.0, 0.0);
        push(HandState::at(p).with_trigger(true), idle);
    }
    push(HandState::at(from), idle);
    push(idle, idle.with_buttons(buttons::A));
    push(idle, idle);

    let script = InputScript::new(frames);
    let text = script.to_ron().unwrap();
    let back = InputScript::from_ron(&text).unwrap();
    assert_eq!(back, script);

    let (c, h) = run_script(empty_character("ball"), &back.frames).unwrap();
    assert_eq!(c.skeleton.joints.len(), 1, "left A undid the whole gesture");
    assert!(h.can_redo());

    let mut redo = back.frames.clone();
    redo.push(InputFrame {
        time: t + FRAME,
        right: idle,
        left: idle.with_buttons(buttons::B),
    });
    let (c, h) = run_script(empty_character("ball"), &redo).unwrap();
    assert_eq!(c.skeleton.joints.len(), 2);
    assert!((sphere_radius(&c, 0) - 0.1).abs() < 1e-5);
    assert_eq!(h.undo_depth(), 1);

    let wrong = text.replace("plasticine-input", "something-else");
    assert!(InputScript::from_ron(&wrong).is_err());
}

fn joint_world(c: &Character, h: &History, j: usize) -> Vec3 {
    forward_kinematics(&c.skeleton, h.posture())[j]
        .translation
        .into()
}

/// Joints made within a centimetre of the mirror plane land on it, and those
/// near the line continuing the current bone land on that line; farther away,
/// or with snapping off, they stay where the hand put them.
#[test]
fn new_joints_snap_to_the_mirror_plane_and_to_the_bone_axis() {
    let mut r = Rig::new(empty_character("snap"));
    r.symmetry = Some(Symmetry::x());
    r.tool(ToolKind::Sphere);
    let root = joint_world(&r.c, &r.h, 0);
    r.click(root + Vec3::new(0.006, 0.3, 0.0));
    let spine = r.c.skeleton.joints.len() - 1;
    let p = joint_world(&r.c, &r.h, spine);
    assert_eq!(p.x, 0.0, "on the mirror plane: {p}");
    assert_eq!(r.tools.state.snaps, 1, "the snap is counted for feedback");
    assert_eq!(
        r.c.skeleton.joints.len(),
        2,
        "a joint on the plane has no mirror twin"
    );

    // Off the plane's reach, along the bone root → spine, 7 mm aside: onto the axis.
    r.symmetry = None;
    r.click(root + Vec3::new(0.0, 0.5, 0.007));
    let neck = joint_world(&r.c, &r.h, 2);
    assert!(
        (neck - (root + Vec3::new(0.0, 0.5, 0.0))).length() < 1e-5,
        "on the bone axis: {neck}"
    );

    // 3 cm aside is a deliberate offset: kept.
    r.click(root + Vec3::new(0.03, 0.7, 0.0));
    let head = joint_world(&r.c, &r.h, 3);
    assert!(
        (head - (root + Vec3::new(0.03, 0.7, 0.0))).length() < 1e-5,
        "{head}"
    );

    // Snapping off: a joint 5 mm from the axis stays 5 mm from it.
    r.tools.state.snapping = false;
    r.tools.state.current_joint = 2;
    r.click(root + Vec3::new(0.005, 0.65, 0.0));
    let free = joint_world(&r.c, &r.h, 4);
    assert!((free.x - 0.005).abs() < 1e-5, "{free}");
}

/// Precision mode: the same hand drag makes a sphere a quarter the size.
#[test]
fn precision_mode_scales_the_hands_motion_down() {
    let radius_after_drag = |precise: bool| {
        let mut r = Rig::new(empty_character("precise"));
        r.tool(ToolKind::Sphere);
        r.tools.precision.enabled = precise;
        let at = joint_world(&r.c, &r.h, 0) + Vec3::new(0.0, 0.4, 0.0);
        r.right(HandState::at(at));
        r.right(HandState::at(at).with_trigger(true));
        for s in 1..=60 {
            let p = at + Vec3::new(0.12 * s as f32 / 60.0, 0.0, 0.0);
            r.right(HandState::at(p).with_trigger(true));
        }
        // Hold still while the smoothing settles, then release.
        for _ in 0..60 {
            r.right(HandState::at(at + Vec3::new(0.12, 0.0, 0.0)).with_trigger(true));
        }
        r.right(HandState::at(at + Vec3::new(0.12, 0.0, 0.0)));
        sphere_radius(&r.c, r.c.muscles.len() - 1)
    };
    let (normal, precise) = (radius_after_drag(false), radius_after_drag(true));
    assert!(normal > 0.1, "an ordinary 12 cm drag: radius {normal}");
    let ratio = precise / normal;
    assert!(
        (ratio - 0.25).abs() < 0.03,
        "precision radius {precise} vs {normal}: ratio {ratio}"
    );
}

/// A click that snaps keeps the default muscle: the drag is measured from
/// where the hand pressed, not from the snapped joint.
#[test]
fn a_snapped_click_keeps_the_default_radius() {
    let mut r = Rig::new(empty_character("snap-click"));
    r.symmetry = Some(Symmetry::x());
    r.tool(ToolKind::Sphere);
    let root = joint_world(&r.c, &r.h, 0);
    // Pressed and held still for a few frames, as a hand does.
    let at = root + Vec3::new(0.008, 0.3, 0.0);
    for _ in 0..5 {
        r.right(HandState::at(at).with_trigger(true));
    }
    r.right(HandState::at(at));
    assert_eq!(r.tools.state.snaps, 1);
    let k = r.c.muscles.len() - 1;
    assert_eq!(sphere_radius(&r.c, k), plasticine::tools::DEFAULT_RADIUS);
}

#[test]
fn a_deform_gesture_bends_and_twists_the_penguin_chest_in_one_step() {
    let mut r = build_penguin();
    let before = r.c.clone();
    let depth = r.h.undo_depth();
    r.tool(ToolKind::Deform);
    let chest = Vec3::new(0.0, 0.6, 0.0);
    r.drag(chest, chest + Vec3::new(0.02, 0.0, 0.0), clockwise(20.0), 8);
    assert_eq!(r.h.undo_depth(), depth + 1, "one gesture, one step");
    let shape = &r.c.muscles[1].shape;
    assert_eq!(shape.primitive, before.muscles[1].shape.primitive);
    let h = 0.15f32; // the chest's half-length along its local z
    let d = &shape.deformation;
    assert!(
        (d.bend - 2.0 * 0.02 / (h * h)).abs() < 0.02,
        "bend {}",
        d.bend
    );
    assert!(
        (d.twist - 20f32.to_radians() / h).abs() < 0.02,
        "twist {}",
        d.twist
    );
    assert_eq!(d.taper, Vec2::ZERO);
    shape.validate().unwrap();
    r.h.undo(&mut r.c).unwrap();
    assert!(r.c == before);
}

#[test]
fn the_skin_tool_rebinds_touched_skin_points_to_a_muscle_in_one_step() {
    let (c, h) = settled();
    let mut r = Rig::with(c.clone(), h.clone());
    r.tool(ToolKind::Skin);
    let (k, tip) = stroke_target(&r.c);
    let before = r.c.clone();
    let depth = r.h.undo_depth();
    let old = r.c.skins[0].points.band[k].expect("attached");
    let head = 2; // the head sphere, radius 0.09 at (0, 0.82, 0)
    assert_ne!(old.muscle, head);
    let release = Vec3::new(0.0, 0.82, 0.05);
    let gesture = |r: &mut Rig| {
        r.right(HandState::at(tip).with_trigger(true));
        let selected = r.tools.state.skin_selection.clone();
        for s in 1..=6 {
            r.right(HandState::at(tip.lerp(release, s as f32 / 6.0)).with_trigger(true));
        }
        r.right(HandState::at(release));
        selected
    };
    assert_eq!(gesture(&mut r), Some((0, vec![k])));
    assert_eq!(r.tools.state.skin_selection, None);
    assert_eq!(r.h.undo_depth(), depth + 1);
    let body = PosedBody::new(&r.c, r.h.posture());
    let mu = &body.muscles[head];
    let b = r.c.skins[0].points.band[k].unwrap();
    assert_eq!(b.muscle, head);
    let anchor = mu.to_world.transform_point3(b.anchor);
    assert!(
        anchor.distance(Vec3::new(0.0, 0.82, 0.09)) < 2e-3,
        "anchored at {anchor}, the head's point nearest the release"
    );
    let p = r.c.skins[0].points.position[k];
    assert!((b.rest_length - p.distance(anchor)).abs() < 1e-5);
    assert_eq!((b.ks, b.kd), (old.ks, old.kd));
    let changed = (0..r.c.skins[0].point_count())
        .filter(|&j| r.c.skins[0].points.band[j] != before.skins[0].points.band[j])
        .count();
    assert_eq!(changed, 1);
    r.h.undo(&mut r.c).unwrap();
    assert!(r.c == before, "undo restores the old band");

    // With a selection radius, the touched point's neighbours go along,
    // each anchored by its own offset; still one step.
    r.tools.state.rebind_radius = 0.08;
    let (skin, points) = gesture(&mut r).expect("a selection");
    assert_eq!((skin, points[0]), (0, k));
    assert!(points.len() > 2, "{points:?}");
    let s = &r.c.skins[0];
    for &j in &points {
        assert!(s.points.position[j].distance(s.points.position[k]) <= 0.08 + 1e-6);
        assert_eq!(s.points.band[j].unwrap().muscle, head, "point {j}");
    }
    let anchors: Vec<Vec3> = points
        .iter()
        .map(|&j| s.points.band[j].unwrap().anchor)
        .collect();
    assert!(anchors.windows(2).any(|w| w[0].distance(w[1]) > 1e-3));
    assert_eq!(r.h.undo_depth(), depth + 1);
    r.h.undo(&mut r.c).unwrap();
    assert!(r.c == before);
}

/// The paint tool on a muscle no skin covers (the penguin's feet): the
/// whole muscle moves 1 − (1 − w)^30 of the way to the paint in 30 frames
/// (w = `PAINT_RATE`/60), from the unpainted muscle red; one undo step
/// leaves it unpainted; under symmetry the other foot is painted the same.
#[test]
fn the_paint_tool_paints_an_uncovered_muscle_whole() {
    let mut c = plasticine::samples::shipped_penguin();
    for m in &mut c.muscles {
        m.color = None;
    }
    let foot = |c: &Character, name: &str| {
        let j = c.skeleton.find(name).unwrap();
        c.muscles.iter().position(|m| m.joint == j).unwrap()
    };
    let (left, right) = (foot(&c, "foot_l"), foot(&c, "foot_r"));
    let body = PosedBody::new(&c, &c.skeleton.rest_posture());
    let tip = body.muscles[left].center;
    let skin_colors: Vec<_> = c.skins.iter().map(|s| s.points.color.clone()).collect();
    let mut r = Rig::new(c);
    r.symmetry = Some(Symmetry::x());
    let depth = r.h.undo_depth();
    let blue = plasticine::tools::PALETTE
        .iter()
        .find(|p| p.0 == "blue")
        .unwrap()
        .1;
    r.tools.state.paint_color = blue;
    r.tool(ToolKind::Paint);
    r.hold(tip, 30);
    assert_eq!(r.h.undo_depth(), depth + 1, "a held drag is one undo step");
    let w = plasticine::tools::PAINT_RATE / 60.0;
    let want = Vec3::from_array(plasticine::character::DEFAULT_MUSCLE_COLOR)
        .lerp(Vec3::from_array(blue), 1.0 - (1.0 - w).powi(30));
    for k in [left, right] {
        let got = Vec3::from_array(r.c.muscles[k].color.expect("painted"));
        assert!((got - want).length() < 1e-3, "muscle {k}: {got} vs {want}");
    }
    let after: Vec<_> = r.c.skins.iter().map(|s| s.points.color.clone()).collect();
    assert_eq!(after, skin_colors, "no skin is painted");
    r.h.undo(&mut r.c).unwrap();
    assert_eq!(r.c.muscles[left].color, None);
    assert_eq!(r.c.muscles[right].color, None);
}
