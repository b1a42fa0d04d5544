//! Process entry points: compute processes per GPU or MIG device (graphics and MPS lists are
//! always empty) and per-process utilization samples.

use std::os::raw::{c_uint, c_ulonglong};

use nvml_wrapper_sys::bindings::{
    nvmlDevice_t, nvmlProcessInfo_t, nvmlProcessUtilizationSample_t, nvmlReturn_t,
};

use super::{dev, out, run};
use crate::ret;

/// Writes `n` items into a caller array of `*count` entries with NVML's sizing protocol:
/// too small (or null with items) → INSUFFICIENT_SIZE with `*count` = needed.
unsafe fn fill<T>(count: &mut c_uint, buf: *mut T, items: Vec<T>) -> Result<(), nvmlReturn_t> {
    let needed = items.len() as c_uint;
    if items.is_empty() {
        *count = 0;
        return Ok(());
    }
    if buf.is_null() || *count < needed {
        *count = needed;
        return Err(ret::INSUFFICIENT_SIZE);
    }
    for (i, item) in items.into_iter().enumerate() {
        // SAFETY: `buf` holds at least `*count` >= needed entries (NVML contract).
        unsafe { buf.add(i).write(item) };
    }
    *count = needed;
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeRunningProcesses_v3(
    device: nvmlDevice_t,
    info_count: *mut c_uint,
    infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        let count = unsafe { out(info_count) }?;
        let d = dev(sim, device, "nvmlDeviceGetComputeRunningProcesses_v3", t)?;
        let items = sim
            .processes(d, t)?
            .into_iter()
            .map(|p| nvmlProcessInfo_t {
                pid: p.pid,
                usedGpuMemory: p.used_bytes,
                gpuInstanceId: p.gi,
                computeInstanceId: p.ci,
            })
            .collect();
        unsafe { fill(count, infos, items) }
    })
}

/// Graphics and MPS process lists: the simulated workloads are plain compute processes.
unsafe fn empty_list(device: nvmlDevice_t, info_count: *mut c_uint, func: &str) -> nvmlReturn_t {
    run(|sim, t| {
        let count = unsafe { out(info_count) }?;
        dev(sim, device, func, t)?;
        *count = 0;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGraphicsRunningProcesses_v3(
    device: nvmlDevice_t,
    info_count: *mut c_uint,
    _infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    unsafe {
        empty_list(
            device,
            info_count,
            "nvmlDeviceGetGraphicsRunningProcesses_v3",
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMPSComputeRunningProcesses_v3(
    device: nvmlDevice_t,
    info_count: *mut c_uint,
    _infos: *mut nvmlProcessInfo_t,
) -> nvmlReturn_t {
    unsafe {
        empty_list(
            device,
            info_count,
            "nvmlDeviceGetMPSComputeRunningProcesses_v3",
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetProcessUtilization(
    device: nvmlDevice_t,
    utilization: *mut nvmlProcessUtilizationSample_t,
    process_samples_count: *mut c_uint,
    last_seen_time_stamp: c_ulonglong,
) -> nvmlReturn_t {
    run(|sim, t| {
        let count = unsafe { out(process_samples_count) }?;
        let d = dev(sim, device, "nvmlDeviceGetProcessUtilization", t)?;
        let items = sim
            .process_utilization(d, last_seen_time_stamp, t)?
            .into_iter()
            .map(|p| nvmlProcessUtilizationSample_t {
                pid: p.pid,
                timeStamp: p.timestamp_us,
                smUtil: p.sm,
                memUtil: p.mem,
                encUtil: p.enc,
                decUtil: p.dec,
            })
            .collect();
        unsafe { fill(count, utilization, items) }
    })
}
