//! Command-line flags and environment variables → validated [`Config`].
//!
//! Flag names, short forms and `DCGM_EXPORTER_*` variables follow dcgm-exporter 4.8 so that a
//! switch keeps the DaemonSet's arguments. Flags that have no meaning here (remote hostengine,
//! DCGM logging) are accepted with a warning; flags of features not built yet are accepted
//! with a warning too. `--web-config-file` is read and checked here (certificates, keys,
//! bcrypt hashes), so that a broken file stops start-up. Validation errors name the flag.

pub mod address;
pub mod counters;
pub mod devices;

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser};

use crate::catalogue::csv::{CounterSet, CsvError, parse_counters};
use crate::config::counters::CountersFile;
use crate::config::devices::DeviceSelection;

/// dcgm-exporter's default counters path.
pub const DEFAULT_COLLECTORS: &str = "/etc/dcgm-exporter/default-counters.csv";

/// The shipped default counter set, used when no file is given and the default path is absent.
pub const BUILTIN_DEFAULT_COUNTERS: &str = include_str!("../../counters/default-counters.csv");

/// Default sampling interval in milliseconds (see README "Sampling interval").
pub const DEFAULT_INTERVAL_MS: u64 = 5000;

/// Raw command line.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "gpu-exporter",
    version,
    about = "Prometheus exporter for NVIDIA GPUs, compatible with dcgm-exporter"
)]
pub struct Cli {
    /// Counters CSV (dcgm-exporter format). Default: /etc/dcgm-exporter/default-counters.csv,
    /// or the built-in default set when that file does not exist.
    #[arg(short = 'f', long = "collectors", env = "DCGM_EXPORTER_COLLECTORS")]
    pub collectors: Option<PathBuf>,
    /// Listen address: `:PORT` for all interfaces, `HOST:PORT`, `[IPv6]:PORT`.
    #[arg(
        short = 'a',
        long = "address",
        env = "DCGM_EXPORTER_LISTEN",
        default_value = ":9400"
    )]
    pub address: String,
    /// Sampling interval in milliseconds.
    #[arg(short = 'c', long = "collect-interval", env = "DCGM_EXPORTER_INTERVAL", default_value_t = DEFAULT_INTERVAL_MS)]
    pub collect_interval: u64,
    /// Attribute GPUs and MIG instances to the pods that hold them (kubelet pod-resources API,
    /// and pod metadata from the Kubernetes API).
    #[arg(short = 'k', long = "kubernetes", env = "DCGM_EXPORTER_KUBERNETES", action = ArgAction::SetTrue)]
    pub kubernetes: bool,
    /// Write `uuid` instead of `UUID` (dcgm-exporter 1.x label names).
    #[arg(short = 'o', long = "use-old-namespace", env = "DCGM_EXPORTER_USE_OLD_NAMESPACE", action = ArgAction::SetTrue)]
    pub use_old_namespace: bool,
    /// Leave out the `Hostname` label.
    #[arg(short = 'n', long = "no-hostname", env = "DCGM_EXPORTER_NO_HOSTNAME", action = ArgAction::SetTrue)]
    pub no_hostname: bool,
    /// Replace spaces in `modelName` with `-`.
    #[arg(long = "replace-blanks-in-model-name", env = "DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME", action = ArgAction::SetTrue)]
    pub replace_blanks_in_model_name: bool,
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
    /// NVSwitch/NVLink selection, same syntax as --devices (syntax-checked for compatibility;
    /// not used).
    #[arg(
        short = 's',
        long = "switch-devices",
        env = "DCGM_EXPORTER_OTHER_DEVICES_STR",
        default_value = "f"
    )]
    pub switch_devices: String,
    /// CPU selection, same syntax as --devices (syntax-checked for compatibility; not used).
    #[arg(
        short = 'p',
        long = "cpu-devices",
        env = "DCGM_EXPORTER_CPU_DEVICES_STR",
        default_value = "f"
    )]
    pub cpu_devices: String,
    /// ConfigMap `<namespace>:<name>` holding the counters (not implemented: use a mounted file).
    #[arg(
        short = 'm',
        long = "configmap-data",
        env = "DCGM_EXPORTER_CONFIGMAP_DATA",
        default_value = "none"
    )]
    pub configmap_data: String,
    /// Remote DCGM hostengine (no meaning here: gpu-exporter reads NVML directly).
    #[arg(
        short = 'r',
        long = "remote-hostengine-info",
        env = "DCGM_REMOTE_HOSTENGINE_INFO"
    )]
    pub remote_hostengine_info: Option<String>,
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
        default_value = "uid"
    )]
    pub kubernetes_gpu_id_type: String,
    /// Comma-separated regexes; only pod label keys fully matching one are added.
    #[arg(
        long = "kubernetes-pod-label-allowlist-regex",
        env = "DCGM_EXPORTER_KUBERNETES_POD_LABEL_ALLOWLIST_REGEX"
    )]
    pub kubernetes_pod_label_allowlist_regex: Option<String>,
    /// Kubelet pod-resources socket.
    #[arg(
        long = "pod-resources-kubelet-socket",
        env = "DCGM_POD_RESOURCES_KUBELET_SOCKET",
        default_value = "/var/lib/kubelet/pod-resources/kubelet.sock"
    )]
    pub pod_resources_kubelet_socket: PathBuf,
    /// Directory of `<gpu>` / `<gpu>.<gi>` files, one HPC job ID per line: adds `hpc_job`.
    #[arg(long = "hpc-job-mapping-dir", env = "DCGM_HPC_JOB_MAPPING_DIR")]
    pub hpc_job_mapping_dir: Option<PathBuf>,
    /// Extra resource names (comma-separated) to treat as GPUs, besides `nvidia.com/gpu`,
    /// `nvidia.com/gpu.*` and `nvidia.com/mig-*`.
    #[arg(
        long = "nvidia-resource-names",
        env = "NVIDIA_RESOURCE_NAMES",
        value_delimiter = ','
    )]
    pub nvidia_resource_names: Vec<String>,
    /// One copy of each series per pod sharing the device, with `vgpu` (dcgm-exporter's
    /// behaviour). Default: shared devices carry no pod labels (see README).
    #[arg(long = "kubernetes-virtual-gpus", env = "KUBERNETES_VIRTUAL_GPUS", action = ArgAction::SetTrue)]
    pub kubernetes_virtual_gpus: bool,
    /// Attribute devices held through DRA resource claims (reads ResourceSlices).
    #[arg(long = "kubernetes-enable-dra", env = "KUBERNETES_ENABLE_DRA", action = ArgAction::SetTrue)]
    pub kubernetes_enable_dra: bool,
    /// Time between two refreshes of the kubelet pod-resources API, in milliseconds.
    #[arg(
        long = "pod-resources-refresh-interval",
        env = "GPU_EXPORTER_POD_RESOURCES_REFRESH_INTERVAL",
        default_value_t = 5000
    )]
    pub pod_resources_refresh_interval: u64,
    /// Deadline of one call to the kubelet pod-resources API, in milliseconds.
    #[arg(
        long = "pod-resources-timeout",
        env = "GPU_EXPORTER_POD_RESOURCES_TIMEOUT",
        default_value_t = 10_000
    )]
    pub pod_resources_timeout: u64,
    /// With -k: watch this node's pods in the Kubernetes API for UIDs, labels, owning
    /// workloads and container IDs (needs get/list/watch on pods; see docs/kubernetes-rbac.md).
    #[arg(
        long = "kubernetes-pod-metadata",
        env = "GPU_EXPORTER_KUBERNETES_POD_METADATA",
        default_value_t = true,
        action = ArgAction::Set,
        value_name = "BOOL"
    )]
    pub kubernetes_pod_metadata: bool,
    /// With -k: list the processes on each GPU and attribute them to containers through
    /// /proc/<pid>/cgroup (`gpu_container_*` families; needs hostPID).
    #[arg(
        long = "kubernetes-process-metrics",
        env = "GPU_EXPORTER_KUBERNETES_PROCESS_METRICS",
        default_value_t = true,
        action = ArgAction::Set,
        value_name = "BOOL"
    )]
    pub kubernetes_process_metrics: bool,
    /// The host's /proc as seen by the exporter (for PID → container).
    #[arg(
        long = "proc-root",
        env = "GPU_EXPORTER_PROC_ROOT",
        default_value = "/proc"
    )]
    pub proc_root: PathBuf,
    /// exporter-toolkit web config file (TLS, client certificates, basic auth, response
    /// headers); see docs/web-config.md. `/health` and `/ready` stay open to probes.
    #[arg(long = "web-config-file", env = "DCGM_EXPORTER_WEB_CONFIG_FILE")]
    pub web_config_file: Option<PathBuf>,
    /// systemd socket activation (not supported).
    #[arg(long = "web-systemd-socket", env = "DCGM_EXPORTER_SYSTEMD_SOCKET", action = ArgAction::SetTrue)]
    pub web_systemd_socket: bool,
    /// Window of DCGM_EXP_XID_ERRORS_COUNT in ms.
    #[arg(
        short = 'x',
        long = "xid-count-window-size",
        env = "DCGM_EXPORTER_XID_COUNT_WINDOW_SIZE",
        default_value_t = 300_000
    )]
    pub xid_count_window_size: u64,
    /// Window of DCGM_EXP_CLOCK_EVENTS_COUNT in ms.
    #[arg(
        long = "clock-events-count-window-size",
        env = "DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE",
        default_value_t = 300_000
    )]
    pub clock_events_count_window_size: u64,
    /// Represent a MIG-enabled GPU only by its instances, each repeating the GPU's
    /// device-level fields (power, temperature, clocks…), as dcgm-exporter does. Default: the
    /// GPU's own series carry device-level fields once, instances carry instance fields.
    #[arg(long = "mig-repeat-device-fields", env = "GPU_EXPORTER_MIG_REPEAT_DEVICE_FIELDS", action = ArgAction::SetTrue)]
    pub mig_repeat_device_fields: bool,
    /// Xid codes whose `gpu_xid_errors_total` series are exported at 0 before they first
    /// occur (comma-separated; empty: none), so that alerts on `increase()` see the first one.
    #[arg(
        long = "xid-initialized-codes",
        env = "GPU_EXPORTER_XID_INITIALIZED_CODES",
        default_value = "48,62,64,74,79,95,119,120"
    )]
    pub xid_initialized_codes: String,
    /// Debug logging.
    #[arg(long = "debug", env = "DCGM_EXPORTER_DEBUG", action = ArgAction::SetTrue)]
    pub debug: bool,
    /// Log format: `text` or `json`.
    #[arg(long = "log-format", env = "DCGM_EXPORTER_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// DCGM fake GPUs (no meaning here; use --simulate).
    #[arg(long = "fake-gpus", env = "DCGM_EXPORTER_USE_FAKE_GPUS", action = ArgAction::SetTrue)]
    pub fake_gpus: bool,
    /// DCGM logging (no meaning here).
    #[arg(long = "enable-dcgm-log", env = "DCGM_EXPORTER_ENABLE_DCGM_LOG", action = ArgAction::SetTrue)]
    pub enable_dcgm_log: bool,
    /// DCGM log level (no meaning here).
    #[arg(long = "dcgm-log-level", env = "DCGM_EXPORTER_DCGM_LOG_LEVEL")]
    pub dcgm_log_level: Option<String>,
    /// Skip the libdcgm start-up check (no meaning here).
    #[arg(long = "disable-startup-validate", env = "DISABLE_STARTUP_VALIDATE", action = ArgAction::SetTrue)]
    pub disable_startup_validate: bool,
    /// GPU bind/unbind watch (no meaning here: GPUs are enumerated every tick).
    #[arg(long = "enable-gpu-bind-unbind-watch", env = "DCGM_EXPORTER_ENABLE_GPU_BIND_UNBIND_WATCH", action = ArgAction::SetTrue)]
    pub enable_gpu_bind_unbind_watch: bool,
    /// Poll interval of the bind/unbind watch (no meaning here).
    #[arg(
        long = "gpu-bind-unbind-poll-interval",
        env = "DCGM_EXPORTER_GPU_BIND_UNBIND_POLL_INTERVAL"
    )]
    pub gpu_bind_unbind_poll_interval: Option<String>,
    /// pprof endpoints (no meaning here).
    #[arg(long = "enable-pprof", env = "DCGM_EXPORTER_ENABLE_PPROF", action = ArgAction::SetTrue)]
    pub enable_pprof: bool,
    /// Per-scrape debug dumps (no meaning here).
    #[arg(long = "dump-enabled", env = "DCGM_EXPORTER_DUMP_ENABLED", action = ArgAction::SetTrue)]
    pub dump_enabled: bool,
    /// Run on a simulated node: SCENARIO is a built-in name (h100-mig, a100-l4, incidents) or a TOML file.
    #[arg(long = "simulate", env = "GPU_EXPORTER_SIMULATE", num_args = 0..=1, default_missing_value = "h100-mig", value_name = "SCENARIO")]
    pub simulate: Option<String>,
    /// Seed of the simulation (values are deterministic for a seed).
    #[arg(
        long = "simulate-seed",
        env = "GPU_EXPORTER_SIMULATE_SEED",
        default_value_t = 1
    )]
    pub simulate_seed: u64,
    /// Path of the NVML library (default: libnvidia-ml.so.1 via the dynamic loader; with
    /// --simulate: libnvml_sim.so next to the executable).
    #[arg(long = "nvml-lib", env = "GPU_EXPORTER_NVML_LIB")]
    pub nvml_lib: Option<PathBuf>,
}

