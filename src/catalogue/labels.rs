//! The names of the labels the exporter writes on a device's series, in one table: what
//! identifies a device ([`IDENTITY`], the host label), what describes it ([`DESCRIPTION`]),
//! who holds it (the holder labels, [`DRA`]), and the labels a family adds of its own. The exposition spells every label from here, the labels-per-series budget
//! counts from here, the pod labels' reserved names are these, and the one spelling of the
//! model name (`--replace-blanks-in-model-name`) is [`model_name`].
//!
//! The label shape ([`LabelShape`], `--series-labels`) says where the descriptions and the
//! holders go: on every series (`full`, dcgm-exporter's shape) or only on their info series
//! (`lean`: `gpu_device_info` and `gpu_allocation_info`), as kube-state-metrics keeps a pod's
//! description on `kube_pod_info`. Plain data; no I/O.

use std::borrow::Cow;

/// One label the exporter writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label {
    /// Its name, as native and dcgm-exporter 4.x spell it.
    pub name: &'static str,
    /// Its name under `--use-old-namespace` (dcgm-exporter 1.x), where that differs.
    pub old_name: Option<&'static str>,
    /// Only on a MIG instance's series.
    pub mig: bool,
}

impl Label {
    const fn of(name: &'static str) -> Self {
        Self {
            name,
            old_name: None,
            mig: false,
        }
    }

    const fn mig(name: &'static str) -> Self {
        Self {
            name,
            old_name: None,
            mig: true,
        }
    }

    const fn renamed(name: &'static str, old: &'static str) -> Self {
        Self {
            name,
            old_name: Some(old),
            mig: false,
        }
    }

    /// Its name, in dcgm-exporter 1.x's spelling when `old` (`--use-old-namespace`).
    pub fn spelt(&self, old: bool) -> &'static str {
        match (old, self.old_name) {
            (true, Some(o)) => o,
            _ => self.name,
        }
    }
}

/// NVML's index of the physical GPU.
pub const GPU: Label = Label::of("gpu");
/// The physical GPU's UUID.
pub const UUID: Label = Label::renamed("UUID", "uuid");
/// The physical GPU's PCI bus id.
pub const PCI_BUS_ID: Label = Label::of("pci_bus_id");
/// The GPU's device node, `nvidia<minor>`.
pub const DEVICE: Label = Label::of("device");
/// The GPU's marketing name (see [`model_name`]).
pub const MODEL_NAME: Label = Label::of("modelName");
/// A MIG instance's profile, e.g. `1g.10gb`.
pub const GPU_I_PROFILE: Label = Label::mig("GPU_I_PROFILE");
/// A MIG instance's GPU instance id.
pub const GPU_I_ID: Label = Label::mig("GPU_I_ID");
/// A MIG instance's UUID.
pub const MIG_UUID: Label = Label::mig("mig_uuid");
/// The host label as native and dcgm-exporter 4.8.2 spell it.
pub const HOSTNAME: Label = Label::of("Hostname");
/// The host label as dcgm-exporter 4.8.3 and later spell it.
pub const HOSTNAME_LOWER: Label = Label::of("hostname");
/// The holding container.
pub const CONTAINER: Label = Label::renamed("container", "container_name");
/// The holding pod's namespace.
pub const NAMESPACE: Label = Label::renamed("namespace", "pod_namespace");
/// The holding pod.
pub const POD: Label = Label::renamed("pod", "pod_name");
/// The holding pod's UID.
pub const POD_UID: Label = Label::of("pod_uid");
/// The time-sliced replica a holder has (`--kubernetes-virtual-gpus`).
pub const VGPU: Label = Label::of("vgpu");
/// The HPC job holding the device (`--hpc-job-mapping-dir`).
pub const HPC_JOB: Label = Label::of("hpc_job");
/// The resource the kubelet allocated the device as (`gpu_allocation_info`).
pub const RESOURCE: Label = Label::of("resource");
/// The kind of the holding pod's controller (`gpu_allocation_info`).
pub const WORKLOAD_KIND: Label = Label::of("workload_kind");
/// The name of the holding pod's controller (`gpu_allocation_info`).
pub const WORKLOAD_NAME: Label = Label::of("workload_name");
/// A DRA holder's claim.
pub const DRA_CLAIM_NAME: Label = Label::of("dra_claim_name");
/// A DRA holder's claim's namespace.
pub const DRA_CLAIM_NAMESPACE: Label = Label::of("dra_claim_namespace");
/// A DRA holder's device in the driver's pool.
pub const DRA_DEVICE_NAME: Label = Label::of("dra_device_name");
/// A DRA holder's driver.
pub const DRA_DRIVER_NAME: Label = Label::of("dra_driver_name");
/// A DRA holder's pool.
pub const DRA_POOL_NAME: Label = Label::of("dra_pool_name");
/// A DRA holder's MIG device's profile, from its ResourceSlice.
pub const DRA_MIG_PROFILE: Label = Label::of("dra_mig_profile");
/// A DRA holder's MIG device's UUID, from its ResourceSlice.
pub const DRA_MIG_DEVICE_UUID: Label = Label::of("dra_mig_device_uuid");

