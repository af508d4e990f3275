//! A control lattice around an imported triangle mesh
//! (`plasticine fem-import`): the mesh's inside, voxelized, becomes the
//! lattice K of Capell §3.1, built automatically where Capell built it by
//! hand.
//!
//! A cell of the regular grid is kept when its centre is inside the mesh, or
//! when the mesh's surface passes within the cell's circumscribed sphere
//! (centre-to-corner half diagonal) — so every mesh vertex lies in an active
//! cell and the FFD embedding of §3.1 (iii) covers the whole mesh — or when a
//! bone passes that close, so every bone has flesh to bind. The cell size is
//! chosen, by bisection, for the vertex count asked for; bones then bind the
//! vertices within half a cell, as in [`Lattice::from_character`].
//!
//! Inside is decided by signed ray crossings along grid lines, on all three
//! axes: the crossings below a point, counted +1 or −1 as the triangle faces,
//! are its winding number, so shells that overlap (an artist's mesh of
//! intersecting parts) are inside where either is, and a mesh turned inside
//! out still has an inside. The edge functions of a shared edge are exact
//! negatives in floating point, so a ray that does not touch an edge crosses
//! a closed surface consistently, and a ray that does abstains. Where the
//! three axes do not all agree (a ray touched an edge, or went through a hole
//! of an open mesh), the generalized winding number (Jacobson et al. 2013)
//! decides: it costs a pass over the triangles per cell, so it is kept for
//! those.

use super::lattice::{Bone, Lattice, LatticeSettings};
use super::mesh_tree::{TriangleTree, closest_point, triangle_solid_angle};
use glam::{DVec2, DVec3, Vec3};

/// The grid may have at most this many cells (active or not) per build.
const MAX_GRID_CELLS: usize = 64_000_000;

/// Why a lattice could not be built around a mesh.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MeshLatticeError {
    /// The mesh has no vertex or no triangle.
    #[error("the mesh is empty ({vertices} vertices, {triangles} triangles)")]
    Empty {
        /// Vertices given.
        vertices: usize,
        /// Triangles given.
        triangles: usize,
    },
    /// A mesh vertex (the index given) has a non-finite coordinate.
    #[error("mesh vertex {0} is not finite")]
    NotFinite(usize),
    /// A triangle refers to a vertex the mesh does not have.
    #[error("triangle {triangle} uses vertex {index}, but the mesh has {vertices} vertices")]
    IndexOutOfRange {
        /// Index of the triangle.
        triangle: usize,
        /// The vertex index it uses.
        index: u32,
        /// Number of mesh vertices.
        vertices: usize,
    },
    /// The lattice cannot be sized (too few vertices asked for, a zero or non-finite
    /// extent or cell size, or too large a grid); the message says which.
    #[error("degenerate size: {0}")]
    Degenerate(String),
    /// No point of the bone is inside the mesh.
    #[error("bone {bone} (joint {joint} to its child) lies entirely outside the mesh")]
    BoneOutside {
        /// Index of the bone.
        bone: usize,
        /// The joint whose frame carries it (its parent end).
        joint: usize,
    },
}

/// A closed triangle mesh as a solid: its inside test, nearest point and
/// bounds (queried through an AABB tree, [`TriangleTree`]).
#[derive(Clone, Debug)]
pub struct MeshSolid {
    /// Vertex positions, widened to f64.
    pub positions: Vec<DVec3>,
    /// Vertex indices of each triangle.
    pub triangles: Vec<[u32; 3]>,
    /// Lower corner of the vertices' bounding box.
    pub lo: DVec3,
    /// Upper corner of the vertices' bounding box.
    pub hi: DVec3,
    /// The triangles' AABB tree (built from the fields above, which are
    /// not changed after).
    pub(super) tree: TriangleTree,
}

