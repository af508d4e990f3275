//! The stereo renderer on a real wgpu adapter (lavapipe in CI): the
//! character is lit in both eyes, the eyes differ by the parallax the camera
//! geometry predicts, and each desk layout puts each eye where it belongs.

use glam::{Quat, Vec3, Vec4};
use plasticine::gpu::GpuContext;
use plasticine::render::*;
use plasticine::snapshot::SceneSnapshot;
use std::path::Path;
use std::sync::Arc;

fn context() -> GpuContext {
    GpuContext::headless().expect(
        "a wgpu adapter is needed (lavapipe: apt-get install mesa-vulkan-drivers libvulkan1)",
    )
}

fn penguin_snapshot() -> SceneSnapshot {
    let ch = plasticine::io::load_character(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/assets/penguin.ron"
    )))
    .expect("penguin loads");
    let posture = ch.skeleton.rest_posture();
    SceneSnapshot::of(Arc::new(ch), posture, 0)
}

fn camera(eye: Vec3, target: Vec3, aspect: f32) -> EyeCamera {
    let proj = glam::camera::rh::proj::directx::perspective(0.9, aspect, 0.05, 20.0);
    EyeCamera {
        view_proj: proj * glam::camera::rh::view::look_at_mat4(eye, target, Vec3::Y),
        position: eye,
    }
}

/// Parallel eyes 64 mm apart looking down −z from `head`: the simplest rig
/// whose parallax is easy to predict.
fn parallel_eyes(head: Vec3, aspect: f32) -> [EyeCamera; 2] {
    let half = Vec3::X * 0.032;
    let ahead = Vec3::NEG_Z;
    [
        camera(head - half, head - half + ahead, aspect),
        camera(head + half, head + half + ahead, aspect),
    ]
}

/// Where the camera puts `p` in an image of `size` (pixel centres at .5).
fn predicted_pixel(cam: &EyeCamera, p: Vec3, size: (u32, u32)) -> (f32, f32) {
    let c = cam.view_proj * Vec4::from((p, 1.0));
    let ndc = c.truncate() / c.w;
    (
        (ndc.x + 1.0) * 0.5 * size.0 as f32,
        (1.0 - ndc.y) * 0.5 * size.1 as f32,
    )
}

fn bare_style() -> SceneStyle {
    SceneStyle {
        skin: false,
        muscles: MuscleStyle::Hidden,
        skeleton: false,
        bands: false,
        floor: false,
        ..SceneStyle::default()
    }
}

fn marker(p: Vec3, radius: f32) -> Cursor {
    Cursor {
        position: p,
        orientation: Quat::IDENTITY,
        radius,
        wand: 0.0,
        color: [1.0, 1.0, 1.0, 1.0],
        active: false,
    }
}

/// Pixels clearly brighter than the background, and their centroid.
fn lit(img: &RgbaImage, x0: u32, y0: u32, w: u32, h: u32) -> (usize, (f32, f32)) {
    let (mut n, mut sx, mut sy) = (0usize, 0.0f64, 0.0f64);
    for y in y0..y0 + h {
        for x in x0..x0 + w {
            let p = img.pixel(x, y);
            if p[0] as u32 + p[1] as u32 + p[2] as u32 > 3 * 140 {
                n += 1;
                sx += x as f64 + 0.5;
                sy += y as f64 + 0.5;
            }
        }
    }
    let c = if n > 0 {
        ((sx / n as f64) as f32, (sy / n as f64) as f32)
    } else {
        (f32::NAN, f32::NAN)
    };
    (n, c)
}

#[test]
fn the_penguin_is_lit_in_both_eyes() {
    let ctx = context();
    let mut r = SceneRenderer::new(&ctx, OffscreenTarget::FORMAT).unwrap();
    r.style.floor = false;
    let size = (96, 96);
    let cams = [
        camera(Vec3::new(-0.032, 0.4, 1.5), Vec3::new(0.0, 0.35, 0.0), 1.0),
        camera(Vec3::new(0.032, 0.4, 1.5), Vec3::new(0.0, 0.35, 0.0), 1.0),
    ];
    let snap = penguin_snapshot();
    r.draw(
        &snap,
        &Decorations::default(),
        &cams,
        StereoMode::SideBySide,
        size,
        None,
        &[],
    );
    for eye in 0..2 {
        let img = r.gpu.read_eye(eye).unwrap();
        let (n, (cx, cy)) = lit(&img, 0, 0, size.0, size.1);
        // The penguin (~0.6 m tall, ~0.3 m wide at 1.5 m: ~40×20 px)
        // covers a good part of the image, around its centre.
        assert!(n > 350, "eye {eye}: only {n} lit pixels");
        assert!(
            (cx - 48.0).abs() < 12.0 && (cy - 48.0).abs() < 20.0,
            "eye {eye}: centroid ({cx}, {cy})"
        );
    }
}

