//! `plasticine export`.

use crate::io::load_character;
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};

/// The arguments of `plasticine export`.
#[derive(clap::Args)]
pub struct ExportArgs {
    /// Character file (.ron) the cache was baked from: its skeleton and key postures.
    character: PathBuf,
    /// Frame cache from `plasticine bake` (e.g. out/penguin/bake.plcache).
    #[arg(long, value_name = "CACHE")]
    baked: PathBuf,
    /// Output: FILE.glb, FILE.usda, or a folder with --format obj.
    #[arg(long)]
    out: PathBuf,
    /// glb, usda or obj [default: from --out's extension].
    #[arg(long)]
    format: Option<crate::io::ExportFormat>,
    /// Export every Nth frame of the cache.
    #[arg(long, value_name = "N", default_value_t = 1)]
    every: usize,
    /// glTF: morph targets for clips of at most N exported frames, per-frame meshes above (0: always per-frame meshes).
    #[arg(long, value_name = "N", default_value_t = crate::io::DEFAULT_MORPH_LIMIT)]
    morph_limit: usize,
    /// Export each skin as the smooth surface through its points, refined N
    /// times per grid edge (1: the simulated grid itself).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=crate::io::MAX_SUBDIVIDE as i64))]
    subdivide: u8,
    /// glTF and USD, modal flesh: its mesh as `modes` (skinned, morph
    /// targets or blend shapes of the vibration modes, weights animated with
    /// the bake's amplitudes; glTF has one target per side of each mode, so
    /// every weight is in [0, 1] as Blender's shape keys need) or as `points` (its baked vertices, like FEM
    /// flesh; the muscles are then not exported).
    #[arg(long, value_name = "HOW", default_value = "modes", value_parser = ["modes", "points"])]
    modal_as: String,
    /// glTF and USD, FEM flesh with blendshapes: its mesh as a rig for
    /// DCC tools instead of the baked points: skinned to the skeleton, one
    /// named morph target (USD `BlendShape`) per blend target, weights
    /// animated from the key postures. Viewers blend the targets linearly,
    /// so this is for further animation work; the physical blend of the
    /// bake is what the export carries without it.
    #[arg(long)]
    blend_targets: bool,
}

impl ExportArgs {
    pub fn run(self) -> Result<()> {
        let Self {
            character,
            baked,
            out,
            format,
            every,
            morph_limit,
            subdivide,
            modal_as,
            blend_targets,
        } = self;
        let opts = crate::io::ExportOptions {
            format,
            every,
            morph_limit,
            subdivide: subdivide.into(),
            rig: None,
        };
        let rig = match (blend_targets, modal_as.as_str()) {
            (true, _) => Rig::BlendTargets,
            (false, "modes") => Rig::Modes,
            _ => Rig::Points,
        };
        export(&character, &baked, &out, &opts, rig)?;
        Ok(())
    }
}

/// How the FEM flesh's mesh is exported.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rig {
    /// Its baked points.
    Points,
    /// Modal flesh: skinned, a morph target pair per mode.
    Modes,
    /// Blendshapes: skinned, a morph target per blend target.
    BlendTargets,
}

