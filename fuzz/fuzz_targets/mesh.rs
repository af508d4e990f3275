//! An imported mesh: the first byte picks the reader (OBJ, binary glTF,
//! JSON glTF; the glTF readers with their morph targets, dense or sparse,
//! as `blendshape import` reads them), the rest is the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plasticine::io::{parse_glb_targets, parse_gltf_json_targets, parse_obj};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Some((&which, bytes)) = data.split_first() else {
        return;
    };
    let origin = Path::new("fuzz.mesh");
    let mut targets = Vec::new();
    let _ = match which % 3 {
        0 => parse_obj(bytes, origin),
        1 => parse_glb_targets(bytes, origin, Some(&mut targets)),
        _ => parse_gltf_json_targets(bytes, origin, Some(&mut targets)),
    };
});
