// Lattice FEM (Capell 2002) on the GPU: projected, block-Jacobi
// preconditioned conjugate gradients for one region's implicit Euler system
// A = c_mass M + c_stiff R K Rᵀ, in f32. Mirrors `projected_pcg` in
// crates/plasticine-core/src/fem/solver.rs; the host (crates/plasticine-app/src/fem_gpu.rs) records the kernels below in
// order and reads back only the scalars (and x) every few iterations.
//
// Four storage buffers (the downlevel limit) and one uniform:
// - mat_u: col[width·n] | mask[n] (1 = known DOF) |
//          constraint column ptr[n_cols + 1] | constraint entry vertex[...]
// - mat_f: K blocks | mass (lumped: n, consistent: width·n) |
//          preconditioner blocks (9 f32 per row, unrotated) |
//          constraint entry weight[...]
// - vecs:  six vectors of n vec4 (w unused): x | b | r | z | p | ap
// - scal:  the CG scalars (see S_*) | partial sums A (2 × 256) | B (2 × 256)
//
// K is stored as ELLPACK, slot-major ("width" slots per row, padded with
// zero blocks pointing at the row itself): the entry in slot s of row r is
// at s·n + r, and component c of its block (column-major) at (9s + c)·n + r.
// Neighbouring threads handle neighbouring rows, so every load of a warp
// is one contiguous run: in CSR order they were 27 blocks apart, and the
// product ran at a fraction of the memory's bandwidth on a real GPU.

struct Params {
    n: u32,
    width: u32, // ELL slots per row
    mass_kind: u32, // 0 lumped, 1 consistent
    n_cols: u32,
    off_col: u32,
    off_mask: u32,
    off_cptr: u32,
    off_cidx: u32,
    off_mass: u32,
    off_prec: u32,
    off_cw: u32,
    num_partials: u32,
    c_mass: f32,
    c_stiff: f32,
    tolerance: f32,
    max_iterations: f32,
    rot0: vec4<f32>,
    rot1: vec4<f32>,
    rot2: vec4<f32>,
}

@group(0) @binding(0) var<storage, read> mat_u: array<u32>;
@group(0) @binding(1) var<storage, read> mat_f: array<f32>;
@group(0) @binding(2) var<storage, read_write> vecs: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> scal: array<f32>;
@group(0) @binding(4) var<uniform> P: Params;

const S_RZ: u32 = 0u;
const S_PAP: u32 = 1u;
const S_ALPHA: u32 = 2u;
const S_BETA: u32 = 3u;
const S_RR: u32 = 4u;
const S_R0SQ: u32 = 5u;
const S_ITER: u32 = 6u;
const S_DONE: u32 = 7u;
const S_RZ_PREV: u32 = 8u;
const PART: u32 = 16u;
const PART_B: u32 = 528u; // PART + 2 × 256

const V_X: u32 = 0u;
const V_B: u32 = 1u;
const V_R: u32 = 2u;
const V_Z: u32 = 3u;
const V_P: u32 = 4u;
const V_AP: u32 = 5u;

fn seg(v: u32) -> u32 {
    return v * P.n;
}

fn rot() -> mat3x3<f32> {
    return mat3x3<f32>(P.rot0.xyz, P.rot1.xyz, P.rot2.xyz);
}

fn known(row: u32) -> bool {
    return mat_u[P.off_mask + row] != 0u;
}

// The 3×3 block (column-major) whose nine entries are `stride` apart from
// `base`: 1 for the preconditioner's blocks, n for K's ELL slots.
fn block(base: u32, stride: u32) -> mat3x3<f32> {
    let d = stride;
    return mat3x3<f32>(
        vec3<f32>(mat_f[base], mat_f[base + d], mat_f[base + 2u * d]),
        vec3<f32>(mat_f[base + 3u * d], mat_f[base + 4u * d], mat_f[base + 5u * d]),
        vec3<f32>(mat_f[base + 6u * d], mat_f[base + 7u * d], mat_f[base + 8u * d]),
    );
}

// (A x)_row for the vector in segment `src`.
fn apply_row(row: u32, src: u32) -> vec3<f32> {
    let r = rot();
    let rt = transpose(r);
    let n = P.n;
    var acc = vec3<f32>(0.0);
    var accm = vec3<f32>(0.0);
    let base = seg(src);
    for (var s = 0u; s < P.width; s = s + 1u) {
        let e = s * n + row;
        let c = mat_u[P.off_col + e];
        let xc = vecs[base + c].xyz;
        acc = acc + block(9u * s * n + row, n) * (rt * xc);
        if P.mass_kind == 1u {
            accm = accm + mat_f[P.off_mass + e] * xc;
        }
    }
    var y = P.c_stiff * (r * acc);
    if P.mass_kind == 0u {
        y = y + vecs[base + row].xyz * (mat_f[P.off_mass + row] * P.c_mass);
    } else {
        y = y + accm * P.c_mass;
    }
    return y;
}

