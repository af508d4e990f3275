//! What the animator sees, as plain CPU geometry built from a
//! [`SceneSnapshot`]: the skin with smooth grid normals, closed at both
//! ends by caps that follow its boundary rings ([`ClosedGrid`]; optionally
//! its wireframe and its fat thickness as colours), the muscles, the skeleton,
//! the connective-tissue bands, the tool cursors with their wands, and a
//! floor. The GPU side only uploads and draws these lists.

use super::heat::SkinMap;
use crate::character::{Character, Posture};
use crate::kinematics::PosedBody;
use crate::shape::{MuscleShape, TriMesh};
use crate::skin_mesh::{ClosedGrid, End};
use crate::snapshot::{SceneSnapshot, SkinSurface};
use bytemuck::{Pod, Zeroable};
use glam::{Affine3A, Quat, Vec3};

/// One vertex of every scene pipeline. Lines use the same layout (their
/// normal is ignored).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Vertex {
    /// World-space position (metres).
    pub position: [f32; 3],
    /// World-space normal, used for lighting; zero for line vertices.
    pub normal: [f32; 3],
    /// Linear RGBA colour; alpha matters in the blended lists (lines, flat, translucent).
    pub color: [f32; 4],
}

impl Vertex {
    /// A vertex from glam vectors and a linear RGBA colour.
    pub fn new(position: Vec3, normal: Vec3, color: [f32; 4]) -> Self {
        Self {
            position: position.to_array(),
            normal: normal.to_array(),
            color,
        }
    }
}

/// Triangles (or line segments) with their indices.
#[derive(Clone, Debug, Default)]
pub struct DrawList {
    /// The vertices the indices refer to.
    pub vertices: Vec<Vertex>,
    /// Indices into `vertices`: three per triangle, or two per line segment.
    pub indices: Vec<u32>,
}

impl DrawList {
    /// Empties the list, keeping its allocations for the next frame.
    pub fn clear(&mut self) {
        self.vertices.clear();
        self.indices.clear();
    }

    /// Whether there is nothing to draw (no indices).
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    fn base(&self) -> u32 {
        self.vertices.len() as u32
    }

    /// Appends everything in `other` (another character's lists).
    pub fn append(&mut self, other: &DrawList) {
        let base = self.base();
        self.vertices.extend_from_slice(&other.vertices);
        self.indices.extend(other.indices.iter().map(|i| i + base));
    }

    /// Appends a mesh transformed by `to_world`, in one colour.
    fn push_mesh(&mut self, mesh: &TriMesh, to_world: &Affine3A, color: [f32; 4]) {
        let base = self.base();
        for (p, n) in mesh.positions.iter().zip(&mesh.normals) {
            let wp = to_world.transform_point3(*p);
            let wn = to_world.transform_vector3(*n).normalize_or_zero();
            self.vertices.push(Vertex::new(wp, wn, color));
        }
        for t in &mesh.indices {
            self.indices
                .extend_from_slice(&[base + t[0], base + t[1], base + t[2]]);
        }
    }

    /// A closed surface's triangles, its vertices in `colors`.
    fn push_closed(&mut self, surface: &ClosedSurface, colors: impl Iterator<Item = [f32; 4]>) {
        let base = self.base();
        for ((p, n), c) in surface.positions.iter().zip(&surface.normals).zip(colors) {
            self.vertices.push(Vertex::new(*p, *n, c));
        }
        for t in surface.grid.triangles(surface.flip) {
            self.indices.extend(t.map(|i| base + i));
        }
    }

    fn push_line(&mut self, a: Vec3, b: Vec3, color: [f32; 4]) {
        let base = self.base();
        self.vertices.push(Vertex::new(a, Vec3::ZERO, color));
        self.vertices.push(Vertex::new(b, Vec3::ZERO, color));
        self.indices.extend_from_slice(&[base, base + 1]);
    }
}

/// How muscles are drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MuscleStyle {
    /// Drawn solid, in the opaque list.
    Opaque,
    /// Seen through, so the skin's sliding over them stays visible.
    #[default]
    Translucent,
    /// Not drawn at all (nor is the FEM flesh's embedded mesh).
    Hidden,
}

