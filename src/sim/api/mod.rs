//! A tiny Kubernetes API server on loopback, for `--simulate` and the tests: the store of pods
//! and ResourceSlices, the routes, lists and watches (`http` parses queries and writes error
//! statuses; `kinds` names and serves the two object kinds). Never part of the production build.
//!
//! It serves just what the exporter's reflectors use, over plain HTTP/1.1 on `127.0.0.1`:
//!
//! | Request | Answer |
//! |---|---|
//! | `GET /api/v1/pods`, `GET /api/v1/namespaces/<ns>/pods` | `PodList` |
//! | the same with `watch=true` | a chunked stream of watch events, one JSON object a line |
//! | `GET /apis/resource.k8s.io` | `APIGroup` with [`FakeApi::set_resource_api_versions`] |
//! | `GET /apis/resource.k8s.io/<v>` | `APIResourceList` with `resourceslices` |
//! | `GET /apis/resource.k8s.io/<v>/resourceslices` (+ `watch=true`) | `ResourceSliceList` / events |
//! | `GET /version` | a version `Info` |
//!
//! Lists honour `fieldSelector` (`path=value`, `path==value`, `path!=value`, comma-separated,
//! e.g. `spec.nodeName=node-a`), simple `labelSelector`s (`k=v`, `k!=v`, `k`, `!k`), `limit`
//! and `continue`. Watches honour the same selectors, `resourceVersion` (events after it;
//! `0` or none first replays the current objects as `ADDED`), `timeoutSeconds` (at most
//! 300 s) and `sendInitialEvents` (a final `BOOKMARK` with `k8s.io/initial-events-end`).
//! A `resourceVersion` older than the retained event log gets a `410 Expired` `ERROR` event,
//! as from a real API server. ResourceSlices are stored as given and served under whichever
//! served version was asked for, with `apiVersion` rewritten; there is no conversion between
//! the `v1beta1` and `v1` shapes.
//!
//! [`FakeApi::set_fail`] makes every request answer an error status with a Kubernetes
//! `Status` body and closes the open watches, to exercise the clients' error handling.