#[test]
fn eyes_differ_by_the_predicted_parallax() {
    let ctx = context();
    let mut r = SceneRenderer::new(&ctx, OffscreenTarget::FORMAT).unwrap();
    r.style = bare_style();
    let size = (320, 240);
    let head = Vec3::new(0.0, 0.3, 1.0);
    let cams = parallel_eyes(head, size.0 as f32 / size.1 as f32);
    let snap = penguin_snapshot();
    let mut disparities = Vec::new();
    // Near, middle and far markers; one per frame so centroids are clean.
    for p in [
        Vec3::new(0.05, 0.32, 0.5),
        Vec3::new(-0.1, 0.25, 0.0),
        Vec3::new(0.2, 0.4, -1.0),
    ] {
        let depth = head.z - p.z;
        // About two pixels across whatever the depth.
        let radius = 0.008 * depth;
        r.draw(
            &snap,
            &Decorations {
                cursors: vec![marker(p, radius)],
                current_joint: None,
                ui: None,
                skin_contact: Vec::new(),
            },
            &cams,
            StereoMode::SideBySide,
            size,
            None,
            &[],
        );
        let mut seen = [(0.0, 0.0); 2];
        for eye in 0..2 {
            let img = r.gpu.read_eye(eye).unwrap();
            let (n, c) = lit(&img, 0, 0, size.0, size.1);
            assert!(n >= 4, "eye {eye} does not see the marker at {p}");
            let want = predicted_pixel(&cams[eye], p, size);
            assert!(
                (c.0 - want.0).abs() < 0.75 && (c.1 - want.1).abs() < 0.75,
                "eye {eye}: marker at {c:?}, geometry says {want:?}"
            );
            seen[eye] = c;
        }
        // Parallel eyes: disparity = f · ipd / depth, f the focal length in pixels.
        let f = size.1 as f32 * 0.5 / (0.9f32 * 0.5).tan();
        let want = f * 0.064 / depth;
        let got = seen[0].0 - seen[1].0;
        assert!(
            (got - want).abs() < 1.0,
            "disparity {got} px, expected {want} px at depth {depth}"
        );
        disparities.push(got);
    }
    assert!(
        disparities[0] > disparities[1] && disparities[1] > disparities[2],
        "nearer points must have larger disparity: {disparities:?}"
    );
}

/// Renders a white marker that only the chosen eye can see (the other eye
/// looks away), composed in `mode`.
fn only_one_eye_sees(
    ctx: &GpuContext,
    mode: StereoMode,
    seeing: usize,
    size: (u32, u32),
) -> RgbaImage {
    let mut r = SceneRenderer::new(ctx, OffscreenTarget::FORMAT).unwrap();
    r.style = bare_style();
    let eye_size = mode.eye_size(size);
    let aspect = eye_size.0 as f32 / eye_size.1 as f32;
    let p = Vec3::new(0.0, 0.3, 0.0);
    let sees = camera(Vec3::new(0.0, 0.3, 0.25), p, aspect);
    let away = camera(Vec3::new(0.0, 0.3, 0.25), Vec3::new(0.0, 0.3, 2.0), aspect);
    let cams = if seeing == 0 {
        [sees, away]
    } else {
        [away, sees]
    };
    let target = OffscreenTarget::new(ctx, size);
    r.draw(
        &penguin_snapshot(),
        &Decorations {
            cursors: vec![marker(p, 0.018)],
            current_joint: None,
            ui: None,
            skin_contact: Vec::new(),
        },
        &cams,
        mode,
        eye_size,
        Some((&target.view, size)),
        &[],
    );
    target.read(ctx).unwrap()
}

