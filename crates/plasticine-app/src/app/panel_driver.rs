//! The toolbar and parameters panel ([`ControlPanel`]) in a front end: where
//! it stands, what the pointer hits, and the trigger presses it takes away
//! from the tools.
//!
//! The panel lives in tracker space at a physical size (it is held, not
//! part of the world): above the left hand facing the head in the headset,
//! in two columns (tools and parameters; the timeline) so it stays a
//! hand-held size; fixed beside the screen's picture at the desk, in one. Each frame, before the
//! tools run, the right hand's pointer is tested against its rows. A
//! trigger press that starts on a row goes to the panel, and the tools see
//! the trigger released until it is let go, so pressing a button never
//! also creates a joint behind it.

use super::frame_log::FrameTimings;
use super::panel_ui::{PanelPainter, PanelPicture, column_left, controls_width, panel_size};
use super::plots::LivePlots;
use super::sim_thread::SimStatus;
use crate::input::InputFrame;
use crate::input::TrackedPose;
use crate::render::UiQuad;
use crate::tools::{
    ControlPanel, PAD, PanelHit, ROW_HEIGHT, Row, Side, TimelineRow, palette_cell, row_help_at,
};
use glam::{Mat4, Vec3};
use std::time::{Duration, Instant};

/// Where the panel stands.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum PanelAnchor {
    /// Not shown (scripts and tests that drive the tools alone).
    #[default]
    Hidden,
    /// Above the left hand, turned to face the head; the right wand points
    /// at it (the headset).
    LeftHand,
    /// Standing still in tracker space (`tracker_from_panel`, which may
    /// scale it), pointed at along the ray from the head through the right
    /// hand's tip (the desk's mouse ray).
    Fixed(Mat4),
    /// Where the right hand put it in the headset (`tracker_from_panel`),
    /// pointed at with the wand: grabbed off the left hand with the grip,
    /// and given back by letting go of it near the left hand.
    Placed(Mat4),
}

impl PanelAnchor {
    /// Whether it is the headset's panel (two columns, the wand points).
    pub fn is_headset(&self) -> bool {
        matches!(self, Self::LeftHand | Self::Placed(_))
    }
}

/// How near the left hand (m) a carried panel must be let go to follow it
/// again.
pub const GIVE_BACK_REACH: f32 = 0.15;

/// How far (m, tracker space) the pointer reaches the panel.
pub const PANEL_REACH: f32 = 2.0;

/// The panel's state in a front end.
#[derive(Clone, Debug, Default)]
pub struct PanelDriver {
    /// Where the panel stands.
    pub anchor: PanelAnchor,
    /// The panel's state: scope, symmetry, the touched skin point and the hovered row.
    pub panel: ControlPanel,
    /// Lines shown under the controls (status, messages); not clickable.
    pub status: Vec<String>,
    /// The controls' lines, as last built.
    pub lines: Vec<String>,
    /// A trigger press went to the panel and is still held.
    pressing: bool,
    was_triggered: bool,
    /// What presses did, oldest first; the front end shows and drains them.
    pub messages: Vec<String>,
    /// Presses taken so far (front ends give feedback when it grows).
    pub presses: u64,
    /// The half of the hovered row the pointer is on.
    hover_side: Option<Side>,
    /// How far along the hovered row the pointer is (0 left, 1 right).
    hover_fraction: Option<f32>,
    /// A press held on the scrubber: its row and the last fraction sought.
    dragging: Option<(usize, f32)>,
    /// The panel carried by the right hand's grip: its pose in the hand's
    /// frame.
    carrying: Option<Mat4>,
    was_gripped: bool,
    painter: PanelPainter,
    /// The solver's and the frames' last seconds.
    pub live: LivePlots,
    /// Whether the live plots are shown (in the headset under the
    /// timeline; at the desk in a column left of the panel).
    pub show_plots: bool,
    /// When the first live sample was recorded.
    epoch: Option<Instant>,
    /// The last picture (placed in panel space), when and for what it was
    /// painted.
    last_paint: Option<(Instant, PaintKey, UiQuad)>,
}

/// What a picture showed for the pointer and the rows: when it changes the
/// panel is repainted at once.
#[derive(Clone, Debug, PartialEq)]
struct PaintKey {
    lines: Vec<String>,
    hover: Option<(usize, Side)>,
    hover_cell: Option<usize>,
    pressed: bool,
    highlight: Option<usize>,
    anchor: PanelAnchor,
    plots: bool,
}

