//! Inverse kinematics for the posture tool (LEMAN §6.1).
//!
//! The animator checks a skeleton by dragging an end-effector joint; "the
//! entire kinematic chain up to the nearest branching point" follows, for a
//! translation, a rotation or both. LEMAN multiplies the differential vector
//! by the inverse Jacobian of the chain and repeats this for every input event
//! at interactive speed. We use the damped least-squares form of that inverse
//! (Wampler, "Manipulator inverse kinematic solutions based on vector
//! formulations and damped least-squares methods", IEEE SMC 1986; Nakamura &
//! Hanafusa, "Inverse kinematic solutions with singularity robustness for
//! robot manipulator control", J. Dyn. Sys. 1986), which stays well behaved at
//! and near singular postures (a straight arm) where the plain pseudo-inverse
//! produces huge joint velocities, and iterate it a few times per event so the
//! end effector lands on the target rather than on its linearisation, with
//! Levenberg–Marquardt control of the damping so that unreachable targets
//! (large residuals) do not make the steps oscillate.
//!
//! DOF axis convention (matching [`super::forward_kinematics`]): a joint's
//! world rotation is `R_parent · rest_rotation · Rx(θx) · Ry(θy) · Rz(θz)`, so
//! the world axis of θx is `R_parent · rest · x̂`, that of θy is
//! `R_parent · rest · Rx(θx) · ŷ` and that of θz is
//! `R_parent · rest · Rx(θx) · Ry(θy) · ẑ`. All three pass through the joint's
//! origin.

use crate::character::{Dof, Joint, Posture, Skeleton};
use glam::{Quat, Vec3};

/// The joints that move when the user drags `end_effector` (LEMAN §6.1): the
/// end effector and its ancestors up to and including the nearest one with
/// more than one child (the branching point), or up to the root. Ordered from
/// the top of the chain down to the end effector.
///
/// The end effector itself is part of the chain: its own DOFs cannot move its
/// position, so [`IkSolver::solve`] uses them only for a rotation target.
/// Joints whose DOFs are all locked stay in the list (they carry the geometry)
/// but contribute no Jacobian columns.
///
/// Panics if `end_effector` is not a joint of the skeleton.
pub fn chain_to_branch(skeleton: &Skeleton, end_effector: usize) -> Vec<usize> {
    assert!(
        end_effector < skeleton.joints.len(),
        "end effector {end_effector} is not a joint of a {}-joint skeleton",
        skeleton.joints.len()
    );
    let mut chain = vec![end_effector];
    let mut j = end_effector;
    while let Some(p) = skeleton.joints[j].parent {
        chain.push(p);
        if skeleton.children(p).nth(1).is_some() {
            break;
        }
        j = p;
    }
    chain.reverse();
    chain
}

/// Where the end effector should go, in world space: a position, an
/// orientation (of the end effector's frame), or both.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IkTarget {
    /// World position for the end effector's origin (m), or `None` to leave it free.
    pub position: Option<Vec3>,
    /// World orientation for the end effector's frame, or `None` to leave it free.
    pub orientation: Option<Quat>,
}

impl IkTarget {
    /// A target for the end effector's position only.
    pub fn position(p: Vec3) -> Self {
        Self {
            position: Some(p),
            orientation: None,
        }
    }

    /// A target for both the end effector's position and its orientation.
    pub fn pose(p: Vec3, q: Quat) -> Self {
        Self {
            position: Some(p),
            orientation: Some(q),
        }
    }
}

/// Solver parameters. Lengths in metres, angles in radians.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IkSettings {
    /// λ of damped least squares: trades accuracy near singular postures for
    /// bounded joint steps. Same units as the position error (metres), so it
    /// should be small against the chain's length. This is the floor: within
    /// a solve, λ grows (×2 per step) while the linearised model predicts the
    /// error reduction poorly and falls back to it when the model is good.
    pub damping: f32,
    /// Jacobian updates per solve (one drag event) at most.
    pub max_iterations: usize,
    /// Converged when the end effector is this close to the target position.
    pub position_tolerance: f32,
    /// ... and its rotation this close to the target orientation.
    pub orientation_tolerance: f32,
    /// Largest change of any one DOF per iteration; larger steps are scaled
    /// down as a whole (keeping their direction), as the linearisation only
    /// holds for small rotations.
    pub max_step: f32,
}

impl Default for IkSettings {
    fn default() -> Self {
        Self {
            damping: 0.05,
            max_iterations: 64,
            position_tolerance: 1e-4,
            orientation_tolerance: 1e-3,
            max_step: 0.2,
        }
    }
}

