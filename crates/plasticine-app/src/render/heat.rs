//! What the skin is coloured by: its paint, or a heat map of a quantity an
//! animator tuning a material wants to see on it (where the fat is thick,
//! where the skin is stretched or compressed, where it bends sharply).
//!
//! Each map has a fixed scale, so a rendered sequence compares frame with
//! frame; [`SkinMap::legend`] says what the colours mean.

use crate::snapshot::SceneSnapshot;
use glam::Vec3;

/// What colours the skin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum SkinMap {
    /// Its painted colours (the skin tone where unpainted).
    #[default]
    Paint,
    /// Fat thickness: deep blue (none) through green to yellow (the style's
    /// `fat_map_max` or more).
    Fat,
    /// Areal stretch, √(λ1·λ2) of the grid edges against their rest
    /// lengths, over the skin's median: a wrapped skin is stretched all
    /// over by its prestress (twice its rest lengths by default), so what
    /// reads is where it is slacker (blue, `STRETCH_MIN` or less), as
    /// taut as the rest of it (white), or strained (yellow, then red at
    /// `STRETCH_MAX` or more).
    Stretch,
    /// How sharply the drawn surface bends (1/m, the turn of its normal per
    /// metre, the largest over the grid directions): deep blue (flat)
    /// through green to yellow (`CURVATURE_MAX`, a 1 cm radius, or more).
    Curvature,
    /// How fast each point moves (m/s, between the last two snapshots
    /// drawn): deep blue (still) through green to yellow (`SPEED_MAX` or
    /// faster).
    Speed,
    /// Where the skin rests on the muscles under it or on another skin:
    /// red where a point is on its fat layer's surface (pressed onto the
    /// muscle through its fat) or at the skins' contact gap from another
    /// skin, fading to white `CONTACT_REACH` out from it.
    Contact,
}

/// Stretch over the skin's median shown at the red end of [`SkinMap::Stretch`].
pub const STRETCH_MAX: f32 = 1.5;
/// Stretch over the skin's median shown at the blue end of [`SkinMap::Stretch`].
pub const STRETCH_MIN: f32 = 0.67;
/// Curvature (1/m) shown at the top of [`SkinMap::Curvature`].
pub const CURVATURE_MAX: f32 = 100.0;
/// Speed (m/s) shown at the top of [`SkinMap::Speed`].
pub const SPEED_MAX: f32 = 0.5;
/// How far off its fat layer's surface (m) a point still shows a trace of
/// red in [`SkinMap::Contact`].
pub const CONTACT_REACH: f32 = 0.003;

impl SkinMap {
    /// Every map, in the order the desk's F3 steps through them.
    pub const ALL: [SkinMap; 6] = [
        Self::Paint,
        Self::Fat,
        Self::Stretch,
        Self::Curvature,
        Self::Speed,
        Self::Contact,
    ];

