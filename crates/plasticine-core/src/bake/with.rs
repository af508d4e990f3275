//! A second character in a bake (`bake --drop H --with OTHER [--at X,Y,Z]`):
//! both skeletons respond on the same ground and their flesh touches
//! (`Simulation::advance_together`), so one can walk, fall or be thrown into
//! the other. The second one's frames go to their own cache in
//! [`WITH_DIR`] under the bake's folder (render it with its own file and
//! that cache), its summary into the first's `summary.json` (`with`) and
//! its own.
//!
//! Such a bake leaves no checkpoint yet: cancelled, it must start over.

use super::frames::{
    BakePaths, Baked, FrameOut, Run, bake_identity, begin, describe, embedded_triangles, finish,
    layout, write_frame,
};
use super::options::{
    BESIDE_GAP, BakeError, BakeOptions, BakeStart, SecondCharacter, check_options,
};
use super::summary::BakeSummary;
use crate::character::resample;
use crate::io::{CacheFlesh, IoError};
use crate::skin::{AdvanceReport, Simulation, SkeletonDriver};
use glam::DVec3;

/// The folder, under the bake's, of the second character's bake.
pub const WITH_DIR: &str = "with";

/// The second character's bake under way.
pub(super) struct Second {
    pub(super) sim: Simulation,
    name: String,
    paths: BakePaths,
    flesh_layout: CacheFlesh,
    triangles: Vec<[u32; 3]>,
    run: Option<Run>,
}

/// The refusal of a cancelled bake with a second character.
pub(super) fn cancelled(done: usize, total: usize) -> BakeError {
    BakeError::Options(format!(
        "cancelled after frame {done} of {total}: a bake with a second character (--with) leaves no checkpoint yet, so it cannot be resumed; bake it again with --restart"
    ))
}

/// The most a character's contact proxies reach along `sign` · x.
fn reach(sim: &Simulation, sign: f64) -> Option<f64> {
    let flesh = sim.flesh()?;
    let core = flesh.core()?;
    core.proxy_positions(flesh.lattice(), flesh.q())
        .iter()
        .map(|p| sign * p.x)
        .reduce(f64::max)
}

impl Second {
    /// The second character's simulation, on the first's (`first`'s)
    /// ground, placed; refused for a resumed bake or one without a ground.
    pub(super) fn new(
        with: &SecondCharacter,
        first: &Simulation,
        opts: &BakeOptions,
        out_dir: &std::path::Path,
    ) -> Result<Self, BakeError> {
        let Some(ground) = opts.ground else {
            return Err(BakeError::Options(
                "a second character (--with) needs the ground (--drop H): the two meet only where their skeletons respond".into(),
            ));
        };
        if opts.start == BakeStart::Resume {
            return Err(BakeError::Options(
                "a bake with a second character (--with) cannot be resumed yet; bake it again with --restart".into(),
            ));
        }
        let mut character = with.character.clone();
        check_options(&character, opts)?;
        if let Some((m, n)) = opts.resolution {
            for skin in &mut character.skins {
                *skin = resample(skin, m, n)?;
            }
        }
        let name = character.name.clone();
        let triangles = embedded_triangles(&character);
        let driver = SkeletonDriver::Keys(character.key_postures.clone());
        let mut sim = Simulation::new(character, driver, opts.settings.clone())?;
        sim.set_blend_warm_start(false);
        sim.make_dynamic(ground.plane, ground.drop)?;
        let offset = match with.offset {
            Some(offset) => offset,
            None => {
                let (Some(right), Some(left)) = (reach(first, 1.0), reach(&sim, -1.0)) else {
                    return Err(BakeError::Options(
                        "the characters have no contact proxies to stand side by side".into(),
                    ));
                };
                DVec3::X * (right + left + BESIDE_GAP)
            }
        };
        if !offset.is_finite() {
            return Err(BakeError::Options(format!(
                "the second character's place must be finite, got {offset}"
            )));
        }
        sim.place(offset)?;
        let dir = out_dir.join(WITH_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| IoError::os(&dir, "create the folder", e))?;
        Ok(Self {
            flesh_layout: layout(&sim),
            sim,
            name,
            paths: BakePaths::in_dir(&dir),
            triangles,
            run: None,
        })
    }

    /// Opens its cache (the simulation already at the bake's start).
    pub(super) fn begin(
        &mut self,
        opts: &BakeOptions,
        fingerprint: u64,
        (duration, start, total): (f64, f64, usize),
    ) -> Result<(), BakeError> {
        let identity = bake_identity(
            &self.sim.character,
            opts,
            fingerprint,
            duration,
            start,
            total,
        );
        let run = begin(
            &mut self.sim,
            opts,
            &self.paths,
            &identity,
            &self.flesh_layout,
            start,
        )?;
        self.run = Some(run);
        Ok(())
    }

    /// Keeps what an advance reported.
    pub(super) fn note(&mut self, report: &AdvanceReport) {
        if let Some(run) = &mut self.run {
            run.events.extend(report.events.iter().map(describe));
        }
    }

    /// Writes frame `f` (time `t`) to its cache.
    pub(super) fn write_frame(
        &mut self,
        opts: &BakeOptions,
        f: usize,
        t: f64,
    ) -> Result<(), BakeError> {
        let run = self.run.as_mut().expect("begun before the frames");
        let out = FrameOut {
            flesh_layout: &self.flesh_layout,
            triangles: &self.triangles,
            obj_every: opts.obj_every,
            obj_dir: &self.paths.dir.join("obj"),
        };
        if write_frame(&self.sim, &mut run.cache, &out, f, t)? {
            run.obj_frames += 1;
        }
        Ok(())
    }

    /// Finishes its cache and writes its own `summary.json`.
    pub(super) fn finish(self, opts: &BakeOptions, done: Baked) -> Result<BakeSummary, BakeError> {
        let run = self.run.expect("begun before the frames");
        let summary = finish(&self.sim, opts, run, &self.paths, self.name, done)?;
        let json = serde_json::to_string_pretty(&summary).expect("summary serializes");
        crate::io::write_atomic(&self.paths.dir.join("summary.json"), json.as_bytes())?;
        Ok(summary)
    }
}
