//! The machinery every Kubernetes API reflector shares: a background watch task
//! ([`Reflector`]) that publishes an immutable index (`LatestIndex`) with an atomic swap, the
//! reflector's state ([`ReflectorStatus`]), and the pacing of its watch (`Recovery`): the
//! retry delay after a failure and the probe that clears a failure once the API answers again.
//!
//! Readers ([`Reflector::index`]) never wait on the API. Failures are counted in
//! [`ReflectorStatus::errors`]; the index keeps its last content meanwhile. A failed list or
//! watch is retried after a delay that doubles from 1 s to 30 s while the failures go on: kube's
//! own backoff (`default_backoff`) is reset by the `Init` event that begins every new list, so
//! against an API that keeps refusing (a 403 without RBAC) it retried about once a second for
//! ever. Because a re-watch that succeeds produces no event until an object changes, a
//! one-object list with the same selector probes the API 2 s after a failure (then less often)
//! to clear [`ReflectorStatus::last_error`] once it answers again, and ends the retry delay.
//!
//! Generic over the index: it must not know pods or ResourceSlices (that is
//! [`super::meta`] and [`super::dra`]), nor describe or log failures
//! ([`super::api_error`], [`super::failure_log`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use futures::StreamExt;
use kube::api::{Api, ListParams};
use kube::runtime::watcher::{self, Event};

use crate::base::backoff::Backoff;

/// The health of a background reflector, for self-metrics and the log.
#[derive(Debug, Clone, Default)]
pub struct ReflectorStatus {
    /// `true` once a complete initial list has been received (the index is meaningful).
    /// It stays `true` through later failures: the index then keeps its last known content.
    pub synced: bool,
    /// Objects in the current index.
    pub objects: usize,
    /// Failed API calls (lists, watches, discovery) so far.
    pub errors: u64,
    /// The last failure, until the next successful list or event, or until a one-object
    /// probe list made after the failure succeeds (see the module documentation).
    pub last_error: Option<String>,
    /// Wall time (seconds since the Unix epoch) of the last change to the index; 0 before the
    /// first.
    pub last_change_unix: f64,
    /// The API refused the exporter's credentials or permissions (401 or 403) at the last
    /// failure, and nothing has succeeded since: RBAC (or the token) is missing, not the API.
    pub refused: bool,
}

/// The published index and status of a background reflector.
pub(crate) struct LatestIndex<T> {
    current: ArcSwap<T>,
    status: Mutex<ReflectorStatus>,
}

impl<T: Default> LatestIndex<T> {
    pub(crate) fn new() -> Self {
        Self {
            current: ArcSwap::from_pointee(T::default()),
            status: Mutex::new(ReflectorStatus::default()),
        }
    }

    pub(crate) fn load(&self) -> Arc<T> {
        self.current.load_full()
    }

    pub(crate) fn status(&self) -> ReflectorStatus {
        self.lock().clone()
    }

    /// Publishes a new index of `objects` objects from a successful call (`synced`: after a
    /// complete list). The status is marked good before the lock is released and the index is
    /// stored while it is held, so a reader that sees the new index and then reads the status
    /// finds it good: a tick never serves attribution from a new answer beside the source's
    /// old error (the kubelet client had that race, found in CI).
    pub(crate) fn publish(&self, value: T, objects: usize, synced: bool) {
        let mut st = self.lock();
        self.current.store(Arc::new(value));
        st.objects = objects;
        st.last_change_unix = crate::base::clock::unix_now();
        st.last_error = None;
        st.refused = false;
        st.synced |= synced;
    }

    /// Marks a successful call; `synced` is set after a complete list.
    pub(crate) fn ok(&self, synced: bool) {
        let mut st = self.lock();
        st.last_error = None;
        st.refused = false;
        st.synced |= synced;
    }

