//! Event entry points: event sets, supported types, registration and waiting. Events come
//! from the scenario timeline (Xid faults, GPU-lost Xid 79, ECC faults); a set gets a GPU's
//! events from the scenario time of its registration on; a wait returns the next event due
//! that the set has not delivered yet; with none due it blocks (in `state::wait_event`) until
//! one falls due, the simulator is reconfigured or its time set, or the timeout ends.

use std::os::raw::{c_uint, c_ulonglong};
use std::time::Duration;

use nvml_wrapper_sys::bindings::{nvmlDevice_t, nvmlEventData_t, nvmlEventSet_t, nvmlReturn_t};

use super::{answer, dev, guard, out, run};
use crate::handle;
use crate::ret;
use crate::sim::Dev;
use crate::state;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetCreate(set: *mut nvmlEventSet_t) -> nvmlReturn_t {
    run(|sim, _| {
        let o = unsafe { out(set) }?;
        *o = handle::event_set(sim.event_set_create());
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetFree(set: nvmlEventSet_t) -> nvmlReturn_t {
    run(|sim, _| {
        let id = handle::to_event_set(set).ok_or(ret::INVALID_ARGUMENT)?;
        sim.event_set_free(id)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetSupportedEventTypes(
    device: nvmlDevice_t,
    event_types: *mut c_ulonglong,
) -> nvmlReturn_t {
    unsafe {
        answer(
            device,
            event_types,
            "nvmlDeviceGetSupportedEventTypes",
            |s, d, _| s.supported_events(d),
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceRegisterEvents(
    device: nvmlDevice_t,
    event_types: c_ulonglong,
    set: nvmlEventSet_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        let id = handle::to_event_set(set).ok_or(ret::INVALID_ARGUMENT)?;
        let d = dev(sim, device, "nvmlDeviceRegisterEvents", t)?;
        sim.register_events(d, event_types, id, t)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetWait_v2(
    set: nvmlEventSet_t,
    data: *mut nvmlEventData_t,
    timeoutms: c_uint,
) -> nvmlReturn_t {
    guard(|| {
        let o = match unsafe { out(data) } {
            Ok(o) => o,
            Err(code) => return code,
        };
        let Some(id) = handle::to_event_set(set) else {
            return ret::INVALID_ARGUMENT;
        };
        match state::wait_event(id, Duration::from_millis(u64::from(timeoutms))) {
            Ok(Some(e)) => {
                *o = nvmlEventData_t {
                    device: handle::device(Dev::Gpu(e.gpu)),
                    eventType: e.event_type,
                    eventData: e.data,
                    gpuInstanceId: e.gi,
                    computeInstanceId: e.ci,
                };
                ret::SUCCESS
            }
            Ok(None) => ret::TIMEOUT,
            Err(code) => code,
        }
    })
}
