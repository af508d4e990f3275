//! A rig made solvable: the spring topology over the surface, the interior
//! and the anchor; each shape's rest lengths; each target's rigid motion of
//! the anchor; and the blend itself (Ma et al. §3.2–3.4).

use super::anchor::{Anchor, RigidMotion, nearest};
use super::contact::{Contact, Obstacle};
use super::equilibrium::{NewtonSettings, SolveError, SolveReport, SpringSystem};
use super::interior;
use super::rig::{BlendRig, Boundary, RigError};
use super::springs::{SpringClass, SpringSet};
use glam::DVec3;

/// A rig that could not be built or solved.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BlendError {
    /// The rig or the weights were refused.
    #[error(transparent)]
    Rig(#[from] RigError),
    /// A spring system could not be solved.
    #[error("{what}: {source}")]
    Solve {
        /// Which solve ("the blend", "target 'smile''s interior").
        what: String,
        /// Why.
        source: SolveError,
    },
    /// Newton ran out of iterations: the last good shape is kept.
    #[error(
        "{what} did not reach equilibrium in {iterations} Newton steps: the largest force is \
         {residual:.3e}, {relative:.1e} of the springs' scale; the last good shape is kept"
    )]
    NotConverged {
        /// Which solve.
        what: String,
        /// Steps taken.
        iterations: usize,
        /// Largest remaining force.
        residual: f64,
        /// That over the force scale.
        relative: f64,
    },
}

/// One solved blend.
#[derive(Clone, Debug)]
pub struct Blend {
    /// Every vertex: the base's vertices first, in its order, then the
    /// interior and anchor ones.
    pub positions: Vec<DVec3>,
    /// What Newton did (the last contact round's solve).
    pub report: SolveReport,
    /// The surface vertices held on an obstacle's surface.
    pub contacts: Vec<Contact>,
    /// Solves done (one, plus one per round of contacts changing).
    pub rounds: usize,
}

/// Contact rounds before the last contacts are kept as they are.
pub const MAX_CONTACT_ROUNDS: usize = 24;

/// A rig compiled into spring systems.
#[derive(Debug)]
pub struct BlendModel {
    surface: usize,
    anchor: Option<Anchor>,
    /// Each spring's class constant c (k = c / r̄).
    constant: Vec<f64>,
    /// Per shape (base first), the rest length of every spring.
    rest: Vec<Vec<f64>>,
    /// Per shape, every vertex's position (interior and anchor solved).
    shapes: Vec<Vec<DVec3>>,
    /// Per shape, the anchor's rigid motion from the base.
    motions: Vec<RigidMotion>,
    /// Vertices that follow the linear blend (pins), if any.
    pins: Vec<u32>,
    /// The vertices held without contacts (anchor, pins).
    held: Vec<bool>,
    /// The base's triangles (surface normals for contact).
    triangles: Vec<[u32; 3]>,
    /// +1 if they wind counter-clockwise seen from outside, else −1.
    winding: f64,
    /// The base's bounding-box diagonal (contact depths are relative to it).
    diagonal: f64,
    system: SpringSystem,
    /// What solves a target's inside with its surface held (§3.4 step 3),
    /// kept so a sculpted target is solved again without rebuilding.
    inner: Inner,
    /// The last converged blend, in the anchor's frame (warm start).
    last: Option<Vec<DVec3>>,
    /// Newton's stopping rules.
    pub settings: NewtonSettings,
}

