//! The Kubernetes API side of pod attribution.
//!
//! - [`meta`]: a node-scoped reflector of pods (labels, UID, owning workload, container IDs).
//! - [`dra`]: a reflector of the DRA driver's ResourceSlices (pool/device → GPU or MIG UUID).
//! - [`reflector`]: what both reflectors share: the background task ([`reflector::Reflector`]),
//!   the published index and its status, the recovery probe.
//! - [`api_error`]: one-line descriptions of failed API calls (also for `notify`'s writer).
//! - [`pod_labels`]: pod-label sanitizing and the allow-list.
//! - [`access`]: `SelfSubjectAccessReview`s and a node-scoped pod list, for `gpu-exporter check`.
//! - [`failure_log`]: which reflector failures are warned about (one per cause).
//!
//! The reflectors run in the background; the sampler only reads the latest published index.
//! `pod_labels` and `api_error` are pure text work. Nothing here calls NVML or the kubelet.

pub mod access;
pub mod api_error;
pub mod dra;
pub mod failure_log;
pub mod meta;
pub mod pod_labels;
pub mod reflector;
