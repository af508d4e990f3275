//! The flesh backend of a character: LEMAN's kinematic muscles, or
//! Capell's skeleton-driven lattice FEM giving the muscle layer its own
//! dynamics. Plain data; `crate::fem` builds and runs the lattice from it.

use glam::Vec3;
use serde::{Deserialize, Serialize};

use super::InvalidField;
use super::part::{PART_FRICTION_RANGE, PART_STIFFNESS_RANGE, PartFriction, PartStiffness};

/// How the muscle layer moves.
#[allow(
    clippy::large_enum_variant,
    reason = "one per character, plain data: the variants' sizes do not matter"
)]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Flesh {
    /// Muscles ride rigidly on their joints (LEMAN §4).
    #[default]
    Kinematic,
    /// The muscles (or an imported mesh) are embedded in a control lattice
    /// simulated with FEM and driven by the skeleton (Capell 2002); muscle
    /// shapes, and the skin's constraints against them, follow its
    /// displacement field.
    Fem(FemFlesh),
    /// The flesh vibrates in a few precomputed modes per part, excited by
    /// its bone's motion (DyRT, James & Pai 2002): the lattice FEM's modes
    /// about the skinned shape, superposed before the region blending; the
    /// muscles ride on that field as on the FEM flesh's.
    Modal(ModalFlesh),
}

/// Settings of modal flesh: the FEM model its modes are computed from and
/// the parts that vibrate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(default)]
pub struct ModalFlesh {
    /// The lattice, material, damping (α, β give each mode's ξ) and region
    /// weights the modes are computed on; `detail` is not used.
    pub fem: FemFlesh,
    /// The parts that vibrate; a joint not listed rides rigidly.
    pub parts: Vec<ModalPart>,
}

/// One vibrating part: the flesh carried by the bones of `joint`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModalPart {
    /// The joint's name.
    pub joint: String,
    /// How many modes to keep: the lowest that the skeleton can excite,
    /// found among up to twice as many of the part's lowest (fewer where
    /// even those hold too few), in `MODES_RANGE`.
    pub modes: usize,
    /// Largest displacement of the part's surface, as a fraction of the
    /// part's size: the force filter of DyRT §3 clamps each mode there.
    pub clamp: f64,
}

/// How many modes a part may keep.
pub const MODES_RANGE: std::ops::RangeInclusive<usize> = 1..=32;

/// Lattice vertices of modal flesh by default: the modes cost only their
/// precompute, so the lattice can be finer than the FEM flesh's.
pub const MODAL_LATTICE_VERTICES: usize = 1200;

/// Young's modulus of modal flesh by default (Pa): soft enough that a
/// part's lowest modes sit at a few hertz, where follow-through reads (the
/// FEM flesh's 5·10⁴ puts the penguin's at 12–27 Hz, a buzz). The modes
/// carry no gravity sag, so softness costs no droop.
pub const MODAL_YOUNG: f64 = 4.0e3;

/// Default number of modes per part.
pub const DEFAULT_MODES: usize = 16;

/// Default clamp: surface displacement at most 15 % of the part's size.
pub const DEFAULT_MODAL_CLAMP: f64 = 0.15;

impl ModalPart {
    /// A part of `joint` with the default modes and clamp.
    pub fn new(joint: impl Into<String>) -> Self {
        Self {
            joint: joint.into(),
            modes: DEFAULT_MODES,
            clamp: DEFAULT_MODAL_CLAMP,
        }
    }
}

impl ModalFlesh {
    /// Modal flesh for `character` with the default FEM model and a part
    /// for every joint that carries both a bone (it has a child) and a
    /// muscle, each with the default modes and clamp.
    pub fn for_character(character: &super::Character) -> Self {
        let parts = Self::parts_where(character, |j| {
            character.muscles.iter().any(|m| m.joint == j)
        });
        Self {
            fem: FemFlesh {
                target_vertices: MODAL_LATTICE_VERTICES,
                young: MODAL_YOUNG,
                ..FemFlesh::default()
            },
            parts,
        }
    }

