//! The desk front end (LEMAN §5.1 without a headset): a window on a
//! calibrated monitor showing fishtank stereo, the left hand flying the
//! vehicle from the keyboard or a gamepad, the right hand a 3D cursor on the
//! mouse ray, the frame loop of §5.2 with the simulation on its own thread,
//! autosave, and the frame-timing overlay.
//!
//! Keys: W/S A/D Q/E fly (forward/back, left/right, down/up), arrows turn,
//! Home resets the view; left mouse = trigger, wheel = cursor depth, `[` and `]`
//! twist the wand; Shift held = precision mode; Tab or 1–6 pick the tool;
//! Ctrl+Z / Ctrl+Y undo and redo; Ctrl+S saves; M cycles the stereo layout;
//! F1 hides the overlay; F2 skin grid, F3 fat map, F4 muscles
//! opaque/translucent/hidden, F5 connective tissue, F6 x-ray, F7 the live
//! plots beside the panel, F8 the fat shell; P hides the panel; Esc quits.
//!
//! # Tracking
//!
//! [`DeskOptions::tracker`] says where the head and the right hand come
//! from ([`choose_tracker`]): with `OpenXR` (an [`XrTracker`] on a headless
//! session), the head follows the headset or tracker while it is tracked and
//! the right hand follows the right controller while it is tracked; the
//! rest of the time the head sits at the calibration's fixed position and
//! the right hand is the mouse ray. The `OpenXR` tracker's space (`STAGE`,
//! else `LOCAL`) is then the calibration's tracker space, so the calibration
//! must have been measured with it: `plasticine calibrate --live`.

use super::desk_input::{DeskTracker, REDO, TWIST_STEP, UNDO, VehicleAxes};
use super::frame_loop::{FrameInputs, FrameLoop, FrameRenderer, RenderReport, VehicleInput};
use super::panel_driver::{PanelAnchor, desk_panel_anchor};
use super::render_failure::RenderFailure;
use super::sim_thread::SimMessage;
use super::view_renderer::ViewRenderer;
use crate::character::Character;
use crate::gpu::GpuContext;
use crate::io::{AutosaveSettings, Autosaver, IoError, save_character};
use crate::render::{RenderError, RgbaImage, SceneRenderer, StereoMode};
use crate::skin::SolverSettings;
use crate::tools::{SessionError, SessionRecorder};
use crate::tools::{ToolKind, ViewRow};
use crate::view::Calibration;
use crate::xr::{XrError, XrTracker, XrTrackerOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{KeyCode, ModifiersState, PhysicalKey};
use winit::window::{Window, WindowId};

/// What `plasticine desk` was asked to do.
#[derive(Clone, Debug)]
pub struct DeskOptions {
    /// The document: loaded at start, written by Ctrl+S.
    pub document: Option<PathBuf>,
    /// The monitor's calibration: where the screen and the fixed head are in tracker space.
    pub calibration: Calibration,
    /// How the two eyes' views share the window (M cycles it at run time).
    pub stereo: StereoMode,
    /// The window's initial size in pixels (width, height).
    pub size: (u32, u32),
    /// Quit after this many frames (demos, tests).
    pub frames: Option<u64>,
    /// Save the last frame shown as a PNG.
    pub screenshot: Option<PathBuf>,
    /// Slow every simulation step by this much (shows that head and hand
    /// motion do not wait for the solver).
    pub step_delay: Duration,
    /// Save the frame timings as CSV on exit.
    pub timings_csv: Option<PathBuf>,
    /// Record the editing session here (`plasticine replay` plays it).
    pub record: Option<PathBuf>,
    /// The folder for autosaves; `None` turns autosave off.
    pub autosave_dir: Option<PathBuf>,
    /// Bytes of undo data kept (see `History::set_budget`).
    pub undo_budget: usize,
    /// The skin solver's settings for the simulation thread.
    pub settings: SolverSettings,
    /// Where the head and the right hand come from.
    pub tracker: TrackerChoice,
    /// Set (e.g. by a signal handler) to close the window as Esc does.
    pub stop: Option<&'static std::sync::atomic::AtomicBool>,
    /// A bake's frame cache for baked playback.
    pub bake: Option<PathBuf>,
    /// Let the skeleton respond on this ground (FEM flesh): it falls,
    /// stands, and Shift + right button pushes it.
    pub ground: Option<crate::contact::GroundDrop>,
}

/// Which tracker the desk uses for the head and the right hand.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TrackerChoice {
    /// `OpenXR` when a loader and an active runtime with headless sessions
    /// are there, else none.
    #[default]
    Auto,
    /// `OpenXR`, or fail saying why not.
    OpenXr,
    /// None: the fixed head and the mouse.
    None,
}

