//! A tiny Kubernetes API server on loopback, for `--simulate` and the tests: the [`FakeApi`]
//! handle and its start-up. `server` runs the accept loop, `routes` is the axum route table
//! (`target` lists the collection and object paths and what a request on one names),
//! `handlers` answer, `faults` is the fault-injection middleware around every route,
//! `control` is what the tests and the simulator call (objects, faults, logs), `store` holds
//! the pods, ResourceSlices, Nodes and Events, `list` serves lists and watches, `write`
//! creates and patches, `patch` merges bodies, `events` converts Events, `kinds` and `table`
//! write discovery documents and kubectl's tables, `http` holds selectors and error statuses.
//! Never part of the production build.
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
//! | `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews` | allowed, or from the RBAC rules of [`FakeApi::set_rbac`] |
//! | `GET /version` | a version `Info` |
//!
//! PATCH takes `application/strategic-merge-patch+json` (Node conditions merge by `type`) and
//! `application/merge-patch+json`; anything else (JSON patch, server-side apply) is `415`.
//! A patch carrying a `metadata.resourceVersion` other than the current one is a `409
//! Conflict`; a patch that changes nothing keeps the `resourceVersion`. Aggregated discovery
//! and OpenAPI are not served: kubectl falls back to the plain documents.
//!
//! Unknown paths answer `404 NotFound` and methods a path does not take `405
//! MethodNotAllowed`, both with a `Status` body. Lists honour `fieldSelector` (`path=value`, `path==value`, `path!=value`, comma-separated,
//! on the object as served, e.g. `spec.nodeName=node-a` or `involvedObject.name=node-a`),
//! simple `labelSelector`s (`k=v`, `k!=v`, `k`, `!k`), `limit` and `continue`; a value that does not decode
//! (`limit=ten`) is a `400 BadRequest` naming the parameter. Watches honour
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
//! api_faults` as scenario time passes. [`FakeApi::set_rbac`] (`rbac`) grants the client only
//! a ClusterRole's rules: a request on an object route that they do not allow answers `403
//! Forbidden` as a real API server words it; discovery, `/version` and access reviews stay
//! allowed.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::http::Uri;
use tokio::sync::watch;

pub mod control;
mod events;
mod faults;
mod handlers;
mod http;
mod kinds;
mod list;
mod patch;
mod rbac;
mod routes;
mod server;
mod store;
mod table;
mod target;
pub mod timeline;
mod write;

