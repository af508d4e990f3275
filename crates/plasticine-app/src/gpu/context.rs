//! The wgpu instance, adapter, device and queue, and what the adapter can do.

use super::GpuError;

/// The GPU the renderer draws with. `wgpu::Device` and `wgpu::Queue` are
/// reference-counted handles, so a context is cheap to clone.
#[derive(Clone)]
pub struct GpuContext {
    /// The wgpu instance the adapter was requested from.
    pub instance: wgpu::Instance,
    /// The adapter (physical GPU, or a software one such as lavapipe) in use.
    pub adapter: wgpu::Adapter,
    /// The logical device that creates buffers, textures and pipelines.
    pub device: wgpu::Device,
    /// The queue that command buffers are submitted to.
    pub queue: wgpu::Queue,
    /// The device was created with `Features::MULTIVIEW`.
    pub multiview: bool,
    /// ... and with `Features::MULTISAMPLE_ARRAY` (MSAA in a multiview pass).
    pub multisample_array: bool,
}

/// How many GPU objects wgpu holds (its own counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LiveObjects {
    /// Buffers.
    pub buffers: usize,
    /// Textures.
    pub textures: usize,
    /// Texture views.
    pub texture_views: usize,
    /// Bind groups.
    pub bind_groups: usize,
}

/// A line a user can read about the adapter in use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSummary {
    /// The adapter's name.
    pub name: String,
    /// The graphics backend, as wgpu names it (e.g. `Vulkan`, `Gl`).
    pub backend: String,
    /// The kind of device, as wgpu names it (e.g. `DiscreteGpu`, `Cpu`).
    pub device_type: String,
    /// The driver's name, followed by its version information when the adapter reports any.
    pub driver: String,
}

impl std::fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, {}, driver {})",
            self.name, self.backend, self.device_type, self.driver
        )
    }
}

/// Whether the backends are ours to choose (`WGPU_BACKEND` not set).
pub fn backends_defaulted() -> bool {
    std::env::var_os("WGPU_BACKEND").is_none_or(|v| v.is_empty())
}

/// The instance wgpu reads from the environment, asking only for the
/// primary backends (Vulkan on Linux) when `primary` and the user did not
/// choose: probing GL first connects to Wayland, which prints an alarming
/// "`XDG_RUNTIME_DIR` is invalid" line on every run without a session. GL is
/// the second try, when no primary adapter exists.
pub fn instance_descriptor(primary: bool) -> wgpu::InstanceDescriptor {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    if primary && backends_defaulted() {
        desc.backends = wgpu::Backends::PRIMARY;
    }
    desc
}

impl GpuContext {
    /// A context with no window: the first adapter wgpu offers (Vulkan first,
    /// then GL), honouring `WGPU_BACKEND` / `WGPU_ADAPTER_NAME` from the
    /// environment.
    pub fn headless() -> Result<Self, GpuError> {
        let primary = Self::with_instance(wgpu::Instance::new(instance_descriptor(true)), None);
        match primary {
            Err(GpuError::NoAdapter(_)) if backends_defaulted() => {
                Self::with_instance(wgpu::Instance::new(instance_descriptor(false)), None)
            }
            other => other,
        }
    }

    /// A context for `instance`, able to present to `surface` when given.
    pub fn with_instance(
        instance: wgpu::Instance,
        surface: Option<&wgpu::Surface<'_>>,
    ) -> Result<Self, GpuError> {
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: surface,
            ..Default::default()
        }))
        .map_err(|e| GpuError::NoAdapter(e.to_string()))?;
        let multiview = adapter.features().contains(wgpu::Features::MULTIVIEW)
            && adapter.limits().max_multiview_view_count >= 2;
        let multisample_array = multiview
            && adapter
                .features()
                .contains(wgpu::Features::MULTISAMPLE_ARRAY);
        let mut required_features = wgpu::Features::empty();
        if multiview {
            required_features |= wgpu::Features::MULTIVIEW;
        }
        if multisample_array {
            required_features |= wgpu::Features::MULTISAMPLE_ARRAY;
        }
        let mut required_limits =
            wgpu::Limits::downlevel_defaults().using_resolution(adapter.limits());
        if multiview {
            required_limits.max_multiview_view_count = 2;
        }
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("plasticine"),
            required_features,
            required_limits,
            ..Default::default()
        }))
        .map_err(|e| GpuError::Device(e.to_string()))?;
        Ok(Self {
            instance,
            adapter,
            device,
            queue,
            multiview,
            multisample_array,
        })
    }

    /// The GPU objects wgpu holds now (its registry's live ids): what a
    /// leak would grow. `None` where the backend keeps no registry (WebGPU).
    pub fn live_objects(&self) -> Option<LiveObjects> {
        let report = self.instance.generate_report()?;
        let hub = report.hub_report();
        Some(LiveObjects {
            buffers: hub.buffers.num_allocated,
            textures: hub.textures.num_allocated,
            texture_views: hub.texture_views.num_allocated,
            bind_groups: hub.bind_groups.num_allocated,
        })
    }

    /// A readable summary of the adapter in use.
    pub fn summary(&self) -> AdapterSummary {
        let info = self.adapter.get_info();
        AdapterSummary {
            name: info.name,
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: if info.driver_info.is_empty() {
                info.driver
            } else {
                format!("{} {}", info.driver, info.driver_info)
            },
        }
    }

    /// The largest MSAA sample count up to `wanted` that `format` supports
    /// here (1 when none).
    pub fn msaa_samples(&self, format: wgpu::TextureFormat, wanted: u32) -> u32 {
        let flags = self.adapter.get_texture_format_features(format).flags;
        [16, 8, 4, 2]
            .into_iter()
            .find(|&s| s <= wanted && flags.sample_count_supported(s))
            .unwrap_or(1)
    }

    /// Waits until the GPU has finished all submitted work.
    pub fn wait_idle(&self) -> Result<(), GpuError> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| GpuError::Device(e.to_string()))
    }
}