impl BlendModel {
    /// Checks the rig, builds its springs and solves each target's interior
    /// and anchor (§3.4 step 3).
    pub fn new(rig: &BlendRig) -> Result<Self, BlendError> {
        rig.validate()?;
        let surface = rig.base.len();
        let base: Vec<DVec3> = rig.base.iter().map(|p| p.as_dvec3()).collect();
        let mut springs = SpringSet::surface(surface, &rig.triangles);
        let mut positions = base.clone();
        if rig.interior {
            let inside = interior::interior(&base, &rig.triangles);
            // The interior's indices already follow the surface's.
            positions.extend(&inside.points);
            springs.extend(inside.springs, SpringClass::Internal);
        }
        let anchor = match rig.boundary {
            Boundary::Anchor => Some(Anchor::place(
                &mut positions,
                &mut springs,
                &base,
                &rig.triangles,
            )),
            _ => None,
        };
        let c = &rig.constants;
        let constant = springs
            .class
            .iter()
            .map(|class| match class {
                SpringClass::Structure => c.structure,
                SpringClass::Bending => c.bending,
                SpringClass::Internal => c.internal,
                SpringClass::Anchor => c.structure * c.anchor_factor,
            })
            .collect();
        let vertices = positions.len();
        let mut model = Self {
            surface,
            anchor,
            constant,
            rest: Vec::new(),
            shapes: Vec::new(),
            motions: Vec::new(),
            pins: match &rig.boundary {
                Boundary::Pins { vertices } => vertices.clone(),
                Boundary::Static { .. } => rig.static_vertices(),
                Boundary::Anchor => Vec::new(),
            },
            held: Vec::new(),
            triangles: rig.triangles.clone(),
            winding: if signed_volume(&base, &rig.triangles) < 0.0 {
                -1.0
            } else {
                1.0
            },
            diagonal: rig.diagonal(),
            system: SpringSystem::new(vertices, SpringSet::default(), vec![false; vertices]),
            inner: Inner {
                system: SpringSystem::new(vertices, SpringSet::default(), vec![false; vertices]),
                rest: Vec::new(),
                k: Vec::new(),
                near: Vec::new(),
            },
            last: None,
            settings: NewtonSettings::default(),
        };
        model.build_shapes(rig, positions, springs)?;
        Ok(model)
    }

    /// Solves every target's non-surface vertices with its surface held and
    /// the base's rest lengths, then records rest lengths and anchor motions.
    fn build_shapes(
        &mut self,
        rig: &BlendRig,
        base_full: Vec<DVec3>,
        springs: SpringSet,
    ) -> Result<(), BlendError> {
        let vertices = base_full.len();
        let base_rest = springs.lengths(&base_full);
        let k: Vec<f64> = self
            .constant
            .iter()
            .zip(&base_rest)
            .map(|(c, r)| c / r)
            .collect();
        let held: Vec<bool> = (0..vertices).map(|v| v < self.surface).collect();
        let base_surface = &base_full[..self.surface];
        let near: Vec<Vec<u32>> = base_full[self.surface..]
            .iter()
            .map(|&p| nearest(p, base_surface, CARRIERS))
            .collect();
        self.inner = Inner {
            system: SpringSystem::new(vertices, springs.clone(), held),
            rest: base_rest.clone(),
            k,
            near,
        };
        let mut fixed = vec![false; vertices];
        if let Some(anchor) = &self.anchor {
            for v in anchor.vertices() {
                fixed[v] = true;
            }
        }
        for &v in &self.pins {
            fixed[v as usize] = true;
        }
        self.held = fixed.clone();
        self.system = SpringSystem::new(vertices, springs, fixed);
        let targets = rig.shapes();
        // The base's motion is the identity about its anchor's centroid,
        // the centre every blend of motions turns about.
        self.motions = vec![match &self.anchor {
            Some(anchor) => anchor.motion(&base_full, &base_full),
            None => RigidMotion::IDENTITY,
        }];
        self.shapes = vec![base_full];
        self.rest = vec![base_rest];
        for (t, target) in targets.iter().enumerate().skip(1) {
            // Start the inside where its nearest surface vertices took it
            // (a rigid fit of the whole would put the inside of a bend
            // outside the target's surface), then let the springs settle it.
            let x = self.solve_inside(rig, t, target, &self.shapes[0].clone())?;
            self.shapes.push(x);
            self.rest.push(Vec::new());
            self.motions.push(RigidMotion::IDENTITY);
            self.finish_shape(t);
        }
        Ok(())
    }

