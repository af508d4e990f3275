// Scene shading shared by the per-eye and the multiview vertex stages
// (the vertex stage is appended from scene_eye.wgsl or scene_multiview.wgsl).
//
// Lighting is soft on purpose: an animator judges shape, so a hemisphere
// ambient (sky above, floor bounce below), one wrapped key light and a
// Fresnel rim that keeps silhouettes readable against the background.

struct Camera {
    view_proj: mat4x4<f32>,
    // xyz: eye position in the world.
    eye: vec4<f32>,
};

struct VertexIn {
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec4<f32>,
};

struct VertexOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) color: vec4<f32>,
    @location(3) eye: vec3<f32>,
};

fn shade_vertex(v: VertexIn, camera: Camera) -> VertexOut {
    var out: VertexOut;
    out.clip = camera.view_proj * vec4<f32>(v.position, 1.0);
    out.world = v.position;
    out.normal = v.normal;
    out.color = v.color;
    out.eye = camera.eye.xyz;
    return out;
}

const SKY: vec3<f32> = vec3<f32>(0.80, 0.85, 0.95);
const GROUND: vec3<f32> = vec3<f32>(0.35, 0.32, 0.30);
const KEY_DIR: vec3<f32> = vec3<f32>(0.45, 0.80, 0.40);

@fragment
fn fs_lit(in: VertexOut, @builtin(front_facing) front: bool) -> @location(0) vec4<f32> {
    var n = normalize(in.normal);
    let to_eye = normalize(in.eye - in.world);
    // Open skins and translucent muscles are seen from both sides: light the
    // side that faces the viewer.
    if (dot(n, to_eye) < 0.0) {
        n = -n;
    }
    let hemi = mix(GROUND, SKY, 0.5 + 0.5 * n.y);
    let key = normalize(KEY_DIR);
    let wrap = max((dot(n, key) + 0.3) / 1.3, 0.0);
    let half_vec = normalize(key + to_eye);
    let spec = pow(max(dot(n, half_vec), 0.0), 48.0) * 0.25;
    let rim = pow(1.0 - max(dot(n, to_eye), 0.0), 3.0) * 0.25;
    let base = in.color.rgb;
    let rgb = base * (0.45 * hemi + 0.75 * wrap) + vec3<f32>(spec + rim);
    return vec4<f32>(rgb, in.color.a);
}

@fragment
fn fs_unlit(in: VertexOut) -> @location(0) vec4<f32> {
    return in.color;
}

// The UI panel: unlit, its texture coordinate carried in the normal slot
// (crates/plasticine-app/src/render/renderer/ui.rs), its colours premultiplied (egui's).
@group(1) @binding(0) var panel_texture: texture_2d<f32>;
@group(1) @binding(1) var panel_sampler: sampler;

@fragment
fn fs_panel(in: VertexOut) -> @location(0) vec4<f32> {
    return textureSample(panel_texture, panel_sampler, in.normal.xy);
}
