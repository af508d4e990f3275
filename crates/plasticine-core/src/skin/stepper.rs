//! Stepping one skin to a target time: adaptive steps, constraint enforcement
//! with rejection and root bracketing (LEMAN §4.2.3), and rollback when the
//! state diverges. `Simulation` runs one of these per skin, in parallel.

use super::carry::Carry;
use super::constraints::{ConstraintReport, Constraints, ContactResponse};
use super::contact::{ContactPlan, Junctions, Obstacles};
use super::driver::SkeletonDriver;
use super::elastic::Grid;
use super::integrate::{Integrator, SecondOrderSystem, StepOutcome, Tolerances};
use super::settings::{Frequency, SimError, SimEvent, SkinStats, SolverSettings};
use super::system::SkinSystem;
use crate::character::{Character, Skin};
use crate::contact::{Obstacle, Plane};
use glam::Vec3;
use std::time::Instant;

/// Per-skin solver state.
pub(super) struct SkinRuntime {
    pub(super) integrator: Box<dyn Integrator>,
    pub(super) time: f64,
    pub(super) h: f64,
    /// Largest step allowed, cut after a divergence.
    pub(super) h_cap: f64,
    pub(super) constraints: Constraints,
    pub(super) stats: SkinStats,
    /// Point-steps of the last advance: what the next is likely to cost,
    /// for sharing the threads between skins.
    pub(super) work: u64,
}

/// Pairs of neighbouring quads that turned from smooth (under 30°) to
/// folded (over 120°) within one advance: a real fold forms over many
/// frames, a skin tearing itself apart (a step past its stability limit, a
/// force that is not a gradient) folds many pairs at once. Torn above a
/// share of the pairs that no motion of a skin produces in one frame.
pub(super) const TORN_SHARE: f32 = 0.005;

fn torn(before: &[f32], after: &[f32]) -> bool {
    let folded = before
        .iter()
        .zip(after)
        .filter(|(b, a)| **b < 30.0 && **a > 120.0)
        .count();
    folded as f32 > (TORN_SHARE * before.len() as f32).max(4.0)
}

/// A cut step limit grows back by this factor per clean advance, up to the
/// tolerances' largest step. A rollback answers one bad moment (a fold that
/// a shorter step formed more gently); a limit cut for good left a skin at
/// a fraction of its step for the rest of the session (measured: a torso
/// elbow bent 137° over half a second took 30,821 arm steps in 1.2 s, and
/// 16,336 with the limit growing back; the straight arm takes 396). Where
/// the step really is too long the skin tears again and is rolled back
/// again, and is reported each time.
const RECOVERY: f64 = std::f64::consts::SQRT_2;

/// How many of its budgets an advance's retries may use after the budget
/// itself: an advance with a budget ends within 1 + this many of them.
const RETRY_BUDGETS: u32 = 4;

/// A try at an advance that went bad.
#[derive(Clone, Copy, Debug)]
struct Failure {
    at: f64,
    /// Folded many pairs at once (`torn`) rather than not finite, past the
    /// speed limit or sunk into a muscle. A step past the stability limit
    /// tears, and a shorter step then does not; a motion that really folds
    /// a coarse skin does it at any step.
    torn: bool,
    /// The longest step the try took: the next try's limit is cut from it
    /// (the limit it had may not have been what bounded the steps).
    longest_step: f64,
}

fn diverged(r: &[Vec3], v: &[Vec3], max_speed: f32) -> bool {
    let limit = max_speed * max_speed;
    r.iter().any(|x| !x.is_finite())
        || v.iter()
            .any(|x| !x.is_finite() || x.length_squared() > limit)
}

/// Advances one skin: everything it needs, borrowed for the duration.
pub(super) struct SkinStepper<'a> {
    pub(super) character: &'a Character,
    pub(super) driver: &'a SkeletonDriver,
    /// The FEM flesh, stepped past the target already.
    pub(super) flesh: Option<&'a super::flesh::FleshRun>,
    pub(super) settings: &'a SolverSettings,
    /// The hand's capsules: the skin is held out of them.
    pub(super) pushers: &'a [crate::contact::Capsule],
    pub(super) skin: &'a mut Skin,
    pub(super) rt: &'a mut SkinRuntime,
    pub(super) index: usize,
    /// The skin's highest frequency `ω_max` (rad/s) and smallest stretch when
    /// measured, for the stability limit.
    pub(super) omega: Frequency,
    /// The other skins as they were at the start of the advance, and where
    /// this one joins them, when skins keep out of each other.
    pub(super) contact: Option<(&'a Obstacles, &'a Junctions)>,
}

