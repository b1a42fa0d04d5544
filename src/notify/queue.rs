//! The Events waiting between the planner and the Events writer: bounded, in order of
//! importance, one entry per object and cause.
//!
//! - The Node's Events are written before any pod's: the writer takes the oldest Node Event
//!   first, and a pod Event only when none waits.
//! - An Event for an object and cause (the pod or the Node, the reason, the GPU or MIG
//!   instance) that already waits is merged into the waiting one (its note becomes the newest,
//!   its count rises) instead of taking a place: a storm of Xids costs one write per object
//!   and cause hit, not one per Xid.
//! - At most `capacity` wait. When full, a new pod Event is dropped; a new Node Event takes
//!   the place of the newest waiting pod Event (dropped instead), and is dropped only when
//!   Node Events fill the queue. Each drop is reported to the caller, which counts it.
//! - Whether the queue overflows is a state: it starts with the first drop and ends when the
//!   writer has emptied the queue, so a burst is logged once, not once per tick.
//!
//! Data only: it must not write to the API server, plan Events or count (its callers do).

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::plan::EventPlan;

/// An Event waiting to be written.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    /// When it was first queued (its retry time counts from here).
    pub since: Instant,
    /// What to write: the newest plan for its object and cause.
    pub plan: EventPlan,
    /// How many plans it stands for (1, plus each one merged into it).
    pub count: u32,
}

/// What became of a pushed Event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// It waits in a place of its own.
    Queued,
    /// It was merged into a waiting Event for the same object and cause.
    Merged,
    /// It waits, and the newest waiting pod Event was dropped to make room for it.
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
    /// The queue has been emptied since the burst.
    Ended,
}

#[derive(Debug, Default)]
struct Inner {
    node: VecDeque<Waiting>,
    pods: VecDeque<Waiting>,
    /// A drop happened and the queue has not been empty since.
    overflowing: bool,
    /// The queue was emptied after an overflow; the next push reports it.
    drained: bool,
}

impl Inner {
    fn len(&self) -> usize {
        self.node.len() + self.pods.len()
    }
}

/// The queue. One producer (the planner) and one consumer (the writer).
#[derive(Debug)]
pub struct EventQueue {
    inner: Mutex<Inner>,
    ready: Notify,
    capacity: usize,
}

/// Whether two plans are for the same object and cause.
fn same_object_and_cause(a: &EventPlan, b: &EventPlan) -> bool {
    fn pod(p: &EventPlan) -> Option<(&str, &str)> {
        p.pod
            .as_ref()
            .map(|r| (r.namespace.as_str(), r.name.as_str()))
    }
    a.reason == b.reason && a.action == b.action && pod(a) == pod(b)
}

impl EventQueue {
    /// An empty queue holding at most `capacity` Events (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            ready: Notify::new(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `plan` (see the module's rules); also says whether the overflow state changed.
    pub fn push(&self, plan: EventPlan, now: Instant) -> (Pushed, Option<Overflow>) {
        let mut q = self.lock();
        let mut change = None;
        if q.drained {
            q.drained = false;
            change = Some(Overflow::Ended);
        }
        let on_node = plan.pod.is_none();
        let class = if on_node { &mut q.node } else { &mut q.pods };
        let pushed = if let Some(w) = class
            .iter_mut()
            .find(|w| same_object_and_cause(&w.plan, &plan))
        {
            w.plan = plan;
            w.count = w.count.saturating_add(1);
            Pushed::Merged
        } else {
            let waiting = Waiting {
                since: now,
                plan,
                count: 1,
            };
            if q.len() < self.capacity {
                push_class(&mut q, on_node, waiting);
                Pushed::Queued
            } else if on_node && q.pods.pop_back().is_some() {
                push_class(&mut q, on_node, waiting);
                Pushed::QueuedDroppingPodEvent
            } else {
                Pushed::Dropped
            }
        };
        if pushed.dropped_one() && !q.overflowing {
            q.overflowing = true;
            change = Some(Overflow::Started);
        }
        drop(q);
        if matches!(pushed, Pushed::Queued | Pushed::QueuedDroppingPodEvent) {
            self.ready.notify_one();
        }
        (pushed, change)
    }

    /// The next Event to write, Node Events first, if one waits.
    pub fn try_pop(&self) -> Option<Waiting> {
        let mut q = self.lock();
        let next = q.node.pop_front().or_else(|| q.pods.pop_front());
        if q.len() == 0 && q.overflowing {
            q.overflowing = false;
            q.drained = true;
        }
        next
    }

