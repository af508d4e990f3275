//! The headset's GPU: the `OpenXR` runtime creates the Vulkan instance and
//! device (`XR_KHR_vulkan_enable2`) with the extensions and features
//! wgpu-hal asks for, and wgpu wraps them, so the renderer draws with the
//! same device the compositor reads the swapchain images from.
//!
//! The steps, each failure an [`XrError`] that says what went wrong:
//!
//! 1. the runtime's Vulkan version range (`xrGetVulkanGraphicsRequirements2KHR`)
//!    must admit [`VULKAN_VERSION`] (1.2: what the interop needs);
//! 2. the Vulkan loader is opened at run time (`ash::Entry::load`);
//! 3. the instance, with wgpu-hal's desired instance extensions, is created
//!    by the runtime (`xrCreateVulkanInstanceKHR`, which adds its own) and
//!    wrapped with `wgpu::hal::vulkan::Instance::from_raw`;
//! 4. the runtime names the physical device (`xrGetVulkanGraphicsDevice2KHR`);
//!    wgpu-hal exposes it as an adapter;
//! 5. the device, with the extensions and features wgpu-hal needs for the
//!    features we ask for (multiview where offered), on a graphics queue
//!    family, is created by the runtime (`xrCreateVulkanDeviceKHR`) and
//!    wrapped with `device_from_raw`;
//! 6. wgpu's instance, adapter, device and queue are made from the hal
//!    objects, as a [`GpuContext`] the existing renderer takes unchanged.
//!
//! wgpu owns the `VkInstance` and `VkDevice` from then on and destroys them
//! when the last wgpu handle goes: the `OpenXR` session (which uses the
//! device) must be destroyed before that, see
//! [`Headset`](super::headset::Headset).

use super::error::{XrError, call};
use crate::gpu::GpuContext;
use ash::vk;
use ash::vk::Handle;
use openxr as xr;
use std::ffi::{CStr, c_char};
use wgpu::hal;
use wgpu::hal::api::Vulkan as HalVulkan;

/// The Vulkan API version we ask for (interop needs 1.2).
pub const VULKAN_VERSION: u32 = vk::API_VERSION_1_2;

/// What [`create_gpu`] made: the wgpu context, and the Vulkan handles the
/// `OpenXR` session is created with.
pub struct XrGpu {
    /// The wgpu context the headset renders with.
    pub ctx: GpuContext,
    /// The Vulkan instance, physical device, device and queue the session is created with.
    pub session_info: xr::vulkan::SessionCreateInfo,
    /// The instance extensions we asked the runtime for (it may add more).
    pub instance_extensions: Vec<&'static CStr>,
    /// The device extensions we asked for.
    pub device_extensions: Vec<&'static CStr>,
}

impl std::fmt::Debug for XrGpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XrGpu")
            .field("adapter", &self.ctx.summary())
            .field("multiview", &self.ctx.multiview)
            .field("queue_family", &self.session_info.queue_family_index)
            .field("instance_extensions", &self.instance_extensions)
            .field("device_extensions", &self.device_extensions)
            .finish_non_exhaustive()
    }
}

fn graphics(detail: impl Into<String>) -> XrError {
    XrError::Graphics {
        detail: detail.into(),
    }
}

fn vk_version(v: u32) -> String {
    format!(
        "{}.{}.{}",
        vk::api_version_major(v),
        vk::api_version_minor(v),
        vk::api_version_patch(v)
    )
}

/// Whether the runtime's supported Vulkan range admits `wanted` (a
/// `VK_API_VERSION`): its minimum must not be above it. The maximum is the
/// newest version the runtime was tested with, not a limit (the spec lets
/// applications go above it), so it is only logged.
pub fn version_admitted(requirements: &xr::vulkan::Requirements, wanted: u32) -> bool {
    let min = requirements.min_api_version_supported;
    (min.major() as u32, min.minor() as u32)
        <= (vk::api_version_major(wanted), vk::api_version_minor(wanted))
}

