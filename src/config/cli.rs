//! The command line's definitions: every flag, its short form and its environment variable
//! (dcgm-exporter's names, `DCGM_EXPORTER_*`, else `GPU_EXPORTER_*`), grouped by concern into
//! the raw [`Cli`], one clap `flatten`ed struct per group, each under its own `--help`
//! heading; and the defaults.
//!
//! A new flag goes into the group of its concern ([`SamplingArgs`], [`ExpositionArgs`],
//! [`CardinalityArgs`], [`WebArgs`], [`HealthArgs`], [`KubernetesArgs`], [`DcgmArgs`],
//! [`LogArgs`], [`SimulatorArgs`]; a dcgm-exporter flag without effect here into
//! [`IgnoredArgs`], in `ignored.rs`). Definitions only: the value parsers are `values.rs`'s, Go's
//! flag syntax `go_flags.rs`'s, checking and combining the values `validate.rs`'s
//! (`Cli::validate`); nothing here reads files or the environment beyond what clap does.

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser};

use super::health_args::HealthArgs;
use super::ignored::IgnoredArgs;
use super::values::{
    DcgmLogLevel, DcgmMode, GpuIdType, LogFormat, go_bool, lenient, millis, whole,
};
use crate::catalogue::profile::Profile;
use crate::gpu::collections::MIN_INTERVAL_MS;
use crate::gpu::reader::NvlinkLinks;

/// dcgm-exporter's default counters path.
pub const DEFAULT_COLLECTORS: &str = "/etc/dcgm-exporter/default-counters.csv";
/// The shipped default counter set, used when no file is given and the default path is absent.
pub const BUILTIN_DEFAULT_COUNTERS: &str = include_str!("../../counters/default-counters.csv");
/// Default sampling interval in milliseconds (see docs/flags.md "Sampling interval").
pub const DEFAULT_INTERVAL_MS: u64 = 5000;

/// The subcommands, which `main` dispatches on the first argument before these flags are
/// parsed: listed at the end of the daemon's `--help` (and cleared from `check`'s).
pub const SUBCOMMANDS: &str = "Subcommands (the first argument):
  check [FLAGS...]  Diagnose this node as the daemon would see it, with the daemon's own flags
                    and environment (gpu-exporter check --help)
  probe <URL>       Check a running exporter over HTTP: /ready, then /metrics
                    (gpu-exporter probe --help)";

/// Raw command line, one field per group of flags.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "gpu-exporter",
    version,
    about = "Prometheus exporter for NVIDIA GPUs, compatible with dcgm-exporter",
    after_help = SUBCOMMANDS
)]
pub struct Cli {
    /// The counters, the configuration file, the GPUs and the sampling.
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Names and labels of the series.
    #[command(flatten)]
    pub exposition: ExpositionArgs,
    /// The cardinality controls.
    #[command(flatten)]
    pub cardinality: CardinalityArgs,
    /// The listener and serving limits.
    #[command(flatten)]
    pub web: WebArgs,
    /// The health outputs.
    #[command(flatten)]
    pub health: HealthArgs,
    /// Pod and job attribution.
    #[command(flatten)]
    pub kubernetes: KubernetesArgs,
    /// DCGM.
    #[command(flatten)]
    pub dcgm: DcgmArgs,
    /// The exporter's log.
    #[command(flatten)]
    pub log: LogArgs,
    /// The simulated node.
    #[command(flatten)]
    pub simulator: SimulatorArgs,
    /// dcgm-exporter's flags accepted without effect.
    #[command(flatten)]
    pub ignored: IgnoredArgs,
    /// The environment variables of flags that were set but blank, and so not read (filled in
    /// by `Cli::try_parse_go_style`; logged at debug).
    #[arg(skip)]
    pub blank_variables: Vec<String>,
    /// The flags whose value came from their environment variable, as (`--long`, variable)
    /// (filled in by `Cli::try_parse_go_style`; errors name the variable).
    #[arg(skip)]
    pub from_env: Vec<(String, String)>,
}

