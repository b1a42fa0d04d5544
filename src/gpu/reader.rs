//! One tick of NVML reads: every physical GPU and MIG instance, every field of the counter set.
//!
//! The reader owns all state that must survive between ticks — cached identity strings, the
//! previous GPM sample and counter reading for rates, the per-device Xid event sets, and the
//! set of fields found unsupported — and returns plain [`TickData`]. It never encodes and
//! never serves. Error policy:
//! - `NOT_SUPPORTED` (or a symbol the driver lacks) on an entity: the field is logged once and
//!   never read again on that entity; it is listed in the self-metrics, not exported as 0.
//! - `GPU_IS_LOST`: the device's series are dropped for this tick and it is reported down.
//! - anything else: the series is absent this tick and the field's error counter goes up.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use nvml_wrapper::enum_wrappers::device::InfoRom;
use nvml_wrapper::enum_wrappers::device::{
    Clock, PcieUtilCounter, PerformancePolicy, TemperatureSensor,
};
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper::struct_wrappers::device::{MemoryInfo, Utilization};
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::{Device, GpmSample, Nvml};
use tracing::{info, warn};

use crate::catalogue::csv::{CounterRow, CounterSet};
use crate::catalogue::{
    ClockKind, FieldDef, Level, MemKind, Source, TextKind, UtilKind, Violation, WindowKind,
};
use crate::config::devices::DeviceSelection;
use crate::gpu::processes::{self, EntityProcesses};
use crate::gpu::text;
use crate::gpu::xid::{self, Watch, XidWatcher};
use crate::snapshot::{
    DeviceStatus, EntityId, EntitySample, MigIdentity, Unsupported, Value, WindowCounts, XidTotals,
};

const MIB: f64 = 1024.0 * 1024.0;

/// Xid codes whose `gpu_xid_errors_total` series exist at 0 from the start, so that the first
/// occurrence is an increase Prometheus can see: the codes that mean a GPU needs attention
/// (see alerts/README.md).
pub const DEFAULT_XID_INITIALIZED: &[u64] = &[48, 62, 64, 74, 79, 95, 119, 120];

/// Clock-event reason bits (NVML `nvmlClocksEventReason*`, the same values as DCGM's) and the
/// `clock_event` label dcgm-exporter gives each in `DCGM_EXP_CLOCK_EVENTS_COUNT`.
pub const CLOCK_EVENT_REASONS: &[(u64, &str)] = &[
    (0x1, "gpu_idle"),
    (0x2, "clocks_setting"),
    (0x4, "power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal"),
    (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"),
    (0x100, "display_clocks"),
];

/// How the reader selects, shapes and times what it reads.
#[derive(Clone)]
pub struct ReaderOptions {
    /// `-d/--devices`.
    pub devices: DeviceSelection,
    /// `--mig-repeat-device-fields`: represent a MIG-enabled GPU only by its instances, each
    /// carrying the GPU's device-level fields (dcgm-exporter's behaviour).
    pub repeat_device_fields: bool,
    /// `-x/--xid-count-window-size`.
    pub xid_window: Duration,
    /// `--clock-events-count-window-size`.
    pub clock_events_window: Duration,
    /// `--xid-initialized-codes`.
    pub xid_initialized: Vec<u64>,
    /// Longest blocking wait of the Xid thread.
    pub xid_poll: Duration,
    /// Make each tick wait (up to a few polls) until the Xid thread has recorded every event
    /// pending at the tick, so values are exactly as of the tick. Off in the daemon, where an
    /// event that arrives during a tick simply shows at the next one; on in tests.
    pub xid_sync: bool,
    /// Time stamps of Xid events (Unix seconds).
    pub clock: xid::Clock,
    /// List each entity's processes (per-container attribution on shared GPUs).
    pub processes: bool,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        Self {
            devices: DeviceSelection::all(),
            repeat_device_fields: false,
            xid_window: Duration::from_secs(300),
            clock_events_window: Duration::from_secs(300),
            xid_initialized: DEFAULT_XID_INITIALIZED.to_vec(),
            xid_poll: Duration::from_millis(100),
            xid_sync: false,
            clock: std::sync::Arc::new(crate::base::clock::unix_now),
            processes: false,
        }
    }
}

impl std::fmt::Debug for ReaderOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReaderOptions")
            .field("devices", &self.devices)
            .field("repeat_device_fields", &self.repeat_device_fields)
            .field("xid_window", &self.xid_window)
            .field("clock_events_window", &self.clock_events_window)
            .field("xid_initialized", &self.xid_initialized)
            .field("xid_poll", &self.xid_poll)
            .field("xid_sync", &self.xid_sync)
            .field("processes", &self.processes)
            .finish_non_exhaustive()
    }
}

/// What one tick read.
#[derive(Debug, Default)]
pub struct TickData {
    /// Entities in stable order (GPU index, then GPU instance id).
    pub entities: Vec<EntitySample>,
    /// Every selected physical GPU, up or down.
    pub devices: Vec<DeviceStatus>,
    /// Xid counts of every selected GPU whose events are watched.
    pub xids: Vec<XidTotals>,
    /// Time spent waiting for the Xid thread to catch up (not NVML reading time).
    pub event_wait: Duration,
    /// Processes per exported entity, when [`ReaderOptions::processes`] is on.
    pub processes: Vec<EntityProcesses>,
}

