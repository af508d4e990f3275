//! Characters that touch each other (Galoppo 2008, §4.3.3 and eq.
//! 4.27–4.32 with two bodies in a contact): several dynamic characters
//! stepped together, each one's flesh proxies meeting the others' muscles
//! pushed out by their fat (`MuscleShape` distance, the fat over the
//! muscle added), as well as the ground and the hand.
//!
//! A contact between characters A and B has two sides: A's proxy, and the
//! proxy of B nearest the point of B's surface it meets (B's impulses
//! land on points its flesh keeps responses for). The impulse λ acts on A
//! and −λ on B, so the momentum one gains the other loses. The velocity
//! that must not close is A's minus B's, and the Delassus matrix is the
//! sum of the two characters' coupled responses (each a flesh solve and
//! its core's answer, as for the ground): `W = J_A A_A⁻¹ J_Aᵀ + J_B A_B⁻¹
//! J_Bᵀ`. Every contact of the scene, with the ground or between
//! characters, goes into one condensed solve, so a character pressed
//! between the floor and another feels both.
//!
//! Soft flesh on soft flesh does not bounce ([`FLESH_RESTITUTION`]). After
//! the step each character's proxies are moved out of the ground as
//! alone, then two characters still in each other are moved apart, each
//! by its share of the depth by the other's stiffness (eq. 3.21). Only
//! positions move: the momentum the contacts exchanged stays exact.

use super::correct::{PASSES, move_point};
use super::impulse::{row_target, velocity_at};
use super::{CONTACT_MARGIN, CONTACT_TOLERANCE, Contact, ContactAt, Coupled, DynamicCore, split};
use crate::contact::{ContactRow, Obstacle, mix_friction, solve_contacts};
use crate::fem::solver::{FemBody, StepReport};
use crate::kinematics::PosedMuscle;
use glam::{DAffine3, DVec3};
use nalgebra::Vector6;
use std::time::Instant;

/// Coulomb's μ between two characters' flesh where neither part has its
/// own friction (skin on skin grips, a little less than on the ground).
pub const FLESH_FRICTION: f64 = 0.5;
/// Restitution between two characters' flesh: soft flesh does not bounce.
pub const FLESH_RESTITUTION: f64 = 0.0;

/// Why characters cannot step together.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SceneError {
    /// Every character of the scene needs a responding skeleton.
    #[error(
        "character {0} has no responding skeleton: make it dynamic (lattice FEM flesh on the ground) first"
    )]
    NotDynamic(usize),
    /// One clock for the scene.
    #[error(
        "characters {first} and {other} step differently ({why}); give them the same flesh time step and start them together"
    )]
    Clocks {
        /// The first character.
        first: usize,
        /// The one that differs.
        other: usize,
        /// Their time steps or times.
        why: String,
    },
}

/// One dynamic character of a scene, for a step with the others.
pub struct Member<'a> {
    /// Its flesh.
    pub body: &'a mut FemBody,
    /// Its skeleton's core.
    pub core: &'a mut DynamicCore,
    /// The bones in the root's frame ([`DynamicCore::relative_bones`]).
    pub relative: Vec<DAffine3>,
    /// The joints in the root's frame ([`DynamicCore::relative_joints`]).
    pub joints: Vec<DAffine3>,
    /// Its muscles where they are at the step's start: what the others'
    /// proxies meet.
    pub muscles: Vec<PosedMuscle>,
    /// Its flesh's stiffness (Young's modulus, Pa): the stiffer of two
    /// characters pressed into each other is moved out less (eq. 3.21).
    pub stiffness: f64,
}

/// One side of a contact: a point of a member, and whether the impulse
/// acts on it as it is (+1) or reversed (−1).
#[derive(Clone, Copy, Debug)]
struct Side {
    member: usize,
    at: ContactAt,
    sign: f64,
}

/// A contact of the scene: with an obstacle (one side) or between two
/// characters (two sides; the normal points from the second into the
/// first).
#[derive(Clone, Copy, Debug)]
struct SceneContact {
    sides: [Option<Side>; 2],
    normal: DVec3,
    friction: f64,
    restitution: f64,
    d0: f64,
    /// The normal velocity before the step (first side relative to the
    /// second or to the obstacle).
    before: f64,
    /// The relative velocity after the free step.
    free: DVec3,
    /// The hand's capsule, for the push reports.
    push: bool,
}

