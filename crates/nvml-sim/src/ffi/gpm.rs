//! GPM (GPU performance monitoring) entry points: support queries, sample allocation, device
//! and MIG-instance samples, and metrics between two samples.

use std::ffi::CStr;
use std::os::raw::c_uint;

use nvml_wrapper_sys::bindings::{
    NVML_GPM_METRICS_GET_VERSION, NVML_GPM_SUPPORT_VERSION, nvmlDevice_t, nvmlGpmMetricsGet_t,
    nvmlGpmSample_t, nvmlGpmSupport_t, nvmlReturn_t,
};

use super::{answer, dev, out, run};
use crate::handle;
use crate::ret;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmQueryDeviceSupport(
    device: nvmlDevice_t,
    gpm_support: *mut nvmlGpmSupport_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        let o = unsafe { out(gpm_support) }?;
        if o.version != NVML_GPM_SUPPORT_VERSION {
            return Err(ret::ARGUMENT_VERSION_MISMATCH);
        }
        let d = dev(sim, device, "nvmlGpmQueryDeviceSupport", t)?;
        o.isSupportedDevice = c_uint::from(sim.gpm_supported(d)?);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmQueryIfStreamingEnabled(
    device: nvmlDevice_t,
    state: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            state,
            "nvmlGpmQueryIfStreamingEnabled",
            |s, d, _| {
                if s.gpm_supported(d)? {
                    Ok(0)
                } else {
                    Err(ret::NOT_SUPPORTED)
                }
            },
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmSampleAlloc(gpm_sample: *mut nvmlGpmSample_t) -> nvmlReturn_t {
    run(|sim, _| {
        let o = unsafe { out(gpm_sample) }?;
        *o = handle::sample(sim.sample_alloc());
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmSampleFree(gpm_sample: nvmlGpmSample_t) -> nvmlReturn_t {
    run(|sim, _| {
        let id = handle::to_sample(gpm_sample).ok_or(ret::INVALID_ARGUMENT)?;
        sim.sample_free(id)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmSampleGet(
    device: nvmlDevice_t,
    gpm_sample: nvmlGpmSample_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        let id = handle::to_sample(gpm_sample).ok_or(ret::INVALID_ARGUMENT)?;
        let d = dev(sim, device, "nvmlGpmSampleGet", t)?;
        sim.sample_get(d, None, id, t)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmMigSampleGet(
    device: nvmlDevice_t,
    gpu_instance_id: c_uint,
    gpm_sample: nvmlGpmSample_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        let id = handle::to_sample(gpm_sample).ok_or(ret::INVALID_ARGUMENT)?;
        let d = dev(sim, device, "nvmlGpmMigSampleGet", t)?;
        sim.sample_get(d, Some(gpu_instance_id), id, t)
    })
}

/// (short name, long name, unit) of the metrics the simulator computes.
fn metric_info(id: c_uint) -> Option<(&'static CStr, &'static CStr, &'static CStr)> {
    Some(match id {
        1 => (c"GR_UTIL", c"Graphics engine utilization", c"%"),
        2 => (c"SM_UTIL", c"SM utilization", c"%"),
        3 => (c"SM_OCCUP", c"SM occupancy", c"%"),
        5 => (c"ANY_TENSOR_UTIL", c"Any tensor utilization", c"%"),
        10 => (c"DRAM_BW_UTIL", c"DRAM bandwidth utilization", c"%"),
        11 => (c"FP64_UTIL", c"FP64 pipe utilization", c"%"),
        12 => (c"FP32_UTIL", c"FP32 pipe utilization", c"%"),
        13 => (c"FP16_UTIL", c"FP16 pipe utilization", c"%"),
        20 => (c"PCIE_TX", c"PCIe traffic transmitted", c"MiB/sec"),
        21 => (c"PCIE_RX", c"PCIe traffic received", c"MiB/sec"),
        60 => (c"NVLINK_TOTAL_RX", c"NVLink traffic received", c"MiB/sec"),
        61 => (
            c"NVLINK_TOTAL_TX",
            c"NVLink traffic transmitted",
            c"MiB/sec",
        ),
        _ => return None,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpmMetricsGet(metrics_get: *mut nvmlGpmMetricsGet_t) -> nvmlReturn_t {
    run(|sim, _| {
        let req = unsafe { out(metrics_get) }?;
        if req.version != NVML_GPM_METRICS_GET_VERSION {
            return Err(ret::ARGUMENT_VERSION_MISMATCH);
        }
        let n = req.numMetrics as usize;
        if n > req.metrics.len() {
            return Err(ret::INVALID_ARGUMENT);
        }
        let s1 = handle::to_sample(req.sample1).ok_or(ret::INVALID_ARGUMENT)?;
        let s2 = handle::to_sample(req.sample2).ok_or(ret::INVALID_ARGUMENT)?;
        let ids: Vec<c_uint> = req.metrics.iter().take(n).map(|m| m.metricId).collect();
        let results = sim.metrics_get(s1, s2, &ids)?;
        for (m, r) in req.metrics.iter_mut().zip(results) {
            match r {
                Ok(v) => {
                    m.nvmlReturn = ret::SUCCESS;
                    m.value = v;
                }
                Err(code) => {
                    m.nvmlReturn = code;
                    m.value = 0.0;
                }
            }
            if let Some((short, long, unit)) = metric_info(m.metricId) {
                // NVML hands out pointers to static strings; callers only read them.
                m.metricInfo.shortName = short.as_ptr().cast_mut();
                m.metricInfo.longName = long.as_ptr().cast_mut();
                m.metricInfo.unit = unit.as_ptr().cast_mut();
            }
        }
        Ok(())
    })
}
