//! Telemetry entry points of physical GPUs: clocks, temperature, power and energy, PCIe,
//! utilization, framebuffer, violation time, clock-event reasons, ECC totals, P-state.
//! On MIG devices these answer NVML_ERROR_NOT_SUPPORTED, except the framebuffer queries,
//! which report the instance's own slice.

use std::os::raw::{c_uint, c_ulonglong};

use nvml_wrapper_sys::bindings::{
    nvmlBAR1Memory_t, nvmlClockType_t, nvmlDevice_t, nvmlEccCounterType_t, nvmlMemory_t,
    nvmlMemory_v2_t, nvmlMemoryErrorType_t, nvmlPcieUtilCounter_t, nvmlPerfPolicyType_t,
    nvmlPstates_t, nvmlReturn_t, nvmlTemperatureSensors_t, nvmlTemperatureThresholds_t,
    nvmlUtilization_t, nvmlViolationTime_t,
};

use super::{answer, dev, out, run};
use crate::ret;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetClockInfo(
    device: nvmlDevice_t,
    type_: nvmlClockType_t,
    clock: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(device, clock, "nvmlDeviceGetClockInfo", |s, d, t| {
            s.clock_mhz(d, type_, false, t)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxClockInfo(
    device: nvmlDevice_t,
    type_: nvmlClockType_t,
    clock: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(device, clock, "nvmlDeviceGetMaxClockInfo", |s, d, t| {
            s.clock_mhz(d, type_, true, t)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetApplicationsClock(
    device: nvmlDevice_t,
    clock_type: nvmlClockType_t,
    clock_mhz: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            clock_mhz,
            "nvmlDeviceGetApplicationsClock",
            |s, d, t| s.app_clock_mhz(d, clock_type, t),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetFanSpeed_v2(
    device: nvmlDevice_t,
    fan: c_uint,
    speed: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(device, speed, "nvmlDeviceGetFanSpeed_v2", |s, d, _| {
            s.fan_speed(d, fan)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTemperature(
    device: nvmlDevice_t,
    sensor_type: nvmlTemperatureSensors_t,
    temp: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(device, temp, "nvmlDeviceGetTemperature", |s, d, t| {
            s.temperature(d, sensor_type, t)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTemperatureThreshold(
    device: nvmlDevice_t,
    threshold_type: nvmlTemperatureThresholds_t,
    temp: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            temp,
            "nvmlDeviceGetTemperatureThreshold",
            |s, d, _| s.temperature_threshold(d, threshold_type),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPowerUsage(
    device: nvmlDevice_t,
    power: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(device, power, "nvmlDeviceGetPowerUsage", |s, d, t| {
            s.power_mw(d, t)
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetEnforcedPowerLimit(
    device: nvmlDevice_t,
    limit: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            limit,
            "nvmlDeviceGetEnforcedPowerLimit",
            |s, d, t| s.power_limit_mw(d, t),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPowerManagementLimit(
    device: nvmlDevice_t,
    limit: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            limit,
            "nvmlDeviceGetPowerManagementLimit",
            |s, d, t| s.power_limit_mw(d, t),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPowerManagementDefaultLimit(
    device: nvmlDevice_t,
    default_limit: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            default_limit,
            "nvmlDeviceGetPowerManagementDefaultLimit",
            |s, d, _| s.default_power_limit_mw(d),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTotalEnergyConsumption(
    device: nvmlDevice_t,
    energy: *mut c_ulonglong,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            energy,
            "nvmlDeviceGetTotalEnergyConsumption",
            |s, d, t| s.energy_mj(d, t),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPcieReplayCounter(
    device: nvmlDevice_t,
    value: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            value,
            "nvmlDeviceGetPcieReplayCounter",
            |s, d, t| s.pcie_replays(d, t),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPcieThroughput(
    device: nvmlDevice_t,
    counter: nvmlPcieUtilCounter_t,
    value: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        answer(device, value, "nvmlDeviceGetPcieThroughput", |s, d, t| {
            s.pcie_throughput(d, counter, t)
        })
    }
}

/// Shared body of the four PCIe link queries.
unsafe fn pcie_link(
    device: nvmlDevice_t,
    value: *mut c_uint,
    func: &str,
    width: bool,
) -> nvmlReturn_t {
    unsafe {
        answer(device, value, func, |s, d, _| {
            let m = s.physical(d)?.model;
            Ok(if width { m.pcie_width } else { m.pcie_gen })
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkGeneration(
    device: nvmlDevice_t,
    curr_link_gen: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        pcie_link(
            device,
            curr_link_gen,
            "nvmlDeviceGetCurrPcieLinkGeneration",
            false,
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrPcieLinkWidth(
    device: nvmlDevice_t,
    curr_link_width: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        pcie_link(
            device,
            curr_link_width,
            "nvmlDeviceGetCurrPcieLinkWidth",
            true,
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkGeneration(
    device: nvmlDevice_t,
    max_link_gen: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        pcie_link(
            device,
            max_link_gen,
            "nvmlDeviceGetMaxPcieLinkGeneration",
            false,
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxPcieLinkWidth(
    device: nvmlDevice_t,
    max_link_width: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        pcie_link(
            device,
            max_link_width,
            "nvmlDeviceGetMaxPcieLinkWidth",
            true,
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUtilizationRates(
    device: nvmlDevice_t,
    utilization: *mut nvmlUtilization_t,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            utilization,
            "nvmlDeviceGetUtilizationRates",
            |s, d, t| {
                let (gpu, memory) = s.utilization(d, t)?;
                Ok(nvmlUtilization_t { gpu, memory })
            },
        )
    }
}

/// Shared body of the encoder and decoder utilization queries.
unsafe fn codec(
    device: nvmlDevice_t,
    utilization: *mut c_uint,
    sampling_period_us: *mut c_uint,
    func: &str,
    decoder: bool,
) -> nvmlReturn_t {
    run(|sim, t| {
        let u = unsafe { out(utilization) }?;
        let p = unsafe { out(sampling_period_us) }?;
        let d = dev(sim, device, func, t)?;
        (*u, *p) = sim.codec_utilization(d, decoder, t)?;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetEncoderUtilization(
    device: nvmlDevice_t,
    utilization: *mut c_uint,
    sampling_period_us: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        codec(
            device,
            utilization,
            sampling_period_us,
            "nvmlDeviceGetEncoderUtilization",
            false,
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetDecoderUtilization(
    device: nvmlDevice_t,
    utilization: *mut c_uint,
    sampling_period_us: *mut c_uint,
) -> nvmlReturn_t {
    unsafe {
        codec(
            device,
            utilization,
            sampling_period_us,
            "nvmlDeviceGetDecoderUtilization",
            true,
        )
    }
}

/// `NVML_STRUCT_VERSION(Memory, 2)`, which callers must put in `nvmlMemory_v2_t.version`.
pub const MEMORY_V2_VERSION: c_uint =
    (std::mem::size_of::<nvmlMemory_v2_t>() | (2 << 24)) as c_uint;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    device: nvmlDevice_t,
    memory: *mut nvmlMemory_v2_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        let o = unsafe { out(memory) }?;
        if o.version != MEMORY_V2_VERSION {
            return Err(ret::ARGUMENT_VERSION_MISMATCH);
        }
        let d = dev(sim, device, "nvmlDeviceGetMemoryInfo_v2", t)?;
        let m = sim.memory(d, t)?;
        o.total = m.total;
        o.reserved = m.reserved;
        o.free = m.free;
        o.used = m.used;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo(
    device: nvmlDevice_t,
    memory: *mut nvmlMemory_t,
) -> nvmlReturn_t {
    unsafe {
        answer(device, memory, "nvmlDeviceGetMemoryInfo", |s, d, t| {
            let m = s.memory(d, t)?;
            // Version 1 counts the reserved part as used.
            Ok(nvmlMemory_t {
                total: m.total,
                free: m.free,
                used: m.used + m.reserved,
            })
        })
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetBAR1MemoryInfo(
    device: nvmlDevice_t,
    bar1_memory: *mut nvmlBAR1Memory_t,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            bar1_memory,
            "nvmlDeviceGetBAR1MemoryInfo",
            |s, d, t| {
                let (bar1Total, bar1Free, bar1Used) = s.bar1(d, t)?;
                Ok(nvmlBAR1Memory_t {
                    bar1Total,
                    bar1Free,
                    bar1Used,
                })
            },
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetViolationStatus(
    device: nvmlDevice_t,
    perf_policy_type: nvmlPerfPolicyType_t,
    viol_time: *mut nvmlViolationTime_t,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            viol_time,
            "nvmlDeviceGetViolationStatus",
            |s, d, t| {
                let (referenceTime, violationTime) = s.violation(d, perf_policy_type, t)?;
                Ok(nvmlViolationTime_t {
                    referenceTime,
                    violationTime,
                })
            },
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksEventReasons(
    device: nvmlDevice_t,
    clocks_event_reasons: *mut c_ulonglong,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            clocks_event_reasons,
            "nvmlDeviceGetCurrentClocksEventReasons",
            |s, d, t| s.clock_reasons(d, t),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCurrentClocksThrottleReasons(
    device: nvmlDevice_t,
    clocks_throttle_reasons: *mut c_ulonglong,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            clocks_throttle_reasons,
            "nvmlDeviceGetCurrentClocksThrottleReasons",
            |s, d, t| s.clock_reasons(d, t),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetTotalEccErrors(
    device: nvmlDevice_t,
    error_type: nvmlMemoryErrorType_t,
    counter_type: nvmlEccCounterType_t,
    ecc_counts: *mut c_ulonglong,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            ecc_counts,
            "nvmlDeviceGetTotalEccErrors",
            |s, d, t| s.ecc_total(d, error_type, counter_type, t),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPerformanceState(
    device: nvmlDevice_t,
    p_state: *mut nvmlPstates_t,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            p_state,
            "nvmlDeviceGetPerformanceState",
            |s, d, t| s.pstate(d, t),
        )
    }
}
