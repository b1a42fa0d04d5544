//! DCGM 4.x's `dcgmGetNvLinkLinkStatus` as `libdcgm.so.4` exports it (signature of
//! `dcgm_agent.h`, checked against `dcgm_abi::sig` in the tests): one request on the handle,
//! the switches' port states copied into `dcgmNvLinkStatus_v5`.
//!
//! Only the NVSwitches are described (`numGpus` is 0: the GPUs' own links are NVML's in this
//! simulator); at most `DCGM_MAX_NUM_SWITCHES` switches and their first
//! `DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH` ports, the rest of the struct left as the caller set it.

use dcgm_abi as abi;

use super::{check_version, guard, out};
use crate::global;
use crate::proto::{Reply, Request};

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmGetNvLinkLinkStatus(
    handle: abi::dcgmHandle_t,
    status: *mut abi::dcgmNvLinkStatus_v5,
) -> abi::dcgmReturn_t {
    guard(|| {
        let o = unsafe { out(status) }?;
        check_version(o.version, abi::dcgmNvLinkStatus_version5)?;
        let Reply::LinkStatus(switches) = global::call(handle, Request::NvLinkStatus)? else {
            return Err(abi::DCGM_ST_GENERIC_ERROR);
        };
        o.numGpus = 0;
        let n = switches.len().min(abi::DCGM_MAX_NUM_SWITCHES);
        for (slot, (id, states)) in o.nvSwitches.iter_mut().zip(&switches[..n]) {
            slot.entityId = *id;
            slot.linkState.fill(abi::DcgmNvLinkLinkStateNotSupported);
            for (dst, s) in slot.linkState.iter_mut().zip(states) {
                *dst = *s;
            }
        }
        o.numNvSwitches = n as u32;
        Ok(())
    })
}