/// How often the panel is repainted while only its status lines and plots
/// move.
pub const REPAINT_EVERY: Duration = Duration::from_millis(33);

/// The headset panel's pixels per metre: a 12 mm row is 29 pixels, its
/// text about 18.
const HEADSET_PIXELS_PER_METRE: f32 = 2400.0;
/// The desk panel's (it is drawn at 0.6 of the headset's size or less).
const DESK_PIXELS_PER_METRE: f32 = 1600.0;

impl PanelDriver {
    /// A panel standing at `anchor`, with no lines built yet; the live
    /// plots are shown in the headset.
    pub fn new(anchor: PanelAnchor) -> Self {
        Self {
            anchor,
            show_plots: anchor.is_headset(),
            ..Self::default()
        }
    }

    /// Moves the panel to `anchor`. The live plots are shown by default in
    /// the headset, hidden at the desk (F7 shows them).
    pub fn set_anchor(&mut self, anchor: PanelAnchor) {
        let headset = |a: PanelAnchor| a.is_headset();
        if headset(anchor) != headset(self.anchor) {
            self.show_plots = headset(anchor);
        }
        self.anchor = anchor;
    }

    /// Records the simulation's `status` and the last frame's timings in the
    /// live plots, at `now`.
    pub fn record_live(&mut self, now: Instant, status: &SimStatus, last: Option<&FrameTimings>) {
        let epoch = *self.epoch.get_or_insert(now);
        let frame_ms = last.map_or(f64::NAN, |f| f.frame_time.as_secs_f64() * 1e3);
        self.live
            .record(now.duration_since(epoch).as_secs_f64(), status, frame_ms);
    }

    /// `tracker_from_panel` (of the first column) for `sample`, or `None`
    /// when hidden.
    pub fn pose(&self, sample: &TrackedPose) -> Option<Mat4> {
        match self.anchor {
            PanelAnchor::Hidden => None,
            // Sized by the controls alone, so the panel does not move when
            // a status line or a message comes or goes (they hang below).
            PanelAnchor::LeftHand => {
                let (width, height) = headset_layout();
                Some(left_hand_pose(
                    sample.input.left.position(),
                    sample.head.0,
                    width,
                    height,
                ))
            }
            PanelAnchor::Fixed(m) | PanelAnchor::Placed(m) => Some(m),
        }
    }

    /// The columns as (first row, rows): two in the headset, one at the desk.
    fn columns(&self) -> Vec<(usize, usize)> {
        let n = self.lines.len();
        match self.anchor {
            PanelAnchor::LeftHand | PanelAnchor::Placed(_) => {
                let split = ControlPanel::timeline_start().min(n);
                vec![(0, split), (split, n - split)]
            }
            _ => vec![(0, n)],
        }
    }

    /// The pointer ray (origin, direction) in tracker space.
    fn pointer(&self, sample: &TrackedPose) -> (Vec3, Vec3) {
        let right = &sample.input.right;
        match self.anchor {
            PanelAnchor::Fixed(_) => {
                let head = sample.head.0;
                (
                    head,
                    (right.position() - head).normalize_or(right.pointing()),
                )
            }
            _ => (right.position(), right.pointing()),
        }
    }

    /// Where (tracker space) the middle of `row` is, `fraction` of the way
    /// along its column's width: what to point at to press it.
    pub fn row_point(&self, sample: &TrackedPose, row: usize, fraction: f32) -> Option<Vec3> {
        let pose = self.pose(sample)?;
        let (c, (start, _)) = self
            .columns()
            .into_iter()
            .enumerate()
            .find(|(_, (start, rows))| (*start..start + rows).contains(&row))?;
        let y = -PAD - ((row - start) as f32 + 0.5) * ROW_HEIGHT;
        Some(column_pose(&pose, c).transform_point3(Vec3::new(fraction * controls_width(), y, 0.0)))
    }

    /// The row the pointer is on, if any.
    pub fn hit(&self, sample: &TrackedPose) -> Option<PanelHit> {
        let pose = self.pose(sample)?;
        let (origin, dir) = self.pointer(sample);
        self.columns()
            .into_iter()
            .enumerate()
            .find_map(|(c, (start, rows))| {
                let width = controls_width();
                ControlPanel::hit_rows(&column_pose(&pose, c), width, rows, origin, dir).map(|h| {
                    PanelHit {
                        row: start + h.row,
                        ..h
                    }
                })
            })
            .filter(|h| h.distance <= PANEL_REACH)
    }

