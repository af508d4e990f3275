//! A bake checkpoint (the solver state a cancelled bake resumes from).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let _ = plasticine::bake::Checkpoint::from_bytes(Path::new("fuzz.resume"), data);
});