/// Opens the tracker `choice` asks for with `open` (not called for
/// [`TrackerChoice::None`]). Returns it, if any, with one line saying which
/// it is (`describe` names an opened one); only [`TrackerChoice::OpenXr`]
/// turns a failure to open into an error, [`TrackerChoice::Auto`] falls
/// back to the fixed head and says why.
pub fn choose_tracker<T>(
    choice: TrackerChoice,
    open: impl FnOnce() -> Result<T, XrError>,
    describe: impl FnOnce(&T) -> String,
) -> Result<(Option<T>, String), XrError> {
    const FIXED: &str = "tracker: none; the head is fixed at the calibrated position and the \
                         right hand follows the mouse";
    match choice {
        TrackerChoice::None => Ok((None, format!("{FIXED} (--tracker none)"))),
        TrackerChoice::OpenXr => {
            let t = open()?;
            let line = describe(&t);
            Ok((Some(t), line))
        }
        TrackerChoice::Auto => match open() {
            Ok(t) => {
                let line = describe(&t);
                Ok((Some(t), line))
            }
            Err(e) => Ok((None, format!("{FIXED} (no OpenXR tracker: {e})"))),
        },
    }
}

/// The line [`run_desk`] prints for an opened `OpenXR` tracker.
pub fn describe_xr_tracker(t: &XrTracker) -> String {
    format!(
        "tracker: OpenXR, {} ({:?} space): the head follows it while tracked (else the \
         calibrated fixed head), the right hand follows the right controller while tracked \
         (else the mouse)",
        t.runtime(),
        t.reference_space()
    )
}

impl Default for DeskOptions {
    fn default() -> Self {
        Self {
            document: None,
            calibration: Calibration::default_monitor(),
            stereo: StereoMode::Anaglyph,
            size: (1280, 720),
            frames: None,
            screenshot: None,
            step_delay: Duration::ZERO,
            timings_csv: None,
            record: None,
            stop: None,
            bake: None,
            ground: None,
            autosave_dir: None,
            undo_budget: crate::tools::DEFAULT_UNDO_BUDGET,
            settings: SolverSettings::default(),
            tracker: TrackerChoice::Auto,
        }
    }
}

/// Why a desk session could not start or had to stop.
#[derive(Debug, thiserror::Error)]
pub enum DeskError {
    /// There is no display to open the window on; the text says why.
    #[error(
        "no display to open a window on ({0}). Set DISPLAY (X11) or WAYLAND_DISPLAY, run under \
         Xvfb (`xvfb-run plasticine desk ...`), or render without a window: \
         `plasticine render CHARACTER --out DIR`"
    )]
    NoDisplay(String),
    /// The GPU or the renderer failed.
    #[error(transparent)]
    Render(#[from] RenderError),
    /// Reading or writing a character file failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// Creating or running the window (or its surface) failed; the text says how.
    #[error("the window failed: {0}")]
    Window(String),
    /// `--tracker openxr` was asked for and the `OpenXR` tracker could not be opened.
    #[error(transparent)]
    Tracker(#[from] XrError),
    /// The session recording (`DeskOptions::record`) could not be started.
    #[error(transparent)]
    Record(#[from] SessionError),
}

/// What a desk session did.
#[derive(Clone, Debug, Default)]
pub struct DeskReport {
    /// How many frames were shown.
    pub frames: u64,
    /// The GPU adapter the window rendered with, as `GpuContext::summary` describes it.
    pub adapter: String,
    /// Where the last frame was saved as a PNG, if it was.
    pub screenshot: Option<PathBuf>,
    /// Closing lines for the user: the frame-timing summary, then the session recording's.
    pub summary: Vec<String>,
    /// The autosave files written during the session, in order.
    pub autosaves: Vec<PathBuf>,
}

/// Opens the desk window on `character` and runs until the user quits (or
/// `frames` have been shown).
pub fn run_desk(character: Character, options: DeskOptions) -> Result<DeskReport, DeskError> {
    let (xr, line) = choose_tracker(
        options.tracker,
        || XrTracker::open(&XrTrackerOptions::default()),
        describe_xr_tracker,
    )?;
    println!("{line}");
    if xr.is_some() && options.calibration == Calibration::default_monitor() {
        println!(
            "note: the calibration is the default 24\" monitor's, not one measured in the OpenXR \
             tracker's space, so the tracked head will not match the screen: measure one with \
             `plasticine calibrate --live --out FILE` and pass --calibration FILE"
        );
    }
    let has_display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty()));
    if !has_display {
        return Err(DeskError::NoDisplay(
            "neither DISPLAY nor WAYLAND_DISPLAY is set".into(),
        ));
    }
    // X11 straight away when there is no Wayland session: probing for one
    // prints an alarming "XDG_RUNTIME_DIR is invalid" line from libwayland.
    let mut builder = EventLoop::builder();
    if std::env::var_os("WAYLAND_DISPLAY").is_none_or(|v| v.is_empty()) {
        use winit::platform::x11::EventLoopBuilderExtX11;
        builder.with_x11();
    }
    let event_loop = builder
        .build()
        .map_err(|e| DeskError::NoDisplay(e.to_string()))?;
    event_loop.set_control_flow(ControlFlow::Poll);
    let recorder = options
        .record
        .as_deref()
        .map(|path| SessionRecorder::new(path, &character))
        .transpose()?;
    let mut app = DeskApp::new(character, options);
    app.recorder = recorder;
    if let Some(xr) = xr {
        app.tracker = app.tracker.with_source(Box::new(xr));
    }
    event_loop
        .run_app(&mut app)
        .map_err(|e| DeskError::Window(e.to_string()))?;
    match app.failure.take() {
        Some(e) => Err(e),
        None => Ok(app.report),
    }
}

