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
