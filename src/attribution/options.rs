//! What attribution is asked to do: which sources run and how ([`KubernetesConfig`]), and what
//! the join writes: label names and switches chosen by the flags ([`AttributionOptions`]).
//!
//! Plain data; it must not read sources or build the join.

use std::path::PathBuf;
use std::time::Duration;

use crate::sources::kube::pod_labels::LabelAllowlist;

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
    pub use_old_namespace: bool,
}

/// Pod attribution settings (from the `--kubernetes-*` and pod-resources flags).
#[derive(Debug, Clone)]
pub struct KubernetesConfig {
    /// `--pod-resources-kubelet-socket`.
    pub socket: PathBuf,
    /// `--pod-resources-refresh-interval`.
    pub refresh: Duration,
    /// `--pod-resources-timeout`.
    pub timeout: Duration,
    /// `--nvidia-resource-names`.
    pub extra_resources: Vec<String>,
    /// `--kubernetes-virtual-gpus`.
    pub virtual_gpus: bool,
    /// `--kubernetes-enable-pod-labels` with its parsed allow-list; `None` when off.
    pub pod_labels: Option<LabelAllowlist>,
    /// `--kubernetes-enable-pod-uid`.
    pub pod_uid: bool,
    /// `--kubernetes-enable-dra`.
    pub dra: bool,
    /// Whether to watch pods in the Kubernetes API.
    pub pod_metadata: bool,
    /// Whether to attribute processes to containers.
    pub process_metrics: bool,
    /// `--proc-root`.
    pub proc_root: PathBuf,
    /// `NODE_NAME`, scoping the API watches to this node.
    pub node_name: Option<String>,
}

impl KubernetesConfig {
    /// The flags' defaults with the given socket (tests and embedding).
    pub fn with_socket(socket: PathBuf) -> Self {
        Self {
            socket,
            refresh: Duration::from_secs(5),
            timeout: Duration::from_secs(10),
            extra_resources: Vec::new(),
            virtual_gpus: false,
            pod_labels: None,
            pod_uid: false,
            dra: false,
            pod_metadata: true,
            process_metrics: true,
            proc_root: PathBuf::from("/proc"),
            node_name: None,
        }
    }
}