use std::collections::{BTreeMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::watch;

mod http;
mod kinds;

use http::*;
use kinds::*;

/// Watch events kept for watchers that resume from an older `resourceVersion`.
const EVENT_LOG_CAPACITY: usize = 4096;
/// Requests remembered for [`FakeApi::requests`].
const REQUEST_LOG_CAPACITY: usize = 10_000;
/// The longest a watch stays open.
const MAX_WATCH: Duration = Duration::from_secs(300);

struct Change {
    rv: u64,
    kind: Kind,
    ty: &'static str,
    object: Value,
}

struct Store {
    /// The resource version of the latest change.
    rv: u64,
    /// Events at or below this version have been dropped from `log`.
    compacted: u64,
    /// Counter for generated UIDs.
    uids: u64,
    pods: BTreeMap<(String, String), Value>,
    slices: BTreeMap<String, Value>,
    log: VecDeque<Change>,
    fail: Option<u16>,
    requests: VecDeque<String>,
    resource_versions: Vec<String>,
    closed: bool,
}

impl Store {
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
    fn objects(&self, kind: Kind, namespace: Option<&str>) -> Vec<&Value> {
        match kind {
            Kind::Pod => self
                .pods
                .iter()
                .filter(|((ns, _), _)| namespace.is_none_or(|want| want == ns))
                .map(|(_, v)| v)
                .collect(),
            Kind::Slice => self.slices.values().collect(),
        }
    }
}

struct Inner {
    store: Mutex<Store>,
    /// Bumped after every change, `set_fail` and shutdown; watch streams wait on it.
    changed: watch::Sender<u64>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn notify(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// A Kubernetes API server on `127.0.0.1` with pods and ResourceSlices that the caller sets.
pub struct FakeApi {
    inner: Arc<Inner>,
    addr: SocketAddr,
    server: tokio::task::AbortHandle,
}

impl FakeApi {
    /// Starts serving on 127.0.0.1 (random port) on the current tokio runtime.
    pub async fn start() -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (changed, _) = watch::channel(0);
        let inner = Arc::new(Inner {
            store: Mutex::new(Store {
                rv: 1,
                compacted: 0,
                uids: 0,
                pods: BTreeMap::new(),
                slices: BTreeMap::new(),
                log: VecDeque::new(),
                fail: None,
                requests: VecDeque::new(),
                resource_versions: vec!["v1".to_owned()],
                closed: false,
            }),
            changed,
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&inner));
        let server = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::warn!("fake Kubernetes API server stopped: {e}");
            }
        });
        Ok(Self {
            inner,
            addr,
            server: server.abort_handle(),
        })
    }

    /// The server's base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kube client pointed at this server (no credentials, plain HTTP). Call it inside a
    /// tokio runtime.
    pub fn client(&self) -> Result<kube::Client, kube::Error> {
        let uri: Uri = self
            .url()
            .parse()
            .map_err(|e: axum::http::uri::InvalidUri| kube::Error::HttpError(e.into()))?;
        kube::Client::try_from(kube::Config::new(uri))
    }

    /// Adds a pod or replaces the one with the same namespace and name (`ADDED` or
    /// `MODIFIED` for watchers). The server sets `metadata.resourceVersion`, defaults
    /// `metadata.namespace` to `default` and, when missing, sets `metadata.uid` (kept across
    /// replacements).
    pub fn apply_pod(&self, mut pod: Value) {
        let mut st = self.inner.lock();
        let namespace = str_at(&pod, "metadata.namespace")
            .filter(|s| !s.is_empty())
            .unwrap_or("default")
            .to_owned();
        let name = str_at(&pod, "metadata.name").unwrap_or_default().to_owned();
        let key = (namespace.clone(), name);
        let old_uid = st
            .pods
            .get(&key)
            .and_then(|p| str_at(p, "metadata.uid"))
            .map(str::to_owned);
        st.rv += 1;
        let rv = st.rv;
        set_meta(&mut pod, "namespace", json!(namespace));
        set_meta(&mut pod, "resourceVersion", json!(rv.to_string()));
        if str_at(&pod, "metadata.uid").is_none_or(str::is_empty) {
            let uid = old_uid.clone().unwrap_or_else(|| {
                st.uids += 1;
                format!("00000000-0000-4000-8000-{:012x}", st.uids)
            });
            set_meta(&mut pod, "uid", json!(uid));
        }
        let existed = st.pods.insert(key, pod.clone()).is_some();
        st.record(Kind::Pod, if existed { "MODIFIED" } else { "ADDED" }, pod);
        drop(st);
        self.inner.notify();
    }

    /// The stored pod `namespace/name`, as served.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<Value> {
        let st = self.inner.lock();
        st.pods
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Removes a pod (`DELETED` for watchers); nothing happens when there is no such pod.
    pub fn delete_pod(&self, namespace: &str, name: &str) {
        let mut st = self.inner.lock();
        let Some(mut pod) = st.pods.remove(&(namespace.to_owned(), name.to_owned())) else {
            return;
        };
        st.rv += 1;
        set_meta(&mut pod, "resourceVersion", json!(st.rv.to_string()));
        st.record(Kind::Pod, "DELETED", pod);
        drop(st);
        self.inner.notify();
    }

    /// Adds a ResourceSlice or replaces the one with the same name. The server sets
    /// `metadata.resourceVersion` (and `metadata.uid` when missing).
    pub fn apply_slice(&self, mut slice: Value) {
        let mut st = self.inner.lock();
        let name = str_at(&slice, "metadata.name")
            .unwrap_or_default()
            .to_owned();
        st.rv += 1;
        set_meta(&mut slice, "resourceVersion", json!(st.rv.to_string()));
        if str_at(&slice, "metadata.uid").is_none_or(str::is_empty) {
            st.uids += 1;
            let uid = format!("00000000-0000-4000-9000-{:012x}", st.uids);
            set_meta(&mut slice, "uid", json!(uid));
        }
        let existed = st.slices.insert(name, slice.clone()).is_some();
        st.record(
            Kind::Slice,
            if existed { "MODIFIED" } else { "ADDED" },
            slice,
        );
        drop(st);
        self.inner.notify();
    }

    /// Removes a ResourceSlice (`DELETED` for watchers).
    pub fn delete_slice(&self, name: &str) {
        let mut st = self.inner.lock();
        let Some(mut slice) = st.slices.remove(name) else {
            return;
        };
        st.rv += 1;
        set_meta(&mut slice, "resourceVersion", json!(st.rv.to_string()));
        st.record(Kind::Slice, "DELETED", slice);
        drop(st);
        self.inner.notify();
    }

    /// Makes every request answer this HTTP status with a Kubernetes `Status` body (and
    /// ends the open watches); `None` serves normally again.
    pub fn set_fail(&self, status: Option<u16>) {
        self.inner.lock().fail = status;
        self.inner.notify();
    }

    /// The paths and raw (percent-encoded) queries of the requests seen so far, oldest first,
    /// e.g. `/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&limit=500`.
    pub fn requests(&self) -> Vec<String> {
        self.inner.lock().requests.iter().cloned().collect()
    }

    /// Which `resource.k8s.io` versions discovery reports and the server serves, in the
    /// given order (default `["v1"]`; an empty list makes the group unknown, 404).
    pub fn set_resource_api_versions(&self, versions: &[&str]) {
        self.inner.lock().resource_versions = versions.iter().map(|v| (*v).to_owned()).collect();
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.inner.lock().closed = true;
        self.inner.notify();
        self.server.abort();
    }
}