/// Creates the Vulkan instance and device through the runtime and wraps
/// them into wgpu (see the module documentation).
pub fn create_gpu(instance: &xr::Instance, system: xr::SystemId) -> Result<XrGpu, XrError> {
    check_requirements(instance, system)?;
    let vulkan = create_instance(instance, system)?;

    // SAFETY: the instance came from xrCreateVulkanInstanceKHR.
    let raw_phd = unsafe { instance.vulkan_graphics_device(system, vulkan.raw) }
        .map_err(call("xrGetVulkanGraphicsDevice2KHR"))?;
    let phd = vk::PhysicalDevice::from_raw(raw_phd as u64);
    // SAFETY: a physical device of this instance.
    let props = unsafe { vulkan.ash.get_physical_device_properties(phd) };
    if props.api_version < VULKAN_VERSION {
        return Err(graphics(format!(
            "the runtime's GPU offers Vulkan {}, and the headset needs {}",
            vk_version(props.api_version),
            vk_version(VULKAN_VERSION)
        )));
    }
    let exposed = vulkan.hal.expose_adapter(phd).ok_or_else(|| {
        graphics("wgpu cannot use the GPU the runtime chose (it lacks what wgpu needs)")
    })?;
    let request = device_request(&exposed);
    let device = create_device(instance, system, &vulkan, raw_phd, &exposed, &request)?;

    let multiview = request.multiview;
    let ctx = wrap_in_wgpu(vulkan.hal, exposed, device.open, request)?;
    tracing::info!(
        "OpenXR GPU: {} (multiview offered: {multiview})",
        ctx.summary()
    );
    Ok(XrGpu {
        ctx,
        session_info: xr::vulkan::SessionCreateInfo {
            instance: vulkan.raw,
            physical_device: raw_phd,
            device: device.raw,
            queue_family_index: device.family,
            queue_index: 0,
        },
        instance_extensions: vulkan.extensions,
        device_extensions: device.extensions,
    })
}

/// Checks that the runtime's Vulkan version range admits [`VULKAN_VERSION`]
/// (`xrGetVulkanGraphicsRequirements2KHR`), logging the range.
fn check_requirements(instance: &xr::Instance, system: xr::SystemId) -> Result<(), XrError> {
    let requirements = instance
        .graphics_requirements::<xr::Vulkan>(system)
        .map_err(call("xrGetVulkanGraphicsRequirements2KHR"))?;
    tracing::info!(
        "OpenXR Vulkan requirements: {} to {}",
        requirements.min_api_version_supported,
        requirements.max_api_version_supported
    );
    if !version_admitted(&requirements, VULKAN_VERSION) {
        return Err(graphics(format!(
            "the runtime needs Vulkan {} or newer, and this program uses Vulkan {}",
            requirements.min_api_version_supported,
            vk_version(VULKAN_VERSION)
        )));
    }
    Ok(())
}

/// The Vulkan instance the runtime created, as the raw handle, ash's and
/// wgpu-hal's.
struct VulkanInstance {
    /// The loader's `vkGetInstanceProcAddr`, as `OpenXR` takes it.
    gipa: xr::sys::platform::VkGetInstanceProcAddr,
    raw: xr::sys::platform::VkInstance,
    ash: ash::Instance,
    hal: hal::vulkan::Instance,
    /// The instance extensions we asked the runtime for.
    extensions: Vec<&'static CStr>,
}

