//! The immutable result of one sampler tick: plain data types, no behaviour beyond accessors.
//!
//! A [`Snapshot`] holds every value the exporter will serve until the next tick: one
//! [`EntitySample`] per physical GPU and per MIG instance, the up/down state of every device,
//! the Xid totals, the attribution join and the sampler's own statistics. Its parts are filled
//! during one tick by `gpu` (entities, values, devices, Xids), `attribution` (the join) and
//! `sampler` (statistics, reload state); `exposition` and the landing page only read it, and
//! nothing mutates it after it is published. It must not do I/O or import any layer above
//! `catalogue`.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::base::label_text::escape_label;

/// Identity of a MIG GPU instance (with its compute instance).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigIdentity {
    /// Profile name as `nvidia-smi` shows it, e.g. `3g.40gb`.
    pub profile: String,
    /// NVML GPU instance id.
    pub gpu_instance_id: u32,
    /// NVML compute instance id.
    pub compute_instance_id: u32,
    /// The MIG device UUID (`MIG-…`).
    pub uuid: String,
}

/// The identity labels of one entity (a physical GPU or a MIG instance on it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityId {
    /// NVML index of the physical GPU.
    pub gpu: u32,
    /// UUID of the physical GPU (`GPU-…`).
    pub uuid: String,
    /// PCI bus id of the physical GPU, e.g. `00000000:18:00.0`.
    pub pci_bus_id: String,
    /// Device name as dcgm-exporter writes it: `nvidia<index>`.
    pub device: String,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub model_name: String,
    /// Present on MIG instance entities.
    pub mig: Option<MigIdentity>,
}

/// One metric value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An ordinary number.
    Num(f64),
    /// The last Xid (`DCGM_FI_DEV_XID_ERRORS`), encoded with `err_code`/`err_msg` labels.
    Xid(u64),
    /// A count over a sliding window split by one label (`DCGM_EXP_*_COUNT`): one series per
    /// label value, each with `window_size_in_ms`. An empty window is one series of value 0
    /// without the split label, as dcgm-exporter writes it. Also a count since the exporter
    /// started (`DCGM_EXP_*_TOTAL`, no window): one series per label value, none when empty.
    Window(WindowCounts),
    /// The result of each health watch of a GPU (`DCGM_EXP_GPU_HEALTH_STATUS`): one series per
    /// watch with `health_watch` and `health_error_code` labels.
    Health(Vec<HealthWatch>),
}

/// One health watch of one GPU, as DCGM's health check left it this tick.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthWatch {
    /// The watch, as dcgm-exporter names it (`PCIE`, `MEM`, …, `ALL`).
    pub watch: &'static str,
    /// The `DCGM_FR_*` name of its error (`DCGM_FR_OK` when it passes).
    pub code: Cow<'static, str>,
    /// 0 pass, 10 warn, 20 fail (`dcgmHealthWatchResults_t`).
    pub result: u32,
}

/// The series of one windowed count on one entity.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowCounts {
    /// The split label's name: `xid` or `clock_event`.
    pub label: &'static str,
    /// The window length, for the `window_size_in_ms` label; `None` for a count since start.
    pub window_ms: Option<u64>,
    /// (label value, count), in a stable order; empty when nothing happened in the window.
    pub counts: Vec<(String, u64)>,
}

impl Value {
    /// The number that is exported (for a window: the total over every label value).
    pub fn as_f64(&self) -> f64 {
        match self {
            Value::Num(v) => *v,
            Value::Xid(x) => *x as f64,
            Value::Window(w) => w.counts.iter().map(|(_, n)| *n as f64).sum(),
            Value::Health(h) => h.iter().map(|w| f64::from(w.result)).fold(0.0, f64::max),
        }
    }
}

