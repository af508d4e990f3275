//! The contacts of one character's dynamic step (Galoppo eq. 4.27–4.32,
//! 3.13–3.22): detection against the ground and the hand, each contact's
//! coupled response to a unit impulse, and each one's least velocity after
//! the step. The condensed solve over them (and over other characters'
//! contacts) and its impulses applied are `together`'s.

use super::kept::RegionResponse;
use super::{CONTACT_MARGIN, CORRECTION, Contact, ContactAt, Coupled, DynamicCore, split};
use crate::contact::{Obstacle, mix_friction};
use crate::fem::solver::{FemBody, StepReport, VelocitySolve};
use glam::{DAffine3, DVec3};
use nalgebra::Vector6;

impl DynamicCore {
    /// The flesh proxies and bone points that touch an obstacle, or would
    /// within the step after the free step's `dv`, `dc`: one contact per
    /// point and obstacle.
    pub(super) fn detect(
        &self,
        body: &FemBody,
        coupled: &Coupled,
        (relative, joints): (&[DAffine3], &[DAffine3]),
        dv: &[DVec3],
        dc: &Vector6<f64>,
        obstacles: &[Obstacle],
    ) -> Vec<Contact> {
        let h = body.settings.time_step;
        let lattice = &body.lattice;
        let moved: Vec<DVec3> = body.v.iter().zip(dv).map(|(v, d)| *v + *d).collect();
        let (core_v, core_w) = split(dc);
        let (core_v, core_w) = (self.velocity + core_v, self.angular_velocity + core_w);
        let mut contacts: Vec<Contact> = Vec::new();
        for (k, p) in self.proxies.iter().enumerate() {
            // Cheap test on the embedded point first; the fat reaches
            // at most its length further.
            let x = lattice.deform(&p.embedding, &body.q);
            let u = lattice.displacement(&p.embedding, &moved);
            let mut exact = None;
            for o in obstacles {
                let (d, n) = o.distance_normal(x);
                let closing = h * n.dot(u - o.velocity());
                if d + closing - p.fat.length() > CONTACT_MARGIN {
                    continue;
                }
                let at = *exact.get_or_insert_with(|| self.proxy_position(lattice, &body.q, p));
                let (d0, normal) = o.distance_normal(at);
                if d0 + h * normal.dot(u - o.velocity()) > CONTACT_MARGIN {
                    continue;
                }
                contacts.push(Contact {
                    at: ContactAt::Flesh(k, p.embedding),
                    obstacle: *o,
                    friction: mix_friction(o.friction(), p.friction),
                    normal,
                    d0,
                    free: u - o.velocity(),
                    before: lattice.displacement(&p.embedding, &body.v) - o.velocity(),
                });
            }
        }
        let now = self.frame();
        let (bone_points, ring_points) = if self.bone_contacts {
            (&self.bone_points[..], &self.ring_points[..])
        } else {
            (&[][..], &[][..])
        };
        // The core's own points, now and where the free motion puts them:
        // along the bones, and the skins' end rings on their joints.
        let core_points = bone_points
            .iter()
            .map(|&(b, p)| {
                (
                    (now * relative[b]).transform_point3(p),
                    coupled.bones_hat[b].transform_point3(p),
                )
            })
            .chain(ring_points.iter().map(|&(j, p)| {
                (
                    (now * joints[j]).transform_point3(p),
                    (coupled.d_hat * joints[j]).transform_point3(p),
                )
            }));
        for (x, x_hat) in core_points {
            let arm = x_hat - coupled.c_hat;
            let u = core_v + core_w.cross(arm);
            let before = self.velocity + self.angular_velocity.cross(x - self.position);
            for o in obstacles {
                let (d0, normal) = o.distance_normal(x);
                if d0 + h * normal.dot(u - o.velocity()) > CONTACT_MARGIN {
                    continue;
                }
                contacts.push(Contact {
                    at: ContactAt::Bone(arm),
                    obstacle: *o,
                    friction: o.friction(),
                    normal,
                    d0,
                    free: u - o.velocity(),
                    before: before - o.velocity(),
                });
            }
        }
        contacts
    }
}

/// The least normal velocity a contact at distance `d0` that closed at
/// `before` (its normal velocity before the step) may leave a step of `h`
/// with: close a gap and no further, push a share of a penetration out,
/// bounce by the restitution ε (see [`crate::contact::ContactRow::target`]).
pub(super) fn row_target(d0: f64, before: f64, restitution: f64, h: f64) -> f64 {
    let target = if d0 >= 0.0 {
        -d0 / h
    } else {
        -CORRECTION * d0 / h
    };
    if d0 <= CONTACT_MARGIN && before < 0.0 {
        target.max(-restitution * before)
    } else {
        target
    }
}

