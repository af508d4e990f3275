//! Fixtures shared by the integration tests: a limb character and meshes
//! to import.

pub mod limb;
pub mod meshes;

/// Runs the `plasticine` binary: whether it succeeded, its stdout and its
/// stderr.
pub fn plasticine(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_plasticine"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Bakes `character` whole into `dir/whole`, and again into `dir/cut`
/// cancelled after `cut_after` frames (`partial` looks at what was left)
/// and resumed; returns both caches' bytes.
pub fn bake_whole_and_resumed(
    character: &plasticine::character::Character,
    opts: &plasticine::bake::BakeOptions,
    dir: &std::path::Path,
    cut_after: usize,
    partial: impl FnOnce(&std::path::Path),
) -> (Vec<u8>, Vec<u8>) {
    use plasticine::bake::{BakeControl, BakeOptions, BakeStart, bake};
    let whole = dir.join("whole");
    bake(character.clone(), opts, &whole, |_, _| {
        BakeControl::Continue
    })
    .unwrap()
    .finished()
    .expect("finished");
    let cut = dir.join("cut");
    let outcome = bake(character.clone(), opts, &cut, |done, _| {
        if done == cut_after {
            BakeControl::Cancel
        } else {
            BakeControl::Continue
        }
    })
    .unwrap();
    assert!(outcome.finished().is_none(), "cancelled");
    partial(&cut);
    let resume = BakeOptions {
        start: BakeStart::Resume,
        ..opts.clone()
    };
    bake(character.clone(), &resume, &cut, |_, _| {
        BakeControl::Continue
    })
    .unwrap()
    .finished()
    .expect("finished");
    (
        std::fs::read(whole.join("bake.plcache")).unwrap(),
        std::fs::read(cut.join("bake.plcache")).unwrap(),
    )
}
