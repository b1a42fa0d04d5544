//! The cap on open connections (`--web-max-connections`): when it is reached, an open
//! connection is shed to make room for the new one, so a flood of slow, idle or hostile
//! clients can neither exhaust file descriptors and memory nor lock Prometheus out (its next
//! scrape gets in). The oldest *idle* connection goes first (no request in the handler, no
//! response bytes waiting to be written: a keep-alive connection between requests, a
//! half-sent request, a client that sent nothing); only when every connection is serving a
//! response is the oldest of those shed. So a flood cannot abort a scrape in flight unless it
//! outnumbers the cap with connections that all hold a response. A flood is logged once when
//! it starts and once when it is over; when it is over, freed heap memory is handed back to
//! the kernel. At shutdown, [`Conns::abort_all`] cuts what the grace period left open. The
//! same books serve two other callers: [`Conns::shed_one`] frees a descriptor when accepting
//! finds none left (same order), and [`Conns::cut`] closes a given connection (the budget on
//! the pages unread responses hold, in `pinned`).
//!
//! It owns the bookkeeping of connection tasks and their [`Activity`] only; it must not read
//! or write sockets.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::task::AbortHandle;

/// What one connection is doing, shared by its task and the books: requests between their
/// arrival and the moment hyper has taken their whole response body, and whether response
/// bytes are written but not yet flushed to the socket (set by the write deadline's wrapper).
#[derive(Debug, Default)]
pub struct Activity {
    requests: AtomicU32,
    writing: AtomicBool,
}

impl Activity {
    /// Whether the connection is serving a response.
    pub fn busy(&self) -> bool {
        self.requests.load(Ordering::Relaxed) > 0 || self.writing.load(Ordering::Relaxed)
    }

    /// Whether response bytes are waiting to be written.
    pub fn set_writing(&self, writing: bool) {
        self.writing.store(writing, Ordering::Relaxed);
    }

    /// Marks a request as in progress until the guard is dropped (with its response body).
    pub fn request(self: &Arc<Self>) -> InRequest {
        self.requests.fetch_add(1, Ordering::Relaxed);
        InRequest(Arc::clone(self))
    }
}

/// A request in progress on its connection (see [`Activity::request`]).
pub struct InRequest(Arc<Activity>);

impl Drop for InRequest {
    fn drop(&mut self) {
        self.0.requests.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The open connections, oldest first.
pub struct Conns {
    max: usize,
    inner: Mutex<Inner>,
}

/// One open connection: its task (once attached) and what it is doing.
struct Slot {
    handle: Option<AbortHandle>,
    activity: Arc<Activity>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    open: BTreeMap<u64, Slot>,
    /// Connections shed since the flood began; `Some` while flooding.
    shed: Option<u64>,
}

impl Inner {
    /// The connection to shed: the oldest idle one, else the oldest.
    fn victim(&self) -> Option<u64> {
        self.open
            .iter()
            .find(|(_, s)| !s.activity.busy())
            .or_else(|| self.open.first_key_value())
            .map(|(id, _)| *id)
    }
}

/// Removes its connection from the books when the connection's task ends (however it ends).
pub struct Ticket {
    conns: Arc<Conns>,
    id: u64,
    activity: Arc<Activity>,
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

    /// Books a new connection, shedding one (the oldest idle, else the oldest) when the cap is
    /// reached. The ticket goes into the connection's task; [`Conns::attach`] then gives its
    /// abort handle.
    pub fn admit(self: &Arc<Self>) -> Ticket {
        let mut g = self.lock();
        while g.open.len() >= self.max {
            let Some(slot) = g.victim().and_then(|id| g.open.remove(&id)) else {
                break;
            };
            if let Some(h) = slot.handle {
                h.abort();
            }
            match &mut g.shed {
                Some(n) => *n += 1,
                None => {
                    g.shed = Some(1);
                    tracing::warn!(
                        max = self.max,
                        "connection limit reached (--web-max-connections {}): the oldest idle \
                         connections are closed to make room for new ones (connections serving \
                         a response go last)",
                        self.max
                    );
                }
            }
        }
        let id = g.next;
        g.next += 1;
        let activity = Arc::new(Activity::default());
        g.open.insert(
            id,
            Slot {
                handle: None,
                activity: Arc::clone(&activity),
            },
        );
        Ticket {
            conns: Arc::clone(self),
            id,
            activity,
        }
    }

    /// Records the abort handle of the task holding ticket `id` (unless it already ended).
    pub fn attach(&self, ticket_id: u64, handle: AbortHandle) {
        if let Some(slot) = self.lock().open.get_mut(&ticket_id) {
            slot.handle = Some(handle);
        }
    }

    /// Closes one connection to free its descriptor (the oldest idle one, else the oldest);
    /// `false` when none is open.
    pub fn shed_one(&self) -> bool {
        let mut g = self.lock();
        let Some(slot) = g.victim().and_then(|id| g.open.remove(&id)) else {
            return false;
        };
        if let Some(h) = slot.handle {
            h.abort();
        }
        true
    }

    /// Cuts the connection `id` (its task is aborted); `false` when it is no longer open.
    pub fn cut(&self, id: u64) -> bool {
        let Some(slot) = self.lock().open.remove(&id) else {
            return false;
        };
        if let Some(h) = slot.handle {
            h.abort();
        }
        true
    }

    /// Aborts every open connection's task; returns how many there were.
    pub fn abort_all(&self) -> usize {
        let open = std::mem::take(&mut self.lock().open);
        for slot in open.values() {
            if let Some(h) = &slot.handle {
                h.abort();
            }
        }
        open.len()
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
            crate::base::process::trim_heap();
        }
    }

    /// Open connections now.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.lock().open.len()
    }
}

