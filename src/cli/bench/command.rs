//! `plasticine bench`.

use crate::cli::bench::drape::{self, DrapeError, DrapeSize, Precision};
use anyhow::Result;

/// The arguments of `plasticine bench`.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    /// A fixed workload to time beside other simulators, instead of the
    /// project's own figures.
    #[command(subcommand)]
    workload: Option<Workload>,
    /// Shorter runs (for smoke tests).
    #[arg(long)]
    quick: bool,
    /// Only one group of figures: the skin (`skin`: the penguin's real-time
    /// factor and every sample's smoothness), the lattice FEM (`fem`), or the
    /// tools and playback (`interactive`: IK drag, picking, baked playback), or
    /// the modal flesh (`modal`: precompute and cost per frame), the
    /// physical blendshapes (`blendshape`: Ma et al.'s Table 1 sizes), the
    /// FEM flesh's dynamic morph targets (`morph`: Galoppo's Table 5.1
    /// sizes, with and without the targets), the skeleton responding on
    /// the ground (`contact`: Galoppo's Table 4.1 sizes), the renderer
    /// (`render`: CPU per stereo frame, with and without the panel, and
    /// whole frames), or every figure that needs a graphics adapter (`gpu`:
    /// the GPU FEM's steps, the modal mesh's pose pass, the renderer's).
    #[arg(long, value_parser = ["blendshape", "contact", "fem", "gpu", "interactive", "modal", "morph", "render", "skin"])]
    only: Option<String>,
    /// Instead: the cost of each part (skin step, skin–skin contact, FEM
    /// step, a baked and an exported second) at four sizes, and the
    /// exponent k of cost ∝ n^k.
    #[arg(long, conflicts_with = "only")]
    scaling: bool,
}

impl BenchArgs {
    /// Prints the figures asked for, one JSON object per line.
    pub fn run(self) -> Result<()> {
        let Self {
            workload,
            quick,
            only,
            scaling,
        } = self;
        if scaling && workload.is_none() {
            for v in crate::cli::bench::scaling::figures(quick)? {
                println!("{v}");
            }
            return Ok(());
        }
        match (workload, only) {
            (Some(Workload::Drape(drape)), _) => drape.run()?,
            (None, None) => {
                crate::cli::bench::run_all(quick, &mut std::io::stdout())?;
            }
            (None, Some(group)) if group == "skin" => {
                crate::cli::bench::skin_figures(quick, &mut std::io::stdout())?;
            }
            (None, Some(group)) if group == "modal" => {
                for v in crate::cli::bench::modal::figures(quick) {
                    println!("{v}");
                }
            }
            (None, Some(group)) if group == "blendshape" => {
                for v in crate::cli::bench::blendshape::figures(quick) {
                    println!("{v}");
                }
            }
            (None, Some(group)) if group == "contact" => {
                for v in crate::cli::bench::contact::figures(quick) {
                    println!("{v}");
                }
            }
            (None, Some(group)) if group == "morph" => {
                for v in crate::cli::bench::morph::figures(quick) {
                    println!("{v}");
                }
            }
            (None, Some(group)) if group == "gpu" => {
                for v in crate::cli::bench::gpu_figures(quick) {
                    println!("{v}");
                }
            }
            (None, Some(group)) if group == "render" => {
                for v in crate::cli::bench::render::run(quick) {
                    println!("{v}");
                }
            }
            (None, Some(group)) if group == "interactive" => {
                let frames = if quick { 10 } else { 60 };
                println!("{}", crate::cli::bench::ik_drag_event(1000));
                println!("{}", crate::cli::bench::pick_event(1000)?);
                println!(
                    "{}",
                    crate::cli::bench::baked_playback_frame(128, 128, frames)?
                );
                println!(
                    "{}",
                    crate::cli::bench::baked_playback_snapshot(128, 128, frames)?
                );
            }
            (None, Some(_)) => {
                for v in crate::cli::bench::fem_steps_per_second(quick) {
                    println!("{v}");
                }
            }
        }
        Ok(())
    }
}

/// The fixed workloads of `plasticine bench WORKLOAD`.
#[derive(clap::Subcommand)]
enum Workload {
    /// The draped-skin workload of benchmarks/drape-workload.md: a cylinder
    /// of springs pinned at both rims over three spheres, timed with the
    /// workload's protocol (20 warm-up steps, then the median of --runs
    /// runs from a reset), one JSON line per size; or, with --checkpoints,
    /// the state's sums and diagnostics at those steps.
    Drape(DrapeArgs),
}

/// The arguments of `plasticine bench drape`.
#[derive(clap::Args)]
struct DrapeArgs {
    /// Grid sizes, points around x points up.
    #[arg(long, value_delimiter = ',', default_value = "16x16,64x64,128x128")]
    sizes: Vec<DrapeSize>,
    /// Timed runs per size; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Simulated seconds per timed run.
    #[arg(long, default_value_t = 1.0)]
    sim_seconds: f64,
    /// Simulated seconds for one size, such as 128x128=0.25 (repeatable).
    #[arg(long, value_delimiter = ',', value_parser = size_seconds)]
    sim_seconds_for: Vec<(DrapeSize, f64)>,
    /// Float precision of the state and the arithmetic.
    #[arg(long, value_parser = ["f32", "f64"], default_value = "f32")]
    precision: String,
    /// Instead of timing: a line per step count, with the sums of every
    /// point's position and velocity and the diagnostics there.
    #[arg(long, value_delimiter = ',')]
    checkpoints: Vec<usize>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
}

/// `SIZE=SECONDS`.
fn size_seconds(s: &str) -> Result<(DrapeSize, f64), String> {
    let (size, seconds) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not SIZE=SECONDS, such as 128x128=0.25"))?;
    let size = size.parse::<DrapeSize>().map_err(|e| e.to_string())?;
    let seconds = seconds
        .parse::<f64>()
        .map_err(|_| format!("'{seconds}' is not a number of seconds"))?;
    Ok((size, seconds))
}

impl DrapeArgs {
    fn run(self) -> Result<()> {
        let threads = match self.threads {
            Some(0) => return Err(DrapeError::NoThreads.into()),
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, usize::from),
        };
        let precision = if self.precision == "f64" {
            Precision::F64
        } else {
            Precision::F32
        };
        // Refused before anything runs, not after the first size.
        let seconds_of = |size: DrapeSize| {
            self.sim_seconds_for
                .iter()
                .rev()
                .find(|(s, _)| *s == size)
                .map_or(self.sim_seconds, |&(_, t)| t)
        };
        for &size in &self.sizes {
            drape::steps_in(seconds_of(size))?;
        }
        if self.runs == 0 {
            return Err(DrapeError::NoRuns.into());
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        pool.install(|| {
            for &size in &self.sizes {
                if !self.checkpoints.is_empty() {
                    eprintln!("drape {size}: checkpoints {:?}", self.checkpoints);
                    for line in drape::checkpoints(size, precision, &self.checkpoints) {
                        println!("{line}");
                    }
                    continue;
                }
                let seconds = seconds_of(size);
                eprintln!(
                    "drape {size}: {} runs of {seconds} s on {threads} threads",
                    self.runs
                );
                match drape::timed(size, precision, seconds, self.runs, threads) {
                    Ok(line) => println!("{line}"),
                    Err(e) => println!(
                        "{}",
                        serde_json::json!({"peer": "plasticine", "M": size.m, "N": size.n, "error": e.to_string()})
                    ),
                }
            }
        });
        Ok(())
    }
}
