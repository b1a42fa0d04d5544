//! The kinds of object the fake API server stores (pods, ResourceSlices, Nodes and
//! `events.k8s.io` Events) and how they are named and served: list and item kinds,
//! `apiVersion`, the core/v1 view of an Event, and the discovery documents (`/api`,
//! `/api/v1`, `/apis`, and each group and version) that kubectl and kube read.
//!
//! Pure; it must not touch the store or the watches.

use serde_json::{Value, json};

use super::events::to_core;

/// The API group of ResourceSlices.
pub(super) const RESOURCE_GROUP: &str = "resource.k8s.io";
/// The API group of the new-style Events.
pub(super) const EVENTS_GROUP: &str = "events.k8s.io";
/// The API group of access reviews.
pub(super) const AUTHZ_GROUP: &str = "authorization.k8s.io";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    Pod,
    Slice,
    Node,
    /// Stored as `events.k8s.io/v1`; served as core/v1 under `/api/v1`.
    Event,
}

impl Kind {
    pub(super) fn namespaced(self) -> bool {
        matches!(self, Kind::Pod | Kind::Event)
    }

    /// The resource's plural name, as in URLs and error messages.
    pub(super) fn plural(self) -> &'static str {
        match self {
            Kind::Pod => "pods",
            Kind::Slice => "resourceslices",
            Kind::Node => "nodes",
            Kind::Event => "events",
        }
    }
}

pub(super) fn list_kind(kind: Kind) -> &'static str {
    match kind {
        Kind::Pod => "PodList",
        Kind::Slice => "ResourceSliceList",
        Kind::Node => "NodeList",
        Kind::Event => "EventList",
    }
}

pub(super) fn item_kind(kind: Kind) -> &'static str {
    match kind {
        Kind::Pod => "Pod",
        Kind::Slice => "ResourceSlice",
        Kind::Node => "Node",
        Kind::Event => "Event",
    }
}

/// An object as served under `api_version`: with `kind` and `apiVersion` set, and an Event
/// converted to core/v1 when asked for as `v1`.
pub(super) fn served(kind: Kind, api_version: &str, obj: &Value) -> Value {
    if kind == Kind::Event && api_version == "v1" {
        return to_core(obj);
    }
    let mut obj = obj.clone();
    if let Some(map) = obj.as_object_mut() {
        map.insert("kind".to_owned(), json!(item_kind(kind)));
        map.insert("apiVersion".to_owned(), json!(api_version));
    }
    obj
}

fn resource(name: &str, kind: &str, namespaced: bool, verbs: &[&str], short: &[&str]) -> Value {
    let singular = if name.contains('/') {
        String::new()
    } else {
        kind.to_ascii_lowercase()
    };
    json!({
        "name": name, "singularName": singular, "namespaced": namespaced, "kind": kind,
        "verbs": verbs, "shortNames": short,
    })
}

fn resource_list(group_version: &str, resources: Vec<Value>) -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    })
}

/// `GET /api`.
pub(super) fn core_versions() -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
}

/// `GET /api/v1`.
pub(super) fn core_resources() -> Value {
    let read = ["get", "list", "watch"];
    resource_list(
        "v1",
        vec![
            resource("pods", "Pod", true, &read, &["po"]),
            resource(
                "nodes",
                "Node",
                false,
                &["get", "list", "watch", "patch"],
                &["no"],
            ),
            resource("nodes/status", "Node", false, &["get", "patch"], &[]),
            resource("events", "Event", true, &read, &["ev"]),
        ],
    )
}

/// `GET /apis/<group>`, or `None` for a group the server does not serve.
pub(super) fn api_group(group: &str, resource_versions: &[String]) -> Option<Value> {
    let versions = group_versions(group, resource_versions);
    let gv: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    let first = gv.first()?.clone();
    Some(json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": gv,
        "preferredVersion": first,
    }))
}

/// The served versions of a group, preferred first.
pub(super) fn group_versions(group: &str, resource_versions: &[String]) -> Vec<String> {
    match group {
        RESOURCE_GROUP => resource_versions.to_vec(),
        EVENTS_GROUP | AUTHZ_GROUP => vec!["v1".to_owned()],
        _ => Vec::new(),
    }
}

/// Whether the server serves `group` now, and `version` of it when given.
pub(super) fn serves(group: &str, version: Option<&str>, resource_versions: &[String]) -> bool {
    group_versions(group, resource_versions)
        .iter()
        .any(|v| version.is_none_or(|want| v == want))
}

/// `GET /apis`: every served group.
pub(super) fn api_group_list(resource_versions: &[String]) -> Value {
    let groups: Vec<Value> = [EVENTS_GROUP, RESOURCE_GROUP, AUTHZ_GROUP]
        .iter()
        .filter_map(|g| api_group(g, resource_versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `GET /apis/<group>/<version>` (the caller checked that the version is served).
pub(super) fn group_resources(group: &str, version: &str) -> Value {
    let gv = format!("{group}/{version}");
    let resources = match group {
        RESOURCE_GROUP => vec![resource(
            "resourceslices",
            "ResourceSlice",
            false,
            &["get", "list", "watch"],
            &[],
        )],
        EVENTS_GROUP => vec![resource(
            "events",
            "Event",
            true,
            &["create", "get", "list", "patch", "watch"],
            &["ev"],
        )],
        AUTHZ_GROUP => vec![resource(
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            false,
            &["create"],
            &[],
        )],
        _ => Vec::new(),
    };
    resource_list(&gv, resources)
}

/// `.<group>` of an `apiVersion` (`.events.k8s.io`), empty for core.
pub(super) fn group_suffix(api_version: &str) -> String {
    api_version
        .split_once('/')
        .map(|(g, _)| format!(".{g}"))
        .unwrap_or_default()
}
