//! Criterion benchmark of tool picking (LEMAN §6.1–6.3): the penguin with
//! 64×64 skins and 30 muscles, a touch (`pick_near`) and a wand ray
//! (`pick_ray`) against every kind of target, and the per-frame picker build.
//! The goal is ≤ 0.5 ms per pick.

use criterion::{Criterion, criterion_group, criterion_main};
use plasticine::kinematics::PosedBody;
use plasticine::samples::{demo_probes, demo_scene};
use plasticine::tools::{PickFilter, Picker};
use std::hint::black_box;

fn pick(c: &mut Criterion) {
    let ch = demo_scene(64, 64, 30).expect("penguin");
    let body = PosedBody::new(&ch, &ch.skeleton.rest_posture());
    let (tips, rays) = demo_probes(&ch, &body, 1024, 7);
    let picker = Picker::new(&ch, &body);
    let mut k = 0usize;
    c.bench_function("pick 64x64 skin + 30 muscles: near", |b| {
        b.iter(|| {
            k = (k + 1) % tips.len();
            black_box(picker.pick_near(black_box(tips[k]), 0.02, PickFilter::ALL))
        });
    });
    c.bench_function("pick 64x64 skin + 30 muscles: ray", |b| {
        b.iter(|| {
            k = (k + 1) % rays.len();
            let (o, d) = rays[k];
            black_box(picker.pick_ray(black_box(o), d, 10.0, PickFilter::ALL))
        });
    });
    c.bench_function("pick 64x64 skin + 30 muscles: build + near + ray", |b| {
        b.iter(|| {
            k = (k + 1) % rays.len();
            let picker = Picker::new(&ch, &body);
            let (o, d) = rays[k];
            black_box(picker.pick_near(tips[k], 0.02, PickFilter::ALL));
            black_box(picker.pick_ray(o, d, 10.0, PickFilter::ALL))
        });
    });
    c.bench_function("pick 64x64 skin + 30 muscles: build", |b| {
        b.iter(|| black_box(Picker::new(&ch, black_box(&body))));
    });
}

criterion_group!(benches, pick);
criterion_main!(benches);
