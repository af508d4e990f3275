//! A blendshape rig as the animator saves it: a base mesh, named targets
//! with the same vertices and triangles, the boundary condition and the
//! spring constants. Checked on load, so a bad rig is refused with the
//! target and vertex named before anything is solved.

use super::springs::{edge_neighbours, is_closed};
use glam::{DVec3, Vec3};
use serde::{Deserialize, Serialize};

pub use crate::character::{BlendTarget, Boundary, SpringConstants};
use crate::character::{Blendshapes, EmbeddedMesh};

/// A physical blendshape rig.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlendRig {
    /// Name of the rig (the mesh it deforms).
    pub name: String,
    /// The base shape (the paper's source, weight w₀).
    pub base: Vec<Vec3>,
    /// Triangles of the base, shared by every target.
    pub triangles: Vec<[u32; 3]>,
    /// The targets, blended with weights w₁…
    pub targets: Vec<BlendTarget>,
    /// What holds the system in place.
    #[serde(default)]
    pub boundary: Boundary,
    /// Internal springs through the solid (closed meshes only), so large
    /// surfaces of small triangles keep their volume (§3.1).
    #[serde(default = "yes")]
    pub interior: bool,
    /// Spring constants per class.
    #[serde(default)]
    pub constants: SpringConstants,
}

fn yes() -> bool {
    true
}

/// A rig or its weights refused, naming the target and vertex.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RigError {
    /// No triangles or no vertices.
    #[error("the base mesh is empty ({vertices} vertices, {triangles} triangles)")]
    Empty {
        /// Vertex count.
        vertices: usize,
        /// Triangle count.
        triangles: usize,
    },
    /// A triangle names a vertex that does not exist, or one vertex twice.
    #[error("triangle {triangle} is {indices:?}: the base has {vertices} vertices")]
    BadTriangle {
        /// Index of the triangle.
        triangle: usize,
        /// Its indices.
        indices: [u32; 3],
        /// The base's vertex count.
        vertices: usize,
    },
    /// A target with another vertex count than the base.
    #[error("target '{target}' has {found} vertices, the base {expected}")]
    VertexCount {
        /// The target's name.
        target: String,
        /// Its vertex count.
        found: usize,
        /// The base's.
        expected: usize,
    },
    /// A non-finite coordinate.
    #[error("{shape}: vertex {vertex} is not finite")]
    NotFinite {
        /// "base" or "target 'name'".
        shape: String,
        /// The vertex.
        vertex: usize,
    },
    /// An edge of (near) zero length in some shape: its spring would be
    /// infinitely stiff (k ∝ 1/r).
    #[error("{shape}: the edge between vertices {a} and {b} has (near) zero length {length:e}")]
    DegenerateEdge {
        /// "base" or "target 'name'".
        shape: String,
        /// One end.
        a: u32,
        /// The other.
        b: u32,
        /// Its length.
        length: f64,
    },
    /// A vertex in no triangle: nothing would hold it.
    #[error("vertex {vertex} belongs to no triangle")]
    IsolatedVertex {
        /// The vertex.
        vertex: usize,
    },
    /// The boundary condition holds nothing.
    #[error("no boundary condition: {0}")]
    NoBoundary(String),
    /// Internal springs asked of a mesh with no inside.
    #[error("internal springs need a closed mesh: the base has open edges (set `interior: false`)")]
    OpenMesh,
    /// Weights off the simplex.
    #[error("weights {weights:?}: {why}")]
    Weights {
        /// The weights given.
        weights: Vec<f64>,
        /// What is wrong.
        why: String,
    },
    /// A spring constant not positive and finite.
    #[error("spring constant '{0}' must be positive and finite")]
    Constant(&'static str),
    /// Two targets with one name.
    #[error("two targets are named '{0}'")]
    DuplicateName(String),
}

impl BlendRig {
    /// The rig of a character's embedded mesh (the base) with its
    /// blendshapes.
    pub fn of_mesh(mesh: &EmbeddedMesh, shapes: &Blendshapes) -> Self {
        Self {
            name: crate::io::mesh_name(mesh),
            base: mesh.positions.clone(),
            triangles: mesh.triangles.clone(),
            targets: shapes.targets.clone(),
            boundary: shapes.boundary.clone(),
            interior: shapes.interior,
            constants: shapes.constants.clone(),
        }
    }

    /// The blendshapes of this rig, to put on a character whose embedded
    /// mesh is its base.
    pub fn blendshapes(&self) -> Blendshapes {
        Blendshapes {
            targets: self.targets.clone(),
            boundary: self.boundary.clone(),
            interior: self.interior,
            constants: self.constants.clone(),
            linear: false,
        }
    }

    /// The shapes in weight order, widened: the base, then each target.
    pub fn shapes(&self) -> Vec<Vec<DVec3>> {
        std::iter::once(&self.base)
            .chain(self.targets.iter().map(|t| &t.positions))
            .map(|p| p.iter().map(|v| v.as_dvec3()).collect())
            .collect()
    }

    /// Name of shape `i` (0 is the base) for messages.
    pub fn shape_name(&self, i: usize) -> String {
        match i {
            0 => "base".into(),
            i => format!("target '{}'", self.targets[i - 1].name),
        }
    }

