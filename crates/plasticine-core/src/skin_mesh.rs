//! The closed surface of a skin grid, shared by the renderer and every
//! export: the m×n grid (periodic around, open from bottom to top) plus a
//! cap over each of its two boundary rings, so no skin shows a hole.
//!
//! A cap follows its ring, whatever the ring's shape: `R` concentric rings
//! ([`cap_rings`]) between the boundary ring and an apex on the cap's
//! outward axis `a` through the ring's centroid `c`. Each meridian, from a
//! boundary point to the apex, is a cubic Bézier that leaves the ring the
//! way the skin arrives at it and reaches the apex square to the axis, so
//! the cap continues the skin without a crease and its apex is smooth: a
//! straight tube gets a half ellipsoid of height [`CAP_BULGE`]·r, a skin
//! that closes in towards its ring a lower dome (see [`ClosedGrid::close`]).
//! The axis is the ring's plane normal (Newell's area vector) pointing
//! away from the skin (the ring's centroid minus the next row's); when that
//! cannot tell (one row, or both centroids at one place), the side the
//! grid's winding makes the outside. The caps move with the ring: they are
//! computed from each frame's positions, with a vertex count that depends
//! on m and n only.
//!
//! Vertex layout of the closed mesh: the grid's `m·n` points (point (i,j)
//! at `j·m + i`), then the bottom cap (ring 1..=R of m points each, then
//! its apex), then the top cap alike. Its triangles are wound like
//! [`grid_triangles`] with the same `flip` (each boundary edge is used once
//! by the grid and once, the other way, by its cap), so the closed mesh is
//! a consistently oriented, watertight surface.

use glam::Vec3;
use std::f32::consts::FRAC_PI_4;

mod refine;
pub use refine::{display_refinement, refine, refine_colors, refined_size};

/// The apex of a cap over a straight tube stands this fraction of the
/// ring's mean radius beyond the ring: a rounded end, flatter than a
/// hemisphere. Over a skin that closes in towards its ring at θ from the
/// axis it stands `CAP_BULGE·r·tan(π/4 − θ/2)`: lower, down to flat for a
/// skin arriving square to the axis (the height at which a circular arc
/// leaving along the skin comes square to the axis, flattened alike).
pub const CAP_BULGE: f32 = 0.5;

/// A cubic Bézier's handles, as a fraction of the way to the corner of its
/// tangent lines, that make a quarter ellipse (within 0.03 %).
pub const ELLIPSE_HANDLE: f32 = 0.552_284_8;

/// The triangles of an m×n skin grid (periodic around, open bottom to top),
/// two per quad of [`grid_quads`], wound the same way.
pub fn grid_triangles(m: usize, n: usize, flip: bool) -> Vec<[u32; 3]> {
    split_quads(&grid_quads(m, n, flip))
}

/// The `m·(n−1)` quads of an m×n skin grid, `(i,j), (i+1,j), (i+1,j+1),
/// (i,j+1)`: counter-clockwise seen from the side the grid normal T1×T2
/// points to; reversed with `flip`.
pub fn grid_quads(m: usize, n: usize, flip: bool) -> Vec<[u32; 4]> {
    let mut q = Vec::with_capacity(m * n.saturating_sub(1));
    for j in 0..n.saturating_sub(1) {
        for i in 0..m {
            let at = |i: usize, j: usize| (j * m + i % m) as u32;
            let (a, b, c, d) = (at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1));
            q.push(if flip { [a, d, c, b] } else { [a, b, c, d] });
        }
    }
    q
}

fn split_quads(quads: &[[u32; 4]]) -> Vec<[u32; 3]> {
    quads
        .iter()
        .flat_map(|&[a, b, c, d]| [[a, b, c], [a, c, d]])
        .collect()
}

/// Concentric rings between a cap's boundary ring and its apex for a ring
/// of `m` points: about as many as keep the cap's cells as long as they
/// are wide (a dome's meridian is ~1.2 ring radii, its ring 2π radii).
pub fn cap_rings(m: usize) -> usize {
    (m / 5).clamp(2, 16)
}

/// One end of a skin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Row 0.
    Bottom,
    /// Row n − 1.
    Top,
}

