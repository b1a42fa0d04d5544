//! MIG queries: mode, device count, MIG handles by index, parent and instance ids.

use super::{Dev, NvmlResult, Sim};
use crate::model::MAX_MIG_DEVICES;
use crate::ret;

impl Sim {
    /// `nvmlDeviceGetMigMode`: (current, pending).
    pub fn mig_mode(&self, dev: Dev) -> NvmlResult<(u32, u32)> {
        let g = self.physical_only(dev)?;
        let gpu = self.gpu(g)?;
        if !gpu.model.mig_capable() {
            return Err(ret::NOT_SUPPORTED);
        }
        let m = u32::from(gpu.mig_enabled);
        Ok((m, m))
    }

    /// `nvmlDeviceGetMaxMigDeviceCount`: 7 in MIG mode, 0 otherwise (as NVML documents).
    pub fn max_mig_devices(&self, dev: Dev) -> NvmlResult<u32> {
        let g = self.physical_only(dev)?;
        Ok(if self.gpu(g)?.mig_enabled {
            MAX_MIG_DEVICES
        } else {
            0
        })
    }

    /// MIG instance uids present on GPU `g` at `t`, in MIG device index order.
    pub fn mig_devices(&self, g: usize, t: f64) -> Vec<usize> {
        self.scenario
            .gpu(g)
            .and_then(|gpu| gpu.layout_at(t))
            .map(|l| l.members.iter().map(|m| m.uid).collect())
            .unwrap_or_default()
    }

    /// `nvmlDeviceGetMigDeviceHandleByIndex`.
    pub fn mig_handle_by_index(&self, dev: Dev, index: u32, t: f64) -> NvmlResult<Dev> {
        let Dev::Gpu(g) = dev else {
            return Err(ret::INVALID_ARGUMENT);
        };
        if !self.gpu(g)?.model.mig_capable() {
            return Err(ret::NOT_SUPPORTED);
        }
        self.mig_devices(g, t)
            .get(index as usize)
            .map(|uid| Dev::Mig(g, *uid))
            .ok_or(ret::NOT_FOUND)
    }

    /// `nvmlDeviceGetDeviceHandleFromMigDeviceHandle`.
    pub fn mig_parent(&self, dev: Dev) -> NvmlResult<Dev> {
        match dev {
            Dev::Mig(g, _) => Ok(Dev::Gpu(g)),
            Dev::Gpu(_) => Err(ret::INVALID_ARGUMENT),
        }
    }

    /// `nvmlDeviceGetGpuInstanceId` / `nvmlDeviceGetComputeInstanceId`.
    pub fn instance_ids(&self, dev: Dev) -> NvmlResult<(u32, u32)> {
        match dev {
            Dev::Mig(g, uid) => self
                .gpu(g)?
                .instances
                .get(uid)
                .map(|i| (i.gi, i.ci))
                .ok_or(ret::INVALID_ARGUMENT),
            Dev::Gpu(_) => Err(ret::NOT_SUPPORTED),
        }
    }
}