/// Which collection a path names.
enum Route {
    Collection {
        kind: Kind,
        namespace: Option<String>,
        /// `apiVersion` of the items.
        api_version: String,
    },
    Group,
    GroupVersion(String),
    Version,
    /// `POST selfsubjectaccessreviews`: everything is allowed (unless every request fails).
    AccessReview,
    NotFound,
}

fn route(path: &str, versions: &[String]) -> Route {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let served = |v: &str| versions.iter().any(|s| s == v);
    match segs.as_slice() {
        ["api", "v1", "pods"] => Route::Collection {
            kind: Kind::Pod,
            namespace: None,
            api_version: "v1".to_owned(),
        },
        ["api", "v1", "namespaces", ns, "pods"] => Route::Collection {
            kind: Kind::Pod,
            namespace: Some((*ns).to_owned()),
            api_version: "v1".to_owned(),
        },
        ["apis", RESOURCE_GROUP] if !versions.is_empty() => Route::Group,
        ["apis", RESOURCE_GROUP, v] if served(v) => Route::GroupVersion((*v).to_owned()),
        ["apis", RESOURCE_GROUP, v, "resourceslices"] if served(v) => Route::Collection {
            kind: Kind::Slice,
            namespace: None,
            api_version: format!("{RESOURCE_GROUP}/{v}"),
        },
        ["version"] => Route::Version,
        [
            "apis",
            "authorization.k8s.io",
            "v1",
            "selfsubjectaccessreviews",
        ] => Route::AccessReview,
        _ => Route::NotFound,
    }
}

