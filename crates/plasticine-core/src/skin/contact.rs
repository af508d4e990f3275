//! Skins that never pass through each other.
//!
//! # The constraint
//!
//! An interior point of a skin that is outside another skin at the start of
//! an advance stays at least [`SKIN_GAP`] outside it (or as far as it was,
//! if nearer), measured along that surface's outward normal: the treatment
//! the fat layer gets against the muscles (projection after every accepted
//! step, the normal velocity relative to the surface taken out, §4.2.3).
//!
//! A skin folding onto itself (LEMAN §8 names self-collision as the next
//! step) is not kept apart yet: [`crossings`] reports it where two sheets
//! of one skin face each other, but the solver does not plan it (see
//! [`ContactPlan::new`]).
//!
//! A point only ever is kept from *crossing*: one already inside another
//! skin stays where the skins join. Skins join in two ways, and there the
//! points are not checked against the other skin ([`Junctions`]):
//! - as the character was built (a flipper's root ring sits inside the
//!   body): the points around the crossing then;
//! - where a skin's own muscles come within the gap of another skin (a
//!   limb swung into the body): no position of the point keeps both its
//!   fat layer and the other skin out, so the skins join there, with a few
//!   grid steps around so the skin is not pushed out at one point and left
//!   at the next. Where a point's muscle [`super::constraints::anchor`] is
//!   nearer the other skin than its fat and the gap, the fat between them
//!   gives for the advance ([`ContactPlan::squeeze`]), as flesh pressed on
//!   flesh does; the muscle itself is never entered.
//!
//! # The obstacles
//!
//! Skins are stepped in parallel, each at its own steps, so each skin meets
//! the others and itself as they were at the start of the advance (one
//! frame), carried on with their velocities: x(t) = x₀ + v₀(t − t₀). At the
//! start of each advance a skin plans, for each of its points, the nearest
//! quad of each skin within reach (4×4 blocks of points against 4×4 blocks
//! of quads by bounding boxes swept over the advance, then quads), and during
//! the advance keeps the point outside that quad only.

use super::elastic::Grid;
use super::quality::quad_normal;
use glam::Vec3;

/// The gap kept between two skins, and between two sheets of one (m).
pub const SKIN_GAP: f32 = 0.002;
/// A junction reaches this fraction of the grid (around and up) from the
/// points where the skins cross.
const JUNCTION_SHARE: usize = 16;
/// Quads within this many grid steps of a point (around and up) are its own
/// neighbourhood, not another sheet of its skin.
const SELF_EXCLUSION: usize = 3;
/// Two sheets of one skin face each other when their normals' cosine is
/// below this.
const FACING: f32 = -0.5;
/// The largest correction one enforcement makes (m): a surface further
/// past a point than this went through it between two steps.
pub const MAX_PUSH: f32 = 0.01;
/// How far behind another sheet of its own skin a point can be and still
/// have folded through it. Further, the nearest sheet facing it is the far
/// side of the skin (every point of a closed skin is behind that), not a
/// fold: the nearer sheets are left out as its own neighbourhood.
pub const SELF_REACH: f32 = 0.02;
/// Points and quads per culling block side.
const BLOCK: usize = 4;
/// Beyond what the velocities say, how far a point may get within an
/// advance before the plan misses a surface (m).
const REACH_MARGIN: f32 = 0.005;

/// One skin as an obstacle: its positions and velocities at the start of the
/// advance, its quad normals, and its quads' bounding boxes in 4×4 blocks.
pub struct ObstacleSkin {
    grid: Grid,
    position: Vec<Vec3>,
    velocity: Vec<Vec3>,
    normal: Vec<Vec3>,
    /// Per block of quads (rows of `blocks_around`): its bounding box (lo,
    /// hi) swept over the advance.
    blocks: Vec<(Vec3, Vec3)>,
    blocks_around: usize,
    speed: f32,
}

/// Every skin of a character as an obstacle, at time `t0`, for an advance
/// of `span` seconds.
pub struct Obstacles {
    t0: f64,
    span: f32,
    skins: Vec<ObstacleSkin>,
}

