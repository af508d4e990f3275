//! `plasticine bench --only modal`: the modal flesh (DyRT) of the penguin
//! with a part per joint that carries muscles, on lattices of increasing
//! size: the precompute per part (lattice, K, M, eigenmodes, transfer) and
//! the CPU cost per frame step (the skeleton's forward kinematics, every
//! part's transfer and IIR filters), and the cost of evaluating the field
//! the muscles ride (the displacement of every lattice vertex and the
//! muscles' rigid fits), which a frame pays once per skin stage it needs.

use crate::character::resample;
use crate::character::{Flesh, ModalFlesh};
use crate::gpu::GpuContext;
use crate::modal::{MODAL_STEP, ModalSim};
use crate::morph::{MorphFrame, MorphMesh};
use crate::render::{
    Decorations, EyeCamera, MorphMeshGpu, MuscleStyle, OffscreenTarget, SceneRenderer, SceneStyle,
    StereoMode,
};
use crate::samples;
use crate::skin::SkeletonDriver;
use crate::skin_mesh::grid_triangles;
use crate::snapshot::SceneSnapshot;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// One JSON line per lattice size, then the limb and the mesh case.
pub fn figures(quick: bool) -> Vec<serde_json::Value> {
    let sizes: &[usize] = if quick { &[1200] } else { &[1200, 3000, 8000] };
    let mut out: Vec<_> = sizes.iter().filter_map(|&v| case(v, quick)).collect();
    out.push(limb_case(if quick { [20, 6, 6] } else { [52, 16, 16] }));
    out.extend(gpu_figures(quick));
    out
}

/// The mesh case alone: the figures of the modal flesh that a GPU changes.
pub fn gpu_figures(quick: bool) -> Vec<serde_json::Value> {
    mesh_case(if quick { 10_000 } else { 100_000 })
        .into_iter()
        .collect()
}

/// DyRT's own figure (§6: a 17,953-vertex character, 3 parts × 5 modes):
/// a humanoid (the torso on legs, with a head: `samples::FIGURE`)
/// with a part per bone (every joint with a child, twelve) of 16 modes,
/// its skins resampled to about `vertices` points together and drawn as
/// one modal mesh. Per frame: the CPU's transfer and filters, the bytes a
/// frame uploads to the GPU (the uniform of the palette and amplitudes),
/// the GPU's pose pass (on whatever adapter there is; lavapipe is a CPU)
/// and that of the same mesh with no modes (plain skinning),
/// and the same superposition on the CPU, the fallback; then the render
/// thread's cost of a whole frame of that mesh (`SceneRenderer::draw`: the
/// pose pass recorded, or the CPU's pose and upload where there is none).
fn mesh_case(vertices: usize) -> Option<serde_json::Value> {
    let mut c = samples::build(samples::FIGURE, 16, 16).ok()?;
    let mut modal = ModalFlesh::for_character(&c);
    modal.parts = ModalFlesh::part_per_bone(&c);
    c.flesh = Flesh::Modal(modal);
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let posture_at = |t: f64| driver.posture_at(t);
    let start = Instant::now();
    let mut sim = ModalSim::new(&c, &posture_at, 0.0).ok()?;
    let precompute = start.elapsed().as_secs_f64();
    let part_count = sim.parts().count();
    let modes: usize = sim.parts().map(|p| p.omega.len()).sum();

    // The skins at a resolution that makes `vertices` points together.
    let per_skin = vertices / c.skins.len().max(1);
    let side = (per_skin as f64).sqrt().round() as usize;
    let (mut positions, mut triangles) = (Vec::new(), Vec::new());
    for skin in &c.skins {
        let fine = resample(skin, side, side).ok()?;
        let base = positions.len() as u32;
        positions.extend_from_slice(&fine.points.position);
        triangles.extend(
            grid_triangles(side, side, false)
                .into_iter()
                .map(|t| t.map(|i| i + base)),
        );
    }
    let start = Instant::now();
    let mesh = Arc::new(sim.embed_mesh(&positions, &triangles));
    let embed = start.elapsed().as_secs_f64();

    let frames = 120;
    let start = Instant::now();
    for k in 1..=frames {
        sim.advance_within(&c, posture_at, k as f64 * MODAL_STEP, None);
    }
    let per_frame = start.elapsed().as_secs_f64() / frames as f64;
    let t = sim.time();
    let placements = sim.placements(&c, &driver.posture_at(t));
    let q = sim.amplitudes().to_vec();
    let start = Instant::now();
    let reps = 3;
    for _ in 0..reps {
        std::hint::black_box(mesh.positions(&placements, &q));
        std::hint::black_box(mesh.normals(&placements, &q));
    }
    let cpu_pose = start.elapsed().as_secs_f64() / reps as f64;

    let mut line = json!({
        "name": "modal",
        "case": "mesh",
        "character": "figure",
        "vertices": positions.len(),
        "lattice_vertices": sim.lattice().vertex_count(),
        "parts": part_count,
        "modes": modes,
        "modes_per_part": modes as f64 / part_count.max(1) as f64,
        "modes_per_vertex": mesh.shape.len() as f64 / positions.len().max(1) as f64,
        "precompute_s_per_part": precompute / part_count.max(1) as f64,
        "embed_s": embed,
        "cpu_us_per_frame": per_frame * 1e6,
        "cpu_pose_ms": cpu_pose * 1e3,
        "threads": rayon::current_num_threads(),
    });
    if let Ok(ctx) = GpuContext::headless() {
        // The pose pass's time per frame (uniform upload, record, submit,
        // until the GPU is idle).
        let pose_ms = |gpu: &MorphMeshGpu| {
            let _ = gpu.pose(&ctx, &placements, &q); // warm up
            let frames = 10;
            let start = Instant::now();
            for _ in 0..frames {
                gpu.set_frame(&ctx, &placements, &q);
                let mut encoder = ctx
                    .device
                    .create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
                gpu.encode(&mut encoder);
                ctx.queue.submit(Some(encoder.finish()));
            }
            let _ = ctx.wait_idle();
            start.elapsed().as_secs_f64() / frames as f64 * 1e3
        };
        // The same mesh with no mode on any vertex: plain skinning, the
        // baseline of the "modal vertex work over plain skinning".
        let skinned_only = MorphMesh {
            span: vec![[0, 0]; mesh.rest.len()],
            start: vec![0; mesh.rest.len() + 1],
            shape: Vec::new(),
            normal_shape: Vec::new(),
            ..(*mesh).clone()
        };
        let joints = c.skeleton.joints.len();
        match (
            MorphMeshGpu::new(&ctx, &mesh, joints),
            MorphMeshGpu::new(&ctx, &skinned_only, joints),
        ) {
            (Ok(gpu), Ok(plain)) => {
                let upload = gpu.set_frame(&ctx, &placements, &q);
                let (modal_ms, plain_ms) = (pose_ms(&gpu), pose_ms(&plain));
                line["upload_bytes_per_frame"] = json!(upload);
                line["gpu_pose_ms"] = json!(modal_ms);
                line["gpu_skinning_only_ms"] = json!(plain_ms);
                line["gpu_modes_over_skinning_ms"] = json!(modal_ms - plain_ms);
                line["gpu_static_bytes"] = json!(gpu.static_bytes);
                line["adapter"] = json!(ctx.summary().to_string());
            }
            (Err(e), _) | (_, Err(e)) => line["gpu"] = json!(e.to_string()),
        }
        let mut pose = sim.pose(&c, &driver.posture_at(t), t);
        pose.morph = Some(MorphFrame {
            mesh: mesh.clone(),
            joints: placements,
            weights: q,
        });
        let mut snapshot = SceneSnapshot::of(Arc::new(c), driver.posture_at(t), 0);
        snapshot.flesh = Some(Arc::new(pose));
        for (on_gpu, name) in [
            (true, "render_thread_ms"),
            (false, "render_thread_cpu_pose_ms"),
        ] {
            if let Some(ms) = render_thread_ms(&ctx, &snapshot, &mesh, on_gpu) {
                line[name] = json!(ms);
            }
        }
    }
    Some(line)
}

