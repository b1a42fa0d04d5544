//! The daemon's wiring: the merged settings → the simulated node when `--simulate` asks for one
//! ([`pipeline::Simulated`]) → one validated [`Config`], never changed after → the counters
//! file, the pipeline (NVML loader, sampler, attribution; [`pipeline`]), the sampler thread,
//! the HTTP server, and the shutdown.
//!
//! `main.rs` parses the flags, merges the configuration file, sets up logging and calls
//! [`run`]; the options of each component come from the validated configuration
//! (`config::options` derives them from it); [`run`] also starts the Kubernetes outputs when
//! asked (`notify`). The shutdown is
//! bounded by one grace from the signal (`serve::SHUTDOWN_GRACE`), whatever NVML is doing: a
//! sampler still inside it after the drain (`serve::SHUTDOWN_DRAIN`) is left behind, and
//! [`Exit::Now`] tells `main` to end with [`leave_now`] rather than through exit handlers that
//! could wait on it; the [`exit::Guard`] ends the process at the grace if even that cannot run.
//! This module must not parse flags, read NVML itself or decide exit codes: it returns an error or
//! an [`Exit`], and `main` turns it into one.

pub mod exit;
pub mod pipeline;
pub mod signals;

pub use exit::{Exit, leave_now};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tracing::{debug, error, info, warn};

use crate::catalogue::csv::CounterSet;
use crate::config::{Config, ConfigError, LoadedCounters, Settings};
use crate::exposition::counted::{CountOwners, Counted};
use crate::exposition::publish::{Shared, render};
use crate::notify;
use crate::sampler::{self, reload};
use crate::serve::{self, web_config::WebConfig};
use crate::snapshot::Snapshot;
use pipeline::{Pipeline, PipelineError};
use signals::EarlySignals;

