//! Dynamic morph targets (Galoppo 2008, ch. 5): pose-dependent rest shape
//! and stiffness of the lattice flesh.
//!
//! Each target i gives, at a posture, rest offsets `Δu_i` of the lattice
//! vertices and a stiffness factor `σ_i` per part. The elastic force is
//! interpolated in pose space (eq. 5.1): `R(u) = Σ_i β_i(s) σ_i K (u − Δu_i)`,
//! so a region r of the blended local linearization feels
//! `K (σ_r(s) u − w_r(s))` with `σ_r = Σ β_i σ_{i,r}` and
//! `w_r = Σ β_i σ_{i,r} Δu_i` ([`MorphModel::blend`]).
//!
//! The weights `β_i(s)` are cardinal radial basis functions (eq. 5.2–5.3) on a
//! pose descriptor s (§5.1.3: per joint but the root, the log of its local
//! rotation), reduced by PCA over the targets' descriptors
//! ([`PoseSpace`]): biharmonic φ(r) = r with a constant term and the
//! orthogonality condition `Σ c_i = 0`, so `β_i(s_j) = δ_ij` and `Σ β_i = 1` at
//! every pose, and a pose off the targets' span is read by its projection.

use super::element::cell_jacobian;
use super::lattice::Lattice;
use super::regions::Region;
use crate::character::{MorphTarget, Posture, Skeleton, same_pose};
use crate::kinematics::{clamp_angles, joint_rotation};
use glam::DVec3;
use nalgebra::{DMatrix, DVector};
use std::collections::HashMap;

/// A sample within this distance (m) of a lattice vertex is that vertex's
/// offset (targets are authored at the vertices, stored in f32).
const VERTEX_MATCH: f64 = 1e-5;

/// PCA keeps the modes whose variance is above this share of the largest,
/// so the RBF system (eq. 5.3) is never singular.
pub const PCA_KEEP: f64 = 1e-6;

/// A blend whose stiffness falls below this share of the softest target's
/// (β extrapolated past the targets) would leave the system near-singular
/// or indefinite: its weights are clamped to convex ones instead.
pub const MIN_STIFFNESS_SHARE: f64 = 0.1;

/// The pose descriptor of §5.1.3: for every joint but the root, the log
/// (axis × angle) of its local rotation, its angles clamped as forward
/// kinematics clamps them. The joints' fixed rest rotations are left out:
/// they are the same in every pose.
pub fn descriptor(skeleton: &Skeleton, posture: &Posture) -> Vec<f64> {
    let mut s = Vec::with_capacity(3 * skeleton.joints.len());
    for (k, joint) in skeleton.joints.iter().enumerate() {
        if joint.parent.is_none() {
            continue;
        }
        let a = posture.angles.get(k).copied().unwrap_or_default();
        let log = joint_rotation(clamp_angles(&joint.dofs, a)).to_scaled_axis();
        s.extend([log.x as f64, log.y as f64, log.z as f64]);
    }
    s
}

/// Pose space of the targets: their descriptors' mean and principal axes,
/// and the cardinal RBF coefficients on the projected descriptors.
#[derive(Clone, Debug)]
pub struct PoseSpace {
    mean: Vec<f64>,
    axes: Vec<Vec<f64>>,
    centres: Vec<Vec<f64>>,
    /// Column j: the RBF weights `c_ij` of `β_j` (rows 0..m) and its constant
    /// (row m).
    coefficients: DMatrix<f64>,
}

