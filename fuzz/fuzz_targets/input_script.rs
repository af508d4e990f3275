//! A recorded input script (head and hand samples, as `plasticine calibrate
//! --samples` reads one): parsed and checked; when it reads, its frames are
//! fed to the screen's corner capture and the fit is tried, as the
//! calibration does.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(script) = plasticine::input::InputScript::from_ron(text) {
        let mut capture = plasticine::view::CornerCapture::new(glam::Vec3::new(0.0, 0.0, 0.6));
        for frame in &script.frames {
            capture.handle(frame);
        }
        let _ = capture.finish();
    }
});