/// The velocity at `at` of a response: the flesh's `total` Δv there, or
/// the core's (`lin`, `ang`) at a bone point.
pub(super) fn velocity_at(
    lattice: &crate::fem::lattice::Lattice,
    at: ContactAt,
    total: &[DVec3],
    (lin, ang): (DVec3, DVec3),
) -> DVec3 {
    match at {
        ContactAt::Flesh(_, e) => lattice.displacement(&e, total),
        ContactAt::Bone(arm) => lin + ang.cross(arm),
    }
}

impl DynamicCore {
    /// The flesh's Δv and the core's `Δv_c` for a unit impulse along
    /// `axis` at `at` (on the flesh: a flesh solve, kept across steps where
    /// `cacheable`, and the core's answer to what reaches the bones; on a
    /// bone: the core's answer), with the flesh the core carries.
    /// `zero` is the step's known Δv with every entry zero.
    pub(super) fn unit_response(
        &mut self,
        body: &mut FemBody,
        coupled: &Coupled,
        (at, axis): (ContactAt, DVec3),
        (cacheable, zero): (bool, &[Option<DVec3>]),
        report: &mut StepReport,
    ) -> (Vec<DVec3>, Vector6<f64>) {
        let (mut total, core) = match at {
            ContactAt::Flesh(k, _) if cacheable => {
                let (dv, reaction) = self.cached_response(body, &coupled.bones_hat, k, axis);
                (dv, coupled.core_answer(&reaction))
            }
            ContactAt::Flesh(_, e) => {
                let r = body.solve_velocity(
                    &coupled.bones_hat,
                    &VelocitySolve {
                        known: zero,
                        loads: false,
                        impulses: &[(e, axis)],
                        damping_frame: None,
                        reactions: true,
                    },
                );
                report.solves.extend(r.report.solves);
                let core = coupled.core_answer(&r.reaction);
                (r.dv, core)
            }
            ContactAt::Bone(arm) => {
                let (f, t) = (axis, arm.cross(axis));
                let core = coupled.core_wrench(Vector6::new(f.x, f.y, f.z, t.x, t.y, t.z));
                (vec![DVec3::ZERO; body.vertex_count()], core)
            }
        };
        coupled.carry(&mut total, &core);
        (total, core)
    }

    /// The flesh's Δv and the known vertices' reactions (world) for a
    /// unit impulse along `axis` at proxy `k`, held bones, no loads: the
    /// blend of every region's kept local answers, turned by this step's
    /// bone frames `bones`.
    pub(super) fn cached_response(
        &mut self,
        body: &mut FemBody,
        bones: &[DAffine3],
        k: usize,
        axis: DVec3,
    ) -> (Vec<DVec3>, Vec<DVec3>) {
        if !self.responses.entries.contains_key(&k) {
            let e = self.proxies[k].embedding;
            let mut list = Vec::new();
            for ri in 0..body.regions.len() {
                let mut answers = Vec::with_capacity(3);
                for a in 0..3 {
                    match body.region_impulse_response(ri, &e, a) {
                        Some(r) => answers.push(r),
                        None => break,
                    }
                }
                if answers.len() == 3 {
                    let [x, y, z]: [(Vec<DVec3>, Vec<DVec3>); 3] =
                        answers.try_into().expect("three axes");
                    list.push(RegionResponse {
                        region: ri,
                        dv: [x.0, y.0, z.0],
                        reaction: [x.1, y.1, z.1],
                    });
                }
            }
            let bytes: usize = list
                .iter()
                .map(|r| 6 * r.dv[0].len() * std::mem::size_of::<DVec3>())
                .sum();
            self.responses.make_room(bytes);
            self.responses.bytes += bytes;
            self.responses.entries.insert(k, (bytes, 0, list));
        }
        self.responses.clock += 1;
        let clock = self.responses.clock;
        let entry = self.responses.entries.get_mut(&k).expect("kept above");
        entry.1 = clock;
        let n = body.vertex_count();
        let (mut dv, mut reaction) = (vec![DVec3::ZERO; n], vec![DVec3::ZERO; n]);
        for r in &self.responses.entries[&k].2 {
            let region = &body.regions[r.region];
            let rot = body.region_transform(region, bones).matrix3;
            let local = rot.transpose() * axis;
            for (l, &a) in region.vertices.iter().enumerate() {
                let w = region.weights[l];
                let x = r.dv[0][l] * local.x + r.dv[1][l] * local.y + r.dv[2][l] * local.z;
                dv[a] += rot * x * w;
                let f = r.reaction[0][l] * local.x
                    + r.reaction[1][l] * local.y
                    + r.reaction[2][l] * local.z;
                reaction[a] += rot * f * w;
            }
        }
        (dv, reaction)
    }
}
