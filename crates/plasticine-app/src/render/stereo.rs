//! How the two eyes reach a desk display: the stereo modes and where each
//! eye's image goes in the output (the renderer composes the eyes there and
//! the overlay repeats its text in each).

/// How the two eyes reach a desk display.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum StereoMode {
    /// One eye (the left camera) only.
    Mono,
    /// Left eye in the left half, right eye in the right half.
    #[default]
    SideBySide,
    /// Left eye on top, right eye below.
    TopBottom,
    /// Red (left) / cyan (right) glasses.
    Anaglyph,
}

impl StereoMode {
    pub(super) fn shader_code(self) -> u32 {
        match self {
            StereoMode::Mono => 0,
            StereoMode::SideBySide => 1,
            StereoMode::TopBottom => 2,
            StereoMode::Anaglyph => 3,
        }
    }

    /// Eyes rendered in this mode.
    pub fn eye_count(self) -> usize {
        if self == StereoMode::Mono { 1 } else { 2 }
    }

    /// Where each eye's image goes in the output, as (origin, scale) in
    /// fractions of the output: one region for the modes that draw both eyes
    /// over the whole output (or only one eye), two otherwise.
    pub fn regions(self) -> &'static [([f32; 2], [f32; 2])] {
        match self {
            StereoMode::SideBySide => &[([0.0, 0.0], [0.5, 1.0]), ([0.5, 0.0], [0.5, 1.0])],
            StereoMode::TopBottom => &[([0.0, 0.0], [1.0, 0.5]), ([0.0, 0.5], [1.0, 0.5])],
            StereoMode::Mono | StereoMode::Anaglyph => &[([0.0, 0.0], [1.0, 1.0])],
        }
    }

    /// Size of each eye image for an output of `output` pixels (at least
    /// one pixel each way).
    pub fn eye_size(self, output: (u32, u32)) -> (u32, u32) {
        let (_, scale) = self.regions()[0];
        let part = |n: u32, s: f32| if s < 1.0 { n / 2 } else { n };
        (
            part(output.0, scale[0]).max(1),
            part(output.1, scale[1]).max(1),
        )
    }
}