impl End {
    /// Both ends, bottom first.
    pub const BOTH: [End; 2] = [End::Bottom, End::Top];
}

/// A cap's frame at one frame's positions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CapFrame {
    /// The ring's centroid (weighted by edge length).
    pub centre: Vec3,
    /// Unit outward axis, away from the skin.
    pub axis: Vec3,
    /// The apex's height above the centre along `axis`.
    pub height: f32,
}

/// The closed mesh of an m×n skin grid: its topology and how its caps
/// follow the grid's points. Grids too small to have a ring (m < 3 or
/// n < 2) get no caps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClosedGrid {
    /// Points around the grid (periodic).
    pub m: usize,
    /// Rows of the grid, bottom to top.
    pub n: usize,
    /// Concentric rings per cap between the boundary ring and the apex.
    pub rings: usize,
}

impl ClosedGrid {
    /// The closed mesh of an `m`×`n` grid, with caps if it has a ring.
    pub fn new(m: usize, n: usize) -> Self {
        let rings = if m >= 3 && n >= 2 { cap_rings(m) } else { 0 };
        Self { m, n, rings }
    }

    /// Whether the grid has caps (m ≥ 3 and n ≥ 2).
    pub fn has_caps(&self) -> bool {
        self.m >= 3 && self.n >= 2
    }

    /// Per-vertex values of the closed mesh from the grid's `values` (one
    /// per grid point): a cap vertex takes the boundary point under it, an
    /// apex its ring's mean. For what is painted on a skin, or measured.
    pub fn closed_values<T>(&self, values: &[T]) -> Vec<T>
    where
        T: Copy + std::ops::Add<Output = T> + std::ops::Mul<f32, Output = T>,
    {
        let mut out = Vec::with_capacity(self.vertex_count());
        out.extend_from_slice(&values[..self.grid_len()]);
        if !self.has_caps() {
            return out;
        }
        for end in End::BOTH {
            let row = &values[self.row(end) * self.m..(self.row(end) + 1) * self.m];
            out.extend((0..self.rings).flat_map(|_| row.iter().copied()));
            let sum = row[1..].iter().fold(row[0], |a, &b| a + b);
            out.push(sum * (1.0 / self.m as f32));
        }
        out
    }

    /// The grid's own points.
    pub fn grid_len(&self) -> usize {
        self.m * self.n
    }

    /// Vertices added per cap: its rings and its apex.
    pub fn cap_len(&self) -> usize {
        if self.has_caps() {
            self.rings * self.m + 1
        } else {
            0
        }
    }

    /// Vertices of the closed mesh.
    pub fn vertex_count(&self) -> usize {
        self.grid_len() + 2 * self.cap_len()
    }

    fn cap_start(&self, end: End) -> usize {
        self.grid_len()
            + match end {
                End::Bottom => 0,
                End::Top => self.cap_len(),
            }
    }

    /// The grid row a cap closes.
    pub fn row(&self, end: End) -> usize {
        match end {
            End::Bottom => 0,
            End::Top => self.n - 1,
        }
    }

    /// The vertex of `end`'s cap ring `k` (0: the boundary ring itself),
    /// point `i` (taken around, periodic).
    pub fn ring_vertex(&self, end: End, k: usize, i: usize) -> u32 {
        let i = i % self.m;
        (if k == 0 {
            self.row(end) * self.m + i
        } else {
            self.cap_start(end) + (k - 1) * self.m + i
        }) as u32
    }

    /// The apex of `end`'s cap.
    pub fn apex(&self, end: End) -> u32 {
        (self.cap_start(end) + self.rings * self.m) as u32
    }

    /// For a vertex of the closed mesh, the grid point it follows: itself
    /// for a grid point, the boundary point under it for a cap ring
    /// vertex, `None` for an apex (it follows the whole ring).
    pub fn grid_point(&self, v: usize) -> Option<usize> {
        if v < self.grid_len() {
            return Some(v);
        }
        let c = v - self.grid_len();
        let (end, k) = if c < self.cap_len() {
            (End::Bottom, c)
        } else {
            (End::Top, c - self.cap_len())
        };
        (k < self.rings * self.m).then(|| self.row(end) * self.m + k % self.m)
    }