#[test]
fn side_by_side_and_top_bottom_put_each_eye_in_its_half() {
    let ctx = context();
    let size = (128, 96);
    for seeing in 0..2 {
        let img = only_one_eye_sees(&ctx, StereoMode::SideBySide, seeing, size);
        let (left, _) = lit(&img, 0, 0, 64, 96);
        let (right, _) = lit(&img, 64, 0, 64, 96);
        let (mine, other) = if seeing == 0 {
            (left, right)
        } else {
            (right, left)
        };
        assert!(
            mine > 10 && other == 0,
            "side-by-side, eye {seeing}: {left} left, {right} right"
        );

        let img = only_one_eye_sees(&ctx, StereoMode::TopBottom, seeing, size);
        let (top, _) = lit(&img, 0, 0, 128, 48);
        let (bottom, _) = lit(&img, 0, 48, 128, 48);
        let (mine, other) = if seeing == 0 {
            (top, bottom)
        } else {
            (bottom, top)
        };
        assert!(
            mine > 10 && other == 0,
            "top-bottom, eye {seeing}: {top} top, {bottom} bottom"
        );
    }
}

#[test]
fn anaglyph_sends_the_left_eye_to_red_and_the_right_to_cyan() {
    let ctx = context();
    let size = (96, 96);
    let centre = |img: &RgbaImage| img.pixel(48, 48);
    let left = centre(&only_one_eye_sees(&ctx, StereoMode::Anaglyph, 0, size));
    assert!(
        left[0] > 150 && left[1] < 100 && left[2] < 100,
        "left eye's marker should be red: {left:?}"
    );
    let right = centre(&only_one_eye_sees(&ctx, StereoMode::Anaglyph, 1, size));
    assert!(
        right[0] < 100 && right[1] > 150 && right[2] > 150,
        "right eye's marker should be cyan: {right:?}"
    );
}

#[test]
fn the_overlay_is_drawn_in_each_eyes_half() {
    let ctx = context();
    let mut r = SceneRenderer::new(&ctx, OffscreenTarget::FORMAT).unwrap();
    r.style = bare_style();
    let size = (320, 120);
    let target = OffscreenTarget::new(&ctx, size);
    let cams = parallel_eyes(Vec3::new(0.0, 0.3, 1.0), 1.0);
    r.draw(
        &penguin_snapshot(),
        &Decorations::default(),
        &cams,
        StereoMode::SideBySide,
        StereoMode::SideBySide.eye_size(size),
        Some((&target.view, size)),
        &["render 1.2 ms".to_string()],
    );
    let img = target.read(&ctx).unwrap();
    let (left, _) = lit(&img, 0, 0, 160, 20);
    let (right, _) = lit(&img, 160, 0, 160, 20);
    assert!(
        left > 20 && right > 20,
        "overlay text pixels: {left} left, {right} right"
    );
    let (below, _) = lit(&img, 0, 40, 320, 80);
    assert_eq!(below, 0, "nothing else is drawn");
}