impl SkinStepper<'_> {
    /// Advances to `target`; on divergence rolls back to the state at entry, cuts
    /// the step limit, tells the caller, and tries again.
    pub(super) fn advance(
        &mut self,
        target: f64,
        deadline: Option<Instant>,
    ) -> Result<Vec<SimEvent>, SimError> {
        let mut events = Vec::new();
        let retry_deadline =
            deadline.map(|d| d + d.saturating_duration_since(Instant::now()) * RETRY_BUDGETS);
        let good_time = self.rt.time;
        let good_r = self.skin.points.position.clone();
        let good_v = self.skin.points.velocity.clone();
        let min_step = self.settings.tolerances.min_step;
        let mut failures = 0;
        // A tear reported by the first try is held back until a try with a
        // shorter step settles what it was (see `Failure::torn`).
        let mut held_tear: Option<(SimEvent, f64)> = None;
        loop {
            // A retry covers the span the failed try was asked for past the
            // wall-clock budget: cut short by a budget the first try used
            // up, it would cover a step or two and could not tell the
            // integrator's tear from the motion's fold, and a rollback it
            // wrongly reports cuts the step limit (measured: a flipper
            // yanked a radian with 0.1–3 ms budgets per advance gave 4–5
            // rollbacks, and stalled at the minimum step in 2 of 30 runs;
            // with whole retries, 0–2 and none). Not without end, though:
            // a skin that keeps diverging retried at ever shorter steps
            // over a whole span held its thread for a second (found by
            // fuzzing), where the app's snapshots and its shutdown wait on
            // an advance bounded by its budget.
            let budget = if failures == 0 {
                deadline
            } else {
                retry_deadline
            };
            match self.try_advance(target, budget) {
                Ok(()) => {
                    if failures == 0 {
                        let max_step = self.settings.tolerances.max_step;
                        self.rt.h_cap = (self.rt.h_cap * RECOVERY).min(max_step);
                    }
                    events.extend(held_tear.map(|(e, _)| e));
                    return Ok(events);
                }
                Err(Failure { torn: true, .. }) if held_tear.is_some() => {
                    // A step four times shorter folded the skin the same way:
                    // the fold is the motion's (a coarse skin swung hard, a
                    // muscle moved at once), not the integrator's. Keep this
                    // try and the step limit it had before.
                    if let Some((_, h_cap)) = held_tear {
                        self.rt.h_cap = h_cap;
                    }
                    return Ok(events);
                }
                Err(failure) => {
                    let at = failure.at;
                    failures += 1;
                    let rt = &mut *self.rt;
                    let h_cap_before = rt.h_cap;
                    rt.stats.rollbacks += 1;
                    rt.time = good_time;
                    rt.h_cap = (rt.h_cap.min(failure.longest_step) * 0.25).max(min_step);
                    rt.h = rt.h.min(rt.h_cap);
                    rt.integrator = self.settings.integrator.create();
                    self.skin.points.position.clone_from(&good_r);
                    self.skin.points.velocity.clone_from(&good_v);
                    let event = SimEvent::Diverged {
                        skin: self.index,
                        at,
                        rolled_back_to: good_time,
                        new_max_step: rt.h_cap,
                    };
                    tracing::warn!(
                        skin = self.index,
                        at,
                        torn = failure.torn,
                        "skin diverged: rolled back to t={good_time:.4}, step limit now {:.2e} s",
                        rt.h_cap
                    );
                    match (failure.torn, failures) {
                        (true, 1) => held_tear = Some((event, h_cap_before)),
                        _ => events
                            .extend(held_tear.take().map(|(e, _)| e).into_iter().chain([event])),
                    }
                    if failures >= 4 || rt.h_cap <= min_step {
                        return Err(SimError::Diverged {
                            skin: self.index,
                            at,
                            good: good_time,
                            step: rt.h_cap,
                        });
                    }
                }
            }
        }
    }

    /// Steps to `target`; the failure if the state went bad.
    fn try_advance(&mut self, target: f64, deadline: Option<Instant>) -> Result<(), Failure> {
        let settings = self.settings;
        let tol = settings.tolerances;
        let adaptive = settings.integrator.is_adaptive();
        // The explicit integrators' stability limit (eq. 15 bounds accuracy
        // only), measured on the skin as created; where edges have since
        // been compressed the skin is stiffer (its bending grips a quad as
        // 1/size, its shear as 1/length), so the limit falls in proportion.
        let limit = super::stability::stable_h_omega(settings.integrator)
            .filter(|_| self.omega.omega > 0.0)
            .map(|c| c / self.omega.omega);
        let mut r = std::mem::take(&mut self.skin.points.position);
        let mut v = std::mem::take(&mut self.skin.points.velocity);
        let skin: &Skin = self.skin;
        let rt = &mut *self.rt;
        let mut sys = SkinSystem::new(self.character, skin, self.driver)
            .with_flesh(self.flesh)
            .with_pushers(self.pushers);
        let entry_time = rt.time;
        let entry_steps = rt.stats.steps;
        let mut r0 = r.clone();
        let mut v0 = v.clone();
        let mut result = Ok(());
        // The stretch as the last force evaluation measured it (the step's
        // middle), or measured here before the first.
        let stable_now = |sys: &SkinSystem, r: &[Vec3]| match limit {
            Some(h) => {
                let stretch = sys.last_min_stretch().unwrap_or_else(|| sys.min_stretch(r));
                let ratio = (stretch / self.omega.stretch.max(1e-6)).clamp(0.05, 1.0);
                (h * ratio as f64).max(tol.min_step)
            }
            None => f64::INFINITY,
        };
        let mut stable = stable_now(&sys, &r);
        let grid = sys.grid;
        let mut plan = match self.contact {
            Some((obstacles, junctions)) => {
                let body = &sys.layers(rt.time).body;
                let anchor = |k: usize| super::constraints::anchor(body, &skin.muscles, r[k]);
                let fat = &skin.points.fat;
                let plan =
                    ContactPlan::new(self.index, &grid, &r, &v, obstacles, junctions, fat, anchor);
                Some((plan, obstacles))
            }
            None => None,
        };
        let fat = advance_fat(skin, &mut sys, plan.as_ref().map(|(p, _)| p), rt.time, &r);
        // The tear check's reference: the skin after the advance's first
        // step, not before it. A posture set at once (a key jumped to, a
        // slider dragged, an undo) moves the muscles in that step and the
        // fat layer projects the skin with them: a fold made by the user's
        // edit, which the skin then works out over the following frames.
        let mut entry_angles: Option<Vec<f32>> = None;
        let mut longest_step = 0.0f64;
        while rt.time < target - 1e-12 {
            // Out of budget: stop, but only after one step, so every call makes
            // progress even when this skin waited for a thread.
            if rt.time > entry_time && deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            let t = rt.time;
            let remaining = target - t;
            let mut h = if adaptive {
                rt.h.min(rt.h_cap)
            } else {
                tol.fixed_step.min(rt.h_cap)
            }
            .min(stable);
            // Land on the target without leaving a sliver of a step: split a short
            // remainder in two rather than stretching the step (which a rejected
            // step would retry forever).
            if h >= remaining {
                h = remaining;
            } else if remaining - h < 0.25 * h {
                h = 0.5 * remaining;
            }
            r0.copy_from_slice(&r);
            v0.copy_from_slice(&v);
            let out = carried_step(rt, &mut sys, (t, h), &mut r, &mut v, &tol);
            if !out.accepted {
                v.copy_from_slice(&v0);
                rt.stats.error_rejections += 1;
                rt.h = out.next_h.min(rt.h_cap);
                continue;
            }
            // §4.2.3: enforce the constraints; if a correction exceeds ε(c), reject
            // the step and bracket the largest step whose corrections stay within it.
            let mut h_taken = h;
            let mut rep = enforce(
                &mut sys,
                &mut rt.constraints,
                plan.as_mut(),
                &fat,
                settings.contact,
                t + h,
                &mut r,
                &mut v,
            );
            if rep.max_correction > tol.constraint && h > 2.0 * tol.min_step {
                rt.stats.constraint_rejections += 1;
                let full = (r.clone(), v.clone(), rep);
                let start = (&r0[..], &v0[..]);
                let kept = largest_step_within_tolerance(
                    rt, &mut sys, &mut plan, &fat, settings, t, h, start, &mut r, &mut v,
                );
                if let Some((rl, vl, tr, lo)) = kept {
                    r.copy_from_slice(&rl);
                    v.copy_from_slice(&vl);
                    h_taken = lo;
                    rep = tr;
                    rt.h = h_taken.max(tol.min_step);
                } else {
                    // Take the full step; the projection has already resolved it.
                    let (rf, vf, tr) = full;
                    r.copy_from_slice(&rf);
                    v.copy_from_slice(&vf);
                    rep = tr;
                    rt.h = if adaptive {
                        out.next_h.min(rt.h_cap)
                    } else {
                        h
                    };
                }
            } else {
                rt.h = if adaptive {
                    out.next_h.min(rt.h_cap)
                } else {
                    h
                };
            }
            rt.stats.max_correction = rt.stats.max_correction.max(rep.max_correction);
            stable = stable_now(&sys, &r);
            rt.time = t + h_taken;
            rt.stats.steps += 1;
            rt.stats.smallest_step = rt.stats.smallest_step.min(h_taken);
            rt.stats.largest_step = rt.stats.largest_step.max(h_taken);
            longest_step = longest_step.max(h_taken);
            if entry_angles.is_none() {
                entry_angles = Some(super::quality::neighbour_angles(&grid, &r));
            }
            if diverged(&r, &v, settings.max_speed) {
                result = Err(Failure {
                    at: rt.time,
                    torn: false,
                    longest_step,
                });
                break;
            }
        }
        if let (Ok(()), Some(entry_angles)) = (&result, &entry_angles)
            && let Some(failure) = garbage(
                &mut sys,
                entry_angles,
                &r,
                (rt.time, longest_step),
                tol.constraint,
            )
        {
            result = Err(failure);
        }
        drop(sys);
        rt.work = (rt.stats.steps - entry_steps) * r.len() as u64;
        self.skin.points.position = r;
        self.skin.points.velocity = v;
        result
    }
}

