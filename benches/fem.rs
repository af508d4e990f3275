//! Criterion benchmark of the lattice FEM (Capell et al. 2002): one
//! implicit Euler step of a 225-vertex limb (4 × 4 × 8 cells, two bones, the
//! elbow swinging), global linear and blended local; and the precompute
//! (integrals, assembly, regions). The goal is ≥ 2000 steps/s.

use criterion::{Criterion, criterion_group, criterion_main};
use plasticine::fem::Linearization;
use plasticine::samples::{limb, limb_pose};
use std::hint::black_box;

fn steps(c: &mut Criterion) {
    for (name, lin) in [
        (
            "fem step 225-vertex limb, global linear",
            Linearization::Global,
        ),
        (
            "fem step 225-vertex limb, blended local",
            Linearization::BlendedLocal { blend_width: 0.1 },
        ),
        // Blending over one cell instead of two: smaller regions, cheaper.
        (
            "fem step 225-vertex limb, blended local, 1-cell blend",
            Linearization::BlendedLocal { blend_width: 0.05 },
        ),
    ] {
        let mut body = limb([4, 4, 8], 0.05, lin);
        let h = body.settings.time_step;
        let mut k = 0usize;
        c.bench_function(name, |b| {
            b.iter(|| {
                k += 1;
                let pose = limb_pose(&body, k as f64 * h);
                black_box(body.step(&pose))
            });
        });
    }
    c.bench_function("fem precompute 225-vertex limb, blended local", |b| {
        b.iter(|| {
            black_box(limb(
                [4, 4, 8],
                0.05,
                Linearization::BlendedLocal { blend_width: 0.1 },
            ))
        });
    });
}

criterion_group!(benches, steps);
criterion_main!(benches);