    /// The next Event to write, waiting for one.
    pub async fn pop(&self) -> Waiting {
        loop {
            if let Some(w) = self.try_pop() {
                return w;
            }
            // One consumer: a notification sent while it was not waiting is kept as a permit.
            self.ready.notified().await;
        }
    }

    /// Events waiting now.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no Event waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn push_class(q: &mut Inner, on_node: bool, w: Waiting) {
    if on_node {
        q.node.push_back(w);
    } else {
        q.pods.push_back(w);
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

    fn drain(q: &EventQueue) -> Vec<Waiting> {
        std::iter::from_fn(|| q.try_pop()).collect()
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
        let notes: Vec<String> = drain(&q).into_iter().map(|w| w.plan.note).collect();
        assert_eq!(notes, ["2", "4", "1", "3"]);
    }

    /// A repeat for an object and cause that waits is merged: its count rises, the note is
    /// the newest, and it keeps its place and its time. Another pod, reason or GPU is not.
    #[test]
    fn repeats_merge_into_the_waiting_event() {
        let q = EventQueue::new(8);
        let t0 = Instant::now();
        assert_eq!(
            q.push(plan(Some("a"), "XidHardware", 0, "first"), t0).0,
            Pushed::Queued
        );
        for i in 0..1000 {
            let (p, _) = q.push(plan(Some("a"), "XidHardware", 0, &format!("n{i}")), t0);
            assert_eq!(p, Pushed::Merged);
        }
        q.push(plan(Some("b"), "XidHardware", 0, "b"), t0);
        q.push(plan(Some("a"), "XidMemory", 0, "m"), t0);
        q.push(plan(Some("a"), "XidHardware", 1, "g1"), t0);
        let got = drain(&q);
        assert_eq!(got.len(), 4);
        assert_eq!(got[0].count, 1001);
        assert_eq!(got[0].plan.note, "n999");
        assert_eq!(got[0].since, t0);
        assert!(got[1..].iter().all(|w| w.count == 1));
    }

    /// Full: a new pod Event is dropped; a Node Event takes the newest pod Event's place; once
    /// Node Events fill it, a new Node Event is dropped too. The overflow is reported once,
    /// at its first drop, and its end once, at the first push after the queue was emptied.
    #[test]
    fn a_full_queue_drops_pod_events_first_and_reports_the_overflow_once() {
        let q = EventQueue::new(3);
        let now = Instant::now();
        for p in ["a", "b", "c"] {
            assert_eq!(
                q.push(plan(Some(p), "XidHardware", 0, p), now),
                (Pushed::Queued, None)
            );
        }
        assert_eq!(
            q.push(plan(Some("d"), "XidHardware", 0, "d"), now),
            (Pushed::Dropped, Some(Overflow::Started))
        );
        assert_eq!(
            q.push(plan(Some("e"), "XidHardware", 0, "e"), now),
            (Pushed::Dropped, None)
        );
        // A repeat of a waiting one needs no room.
        assert_eq!(
            q.push(plan(Some("a"), "XidHardware", 0, "a2"), now).0,
            Pushed::Merged
        );
        for gpu in 0..3 {
            assert_eq!(
                q.push(plan(None, "XidHardware", gpu, "node"), now),
                (Pushed::QueuedDroppingPodEvent, None)
            );
        }
        assert_eq!(
            q.push(plan(None, "XidHardware", 9, "node"), now).0,
            Pushed::Dropped
        );
        let got = drain(&q);
        assert_eq!(got.len(), 3);
        assert!(got.iter().all(|w| w.plan.pod.is_none()), "{got:?}");
        assert_eq!(
            q.push(plan(Some("f"), "XidHardware", 0, "f"), now),
            (Pushed::Queued, Some(Overflow::Ended))
        );
        assert_eq!(q.len(), 1);
    }

    /// The writer waits for the next Event and gets one pushed while it waits.
    #[tokio::test]
    async fn pop_waits_for_a_push() {
        let q = std::sync::Arc::new(EventQueue::new(4));
        let waiter = {
            let q = std::sync::Arc::clone(&q);
            tokio::spawn(async move { q.pop().await })
        };
        tokio::task::yield_now().await;
        q.push(plan(None, "XidHardware", 0, "late"), Instant::now());
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .expect("pop returned")
            .expect("task ran");
        assert_eq!(got.plan.note, "late");
        assert!(q.is_empty());
    }
}