/// What to draw; the parameters an animator toggles.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SceneStyle {
    /// Draw the skin surfaces.
    pub skin: bool,
    /// Draw the skin grid and its caps as lines (and the FEM lattice's edges).
    pub wireframe: bool,
    /// What colours the skin: its paint, or a heat map.
    pub map: SkinMap,
    /// X-ray: the skin drawn see-through (`XRAY_ALPHA`), so the muscles,
    /// the skeleton and the bands under it show.
    pub xray: bool,
    /// Fat thickness shown at the top of the colour map (metres).
    pub fat_map_max: f32,
    /// How the muscles (and the FEM flesh's embedded mesh) are drawn.
    pub muscles: MuscleStyle,
    /// Draw the skeleton: a sphere at each joint and a thin prism for each bone.
    pub skeleton: bool,
    /// Draw the connective-tissue bands as lines from skin points to their muscle anchors.
    pub bands: bool,
    /// Draw the floor (4 m square) with its 0.25 m grid.
    pub floor: bool,
    /// Draw each skin's fat shell, in a see-through fat yellow: the
    /// inner face of its fat layer, each point moved in along the skin's
    /// normal by its fat thickness.
    pub fat: bool,
    /// Draw each skin as the smooth surface through its points, refined
    /// this many times per grid edge ([`crate::skin_mesh::refine`]); 0
    /// chooses by resolution ([`crate::skin_mesh::display_refinement`]), 1
    /// draws the grid's own facets.
    pub subdivide: usize,
}

impl Default for SceneStyle {
    fn default() -> Self {
        Self {
            skin: true,
            wireframe: false,
            map: SkinMap::Paint,
            xray: false,
            fat_map_max: 0.03,
            muscles: MuscleStyle::Translucent,
            skeleton: true,
            bands: false,
            floor: true,
            fat: false,
            subdivide: 0,
        }
    }
}

/// A hand's tool cursor: a marker at the tool tip and the picking wand.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cursor {
    /// The tool tip, in world space (metres).
    pub position: Vec3,
    /// The hand's orientation; the wand points along its −z.
    pub orientation: Quat,
    /// Radius of the tool's copy at the tip (e.g. the sphere tool's radius).
    pub radius: f32,
    /// Wand length along the pointing direction (−z of the orientation); 0 hides it.
    pub wand: f32,
    /// Linear RGBA colour of the marker and the wand.
    pub color: [f32; 4],
    /// The trigger is held: drawn brighter.
    pub active: bool,
}

/// Everything beyond the snapshot that a frame shows.
#[derive(Clone, Debug, Default)]
pub struct Decorations {
    /// The hands' tool cursors.
    pub cursors: Vec<Cursor>,
    /// The current joint, highlighted (LEMAN §6.1).
    pub current_joint: Option<usize>,
    /// The UI panel standing in the world (the toolbar, parameters and
    /// timeline).
    pub ui: Option<super::ui_panel::UiQuad>,
    /// For the contact map: per skin, per point, how much it rests on
    /// another skin (0 to 1; empty when not measured).
    pub skin_contact: Vec<Vec<f32>>,
}

/// Linear RGBA skin tone (when the fat map is off).
pub const SKIN_COLOR: [f32; 4] = {
    let [r, g, b] = crate::character::DEFAULT_SKIN_COLOR;
    [r, g, b, 1.0]
};
/// Opacity of the skin in X-ray ([`SceneStyle::xray`]).
pub const XRAY_ALPHA: f32 = 0.3;
/// Linear RGBA colour of unpainted muscles (alpha 0.45 when translucent).
pub const MUSCLE_COLOR: [f32; 4] = {
    let [r, g, b] = crate::character::DEFAULT_MUSCLE_COLOR;
    [r, g, b, 1.0]
};
/// Linear RGBA colour of the joint spheres.
pub const JOINT_COLOR: [f32; 4] = [0.95, 0.95, 0.90, 1.0];
/// Linear RGBA colour of the current joint's sphere.
pub const CURRENT_JOINT_COLOR: [f32; 4] = [1.0, 0.85, 0.1, 1.0];
/// Linear RGBA colour of the bones.
pub const BONE_COLOR: [f32; 4] = [0.85, 0.85, 0.80, 1.0];
/// Linear RGBA colour of the connective-tissue band lines.
pub const BAND_COLOR: [f32; 4] = [0.3, 0.9, 0.5, 0.35];
/// Linear RGBA colour of the floor.
pub const FLOOR_COLOR: [f32; 4] = [0.42, 0.44, 0.46, 1.0];
/// Linear RGBA colour of the floor's grid lines.
pub const GRID_COLOR: [f32; 4] = [0.30, 0.32, 0.34, 1.0];
/// Linear RGBA colour of the skin grid's wireframe.
pub const WIRE_COLOR: [f32; 4] = [0.15, 0.10, 0.10, 1.0];
/// The caps' wireframe: lighter than the grid's, their points are not simulated.
pub const CAP_WIRE_COLOR: [f32; 4] = [0.45, 0.33, 0.30, 1.0];
/// Linear RGBA colour of the fat shell ([`SceneStyle::fat`]): a fat
/// yellow, see-through so the muscles under it and the skin over it show.
pub const FAT_SHELL_COLOR: [f32; 4] = [0.95, 0.78, 0.25, 0.4];
/// How far short of its fat the shell is drawn (m): a millimetre, not
/// seen at the samples' size, clear of the depth buffer's resolution.
pub const FAT_SHELL_LIFT: f32 = 1e-3;
/// Linear RGBA colour of the FEM lattice's edges in wireframe mode.
pub const LATTICE_COLOR: [f32; 4] = [0.35, 0.55, 0.95, 0.8];
/// Linear RGBA colour of the line from a grabbed flesh point to the hand holding it.
pub const GRAB_COLOR: [f32; 4] = [1.0, 0.85, 0.1, 1.0];

