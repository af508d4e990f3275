//! Rig files (RON, saved atomically) and rigs built from imported meshes:
//! one mesh per shape, every one with the base's vertices and triangles.

use super::rig::{BlendRig, BlendTarget, Boundary, RigError, SpringConstants};
use crate::io::ImportedMesh;
use crate::io::IoError;
use crate::io::{parse_error, read_text, ron_options};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `format` field of a rig file.
pub const RIG_FORMAT: &str = "plasticine-blendshape-rig";
/// The rig file version this build writes and reads.
pub const RIG_VERSION: u32 = 1;
/// Rig files larger than this are refused before being read (512 MiB).
pub const MAX_RIG_FILE_BYTES: u64 = 512 << 20;

#[derive(Serialize, Deserialize)]
#[serde(rename = "BlendRigFile", deny_unknown_fields)]
struct RigFile {
    format: String,
    version: u32,
    rig: BlendRig,
}

/// Writes a rig, atomically (a crash leaves the old file or the new one).
pub fn save_rig(path: &Path, rig: &BlendRig) -> Result<(), IoError> {
    let file = RigFile {
        format: RIG_FORMAT.into(),
        version: RIG_VERSION,
        rig: rig.clone(),
    };
    let text =
        ron::ser::to_string_pretty(&file, ron::ser::PrettyConfig::default()).map_err(|e| {
            IoError::Serialize {
                path: path.to_path_buf(),
                message: e.to_string(),
            }
        })?;
    crate::io::write_atomic(path, text.as_bytes())
}

/// Reads and checks a rig; a bad one is refused naming the field.
pub fn load_rig(path: &Path) -> Result<BlendRig, IoError> {
    let text = read_text(path, MAX_RIG_FILE_BYTES)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let file: RigFile = ron_options()
        .from_str(text)
        .map_err(|e| parse_error(path, e))?;
    if file.format != RIG_FORMAT {
        return Err(IoError::WrongFormat {
            path: path.to_path_buf(),
            expected: RIG_FORMAT,
            found: file.format,
        });
    }
    if file.version > RIG_VERSION {
        return Err(IoError::NewerVersion {
            path: path.to_path_buf(),
            version: file.version,
            supported: RIG_VERSION,
        });
    }
    file.rig
        .validate()
        .map_err(|e| invalid(path, &file.rig, &e))?;
    Ok(file.rig)
}

/// A rig error as a file error with the field path it concerns.
pub fn invalid(path: &Path, rig: &BlendRig, e: &RigError) -> IoError {
    let target = |name: &str| {
        rig.targets
            .iter()
            .position(|t| t.name == name)
            .map_or_else(|| "targets".into(), |i| format!("targets[{i}]"))
    };
    let shape = |shape: &str| match shape
        .strip_prefix("target '")
        .and_then(|s| s.strip_suffix('\''))
    {
        Some(name) => format!("{}.positions", target(name)),
        None => "base".into(),
    };
    let field = match e {
        RigError::Empty { .. } | RigError::IsolatedVertex { .. } => "base".into(),
        RigError::BadTriangle { triangle, .. } => format!("triangles[{triangle}]"),
        RigError::VertexCount { target: t, .. } => format!("{}.positions", target(t)),
        RigError::NotFinite { shape: s, vertex } => format!("{}[{vertex}]", shape(s)),
        RigError::DegenerateEdge { shape: s, a, .. } => format!("{}[{a}]", shape(s)),
        RigError::NoBoundary(_) => "boundary".into(),
        RigError::OpenMesh => "interior".into(),
        RigError::Weights { .. } => "weights".into(),
        RigError::Constant(c) => format!("constants.{c}"),
        RigError::DuplicateName(name) => format!("{}.name", target(name)),
    };
    IoError::Invalid {
        path: path.to_path_buf(),
        field,
        message: e.to_string(),
    }
}

/// Why meshes could not make a rig.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ImportError {
    /// A target's mesh differs from the base's.
    #[error("target '{target}': {why}")]
    Mismatch {
        /// The target's name.
        target: String,
        /// What differs.
        why: String,
    },
    /// The assembled rig is invalid.
    #[error(transparent)]
    Rig(#[from] RigError),
}

/// A rig from a base mesh and named target meshes with the same vertices
/// and triangles (the first differing face is named).
pub fn rig_from_meshes(
    name: &str,
    base: &ImportedMesh,
    targets: &[(String, ImportedMesh)],
    boundary: Boundary,
    interior: bool,
) -> Result<BlendRig, ImportError> {
    let mut rig_targets = Vec::with_capacity(targets.len());
    for (target, mesh) in targets {
        let mismatch = |why: String| ImportError::Mismatch {
            target: target.clone(),
            why,
        };
        if mesh.positions.len() != base.positions.len() {
            return Err(mismatch(format!(
                "{} vertices, the base has {}",
                mesh.positions.len(),
                base.positions.len()
            )));
        }
        if let Some(f) = (0..mesh.triangles.len().max(base.triangles.len()))
            .find(|&f| mesh.triangles.get(f) != base.triangles.get(f))
        {
            return Err(mismatch(format!(
                "face {f} is {:?}, the base's {:?} ({} faces against {})",
                mesh.triangles.get(f),
                base.triangles.get(f),
                mesh.triangles.len(),
                base.triangles.len()
            )));
        }
        rig_targets.push(BlendTarget {
            name: target.clone(),
            positions: mesh.positions.clone(),
        });
    }
    let rig = BlendRig {
        name: name.into(),
        base: base.positions.clone(),
        triangles: base.triangles.clone(),
        targets: rig_targets,
        boundary,
        interior,
        constants: SpringConstants::default(),
    };
    rig.validate()?;
    Ok(rig)
}