/// The window's surface and what draws into it.
struct Surface {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    ctx: GpuContext,
    view: ViewRenderer,
    /// Read the next presented frame back (screenshot).
    capture: bool,
    captured: Option<RgbaImage>,
    /// The image acquired for the frame being made.
    frame: Option<wgpu::SurfaceTexture>,
}

impl Surface {
    fn create(
        event_loop: &ActiveEventLoop,
        options: &DeskOptions,
        title: &str,
    ) -> Result<Self, DeskError> {
        let attributes = Window::default_attributes()
            .with_title(title)
            .with_inner_size(winit::dpi::PhysicalSize::new(
                options.size.0,
                options.size.1,
            ));
        let window = Arc::new(
            event_loop
                .create_window(attributes)
                .map_err(|e| DeskError::Window(e.to_string()))?,
        );
        // The primary backends first (see `instance_descriptor`), GL if
        // none of them can present to the window.
        let open = |primary: bool| -> Result<_, DeskError> {
            let mut desc = crate::gpu::instance_descriptor(primary);
            desc.display = Some(Box::new(event_loop.owned_display_handle()));
            let instance = wgpu::Instance::new(desc);
            let surface = instance
                .create_surface(window.clone())
                .map_err(|e| DeskError::Window(e.to_string()))?;
            let ctx =
                GpuContext::with_instance(instance, Some(&surface)).map_err(RenderError::from)?;
            Ok((surface, ctx))
        };
        let (surface, ctx) = match open(true) {
            Err(DeskError::Render(crate::render::RenderError::Gpu(
                crate::gpu::GpuError::NoAdapter(_),
            ))) if crate::gpu::backends_defaulted() => open(false)?,
            other => other?,
        };
        let caps = surface.get_capabilities(&ctx.adapter);
        let format = caps
            .formats
            .iter()
            .copied()
            .find(|f| f.is_srgb())
            .or_else(|| caps.formats.first().copied())
            .ok_or_else(|| DeskError::Window("the surface offers no format".into()))?;
        let size = window.inner_size();
        let mut usage = wgpu::TextureUsages::RENDER_ATTACHMENT;
        if caps.usages.contains(wgpu::TextureUsages::COPY_SRC) {
            usage |= wgpu::TextureUsages::COPY_SRC;
        }
        let config = wgpu::SurfaceConfiguration {
            usage,
            format,
            width: size.width.max(1),
            height: size.height.max(1),
            present_mode: wgpu::PresentMode::AutoVsync,
            desired_maximum_frame_latency: 1,
            alpha_mode: caps.alpha_modes[0],
            view_formats: vec![],
            color_space: wgpu::SurfaceColorSpace::Auto,
        };
        surface.configure(&ctx.device, &config);
        let scene = SceneRenderer::new(&ctx, format)?;
        Ok(Self {
            window,
            surface,
            config,
            ctx,
            view: ViewRenderer::new(scene, options.calibration, options.stereo),
            capture: false,
            captured: None,
            frame: None,
        })
    }

