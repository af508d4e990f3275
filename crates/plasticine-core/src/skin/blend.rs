//! The embedded mesh's blendshapes while the character runs: the weights
//! of the drawn posture solved to the physical blend (or blended linearly),
//! as a change of the mesh's rest shape that the flesh then carries
//! ([`FleshSim::reshape_mesh`](crate::fem::FleshSim::reshape_mesh)).

use crate::blendshape::{BlendError, BlendModel, BlendRig, MuscleObstacle, Obstacle};
use crate::character::{Character, Muscle, Skeleton};
use crate::contact::Capsule;
use crate::kinematics::PosedBody;
use glam::{DMat3, DVec3, Vec3};

/// Weights closer than this to those last solved reuse that blend.
const SAME_WEIGHTS: f32 = 1e-6;

/// A character's blendshapes, compiled, with the last blend solved.
#[derive(Debug)]
pub struct BlendRun {
    rig: BlendRig,
    model: BlendModel,
    /// Linear blending instead of the springs' equilibrium.
    linear: bool,
    /// The target weights `offsets` were solved for.
    weights: Option<Vec<f32>>,
    /// Per embedded-mesh vertex: the blend minus the base, m.
    offsets: Vec<DVec3>,
    /// Why the last solve failed (its last good blend is kept), if it did.
    failure: Option<String>,
    /// The last solve was pushed by obstacles: the next one without them
    /// lets the blend recover.
    pushed: bool,
    /// Newton starts from the last blend (scrubbing, playing); off, every
    /// solve starts from the base, so a blend depends on its weights
    /// alone (a resumed bake equals the uninterrupted one).
    pub warm_start: bool,
    /// The character's muscles at rest, where the blend is solved: its
    /// surface stays out of them (Ma et al. §4), and the skeleton and
    /// muscles they were posed from.
    muscles: Vec<Obstacle>,
    muscles_of: (Skeleton, Vec<Muscle>),
}

/// `character`'s muscles at its rest posture, as obstacles of the blend of
/// `rig` (each leaving alone the base's vertices inside it).
fn muscle_obstacles(character: &Character, rig: &BlendRig) -> Vec<Obstacle> {
    let body = PosedBody::new(character, &character.skeleton.rest_posture());
    let base: Vec<DVec3> = rig.base.iter().map(|p| p.as_dvec3()).collect();
    body.muscles
        .iter()
        .map(|m| Obstacle::Muscle(Box::new(MuscleObstacle::new(m, &base))))
        .collect()
}

impl BlendRun {
    /// The blendshapes of `character`'s embedded mesh compiled into their
    /// springs (None without blendshapes); refused as the rig would be.
    pub fn build(character: &Character) -> Result<Option<Self>, BlendError> {
        let Some(fem) = character.flesh.fem() else {
            return Ok(None);
        };
        let (Some(shapes), Some(mesh)) = (&fem.blendshapes, &fem.embedded_mesh) else {
            return Ok(None);
        };
        let rig = BlendRig::of_mesh(mesh, shapes);
        let model = BlendModel::new(&rig)?;
        Ok(Some(Self {
            offsets: vec![DVec3::ZERO; rig.base.len()],
            muscles: muscle_obstacles(character, &rig),
            muscles_of: (character.skeleton.clone(), character.muscles.clone()),
            rig,
            model,
            linear: shapes.linear,
            weights: None,
            failure: None,
            pushed: false,
            warm_start: true,
        }))
    }

    /// Takes `character`'s blendshapes in if this run can, with the rig
    /// compiled once: unchanged (an edit elsewhere keeps the solved springs
    /// and blend), or only target shapes changed (a sculpt stroke: each
    /// changed target's inside is solved again and the blend re-solved at
    /// the next call, without rebuilding the springs). `Ok(false)` when
    /// anything else changed (the mesh, the targets' number or names, the
    /// settings): then build anew. A sculpt the rig refuses is the error.
    pub fn take_in(&mut self, character: &Character) -> Result<bool, BlendError> {
        let Some(fem) = character.flesh.fem() else {
            return Ok(false);
        };
        let (Some(shapes), Some(mesh)) = (&fem.blendshapes, &fem.embedded_mesh) else {
            return Ok(false);
        };
        if self.linear != shapes.linear {
            return Ok(false);
        }
        let rig = BlendRig::of_mesh(mesh, shapes);
        if self.muscles_of.0 != character.skeleton || self.muscles_of.1 != character.muscles {
            if rig.base != self.rig.base {
                return Ok(false);
            }
            // A muscle edited: the blend is solved again against it.
            self.muscles = muscle_obstacles(character, &rig);
            self.muscles_of = (character.skeleton.clone(), character.muscles.clone());
            self.weights = None;
        }
        if rig == self.rig {
            return Ok(true);
        }
        let same_frame = rig.base == self.rig.base
            && rig.triangles == self.rig.triangles
            && rig.boundary == self.rig.boundary
            && rig.interior == self.rig.interior
            && rig.constants == self.rig.constants
            && rig.targets.len() == self.rig.targets.len()
            && rig
                .targets
                .iter()
                .zip(&self.rig.targets)
                .all(|(a, b)| a.name == b.name);
        if !same_frame {
            return Ok(false);
        }
        for (i, (new, old)) in rig.targets.iter().zip(&self.rig.targets).enumerate() {
            if new.positions != old.positions {
                self.model.reshape_target(&rig, i)?;
            }
        }
        self.rig = rig;
        // Solved again at the next call, whatever the weights.
        self.weights = None;
        Ok(true)
    }

