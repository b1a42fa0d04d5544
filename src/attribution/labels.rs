//! The label text of a holder: the `container`/`namespace`/`pod` suffix on an entity's series,
//! the `gpu_allocation_info` row, DRA and HPC labels, and a process's container labels.
//!
//! Renders with the shared label writer (`base::label_text`), once per join change; it must
//! not look entities up or decide who holds what (that is `join`).

use std::fmt::Write as _;
use std::sync::Arc;

use crate::base::label_text::write_label;
use crate::sources::kube::labels::pod_label_pairs;
use crate::sources::kube::meta::{PodIndex, PodMeta};
use crate::sources::kubelet::client::ClaimDevice;

use super::options::AttributionOptions;

/// Labels of a container found through its process's cgroup.
pub(super) fn container_labels(
    pods: Option<&PodIndex>,
    uid: &str,
    container_id: Option<&str>,
) -> String {
    let mut s = String::new();
    let mut first = false;
    let pod = pods.and_then(|p| p.by_uid(uid));
    if let Some(pod) = pod {
        let container = container_id
            .and_then(|id| pods.and_then(|p| p.container_by_id(id)))
            .filter(|(p, _)| p.uid == pod.uid)
            .map(|(_, c)| c.to_owned());
        if let Some(c) = container {
            write_label(&mut s, &mut first, "container", &c);
        }
        write_label(&mut s, &mut first, "namespace", &pod.namespace);
        write_label(&mut s, &mut first, "pod", &pod.name);
    }
    write_label(&mut s, &mut first, "pod_uid", uid);
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
) -> String {
    let mut s = String::new();
    let mut first = false;
    let meta = meta(pods, h);
    if let (Some(allow), Some(m)) = (&opts.pod_labels, meta) {
        for (k, v) in pod_label_pairs(&m.labels, allow) {
            write_label(&mut s, &mut first, &k, &v);
        }
    }
    write_label(&mut s, &mut first, names.container, h.container);
    if let Some(c) = h.claim {
        write_dra(&mut s, c);
    }
    write_label(&mut s, &mut first, names.namespace, h.namespace);
    write_label(&mut s, &mut first, names.pod, h.pod);
    if opts.pod_uid
        && let Some(m) = meta
    {
        write_label(&mut s, &mut first, "pod_uid", &m.uid);
    }
    if vgpu && let Some(r) = h.replica {
        let _ = write!(s, ",vgpu=\"{r}\"");
    }
    s
}

pub(super) fn write_dra(s: &mut String, c: &ClaimDevice) {
    let mut first = false;
    write_label(s, &mut first, "dra_claim_name", &c.claim_name);
    write_label(s, &mut first, "dra_claim_namespace", &c.claim_namespace);
    write_label(s, &mut first, "dra_device_name", &c.device);
    write_label(s, &mut first, "dra_driver_name", &c.driver);
    write_label(s, &mut first, "dra_pool_name", &c.pool);
}

/// The labels of one `gpu_allocation_info` row after the entity's identity.
pub(super) fn allocation_suffix(
    opts: &AttributionOptions,
    h: &Holder<'_>,
    pods: Option<&PodIndex>,
) -> String {
    let mut s = String::new();
    let mut first = false;
    write_label(&mut s, &mut first, "resource", h.resource);
    write_label(&mut s, &mut first, "namespace", h.namespace);
    write_label(&mut s, &mut first, "pod", h.pod);
    write_label(&mut s, &mut first, "container", h.container);
    if let Some(r) = h.replica {
        let _ = write!(s, ",vgpu=\"{r}\"");
    }
    if let Some(c) = h.claim {
        write_dra(&mut s, c);
    }
    if let Some(m) = meta(pods, h) {
        write_label(&mut s, &mut first, "pod_uid", &m.uid);
        if let Some(w) = &m.workload {
            write_label(&mut s, &mut first, "workload_kind", &w.kind);
            write_label(&mut s, &mut first, "workload_name", &w.name);
        }
        if let Some(allow) = &opts.pod_labels {
            for (k, v) in pod_label_pairs(&m.labels, allow) {
                write_label(&mut s, &mut first, &k, &v);
            }
        }
    }
    s
}
