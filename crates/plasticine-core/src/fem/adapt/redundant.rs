//! Functions of the active basis that are (nearly) redundant on the flesh
//! (see [`redundant_functions`]): held where they are in the adaptive
//! body's steps and out of each blending region's solve.

/// The fraction of a function's mass, free of other active functions,
/// below which it counts as redundant.
const REDUNDANT_MASS: f64 = 0.05;

/// Which active functions are (nearly) redundant on the flesh: a function
/// whose own `K_J` vertex carries no mass (it sits outside the flesh) while
/// the `K_J` vertices with mass where it is nonzero host other active
/// functions, all but [`REDUNDANT_MASS`] of its mass `Σ_b P_bα² m_b`. The
/// hierarchical basis is unit triangular at its nodes, so those others
/// reproduce it on that flesh: one direction of the basis moves (almost)
/// nothing with mass or stiffness. Exactly redundant, the system is
/// singular along it; nearly, the small inconsistencies of the blended
/// regions drive it with almost no inertia to resist (measured on the
/// penguin with detail held after a grab: a coarse vertex outside the flesh
/// drifting at 6 m/s, CG at 600 iterations a step; with 2 % of its mass
/// free, 1.6 m/s). Holding such a function where it is costs the flesh at
/// most that fraction of one function's freedom at its rim.
///
/// `functions` gives each function's node and P column, `hosts` which `K_J`
/// vertices host an active function, `mass` the `K_J` vertices' masses (the
/// whole flesh's, or one blending region's: a region's system is singular
/// along the functions redundant on its own cells).
pub(crate) fn redundant_functions<'a>(
    functions: impl Iterator<Item = (usize, &'a [(u32, f64)])>,
    hosts: &[bool],
    mass: &[f64],
) -> Vec<bool> {
    functions
        .map(|(a, col)| {
            if mass[a] > 0.0 {
                return false;
            }
            let (mut free, mut all) = (0.0, 0.0);
            for &(b, w) in col {
                let m = w * w * mass[b as usize];
                all += m;
                if b as usize != a && !hosts[b as usize] {
                    free += m;
                }
            }
            free <= REDUNDANT_MASS * all
        })
        .collect()
}

/// Which `K_J` vertices host one of the functions `active`.
pub(crate) fn hosts_of(active: &[usize], fine_vertices: usize) -> Vec<bool> {
    let mut hosts = vec![false; fine_vertices];
    for &a in active {
        hosts[a] = true;
    }
    hosts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A coarse function at a massless node 0, half at nodes 1 and 2.
    const COLUMN: [(u32, f64); 3] = [(0, 1.0), (1, 0.5), (2, 0.5)];

    fn redundant(hosts: [bool; 3], mass: [f64; 3]) -> bool {
        redundant_functions(std::iter::once((0, &COLUMN[..])), &hosts, &mass)[0]
    }

    #[test]
    fn a_massless_function_is_redundant_only_where_others_carry_its_flesh() {
        // Both massive nodes host functions: exactly reproduced there.
        assert!(redundant([true, true, true], [0.0, 1.0, 1.0]));
        // One of them free: half its mass is its own.
        assert!(!redundant([true, true, false], [0.0, 1.0, 1.0]));
        // The free node carries 4 % of the mass: nearly redundant, held.
        assert!(redundant([true, true, false], [0.0, 1.0, 0.04]));
        // At 6 % it keeps its freedom.
        assert!(!redundant([true, true, false], [0.0, 1.0, 0.064]));
        // A function with flesh at its own node never is.
        assert!(!redundant([true, true, true], [1e-9, 1.0, 1.0]));
        // Nothing of the flesh under it at all (a rim function over empty
        // cells of a region): a zero row, held.
        assert!(redundant([true, false, false], [0.0, 0.0, 0.0]));
    }
}
