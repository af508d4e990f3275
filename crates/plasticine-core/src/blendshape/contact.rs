//! Physical interaction (Ma et al. §4): obstacles push the blend. After a
//! solve, surface vertices found inside an obstacle are moved to its
//! surface along the penetration direction and held there (Dirichlet), and
//! the blend is solved again, until no surface vertex is inside. The
//! penetration direction is the blend's inward surface normal at the
//! vertex: the nearest point on the obstacle would split the surface
//! across an obstacle whose middle is inside it (a deep push tears
//! instead of denting). Internal
//! vertices are never held: the surface alone meets the obstacle, and the
//! inside follows through the springs.
//!
//! The paper has no rule for letting go; here a held vertex is released
//! when its hold would have to pull it (the springs' reaction points into
//! the obstacle's outside normal's opposite), so a dent recovers as the
//! obstacle leaves.

use crate::fem::MeshSolid;
use crate::kinematics::PosedMuscle;
use crate::shape::MuscleShape;
use glam::{Affine3A, DVec3};

/// Something the blend cannot pass through.
#[derive(Clone, Debug)]
pub enum Obstacle {
    /// A ball: the VR hand pushing.
    Sphere {
        /// Centre.
        centre: DVec3,
        /// Radius.
        radius: f64,
    },
    /// A segment's neighbourhood: a finger, a rod, the cylinder of Fig. 2
    /// with rounded ends.
    Capsule {
        /// One end of the axis.
        a: DVec3,
        /// The other end.
        b: DVec3,
        /// Radius.
        radius: f64,
    },
    /// A closed triangle mesh (its inside by winding number).
    Mesh(Box<MeshSolid>),
    /// A muscle of the character, as posed where the blend is solved.
    Muscle(Box<MuscleObstacle>),
}

/// A muscle the blend's surface stays out of, except the vertices the base
/// already has inside it (a mesh that cuts into a muscle at rest is not
/// inflated by it: only a blend that moves into the muscle is pushed).
#[derive(Clone, Debug)]
pub struct MuscleObstacle {
    shape: MuscleShape,
    to_local: Affine3A,
    to_world: Affine3A,
    centre: DVec3,
    radius: f64,
    /// Per vertex of the blend: inside at rest, so not pushed (shared: the
    /// obstacles are handed to every solve).
    exempt: std::sync::Arc<[bool]>,
}

impl MuscleObstacle {
    /// `muscle` as posed, its exemptions the vertices of `base` inside it.
    pub fn new(muscle: &PosedMuscle, base: &[DVec3]) -> Self {
        let mut m = Self {
            shape: muscle.shape.clone(),
            to_local: muscle.to_local,
            to_world: muscle.to_world,
            centre: muscle.center.as_dvec3(),
            radius: f64::from(muscle.radius),
            exempt: std::sync::Arc::from([]),
        };
        m.exempt = base.iter().map(|&p| m.depth(p).is_some()).collect();
        m
    }

    /// How far inside the muscle `p` is (as its inside-outside function
    /// measures near the surface), beyond a skin of 1e-5 of its size that
    /// absorbs the f32 muscle's rounding.
    fn depth(&self, p: DVec3) -> Option<f64> {
        if p.distance_squared(self.centre) > self.radius * self.radius {
            return None;
        }
        let g = f64::from(
            self.shape
                .inside_outside(self.to_local.transform_point3(p.as_vec3())),
        );
        (g < -1e-5 * self.radius).then_some(-g)
    }
}

