//! Render-thread cost: CPU time per stereo frame
//! (geometry, uploads, encoding, submission) for the penguin at 64×64,
//! without and with the headset's panel painted every frame, the
//! upload cost of one skin snapshot, and the whole frame time (CPU and GPU)
//! at a modern headset's 2×2016×2240 for the penguin at 128×128. The GPU is
//! waited for outside the CPU timings, so they do not include the adapter's
//! work (which on lavapipe is CPU work on other threads).

use crate::app::OrbitRig;
use crate::character::Character;
use crate::gpu::GpuContext;
use crate::render::{
    Decorations, EyeCamera, OffscreenTarget, RenderError, SceneRenderer, SceneStyle, StereoMode,
};
use crate::snapshot::SceneSnapshot;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A snapshot of `character` at rest, framed by an orbiting stereo rig.
pub fn scene(character: Character) -> (SceneSnapshot, [EyeCamera; 2]) {
    let posture = character.skeleton.rest_posture();
    let snap = SceneSnapshot::of(Arc::new(character), posture, 0);
    let cams = OrbitRig::framing(&snap).eyes(0.4, 1.0, 0.064);
    (snap, cams)
}

fn stats(name: &str, mut samples: Vec<Duration>) -> Value {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean = samples.iter().map(|d| ms(*d)).sum::<f64>() / samples.len().max(1) as f64;
    let p95 = samples
        .get((samples.len() * 95 / 100).min(samples.len().saturating_sub(1)))
        .map_or(0.0, |d| ms(*d));
    json!({"name": name, "mean_ms": mean, "p95_ms": p95, "samples": samples.len()})
}

/// CPU time per stereo frame on the render thread for `snap` (eyes of
/// `eye_size`, composed side by side), over `frames` frames after a warm-up.
pub fn stereo_frame_cpu(
    ctx: &GpuContext,
    snap: &SceneSnapshot,
    cams: &[EyeCamera; 2],
    eye_size: (u32, u32),
    frames: usize,
) -> Result<Value, RenderError> {
    stereo_frame_cpu_with(
        ctx,
        snap,
        cams,
        (eye_size, frames),
        "render_stereo_frame_cpu",
        &mut Decorations::default,
    )
}

/// As [`stereo_frame_cpu`], with each frame's decorations made by
/// `decorate` inside the timing (the panel is painted on the thread that
/// renders).
pub fn stereo_frame_cpu_with(
    ctx: &GpuContext,
    snap: &SceneSnapshot,
    cams: &[EyeCamera; 2],
    (eye_size, frames): ((u32, u32), usize),
    name: &str,
    decorate: &mut dyn FnMut() -> Decorations,
) -> Result<Value, RenderError> {
    let mut r = SceneRenderer::new(ctx, OffscreenTarget::FORMAT)?;
    let out = (eye_size.0 * 2, eye_size.1);
    let target = OffscreenTarget::new(ctx, out);
    let overlay = vec!["render 0.00 ms  tracking age 0.0 ms".to_string()];
    let mut cpu = Vec::with_capacity(frames);
    let mut upload = Vec::with_capacity(frames);
    let mut encode = Vec::with_capacity(frames);
    let mut decorate_times = Vec::with_capacity(frames);
    let mut bytes = 0;
    for k in 0..frames + 3 {
        let t0 = Instant::now();
        let decorations = decorate();
        let decorated = t0.elapsed();
        let s = r.draw(
            snap,
            &decorations,
            cams,
            StereoMode::SideBySide,
            eye_size,
            Some((&target.view, out)),
            &overlay,
        );
        let t = t0.elapsed();
        ctx.wait_idle()?;
        if k >= 3 {
            cpu.push(t);
            upload.push(s.upload);
            decorate_times.push(decorated);
            encode.push(s.encode);
            bytes = s.upload_bytes;
        }
    }
    let mut v = stats(name, cpu);
    v["upload_mean_ms"] = stats("", upload)["mean_ms"].clone();
    v["encode_mean_ms"] = stats("", encode)["mean_ms"].clone();
    // Making the decorations: for the panel, egui's layout and tessellation.
    v["decorate_mean_ms"] = stats("", decorate_times)["mean_ms"].clone();
    v["upload_bytes"] = json!(bytes);
    v["eye_size"] = json!(format!("{}x{}", eye_size.0, eye_size.1));
    Ok(v)
}

