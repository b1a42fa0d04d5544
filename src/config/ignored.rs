//! The dcgm-exporter flags accepted here without effect ([`IgnoredArgs`], flattened into
//! [`super::cli::Cli`] under their own `--help` heading): each one given gets one start-up
//! warning that names it and says why it does nothing. Definitions and wording only: it reads
//! the parsed flags, nothing else.

use clap::{ArgAction, Args};

use super::values::go_bool;

/// dcgm-exporter's flags that are accepted (so that its DaemonSet's arguments still start the
/// exporter) but do nothing here.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Accepted for dcgm-exporter compatibility, without effect")]
pub struct IgnoredArgs {
    /// ConfigMap `<namespace>:<name>` holding the counters (not implemented: use a mounted file).
    #[arg(
        short = 'm',
        long = "configmap-data",
        env = "DCGM_EXPORTER_CONFIGMAP_DATA",
        default_value = "none"
    )]
    pub configmap_data: String,
    /// CPU selection, same syntax as --devices (syntax-checked for compatibility; not used).
    #[arg(
        short = 'p',
        long = "cpu-devices",
        env = "DCGM_EXPORTER_CPU_DEVICES_STR",
        default_value = "f"
    )]
    pub cpu_devices: String,
    /// DCGM fake GPUs (no meaning here; use --simulate).
    #[arg(long = "fake-gpus", env = "DCGM_EXPORTER_USE_FAKE_GPUS", action = ArgAction::SetTrue)]
    pub fake_gpus: bool,
    /// systemd socket activation (not supported).
    #[arg(long = "web-systemd-socket", env = "DCGM_EXPORTER_SYSTEMD_SOCKET", action = ArgAction::SetTrue)]
    pub web_systemd_socket: bool,
    /// Per-scrape debug dumps (no meaning here).
    #[arg(long = "dump-enabled", env = "DCGM_EXPORTER_DUMP_ENABLED", action = ArgAction::SetTrue)]
    pub dump_enabled: bool,
    /// Directory of the debug dumps (no meaning here).
    #[arg(long = "dump-directory", env = "DCGM_EXPORTER_DUMP_DIRECTORY")]
    pub dump_directory: Option<String>,
    /// How long debug dumps are kept (no meaning here).
    #[arg(
        long = "dump-retention",
        env = "DCGM_EXPORTER_DUMP_RETENTION",
        allow_hyphen_values = true
    )]
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
    /// Skip the libdcgm start-up check (no meaning here).
    #[arg(long = "disable-startup-validate", env = "DISABLE_STARTUP_VALIDATE", action = ArgAction::SetTrue)]
    pub disable_startup_validate: bool,
    /// GPU bind/unbind watch (no meaning here: GPUs are enumerated every tick).
    #[arg(long = "enable-gpu-bind-unbind-watch", env = "DCGM_EXPORTER_ENABLE_GPU_BIND_UNBIND_WATCH", action = ArgAction::SetTrue)]
    pub enable_gpu_bind_unbind_watch: bool,
    /// Poll interval of the bind/unbind watch (no meaning here).
    #[arg(
        long = "gpu-bind-unbind-poll-interval",
        env = "DCGM_EXPORTER_GPU_BIND_UNBIND_POLL_INTERVAL",
        allow_hyphen_values = true
    )]
    pub gpu_bind_unbind_poll_interval: Option<String>,
    /// pprof endpoints (no meaning here).
    #[arg(long = "enable-pprof", env = "DCGM_EXPORTER_ENABLE_PPROF", action = ArgAction::SetTrue)]
    pub enable_pprof: bool,
    /// Container labels from the CRI (dcgm-exporter 4.8.3+; not implemented).
    #[arg(long = "container-labels", env = "DCGM_EXPORTER_CONTAINER_LABELS", action = ArgAction::SetTrue)]
    pub container_labels: bool,
    /// CRI socket for --container-labels (not implemented).
    #[arg(
        long = "container-runtime-socket",
        env = "DCGM_CONTAINER_RUNTIME_SOCKET"
    )]
    pub container_runtime_socket: Option<String>,
}

/// The warnings for the flags of `cli` that are given but have no effect here, one per flag,
/// in the order dcgm-exporter lists its flags.
pub fn warnings(cli: &IgnoredArgs) -> Vec<String> {
    const NO_DUMPS: &str = "is not implemented: there are no per-scrape debug dumps";
    const NO_CRI: &str = "is not implemented: pod labels come from the Kubernetes API \
                          (--kubernetes-enable-pod-labels)";
    const NO_BIND: &str = "has no meaning: GPUs are enumerated on every tick";
    let given: [(bool, &str, &str); 14] = [
        (
            cli.configmap_data != "none",
            "-m/--configmap-data",
            "is not implemented: mount the ConfigMap as a file and pass -f",
        ),
        (
            cli.cpu_devices.trim() != "f",
            "-p/--cpu-devices",
            "CPU entities are not exported",
        ),
        (
            cli.fake_gpus,
            "--fake-gpus",
            "has no meaning: use --simulate",
        ),
        (
            cli.web_systemd_socket,
            "--web-systemd-socket",
            "is not implemented: the exporter binds --address itself",
        ),
        (cli.dump_enabled, "--dump-enabled", NO_DUMPS),
        (cli.dump_directory.is_some(), "--dump-directory", NO_DUMPS),
        (cli.dump_retention.is_some(), "--dump-retention", NO_DUMPS),
        (
            cli.dump_compression.is_some(),
            "--dump-compression",
            NO_DUMPS,
        ),
        (
            cli.disable_startup_validate,
            "--disable-startup-validate",
            "has no effect: the DCGM library is checked when it loads (its version and \
             calls), and a failed check is logged while NVML's fields are served",
        ),
        (
            cli.enable_gpu_bind_unbind_watch,
            "--enable-gpu-bind-unbind-watch",
            NO_BIND,
        ),
        (
            cli.gpu_bind_unbind_poll_interval.is_some(),
            "--gpu-bind-unbind-poll-interval",
            NO_BIND,
        ),
        (
            cli.enable_pprof,
            "--enable-pprof",
            "has no meaning in a Rust binary",
        ),
        (cli.container_labels, "--container-labels", NO_CRI),
        (
            cli.container_runtime_socket.is_some(),
            "--container-runtime-socket",
            NO_CRI,
        ),
    ];
    given
        .into_iter()
        .filter(|(set, _, _)| *set)
        .map(|(_, flag, why)| {
            format!("{flag} is accepted for dcgm-exporter compatibility but {why}")
        })
        .collect()
}
