//! Everything attribution learns from outside NVML, refreshed in the background.
//!
//! - [`kubelet`]: the kubelet pod-resources client (which container holds which device).
//! - [`kube`]: the Kubernetes API reflectors (pod metadata, DRA ResourceSlices) and pod labels.
//! - [`cgroup`]: PID → pod UID and container ID through `/proc/<pid>/cgroup`.
//! - [`hpc`]: the HPC job-mapping directory.
//! - [`health`]: the state every source reports in the same form ([`health::Health`]).
//!
//! Sources publish plain data; they never join it with devices (that is `attribution`) and
//! never encode or serve it.

pub mod cgroup;
pub mod health;
pub mod hpc;
pub mod kube;
pub mod kubelet;
