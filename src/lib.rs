//! gpu-exporter: a Prometheus exporter for NVIDIA GPUs, drop-in compatible with dcgm-exporter.
//!
//! Data flow, one owner per arrow:
//!
//! ```text
//! NVML (gpu::load, gpu::reader) -> sampler (background, every --collect-interval)
//!   -> snapshot (immutable) -> encode (+ self_metrics; plain + gzip, once per tick)
//!   -> publish (atomic swap) -> http (serves cached bytes; no NVML on a scrape)
//! ```
//!
//! `catalogue` describes every field (DCGM name and id, unit, entity level, NVML source) and
//! parses the counters CSV; `config` turns flags into a validated configuration; `simulate`
//! opens the simulated NVML library for `--simulate`; `landing` renders the `/` page.

#![warn(missing_docs)]

pub mod attribution;
pub mod catalogue;
pub mod config;
pub mod counters_reload;
pub mod devices;
pub mod encode;
pub mod file_stamp;
pub mod gpu;
pub mod hpc;
pub mod http;
pub mod k8s;
pub mod landing;
pub mod podresources;
pub mod publish;
pub mod sampler;
pub mod self_metrics;
pub mod sim_cluster;
pub mod simulate;
pub mod snapshot;
pub mod web_config;
