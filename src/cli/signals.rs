//! Ctrl+C and SIGTERM while a front end runs: the session ends cleanly.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set by SIGINT / SIGTERM while `plasticine xr` or `plasticine desk` runs.
pub(crate) static XR_STOP: AtomicBool = AtomicBool::new(false);

/// Ctrl+C (and SIGTERM) end the headset or desk session cleanly: the
/// session is asked to exit and the character saved. `ctrlc` installs its
/// handler with `SA_RESTART`, so the runtime's blocking calls (xrWaitFrame
/// over IPC) do not fail with EINTR. Installed once: `plasticine xr` falls
/// back to the desk, which asks again.
pub(crate) fn stop_xr_on_signals() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        if let Err(e) = ctrlc::set_handler(|| XR_STOP.store(true, Ordering::SeqCst)) {
            tracing::warn!("Ctrl+C will not end the session cleanly: {e}");
        }
    });
}
