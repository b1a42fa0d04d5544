//! A tiny Kubernetes API server on loopback, for `--simulate` and the tests: the request
//! dispatch, failure injection and the accessors the tests read (`store` holds the pods,
//! ResourceSlices, Nodes and Events, `routes` names what a path is, `list` serves lists and
//! watches, `write` creates and patches, `patch` merges bodies, `events` converts Events,
//! `kinds` and `table` write discovery documents and kubectl's tables, `http` parses queries
//! and writes error statuses). Never part of the production build.
//!
//! It serves what the exporter's reflectors and writers and a real `kubectl` use, over plain
//! HTTP/1.1 on `127.0.0.1`:
//!
//! | Request | Answer |
//! |---|---|
//! | `GET /api/v1/pods`, `GET /api/v1/namespaces/<ns>/pods` | `PodList` |
//! | `GET /api/v1/nodes`, `GET /api/v1/nodes/<name>`, `.../status` | `NodeList`, `Node` |
//! | `PATCH /api/v1/nodes/<name>/status` | only the status changes (merge or strategic patch) |
//! | `PATCH /api/v1/nodes/<name>` | all but the status changes, as a real server does |
//! | `POST /apis/events.k8s.io/v1/namespaces/<ns>/events` | `201` Event; `409 AlreadyExists`, `422 Invalid` |
//! | `PATCH /apis/events.k8s.io/v1/namespaces/<ns>/events/<name>` | the patched Event |
//! | `GET /apis/events.k8s.io/v1/events`, `.../namespaces/<ns>/events[/<name>]` | `events.k8s.io/v1` Events |
//! | `GET /api/v1/events`, `/api/v1/namespaces/<ns>/events[/<name>]` | the same Events as core/v1 |
//! | the lists with `watch=true` | a chunked stream of watch events, one JSON object a line |
//! | a `GET` with `Accept: ...;as=Table` (kubectl `get`) | a `meta.k8s.io/v1` `Table` |
//! | `GET /api`, `/api/v1`, `/apis`, `/apis/<group>[/<v>]` | discovery (core, `events.k8s.io`, `resource.k8s.io`, `authorization.k8s.io`) |
//! | `GET /apis/resource.k8s.io/<v>/resourceslices` (+ `watch=true`) | `ResourceSliceList` / events; versions from [`FakeApi::set_resource_api_versions`] |
//! | `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews` | allowed |
//! | `GET /version` | a version `Info` |
//!
//! PATCH takes `application/strategic-merge-patch+json` (Node conditions merge by `type`) and
//! `application/merge-patch+json`; anything else (JSON patch, server-side apply) is `415`.
//! A patch carrying a `metadata.resourceVersion` other than the current one is a `409
//! Conflict`; a patch that changes nothing keeps the `resourceVersion`. Aggregated discovery
//! and OpenAPI are not served: kubectl falls back to the plain documents.
//!
//! Lists honour `fieldSelector` (`path=value`, `path==value`, `path!=value`, comma-separated,
//! on the object as served, e.g. `spec.nodeName=node-a` or `involvedObject.name=node-a`),
//! simple `labelSelector`s (`k=v`, `k!=v`, `k`, `!k`), `limit` and `continue`. Watches honour
//! the same selectors, `resourceVersion` (events after it; `0` or none first replays the
//! current objects as `ADDED`), `timeoutSeconds` (at most 300 s) and `sendInitialEvents` (a
//! final `BOOKMARK` with `k8s.io/initial-events-end`). A `resourceVersion` older than the
//! retained event log gets a `410 Expired` `ERROR` event, as from a real API server.
//! ResourceSlices are stored as given and served under whichever served version was asked
//! for, with `apiVersion` rewritten; there is no conversion between the `v1beta1` and `v1`
//! shapes.
//!
//! Failure injection: [`FakeApi::set_fail`] makes every request answer an error status with a
//! Kubernetes `Status` body and closes the open watches; [`FakeApi::set_write_faults`] fails
//! or delays only writes (POST, PUT, PATCH, DELETE), optionally only under a path prefix,
//! or (`unreachable`) closes every connection without an answer while it is in force;
//! [`FakeApi::play_write_faults`] (`timeline`) sets them from a scenario's `[kubernetes]
//! api_faults` as scenario time passes.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri, header};
use axum::response::Response;
use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::watch;

mod events;
mod http;
mod kinds;
mod list;
mod patch;
mod routes;
mod store;
mod table;
pub mod timeline;
mod write;

