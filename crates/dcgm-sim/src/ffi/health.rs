//! DCGM 4.x's health-watch functions as `libdcgm.so.4` exports them (`dcgmHealthSet`,
//! `dcgmHealthGet`, `dcgmHealthCheck`; signatures of `dcgm_agent.h`, checked against
//! `dcgm_abi::sig` in the tests). Arguments in, one request on the handle, the answer copied
//! into `dcgmHealthResponse_v5`.

use std::ffi::c_uint;

use dcgm_abi::{self as abi, set_c_text};

use super::{check_version, guard, out};
use crate::global;
use crate::proto::{Reply, Request};

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmHealthSet(
    handle: abi::dcgmHandle_t,
    group: abi::dcgmGpuGrp_t,
    systems: c_uint,
) -> abi::dcgmReturn_t {
    guard(|| {
        let req = Request::HealthSet {
            group: group as u64,
            systems,
        };
        match global::call(handle, req)? {
            Reply::Done => Ok(()),
            _ => Err(abi::DCGM_ST_GENERIC_ERROR),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmHealthGet(
    handle: abi::dcgmHandle_t,
    group: abi::dcgmGpuGrp_t,
    systems: *mut c_uint,
) -> abi::dcgmReturn_t {
    guard(|| {
        let o = unsafe { out(systems) }?;
        let req = Request::HealthGet {
            group: group as u64,
        };
        match global::call(handle, req)? {
            Reply::Systems(s) => {
                *o = s;
                Ok(())
            }
            _ => Err(abi::DCGM_ST_GENERIC_ERROR),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmHealthCheck(
    handle: abi::dcgmHandle_t,
    group: abi::dcgmGpuGrp_t,
    results: *mut abi::dcgmHealthResponse_v5,
) -> abi::dcgmReturn_t {
    guard(|| {
        let o = unsafe { out(results) }?;
        check_version(o.version, abi::dcgmHealthResponse_version5)?;
        let req = Request::HealthCheck {
            group: group as u64,
        };
        let Reply::Health(overall, list) = global::call(handle, req)? else {
            return Err(abi::DCGM_ST_GENERIC_ERROR);
        };
        let n = list.len().min(o.incidents.len());
        for (slot, i) in o.incidents.iter_mut().zip(&list[..n]) {
            slot.system = i.system;
            slot.health = i.health;
            slot.error.code = i.code;
            set_c_text(&mut slot.error.msg, &i.message);
            slot.entityInfo = abi::dcgmGroupEntityPair_t {
                entityGroupId: i.entity.group,
                entityId: i.entity.id,
            };
        }
        o.overallHealth = overall;
        o.incidentCount = n as c_uint;
        Ok(())
    })
}
