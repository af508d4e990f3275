//! Waiting for the `OpenXR` runtime to come back after it lost the session
//! (it crashed, or was restarted): the frame loop, the simulation and the
//! undo history stay in memory meanwhile, so the animator picks the work up
//! in a new session where it was.

use crate::xr::{Headset, HeadsetOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the runtime is asked again while it is away.
const RETRY: Duration = Duration::from_millis(500);

/// A new headset session, asked for every [`RETRY`] until one opens,
/// `wait` has passed, or `stop` is set (Ctrl+C); `None` when it never came
/// back.
pub(super) fn reopen(
    options: &HeadsetOptions,
    wait: Duration,
    stop: Option<&AtomicBool>,
) -> Option<Headset> {
    let deadline = Instant::now() + wait;
    loop {
        if stop.is_some_and(|s| s.load(Ordering::SeqCst)) {
            return None;
        }
        match Headset::open(options) {
            Ok(headset) => return Some(headset),
            Err(e) => tracing::debug!("the runtime is not back yet: {e}"),
        }
        let left = deadline.checked_duration_since(Instant::now())?;
        std::thread::sleep(RETRY.min(left));
        if Instant::now() >= deadline {
            return None;
        }
    }
}
