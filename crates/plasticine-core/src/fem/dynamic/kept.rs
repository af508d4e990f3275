//! What a dynamic step keeps across steps, in the bones' frames: each
//! proxy's regional answers to unit impulses ([`ResponseCache`], filled by
//! `impulse`) and each region's answers to the core's unit velocities
//! ([`UnitResponses`], filled by `units`).

use glam::{DAffine3, DVec3};

/// Most memory the kept impulse responses may take; past it the least
/// recently used are dropped (and computed again if their contact comes
/// back). The penguin at 7,933 lattice vertices keeps about 6 MB per
/// proxy (three axes, Δv and reactions, over the regions that hold it).
pub const RESPONSE_CACHE_BYTES: usize = 256 << 20;

/// One region's answers to unit impulses along its three local axes at a
/// proxy: Δv and the known vertices' reactions, in the bone's frame.
#[derive(Clone, Debug)]
pub(super) struct RegionResponse {
    pub(super) region: usize,
    pub(super) dv: [Vec<DVec3>; 3],
    pub(super) reaction: [Vec<DVec3>; 3],
}

/// The kept impulse responses, per proxy: its bytes, when last used, and
/// the regions' answers.
#[derive(Clone, Debug, Default)]
pub(super) struct ResponseCache {
    pub(super) entries: std::collections::HashMap<usize, (usize, u64, Vec<RegionResponse>)>,
    pub(super) bytes: usize,
    pub(super) clock: u64,
}

impl ResponseCache {
    /// Drops every kept response.
    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    /// Drops the least recently used responses until `more` bytes fit.
    pub(super) fn make_room(&mut self, more: usize) {
        while self.bytes + more > RESPONSE_CACHE_BYTES {
            let Some((&k, _)) = self.entries.iter().min_by_key(|(_, e)| e.1) else {
                break;
            };
            if let Some((bytes, _, _)) = self.entries.remove(&k) {
                self.bytes -= bytes;
            }
        }
    }
}

/// Each region's answers (Δv, known vertices' reactions; bone frame) to
/// its three local unit translations, then its three local unit rotations
/// about the core's centre, for one posture relative to the root.
#[derive(Clone, Debug)]
pub(super) struct UnitResponses {
    pub(super) relative: Vec<DAffine3>,
    pub(super) regions: Vec<Vec<(Vec<DVec3>, Vec<DVec3>)>>,
}
