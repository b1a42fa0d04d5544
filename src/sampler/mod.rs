//! The background sampling loop.
//!
//! Every `--collect-interval` the [`Sampler`] reads NVML through [`Reader`] into one immutable
//! [`Snapshot`], joins the attribution sources' latest state onto it, applies a changed
//! counters file, encodes it (plain and gzip, with what the server and the Kubernetes writers
//! have counted, `CountOwners`) and publishes it to [`Shared`]. With a DCGM
//! client ([`Sampler::with_dcgm`]) it asks DCGM for the profiling rows NVML left empty on GPUs
//! without GPM and for the health checks, waiting at most the client's deadline, and carries
//! DCGM's state (with the profiling values it left unserved) into the snapshot. Under a
//! profile that serves only the profiling fields every GPU model supports (`dcgm-4.10`), it
//! withholds the others on a node of mixed models (`common`). It feeds the
//! health model (`health`) every tick, reading the fields the model watches even when the
//! counters file does not export them. Its thread is the
//! only one that reads NVML values after start-up; the Xid thread (`gpu::xid`) also calls NVML,
//! only to wait for events. While NVML cannot be loaded it keeps publishing the self-metrics
//! and retries with exponential backoff. It must not serve HTTP or wait on a scrape, and it
//! must not block on the network: attribution sources refresh on their own tasks, and the wait
//! for DCGM ends at its deadline.

pub mod common;
pub mod reload;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvml_wrapper::Nvml;
use tracing::{error, info, warn};

use crate::attribution::Attributor;
use crate::base::backoff::Backoff;
use crate::base::clock::unix_now;
use crate::catalogue::Level;
use crate::catalogue::csv::{CounterRow, CounterSet};
use crate::dcgm;
use crate::exposition::EncodeOptions;
use crate::exposition::counted::CountOwners;
use crate::exposition::publish::{Shared, render};
use crate::gpu::LoadError;
use crate::gpu::reader::{Reader, ReaderOptions};
use crate::health::{self, HealthModel, HealthOptions};
use crate::snapshot::{DcgmStatus, SampleStats, Snapshot};
use reload::CountersFile;

/// Opens NVML; the error displays as an operator-facing description.
pub type Loader = Box<dyn FnMut() -> Result<&'static Nvml, LoadError> + Send>;

/// NVML loading is retried 1 s, 2 s, 4 s, … up to this.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Reads one snapshot per tick.
pub struct Sampler {
    loader: Loader,
    options: ReaderOptions,
    reader: Option<Reader>,
    next_attempt: Instant,
    backoff: Backoff,
    counters: Arc<CounterSet>,
    ticks: u64,
    last_success_unix: f64,
    /// Failed device-count calls (NVML itself not answering), per reason.
    nvml_errors: std::collections::BTreeMap<&'static str, u64>,
    attributor: Option<Attributor>,
    counters_file: Option<CountersFile>,
    /// Read the process's own figures each tick (`--enable-exporter-metrics`).
    exporter_metrics: bool,
    /// The DCGM client, unless `--dcgm-mode off`.
    dcgm: Option<dcgm::Client>,
    /// The health model, fed every tick.
    health: HealthModel,
    /// The counter set the reader reads: the exported one with the health model's watched
    /// fields added (`health::watched_set`), made again when the exported one changes.
    read_set: (Arc<CounterSet>, Arc<CounterSet>),
    /// The switch rows went unserved last tick for a lasting reason (DCGM off or unusable,
    /// no switch listed), not a tick DCGM missed.
    switch_gap_lasting: bool,
    /// Serve only the profiling fields every GPU model supports (`--compatibility
    /// dcgm-4.10`), with the set last decided; `None` serves each GPU what it supports.
    common_profiling: Option<common::CommonProfiling>,
}

impl Sampler {
    /// A sampler that loads NVML through `loader` on its first tick (and retries).
    pub fn new(loader: Loader, counters: Arc<CounterSet>) -> Self {
        Self::with_options(loader, counters, ReaderOptions::default())
    }

