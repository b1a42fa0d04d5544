//! The API writes of the Kubernetes outputs, off the tick and scrape paths: the Node
//! conditions (a strategic-merge patch of `nodes/<node>/status` that names only the
//! exporter's own condition types, so another writer's are never touched) and the Events
//! (`events.k8s.io/v1`: a new Event created under a name fixed before its first try, so that
//! a retry whose first try was made is answered `409 AlreadyExists` and counts as written; a
//! repeat is a merge patch of that Event's `series`).
//!
//! Bounded: the Events wait in a queue of fixed size (`super::queue`: the Node's first, a
//! first Event before any repeat, repeats merged into one series update per Event each 30 s,
//! pod Events dropped first when full, counted), one that failed in a way that may pass or
//! whose answer was lost is retried in order for at most 10 minutes (then dropped and
//! counted), one that can never be
//! written (a request that cannot be built, a refusal for good) is dropped at once, counted
//! with its reason and logged once per cause, each call has a deadline, and the conditions are a
//! latest-wins value retried with backoff, never a queue, and written again for a while after
//! a call that timed out (the server may still make that write, late, over a newer one). Each
//! kind logs one line per change of state (failing, and working again), never one per call.
//! It must not plan what to write (`plan` does) or read the snapshot.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, ObjectReference};
use k8s_openapi::api::events::v1::{Event as K8sEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use std::collections::BTreeSet;

use tokio::sync::watch;
use tracing::{info, warn};

use super::counts::WriteCounts;
use super::plan::{Condition, EventPlan};
use super::queue::{Done, EventQueue, Series, Taken};
use crate::base::backoff::Backoff;
use crate::base::cause_log::{CauseLog, cause};
use crate::exposition::counted::{DropReason, KubeWriteKind as Kind, WriteOutcome};
use crate::sources::kube::api_error::describe_kube_error;

/// The name the exporter reports as (`reportingController`, the field manager).
pub const CONTROLLER: &str = "gpu-exporter";

/// Whether the last write of one kind worked, to log each change once.
#[derive(Default)]
struct LinkState {
    causes: CauseLog,
}

impl LinkState {
    fn ok(&mut self, what: &str) {
        if self.causes.ok() {
            info!("Kubernetes {what} are written again");
        }
    }

    /// `error`'s status code or kind (its first part) tells one failure from another, so a
    /// lasting failure whose message carries a changing detail is logged once.
    fn failed(&mut self, what: &str, error: String) {
        if self.causes.is_new(cause(&error, 1)) {
            warn!(
                "cannot write Kubernetes {what}: {error}; metrics and the page are unaffected, \
                 the exporter retries (logged again only when this changes)"
            );
        }
    }
}

/// How one API call failed.
enum Failure {
    /// The server refused or errored, or could not be reached, or the request could not be
    /// made: the error in a line, whether the same call may work later (see [`retryable()`]),
    /// and the server's status code, if it answered.
    Error {
        line: String,
        retryable: Retryable,
        code: Option<u16>,
    },
    /// No answer within the deadline.
    TimedOut(Duration),
}

/// Whether a failed call may work when made again unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retryable {
    /// It may: try again.
    Retry,
    /// The server refused it for good.
    Rejected,
    /// The request could not be built or encoded: no server saw it, none ever will.
    Invalid,
}

impl Failure {
    fn line(&self) -> String {
        match self {
            Self::Error { line, .. } => line.clone(),
            Self::TimedOut(d) => format!("timed out after {} ms", d.as_millis()),
        }
    }
}

/// Whether a call that failed with `e` may work when made again unchanged: no connection, a
/// server error (5xx), throttling (429), a request timeout (408), or a refusal (401, 403:
/// RBAC that is granted after the exporter started, or a token being rotated) may. Other
/// refusals (400, 404: the pod's namespace is gone; 409; 422: an invalid object) never will,
/// nor a request that could not be built (a pod name or namespace with characters a URI
/// cannot carry) or encoded.
fn retryable(e: &kube::Error) -> Retryable {
    match e {
        kube::Error::Api(s) if matches!(s.code, 401 | 403 | 408 | 429) || s.code >= 500 => {
            Retryable::Retry
        }
        kube::Error::Api(_) => Retryable::Rejected,
        kube::Error::BuildRequest(_) | kube::Error::HttpError(_) | kube::Error::SerdeError(_) => {
            Retryable::Invalid
        }
        _ => Retryable::Retry,
    }
}

