//! Measuring the screen's corners with the tracked right hand (LEMAN §5.1:
//! "measuring the position of the four corners of the workstation monitor
//! with the 3D mouse"), as a state machine over input frames, so a live
//! front end, a recorded [`InputScript`](crate::input::InputScript) and the
//! tests all drive it the same way.

use super::error::{CalibrationError, Corner};
use super::fit::{ScreenFit, fit_screen};
use crate::input::{InputFrame, buttons};
use glam::Vec3;

/// Records the right hand's tool tip at each trigger press (the frame where
/// the trigger goes from released to pressed), in the order lower-left,
/// lower-right, upper-right, upper-left, as seen by the viewer; then again
/// for more rounds, whose samples are averaged per corner. The left hand's A
/// button (undo, as for the tools) forgets the last press.
///
/// The frames must carry **raw tracker-space** positions (not the
/// registered, vehicle-relative ones the tools get), since the calibration
/// describes the screen in tracker space.
#[derive(Clone, Debug)]
pub struct CornerCapture {
    viewer: Vec3,
    presses: Vec<Vec3>,
    previous: Option<InputFrame>,
}

impl CornerCapture {
    /// `viewer`: a point on the viewing side, in tracker space (the tracked
    /// head, or the calibration's fixed head), used to tell a mirrored
    /// order from a correct one.
    pub fn new(viewer: Vec3) -> Self {
        Self {
            viewer,
            presses: Vec::new(),
            previous: None,
        }
    }

    /// Reads one frame; returns the corner recorded if the trigger was just
    /// pressed. As with the tools, a trigger already held in the first frame
    /// counts as a press.
    pub fn handle(&mut self, frame: &InputFrame) -> Option<Corner> {
        let before = self.previous.unwrap_or_default();
        self.previous = Some(*frame);
        if frame.left.held(buttons::A) && !before.left.held(buttons::A) {
            self.undo();
        }
        if frame.right.triggered() && !before.right.triggered() {
            let corner = self.next_corner();
            self.presses.push(frame.right.position());
            return Some(corner);
        }
        None
    }

    /// Forgets the last press; returns its corner.
    pub fn undo(&mut self) -> Option<Corner> {
        self.presses.pop()?;
        Some(self.next_corner())
    }

    /// The corner the next press records.
    pub fn next_corner(&self) -> Corner {
        Corner::ALL[self.presses.len() % 4]
    }

    /// Presses so far.
    pub fn presses(&self) -> usize {
        self.presses.len()
    }

    /// Complete rounds of four corners so far.
    pub fn rounds(&self) -> usize {
        self.presses.len() / 4
    }

    /// The recorded positions, grouped per corner in measuring order.
    pub fn samples(&self) -> [Vec<Vec3>; 4] {
        let mut s: [Vec<Vec3>; 4] = Default::default();
        for (k, p) in self.presses.iter().enumerate() {
            s[k % 4].push(*p);
        }
        s
    }

    /// What to tell the user now.
    pub fn prompt(&self) -> String {
        let corner = self.next_corner();
        let round = self.rounds() + 1;
        if corner == Corner::LowerLeft && self.rounds() > 0 {
            format!(
                "{} round{} of 4 corners measured: finish, or touch the lower-left corner of the screen's picture with the tool tip and pull the trigger to measure round {round} (more rounds are averaged).",
                self.rounds(),
                if self.rounds() == 1 { "" } else { "s" }
            )
        } else {
            format!(
                "Round {round}: touch the {corner} corner of the screen's picture (as you see it) with the tool tip and pull the trigger ({} of 4; left A undoes the last corner).",
                corner.index() + 1
            )
        }
    }