    /// Before the tools run on `input` (world space, from `sample`): the
    /// hovered row, a press to act on, and the input the tools get (the
    /// trigger hidden while a panel press is held).
    pub fn before_tools(
        &mut self,
        sample: &TrackedPose,
        mut input: InputFrame,
        tool_busy: bool,
    ) -> (Option<PanelHit>, InputFrame) {
        let hit = self.hit(sample);
        self.carry(sample, &mut input, hit.is_some());
        self.panel.hover = hit.map(|h| h.row);
        self.hover_side = hit.map(|h| h.side);
        self.hover_fraction = hit.map(|h| h.fraction);
        let triggered = input.right.triggered();
        let went_down = triggered && !self.was_triggered;
        self.was_triggered = triggered;
        let mut press = None;
        if went_down
            && !tool_busy
            && let Some(h) = hit
        {
            self.pressing = true;
            self.presses += 1;
            press = Some(h);
            // The time tracks (the scrubber, the blend curve under it) and
            // the sliders follow the wand while held.
            let track = match ControlPanel::rows().get(h.row) {
                Some(Row::Timeline(TimelineRow::Scrubber | TimelineRow::BlendCurve)) => true,
                Some(r) => r.slider().is_some(),
                _ => false,
            };
            self.dragging = track.then_some((h.row, h.fraction));
        } else if let Some((row, fraction)) = self.dragging.filter(|_| triggered)
            && let Some(h) = hit.filter(|h| h.row == row && h.fraction != fraction)
        {
            // The playhead follows the wand along the scrubber while held.
            self.dragging = Some((row, h.fraction));
            press = Some(h);
        }
        if self.pressing {
            if !triggered {
                self.pressing = false;
                self.dragging = None;
            }
            input.right.trigger = 0.0;
        }
        (press, input)
    }

    /// The headset panel carried by the grip: squeezed while the wand
    /// points at the panel, the panel follows the right hand; let go, it
    /// stays where it is, or follows the left hand again when let go near
    /// it. The grip it takes is hidden from the tools.
    fn carry(&mut self, sample: &TrackedPose, input: &mut InputFrame, pointed: bool) {
        use crate::input::buttons::GRIP;
        if !self.anchor.is_headset() {
            self.carrying = None;
            return;
        }
        let right = &input.right;
        let gripped = right.held(GRIP);
        let before = std::mem::replace(&mut self.was_gripped, gripped);
        let went_down = gripped && !before;
        let hand = Mat4::from_rotation_translation(right.orientation(), right.position());
        match self.carrying {
            Some(offset) if gripped => self.anchor = PanelAnchor::Placed(hand * offset),
            Some(_) => {
                self.carrying = None;
                if let PanelAnchor::Placed(m) = self.anchor {
                    let (width, height) = headset_layout();
                    let grip_point = m.transform_point3(Vec3::new(0.5 * width, -height, 0.0));
                    if grip_point.distance(input.left.position()) <= GIVE_BACK_REACH {
                        self.anchor = PanelAnchor::LeftHand;
                        self.messages.push("panel back on the left hand".into());
                    } else {
                        self.messages.push(
                            "panel placed; grab it again and let go near the left hand to carry \
                             it there"
                                .into(),
                        );
                    }
                }
            }
            None if went_down && pointed => {
                if let Some(pose) = self.pose(sample) {
                    self.carrying = Some(hand.inverse() * pose);
                }
            }
            None => {}
        }
        if self.carrying.is_some() {
            input.right.buttons &= !GRIP;
        }
    }

    /// Whether a press is held on the scrubber, the blend curve or a slider
    /// (the playhead, a key, or the slider's value follows the wand).
    pub fn scrubbing(&self) -> bool {
        self.dragging.is_some()
    }

