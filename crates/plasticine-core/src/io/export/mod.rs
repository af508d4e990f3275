//! Export of a bake (LEMAN §6.5, "rendered off-line using a standard
//! rendering package"): what the rest of a pipeline reads.
//!
//! The inputs are a frame cache ([`CacheReader`], the simulated skin in world
//! space, frame by frame) and the character it was baked from (its skeleton
//! and key postures; the grid topology follows from each skin's m×n, periodic
//! around and open at the two boundary rows). Every format exports a skin
//! closed ([`ClosedGrid`]): its grid's m·n points first, in grid order, then
//! a dome cap over each boundary ring, computed from each frame's ring so it
//! moves with it (the vertex count is the same in every frame). Three
//! formats:
//!
//! - **glTF 2.0 binary** (`.glb`, [`gltf`]): the skeleton as a glTF skin
//!   (one node per joint with its rest local transform, inverse bind
//!   matrices), the key-posture motion as rotation channels of every joint
//!   and a translation channel of the root, and each skin surface as a
//!   triangle mesh with normals. The skeleton's rotations are the
//!   Kochanek–Bartels spline the bake followed, sampled at every cache frame
//!   and at every key time (LINEAR), so the animation passes exactly through
//!   each key posture. The skin is *not* rigidly attached to the joints: its
//!   motion is simulated. So the meshes are in world space and carry their
//!   motion themselves ([`SecondaryMotion`]): clips of at most
//!   [`ExportOptions::morph_limit`] frames get one morph target per frame
//!   (base = the first frame, target k = frame k − base) whose weights are
//!   animated one-hot, LINEAR, so a viewer blends exactly from one frame to
//!   the next; longer clips get one group node per frame holding that frame's
//!   meshes, shown by a STEP scale animation (1 during its frame, 0
//!   otherwise), because a morph target per frame costs every engine a weight
//!   per frame per vertex. A small bone mesh, skinned to the joints, makes
//!   the skeleton visible in any viewer and is what uses the glTF skin.
//! - **USD** (`.usda`, [`usd`]): ASCII USD, one `Mesh` prim per skin (quads,
//!   and the caps' apex triangles)
//!   with time-sampled `points`, `normals` and `extent`: the point cache a
//!   film pipeline reads. Time code k is k frames after the first exported
//!   one (`timeCodesPerSecond` = `framesPerSecond` = the cache's fps), Y up,
//!   metres.
//! - **FEM flesh**: a cache of an FEM character also holds its
//!   embedded (imported) mesh per frame; each format exports it like a
//!   skin (its own mesh, with the character's triangles, moving the same
//!   way: morph targets or per-frame meshes, time-sampled points, OBJ
//!   objects), so a character with only an imported mesh exports too.
//! - **Modal flesh** (DyRT): its mesh (the embedded mesh, else the
//!   muscles at rest) is exported as DyRT draws it, not as points: skinned
//!   to the skeleton with one glTF morph target (USD `BlendShape`) per
//!   vibration mode, the cache's amplitudes animating their weights
//!   ([`SkinnedMorphs`]); morphs apply before skinning in both formats, as
//!   DyRT superposes its modes.
//! - **OBJ sequence** (a folder of `frame_NNNNN.obj`, NNNNN the cache frame
//!   index, [`super::obj`]): the simplest interchange.
//!
//! Every file goes through [`AtomicFile`] / [`super::write_atomic`], and the
//! cache is streamed (two passes for glTF, whose JSON needs each accessor's
//! bounds before the binary chunk), so no format holds all frames in memory.
//! Inputs are checked before anything is written: an empty cache, a cache
//! whose skins are not the character's (their count, names, or boundary rows
//! that do not follow the character's joints), an unknown extension or a bad
//! option are refused with what to change.

mod gltf;
mod usd;
mod write;

use super::{AtomicFile, CacheMesh, CacheReader, CacheSkin, IoError};
use crate::anim::sample_posture;
use crate::character::{Character, Joint, Posture, Skeleton};
use crate::kinematics::{
    clamp_angles, forward_kinematics, joint_rotation, posture_with_stored_root,
};
pub use crate::skin_mesh::ClosedGrid;
#[cfg(test)]
use crate::skin_mesh::grid_triangles;
use glam::{Affine3A, Quat, Vec3};
use serde::Serialize;
use std::fmt;
use std::path::{Path, PathBuf};
pub use write::export;