    /// The next map in [`SkinMap::ALL`], wrapping.
    pub fn next(self) -> Self {
        let i = Self::ALL.iter().position(|&m| m == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }

    /// What the colours mean, in a line (`fat_max` in metres).
    pub fn legend(self, fat_max: f32) -> String {
        match self {
            Self::Paint => "skin coloured by its paint".into(),
            Self::Fat => format!(
                "fat thickness: blue none, green, yellow {:.0} mm or more",
                fat_max * 1e3
            ),
            Self::Stretch => format!(
                "stretch over the skin's median: blue {STRETCH_MIN}x or less, white 1x, yellow, red {STRETCH_MAX}x or more"
            ),
            Self::Curvature => format!(
                "curvature: blue flat, green, yellow {CURVATURE_MAX:.0}/m (a 1 cm radius) or sharper"
            ),
            Self::Speed => format!("speed: blue still, green, yellow {SPEED_MAX} m/s or faster"),
            Self::Contact => format!(
                "contact with muscles and skins: red resting on them, white {:.0} mm or more off",
                CONTACT_REACH * 1e3
            ),
        }
    }

    /// The legend's colour bar: the map's colours from the first end its
    /// [`legend`](Self::legend) names to the last (empty for the paint).
    pub fn bar(self, fat_max: f32) -> Vec<[f32; 4]> {
        const SAMPLES: usize = 32;
        let value = |t: f32| match self {
            Self::Paint => 0.0,
            Self::Fat => t * fat_max,
            // Geometric: white (1x) sits where the ratio does.
            Self::Stretch => STRETCH_MIN * (STRETCH_MAX / STRETCH_MIN).powf(t),
            Self::Curvature => t * CURVATURE_MAX,
            Self::Speed => t * SPEED_MAX,
            // The legend names red (on the fat) first.
            Self::Contact => 1.0 - t,
        };
        if self == Self::Paint {
            return Vec::new();
        }
        (0..SAMPLES)
            .map(|k| self.color(value(k as f32 / (SAMPLES - 1) as f32), fat_max))
            .collect()
    }

    /// The colour of a point whose value for this map is `v` (`fat_max`
    /// in metres, for [`SkinMap::Fat`]); the paint map has none.
    pub fn color(self, v: f32, fat_max: f32) -> [f32; 4] {
        match self {
            Self::Paint => [1.0; 4],
            Self::Fat => sequential(if fat_max > 0.0 { v / fat_max } else { 0.0 }),
            Self::Stretch => stretch_color(v),
            Self::Curvature => sequential(v / CURVATURE_MAX),
            Self::Speed => sequential(v / SPEED_MAX),
            Self::Contact => ramp(&[[0.95, 0.95, 0.95], [0.85, 0.15, 0.10]], v),
        }
    }
}

/// The skins' speeds for [`SkinMap::Speed`], from the last two snapshots
/// drawn with it.
#[derive(Default)]
pub(super) struct SpeedTrack {
    sequence: Option<u64>,
    time: f64,
    positions: Vec<Vec<Vec3>>,
    speed: Vec<Vec<f32>>,
}

/// Two snapshots further apart than this (s) give no speed (a jump in the
/// timeline, a new playback): the map shows the skin still until the next.
const SPEED_SPAN: f64 = 0.25;

impl SpeedTrack {
    /// Takes in `snapshot`: where it is a newer one of the same skins
    /// shortly after the last, the speeds between the two.
    pub(super) fn track(&mut self, snapshot: &SceneSnapshot) {
        if self.sequence == Some(snapshot.sequence) && self.time == snapshot.sim_time {
            return;
        }
        let dt = snapshot.sim_time - self.time;
        let same = self.positions.len() == snapshot.skins.len()
            && self
                .positions
                .iter()
                .zip(&snapshot.skins)
                .all(|(p, s)| p.len() == s.positions.len());
        self.speed = snapshot
            .skins
            .iter()
            .enumerate()
            .map(|(s, skin)| {
                if same && dt > 0.0 && dt <= SPEED_SPAN {
                    speed(&self.positions[s], &skin.positions, dt)
                } else {
                    vec![0.0; skin.positions.len()]
                }
            })
            .collect();
        self.positions = snapshot.skins.iter().map(|s| s.positions.clone()).collect();
        self.time = snapshot.sim_time;
        self.sequence = Some(snapshot.sequence);
    }

