use super::*;

fn spaced(points: &[[f64; 2]]) -> Vec<Vec<f64>> {
    points.iter().map(|p| p.to_vec()).collect()
}

#[test]
fn cardinal_weights_interpolate_and_sum_to_one() {
    let centres = spaced(&[[0.0, 0.0], [1.0, 0.0], [0.0, 0.7], [0.9, 1.1]]);
    let space = PoseSpace::new(&centres, 0.0);
    assert_eq!(space.dimensions(), 2);
    for (i, c) in centres.iter().enumerate() {
        let w = space.weights(c);
        for (j, wj) in w.iter().enumerate() {
            let expected = if i == j { 1.0 } else { 0.0 };
            assert!((wj - expected).abs() < 1e-12, "β_{j}(s_{i}) = {wj}");
        }
    }
    // Partition of unity everywhere, extrapolation included.
    for s in [[0.3, 0.4], [2.0, -1.0], [-3.0, 5.0]] {
        let sum: f64 = space.weights(&s).iter().sum();
        assert!((sum - 1.0).abs() < 1e-12, "Σβ = {sum} at {s:?}");
    }
}

#[test]
fn pca_drops_the_directions_the_targets_do_not_span() {
    // Three targets on a line in 3-D: one axis is kept, and moving off the
    // line changes no weight.
    let centres: Vec<Vec<f64>> = [0.0, 0.5, 1.5]
        .iter()
        .map(|t| vec![t * 0.6, t * 0.8, 0.0])
        .collect();
    let space = PoseSpace::new(&centres, 0.0);
    assert_eq!(space.dimensions(), 1);
    let on = space.weights(&[0.15, 0.2, 0.0]);
    let off = space.weights(&[0.15 - 0.8, 0.2 + 0.6, 2.0]);
    for (a, b) in on.iter().zip(&off) {
        assert!((a - b).abs() < 1e-12, "{on:?} vs {off:?}");
    }
    // Halfway between the first two targets (t = 0.25), they share the
    // weight: φ = r on a line is piecewise linear interpolation.
    assert!((on[0] - 0.5).abs() < 1e-12 && (on[1] - 0.5).abs() < 1e-12 && on[2].abs() < 1e-12);
}

#[test]
fn one_target_weighs_one_everywhere() {
    let space = PoseSpace::new(&[vec![0.2, -0.1, 0.4]], 0.0);
    assert_eq!(space.dimensions(), 0);
    assert_eq!(space.weights(&[5.0, 1.0, -2.0]), vec![1.0]);
}

#[test]
fn smoothing_trades_interpolation_for_smoothness() {
    let centres = spaced(&[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]);
    let exact = PoseSpace::new(&centres, 0.0).weights(&centres[0]);
    let smooth = PoseSpace::new(&centres, 0.5).weights(&centres[0]);
    assert!((exact[0] - 1.0).abs() < 1e-12);
    assert!(
        smooth[0] < 1.0 - 1e-3,
        "smoothing leaves β_0(s_0) = {}",
        smooth[0]
    );
    assert!((smooth.iter().sum::<f64>() - 1.0).abs() < 1e-12);
}

#[test]
fn the_descriptor_is_the_log_of_each_non_root_rotation() {
    let c = crate::samples::bare("penguin").expect("sample");
    let mut posture = c.skeleton.rest_posture();
    assert!(descriptor(&c.skeleton, &posture).iter().all(|x| *x == 0.0));
    let j = c.skeleton.find("flipper_l").unwrap();
    posture.angles[j] = glam::Vec3::new(0.0, 0.0, 0.5);
    // The root turning is not part of the pose.
    posture.angles[0] = glam::Vec3::new(0.3, 0.0, 0.0);
    let s = descriptor(&c.skeleton, &posture);
    assert_eq!(s.len(), 3 * (c.skeleton.joints.len() - 1));
    let norm: f64 = s.iter().map(|x| x * x).sum::<f64>().sqrt();
    let clamped = crate::kinematics::clamp_angles(&c.skeleton.joints[j].dofs, posture.angles[j]);
    assert!((norm - clamped.z as f64).abs() < 1e-6, "|s| = {norm}");
}

/// A very stiff target extrapolated against (β < 0) would leave the
/// flesh with no stiffness: those weights are clamped to convex ones, and
/// otherwise the stiffness stays above its floor.
#[test]
fn weights_that_would_soften_the_flesh_away_are_clamped_to_convex_ones() {
    let c = crate::samples::bare("penguin").expect("sample");
    let (l, r) = (
        c.skeleton.find("flipper_l").unwrap(),
        c.skeleton.find("flipper_r").unwrap(),
    );
    let pose = |a: f32, b: f32| {
        let mut p = c.skeleton.rest_posture();
        p.angles[l].z = a;
        p.angles[r].z = b;
        p
    };
    let postures = [pose(0.0, 0.0), pose(0.5, 0.0), pose(0.0, 0.5)];
    let descriptors: Vec<Vec<f64>> = postures
        .iter()
        .map(|p| descriptor(&c.skeleton, p))
        .collect();
    let model = MorphModel {
        names: vec!["rest".into(), "left".into(), "right".into()],
        space: PoseSpace::new(&descriptors, 0.0),
        offsets: vec![Vec::new(); 3],
        stiffness: vec![vec![1.0], vec![1.0], vec![20.0]],
    };
    let mut clamped = 0;
    for k in 0..72 {
        let angle = k as f32 * 5f32.to_radians();
        let p = pose(1.5 * angle.cos(), 1.5 * angle.sin());
        let (beta, was_clamped, scale) = model.weights(&c.skeleton, &p);
        assert!((beta.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{beta:?}");
        if was_clamped {
            clamped += 1;
            assert!(beta.iter().all(|b| *b >= 0.0), "{beta:?}");
            assert!(scale[0] >= 1.0 - 1e-9, "{scale:?}");
        } else {
            assert!(scale[0] >= MIN_STIFFNESS_SHARE, "{scale:?} at {k}");
        }
    }
    assert!(clamped > 0, "no pose extrapolated against the stiff target");
    // At the targets themselves nothing is clamped.
    for (p, want) in postures.iter().zip([1.0, 1.0, 20.0]) {
        let (_, was_clamped, scale) = model.weights(&c.skeleton, p);
        assert!(!was_clamped && (scale[0] - want).abs() < 1e-9, "{scale:?}");
    }
}