/// Clips of at most this many exported frames get morph targets by default.
pub const DEFAULT_MORPH_LIMIT: usize = 120;

/// How far (metres) a cached boundary point may lie from where the character's
/// joints put it before the cache is refused as belonging to another
/// character (or to a different motion). A bake sets the boundary rows
/// exactly, so the real figure is float rounding, far below this.
pub const BOUNDARY_TOLERANCE: f32 = 1e-4;

/// An export format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ExportFormat {
    /// glTF 2.0 binary, one `.glb` file.
    Glb,
    /// ASCII USD, one `.usda` file.
    Usda,
    /// A folder of Wavefront OBJ files, one per frame.
    Obj,
}

impl ExportFormat {
    /// Every export format, in the order `glb`, `usda`, `obj`.
    pub const ALL: [ExportFormat; 3] = [ExportFormat::Glb, ExportFormat::Usda, ExportFormat::Obj];

    /// The name used on the command line: `glb`, `usda`, `obj`.
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::Glb => "glb",
            ExportFormat::Usda => "usda",
            ExportFormat::Obj => "obj",
        }
    }

    /// Parses a name as given to `--format` (case-insensitive).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ExportFormat {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Self, UnknownFormat> {
        Self::from_name(s).ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// A format name that is not one of the exports.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown format '{0}': use glb, usda or obj")]
pub struct UnknownFormat(pub String);

/// A cache whose modal flesh is not the character's: other parts, or modes
/// at other frequencies (its flesh changed since the bake).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ModeMismatch {
    /// Other parts, or other numbers of modes.
    #[error("its modal flesh has parts {cached}, the character's has {character}: bake it again")]
    Parts {
        /// The cache's parts, "name (n modes)", comma-separated.
        cached: String,
        /// The character's, alike.
        character: String,
    },
    /// A mode at another frequency.
    #[error(
        "part '{part}' mode {mode} vibrates at {cached_hz:.4} Hz in the cache and \
         {character_hz:.4} Hz in the character (its flesh changed since the bake): bake it again"
    )]
    Frequency {
        /// The part.
        part: String,
        /// The mode's index in it.
        mode: usize,
        /// Its frequency in the cache (Hz).
        cached_hz: f32,
        /// Its frequency in the character (Hz).
        character_hz: f32,
    },
}

/// How the simulated (secondary) skin motion is carried by the export.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum SecondaryMotion {
    /// glTF: one morph target per frame, weights animated one-hot.
    MorphTargets,
    /// glTF: one group node per frame with that frame's meshes, shown by a
    /// STEP scale animation.
    PerFrameMeshes,
    /// USD: time-sampled points.
    TimeSampledPoints,
    /// OBJ: one file per frame.
    FileSequence,
}

/// What to export and how.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportOptions {
    /// The format; `None` takes it from the output's extension.
    pub format: Option<ExportFormat>,
    /// Export every Nth cache frame (1: all), starting with the first.
    pub every: usize,
    /// glTF: clips of at most this many exported frames get morph targets,
    /// longer ones per-frame meshes (0: always per-frame meshes).
    pub morph_limit: usize,
    /// Export each skin as the smooth surface through its points, refined
    /// this many times per grid edge ([`crate::skin_mesh::refine`]; 1: the
    /// simulated grid itself, at most [`MAX_SUBDIVIDE`]).
    pub subdivide: usize,
    /// glTF and USD: the FEM flesh's mesh as a rig instead of a point
    /// cache: skinned, a morph target or `BlendShape` per vibration mode
    /// (modal flesh as DyRT draws it) or per blend target (blendshapes),
    /// their weights animated. OBJ ignores it.
    pub rig: Option<SkinnedMorphs>,
}

