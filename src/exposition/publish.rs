//! The hand-over point between the sampler and its readers (the HTTP server, the Kubernetes
//! writers).
//!
//! The sampler builds a [`Published`] (snapshot + encoded exposition, plain and gzip) once per
//! tick ([`render`]: encode and compress a snapshot with the figures the layers above counted,
//! `counted`) and swaps it in atomically; readers load the current one without a lock. It also
//! keeps the time of the last publish, for the watchdog (a sampler that has stopped publishing,
//! or has not published since start, is "stalled"). It carries nothing back from its readers:
//! what they count they own (`counted::CountOwner`). Nothing here does NVML, kubelet or API
//! work.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use bytes::Bytes;

use crate::catalogue::csv::CounterSet;
use crate::exposition::counted::Counted;
use crate::exposition::{EncodeOptions, encode, gzip};
use crate::snapshot::Snapshot;

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

/// Shared between the sampler (writer) and the HTTP handlers and Kubernetes writers (readers).
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
        }
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

/// Encodes a snapshot, with what the layers above had `counted`, into a publishable value: the
/// page and its gzip. The compressor is made for this call and dropped after it: kept from
/// tick to tick, its tables (about 370 KiB) would stay resident while the exporter is idle
/// (with large blocks mapped on their own, `base::process::heap_settings`, they go back to the
/// kernel when dropped).
pub fn render(
    snapshot: Snapshot,
    counted: &Counted,
    counters: &Arc<CounterSet>,
    opts: &EncodeOptions,
) -> Published {
    let plain = encode(&snapshot, counted, counters, opts);
    let gz = gzip(&plain);
    Published {
        snapshot: Arc::new(snapshot),
        counters: Arc::clone(counters),
        plain: plain.into(),
        gzip: gz.into(),
    }
}
