//! The exporter side of `--simulate`: the simulated NVML library's control surface, a
//! simulated kubelet pod-resources server, a fake Kubernetes API server and the simulated
//! cluster that wires them from a scenario.
//!
//! - [`Node`] and [`Cluster`]: the one interface the daemon uses. With the `sim` cargo feature
//!   they are the simulator (`node.rs`); without it (the container image) they are stand-ins
//!   that refuse `--simulate` (`absent.rs`), and none of the modules below is built.
//! - `library`: finds and drives the simulated `libnvml_sim.so` (clock, faults).
//! - `dcgm`: finds the simulated `libdcgm_sim.so` and configures it with the same scenario.
//! - `kubelet`: a pod-resources gRPC server on a unix socket.
//! - `api`: a small Kubernetes API server on loopback.
//! - `pods`: one scenario pod resolved against the node's GPUs (its kubelet entry, Pod object
//!   and cgroups); `jobs`: the `[[jobs]]` streams of short-lived pods; `churn`: which pods
//!   exist at a scenario time, and the player that follows the scenario clock.
//! - `cluster`: a scenario's pods, processes and DRA slices served through the above.
//!
//! Only `--simulate`, the tests and the benchmarks use this module; the exporter's data path
//! never imports it.

#[cfg(feature = "sim")]
pub mod api;
#[cfg(feature = "sim")]
pub mod churn;
#[cfg(feature = "sim")]
pub mod cluster;
#[cfg(feature = "sim")]
pub mod dcgm;
#[cfg(feature = "sim")]
pub mod jobs;
#[cfg(feature = "sim")]
pub mod kubelet;
#[cfg(feature = "sim")]
pub mod library;
#[cfg(feature = "sim")]
pub mod pods;

#[cfg(not(feature = "sim"))]
#[path = "absent.rs"]
mod node;
#[cfg(feature = "sim")]
mod node;

pub use node::{Cluster, Node, SimError};
