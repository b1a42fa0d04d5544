//! The NVLink and fabric entry points through the exported C functions, as the exporter calls
//! them: link state, error counters, field values with a link as `scopeId`, and the fabric
//! info structs (v1, and v2/v3 through the versioned call).
//!
//! They share the process-wide state with the other ABI tests, so each must take `SERIAL`
//! (through `setup` / `setup_text`) before its first call.

use std::mem::zeroed;
use std::ptr;

use nvml_wrapper_sys::bindings::*;

use super::super::fields::nvmlDeviceGetFieldValues;
use super::super::nvlink::*;
use super::{handle, setup, setup_text};
use crate::ffi::control::nvmlSimSetTime;
use crate::ffi::system::nvmlInit_v2;
use crate::ret;

/// `nvmlDeviceGetNvLinkState` as (return code, state).
fn state(d: nvmlDevice_t, link: u32) -> (nvmlReturn_t, nvmlEnableState_t) {
    let mut s: nvmlEnableState_t = 7;
    let r = unsafe { nvmlDeviceGetNvLinkState(d, link, &mut s) };
    (r, s)
}

/// `nvmlDeviceGetNvLinkErrorCounter` as a result.
fn errors(d: nvmlDevice_t, link: u32, counter: u32) -> Result<u64, nvmlReturn_t> {
    let mut v = 0u64;
    match unsafe { nvmlDeviceGetNvLinkErrorCounter(d, link, counter, &mut v) } {
        0 => Ok(v),
        e => Err(e),
    }
}

/// One `nvmlDeviceGetFieldValues` call for `(field id, scope)` entries: each entry's result.
fn scoped(d: nvmlDevice_t, req: &[(u32, u32)]) -> Vec<Result<u64, nvmlReturn_t>> {
    let mut vals: Vec<nvmlFieldValue_t> = req
        .iter()
        .map(|(id, scope)| {
            let mut v: nvmlFieldValue_t = unsafe { zeroed() };
            v.fieldId = *id;
            v.scopeId = *scope;
            v
        })
        .collect();
    let n = vals.len() as i32;
    assert_eq!(
        unsafe { nvmlDeviceGetFieldValues(d, n, vals.as_mut_ptr()) },
        ret::SUCCESS
    );
    vals.iter()
        .map(|v| match v.nvmlReturn {
            0 => Ok(unsafe { v.value.ullVal }),
            e => Err(e),
        })
        .collect()
}

#[test]
fn link_state_and_errors_through_the_abi() {
    let _g = setup(c"incidents", 12.0);
    let gpu2 = handle(2);
    assert_eq!(state(gpu2, 0), (ret::SUCCESS, 1));
    assert_eq!(state(gpu2, 17), (ret::SUCCESS, 1));
    assert_eq!(state(gpu2, 18).0, ret::INVALID_ARGUMENT);
    assert_eq!(
        unsafe { nvmlDeviceGetNvLinkState(gpu2, 0, ptr::null_mut()) },
        ret::INVALID_ARGUMENT
    );
    // crc_flit = 40 spread over 18 links from 10 s: 3 on links 0-3, 2 on the others.
    assert_eq!(errors(gpu2, 0, 2), Ok(3));
    assert_eq!(errors(gpu2, 4, 2), Ok(2));
    assert_eq!(
        (0..18)
            .map(|l| errors(gpu2, l, 2).unwrap_or(0))
            .sum::<u64>(),
        40
    );
    assert_eq!(errors(gpu2, 0, 4), Ok(0));
    assert_eq!(errors(gpu2, 18, 0), Err(ret::INVALID_ARGUMENT));
    assert_eq!(errors(gpu2, 0, 9), Err(ret::INVALID_ARGUMENT));
    assert_eq!(
        unsafe { nvmlDeviceGetNvLinkErrorCounter(gpu2, 0, 0, ptr::null_mut()) },
        ret::INVALID_ARGUMENT
    );
    // GPU 4 is lost from 16 s.
    unsafe { nvmlSimSetTime(20.0) };
    assert_eq!(state(handle_lost(4), 0).0, ret::GPU_IS_LOST);
}

/// The handle of GPU `i` as it was handed out before it was lost.
fn handle_lost(i: usize) -> nvmlDevice_t {
    crate::handle::device(crate::sim::Dev::Gpu(i))
}

#[test]
fn boards_without_nvlink_answer_not_supported() {
    let _g = setup(c"a100-l4", 30.0);
    let (a100, l4) = (handle(0), handle(1));
    assert_eq!(state(a100, 11), (ret::SUCCESS, 1));
    assert_eq!(state(a100, 12).0, ret::INVALID_ARGUMENT);
    assert_eq!(errors(a100, 0, 4), Err(ret::NOT_SUPPORTED));
    for l in [0, 17, 18] {
        assert_eq!(state(l4, l).0, ret::NOT_SUPPORTED);
        assert_eq!(errors(l4, l, 0), Err(ret::NOT_SUPPORTED));
    }
    let v = scoped(l4, &[(138, 0), (139, u32::MAX)]);
    assert_eq!(v, vec![Err(ret::NOT_SUPPORTED), Err(ret::NOT_SUPPORTED)]);
}