/// Outcome of one solve. Errors are those of the final posture (zero for a
/// part of the target that was not given).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IkReport {
    /// Jacobian updates tried (one forward pass each; steps undone because
    /// they did not reduce the error included).
    pub iterations: usize,
    /// Distance from the end effector to the target position, metres.
    pub position_error: f32,
    /// Angle between the end effector's and the target orientation, radians.
    pub orientation_error: f32,
    /// Both errors within tolerance.
    pub converged: bool,
}

/// One free DOF of the chain: a Jacobian column.
#[derive(Clone, Copy, Debug)]
struct ChainDof {
    /// Index into the solver's root-to-end-effector path.
    at: usize,
    axis: usize,
    min: f32,
    max: f32,
}

/// Steps smaller than this (radians, largest DOF) mean the solve has stalled
/// (an unreachable target, or every useful DOF at a limit).
const STALL_STEP: f32 = 1e-6;

/// Damped least-squares IK solver with reusable scratch buffers, so repeated
/// drag events allocate nothing once the buffers have grown.
#[derive(Clone, Debug, Default)]
pub struct IkSolver {
    /// Joints from the root down to the end effector.
    path: Vec<usize>,
    /// Working (clamped) angles, world positions, world rotations and world
    /// DOF axes along `path`.
    angles: Vec<Vec3>,
    pos: Vec<Vec3>,
    rot: Vec<Quat>,
    axes: Vec<[Vec3; 3]>,
    dofs: Vec<ChainDof>,
    /// Jacobian columns (first `m` rows used), active flags and the step.
    cols: Vec<[f32; 6]>,
    active: Vec<bool>,
    step: Vec<f32>,
    /// DOF values before the current step, to undo a step that did not help.
    saved: Vec<f32>,
}

impl IkSolver {
    /// A solver with empty scratch buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the joints of `chain` so that `end_effector` reaches `target`,
    /// starting from the current `posture` (one drag event).
    ///
    /// Only the free DOFs of chain joints that are ancestors of the end
    /// effector (or the end effector itself, for an orientation target) are
    /// changed; every other angle and the root translation are left exactly as
    /// they were. Changed angles end within their joints' limits.
    ///
    /// Each iteration does one forward pass along the chain, builds the
    /// geometric Jacobian (column `[ω × (p_e − p_j); ω]` per DOF, ω its world
    /// axis), and steps `Δθ = Jᵀ (J Jᵀ + λ² I)⁻¹ e` (a 3×3 or 6×6 Cholesky
    /// solve), with `e` the position error and/or the rotation vector of
    /// `q_target · q_current⁻¹` (metres and radians weigh alike). DOFs at a
    /// limit that the step would push further are dropped for that iteration
    /// so the others take over. λ adapts Levenberg–Marquardt style (see
    /// [`IkSettings::damping`]). A drag event of a few centimetres typically
    /// takes one or two iterations.
    ///
    /// Chain entries that are not ancestors of the end effector (or the end
    /// effector itself) are ignored: moving them would not move it. Panics if
    /// `end_effector` is not a joint of the skeleton, or if the posture has
    /// fewer angles than the skeleton has joints.
    pub fn solve(
        &mut self,
        skeleton: &Skeleton,
        posture: &mut Posture,
        end_effector: usize,
        chain: &[usize],
        target: &IkTarget,
        settings: &IkSettings,
    ) -> IkReport {
        assert!(
            posture.angles.len() >= skeleton.joints.len(),
            "posture has {} angles for {} joints",
            posture.angles.len(),
            skeleton.joints.len()
        );
        let top = self.setup(skeleton, posture, end_effector, chain, target);
        self.fk(skeleton, posture.root_translation, 0);
        let with_position = target.position.is_some();
        let base = (settings.damping * settings.damping).max(1e-12);
        let mut lambda2 = base;
        let (mut e, mut m, mut pos_err, mut ori_err) = self.error(target);
        let mut cost = dot(&e, m);
        let mut iterations = 0;
        let converged = |p: f32, o: f32| {
            p <= settings.position_tolerance && o <= settings.orientation_tolerance
        };
        while !converged(pos_err, ori_err) && iterations < settings.max_iterations {
            self.saved.clear();
            self.saved
                .extend(self.dofs.iter().map(|d| self.angles[d.at][d.axis]));
            let Some(predicted) = self.iterate(e, m, with_position, lambda2, settings) else {
                break;
            };
            iterations += 1;
            self.fk(skeleton, posture.root_translation, top);
            let (e2, m2, p2, o2) = self.error(target);
            let cost2 = dot(&e2, m2);
            // Levenberg–Marquardt damping control by the gain ratio (actual
            // over predicted cost reduction): where the linear model is good
            // the damping relaxes back to λ; where it is poor (large residuals
            // of an unreachable target, strong curvature) the step is shortened
            // toward gradient descent, and a step that does not help at all is
            // undone. This keeps the DLS step from overshooting back and forth.
            let gain = (cost - cost2) / predicted.max(f32::MIN_POSITIVE);
            if cost2 < cost {
                (e, m, pos_err, ori_err, cost) = (e2, m2, p2, o2, cost2);
                if gain > 0.75 {
                    lambda2 = (0.25 * lambda2).max(base);
                } else if gain < 0.25 {
                    lambda2 *= 4.0;
                }
            } else {
                for (d, a) in self.dofs.iter().zip(&self.saved) {
                    self.angles[d.at][d.axis] = *a;
                }
                self.fk(skeleton, posture.root_translation, top);
                lambda2 *= 4.0;
            }
        }
        self.write_back(posture);
        IkReport {
            iterations,
            position_error: pos_err,
            orientation_error: ori_err,
            converged: converged(pos_err, ori_err),
        }
    }

