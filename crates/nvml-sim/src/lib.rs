//! nvml-sim: a simulated `libnvidia-ml.so`. Built as a `cdylib`, it exports the NVML C
//! functions the exporter calls (same ABI as the real library, types from
//! `nvml_wrapper_sys::bindings`) and answers them from a scripted, deterministic scenario:
//! GPU models, MIG layouts, workloads and a fault timeline (see `scenarios/README.md`).
//!
//! Layout, one concern per module:
//! - `model`: GPU presets (H100-SXM5-80GB, A100-SXM4-40GB, L4, H200-SXM5-141GB,
//!   B200-SXM-180GB, GB200, L40S) with their NVLink topology.
//! - `scenario`, `builtin`: scenario TOML schema, parsing, validation; embedded scenarios.
//! - `curves`, `physics`, `integrator`: deterministic signals, derived readings, counters.
//! - `sim`: the simulated machine and the NVML semantics of every query.
//! - `handle`, `ret`: opaque handles and return codes.
//! - `state`: the process-wide machine behind a mutex.
//! - `ffi`: the exported C functions (NVML and the `nvmlSim*` control API); cargo feature
//!   `ffi`, on by default.
//!
//! Also built as an `rlib` so tests can drive the Rust core directly. Note that an rlib copy
//! and a loaded `.so` copy have separate global state.

pub mod builtin;
pub mod curves;
#[cfg(feature = "ffi")]
pub mod ffi;
pub mod handle;
pub mod integrator;
pub mod model;
pub mod physics;
pub mod ret;
pub mod scenario;
pub mod sim;
pub mod state;