    /// A sampler whose reader uses `options` (device selection, MIG shape, windows).
    pub fn with_options(loader: Loader, counters: Arc<CounterSet>, options: ReaderOptions) -> Self {
        let read_set = (
            Arc::clone(&counters),
            Arc::new(health::watched_set(&counters)),
        );
        Self {
            loader,
            options,
            reader: None,
            next_attempt: Instant::now(),
            backoff: Backoff::new(Duration::from_secs(1), MAX_BACKOFF),
            counters,
            ticks: 0,
            last_success_unix: 0.0,
            nvml_errors: Default::default(),
            attributor: None,
            counters_file: None,
            exporter_metrics: false,
            dcgm: None,
            health: HealthModel::default(),
            read_set,
            switch_gap_lasting: false,
            common_profiling: None,
        }
    }

    /// Runs the health model with `opts` (the hold time).
    pub fn with_health(mut self, opts: HealthOptions) -> Self {
        self.health = HealthModel::new(opts);
        self
    }

    /// On a node whose selected GPUs are of more than one model, serves only the profiling
    /// fields every one of them supports when `on` (the profile's
    /// `Profile::common_profiling_set`), withholding the others on all GPUs.
    pub fn with_common_profiling(mut self, on: bool) -> Self {
        self.common_profiling = on.then(common::CommonProfiling::default);
        self
    }

    /// Fills the profiling fields NVML cannot serve from DCGM, through `client`.
    pub fn with_dcgm(mut self, client: dcgm::Client) -> Self {
        self.dcgm = Some(client);
        self
    }

    /// The DCGM client, if any (for `gpu-exporter check`).
    pub fn dcgm(&mut self) -> Option<&mut dcgm::Client> {
        self.dcgm.as_mut()
    }

    /// Re-reads the counters from `file` when it changes (or on SIGHUP); the new set applies
    /// from the tick that sees it.
    pub fn with_counters_file(mut self, file: CountersFile) -> Self {
        self.counters_file = Some(file);
        self
    }

    /// Reads the exporter's own `process_*` figures on every tick.
    pub fn with_exporter_metrics(mut self, on: bool) -> Self {
        self.exporter_metrics = on;
        self
    }

    /// Joins each snapshot with pods, jobs and processes through `attributor`.
    pub fn with_attribution(mut self, attributor: Attributor) -> Self {
        self.options.processes = attributor.wants_processes();
        self.attributor = Some(attributor);
        self
    }

    /// The attributor, for the simulator's tests of what it keeps over ticks.
    #[cfg(feature = "sim")]
    pub fn attributor(&self) -> Option<&Attributor> {
        self.attributor.as_ref()
    }

    /// The counter set in use.
    pub fn counters(&self) -> &Arc<CounterSet> {
        &self.counters
    }

    /// Tries to load NVML now if it is not loaded and the backoff allows it.
    fn ensure_reader(&mut self) {
        if self.reader.is_some() || Instant::now() < self.next_attempt {
            return;
        }
        match (self.loader)() {
            Ok(nvml) => {
                info!("NVML loaded");
                self.reader = Some(Reader::with_options(nvml, self.options.clone()));
                self.backoff.reset();
            }
            Err(e) => {
                let delay = self.backoff.next_delay();
                error!(retry_in_s = delay.as_secs(), "{e}");
                self.next_attempt = Instant::now() + delay;
            }
        }
    }

