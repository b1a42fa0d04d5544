//! The fake API server's handlers, one per thing a route answers: discovery documents,
//! `/version`, the access review, a collection's list or watch (its query parameters decoded
//! by `Query` into [`ListParams`]), one object, an Event's creation, a patch, and the `404` and
//! `405` `Status` answers.
//!
//! They must not inject faults (`faults`) or choose what a path names (`routes`, `target`);
//! writes go through `write`, lists and watches through `list`.

use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, Uri, header};
use axum::response::Response;
use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;

use super::http::*;
use super::kinds::*;
use super::store::{Inner, not_found as object_not_found};
use super::target::Resource;
use super::{list, table, write};

/// The longest a watch stays open.
const MAX_WATCH: Duration = Duration::from_secs(300);

/// The API group a `/apis/<group>/...` route is in, set by the router's served-group check.
#[derive(Debug, Clone, Copy)]
pub(super) struct Group(pub(super) &'static str);

/// The `{version}` of a `/apis/<group>/{version}` route.
#[derive(Debug, Deserialize)]
pub(super) struct VersionParam {
    pub(super) version: Option<String>,
}

/// The query parameters of a list or watch, as clients spell them. Others are ignored.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListParams {
    pub(super) field_selector: Option<String>,
    pub(super) label_selector: Option<String>,
    /// `true` or `1` asks for a watch; anything else for a list.
    pub(super) watch: Option<String>,
    /// For a watch: the version to follow from; none, empty or `0` replays the objects first.
    pub(super) resource_version: Option<String>,
    /// For a watch: at most [`MAX_WATCH`].
    pub(super) timeout_seconds: Option<u64>,
    pub(super) send_initial_events: Option<String>,
    /// `0` or less: no limit.
    pub(super) limit: Option<i64>,
    /// The offset a previous page's `metadata.continue` gave.
    #[serde(rename = "continue")]
    pub(super) continue_at: Option<usize>,
}

impl ListParams {
    fn watching(&self) -> bool {
        self.watch
            .as_deref()
            .is_some_and(|w| w == "true" || w == "1")
    }
}

fn resource_versions(inner: &Inner) -> Vec<String> {
    inner.lock().resource_versions.clone()
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> String {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

fn wants_table(headers: &HeaderMap) -> bool {
    table::wants_table(&header_text(headers, header::ACCEPT))
}

/// `GET /api`.
pub(super) async fn core_versions_doc() -> Response {
    json_response(200, &core_versions())
}

/// `GET /api/v1`.
pub(super) async fn core_resources_doc() -> Response {
    json_response(200, &core_resources())
}

/// `GET /apis`.
pub(super) async fn group_list_doc(State(inner): State<Arc<Inner>>) -> Response {
    json_response(200, &api_group_list(&resource_versions(&inner)))
}

/// `GET /apis/<group>` and `GET /apis/<group>/{version}` (the group and version are served:
/// the router checked).
pub(super) async fn group_doc(
    State(inner): State<Arc<Inner>>,
    Extension(Group(group)): Extension<Group>,
    Path(p): Path<VersionParam>,
    uri: Uri,
) -> Response {
    let doc = match p.version {
        Some(v) => Some(group_resources(group, &v)),
        None => api_group(group, &resource_versions(&inner)),
    };
    match doc {
        Some(doc) => json_response(200, &doc),
        None => not_found(uri).await,
    }
}

/// `GET /version`.
pub(super) async fn version() -> Response {
    json_response(
        200,
        &json!({
            "major": "1", "minor": "33", "gitVersion": "v1.33.0-fake",
            "gitCommit": "", "gitTreeState": "clean", "buildDate": "",
            "goVersion": "", "compiler": "", "platform": "linux/amd64"
        }),
    )
}

/// `POST selfsubjectaccessreviews`: answered from the RBAC rules (`rbac`; everything is
/// allowed while none is set), the review's `spec` given back.
pub(super) async fn access_review(State(inner): State<Arc<Inner>>, body: Bytes) -> Response {
    let review: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let status = {
        let st = inner.lock();
        super::rbac::review_status(st.rbac.as_deref(), &review)
    };
    let spec = review.get("spec").cloned().unwrap_or_else(|| json!({}));
    json_response(
        201,
        &json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": spec, "status": status
        }),
    )
}