use http::*;
use kinds::*;
use routes::{Route, route};
use store::{Inner, Store, not_found};
pub use store::{WriteFault, now_rfc3339};

/// Requests remembered for [`FakeApi::requests`] and writes for [`FakeApi::writes`].
const REQUEST_LOG_CAPACITY: usize = 10_000;
/// The longest a watch stays open.
const MAX_WATCH: Duration = Duration::from_secs(300);

/// A Kubernetes API server on `127.0.0.1` with pods, ResourceSlices, Nodes and Events.
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
        let (down, _) = watch::channel(false);
        let inner = Arc::new(Inner {
            store: Mutex::new(Store::new()),
            changed,
            down,
        });
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&inner));
        let server = tokio::spawn(accept_loop(listener, app, inner.down.subscribe()));
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

    fn put(&self, kind: Kind, obj: Value) {
        self.inner.lock().put(kind, obj);
        self.inner.notify();
    }

    fn remove(&self, kind: Kind, namespace: &str, name: &str) {
        if self.inner.lock().remove(kind, namespace, name) {
            self.inner.notify();
        }
    }

    fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<Value> {
        self.inner.lock().get(kind, namespace, name).cloned()
    }

    /// Adds a pod or replaces the one with the same namespace and name (`ADDED` or
    /// `MODIFIED` for watchers). The server sets `metadata.resourceVersion`, defaults
    /// `metadata.namespace` to `default` and, when missing, sets `metadata.uid` (kept across
    /// replacements) and `metadata.creationTimestamp`.
    pub fn apply_pod(&self, pod: Value) {
        self.put(Kind::Pod, pod);
    }

    /// The stored pod `namespace/name`, as served.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<Value> {
        self.get(Kind::Pod, namespace, name)
    }

    /// Removes a pod (`DELETED` for watchers); nothing happens when there is no such pod.
    pub fn delete_pod(&self, namespace: &str, name: &str) {
        self.remove(Kind::Pod, namespace, name);
    }

    /// Adds a ResourceSlice or replaces the one with the same name. The server sets
    /// `metadata.resourceVersion` (and `metadata.uid` when missing).
    pub fn apply_slice(&self, slice: Value) {
        self.put(Kind::Slice, slice);
    }

    /// Removes a ResourceSlice (`DELETED` for watchers).
    pub fn delete_slice(&self, name: &str) {
        self.remove(Kind::Slice, "", name);
    }

    /// Adds a Node or replaces the one with the same name, like [`FakeApi::apply_pod`].
    pub fn apply_node(&self, node: Value) {
        self.put(Kind::Node, node);
    }

    /// The stored Node `name`, with `kind` and `apiVersion`.
    pub fn node(&self, name: &str) -> Option<Value> {
        self.get(Kind::Node, "", name)
            .map(|n| served(Kind::Node, "v1", &n))
    }

    /// Every stored Node, by name.
    pub fn nodes(&self) -> Vec<Value> {
        let st = self.inner.lock();
        st.objects(Kind::Node, None)
            .into_iter()
            .map(|n| served(Kind::Node, "v1", n))
            .collect()
    }

    /// Every stored Event in the `events.k8s.io/v1` shape, by namespace and name.
    pub fn events(&self) -> Vec<Value> {
        let st = self.inner.lock();
        let av = format!("{EVENTS_GROUP}/v1");
        st.objects(Kind::Event, None)
            .into_iter()
            .map(|e| served(Kind::Event, &av, e))
            .collect()
    }

    /// Makes every request answer this HTTP status with a Kubernetes `Status` body (and
    /// ends the open watches); `None` serves normally again. It takes precedence over
    /// [`FakeApi::set_write_faults`].
    pub fn set_fail(&self, status: Option<u16>) {
        self.inner.lock().fail = status;
        self.inner.notify();
    }

    /// Faults for the writes (POST, PUT, PATCH, DELETE): the first whose `path_prefix` the
    /// path starts with applies (delay, then its status or the write). An empty list serves
    /// writes normally again. Reads and watches are not affected.
    pub fn set_write_faults(&self, faults: Vec<WriteFault>) {
        self.inner.set_faults(faults);
    }

    /// The paths and raw (percent-encoded) queries of the requests seen so far, oldest first,
    /// e.g. `/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&limit=500`.
    pub fn requests(&self) -> Vec<String> {
        self.inner.lock().requests.iter().cloned().collect()
    }

    /// The writes seen so far, oldest first, as `METHOD path status`, e.g.
    /// `PATCH /api/v1/nodes/node-a/status 200` (failed and injected-fault ones included).
    pub fn writes(&self) -> Vec<String> {
        self.inner.lock().writes.iter().cloned().collect()
    }

    /// How many writes with this method went to a path starting with `path_prefix`.
    pub fn write_count(&self, method: &str, path_prefix: &str) -> usize {
        let st = self.inner.lock();
        st.writes
            .iter()
            .filter_map(|w| w.split_once(' '))
            .filter(|(m, rest)| *m == method && rest.starts_with(path_prefix))
            .count()
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

fn is_write(method: &Method) -> bool {
    [Method::POST, Method::PUT, Method::PATCH, Method::DELETE].contains(method)
}

fn push_bounded(log: &mut VecDeque<String>, line: String) {
    if log.len() >= REQUEST_LOG_CAPACITY {
        log.pop_front();
    }
    log.push_back(line);
}

/// Serves HTTP/1.1 connections on `listener`, each on its own task. While `down` is true (an
/// `unreachable` fault in force) a new connection is closed at once and the open ones are
/// closed, without an answer, as a client sees an API server that is restarting or behind a
/// load balancer with no backend left.
async fn accept_loop(listener: tokio::net::TcpListener, app: Router, down: watch::Receiver<bool>) {
    use hyper_util::rt::TokioIo;
    use hyper_util::service::TowerToHyperService;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("fake Kubernetes API server: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if *down.borrow() {
            drop(stream);
            continue;
        }
        let service = TowerToHyperService::new(app.clone());
        let mut down = down.clone();
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::select! {
                _ = conn => {}
                _ = down.wait_for(|d| *d) => {}
            }
        });
    }
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let write = is_write(&method);
    let (fail, fault) = {
        let mut st = inner.lock();
        let seen = match uri.query() {
            Some(q) => format!("{path}?{q}"),
            None => path.clone(),
        };
        push_bounded(&mut st.requests, seen);
        let fail = if st.closed { Some(503) } else { st.fail };
        let fault = st
            .faults
            .iter()
            .find(|f| write && path.starts_with(&f.path_prefix))
            .cloned();
        (fail, fault)
    };
    let status = fault.as_ref().and_then(|f| f.status);
    let delay = fault
        .map(|f| f.delay)
        .filter(|d| fail.is_none() && !d.is_zero());
    let answer = move || {
        let response = match (fail, status) {
            (Some(code), _) | (None, Some(code)) => failure(code, &method, &uri, &inner),
            (None, None) => serve(&inner, &method, &uri, &headers, &body),
        };
        if write {
            let line = format!("{method} {path} {}", response.status().as_u16());
            push_bounded(&mut inner.lock().writes, line);
        }
        response
    };
    match delay {
        // A slow server still makes the write when the client has stopped waiting, as a real
        // one may: the delay and the write run on their own task.
        Some(delay) => {
            let late = tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                answer()
            });
            late.await
                .unwrap_or_else(|e| error_response(500, &format!("fake API server: {e}")))
        }
        None => answer(),
    }
}

