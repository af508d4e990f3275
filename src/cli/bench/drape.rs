//! `plasticine bench drape`: the draped-skin workload of
//! `benchmarks/drape-workload.md`, exactly as written there (a cylinder of
//! springs pinned at both rims, pre-stretched over three spheres, stepped by
//! semi-implicit Euler with projection contact), so Plasticine's kernel can
//! be timed beside other simulators on one machine in one run: the same
//! warm-up, reset and median-of-runs protocol, the same JSON lines, and the
//! checkpoint lines that compare positions with a reference in f32 or f64.

mod kernel;

pub use kernel::{DrapeSize, Real};
use kernel::{FAMILIES, HEIGHT, RADIUS, SPHERES, STIFFNESS, State, cylinder_point, rest_length};
use serde_json::{Value, json};
use std::fmt;
use std::time::Instant;

/// The workload's step (s).
pub const DT: f64 = 0.5e-3;
/// Untimed steps before the timed runs.
pub const WARM_UP_STEPS: usize = 20;
/// The smallest grid the workload is defined on (a free row, and bending
/// springs that reach two points over).
pub const MIN_SIZE: usize = 4;
/// The largest grid: 4M points, about 200 MB of f64 state.
pub const MAX_POINTS: usize = 1 << 22;

impl fmt::Display for DrapeSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.m, self.n)
    }
}

/// A workload the draped-skin benchmark refuses.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DrapeError {
    /// Not `MxN`.
    #[error("size '{0}' is not MxN (points around x points up, such as 64x64)")]
    Syntax(String),
    /// Below [`MIN_SIZE`] either way.
    #[error("size {0} is too small: the workload needs at least {MIN_SIZE}x{MIN_SIZE}")]
    TooSmall(DrapeSize),
    /// Over [`MAX_POINTS`].
    #[error("size {size} has {points} points, over the limit of {MAX_POINTS} (about 200 MB of state)", points = size.m * size.n)]
    TooBig {
        /// The size asked for.
        size: DrapeSize,
    },
    /// No thread to run on.
    #[error("--threads must be at least 1")]
    NoThreads,
    /// Simulated time that is not a positive number of steps.
    #[error("the simulated time {0} s is not a positive whole number of {DT} s steps")]
    Time(f64),
    /// `--runs 0`.
    #[error("--runs must be at least 1")]
    NoRuns,
}

impl std::str::FromStr for DrapeSize {
    type Err = DrapeError;

    fn from_str(s: &str) -> Result<Self, DrapeError> {
        let syntax = || DrapeError::Syntax(s.to_string());
        let (m, n) = s.split_once(['x', 'X']).ok_or_else(syntax)?;
        let size = Self {
            m: m.trim().parse().map_err(|_| syntax())?,
            n: n.trim().parse().map_err(|_| syntax())?,
        };
        if size.m < MIN_SIZE || size.n < MIN_SIZE {
            return Err(DrapeError::TooSmall(size));
        }
        if size.m.checked_mul(size.n).is_none_or(|p| p > MAX_POINTS) {
            return Err(DrapeError::TooBig { size });
        }
        Ok(size)
    }
}

impl DrapeSize {
    /// How many springs the six families hold: M·(6N − 5).
    pub fn springs(self) -> usize {
        FAMILIES.iter().map(|&(_, dj)| self.m * (self.n - dj)).sum()
    }
}

/// Float precision of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// Single precision state and arithmetic (the timed figure).
    F32,
    /// Double precision (the reference the f32 run is checked against).
    F64,
}

impl Precision {
    fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
}

/// The number of `dt` steps in `seconds`.
pub fn steps_in(seconds: f64) -> Result<usize, DrapeError> {
    let steps = (seconds / DT).round();
    if !(steps >= 1.0 && (steps * DT - seconds).abs() <= 1e-9 * seconds.max(1.0)) {
        return Err(DrapeError::Time(seconds));
    }
    Ok(steps as usize)
}

/// A drape of either precision.
pub struct Drape {
    inner: Inner,
}

enum Inner {
    F32(State<f32>),
    F64(State<f64>),
}

impl Drape {
    /// The initial state at `size`.
    pub fn new(size: DrapeSize, precision: Precision) -> Self {
        let inner = match precision {
            Precision::F32 => Inner::F32(State::new(size)),
            Precision::F64 => Inner::F64(State::new(size)),
        };
        Self { inner }
    }

    /// `steps` steps of [`DT`], over rayon's threads where the grid is big
    /// enough.
    pub fn run(&mut self, steps: usize) {
        for _ in 0..steps {
            match &mut self.inner {
                Inner::F32(s) => s.step(DT, true),
                Inner::F64(s) => s.step(DT, true),
            }
        }
    }