    /// Fills the path, working angles and DOF list; returns the first path
    /// index whose frame the solve can change.
    fn setup(
        &mut self,
        skeleton: &Skeleton,
        posture: &Posture,
        end_effector: usize,
        chain: &[usize],
        target: &IkTarget,
    ) -> usize {
        self.path.clear();
        let mut j = end_effector;
        loop {
            self.path.push(j);
            match skeleton.joints[j].parent {
                Some(p) => j = p,
                None => break,
            }
        }
        self.path.reverse();
        let n = self.path.len();
        self.angles.clear();
        self.angles.extend(self.path.iter().map(|&j| {
            let joint: &Joint = &skeleton.joints[j];
            super::clamp_angles(&joint.dofs, posture.angles[j])
        }));
        self.pos.resize(n, Vec3::ZERO);
        self.rot.resize(n, Quat::IDENTITY);
        self.axes.resize(n, [Vec3::ZERO; 3]);

        // The end effector's own DOFs only turn it in place.
        let use_end = target.orientation.is_some();
        self.dofs.clear();
        let mut top = n;
        for (at, &j) in self.path.iter().enumerate() {
            if !chain.contains(&j) || (at + 1 == n && !use_end) {
                continue;
            }
            top = top.min(at);
            let d: &[Dof; 3] = &skeleton.joints[j].dofs;
            for (axis, dof) in d.iter().enumerate() {
                if dof.free && dof.min < dof.max {
                    self.dofs.push(ChainDof {
                        at,
                        axis,
                        min: dof.min,
                        max: dof.max,
                    });
                }
            }
        }
        self.cols.resize(self.dofs.len(), [0.0; 6]);
        self.active.resize(self.dofs.len(), true);
        self.step.resize(self.dofs.len(), 0.0);
        top.min(n - 1)
    }

    /// World frames and DOF axes along the path from index `from` on (the
    /// frames above it are unchanged by the solve).
    fn fk(&mut self, skeleton: &Skeleton, root_translation: Vec3, from: usize) {
        for k in from..self.path.len() {
            let joint = &skeleton.joints[self.path[k]];
            let (pp, pq) = if k == 0 {
                (root_translation, Quat::IDENTITY)
            } else {
                (self.pos[k - 1], self.rot[k - 1])
            };
            let a = self.angles[k];
            let q0 = pq * joint.rest_rotation;
            let q1 = q0 * Quat::from_rotation_x(a.x);
            let q2 = q1 * Quat::from_rotation_y(a.y);
            self.pos[k] = pp + pq * joint.offset;
            self.rot[k] = q2 * Quat::from_rotation_z(a.z);
            self.axes[k] = [q0 * Vec3::X, q1 * Vec3::Y, q2 * Vec3::Z];
        }
    }

