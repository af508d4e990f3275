//! The control lattice K (Capell §3.1, §4.1): hexahedral cells of a regular
//! grid, the skeleton's bones bound to lattice vertices, and the embedding of
//! points in their cells with trilinear (FFD) weights.
//!
//! Capell builds the lattice by hand ("several hours ... for an experienced
//! user"); here it is built automatically, either as a box of cells or by
//! voxelizing the union of a character's muscles at rest. The basis is the
//! coarse level V₀ of §3.1: one trilinear function φ^a per lattice vertex,
//! interpolating, so `p(x) = (r_a + q_a) φ^a(x)` (eq. 5) is evaluated in a
//! point's cell from its eight corners.
//!
//! Bones on a regular grid do not in general lie on cell edges (condition (ii)
//! of §3.1); instead every vertex within half a cell of a bone is bound to it
//! and moves rigidly with the bone (§4.3). That pins a thin tube of flesh
//! around each bone — the "three-dimensional bone" that §4.6's twist
//! constraint otherwise imitates.

use super::element::{corner_offset, trilinear_weights};
use crate::character::{Character, Posture};
use crate::kinematics::PosedBody;
use crate::kinematics::forward_kinematics;
use glam::{DAffine3, DVec3, Vec3};

const NONE: u32 = u32::MAX;

/// A bone: the rigid segment from a joint to one of its children (an edge of
/// the skeletal complex S). It moves with the frame of `joint`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bone {
    /// The joint whose frame carries the bone (the parent end).
    pub joint: usize,
    /// The child joint at the far end, where the bone comes from a skeleton.
    pub child: Option<usize>,
    /// Rest positions of the two ends, world.
    pub head: DVec3,
    /// Rest position of the far (child) end, world.
    pub tail: DVec3,
}

impl Bone {
    /// Distance from a point to the segment.
    pub fn distance(&self, p: DVec3) -> f64 {
        let d = self.tail - self.head;
        let len2 = d.length_squared();
        let t = if len2 > 0.0 {
            ((p - self.head).dot(d) / len2).clamp(0.0, 1.0)
        } else {
            0.0
        };
        p.distance(self.head + d * t)
    }
}

/// The bones of a character: one per parent→child joint pair, at rest.
pub fn skeleton_bones(character: &Character) -> Vec<Bone> {
    let rest = forward_kinematics(&character.skeleton, &character.skeleton.rest_posture());
    character
        .skeleton
        .joints
        .iter()
        .enumerate()
        .filter_map(|(k, j)| {
            j.parent.map(|p| Bone {
                joint: p,
                child: Some(k),
                head: rest[p].translation.as_dvec3(),
                tail: rest[k].translation.as_dvec3(),
            })
        })
        .collect()
}

/// The rigid transform `T_i` of every bone from its rest placement to the
/// posture: `W_joint(posture) · W_joint(rest)⁻¹` (Capell §4.5, eq. 24).
pub fn bone_transforms(character: &Character, bones: &[Bone], posture: &Posture) -> Vec<DAffine3> {
    let rest = forward_kinematics(&character.skeleton, &character.skeleton.rest_posture());
    let posed = forward_kinematics(&character.skeleton, posture);
    bones
        .iter()
        .map(|b| to_daffine(posed[b.joint]) * to_daffine(rest[b.joint]).inverse())
        .collect()
}

/// An f32 transform widened to f64.
pub fn to_daffine(a: glam::Affine3A) -> DAffine3 {
    DAffine3 {
        matrix3: glam::DMat3::from_cols(
            a.matrix3.x_axis.as_dvec3(),
            a.matrix3.y_axis.as_dvec3(),
            a.matrix3.z_axis.as_dvec3(),
        ),
        translation: a.translation.as_dvec3(),
    }
}

/// Rest (world) centres of the character's muscles: embed these once, then
/// [`Lattice::deform`] moves them with the flesh (the muscle
/// shapes follow the FEM displacement).
pub fn muscle_centres(character: &Character) -> Vec<DVec3> {
    PosedBody::new(character, &character.skeleton.rest_posture())
        .muscles
        .iter()
        .map(|m| m.center.as_dvec3())
        .collect()
}

