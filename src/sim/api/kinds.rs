//! The two kinds of object the fake API server stores (pods and ResourceSlices) and how they
//! are named and served: list and item kinds, `apiVersion`, the discovery documents of the
//! `resource.k8s.io` group.
//!
//! Pure; it must not touch the store or the watches.

use serde_json::{Value, json};

/// The API group of ResourceSlices.
pub(super) const RESOURCE_GROUP: &str = "resource.k8s.io";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Pod,
    Slice,
}

pub(super) fn api_group(versions: &[String]) -> Value {
    let gv: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{RESOURCE_GROUP}/{v}"), "version": v}))
        .collect();
    let mut group = json!({
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": RESOURCE_GROUP,
        "versions": gv,
    });
    if let (Some(first), Some(map)) = (gv.first(), group.as_object_mut()) {
        map.insert("preferredVersion".to_owned(), first.clone());
    }
    group
}

pub(super) fn api_resource_list(version: &str) -> Value {
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{RESOURCE_GROUP}/{version}"),
        "resources": [{
            "name": "resourceslices",
            "singularName": "resourceslice",
            "namespaced": false,
            "kind": "ResourceSlice",
            "verbs": ["get", "list", "watch"],
        }],
    })
}

pub(super) fn list_kind(kind: Kind) -> &'static str {
    match kind {
        Kind::Pod => "PodList",
        Kind::Slice => "ResourceSliceList",
    }
}

pub(super) fn item_kind(kind: Kind) -> &'static str {
    match kind {
        Kind::Pod => "Pod",
        Kind::Slice => "ResourceSlice",
    }
}

/// An object as served: with `kind` and `apiVersion` set.
pub(super) fn served(kind: Kind, api_version: &str, obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(map) = obj.as_object_mut() {
        map.insert("kind".to_owned(), json!(item_kind(kind)));
        map.insert("apiVersion".to_owned(), json!(api_version));
    }
    obj
}
