//! The display types of the node's diagnosis, what `/status` serializes and the landing page
//! (`landing.rs`) renders: per GPU and MIG instance the pods that hold it, use, limits and
//! health ([`GpuStatus`], [`InstanceStatus`], [`CurrentValues`], [`ShownHealth`]), and why a
//! value is missing where the cause may pass ([`Missing`]); and the exporter's own state
//! (sources, DCGM among them, [`SourceStatus`]; unsupported and withheld fields
//! ([`WithheldField`]); the values DCGM did not
//! serve, [`UnavailableField`]; ticks, counters reloads) in [`NodeStatus`].
//!
//! Types only: their names and fields are `/status`'s JSON, so a change here is an API change
//! (so is one to `snapshot::ShownSignals`, whose fields are the health block's first keys).
//! Nothing here is computed (that is `derive`'s), judges health or spells a reason: the
//! verdict and its signals are the health model's (`snapshot::EntityHealth`), a reason's word
//! is `snapshot::Reason::words`'s.

use serde::Serialize;

use crate::snapshot::{ShownSignals, SourceHealth};

/// The whole diagnosis.
#[derive(Debug, Clone, Serialize)]
pub struct NodeStatus {
    /// Exporter version.
    pub version: &'static str,
    /// The node's name (the host label's value), when known.
    pub node: Option<String>,
    /// `/ready`'s answer.
    pub ready: bool,
    /// Whether NVML answered in the last tick.
    pub nvml_up: bool,
    /// Unix time of the snapshot.
    pub taken_at_unix: f64,
    /// Seconds from the snapshot to when this status was built (the landing page and /status
    /// are built once per tick, at the first request after it).
    pub age_seconds: f64,
    /// Ticks so far.
    pub ticks: u64,
    /// Duration of the last tick, milliseconds.
    pub tick_ms: f64,
    /// Seconds the sampler has not finished a tick beyond its limit (the watchdog), if stalled.
    pub stalled_seconds: Option<f64>,
    /// Every physical GPU, up or lost.
    pub gpus: Vec<GpuStatus>,
    /// Attribution sources (kubelet, pods, processes, …), then DCGM (`dcgm`, with its
    /// mode, address, state and since when).
    pub sources: Vec<SourceStatus>,
    /// Fields NVML reported unsupported, per entity.
    pub unsupported: Vec<UnsupportedField>,
    /// Profiling fields withheld on every GPU because the node mixes GPU models and some do
    /// not support them (`--compatibility dcgm-4.10` only; left out of the JSON when empty).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub withheld: Vec<WithheldField>,
    /// Profiling values DCGM should have served this tick and did not, per entity, with why
    /// (DCGM down, connecting, or no value).
    pub unavailable: Vec<UnavailableField>,
    /// Fields whose reads failed, with the error kind and count.
    pub field_errors: Vec<FieldErrors>,
    /// The counters file in use.
    pub counters: CountersStatus,
    /// Values the page cannot show because the counters file does not export their field:
    /// (signal, field to add). The health verdict watches its signals anyway.
    pub not_configured: Vec<(&'static str, &'static str)>,
}

/// One physical GPU.
#[derive(Debug, Clone, Serialize)]
pub struct GpuStatus {
    /// NVML index.
    pub gpu: u32,
    /// UUID.
    pub uuid: String,
    /// Model name.
    pub model: String,
    /// False when NVML lost the GPU.
    pub up: bool,
    /// Pods and containers holding the whole GPU (`namespace/pod/container`), every one of
    /// them on a shared GPU; on a lost GPU, those that held it when it was last seen.
    pub holders: Vec<String>,
    /// Processes on the GPU that are in no pod (the first few, by pid).
    pub outside_pods: Vec<ProcessStatus>,
    /// Use and limits of the GPU as a whole (absent when it is lost, or MIG-only).
    pub reading: Option<CurrentValues>,
    /// Health at a glance.
    pub health: ShownHealth,
    /// MIG instances, with their holders and use.
    pub instances: Vec<InstanceStatus>,
}

/// One MIG instance.
#[derive(Debug, Clone, Serialize)]
pub struct InstanceStatus {
    /// MIG profile, e.g. `3g.40gb`.
    pub profile: String,
    /// GPU instance id.
    pub gpu_instance_id: u32,
    /// MIG device UUID.
    pub uuid: String,
    /// Holders (`namespace/pod/container`).
    pub holders: Vec<String>,
    /// Processes on the instance that are in no pod (the first few, by pid).
    pub outside_pods: Vec<ProcessStatus>,
    /// Use of the instance.
    pub reading: CurrentValues,
    /// The health model's verdict of the instance: its GPU's whole-GPU reasons and its own
    /// application Xids (docs/health.md, "MIG instances").
    pub verdict: &'static str,
}

/// A process on a GPU or instance that no pod holds.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessStatus {
    /// Its pid (in the host's PID namespace).
    pub pid: u32,
    /// Its command name, when the proc tree shows it.
    pub name: Option<String>,
}

/// Current values of one entity; `None` where the field is not configured or not read.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CurrentValues {
    /// GPU utilization, percent (`DCGM_FI_DEV_GPU_UTIL`, or graphics engine active × 100 on
    /// a MIG instance).
    pub util_percent: Option<f64>,
    /// Why the utilization is missing, when DCGM should have served it, or NVML gives none
    /// for a GPU in MIG mode as a whole (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub util_missing: Option<Missing>,
    /// Framebuffer used, MiB.
    pub fb_used_mib: Option<f64>,
    /// Framebuffer usable (used + free), MiB.
    pub fb_total_mib: Option<f64>,
    /// Temperature, °C.
    pub temp_c: Option<f64>,
    /// Temperature at which hardware slowdown starts, °C.
    pub temp_slowdown_c: Option<f64>,
    /// Power draw, W.
    pub power_w: Option<f64>,
    /// Enforced power limit, W.
    pub power_limit_w: Option<f64>,
}