    /// A part, with the default modes and clamp, for every joint that
    /// carries a bone (it has a child): what an imported mesh vibrates in.
    pub fn part_per_bone(character: &super::Character) -> Vec<ModalPart> {
        Self::parts_where(character, |_| true)
    }

    /// A part for every joint that carries a bone and passes `keep`.
    fn parts_where(character: &super::Character, keep: impl Fn(usize) -> bool) -> Vec<ModalPart> {
        let joints = &character.skeleton.joints;
        (0..joints.len())
            .filter(|&j| joints.iter().any(|c| c.parent == Some(j)) && keep(j))
            .map(|j| ModalPart::new(joints[j].name.clone()))
            .collect()
    }

    /// Checks the FEM model and every part's modes and clamp.
    pub fn validate(&self) -> Result<(), InvalidField> {
        self.fem
            .validate()
            .map_err(|e| InvalidField::new(format!("fem.{}", e.field), e.message))?;
        for (k, p) in self.parts.iter().enumerate() {
            if !MODES_RANGE.contains(&p.modes) {
                return Err(InvalidField::new(
                    format!("parts[{k}].modes"),
                    format!(
                        "must be in {}..={}, got {}",
                        MODES_RANGE.start(),
                        MODES_RANGE.end(),
                        p.modes
                    ),
                ));
            }
            if !(p.clamp.is_finite() && p.clamp > 0.0 && p.clamp <= 1.0) {
                return Err(InvalidField::new(
                    format!("parts[{k}].clamp"),
                    format!("must be in (0, 1], got {}", p.clamp),
                ));
            }
            if self.parts[..k].iter().any(|q| q.joint == p.joint) {
                return Err(InvalidField::new(
                    format!("parts[{k}].joint"),
                    format!("part '{}' is listed twice", p.joint),
                ));
            }
        }
        Ok(())
    }
}

/// Settings of FEM flesh.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(default)]
pub struct FemFlesh {
    /// About how many lattice vertices to build (the cell size is chosen
    /// for it); Capell's kangaroo has 177.
    pub target_vertices: usize,
    /// Young's modulus E of the flesh, Pa.
    pub young: f64,
    /// Poisson's ratio ν, in [0, 0.5).
    pub poisson: f64,
    /// Mass density ρ, kg/m³.
    pub density: f64,
    /// Mass-proportional damping α, 1/s.
    pub mass_damping: f64,
    /// Stiffness-proportional damping β, s.
    pub stiffness_damping: f64,
    /// Blending width of the local linearizations (§4.5), metres; `None`
    /// runs one global linear model.
    pub blend_width: Option<f64>,
    /// Painted corrections to the automatic bone-region weights (§4.5),
    /// applied in order, then renormalised to a partition of unity.
    pub weight_strokes: Vec<WeightStroke>,
    /// Parts of the flesh made softer or stiffer than `young` (§3.3's
    /// per-cell materials: floppy ears, rigid horns), one entry per joint.
    pub part_stiffness: Vec<PartStiffness>,
    /// Parts of the flesh with their own friction against obstacles, one
    /// entry per joint; the rest has the obstacle's alone.
    pub part_friction: Vec<PartFriction>,
    /// A triangle mesh embedded in the lattice with trilinear (FFD) weights
    /// (`plasticine fem-import`); rendered and exported deformed.
    pub embedded_mesh: Option<EmbeddedMesh>,
    /// Adaptive detail (§4.7): the lattice's subdivisions are simulated
    /// where the flesh is distorted (a grab, a hard swing) and dropped where
    /// it relaxes. `None` simulates the control lattice alone.
    pub detail: Option<FleshDetail>,
    /// Dynamic morph targets (Galoppo 2008, ch. 5): sculpted rest shapes
    /// and stiffnesses at a few postures, interpolated in pose space.
    pub morph_targets: Vec<super::MorphTarget>,
    /// The flesh's time step h, s (implicit Euler, so any h is stable; a
    /// longer one is cheaper and damps more). Written only when it is not
    /// the default, so files stay as older versions wrote them.
    #[serde(skip_serializing_if = "is_default_flesh_step")]
    pub time_step: f64,
    /// Physical blendshapes of the embedded mesh (Ma et al. 2012): targets
    /// blended by the weights the postures carry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blendshapes: Option<Box<super::Blendshapes>>,
}

