use super::InvalidField;
use glam::Vec3;
use serde::{Deserialize, Serialize};

/// Connective tissue (LEMAN §4.1.2): a rubber band from a skin point to a point
/// fixed in a muscle's local frame.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Band {
    /// Index of the muscle the band holds to, one of the muscles its skin wraps.
    pub muscle: usize,
    /// Attachment point in the muscle's local frame.
    pub anchor: Vec3,
    /// Spring constant `k_s` per unit of skin rest area, N/m³ (the point's band
    /// has `k_s·a`, a its patch's rest area), so the attachment does not
    /// stiffen when the grid is refined.
    pub ks: f32,
    /// Damping coefficient `k_d` per unit of skin rest area, N·s/m³.
    pub kd: f32,
    /// Rest length l⁽⁰⁾, m.
    pub rest_length: f32,
}

impl Band {
    /// A finite anchor and non-negative, finite stiffness, damping and rest length.
    pub fn is_physical(&self) -> bool {
        self.anchor.is_finite()
            && self.ks.is_finite()
            && self.ks >= 0.0
            && self.kd.is_finite()
            && self.kd >= 0.0
            && self.rest_length.is_finite()
            && self.rest_length >= 0.0
    }
}

/// Defaults for new bands (the global "attach" uses them).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(default)]
pub struct BandDefaults {
    /// Spring constant `k_s` of a new band per unit of skin rest area, N/m³.
    pub ks: f32,
    /// Damping coefficient `k_d` of a new band per unit of skin rest area, N·s/m³.
    pub kd: f32,
}

impl Default for BandDefaults {
    fn default() -> Self {
        // ω = √(k_s/ρ) ≈ 2π·5 Hz with the default ρ = 1.5 kg/m²: a static
        // sag under gravity of g/ω² ≈ 1 cm, and a damping ratio
        // k_d/(2√(k_s ρ)) ≈ 0.15. (At 3 Hz the 3 cm sag bunches the skin
        // at the bottom of a limb's end, where its cap crumples.)
        Self {
            ks: 1480.0,
            kd: 14.0,
        }
    }
}

/// Material given to every point of a new skin. Densities are per unit of
/// the skin's rest area (m²), so the physics does not change when the grid is
/// resampled, and a small skin (a flipper) is as heavy and as stiff per
/// square metre as a large one.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(default)]
pub struct SkinMaterial {
    /// Mass per unit area, kg/m².
    pub mass_density: f32,
    /// Damping per unit area, N·s/m³.
    pub damping_density: f32,
    /// Stretching elasticity η, a 2D modulus (N/m), on the around and up
    /// stretches (η/2 on the shear).
    pub stretch: f32,
    /// Bending rigidity ξ, J (N·m).
    pub bend: f32,
    /// Prestress: the wrapped skin's rest lengths are `shrink` times its
    /// wrapped lengths, so below 1 it sits on the muscles in a uniform
    /// tension η(1/shrink − 1) (LEMAN §6.2's skin that shrinks onto them).
    pub shrink: f32,
    /// Initial fat thickness, m.
    pub fat: f32,
    /// Connective tissue defaults for the skin's bands.
    pub band: BandDefaults,
}

impl Default for SkinMaterial {
    fn default() -> Self {
        Self {
            // About skin's own: ~1.5 mm of tissue.
            mass_density: 1.5,
            // A slow decay of 0.2 /s on its own; the bands damp the rest.
            damping_density: 0.3,
            stretch: 0.75,
            bend: 1e-6,
            shrink: 0.5,
            fat: 0.01,
            band: BandDefaults::default(),
        }
    }
}

/// The colour of an unpainted skin (linear RGB): what it is drawn in, and
/// what a first paint stroke blends from.
pub const DEFAULT_SKIN_COLOR: [f32; 3] = [0.93, 0.72, 0.60];

/// Per-point state and material of a skin grid, struct-of-arrays.
/// Point (i, j) — i around (periodic, 0..m), j from bottom to top (0..n) — is at
/// index `j * m + i`. Rows 0 and n−1 are the boundaries fixed to the joints.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkinPoints {
    /// Position of each point, m.
    pub position: Vec<Vec3>,
    /// Velocity of each point, m/s.
    pub velocity: Vec<Vec3>,
    /// Mass per unit of rest area at each point, kg/m².
    pub mass_density: Vec<f32>,
    /// Damping per unit of rest area at each point, N·s/m³.
    pub damping_density: Vec<f32>,
    /// Rest metric G⁰ = (G11, G12, G22).
    pub rest_metric: Vec<[f32; 3]>,
    /// Rest curvature B⁰ = (B11, B12, B22).
    pub rest_curvature: Vec<[f32; 3]>,
    /// Stretching elasticity η = (η11, η12, η22).
    pub stretch: Vec<[f32; 3]>,
    /// Bending rigidity ξ.
    pub bend: Vec<f32>,
    /// Fat thickness, m (eq. 9).
    pub fat: Vec<f32>,
    /// Connective tissue, or none.
    pub band: Vec<Option<Band>>,
    /// Painted colour of each point, linear RGB in [0, 1]; empty for an
    /// unpainted skin (drawn and exported in the default skin tone, as
    /// files written before colour load).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub color: Vec<[f32; 3]>,
}