/// Cached identity of a physical GPU.
#[derive(Debug, Clone)]
struct Ident {
    uuid: String,
    name: String,
    pci_bus_id: String,
}

/// A GPU's handle and identity, or which of the two could not be had (the name its error is
/// counted under) and why.
type Handle = Result<(Device<'static>, Ident), (&'static str, NvmlError)>;

impl Ident {
    /// The identity labels of the physical GPU at NVML index `gpu`.
    fn entity_id(&self, gpu: u32) -> EntityId {
        EntityId {
            gpu,
            uuid: self.uuid.clone(),
            pci_bus_id: self.pci_bus_id.clone(),
            device: format!("nvidia{gpu}"),
            model_name: self.name.clone(),
            mig: None,
        }
    }
}

/// Per-entity state that lives across ticks (keyed by entity UUID).
#[derive(Default)]
struct EntityState {
    gpm_prev: Option<GpmSample<'static>>,
    rate_prev: HashMap<u32, (f64, i64)>,
}

/// State of one physical GPU across ticks (keyed by NVML index).
#[derive(Default)]
struct GpuState {
    ident: Option<Ident>,
    texts: HashMap<TextKind, String>,
    gpm_supported: Option<bool>,
    /// Clock-event reasons of recent ticks (time, bitmask), for the window count.
    clock_events: VecDeque<(f64, u64)>,
    /// The last tick found the GPU lost: keep it out of the Xid event set until it answers
    /// again (registering a lost GPU fails, and a later return would not retry it).
    down: bool,
    /// NVML time stamp (µs) of the newest process utilization sample read.
    proc_util_seen: u64,
}

/// Bookkeeping of unsupported fields and read errors.
#[derive(Default)]
struct Book {
    unsupported: HashSet<(String, u32)>,
    unsupported_list: Vec<Unsupported>,
    warned: HashSet<(String, u32)>,
    /// (entity key, step) of device-level steps already warned about (see [`Book::failed`]).
    warned_steps: HashSet<(String, &'static str)>,
    errors: BTreeMap<&'static str, u64>,
}

/// Where an entity sits, for bookkeeping and logs.
struct Place<'a> {
    /// Key of the unsupported-field memory.
    key: &'a str,
    /// UUID of the physical GPU.
    uuid: &'a str,
    gpu: u32,
    gi: Option<u32>,
}

/// What every read of one tick shares.
struct Ctx<'a> {
    nvml: &'static Nvml,
    xid: Option<&'a XidWatcher>,
    opts: &'a ReaderOptions,
    now: f64,
}

impl Book {
    /// Counts a failed device-level step (`step` is its name in
    /// `gpu_exporter_field_read_errors_total`) and warns once per entity and step, as field
    /// read failures are.
    fn failed(&mut self, step: &'static str, key: &str, gpu: u32, what: &str, e: &NvmlError) {
        *self.errors.entry(step).or_default() += 1;
        if self.warned_steps.insert((key.to_owned(), step)) {
            warn!(
                gpu,
                "{what} failed: {e} (further failures are counted in \
                 gpu_exporter_field_read_errors_total{{field=\"{step}\"}})"
            );
        }
    }

    fn is_unsupported(&self, key: &str, field: &FieldDef) -> bool {
        self.unsupported.contains(&(key.to_owned(), field.id))
    }

    fn mark_unsupported(&mut self, at: &Place<'_>, field: &'static FieldDef, why: &str) {
        if self.unsupported.insert((at.key.to_owned(), field.id)) {
            let entity = match at.gi {
                Some(gi) => format!("GPU {} instance {gi}", at.gpu),
                None => format!("GPU {}", at.gpu),
            };
            info!(
                field = field.name,
                gpu = at.gpu,
                "{} is not available on {entity} ({}): {why}; it will not be exported for it",
                field.name,
                at.key
            );
            self.unsupported_list.push(Unsupported {
                gpu: at.gpu,
                gpu_instance_id: at.gi,
                field: field.name,
            });
            self.unsupported_list.sort();
        }
    }

    /// Classifies a read result (a value or a label string). Returns what to export, if any.
    fn settle<T>(
        &mut self,
        at: &Place<'_>,
        field: &'static FieldDef,
        lost: &mut bool,
        r: Result<Option<T>, NvmlError>,
    ) -> Option<T> {
        match r {
            Ok(v) => v,
            Err(e) if is_unsupported(&e) => {
                let why = match e {
                    // Carries either the loader's "undefined symbol" text or our own reason.
                    NvmlError::FailedToLoadSymbol(s) => s,
                    e => e.to_string(),
                };
                self.mark_unsupported(at, field, &why);
                None
            }
            Err(NvmlError::GpuLost) => {
                *lost = true;
                None
            }
            Err(e) => {
                *self.errors.entry(field.name).or_default() += 1;
                if self.warned.insert((at.key.to_owned(), field.id)) {
                    warn!(
                        field = field.name,
                        gpu = at.gpu,
                        "reading {} failed: {e} (further failures are counted in gpu_exporter_field_read_errors_total)",
                        field.name
                    );
                }
                None
            }
        }
    }
}

fn is_unsupported(e: &NvmlError) -> bool {
    matches!(
        e,
        NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_) | NvmlError::FunctionNotFound
    )
}

