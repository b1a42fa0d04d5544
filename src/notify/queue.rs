//! The Events between the planner and the writer: what waits to be written, in order of
//! importance, and a bounded memory of what was written, one entry per object and cause (the
//! pod or the Node, the reason, the GPU or MIG instance), so that a storm costs one write per
//! object and cause, then at most one series update each [`SERIES_EVERY`].
//!
//! - A *first* Event (an object and cause with no Event written) waits in a place of its own;
//!   at most `capacity` firsts wait. The writer takes the oldest Node first, then the oldest
//!   pod first.
//! - A plan for an object and cause that already waits is merged into the waiting one (its
//!   note becomes the newest, its count rises) and takes no place. A plan for one whose Event
//!   was written (or is being written) is a *repeat*: it merges into that Event's one pending
//!   series update, which takes no place either, and is written no sooner than
//!   [`SERIES_EVERY`] after the Event's last write, after every waiting first. So repeats,
//!   whatever their number, never keep a first out of the queue or wait before it.
//! - Full, a new first is not simply dropped: it takes the place of the newest waiting pod
//!   first of the cause that has the most pod firsts waiting, when that cause has more than
//!   its own (a Node first takes one whenever a pod first waits). So the pods of a fault that
//!   hits few pods get their Events while a fault on a GPU shared by thousands fills the
//!   queue. Each drop is reported to the caller, which counts it.
//! - An Event written is remembered until no plan has come for it for [`SERIES_TTL`] (then
//!   the next one is a new Event), at most `memory` of them (the one seen longest ago is
//!   forgotten first).
//! - Whether the queue overflows is a state: it starts at a drop and ends once no first has
//!   been dropped for [`QUIET`] and there is room, so a burst is logged once at its start and
//!   once at its end, with the number dropped, not once per tick.
//!
//! Data only: it must not write to the API server, plan Events, count or log (its callers do).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::plan::EventPlan;

/// The least time between two writes of one Event (its creation, then its series updates).
pub const SERIES_EVERY: Duration = Duration::from_secs(30);

/// How long an Event written is remembered after the last plan for it: a plan after that
/// starts a new Event (kube's recorder and client-go end a series after 6 minutes too).
pub const SERIES_TTL: Duration = Duration::from_secs(360);

/// How long without a drop ends an overflow.
pub const QUIET: Duration = Duration::from_secs(10);

/// Events written that are remembered at most, by default.
pub const MEMORY: usize = 4096;

/// The object and cause of an Event: one Event object (and its series) per key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventKey {
    /// `None`: the Node; else the pod's namespace and name.
    pub pod: Option<(String, String)>,
    /// The Event's reason.
    pub reason: &'static str,
    /// The Event's action (names the GPU or MIG instance).
    pub action: String,
}

impl EventKey {
    /// The key of `plan`.
    pub fn of(plan: &EventPlan) -> Self {
        Self {
            pod: plan
                .pod
                .as_ref()
                .map(|p| (p.namespace.clone(), p.name.clone())),
            reason: plan.reason,
            action: plan.action.clone(),
        }
    }

    fn cause(&self) -> Cause {
        (self.reason, self.action.clone())
    }
}

/// A cause (reason, action) that may hit many pods.
type Cause = (&'static str, String);

/// Plans waiting to be written as one write.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// When the first of them was queued (its retry time counts from here).
    pub since: Instant,
    /// What to write: the newest plan.
    pub plan: EventPlan,
    /// How many plans it stands for (1, plus each one merged into it).
    pub count: u32,
}

/// The Event as written, for its series updates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Series {
    /// The Event object's namespace.
    pub namespace: String,
    /// The Event object's name.
    pub name: String,
    /// Plans it stands for, this write included.
    pub count: u32,
}

/// One write for the writer to make.
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    /// Its object and cause, to report with [`EventQueue::done`].
    pub key: EventKey,
    /// The plans it writes.
    pub waiting: Waiting,
    /// `None`: create the Event; else update the series of the Event written before.
    pub series: Option<Series>,
}

/// How a write taken ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Done {
    /// The Event is on the server with this namespace, name and count.
    Written(Series),
    /// It was given up.
    Dropped,
}

