//! Command-line flags and environment variables → validated [`Config`].
//!
//! Flag names, short forms and `DCGM_EXPORTER_*` variables follow dcgm-exporter 4.8 so that a
//! switch keeps the DaemonSet's arguments. Flags that have no meaning here (remote hostengine,
//! DCGM logging) are accepted with a warning; flags of features not built yet are accepted
//! with a warning too. Validation errors name the flag. The flags themselves are defined in
//! [`cli`]; this file turns them into a [`Config`] and loads the counters file. It must not
//! read NVML, bind sockets or load `--web-config-file` (main does, through `serve`, so that a
//! broken file still stops start-up).

pub mod address;
pub mod cli;
pub mod counters;
pub mod devices;
pub mod file;
pub mod ignored;
pub mod profile;

pub use cli::{
    BUILTIN_DEFAULT_COUNTERS, Cli, DEFAULT_COLLECTORS, DEFAULT_INTERVAL_MS,
    DEFAULT_MAX_CONCURRENT_SCRAPES,
};

use std::path::PathBuf;
use std::time::Duration;

use crate::catalogue::csv::{CounterSet, CsvError, parse_counters};
use crate::config::counters::CountersFile;
use crate::config::devices::DeviceSelection;

/// A configuration error, naming the flag or file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A millisecond interval under its minimum.
    #[error("{flag} {value}: must be at least {min} (milliseconds)")]
    TooShort {
        /// The flag, e.g. `-c/--collect-interval`.
        flag: &'static str,
        /// The value given.
        value: u64,
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
}

/// Validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Listen address as given.
    pub address: String,
    /// Sampling interval.
    pub interval: Duration,
    /// `Hostname` label value, `None` with `--no-hostname`.
    pub hostname: Option<String>,
    /// See [`Cli::use_old_namespace`].
    pub old_namespace: bool,
    /// See [`Cli::replace_blanks_in_model_name`].
    pub replace_blanks_in_model_name: bool,
    /// GPUs and MIG instances to export, from [`Cli::devices`].
    pub devices: DeviceSelection,
    /// Scenario when simulating.
    pub simulate: Option<String>,
    /// `--max-concurrent-scrapes`: scrapes served at once (0: no limit).
    pub max_concurrent_scrapes: u32,
    /// `--web-read-timeout`: time to read a request's headers (zero: none).
    pub web_read_timeout: Duration,
    /// `--web-write-timeout`: time to write a response once started (zero: none).
    pub web_write_timeout: Duration,
    /// `--web-max-connections`: connections open at once; the oldest is shed beyond it.
    pub web_max_connections: usize,
    /// `--health-require-gpus`: `/health` fails while no GPU is exported.
    pub health_require_gpus: bool,
    /// `--enable-exporter-metrics`: the `process_*` families.
    pub exporter_metrics: bool,
    /// Simulation seed.
    pub simulate_seed: u64,
    /// NVML library path override.
    pub nvml_lib: Option<PathBuf>,
    /// `true` for JSON logs.
    pub json_logs: bool,
    /// Debug logging.
    pub debug: bool,
    /// See [`Cli::mig_repeat_device_fields`]; on for every dcgm-exporter profile.
    pub mig_repeat_device_fields: bool,
    /// `--nvlink-links=per-link` (the default): the `gpu_nvlink_*` families.
    pub nvlink_per_link: bool,
    /// `--compatibility`: the dcgm-exporter version whose names and shape are reproduced.
    pub profile: profile::Profile,
    /// Per-field read intervals (`--config-file` collections); `interval` is the shortest.
    pub collections: std::sync::Arc<file::Collections>,
    /// Window of `DCGM_EXP_XID_ERRORS_COUNT`.
    pub xid_window: Duration,
    /// Window of `DCGM_EXP_CLOCK_EVENTS_COUNT`.
    pub clock_events_window: Duration,
    /// Xid codes exported at 0 before they occur.
    pub xid_initialized: Vec<u64>,
    /// Pod attribution, with `-k` (or `--simulate`).
    pub kubernetes: Option<KubernetesConfig>,
    /// `--hpc-job-mapping-dir`.
    pub hpc_job_dir: Option<PathBuf>,
    /// Warnings to log once logging is set up.
    pub warnings: Vec<String>,
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
    pub pod_labels: Option<crate::sources::kube::labels::LabelAllowlist>,
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
    let ns = go_parse_duration::parse_duration(value).map_err(|_| err())?;
    u64::try_from(ns)
        .map(std::time::Duration::from_nanos)
        .map_err(|_| err())
}

