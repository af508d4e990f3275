//! The contacts of a dynamic step (Galoppo eq. 4.27–4.32, 3.13–3.22):
//! detection against the ground, each contact's coupled response, the
//! condensed solve, and its impulses applied.

use super::{
    CONTACT_MARGIN, CONTACT_TOLERANCE, CORRECTION, Contact, ContactAt, Coupled, DynamicCore, split,
};
use crate::contact::{ContactRow, solve_contacts};
use crate::fem::solver::{FemBody, StepReport, VelocitySolve};
use glam::{DAffine3, DVec3};
use nalgebra::Vector6;

impl DynamicCore {
    /// The flesh proxies and bone points that touch the ground, or would
    /// within the step after the free step's `dv`, `dc`.
    pub(super) fn detect(
        &self,
        body: &FemBody,
        coupled: &Coupled,
        relative: &[DAffine3],
        dv: &[DVec3],
        dc: &Vector6<f64>,
    ) -> Vec<Contact> {
        let h = body.settings.time_step;
        let lattice = &body.lattice;
        let moved: Vec<DVec3> = body.v.iter().zip(dv).map(|(v, d)| *v + *d).collect();
        let normal = self.ground.normal;
        let (core_v, core_w) = split(dc);
        let (core_v, core_w) = (self.velocity + core_v, self.angular_velocity + core_w);
        let mut contacts: Vec<Contact> = Vec::new();
        for p in &self.proxies {
            // Cheap test on the embedded point first; the fat reaches
            // at most its length further.
            let x = lattice.deform(&p.embedding, &body.q);
            let u = lattice.displacement(&p.embedding, &moved);
            if self.ground.distance(x) + h * normal.dot(u) - p.fat.length() > CONTACT_MARGIN {
                continue;
            }
            let d0 = self
                .ground
                .distance(self.proxy_position(lattice, &body.q, p));
            if d0 + h * normal.dot(u) > CONTACT_MARGIN {
                continue;
            }
            contacts.push(Contact {
                at: ContactAt::Flesh(p.embedding),
                d0,
                free: u,
                before: lattice.displacement(&p.embedding, &body.v),
            });
        }
        let now = self.frame();
        let bone_points = if self.bone_contacts {
            &self.bone_points[..]
        } else {
            &[]
        };
        for &(b, p) in bone_points {
            let x = (now * relative[b]).transform_point3(p);
            let arm = coupled.bones_hat[b].transform_point3(p) - coupled.c_hat;
            let u = core_v + core_w.cross(arm);
            let d0 = self.ground.distance(x);
            if d0 + h * normal.dot(u) > CONTACT_MARGIN {
                continue;
            }
            contacts.push(Contact {
                at: ContactAt::Bone(arm),
                d0,
                free: u,
                before: self.velocity + self.angular_velocity.cross(x - self.position),
            });
        }
        contacts
    }

    /// Solves the condensed contact problem and adds its impulses'
    /// effect to `dv` (the flesh) and `dc` (the core).
    pub(super) fn resolve(
        &mut self,
        body: &mut FemBody,
        coupled: &Coupled,
        contacts: &[Contact],
        dv: &mut [DVec3],
        dc: &mut Vector6<f64>,
        report: &mut StepReport,
    ) {
        let h = body.settings.time_step;
        let n = body.vertex_count();
        let normal = self.ground.normal;
        let m = contacts.len();
        if m > 0 {
            let zero: Vec<Option<DVec3>> = coupled
                .base
                .iter()
                .map(|b| b.map(|_| DVec3::ZERO))
                .collect();
            let frame_axes = ContactRow::frame_of(normal);
            // Each contact's response (flesh and core) to unit impulses
            // along its frame: on the flesh, a flesh solve and the core's
            // answer to what reaches the bones; on a bone, the core's
            // answer and the flesh it carries.
            let mut responses: Vec<(Vec<DVec3>, Vector6<f64>)> = Vec::with_capacity(3 * m);
            for c in contacts {
                for axis in frame_axes {
                    let (mut total, core) = match c.at {
                        ContactAt::Flesh(e) => {
                            let r = body.solve_velocity(
                                &coupled.bones_hat,
                                &VelocitySolve {
                                    known: &zero,
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
                            let core =
                                coupled.core_wrench(Vector6::new(f.x, f.y, f.z, t.x, t.y, t.z));
                            (vec![DVec3::ZERO; n], core)
                        }
                    };
                    coupled.carry(&mut total, &core);
                    responses.push((total, core));
                }
            }
            let lattice = &body.lattice;
            let n3 = 3 * m;
            let mut w = vec![0.0; n3 * n3];
            for (col, (total, core)) in responses.iter().enumerate() {
                let (lin, ang) = split(core);
                for (i, c) in contacts.iter().enumerate() {
                    let u = match c.at {
                        ContactAt::Flesh(e) => lattice.displacement(&e, total),
                        ContactAt::Bone(arm) => lin + ang.cross(arm),
                    };
                    for a in 0..3 {
                        w[(3 * i + a) * n3 + col] = frame_axes[a].dot(u);
                    }
                }
            }
            let rows: Vec<ContactRow> = contacts
                .iter()
                .map(|c| {
                    let before = normal.dot(c.before);
                    let mut target = if c.d0 >= 0.0 {
                        -c.d0 / h
                    } else {
                        -CORRECTION * c.d0 / h
                    };
                    if c.d0 <= CONTACT_MARGIN && before < 0.0 {
                        target = target.max(-self.ground.restitution * before);
                    }
                    ContactRow {
                        frame: frame_axes,
                        free_velocity: c.free,
                        target,
                        friction: self.ground.friction,
                    }
                })
                .collect();
            let solved = solve_contacts(&rows, &w, CONTACT_TOLERANCE);
            for (i, l) in solved.impulses.iter().enumerate() {
                for a in 0..3 {
                    let s = l[a];
                    if s == 0.0 {
                        continue;
                    }
                    let (total, core) = &responses[3 * i + a];
                    for (d, x) in dv.iter_mut().zip(total) {
                        *d += *x * s;
                    }
                    *dc += core * s;
                }
            }
            self.last.sweeps = solved.sweeps;
            self.last.violation = solved.violation;
        } else {
            self.last.sweeps = 0;
            self.last.violation = 0.0;
        }
    }
}
