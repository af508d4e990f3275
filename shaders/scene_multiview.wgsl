// Both eyes in one pass: the view index picks the eye's camera.

struct Cameras {
    eyes: array<Camera, 2>,
};

@group(0) @binding(0) var<uniform> cameras: Cameras;

@vertex
fn vs_main(v: VertexIn, @builtin(view_index) view: u32) -> VertexOut {
    return shade_vertex(v, cameras.eyes[view]);
}
