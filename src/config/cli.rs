//! The command line: every flag, its short form and its environment variable (dcgm-exporter's
//! names, `DCGM_EXPORTER_*`), as clap parses them into the raw [`Cli`], and the defaults.
//!
//! Definitions only: checking and combining the values is `config`'s job (`Cli::validate`);
//! nothing here reads files or the environment beyond what clap does.

use std::path::PathBuf;

use clap::{ArgAction, Parser};

use crate::gpu::plan::MIN_INTERVAL_MS;
use crate::gpu::reader::NvlinkLinks;

/// dcgm-exporter's default counters path.
pub const DEFAULT_COLLECTORS: &str = "/etc/dcgm-exporter/default-counters.csv";
/// The shipped default counter set, used when no file is given and the default path is absent.
pub const BUILTIN_DEFAULT_COUNTERS: &str = include_str!("../../counters/default-counters.csv");
/// Default sampling interval in milliseconds (see docs/flags.md "Sampling interval").
pub const DEFAULT_INTERVAL_MS: u64 = 5000;
/// The longest interval or window accepted, in ms (one day): a larger value is a typo.
pub const MAX_WINDOW_MS: u64 = 86_400_000;

/// dcgm-exporter's documented short forms that are not one-letter flags (Go takes them with one
/// dash or two, and with `=VALUE`).
const GO_SHORT_FORMS: &[(&str, &str)] = &[("rbmn", "replace-blanks-in-model-name")];

/// The strings Go's `strconv.ParseBool` accepts, which dcgm-exporter's flag library uses for
/// `--flag=VALUE` and for boolean environment variables.
const GO_TRUE: [&str; 6] = ["1", "t", "T", "TRUE", "true", "True"];
/// See [`GO_TRUE`].
const GO_FALSE: [&str; 6] = ["0", "f", "F", "FALSE", "false", "False"];

/// Parses a boolean as Go's `strconv.ParseBool` does. An empty value is `false`, as
/// dcgm-exporter's flag library reads a boolean environment variable set to "".
pub fn go_bool(s: &str) -> Result<bool, String> {
    if s.is_empty() {
        Ok(false)
    } else if GO_TRUE.contains(&s) {
        Ok(true)
    } else if GO_FALSE.contains(&s) {
        Ok(false)
    } else {
        Err(format!(
            "not a boolean (expected one of {}, {})",
            GO_TRUE.join(", "),
            GO_FALSE.join(", ")
        ))
    }
}

/// A millisecond flag's parser: a whole number up to [`MAX_WINDOW_MS`]; anything else (a
/// negative number, a unit, an overflow) is refused naming the accepted range, `min..=MAX`.
/// Values under `min` pass, so that `Cli::validate` refuses them naming the minimum, as it
/// does for a value from `--config-file`.
fn millis(min: u64) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync + 'static {
    move |s: &str| {
        s.trim()
            .parse::<u64>()
            .ok()
            .filter(|v| *v <= MAX_WINDOW_MS)
            .ok_or_else(|| {
                format!("expected a whole number of milliseconds in {min}..={MAX_WINDOW_MS}")
            })
    }
}

/// A whole-number flag's parser: a number in `min..=max` that fits `T`; anything else (a
/// negative number, a unit, an overflow) is refused naming the accepted range. Give the flag
/// `allow_negative_numbers` too, so that `-1` reaches this parser instead of being taken for a
/// flag.
fn whole<T>(
    min: u64,
    max: u64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64>,
{
    move |s: &str| {
        s.trim()
            .parse::<u64>()
            .ok()
            .filter(|v| (min..=max).contains(v))
            .and_then(|v| T::try_from(v).ok())
            .ok_or_else(|| format!("expected a whole number in {min}..={max}"))
    }
}

/// `--nvlink-links`'s values, `per-link` or `totals`.
fn nvlink_links_parser() -> impl clap::builder::TypedValueParser<Value = NvlinkLinks> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["per-link", "totals"]).map(|v| {
        if v == "totals" {
            NvlinkLinks::Totals
        } else {
            NvlinkLinks::PerLink
        }
    })
}

