//! The machinery every Kubernetes API reflector shares: a background watch task
//! ([`Reflector`]) that publishes an immutable index (`LatestIndex`) with an atomic swap, the
//! reflector's state ([`ReflectorStatus`]), and the recovery probe that clears a failure once
//! the API answers again (`Recovery`).
//!
//! Readers ([`Reflector::index`]) never wait on the API. Failures are counted in
//! [`ReflectorStatus::errors`]; the index keeps its last content meanwhile. Because a re-watch
//! that succeeds produces no event until an object changes, a one-object list with the same
//! selector probes the API 2 s after a failure (then less often) to clear
//! [`ReflectorStatus::last_error`] once it answers again.
//!
//! Generic over the index: it must not know pods or ResourceSlices (that is
//! [`super::meta`] and [`super::dra`]), nor describe or log failures
//! ([`super::api_error`], [`super::failure_log`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::ArcSwap;
use futures::StreamExt;
use kube::api::{Api, ListParams};

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
        st.synced |= synced;
    }

    /// Marks a successful call; `synced` is set after a complete list.
    pub(crate) fn ok(&self, synced: bool) {
        let mut st = self.lock();
        st.last_error = None;
        st.synced |= synced;
    }

    pub(crate) fn failed(&self, msg: String) {
        let mut st = self.lock();
        st.errors += 1;
        st.last_error = Some(msg);
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

/// Clears `last_error` once the API answers again.
///
/// kube's watcher reports failures but not a silent recovery: after a failed re-watch, a
/// successful one produces no event until an object changes, which on a quiet node can take
/// hours. So after a failure the reflector lists one object (`limit=1`, same selector) a
/// little later; when that succeeds the error is cleared. Probe failures are not counted
/// (the watcher's own retries are).
pub(crate) struct Recovery {
    at: Option<tokio::time::Instant>,
    wait: Duration,
}

impl Recovery {
    pub(crate) fn new() -> Self {
        Self {
            at: None,
            wait: PROBE_MIN,
        }
    }

    /// A watcher failure: probe after the current delay.
    pub(crate) fn failed(&mut self) {
        self.at = Some(tokio::time::Instant::now() + self.wait);
    }

    /// A successful list or event: no probe needed.
    pub(crate) fn ok(&mut self) {
        self.at = None;
        self.wait = PROBE_MIN;
    }

    /// The next item of `events`, probing `api` with `params` in the meantime when due.
    pub(crate) async fn next<S, K, T>(
        &mut self,
        events: &mut S,
        api: &Api<K>,
        params: &ListParams,
        shared: &LatestIndex<T>,
    ) -> Option<S::Item>
    where
        S: futures::Stream + Unpin,
        K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
        T: Default,
    {
        loop {
            let Some(at) = self.at else {
                return events.next().await;
            };
            tokio::select! {
                item = events.next() => return item,
                () = tokio::time::sleep_until(at) => {
                    if api.list(params).await.is_ok() {
                        self.ok();
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
                    shared.failed(i.to_string());
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
        assert!(checked > 0);
    }
}