/// The counters, the configuration file, the GPUs read and how often, and the Xid and clock-event windows.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Counters, GPUs and sampling")]
pub struct SamplingArgs {
    /// Counters CSV (dcgm-exporter format). Default: /etc/dcgm-exporter/default-counters.csv,
    /// or the built-in default set when that file does not exist.
    #[arg(short = 'f', long = "collectors", env = "DCGM_EXPORTER_COLLECTORS")]
    pub counters_file: Option<PathBuf>,
    /// dcgm-exporter 4.8.3+'s YAML configuration file (schema v1 or v2): counters, interval,
    /// per-collection intervals, scrape limit, exporter metrics. Flags and environment
    /// variables given explicitly override it. Read once at start.
    #[arg(long = "config-file", env = "DCGM_EXPORTER_CONFIG_FILE")]
    pub config_file: Option<PathBuf>,
    /// Sampling interval in milliseconds [default: 5000, or the configuration file's
    /// `collection.interval`]. `None` until given (a flag wins over `--config-file`).
    #[arg(
        short = 'c',
        long = "collect-interval",
        env = "DCGM_EXPORTER_INTERVAL",
        allow_hyphen_values = true,
        value_parser = millis(MIN_INTERVAL_MS)
    )]
    pub collect_interval: Option<u64>,
    /// Devices to export. `f` (default): every GPU and every MIG instance. `g` or `g:LIST`:
    /// physical GPUs, LIST of indices such as `0,2-4`. `i` or `i:LIST`: MIG instances, LIST
    /// items `G` (every instance on GPU G), `G-H`, `G.I` (GPU instance id I on GPU G, as in the
    /// `GPU_I_ID` label) or `G.I-J`. Several specs may be combined, separated by `,`, `;` or
    /// spaces: `g:0,1,i:2.7-9,3`.
    #[arg(
        short = 'd',
        long = "devices",
        env = "DCGM_EXPORTER_DEVICES_STR",
        default_value = "f"
    )]
    pub devices: String,
    /// Path of the NVML library (default: libnvidia-ml.so.1 via the dynamic loader; with
    /// --simulate: libnvml_sim.so next to the executable).
    #[arg(long = "nvml-lib", env = "GPU_EXPORTER_NVML_LIB")]
    pub nvml_lib: Option<PathBuf>,
    /// Window of DCGM_EXP_XID_ERRORS_COUNT in ms.
    #[arg(
        short = 'x',
        long = "xid-count-window-size",
        env = "DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE",
        default_value_t = 300_000,
        allow_hyphen_values = true,
        value_parser = millis(1)
    )]
    pub xid_count_window_size: u64,
    /// Window of DCGM_EXP_CLOCK_EVENTS_COUNT in ms.
    #[arg(
        long = "clock-events-count-window-size",
        env = "DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE",
        default_value_t = 300_000,
        allow_hyphen_values = true,
        value_parser = millis(1)
    )]
    pub clock_events_count_window_size: u64,
    /// Xid codes whose `gpu_xid_errors_total` series are exported at 0 before they first
    /// occur (comma-separated; empty: none), so that alerts on `increase()` see the first one.
    #[arg(
        long = "xid-initialized-codes",
        env = "GPU_EXPORTER_XID_INITIALIZED_CODES",
        default_value = ""
    )]
    pub xid_initialized_codes: String,
    /// Represent a MIG-enabled GPU only by its instances, each repeating the GPU's
    /// device-level fields (power, temperature, clocks…), as dcgm-exporter does. Default: the
    /// GPU's own series carry device-level fields once, instances carry instance fields.
    #[arg(long = "mig-repeat-device-fields", env = "GPU_EXPORTER_MIG_REPEAT_DEVICE_FIELDS", action = ArgAction::SetTrue)]
    pub mig_repeat_device_fields: bool,
    /// NVLink export: `totals` (the default) serves, per GPU, the links down
    /// (`gpu_nvlink_links_down`), the error counters summed over its links and its worst
    /// link's bit error ratios; `per-link` serves `gpu_nvlink_up`, `gpu_nvlink_errors_total`,
    /// `gpu_nvlink_{transmit,receive}_bytes_total`, … for every link of every GPU (up to 18
    /// links, about 8 series each). Every link's state and errors are read either way.
    #[arg(
        long = "nvlink-links",
        env = "GPU_EXPORTER_NVLINK_LINKS",
        default_value = "totals",
        value_parser = lenient::<NvlinkLinks>()
    )]
    pub nvlink_links: NvlinkLinks,
}