/// Xid occurrences on one physical GPU since the exporter started
/// (`gpu_xid_errors_total`, `gpu_xid_last_seen_timestamp_seconds`).
#[derive(Debug, Clone, PartialEq)]
pub struct XidTotals {
    /// Identity of the physical GPU (no MIG part).
    pub id: EntityId,
    /// (Xid code, occurrences, Unix time last seen or `None` for a code pre-initialised at
    /// 0), sorted by code.
    pub codes: Vec<(u64, u64, Option<f64>)>,
}

/// The NVLink links and the fabric registration of one physical GPU
/// (`gpu_nvlink_*`, `gpu_fabric_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct Interconnect {
    /// Identity of the physical GPU (no MIG part).
    pub id: EntityId,
    /// Every link the GPU has, by link index; empty without NVLink or with per-link export off.
    pub links: Vec<LinkSample>,
    /// The fabric registration, on GPUs attached to an NVSwitch fabric.
    pub fabric: Option<Fabric>,
}

/// One NVLink link of a GPU in one tick.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSample {
    /// Link index (`nvlink` label).
    pub link: u32,
    /// `true` when NVML reports the link active; a down link keeps its series (0).
    pub up: bool,
    /// Error counters NVML serves for the link: (`error` label value, count).
    pub errors: Vec<(&'static str, u64)>,
    /// Data payload bytes sent over the link since the driver loaded.
    pub tx_bytes: Option<u64>,
    /// Data payload bytes received over the link since the driver loaded.
    pub rx_bytes: Option<u64>,
    /// Data payload bytes per second sent over the link since the previous tick; `None` on the
    /// first reading or when the counter went back.
    pub tx_rate: Option<f64>,
    /// Data payload bytes per second received over the link since the previous tick.
    pub rx_rate: Option<f64>,
    /// Symbol errors the link's FEC corrected (NVLink 5 and later), since the driver loaded.
    pub symbol_errors: Option<u64>,
    /// Errors left after FEC (NVLink 5 and later), since the driver loaded.
    pub effective_errors: Option<u64>,
    /// The link's symbol bit error rate as NVML reports it (NVLink 5 and later).
    pub symbol_ber: Option<f64>,
    /// The link's bit error rate after FEC as NVML reports it (NVLink 5 and later).
    pub effective_ber: Option<f64>,
}

/// A GPU's registration with the NVSwitch fabric (`nvmlDeviceGetGpuFabricInfoV`).
#[derive(Debug, Clone, PartialEq)]
pub struct Fabric {
    /// Cluster UUID the fabric manager assigned, formatted like a UUID.
    pub cluster_uuid: String,
    /// Fabric clique the GPU belongs to.
    pub clique_id: u32,
    /// 0 not supported, 1 not started, 2 in progress, 3 completed.
    pub state: u8,
    /// NVML return code of the registration (0 = success).
    pub status: u32,
    /// Health bit mask, when the driver reports it (v2 and later).
    pub health_mask: Option<u32>,
    /// 0 not reported, 1 healthy, 2 unhealthy, 3 limited capacity (v3 and later).
    pub health_summary: Option<u8>,
}

/// Everything read for one entity in one tick.
#[derive(Debug, Clone, PartialEq)]
pub struct EntitySample {
    /// Identity labels.
    pub id: EntityId,
    /// One slot per metric row of the counter set, in CSV order; `None` = absent series.
    pub values: Vec<Option<Value>>,
    /// One slot per label row of the counter set, in CSV order; `None` = label omitted.
    pub labels: Vec<Option<String>>,
}

/// Up/down state of a physical GPU (`gpu_device_up`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceStatus {
    /// NVML index.
    pub gpu: u32,
    /// UUID, when it was ever read.
    pub uuid: String,
    /// Model name, when it was ever read.
    pub model_name: String,
    /// `true` while NVML answers for the device.
    pub up: bool,
}

/// A field that NVML reported unsupported on an entity (detected once, then skipped).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Unsupported {
    /// GPU index.
    pub gpu: u32,
    /// GPU instance id for a MIG entity.
    pub gpu_instance_id: Option<u32>,
    /// Canonical field name.
    pub field: &'static str,
}

