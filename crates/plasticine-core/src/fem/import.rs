//! A character whose flesh is an imported mesh embedded in an FEM lattice
//! (`plasticine fem-import`).
//!
//! The skeleton, key postures and environment come from an existing
//! character; the imported mesh replaces its muscles and skins. The muscles
//! were shaped for another body and the skins were wrapped around them, so
//! neither fits the imported shape: the mesh itself is the surface that is
//! rendered and exported, moved by the lattice's displacement (FFD). FEM
//! settings the source character already had (damping, blend width, painted
//! weights — they refer to the same bones) are kept; the material is the
//! caller's.
//!
//! The build is checked the way an animator needs it explained: joints
//! outside the mesh are warned about, a bone entirely outside is an error
//! naming it, a mesh much larger or smaller than the skeleton (another unit)
//! or far from it gets a `--scale` / `--translate` hint, and every mesh
//! vertex is verified to embed in the lattice.

use super::lattice::{Lattice, skeleton_bones};
use super::mesh_lattice::{MeshLatticeError, MeshSolid};
use super::{FemBody, FemSettings, Linearization, Material, Twist};
use crate::character::{Character, EmbeddedMesh, FemFlesh, Flesh, InvalidField};
use crate::kinematics::forward_kinematics;
use glam::{DVec3, Vec3};

/// What to import and how.
#[derive(Clone, Debug)]
pub struct MeshImport {
    /// Name of the new character.
    pub name: String,
    /// Where the mesh came from, kept in the character for messages.
    pub source: String,
    /// Applied to the mesh first: `p · scale + translate`.
    pub scale: f64,
    /// Offset added to the mesh after scaling, m.
    pub translate: Vec3,
    /// Lattice vertices, Young's modulus, Poisson's ratio, density
    /// (None: the source character's FEM settings, else the defaults).
    pub target_vertices: Option<usize>,
    /// Young's modulus E, Pa (None: the source character's, else the default).
    pub young: Option<f64>,
    /// Poisson's ratio ν (None: the source character's, else the default).
    pub poisson: Option<f64>,
    /// Mass density ρ, kg/m³ (None: the source character's, else the default).
    pub density: Option<f64>,
}

/// What was built.
#[derive(Clone, Debug)]
pub struct ImportReport {
    /// Vertices of the imported mesh.
    pub mesh_vertices: usize,
    /// Triangles of the imported mesh.
    pub mesh_triangles: usize,
    /// Edges used by one triangle only (0 for a closed mesh).
    pub open_edges: usize,
    /// Vertices of the lattice built around the mesh.
    pub lattice_vertices: usize,
    /// Active cells of the lattice.
    pub lattice_cells: usize,
    /// Edge length of the lattice's cubic cells, m.
    pub cell_size: f64,
    /// Bones in the lattice (one per parent→child joint pair of the skeleton).
    pub bones: usize,
    /// Lattice vertices bound to a bone.
    pub bound_vertices: usize,
    /// Mesh vertices that embed in an active cell (all of them, or the
    /// import fails).
    pub embedded_vertices: usize,
    /// Largest distance between a mesh vertex and its trilinear
    /// reconstruction from the cell corners, metres.
    pub max_embedding_error: f64,
    /// Precompute of the FEM body (integrals, assembly, regions), seconds.
    pub precompute_seconds: f64,
    /// Largest displacement of a mesh vertex under gravity, skeleton at
    /// rest (the static solve), metres.
    pub rest_sag: f64,
    /// Things the animator should know (joints outside the mesh, an open
    /// mesh, a scale or placement hint).
    pub warnings: Vec<String>,
}