impl PoseSpace {
    /// The space of `descriptors` (one per target, distinct poses), with
    /// `smoothing` λ ≥ 0 on the RBF matrix's diagonal (0 interpolates
    /// exactly; more lets `β_i(s_i)` fall below one for a smoother field).
    pub fn new(descriptors: &[Vec<f64>], smoothing: f64) -> Self {
        let m = descriptors.len();
        assert!(m > 0, "a pose space needs a target");
        let d = descriptors[0].len();
        let mut mean = vec![0.0; d];
        for s in descriptors {
            for (a, x) in mean.iter_mut().zip(s) {
                *a += x / m as f64;
            }
        }
        let centred: Vec<Vec<f64>> = descriptors
            .iter()
            .map(|s| s.iter().zip(&mean).map(|(x, a)| x - a).collect())
            .collect();
        // PCA through the m×m Gram matrix (m targets ≪ descriptor size).
        let gram = DMatrix::from_fn(m, m, |i, j| dot(&centred[i], &centred[j]));
        let eigen = gram.symmetric_eigen();
        let largest = eigen.eigenvalues.iter().copied().fold(0.0, f64::max);
        let mut axes = Vec::new();
        for (k, &lambda) in eigen.eigenvalues.iter().enumerate() {
            if largest <= 0.0 || lambda <= PCA_KEEP * largest {
                continue;
            }
            let u = eigen.eigenvectors.column(k);
            let mut axis = vec![0.0; d];
            for (i, c) in centred.iter().enumerate() {
                for (a, x) in axis.iter_mut().zip(c) {
                    *a += u[i] * x / lambda.sqrt();
                }
            }
            axes.push(axis);
        }
        let mut space = Self {
            mean,
            axes,
            centres: Vec::new(),
            coefficients: DMatrix::zeros(m + 1, m),
        };
        space.centres = descriptors.iter().map(|s| space.project(s)).collect();
        // Eq. 5.3 with a constant polynomial: [Φ + λI, 1; 1ᵀ, 0], solved
        // for the m cardinal right-hand sides at once.
        let mut a = DMatrix::zeros(m + 1, m + 1);
        for i in 0..m {
            for j in 0..m {
                a[(i, j)] = distance(&space.centres[i], &space.centres[j]);
            }
            // φ = r is conditionally negative definite: smoothing is +λ
            // on the positive definite kernel −r, so −λ here.
            a[(i, i)] -= smoothing;
            a[(i, m)] = 1.0;
            a[(m, i)] = 1.0;
        }
        let mut rhs = DMatrix::zeros(m + 1, m);
        for i in 0..m {
            rhs[(i, i)] = 1.0;
        }
        space.coefficients = a
            .lu()
            .solve(&rhs)
            .expect("distinct centres make the RBF system regular");
        space
    }

    /// Number of principal axes kept.
    #[cfg(test)]
    pub fn dimensions(&self) -> usize {
        self.axes.len()
    }

    /// A descriptor's coordinates on the principal axes.
    pub fn project(&self, s: &[f64]) -> Vec<f64> {
        let c: Vec<f64> = s.iter().zip(&self.mean).map(|(x, a)| x - a).collect();
        self.axes.iter().map(|axis| dot(axis, &c)).collect()
    }

    /// The cardinal weights `β_i` at descriptor `s`: 1 for target i at its
    /// own pose, 0 for the others (without smoothing); they sum to one.
    pub fn weights(&self, s: &[f64]) -> Vec<f64> {
        let p = self.project(s);
        let m = self.centres.len();
        let mut phi = DVector::zeros(m + 1);
        for (i, c) in self.centres.iter().enumerate() {
            phi[i] = distance(&p, c);
        }
        phi[m] = 1.0;
        (self.coefficients.transpose() * phi)
            .iter()
            .copied()
            .collect()
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// Why a character's morph targets could not be put on its lattice.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MorphError {
    /// A target's shape turns a lattice cell inside out.
    #[error("morph target '{target}' inverts lattice cell {cell}")]
    Inverts {
        /// The target's name.
        target: String,
        /// The cell it inverts.
        cell: usize,
    },
    /// No offset of a target lies in the lattice.
    #[error("morph target '{target}': none of its {offsets} offsets lies in the flesh's lattice")]
    Outside {
        /// The target's name.
        target: String,
        /// How many offsets it has.
        offsets: usize,
    },
}

/// The targets of one lattice: pose space, fitted offsets and each
/// region's stiffness factor per target.
#[derive(Clone, Debug)]
pub struct MorphModel {
    /// The targets' names (one per kept target).
    pub names: Vec<String>,
    /// Pose space and cardinal weights.
    pub space: PoseSpace,
    /// Per target, the rest offset `Δu_i` of every lattice vertex (zero on
    /// bone vertices, which the skeleton carries).
    pub offsets: Vec<Vec<DVec3>>,
    /// Per target, `σ_{i,r}` per region.
    pub stiffness: Vec<Vec<f64>>,
}

/// The model's state at one pose: the weights and each region's terms.
#[derive(Clone, Debug, Default)]
pub struct MorphBlend {
    /// `β_i` per target (after clamping).
    pub weights: Vec<f64>,
    /// Whether the RBF weights were clamped to convex ones (an
    /// extrapolation that would make the stiffness vanish).
    pub clamped: bool,
    /// `σ_r` per region.
    pub scale: Vec<f64>,
    /// `w_r` per region, per local vertex: `Σ β_i σ_{i,r} Δu_i`.
    pub offset: Vec<Vec<DVec3>>,
}

impl MorphModel {
    /// The model of `targets` on `lattice` with `regions`: targets at the
    /// same pose are one (validation has made them equal), the offsets are
    /// fitted to the lattice vertices by least squares on the trilinear
    /// weights, and a region's stiffness factor is its bone's joint's part
    /// factor.
    pub fn new(
        targets: &[MorphTarget],
        skeleton: &Skeleton,
        lattice: &Lattice,
        regions: &[Region],
    ) -> Result<Self, MorphError> {
        let bone_joint: Vec<&str> = lattice
            .bones
            .iter()
            .map(|b| skeleton.joints[b.joint].name.as_str())
            .collect();
        let mut kept: Vec<&MorphTarget> = Vec::new();
        for t in targets {
            if !kept.iter().any(|k| same_pose(&k.posture, &t.posture)) {
                kept.push(t);
            }
        }
        let descriptors: Vec<Vec<f64>> = kept
            .iter()
            .map(|t| descriptor(skeleton, &t.posture))
            .collect();
        let mut offsets = Vec::with_capacity(kept.len());
        for t in &kept {
            let du = fit_offsets(lattice, t)?;
            if let Some(cell) = inverted_cell(lattice, &du) {
                return Err(MorphError::Inverts {
                    target: t.name.clone(),
                    cell,
                });
            }
            offsets.push(du);
        }
        let stiffness = kept
            .iter()
            .map(|t| {
                regions
                    .iter()
                    .map(|r| match r.bone {
                        Some(b) => t.part_scale(bone_joint[b]),
                        None => t.stiffness,
                    })
                    .collect()
            })
            .collect();
        Ok(Self {
            names: kept.iter().map(|t| t.name.clone()).collect(),
            space: PoseSpace::new(&descriptors, 0.0),
            offsets,
            stiffness,
        })
    }

