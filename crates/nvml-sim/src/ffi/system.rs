//! System-level NVML entry points: init/shutdown (init blocks before the scenario's
//! `init_hangs_until` and answers `DRIVER_NOT_LOADED` before its `driver_loaded_at`), error
//! strings, driver/NVML/CUDA versions, device count and handle lookup by index, UUID or PCI bus
//! id (GPUs with an `appear` fault only from then).

use std::ffi::{CStr, c_char, c_int};
use std::os::raw::c_uint;

use nvml_wrapper_sys::bindings::{nvmlDevice_t, nvmlReturn_t};

use super::{guard, out, put_str, run};
use crate::handle;
use crate::ret;
use crate::state;

/// Driver version reported; below 580.82 so nvml-wrapper keeps the v12 field-id numbering.
pub const DRIVER_VERSION: &str = "550.90.07";
/// NVML library version reported.
pub const NVML_VERSION: &str = "12.550.90.07";
/// CUDA driver version reported (12.4).
pub const CUDA_DRIVER_VERSION: c_int = 12040;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlInit_v2() -> nvmlReturn_t {
    guard(state::init)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> nvmlReturn_t {
    guard(state::init)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlShutdown() -> nvmlReturn_t {
    guard(state::shutdown)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlErrorString(result: nvmlReturn_t) -> *const c_char {
    ret::describe(result).as_ptr()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(
    version: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    run(|_, _| unsafe { put_str(version, length, DRIVER_VERSION) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetNVMLVersion(
    version: *mut c_char,
    length: c_uint,
) -> nvmlReturn_t {
    run(|_, _| unsafe { put_str(version, length, NVML_VERSION) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion_v2(
    cuda_driver_version: *mut c_int,
) -> nvmlReturn_t {
    run(|_, _| {
        *unsafe { out(cuda_driver_version) }? = CUDA_DRIVER_VERSION;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion(
    cuda_driver_version: *mut c_int,
) -> nvmlReturn_t {
    unsafe { nvmlSystemGetCudaDriverVersion_v2(cuda_driver_version) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(device_count: *mut c_uint) -> nvmlReturn_t {
    run(|sim, t| {
        *unsafe { out(device_count) }? = sim.device_count(t);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        let o = unsafe { out(device) }?;
        *o = handle::device(sim.handle_by_index(index, t)?);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByUUID(
    uuid: *const c_char,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        if uuid.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        // SAFETY: non-null and NUL-terminated (NVML contract).
        let s = unsafe { CStr::from_ptr(uuid) }
            .to_str()
            .map_err(|_| ret::INVALID_ARGUMENT)?;
        let o = unsafe { out(device) }?;
        *o = handle::device(sim.handle_by_uuid(s, t)?);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId_v2(
    pci_bus_id: *const c_char,
    device: *mut nvmlDevice_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        if pci_bus_id.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        // SAFETY: non-null and NUL-terminated (NVML contract).
        let s = unsafe { CStr::from_ptr(pci_bus_id) }
            .to_str()
            .map_err(|_| ret::INVALID_ARGUMENT)?;
        let o = unsafe { out(device) }?;
        *o = handle::device(sim.handle_by_pci(s, t)?);
        Ok(())
    })
}