impl MeshSolid {
    /// Checks and widens a mesh.
    pub fn new(positions: &[Vec3], triangles: &[[u32; 3]]) -> Result<Self, MeshLatticeError> {
        if positions.is_empty() || triangles.is_empty() {
            return Err(MeshLatticeError::Empty {
                vertices: positions.len(),
                triangles: triangles.len(),
            });
        }
        if let Some(k) = positions.iter().position(|p| !p.is_finite()) {
            return Err(MeshLatticeError::NotFinite(k));
        }
        for (t, tri) in triangles.iter().enumerate() {
            if let Some(&index) = tri.iter().find(|&&i| i as usize >= positions.len()) {
                return Err(MeshLatticeError::IndexOutOfRange {
                    triangle: t,
                    index,
                    vertices: positions.len(),
                });
            }
        }
        let positions: Vec<DVec3> = positions.iter().map(|p| p.as_dvec3()).collect();
        let (lo, hi) = positions.iter().fold(
            (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN)),
            |(lo, hi), &p| (lo.min(p), hi.max(p)),
        );
        let tree = TriangleTree::new(&positions, triangles);
        Ok(Self {
            positions,
            triangles: triangles.to_vec(),
            lo,
            hi,
            tree,
        })
    }

    fn corners(&self, t: usize) -> [DVec3; 3] {
        self.triangles[t].map(|i| self.positions[i as usize])
    }

    /// The generalized winding number at `p`: the solid angle the surface
    /// subtends, over 4π (Van Oosterom & Strackee's formula per triangle,
    /// summed exactly over every triangle). ±1 inside a closed surface (the
    /// sign is its orientation), 0 outside, and a graceful in-between near
    /// holes.
    pub fn winding_number(&self, p: DVec3) -> f64 {
        let omega: f64 = (0..self.triangles.len())
            .map(|t| triangle_solid_angle(p, self.corners(t)))
            .sum();
        omega / (4.0 * std::f64::consts::PI)
    }

    /// Whether `p` is inside: |winding number| > ½. Outside the bounding
    /// box the answer is no without a sum (seen from outside their convex
    /// hull, the triangles cover at most a hemisphere: |w| ≤ ½); inside it,
    /// the tree's expansion of the winding number decides.
    pub fn contains(&self, p: DVec3) -> bool {
        if p.cmplt(self.lo).any() || p.cmpgt(self.hi).any() {
            return false;
        }
        self.tree
            .winding_number(p, |t| self.corners(t as usize))
            .abs()
            > 0.5
    }

    /// The surface point nearest `p`.
    pub fn nearest(&self, p: DVec3) -> Option<(DVec3, u32)> {
        self.tree.nearest(p, |t| self.corners(t as usize))
    }

    /// Distance from `p` to the surface.
    pub fn distance(&self, p: DVec3) -> f64 {
        self.nearest(p)
            .map_or(f64::INFINITY, |(q, _)| q.distance(p))
    }
}

/// Distance from a point to a triangle (Ericson, Real-Time Collision
/// Detection §5.1.5), or to its edges where it has no area.
pub fn point_triangle_distance(p: DVec3, tri: [DVec3; 3]) -> f64 {
    p.distance(closest_point(p, tri))
}

impl Lattice {
    /// The lattice around a closed triangle mesh (rest, world coordinates)
    /// whose vertex count is closest to `target_vertices`, with `bones`
    /// bound to the vertices within half a cell. Fails on an empty or
    /// degenerate mesh, or a bone entirely outside it.
    pub fn from_mesh(
        positions: &[Vec3],
        triangles: &[[u32; 3]],
        bones: Vec<Bone>,
        target_vertices: usize,
    ) -> Result<Lattice, MeshLatticeError> {
        let solid = MeshSolid::new(positions, triangles)?;
        Self::from_solid_with_vertices(
            &solid,
            bones,
            target_vertices,
            LatticeSettings::default().bone_radius_cells,
        )
    }

