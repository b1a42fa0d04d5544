//! The simulated node as the daemon and `check` use it: the simulated NVML library (and the
//! simulated DCGM library, when built) configured with a scenario ([`Node`]) and, with `-k`, the simulated kubelet, API server and proc tree
//! built from the scenario's `[[pods]]` ([`Cluster`]).
//!
//! This is one of the two forms of one interface; `absent.rs` is the other, compiled in a build
//! without the `sim` feature, where every call refuses `--simulate`. The daemon compiles against
//! whichever form the build has, so it never names the simulator's own types. This file must not
//! read flags or start attribution: it returns what the daemon wires.

use std::path::{Path, PathBuf};

use tracing::info;

use super::cluster::{SimCluster, SimClusterError};
use super::library::{SimLib, SimLibError, find_library};
use crate::config::SimulatedNode;

/// Why the simulated node cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The simulated library cannot be found, loaded or configured.
    #[error(transparent)]
    Library(#[from] SimLibError),
    /// The simulated DCGM library cannot be used.
    #[error(transparent)]
    Dcgm(#[from] super::dcgm::SimDcgmError),
    /// The simulated cluster cannot be built or started.
    #[error(transparent)]
    Cluster(#[from] SimClusterError),
}

/// The simulated NVML library, configured with a scenario. Keep it alive while NVML is loaded
/// from [`Node::lib_path`].
pub struct Node {
    lib: SimLib,
    dcgm: Option<super::dcgm::SimDcgm>,
}

impl Node {
    /// Finds the simulated library (`nvml_lib`, else next to the executable) and configures it
    /// with `scenario` (a built-in name or a file) and `seed`.
    pub fn open(scenario: &str, seed: u64, nvml_lib: Option<&Path>) -> Result<Self, SimError> {
        let path = find_library(nvml_lib)?;
        let lib = SimLib::open(&path)?;
        lib.configure(scenario, seed)?;
        info!(library = %path.display(), scenario, seed, "running on a simulated node");
        // The simulated DCGM library, when built, with the same scenario and seed (configured
        // right after NVML's, so both clocks start together).
        let builtin = lib.scenario_names()?.split(',').any(|n| n == scenario);
        let dcgm = match super::dcgm::find(None) {
            Some(p) => {
                let d = super::dcgm::SimDcgm::open(&p, scenario, builtin, seed)?;
                info!(library = %p.display(), "simulated DCGM library configured");
                Some(d)
            }
            None => {
                info!(
                    "no simulated DCGM library ({}) next to the executable: profiling on GPUs \
                     without GPM is not simulated (build it with `cargo build --workspace`)",
                    super::dcgm::LIB_NAME
                );
                None
            }
        };
        Ok(Self { lib, dcgm })
    }

    /// The simulated DCGM library's path, when it is there.
    pub fn dcgm_lib_path(&self) -> Option<PathBuf> {
        self.dcgm.as_ref().map(|d| d.path().to_path_buf())
    }

    /// The library's path, to load NVML from.
    pub fn lib_path(&self) -> PathBuf {
        self.lib.path().to_path_buf()
    }
}

/// The simulated kubelet, API server and proc tree of a scenario's `[[pods]]`; they run while
/// this is alive.
pub struct Cluster {
    inner: SimCluster,
}

impl Cluster {
    /// Starts the cluster of `node`'s scenario (on `rt`).
    pub fn start(node: &Node, rt: &tokio::runtime::Runtime) -> Result<Self, SimError> {
        let path = node.lib_path();
        let c = rt.block_on(SimCluster::start(&node.lib, Some(&path)))?;
        info!(
            pods = c.pods,
            jobs = c.jobs,
            socket = %c.socket.display(),
            api = %c.api.url(),
            proc_root = %c.proc_root.display(),
            "simulated kubelet, API server and proc tree started"
        );
        Ok(Self { inner: c })
    }

    /// What validation points the components at on `node` with this cluster: the libraries,
    /// the node name, the kubelet socket, the proc tree and whether DRA is in use.
    pub fn site(&self, node: &Node) -> SimulatedNode {
        self.inner
            .simulated_node(node.lib_path(), node.dcgm_lib_path())
    }

    /// A Kubernetes API client for the simulated API server.
    pub fn client(&self) -> kube::Client {
        self.inner.client.clone()
    }
}