    /// The caps' quads (between consecutive rings), wound like
    /// [`grid_quads`] with the same `flip`.
    pub fn cap_quads(&self, flip: bool) -> Vec<[u32; 4]> {
        let mut q = Vec::with_capacity(2 * self.rings * self.m);
        if !self.has_caps() {
            return q;
        }
        for end in End::BOTH {
            for k in 0..self.rings {
                for i in 0..self.m {
                    let v = |k, i| self.ring_vertex(end, k, i);
                    // The grid uses the bottom ring's edge i → i+1 and the
                    // top ring's i+1 → i: each cap takes it the other way.
                    let quad = match end {
                        End::Bottom => [v(k, i + 1), v(k, i), v(k + 1, i), v(k + 1, i + 1)],
                        End::Top => [v(k, i), v(k, i + 1), v(k + 1, i + 1), v(k + 1, i)],
                    };
                    q.push(if flip {
                        [quad[0], quad[3], quad[2], quad[1]]
                    } else {
                        quad
                    });
                }
            }
        }
        q
    }

    /// The caps' triangle fans from their innermost ring to their apex.
    pub fn cap_fans(&self, flip: bool) -> Vec<[u32; 3]> {
        let mut t = Vec::with_capacity(2 * self.m);
        if !self.has_caps() {
            return t;
        }
        for end in End::BOTH {
            let apex = self.apex(end);
            for i in 0..self.m {
                let v = |i| self.ring_vertex(end, self.rings, i);
                let (a, b) = match end {
                    End::Bottom => (v(i + 1), v(i)),
                    End::Top => (v(i), v(i + 1)),
                };
                t.push(if flip { [b, a, apex] } else { [a, b, apex] });
            }
        }
        t
    }

    /// Every face of the closed mesh: the grid's quads, the caps' quads,
    /// then the caps' apex triangles.
    pub fn faces(&self, flip: bool) -> Vec<Vec<u32>> {
        grid_quads(self.m, self.n, flip)
            .into_iter()
            .chain(self.cap_quads(flip))
            .map(|q| q.to_vec())
            .chain(self.cap_fans(flip).into_iter().map(|t| t.to_vec()))
            .collect()
    }

    /// The triangles of the closed mesh: [`grid_triangles`] first, then the
    /// caps'.
    pub fn triangles(&self, flip: bool) -> Vec<[u32; 3]> {
        let mut t = grid_triangles(self.m, self.n, flip);
        t.extend(split_quads(&self.cap_quads(flip)));
        t.extend(self.cap_fans(flip));
        t
    }

    /// The frame of `end`'s cap at grid points `p` (at least `m·n` of
    /// them). `flip` is the grid's winding (as for [`grid_triangles`]),
    /// which decides the outward side where the geometry cannot.
    pub fn cap_frame(&self, p: &[Vec3], end: End, flip: bool) -> CapFrame {
        let m = self.m;
        let (ring, next) = self.rows(p, end);
        let centre = ring_centroid(ring);
        let away = centre - ring_centroid(next);
        let mut area = Vec3::ZERO;
        let mut radius = 0.0f32;
        for i in 0..m {
            let (a, b) = (ring[i] - centre, ring[(i + 1) % m] - centre);
            area += a.cross(b);
            radius += a.length();
        }
        radius /= m as f32;
        // With the grid wound as unflipped T1×T2 (outward), rings turn
        // counter-clockwise about the direction from bottom to top: the
        // bottom's outside is against its area vector, the top's along it.
        let winding = match (end, flip) {
            (End::Bottom, false) | (End::Top, true) => -1.0,
            (End::Top, false) | (End::Bottom, true) => 1.0,
        };
        let tiny = 1e-6 * radius;
        let plane = (area.length() > tiny * tiny)
            .then(|| area.normalize_or_zero())
            .filter(|a| *a != Vec3::ZERO);
        let away_dir = (away.length() > tiny)
            .then(|| away.normalize_or_zero())
            .filter(|a| *a != Vec3::ZERO);
        let axis = match (plane, away_dir) {
            (Some(a), Some(d)) if a.dot(d).abs() > 1e-3 => a * a.dot(d).signum(),
            (Some(a), _) => a * winding,
            (None, Some(d)) => d,
            (None, None) => Vec3::Y,
        };
        // The mean radius across the axis, and the mean angle θ by which the
        // skin closes in towards the axis as it reaches the ring.
        let (mut across, mut closing) = (0.0f32, 0.0f32);
        for i in 0..m {
            across += (ring[i] - centre).reject_from_normalized(axis).length();
            closing += self.meridian(ring[i], next[i], centre, axis).2;
        }
        across /= m as f32;
        closing /= m as f32;
        let height = CAP_BULGE * across * (FRAC_PI_4 - 0.5 * closing).tan();
        if centre.is_finite() && axis.is_finite() && height.is_finite() {
            CapFrame {
                centre,
                axis,
                height: height.max(0.0),
            }
        } else {
            CapFrame {
                centre: if centre.is_finite() {
                    centre
                } else {
                    Vec3::ZERO
                },
                axis: Vec3::Y,
                height: 0.0,
            }
        }
    }