    /// [`from_mesh`](Self::from_mesh) on a checked solid, with the bone
    /// binding radius in cells.
    pub fn from_solid_with_vertices(
        solid: &MeshSolid,
        bones: Vec<Bone>,
        target_vertices: usize,
        bone_radius_cells: f64,
    ) -> Result<Lattice, MeshLatticeError> {
        if target_vertices < 8 {
            return Err(MeshLatticeError::Degenerate(format!(
                "{target_vertices} lattice vertices asked for; one cell has 8"
            )));
        }
        check_bones(solid, &bones)?;
        let (lo, hi) = bounds_with_bones(solid, &bones);
        let size = (hi - lo).max_element();
        if !(size.is_finite() && size > 0.0) {
            return Err(MeshLatticeError::Degenerate(format!(
                "the mesh and skeleton span {size} m"
            )));
        }
        // The count grows like h⁻³ (h⁻² for thin shells); the smallest cell
        // that can be needed puts 4·∛N cells along the largest side.
        let (mut small, mut large) = (size / (4.0 * (target_vertices as f64).cbrt() + 8.0), size);
        let build = |h: f64| Self::from_solid(solid, bones.clone(), h, bone_radius_cells);
        let mut best = build(large)?;
        for _ in 0..40 {
            let h = (small * large).sqrt();
            let l = build(h)?;
            let n = l.vertex_count();
            if n.abs_diff(target_vertices) < best.vertex_count().abs_diff(target_vertices) {
                best = l;
            }
            if n == target_vertices || large / small < 1.0 + 1e-3 {
                break;
            }
            if n > target_vertices {
                small = h;
            } else {
                large = h;
            }
        }
        Ok(best)
    }

    /// The lattice of cubic cells of edge `cell_size` around a solid.
    pub fn from_solid(
        solid: &MeshSolid,
        bones: Vec<Bone>,
        cell_size: f64,
        bone_radius_cells: f64,
    ) -> Result<Lattice, MeshLatticeError> {
        let h = cell_size;
        if !(h.is_finite() && h > 0.0) {
            return Err(MeshLatticeError::Degenerate(format!("cell size {h} m")));
        }
        let (mut lo, mut hi) = bounds_with_bones(solid, &bones);
        lo -= DVec3::splat(0.5 * h);
        hi += DVec3::splat(0.5 * h);
        // Align the grid with the root joint, as from_character does.
        if let Some(root) = bones.first().map(|b| b.head) {
            lo = root + ((lo - root) / h).floor() * h;
        }
        let extent = (hi - lo) / h;
        let dims = [extent.x, extent.y, extent.z].map(|e| e.ceil().max(1.0) as usize);
        let total = dims
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
            .filter(|&t| t <= MAX_GRID_CELLS)
            .ok_or_else(|| {
                MeshLatticeError::Degenerate(format!(
                    "a grid of {}×{}×{} cells of {h} m is too large",
                    dims[0], dims[1], dims[2]
                ))
            })?;
        let grid = Grid { lo, h, dims };
        let mut keep = vec![false; total];
        grid.mark_near_surface(solid, &mut keep);
        grid.mark_near_bones(&bones, &mut keep);
        grid.mark_inside(solid, &mut keep);
        let mut lattice = Lattice::from_cells(lo, DVec3::splat(h), dims, |c| keep[grid.index(c)]);
        lattice.bind_bones(bones, bone_radius_cells * h);
        Ok(lattice)
    }
}

/// Every bone must have a point inside the mesh (its ends and seven points
/// between them are tried).
fn check_bones(solid: &MeshSolid, bones: &[Bone]) -> Result<(), MeshLatticeError> {
    for (i, b) in bones.iter().enumerate() {
        let inside = (0..=8).any(|k| solid.contains(b.head.lerp(b.tail, k as f64 / 8.0)));
        if !inside {
            return Err(MeshLatticeError::BoneOutside {
                bone: i,
                joint: b.joint,
            });
        }
    }
    Ok(())
}

fn bounds_with_bones(solid: &MeshSolid, bones: &[Bone]) -> (DVec3, DVec3) {
    bones
        .iter()
        .flat_map(|b| [b.head, b.tail])
        .fold((solid.lo, solid.hi), |(lo, hi), p| (lo.min(p), hi.max(p)))
}

/// The regular grid being voxelized.
struct Grid {
    lo: DVec3,
    h: f64,
    dims: [usize; 3],
}

impl Grid {
    fn index(&self, [i, j, k]: [usize; 3]) -> usize {
        i + self.dims[0] * (j + self.dims[1] * k)
    }

    fn centre(&self, [i, j, k]: [usize; 3]) -> DVec3 {
        self.lo + (DVec3::new(i as f64, j as f64, k as f64) + 0.5) * self.h
    }

    /// Half the cell's diagonal, with a hair of slack for rounding.
    fn reach(&self) -> f64 {
        0.5 * self.h * 3f64.sqrt() * (1.0 + 1e-9)
    }