    /// Error vector (position rows, then rotation rows), its length, and the
    /// position and orientation errors.
    fn error(&self, target: &IkTarget) -> ([f32; 6], usize, f32, f32) {
        let mut e = [0.0; 6];
        let mut m = 0;
        let (mut pos_err, mut ori_err) = (0.0, 0.0);
        let end = self.path.len() - 1;
        if let Some(p) = target.position {
            let d = p - self.pos[end];
            e[..3].copy_from_slice(&d.to_array());
            m = 3;
            pos_err = d.length();
        }
        if let Some(q) = target.orientation {
            let (v, angle) = rotation_vector(q * self.rot[end].inverse());
            e[m..m + 3].copy_from_slice(&v.to_array());
            m += 3;
            ori_err = angle;
        }
        (e, m, pos_err, ori_err)
    }

    /// One damped least-squares update of the working angles. Returns false
    /// when no DOF can move any more (stalled).
    /// One damped least-squares update of the working angles. Returns the
    /// cost reduction the linearisation predicts, or None when no DOF can
    /// move any more (stalled).
    fn iterate(
        &mut self,
        e: [f32; 6],
        m: usize,
        with_position: bool,
        lambda2: f32,
        settings: &IkSettings,
    ) -> Option<f32> {
        if m == 0 || self.dofs.is_empty() {
            return None;
        }
        let end = self.pos[self.path.len() - 1];
        for (c, d) in self.cols.iter_mut().zip(&self.dofs) {
            let w = self.axes[d.at][d.axis];
            let mut r = 0;
            if with_position {
                let v = w.cross(end - self.pos[d.at]);
                c[..3].copy_from_slice(&v.to_array());
                r = 3;
            }
            if r < m {
                c[r..r + 3].copy_from_slice(&w.to_array());
            }
        }
        self.active.fill(true);
        loop {
            // A = J Jᵀ + λ² I over the active columns; y = A⁻¹ e; Δθ = Jᵀ y.
            let mut a = [0.0f32; 36];
            for (c, _) in self.cols.iter().zip(&self.active).filter(|(_, on)| **on) {
                for i in 0..m {
                    for j in 0..=i {
                        a[i * 6 + j] += c[i] * c[j];
                    }
                }
            }
            for i in 0..m {
                a[i * 6 + i] += lambda2;
            }
            let mut y = e;
            if !cholesky_solve(&a, &mut y, m) {
                return None;
            }
            let mut dropped = false;
            for k in 0..self.dofs.len() {
                if !self.active[k] {
                    self.step[k] = 0.0;
                    continue;
                }
                let c = &self.cols[k];
                let s: f32 = (0..m).map(|i| c[i] * y[i]).sum();
                let d = self.dofs[k];
                let theta = self.angles[d.at][d.axis];
                if (theta >= d.max && s > 0.0) || (theta <= d.min && s < 0.0) {
                    self.active[k] = false;
                    dropped = true;
                }
                self.step[k] = s;
            }
            if !dropped {
                break;
            }
            if !self.active.iter().any(|&on| on) {
                return None;
            }
        }
        let largest = self.step.iter().fold(0.0f32, |m, s| m.max(s.abs()));
        if largest < STALL_STEP {
            return None;
        }
        let scale = if largest > settings.max_step {
            settings.max_step / largest
        } else {
            1.0
        };
        // Apply, and predict the cost reduction |e|² − |e − J δ|² of the
        // step δ actually taken (after scaling and clamping).
        let mut jd = [0.0f32; 6];
        for ((d, s), c) in self.dofs.iter().zip(&self.step).zip(&self.cols) {
            let a = &mut self.angles[d.at][d.axis];
            let old = *a;
            *a = (old + s * scale).clamp(d.min, d.max);
            let delta = *a - old;
            for i in 0..m {
                jd[i] += c[i] * delta;
            }
        }
        Some((0..m).map(|i| jd[i] * (2.0 * e[i] - jd[i])).sum())
    }

    /// Writes the working angles of the solved DOFs back to the posture.
    fn write_back(&self, posture: &mut Posture) {
        for d in &self.dofs {
            posture.angles[self.path[d.at]][d.axis] = self.angles[d.at][d.axis];
        }
    }
}

fn dot(e: &[f32; 6], m: usize) -> f32 {
    e[..m].iter().map(|x| x * x).sum()
}

/// Rotation vector (axis · angle, angle in [0, π]) of a unit quaternion and
/// its angle. Uses atan2, which stays accurate for the small angles near
/// convergence where acos(w) loses most of its f32 digits.
fn rotation_vector(q: Quat) -> (Vec3, f32) {
    let q = if q.w < 0.0 { -q } else { q };
    let v = Vec3::new(q.x, q.y, q.z);
    let s = v.length();
    if s < 1e-12 {
        return (2.0 * v, 2.0 * s);
    }
    let angle = 2.0 * s.atan2(q.w);
    (v * (angle / s), angle)
}

