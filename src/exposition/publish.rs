//! The hand-over point between the sampler and the HTTP server.
//!
//! The sampler builds a [`Published`] (snapshot + encoded exposition, plain and gzip) once per
//! tick ([`render`]: encode and compress a snapshot) and swaps it in atomically; HTTP handlers
//! load the current one without a lock and serve its bytes. It also keeps the time of the last
//! publish, for the watchdog (a sampler that has stopped publishing, or has not published since
//! start, is "stalled"), and the one figure the server hands back to the self-metrics
//! (connections cut for holding old pages unread). Nothing here does NVML, kubelet or API work.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use bytes::Bytes;

use crate::catalogue::csv::CounterSet;
use crate::exposition::{EncodeOptions, encode, gzip};
use crate::snapshot::{DropReason, KubeWriteKind, KubeWrites, Snapshot, WriteOutcome};

/// One tick's output, ready to serve.
#[derive(Debug)]
pub struct Published {
    /// The snapshot the bytes were encoded from (for the landing page).
    pub snapshot: Arc<Snapshot>,
    /// The counter set the snapshot was read with.
    pub counters: Arc<CounterSet>,
    /// Text exposition 0.0.4.
    pub plain: Bytes,
    /// The same bytes, gzip-compressed.
    pub gzip: Bytes,
}

/// Shared between the sampler (writer) and the HTTP handlers (readers).
#[derive(Debug)]
pub struct Shared {
    current: ArcSwap<Published>,
    ready: AtomicBool,
    /// When this was created; `published_ms` counts from it.
    born: Instant,
    /// Milliseconds from `born` to the last publish (0 before the first).
    published_ms: AtomicU64,
    /// Whether anything has been published since `born`.
    published_once: AtomicBool,
    /// Milliseconds without a publish after which the sampler counts as stalled (the watchdog;
    /// `u64::MAX`: off).
    stall_after_ms: AtomicU64,
    /// Connections the server cut because their unread responses held replaced pages over its
    /// memory budget.
    stalled_responses_cut: AtomicU64,
    /// The Kubernetes writers' figures (`None` until they start).
    kube_writes: std::sync::Mutex<Option<KubeWrites>>,
}

impl Shared {
    /// Shared state serving `initial` until the first tick is published. The watchdog is off
    /// until [`Shared::set_stall_after`] arms it.
    pub fn new(initial: Published) -> Self {
        Self {
            current: ArcSwap::from_pointee(initial),
            ready: AtomicBool::new(false),
            born: Instant::now(),
            published_ms: AtomicU64::new(0),
            published_once: AtomicBool::new(false),
            stall_after_ms: AtomicU64::new(u64::MAX),
            stalled_responses_cut: AtomicU64::new(0),
            kube_writes: std::sync::Mutex::new(None),
        }
    }

    fn with_kube_writes(&self, f: impl FnOnce(&mut KubeWrites)) {
        let mut g = self.kube_writes.lock().unwrap_or_else(|p| p.into_inner());
        f(g.get_or_insert_with(KubeWrites::default));
    }

    /// Marks the Kubernetes writers as on (their self-metrics appear, at zero).
    pub fn enable_kube_writes(&self) {
        self.with_kube_writes(|_| {});
    }

    /// Counts one write of `kind` and how it ended.
    pub fn count_kube_write(&self, kind: KubeWriteKind, outcome: WriteOutcome) {
        self.with_kube_writes(|w| {
            let slot = match (kind, outcome) {
                (KubeWriteKind::Condition, WriteOutcome::Success) => &mut w.conditions_ok,
                (KubeWriteKind::Condition, WriteOutcome::Failure) => &mut w.conditions_failed,
                (KubeWriteKind::Condition, WriteOutcome::Timeout) => &mut w.conditions_timed_out,
                (KubeWriteKind::Event, WriteOutcome::Success) => &mut w.events_ok,
                (KubeWriteKind::Event, WriteOutcome::Failure) => &mut w.events_failed,
                (KubeWriteKind::Event, WriteOutcome::Timeout) => &mut w.events_timed_out,
            };
            *slot += 1;
            w.last_ok = outcome == WriteOutcome::Success;
        });
    }

    /// Counts one Event dropped, and why.
    pub fn count_kube_write_dropped(&self, reason: DropReason) {
        self.with_kube_writes(|w| w.dropped_by[reason as usize] += 1);
    }

    /// Counts one Event merged into a waiting one for the same object and cause.
    pub fn count_kube_event_merged(&self) {
        self.with_kube_writes(|w| w.merged += 1);
    }

    /// The Kubernetes writers' figures so far (`None`: they are off).
    pub fn kube_writes(&self) -> Option<KubeWrites> {
        *self.kube_writes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts `n` connections cut by the server for holding old pages unread.
    pub fn count_stalled_responses_cut(&self, n: u64) {
        self.stalled_responses_cut.fetch_add(n, Ordering::Relaxed);
    }

    /// Connections cut by the server for holding old pages unread, since start.
    pub fn stalled_responses_cut(&self) -> u64 {
        self.stalled_responses_cut.load(Ordering::Relaxed)
    }

    /// Arms the watchdog with its limit (the daemon uses several sampling intervals).
    pub fn set_stall_after(&self, limit: Duration) {
        self.stall_after_ms.store(
            u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
            Ordering::Release,
        );
    }

    /// How long the sampler has gone without publishing, when that is longer than the
    /// watchdog limit: a frozen sampler, whose numbers must not pass for fresh. Before its
    /// first publish this counts from the creation of this value, so that a first tick that
    /// never ends (loading or initialising NVML hung) is a stall too.
    pub fn stalled_for(&self) -> Option<Duration> {
        let now = u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX);
        let since = now.saturating_sub(self.published_ms.load(Ordering::Acquire));
        (since > self.stall_after_ms.load(Ordering::Acquire)).then(|| Duration::from_millis(since))
    }

    /// Whether the sampler has published a tick since start (else the output is the initial
    /// one, with no sample in it).
    pub fn has_published(&self) -> bool {
        self.published_once.load(Ordering::Acquire)
    }

    /// The current output.
    pub fn load(&self) -> Arc<Published> {
        self.current.load_full()
    }

    /// Replaces the current output. `ready` marks a tick in which NVML answered.
    pub fn publish(&self, p: Published, ready: bool) {
        self.current.store(Arc::new(p));
        self.published_ms.store(
            u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX),
            Ordering::Release,
        );
        self.published_once.store(true, Ordering::Release);
        if ready {
            self.ready.store(true, Ordering::Release);
        }
    }

    /// `true` once a snapshot with GPU data has been encoded, unless the sampler has stalled
    /// since (see [`Shared::stalled_for`]).
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire) && self.stalled_for().is_none()
    }
}

/// Encodes a snapshot into a publishable value: the page and its gzip. The compressor is made
/// for this call and dropped after it: kept from tick to tick, its tables (about 370 KiB)
/// would stay resident while the exporter is idle (with large blocks mapped on their own,
/// `base::process::heap_settings`, they go back to the kernel when dropped).
pub fn render(snapshot: Snapshot, counters: &Arc<CounterSet>, opts: &EncodeOptions) -> Published {
    let plain = encode(&snapshot, counters, opts);
    let gz = gzip(&plain);
    Published {
        snapshot: Arc::new(snapshot),
        counters: Arc::clone(counters),
        plain: plain.into(),
        gzip: gz.into(),
    }
}
