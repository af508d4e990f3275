//! The flesh's answers to unit changes of the core's velocity, kept in the
//! bones' frames. A bone vertex moves with the core by `G_a Δv_c`; in a
//! region's frame (`R_r = R_D rot(L_r)`) a unit translation is a local one
//! and a unit rotation turns the vertex about the core's centre at the
//! local arm `rot(L_r)ᵀ L_b r_a`, which depends on the posture relative to
//! the root only. So each region's answers to its three local unit
//! translations and rotations are constant while that posture holds (and
//! the regional system does: no morph blend, no grabs); each step turns
//! them into the world's six with the core's current rotation.

use super::DynamicCore;
use super::kept::UnitResponses;
use crate::fem::solver::FemBody;
use glam::{DAffine3, DVec3};

impl DynamicCore {
    /// The flesh's Δv and the bone vertices' reactions (world) for the six
    /// unit core velocity changes, from the kept regional answers (solved
    /// again when the posture relative to the root moved); None where they
    /// cannot be kept (a global model, a morph blend, grabs).
    pub(super) fn unit_responses(
        &mut self,
        body: &mut FemBody,
        relative: &[DAffine3],
        bones: &[DAffine3],
    ) -> Option<Vec<(Vec<DVec3>, Vec<DVec3>)>> {
        let keepable = body.morph.is_none()
            && body.constraints.is_empty()
            && body.regions.iter().all(|r| r.bone.is_some());
        if !keepable {
            self.units = None;
            return None;
        }
        if self.units.as_ref().is_none_or(|u| u.relative != relative) {
            let mut regions = Vec::with_capacity(body.regions.len());
            for ri in 0..body.regions.len() {
                let region = &body.regions[ri];
                let own = relative[region.bone.expect("checked above")]
                    .matrix3
                    .transpose();
                let arms: Vec<Option<DVec3>> = region
                    .vertices
                    .iter()
                    .map(|&a| {
                        let b = body.lattice.bone_of_vertex[a]?;
                        Some(own * relative[b].transform_point3(body.lattice.rest[a]))
                    })
                    .collect();
                let zero = vec![DVec3::ZERO; region.len()];
                let answers = (0..6)
                    .map(|k| {
                        body.region_response(ri, &zero, |l| {
                            arms[l].map_or(DVec3::ZERO, |arm| match k {
                                0..3 => DVec3::AXES[k],
                                _ => DVec3::AXES[k - 3].cross(arm),
                            })
                        })
                    })
                    .collect();
                regions.push(answers);
            }
            self.units = Some(UnitResponses {
                relative: relative.to_vec(),
                regions,
            });
        }
        let kept = self.units.as_ref().expect("made above");
        let n = body.vertex_count();
        let world = (0..6)
            .map(|j| {
                let (mut dv, mut reaction) = (vec![DVec3::ZERO; n], vec![DVec3::ZERO; n]);
                let first = if j < 3 { 0 } else { 3 };
                for (region, answers) in body.regions.iter().zip(&kept.regions) {
                    let rot = body.region_transform(region, bones).matrix3;
                    let u = rot.transpose() * DVec3::AXES[j % 3];
                    let [x, y, z] = [&answers[first], &answers[first + 1], &answers[first + 2]];
                    for (l, &a) in region.vertices.iter().enumerate() {
                        let w = region.weights[l];
                        dv[a] += rot * (x.0[l] * u.x + y.0[l] * u.y + z.0[l] * u.z) * w;
                        reaction[a] += rot * (x.1[l] * u.x + y.1[l] * u.y + z.1[l] * u.z) * w;
                    }
                }
                (dv, reaction)
            })
            .collect();
        Some(world)
    }
}