    /// Positions and velocities, as f64.
    pub fn state(&self) -> (Vec<[f64; 3]>, Vec<[f64; 3]>) {
        fn of<T: Real>(s: &State<T>) -> (Vec<[f64; 3]>, Vec<[f64; 3]>) {
            let pick = |a: &[Vec<T>; 3]| {
                (0..a[0].len())
                    .map(|p| [a[0][p].f64(), a[1][p].f64(), a[2][p].f64()])
                    .collect()
            };
            (pick(&s.x), pick(&s.v))
        }
        match &self.inner {
            Inner::F32(s) => of(s),
            Inner::F64(s) => of(s),
        }
    }

    /// The grid's size.
    pub fn size(&self) -> DrapeSize {
        match &self.inner {
            Inner::F32(s) => s.size,
            Inner::F64(s) => s.size,
        }
    }

    /// The workload's diagnostics of the current state, in f64.
    pub fn diagnostics(&self) -> Diagnostics {
        let size = self.size();
        let (x, v) = self.state();
        let mass = 1.0 / (size.m * size.n) as f64;
        let free = |p: usize| {
            let j = p % size.n;
            j > 0 && j + 1 < size.n
        };
        let (mut pen, mut sum_r, mut min_r, mut max_r, mut sum_y, mut ke) =
            (0.0f64, 0.0, f64::INFINITY, 0.0f64, 0.0, 0.0);
        let mut finite = true;
        let mut free_count = 0;
        for p in (0..x.len()).filter(|&p| free(p)) {
            let [px, py, pz] = x[p];
            finite &= x[p].iter().chain(&v[p]).all(|c| c.is_finite());
            for (cy, r) in SPHERES {
                pen = pen.max(r - (px * px + (py - cy) * (py - cy) + pz * pz).sqrt());
            }
            let radius = px.hypot(pz);
            sum_r += radius;
            min_r = min_r.min(radius);
            max_r = max_r.max(radius);
            sum_y += py;
            ke += 0.5 * mass * v[p].iter().map(|c| c * c).sum::<f64>();
            free_count += 1;
        }
        let mut spring_energy = 0.0;
        for family in FAMILIES {
            let rest = rest_length(size, family);
            let (di, dj) = family;
            for i in 0..size.m {
                let i2 = (i as isize + di).rem_euclid(size.m as isize) as usize;
                for j in 0..size.n - dj {
                    let (a, b) = (x[i * size.n + j], x[i2 * size.n + j + dj]);
                    let l = ((b[0] - a[0]).powi(2) + (b[1] - a[1]).powi(2) + (b[2] - a[2]).powi(2))
                        .sqrt();
                    spring_energy += 0.5 * STIFFNESS * (l - rest).powi(2);
                }
            }
        }
        let count = free_count as f64;
        Diagnostics {
            max_penetration: pen.max(0.0),
            mean_radius: sum_r / count,
            min_radius: min_r,
            max_radius: max_r,
            mean_y: sum_y / count,
            kinetic_energy: ke,
            spring_energy,
            finite,
        }
    }

    /// The checkpoint line's sums over all points: x, y, z, vx, vy, vz.
    pub fn sums(&self) -> [f64; 6] {
        let (x, v) = self.state();
        let mut s = [0.0; 6];
        for (p, q) in x.iter().zip(&v) {
            for c in 0..3 {
                s[c] += p[c];
                s[3 + c] += q[c];
            }
        }
        s
    }
}

/// The workload's end-of-run diagnostics (free points only, but the spring
/// energy, which is over all springs).
#[derive(Clone, Copy, Debug)]
pub struct Diagnostics {
    /// The deepest point inside a sphere (m; 0 if none).
    pub max_penetration: f64,
    /// Mean distance from the y axis (m).
    pub mean_radius: f64,
    /// Least distance from the y axis (m).
    pub min_radius: f64,
    /// Greatest distance from the y axis (m).
    pub max_radius: f64,
    /// Mean height (m).
    pub mean_y: f64,
    /// Kinetic energy (J).
    pub kinetic_energy: f64,
    /// Elastic energy of every spring (J).
    pub spring_energy: f64,
    /// No position or velocity is NaN or infinite.
    pub finite: bool,
}

