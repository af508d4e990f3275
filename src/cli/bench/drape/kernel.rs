//! The draped skin's step: a fused pass per free point over structure-of-
//! arrays state, forces from the positions at the start of the step (read
//! from one buffer, written to the other), columns of the grid split into
//! tiles for rayon where a tile is worth a task.

use rayon::prelude::*;

/// The float type of a run.
pub trait Real:
    Copy
    + Send
    + Sync
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::AddAssign
    + Lanes<Self>
    + 'static
{
    /// Its SIMD vector: `wide`'s f32x8 or f64x4 (two SSE registers each on
    /// the x86-64 baseline, one AVX register where the build enables it).
    type Wide: Lanes<Self>;
    /// `v`, rounded to this type.
    fn of(v: f64) -> Self;
    /// This value as f64.
    fn f64(self) -> f64;
}

/// A point's arithmetic on one value or on a vector of `N` neighbouring
/// points: IEEE operations lane by lane, so the vector and the scalar
/// give the same bits.
pub trait Lanes<T>:
    Copy
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    /// Lanes per vector.
    const N: usize;
    /// Which lanes a comparison holds for.
    type Mask: Copy;
    /// `v` in every lane.
    fn splat(v: T) -> Self;
    /// The first `N` values of `s`.
    fn load(s: &[T]) -> Self;
    /// Into the first `N` values of `s`.
    fn store(self, s: &mut [T]);
    /// The square root, lane by lane.
    fn sqrt(self) -> Self;
    /// Where `self < other`.
    fn lt(self, other: Self) -> Self::Mask;
    /// `a` where `mask`, else `b`.
    fn blend(mask: Self::Mask, a: Self, b: Self) -> Self;
    /// Whether any lane of `mask` is set.
    fn any(mask: Self::Mask) -> bool;
    /// The union of two masks.
    fn or(a: Self::Mask, b: Self::Mask) -> Self::Mask;
    /// No lane set.
    fn none() -> Self::Mask;
}

macro_rules! scalar_lanes {
    ($t:ty) => {
        impl Lanes<$t> for $t {
            const N: usize = 1;
            type Mask = bool;
            #[inline(always)]
            fn splat(v: $t) -> Self {
                v
            }
            #[inline(always)]
            fn load(s: &[$t]) -> Self {
                s[0]
            }
            #[inline(always)]
            fn store(self, s: &mut [$t]) {
                s[0] = self;
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn lt(self, other: Self) -> bool {
                self < other
            }
            #[inline(always)]
            fn blend(mask: bool, a: Self, b: Self) -> Self {
                if mask { a } else { b }
            }
            #[inline(always)]
            fn any(mask: bool) -> bool {
                mask
            }
            #[inline(always)]
            fn or(a: bool, b: bool) -> bool {
                a | b
            }
            #[inline(always)]
            fn none() -> bool {
                false
            }
        }
    };
}

macro_rules! wide_lanes {
    ($w:ty, $t:ty, $n:expr) => {
        impl Lanes<$t> for $w {
            const N: usize = $n;
            type Mask = $w;
            #[inline(always)]
            fn splat(v: $t) -> Self {
                <$w>::splat(v)
            }
            #[inline(always)]
            fn load(s: &[$t]) -> Self {
                let lanes: [$t; $n] = s[..$n].try_into().expect("a full vector");
                <$w>::new(lanes)
            }
            #[inline(always)]
            fn store(self, s: &mut [$t]) {
                s[..$n].copy_from_slice(&self.to_array());
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$w>::sqrt(self)
            }
            #[inline(always)]
            fn lt(self, other: Self) -> Self {
                wide::CmpLt::cmp_lt(self, other)
            }
            #[inline(always)]
            fn blend(mask: Self, a: Self, b: Self) -> Self {
                mask.blend(a, b)
            }
            #[inline(always)]
            fn any(mask: Self) -> bool {
                mask.any()
            }
            #[inline(always)]
            fn or(a: Self, b: Self) -> Self {
                a | b
            }
            #[inline(always)]
            fn none() -> Self {
                <$w>::splat(0.0)
            }
        }
    };
}

scalar_lanes!(f32);
scalar_lanes!(f64);
wide_lanes!(wide::f32x8, f32, 8);
wide_lanes!(wide::f64x4, f64, 4);

impl Real for f32 {
    type Wide = wide::f32x8;
    fn of(v: f64) -> Self {
        v as f32
    }
    fn f64(self) -> f64 {
        f64::from(self)
    }
}

impl Real for f64 {
    type Wide = wide::f64x4;
    fn of(v: f64) -> Self {
        v
    }
    fn f64(self) -> f64 {
        self
    }
}

/// A grid of M points around by N up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrapeSize {
    /// Points around the cylinder (periodic).
    pub m: usize,
    /// Points up the cylinder (rows 0 and N − 1 pinned).
    pub n: usize,
}

