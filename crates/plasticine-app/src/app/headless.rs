//! The headless front end: renders a character (its bake, a live
//! simulation of its key postures, or its still pose) offscreen to PNG files,
//! from a fixed or orbiting viewpoint, in any desk stereo layout or as
//! separate left/right images.

use crate::bake::BakeError;
use crate::character::Character;
use crate::gpu::GpuContext;
use crate::io::{CacheReader, IoError};
use crate::render::{
    Decorations, EyeCamera, OffscreenTarget, RenderError, SceneRenderer, SceneStyle, StereoMode,
};
use crate::skin::{SimError, Simulation, SkeletonDriver, SolverSettings};
use crate::snapshot::{SceneSnapshot, SkinSurface};
use crate::view::{Screen, off_axis};
use glam::{Quat, Vec3};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How the two eyes end up in files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum HeadlessStereo {
    /// One image per frame, left eye on the left half.
    #[default]
    SideBySide,
    /// One image per frame, left eye on top.
    TopBottom,
    /// One red/cyan image per frame.
    Anaglyph,
    /// Two images per frame: `frame_NNNNN_left.png` and `frame_NNNNN_right.png`.
    Pair,
    /// One eye only.
    Mono,
}

impl HeadlessStereo {
    fn mode(self) -> StereoMode {
        match self {
            HeadlessStereo::SideBySide => StereoMode::SideBySide,
            HeadlessStereo::TopBottom => StereoMode::TopBottom,
            // Pair draws both eyes; the compose result is not used.
            HeadlessStereo::Anaglyph | HeadlessStereo::Pair => StereoMode::Anaglyph,
            HeadlessStereo::Mono => StereoMode::Mono,
        }
    }
}

/// What `plasticine render` was asked to do.
#[derive(Clone, Debug)]
pub struct HeadlessOptions {
    /// Image size in pixels (each eye's image for `Pair`).
    pub size: (u32, u32),
    /// How the two eyes end up in files.
    pub stereo: HeadlessStereo,
    /// Orbit speed of the viewpoint around the character (degrees per second
    /// of animation time); 0 keeps it fixed.
    pub orbit_degrees_per_second: f32,
    /// Render every Nth frame.
    pub every: usize,
    /// Stop after this many images.
    pub max_frames: Option<usize>,
    /// Frames per second when simulating live (no cache).
    pub fps: f32,
    /// Seconds to simulate live (default: the key postures' span).
    pub duration: Option<f64>,
    /// What to draw (skin, wireframe, fat map, muscles, skeleton...).
    pub style: SceneStyle,
    /// Interpupillary distance, metres.
    pub ipd: f32,
    /// The skin solver's settings when simulating live.
    pub settings: SolverSettings,
    /// Also write `contact_sheet.png`: every rendered frame shrunk and
    /// tiled into one image (the left eye's with `Pair`).
    pub contact_sheet: bool,
    /// Other characters drawn with the first, each from its own bake (the
    /// second character of `bake --with`): its file and its cache.
    pub company: Vec<(Character, PathBuf)>,
}

impl Default for HeadlessOptions {
    fn default() -> Self {
        Self {
            size: (960, 540),
            stereo: HeadlessStereo::SideBySide,
            orbit_degrees_per_second: 0.0,
            every: 1,
            max_frames: None,
            fps: 30.0,
            duration: None,
            style: SceneStyle::default(),
            ipd: 0.064,
            settings: SolverSettings::default(),
            contact_sheet: false,
            company: Vec::new(),
        }
    }
}

/// Why a headless render failed.
#[derive(Debug, thiserror::Error)]
pub enum HeadlessError {
    /// The GPU or the renderer failed.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// Reading the bake or writing the images failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The character is invalid, or the live simulation failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A bake failed; the inner error says why.
    #[error(transparent)]
    Bake(#[from] BakeError),
    /// An option is out of range, or there is nothing to render; the text says which.
    #[error("{0}")]
    Options(String),
    /// A skin cannot be resampled to the resolution asked for.
    #[error(transparent)]
    Resample(#[from] crate::character::ResampleError),
    /// The bake's cache does not belong to this character.
    #[error(
        "the cache {cache} does not belong to this character: {detail}. Bake it again with `plasticine bake`"
    )]
    Mismatch {
        /// The cache file.
        cache: PathBuf,
        /// What differs between the cache and the character.
        detail: String,
    },
}

