//! The immutable result of one sampler tick: plain data types, no behaviour beyond accessors.
//!
//! A [`Snapshot`] holds every value the exporter will serve until the next tick: one
//! [`EntitySample`] per physical GPU and per MIG instance, the up/down state of every device,
//! the Xid totals, the attribution join, the health verdicts (`health`: the plain types; the
//! model that fills them is the `health` layer), DCGM's state (`dcgm`) and the sampler's own
//! statistics. Its parts are filled during one tick by `gpu` (entities, values, devices,
//! Xids), `attribution` (the join) and `sampler` (statistics, reload state, DCGM's state from
//! its client); `exposition` and the landing page only read it, and
//! nothing mutates it after it is published. It must not do I/O or import any layer above
//! `catalogue`.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::base::label_text::escape_label;

mod dcgm;
mod health;
pub use dcgm::{DcgmState, DcgmStatus, Unserved};
pub use health::{
    Action, ActiveReason, EntityHealth, Reason, ReasonWords, RecoveryAction, ShownSignals, Verdict,
};

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
    /// Device name as dcgm-exporter writes it: `nvidia<minor>`, after the GPU's device node
    /// (`nvidia<index>` where NVML does not serve the minor number).
    pub device: String,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub model_name: String,
    /// Present on MIG instance entities.
    pub mig: Option<MigIdentity>,
}

/// The `device` label of the GPU at NVML index `gpu`: its device node `nvidia<minor>`, as
/// dcgm-exporter's label names it (the index where the minor number is not known).
pub fn device_node(minor: Option<u32>, gpu: u32) -> String {
    format!("nvidia{}", minor.unwrap_or(gpu))
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
    /// The occurrences NVML reported without a MIG GPU instance: (code, count, last seen).
    /// Not exported; the health model's (an application Xid of one instance is that
    /// instance's).
    pub whole_gpu: XidCounts,
    /// The occurrences NVML reported with a MIG GPU instance, per GPU instance id. Not
    /// exported.
    pub instances: Vec<(u32, XidCounts)>,
}

/// Xid occurrences: (code, count, Unix time last seen), sorted by code.
pub type XidCounts = Vec<(u64, u64, f64)>;

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
    /// PCI bus id, when it was ever read.
    pub pci_bus_id: String,
    /// The minor number of its device node (`/dev/nvidia<minor>`), when it was ever read: what
    /// Events and Node conditions name the GPU by (the index shifts while another GPU is
    /// unbound).
    pub minor: Option<u32>,
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

/// A profiling field withheld on every GPU because some selected GPUs do not support it, on a
/// node of mixed GPU models under a profile that serves only the fields common to all of them
/// (`--compatibility dcgm-4.10`, `catalogue::profile::Profile::common_profiling_set`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    /// Canonical field name.
    pub field: &'static str,
    /// The selected GPUs that do not support it: (GPU index, model name), by index.
    pub lacking: Vec<(u32, String)>,
    /// Why, in one sentence, as `/status`, the landing page and `check` show it.
    pub reason: String,
}

/// One NVSwitch chip as DCGM showed it this tick.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchSample {
    /// DCGM's entity id of the switch (`DCGM_FE_SWITCH`): its `nvswitch` label is
    /// `nvswitch<id>`.
    pub id: u32,
    /// One slot per metric row of the counter set, as [`EntitySample::values`]; only the
    /// switch-level rows (`catalogue::Level::Switch`, `Getter::DcgmSwitch`) are ever filled.
    pub values: Vec<Option<Value>>,
    /// One slot per label row of the counter set, as [`EntitySample::labels`]; only the
    /// switch `label` rows (`Getter::DcgmSwitchText`) are ever filled. They label every series
    /// of the switch, its ports' too.
    pub labels: Vec<Option<String>>,
    /// The switch's up ports DCGM read, by port index.
    pub ports: Vec<PortSample>,
}

