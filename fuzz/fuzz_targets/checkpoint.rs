//! A bake checkpoint (the solver state a cancelled bake resumes from): the
//! whole file, and the same bytes as a body past the checksum (random bytes
//! almost never match a checksum, so the body's parser is fed directly).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.resume");
    let _ = plasticine::bake::Checkpoint::from_bytes(path, data);
    let _ = plasticine::bake::Checkpoint::from_body(path, data);
});