impl Obstacles {
    /// The skins (grids, positions, velocities) at time `t0`.
    pub fn new(t0: f64, span: f64, skins: &[(Grid, &[Vec3], &[Vec3])]) -> Self {
        let span = span.max(0.0) as f32;
        let skins = skins
            .iter()
            .map(|&(grid, position, velocity)| {
                let normal: Vec<Vec3> = (0..grid.m * (grid.n - 1))
                    .map(|q| quad_normal(&grid, position, q % grid.m, q / grid.m))
                    .collect();
                let (ba, bu) = (grid.m.div_ceil(BLOCK), (grid.n - 1).div_ceil(BLOCK));
                let mut blocks = Vec::with_capacity(ba * bu);
                for bj in 0..bu {
                    for bi in 0..ba {
                        let (mut lo, mut hi) = (Vec3::MAX, Vec3::MIN);
                        for j in bj * BLOCK..((bj + 1) * BLOCK).min(grid.n - 1) {
                            for i in bi * BLOCK..((bi + 1) * BLOCK).min(grid.m) {
                                let ir = grid.right(i);
                                for (ci, cj) in [(i, j), (ir, j), (ir, j + 1), (i, j + 1)] {
                                    let a = position[grid.idx(ci, cj)];
                                    let b = a + velocity[grid.idx(ci, cj)] * span;
                                    lo = lo.min(a).min(b);
                                    hi = hi.max(a).max(b);
                                }
                            }
                        }
                        blocks.push((lo, hi));
                    }
                }
                let speed = velocity.iter().map(|v| v.length()).fold(0.0, f32::max);
                ObstacleSkin {
                    grid,
                    position: position.to_vec(),
                    velocity: velocity.to_vec(),
                    normal,
                    blocks,
                    blocks_around: ba,
                    speed,
                }
            })
            .collect();
        Self { t0, span, skins }
    }

    /// Signed distance of `p` from skin `o` by brute force over all its
    /// quads (the nearest quad decides), leaving out, for `o == s`, the
    /// quads near grid point `k` of `s` and those not facing it.
    fn nearest(&self, s: usize, k: usize, p: Vec3, o: usize) -> Option<f32> {
        // The nearest block's box first, for a tight bound; then every
        // block whose box is not further than the nearest quad found. (A
        // sort of the boxes per query was 8 % of a 128x128 bake: the
        // junctions are found point by point when a simulation starts.)
        let blocks = &self.skins[o].blocks;
        let bound = |&(lo, hi): &(Vec3, Vec3)| (p - p.clamp(lo, hi)).length_squared();
        let first =
            (0..blocks.len()).min_by(|&a, &b| bound(&blocks[a]).total_cmp(&bound(&blocks[b])))?;
        let mut best: Option<f32> = None;
        self.nearest_in_block(s, k, p, o, first, f32::INFINITY, &mut best);
        for (b, block) in blocks.iter().enumerate() {
            if b == first || best.is_some_and(|d| bound(block) > d * d) {
                continue;
            }
            self.nearest_in_block(s, k, p, o, b, f32::INFINITY, &mut best);
        }
        best
    }

    /// [`Obstacles::nearest`] among the quads within `radius` of `p` only
    /// (their blocks' boxes by distance, unsorted): None when none is.
    fn nearest_within(&self, s: usize, k: usize, p: Vec3, o: usize, radius: f32) -> Option<f32> {
        let mut best: Option<f32> = None;
        for (b, &(lo, hi)) in self.skins[o].blocks.iter().enumerate() {
            if (p - p.clamp(lo, hi)).length_squared() <= radius * radius {
                self.nearest_in_block(s, k, p, o, b, radius, &mut best);
            }
        }
        best
    }