    /// The panel to draw, world space (`vehicle` = `world_from_tracker`),
    /// for the tracking sample the frame is drawn with; `highlight` is the
    /// current tool's row. The status lines and `extra` hang under the
    /// first column.
    ///
    /// The picture is repainted when what it shows for the pointer or the
    /// rows changes, else at most every [`REPAINT_EVERY`] (the plots and the
    /// timings move every frame; egui's layout costs about half a
    /// millisecond): in between, the last one moves with the panel.
    pub fn view(
        &mut self,
        sample: &TrackedPose,
        vehicle: &Mat4,
        (highlight, now): (Option<usize>, Instant),
        extra: &[String],
    ) -> Option<UiQuad> {
        let pose = self.pose(sample)?;
        // The rows are only looked up while the pointer is on the panel.
        let hovered_row = self
            .panel
            .hover
            .and_then(|r| ControlPanel::rows().get(r).copied());
        let hover_cell = match (hovered_row, self.hover_fraction) {
            (Some(Row::Palette(_)), Some(f)) => Some(palette_cell(f)),
            _ => None,
        };
        let key = PaintKey {
            lines: self.lines.clone(),
            hover: self.panel.hover.zip(self.hover_side),
            hover_cell,
            pressed: self.pressing,
            highlight,
            anchor: self.anchor,
            plots: self.show_plots,
        };
        if let Some((at, last_key, quad)) = &self.last_paint
            && now.duration_since(*at) < REPAINT_EVERY
            && *last_key == key
        {
            return Some(UiQuad {
                to_world: *vehicle * pose * quad.to_world,
                ..quad.clone()
            });
        }
        let columns = self.columns();
        let rows = ControlPanel::rows();
        // The first line says what the pointed-at row (or palette cell) does.
        let help = hovered_row
            .map(|r| row_help_at(r, self.hover_fraction.unwrap_or(0.5)))
            .filter(|h| !h.is_empty())
            .unwrap_or("point at a row: what it does shows here");
        let status: Vec<String> = std::iter::once(help.to_string())
            .chain(self.status.iter().cloned())
            .chain(extra.iter().cloned())
            .collect();
        let picture = PanelPicture {
            columns: &columns,
            rows: &rows,
            lines: &self.lines,
            status: &status,
            highlight,
            hover: self.panel.hover.zip(self.hover_side),
            hover_cell,
            pressed: self.pressing,
            plots: if self.show_plots {
                self.live.plots()
            } else {
                &[]
            },
            plots_apart: !self.anchor.is_headset(),
        };
        // At the desk the plots' column stands left of the controls, which
        // stay where the anchor puts them.
        let shift = if self.show_plots && picture.plots_apart {
            Mat4::from_translation(-Vec3::X * column_left(1))
        } else {
            Mat4::IDENTITY
        };
        let pixels_per_metre = match self.anchor {
            PanelAnchor::LeftHand | PanelAnchor::Placed(_) => HEADSET_PIXELS_PER_METRE,
            _ => DESK_PIXELS_PER_METRE,
        };
        let quad = self.painter.paint(&picture, shift, pixels_per_metre);
        let placed = UiQuad {
            to_world: *vehicle * pose * shift,
            ..quad.clone()
        };
        self.last_paint = Some((now, key, quad));
        Some(placed)
    }
}

/// Column `c`'s pose from the first's: side by side, left to right.
fn column_pose(first: &Mat4, c: usize) -> Mat4 {
    *first * Mat4::from_translation(Vec3::X * column_left(c))
}

/// The headset panel's size (m): two columns of controls, as tall as the
/// taller (the tools and parameters).
pub fn headset_layout() -> (f32, f32) {
    let split = ControlPanel::timeline_start();
    let size = panel_size(2, split.max(ControlPanel::rows().len() - split), 0);
    (size.x, size.y)
}

/// `tracker_from_panel` for a panel `width` × `height` (m) standing just
/// above the left hand, centred on it and turned to face the head, so it
/// reads from wherever the hand is.
pub fn left_hand_pose(hand: Vec3, head: Vec3, width: f32, height: f32) -> Mat4 {
    let anchor = hand + Vec3::Y * 0.05;
    let facing = (head - anchor).normalize_or(Vec3::Z);
    let right = Vec3::Y.cross(facing).normalize_or(Vec3::X);
    let up = facing.cross(right);
    let origin = anchor - right * (width * 0.5) + up * height;
    Mat4::from_cols(
        right.extend(0.0),
        up.extend(0.0),
        facing.extend(0.0),
        origin.extend(1.0),
    )
}

