//! `plasticine bake`.

use super::args::{parse_interval, parse_resolution, parse_vec3};
use crate::bake::{BakeOptions, bake};
use crate::io::load_character;
use crate::skin::{IntegratorKind, SolverSettings};
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

/// The arguments of `plasticine bake`.
#[derive(clap::Args)]
pub struct BakeArgs {
    /// Character file (.ron), e.g. assets/penguin.ron.
    character: PathBuf,
    /// Output folder: bake.plcache (frames), summary.json, and obj/ with --obj.
    #[arg(long)]
    out: PathBuf,
    /// Resample every skin to `MxN` points (around x bottom-to-top) before baking, e.g. 64x64.
    #[arg(long, value_parser = parse_resolution)]
    resolution: Option<(usize, usize)>,
    /// Time integrator [default: verlet, or the one in --settings].
    #[arg(long, value_enum)]
    integrator: Option<IntegratorKind>,
    /// Frames per second of the cache.
    #[arg(long, default_value_t = 30.0)]
    fps: f32,
    /// Seconds to bake (default: the span of the key postures).
    #[arg(long)]
    duration: Option<f64>,
    /// Also write every Nth frame as a Wavefront OBJ (viewable in any 3D tool).
    #[arg(long, value_name = "N")]
    obj: Option<usize>,
    /// Solver settings file (RON, see README), overriding the defaults.
    #[arg(long)]
    settings: Option<PathBuf>,
    /// Continue the bake cancelled in OUT (Ctrl+C leaves bake.resume and
    /// bake.plcache.partial there), with the same character and options.
    #[arg(long, conflicts_with = "restart")]
    resume: bool,
    /// Discard a bake cancelled in OUT and start over.
    #[arg(long)]
    restart: bool,
    /// Also leave a checkpoint after the frame that ends every SECONDS of
    /// wall time, so that a bake killed outright (power loss, the
    /// out-of-memory killer) continues from there with --resume; 0 leaves
    /// one after every frame.
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = parse_interval)]
    checkpoint_every: std::time::Duration,
    /// Stop with a checkpoint once frame B (counted from 0) is baked, and
    /// exit successfully: a render farm's job with a time limit bakes a
    /// stretch of a long shot, and the next job continues it with --resume
    /// (the chained cache is the same, byte for byte, as one bake's).
    #[arg(long, value_name = "B")]
    until_frame: Option<usize>,
    /// The ground (`--drop`): summary.json reports the clearance and the
    /// contacts.
    #[command(flatten)]
    ground: super::args::GroundArgs,
    /// A second character (.ron) on the same ground (needs --drop): the
    /// two touch and push each other. Its frames go to OUT/with/, its
    /// summary into summary.json's "with".
    #[arg(long, value_name = "OTHER", requires = "drop")]
    with: Option<PathBuf>,
    /// Where the second character stands: moved by X,Y,Z metres from where
    /// its file stands it. Default: beside the first, 5 cm to its +x.
    #[arg(long, value_name = "X,Y,Z", requires = "with", value_parser = parse_vec3)]
    at: Option<glam::Vec3>,
}