    /// Shape `t`'s vertices: `surface` with the inside solved, started from
    /// `from` (a shape of the same topology) with its inside moved as its
    /// nearest surface vertices move from `from`'s surface to `surface`.
    fn solve_inside(
        &mut self,
        rig: &BlendRig,
        t: usize,
        surface: &[DVec3],
        from: &[DVec3],
    ) -> Result<Vec<DVec3>, BlendError> {
        let mut x = from.to_vec();
        x[..self.surface].copy_from_slice(surface);
        let from_surface = &from[..self.surface];
        for (v, p) in x.iter_mut().enumerate().skip(self.surface) {
            *p += carried_displacement(
                from[v],
                from_surface,
                surface,
                &self.inner.near[v - self.surface],
            );
        }
        if x.len() > self.surface {
            let what = format!("{}'s interior", rig.shape_name(t));
            let report = self
                .inner
                .system
                .solve(&mut x, &self.inner.rest, &self.inner.k, &self.settings)
                .map_err(|source| BlendError::Solve {
                    what: what.clone(),
                    source,
                })?;
            check(&what, &report)?;
        }
        Ok(x)
    }

    /// Shape `t`'s anchor motion, its anchor placed by it, and its rest
    /// lengths, from its solved vertices.
    fn finish_shape(&mut self, t: usize) {
        self.motions[t] = match &self.anchor {
            Some(anchor) => anchor.motion(&self.shapes[0], &self.shapes[t]),
            None => RigidMotion::IDENTITY,
        };
        // The anchor is rigid: each target's is the base's moved by its
        // fitted motion, exactly, so the target moved back onto the base's
        // anchor is at rest and weight one reproduces it.
        if let Some(anchor) = &self.anchor {
            for v in anchor.vertices() {
                self.shapes[t][v] = self.motions[t].apply(self.shapes[0][v]);
            }
        }
        self.rest[t] = self.system.springs().lengths(&self.shapes[t]);
    }

    /// Takes target `i` of `rig` (sculpted since this model was built from a
    /// rig with the same base, topology and settings) into the model: its
    /// inside solved again from its last shape, its rest lengths and anchor
    /// motion anew. The springs, the inside's tetrahedra and the solvers'
    /// analyses are kept, so a sculpt stroke costs one warm interior solve
    /// instead of a rebuild. On failure the model is unchanged.
    pub fn reshape_target(&mut self, rig: &BlendRig, i: usize) -> Result<(), BlendError> {
        rig.validate()?;
        let t = i + 1;
        let target = rig.targets.get(i);
        let found = target.map_or(0, |t| t.positions.len());
        let Some(target) = target.filter(|_| t < self.shapes.len() && found == self.surface) else {
            return Err(RigError::VertexCount {
                target: target.map_or(format!("#{i}"), |t| t.name.clone()),
                found,
                expected: self.surface,
            }
            .into());
        };
        let surface: Vec<DVec3> = target.positions.iter().map(|p| p.as_dvec3()).collect();
        let from = self.shapes[t].clone();
        let x = self.solve_inside(rig, t, &surface, &from)?;
        self.shapes[t] = x;
        self.finish_shape(t);
        Ok(())
    }

    /// Vertices of the base mesh (the first ones of every blend).
    pub fn surface_vertices(&self) -> usize {
        self.surface
    }

    /// All vertices: surface, interior, anchor.
    pub fn vertices(&self) -> usize {
        self.system.vertices()
    }

    /// The springs.
    pub fn springs(&self) -> &SpringSet {
        self.system.springs()
    }

    /// Shape `i`'s positions (base first), interior and anchor included.
    pub fn shape(&self, i: usize) -> &[DVec3] {
        &self.shapes[i]
    }