    /// Counts a failed call; `refused`: the API answered 401 or 403.
    pub(crate) fn failed(&self, msg: String, refused: bool) {
        let mut st = self.lock();
        st.errors += 1;
        st.last_error = Some(msg);
        st.refused = refused;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ReflectorStatus> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Aborts a background task when dropped.
struct TaskGuard(tokio::task::AbortHandle);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// First delay of the recovery probe after a failure; it doubles up to [`PROBE_MAX`] while the
/// probe fails.
const PROBE_MIN: Duration = Duration::from_secs(2);
/// Longest delay of the recovery probe.
const PROBE_MAX: Duration = Duration::from_secs(60);
/// First wait before a failed list or watch is retried; it doubles up to [`RETRY_MAX`] while
/// the failures go on.
const RETRY_MIN: Duration = Duration::from_secs(1);
/// Longest wait before a retry (kube's own backoff stops at the same).
const RETRY_MAX: Duration = Duration::from_secs(30);

/// Paces a reflector's watch: the retry delay after a failure and the recovery probe.
///
/// The watcher retries at once after an error (`Recovery::next` waits the retry delay before it
/// polls the stream again, the delay doubling while failures go on and starting again after a
/// complete list or a change). kube's watcher also reports failures but not a silent recovery:
/// after a failed re-watch, a successful one produces no event until an object changes, which
/// on a quiet node can take hours. So after a failure the reflector lists one object
/// (`limit=1`, same selector) a little later; when that succeeds the error is cleared and the
/// retry delay ends. Probe failures are not counted (the watcher's own are).
pub(crate) struct Recovery {
    /// When the probe is due.
    at: Option<tokio::time::Instant>,
    wait: Duration,
    /// Until when the stream is left alone after a failure.
    resume: Option<tokio::time::Instant>,
    retry: Backoff,
}

impl Recovery {
    pub(crate) fn new() -> Self {
        Self {
            at: None,
            wait: PROBE_MIN,
            resume: None,
            retry: Backoff::new(RETRY_MIN, RETRY_MAX),
        }
    }

    /// A watcher failure: retry after the current delay, probe after the probe's.
    fn failed(&mut self) {
        let now = tokio::time::Instant::now();
        self.resume = Some(now + self.retry.next_delay());
        self.at = Some(now + self.wait);
    }

    /// A complete list or a change: no probe needed, the next failure retries soon again.
    fn ok(&mut self) {
        self.at = None;
        self.wait = PROBE_MIN;
        self.retry.reset();
    }

    /// The next item of `events`, not polled before the retry delay after a failure, probing
    /// `api` with `params` in the meantime when due. The beginning of a list (`Init`, its
    /// objects) is not progress: only a complete list (`InitDone`) or a change is.
    pub(crate) async fn next<S, K, T>(
        &mut self,
        events: &mut S,
        api: &Api<K>,
        params: &ListParams,
        shared: &LatestIndex<T>,
    ) -> Option<S::Item>
    where
        S: futures::Stream<Item = Result<Event<K>, watcher::Error>> + Unpin,
        K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
        T: Default,
    {
        loop {
            let now = tokio::time::Instant::now();
            let resume = self.resume.filter(|r| *r > now);
            self.resume = resume;
            let far = now + PROBE_MAX;
            tokio::select! {
                item = events.next(), if resume.is_none() => {
                    match &item {
                        Some(Err(_)) => self.failed(),
                        Some(Ok(Event::InitDone | Event::Apply(_) | Event::Delete(_))) => self.ok(),
                        Some(Ok(Event::Init | Event::InitApply(_))) | None => {}
                    }
                    return item;
                }
                () = tokio::time::sleep_until(resume.unwrap_or(far)), if resume.is_some() => {
                    self.resume = None;
                }
                () = tokio::time::sleep_until(self.at.unwrap_or(far)), if self.at.is_some() => {
                    if api.list(params).await.is_ok() {
                        // The API answers again: clear the error, and retry now (a failure
                        // after this is a new one: its retry comes soon again).
                        self.ok();
                        self.resume = None;
                        shared.ok(false);
                    } else {
                        self.wait = (self.wait * 2).min(PROBE_MAX);
                        self.at = Some(tokio::time::Instant::now() + self.wait);
                    }
                }
            }
        }
    }
}

/// A background reflector task and the latest value it published. Dropping it aborts the
/// task. [`super::meta::PodSource`] and [`super::dra::DraSource`] are its two kinds.
pub struct Reflector<T> {
    shared: Arc<LatestIndex<T>>,
    _task: TaskGuard,
}

impl<T: Default + Send + Sync + 'static> Reflector<T> {
    /// Runs `task` (given the `LatestIndex` it publishes into) on `runtime`.
    pub(crate) fn start<F>(
        runtime: &tokio::runtime::Handle,
        task: impl FnOnce(Arc<LatestIndex<T>>) -> F,
    ) -> Arc<Self>
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let shared = Arc::new(LatestIndex::new());
        let handle = runtime.spawn(task(Arc::clone(&shared)));
        Arc::new(Self {
            shared,
            _task: TaskGuard(handle.abort_handle()),
        })
    }

    /// The latest value (an atomic load; never waits on the API).
    pub fn index(&self) -> Arc<T> {
        self.shared.load()
    }

    /// The reflector's detailed state.
    pub fn status(&self) -> ReflectorStatus {
        self.shared.status()
    }

    /// The reflector's state in the form every source reports (no age: a reflector's data
    /// stays current while its watch is up).
    pub fn health(&self) -> crate::sources::health::Health {
        let st = self.status();
        crate::sources::health::Health {
            up: st.synced && st.last_error.is_none(),
            last_success_unix: None,
            errors: st.errors,
            last_error: st.last_error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that sees a newly published index and then reads the status never finds the
    /// error from before that publication: the status is marked good in the same step.
    #[test]
    fn a_published_index_is_never_seen_beside_the_error_it_replaced() {
        let shared = Arc::new(LatestIndex::<u64>::new());
        let writer = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                for i in 1..=20_000u64 {
                    shared.failed(i.to_string(), i % 2 == 0);
                    shared.publish(i, 1, true);
                }
            })
        };
        let mut checked = 0u64;
        while !writer.is_finished() || checked == 0 {
            let seen = *shared.load();
            let st = shared.status();
            if let Some(e) = st.last_error {
                let failed_before: u64 = e.parse().unwrap();
                assert!(
                    failed_before > seen,
                    "index {seen} served beside the error {failed_before} it replaced"
                );
            } else if seen > 0 {
                assert!(st.synced);
            }
            checked += 1;
        }
        writer.join().unwrap();
        let st = shared.status();
        assert_eq!(
            (*shared.load(), st.objects, st.last_error),
            (20_000, 1, None)
        );
        assert!(!st.refused, "a publication clears the refusal");
        assert!(checked > 0);
    }
}