/// Runs one API call with a deadline.
async fn within<T>(
    timeout: Duration,
    call: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<(), Failure> {
    match tokio::time::timeout(timeout, call).await {
        Ok(Ok(_)) => Ok(()),
        // `403 Forbidden: <the server's message>`, or the client's error chain.
        Ok(Err(e)) => Err(Failure::Error {
            line: describe_kube_error(&e),
            retryable: retryable(&e),
            code: match &e {
                kube::Error::Api(s) => Some(s.code),
                _ => None,
            },
        }),
        Err(_) => Err(Failure::TimedOut(timeout)),
    }
}

/// Counts one write of `kind` and logs a change of state; returns how it ended.
fn record(
    counts: &WriteCounts,
    kind: Kind,
    state: &mut LinkState,
    what: &str,
    result: Result<(), Failure>,
) -> WriteOutcome {
    let outcome = match &result {
        Ok(()) => WriteOutcome::Success,
        Err(Failure::Error { .. }) => WriteOutcome::Failure,
        Err(Failure::TimedOut(_)) => WriteOutcome::Timeout,
    };
    counts.write(kind, outcome);
    match result {
        Ok(()) => state.ok(what),
        Err(f) => state.failed(what, f.line()),
    }
    outcome
}

/// The node's object reference.
pub fn node_ref(node: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Node".into()),
        name: Some(node.to_owned()),
        uid: Some(node.to_owned()),
        ..ObjectReference::default()
    }
}

/// How long a write the exporter stopped waiting for may still be made by the server (the
/// API server's default request timeout, `--request-timeout=1m0s`).
const LATE_WRITES: Duration = Duration::from_secs(60);

/// How often the conditions are written again while a late write may still land.
const REWRITE: Duration = Duration::from_secs(5);

/// Writes the desired conditions whenever they change, retrying a failed write with backoff.
/// A write that timed out may still be made later by the server, over a newer one: until
/// `LATE_WRITES` has passed since the last such write, the current conditions are written
/// again every `REWRITE` (the same conditions; only `lastHeartbeatTime` moves).
pub async fn conditions(
    client: kube::Client,
    node: String,
    timeout: Duration,
    mut desired: watch::Receiver<Vec<Condition>>,
    counts: Arc<WriteCounts>,
) {
    let nodes: Api<Node> = Api::all(client);
    let mut state = LinkState::default();
    let mut written: Option<Vec<Condition>> = None;
    // When each condition's status last changed, for `lastTransitionTime`.
    let mut transitions: Vec<(&'static str, bool, String)> = Vec::new();
    let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(60));
    // Until when a timed-out write may still land.
    let mut unsure_until: Option<tokio::time::Instant> = None;
    loop {
        let want = desired.borrow_and_update().clone();
        // Nothing to write before the first snapshot has been planned.
        if !want.is_empty() && written.as_ref() != Some(&want) {
            let now = Timestamp::now().to_string();
            let conds: Vec<serde_json::Value> = want
                .iter()
                .map(|c| {
                    let since = match transitions.iter_mut().find(|t| t.0 == c.type_) {
                        Some(t) if t.1 == c.status => t.2.clone(),
                        Some(t) => {
                            *t = (c.type_, c.status, now.clone());
                            now.clone()
                        }
                        None => {
                            transitions.push((c.type_, c.status, now.clone()));
                            now.clone()
                        }
                    };
                    json!({
                        "type": c.type_,
                        "status": if c.status { "True" } else { "False" },
                        "reason": c.reason,
                        "message": c.message,
                        "lastHeartbeatTime": now,
                        "lastTransitionTime": since,
                    })
                })
                .collect();
            let body = json!({ "status": { "conditions": conds } });
            let patch = Patch::Strategic(&body);
            let params = PatchParams {
                field_manager: Some(CONTROLLER.into()),
                ..PatchParams::default()
            };
            let call = nodes.patch_status(&node, &params, &patch);
            let what = format!("Node conditions on {node}");
            match record(
                &counts,
                Kind::Condition,
                &mut state,
                &what,
                within(timeout, call).await,
            ) {
                WriteOutcome::Success => {
                    written = Some(want);
                    backoff.reset();
                }
                outcome => {
                    if outcome == WriteOutcome::Timeout {
                        unsure_until = Some(tokio::time::Instant::now() + LATE_WRITES);
                    }
                    tokio::time::sleep(backoff.next_delay()).await;
                    continue;
                }
            }
        }
        let changed = match unsure_until {
            Some(until) if tokio::time::Instant::now() < until => {
                match tokio::time::timeout(REWRITE, desired.changed()).await {
                    Ok(changed) => changed,
                    Err(_) => {
                        written = None;
                        Ok(())
                    }
                }
            }
            _ => {
                unsure_until = None;
                desired.changed().await
            }
        };
        if changed.is_err() {
            return;
        }
    }
}