    /// The blended rest lengths r̄ = Σ wᵢ rᵢ (eq. 1, §3.3) and stiffnesses
    /// k = c / r̄ (§3.5).
    pub fn blended_springs(&self, weights: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let mut rest = vec![0.0; self.constant.len()];
        for (w, r) in weights.iter().zip(&self.rest) {
            if *w != 0.0 {
                for (a, b) in rest.iter_mut().zip(r) {
                    *a += w * b;
                }
            }
        }
        let k = self
            .constant
            .iter()
            .zip(&rest)
            .map(|(c, r)| c / r)
            .collect();
        (rest, k)
    }

    /// The linear blend Σ wᵢ Vᵢ of every vertex.
    pub fn linear(&self, weights: &[f64]) -> Vec<DVec3> {
        let mut x = vec![DVec3::ZERO; self.vertices()];
        for (w, shape) in weights.iter().zip(&self.shapes) {
            for (a, b) in x.iter_mut().zip(shape) {
                *a += *b * *w;
            }
        }
        x
    }

    /// Forgets the warm start: the next solve starts from the base (x₀ = V⁰).
    pub fn reset(&mut self) {
        self.last = None;
    }

    /// The equilibrium of the blended springs for `weights` (base first, on
    /// the simplex). Starts from the last blend if there is one (scrubbing),
    /// else from the base. On failure the model keeps its last good blend.
    pub fn solve(&mut self, weights: &[f64], rig: &BlendRig) -> Result<Blend, BlendError> {
        self.solve_with(weights, rig, &[])
    }

    /// [`Self::solve`] with obstacles pushing the surface (§4): rounds of
    /// holding the surface vertices found inside on the obstacles' surfaces
    /// and releasing those whose hold pulls, each solved again.
    pub fn solve_with(
        &mut self,
        weights: &[f64],
        rig: &BlendRig,
        obstacles: &[Obstacle],
    ) -> Result<Blend, BlendError> {
        rig.check_weights(weights)?;
        let (rest, k) = self.blended_springs(weights);
        // Solved in the anchor's initial frame, where it sits as in the
        // base, then moved by the blended motion; pins follow the linear
        // blend.
        let motion = match self.anchor {
            Some(_) => RigidMotion::blend(weights, &self.motions),
            None => RigidMotion::IDENTITY,
        };
        // Weight one on a shape: its springs are at rest in that shape, the
        // equilibrium itself (a sculpted target shown alone, a key at a
        // target). Else warm from the last blend, or from the base.
        let alone = weights.iter().position(|&w| w == 1.0);
        let alone = alone.filter(|_| weights.iter().filter(|&&w| w != 0.0).count() == 1);
        let mut x = match alone {
            Some(i) => self.shapes[i].iter().map(|&p| motion.invert(p)).collect(),
            None => self.last.clone().unwrap_or_else(|| self.shapes[0].clone()),
        };
        if let Some(anchor) = &self.anchor {
            for v in anchor.vertices() {
                x[v] = self.shapes[0][v];
            }
        }
        for &v in &self.pins {
            let v = v as usize;
            x[v] = weights
                .iter()
                .zip(&self.shapes)
                .map(|(w, s)| s[v] * *w)
                .sum();
        }
        let depth_tolerance = 1e-9 * self.diagonal;
        let mut contacts: Vec<Contact> = Vec::new();
        let mut rounds = 0;
        let report = loop {
            let mut fixed = self.held.clone();
            for c in &contacts {
                fixed[c.vertex as usize] = true;
                x[c.vertex as usize] = motion.invert(c.point);
            }
            self.system.set_fixed(fixed);
            let report = self
                .system
                .solve(&mut x, &rest, &k, &self.settings)
                .map_err(|source| BlendError::Solve {
                    what: "the blend".into(),
                    source,
                })?;
            rounds += 1;
            check("the blend", &report)?;
            if obstacles.is_empty() || rounds >= MAX_CONTACT_ROUNDS {
                break report;
            }
            // Let go where the hold pulls the vertex into the obstacle.
            let before = contacts.len();
            contacts.retain(|c| {
                let reaction = self.system.reaction(c.vertex as usize, &x, &rest, &k);
                (motion.rotation.inverse() * c.normal).dot(reaction) >= 0.0
            });
            let released = contacts.len() < before;
            let normals = self.outward_normals(&x);
            let mut in_contact = vec![false; self.surface];
            for c in &contacts {
                in_contact[c.vertex as usize] = true;
            }
            let mut added = false;
            for v in 0..self.surface {
                if in_contact[v] {
                    continue;
                }
                let world = motion.apply(x[v]);
                let inward = -(motion.rotation * normals[v]);
                for obstacle in obstacles.iter().filter(|o| o.pushes(v)) {
                    let Some((nearest, _)) = obstacle.penetration(world) else {
                        continue;
                    };
                    if nearest.distance(world) <= depth_tolerance {
                        continue;
                    }
                    if let Some(point) = obstacle.exit_along(world, inward) {
                        contacts.push(Contact {
                            vertex: v as u32,
                            point,
                            normal: inward,
                        });
                        added = true;
                        break;
                    }
                }
            }
            if !added && !released {
                break report;
            }
        };
        self.last = Some(x.clone());
        for p in &mut x {
            *p = motion.apply(*p);
        }
        Ok(Blend {
            positions: x,
            report,
            contacts,
            rounds,
        })
    }