const MUSCLE_SLICES: usize = 24;
const MUSCLE_STACKS: usize = 16;
const JOINT_RADIUS: f32 = 0.012;
const BONE_RADIUS: f32 = 0.004;
const FLOOR_HALF: f32 = 2.0;
const FLOOR_GRID: f32 = 0.25;

/// Geometry for one frame, in draw order: opaque triangles, lines, then
/// translucent triangles (blended, no depth writes).
#[derive(Clone, Debug, Default)]
pub struct SceneGeometry {
    /// Opaque, lit triangles (skin, solid muscles, skeleton, floor, small cursors).
    pub opaque: DrawList,
    /// Line segments, alpha-blended (wireframe, floor grid, bands, wands, grabs).
    pub lines: DrawList,
    /// Translucent, lit triangles (see-through muscles, large cursors), blended
    /// without depth writes.
    pub translucent: DrawList,
}

/// Builds `SceneGeometry` frame after frame, reusing its buffers and the
/// muscle tessellations (re-tessellated only when a muscle's posed shape
/// changes: an edit, or a joint angle that drives a deformation).
#[derive(Default)]
pub struct GeometryBuilder {
    /// The geometry last built; its buffers are reused by the next build.
    pub geometry: SceneGeometry,
    muscle_meshes: Vec<Option<(MuscleShape, TriMesh)>>,
    unit_sphere: Option<TriMesh>,
    speed: super::heat::SpeedTrack,
    /// Whether the flesh's morph mesh is drawn from the GPU's posed buffer
    /// (the renderer's), so the build leaves it out; otherwise the build
    /// poses it on the CPU.
    pub morph_on_gpu: bool,
}

impl GeometryBuilder {
    /// An empty builder, with nothing tessellated yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in a snapshot, for a map read between snapshots
    /// ([`SkinMap::Speed`]); every build does, and a headless render drawing
    /// every Nth frame passes it the frames between.
    pub fn observe(&mut self, snapshot: &SceneSnapshot, style: &SceneStyle) {
        if style.skin && style.map == SkinMap::Speed {
            self.speed.track(snapshot);
        }
    }

    /// Skin `s`'s values for the style's heat map on its simulated grid,
    /// where the map reads them from the layers (stretch, speed, contact)
    /// or the fat; None for the paint, and for curvature (read from the
    /// drawn surface).
    fn heat_values(
        &self,
        snapshot: &SceneSnapshot,
        body: Option<&PosedBody>,
        s: usize,
        (style, on_skins): (&SceneStyle, &[Vec<f32>]),
    ) -> Option<Vec<f32>> {
        let skin = &snapshot.skins[s];
        let own = snapshot
            .character
            .skins
            .get(s)
            .filter(|k| k.m == skin.m && k.n == skin.n);
        let count = skin.m * skin.n;
        match style.map {
            SkinMap::Paint | SkinMap::Curvature => None,
            SkinMap::Fat => Some(
                (0..count)
                    .map(|k| skin.fat.get(k).copied().unwrap_or(0.0))
                    .collect(),
            ),
            SkinMap::Stretch => own
                .filter(|k| k.points.rest_metric.len() == count)
                .map(|k| {
                    super::heat::relative(super::heat::stretch(
                        skin.m,
                        skin.n,
                        &skin.positions,
                        &k.points.rest_metric,
                    ))
                }),
            SkinMap::Speed => self
                .speed
                .of(s)
                .filter(|v| v.len() == count)
                .map(<[f32]>::to_vec),
            SkinMap::Contact => own.zip(body).map(|(k, body)| {
                let mut on = super::heat::contact(body, &k.muscles, &skin.positions, &skin.fat);
                // Where it rests on another skin (the front end measures it).
                if let Some(other) = on_skins.get(s).filter(|v| v.len() == on.len()) {
                    on.iter_mut().zip(other).for_each(|(a, b)| *a = a.max(*b));
                }
                on
            }),
        }
    }