    /// Takes one sample. `now_unix` is the wall-clock time stamped on the snapshot.
    pub fn tick(&mut self, now_unix: f64) -> Snapshot {
        let started = Instant::now();
        if let Some(file) = self.counters_file.as_mut()
            && let Some(set) = file.poll(now_unix, started)
        {
            self.counters = Arc::new(set);
        }
        if !Arc::ptr_eq(&self.read_set.0, &self.counters) {
            self.read_set = (
                Arc::clone(&self.counters),
                Arc::new(health::watched_set(&self.counters)),
            );
        }
        let read_set = Arc::clone(&self.read_set.1);
        self.ensure_reader();
        self.ticks += 1;
        let mut snap = Snapshot {
            taken_at_unix: now_unix,
            ..Snapshot::default()
        };
        let mut nvml_up = false;
        let mut event_wait = Duration::ZERO;
        let mut processes = Vec::new();
        let mut no_gpm = std::collections::HashSet::new();
        if let Some(reader) = self.reader.as_mut() {
            if let Some(c) = self.dcgm.as_ref() {
                reader.set_gpm_elsewhere(c.may_serve());
            }
            match reader.read(&read_set, now_unix) {
                Ok(data) => {
                    snap.entities = data.entities;
                    snap.devices = data.devices;
                    snap.xids = data.xids;
                    snap.interconnect = data.interconnect;
                    event_wait = data.event_wait;
                    processes = data.processes;
                    self.last_success_unix = now_unix;
                    nvml_up = true;
                    no_gpm = reader.without_gpm();
                }
                Err(e) => {
                    *self
                        .nvml_errors
                        .entry(crate::gpu::reader::read_error_reason(&e))
                        .or_default() += 1;
                    warn!("NVML did not answer this tick: {e}");
                }
            }
        }
        let mut dcgm = self.dcgm_values(&mut snap, &no_gpm, now_unix);
        // The verdict from everything read, watched fields included, with what /status shows
        // of it (the exported fields only); then the entities keep only the exported slots,
        // and an empty DCGM health row gets the computed watches.
        snap.health = self.health.evaluate(&snap, &read_set, &self.counters);
        health::exported_only(&mut snap.entities, &self.counters);
        health::fill_dcgm_status(&mut snap.entities, &self.counters, &snap.health);
        if let Some(a) = self.attributor.as_mut() {
            a.attribute(&mut snap, &processes, now_unix);
        }
        let mut field_errors = self
            .reader
            .as_ref()
            .map(|r| r.field_errors())
            .unwrap_or_default();
        if !self.nvml_errors.is_empty() {
            field_errors.extend(
                self.nvml_errors
                    .iter()
                    .map(|(reason, n)| ("nvml_device_count", *reason, *n)),
            );
            field_errors.sort();
        }
        // A value that is unsupported on its entity (DCGM refused it there, or its library
        // cannot be used and NVML decided) is listed there, not also as unserved.
        let unsupported = self.unsupported(&snap);
        // A profiling field some GPU model of a mixed node lacks, under a profile that serves
        // only the common ones: cleared on every entity, listed as withheld (not unserved).
        let withheld = match self.common_profiling.as_mut() {
            Some(c) => c.decide(&snap.devices, &unsupported, &self.counters),
            None => Vec::new(),
        };
        common::withhold(&mut snap.entities, &self.counters, &withheld);
        dcgm.unserved.retain(|u| {
            !unsupported.iter().any(|x| {
                x.gpu == u.gpu && x.gpu_instance_id == u.gpu_instance_id && x.field == u.field
            }) && !withheld.iter().any(|w| w.field == u.field)
        });
        snap.stats = SampleStats {
            // NVML reading time: the wait for the Xid thread to catch up is not included.
            duration: started.elapsed().saturating_sub(event_wait),
            field_errors,
            last_success_unix: self.last_success_unix,
            ticks: self.ticks,
            unsupported,
            withheld,
            nvml_up,
            dcgm,
            counters_reload: self.counters_file.as_ref().map(|f| f.stats().clone()),
            process: self.exporter_metrics.then(read_process).flatten(),
        };
        snap
    }
}

impl Sampler {
    /// Asks DCGM for this tick's values of the entities of GPUs without GPM and each GPU's
    /// health checks, and fills them in (waiting at most the DCGM deadline); DCGM's state
    /// after it (off without DCGM), with the profiling values it should have filled and did
    /// not.
    fn dcgm_values(
        &mut self,
        snap: &mut Snapshot,
        no_gpm: &std::collections::HashSet<String>,
        now_unix: f64,
    ) -> DcgmStatus {
        let rows: Vec<&CounterRow> = self.counters.metrics().collect();
        let switch_rows = rows.iter().any(|r| r.field.level == Level::Switch);
        let Some(client) = self.dcgm.as_mut() else {
            snap.switches_not_served = switch_rows.then(|| {
                "DCGM is off (--dcgm-mode off), and only DCGM serves NVSwitch fields".to_owned()
            });
            self.switch_gap_lasting = true;
            return DcgmStatus::default();
        };
        let label_rows: Vec<&CounterRow> = self.counters.labels().collect();
        let mut wanted = dcgm::wanted(&snap.entities, &rows, no_gpm, &self.options.collections);
        wanted.switch_fields =
            dcgm::switch_label_fields(wanted.switch_fields, &label_rows, &self.options.collections);
        let out = client.tick(&wanted, now_unix);
        dcgm::merge(&mut snap.entities, &rows, &out.values, no_gpm);
        let mut status = client.status();
        status.unserved = dcgm::unserved(&snap.entities, &rows, no_gpm, client.refused());
        dcgm::merge_health(&mut snap.entities, &rows, &out.health);
        let sw = &out.switch;
        if let Some(Ok(list)) = &sw.switches {
            let both = (rows.as_slice(), label_rows.as_slice());
            snap.switches = dcgm::switch_samples(both, list, &sw.texts, &sw.ports);
        }
        snap.switch_selection_note.clone_from(&sw.note);
        snap.switches_not_served = match dcgm::switches_not_served(sw.switches.as_ref()) {
            _ if !switch_rows => None,
            Some(why) => Some(why),
            None if sw.switches.is_some() => None,
            None if !client.may_serve() => Some(
                "the DCGM library cannot be used (see the log), and only DCGM serves NVSwitch \
                 fields"
                    .to_owned(),
            ),
            None => Some(format!(
                "DCGM did not answer this tick ({})",
                out.why.as_deref().unwrap_or("no answer")
            )),
        };
        self.switch_gap_lasting = sw.switches.is_some() || !client.may_serve();
        status
    }