/// §4.2.3's bracketing: the largest step in (0, h) from (r0, v0) at `t`
/// whose constraint corrections stay within ε(c), by bisection (five
/// halvings). Its state, report and length, or None where a quarter step
/// still violates as much: the violation does not come from this step's
/// motion (there is no root to bracket), e.g. a fold whose normals flipped.
#[expect(
    clippy::too_many_arguments,
    reason = "one step's state and each layer it is held to, all used once"
)]
fn largest_step_within_tolerance(
    rt: &mut SkinRuntime,
    sys: &mut SkinSystem,
    plan: &mut Option<(ContactPlan, &Obstacles)>,
    fat: &[f32],
    settings: &SolverSettings,
    t: f64,
    h: f64,
    (r0, v0): (&[Vec3], &[Vec3]),
    r: &mut [Vec3],
    v: &mut [Vec3],
) -> Option<(Vec<Vec3>, Vec<Vec3>, ConstraintReport, f64)> {
    let tol = settings.tolerances;
    let (mut lo, mut hi) = (0.0, h);
    let mut kept = None;
    for halving in 0..5 {
        let mid = 0.5 * (lo + hi);
        r.copy_from_slice(r0);
        v.copy_from_slice(v0);
        let o = carried_step(rt, sys, (t, mid), r, v, &tol);
        let trial = o.accepted.then(|| {
            enforce(
                sys,
                &mut rt.constraints,
                plan.as_mut(),
                fat,
                settings.contact,
                t + mid,
                r,
                v,
            )
        });
        match trial {
            Some(tr) if tr.max_correction <= tol.constraint => {
                lo = mid;
                kept = Some((r.to_vec(), v.to_vec(), tr, lo));
            }
            _ => {
                hi = mid;
                if halving >= 1 && kept.is_none() {
                    break;
                }
            }
        }
    }
    kept
}

