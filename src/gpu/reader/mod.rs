//! One tick of NVML reads: every physical GPU and MIG instance, every field of the counter set.
//!
//! The reader owns all state that must survive between ticks — cached identity strings (by
//! GPU UUID: which GPU is at which NVML index is decided anew each tick, in `locate`), the
//! previous GPM sample and counter reading for rates, the per-device Xid event sets, and the
//! set of fields found unsupported — and returns plain [`TickData`]. It never encodes and
//! never serves. Error policy:
//! - `NOT_SUPPORTED` (or a symbol the driver lacks) on an entity: the field is logged once and
//!   never read again on that entity; it is listed in the self-metrics, not exported as 0.
//!   Exception: GPM fields on a GPU without GPM are left empty, not unsupported, while
//!   another source may serve them (`ReaderOptions::gpm_elsewhere`: the DCGM client).
//! - `GPU_IS_LOST`: the device's series are dropped for this tick and it is reported down,
//!   under the UUID it last answered with where `locate` can tell which GPU it is, else under
//!   none.
//! - anything else: the series is absent this tick and the field's error counter goes up.

use book::Book;
use gpu_read::GpuRead;
use locate::{Gpus, Located};
use state::EntityState;
use values::Ctx;
mod book;
mod entities;
mod gpm;
mod gpu_read;
mod locate;
mod options;
mod state;
pub mod timing;
mod values;

pub use book::reason as read_error_reason;
pub use entities::enumerate_mig;
pub use options::{
    CLOCK_EVENT_REASONS, DEFAULT_XID_INITIALIZED, HW_POWER_BRAKE, HW_SLOWDOWN, HW_THERMAL,
    NvlinkLinks, ReaderOptions, SW_THERMAL,
};

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use nvml_wrapper::Nvml;
use nvml_wrapper::error::NvmlError;
use tracing::{info, warn};

use crate::catalogue::TextKind;
use crate::catalogue::csv::{CounterRow, CounterSet};
use crate::gpu::nvlink::LinkReader;
use crate::gpu::processes::EntityProcesses;
use crate::gpu::xid::{CodeCounts, Watch, XidWatcher};
use crate::snapshot::{DeviceStatus, EntitySample, Interconnect, Unsupported, XidTotals};

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
    /// NVLink links and fabric registration of every GPU that answered and has either.
    pub interconnect: Vec<Interconnect>,
}

/// Reads NVML once per tick. See the module docs for the error policy.
pub struct Reader {
    nvml: &'static Nvml,
    opts: ReaderOptions,
    xid: Option<XidWatcher>,
    gpus: Gpus,
    entities: HashMap<String, EntityState>,
    book: Book,
    links: LinkReader,
    system_texts: HashMap<TextKind, Result<String, NvmlError>>,
    /// The GPU count for which an empty `-d` selection was last warned about.
    warned_empty_selection: Option<u32>,
}

impl Reader {
    /// A reader over an initialised NVML with default options.
    pub fn new(nvml: &'static Nvml) -> Self {
        Self::with_options(nvml, ReaderOptions::default())
    }

