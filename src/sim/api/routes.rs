//! What a path names on the fake API server: a collection, one object (or a Node's `status`
//! subresource), a discovery document, `/version`, or the access review endpoint.
//!
//! Pure; it must not touch the store or the watches.

use serde_json::Value;

use super::kinds::*;

/// Which resource a path names.
pub(super) enum Route {
    Collection {
        kind: Kind,
        namespace: Option<String>,
        /// `apiVersion` of the items.
        api_version: String,
    },
    Item {
        kind: Kind,
        namespace: Option<String>,
        name: String,
        api_version: String,
        /// The `status` subresource.
        status: bool,
    },
    /// A discovery document.
    Doc(Value),
    Version,
    /// `POST selfsubjectaccessreviews`: everything is allowed (unless every request fails).
    AccessReview,
    NotFound,
}

fn collection(kind: Kind, namespace: Option<&str>, api_version: String) -> Route {
    Route::Collection {
        kind,
        namespace: namespace.map(str::to_owned),
        api_version,
    }
}

fn item(kind: Kind, namespace: Option<&str>, name: &str, api_version: String) -> Route {
    Route::Item {
        kind,
        namespace: namespace.map(str::to_owned),
        name: name.to_owned(),
        api_version,
        status: false,
    }
}

fn core_kind(resource: &str, namespaced: bool) -> Option<Kind> {
    [Kind::Pod, Kind::Node, Kind::Event]
        .into_iter()
        .find(|k| k.plural() == resource && k.namespaced() == namespaced)
}

pub(super) fn route(path: &str, versions: &[String]) -> Route {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let v1 = || "v1".to_owned();
    let served = |g: &str, v: &str| group_versions(g, versions).iter().any(|s| s == v);
    let events_v1 = || format!("{EVENTS_GROUP}/v1");
    match segs.as_slice() {
        ["api"] => Route::Doc(core_versions()),
        ["api", "v1"] => Route::Doc(core_resources()),
        ["api", "v1", r] => core_kind(r, false)
            .or_else(|| core_kind(r, true))
            .map_or(Route::NotFound, |k| collection(k, None, v1())),
        ["api", "v1", "namespaces", ns, r] => {
            core_kind(r, true).map_or(Route::NotFound, |k| collection(k, Some(ns), v1()))
        }
        ["api", "v1", "namespaces", ns, r, name] => {
            core_kind(r, true).map_or(Route::NotFound, |k| item(k, Some(ns), name, v1()))
        }
        ["api", "v1", "nodes", name] => item(Kind::Node, None, name, v1()),
        ["api", "v1", "nodes", name, "status"] => Route::Item {
            kind: Kind::Node,
            namespace: None,
            name: (*name).to_owned(),
            api_version: v1(),
            status: true,
        },
        ["apis"] => Route::Doc(api_group_list(versions)),
        ["apis", g] => api_group(g, versions).map_or(Route::NotFound, Route::Doc),
        ["apis", g, v] if served(g, v) => Route::Doc(group_resources(g, v)),
        ["apis", RESOURCE_GROUP, v, "resourceslices"] if served(RESOURCE_GROUP, v) => {
            collection(Kind::Slice, None, format!("{RESOURCE_GROUP}/{v}"))
        }
        ["apis", RESOURCE_GROUP, v, "resourceslices", name] if served(RESOURCE_GROUP, v) => {
            item(Kind::Slice, None, name, format!("{RESOURCE_GROUP}/{v}"))
        }
        ["apis", EVENTS_GROUP, "v1", "events"] => collection(Kind::Event, None, events_v1()),
        ["apis", EVENTS_GROUP, "v1", "namespaces", ns, "events"] => {
            collection(Kind::Event, Some(ns), events_v1())
        }
        ["apis", EVENTS_GROUP, "v1", "namespaces", ns, "events", name] => {
            item(Kind::Event, Some(ns), name, events_v1())
        }
        ["version"] => Route::Version,
        ["apis", AUTHZ_GROUP, "v1", "selfsubjectaccessreviews"] => Route::AccessReview,
        _ => Route::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_collection(r: &Route, want: Kind, ns: Option<&str>, av: &str) -> bool {
        matches!(r, Route::Collection { kind, namespace, api_version }
            if *kind == want && namespace.as_deref() == ns && api_version == av)
    }

    #[test]
    fn routes() {
        let v = vec!["v1beta1".to_owned()];
        assert!(is_collection(
            &route("/api/v1/pods", &v),
            Kind::Pod,
            None,
            "v1"
        ));
        assert!(matches!(route("/apis/resource.k8s.io", &v), Route::Doc(_)));
        assert!(is_collection(
            &route("/apis/resource.k8s.io/v1beta1/resourceslices", &v),
            Kind::Slice,
            None,
            "resource.k8s.io/v1beta1"
        ));
        assert!(matches!(
            route("/apis/resource.k8s.io/v1/resourceslices", &v),
            Route::NotFound
        ));
        assert!(matches!(
            route("/apis/resource.k8s.io", &[]),
            Route::NotFound
        ));
        assert!(is_collection(
            &route("/api/v1/nodes", &v),
            Kind::Node,
            None,
            "v1"
        ));
        assert!(matches!(
            route("/api/v1/nodes/n1/status", &v),
            Route::Item { kind: Kind::Node, status: true, ref name, .. } if name == "n1"
        ));
        assert!(matches!(
            route("/api/v1/namespaces/default/nodes", &v),
            Route::NotFound
        ));
        assert!(is_collection(
            &route("/api/v1/events", &v),
            Kind::Event,
            None,
            "v1"
        ));
        assert!(is_collection(
            &route("/apis/events.k8s.io/v1/namespaces/ml/events", &v),
            Kind::Event,
            Some("ml"),
            "events.k8s.io/v1"
        ));
        assert!(matches!(
            route("/apis/events.k8s.io/v1/namespaces/ml/events/e1", &v),
            Route::Item { kind: Kind::Event, ref name, .. } if name == "e1"
        ));
        assert!(matches!(route("/apis/events.k8s.io/v1", &v), Route::Doc(_)));
        assert!(matches!(route("/apis/example.com", &v), Route::NotFound));
    }
}
