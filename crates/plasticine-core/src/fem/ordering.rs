//! A fill-reducing elimination order for a lattice's sparse factor: nested
//! dissection by grid planes (George 1973).
//!
//! A lattice vertex couples only to the vertices of its cells, within one
//! grid step along each axis, so a plane of vertices across the longest
//! axis separates the vertices on its two sides. Eliminating each side
//! first (recursively ordered the same way) and the plane last keeps the
//! factor's fill to the separators' dense blocks: on a 3D grid of n
//! vertices O(n^(4/3)) against the wider fronts of a minimum-degree order
//! (faer's AMD), which sees only the graph.

/// Parts at most this large are eliminated in their given order.
const LEAF: usize = 64;

/// The order in which to eliminate the vertices whose grid coordinates
/// are `coords`: a permutation of `0..coords.len()`.
pub fn nested_dissection(coords: &[[usize; 3]]) -> Vec<usize> {
    let mut order = Vec::with_capacity(coords.len());
    dissect(coords, (0..coords.len()).collect(), &mut order);
    order
}

/// As [`nested_dissection`], for the three DOFs of each vertex (vertex v's
/// are 3v, 3v + 1, 3v + 2): the order of a factor over the vertices'
/// displacements.
pub fn nested_dissection_dofs(coords: &[[usize; 3]]) -> Vec<usize> {
    nested_dissection(coords)
        .into_iter()
        .flat_map(|v| [3 * v, 3 * v + 1, 3 * v + 2])
        .collect()
}

/// An elimination order (`order[new]` = old index, a permutation) and its
/// inverse, as the index arrays of faer's custom symmetric ordering.
pub fn permutation_pair(order: &[usize]) -> (Vec<u32>, Vec<u32>) {
    let forward: Vec<u32> = order.iter().map(|&d| d as u32).collect();
    let mut inverse = vec![0u32; order.len()];
    for (new, &old) in order.iter().enumerate() {
        inverse[old] = new as u32;
    }
    (forward, inverse)
}

fn dissect(coords: &[[usize; 3]], part: Vec<usize>, order: &mut Vec<usize>) {
    if part.len() <= LEAF {
        order.extend(part);
        return;
    }
    let (mut lo, mut hi) = ([usize::MAX; 3], [0; 3]);
    for &v in &part {
        for axis in 0..3 {
            lo[axis] = lo[axis].min(coords[v][axis]);
            hi[axis] = hi[axis].max(coords[v][axis]);
        }
    }
    let axis = (0..3).max_by_key(|&a| hi[a] - lo[a]).unwrap_or(0);
    if hi[axis] - lo[axis] < 2 {
        order.extend(part);
        return;
    }
    let middle = (lo[axis] + hi[axis]) / 2;
    let (mut below, mut plane, mut above) = (Vec::new(), Vec::new(), Vec::new());
    for v in part {
        match coords[v][axis].cmp(&middle) {
            std::cmp::Ordering::Less => below.push(v),
            std::cmp::Ordering::Equal => plane.push(v),
            std::cmp::Ordering::Greater => above.push(v),
        }
    }
    dissect(coords, below, order);
    dissect(coords, above, order);
    order.extend(plane);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every vertex once; each plane comes after both of its sides, so no
    /// vertex eliminated before a separator couples across it.
    #[test]
    fn the_order_is_a_permutation_with_separators_last() {
        let coords: Vec<[usize; 3]> = (0..12)
            .flat_map(|i| (0..5).flat_map(move |j| (0..4).map(move |k| [i, j, k])))
            .collect();
        let order = nested_dissection(&coords);
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..coords.len()).collect::<Vec<_>>());
        // The first cut is the plane i = 5 (of 0..=11): last in the order,
        // and the vertices of i < 5 and i > 5 never sit after it.
        let tail = &order[order.len() - 20..];
        assert!(tail.iter().all(|&v| coords[v][0] == 5), "{tail:?}");
        assert!(order[..order.len() - 20].iter().all(|&v| coords[v][0] != 5));
    }
}