/// Solves `A x = b` for a symmetric positive definite `m×m` matrix (lower
/// triangle stored row-major with stride 6), by nalgebra's Cholesky
/// factorization: `b` becomes `x`. Returns false if `A` is not numerically
/// positive definite.
fn cholesky_solve(a: &[f32; 36], b: &mut [f32; 6], m: usize) -> bool {
    let lower = |i: usize, j: usize| a[i.max(j) * 6 + i.min(j)];
    let matrix = nalgebra::DMatrix::from_fn(m, m, lower);
    let Some(factor) = matrix.cholesky() else {
        return false;
    };
    let x = factor.solve(&nalgebra::DVector::from_column_slice(&b[..m]));
    if x.iter().any(|v| !v.is_finite()) {
        return false;
    }
    b[..m].copy_from_slice(x.as_slice());
    true
}

/// One-shot solve: [`IkSolver::solve`] with fresh buffers. Keep an
/// [`IkSolver`] around instead when handling a stream of drag events.
pub fn solve_ik(
    skeleton: &Skeleton,
    posture: &mut Posture,
    end_effector: usize,
    chain: &[usize],
    target: &IkTarget,
    settings: &IkSettings,
) -> IkReport {
    IkSolver::new().solve(skeleton, posture, end_effector, chain, target, settings)
}

/// A serial chain for the drag benchmarks and tests: `joints` articulated
/// joints 0.1 m apart along +y, each with three free DOFs limited to
/// ±1.5 rad, and a tip joint (the end effector) 0.1 m past the last one; with
/// a gently curled start posture (away from the straight, singular one).
pub fn demo_chain(joints: usize) -> (Skeleton, Posture) {
    let limit = Dof {
        free: true,
        min: -1.5,
        max: 1.5,
    };
    let joints: Vec<Joint> = (0..=joints)
        .map(|k| Joint {
            locked: false,
            name: if k == joints {
                "tip".into()
            } else {
                format!("j{k}")
            },
            parent: k.checked_sub(1),
            offset: if k == 0 { Vec3::ZERO } else { 0.1 * Vec3::Y },
            rest_rotation: Quat::IDENTITY,
            dofs: [limit; 3],
        })
        .collect();
    let mut posture = Posture {
        root_translation: Vec3::ZERO,
        angles: vec![Vec3::new(0.05, 0.02, 0.25); joints.len()],
        blend: Vec::new(),
    };
    if let Some(tip) = posture.angles.last_mut() {
        *tip = Vec3::ZERO;
    }
    (Skeleton { joints }, posture)
}