    /// The rest-shape change for the target weights `weights` (a posture's
    /// [`blend`](crate::character::Posture::blend): missing weights are 0),
    /// solved when they changed. A failed solve keeps the last good blend
    /// and says why in [`failure`](Self::failure).
    pub fn offsets(&mut self, weights: &[f32]) -> &[DVec3] {
        self.offsets_pushed(weights, &[])
    }

    /// [`offsets`](Self::offsets) with `obstacles` (in the blend's rest
    /// frame, see [`rest_obstacles`](Self::rest_obstacles)) pushing the
    /// surface (Ma et al. §4): solved every call while they push, and once
    /// more after, so the blend recovers. The character's muscles push
    /// every solve, beside them. The linear blend is not pushed.
    pub fn offsets_pushed(&mut self, weights: &[f32], obstacles: &[Obstacle]) -> &[DVec3] {
        let n = self.rig.targets.len();
        let mut w: Vec<f32> = (0..n)
            .map(|k| weights.get(k).copied().unwrap_or(0.0))
            .collect();
        crate::character::clamp_to_simplex(&mut w);
        let same = self.weights.as_ref().is_some_and(|old| {
            old.iter()
                .zip(&w)
                .all(|(a, b)| (a - b).abs() <= SAME_WEIGHTS)
        });
        let push = !obstacles.is_empty() && !self.linear;
        if !same || push || self.pushed {
            self.solve(&w, if push { obstacles } else { &[] });
            self.weights = Some(w);
            self.pushed = push;
        }
        &self.offsets
    }

    /// The hand's capsules at time t in the blend's rest frame, for
    /// [`offsets_pushed`](Self::offsets_pushed): each end is taken back
    /// through the flesh at the nearest vertex v of `carried` (the base
    /// mesh as the flesh carries it, before the blend), to
    /// `base[v] + F⁻¹ (p − x[v])`, F at v from `gradient` (None: the vertex is
    /// outside the flesh, moved as it is).
    pub fn rest_obstacles(
        &self,
        pushers: &[Capsule],
        t: f64,
        carried: &[Vec3],
        gradient: impl Fn(usize) -> Option<DMat3>,
    ) -> Vec<Obstacle> {
        let back = |p: DVec3| -> Option<DVec3> {
            let v = (0..carried.len().min(self.rig.base.len())).min_by(|&a, &b| {
                carried[a]
                    .as_dvec3()
                    .distance_squared(p)
                    .total_cmp(&carried[b].as_dvec3().distance_squared(p))
            })?;
            let f = gradient(v).unwrap_or(DMat3::IDENTITY);
            let rest = self.rig.base[v].as_dvec3();
            let d = p - carried[v].as_dvec3();
            let local = if f.determinant().abs() > 1e-9 {
                f.inverse() * d
            } else {
                d
            };
            Some(rest + local)
        };
        pushers
            .iter()
            .filter_map(|c| {
                let c = c.at(t);
                Some(Obstacle::Capsule {
                    a: back(c.a)?,
                    b: back(c.b)?,
                    radius: c.radius,
                })
            })
            .collect()
    }

    fn solve(&mut self, w: &[f32], obstacles: &[Obstacle]) {
        if !self.warm_start {
            self.model.reset();
        }
        let rest: f64 = 1.0 - w.iter().map(|&x| f64::from(x)).sum::<f64>();
        let full: Vec<f64> = std::iter::once(rest.max(0.0))
            .chain(w.iter().map(|&x| f64::from(x)))
            .collect();
        let positions = if self.linear {
            Ok(self.model.linear(&full))
        } else {
            let all: Vec<Obstacle> = self.muscles.iter().chain(obstacles).cloned().collect();
            self.model
                .solve_with(&full, &self.rig, &all)
                .map(|blend| blend.positions)
        };
        match positions {
            Ok(x) => {
                for ((o, x), b) in self.offsets.iter_mut().zip(&x).zip(&self.rig.base) {
                    *o = *x - b.as_dvec3();
                }
                self.failure = None;
            }
            Err(e) => self.failure = Some(e.to_string()),
        }
    }

    /// Why the last solve failed, if it did (the blend before it is kept).
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// The weights of the blend drawn, one per target.
    pub fn weights(&self) -> Vec<f32> {
        let n = self.rig.targets.len();
        self.weights.clone().unwrap_or_else(|| vec![0.0; n])
    }

    /// The targets' names, in weight order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.rig.targets.iter().map(|t| t.name.as_str())
    }
}
