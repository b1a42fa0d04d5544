//! What the join writes: label names and switches chosen by the flags ([`AttributionOptions`]).
//!
//! Plain data; it must not read sources or build the join.

use crate::sources::kube::labels::LabelAllowlist;

/// The NVIDIA DRA driver's name: its claims that match no ResourceSlice device are reported.
pub const NVIDIA_DRA_DRIVER: &str = "gpu.nvidia.com";

/// How holders are turned into labels.
#[derive(Debug, Clone, Default)]
pub struct AttributionOptions {
    /// `--nvidia-resource-names`: resources matched besides the `nvidia.com/*` GPU names.
    pub extra_resources: Vec<String>,
    /// `--kubernetes-virtual-gpus`: one copy of each series per holder, with `vgpu`.
    pub virtual_gpus: bool,
    /// `--kubernetes-enable-pod-labels` (with its allow-list): pod labels on the series.
    pub pod_labels: Option<LabelAllowlist>,
    /// `--kubernetes-enable-pod-uid`: `pod_uid` on the series.
    pub pod_uid: bool,
    /// `--use-old-namespace`: `pod_name`, `pod_namespace`, `container_name`.
    pub old_namespace: bool,
}
