//! Picking: what a tool touches (LEMAN §5.1, §6.1–6.3).
//!
//! Every tool selects its object "by touching it with the tool": the
//! selection tool a joint or muscle, the skin-attachment and liposuction
//! tools skin points, the skin tool's drag end a muscle surface point. The
//! tool is either touched to the object ([`Picker::pick_near`], the tip
//! within a radius) or aims the visible wand at it ([`Picker::pick_ray`],
//! the first hit along the ray). Tools turn the resulting [`Pick`] into a
//! [`Command`](super::Command).
//!
//! A [`Picker`] is built once per frame from the posed body and the skins'
//! current positions and then answers many picks. The skins are cut into
//! blocks of [`BLOCK`]×[`BLOCK`] grid points, each with a bounding sphere, so a
//! pick only looks inside the few blocks near the tip or along the ray;
//! muscles are culled by their bounding spheres (and boxes). The culling is
//! exact: a pick returns what a search over every joint, muscle and skin
//! point or triangle would (ties go to the lowest [`PickTarget`] in the order
//! joints, muscles, skin points), which the tests check against such a search.
//!
//! Everything is in world space; ray directions need not be unit length, and
//! ray distances are in metres along the ray.

use crate::character::{Character, Skin};
use crate::kinematics::PosedBody;
use glam::Vec3;
use std::cmp::Ordering;

/// Skin points per side of a culling block: 8×8 keeps a 64×64 skin at 64
/// blocks, few enough to test them all, and each block small enough that a
/// touch or a ray looks at a few hundred points or triangles.
pub const BLOCK: usize = 8;

/// Radius of the ball a joint presents to the wand, m: joints are drawn as
/// small balls, and a ray must pass that close to pick one.
pub const JOINT_PICK_RADIUS: f32 = 0.01;

/// What a pick found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PickTarget {
    /// A joint, by index.
    Joint(usize),
    /// A muscle, by index.
    Muscle(usize),
    /// Point `point` (grid index `j * m + i`) of skin `skin`.
    SkinPoint {
        /// Index of the skin.
        skin: usize,
        /// Grid index of the point on that skin.
        point: usize,
    },
}

impl PickTarget {
    /// Tie-break order, so that the result does not depend on the order the
    /// accelerated search visits candidates in.
    fn rank(&self) -> (u8, usize, usize) {
        match *self {
            PickTarget::Joint(j) => (0, j, 0),
            PickTarget::Muscle(k) => (1, k, 0),
            PickTarget::SkinPoint { skin, point } => (2, skin, point),
        }
    }
}

/// A picked target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pick {
    /// What was picked.
    pub target: PickTarget,
    /// Where it was touched. For [`Picker::pick_near`]: the joint, the
    /// nearest muscle surface point (what the skin tool anchors to) or the
    /// skin point. For [`Picker::pick_ray`]: the hit point on the ray.
    pub position: Vec3,
    /// From the tip to the target (0 for a tip inside a muscle), or along
    /// the ray to the hit, m.
    pub distance: f32,
}

/// Which kinds of target a tool may pick.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PickFilter {
    /// Joints may be picked.
    pub joints: bool,
    /// Muscles may be picked.
    pub muscles: bool,
    /// Skin points may be picked.
    pub skin: bool,
}

impl PickFilter {
    /// Every kind of target.
    pub const ALL: Self = Self {
        joints: true,
        muscles: true,
        skin: true,
    };
    /// No target at all.
    pub const NONE: Self = Self {
        joints: false,
        muscles: false,
        skin: false,
    };
    /// Joints only.
    pub const JOINTS: Self = Self {
        joints: true,
        ..Self::NONE
    };
    /// Muscles only.
    pub const MUSCLES: Self = Self {
        muscles: true,
        ..Self::NONE
    };
    /// Skin points only.
    pub const SKIN: Self = Self {
        skin: true,
        ..Self::NONE
    };
    /// The selection tool's.
    pub const JOINTS_AND_MUSCLES: Self = Self {
        joints: true,
        muscles: true,
        skin: false,
    };

