//! One skin as a second-order system for the integrators: elastic forces
//! (eq. 5), connective tissue (eq. 6), gravity and global damping (eq. 7–8),
//! with the boundary rows riding on their joints.

use super::driver::SkeletonDriver;
use super::elastic::{ElasticMaterial, Grid, Scratch, add_elastic_forces, elastic_energy};
use super::flesh::FleshRun;
use super::integrate::SecondOrderSystem;
use crate::character::{Character, Skin};
use crate::kinematics::PosedBody;
use glam::Vec3;
use points::Points;

/// Inertia per point with selective mass scaling (see [`MASS_SCALING_FACTOR`]).
fn scaled_inertia(grid: &Grid, material: &ElasticMaterial, mass: &[f32]) -> Vec<f32> {
    let stiffness: Vec<f32> = (0..mass.len())
        .map(|k| material.local_stiffness(grid, k))
        .collect();
    let mut omega2: Vec<f32> = (grid.m..mass.len() - grid.m)
        .map(|k| stiffness[k] / mass[k])
        .filter(|w| w.is_finite())
        .collect();
    if omega2.is_empty() {
        return mass.to_vec();
    }
    let mid = omega2.len() / 2;
    let median = *omega2.select_nth_unstable_by(mid, f32::total_cmp).1;
    let cap = median * MASS_SCALING_FACTOR * MASS_SCALING_FACTOR;
    if cap.is_nan() || cap <= 0.0 {
        return mass.to_vec();
    }
    (0..mass.len())
        .map(|k| mass[k].max(stiffness[k] / cap))
        .collect()
}

/// Time offset for velocities of kinematic things by finite differences (s).
pub const VELOCITY_DT: f64 = 1e-4;

/// The layers under the skin at one time, with what the skin needs from them.
pub struct Underlayers {
    /// Time the layers are posed at (s).
    pub t: f64,
    /// Joints and muscles in the world at `t`.
    pub body: PosedBody,
    /// The same layers `VELOCITY_DT` later (for velocities of kinematic things).
    pub later: PosedBody,
    /// World position and velocity of each point's band anchor (zero without
    /// a band; empty from [`SkinSystem::layers`]).
    pub anchor_position: Vec<Vec3>,
    /// World velocity of each point's band anchor (m/s; zero without a band;
    /// empty from [`SkinSystem::layers`]).
    pub anchor_velocity: Vec<Vec3>,
    /// Prescribed state of the boundary rows: row 0 then row n−1.
    pub boundary_position: Vec<Vec3>,
    /// Prescribed velocity of the boundary rows (m/s), ordered as `boundary_position`.
    pub boundary_velocity: Vec<Vec3>,
}

impl Underlayers {
    /// The layers at time `t` (s) with kinematic muscles (no FEM flesh).
    pub fn at(character: &Character, skin: &Skin, driver: &SkeletonDriver, t: f64) -> Self {
        Self::with_flesh(character, skin, driver, None, t)
    }

    /// As [`at`](Self::at), the muscles riding on the FEM flesh if given.
    pub fn with_flesh(
        character: &Character,
        skin: &Skin,
        driver: &SkeletonDriver,
        flesh: Option<&FleshRun>,
        t: f64,
    ) -> Self {
        let mut layers = Self::without_bands(character, skin, driver, flesh, t);
        layers.add_band_anchors(skin);
        layers
    }

    /// As [`with_flesh`](Self::with_flesh) without the band anchors (left
    /// empty): what the boundary rows and the fat layer need.
    fn without_bands(
        character: &Character,
        skin: &Skin,
        driver: &SkeletonDriver,
        flesh: Option<&FleshRun>,
        t: f64,
    ) -> Self {
        let body = posed_body(character, driver, flesh, t);
        let later = posed_body(character, driver, flesh, t + VELOCITY_DT);
        let inv_dt = (1.0 / VELOCITY_DT) as f32;
        let m = skin.m;
        let mut boundary_position = Vec::with_capacity(2 * m);
        let mut boundary_velocity = Vec::with_capacity(2 * m);
        for (row, joint) in [(0, skin.bottom_joint), (1, skin.top_joint)] {
            for i in 0..m {
                let local = skin.boundary_local[row * m + i];
                let now = body.joints[joint].transform_point3(local);
                let next = later.joints[joint].transform_point3(local);
                boundary_position.push(now);
                boundary_velocity.push((next - now) * inv_dt);
            }
        }
        Self {
            t,
            body,
            later,
            anchor_position: Vec::new(),
            anchor_velocity: Vec::new(),
            boundary_position,
            boundary_velocity,
        }
    }