    fn resize(&mut self, width: u32, height: u32) {
        // An image of the old size must not be drawn into.
        self.frame = None;
        self.config.width = width.max(1);
        self.config.height = height.max(1);
        self.surface.configure(&self.ctx.device, &self.config);
    }
}

impl FrameRenderer for Surface {
    fn acquire(&mut self) -> Result<(), RenderFailure> {
        if self.frame.is_some() {
            return Ok(());
        }
        match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(f)
            | wgpu::CurrentSurfaceTexture::Suboptimal(f) => {
                self.frame = Some(f);
                Ok(())
            }
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                self.surface.configure(&self.ctx.device, &self.config);
                Err(RenderFailure::SurfaceOutdated)
            }
            other => Err(RenderFailure::NoSurfaceImage(format!("{other:?}"))),
        }
    }

    fn render(&mut self, inputs: &FrameInputs) -> Result<RenderReport, RenderFailure> {
        let t0 = Instant::now();
        self.acquire()?;
        let frame = self.frame.take().expect("acquired above");
        let view = frame.texture.create_view(&Default::default());
        let size = (self.config.width, self.config.height);
        self.view.draw(inputs, Some((&view, size)), size);
        let submitted_at = Instant::now();
        if self.capture && self.config.usage.contains(wgpu::TextureUsages::COPY_SRC) {
            self.capture = false;
            self.captured = crate::render::read_texture_layer(&self.ctx, &frame.texture, 0, size)
                .ok()
                .map(|img| to_rgba(img, self.config.format));
        }
        self.window.pre_present_notify();
        self.ctx.queue.present(frame);
        Ok(RenderReport {
            // Building, uploading, encoding and submitting; not the driver's
            // present (on lavapipe under X, a software copy to the window).
            cpu_encode: submitted_at - t0,
            submitted_at,
        })
    }
}

/// Surface images are often BGRA; PNGs are RGBA.
fn to_rgba(mut img: RgbaImage, format: wgpu::TextureFormat) -> RgbaImage {
    if matches!(
        format,
        wgpu::TextureFormat::Bgra8Unorm | wgpu::TextureFormat::Bgra8UnormSrgb
    ) {
        for px in img.pixels.chunks_exact_mut(4) {
            px.swap(0, 2);
        }
    }
    img
}

struct DeskApp {
    options: DeskOptions,
    character: Option<Character>,
    frame_loop: Option<FrameLoop>,
    surface: Option<Surface>,
    tracker: DeskTracker,
    keys_axes: VehicleAxes,
    modifiers: ModifiersState,
    gamepads: Option<gilrs::Gilrs>,
    last_frame: Option<Instant>,
    show_overlay: bool,
    autosaver: Option<Autosaver>,
    message: Option<(String, Instant)>,
    report: DeskReport,
    failure: Option<DeskError>,
    recorder: Option<SessionRecorder>,
}

impl DeskApp {
    fn new(character: Character, options: DeskOptions) -> Self {
        let tracker = DeskTracker::new(options.calibration, options.size);
        // No gamepad support (no udev, a sandbox) is not an error: keys fly too.
        let gamepads = gilrs::Gilrs::new().ok();
        let stem = options
            .document
            .as_deref()
            .and_then(Path::file_stem)
            .and_then(|s| s.to_str())
            .unwrap_or("untitled")
            .to_string();
        let autosaver = options
            .autosave_dir
            .as_deref()
            .and_then(|dir| Autosaver::new(dir, &stem, AutosaveSettings::default()).ok());
        Self {
            options,
            character: Some(character),
            frame_loop: None,
            surface: None,
            tracker,
            keys_axes: VehicleAxes::default(),
            modifiers: ModifiersState::empty(),
            gamepads,
            last_frame: None,
            show_overlay: true,
            autosaver,
            message: None,
            report: DeskReport::default(),
            failure: None,
            recorder: None,
        }
    }

    fn fail(&mut self, event_loop: &ActiveEventLoop, e: DeskError) {
        self.failure = Some(e);
        event_loop.exit();
    }

