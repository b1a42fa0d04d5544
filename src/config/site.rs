//! What the place the exporter runs on settles before validation ends ([`Site`]): on a real
//! node nothing (the flags and the environment say it all); with `--simulate`, the simulated
//! node that the daemon started from the raw settings ([`Simulation`]: what to start), whose NVML and DCGM libraries, node
//! name, kubelet socket, proc tree and DRA claims the validated [`super::Config`] then holds
//! from the start, so that nothing changes it afterwards.
//!
//! The rules by which a site overrides what the flags say are here too, one method per
//! component, which validation applies as it builds each component's options.
//!
//! Plain data and those rules; it must not start the simulator (`daemon::pipeline` does,
//! through `sim`, which sits above this layer) or read anything.

use std::path::PathBuf;

use crate::attribution::KubernetesOptions;
use crate::dcgm::Mode;

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

    /// The host label's value: `NODE_NAME` when it is set (`node_name_set`), else the
    /// simulated node's name, else the kernel's host name (`host`).
    pub(super) fn hostname(&self, node_name_set: bool, host: impl FnOnce() -> String) -> String {
        match &self.simulated {
            Some(sim) if !node_name_set => sim.node_name.clone(),
            _ => host(),
        }
    }

    /// The NVML library to load when the site has its own (the simulated one); `None`: the
    /// flags decide.
    pub(super) fn nvml_lib(&self) -> Option<PathBuf> {
        self.simulated.as_ref().map(|sim| sim.nvml_lib.clone())
    }

    /// DCGM's mode and library, from the flags' `mode` (`mode_given` when `--dcgm-mode` was
    /// given) and `lib`: on a simulated node with its DCGM library, an unset mode that would
    /// be off is embedded, and an unset library is the simulated one.
    pub(super) fn dcgm(
        &self,
        mode: Mode,
        mode_given: bool,
        lib: Option<PathBuf>,
    ) -> (Mode, Option<PathBuf>) {
        let simulated = self.simulated.as_ref().and_then(|s| s.dcgm_lib.clone());
        let mode = match (&mode, mode_given, &simulated) {
            (Mode::Off, false, Some(_)) => Mode::Embedded,
            _ => mode,
        };
        (mode, lib.or(simulated))
    }

    /// Attribution on the simulated cluster: its socket, proc tree and node, DRA on when a pod
    /// holds a claim. The pod watch stays as the flags set it (on by default; off with
    /// `--kubernetes-pod-metadata=false`, as a node whose RBAC has no pods runs).
    pub(super) fn kubernetes(&self, mut k: KubernetesOptions) -> KubernetesOptions {
        if let Some(sim) = &self.simulated {
            k.kubelet.socket = sim.kubelet_socket.clone();
            k.proc_root = sim.proc_root.clone();
            k.node_name = Some(sim.node_name.clone());
            k.dra = k.dra || sim.dra_claims;
        }
        k
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
