//! The fake API server's store: the objects by kind, namespace and name, the resource version,
//! the change log that watches follow, the failure and RBAC settings and the request logs;
//! `put` and `remove` are the only ways objects change (they bump the version and log the
//! change).
//!
//! It must not parse requests or write responses (beyond the `404` wording of `not_found`).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::http::*;
use super::kinds::*;
use super::rbac::RbacRule;

/// Watch events kept for watchers that resume from an older `resourceVersion`.
const EVENT_LOG_CAPACITY: usize = 4096;

/// A fault injected into the writes (POST, PUT, PATCH, DELETE) under a path prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteFault {
    /// Only writes whose path starts with this, e.g. `/apis/events.k8s.io/` or
    /// `/api/v1/nodes/`; empty: every write.
    pub path_prefix: String,
    /// Answer this HTTP status with a Kubernetes `Status` body instead of writing (403, 500,
    /// 503...); `None`: write normally, after `delay`.
    pub status: Option<u16>,
    /// Wait this long before answering (a slow API server); the client may time out first,
    /// and the write is made all the same, as a real server may make it.
    pub delay: Duration,
    /// The whole server is unreachable while this fault is in force: every connection, open
    /// or new, reads and watches included, is closed without an answer (the other fields do
    /// not apply).
    pub unreachable: bool,
}

pub(super) struct Change {
    pub(super) rv: u64,
    pub(super) kind: Kind,
    pub(super) ty: &'static str,
    pub(super) object: Value,
}

/// Objects by (kind, namespace or "" for cluster-scoped, name).
type Key = (Kind, String, String);

pub(super) struct Store {
    /// The resource version of the latest change.
    pub(super) rv: u64,
    /// Events at or below this version have been dropped from `log`.
    pub(super) compacted: u64,
    /// Counter for generated UIDs.
    pub(super) uids: u64,
    pub(super) objects: BTreeMap<Key, Value>,
    pub(super) log: VecDeque<Change>,
    pub(super) fail: Option<u16>,
    pub(super) faults: Vec<WriteFault>,
    pub(super) requests: VecDeque<String>,
    pub(super) writes: VecDeque<String>,
    pub(super) resource_versions: Vec<String>,
    /// The service account's RBAC rules; `None`: everything is allowed.
    pub(super) rbac: Option<Vec<RbacRule>>,
    pub(super) closed: bool,
}

impl Store {
    pub(super) fn new() -> Self {
        Self {
            rv: 1,
            compacted: 0,
            uids: 0,
            objects: BTreeMap::new(),
            log: VecDeque::new(),
            fail: None,
            faults: Vec::new(),
            requests: VecDeque::new(),
            writes: VecDeque::new(),
            resource_versions: vec!["v1".to_owned()],
            rbac: None,
            closed: false,
        }
    }

    fn record(&mut self, kind: Kind, ty: &'static str, object: Value) {
        if self.log.len() >= EVENT_LOG_CAPACITY
            && let Some(old) = self.log.pop_front()
        {
            self.compacted = old.rv;
        }
        self.log.push_back(Change {
            rv: self.rv,
            kind,
            ty,
            object,
        });
    }

    /// Current objects of `kind` (optionally in one namespace), sorted by key.
    pub(super) fn objects(&self, kind: Kind, namespace: Option<&str>) -> Vec<&Value> {
        self.objects
            .range((kind, String::new(), String::new())..)
            .take_while(|((k, _, _), _)| *k == kind)
            .filter(|((_, ns, _), _)| namespace.is_none_or(|want| want == ns))
            .map(|(_, v)| v)
            .collect()
    }

    pub(super) fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<&Value> {
        self.objects
            .get(&(kind, namespace.to_owned(), name.to_owned()))
    }

    /// Stores `obj` (adding or replacing), setting `resourceVersion`, a `uid` (kept across
    /// replacements) and `creationTimestamp` when missing; returns it as stored.
    pub(super) fn put(&mut self, kind: Kind, mut obj: Value) -> Value {
        let namespace = if kind.namespaced() {
            str_at(&obj, "metadata.namespace")
                .filter(|s| !s.is_empty())
                .unwrap_or("default")
                .to_owned()
        } else {
            String::new()
        };
        let name = str_at(&obj, "metadata.name").unwrap_or_default().to_owned();
        let key = (kind, namespace.clone(), name);
        let old = self.objects.get(&key);
        let old_meta = |k: &str| old.and_then(|o| value_at(o, &format!("metadata.{k}")).cloned());
        let (old_uid, old_created) = (old_meta("uid"), old_meta("creationTimestamp"));
        self.rv += 1;
        if kind.namespaced() {
            set_meta(&mut obj, "namespace", json!(namespace));
        }
        set_meta(&mut obj, "resourceVersion", json!(self.rv.to_string()));
        if str_at(&obj, "metadata.uid").is_none_or(str::is_empty) {
            let uid = old_uid.unwrap_or_else(|| {
                self.uids += 1;
                let tag = match kind {
                    Kind::Pod => 8000,
                    Kind::Slice => 9000,
                    Kind::Node => 7000,
                    Kind::Event => 6000,
                };
                json!(format!("00000000-0000-4000-{tag}-{:012x}", self.uids))
            });
            set_meta(&mut obj, "uid", uid);
        }
        if value_at(&obj, "metadata.creationTimestamp").is_none_or(Value::is_null) {
            let created = old_created.unwrap_or_else(|| json!(now_rfc3339()));
            set_meta(&mut obj, "creationTimestamp", created);
        }
        let existed = self.objects.insert(key, obj.clone()).is_some();
        self.record(
            kind,
            if existed { "MODIFIED" } else { "ADDED" },
            obj.clone(),
        );
        obj
    }

    pub(super) fn remove(&mut self, kind: Kind, namespace: &str, name: &str) -> bool {
        let key = (kind, namespace.to_owned(), name.to_owned());
        let Some(mut obj) = self.objects.remove(&key) else {
            return false;
        };
        self.rv += 1;
        set_meta(&mut obj, "resourceVersion", json!(self.rv.to_string()));
        self.record(kind, "DELETED", obj);
        true
    }
}

/// The current time as Kubernetes writes it (`2026-01-01T00:00:00Z`).
pub fn now_rfc3339() -> String {
    let now = k8s_openapi::jiff::Timestamp::now();
    format!("{:.0}", now)
}

pub(super) struct Inner {
    pub(super) store: Mutex<Store>,
    /// Bumped after every change, `set_fail` and shutdown; watch streams wait on it.
    pub(super) changed: watch::Sender<u64>,
    /// Whether a fault in force makes the server unreachable; the connections wait on it.
    pub(super) down: watch::Sender<bool>,
}

impl Inner {
    pub(super) fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn notify(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Puts `faults` in force, and the server down or up with them.
    pub(super) fn set_faults(&self, faults: Vec<WriteFault>) {
        let down = faults.iter().any(|f| f.unreachable);
        self.lock().faults = faults;
        self.down
            .send_if_modified(|d| std::mem::replace(d, down) != down);
    }
}

/// A `404 NotFound` for one object, worded as a real API server words it.
pub(super) fn not_found(kind: Kind, api_version: &str, name: &str) -> Response {
    let what = format!("{}{}", kind.plural(), group_suffix(api_version));
    error_response(404, &format!("{what} \"{name}\" not found"))
}
