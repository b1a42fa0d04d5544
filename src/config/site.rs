//! What the place the exporter runs on settles before validation ends ([`Site`]): on a real
//! node nothing (the flags and the environment say it all); with `--simulate`, the simulated
//! node that the daemon started from the raw settings ([`Simulation`]: what to start), whose NVML and DCGM libraries, node
//! name, kubelet socket, proc tree and DRA claims the validated [`super::Config`] then holds
//! from the start, so that nothing changes it afterwards.
//!
//! Plain data; it must not start the simulator (`daemon::pipeline` does, through `sim`, which
//! sits above this layer) or read anything.

use std::path::PathBuf;

/// Where the exporter runs, as validation needs to know it.
#[derive(Debug, Clone, Default)]
pub struct Site {
    /// The simulated node `--simulate` started; `None` on a real node.
    pub simulated: Option<SimulatedNode>,
}

impl Site {
    /// A real node: everything comes from the flags and the environment.
    pub fn host() -> Self {
        Self::default()
    }
}

/// The simulated node and cluster of `--simulate`, as the components must be pointed at them.
#[derive(Debug, Clone)]
pub struct SimulatedNode {
    /// The scenario's node name: the host label's value unless `NODE_NAME` is set, and the
    /// node the attribution sources and the Kubernetes outputs are scoped to.
    pub node_name: String,
    /// The simulated NVML library, loaded instead of `--nvml-lib` or the loader's search.
    pub nvml_lib: PathBuf,
    /// The simulated DCGM library, when it was built: DCGM runs embedded on it unless
    /// `--dcgm-mode` says otherwise, and it is loaded unless `--dcgm-lib` names another.
    pub dcgm_lib: Option<PathBuf>,
    /// The simulated kubelet's pod-resources socket.
    pub kubelet_socket: PathBuf,
    /// The simulated proc tree.
    pub proc_root: PathBuf,
    /// Whether a pod of the scenario holds a DRA claim (DRA attribution is then on).
    pub dra_claims: bool,
}

/// What `--simulate` asks the daemon to start before validation ends: the scenario, its seed
/// and where to look for the simulated library (`--nvml-lib`, its kind checked).
#[derive(Debug, Clone)]
pub struct Simulation {
    /// The scenario: a built-in name or a file.
    pub scenario: String,
    /// `--simulate-seed`.
    pub seed: u64,
    /// `--nvml-lib`: the simulated library's path, else next to the executable.
    pub nvml_lib: Option<PathBuf>,
}