impl Cli {
    /// Reads `--config-file`, if given, into the settings it may set: each one the command
    /// line or the environment did not set explicitly. Returns what to log (settings it
    /// overrode, keys it ignored). Call before [`Cli::validate`].
    pub fn apply_config_file(&mut self) -> Result<Vec<String>, ConfigError> {
        let Some(path) = self
            .config_file
            .clone()
            .filter(|p| !p.as_os_str().is_empty())
        else {
            self.config_file = None;
            return Ok(Vec::new());
        };
        let f = file::FileSettings::load(&path)?;
        let at = path.display().to_string();
        let mut notes: Vec<String> = f
            .notes
            .iter()
            .map(|n| format!("--config-file {at}: {n}"))
            .collect();
        let given = |id: &str| self.explicit.iter().any(|e| e == id);
        let mut overridden = |what: &str, by: &str| {
            notes.push(format!("--config-file {at}: {what} overridden by {by}"));
        };
        if f.metrics_file.is_some() || f.metrics_csv.is_some() {
            if given("collectors") {
                overridden("metrics", "-f/--collectors");
            } else if let Some(p) = f.metrics_file {
                self.collectors = Some(p);
            } else if let Some(csv) = f.metrics_csv {
                self.inline_counters = Some((format!("{at} metrics.fields"), csv));
            }
        }
        if let Some(i) = f.interval {
            if given("collect_interval") {
                overridden("collection.interval", "-c/--collect-interval");
            } else {
                self.collect_interval = u64::try_from(i.as_millis()).unwrap_or(u64::MAX);
            }
        }
        if let Some(n) = f.max_concurrent_scrapes {
            if given("max_concurrent_scrapes") {
                overridden("server.maxConcurrentScrapes", "--max-concurrent-scrapes");
            } else {
                self.max_concurrent_scrapes = n;
            }
        }
        if let Some(on) = f.enable_exporter_metrics {
            if given("enable_exporter_metrics") {
                overridden("metrics.enableExporterMetrics", "--enable-exporter-metrics");
            } else {
                self.enable_exporter_metrics = on;
            }
        }
        self.collections = f.groups;
        Ok(notes)
    }

