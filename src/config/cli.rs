//! The command line: every flag, its short form and its environment variable (dcgm-exporter's
//! names, `DCGM_EXPORTER_*`), as clap parses them into the raw [`Cli`], and the defaults.
//!
//! Definitions only: checking and combining the values is `config`'s job (`Cli::validate`);
//! nothing here reads files or the environment beyond what clap does.

use std::path::PathBuf;

use clap::{ArgAction, Parser};

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