// r = b − A x, known rows zeroed.
@compute @workgroup_size(64)
fn residual(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if row >= P.n {
        return;
    }
    var r = vecs[seg(V_B) + row].xyz - apply_row(row, V_X);
    if known(row) {
        r = vec3<f32>(0.0);
    }
    vecs[seg(V_R) + row] = vec4<f32>(r, 0.0);
}

// ap = A p, known rows zeroed.
@compute @workgroup_size(64)
fn spmv_p(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if row >= P.n {
        return;
    }
    var y = apply_row(row, V_P);
    if known(row) {
        y = vec3<f32>(0.0);
    }
    vecs[seg(V_AP) + row] = vec4<f32>(y, 0.0);
}

// Warm start: x += z (the filtered previous solution), unless r0 was zero.
@compute @workgroup_size(64)
fn warm_add(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if row >= P.n || scal[S_DONE] != 0.0 {
        return;
    }
    vecs[seg(V_X) + row] = vecs[seg(V_X) + row] + vecs[seg(V_Z) + row];
}

// R B⁻¹ Rᵀ v (block Jacobi), zero on known rows.
fn precond_row(row: u32, v: vec3<f32>) -> vec3<f32> {
    if known(row) {
        return vec3<f32>(0.0);
    }
    let r = rot();
    return r * (block(P.off_prec + 9u * row, 1u) * (transpose(r) * v));
}

// z = R B⁻¹ Rᵀ r, known rows zeroed.
@compute @workgroup_size(64)
fn precond(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if row >= P.n {
        return;
    }
    vecs[seg(V_Z) + row] = vec4<f32>(precond_row(row, vecs[seg(V_R) + row].xyz), 0.0);
}

// p = z.
@compute @workgroup_size(64)
fn copy_p(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if row >= P.n {
        return;
    }
    vecs[seg(V_P) + row] = vecs[seg(V_Z) + row];
}

// x += α p, r −= α ap (α is 0 once converged).
@compute @workgroup_size(64)
fn update_xr(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if row >= P.n {
        return;
    }
    let alpha = scal[S_ALPHA];
    vecs[seg(V_X) + row] = vecs[seg(V_X) + row] + alpha * vecs[seg(V_P) + row];
    vecs[seg(V_R) + row] = vecs[seg(V_R) + row] - alpha * vecs[seg(V_AP) + row];
}

// p = z + β p.
@compute @workgroup_size(64)
fn update_p(@builtin(global_invocation_id) gid: vec3<u32>) {
    let row = gid.x;
    if row >= P.n || scal[S_DONE] != 0.0 {
        return;
    }
    vecs[seg(V_P) + row] = vecs[seg(V_Z) + row] + scal[S_BETA] * vecs[seg(V_P) + row];
}

// ---- Position constraints: v ← (I − Σ u uᵀ) v, column by column (modified
// Gram–Schmidt order, as the CPU). One workgroup.

var<workgroup> red3: array<vec3<f32>, 256>;

fn project(v: u32, lid: u32) {
    let base = seg(v);
    for (var j = 0u; j < P.n_cols; j = j + 1u) {
        let s = mat_u[P.off_cptr + j];
        let e = mat_u[P.off_cptr + j + 1u];
        var acc = vec3<f32>(0.0);
        for (var k = s + lid; k < e; k = k + 256u) {
            acc = acc + vecs[base + mat_u[P.off_cidx + k]].xyz * mat_f[P.off_cw + k];
        }
        red3[lid] = acc;
        workgroupBarrier();
        for (var w = 128u; w > 0u; w = w >> 1u) {
            if lid < w {
                red3[lid] = red3[lid] + red3[lid + w];
            }
            workgroupBarrier();
        }
        let total = red3[0];
        for (var k = s + lid; k < e; k = k + 256u) {
            let i = base + mat_u[P.off_cidx + k];
            vecs[i] = vec4<f32>(vecs[i].xyz - total * mat_f[P.off_cw + k], 0.0);
        }
        storageBarrier();
        workgroupBarrier();
    }
}

@compute @workgroup_size(256)
fn project_r(@builtin(local_invocation_index) lid: u32) {
    project(V_R, lid);
}