/// Sampler statistics carried into the exposition as self-metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleStats {
    /// Wall time the tick took.
    pub duration: Duration,
    /// Cumulative read errors per (canonical field name or step, reason), sorted.
    pub field_errors: Vec<(&'static str, &'static str, u64)>,
    /// Unix time (seconds) of the last tick in which NVML answered.
    pub last_success_unix: f64,
    /// Number of ticks so far.
    pub ticks: u64,
    /// Fields detected unsupported so far.
    pub unsupported: Vec<Unsupported>,
    /// `false` while NVML itself is unavailable.
    pub nvml_up: bool,
    /// Whether DCGM answered this tick; `None` with `--dcgm-mode off`.
    pub dcgm_up: Option<bool>,
    /// Counters hot-reload state, when the counters come from a watched file.
    pub counters_reload: Option<ReloadStats>,
    /// The exporter's own process figures (`--enable-exporter-metrics`).
    pub process: Option<crate::base::process::ProcessFigures>,
    /// Connections the HTTP server cut because their unread responses held replaced pages
    /// over its memory budget, since start (filled in at publish).
    pub stalled_responses_cut: u64,
}

/// One point in time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Unix time (seconds) at which the tick started.
    pub taken_at_unix: f64,
    /// Entities in stable order: by GPU index, the physical GPU first, then its instances by
    /// GPU instance id.
    pub entities: Vec<EntitySample>,
    /// Every physical GPU NVML enumerates, up or down.
    pub devices: Vec<DeviceStatus>,
    /// Xid counts per physical GPU whose events are watched, kept while the GPU is down.
    pub xids: Vec<XidTotals>,
    /// NVLink links and fabric registration per physical GPU that has either.
    pub interconnect: Vec<Interconnect>,
    /// Sampler statistics.
    pub stats: SampleStats,
    /// Pods, jobs and processes joined onto the entities (empty without attribution).
    pub attribution: Attribution,
    /// The health verdict of every physical GPU and MIG instance (`health` fills it), in the
    /// order of [`Snapshot::devices`], each GPU followed by its instances.
    pub health: Vec<EntityHealth>,
}

/// A health verdict, worst last (the words the landing page shows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Nothing to say.
    #[default]
    Ok,
    /// Degraded or at risk; the GPU still works.
    Warning,
    /// Failed or about to: work on it is lost or wrong.
    Critical,
}

impl Verdict {
    /// `ok`, `warning` or `critical`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warning => "warning",
            Verdict::Critical => "critical",
        }
    }

    /// 0 ok, 1 warning, 2 critical (`gpu_health_status`).
    pub fn level(self) -> u8 {
        self as u8
    }
}

/// Why a verdict is not `ok`: a bounded set, used as a label value (`gpu_health_reason`) and
/// by the Kubernetes outputs as a key. The words are documented in docs/health.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// The GPU fell off the bus, or NVML no longer answers for it.
    GpuLost,
    /// An Xid of the catalogue's hardware class.
    XidHardware,
    /// An Xid of the catalogue's memory class (ECC, row remap, page retirement).
    XidMemory,
    /// An Xid of the catalogue's NVLink / C2C class.
    XidNvlink,
    /// An Xid of the catalogue's driver / firmware (GSP) class.
    XidDriver,
    /// An Xid of the catalogue's application class (the job's fault, not the GPU's).
    XidApplication,
    /// An Xid code the catalogue table does not list.
    XidUnknown,
    /// Volatile double-bit (uncorrectable) ECC errors.
    EccDbe,
    /// A row remap waits for a GPU reset.
    RowRemapPending,
    /// A row remap failed.
    RowRemapFailed,
    /// Hardware or software thermal slowdown.
    ThermalSlowdown,
    /// The external power brake is asserted.
    PowerBrake,
    /// Hardware slowdown without a thermal or power-brake cause.
    HwSlowdown,
    /// The temperature is at or above the slowdown temperature.
    OverSlowdownTemp,
    /// NVLink link(s) down.
    NvlinkDown,
    /// NVLink errors get past FEC.
    NvlinkBer,
    /// The NVSwitch fabric registration failed or the fabric is unhealthy.
    FabricUnhealthy,
    /// The NVSwitch fabric runs at limited capacity.
    FabricDegraded,
    /// NVML's recovery action: reset the GPU.
    RecoveryReset,
    /// NVML's recovery action: reboot the node.
    RecoveryReboot,
    /// NVML's recovery action: drain peer-to-peer traffic.
    RecoveryDrainP2p,
    /// NVML's recovery action: drain peer-to-peer traffic, then reset the GPU.
    RecoveryDrainAndReset,
    /// NVML's recovery action, a value newer than this exporter knows.
    RecoveryOther,
    /// A DCGM health watch warns.
    DcgmWatchWarning,
    /// A DCGM health watch fails.
    DcgmWatchFailure,
}