/// `plasticine export`.
fn export(
    character: &Path,
    baked: &Path,
    out: &Path,
    opts: &crate::io::ExportOptions,
    rig: Rig,
) -> Result<()> {
    use crate::io::{ExportFormat, SecondaryMotion, export, resolve_format};
    let morph_limit = opts.morph_limit;
    // Refuse a bad --out before reading anything.
    let format = resolve_format(out, opts.format)?;
    let c = load_character(character)?;
    let mut cache = crate::io::CacheReader::open(baked)?;
    let mut opts = opts.clone();
    match rig {
        Rig::Modes if format != ExportFormat::Obj && !cache.flesh().modal.is_empty() => {
            opts.rig = modal_morphs(&c)?;
        }
        Rig::BlendTargets => opts.rig = Some(blend_morphs(&c, character, out, format)?),
        _ => {}
    }
    let opts = &opts;
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("exporting {bar:40} {pos}/{len}, eta {eta}")
            .expect("valid template"),
    );
    let s = export(&c, &mut cache, out, opts, |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })
    .with_context(|| {
        format!(
            "cannot export {} with {}",
            baked.display(),
            character.display()
        )
    })?;
    bar.finish_and_clear();
    if !s.complete_cache {
        eprintln!(
            "note: {} is the unfinished file of a bake that was cut off; exported its {} complete frames",
            baked.display(),
            cache.frame_count()
        );
    }
    let how = match s.secondary {
        SecondaryMotion::MorphTargets | SecondaryMotion::PerFrameMeshes
            if s.skins.is_empty() && opts.rig.is_some() =>
        {
            match rig {
                Rig::BlendTargets => "the skeleton's motion and the keyed blend weights".into(),
                _ => "the skeleton's motion and the flesh's vibration modes".into(),
            }
        }
        SecondaryMotion::MorphTargets => format!(
            "skin motion as {} morph targets (clips up to --morph-limit {morph_limit})",
            s.frames
        ),
        SecondaryMotion::PerFrameMeshes => format!(
            "skin motion as {} per-frame meshes (over --morph-limit {morph_limit})",
            s.frames
        ),
        SecondaryMotion::TimeSampledPoints => "time-sampled points".into(),
        SecondaryMotion::FileSequence => "one file per frame".into(),
    };
    println!(
        "Exported {} frames ({:.2} s at {} fps, cache frames {}..={} every {}) of '{}' as {}: {}",
        s.frames, s.duration, s.fps, s.first_frame, s.last_frame, s.every, c.name, s.format, how
    );
    for k in &s.skins {
        if s.subdivide > 1 {
            let (m, n) = crate::skin_mesh::refined_size(k.m, k.n, s.subdivide);
            println!(
                "  skin '{}' {}x{}, exported as the smooth surface through its points at {m}x{n} (--subdivide {})",
                k.name, k.m, k.n, s.subdivide
            );
        } else {
            println!("  skin '{}' {}x{}", k.name, k.m, k.n);
        }
    }
    if let Some(m) = &opts.rig {
        match &m.animated {
            crate::io::MorphWeights::Amplitudes(parts) => println!(
                "  mesh '{}': skinned, {} morph targets (one per side of each vibration mode of {} parts), weights animated with the bake's amplitudes",
                m.name,
                2 * m.targets.len(),
                parts.len()
            ),
            crate::io::MorphWeights::Keyed => println!(
                "  mesh '{}': skinned, {} named morph targets ({}), weights animated from the key postures (viewers blend them linearly)",
                m.name,
                m.targets.len(),
                m.targets
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
    println!(
        "  the cache's boundary rows are within {:.1e} m of the character's joints",
        s.boundary_error
    );
    println!(
        "Wrote {} ({} file{}, {} bytes)",
        s.out.display(),
        s.files,
        if s.files == 1 { "" } else { "s" },
        s.bytes
    );
    Ok(())
}

/// The modal flesh as a mesh with morph targets of its modes, its modes
/// computed again from the character (the cache holds only their
/// amplitudes): its embedded mesh, else its muscles.
fn modal_morphs(c: &crate::character::Character) -> Result<Option<crate::io::SkinnedMorphs>> {
    let start = std::time::Instant::now();
    let rest = c.skeleton.rest_posture();
    let sim = crate::modal::ModalSim::new(c, &|_| rest.clone(), 0.0)
        .with_context(|| format!("cannot compute the modal flesh of '{}'", c.name))?;
    for why in sim.skipped() {
        eprintln!("note: {why}; the part rides rigidly");
    }
    let embedded = c
        .flesh
        .lattice_model()
        .and_then(|f| f.embedded_mesh.as_ref());
    let morphs = match (embedded, sim.mesh()) {
        (Some(e), Some(mesh)) => sim.mode_morphs(&crate::io::mesh_name(e), mesh),
        _ if !c.muscles.is_empty() => {
            let (positions, triangles) = crate::modal::rest_muscles(c);
            let mesh = sim.embed_mesh(&positions, &triangles);
            sim.mode_morphs(&format!("{}_muscles", c.name), &mesh)
        }
        _ => return Ok(None),
    };
    eprintln!(
        "computed the modal flesh's modes in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    Ok(Some(morphs))
}

/// The FEM flesh's blendshapes as a rig (`--blend-targets`), refused where
/// there is none or the format has no morph targets.
fn blend_morphs(
    c: &crate::character::Character,
    character: &Path,
    out: &Path,
    format: crate::io::ExportFormat,
) -> Result<crate::io::SkinnedMorphs> {
    if format == crate::io::ExportFormat::Obj {
        anyhow::bail!(
            "{}: --blend-targets needs glb or usda (an OBJ sequence has no morph targets); leave it out for the baked meshes",
            out.display()
        );
    }
    crate::blendshape::blend_morphs(c)
        .with_context(|| format!("cannot skin the mesh of '{}'", c.name))?
        .with_context(|| {
            format!(
                "{}: '{}' has no blend targets to export (add them with `plasticine blendshape attach` or the sculpt tool); leave out --blend-targets",
                character.display(),
                c.name
            )
        })
}