/// The GPU's UUID as dcgm-exporter's link-entity rows spell it.
pub const LINK_GPU_UUID: Label = Label::of("gpu_uuid");
/// The model name as dcgm-exporter's link-entity rows spell it.
pub const LINK_MODEL_NAME: Label = Label::of("model_name");

/// The identity labels in the order every series writes them (the host label comes after
/// them, the descriptions of the `full` shape between `UUID` and the MIG labels).
pub const IDENTITY: [Label; 5] = [GPU, UUID, GPU_I_PROFILE, GPU_I_ID, MIG_UUID];

/// The descriptions, in the order they are written.
pub const DESCRIPTION: [Label; 3] = [PCI_BUS_ID, DEVICE, MODEL_NAME];

/// The labels of a DRA holder, in the order they are written (name order, as dcgm-exporter
/// writes them; the two MIG labels only for a MIG device).
pub const DRA: [Label; 7] = [
    DRA_CLAIM_NAME,
    DRA_CLAIM_NAMESPACE,
    DRA_DEVICE_NAME,
    DRA_DRIVER_NAME,
    DRA_MIG_DEVICE_UUID,
    DRA_MIG_PROFILE,
    DRA_POOL_NAME,
];

/// Every label of the table.
pub const ALL: [Label; 28] = [
    GPU,
    UUID,
    PCI_BUS_ID,
    DEVICE,
    MODEL_NAME,
    GPU_I_PROFILE,
    GPU_I_ID,
    MIG_UUID,
    HOSTNAME,
    HOSTNAME_LOWER,
    CONTAINER,
    NAMESPACE,
    POD,
    POD_UID,
    VGPU,
    HPC_JOB,
    RESOURCE,
    WORKLOAD_KIND,
    WORKLOAD_NAME,
    DRA_CLAIM_NAME,
    DRA_CLAIM_NAMESPACE,
    DRA_DEVICE_NAME,
    DRA_DRIVER_NAME,
    DRA_POOL_NAME,
    DRA_MIG_PROFILE,
    DRA_MIG_DEVICE_UUID,
    LINK_GPU_UUID,
    LINK_MODEL_NAME,
];

/// Labels a family adds of its own after the device's (the Xid, window and health-watch
/// labels), and those Prometheus attaches at scrape time: no pod label may take them.
pub const FAMILY_AND_SCRAPE: [&str; 11] = [
    "err_code",
    "err_msg",
    "xid",
    "clock_event",
    "window_size_in_ms",
    "health_watch",
    "health_error_code",
    "nvlink",
    "__name__",
    "job",
    "instance",
];

/// Every name a pod label may not take, in either spelling: the table's and
/// [`FAMILY_AND_SCRAPE`].
pub fn reserved() -> impl Iterator<Item = &'static str> {
    ALL.iter()
        .flat_map(|l| std::iter::once(l.name).chain(l.old_name))
        .chain(FAMILY_AND_SCRAPE)
}

/// The model name as every series that carries it spells it: spaces replaced by `-` under
/// `--replace-blanks-in-model-name`.
pub fn model_name(name: &str, replace_blanks: bool) -> Cow<'_, str> {
    if replace_blanks && name.contains(' ') {
        Cow::Owned(name.replace(' ', "-"))
    } else {
        Cow::Borrowed(name)
    }
}

/// Where descriptions and holders go (`--series-labels`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LabelShape {
    /// Each series carries the device's identity and the node; descriptions are on
    /// `gpu_device_info`, holders on `gpu_allocation_info` and the per-holder families.
    /// Native's default.
    #[default]
    Lean,
    /// Every series carries the descriptions and its holders, as dcgm-exporter writes them
    /// (one copy of the series per holder). The `dcgm-*` profiles' only shape.
    Full,
}

impl LabelShape {
    /// `true` where every series carries the descriptions and the holders.
    pub fn full(self) -> bool {
        self == Self::Full
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_reserved_in_both_spellings() {
        let mut seen = std::collections::BTreeSet::new();
        for name in reserved() {
            assert!(seen.insert(name), "{name} listed twice");
        }
        for name in [
            "UUID",
            "uuid",
            "pod_name",
            "container_name",
            "Hostname",
            "hostname",
        ] {
            assert!(seen.contains(name), "{name}");
        }
    }

    #[test]
    fn the_model_name_is_spelt_once() {
        assert_eq!(
            model_name("NVIDIA H100 80GB HBM3", true),
            "NVIDIA-H100-80GB-HBM3"
        );
        assert_eq!(
            model_name("NVIDIA H100 80GB HBM3", false),
            "NVIDIA H100 80GB HBM3"
        );
    }
}