    /// Whether the filter lets this target through.
    pub fn allows(&self, target: &PickTarget) -> bool {
        match target {
            PickTarget::Joint(_) => self.joints,
            PickTarget::Muscle(_) => self.muscles,
            PickTarget::SkinPoint { .. } => self.skin,
        }
    }
}

/// A block of one skin's grid: it owns points `[i0, i1) × [j0, j1)` and the
/// quads whose first corner is one of them; its sphere bounds those points
/// and the quads' far corners.
#[derive(Clone, Copy, Debug)]
struct Block {
    center: Vec3,
    radius: f32,
    i0: u32,
    i1: u32,
    j0: u32,
    j1: u32,
}

/// Per-frame acceleration data for picking on one posed character.
#[derive(Clone, Debug)]
pub struct Picker<'a> {
    character: &'a Character,
    body: &'a PosedBody,
    /// Blocks per skin.
    blocks: Vec<Vec<Block>>,
    joint_radius: f32,
}

/// Pads a bounding radius so that f32 rounding in the culling tests can
/// never reject a point or triangle that lies on the sphere.
#[inline]
fn padded(radius: f32) -> f32 {
    radius * (1.0 + 1e-4) + 1e-6
}

/// Whether a candidate at `distance` beats the best pick so far (nearer, or
/// as near and lower in [`PickTarget`] order).
#[inline]
fn beats(distance: f32, target: &PickTarget, best: &Option<Pick>) -> bool {
    match best {
        None => true,
        Some(b) => match distance.total_cmp(&b.distance) {
            Ordering::Less => true,
            Ordering::Equal => target.rank() < b.target.rank(),
            Ordering::Greater => false,
        },
    }
}

/// Entry parameter of the ray `o + t d` (d unit) into a ball, 0 when `o` is
/// inside; `None` when the segment `[0, max_t]` misses it.
#[inline]
fn ball_entry(o: Vec3, d: Vec3, center: Vec3, radius: f32, max_t: f32) -> Option<f32> {
    let oc = center - o;
    let r2 = radius * radius;
    if oc.length_squared() <= r2 {
        return (max_t >= 0.0).then_some(0.0);
    }
    let along = oc.dot(d);
    if along < 0.0 {
        return None;
    }
    // Perpendicular offset by subtraction, not |oc|² − along²: no cancellation.
    let perp2 = (oc - d * along).length_squared();
    if perp2 > r2 {
        return None;
    }
    let t = (along - (r2 - perp2).sqrt()).max(0.0);
    (t <= max_t).then_some(t)
}

/// Möller–Trumbore, two-sided (the wand may meet the skin from inside a
/// limb): the ray parameter of the hit in `[0, max_t]`. The barycentric
/// bounds carry a few ulps of slack so that a ray through a shared edge or
/// vertex hits some triangle instead of slipping between them all.
#[inline]
fn ray_triangle(o: Vec3, d: Vec3, a: Vec3, b: Vec3, c: Vec3, max_t: f32) -> Option<f32> {
    let e1 = b - a;
    let e2 = c - a;
    let p = d.cross(e2);
    let det = e1.dot(p);
    if det == 0.0 || !det.is_finite() {
        return None;
    }
    let inv = 1.0 / det;
    let s = o - a;
    const SLACK: f32 = 1e-5;
    let u = s.dot(p) * inv;
    if !(-SLACK..=1.0 + SLACK).contains(&u) {
        return None;
    }
    let q = s.cross(e1);
    let v = d.dot(q) * inv;
    if v < -SLACK || u + v > 1.0 + SLACK {
        return None;
    }
    let t = e2.dot(q) * inv;
    (t >= 0.0 && t <= max_t).then_some(t)
}

/// The four corners (grid indices) of quad (i, j), counter-clockwise in
/// (i, j); i wraps around.
#[inline]
fn quad_corners(m: usize, i: usize, j: usize) -> [usize; 4] {
    let i1 = if i + 1 == m { 0 } else { i + 1 };
    [j * m + i, j * m + i1, (j + 1) * m + i1, (j + 1) * m + i]
}