/// The error answer of a request the server was told to fail.
fn failure(code: u16, method: &Method, uri: &Uri, inner: &Inner) -> Response {
    let versions = inner.lock().resource_versions.clone();
    let path = uri.path();
    let (what, scope) = match route(path, &versions) {
        Route::Collection { kind, .. } | Route::Item { kind, .. } if kind == Kind::Slice => (
            "resourceslices.resource.k8s.io".to_owned(),
            "the cluster scope",
        ),
        Route::Collection { kind, .. } | Route::Item { kind, .. } => {
            let group = if path.starts_with("/apis/events.k8s.io/") {
                ".events.k8s.io"
            } else {
                ""
            };
            (format!("{}{group}", kind.plural()), "the cluster scope")
        }
        _ => (path.to_owned(), "the cluster scope"),
    };
    let watching = parse_query(uri.query())
        .iter()
        .any(|(k, v)| k == "watch" && (v == "true" || v == "1"));
    let verb = match *method {
        Method::POST => "create",
        Method::PATCH => "patch",
        Method::PUT => "update",
        Method::DELETE => "delete",
        _ if watching => "watch",
        _ => "list",
    };
    let message = if code == 403 {
        format!(
            "{what} is forbidden: User \"system:serviceaccount:fake:gpu-exporter\" cannot \
             {verb} resource \"{what}\" at {scope} (fake API server set to fail)"
        )
    } else {
        format!("{what}: fake API server set to fail with {code}")
    };
    error_response(code, &message)
}