async fn handle(State(inner): State<Arc<Inner>>, method: Method, uri: Uri) -> Response {
    let path = uri.path().to_owned();
    let (fail, versions) = {
        let mut st = inner.lock();
        if st.requests.len() >= REQUEST_LOG_CAPACITY {
            st.requests.pop_front();
        }
        let seen = match uri.query() {
            Some(q) => format!("{path}?{q}"),
            None => path.clone(),
        };
        st.requests.push_back(seen);
        let fail = if st.closed { Some(503) } else { st.fail };
        (fail, st.resource_versions.clone())
    };
    let route = route(&path, &versions);
    if let Some(code) = fail {
        let what = match &route {
            Route::Collection {
                kind: Kind::Pod, ..
            } => "pods",
            Route::Collection {
                kind: Kind::Slice, ..
            } => "resourceslices.resource.k8s.io",
            _ => path.as_str(),
        };
        let verb = if parse_query(uri.query())
            .iter()
            .any(|(k, v)| k == "watch" && (v == "true" || v == "1"))
        {
            "watch"
        } else {
            "list"
        };
        let message = if code == 403 {
            format!(
                "{what} is forbidden: User \"system:serviceaccount:fake:gpu-exporter\" cannot \
                 {verb} resource \"{what}\" at the cluster scope (fake API server set to fail)"
            )
        } else {
            format!("{what}: fake API server set to fail with {code}")
        };
        return error_response(code, &message);
    }
    if method != Method::GET && !(method == Method::POST && matches!(route, Route::AccessReview)) {
        return error_response(
            405,
            &format!("the fake API server only serves GET, not {method}"),
        );
    }
    let query = parse_query(uri.query());
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    match route {
        Route::Group => json_response(200, &api_group(&versions)),
        Route::GroupVersion(v) => json_response(200, &api_resource_list(&v)),
        Route::Version => json_response(
            200,
            &json!({
                "major": "1", "minor": "33", "gitVersion": "v1.33.0-fake",
                "gitCommit": "", "gitTreeState": "clean", "buildDate": "",
                "goVersion": "", "compiler": "", "platform": "linux/amd64"
            }),
        ),
        Route::NotFound => error_response(404, &format!("the server could not find {path}")),
        Route::AccessReview => json_response(
            201,
            &json!({
                "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {}, "status": {"allowed": true, "reason": "the simulated API server allows everything"}
            }),
        ),
        Route::Collection {
            kind,
            namespace,
            api_version,
        } => {
            let selector = Selector::parse(param("fieldSelector"), param("labelSelector"));
            if param("watch").is_some_and(|w| w == "true" || w == "1") {
                let since = param("resourceVersion")
                    .filter(|v| !v.is_empty())
                    .map(|v| v.parse::<u64>());
                let since = match since {
                    None => 0,
                    Some(Ok(v)) => v,
                    Some(Err(_)) => return error_response(400, "invalid resourceVersion"),
                };
                let timeout = param("timeoutSeconds")
                    .and_then(|t| t.parse::<u64>().ok())
                    .map_or(MAX_WATCH, |t| Duration::from_secs(t).min(MAX_WATCH));
                let initial_end = param("sendInitialEvents") == Some("true");
                let spec = WatchSpec {
                    kind,
                    namespace,
                    api_version,
                    selector,
                    initial_end,
                };
                watch_response(inner, spec, since, timeout)
            } else {
                let limit = param("limit").and_then(|l| l.parse::<usize>().ok());
                let offset = param("continue").and_then(|c| c.parse::<usize>().ok());
                list_response(
                    &inner,
                    kind,
                    namespace.as_deref(),
                    &api_version,
                    &selector,
                    limit,
                    offset,
                )
            }
        }
    }
}

fn list_response(
    inner: &Inner,
    kind: Kind,
    namespace: Option<&str>,
    api_version: &str,
    selector: &Selector,
    limit: Option<usize>,
    offset: Option<usize>,
) -> Response {
    let st = inner.lock();
    let all: Vec<&Value> = st
        .objects(kind, namespace)
        .into_iter()
        .filter(|o| selector.matches(o))
        .collect();
    let start = offset.unwrap_or(0).min(all.len());
    let end = limit
        .filter(|l| *l > 0)
        .map_or(all.len(), |l| start.saturating_add(l).min(all.len()));
    let items: Vec<Value> = all
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .map(|o| served(kind, api_version, o))
        .collect();
    let mut metadata = json!({"resourceVersion": st.rv.to_string()});
    if end < all.len()
        && let Some(m) = metadata.as_object_mut()
    {
        m.insert("continue".to_owned(), json!(end.to_string()));
    }
    let list_api_version = if kind == Kind::Pod { "v1" } else { api_version };
    json_response(
        200,
        &json!({
            "kind": list_kind(kind),
            "apiVersion": list_api_version,
            "metadata": metadata,
            "items": items,
        }),
    )
}

