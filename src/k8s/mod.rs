//! The Kubernetes API side of pod attribution, and the host's process tree.
//!
//! - [`meta`]: a node-scoped reflector of pods (labels, UID, owning workload, container IDs).
//! - [`dra`]: a reflector of the DRA driver's ResourceSlices (pool/device → GPU or MIG UUID).
//! - [`labels`]: pod-label sanitizing and the allow-list.
//! - [`cgroup`]: PID → pod UID and container ID through `/proc/<pid>/cgroup`.
//! - [`fake_api`]: a small API server on loopback for `--simulate` and the tests.
//!
//! Everything here runs in the background; the sampler only reads the latest published index.

pub mod cgroup;
pub mod dra;
pub mod fake_api;
pub mod labels;
pub mod meta;