    /// Skin `s`'s speeds (m/s) as last tracked.
    pub(super) fn of(&self, s: usize) -> Option<&[f32]> {
        self.speed.get(s).map(Vec::as_slice)
    }
}

/// A sequential ramp, perceptually ordered: deep blue (0) through green to
/// yellow (1), `t` clamped to [0, 1].
pub fn sequential(t: f32) -> [f32; 4] {
    const STOPS: [[f32; 3]; 5] = [
        [0.15, 0.10, 0.45],
        [0.15, 0.35, 0.60],
        [0.15, 0.60, 0.50],
        [0.50, 0.80, 0.25],
        [0.99, 0.90, 0.15],
    ];
    ramp(&STOPS, t)
}

/// Stretch → colour: blue below rest length (log scale down to
/// [`STRETCH_MIN`]), white at it, yellow then red above (log scale up to
/// [`STRETCH_MAX`]).
pub fn stretch_color(stretch: f32) -> [f32; 4] {
    const DOWN: [[f32; 3]; 2] = [[0.95, 0.95, 0.95], [0.10, 0.25, 0.80]];
    const UP: [[f32; 3]; 3] = [[0.95, 0.95, 0.95], [0.98, 0.85, 0.20], [0.80, 0.10, 0.10]];
    let l = stretch.max(1e-6).ln();
    if l < 0.0 {
        ramp(&DOWN, l / STRETCH_MIN.ln())
    } else {
        ramp(&UP, l / STRETCH_MAX.ln())
    }
}

fn ramp(stops: &[[f32; 3]], t: f32) -> [f32; 4] {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let x = t * (stops.len() - 1) as f32;
    let k = (x.floor() as usize).min(stops.len() - 2);
    let f = x - k as f32;
    let (a, b) = (stops[k], stops[k + 1]);
    [
        a[0] + (b[0] - a[0]) * f,
        a[1] + (b[1] - a[1]) * f,
        a[2] + (b[2] - a[2]) * f,
        1.0,
    ]
}

/// Areal stretch √(λ1·λ2) per point of an m×n grid (periodic around) with
/// rest metric `rest` ([G11, G12, G22] per point, material spacings 1/m
/// and 1/(n−1)): λ the lengths of the point's forward edges (its backward
/// edge up on the top row) over their rest lengths. See [`relative`] for
/// what [`SkinMap::Stretch`] shows.
pub fn stretch(m: usize, n: usize, positions: &[Vec3], rest: &[[f32; 3]]) -> Vec<f32> {
    let (h1, h2) = (1.0 / m as f32, 1.0 / (n.max(2) - 1) as f32);
    (0..m * n)
        .map(|k| {
            let (i, j) = (k % m, k / m);
            let around = positions[j * m + (i + 1) % m] - positions[k];
            let up = if j + 1 < n {
                positions[k + m] - positions[k]
            } else {
                positions[k] - positions[k - m]
            };
            let [g11, _, g22] = rest[k];
            let (l1, l2) = (h1 * g11.max(0.0).sqrt(), h2 * g22.max(0.0).sqrt());
            if l1 <= 0.0 || l2 <= 0.0 {
                return 1.0;
            }
            (around.length() / l1 * (up.length() / l2)).sqrt()
        })
        .collect()
}

/// `values` over their median (1 where the median is not positive).
pub fn relative(mut values: Vec<f32>) -> Vec<f32> {
    let mut sorted: Vec<f32> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if sorted.is_empty() {
        return values;
    }
    let mid = sorted.len() / 2;
    let median = *sorted.select_nth_unstable_by(mid, f32::total_cmp).1;
    for v in &mut values {
        *v = if median > 0.0 { *v / median } else { 1.0 };
    }
    values
}

/// Speed (m/s) per point between two positions of a grid `dt` seconds
/// apart.
pub fn speed(before: &[Vec3], after: &[Vec3], dt: f64) -> Vec<f32> {
    let inv = (1.0 / dt) as f32;
    before
        .iter()
        .zip(after)
        .map(|(a, b)| a.distance(*b) * inv)
        .collect()
}

/// Contact per point (1 on or inside its fat layer's surface, falling
/// linearly to 0 at [`CONTACT_REACH`] out from it) for a skin with fat
/// thickness `fat` per point wrapping muscles `wrapped` of `body`.
pub fn contact(
    body: &crate::kinematics::PosedBody,
    wrapped: &[usize],
    positions: &[Vec3],
    fat: &[f32],
) -> Vec<f32> {
    positions
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let f = fat.get(k).copied().unwrap_or(0.0);
            (body.fat_depth(f + CONTACT_REACH, wrapped, p) / CONTACT_REACH).clamp(0.0, 1.0)
        })
        .collect()
}

/// How much a point `gap` metres from another skin rests on it: 1 at the
/// skins' contact gap `contact_gap` or closer, fading to 0
/// `CONTACT_REACH` further out, as on a muscle's fat.
pub fn skin_contact(gap: f32, contact_gap: f32) -> f32 {
    (1.0 - (gap - contact_gap).max(0.0) / CONTACT_REACH).clamp(0.0, 1.0)
}

