//! The hand-over point between the sampler and the HTTP server.
//!
//! The sampler builds a [`Published`] (snapshot + encoded exposition, plain and gzip) once per
//! tick and swaps it in atomically; HTTP handlers load the current one without a lock and
//! serve its bytes. Nothing here does NVML, kubelet or API work.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arc_swap::ArcSwap;
use bytes::Bytes;

use crate::catalogue::csv::CounterSet;
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

/// Shared between the sampler (writer) and the HTTP handlers (readers).
#[derive(Debug)]
pub struct Shared {
    current: ArcSwap<Published>,
    ready: AtomicBool,
}

impl Shared {
    /// Shared state serving `initial` until the first tick is published.
    pub fn new(initial: Published) -> Self {
        Self {
            current: ArcSwap::from_pointee(initial),
            ready: AtomicBool::new(false),
        }
    }

    /// The current output.
    pub fn load(&self) -> Arc<Published> {
        self.current.load_full()
    }

    /// Replaces the current output. `ready` marks a tick in which NVML answered.
    pub fn publish(&self, p: Published, ready: bool) {
        self.current.store(Arc::new(p));
        if ready {
            self.ready.store(true, Ordering::Release);
        }
    }

    /// `true` once a snapshot with GPU data has been encoded.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }
}
