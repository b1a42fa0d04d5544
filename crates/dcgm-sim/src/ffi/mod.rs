//! The C ABI of the simulated `libdcgm.so.4`: DCGM 4.x's functions with DCGM's names and
//! signatures (`dcgm_abi::sig`) in `api` (the health watches in `health`, the NVLink status
//! in `links`), and the
//! simulator's own control functions (`dcgmSim*`) in `control`.
//!
//! This layer only checks pointers and version words, turns arguments into a
//! [`crate::proto::Request`], runs it on the handle (`global::call`) and copies the answer
//! out. It never panics across the boundary: every entry point runs inside [`guard`].
//!
//! # Safety
//!
//! Every pointer argument is null (answered `DCGM_ST_BADPARAM`) or valid for the access
//! DCGM's headers document, and arrays are at least as long as the counts passed with them.
#![allow(non_snake_case, clippy::missing_safety_doc)]

pub mod api;
pub mod control;
pub mod health;
pub mod links;

use std::panic::{AssertUnwindSafe, catch_unwind};

use dcgm_abi as abi;

/// Runs `f`, catching panics (a panic becomes `DCGM_ST_GENERIC_ERROR`).
pub(crate) fn guard(f: impl FnOnce() -> Result<(), i32>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => abi::DCGM_ST_OK,
        Ok(Err(code)) => code,
        Err(_) => abi::DCGM_ST_GENERIC_ERROR,
    }
}

/// An output pointer as a reference; null → BADPARAM.
pub(crate) unsafe fn out<'a, T>(p: *mut T) -> Result<&'a mut T, i32> {
    // SAFETY: the caller passes null or a pointer valid for writes (DCGM contract).
    unsafe { p.as_mut() }.ok_or(abi::DCGM_ST_BADPARAM)
}

/// Checks a struct's version word against the one this library implements.
pub(crate) fn check_version(found: u32, wanted: u32) -> Result<(), i32> {
    if found == wanted {
        Ok(())
    } else {
        Err(abi::DCGM_ST_VER_MISMATCH)
    }
}

#[cfg(test)]
mod tests {
    use dcgm_abi::sig;

    use super::api::*;

    /// Every exported DCGM function has exactly the signature `dcgm_abi::sig` gives the client
    /// (a mismatch does not compile).
    #[test]
    fn exports_have_dcgms_signatures() {
        let _: sig::dcgmInit = dcgmInit;
        let _: sig::dcgmShutdown = dcgmShutdown;
        let _: sig::dcgmStartEmbedded = dcgmStartEmbedded;
        let _: sig::dcgmStartEmbedded_v2 = dcgmStartEmbedded_v2;
        let _: sig::dcgmStopEmbedded = dcgmStopEmbedded;
        let _: sig::dcgmConnect_v2 = dcgmConnect_v2;
        let _: sig::dcgmDisconnect = dcgmDisconnect;
        let _: sig::dcgmVersionInfo = dcgmVersionInfo;
        let _: sig::dcgmHostengineVersionInfo = dcgmHostengineVersionInfo;
        let _: sig::dcgmGetAllSupportedDevices = dcgmGetAllSupportedDevices;
        let _: sig::dcgmGetDeviceAttributes = dcgmGetDeviceAttributes;
        let _: sig::dcgmGetEntityGroupEntities = dcgmGetEntityGroupEntities;
        let _: sig::dcgmGetGpuInstanceHierarchy = dcgmGetGpuInstanceHierarchy;
        let _: sig::dcgmGroupCreate = dcgmGroupCreate;
        let _: sig::dcgmGroupDestroy = dcgmGroupDestroy;
        let _: sig::dcgmGroupAddEntity = dcgmGroupAddEntity;
        let _: sig::dcgmFieldGroupCreate = dcgmFieldGroupCreate;
        let _: sig::dcgmFieldGroupDestroy = dcgmFieldGroupDestroy;
        let _: sig::dcgmWatchFields = dcgmWatchFields;
        let _: sig::dcgmUnwatchFields = dcgmUnwatchFields;
        let _: sig::dcgmUpdateAllFields = dcgmUpdateAllFields;
        let _: sig::dcgmEntitiesGetLatestValues = dcgmEntitiesGetLatestValues;
        let _: sig::dcgmProfGetSupportedMetricGroups = dcgmProfGetSupportedMetricGroups;
        let _: sig::dcgmErrorString = dcgmErrorString;
        let _: sig::dcgmGetNvLinkLinkStatus = super::links::dcgmGetNvLinkLinkStatus;
        let _: sig::dcgmErrorString = errorString;
        let _: sig::dcgmHealthSet = super::health::dcgmHealthSet;
        let _: sig::dcgmHealthGet = super::health::dcgmHealthGet;
        let _: sig::dcgmHealthCheck = super::health::dcgmHealthCheck;
    }
}