impl BakeArgs {
    pub fn run(self) -> Result<()> {
        let Self {
            character,
            out,
            resolution,
            integrator,
            fps,
            duration,
            obj,
            settings,
            resume,
            restart,
            checkpoint_every,
            until_frame,
            ground,
            with,
            at,
        } = self;

        let c = load_character(&character)?;
        let second = match &with {
            Some(path) => Some(Box::new(crate::bake::SecondCharacter {
                character: load_character(path)?,
                offset: at.map(glam::Vec3::as_dvec3),
            })),
            None => None,
        };
        let mut solver = match settings {
            Some(p) => {
                let text = std::fs::read_to_string(&p)
                    .with_context(|| format!("reading {}", p.display()))?;
                ron::from_str::<SolverSettings>(&text)
                    .map_err(|e| anyhow::anyhow!("{}:{e}", p.display()))?
            }
            None => SolverSettings::default(),
        };
        if let Some(kind) = integrator {
            solver.integrator = kind;
        }
        solver
            .validate()
            .map_err(|e| anyhow::anyhow!("solver settings: {e}"))?;
        // Ctrl+C (SIGINT) or SIGTERM: finish the frame, leave a checkpoint.
        // A second one stops at once.
        let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = cancel.clone();
        ctrlc::set_handler(move || {
            if flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
                eprintln!("\nstopped at once: the frames since the last checkpoint are lost");
                std::process::exit(130);
            }
            eprintln!("\ncancelling after the current frame (press Ctrl+C again to stop at once)");
        })
        .context("installing the Ctrl+C handler")?;
        let opts = BakeOptions {
            resolution,
            settings: solver,
            fps,
            duration,
            obj_every: obj,
            start: if resume {
                crate::bake::BakeStart::Resume
            } else if restart {
                crate::bake::BakeStart::Restart
            } else {
                crate::bake::BakeStart::Fresh
            },
            cancel: Some(cancel),
            checkpoint_every: Some(checkpoint_every),
            ground: ground.ground()?,
            with: second,
        };
        let bar = ProgressBar::new(0).with_style(
            ProgressStyle::with_template(
                "baking {bar:40} {pos}/{len} frames, {elapsed} elapsed, eta {eta}",
            )
            .expect("valid template"),
        );
        let outcome = bake(c, &opts, &out, |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
            if until_frame.is_some_and(|b| done > b) {
                crate::bake::BakeControl::Cancel
            } else {
                crate::bake::BakeControl::Continue
            }
        })
        .map_err(|e| {
            use crate::bake::BakeError;
            match e {
                BakeError::Unfinished { .. } => {
                    anyhow::anyhow!("{e}; continue it with --resume, or discard it with --restart")
                }
                BakeError::Mismatch { .. } => anyhow::anyhow!(
                    "{e}. Resume with the same character and options, or start over with --restart"
                ),
                e => e.into(),
            }
        })?;
        bar.finish_and_clear();
        let s = match outcome {
            crate::bake::BakeOutcome::Finished(s) => s,
            crate::bake::BakeOutcome::Cancelled(c) if until_frame.is_some_and(|b| c.done > b) => {
                // Asked for: this job's stretch of the shot is done.
                println!(
                    "baked frames 0 to {} of the {} (--until-frame); the next job continues with `{}` (checkpoint {})",
                    c.done - 1,
                    c.frames,
                    resume_command(),
                    c.checkpoint.display()
                );
                return Ok(());
            }
            crate::bake::BakeOutcome::Cancelled(c) => {
                // The command to continue: this one, with --resume.
                eprintln!(
                    "bake cancelled at frame {}/{}; run `{}` to continue (checkpoint {}, frames so far in {})",
                    c.done,
                    c.frames,
                    resume_command(),
                    c.checkpoint.display(),
                    c.partial.display()
                );
                std::process::exit(130);
            }
        };
        print_summary(&s, &out);
        warn_crumpled(&s, &character, &out);
        if let (Some(w), Some(path)) = (&s.with, &with) {
            let dir = out.join(crate::bake::WITH_DIR);
            println!("The second character:");
            print_summary(w, &dir);
            warn_crumpled(w, path, &dir);
            if let Some(c) = &s.contact {
                println!(
                    "They touched: at most {} contacts between them in a flesh step. See both with `plasticine render {} --baked {} --with {} --out {}`",
                    c.max_contacts_between,
                    character.display(),
                    s.cache.display(),
                    path.display(),
                    out.join("frames").display()
                );
            }
        }
        Ok(())
    }
}

/// This command as the user typed it, with --resume instead of --restart,
/// quoted for a POSIX shell: what continues a cancelled bake.
fn resume_command() -> String {
    let quote = |a: String| {
        if !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
        {
            a
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    };
    let mut args: Vec<String> = Vec::new();
    let mut given = std::env::args().skip(1);
    while let Some(a) = given.next() {
        if a == "--until-frame" {
            given.next(); // the next job chooses its own stretch
        } else if a != "--restart" && a != "--resume" && !a.starts_with("--until-frame=") {
            args.push(quote(a));
        }
    }
    args.insert(0, "plasticine".into());
    args.push("--resume".into());
    args.join(" ")
}

/// Names each skin that crumpled somewhere in the bake, its worst frame,
/// and the command that renders that frame.
fn warn_crumpled(s: &crate::bake::BakeSummary, character: &std::path::Path, out: &std::path::Path) {
    for k in s.skins.iter().filter(|k| k.worst_frame.crumpled()) {
        let w = &k.worst_frame;
        eprintln!(
            "warning: skin '{}' crumpled at {:.2} s (frame {}): {:.1} % of its neighbouring quads fold over 30° (p95 {:.0}°); see it with `plasticine render {} --baked {} --every {} --frames 2 --out {}`",
            k.name,
            w.time_s,
            w.frame,
            w.creased_pct,
            w.p95_deg,
            character.display(),
            s.cache.display(),
            w.frame.max(1),
            out.join("crumpled").display()
        );
    }
}

/// What a finished bake did: its warnings, speed, each skin's steps, and
/// where its files are.
fn print_summary(s: &crate::bake::BakeSummary, out: &std::path::Path) {
    for e in &s.events {
        eprintln!("warning: {e}");
    }
    println!(
        "Baked {} frames ({:.2} s simulated at {} fps) of '{}' with {} in {:.2} s wall: {:.1}x real time.",
        s.frames,
        s.simulated_seconds,
        s.fps,
        s.character,
        s.integrator,
        s.wall_seconds,
        s.real_time_factor
    );
    for k in &s.skins {
        println!(
            "  skin '{}' {}x{}: {} steps (h {:.2e}..{:.2e} s), {} rejected by error, {} by constraints, {} force evaluations",
            k.name,
            k.m,
            k.n,
            k.stats.steps,
            k.stats.smallest_step,
            k.stats.largest_step,
            k.stats.error_rejections,
            k.stats.constraint_rejections,
            k.stats.evals.full
        );
    }
    for m in &s.flesh.meshes {
        println!(
            "  embedded mesh '{}': {} vertices per frame",
            m.name, m.vertices
        );
    }
    println!(
        "Frame cache: {} ({} bytes); summary: {}",
        s.cache.display(),
        s.cache_bytes,
        out.join("summary.json").display()
    );
    if s.obj_frames > 0 {
        println!(
            "{} OBJ frames in {}",
            s.obj_frames,
            out.join("obj").display()
        );
    }
}