impl Reason {
    /// The label value, e.g. `xid_hardware`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::GpuLost => "gpu_lost",
            Reason::XidHardware => "xid_hardware",
            Reason::XidMemory => "xid_memory",
            Reason::XidNvlink => "xid_nvlink",
            Reason::XidDriver => "xid_driver",
            Reason::XidApplication => "xid_application",
            Reason::XidUnknown => "xid_unknown",
            Reason::EccDbe => "ecc_dbe",
            Reason::RowRemapPending => "row_remap_pending",
            Reason::RowRemapFailed => "row_remap_failed",
            Reason::ThermalSlowdown => "thermal_slowdown",
            Reason::PowerBrake => "power_brake",
            Reason::HwSlowdown => "hw_slowdown",
            Reason::OverSlowdownTemp => "over_slowdown_temp",
            Reason::NvlinkDown => "nvlink_down",
            Reason::NvlinkBer => "nvlink_ber",
            Reason::FabricUnhealthy => "fabric_unhealthy",
            Reason::FabricDegraded => "fabric_degraded",
            Reason::RecoveryReset => "recovery_reset",
            Reason::RecoveryReboot => "recovery_reboot",
            Reason::RecoveryDrainP2p => "recovery_drain_p2p",
            Reason::RecoveryDrainAndReset => "recovery_drain_and_reset",
            Reason::RecoveryOther => "recovery_other",
            Reason::DcgmWatchWarning => "dcgm_watch_warning",
            Reason::DcgmWatchFailure => "dcgm_watch_failure",
        }
    }
}

/// What the operator should do about a reason (the Xid catalogue's resolutions, and their
/// equivalents for the other signals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Nothing yet: watch whether it repeats.
    Watch,
    /// Restart the job (the application's fault).
    RestartJob,
    /// Reset the GPU (`nvidia-smi -r`) once its processes are stopped.
    ResetGpu,
    /// Reboot the node.
    RebootNode,
    /// Drain peer-to-peer (NVLink) traffic.
    DrainP2p,
    /// Drain peer-to-peer traffic, then reset the GPU.
    DrainAndReset,
    /// Check the NVLink cabling, the NVSwitch fabric and the fabric manager.
    CheckNvlink,
    /// Check cooling (airflow, fans, inlet temperature).
    CheckCooling,
    /// Check the power supply and the board's power-brake signal.
    CheckPower,
    /// Update the driver or firmware, then reset the GPU.
    UpdateDriver,
    /// Take the GPU out of service and have it repaired (RMA).
    ServiceGpu,
}

