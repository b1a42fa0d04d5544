//! The kubelet side of pod attribution.
//!
//! This module will hold the client for the kubelet pod-resources API (gRPC over the unix
//! socket named by `--pod-resources-kubelet-socket`) and the device-to-pod map that the
//! sampler joins into each snapshot. Both run in the background, never on a scrape.
//!
//! For now it holds only [`device_id`]: the pure parsing of the device IDs that the kubelet
//! reports for each container (`ContainerDevices.device_ids`) and the test that says which
//! resource names are NVIDIA GPU resources. It makes no kubelet call and no NVML call;
//! resolving a parsed ID to an NVML device is the map's job.

pub mod device_id;

/// Generated from `proto/podresources.proto` (package `v1`).
#[allow(missing_docs, clippy::all, clippy::unwrap_used, clippy::expect_used)]
pub mod v1 {
    tonic::include_proto!("v1");
}