/// Ray against quad (i, j) as two triangles: the hit parameter and the
/// quad corner nearest the hit (lowest index on ties), the skin point the
/// wand designates.
#[inline]
fn ray_quad(
    pos: &[Vec3],
    m: usize,
    i: usize,
    j: usize,
    o: Vec3,
    d: Vec3,
    max_t: f32,
) -> Option<(f32, usize)> {
    let k = quad_corners(m, i, j);
    let p = k.map(|x| pos[x]);
    let t1 = ray_triangle(o, d, p[0], p[1], p[2], max_t);
    let t2 = ray_triangle(o, d, p[0], p[2], p[3], max_t);
    let t = match (t1, t2) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    let hit = o + d * t;
    let mut best = (f32::INFINITY, usize::MAX);
    for x in k {
        let cand = (pos[x].distance_squared(hit), x);
        if cand.0 < best.0 || (cand.0 == best.0 && cand.1 < best.1) {
            best = cand;
        }
    }
    Some((t, best.1))
}

/// Distance from a world point to a posed muscle's surface (0 inside), the
/// figure [`Picker::pick_near`] ranks muscles by.
#[inline]
fn muscle_distance(body: &PosedBody, k: usize, p: Vec3) -> f32 {
    let mu = &body.muscles[k];
    mu.shape
        .signed_distance(mu.to_local.transform_point3(p))
        .max(0.0)
}

/// The world surface point of a posed muscle nearest `p` (as found by
/// [`MuscleShape::project_to_surface`]).
fn muscle_surface_point(body: &PosedBody, k: usize, p: Vec3) -> Vec3 {
    let mu = &body.muscles[k];
    let local = mu.shape.project_to_surface(mu.to_local.transform_point3(p));
    mu.to_world.transform_point3(local.point)
}

/// First crossing of a unit ray into a posed muscle, if within `max_t`.
#[inline]
fn muscle_ray(body: &PosedBody, k: usize, o: Vec3, d: Vec3, max_t: f32) -> Option<f32> {
    let mu = &body.muscles[k];
    mu.shape.ray_intersect(
        mu.to_local.transform_point3(o),
        mu.to_local.transform_vector3(d),
        max_t,
    )
}

fn skin_blocks(skin: &Skin) -> Vec<Block> {
    let (m, n) = (skin.m, skin.n);
    let pos = &skin.points.position;
    let mut out = Vec::with_capacity(m.div_ceil(BLOCK) * n.div_ceil(BLOCK));
    for j0 in (0..n).step_by(BLOCK) {
        let j1 = (j0 + BLOCK).min(n);
        // Quads of the last owned row reach one row up (and one column over).
        let j_top = j1.min(n - 1);
        for i0 in (0..m).step_by(BLOCK) {
            let i1 = (i0 + BLOCK).min(m);
            // Rows as slices (plus the wrapped column), for speed: the build
            // runs every frame.
            let each = |f: &mut dyn FnMut(Vec3)| {
                for j in j0..=j_top {
                    let row = &pos[j * m..(j + 1) * m];
                    row[i0..i1].iter().for_each(|p| f(*p));
                    f(row[i1 % m]);
                }
            };
            let (mut lo, mut hi) = (Vec3::MAX, Vec3::MIN);
            each(&mut |p| (lo, hi) = (lo.min(p), hi.max(p)));
            let center = 0.5 * (lo + hi);
            let mut r2 = 0.0f32;
            each(&mut |p| r2 = r2.max(p.distance_squared(center)));
            out.push(Block {
                center,
                radius: padded(r2.sqrt()),
                i0: i0 as u32,
                i1: i1 as u32,
                j0: j0 as u32,
                j1: j1 as u32,
            });
        }
    }
    out
}

impl<'a> Picker<'a> {
    /// Builds the frame's picking data: the body as posed, the skins where
    /// `character` has them now (a running simulation's character holds the
    /// current positions).
    pub fn new(character: &'a Character, body: &'a PosedBody) -> Self {
        Self {
            character,
            body,
            blocks: character.skins.iter().map(skin_blocks).collect(),
            joint_radius: JOINT_PICK_RADIUS,
        }
    }