/// Multiview is used only where it draws both eyes; either way the two
/// stereo paths must give the same eye images (the per-eye path is the
/// reference). On bookworm's Mesa 22 the self-test refuses multiview, and
/// the renderer says why.
#[test]
fn the_stereo_path_is_multiview_only_where_it_renders_both_eyes() {
    let ctx = context();
    let auto = Renderer::new(&ctx, OffscreenTarget::FORMAT).unwrap();
    println!("stereo path on {}: {:?}", ctx.summary(), auto.stereo_path());
    match auto.stereo_path() {
        StereoPath::PerEyePasses(why) => assert!(!why.is_empty()),
        StereoPath::Multiview => assert!(ctx.multiview),
    }
    let size = (96, 96);
    let cams = parallel_eyes(Vec3::new(0.0, 0.35, 1.4), 1.0);
    let snap = penguin_snapshot();
    let images = |gpu: Renderer| {
        let mut r = SceneRenderer::with_renderer(gpu);
        r.draw(
            &snap,
            &Decorations::default(),
            &cams,
            StereoMode::SideBySide,
            size,
            None,
            &[],
        );
        [r.gpu.read_eye(0).unwrap(), r.gpu.read_eye(1).unwrap()]
    };
    let reference =
        images(Renderer::with_stereo_path(&ctx, OffscreenTarget::FORMAT, false).unwrap());
    let chosen = images(auto);
    if std::env::var_os("PLASTICINE_DUMP").is_some() {
        for eye in 0..2 {
            reference[eye]
                .save_png(Path::new(&format!("/tmp/ref{eye}.png")))
                .unwrap();
            chosen[eye]
                .save_png(Path::new(&format!("/tmp/mv{eye}.png")))
                .unwrap();
        }
    }
    for eye in 0..2 {
        let differing = reference[eye]
            .pixels
            .chunks_exact(4)
            .zip(chosen[eye].pixels.chunks_exact(4))
            .filter(|(a, b)| a.iter().zip(b.iter()).any(|(x, y)| x.abs_diff(*y) > 8))
            .count();
        assert!(
            differing < 20,
            "eye {eye}: {differing} pixels differ between the stereo paths"
        );
    }
    // The two eyes do differ (parallax), so the comparison above is not vacuous.
    let between_eyes = reference[0]
        .pixels
        .iter()
        .zip(&reference[1].pixels)
        .filter(|(a, b)| a.abs_diff(**b) > 8)
        .count();
    assert!(between_eyes > 100);
}

/// An in-world panel (the headset's toolbar), painted with egui into a
/// texture on a quad, is readable in both eyes: its text is lit on the dark
/// backing, the current tool's palette cell is drawn in the highlight
/// colour, the cell the wand points at is lit where that cell is (right of
/// the current one), and a live plot's line shows in its column.
#[test]
fn a_world_panel_shows_its_text_and_highlight_in_both_eyes() {
    use plasticine::app::Plot;
    use plasticine::app::{PanelPainter, PanelPicture};
    use plasticine::tools::ToolKind;
    use plasticine::tools::{Row, Side, palette_line};
    let ctx = context();
    let mut r = SceneRenderer::new(&ctx, OffscreenTarget::FORMAT).unwrap();
    r.style = bare_style();
    let size = (320, 320);
    let head = Vec3::new(0.0, 0.3, 0.5);
    let cams = parallel_eyes(head, 1.0);
    // The sphere current (row 1, cell 1); the wand on the paint tool
    // (row 2, cell 3).
    let rows = [Row::Heading("TOOLS"), Row::Palette(0), Row::Palette(1)];
    let lines = [
        "TOOLS".to_string(),
        palette_line(0, ToolKind::Sphere),
        palette_line(1, ToolKind::Sphere),
    ];
    let picture = PanelPicture {
        columns: &[(0, 3)],
        rows: &rows,
        lines: &lines,
        status: &[],
        highlight: Some(1),
        hover: Some((2, Side::Right)),
        hover_cell: Some(3),
        pressed: false,
        plots: &[Plot {
            name: "step",
            unit: "ms",
            log: true,
            samples: (0..50)
                .map(|k| (k as f64 * 0.1, 1.0 + (k % 5) as f64))
                .collect(),
        }],
        plots_apart: false,
    };
    // At its own size (30 cm wide, rows 1.2 cm tall) 40 cm in front of the
    // eyes, facing them; the plot under the rows.
    let to_world = glam::Mat4::from_translation(Vec3::new(-0.15, 0.36, 0.1));
    let quad = PanelPainter::default().paint(&picture, to_world, 2000.0);
    r.draw(
        &penguin_snapshot(),
        &Decorations {
            ui: Some(quad),
            ..Decorations::default()
        },
        &cams,
        StereoMode::SideBySide,
        size,
        None,
        &[],
    );
    for eye in 0..2 {
        let img = r.gpu.read_eye(eye).unwrap();
        let (text, _) = lit(&img, 0, 0, size.0, size.1);
        let highlight = (0..size.1)
            .flat_map(|y| (0..size.0).map(move |x| (x, y)))
            .filter(|&(x, y)| {
                let p = img.pixel(x, y);
                // sRGB of the highlight colour: bright red and green, little blue.
                p[0] > 200 && p[1] > 150 && p[2] < 120
            })
            .count();
        let plotted = (0..size.1)
            .flat_map(|y| (0..size.0).map(move |x| (x, y)))
            .filter(|&(x, y)| {
                let p = img.pixel(x, y);
                // The plot's line: light blue.
                p[2] > 180 && p[1] > 130 && p[0] < 150
            })
            .count();
        // The panel's extent: what differs from the background corner.
        let corner = img.pixel(0, 0);
        let xs: Vec<u32> = (0..size.1)
            .flat_map(|y| (0..size.0).map(move |x| (x, y)))
            .filter(|&(x, y)| {
                let p = img.pixel(x, y);
                (0..3).any(|c| (p[c] as i32 - corner[c] as i32).abs() > 12)
            })
            .map(|(x, _)| x)
            .collect();
        let width = (xs.iter().max().unwrap() - xs.iter().min().unwrap()) as f32;
        let centre_x = |keep: &dyn Fn([u8; 4]) -> bool| {
            let hits: Vec<u32> = (0..size.1)
                .flat_map(|y| (0..size.0).map(move |x| (x, y)))
                .filter(|&(x, y)| keep(img.pixel(x, y)))
                .map(|(x, _)| x)
                .collect();
            (
                hits.len(),
                hits.iter().map(|&x| x as f32).sum::<f32>() / hits.len().max(1) as f32,
            )
        };
        // The current cell's dark amber backing, and the hover's dark blue.
        let (current, current_x) =
            centre_x(&|p| (70..125).contains(&p[0]) && (50..100).contains(&p[1]) && p[2] < 45);
        let (hovered, hover_x) =
            centre_x(&|p| p[2] > 100 && p[2] < 170 && p[0] < 70 && p[1] > 45 && p[1] < 100);
        assert!(text > 40, "eye {eye}: {text} text pixels");
        assert!(highlight > 20, "eye {eye}: {highlight} highlighted pixels");
        assert!(
            hovered > 20,
            "eye {eye}: {hovered} pixels of the hovered cell"
        );
        assert!(
            current > 20,
            "eye {eye}: {current} pixels of the current cell"
        );
        // Cells 1 and 3 of five: their middles are 0.4 of the row apart.
        let apart = (hover_x - current_x) / width;
        assert!(
            (0.3..0.5).contains(&apart),
            "eye {eye}: the hovered cell is {apart} of the panel right of the current one"
        );
        assert!(
            plotted > 40,
            "eye {eye}: {plotted} pixels of the plot's line"
        );
    }
}

