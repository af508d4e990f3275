//! What can go wrong with `OpenXR`, in words a user can act on.

use openxr as xr;

/// The `OpenXR` loader's file name on Linux (what `Entry::load` opens).
pub const LOADER_LIBRARY: &str = "libopenxr_loader.so.1";

/// Why there is no `OpenXR` tracker, or why it stopped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum XrError {
    /// The loader library cannot be opened.
    #[error(
        "the OpenXR loader {library} is not installed ({detail}): apt-get install libopenxr-loader1"
    )]
    NoLoader {
        /// The loader library that was tried (a path or a file name).
        library: String,
        /// Why it could not be opened.
        detail: String,
    },
    /// The loader found no runtime to talk to.
    #[error(
        "no active OpenXR runtime ({detail}): install one (e.g. Monado: apt-get install \
         monado-service libopenxr1-monado) and make it active \
         (/etc/xdg/openxr/1/active_runtime.json, or XR_RUNTIME_JSON=path/to/runtime.json)"
    )]
    NoRuntime {
        /// What the loader reported.
        detail: String,
    },
    /// The runtime is there but could not start an instance (for Monado:
    /// the service is not running).
    #[error(
        "the active OpenXR runtime could not start ({detail}); if it is Monado, start \
         monado-service first (with the same XDG_RUNTIME_DIR)"
    )]
    RuntimeUnavailable {
        /// What `xrCreateInstance` returned.
        detail: String,
    },
    /// The runtime has no headless sessions.
    #[error(
        "the OpenXR runtime '{runtime}' does not offer headless sessions (XR_MND_headless): \
         the desk tracker needs a runtime offering them, e.g. Monado"
    )]
    NoHeadless {
        /// The runtime, by name and version where known.
        runtime: String,
    },
    /// The runtime cannot share a Vulkan device with us, which the headset
    /// front end renders with.
    #[error(
        "the OpenXR runtime '{runtime}' does not offer Vulkan rendering (XR_KHR_vulkan_enable2), \
         which the headset front end needs: use a runtime that does (Monado, SteamVR), or the \
         desk front end (plasticine desk)"
    )]
    NoVulkan {
        /// The runtime, by name and version where known.
        runtime: String,
    },
    /// Vulkan could not be set up for the headset (no Vulkan loader or
    /// driver, a version the runtime refuses, a device that fails).
    #[error("the headset's Vulkan device could not be set up: {detail}")]
    Graphics {
        /// What failed.
        detail: String,
    },
    /// The runtime cannot convert the monotonic clock to its own time.
    #[error(
        "the OpenXR runtime '{runtime}' cannot convert clock times (XR_KHR_convert_timespec_time): \
         the desk tracker needs it to ask for poses at the current time, e.g. Monado offers it"
    )]
    NoClock {
        /// The runtime, by name and version where known.
        runtime: String,
    },
    /// No head-mounted display is connected.
    #[error(
        "the OpenXR runtime '{runtime}' found no head-mounted display ({detail}): connect and \
         switch on the headset or tracker (for Monado with no hardware, start monado-service \
         with SIMULATED_ENABLE=1 for a simulated one)"
    )]
    NoSystem {
        /// The runtime, by name and version where known.
        runtime: String,
        /// Why no usable display was found.
        detail: String,
    },
    /// The session did not start within the time allowed.
    #[error(
        "the OpenXR session did not start within {seconds:.1} s (its state is {state}); is \
         another application holding the headset, or is the runtime stuck?"
    )]
    StartTimeout {
        /// The time allowed, in s.
        seconds: f64,
        /// The session's state when the time ran out.
        state: String,
    },
    /// The runtime ended the session or the instance.
    #[error("the OpenXR session was lost: {reason}")]
    SessionLost {
        /// What the runtime said or did.
        reason: String,
    },
    /// Any other failed call.
    #[error("OpenXR call {call} failed: XR_{result:?} ({result})")]
    Call {
        /// The `OpenXR` function that failed (its name, perhaps with a note).
        call: &'static str,
        /// What it returned.
        result: xr::sys::Result,
    },
}

impl XrError {
    /// A failed call, with the instance loss turned into [`XrError::SessionLost`].
    pub fn call(call: &'static str, result: xr::sys::Result) -> Self {
        match result {
            xr::sys::Result::ERROR_INSTANCE_LOST => XrError::SessionLost {
                reason: format!("the runtime lost the instance ({call}: XR_ERROR_INSTANCE_LOST)"),
            },
            xr::sys::Result::ERROR_SESSION_LOST => XrError::SessionLost {
                reason: format!("the runtime lost the session ({call}: XR_ERROR_SESSION_LOST)"),
            },
            _ => XrError::Call { call, result },
        }
    }

    /// Whether this says that `OpenXR` is simply not there (no loader, no
    /// runtime, no running service, no headless sessions or no Vulkan
    /// rendering, no device), as
    /// opposed to something breaking in a runtime that is there.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            XrError::NoLoader { .. }
                | XrError::NoRuntime { .. }
                | XrError::RuntimeUnavailable { .. }
                | XrError::NoHeadless { .. }
                | XrError::NoVulkan { .. }
                | XrError::NoClock { .. }
                | XrError::NoSystem { .. }
        )
    }
}

/// An `OpenXR` result as its name and its description, e.g.
/// "`XR_ERROR_RUNTIME_FAILURE` (the runtime failed ...)".
pub fn describe_result(r: xr::sys::Result) -> String {
    format!("XR_{r:?} ({r})")
}

/// `Result::map_err` helper: `r.map_err(call("xrFoo"))`.
pub(crate) fn call(name: &'static str) -> impl Fn(xr::sys::Result) -> XrError {
    move |r| XrError::call(name, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do() {
        let e = XrError::NoLoader {
            library: LOADER_LIBRARY.into(),
            detail: "not found".into(),
        };
        let text = e.to_string();
        assert!(text.contains("libopenxr_loader.so.1"), "{text}");
        assert!(text.contains("apt-get install libopenxr-loader1"), "{text}");
        let text = XrError::NoHeadless {
            runtime: "SteamVR".into(),
        }
        .to_string();
        assert!(
            text.contains("XR_MND_headless") && text.contains("Monado"),
            "{text}"
        );
        assert!(e.is_unavailable());
    }

    #[test]
    fn instance_and_session_loss_are_losses() {
        for r in [
            xr::sys::Result::ERROR_INSTANCE_LOST,
            xr::sys::Result::ERROR_SESSION_LOST,
        ] {
            let e = XrError::call("xrSyncActions", r);
            assert!(matches!(e, XrError::SessionLost { .. }), "{e}");
            assert!(!e.is_unavailable());
        }
        assert!(matches!(
            XrError::call("xrLocateSpace", xr::sys::Result::ERROR_VALIDATION_FAILURE),
            XrError::Call { .. }
        ));
    }
}
