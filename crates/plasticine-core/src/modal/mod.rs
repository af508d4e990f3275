//! Modal flesh (James & Pai 2002, "DyRT: Dynamic Response Textures for
//! Real Time Deformation Simulation with Graphics Hardware").
//!
//! Per part (a joint's flesh), the lowest vibration modes of the lattice
//! FEM with its seams and bones held (`eigen`, `part`), each a damped
//! oscillator stepped by a 2-pole IIR filter (`iir`) and excited by the
//! inertial force of the bone's motion (`transfer`); [`sim::ModalSim`]
//! runs them and gives the displacement field the muscles ride. A mesh over
//! the flesh (an imported one, or the muscles for export) is drawn as DyRT
//! draws it (`mesh`: the modes superposed before skinning, with App. A's
//! normal corrections: a [`crate::morph::MorphMesh`], which the renderer
//! poses in one GPU compute pass).
//!
//! Data flows one way, skeleton → modes → muscles → skin: this module reads
//! `character`, `kinematics`, `snapshot` and the lattice FEM's assembly
//! (`fem`), and nothing below it reads it.

mod eigen;
mod iir;
mod mesh;
mod part;
mod sim;
mod tall;
mod transfer;

pub use eigen::{EigenError, Modes, lowest_modes};
pub use iir::{MAX_OMEGA_H, ModeFilter, substeps};
pub use mesh::{ModalMesh, rest_muscles};
pub use part::{PartError, PartModes, PartSource, build_part, part_modes, part_of_vertices};
pub use sim::{MODAL_STEP, ModalError, ModalSim, joint_placements};
pub use transfer::{RigidAcceleration, Transfer};

#[cfg(test)]
mod tests;
