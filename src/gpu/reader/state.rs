//! What the reader keeps about a GPU and an entity between ticks: identity, texts, GPM
//! support and previous sample, previous counter readings for rates, clock-event history.
//!
//! Plain data; it must not call NVML.

use super::entities::Ident;
use std::collections::{BTreeMap, HashMap, VecDeque};

use nvml_wrapper::GpmSample;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::{MemoryInfo, Utilization};

use crate::catalogue::TextKind;
use crate::snapshot::Value;

/// Per-entity state that lives across ticks (keyed by entity UUID).
#[derive(Default)]
pub(super) struct EntityState {
    pub(super) gpm_prev: Option<GpmSample<'static>>,
    pub(super) rate_prev: HashMap<u32, (f64, i64)>,
    /// Last reading of each counters row (by name) and when it was taken, for rows read less
    /// often than every tick (`--config-file` collections).
    pub(super) held: HashMap<String, (f64, Option<Value>)>,
}

/// State of one physical GPU across ticks (keyed by its UUID, never by its NVML index, which
/// shifts while another GPU is unbound).
pub(super) struct GpuState {
    pub(super) ident: Ident,
    /// The NVML index it was last found at (verified or named by [`super::locate`]).
    pub(super) index: Option<u32>,
    pub(super) texts: HashMap<TextKind, String>,
    pub(super) gpm_supported: Option<bool>,
    /// Clock-event reasons of recent ticks (time, bitmask), for the window count.
    pub(super) clock_events: VecDeque<(f64, u64)>,
    /// Clock-event reasons that became active since start, per reason label, with the
    /// bitmask and time of the last tick counted (`DCGM_EXP_CLOCK_EVENTS_TOTAL`).
    pub(super) clock_event_totals: Option<(f64, u64, BTreeMap<&'static str, u64>)>,
    /// The last tick found the GPU lost: keep it out of the Xid event set until it answers
    /// again (registering a lost GPU fails, and a later return would not retry it).
    pub(super) down: bool,
    /// NVML time stamp (µs) of the newest process utilization sample read.
    pub(super) proc_util_seen: u64,
    /// This tick's fabric registration (`nvmlDeviceGetGpuFabricInfoV`), read once at the start
    /// of the GPU's read: the fabric fields, the cluster-UUID label and the `gpu_fabric_*`
    /// families all come from it.
    pub(super) fabric: Option<Result<crate::snapshot::Fabric, NvmlError>>,
}

impl GpuState {
    /// The state of a GPU first seen with `ident`.
    pub(super) fn new(ident: Ident) -> Self {
        Self {
            ident,
            index: None,
            texts: HashMap::new(),
            gpm_supported: None,
            clock_events: VecDeque::new(),
            clock_event_totals: None,
            down: false,
            proc_util_seen: 0,
            fabric: None,
        }
    }
}

/// Per-entity, per-tick cache of calls that serve several fields.
#[derive(Default)]
pub(super) struct TickCache {
    pub(super) mem: Option<Result<MemoryInfo, NvmlError>>,
    pub(super) util: Option<Result<Utilization, NvmlError>>,
    pub(super) reasons: Option<Result<u64, NvmlError>>,
    pub(super) fields: HashMap<u32, Result<(f64, i64), NvmlError>>,
    pub(super) gpm: HashMap<u32, Result<f64, NvmlError>>,
}
