//! The flags of the GPU health outputs (flattened into [`super::cli::Cli`]): the flap damping
//! hold, and the opt-in Kubernetes writes (Node conditions, Events), checked into
//! [`NotifyOptions`] once the node's name is known.
//!
//! Parsing and checking only; it must not call the API server.

use clap::{ArgAction, Args};

use crate::notify::{CALL_TIMEOUT, EVENT_RETRY_FOR, NotifyOptions, QUEUE};

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
pub struct HealthArgs {
    /// Flap damping: how long a GPU health reason stays after its cause is gone (Go duration).
    #[arg(long = "health-hold", env = "GPU_EXPORTER_HEALTH_HOLD")]
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

    /// Whether a Kubernetes write (Node conditions, Events) is asked for.
    pub fn writes(&self) -> bool {
        self.asked().is_some()
    }

    /// Refuses a Kubernetes write flag without `-k`.
    pub fn check(&self, kubernetes: bool) -> Result<(), KubeWritesError> {
        match self.asked() {
            Some(flag) if !kubernetes => Err(KubeWritesError::NoKubernetes(flag)),
            _ => Ok(()),
        }
    }

    /// The Kubernetes writes asked for, on node `node`: `None` when neither is on; an error
    /// when the node's name is not known.
    pub fn notify(
        &self,
        node: Option<&str>,
        interval: std::time::Duration,
    ) -> Result<Option<NotifyOptions>, KubeWritesError> {
        let Some(flag) = self.asked() else {
            return Ok(None);
        };
        let Some(node) = node.filter(|n| !n.is_empty()) else {
            return Err(KubeWritesError::NoNodeName(flag));
        };
        Ok(Some(NotifyOptions {
            node: node.to_owned(),
            conditions: self.kubernetes_node_conditions,
            events: self.kubernetes_events,
            interval,
            timeout: CALL_TIMEOUT,
            queue: QUEUE,
            event_retry_for: EVENT_RETRY_FOR,
        }))
    }
}
