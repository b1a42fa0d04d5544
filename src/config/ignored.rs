//! The dcgm-exporter flags accepted here without effect: each one given gets one start-up
//! warning that names it and says why it does nothing. Data and wording only: it reads the
//! parsed [`Cli`], nothing else.

use super::cli::Cli;

/// The warnings for the flags of `cli` that are given but have no effect here, one per flag,
/// in the order dcgm-exporter lists its flags.
pub fn warnings(cli: &Cli) -> Vec<String> {
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