/// Opens the Vulkan loader, has the runtime create the instance with
/// wgpu-hal's desired extensions (`xrCreateVulkanInstanceKHR`) and wraps it
/// with `wgpu::hal::vulkan::Instance::from_raw`.
fn create_instance(
    instance: &xr::Instance,
    system: xr::SystemId,
) -> Result<VulkanInstance, XrError> {
    // SAFETY: loading the system's Vulkan loader library; ash checks that it
    // has the entry points.
    let entry = unsafe { ash::Entry::load() }.map_err(|e| {
        graphics(format!(
            "the Vulkan loader (libvulkan.so.1) could not be opened ({e}): \
             apt-get install libvulkan1 mesa-vulkan-drivers"
        ))
    })?;
    let flags = wgpu::InstanceFlags::empty();
    let instance_extensions =
        hal::vulkan::Instance::desired_extensions(&entry, VULKAN_VERSION, flags)
            .map_err(|e| graphics(format!("listing Vulkan instance extensions: {e}")))?;
    let app_info = vk::ApplicationInfo::default()
        .application_name(c"Plasticine")
        .application_version(1)
        .engine_name(c"wgpu")
        .engine_version(30)
        .api_version(VULKAN_VERSION);
    let extension_names: Vec<*const c_char> =
        instance_extensions.iter().map(|e| e.as_ptr()).collect();
    let create_info = vk::InstanceCreateInfo::default()
        .application_info(&app_info)
        .enabled_extension_names(&extension_names);
    let get_instance_proc_addr = entry.static_fn().get_instance_proc_addr;
    // SAFETY: the two function pointer types are the same C signature
    // (`PFN_vkGetInstanceProcAddr`), declared by two crates.
    let gipa: xr::sys::platform::VkGetInstanceProcAddr =
        unsafe { std::mem::transmute(get_instance_proc_addr) };
    // SAFETY: `create_info` and everything it points to live until the call
    // returns; the runtime calls vkCreateInstance through `gipa`.
    let raw_instance = unsafe {
        instance.create_vulkan_instance(
            system,
            gipa,
            &create_info as *const vk::InstanceCreateInfo as *const _,
        )
    }
    .map_err(call("xrCreateVulkanInstanceKHR"))?
    .map_err(|r| {
        graphics(format!(
            "vkCreateInstance (through the runtime) failed: {:?}",
            vk::Result::from_raw(r)
        ))
    })?;
    let vk_instance = vk::Instance::from_raw(raw_instance as u64);
    // SAFETY: a valid instance just created from this entry.
    let ash_instance = unsafe { ash::Instance::load(entry.static_fn(), vk_instance) };
    // SAFETY: created from `entry` with VULKAN_VERSION and exactly these
    // extensions (the runtime may have added more, which is allowed); wgpu-hal
    // takes ownership (no drop callback) and destroys it last.
    let hal_instance = unsafe {
        hal::vulkan::Instance::from_raw(
            entry.clone(),
            ash_instance.clone(),
            VULKAN_VERSION,
            0,
            None,
            instance_extensions.clone(),
            flags,
            wgpu::MemoryBudgetThresholds::default(),
            false,
            None,
        )
    }
    .map_err(|e| graphics(format!("wrapping the Vulkan instance: {e}")))?;
    Ok(VulkanInstance {
        gipa,
        raw: raw_instance,
        ash: ash_instance,
        hal: hal_instance,
        extensions: instance_extensions,
    })
}

/// The features and limits asked of the device: multiview (and multisampled
/// arrays) where the adapter offers them.
struct DeviceRequest {
    multiview: bool,
    multisample_array: bool,
    features: wgpu::Features,
    limits: wgpu::Limits,
    memory_hints: wgpu::MemoryHints,
}

/// What to ask of the device on `exposed`: multiview with at least two views
/// where offered, multisampled arrays along with it where offered.
fn device_request(exposed: &hal::ExposedAdapter<HalVulkan>) -> DeviceRequest {
    let offered = exposed.features;
    let multiview = offered.contains(wgpu::Features::MULTIVIEW)
        && exposed.capabilities.limits.max_multiview_view_count >= 2;
    let multisample_array = multiview && offered.contains(wgpu::Features::MULTISAMPLE_ARRAY);
    let mut features = wgpu::Features::empty();
    if multiview {
        features |= wgpu::Features::MULTIVIEW;
    }
    if multisample_array {
        features |= wgpu::Features::MULTISAMPLE_ARRAY;
    }
    let mut limits =
        wgpu::Limits::downlevel_defaults().using_resolution(exposed.capabilities.limits.clone());
    if multiview {
        limits.max_multiview_view_count = 2;
    }
    let memory_hints = wgpu::MemoryHints::Performance;
    DeviceRequest {
        multiview,
        multisample_array,
        features,
        limits,
        memory_hints,
    }
}

/// The device the runtime created, and what it was created with.
struct VulkanDevice {
    raw: xr::sys::platform::VkDevice,
    /// The graphics queue family.
    family: u32,
    /// The device extensions we asked for.
    extensions: Vec<&'static CStr>,
    open: hal::OpenDevice<HalVulkan>,
}