/// Building and uploading one skin snapshot alone (the per-frame cost the
/// simulation adds to rendering).
pub fn skin_upload(
    ctx: &GpuContext,
    snap: &SceneSnapshot,
    frames: usize,
) -> Result<Value, RenderError> {
    let mut r = SceneRenderer::new(ctx, OffscreenTarget::FORMAT)?;
    r.style = SceneStyle {
        muscles: crate::render::MuscleStyle::Hidden,
        skeleton: false,
        floor: false,
        ..SceneStyle::default()
    };
    let mut times = Vec::with_capacity(frames);
    let mut bytes = 0;
    for k in 0..frames + 3 {
        let t0 = Instant::now();
        let g = r.geometry.build(snap, &r.style, &Decorations::default());
        bytes = r.gpu.upload(g);
        let t = t0.elapsed();
        ctx.wait_idle()?;
        if k >= 3 {
            times.push(t);
        }
    }
    let mut v = stats("skin_snapshot_upload", times);
    v["bytes"] = json!(bytes);
    Ok(v)
}

/// Whole stereo frames (CPU and GPU, waited for) at `eye_size` per eye.
pub fn stereo_frame_total(
    ctx: &GpuContext,
    snap: &SceneSnapshot,
    cams: &[EyeCamera; 2],
    eye_size: (u32, u32),
    frames: usize,
) -> Result<Value, RenderError> {
    let mut r = SceneRenderer::new(ctx, OffscreenTarget::FORMAT)?;
    let mut times = Vec::with_capacity(frames);
    for k in 0..frames + 2 {
        let t0 = Instant::now();
        // Headset-style: the eye images are the output (no desk layout).
        r.draw(
            snap,
            &Decorations::default(),
            cams,
            StereoMode::SideBySide,
            eye_size,
            None,
            &[],
        );
        ctx.wait_idle()?;
        if k >= 2 {
            times.push(t0.elapsed());
        }
    }
    let mut v = stats("render_stereo_frame_total", times);
    v["eye_size"] = json!(format!("{}x{}", eye_size.0, eye_size.1));
    Ok(v)
}

/// The headset's panel (every row, two columns, the live plots) as the
/// frame loop draws it at 90 frames a second, held half a metre in front of
/// the eyes: [`PanelDriver::view`] repaints it when its rows or the pointer
/// change, else every [`REPAINT_EVERY`](crate::app::REPAINT_EVERY).
///
/// [`PanelDriver::view`]: crate::app::PanelDriver::view
fn panel_decorations(
    character: &Character,
    cams: &[EyeCamera; 2],
) -> impl FnMut() -> Decorations + use<> {
    use crate::app::{PanelAnchor, PanelDriver};
    use crate::app::{SimStatus, SolverTrace};
    use crate::input::TrackedPose;
    use crate::input::{HandState, InputFrame};
    use crate::tools::{ControlPanel, TimelineStatus};
    let mut driver = PanelDriver::new(PanelAnchor::LeftHand);
    driver.lines = ControlPanel::default().lines(
        &crate::tools::Toolbox::default(),
        character,
        &crate::skin::SolverSettings::default(),
        &TimelineStatus::default(),
    );
    let head = cams[0].position;
    let sample = TrackedPose {
        head: (head, glam::Quat::IDENTITY),
        input: InputFrame {
            time: 0.0,
            right: HandState::at(head + glam::Vec3::new(0.2, -0.3, -0.3)),
            left: HandState::at(head + glam::Vec3::new(-0.1, -0.35, -0.5)),
        },
        sequence: 0,
        sampled_at: Instant::now(),
    };
    let start = Instant::now();
    let (mut frame, mut steps) = (0u64, 0u64);
    move || {
        frame += 1;
        steps += 20 + frame % 7;
        // A solver whose step wavers, at 90 frames a second.
        let t = frame as f64 / 90.0;
        let now = start + Duration::from_secs_f64(t);
        let sim = SimStatus {
            sim_time: t,
            time_ratio: 1.0,
            achieved_ratio: 1.0,
            fell_behind: false,
            paused: false,
            revision: 0,
            sequence: frame,
            step_wall: Duration::from_millis(4),
            step_delay: Duration::ZERO,
            message: None,
            message_count: 0,
            running: true,
            trace: SolverTrace {
                steps,
                rejections: frame / 30,
                skins: 3,
                energy: Some(1.0 + (t * 3.0).sin() * 0.1),
            },
            push_impulse: 0.0,
        };
        driver.record_live(now, &sim, None);
        let timings = [format!("frame {frame}")];
        Decorations {
            ui: driver.view(&sample, &glam::Mat4::IDENTITY, (Some(1), now), &timings),
            ..Decorations::default()
        }
    }
}