    /// The radius of the ball a joint presents to the wand (default
    /// `JOINT_PICK_RADIUS`).
    pub fn with_joint_radius(mut self, radius: f32) -> Self {
        self.joint_radius = radius;
        self
    }

    /// The radius of the ball a joint presents to the wand, m.
    pub fn joint_radius(&self) -> f32 {
        self.joint_radius
    }

    /// The nearest allowed target within `radius` of the tool tip: a joint,
    /// a muscle (by distance to its surface, 0 with the tip inside) or a skin
    /// point. `None` when nothing is that close.
    pub fn pick_near(&self, tip: Vec3, radius: f32, filter: PickFilter) -> Option<Pick> {
        if !(tip.is_finite() && radius >= 0.0) {
            return None;
        }
        let mut best: Option<Pick> = None;
        let bound = |best: &Option<Pick>| best.map_or(radius, |b| b.distance);
        if filter.joints {
            for (j, x) in self.body.joints.iter().enumerate() {
                let p: Vec3 = x.translation.into();
                let d = tip.distance(p);
                let target = PickTarget::Joint(j);
                if d <= bound(&best) && beats(d, &target, &best) {
                    best = Some(Pick {
                        target,
                        position: p,
                        distance: d,
                    });
                }
            }
        }
        if filter.muscles {
            for k in 0..self.body.muscles.len() {
                // The bounding sphere and box bound the distance from below.
                if !self.body.may_touch(k, tip, bound(&best)) {
                    continue;
                }
                let d = muscle_distance(self.body, k, tip);
                let target = PickTarget::Muscle(k);
                if d <= bound(&best) && beats(d, &target, &best) {
                    best = Some(Pick {
                        target,
                        position: muscle_surface_point(self.body, k, tip),
                        distance: d,
                    });
                }
            }
        }
        if filter.skin {
            for (s, blocks) in self.blocks.iter().enumerate() {
                let skin = &self.character.skins[s];
                let pos = &skin.points.position;
                for b in blocks {
                    if tip.distance(b.center) - b.radius > bound(&best) {
                        continue;
                    }
                    for j in b.j0 as usize..b.j1 as usize {
                        for i in b.i0 as usize..b.i1 as usize {
                            let k = j * skin.m + i;
                            let d = tip.distance(pos[k]);
                            let target = PickTarget::SkinPoint { skin: s, point: k };
                            if d <= bound(&best) && beats(d, &target, &best) {
                                best = Some(Pick {
                                    target,
                                    position: pos[k],
                                    distance: d,
                                });
                            }
                        }
                    }
                }
            }
        }
        best
    }

