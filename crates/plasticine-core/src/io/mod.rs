//! Files: versioned character files, atomic writes, the bake cache.
//!
//! - `atomic`: every file written goes through [`write_atomic`] or
//!   [`AtomicFile`] (temporary file in the same directory, `fsync`, rename,
//!   directory `fsync`), so a crash never leaves a half-written file in place.
//! - `character_file`: the versioned RON character file
//!   (`(format: "plasticine-character", version: 2, character: (...))`),
//!   with header check, migration hook, size and nesting limits, and
//!   validation on load and save.
//! - `autosave`: periodic atomic autosaves of the open document, rotated
//!   over a few generations, and crash recovery that names corrupt autosaves
//!   and offers the newest good one.
//! - `cache`: the streamed binary bake cache (`PLSTCACH`), fully specified
//!   in that module's documentation.
//! - [`export`]: a bake as glTF 2.0 (`.glb`), USD (`.usda`) or an OBJ
//!   sequence, for the rest of a pipeline.
//! - `import`: triangle meshes from OBJ and glTF (`plasticine fem-import`).
//!
//! Every failure is an [`IoError`] naming the file and, as applicable, the line
//! and column, the field path or the byte offset, e.g.
//!
//! ```text
//! assets/penguin.ron:12:7: Unexpected missing field named `skeleton` in `Character`
//! assets/penguin.ron: skins[0].points.fat[17]: the fat thickness (m) must be a finite number 0 or more, got -0.5
//! bake/walk.plcache: truncated at byte 1460: frame 3 of the 4 in the header needs 380 more bytes, the file has 1500 bytes
//! ```

mod atomic;
mod autosave;
mod cache;
mod character_file;
mod error;
mod export;
mod folder;
mod import;
mod obj;

pub use cache::{
    CACHE_FORMAT_VERSION, CACHE_MAGIC, CacheFlesh, CacheFrame, CacheMesh, CacheModalPart,
    CacheReader, CacheSkin, CacheSummary, CacheWriter, FleshRecordError, Frames, bytes_per_frame,
    mesh_name,
};
pub use character_file::read_text;
pub(crate) use character_file::{parse_error, ron_options};
pub use export::{
    ClosedGrid, DEFAULT_MORPH_LIMIT, ExportError, ExportFormat, ExportOptions, MAX_SUBDIVIDE,
    MorphWeights, SecondaryMotion, SkinnedMorphs, SkinnedTarget, export, grid_faces_inward,
    joint_local, mesh_normals, obj_frame_name, posture_at, resolve_format,
};
pub use import::{
    ImportedMesh, load_mesh, load_mesh_with_targets, parse_glb, parse_glb_targets, parse_gltf_json,
    parse_gltf_json_targets, parse_obj,
};
pub use obj::{ObjMesh, write_colored_obj, write_frame_obj};

pub use atomic::{AtomicFile, write_atomic};
pub use autosave::{
    AutosaveCandidate, AutosaveSettings, AutosaveStatus, Autosaver, RecoveryReport,
    autosave_file_name, find_recovery,
};
pub use character_file::{
    CHARACTER_FORMAT, CHARACTER_FORMAT_VERSION, MAX_CHARACTER_FILE_BYTES, character_to_string,
    load_character, parse_character, save_character,
};
pub use error::IoError;