/// `tracker_from_panel` for the desk: the panel's top-right corner at the
/// top-right of the screen's picture (the timing overlay is at its
/// top-left), a centimetre in front of the glass, scaled by `scale`.
pub fn desk_pose(lower_left: Vec3, lower_right: Vec3, upper_left: Vec3, scale: f32) -> Mat4 {
    let right = (lower_right - lower_left).normalize_or(Vec3::X);
    let up = (upper_left - lower_left).normalize_or(Vec3::Y);
    let facing = right.cross(up).normalize_or(Vec3::Z);
    let width = controls_width();
    let upper_right = upper_left + (lower_right - lower_left);
    // A margin of 2 % of the picture's width: standing in front of the
    // glass, the panel is drawn a little larger than it is.
    let margin = 0.02 * lower_right.distance(lower_left);
    let origin = upper_right - right * (width * scale + margin) + facing * 0.01;
    Mat4::from_cols(
        (right * scale).extend(0.0),
        (up * scale).extend(0.0),
        (facing * scale).extend(0.0),
        origin.extend(1.0),
    )
}

/// The desk's panel anchor for a calibration: `desk_pose` scaled to fit
/// the picture's height, at most 0.6 of the headset's size (it is read from
/// half a metre, not held).
pub fn desk_panel_anchor(calibration: &crate::view::Calibration) -> PanelAnchor {
    let s = &calibration.screen;
    let rows = ControlPanel::rows().len() as f32 + 1.0;
    let height = s.upper_left.distance(s.lower_left);
    let scale = (0.8 * height / (rows * ROW_HEIGHT)).min(0.6);
    // Below the timing overlay's band at the top of the picture.
    let down = (s.lower_left - s.upper_left) * 0.1;
    PanelAnchor::Fixed(desk_pose(
        s.lower_left,
        s.lower_right,
        s.upper_left + down,
        scale,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::HandState;
    use crate::tools::Side;
    use glam::{Quat, Vec4};
    use std::sync::Arc;

    fn sample(head: Vec3, left: Vec3, right: HandState) -> TrackedPose {
        TrackedPose {
            head: (head, Quat::IDENTITY),
            input: InputFrame {
                time: 0.0,
                right,
                left: HandState::at(left),
            },
            sequence: 0,
            sampled_at: Instant::now(),
        }
    }

    /// A wand aimed from `from` at the middle of `row`, on `side`.
    fn aim_at(d: &PanelDriver, s: &TrackedPose, row: usize, side: Side, from: Vec3) -> HandState {
        let pose = d.pose(s).unwrap();
        let width = controls_width();
        let x = match side {
            Side::Left => 0.2 * width,
            Side::Right => 0.8 * width,
        };
        let y = -PAD - (row as f32 + 0.5) * ROW_HEIGHT;
        let target = pose.transform_point3(Vec3::new(x, y, 0.0));
        let dir = (target - from).normalize();
        HandState::at(from).with_orientation(Quat::from_rotation_arc(Vec3::NEG_Z, dir))
    }

    fn driver() -> PanelDriver {
        let mut d = PanelDriver::new(PanelAnchor::LeftHand);
        d.lines = (0..20).map(|k| format!("row {k} of the panel")).collect();
        d
    }

    #[test]
    fn a_press_on_a_row_goes_to_the_panel_and_the_tools_never_see_it() {
        let mut d = driver();
        let (head, left) = (Vec3::new(0.0, 1.6, 0.0), Vec3::new(-0.2, 1.1, -0.35));
        let s0 = sample(head, left, HandState::at(Vec3::ZERO));
        let wand = aim_at(&d, &s0, 4, Side::Right, Vec3::new(0.15, 1.2, -0.2));
        let s = sample(head, left, wand);
        // Hover first.
        let (press, input) = d.before_tools(&s, s.input, false);
        assert_eq!((press.is_none(), d.panel.hover), (true, Some(4)));
        assert!(!input.right.triggered());
        // Pull: one press on row 4's right half; the tools see no trigger.
        let pulled = sample(head, left, wand.with_trigger(true));
        let (press, input) = d.before_tools(&pulled, pulled.input, false);
        assert_eq!(press.map(|h| (h.row, h.side)), Some((4, Side::Right)));
        assert!(!input.right.triggered());
        // Held and moved off the panel: still hidden, no second press.
        let off = sample(
            head,
            left,
            HandState::at(Vec3::new(1.0, 1.0, 1.0)).with_trigger(true),
        );
        let (press, input) = d.before_tools(&off, off.input, false);
        assert!(press.is_none());
        assert!(!input.right.triggered());
        // Released, then pressed off the panel: the tools get it.
        let released = sample(head, left, HandState::at(Vec3::new(1.0, 1.0, 1.0)));
        d.before_tools(&released, released.input, false);
        let (press, input) = d.before_tools(&off, off.input, false);
        assert!(press.is_none());
        assert!(input.right.triggered());
        assert_eq!(d.presses, 1);
    }

    #[test]
    fn the_grip_carries_the_panel_off_the_left_hand_and_back() {
        use crate::input::buttons::GRIP;
        let mut d = driver();
        let (head, left) = (Vec3::new(0.0, 1.6, 0.0), Vec3::new(-0.2, 1.1, -0.35));
        let s0 = sample(head, left, HandState::at(Vec3::ZERO));
        let on_hand = d.pose(&s0).unwrap();
        let wand = aim_at(&d, &s0, 4, Side::Right, Vec3::new(0.15, 1.2, -0.2));
        // The grip away from the panel is the tools'.
        let away = HandState::at(Vec3::new(1.0, 1.0, 1.0)).with_buttons(GRIP);
        let s = sample(head, left, away);
        let (_, input) = d.before_tools(&s, s.input, false);
        assert!(input.right.held(GRIP));
        assert_eq!(d.anchor, PanelAnchor::LeftHand);
        let s = sample(head, left, HandState::at(Vec3::ZERO));
        d.before_tools(&s, s.input, false);
        // Squeezed while pointing at it: the panel goes with the right hand
        // (20 cm right and 10 cm up), the tools never see that grip.
        let s = sample(head, left, wand.with_buttons(GRIP));
        let (_, input) = d.before_tools(&s, s.input, false);
        assert!(!input.right.held(GRIP));
        let moved = HandState {
            pose: (
                wand.position() + Vec3::new(0.2, 0.1, 0.0),
                wand.orientation(),
            ),
            ..wand
        }
        .with_buttons(GRIP);
        let s = sample(head, left, moved);
        let (_, input) = d.before_tools(&s, s.input, false);
        assert!(!input.right.held(GRIP));
        let PanelAnchor::Placed(m) = d.anchor else {
            panic!("carried: {:?}", d.anchor);
        };
        let shift = m.w_axis.truncate() - on_hand.w_axis.truncate();
        assert!(
            (shift - Vec3::new(0.2, 0.1, 0.0)).length() < 1e-4,
            "{shift}"
        );
        // Let go there: it stays, and the left hand moving does not take it.
        let s = sample(head, left, moved.with_buttons(0));
        d.before_tools(&s, s.input, false);
        let s = sample(head, left + Vec3::X, HandState::at(Vec3::ZERO));
        d.before_tools(&s, s.input, false);
        assert_eq!(d.pose(&s), Some(m), "placed");
        assert!(d.messages.last().unwrap().starts_with("panel placed"));
        // The wand still presses its rows where it stands now.
        let wand = aim_at(&d, &s, 4, Side::Right, Vec3::new(0.35, 1.3, -0.2));
        let s = sample(head, left, wand.with_trigger(true));
        let (press, _) = d.before_tools(&s, s.input, false);
        assert_eq!(press.map(|h| h.row), Some(4));
        let s = sample(head, left, wand);
        d.before_tools(&s, s.input, false);
        // Grabbed again and let go near the left hand: back on it.
        let s = sample(head, left, wand.with_buttons(GRIP));
        d.before_tools(&s, s.input, false);
        let (width, height) = headset_layout();
        let grip_point = m.transform_point3(Vec3::new(0.5 * width, -height, 0.0));
        let s = sample(head, grip_point + Vec3::X * 0.05, wand);
        d.before_tools(&s, s.input, false);
        assert_eq!(d.anchor, PanelAnchor::LeftHand);
        assert_eq!(d.messages.last().unwrap(), "panel back on the left hand");
    }

    #[test]
    fn a_gesture_in_progress_keeps_the_trigger_even_over_the_panel() {
        let mut d = driver();
        let (head, left) = (Vec3::new(0.0, 1.6, 0.0), Vec3::new(-0.2, 1.1, -0.35));
        let s0 = sample(head, left, HandState::at(Vec3::ZERO));
        let wand = aim_at(&d, &s0, 2, Side::Left, Vec3::new(0.1, 1.3, -0.2)).with_trigger(true);
        let s = sample(head, left, wand);
        let (press, input) = d.before_tools(&s, s.input, true);
        assert!(press.is_none());
        assert!(input.right.triggered());
    }

    #[test]
    fn the_left_hand_panel_faces_the_head_above_the_hand() {
        let (head, hand) = (Vec3::new(0.0, 1.6, 0.0), Vec3::new(-0.3, 1.0, -0.4));
        let m = left_hand_pose(hand, head, 0.2, 0.3);
        let normal = m.transform_vector3(Vec3::Z);
        let centre = m.transform_point3(Vec3::new(0.1, -0.15, 0.0));
        assert!(normal.dot((head - centre).normalize()) > 0.95);
        // The bottom edge is just above the hand, the panel centred on it.
        let bottom = m.transform_point3(Vec3::new(0.1, -0.3, 0.0));
        assert!((bottom - (hand + Vec3::Y * 0.05)).length() < 1e-5);
        assert!(centre.y > hand.y);
    }

    #[test]
    fn at_the_desk_the_mouse_ray_from_the_head_picks_the_row() {
        let (ll, lr, ul) = (
            Vec3::new(-0.26, -0.15, 0.0),
            Vec3::new(0.26, -0.15, 0.0),
            Vec3::new(-0.26, 0.15, 0.0),
        );
        let mut d = PanelDriver::new(PanelAnchor::Fixed(desk_pose(ll, lr, ul, 0.6)));
        d.lines = (0..20).map(|k| format!("row {k}")).collect();
        let head = Vec3::new(0.05, 0.0, 0.6);
        // The mouse hand is on the ray from the head, behind the glass.
        let s0 = sample(head, Vec3::ZERO, HandState::at(Vec3::ZERO));
        let pose = d.pose(&s0).unwrap();
        let y = -PAD - 7.5 * ROW_HEIGHT;
        let target = pose.transform_point3(Vec3::new(0.01, y, 0.0));
        let tip = head + (target - head) * 1.6;
        let s = sample(head, Vec3::ZERO, HandState::at(tip));
        assert_eq!(d.hit(&s).map(|h| (h.row, h.side)), Some((7, Side::Left)));
    }

    #[test]
    fn the_playhead_follows_the_wand_along_the_scrubber_while_the_trigger_is_held() {
        let mut d = PanelDriver::new(PanelAnchor::LeftHand);
        d.lines = vec![String::new(); ControlPanel::rows().len()];
        let scrubber = ControlPanel::rows()
            .iter()
            .position(|&r| r == Row::Timeline(TimelineRow::Scrubber))
            .unwrap();
        let (head, left) = (Vec3::new(0.0, 1.6, 0.0), Vec3::new(-0.2, 1.1, -0.35));
        let s0 = sample(head, left, HandState::at(Vec3::ZERO));
        let from = Vec3::new(0.1, 1.3, -0.1);
        let geometry = d.clone();
        let wand = |row: usize, f: f32, trigger: bool| {
            let target = geometry.row_point(&s0, row, f).unwrap();
            let hand = HandState::at(from)
                .with_orientation(Quat::from_rotation_arc(
                    Vec3::NEG_Z,
                    (target - from).normalize(),
                ))
                .with_trigger(trigger);
            sample(head, left, hand)
        };
        let step = |d: &mut PanelDriver, s: TrackedPose| {
            d.before_tools(&s, s.input, false)
                .0
                .map(|h| (h.row, h.fraction))
        };
        let near = |got: Option<(usize, f32)>, f: f32| {
            got.is_some_and(|(row, g)| row == scrubber && (g - f).abs() < 1e-3)
        };
        let pressed = step(&mut d, wand(scrubber, 0.2, true));
        assert!(near(pressed, 0.2), "{pressed:?}");
        // Held and moved along the row: it seeks again, once per move.
        let moved = step(&mut d, wand(scrubber, 0.7, true));
        assert!(near(moved, 0.7), "{moved:?}");
        assert_eq!(step(&mut d, wand(scrubber, 0.7, true)), None);
        // Held onto another row: nothing; released: nothing.
        assert_eq!(step(&mut d, wand(scrubber + 1, 0.5, true)), None);
        assert_eq!(step(&mut d, wand(scrubber, 0.4, false)), None);
        // Hovering along it without the trigger seeks nothing either.
        assert_eq!(step(&mut d, wand(scrubber, 0.9, false)), None);
        // A press held on another row does not drag.
        let other = scrubber + 2;
        assert!(step(&mut d, wand(other, 0.8, true)).is_some());
        assert_eq!(step(&mut d, wand(other, 0.9, true)), None);
        // The blend curve under the scrubber drags as it does.
        let curve = scrubber + 1;
        assert_eq!(
            ControlPanel::rows()[curve],
            Row::Timeline(TimelineRow::BlendCurve)
        );
        assert_eq!(step(&mut d, wand(curve, 0.3, false)), None);
        let on_curve = |got: Option<(usize, f32)>, f: f32| {
            got.is_some_and(|(row, g)| row == curve && (g - f).abs() < 1e-3)
        };
        let pressed = step(&mut d, wand(curve, 0.3, true));
        assert!(on_curve(pressed, 0.3), "{pressed:?}");
        let moved = step(&mut d, wand(curve, 0.6, true));
        assert!(on_curve(moved, 0.6), "{moved:?}");
        // So does the blend weight slider.
        let slider = ControlPanel::rows()
            .iter()
            .position(|&r| r == Row::Param(crate::tools::Param::BlendWeight))
            .unwrap();
        assert_eq!(step(&mut d, wand(slider, 0.3, false)), None);
        assert!(step(&mut d, wand(slider, 0.3, true)).is_some());
        let slid = step(&mut d, wand(slider, 0.55, true));
        assert!(
            slid.is_some_and(|(row, f)| row == slider && (f - 0.55).abs() < 1e-3),
            "{slid:?}"
        );
        assert!(d.scrubbing());
        assert_eq!(step(&mut d, wand(slider, 0.55, false)), None);
        assert!(!d.scrubbing(), "let go");
    }

    #[test]
    fn the_picture_is_repainted_when_the_pointer_or_the_rows_change_else_at_a_steady_pace() {
        let mut d = PanelDriver::new(PanelAnchor::LeftHand);
        d.lines = vec!["  gravity      9.81 m/s2".to_string(); ControlPanel::rows().len()];
        let (head, left) = (Vec3::new(0.0, 1.6, 0.0), Vec3::new(-0.2, 1.1, -0.35));
        let s0 = sample(head, left, HandState::at(Vec3::ZERO));
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let same = |a: &UiQuad, b: &UiQuad| Arc::ptr_eq(&a.frame, &b.frame);
        let first = d.view(&s0, &Mat4::IDENTITY, (None, at(0)), &[]).unwrap();
        // The hand moved, nothing else: the same picture, placed anew.
        let moved = Mat4::from_translation(Vec3::X);
        let again = d.view(&s0, &moved, (None, at(10)), &[]).unwrap();
        assert!(same(&first, &again));
        assert!((again.to_world.w_axis - first.to_world.w_axis - Vec4::X).length() < 1e-5);
        // A new highlight, a row's text, or the pointer: at once.
        let tool = d
            .view(&s0, &Mat4::IDENTITY, (Some(2), at(12)), &[])
            .unwrap();
        assert!(!same(&again, &tool));
        d.lines[5] = "  gravity      0.00 m/s2".into();
        let text = d
            .view(&s0, &Mat4::IDENTITY, (Some(2), at(14)), &[])
            .unwrap();
        assert!(!same(&tool, &text));
        let wand = aim_at(&d, &s0, 4, Side::Right, Vec3::new(0.15, 1.2, -0.2));
        let hovering = sample(head, left, wand);
        d.before_tools(&hovering, hovering.input, false);
        let hover = d
            .view(&hovering, &Mat4::IDENTITY, (Some(2), at(16)), &[])
            .unwrap();
        assert!(!same(&text, &hover));
        // Only the status lines (timings) moving: after REPAINT_EVERY.
        let timings = ["frame 7".to_string()];
        let early = d
            .view(&hovering, &Mat4::IDENTITY, (Some(2), at(20)), &timings)
            .unwrap();
        assert!(same(&hover, &early));
        let late = d
            .view(&hovering, &Mat4::IDENTITY, (Some(2), at(60)), &timings)
            .unwrap();
        assert!(!same(&early, &late));
    }
}