    /// A reader over an initialised NVML; starts the Xid thread.
    pub fn with_options(nvml: &'static Nvml, opts: ReaderOptions) -> Self {
        let keep = opts.xid_count_window.max(Duration::from_secs(1));
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
            gpus: Gpus::default(),
            entities: HashMap::new(),
            book: Book::default(),
            links: LinkReader::default(),
            system_texts: HashMap::new(),
            warned_empty_selection: None,
        }
    }

    /// Cumulative read errors per (field or step, reason), sorted.
    pub fn field_errors(&self) -> Vec<(&'static str, &'static str, u64)> {
        self.book
            .errors
            .iter()
            .map(|((f, r), n)| (*f, *r, *n))
            .collect()
    }

    /// Fields found unsupported so far.
    pub fn unsupported(&self) -> &[Unsupported] {
        &self.book.unsupported_list
    }

    /// Whether another source (DCGM) serves GPM fields where GPM is not supported (see
    /// [`ReaderOptions::gpm_elsewhere`]); decided before each tick.
    pub fn set_gpm_elsewhere(&mut self, on: bool) {
        self.opts.gpm_elsewhere = on;
    }

    /// The UUIDs of the GPUs found without GPM support so far.
    pub fn without_gpm(&self) -> HashSet<String> {
        self.gpus
            .by_uuid
            .values()
            .filter(|g| g.gpm_supported == Some(false))
            .map(|g| g.ident.uuid.clone())
            .collect()
    }

    /// Hands the GPUs to watch to the Xid thread. When the list changed (the first tick, a
    /// GPU added or lost), waits until the thread has registered them, so that a new GPU's
    /// Xid fields are 0 from its first tick instead of missing; with `xid_sync`, waits on
    /// every tick until every pending event is recorded. The wait is added to
    /// `out.event_wait`.
    fn watch_xids(&mut self, gpus: &[(u32, String)], out: &mut TickData) {
        let Some(w) = &self.xid else {
            return;
        };
        let changed = w.watch(gpus);
        if changed || self.opts.xid_sync {
            let started = Instant::now();
            if !w.flush(self.opts.xid_poll * 5 + Duration::from_millis(500)) {
                *self
                    .book
                    .errors
                    .entry(("xid_events", "timeout"))
                    .or_default() += 1;
            }
            out.event_wait += started.elapsed();
        }
    }

    /// Reads every selected device at `now` (Unix seconds, for windows). Fails only when
    /// NVML cannot even count devices.
    pub fn read(&mut self, counters: &CounterSet, now: f64) -> Result<TickData, NvmlError> {
        let count = self.nvml.device_count()?;
        let mut out = TickData::default();
        // Which GPU is at each index, by UUID; each selected one is read below.
        let located: Vec<(u32, Located)> = self
            .gpus
            .locate(self.nvml, count)
            .into_iter()
            .filter(|(i, _)| self.opts.devices.touches(*i))
            .collect();
        // A selection that matches none of the GPUs present is said once per GPU count (a
        // typo in -d, or a node with fewer GPUs than the DaemonSet expects).
        if located.is_empty() && count > 0 && self.warned_empty_selection != Some(count) {
            self.warned_empty_selection = Some(count);
            warn!(
                devices = %self.opts.devices.describe(),
                gpus_present = count,
                "-d/--devices selects none of the {count} GPU(s) on this node (indexes 0-{}): \
                 no GPU is exported; gpu_exporter_devices_selected is 0",
                count - 1
            );
        }

        // The Xid thread first: it watches every GPU that answers and was not lost last tick
        // (a change rebuilds its event set), so a new GPU is registered before it is read.
        let watch: Vec<(u32, String)> = located
            .iter()
            .filter_map(|(i, l)| match l {
                Located::Up(_, uuid) => Some((*i, uuid.clone())),
                Located::Down(..) => None,
            })
            .filter(|(_, uuid)| !self.gpus.by_uuid.get(uuid).is_some_and(|g| g.down))
            .collect();
        self.watch_xids(&watch, &mut out);

        // The metric rows, listed once per tick and shared by every entity.
        let rows: Vec<&CounterRow> = counters.metrics().collect();
        for (index, located) in located {
            self.read_gpu(index, located, counters, &rows, now, &mut out);
        }
        for d in &out.devices {
            if let Some(g) = self.gpus.by_uuid.get_mut(&d.uuid) {
                // Logged once on each change, with the GPU's identity.
                match (g.down, d.up) {
                    (false, false) => warn!(
                        gpu = d.gpu,
                        uuid = %d.uuid,
                        model = %d.model_name,
                        "GPU lost: NVML no longer answers for it; its series are left out and \
                         gpu_device_up is 0 until it answers again"
                    ),
                    (true, true) => info!(
                        gpu = d.gpu,
                        uuid = %d.uuid,
                        model = %d.model_name,
                        "GPU back: NVML answers for it again; its series return"
                    ),
                    _ => {}
                }
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
        self.links.retain(&|k| seen.contains(k));
        self.xid_totals(&mut out);
        Ok(out)
    }

    /// `gpu_xid_errors_total` for every selected GPU whose events are watched, up or down.
    fn xid_totals(&self, out: &mut TickData) {
        let Some(w) = &self.xid else {
            return;
        };
        for d in &out.devices {
            let Some(ident) = self.gpus.by_uuid.get(&d.uuid).map(|g| &g.ident) else {
                continue;
            };
            let seen = w.get(&ident.uuid);
            if w.status(&ident.uuid) != Some(Watch::Watching) && seen.is_none() {
                continue;
            }
            let mut codes: BTreeMap<u64, (u64, Option<f64>)> = self
                .opts
                .xid_initialized_codes
                .iter()
                .map(|c| (*c, (0, None)))
                .collect();
            for (code, (n, t)) in seen.iter().flat_map(|g| g.codes.iter()) {
                codes.insert(*code, (*n, Some(*t)));
            }
            let list = |m: &CodeCounts| m.iter().map(|(c, (n, t))| (*c, *n, *t)).collect();
            out.xids.push(XidTotals {
                id: ident.entity_id(d.gpu),
                codes: codes.into_iter().map(|(c, (n, t))| (c, n, t)).collect(),
                whole_gpu: seen
                    .as_ref()
                    .map(|g| list(&g.whole_gpu))
                    .unwrap_or_default(),
                instances: seen
                    .iter()
                    .flat_map(|g| g.instances.iter())
                    .map(|(gi, m)| (*gi, list(m)))
                    .collect(),
            });
        }
    }

    /// Reads the GPU `located` at `index` into `out`: its status, its entities' values, its
    /// processes and its NVLink links and fabric; a GPU that does not answer or falls off
    /// mid-read gives its status alone.
    fn read_gpu(
        &mut self,
        index: u32,
        located: Located,
        counters: &CounterSet,
        rows: &[&CounterRow],
        now: f64,
        out: &mut TickData,
    ) {
        let (dev, uuid) = match located {
            Located::Up(dev, uuid) => (dev, uuid),
            Located::Down(name, step, e) => {
                out.devices.push(self.down(index, name, step, &e));
                return;
            }
        };
        let Some(state) = self.gpus.by_uuid.get_mut(&uuid) else {
            // Not reached: `locate` keeps the state of every GPU that answered.
            return;
        };
        let ident = state.ident.clone();
        let mut status = DeviceStatus {
            gpu: index,
            uuid: ident.uuid.clone(),
            model_name: ident.name.clone(),
            pci_bus_id: ident.pci_bus_id.clone(),
            minor: ident.minor,
            up: false,
        };
        let mut gpu = GpuRead {
            ctx: Ctx {
                nvml: self.nvml,
                xid: self.xid.as_ref(),
                opts: &self.opts,
                now,
            },
            dev,
            uuid: &ident.uuid,
            index,
            state,
            book: &mut self.book,
            entities: &mut self.entities,
            links: &mut self.links,
            system_texts: &mut self.system_texts,
            lost: false,
        };
        let Ok(fabric) = gpu.fabric() else {
            out.devices.push(status);
            return;
        };
        let Ok(migs) = gpu.migs() else {
            out.devices.push(status);
            return;
        };
        let labels = gpu.labels(counters);
        let entities = gpu.entities(ident.entity_id(index), rows, migs.as_deref(), labels);
        if gpu.ctx.opts.processes && !gpu.lost {
            gpu.processes(migs.as_deref(), &mut out.processes);
        }
        let interconnect = if gpu.lost {
            None
        } else {
            gpu.interconnect(ident.entity_id(index), rows, fabric)
        };
        if gpu.lost {
            // The device fell off mid-read: drop everything it gave this tick.
            tracing::debug!(gpu = index, uuid = %ident.uuid, "GPU is lost (NVML_ERROR_GPU_IS_LOST)");
            out.devices.push(status);
            return;
        }
        status.up = true;
        out.devices.push(status);
        out.entities.extend(entities);
        out.interconnect.extend(interconnect);
    }

    /// The status of a GPU that did not answer at `index` (`step` failed with `e`): under the
    /// identity it last answered with, if one GPU fits the index (`name`); otherwise under
    /// none. A failure other than a lost GPU is counted.
    fn down(
        &mut self,
        index: u32,
        name: Option<String>,
        step: &'static str,
        e: &NvmlError,
    ) -> DeviceStatus {
        if !matches!(e, NvmlError::GpuLost) {
            *self.book.errors.entry((step, book::reason(e))).or_default() += 1;
        }
        let known = name
            .as_ref()
            .and_then(|u| self.gpus.by_uuid.get(u))
            .map(|g| &g.ident);
        DeviceStatus {
            gpu: index,
            uuid: name.clone().unwrap_or_default(),
            model_name: known.map(|i| i.name.clone()).unwrap_or_default(),
            pci_bus_id: known.map(|i| i.pci_bus_id.clone()).unwrap_or_default(),
            minor: known.and_then(|i| i.minor),
            up: false,
        }
    }
}