/// NvmlError is not `Clone`; reproduce the variants whose identity matters.
fn clone_err(e: &NvmlError) -> NvmlError {
    match e {
        NvmlError::NotSupported => NvmlError::NotSupported,
        NvmlError::GpuLost => NvmlError::GpuLost,
        NvmlError::FailedToLoadSymbol(s) => NvmlError::FailedToLoadSymbol(s.clone()),
        NvmlError::FunctionNotFound => NvmlError::FunctionNotFound,
        NvmlError::NoPermission => NvmlError::NoPermission,
        NvmlError::Timeout => NvmlError::Timeout,
        NvmlError::InvalidArg => NvmlError::InvalidArg,
        NvmlError::NotFound => NvmlError::NotFound,
        _ => NvmlError::Unknown,
    }
}

/// Per-entity, per-tick cache of calls that serve several fields.
#[derive(Default)]
struct TickCache {
    mem: Option<Result<MemoryInfo, NvmlError>>,
    util: Option<Result<Utilization, NvmlError>>,
    reasons: Option<Result<u64, NvmlError>>,
    fields: HashMap<u32, Result<(f64, i64), NvmlError>>,
    gpm: HashMap<u32, Result<f64, NvmlError>>,
}

/// Reads NVML once per tick. See the module docs for the error policy.
pub struct Reader {
    nvml: &'static Nvml,
    opts: ReaderOptions,
    xid: Option<XidWatcher>,
    gpus: BTreeMap<u32, GpuState>,
    entities: HashMap<String, EntityState>,
    book: Book,
    system_texts: HashMap<TextKind, Result<String, String>>,
}

impl Reader {
    /// A reader over an initialised NVML with default options.
    pub fn new(nvml: &'static Nvml) -> Self {
        Self::with_options(nvml, ReaderOptions::default())
    }

    /// A reader over an initialised NVML; starts the Xid thread.
    pub fn with_options(nvml: &'static Nvml, opts: ReaderOptions) -> Self {
        let keep = opts.xid_window.max(Duration::from_secs(1));
        let xid = match XidWatcher::start(nvml, opts.xid_poll, keep, opts.clock.clone()) {
            Ok(w) => Some(w),
            Err(e) => {
                warn!("cannot start the Xid event thread: {e}; Xid errors are not counted");
                None
            }
        };
        Self {
            nvml,
            opts,
            xid,
            gpus: BTreeMap::new(),
            entities: HashMap::new(),
            book: Book::default(),
            system_texts: HashMap::new(),
        }
    }

    /// Cumulative read errors per field.
    pub fn field_errors(&self) -> Vec<(&'static str, u64)> {
        self.book.errors.iter().map(|(k, v)| (*k, *v)).collect()
    }

    /// Fields found unsupported so far.
    pub fn unsupported(&self) -> &[Unsupported] {
        &self.book.unsupported_list
    }

    /// The handle and (cached) identity of a GPU.
    fn device(&mut self, index: u32) -> Handle {
        let dev = self
            .nvml
            .device_by_index(index)
            .map_err(|e| ("device_handle", e))?;
        let state = self.gpus.entry(index).or_default();
        let ident = match &state.ident {
            Some(i) => i.clone(),
            None => {
                let i = read_ident(&dev).map_err(|e| ("device_identity", e))?;
                state.ident = Some(i.clone());
                i
            }
        };
        Ok((dev, ident))
    }

    /// Hands the GPUs to watch to the Xid thread; with `xid_sync`, waits until it has
    /// recorded every event pending now (the wait is added to `out.event_wait`).
    fn watch_xids(&mut self, gpus: &[(u32, String)], out: &mut TickData) {
        let Some(w) = &self.xid else {
            return;
        };
        w.watch(gpus);
        if self.opts.xid_sync {
            let started = Instant::now();
            if !w.flush(self.opts.xid_poll * 5 + Duration::from_millis(100)) {
                *self.book.errors.entry("xid_events").or_default() += 1;
            }
            out.event_wait += started.elapsed();
        }
    }

    /// Reads every selected device at `now` (Unix seconds, for windows). Fails only when
    /// NVML cannot even count devices.
    pub fn read(&mut self, counters: &CounterSet, now: f64) -> Result<TickData, NvmlError> {
        let count = self.nvml.device_count()?;
        let mut out = TickData::default();
        // Forget GPUs that are no longer enumerated: their cached identity and texts are stale.
        self.gpus.retain(|i, _| *i < count);
        // Each selected GPU's handle and identity, looked up once for the whole tick.
        let selected: Vec<u32> = (0..count)
            .filter(|i| self.opts.devices.touches(*i))
            .collect();
        let handles: Vec<_> = selected.into_iter().map(|i| (i, self.device(i))).collect();

        // The Xid thread first: it watches every GPU that answers and was not lost last tick
        // (a change rebuilds its event set), so a new GPU is registered before it is read.
        let watch: Vec<(u32, String)> = handles
            .iter()
            .filter(|(i, _)| !self.gpus.get(i).is_some_and(|g| g.down))
            .filter_map(|(i, h)| h.as_ref().ok().map(|(_, id)| (*i, id.uuid.clone())))
            .collect();
        self.watch_xids(&watch, &mut out);

        // The metric rows, listed once per tick and shared by every entity.
        let rows: Vec<&CounterRow> = counters.metrics().collect();
        for (index, handle) in handles {
            self.read_gpu(index, handle, counters, &rows, now, &mut out);
        }
        for d in &out.devices {
            if let Some(g) = self.gpus.get_mut(&d.gpu) {
                g.down = !d.up;
            }
        }
        // A GPU that was lost and answers again joins the event set now, not a tick later.
        let up: Vec<(u32, String)> = out
            .devices
            .iter()
            .filter(|d| d.up)
            .map(|d| (d.gpu, d.uuid.clone()))
            .collect();
        self.watch_xids(&up, &mut out);
        // Forget per-entity state (previous GPM sample, rate readings) of entities that are
        // gone (a MIG instance destroyed, a GPU lost), so state does not grow over time.
        let seen: HashSet<&str> = out
            .entities
            .iter()
            .filter_map(|e| e.id.mig.as_ref().map(|m| m.uuid.as_str()))
            .chain(out.devices.iter().filter(|d| d.up).map(|d| d.uuid.as_str()))
            .collect();
        self.entities.retain(|k, _| seen.contains(k.as_str()));
        self.xid_totals(&mut out);
        Ok(out)
    }

