//! The Kubernetes API reflectors (`sources::kube::meta::PodSource`,
//! `sources::kube::dra::DraSource`) against the loopback simulated API server
//! `sim::api::FakeApi`: real HTTP, real kube client and watcher.
//!
//! Every wait polls the published index or status against a deadline; nothing asserts after a
//! fixed sleep.

use std::pin::pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;

use gpu_exporter::sim::api::FakeApi;
use gpu_exporter::sources::kube::dra::{DraKind, DraSource, NVIDIA_GPU_DRIVER};
use gpu_exporter::sources::kube::meta::{PodSource, Workload};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::runtime::watcher::{self, Event};
use serde_json::{Value, json};

/// How long any expected change may take (covers the first retries: 1 s, 2 s, 4 s, 8 s).
const DEADLINE: Duration = Duration::from_secs(20);

/// Polls `check` until it holds or the deadline passes.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < DEADLINE,
            "timed out after {DEADLINE:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn handle() -> tokio::runtime::Handle {
    tokio::runtime::Handle::current()
}

/// A running pod on `node` with one container per (name, container ID) pair.
fn pod(ns: &str, name: &str, node: &str, uid: &str, containers: &[(&str, &str)]) -> Value {
    let statuses: Vec<Value> = containers
        .iter()
        .map(|(n, id)| {
            json!({"name": n, "containerID": id, "image": "img", "imageID": "",
                   "ready": true, "restartCount": 0, "state": {"running": {}}})
        })
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "uid": uid, "labels": {"app": name}},
        "spec": {"nodeName": node, "containers": []},
        "status": {"phase": "Running", "containerStatuses": statuses}
    })
}

/// `pod` with one controller owner reference and extra labels.
fn owned_pod(name: &str, uid: &str, owner: (&str, &str, &str), labels: &[(&str, &str)]) -> Value {
    let mut p = pod("ml", name, "node-a", uid, &[]);
    let (api_version, kind, owner_name) = owner;
    p["metadata"]["ownerReferences"] = json!([{
        "apiVersion": api_version, "kind": kind, "name": owner_name,
        "uid": format!("owner-{uid}"), "controller": true, "blockOwnerDeletion": true
    }]);
    for (k, v) in labels {
        p["metadata"]["labels"][*k] = json!(v);
    }
    p
}

