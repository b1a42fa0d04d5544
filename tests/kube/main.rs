//! The exporter against the Kubernetes API, one test binary: the pod and ResourceSlice
//! reflectors against the loopback simulated API server (`reflectors`), and the exporter on the
//! GPU Operator's DRA stack, `GPUCluster` (`dra`): `KUBERNETES_ENABLE_DRA`, DRA holders across
//! replaced slices, the pod UID in every label shape, and what works, what `check` reviews and
//! what warns under a ResourceSlices-only role.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../common/mod.rs"]
mod common;
mod dra;
mod reflectors;