/// Workload constants (`drape-workload.md`).
pub(super) const RADIUS: f64 = 0.3;
pub(super) const HEIGHT: f64 = 1.0;
pub(super) const GRAVITY: f64 = -9.81;
pub(super) const DAMPING: f64 = 0.5;
pub(super) const STIFFNESS: f64 = 50.0;
/// The spheres' centres (on the y axis) and radii, in processing order.
pub(super) const SPHERES: [(f64, f64); 3] = [(0.25, 0.32), (0.50, 0.36), (0.75, 0.32)];

/// Points per tile below which the step runs on one thread: a task must
/// carry more work than rayon's hand-off costs.
const MIN_TILE_POINTS: usize = 2048;

/// The six spring families as (di, dj) offsets from first to second end.
pub(super) const FAMILIES: [(isize, usize); 6] = [(1, 0), (0, 1), (1, 1), (-1, 1), (2, 0), (0, 2)];

/// The rest length of family (di, dj) on the undeformed cylinder.
pub(super) fn rest_length(size: DrapeSize, (di, dj): (isize, usize)) -> f64 {
    let around =
        2.0 * RADIUS * (std::f64::consts::PI * di.unsigned_abs() as f64 / size.m as f64).sin();
    let up = HEIGHT * dj as f64 / (size.n - 1) as f64;
    around.hypot(up)
}

/// Where point (i, j) starts: on the cylinder.
pub(super) fn cylinder_point(size: DrapeSize, i: usize, j: usize) -> [f64; 3] {
    let a = std::f64::consts::TAU * i as f64 / size.m as f64;
    [
        RADIUS * a.cos(),
        HEIGHT * j as f64 / (size.n - 1) as f64,
        RADIUS * a.sin(),
    ]
}

/// One pass over the spheres in order; the lanes it moved.
#[inline(always)]
fn project<T: Real, W: Lanes<T>>(x: &mut [W; 3], spheres: &[(T, T, T); 3]) -> W::Mask {
    let mut moved = W::none();
    for &(cy, r, r2) in spheres {
        let (cy, r) = (W::splat(cy), W::splat(r));
        let dy = x[1] - cy;
        let d2 = x[0] * x[0] + dy * dy + x[2] * x[2];
        let inside = d2.lt(W::splat(r2));
        if W::any(inside) {
            let s = r / d2.sqrt();
            *x = [
                W::blend(inside, x[0] * s, x[0]),
                W::blend(inside, cy + dy * s, x[1]),
                W::blend(inside, x[2] * s, x[2]),
            ];
            moved = W::or(moved, inside);
        }
    }
    moved
}

/// The state: positions in two buffers (`x` now, `next` written by a step),
/// velocities, all structure-of-arrays with p = i·N + j.
pub(super) struct State<T> {
    pub size: DrapeSize,
    pub x: [Vec<T>; 3],
    next: [Vec<T>; 3],
    pub v: [Vec<T>; 3],
    /// Rest lengths: around, up, shear, bend around, bend up.
    rest: [T; 5],
    spheres: [(T, T, T); 3],
    mass: T,
}

impl<T: Real> State<T> {
    /// The initial state: the cylinder, free points projected once, at rest.
    pub fn new(size: DrapeSize) -> Self {
        let count = size.m * size.n;
        let spheres = SPHERES.map(|(c, r)| (T::of(c), T::of(r), T::of(r * r)));
        let mut x = [
            vec![T::of(0.0); count],
            vec![T::of(0.0); count],
            vec![T::of(0.0); count],
        ];
        for i in 0..size.m {
            for j in 0..size.n {
                let p = i * size.n + j;
                let mut q = cylinder_point(size, i, j).map(T::of);
                if j > 0 && j + 1 < size.n {
                    project(&mut q, &spheres);
                }
                for c in 0..3 {
                    x[c][p] = q[c];
                }
            }
        }
        let rest = [(1, 0), (0, 1), (1, 1), (2, 0), (0, 2)].map(|f| T::of(rest_length(size, f)));
        Self {
            size,
            next: x.clone(),
            x,
            v: std::array::from_fn(|_| vec![T::of(0.0); count]),
            rest,
            spheres,
            mass: T::of(1.0 / count as f64),
        }
    }