/// Settings of adaptive detail (Capell §4.7). Distortion is the strain with
/// the rotation removed, ‖S − I‖ of the polar factor of F, so a limb carried
/// by its bone draws no detail. The default refines at 20 % strain: on the
/// penguin's waddle (joint regions strained 10–40 %) that keeps about 180
/// detail functions near the joints at 3.6 ms a step, where 10 % keeps 300
/// at 10 ms (release, this 2-core machine); a grab draws detail either way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(default)]
pub struct FleshDetail {
    /// Subdivision levels J of the control lattice (1 or 2): each halves
    /// the cell size where detail is active.
    pub levels: u32,
    /// A cell strained more than this gets the next level's detail.
    pub refine_strain: f64,
    /// Detail goes where every cell around it is strained less than this;
    /// below `refine_strain`, so a strain between the two changes nothing
    /// (hysteresis: the level does not flicker).
    pub coarsen_strain: f64,
}

impl Default for FleshDetail {
    fn default() -> Self {
        Self {
            levels: 1,
            refine_strain: 0.2,
            coarsen_strain: 0.08,
        }
    }
}

impl Default for FemFlesh {
    fn default() -> Self {
        Self {
            target_vertices: 200,
            young: 5.0e4,
            poisson: 0.3,
            density: 1000.0,
            mass_damping: 0.5,
            stiffness_damping: 0.002,
            blend_width: Some(0.05),
            weight_strokes: Vec::new(),
            part_stiffness: Vec::new(),
            part_friction: Vec::new(),
            embedded_mesh: None,
            detail: None,
            morph_targets: Vec::new(),
            blendshapes: None,
            time_step: FLESH_TIME_STEP,
        }
    }
}

/// The FEM flesh's default time step h, s.
pub const FLESH_TIME_STEP: f64 = 1.0 / 120.0;

/// The range of [`FemFlesh::time_step`], s: down to 2 kHz, up to 15 Hz
/// (the slowest rate a contact still resolves a fall at).
pub const FLESH_TIME_STEP_RANGE: std::ops::RangeInclusive<f64> = 1.0 / 2000.0..=1.0 / 15.0;

fn is_default_flesh_step(h: &f64) -> bool {
    *h == FLESH_TIME_STEP
}

/// One brush stroke on the region weights: every lattice vertex within
/// `radius` of `centre` (rest, world) moves its weight for the region of
/// `bone` (index into the skeleton's bones, parent→child pairs in joint
/// order) by `amount` × falloff, clamped to [0, 1].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightStroke {
    /// Index of the bone whose region weight the stroke changes.
    pub bone: usize,
    /// Centre of the stroke at rest, in world coordinates, m.
    pub centre: Vec3,
    /// Radius of the stroke, m.
    pub radius: f32,
    /// Change of weight at the centre, scaled by the falloff toward `radius`.
    pub amount: f32,
}

impl FemFlesh {
    /// The stiffness scale of the part of joint `name` (1 when not set).
    pub fn part_scale(&self, name: &str) -> f64 {
        self.part_stiffness
            .iter()
            .find(|p| p.joint == name)
            .map_or(1.0, |p| p.scale)
    }

    /// These settings with the part of joint `name` at `scale` (clamped to
    /// [`PART_STIFFNESS_RANGE`]; 1 removes the entry).
    pub fn with_part_scale(&self, name: &str, scale: f64) -> FemFlesh {
        let mut f = self.clone();
        let scale = scale.clamp(*PART_STIFFNESS_RANGE.start(), *PART_STIFFNESS_RANGE.end());
        f.part_stiffness.retain(|p| p.joint != name);
        if (scale - 1.0).abs() > 1e-9 {
            f.part_stiffness.push(PartStiffness {
                joint: name.to_string(),
                scale,
            });
        }
        f
    }

    /// The friction coefficient of the part of joint `name`, if it has
    /// its own.
    pub fn part_friction(&self, name: &str) -> Option<f64> {
        self.part_friction
            .iter()
            .find(|p| p.joint == name)
            .map(|p| p.friction)
    }

