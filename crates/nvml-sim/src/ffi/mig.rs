//! MIG entry points: MIG mode, maximum MIG device count, MIG device handles by index, the
//! MIG/parent relation and GPU/compute instance ids.

use std::os::raw::c_uint;

use nvml_wrapper_sys::bindings::{nvmlDevice_t, nvmlReturn_t};

use super::{answer, dev, out, run};
use crate::handle;
use crate::sim::Dev;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(
    device: nvmlDevice_t,
    current_mode: *mut c_uint,
    pending_mode: *mut c_uint,
) -> nvmlReturn_t {
    run(|sim, t| {
        let c = unsafe { out(current_mode) }?;
        let p = unsafe { out(pending_mode) }?;
        let d = dev(sim, device, "nvmlDeviceGetMigMode", t)?;
        (*c, *p) = sim.mig_mode(d)?;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxMigDeviceCount(
    device: nvmlDevice_t,
    count: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            count,
            "nvmlDeviceGetMaxMigDeviceCount",
            |s, d, _| s.max_mig_devices(d),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigDeviceHandleByIndex(
    device: nvmlDevice_t,
    index: c_uint,
    mig_device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            mig_device,
            "nvmlDeviceGetMigDeviceHandleByIndex",
            |s, d, t| s.mig_handle_by_index(d, index, t).map(handle::device),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceIsMigDeviceHandle(
    device: nvmlDevice_t,
    is_mig_device: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            is_mig_device,
            "nvmlDeviceIsMigDeviceHandle",
            |_, d, _| Ok(c_uint::from(matches!(d, Dev::Mig(..)))),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetDeviceHandleFromMigDeviceHandle(
    mig_device: nvmlDevice_t,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    unsafe {
        answer(
            mig_device,
            device,
            "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
            |s, d, _| s.mig_parent(d).map(handle::device),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceId(
    device: nvmlDevice_t,
    id: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(device, id, "nvmlDeviceGetGpuInstanceId", |s, d, _| {
            s.instance_ids(d).map(|(gi, _)| gi)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeInstanceId(
    device: nvmlDevice_t,
    id: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(device, id, "nvmlDeviceGetComputeInstanceId", |s, d, _| {
            s.instance_ids(d).map(|(_, ci)| ci)
        })
    }
}
