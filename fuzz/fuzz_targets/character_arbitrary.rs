//! A character built by structure from the fuzzer's bytes (a shipped sample
//! with fuzzed fields and parts removed, see `arbitrary_character`), written
//! out as a character file and loaded as the tool loads one; when it loads,
//! it must survive ten frames of the solver and the render geometry.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(init: plasticine_fuzz::prepare(), |data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(c) = plasticine_fuzz::arbitrary_character(&mut u) else {
        return;
    };
    // Any character in memory writes: the file is what a save would hold.
    let text = plasticine::io::character_to_string(&c).expect("a character writes");
    if let Ok(loaded) = plasticine::io::parse_character(&text, Path::new("fuzz.ron")) {
        plasticine_fuzz::survive(loaded);
    }
});