/// One integrator step from `t` over `h`, the velocities first carried by
/// the responding skeleton's frame where there is one (see [`Carry`]); a
/// rejected step leaves the carried velocities for the caller to restore.
fn carried_step(
    rt: &mut SkinRuntime,
    sys: &mut SkinSystem,
    (t, h): (f64, f64),
    r: &mut [Vec3],
    v: &mut [Vec3],
    tol: &Tolerances,
) -> StepOutcome {
    if let Some(carry) = Carry::of(sys.character, sys.driver, sys.flesh) {
        let kinematic = sys.kinematic_mask().expect("a skin has its kinematic rows");
        carry.kick(t, h, r, v, kinematic);
    }
    rt.integrator.step(sys, t, h, r, v, tol)
}

/// Garbage that is neither NaN nor runaway speed, checked at the end of an
/// advance: a skin that tore itself apart (against its neighbour angles
/// after the advance's first step, `entry_angles`), or sank into a muscle.
fn garbage(
    sys: &mut SkinSystem,
    entry_angles: &[f32],
    r: &[Vec3],
    (at, longest_step): (f64, f64),
    tolerance: f32,
) -> Option<Failure> {
    let grid = sys.grid;
    let tore = torn(entry_angles, &super::quality::neighbour_angles(&grid, r));
    let muscles = &sys.skin.muscles;
    let under = sys.layers(at);
    let sunk = super::constraints::deepest_sinking(&grid, &under.body, muscles, r) > tolerance;
    (sunk || tore).then_some(Failure {
        at,
        torn: !sunk && tore,
        longest_step,
    })
}

