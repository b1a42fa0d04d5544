//! Everything attribution learns from outside NVML. The kubelet client, the API reflectors
//! and the HPC directory refresh on their own threads and tasks and publish what they read;
//! the cgroup reader runs on the caller's thread (one cached read per new PID).
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