/// A mesh exported as a rig rather than a point cache: skinned to the
/// skeleton, with morph targets whose weights are animated (applied before
/// skinning in glTF and UsdSkel alike). Two kinds ([`MorphWeights`]):
///
/// - modal flesh (DyRT §4: the modes superposed before skinning): a target
///   per vibration mode holding its offsets at amplitude `scale`, so its
///   animated weight `q_i / scale` stays in [−1, 1] (the flesh clamps |`q_i`|
///   to `scale`); glTF writes each as a pair of targets, one per sign (see
///   `gltf.rs`);
/// - physical blendshapes (Ma et al.): a target per sculpted or imported
///   shape, named as the animator named it, its weight the key postures'
///   blend weight at each frame. A viewer blends them linearly, so this is
///   the rig for further work in a DCC tool, not the bake's physical blend.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SkinnedMorphs {
    /// The mesh's name (its node is `<name>_modal` or `<name>_blend`).
    pub name: String,
    /// Rest positions (world, m).
    pub positions: Vec<Vec3>,
    /// Unit rest normals.
    pub normals: Vec<Vec3>,
    /// Four joints per vertex (skeleton indices).
    pub joints: Vec<[u16; 4]>,
    /// Their weights, summing to one.
    pub weights: Vec<[f32; 4]>,
    /// The mesh's triangles.
    pub triangles: Vec<[u32; 3]>,
    /// The targets, in weight order.
    pub targets: Vec<SkinnedTarget>,
    /// Where each frame's target weights come from.
    pub animated: MorphWeights,
}

/// Where a [`SkinnedMorphs`]'s animated weights come from.
#[derive(Clone, Debug, PartialEq)]
pub enum MorphWeights {
    /// Modal flesh: each frame's mode amplitudes, read from the cache, over
    /// each target's `scale`. The parts whose modes these are, as a cache's
    /// header lists them: an export refuses a cache whose amplitudes are of
    /// other modes.
    Amplitudes(Vec<crate::io::CacheModalPart>),
    /// Blendshapes: the key postures' blend weights at each frame's time,
    /// each in [0, 1].
    Keyed,
}

impl Default for MorphWeights {
    fn default() -> Self {
        Self::Amplitudes(Vec::new())
    }
}

/// One target of [`SkinnedMorphs`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SkinnedTarget {
    /// Modal: `<part>_mode<i>`; blendshapes: the target's name.
    pub name: String,
    /// Position offsets at weight 1.
    pub positions: Vec<Vec3>,
    /// Normal offsets (of the unit rest normal) at weight 1.
    pub normals: Vec<Vec3>,
    /// Modal: the amplitude of weight 1; blendshapes: 1.
    pub scale: f32,
}

/// Relative difference of a cached and a computed angular frequency beyond
/// which a cache's amplitudes are taken to be of other modes.
pub const MODE_MATCH: f32 = 1e-4;