/// How series are named and labelled, and which dcgm-exporter version they reproduce.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Names and labels")]
pub struct ExpositionArgs {
    /// Write `uuid` instead of `UUID` (dcgm-exporter 1.x label names).
    #[arg(short = 'o', long = "use-old-namespace", env = "DCGM_EXPORTER_USE_OLD_NAMESPACE", action = ArgAction::SetTrue)]
    pub use_old_namespace: bool,
    /// Leave out the `Hostname` label.
    #[arg(short = 'n', long = "no-hostname", env = "DCGM_EXPORTER_NO_HOSTNAME", action = ArgAction::SetTrue)]
    pub no_hostname: bool,
    /// Replace spaces in `modelName` with `-`.
    #[arg(long = "replace-blanks-in-model-name", env = "DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME", action = ArgAction::SetTrue)]
    pub replace_blanks_in_model_name: bool,
    /// Which dcgm-exporter this node replaces: native, dcgm-4.8.2, dcgm-4.8.4 (or 4.8.3),
    /// dcgm-4.9 or dcgm-4.10. Sets the host label's name, the MIG shape and the pod-label
    /// collision prefix.
    #[arg(
        long = "compatibility",
        env = "GPU_EXPORTER_COMPATIBILITY",
        default_value = "native",
        value_name = "PROFILE",
        value_parser = lenient::<Profile>()
    )]
    pub compatibility: Profile,
    /// Export the process's own `process_*` families (CPU, memory, file descriptors, threads)
    /// [default: false, or the configuration file's `metrics.enableExporterMetrics`].
    #[arg(
        long = "enable-exporter-metrics",
        env = "DCGM_EXPORTER_ENABLE_EXPORTER_METRICS",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_name = "BOOL",
        value_parser = go_bool
    )]
    pub enable_exporter_metrics: Option<bool>,
}

/// The cardinality controls: which families are served, labels dropped, the labels-per-series limit.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Cardinality")]
pub struct CardinalityArgs {
    /// Comma-separated globs: only matching families are served (under a dcgm-* profile, our
    /// own `gpu_*` families only when named here). (`metrics.includeFamilies`.)
    #[arg(long = "include-families", env = "GPU_EXPORTER_INCLUDE_FAMILIES")]
    pub include_families: Option<String>,
    /// Comma-separated globs: matching families are left out. (`metrics.excludeFamilies`.)
    #[arg(long = "exclude-families", env = "GPU_EXPORTER_EXCLUDE_FAMILIES")]
    pub exclude_families: Option<String>,
    /// Comma-separated label names removed from every series (`metrics.dropLabels`).
    #[arg(long = "drop-labels", env = "GPU_EXPORTER_DROP_LABELS")]
    pub drop_labels: Option<String>,
    /// The most labels a series may have (default 30): more refuses start-up; pod labels get
    /// the room left. (`metrics.maxLabelsPerSeries`.)
    #[arg(
        long = "max-labels-per-series",
        env = "GPU_EXPORTER_MAX_LABELS_PER_SERIES",
        allow_hyphen_values = true
    )]
    pub max_labels_per_series: Option<String>,
    /// Where the labels that describe a device (`modelName`, `pci_bus_id`, `device`, the
    /// counters file's label fields) and those of its holders (`pod`, `namespace`,
    /// `container`, …) go: `lean` (native's default) puts them only on `gpu_device_info` and
    /// `gpu_allocation_info`, so a job that starts creates no new series; `full` puts them on
    /// every series, as dcgm-exporter does (the only shape of the dcgm-* profiles).
    /// (`metrics.seriesLabels`.)
    #[arg(
        long = "series-labels",
        env = "GPU_EXPORTER_SERIES_LABELS",
        value_name = "lean|full"
    )]
    pub series_labels: Option<String>,
}