/// The ends of a skin are closed: looking straight down the axis
/// of an open tube of skin, from above and from below, the middle of the
/// image is the skin's cap, not the background seen through the tube, and
/// from above (the sky's side) it is lit.
#[test]
fn a_skin_seen_down_its_axis_shows_its_cap_not_a_hole() {
    use plasticine::snapshot::SkinSurface;
    let ctx = context();
    let mut r = SceneRenderer::new(&ctx, OffscreenTarget::FORMAT).unwrap();
    r.style = SceneStyle {
        skin: true,
        ..bare_style()
    };
    // A tube of radius 0.2 m from y = 0.1 to 0.7, turning either way.
    let (m, n) = (24, 8);
    let mut snap = penguin_snapshot();
    let size = (64, 64);
    for turn in [1.0f32, -1.0] {
        let positions = (0..n)
            .flat_map(|j| {
                (0..m).map(move |i| {
                    let a = turn * std::f32::consts::TAU * i as f32 / m as f32;
                    Vec3::new(
                        0.2 * a.cos(),
                        0.1 + 0.6 * j as f32 / (n - 1) as f32,
                        0.2 * a.sin(),
                    )
                })
            })
            .collect();
        snap.skins = vec![SkinSurface {
            m,
            n,
            positions,
            fat: vec![0.0; m * n],
        }];
        for (view, eye) in [("above", 2.0f32), ("below", -1.6)] {
            // Square above or below the tube's axis; a 0.2 m ring at 1.3 m
            // fills about a quarter of the image's width.
            let proj = glam::camera::rh::proj::directx::perspective(0.9, 1.0, 0.05, 20.0);
            let at = Vec3::new(0.0, eye, 0.0);
            let cam = EyeCamera {
                view_proj: proj
                    * glam::camera::rh::view::look_at_mat4(at, Vec3::new(0.0, 0.4, 0.0), Vec3::Z),
                position: at,
            };
            r.draw(
                &snap,
                &Decorations::default(),
                &[cam, cam],
                StereoMode::Mono,
                size,
                None,
                &[],
            );
            let img = r.gpu.read_eye(0).unwrap();
            let background = img.pixel(0, 0);
            let (c, half) = (size.0 / 2, 4);
            for y in c - half..c + half {
                for x in c - half..c + half {
                    let p = img.pixel(x, y);
                    let diff: u32 = (0..3).map(|k| p[k].abs_diff(background[k]) as u32).sum();
                    assert!(
                        diff > 60,
                        "seen from {view} (turn {turn}): pixel ({x}, {y}) {p:?} is the background {background:?}: a hole"
                    );
                }
            }
            if view == "above" {
                let (lit_px, _) = lit(&img, c - half, c - half, 2 * half, 2 * half);
                assert_eq!(lit_px, (4 * half * half) as usize, "the top cap is lit");
            }
        }
    }
}