@compute @workgroup_size(256)
fn project_z(@builtin(local_invocation_index) lid: u32) {
    project(V_Z, lid);
}

@compute @workgroup_size(256)
fn project_ap(@builtin(local_invocation_index) lid: u32) {
    project(V_AP, lid);
}

// ---- Dot products: per-workgroup partial sums of two dots, then one
// workgroup sums the partials and updates the CG scalars.

var<workgroup> red2: array<vec2<f32>, 256>;

fn partial2(wid: u32, lid: u32, a: u32, b: u32, c: u32, d: u32) {
    var s = vec2<f32>(0.0);
    let stride = P.num_partials * 256u;
    for (var i = wid * 256u + lid; i < P.n; i = i + stride) {
        s.x = s.x + dot(vecs[seg(a) + i].xyz, vecs[seg(b) + i].xyz);
        s.y = s.y + dot(vecs[seg(c) + i].xyz, vecs[seg(d) + i].xyz);
    }
    let t = wg_sum2(lid, s);
    if lid == 0u {
        scal[PART + wid] = t.x;
        scal[PART + 256u + wid] = t.y;
    }
}

@compute @workgroup_size(256)
fn dot_rr(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    partial2(wg.x, lid, V_R, V_R, V_R, V_R);
}

@compute @workgroup_size(256)
fn dot_pap(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    partial2(wg.x, lid, V_P, V_AP, V_P, V_AP);
}

@compute @workgroup_size(256)
fn dot_rz_rr(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    partial2(wg.x, lid, V_R, V_Z, V_R, V_R);
}

fn sum_partials(lid: u32) -> vec2<f32> {
    return sum_partials_at(PART, lid);
}

fn converged(rr: f32) -> bool {
    return sqrt(rr) <= P.tolerance * sqrt(scal[S_R0SQ]);
}

// ‖r₀‖² of the cold start; stops at once when it is zero.
@compute @workgroup_size(256)
fn finalize_r0(@builtin(local_invocation_index) lid: u32) {
    let s = sum_partials(lid);
    if lid == 0u {
        scal[S_R0SQ] = s.x;
        scal[S_RR] = s.x;
        scal[S_ITER] = 0.0;
        scal[S_ALPHA] = 0.0;
        scal[S_BETA] = 0.0;
        scal[S_DONE] = select(0.0, 1.0, s.x == 0.0);
    }
}

// rz = r·z and rr = r·r after the (warm) start; the loop's first test.
@compute @workgroup_size(256)
fn finalize_init(@builtin(local_invocation_index) lid: u32) {
    let s = sum_partials(lid);
    if lid == 0u && scal[S_DONE] == 0.0 {
        scal[S_RZ] = s.x;
        scal[S_RR] = s.y;
        if converged(s.y) || P.max_iterations <= 0.0 {
            scal[S_DONE] = 1.0;
        }
    }
}

@compute @workgroup_size(256)
fn finalize_alpha(@builtin(local_invocation_index) lid: u32) {
    let s = sum_partials(lid);
    if lid == 0u {
        scal[S_PAP] = s.x;
        if scal[S_DONE] != 0.0 || s.x <= 0.0 {
            scal[S_DONE] = 1.0;
            scal[S_ALPHA] = 0.0;
        } else {
            scal[S_ALPHA] = scal[S_RZ] / s.x;
            scal[S_ITER] = scal[S_ITER] + 1.0;
        }
    }
}

@compute @workgroup_size(256)
fn finalize_beta(@builtin(local_invocation_index) lid: u32) {
    let s = sum_partials(lid);
    if lid == 0u && scal[S_DONE] == 0.0 {
        scal[S_RR] = s.y;
        scal[S_BETA] = s.x / scal[S_RZ];
        scal[S_RZ] = s.x;
        if converged(s.y) || scal[S_ITER] >= P.max_iterations {
            scal[S_DONE] = 1.0;
        }
    }
}

// ---- One iteration without position constraints in three passes instead
// of six: each pass finishes the previous one's dot product itself (every
// workgroup sums the partials, in the same order, so all agree), so the
// one-workgroup finalize passes between them go. On a real GPU a pass
// costs its launch and barrier whatever its size, and these are most of a
// CG iteration's time below ~10^5 rows.
//
// Scalars written by workgroup 0 are ones no other workgroup of the same
// pass reads: S_RZ is read by update_dot and written by update_p_dot, which
// reads the old value from S_RZ_PREV. S_DONE only goes from 0 to 1 and a
// workgroup that misses the flip only updates p, which no longer matters.