    fn say(&mut self, text: impl Into<String>) {
        let text = text.into();
        tracing::info!("{text}");
        self.message = Some((text, Instant::now()));
    }

    fn gamepad_axes(&mut self) -> VehicleAxes {
        let Some(g) = self.gamepads.as_mut() else {
            return VehicleAxes::default();
        };
        while g.next_event().is_some() {}
        let mut axes = VehicleAxes::default();
        for (_, pad) in g.gamepads() {
            use gilrs::Axis;
            let dead = |v: f32| if v.abs() < 0.15 { 0.0 } else { v };
            axes = axes.combined(VehicleAxes {
                strafe: dead(pad.value(Axis::LeftStickX)),
                forward: dead(pad.value(Axis::LeftStickY)),
                yaw: dead(pad.value(Axis::RightStickX)),
                pitch: dead(pad.value(Axis::RightStickY)),
                lift: dead(pad.value(Axis::RightZ)) - dead(pad.value(Axis::LeftZ)),
            });
        }
        axes
    }

    fn key(&mut self, event_loop: &ActiveEventLoop, code: KeyCode, pressed: bool) {
        let s = if pressed { 1.0 } else { 0.0 };
        let axes = &mut self.keys_axes;
        match code {
            KeyCode::KeyW => axes.forward = s,
            KeyCode::KeyS if !self.modifiers.control_key() => axes.forward = -s,
            KeyCode::KeyD => axes.strafe = s,
            KeyCode::KeyA => axes.strafe = -s,
            KeyCode::KeyE => axes.lift = s,
            KeyCode::KeyQ => axes.lift = -s,
            KeyCode::ArrowRight => axes.yaw = s,
            KeyCode::ArrowLeft => axes.yaw = -s,
            KeyCode::ArrowDown => axes.pitch = s,
            KeyCode::ArrowUp => axes.pitch = -s,
            _ => {}
        }
        if !pressed {
            return;
        }
        let ctrl = self.modifiers.control_key();
        let Some(fl) = self.frame_loop.as_mut() else {
            return;
        };
        let tool = |k: ToolKind| Some(k);
        let chosen = match code {
            KeyCode::Tab => tool(fl.toolbox().tool().next()),
            KeyCode::Digit1 => tool(ToolKind::Select),
            KeyCode::Digit2 => tool(ToolKind::Sphere),
            KeyCode::Digit3 => tool(ToolKind::Superellipse),
            KeyCode::Digit4 => tool(ToolKind::Ik),
            KeyCode::Digit5 => tool(ToolKind::Skin),
            KeyCode::Digit6 => tool(ToolKind::Liposuction),
            KeyCode::Digit7 => tool(ToolKind::Deform),
            KeyCode::Digit8 => tool(ToolKind::Weights),
            KeyCode::Digit9 => tool(ToolKind::Paint),
            KeyCode::Digit0 => tool(ToolKind::Sculpt),
            _ => None,
        };
        if let Some(kind) = chosen {
            match fl.set_tool(kind) {
                Ok(()) => self.say(format!("tool: {kind:?}")),
                Err(e) => self.say(format!("cannot switch tool: {e}")),
            }
            return;
        }
        match code {
            KeyCode::KeyZ if ctrl && self.modifiers.shift_key() => self.tracker.pulse_left(REDO),
            KeyCode::KeyZ if ctrl => self.tracker.pulse_left(UNDO),
            KeyCode::KeyY if ctrl => self.tracker.pulse_left(REDO),
            KeyCode::KeyS if ctrl => self.save(),
            KeyCode::BracketLeft => self.tracker.twist -= TWIST_STEP,
            KeyCode::BracketRight => self.tracker.twist += TWIST_STEP,
            KeyCode::Home => {
                let home = self
                    .options
                    .calibration
                    .world_from_tracker(glam::Mat4::IDENTITY);
                fl.set_vehicle(home);
                self.say("view reset");
            }
            KeyCode::KeyM => {
                if let Some(s) = self.surface.as_mut() {
                    s.view.mode = match s.view.mode {
                        StereoMode::Anaglyph => StereoMode::SideBySide,
                        StereoMode::SideBySide => StereoMode::TopBottom,
                        StereoMode::TopBottom => StereoMode::Mono,
                        StereoMode::Mono => StereoMode::Anaglyph,
                    };
                    let mode = s.view.mode;
                    self.say(format!("stereo: {mode:?}"));
                }
            }
            KeyCode::F1 => self.show_overlay = !self.show_overlay,
            // The timeline (also on the tool panel).
            KeyCode::Space => {
                fl.playback_mut().toggle_play();
            }
            KeyCode::KeyK => {
                fl.playback_mut().store_key();
            }
            // Recording (the panel's perform row): a performance while
            // playing, the skeleton's reaction while editing.
            KeyCode::KeyR => {
                let on = !fl.playback().recording;
                fl.playback_mut().set_recording(on);
            }
            // Holding the flesh (right mouse): keep its pulled shape at
            // this posture as a morph target (the headset's A).
            KeyCode::KeyT => match fl.keep_morph_target() {
                Ok(said) => self.say(said),
                Err(e) => self.say(e),
            },
            KeyCode::Comma => {
                fl.playback_mut().select_previous_key();
            }
            KeyCode::Period => {
                fl.playback_mut().select_next_key();
            }
            KeyCode::Backspace => {
                fl.playback_mut().stop();
            }
            KeyCode::KeyL => {
                let name = fl
                    .character()
                    .skeleton
                    .joints
                    .get(fl.toolbox().state.current_joint)
                    .map(|j| j.name.clone())
                    .unwrap_or_default();
                let r = fl.edit(|tools, ctx| tools.toggle_lock_current(ctx));
                match r {
                    Ok(true) => self.say(format!("'{name}' locked against edits (L unlocks)")),
                    Ok(false) => self.say(format!("'{name}' unlocked")),
                    Err(e) => self.say(format!("cannot lock: {e}")),
                }
            }
            KeyCode::KeyP => {
                let shown = fl.panel().anchor != PanelAnchor::Hidden;
                fl.set_panel_anchor(if shown {
                    PanelAnchor::Hidden
                } else {
                    desk_panel_anchor(&self.options.calibration)
                });
                self.say(format!("tool panel {}", on_off(!shown)));
            }
            KeyCode::F2
            | KeyCode::F3
            | KeyCode::F4
            | KeyCode::F5
            | KeyCode::F6
            | KeyCode::F7
            | KeyCode::F8 => {
                self.view_key(code);
            }
            KeyCode::Escape => event_loop.exit(),
            _ => {}
        }
    }