    /// The weights β at `posture`, whether they were clamped, and each
    /// region's stiffness factor (see [`blend`](Self::blend)).
    pub fn weights(&self, skeleton: &Skeleton, posture: &Posture) -> (Vec<f64>, bool, Vec<f64>) {
        let beta = self.space.weights(&descriptor(skeleton, posture));
        let regions = self.stiffness.first().map_or(0, Vec::len);
        let scales = |beta: &[f64]| -> Vec<f64> {
            (0..regions)
                .map(|r| {
                    beta.iter()
                        .zip(&self.stiffness)
                        .map(|(b, s)| b * s[r])
                        .sum()
                })
                .collect()
        };
        let scale = scales(&beta);
        let too_soft = scale.iter().enumerate().any(|(r, &s)| {
            let softest = self
                .stiffness
                .iter()
                .map(|t| t[r])
                .fold(f64::INFINITY, f64::min);
            s < MIN_STIFFNESS_SHARE * softest
        });
        if !too_soft {
            return (beta, false, scale);
        }
        let positive: Vec<f64> = beta.iter().map(|b| b.max(0.0)).collect();
        let sum: f64 = positive.iter().sum();
        let convex: Vec<f64> = positive.iter().map(|b| b / sum).collect();
        let scale = scales(&convex);
        (convex, true, scale)
    }