/// Publishes the queued Events one at a time (`super::queue`: the Node's first, a first Event
/// for an object and cause before any repeat), each call within `timeout`: a new Event is
/// created under a name of its own, fixed before its first try, and a repeat updates the
/// `series` of the Event written before (one that is gone from the server, 404, is created
/// again). A write that failed in a way that may pass, or whose answer was lost (it timed out,
/// or the connection closed after the request was sent), is made again with backoff (0.5 s
/// doubling to 30 s), holding the Events behind it, until it is written or has waited
/// `retry_for` since it was queued (`super::EVENT_RETRY_FOR`); then it is given up and counted
/// as dropped. Made again, a creation carries the same name, so one the server had made is
/// answered `409 AlreadyExists` and counts as written: an Event is never made twice; a series
/// update sets the count, so it may be made twice. One that can never be written (refused for
/// good, or a request that cannot be built) is dropped at once, counted with its reason, and
/// logged once per cause.
pub async fn events(
    client: kube::Client,
    node: String,
    timeout: Duration,
    retry_for: Duration,
    queue: Arc<EventQueue>,
    counts: Arc<WriteCounts>,
) {
    let mut writer = EventWriter::new(&node, timeout, retry_for, counts);
    loop {
        let taken = queue.take().await;
        let done = writer.publish(&client, &taken).await;
        let forgotten = queue.done(&taken.key, done, tokio::time::Instant::now());
        for _ in 0..forgotten {
            writer.counts.dropped(DropReason::QueueFull);
        }
    }
}

/// The object one Event is about, and the namespace it is written in (the pod's, or
/// `default` for the Node's).
struct Target {
    regarding: ObjectReference,
    namespace: String,
}

impl Target {
    /// The pod `e` names, else the Node (`node`).
    fn of(e: &EventPlan, node: &ObjectReference) -> Self {
        let regarding = match &e.pod {
            None => node.clone(),
            Some(p) => ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                namespace: Some(p.namespace.clone()),
                name: Some(p.name.clone()),
                uid: p.uid.clone(),
                ..ObjectReference::default()
            },
        };
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".into());
        Self {
            regarding,
            namespace,
        }
    }
}

/// The Event writer's settings and what it keeps from one Event to the next: the names
/// given, the state of the link, and what was logged.
struct EventWriter {
    /// The Node's object reference (`related` of a pod's Event).
    node: ObjectReference,
    /// `reportingInstance`: `<controller>-<node>`.
    instance: String,
    timeout: Duration,
    retry_for: Duration,
    counts: Arc<WriteCounts>,
    names: Names,
    state: LinkState,
    /// Whether the last Event given up has been logged (once per run of give-ups).
    giving_up: bool,
    /// The causes of Events dropped for good that were logged (each once).
    never_written: BTreeSet<String>,
}

impl EventWriter {
    fn new(node: &str, timeout: Duration, retry_for: Duration, counts: Arc<WriteCounts>) -> Self {
        Self {
            node: node_ref(node),
            instance: format!("{CONTROLLER}-{node}"),
            timeout,
            retry_for,
            counts,
            names: Names::default(),
            state: LinkState::default(),
            giving_up: false,
            never_written: BTreeSet::new(),
        }
    }

