//! A node-scoped reflector of pods: labels, UID, owning workload and container IDs.
//!
//! [`PodSource::spawn`] lists and then watches the pods of this node (field selector
//! `spec.nodeName=<NODE_NAME>`) through kube's watcher, which re-lists and re-watches with an
//! exponential backoff after any failure. Every change that matters to the exporter rebuilds an
//! immutable [`PodIndex`] (a node runs at most a few hundred pods, so rebuilding is cheap) and
//! publishes it with an atomic swap; readers ([`PodSource::index`]) never wait on the API.
//!
//! The owning workload is derived from the pod alone, with no further API calls and so no RBAC
//! beyond pods (see [`pod_meta`]):
//!
//! - the controller owner reference (`controller: true`), else the first owner reference;
//! - a `ReplicaSet` (group `apps`) named `<deployment>-<pod-template-hash>`, where the hash is
//!   the pod's `pod-template-hash` label, is reported as `Deployment <deployment>`. This is the
//!   naming the Deployment controller uses; reading the ReplicaSet's own owner would need
//!   `get` on ReplicaSets;
//! - a `Job` stays a `Job`: a CronJob's Jobs are named `<cronjob>-<scheduled minute>`, but a
//!   Job created by hand can have the same shape, and no pod label tells them apart reliably;
//! - any other owner (`StatefulSet`, `DaemonSet`, `ReplicationController`, a custom
//!   `LeaderWorkerSet`, ...) is reported as is;
//! - a pod without owner references (a bare pod) has no workload.
//!
//! Failures (403 without RBAC, an unreachable API server, ...) are counted in the reflector's
//! status ([`ReflectorStatus::errors`](super::reflector::ReflectorStatus::errors)), logged
//! with what failed once per cause (`failure_log::FailureLog`: a long outage is one warning,
//! not one per retry), and retried after a delay that doubles from 1 s to 30 s; the index keeps
//! its last content meanwhile, and a recovery probe clears the last error once the API answers
//! again (see [`super::reflector`]). Refused (401 or 403: no RBAC on pods, as under the GPU
//! Operator's `GPUCluster`), the pods are attributed from the kubelet alone, which the warning
//! says.
//!
//! The pod model and the pod watch only: the publishing, status and probe machinery shared
//! with the ResourceSlice reflector is [`super::reflector`], the wording of API failures
//! [`super::api_error`].

use std::collections::{BTreeMap, HashMap};
use std::pin::pin;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, ListParams};
use kube::runtime::watcher::{self, Event};

use super::api_error::{access_hint, describe_watch_error, failure_kind, refused, watch_phase};
use super::reflector::{LatestIndex, Recovery, Reflector};

/// The label the Deployment controller puts on the pods (and in the name) of a ReplicaSet.
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// The controller that owns a pod, as far as the pod itself tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workload {
    /// The owner's kind, e.g. `Deployment`, `StatefulSet`, `Job`, `LeaderWorkerSet`.
    pub kind: String,
    /// The owner's name.
    pub name: String,
}

/// One container of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerMeta {
    /// The container's name in the pod spec.
    pub name: String,
    /// The runtime's container ID without its `<runtime>://` prefix (`containerd://`,
    /// `cri-o://`, `docker://`); `None` while the container has not been created.
    pub id: Option<String>,
}