/// What became of a pushed Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// A first Event: it waits in a place of its own.
    Queued,
    /// It was merged into a waiting write for the same object and cause.
    Merged,
    /// A repeat of an Event written: it waits as that Event's series update.
    Repeat,
    /// A first Event: it waits, and a waiting pod Event was dropped to make room for it.
    QueuedDroppingPodEvent,
    /// It was dropped: the queue is full.
    Dropped,
}

impl Pushed {
    /// Whether an Event was dropped (this one or another).
    pub fn dropped_one(self) -> bool {
        matches!(self, Self::Dropped | Self::QueuedDroppingPodEvent)
    }
}

/// A change of the overflow state, to log once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// The first drop of a burst.
    Started,
    /// No drop for [`QUIET`], and there is room: the burst is over.
    Ended {
        /// Events dropped in the burst.
        dropped: u64,
        /// From its first drop to its last.
        lasted: Duration,
    },
}

#[derive(Debug)]
struct Entry {
    /// Plans waiting to be written (a first's, or a repeat's).
    pending: Option<Waiting>,
    /// Where a pending repeat waits in `node_repeats` or `pod_repeats` (due, sequence).
    repeat: Option<(Instant, u64)>,
    /// Its write has been taken and has not been reported done.
    in_flight: bool,
    /// The Event on the server, and when it was last written.
    written: Option<(Series, Instant)>,
    last_seen: Instant,
}

#[derive(Debug)]
struct Burst {
    first_drop: Instant,
    last_drop: Instant,
    dropped: u64,
    announced: bool,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<EventKey, Entry>,
    node_firsts: BTreeMap<u64, EventKey>,
    pod_firsts: BTreeMap<u64, EventKey>,
    /// The pod firsts waiting, by cause.
    causes: HashMap<Cause, BTreeSet<u64>>,
    node_repeats: BTreeMap<(Instant, u64), EventKey>,
    pod_repeats: BTreeMap<(Instant, u64), EventKey>,
    next: u64,
    burst: Option<Burst>,
}

impl Inner {
    fn firsts(&self) -> usize {
        self.node_firsts.len() + self.pod_firsts.len()
    }

    fn seq(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    fn dropped(&mut self, now: Instant) {
        match &mut self.burst {
            Some(b) => {
                b.last_drop = now;
                b.dropped += 1;
            }
            None => {
                self.burst = Some(Burst {
                    first_drop: now,
                    last_drop: now,
                    dropped: 1,
                    announced: false,
                })
            }
        }
    }

    fn place_first(&mut self, key: EventKey) {
        let seq = self.seq();
        if key.pod.is_none() {
            self.node_firsts.insert(seq, key);
        } else {
            self.causes.entry(key.cause()).or_default().insert(seq);
            self.pod_firsts.insert(seq, key);
        }
    }

    /// Schedules the pending repeat of `key`, written at `at`, for `at + SERIES_EVERY`.
    fn place_repeat(&mut self, key: EventKey, at: Instant) {
        let seq = self.seq();
        let due = at + SERIES_EVERY;
        if let Some(e) = self.entries.get_mut(&key) {
            e.repeat = Some((due, seq));
        }
        if key.pod.is_none() {
            self.node_repeats.insert((due, seq), key);
        } else {
            self.pod_repeats.insert((due, seq), key);
        }
    }

    fn unplace_pod_first(&mut self, seq: u64, key: &EventKey) {
        self.pod_firsts.remove(&seq);
        let cause = key.cause();
        if let Some(set) = self.causes.get_mut(&cause) {
            set.remove(&seq);
            if set.is_empty() {
                self.causes.remove(&cause);
            }
        }
    }

    /// Drops the newest waiting pod first of the cause with the most waiting, if it has
    /// more than `than`; says whether one was dropped.
    fn evict_pod_first(&mut self, than: usize) -> bool {
        // Of causes as crowded, the one whose newest came last.
        let Some(seq) = self
            .causes
            .values()
            .filter(|s| s.len() > than)
            .filter_map(|s| Some((s.len(), *s.last()?)))
            .max()
            .map(|(_, seq)| seq)
        else {
            return false;
        };
        let Some(key) = self.pod_firsts.get(&seq).cloned() else {
            return false;
        };
        self.unplace_pod_first(seq, &key);
        self.entries.remove(&key);
        true
    }

    /// Forgets the written Event seen longest ago while more than `memory` are remembered;
    /// returns how many pending repeats that dropped.
    fn forget_over(&mut self, memory: usize) -> u32 {
        let mut dropped = 0;
        while self.entries.len() > memory {
            let victim = self
                .entries
                .iter()
                .filter(|(_, e)| e.written.is_some() && !e.in_flight)
                .min_by_key(|(_, e)| (e.pending.is_some(), e.last_seen))
                .map(|(k, _)| k.clone());
            let Some(key) = victim else {
                break;
            };
            if let Some(e) = self.entries.remove(&key)
                && let Some((due, seq)) = e.repeat
            {
                self.node_repeats.remove(&(due, seq));
                self.pod_repeats.remove(&(due, seq));
                dropped += 1;
            }
        }
        dropped
    }

    fn take_entry(&mut self, key: EventKey) -> Option<Taken> {
        let e = self.entries.get_mut(&key)?;
        let waiting = e.pending.take()?;
        e.repeat = None;
        e.in_flight = true;
        let series = e.written.as_ref().map(|(s, _)| Series {
            namespace: s.namespace.clone(),
            name: s.name.clone(),
            count: s.count.saturating_add(waiting.count),
        });
        Some(Taken {
            key,
            waiting,
            series,
        })
    }
}

/// The queue. One producer (the planner) and one consumer (the writer).
#[derive(Debug)]
pub struct EventQueue {
    inner: Mutex<Inner>,
    ready: Notify,
    capacity: usize,
    memory: usize,
}

impl EventQueue {
    /// An empty queue where at most `capacity` first Events wait (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self::with_memory(capacity, MEMORY)
    }