    /// F2–F8: what the view shows.
    fn view_key(&mut self, code: KeyCode) {
        if code == KeyCode::F7 {
            let Some(fl) = self.frame_loop.as_mut() else {
                return;
            };
            let panel = fl.panel_mut();
            panel.show_plots = !panel.show_plots;
            let shown = panel.show_plots;
            return self.say(format!("live plots {}", on_off(shown)));
        }
        // The layers are the panel's view rows (the headset's way to them);
        // the frame draws with them.
        let row = match code {
            KeyCode::F2 => Some(ViewRow::Wireframe),
            KeyCode::F4 => Some(ViewRow::Muscles),
            KeyCode::F5 => Some(ViewRow::Bands),
            KeyCode::F6 => Some(ViewRow::Xray),
            KeyCode::F8 => Some(ViewRow::Fat),
            _ => None,
        };
        if let Some(row) = row {
            let Some(fl) = self.frame_loop.as_mut() else {
                return;
            };
            let said = row.press(&mut fl.panel_mut().panel.view);
            return self.say(said);
        }
        if let Some(s) = self.surface.as_mut() {
            let style = &mut s.view.scene.style;
            style.map = style.map.next();
            // The legend stays in the overlay while a map is shown.
            let said = match style.map {
                crate::render::SkinMap::Paint => "skin coloured by its paint".to_string(),
                map => format!("skin coloured by {map:?}").to_lowercase(),
            };
            self.say(said);
        }
    }

    /// Ctrl+S: the character with its skin where it hangs now, atomically.
    fn save(&mut self) {
        let Some(fl) = self.frame_loop.as_mut() else {
            return;
        };
        let Some(path) = self.options.document.clone() else {
            self.say("nothing to save to: open a character file (plasticine desk FILE)");
            return;
        };
        fl.sync_skins();
        match save_character(&path, fl.character()) {
            Ok(()) => {
                if let Some(a) = self.autosaver.as_mut() {
                    let _ = a.mark_saved(fl.character(), SystemTime::now());
                }
                self.say(format!("saved {}", path.display()));
            }
            Err(e) => self.say(format!("NOT saved: {e}")),
        }
    }