    /// Writes the Event `taken` until it is written, dropped for good or given up (see
    /// [`events()`]), and says which.
    async fn publish(&mut self, client: &kube::Client, taken: &Taken) -> Done {
        let e = &taken.waiting.plan;
        let target = Target::of(e, &self.node);
        let api: Api<K8sEvent> = Api::namespaced(client.clone(), &target.namespace);
        let mut write = match &taken.series {
            Some(s) => Write::Series(s.clone()),
            None => Write::Create(self.new_event(e, &target, taken.waiting.count)),
        };
        let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(30));
        loop {
            let result = match &write {
                Write::Create(ev) => within(self.timeout, create_event(&api, ev)).await,
                Write::Series(s) => within(self.timeout, update_series(&api, s)).await,
            };
            // A series whose Event is gone from the server (expired, deleted): created anew,
            // with the whole count.
            if let (
                Write::Series(s),
                Err(Failure::Error {
                    code: Some(404), ..
                }),
            ) = (&write, &result)
            {
                self.counts.write(Kind::Event, WriteOutcome::Failure);
                write = Write::Create(self.new_event(e, &target, s.count));
                continue;
            }
            if let Some((reason, line)) = never_written(&result) {
                self.drop_never_written(&target, reason, line);
                return Done::Dropped;
            }
            if record(&self.counts, Kind::Event, &mut self.state, "Events", result)
                == WriteOutcome::Success
            {
                self.giving_up = false;
                return Done::Written(write.written(taken.waiting.count));
            }
            let wait = backoff.next_delay();
            if taken.waiting.since.elapsed() + wait > self.retry_for {
                self.give_up();
                return Done::Dropped;
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// A new Event for `e` on `target` under a name of its own, a series of `count` when
    /// `count` is 2 or more.
    fn new_event(&mut self, e: &EventPlan, target: &Target, count: u32) -> Box<K8sEvent> {
        let now = Timestamp::now();
        let object = target.regarding.name.as_deref().unwrap_or(CONTROLLER);
        Box::new(K8sEvent {
            metadata: ObjectMeta {
                name: Some(self.names.next(object, now)),
                namespace: Some(target.namespace.clone()),
                ..ObjectMeta::default()
            },
            type_: Some(if e.warning { "Warning" } else { "Normal" }.into()),
            reason: Some(e.reason.into()),
            note: Some(e.note.clone()),
            action: Some(e.action.clone()),
            event_time: Some(MicroTime(now)),
            regarding: Some(target.regarding.clone()),
            related: e.pod.as_ref().map(|_| self.node.clone()),
            reporting_controller: Some(CONTROLLER.into()),
            reporting_instance: Some(self.instance.clone()),
            series: (count >= 2).then(|| EventSeries {
                count: i32::try_from(count).unwrap_or(i32::MAX),
                last_observed_time: MicroTime(now),
            }),
            ..K8sEvent::default()
        })
    }

    /// Counts an Event that can never be written as a failed write dropped for `reason`, and
    /// logs it once per cause. Not a state of the link (the next Event may work), so the
    /// queue goes on.
    fn drop_never_written(&mut self, target: &Target, reason: DropReason, line: &str) {
        self.counts.write(Kind::Event, WriteOutcome::Failure);
        self.counts.dropped(reason);
        if self.never_written.len() < 64 && self.never_written.insert(cause(line, 1)) {
            warn!(
                "a Kubernetes Event on {} can never be written and is dropped: \
                 {line} (counted in gpu_exporter_kube_writes_dropped_total\
                 {{reason=\"{}\"}}; logged once per cause)",
                describe_object(&target.regarding),
                reason.label()
            );
        }
    }

    /// Counts an Event given up after `retry_for` as dropped, and logs the first of a run of
    /// give-ups (the run ends when an Event is written).
    fn give_up(&mut self) {
        self.counts.dropped(DropReason::RetriesExpired);
        if !self.giving_up {
            self.giving_up = true;
            warn!(
                "a Kubernetes Event could not be written for {} s and is given up \
                 (counted in gpu_exporter_kube_writes_dropped_total\
                 {{reason=\"retries_expired\"}}; logged again only after an Event is \
                 written)",
                self.retry_for.as_secs()
            );
        }
    }
}

/// Why a write that ended in `result` can never be written, with the error's line: refused
/// for good, or a request that cannot be built; `None` for a success or what may pass.
fn never_written(result: &Result<(), Failure>) -> Option<(DropReason, &str)> {
    match result {
        Err(Failure::Error {
            retryable: Retryable::Rejected,
            line,
            ..
        }) => Some((DropReason::Rejected, line)),
        Err(Failure::Error {
            retryable: Retryable::Invalid,
            line,
            ..
        }) => Some((DropReason::Invalid, line)),
        _ => None,
    }
}

/// One Event write.
enum Write {
    /// A new Event object.
    Create(Box<K8sEvent>),
    /// The series of the Event written before.
    Series(Series),
}

impl Write {
    /// What is on the server once this write has worked; `count` plans were taken for it.
    fn written(&self, count: u32) -> Series {
        match self {
            Self::Create(ev) => Series {
                namespace: ev.metadata.namespace.clone().unwrap_or_default(),
                name: ev.metadata.name.clone().unwrap_or_default(),
                count: ev
                    .series
                    .as_ref()
                    .and_then(|s| u32::try_from(s.count).ok())
                    .unwrap_or(count),
            },
            Self::Series(s) => s.clone(),
        }
    }
}

/// Creates `ev`. `409 AlreadyExists` is success: the name is this Event's own, fixed before
/// its first try, so the object is the one an earlier try made (its answer lost).
async fn create_event(api: &Api<K8sEvent>, ev: &K8sEvent) -> Result<(), kube::Error> {
    match api.create(&PostParams::default(), ev).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(()),
        Err(e) => Err(e),
    }
}

/// The body of a series update: only the `series` (the rest of an `events.k8s.io/v1` Event
/// is immutable).
#[derive(Debug, serde::Serialize)]
struct SeriesPatch {
    series: EventSeries,
}

/// Sets the series of the Event `s` names to its count, observed now.
async fn update_series(api: &Api<K8sEvent>, s: &Series) -> Result<(), kube::Error> {
    let body = SeriesPatch {
        series: EventSeries {
            count: i32::try_from(s.count).unwrap_or(i32::MAX),
            last_observed_time: MicroTime(Timestamp::now()),
        },
    };
    api.patch(&s.name, &PatchParams::default(), &Patch::Merge(&body))
        .await
        .map(|_| ())
}

/// The names of new Events: `<object>.<hex nanoseconds>`, as kube's recorder and client-go
/// name them, with the object's name reduced to what an object name may hold, and the time
/// strictly rising within the process so that two Events never share a name.
#[derive(Default)]
struct Names {
    last: i128,
}

impl Names {
    /// The longest object name kept (the whole name stays within 253 characters).
    const OBJECT_MAX: usize = 253 - 1 - 32;