/// The imported limb on modal flesh, its elbow bent, and its flesh pose
/// with every mode at ±2 cm of largest displacement (alternating in sign).
fn bent_modal_limb() -> (
    plasticine::character::Character,
    plasticine::character::Posture,
    plasticine::snapshot::FleshPose,
) {
    use plasticine::character::{Flesh, ModalFlesh};
    let (mut c, _) = crate::support::limb::imported_limb();
    let Flesh::Fem(fem) = std::mem::take(&mut c.flesh) else {
        panic!("the import makes FEM flesh");
    };
    let parts = ModalFlesh::part_per_bone(&c);
    c.flesh = Flesh::Modal(ModalFlesh { fem, parts });
    let rest = c.skeleton.rest_posture();
    let sim = plasticine::modal::ModalSim::new(&c, &|_| rest.clone(), 0.0).unwrap();
    let mut posture = rest.clone();
    posture.angles[0].z = 0.3;
    posture.angles[1].z = 1.2;
    let mut pose = sim.pose(&c, &posture, 0.0);
    assert!(
        pose.mesh.is_none(),
        "a modal mesh is posed by whoever draws it"
    );
    let frame = pose
        .morph
        .as_mut()
        .expect("the limb's mesh rides the modes");
    let mesh = frame.mesh.clone();
    for (i, w) in frame.weights.iter_mut().enumerate() {
        let largest = (0..mesh.rest.len())
            .map(|v| mesh.shape_of(v, i).length())
            .fold(0.0, f64::max);
        let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
        *w = sign * 0.02 / largest.max(1e-12);
    }
    (c, posture, pose)
}