/// Has the runtime create the device on `raw_phd` (`xrCreateVulkanDeviceKHR`)
/// with a graphics queue and the extensions and features wgpu-hal needs for
/// `request`, and wraps it with `device_from_raw`.
fn create_device(
    instance: &xr::Instance,
    system: xr::SystemId,
    vulkan: &VulkanInstance,
    raw_phd: xr::sys::platform::VkPhysicalDevice,
    exposed: &hal::ExposedAdapter<HalVulkan>,
    request: &DeviceRequest,
) -> Result<VulkanDevice, XrError> {
    let ash_instance = &vulkan.ash;
    let gipa = vulkan.gipa;
    let features = request.features;
    let phd = vk::PhysicalDevice::from_raw(raw_phd as u64);
    // SAFETY: a physical device of this instance.
    let families = unsafe { ash_instance.get_physical_device_queue_family_properties(phd) };
    let family = families
        .iter()
        .position(|f| f.queue_flags.contains(vk::QueueFlags::GRAPHICS))
        .ok_or_else(|| graphics("the runtime's GPU has no graphics queue"))?
        as u32;
    let device_extensions = exposed.adapter.required_device_extensions(features);
    let mut phd_features = exposed
        .adapter
        .physical_device_features(&device_extensions, features);
    let priorities = [1.0f32];
    let queue_infos = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(family)
        .queue_priorities(&priorities)];
    let device_extension_names: Vec<*const c_char> =
        device_extensions.iter().map(|e| e.as_ptr()).collect();
    let device_info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queue_infos)
        .enabled_extension_names(&device_extension_names);
    let device_info = phd_features.add_to_device_create(device_info);
    // SAFETY: `device_info` and its chain live until the call returns.
    let raw_device = unsafe {
        instance.create_vulkan_device(
            system,
            gipa,
            raw_phd,
            &device_info as *const vk::DeviceCreateInfo as *const _,
        )
    }
    .map_err(call("xrCreateVulkanDeviceKHR"))?
    .map_err(|r| {
        graphics(format!(
            "vkCreateDevice (through the runtime) failed: {:?}",
            vk::Result::from_raw(r)
        ))
    })?;
    let vk_device = vk::Device::from_raw(raw_device as u64);
    // SAFETY: a device just created on `phd` of this instance.
    let ash_device = unsafe { ash::Device::load(ash_instance.fp_v1_0(), vk_device) };
    // SAFETY: created from this adapter with `family`, these extensions and
    // `phd_features`; wgpu-hal takes ownership (no drop callback).
    let open = unsafe {
        exposed.adapter.device_from_raw(
            ash_device,
            None,
            &device_extensions,
            features,
            &request.limits,
            &request.memory_hints,
            family,
            0,
        )
    }
    .map_err(|e| graphics(format!("wrapping the Vulkan device: {e}")))?;
    Ok(VulkanDevice {
        raw: raw_device,
        family,
        extensions: device_extensions,
        open,
    })
}

/// Makes wgpu's instance, adapter, device and queue from the hal objects, as
/// the [`GpuContext`] the renderer takes.
fn wrap_in_wgpu(
    hal_instance: hal::vulkan::Instance,
    exposed: hal::ExposedAdapter<HalVulkan>,
    open: hal::OpenDevice<HalVulkan>,
    request: DeviceRequest,
) -> Result<GpuContext, XrError> {
    let DeviceRequest {
        multiview,
        multisample_array,
        features,
        limits,
        memory_hints,
    } = request;
    // SAFETY: the hal instance is valid and owns its Vulkan instance.
    let wgpu_instance = unsafe { wgpu::Instance::from_hal::<HalVulkan>(hal_instance) };
    // SAFETY: `exposed` was enumerated from that same hal instance.
    let adapter = unsafe { wgpu_instance.create_adapter_from_hal(exposed) };
    // SAFETY: `open` is the device the runtime asked for, opened on that
    // adapter's physical device with the features and limits given here.
    let (device, queue) = unsafe {
        adapter.create_device_from_hal(
            open,
            &wgpu::DeviceDescriptor {
                label: Some("plasticine (OpenXR)"),
                required_features: features,
                required_limits: limits,
                memory_hints,
                ..Default::default()
            },
        )
    }
    .map_err(|e| graphics(format!("opening the wgpu device: {e}")))?;
    Ok(GpuContext {
        instance: wgpu_instance,
        adapter,
        device,
        queue,
        multiview,
        multisample_array,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_version_range_must_admit_vulkan_1_2() {
        let req = |min: (u16, u16), max: (u16, u16)| xr::vulkan::Requirements {
            min_api_version_supported: xr::Version::new(min.0, min.1, 0),
            max_api_version_supported: xr::Version::new(max.0, max.1, 0),
        };
        assert!(version_admitted(&req((1, 0), (1, 3)), VULKAN_VERSION));
        assert!(version_admitted(&req((1, 2), (1, 2)), VULKAN_VERSION));
        // A maximum below ours is what the runtime was tested with, not a limit.
        assert!(version_admitted(&req((1, 0), (1, 1)), VULKAN_VERSION));
        assert!(!version_admitted(&req((1, 3), (1, 4)), VULKAN_VERSION));
        assert_eq!(vk_version(VULKAN_VERSION), "1.2.0");
    }
}
