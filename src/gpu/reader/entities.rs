//! Which entities exist: a GPU's identity (UUID, name, PCI bus id, device minor number), its
//! MIG GPU instances (one entity per GPU instance) and their ids.
//!
//! It reads NVML only to enumerate and identify; it must not read field values.

use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper::{Device, Nvml};

use crate::gpu::text;
use crate::snapshot::{EntityId, MigIdentity};

/// Cached identity of a physical GPU.
#[derive(Debug, Clone)]
pub(super) struct Ident {
    pub(super) uuid: String,
    pub(super) name: String,
    pub(super) pci_bus_id: String,
    /// The minor number of its device node (`/dev/nvidia<minor>`), as last read; `None` where
    /// NVML does not serve it. Read every tick: a GPU bound again may come back with another.
    pub(super) minor: Option<u32>,
}

impl Ident {
    /// The identity labels of the physical GPU at NVML index `gpu`; `device` names its device
    /// node, as dcgm-exporter's label does (the index where the minor number is not known).
    pub(super) fn entity_id(&self, gpu: u32) -> EntityId {
        EntityId {
            gpu,
            uuid: self.uuid.clone(),
            pci_bus_id: self.pci_bus_id.clone(),
            device: crate::snapshot::device_node(self.minor, gpu),
            model_name: self.name.clone(),
            mig: None,
        }
    }
}

/// The identity of the GPU behind `dev`, which answered with `uuid`.
pub(super) fn read_ident(dev: &Device<'_>, uuid: String) -> Result<Ident, NvmlError> {
    Ok(Ident {
        uuid,
        name: dev.name()?,
        pci_bus_id: dev.pci_info()?.bus_id,
        minor: minor(dev)?,
    })
}

/// The device node's minor number; `None` where NVML does not serve it (a lost GPU is an
/// error, so that the tick's read stops there).
pub(super) fn minor(dev: &Device<'_>) -> Result<Option<u32>, NvmlError> {
    match dev.minor_number() {
        Ok(m) => Ok(Some(m)),
        Err(NvmlError::GpuLost) => Err(NvmlError::GpuLost),
        Err(_) => Ok(None),
    }
}

/// Lists MIG devices (handle + identity), ordered by GPU instance id, one per GPU instance.
pub fn enumerate_mig(
    nvml: &'static Nvml,
    dev: &Device<'static>,
) -> Result<Vec<(Device<'static>, MigIdentity)>, NvmlError> {
    let max = dev.mig_device_count()?;
    let mut out = Vec::new();
    for i in 0..max {
        let mig = match dev.mig_device_by_index(i) {
            Ok(m) => m,
            Err(NvmlError::NotFound | NvmlError::InvalidArg) => continue,
            Err(e) => return Err(e),
        };
        let gi = instance_id(nvml, &mig, true)?;
        let ci = instance_id(nvml, &mig, false).unwrap_or(0);
        let uuid = mig.uuid()?;
        let name = mig.name()?;
        let profile = text::mig_profile_from_name(&name)
            .unwrap_or("unknown")
            .to_owned();
        out.push((
            mig,
            MigIdentity {
                profile,
                gpu_instance_id: gi,
                compute_instance_id: ci,
                uuid,
            },
        ));
    }
    Ok(one_per_gpu_instance(out))
}

/// Orders MIG devices by GPU instance id and keeps one per GPU instance (the lowest compute
/// instance id). A GPU instance split into several compute instances shows one MIG device per
/// compute instance, but its memory, GPM sample and `GPU_I_ID` label are the GPU instance's:
/// exporting each would give duplicate series.
pub(super) fn one_per_gpu_instance<T>(mut devs: Vec<(T, MigIdentity)>) -> Vec<(T, MigIdentity)> {
    devs.sort_by_key(|(_, m)| (m.gpu_instance_id, m.compute_instance_id));
    devs.dedup_by_key(|(_, m)| m.gpu_instance_id);
    devs
}

/// `nvmlDeviceGetGpuInstanceId` / `nvmlDeviceGetComputeInstanceId` on a MIG handle; not
/// wrapped by nvml-wrapper, so called through its sys layer.
pub(super) fn instance_id(
    nvml: &Nvml,
    mig: &Device<'_>,
    gpu_instance: bool,
) -> Result<u32, NvmlError> {
    let lib = nvml.lib();
    let sym = crate::gpu::sym(if gpu_instance {
        lib.nvmlDeviceGetGpuInstanceId.as_ref()
    } else {
        lib.nvmlDeviceGetComputeInstanceId.as_ref()
    })?;
    let mut id: u32 = 0;
    // SAFETY: the handle comes from nvml-wrapper and is valid while `nvml` lives; `id` is a
    // valid out-pointer for the duration of the call.
    let rc = unsafe { sym(mig.handle(), &mut id) };
    nvml_try(rc)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mig(gi: u32, ci: u32) -> ((), MigIdentity) {
        (
            (),
            MigIdentity {
                profile: "1g.10gb".into(),
                gpu_instance_id: gi,
                compute_instance_id: ci,
                uuid: format!("MIG-{gi}-{ci}"),
            },
        )
    }

    #[test]
    fn one_entity_per_gpu_instance_lowest_compute_instance() {
        let got = one_per_gpu_instance(vec![mig(9, 1), mig(7, 0), mig(9, 0), mig(8, 2)]);
        let ids: Vec<(u32, u32)> = got
            .iter()
            .map(|(_, m)| (m.gpu_instance_id, m.compute_instance_id))
            .collect();
        assert_eq!(ids, vec![(7, 0), (8, 2), (9, 0)]);
    }
}
