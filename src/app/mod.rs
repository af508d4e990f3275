//! The front ends and their threads: the headless renderer today; the
//! decoupled frame loop and the desk window join it.

pub mod headless;
