//! The label text of a holder: the `container`/`namespace`/`pod` suffix on an entity's series,
//! the `gpu_allocation_info` row, DRA and HPC labels, and a process's container labels.
//!
//! Renders with the shared label writer (`base::label_text`), once per join change; it must
//! not look entities up or decide who holds what (that is `join`).

use std::sync::Arc;

use crate::catalogue::labels;
use crate::snapshot::Labels;
use crate::sources::kube::dra::{DraDevice, DraKind};
use crate::sources::kube::meta::{PodIndex, PodMeta};
use crate::sources::kube::pod_labels::pod_label_pairs;
use crate::sources::kubelet::client::ClaimDevice;

use super::options::AttributionOptions;

/// Labels of a container found through its process's cgroup.
pub(super) fn container_labels(
    pods: Option<&PodIndex>,
    uid: &str,
    container_id: Option<&str>,
) -> Labels {
    let mut s = Labels::with_capacity(8);
    let pod = pods.and_then(|p| p.by_uid(uid));
    if let Some(pod) = pod {
        let container = container_id
            .and_then(|id| pods.and_then(|p| p.container_by_id(id)))
            .filter(|(p, _)| p.uid == pod.uid)
            .map(|(_, c)| c.to_owned());
        if let Some(c) = container {
            s.push(labels::CONTAINER.name, c.clone());
        }
        s.push(labels::NAMESPACE.name, pod.namespace.clone());
        s.push(labels::POD.name, pod.name.clone());
    }
    s.push(labels::POD_UID.name, uid);
    s
}

/// One container holding one device (or one share of it).
pub(super) struct Holder<'a> {
    pub(super) namespace: &'a str,
    pub(super) pod: &'a str,
    pub(super) container: &'a str,
    pub(super) resource: &'a str,
    pub(super) replica: Option<u32>,
    pub(super) claim: Option<&'a ClaimDevice>,
    /// The claimed device as the ResourceSlices describe it (DRA holders).
    pub(super) dra_device: Option<&'a DraDevice>,
}

impl Holder<'_> {
    pub(super) fn container_key(&self) -> (&str, &str, &str) {
        (self.namespace, self.pod, self.container)
    }
}

/// The names of the pod labels on device series (dcgm-exporter's old names with
/// `--use-old-namespace`).
pub(super) struct LabelNames {
    pub(super) container: &'static str,
    pub(super) namespace: &'static str,
    pub(super) pod: &'static str,
}

impl LabelNames {
    pub(super) fn new(old: bool) -> Self {
        Self {
            container: labels::CONTAINER.spelt(old),
            namespace: labels::NAMESPACE.spelt(old),
            pod: labels::POD.spelt(old),
        }
    }
}

pub(super) fn meta<'a>(pods: Option<&'a PodIndex>, h: &Holder<'_>) -> Option<&'a Arc<PodMeta>> {
    pods.and_then(|p| p.get(h.namespace, h.pod))
}

/// The labels a holder puts on its device's series, in dcgm-exporter's order: pod labels,
/// then `container`, `dra_*`, `namespace`, `pod`, `pod_uid`, `vgpu`.
pub(super) fn series_suffix(
    opts: &AttributionOptions,
    names: &LabelNames,
    h: &Holder<'_>,
    pods: Option<&PodIndex>,
    vgpu: bool,
) -> Labels {
    let mut s = Labels::with_capacity(8);
    let meta = meta(pods, h);
    if let (Some(allow), Some(m)) = (&opts.pod_labels, meta) {
        for (k, v) in pod_label_pairs(&m.labels, allow) {
            s.push(k, v);
        }
    }
    s.push(names.container, h.container);
    if let Some(c) = h.claim {
        write_dra(&mut s, c, h.dra_device);
    }
    s.push(names.namespace, h.namespace);
    s.push(names.pod, h.pod);
    if opts.pod_uid
        && let Some(m) = meta
    {
        s.push(labels::POD_UID.name, m.uid.clone());
    }
    if vgpu && let Some(r) = h.replica {
        s.push(labels::VGPU.name, r.to_string());
    }
    s
}

/// A DRA holder's labels, in name order as dcgm-exporter writes them: for a MIG device also its
/// profile and UUID as its ResourceSlice gives them (`dra_mig_profile`, `dra_mig_device_uuid`).
pub(super) fn write_dra(s: &mut Labels, c: &ClaimDevice, device: Option<&DraDevice>) {
    let [
        claim,
        namespace,
        device_name,
        driver,
        mig_uuid,
        mig_profile,
        pool,
    ] = labels::DRA;
    s.push(claim.name, c.claim_name.clone());
    s.push(namespace.name, c.claim_namespace.clone());
    s.push(device_name.name, c.device.clone());
    s.push(driver.name, c.driver.clone());
    if let Some(d) = device.filter(|d| d.kind == DraKind::Mig) {
        s.push(mig_uuid.name, d.uuid.clone());
        if let Some(profile) = &d.profile {
            s.push(mig_profile.name, profile.clone());
        }
    }
    s.push(pool.name, c.pool.clone());
}

/// The labels of one `gpu_allocation_info` row after the entity's identity.
pub(super) fn allocation_suffix(
    opts: &AttributionOptions,
    h: &Holder<'_>,
    pods: Option<&PodIndex>,
) -> Labels {
    let mut s = Labels::with_capacity(8);
    s.push(labels::RESOURCE.name, h.resource);
    s.push(labels::NAMESPACE.name, h.namespace);
    s.push(labels::POD.name, h.pod);
    s.push(labels::CONTAINER.name, h.container);
    if let Some(r) = h.replica {
        s.push(labels::VGPU.name, r.to_string());
    }
    if let Some(c) = h.claim {
        write_dra(&mut s, c, h.dra_device);
    }
    if let Some(m) = meta(pods, h) {
        s.push(labels::POD_UID.name, m.uid.clone());
        if let Some(w) = &m.workload {
            s.push(labels::WORKLOAD_KIND.name, w.kind.clone());
            s.push(labels::WORKLOAD_NAME.name, w.name.clone());
        }
        if let Some(allow) = &opts.pod_labels {
            for (k, v) in pod_label_pairs(&m.labels, allow) {
                s.push(k, v);
            }
        }
    }
    s
}
