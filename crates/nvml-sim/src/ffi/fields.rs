//! `nvmlDeviceGetFieldValues`: fills each requested entry with its own return code, value
//! type, value and timestamp. The call itself succeeds even when entries do not; a lost GPU or
//! an invalid handle fails the whole call. Each entry's `scopeId` is passed on (a link index
//! for the NVLink throughput fields, `UINT_MAX` for their sum).

use std::os::raw::c_int;

use nvml_wrapper_sys::bindings::{
    nvmlDevice_t, nvmlFieldValue_t, nvmlReturn_t, nvmlValue_t,
    nvmlValueType_enum_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG,
};

use super::{dev, run};
use crate::ret;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetFieldValues(
    device: nvmlDevice_t,
    values_count: c_int,
    values: *mut nvmlFieldValue_t,
) -> nvmlReturn_t {
    run(|sim, t| {
        let count = usize::try_from(values_count).map_err(|_| ret::INVALID_ARGUMENT)?;
        if count > 0 && values.is_null() {
            return Err(ret::INVALID_ARGUMENT);
        }
        let d = dev(sim, device, "nvmlDeviceGetFieldValues", t)?;
        if count == 0 {
            return Ok(());
        }
        // SAFETY: non-null and valid for `count` entries (NVML contract).
        let entries = unsafe { std::slice::from_raw_parts_mut(values, count) };
        let timestamp = sim.clock.unix_us(t);
        for e in entries {
            e.timestamp = timestamp;
            e.latencyUsec = 0;
            e.valueType = nvmlValueType_enum_NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
            match sim.field_scoped(d, e.fieldId, e.scopeId, t) {
                Ok(v) => {
                    e.nvmlReturn = ret::SUCCESS;
                    e.value = nvmlValue_t { ullVal: v };
                }
                Err(code) => {
                    e.nvmlReturn = code;
                    e.value = nvmlValue_t { ullVal: 0 };
                }
            }
        }
        Ok(())
    })
}
