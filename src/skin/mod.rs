//! The elastic skin simulation.
