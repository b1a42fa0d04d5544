//! From a validated [`Config`] to the options of the components whose settings it does not
//! already hold as options: the reader's ([`ReaderOptions`]), the health model's, the
//! encoder's ([`EncodeOptions`]), the HTTP handlers' ([`ServeOptions`]), the serving limits
//! ([`Limits`]), and the Kubernetes outputs' ([`Config::notify_options`], which still
//! validates: Node conditions and Events need the node's name, known only once the pipeline
//! is built). The DCGM client's options are already in the `Config` (`Config::dcgm`, made
//! while validating), and so are attribution's settings (`Config::kubernetes`), from which
//! `attribution::start` makes the kubelet source's and the join's options. The daemon,
//! `gpu-exporter check`, the tests and the benchmarks all build their options here.
//!
//! Plain data mapping; it must not read files, the environment or NVML.

use crate::exposition::EncodeOptions;
use crate::gpu::reader::ReaderOptions;
use crate::serve::{Limits, ServeOptions};

use super::{Config, ConfigError};

impl Config {
    /// What the NVML reader selects, shapes and times.
    pub fn reader_options(&self) -> ReaderOptions {
        ReaderOptions {
            devices: self.devices.clone(),
            mig_repeat_device_fields: self.mig_repeat_device_fields,
            xid_count_window: self.xid_count_window,
            clock_events_count_window: self.clock_events_count_window,
            xid_initialized_codes: self.xid_initialized_codes.clone(),
            collections: std::sync::Arc::clone(&self.collections),
            nvlink_throughput: self.nvlink_links == crate::gpu::reader::NvlinkLinks::PerLink,
            ..ReaderOptions::default()
        }
    }

    /// The Kubernetes writes (Node conditions, Events) for node `node`, if asked for.
    pub fn notify_options(
        &self,
        node: Option<&str>,
    ) -> Result<Option<crate::notify::NotifyOptions>, ConfigError> {
        Ok(self.health_args.notify(node, self.tick_interval)?)
    }

    /// The health model's settings.
    pub fn health_options(&self) -> crate::health::HealthOptions {
        crate::health::HealthOptions {
            hold: self.health_hold,
        }
    }

    /// How the exposition spells the identity labels and types the families.
    pub fn encode_options(&self) -> EncodeOptions {
        EncodeOptions {
            hostname: self.hostname.clone(),
            host_label: self.profile.host_label(),
            gauge_fields: self.profile.gauge_fields(),
            types_as_written: self.profile.types_as_written(),
            use_old_namespace: self.use_old_namespace,
            replace_blanks_in_model_name: self.replace_blanks_in_model_name,
            nvlink_links: self.nvlink_links,
            own_families: self.own_families,
            cardinality: self.cardinality.clone(),
        }
    }

    /// How the HTTP handlers behave beyond serving the published output.
    pub fn serve_options(&self) -> ServeOptions {
        ServeOptions {
            max_concurrent_scrapes: self.max_concurrent_scrapes,
            health_require_gpus: self.health_require_gpus,
            node: self.hostname.clone(),
        }
    }

    /// The bounds on the serving path.
    pub fn limits(&self) -> Limits {
        Limits {
            read: self.web_read_timeout,
            write: self.web_write_timeout,
            max_connections: self.web_max_connections,
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