/// Why the daemon stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// A flag, variable, counters file or configuration file is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// `--web-config-file` is invalid.
    #[error("--web-config-file {0}")]
    WebConfig(#[source] serve::web_config::WebConfigError),
    /// The pipeline cannot be built (`--simulate`, the HPC thread).
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// The sampler thread cannot be started.
    #[error("cannot start the sampler thread: {0}")]
    SamplerThread(#[source] std::io::Error),
    /// The HTTP server cannot bind its address.
    #[error(transparent)]
    Serve(#[from] serve::ServeError),
}

/// The async runtime of the daemon and of `check`: two workers are plenty for a few sockets.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// The watchdog's limit: a sampler that has not finished a tick for five tick intervals (at
/// least 10 s) turns `/ready` 503.
pub fn stall_limit(tick_interval: Duration) -> Duration {
    (tick_interval * 5).max(Duration::from_secs(10))
}

/// Runs the exporter until SIGTERM or Ctrl-C, and says how the process is to end. Logging must
/// be set up. An error is returned only before the sampler starts.
pub fn run(
    settings: Settings,
    rt: tokio::runtime::Runtime,
    mut early: EarlySignals,
) -> Result<Exit, DaemonError> {
    let (cfg, simulated, early_counters) = validate(&settings, &rt)?;
    let web_config = load_web_config(&cfg)?;
    early.log_stray(rt.handle());
    for w in &cfg.warnings {
        warn!("{w}");
    }
    for n in &cfg.debug_notes {
        debug!("{n}");
    }
    let StartCounters {
        set: counters,
        file: counters_file,
        pod_label_room,
    } = load_counters(&cfg, early_counters)?;
    // `simulated` keeps the simulated node and cluster (if any) alive until the end of `run`.
    let pipeline = Pipeline::build(&cfg, &counters, pod_label_room, &rt, simulated)?;
    let kube = pipeline
        .kubernetes
        .as_ref()
        .map(|k| (k.client.clone(), k.node_name.clone()));
    let (mut sampler, simulated) = pipeline.into_sampler();
    let opts = cfg.encode_options();
    let shared = Arc::new(Shared::new(render(
        Snapshot::default(),
        &Counted::default(),
        &counters,
        &opts,
    )));
    // What the server and the Kubernetes writers count, each in its own counters, read into
    // every page the sampler encodes.
    let mut owners = CountOwners::default();
    let serve_counts = Arc::new(serve::ServeCounts::default());
    owners.add(Arc::clone(&serve_counts) as _);
    start_notify(&cfg, kube, &shared, &mut owners, &rt);
    sampler = with_reload(
        sampler,
        counters_file,
        &cfg,
        pod_label_room,
        early.hangup.take(),
        &rt,
    );
    sampler = sampler.with_exporter_metrics(cfg.exposition.enable_exporter_metrics);
    // Bound before the sampler starts: nothing after this point stops the daemon with an error.
    let listener = bind(&cfg, &rt)?;
    // Armed before the first tick: a first tick that never ends (NVML's load or init hung) is
    // a stall too.
    shared.set_stall_after(stall_limit(cfg.tick_interval));
    if let Some(guard) = early.guard.take()
        && let Err(e) = guard.start(serve::SHUTDOWN_GRACE, cfg.log.json)
    {
        warn!("cannot start the exit guard ({e}): a shutdown may wait on a thread stuck in NVML");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let handle = sampler::spawn(
        sampler,
        cfg.tick_interval,
        opts,
        Arc::clone(&shared),
        owners,
        Arc::clone(&stop),
    )
    .map_err(DaemonError::SamplerThread)?;
    let signalled = Arc::new(OnceLock::new());
    rt.block_on(serve_until_signal(
        &cfg,
        listener,
        shared,
        serve_counts,
        web_config,
        early.shutdown.take(),
        Arc::clone(&signalled),
    ));
    Ok(shut_down(&stop, handle, &signalled, simulated, rt))
}

/// The validated configuration, and the simulated node `--simulate` asks for, started on `rt`
/// (the site the configuration is validated against is its). A flag, file or counters file
/// that validation refuses stops start-up before anything is started (the simulated node logs
/// as it starts): the site changes paths, never whether a value is valid. The counters read
/// for that early check under `--simulate` are returned to be the ones run with: what
/// `Config::load_counters` reads does not depend on the site, so the file is read once.
fn validate(
    settings: &Settings,
    rt: &tokio::runtime::Runtime,
) -> Result<(Config, pipeline::Simulated, Option<LoadedCounters>), DaemonError> {
    let simulation = settings.simulation()?;
    let early_counters = match simulation {
        Some(_) => {
            let early = settings.validate(&crate::config::Site::host())?;
            let loaded = early.load_counters()?;
            early.fit_labels(&loaded.set)?;
            Some(loaded)
        }
        None => None,
    };
    let (simulated, site) = pipeline::Simulated::start(simulation.as_ref(), rt)?;
    let cfg = settings.validate(&site)?;
    Ok((cfg, simulated, early_counters))
}

/// The web configuration `--web-config-file` names, if it does.
fn load_web_config(cfg: &Config) -> Result<Option<Arc<WebConfig>>, DaemonError> {
    match cfg.serving.config_file.as_ref() {
        Some(p) => Ok(Some(Arc::new(
            WebConfig::load(p).map_err(DaemonError::WebConfig)?,
        ))),
        None => Ok(None),
    }
}

/// The counters the daemon starts with.
struct StartCounters {
    /// The set, shared with the pipeline and the first page.
    set: Arc<CounterSet>,
    /// The file it was read from, to reload; `None` for the built-in set.
    file: Option<reload::CountersFile>,
    /// The room left for pod labels on each series (`Config::fit_labels`).
    pod_label_room: Option<usize>,
}

/// The counters the configuration chooses ([`StartCounters`]): those `validate` already read
/// (`early`), else read now; logged with their origin and warnings.
fn load_counters(
    cfg: &Config,
    early: Option<LoadedCounters>,
) -> Result<StartCounters, DaemonError> {
    let loaded = match early {
        Some(loaded) => loaded,
        None => cfg.load_counters()?,
    };
    let pod_label_room = cfg.fit_labels(&loaded.set)?;
    info!(
        "{} ({} metrics, {} labels)",
        loaded.origin,
        loaded.set.metrics().count(),
        loaded.set.labels().count()
    );
    for w in &loaded.set.warnings {
        warn!("{w}");
    }
    Ok(StartCounters {
        set: Arc::new(loaded.set),
        file: loaded.file,
        pod_label_room,
    })
}

/// Starts the Kubernetes outputs (`notify`) on `rt` when the configuration asks for them and
/// there is a node name (`kube`: the API client and the node name), their counts added to
/// `owners`; with no API client, logs that they are off.
fn start_notify(
    cfg: &Config,
    kube: Option<(Option<kube::Client>, Option<String>)>,
    shared: &Arc<Shared>,
    owners: &mut CountOwners,
    rt: &tokio::runtime::Runtime,
) {
    let node = kube.as_ref().and_then(|(_, n)| n.as_deref());
    if let Some(n) = cfg.notify_options(node) {
        match kube.as_ref().and_then(|(c, _)| c.clone()) {
            Some(client) => {
                let counts = Arc::new(notify::counts::WriteCounts::default());
                owners.add(Arc::clone(&counts) as _);
                notify::spawn(client, n, Arc::clone(shared), counts, rt.handle());
            }
            None => error!(
                "Node conditions and Events are off: there is no Kubernetes API client (see the \
                 warning above); metrics and the page are unaffected"
            ),
        }
    }
}

/// `sampler` with hot reload: the counters file (if any) is re-read when it changes (checked
/// every tick) or on SIGHUP (`hangups`, listened for on `rt`), and a new set is taken only if
/// it fits the configuration's label limits (`pod_label_room`).
fn with_reload(
    mut sampler: sampler::Sampler,
    file: Option<reload::CountersFile>,
    cfg: &Config,
    pod_label_room: Option<usize>,
    hangups: Option<tokio::signal::unix::Signal>,
    rt: &tokio::runtime::Runtime,
) -> sampler::Sampler {
    if let Some(hangups) = hangups {
        reload::listen_for_hangup(
            rt.handle(),
            hangups,
            file.as_ref().map(reload::CountersFile::hangup_flag),
        );
    }
    if let Some(f) = file {
        info!(file = %f.shown_path(), "counters reload on file change and on SIGHUP");
        let guard = cfg.counters_guard(pod_label_room);
        sampler = sampler.with_counters_file(f.with_validator(Box::new(move |set| {
            guard(set).map_err(|e| reload::Refused(e.to_string()))
        })));
    }
    sampler
}

/// Binds the serving address, and logs the address bound.
fn bind(cfg: &Config, rt: &tokio::runtime::Runtime) -> Result<serve::Listener, DaemonError> {
    let listener = rt.block_on(serve::bind(&cfg.serving.address))?;
    match axum::serve::Listener::local_addr(&listener) {
        Ok(local) => {
            info!(address = %local, interval_ms = cfg.tick_interval.as_millis() as u64, "serving /metrics")
        }
        Err(e) => warn!("cannot read the bound address back: {e}"),
    }
    Ok(listener)
}

/// Stops the sampler once serving has ended (`stop`, and a wake-up), and waits for its tick
/// until the drain from the signal's time (`signalled`; now if none was received): one grace
/// from the signal for everything, the responses in flight and the sampler's tick, which may
/// be stuck in NVML (a hung driver) and must not keep the process alive. A sampler that has
/// ended is joined, `simulated` stopped and `rt` shut down within what is left of the drain:
/// [`Exit::Return`]. One still inside its tick is left behind, with `simulated` and `rt`:
/// [`Exit::Now`].
fn shut_down(
    stop: &AtomicBool,
    handle: std::thread::JoinHandle<()>,
    signalled: &OnceLock<Instant>,
    simulated: pipeline::Simulated,
    rt: tokio::runtime::Runtime,
) -> Exit {
    stop.store(true, Ordering::Release);
    handle.thread().unpark();
    let deadline = signalled.get().copied().unwrap_or_else(Instant::now) + serve::SHUTDOWN_DRAIN;
    while !handle.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if !handle.is_finished() {
        warn!(
            "the sampler is still inside a tick (an NVML call that does not return?); exiting \
             without waiting for it"
        );
        // Nothing more may wait on it: not the runtime's threads, not the simulated library's
        // unloading, not the process's exit handlers.
        simulated.abandon();
        rt.shutdown_background();
        return Exit::Now;
    }
    if handle.join().is_err() {
        error!("the sampler thread panicked");
    }
    simulated.stop();
    rt.shutdown_timeout(deadline.saturating_duration_since(Instant::now()));
    Exit::Return
}

/// Serves on `listener` until SIGTERM or Ctrl-C (one that arrived during start-up included;
/// its time, or the start of serving for that one, goes to `signalled`), with the watchdog
/// running: the pages published in `shared`, the server's cuts counted in `counts`.
async fn serve_until_signal(
    cfg: &Config,
    listener: serve::Listener,
    shared: Arc<Shared>,
    counts: Arc<serve::ServeCounts>,
    web_config: Option<Arc<WebConfig>>,
    shutdown: Option<signals::ShutdownSignals>,
    signalled: Arc<OnceLock<Instant>>,
) {
    tokio::spawn(serve::watchdog(Arc::clone(&shared)));
    let app = serve::app_with(shared, cfg.serve_options());
    let shutdown = async move {
        match shutdown {
            Some(s) => s.recv().await,
            None => std::future::pending().await,
        }
        let _ = signalled.set(Instant::now());
    };
    serve::serve(listener, app, web_config, cfg.limits(), counts, shutdown).await;
}
