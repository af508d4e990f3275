//! The frame loop's renderer: the fishtank stereo views of LEMAN §5.1 (each
//! eye's frustum through the calibrated physical screen, from the newest head
//! pose) drawn by the wgpu [`SceneRenderer`], into a window surface or an
//! offscreen target.

use super::frame_loop::{FrameInputs, FrameRenderer, RenderReport};
use super::render_failure::RenderFailure;
use crate::gpu::GpuContext;
use crate::input::HandState;
use crate::render::{
    Cursor, Decorations, EyeCamera, MuscleStyle, OffscreenTarget, RenderError, RgbaImage,
    SceneRenderer, SceneStyle, StereoMode,
};
use crate::tools::{MuscleView, ToolKind, ViewLayers};
use crate::view::{Calibration, stereo_views};
use glam::{Mat4, Quat};
use std::time::Instant;

/// Wand length for picking by pointing, in physical metres.
const WAND_LENGTH: f32 = 0.25;

/// Cursor colour per tool, so the hand shows which tool it holds.
pub fn tool_color(tool: ToolKind) -> [f32; 4] {
    match tool {
        ToolKind::Select => [0.9, 0.9, 0.9, 1.0],
        ToolKind::Sphere => [0.3, 0.6, 1.0, 1.0],
        ToolKind::Superellipse => [0.5, 0.4, 1.0, 1.0],
        ToolKind::Deform => [0.3, 0.85, 0.6, 1.0],
        ToolKind::Ik => [1.0, 0.6, 0.2, 1.0],
        ToolKind::Skin => [0.95, 0.75, 0.6, 1.0],
        ToolKind::Liposuction => [0.9, 0.9, 0.2, 1.0],
        ToolKind::Weights => [0.35, 0.55, 0.95, 1.0],
        ToolKind::Paint => [0.95, 0.35, 0.75, 1.0],
        ToolKind::Sculpt => [0.8, 0.55, 0.35, 1.0],
    }
}

/// Stereo views from a calibration, drawn with a [`SceneRenderer`].
pub struct ViewRenderer {
    /// The scene renderer that draws the eyes.
    pub scene: SceneRenderer,
    /// The calibration whose screen and eye offsets make each eye's frustum.
    pub calibration: Calibration,
    /// How the two eyes share the output (M cycles it at the desk).
    pub mode: StereoMode,
    /// Lines the front end adds under the frame loop's (tool, messages).
    pub extra_overlay: Vec<String>,
    /// Whether the overlay lines are drawn (F1 toggles it at the desk).
    pub show_overlay: bool,
    overlay: Vec<String>,
}

impl ViewRenderer {
    /// A renderer drawing with `scene` for `calibration`'s screen, in stereo layout `mode`, with
    /// the overlay shown.
    pub fn new(scene: SceneRenderer, calibration: Calibration, mode: StereoMode) -> Self {
        Self {
            scene,
            calibration,
            mode,
            extra_overlay: Vec::new(),
            show_overlay: true,
            overlay: Vec::new(),
        }
    }

    /// The eyes' cameras for a frame: the world-space head of `inputs` taken
    /// back to tracker space through the vehicle, then the calibrated screen
    /// and eye offsets (the frame loop's vehicle is `world_from_tracker`,
    /// which already contains the calibration's registration).
    pub fn cameras(&self, inputs: &FrameInputs) -> [EyeCamera; 2] {
        let world_from_tracker = inputs.vehicle;
        let tracker_from_world = world_from_tracker.inverse();
        let (_, vehicle_rotation, _) = world_from_tracker.to_scale_rotation_translation();
        let head_tracker = (
            tracker_from_world.transform_point3(inputs.head.0),
            (vehicle_rotation.inverse() * inputs.head.1).normalize(),
        );
        let registration = self.calibration.tracker_to_world.world_from_tracker();
        let world_from_vehicle = world_from_tracker * registration.inverse();
        stereo_views(&self.calibration, head_tracker, world_from_vehicle).map(|v| EyeCamera {
            view_proj: v.view_projection(),
            position: v.eye,
        })
    }

    /// Tool cursors with their wands, and the current joint.
    pub fn decorations(&self, inputs: &FrameInputs) -> Decorations {
        decorations(inputs)
    }

    /// Draws `inputs` into `target` (or only the eye images when `None`).
    pub fn draw(
        &mut self,
        inputs: &FrameInputs,
        target: Option<(&wgpu::TextureView, (u32, u32))>,
        output_size: (u32, u32),
    ) -> crate::render::FrameStats {
        let cameras = self.cameras(inputs);
        let mut decorations = self.decorations(inputs);
        let eye_size = self.mode.eye_size(output_size);
        let snapshot = inputs.snapshot;
        let posture = draw_posture(inputs);
        apply_view(&inputs.view, &mut self.scene.style);
        decorations.skin_contact = skin_contact_map(self.scene.style.map, snapshot);
        self.overlay.clear();
        if self.show_overlay {
            self.overlay.extend(inputs.overlay.iter().cloned());
            self.overlay.extend(self.extra_overlay.iter().cloned());
        }
        self.scene.draw_posed(
            snapshot,
            posture.as_deref(),
            &decorations,
            &cameras,
            self.mode,
            eye_size,
            target,
            &self.overlay,
        )
    }
}

/// The push cursor's colour: a palm.
const PUSH_COLOR: [f32; 4] = [0.95, 0.75, 0.6, 1.0];

