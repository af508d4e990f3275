//! A frame cache (every version): opened and every frame read, through a
//! file as the reader takes it.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = std::env::temp_dir().join(format!("plasticine-fuzz-{}.plcache", std::process::id()));
    std::fs::write(&path, data).expect("the temporary directory is writable");
    if let Ok(mut reader) = plasticine::io::CacheReader::open(&path) {
        let (mut skins, mut meshes, mut muscles) = (Vec::new(), Vec::new(), Vec::new());
        for k in 0..reader.frame_count() {
            let _ = reader.read_frame_with_flesh(k, &mut skins, &mut meshes, &mut muscles);
        }
    }
});