impl Cli {
    /// Parses the process's arguments as dcgm-exporter's Go flag library would accept them
    /// (see [`go_style_args`]); exits on a syntax error as clap does.
    pub fn parse_go_style() -> Self {
        Self::try_parse_go_style(std::env::args_os()).unwrap_or_else(|e| e.exit())
    }

    /// Parses `args` (the program name first) as [`Cli::parse_go_style`] does. A setting that
    /// `--config-file` may also set is `None` unless a flag or variable gave it.
    pub fn try_parse_go_style(
        args: impl IntoIterator<Item = std::ffi::OsString>,
    ) -> Result<Self, clap::Error> {
        Self::try_parse_go_style_with(Self::go_command(), args).map(|(cli, _)| cli)
    }

    /// Parses `args` with `cmd`, the daemon's [`Cli::go_command`] with arguments of its own
    /// added (`gpu-exporter check`'s), as [`Cli::try_parse_go_style`] does; returns the flags
    /// and the matches, from which the caller reads its own arguments.
    pub fn try_parse_go_style_with(
        cmd: clap::Command,
        args: impl IntoIterator<Item = std::ffi::OsString>,
    ) -> Result<(Self, clap::ArgMatches), clap::Error> {
        use clap::FromArgMatches;
        let args = go_style_args(&cmd, args);
        let matches = cmd
            .clone()
            .try_get_matches_from(&args)
            .map_err(|e| name_the_variable(e, &cmd, &args))?;
        Ok((Self::from_arg_matches(&matches)?, matches))
    }

    /// The command as Go's flag library reads it: every on/off switch (`-k`, `--debug`, …)
    /// also takes an attached value, `--kubernetes=false`, `-k=1`, and its environment
    /// variable any of Go's boolean spellings (`1`, `t`, `TRUE`, `False`, …).
    pub fn go_command() -> clap::Command {
        use clap::CommandFactory;
        // Go's flag library lets any flag be given again: the last value wins.
        Self::command().args_override_self(true).mut_args(|a| {
            if !matches!(a.get_action(), ArgAction::SetTrue) {
                return a;
            }
            a.action(ArgAction::Set)
                .num_args(0..=1)
                .require_equals(true)
                .default_missing_value("true")
                .default_value("false")
                .value_name("BOOL")
                .value_parser(go_bool)
        })
    }
}

/// A bad value that came from an environment variable, not from the command line: clap names
/// the flag only, so the error is rewritten to name the variable (which is what a DaemonSet
/// sets).
fn name_the_variable(
    e: clap::Error,
    cmd: &clap::Command,
    args: &[std::ffi::OsString],
) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        e.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return e;
    }
    let Some(ContextValue::String(invalid)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    // `--collect-interval <COLLECT_INTERVAL>`, `--kubernetes[=<BOOL>]`: the flag itself.
    let flag = invalid.split([' ', '[']).next().unwrap_or_default();
    let named = |a: &clap::Arg, x: &str| {
        a.get_long()
            .is_some_and(|l| x == format!("--{l}") || x.starts_with(&format!("--{l}=")))
            || a.get_short()
                .is_some_and(|s| x.starts_with(&format!("-{s}")))
    };
    let Some(arg) = cmd.get_arguments().find(|a| named(a, flag)) else {
        return e;
    };
    let Some(var) = arg.get_env() else {
        return e;
    };
    let on_command_line = args
        .iter()
        .skip(1)
        .any(|x| x.to_str().is_some_and(|x| named(arg, x)));
    if on_command_line || std::env::var_os(var).is_none() {
        return e;
    }
    let text = e.to_string();
    let first = text.lines().next().unwrap_or_default();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    clap::Error::raw(
        e.kind(),
        format!("environment variable {}: {first}\n", var.to_string_lossy()),
    )
    .with_cmd(cmd)
}