/// Health at a glance of one GPU: the signals the health model judged it from, as the model
/// shows them, and its verdict.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ShownHealth {
    /// The signals, the object's first keys: the model's `snapshot::ShownSignals` as they
    /// are (a field the counters file does not export is `None`, though the model watches
    /// it; their keys are that type's).
    #[serde(flatten)]
    pub signals: ShownSignals,
    /// The health model's verdict: `ok`, `warning` or `critical`.
    pub verdict: &'static str,
    /// Why the verdict is not `ok`, in words, worst first (empty when `ok`).
    pub reasons: Vec<String>,
    /// The same reasons, machine-readable (absent when `ok`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
    /// The recommended action of the worst reason (absent when `ok`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<&'static str>,
    /// NVML's recovery action (0 none, 1 reset, 2 reboot, 3 drain P2P, 4 drain and reset),
    /// when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_action: Option<u32>,
}

/// One reason of a verdict, as the health model gives it (docs/health.md).
#[derive(Debug, Clone, Serialize)]
pub struct Cause {
    /// The reason's word, e.g. `xid_hardware`.
    pub reason: &'static str,
    /// `warning` or `critical`.
    pub severity: &'static str,
    /// The Xid code, for the `xid_*` reasons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xid: Option<u64>,
    /// The MIG GPU instance the cause belongs to (an application Xid NVML reported with
    /// one); absent for the whole GPU's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_instance_id: Option<u32>,
    /// What was seen.
    pub message: String,
    /// The recommended action's word, e.g. `reset_gpu`.
    pub action: &'static str,
    /// `false` when the cause is gone and the reason is held (flap damping).
    pub present: bool,
    /// Seconds since the cause was first seen in this episode.
    pub since_seconds: f64,
}

/// Why a value is missing where the page would show it.
#[derive(Debug, Clone, Serialize)]
pub struct Missing {
    /// Whose value it is: `dcgm` (DCGM should serve it and does not) or `nvml`.
    pub source: &'static str,
    /// A few words for a table cell: `DCGM down`, `DCGM connecting`, `no DCGM value`,
    /// `per MIG instance`.
    pub why: &'static str,
    /// The sentence, with DCGM's own error where it is DCGM's.
    pub detail: String,
}

/// One entry of `sources`: a source's health, and for DCGM its own fields beside it.
#[derive(Debug, Clone, Serialize)]
pub struct SourceStatus {
    /// The health every source reports (for DCGM: `up` when it answered the last tick,
    /// `age_seconds` since its last answer, `errors` the ticks without one).
    #[serde(flatten)]
    pub health: SourceHealth,
    /// DCGM's mode, address, state and since when (on the `dcgm` entry only).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub dcgm: Option<DcgmSource>,
}

/// What the `dcgm` entry of `sources` adds to a source's health.
#[derive(Debug, Clone, Serialize)]
pub struct DcgmSource {
    /// `off`, `embedded` or `remote`.
    pub mode: &'static str,
    /// The hostengine's address, in remote mode.
    pub address: Option<String>,
    /// `off`, `connecting`, `up` or `down`.
    pub state: &'static str,
    /// Unix time at which the state began (absent with DCGM off).
    pub since_unix: Option<f64>,
    /// Seconds from then to the snapshot (absent with DCGM off).
    pub since_seconds: Option<f64>,
}

/// A profiling value DCGM should have served on an entity this tick and did not.
#[derive(Debug, Clone, Serialize)]
pub struct UnavailableField {
    /// GPU index.
    pub gpu: u32,
    /// GPU instance id on a MIG instance.
    pub gpu_instance_id: Option<u32>,
    /// Field name.
    pub field: &'static str,
    /// Why, in a sentence with DCGM's own error.
    pub reason: String,
}

/// A field NVML does not support on an entity.
#[derive(Debug, Clone, Serialize)]
pub struct UnsupportedField {
    /// GPU index.
    pub gpu: u32,
    /// GPU instance id on a MIG instance.
    pub gpu_instance_id: Option<u32>,
    /// Field name.
    pub field: &'static str,
}

/// A profiling field withheld on every GPU of a node of mixed GPU models.
#[derive(Debug, Clone, Serialize)]
pub struct WithheldField {
    /// Field name.
    pub field: &'static str,
    /// The GPUs (indices) that do not support it.
    pub lacking: Vec<u32>,
    /// Why, naming those GPUs and their models.
    pub reason: String,
}

/// Read errors of one field.
#[derive(Debug, Clone, Serialize)]
pub struct FieldErrors {
    /// Field name.
    pub field: &'static str,
    /// Error kind.
    pub kind: &'static str,
    /// Failed reads so far.
    pub count: u64,
}

/// The counters file's state.
#[derive(Debug, Clone, Serialize)]
pub struct CountersStatus {
    /// Metric rows in use.
    pub metrics: usize,
    /// Whether the last reload attempt succeeded (`None` before any reload state exists).
    pub last_reload_ok: Option<bool>,
    /// Successful reloads since start.
    pub reloads: u64,
    /// Failed reloads since start.
    pub reload_failures: u64,
}
