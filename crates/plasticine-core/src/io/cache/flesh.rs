//! The FEM flesh sections of a version-2 cache: per frame, each
//! embedded mesh's deformed vertices and each muscle's flesh offset, so that a
//! bake of an FEM character replays (and renders, and exports) the flesh as
//! the simulation placed it. The byte layout is in the parent module's docs.

use glam::{Affine3A, Vec3};
use serde::Serialize;

/// Most embedded meshes a cache may hold.
pub const MAX_CACHE_MESHES: usize = 1 << 8;
/// Most vertices of one embedded mesh.
pub const MAX_MESH_VERTICES: usize = 1 << 24;
/// Most muscles whose offsets a cache may hold.
pub const MAX_CACHE_MUSCLES: usize = 1 << 16;
/// Bytes of one muscle offset: an affine map as 12 `f32`, its matrix's three
/// columns then its translation.
pub const MUSCLE_OFFSET_BYTES: u64 = 48;

/// An embedded (imported) mesh as described in a cache header: its name and
/// vertex count; its triangles are the character's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CacheMesh {
    /// Name of the embedded mesh.
    pub name: String,
    /// Number of vertices stored per frame.
    pub vertices: usize,
}

/// A vibrating part of modal flesh as described in a cache header (version
/// 4): its joint and its modes' angular frequencies, so that a reader can
/// tell whether amplitudes belong to the modes it computes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CacheModalPart {
    /// The part's joint.
    pub name: String,
    /// Angular frequency of each mode, rad/s, in amplitude order.
    pub omega: Vec<f32>,
}

/// What a cache holds of the FEM flesh per frame (empty for a version-1
/// cache, or a character without FEM flesh).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CacheFlesh {
    /// The embedded meshes whose deformed vertices are stored, in header order.
    pub meshes: Vec<CacheMesh>,
    /// Number of muscle offsets per frame (0: none stored).
    pub muscles: usize,
    /// Modal flesh's parts, whose amplitudes every frame stores after the
    /// muscle offsets (version 4; empty otherwise).
    pub modal: Vec<CacheModalPart>,
    /// Whether every frame stores the root joint's simulated world frame
    /// after the muscle offsets (version 5: the skeleton responded, see
    /// `fem::dynamic`), so playback and export put the skeleton there.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub root: bool,
}

impl CacheFlesh {
    /// Nothing stored: the cache is written as version 1.
    pub fn is_empty(&self) -> bool {
        self.meshes.is_empty() && self.muscles == 0 && self.modal.is_empty() && !self.root
    }

    /// The format version this layout is written as: 5 with a root frame,
    /// else 4 (a cache without one stays readable by older builds).
    pub fn version(&self) -> u32 {
        if self.root { 5 } else { 4 }
    }

    /// Modal amplitudes per frame, over all parts.
    pub fn amplitudes(&self) -> usize {
        self.modal.iter().map(|p| p.omega.len()).sum()
    }

    /// The flesh part of one frame, in bytes.
    pub fn frame_bytes(&self) -> u64 {
        12 * self.meshes.iter().map(|m| m.vertices as u64).sum::<u64>()
            + MUSCLE_OFFSET_BYTES * (self.muscles as u64 + u64::from(self.root))
            + 4 * self.amplitudes() as u64
    }

    /// Checks the counts against the format's limits.
    pub fn check(&self) -> Result<(), FleshRecordError> {
        if self.meshes.len() > MAX_CACHE_MESHES {
            return Err(FleshRecordError::Meshes(self.meshes.len()));
        }
        for (k, m) in self.meshes.iter().enumerate() {
            check_mesh(m.vertices as u64, m.name.len()).map_err(|source| {
                FleshRecordError::Mesh {
                    index: k,
                    name: m.name.clone(),
                    source,
                }
            })?;
        }
        if self.muscles > MAX_CACHE_MUSCLES {
            return Err(FleshRecordError::Muscles(self.muscles));
        }
        if self.modal.len() > MAX_MODAL_PARTS {
            return Err(FleshRecordError::Parts(self.modal.len()));
        }
        for (k, p) in self.modal.iter().enumerate() {
            check_modal_part(p.omega.len() as u64, p.name.len()).map_err(|source| {
                FleshRecordError::Part {
                    index: k,
                    name: p.name.clone(),
                    source,
                }
            })?;
            if let Some(&omega) = p.omega.iter().find(|w| !(w.is_finite() && **w > 0.0)) {
                return Err(FleshRecordError::PartFrequency {
                    index: k,
                    name: p.name.clone(),
                    omega,
                });
            }
        }
        Ok(())
    }

