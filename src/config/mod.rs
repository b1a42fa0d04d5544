//! Command-line flags, environment variables and `--config-file` → one validated [`Config`],
//! in two steps, then each component's options.
//!
//! Step one, the raw arguments: flag names, short forms and `DCGM_EXPORTER_*` variables follow
//! dcgm-exporter 4.8 so that a switch keeps the DaemonSet's arguments; [`cli`] defines them in
//! groups by concern, [`values`] their accepted values, `go_flags.rs` Go's flag syntax, and
//! [`ignored`] the flags accepted without effect (each given one is warned about). The
//! configuration file merges into those raw flags before anything is validated
//! ([`Cli::merge_config_file`], in `merge.rs`): a setting the file may set is an `Option` in
//! [`Cli`], `None` when no flag or variable gave it, so a given flag wins and the file fills the
//! rest (the one rule, in `origin.rs`).
//!
//! Step two, validation: every value is checked once, with the same bounds and messages
//! whatever its source ([`Settings::validate`], in `validate.rs`; errors name the flag, or the
//! file and key: [`Origin`]), into a [`Config`] grouped as the components take their options.
//! [`options`] is then the one conversion to each component's options, which the daemon,
//! `check`, the tests and the benchmarks all use; the counters are loaded from the `Config` by
//! [`Config::load_counters`] (`counters.rs`), and checked against `--max-labels-per-series` by
//! `labels_per_series.rs`.
//!
//! This file holds the types the steps share (the error enum [`ConfigError`], [`Config`] and
//! its groups, [`Settings`], [`CountersChoice`], [`LoadedCounters`]) and the defaults; the steps
//! are in their own files. It must not read NVML, bind sockets or load `--web-config-file` (the
//! daemon does, through `serve`, so that a broken file still stops start-up).

mod cardinality;
pub mod cli;
mod counters;
mod dcgm;
pub mod file;
mod go_flags;
pub mod health_args;
pub mod ignored;
mod kube;
mod labels_per_series;
mod merge;
pub mod options;
mod origin;
mod site;
mod validate;
pub mod values;

pub use crate::serve::DEFAULT_MAX_CONCURRENT_SCRAPES;
pub use cli::{BUILTIN_DEFAULT_COUNTERS, Cli, DEFAULT_COLLECTORS, DEFAULT_INTERVAL_MS};
pub use go_flags::env_value;
pub use origin::{Origin, Setting, TooShort};
pub use site::{SimulatedNode, Simulation, Site};

use std::path::PathBuf;
use std::time::Duration;

use crate::base::shown::quoted;

use crate::attribution::KubernetesOptions;
use crate::catalogue::csv::{CounterSet, CsvError};
use crate::catalogue::profile::Profile;
use crate::gpu::collections::Collection;
use crate::gpu::reader::{NvlinkLinks, ReaderOptions};
use crate::gpu::selection as devices;
use crate::sampler::reload::CountersFile;
use crate::serve::address;