    /// One semi-implicit Euler step of `dt` seconds.
    pub fn step(&mut self, dt: f64, parallel: bool) {
        let n = self.size.n;
        let cols_per_tile = (MIN_TILE_POINTS / n).max(1);
        let tile = cols_per_tile * n;
        let params = Params {
            size: self.size,
            dt: T::of(dt),
            inv_mass: T::of(1.0) / self.mass,
            gravity: T::of(GRAVITY),
            damping: T::of(DAMPING),
            k: T::of(STIFFNESS),
            rest: self.rest,
            spheres: self.spheres,
        };
        let x = &self.x;
        let [nx, ny, nz] = &mut self.next;
        let [vx, vy, vz] = &mut self.v;
        let run = |(t, (((nx, ny), nz), ((vx, vy), vz))): (usize, Tile<'_, T>)| {
            let mut out = Columns {
                x: [nx, ny, nz],
                v: [vx, vy, vz],
            };
            let first = t * cols_per_tile;
            for (c, i) in (first..first + out.x[0].len() / n).enumerate() {
                params.column(x, i, c * n, &mut out);
            }
        };
        if parallel && self.size.m * n >= 2 * MIN_TILE_POINTS {
            nx.par_chunks_mut(tile)
                .zip(ny.par_chunks_mut(tile))
                .zip(nz.par_chunks_mut(tile))
                .zip(
                    vx.par_chunks_mut(tile)
                        .zip(vy.par_chunks_mut(tile))
                        .zip(vz.par_chunks_mut(tile)),
                )
                .enumerate()
                .for_each(run);
        } else {
            run((
                0,
                (
                    ((nx.as_mut_slice(), ny.as_mut_slice()), nz.as_mut_slice()),
                    ((vx.as_mut_slice(), vy.as_mut_slice()), vz.as_mut_slice()),
                ),
            ));
        }
        std::mem::swap(&mut self.x, &mut self.next);
    }
}

/// A tile of columns as rayon hands it out: three position slices, then
/// three velocity slices.
type Tile<'a, T> = (
    ((&'a mut [T], &'a mut [T]), &'a mut [T]),
    ((&'a mut [T], &'a mut [T]), &'a mut [T]),
);

/// A tile's output slices: positions after the step and velocities.
struct Columns<'a, T> {
    x: [&'a mut [T]; 3],
    v: [&'a mut [T]; 3],
}

/// What a step reads besides the state.
struct Params<T> {
    size: DrapeSize,
    dt: T,
    inv_mass: T,
    gravity: T,
    damping: T,
    k: T,
    rest: [T; 5],
    spheres: [(T, T, T); 3],
}

/// One coordinate of the five columns a point's springs reach: its own,
/// then i + 1, i − 1, i + 2, i − 2.
type Neighbourhood<'a, T> = [[&'a [T]; 5]; 3];

impl<T: Real> Params<T> {
    /// Steps the free points of column `i`, whose entries in `out` start at
    /// `at`.
    fn column(&self, x: &[Vec<T>; 3], i: usize, at: usize, out: &mut Columns<T>) {
        let (m, n) = (self.size.m, self.size.n);
        let start = |di: isize| ((i as isize + di).rem_euclid(m as isize) as usize) * n;
        let starts = [start(0), start(1), start(-1), start(2), start(-2)];
        let columns: Neighbourhood<T> = std::array::from_fn(|c| starts.map(|s| &x[c][s..s + n]));
        // The rows next to the rims lack the bending spring that would
        // reach the row beyond the rim.
        self.rows::<false, true>(&columns, 1..2, at, out);
        self.rows::<true, true>(&columns, 2..n - 2, at, out);
        self.rows::<true, false>(&columns, n - 2..n - 1, at, out);
    }