impl Diagnostics {
    /// The diagnostics' JSON fields, named as the workload names them
    /// (the same on checkpoint lines).
    fn fields(&self, into: &mut serde_json::Map<String, Value>) {
        for (name, value) in [
            ("max_penetration", json!(self.max_penetration)),
            ("mean_radius", json!(self.mean_radius)),
            ("min_radius", json!(self.min_radius)),
            ("max_radius", json!(self.max_radius)),
            ("mean_y", json!(self.mean_y)),
            ("kinetic_energy", json!(self.kinetic_energy)),
            ("spring_energy", json!(self.spring_energy)),
        ] {
            into.insert(format!("{name}_end"), value);
        }
        into.insert("finite".into(), json!(self.finite));
    }
}

/// One timed line: build, warm up [`WARM_UP_STEPS`] steps, then `runs`
/// times reset and time `sim_seconds` of steps; the median wall time, the
/// diagnostics after the last run. `threads` is what the caller's rayon
/// pool has (reported).
pub fn timed(
    size: DrapeSize,
    precision: Precision,
    sim_seconds: f64,
    runs: usize,
    threads: usize,
) -> Result<Value, DrapeError> {
    if runs == 0 {
        return Err(DrapeError::NoRuns);
    }
    let steps = steps_in(sim_seconds)?;
    let setup = Instant::now();
    let mut drape = Drape::new(size, precision);
    drape.run(WARM_UP_STEPS);
    let setup_and_warmup = setup.elapsed().as_secs_f64();
    let mut walls = Vec::with_capacity(runs);
    for _ in 0..runs {
        drape = Drape::new(size, precision);
        let start = Instant::now();
        drape.run(steps);
        walls.push(start.elapsed().as_secs_f64());
    }
    let mut sorted = walls.clone();
    sorted.sort_by(f64::total_cmp);
    let wall = sorted[sorted.len() / 2];
    let points = size.m * size.n;
    let mut line = serde_json::Map::new();
    for (k, v) in [
        ("name", json!("drape")),
        ("peer", json!("plasticine")),
        ("M", json!(size.m)),
        ("N", json!(size.n)),
        ("points", json!(points)),
        ("springs", json!(size.springs())),
        ("dt", json!(DT)),
        ("sim_seconds", json!(sim_seconds)),
        ("wall_seconds", json!(wall)),
        ("realtime_factor", json!(sim_seconds / wall)),
        ("point_steps_per_s", json!((points * steps) as f64 / wall)),
    ] {
        line.insert(k.into(), v);
    }
    drape.diagnostics().fields(&mut line);
    for (k, v) in [
        ("steps", json!(steps)),
        ("k_spring", json!(STIFFNESS)),
        ("runs_wall_seconds", json!(walls)),
        ("setup_and_warmup_seconds", json!(setup_and_warmup)),
        ("threads", json!(threads)),
        ("precision", json!(precision.name())),
        ("peer_version", json!(env!("CARGO_PKG_VERSION"))),
        (
            "kernel",
            json!("fused Jacobi pass per free point, SoA, rayon over column tiles"),
        ),
    ] {
        line.insert(k.into(), v);
    }
    Ok(Value::Object(line))
}

/// The checkpoint lines of one size: the state's sums and diagnostics after
/// each of `checkpoints` steps (ascending; 0 is the initial state).
pub fn checkpoints(size: DrapeSize, precision: Precision, checkpoints: &[usize]) -> Vec<Value> {
    let mut sorted = checkpoints.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut drape = Drape::new(size, precision);
    let mut done = 0;
    let mut lines = Vec::with_capacity(sorted.len());
    for k in sorted {
        drape.run(k - done);
        done = k;
        let s = drape.sums();
        let mut line = serde_json::Map::new();
        for (name, v) in [
            ("M", json!(size.m)),
            ("N", json!(size.n)),
            ("steps", json!(k)),
            ("t", json!(k as f64 * DT)),
            ("sum_x", json!(s[0])),
            ("sum_y", json!(s[1])),
            ("sum_z", json!(s[2])),
            ("sum_vx", json!(s[3])),
            ("sum_vy", json!(s[4])),
            ("sum_vz", json!(s[5])),
        ] {
            line.insert(name.into(), v);
        }
        drape.diagnostics().fields(&mut line);
        line.insert("precision".into(), json!(precision.name()));
        lines.push(Value::Object(line));
    }
    lines
}

/// The undeformed cylinder's point (i, j) (for tests).
pub fn start_point(size: DrapeSize, i: usize, j: usize) -> [f64; 3] {
    cylinder_point(size, i, j)
}

/// The cylinder's radius and height (m).
pub const CYLINDER: (f64, f64) = (RADIUS, HEIGHT);

#[cfg(test)]
mod tests;
