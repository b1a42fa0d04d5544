//! The pod attribution settings (`-k` and the `--kubernetes-*`, `--pod-resources-*` and
//! `--nvidia-resource-names` flags) checked into attribution's options, a
//! [`KubernetesOptions`], with a warning for each such flag given without `-k`. It must not contact the kubelet or the API server.

use std::time::Duration;

use super::{ConfigError, Setting, Settings};
use crate::attribution::{AttributionOptions, KubernetesOptions};
use crate::sources::kubelet::client::KubeletOptions;

impl Settings {
    /// The pod attribution settings; `None` without `-k` and `--simulate`.
    pub(super) fn kubernetes_options(
        &self,
        warnings: &mut Vec<String>,
    ) -> Result<Option<KubernetesOptions>, ConfigError> {
        let cli = &self.cli;
        for (flag, ms) in [
            (
                Setting::PodResourcesRefreshInterval,
                cli.kubernetes.pod_resources_refresh_interval,
            ),
            (
                Setting::PodResourcesTimeout,
                cli.kubernetes.pod_resources_timeout,
            ),
        ] {
            self.interval_ms(flag, ms)?;
        }
        let allowlist = crate::sources::kube::pod_labels::LabelAllowlist::parse(Some(
            &cli.kubernetes
                .kubernetes_pod_label_allowlist_regex
                .join(","),
        ))?;
        if !cli.kubernetes.enabled && cli.simulator.simulate.is_none() {
            for (set, flag) in [
                (
                    cli.kubernetes.kubernetes_enable_pod_labels,
                    "--kubernetes-enable-pod-labels",
                ),
                (
                    cli.kubernetes.kubernetes_enable_pod_uid,
                    "--kubernetes-enable-pod-uid",
                ),
                (
                    cli.kubernetes.kubernetes_virtual_gpus,
                    "--kubernetes-virtual-gpus",
                ),
                (
                    cli.kubernetes.kubernetes_enable_dra,
                    "--kubernetes-enable-dra",
                ),
                (
                    !cli.kubernetes
                        .kubernetes_pod_label_allowlist_regex
                        .is_empty(),
                    "--kubernetes-pod-label-allowlist-regex",
                ),
                (
                    !cli.kubernetes.nvidia_resource_names.is_empty(),
                    "--nvidia-resource-names",
                ),
            ] {
                if set {
                    warnings.push(format!(
                        "{flag} has no effect without -k/--kubernetes: no pod attribution"
                    ));
                }
            }
            return Ok(None);
        }
        let node_name = std::env::var("NODE_NAME")
            .ok()
            .map(|n| n.trim().to_owned())
            .filter(|n| !n.is_empty());
        Ok(Some(KubernetesOptions {
            kubelet: KubeletOptions {
                socket: cli.kubernetes.pod_resources_kubelet_socket.clone(),
                interval: Duration::from_millis(cli.kubernetes.pod_resources_refresh_interval),
                timeout: Duration::from_millis(cli.kubernetes.pod_resources_timeout),
            },
            join: AttributionOptions {
                extra_resources: cli
                    .kubernetes
                    .nvidia_resource_names
                    .iter()
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect(),
                virtual_gpus: cli.kubernetes.kubernetes_virtual_gpus,
                pod_labels: cli
                    .kubernetes
                    .kubernetes_enable_pod_labels
                    .then_some(allowlist),
                pod_uid: cli.kubernetes.kubernetes_enable_pod_uid,
                use_old_namespace: cli.exposition.use_old_namespace,
            },
            dra: cli.kubernetes.kubernetes_enable_dra,
            // DRA needs the ResourceSlices, not the pods: under the GPU Operator's GPUCluster
            // the exporter may read ResourceSlices only (`--kubernetes-pod-metadata=false`).
            pod_metadata: cli.kubernetes.kubernetes_pod_metadata
                || cli.kubernetes.kubernetes_enable_pod_labels
                || cli.kubernetes.kubernetes_enable_pod_uid,
            process_metrics: cli.kubernetes.kubernetes_process_metrics,
            proc_root: cli.kubernetes.proc_root.clone(),
            node_name,
        }))
    }
}