/// What the exporter needs to know about one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodMeta {
    /// `metadata.uid`.
    pub uid: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`, unfiltered (see [`super::pod_labels`] for what becomes a series label).
    pub labels: BTreeMap<String, String>,
    /// The owning workload (see the module documentation); `None` for a bare pod.
    pub workload: Option<Workload>,
    /// The containers with a status: `status.containerStatuses`, then
    /// `status.initContainerStatuses` (restartable sidecars and init containers) and
    /// `status.ephemeralContainerStatuses`.
    pub containers: Vec<ContainerMeta>,
}

/// An immutable index of the pods known at one moment.
#[derive(Debug, Default)]
pub struct PodIndex {
    by_name: HashMap<String, HashMap<String, Arc<PodMeta>>>,
    by_uid: HashMap<String, Arc<PodMeta>>,
    /// Container ID → (pod, index into `containers`).
    by_container: HashMap<String, (Arc<PodMeta>, usize)>,
}

impl PodIndex {
    /// Builds an index. When two pods share a UID, a namespace/name or a container ID, the
    /// later one wins that key.
    pub fn from_pods(pods: impl IntoIterator<Item = PodMeta>) -> Self {
        Self::from_shared(pods.into_iter().map(Arc::new))
    }

    /// As [`PodIndex::from_pods`], from shared pods (no copy).
    pub fn from_shared(pods: impl IntoIterator<Item = Arc<PodMeta>>) -> Self {
        let mut index = Self::default();
        for pod in pods {
            for (i, c) in pod.containers.iter().enumerate() {
                if let Some(id) = &c.id {
                    index.by_container.insert(id.clone(), (Arc::clone(&pod), i));
                }
            }
            index
                .by_name
                .entry(pod.namespace.clone())
                .or_default()
                .insert(pod.name.clone(), Arc::clone(&pod));
            index.by_uid.insert(pod.uid.clone(), pod);
        }
        index
    }

    /// The pod `namespace/name`.
    pub fn get(&self, namespace: &str, name: &str) -> Option<&Arc<PodMeta>> {
        self.by_name.get(namespace)?.get(name)
    }

    /// The pod with this UID (as found in a cgroup path, with dashes).
    pub fn by_uid(&self, uid: &str) -> Option<&Arc<PodMeta>> {
        self.by_uid.get(uid)
    }

    /// The pod and container name of a container ID, given with or without its
    /// `<runtime>://` prefix.
    pub fn container_by_id(&self, id: &str) -> Option<(&Arc<PodMeta>, &str)> {
        let (pod, i) = self.by_container.get(strip_runtime_prefix(id))?;
        let container = pod.containers.get(*i)?;
        Some((pod, container.name.as_str()))
    }

    /// Every pod, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<PodMeta>> {
        self.by_uid.values()
    }

    /// Number of pods.
    pub fn len(&self) -> usize {
        self.by_uid.len()
    }

    /// `true` when no pod is known.
    pub fn is_empty(&self) -> bool {
        self.by_uid.is_empty()
    }
}

/// Strips a container runtime's `<runtime>://` prefix (`containerd://abc` → `abc`).
pub fn strip_runtime_prefix(id: &str) -> &str {
    id.split_once("://").map_or(id, |(_, rest)| rest)
}

/// The exporter's view of a pod; `None` when the pod has no name or UID (never the case for
/// objects read from the API).
pub fn pod_meta(pod: &Pod) -> Option<PodMeta> {
    let meta = &pod.metadata;
    let uid = meta.uid.clone().filter(|s| !s.is_empty())?;
    let name = meta.name.clone().filter(|s| !s.is_empty())?;
    let namespace = meta
        .namespace
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "default".to_owned());
    let labels = meta.labels.clone().unwrap_or_default();
    let workload = workload(meta, &labels);
    let containers = pod
        .status
        .iter()
        .flat_map(|st| {
            let lists = [
                &st.container_statuses,
                &st.init_container_statuses,
                &st.ephemeral_container_statuses,
            ];
            lists.into_iter().flatten().flatten()
        })
        .map(container_meta)
        .collect();
    Some(PodMeta {
        uid,
        namespace,
        name,
        labels,
        workload,
        containers,
    })
}

fn container_meta(st: &ContainerStatus) -> ContainerMeta {
    let id = st
        .container_id
        .as_deref()
        .map(strip_runtime_prefix)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    ContainerMeta {
        name: st.name.clone(),
        id,
    }
}