/// What a headless render produced.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HeadlessSummary {
    /// The PNG files written, in frame order.
    pub images: Vec<PathBuf>,
    /// How many frames were rendered (each writes two images with `HeadlessStereo::Pair`).
    pub frames: usize,
    /// The GPU adapter that rendered, as `GpuContext::summary` describes it.
    pub adapter: String,
    /// Render-thread CPU per frame (geometry, upload, encoding), mean.
    pub mean_cpu_ms: f64,
    /// Where the frames came from, as a phrase for the user: the bake, the key postures
    /// simulated live, or the still pose.
    pub source: String,
    /// The contact sheet written, when asked for.
    pub contact_sheet: Option<PathBuf>,
}

/// A viewpoint circling the character at a distance that frames it, with a
/// virtual screen through the character's centre: the fishtank geometry of
/// LEMAN §5.1 with the screen placed where the character stands, so the
/// character appears at screen depth and the eyes' frusta are off-axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrbitRig {
    /// The point the viewpoint circles and looks at, centre of the virtual screen (world space).
    pub target: Vec3,
    /// Height of the virtual screen (world units), a little more than the character.
    pub screen_height: f32,
    /// Distance from the target to the eyes (world units).
    pub distance: f32,
    /// Eye height above the target, as a fraction of the distance.
    pub elevation: f32,
}

impl OrbitRig {
    /// Frames everything in `snapshot` (skins, else joints) with a 40° vertical view.
    pub fn framing(snapshot: &SceneSnapshot) -> Self {
        Self::framing_with(snapshot, &[])
    }

    /// As [`framing`](Self::framing), also taking in `extra` points (where
    /// a bake's skins end up: a dropped character falls out of its first
    /// frame's view).
    pub fn framing_with(snapshot: &SceneSnapshot, extra: &[Vec3]) -> Self {
        let mut lo = Vec3::splat(f32::INFINITY);
        let mut hi = Vec3::splat(f32::NEG_INFINITY);
        let points = snapshot.flesh.as_ref().and_then(|f| f.mesh_points());
        let mesh = points.as_deref();
        for p in snapshot
            .skins
            .iter()
            .flat_map(|s| s.positions.iter())
            .chain(mesh.into_iter().flatten())
            .chain(extra)
        {
            lo = lo.min(*p);
            hi = hi.max(*p);
        }
        if !lo.is_finite() {
            let body = crate::kinematics::PosedBody::new(&snapshot.character, &snapshot.posture);
            for j in &body.joints {
                let p: Vec3 = j.translation.into();
                lo = lo.min(p - Vec3::splat(0.1));
                hi = hi.max(p + Vec3::splat(0.1));
            }
        }
        if !lo.is_finite() {
            lo = Vec3::splat(-0.5);
            hi = Vec3::splat(0.5);
        }
        let size = (hi - lo).max(Vec3::splat(0.05));
        let screen_height = 1.6 * size.y.max(size.x).max(size.z);
        let fov = 40f32.to_radians();
        Self {
            target: 0.5 * (lo + hi),
            screen_height,
            distance: 0.5 * screen_height / (0.5 * fov).tan(),
            elevation: 0.25,
        }
    }

    /// Left and right eye cameras at `azimuth` (radians about +y, 0 = looking
    /// down −z) for an image aspect ratio; `ipd` 0 gives a mono camera twice.
    pub fn eyes(&self, azimuth: f32, aspect: f32, ipd: f32) -> [EyeCamera; 2] {
        let rot = Quat::from_rotation_y(azimuth);
        let back = rot * Vec3::new(0.0, self.elevation, 1.0).normalize();
        let head = self.target + back * self.distance;
        let normal = back;
        let screen = Screen::centred(
            self.target,
            self.screen_height * aspect,
            self.screen_height,
            normal,
            Vec3::Y,
        );
        let (right, _, _) = screen.basis();
        let near = 0.05 * self.distance;
        let far = 20.0 * self.distance;
        [-0.5, 0.5].map(|side| {
            let eye = head + right * (side * ipd);
            let v = off_axis(&screen, eye, near, far);
            EyeCamera {
                view_proj: v.view_projection(),
                position: v.eye,
            }
        })
    }
}

/// Where the frames come from.
enum Source {
    Baked {
        reader: Box<CacheReader>,
        driver: Option<Box<SkeletonDriver>>,
        scratch: Vec<Vec<Vec3>>,
        /// The frame's embedded meshes and muscle offsets (FEM flesh).
        meshes: Vec<Vec<Vec3>>,
        muscles: Vec<glam::Affine3A>,
    },
    Live {
        sim: Box<Simulation>,
        start: f64,
    },
    Still,
}

