//! What the exporter's service account may do, asked the API server itself: one
//! `SelfSubjectAccessReview` per verb the enabled features need (get, list and watch on pods;
//! on ResourceSlices with DRA; patch on nodes/status with the Node conditions; create and
//! patch on events.k8s.io Events with the Events), and how many pods the node-scoped list
//! returns. Used by `gpu-exporter check`.
//!
//! Owns those requests and their answers as plain data. It must not keep anything running or
//! decide what an answer means for the report (the check does).

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};

/// A review or the pod list could not be made (the API refused the request itself, or did
/// not answer).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// The API server's answer or the transport's error, described in one line.
    #[error("{0}")]
    Api(String),
    /// The API server answered a review without its status.
    #[error("the review came back without a status")]
    NoStatus,
}

impl AccessError {
    /// The API server refused the exporter's credentials or the request itself (401, 403),
    /// rather than failing to answer.
    pub fn refused(&self) -> bool {
        match self {
            AccessError::Api(e) => e.starts_with("401") || e.starts_with("403"),
            AccessError::NoStatus => false,
        }
    }
}

/// One verb on one resource: allowed, denied (with the API's reason), or not reviewable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    /// API group (empty for core).
    pub group: &'static str,
    /// Resource, plural.
    pub resource: &'static str,
    /// Verb.
    pub verb: &'static str,
    /// `Ok(true)` allowed, `Ok(false)` denied, `Err` the review failed.
    pub allowed: Result<bool, AccessError>,
    /// The authorizer's reason, when it gave one.
    pub reason: Option<String>,
}

/// What one feature needs on one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    /// API group (empty for core).
    pub group: &'static str,
    /// Resource, plural, with its subresource after a slash (`nodes/status`).
    pub resource: &'static str,
    /// Verbs.
    pub verbs: &'static [&'static str],
}

const READ: &[&str] = &["get", "list", "watch"];

/// What the features need: reading pods with the pod watch (pod metadata), ResourceSlices
/// with DRA; patching `nodes/status` with the Node conditions; creating and patching Events
/// with the Events.
pub fn needed(pods: bool, dra: bool, conditions: bool, events: bool) -> Vec<Need> {
    let mut v = Vec::new();
    if pods {
        v.push(Need {
            group: "",
            resource: "pods",
            verbs: READ,
        });
    }
    if dra {
        v.push(Need {
            group: "resource.k8s.io",
            resource: "resourceslices",
            verbs: READ,
        });
    }
    if conditions {
        v.push(Need {
            group: "",
            resource: "nodes/status",
            verbs: &["patch"],
        });
    }
    if events {
        v.push(Need {
            group: "events.k8s.io",
            resource: "events",
            verbs: &["create", "patch"],
        });
    }
    v
}

/// Reviews each verb of each of `needs`.
pub async fn review(client: &Client, needs: &[Need]) -> Vec<Access> {
    let api: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let mut out = Vec::new();
    for n in needs {
        let (group, resource) = (&n.group, &n.resource);
        let (plural, sub) = match resource.split_once('/') {
            Some((p, s)) => (p, Some(s)),
            None => (*resource, None),
        };
        for verb in n.verbs {
            let req = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(ResourceAttributes {
                        group: Some((*group).to_owned()),
                        resource: Some(plural.to_owned()),
                        subresource: sub.map(str::to_owned),
                        verb: Some((*verb).to_owned()),
                        ..ResourceAttributes::default()
                    }),
                    ..SelfSubjectAccessReviewSpec::default()
                },
                ..SelfSubjectAccessReview::default()
            };
            let (allowed, reason) = match api.create(&PostParams::default(), &req).await {
                Ok(r) => match r.status {
                    Some(s) => (Ok(s.allowed), s.reason.filter(|r| !r.is_empty())),
                    None => (Err(AccessError::NoStatus), None),
                },
                Err(e) => (Err(AccessError::Api(describe(&e))), None),
            };
            out.push(Access {
                group,
                resource,
                verb,
                allowed,
                reason,
            });
        }
    }
    out
}

/// How many pods the node-scoped list returns (`spec.nodeName=<node>`, or every pod when no
/// node name is known).
pub async fn pods_on_node(client: &Client, node: Option<&str>) -> Result<usize, AccessError> {
    let api: Api<Pod> = Api::all(client.clone());
    let mut lp = ListParams::default();
    if let Some(n) = node {
        lp = lp.fields(&format!("spec.nodeName={n}"));
    }
    api.list_metadata(&lp)
        .await
        .map(|l| l.items.len())
        .map_err(|e| AccessError::Api(describe(&e)))
}

fn describe(e: &kube::Error) -> String {
    super::api_error::describe_kube_error(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(needs: Vec<Need>) -> Vec<String> {
        needs
            .iter()
            .map(|n| format!("{}/{}:{}", n.group, n.resource, n.verbs.join(",")))
            .collect()
    }

    #[test]
    fn each_feature_adds_what_it_needs() {
        assert!(needed(false, false, false, false).is_empty());
        assert_eq!(
            names(needed(true, false, false, false)),
            ["/pods:get,list,watch"]
        );
        assert_eq!(
            names(needed(false, true, false, false)),
            ["resource.k8s.io/resourceslices:get,list,watch"]
        );
        assert_eq!(
            names(needed(true, true, true, true)),
            [
                "/pods:get,list,watch",
                "resource.k8s.io/resourceslices:get,list,watch",
                "/nodes/status:patch",
                "events.k8s.io/events:create,patch",
            ]
        );
    }
}