// The sum of partial pairs at `at` (all workgroups, same order).
fn sum_partials_at(at: u32, lid: u32) -> vec2<f32> {
    var s = vec2<f32>(0.0);
    if lid < P.num_partials {
        s = vec2<f32>(scal[at + lid], scal[at + 256u + lid]);
    }
    return wg_sum2(lid, s);
}

// The workgroup's sum of `v`, returned to every thread.
fn wg_sum2(lid: u32, v: vec2<f32>) -> vec2<f32> {
    red2[lid] = v;
    workgroupBarrier();
    for (var w = 128u; w > 0u; w = w >> 1u) {
        if lid < w {
            red2[lid] = red2[lid] + red2[lid + w];
        }
        workgroupBarrier();
    }
    let t = red2[0];
    workgroupBarrier();
    return t;
}

// ap = A p (known rows zeroed) and the partial sums of p·ap at PART.
@compute @workgroup_size(256)
fn spmv_dot(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    var s = 0.0;
    if scal[S_DONE] == 0.0 {
        let stride = P.num_partials * 256u;
        for (var row = wg.x * 256u + lid; row < P.n; row = row + stride) {
            var y = apply_row(row, V_P);
            if known(row) {
                y = vec3<f32>(0.0);
            }
            vecs[seg(V_AP) + row] = vec4<f32>(y, 0.0);
            s = s + dot(vecs[seg(V_P) + row].xyz, y);
        }
    }
    let t = wg_sum2(lid, vec2<f32>(s, 0.0));
    if lid == 0u {
        scal[PART + wg.x] = t.x;
        scal[PART + 256u + wg.x] = t.x;
    }
}

// α = rz / p·ap; x += α p, r −= α ap, z = R B⁻¹ Rᵀ r; partial sums of r·z
// and r·r at PART_B.
@compute @workgroup_size(256)
fn update_dot(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let pap = sum_partials_at(PART, lid).x;
    let go = scal[S_DONE] == 0.0 && pap > 0.0;
    let alpha = select(0.0, scal[S_RZ] / pap, go);
    var s = vec2<f32>(0.0);
    if go {
        let stride = P.num_partials * 256u;
        for (var row = wg.x * 256u + lid; row < P.n; row = row + stride) {
            vecs[seg(V_X) + row] = vecs[seg(V_X) + row] + alpha * vecs[seg(V_P) + row];
            let r = vecs[seg(V_R) + row].xyz - alpha * vecs[seg(V_AP) + row].xyz;
            vecs[seg(V_R) + row] = vec4<f32>(r, 0.0);
            let z = precond_row(row, r);
            vecs[seg(V_Z) + row] = vec4<f32>(z, 0.0);
            s = s + vec2<f32>(dot(r, z), dot(r, r));
        }
    }
    let t = wg_sum2(lid, s);
    if lid == 0u {
        scal[PART_B + wg.x] = t.x;
        scal[PART_B + 256u + wg.x] = t.y;
        if wg.x == 0u {
            scal[S_PAP] = pap;
            scal[S_ALPHA] = alpha;
            scal[S_RZ_PREV] = scal[S_RZ];
        }
    }
}

// β = rz_new / rz; p = z + β p; workgroup 0 commits the iteration (the
// counts, rz, rr, and the convergence test) as finalize_alpha and
// finalize_beta do.
@compute @workgroup_size(256)
fn update_p_dot(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let pap = sum_partials_at(PART, lid).x;
    let s = sum_partials_at(PART_B, lid);
    let rz_prev = scal[S_RZ_PREV];
    if scal[S_DONE] == 0.0 && pap > 0.0 {
        let beta = s.x / rz_prev;
        let stride = P.num_partials * 256u;
        for (var row = wg.x * 256u + lid; row < P.n; row = row + stride) {
            vecs[seg(V_P) + row] = vecs[seg(V_Z) + row] + beta * vecs[seg(V_P) + row];
        }
    }
    if wg.x == 0u && lid == 0u && scal[S_DONE] == 0.0 {
        if pap <= 0.0 {
            scal[S_DONE] = 1.0;
            scal[S_ALPHA] = 0.0;
        } else {
            scal[S_ITER] = scal[S_ITER] + 1.0;
            scal[S_RR] = s.y;
            scal[S_BETA] = s.x / rz_prev;
            scal[S_RZ] = s.x;
            if converged(s.y) || scal[S_ITER] >= P.max_iterations {
                scal[S_DONE] = 1.0;
            }
        }
    }
}