/// Renders `character` to PNG files in `out_dir`: the frames of `baked` (a
/// cache from `plasticine bake`), else its key postures simulated live, else
/// its still pose (orbiting if asked). `progress(done, total)` per image.
pub fn render_character(
    character: Character,
    baked: Option<&Path>,
    out_dir: &Path,
    opts: &HeadlessOptions,
    mut progress: impl FnMut(usize, usize),
) -> Result<HeadlessSummary, HeadlessError> {
    check_options(opts)?;
    character.validate().map_err(SimError::from)?;
    // A bake at a raised resolution (`bake --resolution`, LEMAN §6.5) plays
    // on the character resampled as the bake resampled it.
    let mut character = character;
    if let Some(path) = baked {
        resample_as_baked(&mut character, path)?;
    }
    let character = Arc::new(character);
    let posture = character.skeleton.rest_posture();
    let Frames {
        mut source,
        fps,
        total,
        what,
    } = open_frames(&character, baked, opts)?;
    let images_total = total
        .div_ceil(opts.every)
        .min(opts.max_frames.unwrap_or(usize::MAX));
    if images_total == 0 {
        return Err(HeadlessError::Options(
            "nothing to render: the cache is empty".into(),
        ));
    }

    std::fs::create_dir_all(out_dir).map_err(|source| IoError::Os {
        path: out_dir.to_path_buf(),
        action: "create the output folder",
        source,
    })?;
    let ctx = GpuContext::headless().map_err(RenderError::from)?;
    let mut renderer = SceneRenderer::new(&ctx, OffscreenTarget::FORMAT)?;
    renderer.style = opts.style;
    let mode = opts.stereo.mode();
    let eye_size = match opts.stereo {
        HeadlessStereo::Pair => opts.size,
        _ => mode.eye_size(opts.size),
    };
    let target = OffscreenTarget::new(&ctx, opts.size);
    let aspect = eye_size.0 as f32 / eye_size.1 as f32;
    let ipd = if opts.stereo == HeadlessStereo::Mono {
        0.0
    } else {
        opts.ipd
    };

    let mut snapshot = SceneSnapshot::of(character.clone(), posture, 0);
    // The sheet tiles the files' images: composed, or the left eye's.
    let frame_size = if opts.stereo == HeadlessStereo::Pair {
        eye_size
    } else {
        opts.size
    };
    let mut sheet = opts
        .contact_sheet
        .then(|| crate::render::ContactSheet::new(images_total, frame_size));
    let mut rig: Option<OrbitRig> = None;
    // A bake whose skeleton moved on its own (a drop) is framed over its
    // first and last frames.
    let last_skins: Vec<Vec3> = match &mut source {
        Source::Baked { reader, .. } if reader.flesh().root && reader.frame_count() > 1 => {
            let mut out = Vec::new();
            reader.read_frame(reader.frame_count() - 1, &mut out)?;
            out.into_iter().flatten().collect()
        }
        _ => Vec::new(),
    };
    let mut last_skins = last_skins;
    let mut company = open_company(opts, total, &mut last_skins)?;
    let mut images = Vec::new();
    let mut cpu = Duration::ZERO;
    let mut rendered = 0;
    // A heat map's legend is drawn in the image, its colour bar under it.
    let legend: Vec<String> = match renderer.style.map {
        crate::render::SkinMap::Paint => Vec::new(),
        map => vec![map.legend(renderer.style.fat_map_max)],
    };
    for f in 0..total {
        let t = advance(&mut source, &mut snapshot, f, fps)?;
        if f % opts.every != 0 {
            renderer.geometry.observe(&snapshot, &renderer.style);
            continue;
        }
        // Frame the first picture and keep the framing, so motion reads.
        let rig = *rig.get_or_insert_with(|| OrbitRig::framing_with(&snapshot, &last_skins));
        let azimuth = (opts.orbit_degrees_per_second * (f as f32 / fps)).to_radians();
        let cams = rig.eyes(azimuth, aspect, ipd);
        let t0 = Instant::now();
        let composed = opts.stereo != HeadlessStereo::Pair;
        let decorations = Decorations {
            skin_contact: super::view_renderer::skin_contact_map(renderer.style.map, &snapshot),
            ..Decorations::default()
        };
        for (source, other) in &mut company {
            advance(source, other, f, fps)?;
        }
        let others: Vec<&SceneSnapshot> = company.iter().map(|(_, s)| s).collect();
        renderer.draw_among(
            (&snapshot, None, &others),
            &decorations,
            &cams,
            mode,
            eye_size,
            composed.then_some((&target.view, opts.size)),
            &legend,
        );
        cpu += t0.elapsed();
        if composed {
            let path = out_dir.join(format!("frame_{f:05}.png"));
            let image = target.read(&ctx)?;
            image.save_png(&path)?;
            if let Some(sheet) = &mut sheet {
                sheet.add(&image);
            }
            images.push(path);
        } else {
            for (eye, name) in [(0, "left"), (1, "right")] {
                let path = out_dir.join(format!("frame_{f:05}_{name}.png"));
                let image = renderer.gpu.read_eye(eye)?;
                image.save_png(&path)?;
                if let Some(sheet) = sheet.as_mut().filter(|_| eye == 0) {
                    sheet.add(&image);
                }
                images.push(path);
            }
        }
        let _ = t;
        rendered += 1;
        progress(rendered, images_total);
        if rendered >= images_total {
            break;
        }
    }
    let contact_sheet = match sheet.as_ref().and_then(|s| s.image()) {
        Some(image) => {
            let path = out_dir.join("contact_sheet.png");
            image.save_png(&path)?;
            Some(path)
        }
        None => None,
    };
    Ok(HeadlessSummary {
        contact_sheet,
        images,
        frames: rendered,
        adapter: ctx.summary().to_string(),
        mean_cpu_ms: cpu.as_secs_f64() * 1e3 / rendered.max(1) as f64,
        source: what,
    })
}