    fn frame(&mut self, event_loop: &ActiveEventLoop) {
        if self
            .options
            .stop
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst))
        {
            event_loop.exit();
            return;
        }
        let now = Instant::now();
        let dt = self
            .last_frame
            .map_or(0.0, |t| (now - t).as_secs_f32().min(0.1));
        self.last_frame = Some(now);
        let axes = self.keys_axes.combined(self.gamepad_axes());
        let extra = self.overlay_extra();
        let show_overlay = self.show_overlay;
        let (Some(fl), Some(surface)) = (self.frame_loop.as_mut(), self.surface.as_mut()) else {
            return;
        };
        surface.view.extra_overlay = extra;
        surface.view.show_overlay = show_overlay;
        if !axes.is_idle() {
            let pivot = self.options.calibration.screen.centre();
            fl.fly(axes.delta(dt, pivot));
        }
        let last = self
            .options
            .frames
            .is_some_and(|n| self.report.frames + 1 >= n);
        if last && self.options.screenshot.is_some() {
            surface.capture = true;
        }
        match fl.frame(&mut self.tracker, surface) {
            Ok(_) => self.report.frames += 1,
            Err(e) => tracing::warn!("{e}"),
        }
        let panel_messages = fl.take_panel_messages();
        if let Some(r) = self.recorder.as_mut()
            && let Err(e) = r.update(fl.history())
        {
            tracing::warn!("{e}");
        }
        if let Some(a) = self.autosaver.as_mut() {
            match a.maybe_save(fl.character(), SystemTime::now()) {
                Ok(Some(path)) => self.report.autosaves.push(path),
                Ok(None) => {}
                Err(e) => tracing::warn!("autosave failed: {e}"),
            }
        }
        for m in panel_messages {
            self.say(m);
        }
        if last {
            event_loop.exit();
        }
    }

    fn overlay_extra(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.tracker.has_source() {
            lines.push(self.tracker.sources_line());
        }
        if let Some(fl) = &self.frame_loop {
            lines.push(format!(
                "tool {:?}  joint {}  undo {}",
                fl.toolbox().tool(),
                fl.toolbox().state.current_joint,
                fl.history().undo_depth()
            ));
        }
        if let Some((m, at)) = &self.message
            && at.elapsed() < Duration::from_secs(4)
        {
            lines.push(m.clone());
        }
        // A heat map's legend stays while it is shown, its colour bar
        // under it (the last line).
        if let Some(s) = &self.surface {
            let style = &s.view.scene.style;
            if style.map != crate::render::SkinMap::Paint {
                lines.push(style.map.legend(style.fat_map_max));
            }
        }
        lines
    }
}

