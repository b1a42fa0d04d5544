//! The Kubernetes writers' own counters: writes by kind and result, Events dropped by reason,
//! Events merged. The planner and the writers count here; the exposition reads the figures
//! through `exposition::counted::CountOwner` when the sampler encodes a page. It must not
//! write to the API or log.

use std::sync::{Mutex, PoisonError};

use crate::exposition::counted::{
    CountOwner, Counted, DropReason, KubeWriteKind, KubeWrites, WriteOutcome,
};

/// What the Kubernetes writers did since start; one per daemon, shared by its writers.
#[derive(Debug, Default)]
pub struct WriteCounts {
    figures: Mutex<KubeWrites>,
}

impl WriteCounts {
    fn with(&self, f: impl FnOnce(&mut KubeWrites)) {
        f(&mut self.figures.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Counts one write of `kind` and how it ended.
    pub fn write(&self, kind: KubeWriteKind, outcome: WriteOutcome) {
        self.with(|w| {
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
    pub fn dropped(&self, reason: DropReason) {
        self.with(|w| w.dropped_by[reason as usize] += 1);
    }

    /// Counts one Event merged into a waiting one for the same object and cause.
    pub fn merged(&self) {
        self.with(|w| w.merged += 1);
    }

    /// The figures so far.
    pub fn figures(&self) -> KubeWrites {
        *self.figures.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The writers are on once this exists: their families appear, at zero before any write.
impl CountOwner for WriteCounts {
    fn count_into(&self, counted: &mut Counted) {
        counted.kube_writes = Some(self.figures());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each write lands in its own slot, the last result is kept, drops go by reason.
    #[test]
    fn writes_drops_and_merges_are_counted() {
        let c = WriteCounts::default();
        c.write(KubeWriteKind::Event, WriteOutcome::Success);
        c.write(KubeWriteKind::Condition, WriteOutcome::Timeout);
        c.dropped(DropReason::Rejected);
        c.merged();
        let f = c.figures();
        assert_eq!((f.events_ok, f.conditions_timed_out, f.merged), (1, 1, 1));
        assert!(!f.last_ok);
        assert_eq!(f.dropped_for(DropReason::Rejected), 1);
        assert_eq!(f.dropped(), 1);
        let mut counted = Counted::default();
        c.count_into(&mut counted);
        assert_eq!(counted.kube_writes, Some(f));
    }
}
