//! The self-metric figures that layers above the exposition count: the HTTP server's cut
//! connections (`serve`) and the Kubernetes writers' figures (`notify`).
//!
//! Each owner keeps its own counters and lends them to the exposition as a [`CountOwner`];
//! the daemon collects the owners in [`CountOwners`], which the sampler reads into one
//! plain [`Counted`] value each time it encodes a page. The figure types the owners fill
//! ([`KubeWrites`] and its labels) are declared here, below their owners, so that the
//! exposition reads them without naming a higher layer. Nothing here counts by itself,
//! encodes, or is carried in a snapshot.

use std::fmt;
use std::sync::Arc;

/// What the layers above the exposition had counted when a page was encoded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counted {
    /// Connections the HTTP server cut because their unread responses held replaced pages
    /// over its memory budget, since start (`gpu_exporter_stalled_responses_cut_total`,
    /// written once above 0).
    pub stalled_responses_cut: u64,
    /// The Kubernetes writers' figures (Node conditions, Events), when they are on.
    pub kube_writes: Option<KubeWrites>,
}

/// An owner of counters that the self-metrics show.
pub trait CountOwner: Send + Sync + fmt::Debug {
    /// Writes this owner's figures so far into `counted`.
    fn count_into(&self, counted: &mut Counted);
}

/// The owners whose figures go into each encoded page (none: no such family is written).
#[derive(Debug, Clone, Default)]
pub struct CountOwners(Vec<Arc<dyn CountOwner>>);

impl CountOwners {
    /// Adds `owner`: its figures are read at every following [`CountOwners::read`].
    pub fn add(&mut self, owner: Arc<dyn CountOwner>) {
        self.0.push(owner);
    }

    /// Every owner's figures now.
    pub fn read(&self) -> Counted {
        let mut counted = Counted::default();
        for owner in &self.0 {
            owner.count_into(&mut counted);
        }
        counted
    }
}

/// What the Kubernetes writers did since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KubeWrites {
    /// Node condition patches that worked.
    pub conditions_ok: u64,
    /// Node condition patches that failed (refused, errored, unreachable).
    pub conditions_failed: u64,
    /// Node condition patches with no answer within the deadline.
    pub conditions_timed_out: u64,
    /// Events written.
    pub events_ok: u64,
    /// Events that failed (refused, errored, unreachable).
    pub events_failed: u64,
    /// Events with no answer within the deadline.
    pub events_timed_out: u64,
    /// Events dropped, by reason ([`DropReason`] order).
    pub dropped_by: [u64; DropReason::ALL.len()],
    /// Events merged into a waiting Event for the same object and cause.
    pub merged: u64,
    /// Whether the last write worked (true before any).
    pub last_ok: bool,
}

impl KubeWrites {
    /// Events dropped, whatever the reason.
    pub fn dropped(&self) -> u64 {
        self.dropped_by.iter().sum()
    }

    /// Events dropped for `reason`.
    pub fn dropped_for(&self, reason: DropReason) -> u64 {
        self.dropped_by[reason as usize]
    }
}

/// Why an Event was dropped (`reason` in `gpu_exporter_kube_writes_dropped_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The queue was full (a new pod Event, or a pod Event that made room for a Node Event).
    QueueFull,
    /// Failed in ways that may pass for longer than its retry time.
    RetriesExpired,
    /// The API server refused it for good (400, 404, 409, 422, …).
    Rejected,
    /// The request could not be built (a name or namespace a URI cannot carry).
    Invalid,
}

impl DropReason {
    /// Every reason, in the order of [`KubeWrites::dropped_by`].
    pub const ALL: [DropReason; 4] = [
        DropReason::QueueFull,
        DropReason::RetriesExpired,
        DropReason::Rejected,
        DropReason::Invalid,
    ];

    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::RetriesExpired => "retries_expired",
            DropReason::Rejected => "rejected",
            DropReason::Invalid => "invalid",
        }
    }
}

/// What a Kubernetes write wrote (`kind` in `gpu_exporter_kube_writes_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KubeWriteKind {
    /// A patch of the Node's conditions.
    Condition,
    /// An Event.
    Event,
}

/// How a Kubernetes write ended (`result` in `gpu_exporter_kube_writes_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Written.
    Success,
    /// Refused, errored or unreachable.
    Failure,
    /// No answer within the deadline.
    Timeout,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Cut(u64);

    impl CountOwner for Cut {
        fn count_into(&self, counted: &mut Counted) {
            counted.stalled_responses_cut += self.0;
        }
    }

    /// No owner counts nothing; each owner's figures are read at every read.
    #[test]
    fn owners_are_read_together() {
        let mut owners = CountOwners::default();
        assert_eq!(owners.read(), Counted::default());
        owners.add(Arc::new(Cut(2)));
        owners.add(Arc::new(Cut(3)));
        assert_eq!(owners.read().stalled_responses_cut, 5);
        assert_eq!(owners.read().kube_writes, None);
    }
}