    /// The first allowed target along the wand ray `origin + t·dir`, t in
    /// `[0, max_t]` metres: skin surfaces (the nearest corner of the hit quad
    /// is the picked point), muscle surfaces (0 when the origin is inside),
    /// and joints as balls of [`Self::joint_radius`]. A joint inside a
    /// muscle is behind the muscle's surface: filter muscles out to reach it.
    pub fn pick_ray(
        &self,
        origin: Vec3,
        dir: Vec3,
        max_t: f32,
        filter: PickFilter,
    ) -> Option<Pick> {
        let d = dir.try_normalize()?;
        if !(origin.is_finite() && max_t >= 0.0) {
            return None;
        }
        let mut best: Option<Pick> = None;
        let bound = |best: &Option<Pick>| best.map_or(max_t, |b| b.distance);
        let offer = |best: &mut Option<Pick>, t: f32, target: PickTarget| {
            if beats(t, &target, best) {
                *best = Some(Pick {
                    target,
                    position: origin + d * t,
                    distance: t,
                });
            }
        };
        if filter.joints {
            for (j, x) in self.body.joints.iter().enumerate() {
                if let Some(t) =
                    ball_entry(origin, d, x.translation.into(), self.joint_radius, max_t)
                {
                    offer(&mut best, t, PickTarget::Joint(j));
                }
            }
        }
        if filter.muscles {
            for (k, mu) in self.body.muscles.iter().enumerate() {
                if ball_entry(origin, d, mu.center, padded(mu.radius), bound(&best)).is_none() {
                    continue;
                }
                // The full max_t, not the bound: the march depends on it, and
                // the answer must not depend on what was found before.
                if let Some(t) = muscle_ray(self.body, k, origin, d, max_t)
                    && t <= bound(&best)
                {
                    offer(&mut best, t, PickTarget::Muscle(k));
                }
            }
        }
        if filter.skin {
            // Blocks the ray meets, nearest entry first, so the search stops
            // at the first block that starts beyond the best hit.
            let mut entries: Vec<(f32, u32, u32)> = Vec::new();
            for (s, blocks) in self.blocks.iter().enumerate() {
                for (bi, b) in blocks.iter().enumerate() {
                    if let Some(t) = ball_entry(origin, d, b.center, b.radius, bound(&best)) {
                        entries.push((t, s as u32, bi as u32));
                    }
                }
            }
            entries.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
            for (t_in, s, bi) in entries {
                if t_in > bound(&best) {
                    break;
                }
                let (s, b) = (s as usize, &self.blocks[s as usize][bi as usize]);
                let skin = &self.character.skins[s];
                let pos = &skin.points.position;
                for j in b.j0 as usize..(b.j1 as usize).min(skin.n - 1) {
                    for i in b.i0 as usize..b.i1 as usize {
                        if let Some((t, point)) = ray_quad(pos, skin.m, i, j, origin, d, max_t)
                            && t <= bound(&best)
                        {
                            offer(&mut best, t, PickTarget::SkinPoint { skin: s, point });
                        }
                    }
                }
            }
        }
        best
    }

