//! A character file (RON, every version the loader accepts): parsed,
//! validated and, when it loads, written back out and read again; then
//! simulated for ten frames' worth of steps and turned into render geometry.
//! A character that loads must survive all of it: no panic, no NaN in a
//! step the solver accepted, bounded work.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let origin = Path::new("fuzz.ron");
    if let Ok(c) = plasticine::io::parse_character(text, origin) {
        let again = plasticine::io::character_to_string(&c).expect("a loaded character writes");
        plasticine::io::parse_character(&again, origin).expect("what was written reads back");
        plasticine_fuzz::survive(c);
    }
});
