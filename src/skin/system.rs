//! One skin as a second-order system for the integrators: elastic forces
//! (eq. 5), connective tissue (eq. 6), gravity and global damping (eq. 7–8),
//! with the boundary rows riding on their joints.

use super::body::PosedBody;
use super::driver::SkeletonDriver;
use super::elastic::{ElasticMaterial, Grid, Terms, add_elastic_forces, elastic_energy};
use super::integrate::SecondOrderSystem;
use crate::character::{Character, Skin};
use crate::fem::FleshSim;
use glam::Vec3;

/// Time offset for velocities of kinematic things by finite differences (s).
pub const VELOCITY_DT: f64 = 1e-4;

/// The layers under the skin at one time, with what the skin needs from them.
pub struct Underlayers {
    pub t: f64,
    pub body: PosedBody,
    /// The same layers VELOCITY_DT later (for velocities of kinematic things).
    pub later: PosedBody,
    /// World position and velocity of each point's band anchor (zero without a band).
    pub anchor_position: Vec<Vec3>,
    pub anchor_velocity: Vec<Vec3>,
    /// Prescribed state of the boundary rows: row 0 then row n−1.
    pub boundary_position: Vec<Vec3>,
    pub boundary_velocity: Vec<Vec3>,
}

impl Underlayers {
    pub fn at(character: &Character, skin: &Skin, driver: &SkeletonDriver, t: f64) -> Self {
        Self::with_flesh(character, skin, driver, None, t)
    }

    /// As [`at`](Self::at), the muscles riding on the FEM flesh if given.
    pub fn with_flesh(
        character: &Character,
        skin: &Skin,
        driver: &SkeletonDriver,
        flesh: Option<&FleshSim>,
        t: f64,
    ) -> Self {
        let body = posed_body(character, driver, flesh, t);
        let later = posed_body(character, driver, flesh, t + VELOCITY_DT);
        let inv_dt = (1.0 / VELOCITY_DT) as f32;
        let p = &skin.points;
        let mut anchor_position = vec![Vec3::ZERO; p.band.len()];
        let mut anchor_velocity = vec![Vec3::ZERO; p.band.len()];
        for (k, band) in p.band.iter().enumerate() {
            if let Some(b) = band {
                let now = body.muscles[b.muscle].to_world.transform_point3(b.anchor);
                let next = later.muscles[b.muscle].to_world.transform_point3(b.anchor);
                anchor_position[k] = now;
                anchor_velocity[k] = (next - now) * inv_dt;
            }
        }
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
            anchor_position,
            anchor_velocity,
            boundary_position,
            boundary_velocity,
        }
    }
}

/// The inner layers at time t: the skeleton from the driver, the muscles on
/// the FEM flesh where there is one.
pub fn posed_body(
    character: &Character,
    driver: &SkeletonDriver,
    flesh: Option<&FleshSim>,
    t: f64,
) -> PosedBody {
    let posture = driver.posture_at(t);
    match flesh {
        Some(f) => {
            let offsets = f.muscle_offsets(character, &posture, t);
            PosedBody::with_muscle_offsets(character, &posture, &offsets)
        }
        None => PosedBody::new(character, &posture),
    }
}

/// A skin and the layers that drive it, as the integrators see it.
pub struct SkinSystem<'a> {
    pub character: &'a Character,
    pub skin: &'a Skin,
    pub driver: &'a SkeletonDriver,
    /// The FEM flesh the muscles ride on, if any.
    pub flesh: Option<&'a FleshSim>,
    pub grid: Grid,
    /// Point mass ρ·A, its inverse (0 on the boundary rows), and the velocity
    /// damping coefficient (damping density·A + global γ·mass).
    pub mass: Vec<f32>,
    inv_mass: Vec<f32>,
    kinematic: Vec<bool>,
    damping: Vec<f32>,
    terms: Vec<Terms>,
    under: Option<Underlayers>,
    /// From the last position pass, for the velocity pass: each band's unit
    /// direction scaled by k_d·A/m (zero without a band).
    band_damping: Vec<Vec3>,
    pub force_evaluations: u64,
}