    /// Rebuilds the geometry for `snapshot` with `style` and `decorations`.
    pub fn build(
        &mut self,
        snapshot: &SceneSnapshot,
        style: &SceneStyle,
        decorations: &Decorations,
    ) -> &SceneGeometry {
        self.build_posed(snapshot, None, style, decorations)
    }

    /// As [`build`](Self::build), with the skeleton and muscles at `posture`
    /// instead of the snapshot's (the interactive posture, newer than the
    /// simulated skin).
    pub fn build_posed(
        &mut self,
        snapshot: &SceneSnapshot,
        posture: Option<&Posture>,
        style: &SceneStyle,
        decorations: &Decorations,
    ) -> &SceneGeometry {
        let mut g = std::mem::take(&mut self.geometry);
        g.opaque.clear();
        g.lines.clear();
        g.translucent.clear();
        let character: &Character = &snapshot.character;
        let posture = posture.unwrap_or(&snapshot.posture);
        let posture_ok = posture.angles.len() == character.skeleton.joints.len();
        // FEM flesh: the muscles ride on the snapshot's flesh pose.
        let flesh = snapshot
            .flesh
            .as_deref()
            .filter(|f| f.muscle_offsets.len() == character.muscles.len());
        let body = posture_ok.then(|| match flesh {
            Some(f) => PosedBody::with_muscle_offsets(character, posture, &f.muscle_offsets),
            None => PosedBody::new(character, posture),
        });

        if style.floor {
            push_floor(&mut g);
        }
        self.observe(snapshot, style);
        if style.skin {
            for (s, skin) in snapshot.skins.iter().enumerate() {
                // The painted colours, where the character's skin is the
                // drawn one (the same grid).
                let color = character
                    .skins
                    .get(s)
                    .map(|k| &k.points.color[..])
                    .filter(|c| c.len() == skin.m * skin.n && !c.is_empty());
                let values = self.heat_values(
                    snapshot,
                    body.as_ref(),
                    s,
                    (style, &decorations.skin_contact),
                );
                push_skin(&mut g, skin, (color, values.as_deref()), style);
            }
        }
        if style.fat {
            for skin in &snapshot.skins {
                push_fat_shell(&mut g, skin, style);
            }
        }
        if let Some(body) = &body {
            if style.muscles != MuscleStyle::Hidden {
                self.push_muscles(&mut g, character, body, style.muscles);
            }
            if style.skeleton {
                self.push_skeleton(&mut g, character, body, decorations.current_joint);
            }
            if style.bands {
                push_bands(&mut g, character, snapshot, body);
            }
        }
        if let Some(f) = snapshot.flesh.as_deref() {
            push_flesh(&mut g, character, f, style, self.morph_on_gpu);
        }
        for c in &decorations.cursors {
            self.push_cursor(&mut g, c);
        }
        self.geometry = g;
        &self.geometry
    }

    fn sphere(&mut self) -> &TriMesh {
        self.unit_sphere
            .get_or_insert_with(|| MuscleShape::sphere(1.0).tessellate(12, 8))
    }

