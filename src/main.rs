//! The `gpu-exporter` binary: flags → counters → sampler thread → HTTP server.
//!
//! Only this file decides exit codes: 0 after a graceful shutdown, 1 for a configuration
//! error (bad flag, bad counters CSV, unusable `--simulate`), 2 for command-line syntax
//! (from clap). `gpu-exporter probe` (src/probe/) has its own: 0 passed, 1 failed, 2 usage.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::anyhow;
use gpu_exporter::attribution::{self, AttributionOptions, Attributor, Sources};
use gpu_exporter::config::counters::{self, CountersFile};
use gpu_exporter::config::{Cli, Config};
use gpu_exporter::exposition::EncodeOptions;
use gpu_exporter::exposition::publish::Shared;
use gpu_exporter::gpu;
use gpu_exporter::gpu::reader::ReaderOptions;
use gpu_exporter::sampler::{self, Sampler};
use gpu_exporter::serve as http;
#[cfg(feature = "sim")]
use gpu_exporter::sim::{cluster::SimCluster, library::SimLib};
use gpu_exporter::snapshot::Snapshot;
use gpu_exporter::sources::hpc::{CHECK_INTERVAL, HpcSource};
use tracing::{error, info, warn};

fn init_logging(cfg: &Config) {
    let default = if cfg.debug { "debug" } else { "info" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour codes only on a terminal: a DaemonSet's stderr is a pipe to a log file.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    if cfg.json_logs {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// The signals registered first thing, before the flags are even parsed, so that none of them
/// can end the process during start-up by its default action: SIGUSR1, SIGUSR2 and SIGALRM,
/// which a DaemonSet's container may receive (logged and ignored once logging is up, see
/// [`log_stray_signals`]), and SIGHUP (the counters reload, once the file is known). A signal
/// that arrives before its listener runs is kept for it (tokio keeps one per kind).
struct EarlySignals {
    stray: Vec<(&'static str, tokio::signal::unix::Signal)>,
    hangup: Option<tokio::signal::unix::Signal>,
    /// The signals that could not be listened for, and why: logged once logging is up.
    failures: Vec<String>,
}

impl EarlySignals {
    fn register(runtime: &tokio::runtime::Handle) -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        let _entered = runtime.enter();
        let mut failures = Vec::new();
        let mut stray = Vec::new();
        for (name, kind) in [
            ("SIGUSR1", SignalKind::user_defined1()),
            ("SIGUSR2", SignalKind::user_defined2()),
            ("SIGALRM", SignalKind::alarm()),
        ] {
            match signal(kind) {
                Ok(s) => stray.push((name, s)),
                Err(e) => failures.push(format!(
                    "cannot listen for {name} ({e}): it would end the process"
                )),
            }
        }
        let hangup = match signal(SignalKind::hangup()) {
            Ok(s) => Some(s),
            Err(e) => {
                failures.push(format!(
                    "cannot listen for SIGHUP ({e}): it would end the process, and counters \
                     reload on file change only"
                ));
                None
            }
        };
        Self {
            stray,
            hangup,
            failures,
        }
    }
}

/// Logs each of the stray signals registered early, the first of a kind as a warning, and
/// ignores them.
fn log_stray_signals(
    runtime: &tokio::runtime::Handle,
    stray: Vec<(&'static str, tokio::signal::unix::Signal)>,
) {
    for (name, mut s) in stray {
        runtime.spawn(async move {
            let mut seen: u64 = 0;
            while s.recv().await.is_some() {
                seen += 1;
                if seen == 1 {
                    warn!(
                        "{name} received and ignored (gpu-exporter reloads its counters on SIGHUP \
                         and stops on SIGTERM or SIGINT); further {name}s are logged at debug \
                         level"
                    );
                } else {
                    tracing::debug!(count = seen, "{name} received and ignored");
                }
            }
        });
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            error!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                error!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = ctrl_c => info!("Ctrl-C received, shutting down"),
        _ = term => info!("SIGTERM received, shutting down"),
    }
}

fn run(mut cli: Cli, rt: tokio::runtime::Runtime, early: EarlySignals) -> anyhow::Result<()> {
    let file_notes = cli.apply_config_file()?;
    let mut cfg = cli.validate()?;
    cfg.warnings.extend(file_notes);
    // An empty value means no file, as in exporter-toolkit.
    let web_config = match cli
        .web_config_file
        .as_ref()
        .filter(|p| !p.as_os_str().is_empty())
    {
        Some(p) => Some(Arc::new(
            http::web_config::WebConfig::load(p).map_err(|e| anyhow!("--web-config-file {e}"))?,
        )),
        None => None,
    };
    init_logging(&cfg);
    for f in &early.failures {
        warn!("{f}");
    }
    log_stray_signals(rt.handle(), early.stray);
    for w in &cfg.warnings {
        warn!("{w}");
    }
    let loaded = cli.load_counters()?;
    let counters = loaded.set;
    info!(
        "{} ({} metrics, {} labels)",
        loaded.origin,
        counters.metrics().count(),
        counters.labels().count()
    );
    for w in &counters.warnings {
        warn!("{w}");
    }
    let counters = Arc::new(counters);
    // Hot reload: the file is re-read when it changes (checked every tick) or on SIGHUP.
    let counters_file = loaded.file;

    let Pipeline {
        mut sampler,
        lib_path: _,
        kubernetes: _,
        _sim,
        _cluster,
    } = build_pipeline(&mut cfg, &counters, &rt)?;
    let opts = encode_options(&cfg);
    let shared = Arc::new(Shared::new(sampler::render(
        Snapshot::default(),
        &counters,
        &opts,
    )));
    if let Some(hangups) = early.hangup {
        counters::listen_for_hangup(
            rt.handle(),
            hangups,
            counters_file.as_ref().map(CountersFile::hangup_flag),
        );
    }
    if let Some(f) = counters_file {
        info!(file = %f.path().display(), "counters reload on file change and on SIGHUP");
        sampler = sampler.with_counters_file(f);
    }
    sampler = sampler.with_exporter_metrics(cfg.exporter_metrics);
    let stop = Arc::new(AtomicBool::new(false));
    let handle = sampler::spawn(
        sampler,
        cfg.interval,
        opts,
        Arc::clone(&shared),
        Arc::clone(&stop),
    )
    .map_err(|e| anyhow!("cannot start the sampler thread: {e}"))?;

    // The watchdog: a sampler that has not finished a tick for five intervals (at least 10 s)
    // turns /ready 503.
    shared.set_stall_after((cfg.interval * 5).max(std::time::Duration::from_secs(10)));
    let served: anyhow::Result<()> = rt.block_on(async {
        tokio::spawn(http::watchdog(Arc::clone(&shared)));
        let listener = http::bind(&cfg.address).await?;
        let local = axum::serve::Listener::local_addr(&listener)?;
        info!(address = %local, interval_ms = cfg.interval.as_millis() as u64, "serving /metrics");
        let app = http::app_with(
            Arc::clone(&shared),
            http::ServeOptions {
                max_concurrent_scrapes: cfg.max_concurrent_scrapes,
                health_require_gpus: cfg.health_require_gpus,
                node: cfg.hostname.clone(),
            },
        );
        let limits = http::Limits {
            read: cfg.web_read_timeout,
            write: cfg.web_write_timeout,
            max_connections: cfg.web_max_connections,
        };
        Ok(http::serve(listener, app, web_config, limits, shutdown_signal()).await?)
    });
    stop.store(true, Ordering::Release);
    // A sampler stuck in an NVML call (a hung driver) must not keep the process alive: wait a
    // little for its tick to end, then exit without it.
    let deadline = std::time::Instant::now() + http::SHUTDOWN_GRACE;
    while !handle.is_finished() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    if !handle.is_finished() {
        warn!(
            "the sampler is still inside a tick (an NVML call that does not return?); exiting \
             without waiting for it"
        );
    } else if handle.join().is_err() {
        error!("the sampler thread panicked");
    }
    served
}

/// The kubelet socket and API client attribution actually uses (with `--simulate`, the
/// simulated cluster's), for `gpu-exporter check`.
struct KubernetesInUse {
    socket: std::path::PathBuf,
    client: Option<kube::Client>,
    node_name: Option<String>,
    /// `/proc` of the host as seen here, and whether process attribution is on.
    proc_root: Option<std::path::PathBuf>,
    /// Where the API client's configuration came from, and the server it talks to.
    api_config: String,
}

/// The Kubernetes API client as `kube::Client::try_default` makes it (a kubeconfig first,
/// then the in-cluster service account), with a line saying which one was used.
async fn api_client() -> anyhow::Result<(kube::Client, String)> {
    let (config, source) = match kube::Config::from_kubeconfig(
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    {
        Ok(c) => (c, "a kubeconfig (KUBECONFIG or ~/.kube/config)"),
        Err(from_file) => match kube::Config::incluster() {
            Ok(c) => (c, "the in-cluster service account"),
            Err(in_cluster) => {
                return Err(anyhow!(
                    "no kubeconfig ({from_file}) and no in-cluster service account ({in_cluster})"
                ));
            }
        },
    };
    let line = format!("{source}, server {}", config.cluster_url);
    Ok((kube::Client::try_from(config)?, line))
}

/// What runs between a validated configuration and the HTTP server: the sampler (NVML reader
/// and attribution) and, with `--simulate`, the simulated library and cluster it reads.
struct Pipeline {
    sampler: Sampler,
    /// The NVML library path given to the loader (`None`: the dynamic loader's search).
    lib_path: Option<std::path::PathBuf>,
    /// Attribution's kubelet socket and API client, with `-k`.
    kubernetes: Option<KubernetesInUse>,
    _sim: Option<SimLib>,
    _cluster: Option<SimCluster>,
}

/// Builds the sampler as the daemon runs it; `gpu-exporter check` ticks the same one.
fn build_pipeline(
    cfg: &mut Config,
    counters: &Arc<gpu_exporter::catalogue::csv::CounterSet>,
    rt: &tokio::runtime::Runtime,
) -> anyhow::Result<Pipeline> {
    // With --simulate the simulated library is configured, then loaded like the real one.
    let (lib_path, sim) = match cfg.simulate.clone() {
        Some(scenario) => {
            let (path, sim) = open_simulated_node(&scenario, cfg)?;
            (Some(path), Some(sim))
        }
        None => (cfg.nvml_lib.clone(), None),
    };
    info!(
        profile = cfg.profile.name(),
        host_label = cfg.profile.host_label(),
        "compatibility profile"
    );
    info!(devices = %cfg.devices.describe(), mig_repeat_device_fields = cfg.mig_repeat_device_fields, "device selection");
    let options = ReaderOptions {
        devices: cfg.devices.clone(),
        repeat_device_fields: cfg.mig_repeat_device_fields,
        xid_window: cfg.xid_window,
        clock_events_window: cfg.clock_events_window,
        xid_initialized: cfg.xid_initialized.clone(),
        collections: cfg.collections.clone(),
        nvlink_per_link: cfg.nvlink_per_link,
        ..ReaderOptions::default()
    };
    let loader_path = lib_path.clone();
    let loader: sampler::Loader = Box::new(move || gpu::open(loader_path.as_deref()));
    // Pod attribution: its sources run on the runtime; the sampler reads their latest state.
    let mut sampler = Sampler::with_options(loader, Arc::clone(counters), options);
    let (attributor, cluster, kubernetes) =
        start_attribution(cfg, rt, sim.as_ref(), lib_path.as_deref())
            .map_err(anyhow::Error::msg)?;
    if let Some(a) = attributor {
        sampler = sampler.with_attribution(a);
    }
    Ok(Pipeline {
        sampler,
        lib_path,
        kubernetes,
        _sim: sim,
        _cluster: cluster,
    })
}

/// Configures the simulated NVML library for `--simulate SCENARIO`; the library is then loaded
/// like the real one.
#[cfg(feature = "sim")]
fn open_simulated_node(
    scenario: &str,
    cfg: &mut Config,
) -> anyhow::Result<(std::path::PathBuf, SimLib)> {
    use gpu_exporter::sim::library::find_library;
    let path = find_library(cfg.nvml_lib.as_deref())?;
    let sim = SimLib::open(&path)?;
    sim.configure(scenario, cfg.simulate_seed)?;
    info!(library = %path.display(), scenario, seed = cfg.simulate_seed, "running on a simulated node");
    // The simulated node's name stands in for the host name unless NODE_NAME is set.
    if cfg.hostname.is_some() && std::env::var_os("NODE_NAME").is_none() {
        cfg.hostname = Some(sim.node_name()?);
    }
    Ok((path, sim))
}

/// Without the `sim` feature there is no simulated node: `--simulate` is refused at start
/// instead of running on whatever NVML the machine has.
#[cfg(not(feature = "sim"))]
fn open_simulated_node(
    _scenario: &str,
    _cfg: &mut Config,
) -> anyhow::Result<(std::path::PathBuf, SimLib)> {
    Err(anyhow!(
        "--simulate: this build has no simulator (it was built without the `sim` cargo \
         feature, as the container image is); build with default features to simulate a node"
    ))
}

/// Stand-ins for the simulator's types in a build without it: they have no values, so the
/// code paths that would use them cannot run.
#[cfg(not(feature = "sim"))]
enum SimLib {}
#[cfg(not(feature = "sim"))]
enum SimCluster {}

/// Starts the simulated kubelet, API server and proc tree of the scenario's `[[pods]]` and
/// points `k` at them.
#[cfg(feature = "sim")]
fn start_sim_cluster(
    sim: &SimLib,
    lib_path: Option<&std::path::Path>,
    rt: &tokio::runtime::Runtime,
    k: &mut gpu_exporter::config::KubernetesConfig,
) -> anyhow::Result<(SimCluster, kube::Client)> {
    let c = rt.block_on(SimCluster::start(sim, lib_path))?;
    info!(
        pods = c.pods,
        socket = %c.socket.display(),
        api = %c.api.url(),
        proc_root = %c.proc_root.display(),
        "simulated kubelet, API server and proc tree started"
    );
    c.configure(k);
    let client = c.client.clone();
    Ok((c, client))
}

#[cfg(not(feature = "sim"))]
fn start_sim_cluster(
    sim: &SimLib,
    _: Option<&std::path::Path>,
    _: &tokio::runtime::Runtime,
    _: &mut gpu_exporter::config::KubernetesConfig,
) -> anyhow::Result<(SimCluster, kube::Client)> {
    match *sim {}
}

/// Starts the attribution sources that the flags ask for (with `--simulate`: against a
/// simulated kubelet, API server and proc tree built from the scenario's `[[pods]]`).
fn start_attribution(
    cfg: &Config,
    rt: &tokio::runtime::Runtime,
    sim: Option<&SimLib>,
    lib_path: Option<&std::path::Path>,
) -> anyhow::Result<(
    Option<Attributor>,
    Option<SimCluster>,
    Option<KubernetesInUse>,
)> {
    let hpc = match cfg.hpc_job_dir.clone() {
        Some(d) => {
            info!(dir = %d.display(), "HPC job mapping enabled");
            Some(
                HpcSource::spawn(d, CHECK_INTERVAL)
                    .map_err(|e| anyhow!("cannot start the HPC job thread: {e}"))?,
            )
        }
        None => None,
    };
    let Some(k) = cfg.kubernetes.clone() else {
        return Ok((
            hpc.map(|h| {
                Attributor::new(
                    AttributionOptions::default(),
                    Sources {
                        hpc: Some(h),
                        ..Sources::default()
                    },
                )
            }),
            None,
            None,
        ));
    };
    let mut k = k;
    let mut cluster = None;
    let mut client = None;
    let mut api_config = String::new();
    if let Some(sim) = sim {
        let (c, api) = start_sim_cluster(sim, lib_path, rt, &mut k)?;
        client = Some(api);
        cluster = Some(c);
        api_config = "the simulated API server".to_owned();
    } else if k.pod_metadata {
        client = match rt.block_on(api_client()) {
            Ok((c, source)) => {
                api_config = source;
                Some(c)
            }
            Err(e) => {
                warn!(
                    "no Kubernetes API client ({e}); pod UIDs, labels, workloads, DRA and \
                     per-process pod names are off (pod-resources attribution still works)"
                );
                None
            }
        };
    }
    info!(socket = %k.socket.display(), refresh_ms = k.refresh.as_millis() as u64, "pod attribution enabled");
    let in_use = KubernetesInUse {
        socket: k.socket.clone(),
        client: client.clone(),
        node_name: k.node_name.clone(),
        proc_root: k.process_metrics.then(|| k.proc_root.clone()),
        api_config,
    };
    let a = attribution::start(&k, cfg.old_namespace, client, hpc, rt.handle());
    Ok((Some(a), cluster, Some(in_use)))
}

fn main() -> ExitCode {
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new("probe")) {
        return probe();
    }
    if std::env::args_os().nth(1).as_deref() == Some(std::ffi::OsStr::new("check")) {
        return check(std::env::args_os().collect());
    }
    // The runtime first, and the signals that would end the process registered on it before
    // anything else happens.
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gpu-exporter: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let early = EarlySignals::register(rt.handle());
    let cli = Cli::parse_go_style();
    match run(cli, rt, early) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("gpu-exporter: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `gpu-exporter probe URL …`: checks a running exporter over HTTP (the Helm test's command).
/// Exit 0 when every check holds, 1 when one fails or the probe cannot run, 2 for usage.
fn probe() -> ExitCode {
    use clap::Parser;
    let args = match gpu_exporter::probe::ProbeArgs::try_parse_from(std::env::args_os().skip(1)) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    match gpu_exporter::probe::run(&args) {
        Ok(report) => {
            print!("{}", report.render());
            if report.passed() {
                println!("probe: {} passed", args.url);
                ExitCode::SUCCESS
            } else {
                println!("probe: {} FAILED", args.url);
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("gpu-exporter probe: error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `gpu-exporter check [FLAGS] [--output human|json] [--hardware-report]`: the daemon's flags
/// and environment, its pipeline run for a few ticks without serving, and a report of what
/// works (src/check/). Exit 0 when everything configured works, 1 when something does not,
/// 2 for usage.
/// The async runtime of the daemon and of check: two workers are plenty for a few sockets.
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// How the daemon (and check's excerpt) writes the exposition for this configuration.
fn encode_options(cfg: &Config) -> EncodeOptions {
    EncodeOptions {
        hostname: cfg.hostname.clone(),
        host_label: cfg.profile.host_label(),
        gauge_fields: cfg.profile.gauge_fields(),
        types_as_written: cfg.profile.types_as_written(),
        old_namespace: cfg.old_namespace,
        replace_blanks_in_model_name: cfg.replace_blanks_in_model_name,
        link_families: cfg.nvlink_per_link,
    }
}

const CHECK_USAGE: &str = "\
Diagnoses this node as the daemon would see it: flags and files, NVML and every GPU and MIG
instance, each configured field, the kubelet pod-resources socket and the Kubernetes API.

Usage: gpu-exporter check [--output human|json] [--hardware-report] [DAEMON FLAGS...]

      --output human|json  a readable report (default) or JSON for machines
      --hardware-report    a Markdown table for docs/hardware.md or an issue
  DAEMON FLAGS             the daemon's own flags and environment (gpu-exporter --help),
                           e.g. the DaemonSet's arguments unchanged

Exit status: 0 everything configured works, 1 something configured does not, 2 usage.
";

fn check(args: Vec<std::ffi::OsString>) -> ExitCode {
    let mut json = false;
    let mut hardware = false;
    let mut rest: Vec<std::ffi::OsString> = args.iter().take(1).cloned().collect();
    let mut it = args.into_iter().skip(2);
    while let Some(a) = it.next() {
        let value = match a.to_str() {
            // No `-o`: it is the daemon's --use-old-namespace, which check accepts too.
            Some("--output" | "-output") => Some(it.next().and_then(|v| v.into_string().ok())),
            Some(x) if x.starts_with("--output=") || x.starts_with("-output=") => {
                Some(x.split_once('=').map(|(_, v)| v.to_owned()))
            }
            Some("--hardware-report" | "-hardware-report") => {
                hardware = true;
                continue;
            }
            Some("--help" | "-help" | "-h") => {
                print!("{CHECK_USAGE}");
                return ExitCode::SUCCESS;
            }
            _ => None,
        };
        match value {
            None => rest.push(a),
            Some(Some(v)) if v == "json" => json = true,
            Some(Some(v)) if v == "human" => json = false,
            Some(v) => {
                eprintln!(
                    "gpu-exporter check: --output takes human or json, not {}",
                    v.as_deref().unwrap_or("nothing")
                );
                return ExitCode::from(2);
            }
        }
    }
    let cli = match Cli::try_parse_go_style(rest) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let report = run_check(cli);
    if hardware {
        print!(
            "{}",
            report.hardware_report(gpu_exporter::base::version::VERSION)
        );
    } else if json {
        match serde_json::to_string_pretty(&report) {
            Ok(t) => println!("{t}"),
            Err(e) => {
                eprintln!("gpu-exporter check: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        print!("{}", report.human());
    }
    ExitCode::from(report.exit_code())
}

/// The checks, in the daemon's order: flags and files, then NVML, then a few ticks of the
/// daemon's own sampler and attribution.
fn run_check(mut cli: Cli) -> gpu_exporter::check::Report {
    use gpu_exporter::check::{Level, Report};
    let mut r = Report::default();
    // Logs would interleave with the report: only errors, on stderr.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("off,gpu_exporter=error"))
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .try_init();
    let notes = match cli.apply_config_file() {
        Ok(n) => n,
        Err(e) => {
            r.add(
                "files",
                "--config-file",
                Level::Fail,
                e.to_string(),
                Some("fix the file at the place named"),
            );
            return r;
        }
    };
    let mut cfg = match cli.validate() {
        Ok(c) => c,
        Err(e) => {
            r.add(
                "files",
                "flags",
                Level::Fail,
                e.to_string(),
                Some("fix the flag or variable named"),
            );
            return r;
        }
    };
    let warnings: Vec<String> = notes.into_iter().chain(cfg.warnings.clone()).collect();
    if warnings.is_empty() {
        r.add("files", "flags", Level::Ok, "valid", None);
    }
    for w in warnings {
        r.add("files", "flags", Level::Warn, w, None);
    }
    match cli
        .web_config_file
        .as_ref()
        .filter(|p| !p.as_os_str().is_empty())
    {
        Some(p) => match http::web_config::WebConfig::load(p) {
            Ok(_) => r.add(
                "files",
                "--web-config-file",
                Level::Ok,
                format!("{} loads", p.display()),
                None,
            ),
            Err(e) => r.add(
                "files",
                "--web-config-file",
                Level::Fail,
                e.to_string(),
                Some("fix the file at the place named"),
            ),
        },
        None => r.add(
            "files",
            "--web-config-file",
            Level::Info,
            "none: plain HTTP without authentication",
            None,
        ),
    }
    // A broken counters file is reported, and the rest of the node is still checked with the
    // profile's built-in set, so one bad line does not hide what NVML and the cluster say.
    let loaded = match cli.load_counters() {
        Ok(l) => l,
        Err(e) => {
            r.add(
                "files",
                "counters file",
                Level::Fail,
                e.to_string(),
                Some("fix the line named, or point -f at another file"),
            );
            cli.collectors = None;
            cli.config_file = None;
            cli.inline_counters = None;
            match cli.builtin_counters() {
                Ok(l) => {
                    r.add(
                        "files",
                        "counters file",
                        Level::Info,
                        format!("the checks below use {} instead", l.origin),
                        None,
                    );
                    l
                }
                Err(e) => {
                    r.add("files", "counters file", Level::Fail, e.to_string(), None);
                    return r;
                }
            }
        }
    };
    let counters = Arc::new(loaded.set);
    r.add(
        "files",
        "counters file",
        Level::Ok,
        format!(
            "{} ({} metrics, {} labels)",
            loaded.origin,
            counters.metrics().count(),
            counters.labels().count()
        ),
        None,
    );
    for w in &counters.warnings {
        r.add("files", "counters file", Level::Warn, w.clone(), None);
    }
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => {
            r.add(
                "files",
                "runtime",
                Level::Fail,
                format!("cannot start the async runtime: {e}"),
                None,
            );
            return r;
        }
    };
    match rt.block_on(http::bind(&cfg.address)) {
        Ok(_) => r.add("files", "address", Level::Ok, format!("{} can be bound", cfg.address), None),
        Err(e) => r.add(
            "files",
            "address",
            Level::Warn,
            format!("{}: {e}", cfg.address),
            Some("in use by a running exporter (fine when checking inside its pod), or another exporter holds the port: choose -a"),
        ),
    }
    let Pipeline {
        mut sampler,
        lib_path,
        kubernetes,
        _sim,
        _cluster,
    } = match build_pipeline(&mut cfg, &counters, &rt) {
        Ok(p) => p,
        Err(e) => {
            r.add(
                "kubernetes",
                "attribution",
                Level::Fail,
                e.to_string(),
                None,
            );
            return r;
        }
    };
    let started = std::time::Instant::now();
    let mut nvml_handle = None;
    match gpu::open(lib_path.as_deref()) {
        Ok(nvml) => {
            nvml_handle = Some(nvml);
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            let place = lib_path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| format!("{} through the dynamic loader", gpu::DEFAULT_LIB));
            r.add("nvml", "library", Level::Ok, format!("{place}, initialised in {ms:.1} ms"), None);
            let driver = nvml.sys_driver_version().unwrap_or_else(|e| format!("unknown ({e})"));
            let version = nvml.sys_nvml_version().unwrap_or_else(|e| format!("unknown ({e})"));
            r.add("nvml", "versions", Level::Ok, format!("driver {driver}, NVML {version}"), None);
        }
        Err(e) => r.add(
            "nvml",
            "library",
            Level::Fail,
            e.to_string(),
            Some("install the NVIDIA driver on the node and run the container with the NVIDIA runtime (NVIDIA_VISIBLE_DEVICES=all, NVIDIA_DRIVER_CAPABILITIES=utility), or give --nvml-lib PATH"),
        ),
    }
    // A few ticks, so that rates have two samples and the attribution sources have answered
    // (or failed) at least once.
    let mut snap = sampler.tick(gpu_exporter::base::clock::unix_now());
    let tick_ms = snap.stats.duration.as_secs_f64() * 1000.0;
    for i in 0..20 {
        let settled = snap
            .attribution
            .sources
            .iter()
            .all(|s| s.up || s.errors > 0);
        if i >= 2 && settled {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
        snap = sampler.tick(gpu_exporter::base::clock::unix_now());
    }
    if snap.stats.nvml_up {
        let last_ms = snap.stats.duration.as_secs_f64() * 1000.0;
        let gpus = snap.devices.len().max(1);
        r.add(
            "nvml",
            "ticks",
            Level::Ok,
            format!(
                "{} ticks; the first took {tick_ms:.1} ms, the last {last_ms:.1} ms ({:.2} ms per GPU)",
                snap.stats.ticks,
                last_ms / gpus as f64
            ),
            None,
        );
        let text = gpu_exporter::exposition::encode(&snap, &counters, &encode_options(&cfg));
        r.excerpt = gpu_exporter::check::excerpt(&String::from_utf8_lossy(&text), 80);
    }
    // The time each field's read takes, on a reader of its own (after the ticks, so that the
    // daemon's reader has settled which fields are unsupported).
    let timings = match nvml_handle.filter(|_| snap.stats.nvml_up) {
        Some(nvml) => gpu::reader::timing::time_fields(
            nvml,
            ReaderOptions {
                devices: cfg.devices.clone(),
                repeat_device_fields: cfg.mig_repeat_device_fields,
                ..ReaderOptions::default()
            },
            &counters,
            gpu_exporter::base::clock::unix_now(),
        ),
        None => Vec::new(),
    };
    gpu_exporter::check::from_snapshot(&mut r, &snap, &counters, &timings);
    // MIG mode and GPM (the source of DCGM_FI_PROF_* here), per GPU.
    if let Some(nvml) = nvml_handle.filter(|_| snap.stats.nvml_up) {
        for d in snap.devices.iter().filter(|d| d.up) {
            let subject = format!("GPU {} MIG mode", d.gpu);
            match nvml.device_by_index(d.gpu).and_then(|dev| dev.mig_mode()) {
                Ok(m) if m.current != m.pending => r.add(
                    "gpus",
                    subject,
                    Level::Warn,
                    format!(
                        "{} now, {} after the next GPU reset",
                        if m.current == 1 { "enabled" } else { "disabled" },
                        if m.pending == 1 { "enabled" } else { "disabled" }
                    ),
                    Some("a MIG mode change is pending: reset the GPU (nvidia-smi -r) or reboot the node"),
                ),
                Ok(m) => r.add(
                    "gpus",
                    subject,
                    Level::Ok,
                    if m.current == 1 { "enabled" } else { "disabled" },
                    None,
                ),
                Err(nvml_wrapper::error::NvmlError::NotSupported) => {
                    r.add("gpus", subject, Level::Ok, "not supported by this GPU", None)
                }
                Err(e) => r.add("gpus", subject, Level::Info, format!("NVML could not say: {e}"), None),
            }
            let subject = format!("GPU {} GPM", d.gpu);
            match nvml.device_by_index(d.gpu).and_then(|dev| dev.gpm_support()) {
                Ok(true) => r.add("gpus", subject, Level::Ok, "supported: the DCGM_FI_PROF_* fields come from it", None),
                Ok(false) => r.add(
                    "gpus",
                    subject,
                    Level::Info,
                    "not supported (GPM needs Hopper or later): DCGM_FI_PROF_* fields are not exported for this GPU",
                    None,
                ),
                Err(e) => r.add("gpus", subject, Level::Info, format!("NVML could not say: {e}"), None),
            }
        }
    }
    if let (Some(k), Some(kcfg)) = (kubernetes, cfg.kubernetes.as_ref()) {
        gpu_exporter::check::socket(&mut r, &k.socket);
        if let Some(root) = &k.proc_root {
            gpu_exporter::check::proc_root(&mut r, root, std::process::id());
        }
        if kcfg.pod_metadata || kcfg.dra {
            match &k.client {
                Some(client) => {
                    use gpu_exporter::sources::kube::access;
                    r.add("kubernetes", "API client", Level::Ok, format!("from {}", k.api_config), None);
                    let reviews = rt.block_on(access::review(client, &access::needed(kcfg.dra)));
                    let node = k.node_name.as_deref();
                    let pods = rt.block_on(access::pods_on_node(client, node));
                    gpu_exporter::check::api(&mut r, &reviews, pods.map_err(|e| e.to_string()), node);
                }
                None => r.add(
                    "kubernetes",
                    "API client",
                    Level::Fail,
                    "no Kubernetes API client: neither an in-cluster service account nor KUBECONFIG",
                    Some("run in a pod with a service account token (automountServiceAccountToken), or turn --kubernetes-pod-metadata off"),
                ),
            }
        }
    }
    r
}
