//! Criterion benchmark of the inverse kinematics posture tool (LEMAN §6.1):
//! one drag event of a 10-joint chain, solved from the previous event's
//! posture. The goal is ≤ 0.2 ms per event.

use criterion::{Criterion, criterion_group, criterion_main};
use plasticine::kinematics::forward_kinematics;
use plasticine::kinematics::{
    IkSettings, IkSolver, IkTarget, chain_to_branch, demo_chain, demo_drag_target,
};
use std::hint::black_box;

fn drag_event(c: &mut Criterion) {
    let (skeleton, mut posture) = demo_chain(10);
    let tip = skeleton.joints.len() - 1;
    let chain = chain_to_branch(&skeleton, tip);
    let start = forward_kinematics(&skeleton, &posture)[tip]
        .translation
        .into();
    let settings = IkSettings::default();
    let mut solver = IkSolver::new();
    let mut k = 0usize;
    c.bench_function("ik drag event 10-joint chain", |b| {
        b.iter(|| {
            // The curve is closed, so the chain keeps following it forever.
            k += 1;
            let target = IkTarget::position(demo_drag_target(start, k));
            black_box(solver.solve(
                &skeleton,
                &mut posture,
                tip,
                &chain,
                black_box(&target),
                &settings,
            ))
        });
    });
}

criterion_group!(benches, drag_event);
criterion_main!(benches);