    fn push_muscles(
        &mut self,
        g: &mut SceneGeometry,
        character: &Character,
        body: &PosedBody,
        style: MuscleStyle,
    ) {
        self.muscle_meshes.resize(body.muscles.len(), None);
        self.muscle_meshes.truncate(body.muscles.len());
        for (k, m) in body.muscles.iter().enumerate() {
            let fresh = match &self.muscle_meshes[k] {
                Some((shape, _)) => *shape != m.shape,
                None => true,
            };
            if fresh {
                let mesh = m.shape.tessellate(MUSCLE_SLICES, MUSCLE_STACKS);
                self.muscle_meshes[k] = Some((m.shape.clone(), mesh));
            }
            let (_, mesh) = self.muscle_meshes[k].as_ref().expect("tessellated above");
            // Its painted colour, else muscle red.
            let color = character
                .muscles
                .get(k)
                .and_then(|mu| mu.color)
                .map_or(MUSCLE_COLOR, |[r, g, b]| [r, g, b, 1.0]);
            match style {
                MuscleStyle::Opaque => g.opaque.push_mesh(mesh, &m.to_world, color),
                MuscleStyle::Translucent => {
                    let mut c = color;
                    c[3] = 0.45;
                    g.translucent.push_mesh(mesh, &m.to_world, c);
                }
                MuscleStyle::Hidden => {}
            }
        }
    }

    fn push_skeleton(
        &mut self,
        g: &mut SceneGeometry,
        character: &Character,
        body: &PosedBody,
        current: Option<usize>,
    ) {
        let sphere = self.sphere();
        for (j, joint) in character.skeleton.joints.iter().enumerate() {
            let p: Vec3 = body.joints[j].translation.into();
            let (r, c) = if Some(j) == current {
                (JOINT_RADIUS * 1.6, CURRENT_JOINT_COLOR)
            } else {
                (JOINT_RADIUS, JOINT_COLOR)
            };
            g.opaque.push_mesh(
                sphere,
                &Affine3A::from_scale_rotation_translation(Vec3::splat(r), Quat::IDENTITY, p),
                c,
            );
            if let Some(parent) = joint.parent {
                let a: Vec3 = body.joints[parent].translation.into();
                push_bone(&mut g.opaque, a, p, BONE_RADIUS, BONE_COLOR);
            }
        }
    }

    fn push_cursor(&mut self, g: &mut SceneGeometry, c: &Cursor) {
        let sphere = self.sphere();
        let mut color = c.color;
        if c.active {
            for ch in &mut color[..3] {
                *ch = (*ch * 1.4).min(1.0);
            }
        }
        let r = c.radius.max(0.004);
        let to_world =
            Affine3A::from_scale_rotation_translation(Vec3::splat(r), Quat::IDENTITY, c.position);
        if r > 0.02 {
            // A large tool copy is seen through so the work under it stays visible.
            let mut see_through = color;
            see_through[3] = 0.3;
            g.translucent.push_mesh(sphere, &to_world, see_through);
        } else {
            g.opaque.push_mesh(sphere, &to_world, color);
        }
        if c.wand > 0.0 {
            let dir = c.orientation * Vec3::NEG_Z;
            g.lines
                .push_line(c.position, c.position + dir * c.wand, color);
        }
    }
}

/// Outward normals of a skin grid: central differences around (periodic)
/// and along (one-sided at the boundary rows), oriented away from the
/// skin's centroid so lighting is right whichever way the grid winds.
/// Returns whether they were reversed (T1×T2 points in): the `flip` of
/// [`ClosedGrid`]'s winding.
pub fn skin_normals(skin: &SkinSurface, out: &mut Vec<Vec3>) -> bool {
    let (m, n) = (skin.m, skin.n);
    let p = &skin.positions;
    out.clear();
    out.reserve(m * n);
    let centroid = p.iter().copied().sum::<Vec3>() / p.len().max(1) as f32;
    let mut outward = 0.0f32;
    for j in 0..n {
        let (jd, ju) = (j.saturating_sub(1), (j + 1).min(n - 1));
        for i in 0..m {
            let (il, ir) = ((i + m - 1) % m, (i + 1) % m);
            let du = p[j * m + ir] - p[j * m + il];
            let dv = p[ju * m + i] - p[jd * m + i];
            let nrm = du.cross(dv).normalize_or_zero();
            outward += nrm.dot(p[j * m + i] - centroid);
            out.push(nrm);
        }
    }
    let flip = outward < 0.0;
    if flip {
        for nrm in out.iter_mut() {
            *nrm = -*nrm;
        }
    }
    flip
}

/// A skin's drawn surface: the smooth surface through its points (refined
/// `s` times per grid edge), closed by its caps, with its normals.
struct ClosedSurface {
    grid: ClosedGrid,
    flip: bool,
    /// The refined grid's size.
    m: usize,
    n: usize,
    positions: Vec<Vec3>,
    normals: Vec<Vec3>,
}