    /// `end`'s ring and the row next to it.
    fn rows<'a>(&self, p: &'a [Vec3], end: End) -> (&'a [Vec3], &'a [Vec3]) {
        let m = self.m;
        let row = self.row(end);
        let next = match end {
            End::Bottom => 1.min(self.n - 1),
            End::Top => self.n.saturating_sub(2),
        };
        (&p[row * m..(row + 1) * m], &p[next * m..(next + 1) * m])
    }

    /// Ring point `at`'s meridian: the unit radial direction away from the
    /// axis (zero on the axis), the unit direction in which the skin
    /// arrives at the ring from `before` (in the plane of the axis and the
    /// radius, never turning back or flaring out: between the axis and
    /// the inward radius), and the angle θ ∈ [0, π/2] between it and the
    /// axis.
    fn meridian(&self, at: Vec3, before: Vec3, centre: Vec3, axis: Vec3) -> (Vec3, Vec3, f32) {
        let radial = (at - centre)
            .reject_from_normalized(axis)
            .normalize_or_zero();
        let arriving = at - before;
        let along = arriving.dot(axis).max(0.0);
        let inward = (-arriving.dot(radial)).max(0.0);
        let dir = (axis * along - radial * inward)
            .try_normalize()
            .unwrap_or(axis);
        let theta = inward.atan2(along);
        (radial, dir, if theta.is_finite() { theta } else { 0.0 })
    }

    /// Appends the caps' vertices to grid points `p` (exactly `m·n` of
    /// them on entry, [`vertex_count`](Self::vertex_count) on return).
    ///
    /// Each meridian (boundary point `pᵢ` to the apex `c + a·h`) is a cubic
    /// Bézier that leaves the ring in the direction the skin arrives at it
    /// (so the cap continues the skin without a crease) and reaches the
    /// apex square to the axis (so the apex is smooth). Its inner control
    /// points lie [`ELLIPSE_HANDLE`] of the way to where those two tangent
    /// lines meet: for a straight tube that is the usual Bézier quarter
    /// ellipse of semi-axes r and h. Ring k is the curve at k/(R+1).
    pub fn close(&self, p: &mut Vec<Vec3>, flip: bool) {
        debug_assert_eq!(p.len(), self.grid_len(), "close takes the grid's points");
        if !self.has_caps() {
            return;
        }
        let m = self.m;
        p.reserve(2 * self.cap_len());
        let mut curves = Vec::with_capacity(m);
        for end in End::BOTH {
            let f = self.cap_frame(p, end, flip);
            let apex = f.centre + f.axis * f.height;
            curves.clear();
            let (ring, next) = self.rows(p, end);
            for i in 0..m {
                let b0 = ring[i];
                let (radial, dir, _) = self.meridian(b0, next[i], f.centre, f.axis);
                // Where the skin's tangent line reaches the apex's level,
                // kept between the ring and the axis.
                let rise = f.height - (b0 - f.centre).dot(f.axis);
                let up = dir.dot(f.axis);
                let mut reach = if up > 1e-6 { (rise / up).max(0.0) } else { 0.0 };
                let r = (b0 - f.centre).dot(radial);
                let closing = -dir.dot(radial);
                if closing > 1e-6 {
                    reach = reach.min(r.max(0.0) / closing);
                }
                let corner = b0 + dir * reach;
                let b1 = b0 + (corner - b0) * ELLIPSE_HANDLE;
                let b2 = apex + (corner - f.centre).reject_from_normalized(f.axis) * ELLIPSE_HANDLE;
                curves.push([b0, b1, b2, apex]);
            }
            for k in 1..=self.rings {
                let t = k as f32 / (self.rings + 1) as f32;
                p.extend(curves.iter().map(|b| bezier(b, t)));
            }
            p.push(apex);
        }
    }

    /// The closed mesh's positions for grid points `grid`.
    pub fn closed(&self, grid: &[Vec3], flip: bool) -> Vec<Vec3> {
        let mut p = Vec::with_capacity(self.vertex_count());
        p.extend_from_slice(&grid[..self.grid_len()]);
        self.close(&mut p, flip);
        p
    }

    /// Appends the cap vertices' unit normals to `normals` (which holds
    /// the grid points' normals on entry), for closed positions `p`: area
    /// weighted over the caps' triangles, which face out with `flip` as the
    /// grid's do; the cap's axis where they are degenerate.
    pub fn cap_normals(&self, p: &[Vec3], flip: bool, normals: &mut Vec<Vec3>) {
        debug_assert_eq!(normals.len(), self.grid_len());
        if !self.has_caps() {
            return;
        }
        let start = self.grid_len();
        normals.resize(self.vertex_count(), Vec3::ZERO);
        let mut add = |t: [u32; 3]| {
            let [a, b, c] = t.map(|i| i as usize);
            let f = (p[b] - p[a]).cross(p[c] - p[a]);
            for v in [a, b, c] {
                if v >= start {
                    normals[v] += f;
                }
            }
        };
        for [a, b, c, d] in self.cap_quads(flip) {
            add([a, b, c]);
            add([a, c, d]);
        }
        for t in self.cap_fans(flip) {
            add(t);
        }
        for end in End::BOTH {
            let first = self.cap_start(end);
            let mut axis = None;
            for v in first..first + self.cap_len() {
                normals[v] = match normals[v].try_normalize() {
                    Some(u) => u,
                    None => *axis.get_or_insert_with(|| self.cap_frame(p, end, flip).axis),
                };
            }
        }
    }
}

