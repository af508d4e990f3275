//! `plasticine render`.

use super::args::{LayerArg, MapArg, MusclesArg, parse_size};
use crate::io::load_character;
use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

/// The arguments of `plasticine render`.
#[derive(clap::Args)]
pub struct RenderArgs {
    /// Character file (.ron).
    character: PathBuf,
    /// Frame cache from `plasticine bake` (e.g. out/penguin/bake.plcache).
    #[arg(long)]
    baked: Option<PathBuf>,
    /// Output folder for `frame_NNNNN.png` (or `frame_NNNNN_left/right.png` with --stereo pair).
    #[arg(long)]
    out: PathBuf,
    /// How the two eyes are laid out.
    #[arg(long, value_enum, default_value = "side-by-side")]
    stereo: crate::app::HeadlessStereo,
    /// Image size `WxH` in pixels (each eye's image with --stereo pair).
    #[arg(long, value_parser = parse_size, default_value = "960x540")]
    size: (u32, u32),
    /// Orbit the viewpoint around the character at this many degrees per second.
    #[arg(long, default_value_t = 0.0)]
    orbit: f32,
    /// Render every Nth frame.
    #[arg(long, default_value_t = 1)]
    every: usize,
    /// Stop after this many images.
    #[arg(long)]
    frames: Option<usize>,
    /// Colour the skin by a heat map instead of its paint: fat thickness,
    /// stretch, curvature, speed, or contact with the muscles and the other
    /// skins (the legend is printed, and drawn with its colours in the
    /// image).
    #[arg(long, value_enum, default_value = "paint")]
    map: MapArg,
    /// The same as `--map fat`.
    #[arg(long, conflicts_with = "map")]
    fat_map: bool,
    /// Draw the skin's grid.
    #[arg(long)]
    wireframe: bool,
    /// Draw each skin as the smooth surface through its points, refined this
    /// many times per grid edge: 1 draws the grid's own facets; by default
    /// coarse skins are refined until about 48 points go around.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=8))]
    subdivide: Option<u8>,
    /// Draw the connective-tissue bands.
    #[arg(long)]
    bands: bool,
    /// The layers to draw, comma-separated, of skin, muscles, skeleton,
    /// bands, fat, floor (--muscles says how muscles are drawn, --bands
    /// adds the bands; fat is the fat layer's inner face, seen through).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "skin,muscles,skeleton,floor"
    )]
    layers: Vec<LayerArg>,
    /// X-ray: draw the skin see-through, so the layers under it show.
    #[arg(long)]
    xray: bool,
    /// Also write `contact_sheet.png`: every rendered frame shrunk and tiled
    /// into one image, to see a bake at a glance.
    #[arg(long)]
    contact_sheet: bool,
    /// How to draw muscles.
    #[arg(long, value_enum, default_value = "translucent")]
    muscles: MusclesArg,
    /// The second character of a `bake --with` (.ron), drawn with the
    /// first from its own cache.
    #[arg(long, value_name = "OTHER", requires = "baked")]
    with: Option<PathBuf>,
    /// The second character's cache [default: with/bake.plcache beside
    /// the --baked cache, where `bake --with` writes it].
    #[arg(long, value_name = "CACHE", requires = "with")]
    with_baked: Option<PathBuf>,
}

impl RenderArgs {
    pub fn run(self) -> Result<()> {
        let Self {
            character,
            baked,
            out,
            stereo,
            size,
            orbit,
            every,
            frames,
            map,
            fat_map,
            wireframe,
            subdivide,
            bands,
            layers,
            xray,
            contact_sheet,
            muscles,
            with,
            with_baked,
        } = self;

        use crate::app::{HeadlessOptions, render_character};
        use crate::render::{MuscleStyle, SkinMap};
        let c = load_character(&character)?;
        let mut opts = HeadlessOptions {
            size,
            stereo,
            orbit_degrees_per_second: orbit,
            every,
            max_frames: frames,
            contact_sheet,
            ..HeadlessOptions::default()
        };
        if let Some(other) = &with {
            let cache = match (with_baked, &baked) {
                (Some(cache), _) => cache,
                (None, Some(baked)) => baked
                    .parent()
                    .unwrap_or(std::path::Path::new("."))
                    .join(crate::bake::WITH_DIR)
                    .join(crate::bake::CACHE_FILE),
                (None, None) => anyhow::bail!("--with draws a second bake: give --baked too"),
            };
            opts.company.push((load_character(other)?, cache));
        }
        opts.style.map = match map {
            _ if fat_map => SkinMap::Fat,
            MapArg::Paint => SkinMap::Paint,
            MapArg::Fat => SkinMap::Fat,
            MapArg::Stretch => SkinMap::Stretch,
            MapArg::Curvature => SkinMap::Curvature,
            MapArg::Speed => SkinMap::Speed,
            MapArg::Contact => SkinMap::Contact,
        };
        if opts.style.map != SkinMap::Paint {
            println!("Colours: {}", opts.style.map.legend(opts.style.fat_map_max));
        }
        opts.style.wireframe = wireframe;
        opts.style.subdivide = subdivide.map_or(0, usize::from);
        let shown = |l: LayerArg| layers.contains(&l);
        opts.style.skin = shown(LayerArg::Skin);
        opts.style.skeleton = shown(LayerArg::Skeleton);
        opts.style.floor = shown(LayerArg::Floor);
        opts.style.bands = bands || shown(LayerArg::Bands);
        opts.style.fat = shown(LayerArg::Fat);
        opts.style.xray = xray;
        opts.style.muscles = match muscles {
            _ if !shown(LayerArg::Muscles) => MuscleStyle::Hidden,
            MusclesArg::Opaque => MuscleStyle::Opaque,
            MusclesArg::Translucent => MuscleStyle::Translucent,
            MusclesArg::Hidden => MuscleStyle::Hidden,
        };
        let bar = ProgressBar::new(0).with_style(
            ProgressStyle::with_template("rendering {bar:40} {pos}/{len} images, eta {eta}")
                .expect("valid template"),
        );
        let s = render_character(c, baked.as_deref(), &out, &opts, |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })?;
        bar.finish_and_clear();
        println!(
            "Rendered {} frames of {} on {} ({:.2} ms CPU per frame) into {}/",
            s.frames,
            s.source,
            s.adapter,
            s.mean_cpu_ms,
            out.display()
        );
        if let (Some(first), Some(last)) = (s.images.first(), s.images.last()) {
            println!("  first: {}\n  last:  {}", first.display(), last.display());
        }
        if let Some(sheet) = &s.contact_sheet {
            println!("  contact sheet: {}", sheet.display());
        }

        Ok(())
    }
}