/// The listener and the HTTP serving limits.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Web")]
pub struct WebArgs {
    /// Listen address: `:PORT` for all interfaces, `HOST:PORT`, `[IPv6]:PORT`.
    #[arg(
        short = 'a',
        long = "address",
        env = "DCGM_EXPORTER_LISTEN",
        default_value = ":9400"
    )]
    pub address: String,
    /// exporter-toolkit web config file (TLS, client certificates, basic auth, response
    /// headers); see docs/web-config.md. `/health` and `/ready` stay open to probes.
    #[arg(long = "web-config-file", env = "DCGM_EXPORTER_WEB_CONFIG_FILE")]
    pub web_config_file: Option<PathBuf>,
    /// Time allowed to read a request, as a Go duration (dcgm-exporter 4.8.3+; validated).
    #[arg(
        long = "web-read-timeout",
        env = "DCGM_EXPORTER_WEB_READ_TIMEOUT",
        allow_hyphen_values = true
    )]
    pub web_read_timeout: Option<String>,
    /// Time allowed to write a response, as a Go duration (dcgm-exporter 4.8.3+; validated).
    #[arg(
        long = "web-write-timeout",
        env = "DCGM_EXPORTER_WEB_WRITE_TIMEOUT",
        allow_hyphen_values = true
    )]
    pub web_write_timeout: Option<String>,
    /// Connections open at once; beyond it the oldest open connection is closed for the new
    /// one (a flood of slow clients cannot lock Prometheus out or exhaust file descriptors).
    #[arg(
        long = "web-max-connections",
        env = "GPU_EXPORTER_WEB_MAX_CONNECTIONS",
        default_value_t = 512,
        allow_hyphen_values = true,
        value_parser = whole::<u32>(1, 65_536)
    )]
    pub web_max_connections: u32,
    /// Scrapes of /metrics served at once; more get 503. 0: no limit [default: 16, or the
    /// configuration file's `server.maxConcurrentScrapes`].
    #[arg(
        long = "max-concurrent-scrapes",
        env = "DCGM_EXPORTER_MAX_CONCURRENT_SCRAPES",
        allow_hyphen_values = true,
        value_parser = whole::<u32>(0, u32::MAX.into())
    )]
    pub max_concurrent_scrapes: Option<u32>,
}

