//! Command-line flags, environment variables and `--config-file` → one validated [`Config`].
//!
//! The edge of the exporter: flag names, short forms and `DCGM_EXPORTER_*` variables follow
//! dcgm-exporter 4.8 so that a switch keeps the DaemonSet's arguments ([`cli`] defines them).
//! The configuration file merges into those raw flags before anything is validated
//! ([`Cli::merge_config_file`]): a setting the file may set is an `Option` in [`Cli`], `None`
//! when no flag or variable gave it, so a given flag wins and the file fills the rest, and every
//! value is then checked once, with the same bounds and messages whatever its source
//! ([`Settings::validate`]; errors name the flag, or the file and key). Flags that have no
//! meaning here are accepted with a warning ([`ignored`]). Each component's options come from
//! the [`Config`]: the DCGM client's and attribution's are built while validating
//! (`dcgm`, `kube`), the others by [`options`], which the daemon, `check`, the tests and the
//! benchmarks all use.
//!
//! It must not read NVML, bind sockets or load `--web-config-file` (the daemon does, through
//! `serve`, so that a broken file still stops start-up).

mod cardinality;
pub mod cli;
mod dcgm;
pub mod file;
pub mod health_args;
pub mod ignored;
mod kube;
mod labels;
pub mod options;
pub mod yaml;

pub use crate::serve::DEFAULT_MAX_CONCURRENT_SCRAPES;
pub use cli::{BUILTIN_DEFAULT_COUNTERS, Cli, DEFAULT_COLLECTORS, DEFAULT_INTERVAL_MS};

use std::path::PathBuf;
use std::time::Duration;

use crate::attribution::KubernetesConfig;
use crate::base::shown::shown_path;
use crate::catalogue::csv::{CounterSet, CsvError, parse_counters};
use crate::catalogue::profile::{self, Profile};
use crate::gpu::plan::{Collection, Collections};
use crate::gpu::reader::NvlinkLinks;
use crate::gpu::selection::{self as devices, DeviceSelection};
use crate::sampler::reload::CountersFile;
use crate::serve::address;

