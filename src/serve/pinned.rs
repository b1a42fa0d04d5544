//! The memory that responses still being written hold, and the budget on it.
//!
//! A `/metrics` body is the published page itself (one allocation shared by every response of
//! that tick), and hyper keeps it until the last byte has gone to the kernel. A client that
//! never reads therefore holds the page of the tick it asked in, for up to
//! `--web-write-timeout`; with fast ticks, hundreds of such clients hold hundreds of pages.
//! [`Pins`] books every page a response holds (by its address, so a page shared by many
//! responses counts once) and bounds the pages that have been replaced since: beyond the
//! current page and the one replaced last (a scrape that straddles a tick is normal), replaced
//! pages may hold at most [`STALE_BUDGET`]; over it, the connections holding the oldest are
//! cut. Each cut is counted in the server's [`ServeCounts`] (a self-metric); the state is logged once
//! when the budget is first exceeded and once when those pages are back under half of it (the
//! freed heap is then handed back to the kernel).
//!
//! It owns that bookkeeping only: it must not read or write sockets (cutting a connection is
//! [`Conns::cut`]) and never copies a page.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;

use super::conns::Conns;
use super::counts::ServeCounts;

/// Bytes of replaced pages that unfinished responses may hold, beyond the page replaced last.
pub const STALE_BUDGET: usize = 8 << 20;

/// The pages held by responses in progress, with the connection holding each.
pub struct Pins {
    budget: usize,
    conns: Arc<Conns>,
    counts: Arc<ServeCounts>,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Numbers the pins, oldest first.
    next: u64,
    /// Held pages by the address of their bytes.
    pages: HashMap<usize, Page>,
    /// Bytes of every held page.
    total: usize,
    /// Connections cut since the budget was exceeded; `Some` while it is.
    over: Option<u64>,
}

/// One held page: its size, its first pin (how old it is) and who holds it.
struct Page {
    len: usize,
    first: u64,
    /// Connection by pin.
    holders: BTreeMap<u64, u64>,
}

