//! The fake API server's writes: creating an `events.k8s.io/v1` Event and patching a Node
//! (its `status` subresource or the rest) or an Event, with the checks a real API server
//! makes (name and namespace, duplicates, required Event fields, `resourceVersion`
//! preconditions, immutable metadata) and the `Status` answers it gives when they fail.
//!
//! It changes the store only through `Store::put`, which records the watch events.

use axum::response::Response;
use serde_json::{Value, json};

use super::events::invalid;
use super::http::*;
use super::kinds::*;
use super::patch::{PatchKind, apply};
use super::store::{Inner, not_found};

/// Metadata a write never changes.
const IMMUTABLE_META: [&str; 5] = [
    "name",
    "namespace",
    "uid",
    "creationTimestamp",
    "resourceVersion",
];

fn parse_body(body: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(body)
        .ok()
        .filter(Value::is_object)
}

fn bad_body() -> Response {
    error_response(400, "the request body is not a JSON object")
}

/// `POST /apis/events.k8s.io/v1/namespaces/<namespace>/events`.
pub(super) fn create_event(inner: &Inner, namespace: &str, body: &[u8]) -> Response {
    let Some(mut ev) = parse_body(body) else {
        return bad_body();
    };
    let body_ns = str_at(&ev, "metadata.namespace").unwrap_or("");
    if !body_ns.is_empty() && body_ns != namespace {
        return error_response(
            400,
            "the namespace of the provided object does not match the namespace sent on the request",
        );
    }
    set_meta(&mut ev, "namespace", json!(namespace));
    let mut st = inner.lock();
    if str_at(&ev, "metadata.name").is_none_or(str::is_empty) {
        match str_at(&ev, "metadata.generateName").filter(|g| !g.is_empty()) {
            Some(prefix) => {
                let name = format!("{prefix}{:05x}", st.rv + 1);
                set_meta(&mut ev, "name", json!(name));
            }
            None => {
                return error_with_reason(422, "Invalid", "metadata.name: Required value");
            }
        }
    }
    if let Some(why) = invalid(&ev) {
        return error_with_reason(422, "Invalid", &format!("Event is invalid: {why}"));
    }
    let name = str_at(&ev, "metadata.name").unwrap_or_default().to_owned();
    if st.get(Kind::Event, namespace, &name).is_some() {
        return error_with_reason(
            409,
            "AlreadyExists",
            &format!("events.events.k8s.io \"{name}\" already exists"),
        );
    }
    for k in ["uid", "resourceVersion", "creationTimestamp"] {
        if let Some(meta) = ev.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove(k);
        }
    }
    let stored = st.put(Kind::Event, ev);
    drop(st);
    inner.notify();
    json_response(
        201,
        &served(Kind::Event, &format!("{EVENTS_GROUP}/v1"), &stored),
    )
}

/// The object a PATCH names.
pub(super) struct PatchTarget {
    pub(super) kind: Kind,
    /// Empty for a Node.
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) api_version: String,
    /// The `status` subresource.
    pub(super) status: bool,
}

/// `PATCH` of a Node (or its status) or an Event.
pub(super) fn patch(inner: &Inner, t: &PatchTarget, content_type: &str, body: &[u8]) -> Response {
    let Some(kind) = PatchKind::from_content_type(content_type) else {
        return error_with_reason(
            415,
            "UnsupportedMediaType",
            &format!(
                "the simulated API server applies application/merge-patch+json and \
                 application/strategic-merge-patch+json, not {content_type:?}"
            ),
        );
    };
    let Some(p) = parse_body(body) else {
        return bad_body();
    };
    let mut st = inner.lock();
    let Some(old) = st.get(t.kind, &t.namespace, &t.name).cloned() else {
        return not_found(t.kind, &t.api_version, &t.name);
    };
    let want_rv = str_at(&p, "metadata.resourceVersion").filter(|v| !v.is_empty());
    if want_rv.is_some_and(|v| Some(v) != str_at(&old, "metadata.resourceVersion")) {
        let what = format!("{}{}", t.kind.plural(), group_suffix(&t.api_version));
        return error_with_reason(
            409,
            "Conflict",
            &format!(
                "Operation cannot be fulfilled on {what} \"{}\": the object has been modified; \
                 please apply your changes to the latest version and try again",
                t.name
            ),
        );
    }
    let mut new = old.clone();
    apply(kind, &mut new, &p);
    for k in IMMUTABLE_META {
        match value_at(&old, &format!("metadata.{k}")) {
            Some(v) => set_meta(&mut new, k, v.clone()),
            None => {
                if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove(k);
                }
            }
        }
    }
    if t.kind == Kind::Node {
        // The status subresource changes only the status; the main resource all but it.
        let (keep_from_old, status) = if t.status {
            (old.clone(), new.get("status").cloned())
        } else {
            (new.clone(), old.get("status").cloned())
        };
        new = keep_from_old;
        if let Some(map) = new.as_object_mut() {
            match status {
                Some(s) => map.insert("status".to_owned(), s),
                None => map.remove("status"),
            };
        }
    }
    if t.kind == Kind::Event
        && let Some(why) = invalid(&new)
    {
        return error_with_reason(422, "Invalid", &format!("Event is invalid: {why}"));
    }
    let stored = if new == old {
        old
    } else {
        let stored = st.put(t.kind, new);
        drop(st);
        inner.notify();
        stored
    };
    json_response(200, &served(t.kind, &t.api_version, &stored))
}