/// One up port of an NVSwitch chip (DCGM's link entity under the switch) as DCGM showed it
/// this tick.
#[derive(Debug, Clone, PartialEq)]
pub struct PortSample {
    /// The port index (`nvlink` label).
    pub port: u32,
    /// One slot per metric row of the counter set; only the per-port rows
    /// (`Getter::DcgmSwitchPort`) are ever filled.
    pub values: Vec<Option<Value>>,
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
    /// Profiling fields withheld on every GPU this tick, because the node mixes GPU models and
    /// not all of them support the field (`--compatibility dcgm-4.10` only), by field.
    pub withheld: Vec<Withheld>,
    /// `false` while NVML itself is unavailable.
    pub nvml_up: bool,
    /// DCGM's state this tick (`DcgmState::Off` with `--dcgm-mode off`): whether it answered
    /// (`gpu_exporter_dcgm_up`, [`DcgmStatus::up`]), since when, why not, and the profiling
    /// values it did not fill.
    pub dcgm: DcgmStatus,
    /// Counters hot-reload state, when the counters come from a watched file.
    pub counters_reload: Option<ReloadStats>,
    /// The exporter's own process figures (`--enable-exporter-metrics`).
    pub process: Option<crate::base::process::ProcessFigures>,
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
    /// The NVSwitch chips DCGM served switch-level rows for, by DCGM entity id.
    pub switches: Vec<SwitchSample>,
    /// Why the counters file's switch-level rows have no series this tick (`None`: served,
    /// or the file has none).
    pub switches_not_served: Option<String>,
    /// What `-s/--switch-devices` names that the DCGM hostengine does not list, in words.
    pub switch_selection_note: Option<String>,
    /// Sampler statistics.
    pub stats: SampleStats,
    /// Pods, jobs and processes joined onto the entities (empty without attribution).
    pub attribution: Attribution,
    /// The health verdict of every physical GPU and MIG instance (`health` fills it), in the
    /// order of [`Snapshot::devices`], each GPU followed by its instances.
    pub health: Vec<EntityHealth>,
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
    /// The holders of each GPU NVML has lost, as last seen while it answered (its entities
    /// are gone, so the join no longer has them): the pod that was hit is the one fact an
    /// operator needs.
    pub lost: Vec<LostHolders>,
}

/// The last known holders of a lost GPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LostHolders {
    /// The GPU's UUID.
    pub uuid: String,
    /// `gpu_allocation_info`'s rows of the GPU and its MIG instances when last seen: (GPU
    /// instance id on a MIG instance, labels after the identity).
    pub rows: Vec<(Option<u32>, Labels)>,
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

    /// Every `gpu_allocation_info` row: (entity index, labels after the identity).
    pub fn allocations(&self) -> impl Iterator<Item = (usize, &Labels)> {
        self.join
            .iter()
            .flat_map(|j| j.allocations.iter())
            .map(|(i, l)| (*i, l))
    }

    /// The holders waiting for their pod's metadata ([`HolderMap::waiting`]): (entity index,
    /// labels).
    pub fn waiting(&self) -> impl Iterator<Item = (usize, &Labels)> {
        self.join
            .iter()
            .flat_map(|j| j.waiting.iter())
            .map(|(i, l)| (*i, l))
    }

    /// The last known rows of lost GPU `uuid`: (GPU instance id on a MIG instance, labels).
    pub fn lost_rows(&self, uuid: &str) -> impl Iterator<Item = &(Option<u32>, Labels)> {
        self.lost
            .iter()
            .filter(move |l| l.uuid == uuid)
            .flat_map(|l| l.rows.iter())
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
    /// The HPC jobs holding each entity (`--hpc-job-mapping-dir`): (entity index, the
    /// `hpc_job` label). The `lean` shape serves them as `gpu_allocation_info` rows; the
    /// `full` one has them in [`HolderMap::series_labels`].
    pub jobs: Vec<(usize, Labels)>,
    /// The device-plugin holders whose pod the kubelet lists while its metadata has not come
    /// from the API server yet (it is attributed once it has, or after a grace): (entity
    /// index, the labels its allocation row will have, without the metadata). Not served;
    /// the Events of a fault meanwhile reach these pods too.
    pub waiting: Vec<(usize, Labels)>,
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
    /// For processes not in a pod (empty `labels`): the first [`SHOWN_PIDS`] of them, by pid,
    /// with their command name when the proc tree has it, so the page can say whose they are.
    pub pids: Vec<(u32, Option<String>)>,
}

/// How many processes outside any pod a [`ContainerUse`] names per entity.
pub const SHOWN_PIDS: usize = 8;

/// One attribution source's state; serialized as is in `/status` (`sources`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
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

    /// The value of label `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
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
