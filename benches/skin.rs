//! Criterion benchmarks of the skin solver on the penguin sample (the figures
//! in the issues come from `plasticine bench`, which runs longer scenarios).

use criterion::{Criterion, criterion_group, criterion_main};
use glam::Vec3;
use plasticine::skin::{ElasticMaterial, Grid, Scratch, add_elastic_forces};
use plasticine::skin::{SecondOrderSystem, SkinSystem, SolverSettings};
use std::hint::black_box;

fn elastic_forces(c: &mut Criterion) {
    for res in [16usize, 64, 128] {
        let ch = plasticine::samples::resampled("penguin", res, res).expect("penguin");
        let skin = &ch.skins[0];
        let grid = Grid::of(skin);
        let mat = ElasticMaterial::of(skin);
        let mut terms = Scratch::default();
        let mut f = vec![Vec3::ZERO; grid.points()];
        c.bench_function(&format!("elastic forces {res}x{res}"), |b| {
            b.iter(|| {
                f.fill(Vec3::ZERO);
                add_elastic_forces(
                    &grid,
                    &mat,
                    black_box(&skin.points.position),
                    &mut terms,
                    &mut f,
                );
            });
        });
    }
}

fn full_acceleration(c: &mut Criterion) {
    let ch = plasticine::samples::resampled("penguin", 64, 64).expect("penguin");
    let driver = plasticine::skin::SkeletonDriver::Keys(ch.key_postures.clone());
    let skin = &ch.skins[0];
    let mut sys = SkinSystem::new(&ch, skin, &driver);
    let mut a = vec![Vec3::ZERO; skin.point_count()];
    c.bench_function("skin acceleration 64x64 (elastic + bands + damping)", |b| {
        b.iter(|| {
            sys.acceleration(
                0.1,
                black_box(&skin.points.position),
                &skin.points.velocity,
                &mut a,
            );
        });
    });
}

fn penguin_playback(c: &mut Criterion) {
    let mut g = c.benchmark_group("penguin playback");
    g.sample_size(10);
    for res in [16usize, 64] {
        let ch = plasticine::samples::resampled("penguin", res, res).expect("penguin");
        g.bench_function(format!("one 30 Hz frame {res}x{res}"), |b| {
            b.iter_batched(
                || {
                    plasticine::samples::playback(ch.clone(), SolverSettings::default())
                        .expect("sim")
                },
                |mut sim| sim.advance_to(1.0 / 30.0, None).expect("advances"),
                criterion::BatchSize::LargeInput,
            );
        });
    }
    g.finish();
}

criterion_group!(benches, elastic_forces, full_acceleration, penguin_playback);
criterion_main!(benches);