    fn next(&mut self, object: &str, now: Timestamp) -> String {
        let nanos = now.as_nanosecond().max(self.last + 1);
        self.last = nanos;
        let lowered: String = object
            .chars()
            .map(|c| match c {
                'a'..='z' | '0'..='9' | '-' | '.' => c,
                'A'..='Z' => c.to_ascii_lowercase(),
                _ => '-',
            })
            .take(Self::OBJECT_MAX)
            .collect();
        let part = lowered.trim_matches(|c: char| !c.is_ascii_alphanumeric());
        let part = if part.is_empty() { CONTROLLER } else { part };
        format!("{part}.{nanos:x}")
    }
}

/// `Pod ns/name` or `Node name`, its names quoted as Rust debug strings (they may hold any
/// character), for a log line.
fn describe_object(o: &ObjectReference) -> String {
    let kind = o.kind.as_deref().unwrap_or("object");
    match (&o.namespace, &o.name) {
        (Some(ns), Some(n)) => format!("{kind} {ns:?}/{n:?}"),
        (None, Some(n)) => format!("{kind} {n:?}"),
        _ => kind.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(
            kube::core::Status::failure("refused", "Refused").with_code(code),
        ))
    }

    /// What may pass is retried (RBAC granted later, a server error, throttling, no
    /// connection); a refusal that never will (the namespace gone, an invalid object) is not,
    /// nor a request that cannot be built.
    #[test]
    fn only_failures_that_may_pass_are_retried() {
        for code in [401, 403, 408, 429, 500, 503] {
            assert_eq!(retryable(&api(code)), Retryable::Retry, "{code}");
        }
        for code in [400, 404, 409, 422] {
            assert_eq!(retryable(&api(code)), Retryable::Rejected, "{code}");
        }
        let io = kube::Error::Service(Box::new(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert_eq!(retryable(&io), Retryable::Retry);
        // What kube's client says for a namespace with characters a URI cannot carry.
        let bad_uri = kube::core::Request::new("/apis/events.k8s.io/v1/namespaces/a\"b\n<script>")
            .create(&kube::api::PostParams::default(), Vec::new())
            .unwrap_err();
        assert_eq!(
            retryable(&kube::Error::BuildRequest(bad_uri)),
            Retryable::Invalid
        );
    }
}
