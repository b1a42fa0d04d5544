//! The collection and object paths the fake API server serves ([`OBJECTS`]: the route, the
//! kind, the API group, what a client may write there) and [`Resource`], what a request on one
//! of them names: the kind, namespace, name and `apiVersion`, taken from the matched route and
//! its `Path` parameters.
//!
//! It must not touch the store, decide what a method does (`handlers`) or build the router
//! (`routes`).

use axum::RequestPartsExt;
use axum::extract::{FromRequestParts, MatchedPath, OptionalFromRequestParts, Path};
use axum::http::request::Parts;
use axum::response::Response;
use serde::Deserialize;

use super::http::error_response;
use super::kinds::*;

/// What a client may write on a route, besides reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Write {
    /// Nothing: `GET` only.
    None,
    /// `POST` creates an Event (only `events.k8s.io` collections in a namespace).
    CreateEvent,
    /// `PATCH` merges into the object.
    Patch,
}

/// One collection or object path.
#[derive(Debug, Clone, Copy)]
pub(super) struct ObjectRoute {
    /// The axum route, with `{namespace}`, `{name}` and `{version}` parameters.
    pub(super) path: &'static str,
    pub(super) kind: Kind,
    /// The API group, empty for core (`/api/v1`).
    pub(super) group: &'static str,
    /// The route names one object (it has a `{name}`), not a collection.
    pub(super) one: bool,
    /// The route is a Node's `status` subresource.
    pub(super) status: bool,
    pub(super) write: Write,
}

const fn collection(path: &'static str, kind: Kind, group: &'static str) -> ObjectRoute {
    ObjectRoute {
        path,
        kind,
        group,
        one: false,
        status: false,
        write: Write::None,
    }
}

const fn one(path: &'static str, kind: Kind, group: &'static str) -> ObjectRoute {
    ObjectRoute {
        one: true,
        ..collection(path, kind, group)
    }
}

/// Every collection and object path served, core first, then by group.
pub(super) const OBJECTS: [ObjectRoute; 14] = [
    collection("/api/v1/pods", Kind::Pod, ""),
    collection("/api/v1/namespaces/{namespace}/pods", Kind::Pod, ""),
    one("/api/v1/namespaces/{namespace}/pods/{name}", Kind::Pod, ""),
    collection("/api/v1/nodes", Kind::Node, ""),
    ObjectRoute {
        write: Write::Patch,
        ..one("/api/v1/nodes/{name}", Kind::Node, "")
    },
    ObjectRoute {
        status: true,
        write: Write::Patch,
        ..one("/api/v1/nodes/{name}/status", Kind::Node, "")
    },
    collection("/api/v1/events", Kind::Event, ""),
    collection("/api/v1/namespaces/{namespace}/events", Kind::Event, ""),
    one(
        "/api/v1/namespaces/{namespace}/events/{name}",
        Kind::Event,
        "",
    ),
    collection("/apis/events.k8s.io/v1/events", Kind::Event, EVENTS_GROUP),
    ObjectRoute {
        write: Write::CreateEvent,
        ..collection(
            "/apis/events.k8s.io/v1/namespaces/{namespace}/events",
            Kind::Event,
            EVENTS_GROUP,
        )
    },
    ObjectRoute {
        write: Write::Patch,
        ..one(
            "/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}",
            Kind::Event,
            EVENTS_GROUP,
        )
    },
    collection(
        "/apis/resource.k8s.io/{version}/resourceslices",
        Kind::Slice,
        RESOURCE_GROUP,
    ),
    one(
        "/apis/resource.k8s.io/{version}/resourceslices/{name}",
        Kind::Slice,
        RESOURCE_GROUP,
    ),
];

/// The `Path` parameters an object route may have.
#[derive(Debug, Deserialize)]
struct Params {
    namespace: Option<String>,
    name: Option<String>,
    version: Option<String>,
}

/// What a request on an object route names.
#[derive(Debug)]
pub(super) struct Resource {
    pub(super) route: ObjectRoute,
    pub(super) namespace: Option<String>,
    /// Empty for a collection.
    pub(super) name: String,
    /// The version asked for (`{version}` in the path), `v1` where the path spells it.
    pub(super) version: String,
    /// `apiVersion` of the objects as served (`v1`, `events.k8s.io/v1`, ...).
    pub(super) api_version: String,
}

impl Resource {
    /// The resource as a `Status` message names it: `pods`, `events.events.k8s.io`.
    pub(super) fn what(&self) -> String {
        format!(
            "{}{}",
            self.route.kind.plural(),
            group_suffix(&self.api_version)
        )
    }

    /// What the object route the request matched names: a `500` for any other route (the
    /// router gives this extractor only to object routes), a `400` for a path parameter that
    /// does not decode (invalid UTF-8).
    async fn of(parts: &mut Parts) -> Result<Self, Response> {
        let route = parts
            .extensions
            .get::<MatchedPath>()
            .and_then(|m| OBJECTS.iter().find(|o| o.path == m.as_str()))
            .copied()
            .ok_or_else(|| {
                error_response(
                    500,
                    &format!(
                        "the fake API server has no object route for {}",
                        parts.uri.path()
                    ),
                )
            })?;
        let Path(p) = parts
            .extract::<Path<Params>>()
            .await
            .map_err(|e| error_response(400, &e.body_text()))?;
        let version = p.version.unwrap_or_else(|| "v1".to_owned());
        let api_version = if route.group.is_empty() {
            version.clone()
        } else {
            format!("{}/{version}", route.group)
        };
        Ok(Self {
            route,
            namespace: p.namespace,
            name: p.name.unwrap_or_default(),
            version,
            api_version,
        })
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Resource {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Response> {
        Self::of(parts).await
    }
}

/// `None` on any route but an object route's (the fault middleware's view).
impl<S: Send + Sync> OptionalFromRequestParts<S> for Resource {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Option<Self>, Self::Rejection> {
        Ok(Self::of(parts).await.ok())
    }
}
