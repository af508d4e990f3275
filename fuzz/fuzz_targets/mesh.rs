//! An imported mesh: the first byte picks the reader (OBJ, binary glTF,
//! JSON glTF), the rest is the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use plasticine::io::import::{gltf, obj};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Some((&which, bytes)) = data.split_first() else {
        return;
    };
    let origin = Path::new("fuzz.mesh");
    let _ = match which % 3 {
        0 => obj::parse_obj(bytes, origin),
        1 => gltf::parse_glb(bytes, origin),
        _ => gltf::parse_gltf_json(bytes, origin),
    };
});