impl Action {
    /// A short machine word, e.g. `reset_gpu`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Watch => "watch",
            Action::RestartJob => "restart_job",
            Action::ResetGpu => "reset_gpu",
            Action::RebootNode => "reboot_node",
            Action::DrainP2p => "drain_p2p",
            Action::DrainAndReset => "drain_and_reset",
            Action::CheckNvlink => "check_nvlink",
            Action::CheckCooling => "check_cooling",
            Action::CheckPower => "check_power",
            Action::UpdateDriver => "update_driver",
            Action::ServiceGpu => "service_gpu",
        }
    }

    /// The same in words, for a message: "the node needs a reboot".
    pub fn words(self) -> &'static str {
        match self {
            Action::Watch => "watch whether it repeats",
            Action::RestartJob => "restart the job",
            Action::ResetGpu => "reset the GPU",
            Action::RebootNode => "reboot the node",
            Action::DrainP2p => "drain peer-to-peer traffic",
            Action::DrainAndReset => "drain peer-to-peer traffic, then reset the GPU",
            Action::CheckNvlink => "check NVLink, the NVSwitch fabric and the fabric manager",
            Action::CheckCooling => "check cooling",
            Action::CheckPower => "check the power supply",
            Action::UpdateDriver => "update the driver or firmware, then reset the GPU",
            Action::ServiceGpu => "take the GPU out of service for repair",
        }
    }
}

/// One reason of a verdict, while it is active or held.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveReason {
    /// The reason.
    pub reason: Reason,
    /// How serious this occurrence is.
    pub severity: Verdict,
    /// The Xid code, for the `xid_*` reasons.
    pub xid: Option<u64>,
    /// What was seen, in words (free text: never a label value).
    pub message: String,
    /// The recommended action.
    pub action: Action,
    /// Unix time the cause was first seen in this episode.
    pub since_unix: f64,
    /// Unix time the cause was last seen; the reason clears a hold time after it.
    pub last_seen_unix: f64,
    /// `false` when the cause is gone and the reason is only held (flap damping).
    pub present: bool,
}

/// NVML's recovery action (`NVML_FI_DEV_GET_GPU_RECOVERY_ACTION`, `gpu_recovery_action`).
pub type RecoveryAction = u32;

/// The health of one physical GPU or MIG instance.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityHealth {
    /// NVML index of the physical GPU.
    pub gpu: u32,
    /// GPU instance id on a MIG instance (which shares its GPU's verdict).
    pub gpu_instance_id: Option<u32>,
    /// UUID of the GPU or of the MIG device.
    pub uuid: String,
    /// The worst severity of the reasons.
    pub verdict: Verdict,
    /// Worst first; empty when the verdict is `ok`.
    pub reasons: Vec<ActiveReason>,
    /// NVML's recovery action, when read (0 none, 1 reset, 2 reboot, 3 drain P2P, 4 drain and
    /// reset; later drivers add more).
    pub recovery_action: Option<RecoveryAction>,
}

impl EntityHealth {
    /// The recommended action of the worst reason, if any.
    pub fn action(&self) -> Option<Action> {
        self.reasons.first().map(|r| r.action)
    }
}

/// The join of the entities with pods (kubelet, Kubernetes API), HPC jobs and processes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attribution {
    /// The device-to-holder join, rebuilt only when an input changes.
    pub join: Option<Arc<HolderMap>>,
    /// Per-container use of shared devices, from this tick's process list.
    pub containers: Vec<ContainerUse>,
    /// Health of each attribution source, for the self-metrics.
    pub sources: Vec<SourceHealth>,
}

impl Attribution {
    /// The label suffixes of entity `i`'s series: one copy of each series per suffix. An
    /// entity without holders has one empty suffix.
    pub fn series_labels(&self, i: usize) -> &[Labels] {
        const NONE: &[Labels] = &[Labels::new()];
        match self.join.as_ref().and_then(|j| j.series_labels.get(i)) {
            Some(v) if !v.is_empty() => v,
            _ => NONE,
        }
    }
}

/// How many unmatched device IDs a [`HolderMap`] keeps by name.
pub const UNMATCHED_KEPT: usize = 20;