/// Pod attribution (kubelet pod-resources, the Kubernetes API, DRA, processes) and HPC jobs.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Kubernetes and job attribution")]
pub struct KubernetesArgs {
    /// Attribute GPUs and MIG instances to the pods that hold them (kubelet pod-resources API,
    /// and pod metadata from the Kubernetes API).
    #[arg(short = 'k', long = "kubernetes", env = "DCGM_EXPORTER_KUBERNETES", action = ArgAction::SetTrue)]
    pub enabled: bool,
    /// Add the pod's labels (sanitized) to its devices' series and allocation info.
    #[arg(long = "kubernetes-enable-pod-labels", env = "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_LABELS", action = ArgAction::SetTrue)]
    pub kubernetes_enable_pod_labels: bool,
    /// Add `pod_uid` to the series of devices held by a pod.
    #[arg(long = "kubernetes-enable-pod-uid", env = "DCGM_EXPORTER_KUBERNETES_ENABLE_POD_UID", action = ArgAction::SetTrue)]
    pub kubernetes_enable_pod_uid: bool,
    /// `uid` or `device-name`: how the device plugin names GPUs. Both forms (and MIG, GKE and
    /// replica forms) are recognised whatever the value; it is validated for compatibility.
    #[arg(
        long = "kubernetes-gpu-id-type",
        env = "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE",
        default_value = "uid",
        value_parser = lenient::<GpuIdType>()
    )]
    pub kubernetes_gpu_id_type: GpuIdType,
    /// Comma-separated regexes; only pod label keys fully matching one are added. The flag may
    /// be given several times (the lists add up, as in dcgm-exporter).
    #[arg(
        long = "kubernetes-pod-label-allowlist-regex",
        env = "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX",
        action = ArgAction::Append
    )]
    pub kubernetes_pod_label_allowlist_regex: Vec<String>,
    /// Kubelet pod-resources socket.
    #[arg(
        long = "pod-resources-kubelet-socket",
        env = "DCGM_POD_RESOURCES_KUBELET_SOCKET",
        default_value = "/var/lib/kubelet/pod-resources/kubelet.sock"
    )]
    pub pod_resources_kubelet_socket: PathBuf,
    /// Extra resource names (comma-separated) to treat as GPUs, besides `nvidia.com/gpu`,
    /// `nvidia.com/gpu.*` and `nvidia.com/mig-*`.
    #[arg(
        long = "nvidia-resource-names",
        env = "NVIDIA_RESOURCE_NAMES",
        value_delimiter = ','
    )]
    pub nvidia_resource_names: Vec<String>,
    /// One copy of each series per pod sharing the device, with `vgpu` (dcgm-exporter's
    /// behaviour). Default: shared devices carry no pod labels (see docs/kubernetes.md).
    #[arg(long = "kubernetes-virtual-gpus", env = "KUBERNETES_VIRTUAL_GPUS", action = ArgAction::SetTrue)]
    pub kubernetes_virtual_gpus: bool,
    /// Attribute devices held through DRA resource claims (reads ResourceSlices).
    #[arg(long = "kubernetes-enable-dra", env = "KUBERNETES_ENABLE_DRA", action = ArgAction::SetTrue)]
    pub kubernetes_enable_dra: bool,
    /// Time between two refreshes of the kubelet pod-resources API, in milliseconds.
    #[arg(
        long = "pod-resources-refresh-interval",
        env = "GPU_EXPORTER_POD_RESOURCES_REFRESH_INTERVAL",
        default_value_t = 5000,
        allow_hyphen_values = true,
        value_parser = millis(MIN_INTERVAL_MS)
    )]
    pub pod_resources_refresh_interval: u64,
    /// Deadline of one call to the kubelet pod-resources API, in milliseconds.
    #[arg(
        long = "pod-resources-timeout",
        env = "GPU_EXPORTER_POD_RESOURCES_TIMEOUT",
        default_value_t = 10_000,
        allow_hyphen_values = true,
        value_parser = millis(MIN_INTERVAL_MS)
    )]
    pub pod_resources_timeout: u64,
    /// With -k: watch this node's pods in the Kubernetes API for UIDs, labels, owning
    /// workloads and container IDs (needs get/list/watch on pods; see docs/kubernetes-rbac.md).
    #[arg(
        long = "kubernetes-pod-metadata",
        env = "GPU_EXPORTER_KUBERNETES_POD_METADATA",
        default_value_t = true,
        action = ArgAction::Set,
        value_name = "BOOL",
        value_parser = go_bool
    )]
    pub kubernetes_pod_metadata: bool,
    /// With -k: list the processes on each GPU and attribute them to containers through
    /// /proc/PID/cgroup (`gpu_container_*` families; needs hostPID).
    #[arg(
        long = "kubernetes-process-metrics",
        env = "GPU_EXPORTER_KUBERNETES_PROCESS_METRICS",
        default_value_t = true,
        action = ArgAction::Set,
        value_name = "BOOL",
        value_parser = go_bool
    )]
    pub kubernetes_process_metrics: bool,
    /// The host's /proc as seen by the exporter (for PID → container).
    #[arg(
        long = "proc-root",
        env = "GPU_EXPORTER_PROC_ROOT",
        default_value = "/proc"
    )]
    pub proc_root: PathBuf,
    /// Directory of `<gpu>` / `<gpu>.<gi>` files, one HPC job ID per line: adds `hpc_job`.
    #[arg(long = "hpc-job-mapping-dir", env = "DCGM_HPC_JOB_MAPPING_DIR")]
    pub hpc_job_mapping_dir: Option<PathBuf>,
}