/// The owning workload of a pod, from its owner references and labels alone.
fn workload(meta: &ObjectMeta, labels: &BTreeMap<String, String>) -> Option<Workload> {
    let owners = meta.owner_references.as_deref().unwrap_or_default();
    let owner: &OwnerReference = owners
        .iter()
        .find(|o| o.controller == Some(true))
        .or_else(|| owners.first())?;
    let is_apps = matches!(
        owner.api_version.split_once('/').map(|(g, _)| g),
        Some("apps" | "extensions")
    );
    if owner.kind == "ReplicaSet"
        && is_apps
        && let Some(hash) = labels
            .get(POD_TEMPLATE_HASH_LABEL)
            .filter(|h| !h.is_empty())
        && let Some(deployment) = owner
            .name
            .strip_suffix(hash.as_str())
            .and_then(|s| s.strip_suffix('-'))
            .filter(|s| !s.is_empty())
    {
        return Some(Workload {
            kind: "Deployment".to_owned(),
            name: deployment.to_owned(),
        });
    }
    Some(Workload {
        kind: owner.kind.clone(),
        name: owner.name.clone(),
    })
}

/// The background pod reflector and its latest [`PodIndex`].
pub type PodSource = Reflector<PodIndex>;

impl Reflector<PodIndex> {
    /// Starts the reflector on `runtime` (a tokio handle).
    ///
    /// `node_name` restricts it to the pods of one node (field selector
    /// `spec.nodeName=<node>`); `None` watches the pods of every node, which is logged as a
    /// warning (set `NODE_NAME` from the downward API). The task stops when the returned value
    /// is dropped or the runtime shuts down; it never panics on API errors, it counts and logs
    /// them and retries after a delay that doubles from 1 s to 30 s.
    pub fn spawn(
        client: kube::Client,
        node_name: Option<String>,
        runtime: &tokio::runtime::Handle,
    ) -> Arc<Self> {
        Self::start(runtime, |shared| run_pods(client, node_name, shared))
    }
}