/// Builds the character: `skeleton_from`'s skeleton, key postures and
/// environment with FEM flesh embedding the mesh. Errors are sentences for
/// the command line.
pub fn fem_character_from_mesh(
    positions: &[Vec3],
    triangles: &[[u32; 3]],
    skeleton_from: &Character,
    options: &MeshImport,
) -> Result<(Character, ImportReport), ImportError> {
    if !(options.scale.is_finite() && options.scale > 0.0 && options.translate.is_finite()) {
        return Err(ImportError::Placement {
            scale: options.scale,
            translate: options.translate,
        });
    }
    let positions: Vec<Vec3> = positions
        .iter()
        .map(|&p| (p.as_dvec3() * options.scale + options.translate.as_dvec3()).as_vec3())
        .collect();
    let mut fem = skeleton_from.flesh.fem().cloned().unwrap_or_default();
    fem.embedded_mesh = None;
    // The skeleton file's blendshapes belong to its own mesh.
    fem.blendshapes = None;
    let fem = FemFlesh {
        target_vertices: options.target_vertices.unwrap_or(fem.target_vertices),
        young: options.young.unwrap_or(fem.young),
        poisson: options.poisson.unwrap_or(fem.poisson),
        density: options.density.unwrap_or(fem.density),
        ..fem
    };
    let mut character = Character {
        name: options.name.clone(),
        skeleton: skeleton_from.skeleton.clone(),
        muscles: Vec::new(),
        skins: Vec::new(),
        environment: skeleton_from.environment.clone(),
        key_postures: skeleton_from.key_postures.clone(),
        flesh: Flesh::Fem(fem.clone()),
    };
    fem.validate().map_err(ImportError::Settings)?;
    let bones = skeleton_bones(&character);
    if bones.is_empty() {
        return Err(ImportError::SingleJoint);
    }
    let solid = MeshSolid::new(&positions, triangles).map_err(ImportError::Mesh)?;
    let rest = forward_kinematics(&character.skeleton, &character.skeleton.rest_posture());
    let joints: Vec<DVec3> = rest.iter().map(|a| a.translation.as_dvec3()).collect();
    let hint = fit_hint(&solid, &joints);

    let open_edges = open_edge_count(triangles);
    let warnings = import_warnings(&solid, &character, &joints, open_edges, hint.as_deref());

    let lattice = Lattice::from_solid_with_vertices(
        &solid,
        bones,
        fem.target_vertices,
        super::LatticeSettings::default().bone_radius_cells,
    )
    .map_err(|e| lattice_error(e, &character, hint.as_deref()))?;

    let (embedded, max_error) = embedding_check(&solid, &lattice)?;

    let gravity = skeleton_from.environment.gravity.as_dvec3();
    let (precompute_seconds, rest_sag) = rest_solve(&solid, &lattice, &fem, gravity);

    let report = ImportReport {
        mesh_vertices: positions.len(),
        mesh_triangles: triangles.len(),
        open_edges,
        lattice_vertices: lattice.vertex_count(),
        lattice_cells: lattice.cell_count(),
        cell_size: lattice.cell_size.x,
        bones: lattice.bones.len(),
        bound_vertices: lattice.bone_of_vertex.iter().flatten().count(),
        embedded_vertices: embedded,
        max_embedding_error: max_error,
        precompute_seconds,
        rest_sag,
        warnings,
    };
    if let Flesh::Fem(f) = &mut character.flesh {
        f.embedded_mesh = Some(EmbeddedMesh {
            source: options.source.clone(),
            positions,
            triangles: triangles.to_vec(),
        });
    }
    character.validate().map_err(ImportError::Character)?;
    Ok((character, report))
}