    /// [`EventQueue::new`] remembering at most `memory` Events written (at least
    /// `capacity`).
    pub fn with_memory(capacity: usize, memory: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            inner: Mutex::new(Inner::default()),
            ready: Notify::new(),
            capacity,
            memory: memory.max(capacity),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `plan` (see the module's rules).
    pub fn push(&self, plan: EventPlan, now: Instant) -> Pushed {
        let key = EventKey::of(&plan);
        let mut q = self.lock();
        if let Some(e) = q.entries.get_mut(&key) {
            let idle = e.pending.is_none() && !e.in_flight;
            if !(idle && now.saturating_duration_since(e.last_seen) >= SERIES_TTL) {
                e.last_seen = now;
                if let Some(w) = &mut e.pending {
                    w.plan = plan;
                    w.count = w.count.saturating_add(1);
                    return Pushed::Merged;
                }
                e.pending = Some(Waiting {
                    since: now,
                    plan,
                    count: 1,
                });
                if let (false, Some((_, at))) = (e.in_flight, e.written.as_ref()) {
                    let at = *at;
                    q.place_repeat(key, at);
                }
                drop(q);
                // The writer may be waiting for a later repeat.
                self.ready.notify_one();
                return Pushed::Repeat;
            }
            // Not seen for SERIES_TTL: a new Event.
            q.entries.remove(&key);
        }
        let pushed = if q.firsts() < self.capacity {
            Pushed::Queued
        } else {
            let own = if key.pod.is_none() {
                // Any pod first gives way to a Node first.
                usize::MAX
            } else {
                q.causes.get(&key.cause()).map_or(0, BTreeSet::len)
            };
            let evicted = if own == usize::MAX {
                q.evict_pod_first(0)
            } else {
                q.evict_pod_first(own + 1)
            };
            if evicted {
                Pushed::QueuedDroppingPodEvent
            } else {
                Pushed::Dropped
            }
        };
        if pushed.dropped_one() {
            q.dropped(now);
        }
        if pushed == Pushed::Dropped {
            return pushed;
        }
        q.entries.insert(
            key.clone(),
            Entry {
                pending: Some(Waiting {
                    since: now,
                    plan,
                    count: 1,
                }),
                repeat: None,
                in_flight: false,
                written: None,
                last_seen: now,
            },
        );
        q.place_first(key);
        drop(q);
        self.ready.notify_one();
        pushed
    }

    /// The next write, if one is due at `now`: the oldest Node first, a due Node repeat, the
    /// oldest pod first, a due pod repeat. Else when the next repeat is due, if one waits.
    pub fn try_take(&self, now: Instant) -> Result<Taken, Option<Instant>> {
        let mut q = self.lock();
        loop {
            let key = if let Some((_, key)) = q.node_firsts.pop_first() {
                key
            } else if let Some(entry) = q.node_repeats.first_entry().filter(|e| e.key().0 <= now) {
                entry.remove()
            } else if let Some((seq, key)) = q.pod_firsts.first_key_value() {
                let (seq, key) = (*seq, key.clone());
                q.unplace_pod_first(seq, &key);
                key
            } else if let Some(entry) = q.pod_repeats.first_entry().filter(|e| e.key().0 <= now) {
                entry.remove()
            } else {
                let next = [q.node_repeats.keys().next(), q.pod_repeats.keys().next()]
                    .into_iter()
                    .flatten()
                    .map(|(due, _)| *due)
                    .min();
                return Err(next);
            };
            if let Some(t) = q.take_entry(key) {
                return Ok(t);
            }
        }
    }

    /// The next write, waiting for one.
    pub async fn take(&self) -> Taken {
        loop {
            let next = match self.try_take(Instant::now()) {
                Ok(t) => return t,
                Err(next) => next,
            };
            // One consumer: a notification sent while it was not waiting is kept as a permit.
            let notified = self.ready.notified();
            match next {
                Some(at) => {
                    tokio::select! {
                        () = notified => {}
                        () = tokio::time::sleep_until(at) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Reports how the write of `key` taken last ended; returns how many waiting Events were
    /// dropped to keep the memory bounded (to count).
    pub fn done(&self, key: &EventKey, done: Done, now: Instant) -> u32 {
        let mut q = self.lock();
        let Some(e) = q.entries.get_mut(key) else {
            return 0;
        };
        e.in_flight = false;
        match done {
            Done::Written(series) => {
                e.written = Some((series, now));
                if e.pending.is_some() {
                    q.place_repeat(key.clone(), now);
                }
                q.forget_over(self.memory)
            }
            // A series update given up: the Event stays as it was written.
            Done::Dropped if e.written.is_some() => {
                if let Some((_, at)) = e.written.as_ref()
                    && e.pending.is_some()
                {
                    let at = *at;
                    q.place_repeat(key.clone(), at);
                }
                0
            }
            // A new Event given up: what was merged meanwhile would fare no better.
            Done::Dropped => {
                q.entries.remove(key);
                0
            }
        }
    }

    /// Forgets the Events not seen for [`SERIES_TTL`], and says whether the overflow state
    /// changed (to log); the planner calls it each interval.
    pub fn tick(&self, now: Instant) -> Option<Overflow> {
        let mut q = self.lock();
        q.entries.retain(|_, e| {
            e.in_flight
                || e.pending.is_some()
                || now.saturating_duration_since(e.last_seen) < SERIES_TTL
        });
        let room = q.firsts() < self.capacity;
        let b = q.burst.as_mut()?;
        if !b.announced {
            b.announced = true;
            return Some(Overflow::Started);
        }
        if room && now.saturating_duration_since(b.last_drop) >= QUIET {
            let b = q.burst.take()?;
            return Some(Overflow::Ended {
                dropped: b.dropped,
                lasted: b.last_drop.saturating_duration_since(b.first_drop),
            });
        }
        None
    }

    /// First Events waiting now (repeats take no place).
    pub fn len(&self) -> usize {
        self.lock().firsts()
    }

    /// Whether no first Event waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Objects and causes known now: waiting, being written, or written and remembered.
    pub fn known(&self) -> usize {
        self.lock().entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::plan::PodRef;

    fn plan(pod: Option<&str>, reason: &'static str, gpu: u32, note: &str) -> EventPlan {
        EventPlan {
            pod: pod.map(|name| PodRef {
                namespace: "ns".into(),
                name: name.into(),
                uid: None,
                container: "c".into(),
                gpu_instance_id: None,
            }),
            warning: true,
            reason,
            action: format!("Gpu{gpu}"),
            note: note.into(),
        }
    }

    fn written(t: &Taken, count: u32) -> Done {
        Done::Written(Series {
            namespace: "ns".into(),
            name: format!("{:?}", t.key.pod),
            count,
        })
    }

    /// Takes every write due at `now`, reporting each written.
    fn drain(q: &EventQueue, now: Instant) -> Vec<Taken> {
        let mut out = Vec::new();
        while let Ok(t) = q.try_take(now) {
            let count = t.series.as_ref().map_or(t.waiting.count, |s| s.count);
            q.done(&t.key, written(&t, count), now);
            out.push(t);
        }
        out
    }

    fn notes(taken: &[Taken]) -> Vec<String> {
        taken.iter().map(|t| t.waiting.plan.note.clone()).collect()
    }

    /// Node Events are taken before pod Events, whatever the order they came in; each class
    /// keeps its order.
    #[test]
    fn node_events_come_first() {
        let q = EventQueue::new(8);
        let now = Instant::now();
        q.push(plan(Some("a"), "XidHardware", 0, "1"), now);
        q.push(plan(None, "XidHardware", 0, "2"), now);
        q.push(plan(Some("b"), "XidHardware", 0, "3"), now);
        q.push(plan(None, "EccDbe", 1, "4"), now);
        assert_eq!(notes(&drain(&q, now)), ["2", "4", "1", "3"]);
    }

    /// A repeat for an object and cause that waits is merged: its count rises, the note is
    /// the newest, and it keeps its place and its time. Another pod, reason or GPU is not.
    #[test]
    fn repeats_merge_into_the_waiting_event() {
        let q = EventQueue::new(8);
        let t0 = Instant::now();
        assert_eq!(
            q.push(plan(Some("a"), "XidHardware", 0, "first"), t0),
            Pushed::Queued
        );
        for i in 0..1000 {
            let p = q.push(plan(Some("a"), "XidHardware", 0, &format!("n{i}")), t0);
            assert_eq!(p, Pushed::Merged);
        }
        q.push(plan(Some("b"), "XidHardware", 0, "b"), t0);
        q.push(plan(Some("a"), "XidMemory", 0, "m"), t0);
        q.push(plan(Some("a"), "XidHardware", 1, "g1"), t0);
        let got = drain(&q, t0);
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].waiting.count, 1001);
        assert_eq!(got[0].waiting.plan.note, "n999");
        assert_eq!(got[0].waiting.since, t0);
        assert!(got[0].series.is_none());
        assert!(got[1..].iter().all(|t| t.waiting.count == 1));
    }

    /// Once an Event is written, its repeats (a storm's, one plan per tick) take no place:
    /// they merge into one series update, written SERIES_EVERY after the Event, with the
    /// count of every plan, after the firsts that wait. A write per object and cause, then
    /// one per SERIES_EVERY.
    #[test]
    fn a_written_events_repeats_are_one_series_update_each_series_every() {
        let q = EventQueue::new(2);
        let t0 = Instant::now();
        q.push(plan(Some("a"), "XidApplication", 0, "0"), t0);
        let first = drain(&q, t0);
        assert_eq!(first.len(), 1);
        assert!(first[0].series.is_none());
        // 100 ticks of the storm (30 s): no place taken, nothing due before SERIES_EVERY.
        let tick = Duration::from_millis(300);
        let mut now = t0;
        for i in 1..=100 {
            now = t0 + tick * i;
            let p = q.push(plan(Some("a"), "XidApplication", 0, &i.to_string()), now);
            assert_eq!(
                p,
                if i == 1 {
                    Pushed::Repeat
                } else {
                    Pushed::Merged
                }
            );
            if now < t0 + SERIES_EVERY {
                assert!(q.try_take(now).is_err(), "written before it was due");
            }
        }
        assert_eq!(q.len(), 0, "repeats take no place");
        // Two firsts of other pods fill the queue and are taken before the due repeat.
        assert_eq!(
            q.push(plan(Some("b"), "XidMemory", 1, "b"), now),
            Pushed::Queued
        );
        assert_eq!(
            q.push(plan(Some("c"), "XidMemory", 1, "c"), now),
            Pushed::Queued
        );
        let got = drain(&q, now);
        assert_eq!(notes(&got), ["b", "c", "100"]);
        let series = got[2].series.as_ref().expect("a series update");
        assert_eq!(series.count, 101, "the Event's plans, all of them");
        assert_eq!(got[2].waiting.count, 100);
        // The next is due SERIES_EVERY after that write.
        q.push(plan(Some("a"), "XidApplication", 0, "101"), now);
        assert_eq!(q.try_take(now), Err(Some(now + SERIES_EVERY)));
        let later = drain(&q, now + SERIES_EVERY);
        assert_eq!(later[0].series.as_ref().unwrap().count, 102);
    }

    /// Full of one cause's pod firsts (a GPU shared by many pods), a first of another cause
    /// takes the place of the newest of the crowded cause; a first of the crowded cause, and
    /// a repeat, take none. A Node first takes a pod first's place. What cannot wait is
    /// dropped, and each drop is reported.
    #[test]
    fn a_full_queue_makes_room_for_the_cause_with_fewest_waiting() {
        let q = EventQueue::new(4);
        let now = Instant::now();
        for p in ["s0", "s1", "s2", "s3"] {
            assert_eq!(
                q.push(plan(Some(p), "XidApplication", 0, p), now),
                Pushed::Queued
            );
        }
        assert_eq!(
            q.push(plan(Some("s4"), "XidApplication", 0, "s4"), now),
            Pushed::Dropped
        );
        assert_eq!(
            q.push(plan(Some("x"), "XidMemory", 2, "x"), now),
            Pushed::QueuedDroppingPodEvent
        );
        assert_eq!(
            q.push(plan(Some("y"), "XidMemory", 2, "y"), now),
            Pushed::QueuedDroppingPodEvent
        );
        // Two each now: the next of GPU 2 finds no cause with more than its own plus one.
        assert_eq!(
            q.push(plan(Some("z"), "XidMemory", 2, "z"), now),
            Pushed::Dropped
        );
        assert_eq!(
            q.push(plan(None, "XidHardware", 1, "node"), now),
            Pushed::QueuedDroppingPodEvent
        );
        assert_eq!(
            q.push(plan(Some("x"), "XidMemory", 2, "x2"), now),
            Pushed::Merged
        );
        assert_eq!(q.len(), 4);
        let got = drain(&q, now);
        // The Node's took the place of the newest of the two causes as crowded (y).
        assert_eq!(notes(&got), ["node", "s0", "s1", "x2"]);
    }

    /// A Node first is dropped only when Node firsts fill the queue.
    #[test]
    fn node_events_are_dropped_only_when_node_events_fill_the_queue() {
        let q = EventQueue::new(2);
        let now = Instant::now();
        q.push(plan(Some("a"), "XidHardware", 0, "a"), now);
        q.push(plan(None, "XidHardware", 0, "n0"), now);
        assert_eq!(
            q.push(plan(None, "XidHardware", 1, "n1"), now),
            Pushed::QueuedDroppingPodEvent
        );
        assert_eq!(
            q.push(plan(None, "XidHardware", 2, "n2"), now),
            Pushed::Dropped
        );
        assert_eq!(notes(&drain(&q, now)), ["n0", "n1"]);
    }

    /// The overflow is one state per burst: reported at its start, and at its end once no
    /// Event has been dropped for QUIET and there is room, with the number dropped; drops
    /// tick after tick within QUIET are the same burst.
    #[test]
    fn a_burst_is_reported_once_at_its_start_and_once_at_its_end() {
        let q = EventQueue::new(1);
        let t0 = Instant::now();
        assert_eq!(q.tick(t0), None);
        q.push(plan(Some("a"), "XidHardware", 0, "a"), t0);
        let mut now = t0;
        let mut changes = Vec::new();
        for i in 0..20 {
            now = t0 + Duration::from_secs(1) * i;
            // A drop each tick, and the writer empties the queue between ticks.
            q.push(plan(Some(&format!("p{i}")), "XidHardware", 0, "p"), now);
            changes.extend(q.tick(now));
            drain(&q, now);
            q.push(plan(Some(&format!("fill{i}")), "XidMemory", 0, "f"), now);
        }
        assert_eq!(changes, [Overflow::Started]);
        // The queue stays full (its last first waits): not over yet.
        assert_eq!(q.tick(now + QUIET), None);
        drain(&q, now);
        assert_eq!(
            q.tick(now + QUIET),
            Some(Overflow::Ended {
                dropped: 20,
                lasted: Duration::from_secs(19)
            })
        );
        assert_eq!(q.tick(now + QUIET * 2), None);
    }

    /// A new Event given up is forgotten (the next plan is a first again); a series update
    /// given up leaves the Event as written. A plan merged while the write was in flight
    /// waits as its repeat.
    #[test]
    fn done_keeps_what_is_on_the_server() {
        let q = EventQueue::new(4);
        let now = Instant::now();
        q.push(plan(Some("a"), "XidHardware", 0, "a"), now);
        let t = q.try_take(now).unwrap();
        assert_eq!(
            q.push(plan(Some("a"), "XidHardware", 0, "a2"), now),
            Pushed::Repeat
        );
        q.done(&t.key, Done::Dropped, now);
        assert_eq!(q.known(), 0);
        assert_eq!(
            q.push(plan(Some("a"), "XidHardware", 0, "a3"), now),
            Pushed::Queued
        );
        let t = q.try_take(now).unwrap();
        assert!(t.series.is_none());
        assert_eq!(
            q.push(plan(Some("a"), "XidHardware", 0, "a4"), now),
            Pushed::Repeat
        );
        q.done(&t.key, written(&t, 1), now);
        let due = now + SERIES_EVERY;
        let t = q.try_take(due).unwrap();
        assert_eq!(t.waiting.plan.note, "a4");
        assert_eq!(t.series.as_ref().unwrap().count, 2);
        q.done(&t.key, Done::Dropped, due);
        assert_eq!(
            q.push(plan(Some("a"), "XidHardware", 0, "a5"), due),
            Pushed::Repeat
        );
        let t = q.try_take(due).unwrap();
        assert_eq!(
            t.series.as_ref().unwrap().count,
            2,
            "the dropped update not counted"
        );
    }

    /// An Event not seen for SERIES_TTL is forgotten: the next plan makes a new Event. The
    /// memory holds at most `memory` Events written, forgetting the one seen longest ago.
    #[test]
    fn the_memory_is_bounded_in_time_and_size() {
        let q = EventQueue::with_memory(4, 4);
        let t0 = Instant::now();
        q.push(plan(Some("a"), "XidHardware", 0, "a"), t0);
        drain(&q, t0);
        let later = t0 + SERIES_TTL;
        assert_eq!(
            q.push(plan(Some("a"), "XidHardware", 0, "a"), later),
            Pushed::Queued
        );
        assert!(drain(&q, later)[0].series.is_none(), "a new Event");
        q.tick(later + SERIES_TTL);
        assert_eq!(q.known(), 0);
        for (i, p) in ["p0", "p1", "p2", "p3", "p4", "p5"].iter().enumerate() {
            let at = t0 + Duration::from_secs(i as u64);
            q.push(plan(Some(p), "XidHardware", 0, p), at);
            drain(&q, at);
        }
        assert_eq!(q.known(), 4);
        let at = t0 + Duration::from_secs(10);
        assert_eq!(
            q.push(plan(Some("p0"), "XidHardware", 0, "p0"), at),
            Pushed::Queued
        );
        assert_eq!(
            q.push(plan(Some("p5"), "XidHardware", 0, "p5"), at),
            Pushed::Repeat
        );
    }

    /// The writer waits for the next Event and gets one pushed while it waits; and it wakes
    /// for a repeat when it is due.
    #[tokio::test(start_paused = true)]
    async fn take_waits_for_a_push_or_a_due_repeat() {
        let q = std::sync::Arc::new(EventQueue::new(4));
        let waiter = {
            let q = std::sync::Arc::clone(&q);
            tokio::spawn(async move { q.take().await })
        };
        tokio::task::yield_now().await;
        q.push(plan(None, "XidHardware", 0, "late"), Instant::now());
        let got = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("take returned")
            .expect("task ran");
        assert_eq!(got.waiting.plan.note, "late");
        q.done(&got.key, written(&got, 1), Instant::now());
        let start = Instant::now();
        q.push(plan(None, "XidHardware", 0, "again"), start);
        let again = tokio::time::timeout(SERIES_EVERY * 2, q.take())
            .await
            .expect("the repeat taken when due");
        assert_eq!(again.waiting.plan.note, "again");
        assert!(Instant::now() >= start + SERIES_EVERY);
        assert!(q.is_empty());
    }
}