/// The refinement a skin is drawn at with `style` (see
/// [`SceneStyle::subdivide`]).
fn drawn_refinement(skin: &SkinSurface, style: &SceneStyle) -> usize {
    match style.subdivide {
        0 => crate::skin_mesh::display_refinement(skin.m),
        s => s.min(8),
    }
}

/// Whether a skin surface can be drawn: a grid with a ring, and its points.
fn drawable(skin: &SkinSurface) -> bool {
    skin.m >= 3 && skin.n >= 2 && skin.positions.len() == skin.m * skin.n
}

/// The closed smooth surface through `positions`, an m×n grid, refined `s`
/// times: the grid's points with [`skin_normals`], then the caps' points
/// with theirs, wound to face out.
fn closed_surface(m: usize, n: usize, positions: &[Vec3], s: usize) -> ClosedSurface {
    let (m, n, refined) = if s > 1 {
        let (rm, rn) = crate::skin_mesh::refined_size(m, n, s);
        (rm, rn, crate::skin_mesh::refine(m, n, positions, s))
    } else {
        (m, n, positions.to_vec())
    };
    let surface = SkinSurface {
        m,
        n,
        positions: refined,
        fat: Vec::new(),
    };
    let grid = ClosedGrid::new(m, n);
    let mut normals = Vec::new();
    let flip = skin_normals(&surface, &mut normals);
    let positions = grid.closed(&surface.positions, flip);
    grid.cap_normals(&positions, flip, &mut normals);
    ClosedSurface {
        grid,
        flip,
        m,
        n,
        positions,
        normals,
    }
}

/// A skin closed by its caps ([`closed_surface`]), in its paint or the
/// style's heat map. A cap vertex takes the colour of the ring point under
/// it (an apex, the ring's mean).
fn push_skin(
    g: &mut SceneGeometry,
    skin: &SkinSurface,
    (color, values): (Option<&[[f32; 3]]>, Option<&[f32]>),
    style: &SceneStyle,
) {
    if !drawable(skin) {
        return;
    }
    // The smooth surface through the simulated points; the wireframe below
    // draws only its lines through them (every `s`th).
    let s = drawn_refinement(skin, style);
    // Painted colours and heat-map values refine with the surface.
    let color = color.map(|c| crate::skin_mesh::refine_colors(skin.m, skin.n, c, s));
    let values = values
        .filter(|v| v.len() == skin.m * skin.n)
        .map(|v| crate::skin_mesh::refine(skin.m, skin.n, v, s));
    let surface = closed_surface(skin.m, skin.n, &skin.positions, s);
    let (grid, m, n) = (&surface.grid, surface.m, surface.n);
    let (positions, normals) = (&surface.positions, &surface.normals);
    // Per vertex of the closed mesh (a cap vertex takes the ring point
    // under it, an apex its ring's mean): the heat map, else the paint.
    let map = style.map;
    let heat = |values: Vec<f32>| -> Vec<[f32; 4]> {
        grid.closed_values(&values)
            .into_iter()
            .map(|v| map.color(v, style.fat_map_max))
            .collect()
    };
    let colors: Vec<[f32; 4]> = match map {
        SkinMap::Paint => match &color {
            Some(c) => grid
                .closed_values(c)
                .into_iter()
                .map(|c| [c.x, c.y, c.z, 1.0])
                .collect(),
            None => vec![SKIN_COLOR; positions.len()],
        },
        SkinMap::Curvature => heat(super::heat::curvature(
            m,
            n,
            &positions[..m * n],
            &normals[..m * n],
        )),
        // Where the layers say nothing (no rest metric, no earlier
        // snapshot, no posture): the map's neutral value.
        _ => heat(
            values.unwrap_or_else(|| vec![if map == SkinMap::Stretch { 1.0 } else { 0.0 }; m * n]),
        ),
    };
    // X-ray: the skin seen through, so the layers under it show.
    let (list, alpha) = if style.xray {
        (&mut g.translucent, XRAY_ALPHA)
    } else {
        (&mut g.opaque, 1.0)
    };
    list.push_closed(
        &surface,
        colors.into_iter().map(|mut c| {
            c[3] = alpha;
            c
        }),
    );
    if style.wireframe {
        // Slightly off the surface along the normal so the lines win the depth test.
        let lift = |k: u32| positions[k as usize] + normals[k as usize] * 0.0015;
        for j in 0..n {
            for i in 0..m {
                let k = (j * m + i) as u32;
                if j % s == 0 {
                    g.lines
                        .push_line(lift(k), lift((j * m + (i + 1) % m) as u32), WIRE_COLOR);
                }
                if j + 1 < n && i % s == 0 {
                    g.lines.push_line(lift(k), lift(k + m as u32), WIRE_COLOR);
                }
            }
        }
        // The caps: their rings and the meridians from the boundary to the apex.
        for end in End::BOTH {
            let apex = grid.apex(end);
            for i in 0..m {
                for k in 0..=grid.rings {
                    let v = grid.ring_vertex(end, k, i);
                    let inner = if k < grid.rings {
                        grid.ring_vertex(end, k + 1, i)
                    } else {
                        apex
                    };
                    if i % s == 0 {
                        g.lines.push_line(lift(v), lift(inner), CAP_WIRE_COLOR);
                    }
                    if k > 0 {
                        let next = grid.ring_vertex(end, k, i + 1);
                        g.lines.push_line(lift(v), lift(next), CAP_WIRE_COLOR);
                    }
                }
            }
        }
    }
}