/// A configuration error, naming the flag or file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A millisecond interval under its minimum (from a flag or its variable; the file's are
    /// [`file::ConfigFileError::TooShort`], the same refusal).
    #[error(transparent)]
    TooShort(#[from] TooShort),
    /// A millisecond interval of zero.
    #[error("{flag} 0: must be a positive number of milliseconds")]
    Zero {
        /// The flag.
        flag: &'static str,
    },
    /// An `--xid-initialized-codes` item that is not a number.
    #[error(
        "--xid-initialized-codes {}: {} is not an Xid code (expected e.g. 48,79)",
        quoted(value),
        quoted(item)
    )]
    XidCode {
        /// The whole value.
        value: String,
        /// The item at fault.
        item: String,
    },
    /// A Go duration flag that does not parse, or is negative.
    #[error(
        "{flag} {}: {why} (expected a duration of 0 or more, e.g. {flag} 10s)",
        quoted(value)
    )]
    Duration {
        /// The flag.
        flag: &'static str,
        /// The value given.
        value: String,
        /// Why it is refused.
        why: crate::base::duration::DurationError,
    },
    /// The counters file is invalid.
    #[error(transparent)]
    Counters(#[from] CsvError),
    /// `-d`, `-s` or `-p` does not parse.
    #[error(transparent)]
    Devices(#[from] devices::DeviceSpecError),
    /// `-a/--address` cannot be used.
    #[error(transparent)]
    Address(#[from] address::ListenAddressError),
    /// A pod-label allow-list regex does not compile.
    #[error(transparent)]
    LabelAllowlist(#[from] crate::sources::kube::pod_labels::AllowlistError),
    /// `--config-file` cannot be read or is invalid.
    #[error(transparent)]
    File(#[from] file::ConfigFileError),
    /// `--nvml-lib` names something other than a regular file (a FIFO, a device, a
    /// directory): the dynamic loader would wait on it, or fail.
    #[error("--nvml-lib {}: {source}", path.display())]
    NvmlLib {
        /// The path as given.
        path: PathBuf,
        /// What it is.
        source: crate::base::bounded_read::ReadError,
    },
    /// A DCGM setting is invalid.
    #[error(transparent)]
    Dcgm(#[from] dcgm::DcgmConfigError),
    /// A cardinality control is refused.
    #[error(transparent)]
    Cardinality(#[from] cardinality::CardinalityError),
    /// `--kubernetes-node-conditions` or `--kubernetes-events` without what they need.
    #[error(transparent)]
    KubeWrites(#[from] health_args::KubeWritesError),
    /// The arguments do not parse (clap's message, which names the flag).
    #[error("{0}")]
    Args(String),
}

/// Where the counter set comes from.
#[derive(Debug, Clone)]
pub enum CountersChoice {
    /// `-f`, `metrics.file` of the configuration file, or the default path when it exists;
    /// `None`: the compatibility profile's built-in set.
    File(Option<PathBuf>),
    /// `metrics.fields` of the configuration file: (origin, counters-CSV text).
    Inline(String, String),
}

/// Validated configuration, as the components take their options: the NVML reader's, the DCGM
/// client's and attribution's are here as those components take them; the groups that several
/// components read are converted into each one's options by `options.rs` ([`options`]), and
/// nothing else. Nothing changes a `Config` once validation made it.
#[derive(Debug, Clone)]
pub struct Config {
    /// The host label's value (`NODE_NAME`, else the host name); `None` with `--no-hostname`.
    /// The encoder's and the HTTP handlers' (the page's node name).
    pub hostname: Option<String>,
    /// What the NVML reader reads, as the reader takes it: the devices, the collection plan
    /// (whose base is `-c/--collect-interval`), the Xid and clock-event windows, the Xid
    /// codes at 0 and whether the NVLink links' data counters are read. The pipeline adds
    /// what it decides when it builds the sampler (processes with attribution, GPM left to
    /// DCGM).
    pub reader: ReaderOptions,
    /// How often the sampler ticks: the shortest read interval of all (the collect interval,
    /// or a shorter collection's). The DCGM deadline and the Kubernetes writes follow it.
    pub tick_interval: Duration,
    /// How the series are named, labelled and filtered: [`Config::encode_options`].
    pub exposition: ExpositionConfig,
    /// The listener and the HTTP side: [`Config::serve_options`], [`Config::limits`].
    pub serving: ServingConfig,
    /// The health model and its Kubernetes writes: [`Config::health_options`],
    /// [`Config::notify_options`].
    pub health: HealthConfig,
    /// The DCGM client's options (mode, library, watch limits, switches, log, and the per-tick
    /// deadline the tick interval sets).
    pub dcgm: crate::dcgm::DcgmOptions,
    /// Pod attribution, with `-k` (or `--simulate`), as `attribution::start` takes it: the
    /// kubelet source's options, the join's, and which other sources run.
    pub kubernetes: Option<KubernetesOptions>,
    /// `--hpc-job-mapping-dir`.
    pub hpc_job_mapping_dir: Option<PathBuf>,
    /// `--nvml-lib`: the NVML library path instead of the dynamic loader's search.
    pub nvml_lib: Option<PathBuf>,
    /// The exporter's own log.
    pub log: LogConfig,
    /// The counters: `-f`, the configuration file's, the default path or the built-in set.
    pub counters: CountersChoice,
    /// `--config-file`, when one was read.
    pub config_file: Option<PathBuf>,
    /// Warnings to log once logging is set up.
    pub warnings: Vec<String>,
    /// Lines to log at debug once logging is set up (the blank environment variables not
    /// read).
    pub debug_notes: Vec<String>,
}

/// How the series are named, labelled and filtered (`exposition::EncodeOptions`).
#[derive(Debug, Clone)]
pub struct ExpositionConfig {
    /// `--compatibility`: the dcgm-exporter version whose names and shape are reproduced.
    pub profile: Profile,
    /// `-o/--use-old-namespace`.
    pub use_old_namespace: bool,
    /// `--replace-blanks-in-model-name`.
    pub replace_blanks_in_model_name: bool,
    /// `--nvlink-links`: totals per GPU, or per link (the reader reads the links' data
    /// counters then: [`ReaderOptions::nvlink_throughput`]).
    pub nvlink_links: NvlinkLinks,
    /// `--include-families`, `--exclude-families`, `--drop-labels`.
    pub cardinality: crate::exposition::filter::Cardinality,
    /// `--max-labels-per-series`.
    pub max_labels_per_series: usize,
    /// The exporter's own `gpu_*` families: in `native`, or when `--include-families` is given.
    pub own_families: bool,
    /// `--include-families` / `--exclude-families` (or their keys) as given, as messages name
    /// them: a filter that serves no GPU family is refused naming these.
    pub family_filters: Vec<String>,
    /// `--enable-exporter-metrics` (or `metrics.enableExporterMetrics`): the `process_*`
    /// families.
    pub enable_exporter_metrics: bool,
    /// `--series-labels` (or `metrics.seriesLabels`): lean or full.
    pub shape: crate::catalogue::labels::LabelShape,
}

/// The listener and the HTTP side (`serve::ServeOptions`, `serve::Limits`).
#[derive(Debug, Clone)]
pub struct ServingConfig {
    /// `-a/--address`, as given.
    pub address: String,
    /// `--web-config-file`; `None` when not given or empty (plain HTTP, as in exporter-toolkit).
    pub config_file: Option<PathBuf>,
    /// `--max-concurrent-scrapes` (or `server.maxConcurrentScrapes`): scrapes served at once
    /// (0: no limit).
    pub max_concurrent_scrapes: u32,
    /// `--web-read-timeout`: time to read a request's headers (zero: none).
    pub read_timeout: Duration,
    /// `--web-write-timeout`: time to write a response once started (zero: none).
    pub write_timeout: Duration,
    /// `--web-max-connections`: connections open at once; the oldest idle one is shed beyond.
    pub max_connections: usize,
}

/// The health model and its outputs (`health::HealthOptions`, `notify::NotifyOptions`).
#[derive(Debug, Clone)]
pub struct HealthConfig {
    /// `--health-hold`: how long a health reason stays after its cause is gone.
    pub hold: Duration,
    /// `--health-require-gpus`: `/health` fails while no GPU is exported.
    pub require_gpus: bool,
    /// `--kubernetes-node-conditions` (checked: with `-k`, and the node's name known).
    pub node_conditions: bool,
    /// `--kubernetes-events` (checked as the conditions are).
    pub events: bool,
}

impl HealthConfig {
    /// Whether a Kubernetes write (Node conditions, Events) is asked for.
    pub fn writes(&self) -> bool {
        self.node_conditions || self.events
    }
}

/// The exporter's own log.
#[derive(Debug, Clone, Copy)]
pub struct LogConfig {
    /// `--debug`.
    pub debug: bool,
    /// `--log-format json`.
    pub json: bool,
}

/// The node name for the `Hostname` label: `NODE_NAME`, else the kernel host name.
pub fn node_hostname() -> String {
    if let Ok(n) = std::env::var("NODE_NAME")
        && !n.trim().is_empty()
    {
        return n.trim().to_owned();
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            std::env::var("HOSTNAME")
                .ok()
                .filter(|h| !h.trim().is_empty())
        })
        .unwrap_or_else(|| "localhost".into())
}

pub use crate::gpu::collections::MIN_INTERVAL_MS;

/// What the tests of the config modules parse flags with.
#[cfg(test)]
mod test_support {
    use super::Cli;
    use clap::Parser;

    /// `args` after the program name, parsed by clap alone (no Go-style rewriting).
    pub(super) fn cli(args: &[&str]) -> Cli {
        let mut v = vec!["gpu-exporter"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).unwrap()
    }
}

/// dcgm-exporter 4.8.3's default `--web-read-timeout`.
pub const DEFAULT_WEB_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// dcgm-exporter 4.8.3's default `--web-write-timeout`.
pub const DEFAULT_WEB_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// The raw settings, ready for validation: the flags and environment as given, with the
/// configuration file's values merged into the ones no flag gave.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The flags, the file's values merged in.
    pub cli: Cli,
    /// `metrics.fields` of the file: (origin, counters-CSV text).
    inline_counters: Option<(String, String)>,
    /// The file's collections.
    collections: Vec<Collection>,
    /// The file's DCGM watch limits that no flag gave, as the file typed them.
    dcgm_watch: dcgm::FileWatch,
    /// The file read, if any.
    config_file: Option<PathBuf>,
    /// The settings the file gave, for their error messages ([`Settings::origin_of`]).
    from_file: Vec<Setting>,
    /// What to log about the merge (settings the flags overrode, keys ignored).
    notes: Vec<String>,
}

/// The counter set chosen at start-up.
pub struct LoadedCounters {
    /// The parsed set.
    pub set: CounterSet,
    /// Where it came from, for the start-up log.
    pub origin: String,
    /// The watch on the file it was read from; `None` for the built-in set.
    pub file: Option<CountersFile>,
}