/// Answers a request the server serves normally.
fn serve(
    inner: &Arc<Inner>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let path = uri.path();
    let versions = inner.lock().resource_versions.clone();
    let query = parse_query(uri.query());
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let header_text = |h: header::HeaderName| {
        headers
            .get(h)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let as_table = table::wants_table(&header_text(header::ACCEPT));
    match (method.clone(), route(path, &versions)) {
        (Method::GET, Route::Doc(doc)) => json_response(200, &doc),
        (Method::GET, Route::Version) => json_response(
            200,
            &json!({
                "major": "1", "minor": "33", "gitVersion": "v1.33.0-fake",
                "gitCommit": "", "gitTreeState": "clean", "buildDate": "",
                "goVersion": "", "compiler": "", "platform": "linux/amd64"
            }),
        ),
        (_, Route::NotFound) => error_response(404, &format!("the server could not find {path}")),
        (Method::POST, Route::AccessReview) => json_response(
            201,
            &json!({
                "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                "spec": {}, "status": {"allowed": true, "reason": "the simulated API server allows everything"}
            }),
        ),
        (
            Method::GET,
            Route::Collection {
                kind,
                namespace,
                api_version,
            },
        ) => {
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
                let spec = list::WatchSpec {
                    kind,
                    namespace,
                    api_version,
                    selector,
                    initial_end: param("sendInitialEvents") == Some("true"),
                };
                list::watch_response(Arc::clone(inner), spec, since, timeout)
            } else {
                let spec = list::ListSpec {
                    kind,
                    namespace: namespace.as_deref(),
                    api_version: &api_version,
                    selector: &selector,
                    limit: param("limit").and_then(|l| l.parse::<usize>().ok()),
                    offset: param("continue").and_then(|c| c.parse::<usize>().ok()),
                    as_table,
                };
                list::list_response(inner, &spec)
            }
        }
        (
            Method::GET,
            Route::Item {
                kind,
                namespace,
                name,
                api_version,
                ..
            },
        ) => {
            let st = inner.lock();
            match st.get(kind, namespace.as_deref().unwrap_or(""), &name) {
                Some(obj) if as_table => json_response(
                    200,
                    &table::table(kind, &[served(kind, &api_version, obj)], &st.rv.to_string()),
                ),
                Some(obj) => json_response(200, &served(kind, &api_version, obj)),
                None => not_found(kind, &api_version, &name),
            }
        }
        (
            Method::POST,
            Route::Collection {
                kind: Kind::Event,
                namespace: Some(ns),
                api_version,
            },
        ) if api_version != "v1" => write::create_event(inner, &ns, body),
        (
            Method::PATCH,
            Route::Item {
                kind: kind @ (Kind::Node | Kind::Event),
                namespace,
                name,
                api_version,
                status,
            },
        ) if api_version != "v1" || kind == Kind::Node => {
            let target = write::Target {
                kind,
                namespace: namespace.unwrap_or_default(),
                name,
                api_version,
                status,
            };
            write::patch(inner, &target, &header_text(header::CONTENT_TYPE), body)
        }
        _ => error_response(
            405,
            &format!("the fake API server does not serve {method} {path}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// One request to the server: (status, JSON body).
    async fn call(api: &FakeApi, method: &str, path: &str, ct: &str, body: Value) -> (u16, Value) {
        let req = axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", ct)
            .header(
                "accept",
                if ct == "table" {
                    "application/json;as=Table;v=v1;g=meta.k8s.io"
                } else {
                    "application/json"
                },
            )
            .body(kube::client::Body::from(body.to_string().into_bytes()))
            .unwrap();
        let resp = api.client().unwrap().send(req).await.unwrap();
        let code = resp.status().as_u16();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    }

    const SMP: &str = "application/strategic-merge-patch+json";
    const MERGE: &str = "application/merge-patch+json";

    fn node() -> Value {
        json!({"metadata": {"name": "n1"}, "status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})
    }

    fn event(name: &str) -> Value {
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "regarding": {"kind": "Node", "name": "n1", "uid": "u1"},
            "reason": "GpuXid", "note": "GPU 3 reported Xid 79", "type": "Warning",
            "action": "Detected", "reportingController": "gpu-exporter",
            "reportingInstance": "gpu-exporter-n1"})
    }

    #[tokio::test]
    async fn node_status_patches_merge_conditions_and_keep_other_writers() {
        let api = FakeApi::start().await.unwrap();
        api.apply_node(node());
        let rv0 = api.node("n1").unwrap()["metadata"]["resourceVersion"].clone();
        let ours = json!({"status": {"conditions": [{"type": "GpuHealthy", "status": "False", "reason": "Xid79"}]}});
        let (code, got) = call(&api, "PATCH", "/api/v1/nodes/n1/status", SMP, ours.clone()).await;
        assert_eq!(code, 200, "{got}");
        let n = api.node("n1").unwrap();
        let types: Vec<&str> = n["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            ["Ready", "GpuHealthy"],
            "the kubelet's condition is kept"
        );
        assert_ne!(n["metadata"]["resourceVersion"], rv0);
        // The same patch again changes nothing and keeps the resourceVersion.
        let rv1 = n["metadata"]["resourceVersion"].clone();
        call(&api, "PATCH", "/api/v1/nodes/n1/status", SMP, ours).await;
        assert_eq!(api.node("n1").unwrap()["metadata"]["resourceVersion"], rv1);
        // A merge patch replaces the list.
        let only = json!({"status": {"conditions": [{"type": "GpuHealthy", "status": "True"}]}});
        assert_eq!(
            call(&api, "PATCH", "/api/v1/nodes/n1/status", MERGE, only)
                .await
                .0,
            200
        );
        assert_eq!(
            api.node("n1").unwrap()["status"]["conditions"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        // The main resource ignores status changes, as a real server does.
        let main = json!({"metadata": {"labels": {"a": "b"}}, "status": {"conditions": []}});
        assert_eq!(
            call(&api, "PATCH", "/api/v1/nodes/n1", MERGE, main).await.0,
            200
        );
        let n = api.node("n1").unwrap();
        assert_eq!(n["metadata"]["labels"]["a"], "b");
        assert_eq!(n["status"]["conditions"].as_array().unwrap().len(), 1);
        // Stale resourceVersion, unknown node, server-side apply.
        let stale = json!({"metadata": {"resourceVersion": "1"}, "status": {}});
        assert_eq!(
            call(&api, "PATCH", "/api/v1/nodes/n1/status", SMP, stale)
                .await
                .0,
            409
        );
        let (code, body) = call(&api, "PATCH", "/api/v1/nodes/nope/status", SMP, json!({})).await;
        assert_eq!((code, body["reason"].as_str()), (404, Some("NotFound")));
        let (code, body) = call(
            &api,
            "PATCH",
            "/api/v1/nodes/n1/status",
            "application/apply-patch+yaml",
            json!({}),
        )
        .await;
        assert_eq!((code, body["kind"].as_str()), (415, Some("Status")));
        let (code, list) = call(&api, "GET", "/api/v1/nodes", "", Value::Null).await;
        assert_eq!((code, list["kind"].as_str()), (200, Some("NodeList")));
        assert_eq!(api.write_count("PATCH", "/api/v1/nodes/n1/status"), 5);
    }

    #[tokio::test]
    async fn events_are_created_patched_and_listed_in_both_shapes() {
        let api = FakeApi::start().await.unwrap();
        let coll = "/apis/events.k8s.io/v1/namespaces/default/events";
        let (code, created) = call(&api, "POST", coll, "application/json", event("n1.1")).await;
        assert_eq!(code, 201, "{created}");
        assert!(created["metadata"]["uid"].is_string());
        assert!(created["metadata"]["creationTimestamp"].is_string());
        let (code, dup) = call(&api, "POST", coll, "application/json", event("n1.1")).await;
        assert_eq!((code, dup["reason"].as_str()), (409, Some("AlreadyExists")));
        let mut bad = event("n1.2");
        bad["reportingController"] = json!("");
        assert_eq!(
            call(&api, "POST", coll, "application/json", bad).await.0,
            422
        );
        let series =
            json!({"series": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}});
        assert_eq!(
            call(&api, "PATCH", &format!("{coll}/n1.1"), MERGE, series)
                .await
                .0,
            200
        );
        assert_eq!(api.events()[0]["series"]["count"], 2);
        let (_, list) = call(
            &api,
            "GET",
            "/apis/events.k8s.io/v1/events?fieldSelector=regarding.name%3Dn1",
            "",
            Value::Null,
        )
        .await;
        assert_eq!(list["items"].as_array().unwrap().len(), 1);
        let (_, none) = call(
            &api,
            "GET",
            "/apis/events.k8s.io/v1/events?fieldSelector=regarding.name%3Dn2",
            "",
            Value::Null,
        )
        .await;
        assert_eq!(none["items"].as_array().unwrap().len(), 0);
        let q =
            "/api/v1/events?fieldSelector=involvedObject.kind%3DNode%2CinvolvedObject.name%3Dn1";
        let (_, core) = call(&api, "GET", q, "", Value::Null).await;
        let item = &core["items"][0];
        assert_eq!(item["apiVersion"], "v1");
        assert_eq!(item["message"], "GPU 3 reported Xid 79");
        assert_eq!(item["involvedObject"]["uid"], "u1");
        assert_eq!(item["series"]["count"], 2);
        let (_, one) = call(
            &api,
            "GET",
            "/api/v1/namespaces/default/events/n1.1",
            "",
            Value::Null,
        )
        .await;
        assert_eq!(one["reportingComponent"], "gpu-exporter");
        let (_, table) = call(&api, "GET", "/api/v1/events", "table", Value::Null).await;
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["rows"][0]["cells"][2], "GpuXid");
    }

    /// While an `unreachable` fault is in force every request fails without an answer (a new
    /// connection and one kept alive from before, reads included) and an open watch ends;
    /// afterwards the same client is served again.
    #[tokio::test]
    async fn an_unreachable_fault_closes_every_connection_until_it_ends() {
        let api = FakeApi::start().await.unwrap();
        let client = api.client().unwrap();
        let get = |c: kube::Client| async move {
            let req = axum::http::Request::builder()
                .uri("/api/v1/nodes")
                .body(kube::client::Body::empty())
                .unwrap();
            c.send(req).await.map(|r| r.status().as_u16())
        };
        assert_eq!(
            get(client.clone()).await.unwrap(),
            200,
            "served, kept alive"
        );
        let watch = axum::http::Request::builder()
            .uri("/api/v1/pods?watch=true&timeoutSeconds=60")
            .body(kube::client::Body::empty())
            .unwrap();
        let stream = api.client().unwrap().send(watch).await.unwrap();
        assert_eq!(stream.status().as_u16(), 200);
        let mut body = stream.into_body();
        let ended = tokio::spawn(async move {
            loop {
                match body.frame().await {
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => return,
                }
            }
        });
        api.set_write_faults(vec![WriteFault {
            unreachable: true,
            ..WriteFault::default()
        }]);
        tokio::time::timeout(Duration::from_secs(5), ended)
            .await
            .expect("the open watch ends")
            .unwrap();
        assert!(
            get(client.clone()).await.is_err(),
            "no answer on the kept-alive client"
        );
        assert!(
            get(api.client().unwrap()).await.is_err(),
            "no answer on a new one"
        );
        api.set_write_faults(Vec::new());
        assert_eq!(get(client).await.unwrap(), 200, "served again");
    }

    #[tokio::test]
    async fn write_faults_hit_only_writes_under_their_prefix() {
        let api = FakeApi::start().await.unwrap();
        api.apply_node(node());
        api.set_write_faults(vec![WriteFault {
            path_prefix: "/apis/events.k8s.io/".into(),
            status: Some(403),
            delay: Duration::ZERO,
            unreachable: false,
        }]);
        let coll = "/apis/events.k8s.io/v1/namespaces/default/events";
        let (code, body) = call(&api, "POST", coll, "application/json", event("e")).await;
        assert_eq!((code, body["reason"].as_str()), (403, Some("Forbidden")));
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .contains("cannot create resource \"events.events.k8s.io\""),
            "{body}"
        );
        assert_eq!(
            call(&api, "GET", coll, "", Value::Null).await.0,
            200,
            "reads still work"
        );
        let cond = json!({"status": {"conditions": [{"type": "GpuHealthy", "status": "True"}]}});
        assert_eq!(
            call(&api, "PATCH", "/api/v1/nodes/n1/status", SMP, cond.clone())
                .await
                .0,
            200
        );
        assert!(api.events().is_empty());
        api.set_write_faults(vec![WriteFault {
            path_prefix: String::new(),
            status: None,
            delay: Duration::from_millis(50),
            unreachable: false,
        }]);
        assert_eq!(
            call(&api, "POST", coll, "application/json", event("e"))
                .await
                .0,
            201,
            "slow but served"
        );
        api.set_write_faults(Vec::new());
        assert_eq!(api.write_count("POST", "/apis/events.k8s.io/"), 2);
        assert_eq!(api.writes().last().unwrap(), &format!("POST {coll} 201"));
        api.set_fail(Some(500));
        assert_eq!(
            call(&api, "GET", "/api/v1/nodes", "", Value::Null).await.0,
            500
        );
    }
}