    /// Index range (inclusive) of the cells whose centres lie in [a, b] on
    /// an axis, clamped to the grid; None if empty.
    fn span(&self, axis: usize, a: f64, b: f64) -> Option<(usize, usize)> {
        let lo = ((a - self.lo[axis]) / self.h - 0.5).ceil().max(0.0);
        let hi = ((b - self.lo[axis]) / self.h - 0.5).floor();
        let hi = hi.min(self.dims[axis] as f64 - 1.0);
        (lo <= hi).then_some((lo as usize, hi as usize))
    }

    /// Calls `f` for every cell whose centre lies in the box [a, b].
    fn for_cells_in(&self, a: DVec3, b: DVec3, mut f: impl FnMut([usize; 3])) {
        let (Some(x), Some(y), Some(z)) = (
            self.span(0, a.x, b.x),
            self.span(1, a.y, b.y),
            self.span(2, a.z, b.z),
        ) else {
            return;
        };
        for k in z.0..=z.1 {
            for j in y.0..=y.1 {
                for i in x.0..=x.1 {
                    f([i, j, k]);
                }
            }
        }
    }

    /// Cells whose circumscribed sphere the surface enters: every point of
    /// the surface (every mesh vertex in particular) is in one of them.
    fn mark_near_surface(&self, solid: &MeshSolid, keep: &mut [bool]) {
        let r = self.reach();
        for t in 0..solid.triangles.len() {
            let tri = solid.corners(t);
            let a = tri[0].min(tri[1]).min(tri[2]) - r;
            let b = tri[0].max(tri[1]).max(tri[2]) + r;
            self.for_cells_in(a, b, |c| {
                let g = self.index(c);
                if !keep[g] && point_triangle_distance(self.centre(c), tri) <= r {
                    keep[g] = true;
                }
            });
        }
    }

    /// Cells a bone passes within half a diagonal of.
    fn mark_near_bones(&self, bones: &[Bone], keep: &mut [bool]) {
        let r = self.reach();
        for b in bones {
            self.for_cells_in(b.head.min(b.tail) - r, b.head.max(b.tail) + r, |c| {
                if b.distance(self.centre(c)) <= r {
                    keep[self.index(c)] = true;
                }
            });
        }
    }

    /// Cells whose centre is inside: signed ray crossings along each axis
    /// where all three agree, the generalized winding number where not.
    fn mark_inside(&self, solid: &MeshSolid, keep: &mut [bool]) {
        let n = keep.len();
        let (mut yes, mut no) = (vec![0u8; n], vec![0u8; n]);
        for axis in 0..3 {
            self.vote_along(solid, axis, &mut yes, &mut no);
        }
        for k in 0..self.dims[2] {
            for j in 0..self.dims[1] {
                for i in 0..self.dims[0] {
                    let g = self.index([i, j, k]);
                    if keep[g] {
                        continue;
                    }
                    keep[g] = match (yes[g], no[g]) {
                        (3, _) => true,
                        (_, 3) => false,
                        _ => solid.contains(self.centre([i, j, k])),
                    };
                }
            }
        }
    }

