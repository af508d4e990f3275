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

use crate::fem::mesh_lattice::MeshSolid;
use glam::DVec3;

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
                let (q, _) = solid
                    .triangles
                    .iter()
                    .map(|t| {
                        let c = t.map(|i| solid.positions[i as usize]);
                        let q = closest_on_triangle(p, c);
                        (q, q.distance_squared(p))
                    })
                    .min_by(|x, y| x.1.total_cmp(&y.1))?;
                let n = (q - p).normalize_or(DVec3::Z);
                Some((q, n))
            }
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

/// The point of triangle `[a, b, c]` nearest `p` (Ericson §5.1.5).
pub fn closest_on_triangle(p: DVec3, [a, b, c]: [DVec3; 3]) -> DVec3 {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return a + ab * (d1 / (d1 - d3));
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return a + ac * (d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
    }
    let denom = 1.0 / (va + vb + vc);
    a + ab * (vb * denom) + ac * (vc * denom)
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