/// What one watch request follows.
struct WatchSpec {
    kind: Kind,
    namespace: Option<String>,
    api_version: String,
    selector: Selector,
    initial_end: bool,
}

impl WatchSpec {
    fn wants(&self, kind: Kind, obj: &Value) -> bool {
        kind == self.kind
            && self
                .namespace
                .as_deref()
                .is_none_or(|ns| str_at(obj, "metadata.namespace") == Some(ns))
            && self.selector.matches(obj)
    }

    fn line(&self, ty: &str, obj: &Value) -> Bytes {
        let mut s =
            json!({"type": ty, "object": served(self.kind, &self.api_version, obj)}).to_string();
        s.push('\n');
        Bytes::from(s)
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
                if self.spec.wants(self.spec.kind, obj) {
                    self.pending.push_back(self.spec.line("ADDED", obj));
                }
            }
            if self.spec.initial_end {
                let bookmark = json!({
                    "metadata": {
                        "resourceVersion": st.rv.to_string(),
                        "annotations": {"k8s.io/initial-events-end": "true"},
                    }
                });
                self.pending
                    .push_back(self.spec.line("BOOKMARK", &bookmark));
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
                if self.spec.wants(c.kind, &c.object) {
                    self.pending.push_back(self.spec.line(c.ty, &c.object));
                }
            }
        }
        self.since = st.rv;
        true
    }
}

fn watch_response(inner: Arc<Inner>, spec: WatchSpec, since: u64, timeout: Duration) -> Response {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_queries() {
        assert_eq!(
            percent_decode("spec.nodeName%3Dnode-a"),
            "spec.nodeName=node-a"
        );
        assert_eq!(percent_decode("a+b%2Cc"), "a b,c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(
            parse_query(Some("watch=true&fieldSelector=a%3Db&x")),
            vec![
                ("watch".to_owned(), "true".to_owned()),
                ("fieldSelector".to_owned(), "a=b".to_owned()),
                ("x".to_owned(), String::new()),
            ]
        );
    }

    #[test]
    fn selectors_match() {
        let pod = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"nodeName": "n1"}});
        let m = |f: Option<&str>, l: Option<&str>| Selector::parse(f, l).matches(&pod);
        assert!(m(None, None));
        assert!(m(Some("spec.nodeName=n1"), None));
        assert!(m(Some("spec.nodeName==n1"), None));
        assert!(!m(Some("spec.nodeName=n2"), None));
        assert!(m(Some("spec.nodeName!=n2"), None));
        assert!(!m(Some("spec.nodeName=n1,spec.driver=d"), None));
        assert!(
            m(Some("spec.driver="), None),
            "a missing field is the empty string"
        );
        assert!(m(None, Some("app=x")));
        assert!(!m(None, Some("app!=x")));
        assert!(m(None, Some("app")));
        assert!(!m(None, Some("!app")));
        assert!(m(None, Some("!other")));
    }

    #[test]
    fn routes() {
        let v = vec!["v1beta1".to_owned()];
        assert!(matches!(
            route("/api/v1/pods", &v),
            Route::Collection {
                kind: Kind::Pod,
                ..
            }
        ));
        assert!(matches!(route("/apis/resource.k8s.io", &v), Route::Group));
        assert!(matches!(
            route("/apis/resource.k8s.io/v1beta1/resourceslices", &v),
            Route::Collection {
                kind: Kind::Slice,
                ..
            }
        ));
        assert!(matches!(
            route("/apis/resource.k8s.io/v1/resourceslices", &v),
            Route::NotFound
        ));
        assert!(matches!(
            route("/apis/resource.k8s.io", &[]),
            Route::NotFound
        ));
    }
}