impl Obstacle {
    /// If `p` is inside: the nearest surface point and the outward normal
    /// there.
    pub fn penetration(&self, p: DVec3) -> Option<(DVec3, DVec3)> {
        let ball = |c: DVec3, r: f64| {
            let d = p - c;
            let len = d.length();
            (len < r).then(|| {
                let n = if len > 1e-12 * r { d / len } else { DVec3::Z };
                (c + n * r, n)
            })
        };
        match self {
            Self::Sphere { centre, radius } => ball(*centre, *radius),
            Self::Capsule { a, b, radius } => {
                let ab = *b - *a;
                let t =
                    ((p - *a).dot(ab) / ab.length_squared().max(f64::MIN_POSITIVE)).clamp(0.0, 1.0);
                ball(*a + ab * t, *radius)
            }
            Self::Mesh(solid) => {
                if !solid.contains(p) {
                    return None;
                }
                let (q, _) = solid.nearest(p)?;
                let n = (q - p).normalize_or(DVec3::Z);
                Some((q, n))
            }
            Self::Muscle(m) => {
                m.depth(p)?;
                let s = m
                    .shape
                    .project_to_surface(m.to_local.transform_point3(p.as_vec3()));
                let q = m.to_world.transform_point3(s.point).as_dvec3();
                let n = m.to_world.transform_vector3(s.normal).as_dvec3();
                Some((q, n.normalize_or(DVec3::Z)))
            }
        }
    }

    /// Whether the obstacle pushes vertex `v` of the blend (a muscle does
    /// not push the vertices the base has inside it).
    pub fn pushes(&self, v: usize) -> bool {
        match self {
            Self::Muscle(m) => !m.exempt.get(v).copied().unwrap_or(false),
            _ => true,
        }
    }
}

impl Obstacle {
    /// The obstacle's size: what a ray from inside travels at most to leave.
    fn reach(&self) -> f64 {
        match self {
            Self::Sphere { radius, .. } => 2.0 * radius,
            Self::Capsule { a, b, radius } => a.distance(*b) + 2.0 * radius,
            Self::Mesh(solid) => solid.lo.distance(solid.hi),
            Self::Muscle(m) => 2.0 * m.radius,
        }
    }

    /// Where a ray from `p` (inside) along the unit `dir` leaves the
    /// obstacle: the last inside point, found by bisection (one crossing:
    /// exact for the convex ones).
    pub fn exit_along(&self, p: DVec3, dir: DVec3) -> Option<DVec3> {
        let inside = |t: f64| self.penetration(p + dir * t).is_some();
        if !inside(0.0) {
            return None;
        }
        let (mut lo, mut hi) = (0.0, self.reach());
        if inside(hi) {
            return None;
        }
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if inside(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(p + dir * hi)
    }
}

/// A held surface vertex: where it is held and the direction the obstacle
/// pushes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// The surface vertex.
    pub vertex: u32,
    /// Where it is held (on the obstacle's surface, in world space).
    pub point: DVec3,
    /// The direction of the push: into the blend, against its surface
    /// normal where the vertex met the obstacle.
    pub normal: DVec3,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::MuscleShape;

    #[test]
    fn a_mesh_obstacle_finds_the_nearest_surface_point_and_the_way_out() {
        let mesh = MuscleShape::sphere(0.1).tessellate(48, 32);
        let solid = MeshSolid::new(&mesh.positions, &mesh.indices).expect("closed mesh");
        let ball = Obstacle::Mesh(Box::new(solid));
        let p = DVec3::new(0.05, 0.02, 0.01);
        let (q, n) = ball.penetration(p).expect("inside");
        // The tessellated sphere's nearest point is within its chord error
        // of the true sphere's, and the normal points out along p.
        assert!((q - p.normalize() * 0.1).length() < 0.003, "{q}");
        assert!(n.dot(p.normalize()) > 0.99, "{n}");
        assert!(ball.penetration(DVec3::new(0.2, 0.0, 0.0)).is_none());
        // Leaving along −x from p: the sphere's far side.
        let out = ball.exit_along(p, -DVec3::X).expect("leaves");
        let analytic = -(0.01f64 - 0.02f64.powi(2) - 0.01f64.powi(2)).sqrt();
        assert!((out.x - analytic).abs() < 0.003, "{out}");
    }
}
