//! The fake API server's RBAC: the rules its one client (the exporter's service account) is
//! granted ([`RbacRule`], in a ClusterRole's own shape; set with `FakeApi::set_rbac`, none set:
//! everything is allowed), the verb a request asks for, whether the rules allow it, the `403
//! Forbidden` a real API server answers when they do not, and the answer to a
//! `SelfSubjectAccessReview`.
//!
//! Pure: it must not touch the store or serve requests (`faults` applies it to every object
//! route, `handlers` to the access review). Discovery, `/version` and the access review itself
//! are always allowed, as Kubernetes' `system:discovery` and `system:basic-user` roles allow
//! them to every authenticated user.

use axum::extract::Query;
use axum::http::{Method, Uri};
use axum::response::Response;
use serde::Deserialize;
use serde_json::Value;

use super::http::error_response;

/// The user the fake API server says it refused.
pub const SERVICE_ACCOUNT: &str = "system:serviceaccount:fake:gpu-exporter";

/// One rule of a ClusterRole, as `rules[]` spells it: API groups (`""` for core), resources
/// (plural, a subresource after a slash: `nodes/status`) and verbs; `"*"` matches anything.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RbacRule {
    /// `apiGroups`.
    pub api_groups: Vec<String>,
    /// `resources`.
    pub resources: Vec<String>,
    /// `verbs`.
    pub verbs: Vec<String>,
}

impl RbacRule {
    /// A rule from string slices.
    pub fn new(api_groups: &[&str], resources: &[&str], verbs: &[&str]) -> Self {
        let owned = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        Self {
            api_groups: owned(api_groups),
            resources: owned(resources),
            verbs: owned(verbs),
        }
    }

    fn allows(&self, group: &str, resource: &str, verb: &str) -> bool {
        let any = |v: &[String], want: &str| v.iter().any(|x| x == "*" || x == want);
        let resource_ok = self.resources.iter().any(|r| {
            r == "*"
                || r == resource
                || r.strip_suffix("/*")
                    .is_some_and(|base| resource.split_once('/').is_some_and(|(b, _)| b == base))
        });
        any(&self.api_groups, group) && resource_ok && any(&self.verbs, verb)
    }
}

/// What one request asks to do, in RBAC's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Attributes {
    /// API group, empty for core.
    pub(super) group: String,
    /// Resource, plural, with `/<subresource>`.
    pub(super) resource: String,
    /// Verb: `get`, `list`, `watch`, `create`, `patch`, `update`, `delete`.
    pub(super) verb: &'static str,
    /// The namespace, for a namespaced request.
    pub(super) namespace: Option<String>,
    /// The object's name, for a request on one object.
    pub(super) name: Option<String>,
}

/// The one query parameter the verb depends on.
#[derive(Debug, Default, Deserialize)]
struct WatchParam {
    watch: Option<String>,
}

/// The verb of `method` on a collection (`one` false) or one object: a `GET` of a collection
/// is `list`, or `watch` with `watch=true`.
pub(super) fn verb(method: &Method, one: bool, uri: &Uri) -> &'static str {
    let watching = Query::<WatchParam>::try_from_uri(uri)
        .is_ok_and(|Query(q)| q.watch.is_some_and(|w| w == "true" || w == "1"));
    match *method {
        Method::POST => "create",
        Method::PATCH => "patch",
        Method::PUT => "update",
        Method::DELETE => "delete",
        _ if one => "get",
        _ if watching => "watch",
        _ => "list",
    }
}

/// Whether `rules` allow `a` (`None`: no rules set, everything is allowed).
pub(super) fn allowed(rules: Option<&[RbacRule]>, a: &Attributes) -> bool {
    rules.is_none_or(|rules| {
        rules
            .iter()
            .any(|r| r.allows(&a.group, &a.resource, a.verb))
    })
}

/// The `403 Forbidden` a real API server answers for `a`, worded as it words it:
/// `pods is forbidden: User "…" cannot list resource "pods" in API group "" at the cluster
/// scope`.
pub(super) fn forbidden(a: &Attributes) -> Response {
    let plural = a.resource.split('/').next().unwrap_or_default();
    let what = if a.group.is_empty() {
        plural.to_owned()
    } else {
        format!("{plural}.{}", a.group)
    };
    let object = a
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .map(|n| format!(" \"{n}\""))
        .unwrap_or_default();
    let scope = match &a.namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".to_owned(),
    };
    error_response(
        403,
        &format!(
            "{what}{object} is forbidden: User \"{SERVICE_ACCOUNT}\" cannot {} resource \"{}\" \
             in API group \"{}\" {scope}",
            a.verb, a.resource, a.group
        ),
    )
}