impl SkinPoints {
    /// Bytes the per-point arrays hold (what keeping a copy of them costs).
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of_val;
        size_of_val(&self.position[..])
            + size_of_val(&self.velocity[..])
            + size_of_val(&self.mass_density[..])
            + size_of_val(&self.damping_density[..])
            + size_of_val(&self.rest_metric[..])
            + size_of_val(&self.rest_curvature[..])
            + size_of_val(&self.stretch[..])
            + size_of_val(&self.bend[..])
            + size_of_val(&self.fat[..])
            + size_of_val(&self.band[..])
            + size_of_val(&self.color[..])
    }

    /// Points at rest (no velocity, no connective tissue) of one material
    /// throughout, η = (s, s/2, s) for its stretch s, with the given rest
    /// state.
    pub fn uniform(
        position: Vec<Vec3>,
        rest_metric: Vec<[f32; 3]>,
        rest_curvature: Vec<[f32; 3]>,
        material: &SkinMaterial,
    ) -> Self {
        let count = position.len();
        let eta = material.stretch;
        Self {
            position,
            velocity: vec![Vec3::ZERO; count],
            mass_density: vec![material.mass_density; count],
            damping_density: vec![material.damping_density; count],
            rest_metric,
            rest_curvature,
            stretch: vec![[eta, 0.5 * eta, eta]; count],
            bend: vec![material.bend; count],
            fat: vec![material.fat; count],
            band: vec![None; count],
            color: Vec::new(),
        }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        self.position.len()
    }

    /// Whether there are no points.
    pub fn is_empty(&self) -> bool {
        self.position.is_empty()
    }
}

/// An elastic skin: an m×n grid, periodic around, whose bottom and top rows are
/// fixed to two joints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Skin {
    /// Name of the skin.
    pub name: String,
    /// Index of the joint the bottom row (row 0) is fixed to.
    pub bottom_joint: usize,
    /// Index of the joint the top row (row n−1) is fixed to.
    pub top_joint: usize,
    /// Points around (periodic).
    pub m: usize,
    /// Rows from bottom to top.
    pub n: usize,
    /// Row 0 in the bottom joint's frame, then row n−1 in the top joint's frame.
    pub boundary_local: Vec<Vec3>,
    /// The muscles this skin wraps: only they push it out (non-penetration) and
    /// take its connective tissue. Another body part's muscles are not inside
    /// this skin, so they must not inflate it.
    pub muscles: Vec<usize>,
    /// Per-point state and material of the grid.
    pub points: SkinPoints,
}

impl Skin {
    /// Fewest points around a skin.
    pub const MIN_M: usize = 4;
    /// Fewest rows in a skin.
    pub const MIN_N: usize = 4;
    /// Most points (m·n) in a skin.
    pub const MAX_POINTS: usize = 1 << 22;

    /// Index in `points` of point `i` around on row `j`.
    #[inline]
    pub fn index(&self, i: usize, j: usize) -> usize {
        j * self.m + i
    }

    /// Number of grid points, m·n.
    pub fn point_count(&self) -> usize {
        self.m * self.n
    }

    /// Checks the joint and muscle references against `joint_count` joints and
    /// `muscle_count` muscles, the resolution, and every point's state and material.
    pub fn validate(&self, joint_count: usize, muscle_count: usize) -> Result<(), InvalidField> {
        self.validate_references(joint_count, muscle_count)?;
        self.validate_point_lengths()?;
        for k in 0..self.point_count() {
            self.validate_point(k)?;
        }
        Ok(())
    }

    /// Checks the joints, the resolution, the wrapped muscles and the
    /// boundary rows.
    fn validate_references(
        &self,
        joint_count: usize,
        muscle_count: usize,
    ) -> Result<(), InvalidField> {
        for (name, j) in [
            ("bottom_joint", self.bottom_joint),
            ("top_joint", self.top_joint),
        ] {
            if j >= joint_count {
                return Err(InvalidField::new(
                    name,
                    format!("joint {j} does not exist (the skeleton has {joint_count})"),
                ));
            }
        }
        if self.m < Self::MIN_M
            || self.n < Self::MIN_N
            || self
                .m
                .checked_mul(self.n)
                .is_none_or(|p| p > Self::MAX_POINTS)
        {
            return Err(InvalidField::new(
                "m",
                format!(
                    "resolution {}x{} is outside {}x{} .. {} points",
                    self.m,
                    self.n,
                    Self::MIN_M,
                    Self::MIN_N,
                    Self::MAX_POINTS
                ),
            ));
        }
        if let Some(bad) = self.muscles.iter().find(|&&q| q >= muscle_count) {
            return Err(InvalidField::new(
                "muscles",
                format!("muscle {bad} does not exist (the character has {muscle_count})"),
            ));
        }
        if self.boundary_local.len() != 2 * self.m {
            return Err(InvalidField::new(
                "boundary_local",
                format!(
                    "needs {} points (two rows of m), has {}",
                    2 * self.m,
                    self.boundary_local.len()
                ),
            ));
        }
        Ok(())
    }