    /// The fields found unsupported: the reader's, and those DCGM refused on entities of
    /// this tick.
    fn unsupported(&self, snap: &Snapshot) -> Vec<crate::snapshot::Unsupported> {
        let mut out = self
            .reader
            .as_ref()
            .map(|r| r.unsupported().to_vec())
            .unwrap_or_default();
        // A field read only for the health model is not listed: the list is about the
        // counters file's rows.
        out.retain(|u| self.counters.rows.iter().any(|r| r.field.name == u.field));
        // Switch rows not served for a lasting reason (DCGM off or unusable, no switch listed):
        // listed on each physical GPU, as NVML's unsupported fields are.
        if snap.switches_not_served.is_some() && self.switch_gap_lasting {
            for e in snap.entities.iter().filter(|e| e.id.mig.is_none()) {
                for row in self.counters.metrics() {
                    if row.field.level == Level::Switch {
                        out.push(crate::snapshot::Unsupported {
                            gpu: e.id.gpu,
                            gpu_instance_id: None,
                            field: row.field.name,
                        });
                    }
                }
            }
        }
        let Some(client) = self.dcgm.as_ref() else {
            out.sort();
            out.dedup();
            return out;
        };
        for e in &snap.entities {
            let gi = e.id.mig.as_ref().map(|m| m.gpu_instance_id);
            for (t, f) in client.refused().keys() {
                if t.uuid == e.id.uuid
                    && t.gi == gi
                    && let Some(def) = crate::catalogue::by_id(u32::from(*f))
                {
                    out.push(crate::snapshot::Unsupported {
                        gpu: e.id.gpu,
                        gpu_instance_id: gi,
                        field: def.name,
                    });
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

/// The process's figures; a failure is logged (at debug: it repeats every tick) and leaves
/// the `process_*` families out of this tick.
fn read_process() -> Option<crate::base::process::ProcessFigures> {
    match crate::base::process::read_self() {
        Ok(f) => Some(f),
        Err(e) => {
            tracing::debug!("{e}");
            None
        }
    }
}

/// Runs the sampler on its own thread until `stop` is set (then unpark the returned handle's
/// thread: it waits for the next tick parked), publishing each tick into `shared` with what
/// `owners` (the server, the Kubernetes writers) have counted by then. Ticks are scheduled on
/// a fixed grid (no drift); a tick that overruns the interval skips the missed slots.
pub fn spawn(
    mut sampler: Sampler,
    interval: Duration,
    opts: EncodeOptions,
    shared: Arc<Shared>,
    owners: CountOwners,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("sampler".into())
        .spawn(move || {
            let mut next = Instant::now();
            while !stop.load(Ordering::Acquire) {
                let snap = sampler.tick(unix_now());
                let ready = snap.stats.nvml_up;
                let counters = Arc::clone(sampler.counters());
                shared.publish(render(snap, &owners.read(), &counters, &opts), ready);
                next += interval;
                let now = Instant::now();
                while next <= now {
                    next += interval;
                }
                // Parked until the next tick: one wake-up per tick at idle. Whoever sets `stop`
                // unparks this thread, so shutdown is prompt; an early (spurious) wake-up
                // parks again.
                while !stop.load(Ordering::Acquire) {
                    let now = Instant::now();
                    if now >= next {
                        break;
                    }
                    std::thread::park_timeout(next - now);
                }
            }
        })
}
