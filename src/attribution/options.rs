//! What attribution is asked to do: which sources run and how ([`KubernetesOptions`]), and what
//! the join writes: label names and switches chosen by the flags ([`AttributionOptions`]).
//!
//! Plain data; it must not read sources or build the join.

use std::path::PathBuf;
use std::time::Duration;

use crate::sources::kube::pod_labels::LabelAllowlist;
use crate::sources::kubelet::client::KubeletOptions;

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

/// Pod attribution as `-k` (and the `--kubernetes-*`, `--pod-resources-*` flags) asks for it,
/// as [`super::start`] takes it: the kubelet source's options, the join's, and which other
/// sources run.
#[derive(Debug, Clone)]
pub struct KubernetesOptions {
    /// The kubelet pod-resources source: `--pod-resources-kubelet-socket`,
    /// `--pod-resources-refresh-interval`, `--pod-resources-timeout`.
    pub kubelet: KubeletOptions,
    /// What the join writes on the series. Its pod-label allow-list is the flags'; the
    /// labels-per-series room of the loaded counter set is applied when attribution starts.
    pub join: AttributionOptions,
    /// `--kubernetes-enable-dra`: watch the node's ResourceSlices.
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

impl KubernetesOptions {
    /// The flags' defaults with the given socket (tests and embedding).
    pub fn with_socket(socket: PathBuf) -> Self {
        Self {
            kubelet: KubeletOptions {
                socket,
                interval: Duration::from_secs(5),
                timeout: Duration::from_secs(10),
            },
            join: AttributionOptions::default(),
            dra: false,
            pod_metadata: true,
            process_metrics: true,
            proc_root: PathBuf::from("/proc"),
            node_name: None,
        }
    }
}
