//! The one conversion from a validated [`Config`] to each component's options, one method per
//! component: the NVML reader's ([`ReaderOptions`]), the health model's, the Kubernetes
//! outputs' ([`Config::notify_options`]), the encoder's ([`EncodeOptions`]), the HTTP
//! handlers' ([`ServeOptions`]), the serving limits ([`Limits`]), the DCGM client's
//! ([`DcgmOptions`]), and attribution's: the kubelet source's ([`KubeletOptions`]) and the
//! join's ([`AttributionOptions`]). The daemon, `gpu-exporter check`, the tests and the
//! benchmarks all build their options here.
//!
//! Plain data mapping, nothing checked (`validate.rs` did): it must not refuse a value, read
//! files, the environment or NVML.

use crate::attribution::{AttributionOptions, KubernetesConfig};
use crate::dcgm::DcgmOptions;
use crate::exposition::EncodeOptions;
use crate::gpu::reader::{NvlinkLinks, ReaderOptions};
use crate::notify::{CALL_TIMEOUT, EVENT_RETRY_FOR, NotifyOptions, QUEUE};
use crate::serve::{Limits, ServeOptions};
use crate::sources::kubelet::client::KubeletOptions;

use super::Config;

impl Config {
    /// What the NVML reader selects, shapes and times.
    pub fn reader_options(&self) -> ReaderOptions {
        let s = &self.sampling;
        ReaderOptions {
            devices: s.devices.clone(),
            mig_repeat_device_fields: s.mig_repeat_device_fields,
            xid_count_window: s.xid_count_window,
            clock_events_count_window: s.clock_events_count_window,
            xid_initialized_codes: s.xid_initialized_codes.clone(),
            collections: std::sync::Arc::clone(&s.collections),
            nvlink_throughput: s.nvlink_links == NvlinkLinks::PerLink,
            ..ReaderOptions::default()
        }
    }

    /// The Kubernetes writes (Node conditions, Events) on node `node`, the node attribution
    /// runs for; `None` when neither is asked for (or, which validation rules out, no node is
    /// known).
    pub fn notify_options(&self, node: Option<&str>) -> Option<NotifyOptions> {
        let h = &self.health;
        let node = node.filter(|n| !n.is_empty() && h.writes())?;
        Some(NotifyOptions {
            node: node.to_owned(),
            conditions: h.node_conditions,
            events: h.events,
            interval: self.sampling.tick_interval,
            timeout: CALL_TIMEOUT,
            queue: QUEUE,
            event_retry_for: EVENT_RETRY_FOR,
        })
    }

    /// The health model's settings.
    pub fn health_options(&self) -> crate::health::HealthOptions {
        crate::health::HealthOptions {
            hold: self.health.hold,
        }
    }

    /// How the exposition spells the identity labels and types the families.
    pub fn encode_options(&self) -> EncodeOptions {
        let e = &self.exposition;
        EncodeOptions {
            hostname: self.hostname.clone(),
            host_label: e.profile.host_label(),
            gauge_fields: e.profile.gauge_fields(),
            types_as_written: e.profile.types_as_written(),
            use_old_namespace: e.use_old_namespace,
            replace_blanks_in_model_name: e.replace_blanks_in_model_name,
            nvlink_links: self.sampling.nvlink_links,
            own_families: e.own_families,
            cardinality: e.cardinality.clone(),
            shape: e.shape,
        }
    }

    /// How the HTTP handlers behave beyond serving the published output.
    pub fn serve_options(&self) -> ServeOptions {
        ServeOptions {
            max_concurrent_scrapes: self.serving.max_concurrent_scrapes,
            health_require_gpus: self.health.require_gpus,
            node: self.hostname.clone(),
        }
    }

    /// The bounds on the serving path.
    pub fn limits(&self) -> Limits {
        Limits {
            read: self.serving.read_timeout,
            write: self.serving.write_timeout,
            max_connections: self.serving.max_connections,
        }
    }

    /// The DCGM client's options, its deadline set by the tick interval.
    pub fn dcgm_options(&self) -> DcgmOptions {
        let d = &self.dcgm;
        DcgmOptions {
            mode: d.mode.clone(),
            lib: d.lib.clone(),
            max_keep_age: d.max_keep_age,
            max_keep_samples: d.max_keep_samples,
            deadline: crate::dcgm::deadline_for(self.sampling.tick_interval),
            switches: d.switches.clone(),
            log_severity: d.log_severity,
        }
    }

    /// The kubelet pod-resources source's options for the pod-attribution settings `k` in
    /// force (`self.kubernetes`).
    pub fn kubelet_options(&self, k: &KubernetesConfig) -> KubeletOptions {
        KubeletOptions {
            socket: k.socket.clone(),
            interval: k.refresh,
            timeout: k.timeout,
        }
    }

    /// What the attribution join writes on the series, for the pod-attribution settings `k`
    /// in force, the pod labels kept to `pod_label_room` per series ([`Config::fit_labels`]).
    pub fn attribution_options(
        &self,
        k: &KubernetesConfig,
        pod_label_room: Option<usize>,
    ) -> AttributionOptions {
        let mut pod_labels = k.pod_labels.clone();
        if let (Some(allow), Some(room)) = (pod_labels.as_mut(), pod_label_room) {
            allow.set_max(room);
        }
        AttributionOptions {
            extra_resources: k.extra_resources.clone(),
            virtual_gpus: k.virtual_gpus,
            pod_labels,
            pod_uid: k.pod_uid,
            use_old_namespace: self.exposition.use_old_namespace,
        }
    }

    /// The configuration of `args` (flags after the program name, as on a command line, read
    /// as the daemon reads them), with the defaults for the rest: how tests and benchmarks get
    /// the options a node with those flags runs with.
    pub fn from_args(args: &[&str]) -> Result<Self, super::ConfigError> {
        let argv = std::iter::once("gpu-exporter")
            .chain(args.iter().copied())
            .map(std::ffi::OsString::from);
        super::Cli::try_parse_go_style(argv)
            .map_err(|e| super::ConfigError::Args(e.to_string()))?
            .validate()
    }
}