    /// Whether the band anchors are in (see [`without_bands`](Self::without_bands)).
    fn has_band_anchors(&self, skin: &Skin) -> bool {
        self.anchor_position.len() == skin.points.band.len()
    }

    /// Poses each band's anchor on its muscle, now and its velocity.
    fn add_band_anchors(&mut self, skin: &Skin) {
        let inv_dt = (1.0 / VELOCITY_DT) as f32;
        let p = &skin.points;
        self.anchor_position = vec![Vec3::ZERO; p.band.len()];
        self.anchor_velocity = vec![Vec3::ZERO; p.band.len()];
        for (k, band) in p.band.iter().enumerate() {
            if let Some(b) = band {
                let now = self.body.muscles[b.muscle]
                    .to_world
                    .transform_point3(b.anchor);
                let next = self.later.muscles[b.muscle]
                    .to_world
                    .transform_point3(b.anchor);
                self.anchor_position[k] = now;
                self.anchor_velocity[k] = (next - now) * inv_dt;
            }
        }
    }
}

/// The inner layers at time t: the skeleton from the driver, the muscles on
/// the FEM flesh where there is one.
pub fn posed_body(
    character: &Character,
    driver: &SkeletonDriver,
    flesh: Option<&FleshRun>,
    t: f64,
) -> PosedBody {
    let posture = driver.posture_at(t);
    match flesh {
        Some(f) => {
            let posture = f.posture(character, &posture, t);
            let offsets = f.muscle_offsets(character, &posture, t);
            PosedBody::with_muscle_offsets(character, &posture, &offsets)
        }
        None => PosedBody::new(character, &posture),
    }
}

/// A skin and the layers that drive it, as the integrators see it.
pub struct SkinSystem<'a> {
    /// The character the skin belongs to.
    pub character: &'a Character,
    /// The skin being simulated; positions and velocities are passed to each call instead.
    pub skin: &'a Skin,
    /// What poses the skeleton at each time.
    pub driver: &'a SkeletonDriver,
    /// The FEM flesh the muscles ride on, if any.
    pub flesh: Option<&'a FleshRun>,
    /// The hand's capsules pushing the character (the skin is held out of
    /// them).
    pub pushers: &'a [crate::contact::Capsule],
    /// The skin's m×n grid.
    pub grid: Grid,
    /// Point mass ρ·a (a the point's rest area), its inertia (the mass, or
    /// more where selective mass scaling caps a stiff point's frequency), the
    /// inverse inertia (0 on the boundary rows), the share of gravity per
    /// unit inertia (mass/inertia), and the velocity damping coefficient
    /// (damping density·a + global γ·inertia).
    pub mass: Vec<f32>,
    /// Inertia of each point (kg): its mass, or more where mass scaling caps its frequency.
    pub inertia: Vec<f32>,
    inv_mass: Vec<f32>,
    weight: Vec<f32>,
    kinematic: Vec<bool>,
    damping: Vec<f32>,
    /// Each point's rest area (m²): densities are per unit of it.
    area: Vec<f32>,
    material: ElasticMaterial,
    scratch: Scratch,
    under: Option<Underlayers>,
    /// From the last position pass, for the velocity pass: each band's unit
    /// direction scaled by √(`k_d·a/inertia`) (zero without a band).
    band_damping: Vec<Vec3>,
    /// The per-point coefficients, a field per array, for the lanes.
    lanes: lanes::Coefficients,
    /// Evaluations of the position-dependent (full) forces so far.
    pub force_evaluations: u64,
}

/// Selective mass scaling: no point's local frequency may exceed this many
/// times the skin's median. Where a grid gathers to its rings the around
/// edges get short and stiff; without it those few rows would set the
/// explicit step for the whole skin (measured: 5× more steps on the samples).
/// The inertia added there is a small share of the skin's mass (it is where
/// the patches are smallest) and gravity still pulls on the true mass.
pub const MASS_SCALING_FACTOR: f32 = 1.5;