impl<'a> SkinSystem<'a> {
    pub fn new(character: &'a Character, skin: &'a Skin, driver: &'a SkeletonDriver) -> Self {
        let grid = Grid::of(skin);
        let area = grid.area();
        let p = &skin.points;
        let gamma = character.environment.global_damping;
        // Sized from the grid: the driver takes the positions out while stepping.
        let count = grid.points();
        let mut mass = Vec::with_capacity(count);
        let mut inv_mass = Vec::with_capacity(count);
        let mut damping = Vec::with_capacity(count);
        for k in 0..count {
            let m = p.mass_density[k] * area;
            mass.push(m);
            inv_mass.push(if grid.is_boundary_row(k / grid.m) {
                0.0
            } else {
                1.0 / m
            });
            damping.push(p.damping_density[k] * area + gamma * m);
        }
        let kinematic = inv_mass.iter().map(|&w| w == 0.0).collect();
        Self {
            character,
            skin,
            driver,
            flesh: None,
            grid,
            mass,
            inv_mass,
            kinematic,
            damping,
            terms: Vec::new(),
            under: None,
            band_damping: Vec::new(),
            force_evaluations: 0,
        }
    }

    /// The same system with the muscles riding on `flesh`.
    pub fn with_flesh(mut self, flesh: Option<&'a FleshSim>) -> Self {
        self.flesh = flesh;
        self.under = None;
        self
    }

    /// The underlying layers at time t (cached: the integrator stages revisit times).
    pub fn underlayers(&mut self, t: f64) -> &Underlayers {
        if self.under.as_ref().is_none_or(|u| u.t != t) {
            self.under = Some(Underlayers::with_flesh(
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
        let area = self.grid.area();
        let mut e = elastic_energy(&self.grid, &ElasticMaterial::of(self.skin), r);
        let anchors = self.underlayers(t).anchor_position.clone();
        for k in 0..r.len() {
            if self.grid.is_boundary_row(k / self.grid.m) {
                continue;
            }
            let m = self.mass[k] as f64;
            e += 0.5 * m * v[k].length_squared() as f64 - m * g.dot(r[k]) as f64;
            if let Some(b) = &self.skin.points.band[k] {
                let stretch = (r[k] - anchors[k]).length() - b.rest_length;
                e += 0.5 * (b.ks * area) as f64 * (stretch * stretch) as f64;
            }
        }
        e
    }
}

impl SecondOrderSystem for SkinSystem<'_> {
    fn len(&self) -> usize {
        self.grid.points()
    }

    fn position_acceleration(&mut self, t: f64, r: &[Vec3], a: &mut [Vec3]) {
        self.force_evaluations += 1;
        a.fill(Vec3::ZERO);
        let mat = ElasticMaterial::of(self.skin);
        add_elastic_forces(&self.grid, &mat, r, &mut self.terms, a);
        self.underlayers(t);
        let under = self.under.as_ref().expect("cached above");
        let gravity = self.character.environment.gravity;
        let area = self.grid.area();
        let bands = &self.skin.points.band;
        self.band_damping.resize(r.len(), Vec3::ZERO);
        for k in 0..r.len() {
            let w = self.inv_mass[k];
            if w == 0.0 {
                a[k] = Vec3::ZERO;
                continue;
            }
            let mut f = a[k];
            let mut damping_axis = Vec3::ZERO;
            // eq. (6a): Hookean rubber band from the anchor to the skin point.
            if let Some(b) = &bands[k] {
                let d = r[k] - under.anchor_position[k];
                let len = d.length();
                if len > 1e-9 {
                    f -= (b.ks * area * (len - b.rest_length) / len) * d;
                    // d̂·√(k_d A/m): the velocity pass needs only a dot product.
                    damping_axis = d * ((b.kd * area * w).sqrt() / len);
                }
            }
            self.band_damping[k] = damping_axis;
            a[k] = f * w + gravity;
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

    fn prescribe(&mut self, t: f64, r: &mut [Vec3], v: &mut [Vec3]) {
        let m = self.grid.m;
        let top = (self.grid.n - 1) * m;
        self.underlayers(t);
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
