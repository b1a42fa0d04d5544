//! Xid events, read on their own thread so that none is missed between ticks.
//!
//! One NVML event set holds every watched GPU (`nvmlDeviceRegisterEvents` with
//! `CRITICAL_XID_ERROR`); the thread blocks in `nvmlEventSetWait_v2` (called through
//! nvml-wrapper-sys, since nvml-wrapper's `EventData` drops the instance ids) and records each
//! event: the last code per GPU (`DCGM_FI_DEV_XID_ERRORS`), a count and last-seen time per code
//! (`gpu_xid_errors_total`, `gpu_xid_last_seen_timestamp_seconds`), and a short history for
//! `DCGM_EXP_XID_ERRORS_COUNT`. Repeats of the same code are counted, which dcgm-exporter's
//! last-value gauge cannot show. The same counts are also kept apart by the MIG GPU instance
//! NVML reported the event with (`gpuInstanceId`; `0xFFFFFFFF` is none), for the health
//! model's per-instance verdicts; they are never exported.
//!
//! The reader tells the watcher which GPUs are up ([`XidWatcher::watch`]); a change rebuilds the
//! set, so a lost GPU leaves it and a returning or new one joins. [`XidWatcher::flush`] lets a
//! tick wait until every event pending when it was called has been recorded, so a tick sees
//! the events that happened before it. Counts are keyed by GPU UUID and survive the GPU going
//! down: the Xid 79 that announces a lost GPU stays visible.
//!
//! Only this thread and the reader call NVML after start-up; it must not encode or attribute.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper::{EventSet, Nvml};
use nvml_wrapper_sys::bindings::nvmlEventData_t;
use tracing::{info, warn};

/// NVML's code for an Xid it could not decode.
pub const UNKNOWN_XID: u64 = 999;

/// `nvmlEventData_t.gpuInstanceId` of an event that no GPU instance reported.
const NO_INSTANCE: u32 = 0xFFFF_FFFF;

/// Per code: (occurrences, Unix time of the last one).
pub type CodeCounts = BTreeMap<u64, (u64, f64)>;

/// A clock for event time stamps (Unix seconds). Production uses the wall clock; tests use
/// the simulated node's time so that windows line up with the ticks they drive.
pub type Clock = Arc<dyn Fn() -> f64 + Send + Sync>;

/// What is known of one GPU's Xids.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuXids {
    /// The last code seen (`None` until the first).
    pub last: Option<u64>,
    /// Per code: (occurrences, Unix time of the last one).
    pub codes: CodeCounts,
    /// The same, for the events NVML reported without a GPU instance.
    pub whole_gpu: CodeCounts,
    /// The same, per MIG GPU instance id, for the events NVML reported with one.
    pub instances: BTreeMap<u32, CodeCounts>,
    /// Recent events (time, code), oldest first, kept for the longest window.
    pub recent: VecDeque<(f64, u64)>,
}

impl GpuXids {
    /// Occurrences per code with a time stamp in `(now - window, now]`, sorted by code.
    pub fn window_counts(&self, now: f64, window: Duration) -> Vec<(u64, u64)> {
        let from = now - window.as_secs_f64();
        let mut out: BTreeMap<u64, u64> = BTreeMap::new();
        for (t, code) in &self.recent {
            if *t > from && *t <= now {
                *out.entry(*code).or_default() += 1;
            }
        }
        out.into_iter().collect()
    }
}

/// Whether a GPU's Xid events are being watched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// Registered in the event set.
    Watching,
    /// The GPU does not offer Xid events (or registering failed; the log says why).
    Unsupported,
}

#[derive(Default)]
struct State {
    /// GPUs to watch: (NVML index, for the log; UUID, which the handle is looked up by).
    wanted: Vec<(u32, String)>,
    wanted_gen: u64,
    gpus: HashMap<String, GpuXids>,
    watch: HashMap<String, Watch>,
    flush_req: u64,
    flush_done: u64,
    stop: bool,
}

