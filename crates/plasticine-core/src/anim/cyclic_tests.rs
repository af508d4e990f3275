//! LEMAN's point about cyclic motion (§6.4–6.5): a skeleton moving in an
//! exact cycle does not give an exactly cyclic skin, because the skin's
//! follow-through carries momentum from one cycle into the next (the first
//! cycle starts from a skin at rest, the second from a swinging one).
//!
//! The check bakes (the product's `bake`, to a frame cache) two cycles of a
//! flipper swing and compares frame `f` with frame `f + T·fps`:
//!
//! - the skeleton is exactly cyclic: the postures the bake was driven with
//!   are equal to 1e-6 rad (bit-equal where the spline's arithmetic is), and
//!   equal to the cyclic spline [`sample_posture_cyclic`] of one cycle;
//! - the skin is not: positions one period apart (RMS over all skin points)
//!   differ by far more than the solver's own error, measured the same way
//!   between this bake and one with a 4× tighter position tolerance (LEMAN
//!   eq. 15). Measured on the taut skin at 16×16: up to 4.5 mm
//!   apart, solver error 0.7 mm (the floppy skin before it: 8–33 mm apart).

use super::{sample_posture, sample_posture_cyclic};
use crate::bake::{BakeOptions, bake};
use crate::character::{Character, KeyPosture, Posture};
use crate::io::CacheReader;
use glam::Vec3;

/// Period (s), frames per second, swing amplitude (rad). Times are dyadic
/// (keys every T/4, frames every 1/32 s) so key and frame times are exact.
const PERIOD: f32 = 1.0;
const FPS: f32 = 32.0;
const SWING: f32 = 0.8;

/// The penguin with both flippers flapping `SWING·sin(2πt/T)`, keyed at
/// quarter periods for `cycles` cycles (the last key equals the first). The
/// keys are symmetric about every key (0, A, 0, −A, 0, …), so the clamped
/// end tangents equal the cyclic ones and the keyed motion *is* the cyclic
/// spline.
fn flapping(cycles: usize) -> (Character, Vec<KeyPosture>) {
    let mut c = crate::samples::shipped_penguin();
    let l = c.skeleton.find("flipper_l").unwrap();
    let r = c.skeleton.find("flipper_r").unwrap();
    let rest = c.skeleton.rest_posture();
    let key = |q: usize| {
        let a = SWING * [0.0, 1.0, 0.0, -1.0][q % 4];
        let mut p = rest.clone();
        p.angles[l] = Vec3::new(0.0, 0.0, a);
        p.angles[r] = Vec3::new(0.0, 0.0, -a);
        KeyPosture {
            time: q as f32 * PERIOD / 4.0,
            posture: p,
            tension: 0.0,
            continuity: 0.0,
            bias: 0.0,
        }
    };
    let one: Vec<KeyPosture> = (0..=4).map(key).collect();
    c.key_postures = (0..=4 * cycles).map(key).collect();
    c.validate().unwrap();
    (c, one)
}

fn max_angle_difference(a: &Posture, b: &Posture) -> f32 {
    a.angles
        .iter()
        .zip(&b.angles)
        .map(|(x, y)| (*x - *y).abs().max_element())
        .fold(
            (a.root_translation - b.root_translation)
                .abs()
                .max_element(),
            f32::max,
        )
}

/// Bakes two cycles at 16×16 skins, position tolerance a quarter of the
/// default times `tolerance_scale`; returns every frame's positions (all
/// skins concatenated).
fn bake_two_cycles(c: &Character, tolerance_scale: f32) -> Vec<Vec<Vec3>> {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = BakeOptions {
        resolution: Some((16, 16)),
        fps: FPS,
        duration: Some(2.0 * PERIOD as f64),
        checkpoint_every: None,
        ..BakeOptions::default()
    };
    opts.settings.tolerances.position *= 0.25 * tolerance_scale;
    let summary = bake(c.clone(), &opts, dir.path(), |_, _| {
        crate::bake::BakeControl::Continue
    })
    .unwrap()
    .finished()
    .unwrap();
    let mut reader = CacheReader::open(&summary.cache).unwrap();
    let mut frames = Vec::new();
    let mut scratch = Vec::new();
    for f in 0..reader.frame_count() {
        let t = reader.read_frame(f, &mut scratch).unwrap();
        assert_eq!(t, f as f64 / FPS as f64, "frame {f} time");
        frames.push(scratch.concat());
    }
    frames
}

#[test]
fn a_cyclic_skeleton_does_not_give_a_cyclic_skin() {
    let (c, one_cycle) = flapping(2);
    let period_frames = (PERIOD * FPS) as usize;

    // The skeleton: exactly cyclic, and the cyclic spline of one cycle.
    let mut worst_cycle = 0.0f32;
    let mut worst_cyclic_spline = 0.0f32;
    for f in 0..=period_frames {
        let t = f as f32 / FPS;
        let a = sample_posture(&c.key_postures, t).unwrap();
        let b = sample_posture(&c.key_postures, t + PERIOD).unwrap();
        worst_cycle = worst_cycle.max(max_angle_difference(&a, &b));
        let cyc = sample_posture_cyclic(&one_cycle, t + PERIOD).unwrap();
        worst_cyclic_spline = worst_cyclic_spline.max(max_angle_difference(&b, &cyc));
    }
    assert!(
        worst_cycle <= 1e-6,
        "skeleton not cyclic: {worst_cycle} rad"
    );
    assert!(
        worst_cyclic_spline <= 1e-6,
        "not the cyclic spline: {worst_cyclic_spline} rad"
    );
    // And it moves: a quarter period in, the flippers are at full swing.
    let l = c.skeleton.find("flipper_l").unwrap();
    let q = sample_posture(&c.key_postures, PERIOD / 4.0).unwrap();
    assert!((q.angles[l].z - SWING).abs() < 1e-6);

    // The skin, baked over the two cycles.
    let frames = bake_two_cycles(&c, 1.0);
    assert_eq!(frames.len(), 2 * period_frames + 1);
    // Solver error: the same bake with a 4× tighter position tolerance;
    // its RMS difference (over all points) at any frame.
    let tight = bake_two_cycles(&c, 0.25);
    let noise = (0..frames.len())
        .map(|f| rms_distance(&frames[f], &tight[f]))
        .fold(0.0, f32::max);
    // The skin one period apart, RMS over all points, frame by frame.
    let cross: Vec<f32> = (0..=period_frames)
        .map(|f| rms_distance(&frames[f], &frames[f + period_frames]))
        .collect();
    let worst = cross.iter().copied().fold(0.0, f32::max);
    // The flippers swing their skin through ~10 cm; the solver's error is
    // under a millimetre RMS. Demand 4× the worst solver error somewhere,
    // and at least 2 mm.
    assert!(
        worst > (4.0 * noise).max(2e-3),
        "skin one period apart differs by at most {worst} m RMS; solver error {noise} m"
    );
    // Not a fluke of a few frames: over most of the cycle the skin is more
    // than 2× the solver error off its previous cycle (follow-through).
    let threshold = (2.0 * noise).max(5e-4);
    let off = cross.iter().filter(|&&d| d > threshold).count();
    assert!(
        off >= period_frames * 3 / 4,
        "only {off} of {} frames differ by more than {threshold} m: {cross:?}",
        cross.len()
    );
}

fn rms_distance(a: &[Vec3], b: &[Vec3]) -> f32 {
    let sum: f32 = a.iter().zip(b).map(|(x, y)| x.distance_squared(*y)).sum();
    (sum / a.len() as f32).sqrt()
}
