//! Contact for soft characters (Galoppo 2008, ch. 3–4): what the flesh
//! touches and how hard it pushes back.
//!
//! - `obstacle`: the obstacles, signed distances with a friction
//!   coefficient μ and a restitution ε: the ground plane, the hand's
//!   moving capsule.
//! - `proxy`: the contact proxies, points on the muscles' surfaces pushed
//!   out by the fat (§4.3.3: "muscle-surface points offset by fat"), in the
//!   rest pose, for the flesh to embed in its lattice.
//! - `friction`: the condensed contact problem: given the free velocity of
//!   every contact and the Delassus matrix `W = J A⁻¹ Jᵀ` (the coupled
//!   flesh-and-skeleton response to a unit impulse at each contact, eq.
//!   4.27–4.32), the impulses that keep every contact from sinking, within
//!   its Coulomb cone (3.20), with restitution (3.13–3.17).
//!
//! The coupled implicit step that builds W, with the skeleton's core
//! responding, is the flesh's (`fem::dynamic`): this module knows no
//! lattice.

mod friction;
mod obstacle;
mod proxy;

pub use obstacle::{Capsule, GROUND_FRICTION, GROUND_RESTITUTION, GroundDrop, Obstacle, Plane};

pub use friction::{ContactRow, ContactSolve, mix_friction, solve_contacts};
pub use proxy::{Proxy, contact_proxies};