/// A skin's fat shell: the inner face of its fat layer (LEMAN eq. 9's
/// thickness between the skin and the muscles), each simulated point moved
/// in along its normal by its fat, then smoothed and closed like the skin
/// ([`closed_surface`]). See-through in [`FAT_SHELL_COLOR`]: where the
/// skin rests on the muscles the shell lies on them, where it bridges a
/// gap the fat hangs under it, and liposuction shows as the shell moving.
/// The shell stands [`FAT_SHELL_LIFT`] short of the full thickness, so
/// where it rests on a muscle it coats it instead of flickering with it in
/// the depth test. A skin whose fat is not known (no thickness per point)
/// draws none.
fn push_fat_shell(g: &mut SceneGeometry, skin: &SkinSurface, style: &SceneStyle) {
    if !drawable(skin) || skin.fat.len() != skin.positions.len() {
        return;
    }
    let mut normals = Vec::new();
    skin_normals(skin, &mut normals);
    let inner: Vec<Vec3> = skin
        .positions
        .iter()
        .zip(&normals)
        .zip(&skin.fat)
        .map(|((p, n), f)| *p - *n * (f - FAT_SHELL_LIFT).max(0.0))
        .collect();
    let shell = closed_surface(skin.m, skin.n, &inner, drawn_refinement(skin, style));
    g.translucent
        .push_closed(&shell, std::iter::repeat(FAT_SHELL_COLOR));
}

/// The colour the flesh's embedded mesh is drawn in with `style` (like the
/// muscles), or None when it is hidden.
pub fn flesh_mesh_color(style: &SceneStyle) -> Option<[f32; 4]> {
    match style.muscles {
        MuscleStyle::Hidden => None,
        MuscleStyle::Opaque => Some(MUSCLE_COLOR),
        _ => {
            let mut c = MUSCLE_COLOR;
            c[3] = 0.45;
            Some(c)
        }
    }
}

/// The flesh's extras: an embedded (imported) mesh, deformed, drawn like
/// muscles (a morph mesh posed here unless `morph_on_gpu`); the lattice's
/// edges in wireframe mode; a line from each grabbed point to the hand
/// holding it.
fn push_flesh(
    g: &mut SceneGeometry,
    character: &Character,
    flesh: &crate::fem::FleshPose,
    style: &SceneStyle,
    morph_on_gpu: bool,
) {
    let color = flesh_mesh_color(style);
    let tri = match (&flesh.morph, &flesh.mesh) {
        // Hidden: nothing to pose.
        _ if color.is_none() => None,
        (Some(frame), _) if !morph_on_gpu && frame.fits() => {
            let (positions, normals) = frame.posed();
            Some(TriMesh {
                positions,
                normals,
                indices: frame.mesh.triangles.clone(),
            })
        }
        (None, Some(points)) => character
            .flesh
            .lattice_model()
            .and_then(|f| f.embedded_mesh.as_ref())
            .filter(|mesh| points.len() == mesh.positions.len())
            .map(|mesh| face_normal_mesh(points, &mesh.triangles)),
        // A morph mesh the GPU draws, or no mesh.
        _ => None,
    };
    if let (Some(tri), Some(c)) = (tri, color) {
        let list = if c[3] < 1.0 {
            &mut g.translucent
        } else {
            &mut g.opaque
        };
        list.push_mesh(&tri, &Affine3A::IDENTITY, c);
    }
    if style.wireframe {
        for &[a, b] in flesh.edges.iter() {
            if let (Some(&p), Some(&q)) =
                (flesh.lattice.get(a as usize), flesh.lattice.get(b as usize))
            {
                g.lines.push_line(p, q, LATTICE_COLOR);
            }
        }
    }
    for &(point, hand) in &flesh.grabs {
        g.lines.push_line(point, hand, GRAB_COLOR);
    }
}