    /// The base's bounding-box diagonal.
    pub fn diagonal(&self) -> f64 {
        let (lo, hi) = self.base.iter().fold(
            (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN)),
            |(lo, hi), p| (lo.min(p.as_dvec3()), hi.max(p.as_dvec3())),
        );
        if self.base.is_empty() {
            0.0
        } else {
            lo.distance(hi)
        }
    }

    /// Checks everything a solve relies on.
    pub fn validate(&self) -> Result<(), RigError> {
        let n = self.base.len();
        if n == 0 || self.triangles.is_empty() {
            return Err(RigError::Empty {
                vertices: n,
                triangles: self.triangles.len(),
            });
        }
        for (t, tri) in self.triangles.iter().enumerate() {
            let repeated = tri[0] == tri[1] || tri[1] == tri[2] || tri[0] == tri[2];
            if repeated || tri.iter().any(|&i| i as usize >= n) {
                return Err(RigError::BadTriangle {
                    triangle: t,
                    indices: *tri,
                    vertices: n,
                });
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for t in &self.targets {
            if t.positions.len() != n {
                return Err(RigError::VertexCount {
                    target: t.name.clone(),
                    found: t.positions.len(),
                    expected: n,
                });
            }
            if !names.insert(t.name.as_str()) {
                return Err(RigError::DuplicateName(t.name.clone()));
            }
        }
        let shapes = self.shapes();
        for (s, shape) in shapes.iter().enumerate() {
            if let Some(vertex) = shape.iter().position(|p| !p.is_finite()) {
                return Err(RigError::NotFinite {
                    shape: self.shape_name(s),
                    vertex,
                });
            }
        }
        let neighbours = edge_neighbours(n, &self.triangles);
        if let Some(vertex) = neighbours.iter().position(Vec::is_empty) {
            return Err(RigError::IsolatedVertex { vertex });
        }
        // An edge under a millionth of the mesh's size is a degenerate spring.
        let min_edge = 1e-6 * self.diagonal();
        for (s, shape) in shapes.iter().enumerate() {
            for (a, ring) in neighbours.iter().enumerate() {
                for &b in ring.iter().filter(|&&b| b as usize > a) {
                    let length = shape[a].distance(shape[b as usize]);
                    if length <= min_edge {
                        return Err(RigError::DegenerateEdge {
                            shape: self.shape_name(s),
                            a: a as u32,
                            b,
                            length,
                        });
                    }
                }
            }
        }
        let c = &self.constants;
        for (name, v) in [
            ("structure", c.structure),
            ("bending", c.bending),
            ("internal", c.internal),
            ("anchor_factor", c.anchor_factor),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(RigError::Constant(name));
            }
        }
        if self.interior && !is_closed(&self.triangles) {
            return Err(RigError::OpenMesh);
        }
        match &self.boundary {
            Boundary::Anchor => {}
            Boundary::Pins { vertices } => {
                if vertices.is_empty() {
                    return Err(RigError::NoBoundary("the pin list is empty".into()));
                }
                if let Some(v) = vertices.iter().find(|&&v| v as usize >= n) {
                    return Err(RigError::NoBoundary(format!(
                        "pinned vertex {v} does not exist (the base has {n})"
                    )));
                }
            }
            Boundary::Static { tolerance } => {
                if !(tolerance.is_finite() && *tolerance >= 0.0) {
                    return Err(RigError::NoBoundary(format!(
                        "static tolerance {tolerance} is not a distance"
                    )));
                }
                if self.static_vertices().is_empty() {
                    return Err(RigError::NoBoundary(
                        "every vertex moves in some target: no static vertex holds the system \
                         (use the anchor)"
                            .into(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Shapes that pass through themselves, each with the first pair of
    /// crossing triangles: warned about (the springs of such a target fold
    /// the blend through itself, the paper's stated limitation).
    pub fn self_intersections(&self) -> Vec<(String, usize, usize)> {
        self.shapes()
            .iter()
            .enumerate()
            .filter_map(|(s, x)| {
                super::intersect::first_self_intersection(x, &self.triangles)
                    .map(|(a, b)| (self.shape_name(s), a, b))
            })
            .collect()
    }

    /// The base vertices that no target moves (by the static tolerance).
    pub fn static_vertices(&self) -> Vec<u32> {
        let tolerance = match self.boundary {
            Boundary::Static { tolerance } => f64::from(tolerance) * self.diagonal(),
            _ => 0.0,
        };
        (0..self.base.len())
            .filter(|&v| {
                self.targets.iter().all(|t| {
                    t.positions[v].as_dvec3().distance(self.base[v].as_dvec3()) <= tolerance
                })
            })
            .map(|v| v as u32)
            .collect()
    }

    /// Checks weights: one per shape (base first), each in [0, 1], summing
    /// to 1 within 1e-6.
    pub fn check_weights(&self, weights: &[f64]) -> Result<(), RigError> {
        let bad = |why: String| RigError::Weights {
            weights: weights.to_vec(),
            why,
        };
        if weights.len() != self.targets.len() + 1 {
            return Err(bad(format!(
                "expected {} weights, the base's then one per target",
                self.targets.len() + 1
            )));
        }
        if let Some(w) = weights
            .iter()
            .find(|w| !(w.is_finite() && (0.0..=1.0).contains(*w)))
        {
            return Err(bad(format!("{w} is outside [0, 1]")));
        }
        let sum: f64 = weights.iter().sum();
        if (sum - 1.0).abs() > 1e-6 {
            return Err(bad(format!("they sum to {sum}, not 1")));
        }
        Ok(())
    }
}