/// Where a point sits in the lattice: its cell and trilinear weights.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Embedding {
    /// Index of the active cell holding the point.
    pub cell: usize,
    /// Trilinear weights φ of the cell's eight corners at the point (corner order of
    /// `corner_offset`); they sum to one.
    pub weights: [f64; 8],
}

/// How the bones are tied to the lattice (§3.1 (ii), §4.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BoneBinding {
    /// Every vertex within `bone_radius_cells` of a bone moves with it.
    Radius,
    /// A chain of lattice edges per bone, its vertices conformed onto the
    /// bone where the cells stay valid (`super::snap`).
    #[default]
    Snapped,
}

/// How to build a lattice around a character.
#[derive(Clone, Debug)]
pub struct LatticeSettings {
    /// Edge length of the cubic cells, metres.
    pub cell_size: f64,
    /// Vertices closer than this to a bone are bound to it, in cells (the
    /// brief's "within half a cell"), with [`BoneBinding::Radius`].
    pub bone_radius_cells: f64,
    /// Snapped chains or a radius.
    pub binding: BoneBinding,
}

impl Default for LatticeSettings {
    fn default() -> Self {
        Self {
            cell_size: 0.05,
            bone_radius_cells: 0.5,
            binding: BoneBinding::default(),
        }
    }
}

/// Hexahedral cells on a regular grid.
#[derive(Clone, Debug)]
pub struct Lattice {
    /// Grid corner (0, 0, 0), world.
    pub origin: DVec3,
    /// Cell edge lengths.
    pub cell_size: DVec3,
    /// Cells per axis of the bounding grid.
    pub dims: [usize; 3],
    /// The eight vertex indices of each active cell (corner order of
    /// [`corner_offset`]).
    pub cells: Vec<[usize; 8]>,
    /// Grid coordinates of each active cell.
    pub cell_coords: Vec<[usize; 3]>,
    /// Rest positions `r_a` of the vertices.
    pub rest: Vec<DVec3>,
    /// Grid coordinates of each vertex.
    pub vertex_coords: Vec<[usize; 3]>,
    /// Bones of the skeletal complex S.
    pub bones: Vec<Bone>,
    /// The bone each vertex is bound to (moves rigidly with), if any.
    pub bone_of_vertex: Vec<Option<usize>>,
    /// How the bones were bound (kept when the lattice is trimmed).
    pub binding: BoneBinding,
    /// Dense grid of cell indices (NONE where inactive).
    cell_at: Vec<u32>,
}