impl SceneContact {
    fn sides(&self) -> impl Iterator<Item = Side> + '_ {
        self.sides.iter().flatten().copied()
    }
}

/// What a member's free step left: its coupled system and free velocity
/// changes.
struct Free {
    coupled: Coupled,
    dv: Vec<DVec3>,
    dc: Vector6<f64>,
    report: StepReport,
}

/// Steps every member one flesh step to time `t` together: each one's
/// coupled free step, then every contact of the scene (ground, hand and
/// between characters) in one condensed solve, then each core and flesh
/// moves. All members share the time step h.
pub fn step_together(members: &mut [Member<'_>], t: f64) -> Vec<StepReport> {
    let start = Instant::now();
    let mut free: Vec<Free> = members
        .iter_mut()
        .map(|m| {
            let (coupled, dv, dc, report) = m.core.free_step(m.body, &m.relative);
            Free {
                coupled,
                dv,
                dc,
                report,
            }
        })
        .collect();
    let contact_start = Instant::now();
    let mut contacts = Vec::new();
    for (i, (m, f)) in members.iter().zip(&free).enumerate() {
        let h = m.body.settings.time_step;
        let obstacles = m.core.obstacles(t - h);
        let own = m.core.detect(
            m.body,
            &f.coupled,
            (&m.relative, &m.joints),
            &f.dv,
            &f.dc,
            &obstacles,
        );
        contacts.extend(own.iter().map(|c| with_obstacle(i, c)));
    }
    if members.len() > 1 {
        let seen: Vec<Seen> = members.iter().zip(&free).map(Seen::of).collect();
        for a in 0..members.len() {
            for b in 0..members.len() {
                if a != b {
                    contacts.extend(between(members, &seen, a, b));
                }
            }
        }
    }
    let solved = resolve(members, &mut free, &contacts);
    let contact_seconds = contact_start.elapsed().as_secs_f64();
    let mut reports = Vec::with_capacity(members.len());
    for (i, (m, f)) in members.iter_mut().zip(free).enumerate() {
        let mine: Vec<(&SceneContact, DVec3)> = contacts
            .iter()
            .zip(&solved.impulses)
            .filter(|(c, _)| c.sides().any(|s| s.member == i))
            .map(|(c, l)| (c, *l))
            .collect();
        let last = &mut m.core.last;
        last.contacts = mine.len();
        last.between = mine.iter().filter(|(c, _)| c.sides[1].is_some()).count();
        last.sweeps = solved.sweeps;
        last.violation = solved.violation;
        last.push_contacts = mine.iter().filter(|(c, _)| c.push).count();
        last.push_impulse = mine.iter().filter(|(c, _)| c.push).map(|(_, l)| l.x).sum();
        last.cone_ratio = mine
            .iter()
            .filter(|(c, l)| l.x > 0.0 && c.friction > 0.0)
            .map(|(c, l)| l.y.hypot(l.z) / (c.friction * l.x))
            .fold(0.0, f64::max);
        last.contact_seconds = contact_seconds;
        m.core.note_unsettled(t);
        let before = m.core.frame();
        m.core.advance(m.body, &m.relative, &f.dv, &f.dc, t);
        // The muscles ride the core to where the step left it.
        let carried = (m.core.frame() * before.inverse()).as_affine3a();
        for muscle in &mut m.muscles {
            muscle.to_world = carried * muscle.to_world;
            muscle.to_local = muscle.to_world.inverse();
            muscle.center = carried.transform_point3(muscle.center);
        }
        reports.push(f.report);
    }
    // What the bones hold after the step, per member (none alone).
    let pinned: Vec<Vec<bool>> = if members.len() > 1 {
        members.iter().map(pinned_after_step).collect()
    } else {
        Vec::new()
    };
    for a in 0..members.len() {
        for b in 0..members.len() {
            let both = members[a].core.position_correction && members[b].core.position_correction;
            if a != b && both {
                let deepest = correct_between(members, (a, &pinned[a]), (b, &pinned[b]));
                for i in [a, b] {
                    let last = &mut members[i].core.last;
                    last.corrected = last.corrected.max(deepest);
                }
            }
        }
    }
    for m in members.iter_mut() {
        m.core.last.step_seconds = start.elapsed().as_secs_f64();
        m.core.tally();
    }
    reports
}

/// Eq. 3.21 between two characters: after the step, every proxy of member
/// a still inside member b's dented flesh (past b's proxy it meets, along
/// the normal, as the contact solve measures it) and that proxy of b are
/// moved apart, each by its share of the depth, the softer flesh more:
/// `δx_a = −k_b/(k_a + k_b) d n` (k: each flesh's Young's modulus). Returns
/// the deepest found before correcting (m, ≥ 0).
fn correct_between(
    members: &mut [Member<'_>],
    (a, pinned_a): (usize, &[bool]),
    (b, pinned_b): (usize, &[bool]),
) -> f64 {
    let (ka, kb) = (members[a].stiffness, members[b].stiffness);
    let share = if ka + kb > 0.0 { kb / (ka + kb) } else { 0.5 };
    let mut deepest = 0.0f64;
    for pass in 0..PASSES {
        let (ma, mb) = pair_mut(members, a, b);
        let positions_b = mb.core.proxy_positions(&mb.body.lattice, &mb.body.q);
        let meetings: Vec<(usize, Meeting)> = ma
            .core
            .proxy_positions(&ma.body.lattice, &ma.body.q)
            .into_iter()
            .enumerate()
            .filter_map(|(k, x)| Some((k, meet(mb, &positions_b, x, 0.0)?)))
            .filter(|(_, m)| m.depth < 0.0)
            .collect();
        let mut moved = false;
        for (k, m) in meetings {
            let (pa, pb) = (&ma.core.proxies[k], &mb.core.proxies[m.proxy]);
            // Where both are now: a corner either shares may have moved.
            let xa = ma.core.proxy_position(&ma.body.lattice, &ma.body.q, pa);
            let xb = mb.core.proxy_position(&mb.body.lattice, &mb.body.q, pb);
            let gap = m.normal.dot(xa - xb);
            if gap >= 0.0 {
                continue;
            }
            if pass == 0 {
                deepest = deepest.max(-gap);
            }
            let out = m.normal * -gap;
            let (ea, eb) = (pa.embedding, pb.embedding);
            moved |= move_point(&ma.body.lattice, &mut ma.body.q, pinned_a, &ea, out * share);
            moved |= move_point(
                &mb.body.lattice,
                &mut mb.body.q,
                pinned_b,
                &eb,
                -out * (1.0 - share),
            );
        }
        if !moved {
            break;
        }
    }
    deepest
}

/// The vertices a member's bones (or clamps) hold where its core now is.
fn pinned_after_step(m: &Member<'_>) -> Vec<bool> {
    let d = m.core.frame();
    let bones: Vec<DAffine3> = m.relative.iter().map(|l| d * *l).collect();
    m.body
        .pin_targets(&bones)
        .iter()
        .map(Option::is_some)
        .collect()
}

/// Two distinct elements of a slice, both mutable.
fn pair_mut<T>(v: &mut [T], a: usize, b: usize) -> (&mut T, &mut T) {
    assert_ne!(a, b, "two distinct members");
    if a < b {
        let (lo, hi) = v.split_at_mut(b);
        (&mut lo[a], &mut hi[0])
    } else {
        let (lo, hi) = v.split_at_mut(a);
        (&mut hi[0], &mut lo[b])
    }
}

/// Member i's contact with an obstacle as a scene contact.
fn with_obstacle(i: usize, c: &Contact) -> SceneContact {
    SceneContact {
        sides: [
            Some(Side {
                member: i,
                at: c.at,
                sign: 1.0,
            }),
            None,
        ],
        normal: c.normal,
        friction: c.friction,
        restitution: c.obstacle.restitution(),
        d0: c.d0,
        before: c.normal.dot(c.before),
        free: c.free,
        push: matches!(c.obstacle, Obstacle::Capsule(_)),
    }
}

/// What the others meet of a member after its free step: its proxies
/// where they are, its velocities after the free step and the fastest.
struct Seen {
    positions: Vec<DVec3>,
    moved: Vec<DVec3>,
    fastest: f64,
}

impl Seen {
    fn of((m, f): (&Member<'_>, &Free)) -> Self {
        let moved: Vec<DVec3> = m.body.v.iter().zip(&f.dv).map(|(v, d)| *v + *d).collect();
        Self {
            positions: m.core.proxy_positions(&m.body.lattice, &m.body.q),
            fastest: moved.iter().map(|x| x.length()).fold(0.0, f64::max),
            moved,
        }
    }
}

/// Member a's flesh proxies that touch member b's muscles (pushed out by
/// their fat), or would within the step after the free step: one contact
/// per proxy, with the muscle it is deepest in.
fn between(members: &[Member<'_>], seen: &[Seen], a: usize, b: usize) -> Vec<SceneContact> {
    let (ma, mb) = (&members[a], &members[b]);
    let (sa, sb) = (&seen[a], &seen[b]);
    let h = ma.body.settings.time_step;
    // No point of either closes faster than this: the cull's reach.
    let reach = CONTACT_MARGIN + h * (sa.fastest + sb.fastest);
    let (la, lb) = (&ma.body.lattice, &mb.body.lattice);
    let (moved_a, moved_b) = (&sa.moved, &sb.moved);
    let (positions_a, positions_b) = (&sa.positions, &sb.positions);
    let mut contacts = Vec::new();
    for (k, (p, x)) in ma.core.proxies.iter().zip(positions_a).enumerate() {
        let Some(Meeting {
            depth: d0,
            normal,
            proxy: kb,
        }) = meet(mb, positions_b, *x, reach)
        else {
            continue;
        };
        let (ea, eb) = (p.embedding, mb.core.proxies[kb].embedding);
        let u = la.displacement(&ea, moved_a) - lb.displacement(&eb, moved_b);
        if d0 + h * normal.dot(u) > CONTACT_MARGIN {
            continue;
        }
        let before = la.displacement(&ea, &ma.body.v) - lb.displacement(&eb, &mb.body.v);
        let own = p.friction.unwrap_or(FLESH_FRICTION);
        contacts.push(SceneContact {
            sides: [
                Some(Side {
                    member: a,
                    at: ContactAt::Flesh(k, ea),
                    sign: 1.0,
                }),
                Some(Side {
                    member: b,
                    at: ContactAt::Flesh(kb, eb),
                    sign: -1.0,
                }),
            ],
            normal,
            friction: mix_friction(own, mb.core.proxies[kb].friction),
            restitution: FLESH_RESTITUTION,
            d0,
            before: normal.dot(before),
            free: u,
            push: false,
        });
    }
    contacts
}

/// Where a point meets another character.
struct Meeting {
    /// Its distance from the other's muscle pushed out by the fat
    /// (negative: inside).
    depth: f64,
    /// That muscle's outward normal there.
    normal: DVec3,
    /// The other's proxy on that muscle nearest where the point meets it.
    proxy: usize,
}

/// Where the point `x` meets member `mb` (its proxies at `positions`):
/// the muscle it is deepest in, or nearest within `reach` of, pushed out by
/// its fat, and that muscle's proxy nearest the surface point it meets.
fn meet(mb: &Member<'_>, positions: &[DVec3], x: DVec3, reach: f64) -> Option<Meeting> {
    let mut best: Option<(f64, DVec3, usize)> = None;
    for (j, muscle) in mb.muscles.iter().enumerate() {
        let fat = mb.core.muscle_fat.get(j).copied().unwrap_or(0.0);
        let centre = muscle.center.as_dvec3();
        if x.distance(centre) - f64::from(muscle.radius) - fat > reach {
            continue;
        }
        let local = muscle.to_local.transform_point3(x.as_vec3());
        let (d, n) = muscle.shape.distance_and_normal(local, reach as f32);
        let d = f64::from(d) - fat;
        let n = muscle
            .to_world
            .transform_vector3(n)
            .as_dvec3()
            .normalize_or_zero();
        if n == DVec3::ZERO || best.is_some_and(|(bd, _, _)| d >= bd) {
            continue;
        }
        best = Some((d, n, j));
    }
    let (depth, normal, j) = best?;
    let surface = x - normal * depth;
    let proxy = (0..mb.core.proxies.len())
        .filter(|&k| mb.core.proxies[k].muscle == j)
        .min_by(|&u, &v| {
            positions[u]
                .distance_squared(surface)
                .total_cmp(&positions[v].distance_squared(surface))
        })?;
    Some(Meeting {
        depth,
        normal,
        proxy,
    })
}

/// Solves the scene's condensed contact problem (one Delassus matrix over
/// every member) and adds each impulse to the members it acts on.
fn resolve(
    members: &mut [Member<'_>],
    free: &mut [Free],
    contacts: &[SceneContact],
) -> crate::contact::ContactSolve {
    let m = contacts.len();
    if m == 0 {
        return crate::contact::ContactSolve::default();
    }
    let h = members[0].body.settings.time_step;
    // Each member's known Δv with zeros, and whether its responses may be
    // kept across steps (see `DynamicCore::resolve`).
    let setup: Vec<(Vec<Option<DVec3>>, bool)> = members
        .iter_mut()
        .zip(free.iter())
        .map(|(mb, f)| {
            let cacheable = mb.body.morph.is_none() && mb.body.constraints.is_empty();
            if !cacheable {
                mb.core.responses.clear();
            }
            let zero = f
                .coupled
                .base
                .iter()
                .map(|b| b.map(|_| DVec3::ZERO))
                .collect();
            (zero, cacheable)
        })
        .collect();
    let frames: Vec<[DVec3; 3]> = contacts
        .iter()
        .map(|c| ContactRow::frame_of(c.normal))
        .collect();
    // Column (contact, axis): each side's response to a unit impulse
    // along the axis (the side's sign is applied where it is used).
    type Response = (Vec<DVec3>, Vector6<f64>);
    let mut responses: Vec<[Option<Response>; 2]> = Vec::with_capacity(3 * m);
    for (c, frame) in contacts.iter().zip(&frames) {
        for axis in *frame {
            let mut col: [Option<Response>; 2] = [None, None];
            for (slot, side) in c.sides.iter().enumerate() {
                let Some(s) = side else { continue };
                let (mb, f) = (&mut members[s.member], &mut free[s.member]);
                let (zero, cacheable) = &setup[s.member];
                col[slot] = Some(mb.core.unit_response(
                    mb.body,
                    &f.coupled,
                    (s.at, axis),
                    (*cacheable, zero),
                    &mut f.report,
                ));
            }
            responses.push(col);
        }
    }
    let n3 = 3 * m;
    let mut w = vec![0.0; n3 * n3];
    for (col, answers) in responses.iter().enumerate() {
        let by = &contacts[col / 3];
        for (slot, r) in by.sides.iter().enumerate() {
            let (Some(r), Some((total, core))) = (r, &answers[slot]) else {
                continue;
            };
            let core_v = split(core);
            for (i, c) in contacts.iter().enumerate() {
                for s in c.sides().filter(|s| s.member == r.member) {
                    let lattice = &members[s.member].body.lattice;
                    let u = velocity_at(lattice, s.at, total, core_v) * (s.sign * r.sign);
                    for a in 0..3 {
                        w[(3 * i + a) * n3 + col] += frames[i][a].dot(u);
                    }
                }
            }
        }
    }
    let rows: Vec<ContactRow> = contacts
        .iter()
        .zip(&frames)
        .map(|(c, frame)| ContactRow {
            frame: *frame,
            free_velocity: c.free,
            target: row_target(c.d0, c.before, c.restitution, h),
            friction: c.friction,
        })
        .collect();
    let solved = solve_contacts(&rows, &w, CONTACT_TOLERANCE);
    for (i, l) in solved.impulses.iter().enumerate() {
        for a in 0..3 {
            if l[a] == 0.0 {
                continue;
            }
            for (slot, side) in contacts[i].sides.iter().enumerate() {
                let (Some(s), Some((total, core))) = (side, &responses[3 * i + a][slot]) else {
                    continue;
                };
                let scale = l[a] * s.sign;
                let f = &mut free[s.member];
                for (d, x) in f.dv.iter_mut().zip(total) {
                    *d += *x * scale;
                }
                f.dc += core * scale;
            }
        }
    }
    solved
}