    /// These settings with the part of joint `name` at friction `friction`
    /// (clamped to [`PART_FRICTION_RANGE`]; None removes the entry).
    pub fn with_part_friction(&self, name: &str, friction: Option<f64>) -> FemFlesh {
        let mut f = self.clone();
        f.part_friction.retain(|p| p.joint != name);
        if let Some(mu) = friction.filter(|m| m.is_finite()) {
            f.part_friction.push(PartFriction {
                joint: name.to_string(),
                friction: mu.clamp(*PART_FRICTION_RANGE.start(), *PART_FRICTION_RANGE.end()),
            });
        }
        f
    }
}

/// An imported triangle mesh at rest (world coordinates).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddedMesh {
    /// Where it came from (file name), for messages.
    pub source: String,
    /// Vertex positions at rest, in world coordinates, m.
    pub positions: Vec<Vec3>,
    /// Triangles as triples of indices into `positions`.
    pub triangles: Vec<[u32; 3]>,
}

impl Flesh {
    /// Whether the flesh is simulated with FEM.
    pub fn is_fem(&self) -> bool {
        matches!(self, Flesh::Fem(_))
    }

    /// The FEM flesh settings, or `None` for kinematic muscles.
    pub fn fem(&self) -> Option<&FemFlesh> {
        match self {
            Flesh::Kinematic | Flesh::Modal(_) => None,
            Flesh::Fem(f) => Some(f),
        }
    }

    /// The FEM flesh settings to edit, or `None` for kinematic muscles and
    /// modal flesh.
    pub fn fem_mut(&mut self) -> Option<&mut FemFlesh> {
        match self {
            Flesh::Kinematic | Flesh::Modal(_) => None,
            Flesh::Fem(f) => Some(f),
        }
    }

    /// The FEM model of simulated flesh, FEM or modal (the lattice, material
    /// and embedded mesh); `None` for kinematic muscles.
    pub fn lattice_model(&self) -> Option<&FemFlesh> {
        match self {
            Flesh::Kinematic => None,
            Flesh::Fem(f) => Some(f),
            Flesh::Modal(m) => Some(&m.fem),
        }
    }

    /// The modal flesh settings, or `None` unless the flesh is modal.
    pub fn modal(&self) -> Option<&ModalFlesh> {
        match self {
            Flesh::Modal(f) => Some(f),
            _ => None,
        }
    }

    /// Checks the FEM settings, if any, naming fields under `flesh.Fem`.
    pub fn validate(&self) -> Result<(), InvalidField> {
        match self {
            Flesh::Kinematic => Ok(()),
            Flesh::Fem(f) => f
                .validate()
                .map_err(|e| InvalidField::new(format!("flesh.Fem.{}", e.field), e.message)),
            Flesh::Modal(f) => f
                .validate()
                .map_err(|e| InvalidField::new(format!("flesh.Modal.{}", e.field), e.message)),
        }
    }
}