/// `points` with `triangles`, each vertex's normal the area-weighted sum of
/// its faces'.
fn face_normal_mesh(points: &[Vec3], triangles: &[[u32; 3]]) -> TriMesh {
    let mut normals = vec![Vec3::ZERO; points.len()];
    for t in triangles {
        let [a, b, c] = t.map(|i| points[i as usize]);
        let n = (b - a).cross(c - a);
        for &i in t {
            normals[i as usize] += n;
        }
    }
    TriMesh {
        positions: points.to_vec(),
        normals: normals.iter().map(|n| n.normalize_or_zero()).collect(),
        indices: triangles.to_vec(),
    }
}

fn push_bands(
    g: &mut SceneGeometry,
    character: &Character,
    snap: &SceneSnapshot,
    body: &PosedBody,
) {
    for (s, skin) in character.skins.iter().enumerate() {
        let Some(surface) = snap.skins.get(s) else {
            continue;
        };
        for (k, band) in skin.points.band.iter().enumerate() {
            let (Some(band), Some(p)) = (band, surface.positions.get(k)) else {
                continue;
            };
            if let Some(m) = body.muscles.get(band.muscle) {
                g.lines
                    .push_line(*p, m.to_world.transform_point3(band.anchor), BAND_COLOR);
            }
        }
    }
}

/// A bone as a thin hexagonal prism from `a` to `b`.
fn push_bone(list: &mut DrawList, a: Vec3, b: Vec3, radius: f32, color: [f32; 4]) {
    let axis = b - a;
    let len = axis.length();
    if len < 1e-6 {
        return;
    }
    let dir = axis / len;
    let side = dir.any_orthonormal_vector();
    let up = dir.cross(side);
    const SIDES: usize = 6;
    let base = list.base();
    for k in 0..SIDES {
        let t = k as f32 / SIDES as f32 * std::f32::consts::TAU;
        let nrm = side * t.cos() + up * t.sin();
        list.vertices
            .push(Vertex::new(a + nrm * radius, nrm, color));
        list.vertices
            .push(Vertex::new(b + nrm * radius, nrm, color));
    }
    for k in 0..SIDES as u32 {
        let k2 = (k + 1) % SIDES as u32;
        let (a0, b0, a1, b1) = (
            base + 2 * k,
            base + 2 * k + 1,
            base + 2 * k2,
            base + 2 * k2 + 1,
        );
        list.indices.extend_from_slice(&[a0, a1, b1, a0, b1, b0]);
    }
}

fn push_floor(g: &mut SceneGeometry) {
    let base = g.opaque.base();
    let up = Vec3::Y;
    for (x, z) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
        g.opaque.vertices.push(Vertex::new(
            Vec3::new(x * FLOOR_HALF, 0.0, z * FLOOR_HALF),
            up,
            FLOOR_COLOR,
        ));
    }
    g.opaque
        .indices
        .extend_from_slice(&[base, base + 2, base + 1, base, base + 3, base + 2]);
    let lines = (2.0 * FLOOR_HALF / FLOOR_GRID).round() as i32;
    for k in 0..=lines {
        let c = -FLOOR_HALF + k as f32 * FLOOR_GRID;
        // Just above the floor so the grid is not lost in depth fighting.
        let y = 0.0005;
        g.lines.push_line(
            Vec3::new(c, y, -FLOOR_HALF),
            Vec3::new(c, y, FLOOR_HALF),
            GRID_COLOR,
        );
        g.lines.push_line(
            Vec3::new(-FLOOR_HALF, y, c),
            Vec3::new(FLOOR_HALF, y, c),
            GRID_COLOR,
        );
    }
}

#[cfg(test)]
mod tests;