    /// Appends the header section: mesh count, mesh records, muscle count,
    /// then (version 4) modal part count and part records.
    pub fn encode_header(&self, header: &mut Vec<u8>) {
        header.extend_from_slice(&(self.meshes.len() as u32).to_le_bytes());
        for m in &self.meshes {
            header.extend_from_slice(&(m.vertices as u32).to_le_bytes());
            header.extend_from_slice(&(m.name.len() as u32).to_le_bytes());
            header.extend_from_slice(m.name.as_bytes());
        }
        header.extend_from_slice(&(self.muscles as u32).to_le_bytes());
        header.extend_from_slice(&(self.modal.len() as u32).to_le_bytes());
        for p in &self.modal {
            header.extend_from_slice(&(p.name.len() as u32).to_le_bytes());
            header.extend_from_slice(p.name.as_bytes());
            header.extend_from_slice(&(p.omega.len() as u32).to_le_bytes());
            for w in &p.omega {
                header.extend_from_slice(&w.to_le_bytes());
            }
        }
        if self.version() >= 5 {
            // Flags: bit 0, a root frame per frame.
            header.extend_from_slice(&u32::from(self.root).to_le_bytes());
        }
    }

    /// Checks one frame's flesh against the header; `frame` numbers the error.
    pub fn check_frame(
        &self,
        frame: u64,
        meshes: &[&[Vec3]],
        muscles: &[Affine3A],
    ) -> Result<(), FleshRecordError> {
        if meshes.len() != self.meshes.len() {
            return Err(FleshRecordError::FrameMeshes {
                frame,
                given: meshes.len(),
                cached: self.meshes.len(),
            });
        }
        for (k, (m, p)) in self.meshes.iter().zip(meshes).enumerate() {
            if p.len() != m.vertices {
                return Err(FleshRecordError::FrameVertices {
                    frame,
                    index: k,
                    name: m.name.clone(),
                    given: p.len(),
                    cached: m.vertices,
                });
            }
            if let Some(i) = p.iter().position(|v| !v.is_finite()) {
                return Err(FleshRecordError::FrameVertexNotFinite {
                    frame,
                    index: k,
                    name: m.name.clone(),
                    vertex: i,
                    at: p[i],
                });
            }
        }
        if muscles.len() != self.muscles {
            return Err(FleshRecordError::FrameMuscles {
                frame,
                given: muscles.len(),
                cached: self.muscles,
            });
        }
        if let Some(i) = muscles.iter().position(|a| !a.is_finite()) {
            return Err(FleshRecordError::FrameMuscleNotFinite { frame, index: i });
        }
        Ok(())
    }

    /// Checks one frame's modal amplitudes against the header.
    pub fn check_amplitudes(&self, frame: u64, amplitudes: &[f32]) -> Result<(), FleshRecordError> {
        if amplitudes.len() != self.amplitudes() {
            return Err(FleshRecordError::FrameAmplitudes {
                frame,
                given: amplitudes.len(),
                cached: self.amplitudes(),
            });
        }
        if let Some(i) = amplitudes.iter().position(|q| !q.is_finite()) {
            return Err(FleshRecordError::FrameAmplitudeNotFinite {
                frame,
                index: i,
                value: amplitudes[i],
            });
        }
        Ok(())
    }

    /// Encodes one frame's modal amplitudes (after
    /// [`encode_frame`](Self::encode_frame)'s bytes).
    pub fn encode_amplitudes(amplitudes: &[f32], buf: &mut Vec<u8>) {
        for q in amplitudes {
            buf.extend_from_slice(&q.to_le_bytes());
        }
    }

