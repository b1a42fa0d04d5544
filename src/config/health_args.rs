//! The flags of the GPU health outputs (flattened into [`super::cli::Cli`]): `/health`'s
//! answer without GPUs, the flap damping hold, and the opt-in Kubernetes writes (Node
//! conditions, Events), which need `-k` and the node's name ([`HealthArgs::check`], called by
//! `validate.rs`).
//!
//! Definitions and that check only; it must not call the API server.

use clap::{ArgAction, Args};

/// A Kubernetes write flag without what it needs.
#[derive(Debug, thiserror::Error)]
pub enum KubeWritesError {
    /// Asked for without `-k`.
    #[error("{0} needs -k/--kubernetes (pod attribution, which names the pods an Event goes to)")]
    NoKubernetes(&'static str),
    /// Asked for without the node's name.
    #[error("{0} needs the node's name in NODE_NAME (the chart sets it from spec.nodeName)")]
    NoNodeName(&'static str),
}

/// Raw health flags.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Health")]
pub struct HealthArgs {
    /// `/health` answers 503 while no GPU is being exported.
    #[arg(long = "health-require-gpus", env = "DCGM_EXPORTER_HEALTH_REQUIRE_GPUS", action = ArgAction::SetTrue)]
    pub health_require_gpus: bool,
    /// Flap damping: how long a GPU health reason stays after its cause is gone (Go duration).
    #[arg(
        long = "health-hold",
        env = "GPU_EXPORTER_HEALTH_HOLD",
        allow_hyphen_values = true
    )]
    pub health_hold: Option<String>,
    /// Set the exporter's own conditions on its Node (GpuUnhealthy, GpuDegraded,
    /// GpuResetRequired, GpuRebootRequired); needs -k, NODE_NAME and RBAC to patch
    /// nodes/status.
    #[arg(long = "kubernetes-node-conditions", env = "GPU_EXPORTER_KUBERNETES_NODE_CONDITIONS", action = ArgAction::SetTrue)]
    pub kubernetes_node_conditions: bool,
    /// Write Events (events.k8s.io/v1) on the Node and on the pods holding a GPU or MIG
    /// instance that was hit; needs -k, NODE_NAME and RBAC to create and patch events.
    #[arg(long = "kubernetes-events", env = "GPU_EXPORTER_KUBERNETES_EVENTS", action = ArgAction::SetTrue)]
    pub kubernetes_events: bool,
}

impl HealthArgs {
    /// The first Kubernetes write flag given, if any.
    fn asked(&self) -> Option<&'static str> {
        if self.kubernetes_node_conditions {
            Some("--kubernetes-node-conditions")
        } else if self.kubernetes_events {
            Some("--kubernetes-events")
        } else {
            None
        }
    }

    /// Refuses a Kubernetes write flag without `-k` (`kubernetes`), or without the node's name
    /// (`node_known`: `NODE_NAME`, or the simulated node's).
    pub fn check(&self, kubernetes: bool, node_known: bool) -> Result<(), KubeWritesError> {
        match self.asked() {
            Some(flag) if !kubernetes => Err(KubeWritesError::NoKubernetes(flag)),
            Some(flag) if !node_known => Err(KubeWritesError::NoNodeName(flag)),
            _ => Ok(()),
        }
    }
}
