//! The exporter's version, as `gpu_exporter_build_info`, the landing page and `check` show it.
//!
//! A constant only; it must not depend on any other module.

/// The crate version (`Cargo.toml`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
