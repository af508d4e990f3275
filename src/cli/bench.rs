//! `plasticine bench`.

use anyhow::Result;

/// The arguments of `plasticine bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Shorter runs (for smoke tests).
    #[arg(long)]
    quick: bool,
    /// Only one group of figures: the skin (`skin`: the penguin's real-time
    /// factor and every sample's smoothness), the lattice FEM (`fem`), or the
    /// tools and playback (`interactive`: IK drag, picking, baked playback), or
    /// the modal flesh (`modal`: precompute and cost per frame), the
    /// physical blendshapes (`blendshape`: Ma et al.'s Table 1 sizes), or
    /// the renderer (`render`: CPU per stereo frame, with and without the
    /// panel, and whole frames).
    #[arg(long, value_parser = ["blendshape", "fem", "interactive", "modal", "render", "skin"])]
    only: Option<String>,
}

impl BenchArgs {
    pub fn run(self) -> Result<()> {
        match self {
            Self { quick, only: None } => {
                plasticine::bench::run_all(quick, &mut std::io::stdout())?;
            }
            Self {
                quick,
                only: Some(group),
            } if group == "skin" => plasticine::bench::skin_figures(quick, &mut std::io::stdout())?,
            Self {
                quick,
                only: Some(group),
            } if group == "modal" => {
                for v in plasticine::bench::modal::figures(quick) {
                    println!("{v}");
                }
            }
            Self {
                quick,
                only: Some(group),
            } if group == "blendshape" => {
                for v in plasticine::bench::blendshape::figures(quick) {
                    println!("{v}");
                }
            }
            Self {
                quick,
                only: Some(group),
            } if group == "render" => {
                for v in plasticine::bench::render::run(quick) {
                    println!("{v}");
                }
            }
            Self {
                quick,
                only: Some(group),
            } if group == "interactive" => {
                let frames = if quick { 10 } else { 60 };
                println!("{}", plasticine::bench::ik_drag_event(1000));
                println!("{}", plasticine::bench::pick_event(1000)?);
                println!(
                    "{}",
                    plasticine::bench::baked_playback_frame(128, 128, frames)?
                );
                println!(
                    "{}",
                    plasticine::bench::baked_playback_snapshot(128, 128, frames)?
                );
            }
            Self {
                quick,
                only: Some(_),
            } => {
                for v in plasticine::bench::fem_steps_per_second(quick) {
                    println!("{v}");
                }
            }
        }
        Ok(())
    }
}
