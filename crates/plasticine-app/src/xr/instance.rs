//! The `OpenXR` loader, the active runtime, an instance with the extensions
//! the desk tracker needs, and the head-mounted system.
//!
//! Every step that can fail because something is not installed or not
//! running says so with an [`XrError`] that names what to do.

use super::error::{LOADER_LIBRARY, XrError, call, describe_result};
use openxr as xr;
use std::path::{Path, PathBuf};

/// Environment variable naming another `OpenXR` loader library to open
/// instead of `libopenxr_loader.so.1` from the library search path.
pub const LOADER_ENV: &str = "PLASTICINE_OPENXR_LOADER";

/// The application name the runtime shows.
const APP_NAME: &str = "Plasticine";

/// What the runtime said about itself and the system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeInfo {
    /// The runtime's name and version, e.g. "Monado(XRT) by Collabora et al 25.0.0".
    pub runtime: String,
    /// The system's (headset's) name, e.g. "Monado: Simulated HMD".
    pub system: String,
    /// What the system says it tracks.
    pub position_tracking: bool,
    /// Whether the system says it tracks orientation.
    pub orientation_tracking: bool,
}

impl std::fmt::Display for RuntimeInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "runtime '{}', system '{}'", self.runtime, self.system)
    }
}

/// An `OpenXR` instance with `XR_MND_headless` and
/// `XR_KHR_convert_timespec_time` enabled, and the head-mounted system.
pub struct XrRuntime {
    pub(crate) instance: xr::Instance,
    pub(crate) system: xr::SystemId,
    info: RuntimeInfo,
}