struct Inner {
    state: Mutex<State>,
    cv: Condvar,
    clock: Clock,
    keep: Duration,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep using it.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks flush request `req` (and every earlier one) answered and wakes the waiters.
    /// Returns the guard so that the caller may go on waiting under the same lock.
    fn answer_flush(&self, req: u64) -> MutexGuard<'_, State> {
        let mut st = self.lock();
        st.flush_done = st.flush_done.max(req);
        self.cv.notify_all();
        st
    }
}

/// The Xid thread and what it has recorded.
pub struct XidWatcher {
    inner: Arc<Inner>,
    thread: Option<JoinHandle<()>>,
}

impl XidWatcher {
    /// Starts the thread. `poll` bounds each blocking wait (and so how long a flush or a stop
    /// can take); `keep` is how long events are kept for windows (the longest window).
    pub fn start(
        nvml: &'static Nvml,
        poll: Duration,
        keep: Duration,
        clock: Clock,
    ) -> std::io::Result<Self> {
        let inner = Arc::new(Inner {
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
            clock,
            keep,
        });
        let t = Arc::clone(&inner);
        let thread = std::thread::Builder::new()
            .name("xid-events".into())
            .spawn(move || run(nvml, &t, poll))?;
        Ok(Self {
            inner,
            thread: Some(thread),
        })
    }

    /// Sets the GPUs to watch; the event set is rebuilt when the list changed. Returns
    /// whether it changed (then a [`flush`](Self::flush) waits for the new registration).
    pub fn watch(&self, gpus: &[(u32, String)]) -> bool {
        let mut st = self.inner.lock();
        if st.wanted == gpus {
            return false;
        }
        st.wanted = gpus.to_vec();
        st.wanted_gen += 1;
        self.inner.cv.notify_all();
        true
    }