impl FemFlesh {
    /// Checks every setting's range, the weight strokes, part stiffnesses, detail
    /// thresholds and the embedded mesh's indices.
    pub fn validate(&self) -> Result<(), InvalidField> {
        let bad = |field: &str, message: String| Err(InvalidField::new(field, message));
        if !(8..=200_000).contains(&self.target_vertices) {
            return bad(
                "target_vertices",
                format!("must be in 8..=200000, got {}", self.target_vertices),
            );
        }
        if !(self.young.is_finite() && self.young > 0.0) {
            return bad("young", format!("must be > 0 Pa, got {}", self.young));
        }
        if !(self.poisson.is_finite() && (0.0..0.5).contains(&self.poisson)) {
            return bad(
                "poisson",
                format!("must be in [0, 0.5), got {}", self.poisson),
            );
        }
        if !(self.density.is_finite() && self.density > 0.0) {
            return bad(
                "density",
                format!("must be > 0 kg/m³, got {}", self.density),
            );
        }
        for (name, v) in [
            ("mass_damping", self.mass_damping),
            ("stiffness_damping", self.stiffness_damping),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(name, format!("must be finite and ≥ 0, got {v}"));
            }
        }
        if !FLESH_TIME_STEP_RANGE.contains(&self.time_step) {
            return bad(
                "time_step",
                format!(
                    "must be in [{:.5}, {:.5}] s, got {}",
                    FLESH_TIME_STEP_RANGE.start(),
                    FLESH_TIME_STEP_RANGE.end(),
                    self.time_step
                ),
            );
        }
        if let Some(w) = self.blend_width
            && !(w.is_finite() && w > 0.0)
        {
            return bad("blend_width", format!("must be > 0 m, got {w}"));
        }
        for (k, s) in self.weight_strokes.iter().enumerate() {
            if !(s.centre.is_finite()
                && s.radius.is_finite()
                && s.radius > 0.0
                && s.amount.is_finite())
            {
                return bad(
                    &format!("weight_strokes[{k}]"),
                    "centre, radius (> 0) and amount must be finite".into(),
                );
            }
        }
        for (k, p) in self.part_stiffness.iter().enumerate() {
            if !(p.scale.is_finite() && PART_STIFFNESS_RANGE.contains(&p.scale)) {
                return bad(
                    &format!("part_stiffness[{k}].scale"),
                    format!("must be in 0.001..=1000, got {}", p.scale),
                );
            }
            if self.part_stiffness[..k].iter().any(|q| q.joint == p.joint) {
                return bad(
                    &format!("part_stiffness[{k}].joint"),
                    format!("joint '{}' is listed twice", p.joint),
                );
            }
        }
        for (k, p) in self.part_friction.iter().enumerate() {
            if !(p.friction.is_finite() && PART_FRICTION_RANGE.contains(&p.friction)) {
                return bad(
                    &format!("part_friction[{k}].friction"),
                    format!("must be in 0..=10, got {}", p.friction),
                );
            }
            if self.part_friction[..k].iter().any(|q| q.joint == p.joint) {
                return bad(
                    &format!("part_friction[{k}].joint"),
                    format!("joint '{}' is listed twice", p.joint),
                );
            }
        }
        if let Some(d) = &self.detail {
            if !(1..=2).contains(&d.levels) {
                return bad("detail.levels", format!("must be 1 or 2, got {}", d.levels));
            }
            if !(d.coarsen_strain.is_finite()
                && d.refine_strain.is_finite()
                && d.coarsen_strain >= 0.0
                && d.coarsen_strain < d.refine_strain)
            {
                return bad(
                    "detail",
                    format!(
                        "need 0 ≤ coarsen_strain < refine_strain, got {} and {}",
                        d.coarsen_strain, d.refine_strain
                    ),
                );
            }
        }
        if let Some(mesh) = &self.embedded_mesh {
            if mesh.positions.iter().any(|p| !p.is_finite()) {
                return bad("embedded_mesh.positions", "must be finite".into());
            }
            let n = mesh.positions.len() as u32;
            if let Some(k) = mesh
                .triangles
                .iter()
                .position(|t| t.iter().any(|&i| i >= n))
            {
                return bad(
                    &format!("embedded_mesh.triangles[{k}]"),
                    format!("vertex index out of range (the mesh has {n} vertices)"),
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flesh_time_step_is_written_only_when_set_and_refused_out_of_range() {
        let default = FemFlesh::default();
        let text = ron::to_string(&default).unwrap();
        assert!(!text.contains("time_step"), "{text}");
        let read: FemFlesh = ron::from_str(&text).unwrap();
        assert_eq!(read.time_step, FLESH_TIME_STEP);
        let coarse = FemFlesh {
            time_step: 1.0 / 30.0,
            ..FemFlesh::default()
        };
        coarse.validate().unwrap();
        let read: FemFlesh = ron::from_str(&ron::to_string(&coarse).unwrap()).unwrap();
        assert_eq!(read, coarse);
        for h in [0.0, -1.0 / 120.0, 1e-5, 0.1, f64::NAN, f64::INFINITY] {
            let bad = FemFlesh {
                time_step: h,
                ..FemFlesh::default()
            };
            let e = bad.validate().unwrap_err();
            assert!(e.to_string().contains("time_step"), "{h}: {e}");
        }
    }
}
