//! The cap on open connections (`--web-max-connections`): when it is reached, the oldest open
//! connection is shed to make room for the new one, so a flood of slow, idle or hostile
//! clients can neither exhaust file descriptors and memory nor lock Prometheus out (its next
//! scrape gets in). A flood is logged once when it starts and once when it is over.
//!
//! When a flood is over, freed heap memory is handed back to the kernel.
//!
//! It owns the bookkeeping of connection tasks only; it must not read or write sockets.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::task::AbortHandle;

/// The open connections, oldest first.
pub struct Conns {
    max: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    open: BTreeMap<u64, Option<AbortHandle>>,
    /// Connections shed since the flood began; `Some` while flooding.
    shed: Option<u64>,
}

/// Removes its connection from the books when the connection's task ends (however it ends).
pub struct Ticket {
    conns: Arc<Conns>,
    id: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.conns.release(self.id);
    }
}

impl Conns {
    /// At most `max` connections open at once (at least 1).
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max: max.max(1),
            inner: Mutex::new(Inner::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Books a new connection, shedding the oldest one when the cap is reached. The ticket
    /// goes into the connection's task; [`Conns::attach`] then gives its abort handle.
    pub fn admit(self: &Arc<Self>) -> Ticket {
        let mut g = self.lock();
        while g.open.len() >= self.max {
            let Some((_, handle)) = g.open.pop_first() else {
                break;
            };
            if let Some(h) = handle {
                h.abort();
            }
            match &mut g.shed {
                Some(n) => *n += 1,
                None => {
                    g.shed = Some(1);
                    tracing::warn!(
                        max = self.max,
                        "connection limit reached (--web-max-connections {}): the oldest open \
                         connections are closed to make room for new ones",
                        self.max
                    );
                }
            }
        }
        let id = g.next;
        g.next += 1;
        g.open.insert(id, None);
        Ticket {
            conns: Arc::clone(self),
            id,
        }
    }

    /// Records the abort handle of the task holding ticket `id` (unless it already ended).
    pub fn attach(&self, ticket_id: u64, handle: AbortHandle) {
        if let Some(slot) = self.lock().open.get_mut(&ticket_id) {
            *slot = Some(handle);
        }
    }

    fn release(&self, id: u64) {
        let over = {
            let mut g = self.lock();
            g.open.remove(&id);
            match g.shed {
                Some(shed) if g.open.len() <= self.max / 2 => {
                    g.shed = None;
                    tracing::info!(
                        shed,
                        open = g.open.len(),
                        "connection flood over: {shed} connection(s) were closed early"
                    );
                    true
                }
                _ => false,
            }
        };
        if over {
            trim_memory();
        }
    }

    /// Open connections now.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.lock().open.len()
    }
}

/// Hands the heap pages a flood's connections used back to the kernel: glibc's allocator keeps
/// freed memory in its arenas otherwise, and the resident size would stay at the flood's peak.
fn trim_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer; it only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

impl Ticket {
    /// The connection's id, for [`Conns::attach`].
    pub fn id(&self) -> u64 {
        self.id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_oldest_connection_is_shed_at_the_cap() {
        let conns = Conns::new(2);
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let ticket = conns.admit();
            let id = ticket.id();
            let task = tokio::spawn(async move {
                let _ticket = ticket;
                std::future::pending::<()>().await;
            });
            conns.attach(id, task.abort_handle());
            tasks.push(task);
        }
        let first = tasks.remove(0);
        assert!(
            first.await.unwrap_err().is_cancelled(),
            "the oldest was shed"
        );
        assert_eq!(conns.open(), 2);
        for t in &tasks {
            t.abort();
        }
        for t in tasks {
            let _ = t.await;
        }
        assert_eq!(conns.open(), 0, "ended tasks release their slot");
    }
}