    /// Fits the screen to the presses: refused unless they are whole rounds
    /// of four (and, through [`fit_screen`], unless they form a rectangle
    /// facing the viewer).
    pub fn finish(&self) -> Result<ScreenFit, CalibrationError> {
        if self.presses.is_empty() {
            return Err(CalibrationError::TooFewSamples {
                corner: Corner::LowerLeft,
                count: 0,
            });
        }
        if !self.presses.len().is_multiple_of(4) {
            return Err(CalibrationError::IncompleteRound {
                presses: self.presses.len(),
                next: self.next_corner(),
            });
        }
        fit_screen(&self.samples(), self.viewer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::HandState;
    use crate::view::Calibration;

    fn frame(t: f64, at: Vec3, trigger: bool) -> InputFrame {
        InputFrame {
            time: t,
            right: HandState::at(at).with_trigger(trigger),
            left: HandState::default(),
        }
    }

    /// Moving to each corner, pressing (held for a few frames), releasing:
    /// one sample per press, in order, and the fit gives the screen back.
    #[test]
    fn presses_record_the_corners_in_order() {
        let cal = Calibration::default_monitor();
        let mut cap = CornerCapture::new(cal.fixed_head.position);
        assert!(cap.prompt().contains("lower-left"), "{}", cap.prompt());
        let mut t = 0.0;
        let mut recorded = Vec::new();
        for round in 0..2 {
            for (k, corner) in cal.screen.corners().into_iter().enumerate() {
                let jitter = Vec3::new(0.0, 0.0, 0.001 * (round as f32 * 2.0 - 1.0));
                // Travel with the trigger released, hold it for 3 frames.
                for s in 0..5 {
                    t += 1.0 / 60.0;
                    let at = corner + jitter + Vec3::splat(0.02 * (4 - s) as f32);
                    assert_eq!(cap.handle(&frame(t, at, false)), None);
                }
                for hold in 0..3 {
                    t += 1.0 / 60.0;
                    let got = cap.handle(&frame(t, corner + jitter, true));
                    if hold == 0 {
                        recorded.push(got.unwrap());
                        assert_eq!(got.unwrap(), Corner::ALL[k]);
                    } else {
                        assert_eq!(got, None, "a held trigger records once");
                    }
                }
            }
            if round == 0 {
                assert!(cap.prompt().contains("1 round of 4"), "{}", cap.prompt());
            }
        }
        assert_eq!(cap.presses(), 8);
        assert_eq!(recorded.len(), 8);
        let fit = cap.finish().unwrap();
        assert_eq!(fit.samples, [2; 4]);
        // The ±1 mm jitter averages out.
        for (got, want) in fit.screen.corners().iter().zip(cal.screen.corners()) {
            assert!(got.distance(want) < 1e-6, "{got} {want}");
        }
    }

    #[test]
    fn incomplete_rounds_are_refused_and_undo_forgets_a_press() {
        let cal = Calibration::default_monitor();
        let mut cap = CornerCapture::new(cal.fixed_head.position);
        assert!(matches!(
            cap.finish().unwrap_err(),
            CalibrationError::TooFewSamples { .. }
        ));
        let corners = cal.screen.corners();
        let mut t = 0.0;
        let mut press = |cap: &mut CornerCapture, at: Vec3| {
            t += 0.1;
            cap.handle(&frame(t, at, false));
            t += 0.1;
            cap.handle(&frame(t, at, true))
        };
        press(&mut cap, corners[0]);
        // A slip: the wrong place for lower-right. Left A forgets it.
        assert_eq!(
            press(&mut cap, Vec3::new(5.0, 5.0, 5.0)),
            Some(Corner::LowerRight)
        );
        let undo = InputFrame {
            time: 10.0,
            right: HandState::at(corners[1]),
            left: HandState::default().with_buttons(buttons::A),
        };
        cap.handle(&undo);
        assert_eq!(cap.next_corner(), Corner::LowerRight);
        assert!(cap.prompt().contains("lower-right"));
        press(&mut cap, corners[1]);
        press(&mut cap, corners[2]);
        assert_eq!(
            cap.finish().unwrap_err(),
            CalibrationError::IncompleteRound {
                presses: 3,
                next: Corner::UpperLeft
            }
        );
        press(&mut cap, corners[3]);
        let fit = cap.finish().unwrap();
        assert!(fit.max_residual < 1e-6);
    }
}