/// The cubic Bézier with control points `b` at `t`.
fn bezier(b: &[Vec3; 4], t: f32) -> Vec3 {
    let u = 1.0 - t;
    b[0] * (u * u * u) + b[1] * (3.0 * u * u * t) + b[2] * (3.0 * u * t * t) + b[3] * (t * t * t)
}

/// A ring's centroid weighted by the length of its edges (so uneven
/// spacing does not pull it), the plain mean where the ring has no length.
fn ring_centroid(ring: &[Vec3]) -> Vec3 {
    let m = ring.len();
    let mean = ring.iter().copied().sum::<Vec3>() / m.max(1) as f32;
    let (mut sum, mut len) = (Vec3::ZERO, 0.0f32);
    for i in 0..m {
        let (a, b) = (ring[i], ring[(i + 1) % m]);
        let l = a.distance(b);
        sum += (a + b) * 0.5 * l;
        len += l;
    }
    if len > 0.0 && (sum / len).is_finite() {
        sum / len
    } else {
        mean
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::f32::consts::{FRAC_PI_4, PI, TAU};

    /// An m×n cylinder of radius `r` around +Y from y = 0 to `len`, turning
    /// counter-clockwise seen from above (T1×T2 outward), or the other way
    /// with `reverse`.
    fn cylinder(m: usize, n: usize, r: f32, len: f32, reverse: bool) -> Vec<Vec3> {
        let mut p = Vec::new();
        for j in 0..n {
            for i in 0..m {
                let a = TAU * i as f32 / m as f32;
                let z = if reverse { a.sin() } else { -a.sin() };
                p.push(Vec3::new(
                    r * a.cos(),
                    len * j as f32 / (n - 1) as f32,
                    r * z,
                ));
            }
        }
        p
    }

    /// Every directed edge once and its twin once: closed, manifold and
    /// consistently oriented.
    fn assert_watertight(t: &[[u32; 3]], vertices: usize) {
        let mut edges = HashMap::new();
        for tri in t {
            assert!(tri.iter().all(|&v| (v as usize) < vertices), "{tri:?}");
            for k in 0..3 {
                *edges.entry((tri[k], tri[(k + 1) % 3])).or_insert(0) += 1;
            }
        }
        for (&(a, b), &c) in &edges {
            assert_eq!(c, 1, "edge {a}->{b} used {c} times in one direction");
            assert_eq!(
                edges.get(&(b, a)),
                Some(&1),
                "edge {a}->{b} has no twin: a hole"
            );
        }
        // Every vertex is on the surface.
        let mut used = vec![false; vertices];
        for v in t.iter().flatten() {
            used[*v as usize] = true;
        }
        assert!(used.iter().all(|&u| u), "a vertex on no triangle");
    }

    fn signed_volume(t: &[[u32; 3]], p: &[Vec3]) -> f32 {
        t.iter()
            .map(|&[a, b, c]| p[a as usize].dot(p[b as usize].cross(p[c as usize])) / 6.0)
            .sum()
    }

    #[test]
    fn closed_grids_are_watertight_for_every_size_and_winding() {
        for (m, n) in [(3, 2), (5, 4), (16, 16), (64, 9)] {
            let g = ClosedGrid::new(m, n);
            for flip in [false, true] {
                assert_watertight(&g.triangles(flip), g.vertex_count());
            }
            assert_eq!(
                g.triangles(false).len(),
                2 * m * (n - 1) + 2 * (2 * g.rings * m + m)
            );
            let faces = g.faces(false);
            assert_eq!(faces.len(), m * (n - 1) + 2 * (g.rings * m + m));
        }
        // Too small for a ring: the grid alone.
        let g = ClosedGrid::new(2, 5);
        assert_eq!(g.vertex_count(), 10);
        assert_eq!(g.triangles(false), grid_triangles(2, 5, false));
    }

    /// A cylinder closed by its caps encloses the cylinder plus two half
    /// ellipsoids of semi-axis h = `CAP_BULGE·r`: V = πr²L + (4/3)πr²h, up to
    /// the polygons' chord error; positive, so the caps face out.
    #[test]
    fn a_closed_cylinder_has_the_volume_of_cylinder_and_domes() {
        let (r, len) = (0.3, 1.2);
        for (m, n) in [(64, 8), (128, 4)] {
            let g = ClosedGrid::new(m, n);
            for reverse in [false, true] {
                // A reversed cylinder is exported flipped; either way it must
                // enclose the same positive volume.
                let flip = reverse;
                let p = g.closed(&cylinder(m, n, r, len, reverse), flip);
                assert_eq!(p.len(), g.vertex_count());
                let v = signed_volume(&g.triangles(flip), &p);
                let h = CAP_BULGE * r;
                let want = PI * r * r * len + 4.0 / 3.0 * PI * r * r * h;
                assert!(
                    (v - want).abs() < 0.01 * want,
                    "{m}x{n} reverse {reverse}: volume {v}, want {want}"
                );
                // The apexes stand h beyond the ends, along the axis.
                let bottom = p[g.apex(End::Bottom) as usize];
                let top = p[g.apex(End::Top) as usize];
                assert!(bottom.distance(Vec3::new(0.0, -h, 0.0)) < 1e-4, "{bottom}");
                assert!(top.distance(Vec3::new(0.0, len + h, 0.0)) < 1e-4, "{top}");
            }
        }
    }

    /// Cap normals are unit, outward (along the radius from the dome's
    /// centre), and at the apex the axis.
    #[test]
    fn cap_normals_point_out_of_the_dome() {
        let (m, n, r, len) = (32, 5, 0.5, 2.0);
        let g = ClosedGrid::new(m, n);
        let p = g.closed(&cylinder(m, n, r, len, false), false);
        let mut nrm = vec![Vec3::X; m * n];
        g.cap_normals(&p, false, &mut nrm);
        assert_eq!(nrm.len(), g.vertex_count());
        let h = CAP_BULGE * r;
        for end in End::BOTH {
            let (c, axis) = match end {
                End::Bottom => (Vec3::ZERO, Vec3::NEG_Y),
                End::Top => (Vec3::new(0.0, len, 0.0), Vec3::Y),
            };
            for k in 1..=g.rings {
                for i in 0..m {
                    let v = g.ring_vertex(end, k, i) as usize;
                    let q = p[v] - c;
                    // The ellipsoid's normal: (x/r², y/h², z/r²) in the cap's frame.
                    let along = q.dot(axis);
                    let radial = q - axis * along;
                    let want = (radial / (r * r) + axis * along / (h * h)).normalize();
                    assert!((nrm[v].length() - 1.0).abs() < 1e-5);
                    assert!(
                        nrm[v].dot(want) > 0.98,
                        "{end:?} ring {k} point {i}: {} vs {want}",
                        nrm[v]
                    );
                }
            }
            let apex = g.apex(end) as usize;
            assert!(nrm[apex].dot(axis) > 0.9999, "{}", nrm[apex]);
        }
    }

    /// Caps follow any ring shape: over an elliptic, bent, off-centre tube
    /// the closed mesh is still outward, every cap point lies on the outer
    /// side of its ring's plane and within the ring (no overhang), and each
    /// meridian stays on its side of the axis.
    #[test]
    fn caps_follow_an_irregular_ring() {
        let (m, n) = (40, 6);
        let g = ClosedGrid::new(m, n);
        let mut grid = Vec::new();
        for j in 0..n {
            for i in 0..m {
                let a = TAU * i as f32 / m as f32;
                let y = j as f32 * 0.2;
                // An ellipse whose width changes with height, bent sideways.
                let p = Vec3::new((0.5 + 0.1 * y) * a.cos(), y, -0.2 * a.sin());
                grid.push(p + Vec3::new(0.3 * y * y, 0.0, 0.1));
            }
        }
        let p = g.closed(&grid, false);
        assert!(signed_volume(&g.triangles(false), &p) > 0.0);
        for end in End::BOTH {
            let f = g.cap_frame(&p, end, false);
            assert!(f.height > 0.0);
            let row = g.row(end) * m;
            for k in 1..=g.rings {
                for i in 0..m {
                    let q = p[g.ring_vertex(end, k, i) as usize] - f.centre;
                    let b = grid[row + i] - f.centre;
                    assert!(q.dot(f.axis) > -1e-5 && q.dot(f.axis) <= f.height + 1e-5);
                    let (qr, br) = (q.reject_from(f.axis), b.reject_from(f.axis));
                    assert!(qr.length() <= br.length() + 1e-5, "ring {k} point {i}");
                    assert!(qr.dot(br) >= -1e-6, "ring {k} point {i} crossed the axis");
                }
            }
        }
        // The bottom cap points down-ish, the top one up-ish.
        assert!(g.cap_frame(&p, End::Bottom, false).axis.y < -0.5);
        assert!(g.cap_frame(&p, End::Top, false).axis.y > 0.5);
    }

    /// The largest angle between the normals of a grid face at a boundary
    /// ring and the cap face beside it, and between the apex triangles'
    /// normals and the axis.
    fn crease_at_ring_and_apex(g: &ClosedGrid, p: &[Vec3], end: End) -> (f32, f32) {
        let face = |a: u32, b: u32, c: u32| {
            let (a, b, c) = (p[a as usize], p[b as usize], p[c as usize]);
            (b - a).cross(c - a).normalize()
        };
        let m = g.m;
        let quads = grid_quads(m, g.n, false);
        let caps = g.cap_quads(false);
        let (grid_row, cap_row) = match end {
            End::Bottom => (0, 0),
            End::Top => (m * (g.n - 2), g.rings * m),
        };
        let mut ring = 0.0f32;
        for i in 0..m {
            let [a, b, c, _] = quads[grid_row + i];
            let [x, y, z, _] = caps[cap_row + i];
            ring = ring.max(face(a, b, c).angle_between(face(x, y, z)));
        }
        let axis = g.cap_frame(p, end, false).axis;
        let fans = g.cap_fans(false);
        let first = if end == End::Bottom { 0 } else { m };
        let apex = fans[first..first + m]
            .iter()
            .map(|&[a, b, c]| face(a, b, c).angle_between(axis))
            .fold(0.0f32, f32::max);
        (ring.to_degrees(), apex.to_degrees())
    }

    /// A cap continues the skin without a crease, whether the skin reaches
    /// its ring straight (a cylinder: half ellipsoid of height `CAP_BULGE·r`)
    /// or closing in at 45° (a cone: a lower dome, `CAP_BULGE·r·tan` 22.5°),
    /// and comes smooth to its apex.
    #[test]
    fn caps_continue_the_skin_without_a_crease() {
        let (m, n, r) = (64, 6, 0.4);
        let g = ClosedGrid::new(m, n);
        let cylinder = cylinder(m, n, r, 1.0, false);
        // A double cone: radius r at mid height, closing in at 45° to r/2
        // at both ends.
        let cone: Vec<Vec3> = cylinder
            .iter()
            .map(|q| {
                let y = q.y - 0.5;
                let scale = (r - y.abs().min(0.5) * r) / r;
                Vec3::new(q.x * scale, y * r, q.z * scale)
            })
            .collect();
        for (name, grid, closing) in [("cylinder", cylinder, 0.0f32), ("cone", cone, 45.0)] {
            let p = g.closed(&grid, false);
            for end in End::BOTH {
                let f = g.cap_frame(&p, end, false);
                let ring_r = if closing == 0.0 { r } else { r / 2.0 };
                let want = CAP_BULGE * ring_r * (FRAC_PI_4 - closing.to_radians() / 2.0).tan();
                assert!(
                    (f.height - want).abs() < 1e-3 * ring_r,
                    "{name} {end:?}: apex {} above the ring, want {want}",
                    f.height
                );
                let (ring, apex) = crease_at_ring_and_apex(&g, &p, end);
                assert!(ring < 8.0, "{name} {end:?}: a {ring}° crease at the ring");
                assert!(
                    apex < 8.0,
                    "{name} {end:?}: apex faces {apex}° off the axis"
                );
            }
        }
    }

    #[test]
    fn degenerate_rings_close_without_nan() {
        let (m, n) = (8, 4);
        let g = ClosedGrid::new(m, n);
        // Every point at one place, then just the top ring collapsed, then
        // two rows: one ring and its neighbour at the same centroid.
        let mut top = cylinder(m, n, 0.4, 1.0, false);
        for i in 0..m {
            top[(n - 1) * m + i] = Vec3::new(0.0, 1.0, 0.0);
        }
        let flat = {
            let mut p = cylinder(m, n, 0.4, 1.0, false);
            for j in 0..n {
                for i in 0..m {
                    p[j * m + i].y = 0.0;
                }
            }
            p
        };
        for grid in [vec![Vec3::new(1.0, 2.0, 3.0); m * n], top, flat] {
            for flip in [false, true] {
                let p = g.closed(&grid, flip);
                assert!(p.iter().all(|v| v.is_finite()), "{p:?}");
                let mut nrm = vec![Vec3::Y; m * n];
                g.cap_normals(&p, flip, &mut nrm);
                assert!(
                    nrm.iter().all(|v| (v.length() - 1.0).abs() < 1e-4),
                    "{nrm:?}"
                );
            }
        }
    }

    #[test]
    fn grid_points_of_cap_vertices() {
        let g = ClosedGrid::new(6, 3);
        assert_eq!(g.grid_point(7), Some(7));
        assert_eq!(
            g.grid_point(g.ring_vertex(End::Bottom, 2, 4) as usize),
            Some(4)
        );
        assert_eq!(
            g.grid_point(g.ring_vertex(End::Top, 1, 5) as usize),
            Some(2 * 6 + 5)
        );
        assert_eq!(g.grid_point(g.apex(End::Top) as usize), None);
        assert_eq!(g.apex(End::Top) as usize + 1, g.vertex_count());
    }
}