impl<'a> SkinSystem<'a> {
    /// The system of `skin`, one of `character`'s skins, driven by `driver`, with masses,
    /// mass scaling and damping precomputed; no FEM flesh until `with_flesh`.
    pub fn new(character: &'a Character, skin: &'a Skin, driver: &'a SkeletonDriver) -> Self {
        let grid = Grid::of(skin);
        let p = &skin.points;
        let gamma = character.environment.global_damping;
        let material = ElasticMaterial::of(skin);
        let area = super::elastic::rest_areas(&grid, &p.rest_metric);
        // Sized from the grid: the driver takes the positions out while stepping.
        let count = grid.points();
        let mass: Vec<f32> = (0..count).map(|k| p.mass_density[k] * area[k]).collect();
        let inertia = scaled_inertia(&grid, &material, &mass);
        let mut inv_mass = Vec::with_capacity(count);
        let mut weight = Vec::with_capacity(count);
        let mut damping = Vec::with_capacity(count);
        for k in 0..count {
            inv_mass.push(if grid.is_boundary_row(k / grid.m) {
                0.0
            } else {
                1.0 / inertia[k]
            });
            weight.push(mass[k] / inertia[k]);
            damping.push(p.damping_density[k] * area[k] + gamma * inertia[k]);
        }
        let kinematic = inv_mass.iter().map(|&w| w == 0.0).collect();
        let lanes = lanes::Coefficients::of(&Points {
            inv_mass: &inv_mass,
            weight: &weight,
            damping: &damping,
            area: &area,
            band: &p.band,
            anchor_position: &[],
            anchor_velocity: &[],
            gravity: Vec3::ZERO,
        });
        Self {
            character,
            skin,
            driver,
            flesh: None,
            pushers: &[],
            grid,
            mass,
            inertia,
            inv_mass,
            weight,
            kinematic,
            damping,
            area,
            material,
            scratch: Scratch::default(),
            under: None,
            band_damping: Vec::new(),
            lanes,
            force_evaluations: 0,
        }
    }

    /// The smallest edge stretch at the last force evaluation's positions,
    /// measured on the way (`None` before the first).
    pub fn last_min_stretch(&self) -> Option<f32> {
        self.scratch.min_stretch
    }

    /// The smallest edge stretch of positions `r` (see `super::elastic::min_stretch`).
    pub fn min_stretch(&self, r: &[Vec3]) -> f32 {
        super::elastic::min_stretch(&self.grid, &self.material, r)
    }

    /// The share of the skin's inertia added by mass scaling (0 = none).
    pub fn added_inertia(&self) -> f32 {
        let free = |k: &usize| !self.kinematic[*k];
        let m: f32 = (0..self.mass.len())
            .filter(free)
            .map(|k| self.mass[k])
            .sum();
        let i: f32 = (0..self.mass.len())
            .filter(free)
            .map(|k| self.inertia[k])
            .sum();
        if m > 0.0 { i / m - 1.0 } else { 0.0 }
    }

    /// The same system with the muscles riding on `flesh`.
    pub fn with_flesh(mut self, flesh: Option<&'a FleshRun>) -> Self {
        self.flesh = flesh;
        self.under = None;
        self
    }

    /// The hand's capsules the skin is held out of.
    pub fn with_pushers(mut self, pushers: &'a [crate::contact::Capsule]) -> Self {
        self.pushers = pushers;
        self
    }

    /// The underlying layers at time t, band anchors included (cached: the
    /// integrator stages revisit times).
    pub fn underlayers(&mut self, t: f64) -> &Underlayers {
        self.layers(t);
        let under = self.under.as_mut().expect("just set");
        if !under.has_band_anchors(self.skin) {
            under.add_band_anchors(self.skin);
        }
        under
    }

    /// The underlying layers at time t, the band anchors only if already
    /// there: a step's end needs only the boundary rows and the muscles, and
    /// its bands are posed at its middle.
    pub fn layers(&mut self, t: f64) -> &Underlayers {
        if self.under.as_ref().is_none_or(|u| u.t != t) {
            self.under = Some(Underlayers::without_bands(
                self.character,
                self.skin,
                self.driver,
                self.flesh,
                t,
            ));
        }
        self.under.as_ref().expect("just set")
    }

    /// Total energy (J): kinetic + elastic + connective tissue + gravity.
    pub fn energy(&mut self, t: f64, r: &[Vec3], v: &[Vec3]) -> f64 {
        let g = self.character.environment.gravity;
        let mut e = elastic_energy(&self.grid, &self.material, r);
        let anchors = self.underlayers(t).anchor_position.clone();
        for k in 0..r.len() {
            if self.grid.is_boundary_row(k / self.grid.m) {
                continue;
            }
            let (m, inertia) = (self.mass[k] as f64, self.inertia[k] as f64);
            e += 0.5 * inertia * v[k].length_squared() as f64 - m * g.dot(r[k]) as f64;
            if let Some(b) = &self.skin.points.band[k] {
                let stretch = (r[k] - anchors[k]).length() - b.rest_length;
                e += 0.5 * (b.ks * self.area[k]) as f64 * (stretch * stretch) as f64;
            }
        }
        e
    }
}