/// Tool cursors with their wands (sized in physical metres, whatever the
/// vehicle's scale), and the current joint: what every front end draws
/// over the scene.
pub fn decorations(inputs: &FrameInputs) -> Decorations {
    let scale = world_scale(&inputs.vehicle);
    let hand = |h: &HandState, color: [f32; 4], wand: f32| Cursor {
        position: h.position(),
        orientation: h.orientation(),
        radius: 0.006 * scale,
        wand: wand * scale,
        color,
        active: h.triggered(),
    };
    let right = &inputs.hands.right;
    let right_cursor = if super::flesh_push::pushing(right.buttons) {
        // The push: the hand's capsule's tip, as big as the ball that
        // pushes (world units, as the simulation takes it).
        Cursor {
            radius: super::flesh_push::PUSH_RADIUS,
            ..hand(right, PUSH_COLOR, 0.0)
        }
    } else {
        hand(right, tool_color(inputs.tool), WAND_LENGTH)
    };
    let mut cursors = vec![
        right_cursor,
        // The left hand flies the vehicle: a small grey marker, no wand.
        hand(&inputs.hands.left, [0.5, 0.5, 0.55, 1.0], 0.0),
    ];
    // Skin points the skin tool is re-binding: small bright markers.
    cursors.extend(inputs.selected_points.iter().map(|&p| Cursor {
        position: p,
        orientation: Quat::IDENTITY,
        radius: 0.004 * scale,
        wand: 0.0,
        color: [1.0, 0.9, 0.1, 1.0],
        active: true,
    }));
    Decorations {
        cursors,
        current_joint: Some(inputs.current_joint)
            .filter(|&j| j < inputs.snapshot.character.skeleton.joints.len()),
        ui: inputs.ui.cloned(),
        skin_contact: Vec::new(),
    }
}

/// For the contact map (`map`, else nothing): how much each point of each
/// of the snapshot's skins rests on another skin (0 to 1, see
/// `render::heat::skin_contact`).
pub fn skin_contact_map(
    map: crate::render::SkinMap,
    snapshot: &crate::snapshot::SceneSnapshot,
) -> Vec<Vec<f32>> {
    if map != crate::render::SkinMap::Contact {
        return Vec::new();
    }
    let skins: Vec<(usize, usize, &[glam::Vec3])> = snapshot
        .skins
        .iter()
        .map(|s| (s.m, s.n, &s.positions[..]))
        .collect();
    let gap = crate::skin::SKIN_GAP;
    crate::skin::skin_gaps(&skins, gap + crate::render::CONTACT_REACH)
        .into_iter()
        .map(|g| {
            g.into_iter()
                .map(|d| crate::render::skin_contact(d, gap))
                .collect()
        })
        .collect()
}

/// The panel's view layers into the renderer's style (the rest of the
/// style, the colour map and what is never toggled, stays).
pub fn apply_view(view: &ViewLayers, style: &mut SceneStyle) {
    style.wireframe = view.wireframe;
    style.bands = view.bands;
    style.fat = view.fat;
    style.xray = view.xray;
    style.muscles = match view.muscles {
        MuscleView::Opaque => MuscleStyle::Opaque,
        MuscleView::Translucent => MuscleStyle::Translucent,
        MuscleView::Hidden => MuscleStyle::Hidden,
    };
}

/// The posture to draw the skeleton in: the edit side's (no simulation
/// lag: LEMAN manipulates the skeleton in real time) when it fits the
/// snapshot's skeleton, with the root where the simulation carried it when
/// the skeleton responds (it falls and is pushed); the skin is always the
/// snapshot's.
pub fn draw_posture<'a>(
    inputs: &FrameInputs<'a>,
) -> Option<std::borrow::Cow<'a, crate::character::Posture>> {
    let edit = inputs.edit_posture;
    if edit.angles.len() != inputs.snapshot.posture.angles.len() {
        return None;
    }
    Some(match inputs.snapshot.with_simulated_root(edit) {
        Some(p) => std::borrow::Cow::Owned(p),
        None => std::borrow::Cow::Borrowed(edit),
    })
}

/// Uniform scale of a similarity transform.
fn world_scale(m: &Mat4) -> f32 {
    m.x_axis.truncate().length()
}

/// Renders frames offscreen: the frame loop with no window (tests, benches,
/// the latency measurement with the real renderer).
pub struct OffscreenFrameRenderer {
    /// The stereo view renderer that draws each frame.
    pub view: ViewRenderer,
    /// The offscreen image the frames are composed into.
    pub target: OffscreenTarget,
    ctx: GpuContext,
}

impl OffscreenFrameRenderer {
    /// An offscreen renderer on `ctx` for `calibration`'s screen, in stereo layout `mode`, with a
    /// target of `size` pixels (width, height).
    pub fn new(
        ctx: &GpuContext,
        calibration: Calibration,
        mode: StereoMode,
        size: (u32, u32),
    ) -> Result<Self, RenderError> {
        let scene = SceneRenderer::new(ctx, OffscreenTarget::FORMAT)?;
        Ok(Self {
            view: ViewRenderer::new(scene, calibration, mode),
            target: OffscreenTarget::new(ctx, size),
            ctx: ctx.clone(),
        })
    }

    /// The last composed frame (blocking read-back).
    pub fn read(&self) -> Result<RgbaImage, RenderError> {
        self.target.read(&self.ctx)
    }
}

impl FrameRenderer for OffscreenFrameRenderer {
    fn render(&mut self, inputs: &FrameInputs) -> Result<RenderReport, RenderFailure> {
        let t0 = Instant::now();
        let size = self.target.size;
        self.view
            .draw(inputs, Some((&self.target.view, size)), size);
        Ok(RenderReport {
            cpu_encode: t0.elapsed(),
            submitted_at: Instant::now(),
        })
    }
}