/// The other characters of `opts.company`, each with its frames (its
/// bake, which must hold at least `total` frames) and a snapshot to play
/// them into; their first and last frames' skins go into `framed`, so the
/// picture holds them too.
fn open_company(
    opts: &HeadlessOptions,
    total: usize,
    framed: &mut Vec<Vec3>,
) -> Result<Vec<(Source, SceneSnapshot)>, HeadlessError> {
    let mut company = Vec::new();
    for (other, path) in &opts.company {
        other.validate().map_err(SimError::from)?;
        let mut other = other.clone();
        resample_as_baked(&mut other, path)?;
        let other = Arc::new(other);
        let mut frames = open_frames(&other, Some(path), opts)?;
        if frames.total < total {
            return Err(HeadlessError::Options(format!(
                "{} holds {} frames, fewer than the {total} to render",
                path.display(),
                frames.total
            )));
        }
        if let Source::Baked { reader, .. } = &mut frames.source {
            for f in [0, frames.total - 1] {
                let mut out = Vec::new();
                reader.read_frame(f, &mut out)?;
                framed.extend(out.into_iter().flatten());
            }
        }
        let posture = other.skeleton.rest_posture();
        company.push((frames.source, SceneSnapshot::of(other, posture, 0)));
    }
    Ok(company)
}

/// Where the frames come from, at what rate, how many, and a phrase for the user.
struct Frames {
    source: Source,
    fps: f32,
    total: usize,
    what: String,
}

/// Refuses an image size, frame step, frame rate or interpupillary distance
/// out of range.
fn check_options(opts: &HeadlessOptions) -> Result<(), HeadlessError> {
    let (w, h) = opts.size;
    if !(16..=8192).contains(&w) || !(16..=8192).contains(&h) {
        return Err(HeadlessError::Options(format!(
            "image size {w}x{h}: each side must lie in 16..=8192 pixels"
        )));
    }
    if opts.every == 0 {
        return Err(HeadlessError::Options("--every must be at least 1".into()));
    }
    if !(opts.fps.is_finite() && opts.fps > 0.0 && opts.fps <= 1000.0) {
        return Err(HeadlessError::Options(format!(
            "fps must lie in (0, 1000], got {}",
            opts.fps
        )));
    }
    if !(opts.ipd.is_finite() && (0.0..=0.1).contains(&opts.ipd)) {
        return Err(HeadlessError::Options(format!(
            "ipd must lie in [0, 0.1] m, got {}",
            opts.ipd
        )));
    }
    Ok(())
}

/// Resamples each skin of `character` to the resolution the cache at `path`
/// holds it at, when the cache has as many skins.
fn resample_as_baked(character: &mut Character, path: &Path) -> Result<(), HeadlessError> {
    let reader = CacheReader::open(path)?;
    let skins = reader.skins();
    if skins.len() == character.skins.len() {
        for (skin, cached) in character.skins.iter_mut().zip(skins) {
            if (skin.m, skin.n) != (cached.m, cached.n) {
                *skin = crate::character::resample(skin, cached.m, cached.n)?;
            }
        }
    }
    Ok(())
}