/// How DCGM is reached for the fields NVML cannot serve, and its watches and log.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "DCGM")]
pub struct DcgmArgs {
    /// Remote DCGM hostengine for the profiling fields NVML cannot serve: host:port, host
    /// (port 5555), tcp://host:port or unix:///path. Makes --dcgm-mode default to remote.
    #[arg(
        short = 'r',
        long = "remote-hostengine-info",
        env = "DCGM_REMOTE_HOSTENGINE_INFO"
    )]
    pub remote_hostengine_info: Option<String>,
    /// How DCGM is reached for the profiling fields NVML cannot serve: remote (the hostengine
    /// of -r), embedded (an in-process hostengine) or off. Default: remote when -r is given,
    /// embedded with --simulate, else off.
    #[arg(long = "dcgm-mode", env = "DCGM_EXPORTER_DCGM_MODE", value_parser = lenient::<DcgmMode>())]
    pub dcgm_mode: Option<DcgmMode>,
    /// Path of the DCGM library (default: libdcgm.so.4 via the dynamic loader; with
    /// --simulate: libdcgm_sim.so next to the executable).
    #[arg(long = "dcgm-lib", env = "GPU_EXPORTER_DCGM_LIB")]
    pub dcgm_lib: Option<PathBuf>,
    /// NVSwitch selection for DCGM's NVSwitch rows, same syntax as --devices: `g[:ids]` the
    /// switches, `i[:ids]` their ports (`f`: all).
    #[arg(
        short = 's',
        long = "switch-devices",
        env = "DCGM_EXPORTER_OTHER_DEVICES_STR",
        default_value = "f"
    )]
    pub switch_devices: String,
    /// An embedded DCGM hostengine logs to standard output, at --dcgm-log-level.
    #[arg(long = "enable-dcgm-log", env = "DCGM_EXPORTER_ENABLE_DCGM_LOG", action = ArgAction::SetTrue)]
    pub enable_dcgm_log: bool,
    /// --enable-dcgm-log's level: NONE (the default), FATAL, ERROR, WARN, INFO, DEBUG or VERB.
    #[arg(
        long = "dcgm-log-level",
        env = "DCGM_EXPORTER_DCGM_LOG_LEVEL",
        value_name = "LEVEL",
        value_parser = lenient::<DcgmLogLevel>()
    )]
    pub dcgm_log_level: Option<DcgmLogLevel>,
    /// How long DCGM keeps the samples of the exporter's watches (Go duration; default 10m).
    #[arg(
        long = "watch-max-keep-age",
        env = "DCGM_EXPORTER_WATCH_MAX_KEEP_AGE",
        allow_hyphen_values = true
    )]
    pub watch_max_keep_age: Option<String>,
    /// How many samples DCGM keeps per watched field (0: no limit).
    #[arg(
        long = "watch-max-keep-samples",
        env = "DCGM_EXPORTER_WATCH_MAX_KEEP_SAMPLES",
        allow_hyphen_values = true
    )]
    pub watch_max_keep_samples: Option<String>,
}

/// The exporter's own log.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Logging")]
pub struct LogArgs {
    /// Debug logging.
    #[arg(long = "debug", env = "DCGM_EXPORTER_DEBUG", action = ArgAction::SetTrue)]
    pub debug: bool,
    /// Log format: `text` or `json`.
    #[arg(long = "log-format", env = "DCGM_EXPORTER_LOG_FORMAT", default_value = "text", value_parser = lenient::<LogFormat>())]
    pub log_format: LogFormat,
}

/// A simulated node instead of real GPUs.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Simulator")]
pub struct SimulatorArgs {
    /// Run on a simulated node: SCENARIO is a built-in name (h100-mig, a100-l4, a100-mig-t4, incidents, hgx-h200, hgx-b200, gb200-nvl72, l40s, batch) or a TOML file.
    #[arg(long = "simulate", env = "GPU_EXPORTER_SIMULATE", num_args = 0..=1, default_missing_value = "h100-mig", value_name = "SCENARIO")]
    pub simulate: Option<String>,
    /// Seed of the simulation (values are deterministic for a seed).
    #[arg(
        long = "simulate-seed",
        env = "GPU_EXPORTER_SIMULATE_SEED",
        default_value_t = 1,
        allow_hyphen_values = true,
        value_parser = whole::<u64>(0, u64::MAX)
    )]
    pub simulate_seed: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every flag is in exactly one group, and `--help` shows each group under its heading.
    #[test]
    fn every_flag_has_one_group_and_help_shows_each() {
        let cmd = Cli::command();
        cmd.clone().debug_assert();
        // The derive's own group for `Cli` holds the groups, not flags.
        let groups: Vec<_> = cmd.get_groups().filter(|g| g.get_id() != "Cli").collect();
        let mut headings = Vec::new();
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if matches!(id, "help" | "version") {
                continue;
            }
            let holders: Vec<_> = groups
                .iter()
                .filter(|g| g.get_args().any(|a| a == arg.get_id()))
                .map(|g| g.get_id().as_str())
                .collect();
            assert_eq!(holders.len(), 1, "{id}: {holders:?}");
            let heading = arg.get_help_heading();
            assert!(heading.is_some(), "{id} has no heading");
            headings.extend(heading.map(str::to_owned));
        }
        headings.sort();
        headings.dedup();
        assert_eq!(headings.len(), groups.len(), "{headings:?}");
        let help = cmd.clone().render_long_help().to_string();
        for h in &headings {
            assert!(help.contains(&format!("{h}:")), "{h} not in --help");
        }
    }
}