impl Pins {
    /// Bookkeeping that cuts connections through `conns`, over `budget` bytes of old pages,
    /// and counts each cut in `counts`.
    pub fn new(conns: Arc<Conns>, budget: usize, counts: Arc<ServeCounts>) -> Arc<Self> {
        Arc::new(Self {
            budget,
            conns,
            counts,
            inner: Mutex::new(Inner::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn unpin(&self, addr: usize, pin: u64) {
        let mut g = self.lock();
        let Some(page) = g.pages.get_mut(&addr) else {
            return;
        };
        if page.holders.remove(&pin).is_none() || !page.holders.is_empty() {
            return;
        }
        let len = page.len;
        g.pages.remove(&addr);
        g.total -= len;
        // All the held pages within half the budget: so are the replaced ones.
        if g.total <= self.budget / 2 {
            self.back_under(g);
        }
    }

    /// Ends the over-budget state, if it was on: logs it and hands the freed heap back.
    fn back_under(&self, mut g: std::sync::MutexGuard<'_, Inner>) {
        let Some(cut) = g.over.take() else {
            return;
        };
        drop(g);
        tracing::info!(
            cut,
            "responses that clients do not read hold less than {} MiB of replaced pages \
             again; {cut} connection(s) were cut meanwhile",
            self.budget >> 21
        );
        crate::base::process::trim_heap();
    }

    /// Cuts the connections holding the oldest replaced pages until those beyond the current
    /// ones (`current`) and the one replaced last fit the budget; returns how many were cut.
    fn enforce(&self, current: &[&Bytes]) -> u64 {
        let mut g = self.lock();
        // Replaced pages, oldest first, when all the held pages together exceed the budget (or,
        // while it is exceeded, half of it).
        let floor = if g.over.is_some() {
            self.budget / 2
        } else {
            self.budget
        };
        let mut old: Vec<(u64, usize, usize)> = Vec::new();
        if g.total > floor {
            old.extend(
                g.pages
                    .iter()
                    .filter(|(addr, _)| !current.iter().any(|c| c.as_ptr() as usize == **addr))
                    .map(|(addr, p)| (p.first, *addr, p.len)),
            );
            old.sort_unstable();
            // The page replaced last is spared.
            old.pop();
        }
        let mut held: usize = old.iter().map(|(_, _, len)| len).sum();
        if held <= self.budget {
            if held <= self.budget / 2 {
                self.back_under(g);
            }
            return 0;
        }
        if g.over.is_none() {
            g.over = Some(0);
            tracing::warn!(
                held_bytes = held,
                budget_bytes = self.budget,
                "responses that clients do not read hold {:.1} MiB of replaced pages, over the \
                 {} MiB budget: the connections holding the oldest are cut (counted in \
                 gpu_exporter_stalled_responses_cut_total)",
                held as f64 / f64::from(1u32 << 20),
                self.budget >> 20
            );
        }
        let mut victims = Vec::new();
        for (_, addr, len) in old {
            if held <= self.budget {
                break;
            }
            if let Some(page) = g.pages.remove(&addr) {
                g.total -= len;
                held -= len;
                victims.extend(page.holders.into_values());
            }
        }
        drop(g);
        victims.sort_unstable();
        victims.dedup();
        let cut = victims.into_iter().filter(|id| self.conns.cut(*id)).count() as u64;
        self.counts.responses_cut(cut);
        if let Some(n) = self.lock().over.as_mut() {
            *n += cut;
        }
        cut
    }
}

/// A connection's handle on [`Pins`], given to its requests (as a request extension).
#[derive(Clone)]
pub struct PinTo {
    pins: Arc<Pins>,
    conn: u64,
}

impl PinTo {
    /// For the connection with id `conn`.
    pub fn new(pins: Arc<Pins>, conn: u64) -> Self {
        Self { pins, conn }
    }

    /// `page` (the same bytes, not a copy), booked to this connection until the last clone
    /// of what is returned is dropped: hyper holds it until it has written it or the
    /// connection ends.
    pub fn pin(&self, page: Bytes) -> Bytes {
        if page.is_empty() {
            return page;
        }
        let addr = page.as_ptr() as usize;
        let pin = {
            let mut g = self.pins.lock();
            let pin = g.next;
            g.next += 1;
            let len = page.len();
            let mut added = 0;
            g.pages
                .entry(addr)
                .or_insert_with(|| {
                    added = len;
                    Page {
                        len,
                        first: pin,
                        holders: BTreeMap::new(),
                    }
                })
                .holders
                .insert(pin, self.conn);
            g.total += added;
            pin
        };
        Bytes::from_owner(Pinned {
            page,
            pins: Arc::clone(&self.pins),
            addr,
            pin,
        })
    }

    /// Enforces the budget, `current` being the pages now published; returns how many
    /// connections were cut (they are counted in [`ServeCounts`] too).
    pub fn enforce(&self, current: &[&Bytes]) -> u64 {
        self.pins.enforce(current)
    }
}

/// A page as handed to hyper: unbooks itself when dropped.
struct Pinned {
    page: Bytes,
    pins: Arc<Pins>,
    addr: usize,
    pin: u64,
}

impl AsRef<[u8]> for Pinned {
    fn as_ref(&self) -> &[u8] {
        &self.page
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        self.pins.unpin(self.addr, self.pin);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(len: usize) -> Bytes {
        Bytes::from(vec![b'x'; len])
    }

    use crate::serve::conns::tests::open;

    /// Ten pages of 100 bytes, each held by its own connection, with a budget of 250 bytes:
    /// the oldest replaced pages are cut until 250 bytes of them remain beside the current
    /// page and the one replaced last; a shared page counts once; dropping a response unbooks
    /// it.
    #[tokio::test]
    async fn the_oldest_replaced_pages_are_cut_over_the_budget() {
        let conns = Conns::new(100);
        let counts = Arc::new(ServeCounts::default());
        let pins = Pins::new(Arc::clone(&conns), 250, Arc::clone(&counts));
        let pages: Vec<Bytes> = (0..10).map(|_| page(100)).collect();
        let mut held = Vec::new();
        let mut tasks = Vec::new();
        for p in &pages {
            let (id, task) = {
                let o = open(&conns);
                (o.id, o.task)
            };
            // Two responses of the same tick on one connection: one page.
            let to = PinTo::new(Arc::clone(&pins), id);
            held.push((to.pin(p.clone()), to.pin(p.clone())));
            tasks.push(task);
        }
        assert_eq!(pins.lock().total, 1000);
        let current = &pages[9];
        let to = PinTo::new(Arc::clone(&pins), 1000);
        // Pages 0..=8 are replaced; 8 is spared; 6 and 7 fit the budget; 0..=5 go.
        assert_eq!(to.enforce(&[current]), 6);
        assert_eq!(pins.lock().over, Some(6), "over the budget");
        assert_eq!(counts.stalled_responses_cut(), 6, "counted");
        for (i, t) in tasks.into_iter().enumerate() {
            let cut = i < 6;
            if cut {
                assert!(t.await.unwrap_err().is_cancelled(), "page {i} cut");
            } else {
                assert!(!t.is_finished(), "page {i} kept");
                t.abort();
            }
        }
        assert_eq!(pins.lock().total, 400);
        assert_eq!(to.enforce(&[current]), 0, "under the budget now");
        assert_eq!(held[7].0.len(), 100, "the bytes are the page's");
        assert_eq!(held[7].0.as_ptr(), pages[7].as_ptr(), "not a copy");
        let (a, b) = held.pop().unwrap();
        drop(a);
        assert_eq!(pins.lock().total, 400, "still held by the second response");
        drop(b);
        assert_eq!(pins.lock().total, 300);
        assert!(pins.lock().over.is_some(), "not yet within half the budget");
        drop(held);
        assert_eq!(pins.lock().total, 0);
        assert!(pins.lock().pages.is_empty());
        assert_eq!(pins.lock().over, None, "back under");
    }
}