/// `GET` of a collection: a list, or with `watch=true` a watch.
pub(super) async fn collection(
    State(inner): State<Arc<Inner>>,
    res: Resource,
    query: Result<Query<ListParams>, QueryRejection>,
    headers: HeaderMap,
) -> Response {
    let q = match query {
        Ok(Query(q)) => q,
        Err(e) => return error_response(400, &e.body_text()),
    };
    let selector = Selector::parse(q.field_selector.as_deref(), q.label_selector.as_deref());
    let kind = res.route.kind;
    if q.watching() {
        let since = match q.resource_version.as_deref().filter(|v| !v.is_empty()) {
            None => 0,
            Some(v) => match v.parse::<u64>() {
                Ok(v) => v,
                Err(_) => return error_response(400, "invalid resourceVersion"),
            },
        };
        let timeout = q
            .timeout_seconds
            .map_or(MAX_WATCH, |t| Duration::from_secs(t).min(MAX_WATCH));
        let spec = list::WatchSpec {
            kind,
            namespace: res.namespace,
            api_version: res.api_version,
            selector,
            initial_end: q.send_initial_events.as_deref() == Some("true"),
        };
        list::watch_response(inner, spec, since, timeout)
    } else {
        let spec = list::ListSpec {
            kind,
            namespace: res.namespace.as_deref(),
            api_version: &res.api_version,
            selector: &selector,
            limit: q.limit.and_then(|l| usize::try_from(l).ok()),
            offset: q.continue_at,
            as_table: wants_table(&headers),
        };
        list::list_response(&inner, &spec)
    }
}

/// `GET` of one object (a Node's `status` subresource is the Node).
pub(super) async fn object(
    State(inner): State<Arc<Inner>>,
    res: Resource,
    headers: HeaderMap,
) -> Response {
    let kind = res.route.kind;
    let st = inner.lock();
    match st.get(kind, res.namespace.as_deref().unwrap_or(""), &res.name) {
        Some(obj) if wants_table(&headers) => json_response(
            200,
            &table::table(
                kind,
                &[served(kind, &res.api_version, obj)],
                &st.rv.to_string(),
            ),
        ),
        Some(obj) => json_response(200, &served(kind, &res.api_version, obj)),
        None => object_not_found(kind, &res.api_version, &res.name),
    }
}

/// `POST` of an `events.k8s.io/v1` Event into its namespace's collection.
pub(super) async fn create_event(
    State(inner): State<Arc<Inner>>,
    res: Resource,
    body: Bytes,
) -> Response {
    write::create_event(&inner, res.namespace.as_deref().unwrap_or(""), &body)
}

/// `PATCH` of a Node (or its status) or an `events.k8s.io/v1` Event.
pub(super) async fn patch(
    State(inner): State<Arc<Inner>>,
    res: Resource,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let target = write::PatchTarget {
        kind: res.route.kind,
        namespace: res.namespace.unwrap_or_default(),
        name: res.name,
        api_version: res.api_version,
        status: res.route.status,
    };
    let content_type = header_text(&headers, header::CONTENT_TYPE);
    write::patch(&inner, &target, &content_type, &body)
}

/// A path the server does not serve, whatever the method.
pub(super) async fn not_found(uri: Uri) -> Response {
    error_response(404, &format!("the server could not find {}", uri.path()))
}

/// A method a served path does not take.
pub(super) async fn not_allowed(method: Method, uri: Uri) -> Response {
    error_response(
        405,
        &format!("the fake API server does not serve {method} {}", uri.path()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(query: &str) -> ListParams {
        let uri: Uri = format!("/api/v1/pods?{query}").parse().unwrap();
        Query::<ListParams>::try_from_uri(&uri).unwrap().0
    }

    #[test]
    fn list_parameters_are_form_decoded() {
        let selector = |q: &str| params(q).label_selector.unwrap();
        assert_eq!(
            params("fieldSelector=spec.nodeName%3Dnode-a")
                .field_selector
                .as_deref(),
            Some("spec.nodeName=node-a")
        );
        assert_eq!(selector("labelSelector=a+b%2Cc"), "a b,c");
        assert_eq!(selector("labelSelector=100%"), "100%");
        assert_eq!(selector("labelSelector=%zz"), "%zz");
        let p = params("watch=true&fieldSelector=a%3Db&x");
        assert!(p.watching());
        assert_eq!(p.field_selector.as_deref(), Some("a=b"));
        assert!(!params("watch=yes").watching());
        assert!(params("watch=1").watching());
        assert_eq!(params("limit=5&continue=10").continue_at, Some(10));
    }
}