    /// Each surface vertex's outward normal in `x` (area-weighted over its
    /// triangles, turned outward by the base's winding).
    fn outward_normals(&self, x: &[DVec3]) -> Vec<DVec3> {
        let mut normals = vec![DVec3::ZERO; self.surface];
        for t in &self.triangles {
            let [a, b, c] = t.map(|i| x[i as usize]);
            let n = (b - a).cross(c - a) * self.winding;
            for &i in t {
                normals[i as usize] += n;
            }
        }
        normals.iter().map(|n| n.normalize_or_zero()).collect()
    }
}

/// The system of a target's inside: the surface held, the base's rest
/// lengths and stiffnesses, and per inside vertex the surface vertices that
/// carry it to its starting place.
#[derive(Debug)]
struct Inner {
    system: SpringSystem,
    rest: Vec<f64>,
    k: Vec<f64>,
    near: Vec<Vec<u32>>,
}

/// Surface vertices whose displacement carries an inside vertex to its
/// starting place in a target.
const CARRIERS: usize = 8;

/// The inverse-square-distance average of the displacement of the surface
/// vertices `near` from `base` to `target`, seen from `p`.
fn carried_displacement(p: DVec3, base: &[DVec3], target: &[DVec3], near: &[u32]) -> DVec3 {
    let (mut sum, mut weight) = (DVec3::ZERO, 0.0);
    for &i in near {
        let i = i as usize;
        let w = 1.0 / base[i].distance_squared(p).max(f64::MIN_POSITIVE);
        sum += (target[i] - base[i]) * w;
        weight += w;
    }
    if weight > 0.0 {
        sum / weight
    } else {
        DVec3::ZERO
    }
}

/// The volume the triangles enclose, negative if they wind inward.
fn signed_volume(x: &[DVec3], triangles: &[[u32; 3]]) -> f64 {
    triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| x[i as usize]);
            a.dot(b.cross(c)) / 6.0
        })
        .sum()
}

fn check(what: &str, report: &SolveReport) -> Result<(), BlendError> {
    if report.converged {
        Ok(())
    } else {
        Err(BlendError::NotConverged {
            what: what.into(),
            iterations: report.iterations,
            residual: report.residual,
            relative: report.residual / report.force_scale.max(f64::MIN_POSITIVE),
        })
    }
}
