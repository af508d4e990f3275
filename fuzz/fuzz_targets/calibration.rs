//! A desk calibration file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = plasticine::view::Calibration::parse(text, Path::new("fuzz.ron"));
    }
});