impl SkinnedMorphs {
    /// The node's suffix: what kind of rig this is.
    pub fn kind(&self) -> &'static str {
        match self.animated {
            MorphWeights::Amplitudes(_) => "modal",
            MorphWeights::Keyed => "blend",
        }
    }

    /// Checks that `cached` (a cache header's modal parts) are these modes
    /// (blendshapes: always; their weights come from the character).
    pub fn check_cache(&self, cached: &[crate::io::CacheModalPart]) -> Result<(), ModeMismatch> {
        let MorphWeights::Amplitudes(parts) = &self.animated else {
            return Ok(());
        };
        let names = |p: &[crate::io::CacheModalPart]| -> String {
            p.iter()
                .map(|p| format!("{} ({} modes)", p.name, p.omega.len()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if cached.len() != parts.len()
            || cached
                .iter()
                .zip(parts)
                .any(|(a, b)| a.name != b.name || a.omega.len() != b.omega.len())
        {
            return Err(ModeMismatch::Parts {
                cached: names(cached),
                character: names(parts),
            });
        }
        for (a, b) in cached.iter().zip(parts) {
            for (i, (&wa, &wb)) in a.omega.iter().zip(&b.omega).enumerate() {
                if (wa - wb).abs() > MODE_MATCH * wb {
                    return Err(ModeMismatch::Frequency {
                        part: a.name.clone(),
                        mode: i,
                        cached_hz: wa / std::f32::consts::TAU,
                        character_hz: wb / std::f32::consts::TAU,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The finest refinement an export offers: 8 times per grid edge makes a
/// 128×128 skin a million points a frame.
pub const MAX_SUBDIVIDE: usize = 8;

impl Default for ExportOptions {
    fn default() -> Self {
        Self {
            format: None,
            every: 1,
            morph_limit: DEFAULT_MORPH_LIMIT,
            subdivide: 1,
            rig: None,
        }
    }
}

/// What an export wrote.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExportSummary {
    /// The format written.
    pub format: ExportFormat,
    /// The file (glb, usda) or folder (obj) written.
    pub out: PathBuf,
    /// Exported frames, and the cache frame indices of the first and last.
    pub frames: usize,
    /// Cache frame index of the first exported frame.
    pub first_frame: usize,
    /// Cache frame index of the last exported frame.
    pub last_frame: usize,
    /// The stride: every Nth cache frame was exported (1: all).
    pub every: usize,
    /// Frames per second of the bake, from the cache.
    pub fps: f32,
    /// Seconds from the first to the last exported frame.
    pub duration: f64,
    /// The skins exported, in cache order, at the cache's resolution.
    pub skins: Vec<CacheSkin>,
    /// Each skin was exported refined this many times per grid edge (1: as
    /// simulated).
    pub subdivide: usize,
    /// The FEM flesh's embedded meshes exported (name, vertex count).
    pub meshes: Vec<CacheMesh>,
    /// How the simulated skin motion is carried by the export.
    pub secondary: SecondaryMotion,
    /// Files written and their total size in bytes.
    pub files: usize,
    /// Total size of the files written, in bytes.
    pub bytes: u64,
    /// Largest distance (m) between a cached boundary point and where the
    /// character's joints put it, over the frames checked.
    pub boundary_error: f32,
    /// `false` when the cache is the temporary file of a bake that was cut off.
    pub complete_cache: bool,
}

/// Why an export was refused or failed. Nothing is left half-written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// Reading the cache or writing the export failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The cache was not baked from this character (or not from its current
    /// skins and motion).
    #[error("{}: does not match the character '{character}': {message}", cache.display())]
    Mismatch {
        /// The frame cache file.
        cache: PathBuf,
        /// Name of the character.
        character: String,
        /// What does not match.
        message: String,
    },
    /// The cache holds nothing to export.
    #[error("{}: the cache has no frames (the bake was cut off before its first frame?)", cache.display())]
    EmptyCache {
        /// The frame cache file.
        cache: PathBuf,
    },
    /// An option or output path that cannot be honoured.
    #[error("{}: {message}", path.display())]
    Refused {
        /// The output path of the export.
        path: PathBuf,
        /// Why it was refused.
        message: String,
    },
}

/// The format for `out`: `format` if given (it must agree with a `.glb` or
/// `.usda` extension), else the extension.
pub fn resolve_format(
    out: &Path,
    format: Option<ExportFormat>,
) -> Result<ExportFormat, ExportError> {
    let ext = out
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let from_ext = match ext.as_deref() {
        Some("glb") => Some(ExportFormat::Glb),
        Some("usda") => Some(ExportFormat::Usda),
        _ => None,
    };
    let refuse = |message: String| ExportError::Refused {
        path: out.to_path_buf(),
        message,
    };
    match (format, from_ext) {
        (Some(f), Some(e)) if f != e => Err(refuse(format!(
            "the extension says {e} but the format asked for is {f}"
        ))),
        (Some(f), _) => Ok(f),
        (None, Some(e)) => Ok(e),
        (None, None) => Err(refuse(match ext {
            Some(x) => format!(
                "unknown extension '.{x}': write FILE.glb (glTF 2.0) or FILE.usda (USD), or a folder with --format obj"
            ),
            None => "no extension: write FILE.glb (glTF 2.0) or FILE.usda (USD), or a folder with --format obj".into(),
        })),
    }
}

/// The checked inputs every writer works from.
pub(crate) struct Source<'a> {
    pub character: &'a Character,
    pub cache: &'a mut CacheReader,
    pub skins: Vec<CacheSkin>,
    /// What is exported: the skins, then the embedded meshes; a frame read
    /// by [`read`](Self::read) holds one position list per surface (a
    /// skin's closed by its caps).
    pub surfaces: Vec<Surface>,
    pub meshes: Vec<CacheMesh>,
    mesh_scratch: Vec<Vec<Vec3>>,
    muscle_scratch: Vec<Affine3A>,
    pub fps: f32,
    /// The skins are refined this many times per grid edge (1: not).
    pub subdivide: usize,
    /// Cache indices of the exported frames, and their times (s).
    pub frames: Vec<usize>,
    pub times: Vec<f64>,
    /// A responding skeleton's root per cache frame (time, world frame),
    /// from a version-5 cache; empty otherwise.
    pub roots: Vec<(f64, Affine3A)>,
}

impl Source<'_> {
    /// The skeleton's posture at time t: the key postures', with the root
    /// where the bake had it when the skeleton responded (interpolated
    /// between frames).
    pub fn posture_at(&self, t: f64) -> Posture {
        posture_with_stored_root(
            self.character,
            &posture_at(self.character, t),
            root_at(&self.roots, t),
        )
    }

    /// The target weights of rigged mesh `m` at exported frame `e`: modal
    /// flesh's cached amplitudes over each mode's scale, or the key
    /// postures' blend weights at the frame's time (0 for a target a
    /// posture does not key).
    pub fn rig_weights(&mut self, m: &SkinnedMorphs, e: usize) -> Result<Vec<f32>, IoError> {
        Ok(match m.animated {
            MorphWeights::Amplitudes(_) => {
                let q = self.cache.read_amplitudes(self.frames[e])?;
                q.iter().zip(&m.targets).map(|(q, t)| q / t.scale).collect()
            }
            MorphWeights::Keyed => {
                let keyed = posture_at(self.character, self.times[e]).blend;
                (0..m.targets.len())
                    .map(|i| keyed.get(i).copied().unwrap_or(0.0))
                    .collect()
            }
        })
    }

    /// The painted colours of exported surface `s` per exported vertex
    /// (refined and closed as its positions are), or `None` for an
    /// unpainted skin or an embedded mesh.
    pub fn colors(&self, s: usize) -> Option<Vec<Vec3>> {
        let Topology::Grid { m, n, .. } = self.surfaces.get(s)?.topology else {
            return None;
        };
        let (skin, cached) = (self.character.skins.get(s)?, self.skins.get(s)?);
        if skin.points.color.is_empty() {
            return None;
        }
        // The character at the cache's resolution, as `check_cache` takes it.
        let resampled;
        let painted = if (skin.m, skin.n) == (cached.m, cached.n) {
            &skin.points.color
        } else {
            resampled = crate::character::resample(skin, cached.m, cached.n).ok()?;
            &resampled.points.color
        };
        let refined = crate::skin_mesh::refine_colors(cached.m, cached.n, painted, self.subdivide);
        (refined.len() == m * n).then(|| ClosedGrid::new(m, n).closed_values(&refined))
    }

    /// Reads exported frame `e` (an index into `frames`), refusing points
    /// that are not finite (a writer never stores them: the file is corrupt).
    pub fn read(&mut self, e: usize, out: &mut Vec<Vec<Vec3>>) -> Result<f64, IoError> {
        let k = self.frames[e];
        let t = self.cache.read_frame_with_flesh(
            k,
            out,
            &mut self.mesh_scratch,
            &mut self.muscle_scratch,
        )?;
        // The skins' points are checked below before their caps are added.
        out.truncate(self.skins.len());
        out.extend(
            self.mesh_scratch
                .iter_mut()
                .take(self.meshes.len())
                .map(std::mem::take),
        );
        for (s, p) in out.iter().enumerate() {
            if let Some(i) = p.iter().position(|v| !v.is_finite()) {
                return Err(IoError::BadInput {
                    path: self.cache.path().to_path_buf(),
                    message: format!(
                        "frame {k}: {} '{}' point {i} is not finite ({}): the cache is corrupt",
                        if s < self.skins.len() {
                            "skin"
                        } else {
                            "embedded mesh"
                        },
                        self.surfaces[s].name,
                        p[i]
                    ),
                });
            }
        }
        for (s, (surface, p)) in self.surfaces.iter().zip(out.iter_mut()).enumerate() {
            if let Topology::Grid { m, n, flip } = surface.topology {
                if self.subdivide > 1 {
                    let cached = &self.skins[s];
                    *p = crate::skin_mesh::refine(cached.m, cached.n, p, self.subdivide);
                }
                ClosedGrid::new(m, n).close(p, flip);
            }
        }
        Ok(t)
    }
}

/// One exported surface: a skin's grid closed by its caps, or an embedded
/// mesh's triangles.
#[derive(Clone, Debug)]
pub(crate) struct Surface {
    pub name: String,
    /// Exported vertices (a skin's caps included).
    pub points: usize,
    pub topology: Topology,
}

#[derive(Clone, Debug)]
pub(crate) enum Topology {
    /// An m×n skin grid closed by its caps ([`ClosedGrid`]), its winding
    /// reversed if `flip`.
    Grid { m: usize, n: usize, flip: bool },
    /// The character's triangles of an embedded mesh.
    Mesh(Vec<[u32; 3]>),
}

impl Surface {
    pub fn point_count(&self) -> usize {
        self.points
    }

    pub fn triangles(&self) -> Vec<[u32; 3]> {
        match &self.topology {
            Topology::Grid { m, n, flip } => ClosedGrid::new(*m, *n).triangles(*flip),
            Topology::Mesh(t) => t.clone(),
        }
    }

    /// Unit vertex normals of positions `p` (as [`Source::read`] gives
    /// them) into `out`.
    pub fn normals(&self, p: &[Vec3], out: &mut Vec<Vec3>) {
        match &self.topology {
            Topology::Grid { m, n, flip } => closed_grid_normals(*m, *n, p, *flip, out),
            Topology::Mesh(t) => mesh_normals(t, p, out),
        }
    }
}

/// Unit vertex normals of a skin grid closed by its caps, at closed
/// positions `p` ([`ClosedGrid::close`]): [`grid_normals`] for the grid's
/// points, the caps' own ([`ClosedGrid::cap_normals`]) for theirs.
pub fn closed_grid_normals(m: usize, n: usize, p: &[Vec3], flip: bool, out: &mut Vec<Vec3>) {
    grid_normals(m, n, &p[..m * n], flip, out);
    ClosedGrid::new(m, n).cap_normals(p, flip, out);
}

/// Area-weighted vertex normals of a triangle mesh (+y for a vertex on no
/// triangle or on degenerate ones only).
pub fn mesh_normals(triangles: &[[u32; 3]], p: &[Vec3], out: &mut Vec<Vec3>) {
    out.clear();
    out.resize(p.len(), Vec3::ZERO);
    for t in triangles {
        let [a, b, c] = t.map(|i| i as usize);
        if a.max(b).max(c) >= p.len() {
            continue;
        }
        let n = (p[b] - p[a]).cross(p[c] - p[a]);
        for i in [a, b, c] {
            out[i] += n;
        }
    }
    for n in out.iter_mut() {
        *n = n.normalize_or(Vec3::Y);
    }
}

/// Checks that `cache` can be exported with `character`: it has frames, the
/// same skins (count and names; the resolution may differ, as after
/// `bake --resolution`), and its boundary rows lie where the character's
/// joints put them on a few frames spread over the clip. Returns the largest
/// boundary distance found.
pub fn check_cache(character: &Character, cache: &mut CacheReader) -> Result<f32, ExportError> {
    let cache_path = cache.path().to_path_buf();
    let mismatch = |message: String| ExportError::Mismatch {
        cache: cache_path.clone(),
        character: character.name.clone(),
        message,
    };
    if cache.frame_count() == 0 {
        return Err(ExportError::EmptyCache { cache: cache_path });
    }
    let names = |v: Vec<&str>| {
        v.iter()
            .map(|n| format!("'{n}'"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    cache
        .flesh()
        .check_against(character)
        .map_err(|e| mismatch(e.to_string()))?;
    let cs = cache.skins().to_vec();
    if cs.len() != character.skins.len() {
        let skins = |n: usize| format!("{n} skin{}", if n == 1 { "" } else { "s" });
        return Err(mismatch(format!(
            "the cache has {} ({}) but the character has {} ({})",
            skins(cs.len()),
            names(cs.iter().map(|s| s.name.as_str()).collect()),
            skins(character.skins.len()),
            names(character.skins.iter().map(|s| s.name.as_str()).collect()),
        )));
    }
    // The boundary rings at the cache's resolution.
    let mut rings = Vec::with_capacity(cs.len());
    for (s, (c, k)) in cs.iter().zip(&character.skins).enumerate() {
        if c.name != k.name {
            return Err(mismatch(format!(
                "skin {s} is '{}' ({}x{}) in the cache but '{}' ({}x{}) in the character",
                c.name, c.m, c.n, k.name, k.m, k.n
            )));
        }
        if (c.m, c.n) == (k.m, k.n) {
            rings.push(k.boundary_local.clone());
        } else {
            // Baked after resampling (§6.5): resample the character's skin alike.
            let up = crate::character::resample(k, c.m, c.n).map_err(|e| {
                mismatch(format!(
                    "skin '{}' is {}x{} in the cache but {}x{} in the character, and cannot be resampled to it: {e}",
                    c.name, c.m, c.n, k.m, k.n
                ))
            })?;
            rings.push(up.boundary_local);
        }
    }
    let count = cache.frame_count();
    let mut probe: Vec<usize> = (0..8).map(|q| q * (count - 1) / 7).collect();
    probe.dedup();
    let (mut frame, mut meshes, mut muscles) = (Vec::new(), Vec::new(), Vec::new());
    // Per skin: distance, frame, point.
    let mut worst = vec![(0.0f32, 0usize, 0usize); cs.len()];
    for &f in &probe {
        let t = cache.read_frame_with_flesh(f, &mut frame, &mut meshes, &mut muscles)?;
        // A responding skeleton's root where the bake had it.
        let posture = posture_with_stored_root(character, &posture_at(character, t), cache.root());
        let world = forward_kinematics(&character.skeleton, &posture);
        for (s, (skin, ring)) in character.skins.iter().zip(&rings).enumerate() {
            let (m, n) = (cs[s].m, cs[s].n);
            for (row, joint) in [(0, skin.bottom_joint), (1, skin.top_joint)] {
                let j = if row == 0 { 0 } else { n - 1 };
                for i in 0..m {
                    let want = world[joint].transform_point3(ring[row * m + i]);
                    let d = frame[s][j * m + i].distance(want);
                    if d.is_nan() || d > worst[s].0 {
                        worst[s] = (d, f, j * m + i);
                    }
                }
            }
        }
    }
    let off: Vec<String> = worst
        .iter()
        .enumerate()
        .filter(|(_, w)| w.0.is_nan() || w.0 > BOUNDARY_TOLERANCE)
        .map(|(s, &(d, f, p))| {
            let (c, k) = (&cs[s], &character.skins[s]);
            let sizes = if (c.m, c.n) == (k.m, k.n) {
                format!("{}x{} in both", c.m, c.n)
            } else {
                format!("{}x{} in the cache, {}x{} in the character", c.m, c.n, k.m, k.n)
            };
            format!(
                "skin '{}' ({sizes}): its boundary point {p} at frame {f} is {d:.4} m from where the character's joints put it",
                c.name
            )
        })
        .collect();
    if !off.is_empty() {
        return Err(mismatch(format!(
            "{} (more than {BOUNDARY_TOLERANCE} m): the cache was baked from another character, \
             or the skeleton, skins or key postures changed since; bake again",
            off.join("; ")
        )));
    }
    Ok(worst.iter().map(|w| w.0).fold(0.0, f32::max))
}

/// The root frame at time t from a bake's (time, frame) list, linear
/// (slerped) between frames and held at the ends; None for an empty list.
pub fn root_at(roots: &[(f64, Affine3A)], t: f64) -> Option<Affine3A> {
    let k = roots.partition_point(|(s, _)| *s <= t);
    if k == 0 {
        return roots.first().map(|r| r.1);
    }
    let (t0, a) = roots[k - 1];
    let Some(&(t1, b)) = roots.get(k) else {
        return Some(a);
    };
    let s = (((t - t0) / (t1 - t0)) as f32).clamp(0.0, 1.0);
    let (_, ra, ta) = a.to_scale_rotation_translation();
    let (_, rb, tb) = b.to_scale_rotation_translation();
    Some(Affine3A::from_rotation_translation(
        ra.slerp(rb, s),
        ta.lerp(tb, s),
    ))
}

/// Every frame's root (time, world frame) of a version-5 cache; empty for
/// a cache without them.
pub fn cache_roots(cache: &mut CacheReader) -> Result<Vec<(f64, Affine3A)>, IoError> {
    if !cache.flesh().root {
        return Ok(Vec::new());
    }
    let (mut skins, mut meshes, mut muscles) = (Vec::new(), Vec::new(), Vec::new());
    (0..cache.frame_count())
        .map(|f| {
            let t = cache.read_frame_with_flesh(f, &mut skins, &mut meshes, &mut muscles)?;
            Ok((t, cache.root().expect("a version-5 frame holds its root")))
        })
        .collect()
}

/// The posture the bake followed at time `t`: the key postures' spline, or
/// the rest posture without keys. Angles are not clamped here (see
/// [`joint_local`]).
pub fn posture_at(character: &Character, t: f64) -> Posture {
    sample_posture(&character.key_postures, t as f32)
        .unwrap_or_else(|| character.skeleton.rest_posture())
}

/// A joint's local transform for its angles as in
/// [`forward_kinematics`]: translation `offset` (plus the posture's root
/// translation for the root) and rotation `rest_rotation · Rx·Ry·Rz` of the
/// angles clamped to the joint's limits.
pub fn joint_local(joint: &Joint, angles: Vec3, root_translation: Vec3) -> (Vec3, Quat) {
    let rotation = joint.rest_rotation * joint_rotation(clamp_angles(&joint.dofs, angles));
    let translation = match joint.parent {
        None => joint.offset + root_translation,
        Some(_) => joint.offset,
    };
    (translation, rotation.normalize())
}

/// Every joint's local (translation, rotation) for `posture`.
pub fn local_transforms(skeleton: &Skeleton, posture: &Posture) -> Vec<(Vec3, Quat)> {
    skeleton
        .joints
        .iter()
        .enumerate()
        .map(|(k, j)| {
            let a = posture.angles.get(k).copied().unwrap_or(Vec3::ZERO);
            joint_local(j, a, posture.root_translation)
        })
        .collect()
}

/// Whether a skin's grid normal T1×T2 points inwards (towards its
/// centroid, on the whole) at positions `p`: such a grid is exported with
/// its winding and normals reversed, so every surface faces out, as the
/// renderer draws it.
pub fn grid_faces_inward(m: usize, n: usize, p: &[Vec3]) -> bool {
    let mut nrm = Vec::new();
    grid_normals(m, n, p, false, &mut nrm);
    let centroid = p.iter().copied().sum::<Vec3>() / p.len().max(1) as f32;
    let outward: f32 = p.iter().zip(&nrm).map(|(p, v)| v.dot(*p - centroid)).sum();
    outward < 0.0
}

/// Unit vertex normals of an m×n skin grid: T1×T2 from central differences
/// around (periodic) and along (one-sided at the boundary rows), negated
/// with `flip`: the side [`grid_triangles`] with the same `flip` face.
/// Where that is degenerate (a ring collapsed to a point), the nearest row's
/// normal, else the direction from the centroid, else +Y: every normal is
/// unit length.
pub fn grid_normals(m: usize, n: usize, p: &[Vec3], flip: bool, out: &mut Vec<Vec3>) {
    let sign = if flip { -1.0 } else { 1.0 };
    out.clear();
    out.resize(m * n, Vec3::ZERO);
    for j in 0..n {
        let (jd, ju) = (j.saturating_sub(1), (j + 1).min(n - 1));
        for i in 0..m {
            let (il, ir) = ((i + m - 1) % m, (i + 1) % m);
            let t1 = p[j * m + ir] - p[j * m + il];
            let t2 = p[ju * m + i] - p[jd * m + i];
            out[j * m + i] = (sign * t1.cross(t2)).normalize_or_zero();
        }
    }
    if out.iter().all(|v| *v != Vec3::ZERO) {
        return;
    }
    let centroid = p.iter().copied().sum::<Vec3>() / p.len().max(1) as f32;
    for j in 0..n {
        for i in 0..m {
            if out[j * m + i] != Vec3::ZERO {
                continue;
            }
            let nearest = (1..n)
                .flat_map(|d| [j.checked_sub(d), Some(j + d).filter(|&r| r < n)])
                .flatten()
                .map(|r| out[r * m + i])
                .find(|v| *v != Vec3::ZERO);
            out[j * m + i] = nearest
                .or_else(|| (p[j * m + i] - centroid).try_normalize())
                .unwrap_or(Vec3::Y);
        }
    }
}

/// The file name of cache frame `k` in an OBJ sequence.
pub fn obj_frame_name(k: usize) -> String {
    format!("frame_{k:05}.obj")
}

/// The glTF time (s) or USD time code base: frame times relative to the first
/// exported frame.
fn relative_times(src: &Source) -> Vec<f64> {
    src.times.iter().map(|t| t - src.times[0]).collect()
}

/// Commits `file` and returns the bytes written.
fn commit(file: AtomicFile, bytes: u64) -> Result<u64, IoError> {
    file.commit()?;
    Ok(bytes)
}

#[cfg(test)]
mod tests;
