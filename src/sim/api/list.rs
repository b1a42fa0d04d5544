//! Lists and watches of the fake API server: a page of a collection (as a list or, for
//! kubectl, a `Table`), and the chunked stream of watch events that follows the store's change
//! log, with the selectors applied to each object as served.
//!
//! It reads the store; it must not change it.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::http::*;
use super::kinds::*;
use super::store::Inner;
use super::table::table;

/// What one list request asks for.
pub(super) struct ListSpec<'a> {
    pub(super) kind: Kind,
    pub(super) namespace: Option<&'a str>,
    pub(super) api_version: &'a str,
    pub(super) selector: &'a Selector,
    pub(super) limit: Option<usize>,
    pub(super) offset: Option<usize>,
    /// Answer a `Table` (kubectl's `get`).
    pub(super) as_table: bool,
}

pub(super) fn list_response(inner: &Inner, spec: &ListSpec) -> Response {
    let st = inner.lock();
    let all: Vec<Value> = st
        .objects(spec.kind, spec.namespace)
        .into_iter()
        .map(|o| served(spec.kind, spec.api_version, o))
        .filter(|o| spec.selector.matches(o))
        .collect();
    let start = spec.offset.unwrap_or(0).min(all.len());
    let end = spec
        .limit
        .filter(|l| *l > 0)
        .map_or(all.len(), |l| start.saturating_add(l).min(all.len()));
    let items = all.get(start..end).unwrap_or_default();
    let rv = st.rv.to_string();
    if spec.as_table {
        return json_response(200, &table(spec.kind, items, &rv));
    }
    let mut metadata = json!({"resourceVersion": rv});
    if end < all.len()
        && let Some(m) = metadata.as_object_mut()
    {
        m.insert("continue".to_owned(), json!(end.to_string()));
    }
    json_response(
        200,
        &json!({
            "kind": list_kind(spec.kind),
            "apiVersion": spec.api_version,
            "metadata": metadata,
            "items": items,
        }),
    )
}

/// What one watch request follows.
pub(super) struct WatchSpec {
    pub(super) kind: Kind,
    pub(super) namespace: Option<String>,
    pub(super) api_version: String,
    pub(super) selector: Selector,
    pub(super) initial_end: bool,
}

impl WatchSpec {
    /// The line for `obj` if this watch wants it.
    fn line(&self, kind: Kind, ty: &str, obj: &Value) -> Option<Bytes> {
        let in_namespace = self
            .namespace
            .as_deref()
            .is_none_or(|ns| str_at(obj, "metadata.namespace") == Some(ns));
        if kind != self.kind || !in_namespace {
            return None;
        }
        let obj = served(self.kind, &self.api_version, obj);
        if !self.selector.matches(&obj) {
            return None;
        }
        let mut s = json!({"type": ty, "object": obj}).to_string();
        s.push('\n');
        Some(Bytes::from(s))
    }
}

struct WatchState {
    inner: Arc<Inner>,
    changed: watch::Receiver<u64>,
    spec: WatchSpec,
    /// Events up to this version have been sent (0 = nothing yet, replay current objects).
    since: u64,
    deadline: tokio::time::Instant,
    pending: VecDeque<Bytes>,
    done: bool,
}

impl WatchState {
    /// Queues what happened since the last call; `false` when the stream must end.
    fn collect(&mut self) -> bool {
        self.changed.borrow_and_update();
        let st = self.inner.lock();
        if st.closed || st.fail.is_some() {
            return false;
        }
        if self.since == 0 {
            for obj in st.objects(self.spec.kind, self.spec.namespace.as_deref()) {
                if let Some(line) = self.spec.line(self.spec.kind, "ADDED", obj) {
                    self.pending.push_back(line);
                }
            }
            if self.spec.initial_end {
                let bookmark = json!({
                    "metadata": {
                        "resourceVersion": st.rv.to_string(),
                        "annotations": {"k8s.io/initial-events-end": "true"},
                    }
                });
                let mut line = json!({
                    "type": "BOOKMARK",
                    "object": served(self.spec.kind, &self.spec.api_version, &bookmark),
                })
                .to_string();
                line.push('\n');
                self.pending.push_back(Bytes::from(line));
            }
        } else if self.since < st.compacted {
            let msg = format!(
                "too old resource version: {} ({})",
                self.since,
                st.compacted + 1
            );
            let mut line = json!({"type": "ERROR", "object": status_body(410, &msg)}).to_string();
            line.push('\n');
            self.pending.push_back(Bytes::from(line));
            self.done = true;
            return true;
        } else {
            for c in st.log.iter().filter(|c| c.rv > self.since) {
                if let Some(line) = self.spec.line(c.kind, c.ty, &c.object) {
                    self.pending.push_back(line);
                }
            }
        }
        self.since = st.rv;
        true
    }
}

pub(super) fn watch_response(
    inner: Arc<Inner>,
    spec: WatchSpec,
    since: u64,
    timeout: Duration,
) -> Response {
    let changed = inner.changed.subscribe();
    let state = WatchState {
        inner,
        changed,
        spec,
        since,
        deadline: tokio::time::Instant::now() + timeout,
        pending: VecDeque::new(),
        done: false,
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(line) = st.pending.pop_front() {
                return Some((Ok::<Bytes, Infallible>(line), st));
            }
            if st.done || !st.collect() {
                return None;
            }
            if !st.pending.is_empty() {
                continue;
            }
            match tokio::time::timeout_at(st.deadline, st.changed.changed()).await {
                Ok(Ok(())) => {}
                // Timed out, or the server is gone.
                Ok(Err(_)) | Err(_) => return None,
            }
        }
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(stream),
    )
        .into_response()
}