    /// Checks that every per-point array has one entry per grid point.
    fn validate_point_lengths(&self) -> Result<(), InvalidField> {
        let p = &self.points;
        let count = self.point_count();
        let lens = [
            ("points.position", p.position.len()),
            ("points.velocity", p.velocity.len()),
            ("points.mass_density", p.mass_density.len()),
            ("points.damping_density", p.damping_density.len()),
            ("points.rest_metric", p.rest_metric.len()),
            ("points.rest_curvature", p.rest_curvature.len()),
            ("points.stretch", p.stretch.len()),
            ("points.bend", p.bend.len()),
            ("points.fat", p.fat.len()),
            ("points.band", p.band.len()),
        ];
        if !p.color.is_empty() && p.color.len() != count {
            return Err(InvalidField::new(
                "points.color",
                format!(
                    "has {} entries but the {}x{} grid has {count} points (or leave it out: an unpainted skin)",
                    p.color.len(),
                    self.m,
                    self.n
                ),
            ));
        }
        for (name, len) in lens {
            if len != count {
                return Err(InvalidField::new(
                    name,
                    format!(
                        "has {len} entries but the {}x{} grid has {count} points",
                        self.m, self.n
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks point `k`'s state, material and connective tissue.
    fn validate_point(&self, k: usize) -> Result<(), InvalidField> {
        let p = &self.points;
        let bad = |name: &str, k: usize, why: String| {
            Err(InvalidField::new(format!("points.{name}[{k}]"), why))
        };
        // What was read, saying why a value is not usable as a number.
        let read = |x: f32| {
            if x.is_nan() {
                "NaN (not a number)".to_string()
            } else if x.is_infinite() {
                format!("{x} (not finite: beyond a 32-bit float's range, about 3.4e38)")
            } else {
                format!("{x}")
            }
        };
        if let Some(c) = p.color.get(k)
            && !c.iter().all(|x| (0.0..=1.0).contains(x))
        {
            return bad(
                "color",
                k,
                format!(
                    "is ({}, {}, {}): each channel is linear RGB from 0 to 1",
                    read(c[0]),
                    read(c[1]),
                    read(c[2])
                ),
            );
        }
        if !p.position[k].is_finite() || !p.velocity[k].is_finite() {
            return bad(
                "position",
                k,
                format!(
                    "position and velocity must be finite, got {} and {}",
                    p.position[k], p.velocity[k]
                ),
            );
        }
        let checks = [
            (
                "mass_density",
                p.mass_density[k],
                true,
                "the mass per m² of rest area (kg/m²)",
            ),
            (
                "damping_density",
                p.damping_density[k],
                false,
                "the damping per m² of rest area",
            ),
            ("fat", p.fat[k], false, "the fat thickness (m)"),
            ("bend", p.bend[k], false, "the bending rigidity"),
        ];
        for (name, x, above_zero, what) in checks {
            let ok = x.is_finite() && if above_zero { x > 0.0 } else { x >= 0.0 };
            if !ok {
                let range = if above_zero { "above 0" } else { "0 or more" };
                return bad(
                    name,
                    k,
                    format!("{what} must be a finite number {range}, got {}", read(x)),
                );
            }
        }
        if let Some(&x) = p.stretch[k].iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
            return bad(
                "stretch",
                k,
                format!(
                    "the stretching elasticity must be finite numbers 0 or more, got {}",
                    read(x)
                ),
            );
        }
        if p.rest_metric[k]
            .iter()
            .chain(&p.rest_curvature[k])
            .any(|x| !x.is_finite())
        {
            return bad(
                "rest_metric",
                k,
                "rest metric and curvature must be finite".to_string(),
            );
        }
        if let Some(b) = &p.band[k] {
            if !self.muscles.contains(&b.muscle) {
                return bad(
                    "band",
                    k,
                    "band names a muscle this skin does not wrap".to_string(),
                );
            }
            if !b.is_physical() {
                return bad(
                    "band",
                    k,
                    "band needs a finite anchor and non-negative ks, kd, rest length".to_string(),
                );
            }
        }
        Ok(())
    }
}