/// Rewrites the arguments Go's flag library accepts and clap does not: a long flag written with
/// one dash (`-collectors`, `-address=:9400`) gets its second dash, and `-rbmn` or `--rbmn`
/// (with or without `=VALUE`) becomes `--replace-blanks-in-model-name`. Short flags and their clusters (`-k`, `-f FILE`) are
/// left alone, as is everything after `--`.
pub fn go_style_args(
    cmd: &clap::Command,
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let longs: Vec<&str> = cmd.get_arguments().filter_map(|a| a.get_long()).collect();
    let mut out = Vec::new();
    let mut rest = false;
    for (i, arg) in args.into_iter().enumerate() {
        let Some(s) = arg.to_str().filter(|_| i > 0 && !rest) else {
            out.push(arg);
            continue;
        };
        if s == "--" {
            rest = true;
            out.push(arg);
            continue;
        }
        let bare = s.strip_prefix("--").or_else(|| s.strip_prefix('-'));
        let (name, value) = bare.map_or(("", None), |b| {
            b.split_once('=').map_or((b, None), |(n, v)| (n, Some(v)))
        });
        if let Some((_, long)) = GO_SHORT_FORMS.iter().find(|(short, _)| *short == name) {
            out.push(match value {
                Some(v) => format!("--{long}={v}").into(),
                None => format!("--{long}").into(),
            });
            continue;
        }
        let rewritten = s
            .strip_prefix('-')
            .filter(|r| !r.starts_with('-'))
            .and_then(|r| {
                let name = r.split_once('=').map_or(r, |(n, _)| n);
                (name.len() > 1 && longs.contains(&name)).then(|| format!("--{r}"))
            });
        match rewritten {
            Some(r) => out.push(r.into()),
            None => out.push(arg),
        }
    }
    out
}

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
    /// Sampling interval in milliseconds [default: 5000, or the configuration file's
    /// `collection.interval`]. `None` until given (a flag wins over `--config-file`).
    #[arg(
        short = 'c',
        long = "collect-interval",
        env = "DCGM_EXPORTER_INTERVAL",
        allow_negative_numbers = true,
        value_parser = millis(MIN_INTERVAL_MS)
    )]
    pub collect_interval: Option<u64>,
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
    /// NVSwitch selection for DCGM's NVSwitch rows, same syntax as --devices: `g[:ids]` the
    /// switches, `i[:ids]` their ports (`f`: all).
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
    /// Remote DCGM hostengine for the profiling fields NVML cannot serve: host:port, host
    /// (port 5555), tcp://host:port or unix:///path. Makes --dcgm-mode default to remote.
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
        allow_negative_numbers = true,
        value_parser = millis(MIN_INTERVAL_MS)
    )]
    pub pod_resources_refresh_interval: u64,
    /// Deadline of one call to the kubelet pod-resources API, in milliseconds.
    #[arg(
        long = "pod-resources-timeout",
        env = "GPU_EXPORTER_POD_RESOURCES_TIMEOUT",
        default_value_t = 10_000,
        allow_negative_numbers = true,
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
    /// /proc/<pid>/cgroup (`gpu_container_*` families; needs hostPID).
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
        default_value_t = 300_000,
        allow_negative_numbers = true,
        value_parser = millis(1)
    )]
    pub xid_count_window_size: u64,
    /// Window of DCGM_EXP_CLOCK_EVENTS_COUNT in ms.
    #[arg(
        long = "clock-events-count-window-size",
        env = "DCGM_EXPORTER_CLOCK_EVENTS_COUNT_WINDOW_SIZE",
        default_value_t = 300_000,
        allow_negative_numbers = true,
        value_parser = millis(1)
    )]
    pub clock_events_count_window_size: u64,
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
        value_parser = nvlink_links_parser()
    )]
    pub nvlink_links: NvlinkLinks,
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
        env = "GPU_EXPORTER_MAX_LABELS_PER_SERIES"
    )]
    pub max_labels_per_series: Option<String>,
    /// Xid codes whose `gpu_xid_errors_total` series are exported at 0 before they first
    /// occur (comma-separated; empty: none), so that alerts on `increase()` see the first one.
    #[arg(
        long = "xid-initialized-codes",
        env = "GPU_EXPORTER_XID_INITIALIZED_CODES",
        default_value = ""
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
    /// An embedded DCGM hostengine logs to standard output, at --dcgm-log-level.
    #[arg(long = "enable-dcgm-log", env = "DCGM_EXPORTER_ENABLE_DCGM_LOG", action = ArgAction::SetTrue)]
    pub enable_dcgm_log: bool,
    /// --enable-dcgm-log's level: NONE (the default), FATAL, ERROR, WARN, INFO, DEBUG or VERB.
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
    /// Directory of the debug dumps (no meaning here).
    #[arg(long = "dump-directory", env = "DCGM_EXPORTER_DUMP_DIRECTORY")]
    pub dump_directory: Option<String>,
    /// How long debug dumps are kept (no meaning here).
    #[arg(long = "dump-retention", env = "DCGM_EXPORTER_DUMP_RETENTION")]
    pub dump_retention: Option<String>,
    /// Compression of the debug dumps (no meaning here). An on/off switch, as in
    /// dcgm-exporter: `--dump-compression` or `--dump-compression=false`.
    #[arg(
        long = "dump-compression",
        env = "DCGM_EXPORTER_DUMP_COMPRESSION",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_name = "BOOL",
        value_parser = go_bool
    )]
    pub dump_compression: Option<bool>,
    /// The health outputs' flags.
    #[command(flatten)]
    pub health: super::health_args::HealthArgs,
    /// dcgm-exporter 4.8.3+'s YAML configuration file (schema v1 or v2): counters, interval,
    /// per-collection intervals, scrape limit, exporter metrics. Flags and environment
    /// variables given explicitly override it. Read once at start.
    #[arg(long = "config-file", env = "DCGM_EXPORTER_CONFIG_FILE")]
    pub config_file: Option<PathBuf>,
    /// Time allowed to read a request, as a Go duration (dcgm-exporter 4.8.3+; validated).
    #[arg(long = "web-read-timeout", env = "DCGM_EXPORTER_WEB_READ_TIMEOUT")]
    pub web_read_timeout: Option<String>,
    /// Connections open at once; beyond it the oldest open connection is closed for the new
    /// one (a flood of slow clients cannot lock Prometheus out or exhaust file descriptors).
    #[arg(
        long = "web-max-connections",
        env = "GPU_EXPORTER_WEB_MAX_CONNECTIONS",
        default_value_t = 512,
        allow_negative_numbers = true,
        value_parser = whole::<u32>(1, 65_536)
    )]
    pub web_max_connections: u32,
    /// Time allowed to write a response, as a Go duration (dcgm-exporter 4.8.3+; validated).
    #[arg(long = "web-write-timeout", env = "DCGM_EXPORTER_WEB_WRITE_TIMEOUT")]
    pub web_write_timeout: Option<String>,
    /// Container labels from the CRI (dcgm-exporter 4.8.3+; not implemented).
    #[arg(long = "container-labels", env = "DCGM_EXPORTER_CONTAINER_LABELS", action = ArgAction::SetTrue)]
    pub container_labels: bool,
    /// CRI socket for --container-labels (not implemented).
    #[arg(
        long = "container-runtime-socket",
        env = "DCGM_CONTAINER_RUNTIME_SOCKET"
    )]
    pub container_runtime_socket: Option<String>,
    /// How long DCGM keeps the samples of the exporter's watches (Go duration; default 10m).
    #[arg(long = "watch-max-keep-age", env = "DCGM_EXPORTER_WATCH_MAX_KEEP_AGE")]
    pub watch_max_keep_age: Option<String>,
    /// How many samples DCGM keeps per watched field (0: no limit).
    #[arg(
        long = "watch-max-keep-samples",
        env = "DCGM_EXPORTER_WATCH_MAX_KEEP_SAMPLES"
    )]
    pub watch_max_keep_samples: Option<String>,
    /// `/health` answers 503 while no GPU is being exported.
    #[arg(long = "health-require-gpus", env = "DCGM_EXPORTER_HEALTH_REQUIRE_GPUS", action = ArgAction::SetTrue)]
    pub health_require_gpus: bool,
    /// Scrapes of /metrics served at once; more get 503. 0: no limit [default: 16, or the
    /// configuration file's `server.maxConcurrentScrapes`].
    #[arg(
        long = "max-concurrent-scrapes",
        env = "DCGM_EXPORTER_MAX_CONCURRENT_SCRAPES",
        allow_negative_numbers = true,
        value_parser = whole::<u32>(0, u32::MAX.into())
    )]
    pub max_concurrent_scrapes: Option<u32>,
    /// Which dcgm-exporter this node replaces: native, dcgm-4.8.2, dcgm-4.8.4 (or 4.8.3) or
    /// dcgm-4.9. Sets the host label's name, the MIG shape and the pod-label collision prefix.
    #[arg(
        long = "compatibility",
        env = "GPU_EXPORTER_COMPATIBILITY",
        default_value = "native",
        value_name = "PROFILE"
    )]
    pub compatibility: String,
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
    /// Run on a simulated node: SCENARIO is a built-in name (h100-mig, a100-l4, a100-mig-t4, incidents, hgx-h200, hgx-b200, gb200-nvl72, l40s) or a TOML file.
    #[arg(long = "simulate", env = "GPU_EXPORTER_SIMULATE", num_args = 0..=1, default_missing_value = "h100-mig", value_name = "SCENARIO")]
    pub simulate: Option<String>,
    /// Seed of the simulation (values are deterministic for a seed).
    #[arg(
        long = "simulate-seed",
        env = "GPU_EXPORTER_SIMULATE_SEED",
        default_value_t = 1,
        allow_negative_numbers = true,
        value_parser = whole::<u64>(0, u64::MAX)
    )]
    pub simulate_seed: u64,
    /// Path of the NVML library (default: libnvidia-ml.so.1 via the dynamic loader; with
    /// --simulate: libnvml_sim.so next to the executable).
    #[arg(long = "nvml-lib", env = "GPU_EXPORTER_NVML_LIB")]
    pub nvml_lib: Option<PathBuf>,
    /// How DCGM is reached for the profiling fields NVML cannot serve: remote (the hostengine
    /// of -r), embedded (an in-process hostengine) or off. Default: remote when -r is given,
    /// embedded with --simulate, else off.
    #[arg(long = "dcgm-mode", env = "DCGM_EXPORTER_DCGM_MODE")]
    pub dcgm_mode: Option<String>,
    /// Path of the DCGM library (default: libdcgm.so.4 via the dynamic loader; with
    /// --simulate: libdcgm_sim.so next to the executable).
    #[arg(long = "dcgm-lib", env = "GPU_EXPORTER_DCGM_LIB")]
    pub dcgm_lib: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn rewrite(args: &[&str]) -> Vec<String> {
        let argv = std::iter::once("gpu-exporter")
            .chain(args.iter().copied())
            .map(std::ffi::OsString::from);
        go_style_args(&Cli::command(), argv)
            .into_iter()
            .skip(1)
            .map(|a| a.into_string().unwrap_or_default())
            .collect()
    }

    #[test]
    fn go_style_arguments_become_clap_arguments() {
        assert_eq!(rewrite(&["-rbmn"]), ["--replace-blanks-in-model-name"]);
        assert_eq!(
            rewrite(&["-collectors", "/etc/x.csv", "-address=:9400"]),
            ["--collectors", "/etc/x.csv", "--address=:9400"]
        );
        // Short flags, clusters, values and unknown names are left to clap.
        assert_eq!(
            rewrite(&[
                "-k",
                "-f",
                "-x.csv",
                "-ko",
                "-unknown-flag",
                "--devices",
                "g"
            ]),
            [
                "-k",
                "-f",
                "-x.csv",
                "-ko",
                "-unknown-flag",
                "--devices",
                "g"
            ]
        );
        // Nothing after `--` changes, and `-rbmn` stays a value there.
        assert_eq!(rewrite(&["--", "-rbmn"]), ["--", "-rbmn"]);
        // Two dashes and attached values too; a plain value `rbmn` is left alone.
        assert_eq!(
            rewrite(&["--rbmn", "-rbmn=false", "--rbmn=1", "-r", "rbmn"]),
            [
                "--replace-blanks-in-model-name",
                "--replace-blanks-in-model-name=false",
                "--replace-blanks-in-model-name=1",
                "-r",
                "rbmn"
            ]
        );
        // The rewritten line parses with the meaning dcgm-exporter gives it.
        let cli = Cli::parse_from(
            std::iter::once("gpu-exporter".to_owned()).chain(rewrite(&["-rbmn", "-no-hostname"])),
        );
        assert!(cli.replace_blanks_in_model_name);
        assert!(cli.no_hostname);
        assert!(cli.remote_hostengine_info.is_none());
    }

    #[test]
    fn booleans_are_go_booleans() {
        for t in GO_TRUE {
            assert_eq!(go_bool(t), Ok(true));
        }
        for f in GO_FALSE.into_iter().chain([""]) {
            assert_eq!(go_bool(f), Ok(false));
        }
        for bad in ["yes", "on", "tRUE", " true", "2"] {
            assert!(go_bool(bad).is_err(), "{bad:?}");
        }
        let parse = |args: &[&str]| {
            Cli::try_parse_go_style(
                std::iter::once("gpu-exporter")
                    .chain(args.iter().copied())
                    .map(std::ffi::OsString::from),
            )
        };
        let cli = parse(&["--kubernetes=true", "-o=1", "-n", "--dump-compression"]).unwrap();
        assert!(cli.kubernetes && cli.use_old_namespace && cli.no_hostname);
        assert_eq!(cli.dump_compression, Some(true));
        let cli = parse(&["-k=false", "--debug=F", "--dump-compression=0"]).unwrap();
        assert!(!cli.kubernetes && !cli.debug);
        assert_eq!(cli.dump_compression, Some(false));
        // A setting --config-file may also set is typed "given or not": given explicitly,
        // even as false, it wins over the file; not given, it is None.
        let given = parse(&["--enable-exporter-metrics=false", "-c", "200"]).unwrap();
        assert_eq!(given.enable_exporter_metrics, Some(false));
        assert_eq!(given.collect_interval, Some(200));
        let bare = parse(&["--enable-exporter-metrics"]).unwrap();
        assert_eq!(bare.enable_exporter_metrics, Some(true));
        let none = parse(&[]).unwrap();
        assert_eq!(none.enable_exporter_metrics, None);
        assert_eq!(none.collect_interval, None);
        assert_eq!(none.max_concurrent_scrapes, None);
        // The last occurrence wins, as in Go.
        assert!(!parse(&["-k", "-k=false"]).unwrap().kubernetes);
        assert_eq!(
            parse(&["-c", "200", "-c", "300"]).unwrap().collect_interval,
            Some(300)
        );
        let e = parse(&["-x", "-5"]).unwrap_err().to_string();
        assert!(
            e.contains("--xid-count-window-size") && e.contains("1..=86400000"),
            "{e}"
        );
        // Every whole-number flag takes -1 as a value, refused naming the flag and its range.
        for (args, flag, range) in [
            (
                &["--simulate-seed", "-1"][..],
                "--simulate-seed",
                "0..=18446744073709551615",
            ),
            (
                &["--max-concurrent-scrapes", "-1"],
                "--max-concurrent-scrapes",
                "0..=4294967295",
            ),
            (
                &["--max-concurrent-scrapes", "4294967296"],
                "--max-concurrent-scrapes",
                "0..=4294967295",
            ),
            (
                &["--web-max-connections", "-1"],
                "--web-max-connections",
                "1..=65536",
            ),
            (
                &["--pod-resources-timeout", "-1"],
                "--pod-resources-timeout",
                "100..=86400000",
            ),
        ] {
            let e = parse(args).unwrap_err().to_string();
            assert!(
                e.contains(flag) && e.contains(range) && !e.contains("unexpected argument"),
                "{args:?}: {e}"
            );
        }
        let ok = parse(&[
            "--simulate-seed",
            "18446744073709551615",
            "--max-concurrent-scrapes",
            "0",
        ])
        .unwrap();
        assert_eq!(ok.simulate_seed, u64::MAX);
        assert_eq!(ok.max_concurrent_scrapes, Some(0));
    }
}