    /// Decodes the modal amplitudes at the end of a frame's flesh bytes.
    pub fn decode_amplitudes(&self, bytes: &[u8], amplitudes: &mut Vec<f32>) {
        let len = 4 * self.amplitudes();
        amplitudes.clear();
        amplitudes.extend(
            bytes[bytes.len() - len..]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap())),
        );
    }

    /// Encodes one frame's root frame (after
    /// [`encode_frame`](Self::encode_frame)'s bytes, before the amplitudes).
    pub fn encode_root(root: &Affine3A, buf: &mut Vec<u8>) {
        for c in root.to_cols_array() {
            buf.extend_from_slice(&c.to_le_bytes());
        }
    }

    /// Decodes the root frame of a frame's flesh bytes, if the layout has one.
    pub fn decode_root(&self, bytes: &[u8]) -> Option<Affine3A> {
        if !self.root {
            return None;
        }
        let at = 12 * self.meshes.iter().map(|m| m.vertices).sum::<usize>()
            + MUSCLE_OFFSET_BYTES as usize * self.muscles;
        let f = |k: usize| f32::from_le_bytes(bytes[at + k..at + k + 4].try_into().unwrap());
        Some(Affine3A::from_cols_array(&std::array::from_fn(
            |k| f(4 * k),
        )))
    }

    /// Encodes one frame's flesh (checked with [`check_frame`](Self::check_frame)).
    pub fn encode_frame(meshes: &[&[Vec3]], muscles: &[Affine3A], buf: &mut Vec<u8>) {
        for p in meshes {
            for v in p.iter() {
                for c in v.to_array() {
                    buf.extend_from_slice(&c.to_le_bytes());
                }
            }
        }
        for a in muscles {
            for c in a.to_cols_array() {
                buf.extend_from_slice(&c.to_le_bytes());
            }
        }
    }

    /// Decodes the flesh part of a frame (`bytes` is exactly
    /// [`frame_bytes`](Self::frame_bytes) long).
    pub fn decode_frame(
        &self,
        bytes: &[u8],
        meshes: &mut Vec<Vec<Vec3>>,
        muscles: &mut Vec<Affine3A>,
    ) {
        let f = |c: &[u8], k: usize| f32::from_le_bytes(c[k..k + 4].try_into().unwrap());
        meshes.resize_with(self.meshes.len(), Vec::new);
        let mut at = 0;
        for (m, dst) in self.meshes.iter().zip(meshes.iter_mut()) {
            let len = m.vertices * 12;
            dst.clear();
            dst.extend(
                bytes[at..at + len]
                    .chunks_exact(12)
                    .map(|c| Vec3::new(f(c, 0), f(c, 4), f(c, 8))),
            );
            at += len;
        }
        muscles.clear();
        let end = at + MUSCLE_OFFSET_BYTES as usize * self.muscles;
        muscles.extend(
            bytes[at..end]
                .chunks_exact(MUSCLE_OFFSET_BYTES as usize)
                .map(|c| Affine3A::from_cols_array(&std::array::from_fn(|k| f(c, 4 * k)))),
        );
    }
}

/// Most modal parts a cache may hold.
pub const MAX_MODAL_PARTS: usize = 1 << 10;
/// Most modes of one modal part.
pub const MAX_PART_MODES: usize = 1 << 10;

/// Checks one modal part entry (shared by writer and reader).
pub fn check_modal_part(modes: u64, name_len: usize) -> Result<(), EntryError> {
    if modes == 0 || modes > MAX_PART_MODES as u64 {
        return Err(EntryError::Modes(modes));
    }
    check_name(name_len)
}

/// A name longer than a record may hold.
fn check_name(name_len: usize) -> Result<(), EntryError> {
    if name_len > super::MAX_SKIN_NAME_BYTES {
        return Err(EntryError::NameLength(name_len));
    }
    Ok(())
}

/// Checks one embedded-mesh entry (shared by writer and reader).
pub fn check_mesh(vertices: u64, name_len: usize) -> Result<(), EntryError> {
    if vertices == 0 || vertices > MAX_MESH_VERTICES as u64 {
        return Err(EntryError::Vertices(vertices));
    }
    check_name(name_len)
}

