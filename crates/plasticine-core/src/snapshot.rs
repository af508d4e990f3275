//! The immutable picture of the simulated character that the simulation thread
//! publishes and the renderer draws (LEMAN §5.2, made concurrent). It is the
//! only thing the two share: the renderer never sees solver state and never
//! waits for a step, it takes whichever snapshot is newest.

use crate::character::{Character, Posture};
use crate::morph::MorphFrame;
use glam::{Affine3A, Vec3};
use std::sync::Arc;
use std::time::Instant;

/// The flesh at one instant, for drawing: the muscle frames' corrections and
/// the deformed lattice (and embedded mesh).
#[derive(Clone, Debug, PartialEq)]
pub struct FleshPose {
    /// Simulation time of this pose, in s.
    pub time: f64,
    /// Per muscle, the correction `L` in the muscle's own frame: the muscle's
    /// world frame is `W_joint · local · L` (identity for a rigid muscle).
    pub muscle_offsets: Vec<Affine3A>,
    /// Deformed lattice vertices `r_a` + `q_a`.
    pub lattice: Vec<Vec3>,
    /// Lattice edges (vertex pairs), for a wireframe.
    pub edges: std::sync::Arc<Vec<[u32; 2]>>,
    /// The embedded mesh's deformed vertices, if the character has one and
    /// its flesh poses it on the CPU (FEM).
    pub mesh: Option<Vec<Vec3>>,
    /// A mesh the drawing side poses itself (modal flesh's embedded mesh:
    /// its modes and skin at this instant), on the GPU where it can.
    pub morph: Option<MorphFrame>,
    /// Each grab: the grabbed point now and the hand holding it.
    pub grabs: Vec<(Vec3, Vec3)>,
    /// Active adaptive detail functions per level 1..=J (empty without
    /// adaptive detail), for the status line.
    pub detail: Vec<usize>,
    /// The dynamic morph targets' weights at this pose (name, β; empty
    /// without targets), and whether they were clamped to convex ones, for
    /// the status line.
    pub morph_weights: (Vec<(String, f32)>, bool),
    /// The embedded mesh's blendshape weights drawn (name, weight; empty
    /// without blendshapes), and why the last solve failed if it did, for
    /// the status line.
    pub blend_weights: (Vec<(String, f32)>, Option<String>),
    /// The skeleton responds (falls, is pushed): the snapshot's root is
    /// the simulation's, and the skeleton is drawn there.
    pub root_responds: bool,
}

impl FleshPose {
    /// The embedded mesh's vertices at this instant, however the flesh
    /// poses it (a morph mesh is posed here, on the CPU).
    pub fn mesh_points(&self) -> Option<std::borrow::Cow<'_, [Vec3]>> {
        match (&self.mesh, &self.morph) {
            (Some(points), _) => Some(std::borrow::Cow::Borrowed(points)),
            (None, Some(frame)) if frame.fits() => Some(std::borrow::Cow::Owned(frame.positions())),
            (None, _) => None,
        }
    }
}

/// One skin's surface at the snapshot's time: an m×n grid, periodic in i
/// (around), rows j from bottom to top, point (i, j) at `j * m + i`.
#[derive(Clone, Debug, PartialEq)]
pub struct SkinSurface {
    /// Points around the skin (periodic in i).
    pub m: usize,
    /// Rows of the skin, bottom to top.
    pub n: usize,
    /// Point positions (m), point (i, j) at `j * m + i`.
    pub positions: Vec<Vec3>,
    /// Fat thickness per point (metres), for the fat colour map.
    pub fat: Vec<f32>,
}

impl SkinSurface {
    /// The current surface of skin `s` of `character`.
    pub fn of(character: &Character, s: usize) -> Self {
        let skin = &character.skins[s];
        Self {
            m: skin.m,
            n: skin.n,
            positions: skin.points.position.clone(),
            fat: skin.points.fat.clone(),
        }
    }
}

/// What the renderer draws for one frame's worth of simulation.
#[derive(Clone, Debug)]
pub struct SceneSnapshot {
    /// The model (skeleton, muscles, connective tissue) as of `revision`.
    /// Skin point positions inside it may be stale: draw `skins`.
    pub character: Arc<Character>,
    /// Edit revision of `character` (the history's revision).
    pub revision: u64,
    /// Skeleton posture at `sim_time`.
    pub posture: Posture,
    /// The skins' surfaces at `sim_time`, one per skin of `character`.
    pub skins: Vec<SkinSurface>,
    /// Simulation time of this snapshot (seconds).
    pub sim_time: f64,
    /// The FEM flesh at `sim_time` (muscle offsets, deformed lattice and
    /// embedded mesh); None for kinematic flesh.
    pub flesh: Option<Arc<FleshPose>>,
    /// Publication counter: increases by one per snapshot.
    pub sequence: u64,
    /// When the simulation thread published it (for snapshot age).
    pub published: Instant,
}

impl SceneSnapshot {
    /// A snapshot of `character` as it stands (skins at their stored
    /// positions), at `posture`.
    pub fn of(character: Arc<Character>, posture: Posture, revision: u64) -> Self {
        let skins = (0..character.skins.len())
            .map(|s| SkinSurface::of(&character, s))
            .collect();
        Self {
            character,
            revision,
            posture,
            skins,
            sim_time: 0.0,
            flesh: None,
            sequence: 0,
            published: Instant::now(),
        }
    }

    /// `edit` (a posture of the same skeleton) with the root where the
    /// simulation holds it, when the skeleton responds (falls, is pushed);
    /// None when it does not or the skeletons differ.
    pub fn with_simulated_root(&self, edit: &Posture) -> Option<Posture> {
        let responds = self.flesh.as_ref().is_some_and(|f| f.root_responds);
        if !responds || edit.angles.is_empty() || edit.angles.len() != self.posture.angles.len() {
            return None;
        }
        let mut p = edit.clone();
        p.root_translation = self.posture.root_translation;
        p.angles[0] = self.posture.angles[0];
        Some(p)
    }

    /// Where points `points` of skin `skin` are (those it has; none when
    /// there is no such skin).
    pub fn skin_points(&self, skin: usize, points: &[usize]) -> Vec<Vec3> {
        self.skins.get(skin).map_or_else(Vec::new, |s| {
            points
                .iter()
                .filter_map(|&k| s.positions.get(k).copied())
                .collect()
        })
    }
}
