//! Criterion benchmark of the render thread's CPU cost per stereo frame (the
//! issue's goal: ≤ 2 ms for the 64×64-skin penguin) and of building and
//! uploading one skin snapshot. GPU work is waited for outside the timed
//! region. Needs a wgpu adapter (lavapipe works).

use criterion::{Criterion, criterion_group, criterion_main};
use plasticine::cli::bench::render::scene;
use plasticine::gpu::GpuContext;
use plasticine::render::{Decorations, OffscreenTarget, SceneRenderer, StereoMode};
use std::time::{Duration, Instant};

fn render(c: &mut Criterion) {
    let ctx = GpuContext::headless().expect("a wgpu adapter (apt-get install mesa-vulkan-drivers)");
    let (snap, cams) = scene(plasticine::samples::resampled("penguin", 64, 64).expect("penguin"));
    let mut r = SceneRenderer::new(&ctx, OffscreenTarget::FORMAT).unwrap();
    let eye = (960, 1080);
    let target = OffscreenTarget::new(&ctx, (1920, 1080));
    c.bench_function("stereo frame CPU, penguin 64x64, 2x960x1080", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t0 = Instant::now();
                r.draw(
                    &snap,
                    &Decorations::default(),
                    &cams,
                    StereoMode::SideBySide,
                    eye,
                    Some((&target.view, (1920, 1080))),
                    &[],
                );
                total += t0.elapsed();
                ctx.wait_idle().unwrap();
            }
            total
        });
    });
    c.bench_function("skin snapshot build + upload, penguin 64x64", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t0 = Instant::now();
                let g = r.geometry.build(&snap, &r.style, &Decorations::default());
                r.gpu.upload(g);
                total += t0.elapsed();
                ctx.wait_idle().unwrap();
            }
            total
        });
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = render
}
criterion_main!(benches);