impl CacheFlesh {
    /// What a bake of `character` stores: for FEM or modal flesh, its embedded mesh
    /// (if any) and one offset per muscle; nothing for kinematic flesh.
    pub fn of(character: &crate::character::Character) -> Self {
        let Some(fem) = character.flesh.lattice_model() else {
            return Self::default();
        };
        Self {
            meshes: fem
                .embedded_mesh
                .iter()
                .map(|m| CacheMesh {
                    name: mesh_name(m),
                    vertices: m.positions.len(),
                })
                .collect(),
            muscles: character.muscles.len(),
            modal: Vec::new(),
            root: false,
        }
    }

    /// [`of`](Self::of) with the amplitudes of modal flesh whose parts and
    /// angular frequencies are `parts` (as the simulation computed them).
    pub fn with_modal(mut self, parts: Vec<CacheModalPart>) -> Self {
        self.modal = parts;
        self
    }

    /// The layout with a root frame per frame, or without.
    pub fn with_root(mut self, root: bool) -> Self {
        self.root = root;
        self
    }

    /// Checks that this (a cache's) flesh can be drawn on `character`: each
    /// stored mesh is the character's embedded mesh with as many vertices,
    /// and the muscle offsets, if any, are one per muscle.
    pub fn check_against(
        &self,
        character: &crate::character::Character,
    ) -> Result<(), FleshRecordError> {
        let own = Self::of(character);
        if self.meshes.len() > own.meshes.len() {
            return Err(FleshRecordError::CharacterMeshes {
                cached: self.meshes.len(),
                character: own.meshes.len(),
            });
        }
        for (k, (a, b)) in self.meshes.iter().zip(&own.meshes).enumerate() {
            if a.vertices != b.vertices {
                return Err(FleshRecordError::CharacterVertices {
                    index: k,
                    name: a.name.clone(),
                    cached: a.vertices,
                    character: b.vertices,
                    character_name: b.name.clone(),
                });
            }
        }
        if self.muscles != 0 && self.muscles != character.muscles.len() {
            return Err(FleshRecordError::CharacterMuscles {
                cached: self.muscles,
                character: character.muscles.len(),
            });
        }
        Ok(())
    }
}

/// The name an embedded mesh goes by in caches and exports: its source's
/// file stem.
pub fn mesh_name(mesh: &crate::character::EmbeddedMesh) -> String {
    std::path::Path::new(&mesh.source)
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("embedded_mesh")
        .chars()
        .take(super::MAX_SKIN_NAME_BYTES / 4)
        .collect()
}

/// One skin, embedded-mesh or modal-part entry outside the format's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// A skin resolution whose sides do not fit in 32 bits.
    #[error("resolution {m}x{n} does not fit the format")]
    Resolution {
        /// Points around.
        m: u64,
        /// Rows.
        n: u64,
    },
    /// A skin with more points than a skin may have.
    #[error("resolution {m}x{n} is over {max} points", max = crate::character::Skin::MAX_POINTS)]
    Points {
        /// Points around.
        m: u64,
        /// Rows.
        n: u64,
    },
    /// A mesh with no vertices or more than the format holds.
    #[error("{0} vertices, must lie in 1..={max}", max = MAX_MESH_VERTICES)]
    Vertices(u64),
    /// A part with no modes or more than the format holds.
    #[error("{0} modes, must lie in 1..={max}", max = MAX_PART_MODES)]
    Modes(u64),
    /// A name longer than a record holds.
    #[error("name is {0} bytes, over {max}", max = super::MAX_SKIN_NAME_BYTES)]
    NameLength(usize),
}

