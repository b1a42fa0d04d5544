//! gpu-exporter: a Prometheus exporter for NVIDIA GPUs, drop-in compatible with dcgm-exporter.
//!
//! Two flows meet in the sampler's snapshot; each module owns one arrow, lower layers never
//! import higher ones.
//!
//! ```text
//! NVML ──> gpu ──────────────┐
//! kubelet, kube API, /proc,  │
//!   HPC dir ──> sources ──> attribution ──> sampler ──> snapshot ──> exposition ──> serve
//! ```
//!
//! From the bottom up:

#![warn(missing_docs)]

/// The join of entities with pods, containers, HPC jobs and processes.
pub mod attribution;
/// Leaves every layer may use: wall clock, version, file change stamps.
pub mod base;
/// Every DCGM field (name, id, unit, entity level, NVML source) and the counters CSV grammar.
pub mod catalogue;
/// `gpu-exporter check`: the node's diagnosis report (files, NVML, GPUs, fields, sources).
pub mod check;
/// Flags and environment → a validated configuration; device selection; counters file reload.
pub mod config;
/// Text exposition of a snapshot (dcgm families, native families, self-metrics), gzip, publish.
pub mod exposition;
/// NVML: loading the library and reading every GPU and MIG instance once per tick; Xid events.
pub mod gpu;
/// `gpu-exporter probe`: a running exporter checked over HTTP, as a scraper sees it.
pub mod probe;
/// The background loop: read NVML, join attribution, snapshot, encode and publish each tick.
pub mod sampler;
/// HTTP: `/metrics` from the published bytes, `/health`, `/ready`, the landing page, TLS.
pub mod serve;
/// `--simulate`: the simulated library's controls, fake kubelet and API server, the cluster.
/// Only with the `sim` cargo feature (on by default; off in the container image).
#[cfg(feature = "sim")]
pub mod sim;
/// The immutable result of one tick: entities, values, devices, attribution, statistics.
pub mod snapshot;
/// Background sources for attribution: kubelet pod-resources, Kubernetes API, cgroups, HPC.
pub mod sources;