/// A configuration error, naming the flag or file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A flag value is invalid.
    #[error("{0}")]
    Flag(String),
    /// The counters file is invalid.
    #[error(transparent)]
    Counters(#[from] CsvError),
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
    /// Simulation seed.
    pub simulate_seed: u64,
    /// NVML library path override.
    pub nvml_lib: Option<PathBuf>,
    /// `true` for JSON logs.
    pub json_logs: bool,
    /// Debug logging.
    pub debug: bool,
    /// See [`Cli::mig_repeat_device_fields`].
    pub mig_repeat_device_fields: bool,
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
        let code = item.parse::<u64>().map_err(|_| {
            ConfigError::Flag(format!(
                "--xid-initialized-codes {v:?}: {item:?} is not an Xid code (expected e.g. 48,79)"
            ))
        })?;
        out.push(code);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

impl Cli {
    /// Validates flags into a [`Config`].
    pub fn validate(&self) -> Result<Config, ConfigError> {
        if self.collect_interval < 100 {
            return Err(ConfigError::Flag(format!(
                "-c/--collect-interval {}: must be at least 100 (milliseconds)",
                self.collect_interval
            )));
        }
        address::parse_address(&self.address).map_err(ConfigError::Flag)?;
        let devices =
            DeviceSelection::parse("-d/--devices", &self.devices).map_err(ConfigError::Flag)?;
        DeviceSelection::check_syntax("-s/--switch-devices", &self.switch_devices)
            .map_err(ConfigError::Flag)?;
        DeviceSelection::check_syntax("-p/--cpu-devices", &self.cpu_devices)
            .map_err(ConfigError::Flag)?;
        for (flag, ms) in [
            ("-x/--xid-count-window-size", self.xid_count_window_size),
            (
                "--clock-events-count-window-size",
                self.clock_events_count_window_size,
            ),
        ] {
            if ms == 0 {
                return Err(ConfigError::Flag(format!(
                    "{flag} 0: must be a positive number of milliseconds"
                )));
            }
        }
        let xid_initialized = parse_xid_codes(&self.xid_initialized_codes)?;
        let mut warnings = Vec::new();
        let kubernetes = self.kubernetes_config(&mut warnings)?;
        let mut unused = |set: bool, flag: &str, why: &str| {
            if set {
                warnings.push(format!(
                    "{flag} is accepted for dcgm-exporter compatibility but {why}"
                ));
            }
        };
        unused(
            self.configmap_data != "none",
            "-m/--configmap-data",
            "is not implemented: mount the ConfigMap as a file and pass -f",
        );
        unused(
            self.remote_hostengine_info.is_some(),
            "-r/--remote-hostengine-info",
            "has no meaning: gpu-exporter reads NVML directly, without a DCGM hostengine",
        );
        unused(
            self.fake_gpus,
            "--fake-gpus",
            "has no meaning: use --simulate",
        );
        unused(
            self.enable_dcgm_log || self.dcgm_log_level.is_some(),
            "--enable-dcgm-log/--dcgm-log-level",
            "has no meaning without DCGM",
        );
        unused(
            self.disable_startup_validate,
            "--disable-startup-validate",
            "has no meaning without libdcgm",
        );
        unused(
            self.enable_gpu_bind_unbind_watch || self.gpu_bind_unbind_poll_interval.is_some(),
            "--enable-gpu-bind-unbind-watch",
            "has no meaning: GPUs are enumerated on every tick",
        );
        unused(
            self.enable_pprof,
            "--enable-pprof",
            "has no meaning in a Rust binary",
        );
        unused(self.dump_enabled, "--dump-enabled", "is not implemented");
        unused(
            self.web_systemd_socket,
            "--web-systemd-socket",
            "is not implemented: the exporter binds --address itself",
        );
        unused(
            self.switch_devices.trim() != "f",
            "-s/--switch-devices",
            "NVSwitch entities are not exported",
        );
        unused(
            self.cpu_devices.trim() != "f",
            "-p/--cpu-devices",
            "CPU entities are not exported",
        );
        Ok(Config {
            address: self.address.clone(),
            interval: Duration::from_millis(self.collect_interval),
            hostname: (!self.no_hostname).then(node_hostname),
            old_namespace: self.use_old_namespace,
            replace_blanks_in_model_name: self.replace_blanks_in_model_name,
            devices,
            mig_repeat_device_fields: self.mig_repeat_device_fields,
            xid_window: Duration::from_millis(self.xid_count_window_size),
            clock_events_window: Duration::from_millis(self.clock_events_count_window_size),
            xid_initialized,
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
            return Err(ConfigError::Flag(format!(
                "--kubernetes-gpu-id-type {:?}: expected uid or device-name",
                self.kubernetes_gpu_id_type
            )));
        }
        for (flag, ms) in [
            (
                "--pod-resources-refresh-interval",
                self.pod_resources_refresh_interval,
            ),
            ("--pod-resources-timeout", self.pod_resources_timeout),
        ] {
            if ms < 100 {
                return Err(ConfigError::Flag(format!(
                    "{flag} {ms}: must be at least 100 (milliseconds)"
                )));
            }
        }
        let allowlist = crate::sources::kube::labels::LabelAllowlist::parse(
            self.kubernetes_pod_label_allowlist_regex.as_deref(),
        )
        .map_err(ConfigError::Flag)?;
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
                    self.kubernetes_pod_label_allowlist_regex.is_some(),
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
        let default = std::path::Path::new(DEFAULT_COLLECTORS);
        let path = match &self.collectors {
            Some(p) => Some(p.clone()),
            None if default.exists() => Some(default.to_path_buf()),
            None => None,
        };
        if let Some(p) = path {
            let origin = format!("counters from {}", p.display());
            let (file, set) = CountersFile::open(p)?;
            return Ok(LoadedCounters {
                set,
                origin,
                file: Some(file),
            });
        }
        let set = parse_counters("built-in default-counters.csv", BUILTIN_DEFAULT_COUNTERS)?;
        Ok(LoadedCounters {
            set,
            origin: format!("{DEFAULT_COLLECTORS} not found: using the built-in default counters"),
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