/// The animator's warnings: an open mesh, joints outside the mesh (named
/// from `character`'s skeleton), and the fit `hint` if any.
fn import_warnings(
    solid: &MeshSolid,
    character: &Character,
    joints: &[DVec3],
    open_edges: usize,
    hint: Option<&str>,
) -> Vec<String> {
    let joint_names = |j: usize| character.skeleton.joints[j].name.as_str();
    let mut warnings = Vec::new();
    if open_edges > 0 {
        warnings.push(format!(
            "the mesh is not closed ({open_edges} edges belong to one triangle only): its inside is a best guess (generalized winding number)"
        ));
    }
    let outside: Vec<String> = joints
        .iter()
        .enumerate()
        .filter(|&(_, &p)| !solid.contains(p))
        .map(|(j, p)| {
            format!(
                "'{}' at ({:.3}, {:.3}, {:.3})",
                joint_names(j),
                p.x,
                p.y,
                p.z
            )
        })
        .collect();
    if !outside.is_empty() {
        warnings.push(format!(
            "{} of {} joints lie outside the mesh: {} (the lattice is extended along their bones)",
            outside.len(),
            joints.len(),
            outside.join(", ")
        ));
    }
    if let Some(h) = hint {
        warnings.push(h.to_owned());
    }
    warnings
}

/// Why a mesh cannot be given FEM flesh; each sentence is for the command line.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ImportError {
    /// The placement of the mesh is not a similarity.
    #[error("--scale must be > 0 and --translate finite, got {scale} and {translate}")]
    Placement {
        /// The scale given.
        scale: f64,
        /// The translation given.
        translate: Vec3,
    },
    /// A flesh setting out of range.
    #[error("FEM settings: {}: {}", .0.field, .0.message)]
    Settings(InvalidField),
    /// Nothing to drive the lattice.
    #[error(
        "the skeleton has a single joint: the flesh needs at least one bone (two joints) to drive it"
    )]
    SingleJoint,
    /// The mesh cannot bound a solid.
    #[error("the mesh: {0}")]
    Mesh(MeshLatticeError),
    /// A bone wholly outside the mesh, named by its joints.
    #[error("the bone from joint '{from}' to '{to}' lies entirely outside the mesh{}", .hint.as_ref().map_or(String::new(), |h| format!("; {h}")))]
    BoneOutside {
        /// The bone's parent joint.
        from: String,
        /// Its child joint.
        to: String,
        /// How the mesh and skeleton might be brought together, if a fit was found.
        hint: Option<String>,
    },
    /// No lattice could be built around the mesh.
    #[error(transparent)]
    Lattice(MeshLatticeError),
    /// A mesh vertex the lattice built around it does not hold (a bug).
    #[error("internal error: mesh vertex {vertex} at {at} is outside the lattice")]
    VertexOutside {
        /// The vertex.
        vertex: usize,
        /// Where it is.
        at: DVec3,
    },
    /// The character made is not valid.
    #[error("the imported character: {0}")]
    Character(InvalidField),
}

/// The error for a lattice that could not be built: a bone outside the
/// mesh is named by its joints (with the fit `hint`), other errors as they say.
fn lattice_error(e: MeshLatticeError, character: &Character, hint: Option<&str>) -> ImportError {
    let joint_names = |j: usize| character.skeleton.joints[j].name.as_str();
    match e {
        MeshLatticeError::BoneOutside { bone, joint } => {
            let b = &skeleton_bones(character)[bone];
            ImportError::BoneOutside {
                from: joint_names(joint).to_owned(),
                to: b.child.map_or("?", joint_names).to_owned(),
                hint: hint.map(str::to_owned),
            }
        }
        e => ImportError::Lattice(e),
    }
}

/// Embeds every mesh vertex in `lattice`: how many embed, and the largest
/// distance between a vertex and its trilinear reconstruction. A vertex
/// outside the lattice is an error.
fn embedding_check(solid: &MeshSolid, lattice: &Lattice) -> Result<(usize, f64), ImportError> {
    let mut embedded = 0;
    let mut max_error = 0f64;
    for (k, p) in solid.positions.iter().enumerate() {
        let Some(e) = lattice.embed(*p) else {
            return Err(ImportError::VertexOutside { vertex: k, at: *p });
        };
        embedded += 1;
        let zero = vec![DVec3::ZERO; lattice.vertex_count()];
        max_error = max_error.max(lattice.deform(&e, &zero).distance(*p));
    }
    Ok((embedded, max_error))
}