    /// Waits (at most `timeout`) until every event pending now has been recorded. Returns
    /// `false` on time-out.
    pub fn flush(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.inner.lock();
        st.flush_req += 1;
        let want = st.flush_req;
        self.inner.cv.notify_all();
        while st.flush_done < want {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            st = match self.inner.cv.wait_timeout(st, deadline - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
        true
    }

    /// Whether the GPU's events are watched (`None`: not tried yet).
    pub fn status(&self, uuid: &str) -> Option<Watch> {
        self.inner.lock().watch.get(uuid).copied()
    }

    /// A copy of what is known for the GPU.
    pub fn get(&self, uuid: &str) -> Option<GpuXids> {
        self.inner.lock().gpus.get(uuid).cloned()
    }
}

impl Drop for XidWatcher {
    fn drop(&mut self) {
        self.inner.lock().stop = true;
        self.inner.cv.notify_all();
        if let Some(t) = self.thread.take()
            && t.join().is_err()
        {
            warn!("the Xid event thread panicked");
        }
    }
}

/// An event set with the GPUs registered in it, by raw handle.
struct Registered {
    set: EventSet<'static>,
    handles: Vec<(usize, String)>,
}

fn run(nvml: &'static Nvml, inner: &Inner, poll: Duration) {
    let poll_ms = u32::try_from(poll.as_millis()).unwrap_or(u32::MAX).max(1);
    let mut set: Option<Registered> = None;
    let mut built_gen = u64::MAX;
    let mut last_error: Option<String> = None;
    loop {
        let (flush_req, wanted) = {
            let st = inner.lock();
            if st.stop {
                return;
            }
            let wanted = (st.wanted_gen != built_gen).then(|| {
                built_gen = st.wanted_gen;
                st.wanted.clone()
            });
            (st.flush_req, wanted)
        };
        if let Some(wanted) = wanted {
            // Record what the old set still holds, free it, and register the devices again.
            // (A GPU that left the list keeps its counts and its last known status.)
            if let Some(old) = set.take() {
                drain(nvml, inner, &old);
            }
            let (reg, watch) = register(nvml, &wanted);
            set = reg;
            inner.lock().watch.extend(watch);
        }
        let Some(reg) = &set else {
            // Nothing to wait on: answer flushes and sleep until told otherwise.
            let st = inner.answer_flush(flush_req);
            if !st.stop && st.wanted_gen == built_gen && st.flush_req == flush_req {
                let _ = inner.cv.wait_timeout(st, poll);
            }
            continue;
        };
        match wait(nvml, reg, poll_ms) {
            Ok(ev) => {
                last_error = None;
                deliver(inner, reg, &ev);
            }
            Err(NvmlError::Timeout) => drop(inner.answer_flush(flush_req)),
            Err(e) => {
                // A GPU in the set fell off the bus, or the driver went away. Answer the
                // flush (nothing more can be read), pause, and rebuild the set: the reader
                // stops listing a lost GPU, and the new set leaves it out.
                let msg = e.to_string();
                if last_error.as_deref() != Some(msg.as_str()) {
                    warn!("waiting for Xid events failed: {msg}; rebuilding the event set");
                    last_error = Some(msg);
                }
                drop(inner.answer_flush(flush_req));
                set = None;
                built_gen = u64::MAX;
                std::thread::sleep(poll);
            }
        }
    }
}

/// One event as NVML gave it: the device's raw handle, the Xid code, the GPU instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RawEvent {
    device: usize,
    code: u64,
    gpu_instance: Option<u32>,
}

impl RawEvent {
    fn from_data(d: &nvmlEventData_t) -> Self {
        let xid =
            EventTypes::from_bits_truncate(d.eventType).contains(EventTypes::CRITICAL_XID_ERROR);
        Self {
            device: d.device as usize,
            code: if xid { d.eventData } else { UNKNOWN_XID },
            gpu_instance: (d.gpuInstanceId != NO_INSTANCE).then_some(d.gpuInstanceId),
        }
    }
}

/// `nvmlEventSetWait_v2` on the set, keeping the GPU instance id of the event.
fn wait(nvml: &Nvml, reg: &Registered, timeout_ms: u32) -> Result<RawEvent, NvmlError> {
    let sym = super::sym(nvml.lib().nvmlEventSetWait_v2.as_ref())?;
    // SAFETY: the set is alive (owned by `reg`) and only read here; the data is written by
    // NVML into a zeroed plain C struct that outlives the call.
    unsafe {
        let mut data: nvmlEventData_t = std::mem::zeroed();
        nvml_try(sym(reg.set.handle(), &mut data, timeout_ms))?;
        Ok(RawEvent::from_data(&data))
    }
}

/// Records one event of the set.
fn deliver(inner: &Inner, reg: &Registered, ev: &RawEvent) {
    let Some((_, uuid)) = reg.handles.iter().find(|(x, _)| *x == ev.device) else {
        return;
    };
    record(inner, uuid, ev.code, ev.gpu_instance);
}

/// Records every event the set holds now (bounded), before it is freed.
fn drain(nvml: &Nvml, inner: &Inner, reg: &Registered) {
    for _ in 0..10_000 {
        match wait(nvml, reg, 0) {
            Ok(ev) => deliver(inner, reg, &ev),
            Err(_) => break,
        }
    }
}

/// Builds one event set holding every GPU in `wanted` that offers Xid events.
fn register(
    nvml: &'static Nvml,
    wanted: &[(u32, String)],
) -> (Option<Registered>, HashMap<String, Watch>) {
    let mut watch = HashMap::new();
    if wanted.is_empty() {
        return (None, watch);
    }
    let mut set = match nvml.create_event_set() {
        Ok(s) => s,
        Err(e) => {
            warn!("cannot create an NVML event set: {e}; Xid errors are not counted");
            for (_, uuid) in wanted {
                watch.insert(uuid.clone(), Watch::Unsupported);
            }
            return (None, watch);
        }
    };
    let mut handles = Vec::new();
    for (index, uuid) in wanted {
        // By UUID: the index may have moved since the reader read it (a GPU before it unbound),
        // and another GPU's events must never be counted under this one.
        let dev = match nvml.device_by_uuid(uuid.as_str()) {
            Ok(d) => d,
            Err(e) => {
                info!(gpu = index, "Xid events not watched on GPU {index}: {e}");
                watch.insert(uuid.clone(), Watch::Unsupported);
                continue;
            }
        };
        let supported = dev
            .supported_event_types()
            .map(|t| t.contains(EventTypes::CRITICAL_XID_ERROR));
        if !matches!(supported, Ok(true)) {
            let why = match supported {
                Err(e) => e.to_string(),
                Ok(_) => "the GPU does not offer Xid events".into(),
            };
            info!(
                gpu = index,
                uuid, "Xid events not watched on GPU {index}: {why}"
            );
            watch.insert(uuid.clone(), Watch::Unsupported);
            continue;
        }
        match dev.register_events(EventTypes::CRITICAL_XID_ERROR, set) {
            Ok(s) => {
                set = s;
                // SAFETY: the raw handle is only stored for comparison.
                handles.push((unsafe { dev.handle() } as usize, uuid.clone()));
                watch.insert(uuid.clone(), Watch::Watching);
            }
            Err(e) => {
                // nvml-wrapper frees the set when registering fails: start a new one for
                // the GPUs that follow, and register the earlier ones again.
                warn!(
                    gpu = index,
                    uuid, "registering Xid events on GPU {index} failed: {e}"
                );
                watch.insert(uuid.clone(), Watch::Unsupported);
                let ok: Vec<(u32, String)> = wanted
                    .iter()
                    .filter(|(_, u)| watch.get(u) != Some(&Watch::Unsupported))
                    .cloned()
                    .collect();
                let (reg, again) = register(nvml, &ok);
                watch.extend(again);
                return (reg, watch);
            }
        }
    }
    if handles.is_empty() {
        return (None, watch);
    }
    (Some(Registered { set, handles }), watch)
}

fn record(inner: &Inner, uuid: &str, code: u64, gpu_instance: Option<u32>) {
    let now = (inner.clock)();
    let mut st = inner.lock();
    let g = st.gpus.entry(uuid.to_owned()).or_default();
    g.last = Some(code);
    let scoped = match gpu_instance {
        Some(gi) => g.instances.entry(gi).or_default(),
        None => &mut g.whole_gpu,
    };
    for counts in [&mut g.codes, scoped] {
        let c = counts.entry(code).or_insert((0, now));
        c.0 += 1;
        c.1 = now;
    }
    g.recent.push_back((now, code));
    let keep_from = now - inner.keep.as_secs_f64();
    while g.recent.front().is_some_and(|(t, _)| *t <= keep_from) {
        g.recent.pop_front();
    }
    // Bounded whatever the window: a storm of events must not grow memory without limit.
    while g.recent.len() > 100_000 {
        g.recent.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_counts_repeats_inside_the_window_only() {
        let g = GpuXids {
            last: Some(48),
            recent: [(10.0, 31), (60.0, 48), (65.0, 48), (70.0, 48), (71.0, 79)]
                .into_iter()
                .collect(),
            ..GpuXids::default()
        };
        let w = Duration::from_secs(300);
        assert_eq!(g.window_counts(80.0, w), vec![(31, 1), (48, 3), (79, 1)]);
        let w = Duration::from_secs(15);
        // (60, 75]: the event at exactly 60 s has left the window.
        assert_eq!(g.window_counts(75.0, w), vec![(48, 2), (79, 1)]);
        assert_eq!(g.window_counts(74.0, w), vec![(48, 3), (79, 1)]);
        assert_eq!(g.window_counts(69.0, w), vec![(48, 2)]);
        assert_eq!(g.window_counts(9.0, w), vec![]);
    }

    #[test]
    fn an_event_keeps_its_gpu_instance_and_none_means_the_whole_gpu() {
        // SAFETY: a plain C struct; zero is a valid bit pattern for each field.
        let mut d: nvmlEventData_t = unsafe { std::mem::zeroed() };
        d.eventType = EventTypes::CRITICAL_XID_ERROR.bits();
        d.eventData = 31;
        d.gpuInstanceId = 7;
        let ev = RawEvent::from_data(&d);
        assert_eq!((ev.code, ev.gpu_instance), (31, Some(7)));
        d.gpuInstanceId = NO_INSTANCE;
        assert_eq!(RawEvent::from_data(&d).gpu_instance, None);
        d.eventType = EventTypes::DOUBLE_BIT_ECC_ERROR.bits();
        assert_eq!(RawEvent::from_data(&d).code, UNKNOWN_XID);
    }
}