/// A configuration error, naming the flag or file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A millisecond interval under its minimum.
    #[error("{setting} {value}: must be at least {min} (milliseconds)")]
    TooShort {
        /// Where the value came from: the flag (`-c/--collect-interval`), or the
        /// configuration file and key.
        setting: Origin,
        /// The value given, as given.
        value: String,
        /// The least accepted.
        min: u64,
    },
    /// A millisecond interval of zero.
    #[error("{flag} 0: must be a positive number of milliseconds")]
    Zero {
        /// The flag.
        flag: &'static str,
    },
    /// An `--xid-initialized-codes` item that is not a number.
    #[error("--xid-initialized-codes {value:?}: {item:?} is not an Xid code (expected e.g. 48,79)")]
    XidCode {
        /// The whole value.
        value: String,
        /// The item at fault.
        item: String,
    },
    /// `--compatibility` names no profile.
    #[error(transparent)]
    Profile(#[from] profile::ProfileError),
    /// A Go duration flag that does not parse.
    #[error("{flag} {value:?}: not a duration (expected Go's form, e.g. 10s, 1m30s, 500ms)")]
    Duration {
        /// The flag.
        flag: &'static str,
        /// The value given.
        value: String,
    },
    /// `--kubernetes-gpu-id-type` is neither `uid` nor `device-name`.
    #[error("--kubernetes-gpu-id-type {0:?}: expected uid or device-name")]
    GpuIdType(String),
    /// The counters file is invalid.
    #[error(transparent)]
    Counters(#[from] CsvError),
    /// `-d`, `-s` or `-p` does not parse.
    #[error(transparent)]
    Devices(#[from] devices::DeviceSpecError),
    /// `-a/--address` cannot be used.
    #[error(transparent)]
    Address(#[from] address::AddressError),
    /// A pod-label allow-list regex does not compile.
    #[error(transparent)]
    LabelAllowlist(#[from] crate::sources::kube::labels::AllowlistError),
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

/// `--nvml-lib` as given, once its kind is checked (one `stat`, symlinks followed; nothing is
/// opened): a regular file, or a path that does not exist yet (the library may arrive later,
/// as when the GPU Operator's driver container finishes; the sampler retries).
fn nvml_lib(path: Option<&PathBuf>) -> Result<Option<PathBuf>, ConfigError> {
    let Some(p) = path else { return Ok(None) };
    // Missing or unreadable passes: the loader says so, and it is retried.
    crate::base::bounded_read::refuse_not_regular(p).map_err(|source| ConfigError::NvmlLib {
        path: p.clone(),
        source,
    })?;
    Ok(Some(p.clone()))
}

/// Where a setting's value came from, as messages name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A flag or its environment variable (`-c/--collect-interval`), or its default.
    Flag(&'static str),
    /// A key of the configuration file.
    File {
        /// The file.
        file: PathBuf,
        /// The key, e.g. `collection.interval`.
        key: &'static str,
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag(flag) => f.write_str(flag),
            Origin::File { file, key } => write!(f, "--config-file {}: {key}", shown_path(file)),
        }
    }
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

/// Validated configuration: each setting under the one name it has from flag to use.
#[derive(Debug, Clone)]
pub struct Config {
    /// `-a/--address`, as given.
    pub address: String,
    /// `-c/--collect-interval` (or `collection.interval`): how often a field in no collection
    /// is read.
    pub collect_interval: Duration,
    /// How often the sampler ticks: the shortest read interval of all (the collect interval,
    /// or a shorter collection's).
    pub tick_interval: Duration,
    /// The host label's value (`NODE_NAME`, else the host name); `None` with `--no-hostname`.
    pub hostname: Option<String>,
    /// `-o/--use-old-namespace`.
    pub use_old_namespace: bool,
    /// `--replace-blanks-in-model-name`.
    pub replace_blanks_in_model_name: bool,
    /// `-d/--devices`: the GPUs and MIG instances to export.
    pub devices: DeviceSelection,
    /// `--simulate`: the scenario.
    pub simulate: Option<String>,
    /// `--simulate-seed`.
    pub simulate_seed: u64,
    /// `--max-concurrent-scrapes` (or `server.maxConcurrentScrapes`): scrapes served at once
    /// (0: no limit).
    pub max_concurrent_scrapes: u32,
    /// `--web-read-timeout`: time to read a request's headers (zero: none).
    pub web_read_timeout: Duration,
    /// `--web-write-timeout`: time to write a response once started (zero: none).
    pub web_write_timeout: Duration,
    /// `--web-max-connections`: connections open at once; the oldest idle one is shed beyond.
    pub web_max_connections: usize,
    /// `--web-config-file`; `None` when not given or empty (plain HTTP, as in exporter-toolkit).
    pub web_config_file: Option<PathBuf>,
    /// `--health-hold`: how long a health reason stays after its cause is gone.
    pub health_hold: Duration,
    /// The health flags as given (the Kubernetes writes are checked once the node's name is
    /// known: [`Config::notify_options`]).
    pub health_args: health_args::HealthArgs,
    /// `--health-require-gpus`: `/health` fails while no GPU is exported.
    pub health_require_gpus: bool,
    /// `--enable-exporter-metrics` (or `metrics.enableExporterMetrics`): the `process_*`
    /// families.
    pub enable_exporter_metrics: bool,
    /// `--nvml-lib`: the NVML library path instead of the dynamic loader's search.
    pub nvml_lib: Option<PathBuf>,
    /// The DCGM client's settings (`--dcgm-mode`, `-r`, `--dcgm-lib`, `--watch-max-keep-*`).
    pub dcgm: crate::dcgm::DcgmOptions,
    /// `--dcgm-mode` was given (else `--simulate` picks embedded on the simulated library).
    pub dcgm_mode_given: bool,
    /// `--log-format json`.
    pub json_logs: bool,
    /// `--debug`.
    pub debug: bool,
    /// `--mig-repeat-device-fields`; on for every dcgm-exporter profile.
    pub mig_repeat_device_fields: bool,
    /// `--nvlink-links`.
    pub nvlink_links: NvlinkLinks,
    /// `--include-families`, `--exclude-families`, `--drop-labels`.
    pub cardinality: crate::exposition::filter::Cardinality,
    /// `--max-labels-per-series`.
    pub max_labels_per_series: usize,
    /// The exporter's own `gpu_*` families: in `native`, or when `--include-families` is given.
    pub own_families: bool,
    /// `--compatibility`: the dcgm-exporter version whose names and shape are reproduced.
    pub profile: Profile,
    /// The collection plan: per-field read intervals (`--config-file` collections).
    pub collections: std::sync::Arc<Collections>,
    /// `-x/--xid-count-window-size`: the window of `DCGM_EXP_XID_ERRORS_COUNT`.
    pub xid_count_window: Duration,
    /// `--clock-events-count-window-size`: the window of `DCGM_EXP_CLOCK_EVENTS_COUNT`.
    pub clock_events_count_window: Duration,
    /// `--xid-initialized-codes`: Xid codes exported at 0 before they occur.
    pub xid_initialized_codes: Vec<u64>,
    /// Pod attribution, with `-k` (or `--simulate`).
    pub kubernetes: Option<KubernetesConfig>,
    /// `--hpc-job-mapping-dir`.
    pub hpc_job_mapping_dir: Option<PathBuf>,
    /// The counters: `-f`, the configuration file's, the default path or the built-in set.
    pub counters: CountersChoice,
    /// `--config-file`, when one was read.
    pub config_file: Option<PathBuf>,
    /// Warnings to log once logging is set up.
    pub warnings: Vec<String>,
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
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// Parses `--xid-initialized-codes`: comma-separated Xid codes, possibly empty.
fn parse_xid_codes(v: &str) -> Result<Vec<u64>, ConfigError> {
    let mut out = Vec::new();
    for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let code = item.parse::<u64>().map_err(|_| ConfigError::XidCode {
            value: v.to_owned(),
            item: item.to_owned(),
        })?;
        out.push(code);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

pub use crate::gpu::plan::MIN_INTERVAL_MS;

/// dcgm-exporter 4.8.3's default `--web-read-timeout`.
pub const DEFAULT_WEB_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// dcgm-exporter 4.8.3's default `--web-write-timeout`.
pub const DEFAULT_WEB_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Checks a Go duration (`10s`, `1m30s`, `500ms`).
fn go_duration(flag: &'static str, value: &str) -> Result<std::time::Duration, ConfigError> {
    let err = || ConfigError::Duration {
        flag,
        value: value.to_owned(),
    };
    crate::base::duration::parse_go(value).map_err(|_| err())
}

/// The raw settings, ready for validation: the flags and environment as given, with the
/// configuration file's values merged into the ones no flag gave.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The flags, the file's values merged in.
    pub cli: Cli,
    /// Where the collect interval came from (for its error message).
    interval_origin: Origin,
    /// `metrics.fields` of the file: (origin, counters-CSV text).
    inline_counters: Option<(String, String)>,
    /// The file's collections.
    collections: Vec<Collection>,
    /// The file read, if any.
    config_file: Option<PathBuf>,
    /// The cardinality controls the file set: (flag, the file's key).
    cardinality_from_file: Vec<(&'static str, &'static str)>,
    /// What to log about the merge (settings the flags overrode, keys ignored).
    notes: Vec<String>,
}

impl Cli {
    /// Reads `--config-file`, if given, and merges each setting it may set into the flags that
    /// no flag or variable gave. Nothing is validated yet.
    pub fn merge_config_file(self) -> Result<Settings, ConfigError> {
        let mut s = Settings {
            interval_origin: Origin::Flag("-c/--collect-interval"),
            inline_counters: None,
            collections: Vec::new(),
            config_file: None,
            cardinality_from_file: Vec::new(),
            notes: Vec::new(),
            cli: self,
        };
        let Some(path) = s
            .cli
            .config_file
            .clone()
            .filter(|p| !p.as_os_str().is_empty())
        else {
            return Ok(s);
        };
        let f = file::FileSettings::load(&path)?;
        let at = shown_path(&path);
        s.notes = f
            .notes
            .iter()
            .map(|n| format!("--config-file {at}: {n}"))
            .collect();
        let overridden =
            |what: &str, by: &str| format!("--config-file {at}: {what} overridden by {by}");
        let cli = &mut s.cli;
        if f.metrics_file.is_some() || f.metrics_csv.is_some() {
            if cli.collectors.is_some() {
                s.notes.push(overridden("metrics", "-f/--collectors"));
            } else if let Some(p) = f.metrics_file {
                cli.collectors = Some(p);
            } else if let Some(csv) = f.metrics_csv {
                s.inline_counters = Some((format!("{at} metrics.fields"), csv));
            }
        }
        if let Some(i) = f.interval {
            if cli.collect_interval.is_some() {
                s.notes
                    .push(overridden("collection.interval", "-c/--collect-interval"));
            } else {
                cli.collect_interval = Some(u64::try_from(i.as_millis()).unwrap_or(u64::MAX));
                s.interval_origin = Origin::File {
                    file: path.clone(),
                    key: "collection.interval",
                };
            }
        }
        if let Some(n) = f.max_concurrent_scrapes {
            if cli.max_concurrent_scrapes.is_some() {
                s.notes.push(overridden(
                    "server.maxConcurrentScrapes",
                    "--max-concurrent-scrapes",
                ));
            } else {
                cli.max_concurrent_scrapes = Some(n);
            }
        }
        let watch = (f.watch_max_keep_age, f.watch_max_keep_samples);
        dcgm::merge_file(cli, watch, &overridden, &mut s.notes);
        if let Some(on) = f.enable_exporter_metrics {
            if cli.enable_exporter_metrics.is_some() {
                s.notes.push(overridden(
                    "metrics.enableExporterMetrics",
                    "--enable-exporter-metrics",
                ));
            } else {
                cli.enable_exporter_metrics = Some(on);
            }
        }
        s.cardinality_from_file =
            cardinality::merge_file(cli, f.cardinality, &overridden, &mut s.notes);
        s.collections = f.groups;
        s.config_file = Some(path);
        Ok(s)
    }

    /// Merges `--config-file` (when given) and validates: the one way from flags to a
    /// [`Config`].
    pub fn validate(&self) -> Result<Config, ConfigError> {
        self.clone().merge_config_file()?.validate()
    }
}

impl Settings {
    /// Where a cardinality flag's value came from: the configuration file's key, or the flag.
    fn origin_of(&self, flag: &'static str) -> Origin {
        let key = self.cardinality_from_file.iter().find(|(f, _)| *f == flag);
        match (key, &self.config_file) {
            (Some((_, key)), Some(file)) => Origin::File {
                file: file.clone(),
                key,
            },
            _ => Origin::Flag(flag),
        }
    }

    /// Validates the merged settings into a [`Config`].
    pub fn validate(&self) -> Result<Config, ConfigError> {
        let cli = &self.cli;
        let collect_ms = cli.collect_interval.unwrap_or(DEFAULT_INTERVAL_MS);
        if collect_ms < MIN_INTERVAL_MS {
            return Err(ConfigError::TooShort {
                setting: self.interval_origin.clone(),
                value: collect_ms.to_string(),
                min: MIN_INTERVAL_MS,
            });
        }
        address::parse_address(&cli.address)?;
        let devices = DeviceSelection::parse("-d/--devices", &cli.devices)?;
        DeviceSelection::check_syntax("-s/--switch-devices", &cli.switch_devices)?;
        DeviceSelection::check_syntax("-p/--cpu-devices", &cli.cpu_devices)?;
        for (flag, ms) in [
            ("-x/--xid-count-window-size", cli.xid_count_window_size),
            (
                "--clock-events-count-window-size",
                cli.clock_events_count_window_size,
            ),
        ] {
            if ms == 0 {
                return Err(ConfigError::Zero { flag });
            }
        }
        let profile = profile::Profile::parse(&cli.compatibility)?;
        let xid_initialized_codes = parse_xid_codes(&cli.xid_initialized_codes)?;
        let (cardinality, max_labels_per_series, own_families) =
            cardinality::controls(cli, profile, &|flag| self.origin_of(flag).to_string())?;
        let mut warnings = self.notes.clone();
        let mut kubernetes = self.kubernetes_config(&mut warnings)?;
        cli.health.check(kubernetes.is_some())?;
        if let Some(labels) = kubernetes.as_mut().and_then(|k| k.pod_labels.as_mut()) {
            labels.set_collision_prefix(profile.pod_label_collision_prefix());
            labels.set_conflict_suffix(profile.pod_label_conflict_suffix());
            if profile.drops_pod_labels_named_like_the_pod() {
                let mut names = if cli.use_old_namespace {
                    vec!["pod_name", "pod_namespace", "container_name"]
                } else {
                    vec!["pod", "namespace", "container"]
                };
                if cli.kubernetes_enable_pod_uid {
                    names.push("pod_uid");
                }
                labels.set_dropped(names);
            }
        }
        if let Some(gaps) = profile.gaps() {
            warnings.push(format!(
                "--compatibility {}: unverified: {gaps}",
                profile.name()
            ));
        }
        warnings.extend(ignored::warnings(cli));
        let timeout = |flag, value: &Option<String>, default| match value.as_deref() {
            Some(v) if !v.is_empty() => go_duration(flag, v),
            _ => Ok(default),
        };
        let web_read_timeout = timeout(
            "--web-read-timeout",
            &cli.web_read_timeout,
            DEFAULT_WEB_READ_TIMEOUT,
        )?;
        let web_write_timeout = timeout(
            "--web-write-timeout",
            &cli.web_write_timeout,
            DEFAULT_WEB_WRITE_TIMEOUT,
        )?;
        let health_hold = timeout(
            "--health-hold",
            &cli.health.health_hold,
            crate::health::DEFAULT_HOLD,
        )?;
        let collections = Collections {
            base: Duration::from_millis(collect_ms),
            groups: self.collections.clone(),
        };
        let counters = match (&cli.collectors, &self.inline_counters) {
            (None, Some((origin, csv))) => CountersChoice::Inline(origin.clone(), csv.clone()),
            (Some(p), _) => CountersChoice::File(Some(p.clone())),
            (None, None) => {
                let default = std::path::Path::new(DEFAULT_COLLECTORS);
                CountersChoice::File(default.exists().then(|| default.to_path_buf()))
            }
        };
        let (dcgm, dcgm_mode_given) = dcgm::options(cli, collections.tick(), &mut warnings)?;
        Ok(Config {
            address: cli.address.clone(),
            collect_interval: collections.base,
            tick_interval: collections.tick(),
            collections: std::sync::Arc::new(collections),
            hostname: (!cli.no_hostname).then(node_hostname),
            use_old_namespace: cli.use_old_namespace,
            replace_blanks_in_model_name: cli.replace_blanks_in_model_name,
            devices,
            mig_repeat_device_fields: cli.mig_repeat_device_fields
                || profile.repeats_device_fields(),
            nvlink_links: cli.nvlink_links,
            cardinality,
            max_labels_per_series,
            own_families,
            profile,
            xid_count_window: Duration::from_millis(cli.xid_count_window_size),
            clock_events_count_window: Duration::from_millis(cli.clock_events_count_window_size),
            xid_initialized_codes,
            max_concurrent_scrapes: cli
                .max_concurrent_scrapes
                .unwrap_or(DEFAULT_MAX_CONCURRENT_SCRAPES),
            web_read_timeout,
            web_write_timeout,
            web_max_connections: cli.web_max_connections as usize,
            web_config_file: cli
                .web_config_file
                .clone()
                .filter(|p| !p.as_os_str().is_empty()),
            health_require_gpus: cli.health_require_gpus,
            health_hold,
            health_args: cli.health.clone(),
            enable_exporter_metrics: cli.enable_exporter_metrics.unwrap_or(false),
            simulate: cli.simulate.clone(),
            simulate_seed: cli.simulate_seed,
            nvml_lib: nvml_lib(cli.nvml_lib.as_ref())?,
            dcgm,
            dcgm_mode_given,
            json_logs: cli.log_format == "json",
            debug: cli.debug,
            kubernetes,
            hpc_job_mapping_dir: cli.hpc_job_mapping_dir.clone(),
            counters,
            config_file: self.config_file.clone(),
            warnings,
        })
    }
}

impl Config {
    /// Loads the counter set: the chosen file, the configuration file's `metrics.fields`, or
    /// the profile's built-in set. Returns the set, a note saying where it came from, and the
    /// watch on the file it was read from (for hot reload; `None` otherwise).
    pub fn load_counters(&self) -> Result<LoadedCounters, ConfigError> {
        let loaded = match &self.counters {
            CountersChoice::Inline(origin, csv) => LoadedCounters {
                set: parse_counters(origin, csv)?,
                origin: format!("counters from {origin}"),
                file: None,
            },
            CountersChoice::File(Some(p)) => {
                let (file, set) = CountersFile::open(p.clone(), self.profile)?;
                // The set's own origin is the path, or says which version of a shipped set
                // the profile serves in its place: the start-up line must say so too.
                let origin = format!("counters from {}", set.origin);
                LoadedCounters {
                    set,
                    origin,
                    file: Some(file),
                }
            }
            CountersChoice::File(None) => self.builtin_counters()?,
        };
        // The config file's collections must each match a field, and no field two of them.
        if let Some(path) = &self.config_file {
            self.collections
                .check(loaded.set.metrics().map(|r| (r.name.as_str(), r.field)))
                .map_err(|message| file::ConfigFileError::Invalid {
                    file: path.clone(),
                    message: format!("{message} ({})", loaded.origin),
                })?;
        }
        Ok(loaded)
    }

    /// The compatibility profile's built-in counter set (what runs when no file is found).
    pub fn builtin_counters(&self) -> Result<LoadedCounters, ConfigError> {
        let (name, text) = self.profile.builtin_counters();
        let set = parse_counters(&format!("built-in {name}"), text)?;
        Ok(LoadedCounters {
            set,
            origin: format!("{DEFAULT_COLLECTORS} not found: using the built-in {name}"),
            file: None,
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::path::Path;

    fn cli(args: &[&str]) -> Cli {
        let mut v = vec!["gpu-exporter"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v).unwrap()
    }

    #[test]
    fn dcgm_flag_names_parse() {
        let c = cli(&[
            "-f", "/x.csv", "-a", ":9500", "-c", "1000", "-k", "-o", "-n", "-d", "f",
        ]);
        assert_eq!(
            c.collectors.as_deref(),
            Some(std::path::Path::new("/x.csv"))
        );
        assert_eq!(c.address, ":9500");
        assert_eq!(c.collect_interval, Some(1000));
        assert!(c.kubernetes && c.use_old_namespace && c.no_hostname);
        let cfg = c.validate().unwrap();
        assert!(cfg.hostname.is_none());
        let k = cfg.kubernetes.expect("-k enables pod attribution");
        assert_eq!(
            k.socket,
            PathBuf::from("/var/lib/kubelet/pod-resources/kubelet.sock")
        );
        assert!(k.pod_metadata && k.process_metrics && !k.dra && k.pod_labels.is_none());
        assert!(!cfg.warnings.iter().any(|w| w.contains("--kubernetes")));
    }

    #[test]
    fn kubernetes_flags_are_validated_and_named() {
        let e = cli(&["-k", "--kubernetes-gpu-id-type", "serial"])
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("--kubernetes-gpu-id-type"), "{e}");
        let e = cli(&[
            "-k",
            "--kubernetes-enable-pod-labels",
            "--kubernetes-pod-label-allowlist-regex",
            "app,(broken",
        ])
        .validate()
        .unwrap_err()
        .to_string();
        assert!(e.contains("--kubernetes-pod-label-allowlist-regex"), "{e}");
        assert!(e.contains("(broken"), "{e}");
        let e = cli(&["-k", "--pod-resources-timeout", "5"])
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("--pod-resources-timeout"), "{e}");
        // Kubernetes flags without -k do nothing, and say so.
        let cfg = cli(&["--kubernetes-enable-dra"]).validate().unwrap();
        assert!(cfg.kubernetes.is_none());
        assert!(
            cfg.warnings
                .iter()
                .any(|w| w.contains("--kubernetes-enable-dra") && w.contains("-k")),
            "{:?}",
            cfg.warnings
        );
        // Pod labels, UID and DRA need the pod watch even when metadata is turned off.
        let cfg = cli(&[
            "-k",
            "--kubernetes-pod-metadata=false",
            "--kubernetes-enable-pod-uid",
            "--nvidia-resource-names",
            "example.com/a100, ",
        ])
        .validate()
        .unwrap();
        let k = cfg.kubernetes.unwrap();
        assert!(k.pod_metadata && k.pod_uid);
        assert_eq!(k.extra_resources, ["example.com/a100"]);
    }

    #[test]
    fn profiles_rename_colliding_pod_labels_their_way() {
        use crate::sources::kube::labels::pod_label_pairs;
        let pod: std::collections::BTreeMap<String, String> = [
            ("pod", "p"),
            ("a.b", "1"),
            ("a/b", "2"),
            ("pod-uid", "u"),
            ("pod_name", "n"),
            ("gpu", "g"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
        for (profile, extra, want) in [
            (
                "native",
                &[][..],
                vec![
                    ("a_b", "1"),
                    ("label_gpu", "g"),
                    ("label_pod", "p"),
                    ("label_pod_name", "n"),
                    ("label_pod_uid", "u"),
                ],
            ),
            // dcgm-exporter 4.8.2 leaves out a pod label named like a pod-attribution label
            // it writes on the series (pod, namespace, container; pod_uid when on; the 1.x
            // names with -o); any other collision still gets `label_`, where 4.8.2 wrote a
            // duplicate label name (a scrape Prometheus refuses).
            (
                "dcgm-4.8.2",
                &[],
                vec![
                    ("a_b", "1"),
                    ("label_gpu", "g"),
                    ("label_pod_name", "n"),
                    ("label_pod_uid", "u"),
                ],
            ),
            (
                "dcgm-4.8.2",
                &["--kubernetes-enable-pod-uid"],
                vec![("a_b", "1"), ("label_gpu", "g"), ("label_pod_name", "n")],
            ),
            (
                "dcgm-4.8.2",
                &["-o"],
                vec![
                    ("a_b", "1"),
                    ("label_gpu", "g"),
                    ("label_pod", "p"),
                    ("label_pod_uid", "u"),
                ],
            ),
            (
                "dcgm-4.8.4",
                &[],
                vec![
                    ("a_b_conflict1", "1"),
                    ("a_b_conflict2", "2"),
                    ("pod_label_gpu", "g"),
                    ("pod_label_pod", "p"),
                    ("pod_label_pod_name", "n"),
                    ("pod_label_pod_uid", "u"),
                ],
            ),
        ] {
            let mut args = vec![
                "-k",
                "--kubernetes-enable-pod-labels",
                "--compatibility",
                profile,
            ];
            args.extend_from_slice(extra);
            let cfg = cli(&args).validate().unwrap();
            let allow = cfg.kubernetes.unwrap().pod_labels.unwrap();
            let want: Vec<_> = want
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            assert_eq!(pod_label_pairs(&pod, &allow), want, "{profile} {extra:?}");
        }
    }

    #[test]
    fn config_file_fills_what_the_command_line_did_not_set() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = dir.path().join("c.yaml");
        std::fs::write(
            &yaml,
            "version: 2\nmetrics:\n  file: /from/file.csv\n  enableExporterMetrics: true\n\
             collection:\n  interval: 2s\nserver:\n  maxConcurrentScrapes: 3\n\
             collections: [{name: t, every: 500ms, metrics: {include: [DCGM_FI_DEV_GPU_TEMP]}}]\n",
        )
        .unwrap();
        let parse = |extra: &[&str]| {
            let mut args = vec!["gpu-exporter", "--config-file", yaml.to_str().unwrap()];
            args.extend_from_slice(extra);
            let c = Cli::try_parse_go_style(args.into_iter().map(Into::into)).unwrap();
            let merged = c.merge_config_file().unwrap();
            let notes = merged.validate().unwrap().warnings;
            (merged.cli, notes)
        };
        let (c, notes) = parse(&[]);
        assert_eq!(c.collectors.as_deref(), Some(Path::new("/from/file.csv")));
        assert_eq!(c.collect_interval, Some(2000));
        assert_eq!(c.max_concurrent_scrapes, Some(3));
        assert_eq!(c.enable_exporter_metrics, Some(true));
        assert!(notes.is_empty(), "{notes:?}");
        let cfg = c.validate().unwrap();
        // The sampler ticks as fast as the fastest collection; fields in no collection are
        // read at the collect interval.
        assert_eq!(cfg.tick_interval, Duration::from_millis(500));
        assert_eq!(cfg.collect_interval, Duration::from_secs(2));
        assert_eq!(cfg.collections.base, Duration::from_secs(2));
        assert!(cfg.enable_exporter_metrics);
        assert_eq!(cfg.max_concurrent_scrapes, 3);
        // Given on the command line (Go style too), the flag wins and the log says so.
        let (c, notes) = parse(&[
            "-c",
            "2000",
            "-collectors",
            "/cli.csv",
            "--max-concurrent-scrapes",
            "16",
        ]);
        assert_eq!(c.collectors.as_deref(), Some(Path::new("/cli.csv")));
        assert_eq!(c.collect_interval, Some(2000));
        assert_eq!(c.max_concurrent_scrapes, Some(16));
        let notes = notes.join("\n");
        for what in [
            "metrics overridden by -f",
            "collection.interval overridden by -c",
            "server.maxConcurrentScrapes overridden",
        ] {
            assert!(notes.contains(what), "{what}: {notes}");
        }
        // A missing file names itself.
        let c = cli(&["--config-file", "/nonexistent.yaml"]);
        let e = c.merge_config_file().unwrap_err().to_string();
        assert!(e.starts_with("--config-file /nonexistent.yaml: "), "{e}");
    }

    #[test]
    fn simulate_defaults_to_h100_scenario() {
        assert_eq!(cli(&["--simulate"]).simulate.as_deref(), Some("h100-mig"));
        assert_eq!(
            cli(&["--simulate", "a100-l4"]).simulate.as_deref(),
            Some("a100-l4")
        );
        assert_eq!(cli(&[]).simulate, None);
    }

    #[test]
    fn bad_flags_name_the_flag() {
        let e = cli(&["-c", "5"]).validate().unwrap_err().to_string();
        assert!(e.contains("--collect-interval"), "{e}");
        let e = cli(&["-a", "nope"]).validate().unwrap_err().to_string();
        assert!(e.contains("--address"), "{e}");
        // `--web-config-file /nonexistent/w.yml` is loaded by main, not here: the same
        // assertion runs against the binary in tests/web_config.rs
        // (`bad_web_config_files_stop_startup_naming_file_and_key`).
        let e = cli(&["-d", "g:1-x"]).validate().unwrap_err().to_string();
        assert!(e.starts_with("-d/--devices \"g:1-x\": "), "{e}");
        assert!(e.contains("\"1-x\" is not a GPU index"), "{e}");
        let e = cli(&["-s", "x"]).validate().unwrap_err().to_string();
        assert!(e.starts_with("-s/--switch-devices \"x\": "), "{e}");
        let e = cli(&["-p", "g:4-2"]).validate().unwrap_err().to_string();
        assert!(e.starts_with("-p/--cpu-devices \"g:4-2\": "), "{e}");
        let e = cli(&["-x", "0"]).validate().unwrap_err().to_string();
        assert!(e.starts_with("-x/--xid-count-window-size 0"), "{e}");
        let e = cli(&["--xid-initialized-codes", "48,x9"])
            .validate()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--xid-initialized-codes") && e.contains("\"x9\""),
            "{e}"
        );
    }

    #[test]
    fn xid_and_mig_options() {
        let cfg = cli(&[]).validate().unwrap();
        // No zero series by default (the series budget); the alerts see a first Xid without.
        assert!(cfg.xid_initialized_codes.is_empty());
        assert_eq!(cfg.xid_count_window, Duration::from_secs(300));
        assert!(!cfg.mig_repeat_device_fields);
        let cfg = cli(&[
            "--xid-initialized-codes",
            " 79, 48,79 ",
            "-x",
            "60000",
            "--clock-events-count-window-size",
            "1000",
            "--mig-repeat-device-fields",
        ])
        .validate()
        .unwrap();
        assert_eq!(cfg.xid_initialized_codes, vec![48, 79]);
        assert_eq!(cfg.xid_count_window, Duration::from_secs(60));
        assert_eq!(cfg.clock_events_count_window, Duration::from_secs(1));
        assert!(cfg.mig_repeat_device_fields);
        let cfg = cli(&["--xid-initialized-codes", ""]).validate().unwrap();
        assert!(cfg.xid_initialized_codes.is_empty());
    }

    #[test]
    fn devices_flag_selects() {
        assert!(cli(&[]).validate().unwrap().devices.is_all());
        let cfg = cli(&["-d", "g:0,1,i:2.7-9,3"]).validate().unwrap();
        assert!(cfg.devices.wants_gpu(1) && !cfg.devices.wants_gpu(2));
        assert!(cfg.devices.wants_instance(2, 8) && cfg.devices.wants_instance(3, 1));
        assert_eq!(
            cfg.devices.describe(),
            "GPUs 0,1; MIG instances 2.7-9, all on GPU 3"
        );
        // The CPU list is syntax-checked only (its entities are not GPUs) and warned; the switch
        // list narrows the NVSwitches and their ports (DCGM's), so it is not warned.
        let cfg = cli(&["-s", "i:0-127", "-p", "g:0;i:0-255"])
            .validate()
            .unwrap();
        assert!(
            !cfg.warnings
                .iter()
                .any(|w| w.contains("-s/--switch-devices"))
        );
        assert!(cfg.warnings.iter().any(|w| w.contains("-p/--cpu-devices")));
    }

    #[test]
    fn builtin_counters_parse() {
        let set = parse_counters("builtin", BUILTIN_DEFAULT_COUNTERS).unwrap();
        assert!(set.metrics().count() >= 20);
    }
}
