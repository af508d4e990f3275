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
    + 'static
{
    /// `v`, rounded to this type.
    fn of(v: f64) -> Self;
    /// This value as f64.
    fn f64(self) -> f64;
    /// The square root.
    fn sqrt(self) -> Self;
}

impl Real for f32 {
    fn of(v: f64) -> Self {
        v as f32
    }
    fn f64(self) -> f64 {
        f64::from(self)
    }
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
}

impl Real for f64 {
    fn of(v: f64) -> Self {
        v
    }
    fn f64(self) -> f64 {
        self
    }
    fn sqrt(self) -> Self {
        f64::sqrt(self)
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

/// One pass over the spheres in order; whether it moved the point.
#[inline(always)]
fn project<T: Real>(x: &mut [T; 3], spheres: &[(T, T, T); 3]) -> bool {
    let mut moved = false;
    for &(cy, r, r2) in spheres {
        let dy = x[1] - cy;
        let d2 = x[0] * x[0] + dy * dy + x[2] * x[2];
        if d2 < r2 {
            let s = r / d2.sqrt();
            *x = [x[0] * s, cy + dy * s, x[2] * s];
            moved = true;
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
        // reach the row beyond the rim: their own loops, so the long one
        // in between has no branch but the contact's.
        self.rows::<false, true>(&columns, 1..2, at, out);
        self.rows::<true, true>(&columns, 2..n - 2, at, out);
        self.rows::<true, false>(&columns, n - 2..n - 1, at, out);
    }

    /// Steps rows `rows` of a column; `DOWN` and `UP` say whether the
    /// bending springs two rows down and up exist. Every neighbour is read
    /// through a slice shifted by its row offset, all as long as `rows`, so
    /// the loop indexes them all by one counter without bounds checks and
    /// the compiler can vectorize it along the column.
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
        // The springs' other ends (column, row offset) and rest lengths;
        // bending down and up where they exist (else a stand-in never read).
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
        let down = if DOWN { pick(0, -2) } else { pick(0, 0) };
        let up = if UP { pick(0, 2) } else { pick(0, 0) };
        let own = pick(0, 0);
        let [ox, oy, oz] = &mut out.x;
        let [vx, vy, vz] = &mut out.v;
        let (ox, oy, oz) = (
            &mut ox[at + lo..at + lo + len],
            &mut oy[at + lo..at + lo + len],
            &mut oz[at + lo..at + lo + len],
        );
        let (vx, vy, vz) = (
            &mut vx[at + lo..at + lo + len],
            &mut vy[at + lo..at + lo + len],
            &mut vz[at + lo..at + lo + len],
        );
        // Every slice is `len` long: said once here, so the loop below
        // needs no bounds check.
        for end in ends.iter().map(|(e, _)| e).chain([&down, &up, &own]) {
            assert!(end.iter().all(|c| c.len() == len));
        }
        let zero = T::of(0.0);
        for t in 0..len {
            let xp = [own[0][t], own[1][t], own[2][t]];
            let mut f = [zero; 3];
            let mut spring = |end: &[&[T]; 3], r: T| {
                let d = [end[0][t] - xp[0], end[1][t] - xp[1], end[2][t] - xp[2]];
                let l = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                let s = self.k * (l - r) / l;
                f[0] += s * d[0];
                f[1] += s * d[1];
                f[2] += s * d[2];
            };
            for (end, r) in &ends {
                spring(end, *r);
            }
            if DOWN {
                spring(&down, rbu);
            }
            if UP {
                spring(&up, rbu);
            }
            let g = [zero, self.gravity, zero];
            let mut v = [vx[t], vy[t], vz[t]];
            for c in 0..3 {
                v[c] += self.dt * (f[c] * self.inv_mass + g[c] - self.damping * v[c]);
            }
            let mut moved_to = [
                xp[0] + self.dt * v[0],
                xp[1] + self.dt * v[1],
                xp[2] + self.dt * v[2],
            ];
            if project(&mut moved_to, &self.spheres) {
                for c in 0..3 {
                    v[c] = (moved_to[c] - xp[c]) / self.dt;
                }
            }
            [ox[t], oy[t], oz[t]] = moved_to;
            [vx[t], vy[t], vz[t]] = v;
        }
    }
}