    /// `gpu_xid_errors_total` for every selected GPU whose events are watched, up or down.
    fn xid_totals(&self, out: &mut TickData) {
        let Some(w) = &self.xid else {
            return;
        };
        for d in &out.devices {
            let Some(ident) = self.gpus.get(&d.gpu).and_then(|g| g.ident.as_ref()) else {
                continue;
            };
            let seen = w.get(&ident.uuid);
            if w.status(&ident.uuid) != Some(Watch::Watching) && seen.is_none() {
                continue;
            }
            let mut codes: BTreeMap<u64, (u64, Option<f64>)> = self
                .opts
                .xid_initialized
                .iter()
                .map(|c| (*c, (0, None)))
                .collect();
            for (code, (n, t)) in seen.iter().flat_map(|g| g.codes.iter()) {
                codes.insert(*code, (*n, Some(*t)));
            }
            out.xids.push(XidTotals {
                id: ident.entity_id(d.gpu),
                codes: codes.into_iter().map(|(c, (n, t))| (c, n, t)).collect(),
            });
        }
    }

    fn read_gpu(
        &mut self,
        index: u32,
        handle: Handle,
        counters: &CounterSet,
        rows: &[&CounterRow],
        now: f64,
        out: &mut TickData,
    ) {
        let nvml = self.nvml;
        let known = self.gpus.get(&index).and_then(|g| g.ident.clone());
        let mut status = DeviceStatus {
            gpu: index,
            uuid: known.as_ref().map(|i| i.uuid.clone()).unwrap_or_default(),
            model_name: known.as_ref().map(|i| i.name.clone()).unwrap_or_default(),
            up: false,
        };
        let (dev, ident) = match handle {
            Ok(d) => d,
            Err((step, e)) => {
                if !matches!(e, NvmlError::GpuLost) {
                    *self.book.errors.entry(step).or_default() += 1;
                }
                out.devices.push(status);
                return;
            }
        };
        status.uuid = ident.uuid.clone();
        status.model_name = ident.name.clone();
        let ctx = Ctx {
            nvml,
            xid: self.xid.as_ref(),
            opts: &self.opts,
            now,
        };
        let state = self.gpus.entry(index).or_default();

        let mut lost = false;
        let base = ident.entity_id(index);
        let migs = match dev.mig_mode() {
            Ok(m) if m.current == 1 => match enumerate_mig(nvml, &dev) {
                Ok(v) => Some(v),
                Err(NvmlError::GpuLost) => {
                    out.devices.push(status);
                    return;
                }
                Err(e) => {
                    let what = "listing MIG instances";
                    self.book
                        .failed("mig_enumeration", &ident.uuid, index, what, &e);
                    Some(Vec::new())
                }
            },
            Err(NvmlError::GpuLost) => {
                out.devices.push(status);
                return;
            }
            _ => None,
        };
        let sel = &ctx.opts.devices;
        let repeat = ctx.opts.repeat_device_fields && migs.is_some();

        // Label rows are read on the physical GPU and repeated on its instances.
        let labels: Vec<Option<String>> = counters
            .labels()
            .map(|row| {
                let at = Place {
                    key: &ident.uuid,
                    uuid: &ident.uuid,
                    gpu: index,
                    gi: None,
                };
                if self.book.is_unsupported(at.key, row.field) {
                    return None;
                }
                let r = read_text_field(nvml, &dev, row.field, state, &mut self.system_texts);
                self.book.settle(&at, row.field, &mut lost, r)
            })
            .collect();

        let mut entities = Vec::new();
        // What a GPU supports depends on its MIG mode (utilization is not served in MIG
        // mode), so the unsupported-field memory is kept per mode.
        let phys_key = if migs.is_some() {
            format!("{}/mig", ident.uuid)
        } else {
            ident.uuid.clone()
        };
        // The physical GPU's own series, also read when its values are repeated on instances.
        let phys_values = if sel.wants_gpu(index) || repeat {
            let phys_rows = |f: &FieldDef| f.level == Level::Device || migs.is_none();
            Some(read_rows(
                &ctx,
                &dev,
                None,
                &Place {
                    key: &phys_key,
                    uuid: &ident.uuid,
                    gpu: index,
                    gi: None,
                },
                rows,
                &phys_rows,
                state,
                self.entities.entry(ident.uuid.clone()).or_default(),
                &mut self.book,
                &mut lost,
            ))
        } else {
            None
        };

        for (mig_dev, mig) in migs.iter().flatten() {
            if !sel.wants_instance(index, mig.gpu_instance_id) {
                continue;
            }
            let inst_rows = |f: &FieldDef| f.level == Level::Instance;
            let at = Place {
                key: &mig.uuid,
                uuid: &ident.uuid,
                gpu: index,
                gi: Some(mig.gpu_instance_id),
            };
            let mut values = read_rows(
                &ctx,
                mig_dev,
                Some((&dev, mig.gpu_instance_id)),
                &at,
                rows,
                &inst_rows,
                state,
                self.entities.entry(mig.uuid.clone()).or_default(),
                &mut self.book,
                &mut lost,
            );
            if repeat && let Some(phys) = &phys_values {
                for ((slot, row), v) in rows.iter().enumerate().zip(phys) {
                    if row.field.level == Level::Device
                        && let Some(dst) = values.get_mut(slot)
                    {
                        *dst = v.clone();
                    }
                }
            }
            let mut id = base.clone();
            id.mig = Some(mig.clone());
            entities.push(EntitySample {
                id,
                values,
                labels: labels.clone(),
            });
        }
        if let Some(values) = phys_values.filter(|_| sel.wants_gpu(index) && !repeat) {
            entities.insert(
                0,
                EntitySample {
                    id: base,
                    values,
                    labels,
                },
            );
        }

        if self.opts.processes && !lost {
            let mut procs = Vec::new();
            if migs.is_none() && sel.wants_gpu(index) {
                procs.push(processes::read(
                    &dev,
                    &ident.uuid,
                    Some(&mut state.proc_util_seen),
                ));
            }
            for (mig_dev, mig) in migs.iter().flatten() {
                if sel.wants_instance(index, mig.gpu_instance_id) {
                    procs.push(processes::read(mig_dev, &mig.uuid, None));
                }
            }
            for p in procs {
                match p {
                    Ok(p) => out.processes.push(p),
                    Err(NvmlError::GpuLost) => lost = true,
                    Err(e) => {
                        let what = "listing processes";
                        self.book.failed("processes", &ident.uuid, index, what, &e);
                    }
                }
            }
        }
        if lost {
            // The device fell off mid-read: drop everything it gave this tick.
            warn!(gpu = index, uuid = %ident.uuid, "GPU is lost (NVML_ERROR_GPU_IS_LOST)");
            out.devices.push(status);
            return;
        }
        status.up = true;
        out.devices.push(status);
        out.entities.extend(entities);
    }
}