/// Opens the frames to render: the bake at `baked` (checked against the
/// character), else the key postures simulated live, else the still pose.
fn open_frames(
    character: &Arc<Character>,
    baked: Option<&Path>,
    opts: &HeadlessOptions,
) -> Result<Frames, HeadlessError> {
    let keys = (!character.key_postures.is_empty())
        .then(|| SkeletonDriver::Keys(character.key_postures.clone()));
    Ok(match baked {
        Some(path) => {
            let reader = CacheReader::open(path)?;
            check_cache_matches(&reader, character, path)?;
            let total = reader.frame_count();
            let fps = reader.fps();
            Frames {
                source: Source::Baked {
                    reader: Box::new(reader),
                    driver: keys.map(Box::new),
                    scratch: Vec::new(),
                    meshes: Vec::new(),
                    muscles: Vec::new(),
                },
                fps,
                total,
                what: format!("the bake {}", path.display()),
            }
        }
        None => match keys {
            Some(driver) => {
                let start = character.key_postures[0].time as f64;
                let duration = opts.duration.unwrap_or(character.motion_duration() as f64);
                if !(duration.is_finite() && duration > 0.0) {
                    return Err(HeadlessError::Options(format!(
                        "duration must be positive, got {duration}"
                    )));
                }
                let mut sim =
                    Simulation::new((**character).clone(), driver, opts.settings.clone())?;
                if start != 0.0 {
                    sim.advance_to(start, None)?;
                }
                let total = (duration * opts.fps as f64).round() as usize + 1;
                Frames {
                    source: Source::Live {
                        sim: Box::new(sim),
                        start,
                    },
                    fps: opts.fps,
                    total,
                    what: "its key postures, simulated live".to_string(),
                }
            }
            None => {
                let total = if opts.orbit_degrees_per_second != 0.0 {
                    (360.0 / opts.orbit_degrees_per_second.abs() * opts.fps).ceil() as usize
                } else {
                    1
                };
                Frames {
                    source: Source::Still,
                    fps: opts.fps,
                    total,
                    what: "its still pose".to_string(),
                }
            }
        },
    })
}

/// Brings `snapshot` to frame `f`; returns its time.
fn advance(
    source: &mut Source,
    snapshot: &mut SceneSnapshot,
    f: usize,
    fps: f32,
) -> Result<f64, HeadlessError> {
    match source {
        Source::Baked {
            reader,
            driver,
            scratch,
            meshes,
            muscles,
        } => {
            let t = reader.read_frame_with_flesh(f, scratch, meshes, muscles)?;
            snapshot.flesh =
                crate::app::playback::baked_flesh_pose(&snapshot.character, t, meshes, muscles)
                    .map(Arc::new);
            for (surface, positions) in snapshot.skins.iter_mut().zip(scratch.iter()) {
                surface.positions.clone_from(positions);
            }
            if let Some(d) = driver {
                snapshot.posture = d.posture_at(t);
            }
            // A responding skeleton's root, where the bake had it.
            snapshot.posture = crate::kinematics::posture_with_stored_root(
                &snapshot.character,
                &snapshot.posture,
                reader.root(),
            );
            snapshot.sim_time = t;
            snapshot.sequence += 1;
            Ok(t)
        }
        Source::Live { sim, start } => {
            let t = *start + f as f64 / fps as f64;
            if f > 0 {
                sim.advance_to(t, None)?;
            }
            snapshot.skins = (0..sim.character.skins.len())
                .map(|s| SkinSurface::of(&sim.character, s))
                .collect();
            snapshot.posture = sim.posture_at(t);
            snapshot.flesh = sim.flesh_pose().map(Arc::new);
            snapshot.sim_time = t;
            snapshot.sequence += 1;
            Ok(t)
        }
        Source::Still => Ok(f as f64 / fps as f64),
    }
}

fn check_cache_matches(
    reader: &CacheReader,
    character: &Character,
    path: &Path,
) -> Result<(), HeadlessError> {
    let mismatch = |detail: String| HeadlessError::Mismatch {
        cache: path.to_path_buf(),
        detail,
    };
    reader
        .flesh()
        .check_against(character)
        .map_err(|e| mismatch(e.to_string()))?;
    let skins = reader.skins();
    if skins.len() != character.skins.len() {
        return Err(mismatch(format!(
            "it has {} skins, the character {}",
            skins.len(),
            character.skins.len()
        )));
    }
    for (k, (a, b)) in skins.iter().zip(&character.skins).enumerate() {
        if (a.m, a.n) != (b.m, b.n) {
            return Err(mismatch(format!(
                "skin {k} is {}x{} in the cache and {}x{} in the character (bakes at a raised \
                 resolution need the resampled character: `plasticine resample`)",
                a.m, a.n, b.m, b.n
            )));
        }
    }
    Ok(())
}
