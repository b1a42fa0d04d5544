//! What runs between a validated configuration and the HTTP server: the sampler (NVML loader,
//! reader, DCGM client, attribution: the API client and HPC job watcher handed to
//! `attribution::start`, which starts the other sources) and, with `--simulate`, the simulated node and cluster it reads. The
//! daemon runs it; `gpu-exporter check` ticks the same one.
//!
//! It builds and starts; it must not serve HTTP or decide exit codes.

use std::path::PathBuf;
use std::sync::Arc;

use tracing::{info, warn};

use crate::attribution::{self, AttributionOptions, Attributor, SourceHandles};
use crate::catalogue::csv::CounterSet;
use crate::config::{Config, SimulatedNode, Simulation, Site};
use crate::dcgm;
use crate::gpu;
use crate::sampler::{self, Sampler};
use crate::sim;
use crate::sources::hpc::{CHECK_INTERVAL, HpcSource};

/// Why the pipeline cannot be built, or why it runs without the Kubernetes API.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// `--simulate` cannot run.
    #[error(transparent)]
    Simulate(#[from] sim::SimError),
    /// The DCGM thread cannot be started.
    #[error("cannot start the DCGM thread: {0}")]
    Dcgm(#[source] std::io::Error),
    /// The HPC job thread cannot be started.
    #[error("cannot start the HPC job thread: {0}")]
    Hpc(#[source] std::io::Error),
    /// Neither a kubeconfig nor the in-cluster service account gives an API configuration
    /// (not fatal: attribution goes on without the API, and says so).
    #[error("no kubeconfig ({from_file}) and no in-cluster service account ({in_cluster})")]
    NoApiConfig {
        /// Why no kubeconfig could be read.
        from_file: kube::config::KubeconfigError,
        /// Why the in-cluster configuration could not be read.
        #[source]
        in_cluster: kube::config::InClusterError,
    },
    /// The API configuration was found but no client could be made from it (not fatal, as
    /// [`PipelineError::NoApiConfig`]).
    #[error("{0}")]
    ApiClient(#[source] kube::Error),
}

/// The kubelet socket and API client attribution actually uses (with `--simulate`, the
/// simulated cluster's), for `gpu-exporter check`.
pub struct KubernetesInUse {
    /// The pod-resources socket.
    pub socket: PathBuf,
    /// The Kubernetes API client; `None` when there is none.
    pub client: Option<kube::Client>,
    /// `NODE_NAME` (or the simulated node's).
    pub node_name: Option<String>,
    /// `/proc` of the host as seen here, when process attribution is on.
    pub proc_root: Option<PathBuf>,
    /// Where the API client's configuration came from, and the server it talks to.
    pub api_config: String,
}

/// The sampler as the daemon runs it, and what it reads.
pub struct Pipeline {
    /// The sampler, with attribution when configured.
    pub sampler: Sampler,
    /// The NVML library path given to the loader (`None`: the dynamic loader's search).
    pub lib_path: Option<PathBuf>,
    /// Attribution's kubelet socket and API client, with `-k`.
    pub kubernetes: Option<KubernetesInUse>,
    /// The simulated node and cluster: they must outlive the sampler's use of them.
    simulated: Simulated,
}

/// The simulated node and cluster a pipeline reads (none on a real node): their library,
/// kubelet socket, API server and proc tree live as long as this value.
pub struct Simulated {
    node: Option<sim::Node>,
    cluster: Option<sim::Cluster>,
}

impl Simulated {
    /// A real node: nothing simulated.
    pub fn none() -> Self {
        Self {
            node: None,
            cluster: None,
        }
    }

    /// Starts the simulated node and cluster `--simulate` asks for (`sim`, from the raw
    /// settings: [`crate::config::Settings::simulation`]; `None`: a real node), and returns
    /// them with the [`Site`] that validation points the components at.
    pub fn start(
        sim: Option<&Simulation>,
        rt: &tokio::runtime::Runtime,
    ) -> Result<(Self, Site), PipelineError> {
        let Some(s) = sim else {
            return Ok((Self::none(), Site::host()));
        };
        let node = sim::Node::open(&s.scenario, s.seed, s.nvml_lib.as_deref())?;
        let cluster = sim::Cluster::start(&node, rt)?;
        let simulated: SimulatedNode = cluster.site(&node);
        let site = Site {
            simulated: Some(simulated),
        };
        Ok((
            Self {
                node: Some(node),
                cluster: Some(cluster),
            },
            site,
        ))
    }

    /// Stops the simulated cluster and unloads the simulated library (once NVML no longer
    /// needs it).
    pub fn stop(self) {}

    /// Stops the simulated cluster but never unloads the simulated library: unloading takes
    /// the dynamic loader's lock, which a thread stuck loading NVML may hold.
    pub fn abandon(self) {
        let Self { node, cluster: _ } = self;
        let _ = std::mem::ManuallyDrop::new(node);
    }
}

impl Pipeline {
    /// Builds the sampler for `cfg`, validated for the site `simulated` makes (with
    /// `--simulate`, its simulated node and cluster; [`Simulated::start`]), reading the
    /// `counters` with the pod labels' room `pod_label_room` (from the labels-per-series guard).
    pub fn build(
        cfg: &Config,
        counters: &Arc<CounterSet>,
        pod_label_room: Option<usize>,
        rt: &tokio::runtime::Runtime,
        simulated: Simulated,
    ) -> Result<Self, PipelineError> {
        let lib_path = cfg.nvml_lib.clone();
        info!(
            profile = cfg.exposition.profile.name(),
            host_label = cfg.exposition.profile.host_label(),
            "compatibility profile"
        );
        info!(devices = %cfg.reader.devices.describe(), mig_repeat_device_fields = cfg.reader.mig_repeat_device_fields, "device selection");
        let loader_path = lib_path.clone();
        let loader: sampler::Loader =
            Box::new(move || gpu::open_after_trial(loader_path.as_deref()));
        let mut sampler = Sampler::with_options(loader, Arc::clone(counters), cfg.reader.clone())
            .with_health(cfg.health_options())
            .with_common_profiling(cfg.exposition.profile.common_profiling_set());
        if let Some(client) = start_dcgm(cfg).map_err(PipelineError::Dcgm)? {
            sampler = sampler.with_dcgm(client);
        }
        let cluster = simulated.cluster.as_ref().map(sim::Cluster::client);
        let (attributor, kubernetes) = start_attribution(cfg, pod_label_room, rt, cluster)?;
        if let Some(a) = attributor {
            sampler = sampler.with_attribution(a);
        }
        Ok(Self {
            sampler,
            lib_path,
            kubernetes,
            simulated,
        })
    }

    /// The simulated DCGM library this pipeline's simulated node carries; `None` on a real node
    /// or without one.
    pub fn simulated_dcgm_lib(&self) -> Option<PathBuf> {
        self.simulated
            .node
            .as_ref()
            .and_then(sim::Node::dcgm_lib_path)
    }

    /// The sampler, and what it reads that must be kept alive as long as it runs.
    pub fn into_sampler(self) -> (Sampler, Simulated) {
        (self.sampler, self.simulated)
    }
}

/// The DCGM client for `cfg` (with `--simulate`, on the simulated DCGM library, embedded
/// unless `--dcgm-mode` says otherwise, as validation settled); `None` with DCGM off.
fn start_dcgm(cfg: &Config) -> std::io::Result<Option<dcgm::Client>> {
    let opts = cfg.dcgm.clone();
    if opts.mode == dcgm::Mode::Off {
        return Ok(None);
    }
    info!(mode = opts.mode.name(), library = %dcgm::library::place(opts.lib.as_deref()), "DCGM client");
    dcgm::Client::start(opts).map(Some)
}

/// The Kubernetes API client as `kube::Client::try_default` makes it (a kubeconfig first,
/// then the in-cluster service account), with a line saying which one was used.
async fn api_client() -> Result<(kube::Client, String), PipelineError> {
    let (config, source) =
        match kube::Config::from_kubeconfig(&kube::config::KubeConfigOptions::default()).await {
            Ok(c) => (c, "a kubeconfig (KUBECONFIG or ~/.kube/config)"),
            Err(from_file) => match kube::Config::incluster() {
                Ok(c) => (c, "the in-cluster service account"),
                Err(in_cluster) => {
                    return Err(PipelineError::NoApiConfig {
                        from_file,
                        in_cluster,
                    });
                }
            },
        };
    let line = format!("{source}, server {}", config.cluster_url);
    let client = kube::Client::try_from(config).map_err(PipelineError::ApiClient)?;
    Ok((client, line))
}

/// What attribution started: the attributor and what it uses.
type Started = (Option<Attributor>, Option<KubernetesInUse>);

/// Starts the attribution sources that the flags ask for (with `--simulate`: against a
/// simulated kubelet, API server and proc tree built from the scenario's `[[pods]]`, whose
/// API client is `simulated_api`), the pod labels given `pod_label_room` per series.
fn start_attribution(
    cfg: &Config,
    pod_label_room: Option<usize>,
    rt: &tokio::runtime::Runtime,
    simulated_api: Option<kube::Client>,
) -> Result<Started, PipelineError> {
    let hpc = match cfg.hpc_job_mapping_dir.clone() {
        Some(d) => {
            info!(dir = %d.display(), "HPC job mapping enabled");
            Some(HpcSource::spawn(d, CHECK_INTERVAL).map_err(PipelineError::Hpc)?)
        }
        None => None,
    };
    let Some(k) = cfg.kubernetes.as_ref() else {
        let attributor = hpc.map(|h| {
            let sources = SourceHandles {
                hpc: Some(h),
                ..SourceHandles::default()
            };
            Attributor::new(AttributionOptions::default(), sources)
        });
        return Ok((attributor, None));
    };
    let mut client = None;
    let mut api_config = String::new();
    if let Some(c) = simulated_api {
        client = Some(c);
        api_config = "the simulated API server".to_owned();
    } else if k.pod_metadata || cfg.health.writes() {
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
    info!(socket = %k.kubelet.socket.display(), refresh_ms = k.kubelet.interval.as_millis() as u64, "pod attribution enabled");
    let in_use = KubernetesInUse {
        socket: k.kubelet.socket.clone(),
        client: client.clone(),
        node_name: k.node_name.clone(),
        proc_root: k.process_metrics.then(|| k.proc_root.clone()),
        api_config,
    };
    let a = attribution::start(k, pod_label_room, client, hpc, rt.handle());
    Ok((Some(a), Some(in_use)))
}