fn workload(kind: &str, name: &str) -> Option<Workload> {
    Some(Workload {
        kind: kind.to_owned(),
        name: name.to_owned(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_reflector_lists_only_this_node_with_a_field_selector() {
    let api = FakeApi::start().await.unwrap();
    api.apply_pod(pod("ml", "a1", "node-a", "uid-a1", &[]));
    api.apply_pod(pod("ml", "a2", "node-a", "uid-a2", &[]));
    api.apply_pod(pod("ml", "b1", "node-b", "uid-b1", &[]));
    let source = PodSource::spawn(api.client().unwrap(), Some("node-a".into()), &handle());

    eventually("the initial list", || source.status().synced).await;
    let index = source.index();
    assert_eq!(index.len(), 2);
    assert!(index.get("ml", "a1").is_some());
    assert!(index.get("ml", "a2").is_some());
    assert!(index.get("ml", "b1").is_none(), "a pod of another node");
    let st = source.status();
    assert_eq!(st.objects, 2);
    assert_eq!(st.errors, 0);
    assert!(st.last_error.is_none());
    assert!(st.last_change_unix > 0.0);

    let selector = "fieldSelector=spec.nodeName%3Dnode-a";
    eventually("a watch request", || {
        api.requests()
            .iter()
            .any(|r| r.starts_with("/api/v1/pods?") && r.contains("watch=true"))
    })
    .await;
    let pod_requests: Vec<String> = api
        .requests()
        .into_iter()
        .filter(|r| r.starts_with("/api/v1/pods"))
        .collect();
    assert!(
        pod_requests.iter().all(|r| r.contains(selector)),
        "every pod request is scoped to the node: {pod_requests:?}"
    );
    assert!(
        pod_requests.iter().any(|r| !r.contains("watch=true")),
        "a list came first: {pod_requests:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_reflector_sees_added_changed_and_deleted_pods() {
    let api = FakeApi::start().await.unwrap();
    api.apply_pod(pod("ml", "first", "node-a", "uid-1", &[]));
    let source = PodSource::spawn(api.client().unwrap(), Some("node-a".into()), &handle());
    eventually("the initial list", || source.status().synced).await;
    assert_eq!(source.index().len(), 1);

    api.apply_pod(pod(
        "ml",
        "later",
        "node-a",
        "uid-2",
        &[("main", "containerd://abc")],
    ));
    api.apply_pod(pod("ml", "elsewhere", "node-b", "uid-3", &[]));
    eventually("the added pod", || {
        source.index().get("ml", "later").is_some()
    })
    .await;
    assert!(source.index().by_uid("uid-2").is_some());
    assert!(source.index().get("ml", "elsewhere").is_none());

    let mut relabelled = pod(
        "ml",
        "later",
        "node-a",
        "uid-2",
        &[("main", "containerd://abc")],
    );
    relabelled["metadata"]["labels"]["team"] = json!("vision");
    api.apply_pod(relabelled);
    eventually("the new label", || {
        source
            .index()
            .get("ml", "later")
            .is_some_and(|p| p.labels.get("team").map(String::as_str) == Some("vision"))
    })
    .await;

    api.delete_pod("ml", "first");
    eventually("the deleted pod to go", || {
        source.index().get("ml", "first").is_none()
    })
    .await;
    let index = source.index();
    assert_eq!(index.len(), 1);
    assert!(index.by_uid("uid-1").is_none());
    assert_eq!(source.status().objects, 1);
    assert_eq!(source.status().errors, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_reflector_resolves_workloads_without_extra_calls() {
    let api = FakeApi::start().await.unwrap();
    api.apply_pod(owned_pod(
        "trainer-7d9f8b6c5d-x2k4p",
        "u-dep",
        ("apps/v1", "ReplicaSet", "trainer-7d9f8b6c5d"),
        &[("pod-template-hash", "7d9f8b6c5d")],
    ));
    api.apply_pod(owned_pod(
        "db-0",
        "u-sts",
        ("apps/v1", "StatefulSet", "db"),
        &[],
    ));
    api.apply_pod(owned_pod(
        "nightly-28312345-abcde",
        "u-job",
        ("batch/v1", "Job", "nightly-28312345"),
        &[],
    ));
    api.apply_pod(owned_pod(
        "lws-0",
        "u-lws",
        ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "lws"),
        &[],
    ));
    api.apply_pod(pod("ml", "bare", "node-a", "u-bare", &[]));
    let source = PodSource::spawn(api.client().unwrap(), Some("node-a".into()), &handle());
    eventually("the initial list", || source.status().synced).await;

    let index = source.index();
    let wl = |name: &str| index.get("ml", name).unwrap().workload.clone();
    assert_eq!(
        wl("trainer-7d9f8b6c5d-x2k4p"),
        workload("Deployment", "trainer")
    );
    assert_eq!(wl("db-0"), workload("StatefulSet", "db"));
    assert_eq!(
        wl("nightly-28312345-abcde"),
        workload("Job", "nightly-28312345")
    );
    assert_eq!(wl("lws-0"), workload("LeaderWorkerSet", "lws"));
    assert_eq!(wl("bare"), None);
    assert!(
        api.requests().iter().all(|r| r.starts_with("/api/v1/pods")),
        "no request for ReplicaSets or other owners: {:?}",
        api.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_reflector_strips_container_runtime_prefixes() {
    let api = FakeApi::start().await.unwrap();
    let containerd = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let crio = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
    let mut p = pod(
        "ml",
        "worker",
        "node-a",
        "uid-w",
        &[("main", &format!("containerd://{containerd}"))],
    );
    p["status"]["initContainerStatuses"] = json!([{
        "name": "sidecar", "containerID": format!("cri-o://{crio}"), "image": "img",
        "imageID": "", "ready": true, "restartCount": 0, "state": {"running": {}}
    }]);
    api.apply_pod(p);
    let source = PodSource::spawn(api.client().unwrap(), Some("node-a".into()), &handle());
    eventually("the initial list", || source.status().synced).await;

    let index = source.index();
    let pod = index.get("ml", "worker").unwrap();
    let ids: Vec<(&str, Option<&str>)> = pod
        .containers
        .iter()
        .map(|c| (c.name.as_str(), c.id.as_deref()))
        .collect();
    assert_eq!(
        ids,
        vec![("main", Some(containerd)), ("sidecar", Some(crio))]
    );
    let (p, c) = index.container_by_id(containerd).unwrap();
    assert_eq!((p.name.as_str(), c), ("worker", "main"));
    let (p, c) = index.container_by_id(crio).unwrap();
    assert_eq!((p.uid.as_str(), c), ("uid-w", "sidecar"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_reflector_counts_403_and_recovers() {
    let api = FakeApi::start().await.unwrap();
    api.apply_pod(pod("ml", "a1", "node-a", "uid-a1", &[]));
    api.set_fail(Some(403));
    let source = PodSource::spawn(api.client().unwrap(), Some("node-a".into()), &handle());

    eventually("a counted error", || source.status().errors > 0).await;
    let st = source.status();
    assert!(!st.synced);
    assert!(source.index().is_empty());
    let err = st.last_error.unwrap();
    assert!(err.contains("403"), "{err}");
    assert!(err.contains("Forbidden"), "{err}");
    assert!(err.contains("node-a"), "{err}");
    assert!(err.contains("get, list and watch on pods"), "{err}");

    api.set_fail(None);
    eventually("recovery", || source.status().synced).await;
    assert!(source.index().get("ml", "a1").is_some());
    assert!(source.status().last_error.is_none());
}

/// Without RBAC on pods (the chart's gpuCluster role grants ResourceSlices only) the pod
/// watch is refused for good: it says so in its status and retries less and less often (kube's
/// own backoff is reset by every new list and retried about once a second), and it syncs
/// once the permission is granted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_pod_watch_retries_ever_less_often_and_syncs_once_granted() {
    use gpu_exporter::sim::api::RbacRule;
    let api = FakeApi::start().await.unwrap();
    api.apply_pod(pod("ml", "a1", "node-a", "uid-a1", &[]));
    api.set_rbac(Some(vec![RbacRule::new(
        &["resource.k8s.io"],
        &["resourceslices"],
        &["get", "list", "watch"],
    )]));
    let source = PodSource::spawn(api.client().unwrap(), Some("node-a".into()), &handle());
    let lists = || {
        api.requests()
            .iter()
            .filter(|r| r.starts_with("/api/v1/pods?") && !r.contains("watch=true"))
            // Not the recovery probe's one-object lists.
            .filter(|r| !r.split(['?', '&']).any(|p| p == "limit=1"))
            .count()
    };
    eventually("a refused list", || source.status().errors > 0).await;
    let st = source.status();
    assert!(st.refused && !st.synced, "{st:?}");
    let err = st.last_error.unwrap();
    assert!(err.contains("cannot list resource \"pods\""), "{err}");
    // Retries after 1, 2 and 4 s: the fourth failure comes about 7 s in; the fifth not
    // before 8 s later.
    eventually("four refused lists", || source.status().errors >= 4).await;
    let before = lists();
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        lists(),
        before,
        "a retry within 4 s of the fourth: {:?}",
        api.requests()
    );
    assert!(source.status().refused);

    api.set_rbac(None);
    eventually("the sync once granted", || source.status().synced).await;
    let st = source.status();
    assert!(!st.refused && st.last_error.is_none(), "{st:?}");
    assert!(source.index().get("ml", "a1").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_reflector_keeps_its_index_through_a_failed_watch() {
    let api = FakeApi::start().await.unwrap();
    api.apply_pod(pod("ml", "a1", "node-a", "uid-a1", &[]));
    let source = PodSource::spawn(api.client().unwrap(), Some("node-a".into()), &handle());
    eventually("the initial list", || source.status().synced).await;

    // Closes the open watch; the re-watch (or re-list) is refused.
    api.set_fail(Some(500));
    eventually("a counted error", || source.status().errors > 0).await;
    assert!(source.status().synced, "synced stays true");
    assert!(
        source.index().get("ml", "a1").is_some(),
        "the last index is kept"
    );

    api.set_fail(None);
    // No object changes, so only the recovery probe can tell that the API answers again.
    eventually("the error to clear", || {
        source.status().last_error.is_none()
    })
    .await;
    assert!(
        api.requests()
            .iter()
            .any(|r| r.contains("limit=1") && r.contains("fieldSelector=spec.nodeName%3Dnode-a")),
        "{:?}",
        api.requests()
    );
    api.apply_pod(pod("ml", "a2", "node-a", "uid-a2", &[]));
    eventually("the pod added after recovery", || {
        source.index().get("ml", "a2").is_some()
    })
    .await;
    assert!(source.index().get("ml", "a1").is_some());
}

/// An NVIDIA slice for `node` in the `v1`/`v1beta2` shape (`devices[].attributes`).
fn slice_v1(node: &str, driver: &str, devices: Value) -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-{driver}-slice")},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices
        }
    })
}

fn gpu_attrs(uuid: &str) -> Value {
    json!({
        "type": {"string": "gpu"}, "uuid": {"string": uuid}, "index": {"int": 0},
        "productName": {"string": "NVIDIA H100 80GB HBM3"},
        "driverVersion": {"version": "570.124.6"}
    })
}

fn mig_attrs(uuid: &str, parent: &str, profile: &str) -> Value {
    json!({
        "gpu.nvidia.com/type": {"string": "mig"}, "gpu.nvidia.com/uuid": {"string": uuid},
        "gpu.nvidia.com/parentUUID": {"string": parent}, "profile": {"string": profile}
    })
}

fn v1_devices() -> Value {
    json!([
        {"name": "gpu-0", "attributes": gpu_attrs("GPU-0000aaaa")},
        {"name": "gpu-1-mig-1g10gb-0", "attributes": mig_attrs("MIG-1111bbbb", "GPU-1111cccc", "1g.10gb")}
    ])
}

fn v1beta1_devices() -> Value {
    json!([
        {"name": "gpu-0", "basic": {"attributes": gpu_attrs("GPU-0000aaaa")}},
        {"name": "gpu-1-mig-1g10gb-0", "basic": {"attributes": mig_attrs("MIG-1111bbbb", "GPU-1111cccc", "1g.10gb")}}
    ])
}

fn assert_gpu_and_mig(source: &DraSource) {
    let index = source.index();
    let gpu = index.get(NVIDIA_GPU_DRIVER, "node-a", "gpu-0").unwrap();
    assert_eq!(gpu.kind, DraKind::Gpu);
    assert_eq!(gpu.uuid, "GPU-0000aaaa");
    assert_eq!(gpu.parent_uuid, None);
    let mig = index
        .get(NVIDIA_GPU_DRIVER, "node-a", "gpu-1-mig-1g10gb-0")
        .unwrap();
    assert_eq!(mig.kind, DraKind::Mig);
    assert_eq!(mig.uuid, "MIG-1111bbbb");
    assert_eq!(mig.parent_uuid.as_deref(), Some("GPU-1111cccc"));
    assert_eq!(mig.profile.as_deref(), Some("1g.10gb"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dra_v1_slices_resolve_gpu_and_mig_devices() {
    let api = FakeApi::start().await.unwrap();
    api.apply_slice(slice_v1("node-a", NVIDIA_GPU_DRIVER, v1_devices()));
    api.apply_slice(slice_v1(
        "node-a",
        "other.example.com",
        json!([{"name": "gpu-0", "attributes": gpu_attrs("GPU-ffff")}]),
    ));
    api.apply_slice(slice_v1("node-b", NVIDIA_GPU_DRIVER, v1_devices()));
    let source = DraSource::spawn(api.client().unwrap(), Some("node-a".into()), &handle());
    eventually("the initial list", || source.status().synced).await;

    assert_gpu_and_mig(&source);
    let index = source.index();
    assert_eq!(index.len(), 2, "node-b and the other driver are left out");
    assert!(index.get("other.example.com", "node-a", "gpu-0").is_none());
    assert!(index.get(NVIDIA_GPU_DRIVER, "node-b", "gpu-0").is_none());
    assert_eq!(source.status().objects, 2);

    let requests = api.requests();
    assert!(
        requests.iter().any(|r| r == "/apis/resource.k8s.io"),
        "{requests:?}"
    );
    assert!(
        requests.iter().any(|r| {
            r.starts_with("/apis/resource.k8s.io/v1/resourceslices?")
                && r.contains("fieldSelector=spec.nodeName%3Dnode-a%2Cspec.driver%3Dgpu.nvidia.com")
        }),
        "{requests:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dra_v1beta1_basic_slices_resolve_gpu_and_mig_devices() {
    let api = FakeApi::start().await.unwrap();
    api.set_resource_api_versions(&["v1beta1"]);
    let mut slice = slice_v1("node-a", NVIDIA_GPU_DRIVER, v1beta1_devices());
    slice["apiVersion"] = json!("resource.k8s.io/v1beta1");
    api.apply_slice(slice);
    let source = DraSource::spawn(api.client().unwrap(), Some("node-a".into()), &handle());
    eventually("the initial list", || source.status().synced).await;

    assert_gpu_and_mig(&source);
    assert!(
        api.requests()
            .iter()
            .any(|r| r.starts_with("/apis/resource.k8s.io/v1beta1/resourceslices?")),
        "{:?}",
        api.requests()
    );
}

/// A simulated API server serving `versions` of `resource.k8s.io` with this node's slice of
/// `v1_devices`, and a DRA source watching it.
async fn dra_on(versions: &[&str]) -> (FakeApi, Arc<DraSource>) {
    let api = FakeApi::start().await.unwrap();
    api.set_resource_api_versions(versions);
    api.apply_slice(slice_v1("node-a", NVIDIA_GPU_DRIVER, v1_devices()));
    let source = DraSource::spawn(api.client().unwrap(), Some("node-a".into()), &handle());
    (api, source)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dra_prefers_v1_then_v1beta2() {
    let (api, source) = dra_on(&["v1beta1", "v1beta2", "v1"]).await;
    eventually("the initial list", || source.status().synced).await;
    let slices: Vec<String> = api
        .requests()
        .into_iter()
        .filter(|r| r.contains("/resourceslices"))
        .collect();
    assert!(
        slices
            .iter()
            .all(|r| r.starts_with("/apis/resource.k8s.io/v1/")),
        "{slices:?}"
    );
    drop(source);

    let (api, source) = dra_on(&["v1beta1", "v1beta2"]).await;
    eventually("the initial list", || source.status().synced).await;
    assert_gpu_and_mig(&source);
    assert!(
        api.requests()
            .iter()
            .filter(|r| r.contains("/resourceslices"))
            .all(|r| r.starts_with("/apis/resource.k8s.io/v1beta2/")),
        "{:?}",
        api.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dra_retries_discovery_until_the_group_is_served() {
    let (api, source) = dra_on(&[]).await;
    eventually("a failed discovery", || source.status().errors > 0).await;
    let err = source.status().last_error.unwrap();
    assert!(err.contains("resource.k8s.io"), "{err}");
    assert!(err.contains("404"), "{err}");
    assert!(!source.status().synced);

    api.set_resource_api_versions(&["v1"]);
    eventually("discovery and sync", || source.status().synced).await;
    assert_gpu_and_mig(&source);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dra_follows_slice_changes_and_counts_403() {
    let api = FakeApi::start().await.unwrap();
    let source = DraSource::spawn(api.client().unwrap(), Some("node-a".into()), &handle());
    eventually("the initial (empty) list", || source.status().synced).await;
    assert!(source.index().is_empty());

    api.apply_slice(slice_v1("node-a", NVIDIA_GPU_DRIVER, v1_devices()));
    eventually("the added slice", || source.index().len() == 2).await;
    assert_gpu_and_mig(&source);

    api.set_fail(Some(403));
    eventually("a counted error", || source.status().errors > 0).await;
    let err = source.status().last_error.unwrap();
    assert!(err.contains("403"), "{err}");
    assert!(err.contains("resourceslices.resource.k8s.io"), "{err}");
    assert_eq!(source.index().len(), 2, "the last index is kept");

    api.set_fail(None);
    api.delete_slice("node-a-gpu.nvidia.com-slice");
    eventually("the deleted slice to go", || source.index().is_empty()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sources_stop_when_dropped() {
    let api = FakeApi::start().await.unwrap();
    let source: Arc<PodSource> =
        PodSource::spawn(api.client().unwrap(), Some("node-a".into()), &handle());
    eventually("the initial list", || source.status().synced).await;
    eventually("a watch request", || {
        api.requests().iter().any(|r| r.contains("watch=true"))
    })
    .await;
    drop(source);
    // Let the abort land, then make sure no new request arrives for a while.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = api.requests().len();
    api.set_fail(Some(500)); // would make a live watcher re-connect
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(api.requests().len(), before, "{:?}", api.requests());
}

/// The next watcher event, within the deadline.
async fn next_event<S>(events: &mut S) -> Event<Pod>
where
    S: futures::Stream<Item = Result<Event<Pod>, kube::runtime::watcher::Error>> + Unpin,
{
    tokio::time::timeout(DEADLINE, events.next())
        .await
        .expect("an event within the deadline")
        .expect("the stream goes on")
        .expect("no watcher error")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_api_serves_streaming_lists() {
    let api = FakeApi::start().await.unwrap();
    api.apply_pod(pod("ml", "a1", "node-a", "uid-a1", &[]));
    api.apply_pod(pod("ml", "b1", "node-b", "uid-b1", &[]));
    let pods: Api<Pod> = Api::all(api.client().unwrap());
    let cfg = watcher::Config::default()
        .fields("spec.nodeName=node-a")
        .streaming_lists();
    let mut events = pin!(watcher::watcher(pods, cfg));
    let mut initial = Vec::new();
    loop {
        match next_event(&mut events).await {
            Event::InitApply(p) => initial.push(p.metadata.name.unwrap()),
            Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(initial, vec!["a1".to_owned()]);
    assert!(
        api.requests()
            .iter()
            .any(|r| r.contains("sendInitialEvents=true") && r.contains("resourceVersion=0")),
        "{:?}",
        api.requests()
    );
    api.apply_pod(pod("ml", "a2", "node-a", "uid-a2", &[]));
    match next_event(&mut events).await {
        Event::Apply(p) => assert_eq!(p.metadata.name.as_deref(), Some("a2")),
        other => panic!("expected Apply(a2), got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_api_pages_lists_with_limit_and_continue() {
    let api = FakeApi::start().await.unwrap();
    for i in 0..5 {
        api.apply_pod(pod("ml", &format!("p{i}"), "node-a", &format!("u{i}"), &[]));
    }
    let pods: Api<Pod> = Api::all(api.client().unwrap());
    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(2);
    loop {
        let page = pods.list(&lp).await.unwrap();
        assert!(page.items.len() <= 2);
        assert!(page.metadata.resource_version.is_some());
        names.extend(page.items.into_iter().map(|p| p.metadata.name.unwrap()));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => {
                lp = ListParams::default().limit(2).continue_token(&token)
            }
            _ => break,
        }
    }
    assert_eq!(names, ["p0", "p1", "p2", "p3", "p4"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fake_api_answers_410_for_a_compacted_resource_version() {
    let api = FakeApi::start().await.unwrap();
    // More changes than the event log keeps.
    for _ in 0..4200 {
        api.apply_pod(pod("ml", "churn", "node-a", "uid-churn", &[]));
    }
    let pods: Api<Pod> = Api::all(api.client().unwrap());
    let stream = pods.watch(&WatchParams::default(), "2").await.unwrap();
    let mut stream = pin!(stream);
    let first = tokio::time::timeout(DEADLINE, stream.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match first {
        WatchEvent::Error(status) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
        }
        other => panic!("expected a 410 error event, got {other:?}"),
    }
}