    /// One axis's votes: a ray along `axis` through every column of cell
    /// centres, its crossings with the surface below each centre summed with
    /// the sign of the triangle's facing — the winding number along the ray
    /// (±1 inside a closed shell, 2 where two shells overlap, 0 outside). A
    /// column whose ray touches an edge or vertex abstains.
    fn vote_along(&self, solid: &MeshSolid, axis: usize, yes: &mut [u8], no: &mut [u8]) {
        let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
        let (nu, nv) = (self.dims[u], self.dims[v]);
        // (where along the axis, +1 or −1 as the triangle faces along or
        // against the axis)
        let mut crossings: Vec<Vec<(f64, i32)>> = vec![Vec::new(); nu * nv];
        let mut touched = vec![false; nu * nv];
        let flat = |p: DVec3| DVec2::new(p[u], p[v]);
        let cross = |a: DVec2, b: DVec2| a.x * b.y - a.y * b.x;
        for t in 0..solid.triangles.len() {
            let tri = solid.corners(t);
            let [a, b, c] = tri.map(flat);
            let area = cross(b - a, c - a);
            if area == 0.0 {
                continue; // seen edge-on: its neighbours' edges decide
            }
            let lo = a.min(b).min(c);
            let hi = a.max(b).max(c);
            let (Some(su), Some(sv)) = (self.span(u, lo.x, hi.x), self.span(v, lo.y, hi.y)) else {
                continue;
            };
            for jv in sv.0..=sv.1 {
                for ju in su.0..=su.1 {
                    let q = DVec2::new(
                        self.lo[u] + (ju as f64 + 0.5) * self.h,
                        self.lo[v] + (jv as f64 + 0.5) * self.h,
                    );
                    // Edge functions, each the exact negative of the one the
                    // neighbour across the edge computes.
                    let l = [
                        cross(b - q, c - q),
                        cross(c - q, a - q),
                        cross(a - q, b - q),
                    ];
                    let s = area.signum();
                    if l.iter().any(|&x| x * s < 0.0) {
                        continue;
                    }
                    let col = ju + nu * jv;
                    if l.contains(&0.0) {
                        touched[col] = true;
                        continue;
                    }
                    let w = (l[0] * tri[0][axis] + l[1] * tri[1][axis] + l[2] * tri[2][axis])
                        / (l[0] + l[1] + l[2]);
                    crossings[col].push((w, if area > 0.0 { 1 } else { -1 }));
                }
            }
        }
        for jv in 0..nv {
            for ju in 0..nu {
                let col = ju + nu * jv;
                if touched[col] {
                    continue;
                }
                let list = &mut crossings[col];
                list.sort_by(|a, b| a.0.total_cmp(&b.0));
                let (mut below, mut winding) = (0, 0);
                for s in 0..self.dims[axis] {
                    let centre = self.lo[axis] + (s as f64 + 0.5) * self.h;
                    while below < list.len() && list[below].0 < centre {
                        winding += list[below].1;
                        below += 1;
                    }
                    let mut c = [0; 3];
                    c[axis] = s;
                    c[u] = ju;
                    c[v] = jv;
                    let g = self.index(c);
                    if winding != 0 {
                        yes[g] += 1;
                    } else {
                        no[g] += 1;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The closest-point distance against dense sampling of the triangle:
    /// never above the sampled minimum, and within the sampling spacing of
    /// it, for points in every Voronoi region (faces, edges, vertices) and
    /// a sliver triangle.
    #[test]
    fn point_triangle_distance_matches_brute_force_sampling() {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(12345);
        let mut rand = || rng.random::<f64>() - 0.5;
        let n = 200;
        for case in 0..60 {
            let mut tri = [0; 3].map(|_| DVec3::new(rand(), rand(), rand()));
            if case % 10 == 0 {
                tri[2] = tri[0].lerp(tri[1], 0.3) + DVec3::splat(1e-13);
            }
            let p = DVec3::new(rand(), rand(), rand()) * 3.0;
            let d = point_triangle_distance(p, tri);
            let mut sampled = f64::MAX;
            for i in 0..=n {
                for j in 0..=n - i {
                    let (u, v) = (i as f64 / n as f64, j as f64 / n as f64);
                    let q = tri[0] + (tri[1] - tri[0]) * u + (tri[2] - tri[0]) * v;
                    sampled = sampled.min(p.distance(q));
                }
            }
            let spacing = (tri[1] - tri[0]).length().max((tri[2] - tri[0]).length()) / n as f64;
            assert!(d <= sampled + 1e-12, "case {case}: {d} above {sampled}");
            assert!(sampled - d <= spacing, "case {case}: {d} vs {sampled}");
        }
    }

    /// A tetrahedron, outward: winding number 1 inside, 0 outside, −1 when
    /// its triangles are flipped.
    #[test]
    fn winding_number_of_a_tetrahedron() {
        let positions = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::Z];
        let outward = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]];
        let solid = MeshSolid::new(&positions, &outward).unwrap();
        let inside = DVec3::splat(0.2);
        assert!((solid.winding_number(inside) - 1.0).abs() < 1e-12);
        assert!(solid.winding_number(DVec3::splat(0.5)).abs() < 1e-12);
        let flipped: Vec<[u32; 3]> = outward.iter().map(|t| [t[0], t[2], t[1]]).collect();
        let solid = MeshSolid::new(&positions, &flipped).unwrap();
        assert!((solid.winding_number(inside) + 1.0).abs() < 1e-12);
        assert!(solid.contains(inside));
    }
}
