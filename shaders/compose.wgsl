// Lays the two rendered eyes out on the output: mono, side-by-side,
// top-bottom or red/cyan anaglyph. A full-screen triangle samples the two
// eye images.

struct Compose {
    // 0 mono, 1 side-by-side, 2 top-bottom, 3 anaglyph.
    mode: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
};

@group(0) @binding(0) var left_eye: texture_2d<f32>;
@group(0) @binding(1) var right_eye: texture_2d<f32>;
@group(0) @binding(2) var eye_sampler: sampler;
@group(0) @binding(3) var<uniform> compose: Compose;

// Both eyes are sampled every time (uniform control flow), then chosen.
fn eye(left: bool, uv: vec2<f32>) -> vec4<f32> {
    let l = textureSample(left_eye, eye_sampler, uv);
    let r = textureSample(right_eye, eye_sampler, uv);
    return select(r, l, left);
}

struct FullScreen {
    @builtin(position) clip: vec4<f32>,
    // Output coordinates, (0,0) top left, (1,1) bottom right.
    @location(0) uv: vec2<f32>,
};

@vertex
fn vs_full(@builtin(vertex_index) i: u32) -> FullScreen {
    let x = f32((i << 1u) & 2u);
    let y = f32(i & 2u);
    var out: FullScreen;
    out.clip = vec4<f32>(x * 2.0 - 1.0, 1.0 - y * 2.0, 0.0, 1.0);
    out.uv = vec2<f32>(x, y);
    return out;
}

fn luminance(c: vec3<f32>) -> f32 {
    return dot(c, vec3<f32>(0.299, 0.587, 0.114));
}

@fragment
fn fs_compose(in: FullScreen) -> @location(0) vec4<f32> {
    let uv = in.uv;
    switch compose.mode {
        case 1u: {
            if (uv.x < 0.5) {
                return eye(true, vec2<f32>(uv.x * 2.0, uv.y));
            }
            return eye(false, vec2<f32>(uv.x * 2.0 - 1.0, uv.y));
        }
        case 2u: {
            if (uv.y < 0.5) {
                return eye(true, vec2<f32>(uv.x, uv.y * 2.0));
            }
            return eye(false, vec2<f32>(uv.x, uv.y * 2.0 - 1.0));
        }
        case 3u: {
            // Half-colour anaglyph: the left eye (red filter) sees the left
            // image's luminance, the right eye (cyan) the right image's colour.
            let l = eye(true, uv);
            let r = eye(false, uv);
            return vec4<f32>(luminance(l.rgb), r.g, r.b, 1.0);
        }
        default: {
            return eye(true, uv);
        }
    }
}
