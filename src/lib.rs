//! gpu-exporter: a Prometheus exporter for NVIDIA GPUs, drop-in compatible with dcgm-exporter.
//!
//! Two flows meet in the sampler's snapshot; each module owns one arrow, lower layers never
//! import higher ones (`scripts/architecture.py` checks it; `docs/architecture.md` explains
//! where a change goes).
//!
//! ```text
//! NVML ──────────────────────> gpu ─────────────────────┐
//! DCGM ──────────────────────> dcgm (own thread) ───────┤
//!                                                       ├──> sampler ──> snapshot
//! kubelet, API, /proc, HPC ──> sources ──> attribution ─┘       ^           │
//!                                             health (verdicts) ┘           v
//!                                  serve <── Shared <── exposition::publish::render
//!                   Kubernetes <── notify <──┘
//! ```
//!
//! The modules below are in layer order, bottom first; each is separated from the next by a
//! blank line so that rustfmt keeps this order. Their one-line summaries are plain comments:
//! each module's own `//!` header is its documentation (a `///` here too would make rustdoc
//! resolve the header's links from the crate root instead of the module).

#![warn(missing_docs)]

// Leaves every layer may use: wall clock, version, file change stamps, bounded reads.
pub mod base;

// Every DCGM field (name, id, unit, entity level, NVML source), the counters CSV grammar, and
// the compatibility profiles' names and shapes.
pub mod catalogue;

// The immutable result of one tick: entities, values, devices, attribution, statistics.
pub mod snapshot;

// Background sources for attribution: kubelet pod-resources, Kubernetes API, cgroups, HPC.
pub mod sources;

// NVML: loading the library and reading every GPU and MIG instance once per tick; Xid events;
// the device selection and the collection plan.
pub mod gpu;

// DCGM, loaded at run time: profiling fields on GPUs without GPM and on their MIG instances,
// from an embedded or a remote hostengine, on one thread with a deadline per tick.
pub mod dcgm;

// The join of entities with pods, containers, HPC jobs and processes.
pub mod attribution;

// The GPU health model: one verdict per GPU and MIG instance, with reasons, actions and
// flap damping.
pub mod health;

// Text exposition of a snapshot (dcgm families, native families, self-metrics), gzip, publish.
pub mod exposition;

// The background loop: read NVML, join attribution, snapshot, encode and publish each tick;
// the counters file's hot reload.
pub mod sampler;

// GPU health into Kubernetes, opt-in: the exporter's Node conditions and Events on the Node
// and the pods holding a GPU that was hit; bounded, off the tick and scrape paths.
pub mod notify;

// HTTP: `/metrics` from the published bytes, `/health`, `/ready`, the landing page, TLS.
pub mod serve;

// Flags, environment and `--config-file` → a validated configuration, and from it each
// component's options.
pub mod config;

// `--simulate`: the simulated library's controls, fake kubelet and API server, the cluster.
// The simulator itself only with the `sim` cargo feature (on by default; off in the container
// image, where its stand-in refuses `--simulate`).
pub mod sim;

// The daemon's wiring: pipeline, attribution start, HTTP server, signals, shutdown.
pub mod daemon;

// `gpu-exporter check`: the node's diagnosis report (files, NVML, GPUs, fields, sources).
pub mod check;

// `gpu-exporter probe`: a running exporter checked over HTTP, as a scraper sees it.
pub mod probe;
