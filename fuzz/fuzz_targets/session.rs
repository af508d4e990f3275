//! A recorded editing session (tool script): read, and when it reads,
//! replayed onto an empty character.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!(
        "plasticine-fuzz-{}.session.ron",
        std::process::id()
    ));
    std::fs::write(&path, data).expect("the temporary directory is writable");
    if let Ok(session) = plasticine::tools::load_session(&path) {
        let mut character = plasticine::tools::empty_character("fuzz");
        let _ = plasticine::tools::replay(&mut character, &session, &path);
    }
});
