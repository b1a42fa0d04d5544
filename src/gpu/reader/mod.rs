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

use book::{Book, Place};
use locate::{Gpus, Located};
use state::EntityState;
use values::{Ctx, read_rows, read_text_field};
mod book;
mod entities;
mod gpm;
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

use crate::catalogue::csv::{CounterRow, CounterSet};
use crate::catalogue::{FieldDef, Getter, Level, LinkPart, TextKind};
use crate::gpu::nvlink::{self, LinkReader};
use crate::gpu::processes::{self, EntityProcesses};
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

    fn read_gpu(
        &mut self,
        index: u32,
        located: Located,
        counters: &CounterSet,
        rows: &[&CounterRow],
        now: f64,
        out: &mut TickData,
    ) {
        let nvml = self.nvml;
        let (dev, uuid) = match located {
            Located::Up(dev, uuid) => (dev, uuid),
            Located::Down(name, step, e) => {
                if !matches!(e, NvmlError::GpuLost) {
                    *self
                        .book
                        .errors
                        .entry((step, book::reason(&e)))
                        .or_default() += 1;
                }
                // Under the identity it last answered with, if one GPU fits the index;
                // otherwise under none.
                let known = name
                    .as_ref()
                    .and_then(|u| self.gpus.by_uuid.get(u))
                    .map(|g| &g.ident);
                out.devices.push(DeviceStatus {
                    gpu: index,
                    uuid: name.clone().unwrap_or_default(),
                    model_name: known.map(|i| i.name.clone()).unwrap_or_default(),
                    pci_bus_id: known.map(|i| i.pci_bus_id.clone()).unwrap_or_default(),
                    minor: known.and_then(|i| i.minor),
                    up: false,
                });
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
        let ctx = Ctx {
            nvml,
            xid: self.xid.as_ref(),
            opts: &self.opts,
            now,
        };
        // The fabric registration, once for this tick: every fabric field, label and family
        // of the GPU comes from this read.
        let fabric = nvlink::fabric(nvml, &dev);
        if matches!(fabric, Err(NvmlError::GpuLost)) {
            out.devices.push(status);
            return;
        }
        let fabric_now = match &fabric {
            Ok(f) => Ok(f.clone()),
            Err(e) => Err(book::clone_err(e)),
        };
        state.fabric = Some(fabric);

        let mut lost = false;
        let base = ident.entity_id(index);
        let base_id = base.clone();
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
        let repeat = ctx.opts.mig_repeat_device_fields && migs.is_some();

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
            let phys_rows = |f: &FieldDef| {
                f.level == Level::Device || (f.level == Level::Instance && migs.is_none())
            };
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
        let interconnect = if lost {
            None
        } else {
            // Every link's state and error counters are read every tick, whatever
            // --nvlink-links says: the status page, `check`, the health model and
            // gpu_nvlink_links_down need them.
            let link_rows = || rows.iter().filter(|r| r.field.level == Level::Link);
            // The data counters only for series that use them.
            let throughput = self.opts.nvlink_throughput
                || link_rows().any(|r| {
                    matches!(
                        r.field.getter,
                        Getter::Link(LinkPart::Throughput | LinkPart::Transmit | LinkPart::Receive)
                    )
                });
            let read = self.interconnect(&dev, base_id.clone(), fabric_now, throughput, &mut lost);
            if self.links.has_no_links(&ident.uuid) {
                // A board without NVLink: its link-entity rows are listed as unsupported.
                let at = Place {
                    key: &ident.uuid,
                    uuid: &ident.uuid,
                    gpu: index,
                    gi: None,
                };
                for row in link_rows() {
                    self.book
                        .mark_unsupported(&at, row.field, "the GPU has no NVLink link");
                }
            }
            read
        };
        if lost {
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

    /// The GPU's NVLink links (all of them; their data counters with `throughput`) and its
    /// fabric registration (`fabric`, this tick's read); `None` when it has neither. Sets
    /// `lost` when the GPU fell off meanwhile.
    fn interconnect(
        &mut self,
        dev: &nvml_wrapper::Device<'static>,
        id: crate::snapshot::EntityId,
        fabric: Result<crate::snapshot::Fabric, NvmlError>,
        throughput: bool,
        lost: &mut bool,
    ) -> Option<Interconnect> {
        let (index, uuid) = (id.gpu, id.uuid.as_str());
        let mut links = Vec::new();
        match self.links.read(self.nvml, dev, uuid, throughput) {
            Ok(r) => {
                links = r.links;
                for (step, e) in r.failures {
                    self.book
                        .failed(step, uuid, index, "reading NVLink links", &e);
                }
            }
            Err(NvmlError::GpuLost) => {
                *lost = true;
                return None;
            }
            Err(e) => self
                .book
                .failed("nvlink_state", uuid, index, "reading NVLink links", &e),
        }
        let fabric = match fabric {
            Ok(f) if f.state != 0 => Some(f),
            Ok(_) => None,
            Err(e) if nvlink::is_absent(&e) => None,
            Err(e) => {
                let what = "reading the fabric registration";
                self.book.failed("fabric_info", uuid, index, what, &e);
                None
            }
        };
        (!links.is_empty() || fabric.is_some()).then_some(Interconnect { id, links, fabric })
    }
}
