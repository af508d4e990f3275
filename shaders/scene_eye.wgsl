// One eye per render pass: the eye's camera is bound with a dynamic offset.

@group(0) @binding(0) var<uniform> camera: Camera;

@vertex
fn vs_main(v: VertexIn) -> VertexOut {
    return shade_vertex(v, camera);
}