#[test]
fn scoped_throughput_through_field_values() {
    let _g = setup(c"h100-mig", 45.0);
    let gpu0 = handle(0);
    let mut req: Vec<(u32, u32)> = (0..18).flat_map(|l| [(138, l), (139, l)]).collect();
    req.extend([(138, u32::MAX), (139, u32::MAX), (138, 18), (139, 1000)]);
    let v = scoped(gpu0, &req);
    let tx: u64 = (0..18).map(|l| v[2 * l].unwrap_or(0)).sum();
    let rx: u64 = (0..18).map(|l| v[2 * l + 1].unwrap_or(0)).sum();
    assert_eq!(Ok(tx), v[36]);
    assert_eq!(Ok(rx), v[37]);
    assert!(tx > 1_000_000, "{tx}");
    assert_eq!(v[38], Err(ret::INVALID_ARGUMENT));
    assert_eq!(v[39], Err(ret::INVALID_ARGUMENT));
    // Other fields ignore the scope.
    let v = scoped(gpu0, &[(186, 0), (186, 7), (83, 0), (83, u32::MAX)]);
    assert!(v[0].is_ok() && v[2].is_ok(), "{v:?}");
    assert_eq!((&v[0], &v[2]), (&v[1], &v[3]));
}

#[test]
fn a_link_fault_through_the_abi() {
    let _g = setup_text(
        "nvlink-down",
        "[[gpus]]\nmodel = \"H200-SXM5-141GB\"\nworkload = { kind = \"training\" }\n\
         [[faults]]\nat = 20\ngpu = 0\nkind = \"nvlink_down\"\nlink = 3\nuntil = 50\n",
    );
    unsafe {
        nvmlSimSetTime(25.0);
        assert_eq!(nvmlInit_v2(), ret::SUCCESS);
    }
    let d = handle(0);
    assert_eq!(state(d, 3), (ret::SUCCESS, 0));
    assert_eq!(state(d, 2), (ret::SUCCESS, 1));
    let at25 = scoped(d, &[(138, 3)]);
    unsafe { nvmlSimSetTime(45.0) };
    assert_eq!(scoped(d, &[(138, 3)]), at25);
    unsafe { nvmlSimSetTime(50.0) };
    assert_eq!(state(d, 3), (ret::SUCCESS, 1));
}

#[test]
fn fabric_info_versions() {
    let _g = setup(c"h100-mig", 10.0);
    let gpu0 = handle(0);
    // v3: everything, health summary included.
    let mut v3: nvmlGpuFabricInfoV_t = unsafe { zeroed() };
    v3.version = FABRIC_INFO_V3;
    assert_eq!(
        unsafe { nvmlDeviceGetGpuFabricInfoV(gpu0, &mut v3) },
        ret::SUCCESS
    );
    assert_eq!((v3.state, v3.status, v3.healthSummary), (3, 0, 1));
    assert_eq!(v3.healthMask, 426);
    assert_ne!(v3.clusterUuid, [0; 16]);
    assert!(v3.cliqueId > 0);
    // v2 as the exporter's fallback passes it: the summary byte is left alone.
    let mut v2: nvmlGpuFabricInfoV_t = unsafe { zeroed() };
    v2.version = FABRIC_INFO_V2;
    v2.healthSummary = 0xAB;
    assert_eq!(
        unsafe { nvmlDeviceGetGpuFabricInfoV(gpu0, &mut v2) },
        ret::SUCCESS
    );
    assert_eq!(
        (v2.clusterUuid, v2.healthMask),
        (v3.clusterUuid, v3.healthMask)
    );
    assert_eq!(v2.healthSummary, 0xAB);
    // Any other version word.
    let mut bad: nvmlGpuFabricInfoV_t = unsafe { zeroed() };
    bad.version = FABRIC_INFO_V3 + 1;
    assert_eq!(
        unsafe { nvmlDeviceGetGpuFabricInfoV(gpu0, &mut bad) },
        ret::ARGUMENT_VERSION_MISMATCH
    );
    assert_eq!(
        unsafe { nvmlDeviceGetGpuFabricInfoV(gpu0, ptr::null_mut()) },
        ret::INVALID_ARGUMENT
    );
    // v1.
    let mut v1: nvmlGpuFabricInfo_t = unsafe { zeroed() };
    assert_eq!(
        unsafe { nvmlDeviceGetGpuFabricInfo(gpu0, &mut v1) },
        ret::SUCCESS
    );
    assert_eq!(
        (v1.clusterUuid, v1.cliqueId, v1.state, v1.status),
        (v3.clusterUuid, v3.cliqueId, 3, 0)
    );
    assert_eq!(FABRIC_INFO_V3, 40 | 3 << 24);
    assert_eq!(FABRIC_INFO_V2, 36 | 2 << 24);
}

#[test]
fn fabric_not_supported_and_switched_off() {
    let _g = setup(c"a100-l4", 10.0);
    let mut v3: nvmlGpuFabricInfoV_t = unsafe { zeroed() };
    v3.version = FABRIC_INFO_V3;
    for i in 0..2 {
        assert_eq!(
            unsafe { nvmlDeviceGetGpuFabricInfoV(handle(i), &mut v3) },
            ret::NOT_SUPPORTED
        );
    }
    drop(_g);
    let _g = setup_text(
        "fabric-off",
        "[[gpus]]\nmodel = \"GB200\"\nunsupported = [\"nvmlDeviceGetGpuFabricInfoV\", \
         \"nvmlDeviceGetNvLinkState\"]\n",
    );
    unsafe {
        nvmlSimSetTime(1.0);
        assert_eq!(nvmlInit_v2(), ret::SUCCESS);
        assert_eq!(
            nvmlDeviceGetGpuFabricInfoV(handle(0), &mut v3),
            ret::NOT_SUPPORTED
        );
        let mut v1: nvmlGpuFabricInfo_t = zeroed();
        assert_eq!(nvmlDeviceGetGpuFabricInfo(handle(0), &mut v1), ret::SUCCESS);
    }
    assert_eq!(state(handle(0), 0).0, ret::NOT_SUPPORTED);
    assert_eq!(errors(handle(0), 0, 0), Ok(0));
}
