//! `plasticine`: the command line: headless jobs (bake, bench, sample
//! characters, file checks, render), the desk front end and the headset
//! front end (`plasticine xr`).

use clap::Parser;
use plasticine::cli;

fn main() {
    quiet_vulkan_probe();
    tracing_subscriber::fmt()
        .with_env_filter(
            // winit's notes about the X server's settings (Xft, XSETTINGS)
            // are harmless: only its errors are shown by default.
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "warn,winit=error".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    if let Err(e) = cli::Cli::parse().run() {
        eprintln!("error: {e}");
        for cause in e.chain().skip(1) {
            eprintln!("  caused by: {cause}");
        }
        std::process::exit(1);
    }
}

/// Without a session runtime directory there is no Wayland compositor to
/// find, yet Mesa's device-select Vulkan layer looks for one whenever the
/// Wayland surface extension is on, and libwayland then prints "error:
/// `XDG_RUNTIME_DIR` is invalid or not set" on every run. The layer only
/// orders GPUs (wgpu asks for the high-performance one itself): turn it off
/// in that case, unless the user set it.
#[allow(
    unsafe_code,
    reason = "set_var is unsafe with other threads running: this runs first, before any"
)]
fn quiet_vulkan_probe() {
    let unset = |name: &str| std::env::var_os(name).is_none_or(|v| v.is_empty());
    if unset("XDG_RUNTIME_DIR") && std::env::var_os("NODEVICE_SELECT").is_none() {
        // SAFETY: no other thread exists yet (first statement of main).
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}