impl std::fmt::Debug for XrRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XrRuntime")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// The loader library to open: `loader` if given, else `$PLASTICINE_OPENXR_LOADER`,
/// else `libopenxr_loader.so.1` from the library search path.
pub fn loader_path(loader: Option<&Path>) -> PathBuf {
    loader
        .map(Path::to_path_buf)
        .or_else(|| {
            std::env::var_os(LOADER_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(LOADER_LIBRARY))
}

/// Opens the `OpenXR` loader (at run time: nothing links it at build time).
pub fn load_entry(loader: Option<&Path>) -> Result<xr::Entry, XrError> {
    let path = loader_path(loader);
    // SAFETY: the library is an OpenXR loader (the file the OpenXR loader
    // package installs, or one the user named on purpose); `load_from` checks
    // that it has the core entry points.
    let entry = unsafe { xr::Entry::load_from(&path, &()) };
    entry.map_err(|e| {
        let detail = match &e {
            xr::EntryError::Load(inner) => {
                use std::error::Error;
                inner
                    .source()
                    .map_or_else(|| e.to_string(), |s| s.to_string())
            }
            xr::EntryError::Xr(r) => {
                format!("the loader failed to initialise: {}", describe_result(*r))
            }
        };
        XrError::NoLoader {
            library: path.display().to_string(),
            detail,
        }
    })
}

/// What an instance is for, and so which extensions it must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XrPurpose {
    /// A headless session for the desk tracker: `XR_MND_headless` and
    /// `XR_KHR_convert_timespec_time`.
    Headless,
    /// A headset session rendering with Vulkan: `XR_KHR_vulkan_enable2`.
    Vulkan,
}

impl XrRuntime {
    /// Loads the loader, asks the active runtime for the extensions, creates
    /// the instance for a headless session and finds the head-mounted system.
    pub fn open(loader: Option<&Path>) -> Result<Self, XrError> {
        Self::open_for(loader, XrPurpose::Headless)
    }

    /// As [`open`](Self::open), with the extensions `purpose` needs.
    pub fn open_for(loader: Option<&Path>, purpose: XrPurpose) -> Result<Self, XrError> {
        let entry = load_entry(loader)?;
        // The loader reads the active runtime's manifest here: no runtime,
        // or a manifest naming a library that is not there, fails now.
        let available = entry
            .enumerate_extensions()
            .map_err(|r| XrError::NoRuntime {
                detail: format!("the loader found no usable runtime: {}", describe_result(r)),
            })?;
        let mut wanted = xr::ExtensionSet::default();
        match purpose {
            XrPurpose::Headless => {
                if !available.mnd_headless {
                    return Err(XrError::NoHeadless {
                        runtime: runtime_name_without_extensions(&entry),
                    });
                }
                if !available.khr_convert_timespec_time {
                    return Err(XrError::NoClock {
                        runtime: runtime_name_without_extensions(&entry),
                    });
                }
                wanted.mnd_headless = true;
                wanted.khr_convert_timespec_time = true;
            }
            XrPurpose::Vulkan => {
                if !available.khr_vulkan_enable2 {
                    return Err(XrError::NoVulkan {
                        runtime: runtime_name_without_extensions(&entry),
                    });
                }
                wanted.khr_vulkan_enable2 = true;
                // For clocks in logs and tests where there is one; not needed.
                wanted.khr_convert_timespec_time = available.khr_convert_timespec_time;
            }
        }
        let instance = entry
            .create_instance(&app_info(), &wanted, &[], &())
            .map_err(|r| XrError::RuntimeUnavailable {
                detail: format!("xrCreateInstance: {}", describe_result(r)),
            })?;
        let runtime = describe_instance(&instance);
        let system = instance
            .system(xr::FormFactor::HEAD_MOUNTED_DISPLAY)
            .map_err(|r| match r {
                xr::sys::Result::ERROR_FORM_FACTOR_UNAVAILABLE
                | xr::sys::Result::ERROR_FORM_FACTOR_UNSUPPORTED => XrError::NoSystem {
                    runtime: runtime.clone(),
                    detail: describe_result(r),
                },
                other => XrError::call("xrGetSystem", other),
            })?;
        let props = instance
            .system_properties(system)
            .map_err(call("xrGetSystemProperties"))?;
        let info = RuntimeInfo {
            runtime,
            system: props.system_name,
            position_tracking: props.tracking_properties.position_tracking,
            orientation_tracking: props.tracking_properties.orientation_tracking,
        };
        tracing::info!("OpenXR: {info}");
        Ok(Self {
            instance,
            system,
            info,
        })
    }

    /// The head-mounted system.
    pub fn system(&self) -> xr::SystemId {
        self.system
    }

    /// What the runtime said about itself and the system.
    pub fn info(&self) -> &RuntimeInfo {
        &self.info
    }

    /// The `OpenXR` instance.
    pub fn instance(&self) -> &xr::Instance {
        &self.instance
    }

    /// The runtime's current time (`XR_KHR_convert_timespec_time` of
    /// `CLOCK_MONOTONIC`).
    pub fn now(&self) -> Result<xr::Time, XrError> {
        // `Instance::now` needs the extension, which `open` made sure of.
        self.instance
            .now()
            .map_err(call("xrConvertTimespecTimeToTimeKHR"))
    }
}

fn app_info() -> xr::ApplicationInfo<'static> {
    xr::ApplicationInfo {
        application_name: APP_NAME,
        application_version: 1,
        engine_name: APP_NAME,
        engine_version: 1,
        api_version: xr::Version::new(1, 0, 0),
    }
}

fn describe_instance(instance: &xr::Instance) -> String {
    match instance.properties() {
        Ok(p) => format!("{} {}", p.runtime_name, p.runtime_version),
        Err(_) => "unknown runtime".into(),
    }
}

/// The runtime's name, from an instance with no extensions (for messages
/// about what it lacks).
fn runtime_name_without_extensions(entry: &xr::Entry) -> String {
    entry
        .create_instance(&app_info(), &xr::ExtensionSet::default(), &[], &())
        .map(|i| describe_instance(&i))
        .unwrap_or_else(|_| "the active runtime".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_loader_is_named_with_the_package_to_install() {
        let Err(e) = load_entry(Some(Path::new("/nonexistent/libopenxr_loader.so.1"))) else {
            panic!("a loader that is not there loaded");
        };
        let text = e.to_string();
        assert!(matches!(e, XrError::NoLoader { .. }), "{text}");
        assert!(
            text.contains("/nonexistent/libopenxr_loader.so.1"),
            "{text}"
        );
        assert!(text.contains("apt-get install libopenxr-loader1"), "{text}");
    }

    #[test]
    fn the_loader_path_defaults_to_the_system_library() {
        assert_eq!(
            loader_path(Some(Path::new("/x/y.so"))),
            PathBuf::from("/x/y.so")
        );
        if std::env::var_os(LOADER_ENV).is_none() {
            assert_eq!(loader_path(None), PathBuf::from(LOADER_LIBRARY));
        }
    }
}
