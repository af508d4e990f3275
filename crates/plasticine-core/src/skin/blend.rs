//! The embedded mesh's blendshapes while the character runs: the weights
//! of the drawn posture solved to the physical blend (or blended linearly),
//! as a change of the mesh's rest shape that the flesh then carries
//! ([`FleshSim::reshape_mesh`](crate::fem::FleshSim::reshape_mesh)).

use crate::blendshape::{BlendError, BlendModel, BlendRig};
use crate::character::Character;
use glam::DVec3;

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
            rig,
            model,
            linear: shapes.linear,
            weights: None,
            failure: None,
        }))
    }

    /// Whether `character` would compile to the same blend (same mesh,
    /// targets and settings): an edit elsewhere keeps the solved springs.
    pub fn fits(&self, character: &Character) -> bool {
        let Some(fem) = character.flesh.fem() else {
            return false;
        };
        match (&fem.blendshapes, &fem.embedded_mesh) {
            (Some(shapes), Some(mesh)) => {
                self.linear == shapes.linear && self.rig == BlendRig::of_mesh(mesh, shapes)
            }
            _ => false,
        }
    }

    /// The rest-shape change for the target weights `weights` (a posture's
    /// [`blend`](crate::character::Posture::blend): missing weights are 0),
    /// solved when they changed. A failed solve keeps the last good blend
    /// and says why in [`failure`](Self::failure).
    pub fn offsets(&mut self, weights: &[f32]) -> &[DVec3] {
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
        if !same {
            self.solve(&w);
            self.weights = Some(w);
        }
        &self.offsets
    }

    fn solve(&mut self, w: &[f32]) {
        let rest: f64 = 1.0 - w.iter().map(|&x| f64::from(x)).sum::<f64>();
        let full: Vec<f64> = std::iter::once(rest.max(0.0))
            .chain(w.iter().map(|&x| f64::from(x)))
            .collect();
        let positions = if self.linear {
            Ok(self.model.linear(&full))
        } else {
            self.model
                .solve(&full, &self.rig)
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
