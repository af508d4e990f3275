// A morph mesh on the GPU (DyRT §4, App. A): every vertex, its targets
// (modal flesh: its modes) superposed before skinning,
//
//   p = Σ_j w_j M_j (p̂ + Σ_i q_i Φ_i),   n ∝ Σ_j w_j R_j (n̂ + Σ_i q_i N_i),
//
// evaluated once per frame into a buffer both eyes draw from (see
// crates/plasticine-app/src/render/morph.rs). Static: each vertex's rest position and normal, four
// joints and weights, and Φ_i and N_i over the span of modes the vertex
// moves in (its part's, two parts' at a seam), vertex after vertex.
// Per frame only the uniform: the bone palette M_j (rest → posed) and q.

struct Vertex {
    rest: vec4<f32>,
    normal: vec4<f32>,
    joints: vec4<u32>,
    weights: vec4<f32>,
    // First mode, number of modes, where they start in `shapes` (in sixes).
    span: vec4<u32>,
}

// Must match MAX_JOINTS and MAX_MODES in crates/plasticine-app/src/render/morph.rs.
const MAX_JOINTS: u32 = 64u;
const MAX_MODE_VEC4S: u32 = 64u;

struct Frame {
    vertex_count: u32,
    modes: u32,
    joints: u32,
    _pad: u32,
    palette: array<mat4x4<f32>, MAX_JOINTS>,
    // q_i is amplitudes[i / 4][i % 4].
    amplitudes: array<vec4<f32>, MAX_MODE_VEC4S>,
}

@group(0) @binding(0) var<storage, read> vertices: array<Vertex>;
// Vertex v's k-th mode of its span: Φ at [6 (span.z + k) ..+3], N at the next three.
// Six floats per mode (Φ xyz, N xyz): vec3 arrays would pad each to 16 bytes.
@group(0) @binding(1) var<storage, read> shapes: array<f32>;
@group(0) @binding(2) var<uniform> frame: Frame;
// Vertex v: position at [2 v], unit normal at [2 v + 1].
@group(0) @binding(3) var<storage, read_write> posed: array<vec4<f32>>;

struct Posed {
    position: vec3<f32>,
    normal: vec3<f32>,
}

fn amplitude(i: u32) -> f32 {
    return frame.amplitudes[i / 4u][i % 4u];
}

// The one evaluation of a modal vertex.
fn modal_vertex(v: u32) -> Posed {
    let vert = vertices[v];
    var p = vert.rest.xyz;
    var n = vert.normal.xyz;
    for (var k = 0u; k < vert.span.y; k = k + 1u) {
        let q = amplitude(vert.span.x + k);
        let at = 6u * (vert.span.z + k);
        p = p + q * vec3<f32>(shapes[at], shapes[at + 1u], shapes[at + 2u]);
        n = n + q * vec3<f32>(shapes[at + 3u], shapes[at + 4u], shapes[at + 5u]);
    }
    var out_p = vec3<f32>(0.0);
    var out_n = vec3<f32>(0.0);
    for (var k = 0u; k < 4u; k = k + 1u) {
        let w = vert.weights[k];
        if (w != 0.0) {
            let m = frame.palette[min(vert.joints[k], frame.joints - 1u)];
            out_p = out_p + w * (m * vec4<f32>(p, 1.0)).xyz;
            out_n = out_n + w * (m * vec4<f32>(n, 0.0)).xyz;
        }
    }
    let len = length(out_n);
    var unit = vec3<f32>(0.0, 1.0, 0.0);
    if (len > 0.0) {
        unit = out_n / len;
    }
    return Posed(out_p, unit);
}

@compute @workgroup_size(64)
fn pose(@builtin(global_invocation_id) id: vec3<u32>) {
    let v = id.x;
    if (v >= frame.vertex_count) {
        return;
    }
    let r = modal_vertex(v);
    posed[2u * v] = vec4<f32>(r.position, 1.0);
    posed[2u * v + 1u] = vec4<f32>(r.normal, 0.0);
}
