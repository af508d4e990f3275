//! The command line: one file per subcommand (its arguments, and `run`),
//! with the value parsers and choices they share (`args`), the document a
//! front end opens (`document`) and the signals that end a session
//! (`signals`). `bench` also holds the figures `plasticine bench` prints
//! (and the tests and criterion benches call).

mod args;
mod bake;
pub mod bench;
mod blendshape;
mod calibrate;
mod desk;
mod document;
mod export;
mod fem_import;
mod info;
mod morph;
mod render;
mod replay;
mod resample;
mod sample;
mod signals;
mod soak;
mod xr;

use clap::{Parser, Subcommand};

/// The command line of `plasticine`: one subcommand.
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
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands of `plasticine`.
#[derive(Subcommand)]
pub enum Command {
    /// Play a character's key postures with the skin simulated, and store every frame in a cache.
    Bake(bake::BakeArgs),
    /// Measure speed; prints one JSON object per measurement (machine-readable).
    Bench(bench::BenchArgs),
    /// Run a long scripted session (edit, undo, redo, play back, bake) and check that memory holds steady; prints JSON lines.
    Soak(soak::SoakArgs),
    /// Build one of the sample characters (penguin, wombat, torso; or figure, a whole humanoid) and save it.
    Sample(sample::SampleArgs),
    /// Check a character file and describe it.
    Info(info::InfoArgs),
    /// Replay a recorded editing session (a RON list of commands) and save the result.
    Replay(replay::ReplayArgs),
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
    Calibrate(calibrate::CalibrateArgs),
    /// Check the `OpenXR` tracker: open a headless session (e.g. with Monado), say which runtime,
    /// headset, controllers and tracking space it has, and print the head and hands for a while.
    Tracker(calibrate::TrackerArgs),
    /// Change the resolution of every skin (bilinear resampling of every per-point field).
    Resample(resample::ResampleArgs),
    /// Open the desk front end: a window with head-tracked ("fishtank") stereo on a calibrated
    /// monitor, the left hand flying (keys W/S A/D Q/E, arrows, or a gamepad), the right hand a 3D
    /// cursor (mouse, wheel for depth, left button = trigger). Tab, 1-9, 0 or the tool panel (P shows or
    /// hides it) pick tools, L locks the current part, Ctrl+Z/Ctrl+Y
    /// undo/redo, Ctrl+S saves, M changes the stereo layout, Esc quits.
    Desk(desk::DeskArgs),
    /// Open the headset front end (`OpenXR` with Vulkan): the character in front of you at arm's
    /// length. Tool hand (right; left with --left-handed): trigger = tool, B = next tool, A = the
    /// skin tool's attach, thumbstick = the tool's parameter. Other hand: A/B = undo/redo,
    /// thumbstick = fly and turn, click = recentre. Either hand: menu = next tool, squeeze = grab the
    /// world (both hands: scale and turn it). With no `OpenXR` runtime it says why and opens the desk.
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
    Xr(xr::XrArgs),
    /// Render a character to PNG images with no window: its bake (--baked), else its key
    /// postures simulated live, else its still pose; from a fixed or orbiting viewpoint.
    Render(render::RenderArgs),
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
    Export(export::ExportArgs),
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
    FemImport(fem_import::FemImportArgs),
    /// Physical blendshapes (Ma et al.): build a rig from meshes, solve a blend to a mesh.
    #[command(
        long_about = "Physical blendshapes (Ma et al. 2012). A blend is the equilibrium of a \
mass-spring system (the mesh's edges, its 2-rings for bending, internal springs through the solid) \
whose rest lengths are the targets' blended: a bend between two targets keeps its length instead of \
shrinking through the middle as a linear blend does.\n\n\
`import` builds a rig from a base mesh and one mesh per target, each with the base's vertices and \
triangles in its order (OBJ or glTF), or from one glTF mesh and its morph targets, checks that every \
target can be solved, and saves it. `solve` \
writes the blend for the given weights (the base's first, summing to 1) as OBJ, with the base's \
vertices in its order.\n\n\
Examples:\n  plasticine blendshape import neutral.obj smile.obj frown.obj --out face.ron\n  \
plasticine blendshape import face.glb --out face.ron\n  \
plasticine blendshape solve face.ron --weights 0.5,0.3,0.2 --out blend.obj\n  \
plasticine blendshape solve face.ron --weights 0.5,0.5,0 --linear --out linear.obj"
    )]
    Blendshape(blendshape::BlendshapeArgs),
    /// Dynamic morph targets of the FEM flesh (Galoppo): a sculpted rest shape and stiffness at a posture.
    #[command(
        long_about = "Dynamic morph targets of the FEM flesh (Galoppo 2008, ch. 5). A target is, at one \
posture, a rest shape of the flesh and a stiffness: between and beyond the targets both are interpolated \
in pose space (radial basis functions on the joints' rotations), so the flesh bulges and stiffens where \
you said, and still sways, sags and takes grabs.\n\n\
`add` poses the flesh (a key posture, or the animation at a time), grabs it where you say and pulls it, \
relaxes it held so, and keeps that shape (and the stiffness you give) as a target; a target already at \
that pose is replaced. `remove` drops one by name. `plasticine info` lists them.\n\n\
Examples:\n  plasticine sample penguin --flesh fem --out p.ron\n  \
plasticine morph add p.ron --name tucked --key 1 --pull belly:0,0,0.02 --stiffness 2 --out p.ron\n  \
plasticine morph add p.ron --name flex --at 0.5 --part flipper_l=3 --out p.ron\n  \
plasticine morph remove p.ron --name tucked --out p.ron"
    )]
    Morph(morph::MorphArgs),
}

impl Cli {
    /// Runs the subcommand asked for.
    pub fn run(self) -> anyhow::Result<()> {
        match self.command {
            Command::Bake(a) => a.run(),
            Command::Bench(a) => a.run(),
            Command::Soak(a) => a.run(),
            Command::Sample(a) => a.run(),
            Command::Info(a) => a.run(),
            Command::Replay(a) => a.run(),
            Command::Calibrate(a) => a.run(),
            Command::Tracker(a) => a.run(),
            Command::Resample(a) => a.run(),
            Command::Desk(a) => a.run(),
            Command::Xr(a) => a.run(),
            Command::Render(a) => a.run(),
            Command::Export(a) => a.run(),
            Command::FemImport(a) => a.run(),
            Command::Blendshape(a) => a.run(),
            Command::Morph(a) => a.run(),
        }
    }
}