impl Lattice {
    /// The active cells of a grid, chosen by `keep(i, j, k)`.
    pub fn from_cells(
        origin: DVec3,
        cell_size: DVec3,
        dims: [usize; 3],
        keep: impl Fn([usize; 3]) -> bool,
    ) -> Self {
        let [nx, ny, nz] = dims;
        let vdims = [nx + 1, ny + 1, nz + 1];
        let mut vertex_at = vec![NONE; vdims[0] * vdims[1] * vdims[2]];
        let mut cell_at = vec![NONE; nx * ny * nz];
        let mut cells = Vec::new();
        let mut cell_coords = Vec::new();
        let mut rest = Vec::new();
        let mut vertex_coords = Vec::new();
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    if !keep([i, j, k]) {
                        continue;
                    }
                    let corners: [usize; 8] = std::array::from_fn(|c| {
                        let [a, b, d] = corner_offset(c);
                        let v = [i + a, j + b, k + d];
                        let g = v[0] + vdims[0] * (v[1] + vdims[1] * v[2]);
                        if vertex_at[g] == NONE {
                            vertex_at[g] = rest.len() as u32;
                            rest.push(
                                origin
                                    + DVec3::new(v[0] as f64, v[1] as f64, v[2] as f64) * cell_size,
                            );
                            vertex_coords.push(v);
                        }
                        vertex_at[g] as usize
                    });
                    cell_at[i + nx * (j + ny * k)] = cells.len() as u32;
                    cells.push(corners);
                    cell_coords.push([i, j, k]);
                }
            }
        }
        let n = rest.len();
        Self {
            origin,
            cell_size,
            dims,
            cells,
            cell_coords,
            rest,
            vertex_coords,
            bones: Vec::new(),
            bone_of_vertex: vec![None; n],
            binding: BoneBinding::Radius,
            cell_at,
        }
    }

    /// A solid box of nx × ny × nz cells.
    pub fn grid_box(origin: DVec3, cell_size: DVec3, dims: [usize; 3]) -> Self {
        Self::from_cells(origin, cell_size, dims, |_| true)
    }

    /// Voxelizes the union of the character's muscles at rest: keeps every
    /// cell that may intersect a muscle or that a bone passes through, then
    /// binds the bones as `settings.binding` says: snapped to chains of
    /// edges conformed onto them ([`snap_bones`](Self::snap_bones)), or the
    /// vertices within `bone_radius_cells` of each.
    ///
    /// A cell is kept when a muscle's signed distance at the cell centre is
    /// below the centre-to-corner half diagonal: conservative (the distance
    /// estimate is never below the true one near the surface, and the test
    /// keeps every cell the surface passes through), so the flesh is
    /// contained in the lattice (condition (iii) of §3.1).
    pub fn from_character(character: &Character, settings: &LatticeSettings) -> Self {
        let rest_posture = character.skeleton.rest_posture();
        let body = PosedBody::new(character, &rest_posture);
        let bones = skeleton_bones(character);
        let h = settings.cell_size;
        let (mut lo, mut hi) = (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN));
        for m in &body.muscles {
            let c = m.center.as_dvec3();
            let r = m.radius as f64;
            lo = lo.min(c - r);
            hi = hi.max(c + r);
        }
        for j in &body.joints {
            let p = j.translation.as_dvec3();
            lo = lo.min(p);
            hi = hi.max(p);
        }
        // Half a cell of margin, so a bone on the bounding box still has a
        // tube of cells around it.
        lo -= DVec3::splat(0.5 * h);
        hi += DVec3::splat(0.5 * h);
        // Align the grid with the root joint, so a bone along an axis from
        // it runs along a line of lattice vertices (and edges, §3.1 (ii)).
        if let Some(root) = body.joints.first() {
            let root = root.translation.as_dvec3();
            lo = root + ((lo - root) / h).floor() * h;
        }
        let extent = hi - lo;
        let dims = [
            (extent.x / h).ceil().max(1.0) as usize,
            (extent.y / h).ceil().max(1.0) as usize,
            (extent.z / h).ceil().max(1.0) as usize,
        ];
        let cell = DVec3::splat(h);
        let half_diag = 0.5 * h * 3f64.sqrt();
        let keep = |[i, j, k]: [usize; 3]| {
            let centre = lo + (DVec3::new(i as f64, j as f64, k as f64) + 0.5) * cell;
            let c32 = centre.as_vec3();
            let muscle = (0..body.muscles.len()).any(|m| {
                body.may_touch(m, c32, half_diag as f32) && {
                    let pm = &body.muscles[m];
                    (pm.shape.signed_distance(pm.to_local.transform_point3(c32)) as f64)
                        <= half_diag
                }
            });
            muscle || bones.iter().any(|b| b.distance(centre) <= half_diag)
        };
        let mut lattice = Self::from_cells(lo, cell, dims, keep);
        lattice.bind(bones, settings.binding, settings.bone_radius_cells * h);
        lattice
    }

    /// The lattice of the character whose vertex count is closest to
    /// `vertices` (Capell's kangaroo: 177, cow: 214), by bisection on the
    /// cell size between 2 mm and the character's size.
    pub fn from_character_with_vertices(
        character: &Character,
        vertices: usize,
        bone_radius_cells: f64,
    ) -> Self {
        // The count does not depend on the binding: the search binds by
        // radius (cheap), the lattice chosen is bound the default way.
        let build = |h: f64| {
            Self::from_character(
                character,
                &LatticeSettings {
                    cell_size: h,
                    bone_radius_cells,
                    binding: BoneBinding::Radius,
                },
            )
        };
        let (mut small, mut large) = (0.002f64, 1.0f64);
        let mut best = build(large);
        for _ in 0..30 {
            // Geometric midpoint: the count scales like h⁻³.
            let h = (small * large).sqrt();
            let l = build(h);
            let n = l.vertex_count();
            if n.abs_diff(vertices) < best.vertex_count().abs_diff(vertices) {
                best = l;
            }
            if n > vertices {
                small = h;
            } else {
                large = h;
            }
            if large / small < 1.0 + 1e-4 {
                break;
            }
        }
        let bones = std::mem::take(&mut best.bones);
        let radius = bone_radius_cells * best.cell_size.x;
        best.bind(bones, BoneBinding::default(), radius);
        best
    }

    /// Binds the bones by `binding`: [`snap_bones`](Self::snap_bones) or
    /// [`bind_bones`](Self::bind_bones) within `radius`.
    pub fn bind(&mut self, bones: Vec<Bone>, binding: BoneBinding, radius: f64) {
        match binding {
            BoneBinding::Radius => self.bind_bones(bones, radius),
            BoneBinding::Snapped => {
                self.snap_bones(bones, super::element::MIN_JACOBIAN);
            }
        }
    }

    /// Binds every vertex within `radius` of a bone to the nearest such bone
    /// (and, for a bone that catches none, the vertices nearest to its ends
    /// and middle).
    pub fn bind_bones(&mut self, bones: Vec<Bone>, radius: f64) {
        self.bone_of_vertex = self
            .rest
            .iter()
            .map(|&p| {
                bones
                    .iter()
                    .enumerate()
                    .map(|(i, b)| (b.distance(p), i))
                    .filter(|&(d, _)| d <= radius)
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|(_, i)| i)
            })
            .collect();
        // A bone shorter than a cell, or lying between grid lines, may catch
        // no vertex: then bind the vertex nearest to each of its ends and its
        // middle, so every bone drives some flesh (a bone with no known DOF
        // would leave its region free to fall).
        for (i, b) in bones.iter().enumerate() {
            if self.bone_of_vertex.contains(&Some(i)) {
                continue;
            }
            for p in [b.head, (b.head + b.tail) * 0.5, b.tail] {
                let nearest = (0..self.rest.len())
                    .filter(|&a| self.bone_of_vertex[a].is_none())
                    .min_by(|&x, &y| {
                        self.rest[x]
                            .distance(p)
                            .total_cmp(&self.rest[y].distance(p))
                    });
                if let Some(a) = nearest {
                    self.bone_of_vertex[a] = Some(i);
                }
            }
        }
        self.bones = bones;
        self.binding = BoneBinding::Radius;
    }

    /// The complex `K_J` of `levels` hexahedral subdivisions (Capell §3.1,
    /// A.1): every active cell split into 2^J cells per axis over the same
    /// region, vertex and cell numbering as [`from_cells`](Self::from_cells)
    /// gives on the finer grid. The bones are kept, bound to no vertex (the
    /// hierarchical basis pins what they carry, `super::hierarchy`).
    ///
    /// In a conformed lattice a fine vertex sits where its coarse cell's
    /// trilinear map puts its parametric position: the multilinear
    /// interpolation of the corners of the smallest coarse face, edge or
    /// vertex holding it (the maps of the cells sharing that face agree on
    /// it, so the choice of cell does not matter). Where those corners are
    /// all still on the grid the grid position is kept bit for bit, so box
    /// cells stay boxes.
    pub fn subdivide(&self, levels: u32) -> Lattice {
        let f = 1usize << levels;
        let mut fine = Self::from_cells(
            self.origin,
            self.cell_size / f as f64,
            self.dims.map(|d| d * f),
            |c| self.cell_at(c.map(|x| x / f)).is_some(),
        );
        for (&c, cell) in fine.cell_coords.iter().zip(&fine.cells) {
            let parent = self
                .cell_at(c.map(|x| x / f))
                .expect("a fine cell lies in an active coarse cell");
            let corners = self.cells[parent];
            if corners
                .iter()
                .all(|&a| self.rest[a] == self.grid_position(a))
            {
                continue;
            }
            for &v in cell {
                let g = fine.vertex_coords[v];
                // Local coordinates of the vertex in the parent cell.
                let base = self.cell_coords[parent].map(|x| x * f);
                let t: [f64; 3] = std::array::from_fn(|i| (g[i] - base[i]) as f64 / f as f64);
                // The smallest face: along an axis where the vertex is on a
                // coarse grid plane only that plane's corners count.
                let mut p = DVec3::ZERO;
                let mut on_grid = true;
                for (k, &a) in corners.iter().enumerate() {
                    let o = corner_offset(k);
                    let w: f64 = (0..3)
                        .map(|i| if o[i] == 1 { t[i] } else { 1.0 - t[i] })
                        .product();
                    if w != 0.0 {
                        p += self.rest[a] * w;
                        on_grid &= self.rest[a] == self.grid_position(a);
                    }
                }
                if !on_grid {
                    fine.rest[v] = p;
                }
            }
        }
        fine.bones = self.bones.clone();
        fine
    }

    /// Number of lattice vertices.
    pub fn vertex_count(&self) -> usize {
        self.rest.len()
    }

    /// Number of active cells.
    pub fn cell_count(&self) -> usize {
        self.cells.len()
    }

    /// Index of the active cell at grid coordinates, if any.
    pub fn cell_at(&self, c: [usize; 3]) -> Option<usize> {
        if c[0] >= self.dims[0] || c[1] >= self.dims[1] || c[2] >= self.dims[2] {
            return None;
        }
        let v = self.cell_at[c[0] + self.dims[0] * (c[1] + self.dims[1] * c[2])];
        (v != NONE).then_some(v as usize)
    }

    /// Where vertex `a` sits on the regular grid (its rest position unless
    /// it was conformed onto a bone).
    pub fn grid_position(&self, a: usize) -> DVec3 {
        let [i, j, k] = self.vertex_coords[a];
        self.origin + DVec3::new(i as f64, j as f64, k as f64) * self.cell_size
    }

    /// Whether `other` is the same lattice for a simulation's state: the
    /// same rest vertices, cells and bone bindings (so q and q̇ carry over).
    pub fn same_shape(&self, other: &Lattice) -> bool {
        self.rest == other.rest
            && self.cells == other.cells
            && self.bone_of_vertex == other.bone_of_vertex
    }

    /// Whether cell `c` is still its grid box (no corner conformed).
    pub fn is_box(&self, c: usize) -> bool {
        self.cells[c]
            .iter()
            .all(|&a| self.rest[a] == self.grid_position(a))
    }

    /// The rest positions of the corners of cell `c`.
    pub fn cell_corners(&self, c: usize) -> [DVec3; 8] {
        self.cells[c].map(|a| self.rest[a])
    }

    /// The bone nearest `p` (its segment), None without bones: the bone
    /// whose part (its joint's) a point of the flesh belongs to.
    pub fn nearest_bone(&self, p: DVec3) -> Option<&Bone> {
        self.bones
            .iter()
            .min_by(|a, b| a.distance(p).total_cmp(&b.distance(p)))
    }

    /// The cell holding a rest-space point and its trilinear weights, or None
    /// outside the lattice. A point on a face shared by an active and an
    /// inactive cell lands in the active one. In a conformed cell the local
    /// coordinates come from inverting its trilinear map
    /// (`super::element::invert_trilinear`).
    pub fn embed(&self, p: DVec3) -> Option<Embedding> {
        let g = (p - self.origin) / self.cell_size;
        let eps = 1e-9;
        let mut candidates = [[0i64; 3]; 8];
        let base = [g.x.floor() as i64, g.y.floor() as i64, g.z.floor() as i64];
        // Also try the cell below along any axis where the point is on a grid
        // plane (within eps), so boundary points find their cell.
        let below = [
            (g.x - g.x.floor()) < eps,
            (g.y - g.y.floor()) < eps,
            (g.z - g.z.floor()) < eps,
        ];
        for (c, cand) in candidates.iter_mut().enumerate() {
            let [a, b, d] = corner_offset(c);
            *cand = [
                base[0] - (a as i64 & below[0] as i64),
                base[1] - (b as i64 & below[1] as i64),
                base[2] - (d as i64 & below[2] as i64),
            ];
        }
        let cell_of = |cand: [i64; 3]| {
            if cand.iter().any(|&x| x < 0) {
                return None;
            }
            self.cell_at(cand.map(|x| x as usize))
        };
        for cand in candidates {
            let Some(cell) = cell_of(cand) else {
                continue;
            };
            if !self.is_box(cell) {
                if let Some(e) = self.embed_in_conformed(cell, p) {
                    return Some(e);
                }
                continue;
            }
            let s = g - DVec3::new(cand[0] as f64, cand[1] as f64, cand[2] as f64);
            if s.min_element() < -eps || s.max_element() > 1.0 + eps {
                continue;
            }
            return Some(Embedding {
                cell,
                weights: trilinear_weights(s.clamp(DVec3::ZERO, DVec3::ONE)),
            });
        }
        // A conformed vertex moves less than a cell, so a point outside every
        // box around it can only be in a conformed neighbour.
        for dz in -1..=1 {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let cand = [base[0] + dx, base[1] + dy, base[2] + dz];
                    if let Some(cell) = cell_of(cand).filter(|&c| !self.is_box(c))
                        && let Some(e) = self.embed_in_conformed(cell, p)
                    {
                        return Some(e);
                    }
                }
            }
        }
        None
    }

    fn embed_in_conformed(&self, cell: usize, p: DVec3) -> Option<Embedding> {
        let s = super::element::invert_trilinear(&self.cell_corners(cell), p)?;
        let eps = 1e-9;
        if s.min_element() < -eps || s.max_element() > 1.0 + eps {
            return None;
        }
        Some(Embedding {
            cell,
            weights: trilinear_weights(s.clamp(DVec3::ZERO, DVec3::ONE)),
        })
    }

    /// The displacement at an embedded point: `q_a φ^a(x)` (eq. 4).
    pub fn displacement(&self, e: &Embedding, q: &[DVec3]) -> DVec3 {
        self.cells[e.cell]
            .iter()
            .zip(&e.weights)
            .map(|(&a, &w)| q[a] * w)
            .sum()
    }

    /// The deformed position `(r_a + q_a) φ^a(x)` of an embedded point (eq. 5).
    pub fn deform(&self, e: &Embedding, q: &[DVec3]) -> DVec3 {
        self.cells[e.cell]
            .iter()
            .zip(&e.weights)
            .map(|(&a, &w)| (self.rest[a] + q[a]) * w)
            .sum()
    }

    /// Deforms rest-space points (an embedded mesh, muscle centres) by the
    /// lattice displacement `q` (free-form deformation). Points outside the
    /// lattice are returned unchanged.
    pub fn deform_points(&self, points: &[Vec3], q: &[DVec3]) -> Vec<Vec3> {
        points
            .iter()
            .map(|&p| match self.embed(p.as_dvec3()) {
                Some(e) => self.deform(&e, q).as_vec3(),
                None => p,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_box_has_the_grid_counts_and_embeds_its_vertices_exactly() {
        let l = Lattice::grid_box(
            DVec3::new(-1.0, 0.0, 2.0),
            DVec3::new(0.5, 0.25, 1.0),
            [2, 3, 4],
        );
        assert_eq!(l.cell_count(), 24);
        assert_eq!(l.vertex_count(), 3 * 4 * 5);
        for (a, &r) in l.rest.iter().enumerate() {
            let e = l.embed(r).expect("vertex inside");
            // The interpolating basis: φ^b(x_a) = δ_ab.
            for (c, &w) in e.weights.iter().enumerate() {
                let expect = if l.cells[e.cell][c] == a { 1.0 } else { 0.0 };
                assert!((w - expect).abs() < 1e-12);
            }
        }
        assert!(l.embed(DVec3::new(-1.1, 0.1, 2.1)).is_none());
    }

    /// FFD reproduces affine maps exactly: a lattice displaced by an affine
    /// field moves every embedded point by the same field.
    #[test]
    fn deformation_reproduces_affine_fields() {
        let l = Lattice::grid_box(DVec3::ZERO, DVec3::splat(0.1), [3, 2, 2]);
        let a = glam::DMat3::from_cols(
            DVec3::new(0.1, 0.02, 0.0),
            DVec3::new(-0.03, 0.05, 0.01),
            DVec3::new(0.0, 0.04, -0.02),
        );
        let t = DVec3::new(0.3, -0.1, 0.2);
        let q: Vec<DVec3> = l.rest.iter().map(|&r| a * r + t).collect();
        for p in [DVec3::new(0.05, 0.13, 0.07), DVec3::new(0.29, 0.2, 0.001)] {
            let e = l.embed(p).unwrap();
            let moved = l.deform(&e, &q);
            assert!((moved - (p + a * p + t)).length() < 1e-12);
        }
    }
}
