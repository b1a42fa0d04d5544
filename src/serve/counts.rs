//! The server's own counters for the self-metrics: connections cut because their unread
//! responses held replaced pages over the memory budget (`pinned` counts each cut here). The
//! exposition reads them through `exposition::counted::CountOwner` when the sampler encodes a
//! page. It must not cut connections or log.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::exposition::counted::{CountOwner, Counted};

/// What the server counted since start; one per daemon, shared by its connections.
#[derive(Debug, Default)]
pub struct ServeCounts {
    stalled_responses_cut: AtomicU64,
}

impl ServeCounts {
    /// Counts `n` connections cut for holding old pages unread.
    pub fn responses_cut(&self, n: u64) {
        self.stalled_responses_cut.fetch_add(n, Ordering::Relaxed);
    }

    /// Connections cut for holding old pages unread, since start.
    pub fn stalled_responses_cut(&self) -> u64 {
        self.stalled_responses_cut.load(Ordering::Relaxed)
    }
}

impl CountOwner for ServeCounts {
    fn count_into(&self, counted: &mut Counted) {
        counted.stalled_responses_cut = self.stalled_responses_cut();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cuts add up, and are what the exposition reads.
    #[test]
    fn cuts_add_up() {
        let c = ServeCounts::default();
        c.responses_cut(2);
        c.responses_cut(1);
        let mut counted = Counted::default();
        c.count_into(&mut counted);
        assert_eq!(counted.stalled_responses_cut, 3);
    }
}
