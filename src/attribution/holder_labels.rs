//! The label text of a holder: the `container`/`namespace`/`pod` suffix on an entity's series,
//! the `gpu_allocation_info` row, DRA and HPC labels, and a process's container labels.
//!
//! Renders with the shared label writer (`base::label_text`), once per join change; it must
//! not look entities up or decide who holds what (that is `join`).

use std::sync::Arc;

use crate::snapshot::Labels;
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
            s.push("container", c.clone());
        }
        s.push("namespace", pod.namespace.clone());
        s.push("pod", pod.name.clone());
    }
    s.push("pod_uid", uid);
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
        if old {
            Self {
                container: "container_name",
                namespace: "pod_namespace",
                pod: "pod_name",
            }
        } else {
            Self {
                container: "container",
                namespace: "namespace",
                pod: "pod",
            }
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
        write_dra(&mut s, c);
    }
    s.push(names.namespace, h.namespace);
    s.push(names.pod, h.pod);
    if opts.pod_uid
        && let Some(m) = meta
    {
        s.push("pod_uid", m.uid.clone());
    }
    if vgpu && let Some(r) = h.replica {
        s.push("vgpu", r.to_string());
    }
    s
}

pub(super) fn write_dra(s: &mut Labels, c: &ClaimDevice) {
    s.push("dra_claim_name", c.claim_name.clone());
    s.push("dra_claim_namespace", c.claim_namespace.clone());
    s.push("dra_device_name", c.device.clone());
    s.push("dra_driver_name", c.driver.clone());
    s.push("dra_pool_name", c.pool.clone());
}

/// The labels of one `gpu_allocation_info` row after the entity's identity.
pub(super) fn allocation_suffix(
    opts: &AttributionOptions,
    h: &Holder<'_>,
    pods: Option<&PodIndex>,
) -> Labels {
    let mut s = Labels::with_capacity(8);
    s.push("resource", h.resource);
    s.push("namespace", h.namespace);
    s.push("pod", h.pod);
    s.push("container", h.container);
    if let Some(r) = h.replica {
        s.push("vgpu", r.to_string());
    }
    if let Some(c) = h.claim {
        write_dra(&mut s, c);
    }
    if let Some(m) = meta(pods, h) {
        s.push("pod_uid", m.uid.clone());
        if let Some(w) = &m.workload {
            s.push("workload_kind", w.kind.clone());
            s.push("workload_name", w.name.clone());
        }
        if let Some(allow) = &opts.pod_labels {
            for (k, v) in pod_label_pairs(&m.labels, allow) {
                s.push(k, v);
            }
        }
    }
    s
}