/// Which pods, containers and jobs hold which entity.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HolderMap {
    /// Per entity (same order as [`Snapshot::entities`]): the labels each copy of the
    /// entity's series carries after its identity (`container`, `namespace`, `pod`, …). Empty
    /// means one copy without extra labels.
    pub series_labels: Vec<Vec<Labels>>,
    /// `gpu_allocation_info` rows: (entity index, labels after the identity labels).
    pub allocations: Vec<(usize, Labels)>,
    /// (resource, allocatable device IDs if the kubelet reports them, allocated device IDs).
    pub resources: Vec<(String, Option<usize>, usize)>,
    /// Device IDs of GPU resources that name no exported device.
    pub unmatched: usize,
    /// The first [`UNMATCHED_KEPT`] of those IDs, sorted, for `gpu-exporter check`.
    pub unmatched_ids: Vec<String>,
}

/// Use of one entity by one container (or by processes outside any known pod).
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerUse {
    /// The entity (index into [`Snapshot::entities`]).
    pub entity: usize,
    /// Labels after the identity labels (`container`, `namespace`, `pod`, `pod_uid`); empty
    /// for processes not in a pod.
    pub labels: Labels,
    /// Framebuffer used by the container's processes, when NVML reports it.
    pub memory_bytes: Option<f64>,
    /// Sum of the processes' SM utilization (0–1), when NVML samples it.
    pub sm_ratio: Option<f64>,
    /// Number of processes.
    pub processes: u64,
}

/// One attribution source's state.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceHealth {
    /// `kubelet`, `pods`, `resourceslices`, `hpc_jobs` or `processes`.
    pub source: &'static str,
    /// Whether the last attempt succeeded.
    pub up: bool,
    /// Seconds since the source last answered (`None` before it ever did).
    pub age_seconds: Option<f64>,
    /// Failures so far.
    pub errors: u64,
    /// The last failure, while it lasts.
    pub last_error: Option<String>,
}

/// Reload state, copied into each snapshot for the self-metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReloadStats {
    /// `false` when the last attempt to read a changed file failed (the old set is in use).
    pub last_ok: bool,
    /// Unix time of the last successful load (the start-up load counts).
    pub last_success_unix: f64,
    /// Successful reloads since start (the start-up load not included).
    pub successes: u64,
    /// Failed reloads since start.
    pub failures: u64,
}

/// Label pairs a series carries after its entity's identity labels, in output order. The
/// pairs are kept as read, and their exposition text (`,name="value"`, escaped) is written
/// once, when a pair is added, so that encoding a tick copies it instead of escaping every
/// value again for every family.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Labels {
    pairs: Vec<(Cow<'static, str>, String)>,
    text: String,
}

impl Labels {
    /// No labels.
    pub const fn new() -> Self {
        Labels {
            pairs: Vec::new(),
            text: String::new(),
        }
    }

    /// No labels yet, with room for `pairs` of them without reallocating.
    pub fn with_capacity(pairs: usize) -> Self {
        Labels {
            pairs: Vec::with_capacity(pairs),
            text: String::with_capacity(pairs * 24),
        }
    }

    /// Appends `name="value"`.
    pub fn push(&mut self, name: impl Into<Cow<'static, str>>, value: impl Into<String>) {
        let (name, value) = (name.into(), value.into());
        self.text.push(',');
        self.text.push_str(&name);
        self.text.push_str("=\"");
        escape_label(&mut self.text, &value);
        self.text.push('"');
        self.pairs.push((name, value));
    }

    /// The pairs, in output order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_ref(), v.as_str()))
    }

    /// `true` when there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The exposition text: `,name="value"` for every pair, values escaped.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Appends [`Labels::text`] to `out`.
    pub fn write_to(&self, out: &mut String) {
        out.push_str(&self.text);
    }
}

impl PartialOrd for Labels {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Labels {
    /// By the exposition text, the order in which series are listed.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.text
            .cmp(&other.text)
            .then_with(|| self.pairs.cmp(&other.pairs))
    }
}

impl fmt::Display for Labels {
    /// The exposition text ([`Labels::text`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq<&str> for Labels {
    /// Compares the exposition text with `other`.
    fn eq(&self, other: &&str) -> bool {
        self.text == *other
    }
}
