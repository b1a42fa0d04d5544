//! DCGM's health watches, as dcgm-exporter reads them for `DCGM_EXP_GPU_HEALTH_STATUS`: one
//! group of every GPU DCGM lists with every watch on (`dcgmHealthSet(DCGM_HEALTH_WATCH_ALL)`),
//! and each tick one `dcgmHealthCheck`, turned into the result of each of a GPU's eleven
//! watches (`PCIE` … `DRIVER` and `ALL`): pass with `DCGM_FR_OK` unless an incident names the
//! watch, the last incident of a watch winning.
//!
//! Runs on the DCGM thread only, through the session that owns the handle. It must not log
//! or wait on anything but DCGM.

use std::collections::HashMap;

use dcgm_abi::{
    DCGM_FE_GPU, DCGM_FR_OK, DCGM_GROUP_EMPTY, DCGM_HEALTH_RESULT_PASS, DCGM_HEALTH_WATCH_ALL,
    DCGM_ST_OK, GPU_WATCHES, Zeroed, dcgmHandle_t, dcgmHealthResponse_v5,
    dcgmHealthResponse_version5, fr_name, watch_name,
};

use super::library::Api;
use crate::snapshot::HealthWatch;

/// A DCGM call that failed: its name and return code (the session words it).
pub type Failed = (&'static str, i32);

fn call(name: &'static str, rc: i32) -> Result<(), Failed> {
    if rc == DCGM_ST_OK {
        Ok(())
    } else {
        Err((name, rc))
    }
}

/// The health group of a session: its DCGM group id, its GPUs (DCGM id → UUID) and the
/// response buffer (1 MB, allocated once).
pub struct HealthGroup {
    id: usize,
    gpus: HashMap<u32, String>,
    response: Box<dcgmHealthResponse_v5>,
}

/// Each GPU's watches, by UUID.
pub type GpuHealth = HashMap<String, Vec<HealthWatch>>;

/// Every watch passing, in dcgm-exporter's order.
fn all_pass() -> Vec<HealthWatch> {
    GPU_WATCHES
        .iter()
        .filter_map(|w| watch_name(*w))
        .map(|watch| HealthWatch {
            watch,
            code: fr_name(DCGM_FR_OK),
            result: DCGM_HEALTH_RESULT_PASS,
        })
        .collect()
}

impl HealthGroup {
    /// Makes the group of `gpus` (DCGM id, UUID) and turns every health watch on.
    pub fn make(api: &Api, handle: dcgmHandle_t, gpus: Vec<(u32, String)>) -> Result<Self, Failed> {
        let mut id = 0usize;
        let name = c"gpu-exporter-health";
        // SAFETY: valid name and out pointer.
        let rc = unsafe { (api.group_create)(handle, DCGM_GROUP_EMPTY, name.as_ptr(), &mut id) };
        call("dcgmGroupCreate", rc)?;
        let made = Self {
            id,
            gpus: gpus.into_iter().collect(),
            response: dcgmHealthResponse_v5::zeroed(),
        };
        for gpu in made.gpus.keys() {
            // SAFETY: plain values.
            let rc = unsafe { (api.group_add)(handle, id, DCGM_FE_GPU, *gpu) };
            call("dcgmGroupAddEntity", rc)?;
        }
        // SAFETY: plain values.
        let rc = unsafe { (api.health_set)(handle, id, DCGM_HEALTH_WATCH_ALL) };
        call("dcgmHealthSet", rc)?;
        Ok(made)
    }

    /// One `dcgmHealthCheck`: every GPU of the group with its eleven watches.
    pub fn check(&mut self, api: &Api, handle: dcgmHandle_t) -> Result<GpuHealth, Failed> {
        let r = &mut *self.response;
        r.version = dcgmHealthResponse_version5;
        r.incidentCount = 0;
        // SAFETY: a response with its version word; DCGM writes at most its incident array.
        let rc = unsafe { (api.health_check)(handle, self.id, r) };
        call("dcgmHealthCheck", rc)?;
        let mut out: GpuHealth = self
            .gpus
            .values()
            .map(|uuid| (uuid.clone(), all_pass()))
            .collect();
        let n = (r.incidentCount as usize).min(r.incidents.len());
        for i in &r.incidents[..n] {
            if i.entityInfo.entityGroupId != DCGM_FE_GPU {
                continue;
            }
            let Some(watches) = self
                .gpus
                .get(&i.entityInfo.entityId)
                .and_then(|uuid| out.get_mut(uuid))
            else {
                continue;
            };
            let Some(name) = watch_name(i.system) else {
                continue;
            };
            if let Some(w) = watches.iter_mut().find(|w| w.watch == name) {
                w.code = fr_name(i.error.code);
                w.result = i.health;
            }
        }
        Ok(out)
    }

    /// Destroys the group (errors ignored: it goes with the handle anyway).
    pub fn destroy(self, api: &Api, handle: dcgmHandle_t) {
        // SAFETY: a group this handle made.
        unsafe { (api.group_destroy)(handle, self.id) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_without_incidents_passes_every_watch_in_dcgm_exporters_order() {
        let w = all_pass();
        let names: Vec<&str> = w.iter().map(|w| w.watch).collect();
        assert_eq!(
            names,
            [
                "PCIE", "NVLINK", "PMU", "MCU", "MEM", "SM", "INFOROM", "THERMAL", "POWER",
                "DRIVER", "ALL"
            ]
        );
        assert!(w.iter().all(|w| w.code == "DCGM_FR_OK" && w.result == 0));
    }
}
