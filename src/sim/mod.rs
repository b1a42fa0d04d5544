//! The exporter side of `--simulate`: the simulated NVML library's control surface, a
//! simulated kubelet pod-resources server, a fake Kubernetes API server and the simulated
//! cluster that wires them from a scenario.
//!
//! - [`library`]: finds and drives the simulated `libnvml_sim.so` (clock, faults).
//! - [`kubelet`]: a pod-resources gRPC server on a unix socket.
//! - [`api`]: a small Kubernetes API server on loopback.
//! - [`cluster`]: a scenario's pods, processes and DRA slices served through the above.
//!
//! Only `--simulate`, the tests and the benchmarks use this module; the exporter's data path
//! never imports it.

pub mod api;
pub mod cluster;
pub mod kubelet;
pub mod library;