pub use rbac::{RbacRule, SERVICE_ACCOUNT};
use store::{Inner, Store};
pub use store::{WriteFault, now_rfc3339};

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
        let server = server::spawn(listener, &inner);
        Ok(Self {
            inner,
            addr,
            server,
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
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.inner.lock().closed = true;
        self.inner.notify();
        self.server.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use serde_json::{Value, json};
    use std::time::Duration;

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

    fn message(body: &Value) -> &str {
        body["message"].as_str().unwrap_or_default()
    }

    /// Each path and method answers what the hand-written dispatch before the routes did: the objects
    /// and documents a path names, `404` for a path not served (`resource.k8s.io` versions
    /// included, whatever the method) and `405` for a method a served path does not take.
    #[tokio::test]
    async fn routes_answer_what_their_paths_name() {
        let api = FakeApi::start().await.unwrap();
        api.set_resource_api_versions(&["v1beta1"]);
        api.apply_node(node());
        let get = |path: &'static str| call(&api, "GET", path, "", Value::Null);
        let (code, pods) = get("/api/v1/pods").await;
        assert_eq!((code, pods["kind"].as_str()), (200, Some("PodList")));
        assert_eq!(get("/apis/resource.k8s.io").await.1["kind"], "APIGroup");
        let (code, slices) = get("/apis/resource.k8s.io/v1beta1/resourceslices").await;
        assert_eq!(
            (code, slices["kind"].as_str()),
            (200, Some("ResourceSliceList"))
        );
        assert_eq!(slices["apiVersion"], "resource.k8s.io/v1beta1");
        let (code, body) = get("/apis/resource.k8s.io/v1/resourceslices").await;
        assert_eq!((code, body["reason"].as_str()), (404, Some("NotFound")));
        assert_eq!(
            message(&body),
            "the server could not find /apis/resource.k8s.io/v1/resourceslices"
        );
        let post = |path: &'static str| call(&api, "POST", path, "application/json", json!({}));
        assert_eq!(post("/apis/resource.k8s.io/v1/resourceslices").await.0, 404);
        assert_eq!(
            post("/apis/resource.k8s.io/v1beta1/resourceslices").await.0,
            405
        );
        assert_eq!(get("/api/v1/nodes").await.1["kind"], "NodeList");
        let (code, n1) = get("/api/v1/nodes/n1/status").await;
        assert_eq!((code, n1["metadata"]["name"].as_str()), (200, Some("n1")));
        assert_eq!(get("/api/v1/namespaces/default/nodes").await.0, 404);
        assert_eq!(get("/api/v1/events").await.1["apiVersion"], "v1");
        let (_, ml) = get("/apis/events.k8s.io/v1/namespaces/ml/events").await;
        assert_eq!(
            (ml["kind"].as_str(), ml["apiVersion"].as_str()),
            (Some("EventList"), Some("events.k8s.io/v1"))
        );
        let (code, e1) = get("/apis/events.k8s.io/v1/namespaces/ml/events/e1").await;
        assert_eq!(
            (code, message(&e1)),
            (404, "events.events.k8s.io \"e1\" not found")
        );
        assert_eq!(
            get("/apis/events.k8s.io/v1").await.1["kind"],
            "APIResourceList"
        );
        assert_eq!(get("/apis/events.k8s.io/v2").await.0, 404);
        let (code, body) = get("/apis/example.com").await;
        assert_eq!(
            (code, message(&body)),
            (404, "the server could not find /apis/example.com")
        );
        assert_eq!(post("/apis/example.com").await.0, 404);
        assert_eq!(get("/version").await.1["gitVersion"], "v1.33.0-fake");
        let review = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
        let (code, allowed) = post(review).await;
        assert_eq!(
            (code, allowed["status"]["allowed"].as_bool()),
            (201, Some(true))
        );
        assert_eq!(get(review).await.0, 405);
        let (code, body) = call(
            &api,
            "PATCH",
            "/api/v1/namespaces/default/pods/p",
            MERGE,
            json!({}),
        )
        .await;
        assert_eq!(
            (code, body["reason"].as_str(), message(&body)),
            (
                405,
                Some("MethodNotAllowed"),
                "the fake API server does not serve PATCH /api/v1/namespaces/default/pods/p"
            )
        );
        assert_eq!(
            post("/api/v1/events").await.0,
            405,
            "core Events are read-only"
        );
        assert_eq!(post("/api/v1/pods").await.0, 405);
        assert_eq!(
            call(&api, "HEAD", "/api/v1/pods", "", Value::Null).await.0,
            405
        );
        assert_eq!(
            call(&api, "DELETE", "/api/v1/nodes/n1", "", Value::Null)
                .await
                .0,
            405
        );
        api.set_resource_api_versions(&[]);
        assert_eq!(get("/apis/resource.k8s.io").await.0, 404);
        assert_eq!(post("/apis/resource.k8s.io").await.0, 404);
    }

    /// The list parameters arrive decoded by `Query`: percent-encoded selectors, `limit` and
    /// `continue`; a value that does not decode is a `400` naming its parameter, and
    /// parameters the server does not read are ignored.
    #[tokio::test]
    async fn list_parameters_are_decoded_by_query() {
        let api = FakeApi::start().await.unwrap();
        for (name, app, node) in [("p1", "x", "n1"), ("p2", "y", "n1"), ("p3", "x", "n2")] {
            api.apply_pod(json!({"metadata": {"name": name, "labels": {"app": app}},
                "spec": {"nodeName": node}}));
        }
        let names = |list: &Value| -> Vec<String> {
            list["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["metadata"]["name"].as_str().unwrap().to_owned())
                .collect()
        };
        let get = |path: &'static str| call(&api, "GET", path, "", Value::Null);
        let (_, list) = get("/api/v1/pods?labelSelector=app%3Dx").await;
        assert_eq!(names(&list), ["p1", "p3"]);
        let (_, list) = get("/api/v1/pods?labelSelector=app%21%3Dx%2Capp").await;
        assert_eq!(names(&list), ["p2"]);
        let (_, list) =
            get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1%2Cmetadata.name%21%3Dp1").await;
        assert_eq!(names(&list), ["p2"]);
        let (_, page) = get("/api/v1/pods?limit=2").await;
        assert_eq!(names(&page), ["p1", "p2"]);
        assert_eq!(page["metadata"]["continue"], "2");
        let (_, rest) = get("/api/v1/pods?limit=2&continue=2").await;
        assert_eq!(names(&rest), ["p3"]);
        assert_eq!(names(&get("/api/v1/pods?limit=0").await.1).len(), 3);
        assert_eq!(names(&get("/api/v1/pods?limit=-1").await.1).len(), 3);
        for (path, param) in [
            ("/api/v1/pods?limit=ten", "limit"),
            ("/api/v1/pods?limit=2&continue=later", "continue"),
            (
                "/api/v1/pods?watch=true&timeoutSeconds=soon",
                "timeoutSeconds",
            ),
        ] {
            let (code, body) = get(path).await;
            assert_eq!(
                (code, body["reason"].as_str()),
                (400, Some("BadRequest")),
                "{path}"
            );
            assert!(message(&body).contains(param), "{path}: {body}");
        }
        let (code, body) = get("/api/v1/pods?watch=true&resourceVersion=abc").await;
        assert_eq!((code, message(&body)), (400, "invalid resourceVersion"));
        let (code, list) =
            get("/api/v1/pods?pretty=true&resourceVersionMatch=NotOlderThan&watch=false").await;
        assert_eq!((code, names(&list).len()), (200, 3));
    }

    /// The fault middleware stands in front of every route: a failing server answers its
    /// status for paths not served and methods not taken too, names the route's resource (or
    /// else the path) and the verb, and logs each request and write.
    #[tokio::test]
    async fn set_fail_answers_every_request_naming_its_resource() {
        let api = FakeApi::start().await.unwrap();
        api.set_resource_api_versions(&["v1"]);
        api.set_fail(Some(403));
        let (code, body) = call(&api, "GET", "/api/v1/pods?watch=true", "", Value::Null).await;
        assert_eq!((code, body["reason"].as_str()), (403, Some("Forbidden")));
        assert_eq!(
            message(&body),
            "pods is forbidden: User \"system:serviceaccount:fake:gpu-exporter\" cannot watch \
             resource \"pods\" at the cluster scope (fake API server set to fail)"
        );
        let (_, body) = call(
            &api,
            "GET",
            "/apis/events.k8s.io/v1/events",
            "",
            Value::Null,
        )
        .await;
        assert!(
            message(&body).starts_with("events.events.k8s.io is forbidden")
                && message(&body).contains("cannot list resource"),
            "{body}"
        );
        let (code, body) = call(&api, "GET", "/no/such/path", "", Value::Null).await;
        assert_eq!(code, 403, "a path not served fails too");
        assert!(
            message(&body).starts_with("/no/such/path is forbidden"),
            "{body}"
        );
        let pod = "/api/v1/namespaces/default/pods/p";
        let (code, body) = call(&api, "PATCH", pod, MERGE, json!({})).await;
        assert_eq!(code, 403, "a method not taken fails too");
        assert!(
            message(&body).contains("cannot patch resource \"pods\""),
            "{body}"
        );
        api.set_fail(Some(500));
        let slices = |v: &'static str| call(&api, "GET", v, "", Value::Null);
        let (code, body) = slices("/apis/resource.k8s.io/v1/resourceslices").await;
        assert_eq!(
            (code, message(&body)),
            (
                500,
                "resourceslices.resource.k8s.io: fake API server set to fail with 500"
            )
        );
        let (_, body) = slices("/apis/resource.k8s.io/v2/resourceslices").await;
        assert_eq!(
            message(&body),
            "/apis/resource.k8s.io/v2/resourceslices: fake API server set to fail with 500",
            "a version not served names the path"
        );
        api.set_fail(None);
        assert_eq!(
            call(&api, "GET", "/no/such/path", "", Value::Null).await.0,
            404
        );
        let requests = api.requests();
        assert_eq!(requests.first().unwrap(), "/api/v1/pods?watch=true");
        assert_eq!(requests.iter().filter(|r| *r == "/no/such/path").count(), 2);
        assert_eq!(api.writes(), [format!("PATCH {pod} 403")]);
    }

    /// With RBAC rules set, only what they grant is served; the rest is refused with the
    /// wording of a real API server, and access reviews answer from the same rules.
    #[tokio::test]
    async fn rbac_rules_allow_what_they_grant_and_refuse_the_rest() {
        let api = FakeApi::start().await.unwrap();
        api.apply_node(node());
        api.set_rbac(Some(vec![
            RbacRule::new(
                &["resource.k8s.io"],
                &["resourceslices"],
                &["get", "list", "watch"],
            ),
            RbacRule::new(&[""], &["nodes/status"], &["patch"]),
        ]));
        let get = |path: &'static str| call(&api, "GET", path, "", Value::Null);
        let (code, body) = get("/apis/resource.k8s.io/v1/resourceslices?watch=false").await;
        assert_eq!(
            (code, body["kind"].as_str()),
            (200, Some("ResourceSliceList"))
        );
        let (code, body) = get("/api/v1/pods?fieldSelector=spec.nodeName%3Dn1").await;
        assert_eq!(
            (code, body["reason"].as_str(), message(&body)),
            (
                403,
                Some("Forbidden"),
                "pods is forbidden: User \"system:serviceaccount:fake:gpu-exporter\" cannot \
                 list resource \"pods\" in API group \"\" at the cluster scope"
            )
        );
        let (_, body) = get("/api/v1/pods?watch=true").await;
        assert!(
            message(&body).contains("cannot watch resource \"pods\""),
            "{body}"
        );
        let (_, body) = get("/api/v1/namespaces/ml/pods/p").await;
        assert_eq!(
            message(&body),
            "pods \"p\" is forbidden: User \"system:serviceaccount:fake:gpu-exporter\" cannot \
             get resource \"pods\" in API group \"\" in the namespace \"ml\""
        );
        let (code, body) = get("/api/v1/nodes/n1").await;
        assert_eq!(code, 403, "the Node itself is not granted: {body}");
        let patch = json!({"status": {"conditions": [{"type": "GpuHealthy", "status": "True"}]}});
        let (code, _) = call(&api, "PATCH", "/api/v1/nodes/n1/status", SMP, patch).await;
        assert_eq!(code, 200, "nodes/status is");
        let (code, body) = call(
            &api,
            "POST",
            "/apis/events.k8s.io/v1/namespaces/default/events",
            "application/json",
            event("n1.1"),
        )
        .await;
        assert_eq!(code, 403);
        assert!(
            message(&body).starts_with("events.events.k8s.io is forbidden")
                && message(&body).contains("cannot create resource \"events\" in API group \"events.k8s.io\" in the namespace \"default\""),
            "{body}"
        );
        assert!(api.events().is_empty(), "a refused create writes nothing");
        // Discovery and access reviews stay allowed; the reviews answer from the rules.
        assert_eq!(get("/apis/resource.k8s.io").await.0, 200);
        assert_eq!(get("/api/v1").await.0, 200);
        let review = |g: &str, r: &str, v: &str| {
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                   "spec": {"resourceAttributes": {"group": g, "resource": r, "verb": v}}})
        };
        let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
        let json = "application/json";
        let (code, r) = call(
            &api,
            "POST",
            path,
            json,
            review("resource.k8s.io", "resourceslices", "watch"),
        )
        .await;
        assert_eq!((code, r["status"]["allowed"].as_bool()), (201, Some(true)));
        let (_, r) = call(&api, "POST", path, json, review("", "pods", "list")).await;
        assert_eq!(r["status"]["allowed"].as_bool(), Some(false));
        assert_eq!(r["spec"]["resourceAttributes"]["resource"], "pods");
        // set_fail takes precedence; no rules allow everything again.
        api.set_fail(Some(500));
        assert_eq!(get("/api/v1/pods").await.0, 500);
        api.set_fail(None);
        api.set_rbac(None);
        assert_eq!(get("/api/v1/pods").await.0, 200);
    }
}