/// Builds the FEM body on `lattice` with `fem`'s material and settings and
/// solves it statically under `gravity`, skeleton at rest: the body's
/// precompute time in seconds, and the largest displacement of a mesh vertex.
fn rest_solve(solid: &MeshSolid, lattice: &Lattice, fem: &FemFlesh, gravity: DVec3) -> (f64, f64) {
    let material = Material {
        young: fem.young,
        poisson: fem.poisson,
        density: fem.density,
    };
    let settings = FemSettings {
        gravity,
        mass_damping: fem.mass_damping,
        stiffness_damping: fem.stiffness_damping,
        linearization: match fem.blend_width {
            Some(w) => Linearization::BlendedLocal { blend_width: w },
            None => Linearization::Global,
        },
        cg_max_iterations: 5000,
        // Bones on lattice lines pin lines of vertices, which leave the
        // flesh free to turn about them in a static solve; the twist
        // constraint (§4.6) holds it, as the runtime does.
        twist: Some(Twist {
            stiffness: 10.0 * fem.young / (lattice.cell_size.x * lattice.cell_size.x),
            radius: lattice.cell_size.x,
        }),
        ..FemSettings::default()
    };
    let mut body = FemBody::uniform(lattice.clone(), material, settings);
    let identity = vec![glam::DAffine3::IDENTITY; lattice.bones.len()];
    body.solve_static(&identity, None);
    let rest_sag = solid
        .positions
        .iter()
        .filter_map(|p| lattice.embed(*p))
        .map(|e| lattice.displacement(&e, &body.q).length())
        .fold(0.0, f64::max);
    (body.precompute_seconds, rest_sag)
}

/// Edges used by exactly one triangle.
fn open_edge_count(triangles: &[[u32; 3]]) -> usize {
    let mut edges: Vec<(u32, u32)> = triangles
        .iter()
        .flat_map(|t| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])])
        .filter(|(a, b)| a != b)
        .map(|(a, b)| (a.min(b), a.max(b)))
        .collect();
    edges.sort_unstable();
    edges
        .chunk_by(|a, b| a == b)
        .filter(|run| run.len() == 1)
        .count()
}

/// A hint when the mesh looks like it is in other units than the skeleton
/// (sizes differ by more than 4×) or sits away from it (centres further
/// apart than the skeleton's size).
fn fit_hint(solid: &MeshSolid, joints: &[DVec3]) -> Option<String> {
    let (jlo, jhi) = joints.iter().fold(
        (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN)),
        |(lo, hi), &p| (lo.min(p), hi.max(p)),
    );
    let skeleton_size = (jhi - jlo).length();
    let mesh_size = (solid.hi - solid.lo).length();
    if skeleton_size <= 0.0 || mesh_size <= 0.0 {
        return None;
    }
    let ratio = mesh_size / skeleton_size;
    if !(0.25..=4.0).contains(&ratio) {
        let exponent = (1.0 / ratio).log10().round();
        let scale = if exponent.abs() >= 1.0 {
            10f64.powf(exponent)
        } else {
            1.0 / ratio
        };
        return Some(format!(
            "the mesh ({mesh_size:.3} across) is {ratio:.3}× the size of the skeleton ({skeleton_size:.3} m): \
             if it is in other units, try --scale {scale:.3e}"
        ));
    }
    let offset = (jlo + jhi) * 0.5 - (solid.lo + solid.hi) * 0.5;
    if offset.length() > 0.5 * skeleton_size.max(mesh_size) {
        return Some(format!(
            "the mesh's centre is {:.3} m from the skeleton's: to move it onto the skeleton, try --translate {:.3},{:.3},{:.3}",
            offset.length(),
            offset.x,
            offset.y,
            offset.z
        ));
    }
    None
}