    /// Lowers `best` to the signed distance of `p` (point `k` of skin `s`)
    /// from the quads of block `b` of skin `o`, those within `radius`.
    #[expect(
        clippy::too_many_arguments,
        reason = "the query of `nearest`, one block of it, and the running best"
    )]
    fn nearest_in_block(
        &self,
        s: usize,
        k: usize,
        p: Vec3,
        o: usize,
        b: usize,
        radius: f32,
        best: &mut Option<f32>,
    ) {
        let ob = &self.skins[o];
        let g = &self.skins[s].grid;
        let (i, j) = (k % g.m, k / g.m);
        let own = self.skins[s].normal[g.idx(i, j.min(g.n - 2))];
        let og = &ob.grid;
        let (obi, obj) = (b % ob.blocks_around, b / ob.blocks_around);
        for qj in obj * BLOCK..((obj + 1) * BLOCK).min(og.n - 1) {
            for qi in obi * BLOCK..((obi + 1) * BLOCK).min(og.m) {
                let q = og.idx(qi, qj);
                if o == s && (near_in_grid(g, i, j, qi, qj) || own.dot(ob.normal[q]) > FACING) {
                    continue;
                }
                if let Some((d, _)) = quad_distance(og, q, p, |c| ob.position[c])
                    && d.abs() <= radius
                    && best.is_none_or(|b| d.abs() < b.abs())
                {
                    *best = Some(d);
                }
            }
        }
    }

    /// Every skin of `skins` as an obstacle (see [`Obstacles::new`]).
    pub fn of_skins(t0: f64, span: f64, skins: &[crate::character::Skin]) -> Self {
        let skins: Vec<_> = skins
            .iter()
            .map(|s| (Grid::of(s), &s.points.position[..], &s.points.velocity[..]))
            .collect();
        Self::new(t0, span, &skins)
    }
}

/// Per skin and point, the other skins it is not checked against: the
/// points around where the skins cross as the character was built (a limb's
/// root inside the body).
#[derive(Clone, Debug, Default)]
pub struct Junctions {
    /// Per skin, per point: a bit per other skin (skins past 64 are never
    /// checked).
    exempt: Vec<Vec<u64>>,
}

impl Junctions {
    /// The junctions of skins as they are in `obstacles` (built at rest):
    /// points inside another skin, and those within a few grid steps of one.
    pub fn new(obstacles: &Obstacles) -> Self {
        let probes: Vec<&[Vec3]> = obstacles.skins.iter().map(|s| &s.position[..]).collect();
        Self::where_inside(obstacles, &probes, 0.0)
    }

    /// Per skin and point, the other skins that `probes[s][k]` (a position
    /// belonging to point k of skin s) lies inside of, or nearer than
    /// `within` outside, grown by a few grid steps. With the points' own
    /// positions and 0, where the skins join as built; with their
    /// [`super::constraints::anchor`]s and [`SKIN_GAP`], where the muscles
    /// themselves have come within the gap of another skin, as a
    /// [`ContactPlan`] leaves them joined.
    pub fn where_inside(obstacles: &Obstacles, probes: &[&[Vec3]], within: f32) -> Self {
        let skins = &obstacles.skins;
        let mut exempt = Vec::with_capacity(skins.len());
        for (s, skin) in skins.iter().enumerate() {
            let g = skin.grid;
            let mut bits = vec![0u64; g.m * g.n];
            for (o, other) in skins.iter().enumerate().take(64) {
                if o == s || !boxes_overlap(skin, other, 0.0) {
                    continue;
                }
                // A point is inside a closed skin when the nearest of its
                // quads has it behind.
                let inside: Vec<bool> = (0..g.m * g.n)
                    .map(|k| {
                        obstacles
                            .nearest(s, k, probes[s][k], o)
                            .is_some_and(|d| d < within)
                    })
                    .collect();
                grow_into(&g, &inside, o, &mut bits);
            }
            exempt.push(bits);
        }
        Self { exempt }
    }

    /// These junctions and `other`'s.
    #[must_use]
    pub fn union(mut self, other: &Self) -> Self {
        for (a, b) in self.exempt.iter_mut().zip(&other.exempt) {
            for (x, y) in a.iter_mut().zip(b) {
                *x |= y;
            }
        }
        self
    }

