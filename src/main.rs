//! `plasticine`: the command line: headless jobs (bake, bench, sample
//! characters, file checks, render), the desk front end and the headset
//! front end (`plasticine xr`).

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use plasticine::bake::{BakeOptions, bake};
use plasticine::io::{load_character, save_character};
use plasticine::skin::{IntegratorKind, SolverSettings};
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(
    name = "plasticine",
    version,
    about = "Build and animate soft characters: a skeleton, muscles, fat and an elastic skin simulated live (LEMAN).",
    long_about = "Plasticine builds layered soft characters the way clay animators wrap plasticine around an \
armature: joints with sphere and superellipse muscles, a fat layer, connective tissue, and an elastic skin \
whose motion is simulated (squash and stretch, follow-through).\n\nStart with `plasticine bake assets/penguin.ron \
--out out/penguin`, then look at `plasticine bake --help`."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Play a character's key postures with the skin simulated, and store every frame in a cache.
    Bake {
        /// Character file (.ron), e.g. assets/penguin.ron.
        character: PathBuf,
        /// Output folder: bake.plcache (frames), summary.json, and obj/ with --obj.
        #[arg(long)]
        out: PathBuf,
        /// Resample every skin to MxN points (around x bottom-to-top) before baking, e.g. 64x64.
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
    },
    /// Measure speed; prints one JSON object per measurement (machine-readable).
    Bench {
        /// Shorter runs (for smoke tests).
        #[arg(long)]
        quick: bool,
        /// Only one group of figures: the skin (`skin`: the penguin's real-time
        /// factor and every sample's smoothness), the lattice FEM (`fem`), or the
        /// tools and playback (`interactive`: IK drag, picking, baked playback).
        #[arg(long, value_parser = ["fem", "interactive", "skin"])]
        only: Option<String>,
    },
    /// Build one of the sample characters (penguin, wombat, torso) and save it.
    Sample {
        name: String,
        #[arg(long)]
        out: PathBuf,
        /// Skin resolution MxN.
        #[arg(long, value_parser = parse_resolution, default_value = "16x16")]
        resolution: (usize, usize),
        /// The flesh under the skin: kinematic muscles, or FEM flesh (Capell 2002) with
        /// its default settings, the muscles riding on a simulated lattice; fem-detail
        /// adds adaptive detail (§4.7) where the flesh is distorted.
        #[arg(long, value_parser = ["kinematic", "fem", "fem-detail"], default_value = "kinematic")]
        flesh: String,
    },
    /// Check a character file and describe it.
    Info { character: PathBuf },
    /// Replay a recorded editing session (a RON list of commands) and save the result.
    Replay {
        /// Session file (.ron): (format: "plasticine-session", version: 1, commands: [...]).
        session: PathBuf,
        /// Character to start from (default: the one recorded beside the session, else an
        /// empty character with one root joint).
        #[arg(long)]
        start: Option<PathBuf>,
        /// Where to save the resulting character.
        #[arg(long)]
        out: PathBuf,
    },
    /// Calibrate a desk set-up: fit the screen to corners measured with the tracked hand, or check a calibration.
    #[command(
        long_about = "Calibrate a desk stereo set-up (LEMAN 5.1): where the screen's picture is in tracker space.\n\n\
With --samples, reads a recorded input script of the tracked right hand (raw tracker coordinates, metres) holding \
one trigger press at each corner of the screen's picture, in the order lower-left, lower-right, upper-right, \
upper-left as seen from your seat; 4 presses, or several rounds of 4 that are averaged per corner. Fits the best \
rectangle, prints its size and how far each measurement is from it, and writes the calibration with that screen \
(the other fields come from --base, or the 24\" monitor of calibration/default-monitor.ron). Measurements that do \
not form a rectangle facing the base's fixed head are refused with what to re-measure, and nothing is written.\n\n\
With --live, measures the corners now with an OpenXR tracker (a headless session, e.g. Monado): \
hold the right controller's tip at each corner and pull the trigger, as prompted; left A (or X) forgets the last \
corner. The calibration is then in the OpenXR tracker's space (STAGE, else LOCAL), the one `plasticine desk` uses \
with --tracker openxr or auto. Without --base, the 24\" monitor's fixed head and world registration are moved \
with the measured screen (the head 0.6 m in front of its centre, the world placed as on that monitor), and the \
fixed head is put where the tracked head was at the start. Ends after --rounds rounds of 4 presses, or fails after \
--timeout seconds.\n\n\
With --check, loads and validates a calibration file and describes it.\n\n\
Examples:\n  plasticine calibrate --samples corners.ron --ipd 0.062 --out calibration/my-desk.ron\n  \
plasticine calibrate --live --rounds 2 --out calibration/my-desk.ron\n  \
plasticine calibrate --check calibration/my-desk.ron"
    )]
    #[command(group = clap::ArgGroup::new("measure").args(["samples", "live"]))]
    Calibrate {
        /// Input script (.ron) of the tracked right hand: a trigger press at each corner, in order, 4 presses or rounds of 4.
        #[arg(
            long,
            value_name = "INPUT_SCRIPT",
            required_unless_present_any = ["check", "live"],
            requires = "out",
            conflicts_with_all = ["check", "live"]
        )]
        samples: Option<PathBuf>,
        /// Measure the corners now with the right controller of an OpenXR tracker.
        #[arg(long, requires = "out", conflicts_with = "check")]
        live: bool,
        /// With --live: rounds of 4 corners to measure (averaged per corner).
        #[arg(long, value_name = "K", default_value_t = 1, requires = "live", value_parser = clap::value_parser!(u32).range(1..=20))]
        rounds: u32,
        /// With --live: give up after this many seconds.
        #[arg(
            long,
            value_name = "SECONDS",
            default_value_t = 120.0,
            requires = "live"
        )]
        timeout: f64,
        /// Calibration whose other fields (eyes, fixed head, registration, clipping) are kept [default: the 24" monitor].
        #[arg(long, value_name = "CALIBRATION", requires = "measure")]
        base: Option<PathBuf>,
        /// Interpupillary distance in metres, e.g. 0.063: eyes at -IPD/2 and +IPD/2 along the head's x axis.
        #[arg(long, value_name = "METRES", requires = "measure")]
        ipd: Option<f32>,
        /// Where to write the calibration (.ron).
        #[arg(long, value_name = "FILE", conflicts_with = "check")]
        out: Option<PathBuf>,
        /// Check a calibration file and describe it.
        #[arg(long, value_name = "FILE")]
        check: Option<PathBuf>,
    },
    /// Check the OpenXR tracker: open a headless session (e.g. with Monado), say which runtime,
    /// headset, controllers and tracking space it has, and print the head and hands for a while.
    Tracker {
        /// How long to print poses.
        #[arg(long, default_value_t = 3.0)]
        seconds: f64,
        /// Poses printed per second.
        #[arg(long, default_value_t = 4.0)]
        rate: f64,
    },
    /// Change the resolution of every skin (bilinear resampling of every per-point field).
    Resample {
        character: PathBuf,
        #[arg(long, value_parser = parse_resolution)]
        resolution: (usize, usize),
        #[arg(long)]
        out: PathBuf,
    },
    /// Open the desk front end: a window with head-tracked ("fishtank") stereo on a calibrated
    /// monitor, the left hand flying (keys W/S A/D Q/E, arrows, or a gamepad), the right hand a 3D
    /// cursor (mouse, wheel for depth, left button = trigger). Tab, 1-7 or the tool panel (P shows or
    /// hides it) pick tools, L locks the current part, Ctrl+Z/Ctrl+Y
    /// undo/redo, Ctrl+S saves, M changes the stereo layout, Esc quits.
    Desk {
        /// Character file to open (default: a new character with one joint).
        character: Option<PathBuf>,
        /// Calibration file (see calibration/README.md); default: an ordinary 24" monitor.
        #[arg(long)]
        calibration: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "anaglyph")]
        stereo: DeskStereo,
        /// Window size WxH in pixels.
        #[arg(long, value_parser = parse_size, default_value = "1280x720")]
        size: (u32, u32),
        /// Quit after this many frames.
        #[arg(long)]
        frames: Option<u64>,
        /// Save the last frame as a PNG (with --frames).
        #[arg(long)]
        screenshot: Option<PathBuf>,
        /// Slow each simulation step by this many milliseconds (the head and hands stay live).
        #[arg(long, default_value_t = 0)]
        step_delay_ms: u64,
        /// Save per-frame timings (render, tracking age, snapshot age) as CSV on exit.
        #[arg(long)]
        timings: Option<PathBuf>,
        /// Open the newest autosave of this character instead (after a crash).
        #[arg(long)]
        recover: bool,
        /// Where the head and the right hand come from: auto = OpenXR when a runtime with
        /// headless sessions is there (e.g. Monado), else the fixed head and the mouse.
        /// With OpenXR, use a calibration measured with it (`plasticine calibrate --live`).
        #[arg(long, value_enum, default_value = "auto")]
        tracker: DeskTracker,
        /// Record the editing session to this file (RON), with the starting character beside
        /// it; `plasticine replay FILE --out OUT` rebuilds the character.
        #[arg(long)]
        record: Option<PathBuf>,
        /// A bake (`plasticine bake --out DIR` writes DIR/bake.plcache) to play back in the
        /// timeline's baked mode.
        #[arg(long)]
        bake: Option<PathBuf>,
    },
    /// Open the headset front end (OpenXR with Vulkan): the character in front of you at arm's
    /// length. Tool hand (right; left with --left-handed): trigger = tool, B = next tool, A = the
    /// skin tool's attach, thumbstick = the tool's parameter. Other hand: A/B = undo/redo,
    /// thumbstick = fly and turn, click = recentre. Either hand: menu = next tool, squeeze = grab the
    /// world (both hands: scale and turn it). With no OpenXR runtime it says why and opens the desk.
    #[command(
        long_about = "Open the headset front end: an OpenXR session rendering with Vulkan (the \
runtime creates the device, wgpu draws into its swapchain), the skin simulated on its own thread.\n\n\
Hands: the tool hand (right, or left with --left-handed) holds the tool: trigger = use it, B = next \
tool, A = the skin tool's attach, thumbstick up/down = the tool's parameter (liposuction radius; skin \
resolution). The other hand flies: A = undo, B = redo, thumbstick = fly along your gaze and turn, \
thumbstick click = recentre. Either hand: menu = next tool; squeeze = grab the world and move it, with \
both hands = scale and turn it.\n\n\
When the session ends (you quit from the runtime, press Ctrl+C, --frames is reached, or the runtime \
goes away) the character is saved: to --save-on-exit FILE, else (if edited) as an autosave (open it \
with --recover).\n\n\
With no OpenXR loader or runtime, or one without Vulkan rendering, it says what is missing and opens \
the desk front end instead (when there is a display; --fallback none to only fail).\n\n\
Examples:\n  plasticine xr assets/penguin.ron\n  \
plasticine xr assets/penguin.ron --left-handed --save-on-exit my-penguin.ron\n  \
plasticine xr assets/penguin.ron --frames 60 --screenshot-eyes out/eyes --resolution-scale 0.25"
    )]
    Xr {
        /// Character file to open (default: a new character with one joint).
        character: Option<PathBuf>,
        /// Ask the runtime to end the session after this many rendered frames.
        #[arg(long)]
        frames: Option<u64>,
        /// Save the last frame's swapchain image (both eyes) as left.png and right.png here.
        #[arg(long)]
        screenshot_eyes: Option<PathBuf>,
        /// Save the character to this file when the session ends, however it ends.
        #[arg(long)]
        save_on_exit: Option<PathBuf>,
        /// The left controller holds the tools and the right one flies.
        #[arg(long)]
        left_handed: bool,
        /// Swapchain size relative to the headset's recommended size (e.g. 0.5 on a slow GPU).
        #[arg(long, default_value_t = 1.0)]
        resolution_scale: f32,
        /// The tool in hand at the start.
        #[arg(long, value_enum, default_value = "select")]
        tool: ToolArg,
        /// front: the character at arm's length in front of you; tracker: world = tracking space.
        #[arg(long, value_enum, default_value = "front")]
        placement: PlacementArg,
        /// Seconds to wait for the OpenXR session to start.
        #[arg(long, default_value_t = 10.0)]
        start_timeout: f64,
        /// Save per-frame timings as CSV on exit.
        #[arg(long)]
        timings: Option<PathBuf>,
        /// Open the newest autosave of this character instead (after a crash or a lost session).
        #[arg(long)]
        recover: bool,
        /// With no headset: desk = open the desk front end (with a display), none = fail.
        #[arg(long, value_enum, default_value = "desk")]
        fallback: FallbackArg,
        /// Record the editing session to this file (RON), with the starting character beside
        /// it; `plasticine replay FILE --out OUT` rebuilds the character.
        #[arg(long)]
        record: Option<PathBuf>,
        /// A bake (`plasticine bake --out DIR` writes DIR/bake.plcache) to play back in the
        /// timeline's baked mode.
        #[arg(long)]
        bake: Option<PathBuf>,
    },
    /// Render a character to PNG images with no window: its bake (--baked), else its key
    /// postures simulated live, else its still pose; from a fixed or orbiting viewpoint.
    Render {
        /// Character file (.ron).
        character: PathBuf,
        /// Frame cache from `plasticine bake` (e.g. out/penguin/bake.plcache).
        #[arg(long)]
        baked: Option<PathBuf>,
        /// Output folder for frame_NNNNN.png (or frame_NNNNN_left/right.png with --stereo pair).
        #[arg(long)]
        out: PathBuf,
        /// How the two eyes are laid out.
        #[arg(long, value_enum, default_value = "side-by-side")]
        stereo: plasticine::app::headless::HeadlessStereo,
        /// Image size WxH in pixels (each eye's image with --stereo pair).
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
        /// Colour the skin by fat thickness.
        #[arg(long)]
        fat_map: bool,
        /// Draw the skin's grid.
        #[arg(long)]
        wireframe: bool,
        /// Draw the connective-tissue bands.
        #[arg(long)]
        bands: bool,
        /// How to draw muscles.
        #[arg(long, value_enum, default_value = "translucent")]
        muscles: MusclesArg,
    },
    /// Export a bake for other tools: glTF 2.0 (.glb: skeleton, key-posture animation, skin meshes
    /// with the simulated motion), USD (.usda: time-sampled points) or an OBJ sequence.
    #[command(
        long_about = "Export a bake for the rest of a pipeline. The format comes from --out's extension, or --format.\n\n\
FILE.glb  glTF 2.0 binary: the skeleton as a glTF skin (a node per joint, inverse bind matrices) with the \
key-posture motion as rotation channels (and the root's translation), sampled at every frame and key; each skin \
as a triangle mesh in world space. The simulated skin motion is stored as one morph target per frame (weights \
animated one-hot) for clips of at most --morph-limit frames, else as one node per frame shown in turn (scale \
animation); a small bone mesh follows the joints.\n\
FILE.usda  USD point cache: a Mesh per skin with time-sampled points, normals and extent; \
timeCodesPerSecond = the bake's fps, Y up, metres.\n\
DIR --format obj  frame_NNNNN.obj for every (or every Nth) frame.\n\n\
The cache must come from this character (`plasticine bake CHARACTER`, any --resolution): its skins and \
boundary rows are checked, and nothing is written if they do not match.\n\n\
Examples:\n  plasticine export assets/penguin.ron --baked out/penguin/bake.plcache --out penguin.glb\n  \
plasticine export assets/penguin.ron --baked out/penguin/bake.plcache --out penguin.usda\n  \
plasticine export assets/penguin.ron --baked out/penguin/bake.plcache --out out/obj --format obj --every 2"
    )]
    Export {
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
        format: Option<plasticine::io::export::ExportFormat>,
        /// Export every Nth frame of the cache.
        #[arg(long, value_name = "N", default_value_t = 1)]
        every: usize,
        /// glTF: morph targets for clips of at most N exported frames, per-frame meshes above (0: always per-frame meshes).
        #[arg(long, value_name = "N", default_value_t = plasticine::io::export::DEFAULT_MORPH_LIMIT)]
        morph_limit: usize,
    },
    /// Embed a triangle mesh (OBJ, glTF) in an automatically built FEM lattice driven by a character's skeleton.
    #[command(
        long_about = "Embed an imported triangle mesh in a control lattice built automatically around it \
(Capell et al. 2002), and save a character whose flesh is that lattice, simulated with FEM and driven by the skeleton \
of --skeleton. The mesh moves with the lattice (free-form deformation); it is what is rendered and exported.\n\n\
The skeleton, key postures and environment come from the --skeleton character; its muscles and skins are not kept \
(they were shaped for another body). The mesh should be closed, in the skeleton's units and pose (metres, rest \
posture); --scale and --translate fit one that is not. Joints outside the mesh are warned about; a bone entirely \
outside is an error.\n\n\
Examples:\n  plasticine fem-import assets/limb.obj --skeleton assets/limb_skeleton.ron --out limb.ron\n  \
plasticine fem-import body.glb --skeleton assets/penguin.ron --scale 0.01 --vertices 300 --out body.ron"
    )]
    FemImport {
        /// Mesh file: .obj, .glb, or .gltf with embedded (data:) buffers.
        mesh: PathBuf,
        /// Character file (.ron) whose skeleton, key postures and environment drive the flesh.
        #[arg(long, value_name = "CHARACTER")]
        skeleton: PathBuf,
        /// Where to save the new character (.ron).
        #[arg(long)]
        out: PathBuf,
        /// About how many lattice vertices [default: the skeleton file's FEM setting, else 200].
        #[arg(long, value_name = "N")]
        vertices: Option<usize>,
        /// Young's modulus of the flesh, Pa [default: the skeleton file's FEM setting, else 50000].
        #[arg(long, value_name = "PA")]
        young: Option<f64>,
        /// Poisson's ratio of the flesh, in [0, 0.5) [default: the skeleton file's, else 0.3].
        #[arg(long)]
        poisson: Option<f64>,
        /// Density of the flesh, kg/m³ [default: the skeleton file's, else 1000].
        #[arg(long, value_name = "KG_PER_M3")]
        density: Option<f64>,
        /// Multiply the mesh's coordinates by this (e.g. 0.01 for centimetres).
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        /// Then move the mesh by X,Y,Z metres.
        #[arg(long, value_parser = parse_vec3, default_value = "0,0,0", allow_hyphen_values = true)]
        translate: glam::Vec3,
        /// Name of the character [default: the mesh file's name].
        #[arg(long)]
        name: Option<String>,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum DeskStereo {
    /// Red/cyan glasses on any monitor.
    Anaglyph,
    /// Left eye in the left half (3D monitors and TVs).
    SideBySide,
    /// Left eye in the top half.
    TopBottom,
    /// No stereo.
    Mono,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum DeskTracker {
    /// OpenXR if it is there, else none (says which).
    Auto,
    /// OpenXR, or fail saying why not.
    Openxr,
    /// The calibration's fixed head and the mouse.
    None,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ToolArg {
    Select,
    Sphere,
    Superellipse,
    Deform,
    Ik,
    Skin,
    Liposuction,
    Weights,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum PlacementArg {
    Front,
    Tracker,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FallbackArg {
    Desk,
    None,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum MusclesArg {
    Opaque,
    Translucent,
    Hidden,
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected WxH such as 960x540, got '{s}'"))?;
    let parse = |v: &str| {
        v.trim()
            .parse::<u32>()
            .map_err(|_| format!("'{v}' is not a whole number"))
    };
    let (w, h) = (parse(w)?, parse(h)?);
    if !(16..=8192).contains(&w) || !(16..=8192).contains(&h) {
        return Err(format!("{w}x{h}: each side must lie in 16..=8192 pixels"));
    }
    Ok((w, h))
}

fn parse_vec3(s: &str) -> Result<glam::Vec3, String> {
    let parts: Vec<&str> = s.split(',').collect();
    let v: Vec<f32> = parts
        .iter()
        .filter_map(|p| p.trim().parse::<f32>().ok())
        .filter(|v| v.is_finite())
        .collect();
    if parts.len() != 3 || v.len() != 3 {
        return Err(format!("'{s}': expected three numbers X,Y,Z"));
    }
    Ok(glam::Vec3::new(v[0], v[1], v[2]))
}

fn parse_resolution(s: &str) -> Result<(usize, usize), String> {
    let (m, n) = s
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected MxN such as 32x32, got '{s}'"))?;
    let m: usize = m
        .trim()
        .parse()
        .map_err(|_| format!("'{m}' is not a whole number"))?;
    let n: usize = n
        .trim()
        .parse()
        .map_err(|_| format!("'{n}' is not a whole number"))?;
    if m < 4 || n < 4 || m.saturating_mul(n) > plasticine::character::Skin::MAX_POINTS {
        return Err(format!(
            "{m}x{n}: each side must be at least 4 and the grid at most {} points",
            plasticine::character::Skin::MAX_POINTS
        ));
    }
    Ok((m, n))
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    if let Err(e) = run(Cli::parse()) {
        eprintln!("error: {e}");
        for cause in e.chain().skip(1) {
            eprintln!("  caused by: {cause}");
        }
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Bake {
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
        } => {
            let c = load_character(&character)?;
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
                eprintln!(
                    "\ncancelling after the current frame (press Ctrl+C again to stop at once)"
                );
            })
            .context("installing the Ctrl+C handler")?;
            let opts = BakeOptions {
                resolution,
                settings: solver,
                fps,
                duration,
                obj_every: obj,
                start: if resume {
                    plasticine::bake::BakeStart::Resume
                } else if restart {
                    plasticine::bake::BakeStart::Restart
                } else {
                    plasticine::bake::BakeStart::Fresh
                },
                cancel: Some(cancel),
                ..BakeOptions::default()
            };
            let bar = ProgressBar::new(0).with_style(
                ProgressStyle::with_template(
                    "baking {bar:40} {pos}/{len} frames, {elapsed} elapsed, eta {eta}",
                )
                .expect("valid template"),
            );
            let outcome = bake(c, &opts, &out, |f, total| {
                bar.set_length(total as u64);
                bar.set_position(f as u64);
                plasticine::bake::BakeControl::Continue
            })
            .map_err(|e| {
                use plasticine::bake::BakeError;
                match e {
                    BakeError::Unfinished { .. } => anyhow::anyhow!(
                        "{e}; continue it with --resume, or discard it with --restart"
                    ),
                    BakeError::Mismatch { .. } => anyhow::anyhow!(
                        "{e}. Resume with the same character and options, or start over with --restart"
                    ),
                    e => e.into(),
                }
            })?;
            bar.finish_and_clear();
            let s = match outcome {
                plasticine::bake::BakeOutcome::Finished(s) => s,
                plasticine::bake::BakeOutcome::Cancelled(c) => {
                    // The command to continue: this one, with --resume.
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
                    let mut args: Vec<String> = std::env::args()
                        .skip(1)
                        .filter(|a| a != "--restart" && a != "--resume")
                        .map(quote)
                        .collect();
                    args.insert(0, "plasticine".into());
                    args.push("--resume".into());
                    eprintln!(
                        "bake cancelled at frame {}/{}; run `{}` to continue (checkpoint {}, frames so far in {})",
                        c.done,
                        c.frames,
                        args.join(" "),
                        c.checkpoint.display(),
                        c.partial.display()
                    );
                    std::process::exit(130);
                }
            };
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
        Command::Bench { quick, only: None } => {
            plasticine::bench::run_all(quick, &mut std::io::stdout())?
        }
        Command::Bench {
            quick,
            only: Some(group),
        } if group == "skin" => plasticine::bench::skin_figures(quick, &mut std::io::stdout())?,
        Command::Bench {
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
        Command::Bench {
            quick,
            only: Some(_),
        } => {
            for v in plasticine::bench::fem_steps_per_second(quick) {
                println!("{v}");
            }
        }
        Command::Sample {
            name,
            out,
            resolution,
            flesh,
        } => {
            let backend = match flesh.as_str() {
                "fem" => plasticine::character::Flesh::Fem(Default::default()),
                "fem-detail" => {
                    plasticine::character::Flesh::Fem(plasticine::character::FemFlesh {
                        detail: Some(Default::default()),
                        ..Default::default()
                    })
                }
                _ => plasticine::character::Flesh::Kinematic,
            };
            let c =
                plasticine::samples::build_with_flesh(&name, resolution.0, resolution.1, backend)?;
            save_character(&out, &c)?;
            println!(
                "Wrote the {name} ({} skins at {}x{}, {flesh} flesh) to {}",
                c.skins.len(),
                resolution.0,
                resolution.1,
                out.display()
            );
        }
        Command::Info { character } => {
            let c = load_character(&character)?;
            println!("{}: '{}' is valid.", character.display(), c.name);
            println!(
                "  {} joints, {} muscles, {} skins",
                c.skeleton.joints.len(),
                c.muscles.len(),
                c.skins.len()
            );
            for s in &c.skins {
                let bands = s.points.band.iter().filter(|b| b.is_some()).count();
                println!(
                    "  skin '{}': {}x{} from joint '{}' to '{}', {} bands of connective tissue, fat {:.3}..{:.3} m",
                    s.name,
                    s.m,
                    s.n,
                    c.skeleton.joints[s.bottom_joint].name,
                    c.skeleton.joints[s.top_joint].name,
                    bands,
                    s.points.fat.iter().copied().fold(f32::MAX, f32::min),
                    s.points.fat.iter().copied().fold(f32::MIN, f32::max)
                );
            }
            if let Some(f) = c.flesh.fem() {
                println!(
                    "  FEM flesh: about {} lattice vertices, E {} Pa, ν {}, ρ {} kg/m³, {} painted weight strokes",
                    f.target_vertices,
                    f.young,
                    f.poisson,
                    f.density,
                    f.weight_strokes.len()
                );
                if let Some(d) = &f.detail {
                    println!(
                        "  adaptive detail: {} level(s), refined above {} strain, coarsened below {}",
                        d.levels, d.refine_strain, d.coarsen_strain
                    );
                }
                for p in &f.part_stiffness {
                    println!("  part '{}': E x{}", p.joint, p.scale);
                }
                if let Some(m) = &f.embedded_mesh {
                    println!(
                        "  embedded mesh '{}': {} vertices, {} triangles",
                        m.source,
                        m.positions.len(),
                        m.triangles.len()
                    );
                }
            }
            if c.key_postures.is_empty() {
                println!("  no key postures");
            } else {
                println!(
                    "  {} key postures over {:.2} s",
                    c.key_postures.len(),
                    c.motion_duration()
                );
            }
        }
        Command::Replay {
            session,
            start,
            out,
        } => {
            use plasticine::tools::session::{empty_character, load_session, replay};
            let s = load_session(&session)?;
            // The recorded start (beside the session file) unless told otherwise.
            let recorded_start = s.start.as_ref().map(|name| {
                session
                    .parent()
                    .unwrap_or(std::path::Path::new("."))
                    .join(name)
            });
            let mut c = match start.as_ref().or(recorded_start.as_ref()) {
                Some(p) => load_character(p).with_context(|| {
                    format!(
                        "the character the session starts from ({}); give another with --start",
                        p.display()
                    )
                })?,
                None => empty_character(
                    session
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .unwrap_or("character"),
                ),
            };
            let history = replay(&mut c, &s, &session)?;
            save_character(&out, &c)?;
            println!(
                "Replayed {} commands: {} joints, {} muscles, {} skins (revision {}). Saved {}",
                s.commands.len(),
                c.skeleton.joints.len(),
                c.muscles.len(),
                c.skins.len(),
                history.revision(),
                out.display()
            );
        }
        Command::Calibrate {
            samples,
            live,
            rounds,
            timeout,
            base,
            ipd,
            out,
            check,
        } => match (check, samples, out) {
            (Some(file), _, _) => check_calibration(&file)?,
            (None, Some(samples), Some(out)) => {
                calibrate(&samples, base.as_deref(), ipd, &out)?;
            }
            (None, None, Some(out)) if live => {
                calibrate_live(base.as_deref(), ipd, &out, rounds as usize, timeout)?;
            }
            _ => {
                bail!("give --samples INPUT_SCRIPT --out FILE, --live --out FILE, or --check FILE")
            }
        },
        Command::Tracker { seconds, rate } => show_tracker(seconds, rate)?,
        Command::Resample {
            character,
            resolution,
            out,
        } => {
            let mut c = load_character(&character)?;
            if c.skins.is_empty() {
                bail!("{} has no skins to resample", character.display());
            }
            for s in &mut c.skins {
                *s = plasticine::character::resample::resample(s, resolution.0, resolution.1)
                    .map_err(anyhow::Error::msg)?;
            }
            save_character(&out, &c)?;
            println!(
                "Wrote {} with every skin at {}x{}",
                out.display(),
                resolution.0,
                resolution.1
            );
        }
        Command::Render {
            character,
            baked,
            out,
            stereo,
            size,
            orbit,
            every,
            frames,
            fat_map,
            wireframe,
            bands,
            muscles,
        } => {
            use plasticine::app::headless::{HeadlessOptions, render_character};
            use plasticine::render::MuscleStyle;
            let c = load_character(&character)?;
            let mut opts = HeadlessOptions {
                size,
                stereo,
                orbit_degrees_per_second: orbit,
                every,
                max_frames: frames,
                ..HeadlessOptions::default()
            };
            opts.style.fat_map = fat_map;
            opts.style.wireframe = wireframe;
            opts.style.bands = bands;
            opts.style.muscles = match muscles {
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
        }
        Command::Xr {
            character,
            frames,
            screenshot_eyes,
            save_on_exit,
            left_handed,
            resolution_scale,
            tool,
            placement,
            start_timeout,
            timings,
            recover,
            fallback,
            record,
            bake,
        } => xr(XrArgs {
            character,
            frames,
            screenshot_eyes,
            save_on_exit,
            left_handed,
            resolution_scale,
            tool,
            placement,
            start_timeout,
            timings,
            recover,
            fallback,
            record,
            bake,
        })?,
        Command::Desk {
            character,
            calibration,
            stereo,
            size,
            frames,
            screenshot,
            step_delay_ms,
            timings,
            recover,
            tracker,
            record,
            bake,
        } => desk(
            character,
            calibration,
            stereo,
            size,
            frames,
            screenshot,
            step_delay_ms,
            timings,
            recover,
            tracker,
            record,
            bake,
        )?,
        Command::FemImport {
            mesh,
            skeleton,
            out,
            vertices,
            young,
            poisson,
            density,
            scale,
            translate,
            name,
        } => {
            let name = name.unwrap_or_else(|| {
                mesh.file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or("imported")
                    .to_string()
            });
            let options = plasticine::fem::import::MeshImport {
                name,
                source: mesh
                    .file_name()
                    .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
                scale,
                translate,
                target_vertices: vertices,
                young,
                poisson,
                density,
            };
            fem_import(&mesh, &skeleton, &out, &options)?;
        }
        Command::Export {
            character,
            baked,
            out,
            format,
            every,
            morph_limit,
        } => export(&character, &baked, &out, format, every, morph_limit)?,
    }
    Ok(())
}

/// `plasticine export`.
fn export(
    character: &Path,
    baked: &Path,
    out: &Path,
    format: Option<plasticine::io::export::ExportFormat>,
    every: usize,
    morph_limit: usize,
) -> Result<()> {
    use plasticine::io::export::{ExportOptions, SecondaryMotion, export, resolve_format};
    // Refuse a bad --out before reading anything.
    resolve_format(out, format)?;
    let c = load_character(character)?;
    let mut cache = plasticine::io::CacheReader::open(baked)?;
    let opts = ExportOptions {
        format,
        every,
        morph_limit,
    };
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("exporting {bar:40} {pos}/{len}, eta {eta}")
            .expect("valid template"),
    );
    let s = export(&c, &mut cache, out, &opts, |done, total| {
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
        println!("  skin '{}' {}x{}", k.name, k.m, k.n);
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

/// A corner further than this (metres) from where the other three put it is
/// accepted (while the fitted rectangle misses no corner by more than a tenth
/// of the shorter side) with a warning.
const CORNER_WARNING: f64 = 0.01;

/// `plasticine calibrate --samples`: fit the screen to the corner presses of
/// a recorded input script and write the calibration.
fn calibrate(samples: &Path, base: Option<&Path>, ipd: Option<f32>, out: &Path) -> Result<()> {
    use plasticine::input::{InputError, InputScript};
    use plasticine::view::CornerCapture;
    let text = std::fs::read_to_string(samples)
        .with_context(|| format!("reading {}", samples.display()))?;
    let script = InputScript::from_ron(&text).map_err(|e| match e {
        InputError::Parse { .. } => anyhow::anyhow!("{}:{e}", samples.display()),
        _ => anyhow::anyhow!("{}: {e}", samples.display()),
    })?;
    let cal = base_calibration(base, ipd)?;
    // The fixed head tells the screen's front from its back.
    let mut capture = CornerCapture::new(cal.fixed_head.position);
    for frame in &script.frames {
        capture.handle(frame);
    }
    let fit = capture
        .finish()
        .map_err(|e| anyhow::anyhow!("{}: {e}", samples.display()))?;
    write_calibration(cal, fit.screen, &fit, &capture, out)
}

/// The calibration whose other fields a measurement keeps: `--base`, else
/// the 24" monitor; with `--ipd` applied.
fn base_calibration(
    base: Option<&Path>,
    ipd: Option<f32>,
) -> Result<plasticine::view::Calibration> {
    let mut cal = match base {
        Some(p) => plasticine::view::Calibration::load(p)?,
        None => plasticine::view::Calibration::default_monitor(),
    };
    if let Some(ipd) = ipd {
        cal.set_ipd(ipd);
    }
    Ok(cal)
}

/// `plasticine calibrate --live`: measure the corners with the right
/// controller of an OpenXR tracker, fit, and write the calibration.
fn calibrate_live(
    base: Option<&Path>,
    ipd: Option<f32>,
    out: &Path,
    rounds: usize,
    timeout: f64,
) -> Result<()> {
    use plasticine::app::Tracker;
    use plasticine::view::CornerCapture;
    use plasticine::xr::{XrTracker, XrTrackerOptions};
    use std::time::{Duration, Instant};
    if !(timeout.is_finite() && timeout > 0.0) {
        bail!("--timeout must be a positive number of seconds, not {timeout}");
    }
    let deadline = Instant::now() + Duration::from_secs_f64(timeout.min(1e6));
    let mut cal = base_calibration(base, ipd)?;
    let mut tracker = XrTracker::open(&XrTrackerOptions::default())
        .context("calibrate --live needs an OpenXR tracker")?;
    println!(
        "Measuring with OpenXR: {} ({:?} space).",
        tracker.runtime(),
        tracker.reference_space()
    );
    // The tracked head (if any, within a second) tells the screen's front
    // from its back, and becomes the fixed head.
    tracker.wait_for(Duration::from_secs(1), |t| t.is_head_tracked())?;
    let head = tracker.sample();
    let tracked_head = tracker.tracked().head.then_some(head.head);
    let viewer = match (tracked_head, base) {
        (Some((position, _)), _) => position,
        (None, Some(_)) => {
            println!(
                "The head is not tracked: using the fixed head of --base to tell the screen's \
                 front from its back."
            );
            cal.fixed_head.position
        }
        (None, None) => bail!(
            "the OpenXR tracker does not track the head ({}), and without it the screen's \
             front cannot be told from its back: switch the headset or head tracker on, or give \
             --base with a fixed head in this tracker space",
            tracker.status_line()
        ),
    };
    let mut capture = CornerCapture::new(viewer);
    let wanted = 4 * rounds;
    println!("{}", capture.prompt());
    let mut warned_untracked = false;
    while capture.presses() < wanted {
        if Instant::now() >= deadline {
            bail!(
                "timed out after {timeout} s with {} of {wanted} corners measured; run again \
                 (with a longer --timeout if needed)",
                capture.presses()
            );
        }
        let pose = tracker.sample();
        if let Some(e) = tracker.lost() {
            bail!(
                "the OpenXR tracker stopped after {} of {wanted} corners: {e}",
                capture.presses()
            );
        }
        let mut frame = pose.input;
        if !tracker.tracked().right {
            // A press where the controller is not seen would record a stale position.
            if frame.right.triggered() && !warned_untracked {
                println!("The right controller is not tracked: that press is not recorded.");
                warned_untracked = true;
            }
            frame.right.trigger = 0.0;
        }
        let before = capture.presses();
        if let Some(corner) = capture.handle(&frame) {
            let p = frame.right.position();
            println!("  {corner}: ({:.4}, {:.4}, {:.4}) m", p.x, p.y, p.z);
            warned_untracked = false;
            if capture.presses() < wanted {
                println!("{}", capture.prompt());
            }
        } else if capture.presses() < before {
            println!("Forgot the last corner. {}", capture.prompt());
        }
        std::thread::sleep(Duration::from_millis(4));
    }
    let fit = capture.finish().map_err(|e| anyhow::anyhow!("{e}"))?;
    if base.is_none() {
        // The 24" monitor's head and world, carried over to the measured screen.
        cal = cal.moved_with_screen(fit.screen);
    }
    if let Some((position, _)) = tracked_head {
        cal.fixed_head.position = position;
    }
    write_calibration(cal, fit.screen, &fit, &capture, out)
}

/// Puts the fitted `screen` into `cal`, validates, writes `out`, and says what was fitted.
fn write_calibration(
    mut cal: plasticine::view::Calibration,
    screen: plasticine::view::Screen,
    fit: &plasticine::view::ScreenFit,
    capture: &plasticine::view::CornerCapture,
    out: &Path,
) -> Result<()> {
    cal.screen = screen;
    cal.validate()
        .map_err(|e| anyhow::anyhow!("the calibrated set-up is not usable: {e}"))?;
    cal.save(out)?;
    let (w, h) = fit.size;
    println!(
        "Fitted the screen to {} round{} of 4 corners: {:.1} x {:.1} mm ({:.1}\" diagonal).",
        capture.rounds(),
        if capture.rounds() == 1 { "" } else { "s" },
        w * 1e3,
        h * 1e3,
        w.hypot(h) / 0.0254
    );
    println!(
        "  residual: rms {:.2} mm, max {:.2} mm ({} corner); per corner {}",
        fit.rms_residual * 1e3,
        fit.max_residual * 1e3,
        fit.worst_corner,
        plasticine::view::Corner::ALL
            .iter()
            .map(|c| format!("{} {:.2} mm", c, fit.residuals[c.index()] * 1e3))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if fit.suspect_offset > CORNER_WARNING {
        eprintln!(
            "warning: the {} corner is {:.1} mm from where the other three put it: re-measure it if your tracker is more accurate than that",
            fit.suspect,
            fit.suspect_offset * 1e3
        );
    }
    describe_calibration(&cal);
    println!("Wrote {}", out.display());
    Ok(())
}

/// `plasticine tracker`: what the OpenXR tracker sees.
fn show_tracker(seconds: f64, rate: f64) -> Result<()> {
    use plasticine::app::Tracker;
    use plasticine::xr::{XrTracker, XrTrackerOptions};
    use std::time::{Duration, Instant};
    if !(seconds.is_finite() && seconds >= 0.0 && rate.is_finite() && rate > 0.0) {
        bail!("--seconds must be 0 or more and --rate more than 0");
    }
    let mut tracker = XrTracker::open(&XrTrackerOptions::default())?;
    println!("OpenXR {}", tracker.runtime());
    println!(
        "  session {:?}, tracker space {:?}; bindings suggested for {}",
        tracker.session_state(),
        tracker.reference_space(),
        tracker.suggested_profiles().join(", ")
    );
    tracker.wait_for(Duration::from_millis(500), |t| {
        t.interaction_profiles().iter().all(Option::is_some)
    })?;
    let [left, right] = tracker.interaction_profiles();
    println!(
        "  controllers: left {}, right {}",
        left.unwrap_or("none"),
        right.unwrap_or("none")
    );
    let start = Instant::now();
    let period = Duration::from_secs_f64(1.0 / rate.min(1000.0));
    let end = Duration::from_secs_f64(seconds.min(1e6));
    loop {
        let pose = tracker.sample();
        if let Some(e) = tracker.lost() {
            bail!("{e}");
        }
        let t = tracker.tracked();
        let mark = |tracked: bool| if tracked { "" } else { " (not tracked)" };
        let p = |v: glam::Vec3| format!("({:.3}, {:.3}, {:.3})", v.x, v.y, v.z);
        let hand = |h: &plasticine::input::HandState| {
            format!(
                "{} trigger {:.2} buttons {:#x}",
                p(h.position()),
                h.trigger,
                h.buttons
            )
        };
        println!(
            "{:6.2} s  head {}{}  left {}{}  right {}{}",
            start.elapsed().as_secs_f64(),
            p(pose.head.0),
            mark(t.head),
            hand(&pose.input.left),
            mark(t.left),
            hand(&pose.input.right),
            mark(t.right)
        );
        if start.elapsed() >= end {
            return Ok(());
        }
        std::thread::sleep(period);
    }
}

/// `plasticine calibrate --check`.
fn check_calibration(file: &Path) -> Result<()> {
    let cal = plasticine::view::Calibration::load(file)?;
    println!("{}: a valid calibration.", file.display());
    describe_calibration(&cal);
    Ok(())
}

fn describe_calibration(cal: &plasticine::view::Calibration) {
    let s = &cal.screen;
    let (w, h) = (s.width(), s.height());
    let (c, n) = (s.centre(), s.normal());
    println!(
        "  screen: {:.1} x {:.1} mm ({:.1}\" diagonal), centre ({:.3}, {:.3}, {:.3}) m, facing ({:.3}, {:.3}, {:.3}), tracker space",
        w * 1e3,
        h * 1e3,
        w.hypot(h) / 0.0254,
        c.x,
        c.y,
        c.z,
        n.x,
        n.y,
        n.z
    );
    let head = cal.fixed_head.position;
    let distance = s.signed_distance(head);
    let aside = (head - distance * n - c).length();
    println!(
        "  fixed head: {:.1} mm in front of the screen, {:.1} mm from the axis through its centre",
        distance * 1e3,
        aside * 1e3
    );
    println!("  IPD: {:.1} mm", cal.eyes.ipd() * 1e3);
    let r = &cal.tracker_to_world;
    let (axis, angle) = r.rotation.to_axis_angle();
    println!(
        "  world = {} x tracker, turned {:.1} deg about ({:.2}, {:.2}, {:.2}), moved by ({:.3}, {:.3}, {:.3}); clipping {} to {} m from the eye",
        r.scale,
        angle.to_degrees(),
        axis.x,
        axis.y,
        axis.z,
        r.translation.x,
        r.translation.y,
        r.translation.z,
        cal.near,
        cal.far
    );
}

/// Where autosaves live: `$XDG_STATE_HOME/plasticine/autosave`, else
/// `~/.local/state/plasticine/autosave`.
fn autosave_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local").join("state"))
        })?;
    Some(base.join("plasticine").join("autosave"))
}

/// The character to edit: the file, a new one, or (`recover`) the newest
/// autosave of it; with a note when an autosave from a session that did not
/// end cleanly is there. Returns it with the autosave directory.
fn open_document(
    character: Option<&Path>,
    recover: bool,
) -> Result<(plasticine::character::Character, Option<PathBuf>)> {
    let stem = character
        .and_then(|p| p.file_stem())
        .and_then(|s| s.to_str())
        .unwrap_or("untitled")
        .to_string();
    let autosaves = autosave_dir();
    let mut model = match character {
        Some(p) => load_character(p)?,
        None => plasticine::tools::session::empty_character("untitled"),
    };
    if let Some(dir) = &autosaves {
        let report = plasticine::io::find_recovery(dir, &stem);
        if let Some(best) = report.best() {
            if recover {
                model = best.load()?;
                eprintln!(
                    "Recovered '{stem}' from the autosave {}",
                    best.path.display()
                );
            } else {
                eprintln!(
                    "note: an autosave of '{stem}' from an earlier session that did not end cleanly \
                     is in {}; run with --recover to open it",
                    best.path.display()
                );
            }
        } else if recover {
            bail!(
                "there is no autosave of '{stem}' in {} to recover",
                dir.display()
            );
        }
    }
    Ok((model, autosaves))
}

struct XrArgs {
    character: Option<PathBuf>,
    frames: Option<u64>,
    screenshot_eyes: Option<PathBuf>,
    save_on_exit: Option<PathBuf>,
    left_handed: bool,
    resolution_scale: f32,
    tool: ToolArg,
    placement: PlacementArg,
    start_timeout: f64,
    timings: Option<PathBuf>,
    recover: bool,
    fallback: FallbackArg,
    record: Option<PathBuf>,
    bake: Option<PathBuf>,
}

/// Set by SIGINT / SIGTERM while `plasticine xr` or `plasticine desk` runs.
static XR_STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn request_xr_stop(_signal: libc::c_int) {
    // An atomic store is async-signal-safe.
    XR_STOP.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Ctrl+C (and SIGTERM) end the headset session cleanly: the session is
/// asked to exit and the character saved. SA_RESTART keeps the runtime's
/// blocking calls (xrWaitFrame over IPC) from failing with EINTR.
fn stop_xr_on_signals() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a handler that only stores to an
        // atomic; installing it has no other effect.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = request_xr_stop as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// `plasticine xr`: the headset, or (no headset) the reason and the desk.
fn xr(args: XrArgs) -> Result<()> {
    use plasticine::app::headset::{Placement, XrFrontError, XrOptions, run_xr};
    use plasticine::tools::ToolKind;
    use plasticine::xr::HeadsetOptions;
    let (model, autosaves) = open_document(args.character.as_deref(), args.recover)?;
    if !(args.resolution_scale > 0.0 && args.resolution_scale <= 4.0) {
        bail!(
            "--resolution-scale must be above 0 and at most 4 (got {})",
            args.resolution_scale
        );
    }
    let options = XrOptions {
        document: args.character.clone(),
        headset: HeadsetOptions {
            start_timeout: std::time::Duration::from_secs_f64(args.start_timeout.max(0.1)),
            resolution_scale: args.resolution_scale,
            left_handed: args.left_handed,
            ..HeadsetOptions::default()
        },
        frames: args.frames,
        screenshot_eyes: args.screenshot_eyes,
        save_on_exit: args.save_on_exit,
        autosave_dir: autosaves,
        tool: match args.tool {
            ToolArg::Select => ToolKind::Select,
            ToolArg::Sphere => ToolKind::Sphere,
            ToolArg::Superellipse => ToolKind::Superellipse,
            ToolArg::Deform => ToolKind::Deform,
            ToolArg::Ik => ToolKind::Ik,
            ToolArg::Skin => ToolKind::Skin,
            ToolArg::Liposuction => ToolKind::Liposuction,
            ToolArg::Weights => ToolKind::Weights,
        },
        placement: match args.placement {
            PlacementArg::Front => Placement::Front,
            PlacementArg::Tracker => Placement::Tracker,
        },
        timings_csv: args.timings,
        record: args.record.clone(),
        bake: args.bake.clone(),
        stop: Some(&XR_STOP),
        ..XrOptions::default()
    };
    stop_xr_on_signals();
    match run_xr(model, options) {
        Ok(report) => {
            println!(
                "Headset session: {} frames rendered ({} skipped) on {}; {}",
                report.frames, report.skipped_frames, report.adapter, report.ended
            );
            println!("  session states: {}", report.states.join(" → "));
            println!("  {}", report.saved);
            if let Some(r) = &report.recorded {
                println!("  {r}");
            }
            for line in report.timing_lines() {
                println!("  {line}");
            }
            for p in &report.screenshots {
                println!("  swapchain image saved to {}", p.display());
            }
            Ok(())
        }
        Err(XrFrontError::Unavailable(e)) => {
            println!("no headset: {e}");
            if args.fallback == FallbackArg::None {
                bail!("no headset ({e}) and --fallback none");
            }
            let has_display = ["DISPLAY", "WAYLAND_DISPLAY"]
                .iter()
                .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
            if !has_display {
                bail!(
                    "no headset ({e}), and no display for the desk front end either (neither \
                     DISPLAY nor WAYLAND_DISPLAY is set): start an OpenXR runtime (e.g. \
                     monado-service), run on a display (`plasticine desk`), or render without one \
                     (`plasticine render CHARACTER --out DIR`)"
                );
            }
            println!("falling back to the desk front end (plasticine desk)");
            desk(
                args.character,
                None,
                DeskStereo::Anaglyph,
                (1280, 720),
                args.frames,
                None,
                0,
                None,
                args.recover,
                DeskTracker::Auto,
                args.record,
                args.bake,
            )
        }
        Err(e) => Err(e.into()),
    }
}

#[allow(clippy::too_many_arguments)]
fn desk(
    character: Option<PathBuf>,
    calibration: Option<PathBuf>,
    stereo: DeskStereo,
    size: (u32, u32),
    frames: Option<u64>,
    screenshot: Option<PathBuf>,
    step_delay_ms: u64,
    timings: Option<PathBuf>,
    recover: bool,
    tracker: DeskTracker,
    record: Option<PathBuf>,
    bake: Option<PathBuf>,
) -> Result<()> {
    use plasticine::app::desk::{DeskOptions, TrackerChoice, run_desk};
    use plasticine::render::StereoMode;
    let calibration = match &calibration {
        Some(p) => plasticine::view::Calibration::load(p)?,
        None => plasticine::view::Calibration::default_monitor(),
    };
    let (model, autosaves) = open_document(character.as_deref(), recover)?;
    let options = DeskOptions {
        document: character,
        calibration,
        stereo: match stereo {
            DeskStereo::Anaglyph => StereoMode::Anaglyph,
            DeskStereo::SideBySide => StereoMode::SideBySide,
            DeskStereo::TopBottom => StereoMode::TopBottom,
            DeskStereo::Mono => StereoMode::Mono,
        },
        size,
        frames,
        screenshot,
        step_delay: std::time::Duration::from_millis(step_delay_ms),
        timings_csv: timings,
        autosave_dir: autosaves,
        tracker: match tracker {
            DeskTracker::Auto => TrackerChoice::Auto,
            DeskTracker::Openxr => TrackerChoice::OpenXr,
            DeskTracker::None => TrackerChoice::None,
        },
        record,
        bake,
        stop: Some(&XR_STOP),
        ..DeskOptions::default()
    };
    // Ctrl+C closes the window as Esc does: the session is recorded and the
    // timings written (the autosave holds the edits).
    stop_xr_on_signals();
    let report = run_desk(model, options)?;
    println!(
        "Desk session: {} frames on {}",
        report.frames, report.adapter
    );
    for line in &report.summary {
        println!("  {line}");
    }
    if let Some(p) = &report.screenshot {
        println!("  last frame saved to {}", p.display());
    }
    Ok(())
}

/// `plasticine fem-import`: reads the mesh and the skeleton's character,
/// builds and checks the lattice, saves the character, says what it built.
fn fem_import(
    mesh_path: &Path,
    skeleton: &Path,
    out: &Path,
    options: &plasticine::fem::import::MeshImport,
) -> Result<()> {
    let mesh = plasticine::io::import::load_mesh(mesh_path)?;
    let source = load_character(skeleton)?;
    let (c, r) = plasticine::fem::import::fem_character_from_mesh(
        &mesh.positions,
        &mesh.triangles,
        &source,
        options,
    )
    .map_err(|e| anyhow::anyhow!("{}: {e}", mesh_path.display()))?;
    for w in &r.warnings {
        eprintln!("warning: {w}");
    }
    let size = plasticine::io::character_to_string(&c)?.len() as u64;
    if size > plasticine::io::MAX_CHARACTER_FILE_BYTES {
        bail!(
            "{}: the character would be {size} bytes, over the character file limit of {} bytes: decimate the mesh",
            mesh_path.display(),
            plasticine::io::MAX_CHARACTER_FILE_BYTES
        );
    }
    save_character(out, &c)?;
    println!(
        "Imported {}: {} vertices, {} triangles{}",
        mesh_path.display(),
        r.mesh_vertices,
        r.mesh_triangles,
        if r.open_edges == 0 {
            ", closed".to_string()
        } else {
            format!(", {} open edges", r.open_edges)
        }
    );
    println!(
        "  lattice: {} vertices, {} cells of {:.4} m; {} bones bound to {} vertices",
        r.lattice_vertices, r.lattice_cells, r.cell_size, r.bones, r.bound_vertices
    );
    println!(
        "  embedded all {} mesh vertices (trilinear reconstruction error {:.1e} m)",
        r.embedded_vertices, r.max_embedding_error
    );
    println!(
        "  FEM precompute {:.1} ms; at rest the mesh sags at most {:.4} m under gravity",
        r.precompute_seconds * 1e3,
        r.rest_sag
    );
    println!(
        "Saved '{}' ({} joints, {} key postures) to {}",
        c.name,
        c.skeleton.joints.len(),
        c.key_postures.len(),
        out.display()
    );
    if !(source.muscles.is_empty() && source.skins.is_empty()) {
        println!(
            "  ({}'s {} muscles and {} skins are not kept: the mesh is the flesh and the surface)",
            skeleton.display(),
            source.muscles.len(),
            source.skins.len()
        );
    }
    Ok(())
}