    /// The blend at `posture` for `regions`: β from the pose space, clamped
    /// to convex weights where a region's stiffness would fall below
    /// [`MIN_STIFFNESS_SHARE`] of its softest target's.
    pub fn blend(&self, skeleton: &Skeleton, posture: &Posture, regions: &[Region]) -> MorphBlend {
        let (weights, clamped, scale) = self.weights(skeleton, posture);
        let offset = regions
            .iter()
            .enumerate()
            .map(|(r, region)| {
                region
                    .vertices
                    .iter()
                    .map(|&a| {
                        weights
                            .iter()
                            .zip(&self.offsets)
                            .zip(&self.stiffness)
                            .map(|((b, du), s)| du[a] * (b * s[r]))
                            .sum()
                    })
                    .collect()
            })
            .collect();
        MorphBlend {
            weights,
            clamped,
            scale,
            offset,
        }
    }
}

/// The lattice vertices' offsets that best reproduce a target's sampled
/// offsets through the trilinear weights (least squares, with a tiny pull
/// to zero for vertices no sample reaches); bone vertices keep none.
fn fit_offsets(lattice: &Lattice, target: &MorphTarget) -> Result<Vec<DVec3>, MorphError> {
    let n = lattice.vertex_count();
    // Samples stored at the vertices (as authored, in f32) are that vertex
    // exactly: embedded, f32 rounding would spread them over the cell with
    // weights of 1e-8, and put them outside the lattice on its boundary.
    let key = |p: DVec3| (p / VERTEX_MATCH).round().as_i64vec3().to_array();
    let vertex_at: HashMap<[i64; 3], usize> = (0..n).map(|a| (key(lattice.rest[a]), a)).collect();
    let samples: Vec<(Vec<(usize, f64)>, DVec3)> = target
        .offsets
        .iter()
        .filter_map(|o| {
            let p = o.at.as_dvec3();
            let support = match vertex_at.get(&key(p)) {
                Some(&a) if lattice.rest[a].distance(p) < VERTEX_MATCH => vec![(a, 1.0)],
                _ => {
                    let e = lattice.embed(p)?;
                    let c = &lattice.cells[e.cell];
                    (0..8).map(|k| (c[k], e.weights[k])).collect()
                }
            };
            Some((support, o.offset.as_dvec3()))
        })
        .collect();
    if samples.is_empty() {
        return if target.offsets.is_empty() {
            Ok(vec![DVec3::ZERO; n])
        } else {
            Err(MorphError::Outside {
                target: target.name.clone(),
                offsets: target.offsets.len(),
            })
        };
    }
    let free: Vec<bool> = (0..n)
        .map(|a| lattice.bone_of_vertex[a].is_none())
        .collect();
    // Normal equations (ΦᵀΦ + εI) x = Φᵀ o on the free vertices, by
    // Jacobi-preconditioned CG (the authored case, samples at the
    // vertices, is the identity and converges at once). ε pulls the
    // vertices no sample reaches to zero.
    let epsilon = 1e-6;
    let apply = |x: &[DVec3], y: &mut [DVec3]| {
        for (a, v) in y.iter_mut().enumerate() {
            *v = x[a] * epsilon;
        }
        for (support, _) in &samples {
            let value: DVec3 = support.iter().map(|&(a, w)| x[a] * w).sum();
            for &(a, w) in support {
                y[a] += value * w;
            }
        }
        for (v, &f) in y.iter_mut().zip(&free) {
            if !f {
                *v = DVec3::ZERO;
            }
        }
    };
    let mut diagonal = vec![epsilon; n];
    let mut b = vec![DVec3::ZERO; n];
    for (support, o) in &samples {
        for &(a, w) in support {
            diagonal[a] += w * w;
            b[a] += *o * w;
        }
    }
    for (v, &f) in b.iter_mut().zip(&free) {
        if !f {
            *v = DVec3::ZERO;
        }
    }
    let mut x = vec![DVec3::ZERO; n];
    let mut r = b.clone();
    let mut z: Vec<DVec3> = r.iter().zip(&diagonal).map(|(r, d)| *r / *d).collect();
    let mut p = z.clone();
    let mut ap = vec![DVec3::ZERO; n];
    let dot3 = |a: &[DVec3], b: &[DVec3]| -> f64 { a.iter().zip(b).map(|(x, y)| x.dot(*y)).sum() };
    let mut rz = dot3(&r, &z);
    let target_norm = 1e-12 * dot3(&b, &b).max(f64::MIN_POSITIVE);
    for _ in 0..4 * n {
        if dot3(&r, &r) <= target_norm {
            break;
        }
        apply(&p, &mut ap);
        let alpha = rz / dot3(&p, &ap);
        for a in 0..n {
            x[a] += p[a] * alpha;
            r[a] -= ap[a] * alpha;
            z[a] = r[a] / diagonal[a];
        }
        let rz_new = dot3(&r, &z);
        let beta = rz_new / rz;
        rz = rz_new;
        for a in 0..n {
            p[a] = z[a] + p[a] * beta;
        }
    }
    Ok(x)
}

/// The first cell whose trilinear map the offsets `du` turn inside out
/// (the Jacobian's determinant at a corner changes sign from the rest's).
fn inverted_cell(lattice: &Lattice, du: &[DVec3]) -> Option<usize> {
    lattice.cells.iter().position(|c| {
        let rest = c.map(|a| lattice.rest[a]);
        let moved = c.map(|a| lattice.rest[a] + du[a]);
        (0..8).any(|k| {
            let s = DVec3::new((k & 1) as f64, ((k >> 1) & 1) as f64, ((k >> 2) & 1) as f64);
            let d0 = cell_jacobian(&rest, s).determinant();
            let d1 = cell_jacobian(&moved, s).determinant();
            d0 * d1 <= 0.0
        })
    })
}

#[cfg(test)]
mod tests;