impl Ticket {
    /// The connection's id, for [`Conns::attach`].
    pub fn id(&self) -> u64 {
        self.id
    }

    /// What the connection is doing, for its task to update.
    pub fn activity(&self) -> Arc<Activity> {
        Arc::clone(&self.activity)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A connection whose task waits until it is aborted: its task, its activity and its id.
    pub(in crate::serve) struct Open {
        pub task: tokio::task::JoinHandle<()>,
        pub activity: Arc<Activity>,
        pub id: u64,
    }

    /// Books a connection on `conns` whose task waits until it is aborted.
    pub(in crate::serve) fn open(conns: &Arc<Conns>) -> Open {
        let ticket = conns.admit();
        let id = ticket.id();
        let activity = ticket.activity();
        let task = tokio::spawn(async move {
            let _ticket = ticket;
            std::future::pending::<()>().await;
        });
        conns.attach(id, task.abort_handle());
        Open { task, activity, id }
    }

    fn booked(conns: &Conns, id: u64) -> bool {
        conns.lock().open.contains_key(&id)
    }

    #[tokio::test]
    async fn the_oldest_connection_is_shed_at_the_cap() {
        let conns = Conns::new(2);
        let mut tasks: Vec<_> = (0..3).map(|_| open(&conns).task).collect();
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

    /// Connections serving a response (a request in the handler, or response bytes waiting)
    /// are shed after every idle one, however old they are; when all are busy, the oldest goes.
    #[tokio::test]
    async fn busy_connections_are_shed_after_idle_ones() {
        let conns = Conns::new(3);
        let scrape = open(&conns);
        let request = scrape.activity.request();
        let writing = open(&conns);
        writing.activity.set_writing(true);
        let idle = open(&conns);
        // A flood of new connections sheds the idle one, then each newcomer in turn.
        let flood: Vec<Open> = (0..50).map(|_| open(&conns)).collect();
        assert!(idle.task.await.unwrap_err().is_cancelled());
        assert!(booked(&conns, scrape.id) && booked(&conns, writing.id));
        assert_eq!(conns.open(), 3);
        let last = flood.last().unwrap();
        assert!(booked(&conns, last.id));
        // Every connection busy: the oldest is shed.
        last.activity.set_writing(true);
        let _newcomer = open(&conns);
        assert!(!booked(&conns, scrape.id));
        assert!(scrape.task.await.unwrap_err().is_cancelled());
        drop(request);
        // A response written and flushed: idle again, and shed before the busy newest one.
        writing.activity.set_writing(false);
        let _another = open(&conns);
        assert!(!booked(&conns, writing.id) && booked(&conns, last.id));
        assert_eq!(conns.abort_all(), 3, "cut at shutdown");
        assert_eq!(conns.open(), 0);
    }

    /// Freeing a descriptor closes the oldest idle connection, else the oldest; cutting one
    /// by id closes that one.
    #[tokio::test]
    async fn shed_one_and_cut() {
        let conns = Conns::new(10);
        let busy = open(&conns);
        busy.activity.set_writing(true);
        let idle = open(&conns);
        let other = open(&conns);
        assert!(conns.shed_one());
        assert!(idle.task.await.unwrap_err().is_cancelled());
        assert!(conns.cut(busy.id));
        assert!(!conns.cut(busy.id), "already gone");
        assert!(busy.task.await.unwrap_err().is_cancelled());
        assert!(conns.shed_one());
        assert!(other.task.await.unwrap_err().is_cancelled());
        assert!(!conns.shed_one(), "none left");
    }
}