fn read_ident(dev: &Device<'_>) -> Result<Ident, NvmlError> {
    Ok(Ident {
        uuid: dev.uuid()?,
        name: dev.name()?,
        pci_bus_id: dev.pci_info()?.bus_id,
    })
}

/// Lists MIG devices (handle + identity), ordered by GPU instance id, one per GPU instance.
pub fn enumerate_mig(
    nvml: &'static Nvml,
    dev: &Device<'static>,
) -> Result<Vec<(Device<'static>, MigIdentity)>, NvmlError> {
    let max = dev.mig_device_count()?;
    let mut out = Vec::new();
    for i in 0..max {
        let mig = match dev.mig_device_by_index(i) {
            Ok(m) => m,
            Err(NvmlError::NotFound | NvmlError::InvalidArg) => continue,
            Err(e) => return Err(e),
        };
        let gi = instance_id(nvml, &mig, true)?;
        let ci = instance_id(nvml, &mig, false).unwrap_or(0);
        let uuid = mig.uuid()?;
        let name = mig.name()?;
        let profile = text::mig_profile_from_name(&name)
            .unwrap_or("unknown")
            .to_owned();
        out.push((
            mig,
            MigIdentity {
                profile,
                gpu_instance_id: gi,
                compute_instance_id: ci,
                uuid,
            },
        ));
    }
    Ok(one_per_gpu_instance(out))
}

/// Orders MIG devices by GPU instance id and keeps one per GPU instance (the lowest compute
/// instance id). A GPU instance split into several compute instances shows one MIG device per
/// compute instance, but its memory, GPM sample and `GPU_I_ID` label are the GPU instance's:
/// exporting each would give duplicate series.
fn one_per_gpu_instance<T>(mut devs: Vec<(T, MigIdentity)>) -> Vec<(T, MigIdentity)> {
    devs.sort_by_key(|(_, m)| (m.gpu_instance_id, m.compute_instance_id));
    devs.dedup_by_key(|(_, m)| m.gpu_instance_id);
    devs
}

