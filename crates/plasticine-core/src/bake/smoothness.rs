//! How smooth each skin stayed over a finished bake: its worst frame by the
//! neighbour-normal angle ([`crate::skin::smoothness`]), read back from the
//! cache, so a resumed bake counts the frames of every run.

use crate::io::{CacheReader, IoError};
use crate::skin::{Grid, smoothness};
use serde::Serialize;
use std::path::Path;

/// Share of neighbour pairs (%) that must crease beyond those creased at
/// the first frame for a finished bake to warn that a skin crumpled: a few
/// pairs may fold where the motion asks for a wrinkle, and a coarse grid
/// has some over 30° at rest (the 16×16 penguin's body: 4 %).
pub const CRUMPLED_PCT: f32 = 2.0;

/// One skin's worst frame of a bake.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct WorstFrame {
    /// Index of the frame (in the cache).
    pub frame: usize,
    /// Its time (s).
    pub time_s: f64,
    /// 95th percentile of the neighbour-normal angle there (degrees).
    pub p95_deg: f32,
    /// Share of neighbour pairs over 30° there (%).
    pub creased_pct: f32,
    /// The same share at the first frame (%).
    pub first_creased_pct: f32,
}

impl WorstFrame {
    /// Whether the skin crumpled there (see [`CRUMPLED_PCT`]).
    pub fn crumpled(&self) -> bool {
        self.creased_pct >= self.first_creased_pct + CRUMPLED_PCT
    }
}

/// Each skin's worst frame in the cache at `path` (the frame with the
/// largest p95 angle), in the cache's skin order.
pub fn worst_frames(path: &Path) -> Result<Vec<WorstFrame>, IoError> {
    let mut reader = CacheReader::open(path)?;
    let grids: Vec<Grid> = reader.skins().iter().map(|s| Grid::new(s.m, s.n)).collect();
    let mut worst = vec![WorstFrame::default(); grids.len()];
    let mut positions = Vec::new();
    for frame in 0..reader.frame_count() {
        let time_s = reader.read_frame(frame, &mut positions)?;
        for ((w, grid), p) in worst.iter_mut().zip(&grids).zip(&positions) {
            let s = smoothness(grid, p);
            if frame == 0 {
                w.first_creased_pct = s.creased_pct;
            }
            if frame == 0 || s.p95_deg > w.p95_deg {
                *w = WorstFrame {
                    frame,
                    time_s,
                    p95_deg: s.p95_deg,
                    creased_pct: s.creased_pct,
                    first_creased_pct: w.first_creased_pct,
                };
            }
        }
    }
    Ok(worst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::CacheWriter;
    use glam::Vec3;

    /// A cylinder of radius 0.1 m, m around and n up, with rows `folded`
    /// pushed in and out by `depth` at every other point (a crumple).
    fn tube(m: usize, n: usize, folded: std::ops::Range<usize>, depth: f32) -> Vec<Vec3> {
        let mut p = Vec::with_capacity(m * n);
        for j in 0..n {
            for i in 0..m {
                let a = std::f32::consts::TAU * i as f32 / m as f32;
                let bump = if folded.contains(&j) && i % 2 == 0 {
                    depth
                } else {
                    0.0
                };
                let r = 0.1 + bump;
                p.push(Vec3::new(r * a.cos(), 0.02 * j as f32, r * a.sin()));
            }
        }
        p
    }

    #[test]
    fn the_worst_frame_is_found_and_a_crumple_is_told_from_a_coarse_grid() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.plcache");
        let (m, n) = (32, 24);
        let mut w =
            CacheWriter::create(&path, 30.0, &[("smooth", m, n), ("crumpled", m, n)]).unwrap();
        let smooth = tube(m, n, 0..0, 0.0);
        for f in 0..5 {
            // The second skin crumples over rows 8–15 at frame 3 only.
            let depth = if f == 3 { 0.02 } else { 0.0 };
            let crumpled = tube(m, n, 8..16, depth);
            w.write_frame(f as f64 / 30.0, &[&smooth, &crumpled])
                .unwrap();
        }
        w.finish().unwrap();
        let worst = worst_frames(&path).unwrap();
        assert_eq!(worst.len(), 2);
        // A smooth tube: 360°/32 = 11.25° between neighbours around.
        assert!((worst[0].p95_deg - 11.25).abs() < 0.5, "{:?}", worst[0]);
        assert!(!worst[0].crumpled(), "{:?}", worst[0]);
        assert_eq!(worst[1].frame, 3);
        assert!((worst[1].time_s - 0.1).abs() < 1e-6);
        assert!(worst[1].creased_pct > 10.0, "{:?}", worst[1]);
        assert_eq!(worst[1].first_creased_pct, 0.0);
        assert!(worst[1].crumpled(), "{:?}", worst[1]);
        // Creased from the first frame on (a coarse grid) is not a crumple.
        let coarse = WorstFrame {
            first_creased_pct: worst[1].creased_pct - 1.0,
            ..worst[1]
        };
        assert!(!coarse.crumpled());
    }
}