    fn exempt(&self, s: usize, k: usize, o: usize) -> bool {
        o >= 64
            || self
                .exempt
                .get(s)
                .and_then(|b| b.get(k))
                .is_some_and(|b| b & (1 << o) != 0)
    }
}

/// Sets bit `o` of every point within a junction's width of a point marked
/// in `marked`: a sixteenth of the grid each way ([`JUNCTION_SHARE`]), so
/// the junction covers the same part of the skin at every resolution (at
/// 64×64, two grid steps left a kink where pushed points met free ones).
fn grow_into(g: &Grid, marked: &[bool], o: usize, bits: &mut [u64]) {
    let around = (g.m / JUNCTION_SHARE).clamp(1, g.m / 2);
    let up = (g.n / JUNCTION_SHARE).max(1);
    for j in 0..g.n {
        for i in 0..g.m {
            if !marked[g.idx(i, j)] {
                continue;
            }
            for dj in j.saturating_sub(up)..=(j + up).min(g.n - 1) {
                for di in 0..=2 * around {
                    let ii = (i + g.m + di - around) % g.m;
                    bits[g.idx(ii, dj)] |= 1 << o;
                }
            }
        }
    }
}

fn boxes_overlap(a: &ObstacleSkin, b: &ObstacleSkin, grow: f32) -> bool {
    let bound = |s: &ObstacleSkin| {
        s.blocks.iter().fold((Vec3::MAX, Vec3::MIN), |(lo, hi), b| {
            (lo.min(b.0), hi.max(b.1))
        })
    };
    let ((alo, ahi), (blo, bhi)) = (bound(a), bound(b));
    !((blo.cmpgt(ahi + Vec3::splat(grow))) | (bhi.cmplt(alo - Vec3::splat(grow)))).any()
}

/// A point of the skin being stepped and the quad it must stay outside of.
#[derive(Clone, Copy, Debug)]
struct Entry {
    point: u32,
    skin: u16,
    quad: u32,
    /// The gap kept: [`SKIN_GAP`], or less where the point was nearer when
    /// planned (the two sheets at a thin flipper's rim rest closer than
    /// that: pushing them apart would kink the rim).
    gap: f32,
}

/// The contacts one skin keeps during an advance.
#[derive(Default)]
pub struct ContactPlan {
    entries: Vec<Entry>,
    /// Entries given up for the rest of the advance: their point is squeezed
    /// between its own muscle and the other surface (a limb's muscle pushed
    /// into the body), where no position keeps both; the muscle wins and
    /// the skins cross there, as at a junction.
    given_up: Vec<bool>,
    /// Points whose muscle comes nearer the other skin than their fat
    /// layer and the gap allow, with the fat that fits: the fat between a
    /// limb and the body it is pressed against gives, as flesh does.
    squeezed: Vec<(u32, f32)>,
}