/// The `status` of a `SelfSubjectAccessReview` of `review` (its `spec.resourceAttributes`)
/// under `rules`: `{"allowed": …}`, with a reason when allowed.
pub(super) fn review_status(rules: Option<&[RbacRule]>, review: &Value) -> Value {
    let attrs = review.get("spec").and_then(|s| s.get("resourceAttributes"));
    let field = |k: &str| {
        attrs
            .and_then(|a| a.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (resource, sub) = (field("resource"), field("subresource"));
    let resource = if sub.is_empty() {
        resource
    } else {
        format!("{resource}/{sub}")
    };
    let (group, verb) = (field("group"), field("verb"));
    let ok = rules.is_none_or(|rules| rules.iter().any(|r| r.allows(&group, &resource, &verb)));
    match (ok, rules) {
        (true, None) => serde_json::json!({
            "allowed": true, "reason": "the simulated API server allows everything"
        }),
        (true, Some(_)) => serde_json::json!({
            "allowed": true, "reason": "RBAC: allowed by the simulated service account's rules"
        }),
        (false, _) => serde_json::json!({"allowed": false}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(group: &str, resource: &str, verb: &'static str) -> Attributes {
        Attributes {
            group: group.into(),
            resource: resource.into(),
            verb,
            namespace: None,
            name: None,
        }
    }

    #[test]
    fn rules_match_groups_resources_verbs_and_wildcards() {
        let slices = [RbacRule::new(
            &["resource.k8s.io"],
            &["resourceslices"],
            &["get", "list", "watch"],
        )];
        let ok = |rules: &[RbacRule], g, r, v| allowed(Some(rules), &attrs(g, r, v));
        assert!(ok(&slices, "resource.k8s.io", "resourceslices", "watch"));
        assert!(!ok(&slices, "resource.k8s.io", "resourceslices", "create"));
        assert!(!ok(&slices, "", "pods", "list"));
        assert!(!ok(&slices, "resource.k8s.io", "resourceclaims", "list"));
        assert!(allowed(None, &attrs("", "pods", "list")), "no rules set");
        let wide = [
            RbacRule::new(&["*"], &["pods"], &["*"]),
            RbacRule::new(&[""], &["nodes/*"], &["patch"]),
        ];
        assert!(ok(&wide, "", "pods", "delete"));
        assert!(ok(&wide, "", "nodes/status", "patch"));
        assert!(!ok(&wide, "", "nodes", "patch"), "nodes/* is not nodes");
    }

    #[test]
    fn verbs_of_requests() {
        let uri = |s: &str| s.parse::<Uri>().unwrap();
        assert_eq!(verb(&Method::GET, false, &uri("/api/v1/pods")), "list");
        assert_eq!(
            verb(&Method::GET, false, &uri("/api/v1/pods?watch=true")),
            "watch"
        );
        assert_eq!(verb(&Method::GET, true, &uri("/api/v1/nodes/n")), "get");
        assert_eq!(verb(&Method::PATCH, true, &uri("/api/v1/nodes/n")), "patch");
        assert_eq!(verb(&Method::POST, false, &uri("/x")), "create");
    }

    #[test]
    fn reviews_answer_from_the_rules() {
        let rules = [RbacRule::new(&[""], &["nodes/status"], &["patch"])];
        let review = |g: &str, r: &str, s: &str, v: &str| {
            serde_json::json!({"spec": {"resourceAttributes":
                {"group": g, "resource": r, "subresource": s, "verb": v}}})
        };
        let st = review_status(Some(&rules), &review("", "nodes", "status", "patch"));
        assert_eq!(st["allowed"], true);
        let st = review_status(Some(&rules), &review("", "pods", "", "list"));
        assert_eq!(st["allowed"], false);
        assert!(st.get("reason").is_none());
        let st = review_status(None, &review("", "pods", "", "list"));
        assert_eq!(st["allowed"], true);
    }
}