    /// The point of skin `skin` nearest `p` (lowest index on ties), however
    /// far: symmetric modelling maps a point to its mirror image this way,
    /// and tools snap to the grid with it. Panics if the skin does not exist.
    pub fn nearest_skin_point(&self, skin: usize, p: Vec3) -> usize {
        let blocks = &self.blocks[skin];
        let sk = &self.character.skins[skin];
        let pos = &sk.points.position;
        let mut order: Vec<(f32, usize)> = blocks
            .iter()
            .enumerate()
            .map(|(bi, b)| (p.distance(b.center) - b.radius, bi))
            .collect();
        order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let mut best = (f32::INFINITY, usize::MAX);
        for (lower, bi) in order {
            if lower > best.0 {
                break;
            }
            let b = &blocks[bi];
            for j in b.j0 as usize..b.j1 as usize {
                for i in b.i0 as usize..b.i1 as usize {
                    let k = j * sk.m + i;
                    let d = p.distance(pos[k]);
                    if d < best.0 || (d == best.0 && k < best.1) {
                        best = (d, k);
                    }
                }
            }
        }
        best.1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::character::resample;
    use crate::io::parse_character;
    use crate::samples::demo_probes;
    use std::path::Path;

    /// The shipped penguin (no settling needed), resampled to m×n so blocks
    /// are partial at the grid's edges, posed in a key posture.
    fn penguin(m: usize, n: usize) -> (Character, PosedBody) {
        let text = include_str!("../../../../assets/penguin.ron");
        let mut c = parse_character(text, Path::new("penguin.ron")).expect("penguin asset");
        for s in &mut c.skins {
            *s = resample(s, m, n).expect("resample");
        }
        let posture = c
            .key_postures
            .get(1)
            .map_or_else(|| c.skeleton.rest_posture(), |k| k.posture.clone());
        let body = PosedBody::new(&c, &posture);
        (c, body)
    }

    fn brute_near(
        c: &Character,
        body: &PosedBody,
        tip: Vec3,
        radius: f32,
        f: PickFilter,
    ) -> Option<Pick> {
        let mut all: Vec<(f32, PickTarget)> = Vec::new();
        if f.joints {
            for (j, x) in body.joints.iter().enumerate() {
                all.push((tip.distance(x.translation.into()), PickTarget::Joint(j)));
            }
        }
        if f.muscles {
            for k in 0..body.muscles.len() {
                all.push((muscle_distance(body, k, tip), PickTarget::Muscle(k)));
            }
        }
        if f.skin {
            for (s, skin) in c.skins.iter().enumerate() {
                for (k, p) in skin.points.position.iter().enumerate() {
                    let target = PickTarget::SkinPoint { skin: s, point: k };
                    all.push((tip.distance(*p), target));
                }
            }
        }
        brute_best(all, radius, |_, _| Vec3::NAN)
    }

    fn brute_ray(
        c: &Character,
        body: &PosedBody,
        o: Vec3,
        dir: Vec3,
        max_t: f32,
        f: PickFilter,
    ) -> Option<Pick> {
        let d = dir.try_normalize()?;
        let mut all: Vec<(f32, PickTarget)> = Vec::new();
        if f.joints {
            for (j, x) in body.joints.iter().enumerate() {
                if let Some(t) = ball_entry(o, d, x.translation.into(), JOINT_PICK_RADIUS, max_t) {
                    all.push((t, PickTarget::Joint(j)));
                }
            }
        }
        if f.muscles {
            for k in 0..body.muscles.len() {
                if let Some(t) = muscle_ray(body, k, o, d, max_t) {
                    all.push((t, PickTarget::Muscle(k)));
                }
            }
        }
        if f.skin {
            for (s, skin) in c.skins.iter().enumerate() {
                for j in 0..skin.n - 1 {
                    for i in 0..skin.m {
                        let pos = &skin.points.position;
                        if let Some((t, point)) = ray_quad(pos, skin.m, i, j, o, d, max_t) {
                            all.push((t, PickTarget::SkinPoint { skin: s, point }));
                        }
                    }
                }
            }
        }
        brute_best(all, max_t, |t, _| o + d * t)
    }

    fn brute_best(
        all: Vec<(f32, PickTarget)>,
        limit: f32,
        position: impl Fn(f32, PickTarget) -> Vec3,
    ) -> Option<Pick> {
        all.into_iter()
            .filter(|a| a.0 <= limit)
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.rank().cmp(&b.1.rank())))
            .map(|(d, target)| Pick {
                target,
                position: position(d, target),
                distance: d,
            })
    }

    const FILTERS: [PickFilter; 5] = [
        PickFilter::ALL,
        PickFilter::JOINTS,
        PickFilter::MUSCLES,
        PickFilter::SKIN,
        PickFilter::JOINTS_AND_MUSCLES,
    ];

    fn kind(t: &PickTarget) -> usize {
        t.rank().0 as usize
    }

    #[test]
    fn pick_near_matches_brute_force() {
        for (m, n, seed) in [(21, 19, 1), (64, 40, 2)] {
            let (c, body) = penguin(m, n);
            let picker = Picker::new(&c, &body);
            let (tips, _) = demo_probes(&c, &body, 300, seed);
            let mut found = [0usize; 3];
            for (k, tip) in tips.iter().enumerate() {
                let radius = [0.005, 0.02, 0.06][k % 3];
                for f in FILTERS {
                    let got = picker.pick_near(*tip, radius, f);
                    let want = brute_near(&c, &body, *tip, radius, f);
                    match (got, want) {
                        (None, None) => {}
                        (Some(g), Some(w)) => {
                            assert_eq!(g.target, w.target, "tip {tip} radius {radius} {f:?}");
                            assert!((g.distance - w.distance).abs() <= 1e-5);
                            assert!(g.distance <= radius);
                            found[kind(&g.target)] += 1;
                        }
                        _ => panic!("tip {tip} radius {radius} {f:?}: {got:?} vs {want:?}"),
                    }
                }
            }
            assert!(found.iter().all(|&x| x >= 20), "{found:?}");
        }
    }

    #[test]
    fn pick_ray_matches_brute_force() {
        for (m, n, seed) in [(21, 19, 3), (64, 40, 4)] {
            let (c, body) = penguin(m, n);
            let picker = Picker::new(&c, &body);
            // Enough rays that some reach the joints inside the taut skin.
            let (_, rays) = demo_probes(&c, &body, 400, seed);
            let mut found = [0usize; 3];
            for (k, (o, d)) in rays.iter().enumerate() {
                let max_t = [3.0, 1.0, 0.1][k % 3];
                for f in FILTERS {
                    let got = picker.pick_ray(*o, *d, max_t, f);
                    let want = brute_ray(&c, &body, *o, *d, max_t, f);
                    match (got, want) {
                        (None, None) => {}
                        (Some(g), Some(w)) => {
                            assert_eq!(g.target, w.target, "ray {o} {d} {max_t} {f:?}");
                            assert!((g.distance - w.distance).abs() <= 1e-5);
                            assert!(g.position.distance(w.position) <= 1e-5);
                            found[kind(&g.target)] += 1;
                        }
                        _ => panic!("ray {o} {d} {max_t} {f:?}: {got:?} vs {want:?}"),
                    }
                }
            }
            assert!(found.iter().all(|&x| x >= 10), "{found:?}");
        }
    }

    #[test]
    fn nearest_skin_point_matches_brute_force() {
        let (c, body) = penguin(30, 27);
        let picker = Picker::new(&c, &body);
        let (tips, _) = demo_probes(&c, &body, 200, 5);
        for tip in tips.iter().chain(&[Vec3::new(3.0, -2.0, 1.0)]) {
            for (s, skin) in c.skins.iter().enumerate() {
                let pos = &skin.points.position;
                let want = (0..pos.len())
                    .min_by(|&a, &b| tip.distance(pos[a]).total_cmp(&tip.distance(pos[b])))
                    .unwrap();
                assert_eq!(picker.nearest_skin_point(s, *tip), want, "tip {tip}");
            }
        }
    }

    /// A wand aimed straight at a skin point from 5 cm outside, along the
    /// surface normal, hits the skin within a grid cell of that point (front
    /// and back of the body, where the flippers are not in the way).
    #[test]
    fn ray_aimed_at_a_skin_point_hits_its_neighbourhood() {
        let (c, body) = penguin(32, 24);
        let picker = Picker::new(&c, &body);
        let skin = &c.skins[0];
        let (m, n) = (skin.m, skin.n);
        let pos = &skin.points.position;
        let mut tried = 0;
        for j in [n / 3, n / 2, 2 * n / 3] {
            let row_centre = (0..m).map(|i| pos[j * m + i]).sum::<Vec3>() / m as f32;
            for i in (0..m).step_by(2) {
                let k = j * m + i;
                let du = pos[j * m + (i + 1) % m] - pos[j * m + (i + m - 1) % m];
                let dv = pos[(j + 1) * m + i] - pos[(j - 1) * m + i];
                let mut normal = du.cross(dv).normalize();
                if normal.dot(pos[k] - row_centre) < 0.0 {
                    normal = -normal;
                }
                // Front and back only: the flippers hang beside the body.
                if normal.z.abs() < 0.8 {
                    continue;
                }
                let origin = pos[k] + 0.05 * normal;
                let hit = picker
                    .pick_ray(origin, -normal, 1.0, PickFilter::SKIN)
                    .expect("the ray hits the skin");
                let PickTarget::SkinPoint { skin: s, point } = hit.target else {
                    panic!("{hit:?}");
                };
                assert_eq!(s, 0);
                let (pi, pj) = (point % m, point / m);
                let di = (pi + m - i) % m;
                assert!(
                    di.min(m - di) <= 1 && pj.abs_diff(j) <= 1,
                    "({i},{j}) → ({pi},{pj}) from {origin} at {} hit {}",
                    pos[k],
                    hit.position
                );
                assert!((hit.distance - 0.05).abs() < 0.01, "{hit:?}");
                assert!(hit.position.distance(pos[k]) < 0.02, "{hit:?}");
                tried += 1;
            }
        }
        assert!(tried >= 12);
    }

    #[test]
    fn tip_inside_a_muscle_picks_it_at_distance_zero() {
        let (c, body) = penguin(21, 19);
        let picker = Picker::new(&c, &body);
        for k in 0..body.muscles.len() {
            let mu = &body.muscles[k];
            let inside = |p: Vec3| mu.shape.is_inside(mu.to_local.transform_point3(p));
            if !inside(mu.center)
                || (0..k).any(|q| {
                    body.muscles[q]
                        .shape
                        .is_inside(body.muscles[q].to_local.transform_point3(mu.center))
                })
            {
                continue;
            }
            let pick = picker
                .pick_near(mu.center, 0.01, PickFilter::MUSCLES)
                .expect("inside a muscle");
            assert_eq!(pick.target, PickTarget::Muscle(k));
            assert_eq!(pick.distance, 0.0);
            // The position is the surface point the skin tool would anchor to.
            let g = mu
                .shape
                .inside_outside(mu.to_local.transform_point3(pick.position));
            assert!(g.abs() < 1e-4, "g = {g}");
        }
        // The belly, 2 cm off its joint: the muscle (distance 0) beats the joint.
        let belly = body.muscles[0].center + Vec3::new(0.0, 0.0, 0.02);
        let pick = picker.pick_near(belly, 0.05, PickFilter::ALL).unwrap();
        assert_eq!(pick.target, PickTarget::Muscle(0));
        assert_eq!(pick.distance, 0.0);
        // A wand starting inside it hits it at once.
        let pick = picker
            .pick_ray(belly, Vec3::X, 1.0, PickFilter::JOINTS_AND_MUSCLES)
            .unwrap();
        assert_eq!((pick.target, pick.distance), (PickTarget::Muscle(0), 0.0));
    }

    #[test]
    fn filters_exclude_kinds() {
        let (c, body) = penguin(21, 19);
        let picker = Picker::new(&c, &body);
        let joint: Vec3 = body.joints[1].translation.into();
        assert_eq!(
            picker
                .pick_near(joint, 0.05, PickFilter::JOINTS)
                .unwrap()
                .target,
            PickTarget::Joint(1)
        );
        assert!(matches!(
            picker
                .pick_near(joint, 0.05, PickFilter::MUSCLES)
                .unwrap()
                .target,
            PickTarget::Muscle(_)
        ));
        assert_eq!(picker.pick_near(joint, 10.0, PickFilter::NONE), None);
        let (tips, rays) = demo_probes(&c, &body, 200, 6);
        for f in FILTERS {
            for tip in &tips {
                if let Some(p) = picker.pick_near(*tip, 0.05, f) {
                    assert!(f.allows(&p.target), "{f:?} let {p:?} through");
                }
            }
            for (o, d) in &rays {
                if let Some(p) = picker.pick_ray(*o, *d, 3.0, f) {
                    assert!(f.allows(&p.target), "{f:?} let {p:?} through");
                }
            }
        }
    }

    #[test]
    fn nothing_within_reach_picks_nothing() {
        let (c, body) = penguin(21, 19);
        let picker = Picker::new(&c, &body);
        let far = Vec3::new(5.0, 5.0, 5.0);
        for f in FILTERS {
            assert_eq!(picker.pick_near(far, 0.5, f), None);
            // Aimed away from the body, or stopping short of it.
            assert_eq!(picker.pick_ray(far, far, 100.0, f), None);
            assert_eq!(picker.pick_ray(far, -far, 1.0, f), None);
        }
        // Aimed at the body, the same ray does reach it.
        assert!(picker.pick_ray(far, -far, 100.0, PickFilter::ALL).is_some());
        // A tip 2 cm off the skin picks nothing within 1 cm, the point within 3 cm.
        let p = c.skins[0].points.position[c.skins[0].m * 9 + 3];
        let row_centre: Vec3 = body.joints[1].translation.into();
        let tip = p + (p - row_centre).normalize() * 0.02;
        assert_eq!(picker.pick_near(tip, 0.01, PickFilter::SKIN), None);
        assert!(picker.pick_near(tip, 0.03, PickFilter::SKIN).is_some());
        assert_eq!(
            picker.pick_ray(far, Vec3::ZERO, 100.0, PickFilter::ALL),
            None
        );
    }
}