/// Closest point to `p` on triangle (a, b, c) (Ericson, Real-Time Collision
/// Detection, 5.1.5).
fn closest_on_triangle(p: Vec3, a: Vec3, b: Vec3, c: Vec3) -> Vec3 {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return a + ab * (d1 / (d1 - d3));
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return a + ac * (d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 {
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
    }
    let denom = 1.0 / (va + vb + vc);
    a + ab * (vb * denom) + ac * (vc * denom)
}

/// Signed distance of `p` from quad `q` of a skin with corners at `x` (a
/// function of the corner index), along the quad's outward normal, and that
/// normal: the nearer of the quad's two triangles decides.
fn quad_distance(o: &Grid, q: usize, p: Vec3, x: impl Fn(usize) -> Vec3) -> Option<(f32, Vec3)> {
    let (i, j) = (q % o.m, q / o.m);
    let ir = o.right(i);
    let (a, b, c, d) = (
        x(o.idx(i, j)),
        x(o.idx(ir, j)),
        x(o.idx(ir, j + 1)),
        x(o.idx(i, j + 1)),
    );
    // Outward as `quad_normal` has it (its diagonals' cross product).
    let outward = (c - a).cross(d - b);
    let mut best: Option<(f32, f32, Vec3)> = None;
    for (u, v, w) in [(a, b, c), (a, c, d)] {
        let n = (v - u).cross(w - u);
        let len = n.length();
        if len <= 1e-20 {
            continue;
        }
        let n = if n.dot(outward) < 0.0 {
            -n / len
        } else {
            n / len
        };
        let cp = closest_on_triangle(p, u, v, w);
        let gap = p.distance(cp);
        if best.is_none_or(|b| gap < b.0) {
            let side = if (p - cp).dot(n) < 0.0 { -1.0 } else { 1.0 };
            best = Some((gap, side * gap, n));
        }
    }
    best.map(|(_, d, n)| (d, n))
}

impl ContactPlan {
    /// The contacts of skin `s` (grid `g`, positions `r` and velocities `v`
    /// at the obstacles' t0) for the obstacles' advance.
    #[expect(
        clippy::too_many_arguments,
        reason = "the skin's state as the stepper holds it (taken out of the skin), and what it meets"
    )]
    pub fn new(
        s: usize,
        g: &Grid,
        r: &[Vec3],
        v: &[Vec3],
        obstacles: &Obstacles,
        junctions: &Junctions,
        fat: &[f32],
        anchor: impl Fn(usize) -> Vec3,
    ) -> Self {
        let own_speed = v.iter().map(|x| x.length()).fold(0.0, f32::max);
        let mut candidates: Vec<(u32, u16, u32, f32)> = Vec::new();
        let (ba, bu) = (g.m.div_ceil(BLOCK), (g.n - 2).div_ceil(BLOCK));
        for (o, obstacle) in obstacles.skins.iter().enumerate() {
            // A skin against itself is not planned: telling a fold from the
            // skin's own sharp curvature by facing sheets failed on a thin
            // flipper's rim at 128×128 (its far side pushed the near side in
            // and the steps fell a hundredfold). Folds are left for later;
            // `crossings` still reports them.
            if o == s {
                continue;
            }
            let reach = (own_speed + obstacle.speed) * obstacles.span + SKIN_GAP + REACH_MARGIN;
            let og = &obstacle.grid;
            for bj in 0..bu {
                for bi in 0..ba {
                    let rows = 1 + bj * BLOCK..(1 + (bj + 1) * BLOCK).min(g.n - 1);
                    let cols = bi * BLOCK..((bi + 1) * BLOCK).min(g.m);
                    let (mut lo, mut hi) = (Vec3::MAX, Vec3::MIN);
                    for j in rows.clone() {
                        for i in cols.clone() {
                            lo = lo.min(r[g.idx(i, j)]);
                            hi = hi.max(r[g.idx(i, j)]);
                        }
                    }
                    let (lo, hi) = (lo - Vec3::splat(reach), hi + Vec3::splat(reach));
                    for (b, &(blo, bhi)) in obstacle.blocks.iter().enumerate() {
                        if (blo.cmpgt(hi) | bhi.cmplt(lo)).any() {
                            continue;
                        }
                        let (obi, obj) = (b % obstacle.blocks_around, b / obstacle.blocks_around);
                        for j in rows.clone() {
                            for i in cols.clone() {
                                let k = g.idx(i, j);
                                if junctions.exempt(s, k, o) {
                                    continue;
                                }
                                let p = r[k];
                                // The block's box is swept over the advance
                                // already: only this point's own motion
                                // needs room.
                                let own_reach =
                                    v[k].length() * obstacles.span + SKIN_GAP + REACH_MARGIN;
                                if (p - p.clamp(blo, bhi)).length_squared() > own_reach * own_reach
                                {
                                    continue;
                                }
                                for qj in obj * BLOCK..((obj + 1) * BLOCK).min(og.n - 1) {
                                    for qi in obi * BLOCK..((obi + 1) * BLOCK).min(og.m) {
                                        let q = og.idx(qi, qj);
                                        let Some((d, _)) =
                                            quad_distance(og, q, p, |c| obstacle.position[c])
                                        else {
                                            continue;
                                        };
                                        if d.abs() <= reach {
                                            candidates.push((k as u32, o as u16, q as u32, d));
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        // Per point and skin, the nearest quad; a point it has behind it
        // (already inside, where skins join) keeps none.
        candidates.sort_unstable_by(|a, b| {
            (a.0, a.1)
                .cmp(&(b.0, b.1))
                .then(a.3.abs().total_cmp(&b.3.abs()))
        });
        candidates.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        // Where this skin's own muscles have entered the other skin (a
        // flipper swung into the body), its points cannot keep both their
        // fat layer and the gap: they join the other skin there, as at a
        // junction, with a junction's width around (`grow_into`), so the
        // skin is not pushed out in one place and left in the next.
        let mut joined: Vec<Vec<bool>> = Vec::new();
        let mut squeezed: Vec<(u32, f32)> = Vec::new();
        for &(k, o, _, _) in &candidates {
            let (k, o) = (k as usize, o as usize);
            // A point already inside keeps no entry (below) but does not
            // widen the junction: only the muscles entering do, or the
            // junction would creep along the skin one crossing at a time.
            // Only a room under the fat and the gap matters, so the search
            // stops there: an anchor further from every quad is free.
            let Some(room) = obstacles.nearest_within(s, k, anchor(k), o, fat[k] + SKIN_GAP) else {
                continue;
            };
            if room >= SKIN_GAP && room < fat[k] + SKIN_GAP {
                squeezed.push((k as u32, room - SKIN_GAP));
            }
            if room < SKIN_GAP {
                if joined.len() <= o {
                    joined.resize(o + 1, Vec::new());
                }
                if joined[o].is_empty() {
                    joined[o] = vec![false; g.m * g.n];
                }
                joined[o][k] = true;
            }
        }
        let mut exempt = vec![0u64; g.m * g.n];
        for (o, marked) in joined.iter().enumerate().take(64) {
            if !marked.is_empty() {
                grow_into(g, marked, o, &mut exempt);
            }
        }
        let entries = candidates
            .into_iter()
            .filter(|c| c.3 > 0.0 && (c.1 >= 64 || exempt[c.0 as usize] & (1 << c.1) == 0))
            .map(|(point, skin, quad, d)| Entry {
                point,
                skin,
                quad,
                gap: d.min(SKIN_GAP),
            })
            .collect::<Vec<_>>();
        let given_up = vec![false; entries.len()];
        Self {
            entries,
            given_up,
            squeezed,
        }
    }

    /// The fat layer `fat` as it is during the advance: thinner where a
    /// point is squeezed between its muscle and another skin.
    pub fn squeeze(&self, fat: &mut [f32]) {
        for &(k, room) in &self.squeezed {
            let f = &mut fat[k as usize];
            *f = f.min(room.max(0.0));
        }
    }

    /// Keeps every planned point [`SKIN_GAP`] outside its surface at time
    /// `t`, with the inelastic normal response (the normal velocity relative
    /// to the surface taken out); returns the largest correction (m). A
    /// correction that `allowed(position)` refuses (it would put the
    /// point into its muscle), or one larger than
    /// [`MAX_PUSH`] (the surface is already past the point), gives the
    /// entry up.
    pub fn enforce(
        &mut self,
        obstacles: &Obstacles,
        t: f64,
        r: &mut [Vec3],
        v: &mut [Vec3],
        allowed: impl Fn(Vec3) -> bool,
    ) -> f32 {
        let dt = (t - obstacles.t0) as f32;
        let mut worst = 0.0f32;
        for (e, given_up) in self.entries.iter().zip(&mut self.given_up) {
            if *given_up {
                continue;
            }
            let o = &obstacles.skins[e.skin as usize];
            let at = |c: usize| o.position[c] + o.velocity[c] * dt;
            let k = e.point as usize;
            let Some((d, n)) = quad_distance(&o.grid, e.quad as usize, r[k], at) else {
                continue;
            };
            if d >= e.gap {
                continue;
            }
            let push = e.gap - d;
            let to = r[k] + push * n;
            if push > MAX_PUSH || !allowed(to) {
                *given_up = true;
                continue;
            }
            r[k] = to;
            worst = worst.max(push);
            // The surface's velocity there: its quad's corners' mean.
            let (i, j) = (e.quad as usize % o.grid.m, e.quad as usize / o.grid.m);
            let ir = o.grid.right(i);
            let surface_v = 0.25
                * (o.velocity[o.grid.idx(i, j)]
                    + o.velocity[o.grid.idx(ir, j)]
                    + o.velocity[o.grid.idx(ir, j + 1)]
                    + o.velocity[o.grid.idx(i, j + 1)]);
            let vn = (v[k] - surface_v).dot(n);
            if vn < 0.0 {
                v[k] -= vn * n;
            }
        }
        worst
    }
}

/// Whether quad (qi, qj) is within [`SELF_EXCLUSION`] grid steps of point
/// (i, j) of the same grid (around periodically).
fn near_in_grid(g: &Grid, i: usize, j: usize, qi: usize, qj: usize) -> bool {
    let di = (i + g.m - qi) % g.m;
    let di = di.min(g.m - di);
    di <= SELF_EXCLUSION && j.abs_diff(qj) <= SELF_EXCLUSION
}

/// A point of one skin found inside another.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Crossing {
    /// Index of the skin the point belongs to.
    pub skin: usize,
    /// Grid index of the point in its skin (`j·m + i`).
    pub point: usize,
    /// Index of the skin the point is inside (may be its own skin).
    pub into: usize,
    /// How far inside (m).
    pub depth: f32,
}

/// How far each point of each skin of `skins` (each m × n points, at
/// these positions) is from the nearest other skin, if one is within
/// `reach` (else infinity): where skins rest on each other, for the
/// contact heat map.
pub fn skin_gaps(skins: &[(usize, usize, &[Vec3])], reach: f32) -> Vec<Vec<f32>> {
    let still: Vec<Vec<Vec3>> = skins
        .iter()
        .map(|&(_, _, p)| vec![Vec3::ZERO; p.len()])
        .collect();
    let grids: Vec<(Grid, &[Vec3], &[Vec3])> = skins
        .iter()
        .zip(&still)
        .map(|(&(m, n, p), v)| (Grid::new(m, n), p, &v[..]))
        .collect();
    let obstacles = Obstacles::new(0.0, 0.0, &grids);
    skins
        .iter()
        .enumerate()
        .map(|(s, &(_, _, points))| {
            points
                .iter()
                .enumerate()
                .map(|(k, &p)| {
                    (0..skins.len())
                        .filter(|&o| o != s)
                        .filter_map(|o| obstacles.nearest_within(s, k, p, o, reach))
                        .map(f32::abs)
                        .fold(f32::INFINITY, f32::min)
                })
                .collect()
        })
        .collect()
}

/// Every checked interior point that was outside a skin at `start` and is
/// inside it `now` (see [`deepest_crossing`]).
pub fn crossings(start: &Obstacles, now: &Obstacles, junctions: &Junctions) -> Vec<Crossing> {
    let mut found = Vec::new();
    for (s, skin) in now.skins.iter().enumerate() {
        let g = skin.grid;
        for k in g.m..g.m * (g.n - 1) {
            for o in 0..now.skins.len() {
                if junctions.exempt(s, k, o) {
                    continue;
                }
                let before = start.nearest(s, k, start.skins[s].position[k], o);
                if before.is_none_or(|d| d <= 0.0) {
                    continue;
                }
                if let Some(d) = now.nearest(s, k, skin.position[k], o)
                    && d < 0.0
                    && (o != s || -d <= SELF_REACH)
                {
                    found.push(Crossing {
                        skin: s,
                        point: k,
                        into: o,
                        depth: -d,
                    });
                }
            }
        }
    }
    found
}