/// Enforces non-penetration at time t with the inner layers the system already
/// posed for that time (the integrator just prescribed the boundary there).
/// The muscles first, then the other skins, as far as the muscles allow:
/// where the two disagree (a skin squeezed between its muscle and another
/// skin) the muscle wins, and the skin never sinks into it.
#[expect(
    clippy::too_many_arguments,
    reason = "one step's state and each layer it is held to, all used once"
)]
fn enforce(
    sys: &mut SkinSystem,
    c: &mut Constraints,
    plan: Option<&mut (ContactPlan, &Obstacles)>,
    fat: &[f32],
    contact: ContactResponse,
    t: f64,
    r: &mut [Vec3],
    v: &mut [Vec3],
) -> ConstraintReport {
    let (grid, skin) = (sys.grid, sys.skin);
    // The hand's capsules first: where one presses the skin onto a muscle
    // the muscle wins (the skin never sinks into it), so the muscles and
    // the other skins come after.
    let mut hands = ConstraintReport::default();
    for capsule in sys.pushers {
        let rep = hold_outside(&Obstacle::Capsule(capsule.at(t)), &grid, contact, r, v);
        hands = merged(hands, rep);
    }
    let under = sys.layers(t);
    let report = c.resolve(
        &grid,
        fat,
        &under.body,
        &under.later,
        r,
        v,
        &skin.muscles,
        contact,
        true,
    );
    if let Some((plan, obstacles)) = plan {
        // The fat may give all the way within an advance (the room for it
        // was measured at the start, and a limb moving in takes more), the
        // muscle never.
        plan.enforce(obstacles, t, r, v, |p| {
            under.body.fat_depth(0.0, &skin.muscles, p) <= 0.0
        });
    }
    let report = merged(report, hands);
    // A responding skeleton's ground holds the skin too (its flesh lands
    // on it; the skin, lagging, would dip under it).
    match ground_of(sys) {
        Some(g) => merged(
            report,
            hold_outside(&Obstacle::Plane(g), &grid, contact, r, v),
        ),
        None => report,
    }
}

