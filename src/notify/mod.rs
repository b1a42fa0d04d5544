//! Carries the health verdict into Kubernetes, opt-in: the exporter's own Node conditions
//! (`--kubernetes-node-conditions`) and Events on the Node and on the pods that hold a GPU or
//! MIG instance that was hit (`--kubernetes-events`).
//!
//! A task on the runtime reads each published snapshot (never the sampler's tick, never a
//! scrape), plans what it calls for (`plan`) and hands it to the writers (`writer`): the
//! conditions as a latest-wins value, written by a task of their own (first in importance),
//! the Events through a bounded queue (`queue`) that takes the Node's before the pods' and a
//! first Event for an object and cause before any repeat, merges repeats into one write per
//! object and cause (then one series update each 30 s), and when full drops pod Events of the
//! most crowded cause first, counted. An API server that refuses, errors, is slow or cannot be
//! reached changes nothing but the `gpu_exporter_kube_*` self-metrics, which this module counts
//! itself (`counts`), and one log line per change of state. It must not read NVML, the kubelet
//! or the counters, or decide health (the `health` layer does).

pub mod counts;
pub mod plan;
pub mod queue;
pub mod writer;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tracing::{info, warn};

use crate::exposition::counted::DropReason;
use crate::exposition::publish::Shared;
use counts::WriteCounts;
use plan::Planner;
use queue::{EventQueue, Overflow, Pushed};

/// Logs a change of the Event queue's overflow state (one line each way per burst).
fn log_overflow(change: Option<Overflow>, capacity: usize) {
    match change {
        Some(Overflow::Started) => warn!(
            "the Kubernetes Event queue is full ({capacity} new Events wait); new pod Events are \
             dropped, those of the cause with the most waiting first, and counted in \
             gpu_exporter_kube_writes_dropped_total{{reason=\"queue_full\"}} (logged again when \
             none has been dropped for {} s)",
            queue::QUIET.as_secs()
        ),
        Some(Overflow::Ended { dropped, lasted }) => info!(
            "the Kubernetes Event queue has room again: {dropped} Events were dropped while it \
             was full ({} s from the first drop to the last)",
            lasted.as_secs()
        ),
        None => {}
    }
}

/// First Events (an object and cause with no Event yet) waiting to be written at most; a
/// repeat takes no place. Beyond it pod Events are dropped first, and counted.
pub const QUEUE: usize = 256;

/// How long one API call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// How long an Event is retried after failures that may pass before it is given up: past
/// it the Event's news is stale, and the Node conditions carry the current state.
pub const EVENT_RETRY_FOR: Duration = Duration::from_secs(600);

/// What to write, and where.
#[derive(Debug, Clone)]
pub struct NotifyOptions {
    /// The Node the exporter runs on (`NODE_NAME`).
    pub node: String,
    /// Write the exporter's Node conditions.
    pub conditions: bool,
    /// Write Events.
    pub events: bool,
    /// How often a new snapshot is looked for (the tick interval).
    pub interval: Duration,
    /// The deadline of one API call.
    pub timeout: Duration,
    /// The Event queue's size.
    pub queue: usize,
    /// How long an Event is retried after failures that may pass, counted from when it
    /// was planned, before it is given up ([`EVENT_RETRY_FOR`]).
    pub event_retry_for: Duration,
}

/// Starts the planner and the writers on `rt`, reading the snapshots published in `shared`
/// and counting into `counts` (whose figures the daemon hands to the exposition).
pub fn spawn(
    client: kube::Client,
    opts: NotifyOptions,
    shared: Arc<Shared>,
    counts: Arc<WriteCounts>,
    rt: &tokio::runtime::Handle,
) {
    info!(
        node = %opts.node,
        conditions = opts.conditions,
        events = opts.events,
        "writing GPU health to Kubernetes"
    );
    let (cond_tx, cond_rx) = watch::channel(Vec::new());
    if opts.conditions {
        rt.spawn(writer::conditions(
            client.clone(),
            opts.node.clone(),
            opts.timeout,
            cond_rx,
            Arc::clone(&counts),
        ));
    }
    let queue = Arc::new(EventQueue::new(opts.queue));
    if opts.events {
        rt.spawn(writer::events(
            client,
            opts.node.clone(),
            opts.timeout,
            opts.event_retry_for,
            Arc::clone(&queue),
            Arc::clone(&counts),
        ));
    }
    rt.spawn(async move {
        let mut planner = Planner::default();
        let mut last = None;
        let mut tick = tokio::time::interval(opts.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if opts.events {
                log_overflow(queue.tick(tokio::time::Instant::now()), opts.queue);
            }
            if !shared.has_published() {
                continue;
            }
            let published = shared.load();
            let snap = &published.snapshot;
            if last.as_ref().is_some_and(|l| Arc::ptr_eq(l, snap)) {
                continue;
            }
            last = Some(Arc::clone(snap));
            if opts.conditions {
                let want = plan::conditions(snap);
                cond_tx.send_if_modified(|c| {
                    let changed = *c != want;
                    if changed {
                        *c = want;
                    }
                    changed
                });
            }
            if opts.events {
                let now = tokio::time::Instant::now();
                for e in planner.events(snap) {
                    match queue.push(e, now) {
                        Pushed::Merged => counts.merged(),
                        p if p.dropped_one() => counts.dropped(DropReason::QueueFull),
                        _ => {}
                    }
                }
                // A burst that starts here is logged now, not an interval later.
                log_overflow(queue.tick(now), opts.queue);
            }
        }
    });
}