/// The render figures of `plasticine bench`, or one line saying why there
/// are none.
pub fn run(quick: bool) -> Vec<Value> {
    let ctx = match GpuContext::headless() {
        Ok(c) => c,
        Err(e) => return vec![json!({"name": "render", "skipped": e.to_string()})],
    };
    let summary = ctx.summary();
    let device = summary.device_type.clone();
    let frames = if quick { 10 } else { 100 };
    let mut out = Vec::new();
    let adapter = summary.to_string();
    let with = |r: Result<Value, RenderError>, extra: Value| match r {
        Ok(mut v) => {
            for (k, x) in extra.as_object().into_iter().flatten() {
                v[k] = x.clone();
            }
            v["adapter"] = json!(adapter);
            v
        }
        Err(e) => json!({"name": "render", "error": e.to_string()}),
    };
    match crate::samples::resampled("penguin", 64, 64) {
        Ok(c) => {
            let (snap, cams) = scene(c);
            out.push(with(
                stereo_frame_cpu(&ctx, &snap, &cams, (960, 1080), frames),
                json!({"skin": "64x64", "goal_ms": 2.0}),
            ));
            let mut panel = panel_decorations(&snap.character, &cams);
            out.push(with(
                stereo_frame_cpu_with(
                    &ctx,
                    &snap,
                    &cams,
                    ((960, 1080), frames),
                    "render_stereo_frame_cpu_with_panel",
                    &mut panel,
                ),
                json!({"skin": "64x64", "goal_ms": 2.0, "panel": "headset with plots, 90 frames a second"}),
            ));
            out.push(with(
                skin_upload(&ctx, &snap, frames),
                json!({"skin": "64x64"}),
            ));
        }
        Err(e) => out.push(json!({"name": "render", "error": e.to_string()})),
    }
    match crate::samples::resampled("penguin", 128, 128) {
        Ok(c) => {
            let (snap, cams) = scene(c);
            let eye = if quick { (504, 560) } else { (2016, 2240) };
            // The render thread's share of the whole frame below.
            out.push(with(
                stereo_frame_cpu(&ctx, &snap, &cams, eye, frames),
                json!({"skin": "128x128"}),
            ));
            out.push(with(
                stereo_frame_total(&ctx, &snap, &cams, eye, if quick { 3 } else { 20 }),
                json!({
                    "skin": "128x128",
                    "goal_ms": 3.0,
                    "device_type": device,
                    "note": "the goal is for a real GPU; on a CPU adapter (lavapipe) this measures software rendering"
                }),
            ));
        }
        Err(e) => out.push(json!({"name": "render", "error": e.to_string()})),
    }
    out
}
