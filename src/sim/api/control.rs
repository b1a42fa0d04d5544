//! The fake API server's control surface, what `--simulate` and the tests call on a
//! [`FakeApi`]: objects put, replaced and removed (each change wakes the watches), read back as
//! served, failures set ([`FakeApi::set_fail`], [`FakeApi::set_write_faults`]), the logs of
//! requests and writes, the RBAC rules ([`FakeApi::set_rbac`]) and the `resource.k8s.io`
//! versions served; and [`ApiPods`], the handle through which the scenario's pod timeline adds
//! and removes pods.
//!
//! It must not serve requests (the routes do) or decide what a fault does (`faults`).

use std::sync::Arc;

use serde_json::Value;

use super::FakeApi;
use super::kinds::*;
use super::rbac::RbacRule;
use super::store::{Inner, WriteFault};

impl Inner {
    fn put(&self, kind: Kind, obj: Value) {
        self.lock().put(kind, obj);
        self.notify();
    }

    fn remove(&self, kind: Kind, namespace: &str, name: &str) {
        if self.lock().remove(kind, namespace, name) {
            self.notify();
        }
    }
}

/// A handle that adds and removes pods of a [`FakeApi`], for a task that outlives a borrow of
/// it (the scenario's pod timeline); it does nothing once the server is dropped.
#[derive(Clone)]
pub struct ApiPods(Arc<Inner>);

impl ApiPods {
    /// As [`FakeApi::apply_pod`].
    pub fn apply(&self, pod: Value) {
        self.0.put(Kind::Pod, pod);
    }

    /// As [`FakeApi::delete_pod`].
    pub fn delete(&self, namespace: &str, name: &str) {
        self.0.remove(Kind::Pod, namespace, name);
    }

    /// Whether the server has been dropped.
    pub fn closed(&self) -> bool {
        self.0.lock().closed
    }
}

impl FakeApi {
    fn put(&self, kind: Kind, obj: Value) {
        self.inner.put(kind, obj);
    }

    fn remove(&self, kind: Kind, namespace: &str, name: &str) {
        self.inner.remove(kind, namespace, name);
    }

    /// A handle that adds and removes pods from elsewhere (see [`ApiPods`]).
    pub fn pods_handle(&self) -> ApiPods {
        ApiPods(Arc::clone(&self.inner))
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

    /// The RBAC rules of the exporter's service account (a ClusterRole's `rules`): a request
    /// on an object route whose verb no rule allows answers `403 Forbidden` worded as a real
    /// API server words it, and access reviews answer from the rules. `None` (the default)
    /// allows everything. Open watches are not closed, as on a real server. [`FakeApi::set_fail`]
    /// takes precedence.
    pub fn set_rbac(&self, rules: Option<Vec<RbacRule>>) {
        self.inner.lock().rbac = rules;
    }

    /// Which `resource.k8s.io` versions discovery reports and the server serves, in the
    /// given order (default `["v1"]`; an empty list makes the group unknown, 404).
    pub fn set_resource_api_versions(&self, versions: &[&str]) {
        self.inner.lock().resource_versions = versions.iter().map(|v| (*v).to_owned()).collect();
    }
}