impl ApplicationHandler for DeskApp {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.surface.is_some() {
            return;
        }
        let title = match &self.options.document {
            Some(p) => format!("Plasticine: {}", p.display()),
            None => "Plasticine".to_string(),
        };
        match Surface::create(event_loop, &self.options, &title) {
            Ok(s) => {
                self.report.adapter = s.ctx.summary().to_string();
                let size = s.window.inner_size();
                self.tracker.resize((size.width, size.height));
                self.surface = Some(s);
            }
            Err(e) => return self.fail(event_loop, e),
        }
        if let Some(character) = self.character.take() {
            let mut fl = FrameLoop::new(character, self.options.settings.clone());
            fl.set_undo_budget(self.options.undo_budget);
            fl.keep_undo_record(self.options.record.is_some());
            fl.set_panel_anchor(desk_panel_anchor(&self.options.calibration));
            if let Some(bake) = &self.options.bake {
                let m = fl.playback_mut().load_bake(bake);
                println!("{m}");
            }
            if let Some(ground) = self.options.ground {
                let _ = fl.sim().send(SimMessage::MakeDynamic(ground));
            }
            fl.set_vehicle(
                self.options
                    .calibration
                    .world_from_tracker(glam::Mat4::IDENTITY),
            );
            if !self.options.step_delay.is_zero() {
                let _ = fl
                    .sim()
                    .send(SimMessage::SetStepDelay(self.options.step_delay));
            }
            if let Some(a) = self.autosaver.as_mut() {
                let _ = a.mark_saved(fl.character(), SystemTime::now());
            }
            self.frame_loop = Some(fl);
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                self.tracker.resize((size.width, size.height));
                if let Some(s) = self.surface.as_mut() {
                    s.resize(size.width, size.height);
                }
            }
            WindowEvent::ModifiersChanged(m) => {
                self.modifiers = m.state();
                // Shift held: precision mode, the cursor's motion scaled
                // down and smoothed for fine work.
                if let Some(fl) = self.frame_loop.as_mut() {
                    fl.toolbox_mut().precision.enabled = self.modifiers.shift_key();
                }
            }
            WindowEvent::KeyboardInput { event, .. } => {
                if let PhysicalKey::Code(code) = event.physical_key
                    && !event.repeat
                {
                    self.key(event_loop, code, event.state == ElementState::Pressed);
                }
            }
            WindowEvent::CursorMoved { position, .. } => self
                .tracker
                .mouse_moved(position.x as f32, position.y as f32),
            WindowEvent::MouseInput { state, button, .. } => {
                let pressed = state == ElementState::Pressed;
                match button {
                    MouseButton::Left => self.tracker.trigger = pressed,
                    MouseButton::Right => {
                        // Shift + right pushes the character; right alone
                        // grabs the flesh. Either ends on release.
                        use crate::input::buttons::{GRIP, PUSH};
                        if pressed {
                            self.tracker.right_buttons |= if self.modifiers.shift_key() {
                                PUSH
                            } else {
                                GRIP
                            };
                        } else {
                            self.tracker.right_buttons &= !(GRIP | PUSH);
                        }
                    }
                    _ => {}
                }
            }
            WindowEvent::MouseWheel { delta, .. } => {
                let notches = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
                };
                self.tracker.wheel(notches);
            }
            WindowEvent::RedrawRequested => self.frame(event_loop),
            _ => {}
        }
    }

    fn about_to_wait(&mut self, _event_loop: &ActiveEventLoop) {
        if let Some(s) = &self.surface {
            s.window.request_redraw();
        }
    }

    fn exiting(&mut self, _event_loop: &ActiveEventLoop) {
        if let Some(s) = self.surface.as_mut()
            && let (Some(img), Some(path)) = (s.captured.take(), &self.options.screenshot)
        {
            match img.save_png(path) {
                Ok(()) => self.report.screenshot = Some(path.clone()),
                Err(e) => tracing::warn!("screenshot not saved: {e}"),
            }
        }
        if let Some(fl) = self.frame_loop.take() {
            self.report.summary = vec![fl.log().summary().to_string()];
            if let Some(r) = self.recorder.as_mut() {
                self.report.summary.push(r.finish(fl.history()));
            }
            if let Some(path) = &self.options.timings_csv
                && let Err(e) = fl.log().write_csv(path)
            {
                tracing::warn!("timings not saved: {e}");
            }
        }
        // The GPU objects go before the window they draw into.
        self.surface = None;
    }
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_runtime() -> Result<u32, XrError> {
        Err(XrError::NoRuntime {
            detail: "XR_ERROR_RUNTIME_UNAVAILABLE".into(),
        })
    }

    /// `auto` falls back to the fixed head and says why; `openxr` fails
    /// with the reason; `none` does not even try.
    #[test]
    fn the_tracker_choice_falls_back_only_when_asked_to() {
        let (t, line) =
            choose_tracker(TrackerChoice::Auto, no_runtime, |_| unreachable!()).unwrap();
        assert!(t.is_none());
        assert!(
            line.contains("head is fixed at the calibrated position"),
            "{line}"
        );
        assert!(line.contains("no active OpenXR runtime"), "{line}");

        let e = choose_tracker(TrackerChoice::OpenXr, no_runtime, |_| unreachable!()).unwrap_err();
        assert!(matches!(e, XrError::NoRuntime { .. }));

        let (t, line) = choose_tracker(
            TrackerChoice::None,
            || -> Result<u32, XrError> { panic!("--tracker none must not open OpenXR") },
            |_| unreachable!(),
        )
        .unwrap();
        assert!(t.is_none() && line.contains("--tracker none"), "{line}");

        for choice in [TrackerChoice::Auto, TrackerChoice::OpenXr] {
            let (t, line) =
                choose_tracker(choice, || Ok(7u32), |n| format!("tracker {n}")).unwrap();
            assert_eq!((t, line.as_str()), (Some(7), "tracker 7"));
        }
    }
}