/// The flesh section of a cache: counts the format cannot hold, a frame that
/// does not match the header, or a cache that does not match a character.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FleshRecordError {
    /// Too many embedded meshes.
    #[error("{0} embedded meshes, the format holds at most {max}", max = MAX_CACHE_MESHES)]
    Meshes(usize),
    /// An embedded mesh's entry.
    #[error("embedded mesh {index} ({name:?}): {source}")]
    Mesh {
        /// Its index.
        index: usize,
        /// Its name.
        name: String,
        /// What is wrong with it.
        source: EntryError,
    },
    /// Too many muscle offsets.
    #[error("{0} muscle offsets, the format holds at most {max}", max = MAX_CACHE_MUSCLES)]
    Muscles(usize),
    /// Too many modal parts.
    #[error("{0} modal parts, the format holds at most {max}", max = MAX_MODAL_PARTS)]
    Parts(usize),
    /// A modal part's entry.
    #[error("modal part {index} ({name:?}): {source}")]
    Part {
        /// Its index.
        index: usize,
        /// Its name.
        name: String,
        /// What is wrong with it.
        source: EntryError,
    },
    /// A mode whose angular frequency is not positive.
    #[error("modal part {index} ({name:?}): angular frequency {omega} is not positive")]
    PartFrequency {
        /// The part's index.
        index: usize,
        /// Its name.
        name: String,
        /// The frequency (rad/s).
        omega: f32,
    },
    /// A frame with another number of embedded meshes than the header.
    #[error("frame {frame}: {given} embedded meshes given, the cache has {cached}")]
    FrameMeshes {
        /// The frame.
        frame: u64,
        /// Meshes given.
        given: usize,
        /// Meshes in the header.
        cached: usize,
    },
    /// A frame's mesh with another number of vertices than the header.
    #[error(
        "frame {frame}: embedded mesh {index} ({name:?}) has {given} vertices, the cache {cached}"
    )]
    FrameVertices {
        /// The frame.
        frame: u64,
        /// The mesh's index.
        index: usize,
        /// Its name.
        name: String,
        /// Vertices given.
        given: usize,
        /// Vertices in the header.
        cached: usize,
    },
    /// A frame's mesh vertex that is not finite.
    #[error("frame {frame}: embedded mesh {index} ({name:?}) vertex {vertex} is not finite: {at}")]
    FrameVertexNotFinite {
        /// The frame.
        frame: u64,
        /// The mesh's index.
        index: usize,
        /// Its name.
        name: String,
        /// The vertex.
        vertex: usize,
        /// Its position.
        at: Vec3,
    },
    /// A frame with another number of muscle offsets than the header.
    #[error("frame {frame}: {given} muscle offsets given, the cache has {cached}")]
    FrameMuscles {
        /// The frame.
        frame: u64,
        /// Offsets given.
        given: usize,
        /// Offsets in the header.
        cached: usize,
    },
    /// A frame's muscle offset that is not finite.
    #[error("frame {frame}: muscle offset {index} is not finite")]
    FrameMuscleNotFinite {
        /// The frame.
        frame: u64,
        /// The muscle.
        index: usize,
    },
    /// A frame with another number of modal amplitudes than the header.
    #[error("frame {frame}: {given} modal amplitudes given, the cache has {cached}")]
    FrameAmplitudes {
        /// The frame.
        frame: u64,
        /// Amplitudes given.
        given: usize,
        /// Amplitudes in the header.
        cached: usize,
    },
    /// A frame's modal amplitude that is not finite.
    #[error("frame {frame}: modal amplitude {index} is not finite: {value}")]
    FrameAmplitudeNotFinite {
        /// The frame.
        frame: u64,
        /// The amplitude's index.
        index: usize,
        /// Its value.
        value: f32,
    },
    /// A cache with more embedded meshes than the character.
    #[error("it holds {cached} embedded meshes, the character {character}")]
    CharacterMeshes {
        /// Meshes in the cache.
        cached: usize,
        /// The character's.
        character: usize,
    },
    /// A cached mesh with another number of vertices than the character's.
    #[error(
        "embedded mesh {index} ({name:?}) has {cached} vertices in the cache and {character} in the character ({character_name:?})"
    )]
    CharacterVertices {
        /// The mesh's index.
        index: usize,
        /// Its name in the cache.
        name: String,
        /// Its vertices in the cache.
        cached: usize,
        /// The character's mesh's vertices.
        character: usize,
        /// The character's mesh's name.
        character_name: String,
    },
    /// A cache with another number of muscle offsets than the character's muscles.
    #[error("it holds {cached} muscle offsets, the character has {character} muscles")]
    CharacterMuscles {
        /// Offsets in the cache.
        cached: usize,
        /// The character's muscles.
        character: usize,
    },
}