/// The fat layer for an advance from `t`: squeezed where a limb presses
/// against another skin (see [`ContactPlan::squeeze`]) or the ground.
fn advance_fat<'s>(
    skin: &'s Skin,
    sys: &mut SkinSystem,
    plan: Option<&ContactPlan>,
    t: f64,
    r: &[Vec3],
) -> std::borrow::Cow<'s, [f32]> {
    let mut fat = std::borrow::Cow::Borrowed(&skin.points.fat[..]);
    if let Some(plan) = plan {
        plan.squeeze(fat.to_mut());
    }
    if let Some(ground) = ground_of(sys) {
        let grid = sys.grid;
        let body = &sys.layers(t).body;
        squeeze_on_ground(&ground, (&grid, &skin.muscles), body, r, fat.to_mut());
    }
    fat
}

/// A responding skeleton's ground, where the character has one.
fn ground_of(sys: &SkinSystem) -> Option<Plane> {
    sys.flesh
        .and_then(super::flesh::FleshRun::fem)
        .and_then(crate::fem::FleshSim::core)
        .map(|core| core.ground)
}

/// Thins the fat layer `fat` where a muscle lies within it of the ground:
/// the flesh beneath is held on the floor (its proxies carry the fat), and
/// a skin point cannot keep both its fat and the floor. Without this the
/// fat layer pushed the point into the floor and the floor pushed it back
/// every step, and a flipper lying on the floor crumpled (64×64 FEM
/// penguin, tipped over: p95 55–120°, 40 % of the flipper's rows).
fn squeeze_on_ground(
    ground: &Plane,
    (grid, wrapped): (&Grid, &[usize]),
    body: &crate::kinematics::PosedBody,
    r: &[Vec3],
    fat: &mut [f32],
) {
    // Points this far above the floor (beyond their fat) cannot reach it
    // within an advance.
    const REACH: f32 = 0.05;
    let height = |p: Vec3| ground.distance(p.as_dvec3()) as f32;
    for k in grid.m..r.len() - grid.m {
        if height(r[k]) > fat[k] + REACH {
            continue;
        }
        let room = height(super::constraints::anchor(body, wrapped, r[k]));
        if room < fat[k] {
            fat[k] = room.max(0.0);
        }
    }
}

/// Two constraint passes' reports as one.
fn merged(a: ConstraintReport, b: ConstraintReport) -> ConstraintReport {
    ConstraintReport {
        max_correction: a.max_correction.max(b.max_correction),
        corrected: a.corrected + b.corrected,
        tests: a.tests + b.tests,
    }
}

/// Puts every free skin point inside obstacle `o` back on its surface, its
/// velocity into it (relative to the obstacle's) answered as the muscles
/// answer it (`contact`'s restitution and sliding); the boundary rows are
/// the joints'.
fn hold_outside(
    o: &Obstacle,
    grid: &Grid,
    contact: ContactResponse,
    r: &mut [Vec3],
    v: &mut [Vec3],
) -> ConstraintReport {
    let moving = o.velocity().as_vec3();
    let mut rep = ConstraintReport::default();
    for j in (0..grid.n).filter(|&j| !grid.is_boundary_row(j)) {
        for i in 0..grid.m {
            let k = grid.idx(i, j);
            rep.tests += 1;
            let (d, n) = o.distance_normal(r[k].as_dvec3());
            if d >= 0.0 {
                continue;
            }
            let (d, n) = (d as f32, n.as_vec3());
            r[k] -= n * d;
            rep.corrected += 1;
            rep.max_correction = rep.max_correction.max(-d);
            let rel = v[k] - moving;
            let vn = rel.dot(n);
            if vn < 0.0 {
                let along = rel - n * vn;
                v[k] = moving - contact.k_normal * vn * n + contact.k_tangent * along;
            }
        }
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A few pairs folding in one advance is motion; a share of the skin
    /// folding at once is a tear.
    #[test]
    fn a_tear_is_many_pairs_folding_at_once() {
        let before = vec![10.0f32; 4000];
        let mut after = before.clone();
        for a in after.iter_mut().take(4) {
            *a = 170.0;
        }
        assert!(!torn(&before, &after), "four pairs");
        for a in after.iter_mut().take(100) {
            *a = 170.0;
        }
        assert!(torn(&before, &after), "a hundred pairs");
        // Pairs that were already folded do not count.
        let folded = vec![150.0f32; 4000];
        assert!(!torn(&folded, &vec![170.0; 4000]));
    }
}