async fn run_pods(client: kube::Client, node: Option<String>, shared: Arc<LatestIndex<PodIndex>>) {
    let api: Api<Pod> = Api::all(client);
    let mut cfg = watcher::Config::default();
    let mut probe = ListParams::default().limit(1);
    let scope = match &node {
        Some(n) => {
            cfg = cfg.fields(&format!("spec.nodeName={n}"));
            probe = probe.fields(&format!("spec.nodeName={n}"));
            format!("on node {n}")
        }
        None => {
            tracing::warn!(
                "NODE_NAME is unset: watching the pods of every node in the cluster; set it from \
                 the downward API (fieldRef spec.nodeName) to watch only this node's pods"
            );
            "on all nodes".to_owned()
        }
    };
    // Paced by `Recovery` (retry delay and probe), not by kube's backoff (see `reflector`).
    let mut events = pin!(watcher::watcher(api.clone(), cfg));
    let mut recovery = Recovery::new();
    let mut failures = super::failure_log::FailureLog::default();
    let mut pods: HashMap<String, Arc<PodMeta>> = HashMap::new();
    let mut initial: Option<HashMap<String, Arc<PodMeta>>> = None;
    let publish = |pods: &HashMap<String, Arc<PodMeta>>, synced: bool| {
        shared.publish(
            PodIndex::from_shared(pods.values().cloned()),
            pods.len(),
            synced,
        );
    };
    while let Some(event) = recovery.next(&mut events, &api, &probe, &shared).await {
        match event {
            Ok(Event::Init) => initial = Some(HashMap::new()),
            Ok(Event::InitApply(pod)) => {
                if let (Some(buf), Some(meta)) = (initial.as_mut(), pod_meta(&pod)) {
                    buf.insert(meta.uid.clone(), Arc::new(meta));
                }
            }
            Ok(Event::InitDone) => {
                let listed = initial.take().unwrap_or_default();
                // A re-list (after a 410 or an outage) that finds the same pods changes nothing.
                if listed != pods || !shared.status().synced {
                    pods = listed;
                    publish(&pods, true);
                } else {
                    shared.ok(true);
                }
                failures.ok();
                tracing::info!(pods = pods.len(), "pod reflector synced ({scope})");
            }
            Ok(Event::Apply(pod)) => {
                if let Some(meta) = pod_meta(&pod)
                    && pods.get(&meta.uid).is_none_or(|old| **old != meta)
                {
                    pods.insert(meta.uid.clone(), Arc::new(meta));
                    publish(&pods, false);
                } else {
                    shared.ok(false);
                }
            }
            Ok(Event::Delete(pod)) => {
                let uid = pod.metadata.uid.as_deref().unwrap_or_default();
                if pods.remove(uid).is_some() {
                    publish(&pods, false);
                } else {
                    shared.ok(false);
                }
            }
            Err(err) => {
                let mut msg = format!(
                    "{} pods {scope}: {}",
                    watch_phase(&err),
                    describe_watch_error(&err)
                );
                msg.push_str(access_hint(&err, "pods"));
                let meanwhile = if refused(&err) {
                    "; retrying with backoff, and meanwhile the pods it has not listed are \
                     attributed from the kubelet alone, without pod_uid, workload or pod labels"
                } else {
                    "; retrying with backoff, pod metadata keeps its last value"
                };
                failures.note(failure_kind(&err), &format!("{msg}{meanwhile}"));
                shared.failed(msg, refused(&err));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    fn owned_pod(kind: &str, api_version: &str, owner: &str, hash: Option<&str>) -> Pod {
        let mut labels = serde_json::Map::new();
        if let Some(h) = hash {
            labels.insert(POD_TEMPLATE_HASH_LABEL.into(), json!(h));
        }
        pod(json!({
            "metadata": {
                "name": "p", "namespace": "ns", "uid": "u1", "labels": labels,
                "ownerReferences": [
                    {"apiVersion": api_version, "kind": kind, "name": owner, "uid": "o1",
                     "controller": true}
                ]
            }
        }))
    }

    fn workload_of(p: &Pod) -> Option<(String, String)> {
        pod_meta(p).unwrap().workload.map(|w| (w.kind, w.name))
    }

    fn wl(kind: &str, name: &str) -> Option<(String, String)> {
        Some((kind.to_owned(), name.to_owned()))
    }

    #[test]
    fn replicaset_with_template_hash_is_a_deployment() {
        let p = owned_pod(
            "ReplicaSet",
            "apps/v1",
            "trainer-7d9f8b6c5d",
            Some("7d9f8b6c5d"),
        );
        assert_eq!(workload_of(&p), wl("Deployment", "trainer"));
        let p = owned_pod("ReplicaSet", "apps/v1", "my-app-v2-5c6d", Some("5c6d"));
        assert_eq!(workload_of(&p), wl("Deployment", "my-app-v2"));
    }

    #[test]
    fn replicaset_without_matching_hash_stays_a_replicaset() {
        let p = owned_pod("ReplicaSet", "apps/v1", "standalone", None);
        assert_eq!(workload_of(&p), wl("ReplicaSet", "standalone"));
        let p = owned_pod("ReplicaSet", "apps/v1", "rs-abc", Some("xyz"));
        assert_eq!(workload_of(&p), wl("ReplicaSet", "rs-abc"));
        let p = owned_pod("ReplicaSet", "apps/v1", "-abc", Some("abc"));
        assert_eq!(workload_of(&p), wl("ReplicaSet", "-abc"));
        let p = owned_pod("ReplicaSet", "example.com/v1", "x-abc", Some("abc"));
        assert_eq!(
            workload_of(&p),
            wl("ReplicaSet", "x-abc"),
            "not the apps group"
        );
    }

    #[test]
    fn other_owners_are_reported_as_is() {
        for (kind, api) in [
            ("StatefulSet", "apps/v1"),
            ("DaemonSet", "apps/v1"),
            ("Job", "batch/v1"),
            ("ReplicationController", "v1"),
            ("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1"),
        ] {
            let p = owned_pod(kind, api, "owner-28312345", None);
            assert_eq!(workload_of(&p), wl(kind, "owner-28312345"));
        }
    }

    #[test]
    fn controller_owner_wins_else_first() {
        let p = pod(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "1"},
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "2",
                 "controller": true}
            ]}
        }));
        assert_eq!(workload_of(&p), wl("StatefulSet", "db"));
        let p = pod(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "1"},
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "2"}
            ]}
        }));
        assert_eq!(workload_of(&p), wl("ConfigMap", "cm"));
    }

    #[test]
    fn bare_pod_has_no_workload() {
        let p = pod(json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u"}}));
        assert_eq!(workload_of(&p), None);
    }

    #[test]
    fn pod_without_uid_or_name_is_skipped() {
        assert!(pod_meta(&pod(json!({"metadata": {"name": "p"}}))).is_none());
        assert!(pod_meta(&pod(json!({"metadata": {"uid": "u"}}))).is_none());
    }

    #[test]
    fn containers_from_all_status_lists_with_prefix_stripped() {
        let p = pod(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "status": {
                "containerStatuses": [
                    {"name": "main", "containerID": "containerd://aaa111", "image": "i",
                     "imageID": "", "ready": true, "restartCount": 0},
                    {"name": "waiting", "image": "i", "imageID": "", "ready": false,
                     "restartCount": 0}
                ],
                "initContainerStatuses": [
                    {"name": "sidecar", "containerID": "cri-o://bbb222", "image": "i",
                     "imageID": "", "ready": true, "restartCount": 0}
                ],
                "ephemeralContainerStatuses": [
                    {"name": "debug", "containerID": "docker://ccc333", "image": "i",
                     "imageID": "", "ready": false, "restartCount": 0}
                ]
            }
        }));
        let m = pod_meta(&p).unwrap();
        let got: Vec<(&str, Option<&str>)> = m
            .containers
            .iter()
            .map(|c| (c.name.as_str(), c.id.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("main", Some("aaa111")),
                ("waiting", None),
                ("sidecar", Some("bbb222")),
                ("debug", Some("ccc333")),
            ]
        );
    }

    fn meta(ns: &str, name: &str, uid: &str, containers: &[(&str, &str)]) -> PodMeta {
        PodMeta {
            uid: uid.into(),
            namespace: ns.into(),
            name: name.into(),
            labels: BTreeMap::new(),
            workload: None,
            containers: containers
                .iter()
                .map(|(n, id)| ContainerMeta {
                    name: (*n).into(),
                    id: Some((*id).into()),
                })
                .collect(),
        }
    }

    #[test]
    fn index_lookups() {
        let idx = PodIndex::from_pods([
            meta("a", "p1", "u1", &[("c1", "id1"), ("c2", "id2")]),
            meta("b", "p1", "u2", &[("c1", "id3")]),
        ]);
        assert_eq!(idx.len(), 2);
        assert!(!idx.is_empty());
        assert_eq!(idx.get("a", "p1").unwrap().uid, "u1");
        assert_eq!(idx.get("b", "p1").unwrap().uid, "u2");
        assert!(idx.get("c", "p1").is_none());
        assert!(idx.get("a", "p2").is_none());
        assert_eq!(idx.by_uid("u2").unwrap().namespace, "b");
        let (p, c) = idx.container_by_id("id2").unwrap();
        assert_eq!((p.uid.as_str(), c), ("u1", "c2"));
        let (p, c) = idx.container_by_id("containerd://id3").unwrap();
        assert_eq!((p.uid.as_str(), c), ("u2", "c1"));
        assert!(idx.container_by_id("nope").is_none());
        assert_eq!(idx.iter().count(), 2);
        assert!(PodIndex::default().is_empty());
    }

    #[test]
    fn strip_prefix_forms() {
        assert_eq!(strip_runtime_prefix("containerd://abc"), "abc");
        assert_eq!(strip_runtime_prefix("cri-o://abc"), "abc");
        assert_eq!(strip_runtime_prefix("docker://abc"), "abc");
        assert_eq!(strip_runtime_prefix("abc"), "abc");
    }
}