/// The per-point coefficients of `$sys` and the anchors of its layers
/// `$under`, borrowed field by field for a pass over the points (so the
/// pass may write the system's other fields).
macro_rules! points {
    ($sys:ident, $under:ident) => {
        Points {
            inv_mass: &$sys.inv_mass,
            weight: &$sys.weight,
            damping: &$sys.damping,
            area: &$sys.area,
            band: &$sys.skin.points.band,
            anchor_position: &$under.anchor_position,
            anchor_velocity: &$under.anchor_velocity,
            gravity: $sys.character.environment.gravity,
        }
    };
}

impl SecondOrderSystem for SkinSystem<'_> {
    fn len(&self) -> usize {
        self.grid.points()
    }

    fn position_acceleration(&mut self, t: f64, r: &[Vec3], a: &mut [Vec3]) {
        self.force_evaluations += 1;
        a.fill(Vec3::ZERO);
        add_elastic_forces(&self.grid, &self.material, r, &mut self.scratch, a);
        self.underlayers(t);
        let under = self.under.as_ref().expect("cached above");
        let points = points!(self, under);
        self.band_damping.resize(r.len(), Vec3::ZERO);
        // Eight points at a time, the tail one by one (the same arithmetic).
        let grouped = r.len() / lanes::LANES * lanes::LANES;
        let anchors = (points.gravity, points.anchor_position);
        for k0 in (0..grouped).step_by(lanes::LANES) {
            lanes::accelerations(&self.lanes, anchors, k0, r, a, &mut self.band_damping);
        }
        for k in grouped..r.len() {
            (a[k], self.band_damping[k]) = points.acceleration(k, r[k], a[k]);
        }
    }

    fn add_velocity_acceleration(&mut self, t: f64, _r: &[Vec3], v: &[Vec3], a: &mut [Vec3]) {
        self.underlayers(t);
        let under = self.under.as_ref().expect("cached above");
        for k in 0..v.len() {
            let w = self.inv_mass[k];
            if w == 0.0 {
                continue;
            }
            // eq. (8) and the skin's own damping density.
            let mut acc = -(self.damping[k] * w) * v[k];
            // eq. (6b): band damping along the band, k_d (Δv·d̂) d̂ / m, with
            // √(k_d A/m)·d̂ cached by the position pass.
            let s = self.band_damping[k];
            acc -= (v[k] - under.anchor_velocity[k]).dot(s) * s;
            a[k] += acc;
        }
    }

    /// The skin's velocity forces are linear in v, a 3×3 damping per point
    /// D = c·I + s·sᵀ (the skin's and the global damping c, the band's along
    /// s): `(I + ½hD)·v_new = v + h·a_pos − ½hD·v + h·s(s·u)`, u the band
    /// anchor's velocity, solved by Sherman–Morrison. What the fixed point
    /// of eq. 10c–10g converges to, exactly, for one pass over the points
    /// (measured: two velocity passes and two error norms a step before).
    fn kick_at_mean_velocity(
        &mut self,
        t: f64,
        _r: &[Vec3],
        v: &[Vec3],
        a_pos: &[Vec3],
        h: f32,
        v_new: &mut [Vec3],
    ) -> bool {
        self.underlayers(t);
        let under = self.under.as_ref().expect("cached above");
        let points = points!(self, under);
        let grouped = v.len() / lanes::LANES * lanes::LANES;
        let state = (v, a_pos, &self.band_damping[..]);
        for k0 in (0..grouped).step_by(lanes::LANES) {
            lanes::kicks(&self.lanes, points.anchor_velocity, k0, state, h, v_new);
        }
        for k in grouped..v.len() {
            v_new[k] = points.kick(k, v[k], a_pos[k], self.band_damping[k], h);
        }
        true
    }

    fn prescribe(&mut self, t: f64, r: &mut [Vec3], v: &mut [Vec3]) {
        let m = self.grid.m;
        let top = (self.grid.n - 1) * m;
        self.layers(t);
        let under = self.under.as_ref().expect("cached above");
        r[..m].copy_from_slice(&under.boundary_position[..m]);
        v[..m].copy_from_slice(&under.boundary_velocity[..m]);
        r[top..top + m].copy_from_slice(&under.boundary_position[m..]);
        v[top..top + m].copy_from_slice(&under.boundary_velocity[m..]);
    }

    fn is_kinematic(&self, k: usize) -> bool {
        self.kinematic[k]
    }

    fn kinematic_mask(&self) -> Option<&[bool]> {
        Some(&self.kinematic)
    }
}

mod lanes;
mod points;
