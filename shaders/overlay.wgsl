// Text and panels over the composed output, in pixels: the frame-timing
// overlay. Glyphs come from an 8×8 bitmap font atlas (one row of 128 glyphs).

struct Screen {
    // Output size in pixels.
    size: vec2<f32>,
    _pad: vec2<f32>,
};

@group(0) @binding(0) var atlas: texture_2d<f32>;
@group(0) @binding(1) var<uniform> screen: Screen;

struct QuadIn {
    @location(0) pixel: vec2<f32>,
    // Atlas texel coordinates; negative x means a solid panel.
    @location(1) texel: vec2<f32>,
    @location(2) color: vec4<f32>,
};

struct QuadOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) texel: vec2<f32>,
    @location(1) color: vec4<f32>,
};

@vertex
fn vs_overlay(q: QuadIn) -> QuadOut {
    var out: QuadOut;
    let ndc = vec2<f32>(q.pixel.x / screen.size.x * 2.0 - 1.0, 1.0 - q.pixel.y / screen.size.y * 2.0);
    out.clip = vec4<f32>(ndc, 0.0, 1.0);
    out.texel = q.texel;
    out.color = q.color;
    return out;
}

@fragment
fn fs_overlay(in: QuadOut) -> @location(0) vec4<f32> {
    if (in.texel.x < 0.0) {
        return in.color;
    }
    let coverage = textureLoad(atlas, vec2<i32>(floor(in.texel)), 0).r;
    return vec4<f32>(in.color.rgb, in.color.a * coverage);
}