/// Target of drag event `k` on a closed curve (about 0.25 m across) through
/// `start`: each event moves 1–3 cm, with pseudo-random spacing along the
/// curve, as a hand-held 3D mouse would.
pub fn demo_drag_target(start: Vec3, k: usize) -> Vec3 {
    let k = k as f32;
    let t = 0.08 * k + 0.03 * (1.7 * k).sin();
    start + 0.12 * Vec3::new(t.sin(), 0.5 * (2.0 * t).sin(), 1.0 - t.cos())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinematics::forward_kinematics;

    fn dof(min: f32, max: f32) -> Dof {
        Dof {
            free: true,
            min,
            max,
        }
    }

    fn joint(name: &str, parent: Option<usize>, offset: Vec3, dofs: [Dof; 3]) -> Joint {
        Joint {
            locked: false,
            name: name.into(),
            parent,
            offset,
            rest_rotation: Quat::IDENTITY,
            dofs,
        }
    }

    /// Planar arm in the xy plane: shoulder at the origin, upper arm 1 m and
    /// forearm 0.8 m along x, rotating about z only.
    fn planar_arm(elbow: Dof) -> Skeleton {
        let z = |d: Dof| [Dof::LOCKED, Dof::LOCKED, d];
        Skeleton {
            joints: vec![
                joint("shoulder", None, Vec3::ZERO, z(Dof::default())),
                joint("elbow", Some(0), Vec3::X, z(elbow)),
                joint("hand", Some(1), 0.8 * Vec3::X, [Dof::LOCKED; 3]),
            ],
        }
    }

    fn posture(angles: &[Vec3]) -> Posture {
        Posture {
            root_translation: Vec3::ZERO,
            angles: angles.to_vec(),
            blend: Vec::new(),
        }
    }

    fn world_position(s: &Skeleton, p: &Posture, j: usize) -> Vec3 {
        forward_kinematics(s, p)[j].translation.into()
    }

    fn world_rotation(s: &Skeleton, p: &Posture, j: usize) -> Quat {
        let (_, r, _) = forward_kinematics(s, p)[j].to_scale_rotation_translation();
        r
    }

    /// Two-link IK by the law of cosines, elbow sign chosen.
    fn analytic(target: Vec3, l1: f32, l2: f32, elbow_sign: f32) -> (f32, f32) {
        let d2 = target.length_squared();
        let c = ((d2 - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)).clamp(-1.0, 1.0);
        let elbow = elbow_sign * c.acos();
        let shoulder = target.y.atan2(target.x) - (l2 * elbow.sin()).atan2(l1 + l2 * elbow.cos());
        (shoulder, elbow)
    }

    #[test]
    fn solver_frames_and_jacobian_match_forward_kinematics_and_finite_differences() {
        // Non-trivial rest rotations and all three axes free, so a wrong
        // axis order (Rx·Ry·Rz) would show.
        let mut s = Skeleton {
            joints: vec![
                joint("a", None, Vec3::new(0.1, 0.2, 0.0), [Dof::default(); 3]),
                joint("b", Some(0), Vec3::new(0.3, 0.1, -0.2), [Dof::default(); 3]),
                joint("c", Some(1), Vec3::new(0.0, 0.4, 0.1), [Dof::default(); 3]),
            ],
        };
        s.joints[1].rest_rotation = Quat::from_euler(glam::EulerRot::XYZ, 0.3, -0.5, 0.8);
        let mut p = posture(&[
            Vec3::new(0.4, -0.7, 0.3),
            Vec3::new(-0.2, 0.9, 0.5),
            Vec3::new(0.6, 0.1, -0.4),
        ]);
        p.root_translation = Vec3::new(1.0, -2.0, 0.5);
        let target = IkTarget::pose(Vec3::ZERO, Quat::IDENTITY);
        let mut ik = IkSolver::new();
        ik.setup(&s, &p, 2, &[0, 1, 2], &target);
        ik.fk(&s, p.root_translation, 0);
        let w = forward_kinematics(&s, &p);
        for k in 0..3 {
            assert!((ik.pos[k] - Vec3::from(w[k].translation)).length() < 1e-5);
            let (_, r, _) = w[k].to_scale_rotation_translation();
            assert!(rotation_vector(ik.rot[k] * r.inverse()).1 < 1e-5);
        }
        let (e, m, _, _) = ik.error(&target);
        assert!(
            ik.iterate(e, m, true, 1e-12, &IkSettings::default())
                .is_some()
        );
        // `iterate` filled the columns; compare each with central differences.
        let h = 1e-3;
        for (c, d) in ik.cols.iter().zip(&ik.dofs) {
            let j = ik.path[d.at];
            let mut plus = p.clone();
            let mut minus = p.clone();
            plus.angles[j][d.axis] += h;
            minus.angles[j][d.axis] -= h;
            let dp = (world_position(&s, &plus, 2) - world_position(&s, &minus, 2)) / (2.0 * h);
            let dq = world_rotation(&s, &plus, 2) * world_rotation(&s, &minus, 2).inverse();
            let (dw, _) = rotation_vector(dq);
            let dw = dw / (2.0 * h);
            let col_p = Vec3::new(c[0], c[1], c[2]);
            let col_w = Vec3::new(c[3], c[4], c[5]);
            assert!(
                (col_p - dp).length() < 2e-3,
                "joint {j} axis {}: {col_p} vs {dp}",
                d.axis
            );
            assert!(
                (col_w - dw).length() < 2e-3,
                "joint {j} axis {}: {col_w} vs {dw}",
                d.axis
            );
        }
    }

    #[test]
    fn two_link_arm_reaches_the_analytic_solution_nearest_its_start() {
        let s = planar_arm(Dof::default());
        let chain = chain_to_branch(&s, 2);
        assert_eq!(chain, vec![0, 1, 2]);
        let target = Vec3::new(1.2, 0.9, 0.0);
        for (start, sign) in [
            (Vec3::new(0.0, 0.0, 0.3), 1.0),
            (Vec3::new(0.0, 0.0, 1.0), -1.0),
        ] {
            let mut p = posture(&[start, Vec3::new(0.0, 0.0, 0.5 * sign), Vec3::ZERO]);
            let r = solve_ik(
                &s,
                &mut p,
                2,
                &chain,
                &IkTarget::position(target),
                &IkSettings::default(),
            );
            assert!(r.converged, "{r:?}");
            let (shoulder, elbow) = analytic(target, 1.0, 0.8, sign);
            assert!(
                (p.angles[0].z - shoulder).abs() < 1e-3,
                "{} vs {shoulder}",
                p.angles[0].z
            );
            assert!(
                (p.angles[1].z - elbow).abs() < 1e-3,
                "{} vs {elbow}",
                p.angles[1].z
            );
            assert!(world_position(&s, &p, 2).distance(target) < 1e-4);
            // Locked DOFs untouched.
            assert_eq!(
                (p.angles[0].x, p.angles[0].y, p.angles[1].x),
                (0.0, 0.0, 0.0)
            );
        }
    }

    #[test]
    fn unreachable_target_leaves_the_arm_stretched_toward_it() {
        let s = planar_arm(Dof::default());
        let target = Vec3::new(2.5, 1.5, 0.0);
        let mut p = posture(&[
            Vec3::new(0.0, 0.0, 0.3),
            Vec3::new(0.0, 0.0, 0.5),
            Vec3::ZERO,
        ]);
        let r = solve_ik(
            &s,
            &mut p,
            2,
            &[0, 1, 2],
            &IkTarget::position(target),
            &IkSettings::default(),
        );
        assert!(!r.converged);
        let reach = 1.8;
        let d = target.length();
        assert!((r.position_error - (d - reach)).abs() < 1e-4, "{r:?}");
        assert!(p.angles[1].z.abs() < 0.01, "elbow {}", p.angles[1].z);
        let hand = world_position(&s, &p, 2);
        assert!(hand.distance(target.normalize() * reach) < 1e-3, "{hand}");
        // Stalled well before the iteration limit.
        assert!(r.iterations < IkSettings::default().max_iterations, "{r:?}");
    }

    #[test]
    fn joint_limits_hold_and_the_arm_gets_as_close_as_it_can() {
        let limit = 0.6;
        let s = planar_arm(dof(0.0, limit));
        let target = Vec3::new(1.2, 0.9, 0.0); // needs an elbow of 1.18 rad
        let mut p = posture(&[
            Vec3::new(0.0, 0.0, 0.2),
            Vec3::new(0.0, 0.0, 0.3),
            Vec3::ZERO,
        ]);
        let r = solve_ik(
            &s,
            &mut p,
            2,
            &[0, 1, 2],
            &IkTarget::position(target),
            &IkSettings::default(),
        );
        assert!(!r.converged);
        assert_eq!(p.angles[1].z, limit);
        // Closest reachable: elbow at the limit, hand on the ray to the target.
        let reach = (Vec3::X + 0.8 * Vec3::new(limit.cos(), limit.sin(), 0.0)).length();
        assert!(
            (r.position_error - (reach - target.length())).abs() < 1e-4,
            "{r:?}"
        );
        let hand = world_position(&s, &p, 2);
        assert!(hand.distance(target.normalize() * reach) < 1e-4, "{hand}");
    }

    #[test]
    fn position_and_orientation_targets_are_both_met() {
        let s = Skeleton {
            joints: vec![
                joint("shoulder", None, Vec3::ZERO, [dof(-2.0, 2.0); 3]),
                joint("elbow", Some(0), 0.3 * Vec3::X, [dof(-2.0, 2.0); 3]),
                joint("wrist", Some(1), 0.25 * Vec3::X, [dof(-2.0, 2.0); 3]),
            ],
        };
        let goal = posture(&[
            Vec3::new(0.3, -0.4, 0.5),
            Vec3::new(-0.2, 0.3, 0.6),
            Vec3::new(0.4, 0.2, -0.3),
        ]);
        let target = IkTarget::pose(world_position(&s, &goal, 2), world_rotation(&s, &goal, 2));
        let mut p = posture(&[
            Vec3::new(0.0, 0.0, 0.2),
            Vec3::new(0.0, 0.0, 0.3),
            Vec3::ZERO,
        ]);
        let settings = IkSettings::default();
        let r = solve_ik(&s, &mut p, 2, &chain_to_branch(&s, 2), &target, &settings);
        assert!(r.converged, "{r:?}");
        let pos_err = world_position(&s, &p, 2).distance(target.position.unwrap());
        let ori_err = world_rotation(&s, &p, 2).angle_between(target.orientation.unwrap());
        assert!(pos_err <= settings.position_tolerance, "{pos_err}");
        assert!(
            ori_err <= 1.01 * settings.orientation_tolerance,
            "{ori_err}"
        );
        // The wrist's own DOFs were needed for the orientation.
        assert_ne!(p.angles[2], Vec3::ZERO);
    }

    /// pelvis ─ spine ─ chest ┬ `l_shoulder` ─ `l_elbow` ─ `l_hand`
    ///    │                   └ `r_shoulder` ─ `r_elbow` ─ `r_hand`
    ///    └ hip ─ knee
    fn tree() -> Skeleton {
        let f = [dof(-2.0, 2.0); 3];
        Skeleton {
            joints: vec![
                joint("pelvis", None, Vec3::ZERO, f),
                joint("spine", Some(0), 0.2 * Vec3::Y, f),
                joint("chest", Some(1), 0.2 * Vec3::Y, f),
                joint("l_shoulder", Some(2), Vec3::new(0.2, 0.1, 0.0), f),
                joint("l_elbow", Some(3), 0.3 * Vec3::X, f),
                joint("l_hand", Some(4), 0.25 * Vec3::X, f),
                joint("r_shoulder", Some(2), Vec3::new(-0.2, 0.1, 0.0), f),
                joint("r_elbow", Some(6), -0.3 * Vec3::X, f),
                joint("r_hand", Some(7), -0.25 * Vec3::X, f),
                joint("hip", Some(0), Vec3::new(0.1, -0.1, 0.0), f),
                joint("knee", Some(9), -0.4 * Vec3::Y, f),
            ],
        }
    }

    #[test]
    fn chain_stops_at_the_branching_joint_and_the_rest_keeps_its_angles() {
        let s = tree();
        assert_eq!(chain_to_branch(&s, 5), vec![2, 3, 4, 5]);
        assert_eq!(chain_to_branch(&s, 8), vec![2, 6, 7, 8]);
        assert_eq!(chain_to_branch(&s, 2), vec![0, 1, 2]);
        assert_eq!(chain_to_branch(&s, 10), vec![0, 9, 10]);
        assert_eq!(chain_to_branch(&s, 0), vec![0]);

        let mut p = Posture {
            root_translation: Vec3::new(0.5, 1.0, -0.3),
            angles: (0..s.joints.len())
                .map(|k| Vec3::new(0.1, -0.05, 0.2) * (1.0 + 0.1 * k as f32))
                .collect(),
            blend: Vec::new(),
        };
        let before = p.clone();
        let hand = world_position(&s, &p, 5);
        let chest = world_position(&s, &p, 2);
        // Well inside the reach of the arm plus chest.
        let target = chest.lerp(hand, 0.8) + Vec3::new(0.0, 0.03, 0.05);
        let chain = chain_to_branch(&s, 5);
        let r = solve_ik(
            &s,
            &mut p,
            5,
            &chain,
            &IkTarget::position(target),
            &IkSettings::default(),
        );
        assert!(r.converged, "{r:?}");
        assert!(world_position(&s, &p, 5).distance(target) < 1e-4);
        assert_eq!(p.root_translation, before.root_translation);
        for k in [0, 1, 5, 6, 7, 8, 9, 10] {
            assert_eq!(p.angles[k], before.angles[k], "joint {}", s.joints[k].name);
        }
        assert!((2..5).any(|k| p.angles[k] != before.angles[k]));
    }

    #[test]
    fn ten_joint_chain_follows_fifty_drag_events() {
        let (s, mut p) = demo_chain(10);
        let tip = s.joints.len() - 1;
        let chain = chain_to_branch(&s, tip);
        assert_eq!(chain.len(), 11);
        let start = world_position(&s, &p, tip);
        let settings = IkSettings::default();
        let mut ik = IkSolver::new();
        let mut total = 0;
        for k in 1..=50 {
            let target = demo_drag_target(start, k);
            let step = target.distance(demo_drag_target(start, k - 1));
            assert!((0.003..0.04).contains(&step), "event {k} moves {step} m");
            let r = ik.solve(
                &s,
                &mut p,
                tip,
                &chain,
                &IkTarget::position(target),
                &settings,
            );
            assert!(r.converged, "event {k}: {r:?}");
            assert!(world_position(&s, &p, tip).distance(target) <= settings.position_tolerance);
            for (j, a) in s.joints.iter().zip(&p.angles) {
                assert_eq!(crate::kinematics::clamp_angles(&j.dofs, *a), *a);
            }
            total += r.iterations;
        }
        assert!(total <= 50 * 8, "{total} iterations for 50 events");
    }
}