/// Reads the metric rows accepted by `wanted` on one entity.
#[allow(clippy::too_many_arguments)]
fn read_rows(
    ctx: &Ctx<'_>,
    dev: &Device<'static>,
    parent: Option<(&Device<'static>, u32)>,
    at: &Place<'_>,
    rows: &[&CounterRow],
    wanted: &dyn Fn(&FieldDef) -> bool,
    gpu: &mut GpuState,
    ent: &mut EntityState,
    book: &mut Book,
    lost: &mut bool,
) -> Vec<Option<Value>> {
    // Decided once per tick, before any read can mark a field unsupported.
    let active_rows: Vec<bool> = rows
        .iter()
        .map(|r| wanted(r.field) && !book.is_unsupported(at.key, r.field))
        .collect();
    let mut cache = TickCache::default();

    // One nvmlDeviceGetFieldValues call for every field-value row of this entity.
    let mut ids: Vec<u32> = Vec::new();
    for (row, _) in rows.iter().zip(&active_rows).filter(|(_, a)| **a) {
        match row.field.source {
            Source::NvmlField(id, _) => ids.push(id),
            Source::NvmlFieldRate(list, _) => ids.extend_from_slice(list),
            _ => {}
        }
    }
    ids.sort_unstable();
    ids.dedup();
    if !ids.is_empty() {
        let req: Vec<FieldId> = ids.iter().map(|i| FieldId(*i)).collect();
        match dev.field_values_for(&req) {
            Ok(samples) => {
                for (id, s) in ids.iter().zip(samples) {
                    let v = s.and_then(|s| {
                        let ts = s.timestamp;
                        s.value.map(|v| (sample_f64(&v), ts))
                    });
                    cache.fields.insert(*id, v);
                }
            }
            Err(e) => {
                for id in &ids {
                    cache.fields.insert(*id, Err(clone_err(&e)));
                }
            }
        }
    }

    // GPM: one sample per tick, metrics against the previous tick's sample.
    let gpm_ids: Vec<u32> = rows
        .iter()
        .zip(&active_rows)
        .filter(|(_, a)| **a)
        .filter_map(|(r, _)| match r.field.source {
            Source::Gpm(id, _) => Some(id),
            _ => None,
        })
        .collect();
    if !gpm_ids.is_empty() {
        read_gpm(ctx.nvml, dev, parent, gpu, ent, &gpm_ids, &mut cache);
    }

    let mut values = Vec::with_capacity(rows.len());
    for (row, active) in rows.iter().zip(&active_rows) {
        let f = row.field;
        if !active {
            values.push(None);
            continue;
        }
        let r = read_value(ctx, at, dev, f, gpu, ent, &mut cache);
        values.push(book.settle(at, f, lost, r));
    }
    values
}

fn read_gpm(
    nvml: &'static Nvml,
    dev: &Device<'static>,
    parent: Option<(&Device<'static>, u32)>,
    gpu: &mut GpuState,
    ent: &mut EntityState,
    ids: &[u32],
    cache: &mut TickCache,
) {
    let owner = parent.map(|(p, _)| p).unwrap_or(dev);
    let supported = *gpu
        .gpm_supported
        .get_or_insert_with(|| owner.gpm_support().unwrap_or(false));
    let fail = |cache: &mut TickCache, e: &NvmlError| {
        for id in ids {
            cache.gpm.insert(*id, Err(clone_err(e)));
        }
    };
    if !supported {
        fail(cache, &NvmlError::NotSupported);
        return;
    }
    let sample = match parent {
        Some((p, gi)) => p.gpm_mig_sample(gi),
        None => dev.gpm_sample(),
    };
    let sample = match sample {
        Ok(s) => s,
        Err(e) => {
            fail(cache, &e);
            return;
        }
    };
    let Some(prev) = ent.gpm_prev.replace(sample) else {
        return; // first tick: nothing to average over yet
    };
    let Some(cur) = ent.gpm_prev.as_ref() else {
        return;
    };
    let metric_ids: Vec<(u32, GpmMetricId)> = ids
        .iter()
        .filter_map(|id| GpmMetricId::try_from(*id).ok().map(|m| (*id, m)))
        .collect();
    let wanted: Vec<GpmMetricId> = metric_ids.iter().map(|(_, m)| *m).collect();
    match nvml_wrapper::gpm::gpm_metrics_get(nvml, &prev, cur, &wanted) {
        Ok(results) => {
            for ((id, _), r) in metric_ids.iter().zip(results) {
                cache.gpm.insert(*id, r.map(|m| m.value));
            }
        }
        Err(e) => fail(cache, &e),
    }
    for id in ids {
        cache.gpm.entry(*id).or_insert(Err(NvmlError::NotSupported));
    }
}

fn sample_f64(v: &nvml_wrapper::enums::device::SampleValue) -> f64 {
    use nvml_wrapper::enums::device::SampleValue as S;
    match *v {
        S::F64(x) => x,
        S::U32(x) => f64::from(x),
        S::U64(x) => x as f64,
        S::I64(x) => x as f64,
    }
}

fn num(v: f64) -> Result<Option<Value>, NvmlError> {
    Ok(Some(Value::Num(v)))
}

/// Reads one numeric field on one entity.
fn read_value(
    ctx: &Ctx<'_>,
    at: &Place<'_>,
    dev: &Device<'static>,
    f: &'static FieldDef,
    gpu: &mut GpuState,
    ent: &mut EntityState,
    cache: &mut TickCache,
) -> Result<Option<Value>, NvmlError> {
    match f.source {
        Source::Clock(k) => num(f64::from(dev.clock_info(match k {
            ClockKind::Graphics => Clock::Graphics,
            ClockKind::Sm => Clock::SM,
            ClockKind::Mem => Clock::Memory,
            ClockKind::Video => Clock::Video,
        })?)),
        Source::GpuTemperature => num(f64::from(dev.temperature(TemperatureSensor::Gpu)?)),
        Source::PowerUsage => num(f64::from(dev.power_usage()?) / 1000.0),
        Source::PowerLimit => num(f64::from(dev.enforced_power_limit()?) / 1000.0),
        Source::TotalEnergy => num(dev.total_energy_consumption()? as f64),
        Source::PcieReplay => num(f64::from(dev.pcie_replay_counter()?)),
        Source::PcieThroughput(tx) => num(f64::from(dev.pcie_throughput(if tx {
            PcieUtilCounter::Send
        } else {
            PcieUtilCounter::Receive
        })?)),
        Source::Utilization(k) => match k {
            UtilKind::Gpu | UtilKind::MemCopy => {
                let u = cache.util.get_or_insert_with(|| dev.utilization_rates());
                let u = u.as_ref().map_err(clone_err)?;
                num(f64::from(if k == UtilKind::Gpu { u.gpu } else { u.memory }))
            }
            UtilKind::Encoder => num(f64::from(dev.encoder_utilization()?.utilization)),
            UtilKind::Decoder => num(f64::from(dev.decoder_utilization()?.utilization)),
        },
        Source::Memory(k) => {
            let m = cache.mem.get_or_insert_with(|| dev.memory_info());
            let m = m.as_ref().map_err(clone_err)?;
            let b = |x: u64| x as f64 / MIB;
            num(match k {
                MemKind::Total => b(m.total),
                MemKind::Free => b(m.free),
                MemKind::Used => b(m.used),
                MemKind::Reserved => b(m.reserved),
                MemKind::UsedPercent if m.total > 0 => m.used as f64 * 100.0 / m.total as f64,
                MemKind::UsedPercent => return Ok(None),
            })
        }
        Source::Violation(v) => num(dev
            .violation_status(match v {
                Violation::Power => PerformancePolicy::Power,
                Violation::Thermal => PerformancePolicy::Thermal,
                Violation::SyncBoost => PerformancePolicy::SyncBoost,
                Violation::BoardLimit => PerformancePolicy::BoardLimit,
                Violation::LowUtil => PerformancePolicy::LowUtilization,
                Violation::Reliability => PerformancePolicy::Reliability,
            })?
            .violation_time as f64),
        Source::ClockEventReasons => num(clock_event_reasons(dev, cache)? as f64),
        Source::NvmlField(id, scale) => match cache.fields.get(&id) {
            Some(Ok((v, _))) => num(scale.apply(*v)),
            Some(Err(e)) => Err(clone_err(e)),
            None => Ok(None),
        },
        Source::NvmlFieldRate(ids, scale) => {
            let mut sum = 0.0;
            let mut ts = i64::MIN;
            for id in ids {
                match cache.fields.get(id) {
                    Some(Ok((v, t))) => {
                        sum += v;
                        ts = ts.max(*t);
                    }
                    Some(Err(e)) => return Err(clone_err(e)),
                    None => return Ok(None),
                }
            }
            let prev = ent.rate_prev.insert(f.id, (sum, ts));
            match prev {
                Some((p, pt)) if ts > pt && sum >= p => {
                    let secs = (ts - pt) as f64 / 1e6;
                    num(scale.apply((sum - p) / secs))
                }
                _ => Ok(None),
            }
        }
        Source::Gpm(id, scale) => match cache.gpm.get(&id) {
            Some(Ok(v)) => num(scale.apply(*v)),
            Some(Err(e)) => Err(clone_err(e)),
            None => Ok(None),
        },
        Source::Xid => match xid_watch(ctx, at)? {
            Some(w) => Ok(Some(Value::Xid(
                w.get(at.uuid).and_then(|g| g.last).unwrap_or(0),
            ))),
            None => Ok(None),
        },
        Source::DeviceCount => num(f64::from(ctx.nvml.device_count()?)),
        Source::NvmlIndex => num(f64::from(dev.index()?)),
        Source::Text(_) => Err(NvmlError::NotSupported),
        Source::Window(WindowKind::Xid) => match xid_watch(ctx, at)? {
            Some(w) => {
                let counts = w
                    .get(at.uuid)
                    .map(|g| g.window_counts(ctx.now, ctx.opts.xid_window))
                    .unwrap_or_default();
                Ok(Some(Value::Window(WindowCounts {
                    label: "xid",
                    window_ms: ctx.opts.xid_window.as_millis() as u64,
                    counts: counts
                        .into_iter()
                        .map(|(c, n)| (c.to_string(), n))
                        .collect(),
                })))
            }
            None => Ok(None),
        },
        Source::Window(WindowKind::ClockEvents) => {
            let bits = clock_event_reasons(dev, cache)?;
            let window = ctx.opts.clock_events_window;
            let hist = &mut gpu.clock_events;
            if hist.back().map(|(t, _)| *t) != Some(ctx.now) {
                hist.push_back((ctx.now, bits));
            }
            let from = ctx.now - window.as_secs_f64();
            while hist.front().is_some_and(|(t, _)| *t <= from) {
                hist.pop_front();
            }
            let counts = CLOCK_EVENT_REASONS
                .iter()
                .filter_map(|(bit, name)| {
                    let n = hist.iter().filter(|(_, b)| b & bit != 0).count() as u64;
                    (n > 0).then(|| ((*name).to_owned(), n))
                })
                .collect();
            Ok(Some(Value::Window(WindowCounts {
                label: "clock_event",
                window_ms: window.as_millis() as u64,
                counts,
            })))
        }
        Source::Unavailable(why) => Err(NvmlError::FailedToLoadSymbol(why.into())),
    }
}

/// `nvmlDeviceGetCurrentClocksEventReasons`, read once per entity and tick.
fn clock_event_reasons(dev: &Device<'static>, cache: &mut TickCache) -> Result<u64, NvmlError> {
    cache
        .reasons
        .get_or_insert_with(|| dev.current_throttle_reasons().map(|r| r.bits()))
        .as_ref()
        .map(|b| *b)
        .map_err(clone_err)
}

/// The Xid watcher when the entity's GPU is watched; `Ok(None)` while registration is
/// pending, unsupported when the GPU offers no Xid events.
fn xid_watch<'a>(ctx: &Ctx<'a>, at: &Place<'_>) -> Result<Option<&'a XidWatcher>, NvmlError> {
    let Some(w) = ctx.xid else {
        return Err(NvmlError::FailedToLoadSymbol(
            "the Xid event thread could not be started".into(),
        ));
    };
    match w.status(at.uuid) {
        Some(Watch::Watching) => Ok(Some(w)),
        Some(Watch::Unsupported) => Err(NvmlError::FailedToLoadSymbol(
            "the GPU offers no Xid events (see the log for why)".into(),
        )),
        None => Ok(None),
    }
}

/// The string behind a label row, read once per GPU (or once per process for the driver and
/// NVML versions) and cached; `Ok(None)` when NVML returns an empty string.
fn read_text_field(
    nvml: &Nvml,
    dev: &Device<'_>,
    f: &FieldDef,
    gpu: &mut GpuState,
    system: &mut HashMap<TextKind, Result<String, String>>,
) -> Result<Option<String>, NvmlError> {
    let kind = match f.source {
        Source::Text(k) => k,
        Source::Unavailable(why) => return Err(NvmlError::FailedToLoadSymbol(why.into())),
        // A numeric field as a label row is not supported (reported once as unavailable).
        _ => {
            return Err(NvmlError::FailedToLoadSymbol(
                "only string fields can be labels here".into(),
            ));
        }
    };
    match kind {
        TextKind::DriverVersion | TextKind::NvmlVersion => {
            let r = system.entry(kind).or_insert_with(|| {
                let r = if kind == TextKind::DriverVersion {
                    nvml.sys_driver_version()
                } else {
                    nvml.sys_nvml_version()
                };
                r.map_err(|e| e.to_string())
            });
            match r {
                Ok(v) => Ok(Some(v.clone())),
                Err(e) => Err(NvmlError::FailedToLoadSymbol(e.clone())),
            }
        }
        _ => {
            if let Some(v) = gpu.texts.get(&kind) {
                return Ok(Some(v.clone()));
            }
            let s = match kind {
                TextKind::Name => dev.name()?,
                TextKind::Brand => text::brand_name(&dev.brand()?),
                TextKind::Serial => dev.serial()?,
                TextKind::Uuid => dev.uuid()?,
                TextKind::PciBusId => dev.pci_info()?.bus_id,
                TextKind::VbiosVersion => dev.vbios_version()?,
                TextKind::InforomOem => dev.info_rom_version(InfoRom::OEM)?,
                TextKind::InforomEcc => dev.info_rom_version(InfoRom::ECC)?,
                TextKind::InforomPower => dev.info_rom_version(InfoRom::Power)?,
                TextKind::InforomImage => dev.info_rom_image_version()?,
                TextKind::DriverVersion | TextKind::NvmlVersion => return Ok(None),
            };
            if s.is_empty() {
                return Ok(None);
            }
            gpu.texts.insert(kind, s.clone());
            Ok(Some(s))
        }
    }
}

/// `nvmlDeviceGetGpuInstanceId` / `nvmlDeviceGetComputeInstanceId` on a MIG handle; not
/// wrapped by nvml-wrapper, so called through its sys layer.
fn instance_id(nvml: &Nvml, mig: &Device<'_>, gpu_instance: bool) -> Result<u32, NvmlError> {
    let lib = nvml.lib();
    let sym = if gpu_instance {
        lib.nvmlDeviceGetGpuInstanceId.as_ref()
    } else {
        lib.nvmlDeviceGetComputeInstanceId.as_ref()
    }
    .map_err(|e| NvmlError::FailedToLoadSymbol(e.to_string()))?;
    let mut id: u32 = 0;
    // SAFETY: the handle comes from nvml-wrapper and is valid while `nvml` lives; `id` is a
    // valid out-pointer for the duration of the call.
    let rc = unsafe { sym(mig.handle(), &mut id) };
    nvml_try(rc)?;
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mig(gi: u32, ci: u32) -> ((), MigIdentity) {
        (
            (),
            MigIdentity {
                profile: "1g.10gb".into(),
                gpu_instance_id: gi,
                compute_instance_id: ci,
                uuid: format!("MIG-{gi}-{ci}"),
            },
        )
    }

    #[test]
    fn one_entity_per_gpu_instance_lowest_compute_instance() {
        let got = one_per_gpu_instance(vec![mig(9, 1), mig(7, 0), mig(9, 0), mig(8, 2)]);
        let ids: Vec<(u32, u32)> = got
            .iter()
            .map(|(_, m)| (m.gpu_instance_id, m.compute_instance_id))
            .collect();
        assert_eq!(ids, vec![(7, 0), (8, 2), (9, 0)]);
    }
}
