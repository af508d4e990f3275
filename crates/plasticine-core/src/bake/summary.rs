//! What a finished or cancelled bake did: the summary `summary.json` holds.

use super::smoothness::WorstFrame;
use crate::io::CacheFlesh;
use crate::skin::{Simulation, SkinStats};
use serde::Serialize;
use std::path::PathBuf;

/// What the responding skeleton's contact did over a bake.
#[derive(Clone, Debug, Serialize)]
pub struct ContactSummary {
    /// The lowest point of any contact proxy over the bake, m over the
    /// ground (negative: inside it).
    pub min_ground_clearance_m: f64,
    /// The lowest bone end over the bake, m over the ground.
    pub min_bone_clearance_m: f64,
    /// The deepest a proxy was inside an obstacle after a step, before the
    /// position correction moved it out (m; Galoppo eq. 3.21).
    pub max_corrected_depth_m: f64,
    /// Contact proxies on the flesh.
    pub proxies: usize,
    /// The most contacts of one flesh step.
    pub max_contacts: usize,
    /// Contacts per flesh step, averaged.
    pub mean_contacts: f64,
    /// Flesh steps taken with the skeleton responding.
    pub steps: u64,
    /// The core's speed at the end, m/s (≈ 0: it has settled).
    pub final_speed_m_s: f64,
    /// The most contacts with the second character of one flesh step
    /// (`--with`; 0 without one).
    pub max_contacts_between: usize,
}

/// What a bake did for one skin: its resolution and the solver's counters.
#[derive(Clone, Debug, Serialize)]
pub struct SkinSummary {
    /// Name of the skin.
    pub name: String,
    /// Points around the skin (periodic).
    pub m: usize,
    /// Rows of the skin, bottom to top.
    pub n: usize,
    /// The solver's counters for this skin.
    pub stats: SkinStats,
    /// Its least smooth frame.
    pub worst_frame: WorstFrame,
}

/// What a finished bake did; also written to `summary.json` in the output folder.
#[derive(Clone, Debug, Serialize)]
pub struct BakeSummary {
    /// Name of the baked character.
    pub character: String,
    /// Name of the integrator used (such as `rk4`).
    pub integrator: String,
    /// Frames in the cache.
    pub frames: usize,
    /// Frames per simulated second.
    pub fps: f32,
    /// Simulated time baked, in s.
    pub simulated_seconds: f64,
    /// Wall time spent baking, in s, including the parts before any resume.
    pub wall_seconds: f64,
    /// Simulated seconds per wall second.
    pub real_time_factor: f64,
    /// One summary per skin, in the character's order.
    pub skins: Vec<SkinSummary>,
    /// What the cache holds of the FEM flesh per frame: the embedded meshes
    /// (name, vertex count) and the number of muscle offsets.
    pub flesh: CacheFlesh,
    /// Divergences and what was done about them.
    pub events: Vec<String>,
    /// Path of the finished frame cache.
    pub cache: PathBuf,
    /// Size of the finished frame cache, in bytes.
    pub cache_bytes: u64,
    /// Frames also written as OBJ.
    pub obj_frames: usize,
    /// What the responding skeleton's contact did (a bake with a ground).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact: Option<Box<ContactSummary>>,
    /// The second character's bake (`--with`), in [`WITH_DIR`](super::WITH_DIR).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub with: Option<Box<BakeSummary>>,
}

/// A bake stopped between two frames, resumable with [`BakeStart::Resume`](super::BakeStart::Resume).
#[derive(Clone, Debug, Serialize)]
pub struct BakeCancelled {
    /// Name of the character being baked.
    pub character: String,
    /// Frames baked (the first `done` of the cache).
    pub done: usize,
    /// Frames the finished bake has.
    pub frames: usize,
    /// Path of the checkpoint to resume from.
    pub checkpoint: PathBuf,
    /// The partial cache, readable as it is.
    pub partial: PathBuf,
}

/// How a bake ended (errors aside).
#[derive(Clone, Debug)]
pub enum BakeOutcome {
    /// Every frame was baked and the cache is in place.
    Finished(BakeSummary),
    /// Cancelled between two frames, leaving a checkpoint.
    Cancelled(BakeCancelled),
}

impl BakeOutcome {
    /// The summary of a finished bake, or `None` if it was cancelled.
    pub fn finished(self) -> Option<BakeSummary> {
        match self {
            BakeOutcome::Finished(s) => Some(s),
            BakeOutcome::Cancelled(_) => None,
        }
    }
}

/// The responding skeleton's contact figures, if it responds.
pub(super) fn contact_summary(sim: &Simulation) -> Option<Box<ContactSummary>> {
    let core = sim.flesh()?.core()?;
    let t = &core.totals;
    Some(Box::new(ContactSummary {
        min_ground_clearance_m: t.min_clearance,
        min_bone_clearance_m: t.min_bone_clearance,
        max_corrected_depth_m: t.max_corrected,
        proxies: core.proxy_count(),
        max_contacts: t.max_contacts,
        mean_contacts: t.contacts as f64 / t.steps.max(1) as f64,
        steps: t.steps,
        final_speed_m_s: core.velocity.length(),
        max_contacts_between: t.max_between,
    }))
}

/// Each skin's resolution, solver counters and worst frame (`worst`, from
/// the finished cache), in the character's order.
pub(super) fn skin_summaries(sim: &Simulation, worst: Vec<WorstFrame>) -> Vec<SkinSummary> {
    sim.character
        .skins
        .iter()
        .zip(worst)
        .enumerate()
        .map(|(s, (skin, worst_frame))| SkinSummary {
            name: skin.name.clone(),
            m: skin.m,
            n: skin.n,
            stats: sim.stats(s),
            worst_frame,
        })
        .collect()
}