/// Curvature (1/m) per point of an m×n grid with unit `normals`: the
/// largest turn of the normal per metre to a grid neighbour.
pub fn curvature(m: usize, n: usize, positions: &[Vec3], normals: &[Vec3]) -> Vec<f32> {
    (0..m * n)
        .map(|k| {
            let (i, j) = (k % m, k / m);
            let mut neighbours = vec![j * m + (i + 1) % m, j * m + (i + m - 1) % m];
            if j + 1 < n {
                neighbours.push(k + m);
            }
            if j > 0 {
                neighbours.push(k - m);
            }
            neighbours
                .into_iter()
                .map(|q| {
                    let d = positions[q].distance(positions[k]);
                    let turn = normals[k].dot(normals[q]).clamp(-1.0, 1.0).acos();
                    if d > 1e-9 { turn / d } else { 0.0 }
                })
                .fold(0.0, f32::max)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cylinder of radius `radius` around y, m around, n rows over
    /// `height`, with the rest metric of the same cylinder at `rest_radius`
    /// and `rest_height`.
    fn cylinder(
        m: usize,
        n: usize,
        (radius, height): (f32, f32),
        (rest_radius, rest_height): (f32, f32),
    ) -> (Vec<Vec3>, Vec<Vec3>, Vec<[f32; 3]>) {
        let mut p = Vec::new();
        let mut nrm = Vec::new();
        for j in 0..n {
            for i in 0..m {
                let a = i as f32 / m as f32 * std::f32::consts::TAU;
                let dir = Vec3::new(a.cos(), 0.0, a.sin());
                p.push(dir * radius + Vec3::Y * height * j as f32 / (n - 1) as f32);
                nrm.push(dir);
            }
        }
        // G = |∂r/∂u|² with u over [0, 1): the chord per spacing, squared.
        let chord = 2.0 * rest_radius * (std::f32::consts::PI / m as f32).sin();
        let g11 = (chord * m as f32).powi(2);
        let g22 = rest_height * rest_height;
        (p, nrm, vec![[g11, 0.0, g22]; m * n])
    }

    /// A cylinder drawn at twice its rest radius and its rest height reads
    /// √2 everywhere; at its rest shape, 1.
    #[test]
    fn stretch_is_the_areal_stretch_against_rest() {
        let (m, n) = (24, 6);
        let (p, _, rest) = cylinder(m, n, (0.2, 0.5), (0.1, 0.5));
        for s in stretch(m, n, &p, &rest) {
            assert!((s - 2f32.sqrt()).abs() < 1e-4, "{s}");
        }
        let (p, _, rest) = cylinder(m, n, (0.1, 0.5), (0.1, 0.5));
        for s in stretch(m, n, &p, &rest) {
            assert!((s - 1.0).abs() < 1e-4, "{s}");
        }
    }

    /// A cylinder of radius r bends at 1/r around (the largest direction).
    #[test]
    fn curvature_of_a_cylinder_is_one_over_its_radius() {
        let (m, n) = (64, 5);
        for r in [0.02f32, 0.1, 0.5] {
            let (p, nrm, _) = cylinder(m, n, (r, 0.3), (r, 0.3));
            for c in curvature(m, n, &p, &nrm) {
                assert!((c * r - 1.0).abs() < 2e-3, "radius {r}: {c}");
            }
        }
    }

    /// Stretch over the median: a cylinder stretched to twice its rest
    /// height on its top half only reads 1/√2 below and 1 above (the median
    /// is the stretched half's, which has one row more).
    #[test]
    fn relative_stretch_is_over_the_median() {
        let (m, n) = (16, 9);
        let (mut p, _, rest) = cylinder(m, n, (0.1, 0.8), (0.1, 0.8));
        for (k, x) in p.iter_mut().enumerate() {
            let j = k / m;
            if j > 4 {
                x.y += (j - 4) as f32 * 0.1;
            }
        }
        let s = relative(stretch(m, n, &p, &rest));
        for (k, v) in s.iter().enumerate() {
            let want = if k / m >= 4 { 1.0 } else { 0.5f32.sqrt() };
            assert!((v - want).abs() < 1e-4, "row {}: {v} vs {want}", k / m);
        }
    }

    /// The stretch ramp is white at rest length, blue compressed, red
    /// stretched, and saturates at its ends.
    #[test]
    fn stretch_colours_read_as_a_diverging_map() {
        let white = stretch_color(1.0);
        assert!(white[..3].iter().all(|&c| c > 0.9), "{white:?}");
        let blue = stretch_color(STRETCH_MIN);
        assert!(blue[2] > 0.7 && blue[0] < 0.2, "{blue:?}");
        let red = stretch_color(STRETCH_MAX);
        assert!(red[0] > 0.7 && red[2] < 0.2, "{red:?}");
        assert_eq!(stretch_color(0.1), blue);
        assert_eq!(stretch_color(30.0), red);
        let mid = stretch_color(1.2);
        assert!(mid[0] > 0.9 && mid[2] < 0.6, "{mid:?}");
    }

    /// Drawn with the stretch map, a penguin whose body is pulled up above
    /// its middle row (each up edge there 1.6 times as long) is warm there
    /// and as white as before below; drawn with its paint, not.
    #[test]
    fn the_stretch_map_shows_where_the_skin_is_pulled() {
        let ch = shipped_penguin();
        let posture = ch.skeleton.rest_posture();
        let mut snap = crate::snapshot::SceneSnapshot::of(std::sync::Arc::new(ch), posture, 0);
        let skin = &mut snap.skins[0];
        let (m, n) = (skin.m, skin.n);
        let middle = n / 2;
        let original = skin.positions.clone();
        // Rows move in order, each on the row below it as moved.
        for j in middle + 1..n {
            for i in 0..m {
                let k = j * m + i;
                let below = (j - 1) * m + i;
                skin.positions[k] = skin.positions[below] + 1.6 * (original[k] - original[below]);
            }
        }
        let warmth = |map: SkinMap, rows: std::ops::Range<usize>| {
            let mut b = GeometryBuilder::new();
            let g = b.build(&snap, &facets(map), &Decorations::default());
            let count = rows.len() * m;
            let sum: f32 = rows
                .flat_map(|j| (0..m).map(move |i| j * m + i))
                .map(|k| g.opaque.vertices[k].color[0] - g.opaque.vertices[k].color[2])
                .sum();
            sum / count as f32
        };
        let (top, bottom) = (middle + 2..n - 2, 2..middle - 1);
        let (hot, cool) = (
            warmth(SkinMap::Stretch, top.clone()),
            warmth(SkinMap::Stretch, bottom),
        );
        assert!(hot > 0.3 && cool.abs() < 0.15, "top {hot}, bottom {cool}");
        assert!(warmth(SkinMap::Paint, top).abs() < 0.15);
    }

    use crate::render::geometry::{Decorations, GeometryBuilder, MuscleStyle, SceneStyle};
    use crate::samples::shipped_penguin;

    /// The skins alone, drawn as their facets (vertex k of the first skin
    /// is its grid point k), coloured by `map`.
    fn facets(map: SkinMap) -> SceneStyle {
        SceneStyle {
            map,
            subdivide: 1,
            muscles: MuscleStyle::Hidden,
            floor: false,
            skeleton: false,
            ..SceneStyle::default()
        }
    }

    /// The shipped penguin's body skin rests on its fat layer over most of
    /// it (contact 1); blown up by a tenth about its centre, it touches
    /// almost nowhere.
    #[test]
    fn contact_is_where_the_skin_rests_on_its_fat() {
        let ch = shipped_penguin();
        let body = crate::kinematics::PosedBody::new(&ch, &ch.skeleton.rest_posture());
        let skin = &ch.skins[0];
        let p = &skin.points.position;
        let resting = contact(&body, &skin.muscles, p, &skin.points.fat);
        let on = resting.iter().filter(|&&c| c >= 0.99).count();
        assert!(on * 2 > p.len(), "{on} of {} on the fat", p.len());
        let centre = p.iter().copied().sum::<Vec3>() / p.len() as f32;
        let blown: Vec<Vec3> = p.iter().map(|&x| centre + 1.1 * (x - centre)).collect();
        let off = contact(&body, &skin.muscles, &blown, &skin.points.fat);
        let touching = off.iter().filter(|&&c| c > 0.0).count();
        assert!(touching * 20 < p.len(), "{touching} still touching");
    }

    /// The speed map reads the speed between two snapshots a frame apart:
    /// a penguin moved 1 cm in a thirtieth of a second is 0.3 m/s
    /// everywhere; after a jump of a second it shows still.
    #[test]
    fn the_speed_map_reads_between_snapshots() {
        let ch = std::sync::Arc::new(shipped_penguin());
        let posture = ch.skeleton.rest_posture();
        let mut snap = crate::snapshot::SceneSnapshot::of(ch, posture, 0);
        let style = facets(SkinMap::Speed);
        let mut b = GeometryBuilder::new();
        b.observe(&snap, &style);
        let step = |snap: &mut crate::snapshot::SceneSnapshot, dt: f64| {
            for skin in &mut snap.skins {
                for x in &mut skin.positions {
                    *x += Vec3::new(0.01, 0.0, 0.0);
                }
            }
            snap.sim_time += dt;
            snap.sequence += 1;
        };
        let close = |a: [f32; 4], b: [f32; 4]| a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-3);
        step(&mut snap, 1.0 / 30.0);
        let moving = SkinMap::Speed.color(0.3, 0.0);
        let g = b.build(&snap, &style, &Decorations::default());
        assert!(g.opaque.vertices.iter().all(|v| close(v.color, moving)));
        step(&mut snap, 1.0);
        let still = SkinMap::Speed.color(0.0, 0.0);
        assert_ne!(moving, still);
        let g = b.build(&snap, &style, &Decorations::default());
        assert!(g.opaque.vertices.iter().all(|v| close(v.color, still)));
    }

    /// F3 steps through every map and back.
    #[test]
    fn maps_cycle() {
        let mut m = SkinMap::Paint;
        for expect in [
            SkinMap::Fat,
            SkinMap::Stretch,
            SkinMap::Curvature,
            SkinMap::Speed,
            SkinMap::Contact,
            SkinMap::Paint,
        ] {
            m = m.next();
            assert_eq!(m, expect);
        }
    }
}
