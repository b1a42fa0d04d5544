//! The kubelet side of pod attribution.
//!
//! This module holds the client for the kubelet pod-resources API (gRPC over the unix
//! socket named by `--pod-resources-kubelet-socket`). It runs in the background, never on a
//! scrape.
//!
//! - [`client`]: the background client (one lazy channel, `List` and
//!   `GetAllocatableResources` on an interval, deadlines, backoff).
//! - [`device_id`]: the pure parsing of the device IDs the kubelet reports for each container
//!   and of which resource names are NVIDIA GPU resources.
//! - [`v1`]: the generated protobuf types and gRPC stubs.
//!
//! Resolving parsed IDs to NVML devices and pods to series is `attribution`'s job.

pub mod client;
pub mod device_id;

/// Generated from `proto/podresources.proto` (package `v1`).
#[allow(missing_docs, clippy::all, clippy::unwrap_used, clippy::expect_used)]
pub mod v1 {
    tonic::include_proto!("v1");
}