/// The render thread's time (building, uploading, recording and submitting)
/// per mono frame of `snapshot` with only its flesh's mesh shown, posed on
/// the GPU or (`on_gpu` false) on the CPU; the GPU's own work is not in it.
fn render_thread_ms(
    ctx: &GpuContext,
    snapshot: &SceneSnapshot,
    mesh: &MorphMesh,
    on_gpu: bool,
) -> Option<f64> {
    let mut r = SceneRenderer::new(ctx, OffscreenTarget::FORMAT).ok()?;
    r.style = SceneStyle {
        skin: false,
        skeleton: false,
        bands: false,
        floor: false,
        muscles: MuscleStyle::Opaque,
        ..SceneStyle::default()
    };
    r.morph_on_gpu = on_gpu;
    let (lo, hi) = mesh.rest.iter().fold(
        (glam::DVec3::splat(f64::MAX), glam::DVec3::splat(f64::MIN)),
        |(l, h), p| (l.min(*p), h.max(*p)),
    );
    let (centre, reach) = (((lo + hi) * 0.5).as_vec3(), (hi - lo).length() as f32);
    let eye = centre + glam::Vec3::new(0.0, 0.0, 1.5 * reach);
    let camera = EyeCamera {
        view_proj: glam::camera::rh::proj::directx::perspective(0.9, 1.0, 0.05, 20.0)
            * glam::camera::rh::view::look_at_mat4(eye, centre, glam::Vec3::Y),
        position: eye,
    };
    let size = (256, 256);
    let target = OffscreenTarget::new(ctx, size);
    let frame = |r: &mut SceneRenderer| {
        let stats = r.draw(
            snapshot,
            &Decorations::default(),
            &[camera; 2],
            StereoMode::Mono,
            size,
            Some((&target.view, size)),
            &[],
        );
        let _ = ctx.wait_idle();
        stats.upload + stats.encode
    };
    frame(&mut r); // builds the GPU mesh
    let frames = 5;
    let total: std::time::Duration = (0..frames).map(|_| frame(&mut r)).sum();
    Some(total.as_secs_f64() / frames as f64 * 1e3)
}

