//! The options of the components whose settings a validated [`Config`] holds in groups that
//! several of them read, one method per component: the health model's, the Kubernetes
//! outputs' ([`Config::notify_options`]), the encoder's ([`EncodeOptions`]), the HTTP
//! handlers' ([`ServeOptions`]) and the serving limits ([`Limits`]). The NVML reader's, the
//! DCGM client's and attribution's options are fields of [`Config`] as the components take
//! them (`Config::reader`, `Config::dcgm`, `Config::kubernetes`), with nothing to convert.
//! The daemon, `gpu-exporter check`, the tests and the benchmarks all build their options
//! here.
//!
//! Plain data mapping, nothing checked (`validate.rs` did): it must not refuse a value, read
//! files, the environment or NVML.

use crate::exposition::EncodeOptions;
use crate::notify::{CALL_TIMEOUT, EVENT_RETRY_FOR, NotifyOptions, QUEUE};
use crate::serve::{Limits, ServeOptions};

use super::Config;

impl Config {
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
            interval: self.tick_interval,
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
            nvlink_links: e.nvlink_links,
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