/// Modal flesh's mesh is drawn from the GPU's pose pass (DyRT §4: the modes
/// superposed before skinning, in `shaders/morph.wgsl`), in both eyes, and
/// the picture is the one the CPU's pose of the same frame draws: the imported
/// limb, its elbow bent, every mode at an amplitude that moves the mesh a
/// couple of centimetres. The same frame with the modes at rest looks
/// clearly different, so the comparison sees the modes, not only the
/// skinning.
#[test]
fn the_modal_mesh_drawn_from_the_gpu_pass_is_the_cpu_picture() {
    let ctx = context();
    let (c, posture, pose) = bent_modal_limb();
    let moving = pose.morph.clone().expect("the limb's mesh rides the modes");
    let mesh = moving.mesh.clone();
    let still = plasticine::morph::MorphFrame {
        weights: vec![0.0; moving.weights.len()],
        ..moving.clone()
    };
    let points = moving.positions();
    let (lo, hi) = points.iter().fold(
        (Vec3::splat(f32::MAX), Vec3::splat(f32::MIN)),
        |(l, h), p| (l.min(*p), h.max(*p)),
    );
    let centre = (lo + hi) * 0.5;
    let reach = (hi - lo).length();
    let size = (192, 96);
    let mode = StereoMode::SideBySide;
    let eye_size = mode.eye_size(size);
    let aspect = eye_size.0 as f32 / eye_size.1 as f32;
    let head = centre + Vec3::new(0.0, 0.0, 1.3 * reach);
    let half = Vec3::X * 0.032;
    let cams = [
        camera(head - half, centre - half, aspect),
        camera(head + half, centre + half, aspect),
    ];
    let character = Arc::new(c);
    let draw_styled = |frame: &plasticine::morph::MorphFrame,
                       on_gpu: bool,
                       multiview: bool,
                       muscles: MuscleStyle| {
        let gpu = Renderer::with_stereo_path(&ctx, OffscreenTarget::FORMAT, multiview).unwrap();
        let mut r = SceneRenderer::with_renderer(gpu);
        r.style = SceneStyle {
            muscles,
            ..bare_style()
        };
        r.morph_on_gpu = on_gpu;
        let mut snap = SceneSnapshot::of(character.clone(), posture.clone(), 0);
        let mut flesh = pose.clone();
        flesh.morph = Some(frame.clone());
        snap.flesh = Some(Arc::new(flesh));
        let target = OffscreenTarget::new(&ctx, size);
        let decorations = Decorations {
            cursors: vec![],
            current_joint: None,
            ui: None,
            skin_contact: Vec::new(),
        };
        let stats = r.draw(
            &snap,
            &decorations,
            &cams,
            mode,
            eye_size,
            Some((&target.view, size)),
            &[],
        );
        assert!(r.morph_on_cpu().is_none(), "{:?}", r.morph_on_cpu());
        let triangles = 2 * mesh.triangles.len() as u64;
        assert!(
            muscles == MuscleStyle::Hidden || stats.triangles >= triangles,
            "both eyes draw the mesh's {triangles} triangles: {}",
            stats.triangles
        );
        target.read(&ctx).unwrap()
    };
    let draw = |frame: &plasticine::morph::MorphFrame, on_gpu: bool, multiview: bool| {
        draw_styled(frame, on_gpu, multiview, MuscleStyle::Opaque)
    };
    let empty = draw_styled(&moving, true, false, MuscleStyle::Hidden);
    // The multiview path where the adapter passes its self-test (it falls
    // back to per-eye passes elsewhere), then the per-eye passes.
    let gpu = draw(&moving, true, true);
    let per_eye = draw(&moving, true, false);
    let cpu = draw(&moving, false, false);
    let at_rest = draw(&still, true, false);
    let differing = |a: &RgbaImage, b: &RgbaImage| {
        let mut n = 0;
        for y in 0..size.1 {
            for x in 0..size.0 {
                let (p, q) = (a.pixel(x, y), b.pixel(x, y));
                if (0..3).any(|k| (p[k] as i32 - q[k] as i32).abs() > 24) {
                    n += 1;
                }
            }
        }
        n
    };
    // Pixels the mesh covers in the eye whose half starts at x0.
    let shaded = |img: &RgbaImage, x0: u32| {
        let mut n = 0;
        for y in 0..size.1 {
            for x in x0..x0 + size.0 / 2 {
                let (p, q) = (img.pixel(x, y), empty.pixel(x, y));
                if (0..3).any(|k| (p[k] as i32 - q[k] as i32).abs() > 24) {
                    n += 1;
                }
            }
        }
        n
    };
    let (left, right) = (shaded(&gpu, 0), shaded(&gpu, size.0 / 2));
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/tmp");
    std::fs::create_dir_all(&out).unwrap();
    gpu.save_png(&out.join("modal_mesh_gpu.png")).unwrap();
    at_rest
        .save_png(&out.join("modal_mesh_at_rest.png"))
        .unwrap();
    let (gpu_cpu, modes) = (differing(&per_eye, &cpu), differing(&per_eye, &at_rest));
    let paths = differing(&gpu, &per_eye);
    eprintln!(
        "modal mesh, {} vertices, {} modes: drawn pixels left {left}, right {right}; \
         GPU vs CPU picture {gpu_cpu} pixels differ, stereo paths {paths}, modes vs rest {modes}",
        mesh.rest.len(),
        mesh.modes
    );
    assert!(
        left > 300 && right > 300,
        "the mesh is drawn in both eyes: {left}, {right}"
    );
    assert!(
        gpu_cpu * 200 <= left + right,
        "the GPU's picture is the CPU's: {gpu_cpu} pixels differ"
    );
    assert!(
        paths * 200 <= left + right,
        "both stereo paths draw it alike: {paths} pixels differ"
    );
    assert!(
        modes * 20 >= left + right,
        "the modes change the picture: {modes} pixels"
    );
}
