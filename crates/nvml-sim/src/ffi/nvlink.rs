//! NVLink and fabric entry points: `nvmlDeviceGetNvLinkState`,
//! `nvmlDeviceGetNvLinkErrorCounter`, `nvmlDeviceGetGpuFabricInfo` (v1 struct) and
//! `nvmlDeviceGetGpuFabricInfoV` (versioned struct, v2 or v3).
//!
//! Owns the pointer and struct-version checks and the copying out. It must not decide what a
//! link or GPU answers (that is `sim::nvlink`). Per-link throughput goes through
//! `nvmlDeviceGetFieldValues` (`ffi::fields`).

use std::mem::size_of;
use std::os::raw::{c_uint, c_ulonglong};

use nvml_wrapper_sys::bindings::{
    nvmlDevice_t, nvmlEnableState_enum_NVML_FEATURE_DISABLED,
    nvmlEnableState_enum_NVML_FEATURE_ENABLED, nvmlEnableState_t, nvmlGpuFabricInfo_t,
    nvmlGpuFabricInfo_v2_t, nvmlGpuFabricInfoV_t, nvmlNvLinkErrorCounter_t, nvmlReturn_t,
};

use super::{answer, dev, out, run};
use crate::ret;
use crate::sim::FabricInfo;

/// `nvmlGpuFabricInfo_v2` of `nvml.h`: the struct size with the version in the top byte.
pub const FABRIC_INFO_V2: c_uint = size_of::<nvmlGpuFabricInfo_v2_t>() as c_uint | (2 << 24);
/// `nvmlGpuFabricInfo_v3`.
pub const FABRIC_INFO_V3: c_uint = size_of::<nvmlGpuFabricInfoV_t>() as c_uint | (3 << 24);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkState(
    device: nvmlDevice_t,
    link: c_uint,
    isActive: *mut nvmlEnableState_t,
) -> nvmlReturn_t {
    unsafe {
        answer(device, isActive, "nvmlDeviceGetNvLinkState", |sim, d, t| {
            Ok(if sim.nvlink_state(d, link, t)? {
                nvmlEnableState_enum_NVML_FEATURE_ENABLED
            } else {
                nvmlEnableState_enum_NVML_FEATURE_DISABLED
            })
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkErrorCounter(
    device: nvmlDevice_t,
    link: c_uint,
    counter: nvmlNvLinkErrorCounter_t,
    counterValue: *mut c_ulonglong,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            counterValue,
            "nvmlDeviceGetNvLinkErrorCounter",
            |sim, d, t| sim.nvlink_errors(d, link, counter, t),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuFabricInfo(
    device: nvmlDevice_t,
    gpuFabricInfo: *mut nvmlGpuFabricInfo_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        // SAFETY: forwarded NVML contract on the pointer.
        let o = unsafe { out(gpuFabricInfo) }?;
        let d = dev(sim, device, "nvmlDeviceGetGpuFabricInfo", t)?;
        let f = sim.fabric(d, t)?;
        o.clusterUuid = f.cluster_uuid;
        o.status = f.status;
        o.cliqueId = f.clique_id;
        o.state = f.state;
        Ok(())
    })
}

/// Writes the v2 part of `f` (everything but the health summary).
fn fill_v2(o: &mut nvmlGpuFabricInfo_v2_t, f: &FabricInfo) {
    o.clusterUuid = f.cluster_uuid;
    o.status = f.status;
    o.cliqueId = f.clique_id;
    o.state = f.state;
    o.healthMask = f.health_mask;
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuFabricInfoV(
    device: nvmlDevice_t,
    gpuFabricInfo: *mut nvmlGpuFabricInfoV_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        if gpuFabricInfo.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        // SAFETY: non-null; every version of the struct starts with the version word.
        let version = unsafe { gpuFabricInfo.cast::<c_uint>().read() };
        let d = dev(sim, device, "nvmlDeviceGetGpuFabricInfoV", t)?;
        if version != FABRIC_INFO_V2 && version != FABRIC_INFO_V3 {
            return Err(ret::ARGUMENT_VERSION_MISMATCH);
        }
        let f = sim.fabric(d, t)?;
        if version == FABRIC_INFO_V3 {
            // SAFETY: the caller declared the v3 layout, valid for writes (NVML contract).
            let o = unsafe { out(gpuFabricInfo) }?;
            o.clusterUuid = f.cluster_uuid;
            o.status = f.status;
            o.cliqueId = f.clique_id;
            o.state = f.state;
            o.healthMask = f.health_mask;
            o.healthSummary = f.health_summary;
        } else {
            // SAFETY: the caller declared the v2 layout (a prefix of v3): only it is written.
            let o = unsafe { out(gpuFabricInfo.cast::<nvmlGpuFabricInfo_v2_t>()) }?;
            fill_v2(o, &f);
        }
        Ok(())
    })
}