    /// Steps rows `rows` of a column; `DOWN` and `UP` say whether the
    /// bending springs two rows down and up exist. Every neighbour is read
    /// through a slice shifted by its row offset, all as long as `rows`, so
    /// one counter indexes them all: vectors of `T::Wide::N` points, then
    /// the remainder one by one.
    #[inline(always)]
    fn rows<const DOWN: bool, const UP: bool>(
        &self,
        x: &Neighbourhood<T>,
        rows: std::ops::Range<usize>,
        at: usize,
        out: &mut Columns<T>,
    ) {
        let [ra, ru, rs, rba, rbu] = self.rest;
        let (lo, len) = (rows.start, rows.len());
        let pick = |k: usize, dj: isize| -> [&[T]; 3] {
            let from = (lo as isize + dj) as usize;
            std::array::from_fn(|c| &x[c][k][from..from + len])
        };
        // The springs' other ends (column, row offset) and rest lengths.
        let ends = [
            (pick(1, 0), ra),
            (pick(2, 0), ra),
            (pick(0, 1), ru),
            (pick(0, -1), ru),
            (pick(1, 1), rs),
            (pick(2, -1), rs),
            (pick(2, 1), rs),
            (pick(1, -1), rs),
            (pick(3, 0), rba),
            (pick(4, 0), rba),
        ];
        let row = Row {
            ends,
            down: DOWN.then(|| pick(0, -2)),
            up: UP.then(|| pick(0, 2)),
            bend_up: rbu,
            own: pick(0, 0),
        };
        let span = at + lo..at + lo + len;
        let mut out_x = out.x.each_mut().map(|s| &mut s[span.clone()]);
        let mut out_v = out.v.each_mut().map(|s| &mut s[span.clone()]);
        let mut t = 0;
        while t + T::Wide::N <= len {
            self.point::<T::Wide>(t, &row, &mut out_x, &mut out_v);
            t += T::Wide::N;
        }
        for t in t..len {
            self.point::<T>(t, &row, &mut out_x, &mut out_v);
        }
    }

    /// Steps the free point at `t` of a row slice, or the `W::N` points
    /// from there.
    #[inline(always)]
    fn point<W: Lanes<T>>(
        &self,
        t: usize,
        row: &Row<T>,
        out_x: &mut [&mut [T]; 3],
        out_v: &mut [&mut [T]; 3],
    ) {
        let load = |s: &[&[T]; 3]| {
            [
                W::load(&s[0][t..]),
                W::load(&s[1][t..]),
                W::load(&s[2][t..]),
            ]
        };
        let xp = load(&row.own);
        let zero = W::splat(T::of(0.0));
        let mut f = [zero; 3];
        let k = W::splat(self.k);
        let mut spring = |end: &[&[T]; 3], r: T| {
            let e = load(end);
            let d = [e[0] - xp[0], e[1] - xp[1], e[2] - xp[2]];
            let l = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
            let s = k * (l - W::splat(r)) / l;
            for c in 0..3 {
                f[c] = f[c] + s * d[c];
            }
        };
        for (end, r) in &row.ends {
            spring(end, *r);
        }
        for end in row.down.iter().chain(&row.up) {
            spring(end, row.bend_up);
        }
        let dt = W::splat(self.dt);
        let g = [zero, W::splat(self.gravity), zero];
        let (inv_mass, damping) = (W::splat(self.inv_mass), W::splat(self.damping));
        let mut v: [W; 3] = std::array::from_fn(|c| W::load(&out_v[c][t..]));
        for c in 0..3 {
            v[c] = v[c] + dt * (f[c] * inv_mass + g[c] - damping * v[c]);
        }
        let mut moved_to: [W; 3] = std::array::from_fn(|c| xp[c] + dt * v[c]);
        let moved = project(&mut moved_to, &self.spheres);
        if W::any(moved) {
            for c in 0..3 {
                v[c] = W::blend(moved, (moved_to[c] - xp[c]) / dt, v[c]);
            }
        }
        for c in 0..3 {
            moved_to[c].store(&mut out_x[c][t..]);
            v[c].store(&mut out_v[c][t..]);
        }
    }
}

/// The slices a row of points reads, each shifted to its neighbour.
struct Row<'a, T> {
    /// The ten springs every free point has, and their rest lengths.
    ends: [([&'a [T]; 3], T); 10],
    /// Bending two rows down and up, where they exist.
    down: Option<[&'a [T]; 3]>,
    up: Option<[&'a [T]; 3]>,
    /// Their rest length.
    bend_up: T,
    /// The point itself.
    own: [&'a [T]; 3],
}
