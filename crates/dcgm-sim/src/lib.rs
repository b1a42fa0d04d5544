//! dcgm-sim: a simulated `libdcgm.so.4`. Built as a `cdylib` (`libdcgm_sim.so`), it exports
//! the part of DCGM 4.x's C API the exporter uses, with DCGM's names, signatures and struct
//! layouts (`dcgm_abi`), over the NVML simulator's scenarios and physics (`nvml_sim`): the same
//! GPUs, UUIDs, MIG layout and workload for the same scenario, seed and scenario time. It runs
//! the host engine in process (`dcgmStartEmbedded`) or talks to the stand-in host engine
//! `dcgm-sim-hostengine` over a socket (`dcgmConnect_v2`).
//!
//! Layout, one concern per module:
//! - `prof`: profiling metric groups per architecture and profiling values.
//! - `engine`: the host engine's state and DCGM's semantics of every call.
//! - `health`: what the health watches report for a GPU from the fault timeline.
//! - `switch`: the scenario's NVSwitch chips and their field values.
//! - `mig`: DCGM's profile ids of MIG entries.
//! - `proto`: the request/response messages and their framing.
//! - `remote`: the client side of a host-engine connection.
//! - `server`: the host engine's side (the `dcgm-sim-hostengine` binary runs it).
//! - `global`: the process-wide state (embedded machine, handles, clock setting).
//! - `ffi`: the exported C functions (DCGM's and the `dcgmSim*` control API).
//!
//! It must not export NVML's symbols: nvml-sim is linked without its `ffi` feature, and the
//! build script hides every symbol of the linked Rust libraries besides this crate's own.

pub mod engine;
pub mod ffi;
pub mod global;
pub mod health;
pub mod mig;
pub mod prof;
pub mod proto;
pub mod remote;
pub mod server;
pub mod switch;