/// The precompute goal (≤ 5 s per 15k-vertex part, DyRT's thigh):
/// one part of a thigh-sized box lattice (0.4 m long, 0.12 m square, of
/// `cells`; 15,317 vertices at 52 × 16 × 16) held by its bone at one end,
/// of modal flesh's default material and modes. Timed: the lattice and
/// its assembly (K, lumped M), and the part's modes (the free block, its
/// factor and eigensolve, the transfers).
fn limb_case(cells: [usize; 3]) -> serde_json::Value {
    use crate::character::{MODAL_YOUNG, ModalPart};
    use crate::fem::{Bone, FemBody, FemSettings, Lattice, Material};
    use crate::modal::{PartSource, part_modes};
    use glam::DVec3;
    let h = 0.4 / cells[0] as f64;
    let start = Instant::now();
    let mut lattice = Lattice::grid_box(
        DVec3::new(0.0, -0.06, -0.06),
        DVec3::new(h, 0.12 / cells[1] as f64, 0.12 / cells[2] as f64),
        cells,
    );
    lattice.bones = vec![Bone {
        joint: 0,
        child: None,
        head: DVec3::ZERO,
        tail: DVec3::X * h,
    }];
    for a in 0..lattice.vertex_count() {
        if lattice.vertex_coords[a][0] == 0 {
            lattice.bone_of_vertex[a] = Some(0);
        }
    }
    let material = Material {
        young: MODAL_YOUNG,
        ..Material::FLESH
    };
    let body = FemBody::uniform(lattice, material, FemSettings::default());
    let assemble = start.elapsed().as_secs_f64();
    let owner = vec![0; body.vertex_count()];
    let part = ModalPart::new("thigh");
    let source = PartSource {
        lattice: &body.lattice,
        owner: &owner,
        matrices: &body.global,
        alpha: 0.0,
        beta: 1e-3,
    };
    let start = Instant::now();
    let modes = part_modes(0, &part, source);
    let solve = start.elapsed().as_secs_f64();
    match modes {
        Ok(p) => json!({
            "name": "modal_part",
            "shape": "thigh box",
            "lattice_vertices": body.vertex_count(),
            "free_vertices": p.free.len(),
            "modes_asked": part.modes,
            "modes": p.omega.len(),
            "modes_dropped": p.dropped,
            "lowest_hz": p.omega.first().map(|w| w / std::f64::consts::TAU),
            "assemble_s": assemble,
            "modes_s": solve,
            "precompute_s_per_part": assemble + solve,
            "threads": rayon::current_num_threads(),
        }),
        Err(e) => json!({"name": "modal_part", "error": e.to_string()}),
    }
}

fn case(target_vertices: usize, quick: bool) -> Option<serde_json::Value> {
    let mut c = samples::bare("penguin")?;
    let mut modal = ModalFlesh::for_character(&c);
    modal.fem.target_vertices = target_vertices;
    c.flesh = Flesh::Modal(modal);
    let driver = SkeletonDriver::Keys(c.key_postures.clone());
    let posture_at = |t: f64| driver.posture_at(t);
    let start = Instant::now();
    let mut sim = match ModalSim::new(&c, &posture_at, 0.0) {
        Ok(s) => s,
        Err(e) => return Some(json!({"name": "modal", "error": e.to_string()})),
    };
    let precompute = start.elapsed().as_secs_f64();
    let parts = sim.parts().count();
    let modes: usize = sim.parts().map(|p| p.omega.len()).sum();
    let free: usize = sim.parts().map(|p| p.free.len()).sum();
    let frames = if quick { 120 } else { 360 };
    let start = Instant::now();
    for k in 1..=frames {
        sim.advance_within(&c, posture_at, k as f64 * MODAL_STEP, None);
    }
    let per_frame = start.elapsed().as_secs_f64() / frames as f64;
    let queries = if quick { 20 } else { 100 };
    let t = sim.time();
    let posture = driver.posture_at(t);
    let start = Instant::now();
    for _ in 0..queries {
        std::hint::black_box(sim.muscle_offsets(&c, &posture, t));
    }
    let per_query = start.elapsed().as_secs_f64() / queries as f64;
    Some(json!({
        "name": "modal",
        "character": "penguin",
        "lattice_vertices": sim.lattice().vertex_count(),
        "free_vertices": free,
        "parts": parts,
        "modes": modes,
        "modes_per_part": modes as f64 / parts.max(1) as f64,
        "skipped": sim.skipped().iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        "substeps": sim.substeps(),
        "precompute_s": precompute,
        "precompute_s_per_part": precompute / parts.max(1) as f64,
        "cpu_us_per_frame": per_frame * 1e6,
        "muscle_field_us": per_query * 1e6,
        "threads": rayon::current_num_threads(),
    }))
}