    /// Validates flags into a [`Config`].
    pub fn validate(&self) -> Result<Config, ConfigError> {
        if self.collect_interval < 100 {
            return Err(ConfigError::TooShort {
                flag: "-c/--collect-interval",
                value: self.collect_interval,
                min: 100,
            });
        }
        address::parse_address(&self.address)?;
        let devices = DeviceSelection::parse("-d/--devices", &self.devices)?;
        DeviceSelection::check_syntax("-s/--switch-devices", &self.switch_devices)?;
        DeviceSelection::check_syntax("-p/--cpu-devices", &self.cpu_devices)?;
        for (flag, ms) in [
            ("-x/--xid-count-window-size", self.xid_count_window_size),
            (
                "--clock-events-count-window-size",
                self.clock_events_count_window_size,
            ),
        ] {
            if ms == 0 {
                return Err(ConfigError::Zero { flag });
            }
        }
        let profile = profile::Profile::parse(&self.compatibility)?;
        let xid_initialized = parse_xid_codes(&self.xid_initialized_codes)?;
        let mut warnings = Vec::new();
        let mut kubernetes = self.kubernetes_config(&mut warnings)?;
        if let Some(labels) = kubernetes.as_mut().and_then(|k| k.pod_labels.as_mut()) {
            labels.set_collision_prefix(profile.pod_label_collision_prefix());
            labels.set_conflict_suffix(profile.pod_label_conflict_suffix());
            if profile.drops_pod_labels_named_like_the_pod() {
                let mut names = if self.use_old_namespace {
                    vec!["pod_name", "pod_namespace", "container_name"]
                } else {
                    vec!["pod", "namespace", "container"]
                };
                if self.kubernetes_enable_pod_uid {
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
        warnings.extend(ignored::warnings(self));
        let timeout = |flag, value: &Option<String>, default| match value.as_deref() {
            Some(v) if !v.is_empty() => go_duration(flag, v),
            _ => Ok(default),
        };
        let web_read_timeout = timeout(
            "--web-read-timeout",
            &self.web_read_timeout,
            DEFAULT_WEB_READ_TIMEOUT,
        )?;
        let web_write_timeout = timeout(
            "--web-write-timeout",
            &self.web_write_timeout,
            DEFAULT_WEB_WRITE_TIMEOUT,
        )?;
        let collections = file::Collections {
            base: Duration::from_millis(self.collect_interval),
            groups: self.collections.clone(),
        };
        Ok(Config {
            address: self.address.clone(),
            interval: collections.tick(),
            collections: std::sync::Arc::new(collections),
            hostname: (!self.no_hostname).then(node_hostname),
            old_namespace: self.use_old_namespace,
            replace_blanks_in_model_name: self.replace_blanks_in_model_name,
            devices,
            mig_repeat_device_fields: self.mig_repeat_device_fields
                || profile.repeats_device_fields(),
            nvlink_per_link: self.nvlink_links != "totals",
            profile,
            xid_window: Duration::from_millis(self.xid_count_window_size),
            clock_events_window: Duration::from_millis(self.clock_events_count_window_size),
            xid_initialized,
            max_concurrent_scrapes: self.max_concurrent_scrapes,
            web_read_timeout,
            web_write_timeout,
            web_max_connections: self.web_max_connections as usize,
            health_require_gpus: self.health_require_gpus,
            exporter_metrics: self.enable_exporter_metrics,
            simulate: self.simulate.clone(),
            simulate_seed: self.simulate_seed,
            nvml_lib: self.nvml_lib.clone(),
            json_logs: self.log_format == "json",
            debug: self.debug,
            kubernetes,
            hpc_job_dir: self.hpc_job_mapping_dir.clone(),
            warnings,
        })
    }

    /// The pod attribution settings; `None` without `-k` and `--simulate`.
    fn kubernetes_config(
        &self,
        warnings: &mut Vec<String>,
    ) -> Result<Option<KubernetesConfig>, ConfigError> {
        if !matches!(self.kubernetes_gpu_id_type.as_str(), "uid" | "device-name") {
            return Err(ConfigError::GpuIdType(self.kubernetes_gpu_id_type.clone()));
        }
        for (flag, ms) in [
            (
                "--pod-resources-refresh-interval",
                self.pod_resources_refresh_interval,
            ),
            ("--pod-resources-timeout", self.pod_resources_timeout),
        ] {
            if ms < 100 {
                return Err(ConfigError::TooShort {
                    flag,
                    value: ms,
                    min: 100,
                });
            }
        }
        let allowlist = crate::sources::kube::labels::LabelAllowlist::parse(Some(
            &self.kubernetes_pod_label_allowlist_regex.join(","),
        ))?;
        if !self.kubernetes && self.simulate.is_none() {
            for (set, flag) in [
                (
                    self.kubernetes_enable_pod_labels,
                    "--kubernetes-enable-pod-labels",
                ),
                (
                    self.kubernetes_enable_pod_uid,
                    "--kubernetes-enable-pod-uid",
                ),
                (self.kubernetes_virtual_gpus, "--kubernetes-virtual-gpus"),
                (self.kubernetes_enable_dra, "--kubernetes-enable-dra"),
                (
                    !self.kubernetes_pod_label_allowlist_regex.is_empty(),
                    "--kubernetes-pod-label-allowlist-regex",
                ),
                (
                    !self.nvidia_resource_names.is_empty(),
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
        Ok(Some(KubernetesConfig {
            socket: self.pod_resources_kubelet_socket.clone(),
            refresh: Duration::from_millis(self.pod_resources_refresh_interval),
            timeout: Duration::from_millis(self.pod_resources_timeout),
            extra_resources: self
                .nvidia_resource_names
                .iter()
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
            virtual_gpus: self.kubernetes_virtual_gpus,
            pod_labels: self.kubernetes_enable_pod_labels.then_some(allowlist),
            pod_uid: self.kubernetes_enable_pod_uid,
            dra: self.kubernetes_enable_dra,
            pod_metadata: self.kubernetes_pod_metadata
                || self.kubernetes_enable_pod_labels
                || self.kubernetes_enable_pod_uid
                || self.kubernetes_enable_dra,
            process_metrics: self.kubernetes_process_metrics,
            proc_root: self.proc_root.clone(),
            node_name,
        }))
    }

    /// Loads the counter set: the given file, else the default path, else the built-in set.
    /// Returns the set, a note saying where it came from, and the watch on the file it was
    /// read from (for hot reload; `None` for the built-in set).
    pub fn load_counters(&self) -> Result<LoadedCounters, ConfigError> {
        let loaded = self.load_counters_unchecked()?;
        // The config file's collections must each match a field, and no field two of them.
        if let Some(path) = &self.config_file {
            let groups = file::Collections {
                base: Duration::ZERO,
                groups: self.collections.clone(),
            };
            groups
                .check(loaded.set.metrics().map(|r| (r.name.as_str(), r.field)))
                .map_err(|message| file::ConfigFileError::Invalid {
                    file: path.clone(),
                    message: format!("{message} ({})", loaded.origin),
                })?;
        }
        Ok(loaded)
    }

    fn load_counters_unchecked(&self) -> Result<LoadedCounters, ConfigError> {
        let profile = profile::Profile::parse(&self.compatibility)?;
        if let (None, Some((origin, csv))) = (&self.collectors, &self.inline_counters) {
            return Ok(LoadedCounters {
                set: parse_counters(origin, csv)?,
                origin: format!("counters from {origin}"),
                file: None,
            });
        }
        let default = std::path::Path::new(DEFAULT_COLLECTORS);
        let path = match &self.collectors {
            Some(p) => Some(p.clone()),
            None if default.exists() => Some(default.to_path_buf()),
            None => None,
        };
        if let Some(p) = path {
            let origin = format!("counters from {}", p.display());
            let (file, set) = CountersFile::open(p, profile)?;
            return Ok(LoadedCounters {
                set,
                origin,
                file: Some(file),
            });
        }
        self.builtin_counters()
    }

    /// The compatibility profile's built-in counter set (what runs when no file is found).
    pub fn builtin_counters(&self) -> Result<LoadedCounters, ConfigError> {
        let profile = profile::Profile::parse(&self.compatibility)?;
        let (name, text) = profile.builtin_counters();
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
        assert_eq!(c.collect_interval, 1000);
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
            let mut c = Cli::try_parse_go_style(args.into_iter().map(Into::into)).unwrap();
            let notes = c.apply_config_file().unwrap();
            (c, notes)
        };
        let (c, notes) = parse(&[]);
        assert_eq!(c.collectors.as_deref(), Some(Path::new("/from/file.csv")));
        assert_eq!(c.collect_interval, 2000);
        assert_eq!(c.max_concurrent_scrapes, 3);
        assert!(c.enable_exporter_metrics);
        assert!(notes.is_empty(), "{notes:?}");
        let cfg = c.validate().unwrap();
        // The sampler ticks as fast as the fastest collection.
        assert_eq!(cfg.interval, Duration::from_millis(500));
        assert_eq!(cfg.collections.base, Duration::from_secs(2));
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
        assert_eq!(c.collect_interval, 2000);
        assert_eq!(c.max_concurrent_scrapes, 16);
        let notes = notes.join("\n");
        for what in [
            "metrics overridden by -f",
            "collection.interval overridden by -c",
            "server.maxConcurrentScrapes overridden",
        ] {
            assert!(notes.contains(what), "{what}: {notes}");
        }
        // A missing file names itself.
        let mut c = cli(&["--config-file", "/nonexistent.yaml"]);
        let e = c.apply_config_file().unwrap_err().to_string();
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
        assert_eq!(cfg.xid_initialized, vec![48, 62, 64, 74, 79, 95, 119, 120]);
        assert_eq!(cfg.xid_window, Duration::from_secs(300));
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
        assert_eq!(cfg.xid_initialized, vec![48, 79]);
        assert_eq!(cfg.xid_window, Duration::from_secs(60));
        assert_eq!(cfg.clock_events_window, Duration::from_secs(1));
        assert!(cfg.mig_repeat_device_fields);
        let cfg = cli(&["--xid-initialized-codes", ""]).validate().unwrap();
        assert!(cfg.xid_initialized.is_empty());
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
        // Switch and CPU lists are syntax-checked only (their entities are not GPUs) and warned.
        let cfg = cli(&["-s", "i:0-127", "-p", "g:0;i:0-255"])
            .validate()
            .unwrap();
        assert!(
            cfg.warnings
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
